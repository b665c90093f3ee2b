"""Batch ingest on DuckDB: an append's rows are built column by column and every
waiting append goes in as one Arrow ``INSERT … SELECT`` (one commit), storing exactly
the bytes the row-by-row path stores; bad input still fails whole."""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pytest

import memory_core.storage.common as common
import memory_core.storage.duckdb as duck
from memory_core.errors import InvalidInputError
from memory_core.storage.duckdb import _CONFIG, DuckDBStorage
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
    conn = duckdb.connect(str(db), read_only=True, config=_CONFIG)
    try:
        return conn.execute("SELECT thread_id, seq, resource_id, body, text_lower, created_at,"
                            " created_us, run_id, embedding FROM messages"
                            " ORDER BY thread_id, seq").fetchall()
    finally:
        conn.close()


def fill(storage: Any, rows: list[AppendRow], size: int) -> None:
    storage.memory.create_thread("t1", resource_id="r1")
    for lo in range(0, len(rows), size):
        storage.memory.append_messages("t1", rows[lo:lo + size])
    storage.close()


@pytest.fixture
def inserts(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Every Arrow insert the DuckDB adapter makes: (table, rows)."""
    seen: list[tuple[str, int]] = []
    real = duck._insert_table

    def spy(conn: Any, table: str, data: Any) -> None:
        seen.append((table, data.num_rows))
        real(conn, table, data)

    monkeypatch.setattr(duck, "_insert_table", spy)
    return seen


def test_a_batch_stores_the_same_bytes_as_row_by_row_appends(tmp_path: Path) -> None:
    rows = varied_rows(60)
    clock = ticking()
    fill(DuckDBStorage(tmp_path / "batch.duckdb", clock=lambda: next(clock)), rows, 60)
    clock = ticking()
    # one row an append, each committed on its own: the bound-parameter path
    fill(DuckDBStorage(tmp_path / "single.duckdb", clock=lambda: next(clock),
                       commit_delay=0), rows, 1)
    batch, single = stored(tmp_path / "batch.duckdb"), stored(tmp_path / "single.duckdb")
    assert len(batch) == 60
    assert batch == single


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
        == [None if r[8] is None else list(np.float32(r[8])) for r in ours]
    # the expected values, spelled out for two rows
    first = ours[0]
    assert first[3] == ('{"content":"Plain 0 \\"quoted\\" \\\\ back\\nline\\t\\u0001 é ✓",'
                        '"metadata":{},"role":"user"}')
    assert first[4] == "plain 0 \"quoted\" \\ back\nline\t\x01 é ✓"
    assert ours[1][4] is None  # empty content has no text
    assert ours[4][4] == "ΣΑΣ İstanbul 4".lower()


def test_every_waiting_append_goes_in_as_one_insert(
        tmp_path: Path, inserts: list[tuple[str, int]]) -> None:
    s = DuckDBStorage(tmp_path / "one.duckdb", commit_delay=30)
    s.memory.create_thread("t1")
    s.memory.create_thread("t2")
    rows = varied_rows(500)
    s.memory.append_messages("t1", rows[:300])
    for r in rows[300:340]:
        s.memory.append_messages("t2", [r])
    s.memory.append_messages("t1", rows[340:])
    assert inserts == []  # nothing committed yet
    assert s.memory.count_messages("t1") == 460  # counted with what waits, waiting
    assert inserts == []
    s.memory.list_threads()  # a read of the file commits what waits, first
    assert inserts == [("messages", 500)]
    # both threads' counters, kept by the commit's one UPDATE for all threads
    h = s._duck.handle
    with h.lock:
        conn = h.idle if h.idle is not None else h.held
        assert conn is not None
        assert conn.execute("SELECT id, message_count, max_seq FROM threads ORDER BY id"
                            ).fetchall() == [("t1", 460, 459), ("t2", 40, 39)]
    assert [m.seq for m in s.memory.get_messages("t2")] == list(range(40))
    s.close()


@pytest.mark.parametrize("where", ["memory", "write_batch"])
def test_a_batch_outside_deferred_appends_is_one_insert(
        tmp_path: Path, inserts: list[tuple[str, int]], where: str) -> None:
    s = DuckDBStorage(":memory:" if where == "memory" else tmp_path / "wb.duckdb")
    s.memory.create_thread("t1")
    with s.write_batch():
        assert s.memory.append_messages("t1", varied_rows(200)) == list(range(200))
    assert inserts == [("messages", 200)]
    assert s.memory.count_messages("t1") == 200
    s.close()


@pytest.mark.parametrize("n", [1, 2, duck._SMALL_BATCH])
def test_a_few_rows_go_in_as_one_statement(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, inserts: list[tuple[str, int]],
        n: int) -> None:
    """A tool call and its result (or any few rows) are one ``INSERT … VALUES`` of
    bound rows, not DuckDB's ``executemany``, which runs the statement once a row."""
    statements: list[str] = []
    real = duck._DuckTx.execute

    def execute(self: Any, sql: str, params: Any = (), **kw: Any) -> int:
        if sql.startswith("INSERT INTO messages"):
            statements.append(sql)
        return real(self, sql, params, **kw)

    def refuse(self: Any, sql: str, rows: Any) -> None:
        raise AssertionError(f"executemany: {sql}")

    monkeypatch.setattr(duck._DuckTx, "execute", execute)
    monkeypatch.setattr(duck._DuckTx, "executemany", refuse)
    s = DuckDBStorage(tmp_path / "few.duckdb", commit_delay=0)
    s.memory.create_thread("t1")
    rows = varied_rows(n)
    assert s.memory.append_messages("t1", rows) == list(range(n))
    assert len(statements) == 1 and statements[0].count("(?") == n and inserts == []
    assert [m.as_message() for m in s.memory.get_messages("t1")] == [r.message for r in rows]
    s.close()
    vectors = [r[8] for r in stored(tmp_path / "few.duckdb")]
    assert [None if v is None else list(np.float32(v)) for v in vectors] \
        == [None if r.embedding is None else list(r.embedding) for r in rows]


def test_plain_text_rows_are_built_without_a_call_per_row(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = common.message_body

    def counted(*args: Any) -> str:
        calls.append(args[1])
        return real(*args)

    monkeypatch.setattr(common, "message_body", counted)
    s = DuckDBStorage(tmp_path / "cols.duckdb")
    s.memory.create_thread("t1")
    rows = [AppendRow(message=Message(content=f"m{i}")) for i in range(1000)]
    rows[500] = AppendRow(message=Message(content="with metadata", metadata={"k": 1}))
    s.memory.append_messages("t1", rows)
    assert calls == [500]  # only the row that is not plain text
    assert s.memory.get_messages("t1", seqs=[500])[0].metadata == {"k": 1}
    s.close()


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
    conn = duckdb.connect(str(db), read_only=True, config=_CONFIG)
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
    s.erase_thread("t2")
    assert s.memory.get_messages("t1", seqs=[2999])[0].seq == 2999
    s.close()
    assert _compressions(db) == {"Uncompressed"}
    assert len(stored(db)) == 3000
    assert stored(db)[7][8] == [np.float32(1.0)] * DIM


def _threshold(s: DuckDBStorage) -> str:
    with s._duck.transaction("look", write=False) as conn:
        return str(conn.execute("SELECT current_setting('checkpoint_threshold')")
                   .fetchall()[0][0])


def test_bulk_commits_leave_checkpoints_for_later(tmp_path: Path) -> None:
    """Commits of batch appends do not checkpoint at the small WAL size of live appends
    (each checkpoint rewrote the table's partly filled row group); the small threshold
    is back after each, and closing checkpoints everything."""
    db = tmp_path / "bulk.duckdb"
    s = DuckDBStorage(db, commit_delay=30)
    s.memory.create_thread("t1")
    small = _threshold(s)
    vecs = np.random.default_rng(2).standard_normal((duck._BULK_ROWS * 3, 384), np.float32)
    rows = [AppendRow(message=Message(content=f"m{i}"), embedding=vecs[i])
            for i in range(len(vecs))]
    for lo in range(0, len(rows), duck._BULK_ROWS):
        s.memory.append_messages("t1", rows[lo:lo + duck._BULK_ROWS])
        assert s.memory.count_messages("t1") == lo + duck._BULK_ROWS  # committed now
        assert _threshold(s) == small
    # 3,000 rows of 1.5 KB: more WAL than a live append's threshold, not checkpointed
    assert os.path.getsize(f"{db}.wal") > 4 * 2**20
    s.close()
    assert not os.path.exists(f"{db}.wal") or os.path.getsize(f"{db}.wal") == 0
    got = stored(db)
    assert len(got) == len(rows)
    assert np.array_equal(np.asarray(got[-1][8], np.float32), vecs[-1])


def test_a_large_append_builds_its_insert_table_in_the_appending_thread(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        inserts: list[tuple[str, int]]) -> None:
    """The keeper's commit of one batch runs while the caller's thread builds the next
    batch's Arrow table; appends with and without vectors still go in as one insert."""
    built: list[int] = []
    real = duck._build_table

    def spy(staged: Any) -> Any:
        built.append(sum(len(s) for s in staged))
        return real(staged)

    monkeypatch.setattr(duck, "_build_table", spy)
    s = DuckDBStorage(tmp_path / "pre.duckdb", commit_delay=30)
    s.memory.create_thread("t1")
    vecs = np.random.default_rng(3).standard_normal((100, DIM), np.float32)
    s.memory.append_messages("t1", [AppendRow(message=Message(content=f"p{i}"))
                                    for i in range(100)])
    s.memory.append_messages("t1", [AppendRow(message=Message(content=f"v{i}"),
                                              embedding=vecs[i]) for i in range(100)])
    for i in range(3):
        s.memory.append_messages("t1", [AppendRow(message=Message(content=f"s{i}"),
                                                  embedding=vecs[i])])
    assert built == [100, 100] and inserts == []  # built at append time, not inserted
    assert s.memory.count_messages("t1") == 203
    s.memory.list_threads()  # a read of the file commits what waits, first
    assert inserts == [("messages", 203)]
    assert built == [100, 100, 3]  # the single appends, built and joined at the commit
    s.close()
    got = stored(tmp_path / "pre.duckdb")
    assert [r[8] for r in got[:100]] == [None] * 100
    assert np.array_equal(np.asarray([r[8] for r in got[100:200]], np.float32), vecs)
    assert np.array_equal(np.asarray(got[202][8], np.float32), vecs[2])


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
