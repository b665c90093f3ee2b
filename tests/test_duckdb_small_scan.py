"""A live agent's recall refresh reads the few rows appended since the last recall.
On DuckDB an Arrow scan's set-up and its row count cost ~3-4 ms, more than the rows:
an incremental scan of at most ``_SMALL_SCAN`` rows is one plain query instead. It
must give exactly what the Arrow scan gives (every column, zones, message columns),
and hand a larger increment back to the Arrow scan."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory_core.storage import duckdb as duck
from memory_core.storage.base import ScopeRows
from memory_core.storage.duckdb import DuckDBStorage
from memory_core.types import AppendRow, Message


@pytest.fixture
def store(tmp_path: Path) -> Iterator[DuckDBStorage]:
    s = DuckDBStorage(tmp_path / "scan.duckdb")
    try:
        yield s
    finally:
        s.close()


def _fill(store: DuckDBStorage) -> dict[str, int]:
    """Two threads with a variety of rows; returns the seqs to scan after."""
    rng = np.random.default_rng(3)
    plus2 = timezone(timedelta(hours=2))
    for t in ("a", "b"):
        store.memory.create_thread(t, resource_id="u")
        store.memory.append_messages(t, [AppendRow(
            message=Message(content=f"old {t}"), embedding=rng.random(4, np.float32))])
    rows = [
        AppendRow(message=Message(content="Plain UTC", metadata={"k": 1}),
                  embedding=rng.random(4, np.float32)),
        AppendRow(message=Message(role="assistant", content="no vector"), run_id="run-1"),
        AppendRow(message=Message(content="Offset time"), created_at=datetime(
            2026, 1, 2, 3, 4, 5, 600, tzinfo=plus2), embedding=rng.random(4, np.float32)),
        AppendRow(message=Message(content="x" * 9000), embedding=rng.random(4, np.float32)),
    ]
    store.memory.append_messages("a", rows[:3])
    store.memory.append_messages("b", rows[3:])
    store.memory.list_threads()  # a read of the file: the appends are committed first
    # as rows another process wrote: the writer does not keep them (a thread made here
    # is read from what it keeps, see the last test)
    store._duck.handle.forget()
    return {"a": 0, "b": 0}


def _scan(store: DuckDBStorage, after: dict[str, int], **kw: Any) -> ScopeRows:
    return store.memory.scope_rows(["a", "b"], after_seq=after, vectors=True, texts=True,
                                   metadata=True, **kw)


def _same(x: ScopeRows, y: ScopeRows) -> None:
    order_x, order_y = np.lexsort((x.seqs, x.tidx)), np.lexsort((y.seqs, y.tidx))
    assert x.threads == y.threads
    for f in ("tidx", "seqs", "created_us", "has_vec", "matrix", "locators"):
        assert np.array_equal(getattr(x, f)[order_x], getattr(y, f)[order_y]), f
    assert [x.zone_names[z] if z >= 0 else z for z in x.zones[order_x]] == \
        [y.zone_names[z] if z >= 0 else z for z in y.zones[order_y]]  # type: ignore[index]
    assert [x.text_list()[i] for i in order_x] == [y.text_list()[i] for i in order_y]
    assert [x.metadata[i] for i in order_x] == [y.metadata[i] for i in order_y]  # type: ignore[index]
    if x.messages is None or y.messages is None:
        assert x.messages is None and y.messages is None
    else:
        assert [x.messages.row(int(i)) for i in order_x] == \
            [y.messages.row(int(i)) for i in order_y]


@pytest.mark.parametrize("share", [0.0, 0.25])
def test_a_small_increment_reads_what_the_arrow_scan_reads(
        store: DuckDBStorage, monkeypatch: pytest.MonkeyPatch, share: float) -> None:
    after = _fill(store)
    arrow_scans: list[str] = []
    real = duck.Conn.sql

    class Spy:
        """The connection's Arrow scans (``sql``) counted, the rest passed through."""

        def __init__(self, conn: Any) -> None:
            self.conn = conn

        def sql(self, *a: Any, **k: Any) -> Any:
            arrow_scans.append(a[0])
            return real(self.conn, *a, **k)

        def __getattr__(self, name: str) -> Any:
            return getattr(self.conn, name)

    fill = duck._DuckDriver.scan_scope

    def spied(self: Any, tx: Any, scan: Any) -> Any:
        return fill(self, duck._DuckTx(Spy(tx.conn)), scan)  # type: ignore[arg-type]

    monkeypatch.setattr(duck._DuckDriver, "scan_scope", spied)
    small = _scan(store, after, message_share=share)
    assert len(small) == 4 and arrow_scans == []
    monkeypatch.setattr(duck, "_SMALL_SCAN", 0)  # every scan the Arrow way
    big = _scan(store, after, message_share=share)
    assert len(arrow_scans) == 1
    _same(small, big)
    assert (small.messages is not None) == bool(share)


