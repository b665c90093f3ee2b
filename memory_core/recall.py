"""The recall engine: exact cosine, BM25 lexical and hybrid (rank-fused) recall over a
thread or a resource, with metadata filters, neighbour expansion and near misses.

Recall is exact by design (no approximate index) so provenance can say truthfully why
a message missed; speed comes from an incremental per-scope cache of one contiguous,
pre-normalised float32 matrix, so the hot path is one matrix-vector product plus
``np.argpartition``.
"""

from __future__ import annotations

import bisect
import itertools
import math
import threading
from array import array
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from typing import Any, Literal

import numpy as np

from memory_core.embedders import Embedder
from memory_core.errors import InvalidInputError
from memory_core.filters import first_failing_clause, match_filter
from memory_core.provenance import NearMiss, NearMissReason, preview

# re-exported: recall settings live in their own module so that provenance can record
# them whole without an import cycle
from memory_core.recall_config import LEGACY_HYBRID as LEGACY_HYBRID
from memory_core.recall_config import MessageRange as MessageRange
from memory_core.recall_config import RecallConfig as RecallConfig
from memory_core.recall_config import RecallMode as RecallMode
from memory_core.recall_config import RecallScope as RecallScope
from memory_core.storage.base import (
    MemoryStore,
    MessageColumns,
    ScopeRows,
    ThreadCounts,
    message_budget,
)
from memory_core.storage.common import stored_message, ts_from_micros, zone_of
from memory_core.text import STOP_WORDS as STOP_WORDS
from memory_core.text import TOKEN_RE as _TOKEN
from memory_core.text import tokenize
from memory_core.types import StoredMessage, Thread, canonical_json
from memory_core.vectors import buffer_rows, cosine_scores, top_indices, widened

T_NONE = datetime.min.replace(tzinfo=UTC)

BM25_K1 = 1.2
BM25_B = 0.75



def _stem(term: str) -> str:
    """A light suffix folder, applied alike to queries and messages, so that common
    inflections meet ("tiles"/"tiling"/"tile", "switched"/"switch", "policies"/
    "policy", "yearly"/"year") without a stemming dependency. Stems need not be words."""
    if term.endswith("'s"):
        term = term[:-2]
    term = term.replace("'", "")
    if len(term) <= 3 or term.isdigit():
        return term
    if len(term) > 4 and term.endswith("ies"):
        term = term[:-3] + "y"
    elif term.endswith("sses"):
        term = term[:-2]
    elif term.endswith("s") and not term.endswith(("ss", "us", "is")):
        term = term[:-1]
    stripped = False
    if len(term) > 5 and term.endswith("ing"):
        term, stripped = term[:-3], True
    elif len(term) > 4 and term.endswith("ed") and not term.endswith("eed"):
        term, stripped = term[:-2], True
    elif len(term) > 5 and term.endswith("ly"):
        term = term[:-2]
    if stripped and len(term) > 3 and term[-1] == term[-2] and term[-1] not in "lsz":
        term = term[:-1]
    if len(term) > 3 and term.endswith("e"):
        term = term[:-1]
    return term


def lexical_terms(text: str) -> list[str]:
    """The BM25 terms of a text: ``tokenize``, stop words removed, plurals folded."""
    return [_stem(t) for t in tokenize(text) if t not in STOP_WORDS]


def rewrite_query(query: str) -> str:
    """The query without function words ("what", "did", "my", ...), so that its
    embedding weighs the topic words; the query itself when nothing is left."""
    kept = [t for t in tokenize(query) if t not in STOP_WORDS]
    return " ".join(kept) if kept else query


# -- results ------------------------------------------------------------------------------
@dataclass(frozen=True)
class RecallHit:
    """A recalled message: a hit (with its rank and scores) or a neighbour of one."""

    thread_id: str
    seq: int
    score: float | None
    origin: Literal["hit", "neighbour"]
    rank: int | None
    vector_score: float | None
    lexical_score: float | None
    message: StoredMessage


@dataclass(frozen=True)
class RecallOutcome:
    hits: list[RecallHit]
    near_misses: list[NearMiss]
    scope_snapshot: dict[str, int]  # thread -> max seq considered (-1: empty thread)
    # why recall did not run: "no query", "no embedder" (vector and hybrid need one),
    # "all-zero query" (vector mode), "no query terms" (lexical mode); else None
    skipped: str | None
    query: str | None


@dataclass(frozen=True)
class CandidateScore:
    """How one message in scope scored (for "why was it forgotten?").

    ``score`` is the mode's ranking score (cosine, BM25 or fused; for a filtered-out
    row, the score it would have had). ``rank`` is the 1-based rank among candidates
    that passed the filter and scored > 0; ``eligible`` says whether it could be a hit
    (see ``RecallConfig``); ``in_scope`` is False for messages written after ``as_of``.
    """

    thread_id: str
    seq: int
    score: float | None
    vector_score: float | None
    lexical_score: float | None
    rank: int | None
    eligible: bool
    filter_clause: str | None
    in_scope: bool


# -- the per-scope cache ----------------------------------------------------------------
class _AtRows:
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


_PerRow = np.ndarray | _AtRows  # indexed by row, one value at a time


@dataclass
class _Ranked:
    """Scores and order of the rows that matter for one query."""

    score: _PerRow  # float64 per row (mode score; would-be score for filtered rows)
    vec: _PerRow | None  # cosine per row, nan where no vector
    lex: _PerRow | None  # bm25 per row
    cand: _PerRow  # bool: a candidate in this mode and within as_of
    passing: _PerRow  # bool: candidate and passes the filter
    eligible: _PerRow  # bool
    pos: _PerRow  # int64 per row: 1-based position among passing (would-be when
    # filtered out), 0 when not ranked
    order: list[int]  # rows considered, best first
    truncated: bool = False  # some candidates were left out of ``order``


