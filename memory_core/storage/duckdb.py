"""DuckDBStorage: both storage ports on one DuckDB database, in a file or ``:memory:``.

DuckDB is a driver of the shared SQL adapter (memory_core/storage/sql_common.py, one
schema and migration list in schema.py). What is here is only what DuckDB needs or
does better: its file-holding discipline (a file is held only while this process
uses it, so other processes can read it between writes; see docs/storage.md), large
batches inserted from Arrow, a scope's vectors read as one Arrow column, connections
that never load or install extensions, and the move of files written by the older
DuckDB-only schema onto the shared one (memory_core/storage/duckdb_legacy.py).
"""

from __future__ import annotations

import atexit
import os
import random
import threading
import time
from collections.abc import Hashable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from datetime import datetime
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from memory_core.errors import (
    InvalidInputError,
    NotFoundError,
    StorageBusyError,
    StorageError,
)
from memory_core.storage.base import EmbeddingBlock, ScopeRows
from memory_core.storage.common import (
    SEQ_FLOOR_PREFIX,
    Clock,
    ThreadIdFactory,
    message_body,
    utc_now,
    validate_batch,
)
from memory_core.storage.schema import (
    DIM_KEY,
    Dialect,
    Migration,
    apply_migrations,
    check_known,
    recorded_versions,
)
from memory_core.storage.sql_common import (
    MESSAGE_COLUMNS,
    Driver,
    RowsBuilder,
    ScopeScan,
    SqlMemoryStore,
    SqlStorage,
    write_staged,
)
from memory_core.types import AppendRow, ErasureReport

Conn = duckdb.DuckDBPyConnection

MEMORY = ":memory:"
# Every connection: never fetch or load an extension behind the caller's back (a file
# that is not DuckDB's, e.g. SQLite, would otherwise make DuckDB download one).
_CONFIG: dict[str, str | bool | int | float | list[str]] = {
    "autoinstall_known_extensions": False, "autoload_known_extensions": False}
_BATCH_VIEW = "_mc_insert_batch"  # name of the Arrow batch registered for one insert
_SMALL_BATCH = 8
_SCAN_BATCH = 65536  # rows per Arrow record batch of a scope scan
_SCAN_MEMORY = "512MB"  # DuckDB's memory limit while a scope is scanned
# FLOAT[] rather than bytes: DuckDB checkpoints (compresses) large BLOBs slowly
_DIALECT = Dialect(text="VARCHAR", vector="FLOAT[]",
                   serial_pk="BIGINT PRIMARY KEY DEFAULT nextval('journal_pos')",
                   serial_setup=("CREATE SEQUENCE IF NOT EXISTS journal_pos",), indexes=False)


def _is_lock_conflict(e: duckdb.Error) -> bool:
    text = str(e)
    return "Could not set lock" in text or "Conflicting lock" in text


def _refuse_foreign(op: str, path: str) -> None:
    """A file that is not DuckDB's is refused before DuckDB sees it: DuckDB would
    otherwise look for an extension to read it (SQLite), or write into it."""
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except FileNotFoundError:
        return  # a new database
    except OSError as e:
        raise StorageError(f"{op} failed: cannot read '{path}': {e}") from e
    if not head or head[8:12] == b"DUCK":
        return
    kind = " (it is a SQLite database)" if head.startswith(b"SQLite format 3") else ""
    raise StorageError(f"{op} failed: '{path}' is not a valid DuckDB database{kind}; give "
                       "a DuckDB file (or a new path), or open it with the adapter it "
                       "belongs to")


# -- connections -----------------------------------------------------------------------
# A waiting process polls at most every ~30 ms (backoff cap x jitter) and touches the
# file's request flag each time; a holder checks the flag between operations and every
# _ASK_POLL seconds while idle, and hands the file over once it has had it max_hold
# seconds. After such a release the holder waits a gap longer than a waiter's poll
# before reopening, so the waiter gets in.
_POLL_CAP = 0.02
_ASK_POLL = 0.02
_COURTESY_GAP = 0.05
_FLUSH_ROWS = 5000  # deferred appends committed at once when this many are waiting
_WANTS = ".wants"  # suffix of the request flag next to the database file


_WARM = threading.Event()


