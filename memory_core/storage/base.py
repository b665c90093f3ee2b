"""The two storage ports: MemoryStore (threads, messages, embeddings, working memory,
observations) and RunJournal (first-write-wins key/value log plus the runs table).

Adapters subclass both; required methods raise NotImplementedError, convenience
methods are built on top of them. `Storage` bundles the two ports with erasure.
"""

from __future__ import annotations

import builtins
from collections.abc import Hashable, Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

import numpy as np

from memory_core.storage.common import ts_micros
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

THREAD_WM_PREFIX = "thread:"
RESOURCE_WM_PREFIX = "resource:"


@dataclass(frozen=True)
class EmbeddingBlock:
    """Stored vectors of some messages as one contiguous float32 matrix.

    Row i belongs to (thread_ids[i], seqs[i]); rows come ordered by thread then seq.
    """

    thread_ids: np.ndarray  # dtype object (str)
    seqs: np.ndarray  # int64
    matrix: np.ndarray  # float32, shape (n, dim)

    def __len__(self) -> int:
        return int(self.seqs.shape[0])


@dataclass(frozen=True)
class ObservationVector:
    """One stored observation vector (SPEC §8.9): ``id`` is ``om:<tid>:<level>:<seq>``,
    ``metadata`` holds ``thread_id, level, from_seq, to_seq, obs_id`` plus the owner and
    namespace labels; ``vector`` is float32 and ``score`` is set by a query."""

    id: str
    thread_id: str
    vector: np.ndarray
    metadata: dict[str, Any]
    score: float | None = None


def check_observation_vector(v: ObservationVector) -> np.ndarray:
    """The vector as a finite 1-d float32 array; InvalidInputError naming the id
    otherwise (nothing is written)."""
    from memory_core.errors import InvalidInputError

    if not isinstance(v.id, str) or not v.id or not isinstance(v.thread_id, str):
        raise InvalidInputError(f"observation vector id and thread_id must be strings, "
                                f"got {v.id!r}, {v.thread_id!r}")
    arr = np.asarray(v.vector, dtype=np.float32)
    if arr.ndim != 1 or arr.shape[0] == 0 or not np.all(np.isfinite(arr)):
        raise InvalidInputError(f"observation vector '{v.id}' must be a finite non-empty "
                                f"1-d vector, got shape {arr.shape}")
    return arr


MESSAGE_FLOOR = 16 * 2**20  # bytes of message columns any scope may keep


def message_budget(share: float, rows: int, dim: int) -> int:
    """The bytes ``rows`` rows' message columns may take: ``share`` of their vectors'
    bytes (float32, ``dim`` each), or ``MESSAGE_FLOOR`` if that is more (0 for a
    share of 0: none)."""
    if share <= 0:
        return 0
    return max(MESSAGE_FLOOR, int(share * rows * dim * 4))


@dataclass(frozen=True)
class MessageColumns:
    """What a stored message holds beyond a ``ScopeRows`` row's thread, seq and
    creation time: its stored JSON body (role, content, metadata; None where the scan
    left out a body too long to keep), resource id and run id, row i of each for row i
    (a list, or an Arrow column as a scan read it), so that a cache of the scope can
    build a hit's message without reading it again."""

    bodies: Sequence[str | None]
    resource_ids: Sequence[str | None]
    run_ids: Sequence[str | None]

    def __len__(self) -> int:
        return len(self.bodies)

    @staticmethod
    def nbytes(column: Sequence[Any]) -> int:
        """The memory a column holds (an Arrow column's buffers; a list's strings)."""
        size = getattr(column, "nbytes", None)
        if size is not None:
            return int(size)
        return sum(64 + len(x) for x in column if x is not None) + 8 * len(column)

    def size(self) -> int:
        return sum(map(self.nbytes, (self.bodies, self.resource_ids, self.run_ids)))

    def row(self, i: int) -> tuple[str | None, str | None, str | None]:
        """Row i's (body, resource_id, run_id) as Python values."""
        body, resource_id, run_id = (_py(col[i]) for col in
                                     (self.bodies, self.resource_ids, self.run_ids))
        return body, resource_id, run_id


def _py(value: Any) -> Any:
    """A value of a list, or an Arrow scalar of a column, as a Python value."""
    as_py = getattr(value, "as_py", None)
    return value if as_py is None else as_py()


