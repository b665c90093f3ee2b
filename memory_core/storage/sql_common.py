"""The MemoryStore and RunJournal ports written once in portable SQL, for every SQL
engine: SQLite, PostgreSQL and DuckDB each supply only a Driver (connections,
transactions, error mapping) and a few dialect hooks.

The SQL here uses ``?`` placeholders and only constructs all three engines understand
(``ON CONFLICT``, ``substr``/``length``, ``||``, ``WITH v(a, b) AS (VALUES ...)``); a
driver rewrites placeholders if it must. The schema and its one migration list are in
memory_core/storage/schema.py. JSON is stored as canonical TEXT so a journal value
reads back byte-identically; vectors are float32 blobs. Behaviour follows
memory_core/storage/inmemory.py method by method.

Driver hooks, each with a portable default: ``lock_row`` (a row lock inside a write),
``contains`` (substring test), ``insert_rows`` (a batch insert; DuckDB loads large
batches through Arrow), ``vector_param`` (how a vector is bound; DuckDB stores
``FLOAT[]``) and ``read_vectors`` (DuckDB reads a scope's vectors as one Arrow
column).
"""

from __future__ import annotations

import builtins
import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import numpy as np

from memory_core.errors import InvalidInputError, NotFoundError, StorageError
from memory_core.storage import schema
from memory_core.storage.base import (
    EmbeddingBlock,
    MemoryStore,
    MessageColumns,
    ObservationVector,
    RunJournal,
    RunRow,
    ScopeRows,
    Storage,
    ThreadActivity,
    ThreadCounts,
    ThreadRuns,
    check_observation_vector,
    message_budget,
    tally_thread_runs,
)
from memory_core.storage.common import (
    EDITS_KEY,
    SEQ_FLOOR_PREFIX,
    Clock,
    ThreadIdFactory,
    check_seq_bound,
    checked_clock,
    decode_json,
    decode_vectors,
    encode_json,
    encode_vector,
    journal_texts,
    json_or_invalid,
    key_group,
    many_objects,
    message_bodies,
    message_body,
    require_aware,
    stored_message,
    ts_micros,
    utc_now,
    validate_batch,
)
from memory_core.storage.schema import (
    DIM_KEY,
    Dialect,
    Migration,
    Tx,
    apply_migrations,
)
from memory_core.storage.staging import MESSAGE_INSERT, StagedMessages, stage_messages
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
from memory_core.vectors import with_spare_rows

# Bound-parameter lists are chunked: SQLite caps the number of variables per statement.
_CHUNK = 500


def ts_text(dt: datetime) -> str:
    return dt.isoformat()


def ts_parse(text: str) -> datetime:
    """A stored time read back; StorageError naming it when it is not an ISO time (the
    database was edited or damaged): one clear error, never a traceback."""
    try:
        return datetime.fromisoformat(text)
    except (TypeError, ValueError):
        raise StorageError(f"a stored time {text!r} is not an ISO date and time (the "
                           "database was edited or damaged)") from None


def ts_parse_opt(text: str | None) -> datetime | None:
    return None if text is None else ts_parse(text)


def _chunks(items: Sequence[Any]) -> Iterator[Sequence[Any]]:
    for i in range(0, len(items), _CHUNK):
        yield items[i:i + _CHUNK]


def _marks(n: int) -> str:
    return ",".join("?" * n)


def insert_sql(table: str, columns: Sequence[str], rows: int = 1) -> str:
    """``INSERT INTO table (columns) VALUES (?, …)`` with ``rows`` groups of marks: the
    one spelling of a plain insert every driver binds its rows to."""
    one = f"({_marks(len(columns))})"
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES {','.join([one] * rows)}"


class Driver(ABC):
    """Engine-specific part of an SQL adapter.

    ``write(op)`` yields a transaction that is serialised against every other write
    that could assign seqs (the engine's own locking), commits on success and rolls
    back on any exception; ``read(op)`` yields a consistent-enough read. Both re-raise
    driver errors as StorageError naming ``op``.
    """

    #: how this engine spells the schema's types
    dialect: Dialect = Dialect()
    #: the database, for error messages
    where: str = "database"
    #: appended to a SELECT on one threads row inside write(): a row lock where the
    #: engine has them ("" where write() already excludes other writers).
    lock_row: str = ""
    #: SQL expression template testing that text column {col} contains parameter ?.
    contains: str = "instr({col}, ?) > 0"

    @abstractmethod
    def read(self, op: str) -> AbstractContextManager[Tx]: ...

    @abstractmethod
    def write(self, op: str) -> AbstractContextManager[Tx]: ...

    def read_single(self, op: str) -> AbstractContextManager[Tx]:
        """``read`` for a body that runs one statement (it needs no snapshot across
        statements): an engine that pays round trips for a transaction skips it."""
        return self.read(op)

    @abstractmethod
    def close(self) -> None: ...

    def batch(self) -> AbstractContextManager[None]:
        """``Storage.write_batch``: every write in the block in one transaction, where
        the engine's driver can; by default each write commits on its own."""
        return nullcontext()

    def migrate(self, migrations: Sequence[Migration], now: datetime) -> None:
        """Apply the migrations this database lacks, in one write transaction."""
        with self.write("migrate") as tx:
            apply_migrations(tx, self.dialect, migrations, now, self.where)

    def insert_rows(self, tx: Tx, table: str, columns: Sequence[str],
                    rows: Sequence[Sequence[Any]]) -> None:
        """Insert a batch of rows (all new) into table."""
        tx.executemany(insert_sql(table, columns), rows)

    def insert_absent(self, tx: Tx, table: str, key: str, columns: Sequence[str],
                      rows: Sequence[Sequence[Any]]) -> int:
        """Insert the few ``rows`` (distinct ``key``, the first column) whose key is not
        stored yet; returns how many went in. One ``INSERT … ON CONFLICT DO NOTHING``."""
        if not rows:
            return 0
        return tx.execute(f"{insert_sql(table, columns, len(rows))}"
                          f" ON CONFLICT ({key}) DO NOTHING", [v for r in rows for v in r])

    def vector_param(self, v: np.ndarray) -> Any:
        """A vector as the embedding column's parameter (float32 bytes here)."""
        return encode_vector(v)

    def insert_messages(self, tx: Tx, staged: Sequence[StagedMessages]) -> None:
        """Insert the staged appends (all new rows), in order: by default as bound
        rows through ``insert_rows``."""
        self.insert_rows(tx, "messages", MESSAGE_INSERT,
                         [row for s in staged for row in s.rows(self.vector_param)])

    def noted_listing(self, prefix: str, keys: Sequence[str]) -> None:
        """A read inside ``read`` found these journal keys, all there are under
        ``prefix``: an engine whose writer excludes every other may keep that for
        ``insert_absent`` (ignored by default)."""
        return None

    def noted_missing_run(self, run_id: str) -> None:
        """A read inside ``read`` found no row for the run (see ``noted_listing``)."""
        return None

    def read_vectors(self, tx: Tx, thread_ids: Sequence[str], after: Sequence[int],
                     dim: int) -> EmbeddingBlock | None:
        """The stored vectors of thread_ids[i] with seq > after[i], ordered by thread
        then seq, in one engine-specific read; None to use the portable queries."""
        return None

    def stream(self, tx: Tx, sql: str, params: Sequence[Any],
               size: int) -> Iterator[Sequence[tuple[Any, ...]]]:
        """A query's rows in batches of about ``size`` (a scope scan of a million rows
        must not sit in client memory whole); by default one batch."""
        yield tx.query(sql, params)

    def scan_scope(self, tx: Tx, scan: ScopeScan) -> ScopeRows | None:
        """``scope_rows`` in one engine-specific read; None to use the portable one."""
        return None

    def change_token(self) -> Hashable | None:
        """``MemoryStore.change_token`` for this engine; None by default."""
        return None

    def fetch_located(self, tx: Tx, refs: Sequence[tuple[str, int]],
                      locators: Sequence[int],
                      created: Sequence[datetime | None] | None = None,
                      ) -> list[tuple[Any, ...]]:
        """The ``MSG_COLS`` rows of the refs found through their locators (only
        where the row there is still the ref's), ``created_at`` as a datetime where
        ``created`` gives it; none by default."""
        return []


