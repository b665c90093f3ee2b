"""DuckDB: the keeper commits what waits on a connection of its own, without the lock,
and a live agent goes on meanwhile. While that commit is in flight this process
counts its writes as waiting: reads answered from memory and reads of journal keys
and runs (which may or may not find the in-flight rows in the file) give what they
would give after it; a deferred group stays in memory beside it; anything that needs
the file as it will be (a write, a group turned transaction) waits for it. Each read
here runs while the keeper is held inside its commit: one that waited for the commit
would not finish."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import memory_core.storage.duckdb as duck
from memory_core.errors import StorageError
from memory_core.storage.duckdb import DuckDBStorage
from tests.test_duckdb_deferred_groups import T0, _row, _run


def _keeper() -> bool:
    return threading.current_thread().name.startswith("duckdb-linger")


class HeldKeeper:
    """The keeper's commit held until ``release``: inside its transaction (its rows
    written, not committed), or ``committed`` (in the file, not yet taken as filed by
    this process: a read of the file finds them, and they are still in flight);
    ``fail`` makes it fail instead."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, committed: bool = False) -> None:
        self.inside = threading.Event()
        self.go = threading.Event()
        self.fail = False
        real = duck._Handle.write_waiting

        def hold() -> None:
            self.inside.set()
            self.go.wait(30)

        def held(conn: Any, *a: Any) -> None:
            real(conn, *a)
            if _keeper() and not committed:
                hold()
                if self.fail:
                    raise duck.duckdb.Error("the disk is full")
        monkeypatch.setattr(duck._Handle, "write_waiting", staticmethod(held))
        if committed:  # held where a bulk commit restores the checkpoint size
            monkeypatch.setattr(duck, "_BULK_ROWS", 1)
            restore = duck._restore_checkpoint

            def after_commit(conn: Any) -> None:
                restore(conn)
                if _keeper():
                    hold()
            monkeypatch.setattr(duck, "_restore_checkpoint", after_commit)

    def start(self, store: DuckDBStorage) -> None:
        """Have the keeper commit what waits now, and wait until it is in flight."""
        h = store._duck.handle
        with h.lock:
            h.pending_since = -1e9
            h.wake.notify_all()
        assert self.inside.wait(10), "the keeper did not start its commit"
        assert h.flushing

    def release(self, store: DuckDBStorage) -> None:
        self.go.set()
        h = store._duck.handle
        with h.lock:
            h.settle()


def _beside(fn: Callable[[], Any]) -> Any:
    """fn's result, run in a thread of its own; fails if it waits for the keeper."""
    out: list[Any] = []
    errors: list[BaseException] = []

    def go() -> None:
        try:
            out.append(fn())
        except BaseException as e:  # noqa: BLE001 - handed to the test
            errors.append(e)
    t = threading.Thread(target=go)
    t.start()
    t.join(10)
    assert not t.is_alive(), "it waited for the keeper's commit in flight"
    if errors:
        raise errors[0]
    return out[0]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[DuckDBStorage]:
    s = DuckDBStorage(tmp_path / "f.duckdb", commit_delay=60)  # the test says when
    s.memory.create_thread("t", resource_id="u")
    s.memory.append_messages("t", [_row("filed 0"), _row("filed 1")])
    s.memory.scope_counts("t", "u")
    s.memory.list_threads()  # committed; the writer keeps the file's counts
    assert s.memory.count_messages("t") == 2  # ... and the thread's
    yield s
    s.close()


def _in_flight(store: DuckDBStorage, keeper: HeldKeeper) -> None:
    """A run's group and an append waiting, then in flight."""
    with store.write_batch(durable=False):
        assert store.runs.start_run(_run("r1"))
        store.runs.put_many_if_absent([("r1:a", {"v": 1}), ("r1:b", 2)])
        store.memory.append_messages("t", [_row("in flight")])
        store.runs.set_run_status("r1", "completed", finished_at=T0)
    keeper.start(store)
    assert store._duck.handle.inflight and not store._duck.handle.pending


