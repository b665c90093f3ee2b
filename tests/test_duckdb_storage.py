"""DuckDB-specific behaviour beyond the conformance suite: migrations (including files
of the older DuckDB-only schema), read-only handles, foreign files, error mapping, and
appends without a session from many threads."""

from __future__ import annotations

import gzip
import shutil
import threading
from pathlib import Path

import duckdb
import pytest

from memory_core.errors import InvalidInputError, StorageError
from memory_core.storage.duckdb import DuckDBStorage
from memory_core.storage.schema import MIGRATIONS
from memory_core.storage.sqlite import SQLiteStorage
from memory_core.types import AppendRow, Message
from tests.conformance.legacy import FILES


def msg(text: str) -> AppendRow:
    return AppendRow(message=Message(content=text))


def test_migrations_are_recorded_once(tmp_path: Path) -> None:
    db = tmp_path / "m.duckdb"
    DuckDBStorage(db).close()
    s = DuckDBStorage(db)
    assert s.setup() == len(MIGRATIONS) == s.schema_version()
    s.close()
    raw = duckdb.connect(str(db), read_only=True)
    assert raw.execute("SELECT version, name FROM schema_migrations ORDER BY version"
                       ).fetchall() == [(m.version, m.name) for m in MIGRATIONS]
    raw.close()


def _legacy_file(tmp_path: Path) -> Path:
    path = tmp_path / "legacy.duckdb"
    with gzip.open(FILES["duckdb"]) as src, path.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    return path


def test_legacy_version_1_file_gets_thread_counters_from_its_messages(tmp_path: Path) -> None:
    """A file the DuckDB-only code left at its first schema (no counters) is moved onto
    the shared schema with each thread's count and max seq taken from its messages."""
    path = _legacy_file(tmp_path)
    raw = duckdb.connect(str(path))
    raw.execute("ALTER TABLE threads DROP COLUMN message_count")
    raw.execute("ALTER TABLE threads DROP COLUMN max_seq")
    raw.execute("DELETE FROM schema_migrations WHERE version = 2")
    raw.close()
    s = DuckDBStorage(path)
    try:
        assert s.schema_version() == len(MIGRATIONS)
        m = s.memory
        assert m.thread_stats(["t1", "t2", "lone", "ghost"]) == {
            "t1": (3, 2), "t2": (3, 9), "lone": (0, -1)}
        assert m.append_messages("t2", [msg("new")]) == [10]
        assert m.thread_stats(["t2"]) == {"t2": (4, 10)}
        # the journal keeps its order and goes on after the legacy entries
        assert s.runs.put_if_absent("z:new", 1)
        assert [k for k, _ in s.runs.list("")][-2:] == ["r1:output", "z:new"]
        # the legacy records have their key groups: a run's listing finds them
        r1 = [k for k, _ in s.runs.list("") if k.startswith("r1:")]
        assert r1 and [k for k, _ in s.runs.list("r1:")] == r1
    finally:
        s.close()


def test_legacy_file_opened_read_only_asks_for_a_writable_open(tmp_path: Path) -> None:
    path = _legacy_file(tmp_path)
    with pytest.raises(StorageError, match="without read_only to migrate"):
        DuckDBStorage(path, read_only=True)
    DuckDBStorage(path).close()
    r = DuckDBStorage(path, read_only=True)
    assert r.memory.count_messages("t1") == 3
    r.close()


def test_file_from_newer_code_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "new.duckdb"
    DuckDBStorage(path).close()
    raw = duckdb.connect(str(path))
    raw.execute("INSERT INTO schema_migrations VALUES (99, 'future', 'x')")
    raw.close()
    with pytest.raises(StorageError, match=r"schema versions \[99\]"):
        DuckDBStorage(path)


def test_sqlite_file_opened_as_duckdb_is_one_clear_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "foreign.sqlite"
    SQLiteStorage(path).close()
    before = path.read_bytes()
    for read_only in (False, True):
        with pytest.raises(StorageError, match="foreign.sqlite' is not a valid DuckDB database .it is a SQLite") as info:
            DuckDBStorage(path, read_only=read_only, lock_timeout=1)
        # refused before DuckDB saw it: no "install the sqlite extension" advice
        assert "extension" not in str(info.value).lower()
    assert path.read_bytes() == before  # nothing written into the foreign file