@dataclass(frozen=True)
class ScopeScan:
    """What ``scope_rows`` reads: the threads (a row's ``pos`` is its index here), each
    thread's rows after ``after[pos]``, and which optional columns."""

    threads: tuple[str, ...]
    after: tuple[int, ...]
    dim: int
    vectors: bool
    texts: bool
    metadata: bool
    message_share: float = 0.0  # ScopeRows.messages, within message_budget (0: not read)

    def columns(self, vector_expr: str = "m.embedding") -> str:
        return ", ".join(["m.seq", "m.created_us",
                          *([vector_expr] if self.vectors else []),
                          *(["m.text_lower"] if self.texts else []),
                          *(["m.body"] if self.metadata else [])])


class RowsBuilder:
    """Fills a ``ScopeRows`` batch by batch into arrays allocated once (the matrix is
    the big one: it is never held twice)."""

    def __init__(self, scan: ScopeScan, n: int) -> None:
        self.scan = scan
        self.n = 0
        self.n_planned = n  # the rows counted before the scan
        self.tidx = np.zeros(n, np.int32)
        self.seqs = np.zeros(n, np.int64)
        self.created = np.zeros(n, np.int64)
        self.has_vec = np.zeros(n, bool)
        # spare rows: the recall cache adopting it grows into them without a copy
        self.matrix = with_spare_rows(n, scan.dim) if scan.vectors else None
        self.texts: list[str | None] | None = [] if scan.texts else None
        self.text_chunks: list[Any] = []  # Arrow string arrays, kept as they came
        self.meta: list[dict[str, Any] | None] | None = [] if scan.metadata else None
        self.loc: np.ndarray | None = None
        self.zones: np.ndarray | None = None
        self.zone_names: dict[str, int] = {}
        # the message columns' chunks, while they fit in the scan's budget
        self.message_budget = message_budget(scan.message_share, n, scan.dim)
        self.messages: list[MessageColumns] | None = [] if self.message_budget else None
        self.message_bytes = 0

    def add(self, pos: np.ndarray, seqs: np.ndarray, created: np.ndarray,
            vectors: np.ndarray | None, has_vec: np.ndarray | None,
            texts: Sequence[str | None] | None, bodies: Sequence[str] | None) -> None:
        """One batch: ``vectors`` holds the rows marked in ``has_vec``, in order."""
        a, b = self.n, self.n + len(seqs)
        if b > self.seqs.shape[0]:  # rows written since the count: grow (rare)
            self._grow(b)
        self.tidx[a:b], self.seqs[a:b], self.created[a:b] = pos, seqs, created
        if self.matrix is not None and vectors is not None and has_vec is not None:
            self.has_vec[a:b] = has_vec
            if has_vec.all():
                self.matrix[a:b] = vectors
            else:
                self.matrix[a:b][has_vec] = vectors
        if self.texts is not None and texts is not None:
            if isinstance(texts, (list, tuple)):
                self.texts.extend(texts)
            else:  # an Arrow column: no Python string per row
                self.text_chunks.append(texts)
        if self.meta is not None and bodies is not None:
            self.meta.extend(json.loads(x).get("metadata") or None for x in bodies)
        self.n = b

    def locate(self, a: int, locators: np.ndarray) -> None:
        """The locators of rows [a, a + len(locators))."""
        if self.loc is None or self.loc.shape[0] < self.seqs.shape[0]:
            grown = np.full(self.seqs.shape[0], -1, np.int64)
            if self.loc is not None:
                grown[: self.loc.shape[0]] = self.loc
            self.loc = grown
        self.loc[a:a + len(locators)] = locators

    def add_rows(self, rows: Sequence[Sequence[Any]]) -> None:
        """One batch of ``(pos, *ScopeScan.columns())`` tuples, vectors as bytes."""
        if not rows:
            return
        cols = list(zip(*rows, strict=True))
        i = 3
        vectors = has_vec = None
        if self.scan.vectors and self.scan.dim:
            blobs = cols[i]
            has_vec = np.array([x is not None for x in blobs], bool)
            # read in place (copied once, into the matrix)
            vectors = np.frombuffer(b"".join(x for x in blobs if x is not None),
                                    np.float32).reshape(-1, self.scan.dim)
        i += int(self.scan.vectors)
        texts = cols[i] if self.scan.texts else None
        bodies = cols[i + int(self.scan.texts)] if self.scan.metadata else None
        self.add(np.asarray(cols[0], np.int32), np.asarray(cols[1], np.int64),
                 np.asarray(cols[2], np.int64), vectors, has_vec, texts, bodies)

    def zone(self, a: int, offsets: Any) -> None:
        """The zones of rows [a, a + len(offsets)) (``ScopeRows.zones``) from an Arrow
        column of their created_at's UTC offsets: null for UTC, "" when it has none."""
        import pyarrow.compute as pc

        if self.zones is None or self.zones.shape[0] < self.seqs.shape[0]:
            grown = np.full(self.seqs.shape[0], -2, np.int32)
            if self.zones is not None:
                grown[: self.zones.shape[0]] = self.zones
            self.zones = grown
        k = len(offsets)
        if offsets.null_count != k:
            enc = pc.dictionary_encode(offsets)
            names = enc.dictionary.to_pylist()
            codes = np.array([self.zone_names.setdefault(x, len(self.zone_names)) if x
                              else -2 for x in names] or [-2], np.int32)
            at = enc.indices.fill_null(0).to_numpy(zero_copy_only=False)
            self.zones[a:a + k] = np.where(enc.indices.is_valid().to_numpy(
                zero_copy_only=False), codes[at], -1)
        else:
            self.zones[a:a + k] = -1

    def keep_messages(self, cols: MessageColumns) -> None:
        """One batch's message columns, while they fit in the budget (the first
        batch's size per row tells whether the whole scan's would: ``over_budget``)."""
        if self.messages is None:
            return
        self.message_bytes += cols.size()
        if self.message_bytes > self.message_budget:
            self.messages = None  # over: dropped, the rest not kept
        else:
            self.messages.append(cols)

    def over_budget(self) -> bool:
        """Whether the rows read so far say the message columns of all the planned
        rows will not fit (then a scan had better not read them at all)."""
        if self.messages is None:
            return self.message_budget > 0
        per_row = self.message_bytes / max(1, self.n)
        return per_row * max(self.n, self.n_planned) > self.message_budget

    def _grow(self, need: int) -> None:
        def grown(a: np.ndarray) -> np.ndarray:
            out = np.zeros((need, *a.shape[1:]), a.dtype)
            out[: a.shape[0]] = a
            return out

        self.tidx, self.seqs = grown(self.tidx), grown(self.seqs)
        self.created, self.has_vec = grown(self.created), grown(self.has_vec)
        if self.matrix is not None:
            self.matrix = grown(self.matrix)

    def done(self) -> ScopeRows:
        n = self.n
        return ScopeRows(self.scan.threads, self.tidx[:n], self.seqs[:n], self.created[:n],
                         self.has_vec[:n], None if self.matrix is None else self.matrix[:n],
                         self._texts(), self.meta, None if self.loc is None else self.loc[:n],
                         None if self.zones is None else self.zones[:n],
                         tuple(self.zone_names), self._messages())

    def _messages(self) -> MessageColumns | None:
        if self.messages is None:
            return None
        if not self.messages:
            return MessageColumns([], [], [])
        if len(self.messages) == 1:
            return self.messages[0]
        import pyarrow as pa  # only a driver that reads Arrow gives message columns

        return MessageColumns(*(pa.chunked_array([getattr(c, f) for c in self.messages])
                                for f in ("bodies", "resource_ids", "run_ids")))

    def _texts(self) -> Sequence[str | None] | None:
        if not self.text_chunks:
            return self.texts
        import pyarrow as pa  # only a driver that reads Arrow gave chunks

        texts: Sequence[str | None] = pa.chunked_array(self.text_chunks)
        return texts