def _warm_arrow_scans() -> None:
    """DuckDB imports pandas the first time it scans an Arrow table (a second or more);
    a writable storage does that import in the background as it opens, so its first
    commit of deferred appends — which holds the file — does not pay for it."""
    if _WARM.is_set():
        return
    _WARM.set()

    def go() -> None:
        try:
            import pandas  # noqa: F401
        except ImportError:
            pass

    threading.Thread(target=go, daemon=True, name="duckdb-arrow-warmup").start()


def ask_for_file(db_path: str) -> None:
    """Ask the process holding a DuckDB file to hand it over (any opener that found it
    locked calls this before retrying; the holder checks the flag between operations)."""
    _touch(os.path.realpath(db_path) + _WANTS)


def _touch(path: str) -> None:
    """Ask the holder of a database for it: update the flag's modification time."""
    try:
        with open(path, "a"):
            pass
        os.utime(path)
    except OSError:
        pass  # a read-only directory: the holder still releases after linger


def _insert_rows(tx: Any, table: str, columns: Sequence[str],
                 rows: Sequence[Sequence[Any]]) -> None:
    """Few rows as bound parameters; a larger batch as one registered Arrow table
    (registering costs ~6 ms, a bound row ~0.7 ms)."""
    if len(rows) <= _SMALL_BATCH:
        tx.executemany(f"INSERT INTO {table} ({', '.join(columns)})"
                       f" VALUES ({', '.join('?' * len(columns))})",
                       [[v.tolist() if isinstance(v, np.ndarray) else v for v in r]
                        for r in rows])
        return
    conn: Conn = tx.conn
    arrays = {}
    select = []
    for i, c in enumerate(columns):
        col = [r[i] for r in rows]
        if any(isinstance(v, np.ndarray) for v in col):
            arrays[c] = _vector_column(col)
            select.append(f"{c}::FLOAT[]")
        else:
            arrays[c] = pa.array(col)
            select.append(c)
    conn.register(_BATCH_VIEW, pa.table(arrays))
    try:
        conn.execute(f"INSERT INTO {table} ({', '.join(columns)})"
                     f" SELECT {', '.join(select)} FROM {_BATCH_VIEW}")
    finally:
        conn.unregister(_BATCH_VIEW)


