"""Conformance: the reads behind the workbench's listings of every thread and run —
``thread_activity`` (each thread with its message count and last message time, no
bodies), ``thread_runs`` (each thread's run count and latest run moment, no run
records) and ``run_rows`` (``list_runs`` as plain rows).

Each adapter's answer is also checked against the ports' portable definition (the
base class's, built from ``list_threads``, ``thread_stats``, ``get_messages_by_refs``
and ``list_runs``): an adapter's one-query version must not drift from it."""

from __future__ import annotations

from datetime import timedelta, timezone

from memory_core.lifecycle.erasure import erase_thread
from memory_core.storage.base import (
    MemoryStore,
    RunJournal,
    RunRow,
    Storage,
    ThreadActivity,
    ThreadRuns,
)
from memory_core.testing.support import T0, StepClock, row
from memory_core.types import RunRecord

PLUS2 = timezone(timedelta(hours=2))


def _threads(s: Storage, clock: StepClock) -> None:
    m = s.memory
    clock.set(10)
    m.create_thread("b", resource_id="u1", title="Bee", metadata={"k": "v"})
    clock.set(10)
    m.create_thread("a", resource_id="u1")  # same instant: ties by id
    clock.set(20)
    m.create_thread("loose", parent_thread_id="a")  # no resource; a branch of a
    clock.set(30)
    m.create_thread("empty", resource_id="u2")
    m.append_messages("a", [row("x", created_at=T0 + timedelta(hours=1)),
                            row("y", created_at=(T0 + timedelta(hours=3)).astimezone(PLUS2))])
    # explicit seqs with a gap: the last message is the highest seq, not the count
    m.append_messages("b", [row("p", seq=4, created_at=T0 + timedelta(hours=5)),
                            row("q", seq=9, created_at=T0 + timedelta(hours=2))])
    m.append_messages("loose", [row("z")])


def test_each_thread_with_its_count_and_last_message_time(clocked: Storage,
                                                          clock: StepClock) -> None:
    _threads(clocked, clock)
    m = clocked.memory
    got = m.thread_activity()
    assert [t.thread_id for t in got] == [t.id for t in m.list_threads()]
    by = {t.thread_id: t for t in got}
    assert all(isinstance(t, ThreadActivity) for t in got)
    assert by["a"].message_count == 2 and by["b"].message_count == 2
    # the last message is the thread's highest seq (b's seq 9, recorded earlier than
    # its seq 4), with the time as recorded, offset kept
    assert by["a"].last_message_at == T0 + timedelta(hours=3)
    assert by["a"].last_message_at is not None
    assert by["a"].last_message_at.utcoffset() == timedelta(hours=2)
    assert by["b"].last_message_at == T0 + timedelta(hours=2)
    assert (by["b"].title, by["b"].resource_id) == ("Bee", "u1")
    assert by["empty"].message_count == 0 and by["empty"].last_message_at is None
    assert by["empty"].updated_at == m.require_thread("empty").updated_at
    assert by["loose"].resource_id is None
    assert (by["loose"].parent_thread_id, by["a"].parent_thread_id) == ("a", None)
    # one resource: its threads only, in list_threads order
    assert [t.thread_id for t in m.thread_activity("u1")] == ["a", "b"]
    assert m.thread_activity("nobody") == []
    for resource in (None, "u1", "u2"):
        assert m.thread_activity(resource) == MemoryStore.thread_activity(m, resource)


def test_activity_follows_appends_and_erasure(clocked: Storage, clock: StepClock) -> None:
    _threads(clocked, clock)
    m = clocked.memory
    erase_thread(clocked, "b")
    m.append_messages("a", [row("later", created_at=T0 + timedelta(days=2))])
    got = {t.thread_id: t for t in m.thread_activity()}
    assert "b" not in got
    assert (got["a"].message_count, got["a"].last_message_at) == (3, T0 + timedelta(days=2))
    assert m.thread_activity("u1") == MemoryStore.thread_activity(m, "u1")


def _run(rid: str, thread: str | None, start_h: float, *, tz: timezone | None = None
         ) -> RunRecord:
    at = T0 + timedelta(hours=start_h)
    return RunRecord(run_id=rid, agent="a", thread_id=thread, resource_id="u1",
                     started_at=at.astimezone(tz) if tz else at)


def test_each_thread_with_its_run_count_and_latest_moment(storage: Storage) -> None:
    r = storage.runs
    assert r.thread_runs() == {}
    r.start_run(_run("r1", "t1", 1))
    r.start_run(_run("r2", "t1", 2))
    r.start_run(_run("r3", "t2", 1, tz=PLUS2))  # never finished: its start counts
    r.start_run(_run("r4", None, 9))  # on no thread: left out
    # r1 started first but finished last: its finish is the thread's latest moment
    r.set_run_status("r1", "completed", finished_at=T0 + timedelta(hours=5))
    r.set_run_status("r2", "failed", finished_at=T0 + timedelta(hours=3), error="boom")
    got = r.thread_runs()
    assert got == {"t1": ThreadRuns(2, T0 + timedelta(hours=5)),
                   "t2": ThreadRuns(1, T0 + timedelta(hours=1))}
    assert got["t2"].last_at.utcoffset() == timedelta(hours=2)  # as recorded
    assert got == RunJournal.thread_runs(r)
    r.delete_runs(["r1"])
    assert r.thread_runs()["t1"] == ThreadRuns(1, T0 + timedelta(hours=3))


def test_run_rows_are_list_runs_as_plain_rows(storage: Storage) -> None:
    r = storage.runs
    assert r.run_rows() == []
    r.start_run(_run("r2", "t1", 2))
    r.start_run(_run("r1", "t1", 1, tz=PLUS2))
    r.start_run(_run("r3", None, 3))
    r.start_run(_run("r0", "t2", 1))  # same start as r1: ties by run id
    r.set_run_status("r2", "failed", finished_at=T0 + timedelta(hours=4), error="boom")
    for thread in (None, "t1", "t2", "nowhere"):
        rows = r.run_rows(thread_id=thread)
        assert [tuple(x) for x in rows] == [
            (x.run_id, x.agent, x.thread_id, x.resource_id, x.status, x.started_at,
             x.finished_at, x.error) for x in r.list_runs(thread_id=thread)]
        assert rows == RunJournal.run_rows(r, thread_id=thread)
    rows = r.run_rows()
    assert [x.run_id for x in rows] == ["r0", "r1", "r2", "r3"]
    assert isinstance(rows[0], RunRow) and rows[2].error == "boom"
    assert rows[1].started_at.utcoffset() == timedelta(hours=2)  # as recorded