MSG_COLS = "thread_id, seq, resource_id, body, created_at, run_id"
#: the columns a message is read from (a driver's own message reads select these)
MESSAGE_COLUMNS = MSG_COLS


def row_to_message(r: Sequence[Any]) -> StoredMessage:
    # a created_at already known as a datetime (a located read may skip the text)
    created = r[4] if isinstance(r[4], datetime) else ts_parse(r[4])
    return stored_message(r[0], r[1], r[2], r[3], created, r[5])


_THREAD_COLS = "id, resource_id, title, metadata, parent_thread_id, created_at, updated_at"


def _row_to_thread(r: Sequence[Any]) -> Thread:
    return Thread(id=r[0], resource_id=r[1], title=r[2], metadata=json.loads(r[3]),
                  parent_thread_id=r[4], created_at=ts_parse(r[5]),
                  updated_at=ts_parse(r[6]))


_OBS_COLS = "id, thread_id, from_seq, to_seq, level, text, source_ids, created_at, condensed"


def _row_to_observation(r: Sequence[Any]) -> Observation:
    return Observation(id=r[0], thread_id=r[1], from_seq=r[2], to_seq=r[3], level=int(r[4]),
                       text=r[5], source_ids=json.loads(r[6]), created_at=ts_parse(r[7]),
                       condensed=bool(r[8]))


_RUN_COLS = "run_id, agent, thread_id, resource_id, status, started_at, finished_at, error"


def row_to_run(r: Sequence[Any]) -> RunRecord:
    return RunRecord(run_id=r[0], agent=r[1], thread_id=r[2], resource_id=r[3], status=r[4],
                     started_at=ts_parse(r[5]), finished_at=ts_parse_opt(r[6]), error=r[7])


InsertMessages = Callable[[Tx, Sequence[StagedMessages]], None]
#: keeps the threads' counters: (thread id, rows added, highest seq added) each
UpdateCounts = Callable[[Tx, Sequence[tuple[str, int, int]]], None]


def update_counts(tx: Tx, counts: Sequence[tuple[str, int, int]]) -> None:
    """One ``UPDATE`` a thread (every engine takes it as it is)."""
    for tid, n, top in counts:
        tx.execute("UPDATE threads SET message_count = message_count + ?,"
                   " max_seq = CASE WHEN max_seq < ? THEN ? ELSE max_seq END"
                   " WHERE id = ?", (n, top, top, tid))


def write_staged(insert: InsertMessages, tx: Tx, staged: Sequence[StagedMessages],
                 new_dim: int | None, counted: UpdateCounts = update_counts) -> None:
    """Insert staged appends (``staging.stage_messages``: all new, seqs assigned) and
    keep each thread's counters, in the caller's write transaction; with ``new_dim``
    the rows carry the store's first vectors and fix its dimension."""
    staged = [s for s in staged if len(s)]
    if not staged:
        return
    insert(tx, staged)
    counts: dict[str, list[int]] = {}
    for s in staged:
        c = counts.setdefault(s.thread_id, [0, -1])
        c[0] += len(s)
        c[1] = max(c[1], s.top())
    counted(tx, [(tid, n, top) for tid, (n, top) in counts.items()])
    if new_dim is not None and any(s.vectors is not None for s in staged):
        tx.execute("UPDATE meta SET value = ? WHERE key = ?", (str(new_dim), DIM_KEY))