@dataclass(frozen=True)
class ScopeRows:
    """Every stored message of some threads as columns (recall's cache loads a scope
    from it without building a message object per row).

    Row i is ``(threads[tidx[i]], seqs[i])``; rows come in no promised order, each
    once. ``created_us`` is the exact creation time in microseconds since the epoch.
    The optional columns are None unless asked for: ``matrix`` (float32, shape
    (n, dim), a zero row where ``has_vec`` is False), ``texts`` (the lower-cased text,
    None for a message without text) and ``metadata`` (the message's metadata, None
    when empty). The caller owns the arrays (recall's cache keeps the matrix as its
    own).
    """

    threads: tuple[str, ...]
    tidx: np.ndarray  # int32, index into threads
    seqs: np.ndarray  # int64
    created_us: np.ndarray  # int64
    has_vec: np.ndarray  # bool (all False when the matrix was not asked for)
    matrix: np.ndarray | None = None
    #: a list, or an Arrow string column (DuckDB: no Python string per row)
    texts: Sequence[str | None] | None = None
    metadata: list[dict[str, Any] | None] | None = None
    #: where each row sits in the adapter's storage (DuckDB: its rowid), for
    #: ``get_messages_located``; None when the adapter has no such thing
    locators: np.ndarray | None = None
    #: the UTC offset each row's ``created_at`` was written with: -1 for UTC (the
    #: time is exactly ``created_us``), -2 unknown, else an index into
    #: ``zone_names`` (an offset as ISO text, "+02:00"); None when the adapter does
    #: not say (then only a read of the message gives its ``created_at``)
    zones: np.ndarray | None = None
    zone_names: tuple[str, ...] = ()
    #: the rest of every row's message, when asked for with a ``message_share`` and
    #: they fitted in its budget (None otherwise)
    messages: MessageColumns | None = None

    def __len__(self) -> int:
        return int(self.seqs.shape[0])

    def text_list(self) -> list[str | None]:
        """``texts`` as a list of Python strings (an Arrow column converted; [] when
        texts were not asked for)."""
        if self.texts is None:
            return []
        to_pylist = getattr(self.texts, "to_pylist", None)
        return list(self.texts) if to_pylist is None else list(to_pylist())


class ThreadCounts(NamedTuple):
    """A thread's message count and highest seq (-1 when empty), when the thread was
    created (a thread erased and made again under the same id differs in it), and how
    many in-place rewrites of stored messages (``redact_message``, and
    ``update_thread`` moving a thread's messages to another resource) the store has
    made: counts alone cannot show a redaction, and a cache of vectors, words or
    messages must drop what it held of a rewritten message (erased means gone)."""

    message_count: int
    max_seq: int
    created_at: datetime
    edits: int = 0


class ThreadActivity(NamedTuple):
    """A thread as a listing of many shows it: its row without the metadata, its
    message count and the recorded time of its last message (None when it has none)."""

    thread_id: str
    resource_id: str | None
    title: str | None
    updated_at: datetime
    message_count: int
    last_message_at: datetime | None
    parent_thread_id: str | None = None  # the thread it was cloned or branched from


class RunRow(NamedTuple):
    """A run's row as a plain tuple (``RunJournal.run_rows``): the fields of
    ``RunRecord``, not validated again (they were when written) and immutable."""

    run_id: str
    agent: str
    thread_id: str | None
    resource_id: str | None
    status: str
    started_at: datetime
    finished_at: datetime | None = None
    error: str | None = None


class ThreadRuns(NamedTuple):
    """How many runs a thread has, and the latest moment among them (a run's finish,
    or its start while it has not finished)."""

    run_count: int
    last_at: datetime


def tally_thread_runs(rows: Iterable[tuple[str | None, datetime, datetime | None]]
                      ) -> dict[str, ThreadRuns]:
    """``RunJournal.thread_runs`` from ``(thread_id, started_at, finished_at)`` rows."""
    out: dict[str, ThreadRuns] = {}
    for thread_id, started, finished in rows:
        if thread_id is None:
            continue
        at = finished or started
        seen = out.get(thread_id)
        out[thread_id] = (ThreadRuns(1, at) if seen is None
                          else ThreadRuns(seen.run_count + 1, max(seen.last_at, at)))
    return out


