"""Erasure reaches every copy: a thread's text is gone from every table, every other
run's records and the database file's bytes, and the other runs still replay."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory_core.analysis.counterfactual import counterfactual
from memory_core.composition.memory import AgentMemory
from memory_core.embedding.hashing import HashingEmbedder
from memory_core.errors import NotFoundError
from memory_core.journal.seal import verify_run
from memory_core.lifecycle.erasure import erase_thread
from memory_core.models.reader import ReaderModel
from memory_core.recall.config import RecallConfig
from memory_core.runs.replay import replay
from memory_core.runs.runner import Agent, Runner
from memory_core.storage.base import Storage
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.storage.sqlite import SQLiteStorage
from memory_core.types import AppendRow, Message, Observation

MARKER = "ZQX-4471-KESTREL"
ROOT = Path(__file__).resolve().parents[1]


def play(s: Storage) -> None:
    embed = HashingEmbedder(256)
    mem = AgentMemory(s, embed=embed, recent_n=2,
                      recall=RecallConfig(top_k=3, threshold=0.0, scope="resource"))
    runner = Runner(s, {"a": Agent("a", "Answer from the conversation.",
                                   ReaderModel(embed=embed))}, memory=mem)
    runner.run("a", run_id="s1", thread_id="secret", resource_id="u",
               prompt=f"My locker code is {MARKER}. Please remember the locker code.")
    runner.run("a", run_id="s2", thread_id="secret", resource_id="u",
               prompt="Thanks, that is all about the locker for now.")
    for i in range(3):
        runner.run("a", run_id=f"o{i}", thread_id="other", resource_id="u",
                   prompt=f"What is my locker code? (asking again, {i})")
    counterfactual(s, "o0", subtract="all")
    counterfactual(s, "o1", lanes=["recent"])
    # the same person's other thread kept it in its memory (as its working-memory tool
    # and its observer would): exposed, so redacted too
    s.memory.put_working_memory("thread:other", {"locker": MARKER})
    s.memory.put_observation(Observation(
        id="other-obs", thread_id="other", from_seq=0, to_seq=1,
        text=f"User's locker code is {MARKER}.", created_at=datetime(2026, 1, 2, tzinfo=UTC)))


def all_text(s: Storage) -> str:
    parts = [repr(s.runs.list(""))]
    for t in s.memory.list_threads():
        parts.append(repr(s.memory.get_messages(t.id)))
        parts.append(repr(s.memory.list_observations(t.id)))
    for key in s.memory.list_working_memory_keys():
        parts.append(repr(s.memory.get_working_memory(key)))
    parts.append(repr(s.runs.list_runs()))
    return "\n".join(parts)


def check_erased(s: Storage) -> None:
    assert MARKER in all_text(s)  # planted, recalled and quoted before
    assert any(MARKER in repr(v) for k, v in s.runs.list("o0:"))
    report = erase_thread(s, "secret")
    assert MARKER not in all_text(s)
    assert set(report.redacted_runs) >= {"o0", "o1", "o2"}
    assert report.answered_with == ["other"]
    assert s.memory.get_thread("secret") is None
    for rid in ("o0", "o1", "o2"):
        assert verify_run(s, rid).status == "redacted"
        assert replay(s, rid).integrity == "redacted"
    with pytest.raises(NotFoundError):
        erase_thread(s, "secret")


def test_erasing_a_thread_redacts_every_other_runs_records_in_memory() -> None:
    s = InMemoryStorage()
    play(s)
    check_erased(s)


def test_no_byte_of_the_erased_text_remains_in_the_sqlite_file(tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    s = SQLiteStorage(str(path))
    play(s)
    check_erased(s)
    s.close()
    for f in tmp_path.iterdir():
        assert MARKER.encode() not in f.read_bytes(), f.name


def test_no_byte_of_the_erased_text_remains_in_the_duckdb_file(tmp_path: Path) -> None:
    from memory_core.storage.duckdb import DuckDBStorage

    path = tmp_path / "e.duckdb"
    s = DuckDBStorage(str(path))
    play(s)
    s.close()
    assert MARKER.encode() in path.read_bytes() or (tmp_path / "e.duckdb.wal").exists()
    s = DuckDBStorage(str(path))
    check_erased(s)
    s.memory.append_messages("other", [AppendRow(message=Message(content="after"))])
    s.runs.put_if_absent("later:note", {"v": 1})  # the journal keeps numbering
    s.close()
    for f in tmp_path.iterdir():
        assert MARKER.encode() not in f.read_bytes(), f.name
    s = DuckDBStorage(str(path), read_only=True)
    assert s.memory.get_messages("other")[-1].text() == "after"
    s.close()


def test_erase_finishes_what_a_crash_left() -> None:
    s = InMemoryStorage()
    play(s)
    # a crash after the thread's data was deleted, before its runs and journals were
    s.memory.delete_thread("secret")
    assert s.runs.get_run("s1") is not None
    report = erase_thread(s, "secret")
    assert report.runs == 2 and s.runs.get_run("s1") is None
    assert s.runs.list("s1:") == []




@pytest.mark.slow
@pytest.mark.parametrize("kind", ["sqlite", "duckdb",
                                  pytest.param("postgres", marks=pytest.mark.postgres)])
def test_sigkill_during_erase_then_erase_again_leaves_nothing(kind: str,
                                                             tmp_path: Path) -> None:
    import random
    import subprocess
    import sys

    from memory_core.storage.url import open_storage
    from tests.storage_factories import shared_url

    rng = random.Random(f"erase-{kind}")
    url = shared_url(kind, tmp_path, "e")
    s = open_storage(url)
    play(s)
    s.close()
    # how many writes a whole erasure makes, on a copy of the same history
    probe = InMemoryStorage()
    play(probe)
    writes = _count_writes(probe)
    for kill_at in sorted(rng.sample(range(1, writes + 1), k=min(4, writes))):
        # each round starts from what the previous crash left
        proc = subprocess.run([sys.executable, str(ROOT / "tests" / "erase_worker.py"), url,
                               str(kill_at)], capture_output=True, text=True, timeout=120)
        # killed, finished, or finding the erasure already complete
        assert proc.returncode in (-9, 0) or "does not exist" in proc.stderr, \
            proc.stderr[-2000:]
    s = open_storage(url)
    try:
        try:
            erase_thread(s, "secret")
        except NotFoundError:
            pass  # a round finished it
        assert MARKER not in all_text(s)
        if kind != "postgres":
            s.close()
            for f in tmp_path.iterdir():
                if f.is_file():
                    assert MARKER.encode() not in f.read_bytes(), f.name
            s = open_storage(url)
        assert s.memory.get_thread("secret") is None
        assert s.runs.list_runs(thread_id="secret") == []
        for rid in ("o0", "o1", "o2"):
            assert verify_run(s, rid).status in ("redacted", "ok")
    finally:
        s.close()


def _count_writes(s: Storage) -> int:
    n = 0

    def counting(fn: object) -> object:
        def wrapped(*a: object, **k: object) -> object:
            nonlocal n
            n += 1
            return fn(*a, **k)  # type: ignore[operator]
        return wrapped

    for obj, names in ((s.runs, ("delete", "put_if_absent", "delete_runs")),
                       (s.memory, ("redact_message", "delete_thread", "put_working_memory",
                                   "redact_observation"))):
        for name in names:
            setattr(obj, name, counting(getattr(obj, name)))
    erase_thread(s, "secret")
    return n


@pytest.mark.parametrize("kind", ["inmemory", "sqlite", "duckdb"])
def test_redacting_one_record_keeps_the_records_its_key_prefixes(kind: str,
                                                                 tmp_path: Path) -> None:
    """A run with 12 steps and tool calls c1, c10, c11 whose first call quotes the
    erased text: redacting ``step:1`` and ``tool:c1`` must leave ``step:10``,
    ``step:11``, ``tool:c10`` and ``tool:c11`` (a prefix delete took them, and the
    re-sealed run then replayed 10 steps of 12)."""
    from memory_core.models.base import ModelResponse, Tool, ToolSpec
    from memory_core.models.scripted import ScriptedModel
    from memory_core.storage.duckdb import DuckDBStorage
    from memory_core.types import ToolCallPart

    s: Storage = InMemoryStorage() if kind == "inmemory" else \
        SQLiteStorage(str(tmp_path / "p.db")) if kind == "sqlite" else \
        DuckDBStorage(str(tmp_path / "p.duckdb"))
    secret = f"My locker code is {MARKER}."
    s.memory.create_thread("secret", resource_id="u")
    s.memory.append_messages("secret", [AppendRow(message=Message(content=secret))])
    ids = ["c1", *[f"c{n}" for n in range(2, 12)]]  # c1 … c11: c1 prefixes c10, c11
    script = [ModelResponse(tool_calls=[ToolCallPart(
        id=cid, name="note", args={"text": secret if cid == "c1" else f"step {cid}"})])
        for cid in ids] + [ModelResponse(text="Done.")]
    tool = Tool(ToolSpec("note", "keep a note"), lambda a: {"kept": a["text"]})
    Runner(s, {"a": Agent("a", "Take notes.", ScriptedModel(script), tools=[tool],
                               max_steps=12)}).run(
        "a", run_id="m1", thread_id="other", resource_id="u", prompt="Take the notes.")
    before = {k for k, _ in s.runs.list("m1:")}
    assert {"m1:step:1", "m1:step:10", "m1:step:11", "m1:tool:c1", "m1:tool:c10",
            "m1:tool:c11"} <= before
    report = erase_thread(s, "secret")
    assert "m1" in report.redacted_runs
    after = dict(s.runs.list("m1:"))
    assert set(after) == before  # every record is still there, rewritten or not
    assert MARKER not in repr(after)
    assert after["m1:tool:c10"]["result"] == {"kept": "step c10"}
    assert verify_run(s, "m1").status == "redacted"
    assert replay(s, "m1").steps == 12
    s.close()


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["sqlite", "duckdb"])
def test_an_erasure_killed_midway_leaves_the_database_as_it_was(kind: str,
                                                                tmp_path: Path) -> None:
    """One transaction per erasure: a SIGKILL at any write of it changes nothing (the
    delete and the re-put of another run's record were separate commits, and a crash
    between them lost the record for good; erasing again then re-sealed over the
    loss)."""
    import subprocess
    import sys

    from memory_core.storage.url import open_storage
    from tests.storage_factories import shared_url

    url = shared_url(kind, tmp_path, "k")
    s = open_storage(url)
    play(s)
    before = all_text(s)
    s.close()
    probe = InMemoryStorage()
    play(probe)
    writes = _count_writes(probe)
    for kill_at in (2, writes // 2, writes - 1):
        proc = subprocess.run([sys.executable, str(ROOT / "tests" / "erase_worker.py"), url,
                               str(kill_at)], capture_output=True, text=True, timeout=120)
        assert proc.returncode == -9, proc.stderr[-2000:]
        s = open_storage(url)
        assert all_text(s) == before, f"killed at write {kill_at} of {writes}"
        for rid in ("o0", "o1", "o2"):
            assert verify_run(s, rid).status == "ok"
        s.close()


def _runner(s: Storage, threshold: float = 0.0) -> Runner:
    embed = HashingEmbedder(256)
    mem = AgentMemory(s, embed=embed, recent_n=2,
                      recall=RecallConfig(top_k=3, threshold=threshold, scope="resource"))
    return Runner(s, {"a": Agent("a", "Answer from the conversation.",
                                 ReaderModel(embed=embed))}, memory=mem)


def test_only_provable_copies_are_redacted_never_equal_text() -> None:
    """Issue 33: two people say the same sentence; erasing one person's thread must
    leave the other person's run as it was (it was never given those messages), while
    a run of the erased person's other thread that recalled the sentence is redacted."""
    s = InMemoryStorage()
    runner = _runner(s)
    same = f"The gate code for the depot is {MARKER}."
    runner.run("a", run_id="ann-1", thread_id="ann", resource_id="ann", prompt=same)
    runner.run("a", run_id="bob-1", thread_id="bob", resource_id="bob", prompt=same)
    runner.run("a", run_id="ann-2", thread_id="ann-later", resource_id="ann",
               prompt="What is the gate code for the depot?")
    bob_before = s.runs.list("bob-1:")
    assert any(MARKER in repr(v) for _, v in s.runs.list("ann-2:"))  # recalled: a copy
    report = erase_thread(s, "ann")
    assert "bob-1" not in report.redacted_runs and s.runs.list("bob-1:") == bob_before
    assert verify_run(s, "bob-1").status != "redacted"
    assert report.redacted_runs == ["ann-2"]
    assert not any(MARKER in repr(v) for _, v in s.runs.list("ann-2:"))
    assert s.memory.get_messages("bob")[0].text() == same


def test_a_short_erased_text_and_its_digest_leave_the_runs_given_it() -> None:
    """A gate code of four characters stayed in other runs' answers (too short to be
    matched as text) and each step kept an unsalted digest of the erased message, from
    which 10,000 guesses recovered it. In a run given the message, both go."""
    from memory_core.journal.hashes import message_hash

    s = InMemoryStorage()
    runner = _runner(s)
    runner.run("a", run_id="c-1", thread_id="code", resource_id="u", prompt="4471")
    runner.run("a", run_id="q-1", thread_id="ask", resource_id="u",
               prompt="4471 is what code?")
    erased = s.memory.get_messages("code")
    digests = {message_hash(m.as_message()) for m in erased}
    assert any(d in repr(s.runs.list("q-1:")) for d in digests)
    erase_thread(s, "code")
    text = repr(s.runs.list("q-1:"))
    assert not any(d in text for d in digests)
    assert verify_run(s, "q-1").status == "redacted"
    assert replay(s, "q-1").integrity == "redacted"  # the digests left are still checked
