"""DuckDBStorage: both storage ports on one DuckDB database, in a file or ``:memory:``.

A file is held only while this process is using it, so other processes can read it
between writes; see docs/storage.md for the mechanism.
"""

from __future__ import annotations

import atexit
import builtins
import json
import os
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, TypeVar

import duckdb
import numpy as np
import pyarrow as pa

from memory_core.errors import (
    InvalidInputError,
    NotFoundError,
    StorageBusyError,
    StorageError,
)
from memory_core.storage.base import (
    THREAD_WM_PREFIX,
    EmbeddingBlock,
    MemoryStore,
    RunJournal,
    Storage,
)
from memory_core.storage.common import (
    Clock,
    ThreadIdFactory,
    decode_json,
    encode_json,
    json_or_invalid,
    ts_from_micros,
    ts_micros,
    utc_now,
    validate_batch,
)
from memory_core.types import (
    AppendRow,
    ErasureReport,
    Message,
    Observation,
    RunRecord,
    RunStatus,
    StoredMessage,
    Thread,
)

T = TypeVar("T")
Conn = duckdb.DuckDBPyConnection

MEMORY = ":memory:"
_BATCH_VIEW = "_mc_append_batch"  # name of the Arrow batch registered for one insert
_DIM_KEY = "embedding_dim"
_SMALL_BATCH = 8

# Append-only: position + 1 is the schema version. Never edit an applied entry; add one.
MIGRATIONS: list[tuple[str, ...]] = [
    (
        """CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR NOT NULL)""",
        """CREATE TABLE threads (
            id VARCHAR PRIMARY KEY, resource_id VARCHAR, title VARCHAR,
            metadata VARCHAR NOT NULL, parent_thread_id VARCHAR,
            created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL)""",
        """CREATE TABLE messages (
            thread_id VARCHAR NOT NULL, seq BIGINT NOT NULL, role VARCHAR NOT NULL,
            content VARCHAR NOT NULL, plain_text VARCHAR, text_lower VARCHAR,
            metadata VARCHAR NOT NULL, created_at BIGINT NOT NULL, run_id VARCHAR,
            resource_id VARCHAR, PRIMARY KEY (thread_id, seq))""",
        """CREATE TABLE embeddings (
            thread_id VARCHAR NOT NULL, seq BIGINT NOT NULL, vec FLOAT[] NOT NULL,
            PRIMARY KEY (thread_id, seq))""",
        """CREATE TABLE working_memory (key VARCHAR PRIMARY KEY, value VARCHAR NOT NULL)""",
        """CREATE TABLE observations (
            id VARCHAR PRIMARY KEY, thread_id VARCHAR NOT NULL, from_seq BIGINT,
            to_seq BIGINT, level INTEGER NOT NULL, obs_text VARCHAR NOT NULL,
            source_ids VARCHAR NOT NULL, created_at BIGINT NOT NULL,
            condensed BOOLEAN NOT NULL)""",
        """CREATE TABLE journal (
            key VARCHAR PRIMARY KEY, value VARCHAR NOT NULL, ordinal BIGINT NOT NULL)""",
        """CREATE TABLE runs (
            run_id VARCHAR PRIMARY KEY, agent VARCHAR NOT NULL, thread_id VARCHAR,
            resource_id VARCHAR, status VARCHAR NOT NULL, started_at BIGINT NOT NULL,
            finished_at BIGINT, error VARCHAR)""",
    ),
    (
        # each thread's message count and highest seq, kept by every message write so
        # thread_stats reads one row a thread; backfilled from the stored messages
        "ALTER TABLE threads ADD COLUMN message_count BIGINT DEFAULT 0",
        "ALTER TABLE threads ADD COLUMN max_seq BIGINT DEFAULT -1",
        """UPDATE threads SET
            message_count = (SELECT count(*) FROM messages m WHERE m.thread_id = threads.id),
            max_seq = (SELECT coalesce(max(m.seq), -1) FROM messages m
                       WHERE m.thread_id = threads.id)""",
    ),
]

def _one(cur: Conn) -> tuple[Any, ...] | None:
    """The first row; fetching them all because DuckDB 2 refuses new work on a
    connection whose last result was not read to the end."""
    rows = cur.fetchall()
    return rows[0] if rows else None


def _bulk_insert(conn: Conn, table: str, columns: str, placeholders: str,
                 arrays: dict[str, pa.Array], rows: list[list[Any]]) -> None:
    """Insert rows as bound parameters, or as one registered Arrow table when the
    batch is large (registering costs ~6 ms; a bound row ~0.7 ms)."""
    if len(rows) == 1:
        conn.execute(f"INSERT INTO {table} ({columns}) VALUES ({placeholders})", rows[0])
        return
    if len(rows) <= _SMALL_BATCH:
        conn.executemany(f"INSERT INTO {table} ({columns}) VALUES ({placeholders})", rows)
        return
    conn.register(_BATCH_VIEW, pa.table(arrays))
    try:
        # "?::FLOAT[]" placeholders become "vec::FLOAT[]": the same cast on the column
        select = ", ".join(name if c == "?" else f"{name}{c[1:]}" for name, c in
                           zip(columns.split(", "), placeholders.split(", "), strict=True))
        conn.execute(f"INSERT INTO {table} ({columns}) SELECT {select} FROM {_BATCH_VIEW}")
    finally:
        conn.unregister(_BATCH_VIEW)


