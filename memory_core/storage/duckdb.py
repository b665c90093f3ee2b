"""DuckDBStorage: a plain driver of the shared SQL store (sql_common.py), every write
committed when the call returns; sharing the file is duckdb_file.py's job. Arrow
inserts and scans and reads by rowid are optional speed-ups (duckdb_arrow.py)."""

from __future__ import annotations

import os
from collections.abc import Hashable, Iterator, Sequence
from contextlib import contextmanager, nullcontext, suppress
from datetime import datetime
from typing import Any

import duckdb
import numpy as np

from memory_core.errors import InvalidInputError, StorageError
from memory_core.storage.base import Storage
from memory_core.storage.common import Clock, ThreadIdFactory, utc_now
from memory_core.storage.duckdb_arrow import ArrowSpeedups
from memory_core.storage.duckdb_file import (
    ERASED,
    MEMORY,
    Conn,
    HeldFile,
    hold_for,
    let_go,
)
from memory_core.storage.filekind import refuse_foreign_file
from memory_core.storage.schema import (
    Dialect,
    Migration,
    apply_migrations,
    check_current,
)
from memory_core.storage.sql_common import insert_sql
from memory_core.storage.sql_store import SqlStorage

_BULK_MEMORY = "512MB"  # DuckDB's memory limit inside a bulk_session (an import's write)
# the WAL's size that makes a commit checkpoint, inside a bulk_session: with DuckDB's
# default (16 MB) every batch of an import checkpointed, each checkpoint costing more as
# the file grew: 50 commits of 18,000 journal rows (~0.8 GB) took 35 s, against 11 s
# with this (128 MB: 20 s). What was committed since the last checkpoint stays in
# memory: at 1 GB an import of 100,000 requests peaked at 2.5 GB instead of 1.4
_BULK_CHECKPOINT = "256MB"
# (FLOAT[] uncompressed: compressing noisy floats took half an insert, saved ~4%)
_DIALECT = Dialect(text="VARCHAR", vector="FLOAT[] USING COMPRESSION uncompressed",
                   serial_pk="BIGINT PRIMARY KEY DEFAULT nextval('journal_pos')",
                   serial_setup=("CREATE SEQUENCE IF NOT EXISTS journal_pos",), indexes=False)


class _DuckTx:
    """The shared SQL on one DuckDB connection, every result read to the end."""

    def __init__(self, conn: Conn) -> None:
        self.conn = conn

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.conn.execute(sql, list(params)).fetchall()

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        rows = self.conn.execute(sql, list(params)).fetchall()
        # DML answers with one row holding the number of rows it changed
        return int(rows[0][0]) if rows and isinstance(rows[0][0], int) else 0

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self.conn.executemany(sql, [list(r) for r in rows])


class _DuckDriver(ArrowSpeedups):
    dialect = _DIALECT
    lock_row = ""  # one process holds the file read-write; the hold's lock serialises
    contains = "contains({col}, ?)"

    def __init__(self, held: HeldFile, path: str, read_only: bool) -> None:
        self.held = held
        self.path = path
        self.read_only = read_only
        self.closed = False
        self.where = f"DuckDB database '{path}'"

    def _check(self, op: str, write: bool) -> None:
        if self.closed:
            raise StorageError(f"{op} failed: the storage is closed")
        if write and self.read_only:
            raise StorageError(f"{op} refused: storage on '{self.path}' was opened read_only")

    @contextmanager
    def read(self, op: str) -> Iterator[_DuckTx]:
        self._check(op, write=False)
        with self.held.connection(op, write=not self.read_only) as conn:
            try:
                yield _DuckTx(conn)
            except duckdb.Error as e:
                raise StorageError(f"{op} on {self.where} failed: {e}") from e

    @contextmanager
    def write(self, op: str) -> Iterator[_DuckTx]:
        self._check(op, write=True)
        held = self.held
        # inside write_batch, a write joins its transaction
        with held.connection(op, write=True) as conn, \
                nullcontext() if held.in_tx else self._transaction(op, conn):
            try:
                yield _DuckTx(conn)
            except duckdb.Error as e:
                raise StorageError(f"{op} on {self.where} failed: {e}") from e
        held.writes += 1  # (change tokens: seen by this process's next read)

    @contextmanager
    def _transaction(self, op: str, conn: Conn) -> Iterator[None]:
        try:
            conn.execute("BEGIN TRANSACTION")
            try:
                yield
                conn.execute("COMMIT")
            except BaseException:
                with suppress(duckdb.Error):  # the original error is the one to report
                    conn.execute("ROLLBACK")
                raise
        except duckdb.Error as e:
            raise StorageError(f"{op} on {self.where} failed: {e}") from e

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Every write of the block in one transaction; other threads wait for it."""
        self._check("write batch", write=True)
        held = self.held
        with held.lock:
            if held.in_tx:
                yield
                return
            with held.connection("write batch", write=True) as conn, \
                    self._transaction("write batch", conn):
                held.in_tx = True
                try:
                    yield
                finally:
                    held.in_tx = False

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            let_go(self.held)

    def migrate(self, migrations: Sequence[Migration], now: datetime) -> None:
        from memory_core.storage import duckdb_legacy

        if self.read_only:
            with self.read("setup") as tx:
                check_current(tx, migrations, f"'{self.path}'",
                              legacy=duckdb_legacy.is_legacy(tx))
            return
        with self.write("setup") as tx:
            if duckdb_legacy.is_legacy(tx):
                duckdb_legacy.convert(tx, self, migrations, now)
            else:
                apply_migrations(tx, self.dialect, migrations, now, self.where)

    def insert_absent(self, tx: Any, table: str, key: str, columns: Sequence[str],
                      rows: Sequence[Sequence[Any]]) -> int:
        """A look-up of the keys, then a plain INSERT of the absent rows: one writer holds
        the file, and DuckDB's ``ON CONFLICT`` cost ~4 ms against a 50,000-key index."""
        stored = {r[0] for r in tx.query(f"SELECT {key} FROM {table} WHERE {key} IN"
                                         f" ({', '.join('?' * len(rows))})", [r[0] for r in rows])}
        fresh = [r for r in rows if r[0] not in stored]
        if fresh:
            tx.execute(insert_sql(table, columns, len(fresh)), [v for r in fresh for v in r])
        return len(fresh)

    def vector_param(self, v: np.ndarray) -> Any:
        return np.ascontiguousarray(v, dtype=np.float32)

    def stream(self, tx: Any, sql: str, params: Sequence[Any],
               size: int) -> Iterator[Sequence[tuple[Any, ...]]]:
        cursor = tx.conn.execute(sql, list(params))
        yield from iter(lambda: cursor.fetchmany(size), [])

    def change_token(self) -> Hashable | None:
        return self.held.change_token()

