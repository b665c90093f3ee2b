"""The per-scope cache recall ranks against: one pre-normalised float32 matrix, the
BM25 postings and the rows' times, threads and metadata, extended as messages arrive;
and the ranking of one query over it."""

from __future__ import annotations

import bisect
import itertools
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from typing import Any

import numpy as np

from memory_core.recall.filters import match_filter
from memory_core.recall.lexical import (
    ARROW_MIN,
    INDEX_CHUNK,
    postings,
    stem,
    tokens_arrow,
    tokens_python,
)
from memory_core.recall.results import (
    NearMissReason,
)
from memory_core.storage.base import (
    MemoryStore,
    MessageColumns,
    ScopeRows,
    message_budget,
)
from memory_core.storage.common import stored_message, ts_from_micros, zone_of
from memory_core.text import STOP_WORDS
from memory_core.types import StoredMessage, canonical_json
from memory_core.vectors import buffer_rows, widened


# -- the per-scope cache ----------------------------------------------------------------
class AtRows:
    """Per-row values of a few rows (every other row has ``fill``), read by row number
    like an n-long array: vector recall ranks a handful of rows out of a million and
    need not write n-long arrays to say so."""

    def __init__(self, at: dict[int, int], values: np.ndarray, fill: Any) -> None:
        self._at = at  # row -> index into values
        self._values = values.tolist()
        self._fill = fill

    def __getitem__(self, row: int) -> Any:
        i = self._at.get(int(row))
        return self._fill if i is None else self._values[i]


PerRow = np.ndarray | AtRows  # indexed by row, one value at a time


@dataclass
class Ranked:
    """Scores and order of the rows that matter for one query."""

    score: PerRow  # float64 per row (mode score; would-be score for filtered rows)
    vec: PerRow | None  # cosine per row, nan where no vector
    lex: PerRow | None  # bm25 per row
    cand: PerRow  # bool: a candidate in this mode and within as_of
    passing: PerRow  # bool: candidate and passes the filter
    eligible: PerRow  # bool
    pos: PerRow  # int64 per row: 1-based position among passing (would-be when
    # filtered out), 0 when not ranked
    order: list[int]  # rows considered, best first
    truncated: bool = False  # some candidates were left out of ``order``


@dataclass
class Picked:
    """The hits of one query and the rows passed over on the way to them."""

    hits: list[int]
    skipped: dict[int, NearMissReason]
    msgs: dict[tuple[str, int], StoredMessage]  # fetched on the way, reused for output


