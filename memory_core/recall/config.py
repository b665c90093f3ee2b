"""Recall settings (``RecallConfig``): validated at construction, and recorded whole in
every composition's provenance record so analysis can rebuild them exactly. Kept apart
from the engine (``memory_core.recall.engine``) so that provenance can
hold a RecallConfig without an import cycle."""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    StrictBool,
    StrictInt,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from memory_core.errors import InvalidInputError
from memory_core.recall.filters import validate_filter

RecallMode = Literal["vector", "lexical", "hybrid"]
RecallScope = Literal["thread", "resource"]


#: the hybrid settings that reproduce recall before score fusion, neighbour context,
#: question demotion and duplicate skipping existed (for records written then)
LEGACY_HYBRID: dict[str, Any] = {"fusion": "rrf", "context_weight": 0.0,
                                 "question_weight": 1.0, "query_rewrite": False,
                                 "skip_query_duplicates": False}


# -- configuration ------------------------------------------------------------------------
def _describe(e: ValidationError) -> str:
    parts = []
    for err in e.errors():
        loc = ".".join(str(x) for x in err.get("loc", ())) or "config"
        msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        # (a message of ours names the value already: "…, got 1.5")
        parts.append(f"{loc}: {msg}" + ("" if ", got " in msg
                                         else f" (got {err.get('input')!r})"))
    return "invalid recall config: " + "; ".join(parts)