def _stored_keys(conn: Conn, table: str, column: str, keys: list[str]) -> set[str]:
    """Which of ``keys`` the table already holds (one join against an Arrow batch)."""
    conn.register(_BATCH_VIEW, pa.table({"k": pa.array(keys, pa.string())}))
    try:
        return {r[0] for r in conn.execute(
            f"SELECT t.{column} FROM {table} t JOIN {_BATCH_VIEW} b ON t.{column} = b.k"
        ).fetchall()}
    finally:
        conn.unregister(_BATCH_VIEW)


def _is_lock_conflict(e: duckdb.Error) -> bool:
    text = str(e)
    return "Could not set lock" in text or "Conflicting lock" in text


def _arrow(conn: Conn, sql: str, params: list[Any]) -> pa.Table:
    rel = conn.sql(sql, params=params)
    to_table = getattr(rel, "to_arrow_table", None) or rel.arrow  # duckdb 2.x / 1.x
    return to_table()


# -- connections -----------------------------------------------------------------------
# A waiting process polls at most every ~30 ms (backoff cap x jitter); the gap left after
# a forced release is longer than that so a waiter can get in.
_POLL_CAP = 0.02
_COURTESY_GAP = 0.05


class _Handle:
    """Process-wide state of one database: the lock that serialises its operations
    across Python threads, the connection held by open sessions (or forever, for
    ``:memory:``), the lingering connection between operations, and the connection
    of the operation in progress (so nested operations join its transaction)."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.lock = threading.RLock()
        self.wake = threading.Condition(self.lock)
        self.held: Conn | None = None
        self.held_read_only = False
        self.holds = 0
        self.idle: Conn | None = None
        self.idle_read_only = False
        self.opened_at = 0.0
        self.last_used = 0.0
        self.linger = 0.0
        self.max_hold = 0.0
        self.reopen_after = 0.0
        self.closer: threading.Thread | None = None
        self.active: Conn | None = None
        self.active_read_only = False
        if path is None:
            self.held = duckdb.connect(MEMORY)

    def drop_idle(self, *, forced: bool = False) -> None:
        """Close the lingering connection (caller holds the lock)."""
        if self.idle is not None:
            conn, self.idle = self.idle, None
            conn.close()
            if forced:
                self.reopen_after = time.monotonic() + _COURTESY_GAP

    def start_closer(self) -> None:
        if self.closer is None:
            self.closer = threading.Thread(target=self._close_when_idle, daemon=True,
                                           name=f"duckdb-linger {self.path}")
            self.closer.start()

    def _close_when_idle(self) -> None:
        with self.lock:
            while self.idle is not None:
                now = time.monotonic()
                hold_end = self.opened_at + self.max_hold
                due = min(self.last_used + self.linger, hold_end)
                if now >= due:
                    self.drop_idle(forced=now >= hold_end)
                    break
                self.wake.wait(timeout=due - now)
            self.closer = None


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
            h.drop_idle()


class _Database:
    """One storage's view of a database: opens connections (with retry while another
    process holds the file), runs each operation in one transaction, maps errors."""

    def __init__(self, path: str, *, read_only: bool, lock_timeout: float, linger: float,
                 max_hold: float) -> None:
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
        self.closed = False

    def _connect(self, op: str, read_only: bool) -> Conn:
        assert self.handle.path is not None
        if read_only and not os.path.exists(self.handle.path):
            raise StorageError(f"{op} failed: database file '{self.handle.path}' does not exist")
        gap = self.handle.reopen_after - time.monotonic()
        if gap > 0:
            time.sleep(gap)  # this process just held the file for max_hold: let others in
        deadline = time.monotonic() + self.lock_timeout
        delay = 0.002
        while True:
            try:
                return duckdb.connect(self.handle.path, read_only=read_only)
            except duckdb.IOException as e:
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
        lingering one while it is young enough, or a new one that will linger."""
        h = self.handle
        if h.held is not None:
            if h.held_read_only and write:
                # a read-only session of this process is upgraded so the write can run
                h.held.close()
                h.held = self._connect(op, read_only=False)
                h.held_read_only = False
            return h.held, h.held_read_only
        if h.idle is not None:
            if time.monotonic() >= h.opened_at + h.max_hold:
                h.drop_idle(forced=True)
            elif write and h.idle_read_only:
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
                if write and h.active_read_only:
                    raise StorageError(f"{op} refused: the enclosing operation is read-only")
                yield h.active
                return
            conn, ro = self._connection(op, write)
            h.active, h.active_read_only = conn, ro
            try:
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
                if conn is h.idle:
                    h.last_used = time.monotonic()
                    h.linger, h.max_hold = self.linger, self.max_hold
                    if self.linger <= 0:
                        h.drop_idle()
                    else:
                        h.start_closer()

    def run(self, op: str, fn: Callable[[Conn], T], *, write: bool) -> T:
        with self.transaction(op, write=write) as conn:
            return fn(conn)

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
                    h.held.close()
                    h.held = None

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


# -- the memory store --------------------------------------------------------------------
_THREAD_COLS = "id, resource_id, title, metadata, parent_thread_id, created_at, updated_at"
_MSG_COLS = ("thread_id, seq, role, content, plain_text, text_lower, metadata, created_at, "
             "run_id, resource_id")
_MSG_READ = "thread_id, seq, role, content, metadata, created_at, run_id, resource_id"
_OBS_COLS = ("id, thread_id, from_seq, to_seq, level, obs_text, source_ids, created_at, "
             "condensed")
_RUN_COLS = "run_id, agent, thread_id, resource_id, status, started_at, finished_at, error"


def _thread(row: tuple[Any, ...]) -> Thread:
    return Thread(id=row[0], resource_id=row[1], title=row[2], metadata=json.loads(row[3]),
                  parent_thread_id=row[4], created_at=ts_from_micros(row[5]),
                  updated_at=ts_from_micros(row[6]))


