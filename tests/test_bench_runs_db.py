"""bench/runs_db.py: the many-run benchmark database is made of real, sealed Runner runs
over varied threads (several resources, tool calls, working memory, long threads)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.runs_db import LONG_TURNS, build_runs_db, plan
from memory_core.errors import InvalidInputError
from memory_core.journal import load_run
from memory_core.journal.seal import verify_run
from memory_core.storage.duckdb import DuckDBStorage


def test_plan_adds_up_to_the_runs_asked_with_long_threads_and_several_resources() -> None:
    p = plan(5000)
    assert p.runs == 5000
    turns = [n for _, _, n in p.threads]
    assert max(turns) == LONG_TURNS and min(turns) >= 1
    assert sum(1 for n in turns if n == LONG_TURNS) >= 5
    resources = {r for _, r, _ in p.threads}
    assert "" in resources and len(resources - {""}) >= 4
    assert len({t for t, _, _ in p.threads}) == len(p.threads)


@pytest.mark.parametrize("bad", [0, -3])
def test_a_run_count_below_one_is_refused(bad: int) -> None:
    with pytest.raises(InvalidInputError, match=str(bad)):
        plan(bad)


def test_an_existing_file_is_never_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "taken.duckdb"
    path.write_bytes(b"not ours")
    with pytest.raises(InvalidInputError, match="taken.duckdb"):
        build_runs_db(path, 5)
    assert path.read_bytes() == b"not ours"


@pytest.mark.slow
def test_the_database_holds_sealed_runner_runs(tmp_path: Path) -> None:
    path = tmp_path / "runs.duckdb"
    report = build_runs_db(path, 40)
    assert report.runs == 40 and report.seconds > 0
    storage = DuckDBStorage(str(path), read_only=True)
    try:
        runs = storage.runs.list_runs()
        assert len(runs) == 40
        assert all(r.status == "completed" for r in runs)
        threads = {r.thread_id for r in runs}
        assert len(threads) == report.threads == len(plan(40).threads)
        assert {r.resource_id for r in runs} >= {"user-0", "user-1"}
        tool_names: set[str] = set()
        for r in runs:
            assert verify_run(storage, r.run_id).status == "ok", r.run_id
            data = load_run(storage, r.run_id)
            assert data.output is not None and data.output.text
            tool_names |= {t.name for t in data.tools.values()}
        # the reader model looked orders up and wrote working memory
        assert {"lookup_order", "update_working_memory"} <= tool_names
        for tid in threads:
            assert tid is not None and len(storage.memory.get_messages(tid)) >= 2
    finally:
        storage.close()


def test_a_storage_url_builds_that_adapter(tmp_path: Path) -> None:
    from memory_core.storage.sqlite import SQLiteStorage

    path = tmp_path / "runs.sqlite"
    # it made a DuckDB file at the literal path "sqlite:/…" (a directory "sqlite:")
    report = build_runs_db(f"sqlite:///{path}", 12)
    assert path.exists() and not (Path.cwd() / "sqlite:").exists()
    storage = SQLiteStorage(str(path))
    try:
        assert len(storage.runs.list_runs()) == report.runs == 12
    finally:
        storage.close()
    with pytest.raises(InvalidInputError, match="runs.sqlite"):
        build_runs_db(f"sqlite:///{path}", 5)
