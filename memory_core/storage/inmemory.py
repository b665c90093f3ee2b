"""InMemoryStorage: the reference adapter, plain Python structures behind one lock.

It defines the behaviour every other adapter must match (the conformance suite runs
against it first); nothing survives the process.
"""

from __future__ import annotations

import builtins
import copy
import threading
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np

from memory_core.errors import InvalidInputError, NotFoundError
from memory_core.storage.base import (
    THREAD_WM_PREFIX,
    EmbeddingBlock,
    MemoryStore,
    ObservationVector,
    RunJournal,
    ScopeRows,
    Storage,
    ThreadCounts,
    check_observation_vector,
)
from memory_core.storage.common import (
    Clock,
    ThreadIdFactory,
    as_json,
    check_seq_bound,
    checked_clock,
    decode_json,
    encode_json,
    json_or_invalid,
    key_group,
    message_body,
    require_aware,
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


def _thread_order(threads: list[Thread]) -> list[Thread]:
    threads = sorted(threads, key=lambda t: t.id)
    return sorted(threads, key=lambda t: t.created_at, reverse=True)


class _Row:
    __slots__ = ("msg", "vec")

    def __init__(self, msg: StoredMessage, vec: np.ndarray | None) -> None:
        self.msg = msg
        self.vec = vec


class InMemoryMemoryStore(MemoryStore):
    def __init__(self, lock: threading.RLock, clock: Clock, ids: ThreadIdFactory) -> None:
        self._lock = lock
        self._clock = clock
        self._ids = ids
        self._threads: dict[str, Thread] = {}
        self._rows: dict[str, dict[int, _Row]] = {}
        self._wm: dict[str, Any] = {}
        self._obs: dict[str, Observation] = {}
        self._obs_vecs: dict[str, ObservationVector] = {}
        self._dim: int | None = None
        # thread -> (row count, max seq) when last computed: rows are only ever added
        # to a thread (or the thread dropped whole), so an unchanged count means an
        # unchanged max and thread_stats stays O(1) per thread
        self._top: dict[str, tuple[int, int]] = {}
        self._edits = 0  # in-place rewrites of messages: scope_counts reports them
        # thread -> the highest seq it ever held, once a truncation deleted its tail
        self._floor: dict[str, int] = {}

    # -- threads
    def create_thread(self, thread_id: str | None = None, *, resource_id: str | None = None,
                      title: str | None = None, metadata: dict[str, Any] | None = None,
                      parent_thread_id: str | None = None) -> Thread:
        with self._lock:
            tid = thread_id or self._ids()
            if not isinstance(tid, str):
                raise InvalidInputError(f"thread id must be a string, got {tid!r}")
            meta = as_json(f"metadata of thread '{tid}'", dict(metadata or {}))
            if tid in self._threads:
                raise InvalidInputError(f"thread '{tid}' already exists")
            now = self._clock()
            t = Thread(id=tid, resource_id=resource_id, title=title,
                       metadata=meta, parent_thread_id=parent_thread_id,
                       created_at=now, updated_at=now)
            self._threads[tid] = t
            self._rows[tid] = {}
            return t.model_copy(deep=True)

    def get_thread(self, thread_id: str) -> Thread | None:
        with self._lock:
            t = self._threads.get(thread_id)
            return t.model_copy(deep=True) if t else None

    def list_threads(self, resource_id: str | None = None) -> list[Thread]:
        with self._lock:
            ts = [t.model_copy(deep=True) for t in self._threads.values()
                  if resource_id is None or t.resource_id == resource_id]
        return _thread_order(ts)

    def list_resources(self) -> list[str]:
        with self._lock:
            return sorted({t.resource_id for t in self._threads.values() if t.resource_id})

    def update_thread(self, thread_id: str, *, title: str | None = None,
                      metadata: dict[str, Any] | None = None,
                      resource_id: str | None = None) -> Thread:
        with self._lock:
            t = self._threads.get(thread_id)
            if t is None:
                raise NotFoundError(f"thread '{thread_id}' does not exist")
            patch: dict[str, Any] = {"updated_at": max(self._clock(), t.updated_at)}
            if title is not None:
                patch["title"] = title
            if metadata is not None:
                patch["metadata"] = as_json(f"metadata of thread '{thread_id}'",
                                            {**t.metadata, **metadata})
            if resource_id is not None:
                patch["resource_id"] = resource_id
            nt = t.model_copy(update=patch, deep=True)
            self._threads[thread_id] = nt
            if resource_id is not None:
                for row in self._rows[thread_id].values():
                    row.msg = row.msg.model_copy(update={"resource_id": resource_id})
                self._edits += 1  # messages rewritten in place (ThreadCounts.edits)
            return nt.model_copy(deep=True)

    def clone_thread(self, source_id: str, new_id: str | None = None, *,
                     resource_id: str | None = None) -> Thread:
        with self._lock:
            src = self.require_thread(source_id)
            rid = resource_id or src.resource_id or "default"
            t = self.create_thread(new_id, resource_id=rid, title=src.title,
                                   metadata=src.metadata, parent_thread_id=source_id)
            for seq, row in self._rows[source_id].items():
                m = row.msg.model_copy(update={"thread_id": t.id, "resource_id": rid}, deep=True)
                self._rows[t.id][seq] = _Row(m, None if row.vec is None else row.vec.copy())
            # a stored JSON null is a value like any other: copy it too
            src_key = f"{THREAD_WM_PREFIX}{source_id}"
            if src_key in self._wm:
                self._wm[f"{THREAD_WM_PREFIX}{t.id}"] = copy.deepcopy(self._wm[src_key])
            for o in list(self._obs.values()):
                if o.thread_id == source_id:
                    no = o.model_copy(update={"thread_id": t.id, "id": f"{t.id}/{o.id}"},
                                      deep=True)
                    self._obs[no.id] = no
            return t

    # -- messages
    def append_messages(self, thread_id: str, rows: Sequence[AppendRow]) -> list[int]:
        validate_batch(thread_id, rows, None)
        # the same checks and the same JSON round trip as the database adapters
        bodies = [message_body(thread_id, i, r) for i, r in enumerate(rows)]
        with self._lock:
            explicit, dim = validate_batch(thread_id, rows, self._dim)
            thread = self._threads.get(thread_id)
            if thread is None:
                raise NotFoundError(f"thread '{thread_id}' does not exist")
            store = self._rows[thread_id]
            count, top = self._stats(thread_id)
            next_seq = max(top, self._floor.get(thread_id, -1)) + 1
            staged: list[tuple[int, _Row]] = []
            seqs: list[int] = []
            for r, body in zip(rows, bodies, strict=True):
                seq = r.seq if explicit else next_seq
                assert seq is not None
                if not explicit:
                    next_seq += 1
                seqs.append(seq)
                if seq in store:
                    continue
                m = StoredMessage.model_validate({
                    **decode_json(body), "thread_id": thread_id,
                    "resource_id": thread.resource_id, "seq": seq,
                    "created_at": r.created_at or self._clock(), "run_id": r.run_id})
                staged.append((seq, _Row(m,
                                         None if r.embedding is None else r.embedding.copy())))
            for seq, row in staged:
                store[seq] = row
            if staged:  # the cached (count, max) moves with the rows, no rescan
                self._top[thread_id] = (count + len(staged),
                                        max(top, max(q for q, _ in staged)))
            if dim is not None and self._dim is None and any(r.vec is not None for _, r in staged):
                self._dim = dim
            return seqs

    def get_messages(self, thread_id: str, *, from_seq: int | None = None,
                     to_seq: int | None = None,
                     seqs: Sequence[int] | None = None) -> list[StoredMessage]:
        with self._lock:
            store = self._rows.get(thread_id, {})
            if seqs is not None:
                keys = sorted({s for s in seqs if s in store})
            else:
                keys = sorted(s for s in store
                              if (from_seq is None or s >= from_seq)
                              and (to_seq is None or s <= to_seq))
            return [store[k].msg.model_copy(deep=True) for k in keys]

    def count_messages(self, thread_id: str) -> int:
        with self._lock:
            return len(self._rows.get(thread_id, {}))

    def max_seq(self, thread_id: str) -> int:
        with self._lock:
            store = self._rows.get(thread_id, {})
            return max(store) if store else -1

    def thread_stats(self, thread_ids: Sequence[str]) -> dict[str, tuple[int, int]]:
        with self._lock:
            out: dict[str, tuple[int, int]] = {}
            for t in thread_ids:
                if t in self._threads:
                    out[t] = self._stats(t)
            return out

    def scope_counts(self, thread_id: str,
                     resource_id: str | None = None) -> dict[str, ThreadCounts]:
        with self._lock:
            own = self._threads.get(thread_id)
            if own is None:
                raise NotFoundError(f"thread '{thread_id}' does not exist")
            threads = [t for t in self._threads.values()
                       if resource_id is not None and t.resource_id == resource_id]
            threads = _thread_order(threads)
            if all(t.id != thread_id for t in threads):
                threads.append(own)
            return {t.id: ThreadCounts(*self._stats(t.id), t.created_at, self._edits)
                    for t in threads}

    def _stats(self, thread_id: str) -> tuple[int, int]:
        store = self._rows.get(thread_id, {})
        known = self._top.get(thread_id)
        if known is None or known[0] != len(store):
            known = (len(store), max(store) if store else -1)
            self._top[thread_id] = known
        return known

    def get_messages_by_refs(self, refs: Sequence[tuple[str, int]]) -> list[StoredMessage]:
        with self._lock:
            keys = sorted({(t, int(s)) for t, s in refs
                           if int(s) in self._rows.get(t, {})})
            return [self._rows[t][s].msg.model_copy(deep=True) for t, s in keys]

    def get_embeddings(self, thread_ids: Sequence[str], *,
                       after_seq: dict[str, int] | None = None) -> EmbeddingBlock:
        with self._lock:
            tids: list[str] = []
            seqs: list[int] = []
            vecs: list[np.ndarray] = []
            for tid in sorted(set(thread_ids)):
                lo = (after_seq or {}).get(tid, -1)
                for seq in sorted(self._rows.get(tid, {})):
                    row = self._rows[tid][seq]
                    if seq > lo and row.vec is not None:
                        tids.append(tid)
                        seqs.append(seq)
                        vecs.append(row.vec)
            dim = self._dim or 0
            mat = np.vstack(vecs).astype(np.float32) if vecs else np.zeros((0, dim), np.float32)
            return EmbeddingBlock(np.array(tids, dtype=object), np.array(seqs, dtype=np.int64),
                                  mat)

    def embedding_dim(self) -> int | None:
        with self._lock:
            return self._dim

    def scope_rows(self, thread_ids: Sequence[str], *,
                   after_seq: dict[str, int] | None = None, vectors: bool = True,
                   texts: bool = False, metadata: bool = False,
                   message_share: float = 0.0) -> ScopeRows:
        del message_share  # its messages are in memory already
        after = after_seq or {}
        threads = tuple(dict.fromkeys(thread_ids))
        with self._lock:
            picked = [(i, self._rows[t][s]) for i, t in enumerate(threads)
                      for s in sorted(self._rows.get(t, {})) if s > after.get(t, -1)]
            dim = self._dim or 0
        n = len(picked)
        has_vec = np.array([vectors and r.vec is not None for _, r in picked], bool)
        matrix = None
        if vectors:
            matrix = with_spare_rows(n, dim)  # the recall cache grows into them
            if has_vec.any():
                matrix[has_vec] = np.vstack([r.vec for _, r in picked if r.vec is not None])
        return ScopeRows(
            threads, np.array([i for i, _ in picked], np.int32),
            np.array([r.msg.seq for _, r in picked], np.int64),
            np.array([ts_micros(r.msg.created_at) for _, r in picked], np.int64), has_vec,
            matrix,
            [None if (x := r.msg.text()) is None else x.lower() for _, r in picked]
            if texts else None,
            [copy.deepcopy(r.msg.metadata) or None for _, r in picked] if metadata else None)

    def search_messages(self, text: str, *, resource_id: str | None = None,
                        thread_id: str | None = None, limit: int = 100) -> list[StoredMessage]:
        needle = text.lower()
        out: list[StoredMessage] = []
        with self._lock:
            for t in self._threads.values():
                if (resource_id is not None and t.resource_id != resource_id) or \
                        (thread_id is not None and t.id != thread_id):
                    continue
                for row in self._rows[t.id].values():
                    m = row.msg
                    if needle and needle in (m.text() or "").lower():
                        out.append(m.model_copy(deep=True))
        out.sort(key=lambda m: (m.created_at, m.thread_id, m.seq))
        return out[:limit]

    # -- working memory
    def get_working_memory(self, key: str) -> Any | None:
        with self._lock:
            return copy.deepcopy(self._wm.get(key))

    def put_working_memory(self, key: str, value: Any) -> None:
        stored = decode_json(encode_json(key, value))
        with self._lock:
            self._wm[key] = stored

    def list_working_memory_keys(self) -> list[str]:
        with self._lock:
            return sorted(self._wm)

    def delete_working_memory(self, key: str) -> bool:
        with self._lock:
            # membership, not the popped value: a stored JSON null existed too
            if key not in self._wm:
                return False
            del self._wm[key]
            return True

    # -- observations
    def put_observation(self, observation: Observation) -> None:
        require_aware(f"created_at of observation '{observation.id}'", observation.created_at)
        json_or_invalid(f"source_ids of observation '{observation.id}'",
                        observation.source_ids)
        with self._lock:
            self._obs.setdefault(observation.id, observation.model_copy(deep=True))

    def list_observations(self, thread_id: str, *,
                          include_condensed: bool = True) -> list[Observation]:
        with self._lock:
            obs = [o.model_copy(deep=True) for o in self._obs.values()
                   if o.thread_id == thread_id and (include_condensed or not o.condensed)]
        return sorted(obs, key=lambda o: (o.created_at, o.id))

    def mark_condensed(self, observation_ids: Sequence[str]) -> None:
        with self._lock:
            for oid in observation_ids:
                if oid in self._obs:
                    self._obs[oid] = self._obs[oid].model_copy(update={"condensed": True})

    def put_observation_vectors(self, vectors: Sequence[ObservationVector]) -> None:
        items = []
        for v in vectors:
            arr = check_observation_vector(v)
            meta = decode_json(json_or_invalid(f"metadata of observation vector '{v.id}'",
                                               v.metadata))
            items.append(ObservationVector(v.id, v.thread_id, arr.copy(), meta))
        with self._lock:
            for item in items:
                self._obs_vecs.setdefault(item.id, item)

    def list_observation_vectors(self, thread_id: str | None = None) -> list[ObservationVector]:
        with self._lock:
            out = [ObservationVector(v.id, v.thread_id, v.vector.copy(), copy.deepcopy(v.metadata))
                   for v in self._obs_vecs.values()
                   if thread_id is None or v.thread_id == thread_id]
        return sorted(out, key=lambda v: v.id)

    # -- erasure
    def redact_message(self, thread_id: str, seq: int, message: Message) -> bool:
        with self._lock:
            row = self._rows.get(thread_id, {}).get(seq)
            if row is None:
                return False
            row.msg = row.msg.model_copy(update={"role": message.role,
                                                 "content": message.content,
                                                 "metadata": dict(message.metadata)})
            row.vec = None
            self._edits += 1  # seen by recall's cache through scope_counts
            return True

    def delete_messages_after(self, thread_id: str, seq: int) -> builtins.list[int]:
        check_seq_bound(seq)
        with self._lock:
            self.require_thread(thread_id)
            store = self._rows[thread_id]
            gone = sorted(s for s in store if s > seq)
            if gone:
                self._floor[thread_id] = max(self._floor.get(thread_id, -1), max(store))
                for s in gone:
                    del store[s]
                self._top.pop(thread_id, None)  # a count can come back with another max
            return gone

    def delete_thread(self, thread_id: str) -> ErasureReport:
        with self._lock:
            self.require_thread(thread_id)
            rows = self._rows.pop(thread_id)
            self._top.pop(thread_id, None)
            self._floor.pop(thread_id, None)
            del self._threads[thread_id]
            key = f"{THREAD_WM_PREFIX}{thread_id}"
            wm = [key] if self.delete_working_memory(key) else []
            obs = [oid for oid, o in self._obs.items() if o.thread_id == thread_id]
            for oid in obs:
                del self._obs[oid]
            for vid in [k for k, v in self._obs_vecs.items() if v.thread_id == thread_id]:
                del self._obs_vecs[vid]
            return ErasureReport(threads=[thread_id], messages=len(rows),
                                 embeddings=sum(1 for r in rows.values() if r.vec is not None),
                                 working_memory=wm, observations=len(obs))


class InMemoryRunJournal(RunJournal):
    def __init__(self, lock: threading.RLock) -> None:
        self._lock = lock
        self._entries: dict[str, str] = {}  # insertion-ordered
        # the keys of each group, in insertion order: a run's ``list`` (every run's
        # claim looks) reads its own records, not the whole journal's
        self._groups: dict[str, dict[str, None]] = {}
        self._runs: dict[str, RunRecord] = {}

    def put_if_absent(self, key: str, value: Any) -> bool:
        if not isinstance(key, str) or not key:
            raise InvalidInputError(f"journal key must be a non-empty string, got {key!r}")
        text = encode_json(key, value)
        with self._lock:
            if key in self._entries:
                return False
            self._entries[key] = text
            self._groups.setdefault(key_group(key), {})[key] = None
            return True

    def _keys(self, prefix: str) -> builtins.list[str]:
        """The keys under ``prefix`` in insertion order (caller holds the lock): a
        prefix holding ':' lies within one group, so only that group is read."""
        if ":" in prefix:
            group = self._groups.get(key_group(prefix), {})
            return [k for k in group if k.startswith(prefix)]
        return [k for k in self._entries if k.startswith(prefix)]

    def get(self, key: str) -> Any | None:
        with self._lock:
            text = self._entries.get(key)
        return None if text is None else decode_json(text)

    def get_many(self, keys: Sequence[str]) -> dict[str, Any]:
        with self._lock:
            found = [(k, self._entries[k]) for k in dict.fromkeys(keys) if k in self._entries]
        return {k: decode_json(v) for k, v in found}

    def list(self, prefix: str) -> builtins.list[tuple[str, Any]]:
        with self._lock:
            items = [(k, self._entries[k]) for k in self._keys(prefix)]
        return [(k, decode_json(v)) for k, v in items]

    def delete(self, prefix: str) -> int:
        with self._lock:
            keys = self._keys(prefix)
            for k in keys:
                del self._entries[k]
                group = self._groups[key_group(k)]
                del group[k]
                if not group:
                    del self._groups[key_group(k)]
            return len(keys)

    def start_run(self, run: RunRecord) -> bool:
        require_aware(f"started_at of run '{run.run_id}'", run.started_at)
        require_aware(f"finished_at of run '{run.run_id}'", run.finished_at)
        with self._lock:
            if run.run_id in self._runs:
                return False
            self._runs[run.run_id] = run.model_copy(deep=True)
            return True

    def set_run_status(self, run_id: str, status: RunStatus, *,
                       finished_at: datetime | None = None, error: str | None = None) -> None:
        require_aware(f"finished_at of run '{run_id}'", finished_at)
        with self._lock:
            r = self.require_run(run_id)
            self._runs[run_id] = r.model_copy(
                update={"status": status, "finished_at": finished_at, "error": error})

    def get_run(self, run_id: str) -> RunRecord | None:
        with self._lock:
            r = self._runs.get(run_id)
            return r.model_copy(deep=True) if r else None

    def list_runs(self, *, thread_id: str | None = None,
                  resource_id: str | None = None) -> builtins.list[RunRecord]:
        with self._lock:
            rs = [r.model_copy(deep=True) for r in self._runs.values()
                  if (thread_id is None or r.thread_id == thread_id)
                  and (resource_id is None or r.resource_id == resource_id)]
        return sorted(rs, key=lambda r: (r.started_at, r.run_id))

    def delete_runs(self, run_ids: Sequence[str]) -> int:
        with self._lock:
            n = 0
            for rid in run_ids:
                if self._runs.pop(rid, None) is not None:
                    n += 1
            return n


class InMemoryStorage(Storage):
    """Both ports in plain Python structures; ``clock`` and ``ids`` are injectable."""

    def __init__(self, *, clock: Clock = utc_now, ids: ThreadIdFactory | None = None) -> None:
        lock = threading.RLock()
        clock = checked_clock(clock)
        self.memory = InMemoryMemoryStore(lock, clock, ids or ThreadIdFactory(clock))
        self.runs = InMemoryRunJournal(lock)
