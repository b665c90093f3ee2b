"""Batch ingest on DuckDB: a large append goes in as one Arrow ``INSERT … SELECT``, a
few rows as bound parameters; either way (and inside a ``write_batch``) the file holds
exactly the bytes row-by-row appends store, the values SQLite stores, and vectors stored
uncompressed; bad input still fails whole. Checked in the file itself, through a
separate read-only connection once the storage is closed."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from contextlib import nullcontext
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pytest

from memory_core.errors import InvalidInputError
from memory_core.lifecycle.erasure import erase_thread
from memory_core.storage.base import NewThread
from memory_core.storage.duckdb import DuckDBStorage
from memory_core.storage.sqlite import SQLiteStorage
from memory_core.types import AppendRow, Message, TextPart, ToolCallPart, ToolResultPart

DIM = 8


def ticking() -> Iterator[datetime]:
    start = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    return (start + timedelta(microseconds=7 * i) for i in itertools.count())


def varied_rows(n: int) -> list[AppendRow]:
    """Plain text, empty text, escapes and non-ASCII, parts, metadata, given times with
    offsets, run ids, rows with and without vectors."""
    vecs = np.random.default_rng(1).standard_normal((n, DIM), dtype=np.float32)
    out = []
    for i in range(n):
        kind = i % 6
        if kind == 0:
            m = Message(role="user", content=f"Plain {i} \"quoted\" \\ back\nline\t\x01 é ✓")
        elif kind == 1:
            m = Message(role="assistant", content="")
        elif kind == 2:
            m = Message(role="assistant", content=[
                TextPart(text=f"Calling {i}"),
                ToolCallPart(id=f"c{i}", name="lookup", args={"q": i, "ok": True})])
        elif kind == 3:
            m = Message(role="tool", content=[
                ToolResultPart(call_id=f"c{i}", name="lookup", result=[1, 2.5, None])])
        elif kind == 4:
            m = Message(role="user", content=f"ΣΑΣ İstanbul {i}", metadata={"b": 1, "a": [i]})
        else:
            m = Message(role="system", content=f"sys {i}")
        out.append(AppendRow(
            message=m,
            created_at=(datetime(2025, 5, 6, 7, 8, 9, i, tzinfo=timezone(timedelta(hours=5)))
                        if i % 4 == 1 else None),
            run_id=f"run-{i % 3}" if i % 5 else None,
            embedding=None if i % 7 == 3 else vecs[i]))
    return out


def stored(db: Path) -> list[tuple[Any, ...]]:
    conn = duckdb.connect(str(db), read_only=True)
    try:
        return conn.execute("SELECT thread_id, seq, resource_id, body, text_lower, created_at,"
                            " created_us, run_id, embedding FROM messages"
                            " ORDER BY thread_id, seq").fetchall()
    finally:
        conn.close()


def fill(storage: Any, rows: list[AppendRow], size: int, batch: bool = False) -> None:
    """Append ``rows`` in appends of ``size`` rows, all in one ``write_batch`` if
    ``batch``, each committed on its own if not; then close the storage."""
    storage.memory.create_thread("t1", resource_id="r1")
    with storage.session(), storage.write_batch() if batch else nullcontext():
        for lo in range(0, len(rows), size):
            storage.memory.append_messages("t1", rows[lo:lo + size])
    storage.close()


@pytest.mark.parametrize("size, batch", [(60, False), (2, False), (8, False), (9, False),
                                         (20, True), (1, True)])
def test_a_batch_stores_the_same_bytes_as_row_by_row_appends(
        tmp_path: Path, size: int, batch: bool) -> None:
    """Appends of a few rows (bound parameters) and of many (one Arrow table), each
    committed alone or all in one write_batch, store what one-row appends store."""
    rows = varied_rows(60)
    at = next(ticking())  # (the rows of one append that bring no time share one)
    fill(DuckDBStorage(tmp_path / "batch.duckdb", clock=lambda: at), rows, size, batch)
    # one row an append, each committed on its own
    fill(DuckDBStorage(tmp_path / "single.duckdb", clock=lambda: at), rows, 1)
    got, single = stored(tmp_path / "batch.duckdb"), stored(tmp_path / "single.duckdb")
    assert len(got) == 60
    assert got == single
    # and read back through the port as they were given
    s = DuckDBStorage(tmp_path / "batch.duckdb", read_only=True)
    back = s.memory.get_messages("t1")
    s.close()
    assert [m.as_message() for m in back] == [r.message for r in rows]


@pytest.mark.parametrize("kind", ["duckdb", "sqlite", "inmemory"])
@pytest.mark.parametrize("n", [3, 40])  # bound rows, one Arrow table
def test_the_rows_of_one_append_without_a_time_share_one_read_of_the_clock(
        tmp_path: Path, kind: str, n: int) -> None:
    from memory_core.storage.inmemory import InMemoryStorage

    clock = ticking()
    s = {"duckdb": lambda: DuckDBStorage(tmp_path / "c.duckdb", clock=lambda: next(clock)),
         "sqlite": lambda: SQLiteStorage(tmp_path / "c.sqlite", clock=lambda: next(clock)),
         "inmemory": lambda: InMemoryStorage(clock=lambda: next(clock))}[kind]()
    s.memory.create_thread("t1")
    given = datetime(2020, 5, 6, 7, 8, 9, tzinfo=UTC)
    first = [AppendRow(message=Message(role="user", content=f"m{i}"),
                       created_at=given if i == 1 else None) for i in range(n)]
    s.memory.append_messages("t1", first)
    s.memory.append_messages("t1", [AppendRow(message=Message(role="user", content="later"))])
    times = [m.created_at for m in s.memory.get_messages("t1")]
    s.close()
    assert times[1] == given
    shared = {t for i, t in enumerate(times[:n]) if i != 1}
    assert len(shared) == 1 and times[n] > shared.pop()


def test_duckdb_and_sqlite_store_the_same_row_values(tmp_path: Path) -> None:
    """The generic (bound rows) path of the other engines stores what DuckDB's Arrow
    path stores: same body, lowered text, times, run ids and float32 vectors."""
    rows = varied_rows(30)
    clock = ticking()
    fill(DuckDBStorage(tmp_path / "d.duckdb", clock=lambda: next(clock)), rows, 30)
    clock = ticking()
    fill(SQLiteStorage(tmp_path / "s.sqlite", clock=lambda: next(clock)), rows, 30)
    import sqlite3

    conn = sqlite3.connect(tmp_path / "s.sqlite")
    lite = conn.execute("SELECT thread_id, seq, resource_id, body, text_lower, created_at,"
                        " created_us, run_id, embedding FROM messages"
                        " ORDER BY thread_id, seq").fetchall()
    conn.close()
    ours = stored(tmp_path / "d.duckdb")
    assert [r[:8] for r in lite] == [r[:8] for r in ours]
    assert [None if r[8] is None else np.frombuffer(r[8], np.float32).tolist() for r in lite] \
        == [None if r[8] is None else np.asarray(r[8], np.float32).tolist() for r in ours]
    # the expected values, spelled out for two rows
    first = ours[0]
    assert first[3] == ('{"content":"Plain 0 \\"quoted\\" \\\\ back\\nline\\t\\u0001 é ✓",'
                        '"metadata":{},"role":"user"}')
    assert first[4] == "plain 0 \"quoted\" \\ back\nline\t\x01 é ✓"
    assert ours[1][4] is None  # empty content has no text
    assert ours[4][4] == "ΣΑΣ İstanbul 4".lower()


@pytest.mark.parametrize("batch", [False, True])
def test_appends_with_and_without_vectors_store_each_rows_vector(tmp_path: Path,
                                                                 batch: bool) -> None:
    db = tmp_path / "mixed.duckdb"
    s = DuckDBStorage(db)
    s.memory.create_thread("t1")
    vecs = np.random.default_rng(3).standard_normal((100, DIM), np.float32)
    with s.write_batch() if batch else nullcontext():
        s.memory.append_messages("t1", [AppendRow(message=Message(content=f"p{i}"))
                                        for i in range(100)])
        s.memory.append_messages("t1", [AppendRow(message=Message(content=f"v{i}"),
                                                  embedding=vecs[i]) for i in range(100)])
        for i in range(3):
            s.memory.append_messages("t1", [AppendRow(message=Message(content=f"s{i}"),
                                                      embedding=vecs[i])])
    assert s.memory.count_messages("t1") == 203
    s.close()
    got = stored(db)
    assert [r[1] for r in got] == list(range(203))
    assert [r[8] for r in got[:100]] == [None] * 100
    assert np.array_equal(np.asarray([r[8] for r in got[100:200]], np.float32), vecs)
    assert np.array_equal(np.asarray([r[8] for r in got[200:]], np.float32), vecs[:3])


@pytest.mark.parametrize("bad, named", [
    (AppendRow(message=Message(content="x", metadata={"v": math.nan})), "row 3000"),
    (AppendRow(message=Message(content="x"), created_at=datetime(2026, 1, 1)), "row 3000"),
    (AppendRow(message=Message(content="x"), embedding=np.ones(DIM + 1, np.float32)),
     "row 3000: embedding has dimension 9"),
])
def test_a_bad_row_in_a_large_batch_writes_nothing(tmp_path: Path, bad: AppendRow,
                                                   named: str) -> None:
    s = DuckDBStorage(tmp_path / "bad.duckdb")
    s.memory.create_thread("t1")
    rows = [AppendRow(message=Message(content=f"m{i}"), embedding=np.ones(DIM, np.float32))
            for i in range(5000)]
    rows[3000] = bad
    with pytest.raises(InvalidInputError, match=named):
        s.memory.append_messages("t1", rows)
    assert s.memory.count_messages("t1") == 0
    assert s.memory.append_messages("t1", rows[:2]) == [0, 1]
    s.close()
    assert len(stored(tmp_path / "bad.duckdb")) == 2


def _compressions(db: Path) -> set[str]:
    conn = duckdb.connect(str(db), read_only=True)
    try:
        return {r[0] for r in conn.execute(
            "SELECT DISTINCT compression FROM pragma_storage_info('messages')"
            " WHERE column_name = 'embedding' AND segment_type = 'FLOAT'").fetchall()}
    finally:
        conn.close()


def test_vectors_are_stored_uncompressed_also_after_an_erasure(tmp_path: Path) -> None:
    """A checkpoint compressing the floats was half of DuckDB's cost of a batch; the
    column is declared uncompressed, and the rewrite after an erasure keeps that."""
    db = tmp_path / "unc.duckdb"
    s = DuckDBStorage(db)
    rows = [AppendRow(message=Message(content=f"m{i}"),
                      embedding=np.full(DIM, i / 7, np.float32)) for i in range(3000)]
    for tid in ("t1", "t2"):
        s.memory.create_thread(tid)
        s.memory.append_messages(tid, rows)
    s.close()
    assert _compressions(db) == {"Uncompressed"}
    s = DuckDBStorage(db)
    erase_thread(s, "t2")
    assert s.memory.get_messages("t1", seqs=[2999])[0].seq == 2999
    s.close()
    assert _compressions(db) == {"Uncompressed"}
    assert len(stored(db)) == 3000
    assert stored(db)[7][8] == [np.float32(1.0)] * DIM


@pytest.mark.parametrize("size", [1, 20])
@pytest.mark.parametrize("adapter", ["duckdb", "sqlite"])
def test_text_that_is_not_valid_unicode_is_refused_naming_its_row(
        tmp_path: Path, size: int, adapter: str) -> None:
    """A lone surrogate cannot be stored as UTF-8: the append fails at once, naming the
    row, nothing is written, and the store goes on working (it was accepted and then
    failed the commit, leaving DuckDB's connection inside a transaction)."""
    s: Any = DuckDBStorage(tmp_path / "u.duckdb") if adapter == "duckdb" \
        else SQLiteStorage(tmp_path / "u.sqlite")
    s.memory.create_thread("t1")
    rows = [AppendRow(message=Message(content=f"m{i}")) for i in range(size)]
    rows[-1] = AppendRow(message=Message(content="bad \ud800 text"))
    with pytest.raises(InvalidInputError, match=f"row {size - 1} of the batch for thread 't1'"
                       r".*'\\ud800'"):
        s.memory.append_messages("t1", rows)
    assert s.memory.count_messages("t1") == 0
    assert s.memory.append_messages("t1", rows[:-1]) == list(range(size - 1))
    assert s.memory.count_messages("t1") == size - 1
    s.close()


def test_threads_added_a_batch_at_a_time_store_the_same_bytes(tmp_path: Path) -> None:
    """``add_threads`` (an import's new threads: one insert of their rows, one of their
    messages) stores what ``create_thread`` and ``append_messages`` of each store."""
    rows = varied_rows(60)
    groups = [[r.model_copy(update={"seq": k}) for k, r in enumerate(rows[lo:lo + 6])]
              for lo in range(0, 60, 6)]
    clock = ticking()
    s = DuckDBStorage(tmp_path / "added.duckdb", clock=lambda: next(clock))
    s.memory.add_threads([NewThread(f"t{i}", g, resource_id="r1", title=f"T{i}",
                                    metadata={"i": i}) for i, g in enumerate(groups)])
    added = [(t.id, t.resource_id, t.title, t.metadata) for t in s.memory.list_threads()]
    counts = s.memory.thread_stats([f"t{i}" for i in range(10)])
    s.close()
    clock = ticking()
    s = DuckDBStorage(tmp_path / "one.duckdb", clock=lambda: next(clock))
    for i, g in enumerate(groups):
        s.memory.create_thread(f"t{i}", resource_id="r1", title=f"T{i}", metadata={"i": i})
        s.memory.append_messages(f"t{i}", g)
    assert added == [(t.id, t.resource_id, t.title, t.metadata)
                     for t in s.memory.list_threads()]
    assert counts == s.memory.thread_stats([f"t{i}" for i in range(10)])
    s.close()
    assert stored(tmp_path / "added.duckdb") == stored(tmp_path / "one.duckdb")


def test_a_bulk_session_caps_duckdbs_memory_for_its_block_only(tmp_path: Path) -> None:
    def limit(s: DuckDBStorage) -> str:
        with s._duck.held.connection("test", write=True) as conn:
            return str(conn.execute("SELECT current_setting('memory_limit')").fetchall()[0][0])

    with DuckDBStorage(tmp_path / "f.duckdb") as s:
        before = limit(s)
        with s.bulk_session():
            assert limit(s) == "488.2 MiB"  # 512 MB
            s.memory.create_thread("t1")
        assert limit(s) == before != "488.2 MiB"
    with DuckDBStorage(":memory:") as m, m.bulk_session():  # its data cannot be dropped
        assert limit(m) == before


def test_stored_vectors_decode_alike_from_blobs_and_from_duckdb_lists() -> None:
    """The shared SQL reads a scope's vectors as float32 blobs (SQLite, PostgreSQL) or
    as the lists DuckDB's FLOAT[] comes as: both give the same matrix."""
    from memory_core.storage.common import decode_vectors, encode_vector

    m = np.random.default_rng(4).standard_normal((5, DIM), dtype=np.float32)
    blobs = decode_vectors([encode_vector(v) for v in m], DIM)
    lists = decode_vectors([v.tolist() for v in m], DIM)
    assert blobs.dtype == lists.dtype == np.float32 and np.array_equal(blobs, m)
    assert np.array_equal(lists, m) and blobs.flags.writeable
    assert decode_vectors([], DIM).shape == (0, DIM)
