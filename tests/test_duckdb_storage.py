"""DuckDB-specific behaviour beyond the conformance suite: migrations, read-only
handles, error mapping, and appends without a session from many threads."""

from __future__ import annotations

import threading
from pathlib import Path

import duckdb
import pytest

from memory_core.errors import InvalidInputError, StorageError
from memory_core.storage import duckdb as duckdb_module
from memory_core.storage.duckdb import MIGRATIONS, DuckDBStorage
from memory_core.types import AppendRow, Message


def msg(text: str) -> AppendRow:
    return AppendRow(message=Message(content=text))


def test_migrations_are_recorded_once(tmp_path: Path) -> None:
    db = tmp_path / "m.duckdb"
    DuckDBStorage(db).close()
    s = DuckDBStorage(db)
    assert s.setup() == len(MIGRATIONS) == s.schema_version()
    s.close()
    raw = duckdb.connect(str(db), read_only=True)
    assert raw.execute("SELECT version FROM schema_migrations ORDER BY version").fetchall() \
        == [(v,) for v in range(1, len(MIGRATIONS) + 1)]
    raw.close()


def test_old_schema_is_migrated_with_backfilled_thread_counters(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A database written before migration 2 gets each thread's message count and max
    seq from the messages it already holds, and keeps them from then on."""
    db = tmp_path / "old.duckdb"
    monkeypatch.setattr(duckdb_module, "MIGRATIONS", MIGRATIONS[:1])
    DuckDBStorage(db, linger=0).close()
    monkeypatch.undo()
    raw = duckdb.connect(str(db))
    for tid in ("gappy", "empty", "one"):
        raw.execute("INSERT INTO threads VALUES (?, 'r', NULL, '{}', NULL, 0, 0)", [tid])
    for tid, seq in (("gappy", 0), ("gappy", 1), ("gappy", 2), ("gappy", 7), ("one", 3)):
        raw.execute("INSERT INTO messages VALUES (?, ?, 'user', ?, ?, ?, '{}', 0, NULL, 'r')",
                    [tid, seq, f'"m{seq}"', f"m{seq}", f"m{seq}"])
    raw.close()

    s = DuckDBStorage(db, linger=0)
    try:
        assert s.schema_version() == len(MIGRATIONS) == 2
        m = s.memory
        assert m.thread_stats(["gappy", "empty", "one", "ghost"]) == {
            "gappy": (4, 7), "empty": (0, -1), "one": (1, 3)}
        assert (m.count_messages("gappy"), m.max_seq("gappy")) == (4, 7)
        assert m.append_messages("gappy", [msg("new")]) == [8]
        assert m.append_messages("empty", [AppendRow(message=Message(content="a"), seq=5),
                                           AppendRow(message=Message(content="b"), seq=2)]) \
            == [5, 2]
        assert m.thread_stats(["gappy", "empty"]) == {"gappy": (5, 8), "empty": (2, 5)}
        assert [x.text() for x in m.get_messages("gappy")] == ["m0", "m1", "m2", "m7", "new"]
    finally:
        s.close()


def test_read_only_refuses_writes_and_reads_data(tmp_path: Path) -> None:
    db = tmp_path / "ro.duckdb"
    w = DuckDBStorage(db)
    w.memory.create_thread("t1")
    w.memory.append_messages("t1", [msg("a")])
    w.close()
    r = DuckDBStorage(db, read_only=True)
    assert [m.text() for m in r.memory.get_messages("t1")] == ["a"]
    with pytest.raises(StorageError, match="append_messages on thread 't1' refused"):
        r.memory.append_messages("t1", [msg("b")])
    r.close()


def test_read_only_on_missing_file_names_it(tmp_path: Path) -> None:
    with pytest.raises(StorageError, match="nothing.duckdb' does not exist"):
        DuckDBStorage(tmp_path / "nothing.duckdb", read_only=True)


def test_read_only_memory_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="read_only"):
        DuckDBStorage(":memory:", read_only=True)


def test_engine_errors_become_storage_errors_naming_the_operation(tmp_path: Path) -> None:
    bad = tmp_path / "not-a-db.duckdb"
    bad.write_text("this is not a database")
    with pytest.raises(StorageError, match="not-a-db.duckdb") as info:
        DuckDBStorage(bad)
    assert isinstance(info.value.__cause__, duckdb.Error)


def test_closed_storage_refuses_work() -> None:
    s = DuckDBStorage(":memory:")
    s.close()
    with pytest.raises(StorageError, match="closed"):
        s.memory.get_thread("t1")


def test_threads_without_session_on_a_file_keep_seqs_dense(tmp_path: Path) -> None:
    # no session: each append goes through open/linger/close; max_hold=0 forces reopening
    s = DuckDBStorage(tmp_path / "f.duckdb", max_hold=0.0)
    s.memory.create_thread("t1")

    def go() -> None:
        for _ in range(10):
            s.memory.append_messages("t1", [msg("x")])

    ts = [threading.Thread(target=go) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert [m.seq for m in s.memory.get_messages("t1")] == list(range(40))
    s.close()
