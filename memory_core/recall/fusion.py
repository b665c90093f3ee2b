"""Hybrid recall's rank fusion (RRF or weighted), the neighbour signal, normalising,
ranking positions and the top rows."""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence

import numpy as np

from memory_core.recall.config import (
    RecallConfig,
)
from memory_core.recall.index import Ranked, ScopeIndex


def around(idx: ScopeIndex, r: int, config: RecallConfig,
            caps: dict[str, int] | None) -> list[tuple[str, int]]:
    """Row ``r`` and its ``message_range`` neighbours in its thread, as refs (only
    seqs up to the thread's entry in ``caps``, when given)."""
    t = idx.threads[int(idx.tidx[r])]
    seqs = idx.thread_seqs[t]
    limit = len(seqs) if caps is None else bisect.bisect_right(seqs, caps[t])
    p = bisect.bisect_left(seqs, int(idx.seqs[r]))
    return [(t, seqs[j]) for j in range(max(0, p - config.before),
                                          min(limit, p + config.after + 1))]


def fuse(idx: ScopeIndex, config: RecallConfig, cand: np.ndarray, fmask: np.ndarray,
          vs: np.ndarray, lex: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Hybrid score, eligibility and list membership of every row. The vector list
    holds candidates with ``cosine > 0 and cosine >= threshold``, the lexical list
    those with ``bm25 > 0``;
    a row in neither is not eligible. ``rrf`` sums ``1 / (rrf_k + rank)`` over the
    lists; ``weighted`` sums ``vector_weight`` x the normalised cosine and the rest x
    the normalised BM25 (each normalised over the passing candidates; 0 outside its
    list). ``context_weight`` first adds that share of the better neighbour's signal
    (same thread) to each row's; ``question_weight`` scales down rows that ask.
    A row in either list ranks before every row in neither (``listed``, filtered-out
    rows included): a z-scored row below the mean scores under 0, the rows in neither
    list score 0, and those must not rank above a row recall could take."""
    n = idx.n
    keyrank = idx.ranks()
    passing = cand & fmask
    # only candidates (rows within an ``as_of`` recall) count, as members and as the
    # neighbours whose signal a row borrows: a later message never lifts an older one
    in_v = cand & np.isfinite(vs) & (vs > 0) & (vs >= config.threshold)
    in_l = cand & (lex > 0)
    if config.context_weight > 0:
        vs = np.where(np.isfinite(vs), with_context(idx, np.where(in_v, vs, 0.0),
                                                     config.context_weight), vs)
        lex = with_context(idx, lex, config.context_weight)
    score = np.zeros(n, np.float64)
    members = ((in_v, vs), (in_l, lex))
    if config.fusion == "rrf":
        rrf = float(config.rrf_k)
        for member, s in members:
            rows = np.flatnonzero(passing & member)
            ranked = rank_list(rows, s, keyrank)
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
                score += w * np.where(member, normalise(s, passing & pool,
                                                         config.score_norm), 0.0)
        score = np.where(in_v | in_l, score, 0.0)
    if config.question_weight < 1.0:
        q = idx.asks[:n]
        score[q] = np.where(score[q] > 0, score[q] * config.question_weight,
                            score[q] / max(config.question_weight, 1e-9))
    listed = in_v | in_l
    eligible = passing & listed
    if config.fusion == "rrf":
        eligible &= score > 0
    return score, eligible, listed


def with_context(idx: ScopeIndex, values: np.ndarray, weight: float) -> np.ndarray:
    """Each row's value plus ``weight`` x the larger of its thread neighbours' values."""
    n = idx.n
    prev = idx.prev_row[:n]
    has_prev = prev >= 0
    nxt = np.full(n, -1, np.int64)
    nxt[prev[has_prev]] = np.flatnonzero(has_prev)
    ext = np.concatenate([values, [0.0]])  # index -1 reads the 0 pad
    out: np.ndarray = values + weight * np.maximum(ext[prev], ext[nxt])
    return out


def normalise(s: np.ndarray, rows: np.ndarray, how: str) -> np.ndarray:
    """``s`` scaled over the rows of ``rows``: min-max to [0, 1] or z-scores."""
    vals = s[rows]
    if vals.size == 0:
        return np.zeros_like(s)
    if how == "zscore":
        sd = float(vals.std())
        return (s - float(vals.mean())) / (sd if sd > 0 else 1.0)
    lo, hi = float(vals.min()), float(vals.max())
    return (s - lo) / (hi - lo) if hi > lo else np.ones_like(s)


def scores_of(ranked: Ranked, r: int) -> tuple[float | None, float | None]:
    vs = None
    if ranked.vec is not None:
        v = float(ranked.vec[r])
        vs = v if math.isfinite(v) else None
    ls = float(ranked.lex[r]) if ranked.lex is not None else None
    return vs, ls


def positions(n: int, order: np.ndarray, passing: np.ndarray) -> np.ndarray:
    """1-based rank among passing rows along ``order``; a filtered-out row gets the
    rank it would have taken (1 + passing rows before it)."""
    is_pass = passing[order]
    seen = np.cumsum(is_pass)
    pos = np.zeros(n, np.int64)
    pos[order] = np.where(is_pass, seen, seen + 1)
    return pos


def rank_list(rows: np.ndarray, s: np.ndarray, keyrank: np.ndarray) -> np.ndarray:
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


def select_top(mask: np.ndarray, keys: Sequence[np.ndarray], m: int) -> np.ndarray:
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
