"""The storage core: the ten methods an adapter implements (``StorageCore``), and
both ports written once on top of it (``CoreStorage``: ``CoreMemoryStore`` and
``CoreRunJournal``).

A core keeps three things: keyed JSON documents in named collections (threads, the
threads of each resource, working memory, observations, observation vectors, journal entries, runs, meta), a
message log per thread (``LogRow``s by seq), and a transaction that groups them. It
validates nothing and knows no port: every check, every error, every order the ports
promise is made here, once, with the helpers every adapter shares
(memory_core/storage/common.py). ``InMemoryStorage`` is ``CoreStorage(DictCore())``;
tests/test_storage_core.py runs the conformance suite on a core built on sqlite3.

Required methods raise NotImplementedError; ``close``, ``change_token`` and
``scan_scope`` are optional (an engine's speed-ups: the ports work without them).
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Hashable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, cast

import numpy as np

from memory_core.errors import InvalidInputError, NotFoundError
from memory_core.storage.base import (
    THREAD_WM_PREFIX,
    EmbeddingBlock,
    MemoryStore,
    ObservationVector,
    RunJournal,
    RunRow,
    ScopeRows,
    Storage,
    ThreadCounts,
    check_observation_vector,
)
from memory_core.storage.common import (
    EDITS_KEY,
    SEQ_FLOOR_PREFIX,
    Clock,
    ThreadIdFactory,
    as_json,
    check_seq_bound,
    checked_clock,
    decode_json,
    encode_json,
    journal_texts,
    json_or_invalid,
    message_bodies,
    message_body,
    require_aware,
    stored_message,
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
from memory_core.vectors import with_spare_rows

# The collections CoreStorage keeps documents in (a core may hold any name).
THREADS = "threads"
WORKING_MEMORY = "working_memory"
OBSERVATIONS = "observations"
OBSERVATION_VECTORS = "observation_vectors"
JOURNAL = "journal"
RUNS = "runs"
META = "meta"
#: "<resource_id>:<thread_id>" → the thread's resource and creation time: a resource's
#: threads by one prefix scan (recall's scope check reads them every turn)
MEMBERS = "resource_threads"
COLLECTIONS = (THREADS, MEMBERS, WORKING_MEMORY, OBSERVATIONS, OBSERVATION_VECTORS, JOURNAL,
               RUNS, META)
DIM_KEY = "embedding_dim"  # meta: the store's vector dimension


@dataclass(frozen=True, slots=True, eq=False)
class LogRow:
    """One stored message of a thread's log: its ``seq``, its ``body`` (canonical JSON
    of role, content and metadata), its lower-cased text (None: it has none), the aware
    time it was written with, the run that wrote it, the thread's resource and its
    float32 vector (None: none, or not read). Nobody mutates a row or its vector: a core
    may keep and return the very objects it was given."""

    seq: int
    body: str
    text: str | None
    created_at: datetime
    run_id: str | None
    resource_id: str | None
    vector: np.ndarray | None = None


class StorageCore:
    """What an adapter implements; CoreStorage builds both ports on it.

    Every method is atomic on its own and safe to call from several Python threads;
    ``transaction()`` makes a block of calls one. Documents are JSON text, stored and
    returned as given (the core never parses them); ``LogRow``s likewise.
    """

    # -- transactions ------------------------------------------------------------
    def transaction(self) -> AbstractContextManager[None]:
        """A block of calls as one: every call inside sees the writes made before it
        in the block, no other writer's call runs in between (so a seq read and then
        written cannot be taken twice: writers are serialised), and the writes are
        kept all together when the outermost block ends, or none of them when it
        raises. A block inside another joins the outermost; a core that can also
        undo just an inner block that raises (a savepoint) should."""
        raise NotImplementedError

    # -- documents ------------------------------------------------------------------
    def put(self, collection: str, items: Sequence[tuple[str, str]], *,
            if_absent: bool = False) -> list[str]:
        """Store each ``(key, JSON text)`` of ``collection`` (keys are distinct); a
        stored key is replaced in place (it keeps its place in the write order), or
        with ``if_absent`` kept as it is. Returns the keys written, in ``items`` order."""
        raise NotImplementedError

    def get(self, collection: str, keys: Sequence[str]) -> dict[str, str]:
        """key → stored text of each of ``keys`` that is stored (absent ones left out)."""
        raise NotImplementedError

    def scan(self, collection: str, prefix: str = "") -> list[tuple[str, str]]:
        """``(key, text)`` of every document whose key starts with ``prefix``, in the
        order the keys were first written (a key deleted and written again is new)."""
        raise NotImplementedError

    def delete(self, collection: str, keys: Sequence[str]) -> int:
        """Delete the documents of ``keys`` (distinct); returns how many were stored."""
        raise NotImplementedError

    # -- the message log ------------------------------------------------------------
    def put_rows(self, thread_id: str, rows: Sequence[LogRow]) -> None:
        """Store each row (distinct seqs) in the thread's log at its seq, replacing a
        row stored there."""
        raise NotImplementedError

    def read_rows(self, thread_id: str, *, from_seq: int | None = None,
                  to_seq: int | None = None, seqs: Sequence[int] | None = None,
                  vectors: bool = True) -> list[LogRow]:
        """The thread's rows in seq order: all, those with ``from_seq <= seq <=
        to_seq`` (either bound may be None), or those of ``seqs``. With ``vectors``
        False their vectors may be left None (not read)."""
        raise NotImplementedError

    def delete_rows(self, thread_id: str, seqs: Sequence[int] | None = None) -> int:
        """Delete the rows of ``seqs`` (every row of the thread when None); returns
        how many were stored."""
        raise NotImplementedError

    def row_stats(self, thread_ids: Sequence[str]) -> dict[str, tuple[int, int]]:
        """``(row count, highest seq)`` of each of ``thread_ids``; ``(0, -1)`` for a
        thread without rows. Called on every recall: keep it cheap."""
        raise NotImplementedError

    # -- the scan of a scope ------------------------------------------------------------
    def scan_rows(self, thread_ids: Sequence[str], after: Sequence[int], *,
                  vectors: bool = True) -> Iterable[tuple[int, LogRow]]:
        """``(i, row)`` for every row of ``thread_ids[i]`` whose seq is greater than
        ``after[i]``, each once, in no promised order (recall loads a scope's vectors
        and texts from it; ``vectors`` as in ``read_rows``). The caller consumes it
        inside a ``transaction()``."""
        raise NotImplementedError

    # -- optional ---------------------------------------------------------------------
    def close(self) -> None:
        """Let the engine go (called once or more when the storage closes)."""

    def change_token(self) -> Hashable | None:
        """``MemoryStore.change_token``: a value no later write leaves equal; None
        when the engine cannot tell cheaply."""
        return None

    def scan_scope(self, thread_ids: Sequence[str], after: Sequence[int], *,
                   vectors: bool, texts: bool, metadata: bool) -> ScopeRows | None:
        """``MemoryStore.scope_rows`` read in one engine-specific scan (an Arrow scan);
        None to build it from ``scan_rows``. Called inside a ``transaction()``."""
        return None


# -- documents as CoreStorage writes them -------------------------------------------------
_dump = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def _decoded(items: Sequence[tuple[str, str]]) -> list[tuple[str, Any]]:
    """``(key, value)`` of scanned documents, decoded in one call (a call each cost
    most of a scan of a resource's threads)."""
    values = json.loads(f"[{','.join(v for _, v in items)}]")
    return list(zip([k for k, _ in items], values, strict=True))


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text)


