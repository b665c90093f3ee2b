"""Conformance: the runs table — idempotent start, status changes, listing."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memory_core.errors import NotFoundError
from memory_core.storage.base import Storage
from memory_core.testing.support import T0
from memory_core.types import RunRecord


def run(rid: str, at: int = 0, *, thread: str | None = "t1", resource: str | None = "u1",
        agent: str = "helper") -> RunRecord:
    return RunRecord(run_id=rid, agent=agent, thread_id=thread, resource_id=resource,
                     started_at=T0 + timedelta(seconds=at))


def test_start_run_is_idempotent_keeping_first_record(storage: Storage) -> None:
    assert storage.runs.start_run(run("r1", agent="first")) is True
    assert storage.runs.start_run(run("r1", 9, agent="second")) is False
    assert storage.runs.get_run("r1") == run("r1", agent="first")


def test_set_status_records_finish_and_error(storage: Storage) -> None:
    storage.runs.start_run(run("r1"))
    done = T0 + timedelta(seconds=30)
    storage.runs.set_run_status("r1", "failed", finished_at=done, error="boom")
    r = storage.runs.require_run("r1")
    assert (r.status, r.finished_at, r.error) == ("failed", done, "boom")
    storage.runs.set_run_status("r1", "completed", finished_at=done)
    r = storage.runs.require_run("r1")
    assert (r.status, r.error) == ("completed", None)


def test_unknown_run_is_named(storage: Storage) -> None:
    assert storage.runs.get_run("ghost") is None
    with pytest.raises(NotFoundError, match="run 'ghost' does not exist"):
        storage.runs.set_run_status("ghost", "completed")
    with pytest.raises(NotFoundError, match="run 'ghost' does not exist"):
        storage.runs.require_run("ghost")


def test_list_by_thread_and_resource_ordered_by_start(storage: Storage) -> None:
    storage.runs.start_run(run("b", 2))
    storage.runs.start_run(run("a", 2))
    storage.runs.start_run(run("c", 1, thread="t2"))
    storage.runs.start_run(run("d", 0, thread=None, resource="u2"))
    assert [r.run_id for r in storage.runs.list_runs()] == ["d", "c", "a", "b"]
    assert [r.run_id for r in storage.runs.list_runs(thread_id="t1")] == ["a", "b"]
    assert [r.run_id for r in storage.runs.list_runs(resource_id="u1")] == ["c", "a", "b"]
    assert [r.run_id for r in storage.runs.list_runs(thread_id="t2", resource_id="u1")] == ["c"]


def test_delete_runs_counts_existing(storage: Storage) -> None:
    storage.runs.start_run(run("a"))
    storage.runs.start_run(run("b"))
    assert storage.runs.delete_runs(["a", "ghost"]) == 1
    assert [r.run_id for r in storage.runs.list_runs()] == ["b"]
    assert storage.runs.delete_runs([]) == 0