class NewThread(NamedTuple):
    """A thread to create with its first messages (``MemoryStore.add_threads``)."""

    thread_id: str
    rows: Sequence[AppendRow] = ()
    resource_id: str | None = None
    title: str | None = None
    metadata: dict[str, Any] | None = None
    parent_thread_id: str | None = None  # the thread it branches off, if any


class MemoryStore:
    """Port: threads, messages, embeddings, working memory and observations."""

    # -- threads -------------------------------------------------------------------
    def create_thread(self, thread_id: str | None = None, *, resource_id: str | None = None,
                      title: str | None = None, metadata: dict[str, Any] | None = None,
                      parent_thread_id: str | None = None) -> Thread:
        """Create a thread with the id given (or a generated one). An existing id
        raises InvalidInputError."""
        raise NotImplementedError

    def get_thread(self, thread_id: str) -> Thread | None:
        raise NotImplementedError

    def list_threads(self, resource_id: str | None = None) -> list[Thread]:
        """Threads of one resource, or all threads when resource_id is None; ordered by
        created_at descending, ties by id ascending (SPEC §2.2)."""
        raise NotImplementedError

    def list_resources(self) -> list[str]:
        """Distinct non-null resource ids, ascending."""
        raise NotImplementedError

    def thread_activity(self, resource_id: str | None = None) -> list[ThreadActivity]:
        """``list_threads`` (same threads, same order) with each thread's message count
        and the time of its last message, reading no metadata and no message bodies:
        the one read behind a listing of every thread (the workbench's Threads page;
        tens of thousands of threads in an imported log). Adapters backed by a
        database answer in one query."""
        threads = self.list_threads(resource_id)
        stats = self.thread_stats([t.id for t in threads])
        last = {m.thread_id: m.created_at for m in self.get_messages_by_refs(
            [(tid, top) for tid, (_n, top) in stats.items() if top >= 0])}
        return [ThreadActivity(t.id, t.resource_id, t.title, t.updated_at,
                               stats.get(t.id, (0, -1))[0], last.get(t.id), t.parent_thread_id)
                for t in threads]

    def update_thread(self, thread_id: str, *, title: str | None = None,
                      metadata: dict[str, Any] | None = None,
                      resource_id: str | None = None) -> Thread:
        """Shallow-merge the patch and bump updated_at; unknown id raises NotFoundError
        with "thread '<id>' does not exist". A new ``resource_id`` is also the thread's
        messages' (rewritten in place: counted in ``ThreadCounts.edits``)."""
        raise NotImplementedError

    def clone_thread(self, source_id: str, new_id: str | None = None, *,
                     resource_id: str | None = None) -> Thread:
        """Copy messages (same seqs, embeddings), the thread's working memory and
        observations into a new thread with parent_thread_id = source_id."""
        raise NotImplementedError

    def require_thread(self, thread_id: str) -> Thread:
        from memory_core.errors import NotFoundError

        t = self.get_thread(thread_id)
        if t is None:
            raise NotFoundError(f"thread '{thread_id}' does not exist")
        return t

    # -- messages ------------------------------------------------------------------
    def append_messages(self, thread_id: str, rows: Sequence[AppendRow]) -> list[int]:
        """Store a batch all-or-nothing and return the seq of each row.

        Rows without seq get the next dense seqs (from 0 per thread), assigned inside
        the write so concurrent appends never collide. Rows with seq are written there;
        an existing (thread, seq) is ignored (idempotent) and its seq still returned.
        A batch mixing both kinds raises InvalidInputError. The thread must exist.
        Embeddings must all have the store's dimension (fixed by the first one stored).
        """
        raise NotImplementedError

    def add_threads(self, threads: Sequence[NewThread]) -> None:
        """``create_thread``, then ``append_messages`` of its rows, for each new thread
        in order: an import's many threads. Adapters backed by a database write a whole
        batch in a few statements, all-or-nothing (a thread at a time, one took ~8
        statements: most of an import's write). A thread id already stored, or given
        twice, raises InvalidInputError."""
        for t in threads:
            self.create_thread(t.thread_id, resource_id=t.resource_id, title=t.title,
                               metadata=t.metadata, parent_thread_id=t.parent_thread_id)
            if t.rows:
                self.append_messages(t.thread_id, t.rows)

    def get_messages(self, thread_id: str, *, from_seq: int | None = None,
                     to_seq: int | None = None,
                     seqs: Sequence[int] | None = None) -> list[StoredMessage]:
        """Messages in seq order: all, an inclusive seq range, or the given seqs."""
        raise NotImplementedError

    def count_messages(self, thread_id: str) -> int:
        raise NotImplementedError

    def get_messages_by_run(self, thread_id: str, run_id: str) -> list[StoredMessage]:
        """Messages of the thread written by one run, in seq order (the runner uses
        them as its marker: an append is atomic, so all or none are there)."""
        return [m for m in self.get_messages(thread_id) if m.run_id == run_id]

    def get_tail(self, thread_id: str, n: int) -> list[StoredMessage]:
        """The last n messages in seq order."""
        if n <= 0:
            return []
        top = self.max_seq(thread_id)
        if top < 0:
            return []
        return self.get_messages(thread_id, from_seq=max(0, top - n + 1))[-n:]

    def max_seq(self, thread_id: str) -> int:
        """Highest stored seq of the thread, -1 when empty."""
        raise NotImplementedError

    def thread_stats(self, thread_ids: Sequence[str]) -> dict[str, tuple[int, int]]:
        """``(message count, max seq)`` of each given thread that exists (an empty
        thread is ``(0, -1)``; unknown ids are absent). Adapters backed by a database
        answer in one query: the recall cache checks every thread of a scope with it."""
        out: dict[str, tuple[int, int]] = {}
        for t in dict.fromkeys(thread_ids):
            if self.get_thread(t) is not None:
                out[t] = (self.count_messages(t), self.max_seq(t))
        return out

    def scope_counts(self, thread_id: str,
                     resource_id: str | None = None) -> dict[str, ThreadCounts]:
        """The counts of a recall scope in one call: every thread of ``resource_id``
        (none when it is None) in list_threads order, then ``thread_id`` itself if it
        is not among them. NotFoundError when ``thread_id`` does not exist. Adapters
        backed by a database answer in one query: recall checks its cache with it."""
        own = self.require_thread(thread_id)
        threads = self.list_threads(resource_id) if resource_id is not None else []
        if all(t.id != thread_id for t in threads):
            threads.append(own)
        stats = self.thread_stats([t.id for t in threads])
        return {t.id: ThreadCounts(*stats.get(t.id, (0, -1)), t.created_at) for t in threads}

    def change_token(self) -> Hashable | None:
        """An opaque value that is different from every earlier one whenever a write
        may have been committed since it was taken, by this process or any other; None
        when the adapter cannot tell cheaply. Recall's cache compares it with the one
        taken before its last ``scope_counts`` and skips that check when they are
        equal (so a token must never stay equal across a write: take it before the
        read it vouches for)."""
        return None

    def get_messages_by_refs(self, refs: Sequence[tuple[str, int]]) -> list[StoredMessage]:
        """The stored messages named by ``(thread_id, seq)`` pairs, ordered by thread
        then seq, each once; pairs naming no stored message are skipped."""
        wanted: dict[str, set[int]] = {}
        for t, s in refs:
            wanted.setdefault(t, set()).add(int(s))
        out: list[StoredMessage] = []
        for t in sorted(wanted):
            out.extend(self.get_messages(t, seqs=sorted(wanted[t])))
        return out

    def scope_rows(self, thread_ids: Sequence[str], *,
                   after_seq: dict[str, int] | None = None, vectors: bool = True,
                   texts: bool = False, metadata: bool = False,
                   message_share: float = 0.0) -> ScopeRows:
        """Every stored message of the given threads (with ``after_seq``, only rows
        whose seq is greater than the thread's entry) as one ``ScopeRows``, with the
        vector matrix, the lower-cased texts and the metadata when asked for. Unknown
        threads give no rows. Adapters backed by a database read it in one scan (DuckDB
        through Arrow), without building a message per row. With a positive
        ``message_share`` an adapter whose single reads cost more than its scans
        (DuckDB) also gives ``ScopeRows.messages``, as long as they take at most
        ``message_budget(message_share, rows, dim)`` bytes (else None, and the scan
        stops reading them as soon as it knows); the others give None."""
        del message_share  # a message read here costs what a later fetch would
        return rows_from_messages(self, thread_ids, after_seq, vectors, texts, metadata)

    def get_messages_located(self, refs: Sequence[tuple[str, int]],
                             locators: Sequence[int],
                             created: Sequence[datetime | None] | None = None,
                             ) -> list[StoredMessage]:
        """``get_messages_by_refs`` of refs whose ``ScopeRows.locators`` are known
        (``locators[i]`` for ``refs[i]``, -1 when not): an adapter that finds a row
        faster by its locator does, checking that the row found is still the one
        named (a locator gone stale only costs the plain lookup). ``created[i]``, when
        given and not None, is the exact ``created_at`` of ``refs[i]`` as the caller
        read it (from ``ScopeRows.created_us`` and ``zones``): an adapter may use it
        instead of reading the stored time again."""
        del created
        return self.get_messages_by_refs(refs)

    def get_embeddings(self, thread_ids: Sequence[str], *,
                       after_seq: dict[str, int] | None = None) -> EmbeddingBlock:
        """Stored vectors of the given threads (rows with no text have none), ordered
        by thread then seq; with after_seq only rows whose seq is greater than the
        thread's entry (for incremental caches)."""
        raise NotImplementedError

    def embedding_dim(self) -> int | None:
        """The store's fixed vector dimension, None until a vector is stored."""
        raise NotImplementedError

    def search_messages(self, text: str, *, resource_id: str | None = None,
                        thread_id: str | None = None, limit: int = 100) -> list[StoredMessage]:
        """Case-insensitive substring search over message text."""
        raise NotImplementedError

    # -- working memory ------------------------------------------------------------
    def get_working_memory(self, key: str) -> Any | None:
        raise NotImplementedError

    def put_working_memory(self, key: str, value: Any) -> None:
        """Store a JSON value under "thread:<id>" or "resource:<id>"."""
        raise NotImplementedError

    def list_working_memory_keys(self) -> list[str]:
        raise NotImplementedError

    def delete_working_memory(self, key: str) -> bool:
        """Delete one key; True when it existed."""
        raise NotImplementedError

    # -- observations --------------------------------------------------------------
    def put_observation(self, observation: Observation) -> None:
        """Insert; an existing id is ignored (first write wins)."""
        raise NotImplementedError

    def list_observations(self, thread_id: str, *,
                          include_condensed: bool = True) -> list[Observation]:
        """In creation order (created_at, then id)."""
        raise NotImplementedError

    def mark_condensed(self, observation_ids: Sequence[str]) -> None:
        raise NotImplementedError

    def put_observation_vectors(self, vectors: Sequence[ObservationVector]) -> None:
        """Store observation vectors all-or-nothing; an existing id is kept (first write
        wins). ``delete_thread`` removes the thread's vectors with its observations."""
        raise NotImplementedError

    def list_observation_vectors(self, thread_id: str | None = None) -> list[ObservationVector]:
        """Stored observation vectors (of one thread, or all), ordered by id."""
        raise NotImplementedError

    def query_observation_vectors(self, query: np.ndarray,
                                  top_k: int) -> list[ObservationVector]:
        """The ``top_k`` stored observation vectors (every thread) most cosine-similar to
        ``query``, best first, ties by id, each with its ``score`` — the vector store's
        query the reference over-fetches from (SPEC §8.9)."""
        from memory_core.vectors import cosine_to

        stored = self.list_observation_vectors()
        if not stored or top_k < 1:
            return []
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        same = [v for v in stored if v.vector.shape[0] == q.shape[0]]
        if not same:
            return []
        scores = cosine_to(np.stack([v.vector for v in same]), q)
        order = sorted(range(len(same)), key=lambda i: (-float(scores[i]), same[i].id))
        return [ObservationVector(same[i].id, same[i].thread_id, same[i].vector,
                                  dict(same[i].metadata), round(float(scores[i]), 6))
                for i in order[:top_k]]

    # -- erasure (memory side only; Storage.erase_* also clears the journal) --------
    def redact_message(self, thread_id: str, seq: int, message: Message) -> bool:
        """Replace a stored message's role/content/metadata in place and drop its vector
        (erasure redacts answers that quoted erased text); False when there is no such
        message. The only in-place edit the append-only store allows; each one raises
        the ``edits`` that ``scope_counts`` reports (recall drops its cached scope)."""
        raise NotImplementedError

    def redact_observation(self, observation_id: str, text: str) -> bool:
        """Replace a stored observation's text in place and drop its vectors (those whose
        metadata names it as ``obs_id``: they embed the old text), in one write; False
        when there is no such observation. Erasure's edit of observations that quoted
        erased text."""
        raise NotImplementedError

    def delete_thread(self, thread_id: str) -> ErasureReport:
        raise NotImplementedError

    # -- truncation (SPEC §2.7) ------------------------------------------------------
    def delete_messages_after(self, thread_id: str, seq: int) -> builtins.list[int]:
        """Delete, in one write, the thread's messages whose seq is greater than ``seq``
        (``-1``: every message) with their vectors; returns the deleted seqs, ascending.
        Deleted seqs are never given again: later appends continue after the highest
        seq the thread ever held, because journals and provenance records name messages
        by (thread, seq). NotFoundError for an unknown thread. A store without it
        raises NotImplementedError (``truncate_messages_after`` then returns None)."""
        raise NotImplementedError


