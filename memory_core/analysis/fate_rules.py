"""The rules of composition that kept a stored message out of a run's prompt, in the
order composition applied them — recall's filter, its threshold, its top-k, then the
tool-pair rules and the input processors — each with the run's setting and the value
that would have let the message past it. ``analysis.forgotten`` decides a message's fate
from them (its ``fate`` is the first rule); ``analysis.diff`` says which setting change
lifted them.

A rule's ``setting`` and ``needed`` are written as a what-if change
(``analysis.whatif``: ``recall.threshold=0.434``): applied together, the changes of
every rule let the message in. Each rule is checked with the rules before it lifted: a
message under the threshold is also beyond top-k when, with the threshold lowered to
its score, more messages would still be taken before it than top-k allows."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from memory_core.analysis.stored_vectors import prime_with_stored
from memory_core.analysis.wording import score_text, value_text
from memory_core.embedding.hashing import Embedder
from memory_core.journal import RunData
from memory_core.provenance.record import Memctx
from memory_core.recall.config import RecallConfig
from memory_core.recall.results import CandidateScore, NearMiss
from memory_core.runs.registry import recall_config_from_settings, resolve_embedder
from memory_core.storage.base import Storage

RuleName = Literal["filtered-out", "below-threshold", "beyond-top-k", "dropped",
                   "trimmed-by-token-limit"]
Ref = tuple[str, int]

#: the words for a rule's setting, as a reason names it
SETTING_WORDS = {"recall.filter": "recall filter", "recall.threshold": "threshold",
                 "recall.top_k": "top-k", "token_budget": "token budget"}


class Rule(BaseModel):
    """One rule that kept a message out: what it did (``said``), the run's ``setting``
    and its ``value``, and what would have let the message past it: ``needed`` (the
    setting's value, a what-if change) in words (``admits``); ``admits`` is None when no
    value of a setting would have (a tool call whose result was never stored)."""

    model_config = ConfigDict(extra="forbid")
    rule: RuleName
    said: str
    # as a what-if change, when there is one: "recall.threshold", "recall.top_k" …
    setting: str | None = None
    value: Any = None  # the run's value of the setting
    needed: Any = None  # the value that would have let it past
    admits: str | None = None  # ``needed`` in words: "a threshold of 0.434 or lower"


def let_in(rules: Sequence[Rule]) -> str | None:
    """What would have let the message in, every rule's change joined ("a threshold of
    0.434 or lower and a top-k of 6 or more"); None when some rule no setting lifts."""
    if not rules or any(r.admits is None for r in rules):
        return None
    words = [r.admits for r in rules if r.admits]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def said_all(rules: Sequence[Rule]) -> str:
    """Every rule's ``said``, in order: "below the threshold (…) and beyond top-k (…)"."""
    said = [r.said for r in rules]
    return said[0] if len(said) == 1 else ", ".join(said[:-1]) + " and " + said[-1]


# -- recall: filter, threshold, top-k ------------------------------------------------------
def filter_rule(config: RecallConfig, clause: str | None) -> Rule:
    return Rule(rule="filtered-out", setting="recall.filter", value=config.filter,
                needed=None, said=f"filtered out ({clause or 'a clause'} did not hold for "
                "its metadata)", admits="no recall filter")


def gated(config: RecallConfig, score: float | None, vector_score: float | None) -> float | None:
    """The score recall's threshold applies to: the cosine (the score in vector mode,
    the vector score in hybrid mode); None in lexical mode, where no bar applies."""
    if config.mode == "lexical":
        return None
    s = vector_score if config.mode == "hybrid" or score is None else score
    return s if s is not None and math.isfinite(s) else None


def threshold_rule(config: RecallConfig, score: float | None, vector_score: float | None,
                   lexical_score: float | None) -> Rule | None:
    """The threshold rule when it kept the message out (its filter aside): in vector
    mode a cosine under the bar (or not above 0); in hybrid mode that (or no vector) and
    no word shared with the question; in lexical mode no word shared (no setting lifts
    that)."""
    lexical = (lexical_score if lexical_score is not None else
               score if config.mode == "lexical" else None) or 0.0
    if config.mode == "lexical":
        if lexical > 0:
            return None
        return Rule(rule="below-threshold", said="it shares no word with the question, "
                    "and lexical recall scores shared words only")
    cos = gated(config, score, vector_score)
    thr = config.threshold
    if cos is not None and cos > 0 and cos >= thr:
        return None
    if config.mode == "hybrid" and lexical > 0:
        return None
    said = f"below the threshold ({score_text(cos)} < {score_text(thr)})"
    if config.mode == "hybrid":
        # words alone would have let it in: say that none were shared
        said = ("it shares no word with the question and has no vector to compare"
                if cos is None else f"it shares no word with the question and is {said}")
        if cos is None:
            return Rule(rule="below-threshold", setting="recall.threshold", value=thr,
                        said=f"{said}: no threshold admits it")
    if cos is None or cos <= 0:
        return Rule(rule="below-threshold", setting="recall.threshold", value=thr,
                    said=f"{said}: no threshold admits a score that is not above 0")
    # never above the score: to 3 decimals, or to 4 where the score shown (rounded to 3)
    # is above that ("scored it 0.128 … a threshold of 0.127 or lower" read as wrong)
    needed = math.floor(cos * 1000) / 1000
    shown = f"{needed:.3f}"
    if shown != score_text(cos):
        needed = math.floor(cos * 10000) / 10000
        shown = f"{needed:.4f}"
    return Rule(rule="below-threshold", setting="recall.threshold", value=thr,
                needed=needed, said=said, admits=f"a threshold of {shown} or lower")


def top_k_rule(config: RecallConfig, rank: int | None, needed: int) -> Rule | None:
    """The top-k rule when ``needed - 1`` messages would be taken before the message
    (with the rules before it lifted) and top-k took fewer."""
    if needed <= config.top_k:
        return None
    ranked = f"rank {rank}, top-k {config.top_k}" if rank is not None else \
        f"{needed - 1} taken before it, top-k {config.top_k}"
    if rank is not None and rank != needed:
        ranked += f", {needed - 1} taken before it"
    return Rule(rule="beyond-top-k", setting="recall.top_k", value=config.top_k,
                needed=needed, said=f"beyond top-k ({ranked})",
                admits=f"a top-k of {needed} or more")


def window_of(memctx: Memctx) -> frozenset[Ref]:
    """The recent window recall was given (it never takes a top-k slot): the recent
    lane, with the rows pairing or a processor took out of it afterwards."""
    refs = {(r.thread_id, r.seq) for r in memctx.recent}
    refs |= {(d.thread_id, d.seq) for d in memctx.dropped if d.lane == "recent"}
    refs |= {(p.thread_id, p.seq) for p in memctx.processed
             if p.lane == "recent" and p.thread_id is not None and p.seq is not None}
    return frozenset(refs)


class RunScores:
    """Every message of a run's scope scored for its question as its recall did
    (``RecallEngine.score_all`` as of the run's snapshot), computed once; and again
    under settings that lift a rule (a lower bar, no filter), once per settings."""

    def __init__(self, storage: Storage, data: RunData, embed: Embedder | None) -> None:
        memctx = data.memctx
        assert memctx is not None
        self.storage, self.data, self.memctx, self.embed = storage, data, memctx, embed
        self.config = recall_config_from_settings(memctx.settings)
        self._engine: Any = None  # built on first use: the embedder may load a model
        self._scored: dict[str, tuple[list[CandidateScore], dict[Ref, CandidateScore]]] = {}

    def under(self, config: RecallConfig) -> tuple[list[CandidateScore],
                                                   dict[Ref, CandidateScore]]:
        key = config.model_dump_json()
        if key not in self._scored:
            from memory_core.recall.engine import RecallEngine

            m = self.memctx
            if self._engine is None:
                embed = resolve_embedder(m.settings, self.embed)
                if self.embed is None and self.data.persist_input is not None and m.query:
                    # (the run's own embedder: its question's stored vector)
                    prime_with_stored(embed, self.storage,
                                      self.data.run.thread_id or m.thread_id,
                                      self.data.persist_input.seqs, m.query)
                self._engine = RecallEngine(self.storage.memory, embed)
            scored = self._engine.score_all(
                m.query or "", thread_id=self.data.run.thread_id or m.thread_id,
                resource_id=self.data.run.resource_id, config=config,
                as_of=m.scope_snapshot or None)
            self._scored[key] = (scored, {(c.thread_id, c.seq): c for c in scored})
        return self._scored[key]

    def get(self, ref: Ref) -> CandidateScore | None:
        return self.under(self.config)[1].get(ref)

    def taken_before(self, config: RecallConfig, ref: Ref) -> tuple[int | None, int] | None:
        """Under ``config``: the message's rank and how many hits recall would take
        before it (eligible, ranked ahead, not in the window, not a repeat of the
        question); None when it would not be eligible."""
        from memory_core.recall.lexical import is_query_duplicate, lexical_terms

        if config.mode == "vector" and config.filter == self.config.filter:
            # the order of cosines holds under any bar: only who is eligible changes
            scored, by_ref = self.under(self.config)

            def eligible(c: CandidateScore) -> bool:
                return (c.rank is not None and c.score is not None
                        and c.score >= config.threshold)
        else:
            scored, by_ref = self.under(config)

            def eligible(c: CandidateScore) -> bool:
                return c.eligible
        cand = by_ref.get(ref)
        if cand is None or not eligible(cand) or cand.rank is None:
            return None
        window = window_of(self.memctx)
        ahead = [(c.thread_id, c.seq) for c in scored
                 if eligible(c) and c.rank is not None and c.rank < cand.rank
                 and (c.thread_id, c.seq) not in window]
        if config.skip_query_duplicates and ahead:
            terms = frozenset(lexical_terms(self.memctx.query or ""))
            texts = {m.ref: m.text() or "" for m in
                     self.storage.memory.get_messages_by_refs(ahead)}
            ahead = [r for r in ahead if not is_query_duplicate(
                texts.get(r, ""), terms, config.duplicate_overlap)]
        return cand.rank, len(ahead)


def recall_rules(scores: RunScores, cand: CandidateScore) -> list[Rule]:
    """The recall rules that kept a scored message out, in order: the filter, the
    threshold, then top-k with the filter and the bar lifted."""
    config = scores.config
    rules: list[Rule] = []
    lifted: dict[str, Any] = {}
    if cand.filter_clause:
        rules.append(filter_rule(config, cand.filter_clause))
        lifted["filter"] = None
    bar = threshold_rule(config, cand.score, cand.vector_score, cand.lexical_score)
    if bar is not None:
        rules.append(bar)
        if bar.needed is None:
            return rules  # no bar would admit it: top-k cannot be told
        lifted["threshold"] = bar.needed
    placed = scores.taken_before(config.model_copy(update=lifted) if lifted else config,
                                 (cand.thread_id, cand.seq))
    if placed is not None:
        rank, before = placed
        top = top_k_rule(config, rank, before + 1)
        if top is not None:
            rules.append(top)
    return rules


def recorded_recall_rules(memctx: Memctx, near: NearMiss) -> list[Rule]:
    """The recall rules of a near miss, from the run's record alone: top-k as the
    recorded ranks tell (those ahead of it that recall passed over — in the window, a
    repeat of the question — take no slot; a rank the record leaves out counts as one)."""
    config = recall_config_from_settings(memctx.settings)
    rules: list[Rule] = []
    if near.reason == "filtered-out":
        rules.append(filter_rule(config, near.filter_clause))
    bar = threshold_rule(config, near.score, near.vector_score, near.lexical_score)
    if bar is not None:
        rules.append(bar)
    if near.reason == "filtered-out" or (bar is not None and bar.needed is None):
        return rules  # its rank among the messages the filter passed is not recorded
    skipped = sum(1 for n in memctx.near_misses if n.rank < near.rank
                  and n.reason in ("already-in-window", "duplicate-of-query"))
    top = top_k_rule(config, near.rank, near.rank - skipped)
    if top is not None:
        rules.append(top)
    return rules


# -- after recall: tool pairs and the input processors -----------------------------------
#: why pairing left a message out, and that no setting would have let it in
PAIR_WORDS = {
    "unanswered-tool-call": "it is a tool call whose result was never stored, and a call "
                            "without its result would make the model provider reject the "
                            "whole prompt",
    "orphan-tool-result": "it is a tool result whose call was not in the prompt, and a "
                          "result without its call would make the model provider reject "
                          "the whole prompt",
    "duplicate-tool-call-id": "the same tool call was already in the prompt, and a "
                              "repeated call id would make the prompt invalid"}


def pair_rule(reason: str | None) -> Rule:
    """A message pairing (or a processor other than the token limiter) left out."""
    if reason == "tool-call-filter":
        return Rule(rule="dropped", said="the tool-call filter removes tool exchanges from "
                    "the prompt", admits="no tool-call filter")
    return Rule(rule="dropped", said=PAIR_WORDS.get(reason or "", f"of {reason}"))


def token_rule(memctx: Memctx, ref: Ref, kept_with: Sequence[Ref] = ()) -> Rule:
    """The token limiter removed the message: the budget at which it would have stayed
    is the prompt's size when the limiter came to it (what the prompt kept, plus every
    removal from its unit on: the limiter stops as soon as the prompt fits).
    ``kept_with`` are the rows removed with it as one unit before it (its tool call)."""
    limit = next((p.get("limit") for p in memctx.settings.processors
                  if p.get("name") == "token-limiter"), None)
    changes = memctx.processed
    at = next((i for i, p in enumerate(changes) if (p.thread_id, p.seq) == ref), None)
    if at is not None:
        while at > 0 and (changes[at - 1].thread_id, changes[at - 1].seq) in kept_with:
            at -= 1
    needed = (memctx.tokens.total + sum(p.tokens_before - p.tokens_after
                                        for p in changes[at:])
              if at is not None and isinstance(limit, int) else None)
    if needed is not None and isinstance(limit, int) and needed <= limit:
        needed = None  # the record does not add up: say no number
    return Rule(rule="trimmed-by-token-limit", setting="token_budget", value=limit,
                needed=needed, said=f"the token limiter removed it (budget "
                                    f"{value_text(limit)} tokens)",
                admits=(f"a token budget of {needed} or more" if needed is not None
                        else "a larger token budget"))
