"""PostgresStorage: both storage ports on a PostgreSQL server through psycopg 3 and a
connection pool, so many agent processes can share one memory and journal.

Seq assignment across processes: an append first takes ``SELECT … FROM threads WHERE
id = $1 FOR UPDATE`` on its thread's row inside the insert transaction (READ
COMMITTED). Appends to one thread therefore queue on that row lock, and because each
statement under READ COMMITTED takes a fresh snapshot, the ``MAX(seq)`` read after the
lock is granted already sees the rows the previous holder committed. The row lock was
chosen over ``pg_advisory_xact_lock(hashtext(thread_id))`` because it doubles as the
existence check, excludes a concurrent delete/update of the same thread, has no hash
collisions between threads, and needs no lock-key convention shared with other code.
The store-wide embedding dimension is fixed under a row lock on ``meta`` (always
taken after the thread row, so the two never deadlock). Vectors are ``bytea`` float32
and are scored with numpy after scoping in SQL.

``schema`` puts every table in that schema (created if absent; the tests give each
test a fresh one instead of a database per test).
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from functools import lru_cache
from typing import Any

import psycopg
from psycopg import sql
from psycopg_pool import ConnectionPool, PoolTimeout

from memory_core.errors import InvalidInputError, StorageBusyError, StorageError
from memory_core.storage.common import Clock, ThreadIdFactory, utc_now
from memory_core.storage.schema import Dialect, Migration, Tx, apply_migrations
from memory_core.storage.sql_common import Driver
from memory_core.storage.sql_store import SqlStorage

_DIALECT = Dialect(text='TEXT COLLATE "C"',  # code-point order, like Python's sorted()
                   vector="BYTEA", position="strpos", serial_pk="BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY")


@lru_cache(maxsize=512)
def _pg(query: str) -> str:
    # The shared SQL uses "?" placeholders and contains no literal "?" or "%".
    return query.replace("?", "%s")


class _PgTx:
    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn

    def query(self, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        # binary results: bytea vectors arrive as raw bytes instead of hex text
        return self._conn.execute(_pg(query), tuple(params) or None, binary=True).fetchall()

    def execute(self, query: str, params: Sequence[Any] = ()) -> int:
        return self._conn.execute(_pg(query), tuple(params) or None).rowcount

    def executemany(self, query: str, rows: Sequence[Sequence[Any]]) -> None:
        with self._conn.cursor() as cur:
            cur.executemany(_pg(query), rows)


def _valid_schema(schema: str | None) -> str | None:
    if schema is None:
        return None
    if not isinstance(schema, str) or not schema or len(schema) > 63 or "\x00" in schema:
        raise InvalidInputError(
            f"schema must be a non-empty name of at most 63 characters, got {schema!r}")
    return schema


class _PgDriver(Driver):
    dialect = _DIALECT
    lock_row = " FOR UPDATE"
    contains = "strpos({col}, ?) > 0"

    def __init__(self, dsn: str, schema: str | None, *, min_size: int, max_size: int,
                 connect_timeout: float, pool_timeout: float, lock_timeout: float) -> None:
        from memory_core.storage.common import describe_url

        self.where = describe_url(dsn) + (f" (schema {schema})" if schema else "")
        self._schema = schema
        self._batch = threading.local()  # .conn: the connection of this thread's batch()
        self._lock_timeout = lock_timeout
        self._pool = ConnectionPool(dsn, min_size=min_size, max_size=max_size, open=False,
                                    configure=self._configure, timeout=pool_timeout,
                                    name=f"memwb:{self.where}")
        try:
            self._pool.open(wait=True, timeout=connect_timeout)
        except psycopg.Error as e:
            self._pool.close()
            raise StorageError(
                f"connecting to PostgreSQL at {self.where} failed within "
                f"{connect_timeout:g}s: {e}") from e

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        # A transaction stuck on a row lock (another process's open append) fails as
        # StorageBusyError after lock_timeout instead of hanging the caller forever.
        conn.execute(sql.SQL("SET lock_timeout = {}").format(
            sql.Literal(f"{max(1, int(self._lock_timeout * 1000))}ms")))
        if self._schema is not None:
            conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(self._schema)))
        conn.commit()

    def _wrap(self, op: str, e: psycopg.Error) -> StorageError:
        if isinstance(e, psycopg.errors.LockNotAvailable | PoolTimeout):
            return StorageBusyError(f"{op} on PostgreSQL at {self.where} waited too long "
                                    f"for a row lock or a pooled connection: {e}")
        return StorageError(f"{op} on PostgreSQL at {self.where} failed: {e}")

    @contextmanager
    def _tx(self, op: str) -> Iterator[Tx]:
        held = getattr(self._batch, "conn", None)
        try:
            if held is not None:
                # inside this thread's batch: a savepoint of its transaction, so an
                # operation that fails leaves nothing of itself
                with held.transaction():
                    yield _PgTx(held)
                return
            # The pool's context commits on a clean exit and rolls back on an exception.
            with self._pool.connection() as conn:
                yield _PgTx(conn)
        except psycopg.Error as e:
            raise self._wrap(op, e) from e

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Every operation of this thread in the block on one pooled connection, in one
        transaction (one commit); other threads keep their own connections."""
        if getattr(self._batch, "conn", None) is not None:
            yield
            return
        with self._tx("write batch") as tx:
            assert isinstance(tx, _PgTx)
            try:
                # an explicit transaction block: the operations' blocks nest in it as
                # savepoints, and it commits (or rolls back) once, as the block ends
                with tx._conn.transaction():
                    self._batch.conn = tx._conn
                    yield
            finally:
                self._batch.conn = None

    def read(self, op: str) -> Any:
        return self._tx(op)

    @contextmanager
    def read_single(self, op: str) -> Iterator[Tx]:
        """One statement in autocommit: one round trip instead of three (BEGIN, the
        query, COMMIT); the pooled connection is handed back as it was taken. Inside
        this thread's batch, on the batch's connection: it must see the batch's writes."""
        if getattr(self._batch, "conn", None) is not None:
            with self._tx(op) as tx:
                yield tx
            return
        try:
            with self._pool.connection() as conn:
                conn.autocommit = True
                try:
                    yield _PgTx(conn)
                finally:
                    conn.autocommit = False
        except psycopg.Error as e:
            raise self._wrap(op, e) from e

    def write(self, op: str) -> Any:
        return self._tx(op)

    def change_token(self) -> Hashable | None:
        """The server's current snapshot (the highest completed transaction and those
        in progress): any write transaction that commits, on any connection of any
        process, changes it. One round trip, in autocommit. None inside a batch (its
        own writes are not committed yet: the counts are read every time)."""
        if getattr(self._batch, "conn", None) is not None:
            return None
        with self.read_single("change_token") as tx:
            return str(tx.query("SELECT pg_current_snapshot()::text")[0][0])

    def stream(self, tx: Tx, query: str, params: Sequence[Any],
               size: int) -> Iterator[Sequence[tuple[Any, ...]]]:
        # a server-side cursor: the client holds one batch, not the whole scan
        assert isinstance(tx, _PgTx)
        with tx._conn.cursor(name="memwb_scan", binary=True) as cur:
            cur.execute(_pg(query), tuple(params) or None)
            while batch := cur.fetchmany(size):
                yield batch

    def migrate(self, migrations: Sequence[Migration], now: datetime) -> None:
        with self._tx("migrate") as tx:
            # Serialise concurrent first opens of one schema (CREATE … IF NOT EXISTS is
            # not safe against a concurrent CREATE of the same name).
            tx.query("SELECT pg_advisory_xact_lock(hashtext(?))",
                     (f"memwb-migrate:{self._schema or ''}",))
            if self._schema is not None:
                assert isinstance(tx, _PgTx)
                tx._conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(
                    sql.Identifier(self._schema)))
            apply_migrations(tx, self.dialect, migrations, now, self.where)

    def close(self) -> None:
        self._pool.close()