class SqlMemoryStore(MemoryStore):
    def __init__(self, db: Driver, clock: Clock, ids: ThreadIdFactory) -> None:
        self._db = db
        self._clock = clock
        self._ids = ids

    # -- threads -------------------------------------------------------------------
    def _insert_thread(self, tx: Tx, tid: str | None, resource_id: str | None,
                       title: str | None, metadata: dict[str, Any] | None,
                       parent_thread_id: str | None) -> Thread:
        tid = tid or self._ids()
        if not isinstance(tid, str):
            raise InvalidInputError(f"thread id must be a string, got {tid!r}")
        meta = dict(metadata or {})
        meta_text = json_or_invalid(f"metadata of thread '{tid}'", meta)
        if tx.query("SELECT 1 FROM threads WHERE id = ?", (tid,)):
            raise InvalidInputError(f"thread '{tid}' already exists")
        now = self._clock()
        n = tx.execute(
            "INSERT INTO threads (id, resource_id, title, metadata, parent_thread_id,"
            " created_at, created_us, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (id) DO NOTHING",
            (tid, resource_id, title, meta_text, parent_thread_id, ts_text(now),
             ts_micros(now), ts_text(now)))
        if n == 0:  # created by another process since the check above
            raise InvalidInputError(f"thread '{tid}' already exists")
        return Thread(id=tid, resource_id=resource_id, title=title,
                      metadata=json.loads(meta_text), parent_thread_id=parent_thread_id, created_at=now, updated_at=now)

    def create_thread(self, thread_id: str | None = None, *, resource_id: str | None = None,
                      title: str | None = None, metadata: dict[str, Any] | None = None,
                      parent_thread_id: str | None = None) -> Thread:
        with self._db.write("create_thread") as tx:
            return self._insert_thread(tx, thread_id, resource_id, title, metadata,
                                       parent_thread_id)

    def _get_thread(self, tx: Tx, thread_id: str, lock: bool = False) -> Thread | None:
        suffix = self._db.lock_row if lock else ""
        rows = tx.query(f"SELECT {_THREAD_COLS} FROM threads WHERE id = ?{suffix}",
                        (thread_id,))
        return _row_to_thread(rows[0]) if rows else None

    def _require(self, tx: Tx, thread_id: str, lock: bool = False) -> Thread:
        t = self._get_thread(tx, thread_id, lock)
        if t is None:
            raise NotFoundError(f"thread '{thread_id}' does not exist")
        return t

    def get_thread(self, thread_id: str) -> Thread | None:
        with self._db.read("get_thread") as tx:
            return self._get_thread(tx, thread_id)

    def list_threads(self, resource_id: str | None = None) -> list[Thread]:
        sql = f"SELECT {_THREAD_COLS} FROM threads"
        params: tuple[Any, ...] = ()
        if resource_id is not None:
            sql += " WHERE resource_id = ?"
            params = (resource_id,)
        sql += " ORDER BY created_us DESC, id ASC"
        with self._db.read("list_threads") as tx:
            return [_row_to_thread(r) for r in tx.query(sql, params)]

    def thread_activity(self, resource_id: str | None = None) -> list[ThreadActivity]:
        # the last message by the thread's own max_seq: a key look-up a thread (a hash
        # join on DuckDB), and only its time, not its body
        sql = ("SELECT t.id, t.resource_id, t.title, t.updated_at, t.message_count,"
               " m.created_at FROM threads t LEFT JOIN messages m"
               " ON m.thread_id = t.id AND m.seq = t.max_seq")
        params: tuple[Any, ...] = ()
        if resource_id is not None:
            sql += " WHERE t.resource_id = ?"
            params = (resource_id,)
        sql += " ORDER BY t.created_us DESC, t.id ASC"
        with self._db.read("thread_activity") as tx, many_objects():
            return [ThreadActivity(r[0], r[1], r[2], ts_parse(r[3]), int(r[4]),
                                   ts_parse_opt(r[5])) for r in tx.query(sql, params)]

    def list_resources(self) -> list[str]:
        with self._db.read("list_resources") as tx:
            rows = tx.query("SELECT DISTINCT resource_id FROM threads"
                            " WHERE resource_id IS NOT NULL")
        return sorted(r[0] for r in rows if r[0])

    def update_thread(self, thread_id: str, *, title: str | None = None,
                      metadata: dict[str, Any] | None = None,
                      resource_id: str | None = None) -> Thread:
        with self._db.write("update_thread") as tx:
            t = self._require(tx, thread_id, lock=True)
            patch: dict[str, Any] = {"updated_at": max(self._clock(), t.updated_at)}
            if title is not None:
                patch["title"] = title
            if metadata is not None:
                patch["metadata"] = {**t.metadata, **metadata}
            if resource_id is not None:
                patch["resource_id"] = resource_id
            meta_text = json_or_invalid(f"metadata of thread '{thread_id}'",
                                        patch.get("metadata", t.metadata))
            patch["metadata"] = json.loads(meta_text)
            nt = t.model_copy(update=patch, deep=True)
            tx.execute("UPDATE threads SET title = ?, metadata = ?, resource_id = ?,"
                       " updated_at = ? WHERE id = ?",
                       (nt.title, meta_text, nt.resource_id, ts_text(nt.updated_at),
                        thread_id))
            if resource_id is not None:
                tx.execute("UPDATE messages SET resource_id = ? WHERE thread_id = ?",
                           (resource_id, thread_id))
                self._count_edit(tx)  # the thread's messages were rewritten in place
            return nt

    def clone_thread(self, source_id: str, new_id: str | None = None, *,
                     resource_id: str | None = None) -> Thread:
        with self._db.write("clone_thread") as tx:
            src = self._require(tx, source_id, lock=True)
            rid = resource_id or src.resource_id or "default"
            t = self._insert_thread(tx, new_id, rid, src.title, src.metadata, source_id)
            tx.execute(
                "INSERT INTO messages (thread_id, seq, resource_id, body, text_lower,"
                " created_at, created_us, run_id, embedding)"
                " SELECT ?, seq, ?, body, text_lower, created_at, created_us, run_id,"
                " embedding FROM messages WHERE thread_id = ?",
                (t.id, rid, source_id))
            # the copy's counters are the source's, taken under the same write lock
            tx.execute(
                "UPDATE threads SET message_count = (SELECT s.message_count FROM threads s"
                " WHERE s.id = ?), max_seq = (SELECT s.max_seq FROM threads s WHERE s.id = ?)"
                " WHERE id = ?", (source_id, source_id, t.id))
            tx.execute(
                "INSERT INTO working_memory (key, value) SELECT ?, value FROM working_memory"
                " WHERE key = ? ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (f"thread:{t.id}", f"thread:{source_id}"))
            tx.execute(
                f"INSERT INTO observations ({_OBS_COLS}, created_us)"
                " SELECT CAST(? AS TEXT) || '/' || id, ?, from_seq, to_seq, level, text, source_ids,"
                " created_at, condensed, created_us FROM observations WHERE thread_id = ?"
                " ON CONFLICT (id) DO UPDATE SET thread_id = excluded.thread_id,"
                " from_seq = excluded.from_seq, to_seq = excluded.to_seq,"
                " level = excluded.level, text = excluded.text,"
                " source_ids = excluded.source_ids, created_at = excluded.created_at,"
                " condensed = excluded.condensed, created_us = excluded.created_us",
                (t.id, t.id, source_id))
            return t

    # -- messages ------------------------------------------------------------------
    @staticmethod
    def _read_dim(tx: Tx, lock: str = "") -> int | None:
        rows = tx.query(f"SELECT value FROM meta WHERE key = ?{lock}", (DIM_KEY,))
        return int(rows[0][0]) if rows and rows[0][0] is not None else None

    def append_messages(self, thread_id: str, rows: Sequence[AppendRow]) -> list[int]:
        rows = list(rows)
        validate_batch(thread_id, rows, None)
        # JSON and time checks before the transaction: every adapter refuses alike
        bodies = message_bodies(thread_id, rows)
        has_vec = any(r.embedding is not None for r in rows)
        floor_key = f"{SEQ_FLOOR_PREFIX}{thread_id}"
        with self._db.write("append_messages") as tx:
            # the dimension (it only matters to batches carrying vectors) and the
            # thread's seq floor in one read
            meta = {str(k): v for k, v in tx.query(
                "SELECT key, value FROM meta WHERE key IN (?, ?)", (DIM_KEY, floor_key))}
            dim = int(meta[DIM_KEY]) if has_vec and meta.get(DIM_KEY) is not None else None
            explicit, batch_dim = validate_batch(thread_id, rows, dim)
            # The thread row lock is what serialises seq assignment per thread; the
            # row's max_seq is kept under it, so no scan of the messages is needed.
            found = tx.query(f"SELECT resource_id, max_seq FROM threads WHERE id = ?"
                             f"{self._db.lock_row}", (thread_id,))
            if not found:
                raise NotFoundError(f"thread '{thread_id}' does not exist")
            resource_id, top = found[0][0], int(found[0][1])
            if meta.get(floor_key) is not None:  # truncated seqs stay unused
                top = max(top, int(meta[floor_key]))
            if dim is None and has_vec:
                # First vectors of the store: take the store-wide row and re-check, so
                # two writers on different threads cannot fix two dimensions.
                dim = self._read_dim(tx, self._db.lock_row)
                if dim is not None:
                    explicit, batch_dim = validate_batch(thread_id, rows, dim)
            seqs, existing = self._assign_seqs(tx, thread_id, rows, explicit, top)
            if existing:  # explicit seqs already stored are skipped (idempotent)
                keep = [i for i, q in enumerate(seqs) if q not in existing]
                staged = stage_messages(thread_id, resource_id, [seqs[i] for i in keep],
                                        [bodies[i] for i in keep], [rows[i] for i in keep],
                                        self._clock)
            else:
                staged = stage_messages(thread_id, resource_id, seqs, bodies, rows,
                                        self._clock)
            write_staged(self._db.insert_messages, tx, [staged], batch_dim if dim is None else None)
            return seqs

    @staticmethod
    def _assign_seqs(tx: Tx, thread_id: str, rows: Sequence[AppendRow],
                     explicit: bool, top: int) -> tuple[list[int], set[int]]:
        """Each row's seq, and which of them are already stored (explicit seqs only:
        the next dense seqs come after ``top``, the thread's highest)."""
        if explicit:
            wanted = [int(r.seq) for r in rows if r.seq is not None]
            existing: set[int] = set()
            for part in _chunks(wanted):
                existing.update(int(x[0]) for x in tx.query(
                    f"SELECT seq FROM messages WHERE thread_id = ?"
                    f" AND seq IN ({_marks(len(part))})", (thread_id, *part)))
            return wanted, existing
        return list(range(top + 1, top + 1 + len(rows))), set()

    def get_messages(self, thread_id: str, *, from_seq: int | None = None,
                     to_seq: int | None = None,
                     seqs: Sequence[int] | None = None) -> list[StoredMessage]:
        base = f"SELECT {MSG_COLS} FROM messages WHERE thread_id = ?"
        with self._db.read("get_messages") as tx:
            if seqs is not None:
                wanted = sorted({int(s) for s in seqs})
                out: list[StoredMessage] = []
                for part in _chunks(wanted):
                    out.extend(row_to_message(r) for r in tx.query(
                        f"{base} AND seq IN ({_marks(len(part))}) ORDER BY seq",
                        (thread_id, *part)))
                return out
            sql = base
            params: list[Any] = [thread_id]
            if from_seq is not None:
                sql += " AND seq >= ?"
                params.append(from_seq)
            if to_seq is not None:
                sql += " AND seq <= ?"
                params.append(to_seq)
            return [row_to_message(r) for r in tx.query(sql + " ORDER BY seq", params)]

    def get_messages_by_run(self, thread_id: str, run_id: str) -> list[StoredMessage]:
        with self._db.read("get_messages_by_run") as tx:
            return [row_to_message(r) for r in tx.query(
                f"SELECT {MSG_COLS} FROM messages WHERE thread_id = ? AND run_id = ?"
                " ORDER BY seq", (thread_id, run_id))]

    def get_tail(self, thread_id: str, n: int) -> list[StoredMessage]:
        if n <= 0:
            return []
        # the port's rule in one query (it runs every turn): seqs from max_seq - n + 1
        with self._db.read("get_tail") as tx:
            rows = tx.query(
                f"SELECT {MSG_COLS} FROM messages WHERE thread_id = ? AND seq >="
                " (SELECT max_seq FROM threads WHERE id = ?) - ? + 1 ORDER BY seq",
                (thread_id, thread_id, n))
        return [row_to_message(r) for r in rows][-n:]

    # The counters on the threads row are kept by every write that adds or removes
    # messages, so these read one row a thread instead of counting its messages.
    def count_messages(self, thread_id: str) -> int:
        with self._db.read("count_messages") as tx:
            rows = tx.query("SELECT message_count FROM threads WHERE id = ?", (thread_id,))
        return int(rows[0][0]) if rows else 0

    def max_seq(self, thread_id: str) -> int:
        with self._db.read("max_seq") as tx:
            rows = tx.query("SELECT max_seq FROM threads WHERE id = ?", (thread_id,))
        return int(rows[0][0]) if rows else -1

    def thread_stats(self, thread_ids: Sequence[str]) -> dict[str, tuple[int, int]]:
        tids = list(dict.fromkeys(thread_ids))
        out: dict[str, tuple[int, int]] = {}
        with self._db.read("thread_stats") as tx:
            for part in _chunks(tids):
                for r in tx.query("SELECT id, message_count, max_seq FROM threads"
                                  f" WHERE id IN ({_marks(len(part))})", part):
                    out[str(r[0])] = (int(r[1]), int(r[2]))
        return out

    def scope_counts(self, thread_id: str,
                     resource_id: str | None = None) -> dict[str, ThreadCounts]:
        with self._db.read_single("scope_counts") as tx:
            rows = tx.query("SELECT id, message_count, max_seq, created_at, resource_id,"
                            " (SELECT value FROM meta WHERE key = ?)"
                            " FROM threads WHERE id = ? OR resource_id = ?"
                            " ORDER BY created_us DESC, id ASC",
                            (EDITS_KEY, thread_id, resource_id))
        own = [r for r in rows if r[0] == thread_id]
        if not own:
            raise NotFoundError(f"thread '{thread_id}' does not exist")
        members = [r for r in rows if resource_id is not None and r[4] == resource_id]
        if own[0] not in members:
            members.append(own[0])
        return {str(r[0]): ThreadCounts(int(r[1]), int(r[2]), ts_parse(r[3]),
                                        int(r[5] or 0)) for r in members}

    def change_token(self) -> Hashable | None:
        return self._db.change_token()

    def get_messages_by_refs(self, refs: Sequence[tuple[str, int]]) -> list[StoredMessage]:
        # up to half a chunk of pairs is one statement (see _by_refs)
        read = self._db.read_single if len(refs) <= _CHUNK // 2 else self._db.read
        with read("get_messages_by_refs") as tx:
            return self._by_refs(tx, refs)

    @staticmethod
    def _by_refs(tx: Tx, refs: Sequence[tuple[str, int]],
                 found: Sequence[tuple[Any, ...]] = ()) -> list[StoredMessage]:
        """The messages of refs, plus rows already ``found`` (skipped in the query)."""
        out = [row_to_message(r) for r in found]
        have = {(m.thread_id, m.seq) for m in out}
        pairs = sorted({(str(t), int(s)) for t, s in refs} - have)
        # two parameters a pair: half a chunk keeps under the drivers' limits
        for i in range(0, len(pairs), _CHUNK // 2):
            part = pairs[i:i + _CHUNK // 2]
            values = ",".join(["(?, ?)"] * len(part))
            # A join, not "(thread_id, seq) IN (VALUES ...)": SQLite plans that IN
            # as a scan of every message; the join probes the primary key per pair.
            cols = ", ".join(f"m.{c.strip()}" for c in MSG_COLS.split(","))
            out.extend(row_to_message(r) for r in tx.query(
                f"WITH v(tid, sq) AS (VALUES {values}) SELECT {cols} FROM v"
                " JOIN messages m ON m.thread_id = v.tid AND m.seq = v.sq",
                [x for p in part for x in p]))
        # Python order, not the database collation, so every adapter agrees
        out = list({(m.thread_id, m.seq): m for m in out}.values())
        out.sort(key=lambda m: (m.thread_id, m.seq))
        return out

    def get_messages_located(self, refs: Sequence[tuple[str, int]],
                             locators: Sequence[int],
                             created: Sequence[datetime | None] | None = None,
                             ) -> list[StoredMessage]:
        with self._db.read("get_messages_located") as tx:
            return self._by_refs(tx, refs, self._db.fetch_located(tx, refs, locators,
                                                                  created))

    def scope_rows(self, thread_ids: Sequence[str], *,
                   after_seq: dict[str, int] | None = None, vectors: bool = True,
                   texts: bool = False, metadata: bool = False,
                   message_share: float = 0.0) -> ScopeRows:
        after = after_seq or {}
        threads = tuple(dict.fromkeys(thread_ids))
        with self._db.read("scope_rows") as tx:
            dim = (self._read_dim(tx) or 0) if vectors else 0
            scan = ScopeScan(threads, tuple(after.get(t, -1) for t in threads), dim,
                             vectors, texts, metadata,
                             message_share if vectors else 0.0)
            fast = self._db.scan_scope(tx, scan)
            if fast is not None:
                return fast
            scan = replace(scan, message_share=0.0)  # a message is read as cheaply later
            parts = [range(i, min(len(threads), i + _CHUNK // 3))
                     for i in range(0, len(threads), _CHUNK // 3)]

            def source(part: range) -> tuple[str, list[Any]]:
                return (f"WITH f(pos, tid, lo) AS (VALUES {','.join(['(?, ?, ?)'] * len(part))})"
                        " {} FROM f JOIN messages m ON m.thread_id = f.tid AND m.seq > f.lo",
                        [x for i in part for x in (i, threads[i], scan.after[i])])

            n = 0
            for part in parts:
                sql, params = source(part)
                n += int(tx.query(sql.format("SELECT COUNT(*)"), params)[0][0])
            out = RowsBuilder(scan, n)
            for part in parts:
                sql, params = source(part)
                for batch in self._db.stream(
                        tx, sql.format(f"SELECT f.pos, {scan.columns()}"), params, 20_000):
                    out.add_rows(batch)
        return out.done()

    def get_embeddings(self, thread_ids: Sequence[str], *,
                       after_seq: dict[str, int] | None = None) -> EmbeddingBlock:
        after = after_seq or {}
        tids = sorted(set(thread_ids))
        whole = [t for t in tids if after.get(t, -1) < 0]
        partial = [t for t in tids if after.get(t, -1) >= 0]
        got: dict[str, list[tuple[Any, ...]]] = {}
        with self._db.read("get_embeddings") as tx:
            dim = self._read_dim(tx)
            fast = self._db.read_vectors(tx, tids, [after.get(t, -1) for t in tids], dim or 0)
            if fast is not None:
                return fast
            for part in _chunks(whole):
                for r in tx.query(
                        "SELECT thread_id, seq, embedding FROM messages WHERE thread_id IN"
                        f" ({_marks(len(part))}) AND embedding IS NOT NULL", part):
                    got.setdefault(r[0], []).append(r)
            for t in partial:
                got[t] = tx.query(
                    "SELECT thread_id, seq, embedding FROM messages WHERE thread_id = ?"
                    " AND seq > ? AND embedding IS NOT NULL", (t, after[t]))
        ordered: list[tuple[Any, ...]] = []
        for t in tids:
            ordered.extend(sorted(got.get(t, []), key=lambda r: int(r[1])))
        d = dim or 0
        # float32 bytes, or an engine's array (DuckDB's FLOAT[])
        mat = decode_vectors([np.asarray(r[2], np.float32).tobytes()
                              if isinstance(r[2], list) else bytes(r[2])
                              for r in ordered], d) if ordered else \
            np.zeros((0, d), np.float32)
        return EmbeddingBlock(np.array([r[0] for r in ordered], dtype=object),
                              np.array([int(r[1]) for r in ordered], dtype=np.int64), mat)

    def embedding_dim(self) -> int | None:
        with self._db.read("embedding_dim") as tx:
            return self._read_dim(tx)

    def search_messages(self, text: str, *, resource_id: str | None = None,
                        thread_id: str | None = None, limit: int = 100) -> list[StoredMessage]:
        needle = text.lower()
        if not needle:
            return []
        cols = ", ".join(f"m.{c.strip()}" for c in MSG_COLS.split(","))
        sql = (f"SELECT {cols} FROM messages m JOIN threads t ON t.id = m.thread_id"
               f" WHERE m.text_lower IS NOT NULL AND "
               + self._db.contains.format(col="m.text_lower"))
        params: list[Any] = [needle]
        if resource_id is not None:
            sql += " AND t.resource_id = ?"
            params.append(resource_id)
        if thread_id is not None:
            sql += " AND m.thread_id = ?"
            params.append(thread_id)
        sql += " ORDER BY m.created_us, m.thread_id, m.seq"
        if limit >= 0:
            sql += " LIMIT ?"
            params.append(limit)
        with self._db.read("search_messages") as tx:
            out = [row_to_message(r) for r in tx.query(sql, params)]
        return out[:limit]

    # -- working memory ------------------------------------------------------------
    def get_working_memory(self, key: str) -> Any | None:
        text = self.working_memory_text(key)
        return None if text is None else decode_json(text)

    def working_memory_text(self, key: str) -> str | None:
        """The stored JSON text of a working memory value; None: no such key."""
        with self._db.read("get_working_memory") as tx:
            rows = tx.query("SELECT value FROM working_memory WHERE key = ?", (key,))
        return str(rows[0][0]) if rows else None

    def put_working_memory(self, key: str, value: Any) -> None:
        text = encode_json(key, value)
        with self._db.write("put_working_memory") as tx:
            tx.execute("INSERT INTO working_memory (key, value) VALUES (?, ?)"
                       " ON CONFLICT (key) DO UPDATE SET value = excluded.value", (key, text))

    def list_working_memory_keys(self) -> list[str]:
        with self._db.read("list_working_memory_keys") as tx:
            return sorted(r[0] for r in tx.query("SELECT key FROM working_memory"))

    @staticmethod
    def _delete_wm(tx: Tx, key: str) -> bool:
        # a stored JSON null is a row too, so it counts as existing
        return tx.execute("DELETE FROM working_memory WHERE key = ?", (key,)) > 0

    def delete_working_memory(self, key: str) -> bool:
        with self._db.write("delete_working_memory") as tx:
            return self._delete_wm(tx, key)

    # -- observations --------------------------------------------------------------
    def put_observation(self, observation: Observation) -> None:
        o = observation
        require_aware(f"created_at of observation '{o.id}'", o.created_at)
        src = json_or_invalid(f"source_ids of observation '{o.id}'", list(o.source_ids))
        with self._db.write("put_observation") as tx:
            tx.execute(f"INSERT INTO observations ({_OBS_COLS}, created_us)"
                       " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
                       (o.id, o.thread_id, o.from_seq, o.to_seq, o.level, o.text, src,
                        ts_text(o.created_at), int(o.condensed), ts_micros(o.created_at)))

    def list_observations(self, thread_id: str, *,
                          include_condensed: bool = True) -> list[Observation]:
        sql = f"SELECT {_OBS_COLS} FROM observations WHERE thread_id = ?"
        if not include_condensed:
            sql += " AND condensed = 0"
        with self._db.read("list_observations") as tx:
            return [_row_to_observation(r)
                    for r in tx.query(sql + " ORDER BY created_us, id", (thread_id,))]

    def mark_condensed(self, observation_ids: Sequence[str]) -> None:
        ids = list(dict.fromkeys(observation_ids))
        with self._db.write("mark_condensed") as tx:
            for part in _chunks(ids):
                tx.execute(f"UPDATE observations SET condensed = 1 WHERE id IN"
                           f" ({_marks(len(part))})", part)

    def put_observation_vectors(self, vectors: Sequence[ObservationVector]) -> None:
        rows = [(v.id, v.thread_id,
                 json_or_invalid(f"metadata of observation vector '{v.id}'", v.metadata),
                 json.dumps([float(x) for x in check_observation_vector(v)]))
                for v in vectors]
        if not rows:
            return
        with self._db.write("put_observation_vectors") as tx:
            for r in rows:
                tx.execute("INSERT INTO observation_vectors (id, thread_id, metadata, vector)"
                           " VALUES (?, ?, ?, ?) ON CONFLICT (id) DO NOTHING", r)

    def list_observation_vectors(self, thread_id: str | None = None) -> list[ObservationVector]:
        sql = "SELECT id, thread_id, metadata, vector FROM observation_vectors"
        params: tuple[Any, ...] = ()
        if thread_id is not None:
            sql, params = sql + " WHERE thread_id = ?", (thread_id,)
        with self._db.read("list_observation_vectors") as tx:
            rows = tx.query(sql + " ORDER BY id", params)
        return [ObservationVector(str(r[0]), str(r[1]),
                                  np.asarray(json.loads(r[3]), dtype=np.float32),
                                  decode_json(r[2])) for r in rows]

    # -- erasure -------------------------------------------------------------------
    def redact_message(self, thread_id: str, seq: int, message: Message) -> bool:
        text = message.text()
        body = message_body(thread_id, 0, AppendRow(message=message))
        with self._db.write("redact_message") as tx:
            if not tx.query("SELECT 1 FROM messages WHERE thread_id = ? AND seq = ?",
                            [thread_id, int(seq)]):
                return False
            tx.execute("UPDATE messages SET body = ?, text_lower = ?, embedding = NULL"
                       " WHERE thread_id = ? AND seq = ?",
                       [body, None if text is None else text.lower(), thread_id, int(seq)])
            self._count_edit(tx)
            return True

    @staticmethod
    def _edits(tx: Tx) -> int | None:
        """The store's count of in-place rewrites (ThreadCounts.edits); None: none yet,
        and no row for it."""
        rows = tx.query("SELECT value FROM meta WHERE key = ?", (EDITS_KEY,))
        return int(rows[0][0] or 0) if rows else None

    @classmethod
    def _count_edit(cls, tx: Tx) -> None:
        """Count an in-place rewrite of stored messages where recall's scope check
        reads it (ThreadCounts.edits): a cache of them must load them again."""
        edits = cls._edits(tx)
        if edits is not None:
            tx.execute("UPDATE meta SET value = ? WHERE key = ?", (str(edits + 1), EDITS_KEY))
        else:
            tx.execute("INSERT INTO meta (key, value) VALUES (?, ?)", (EDITS_KEY, "1"))

    @staticmethod
    def _seq_floor(tx: Tx, thread_id: str) -> int:
        rows = tx.query("SELECT value FROM meta WHERE key = ?",
                        (f"{SEQ_FLOOR_PREFIX}{thread_id}",))
        return int(rows[0][0]) if rows and rows[0][0] is not None else -1

    def delete_messages_after(self, thread_id: str, seq: int) -> builtins.list[int]:
        check_seq_bound(seq)
        with self._db.write("delete_messages_after") as tx:
            found = tx.query(f"SELECT max_seq FROM threads WHERE id = ?{self._db.lock_row}",
                             (thread_id,))
            if not found:
                raise NotFoundError(f"thread '{thread_id}' does not exist")
            gone = [int(r[0]) for r in tx.query(
                "SELECT seq FROM messages WHERE thread_id = ? AND seq > ? ORDER BY seq",
                (thread_id, seq))]
            if not gone:
                return []
            floor, key = self._seq_floor(tx, thread_id), f"{SEQ_FLOOR_PREFIX}{thread_id}"
            high = str(max(floor, int(found[0][0]), gone[-1]))
            if floor >= 0:
                tx.execute("UPDATE meta SET value = ? WHERE key = ?", (high, key))
            else:
                tx.execute("INSERT INTO meta (key, value) VALUES (?, ?)", (key, high))
            tx.execute("DELETE FROM messages WHERE thread_id = ? AND seq > ?", (thread_id, seq))
            left = tx.query("SELECT COUNT(*), COALESCE(MAX(seq), -1) FROM messages"
                            " WHERE thread_id = ?", (thread_id,))[0]
            tx.execute("UPDATE threads SET message_count = ?, max_seq = ? WHERE id = ?",
                       (int(left[0]), int(left[1]), thread_id))
            return gone

    def delete_thread(self, thread_id: str) -> ErasureReport:
        with self._db.write("delete_thread") as tx:
            self._require(tx, thread_id, lock=True)
            n_msg, n_vec = tx.query(
                "SELECT COUNT(*), COUNT(embedding) FROM messages WHERE thread_id = ?",
                (thread_id,))[0]
            tx.execute("DELETE FROM messages WHERE thread_id = ?", (thread_id,))
            key = f"thread:{thread_id}"
            wm = [key] if self._delete_wm(tx, key) else []
            n_obs = tx.execute("DELETE FROM observations WHERE thread_id = ?", (thread_id,))
            tx.execute("DELETE FROM observation_vectors WHERE thread_id = ?", (thread_id,))
            tx.execute("DELETE FROM meta WHERE key = ?", (f"{SEQ_FLOOR_PREFIX}{thread_id}",))
            tx.execute("DELETE FROM threads WHERE id = ?", (thread_id,))
            return ErasureReport(threads=[thread_id], messages=int(n_msg),
                                 embeddings=int(n_vec), working_memory=wm,
                                 observations=int(n_obs))


_PREFIX = "substr(key, 1, length(?)) = ?"
JOURNAL_COLS = ("key", "value", "grp")
RUN_INSERT = (*_RUN_COLS.split(", "), "started_us")
# put_many_if_absent of at most this many records is one INSERT … ON CONFLICT statement
_FEW_RECORDS = 64


def run_values(run: RunRecord) -> list[Any]:
    """A run's row as ``RUN_INSERT`` values (times checked to be aware)."""
    require_aware(f"started_at of run '{run.run_id}'", run.started_at)
    require_aware(f"finished_at of run '{run.run_id}'", run.finished_at)
    return [run.run_id, run.agent, run.thread_id, run.resource_id, run.status,
            ts_text(run.started_at),
            None if run.finished_at is None else ts_text(run.finished_at), run.error,
            ts_micros(run.started_at)]


def _by_prefix(prefix: str) -> tuple[str, list[str]]:
    """The journal's records whose key starts with ``prefix``: a prefix that is a whole
    group (a run's, ``<run_id>:``, listed before every run) is one look-up of the group
    index; any other is a scan of the keys (an index look-up takes no other condition
    on DuckDB, and a group can be large: every observer record is in ``om:``)."""
    if prefix.endswith(":") and key_group(prefix) == prefix:
        return "grp = ?", [prefix]
    return _PREFIX, [prefix, prefix]


class SqlRunJournal(RunJournal):
    def __init__(self, db: Driver) -> None:
        self._db = db

    def put_if_absent(self, key: str, value: Any) -> bool:
        text = journal_texts([(key, value)])[key]
        with self._db.write("journal put_if_absent") as tx:
            return self._db.insert_absent(tx, "journal", "key", JOURNAL_COLS,
                                          [(key, text, key_group(key))]) > 0

    def put_many_if_absent(self, items: Sequence[tuple[str, Any]]) -> int:
        """Many records in one transaction and one batch insert (an import's); keys
        already stored, or repeated in ``items``, keep their first value."""
        fresh = journal_texts(items)
        if not fresh:
            return 0
        if len(fresh) <= _FEW_RECORDS:
            # a run's group of records: one statement (DuckDB pays per statement)
            with self._db.write("journal put_many_if_absent") as tx:
                return self._db.insert_absent(tx, "journal", "key", JOURNAL_COLS, [
                    (k, v, key_group(k)) for k, v in fresh.items()])
        with self._db.write("journal put_many_if_absent") as tx:
            have: set[str] = set()
            for part in _chunks(list(fresh)):
                have.update(r[0] for r in tx.query(
                    f"SELECT key FROM journal WHERE key IN ({_marks(len(part))})", part))
            rows = [[k, v, key_group(k)] for k, v in fresh.items() if k not in have]
            if rows:
                self._db.insert_rows(tx, "journal", JOURNAL_COLS, rows)
            return len(rows)

    def get(self, key: str) -> Any | None:
        with self._db.read("journal get") as tx:
            rows = self.record_rows(tx, [key])
        return decode_json(rows[0][1], f"journal entry '{key}'") if rows else None

    def get_many(self, keys: Sequence[str]) -> dict[str, Any]:
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return {}
        with self._db.read("journal get_many") as tx:
            return {k: decode_json(v, f"journal entry '{k}'")
                    for k, v in self.record_rows(tx, wanted)}

    @staticmethod
    def record_rows(tx: Tx, keys: Sequence[str]) -> builtins.list[tuple[str, str]]:
        """(key, stored JSON) of those of ``keys`` that are stored."""
        out: builtins.list[tuple[str, str]] = []
        for part in _chunks(keys):
            out.extend((r[0], r[1]) for r in tx.query(
                f"SELECT key, value FROM journal WHERE key IN ({_marks(len(part))})", part))
        return out

    def list(self, prefix: str) -> list[tuple[str, Any]]:
        with self._db.read("journal list") as tx:
            rows = self.listed_rows(tx, prefix)
            self._db.noted_listing(prefix, [r[0] for r in rows])
        return [(r[0], decode_json(r[1], f"journal entry '{r[0]}'")) for r in rows]

    @staticmethod
    def listed_rows(tx: Tx, prefix: str) -> builtins.list[tuple[str, str]]:
        """(key, stored JSON) of every record under ``prefix``, in the order written."""
        where, params = _by_prefix(prefix)
        return [(r[0], r[1]) for r in tx.query(
            f"SELECT key, value FROM journal WHERE {where} ORDER BY pos", params)]

    def delete(self, prefix: str) -> int:
        where, params = _by_prefix(prefix)
        with self._db.write("journal delete") as tx:
            return tx.execute(f"DELETE FROM journal WHERE {where}", params)

    def delete_keys(self, keys: Sequence[str]) -> int:
        with self._db.write("journal delete") as tx:
            return sum(tx.execute(f"DELETE FROM journal WHERE key IN ({_marks(len(part))})",
                                  list(part)) for part in _chunks(list(dict.fromkeys(keys))))

    def rewrite(self, key: str, value: Any) -> None:
        with self._db.batch():  # one transaction: the old value or the new one
            super().rewrite(key, value)

    # -- runs ------------------------------------------------------------------------
    def start_run(self, run: RunRecord) -> bool:
        values = run_values(run)
        with self._db.write("start_run") as tx:
            return self._db.insert_absent(tx, "runs", "run_id", RUN_INSERT, [values]) > 0

    def start_runs(self, runs: Sequence[RunRecord]) -> builtins.list[str]:
        """The runs not stored yet, in one transaction and one batch insert (the first
        of repeated ids); returns the ids started here."""
        first: dict[str, list[Any]] = {}
        for r in runs:
            first.setdefault(r.run_id, run_values(r))
        if not first:
            return []
        with self._db.write("start_runs") as tx:
            have: set[str] = set()
            for part in _chunks(list(first)):
                have.update(row[0] for row in tx.query(
                    f"SELECT run_id FROM runs WHERE run_id IN ({_marks(len(part))})", part))
            new = [v for k, v in first.items() if k not in have]
            if new:
                self._db.insert_rows(tx, "runs", RUN_INSERT, new)
            return [v[0] for v in new]

    def set_run_status(self, run_id: str, status: RunStatus, *,
                       finished_at: datetime | None = None, error: str | None = None) -> None:
        require_aware(f"finished_at of run '{run_id}'", finished_at)
        with self._db.write("set_run_status") as tx:
            n = tx.execute("UPDATE runs SET status = ?, finished_at = ?, error = ?"
                           " WHERE run_id = ?",
                           (status, None if finished_at is None else ts_text(finished_at),
                            error, run_id))
            if n == 0:
                raise NotFoundError(f"run '{run_id}' does not exist")

    def get_run(self, run_id: str) -> RunRecord | None:
        with self._db.read("get_run") as tx:
            row = self.run_row(tx, run_id)
            if row is None:
                self._db.noted_missing_run(run_id)
        return None if row is None else row_to_run(row)

    @staticmethod
    def run_row(tx: Tx, run_id: str) -> tuple[Any, ...] | None:
        """The run's row (``_RUN_COLS``), or None."""
        rows = tx.query(f"SELECT {_RUN_COLS} FROM runs WHERE run_id = ?", (run_id,))
        return tuple(rows[0]) if rows else None

    def list_runs(self, *, thread_id: str | None = None,
                  resource_id: str | None = None) -> builtins.list[RunRecord]:
        with many_objects():
            return [row_to_run(r) for r in self._run_rows(thread_id, resource_id)]

    def run_rows(self, *, thread_id: str | None = None) -> builtins.list[RunRow]:
        with many_objects():
            return [RunRow(r[0], r[1], r[2], r[3], r[4], ts_parse(r[5]), ts_parse_opt(r[6]),
                           r[7]) for r in self._run_rows(thread_id, None)]

    def _run_rows(self, thread_id: str | None, resource_id: str | None
                  ) -> builtins.list[tuple[Any, ...]]:
        sql = f"SELECT {_RUN_COLS} FROM runs WHERE 1 = 1"
        params: builtins.list[Any] = []
        if thread_id is not None:
            sql += " AND thread_id = ?"
            params.append(thread_id)
        if resource_id is not None:
            sql += " AND resource_id = ?"
            params.append(resource_id)
        with self._db.read("list_runs") as tx:
            return tx.query(sql + " ORDER BY started_us, run_id", params)

    def thread_runs(self) -> dict[str, ThreadRuns]:
        sql = "SELECT thread_id, started_at, finished_at FROM runs WHERE thread_id IS NOT NULL"
        with self._db.read("thread_runs") as tx, many_objects():
            rows = (r for part in self._db.stream(tx, sql, (), 20_000) for r in part)
            return tally_thread_runs((r[0], ts_parse(r[1]), ts_parse_opt(r[2])) for r in rows)

    def delete_runs(self, run_ids: Sequence[str]) -> int:
        ids = list(dict.fromkeys(run_ids))
        n = 0
        with self._db.write("delete_runs") as tx:
            for part in _chunks(ids):
                n += tx.execute(f"DELETE FROM runs WHERE run_id IN ({_marks(len(part))})",
                                part)
        return n


class SqlStorage(Storage):
    """Both SQL ports over one Driver; an adapter builds its driver and calls _open."""

    _db: Driver

    def _open(self, db: Driver, clock: Clock, ids: ThreadIdFactory | None,
              memory: type[SqlMemoryStore] | None = None,
              runs: type[SqlRunJournal] | None = None) -> None:
        self._db = db
        try:
            # looked up here, not bound at import, so a test can pin an older list
            db.migrate(schema.MIGRATIONS, utc_now())
        except BaseException:
            db.close()
            raise
        clock = checked_clock(clock)
        self.memory = (memory or SqlMemoryStore)(db, clock, ids or ThreadIdFactory(clock))
        self.runs = (runs or SqlRunJournal)(db)

    def write_batch(self) -> AbstractContextManager[None]:
        """Every write in the block in one transaction (one commit), where the driver
        groups writes (SQLite, PostgreSQL, DuckDB); a failure leaves none of them."""
        return self._db.batch()

    def close(self) -> None:
        self._db.close()