def _thread(tid: str, d: dict[str, Any]) -> Thread:
    return Thread(id=tid, resource_id=d["resource_id"], title=d["title"],
                  metadata=d["metadata"], parent_thread_id=d["parent_thread_id"],
                  created_at=_time(d["created_at"]), updated_at=_time(d["updated_at"]))


def _thread_doc(t: Thread) -> str:
    return _dump({"resource_id": t.resource_id, "title": t.title, "metadata": t.metadata,
                  "parent_thread_id": t.parent_thread_id,
                  "created_at": t.created_at.isoformat(), "created_us": ts_micros(t.created_at),
                  "updated_at": t.updated_at.isoformat()})


def _observation(oid: str, d: dict[str, Any]) -> Observation:
    return Observation(id=oid, thread_id=d["thread_id"], from_seq=d["from_seq"],
                       to_seq=d["to_seq"], level=d["level"], text=d["text"],
                       source_ids=d["source_ids"], created_at=_time(d["created_at"]),
                       condensed=d["condensed"])


def _observation_doc(o: Observation) -> str:
    return _dump({"thread_id": o.thread_id, "from_seq": o.from_seq, "to_seq": o.to_seq,
                  "level": o.level, "text": o.text, "source_ids": list(o.source_ids),
                  "created_at": o.created_at.isoformat(), "created_us": ts_micros(o.created_at),
                  "condensed": o.condensed})


