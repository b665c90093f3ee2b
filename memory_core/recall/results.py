"""What recall returns: hits, the candidates that nearly made it (near misses, with
why) and how any one message scored (for why-forgotten)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict

from memory_core.types import StoredMessage

NearMissReason = Literal["below-threshold", "beyond-top-k", "filtered-out",
                         "already-in-window", "duplicate-of-query"]


class NearMiss(BaseModel):
    """A recall candidate that did not make it, with why."""

    model_config = ConfigDict(extra="forbid")
    thread_id: str
    seq: int
    role: str
    preview: str
    rank: int  # 1-based rank by score among all scored candidates in scope
    score: float
    vector_score: float | None = None
    lexical_score: float | None = None
    reason: NearMissReason
    filter_clause: str | None = None  # for filtered-out: the first clause that failed


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
    that passed the filter and could be a hit or scored > 0 (a z-scored hybrid hit may
    score under 0); ``eligible`` says whether it could be a hit (see ``RecallConfig``);
    ``in_scope`` is False for messages written after ``as_of``.
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
