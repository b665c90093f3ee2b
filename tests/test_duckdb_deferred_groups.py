"""DuckDB's deferred write groups (``write_batch(durable=False)``, what a Runner's groups
use): their journal records, runs and appends wait in memory with the writes before
them and are committed together; this process reads them at once; a group is all or
nothing, whether it waited or had to become a transaction; a failed group leaves the
writes before it waiting, then committed."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from memory_core.errors import InvalidInputError, NotFoundError
from memory_core.storage.duckdb import DuckDBStorage
from memory_core.types import AppendRow, Message, RunRecord

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _run(run_id: str) -> RunRecord:
    return RunRecord(run_id=run_id, agent="a", thread_id="t", resource_id="u",
                     status="running", started_at=T0)


def _row(text: str) -> AppendRow:
    return AppendRow(message=Message(role="user", content=text),
                     embedding=np.ones(4, np.float32))


@pytest.fixture
def store(tmp_path: Path) -> DuckDBStorage:
    s = DuckDBStorage(tmp_path / "d.duckdb", commit_delay=60)  # nothing commits by itself
    s.memory.create_thread("t", resource_id="u")
    yield s
    s.close()


def _in_file(store: DuckDBStorage, sql: str) -> list[tuple]:
    """What the file holds, read on the writer's connection without committing what
    waits (a read of the journal or runs never commits them)."""
    h = store._duck.handle
    with h.lock:
        h.settle()  # (a commit of the keeper's in flight, without the lock)
        conn = h.idle if h.idle is not None else h.held
        assert conn is not None
        return conn.execute(sql).fetchall()


def test_a_group_waits_and_is_read_at_once(store: DuckDBStorage) -> None:
    with store.write_batch(durable=False):
        assert store.runs.start_run(_run("r1"))
        assert store.runs.put_many_if_absent([("r1:a", {"v": 1}), ("r1:b", 2)]) == 2
        assert store.memory.append_messages("t", [_row("hello")]) == [0]
        store.runs.set_run_status("r1", "completed", finished_at=T0)
    assert _in_file(store, "SELECT count(*) FROM journal WHERE grp = 'r1:'") == [(0,)]
    assert _in_file(store, "SELECT count(*) FROM runs") == [(0,)]
    # this process sees them
    assert store.runs.get_run("r1").status == "completed"  # type: ignore[union-attr]
    assert store.runs.list("r1:") == [("r1:a", {"v": 1}), ("r1:b", 2)]
    assert store.runs.get("r1:b") == 2 and store.runs.get_many(["r1:a", "x"]) == {
        "r1:a": {"v": 1}}
    # first write wins against a waiting record and a waiting run
    with store.write_batch(durable=False):
        assert store.runs.put_many_if_absent([("r1:a", "other"), ("r1:c", 3)]) == 1
        assert not store.runs.start_run(_run("r1"))
    assert store.runs.get("r1:a") == {"v": 1}
    # a thread's messages: the file's and the waiting ones, nothing committed
    assert [m.content for m in store.memory.get_messages("t")] == ["hello"]
    assert [m.seq for m in store.memory.get_messages("t", from_seq=0, to_seq=0)] == [0]
    assert _in_file(store, "SELECT count(*) FROM runs") == [(0,)]
    store.memory.list_threads()  # a read of the file commits everything waiting first
    assert _in_file(store, "SELECT key FROM journal WHERE grp = 'r1:' ORDER BY pos") == [
        ("r1:a",), ("r1:b",), ("r1:c",)]
    assert _in_file(store, "SELECT status FROM runs WHERE run_id = 'r1'") == [("completed",)]


def test_a_stored_run_status_waits_too(store: DuckDBStorage) -> None:
    store.runs.start_run(_run("r1"))  # committed at once
    with store.write_batch(durable=False):
        store.runs.set_run_status("r1", "failed", finished_at=T0, error="boom")
    assert _in_file(store, "SELECT status FROM runs") == [("running",)]
    got = store.runs.get_run("r1")
    assert got is not None and (got.status, got.error) == ("failed", "boom")
    store.close()
    again = DuckDBStorage(store.path, read_only=True)
    try:
        got = again.runs.get_run("r1")
        assert got is not None and (got.status, got.error) == ("failed", "boom")
    finally:
        again.close()


def test_a_failed_group_keeps_none_of_itself_and_commits_the_ones_before(
        store: DuckDBStorage) -> None:
    with store.write_batch(durable=False):
        store.runs.start_run(_run("r1"))
        store.runs.put_if_absent("r1:a", 1)
        store.memory.append_messages("t", [_row("first")])
    with pytest.raises(NotFoundError, match="run 'nope' does not exist"), \
            store.write_batch(durable=False):
        store.runs.start_run(_run("r2"))
        store.runs.put_if_absent("r2:a", 1)
        store.memory.append_messages("t", [_row("second")])
        store.runs.set_run_status("nope", "completed")
    assert not store._duck.handle.waiting()
    assert _in_file(store, "SELECT run_id FROM runs") == [("r1",)]
    assert _in_file(store, "SELECT key FROM journal WHERE grp IN ('r1:', 'r2:')") == [
        ("r1:a",)]
    assert [m.content for m in store.memory.get_messages("t")] == ["first"]
    # the seqs the failed group took are given again
    assert store.memory.append_messages("t", [_row("third")]) == [1]


def test_a_group_that_needs_the_file_becomes_one_transaction(
        store: DuckDBStorage) -> None:
    store.memory.put_working_memory("k", {"v": 0})
    with store.write_batch(durable=False):
        store.runs.start_run(_run("r1"))
    with pytest.raises(RuntimeError, match="stop"), store.write_batch(durable=False):
        store.runs.put_if_absent("r2:a", 1)
        store.memory.put_working_memory("k", {"v": 1})  # needs the file: a transaction
        assert store.memory.get_working_memory("k") == {"v": 1}
        raise RuntimeError("stop")
    # the group is gone whole; the run before it is committed
    assert store.memory.get_working_memory("k") == {"v": 0}
    assert store.runs.get("r2:a") is None
    assert _in_file(store, "SELECT run_id FROM runs") == [("r1",)]
    with store.write_batch(durable=False):
        store.runs.put_if_absent("r3:a", 1)
        store.memory.put_working_memory("k", {"v": 3})
    assert _in_file(store, "SELECT count(*) FROM journal WHERE grp = 'r3:'") == [(1,)]
    assert store.memory.get_working_memory("k") == {"v": 3}


def test_groups_are_transactions_without_a_commit_delay(tmp_path: Path) -> None:
    s = DuckDBStorage(tmp_path / "d.duckdb", commit_delay=0)
    try:
        with s.write_batch(durable=False):
            s.runs.start_run(_run("r1"))
        assert not s._duck.handle.waiting()
        assert _in_file(s, "SELECT run_id FROM runs") == [("r1",)]
    finally:
        s.close()


def test_waiting_writes_are_committed_after_the_delay(tmp_path: Path) -> None:
    import time

    s = DuckDBStorage(tmp_path / "d.duckdb", commit_delay=0.05, linger=30)
    try:
        with s.write_batch(durable=False):
            s.runs.start_run(_run("r1"))
        deadline = time.monotonic() + 10
        while s._duck.handle.waiting() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _in_file(s, "SELECT run_id FROM runs") == [("r1",)]
    finally:
        s.close()


def test_a_bad_write_in_a_group_is_refused_before_it_waits(store: DuckDBStorage) -> None:
    with store.write_batch(durable=False):
        store.runs.put_if_absent("r1:a", 1)
    with pytest.raises(InvalidInputError, match="journal key must be a non-empty string"), \
            store.write_batch(durable=False):
        store.runs.put_if_absent("r2:a", 1)
        store.runs.put_if_absent("", 1)
    # the group before it is committed, nothing of the failed one is
    assert not store._duck.handle.waiting()
    assert store.runs.get("r1:a") == 1 and store.runs.get("r2:a") is None
    with pytest.raises(InvalidInputError, match="r3:a"), store.write_batch(durable=False):
        store.runs.put_if_absent("r3:a", object())  # not JSON: refused before it waits
    assert store.runs.get("r3:a") is None


def test_a_run_s_listing_says_whether_it_has_a_row(
        store: DuckDBStorage, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Runner looks at a run's records, then at its row: the listing of a run's
    group says in the same statement whether the run has a row, so a new run's row
    is not looked for again; a run stored since, or one that has a row, is found."""
    import memory_core.storage.duckdb as duck

    queries: list[str] = []
    query = duck._DuckTx.query

    def spy(self: object, sql: str, params: object = ()) -> object:
        queries.append(sql)
        return query(self, sql, params)  # type: ignore[arg-type]

    monkeypatch.setattr(duck._DuckTx, "query", spy)
    store.runs.start_run(_run("old"))
    store.runs.put_if_absent("old:a", 1)
    assert store.runs.list("new:") == [] and store.runs.get_run("new") is None
    assert store.runs.list("old:") == [("old:a", 1)]
    queries.clear()
    assert store.runs.get_run("new") is None and queries == []
    assert store.runs.get_run("old") is not None and len(queries) == 1
    store.runs.start_run(_run("new"))
    assert store.runs.get_run("new") is not None