def _message(row: tuple[Any, ...]) -> StoredMessage:
    return StoredMessage(thread_id=row[0], seq=row[1], role=row[2],
                         content=json.loads(row[3]), metadata=json.loads(row[4]),
                         created_at=ts_from_micros(row[5]), run_id=row[6], resource_id=row[7])


def _observation(row: tuple[Any, ...]) -> Observation:
    return Observation(id=row[0], thread_id=row[1], from_seq=row[2], to_seq=row[3],
                       level=row[4], text=row[5], source_ids=json.loads(row[6]),
                       created_at=ts_from_micros(row[7]), condensed=row[8])


def _run(row: tuple[Any, ...]) -> RunRecord:
    return RunRecord(run_id=row[0], agent=row[1], thread_id=row[2], resource_id=row[3],
                     status=row[4], started_at=ts_from_micros(row[5]),
                     finished_at=None if row[6] is None else ts_from_micros(row[6]), error=row[7])


def _stored_dim(conn: Conn) -> int | None:
    row = _one(conn.execute("SELECT value FROM meta WHERE key = ?", [_DIM_KEY]))
    return None if row is None else int(row[0])


def _get_thread(conn: Conn, thread_id: str) -> Thread | None:
    row = _one(conn.execute(f"SELECT {_THREAD_COLS} FROM threads WHERE id = ?",
                       [thread_id]))
    return None if row is None else _thread(row)


def _require_thread(conn: Conn, thread_id: str) -> Thread:
    t = _get_thread(conn, thread_id)
    if t is None:
        raise NotFoundError(f"thread '{thread_id}' does not exist")
    return t


def _json_field(thread_id: str, i: int, what: str, value: Any) -> str:
    return json_or_invalid(f"row {i} of the batch for thread '{thread_id}': {what}", value)