class _Handle:
    """Process-wide state of one database: the lock that serialises its operations
    across Python threads, the connection held by open sessions (or forever, for
    ``:memory:``), the lingering connection between operations, the connection of the
    operation in progress (so nested operations join its transaction), and the
    appended messages waiting to be committed (with what the appends need to know:
    each touched thread's resource and highest seq, the store's vector dimension —
    valid only while this process holds the file read-write)."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.wants = None if path is None else path + _WANTS
        self.lock = threading.RLock()
        self.wake = threading.Condition(self.lock)
        self.held: Conn | None = None
        self.held_read_only = False
        self.holds = 0
        self.idle: Conn | None = None
        self.idle_read_only = False
        self.opened_at = 0.0
        self.opened_ns = 0
        self.last_used = 0.0
        self.linger = 0.0
        self.max_hold = 0.0
        self.reopen_after = 0.0
        self.closer: threading.Thread | None = None
        self.active: Conn | None = None
        self.active_read_only = False
        self.active_write = False
        self.commit_delay = 0.0
        self.pending: list[tuple[Any, ...]] = []
        self.pending_dim: int | None = None
        self.pending_since = 0.0
        self.flush_error: StorageError | None = None
        self.threads: dict[str, list[Any]] = {}
        self.dim: int | None = None
        self.dim_known = False
        # bumped by every write of this process and every connection it opens: while
        # it holds a connection, no other process can write (see change_token)
        self.changes = 0
        if path is None:
            self.held = duckdb.connect(MEMORY, config=_CONFIG)

    def forget(self) -> None:
        """Drop what deferred appends cached about the database (another write of this
        process, or of another process once the file is released, may change it)."""
        self.threads.clear()
        self.dim_known = False
        self.changes += 1

    def change_token(self) -> tuple[int, int] | None:
        """``MemoryStore.change_token``: while this process holds a connection (a
        read-write one excludes every other process, a read-only one every writer),
        only its own writes can change the file, and each bumps ``changes``; so does
        every connection opened (others may have written while the file was free).
        None when no connection is held."""
        with self.lock:
            if self.held is None and self.idle is None:
                return None
            return id(self), self.changes

    def asked(self) -> bool:
        """Whether another process asked for the file since this one opened it."""
        if self.wants is None:
            return False
        try:
            return os.stat(self.wants).st_mtime_ns > self.opened_ns
        except OSError:
            return False

    def flush(self, conn: Conn | None = None) -> None:
        """Commit the deferred appends in one transaction (caller holds the lock), on
        conn or the connection this process holds."""
        if not self.pending:
            return
        conn = conn or (self.held if self.held is not None else self.idle)
        assert conn is not None, "deferred appends outlived their connection"
        rows, self.pending = self.pending, []
        new_dim, self.pending_dim = self.pending_dim, None
        try:
            conn.begin()
            write_staged(_insert_rows, _DuckTx(conn), rows, new_dim)
            conn.commit()
        except duckdb.Error as e:
            try:
                conn.rollback()
            except duckdb.Error:
                pass
            self.forget()
            raise StorageError(f"committing {len(rows)} appended messages failed; they "
                               f"are not stored: {e}") from e

    def close_conn(self, conn: Conn) -> None:
        """Close a connection of this handle, committing deferred appends first."""
        try:
            self.flush(conn)
        finally:
            conn.close()
            self.forget()

    def drop_idle(self, *, forced: bool = False) -> None:
        """Close the lingering connection (caller holds the lock)."""
        if self.idle is not None:
            conn = self.idle
            try:
                self.close_conn(conn)
            finally:
                self.idle = None
                if forced:
                    self.reopen_after = time.monotonic() + _COURTESY_GAP

    def start_closer(self) -> None:
        if self.closer is None:
            self.closer = threading.Thread(target=self._keep, daemon=True,
                                           name=f"duckdb-linger {self.path}")
            self.closer.start()

    def _keep(self) -> None:
        """While a connection lingers or appends wait: commit them after commit_delay,
        release the file when asked for, after linger idle or max_hold held."""
        with self.lock:
            while self.idle is not None or self.pending:
                try:
                    due = self._keep_step(time.monotonic())
                except StorageError as e:
                    self.flush_error = e  # raised by this process's next operation
                    continue
                if due is None:
                    break
                self.wake.wait(timeout=max(0.0, min(due - time.monotonic(), _ASK_POLL)))
            self.closer = None

    def hand_over(self, now: float) -> bool:
        """Whether the lingering connection must go now: another process asked for the
        file and this one has had it for max_hold seconds (its time slice)."""
        return (self.idle is not None and now >= self.opened_at + self.max_hold
                and self.asked())

    def _keep_step(self, now: float) -> float | None:
        """One look by the keeper: what is due now, and when to look again (None: stop)."""
        if self.hand_over(now):
            self.drop_idle(forced=True)
            return None
        if self.pending and now >= self.pending_since + self.commit_delay:
            self.flush()
        due = float("inf")
        if self.idle is not None:
            idle_end = self.last_used + self.linger
            if now >= idle_end:
                self.drop_idle()
                return None
            due = idle_end
        if self.pending:
            due = min(due, self.pending_since + self.commit_delay)
        return due if self.idle is not None or self.pending else None


_HANDLES: dict[str, _Handle] = {}
_HANDLES_LOCK = threading.Lock()


def _file_handle(path: str) -> _Handle:
    with _HANDLES_LOCK:
        h = _HANDLES.get(path)
        if h is None:
            h = _HANDLES[path] = _Handle(path)
        return h


@atexit.register
def _close_lingering() -> None:
    with _HANDLES_LOCK:
        handles = list(_HANDLES.values())
    for h in handles:
        with h.lock:
            try:
                h.flush()
            except StorageError:
                pass  # nothing to report to at exit
            h.drop_idle()


class _Database:
    """One storage's view of a database: opens connections (with retry while another
    process holds the file), runs each operation in one transaction, maps errors."""

    def __init__(self, path: str, *, read_only: bool, lock_timeout: float, linger: float,
                 max_hold: float, commit_delay: float = 0.0) -> None:
        if path == MEMORY:
            if read_only:
                raise InvalidInputError("read_only=True makes no sense for ':memory:'")
            self.handle = _Handle(None)
        else:
            if not path:
                raise InvalidInputError("database path must be ':memory:' or a file path")
            path = os.path.realpath(path)
            if not read_only:
                os.makedirs(os.path.dirname(path), exist_ok=True)
            self.handle = _file_handle(path)
        self.path = path
        self.read_only = read_only
        self.lock_timeout = lock_timeout
        self.linger = linger
        self.max_hold = max_hold
        self.commit_delay = commit_delay
        self.closed = False

    def _connect(self, op: str, read_only: bool) -> Conn:
        assert self.handle.path is not None
        if read_only and not os.path.exists(self.handle.path):
            raise StorageError(f"{op} failed: database file '{self.handle.path}' does not exist")
        _refuse_foreign(op, self.handle.path)
        gap = self.handle.reopen_after - time.monotonic()
        if gap > 0:
            time.sleep(gap)  # this process just held the file for max_hold: let others in
        deadline = time.monotonic() + self.lock_timeout
        delay = 0.002
        while True:
            try:
                conn = duckdb.connect(self.handle.path, read_only=read_only, config=_CONFIG)
                self.handle.opened_ns = time.time_ns()
                self.handle.changes += 1
                return conn
            except duckdb.IOException as e:
                assert self.handle.wants is not None
                _touch(self.handle.wants)  # ask the holder to hand the file over
                if not _is_lock_conflict(e):
                    raise StorageError(f"{op} failed: cannot open '{self.handle.path}': {e}") from e
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise StorageBusyError(
                        f"{op} failed: database file '{self.handle.path}' is held by another "
                        f"process and was not released within {self.lock_timeout:g}s "
                        f"(raise lock_timeout, or end that process's session): {e}") from e
                # jitter keeps two waiting processes from retrying in lock-step
                time.sleep(min(remaining, delay * random.uniform(0.5, 1.5)))
                delay = min(delay * 2, _POLL_CAP)
            except duckdb.Error as e:
                raise StorageError(f"{op} failed: cannot open '{self.handle.path}': {e}") from e

    def _check_open(self, op: str, write: bool) -> None:
        if self.closed:
            raise StorageError(f"{op} failed: the storage is closed")
        if write and self.read_only:
            raise StorageError(f"{op} refused: storage on '{self.path}' was opened read_only")

    def _connection(self, op: str, write: bool) -> tuple[Conn, bool]:
        """The connection for an operation (caller holds the lock): the session's, the
        lingering one while it is young enough and not asked for by another process,
        or a new one that will linger. A failed background commit is raised here."""
        h = self.handle
        if h.flush_error is not None:
            err, h.flush_error = h.flush_error, None
            raise err
        if h.hand_over(time.monotonic()):
            h.drop_idle(forced=True)  # another process waits for the file: hand it over
        if h.held is not None:
            if h.held_read_only and write:
                # a read-only session of this process is upgraded so the write can run
                h.held.close()
                h.held = self._connect(op, read_only=False)
                h.held_read_only = False
            return h.held, h.held_read_only
        if h.idle is not None:
            if write and h.idle_read_only:
                h.drop_idle()
            else:
                return h.idle, h.idle_read_only
        h.idle = self._connect(op, read_only=self.read_only)
        h.idle_read_only = self.read_only
        h.opened_at = time.monotonic()
        return h.idle, h.idle_read_only

    @contextmanager
    def transaction(self, op: str, *, write: bool) -> Iterator[Conn]:
        """Run the body in one transaction; a call made from inside another operation
        of the same database joins its transaction."""
        self._check_open(op, write)
        h = self.handle
        with h.lock:
            if h.active is not None:
                if write and (h.active_read_only or not h.active_write):
                    raise StorageError(f"{op} refused: the enclosing operation is read-only")
                yield h.active
                return
            conn, ro = self._connection(op, write)
            h.flush()  # deferred appends first: the operation sees them, in order
            h.active, h.active_read_only, h.active_write = conn, ro, write
            try:
                if not write:
                    # A read needs no transaction of its own: while this process has
                    # the file and the lock, nothing else can write (a read-write
                    # holder excludes other processes, a read-only one all writers),
                    # and a DuckDB commit, even of a read, costs ~1 ms.
                    yield conn
                    return
                try:
                    conn.begin()
                    yield conn
                    conn.commit()
                except BaseException:
                    try:
                        conn.rollback()
                    except duckdb.Error:
                        pass  # no transaction left to roll back; keep the first error
                    raise
            except duckdb.Error as e:
                raise StorageError(f"{op} failed: {e}") from e
            finally:
                h.active = None
                if write:
                    h.forget()  # it may have changed a thread row or the dimension
                self.used(conn)

    def used(self, conn: Conn) -> None:
        """After an operation on conn (caller holds the lock): let a lingering
        connection linger, and have deferred appends committed in time."""
        h = self.handle
        h.commit_delay = self.commit_delay
        if conn is h.idle:
            h.last_used = time.monotonic()
            h.linger, h.max_hold = self.linger, self.max_hold
            if self.linger <= 0:
                h.drop_idle()
                return
        if h.idle is not None or h.pending:
            h.start_closer()
            h.wake.notify_all()

    def writer(self, op: str) -> Conn | None:
        """The read-write connection for a deferred append (caller holds the lock), or
        None when the append must run as its own transaction: inside another operation
        (it joins it), on ``:memory:`` or a read-only storage, or with commit_delay 0."""
        h = self.handle
        self._check_open(op, True)
        if h.active is not None or h.path is None or self.commit_delay <= 0:
            return None
        conn, _ = self._connection(op, write=True)
        h.changes += 1  # an append is deferred on it: visible to this process's reads
        return conn

    @contextmanager
    def session(self) -> Iterator[None]:
        """Hold one connection for every operation in the block (this process's other
        threads share it); other processes wait until the block ends."""
        self._check_open("session", False)
        h = self.handle
        if h.path is None:
            yield
            return
        with h.lock:
            if h.held is None:
                if h.idle is not None and (h.idle_read_only or not self.read_only):
                    h.held, h.held_read_only, h.idle = h.idle, h.idle_read_only, None
                else:
                    h.drop_idle()
                    h.held = self._connect("session", read_only=self.read_only)
                    h.held_read_only = self.read_only
            h.holds += 1
        try:
            yield
        finally:
            with h.lock:
                h.holds -= 1
                if h.holds == 0 and h.held is not None:
                    conn, h.held = h.held, None
                    h.close_conn(conn)

    def rewrite_file(self, op: str) -> None:
        """Copy the database into a fresh file and put it in place of the old one:
        DuckDB does not zero freed blocks, so after an erasure the erased text would
        otherwise stay in the file's bytes. Runs between operations of this process,
        holding the file; a session's connection is reopened afterwards."""
        h = self.handle
        if h.path is None:
            return
        with h.lock:
            if h.active is not None:
                raise StorageError(f"{op} failed: cannot rewrite the file inside an operation")
            h.flush()
            session = h.held is not None
            if session:
                assert h.held is not None
                h.held.close()
                h.held = None
            h.drop_idle()
            h.forget()
            fresh = f"{h.path}.rewrite"
            for leftover in (fresh, fresh + ".wal"):
                if os.path.exists(leftover):
                    os.remove(leftover)
            conn = self._connect(op, read_only=False)
            try:
                conn.execute("CHECKPOINT")
                name = conn.execute("SELECT current_database()").fetchone()
                conn.execute("ATTACH ? AS memwb_fresh", [fresh])
                conn.execute(f'COPY FROM DATABASE "{name[0] if name else "main"}" TO memwb_fresh')
                conn.execute("DETACH memwb_fresh")
            except duckdb.Error as e:
                conn.close()
                raise StorageError(f"{op} failed: rewriting '{h.path}': {e}") from e
            conn.close()
            os.replace(fresh, h.path)
            if os.path.exists(h.path + ".wal"):
                os.remove(h.path + ".wal")
            if session:
                h.held = self._connect(op, read_only=h.held_read_only)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        with self.handle.lock:
            if self.handle.path is None:
                if self.handle.held is not None:
                    self.handle.held.close()
                    self.handle.held = None
            elif self.handle.active is None:
                self.handle.drop_idle()


