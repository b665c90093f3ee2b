"""SIGKILL crash matrix: a worker process runs one turn on a database another process
can open and kills itself — at each journal boundary in turn (``on_boundary``), or in
the default mode (no hook) inside a model or tool call, inside a write group, or right
after the run returned; the run is then resumed here under the same run_id and must end
exactly like a run that never crashed: its messages, journal, working memory (a new
nested object holding a null, which a patch applied twice would lose) and status.

Adapters: a DuckDB file (every boundary), SQLite and PostgreSQL (the throwaway server
of tests/pg_server.py); the in-memory adapters cannot outlive a process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memory_core.journal import RunKeys, RunReader
from memory_core.storage.base import Storage
from memory_core.types import canonical_json
from tests import crash_worker as cw
from tests.storage_factories import shared_url

ROOT = Path(__file__).resolve().parent.parent


def _lines(side: Path, name: str) -> list[str]:
    p = side / name
    return p.read_text(encoding="utf-8").splitlines() if p.exists() else []


def _snapshot(storage: Storage) -> dict[str, Any]:
    msgs = storage.memory.get_messages(cw.THREAD)
    return {
        "messages": [(m.seq, m.role, canonical_json(m.model_dump(mode="json")["content"]),
                      m.run_id) for m in msgs],
        # every record but the claims (who held the run differs between attempts)
        "journal": {k: canonical_json(v) for k, v in RunReader(storage.runs, cw.RUN_ID).entries(
            counterfactuals=True)},
        "wm": storage.memory.get_working_memory(f"thread:{cw.THREAD}"),
        "status": storage.runs.require_run(cw.RUN_ID).status,
    }


#: every adapter a process can crash on and another reopen
KINDS = ["duckdb", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
DONE = "Your balance is 42 and the refund is approved."


def _fresh(kind: str, tmp: Path) -> tuple[Storage, str, Path]:
    db = shared_url(kind, tmp) if kind == "postgres" else str(tmp / f"crash.{kind}")
    side = tmp / "side"
    side.mkdir()
    storage = cw.open_storage(kind, db)
    cw.seed(storage)
    return storage, db, side


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    storage, _, side = _fresh("duckdb", tmp_path_factory.mktemp("ref"))
    result = cw.run(cw.build(storage, side))
    assert result.text == DONE
    snap = _snapshot(storage)
    assert snap["wm"] == cw.WM_AFTER
    assert _lines(side, "model.log") == ["0", "1"]
    assert len(_lines(side, "tools.log")) == 1 and len(_lines(side, "wm.log")) == 1
    # user input, assistant call, two tool results, final answer after the history
    assert [(s, r) for s, r, _, _ in snap["messages"]] == [
        (0, "user"), (1, "assistant"), (2, "user"), (3, "assistant"), (4, "tool"),
        (5, "tool"), (6, "assistant")]
    return snap


def _crash(kind: str, tmp_path: Path, **env: str) -> tuple[str, Path]:
    storage, db, side = _fresh(kind, tmp_path)
    storage.close()
    proc = subprocess.run([sys.executable, "-m", "tests.crash_worker", kind, db,
                           str(side)], cwd=ROOT, env={**os.environ, **env,
                                                      "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, proc.stderr[-2000:])
    return db, side


def _crash_then_resume(kind: str, boundary: str, tmp_path: Path) -> tuple[dict[str, Any], Path]:
    db, side = _crash(kind, tmp_path, MEMWB_CRASH_AT=boundary)
    return _resume(kind, db, side), side


def _resume(kind: str, db: str, side: Path) -> dict[str, Any]:
    crashed_calls = len(_lines(side, "model.log"))
    storage = cw.open_storage(kind, db)
    try:
        result = cw.run(cw.build(storage, side))
        assert result.resumed
        assert result.text == DONE
        assert crashed_calls <= 2
        return _snapshot(storage)
    finally:
        storage.close()


@pytest.mark.slow
@pytest.mark.parametrize("boundary", cw.BOUNDARIES)
def test_sigkill_at_every_boundary_then_resume_is_exact(
        boundary: str, tmp_path: Path, reference: dict[str, Any]) -> None:
    snap, side = _crash_then_resume("duckdb", boundary, tmp_path)
    # across both processes: each model step ran once, each tool and patch applied once
    assert _lines(side, "model.log") == ["0", "1"]
    assert _lines(side, "tools.log") == ["a-1"]
    assert _lines(side, "wm.log") == ["patch"]
    assert snap["messages"] == reference["messages"]
    assert snap["wm"] == reference["wm"]
    assert snap["status"] == "completed"
    # every journal record, memctx and frozen prompt included, is byte-identical
    assert snap["journal"] == reference["journal"]


@pytest.mark.slow
@pytest.mark.parametrize("boundary", ["persist:input:stored", "tool:c2",
                                      "persist:output:stored"])
def test_sigkill_matrix_on_sqlite(boundary: str, tmp_path: Path,
                                  reference: dict[str, Any]) -> None:
    snap, side = _crash_then_resume("sqlite", boundary, tmp_path)
    assert _lines(side, "model.log") == ["0", "1"]
    assert _lines(side, "tools.log") == ["a-1"] and _lines(side, "wm.log") == ["patch"]
    assert snap["messages"] == reference["messages"]
    assert snap["journal"] == reference["journal"] and snap["wm"] == reference["wm"]


#: where the default mode (no hook) kills, each just after the writes of one boundary
#: of the matrix above returned: the first model call (after ``persist:input``), each
#: tool (after ``step:0``, ``tool:c1``) and the last model call (after ``tool:c2``)
KILLS_IN = ["model:0", "tool:lookup", "tool:update_working_memory", "model:1"]


@pytest.mark.slow
@pytest.mark.parametrize("kill_in", KILLS_IN)
@pytest.mark.parametrize("kind", KINDS)
def test_sigkill_in_a_call_without_a_hook_then_resume_is_exact(
        kind: str, kill_in: str, tmp_path: Path, reference: dict[str, Any]) -> None:
    """The default mode is as durable as the hooked one: whatever came before the
    killed call is in the store, so the resume asks the model for no step twice, runs
    no tool twice and merges the working-memory patch once (twice would delete the
    null of its new nested object)."""
    db, side = _crash(kind, tmp_path, MEMWB_KILL_IN=kill_in)
    snap = _resume(kind, db, side)
    assert _lines(side, "model.log") == ["0", "1"]
    assert _lines(side, "tools.log") == ["a-1"] and _lines(side, "wm.log") == ["patch"]
    assert snap == reference


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_sigkill_right_after_a_run_returned_loses_nothing(
        kind: str, tmp_path: Path, reference: dict[str, Any]) -> None:
    """Without a hook, every write of a run is durable when the run returns: a SIGKILL
    then loses nothing, and running the id again asks no model and runs no tool."""
    db, side = _crash(kind, tmp_path, MEMWB_KILL_AFTER_RUN="1")
    storage = cw.open_storage(kind, db)
    try:
        assert _snapshot(storage) == reference
        result = cw.run(cw.build(storage, side))
        assert result.resumed and result.text == DONE
        assert _snapshot(storage) == reference
    finally:
        storage.close()
    assert _lines(side, "model.log") == ["0", "1"]
    assert _lines(side, "tools.log") == ["a-1"] and _lines(side, "wm.log") == ["patch"]


@pytest.mark.parametrize("kind", KINDS)
def test_sigkill_between_the_working_memory_merge_and_its_record(
        kind: str, tmp_path: Path, reference: dict[str, Any]) -> None:
    """Killed once the working-memory tool returned (its merge committed) but before
    the Runner wrote its result: the resume runs the tool again for the same call, and
    the tool finds the call marked (the mark committed with the merge) and returns the
    recorded result instead of merging again, which would delete the new nested
    object's null. The journal, the mark included, ends as the reference's."""
    db, side = _crash(kind, tmp_path, MEMWB_KILL_IN="applied:update_working_memory")
    storage = cw.open_storage(kind, db)
    try:
        assert storage.runs.get(RunKeys(cw.RUN_ID).tool("c2")) is None  # not recorded
        assert storage.memory.get_working_memory(f"thread:{cw.THREAD}") == cw.WM_AFTER
    finally:
        storage.close()
    snap = _resume(kind, db, side)
    assert snap == reference
    assert _lines(side, "model.log") == ["0", "1"] and _lines(side, "tools.log") == ["a-1"]
    assert _lines(side, "wm.log") == ["patch", "patch"]  # called again, merged once


def test_every_boundary_fires_once_in_order(tmp_path: Path) -> None:
    storage, _, side = _fresh("duckdb", tmp_path)
    seen: list[str] = []
    cw.run(cw.build(storage, side, seen.append))
    assert seen == cw.BOUNDARIES


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["duckdb", "sqlite"])
@pytest.mark.parametrize("inside", ["first", "last"])
def test_sigkill_inside_a_write_group_keeps_none_of_it(
        kind: str, inside: str, tmp_path: Path, reference: dict[str, Any]) -> None:
    """The Runner commits a run's writes in groups (here without a hook); a kill
    between a group's writes and its commit leaves none of the group, and the resume
    ends like the reference. Only the model answer the killed last group held is asked
    again (it never became durable); the step that called the tools, and the tools,
    were committed before."""
    db, side = _crash(kind, tmp_path, MEMWB_CRASH_INSIDE=inside)
    storage = cw.open_storage(kind, db)
    keys = RunKeys(cw.RUN_ID)
    records = [k for k, _ in storage.runs.list(keys.prefix)
               if not k.startswith(keys.lease_prefix)]
    roles = [m.role for m in storage.memory.get_messages(cw.THREAD)]
    if inside == "first":
        assert records == [] and storage.runs.get_run(cw.RUN_ID) is None
        assert roles == ["user", "assistant"]  # the history only
        assert _lines(side, "model.log") == []
    else:
        assert records == [keys.input, keys.memctx, keys.prompt, keys.persist_input,
                           keys.step(0), keys.tool("c1"), keys.wm("c2"), keys.tool("c2")]
        assert roles == ["user", "assistant", "user"]  # no output stored
        assert storage.runs.require_run(cw.RUN_ID).status == "running"
        assert _lines(side, "model.log") == ["0", "1"]
    storage.close()
    storage = cw.open_storage(kind, db)
    result = cw.run(cw.build(storage, side))
    assert result.text == DONE
    assert _lines(side, "model.log") == (["0", "1"] if inside == "first" else ["0", "1", "1"])
    assert _lines(side, "tools.log") == ["a-1"] and _lines(side, "wm.log") == ["patch"]
    snap = _snapshot(storage)
    storage.close()
    assert snap == reference