@dataclass
class _Picked:
    """The hits of one query and the rows passed over on the way to them."""

    hits: list[int]
    skipped: dict[int, NearMissReason]
    msgs: dict[tuple[str, int], StoredMessage]  # fetched on the way, reused for output


def is_query_duplicate(text: str, query_terms: frozenset[str], overlap: float) -> bool:
    """Whether a stored text is a near-duplicate of the query: a question (it holds a
    "?") whose BM25 terms overlap the query's with Jaccard >= ``overlap``. Such a turn
    repeats the question (an earlier asking, or the input itself) and carries no answer:
    recalling it would crowd out the fact. A statement is never a duplicate, however
    many words it shares with the question: it may be the answer."""
    if "?" not in text or not query_terms:
        return False
    terms = frozenset(lexical_terms(text))
    if not terms:
        return False
    return len(terms & query_terms) / len(terms | query_terms) >= overlap


@dataclass
class _ScopeIndex:
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
            self.masks[fkey] = self._extend_mask(mask, _filter_from_key(fkey), start)
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
        ``lexical_terms`` gives them), the rest is array work, done _INDEX_CHUNK texts
        at a time (a million texts at once took ~0.9 GB of temporaries)."""
        k = len(texts)
        for a in range(0, k, _INDEX_CHUNK):
            self._index_part(first + a, texts[a:a + _INDEX_CHUNK])
        self.lex_n = first + k

    def _index_part(self, first: int, texts: Sequence[str | None]) -> None:
        k = len(texts)
        tok = _tokens_arrow(texts) if k >= _ARROW_MIN else None
        codes, vocab, counts, asks = tok if tok is not None else _tokens_python(
            texts.to_pylist() if hasattr(texts, "to_pylist") else texts)
        self.asks[first:first + k] = asks
        tid_of = np.fromiter(map(self._term_id, vocab), np.int64, len(vocab))
        tids = tid_of[codes] if codes.size else np.zeros(0, np.int64)
        docs = np.repeat(np.arange(k, dtype=np.int64), counts)
        keep = tids >= 0
        tids, docs = tids[keep], docs[keep]
        self.doclen[first:first + k] = np.bincount(docs, minlength=k)
        terms, rows, tf = _postings(tids, docs)
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
            term = _stem(word) if word and word not in STOP_WORDS else None
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


_ARROW_MIN = 2048  # texts below this are tokenised in Python (Arrow's setup costs more)
_INDEX_CHUNK = 131_072  # texts tokenised at once (their temporaries: ~70 bytes a token)
_Tokens = tuple[np.ndarray, list[str], np.ndarray, np.ndarray]


def _tokens_python(texts: Sequence[str | None]) -> _Tokens:
    """Tokens of lower-cased texts as codes into a vocabulary of distinct tokens, with
    each text's token count and whether it holds a "?"."""
    k = len(texts)
    findall = _TOKEN.findall
    tokens: list[str] = []
    counts = np.zeros(k, np.int64)
    asks = np.zeros(k, bool)
    for i, text in enumerate(texts):
        low = (text or "").lower()
        asks[i] = "?" in low
        found = findall(low)
        counts[i] = len(found)
        tokens.extend(found)
    vocab: dict[str, int] = {}
    codes = np.fromiter((vocab.setdefault(t, len(vocab)) for t in tokens), np.int64,
                        len(tokens))
    return codes, list(vocab), counts, asks


def _ascii_table() -> np.ndarray:
    """Byte -> byte: a token character of ``TOKEN_RE`` on ASCII (``[0-9A-Za-z_']``)
    to itself lower-cased, every other byte to a space."""
    lut = np.full(256, ord(" "), np.uint8)
    for c in b"0123456789abcdefghijklmnopqrstuvwxyz_'":
        lut[c] = c
    for c in b"ABCDEFGHIJKLMNOPQRSTUVWXYZ":
        lut[c] = c + 32
    return lut


_ASCII_LUT = _ascii_table()


def _tokens_arrow(texts: Sequence[str | None]) -> _Tokens | None:
    """``_tokens_python`` as array work, for all-ASCII texts (None otherwise, since
    Python's ``\\w`` is Unicode): every byte that is not a token character becomes a
    space, Arrow splits on spaces and encodes the tokens, so only the distinct ones are
    ever Python strings."""
    import pyarrow as pa
    import pyarrow.compute as pc

    k = len(texts)
    if isinstance(texts, (pa.Array, pa.ChunkedArray)):  # a scan's column, as it came
        arr = texts.cast(pa.large_string())
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks() if arr.num_chunks else pa.array([], pa.large_string())
    else:
        arr = pa.array(texts, pa.large_string())
    if arr.null_count:
        arr = arr.fill_null("")
    if not pc.all(pc.string_is_ascii(arr)).as_py():
        return None
    _, offs_buf, data_buf = arr.buffers()
    offs = np.frombuffer(offs_buf, np.int64)[arr.offset:arr.offset + k + 1]
    data = np.frombuffer(data_buf, np.uint8) if data_buf is not None and offs[-1] else \
        np.zeros(0, np.uint8)
    data = data[offs[0]:offs[-1]]
    offs = offs - offs[0]
    asks = np.zeros(k, bool)  # the text of each "?" byte asks
    asks[np.searchsorted(offs, np.flatnonzero(data == ord("?")), "right") - 1] = True
    spaced = pa.LargeStringArray.from_buffers(k, pa.py_buffer(offs),
                                              pa.py_buffer(_ASCII_LUT[data]))
    parts = pc.ascii_split_whitespace(spaced)  # (an empty piece at a leading space)
    flat = parts.flatten()
    words = pc.greater(pc.binary_length(flat), 0)
    docs = np.repeat(np.arange(k, dtype=np.int64), np.diff(parts.offsets.to_numpy()))
    enc = pc.dictionary_encode(flat.filter(words))
    codes = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    counts = np.bincount(docs[words.to_numpy(zero_copy_only=False)], minlength=k)
    return codes, enc.dictionary.to_pylist(), counts.astype(np.int64), asks


