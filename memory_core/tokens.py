"""Token counting for per-lane budgets. Pluggable: any ``Callable[[str], int]``.

The default estimates ceil(characters / 4), the reference's rule (SPEC §8.2); it needs
no tokenizer download (tiktoken would fetch its encodings at first use).
"""

from __future__ import annotations

import math
from collections.abc import Callable

TokenCounter = Callable[[str], int]


def estimate_tokens(text: str) -> int:
    """ceil(len(text) / 4); 0 for empty text."""
    return math.ceil(len(text) / 4) if text else 0


estimate_tokens.label = "chars/4"  # type: ignore[attr-defined]


def counter_label(counter: TokenCounter) -> str:
    return str(getattr(counter, "label", getattr(counter, "__name__", type(counter).__name__)))