class MessageRange(BaseModel):
    """How many neighbours (by position in the hit's own thread) join each hit."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    before: StrictInt = 0
    after: StrictInt = 0

    @field_validator("before", "after")
    @classmethod
    def _non_negative(cls, v: int) -> int:
        if v < 0:
            raise ValueError(f"must be >= 0, got {v}")
        return v


class RecallConfig(BaseModel):
    """Recall settings, validated at construction (bad values raise
    ``InvalidInputError`` naming the value).

    Example: ``RecallConfig(top_k=5, threshold=0.2, message_range={"before": 1,
    "after": 2}, scope="resource", filter={"lang": "tr"}, mode="hybrid")``

    Modes and what ``threshold`` means in each:

    - ``"vector"`` (default): exact cosine over stored embeddings. A candidate is
      eligible when ``cosine > 0 and cosine >= threshold``; the eligible candidates
      that pass the filter are ranked by cosine and the first ``top_k`` are hits.
    - ``"lexical"``: BM25 (k1=1.2, b=0.75) over message text in scope, corpus
      statistics computed over the scope (as of the snapshot). Eligible when
      ``bm25 > 0`` (the message shares a query term). ``threshold`` is a cosine bound
      and does not apply (no embedding is computed).
    - ``"hybrid"``: fusion of two signals of the filtered candidates: the vector list
      (candidates with ``cosine > 0 and cosine >= threshold``) and the lexical list
      (``bm25 > 0``); eligible when in either list. So ``threshold`` gates only the
      cosine evidence: a message below it can still be recalled when it shares rare
      terms with the query, and then only its lexical score counts. With
      ``fusion="weighted"`` (default) ``score = vector_weight * norm(cosine) + (1 -
      vector_weight) * norm(bm25)``, each signal normalised over the passing
      candidates that have it (every row with a vector; every row with terms, BM25 0
      included), z-scored (``score_norm="zscore"``, default) or min-max scaled to
      [0, 1] (``"minmax"``), 0 outside its list;
      with ``fusion="rrf"`` reciprocal-rank fusion, ``score = sum(1 / (rrf_k +
      rank))`` over the lists. Before fusing, ``context_weight`` adds that share of the
      better thread neighbour's signal to each row's (a fact stated in answer to a
      question scores with the question), and ``question_weight`` scales down turns
      that ask (hold a "?"): they seldom carry the answer. ``query_rewrite`` embeds
      the query without its function words. Ties in the fused score go to the higher
      cosine, then the higher BM25. ``LEGACY_HYBRID`` holds the settings of the
      rank-only fusion recall used before these settings existed.

    In every mode ties are broken by (created_at, thread_id, seq), so results are
    deterministic.

    Which mode (bench/RESULTS.md, "Recall quality", "Recall quality: long
    conversations" and "Recall quality: LongMemEval threads"): with the real MiniLM
    model, ``mode="hybrid"`` with the default weighted fusion finds an evidence turn in
    the top 5 most often on long multi-session conversations, generated and real,
    ahead of plain cosine, BM25 and rank fusion; fusion matters most on real
    conversations, where users reuse names, numbers and rare terms that cosine blurs
    (there BM25 alone beats cosine). With the hashing embedder (no model) prefer ``"lexical"`` or ``"hybrid"``:
    hashed cosine is far weaker than BM25. Recommended: ``RecallConfig(mode="hybrid")``.

    Hits are the first ``top_k`` eligible candidates that are not in the caller's
    window (the recent window, already in the prompt: it never uses up a slot) and,
    with ``skip_query_duplicates`` (default on), not near-duplicates of the query: a
    stored question whose terms overlap the query's with Jaccard >= ``duplicate_overlap``
    (an earlier asking of the same question, which holds no answer). Both kinds are
    reported as near misses (``already-in-window``, ``duplicate-of-query``).

    ``near_misses`` is how many candidates just below the cut are reported (with a
    reason); ``message_range`` is an int n (n before, n after) or
    ``{"before": b, "after": a}``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    top_k: StrictInt = 3
    threshold: float = 0.0
    message_range: StrictInt | MessageRange = 0
    scope: RecallScope = "thread"
    filter: dict[str, Any] | None = None
    mode: RecallMode = "vector"
    near_misses: StrictInt = 5
    rrf_k: StrictInt = 60
    skip_query_duplicates: StrictBool = True
    duplicate_overlap: float = 0.6
    # hybrid mode only: tuned on bench/recall_quality/longconv (generated), then
    # score_norm and context_weight moved to what real chats (bench/recall_quality/
    # longmemeval) favour at no more than ~2 points' cost on longconv (bench/RESULTS.md,
    # "Recall quality: LongMemEval threads"); was minmax / 0.5 until 2026-12-03
    fusion: Literal["rrf", "weighted"] = "weighted"
    vector_weight: float = 0.7
    score_norm: Literal["minmax", "zscore"] = "zscore"
    context_weight: float = 0.35
    question_weight: float = 1.0
    query_rewrite: StrictBool = False

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as e:
            raise InvalidInputError(_describe(e)) from e

    @classmethod
    def model_validate(cls, obj: Any, *args: Any, **kwargs: Any) -> RecallConfig:
        if isinstance(obj, RecallConfig):
            return obj
        if not isinstance(obj, dict):
            raise InvalidInputError(f"recall config must be a dict, got {obj!r}")
        return cls(**obj)

    def replace(self, **changes: Any) -> RecallConfig:
        """A validated copy with some settings changed (``model_copy`` would not
        validate)."""
        return RecallConfig(**{**self._fields_as_given(), **changes})

    def _fields_as_given(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in type(self).model_fields}

    @field_validator("top_k")
    @classmethod
    def _top_k(cls, v: int) -> int:
        if v <= 0:
            raise ValueError(f"top_k must be > 0, got {v}")
        return v

    @field_validator("threshold", mode="before")
    @classmethod
    def _threshold(cls, v: Any) -> float:
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise ValueError(f"threshold must be a number in [-1, 1], got {v!r}")
        if not math.isfinite(v) or not -1.0 <= v <= 1.0:
            raise ValueError(f"threshold must be in [-1, 1], got {v!r}")
        return float(v)

    @field_validator("message_range")
    @classmethod
    def _range(cls, v: int | MessageRange) -> int | MessageRange:
        if isinstance(v, int) and v < 0:
            raise ValueError(f"message_range must be >= 0, got {v}")
        return v

    @field_validator("filter", mode="before")
    @classmethod
    def _filter(cls, v: Any) -> dict[str, Any] | None:
        import copy

        return validate_filter(copy.deepcopy(v))

    @field_validator("near_misses")
    @classmethod
    def _near(cls, v: int) -> int:
        if v < 0:
            raise ValueError(f"near_misses must be >= 0, got {v}")
        return v

    @field_validator("duplicate_overlap", mode="before")
    @classmethod
    def _overlap(cls, v: Any) -> float:
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise ValueError(f"duplicate_overlap must be a number in (0, 1], got {v!r}")
        if not math.isfinite(v) or not 0.0 < v <= 1.0:
            raise ValueError(f"duplicate_overlap must be in (0, 1], got {v!r}")
        return float(v)

    @field_validator("vector_weight", "question_weight", mode="before")
    @classmethod
    def _unit(cls, v: Any, info: ValidationInfo) -> float:
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) \
                or not 0.0 <= v <= 1.0:
            raise ValueError(f"{info.field_name} must be a number in [0, 1], got {v!r}")
        return float(v)

    @field_validator("context_weight", mode="before")
    @classmethod
    def _context(cls, v: Any) -> float:
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) \
                or not 0.0 <= v <= 4.0:
            raise ValueError(f"context_weight must be a number in [0, 4], got {v!r}")
        return float(v)

    @field_validator("rrf_k")
    @classmethod
    def _rrf(cls, v: int) -> int:
        if v < 0:
            raise ValueError(f"rrf_k must be >= 0, got {v}")
        return v

    @property
    def before(self) -> int:
        mr = self.message_range
        return mr if isinstance(mr, int) else mr.before

    @property
    def after(self) -> int:
        mr = self.message_range
        return mr if isinstance(mr, int) else mr.after

    def settings_dict(self) -> dict[str, Any]:
        """The settings as plain JSON values (for provenance and the journal)."""
        mr = self.message_range
        return {
            "top_k": self.top_k,
            "threshold": self.threshold,
            "message_range": mr if isinstance(mr, int) else {"before": mr.before,
                                                             "after": mr.after},
            "scope": self.scope,
            "filter": self.filter,
            "mode": self.mode,
            "near_misses": self.near_misses,
            "rrf_k": self.rrf_k,
            "skip_query_duplicates": self.skip_query_duplicates,
            "duplicate_overlap": self.duplicate_overlap,
            "fusion": self.fusion,
            "vector_weight": self.vector_weight,
            "score_norm": self.score_norm,
            "context_weight": self.context_weight,
            "question_weight": self.question_weight,
            "query_rewrite": self.query_rewrite,
        }