class DuckDBMemoryStore(MemoryStore):
    def __init__(self, db: _Database, clock: Clock, ids: ThreadIdFactory) -> None:
        self._db = db
        self._clock = clock
        self._ids = ids

    # -- threads
    def create_thread(self, thread_id: str | None = None, *, resource_id: str | None = None,
                      title: str | None = None, metadata: dict[str, Any] | None = None,
                      parent_thread_id: str | None = None) -> Thread:
        tid = thread_id or self._ids()
        if not isinstance(tid, str):
            raise InvalidInputError(f"thread id must be a string, got {tid!r}")
        meta_json = json_or_invalid(f"metadata of thread '{tid}'", dict(metadata or {}))

        def go(conn: Conn) -> Thread:
            if _get_thread(conn, tid) is not None:
                raise InvalidInputError(f"thread '{tid}' already exists")
            now = self._clock()
            conn.execute(f"INSERT INTO threads ({_THREAD_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                         [tid, resource_id, title, meta_json, parent_thread_id,
                          ts_micros(now), ts_micros(now)])
            return Thread(id=tid, resource_id=resource_id, title=title,
                          metadata=json.loads(meta_json), parent_thread_id=parent_thread_id,
                          created_at=now, updated_at=now)

        return self._db.run(f"create_thread '{tid}'", go, write=True)

    def get_thread(self, thread_id: str) -> Thread | None:
        return self._db.run(f"get_thread '{thread_id}'",
                            lambda c: _get_thread(c, thread_id), write=False)

    def list_threads(self, resource_id: str | None = None) -> list[Thread]:
        def go(conn: Conn) -> list[Thread]:
            rows = conn.execute(
                f"SELECT {_THREAD_COLS} FROM threads WHERE ?::VARCHAR IS NULL "
                "OR resource_id = ? ORDER BY created_at DESC, id ASC",
                [resource_id, resource_id]).fetchall()
            return [_thread(r) for r in rows]

        return self._db.run(f"list_threads of resource {resource_id!r}", go, write=False)

    def list_resources(self) -> list[str]:
        def go(conn: Conn) -> list[str]:
            rows = conn.execute(
                "SELECT DISTINCT resource_id FROM threads WHERE resource_id IS NOT NULL "
                "AND resource_id <> '' ORDER BY resource_id").fetchall()
            return [r[0] for r in rows]

        return self._db.run("list_resources", go, write=False)

    def update_thread(self, thread_id: str, *, title: str | None = None,
                      metadata: dict[str, Any] | None = None,
                      resource_id: str | None = None) -> Thread:
        def go(conn: Conn) -> Thread:
            t = _require_thread(conn, thread_id)
            patch: dict[str, Any] = {"updated_at": max(self._clock(), t.updated_at)}
            if title is not None:
                patch["title"] = title
            if metadata is not None:
                patch["metadata"] = {**t.metadata, **metadata}
            if resource_id is not None:
                patch["resource_id"] = resource_id
            nt = t.model_copy(update=patch, deep=True)
            meta_json = json_or_invalid(f"metadata of thread '{thread_id}'", nt.metadata)
            conn.execute("UPDATE threads SET title = ?, metadata = ?, resource_id = ?, "
                         "updated_at = ? WHERE id = ?",
                         [nt.title, meta_json, nt.resource_id, ts_micros(nt.updated_at),
                          thread_id])
            if resource_id is not None:
                conn.execute("UPDATE messages SET resource_id = ? WHERE thread_id = ?",
                             [resource_id, thread_id])
            return nt

        return self._db.run(f"update_thread '{thread_id}'", go, write=True)

    def clone_thread(self, source_id: str, new_id: str | None = None, *,
                     resource_id: str | None = None) -> Thread:
        def go(conn: Conn) -> Thread:
            src = _require_thread(conn, source_id)
            rid = resource_id or src.resource_id or "default"
            t = self.create_thread(new_id, resource_id=rid, title=src.title,
                                   metadata=src.metadata, parent_thread_id=source_id)
            conn.execute(
                f"INSERT INTO messages ({_MSG_COLS}) SELECT ?, seq, role, content, plain_text,"
                " text_lower, metadata, created_at, run_id, ? FROM messages"
                " WHERE thread_id = ?", [t.id, rid, source_id])
            conn.execute("INSERT INTO embeddings SELECT ?, seq, vec FROM embeddings "
                         "WHERE thread_id = ?", [t.id, source_id])
            conn.execute("UPDATE threads SET message_count = s.message_count, "
                         "max_seq = s.max_seq FROM threads s WHERE s.id = ? "
                         "AND threads.id = ?", [source_id, t.id])
            conn.execute("INSERT OR REPLACE INTO working_memory SELECT ?, value "
                         "FROM working_memory WHERE key = ?",
                         [f"{THREAD_WM_PREFIX}{t.id}", f"{THREAD_WM_PREFIX}{source_id}"])
            conn.execute(
                f"INSERT OR REPLACE INTO observations ({_OBS_COLS}) SELECT ? || '/' || id, ?,"
                " from_seq, to_seq, level, obs_text, source_ids, created_at, condensed"
                " FROM observations WHERE thread_id = ?", [t.id, t.id, source_id])
            return t

        return self._db.run(f"clone_thread '{source_id}'", go, write=True)

    # -- messages
    def append_messages(self, thread_id: str, rows: Sequence[AppendRow]) -> list[int]:
        op = f"append_messages on thread {thread_id!r}"

        def go(conn: Conn) -> list[int]:
            # one round trip for the store's dim, the thread and its highest seq
            found = _one(conn.execute(
                "SELECT (SELECT value FROM meta WHERE key = ?), "
                "(SELECT count(*) FROM threads WHERE id = ?), "
                "(SELECT resource_id FROM threads WHERE id = ?), "
                "(SELECT coalesce(max(seq), -1) FROM messages WHERE thread_id = ?)",
                [_DIM_KEY, thread_id, thread_id, thread_id]))
            assert found is not None
            dim_before = None if found[0] is None else int(found[0])
            explicit, dim = validate_batch(thread_id, rows, dim_before)
            if not found[1]:
                raise NotFoundError(f"thread '{thread_id}' does not exist")
            resource_id, top = found[2], int(found[3])
            if explicit:
                seqs = [int(r.seq) for r in rows if r.seq is not None]
                have = {s for (s,) in conn.execute(
                    "SELECT seq FROM messages WHERE thread_id = ? AND list_contains(?, seq)",
                    [thread_id, seqs]).fetchall()}
            else:
                seqs = list(range(top + 1, top + 1 + len(rows)))
                have = set()
            new = [(i, s) for i, s in enumerate(seqs) if s not in have]
            if not new:
                return seqs
            self._insert(conn, thread_id, resource_id, rows, new)
            # same transaction: only the rows inserted (repeated explicit seqs skipped)
            conn.execute("UPDATE threads SET message_count = message_count + ?, "
                         "max_seq = greatest(max_seq, ?) WHERE id = ?",
                         [len(new), max(s for _, s in new), thread_id])
            with_vec = [(i, s) for i, s in new if rows[i].embedding is not None]
            if with_vec:
                assert dim is not None
                vecs = [np.asarray(rows[i].embedding, dtype=np.float32) for i, _ in with_vec]
                _bulk_insert(conn, "embeddings", "thread_id, seq, vec", "?, ?, ?::FLOAT[]", {
                    "thread_id": pa.array([thread_id] * len(with_vec), pa.string()),
                    "seq": pa.array([s for _, s in with_vec], pa.int64()),
                    "vec": pa.FixedSizeListArray.from_arrays(pa.array(np.concatenate(vecs)),
                                                             dim),
                }, [[thread_id, s, v.tolist()] for (_, s), v in zip(with_vec, vecs, strict=True)])
                if dim_before is None:
                    conn.execute("INSERT INTO meta VALUES (?, ?)", [_DIM_KEY, str(dim)])
            return seqs

        return self._db.run(op, go, write=True)

    def _insert(self, conn: Conn, thread_id: str, resource_id: str | None,
                rows: Sequence[AppendRow], new: list[tuple[int, int]]) -> None:
        cols: dict[str, list[Any]] = {k: [] for k in (
            "thread_id", "seq", "role", "content", "plain_text", "text_lower", "metadata",
            "created_at", "run_id", "resource_id")}
        for i, seq in new:
            r = rows[i]
            text = r.message.text()
            content = r.message.model_dump(mode="json")["content"]
            cols["thread_id"].append(thread_id)
            cols["seq"].append(seq)
            cols["role"].append(r.message.role)
            cols["content"].append(_json_field(thread_id, i, "content", content))
            cols["plain_text"].append(text)
            # lowered in Python so search matches the reference adapter's str.lower()
            cols["text_lower"].append(None if text is None else text.lower())
            cols["metadata"].append(_json_field(thread_id, i, "metadata", r.message.metadata))
            cols["created_at"].append(ts_micros(r.created_at or self._clock()))
            cols["run_id"].append(r.run_id)
            cols["resource_id"].append(resource_id)
        names = list(cols)
        arrays = {k: pa.array(v, pa.int64() if k in ("seq", "created_at") else pa.string())
                  for k, v in cols.items()}
        _bulk_insert(conn, "messages", ", ".join(names), ", ".join("?" for _ in names), arrays,
                     [list(r) for r in zip(*cols.values(), strict=True)])

    def get_messages(self, thread_id: str, *, from_seq: int | None = None,
                     to_seq: int | None = None,
                     seqs: Sequence[int] | None = None) -> list[StoredMessage]:
        def go(conn: Conn) -> list[StoredMessage]:
            if seqs is not None:
                rows = conn.execute(
                    f"SELECT {_MSG_READ} FROM messages WHERE thread_id = ? "
                    "AND list_contains(?::BIGINT[], seq) ORDER BY seq",
                    [thread_id, [int(s) for s in seqs]]).fetchall()
            else:
                rows = conn.execute(
                    f"SELECT {_MSG_READ} FROM messages WHERE thread_id = ? "
                    "AND (?::BIGINT IS NULL OR seq >= ?) AND (?::BIGINT IS NULL OR seq <= ?) "
                    "ORDER BY seq", [thread_id, from_seq, from_seq, to_seq, to_seq]).fetchall()
            return [_message(r) for r in rows]

        return self._db.run(f"get_messages of thread {thread_id!r}", go, write=False)

    # The counters on the threads row are kept by every write that adds or removes
    # messages, so these read one row a thread instead of counting its messages.
    def count_messages(self, thread_id: str) -> int:
        def go(conn: Conn) -> int:
            row = _one(conn.execute("SELECT message_count FROM threads WHERE id = ?",
                                    [thread_id]))
            return int(row[0]) if row else 0

        return self._db.run(f"count_messages of thread {thread_id!r}", go, write=False)

    def max_seq(self, thread_id: str) -> int:
        def go(conn: Conn) -> int:
            row = _one(conn.execute("SELECT max_seq FROM threads WHERE id = ?", [thread_id]))
            return int(row[0]) if row else -1

        return self._db.run(f"max_seq of thread {thread_id!r}", go, write=False)

    def thread_stats(self, thread_ids: Sequence[str]) -> dict[str, tuple[int, int]]:
        tids = list(dict.fromkeys(thread_ids))
        if not tids:
            return {}

        def go(conn: Conn) -> dict[str, tuple[int, int]]:
            rows = conn.execute(
                "SELECT id, message_count, max_seq FROM threads "
                "WHERE list_contains(?::VARCHAR[], id)", [tids]).fetchall()
            return {str(r[0]): (int(r[1]), int(r[2])) for r in rows}

        return self._db.run(f"thread_stats of {len(tids)} threads", go, write=False)

    def get_messages_by_refs(self, refs: Sequence[tuple[str, int]]) -> list[StoredMessage]:
        pairs = sorted({(str(t), int(s)) for t, s in refs})
        if not pairs:
            return []

        def go(conn: Conn) -> list[StoredMessage]:
            rows = conn.execute(
                f"SELECT {_MSG_READ} FROM messages SEMI JOIN (SELECT "
                "unnest(?::VARCHAR[]) AS ref_thread, unnest(?::BIGINT[]) AS ref_seq) "
                "ON thread_id = ref_thread AND seq = ref_seq",
                [[t for t, _ in pairs], [q for _, q in pairs]]).fetchall()
            out = [_message(r) for r in rows]
            # Python order, not the database collation, so every adapter agrees
            out.sort(key=lambda m: (m.thread_id, m.seq))
            return out

        return self._db.run(f"get_messages_by_refs of {len(pairs)} messages", go, write=False)

    def get_messages_by_run(self, thread_id: str, run_id: str) -> list[StoredMessage]:
        def go(conn: Conn) -> list[StoredMessage]:
            rows = conn.execute(f"SELECT {_MSG_READ} FROM messages WHERE thread_id = ? "
                                "AND run_id = ? ORDER BY seq", [thread_id, run_id]).fetchall()
            return [_message(r) for r in rows]

        return self._db.run(f"get_messages_by_run of thread {thread_id!r}", go, write=False)

    def get_tail(self, thread_id: str, n: int) -> list[StoredMessage]:
        if n <= 0:
            return []

        # the port's rule, in one query: seqs from max_seq - n + 1 upwards
        def go(conn: Conn) -> list[StoredMessage]:
            rows = conn.execute(
                f"SELECT {_MSG_READ} FROM messages WHERE thread_id = ? AND seq >= "
                "(SELECT max(seq) FROM messages WHERE thread_id = ?) - ? + 1 ORDER BY seq",
                [thread_id, thread_id, n]).fetchall()
            return [_message(r) for r in rows][-n:]

        return self._db.run(f"get_tail of thread {thread_id!r}", go, write=False)

    def get_embeddings(self, thread_ids: Sequence[str], *,
                       after_seq: dict[str, int] | None = None) -> EmbeddingBlock:
        tids = sorted(set(thread_ids))
        los = [int((after_seq or {}).get(t, -1)) for t in tids]

        def go(conn: Conn) -> EmbeddingBlock:
            dim = _stored_dim(conn) or 0
            table = _arrow(conn,
                           "SELECT e.thread_id, e.seq, e.vec FROM embeddings e JOIN "
                           "(SELECT unnest(?::VARCHAR[]) AS tid, unnest(?::BIGINT[]) AS lo) f "
                           "ON e.thread_id = f.tid AND e.seq > f.lo "
                           "ORDER BY e.thread_id, e.seq", [tids, los])
            n = table.num_rows
            if n == 0:
                return EmbeddingBlock(np.array([], dtype=object), np.zeros(0, np.int64),
                                      np.zeros((0, dim), np.float32))
            vec = table.column("vec").combine_chunks()
            matrix = vec.flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
            return EmbeddingBlock(
                np.array(table.column("thread_id").to_pylist(), dtype=object),
                table.column("seq").to_numpy().astype(np.int64, copy=False),
                matrix.reshape(n, dim))

        return self._db.run(f"get_embeddings of threads {tids!r}", go, write=False)

    def embedding_dim(self) -> int | None:
        return self._db.run("embedding_dim", _stored_dim, write=False)

    def search_messages(self, text: str, *, resource_id: str | None = None,
                        thread_id: str | None = None, limit: int = 100) -> list[StoredMessage]:
        needle = text.lower()
        if not needle:
            return []

        def go(conn: Conn) -> list[StoredMessage]:
            cols = ", ".join(f"m.{c.strip()}" for c in _MSG_READ.split(","))
            rows = conn.execute(
                f"SELECT {cols} FROM messages m JOIN threads t ON t.id = m.thread_id "
                "WHERE (?::VARCHAR IS NULL OR t.resource_id = ?) "
                "AND (?::VARCHAR IS NULL OR m.thread_id = ?) "
                "AND m.text_lower IS NOT NULL AND contains(m.text_lower, ?) "
                "ORDER BY m.created_at, m.thread_id, m.seq",
                [resource_id, resource_id, thread_id, thread_id, needle]).fetchall()
            return [_message(r) for r in rows]

        return self._db.run(f"search_messages for {text!r}", go, write=False)[:limit]

    # -- working memory
    def get_working_memory(self, key: str) -> Any | None:
        def go(conn: Conn) -> Any | None:
            row = _one(conn.execute("SELECT value FROM working_memory WHERE key = ?",
                               [key]))
            return None if row is None else decode_json(row[0])

        return self._db.run(f"get_working_memory '{key}'", go, write=False)

    def put_working_memory(self, key: str, value: Any) -> None:
        text = encode_json(key, value)
        self._db.run(f"put_working_memory '{key}'",
                     lambda c: c.execute("INSERT OR REPLACE INTO working_memory VALUES (?, ?)",
                                         [key, text]), write=True)

    def list_working_memory_keys(self) -> list[str]:
        def go(conn: Conn) -> list[str]:
            return [r[0] for r in conn.execute(
                "SELECT key FROM working_memory ORDER BY key").fetchall()]

        return self._db.run("list_working_memory_keys", go, write=False)

    def delete_working_memory(self, key: str) -> bool:
        def go(conn: Conn) -> bool:
            # a stored JSON null is a row too, so it counts as existing
            row = _one(conn.execute("DELETE FROM working_memory WHERE key = ?", [key]))
            return bool(row and row[0])

        return self._db.run(f"delete_working_memory '{key}'", go, write=True)

    # -- observations
    def put_observation(self, observation: Observation) -> None:
        o = observation
        sources = json_or_invalid(f"source_ids of observation '{o.id}'", o.source_ids)
        self._db.run(
            f"put_observation '{o.id}'",
            lambda c: c.execute(
                f"INSERT OR IGNORE INTO observations ({_OBS_COLS}) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [o.id, o.thread_id, o.from_seq, o.to_seq, o.level, o.text, sources,
                 ts_micros(o.created_at), o.condensed]), write=True)

    def list_observations(self, thread_id: str, *,
                          include_condensed: bool = True) -> list[Observation]:
        def go(conn: Conn) -> list[Observation]:
            rows = conn.execute(
                f"SELECT {_OBS_COLS} FROM observations WHERE thread_id = ? "
                "AND (? OR NOT condensed) ORDER BY created_at, id",
                [thread_id, include_condensed]).fetchall()
            return [_observation(r) for r in rows]

        return self._db.run(f"list_observations of thread {thread_id!r}", go, write=False)

    def mark_condensed(self, observation_ids: Sequence[str]) -> None:
        ids = [str(i) for i in observation_ids]
        if not ids:
            return
        self._db.run("mark_condensed",
                     lambda c: c.execute("UPDATE observations SET condensed = true "
                                         "WHERE list_contains(?::VARCHAR[], id)", [ids]),
                     write=True)

    # -- erasure
    def redact_message(self, thread_id: str, seq: int, message: Message) -> bool:
        text = message.text()
        content = message.model_dump(mode="json")["content"]

        def go(conn: Conn) -> bool:
            found = conn.execute("SELECT 1 FROM messages WHERE thread_id = ? AND seq = ?",
                                 [thread_id, int(seq)]).fetchone()
            if found is None:
                return False
            conn.execute("UPDATE messages SET role = ?, content = ?, plain_text = ?,"
                         " text_lower = ?, metadata = ? WHERE thread_id = ? AND seq = ?",
                         [message.role, _json_field(thread_id, seq, "content", content), text,
                          None if text is None else text.lower(),
                          _json_field(thread_id, seq, "metadata", message.metadata),
                          thread_id, int(seq)])
            conn.execute("DELETE FROM embeddings WHERE thread_id = ? AND seq = ?",
                         [thread_id, int(seq)])
            return True

        return bool(self._db.run("redact_message", go, write=True))

    def delete_thread(self, thread_id: str) -> ErasureReport:
        def go(conn: Conn) -> ErasureReport:
            _require_thread(conn, thread_id)

            def count(sql: str, params: list[Any]) -> int:
                row = _one(conn.execute(sql, params))
                return int(row[0]) if row else 0

            messages = count("SELECT count(*) FROM messages WHERE thread_id = ?", [thread_id])
            embeddings = count("SELECT count(*) FROM embeddings WHERE thread_id = ?",
                               [thread_id])
            observations = count("SELECT count(*) FROM observations WHERE thread_id = ?",
                                 [thread_id])
            key = f"{THREAD_WM_PREFIX}{thread_id}"
            wm = [key] if count("DELETE FROM working_memory WHERE key = ?", [key]) else []
            for table in ("messages", "embeddings", "observations"):
                conn.execute(f"DELETE FROM {table} WHERE thread_id = ?", [thread_id])
            conn.execute("DELETE FROM threads WHERE id = ?", [thread_id])
            return ErasureReport(threads=[thread_id], messages=messages, embeddings=embeddings,
                                 working_memory=wm, observations=observations)

        return self._db.run(f"delete_thread '{thread_id}'", go, write=True)