# -- the driver ----------------------------------------------------------------------------
class _DuckTx:
    """A transaction of the shared SQL on one DuckDB connection. Every result is read
    to the end: DuckDB 2 refuses new work on a connection with an unread result."""

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


def _arrow(conn: Conn, sql: str, params: list[Any]) -> pa.Table:
    rel = conn.sql(sql, params=params)
    to_table = getattr(rel, "to_arrow_table", None) or rel.arrow  # duckdb 2.x / 1.x
    return to_table()


def _vector_column(values: Sequence[Any]) -> pa.Array:
    """float32 vectors (or None) as one Arrow fixed-size list column, built from one
    concatenated buffer instead of per-float Python objects."""
    present = [v for v in values if v is not None]
    if not present:
        return pa.nulls(len(values), pa.list_(pa.float32()))
    dim = int(present[0].shape[0])
    zero = np.zeros(dim, np.float32)
    flat = np.concatenate([zero if v is None else v for v in values])
    mask = pa.array([v is None for v in values]) if len(present) < len(values) else None
    return pa.FixedSizeListArray.from_arrays(pa.array(flat), dim, mask=mask)


@contextmanager
def _cache_capped(conn: Conn) -> Iterator[None]:
    """DuckDB's memory limit lowered for a whole-scope scan, so that the blocks it
    reads are dropped as it goes instead of staying cached beside the matrix they
    fill (a million vectors would otherwise be held twice); restored after."""
    was = conn.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
    conn.execute(f"SET memory_limit = '{_SCAN_MEMORY}'")
    conn.execute("SET enable_progress_bar = false")  # a long scan prints none
    try:
        yield
    finally:
        conn.execute(f"SET memory_limit = '{was}'")