def test_a_new_thread_or_a_working_memory_write_drops_only_what_it_changes(
        store: DuckDBStorage) -> None:
    """What the writer keeps of a thread (its counts, last rows, seqs) outlives a new
    thread (only the resource's thread lists go) and a working-memory write (only
    the kept values go); both change the store's change token (a recall checks its
    scope again), and the new thread is in the resource's scope."""
    store.memory.append_messages("t", [_row("one")])
    store.memory.count_messages("t")
    store.memory.scope_counts("t", "u")
    h = store._duck.handle
    assert "t" in h.tails and "t" in h.filed_counts and ("t", "u") in h.scopes
    token = store.memory.change_token()
    store.memory.create_thread("t2", resource_id="u")
    # the resource's scope goes; a scope of one thread alone stays (a new thread is not
    # one of its members), and the new thread's own is known (it has no rows)
    assert "t" in h.tails and "t" in h.filed_counts
    assert set(h.scopes) == {("t", None), ("t2", None)}
    store.memory.create_thread("t3", resource_id="u")
    assert store.memory.change_token() != token
    assert set(store.memory.scope_counts("t", "u")) == {"t", "t2", "t3"}
    store.memory.put_working_memory("k", 1)
    assert store.memory.get_working_memory("k") == 1 and "k" in h.wm
    token = store.memory.change_token()
    store.memory.put_working_memory("k", 2)
    assert "k" not in h.wm and store.memory.get_working_memory("k") == 2
    assert store.memory.change_token() != token
    assert "t" in h.tails and store.memory.count_messages("t") == 1