# -- the run journal ---------------------------------------------------------------------
class DuckDBRunJournal(RunJournal):
    def __init__(self, db: _Database) -> None:
        self._db = db

    def put_if_absent(self, key: str, value: Any) -> bool:
        if not isinstance(key, str) or not key:
            raise InvalidInputError(f"journal key must be a non-empty string, got {key!r}")
        text = encode_json(key, value)

        def go(conn: Conn) -> bool:
            if _one(conn.execute("SELECT 1 FROM journal WHERE key = ?", [key])):
                return False
            conn.execute("INSERT INTO journal SELECT ?, ?, coalesce(max(ordinal), 0) + 1 "
                         "FROM journal", [key, text])
            return True

        return self._db.run(f"journal put_if_absent '{key}'", go, write=True)

    def put_many_if_absent(self, items: Sequence[tuple[str, Any]]) -> int:
        """One anti-join insert: keys already stored (or repeated in ``items``) keep
        their first value; ordinals follow the order of ``items``."""
        fresh: dict[str, str] = {}
        for key, value in items:
            if not isinstance(key, str) or not key:
                raise InvalidInputError(f"journal key must be a non-empty string, got {key!r}")
            if key not in fresh:
                fresh[key] = encode_json(key, value)
        if not fresh:
            return 0

        def go(conn: Conn) -> int:
            have = _stored_keys(conn, "journal", "key", list(fresh))
            rows = [[k, v] for k, v in fresh.items() if k not in have]
            if not rows:
                return 0
            top = _one(conn.execute("SELECT coalesce(max(ordinal), 0) FROM journal"))
            base = int(top[0]) if top else 0
            cols = {"key": pa.array([r[0] for r in rows], pa.string()),
                    "value": pa.array([r[1] for r in rows], pa.string()),
                    "ordinal": pa.array(range(base + 1, base + 1 + len(rows)), pa.int64())}
            _bulk_insert(conn, "journal", "key, value, ordinal", "?, ?, ?", cols,
                         [[k, v, base + 1 + i] for i, (k, v) in enumerate(rows)])
            return len(rows)

        return self._db.run(f"journal put_many_if_absent ({len(fresh)} keys)", go, write=True)

    def get(self, key: str) -> Any | None:
        def go(conn: Conn) -> Any | None:
            row = _one(conn.execute("SELECT value FROM journal WHERE key = ?", [key]))
            return None if row is None else decode_json(row[0])

        return self._db.run(f"journal get '{key}'", go, write=False)

    def list(self, prefix: str) -> builtins.list[tuple[str, Any]]:
        def go(conn: Conn) -> builtins.list[tuple[str, Any]]:
            rows = conn.execute("SELECT key, value FROM journal WHERE starts_with(key, ?) "
                                "ORDER BY ordinal", [prefix]).fetchall()
            return [(k, decode_json(v)) for k, v in rows]

        return self._db.run(f"journal list '{prefix}'", go, write=False)

    def delete(self, prefix: str) -> int:
        def go(conn: Conn) -> int:
            row = _one(conn.execute("DELETE FROM journal WHERE starts_with(key, ?)",
                               [prefix]))
            return int(row[0]) if row else 0

        return self._db.run(f"journal delete '{prefix}'", go, write=True)

    def start_runs(self, runs: Sequence[RunRecord]) -> builtins.list[str]:
        """One anti-join insert of the runs not stored yet (the first of repeated ids)."""
        fresh = {r.run_id: r for r in reversed(runs)}
        if not fresh:
            return []

        def go(conn: Conn) -> builtins.list[str]:
            have = _stored_keys(conn, "runs", "run_id", list(fresh))
            new = [r for r in runs if r.run_id not in have and fresh.get(r.run_id) is r]
            rows = [[r.run_id, r.agent, r.thread_id, r.resource_id, r.status,
                     ts_micros(r.started_at),
                     None if r.finished_at is None else ts_micros(r.finished_at), r.error]
                    for r in new]
            if rows:
                names = _RUN_COLS.split(", ")
                types = [pa.int64() if n in ("started_at", "finished_at") else pa.string()
                         for n in names]
                cols = {n: pa.array([row[i] for row in rows], t)
                        for i, (n, t) in enumerate(zip(names, types, strict=True))}
                _bulk_insert(conn, "runs", _RUN_COLS, ", ".join("?" for _ in names), cols,
                             rows)
            return [r.run_id for r in new]

        return self._db.run(f"start_runs ({len(fresh)} runs)", go, write=True)

    def start_run(self, run: RunRecord) -> bool:
        def go(conn: Conn) -> bool:
            if _one(conn.execute("SELECT 1 FROM runs WHERE run_id = ?", [run.run_id])):
                return False
            conn.execute(f"INSERT INTO runs ({_RUN_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                         [run.run_id, run.agent, run.thread_id, run.resource_id, run.status,
                          ts_micros(run.started_at),
                          None if run.finished_at is None else ts_micros(run.finished_at),
                          run.error])
            return True

        return self._db.run(f"start_run '{run.run_id}'", go, write=True)

    def set_run_status(self, run_id: str, status: RunStatus, *,
                       finished_at: datetime | None = None, error: str | None = None) -> None:
        # validated through the model so a bad status is refused like the reference's
        def go(conn: Conn) -> None:
            r = _get_run(conn, run_id)
            if r is None:
                raise NotFoundError(f"run '{run_id}' does not exist")
            nr = RunRecord.model_validate({**r.model_dump(), "status": status,
                                           "finished_at": finished_at, "error": error})
            conn.execute("UPDATE runs SET status = ?, finished_at = ?, error = ? "
                         "WHERE run_id = ?",
                         [nr.status, None if nr.finished_at is None else ts_micros(nr.finished_at),
                          nr.error, run_id])

        self._db.run(f"set_run_status '{run_id}'", go, write=True)

    def get_run(self, run_id: str) -> RunRecord | None:
        return self._db.run(f"get_run '{run_id}'", lambda c: _get_run(c, run_id), write=False)

    def list_runs(self, *, thread_id: str | None = None,
                  resource_id: str | None = None) -> builtins.list[RunRecord]:
        def go(conn: Conn) -> builtins.list[RunRecord]:
            rows = conn.execute(
                f"SELECT {_RUN_COLS} FROM runs WHERE (?::VARCHAR IS NULL OR thread_id = ?) "
                "AND (?::VARCHAR IS NULL OR resource_id = ?) ORDER BY started_at, run_id",
                [thread_id, thread_id, resource_id, resource_id]).fetchall()
            return [_run(r) for r in rows]

        return self._db.run("list_runs", go, write=False)

    def delete_runs(self, run_ids: Sequence[str]) -> int:
        ids = [str(r) for r in run_ids]
        if not ids:
            return 0

        def go(conn: Conn) -> int:
            row = _one(conn.execute("DELETE FROM runs WHERE list_contains(?::VARCHAR[], run_id)",
                               [ids]))
            return int(row[0]) if row else 0

        return self._db.run("delete_runs", go, write=True)


