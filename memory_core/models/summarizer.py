"""The extractive summariser: a deterministic offline Model that the observer uses to
distil a block of messages (and the reflector to condense observations) into key lines.

Input (``complete(messages, tools)``; ``tools`` are ignored):

* System messages without a ``[seq N]`` marker are instructions and are ignored.
* Every other message is content. Each line may open with a marker ``[seq 12]`` or
  ``[seq 12 | 2024-05-03]`` (a bullet ``- `` before it is allowed); the marker gives the
  seq (and date) of that line and of the following lines of the same message. Without a
  marker, ``message.metadata["seq"]`` (and ``["date"]``) is used; with neither, the line
  has no seq. Tool calls and tool results become "called X with ..." / "X returned ..."
  sentences. Observation texts produced by this summariser are valid input, so the same
  class condenses observations for the reflector.

Output (``ModelResponse.text``): one line per kept sentence, in input order, each
``- [seq 12] <sentence verbatim>`` (the marker as given, date or role included) — this
is the observation text. The kept seqs (sorted, distinct) are machine-readable twice:
from the markers via :func:`parse_summary` (which also strips a trailing ``kept: 3,7``
line that an LLM may add), and as the attribute ``last_kept_seqs`` set by every
``complete`` call (what ``ObservationalMemory`` reads).

Scoring: content-word weight (terms frequent in the block weigh more, normalised by
sqrt of the sentence's term count) + 2 for a date, + 1.5 for an amount of money, + 1 for
another number, + 1 per id or capitalised name (at most 2), + 2.5 for a decision word
(agreed, decided, approved, booked, ...); questions lose 1.5 and small talk (fewer than 3
content terms, no number/date) keeps a third of its score. The best
``min(max_sentences, ceil(n * max_fraction))`` sentences scoring at least
``min_ratio`` x the best score are kept, so minor facts really are dropped.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memory_core.errors import InvalidInputError
from memory_core.models.base import ModelIdentity, ModelResponse, ToolSpec, Usage
from memory_core.models.reader_text import (
    DATE_RE,
    ID_RE,
    MONEY_RE,
    NUMBER_RE,
    content_terms,
    flatten_json,
    split_sentences,
)
from memory_core.tokens import estimate_tokens
from memory_core.types import Message

# An optional label such as "[obs-t-0001]" (the reflector's input), a bullet, then
# "[seq 12]", "[seq 12 | 2024-05-03]" or "[seq 12 user]".
_MARKER = re.compile(r"^\s*(?:\[(?!seq\s)[^\]]*\]\s*)?(?:[-*•]\s+)?\[seq\s+(\d+)([^\]]*)\]\s*")
_LABEL = re.compile(r"^\s*\[(?!seq\s)[^\]]*\]\s*")
_KEPT = re.compile(r"^\s*kept:\s*([\d,\s]*)$", re.IGNORECASE)
_DECISION = re.compile(
    r"\b(?:agree[sd]?|decide[sd]?|decision|approved?|confirm(?:ed|s)?|booked|scheduled|"
    r"cancel(?:l?ed)?|chose|chosen|deadline|promised|refund(?:ed)?|ordered|paid|signed|"
    r"accepted|rejected|declined|will|must|settled)\b", re.IGNORECASE)
_NAME = re.compile(r"(?<=[\w,;:]\s)[A-Z][a-zà-ÿ]+")


@dataclass(frozen=True)
class Sentence:
    text: str
    seq: int | None
    marker: str  # "[seq 12 | 2024-05-03]" or ""
    position: int


@dataclass(frozen=True)
class SummaryParts:
    """A parsed summary: the observation text (bullet lines) and the kept seqs."""

    text: str
    kept_seqs: list[int]


def parse_summary(text: str) -> SummaryParts:
    """Split summariser (or LLM) output into the observation text and the kept seqs: a
    trailing ``kept: 3,7`` line wins, else the seqs of the lines' ``[seq N]`` markers."""
    lines = (text or "").rstrip().splitlines()
    kept: list[int] | None = None
    if lines:
        m = _KEPT.match(lines[-1])
        if m:
            kept = sorted({int(x) for x in re.findall(r"\d+", m.group(1))})
            lines = lines[:-1]
    body = "\n".join(lines).strip()
    if kept is None:
        kept = sorted({int(m.group(1)) for line in lines if (m := _MARKER.match(line))})
    return SummaryParts(text=body, kept_seqs=kept)


def sentences_of(messages: Sequence[Message]) -> list[Sentence]:
    """The candidate sentences of the input, with their seqs (see the module docstring)."""
    out: list[Sentence] = []
    seen: set[str] = set()

    def add(text: str, seq: int | None, marker: str) -> None:
        key = " ".join(text.lower().split())
        if text and key not in seen:  # the same sentence twice is one fact
            seen.add(key)
            out.append(Sentence(text, seq, marker, len(out)))

    for m in messages:
        body = m.text() or ""
        if m.role == "system" and not any(_MARKER.match(x) for x in body.splitlines()):
            continue  # instructions (which may *mention* "[seq N role]")
        meta_seq = m.metadata.get("seq")
        seq: int | None = meta_seq if isinstance(meta_seq, int) else None
        date = m.metadata.get("date")
        marker = f"[seq {seq}{f' | {date}' if date else ''}]" if seq is not None else ""
        for line in body.splitlines():
            if _KEPT.match(line):
                continue
            mk = _MARKER.match(line)
            if mk:
                seq = int(mk.group(1))
                marker = f"[seq {seq}{mk.group(2).rstrip()}]"
                line = line[mk.end():]
            else:
                line = _LABEL.sub("", line, count=1)
            for s in split_sentences(line):
                add(s, seq, marker)
        for call in m.tool_calls():
            args = "; ".join(flatten_json(call.args)) if isinstance(call.args, dict) else ""
            add(f"Called {call.name}" + (f" with {args}." if args else "."), seq, marker)
        for r in m.tool_results():
            facts = "; ".join(flatten_json(r.result)) if not isinstance(r.result, str) \
                else r.result
            add(f"{r.name} returned: {facts}" if facts else f"{r.name} returned nothing.",
                seq, marker)
    return out


