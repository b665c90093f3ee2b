"""How analysis sentences write numbers: one score format for every sentence the
library says (the workbench shows the same format, app/components.fmt_score)."""

from __future__ import annotations

import json
import math
from typing import Any

#: what a missing value reads as, in sentences and in the workbench's tables
MISSING = "—"


def counted(n: int, noun: str) -> str:
    """``n`` and the noun in the number it takes: "1 thread", "3 threads", "0 runs"."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def score_text(x: object) -> str:
    """A score (cosine, BM25, fused, a threshold): 3 decimals; ``MISSING`` when there is
    none (None, NaN, not a number)."""
    if isinstance(x, bool) or not isinstance(x, int | float) or not math.isfinite(x):
        return MISSING
    return f"{x:.3f}"


def value_text(x: Any) -> str:
    """A setting's value in a sentence: ints as they are, floats as scores, None (a
    setting left unset: no filter) as "none", anything else as compact JSON."""
    if x is None:
        return "none"
    if isinstance(x, float):
        return score_text(x)
    if isinstance(x, bool) or not isinstance(x, int | str):
        return json.dumps(x, ensure_ascii=False, sort_keys=True)
    return str(x)


#: why a recall setting cannot be tried on a run that had recall off (part of what-if's
#: reason for such a run; the workbench counts those runs by it)
RECALL_WAS_OFF = "recall was off in this run"