@dataclass
class ScopeIndex:
    threads: list[str] = field(default_factory=list)
    thread_pos: dict[str, int] = field(default_factory=dict)
    loaded_max: dict[str, int] = field(default_factory=dict)
    loaded_count: dict[str, int] = field(default_factory=dict)
    thread_seqs: dict[str, list[int]] = field(default_factory=dict)
    thread_born: dict[str, datetime] = field(default_factory=dict)  # created_at per thread
    edits: int = 0  # the store's in-place rewrites when loaded (ThreadCounts.edits)
    n: int = 0
    dim: int | None = None
    mat: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.float32))
    has_vec: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    tidx: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    seqs: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    created: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    keyrank: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    doclen: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    prev_row: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # -1: first
    asks: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))  # text holds a "?"
    loc: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # -1: none
    # created_at's offset per row: -1 UTC, -2 unknown, else an index into zone_tz
    zone: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    zone_tz: list[tzinfo] = field(default_factory=list)
    zone_at: dict[str, int] = field(default_factory=dict)  # offset text -> zone index
    # the message columns of rows [0, msg_n), part i from row msg_starts[i]
    msg_parts: list[MessageColumns] = field(default_factory=list)
    msg_starts: list[int] = field(default_factory=list)
    msg_n: int = 0
    msg_bytes: int = 0
    last_row: dict[str, int] = field(default_factory=dict)  # per thread
    thread_rows: dict[str, list[int]] = field(default_factory=dict)  # by thread_seqs
    lexical: bool = False  # the lexical index is kept (a lexical/hybrid query came)
    lex_n: int = 0  # rows [0, lex_n) are in the lexical index
    keep_meta: bool = False  # metadata is kept (a filtered query came)
    metadata: list[dict[str, Any] | None] = field(default_factory=list)  # rows [0, len)
    postings: dict[str, tuple[array[int], array[float]]] = field(default_factory=dict)
    raw_terms: dict[str, int] = field(default_factory=dict)  # token -> term id, -1: none
    term_ids: dict[str, int] = field(default_factory=dict)  # BM25 term -> id
    term_names: list[str] = field(default_factory=list)  # id -> BM25 term
    masks: dict[str, np.ndarray] = field(default_factory=dict)
    last_key: tuple[int, str, int] | None = None
    ranked_n: int = 0  # keyrank holds the creation order of rows [0, ranked_n)
    rank_stale: bool = False  # rows arrived out of creation order: rank them all again
    all_vec: bool = True

    def key(self, row: int) -> tuple[str, int]:
        """The ``(thread_id, seq)`` of a row."""
        return self.threads[int(self.tidx[row])], int(self.seqs[row])

    def _grow(self, extra: int, dim: int | None, adopt: np.ndarray | None = None) -> None:
        """Room for ``extra`` more rows; ``adopt`` is a first load's matrix, taken as
        the cache's own instead of copied (a million-row matrix is never held twice)."""
        need = self.n + extra
        if self.dim is None and dim is not None:
            self.dim = dim
            self.mat = np.zeros((self.mat.shape[0], dim), np.float32)
        cap = self.has_vec.shape[0]
        if need <= cap and (self.dim is None or self.mat.shape[1] == self.dim):
            return
        d = self.dim or 0
        # a matrix made with spare rows (a scan's) grows into them without a copy: a
        # live agent's next rows would otherwise copy a million-row matrix whole
        room = buffer_rows(adopt if adopt is not None else self.mat) \
            if (adopt is not None or self.mat.shape[1] == d) else 0
        new_cap = room if need <= room else max(need, int(cap * 1.5) + 16)

        def grow(a: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
            out = np.zeros(shape, a.dtype)
            out[: self.n] = a[: self.n]
            return out

        if need <= room:
            self.mat = widened(adopt if adopt is not None else self.mat, new_cap)
        elif self.mat.shape[1] == d:
            self.mat = grow(self.mat, (new_cap, d))
        else:
            self.mat = np.zeros((new_cap, d), np.float32)
        self.has_vec = grow(self.has_vec, (new_cap,))
        self.tidx = grow(self.tidx, (new_cap,))
        self.seqs = grow(self.seqs, (new_cap,))
        self.created = grow(self.created, (new_cap,))
        self.keyrank = grow(self.keyrank, (new_cap,))
        self.doclen = grow(self.doclen, (new_cap,))
        self.prev_row = grow(self.prev_row, (new_cap,))
        self.asks = grow(self.asks, (new_cap,))
        self.loc = grow(self.loc, (new_cap,))
        self.zone = grow(self.zone, (new_cap,))

    def add_rows(self, rows: ScopeRows, dim: int | None) -> dict[str, int]:
        """Append a scan of rows (any order; each thread's rows after those already
        held) with their vectors, texts and metadata when given; returns the highest
        seq added per thread."""
        k = len(rows)
        if k == 0:
            return {}
        start, end = self.n, self.n + k
        tpos = np.zeros(len(rows.threads), np.int32)
        for i, t in enumerate(rows.threads):
            if t not in self.thread_pos:
                self.thread_pos[t] = len(self.threads)
                self.threads.append(t)
                self.thread_seqs.setdefault(t, [])
            tpos[i] = self.thread_pos[t]
        m = rows.matrix
        usable = m is not None and dim is not None and m.shape == (k, dim) \
            and self.dim in (None, dim)
        adopt = m if m is not None and usable and start == 0 and m.flags.writeable else None
        self._grow(k, dim, adopt)
        self.tidx[start:end] = tpos[rows.tidx]
        self.seqs[start:end] = rows.seqs
        self.created[start:end] = rows.created_us
        self.loc[start:end] = -1 if rows.locators is None else rows.locators
        self.zone[start:end] = self._zones(rows)
        got = rows.messages
        if got is not None and self.msg_n == start and len(got) == k:
            self.msg_parts.append(got)
            self.msg_starts.append(start)
            self.msg_n, self.msg_bytes = end, self.msg_bytes + got.size()
        if usable and m is not None:
            if adopt is None:  # (an adopted matrix is the cache's own already)
                self.mat[start:end] = m
            self._unit_rows(start, end, rows.has_vec)
        self.n = end
        if not bool(self.has_vec[start:end].all()):
            self.all_vec = False
        added = self._link_threads(start, end)
        self._note_order(start, end)
        if self.lexical and self.lex_n == start and rows.texts is not None:
            self._index_texts(start, rows.texts)
        if self.keep_meta and len(self.metadata) == start and rows.metadata is not None:
            self.metadata.extend(rows.metadata)
        if len(self.metadata) < end:
            self.masks.clear()  # rebuilt once the metadata is loaded
        for fkey, mask in list(self.masks.items()):
            self.masks[fkey] = self._extend_mask(mask, filter_from_key(fkey), start)
        return added

    def _zones(self, rows: ScopeRows) -> np.ndarray | int:
        """The rows' ``zone`` entries from a scan's ``zones`` (-2 where unknown)."""
        if rows.zones is None:
            return -2
        lut = np.full(len(rows.zone_names) + 1, -2, np.int32)  # [-1] stays -2
        for i, name in enumerate(rows.zone_names):
            z = self.zone_at.get(name)
            if z is None and (tz := zone_of(name)) is not None:
                z = self.zone_at[name] = len(self.zone_tz)
                self.zone_tz.append(tz)
            lut[i] = -2 if z is None else z
        codes = rows.zones
        out: np.ndarray = np.where(codes >= 0, lut[codes], codes)
        return out

    def created_at(self, r: int) -> datetime | None:
        """Row r's ``created_at`` exactly as stored, when the scan said its offset."""
        z = int(self.zone[r])
        if z == -2:
            return None
        t = ts_from_micros(int(self.created[r]))
        return t if z == -1 else t.astimezone(self.zone_tz[z])

    def message(self, r: int) -> StoredMessage | None:
        """Row r's stored message from the message columns held (None: not held)."""
        if r >= self.msg_n or (at := self.created_at(r)) is None:
            return None
        i = bisect.bisect_right(self.msg_starts, r) - 1
        body, resource_id, run_id = self.msg_parts[i].row(r - self.msg_starts[i])
        if body is None:
            return None  # too long to keep: read when needed
        t, seq = self.key(r)
        return stored_message(t, seq, resource_id, body, at, run_id)

    def keeps_messages(self, share: float) -> bool:
        """Whether to ask the next scan for its message columns: every row held so far
        has them, within the scope's budget."""
        return self.msg_n == self.n and (
            self.n == 0 or self.msg_bytes < message_budget(share, self.n, self.dim or 0))

    def _unit_rows(self, start: int, end: int, has_vec: np.ndarray) -> None:
        """Scale rows [start, end) to unit length in place, in chunks; a row without a
        vector (or a zero one) stays zero and is marked so."""
        chunk = 65536
        for a in range(start, end, chunk):
            b = min(end, a + chunk)
            block = self.mat[a:b]
            norms = np.linalg.norm(block, axis=1)
            ok = (norms > 0) & has_vec[a - start:b - start]
            if ok.all():
                block /= norms[:, None]
            else:
                block[ok] /= norms[ok, None]
                block[~ok] = 0
            self.has_vec[a:b] = ok

    def _link_threads(self, start: int, end: int) -> dict[str, int]:
        """Each new row's previous row in its thread, and the threads' seq lists."""
        order = start + np.lexsort((self.seqs[start:end], self.tidx[start:end]))
        ts = self.tidx[order]
        first = np.ones(order.size, bool)
        first[1:] = ts[1:] != ts[:-1]
        prev = np.empty(order.size, np.int64)
        prev[1:] = order[:-1]
        bounds = [*np.flatnonzero(first).tolist(), order.size]
        added: dict[str, int] = {}
        for a, b in itertools.pairwise(bounds):
            t = self.threads[int(ts[a])]
            prev[a] = self.last_row.get(t, -1)
            seqs = self.seqs[order[a:b]].tolist()
            self.thread_seqs[t].extend(seqs)
            self.thread_rows.setdefault(t, []).extend(order[a:b].tolist())
            self.last_row[t] = int(order[b - 1])
            added[t] = seqs[-1]
        self.prev_row[order] = prev
        return added

    def _note_order(self, start: int, end: int) -> None:
        """Whether rows [start, end) come after every earlier row in creation order
        (then their creation ranks are their row numbers, no sort is needed)."""
        c = self.created[start:end]
        steps = np.diff(c)
        ties = np.flatnonzero(steps == 0)
        head = self.key(start)
        in_order = not (steps < 0).any() and ties.size <= 1000 and (
            self.last_key is None or (int(c[0]), *head) > self.last_key)
        if in_order:
            in_order = all(self.key(start + i) < self.key(start + i + 1)
                           for i in ties.tolist())
        if not in_order:
            self.rank_stale = True
        top = int(c.max())
        newest = max((top, *self.key(start + i)) for i in np.flatnonzero(c == top).tolist())
        self.last_key = newest if self.last_key is None else max(self.last_key, newest)

    def row_at(self, key: tuple[str, int]) -> int:
        """The row of ``(thread_id, seq)``, -1 when not held."""
        seqs = self.thread_seqs.get(key[0])
        if not seqs:
            return -1
        p = bisect.bisect_left(seqs, key[1])
        return self.thread_rows[key[0]][p] if p < len(seqs) and seqs[p] == key[1] else -1

    def ranks(self) -> np.ndarray:
        """The creation-order rank (created_at, thread id, seq) of every row: the tie
        break of every ranking, computed when a ranking first needs it."""
        n = self.n
        if self.rank_stale:
            self._rerank()
            self.rank_stale = False
        elif self.ranked_n < n:
            self.keyrank[self.ranked_n:n] = np.arange(self.ranked_n, n)
        self.ranked_n = n
        return self.keyrank[:n]

    def _index_texts(self, first: int, texts: Sequence[str | None]) -> None:
        """Add rows [first, first + len(texts)) to the lexical index from their texts:
        BM25 postings, lengths and "asks". Each distinct token is folded once (terms as
        ``lexical_terms`` gives them), the rest is array work, done INDEX_CHUNK texts
        at a time (a million texts at once took ~0.9 GB of temporaries)."""
        k = len(texts)
        for a in range(0, k, INDEX_CHUNK):
            self._index_part(first + a, texts[a:a + INDEX_CHUNK])
        self.lex_n = first + k

    def _index_part(self, first: int, texts: Sequence[str | None]) -> None:
        k = len(texts)
        tok = tokens_arrow(texts) if k >= ARROW_MIN else None
        codes, vocab, counts, asks = tok if tok is not None else tokens_python(
            texts.to_pylist() if hasattr(texts, "to_pylist") else texts)
        self.asks[first:first + k] = asks
        tid_of = np.fromiter(map(self._term_id, vocab), np.int64, len(vocab))
        tids = tid_of[codes] if codes.size else np.zeros(0, np.int64)
        docs = np.repeat(np.arange(k, dtype=np.int64), counts)
        keep = tids >= 0
        tids, docs = tids[keep], docs[keep]
        self.doclen[first:first + k] = np.bincount(docs, minlength=k)
        terms, rows, tf = postings(tids, docs)
        if terms.size == 0:
            return  # no text here holds a term ("OK", a tool call's empty content)
        rows += first
        cuts = np.flatnonzero(np.diff(terms)) + 1
        for a, b in itertools.pairwise([0, *cuts.tolist(), terms.size]):
            term = self.term_names[int(terms[a])]
            post = self.postings.get(term)
            if post is None:
                post = (array("q"), array("f"))
                self.postings[term] = post
            post[0].frombytes(rows[a:b].tobytes())
            post[1].frombytes(tf[a:b].astype(np.float32).tobytes())

    def _term_id(self, tok: str) -> int:
        """The BM25 term id of a raw token (-1: a stop word or only quotes), folded
        once per distinct token."""
        tid = self.raw_terms.get(tok)
        if tid is None:
            word = tok.strip("'")
            term = stem(word) if word and word not in STOP_WORDS else None
            if term is not None and term not in self.term_ids:
                self.term_ids[term] = len(self.term_names)
                self.term_names.append(term)
            tid = self.raw_terms[tok] = -1 if term is None else self.term_ids[term]
        return tid

    def row_of(self, got: ScopeRows) -> np.ndarray:
        """The cache row of each scanned row of ``got`` (-1: not held)."""
        n = self.n
        if n == 0 or len(got) == 0:
            return np.full(len(got), -1, np.int64)
        pos = np.array([self.thread_pos.get(t, -1) for t in got.threads], np.int64)
        t_got = pos[got.tidx]
        span = max(int(self.seqs[:n].max()), int(got.seqs.max())) + 1
        if span * (len(self.threads) + 1) >= 2 ** 62:  # keys would overflow: by dict
            held = {self.key(r): r for r in range(n)}
            return np.array([held.get((got.threads[int(t)], int(s)), -1)
                             for t, s in zip(got.tidx, got.seqs, strict=True)], np.int64)
        keys = self.tidx[:n].astype(np.int64) * span + self.seqs[:n]
        order = np.argsort(keys)
        keys = keys[order]
        want = t_got * span + got.seqs
        at = np.minimum(np.searchsorted(keys, want), n - 1)
        found = (t_got >= 0) & (keys[at] == want)
        out: np.ndarray = np.where(found, order[at], -1)
        return out

    def ensure_lexical(self, store: MemoryStore) -> None:
        """Build the lexical index on first use (vector mode never needs it), then keep
        it current: rows loaded since are indexed from their texts, read in one scan of
        the scope; later appends are indexed as they are loaded."""
        self.lexical = True
        if self.lex_n >= self.n:
            return
        got = store.scope_rows(self.threads, vectors=False, texts=True)
        where = self.row_of(got) - self.lex_n
        texts = np.full(self.n - self.lex_n, "", dtype=object)  # erased since: no terms
        sel = np.flatnonzero(where >= 0)
        texts[where[sel]] = np.array(got.text_list(), dtype=object)[sel]
        self._index_texts(self.lex_n, texts.tolist())

    def ensure_metadata(self, store: MemoryStore) -> None:
        """Load the rows' metadata on a scope's first filtered query, in one scan;
        later appends bring theirs as they are loaded."""
        self.keep_meta = True
        have = len(self.metadata)
        if have >= self.n:
            return
        got = store.scope_rows(self.threads, vectors=False, metadata=True)
        where = self.row_of(got) - have
        fill: list[dict[str, Any] | None] = [None] * (self.n - have)
        meta = got.metadata or []
        for j in np.flatnonzero(where >= 0).tolist():
            fill[int(where[j])] = meta[j]
        self.metadata.extend(fill)

    def _rerank(self) -> None:
        n = self.n
        names = np.array(self.threads, dtype=object)
        name_rank = np.empty(len(names), np.int64)
        name_rank[np.argsort(names.astype(str), kind="stable")] = np.arange(len(names))
        order = np.lexsort((self.seqs[:n], name_rank[self.tidx[:n]], self.created[:n]))
        self.keyrank[order] = np.arange(n)

    def _extend_mask(self, mask: np.ndarray, f: dict[str, Any], start: int) -> np.ndarray:
        out = np.zeros(self.n, bool)
        out[: mask.shape[0]] = mask[: min(mask.shape[0], self.n)]
        for i in range(start, self.n):
            out[i] = match_filter(f, self.metadata[i])
        return out

    def filter_mask(self, f: dict[str, Any] | None) -> np.ndarray | None:
        if not f:
            return None
        key = canonical_json(f)
        mask = self.masks.get(key)
        if mask is None:
            mask = self._extend_mask(np.zeros(0, bool), f, 0)
            self.masks[key] = mask
        return mask


def filter_from_key(key: str) -> dict[str, Any]:
    import json

    value: dict[str, Any] = json.loads(key)
    return value
