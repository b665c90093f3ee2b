"""InMemoryStorage: the reference adapter, ``CoreStorage`` over ``DictCore`` (plain
Python dicts behind one lock).

It defines the behaviour every other adapter must match (the conformance suite runs
against it first); nothing survives the process.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager

from memory_core.storage.base import Storage
from memory_core.storage.common import Clock, ThreadIdFactory, key_group, utc_now
from memory_core.storage.core import CoreStorage, LogRow, StorageCore

Undo = Callable[[], None]


class DictCore(StorageCore):
    """A StorageCore in dicts: documents as ``key → (write position, text)`` with an
    index of the keys of each group (``common.key_group``: a prefix scan holding ':'
    reads its group only, not the whole journal), a dict ``seq → LogRow`` per thread,
    and one re-entrant lock. A transaction undoes what it wrote when it raises (an
    inner block only its own writes)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._depth = 0
        self._undo: list[Undo] = []  # while a transaction is open
        self._pos = itertools.count()
        self._docs: dict[str, dict[str, tuple[int, str]]] = {}
        self._groups: dict[str, dict[str, dict[str, None]]] = {}
        self._log: dict[str, dict[int, LogRow]] = {}
        # thread -> (row count, max seq) when last computed: a count still equal means
        # the max is too unless rows were deleted (which drops the entry)
        self._top: dict[str, tuple[int, int]] = {}

    @contextmanager
    def _tx(self) -> Iterator[None]:
        with self._lock:
            mark = len(self._undo)
            self._depth += 1
            try:
                yield
            except BaseException:
                while len(self._undo) > mark:
                    self._undo.pop()()
                raise
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self._undo.clear()

    def transaction(self) -> AbstractContextManager[None]:
        return self._tx()

    def _noted(self, undo: Undo) -> None:
        if self._depth:
            self._undo.append(undo)

    # -- documents --------------------------------------------------------------------
    def _add(self, collection: str, key: str, entry: tuple[int, str]) -> None:
        self._docs.setdefault(collection, {})[key] = entry
        groups = self._groups.setdefault(collection, {})
        groups.setdefault(key_group(key), {})[key] = None

    def _drop(self, collection: str, key: str) -> tuple[int, str]:
        entry = self._docs[collection].pop(key)
        groups = self._groups[collection]
        group = groups[key_group(key)]
        del group[key]
        if not group:
            del groups[key_group(key)]
        return entry

    def _reorder(self, collection: str) -> None:
        """Put keys written back by an undo in their first-write order again."""
        docs = sorted(self._docs.get(collection, {}).items(), key=lambda kv: kv[1][0])
        self._docs[collection], self._groups[collection] = {}, {}
        for key, entry in docs:
            self._add(collection, key, entry)

    def put(self, collection: str, items: Sequence[tuple[str, str]], *,
            if_absent: bool = False) -> list[str]:
        with self._lock:
            docs = self._docs.setdefault(collection, {})
            written: list[str] = []
            for key, text in items:
                old = docs.get(key)
                if old is not None and if_absent:
                    continue
                if old is None:
                    self._add(collection, key, (next(self._pos), text))
                else:
                    docs[key] = (old[0], text)  # a replaced key keeps its place
                if self._depth:
                    self._undo.append(self._unput(collection, key, old))
                written.append(key)
            return written

    def _unput(self, collection: str, key: str, old: tuple[int, str] | None) -> Undo:
        def undo() -> None:
            if old is None:
                self._drop(collection, key)
            else:
                self._docs[collection][key] = old

        return undo

    def get(self, collection: str, keys: Sequence[str]) -> dict[str, str]:
        with self._lock:
            docs = self._docs.get(collection, {})
            return {k: docs[k][1] for k in keys if k in docs}

    def scan(self, collection: str, prefix: str = "") -> list[tuple[str, str]]:
        with self._lock:
            docs = self._docs.get(collection, {})
            if ":" in prefix:
                keys = self._groups.get(collection, {}).get(key_group(prefix), {})
                return [(k, docs[k][1]) for k in keys if k.startswith(prefix)]
            return [(k, e[1]) for k, e in docs.items() if k.startswith(prefix)]

    def delete(self, collection: str, keys: Sequence[str]) -> int:
        with self._lock:
            docs = self._docs.get(collection, {})
            gone = [(k, self._drop(collection, k)) for k in keys if k in docs]

            def undo() -> None:
                for k, entry in gone:
                    self._add(collection, k, entry)
                self._reorder(collection)

            if gone:
                self._noted(undo)
            return len(gone)

    # -- the message log --------------------------------------------------------------
    def _restore(self, thread_id: str, old: dict[int, LogRow | None]) -> None:
        log = self._log.setdefault(thread_id, {})
        for seq, row in old.items():
            if row is None:
                log.pop(seq, None)
            else:
                log[seq] = row
        self._top.pop(thread_id, None)

    def put_rows(self, thread_id: str, rows: Sequence[LogRow]) -> None:
        if not rows:
            return
        with self._lock:
            log = self._log.setdefault(thread_id, {})
            top = self._stats(thread_id)[1]
            old = {r.seq: log.get(r.seq) for r in rows}
            for r in rows:
                log[r.seq] = r
            self._top[thread_id] = (len(log), max(top, max(old)))
            self._noted(lambda: self._restore(thread_id, old))

    def read_rows(self, thread_id: str, *, from_seq: int | None = None,
                  to_seq: int | None = None, seqs: Sequence[int] | None = None,
                  vectors: bool = True) -> list[LogRow]:
        with self._lock:
            log = self._log.get(thread_id, {})
            if seqs is not None:
                return [log[s] for s in sorted(set(seqs)) if s in log]
            return [log[s] for s in sorted(log) if (from_seq is None or s >= from_seq)
                    and (to_seq is None or s <= to_seq)]

    def delete_rows(self, thread_id: str, seqs: Sequence[int] | None = None) -> int:
        with self._lock:
            log = self._log.get(thread_id, {})
            old: dict[int, LogRow | None] = {
                s: log.pop(s) for s in (list(log) if seqs is None else seqs) if s in log}
            if not log:
                self._log.pop(thread_id, None)
            self._top.pop(thread_id, None)  # a count can come back with another max
            if old:
                self._noted(lambda: self._restore(thread_id, old))
            return len(old)

    def _stats(self, thread_id: str) -> tuple[int, int]:
        log = self._log.get(thread_id, {})
        known = self._top.get(thread_id)
        if known is None or known[0] != len(log):
            known = (len(log), max(log) if log else -1)
            self._top[thread_id] = known
        return known

    def row_stats(self, thread_ids: Sequence[str]) -> dict[str, tuple[int, int]]:
        with self._lock:
            return {t: self._stats(t) for t in thread_ids}

    def scan_rows(self, thread_ids: Sequence[str], after: Sequence[int], *,
                  vectors: bool = True) -> list[tuple[int, LogRow]]:
        with self._lock:
            out: list[tuple[int, LogRow]] = []
            for i, (t, lo) in enumerate(zip(thread_ids, after, strict=True)):
                log = self._log.get(t, {})
                out.extend((i, log[s]) for s in sorted(log) if s > lo)
            return out


class InMemoryStorage(CoreStorage):
    """Both ports in plain Python structures; ``clock`` and ``ids`` are injectable.
    ``core`` is its DictCore."""

    # Each write commits on its own, as the reference adapter always has (the Runner
    # defers a fresh run's records to a group's end only where a batch is a
    # transaction); CoreStorage(DictCore()) groups a batch into one.
    write_batch = Storage.write_batch

    def __init__(self, *, clock: Clock = utc_now, ids: ThreadIdFactory | None = None) -> None:
        super().__init__(DictCore(), clock=clock, ids=ids)