class _DuckDriver(Driver):
    dialect = _DIALECT
    lock_row = ""  # one process holds the file read-write; _Database serialises its threads
    contains = "contains({col}, ?)"

    def __init__(self, db: _Database) -> None:
        self.db = db
        self.where = f"DuckDB database '{db.path}'"

    @contextmanager
    def read(self, op: str) -> Iterator[_DuckTx]:
        with self.db.transaction(op, write=False) as conn:
            yield _DuckTx(conn)

    @contextmanager
    def write(self, op: str) -> Iterator[_DuckTx]:
        with self.db.transaction(op, write=True) as conn:
            yield _DuckTx(conn)

    def close(self) -> None:
        self.db.close()

    def migrate(self, migrations: Sequence[Migration], now: datetime) -> None:
        from memory_core.storage import duckdb_legacy

        with self.db.transaction("setup", write=not self.db.read_only) as conn:
            tx = _DuckTx(conn)
            legacy = duckdb_legacy.is_legacy(tx)
            if self.db.read_only:
                self._check_current(tx, legacy, migrations)
                return
            if legacy:
                duckdb_legacy.convert(tx, self, migrations, now)
            else:
                apply_migrations(tx, self.dialect, migrations, now, self.where)

    def _check_current(self, tx: _DuckTx, legacy: bool,
                       migrations: Sequence[Migration]) -> None:
        """A read-only storage cannot migrate: it opens only a current database."""
        tables = {r[0] for r in tx.query("SELECT table_name FROM information_schema.tables")}
        if "schema_migrations" not in tables:
            raise StorageError(f"setup failed: '{self.db.path}' holds no memory_core schema; "
                               "open it once without read_only to create it")
        versions = set() if legacy else recorded_versions(tx)
        check_known(versions, migrations, self.where)
        if versions != {m.version for m in migrations}:
            raise StorageError(
                f"setup failed: '{self.db.path}' has an older memory_core schema; open it "
                "once without read_only to migrate it")

    def insert_rows(self, tx: Any, table: str, columns: Sequence[str],
                    rows: Sequence[Sequence[Any]]) -> None:
        _insert_rows(tx, table, columns, rows)

    def vector_param(self, v: np.ndarray) -> Any:
        return np.ascontiguousarray(v, dtype=np.float32)

    def read_vectors(self, tx: Any, thread_ids: Sequence[str], after: Sequence[int],
                     dim: int) -> EmbeddingBlock | None:
        table = _arrow(tx.conn,
                       "SELECT m.thread_id, m.seq, m.embedding FROM messages m JOIN "
                       "(SELECT unnest(?::VARCHAR[]) AS tid, unnest(?::BIGINT[]) AS lo) f "
                       "ON m.thread_id = f.tid AND m.seq > f.lo "
                       "WHERE m.embedding IS NOT NULL ORDER BY m.thread_id, m.seq",
                       [list(thread_ids), [int(x) for x in after]])
        n = table.num_rows
        if n == 0:
            return EmbeddingBlock(np.array([], dtype=object), np.zeros(0, np.int64),
                                  np.zeros((0, dim), np.float32))
        flat = table.column("embedding").combine_chunks().flatten()
        matrix = flat.to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
        return EmbeddingBlock(
            np.array(table.column("thread_id").to_pylist(), dtype=object),
            table.column("seq").to_numpy().astype(np.int64, copy=False),
            matrix.reshape(n, dim))


    def scan_scope(self, tx: Any, scan: ScopeScan) -> ScopeRows | None:
        """One Arrow scan streamed in record batches into arrays allocated once from
        a count (the vectors are never held twice, nor as Python objects)."""
        conn: Conn = tx.conn
        src = ("FROM messages m JOIN (SELECT unnest(?::VARCHAR[]) AS tid, "
               "unnest(?::BIGINT[]) AS lo, unnest(?::INTEGER[]) AS pos) f "
               "ON m.thread_id = f.tid AND m.seq > f.lo")
        params = [list(scan.threads), list(scan.after), list(range(len(scan.threads)))]
        counted = conn.execute(f"SELECT count(*) {src}", params).fetchall()[0]
        out = RowsBuilder(scan, int(counted[0]) if counted else 0)
        rel = conn.sql(f"SELECT f.pos, m.rowid AS locator, {scan.columns()} {src}",
                       params=params)
        # (a file's blocks can be dropped and read again; ``:memory:`` data cannot; an
        # incremental scan of a few rows keeps the cache: lowering the limit evicts it)
        big = out.n_planned > _SCAN_BATCH and self.db.handle.path is not None
        with _cache_capped(conn) if big else nullcontext():
            self._fill(rel.to_arrow_reader(_SCAN_BATCH), scan, out)
        return out.done()

    @staticmethod
    def _fill(reader: Any, scan: ScopeScan, out: RowsBuilder) -> None:
        for batch in reader:
            vectors = has_vec = None
            if scan.vectors and scan.dim:
                col = batch.column("embedding")
                has_vec = col.is_valid().to_numpy(zero_copy_only=False)
                flat = col.flatten().to_numpy(zero_copy_only=False)
                vectors = flat.astype(np.float32, copy=False).reshape(-1, scan.dim)
            out.locate(out.n, batch.column("locator").to_numpy())
            out.add(batch.column("pos").to_numpy(), batch.column("seq").to_numpy(),
                    batch.column("created_us").to_numpy(), vectors, has_vec,
                    batch.column("text_lower") if scan.texts else None,
                    batch.column("body").to_pylist() if scan.metadata else None)


    def change_token(self) -> Hashable | None:
        return self.db.handle.change_token()

    def fetch_located(self, tx: Any, refs: Sequence[tuple[str, int]],
                      locators: Sequence[int]) -> list[tuple[Any, ...]]:
        """Reads by rowid in one query, the rowids passed as one list parameter (DuckDB
        then fetches just those rows: ~1 ms where an ``IN (?, ...)`` list or a join on
        (thread_id, seq) scans the table's row groups), each row kept only if it is
        still its ref's."""
        want = {int(loc): (str(t), int(s)) for (t, s), loc in zip(refs, locators, strict=True)
                if loc >= 0}
        if not want:
            return []
        rows = tx.query(f"SELECT rowid, {MESSAGE_COLUMNS} FROM messages WHERE rowid IN"
                        " (SELECT unnest(?::BIGINT[]))", [sorted(want)])
        return [r[1:] for r in rows if want.get(int(r[0])) == (r[1], int(r[2]))]