@pytest.mark.parametrize("committed", [False, True], ids=["in its transaction",
                                                       "committed, still in flight"])
def test_reads_beside_a_commit_in_flight_count_its_writes(
        store: DuckDBStorage, monkeypatch: pytest.MonkeyPatch, committed: bool) -> None:
    keeper = HeldKeeper(monkeypatch, committed)
    _in_flight(store, keeper)
    m, r = store.memory, store.runs
    h = store._duck.handle
    try:
        # the file has the rows in flight or not yet, as the case says
        assert h.idle is not None
        assert h.idle.execute("SELECT count(*) FROM journal").fetchall() == \
            [(2 if committed else 0,)]
        assert _beside(lambda: r.list("r1:")) == [("r1:a", {"v": 1}), ("r1:b", 2)]
        assert _beside(lambda: r.get_many(["r1:a", "r1:b", "r1:c"])) == \
            {"r1:a": {"v": 1}, "r1:b": 2}
        assert _beside(lambda: r.get_run("r1")).status == "completed"
        counts = _beside(lambda: m.scope_counts("t", "u"))
        assert (counts["t"].message_count, counts["t"].max_seq) == (3, 2)
        assert _beside(lambda: m.count_messages("t")) == 3
        assert [x.text() for x in _beside(lambda: m.get_messages("t", from_seq=1))] == \
            ["filed 1", "in flight"]
        rows = _beside(lambda: m.scope_rows(["t"], after_seq={"t": 0}))
        assert sorted(rows.seqs.tolist()) == [1, 2]
        assert _beside(m.embedding_dim) == 4
        # a deferred group goes on beside it, and waits after it

        def group() -> None:
            with store.write_batch(durable=False):
                assert r.start_run(_run("r2"))
                assert m.append_messages("t", [_row("next")]) == [3]
        _beside(group)
        assert store._duck.handle.pending and store._duck.handle.later
    finally:
        keeper.release(store)
    # after it, the same answers from the file and what waits
    assert r.list("r1:") == [("r1:a", {"v": 1}), ("r1:b", 2)]
    assert r.get_run("r1").status == "completed"  # type: ignore[union-attr]
    assert r.get_run("r2") is not None
    counts = m.scope_counts("t", "u")
    assert (counts["t"].message_count, counts["t"].max_seq) == (4, 3)
    m.list_threads()  # commits what waits
    assert [x.text() for x in m.get_messages("t")] == \
        ["filed 0", "filed 1", "in flight", "next"]
    assert m.thread_stats(["t"])["t"] == (4, 3)


def test_a_run_read_as_missing_beside_its_commit_is_not_taken_for_absent(
        store: DuckDBStorage, monkeypatch: pytest.MonkeyPatch) -> None:
    """The listing of a run's group says whether the run has a row; beside the commit
    of that row, the file may not have it yet: the run is not noted as absent."""
    keeper = HeldKeeper(monkeypatch)
    _in_flight(store, keeper)
    try:
        assert _beside(lambda: store.runs.list("r1:")) != []
    finally:
        keeper.release(store)
    assert store.runs.get_run("r1") is not None
    assert "r1" not in store._duck.handle.no_run


def test_what_needs_the_file_waits_for_the_commit_in_flight(
        store: DuckDBStorage, monkeypatch: pytest.MonkeyPatch) -> None:
    keeper = HeldKeeper(monkeypatch)
    _in_flight(store, keeper)
    done = threading.Event()

    def write() -> None:
        store.memory.create_thread("t2", resource_id="u")
        done.set()
    t = threading.Thread(target=write)
    t.start()
    assert not done.wait(0.3)  # a write waits for the commit in flight
    keeper.release(store)
    t.join(10)
    assert done.is_set()
    assert store.memory.get_thread("t2") is not None


