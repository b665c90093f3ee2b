"""Every tamper kind through raw SQL on the file, SQLite and DuckDB alike (issue 33
point 7): ``memwb verify`` exits 1 naming it, or — for what the seal does not cover —
says so plainly, once."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import pytest
from typer.testing import CliRunner

from memory_core.analysis.counterfactual import counterfactual
from memory_core.cli import app
from memory_core.composition.memory import AgentMemory
from memory_core.embedding.hashing import HashingEmbedder
from memory_core.journal.seal import NOT_COVERED, verify_run
from memory_core.models.base import ModelResponse, Tool, ToolSpec
from memory_core.models.reader import ReaderModel
from memory_core.models.scripted import ScriptedModel
from memory_core.runs.runner import Agent, Runner
from memory_core.storage.base import Storage
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.storage.url import open_storage
from memory_core.types import ToolCallPart


class Raw(Protocol):
    """A statement on a plain connection to the file."""

    def __call__(self, statement: str,
                 params: tuple[Any, ...] = ...) -> list[tuple[Any, ...]]: ...


Tamper = Callable[[Raw], object]


def _run_two(s: Storage) -> None:
    mem = AgentMemory(s, embed=HashingEmbedder(64), recent_n=4)
    tool = Tool(ToolSpec("lookup", "look up an order"), lambda a: {"ships": "Monday"})
    for rid, prompt in (("r0", "hello there"), ("r1", "When does order 7 ship?")):
        model = ScriptedModel([
            ModelResponse(tool_calls=[ToolCallPart(id="c1", name="lookup",
                                                   args={"order": 7})]),
            ModelResponse(text="Order 7 ships Monday.")])
        runner = Runner(s, {"a": Agent("a", "Be brief.", model, tools=[tool])}, memory=mem)
        runner.run("a", run_id=rid, thread_id="t", resource_id="u", prompt=prompt)
    # a counterfactual of r1 (what the story and counterfactual pages show as proof)
    counterfactual(s, "r1", lanes=["recent"], model=ReaderModel(), tools=[tool])


def _url(kind: str, tmp: Path) -> str:
    return f"sqlite:///{tmp / 'm.db'}" if kind == "sqlite" else str(tmp / "m.duckdb")


def _raw(kind: str, tmp: Path) -> tuple[Raw, Callable[[], None]]:
    """A plain connection to the file, as an attacker has one."""
    if kind == "sqlite":
        con: Any = sqlite3.connect(tmp / "m.db", isolation_level=None)
    else:
        import duckdb

        con = duckdb.connect(str(tmp / "m.duckdb"))

    def run(statement: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        cur = con.execute(statement, list(params))
        try:
            return list(cur.fetchall())
        except Exception:  # sqlite: a statement without rows
            return []
    return run, con.close


def _journal(raw: Raw, key: str) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(raw("SELECT value FROM journal WHERE key = ?", (key,))[0][0])
    return value


def _forge(raw: Raw, key: str, value: Any) -> None:
    """A new journal record of run r1 (its group copied from one of the run's own)."""
    raw("INSERT INTO journal (key, value, grp) SELECT ?, ?, grp FROM journal WHERE key = ?",
        (key, json.dumps(value), "r1:output"))


def _edit_cf(raw: Raw, part: str, field: str) -> None:
    """Change a field of r1's counterfactual result (``part`` "") or of one record under
    it (``part`` ":answer:" …) in place."""
    (key,) = [k for (k,) in raw("SELECT key FROM journal WHERE key LIKE 'r1:cf:%'")
              if (part in k if part else k.count(":") == 2)][:1]
    value = _journal(raw, key)
    value[field] = ["forged proof"] if isinstance(value.get(field), list) else "forged proof"
    raw("UPDATE journal SET value = ? WHERE key = ?", (json.dumps(value), key))


def _drop_seal_and_flag(raw: Raw) -> None:
    raw("DELETE FROM journal WHERE key = 'r1:seal'")
    value = _journal(raw, "r1:input")
    value.pop("sealed")
    raw("UPDATE journal SET value = ? WHERE key = 'r1:input'", (json.dumps(value),))


def _swap_vectors(raw: Raw) -> None:
    seqs = [r[0] for r in raw("SELECT seq FROM messages WHERE run_id = 'r1' AND "
                              "embedding IS NOT NULL ORDER BY seq")]
    raw("UPDATE messages SET embedding = (SELECT m.embedding FROM messages m WHERE "
        "m.thread_id = 't' AND m.seq = ?) WHERE thread_id = 't' AND seq = ?",
        (seqs[0] - 1, seqs[0]))


# kind: (tamper, (first mismatch, words of the detail)) — or (tamper, words NOT_COVERED
# says) for what the seal does not cover
NAMED: dict[str, tuple[Tamper, tuple[str, str]]] = {
    "run status": (lambda raw: raw("UPDATE runs SET status = 'running' WHERE run_id = 'r1'"),
                   ("runs-table row", "status is 'running'")),
    "run finish time erased": (
        lambda raw: raw("UPDATE runs SET finished_at = NULL WHERE run_id = 'r1'"),
        ("runs-table row", "no finish time")),
    "run error": (lambda raw: raw("UPDATE runs SET error = 'boom' WHERE run_id = 'r1'"),
                  ("runs-table row", "records an error")),
    "messages.run_id moved away": (
        lambda raw: raw("UPDATE messages SET run_id = 'r0' WHERE run_id = 'r1'"),
        ("message t#", "writing run")),
    "messages.run_id claimed": (
        lambda raw: raw("UPDATE messages SET run_id = 'r1' WHERE run_id = 'r0'"),
        ("message t#", "seal does not list it")),
    "search text": (
        lambda raw: raw("UPDATE messages SET text_lower = 'nothing to see' "
                        "WHERE run_id = 'r1' AND text_lower IS NOT NULL"),
        ("message t#", "search text")),
    "seal deleted with the sealed flag": (_drop_seal_and_flag,
                                          ("r1:seal", "seal record and its input")),
    "swapped vectors": (_swap_vectors, ("message t#", "stored vector is not the one")),
    "counterfactual result edited": (lambda raw: _edit_cf(raw, "", "new_answers"),
                                     ("r1:cf:", "changed after it was sealed")),
    "counterfactual answer record edited": (lambda raw: _edit_cf(raw, ":answer:", "text"),
                                            ("r1:cf:", "changed after it was sealed")),
}
OUTSIDE: dict[str, tuple[Tamper, str]] = {
    "run finish time moved": (
        lambda raw: raw("UPDATE runs SET finished_at = '2031-01-01T00:00:00+00:00' "
                        "WHERE run_id = 'r1'"), "a run's finish time"),
    "forged counterfactual record": (lambda raw: _forge(raw, "r1:cf:forged", {
        "baseline": "proof", "variant": "proof"}), "record without its own seal"),
    "forged what-if answer": (lambda raw: _forge(
        raw, "r1:cf:forged:answer:variant-0:0", {"text": "proof"}),
        "record without its own seal"),
}


def _tampered(kind: str, tmp: Path, tamper: Tamper) -> str:
    url = _url(kind, tmp)
    s = open_storage(url)
    _run_two(s)
    assert verify_run(s, "r1").status == "ok"
    s.close()
    raw, close = _raw(kind, tmp)
    tamper(raw)
    close()
    return url


@pytest.mark.parametrize("kind", ["sqlite", "duckdb"])
@pytest.mark.parametrize("case", sorted(NAMED))
def test_each_tamper_kind_is_named_by_verify(case: str, kind: str, tmp_path: Path) -> None:
    tamper, (where, words) = NAMED[case]
    url = _tampered(kind, tmp_path, tamper)
    result = CliRunner().invoke(app, ["verify", "--all", "--db", url])
    assert result.exit_code == 1, result.output
    line = next(x for x in result.output.splitlines() if x.startswith("r1: "))
    assert line.startswith(f"r1: TAMPERED at {where}") and words in line, result.output


@pytest.mark.parametrize("kind", ["sqlite", "duckdb"])
@pytest.mark.parametrize("case", sorted(OUTSIDE))
def test_what_the_seal_does_not_cover_is_said_once(case: str, kind: str,
                                                   tmp_path: Path) -> None:
    tamper, words = OUTSIDE[case]
    url = _tampered(kind, tmp_path, tamper)
    result = CliRunner().invoke(app, ["verify", "--all", "--db", url])
    assert result.exit_code == 0, result.output
    assert result.output.count("not covered by the seal: ") == 1
    assert NOT_COVERED in result.output and words in NOT_COVERED


@pytest.mark.parametrize("change", [
    lambda s: s.runs.set_run_status("r1", "running"),
    lambda s: s.runs.set_run_status("r1", "completed", error="boom"),
    lambda s: s.runs.set_run_status("r1", "completed"),  # its finish time gone
], ids=["status", "error", "finish time"])
def test_the_row_is_checked_in_memory_too(change: Callable[[Storage], None]) -> None:
    s = InMemoryStorage()
    _run_two(s)
    change(s)
    report = verify_run(s, "r1")
    assert (report.status, report.first_mismatch) == ("tampered", "runs-table row"), report
    assert verify_run(s, "r0").status == "ok"