class _DuckMemoryStore(SqlMemoryStore):
    """The shared SQL store, with appends deferred while this process holds the file:
    a DuckDB commit costs milliseconds, so appends of new messages (no explicit seqs)
    are checked, given their seqs and kept in memory, then committed together — after
    ``commit_delay`` seconds, before any other operation of this process, when another
    process asks for the file, and when the storage closes. The seqs come from the
    thread's row read once while the file is held (no other process can write then)."""

    duck: _Database

    def append_messages(self, thread_id: str, rows: Sequence[AppendRow]) -> list[int]:
        rows = list(rows)
        explicit, _ = validate_batch(thread_id, rows, None)
        h = self.duck.handle
        if not rows or explicit:
            return super().append_messages(thread_id, rows)
        # JSON and time checks first, as every adapter does
        bodies = [message_body(thread_id, i, r) for i, r in enumerate(rows)]
        has_vec = any(r.embedding is not None for r in rows)
        with h.lock:
            conn = self.duck.writer("append_messages")
            if conn is None:
                return super().append_messages(thread_id, rows)
            try:
                state = self._thread_state(conn, thread_id)
                dim = self._dim(conn) if has_vec else None
            except duckdb.Error as e:
                raise StorageError(f"append_messages failed: {e}") from e
            _, batch_dim = validate_batch(thread_id, rows, dim)
            top = int(state[1])
            seqs = list(range(top + 1, top + 1 + len(rows)))
            staged = [self.staged_row(thread_id, seq, state[0], body, r)
                      for seq, body, r in zip(seqs, bodies, rows, strict=True)]
            if has_vec and dim is None:
                h.dim = h.pending_dim = batch_dim
            state[1] = seqs[-1]
            if not h.pending:
                h.pending_since = time.monotonic()
            h.pending.extend(staged)
            if len(h.pending) >= _FLUSH_ROWS:
                h.flush()
            self.duck.used(conn)
            return seqs

    def _thread_state(self, conn: Conn, thread_id: str) -> list[Any]:
        """[resource_id, highest seq incl. waiting appends] of a thread, read once."""
        h = self.duck.handle
        state = h.threads.get(thread_id)
        if state is None:
            found = conn.execute(
                "SELECT resource_id, max_seq, (SELECT value FROM meta WHERE key = ?)"
                " FROM threads WHERE id = ?",
                [f"{SEQ_FLOOR_PREFIX}{thread_id}", thread_id]).fetchall()
            if not found:
                raise NotFoundError(f"thread '{thread_id}' does not exist")
            floor = int(found[0][2]) if found[0][2] is not None else -1
            # a truncated thread's removed seqs are never given again (SPEC §2.7)
            state = h.threads[thread_id] = [found[0][0], max(int(found[0][1]), floor)]
        return state

    def _dim(self, conn: Conn) -> int | None:
        h = self.duck.handle
        if not h.dim_known:
            rows = conn.execute("SELECT value FROM meta WHERE key = ?", [DIM_KEY]).fetchall()
            h.dim = int(rows[0][0]) if rows and rows[0][0] is not None else None
            h.dim_known = True
        return h.dim


