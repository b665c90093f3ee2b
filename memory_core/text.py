"""The one tokenizer and stop-word set: lexical recall (BM25), the reader model, the
noise measure of counterfactuals and why-forgotten all read words the same way; and
the one-line preview of a stored message every record and page shows."""

from __future__ import annotations

import json
import re
from typing import Any

_TOKEN = re.compile(r"[\w']+", re.UNICODE)
#: ``tokenize``'s pattern, for bulk indexing (tokens before quotes are stripped)
TOKEN_RE = _TOKEN

# Function words that carry no topic: without them BM25 ranks "what is the ..." turns
# by chance. Deliberately short so that content words are never dropped.
STOP_WORDS: frozenset[str] = frozenset("""
a an the and or but if then than so of to in on at by for from with about as into over
is are was were be been being am do does did done have has had having
i me my mine we us our you your yours he him his she her it its they them their
this that these those there here what which who whom whose when where why how
can could would should will shall may might must not no nor yes ok okay
just also very too only own same such some any all each few more most other
up down out off again further once s t don didn doesn isn wasn aren won let
after before much many get got go goes going make made need like want would
""".split())

#: words that flip a statement's meaning: kept when comparing answers
NEGATIONS: frozenset[str] = frozenset({"not", "no", "nor", "never"})


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens; shared by the hashing embedder and lexical recall."""
    return [t.strip("'") for t in _TOKEN.findall(text.lower()) if t.strip("'")]


PREVIEW_CHARS = 120


def _clip(text: str, limit: int = PREVIEW_CHARS) -> str:
    return text[:limit]


def _as_arg_text(value: Any) -> str:

    if isinstance(value, str):
        return value
    # sorted keys: the preview must not depend on how an adapter round-trips a dict
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=True)


def structural_text(message: Any) -> str:
    """Text parts as text, a call as ``→ NAME(ARGS)``, a result as ``NAME → OUTPUT``,
    joined by spaces, unclipped (what the token counter sees of a message)."""
    if type(getattr(message, "content", None)) is str:  # its one text part, or none
        return message.content  # type: ignore[no-any-return]
    from memory_core.types import TextPart, ToolCallPart, ToolResultPart

    pieces: list[str] = []
    for p in message.parts:
        if isinstance(p, TextPart):
            pieces.append(p.text)
        elif isinstance(p, ToolCallPart):
            pieces.append(f"→ {p.name or 'tool'}({_as_arg_text(p.args)})")
        elif isinstance(p, ToolResultPart):
            pieces.append(f"{p.name or 'tool'} → {_as_arg_text(p.result)}")
    return " ".join(pieces)


def structural_preview(message: Any) -> str:
    """``structural_text`` clipped to 120 characters (no ellipsis)."""
    return _clip(structural_text(message))


def preview(message: Any) -> str:
    """The stored text, whitespace collapsed, trimmed, first 120 characters; the
    structural preview when there is no text. A message whose parts mix text and
    tool calls shows the structural form so the call stays visible."""
    if message.tool_calls() or message.tool_results():
        return structural_preview(message)
    text = " ".join((message.text() or "").split())
    return _clip(text) if text else structural_preview(message)