def _postings(tids: np.ndarray, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                           np.ndarray]:
    """(term, row, tf) of each distinct (term, row) pair, ordered by term then row.
    ``docs`` must be ascending (it is: tokens come text by text), so a stable sort by
    term alone orders the rows too (a radix sort when the term ids fit 16 bits)."""
    if tids.size == 0:
        return tids, docs, np.zeros(0, np.int64)
    small = int(tids.max()) < 2 ** 16
    order = np.argsort(tids.astype(np.uint16) if small else tids, kind="stable")
    t, d = tids[order], docs[order]
    new = np.ones(t.size, bool)
    new[1:] = (t[1:] != t[:-1]) | (d[1:] != d[:-1])
    starts = np.flatnonzero(new)
    tf = np.diff(np.append(starts, t.size))
    return t[starts], d[starts], tf


def _filter_from_key(key: str) -> dict[str, Any]:
    import json

    value: dict[str, Any] = json.loads(key)
    return value


# -- the engine ---------------------------------------------------------------------------
class RecallEngine:
    """Runs recall for ``AgentMemory`` (and for analysis) against one store.

    Example::

        engine = RecallEngine(storage.memory, HashingEmbedder())
        out = engine.run("refund status", thread_id="t1", resource_id="u1",
                         config=RecallConfig(top_k=3, mode="hybrid"))
        [(h.thread_id, h.seq, h.score) for h in out.hits]
    """

    def __init__(self, store: MemoryStore, embed: Embedder | None, *,
                 max_scopes: int = 64, message_share: float = 0.25) -> None:
        self.store = store
        self.embed = embed
        self.max_scopes = max_scopes  # cached scopes kept, least recently used dropped
        # where a single read costs more than a scan (DuckDB), a scope's cache also
        # keeps its messages (loaded in the same scan) while they take at most this
        # share of its vectors' bytes (or MESSAGE_FLOOR): a warm recall then builds
        # its hits without a read; beyond it, hits are read as they are found
        self.message_share = message_share
        self._lock = threading.RLock()
        self._scopes: OrderedDict[tuple[str, str], _ScopeIndex] = OrderedDict()
        # per (thread, resource): the store's change token taken before the last
        # scope_counts, and its answer (reused while the token stays the same)
        self._checked: OrderedDict[tuple[str, str | None],
                                   tuple[Hashable, dict[str, ThreadCounts]]] = OrderedDict()

    # -- scope and cache --------------------------------------------------------------
    def scope_threads(self, thread_id: str, resource_id: str | None,
                      config: RecallConfig, *, thread: Thread | None = None) -> list[str]:
        """The threads recall searches: the thread, or every thread of the resource
        (plus the thread itself) in resource scope with a resource id. ``thread`` is
        the caller's fresh read of ``thread_id``, to spare the store a round trip."""
        return list(self._scope(thread_id, resource_id, config, thread))

    def _scope(self, thread_id: str, resource_id: str | None, config: RecallConfig,
               thread: Thread | None = None) -> dict[str, ThreadCounts]:
        # runs before every recall: one store call gives the threads and their counts,
        # or none when the store vouches that nothing was written since the last one
        del thread  # that call reads the thread too
        rid = resource_id if config.scope == "resource" and resource_id else None
        token = self.store.change_token()
        key = (thread_id, rid)
        seen = self._checked.get(key)
        if token is not None and seen is not None and seen[0] == token:
            self._checked.move_to_end(key)
            return seen[1]
        counts = self.store.scope_counts(thread_id, rid)
        if token is None:
            self._checked.pop(key, None)
            return counts
        self._checked[key] = (token, counts)
        self._checked.move_to_end(key)
        while len(self._checked) > max(1, self.max_scopes):
            self._checked.popitem(last=False)
        return counts

    def _scope_key(self, thread_id: str, resource_id: str | None,
                   config: RecallConfig) -> tuple[str, str]:
        if config.scope == "resource" and resource_id:
            return ("resource", resource_id)
        return ("thread", thread_id)

    def _refresh(self, key: tuple[str, str], scope: dict[str, ThreadCounts],
                 lexical: bool = False) -> _ScopeIndex:
        """Bring the scope's cache up to date; with ``lexical`` the rows loaded now are
        indexed for BM25 from the texts at hand (no second fetch)."""
        idx = self._scopes.get(key)
        born = {t: c.created_at for t, c in scope.items()}
        edits = max((c.edits for c in scope.values()), default=0)
        if idx is not None and any(born.get(t, T_NONE) != idx.thread_born.get(t, T_NONE)
                                   for t in idx.thread_born):
            idx = None  # a thread vanished or was erased and recreated: rebuild
        if idx is not None and idx.edits != edits:
            idx = None  # a message was redacted: its vector and words must go
        if idx is None:
            idx = _ScopeIndex(edits=edits)
        if lexical and idx.lex_n == idx.n:
            idx.lexical = True
        idx.thread_born.update(born)
        changed: dict[str, int] = {}
        for t, counts in scope.items():
            old_count = idx.loaded_count.get(t, 0)
            if t in idx.loaded_count and counts.message_count == old_count:
                if counts.max_seq == idx.loaded_max.get(t, -1):
                    continue
                return self._rebuild(key, scope, lexical)  # a truncated tail grew back
            if counts.message_count < old_count:
                return self._rebuild(key, scope, lexical)
            changed[t] = idx.loaded_max.get(t, -1)
        if changed:
            share = self.message_share if idx.keeps_messages(self.message_share) else 0.0
            rows = self.store.scope_rows(list(changed), after_seq=changed,
                                         texts=idx.lexical and idx.lex_n == idx.n,
                                         metadata=idx.keep_meta and len(idx.metadata) == idx.n,
                                         message_share=share)
            got = np.bincount(rows.tidx, minlength=len(rows.threads)).tolist()
            for t, k in zip(rows.threads, got, strict=True):
                if idx.loaded_count.get(t, 0) + k != scope[t].message_count:
                    return self._rebuild(key, scope, lexical)  # a gap filled below the max
            dim = rows.matrix.shape[1] if rows.matrix is not None else 0
            added = idx.add_rows(rows, dim or None)
            for t in changed:
                idx.loaded_count[t] = scope[t].message_count
                idx.loaded_max[t] = added.get(t, changed[t])
        self._scopes[key] = idx
        self._scopes.move_to_end(key)
        while len(self._scopes) > max(1, self.max_scopes):
            self._scopes.popitem(last=False)
        return idx

    def _rebuild(self, key: tuple[str, str], scope: dict[str, ThreadCounts],
                 lexical: bool) -> _ScopeIndex:
        self._scopes.pop(key, None)
        # counts read again: the scope's may predate a write that caused the rebuild
        now = self.store.thread_stats(list(scope))
        return self._refresh(key, {t: c._replace(message_count=now.get(t, (0, -1))[0],
                                                 max_seq=now.get(t, (0, -1))[1])
                                   for t, c in scope.items()}, lexical)

    def preload(self, thread_id: str, resource_id: str | None, config: RecallConfig) -> None:
        """Load (or refresh) the cache of a scope ahead of the first query."""
        with self._lock:
            self._refresh(self._scope_key(thread_id, resource_id, config),
                          self._scope(thread_id, resource_id, config))

    # -- scoring ----------------------------------------------------------------------
    def _query_vector(self, query: str, dim: int | None) -> np.ndarray:
        assert self.embed is not None
        out = np.asarray(self.embed([query]), dtype=np.float32)
        if out.ndim != 2 or out.shape[0] != 1:
            raise InvalidInputError(
                f"the embedder must return an array of shape (1, d) for one text, got "
                f"shape {out.shape}")
        q = out[0]
        if dim is not None and q.shape[0] != dim:
            raise InvalidInputError(
                f"query embedding has dimension {q.shape[0]}, but the store holds "
                f"{dim}-dimensional vectors; use the embedder the messages were stored with")
        if not np.all(np.isfinite(q)):
            raise InvalidInputError("query embedding contains NaN or infinity")
        return np.asarray(q, dtype=np.float32)

    def _within(self, idx: _ScopeIndex, as_of: dict[str, int] | None) -> np.ndarray | None:
        if as_of is None:
            return None
        caps = np.array([as_of.get(t, -1) for t in idx.threads] or [-1], np.int64)
        n = idx.n
        return np.asarray(idx.seqs[:n] <= caps[idx.tidx[:n]])

    def _bm25(self, idx: _ScopeIndex, query: str, docs: np.ndarray) -> np.ndarray:
        n = idx.n
        scores = np.zeros(n, np.float64)
        terms = sorted(set(lexical_terms(query)))
        if not terms or n == 0:
            return scores
        n_docs = int(np.count_nonzero(docs))
        if n_docs == 0:
            return scores
        dl = idx.doclen[:n].astype(np.float64)
        avgdl = float(dl[docs].mean())
        for term in terms:
            post = idx.postings.get(term)
            if post is None:
                continue
            rows = np.frombuffer(post[0], dtype=np.int64)
            tf = np.frombuffer(post[1], dtype=np.float32).astype(np.float64)
            keep = docs[rows]
            rows, tf = rows[keep], tf[keep]
            df = rows.shape[0]
            if df == 0:
                continue
            idf = math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
            norm = BM25_K1 * (1.0 - BM25_B + BM25_B * dl[rows] / avgdl)
            scores[rows] += idf * tf * (BM25_K1 + 1.0) / (tf + norm)
        return scores

    def _rank_full(self, idx: _ScopeIndex, config: RecallConfig, q: np.ndarray | None,
                   query: str, within: np.ndarray | None, pool: int | None = None) -> _Ranked:
        """Score every row of the scope (lexical, hybrid, and score_all). With
        ``pool`` only the best ``pool`` candidates (plus the top-k eligible) are
        ordered; without it every candidate is."""
        n = idx.n
        inside = within if within is not None else np.ones(n, bool)
        mask = idx.filter_mask(config.filter)
        fmask = mask if mask is not None else np.ones(n, bool)
        keyrank = idx.ranks()
        vec: np.ndarray | None = None
        lex: np.ndarray | None = None
        if q is not None and config.mode != "lexical":
            vec = np.full(n, np.nan)
            if idx.dim is not None and n:
                raw = cosine_scores(idx.mat[:n], q).astype(np.float64)
                vec[idx.has_vec[:n]] = raw[idx.has_vec[:n]]
        has_vec = idx.has_vec[:n] if vec is not None else np.zeros(n, bool)
        if config.mode != "vector":
            lex = self._bm25(idx, query, inside & (idx.doclen[:n] > 0))
        thr = config.threshold

        def order_of(rows: np.ndarray, primary: np.ndarray,
                     secondary: Sequence[np.ndarray] = ()) -> np.ndarray:
            keys = [keyrank[rows]] + [-s[rows] for s in reversed(secondary)] + [-primary[rows]]
            return rows[np.lexsort(keys)] if rows.size else rows

        if config.mode == "vector":
            assert vec is not None
            cand = inside & has_vec
            score = np.where(has_vec, vec, -np.inf)
            passing = cand & fmask
            eligible = passing & (score > 0) & (score >= thr)
            secondary: list[np.ndarray] = []
        elif config.mode == "lexical":
            assert lex is not None
            cand = inside & (idx.doclen[:n] > 0)
            score = lex
            passing = cand & fmask
            eligible = passing & (score > 0)
            secondary = []
        else:
            assert lex is not None
            cand = inside & (has_vec | (idx.doclen[:n] > 0))
            passing = cand & fmask
            vs = np.where(has_vec, vec if vec is not None else 0.0, -np.inf)
            score, eligible = _fuse(idx, config, cand, fmask, vs, lex)
            secondary = [vs, lex]
        if pool is None:
            order_arr = order_of(np.flatnonzero(cand), score, secondary)
        else:
            # only the head of the ranking is ever shown: select it exactly (by every
            # key down to creation order) in linear time, then sort just that
            keys = [score, *secondary, -keyrank.astype(np.float64)]
            head = np.union1d(_select_top(cand, keys, pool),
                              _select_top(eligible, keys, config.top_k))
            order_arr = order_of(head, score, secondary)
        pos = _positions(n, order_arr, passing)
        order = order_arr.tolist()
        return _Ranked(score, vec, lex, cand, passing, eligible, pos, order,
                       truncated=len(order) < int(np.count_nonzero(cand)))

    def _rank_fast(self, idx: _ScopeIndex, config: RecallConfig, q: np.ndarray,
                   within: np.ndarray | None, extra: int = 0) -> _Ranked:
        """Vector mode: one matrix-vector product, then only the top of the ranking."""
        n = idx.n
        raw = cosine_scores(idx.mat[:n], q)
        if within is not None or not idx.all_vec:
            bad = ~idx.has_vec[:n]
            if within is not None:
                bad |= ~within
            raw[bad] = -np.inf
        mask = idx.filter_mask(config.filter)
        injected = config.top_k * (1 + config.before + config.after)
        head = config.top_k + config.near_misses + extra
        pool = _top(raw, injected + head)
        if mask is not None:
            pool = np.union1d(pool, _top(np.where(mask, raw, -np.inf), head))
        total = n if within is None and idx.all_vec else int(np.isfinite(raw).sum())
        vals = raw[pool]
        if np.unique(vals).size == vals.size:  # no ties: creation order is not needed
            order = pool[np.argsort(-vals)]
        else:
            order = pool[np.lexsort((idx.ranks()[pool], -vals))]
        # only the rows of ``order`` are ever looked at: their values, not n-long arrays
        picked = raw[order].astype(np.float64)
        passing = np.ones(order.size, bool) if mask is None else mask[order]
        eligible = passing & (picked > 0) & (picked >= config.threshold)
        seen = np.cumsum(passing)
        pos = np.where(passing, seen, seen + 1)
        at = dict(zip(order.tolist(), range(order.size), strict=True))
        return _Ranked(_AtRows(at, picked, -math.inf), _AtRows(at, picked, math.nan), None,
                       _AtRows(at, np.ones(order.size, bool), False),
                       _AtRows(at, passing, False), _AtRows(at, eligible, False),
                       _AtRows(at, pos, 0), order.tolist(), truncated=order.size < total)

    # -- public API -------------------------------------------------------------------
    def _skip_reason(self, query: str | None, config: RecallConfig) -> str | None:
        if query is None or not query.strip():
            return "no query"
        if config.mode != "lexical" and self.embed is None:
            return "no embedder"
        if config.mode == "lexical" and not lexical_terms(query):
            return "no query terms"
        return None

    def _prepare(self, query: str, thread_id: str, resource_id: str | None,
                 config: RecallConfig, as_of: dict[str, int] | None,
                 thread: Thread | None = None,
                 ) -> tuple[_ScopeIndex, np.ndarray | None, np.ndarray | None, dict[str, int]]:
        scope = self._scope(thread_id, resource_id, config, thread)
        idx = self._refresh(self._scope_key(thread_id, resource_id, config), scope,
                            lexical=config.mode != "vector")
        if config.mode != "vector":
            idx.ensure_lexical(self.store)
        if config.filter:
            idx.ensure_metadata(self.store)
        within = self._within(idx, as_of)
        snapshot = {t: idx.loaded_max.get(t, -1) for t in scope}
        if as_of is not None:
            snapshot = {t: min(m, as_of.get(t, -1)) for t, m in snapshot.items()}
        q = None
        if config.mode != "lexical":
            q = self._query_vector(rewrite_query(query) if config.query_rewrite
                                   and config.mode == "hybrid" else query, idx.dim)
        return idx, q, within, snapshot

    def run(self, query: str | None, *, thread_id: str, resource_id: str | None,
            config: RecallConfig, window: frozenset[tuple[str, int]] = frozenset(),
            as_of: dict[str, int] | None = None,
            thread: Thread | None = None) -> RecallOutcome:
        """Recall for one query: the ``top_k`` best eligible candidates that are not in
        ``window`` (the recent window and any input already in the prompt: they never
        use up a slot) and, with ``skip_query_duplicates``, not near-duplicates of the
        query; those hits expanded by ``message_range`` (minus rows in ``window``); near
        misses with reasons (rows passed over say ``already-in-window`` or
        ``duplicate-of-query``); and the scope snapshot. ``thread`` is the caller's
        fresh read of ``thread_id`` (see ``scope_threads``)."""
        skipped = self._skip_reason(query, config)
        if skipped is not None:
            return RecallOutcome([], [], {}, skipped, query)
        assert query is not None
        with self._lock:
            idx, q, within, snapshot = self._prepare(query, thread_id, resource_id,
                                                     config, as_of, thread)
            zero_q = q is not None and not np.any(q)
            if zero_q and config.mode == "vector":
                return RecallOutcome([], [], snapshot, "all-zero query", query)
            q_used = None if zero_q else q
            # rows passed over still sit in the ranking: rank enough of its head to
            # fill top_k past them, and widen it when more were passed over than planned
            extra = len(window) + (config.top_k if config.skip_query_duplicates else 0)
            while True:
                ranked = self._rank(idx, config, q_used, query, within, extra)
                picked = self._pick(idx, config, ranked, window, query,
                                    None if within is None else snapshot)
                if picked is not None:
                    return self._outcome(idx, config, ranked, picked, window, within,
                                         snapshot, query)
                extra = 2 * extra + config.top_k

    def _rank(self, idx: _ScopeIndex, config: RecallConfig, q: np.ndarray | None,
              query: str, within: np.ndarray | None, extra: int) -> _Ranked:
        # an empty scope has no vector dimension yet: the full path handles it
        if config.mode == "vector" and q is not None and idx.dim is not None:
            return self._rank_fast(idx, config, q, within, extra)
        pool = config.top_k * (2 + config.before + config.after) + config.near_misses + extra
        return self._rank_full(idx, config, q, query, within, pool)

    def _pick(self, idx: _ScopeIndex, config: RecallConfig, ranked: _Ranked,
              window: frozenset[tuple[str, int]], query: str,
              caps: dict[str, int] | None = None) -> _Picked | None:
        """Walk the eligible candidates best first until ``top_k`` hits are found,
        passing over rows in the window and near-duplicates of the query. None when
        the ranked head ran out before that although more candidates exist. ``caps``
        bounds each thread's neighbours (an ``as_of`` recall)."""
        query_terms = frozenset(lexical_terms(query)) if config.skip_query_duplicates \
            else None
        picked = _Picked([], {}, {})
        span = 2 * config.top_k + config.near_misses
        for j, r in enumerate(ranked.order):
            if len(picked.hits) >= config.top_k:
                break
            if not ranked.eligible[r]:
                continue
            key = idx.key(r)
            if key in window:
                picked.skipped[r] = "already-in-window"
                continue
            if query_terms is not None:
                if key not in picked.msgs:
                    # texts are needed to compare: fetch the next stretch of the ranking
                    # with its neighbours, and the head of the ranking where near misses
                    # come from, so that one round trip usually serves the whole recall
                    ahead = [] if picked.msgs else [
                        idx.key(x) for x in ranked.order[:config.near_misses]]
                    ahead += [k for x in ranked.order[j:j + span]
                              for k in _around(idx, x, config, caps)]
                    picked.msgs.update(self._fetch(
                        list(dict.fromkeys(k for k in ahead if k not in picked.msgs)), idx))
                m = picked.msgs.get(key)
                if m is not None and is_query_duplicate(m.text() or "", query_terms,
                                                        config.duplicate_overlap):
                    picked.skipped[r] = "duplicate-of-query"
                    continue
            picked.hits.append(r)
        if len(picked.hits) < config.top_k and ranked.truncated:
            return None
        return picked

    def _outcome(self, idx: _ScopeIndex, config: RecallConfig, ranked: _Ranked,
                 picked: _Picked, window: frozenset[tuple[str, int]],
                 within: np.ndarray | None, snapshot: dict[str, int],
                 query: str) -> RecallOutcome:
        hits = picked.hits
        hit_set = set(hits)
        rows_out: dict[tuple[str, int], int | None] = {}  # (thread, seq) -> hit row
        for r in hits:
            rows_out[idx.key(r)] = r
        caps = None if within is None else snapshot
        for r in hits:
            for key in _around(idx, r, config, caps):
                rows_out.setdefault(key, None)
        injected = {k for k in rows_out if k not in window}
        misses = self._misses(idx, config, ranked, picked, hit_set, injected, window)
        msgs = picked.msgs
        msgs.update(self._fetch([k for k in [*injected, *(idx.key(r) for r, _ in misses)]
                                 if k not in msgs], idx))

        out_hits: list[RecallHit] = []
        for key in injected:
            m = msgs.get(key)
            if m is None:
                continue  # erased between refresh and fetch
            hit_row = rows_out[key]
            if hit_row is None:
                out_hits.append(RecallHit(key[0], key[1], None, "neighbour", None, None, None,
                                          m))
            else:
                vs, ls = _scores_of(ranked, hit_row)
                out_hits.append(RecallHit(key[0], key[1], float(ranked.score[hit_row]), "hit",
                                          int(ranked.pos[hit_row]) or None, vs, ls, m))
        out_hits.sort(key=lambda h: (h.message.created_at, h.seq, h.thread_id))

        near: list[NearMiss] = []
        for r, reason in misses:
            key = idx.key(r)
            m = msgs.get(key)
            if m is None:
                continue
            vs, ls = _scores_of(ranked, r)
            clause = (first_failing_clause(config.filter, idx.metadata[r])
                      if reason == "filtered-out" and config.filter else None)
            sc = float(ranked.score[r])
            near.append(NearMiss(thread_id=key[0], seq=key[1], role=m.role, preview=preview(m),
                                 rank=int(ranked.pos[r]),
                                 score=sc if math.isfinite(sc) else 0.0,
                                 vector_score=vs, lexical_score=ls, reason=reason,
                                 filter_clause=clause))
        return RecallOutcome(out_hits, near, snapshot, None, query)

    @staticmethod
    def _misses(idx: _ScopeIndex, config: RecallConfig, ranked: _Ranked, picked: _Picked,
                hit_set: set[int], injected: set[tuple[str, int]],
                window: frozenset[tuple[str, int]]) -> list[tuple[int, NearMissReason]]:
        """The first ``near_misses`` rows of the ranking that reach the prompt neither
        as hits nor as neighbours, each with why."""
        misses: list[tuple[int, NearMissReason]] = []
        for r in ranked.order:
            if len(misses) >= config.near_misses:
                break
            key = idx.key(r)
            if r in hit_set or key in injected:
                continue
            passed_over = picked.skipped.get(r)
            if passed_over is not None:
                misses.append((r, passed_over))
            elif not ranked.passing[r]:
                misses.append((r, "filtered-out"))
            elif not ranked.eligible[r]:
                misses.append((r, "below-threshold"))
            elif key in window:
                misses.append((r, "already-in-window"))
            else:
                misses.append((r, "beyond-top-k"))
        return misses

    def _fetch(self, refs: Sequence[tuple[str, int]],
               idx: _ScopeIndex | None = None) -> dict[tuple[str, int], StoredMessage]:
        """The messages of refs: from the scope's message columns where it holds
        them, the rest in one round trip (by their locators where the scan gave some,
        with the creation times it gave)."""
        out: dict[tuple[str, int], StoredMessage] = {}
        rest: list[tuple[str, int]] = []
        rows: list[int] = []
        for k in refs:
            r = -1 if idx is None else idx.row_at(k)
            m = None if idx is None or r < 0 else idx.message(r)
            if m is not None:
                out[k] = m
            else:
                rest.append(k)
                rows.append(r)
        if not rest:
            return out
        if idx is not None and any(r >= 0 and idx.loc[r] >= 0 for r in rows):
            got = self.store.get_messages_located(
                rest, [int(idx.loc[r]) if r >= 0 else -1 for r in rows],
                [idx.created_at(r) if r >= 0 else None for r in rows])
        else:
            got = self.store.get_messages_by_refs(rest)
        out.update({(m.thread_id, m.seq): m for m in got})
        return out

    def score_all(self, query: str, *, thread_id: str, resource_id: str | None,
                  config: RecallConfig,
                  as_of: dict[str, int] | None = None) -> list[CandidateScore]:
        """Every message in scope (including filtered-out ones, and ones written after
        ``as_of`` with ``in_scope=False``) with its scores, ordered by rank."""
        skipped = self._skip_reason(query, config)
        if skipped is not None:
            raise InvalidInputError(f"cannot score candidates: {skipped} (query {query!r})")
        with self._lock:
            idx, q, within, _ = self._prepare(query, thread_id, resource_id, config, as_of)
            q_used = None if q is None or not np.any(q) else q
            if q_used is None and config.mode == "vector":
                raise InvalidInputError(
                    f"cannot score candidates: all-zero query embedding for {query!r}")
            ranked = self._rank_full(idx, config, q_used, query, within)
            unbounded = self._rank_full(idx, config, q_used, query, None) \
                if within is not None else ranked
            n = idx.n
            inside = within if within is not None else np.ones(n, bool)
            keyrank = idx.ranks()
            rows: list[tuple[CandidateScore, int]] = []
            for r in range(n):
                t = idx.threads[int(idx.tidx[r])]
                src = ranked if inside[r] else unbounded
                vs, ls = _scores_of(src, r)
                has_score = bool(src.cand[r])
                s = float(src.score[r]) if has_score else None
                if s is not None and not math.isfinite(s):
                    s = None
                rank = int(ranked.pos[r]) if inside[r] and ranked.passing[r] and (
                    s is not None and s > 0) else None
                clause = None
                if config.filter and not match_filter(config.filter, idx.metadata[r]):
                    clause = first_failing_clause(config.filter, idx.metadata[r])
                rows.append((CandidateScore(t, int(idx.seqs[r]), s, vs, ls, rank,
                                            bool(inside[r] and ranked.eligible[r]), clause,
                                            bool(inside[r])), int(keyrank[r])))
            rows.sort(key=lambda ck: (ck[0].rank is None, ck[0].rank or 0,
                                      -(ck[0].score if ck[0].score is not None else -math.inf),
                                      ck[1]))
            return [c for c, _ in rows]