def test_a_failed_commit_in_flight_fails_the_group_that_waits_for_it(
        store: DuckDBStorage, monkeypatch: pytest.MonkeyPatch) -> None:
    """A group begun beside the keeper's commit, that then needs the file, waits for
    the commit; when it failed the group fails with its error and nothing of either
    is stored; the store goes on."""
    keeper = HeldKeeper(monkeypatch)
    keeper.fail = True
    _in_flight(store, keeper)
    h = store._duck.handle
    errors: list[BaseException] = []

    def group() -> None:
        try:
            store.memory.append_messages("t", [_row("lost with the commit")])
            with store.write_batch(durable=False):
                store.runs.start_run(_run("r2"))
                store.memory.append_messages("t", [_row("lost too")])
                store.memory.list_threads()  # needs the file: the group's transaction
        except StorageError as e:
            errors.append(e)
    t = threading.Thread(target=group)
    t.start()
    keeper.inside.clear()
    keeper.go.set()
    t.join(10)
    assert not t.is_alive()
    assert errors and "the disk is full" in str(errors[0])
    with h.lock:
        h.settle()
        # nothing waits, nor is counted as waiting
        assert not h.waiting() and (h.pending_rows, h.pending_dim) == (0, None)
    keeper.fail = False
    assert store.runs.get_run("r1") is None and store.runs.get_run("r2") is None
    assert [x.text() for x in store.memory.get_messages("t")] == ["filed 0", "filed 1"]
    assert store.memory.append_messages("t", [_row("again")]) == [2]
    store.memory.list_threads()
    assert store.memory.thread_stats(["t"])["t"] == (3, 2)