class RunJournal:
    """Port: first-write-wins JSON key/value log, and the runs table."""

    def put_if_absent(self, key: str, value: Any) -> bool:
        """Write value under key unless the key exists; True when this call wrote.
        A value that is not JSON-serialisable raises InvalidInputError."""
        raise NotImplementedError

    def get(self, key: str) -> Any | None:
        raise NotImplementedError

    def list(self, prefix: str) -> builtins.list[tuple[str, Any]]:
        """Entries whose key starts with prefix, in the order they were written."""
        raise NotImplementedError

    def get_many(self, keys: Sequence[str]) -> dict[str, Any]:
        """key → value of each of ``keys`` that was written (absent keys are left out; a
        stored JSON null maps to None). Adapters read them in one query; this default
        asks once per key."""
        out: dict[str, Any] = {}
        for key in dict.fromkeys(keys):
            if self.has(key):
                out[key] = self.get(key)
        return out

    def delete(self, prefix: str) -> int:
        """Delete entries whose key starts with prefix; returns how many."""
        raise NotImplementedError

    def delete_keys(self, keys: Sequence[str]) -> int:
        """Delete exactly these entries (no prefix match: ``r:step:1`` leaves
        ``r:step:10``); returns how many existed."""
        raise NotImplementedError

    def rewrite(self, key: str, value: Any) -> None:
        """Replace one entry's value (erasure's redaction, a seal made again): the
        journal's only in-place edit; first write wins everywhere else."""
        self.delete_keys([key])
        self.put_if_absent(key, value)

    def has(self, key: str) -> bool:
        """Whether the key was written (a stored JSON null counts, unlike get's None)."""
        return any(k == key for k, _ in self.list(key))

    def put_many_if_absent(self, items: Sequence[tuple[str, Any]]) -> int:
        """``put_if_absent`` of each (key, value) in order — adapters may do it in one
        statement; returns how many were written."""
        return sum(1 for key, value in items if self.put_if_absent(key, value))

    def start_runs(self, runs: Sequence[RunRecord]) -> builtins.list[str]:
        """``start_run`` of each run; returns the ids this call inserted."""
        return [r.run_id for r in runs if self.start_run(r)]

    # -- runs ------------------------------------------------------------------------
    def start_run(self, run: RunRecord) -> bool:
        """Insert the run unless it exists (a resumed run keeps its first record);
        True when inserted."""
        raise NotImplementedError

    def set_run_status(self, run_id: str, status: RunStatus, *,
                       finished_at: datetime | None = None, error: str | None = None) -> None:
        raise NotImplementedError

    def get_run(self, run_id: str) -> RunRecord | None:
        raise NotImplementedError

    def require_run(self, run_id: str) -> RunRecord:
        from memory_core.errors import NotFoundError

        r = self.get_run(run_id)
        if r is None:
            raise NotFoundError(f"run '{run_id}' does not exist")
        return r

    def list_runs(self, *, thread_id: str | None = None,
                  resource_id: str | None = None) -> builtins.list[RunRecord]:
        """Ordered by started_at ascending, then run_id."""
        raise NotImplementedError

    def delete_runs(self, run_ids: Sequence[str]) -> int:
        raise NotImplementedError

    def run_rows(self, *, thread_id: str | None = None) -> builtins.list[RunRow]:
        """``list_runs`` as plain rows, in the same order: the workbench reads every run
        of a database (434,780 of a million-message import), and a validated record
        each cost it a second and twice the memory."""
        return [RunRow(r.run_id, r.agent, r.thread_id, r.resource_id, r.status,
                       r.started_at, r.finished_at, r.error)
                for r in self.list_runs(thread_id=thread_id)]

    def thread_runs(self) -> dict[str, ThreadRuns]:
        """Each thread that has runs: how many, and their latest moment (a run's
        ``finished_at``, else its ``started_at``); runs on no thread are left out.
        Builds no ``RunRecord``: the workbench reads it for every thread of an
        imported log (hundreds of thousands of runs)."""
        return tally_thread_runs((r.thread_id, r.started_at, r.finished_at)
                                 for r in self.list_runs())


