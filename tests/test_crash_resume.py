"""SIGKILL crash matrix: a worker process runs one turn on a file database and kills
itself at each journal boundary in turn; the run is then resumed here under the same
run_id and must end exactly like a run that never crashed."""

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


def _fresh(kind: str, tmp: Path) -> tuple[Storage, Path, Path]:
    db = tmp / f"crash.{kind}"
    side = tmp / "side"
    side.mkdir()
    storage = cw.open_storage(kind, str(db))
    cw.seed(storage)
    return storage, db, side


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    storage, _, side = _fresh("duckdb", tmp_path_factory.mktemp("ref"))
    result = cw.run(cw.build(storage, side))
    assert result.text == "Your balance is 42 and the refund is approved."
    snap = _snapshot(storage)
    assert _lines(side, "model.log") == ["0", "1"]
    assert len(_lines(side, "tools.log")) == 1 and len(_lines(side, "wm.log")) == 1
    # user input, assistant call, two tool results, final answer after the history
    assert [(s, r) for s, r, _, _ in snap["messages"]] == [
        (0, "user"), (1, "assistant"), (2, "user"), (3, "assistant"), (4, "tool"),
        (5, "tool"), (6, "assistant")]
    return snap


def _crash(kind: str, tmp_path: Path, **env: str) -> tuple[Path, Path]:
    storage, db, side = _fresh(kind, tmp_path)
    storage.close()
    proc = subprocess.run([sys.executable, "-m", "tests.crash_worker", kind, str(db),
                           str(side)], cwd=ROOT, env={**os.environ, **env,
                                                      "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, proc.stderr[-2000:])
    return db, side


def _crash_then_resume(kind: str, boundary: str, tmp_path: Path) -> tuple[dict[str, Any], Path]:
    db, side = _crash(kind, tmp_path, MEMWB_CRASH_AT=boundary)
    crashed_calls = len(_lines(side, "model.log"))
    storage = cw.open_storage(kind, str(db))
    result = cw.run(cw.build(storage, side))
    assert result.resumed
    assert result.text == "Your balance is 42 and the refund is approved."
    assert crashed_calls <= 2
    return _snapshot(storage), side


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
    assert snap["wm"] == {"refund": "approved"}
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
    assert snap["journal"] == reference["journal"]


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
    """The Runner commits a run's writes in groups; a kill between a group's writes
    and its commit leaves none of the group, and the resume ends like the reference.
    Only the model answer the killed last group held is asked again (it never became
    durable); the step that called the tools, and the tools, were committed before."""
    db, side = _crash(kind, tmp_path, MEMWB_CRASH_INSIDE=inside)
    storage = cw.open_storage(kind, str(db))
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
                           keys.step(0), keys.tool("c1"), keys.tool("c2")]
        assert roles == ["user", "assistant", "user"]  # no output stored
        assert storage.runs.require_run(cw.RUN_ID).status == "running"
        assert _lines(side, "model.log") == ["0", "1"]
    storage.close()
    storage = cw.open_storage(kind, str(db))
    result = cw.run(cw.build(storage, side))
    assert result.text == "Your balance is 42 and the refund is approved."
    assert _lines(side, "model.log") == (["0", "1"] if inside == "first" else ["0", "1", "1"])
    assert _lines(side, "tools.log") == ["a-1"] and _lines(side, "wm.log") == ["patch"]
    snap = _snapshot(storage)
    assert snap["messages"] == reference["messages"]
    assert snap["journal"] == reference["journal"]
    assert snap["status"] == "completed"


def test_sigkill_after_a_run_returned_with_its_writes_waiting_then_resume_is_exact(
        tmp_path: Path, reference: dict[str, Any]) -> None:
    """Without a boundary hook the Runner's write groups wait in memory on DuckDB
    (``write_batch(durable=False)``) and are committed later: a SIGKILL right after
    the run returned loses its last group. The step that called the tools was
    committed before they ran, and each tool result on its own, so the resume asks
    only the last step's model again, runs no tool twice, and ends exactly like a run
    that never crashed."""
    db, side = _crash("duckdb", tmp_path, MEMWB_KILL_AFTER_RUN="1", MEMWB_COMMIT_DELAY="60")
    assert _lines(side, "model.log") == ["0", "1"]
    storage = cw.open_storage("duckdb", str(db))
    keys = RunKeys(cw.RUN_ID)
    assert storage.runs.require_run(cw.RUN_ID).status == "running"  # the last group lost
    assert storage.runs.get(keys.step(0)) is not None and storage.runs.get(keys.step(1)) is None
    result = cw.run(cw.build(storage, side))
    assert result.resumed and result.text == "Your balance is 42 and the refund is approved."
    assert _lines(side, "model.log") == ["0", "1", "1"]
    assert _lines(side, "tools.log") == ["a-1"] and _lines(side, "wm.log") == ["patch"]
    snap = _snapshot(storage)
    assert snap["messages"] == reference["messages"] and snap["status"] == "completed"
    assert snap["journal"] == reference["journal"] and snap["wm"] == reference["wm"]
    storage.close()
