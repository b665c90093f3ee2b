"""What the SQL adapters (SQLite, PostgreSQL and DuckDB, all drivers of the shared SQL
in sql_common.py) promise beyond the ports: one recorded migration list, WAL, driver
errors re-raised as StorageError naming the operation, busy waits, exact Unicode
search and timestamps that keep their offset; and the test server's skip/fail rules."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import duckdb
import numpy as np
import psycopg
import pytest

from memory_core.errors import InvalidInputError, StorageBusyError, StorageError
from memory_core.storage import schema
from memory_core.storage.base import Storage
from memory_core.storage.common import key_group
from memory_core.storage.duckdb import DuckDBStorage
from memory_core.storage.sqlite import SQLiteStorage
from memory_core.types import AppendRow, Message
from tests import pg_server
from tests.storage_factories import make_storage

SQL_ADAPTERS = ["sqlite", "duckdb-file", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(params=SQL_ADAPTERS)
def sql_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Storage]:
    s = make_storage(str(request.param), tmp_path)
    try:
        yield s
    finally:
        s.close()


def _raw(s: Storage, query: str) -> list[tuple[object, ...]]:
    """Run SQL on the adapter's own database behind its back."""
    if isinstance(s, SQLiteStorage):
        with sqlite3.connect(s.path) as conn:
            return conn.execute(query).fetchall()
    if isinstance(s, DuckDBStorage):
        # the storage holds the file only during its own operations
        with duckdb.connect(s.path) as conn:
            return conn.execute(query).fetchall()
    from memory_core.storage.postgres import PostgresStorage

    assert isinstance(s, PostgresStorage)
    with psycopg.connect(pg_server.postgres_dsn(), autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{s.schema}"')
        cur = conn.execute(query)
        return cur.fetchall() if cur.description else []


def _reopen(s: Storage) -> Storage:
    if isinstance(s, SQLiteStorage):
        return SQLiteStorage(s.path)
    if isinstance(s, DuckDBStorage):
        return DuckDBStorage(s.path)
    from memory_core.storage.postgres import PostgresStorage

    assert isinstance(s, PostgresStorage)
    return PostgresStorage(pg_server.postgres_dsn(), schema=s.schema)


ALL_VERSIONS = [m.version for m in schema.MIGRATIONS]


def test_migrations_are_recorded_once(sql_store: Storage) -> None:
    versions = "SELECT version FROM schema_migrations ORDER BY version"
    assert [r[0] for r in _raw(sql_store, versions)] == ALL_VERSIONS
    _reopen(sql_store).close()
    assert [r[0] for r in _raw(sql_store, versions)] == ALL_VERSIONS


def test_old_schema_is_migrated_with_backfilled_thread_counters(
        sql_store: Storage, monkeypatch: pytest.MonkeyPatch) -> None:
    """A database written before migration 2 gets each thread's message count and max
    seq from the messages it already holds, and keeps them from then on."""
    # rebuild the database as the first schema left it, then write rows as that code did
    for table in ("schema_migrations", "messages", "threads", "meta", "working_memory",
                  "observations", "observation_vectors", "journal", "runs"):
        _raw(sql_store, f"DROP TABLE {table}")
    sql_store.close()
    monkeypatch.setattr(schema, "MIGRATIONS", schema.MIGRATIONS[:1])
    _reopen(sql_store).close()
    monkeypatch.undo()
    assert [r[0] for r in _raw(sql_store, "SELECT version FROM schema_migrations")] == [1]
    for tid in ("gappy", "empty", "one"):
        _raw(sql_store, "INSERT INTO threads (id, resource_id, title, metadata,"
                        " parent_thread_id, created_at, created_us, updated_at) VALUES"
                        f" ('{tid}', 'r', NULL, '{{}}', NULL, '2026-01-01T00:00:00+00:00', 0,"
                        " '2026-01-01T00:00:00+00:00')")
    for tid, seq in (("gappy", 0), ("gappy", 1), ("gappy", 2), ("gappy", 7), ("one", 3)):
        _raw(sql_store, "INSERT INTO messages (thread_id, seq, resource_id, body, text_lower,"
                        " created_at, created_us, run_id, embedding) VALUES"
                        f" ('{tid}', {seq}, 'r', '{{\"content\":\"m{seq}\",\"metadata\":{{}},"
                        f"\"role\":\"user\"}}', 'm{seq}', '2026-01-01T00:00:00+00:00', 0,"
                        " NULL, NULL)")

    s = _reopen(sql_store)
    try:
        versions = "SELECT version FROM schema_migrations ORDER BY version"
        assert [r[0] for r in _raw(s, versions)] == ALL_VERSIONS
        m = s.memory
        assert m.thread_stats(["gappy", "empty", "one", "ghost"]) == {
            "gappy": (4, 7), "empty": (0, -1), "one": (1, 3)}
        assert (m.count_messages("gappy"), m.max_seq("gappy")) == (4, 7)
        assert m.append_messages("gappy", [AppendRow(message=Message(content="new"))]) == [8]
        assert m.append_messages("empty", [AppendRow(message=Message(content="a"), seq=5),
                                           AppendRow(message=Message(content="b"), seq=2)]) \
            == [5, 2]
        assert m.thread_stats(["gappy", "empty"]) == {"gappy": (5, 8), "empty": (2, 5)}
        assert [x.text() for x in m.get_messages("gappy")] == ["m0", "m1", "m2", "m7", "new"]
    finally:
        s.close()


JOURNAL_KEYS = ["run-1:input", "run-1:step:0", "run-10:input", "rün-ä😀:prompt",
                "no-colon", "om:t:x:1", "run-1"]


def test_old_journal_gets_its_key_groups(sql_store: Storage,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A database written before migration 4 gets each record's group from its key
    (non-ASCII keys and keys without ':' too), and its records listed by prefix through
    the group are the ones a scan of the keys finds — nothing lost, nothing extra."""
    for table in ("schema_migrations", "messages", "threads", "meta", "working_memory",
                  "observations", "observation_vectors", "journal", "runs"):
        _raw(sql_store, f"DROP TABLE {table}")
    if isinstance(sql_store, DuckDBStorage):
        _raw(sql_store, "DROP SEQUENCE journal_pos")
    sql_store.close()
    monkeypatch.setattr(schema, "MIGRATIONS", schema.MIGRATIONS[:3])
    _reopen(sql_store).close()
    monkeypatch.undo()
    for i, key in enumerate(JOURNAL_KEYS):
        _raw(sql_store, f"INSERT INTO journal (key, value) VALUES ('{key}', '{i}')")

    s = _reopen(sql_store)
    try:
        assert [r[0] for r in _raw(s, "SELECT version FROM schema_migrations ORDER BY"
                                      " version")] == ALL_VERSIONS
        assert dict(_raw(s, "SELECT key, grp FROM journal")) == {
            k: key_group(k) for k in JOURNAL_KEYS}
        for prefix in ("run-1:", "run-1:step:", "run-1", "rün-ä😀:", "no-colon", "om:t:",
                       "om:t:x:", "", "zzz:"):
            assert [k for k, _ in s.runs.list(prefix)] == [
                k for k in JOURNAL_KEYS if k.startswith(prefix)], prefix
        # new records carry their group too, and a delete by prefix finds them
        s.runs.put_many_if_absent([("run-1:output", 1), ("run-2:input", 2)])
        assert s.runs.put_if_absent("rün-ä😀:seal", 3)
        assert [k for k, _ in s.runs.list("run-1:")] == [
            "run-1:input", "run-1:step:0", "run-1:output"]
        assert [k for k, _ in s.runs.list("rün-ä😀:")] == ["rün-ä😀:prompt", "rün-ä😀:seal"]
        assert s.runs.delete("run-1:step:") == 1
        assert s.runs.delete("run-1:") == 2
        assert [k for k, _ in s.runs.list("run-")] == ["run-10:input", "run-1", "run-2:input"]
    finally:
        s.close()


def _plan(s: Storage, query: str) -> str:
    if isinstance(s, SQLiteStorage):
        return " ".join(str(r[-1]) for r in _raw(s, f"EXPLAIN QUERY PLAN {query}"))
    if isinstance(s, DuckDBStorage):
        return " ".join(str(r[-1]) for r in _raw(s, f"EXPLAIN ANALYZE {query}"))
    return " ".join(str(r[0]) for r in _raw(s, f"EXPLAIN {query}"))


def test_a_runs_records_are_read_through_the_group_index(sql_store: Storage) -> None:
    """Listing a run's records is an index look-up on its group, not a scan of the
    whole journal (the runner lists a run's records before each run)."""
    sql_store.runs.put_many_if_absent([(f"run-{i}:{part}", i) for i in range(300)
                                       for part in ("input", "prompt", "output")])
    assert [k for k, _ in sql_store.runs.list("run-7:")] == [
        "run-7:input", "run-7:prompt", "run-7:output"]
    plan = _plan(sql_store, "SELECT key, value FROM journal WHERE grp = 'run-7:' ORDER BY pos")
    if isinstance(sql_store, DuckDBStorage):
        assert "Index Scan" in plan, plan
    elif isinstance(sql_store, SQLiteStorage):
        assert "USING INDEX journal_by_group" in plan, plan
    else:
        _raw(sql_store, "ANALYZE journal")
        plan = _plan(sql_store, "SELECT key, value FROM journal WHERE grp = 'run-7:'")
        assert "journal_by_group" in plan, plan


def test_driver_error_becomes_storage_error_naming_the_operation(sql_store: Storage) -> None:
    sql_store.memory.create_thread("t")
    _raw(sql_store, "DROP TABLE working_memory")
    with pytest.raises(StorageError, match="put_working_memory"):
        sql_store.memory.put_working_memory("thread:t", {"a": 1})
    with pytest.raises(StorageError, match="list_working_memory_keys"):
        sql_store.memory.list_working_memory_keys()
    # a failed operation leaves the connection usable
    assert sql_store.memory.require_thread("t").id == "t"


def test_use_after_close_is_a_storage_error(sql_store: Storage) -> None:
    sql_store.close()
    with pytest.raises(StorageError, match="get_thread"):
        sql_store.memory.get_thread("t")


def test_search_lowercases_unicode_like_python(sql_store: Storage) -> None:
    sql_store.memory.create_thread("t")
    sql_store.memory.append_messages("t", [AppendRow(message=Message(content="ÄPFEL und Ĳssel")),
                                           AppendRow(message=Message(content="apfel"))])
    assert [m.seq for m in sql_store.memory.search_messages("äpfel")] == [0]
    assert [m.seq for m in sql_store.memory.search_messages("ĳSSEL")] == [0]


@pytest.mark.parametrize("adapter", SQL_ADAPTERS)
def test_timestamps_keep_their_offset_and_order_by_instant(adapter: str, tmp_path: Path) -> None:
    plus5 = timezone(timedelta(hours=5))
    times = iter([datetime(2026, 1, 1, 10, 0, tzinfo=plus5),  # 05:00Z
                  datetime(2026, 1, 1, 6, 0, tzinfo=UTC)])  # 06:00Z, later
    with make_storage(adapter, tmp_path, clock=lambda: next(times)) as s:
        s.memory.create_thread("early")
        s.memory.create_thread("late")
        got = s.memory.list_threads()
        assert [t.id for t in got] == ["late", "early"]
        assert got[1].created_at.utcoffset() == timedelta(hours=5)


def test_sqlite_uses_wal(tmp_path: Path) -> None:
    with SQLiteStorage(tmp_path / "w.db"):
        with sqlite3.connect(tmp_path / "w.db") as conn:
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_sqlite_writer_waits_then_reports_busy(tmp_path: Path) -> None:
    path = tmp_path / "b.db"
    with SQLiteStorage(path, busy_timeout=0.2) as s:
        s.memory.create_thread("t")
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # another process's write transaction
        try:
            with pytest.raises(StorageBusyError, match="append_messages"):
                s.memory.append_messages("t", [AppendRow(message=Message(content="x"))])
            assert s.memory.count_messages("t") == 0  # readers are not blocked (WAL)
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert s.memory.append_messages("t", [AppendRow(message=Message(content="x"))]) == [0]


@pytest.mark.postgres
def test_postgres_first_dimension_is_fixed_once_across_connections(tmp_path: Path) -> None:
    from memory_core.storage.postgres import PostgresStorage

    dsn = pg_server.require_postgres_dsn()
    schema = pg_server.schema_for(dsn, tmp_path)
    a, b = PostgresStorage(dsn, schema=schema), PostgresStorage(dsn, schema=schema)
    try:
        a.memory.create_thread("x")
        a.memory.create_thread("y")
        start = threading.Barrier(2)
        outcome: dict[str, object] = {}

        def write(s: Storage, tid: str, dim: int) -> None:
            start.wait()
            try:
                outcome[tid] = s.memory.append_messages(
                    tid, [AppendRow(message=Message(content="v"), embedding=np.ones(dim))])
            except InvalidInputError as e:
                outcome[tid] = e

        ts = [threading.Thread(target=write, args=(a, "x", 3)),
              threading.Thread(target=write, args=(b, "y", 5))]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert sorted(type(v).__name__ for v in outcome.values()) == [
            "InvalidInputError", "list"]
        assert a.memory.embedding_dim() in (3, 5)
        assert len(a.memory.get_embeddings(["x", "y"])) == 1
    finally:
        a.close()
        b.close()


@pytest.mark.postgres
def test_postgres_append_behind_a_held_thread_lock_reports_busy(tmp_path: Path) -> None:
    from memory_core.storage.postgres import PostgresStorage

    dsn = pg_server.require_postgres_dsn()
    schema = pg_server.schema_for(dsn, tmp_path)
    with PostgresStorage(dsn, schema=schema, lock_timeout=0.3) as s:
        s.memory.create_thread("t")
        with psycopg.connect(dsn) as other:  # another process mid-append on "t"
            other.execute(f'SET search_path TO "{schema}"')
            other.execute("SELECT 1 FROM threads WHERE id = 't' FOR UPDATE")
            with pytest.raises(StorageBusyError, match="append_messages"):
                s.memory.append_messages("t", [AppendRow(message=Message(content="x"))])
            other.rollback()
        assert s.memory.append_messages("t", [AppendRow(message=Message(content="x"))]) == [0]


@pytest.mark.postgres
def test_postgres_close_returns_its_connections(tmp_path: Path) -> None:
    from memory_core.storage.postgres import PostgresStorage

    dsn = pg_server.require_postgres_dsn()
    name = "memwb-close-test"
    dsn_named = f"{dsn}?application_name={name}"
    count = f"SELECT count(*) FROM pg_stat_activity WHERE application_name = '{name}'"
    s = PostgresStorage(dsn_named, schema=pg_server.schema_for(dsn, tmp_path), min_size=2)
    with psycopg.connect(dsn, autocommit=True) as admin:
        assert admin.execute(count).fetchone()[0] >= 1  # type: ignore[index]
        s.close()
        # a backend leaves pg_stat_activity a moment after its client hangs up
        for _ in range(100):
            left = admin.execute(count).fetchone()[0]  # type: ignore[index]
            if left == 0:
                break
            time.sleep(0.1)
        assert left == 0


def test_postgres_unreachable_server_is_a_storage_error_without_password() -> None:
    from memory_core.storage.postgres import PostgresStorage

    with socket_port() as port, pytest.raises(StorageError) as info:
        PostgresStorage(f"postgresql://u:hunter2@127.0.0.1:{port}/db", connect_timeout=0.5)
    assert "hunter2" not in str(info.value) and "u:***@127.0.0.1" in str(info.value)


class socket_port:
    """A loopback port nothing listens on, for as long as the block runs."""

    def __enter__(self) -> int:
        import socket

        self._s = socket.socket()
        self._s.bind(("127.0.0.1", 0))  # bound, not listening: connections are refused
        return int(self._s.getsockname()[1])

    def __exit__(self, *exc: object) -> None:
        self._s.close()


# -- the throwaway server's rules ---------------------------------------------------
@pytest.fixture
def no_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pg_server, "_server", None)
    monkeypatch.setattr(pg_server, "_failure", None)
    monkeypatch.delenv(pg_server.ENV_DSN, raising=False)
    monkeypatch.delenv(pg_server.ENV_SKIP, raising=False)


@pytest.mark.usefixtures("no_server")
def test_given_dsn_is_used_as_is(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(pg_server.ENV_DSN, "postgresql://elsewhere/db")
    assert pg_server.postgres_dsn() == "postgresql://elsewhere/db"


@pytest.mark.usefixtures("no_server")
def test_skip_only_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(pg_server.ENV_SKIP, "1")
    with pytest.raises(pg_server.PostgresSkipped, match="MEMWB_SKIP_POSTGRES"):
        pg_server.postgres_dsn()


@pytest.mark.usefixtures("no_server")
def test_missing_binaries_fail_with_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pg_server, "find_bin_dir", lambda: None)
    with pytest.raises(pg_server.PostgresUnavailable, match="postgresql` package"):
        pg_server.postgres_dsn()
    # and the pytest helper turns that into a failure, not a skip
    with pytest.raises(pytest.fail.Exception, match="postgresql` package"):
        pg_server.require_postgres_dsn()


def test_sqlite_failed_migration_is_a_storage_error_naming_the_file(tmp_path: Path) -> None:
    # a foreign table named like ours makes the first migration's index fail
    path = tmp_path / "foreign.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE threads (something_else TEXT)")
    with pytest.raises(StorageError, match=r"migrate on SQLite database '.*foreign\.sqlite'"):
        SQLiteStorage(path)
    # nothing of the failed migration was kept
    with sqlite3.connect(path) as conn:
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert names == {"threads"}