def test_a_larger_increment_is_scanned_the_arrow_way(
        store: DuckDBStorage, monkeypatch: pytest.MonkeyPatch) -> None:
    after = _fill(store)
    monkeypatch.setattr(duck, "_SMALL_SCAN", 3)  # four new rows: one too many
    got = _scan(store, after)
    monkeypatch.setattr(duck, "_SMALL_SCAN", 0)
    _same(got, _scan(store, after))
    assert sorted(got.seqs.tolist()) == [1, 1, 2, 3]


def test_an_empty_increment_and_a_whole_scope(store: DuckDBStorage) -> None:
    after = _fill(store)
    none = _scan(store, {"a": 3, "b": 1})
    assert len(none) == 0 and none.matrix is not None and none.matrix.shape == (0, 4)
    assert len(_scan(store, {})) == 6  # a whole scope is never the small way's
    assert len(_scan(store, after)) == 4


@pytest.mark.parametrize("share", [0.0, 0.25])
def test_rows_a_writer_keeps_read_as_the_file_scan_reads_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, share: float) -> None:
    """A live agent's recall looks at the rows of its last runs: waiting to be
    committed, or committed lately by this process. They are built from memory,
    without a read of the file and without committing what waits, exactly as a
    scan of the file gives them (but for their locators: -1, a read by ref); the
    scope's counts add the waiting rows; a hit among them is read from memory."""
    s = DuckDBStorage(tmp_path / "kept.duckdb", commit_delay=60)
    try:
        _fill(s)  # committed
        after = {"a": 3, "b": 1}  # the last seqs of the file
        for t in ("a", "b"):
            s.memory.scope_counts(t, "u")  # what the file holds, noted by the writer
        rng = np.random.default_rng(5)
        s.memory.append_messages("a", [AppendRow(
            message=Message(content="Kept one", metadata={"w": 1}),
            embedding=rng.random(4, np.float32)), AppendRow(
            message=Message(content="y" * 9000), embedding=rng.random(4, np.float32),
            created_at=datetime(2026, 5, 6, 7, 8, 9, tzinfo=timezone(timedelta(hours=-3))))])
        s.memory.append_messages("b", [AppendRow(
            message=Message(role="assistant", content="kept, no vector"), run_id="r")])
        s.memory.list_threads()  # committed: kept by the writer as its last rows
        s.memory.append_messages("a", [AppendRow(
            message=Message(content="Waiting"), embedding=rng.random(4, np.float32))])
        h = s._duck.handle
        assert h.pending
        counts = s.memory.scope_counts("a", "u")

        def no_scan(*a: Any, **k: Any) -> Any:
            raise AssertionError("the file was scanned")

        monkeypatch.setattr(duck._DuckDriver, "scan_scope", no_scan)
        kept = _scan(s, after, message_share=share)
        refs = [(kept.threads[int(i)], int(q)) for i, q in zip(kept.tidx, kept.seqs,
                                                               strict=True)]
        located = s.memory.get_messages_located(refs, [-1] * len(refs))
        later = s.memory.get_messages("a", from_seq=4)  # kept rows: no read of the file
        assert h.pending  # nothing committed by any of these reads
        assert kept.locators is not None and set(kept.locators.tolist()) == {-1}
        monkeypatch.undo()
        s.memory.list_threads()  # commits what waits
        assert s.memory.scope_counts("a", "u") == counts
        h.forget()  # what the writer keeps, dropped: the next scan reads the file
        filed = _scan(s, after, message_share=share)
        assert len(kept) == len(filed) == 4
        # the locators are the only column that differs (the file's rowids, or -1)
        assert filed.locators is not None and filed.locators.min() >= 0
        _same(kept, replace(filed, locators=np.full(len(filed), -1, np.int64)))
        assert located == s.memory.get_messages_by_refs(refs)
        assert [m.seq for m in later] == [4, 5, 6]
        assert later == s.memory.get_messages("a", from_seq=4)
    finally:
        s.close()


