"""Telling a change in a model's answer from sampling noise: answers are compared by
their content words, and a variant's answer counts as changed only when it lies farther
from every answer to the unchanged prompt than those answers lie from each other.

A model that samples (temperature > 0, or not known) is re-asked the unchanged prompt
several times first; when those answers already disagree, no verdict is possible."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Literal

from memory_core.text import NEGATIONS, STOP_WORDS, tokenize

Verdict = Literal["changed", "unchanged", "inconclusive"]

# Re-asks of the unchanged prompt a sampling model needs before any "changed" verdict.
MIN_NOISE_REPEATS = 3
# How much farther than the baseline's own spread an answer must lie (in content-word
# Jaccard distance) before it counts as different. A baseline whose spread leaves no
# room for that (spread + margin >= 1) disagrees with itself.
NOISE_MARGIN = 0.2

# Function words carry no content; negations are deliberately kept ("not", "no").
_STOPWORDS = STOP_WORDS - NEGATIONS


def _stem(word: str) -> str:
    """A light English stem, so "refunded"/"refund" and "euros"/"euro" match: one plural
    or tense ending, then a final "e", each only when four letters remain."""
    for suffix, repl in (("ies", "y"), ("ing", ""), ("ed", ""), ("s", "")):
        if word.endswith(suffix) and not word.endswith("ss") \
                and len(word) - len(suffix) + len(repl) >= 4:
            word = word[:len(word) - len(suffix)] + repl
            break
    return word[:-1] if word.endswith("e") and len(word) >= 5 else word


def words(text: str | None) -> set[str]:
    """The content words of a text (lower-cased, stemmed, function words left out); all
    of its words when it has nothing else."""
    toks = tokenize(text or "")
    content = {_stem(t) for t in toks if t not in _STOPWORDS}
    return content or set(toks)


def similarity(a: str | None, b: str | None) -> float:
    """Jaccard similarity of the content words of two answers (1.0 for two empty ones)."""
    wa, wb = words(a), words(b)
    if not wa and not wb:
        return 1.0
    return len(wa & wb) / len(wa | wb)


def distance(a: str | None, b: str | None) -> float:
    return 1.0 - similarity(a, b)


def norm(text: str | None) -> str:
    return " ".join((text or "").split())


def samples_temperature(temperature: float | None) -> bool:
    """Whether a model at this temperature gives varying answers (unknown: assume so)."""
    return temperature is None or temperature > 0


@dataclass(frozen=True)
class Judgement:
    verdict: Verdict
    spread: float | None  # largest distance between two reference answers; None: exact
    notes: list[str] = field(default_factory=list)


def _quoted(answers: Sequence[str]) -> str:
    return " | ".join(repr(a) for a in answers)


def judge(reference: Sequence[str], new: Sequence[str], *, sampling: bool,
          baseline_repeats: int) -> Judgement:
    """Compare the variant's answers ``new`` with the answers to the unchanged prompt
    (``reference``: the baseline re-asks, and the original answer when the same model
    gave it). ``baseline_repeats`` is how many of them were re-asked."""
    distinct = list(dict.fromkeys(norm(a) for a in reference))
    if not distinct:
        return Judgement("inconclusive", None, ["no answer to the unchanged prompt to "
                                                "compare with"])
    notes: list[str] = []
    spread: float | None = None
    if len(distinct) == 1 and not sampling:
        # a deterministic model reproduced its answer: any difference is a change
        outside = [norm(a) != distinct[0] for a in new]
    else:
        spread = max((distance(a, b) for a, b in combinations(distinct, 2)), default=0.0)
        if spread + NOISE_MARGIN >= 1.0:
            return Judgement("inconclusive", round(spread, 4), [
                "the unchanged prompt already gives answers that disagree with each "
                f"other ({_quoted(distinct)}), so no change can be told apart from that "
                "noise"])
        bar = round(spread + NOISE_MARGIN, 6)  # rounded: a tie is not "beyond"
        outside = [round(min(distance(a, r) for r in distinct), 6) > bar for a in new]
    verdict: Verdict = ("changed" if all(outside) else
                        "unchanged" if not any(outside) else "inconclusive")
    if verdict == "inconclusive":
        notes.append(f"{sum(outside)} of {len(outside)} answers to the variant differ from "
                     "every answer to the unchanged prompt; the others do not")
    if verdict == "changed" and sampling and baseline_repeats < MIN_NOISE_REPEATS:
        verdict = "inconclusive"
        notes.append(f"the model samples (temperature > 0 or unknown) and the unchanged "
                     f"prompt was re-asked {baseline_repeats} time(s); at least "
                     f"{MIN_NOISE_REPEATS} are needed before a change can be told apart "
                     "from sampling noise")
    return Judgement(verdict, round(spread, 4) if spread is not None else None, notes)
