"""Recall settings (``RecallConfig``): validated at construction, and recorded whole in
every composition's provenance record so analysis can rebuild them exactly. Kept apart
from the engine (``memory_core.recall``, which re-exports them) so that provenance can
hold a RecallConfig without an import cycle."""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, StrictInt, ValidationError, field_validator

from memory_core.errors import InvalidInputError
from memory_core.filters import validate_filter

RecallMode = Literal["vector", "lexical", "hybrid"]
RecallScope = Literal["thread", "resource"]


# -- configuration ------------------------------------------------------------------------
def _describe(e: ValidationError) -> str:
    parts = []
    for err in e.errors():
        loc = ".".join(str(x) for x in err.get("loc", ())) or "config"
        msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        parts.append(f"{loc}: {msg} (got {err.get('input')!r})")
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
    - ``"hybrid"``: reciprocal-rank fusion of two rankings of the filtered candidates:
      the vector list (candidates with ``cosine > 0 and cosine >= threshold``) and the
      lexical list (``bm25 > 0``). ``score = sum(1 / (rrf_k + rank))`` over the lists
      a candidate is in. So ``threshold`` gates only the cosine evidence: a message
      below it can still be recalled when it shares rare terms with the query, and
      then only its lexical rank counts. Eligible when the fused score is > 0. Ties
      in the fused score go to the higher cosine, then the higher BM25.

    In every mode ties are broken by (created_at, thread_id, seq), so results are
    deterministic.

    Which mode (bench/RESULTS.md, "Recall quality"): with the real MiniLM model,
    ``mode="hybrid"`` puts the answer-bearing turn first most often (hit@1 0.54 vs
    0.44 for vector on our paraphrased questions) and fusion is what wins on long real
    conversations, where users reuse names, numbers and rare terms that cosine blurs;
    ``"vector"`` is slightly ahead at hit@5 when questions share no words with the
    answer. With the hashing embedder (no model) prefer ``"lexical"`` or ``"hybrid"``:
    hashed cosine is far weaker than BM25. Recommended: ``RecallConfig(mode="hybrid")``.

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
        }
