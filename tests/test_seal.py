"""A tamper-evident journal: every kind of edit to a finished run is named by
``verify_run`` (``memwb verify``) and by ``replay``."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memory_core.cli import app
from memory_core.composition.memory import AgentMemory
from memory_core.embedding.hashing import HashingEmbedder
from memory_core.errors import ReplayMismatch
from memory_core.journal import RunKeys
from memory_core.journal.seal import verify_run
from memory_core.models.base import ModelResponse, Tool, ToolSpec, Usage
from memory_core.models.scripted import ScriptedModel
from memory_core.runs.replay import replay
from memory_core.runs.runner import Agent, Runner
from memory_core.storage.sqlite import SQLiteStorage
from memory_core.types import ToolCallPart

K = RunKeys("r1")


def build(path: Path) -> SQLiteStorage:
    s = SQLiteStorage(str(path))
    mem = AgentMemory(s, embed=HashingEmbedder(64), recent_n=4)
    model = ScriptedModel([
        ModelResponse(tool_calls=[ToolCallPart(id="c1", name="lookup", args={"order": 7})],
                      usage=Usage(input_tokens=10, output_tokens=3), finish_reason="tool_calls"),
        ModelResponse(text="Order 7 ships Monday.", usage=Usage(input_tokens=20, output_tokens=5),
                      finish_reason="stop")])
    model.temperature = 0.0  # type: ignore[attr-defined]
    tool = Tool(ToolSpec("lookup", "look up an order"), lambda a: {"ships": "Monday"})
    runner = Runner(s, {"a": Agent("a", "Be brief.", model, tools=[tool])}, memory=mem)
    runner.run("a", run_id="r0", thread_id="t", resource_id="u", prompt="hello there")
    model2 = ScriptedModel(list(model._responses))  # same script for the second run
    runner.agents["a"] = Agent("a", "Be brief.", model2, tools=[tool])
    runner.run("a", run_id="r1", thread_id="t", resource_id="u", prompt="When does 7 ship?")
    return s


def edit(s: SQLiteStorage, key: str, change: Callable[[Any], None]) -> None:
    value = json.loads(json.dumps(s.runs.get(key)))
    change(value)
    s.runs.delete(key)
    s.runs.put_if_absent(key, value)


def sql(path: Path, statement: str, *params: Any) -> None:
    con = sqlite3.connect(path)
    with con:
        con.execute(statement, params)
    con.close()


def _set(d: dict, path: str, value: Any) -> None:
    *head, last = path.split(".")
    for p in head:
        d = d[int(p)] if p.isdigit() else d[p]  # type: ignore[assignment]
    d[last] = value


CASES: dict[str, tuple[str | None, Callable[[SQLiteStorage, Path], None]]] = {
    "step usage": (K.step(0), lambda s, p: edit(s, K.step(0), lambda v: _set(
        v, "response.usage.input_tokens", 999))),
    "model name": (K.step(0), lambda s, p: edit(s, K.step(0), lambda v: _set(
        v, "model.name", "gpt-4o"))),
    "model temperature": (K.step(1), lambda s, p: edit(s, K.step(1), lambda v: _set(
        v, "model.temperature", 1.5))),
    "finish reason": (K.step(1), lambda s, p: edit(s, K.step(1), lambda v: _set(
        v, "response.finish_reason", "length"))),
    "offered tools": (K.step(0), lambda s, p: edit(s, K.step(0), lambda v: v["tools"].clear())),
    "whole-input hash": (K.step(0), lambda s, p: edit(s, K.step(0), lambda v: _set(
        v, "input_hash", "0" * 64))),
    "memctx record": (K.memctx, lambda s, p: edit(s, K.memctx, lambda v: _set(
        v, "recent_count", 0))),
    "input record": (K.input, lambda s, p: edit(s, K.input, lambda v: _set(
        v, "messages.0.content", "something else"))),
    "tool arguments alone": (K.tool("c1"), lambda s, p: edit(s, K.tool("c1"), lambda v: _set(
        v, "args.order", 8))),
    "tool result": (K.tool("c1"), lambda s, p: edit(s, K.tool("c1"), lambda v: _set(
        v, "result.ships", "never"))),
    "output": (K.output, lambda s, p: edit(s, K.output, lambda v: _set(v, "text", "No."))),
    "frozen prompt": (K.prompt, lambda s, p: edit(s, K.prompt, lambda v: _set(
        v, "items.0.message.content", "Be rude."))),
    "stored input message": ("message t#", lambda s, p: sql(
        p, "UPDATE messages SET body = replace(body, 'When does 7', 'Why does 8') "
           "WHERE thread_id = 't'")),
    "runs row": ("runs-table row", lambda s, p: sql(
        p, "UPDATE runs SET agent = 'other' WHERE run_id = 'r1'")),
    "seal removed": (K.seal, lambda s, p: s.runs.delete(K.seal)),
    "record removed": (K.persist_output, lambda s, p: s.runs.delete(K.persist_output)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_kind_of_tampering_is_named_by_verify_and_replay(tmp_path: Path,
                                                               case: str) -> None:
    path = tmp_path / "j.db"
    s = build(path)
    assert verify_run(s, "r1").status == "ok"
    assert replay(s, "r1").integrity == "ok"
    where, tamper = CASES[case]
    tamper(s, path)
    s.close()
    s = SQLiteStorage(str(path))
    report = verify_run(s, "r1")
    assert report.status == "tampered", report
    assert where is not None and (report.first_mismatch or "").startswith(where), report
    assert verify_run(s, "r0").status == "ok"  # the other run is untouched
    with pytest.raises(ReplayMismatch, match="fails verification"):
        replay(s, "r1")
    s.close()
    result = CliRunner().invoke(app, ["verify", "--all", "--db", f"sqlite:///{path}"])
    assert result.exit_code == 1
    assert f"r1: TAMPERED at {report.first_mismatch}" in result.output
    assert "r0: ok" in result.output and "2 runs checked, 1 tampered" in result.output


def test_a_journal_value_that_is_not_json_is_reported_not_raised(tmp_path: Path) -> None:
    path = tmp_path / "j.db"
    build(path).close()
    sql(path, "UPDATE journal SET value = '{not json' WHERE key = ?", K.output)
    s = SQLiteStorage(str(path))
    report = verify_run(s, "r1")
    assert report.status == "tampered" and "cannot be read" in report.detail
    result = CliRunner().invoke(app, ["verify", "r1", "--db", f"sqlite:///{path}"])
    assert result.exit_code == 1 and "Traceback" not in result.output


def test_runs_recorded_before_sealing_are_unsealed_not_tampered(tmp_path: Path) -> None:
    path = tmp_path / "j.db"
    s = build(path)
    s.runs.delete(K.seal)
    edit(s, K.input, lambda v: v.pop("sealed"))  # as older code wrote it: no flag,
    s.runs.delete(K.lease_prefix)  # and no claims (they came after seals)
    assert verify_run(s, "r1").status == "unsealed"
    assert replay(s, "r1").integrity == "unsealed"


def test_imported_runs_are_sealed_and_verify(tmp_path: Path) -> None:
    from memory_core.importers import import_file
    from memory_core.storage.inmemory import InMemoryStorage

    s = InMemoryStorage()
    src = Path(__file__).parent / "fixtures" / "imports"
    report = import_file(s, src / "openai_support.jsonl", embed=HashingEmbedder(64))
    assert report.runs_created
    for rid in report.runs_created:
        assert verify_run(s, rid).status == "ok"
    rid = report.runs_created[-1]
    edit(s, RunKeys(rid).memctx, lambda v: _set(v, "recent_count", 99))  # type: ignore[arg-type]
    assert verify_run(s, rid).status == "tampered"


def test_an_imported_failed_call_is_sealed_as_failed(tmp_path: Path) -> None:
    """A recorded call that failed is imported whole, as a failed run: it verified as
    "tampered" ("sealed as finished but its status is 'failed'") and made `memwb verify
    --all` fail on any imported file with an error in it."""
    from memory_core.importers import import_file
    from memory_core.storage.sqlite import SQLiteStorage as Store

    db = tmp_path / "imp.sqlite"
    s = Store(str(db))
    real = Path(__file__).parent / "fixtures" / "imports" / "real"
    [rid] = import_file(s, real / "otelv2-test_chat_completion_404.yaml").runs_created
    assert s.runs.require_run(rid).status == "failed"
    assert verify_run(s, rid).status == "ok"
    s.close()
    result = CliRunner().invoke(app, ["verify", "--all", "--db", f"sqlite:///{db}"])
    assert result.exit_code == 0, result.output
    s = Store(str(db))
    s.runs.set_run_status(rid, "failed", error="another error")
    report = verify_run(s, rid)
    assert (report.status, report.first_mismatch, report.detail) == (
        "tampered", "runs-table row", "the run's recorded error changed")
    s.runs.set_run_status(rid, "completed")
    assert verify_run(s, rid).detail == "the run was sealed as failed but is no longer marked so"
    s.close()


def test_an_imported_failed_call_verifies_and_a_completed_run_made_failed_does_not() -> None:
    """An import records a failed call whole, sealed with status "failed" and no output
    record: verify called it "sealed as finished but its status is 'failed'"
    (tampered). A run sealed with its output whose status is set to failed afterwards
    is still tampering."""
    from memory_core.importers import import_text
    from memory_core.storage.inmemory import InMemoryStorage

    s = InMemoryStorage()
    lines = [{"request": {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
              "error": {"message": "The model `m` does not exist"}},
             {"request": {"model": "m", "messages": [{"role": "user", "content": "yo"}]},
              "response": {"choices": [{"message": {"role": "assistant", "content": "hey"}}]}}]
    failed, done = import_text(s, "\n".join(json.dumps(x) for x in lines),
                               name="calls.jsonl").runs_created
    assert s.runs.require_run(failed).status == "failed"
    assert verify_run(s, failed).status == "ok"
    assert verify_run(s, done).status == "ok"
    s.runs.set_run_status(done, "failed")
    report = verify_run(s, done)
    assert report.status == "tampered" and report.first_mismatch == "runs-table row"


@pytest.mark.parametrize("kind", ["inmemory", "sqlite", "duckdb"])
def test_a_fresh_run_is_sealed_from_what_it_wrote(kind: str, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The Runner seals a run it wrote whole from its own records and messages, with no
    read-back (``seal_run`` is not called), and that seal is the one the journal and the
    store give — on every adapter, tool calls, two threads' runs and a second turn."""
    from memory_core.journal import seal as seal_mod
    from memory_core.runs.runner import Runner as RunnerCls
    from memory_core.storage.duckdb import DuckDBStorage
    from memory_core.storage.inmemory import InMemoryStorage

    s: Any = {"inmemory": InMemoryStorage, "sqlite": lambda: SQLiteStorage(
        str(tmp_path / "s.sqlite")), "duckdb": lambda: DuckDBStorage(
        tmp_path / "s.duckdb")}[kind]()
    mem = AgentMemory(s, embed=HashingEmbedder(64), recent_n=4)
    responses: list[ModelResponse | str] = []
    for i in range(3):
        responses += [ModelResponse(tool_calls=[ToolCallPart(id=f"c{i}", name="lookup",
                                                             args={"order": i})]),
                      f"Order {i} ships Monday."]
    tool = Tool(ToolSpec("lookup", "look up an order"), lambda a: {"ships": "Monday"})
    agent = Agent(name="a", instructions="Answer.", model=ScriptedModel(responses),
                  tools=[tool])
    runner = RunnerCls(s, {"a": agent}, memory=mem)
    # the first turn of a thread is titled by the memory's own writer: read back
    runner.run("a", run_id="r0", thread_id="t1", resource_id="u", prompt="order 0?")

    def no_read_back(*a: Any, **k: Any) -> Any:
        raise AssertionError("a fresh run was sealed by reading it back")

    monkeypatch.setattr("memory_core.runs.runner.seal_run", no_read_back)
    runner.run("a", run_id="r1", thread_id="t1", resource_id="u", prompt="order 1?")
    runner.run("a", run_id="r2", thread_id=None, prompt="order 2?")
    for rid in ("r0", "r1", "r2"):
        assert seal_mod.read_seal(s, rid) == seal_mod.compute_seal(s, rid)
        assert verify_run(s, rid).status == "ok"
    s.close()


