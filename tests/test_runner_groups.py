"""The Runner's writes grouped into one transaction per phase: a fresh run commits twice
(its claim, frozen prompt, row and stored input before the model is called; the last
step, stored output, output, seal, status and release after it answered), a
step that calls tools is durable before its tools run, each tool result before the
next model call, and a group that fails leaves nothing of itself but the model step it
held (see tests/test_crash_resume.py for the same under SIGKILL)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memory_core.composition.memory import AgentMemory
from memory_core.errors import StorageError
from memory_core.journal import RunKeys
from memory_core.models.base import ModelResponse, Tool, ToolSpec
from memory_core.models.scripted import ScriptedModel
from memory_core.runs.runner import Agent, Runner
from memory_core.storage.base import Storage
from memory_core.storage.sqlite import SQLiteStorage
from memory_core.types import Message, ToolCallPart
from tests.helpers import Tick


class Statements:
    """Every statement the SQLite connection runs (its trace callback)."""

    def __init__(self, storage: SQLiteStorage) -> None:
        self.seen: list[str] = []
        storage._db._conn.set_trace_callback(self.seen.append)  # type: ignore[attr-defined]

    def count(self, start: str) -> int:
        return sum(1 for s in self.seen if s.lstrip().upper().startswith(start))

    def clear(self) -> None:
        self.seen.clear()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStorage]:
    s = SQLiteStorage(str(tmp_path / "groups.sqlite"), clock=Tick())
    try:
        yield s
    finally:
        s.close()


def _runner(store: Storage, model: Any, tools: list[Tool] | None = None) -> Runner:
    clock = Tick()
    memory = AgentMemory(store, recent_n=4, clock=clock)
    agent = Agent(name="a", instructions="Be brief.", model=model, tools=tools or [])
    return Runner(store, {"a": agent}, memory=memory, clock=clock)


def test_a_fresh_run_commits_twice(store: SQLiteStorage) -> None:
    runner = _runner(store, ScriptedModel(["one", "two"]))
    runner.run("a", run_id="r0", thread_id="t", resource_id="u", prompt="first")
    trace = Statements(store)
    result = runner.run("a", run_id="r1", thread_id="t", resource_id="u", prompt="second")
    assert result.text == "two" and result.input_seqs == [2] and result.output_seqs == [3]
    # one commit before the model call (the claim with it), one after its answer (each
    # write used to commit on its own: fourteen a run)
    assert trace.count("COMMIT") == 2
    # the journal's records of each group go in one statement, and the run's records
    # are read once (the look before the claim), never read back
    assert trace.count("INSERT INTO JOURNAL") == 2
    assert trace.count("SELECT KEY, VALUE FROM JOURNAL") == 1
    assert trace.count("SELECT VALUE FROM JOURNAL") == 0
    keys = RunKeys("r1")
    assert [k for k, _ in store.runs.list("r1:")] == [
        keys.lease(0), keys.input, keys.memctx, keys.prompt, keys.persist_input,
        keys.step(0), keys.persist_output, keys.output, keys.seal, keys.lease(1)]
    assert store.runs.require_run("r1").status == "completed"


def test_a_claim_lost_while_composing_keeps_nothing_of_the_attempt(
        store: SQLiteStorage) -> None:
    """The claim made with the first group: another starter that claimed the run after
    this one looked wins, and this attempt leaves nothing (not even a failed row)."""
    from memory_core.errors import RunInProgress
    from memory_core.journal.lease import Lease

    class Racing(AgentMemory):
        def load_context(self, **kw: Any) -> Any:
            Lease(store.runs, "r1", ttl=60).acquire()  # another starter, meanwhile
            return super().load_context(**kw)

    clock = Tick()
    runner = Runner(store, {"a": Agent(name="a", instructions="x",
                                       model=ScriptedModel(["never"]))},
                    memory=Racing(store, recent_n=4, clock=clock), clock=clock)
    with pytest.raises(RunInProgress, match="claimed by another starter"):
        runner.run("a", run_id="r1", thread_id="t", prompt="question")
    assert [k for k, _ in store.runs.list("r1:")] == [RunKeys("r1").lease(0)]
    assert store.runs.get_run("r1") is None and store.memory.get_messages("t") == []


@pytest.mark.parametrize("idempotent", [False, True])
def test_a_tool_step_is_durable_before_its_tool_runs(store: SQLiteStorage, tmp_path: Path,
                                                     idempotent: bool) -> None:
    """A second handle (another process would see the same) finds the step before the
    tool runs, and the tool's result before the model is asked again — whatever the
    tool declares (``Tool.idempotent`` changes nothing the Runner writes)."""
    other = SQLiteStorage(str(tmp_path / "groups.sqlite"))
    seen: dict[str, Any] = {}

    def lookup(args: dict[str, Any]) -> Any:
        seen["step at tool"] = other.runs.get(RunKeys("r1").step(0))
        return {"balance": 42}

    class Watching(ScriptedModel):
        def complete(self, messages: Any, tools: Any) -> ModelResponse:
            seen.setdefault("tool at model", []).append(
                other.runs.get(RunKeys("r1").tool("c1")))
            return super().complete(messages, tools)

    model = Watching([ModelResponse(tool_calls=[ToolCallPart(id="c1", name="lookup",
                                                             args={})]), "Balance 42."])
    runner = _runner(store, model, [Tool(ToolSpec("lookup", "look up"), lookup,
                                         idempotent=idempotent)])
    store.memory.create_thread("t")  # (composing a new thread's first turn creates it)
    trace = Statements(store)
    try:
        assert runner.run("a", run_id="r1", thread_id="t", prompt="balance?").text == \
            "Balance 42."
    finally:
        other.close()
    assert seen["step at tool"]["response"]["tool_calls"][0]["id"] == "c1"
    assert seen["tool at model"][0] is None and seen["tool at model"][1]["status"] == "ok"
    # before the model, the tool step, the tool result, after the last answer
    assert trace.count("COMMIT") == 4


def test_a_failed_last_group_keeps_only_the_model_step(store: SQLiteStorage) -> None:
    """The last group is rolled back whole; the model's answer it held is then written
    on its own, so the resume completes the run without asking the model again."""
    model = ScriptedModel(["the answer"])  # one answer only: a second ask would raise
    runner = _runner(store, model)
    real = store.runs.set_run_status

    def failing(run_id: str, status: Any, **kw: Any) -> None:
        if status == "completed":
            raise StorageError("disk full")
        real(run_id, status, **kw)

    store.runs.set_run_status = failing  # type: ignore[method-assign]
    with pytest.raises(StorageError, match="disk full"):
        runner.run("a", run_id="r1", thread_id="t", prompt="question")
    keys = RunKeys("r1")
    step = store.runs.get(keys.step(0))
    assert step is not None and step["response"]["text"] == "the answer"
    for key in (keys.persist_output, keys.output, keys.seal):
        assert store.runs.get(key) is None, key
    assert [m.role for m in store.memory.get_messages("t")] == ["user"]
    assert store.runs.require_run("r1").status == "failed"
    store.runs.set_run_status = real  # type: ignore[method-assign]
    result = runner.run("a", run_id="r1", thread_id="t", prompt="question")
    assert result.resumed and result.text == "the answer"
    assert [m.role for m in store.memory.get_messages("t")] == ["user", "assistant"]
    assert store.runs.require_run("r1").status == "completed"


def test_a_failed_first_group_leaves_a_failed_run_and_nothing_else(
        store: SQLiteStorage) -> None:
    model = ScriptedModel(["fine"])
    runner = _runner(store, model)
    real = store.memory.append_messages

    def failing(thread_id: str, rows: Any) -> list[int]:
        raise StorageError("disk full")

    store.memory.append_messages = failing  # type: ignore[method-assign]
    with pytest.raises(StorageError, match="disk full"):
        runner.run("a", run_id="r1", thread_id="t", prompt="question")
    run = store.runs.require_run("r1")
    assert run.status == "failed" and "disk full" in (run.error or "")
    keys = RunKeys("r1")
    assert [k for k, _ in store.runs.list("r1:") if not k.startswith(keys.lease_prefix)] == []
    store.memory.append_messages = real  # type: ignore[method-assign]
    result = runner.run("a", run_id="r1", thread_id="t", prompt="question")
    assert result.text == "fine" and [m.text() for m in store.memory.get_messages("t")] == [
        "question", "fine"]
    assert store.runs.require_run("r1").status == "completed"


def test_grouping_changes_nothing_a_run_records(tmp_path: Path) -> None:
    """The same turns on the reference adapter (each write on its own) and on SQLite
    (grouped) record the same journal and messages."""
    from memory_core.storage.inmemory import InMemoryStorage
    from memory_core.types import canonical_json

    def play(store: Any) -> tuple[Any, ...]:
        runner = _runner(store, ScriptedModel([
            ModelResponse(tool_calls=[ToolCallPart(id="c1", name="lookup", args={})]),
            "done", "again"]), [Tool(ToolSpec("lookup", "look up"), lambda a: {"x": 1})])
        for i, text in enumerate(["first", "second"]):
            runner.run("a", run_id=f"r{i}", thread_id="t", resource_id="u", prompt=text)
        journal = {k: canonical_json(v) for k, v in store.runs.list("")
                   if ":lease:" not in k}
        msgs = [(m.seq, m.role, m.as_message().canonical_json())
                for m in store.memory.get_messages("t")]
        return journal, msgs

    ref = InMemoryStorage(clock=Tick())
    sql = SQLiteStorage(str(tmp_path / "same.sqlite"), clock=Tick())
    try:
        assert play(sql) == play(ref)
    finally:
        sql.close()


def test_messages_are_embedded_before_the_group_opens(store: SQLiteStorage) -> None:
    """SPEC §1.3: embedding happens outside any store lock — no write transaction is
    open while the embedder runs."""
    conn = store._db._conn  # type: ignore[attr-defined]
    during: list[bool] = []

    def embed(texts: list[str]) -> Any:
        import numpy as np

        during.append(conn.in_transaction)
        return np.ones((len(texts), 8), np.float32)

    clock = Tick()
    memory = AgentMemory(store, embed=embed, recent_n=4, clock=clock)
    runner = Runner(store, {"a": Agent(name="a", instructions="x",
                                       model=ScriptedModel(["ok"]))},
                    memory=memory, clock=clock)
    runner.run("a", run_id="r1", thread_id="t", prompt=[Message(role="user", content="hi")])
    assert during and not any(during)


def test_a_starter_that_lost_the_claim_waits_and_resumes_when_asked_to(
        store: SQLiteStorage) -> None:
    """With ``wait``, the starter whose claim was lost waits for the winner's claim
    to end, then goes on from what the winner recorded (here: nothing, it released)."""
    from memory_core.journal.lease import Lease

    class Racing(AgentMemory):
        raced = False

        def load_context(self, **kw: Any) -> Any:
            if not Racing.raced:
                Racing.raced = True
                Lease(store.runs, "r1", ttl=60).acquire().release()  # another starter
            return super().load_context(**kw)

    clock = Tick()
    runner = Runner(store, {"a": Agent(name="a", instructions="x",
                                       model=ScriptedModel(["answered"]))},
                    memory=Racing(store, recent_n=4, clock=clock), clock=clock)
    result = runner.run("a", run_id="r1", thread_id="t", prompt="question", wait=5)
    assert result.text == "answered"
    assert [m.text() for m in store.memory.get_messages("t")] == ["question", "answered"]


class _Failing(AgentMemory):
    """A memory whose appends fail (a full disk, a dropped connection): the first group
    of a run it stores fails for a reason other than a lost claim."""

    def append_rows(self, *a: Any, **kw: Any) -> Any:
        raise StorageError("disk full")


def test_a_failed_first_group_does_not_mark_a_run_another_starter_completed(
        tmp_path: Path) -> None:
    """The claim of a fresh run goes with its first group: once that group failed, the
    attempt holds nothing, and the run another starter claimed and completed while it
    composed is not its to mark failed (a completed run would no longer verify)."""
    from memory_core.journal.seal import verify_run

    path = str(tmp_path / "race.sqlite")
    mine, other = SQLiteStorage(path, clock=Tick()), SQLiteStorage(path, clock=Tick())

    class Racing(_Failing):
        def load_context(self, **kw: Any) -> Any:
            # another process runs the whole run while this one composes
            _runner(other, ScriptedModel(["theirs"])).run(
                "a", run_id="r1", thread_id="t", prompt="question")
            return super().load_context(**kw)

    clock = Tick()
    runner = Runner(mine, {"a": Agent(name="a", instructions="x",
                                      model=ScriptedModel(["never"]))},
                    memory=Racing(mine, recent_n=4, clock=clock), clock=clock)
    try:
        with pytest.raises(StorageError, match="disk full"):
            runner.run("a", run_id="r1", thread_id="t", prompt="question")
        assert other.runs.require_run("r1").status == "completed"
        assert verify_run(other, "r1").status == "ok"
    finally:
        mine.close()
        other.close()


def test_a_failed_first_group_records_the_failure_with_a_claim(tmp_path: Path) -> None:
    """The failed run's row is written with a claim of its own, in one transaction, so
    a starter that looked before it (and would claim the run with its first group)
    loses that claim instead of running the run under another's failed row; with
    ``wait`` it then resumes the failed run, which completes and verifies."""
    from memory_core.journal.seal import verify_run

    path = str(tmp_path / "race.sqlite")
    mine, other = SQLiteStorage(path, clock=Tick()), SQLiteStorage(path, clock=Tick())
    statuses: list[str] = []

    class Racing(AgentMemory):
        raced = False

        def load_context(self, **kw: Any) -> Any:
            if not Racing.raced:
                Racing.raced = True
                # another process starts the run after this one looked, and fails
                clock = Tick()
                failing = Runner(other, {"a": Agent(name="a", instructions="x",
                                                    model=ScriptedModel(["never"]))},
                                 memory=_Failing(other, recent_n=4, clock=clock),
                                 clock=clock)
                with pytest.raises(StorageError, match="disk full"):
                    failing.run("a", run_id="r1", thread_id="t", prompt="question")
            return super().load_context(**kw)

    class Watching(ScriptedModel):
        def complete(self, messages: Any, tools: Any) -> ModelResponse:
            statuses.append(other.runs.require_run("r1").status)
            return super().complete(messages, tools)

    clock = Tick()
    runner = Runner(mine, {"a": Agent(name="a", instructions="x",
                                      model=Watching(["answered"]))},
                    memory=Racing(mine, recent_n=4, clock=clock), clock=clock)
    try:
        result = runner.run("a", run_id="r1", thread_id="t", prompt="question", wait=5)
        assert result.text == "answered"
        assert statuses == ["running"]  # not another attempt's failure while it runs
        assert mine.runs.require_run("r1").status == "completed"
        assert verify_run(mine, "r1").status == "ok"
    finally:
        mine.close()
        other.close()