class Storage:
    """An adapter: both ports, plus erasure that spans them."""

    memory: MemoryStore
    runs: RunJournal

    def close(self) -> None:  # pragma: no cover - adapters override when needed
        pass

    def write_batch(self) -> AbstractContextManager[None]:
        """Group the writes made in the block into one transaction where the engine can
        (a Runner's phase, an import's batches): all of them or none, committed when
        the block ends. By default each write commits on its own."""
        return nullcontext()

    def session(self) -> AbstractContextManager[None]:
        """Scope for a batch of operations: adapters that pay per operation to reach
        their database (DuckDBStorage on a file) hold one connection inside it and let
        it go when the block ends."""
        return nullcontext()

    def bulk_session(self) -> AbstractContextManager[None]:
        """``session`` for writing much (an import's write): adapters whose engine keeps
        what it writes in memory bound that for the block. By default ``session``."""
        return self.session()

    def __enter__(self) -> Storage:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def writer(self, *, lock_timeout: float = 30.0) -> AbstractContextManager[Storage]:
        """A storage that may write to this one's database, for the block: this one, or,
        when this one was opened read-only on a file another storage may open beside it
        (DuckDB), a writable one waiting up to ``lock_timeout`` for the file, closed when
        the block ends (so an agent process writing the file gets it back)."""
        return nullcontext(self)

    def erasing(self, what: str) -> AbstractContextManager[None]:
        """Scope of one erasure (``memory_core.lifecycle.erasure``): adapters that must
        finish an erasure after its transaction commits do it when the block ends
        (DuckDB rewrites its file so no freed block keeps the erased text)."""
        return nullcontext()