# -- the adapter ---------------------------------------------------------------------------
class DuckDBStorage(SqlStorage):
    """Both ports on a DuckDB database file (or ``":memory:"``).

    Example:
        >>> s = DuckDBStorage(":memory:")
        >>> s.memory.create_thread("t1", resource_id="u1").id
        't1'

    DuckDB lets one process hold a file, so a file is only held while this process
    uses it: a connection opened for an operation lingers for the next ones and is
    closed after ``linger`` seconds without use, or after ``max_hold`` seconds of
    continuous use (then a short gap lets a waiting process in). ``with
    storage.session():`` holds it across a batch regardless. ``read_only=True`` opens
    the file read-only and refuses writes. Waiting for another process gives up after
    ``lock_timeout`` seconds with StorageBusyError. See docs/storage.md.
    """

    def __init__(self, path: str | os.PathLike[str], *, clock: Clock = utc_now,
                 ids: ThreadIdFactory | None = None, lock_timeout: float = 30.0,
                 read_only: bool = False, linger: float = 2.0,
                 max_hold: float = 0.25, commit_delay: float = 0.1) -> None:
        for name, value in (("lock_timeout", lock_timeout), ("linger", linger),
                            ("max_hold", max_hold), ("commit_delay", commit_delay)):
            if not value >= 0:
                raise InvalidInputError(f"{name} must be a number >= 0, got {value!r}")
        self._duck = _Database(os.fspath(path), read_only=read_only, lock_timeout=lock_timeout,
                               linger=linger, max_hold=max_hold, commit_delay=commit_delay)
        self.path = self._duck.path
        self.read_only = read_only
        if not read_only and commit_delay > 0 and self.path != MEMORY:
            _warm_arrow_scans()
        self._open(_DuckDriver(self._duck), clock, ids, memory=_DuckMemoryStore)
        assert isinstance(self.memory, _DuckMemoryStore)
        self.memory.duck = self._duck

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

    @contextmanager
    def session(self) -> Iterator[None]:
        """Hold the file for every operation in the block, with no max_hold release
        (a demo build, an import); other processes wait until it ends."""
        with self._duck.session():
            yield

    @contextmanager
    def write_batch(self) -> Iterator[None]:
        """Every write in the block joins one transaction: one commit instead of one per
        write (an import writes tens of thousands of journal records)."""
        with self._duck.transaction("write batch", write=True):
            yield

    def erase_thread(self, thread_id: str) -> ErasureReport:
        """One transaction, then the file is rewritten so no byte of the erased text
        stays in it (DuckDB keeps freed blocks as they were)."""
        with self._duck.transaction(f"erase_thread '{thread_id}'", write=True):
            report = super().erase_thread(thread_id)
        self._duck.rewrite_file(f"erase_thread '{thread_id}'")
        return report

    def erase_resource(self, resource_id: str) -> ErasureReport:
        with self._duck.transaction(f"erase_resource '{resource_id}'", write=True):
            report = super().erase_resource(resource_id)
        self._duck.rewrite_file(f"erase_resource '{resource_id}'")
        return report


__all__ = ["DuckDBStorage", "ask_for_file"]
