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
import builtins
import copy
import itertools
import math
import os
import random
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager, nullcontext, suppress
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from memory_core.errors import (
    InvalidInputError,
    NotFoundError,
    SchemaOutdatedError,
    StorageBusyError,
    StorageError,
)
from memory_core.storage.base import EmbeddingBlock, MessageColumns, ScopeRows, ThreadCounts
from memory_core.storage.common import (
    SEQ_FLOOR_PREFIX,
    Clock,
    ThreadIdFactory,
    decode_json,
    key_group,
    message_bodies,
    require_aware,
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
    JOURNAL_COLS,
    MESSAGE_COLUMNS,
    MSG_COLS,
    RUN_INSERT,
    Driver,
    RowsBuilder,
    ScopeScan,
    SqlMemoryStore,
    SqlRunJournal,
    SqlStorage,
    insert_sql,
    journal_texts,
    row_to_message,
    row_to_run,
    run_values,
    ts_text,
    update_counts,
    write_staged,
)
from memory_core.storage.staging import MESSAGE_INSERT, StagedMessages, stage_messages
from memory_core.storage.url import head_kind
from memory_core.types import (
    AppendRow,
    ErasureReport,
    RunRecord,
    RunStatus,
    StoredMessage,
    Thread,
)

Conn = duckdb.DuckDBPyConnection

MEMORY = ":memory:"
# Every connection: never fetch or load an extension behind the caller's back (a file
# that is not DuckDB's, e.g. SQLite, would otherwise make DuckDB download one).
_CONFIG: dict[str, str | bool | int | float | list[str]] = {
    "autoinstall_known_extensions": False, "autoload_known_extensions": False}
_BATCH_VIEW = "_mc_insert_batch"  # name of the Arrow batch registered for one insert
_SMALL_BATCH = 8
_SCAN_BATCH = 65536  # rows per Arrow record batch of a scope scan
_SMALL_SCAN = 64  # an incremental scan of at most this many rows: one plain query
# the Arrow types of a scope scan's columns read as Python rows (the rest are strings)
_SCAN_TYPES = {"pos": pa.int32(), "locator": pa.int64(), "seq": pa.int64(),
               "created_us": pa.int64(), "embedding": pa.list_(pa.float32())}
# a row's created_at offset for ScopeRows.zones: null for UTC (the time is then exactly
# created_us), else what follows the seconds and their fraction ("" when none)
_ZONE_SCAN = ("CASE WHEN suffix(m.created_at, '+00:00') THEN NULL"
              " ELSE ltrim(m.created_at[20:], '.0123456789') END")
# ScopeRows.messages; a body longer than {cap} bytes comes as null (read when needed),
# so that no batch of long bodies is ever held whole
_MESSAGE_SCAN = (", CASE WHEN strlen(m.body) <= {cap} THEN m.body END AS body_json,"
                 " m.resource_id, m.run_id")
_BODY_CAP = 4096  # the least of that cap: 4x a row's share of the budget, or this
_SCAN_MEMORY = "512MB"  # DuckDB's memory limit while a scope is scanned
# FLOAT[] rather than bytes: DuckDB checkpoints (compresses) large BLOBs slowly. Stored
# uncompressed: a checkpoint compressing 384 floats a row took half of DuckDB's whole
# time storing a batch and saved ~4% of the file (embeddings' low bits are noise), and
# a hit row's vector is read without decompressing its whole column segment. Files
# made before keep their compressed column (DuckDB cannot change it in place).
_DIALECT = Dialect(text="VARCHAR", vector="FLOAT[] USING COMPRESSION uncompressed",
                   serial_pk="BIGINT PRIMARY KEY DEFAULT nextval('journal_pos')",
                   serial_setup=("CREATE SEQUENCE IF NOT EXISTS journal_pos",), indexes=False)


def _is_lock_conflict(e: duckdb.Error) -> bool:
    text = str(e)
    return "Could not set lock" in text or "Conflicting lock" in text