def _run_doc(r: RunRecord) -> str:
    require_aware(f"started_at of run '{r.run_id}'", r.started_at)
    require_aware(f"finished_at of run '{r.run_id}'", r.finished_at)
    return _dump({"agent": r.agent, "thread_id": r.thread_id, "resource_id": r.resource_id,
                  "status": r.status, "started_at": r.started_at.isoformat(),
                  "started_us": ts_micros(r.started_at),
                  "finished_at": None if r.finished_at is None else r.finished_at.isoformat(),
                  "error": r.error})


def _run_row(rid: str, d: dict[str, Any]) -> RunRow:
    return RunRow(rid, d["agent"], d["thread_id"], d["resource_id"], d["status"],
                  _time(d["started_at"]),
                  None if d["finished_at"] is None else _time(d["finished_at"]), d["error"])


def _lowered(m: Message) -> str | None:
    text = m.text()
    return None if text is None else text.lower()


def _message(thread_id: str, r: LogRow) -> StoredMessage:
    return stored_message(thread_id, r.seq, r.resource_id, r.body, r.created_at, r.run_id)


class CoreMemoryStore(MemoryStore):
    """MemoryStore over a StorageCore."""

    def __init__(self, core: StorageCore, clock: Clock, ids: ThreadIdFactory) -> None:
        self._core = core
        self._clock = clock
        self._ids = ids

    # -- meta -----------------------------------------------------------------------------
    def _meta(self, key: str) -> int | None:
        text = self._core.get(META, [key]).get(key)
        return None if text is None else int(json.loads(text))

    def _floor(self, thread_id: str) -> int:
        """The highest seq the thread held before a truncation (-1: none)."""
        floor = self._meta(f"{SEQ_FLOOR_PREFIX}{thread_id}")
        return -1 if floor is None else floor

    def _count_edit(self) -> None:
        """An in-place rewrite of stored messages (``ThreadCounts.edits``)."""
        self._core.put(META, [(EDITS_KEY, _dump((self._meta(EDITS_KEY) or 0) + 1))])

    # -- threads --------------------------------------------------------------------------
    def _find(self, thread_id: str) -> Thread | None:
        text = self._core.get(THREADS, [thread_id]).get(thread_id)
        return None if text is None else _thread(thread_id, json.loads(text))

    def _require(self, thread_id: str) -> Thread:
        t = self._find(thread_id)
        if t is None:
            raise NotFoundError(f"thread '{thread_id}' does not exist")
        return t

    def _members(self, resource_id: str) -> list[tuple[str, dict[str, Any]]]:
        """``(thread id, its MEMBERS document)`` of the resource's threads, in
        list_threads order (newest first, ties by id)."""
        prefix = f"{resource_id}:"
        docs = [(k[len(prefix):], d) for k, d in _decoded(self._core.scan(MEMBERS, prefix))]
        docs = [(t, d) for t, d in docs if d["resource_id"] == resource_id]
        return sorted(docs, key=lambda x: (-x[1]["created_us"], x[0]))

    def _member(self, t: Thread, resource_id: str | None, *, drop: bool = False) -> None:
        """Write (or ``drop``) the thread's MEMBERS document for ``resource_id``."""
        if resource_id is None:
            return
        key = f"{resource_id}:{t.id}"
        if drop:
            self._core.delete(MEMBERS, [key])
        else:
            self._core.put(MEMBERS, [(key, _dump({
                "resource_id": resource_id, "created_at": t.created_at.isoformat(),
                "created_us": ts_micros(t.created_at)}))])

    def _threads(self, resource_id: str | None = None) -> list[Thread]:
        """list_threads."""
        if resource_id is not None:
            tids = [t for t, _ in self._members(resource_id)]
            found = self._core.get(THREADS, tids)
            return [_thread(t, d) for t, d in _decoded([(t, found[t]) for t in tids
                                                          if t in found])]
        docs = _decoded(self._core.scan(THREADS))
        docs.sort(key=lambda x: (-x[1]["created_us"], x[0]))
        return [_thread(k, d) for k, d in docs]

    def _create(self, thread_id: str | None, resource_id: str | None, title: str | None,
                metadata: dict[str, Any] | None, parent_thread_id: str | None) -> Thread:
        tid = thread_id or self._ids()
        if not isinstance(tid, str):
            raise InvalidInputError(f"thread id must be a string, got {tid!r}")
        meta = as_json(f"metadata of thread '{tid}'", dict(metadata or {}))
        if self._core.get(THREADS, [tid]):
            raise InvalidInputError(f"thread '{tid}' already exists")
        now = self._clock()
        t = Thread(id=tid, resource_id=resource_id, title=title, metadata=meta,
                   parent_thread_id=parent_thread_id, created_at=now, updated_at=now)
        self._core.put(THREADS, [(tid, _thread_doc(t))])
        self._member(t, resource_id)
        return t

    def create_thread(self, thread_id: str | None = None, *, resource_id: str | None = None,
                      title: str | None = None, metadata: dict[str, Any] | None = None,
                      parent_thread_id: str | None = None) -> Thread:
        with self._core.transaction():
            return self._create(thread_id, resource_id, title, metadata, parent_thread_id)

    def get_thread(self, thread_id: str) -> Thread | None:
        return self._find(thread_id)

    def list_threads(self, resource_id: str | None = None) -> list[Thread]:
        with self._core.transaction():
            return self._threads(resource_id)

    def list_resources(self) -> list[str]:
        return sorted({d["resource_id"] for _, d in _decoded(self._core.scan(THREADS))
                       if d["resource_id"]})

    def update_thread(self, thread_id: str, *, title: str | None = None,
                      metadata: dict[str, Any] | None = None,
                      resource_id: str | None = None) -> Thread:
        with self._core.transaction():
            t = self._require(thread_id)
            patch: dict[str, Any] = {"updated_at": max(self._clock(), t.updated_at)}
            if title is not None:
                patch["title"] = title
            if metadata is not None:
                patch["metadata"] = as_json(f"metadata of thread '{thread_id}'",
                                            {**t.metadata, **metadata})
            if resource_id is not None:
                patch["resource_id"] = resource_id
            nt = t.model_copy(update=patch, deep=True)
            self._core.put(THREADS, [(thread_id, _thread_doc(nt))])
            if resource_id is not None and resource_id != t.resource_id:
                self._member(t, t.resource_id, drop=True)
                self._member(nt, resource_id)
            if resource_id is not None:  # its messages are rewritten in place
                self._core.put_rows(thread_id, [replace(r, resource_id=resource_id)
                                                for r in self._core.read_rows(thread_id)])
                self._count_edit()
            return nt

    def clone_thread(self, source_id: str, new_id: str | None = None, *,
                     resource_id: str | None = None) -> Thread:
        with self._core.transaction():
            src = self._require(source_id)
            rid = resource_id or src.resource_id or "default"
            t = self._create(new_id, rid, src.title, src.metadata, source_id)
            self._core.put_rows(t.id, [replace(r, resource_id=rid)
                                       for r in self._core.read_rows(source_id)])
            key = f"{THREAD_WM_PREFIX}{source_id}"
            # a stored JSON null is a value like any other: copy it too
            for text in self._core.get(WORKING_MEMORY, [key]).values():
                self._core.put(WORKING_MEMORY, [(f"{THREAD_WM_PREFIX}{t.id}", text)])
            copies = [o.model_copy(update={"thread_id": t.id, "id": f"{t.id}/{o.id}"})
                      for o in self._observations(source_id)]
            self._core.put(OBSERVATIONS, [(o.id, _observation_doc(o)) for o in copies])
            return t

    # -- messages ---------------------------------------------------------------------------
    def append_messages(self, thread_id: str, rows: Sequence[AppendRow]) -> list[int]:
        rows = list(rows)
        validate_batch(thread_id, rows, None)
        # the same checks and the same JSON as every other adapter, before any write
        bodies = message_bodies(thread_id, rows)
        has_vec = any(r.embedding is not None for r in rows)
        with self._core.transaction():
            dim = self._meta(DIM_KEY) if has_vec else None
            explicit, batch_dim = validate_batch(thread_id, rows, dim)
            thread = self._require(thread_id)
            # seqs a truncation deleted are never given again
            top = max(self._core.row_stats([thread_id])[thread_id][1], self._floor(thread_id))
            if explicit:
                seqs = [int(r.seq) for r in rows if r.seq is not None]
                stored = {r.seq for r in self._core.read_rows(thread_id, seqs=seqs,
                                                              vectors=False)}
            else:
                seqs, stored = list(range(top + 1, top + 1 + len(rows))), set()
            # one time for the rows of this append that bring none
            now = self._clock() if any(r.created_at is None for r in rows) else None
            new = [LogRow(seq, body, _lowered(r.message), r.created_at or cast(datetime, now),
                          r.run_id, thread.resource_id,
                          None if r.embedding is None else r.embedding.copy())
                   for seq, body, r in zip(seqs, bodies, rows, strict=True)
                   if seq not in stored]
            self._core.put_rows(thread_id, new)
            if dim is None and batch_dim is not None and \
                    any(r.vector is not None for r in new):
                self._core.put(META, [(DIM_KEY, _dump(batch_dim))])
            return seqs

    def get_messages(self, thread_id: str, *, from_seq: int | None = None,
                     to_seq: int | None = None,
                     seqs: Sequence[int] | None = None) -> list[StoredMessage]:
        if seqs is not None:
            seqs = sorted({int(s) for s in seqs})
        rows = self._core.read_rows(thread_id, from_seq=from_seq, to_seq=to_seq, seqs=seqs,
                                    vectors=False)
        return [_message(thread_id, r) for r in rows]

    def count_messages(self, thread_id: str) -> int:
        return self._core.row_stats([thread_id])[thread_id][0]

    def max_seq(self, thread_id: str) -> int:
        return self._core.row_stats([thread_id])[thread_id][1]

    def thread_stats(self, thread_ids: Sequence[str]) -> dict[str, tuple[int, int]]:
        with self._core.transaction():
            known = list(self._core.get(THREADS, list(dict.fromkeys(thread_ids))))
            return self._core.row_stats(known) if known else {}

    def scope_counts(self, thread_id: str,
                     resource_id: str | None = None) -> dict[str, ThreadCounts]:
        with self._core.transaction():
            own = self._core.get(THREADS, [thread_id]).get(thread_id)
            if own is None:
                raise NotFoundError(f"thread '{thread_id}' does not exist")
            # the documents as they are: no Thread built per thread of the scope
            members = self._members(resource_id) if resource_id is not None else []
            if all(k != thread_id for k, _ in members):
                members.append((thread_id, json.loads(own)))
            stats = self._core.row_stats([k for k, _ in members])
            edits = self._meta(EDITS_KEY) or 0
        return {k: ThreadCounts(*stats[k], _time(d["created_at"]), edits) for k, d in members}

    def change_token(self) -> Hashable | None:
        return self._core.change_token()

    def get_messages_by_refs(self, refs: Sequence[tuple[str, int]]) -> list[StoredMessage]:
        wanted: dict[str, set[int]] = {}
        for t, s in refs:
            wanted.setdefault(str(t), set()).add(int(s))
        with self._core.transaction():
            return [_message(t, r) for t in sorted(wanted)
                    for r in self._core.read_rows(t, seqs=sorted(wanted[t]), vectors=False)]

    def get_embeddings(self, thread_ids: Sequence[str], *,
                       after_seq: dict[str, int] | None = None) -> EmbeddingBlock:
        tids = sorted(set(thread_ids))
        after = after_seq or {}
        with self._core.transaction():
            got = sorted(((i, r.seq, r.vector) for i, r in self._core.scan_rows(
                tids, [after.get(t, -1) for t in tids]) if r.vector is not None),
                key=lambda x: (x[0], x[1]))
            dim = self._meta(DIM_KEY) or 0
        mat = np.vstack([v for _, _, v in got]).astype(np.float32) if got else \
            np.zeros((0, dim), np.float32)
        return EmbeddingBlock(np.array([tids[i] for i, _, _ in got], dtype=object),
                              np.array([s for _, s, _ in got], dtype=np.int64), mat)

    def embedding_dim(self) -> int | None:
        return self._meta(DIM_KEY)

    def scope_rows(self, thread_ids: Sequence[str], *,
                   after_seq: dict[str, int] | None = None, vectors: bool = True,
                   texts: bool = False, metadata: bool = False,
                   message_share: float = 0.0) -> ScopeRows:
        del message_share  # a message read later costs what reading it here would
        after = after_seq or {}
        threads = tuple(dict.fromkeys(thread_ids))
        lo = [after.get(t, -1) for t in threads]
        with self._core.transaction():
            fast = self._core.scan_scope(threads, lo, vectors=vectors, texts=texts,
                                         metadata=metadata)
            if fast is not None:
                return fast
            picked = sorted(self._core.scan_rows(threads, lo, vectors=vectors),
                            key=lambda x: (x[0], x[1].seq))
            dim = (self._meta(DIM_KEY) or 0) if vectors else 0
        n = len(picked)
        has_vec = np.array([vectors and r.vector is not None for _, r in picked], bool)
        matrix = None
        if vectors:
            matrix = with_spare_rows(n, dim)  # the recall cache grows into them
            if has_vec.any():
                matrix[has_vec] = np.vstack([r.vector for _, r in picked
                                             if r.vector is not None])
        return ScopeRows(
            threads, np.array([i for i, _ in picked], np.int32),
            np.array([r.seq for _, r in picked], np.int64),
            np.array([ts_micros(r.created_at) for _, r in picked], np.int64), has_vec,
            matrix, [r.text for _, r in picked] if texts else None,
            [json.loads(r.body).get("metadata") or None for _, r in picked]
            if metadata else None)

    def search_messages(self, text: str, *, resource_id: str | None = None,
                        thread_id: str | None = None, limit: int = 100) -> list[StoredMessage]:
        needle = text.lower()
        if not needle:
            return []
        with self._core.transaction():
            tids = [thread_id] if thread_id is not None else \
                [k for k, _ in self._core.scan(THREADS)]
            found = [(tids[i], r) for i, r in self._core.scan_rows(
                tids, [-1] * len(tids), vectors=False)
                if r.text is not None and needle in r.text
                and (resource_id is None or r.resource_id == resource_id)]
        found.sort(key=lambda x: (ts_micros(x[1].created_at), x[0], x[1].seq))
        return [_message(t, r) for t, r in found][:limit]

    # -- working memory -------------------------------------------------------------------
    def get_working_memory(self, key: str) -> Any | None:
        text = self._core.get(WORKING_MEMORY, [key]).get(key)
        return None if text is None else decode_json(text)

    def put_working_memory(self, key: str, value: Any) -> None:
        self._core.put(WORKING_MEMORY, [(key, encode_json(key, value))])

    def list_working_memory_keys(self) -> list[str]:
        return sorted(k for k, _ in self._core.scan(WORKING_MEMORY))

    def delete_working_memory(self, key: str) -> bool:
        # a stored JSON null is a value too: it existed
        return self._core.delete(WORKING_MEMORY, [key]) > 0

    # -- observations -----------------------------------------------------------------------
    def _observations(self, thread_id: str) -> list[Observation]:
        docs = _decoded(self._core.scan(OBSERVATIONS))
        found = [(d["created_us"], k, d) for k, d in docs if d["thread_id"] == thread_id]
        return [_observation(k, d) for _, k, d in sorted(found, key=lambda x: x[:2])]

    def put_observation(self, observation: Observation) -> None:
        require_aware(f"created_at of observation '{observation.id}'", observation.created_at)
        json_or_invalid(f"source_ids of observation '{observation.id}'",
                        observation.source_ids)
        self._core.put(OBSERVATIONS, [(observation.id, _observation_doc(observation))],
                       if_absent=True)

    def list_observations(self, thread_id: str, *,
                          include_condensed: bool = True) -> list[Observation]:
        return [o for o in self._observations(thread_id)
                if include_condensed or not o.condensed]

    def mark_condensed(self, observation_ids: Sequence[str]) -> None:
        with self._core.transaction():
            found = self._core.get(OBSERVATIONS, list(dict.fromkeys(observation_ids)))
            self._core.put(OBSERVATIONS, [(k, _dump({**json.loads(v), "condensed": True}))
                                          for k, v in found.items()])

    def put_observation_vectors(self, vectors: Sequence[ObservationVector]) -> None:
        docs: dict[str, str] = {}
        for v in vectors:
            arr = check_observation_vector(v)
            meta = json_or_invalid(f"metadata of observation vector '{v.id}'", v.metadata)
            docs.setdefault(v.id, _dump({"thread_id": v.thread_id, "metadata": json.loads(meta),
                                         "vector": [float(x) for x in arr]}))
        if docs:
            self._core.put(OBSERVATION_VECTORS, list(docs.items()), if_absent=True)

    def list_observation_vectors(self, thread_id: str | None = None) -> list[ObservationVector]:
        docs = _decoded(self._core.scan(OBSERVATION_VECTORS))
        return sorted((ObservationVector(k, d["thread_id"], np.asarray(d["vector"], np.float32),
                                         d["metadata"])
                       for k, d in docs if thread_id is None or d["thread_id"] == thread_id),
                      key=lambda v: v.id)

    # -- erasure and truncation ---------------------------------------------------------------
    def redact_observation(self, observation_id: str, text: str) -> bool:
        with self._core.transaction():
            found = self._core.get(OBSERVATIONS, [observation_id]).get(observation_id)
            if found is None:
                return False
            self._core.put(OBSERVATIONS, [(observation_id, _dump({**json.loads(found),
                                                                  "text": text}))])
            vids = [k for k, d in _decoded(self._core.scan(OBSERVATION_VECTORS))
                    if (d.get("metadata") or {}).get("obs_id") == observation_id]
            if vids:
                self._core.delete(OBSERVATION_VECTORS, vids)
            return True

    def redact_message(self, thread_id: str, seq: int, message: Message) -> bool:
        body = message_body(thread_id, 0, AppendRow(message=message))
        with self._core.transaction():
            found = self._core.read_rows(thread_id, seqs=[int(seq)], vectors=False)
            if not found:
                return False
            self._core.put_rows(thread_id, [replace(found[0], body=body, text=_lowered(message),
                                                    vector=None)])
            self._count_edit()  # seen by recall's cache through scope_counts
            return True

    def delete_messages_after(self, thread_id: str, seq: int) -> builtins.list[int]:
        check_seq_bound(seq)
        with self._core.transaction():
            self._require(thread_id)
            gone = [r.seq for r in self._core.read_rows(thread_id, from_seq=seq + 1,
                                                         vectors=False)]
            if gone:
                self._core.put(META, [(f"{SEQ_FLOOR_PREFIX}{thread_id}",
                                       _dump(max(self._floor(thread_id), gone[-1])))])
                self._core.delete_rows(thread_id, gone)
            return gone

    def delete_thread(self, thread_id: str) -> ErasureReport:
        with self._core.transaction():
            t = self._require(thread_id)
            self._member(t, t.resource_id, drop=True)
            rows = self._core.read_rows(thread_id)
            self._core.delete_rows(thread_id)
            key = f"{THREAD_WM_PREFIX}{thread_id}"
            wm = [key] if self._core.delete(WORKING_MEMORY, [key]) else []
            obs = [o.id for o in self._observations(thread_id)]
            self._core.delete(OBSERVATIONS, obs)
            self._core.delete(OBSERVATION_VECTORS, [
                v.id for v in self.list_observation_vectors(thread_id)])
            self._core.delete(META, [f"{SEQ_FLOOR_PREFIX}{thread_id}"])
            self._core.delete(THREADS, [thread_id])
        return ErasureReport(threads=[thread_id], messages=len(rows),
                             embeddings=sum(r.vector is not None for r in rows),
                             working_memory=wm, observations=len(obs))