class DuckDBStorage(SqlStorage):
    """Both ports on a DuckDB database file (or ``":memory:"``).

    Example:
        >>> s = DuckDBStorage(":memory:")
        >>> s.memory.create_thread("t1", resource_id="u1").id
        't1'

    Every write has committed when the call returns. The file is held only during an
    operation or a ``session()`` and waited for up to ``lock_timeout`` seconds while
    another process holds it (duckdb_file.py); ``read_only=True`` refuses writes.
    """

    def __init__(self, path: str | os.PathLike[str], *, clock: Clock = utc_now,
                 ids: ThreadIdFactory | None = None, lock_timeout: float = 30.0,
                 read_only: bool = False) -> None:
        if not lock_timeout >= 0:
            raise InvalidInputError(f"lock_timeout must be a number >= 0, got {lock_timeout!r}")
        path = os.fspath(path)
        if path == MEMORY:
            if read_only:
                raise InvalidInputError("read_only=True makes no sense for ':memory:'")
            held = HeldFile(None, lock_timeout)
        else:
            if not path:
                raise InvalidInputError("database path must be ':memory:' or a file path")
            path = os.path.realpath(path)
            held = hold_for(path, lock_timeout)
            try:
                if held.conn is None:  # (reading a held file's header drops its lock)
                    refuse_foreign_file("opening", path)
                if not read_only:
                    os.makedirs(os.path.dirname(path), exist_ok=True)
            except BaseException:
                let_go(held)
                raise
        self.path = path
        self.read_only = read_only
        self._duck = _DuckDriver(held, path, read_only)
        with held.session():  # one open for the set-up's reads and writes
            self._open(self._duck, clock, ids)
        if not read_only and os.path.exists(f"{path}{ERASED}"):  # a crash came before
            held.rewrite("finishing an interrupted erasure's rewrite")

    def __repr__(self) -> str:
        return f"DuckDBStorage({self.path!r})"

    def setup(self) -> int:
        """Apply the migrations this database lacks (a read-only storage only checks
        that it has them all); returns the schema version."""
        from memory_core.storage import schema

        self._db.migrate(schema.MIGRATIONS, utc_now())
        return self.schema_version()

    def schema_version(self) -> int:
        with self._db.read("schema_version") as tx:
            row = tx.query("SELECT max(version) FROM schema_migrations")
        return int(row[0][0]) if row and row[0][0] is not None else 0

    def session(self) -> Any:
        """Hold the file across the block's operations (one open instead of one per
        operation); another process that asks gets it between two of them."""
        return self._duck.held.session()

    @contextmanager
    def bulk_session(self) -> Iterator[None]:
        """``session`` with DuckDB's memory limit lowered to ``_BULK_MEMORY`` for the
        block (the instance's: it outlives the file's hold). With DuckDB's default (80%
        of the machine's memory) the blocks an import wrote stayed cached, and each
        checkpoint added to them: ~0.5 GB of an import's 2.1 GB peak at 100,000
        requests. Written blocks are in the file: dropping them loses nothing (not so in
        ``:memory:``, which is left as it is). Commits checkpoint less often
        (``_BULK_CHECKPOINT``): what they wrote is in the WAL until then."""
        held = self._duck.held
        if held.path is None:  # ``:memory:``: its data cannot be dropped
            with self.session():
                yield
            return
        with self.session():
            with held.connection("bulk session", write=not self.read_only) as conn:
                conn.execute(f"SET memory_limit = '{_BULK_MEMORY}'")
                conn.execute(f"SET checkpoint_threshold = '{_BULK_CHECKPOINT}'")
            try:
                yield
            finally:
                with held.lock:
                    if held.instance is not None:
                        for setting in ("memory_limit", "checkpoint_threshold"):
                            with suppress(duckdb.Error):  # (CONFIG sets neither: defaults)
                                held.instance.execute(f"RESET {setting}")

    @contextmanager
    def writer(self, *, lock_timeout: float = 30.0) -> Iterator[Storage]:
        if not self.read_only:
            yield self
            return
        with DuckDBStorage(self.path, lock_timeout=lock_timeout) as writable:
            yield writable

    def erasing(self, what: str) -> Any:
        """One erasure, then the file is rewritten so no byte of the erased text stays
        in it (DuckDB keeps freed blocks as they were)."""
        return self._duck.held.erasing(what)