def _refuse_foreign(op: str, path: str) -> None:
    """A file that is not DuckDB's is refused before DuckDB sees it: DuckDB would
    otherwise look for an extension to read it (SQLite), or write into it."""
    try:
        kind = head_kind(path)
        if kind is None and os.path.getsize(path) == 0:
            return  # an empty file: DuckDB makes it a new database
    except FileNotFoundError:
        return  # a new database
    except OSError as e:
        raise StorageError(f"{op} failed: cannot read '{path}': {e}") from e
    if kind == "duckdb":
        return
    what = " (it is a SQLite database)" if kind == "sqlite" else ""
    raise StorageError(f"{op} failed: '{path}' is not a valid DuckDB database{what}; give "
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
_KNOWN_PREFIXES = 256  # journal prefixes (runs) whose stored keys a writer keeps
_FLUSH_ROWS = 5000  # deferred appends committed at once when this many are waiting
_DEFER_RECORDS = 64  # a deferred group's put of more journal records is written at once
_RECENT_ROWS = 32  # rows of a thread a writer keeps after committing them (for recall)
_READER_SLICE = 0.5  # a lender lets a reader work this long before asking the file back
_CHECKPOINT = "4MB"  # WAL size at which a commit checkpoints (DuckDB's default: 16MB)
# A commit holding a batch append of _BULK_ROWS rows or more checkpoints only past
# _BULK_CHECKPOINT of WAL: every checkpoint rewrites the table's last, partly filled
# row group (122,880 rows), so checkpointing every few MB during an ingest cost DuckDB
# 2-3x the work (and a file twice the size) of one checkpoint per row group or so.
_BULK_ROWS = 1000
_BULK_CHECKPOINT = "256MB"
_WANTS = ".wants"  # suffix of the request flag next to the database file
_WANTS_WRITE = ".wants-write"  # touched as well by an asker that will write
# A writer lends the file to a reader that asked: it writes this claim next to the file
# (its pid) and keeps giving seqs to appends from what it knows while the reader has
# the file; another writer that gets the file meanwhile gives it back until the lender
# has taken it back and committed them (so no one else assigns those seqs).
_LEASE = ".lease"
# A process rewriting the file (after an erasure) writes this next to it (its pid) from
# before it lets the old file go until the fresh copy is in its place: a process that
# opens the file meanwhile closes it again and waits (else it could write into the old
# file, which is then replaced: its writes lost, its WAL left beside the new file).
_REWRITING = ".rewriting"


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


def retry_delays() -> Iterator[float]:
    """The waits between tries at a file another process holds: from 2 ms, doubling up
    to _POLL_CAP, jittered so two waiting processes do not retry in lock-step. A holder
    that hands the file over keeps off it for _COURTESY_GAP, longer than any of these
    waits, so a waiter that asked always gets a try while the file is free."""
    delay = 0.002
    while True:
        yield delay * random.uniform(0.5, 1.5)
        delay = min(delay * 2, _POLL_CAP)


def _lender(path: str) -> int | None:
    """The pid of another live process that lent the file to a reader and takes it
    back first (its appends wait with seqs given), or None."""
    return _claimant(path + _LEASE)


def _rewriter(path: str) -> int | None:
    """The pid of another live process putting a rewritten copy in place of the file
    (``_Database.rewrite_file``), or None."""
    return _claimant(path + _REWRITING)


def _inode(path: str) -> int | None:
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


def _claimant(flag: str) -> int | None:
    """The pid written in ``flag`` when it is another live process's, else None."""
    try:
        with open(flag) as f:
            pid = int(f.read() or 0)
    except (OSError, ValueError):
        return None
    if pid <= 0 or pid == os.getpid():
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None  # a lender that died: its waiting appends died with it
    except PermissionError:
        pass
    return pid


def _write_pid(flag: str) -> None:
    """Write this process's pid to ``flag`` at once (whole or not at all)."""
    tmp = f"{flag}.{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(str(os.getpid()))
    os.replace(tmp, flag)


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
    """Few rows as one ``INSERT … VALUES`` of bound parameters; a larger batch as one
    registered Arrow table (registering costs ~1-6 ms, a bound row ~0.1 ms). Not
    ``executemany``: DuckDB runs its statement once a row (~0.7 ms each, so a tool
    call and its result cost twice a single message)."""
    if len(rows) <= _SMALL_BATCH:
        tx.execute(insert_sql(table, columns, len(rows)),
                   [v.tolist() if isinstance(v, np.ndarray) else v for r in rows for v in r])
        return
    arrays = {}
    for i, c in enumerate(columns):
        col = [r[i] for r in rows]
        arrays[c] = _vector_column(col) if any(isinstance(v, np.ndarray) for v in col) \
            else pa.array(col)
    tx.wrote(f"INSERT INTO {table}")
    _insert_table(tx.conn, table, pa.table(arrays))


def _insert_table(conn: Conn, table: str, data: pa.Table) -> None:
    """One ``INSERT … SELECT`` of a registered Arrow table (its columns named as the
    table's; vector columns cast to ``FLOAT[]``)."""
    select = [f"{c}::FLOAT[]" if pa.types.is_fixed_size_list(data.schema.field(c).type)
              or pa.types.is_list(data.schema.field(c).type) else c
              for c in data.column_names]
    conn.register(_BATCH_VIEW, data)
    try:
        conn.execute(f"INSERT INTO {table} ({', '.join(data.column_names)})"
                     f" SELECT {', '.join(select)} FROM {_BATCH_VIEW}")
    finally:
        conn.unregister(_BATCH_VIEW)


def _messages_table(staged: Sequence[StagedMessages]) -> pa.Table:
    """Staged appends as one Arrow table of ``MESSAGE_INSERT`` columns, in order: the
    tables appends built already, joined with the rest built now."""
    parts: list[pa.Table] = []
    for prebuilt, group in itertools.groupby(staged, key=lambda s: s.table is not None):
        run = list(group)
        parts += [s.table for s in run] if prebuilt else [_build_table(run)]
    if len(parts) == 1:
        return parts[0]
    if len({t.schema for t in parts}) > 1:  # vectors in some appends only
        kind = pa.list_(pa.float32())
        parts = [t.set_column(t.schema.get_field_index("embedding"), "embedding",
                              t.column("embedding").cast(kind)) for t in parts]
    return pa.concat_tables(parts)


def _build_table(staged: Sequence[StagedMessages]) -> pa.Table:
    """Staged appends as one Arrow table, built from the staged columns with no work
    per row beyond joining the lists."""
    def joined(column: Callable[[StagedMessages], list[Any]]) -> list[Any]:
        return [v for s in staged for v in column(s)]

    vectors = [v for s in staged
               for v in (s.vectors if s.vectors is not None else [None] * len(s))]
    return pa.table({
        "thread_id": pa.array([s.thread_id for s in staged for _ in range(len(s))],
                              pa.string()),
        "seq": pa.array(joined(lambda s: s.seqs), pa.int64()),
        "resource_id": pa.array([s.resource_id for s in staged for _ in range(len(s))],
                                pa.string()),
        "body": pa.array(joined(lambda s: s.bodies), pa.string()),
        "text_lower": pa.array(joined(lambda s: s.texts), pa.string()),
        "created_at": pa.array(joined(lambda s: s.created_at), pa.string()),
        "created_us": pa.array(joined(lambda s: s.created_us), pa.int64()),
        "run_id": pa.array(joined(lambda s: s.run_ids), pa.string()),
        "embedding": _vector_column(vectors)})


def _insert_messages(tx: Any, staged: Sequence[StagedMessages]) -> None:
    """Staged appends in one statement: bound rows when they are few, else one Arrow
    table (every deferred append waiting, or one large batch)."""
    if sum(len(s) for s in staged) <= _SMALL_BATCH:
        _insert_rows(tx, "messages", MESSAGE_INSERT,
                     [row for s in staged for row in s.rows(lambda v: v)])
        return
    tx.wrote("INSERT INTO messages")
    _insert_table(tx.conn, "messages", _messages_table(staged))


def _update_counts(tx: Any, counts: Sequence[tuple[str, int, int]]) -> None:
    """The threads' counters in one ``UPDATE … FROM (VALUES …)`` (a commit of waiting
    appends touches many threads, and DuckDB pays ~0.7 ms a statement)."""
    if len(counts) == 1:
        update_counts(tx, counts)
        return
    tx.execute("UPDATE threads SET message_count = message_count + v.n,"
               " max_seq = CASE WHEN threads.max_seq < v.top THEN v.top"
               " ELSE threads.max_seq END"
               f" FROM (VALUES {', '.join(['(?, ?::BIGINT, ?::BIGINT)'] * len(counts))})"
               " AS v(id, n, top) WHERE threads.id = v.id",
               [x for c in counts for x in c])


def _restore_checkpoint(conn: Conn) -> None:
    """Back to checkpointing in small steps after a bulk commit (the next small commit
    checkpoints what the bulk ones left in the WAL; so does closing the file)."""
    try:
        conn.execute(f"SET checkpoint_threshold = '{_CHECKPOINT}'")
    except duckdb.Error:
        pass  # a connection DuckDB invalidated: it is not used again


class _Tail:
    """What this process knows of a thread while it writes the file (``_Handle.tails``,
    dropped with the other caches by ``forget``): its message count, its highest seq
    ``top`` (the thread row's ``max_seq``), and its stored rows of seqs ``lo``..``top``
    as a read gives them (the columns of ``MSG_COLS``; each caller gets messages made
    anew from them). The thread's appends (waiting, or joined to a write group) add
    their rows, so a composition's count and tail reads, each run, read nothing."""

    __slots__ = ("count", "top", "lo", "want", "rows")

    #: seqs kept beyond the longest tail asked for
    KEEP = 64
    #: the longest tail kept (a composition asks for its window and its input)
    MAX = 1024

    def __init__(self, count: int, top: int) -> None:
        self.count, self.top, self.lo, self.want = count, top, top + 1, 0
        self.rows: list[tuple[Any, ...]] = []

    def covers(self, n: int) -> bool:
        # (no seq is below 0: a thread this process made, or read whole, is covered)
        return max(self.top - n + 1, 0) >= self.lo

    def tail(self, n: int) -> list[tuple[Any, ...]]:
        first = self.top - n + 1
        return [r for r in self.rows if r[1] >= first]

    def fill(self, n: int, rows: list[tuple[Any, ...]]) -> None:
        """The rows a read found for the last ``n`` seqs."""
        self.lo, self.rows, self.want = self.top - n + 1, rows, max(self.want, n)

    def add(self, staged: StagedMessages) -> None:
        """Rows this process appended (their seqs follow ``top``)."""
        self.count += len(staged)
        self.rows += zip([staged.thread_id] * len(staged), staged.seqs,
                         [staged.resource_id] * len(staged), staged.bodies,
                         staged.created_at, staged.run_ids, strict=True)
        self.top = max(self.top, staged.top())
        floor = self.top - self.want - _Tail.KEEP + 1
        if floor > self.lo:
            self.rows = [r for r in self.rows if r[1] >= floor]
            self.lo = floor


class _Later:
    """Journal records and runs written by deferred write groups
    (``write_batch(durable=False)``), waiting in memory to be committed with the
    deferred appends; this process reads them from here meanwhile. ``undo`` (while a
    group is open) takes back what the group added, should it fail."""

    def __init__(self) -> None:
        #: key -> (stored JSON, group), in the order written
        self.journal: dict[str, tuple[str, str]] = {}
        #: run id -> its row (``RUN_INSERT`` values), for runs not in the file yet
        self.runs: dict[str, list[Any]] = {}
        #: run id -> (status, finished_at, error) for runs already in the file
        self.status: dict[str, tuple[str, str | None, str | None]] = {}
        self.undo: list[Callable[[], None]] | None = None

    def __bool__(self) -> bool:
        return bool(self.journal or self.runs or self.status)

    def __len__(self) -> int:
        return len(self.journal) + len(self.runs) + len(self.status)

    def _undo(self, fn: Callable[[], None]) -> None:
        if self.undo is not None:
            self.undo.append(fn)

    def add_records(self, rows: Sequence[tuple[str, str, str]]) -> None:
        for key, value, grp in rows:
            self.journal[key] = (value, grp)
        keys = [r[0] for r in rows]

        def undo() -> None:
            for k in keys:
                self.journal.pop(k, None)
        self._undo(undo)

    def add_run(self, values: list[Any]) -> None:
        run_id = values[0]
        self.runs[run_id] = values

        def undo() -> None:
            self.runs.pop(run_id, None)
        self._undo(undo)

    def set_status(self, run_id: str, status: str, finished: str | None,
                   error: str | None) -> bool:
        """A waiting run's new status; False when the run is not waiting here (in the
        file, or nowhere: the caller looks)."""
        row = self.runs.get(run_id)
        if row is None:
            return False
        old = row[4], row[6], row[7]
        row[4], row[6], row[7] = status, finished, error

        def undo() -> None:
            row[4], row[6], row[7] = old
        self._undo(undo)
        return True

    def set_stored_status(self, run_id: str, status: str, finished: str | None,
                          error: str | None) -> None:
        """A new status for a run in the file."""
        old = self.status.get(run_id)
        self.status[run_id] = (status, finished, error)

        def undo() -> None:
            if old is None:
                self.status.pop(run_id, None)
            else:
                self.status[run_id] = old
        self._undo(undo)

    def records_under(self, prefix: str) -> list[tuple[str, str]]:
        return [(k, v) for k, (v, _) in self.journal.items() if k.startswith(prefix)]

    def run_row(self, run_id: str, stored: tuple[Any, ...] | None) -> tuple[Any, ...] | None:
        """The run's row as this process sees it, given its row in the file."""
        row = self.runs.get(run_id)
        if row is not None:
            return tuple(row[:8])
        update = self.status.get(run_id)
        if stored is None or update is None:
            return stored
        return (*stored[:4], update[0], stored[5], update[1], update[2])

    def write(self, tx: _DuckTx) -> None:
        """Insert the waiting records and runs and update the statuses, in the caller's
        transaction: one statement a table (and one a status update of a stored run)."""
        if self.journal:
            _insert_rows(tx, "journal", JOURNAL_COLS,
                         [(k, v, g) for k, (v, g) in self.journal.items()])
        if self.runs:
            _insert_rows(tx, "runs", RUN_INSERT, list(self.runs.values()))
        for run_id, (status, finished, error) in self.status.items():
            tx.execute("UPDATE runs SET status = ?, finished_at = ?, error = ?"
                       " WHERE run_id = ?", (status, finished, error, run_id), noted=True)


@dataclass
class _Group:
    """An open deferred write group: where the waiting appends stood when it began,
    and its connection once it turned into a transaction (``upgraded``)."""

    conn: Conn
    appends: int
    rows: int
    dim: int | None
    upgraded: bool = False


class _Lock:
    """The lock of a ``_Handle`` (re-entrant), serialising its operations across Python
    threads. Taking it also waits while another thread's deferred group is open
    (``owner``): a group holds the lock all through, but for its waits for the
    keeper's commit in flight (``settle``), which let the lock go; another thread's
    operation must not run inside the group meanwhile (its writes would be taken for
    the group's, undone with it, or commit part of it). ``acquire``/``release``: the
    lock alone (the keeper's return from its commit, which such a group waits for)."""

    def __init__(self) -> None:
        self.rlock = threading.RLock()
        self.wake = threading.Condition(self.rlock)
        self.owner: int | None = None  # the thread whose deferred group is open

    def others(self) -> bool:
        """Whether another thread's deferred group is open (caller holds the lock)."""
        return self.owner is not None and self.owner != threading.get_ident()

    def __enter__(self) -> None:
        self.rlock.acquire()
        try:
            while self.others():
                self.wake.wait()
        except BaseException:
            self.rlock.release()
            raise

    def __exit__(self, *exc: object) -> None:
        self.rlock.release()

    def acquire(self, blocking: bool = True) -> bool:
        return self.rlock.acquire(blocking)

    def release(self) -> None:
        self.rlock.release()


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
        self.away = False  # the file is lent to a reader; appends wait with seqs given
        # DuckDB opened the file once already: it is not looked at again (reading its
        # first bytes opens and closes it, and any close of the file drops the lock a
        # DuckDB instance of this process may still hold on it)
        self.known = False
        self.flushing = False  # the keeper commits deferred appends without the lock
        self.stale = False  # the write in progress touched more than journal and runs
        self.stale_keys = False  # ... in ways that may change which of their keys exist
        self.opener: _Database | None = None  # reopens the file for waiting appends
        self.lock = _Lock()
        self.wake = self.lock.wake
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
        self.pending: list[StagedMessages] = []
        self.pending_rows = 0
        self.pending_dim: int | None = None
        self.pending_since = 0.0
        #: journal records and runs of deferred write groups (``_Later``)
        self.later = _Later()
        #: the waiting writes the keeper is committing now, without the lock
        #: (``flush``): this process's reads count them as waiting until it is done
        self.inflight: list[StagedMessages] = []
        self.inflight_later = _Later()
        #: the deferred write group open now (the lock is held all through it)
        self.group: _Group | None = None
        #: a read in progress adds the waiting appends itself (``_unflushed``): said
        #: for the thread reading only, as a wait of that read for the keeper's
        #: commit in flight (``settle``) lets other threads' operations in
        self.mine = threading.local()
        #: scope_counts answers as the file has them (without the waiting appends):
        #: each scope's threads, and each thread's counts, kept while this process
        #: writes the file and brought up to date by the rows it commits (``filed``)
        self.scopes: dict[tuple[str, str | None], tuple[str, ...]] = {}
        self.filed_counts: dict[str, ThreadCounts] = {}
        #: the store's in-place rewrites (``ThreadCounts.edits``) as last read
        self.edits: int | None = None
        #: each thread's last rows this process committed (at most _RECENT_ROWS a
        #: thread, in seq order): a recall's next look at the thread takes them from
        #: here instead of scanning the file
        self.recent: dict[str, list[StagedMessages]] = {}
        self.flush_error: StorageError | None = None
        self.threads: dict[str, list[Any]] = {}
        self.dim: int | None = None
        self.dim_known = False
        #: thread rows read while this process writes the file (``writing``)
        self.rows: dict[str, Thread] = {}
        #: working memory values (their stored JSON text; None: no such key)
        self.wm: dict[str, str | None] = {}
        #: each thread's count and last messages, kept by its appends (``_Tail``)
        self.tails: dict[str, _Tail] = {}
        #: journal keys stored under a prefix this process listed while writing (a
        #: key's group, ``key_group``: a run's), and run ids it read as absent:
        #: a run's first-write-wins inserts then look nothing up (``stored_of``)
        self.listed: OrderedDict[str, set[str]] = OrderedDict()
        self.no_run: set[str] = set()
        # bumped by every write of this process and every connection it opens: while
        # it holds a connection, no other process can write (see change_token)
        self.changes = 0
        if path is None:
            self.held = duckdb.connect(MEMORY, config=_CONFIG)

    def raise_flush_error(self) -> None:
        """A failed background commit is raised by this process's next operation."""
        if self.flush_error is not None:
            err, self.flush_error = self.flush_error, None
            raise err

    def forget(self, *, keys: bool = True) -> None:
        """Drop what this process cached about the database — each thread's seqs and
        row, the dimension, and (``keys``) which journal keys and run ids are stored —
        (another write of this process, or of another process once the file is
        released, may change it). A write of other tables keeps the keys."""
        self.threads.clear()
        self.rows.clear()
        self.tails.clear()
        self.wm.clear()
        self.scopes.clear()
        self.filed_counts.clear()
        self.edits = None
        self.recent.clear()
        self.dim_known = False
        if keys:
            self.forget_keys()
        self.changes += 1

    def forget_keys(self) -> None:
        """Drop which journal keys and run ids this process knows to be stored (a
        delete or a bulk insert of either table, written past ``note_stored``)."""
        self.listed.clear()
        self.no_run.clear()

    def noted_listing(self, prefix: str, keys: Sequence[str]) -> None:
        """Every journal key under ``prefix``, as a read found them (caller holds the
        lock): kept while this process writes the file, for the last _KNOWN_PREFIXES."""
        if self.writing():
            self.listed[prefix] = set(keys)
            self.listed.move_to_end(prefix)
            while len(self.listed) > _KNOWN_PREFIXES:
                self.listed.popitem(last=False)

    def noted_missing_run(self, run_id: str) -> None:
        """A read found no row for the run (caller holds the lock); not kept for a run
        whose row waits (a read beside a commit in flight may not see it yet)."""
        if self.writing() and all(run_id not in later.runs
                                  for later in self.waiting_later()):
            if len(self.no_run) >= _KNOWN_PREFIXES:
                self.no_run.clear()
            self.no_run.add(run_id)

    def stored_of(self, table: str, keys: Sequence[str]) -> set[str] | None:
        """Which of ``keys`` (journal keys or run ids) are stored, from what this
        process knows while it writes the file; None unless it knows every one."""
        if not self.writing():
            return None
        if table == "runs":
            return set() if all(k in self.no_run for k in keys) else None
        if table != "journal":
            return None
        out = set()
        for k in keys:
            known = self.listed.get(key_group(k))
            if known is None:
                return None
            if k in known:
                out.add(k)
        return out

    def note_stored(self, table: str, keys: Sequence[str]) -> None:
        """Keys this process just inserted (a rollback drops everything, ``forget``)."""
        if table == "runs":
            self.no_run.difference_update(keys)
        elif table == "journal":
            for k in keys:
                known = self.listed.get(key_group(k))
                if known is not None:
                    known.add(k)

    def writing(self) -> bool:
        """Whether no other process can write the file now: this one holds it
        read-write (a session or a lingering connection) or lent it to a reader (no
        other writer gets it back first). What it reads then stays true until its
        own next write or the file's release (both ``forget``)."""
        if self.away:
            return True
        if self.held is not None:
            return not self.held_read_only
        return self.idle is not None and not self.idle_read_only

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

    def asked(self, suffix: str = _WANTS) -> bool:
        """Whether another process asked for the file since this one opened it (with
        ``_WANTS_WRITE``: a process that will write)."""
        if self.path is None:
            return False
        try:
            return os.stat(self.path + suffix).st_mtime_ns > self.opened_ns
        except OSError:
            return False

    def ask(self, write: bool) -> None:
        """Ask the holder of the file for it (a writer says it will write)."""
        assert self.path is not None
        _touch(self.path + _WANTS)
        if write:
            _touch(self.path + _WANTS_WRITE)

    def lend(self, now: float) -> bool:
        """Hand the lingering read-write connection to a reader that asked, keeping
        what appends know: they go on getting seqs and waiting in memory until this
        process takes the file back. False (nothing done) when a writer asked too,
        or the claim cannot be written."""
        self.settle()
        if self.idle is None or self.idle_read_only or self.commit_delay <= 0 \
                or self.asked(_WANTS_WRITE) or self.path is None:
            return False
        try:
            _write_pid(self.path + _LEASE)
        except OSError:
            return False
        conn, self.idle = self.idle, None
        try:
            self.flush(conn)  # the reader sees every append made before it asked
        finally:
            conn.close()
            self.away = True
            self.reopen_after = now + _COURTESY_GAP
        return True

    def home(self) -> None:
        """The file is this process's again (or nothing waits): drop the claim."""
        if self.away:
            self.away = False
            assert self.path is not None
            try:
                os.remove(self.path + _LEASE)
            except OSError:
                pass

    def take_back(self, *, wait: bool) -> Conn | None:
        """Reopen the file lent to a reader (caller holds the lock): one attempt, or
        waiting like any open; the connection lingers as usual. None: still held."""
        assert self.opener is not None
        conn = self.opener._connect("commit appended messages", read_only=False) if wait \
            else self.opener._attempt("commit appended messages", read_only=False)
        if conn is not None:
            self.idle, self.idle_read_only = conn, False
            self.opened_at = self.last_used = time.monotonic()
        return conn

    def settle(self) -> None:
        """Wait for a commit of deferred appends running without the lock (caller
        holds the lock): nothing else may use the connection meanwhile; then for the
        end of another thread's deferred group begun meanwhile (``_Lock``)."""
        while self.flushing or self.lock.others():
            self.wake.wait()

    def flush(self, conn: Conn | None = None, *, unlocked: bool = False) -> None:
        """Commit the deferred appends in one transaction (caller holds the lock), on
        conn or the connection this process holds. ``unlocked`` (the keeper, holding
        the lock once): the commit runs on a cursor of conn with the lock let go, and
        this process goes on meanwhile — appends whose seqs it knows, reads answered
        from memory (the writes in flight counted as waiting, ``unfiled``), deferred
        groups that stay in memory, and reads of the journal and runs on conn
        (``overlap``); anything else that needs the file waits for it (``settle``)."""
        self.settle()
        if not self.waiting():
            return
        conn = conn or (self.held if self.held is not None else self.idle)
        if conn is None and self.away:
            conn = self.take_back(wait=True)
        # whoever lets a connection go commits the waiting appends on it first, having
        # waited (``settle``) for a commit in flight before letting it go
        assert conn is not None, "deferred appends outlived their connection"
        if unlocked:
            # on a connection of its own (a cursor: the same database, its own
            # transaction), so this process's operations that may (``overlap``) go on
            # on conn meanwhile, counting these writes as waiting (``unfiled``)
            try:
                conn = conn.cursor()
            except duckdb.Error:
                unlocked = False  # (then on conn, holding the lock, as any commit)
        staged, self.pending = self.pending, []
        rows, self.pending_rows = self.pending_rows, 0
        new_dim, self.pending_dim = self.pending_dim, None
        later, self.later = self.later, _Later()
        failed: duckdb.Error | None = None
        if unlocked:
            self.flushing = True
            self.inflight, self.inflight_later = staged, later
            self.lock.release()
        bulk = max((len(s) for s in staged), default=0) >= _BULK_ROWS
        try:
            if bulk:
                conn.execute(f"SET checkpoint_threshold = '{_BULK_CHECKPOINT}'")
            conn.begin()
            self.write_waiting(conn, staged, new_dim, later)
            conn.commit()
        except duckdb.Error as e:
            failed = e
            try:
                conn.rollback()
            except duckdb.Error:
                pass
        finally:
            if bulk:
                _restore_checkpoint(conn)
            if unlocked:
                with suppress(duckdb.Error):
                    conn.close()
                self.lock.acquire()
                self.flushing = False
                self.inflight, self.inflight_later = [], _Later()
                self.wake.notify_all()
        if failed is not None:
            # appends made during the commit follow the lost ones: they go too
            rows += self.pending_rows
            writes = len(later) + len(self.later)
            self.pending, self.pending_rows, self.pending_dim = [], 0, None
            self.later = _Later()
            self.forget()
            what = f"{rows} appended messages" + (
                f" and {writes} journal records and run writes" if writes else "")
            raise StorageError(f"committing {what} failed; they are not stored: "
                               f"{failed}") from failed
        self.filed(staged)

    def filed(self, staged: Sequence[StagedMessages]) -> None:
        """Rows this process put in the file (committed, or in the write transaction in
        progress, whose rollback forgets): the file's counts it keeps take them in."""
        for s in staged:
            c = self.filed_counts.get(s.thread_id)
            if c is None or not len(s):
                continue
            self.filed_counts[s.thread_id] = c._replace(
                message_count=c.message_count + len(s), max_seq=max(c.max_seq, s.top()))
            if len(s) > _RECENT_ROWS:
                self.recent.pop(s.thread_id, None)
                continue
            if len(self.recent) >= _KNOWN_PREFIXES and s.thread_id not in self.recent:
                self.recent.clear()
            kept = self.recent.setdefault(s.thread_id, [])
            kept.append(s)
            while sum(map(len, kept)) > _RECENT_ROWS:
                kept.pop(0)

    def covers(self, thread_id: str, after: int) -> bool:
        """Whether every row of the thread in the file after seq ``after`` is one this
        process keeps (``recent``), or there is none (caller holds the lock)."""
        c = self.filed_counts.get(thread_id) if self.writing() else None
        if c is None:
            return False
        if after >= c.max_seq:
            return True
        kept = self.recent.get(thread_id)
        if not kept:
            return False
        return kept[0].seqs[0] <= after + 1 and kept[-1].top() == c.max_seq

    def noted_scope(self, key: tuple[str, str | None],
                    counts: dict[str, ThreadCounts]) -> None:
        """A scope_counts read of the file (caller holds the lock), kept while this
        process writes it (at most _KNOWN_PREFIXES scopes)."""
        if not self.writing():
            return
        if len(self.scopes) >= _KNOWN_PREFIXES:
            self.scopes.clear()
            self.filed_counts.clear()
        self.scopes[key] = tuple(counts)
        self.filed_counts.update(counts)
        for c in counts.values():
            self.edits = c.edits  # (the store's: every thread's alike)

    def made(self, thread: Thread, edits: int) -> None:
        """A thread this process created while writing the file (caller holds the
        lock; ``edits``: the store's, ``ThreadCounts.edits``): it has no rows there,
        so its own scope's counts are known, and every row it commits to the thread
        is kept (``recent``) from the first — a recall's first look at the thread
        reads nothing from the file."""
        self.noted_scope((thread.id, None),
                         {thread.id: ThreadCounts(0, -1, thread.created_at, edits)})

    def known_scope(self, key: tuple[str, str | None]) -> dict[str, ThreadCounts] | None:
        """A scope's counts in the file, from what this process keeps; None: read."""
        members = self.scopes.get(key) if self.writing() else None
        if members is None or any(t not in self.filed_counts for t in members):
            return None
        return {t: self.filed_counts[t] for t in members}

    @property
    def unflushed(self) -> bool:
        return bool(getattr(self.mine, "unflushed", False))

    @unflushed.setter
    def unflushed(self, value: bool) -> None:
        self.mine.unflushed = value

    @contextmanager
    def reading_past_waits(self) -> Iterator[None]:
        """An operation whose answer no waiting write changes (a read that adds them
        itself, a new thread's row; caller holds the lock): it neither commits them
        first nor turns an open deferred group into a transaction."""
        was, self.unflushed = self.unflushed, True
        try:
            yield
        finally:
            self.unflushed = was

    def waiting(self) -> bool:
        """Whether writes wait in memory to be committed (appends, deferred groups)."""
        return bool(self.pending) or bool(self.later)

    def unfiled(self) -> list[StagedMessages]:
        """The appends this process's reads add to what it knows of the file (caller
        holds the lock): those in the keeper's commit in flight, then those waiting."""
        return [*self.inflight, *self.pending] if self.inflight else self.pending

    def waiting_later(self) -> tuple[_Later, ...]:
        """The deferred groups' writes this process's reads add to the file's rows, in
        order (caller holds the lock): in the keeper's commit in flight, then waiting.
        A read of the file while that commit runs (``overlap``) may find them there
        too: it takes what it found and these together by key, never adding counts."""
        return (self.inflight_later, self.later) if self.inflight_later else (self.later,)

    @staticmethod
    def write_waiting(conn: Conn, staged: Sequence[StagedMessages], new_dim: int | None,
                      later: _Later) -> None:
        """The waiting writes, in the caller's transaction on conn."""
        tx = _DuckTx(conn)
        write_staged(_insert_messages, tx, staged, new_dim, _update_counts)
        later.write(tx)

    def close_conn(self, conn: Conn) -> None:
        """Close a connection of this handle, committing deferred appends first (the
        caller let it go after ``settle``, with the lock held since: waiting appends
        are never without a connection, see ``flush``)."""
        try:
            self.flush(conn)
        finally:
            conn.close()
            self.forget()

    def drop_idle(self, *, forced: bool = False) -> None:
        """Close the lingering connection (caller holds the lock)."""
        self.settle()
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
            try:
                while self.idle is not None or self.waiting() or self.away:
                    try:
                        due = self._keep_step(time.monotonic())
                    except StorageError as e:
                        self.flush_error = e  # raised by this process's next operation
                        continue
                    if due is None:
                        break
                    self.wake.wait(timeout=max(0.0, min(due - time.monotonic(), _ASK_POLL)))
            finally:
                # also when an unexpected error stops it: the next operation starts
                # another (a stale closer would leave appends waiting for good)
                self.closer = None

    def hand_over(self, now: float) -> bool:
        """Whether the lingering connection must go now: another process asked for the
        file and this one has had it for max_hold seconds (its time slice)."""
        return (self.idle is not None and self.group is None
                and now >= self.opened_at + self.max_hold and self.asked())

    def _keep_step(self, now: float) -> float | None:
        """One look by the keeper: what is due now, and when to look again (None: stop).
        Nothing while a deferred group is open (it holds the lock, but for a wait for
        the keeper's commit in flight; what waits then is partly the group's)."""
        if self.group is not None or self.lock.owner is not None:
            return now + _ASK_POLL
        if self.hand_over(now):
            if self.lend(now):
                return now + _COURTESY_GAP
            self.drop_idle(forced=True)
            return None
        if self.away:
            if not self.waiting() and now >= self.last_used + self.linger:
                self.home()  # idle: nothing to take back
                self.forget()
                return None
            if now < self.reopen_after or self.take_back(wait=False) is None:
                return now + _ASK_POLL
        if self.waiting() and now >= self.pending_since + self.commit_delay:
            self.flush(unlocked=True)
            # the lock was let go: the next look sees what changed meanwhile (``now``
            # is past, and a deferred group may have begun beside the commit: its
            # connection is not dropped, nor what waits committed, while it is open)
            return time.monotonic()
        due = float("inf")
        if self.idle is not None:
            idle_end = self.last_used + self.linger
            if now >= idle_end:
                self.drop_idle()
                return None
            due = idle_end
        if self.waiting():
            due = min(due, self.pending_since + self.commit_delay)
        return due if self.idle is not None or self.waiting() else None


_HANDLES: dict[str, _Handle] = {}
_HANDLES_LOCK = threading.Lock()


def _file_handle(path: str) -> _Handle:
    with _HANDLES_LOCK:
        h = _HANDLES.get(path)
        if h is None:
            h = _HANDLES[path] = _Handle(path)
        return h


def _holder(path: str | os.PathLike[str]) -> _Handle | None:
    with _HANDLES_LOCK:
        return _HANDLES.get(os.path.realpath(path))


def holds_file(path: str | os.PathLike[str]) -> bool:
    """Whether this process has the DuckDB file at ``path`` open (a session's or a
    lingering connection). While it has, nothing in the process may open the file
    another way and close it again: DuckDB's lock on the file is a POSIX record lock,
    which belongs to the process and goes with the close of *any* descriptor of the
    file, letting another process open it for writing beside this one
    (tests/test_duckdb_file_lock.py). ``storage.url`` asks this before it sniffs a file."""
    h = _holder(path)
    if h is None:
        return False
    with h.lock:
        return h.held is not None or h.idle is not None


def held_tables(path: str | os.PathLike[str]) -> set[str] | None:
    """The names of the tables of a file this process holds (``holds_file``), read
    through the connection it holds; None when it holds no connection to the file (a
    second connection to it would be refused, its configuration being another)."""
    h = _holder(path)
    if h is None:
        return None
    with h.lock:
        h.settle()
        conn = h.held if h.held is not None else h.idle
        if conn is None:
            return None
        try:
            rows = conn.execute("SELECT table_name FROM duckdb_tables()"
                                " WHERE schema_name = 'main'").fetchall()
        except duckdb.Error as e:
            raise StorageError(f"reading the tables of '{h.path}' failed: {e}") from e
    return {str(r[0]) for r in rows}


@atexit.register
def _close_lingering() -> None:
    with _HANDLES_LOCK:
        handles = list(_HANDLES.values())
    for h in handles:
        with h.lock:
            try:
                h.flush()
                h.home()
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
        self._busy = ""  # why the last open attempt failed

    def _connect(self, op: str, read_only: bool) -> Conn:
        """Open the file, waiting (and asking for it) while another process has it."""
        assert self.handle.path is not None
        if read_only and not os.path.exists(self.handle.path):
            raise StorageError(f"{op} failed: database file '{self.handle.path}' does not exist")
        if not self.handle.known:
            _refuse_foreign(op, self.handle.path)
        gap = self.handle.reopen_after - time.monotonic()
        if gap > 0:
            time.sleep(gap)  # this process just held the file for max_hold: let others in
        deadline = time.monotonic() + self.lock_timeout
        delays = retry_delays()
        while True:
            conn = self._attempt(op, read_only)
            if conn is not None:
                return conn
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise StorageBusyError(
                    f"{op} failed: database file '{self.handle.path}' is held by another "
                    f"process and was not released within {self.lock_timeout:g}s "
                    f"(raise lock_timeout, or end that process's session): {self._busy}")
            time.sleep(min(remaining, next(delays)))

    def _attempt(self, op: str, read_only: bool) -> Conn | None:
        """One try at opening the file: None (and the holder asked for it) while another
        process holds it, or lent it to a reader and has not taken it back yet."""
        h = self.handle
        assert h.path is not None
        read_only = read_only and not h.away  # waiting appends need a writable one
        inode = _inode(h.path)
        try:
            conn = duckdb.connect(h.path, read_only=read_only, config=_CONFIG)
        except duckdb.IOException as e:
            if not (h.away and time.monotonic() < h.reopen_after + _READER_SLICE):
                # (a lender lets the reader do a few operations first: asked at once,
                # a reader making two would hand the file back between them)
                h.ask(write=not read_only)
            if not _is_lock_conflict(e):
                raise StorageError(f"{op} failed: cannot open '{h.path}': {e}") from e
            self._busy = str(e)
            return None
        except duckdb.Error as e:
            raise StorageError(f"{op} failed: cannot open '{h.path}': {e}") from e
        rewriter = _rewriter(h.path)
        if rewriter is not None or (inode is not None and _inode(h.path) != inode):
            # the old file, or one put in its place while it opened: open the new one
            conn.close()
            self._busy = f"process {rewriter} is putting a rewritten copy in its place"
            return None
        lender = None if read_only else _lender(h.path)
        if lender is not None:
            conn.close()  # nothing written: the lender's appends hold seqs, it goes first
            h.ask(write=True)
            self._busy = f"process {lender} lent it to a reader and takes it back first"
            return None
        h.known = True
        h.opened_ns = time.time_ns()
        h.changes += 1  # others may have written while this process had no connection
        h.home()
        if not read_only:
            # checkpoint in the small steps commits take (a keeper's commit runs
            # without the lock), not all at once when the file is handed over
            conn.execute(f"SET checkpoint_threshold = '{_CHECKPOINT}'")
        return conn

    def check_open(self, op: str, write: bool) -> None:
        if self.closed:
            raise StorageError(f"{op} failed: the storage is closed")
        if write and self.read_only:
            raise StorageError(f"{op} refused: storage on '{self.path}' was opened read_only")

    def _connection(self, op: str, write: bool,
                    overlap: bool = False) -> tuple[Conn, bool]:
        """The connection for an operation (caller holds the lock): the session's, the
        lingering one while it is young enough and not asked for by another process,
        or a new one that will linger. A failed background commit is raised here.
        It first waits for the keeper's commit in flight, unless ``overlap`` (the
        operation may run beside it: a read of journal keys and runs that adds the
        writes in flight itself, or a deferred group) and the connection stays as it is."""
        h = self.handle
        if not (overlap and h.flushing and self._steady(write)):
            h.settle()
        h.raise_flush_error()
        h.opener = self
        now = time.monotonic()
        if h.hand_over(now) and not h.lend(now):
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
        read_only = self.read_only and not h.away
        h.idle = self._connect(op, read_only=read_only)
        h.idle_read_only = read_only
        h.opened_at = time.monotonic()
        return h.idle, h.idle_read_only

    def _steady(self, write: bool) -> bool:
        """Whether ``_connection`` would give the connection this process has as it is
        (caller holds the lock): no hand-over due, none to open or reopen."""
        h = self.handle
        if h.hand_over(time.monotonic()):
            return False
        if h.held is not None:
            return not (write and h.held_read_only)
        return h.idle is not None and not (write and h.idle_read_only)

    @contextmanager
    def transaction(self, op: str, *, write: bool, tracked: bool = False,
                    merged: bool = False) -> Iterator[Conn]:
        """Run the body in one transaction; a call made from inside another operation
        of the same database joins its transaction. What deferred appends know is
        dropped after a write, unless ``tracked`` (its statements go through a
        ``_DuckTx`` of this handle) and they touched only the journal and runs.
        ``merged``: a read of the journal or runs that adds what waits in memory
        itself (``_Later``, ``waiting_later``), so waiting writes stay waiting; it
        runs beside a commit of the keeper's in flight."""
        self.check_open(op, write)
        h = self.handle
        with h.lock:
            if h.active is not None:
                if write and (h.active_read_only or not h.active_write):
                    raise StorageError(f"{op} refused: the enclosing operation is read-only")
                if write:
                    h.changes += 1  # a write inside a batch: its reads must see it
                yield h.active
                return
            overlap = merged and not write
            merged = merged or h.unflushed
            if h.group is not None and not merged:
                # inside a deferred write group, an operation that needs the file as
                # the group leaves it: the group becomes one transaction
                conn = self._upgrade(h.group)
                h.stale = h.stale or not tracked
                h.stale_keys = h.stale_keys or not tracked
                try:
                    yield conn
                except duckdb.Error as e:
                    raise StorageError(f"{op} failed: {e}") from e
                return
            conn, ro = self._connection(op, write, overlap)
            if not merged:
                h.flush()  # deferred appends first: the operation sees them, in order
            h.active, h.active_read_only, h.active_write = conn, ro, write
            h.stale = h.stale_keys = not tracked
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
                    # what the rolled-back writes taught the caches is void
                    h.stale = h.stale_keys = True
                    try:
                        conn.rollback()
                    except duckdb.Error:
                        pass  # no transaction left to roll back; keep the first error
                    raise
            except duckdb.Error as e:
                raise StorageError(f"{op} failed: {e}") from e
            finally:
                h.active = None
                if write and h.stale:
                    # it may have changed a thread row or the dimension
                    h.forget(keys=h.stale_keys)
                self.used(conn)

    def _upgrade(self, g: _Group) -> Conn:
        """Turn the open deferred group into a transaction on its connection, holding
        every waiting write: they stay in memory too until it commits (``group``), so
        a rollback leaves the ones made before the group waiting."""
        h = self.handle
        h.settle()  # (the group began beside a commit of the keeper's)
        h.raise_flush_error()
        try:
            g.conn.begin()
            h.write_waiting(g.conn, h.pending, h.pending_dim, h.later)
            h.filed(h.pending)
        except duckdb.Error as e:
            with suppress(duckdb.Error):
                g.conn.rollback()
            raise StorageError(f"write batch failed: {e}") from e
        g.upgraded = True
        h.active, h.active_read_only, h.active_write = g.conn, False, True
        return g.conn

    @contextmanager
    def group(self, op: str) -> Iterator[bool]:
        """A deferred write group (``write_batch(durable=False)``), holding the lock
        all through: its appends, journal records and runs wait in memory with the
        writes before them (True), committed together after ``commit_delay`` or
        before an operation that needs them in the file; an operation of the group
        that needs the file turns the group into a transaction (``_upgrade``). A
        failure takes back what the group wrote and commits what waited before it.
        False (nothing done): the caller runs a transaction instead — nested, on
        ``:memory:``, read-only, with commit_delay 0, or the file lent to a reader."""
        h = self.handle
        with h.lock:
            if h.group is not None or not self.defers(op) or h.away:
                yield False
                return
            conn = self.writer(op, overlap=True)
            if h.away or h.active is not None:
                yield False
                return
            was = h.waiting()
            g = h.group = _Group(conn, len(h.pending), h.pending_rows, h.pending_dim)
            h.lock.owner = threading.get_ident()  # other threads wait for its end
            h.later.undo = []
            h.stale = h.stale_keys = False
            try:
                yield True
                if g.upgraded:
                    try:
                        conn.commit()
                    except duckdb.Error as e:
                        raise StorageError(f"{op} failed: {e}") from e
                    h.pending, h.pending_rows, h.pending_dim = [], 0, None
                    h.later = _Later()
            except BaseException:
                self._abandon(g)
                raise
            finally:
                h.group = None
                h.lock.owner = None
                h.wake.notify_all()
                h.later.undo = None
                if g.upgraded:
                    h.active = None
            if g.upgraded and h.stale:
                h.forget(keys=h.stale_keys)
            if not was and h.waiting():
                h.pending_since = time.monotonic()
            self.used(conn)

    def _abandon(self, g: _Group) -> None:
        """A deferred group failed: take back what it wrote, commit what waited before
        it (a failure of that is raised by the next operation), drop what this process
        knows of the file."""
        h = self.handle
        if g.upgraded:
            h.active = None
            with suppress(duckdb.Error):
                g.conn.rollback()
        for undo in reversed(h.later.undo or []):
            undo()
        h.later.undo = None
        if len(h.pending) >= g.appends:
            del h.pending[g.appends:]
            h.pending_rows, h.pending_dim = g.rows, g.dim
        else:  # a failed commit of the keeper's took what waited (``flush``)
            h.pending, h.pending_rows, h.pending_dim = [], 0, None
        h.group = None
        try:
            h.flush(g.conn)
        except StorageError as e:
            h.flush_error = e
        finally:
            h.forget()

    def used(self, conn: Conn | None) -> None:
        """After an operation on conn (caller holds the lock; None: an append made
        while the file is lent): let a lingering connection linger, and have deferred
        appends committed in time."""
        h = self.handle
        h.commit_delay = self.commit_delay
        if conn is h.idle:
            h.last_used = time.monotonic()
            h.linger, h.max_hold = self.linger, self.max_hold
            if self.linger <= 0 and conn is not None:
                h.drop_idle()
                return
        if h.idle is not None or h.waiting() or h.away:
            h.start_closer()
            h.wake.notify_all()

    def defers(self, op: str) -> bool:
        """Whether an append waits in memory (caller holds the lock): not when it must
        run as its own transaction — inside another operation (it joins it), on
        ``:memory:`` or a read-only storage, or with commit_delay 0."""
        h = self.handle
        self.check_open(op, True)
        if h.active is not None or h.path is None or self.commit_delay <= 0:
            return False
        h.opener = self
        now = time.monotonic()
        if h.hand_over(now) and not h.lend(now):
            h.drop_idle(forced=True)
        return True

    def writer(self, op: str, *, overlap: bool = False) -> Conn:
        """The read-write connection for a deferred append or group (caller holds the
        lock; ``overlap``: a group, begun beside a commit of the keeper's in flight)."""
        conn, _ = self._connection(op, write=True, overlap=overlap)
        self.handle.changes += 1  # an append is deferred on it: visible to this process's reads
        return conn

    @contextmanager
    def session(self) -> Iterator[None]:
        """Hold one connection for every operation in the block (this process's other
        threads share it); other processes wait until the block ends."""
        self.check_open("session", False)
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
                # A commit of waiting appends in flight (the keeper's, without the
                # lock) ends before the connection is let go, not after: the wait lets
                # the lock go, and appends made meanwhile would wait with no
                # connection to be committed on while the keeper came to commit them.
                h.settle()
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
            # others stay out from before the old file is let go until the copy is in
            # its place (they check the flag, and the inode, after they open it)
            flag = h.path + _REWRITING
            _write_pid(flag)
            try:
                conn.close()
                self._swap_in(fresh)
            finally:
                with suppress(OSError):
                    os.remove(flag)
            if session:
                h.held = self._connect(op, read_only=h.held_read_only)

    def _swap_in(self, fresh: str) -> None:
        """Put the rewritten copy in place of the file (its WAL is empty: checkpointed)."""
        assert self.handle.path is not None
        os.replace(fresh, self.handle.path)
        if os.path.exists(self.handle.path + ".wal"):
            os.remove(self.handle.path + ".wal")

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
                if self.handle.away:
                    self.handle.flush()  # appends made while the file was lent
                    self.handle.home()
                self.handle.drop_idle()


# -- the driver ----------------------------------------------------------------------------
class _DuckTx:
    """A transaction of the shared SQL on one DuckDB connection. Every result is read
    to the end: DuckDB 2 refuses new work on a connection with an unread result."""

    def __init__(self, conn: Conn, handle: _Handle | None = None) -> None:
        self.conn = conn
        self.handle = handle

    def wrote(self, sql: str, *, noted: bool = False) -> None:
        """Note a statement that may change what this process caches (anything but
        reads and writes of the journal and runs): the caches go at once, so a later
        read in the same transaction (a write batch) reads the file again. A delete
        or insert of journal records or runs drops which keys it knows are stored,
        unless ``noted`` (the writer tells the handle itself: ``note_stored``)."""
        if self.handle is None:
            return
        narrow = _NARROW_WRITES.match(sql)
        if narrow:
            # a new thread (a resource's thread list changes, no kept thread's state,
            # nor a scope of one thread alone) or a working-memory write: only what
            # they change is dropped
            h = self.handle
            if narrow.group(1):
                for key in [k for k in h.scopes if k[1] is not None]:
                    del h.scopes[key]
            else:
                h.wm.clear()
            h.changes += 1
            return
        if not _KEEPS_STATE.match(sql):
            self.handle.stale = True
            # (a statement naming neither table, a thread's or working memory's
            # write, leaves the run keys known: a run's title or working memory
            # mid-run would otherwise send its next inserts looking them up)
            self.handle.forget(keys=bool(_NAMES_KEYS.search(sql)))
        elif not noted and _CHANGES_KEYS.match(sql):
            self.handle.forget_keys()

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        self.wrote(sql)
        return self.conn.execute(sql, list(params)).fetchall()

    def execute(self, sql: str, params: Sequence[Any] = (), *, noted: bool = False) -> int:
        self.wrote(sql, noted=noted)
        rows = self.conn.execute(sql, list(params)).fetchall()
        # DML answers with one row holding the number of rows it changed
        return int(rows[0][0]) if rows and isinstance(rows[0][0], int) else 0

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self.wrote(sql)
        self.conn.executemany(sql, [list(r) for r in rows])


# statements after which what deferred appends know (threads' seqs, the dimension)
# still holds: reads, and writes of the journal and runs
_KEEPS_STATE = re.compile(
    r"\s*(SELECT\b|INSERT INTO (journal|runs)\b|UPDATE runs\b|DELETE FROM (journal|runs)\b)",
    re.IGNORECASE)
# writes that change one thing a writer keeps: a new thread row, a working memory value
_NARROW_WRITES = re.compile(
    r"\s*(?:INSERT INTO (threads)\b|(?:INSERT INTO|UPDATE|DELETE FROM) (working_memory)\b)",
    re.IGNORECASE)
# of those, the ones that change which journal keys and run ids are stored
_CHANGES_KEYS = re.compile(r"\s*(INSERT INTO|DELETE FROM) (journal|runs)\b", re.IGNORECASE)
# any other statement naming either table may change them too
_NAMES_KEYS = re.compile(r"\b(journal|runs)\b", re.IGNORECASE)


def _arrow(conn: Conn, sql: str, params: list[Any]) -> pa.Table:
    rel = conn.sql(sql, params=params)
    to_table = getattr(rel, "to_arrow_table", None) or rel.arrow  # duckdb 2.x / 1.x
    return to_table()


def _copied(column: pa.Array) -> pa.Array:
    """An Arrow column in buffers of its own (not a slice of its record batch's)."""
    return pa.concat_arrays([column, pa.array([], column.type)])


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


def _stored_keys(tx: Any, h: _Handle, table: str, column: str,
                 keys: Sequence[str]) -> set[str]:
    """Which of a few ``keys`` (journal keys, run ids) the file holds: from what this
    process knows while it writes the file (a run's keys, known from its first read),
    else looked up through the key's index."""
    have = h.stored_of(table, keys)
    if have is None:
        have = {r[0] for r in tx.query(
            f"SELECT {column} FROM {table} WHERE {column} IN ({', '.join('?' * len(keys))})",
            list(keys))}
    return have


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
        with self.db.transaction(op, write=True, tracked=True) as conn:
            yield _DuckTx(conn, self.db.handle)

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
            raise SchemaOutdatedError(
                f"setup failed: '{self.db.path}' has an older memory_core schema; open it "
                "once without read_only to migrate it")

    def insert_rows(self, tx: Any, table: str, columns: Sequence[str],
                    rows: Sequence[Sequence[Any]]) -> None:
        _insert_rows(tx, table, columns, rows)

    def insert_absent(self, tx: Any, table: str, key: str, columns: Sequence[str],
                      rows: Sequence[Sequence[Any]]) -> int:
        """The stored keys looked up through the key's index, then the others in one
        plain ``INSERT``: DuckDB's ``ON CONFLICT`` costs ~4-6 ms more a statement on a
        file of a few hundred runs (bench/RESULTS.md, runner overhead). Nothing can
        store one of the keys between the two: this process holds the file read-write
        and runs the write under its lock."""
        if not rows:
            return 0
        h = self.db.handle
        have = _stored_keys(tx, h, table, key, [r[0] for r in rows])
        new = [r for r in rows if r[0] not in have]
        if new:
            tx.execute(insert_sql(table, columns, len(new)), [v for r in new for v in r],
                       noted=True)
            h.note_stored(table, [r[0] for r in new])
        return len(new)

    def noted_listing(self, prefix: str, keys: Sequence[str]) -> None:
        self.db.handle.noted_listing(prefix, keys)

    def noted_missing_run(self, run_id: str) -> None:
        self.db.handle.noted_missing_run(run_id)

    def insert_messages(self, tx: Any, staged: Sequence[StagedMessages]) -> None:
        _insert_messages(tx, staged)

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
        a count (the vectors are never held twice, nor as Python objects). With a
        message budget the message columns come too, unless the first batch says
        they will not fit: then the scan starts again without them."""
        conn: Conn = tx.conn
        src = ("FROM messages m JOIN (SELECT unnest(?::VARCHAR[]) AS tid, "
               "unnest(?::BIGINT[]) AS lo, unnest(?::INTEGER[]) AS pos) f "
               "ON m.thread_id = f.tid AND m.seq > f.lo")
        params = [list(scan.threads), list(scan.after), list(range(len(scan.threads)))]
        if scan.threads and min(scan.after) >= 0:
            small = self._scan_small(conn, scan, src, params)
            if small is not None:
                return small
        counted = conn.execute(f"SELECT count(*) {src}", params).fetchall()[0]
        planned = int(counted[0]) if counted else 0
        # (a file's blocks can be dropped and read again; ``:memory:`` data cannot; an
        # incremental scan of a few rows keeps the cache: lowering the limit evicts it)
        big = planned > _SCAN_BATCH and self.db.handle.path is not None
        with _cache_capped(conn) if big else nullcontext():
            while True:
                out = RowsBuilder(scan, planned)
                rel = conn.sql(self._select(scan, out, planned, src), params=params)
                if self._fill(rel.to_arrow_reader(_SCAN_BATCH), scan, out, out.message_budget > 0):
                    return out.done()
                scan = replace(scan, message_share=0.0)

    @staticmethod
    def _select(scan: ScopeScan, out: RowsBuilder, planned: int, src: str) -> str:
        """The scan's SELECT: with a message budget, the message columns too (a body
        longer than 4x a row's share of the budget, or _BODY_CAP, left out)."""
        extra = ""
        if out.message_budget:
            cap = max(_BODY_CAP, 4 * out.message_budget // max(1, planned))
            extra = _MESSAGE_SCAN.format(cap=cap)
        return (f"SELECT f.pos, m.rowid AS locator, {_ZONE_SCAN} AS zone,"
                f" {scan.columns()}{extra} {src}")

    def _scan_small(self, conn: Conn, scan: ScopeScan, src: str,
                    params: list[Any]) -> ScopeRows | None:
        """An incremental scan (a live agent's few new rows since the last recall) in
        one plain query: an Arrow scan's set-up and its count cost ~3-4 ms, more than
        the rows. None when there are more than _SMALL_SCAN rows (or their message
        columns would not fit): the caller scans as usual."""
        out = RowsBuilder(scan, _SMALL_SCAN)
        cur = conn.execute(f"{self._select(scan, out, _SMALL_SCAN, src)}"
                           f" LIMIT {_SMALL_SCAN + 1}", params)
        names = [d[0] for d in cur.description]
        rows = cur.fetchall()
        if len(rows) > _SMALL_SCAN:
            return None
        cols = list(zip(*rows, strict=True)) if rows else [()] * len(names)
        batch = pa.record_batch([pa.array(c, _SCAN_TYPES.get(n, pa.string()))
                                 for n, c in zip(names, cols, strict=True)], names=names)
        reader = pa.RecordBatchReader.from_batches(batch.schema, [batch])
        return out.done() if self._fill(reader, scan, out, out.message_budget > 0) else None

    @staticmethod
    def _fill(reader: Any, scan: ScopeScan, out: RowsBuilder, extra: bool) -> bool:
        """Fill ``out`` from the scan's batches; False (and nothing more read) when
        the first batch shows the message columns will not fit in their budget."""
        for batch in reader:
            vectors = has_vec = None
            if scan.vectors and scan.dim:
                col = batch.column("embedding")
                has_vec = col.is_valid().to_numpy(zero_copy_only=False)
                flat = col.flatten().to_numpy(zero_copy_only=False)
                vectors = flat.astype(np.float32, copy=False).reshape(-1, scan.dim)
            a = out.n
            out.locate(a, batch.column("locator").to_numpy())
            # a column kept past this batch is copied: as the scan gave it, it keeps
            # its whole batch's memory (the vectors' too) alive — a million rows'
            # texts kept as they came held 1.8 GB of vectors a second time
            out.add(batch.column("pos").to_numpy(), batch.column("seq").to_numpy(),
                    batch.column("created_us").to_numpy(), vectors, has_vec,
                    _copied(batch.column("text_lower")) if scan.texts else None,
                    batch.column("body").to_pylist() if scan.metadata else None)
            out.zone(a, batch.column("zone"))
            if extra:
                out.keep_messages(MessageColumns(
                    _copied(batch.column("body_json")),
                    pc.dictionary_encode(batch.column("resource_id")),
                    pc.dictionary_encode(batch.column("run_id"))))
                if a == 0 and out.over_budget():
                    reader.close()
                    return False
        return True


    def change_token(self) -> Hashable | None:
        """The handle's token; with no connection held, the connection a read would
        open is opened first (a lingering one: the token then holds until it is let
        go, to a writer that asks or when idle), so a caller that reads next pays
        nothing more for it. None with no lingering (each operation its own open)."""
        token = self.db.handle.change_token()
        if token is None and self.db.linger > 0:
            with self.read("change_token"):
                pass
            token = self.db.handle.change_token()
        return token

    def fetch_located(self, tx: Any, refs: Sequence[tuple[str, int]],
                      locators: Sequence[int],
                      created: Sequence[datetime | None] | None = None,
                      ) -> list[tuple[Any, ...]]:
        """Reads by rowid in one query, the rowids passed as one list parameter (DuckDB
        then fetches just those rows: ~1 ms where an ``IN (?, ...)`` list or a join on
        (thread_id, seq) scans the table's row groups), each row kept only if it is
        still its ref's. ``created_at`` is not read when every time is given: a
        random read of that text (nearly unique, so compressed) costs more than all
        the other columns together."""
        times = list(created) if created is not None else [None] * len(refs)
        want = {int(loc): ((str(t), int(s)), at) for (t, s), loc, at
                in zip(refs, locators, times, strict=True) if loc >= 0}
        if not want:
            return []
        known = all(at is not None for _, at in want.values())
        cols = MESSAGE_COLUMNS.replace("created_at", "NULL") if known else MESSAGE_COLUMNS
        rows = tx.query(f"SELECT rowid, {cols} FROM messages WHERE rowid IN"
                        " (SELECT unnest(?::BIGINT[]))", [sorted(want)])
        out = []
        for r in rows:
            ref, at = want.get(int(r[0]), (None, None))
            if ref == (r[1], int(r[2])):
                out.append((*r[1:5], at, r[6]) if known else r[1:])
        return out


def _zone_of(created_at: str) -> str | None:
    """A created_at's UTC offset as ``_ZONE_SCAN`` reads it: None for UTC."""
    if created_at.endswith("+00:00"):
        return None
    return created_at[19:].lstrip(".0123456789")


def _kept_rows(scan: ScopeScan, kept: Sequence[StagedMessages]) -> ScopeRows:
    """A scope scan's rows built from rows this process keeps in memory (waiting to be
    committed, or committed lately): the rows of ``kept`` after the scan's seqs, with
    the columns the scan of the file gives (``_scan_small``: the same zones, message
    columns within the same budget, a body over the same cap left out); a row has no
    locator (-1: a read of it goes by its ref)."""
    pos = {t: i for i, t in enumerate(scan.threads)}
    picked = [(s, i) for s in kept for i, q in enumerate(s.seqs)
              if s.thread_id in pos and q > scan.after[pos[s.thread_id]]]
    out = RowsBuilder(scan, len(picked))
    vectors = has_vec = None
    if scan.vectors and scan.dim:
        vecs = [None if s.vectors is None else s.vectors[i] for s, i in picked]
        has_vec = np.array([v is not None for v in vecs], bool)
        vectors = np.array([v for v in vecs if v is not None], np.float32).reshape(
            -1, scan.dim)
    out.add(np.array([pos[s.thread_id] for s, _ in picked], np.int32),
            np.array([s.seqs[i] for s, i in picked], np.int64),
            np.array([s.created_us[i] for s, i in picked], np.int64), vectors, has_vec,
            [s.texts[i] for s, i in picked] if scan.texts else None,
            [s.bodies[i] for s, i in picked] if scan.metadata else None)
    out.locate(0, np.full(len(picked), -1, np.int64))
    out.zone(0, pa.array([_zone_of(s.created_at[i]) for s, i in picked], pa.string()))
    cap = max(_BODY_CAP, 4 * out.message_budget // max(1, len(picked)))
    # Arrow columns, as the scan gives them (a budget weighs them alike)
    out.keep_messages(MessageColumns(
        pa.array([b if len(b) <= cap and len(b.encode()) <= cap else None
                  for b in (s.bodies[i] for s, i in picked)], pa.string()),
        pc.dictionary_encode(pa.array([s.resource_id for s, _ in picked], pa.string())),
        pc.dictionary_encode(pa.array([s.run_ids[i] for s, i in picked], pa.string()))))
    return out.done()


def _staged_messages(staged: Sequence[StagedMessages], thread_id: str,
                     wanted: set[int] | None, lo: float = -math.inf,
                     hi: float = math.inf) -> list[StoredMessage]:
    """The messages of rows this process keeps (waiting, or committed lately) of one
    thread: the seqs ``wanted``, or every seq in ``lo``..``hi``, in the order kept."""
    return [row_to_message((s.thread_id, q, s.resource_id, s.bodies[i], s.created_at[i],
                            s.run_ids[i]))
            for s in staged if s.thread_id == thread_id for i, q in enumerate(s.seqs)
            if (q in wanted if wanted is not None else lo <= q <= hi)]


def _thread_copy(thread: Thread) -> Thread:
    """A copy of a thread row the caller may change: only its metadata can be changed
    in place (a deep copy of the whole model cost ~0.15 ms, three times a run)."""
    return thread.model_copy(
        update={"metadata": copy.deepcopy(thread.metadata)} if thread.metadata else None)


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
        bodies = message_bodies(thread_id, rows)
        has_vec = any(r.embedding is not None for r in rows)
        with h.lock:
            if not self.duck.defers("append_messages"):
                if h.active is not None and h.active_write and h.writing():
                    return self._append_joined(thread_id, rows, bodies, has_vec)
                return super().append_messages(thread_id, rows)
            h.raise_flush_error()
            # an append of a thread whose seqs this process knows (it holds the file,
            # or lent it to a reader) waits in memory without touching the file: it
            # goes on while waiting appends are committed, or a reader has the file
            known = thread_id in h.threads and (h.dim_known or not has_vec) \
                and h.pending_rows + len(rows) < _FLUSH_ROWS
            conn = h.idle if known else self.duck.writer("append_messages")
            try:
                state = self._thread_state(conn, thread_id)
                dim = self._dim(conn) if has_vec else None
            except duckdb.Error as e:
                raise StorageError(f"append_messages failed: {e}") from e
            _, batch_dim = validate_batch(thread_id, rows, dim)
            top = int(state[1])
            seqs = list(range(top + 1, top + 1 + len(rows)))
            staged = stage_messages(thread_id, state[0], seqs, bodies, rows, self._clock)
            if len(rows) > _SMALL_BATCH:
                # built here, so the keeper's commit of the last batch runs meanwhile
                staged.table = _build_table([staged])
            if has_vec and dim is None:
                h.dim = h.pending_dim = batch_dim
            state[1] = seqs[-1]
            if thread_id in h.tails:
                h.tails[thread_id].add(staged)
            if not h.pending:
                h.pending_since = time.monotonic()
            h.pending.append(staged)
            h.pending_rows += len(rows)
            h.changes += 1  # waiting, yet visible to this process's reads (change_token)
            if h.pending_rows >= _FLUSH_ROWS:
                # committed by the keeper now, without the lock: the caller builds its
                # next batch meanwhile (one commit in flight at most: settle first)
                h.settle()
                h.pending_since = -math.inf
            self.duck.used(conn)
            return seqs

    def _append_joined(self, thread_id: str, rows: list[AppendRow], bodies: list[str],
                       has_vec: bool) -> list[int]:
        """An append inside another write operation (a Runner's write group) while this
        process writes the file: it joins that transaction, and takes the thread's
        seqs and the dimension from what this process knows (read once while it
        writes the file) instead of reading them again; what it writes keeps them
        true (a rollback drops them)."""
        h = self.duck.handle
        with self.duck.transaction("append_messages", write=True) as conn:
            try:
                state = self._thread_state(conn, thread_id)
                dim = self._dim(conn) if has_vec else None
                _, batch_dim = validate_batch(thread_id, rows, dim)
                top = int(state[1])
                seqs = list(range(top + 1, top + 1 + len(rows)))
                staged = stage_messages(thread_id, state[0], seqs, bodies, rows, self._clock)
                # not a tracked statement: the caches are kept up to date here instead
                write_staged(_insert_messages, _DuckTx(conn), [staged],
                             batch_dim if dim is None else None)
                h.filed([staged])
            except duckdb.Error as e:
                raise StorageError(f"append_messages failed: {e}") from e
            state[1] = seqs[-1]
            if thread_id in h.tails:
                h.tails[thread_id].add(staged)
            if has_vec and dim is None:
                h.dim = batch_dim
            return seqs

    # -- recall's reads: the file's rows with the appends waiting ----------------------
    @contextmanager
    def _unflushed(self, op: str) -> Iterator[bool]:
        """For a read that adds the waiting appends itself (caller holds the lock):
        True, and the read leaves them waiting and adds ``unfiled()`` as it is after
        the read of the file (which first waits for a commit in flight: its rows are
        then in the file); False when none wait or this process does not write the
        file (the read commits them first, as every operation)."""
        h = self.duck.handle
        if not h.unfiled() or not self._knows(op) or h.unflushed:
            yield False
            return
        with h.reading_past_waits():
            yield True

    def _kept(self, refs: Sequence[tuple[str, int]]) -> dict[tuple[str, int], StoredMessage]:
        """The messages of refs that wait to be committed or were committed lately by
        this process (``recent``), from memory (caller holds the lock)."""
        h = self.duck.handle
        if not (h.unfiled() or h.recent) or not self._knows("get_messages"):
            return {}
        seqs: dict[str, set[int]] = {}
        for t, q in refs:
            seqs.setdefault(str(t), set()).add(int(q))
        return {(m.thread_id, m.seq): m for t, wanted in seqs.items() for m in
                _staged_messages([*h.recent.get(t, ()), *h.unfiled()], t, wanted)}

    def get_messages_located(self, refs: Sequence[tuple[str, int]],
                             locators: Sequence[int],
                             created: Sequence[datetime | None] | None = None,
                             ) -> list[StoredMessage]:
        """The port's read; a message this process has in memory (waiting, or committed
        lately) is taken from there — a recall's hits among a live agent's last
        messages are read without touching the file."""
        with self.duck.handle.lock:
            kept = self._kept(refs)
            if not kept:
                return super().get_messages_located(refs, locators, created)
            times = list(created) if created is not None else [None] * len(refs)
            rest = [(r, loc, at) for r, loc, at in zip(refs, locators, times, strict=True)
                    if (str(r[0]), int(r[1])) not in kept]
            got = list(kept.values())
            if rest:
                got += super().get_messages_located(
                    [r for r, _, _ in rest], [loc for _, loc, _ in rest],
                    [at for _, _, at in rest])
        got.sort(key=lambda m: (m.thread_id, m.seq))
        return got

    def thread_stats(self, thread_ids: Sequence[str]) -> dict[str, tuple[int, int]]:
        h = self.duck.handle
        with h.lock, self._unflushed("thread_stats") as adds:
            stats = super().thread_stats(thread_ids)
            for s in h.unfiled() if adds else ():
                if s.thread_id in stats:
                    n, top = stats[s.thread_id]
                    stats[s.thread_id] = (n + len(s), max(top, s.top()))
            return stats

    def scope_counts(self, thread_id: str,
                     resource_id: str | None = None) -> dict[str, ThreadCounts]:
        h = self.duck.handle
        with h.lock, self._unflushed("scope_counts") as adds:
            key = (thread_id, resource_id)
            counts = h.known_scope(key) if self._knows("scope_counts") else None
            if counts is None:
                counts = super().scope_counts(thread_id, resource_id)
                h.noted_scope(key, counts)
            for s in h.unfiled() if adds else ():
                c = counts.get(s.thread_id)
                if c is not None:
                    counts[s.thread_id] = c._replace(message_count=c.message_count + len(s),
                                                     max_seq=max(c.max_seq, s.top()))
            return counts

    def scope_rows(self, thread_ids: Sequence[str], *,
                   after_seq: dict[str, int] | None = None, vectors: bool = True,
                   texts: bool = False, metadata: bool = False,
                   message_share: float = 0.0) -> ScopeRows:
        """The port's read; when every row asked for is one this process keeps (a live
        agent's recall looking at the messages of its last runs: waiting, or
        committed lately), built from memory without touching the file."""
        h = self.duck.handle
        threads = tuple(dict.fromkeys(thread_ids))
        after = after_seq or {}
        with h.lock:
            if (h.unfiled() or h.recent) and self._knows("scope_rows"):
                # the dimension first: a read of it may wait for a commit in flight,
                # which changes what is kept (known while writing: read from memory)
                dim = (self._embedding_dim() or 0) if vectors else 0
                if all(h.covers(t, after.get(t, -1)) for t in threads):
                    kept = [s for t in threads for s in h.recent.get(t, ())]
                    kept += [s for s in h.unfiled() if s.thread_id in threads]
                    return _kept_rows(ScopeScan(
                        threads, tuple(after.get(t, -1) for t in threads), dim, vectors,
                        texts, metadata, message_share if vectors else 0.0), kept)
        return super().scope_rows(thread_ids, after_seq=after_seq, vectors=vectors,
                                  texts=texts, metadata=metadata,
                                  message_share=message_share)

    # -- a thread's count and tail: read once while this process writes the file ----
    def _knows(self, op: str) -> bool:
        """Whether what this process knows of the file may answer a read (caller holds
        the lock): it writes the file. A failed background commit is raised here; a
        commit in flight is not waited for (what answers from memory counts its
        writes as waiting, ``unfiled``; a read of the file waits for it)."""
        h = self.duck.handle
        self.duck.check_open(op, False)
        h.raise_flush_error()
        return h.writing()

    def _tail(self, op: str, thread_id: str) -> _Tail | None:
        """What this process knows of the thread (caller holds the lock), read now if
        it is not known; None while it does not write the file (the callers then read
        as the shared store does). A thread that does not exist is an empty one, not
        kept."""
        h = self.duck.handle
        if not self._knows(op):
            return None
        known = h.tails.get(thread_id)
        if known is not None:
            return known
        stats = self.thread_stats([thread_id]).get(thread_id)
        if stats is None:
            return _Tail(0, -1)  # no such thread: an empty one, not kept
        known = _Tail(*stats)
        if h.writing():
            h.tails[thread_id] = known
        return known

    def count_messages(self, thread_id: str) -> int:
        with self.duck.handle.lock:
            known = self._tail("count_messages", thread_id)
            return known.count if known is not None else super().count_messages(thread_id)

    def max_seq(self, thread_id: str) -> int:
        with self.duck.handle.lock:
            known = self._tail("max_seq", thread_id)
            return known.top if known is not None else super().max_seq(thread_id)

    def get_tail(self, thread_id: str, n: int) -> list[StoredMessage]:
        """The port's rule (the messages of the last ``n`` seqs up to ``max_seq``), from
        what this process knows of the thread, reading only the seqs it does not (a
        tail longer than ``_Tail.MAX`` is read, not kept)."""
        if n <= 0:
            return []
        h = self.duck.handle
        with h.lock:
            known = self._tail("get_tail", thread_id)
            if known is None or n > _Tail.MAX:
                return super().get_tail(thread_id, n)
            if not known.covers(n):
                with self._db.read("get_tail") as tx:
                    rows = tx.query(f"SELECT {MSG_COLS} FROM messages WHERE thread_id = ?"
                                    " AND seq >= ? ORDER BY seq",
                                    (thread_id, known.top - n + 1))
                if h.tails.get(thread_id) is not known:  # not kept, or the read dropped it
                    return [row_to_message(r) for r in rows][-n:]
                known.fill(n, rows)
            return [row_to_message(r) for r in known.tail(n)][-n:]

    def get_messages(self, thread_id: str, *, from_seq: int | None = None,
                     to_seq: int | None = None,
                     seqs: Sequence[int] | None = None) -> list[StoredMessage]:
        """The port's read, from what this process knows of the thread when that holds
        every seq asked for (a recalled tool call's later rows, the rows before a
        recent window: each run reads them otherwise); else read."""
        h = self.duck.handle
        with h.lock:
            knows = self._knows("get_messages")
            known = h.tails.get(thread_id) if knows else None
            if known is not None:
                wanted = None if seqs is None else set(seqs)
                first = (from_seq or 0) if wanted is None else min(wanted, default=known.lo)
                last = known.top if to_seq is None else to_seq
                if first >= known.lo:
                    return [row_to_message(r) for r in known.rows
                            if (r[1] in wanted if wanted is not None
                                else first <= r[1] <= last)]
            if knows:
                wanted = None if seqs is None else {int(q) for q in seqs}
                lo = (from_seq or 0) if wanted is None else min(wanted, default=0)
                hi = math.inf if to_seq is None else to_seq
                if h.covers(thread_id, lo - 1):
                    # every row asked for is kept (committed lately, or waiting)
                    return _staged_messages([*h.recent.get(thread_id, ()), *h.unfiled()],
                                            thread_id, wanted, lo, hi)
                # the file's rows, then the thread's waiting ones (all above them): the
                # appends of other threads wait on (a recall's neighbours of a hit)
                with h.reading_past_waits():
                    out = super().get_messages(thread_id, from_seq=from_seq,
                                               to_seq=to_seq, seqs=seqs)
                return out + _staged_messages(h.unfiled(), thread_id, wanted, lo, hi)
        return super().get_messages(thread_id, from_seq=from_seq, to_seq=to_seq, seqs=seqs)

    def create_thread(self, thread_id: str | None = None, *, resource_id: str | None = None,
                      title: str | None = None, metadata: dict[str, Any] | None = None,
                      parent_thread_id: str | None = None) -> Thread:
        """The port's write, committed on its own without committing what waits first:
        no waiting write touches a new thread's row (an append's thread exists), so a
        crash that loses what waits leaves the thread as a resume finds any thread it
        made. (A commit of what waits costs ~5-10 ms; an agent that starts a thread a
        few runs paid one each.)"""
        h = self.duck.handle
        with h.lock, h.reading_past_waits():
            thread = super().create_thread(thread_id, resource_id=resource_id, title=title,
                                           metadata=metadata,
                                           parent_thread_id=parent_thread_id)
            if h.writing():
                if h.edits is None:
                    with self._db.read("create_thread") as tx:
                        h.edits = self._edits(tx) or 0
                h.made(thread, h.edits)
            return thread

    def get_working_memory(self, key: str) -> Any | None:
        """A working memory value, read once while this process writes the file (a
        composition with working memory reads it every run); any write of working
        memory, as every other write but the journal's and runs', drops what is kept."""
        h = self.duck.handle
        with h.lock:
            keep = self._knows("get_working_memory")
            if keep and key in h.wm:
                text = h.wm[key]
            else:
                with h.reading_past_waits():  # (no waiting write is a value's)
                    text = self.working_memory_text(key)
                if keep and h.writing():
                    h.wm[key] = text
        return None if text is None else decode_json(text)

    def get_thread(self, thread_id: str) -> Thread | None:
        """A thread's row, read once while this process writes the file: nothing else
        can change it then, and each write of this process that may drops it."""
        h = self.duck.handle
        with h.lock:
            known = h.rows.get(thread_id) if h.writing() else None
            if known is not None:
                return _thread_copy(known)
            with h.reading_past_waits():  # (appends change no field of the row)
                thread = super().get_thread(thread_id)
            if thread is not None and h.writing():
                h.rows[thread_id] = _thread_copy(thread)
            return thread

    def _thread_state(self, conn: Conn | None, thread_id: str) -> list[Any]:
        """[resource_id, highest seq incl. waiting appends] of a thread, read once."""
        h = self.duck.handle
        state = h.threads.get(thread_id)
        if state is None:
            assert conn is not None, "an append without the file needs what it knows"
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

    def embedding_dim(self) -> int | None:
        return self._embedding_dim()

    def _embedding_dim(self) -> int | None:
        """The port's read; known while this process writes the file (``_read_dim``),
        read without waiting for a commit in flight or committing what waits (no
        waiting append changes it: the append that sets it keeps it)."""
        h = self.duck.handle
        with h.lock:
            if h.dim_known and h.writing():
                return h.dim
            if h.pending_dim is not None:  # set by an append that waits
                return h.pending_dim
            with h.reading_past_waits():
                return super().embedding_dim()

    def _read_dim(self, tx: Any, lock: str = "") -> int | None:  # type: ignore[override]
        """The store's dimension, read once while this process writes the file (a
        recall's scope scan reads it every time otherwise)."""
        h = self.duck.handle
        with h.lock:
            if h.dim_known and h.writing():
                return h.dim
            dim = SqlMemoryStore._read_dim(tx, lock)
            if h.writing():
                h.dim, h.dim_known = dim, True
            return dim

    def _dim(self, conn: Conn | None) -> int | None:
        h = self.duck.handle
        if not h.dim_known:
            assert conn is not None, "an append without the file needs what it knows"
            rows = conn.execute("SELECT value FROM meta WHERE key = ?", [DIM_KEY]).fetchall()
            h.dim = int(rows[0][0]) if rows and rows[0][0] is not None else None
            h.dim_known = True
        return h.dim


class _DuckRunJournal(SqlRunJournal):
    """The shared SQL journal, with the journal records and runs of a deferred write
    group (``write_batch(durable=False)``) kept waiting in memory (``_Later``) instead
    of written: a few records, a run started, a status set. Its reads add what waits
    to what the file holds, so waiting writes stay waiting."""

    duck: _Database

    def _deferring(self) -> bool:
        """Whether a write waits (caller holds the lock): a deferred group is open and
        still waiting (not turned into a transaction)."""
        g = self.duck.handle.group
        return g is not None and not g.upgraded

    def _stored(self, table: str, column: str, keys: Sequence[str]) -> set[str]:
        """Which of ``keys`` are stored or waiting (caller holds the lock)."""
        h = self.duck.handle
        with self.duck.transaction(f"{table} look-up", write=False, merged=True) as conn:
            have = _stored_keys(_DuckTx(conn), h, table, column, keys)
        for later in h.waiting_later():
            waiting: Any = later.journal if table == "journal" else later.runs
            have |= {k for k in keys if k in waiting}
        return have

    def _defer_records(self, fresh: dict[str, str]) -> int:
        h = self.duck.handle
        have = self._stored("journal", "key", list(fresh))
        new = [(k, v, key_group(k)) for k, v in fresh.items() if k not in have]
        h.later.add_records(new)
        h.note_stored("journal", [r[0] for r in new])
        return len(new)

    def put_if_absent(self, key: str, value: Any) -> bool:
        with self.duck.handle.lock:
            if not self._deferring():
                return super().put_if_absent(key, value)
            return self._defer_records(journal_texts([(key, value)])) > 0

    def put_many_if_absent(self, items: Sequence[tuple[str, Any]]) -> int:
        with self.duck.handle.lock:
            fresh = journal_texts(items) if self._deferring() else None
            if fresh is None or len(fresh) > _DEFER_RECORDS:
                return super().put_many_if_absent(items)
            return self._defer_records(fresh) if fresh else 0

    def start_run(self, run: RunRecord) -> bool:
        values = run_values(run)
        h = self.duck.handle
        with h.lock:
            if not self._deferring():
                return super().start_run(run)
            if self._stored("runs", "run_id", [run.run_id]):
                return False
            h.later.add_run(values)
            h.note_stored("runs", [run.run_id])
            return True

    def set_run_status(self, run_id: str, status: RunStatus, *,
                       finished_at: datetime | None = None, error: str | None = None) -> None:
        require_aware(f"finished_at of run '{run_id}'", finished_at)
        h = self.duck.handle
        with h.lock:
            if not self._deferring():
                super().set_run_status(run_id, status, finished_at=finished_at, error=error)
                return
            finished = None if finished_at is None else ts_text(finished_at)
            if h.later.set_status(run_id, status, finished, error):
                return
            if not self._stored("runs", "run_id", [run_id]):
                raise NotFoundError(f"run '{run_id}' does not exist")
            h.later.set_stored_status(run_id, status, finished, error)

    # -- reads: the file's rows with what waits ------------------------------------------
    def get(self, key: str) -> Any | None:
        return self.get_many([key]).get(key)

    def get_many(self, keys: Sequence[str]) -> dict[str, Any]:
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return {}
        h = self.duck.handle
        with h.lock:
            waiting = {k: later.journal[k][0] for later in h.waiting_later()
                       for k in wanted if k in later.journal}
            rest = [k for k in wanted if k not in waiting]
            rows: builtins.list[tuple[str, str]] = []
            if rest:
                with self.duck.transaction("journal get", write=False, merged=True) as conn:
                    rows = self.record_rows(_DuckTx(conn), rest)
        return {k: decode_json(v) for k, v in [*rows, *waiting.items()]}

    def list(self, prefix: str) -> builtins.list[tuple[str, Any]]:
        """A whole group's listing (a run's records: a Runner's first look at a run)
        also says, in the same statement, whether a run of that id has a row: the
        Runner's next read, ``get_run``, then reads nothing for a new run."""
        h = self.duck.handle
        with h.lock:
            with self.duck.transaction("journal list", write=False, merged=True) as conn:
                if prefix.endswith(":") and key_group(prefix) == prefix and h.writing():
                    found = conn.execute(
                        "SELECT 0 AS k, NULL AS key, NULL AS value, NULL AS pos FROM runs"
                        " WHERE run_id = ? UNION ALL SELECT 1, key, value, pos FROM journal"
                        " WHERE grp = ? ORDER BY k, pos", [prefix[:-1], prefix]).fetchall()
                    rows = [(r[1], r[2]) for r in found if r[0] == 1]
                    if not found or found[0][0] != 0:
                        h.noted_missing_run(prefix[:-1])
                else:
                    rows = self.listed_rows(_DuckTx(conn), prefix)
            # (inside a group turned transaction, waiting records are in the file too;
            # beside a commit in flight, its records may be)
            seen = {r[0] for r in rows}
            for later in h.waiting_later():
                rows += [r for r in later.records_under(prefix) if r[0] not in seen]
            h.noted_listing(prefix, [r[0] for r in rows])
        return [(r[0], decode_json(r[1])) for r in rows]

    def get_run(self, run_id: str) -> RunRecord | None:
        h = self.duck.handle
        with h.lock:
            row = None
            # (no_run: a run the file has no row for, while this process writes it)
            waits = h.waiting_later()
            if all(run_id not in later.runs for later in waits) \
                    and not (h.writing() and run_id in h.no_run):
                with self.duck.transaction("get_run", write=False, merged=True) as conn:
                    row = self.run_row(_DuckTx(conn), run_id)
            for later in waits:
                row = later.run_row(run_id, row)
            if row is None:
                h.noted_missing_run(run_id)
        return None if row is None else row_to_run(row)


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
        self._open(_DuckDriver(self._duck), clock, ids, memory=_DuckMemoryStore,
                   runs=_DuckRunJournal)
        assert isinstance(self.memory, _DuckMemoryStore)
        assert isinstance(self.runs, _DuckRunJournal)
        self.memory.duck = self.runs.duck = self._duck

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
    def write_batch(self, *, durable: bool = True) -> Iterator[None]:
        """Every write in the block joins one transaction: one commit instead of one per
        write (an import writes tens of thousands of journal records). ``durable=False``
        (a Runner's write groups): its appends, journal records and runs wait in
        memory with those before them, committed together (``_Database.group``)."""
        if not durable:
            with self._duck.group("write batch") as deferred:
                if deferred:
                    yield
                    return
        # tracked: a batch of journal and run writes, and appends (which keep what
        # this process knows up to date), leaves the caches standing
        with self._duck.transaction("write batch", write=True, tracked=True):
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