def _get_run(conn: Conn, run_id: str) -> RunRecord | None:
    row = _one(conn.execute(f"SELECT {_RUN_COLS} FROM runs WHERE run_id = ?", [run_id]))
    return None if row is None else _run(row)


# -- the adapter ---------------------------------------------------------------------------
class DuckDBStorage(Storage):
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
                 read_only: bool = False, linger: float = 0.05,
                 max_hold: float = 0.5) -> None:
        for name, value in (("lock_timeout", lock_timeout), ("linger", linger),
                            ("max_hold", max_hold)):
            if not value >= 0:
                raise InvalidInputError(f"{name} must be a number >= 0, got {value!r}")
        self._db = _Database(os.fspath(path), read_only=read_only, lock_timeout=lock_timeout,
                             linger=linger, max_hold=max_hold)
        self.path = self._db.path
        self.read_only = read_only
        self.memory = DuckDBMemoryStore(self._db, clock, ids or ThreadIdFactory(clock))
        self.runs = DuckDBRunJournal(self._db)
        self._clock = clock
        self.setup()

    def setup(self) -> int:
        """Apply the migrations this database lacks, in one transaction; returns the
        schema version. A read-only storage only checks the version."""

        def go(conn: Conn) -> int:
            if not self.read_only:
                conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations ("
                             "version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)")
            try:
                row = _one(conn.execute("SELECT coalesce(max(version), 0) "
                                   "FROM schema_migrations"))
            except duckdb.CatalogException as e:
                raise StorageError(
                    f"setup failed: '{self.path}' holds no memory_core schema; open it "
                    "once without read_only to create it") from e
            version = int(row[0]) if row else 0
            if version > len(MIGRATIONS):
                raise StorageError(
                    f"setup failed: '{self.path}' has schema version {version}, newer than "
                    f"this code's {len(MIGRATIONS)}; upgrade memory_core")
            if version < len(MIGRATIONS) and self.read_only:
                raise StorageError(
                    f"setup failed: '{self.path}' has schema version {version}, expected "
                    f"{len(MIGRATIONS)}; open it once without read_only to migrate")
            for v in range(version + 1, len(MIGRATIONS) + 1):
                for statement in MIGRATIONS[v - 1]:
                    conn.execute(statement)
                conn.execute("INSERT INTO schema_migrations VALUES (?, ?)",
                             [v, ts_micros(self._clock())])
            return len(MIGRATIONS)

        return self._db.run(f"setup of '{self.path}'", go, write=not self.read_only)

    def schema_version(self) -> int:
        def go(conn: Conn) -> int:
            row = _one(conn.execute("SELECT max(version) FROM schema_migrations"))
            return int(row[0]) if row and row[0] is not None else 0

        return self._db.run("schema_version", go, write=False)

    @contextmanager
    def session(self) -> Iterator[None]:
        """Hold the file for every operation in the block, with no max_hold release
        (a demo build, an import); other processes wait until it ends."""
        with self._db.session():
            yield

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def write_batch(self) -> Iterator[None]:
        """Every write in the block joins one transaction: one commit instead of one per
        write (an import writes tens of thousands of journal records)."""
        with self._db.transaction("write batch", write=True):
            yield

    def erase_thread(self, thread_id: str) -> ErasureReport:
        with self._db.transaction(f"erase_thread '{thread_id}'", write=True):
            return super().erase_thread(thread_id)

    def erase_resource(self, resource_id: str) -> ErasureReport:
        with self._db.transaction(f"erase_resource '{resource_id}'", write=True):
            return super().erase_resource(resource_id)


__all__ = ["MIGRATIONS", "DuckDBStorage"]