def test_a_thread_made_here_is_read_whole_from_what_the_writer_keeps(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A thread this process created has no rows in the file but the ones it committed
    since: a recall's first look at it (the whole thread, after seq -1) is built from
    memory, without scanning the file or committing what waits, and equals the scan.
    A thread made elsewhere (here: forgotten) is scanned."""
    s = DuckDBStorage(tmp_path / "made.duckdb", commit_delay=60)
    try:
        s.memory.create_thread("n", resource_id="u")
        rng = np.random.default_rng(9)
        for i in range(3):
            s.memory.append_messages("n", [AppendRow(
                message=Message(content=f"turn {i}"), embedding=rng.random(4, np.float32))])
            s.memory.list_threads()  # committed, one at a time
        s.memory.append_messages("n", [AppendRow(
            message=Message(content="waiting"), embedding=rng.random(4, np.float32))])
        h = s._duck.handle
        scanned: list[int] = []
        real = duck._DuckDriver.scan_scope

        def counted(self: Any, tx: Any, scan: Any) -> Any:
            scanned.append(1)
            return real(self, tx, scan)

        monkeypatch.setattr(duck._DuckDriver, "scan_scope", counted)
        whole = s.memory.scope_rows(["n"], after_seq={"n": -1}, texts=True,
                                  metadata=True)
        assert not scanned and h.pending  # from memory; the last append still waits
        assert sorted(whole.seqs.tolist()) == [0, 1, 2, 3]
        s.memory.list_threads()
        h.forget()  # as if made by another process: the file is scanned
        filed = s.memory.scope_rows(["n"], after_seq={"n": -1}, texts=True,
                                  metadata=True)
        assert scanned
        _same(whole, replace(filed, locators=np.full(len(filed), -1, np.int64)))
    finally:
        s.close()


@pytest.mark.parametrize("redacted", [False, True])
def test_a_thread_made_here_has_its_counts_known(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, redacted: bool) -> None:
    """A new thread's own scope (a thread-scope recall's check) is known as the file
    has it — no rows, its creation time, the store's count of rewrites — without a read
    of the file, and stays true as its rows are committed."""
    s = DuckDBStorage(tmp_path / "counts.duckdb", commit_delay=60)
    try:
        if redacted:  # the store's rewrite count is not 0
            s.memory.create_thread("old", resource_id="u")
            s.memory.append_messages("old", [AppendRow(message=Message(content="secret"))])
            s.memory.redact_message("old", 0, Message(content="gone"))
        s.memory.create_thread("n", resource_id="u")
        s.memory.append_messages("n", [AppendRow(message=Message(content="one"))])
        s.memory.list_threads()  # committed
        s.memory.append_messages("n", [AppendRow(message=Message(content="two"))])

        def no_read(*a: Any, **k: Any) -> Any:
            raise AssertionError("the file was read")

        with monkeypatch.context() as m:
            m.setattr(duck.SqlMemoryStore, "scope_counts", no_read)
            known = s.memory.scope_counts("n")
        s.memory.list_threads()
        s._duck.handle.forget()
        assert known == s.memory.scope_counts("n")
        assert (known["n"].message_count, known["n"].max_seq) == (2, 1)
        assert known["n"].edits == (1 if redacted else 0)
    finally:
        s.close()