def score_sentences(sentences: Sequence[Sentence]) -> list[float]:
    terms = [content_terms(s.text) for s in sentences]
    tf = Counter(t for ts in terms for t in ts if not t.startswith("#"))
    scores: list[float] = []
    for s, ts in zip(sentences, terms, strict=True):
        plain = [t for t in ts if not t.startswith("#")]
        content = sum(1.0 + math.log(tf[t]) for t in plain) / math.sqrt(max(1, len(plain)))
        has_date = bool(DATE_RE.search(s.text))
        has_money = bool(MONEY_RE.search(s.text))
        has_number = bool(NUMBER_RE.search(ID_RE.sub(" ", s.text))) and not has_money
        bonus = 2.0 * has_date + 1.5 * has_money + 1.0 * has_number
        bonus += min(2, len(ID_RE.findall(s.text)) + len(_NAME.findall(s.text)))
        bonus += 2.5 if _DECISION.search(s.text) else 0.0
        score = content + bonus
        if s.text.rstrip().endswith("?"):
            score -= 1.5
        if len(plain) < 3 and not (has_date or has_money or has_number):
            score /= 3.0
        scores.append(round(score, 6))
    return scores


class ExtractiveSummarizer:
    """Deterministic extractive summariser (observer and reflector); see the module
    docstring for the input and output formats."""

    def __init__(self, name: str = "extractive-summarizer", max_sentences: int = 5, *,
                 max_fraction: float = 0.6, min_ratio: float = 0.3) -> None:
        if max_sentences < 1:
            raise InvalidInputError(f"max_sentences must be >= 1, got {max_sentences!r}")
        if not 0.0 < max_fraction <= 1.0:
            raise InvalidInputError(f"max_fraction must be in (0, 1], got {max_fraction!r}")
        if not 0.0 <= min_ratio <= 1.0:
            raise InvalidInputError(f"min_ratio must be in [0, 1], got {min_ratio!r}")
        self.name = name
        self.max_sentences = max_sentences
        self.max_fraction = max_fraction
        self.min_ratio = min_ratio
        self.temperature = 0.0
        self.seed: int | None = None
        self.last_kept_seqs: list[int] | None = None

    def identity(self) -> ModelIdentity:
        return ModelIdentity(kind="summarizer", name=self.name, temperature=0.0)

    def select(self, sentences: Sequence[Sentence]) -> list[Sentence]:
        """The kept sentences, in input order."""
        if not sentences:
            return []
        scores = score_sentences(sentences)
        k = min(self.max_sentences, max(1, math.ceil(len(sentences) * self.max_fraction)))
        order = sorted(range(len(sentences)), key=lambda i: (-scores[i], i))
        top = scores[order[0]]
        chosen = [i for i in order[:k] if scores[i] >= self.min_ratio * top or i == order[0]]
        return [sentences[i] for i in sorted(chosen)]

    def summarize(self, messages: Sequence[Message]) -> SummaryParts:
        kept = self.select(sentences_of(messages))
        lines = [f"- {s.marker} {s.text}" if s.marker else f"- {s.text}" for s in kept]
        return SummaryParts(text="\n".join(lines),
                            kept_seqs=sorted({s.seq for s in kept if s.seq is not None}))

    def complete(self, messages: Sequence[Message],
                 tools: Sequence[ToolSpec]) -> ModelResponse:
        parts = self.summarize(messages)
        # The observer reads this after the call (ModelResponse has no field for it).
        self.last_kept_seqs = parts.kept_seqs
        text = parts.text
        return ModelResponse(text=text, model=self.name, finish_reason="stop",
                             usage=Usage(input_tokens=sum(_tokens(m) for m in messages),
                                         output_tokens=estimate_tokens(text)))


def _tokens(m: Message) -> int:
    return estimate_tokens(m.text() or m.canonical_json())


def format_block(rows: Sequence[Any]) -> list[Message]:
    """Messages for the summariser from stored rows (anything with ``role``, ``seq``,
    ``text()``, ``created_at`` and parts): one message per row, its text prefixed with
    ``[seq N | YYYY-MM-DD]``; tool parts travel as parts with seq/date metadata."""
    out: list[Message] = []
    for r in rows:
        date = r.created_at.date().isoformat() if getattr(r, "created_at", None) else None
        meta = {"seq": int(r.seq), **({"date": date} if date else {})}
        text = r.text()
        marker = f"[seq {int(r.seq)}{f' | {date}' if date else ''}]"
        if text and isinstance(r.content, str):
            out.append(Message(role=r.role, content=f"{marker} {text}", metadata=meta))
        else:
            out.append(Message(role=r.role, content=r.content, metadata=meta))
    return out


__all__ = ["ExtractiveSummarizer", "Sentence", "SummaryParts", "format_block",
           "parse_summary", "score_sentences", "sentences_of"]
