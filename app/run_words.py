"""The run inspector's words for a run's recall and settings: what became of each recall
candidate, a score as a card says it, what the score chart's first bar is, and the
recorded memory settings as sentences (plain text, escaped where shown)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from app.components import fmt_score
from memory_core.analysis import views


def candidate_fate(c: views.ScoreCandidate, threshold: float | None,
                   top_k: int | None, *, hybrid: bool = False) -> str:
    """What became of a recall candidate, in words: "recalled into the prompt", "rank
    1 ... dropped: a tool call without its result", "below the threshold 0.450" …
    (``hybrid``: recall also took rows sharing a word with the question, so a row below
    the threshold shared none)."""
    if c.status == "hit":
        return "recalled into the prompt"
    if c.status == "dropped":
        return f"recalled, then dropped: {views.drop_reason_text(c.reason)}"
    if c.status == "below-threshold":
        bar = "below the threshold" + (f" {fmt_score(threshold)}" if threshold is not None
                                       else "")
        if hybrid:
            bar = ("no word shared with the question, and " + (
                "no vector to compare" if c.similarity is None else f"a similarity {bar}"))
        return bar + ": not recalled"
    if c.status == "beyond-top-k":
        return ("above the threshold but outside the top"
                + (f" {top_k}" if top_k is not None else " k") + ": not recalled")
    if c.status == "filtered-out":
        return "left out by the filter" + (f" ({c.filter_clause})" if c.filter_clause else "")
    if c.status == "already-in-window":
        return "already in the prompt's recent window"
    if c.status == "duplicate-of-query":
        return "the question itself (or a copy of it): skipped"
    return c.status


def scored(score: float, similarity: float | None, *, hybrid: bool = False) -> str:
    """A recall score as a card says it: "score 0.612", or for hybrid recall's fused
    score "fused score 1.348 · similarity 0.612" (the threshold bounds the similarity;
    a message without a vector has none)."""
    if similarity is None:
        return f"{'fused score' if hybrid else 'score'} {fmt_score(score)}"
    return f"fused score {fmt_score(score)} · similarity {fmt_score(similarity)}"


def first_bar_text(candidates: Sequence[views.ScoreCandidate], threshold: float | None,
                   top_k: int | None, *, hybrid: bool = False) -> str:
    """The score chart's caption: what its first bar is, and what became of it (shown
    escaped). A record that lacks rank 1 says so rather than starting silently at 2."""
    if not candidates:
        return "Recall found no candidates."
    c = candidates[0]
    rank = f"rank {c.rank}" + (" without the filter" if c.status == "filtered-out" else "")
    head = (f"The first bar is {rank}, {c.thread_id} #{c.seq}: "
            f"{candidate_fate(c, threshold, top_k, hybrid=hybrid)}.")
    if c.rank != 1:
        head = (f"Rank 1 is not in this run's record; the chart starts at rank {c.rank}. "
                + head)
    return head


def settings_text(settings: Mapping[str, Any]) -> list[str]:
    """A run's memory settings (``RunView.settings``) as sentences, one a line; a
    setting the record does not hold is left out (the folded record names them)."""
    def get(key: str) -> Any:
        value = settings.get(key)
        return None if value == views.UNKNOWN_SETTING else value

    out: list[str] = []
    if get("recent_n") is not None and get("observational") is True:
        # (composition keeps every message after the last observed one: recent_n holds
        # only until the first observation is made)
        out.append("Recent window: every message of the thread not yet condensed into an "
                   f"observation (the last {get('recent_n')} until the first one is made).")
    elif get("recent_n") is not None:
        out.append(f"Recent window: the last {get('recent_n')} messages of the thread (more "
                   "where a tool call must stay with its results).")
    if get("recall_enabled") is True or (get("recall_enabled") is None and get("top_k")):
        bits = [f"{get('mode') or 'vector'} search over the {get('scope') or 'thread'}"]
        if get("top_k") is not None:
            bits.append(f"keeping the top {get('top_k')}")
        if get("threshold") is not None and get("mode") == "hybrid":
            # (the bar bounds the similarity only: below it, shared words still count)
            bits.append(f"counting a similarity from {fmt_score(get('threshold'))} "
                        "(below it, only shared words count)")
        elif get("threshold") is not None:
            bits.append(f"scoring at least {fmt_score(get('threshold'))}")
        if get("filter"):
            bits.append("filtered by " + json.dumps(get("filter"), ensure_ascii=False,
                                                    sort_keys=True, default=str))
        if get("message_range"):
            n = get('message_range')
            bits.append(f"with {n} neighbouring message{'' if n == 1 else 's'} each side")
        embedder = f" (embedder {get('embedder')})" if get("embedder") else ""
        out.append("Recall: " + ", ".join(bits) + embedder + ".")
    elif get("recall_enabled") is False:
        out.append("Recall: off.")
    if get("working_memory") is not None:
        wm = get("working_memory")
        out.append(f"Working memory: {wm}"
                   + (" (read only)." if get("working_memory_read_only") and wm != "off"
                      else "."))
    if get("observational") is not None:
        out.append("Observational memory: "
                   + ("on." if get("observational") is True else
                      "off." if get("observational") is False else f"{get('observational')}."))
    processors = get("processors")
    if isinstance(processors, list) and processors:
        named = []
        for proc in processors:
            if isinstance(proc, dict):
                rest = ", ".join(f"{k} {v}" for k, v in proc.items() if k != "name")
                named.append(f"{proc.get('name', '?')}" + (f" ({rest})" if rest else ""))
        out.append("Input processors: " + "; ".join(named) + ".")
    if get("token_counter") is not None:
        out.append(f"Tokens counted by {get('token_counter')}.")
    return out
