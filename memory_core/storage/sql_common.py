"""The shared SQL store's ground: the ``Driver`` each engine supplies (SQLite, PostgreSQL
and DuckDB: connections, transactions, error mapping, a few dialect hooks), row
conversions and the helpers the ports' SQL (sql_memory.py, sql_journal.py) is built on.

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

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from memory_core.errors import StorageError
from memory_core.storage.base import (
    EmbeddingBlock,
    MessageColumns,
    ScopeRows,
    message_budget,
)
from memory_core.storage.common import (
    decode_vectors,
    encode_vector,
    stored_message,
)
from memory_core.storage.schema import (
    DIM_KEY,
    Dialect,
    Migration,
    Tx,
    apply_migrations,
)
from memory_core.storage.staging import MESSAGE_INSERT, StagedMessages
from memory_core.types import (
    Observation,
    RunRecord,
    StoredMessage,
    Thread,
)
from memory_core.vectors import arrow_numpy, with_spare_rows

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

    def present(self, tx: Tx, table: str, column: str, values: Sequence[Any]) -> list[Any]:
        """Those of ``values`` stored in ``table.column``, each once: by default a
        query per ``_CHUNK`` values (an engine's cap on bound parameters)."""
        found: list[Any] = []
        for part in _chunks(values):
            found += [r[0] for r in tx.query(f"SELECT DISTINCT {column} FROM {table}"
                                             f" WHERE {column} IN ({_marks(len(part))})",
                                             part)]
        return found

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
        """One batch of ``(pos, *ScopeScan.columns())`` tuples, vectors as float32 bytes
        or as an engine's array (DuckDB's FLOAT[] comes as a list)."""
        if not rows:
            return
        cols = list(zip(*rows, strict=True))
        i = 3
        vectors = has_vec = None
        if self.scan.vectors and self.scan.dim:
            blobs = cols[i]
            has_vec = np.array([x is not None for x in blobs], bool)
            # (copied once, into the matrix)
            vectors = decode_vectors([x for x in blobs if x is not None], self.scan.dim,
                                     copy=False)
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
            at = arrow_numpy(enc.indices.fill_null(0))
            self.zones[a:a + k] = np.where(arrow_numpy(enc.indices.is_valid()), codes[at], -1)
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