class CoreRunJournal(RunJournal):
    """RunJournal over a StorageCore."""

    def __init__(self, core: StorageCore) -> None:
        self._core = core

    def put_if_absent(self, key: str, value: Any) -> bool:
        text = journal_texts([(key, value)])[key]
        return bool(self._core.put(JOURNAL, [(key, text)], if_absent=True))

    def get(self, key: str) -> Any | None:
        text = self._core.get(JOURNAL, [key]).get(key)
        return None if text is None else decode_json(text)

    def get_many(self, keys: Sequence[str]) -> dict[str, Any]:
        found = self._core.get(JOURNAL, list(dict.fromkeys(keys)))
        return {k: decode_json(v) for k, v in found.items()}

    def list(self, prefix: str) -> builtins.list[tuple[str, Any]]:
        return [(k, decode_json(v)) for k, v in self._core.scan(JOURNAL, prefix)]

    def delete(self, prefix: str) -> int:
        with self._core.transaction():
            return self._core.delete(JOURNAL, [k for k, _ in self._core.scan(JOURNAL, prefix)])

    def delete_keys(self, keys: Sequence[str]) -> int:
        return self._core.delete(JOURNAL, list(dict.fromkeys(keys)))

    def rewrite(self, key: str, value: Any) -> None:
        with self._core.transaction():  # the old value or the new one
            super().rewrite(key, value)

    # -- runs -------------------------------------------------------------------------------
    def start_run(self, run: RunRecord) -> bool:
        return bool(self._core.put(RUNS, [(run.run_id, _run_doc(run))], if_absent=True))

    def set_run_status(self, run_id: str, status: RunStatus, *,
                       finished_at: datetime | None = None, error: str | None = None) -> None:
        require_aware(f"finished_at of run '{run_id}'", finished_at)
        with self._core.transaction():
            text = self._core.get(RUNS, [run_id]).get(run_id)
            if text is None:
                raise NotFoundError(f"run '{run_id}' does not exist")
            r = self._record(run_id, json.loads(text)).model_copy(
                update={"status": status, "finished_at": finished_at, "error": error})
            self._core.put(RUNS, [(run_id, _run_doc(r))])

    @staticmethod
    def _record(run_id: str, d: dict[str, Any]) -> RunRecord:
        return RunRecord(**_run_row(run_id, d)._asdict())

    def get_run(self, run_id: str) -> RunRecord | None:
        text = self._core.get(RUNS, [run_id]).get(run_id)
        return None if text is None else self._record(run_id, json.loads(text))

    def list_runs(self, *, thread_id: str | None = None,
                  resource_id: str | None = None) -> builtins.list[RunRecord]:
        docs = _decoded(self._core.scan(RUNS))
        docs = [(k, d) for k, d in docs if (thread_id is None or d["thread_id"] == thread_id)
                and (resource_id is None or d["resource_id"] == resource_id)]
        docs.sort(key=lambda x: (x[1]["started_us"], x[0]))
        return [self._record(k, d) for k, d in docs]

    def delete_runs(self, run_ids: Sequence[str]) -> int:
        return self._core.delete(RUNS, builtins.list(dict.fromkeys(run_ids)))


class CoreStorage(Storage):
    """Both ports over one StorageCore: ``CoreStorage(MyCore(...), clock=...)`` is a
    complete adapter. ``write_batch()`` is the core's transaction."""

    def __init__(self, core: StorageCore, *, clock: Clock = utc_now,
                 ids: ThreadIdFactory | None = None) -> None:
        self.core = core
        clock = checked_clock(clock)
        self.memory: MemoryStore = CoreMemoryStore(core, clock, ids or ThreadIdFactory(clock))
        self.runs: RunJournal = CoreRunJournal(core)

    def write_batch(self) -> AbstractContextManager[None]:
        return self.core.transaction()

    def close(self) -> None:
        self.core.close()


__all__ = ["COLLECTIONS", "JOURNAL", "MEMBERS", "META", "OBSERVATIONS", "OBSERVATION_VECTORS", "RUNS",
           "THREADS", "WORKING_MEMORY", "CoreMemoryStore", "CoreRunJournal", "CoreStorage",
           "LogRow", "StorageCore"]