def test_a_new_thread_is_committed_without_what_waits(store: DuckDBStorage) -> None:
    """No waiting write touches a new thread's row: creating one commits that row alone
    (committing what waits costs a run ~5-10 ms, an agent starting threads paid it)."""
    store.memory.append_messages("t", [_row("one")])
    store.memory.create_thread("t2", resource_id="u")
    assert store._duck.handle.pending  # the append still waits
    assert _in_file(store, "SELECT id FROM threads WHERE id = 't2'") == [("t2",)]
    assert _in_file(store, "SELECT count(*) FROM messages") == [(0,)]
    assert store.memory.append_messages("t2", [_row("two")]) == [0]
    assert [m.content for m in store.memory.get_messages("t")] == ["one"]


def test_a_new_thread_s_tail_and_a_working_memory_read_commit_nothing(
        store: DuckDBStorage) -> None:
    """What a composition reads of a thread made here (its tail: empty, or what this
    process appended) and a working-memory value (no waiting write is one) are read
    without committing what waits."""
    store.memory.append_messages("t", [_row("one")])
    store.memory.create_thread("t2", resource_id="u")
    assert store.memory.get_tail("t2", 4) == []
    store.memory.append_messages("t2", [_row("two")])
    assert [m.content for m in store.memory.get_tail("t2", 4)] == ["two"]
    assert store.memory.get_working_memory("nope") is None
    assert store._duck.handle.pending
    assert _in_file(store, "SELECT count(*) FROM messages") == [(0,)]
