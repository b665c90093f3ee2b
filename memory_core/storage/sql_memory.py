"""``SqlMemoryStore``: the MemoryStore port written once in portable SQL (threads,
messages and their vectors, working memory, observations, erasure) over a ``Driver``
(sql_common.py)."""

from __future__ import annotations

import builtins
import json
from collections.abc import Hashable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

import numpy as np

from memory_core.errors import InvalidInputError, NotFoundError
from memory_core.storage.base import (
    EmbeddingBlock,
    MemoryStore,
    NewThread,
    ObservationVector,
    ScopeRows,
    ThreadActivity,
    ThreadCounts,
    check_observation_vector,
)
from memory_core.storage.common import (
    EDITS_KEY,
    SEQ_FLOOR_PREFIX,
    Clock,
    ThreadIdFactory,
    check_seq_bound,
    decode_json,
    decode_vectors,
    encode_json,
    json_or_invalid,
    many_objects,
    message_bodies,
    message_body,
    require_aware,
    ts_micros,
    validate_batch,
)
from memory_core.storage.schema import DIM_KEY, Tx
from memory_core.storage.sql_common import (
    _CHUNK,
    _OBS_COLS,
    _THREAD_COLS,
    MSG_COLS,
    Driver,
    RowsBuilder,
    ScopeScan,
    _chunks,
    _marks,
    _row_to_observation,
    _row_to_thread,
    row_to_message,
    ts_parse,
    ts_parse_opt,
    ts_text,
    write_staged,
)
from memory_core.storage.staging import stage_messages
from memory_core.types import (
    AppendRow,
    ErasureReport,
    Message,
    Observation,
    StoredMessage,
    Thread,
)

# a new thread's row, its counters given (``add_threads``)
_NEW_THREAD_COLS = ("id", "resource_id", "title", "metadata", "parent_thread_id",
                    "created_at", "created_us", "updated_at", "message_count", "max_seq")


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
               " m.created_at, t.parent_thread_id FROM threads t LEFT JOIN messages m"
               " ON m.thread_id = t.id AND m.seq = t.max_seq")
        params: tuple[Any, ...] = ()
        if resource_id is not None:
            sql += " WHERE t.resource_id = ?"
            params = (resource_id,)
        sql += " ORDER BY t.created_us DESC, t.id ASC"
        with self._db.read("thread_activity") as tx, many_objects():
            return [ThreadActivity(r[0], r[1], r[2], ts_parse(r[3]), int(r[4]),
                                   ts_parse_opt(r[5]), r[6]) for r in tx.query(sql, params)]

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
            # The thread row lock is what serialises seq assignment per thread; the
            # row's max_seq is kept under it, so no scan of the messages is needed. The
            # same read brings the dimension (it matters to batches carrying vectors)
            # and the thread's seq floor.
            found = tx.query(
                "SELECT resource_id, max_seq, (SELECT value FROM meta WHERE key = ?),"
                " (SELECT value FROM meta WHERE key = ?) FROM threads WHERE id = ?"
                f"{self._db.lock_row}", (DIM_KEY, floor_key, thread_id))
            if not found:
                raise NotFoundError(f"thread '{thread_id}' does not exist")
            resource_id, top, stored_dim, floor = found[0]
            dim = int(stored_dim) if has_vec and stored_dim is not None else None
            explicit, batch_dim = validate_batch(thread_id, rows, dim)
            top = int(top) if floor is None else max(int(top), int(floor))  # truncated seqs stay unused
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

    def add_threads(self, threads: Sequence[NewThread]) -> None:
        """The whole batch in one transaction and a few statements: one look-up of the
        ids, of the dimension and of any seq floors, one insert of the thread rows (with
        their counters) and one of the messages."""
        threads = list(threads)
        if not threads:
            return
        ids = [t.thread_id for t in threads]
        seen: set[str] = set()
        for tid in ids:
            if not isinstance(tid, str) or not tid:
                raise InvalidInputError(f"thread id must be a non-empty string, got {tid!r}")
            if tid in seen:
                raise InvalidInputError(f"thread '{tid}' already exists")
            seen.add(tid)
        # JSON and time checks before the transaction, as create_thread and
        # append_messages make them
        metas = [json_or_invalid(f"metadata of thread '{t.thread_id}'", dict(t.metadata or {}))
                 for t in threads]
        rows = [list(t.rows) for t in threads]
        explicit = [validate_batch(t.thread_id, r, None)[0] for t, r in zip(threads, rows,
                                                                           strict=True)]
        bodies = [message_bodies(t.thread_id, r) for t, r in zip(threads, rows, strict=True)]
        floors = [f"{SEQ_FLOOR_PREFIX}{t.thread_id}" for t, r, e in zip(
            threads, rows, explicit, strict=True) if r and not e]
        with self._db.write("add_threads") as tx:
            stored: set[str] = set()
            for part in _chunks(ids):
                stored.update(str(r[0]) for r in tx.query(
                    f"SELECT id FROM threads WHERE id IN ({_marks(len(part))})", part))
            if stored:
                raise InvalidInputError(
                    f"thread '{next(t for t in ids if t in stored)}' already exists")
            has_vec = any(r.embedding is not None for rs in rows for r in rs)
            dim = self._read_dim(tx, self._db.lock_row) if has_vec else None
            new_dim = None
            floor: dict[str, int] = {}
            for part in _chunks(floors):
                floor.update((str(k), int(v)) for k, v in tx.query(
                    f"SELECT key, value FROM meta WHERE key IN ({_marks(len(part))})", part))
            staged, thread_rows = [], []
            for t, meta, rs, body, ex in zip(threads, metas, rows, bodies, explicit,
                                             strict=True):
                _, batch_dim = validate_batch(t.thread_id, rs, dim)
                if dim is None and batch_dim is not None:
                    dim = new_dim = batch_dim  # the store's first vectors fix it
                now = self._clock()  # (as create_thread, then append_messages, read it)
                top = floor.get(f"{SEQ_FLOOR_PREFIX}{t.thread_id}", -1)
                seqs = [int(r.seq) for r in rs if r.seq is not None] if ex else list(range(top + 1,
                                                                      top + 1 + len(rs)))
                one = stage_messages(t.thread_id, t.resource_id, seqs, body, rs, self._clock)
                if len(one):
                    staged.append(one)
                thread_rows.append((t.thread_id, t.resource_id, t.title, meta,
                                    t.parent_thread_id,
                                    ts_text(now), ts_micros(now), ts_text(now), len(one),
                                    one.top() if len(one) else -1))
            self._db.insert_rows(tx, "threads", _NEW_THREAD_COLS, thread_rows)
            if staged:
                self._db.insert_messages(tx, staged)
            if new_dim is not None:
                tx.execute("UPDATE meta SET value = ? WHERE key = ?", (str(new_dim), DIM_KEY))

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
        mat = decode_vectors([r[2] for r in ordered], d)
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
    def redact_observation(self, observation_id: str, text: str) -> bool:
        with self._db.write("redact_observation") as tx:
            found = tx.query("SELECT thread_id FROM observations WHERE id = ?",
                             (observation_id,))
            if not found:
                return False
            tx.execute("UPDATE observations SET text = ? WHERE id = ?", (text, observation_id))
            vids = [str(r[0]) for r in tx.query(
                "SELECT id, metadata FROM observation_vectors WHERE thread_id = ?",
                (found[0][0],)) if (decode_json(r[1]) or {}).get("obs_id") == observation_id]
            for vid in vids:
                tx.execute("DELETE FROM observation_vectors WHERE id = ?", (vid,))
            return True

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