KILLED_MID_RUN = """
import os, signal, sys
from memory_core.embedding.hashing import HashingEmbedder
from memory_core.composition.memory import AgentMemory
from memory_core.models.base import ModelResponse
from memory_core.runs.runner import Agent, Runner
from memory_core.storage.url import open_storage

class Dies:
    def complete(self, messages, tools):
        os.kill(os.getpid(), signal.SIGKILL)  # the process dies inside the model call
        return ModelResponse(text="never")

s = open_storage(sys.argv[1])
mem = AgentMemory(s, embed=HashingEmbedder(64), recent_n=4)
Runner(s, {"a": Agent("a", "Be brief.", Dies())}, memory=mem).run(
    "a", run_id="r9", thread_id="t", resource_id="u", prompt="hello")
"""


@pytest.mark.parametrize("kind", ["sqlite", "duckdb"])
def test_a_run_killed_mid_way_is_unfinished_not_tampered(kind: str, tmp_path: Path) -> None:
    """A crash never reads as an attack: a run whose process died before its last write
    group has no seal yet (the output, the seal and the status commit together); verify
    says it is interrupted (never finished) and exits 3, not 1."""
    import subprocess
    import sys

    url = f"sqlite:///{tmp_path / 'k.db'}" if kind == "sqlite" else str(tmp_path / "k.duckdb")
    done = subprocess.run([sys.executable, "-c", KILLED_MID_RUN, url], capture_output=True,
                          text=True, timeout=120, cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == -9, done.stderr[-2000:]
    from memory_core.storage.url import open_storage

    s = open_storage(url)
    assert s.runs.require_run("r9").status == "running"
    report = verify_run(s, "r9")
    assert report.status == "interrupted" and "never finished" in report.detail, report
    s.close()
    result = CliRunner().invoke(app, ["verify", "--all", "--db", url])
    assert result.exit_code == 3 and "TAMPERED" not in result.output, result.output
    assert "r9: interrupted (never finished)" in result.output
    assert "1 runs checked, 0 tampered, 1 interrupted (never finished)" in result.output


@pytest.mark.parametrize("status", ["completed", "failed"])
def test_a_seal_made_as_text_is_the_seal_model_as_stored(status: str) -> None:
    """An import writes each run's seal as text without the model (``seal_text_of``):
    the same bytes the model's record is stored as, for a run that ended either way."""
    from datetime import UTC, datetime

    from memory_core.journal.seal import seal_of, seal_text_of
    from memory_core.storage.common import EncodedJson
    from memory_core.types import Message, RunRecord, canonical_json

    at = datetime(2026, 1, 1, tzinfo=UTC)
    run = RunRecord(run_id="r1", agent="a", thread_id="t", status=status,  # type: ignore[arg-type]
                    started_at=at, finished_at=at,
                    error="boom" if status == "failed" else None)
    keys = RunKeys("r1")
    entries: list[tuple[str, Any]] = [(keys.input, EncodedJson('{"v":1}')),
                                      (keys.output, {"text": "é", "v": 1})]
    stored: list[tuple[int, Message | str]] = [(1, Message(role="assistant", content="hi")),
                                               (0, '{"content":"x","metadata":{},"role":"user"}')]
    assert seal_text_of(run, entries, stored).text == canonical_json(
        seal_of(run, entries, stored).model_dump(mode="json"))
