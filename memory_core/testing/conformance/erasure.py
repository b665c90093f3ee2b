"""Conformance: erasure — a thread or a whole resource goes from every table, journal
included, with a report of what went; nothing else is touched."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memory_core.errors import InvalidInputError, NotFoundError
from memory_core.lifecycle.erasure import erase_resource, erase_thread
from memory_core.storage.base import Storage
from memory_core.testing.support import T0, row, vec
from memory_core.types import ErasureReport, Observation, RunRecord


def populate(s: Storage, tid: str, rid: str | None) -> None:
    """A thread with messages (two with vectors), WM, an observation, a run with
    journal records and observational-memory journal records."""
    s.memory.create_thread(tid, resource_id=rid)
    s.memory.append_messages(tid, [row("a", embedding=vec(1, 0), run_id=f"run-{tid}"),
                                   row("b"), row("c", embedding=vec(0, 1))])
    s.memory.put_working_memory(f"thread:{tid}", {"who": tid})
    s.memory.put_observation(Observation(id=f"obs-{tid}", thread_id=tid, text="x",
                                         created_at=T0))
    s.runs.start_run(RunRecord(run_id=f"run-{tid}", agent="a", thread_id=tid, resource_id=rid,
                               started_at=T0))
    s.runs.put_if_absent(f"run-{tid}:input", {"v": 1})
    s.runs.put_if_absent(f"run-{tid}:output", {"v": 1})
    s.runs.put_if_absent(f"om:{tid}:proc:observe:0", {"v": 1})


def assert_gone(s: Storage, tid: str) -> None:
    assert s.memory.get_thread(tid) is None
    assert s.memory.get_messages(tid) == [] and s.memory.count_messages(tid) == 0
    assert len(s.memory.get_embeddings([tid])) == 0
    assert s.memory.get_working_memory(f"thread:{tid}") is None
    assert s.memory.list_observations(tid) == []
    assert s.runs.list(f"run-{tid}:") == [] and s.runs.list(f"om:{tid}:") == []
    assert s.runs.get_run(f"run-{tid}") is None


def assert_intact(s: Storage, tid: str) -> None:
    assert s.memory.get_thread(tid) is not None
    assert s.memory.count_messages(tid) == 3 and len(s.memory.get_embeddings([tid])) == 2
    assert s.memory.get_working_memory(f"thread:{tid}") == {"who": tid}
    assert len(s.memory.list_observations(tid)) == 1
    assert len(s.runs.list(f"run-{tid}:")) == 2 and len(s.runs.list(f"om:{tid}:")) == 1
    assert s.runs.get_run(f"run-{tid}") is not None


def test_erase_thread_removes_it_everywhere_and_reports(storage: Storage) -> None:
    populate(storage, "t1", "u1")
    populate(storage, "t2", "u1")
    report = erase_thread(storage, "t1")
    assert report == ErasureReport(threads=["t1"], messages=3, embeddings=2,
                                   working_memory=["thread:t1"], observations=1,
                                   journal_entries=3, runs=1)
    assert_gone(storage, "t1")
    assert_intact(storage, "t2")


def test_erase_unknown_thread_is_named(storage: Storage) -> None:
    with pytest.raises(NotFoundError, match="thread 'ghost' does not exist"):
        erase_thread(storage, "ghost")


def test_erase_resource_removes_all_its_threads_and_its_wm(storage: Storage) -> None:
    for tid, rid in (("a", "u1"), ("b", "u1"), ("c", "u2"), ("d", None)):
        populate(storage, tid, rid)
    storage.memory.put_working_memory("resource:u1", {"likes": "tea"})
    storage.memory.put_working_memory("resource:u2", {"likes": "coffee"})
    # a run of the resource with no thread, and its journal
    storage.runs.start_run(RunRecord(run_id="loose", agent="a", resource_id="u1",
                                     started_at=T0 + timedelta(seconds=1)))
    storage.runs.put_if_absent("loose:input", {"v": 1})

    report = erase_resource(storage, "u1")
    assert sorted(report.threads) == ["a", "b"]
    assert (report.messages, report.embeddings, report.observations) == (6, 4, 2)
    assert sorted(report.working_memory) == ["resource:u1", "thread:a", "thread:b"]
    assert (report.journal_entries, report.runs) == (7, 3)
    for tid in ("a", "b"):
        assert_gone(storage, tid)
    assert storage.memory.get_working_memory("resource:u1") is None
    assert storage.runs.get_run("loose") is None and storage.runs.list("loose:") == []
    assert storage.memory.list_resources() == ["u2"]
    assert storage.runs.list_runs(resource_id="u1") == []
    for tid in ("c", "d"):
        assert_intact(storage, tid)
    assert storage.memory.get_working_memory("resource:u2") == {"likes": "coffee"}


def test_erase_resource_without_rows_reports_nothing(storage: Storage) -> None:
    assert erase_resource(storage, "nobody") == ErasureReport()


def test_erase_resource_needs_an_id(storage: Storage) -> None:
    with pytest.raises(InvalidInputError, match="resource_id"):
        erase_resource(storage, "")


def test_delete_thread_is_memory_side_only(storage: Storage) -> None:
    populate(storage, "t1", "u1")
    report = storage.memory.delete_thread("t1")
    assert (report.threads, report.messages, report.embeddings, report.observations) == \
        (["t1"], 3, 2, 1)
    assert storage.memory.get_thread("t1") is None
    assert len(storage.runs.list("run-t1:")) == 2  # the journal is Storage.erase_*'s job