def _around(idx: _ScopeIndex, r: int, config: RecallConfig,
            caps: dict[str, int] | None) -> list[tuple[str, int]]:
    """Row ``r`` and its ``message_range`` neighbours in its thread, as refs (only
    seqs up to the thread's entry in ``caps``, when given)."""
    t = idx.threads[int(idx.tidx[r])]
    seqs = idx.thread_seqs[t]
    limit = len(seqs) if caps is None else bisect.bisect_right(seqs, caps[t])
    p = bisect.bisect_left(seqs, int(idx.seqs[r]))
    return [(t, seqs[j]) for j in range(max(0, p - config.before),
                                          min(limit, p + config.after + 1))]


def _fuse(idx: _ScopeIndex, config: RecallConfig, cand: np.ndarray, fmask: np.ndarray,
          vs: np.ndarray, lex: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Hybrid score and eligibility of every row. The vector list holds candidates with
    ``cosine > 0 and cosine >= threshold``, the lexical list those with ``bm25 > 0``;
    a row in neither is not eligible. ``rrf`` sums ``1 / (rrf_k + rank)`` over the
    lists; ``weighted`` sums ``vector_weight`` x the normalised cosine and the rest x
    the normalised BM25 (each normalised over the passing candidates; 0 outside its
    list). ``context_weight`` first adds that share of the better neighbour's signal
    (same thread) to each row's; ``question_weight`` scales down rows that ask."""
    n = idx.n
    keyrank = idx.ranks()
    passing = cand & fmask
    in_v = np.isfinite(vs) & (vs > 0) & (vs >= config.threshold)
    in_l = lex > 0
    if config.context_weight > 0:
        vs = np.where(np.isfinite(vs), _with_context(idx, np.where(in_v, vs, 0.0),
                                                     config.context_weight), vs)
        lex = _with_context(idx, lex, config.context_weight)
    score = np.zeros(n, np.float64)
    members = ((in_v, vs), (in_l, lex))
    if config.fusion == "rrf":
        rrf = float(config.rrf_k)
        for member, s in members:
            rows = np.flatnonzero(passing & member)
            ranked = _rank_list(rows, s, keyrank)
            score[ranked] += 1.0 / (rrf + np.arange(1, ranked.size + 1))
            # a filtered-out row is scored by the rank it would have taken
            out_rows = np.flatnonzero(cand & ~fmask & member)
            if out_rows.size:
                sorted_s = np.sort(s[ranked])
                better = sorted_s.size - np.searchsorted(sorted_s, s[out_rows], "right")
                score[out_rows] += 1.0 / (rrf + better + 1)
    else:
        # each signal is scaled over every passing row that has it (a BM25 of 0
        # included), so that a rare strong match stands out from the crowd
        weights = (config.vector_weight, 1.0 - config.vector_weight)
        has = (np.isfinite(vs), idx.doclen[:n] > 0)
        for (member, s), w, pool in zip(members, weights, has, strict=True):
            if w > 0:
                score += w * np.where(member, _normalise(s, passing & pool,
                                                         config.score_norm), 0.0)
        score = np.where(in_v | in_l, score, 0.0)
    if config.question_weight < 1.0:
        q = idx.asks[:n]
        score[q] = np.where(score[q] > 0, score[q] * config.question_weight,
                            score[q] / max(config.question_weight, 1e-9))
    eligible = passing & (in_v | in_l)
    if config.fusion == "rrf":
        eligible &= score > 0
    return score, eligible


def _with_context(idx: _ScopeIndex, values: np.ndarray, weight: float) -> np.ndarray:
    """Each row's value plus ``weight`` x the larger of its thread neighbours' values."""
    n = idx.n
    prev = idx.prev_row[:n]
    has_prev = prev >= 0
    nxt = np.full(n, -1, np.int64)
    nxt[prev[has_prev]] = np.flatnonzero(has_prev)
    ext = np.concatenate([values, [0.0]])  # index -1 reads the 0 pad
    out: np.ndarray = values + weight * np.maximum(ext[prev], ext[nxt])
    return out


def _normalise(s: np.ndarray, rows: np.ndarray, how: str) -> np.ndarray:
    """``s`` scaled over the rows of ``rows``: min-max to [0, 1] or z-scores."""
    vals = s[rows]
    if vals.size == 0:
        return np.zeros_like(s)
    if how == "zscore":
        sd = float(vals.std())
        return (s - float(vals.mean())) / (sd if sd > 0 else 1.0)
    lo, hi = float(vals.min()), float(vals.max())
    return (s - lo) / (hi - lo) if hi > lo else np.ones_like(s)


def _scores_of(ranked: _Ranked, r: int) -> tuple[float | None, float | None]:
    vs = None
    if ranked.vec is not None:
        v = float(ranked.vec[r])
        vs = v if math.isfinite(v) else None
    ls = float(ranked.lex[r]) if ranked.lex is not None else None
    return vs, ls


def _positions(n: int, order: np.ndarray, passing: np.ndarray) -> np.ndarray:
    """1-based rank among passing rows along ``order``; a filtered-out row gets the
    rank it would have taken (1 + passing rows before it)."""
    is_pass = passing[order]
    seen = np.cumsum(is_pass)
    pos = np.zeros(n, np.int64)
    pos[order] = np.where(is_pass, seen, seen + 1)
    return pos


def _rank_list(rows: np.ndarray, s: np.ndarray, keyrank: np.ndarray) -> np.ndarray:
    """``rows`` ordered by score descending, ties by creation order: a fast unstable
    sort, then a second sort only when equal scores exist."""
    if rows.size == 0:
        return rows
    o = rows[np.argsort(-s[rows])]
    ss = s[o]
    eq = ss[1:] == ss[:-1]
    if eq.any():
        run = np.concatenate([[0], np.cumsum(~eq)])
        o = o[np.argsort(run * (int(keyrank.max()) + 1) + keyrank[o])]
    return o


def _select_top(mask: np.ndarray, keys: Sequence[np.ndarray], m: int) -> np.ndarray:
    """The ``m`` rows of ``mask`` that come first when ordered by ``keys`` (each
    descending; the last must be unique), unordered, in linear time."""
    rows = np.flatnonzero(mask)
    if m <= 0:
        return rows[:0]
    chosen: list[np.ndarray] = []
    for key in keys:
        if rows.size <= m:
            break
        vals = key[rows]
        b = np.partition(vals, rows.size - m)[rows.size - m]
        greater = rows[vals > b]
        chosen.append(greater)
        m -= greater.size
        rows = rows[vals == b]
    chosen.append(rows[:m])
    return np.concatenate(chosen)


_top = top_indices
