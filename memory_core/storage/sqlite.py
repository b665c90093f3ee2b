"""SQLiteStorage: both storage ports on one SQLite file through the standard library's
sqlite3, in WAL mode so readers in other processes never block the writer.

Seq assignment across processes: every write runs in a ``BEGIN IMMEDIATE``
transaction. IMMEDIATE takes SQLite's RESERVED lock when the transaction starts
(rather than at its first write, as a DEFERRED one would), so exactly one connection
in any process is inside a write transaction at a time and the ``MAX(seq)`` it reads
cannot go stale before its INSERT; a DEFERRED transaction would read under a shared
lock and then fail with SQLITE_BUSY on upgrade, which no busy timeout can fix. Other
writers wait in ``busy_timeout``; WAL readers keep reading the last committed state.
Inside one process, one connection guarded by a lock serves every thread (sqlite3
connections must not be used by two threads at once), so in-process writers queue on
the lock instead of spinning in SQLite's busy handler.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Hashable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from memory_core.errors import StorageBusyError, StorageError
from memory_core.storage.common import Clock, ThreadIdFactory, utc_now
from memory_core.storage.schema import Tx
from memory_core.storage.sql_common import Driver
from memory_core.storage.sql_store import SqlStorage


class _SqliteTx:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._conn.execute(sql, tuple(params)).fetchall()

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        return self._conn.execute(sql, tuple(params)).rowcount

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self._conn.executemany(sql, rows)


def _is_busy(e: sqlite3.Error) -> bool:
    text = str(e).lower()
    return "locked" in text or "busy" in text


class _SqliteDriver(Driver):
    lock_row = ""  # BEGIN IMMEDIATE already excludes every other writer
    contains = "instr({col}, ?) > 0"

    def __init__(self, path: str, busy_timeout: float) -> None:
        self.path = path
        self.where = f"SQLite database '{path}'"
        self._lock = threading.RLock()
        self._batch = False  # inside batch(): writes join its transaction
        self._writes = 0  # write transactions of this connection (see change_token)
        try:
            # isolation_level=None: the module never opens transactions behind our back;
            # check_same_thread=False: the lock below makes sharing across threads safe.
            self._conn = sqlite3.connect(path, timeout=busy_timeout, isolation_level=None,
                                         check_same_thread=False)
            self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
            if path != ":memory:":
                self._conn.execute("PRAGMA journal_mode = WAL")
            # NORMAL is durable in WAL mode up to the last checkpointed commit.
            self._conn.execute("PRAGMA synchronous = NORMAL")
        except sqlite3.Error as e:
            raise StorageError(f"opening SQLite database '{path}' failed: {e}") from e

    def _wrap(self, op: str, e: sqlite3.Error) -> StorageError:
        if _is_busy(e):
            return StorageBusyError(
                f"{op} on SQLite database '{self.path}': the database stayed locked by "
                f"another writer: {e}")
        return StorageError(f"{op} on SQLite database '{self.path}' failed: {e}")

    @contextmanager
    def read(self, op: str) -> Iterator[Tx]:
        with self._lock:
            try:
                yield _SqliteTx(self._conn)
            except sqlite3.Error as e:
                raise self._wrap(op, e) from e

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Every write in the block joins one ``BEGIN IMMEDIATE`` transaction (one
        commit); each write inside it is a savepoint, so one that fails leaves nothing
        of itself even if the caller goes on. Other threads wait for the block."""
        with self._lock:
            if self._batch:
                yield
                return
            with self.write("write batch"):
                self._batch = True
                try:
                    yield
                finally:
                    self._batch = False

    @contextmanager
    def write(self, op: str) -> Iterator[Tx]:
        with self._lock:
            if self._batch:
                with self._savepoint(op) as tx:
                    yield tx
                return
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as e:
                raise self._wrap(op, e) from e
            try:
                yield _SqliteTx(self._conn)
                self._conn.execute("COMMIT")
                self._writes += 1
            except BaseException as exc:
                try:
                    if self._conn.in_transaction:
                        self._conn.execute("ROLLBACK")
                except sqlite3.Error:
                    pass  # the original error is the one worth reporting
                if isinstance(exc, sqlite3.Error):
                    raise self._wrap(op, exc) from exc
                raise

    @contextmanager
    def _savepoint(self, op: str) -> Iterator[Tx]:
        try:
            self._conn.execute("SAVEPOINT memwb_write")
            try:
                yield _SqliteTx(self._conn)
            except BaseException:
                self._conn.execute("ROLLBACK TO memwb_write")
                self._conn.execute("RELEASE memwb_write")
                raise
            self._conn.execute("RELEASE memwb_write")
            self._writes += 1  # seen by this connection's reads at once
        except sqlite3.Error as e:
            raise self._wrap(op, e) from e

    def change_token(self) -> Hashable | None:
        """``PRAGMA data_version`` changes when another connection (of any process)
        commits; this connection's own commits are counted here."""
        with self._lock:
            try:
                row = self._conn.execute("PRAGMA data_version").fetchone()
            except sqlite3.Error as e:
                raise self._wrap("change_token", e) from e
            return id(self), self._writes, int(row[0]) if row else -1

    def stream(self, tx: Tx, sql: str, params: Sequence[Any],
               size: int) -> Iterator[Sequence[tuple[Any, ...]]]:
        cursor = self._conn.execute(sql, tuple(params))
        while batch := cursor.fetchmany(size):
            yield batch

    def close(self) -> None:
        with self._lock:
            self._conn.close()


class SQLiteStorage(SqlStorage):
    """Both ports on the SQLite file at ``path`` (or ``":memory:"``); ``clock`` and
    ``ids`` are injectable, ``busy_timeout`` is how long (seconds) a write waits for
    another process's write before raising StorageBusyError."""

    def __init__(self, path: str | Path, *, clock: Clock = utc_now,
                 ids: ThreadIdFactory | None = None, busy_timeout: float = 30.0) -> None:
        self.path = str(path)
        self._open(_SqliteDriver(self.path, busy_timeout), clock, ids)

    def __repr__(self) -> str:
        return f"SQLiteStorage({self.path!r})"