# -- reviewed: a wait for the commit in flight inside an operation -------------------
class Waits:
    """Set when an operation (not the keeper) starts waiting for the keeper's commit
    in flight: it lets the lock go until the commit is done."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.waiting = threading.Event()
        real = duck._Handle.settle

        def settle(h: Any) -> None:
            if h.flushing and not _keeper():
                self.waiting.set()
            real(h)
        monkeypatch.setattr(duck._Handle, "settle", settle)


def test_the_keeper_leaves_a_group_begun_beside_its_commit_alone(
        store: DuckDBStorage, monkeypatch: pytest.MonkeyPatch) -> None:
    """The keeper's look finds its commit due and the lingering connection idle past
    its linger at once (commit_delay equal to linger, or the keeper held up): a
    deferred group begun beside that commit, whose first write waits for it, keeps
    its connection — the keeper, back from the commit, does not close it (nor commit
    what waits) while the group is open."""
    keeper = HeldKeeper(monkeypatch)
    waits = Waits(monkeypatch)
    store.memory.create_thread("t2", resource_id="u")  # its first append reads the file
    store.memory.append_messages("t", [_row("in flight")])
    h = store._duck.handle
    with h.lock:
        h.last_used = -1e9  # idle past its linger when the keeper looks
    keeper.start(store)
    errors: list[BaseException] = []

    def group() -> None:
        try:
            with store.write_batch(durable=False):
                assert store.memory.append_messages("t2", [_row("first")]) == [0]
                assert store.runs.start_run(_run("r2"))
                store.memory.list_threads()  # needs the file: the group's transaction
        except BaseException as e:  # noqa: BLE001 - handed to the test
            errors.append(e)
    t = threading.Thread(target=group)
    t.start()
    assert waits.waiting.wait(10)
    keeper.go.set()
    t.join(10)
    assert not t.is_alive() and not errors, errors
    assert store.runs.get_run("r2") is not None
    assert [x.text() for x in store.memory.get_messages("t2")] == ["first"]
    assert [x.text() for x in store.memory.get_messages("t")][-1] == "in flight"


def test_a_read_waiting_for_the_commit_leaves_other_threads_reads_whole(
        store: DuckDBStorage, monkeypatch: pytest.MonkeyPatch) -> None:
    """A read that adds what waits itself and then waits for the keeper's commit (a
    read of the file) lets the lock go: another thread's read meanwhile still adds
    what waits (the first one's ``reading_past_waits`` is its own)."""
    keeper = HeldKeeper(monkeypatch)
    waits = Waits(monkeypatch)
    store.memory.create_thread("t3", resource_id="u")
    store.memory.append_messages("t3", [_row("one")])
    _in_flight(store, keeper)
    t = threading.Thread(target=lambda: store.memory.get_thread("nowhere"))
    t.start()
    try:
        assert waits.waiting.wait(10)
        counts = store.memory.scope_counts("t3")
        assert (counts["t3"].message_count, counts["t3"].max_seq) == (1, 0)
    finally:
        keeper.go.set()
        t.join(10)
    store.memory.list_threads()
    assert store.memory.count_messages("t3") == 1


def test_another_threads_write_stays_out_of_a_group_waiting_for_the_commit(
        store: DuckDBStorage, monkeypatch: pytest.MonkeyPatch) -> None:
    """A deferred group begun beside the keeper's commit lets the lock go while one of
    its writes waits for that commit: another thread's write meanwhile is its own (it
    waits for the group), not one of the group's, undone when the group fails."""
    keeper = HeldKeeper(monkeypatch)
    waits = Waits(monkeypatch)
    store.memory.create_thread("t2", resource_id="u")  # its first append reads the file
    _in_flight(store, keeper)
    errors: list[BaseException] = []

    def group() -> None:
        try:
            with store.write_batch(durable=False):
                assert store.runs.start_run(_run("r2"))
                store.memory.append_messages("t2", [_row("waits for the commit")])
                raise ValueError("the run fails")
        except BaseException as e:  # noqa: BLE001 - handed to the test
            errors.append(e)
    t = threading.Thread(target=group)
    t.start()
    assert waits.waiting.wait(10)
    put: list[bool] = []
    other = threading.Thread(target=lambda: put.append(store.runs.put_if_absent("b:1", 1)))
    other.start()
    other.join(0.3)  # (it may finish now, inside the group, or wait for it)
    keeper.go.set()
    t.join(10)
    other.join(10)
    assert not t.is_alive() and not other.is_alive()
    assert [type(e) for e in errors] == [ValueError] and put == [True]
    assert store.runs.get("b:1") == 1
    assert store.runs.get_run("r2") is None
    store.memory.list_threads()
    assert store.runs.get("b:1") == 1
    assert store.memory.get_messages("t2") == []


def test_an_agent_beside_a_keeper_committing_all_the_time_stores_what_one_alone_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The benchmark's Runner build (tools, working memory, recall, several threads)
    with the keeper committing every millisecond beside it, against the same build with
    every group a transaction of its own: the same messages, runs and journal keys."""
    from bench.runs_db import build_runs_db

    real = DuckDBStorage.__init__

    def built(name: str, delay: float) -> duck.duckdb.DuckDBPyConnection:
        def init(self: DuckDBStorage, *a: Any, **k: Any) -> None:
            k.setdefault("commit_delay", delay)
            real(self, *a, **k)
        monkeypatch.setattr(DuckDBStorage, "__init__", init)
        path = tmp_path / f"{name}.duckdb"
        build_runs_db(path, 120)
        monkeypatch.setattr(DuckDBStorage, "__init__", real)
        return duck.duckdb.connect(str(path), read_only=True)

    busy, alone = built("busy", 0.001), built("alone", 0.0)
    for sql in ("SELECT thread_id, seq, body, run_id FROM messages ORDER BY 1, 2",
                "SELECT run_id, thread_id, status FROM runs ORDER BY 1",
                "SELECT key FROM journal ORDER BY 1",
                "SELECT id, message_count, max_seq FROM threads ORDER BY 1"):
        assert busy.execute(sql).fetchall() == alone.execute(sql).fetchall(), sql
    assert busy.execute("SELECT count(*) FROM runs").fetchall() == [(120,)]
    busy.close()
    alone.close()