def test_read_only_refuses_writes_and_reads_data(tmp_path: Path) -> None:
    db = tmp_path / "ro.duckdb"
    w = DuckDBStorage(db)
    w.memory.create_thread("t1")
    w.memory.append_messages("t1", [msg("a")])
    w.close()
    r = DuckDBStorage(db, read_only=True)
    assert [m.text() for m in r.memory.get_messages("t1")] == ["a"]
    with pytest.raises(StorageError, match="append_messages refused"):
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
    with pytest.raises(StorageError, match="not-a-db.duckdb' is not a valid DuckDB database;"):
        DuckDBStorage(bad)


def test_closed_storage_refuses_work() -> None:
    s = DuckDBStorage(":memory:")
    s.close()
    with pytest.raises(StorageError, match="closed"):
        s.memory.get_thread("t1")


def test_threads_without_session_on_a_file_keep_seqs_dense(tmp_path: Path) -> None:
    # no session: each append opens the file, commits and closes it again, while the
    # other threads wait for it
    s = DuckDBStorage(tmp_path / "f.duckdb")
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


def test_a_read_only_storage_lends_a_writer_for_a_block(tmp_path: Path) -> None:
    """The workbench opens files read-only and writes a counterfactual through
    ``writer()``: a writable storage on the same file for the block, closed after it so
    an agent process can take the file back; a writable storage lends itself."""
    path = tmp_path / "w.duckdb"
    with DuckDBStorage(path) as made:
        made.memory.create_thread("t")
    reader = DuckDBStorage(path, read_only=True)
    with pytest.raises(StorageError, match="read_only"):
        reader.memory.append_messages("t", [AppendRow(message=Message(content="no"))])
    with reader.writer(lock_timeout=5) as writable:
        assert writable is not reader
        writable.memory.append_messages("t", [AppendRow(message=Message(content="yes"))])
    assert [m.text() for m in reader.memory.get_messages("t")] == ["yes"]
    with pytest.raises(StorageError):  # closed when the block ended
        writable.memory.get_messages("t")
    reader.close()
    own = DuckDBStorage(path)
    with own.writer() as same:
        assert same is own
    own.close()


def test_writes_between_checkpoints_are_whole_to_any_opener_and_close_leaves_one_file(
        tmp_path: Path) -> None:
    """Letting the file go does not checkpoint each time (it was a third of a run and
    grew with the file): the WAL carries the last writes, checkpointed once it passes
    a limit, so what an opener replays stays small; every write is there for another
    connection, and after close the file alone holds everything (a copy is whole)."""
    import numpy as np

    db, wal = tmp_path / "w.duckdb", Path(f"{tmp_path / 'w.duckdb'}.wal")
    s = DuckDBStorage(db)
    s.memory.create_thread("t1")
    sizes = []
    for i in range(300):
        s.memory.append_messages("t1", [AppendRow(
            message=Message(content=f"m{i} " + "x" * 300),
            embedding=np.full(384, i / 300, np.float32))])
        sizes.append(wal.stat().st_size if wal.exists() else 0)
        if i in (7, 299):  # between two operations, another connection reads them all
            raw = duckdb.connect(str(db), read_only=True)
            assert raw.execute("SELECT count(*), max(seq) FROM messages").fetchall() \
                == [(i + 1, i)]
            raw.close()
    # the WAL kept between operations, and checkpointed along the way
    assert 0 < max(sizes) < 1024 * 1024, max(sizes)
    s.close()
    assert not wal.exists()
    copy = tmp_path / "copy.duckdb"
    shutil.copyfile(db, copy)
    c = DuckDBStorage(copy, read_only=True)
    got = c.memory.get_messages("t1")
    assert [m.seq for m in got] == list(range(300))
    assert got[-1].text().startswith("m299 ")
    c.close()
