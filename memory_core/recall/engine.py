"""The recall engine: exact cosine, BM25 lexical and hybrid (rank-fused) recall over a
thread or a resource, with metadata filters, neighbour expansion and near misses.

Recall is exact by design (no approximate index) so provenance can say truthfully why
a message missed; speed comes from an incremental per-scope cache of one contiguous,
pre-normalised float32 matrix, so the hot path is one matrix-vector product plus
``np.argpartition``.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from datetime import UTC, datetime

import numpy as np

from memory_core.embedding.hashing import Embedder
from memory_core.errors import InvalidInputError
from memory_core.recall.config import (
    RecallConfig,
)
from memory_core.recall.filters import first_failing_clause, match_filter
from memory_core.recall.fusion import (
    around,
    fuse,
    positions,
    scores_of,
    select_top,
)
from memory_core.recall.index import AtRows, Picked, Ranked, ScopeIndex
from memory_core.recall.lexical import (
    is_query_duplicate,
    lexical_terms,
    rewrite_query,
)
from memory_core.recall.results import (
    CandidateScore,
    NearMiss,
    NearMissReason,
    RecallHit,
    RecallOutcome,
)
from memory_core.storage.base import (
    MemoryStore,
    ThreadCounts,
)
from memory_core.text import preview
from memory_core.types import StoredMessage, Thread
from memory_core.vectors import cosine_scores, top_indices

T_NONE = datetime.min.replace(tzinfo=UTC)

BM25_K1 = 1.2
BM25_B = 0.75


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
        self._scopes: OrderedDict[tuple[str, str], ScopeIndex] = OrderedDict()
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
                 lexical: bool = False) -> ScopeIndex:
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
            idx = ScopeIndex(edits=edits)
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
                 lexical: bool) -> ScopeIndex:
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

    def _within(self, idx: ScopeIndex, as_of: dict[str, int] | None) -> np.ndarray | None:
        if as_of is None:
            return None
        caps = np.array([as_of.get(t, -1) for t in idx.threads] or [-1], np.int64)
        n = idx.n
        return np.asarray(idx.seqs[:n] <= caps[idx.tidx[:n]])

    def _bm25(self, idx: ScopeIndex, query: str, docs: np.ndarray) -> np.ndarray:
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

    def _rank_full(self, idx: ScopeIndex, config: RecallConfig, q: np.ndarray | None,
                   query: str, within: np.ndarray | None, pool: int | None = None) -> Ranked:
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

        listed: np.ndarray | None = None  # hybrid: rows in a list rank before the rest

        def order_of(rows: np.ndarray, primary: np.ndarray,
                     secondary: Sequence[np.ndarray] = ()) -> np.ndarray:
            keys = [keyrank[rows]] + [-s[rows] for s in reversed(secondary)] + [-primary[rows]]
            if listed is not None:
                keys.append(~listed[rows])
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
            score, eligible, listed = fuse(idx, config, cand, fmask, vs, lex)
            secondary = [vs, lex]
        if pool is None:
            order_arr = order_of(np.flatnonzero(cand), score, secondary)
        else:
            # only the head of the ranking is ever shown: select it exactly (by every
            # key down to creation order) in linear time, then sort just that
            keys = [score, *secondary, -keyrank.astype(np.float64)]
            if listed is not None:
                keys.insert(0, listed.astype(np.float64))
            head = np.union1d(select_top(cand, keys, pool),
                              select_top(eligible, keys, config.top_k))
            order_arr = order_of(head, score, secondary)
        pos = positions(n, order_arr, passing)
        order = order_arr.tolist()
        return Ranked(score, vec, lex, cand, passing, eligible, pos, order,
                       truncated=len(order) < int(np.count_nonzero(cand)))

    def _rank_fast(self, idx: ScopeIndex, config: RecallConfig, q: np.ndarray,
                   within: np.ndarray | None, extra: int = 0) -> Ranked:
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
        pool = top_indices(raw, injected + head)
        if mask is not None:
            pool = np.union1d(pool, top_indices(np.where(mask, raw, -np.inf), head))
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
        return Ranked(AtRows(at, picked, -math.inf), AtRows(at, picked, math.nan), None,
                       AtRows(at, np.ones(order.size, bool), False),
                       AtRows(at, passing, False), AtRows(at, eligible, False),
                       AtRows(at, pos, 0), order.tolist(), truncated=order.size < total)

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
                 ) -> tuple[ScopeIndex, np.ndarray | None, np.ndarray | None, dict[str, int]]:
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

    def _rank(self, idx: ScopeIndex, config: RecallConfig, q: np.ndarray | None,
              query: str, within: np.ndarray | None, extra: int) -> Ranked:
        # an empty scope has no vector dimension yet: the full path handles it
        if config.mode == "vector" and q is not None and idx.dim is not None:
            return self._rank_fast(idx, config, q, within, extra)
        pool = config.top_k * (2 + config.before + config.after) + config.near_misses + extra
        return self._rank_full(idx, config, q, query, within, pool)

    def _pick(self, idx: ScopeIndex, config: RecallConfig, ranked: Ranked,
              window: frozenset[tuple[str, int]], query: str,
              caps: dict[str, int] | None = None) -> Picked | None:
        """Walk the eligible candidates best first until ``top_k`` hits are found,
        passing over rows in the window and near-duplicates of the query. None when
        the ranked head ran out before that although more candidates exist. ``caps``
        bounds each thread's neighbours (an ``as_of`` recall)."""
        query_terms = frozenset(lexical_terms(query)) if config.skip_query_duplicates \
            else None
        picked = Picked([], {}, {})
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
                              for k in around(idx, x, config, caps)]
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

    def _outcome(self, idx: ScopeIndex, config: RecallConfig, ranked: Ranked,
                 picked: Picked, window: frozenset[tuple[str, int]],
                 within: np.ndarray | None, snapshot: dict[str, int],
                 query: str) -> RecallOutcome:
        hits = picked.hits
        hit_set = set(hits)
        rows_out: dict[tuple[str, int], int | None] = {}  # (thread, seq) -> hit row
        for r in hits:
            rows_out[idx.key(r)] = r
        caps = None if within is None else snapshot
        for r in hits:
            for key in around(idx, r, config, caps):
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
                vs, ls = scores_of(ranked, hit_row)
                out_hits.append(RecallHit(key[0], key[1], float(ranked.score[hit_row]), "hit",
                                          int(ranked.pos[hit_row]) or None, vs, ls, m))
        out_hits.sort(key=lambda h: (h.message.created_at, h.seq, h.thread_id))

        near: list[NearMiss] = []
        for r, reason in misses:
            key = idx.key(r)
            m = msgs.get(key)
            if m is None:
                continue
            vs, ls = scores_of(ranked, r)
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
    def _misses(idx: ScopeIndex, config: RecallConfig, ranked: Ranked, picked: Picked,
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
            elif key in window:  # in the prompt whatever its score: not left out
                misses.append((r, "already-in-window"))
            elif not ranked.passing[r]:
                misses.append((r, "filtered-out"))
            elif not ranked.eligible[r]:
                misses.append((r, "below-threshold"))
            else:
                misses.append((r, "beyond-top-k"))
        return misses

    def _fetch(self, refs: Sequence[tuple[str, int]],
               idx: ScopeIndex | None = None) -> dict[tuple[str, int], StoredMessage]:
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
                vs, ls = scores_of(src, r)
                has_score = bool(src.cand[r])
                s = float(src.score[r]) if has_score else None
                if s is not None and not math.isfinite(s):
                    s = None
                rank = int(ranked.pos[r]) if inside[r] and ranked.passing[r] and (
                    (s is not None and s > 0) or ranked.eligible[r]) else None
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