def rows_from_messages(store: MemoryStore, thread_ids: Sequence[str],
                       after_seq: dict[str, int] | None, vectors: bool, texts: bool,
                       metadata: bool) -> ScopeRows:
    """``scope_rows`` built from ``get_messages`` and ``get_embeddings`` (the portable
    way; adapters override it with one scan)."""
    after = after_seq or {}
    threads = tuple(dict.fromkeys(thread_ids))
    msgs = [m for t in threads for m in store.get_messages(t, from_seq=after.get(t, -1) + 1)]
    pos = {t: i for i, t in enumerate(threads)}
    n = len(msgs)
    where = {(m.thread_id, m.seq): i for i, m in enumerate(msgs)}
    has_vec = np.zeros(n, bool)
    matrix = None
    if vectors:
        block = store.get_embeddings(list(threads), after_seq=after)
        dim = block.matrix.shape[1] if len(block) else (store.embedding_dim() or 0)
        matrix = np.zeros((n, dim), np.float32)
        for j, (t, s) in enumerate(zip(block.thread_ids.tolist(), block.seqs.tolist(),
                                       strict=True)):
            i = where.get((str(t), int(s)))
            if i is not None:
                matrix[i] = block.matrix[j]
                has_vec[i] = True
    return ScopeRows(
        threads, np.array([pos[m.thread_id] for m in msgs], np.int32),
        np.array([m.seq for m in msgs], np.int64),
        np.array([ts_micros(m.created_at) for m in msgs], np.int64), has_vec, matrix,
        [None if (x := m.text()) is None else x.lower() for m in msgs] if texts else None,
        [m.metadata or None for m in msgs] if metadata else None)