class PostgresStorage(SqlStorage):
    """Both ports on the PostgreSQL database at ``dsn`` (a ``postgresql://`` URL or a
    libpq key=value string), optionally inside ``schema``; ``clock`` and ``ids`` are
    injectable. ``max_size`` bounds the pool; ``pool_timeout`` (seconds) is how long
    an operation waits for a pooled connection, ``lock_timeout`` how long for a row
    lock held by another connection (both raise StorageBusyError when exceeded)."""

    def __init__(self, dsn: str, *, clock: Clock = utc_now, ids: ThreadIdFactory | None = None,
                 schema: str | None = None, min_size: int = 1, max_size: int = 8,
                 connect_timeout: float = 15.0, pool_timeout: float = 60.0,
                 lock_timeout: float = 60.0) -> None:
        if not isinstance(dsn, str) or not dsn:
            raise InvalidInputError(f"PostgreSQL dsn must be a non-empty string, got {dsn!r}")
        self.schema = _valid_schema(schema)
        self._pg = _PgDriver(dsn, self.schema, min_size=min_size, max_size=max_size,
                             connect_timeout=connect_timeout, pool_timeout=pool_timeout,
                             lock_timeout=lock_timeout)
        self._open(self._pg, clock, ids)

    def __repr__(self) -> str:
        return f"PostgresStorage({self._pg.where!r})"
