"""Input processors (SPEC §6.6 step 4): a chain applied to the composed lanes before
the prompt is frozen — a token limiter and a tool-call filter — each change recorded.

A processor takes the ``Draft`` the composition stages filled and returns a new one
with the ``Processed`` records of what it removed or shortened. Processors never touch
the instructions or the turn's input: the input is what the user asked, and a prompt
without it answers a different question. Tool exchanges are removed whole (a call
with its results), so a processor never leaves a split exchange the provider refuses.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, runtime_checkable

from memory_core.composition.stages import (
    Draft,
    Observed,
    RecallLane,
    SystemBlock,
    Trimmed,
    Window,
    observations_block,
)
from memory_core.composition.toolpairs import KeptRow
from memory_core.errors import InvalidInputError
from memory_core.provenance.record import Processed
from memory_core.types import Message, StoredMessage, TextPart, ToolCallPart, ToolResultPart

__all__ = ["DEFAULT_PRIORITY", "InputProcessor", "TokenBudgetExceeded", "TokenLimiter",
           "ToolCallFilter", "run_processors"]

log = logging.getLogger(__name__)

Count = Callable[[Sequence[Message]], int]

#: which lane gives way first when the prompt is over budget: recall is the most
#: speculative lane, then the condensed past, then the oldest of the recent window;
#: working memory (the agent's own state) last. Instructions and input never give way.
DEFAULT_PRIORITY: tuple[str, ...] = ("recalled", "observations", "recent", "working_memory")
TRIMMABLE = frozenset(DEFAULT_PRIORITY)
TOKEN_LIMIT = "token-limit"
TOOL_CALL_FILTER = "tool-call-filter"
SHORTENED_MARK = "\n…"


class TokenBudgetExceeded(InvalidInputError):
    """The instructions and the input alone exceed the token budget (``on_overflow="fail"``)."""


@runtime_checkable
class InputProcessor(Protocol):
    """Anything with a ``name``, its ``settings()`` for provenance, and ``process``."""

    name: str

    def settings(self) -> dict[str, Any]: ...

    def process(self, draft: Draft, count: Count) -> tuple[Draft, list[Processed]]: ...


def run_processors(draft: Draft, processors: Sequence[InputProcessor], count: Count) -> Draft:
    """Apply the chain in order, each seeing what the previous one left; the draft
    comes back with ``processed`` (every change) and ``trimmed`` (the stored rows
    removed, which provenance lists as dropped with the processor's reason)."""
    for p in processors:
        rows: dict[tuple[str, int], tuple[StoredMessage, Any]] = {
            **{k.message.ref: (k.message, k.source) for k in draft.recall.kept},
            **{r.ref: (r, None) for r in draft.window.rows}}
        after, changes = p.process(draft, count)
        trimmed = [Trimmed(rows[(c.thread_id, c.seq)][0], c.lane,
                           TOKEN_LIMIT if p.name == TokenLimiter.name else p.name,
                           rows[(c.thread_id, c.seq)][1])
                   for c in changes if c.action == "removed" and c.thread_id is not None
                   and c.seq is not None and (c.thread_id, c.seq) in rows]
        draft = replace(after, processed=[*draft.processed, *changes],
                        trimmed=[*draft.trimmed, *trimmed])
    return draft


# -- units: what is removed together ----------------------------------------------------
@dataclass(frozen=True)
class _Unit:
    lane: str
    rows: tuple[StoredMessage, ...]
    score: float  # recalled: the best score in the unit (neighbours/repairs: 0)
    position: int


def _units(lane: str, rows: Sequence[StoredMessage],
           scores: Sequence[float | None]) -> list[_Unit]:
    """Rows grouped so that a tool call and the rows answering it form one unit."""
    groups: list[list[int]] = []
    open_ids: set[str] = set()
    for i, m in enumerate(rows):
        results = {r.call_id for r in m.tool_results()}
        if groups and results and not m.tool_calls() and results <= open_ids:
            groups[-1].append(i)
            continue
        groups.append([i])
        open_ids = {c.id for c in m.tool_calls()}
    return [_Unit(lane, tuple(rows[i] for i in g),
                  max((scores[i] or 0.0) for i in g), n) for n, g in enumerate(groups)]


def _without(draft: Draft, removed: set[tuple[str, int]], lane: str) -> Draft:
    if lane == "recent":
        rows = [r for r in draft.window.rows if r.ref not in removed]
        return replace(draft, window=Window(rows=rows, dropped=draft.window.dropped))
    kept = [k for k in draft.recall.kept if k.message.ref not in removed]
    return replace(draft, recall=replace(draft.recall, kept=kept))


# -- the token limiter ---------------------------------------------------------------------
class TokenLimiter:
    """Keep the prompt within ``limit`` tokens (the model's budget) by letting lanes
    give way in ``priority`` order: recalled units lowest score first, observations
    oldest first, recent units oldest first, and the working-memory block shortened
    (or removed when nothing of it fits). ``on_overflow`` says what happens when the
    instructions and input alone exceed the limit: ``"pass"`` sends them anyway (every
    other lane removed, ``Memctx.over_budget`` records the excess and a warning is
    logged), ``"fail"`` raises ``TokenBudgetExceeded`` before anything is written."""

    name = "token-limiter"

    def __init__(self, limit: int, *, priority: Sequence[str] = DEFAULT_PRIORITY,
                 on_overflow: str = "pass") -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidInputError(f"token budget must be an integer >= 1, got {limit!r}")
        bad = [p for p in priority if p not in TRIMMABLE]
        if bad or len(set(priority)) != len(priority):
            raise InvalidInputError(
                f"priority {list(priority)!r} must name distinct lanes among "
                f"{sorted(TRIMMABLE)} (instructions and input never give way)")
        if on_overflow not in ("pass", "fail"):
            raise InvalidInputError(f"on_overflow must be 'pass' or 'fail', got {on_overflow!r}")
        self.limit = limit
        self.priority = tuple(priority)
        self.on_overflow = on_overflow

    def settings(self) -> dict[str, Any]:
        return {"name": self.name, "limit": self.limit, "priority": list(self.priority),
                "on_overflow": self.on_overflow}

    def process(self, draft: Draft, count: Count) -> tuple[Draft, list[Processed]]:
        done: list[Processed] = []
        for lane in self.priority:
            excess = total_tokens(draft, count) - self.limit
            if excess <= 0:
                break
            if lane in ("recalled", "recent"):
                draft = self._trim_rows(draft, lane, excess, count, done)
            elif lane == "observations":
                draft = self._trim_observations(draft, excess, count, done)
            else:
                draft = self._shorten_working_memory(draft, excess, count, done)
        excess = total_tokens(draft, count) - self.limit
        if excess > 0:
            if self.on_overflow == "fail":
                raise TokenBudgetExceeded(
                    f"the instructions and input alone take {excess} tokens more than the "
                    f"token budget of {self.limit}; raise the budget or shorten the input")
            log.warning("prompt is %d tokens over the budget of %d: instructions and input "
                        "never give way", excess, self.limit)
        return draft, done

    def _reason(self) -> str:
        return f"over the token budget of {self.limit}"

    def _trim_rows(self, draft: Draft, lane: str, excess: int, count: Count,
                   done: list[Processed]) -> Draft:
        if lane == "recent":
            units = _units(lane, draft.window.rows, [None] * len(draft.window.rows))
        else:
            kept = draft.recall.kept
            units = sorted(_units(lane, [k.message for k in kept],
                                  [k.source.score if k.source else None for k in kept]),
                           key=lambda u: (u.score, u.position))
        removed: set[tuple[str, int]] = set()
        for unit in units:
            if excess <= 0:
                break
            for row in unit.rows:
                before = count([row])
                excess -= before
                removed.add(row.ref)
                done.append(Processed(processor=self.name, lane=lane,  # type: ignore[arg-type]
                                      thread_id=row.thread_id, seq=row.seq, action="removed",
                                      tokens_before=before, tokens_after=0,
                                      reason=self._reason()))
        return _without(draft, removed, lane)

    def _trim_observations(self, draft: Draft, excess: int, count: Count,
                           done: list[Processed]) -> Draft:
        observed = draft.observed
        if observed is None or observed.block is None:
            return draft
        kept = list(observed.block.observations)
        while kept and excess > 0:
            o = kept.pop(0)
            before = count([Message(role="system", content=o.text)])
            excess -= before
            done.append(Processed(processor=self.name, lane="observations",
                                  thread_id=o.thread_id, observation_id=o.id,
                                  action="removed", tokens_before=before, tokens_after=0,
                                  reason=self._reason()))
        return replace(draft, observed=Observed(observed.observed_seq,
                                                observations_block(kept)))

    def _shorten_working_memory(self, draft: Draft, excess: int, count: Count,
                                done: list[Processed]) -> Draft:
        block = draft.working_memory
        if block is None:
            return draft
        text = block.message.text() or ""
        before = count([block.message])
        target = before - excess
        lo, hi = 0, len(text)  # the longest prefix whose shortened block fits the target
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if count([Message(role="system", content=text[:mid] + SHORTENED_MARK)]) <= target:
                lo = mid
            else:
                hi = mid - 1
        if lo == 0:
            done.append(Processed(processor=self.name, lane="working_memory", action="removed",
                                  tokens_before=before, tokens_after=0, reason=self._reason()))
            return replace(draft, working_memory=None)
        msg = Message(role="system", content=text[:lo] + SHORTENED_MARK)
        done.append(Processed(processor=self.name, lane="working_memory", action="shortened",
                              tokens_before=before, tokens_after=count([msg]),
                              reason=self._reason()))
        return replace(draft, working_memory=SystemBlock(msg))


def total_tokens(draft: Draft, count: Count) -> int:
    """The draft's prompt size as ``assemble`` counts it, lane by lane."""
    system = [b.message for b in (draft.working_memory,
                                  draft.observed.block if draft.observed else None) if b]
    if draft.instructions:
        system.append(Message(role="system", content=draft.instructions))
    return (sum(count([m]) for m in system) + count([k.message for k in draft.recall.kept])
            + count(draft.window.rows) + count(draft.trim.incoming))


# -- the tool-call filter ------------------------------------------------------------------
class ToolCallFilter:
    """Remove tool exchanges from the history lanes (recalled and recent): every tool
    (``exclude=None``) or only the named ones. A message that also carries text keeps
    its text and loses the filtered parts (shortened); a pure call/result message is
    removed. The turn's input is never filtered."""

    name = TOOL_CALL_FILTER

    def __init__(self, exclude: Sequence[str] | None = None) -> None:
        if isinstance(exclude, str) or (exclude is not None and not all(
                isinstance(n, str) and n for n in exclude)):
            raise InvalidInputError(
                f"exclude must be a list of tool names or None, got {exclude!r}")
        self.exclude = None if exclude is None else tuple(exclude)

    def settings(self) -> dict[str, Any]:
        return {"name": self.name,
                "exclude": None if self.exclude is None else list(self.exclude)}

    def _matches(self, name: str) -> bool:
        return self.exclude is None or name in self.exclude

    def process(self, draft: Draft, count: Count) -> tuple[Draft, list[Processed]]:
        rows = [*(k.message for k in draft.recall.kept), *draft.window.rows]
        ids = {c.id for m in rows for c in m.tool_calls() if self._matches(c.name)}
        done: list[Processed] = []

        def filtered(lane: str, m: StoredMessage) -> StoredMessage | None:
            parts = m.parts
            keep = [p for p in parts if not (
                (isinstance(p, ToolCallPart) and p.id in ids)
                or (isinstance(p, ToolResultPart)
                    and (p.call_id in ids or self._matches(p.name))))]
            if len(keep) == len(parts):
                return m
            before = count([m])
            out = (m.model_copy(update={"content": keep})
                   if any(isinstance(p, TextPart) for p in keep) else None)
            done.append(Processed(
                processor=self.name, lane=lane, thread_id=m.thread_id,  # type: ignore[arg-type]
                seq=m.seq, action="shortened" if out else "removed", tokens_before=before,
                tokens_after=count([out]) if out else 0,
                reason="tool calls filtered" if self.exclude is None
                else f"tool calls of {', '.join(self.exclude)} filtered"))
            return out

        kept: list[KeptRow[Any]] = []
        for k in draft.recall.kept:
            f = filtered("recalled", k.message)
            if f is not None:
                kept.append(KeptRow(f, k.source))
        recent = [f for r in draft.window.rows if (f := filtered("recent", r)) is not None]
        draft = replace(draft, recall=RecallLane(
            kept=kept, dropped=draft.recall.dropped, near_misses=draft.recall.near_misses,
            scope_snapshot=draft.recall.scope_snapshot, skipped=draft.recall.skipped),
            window=Window(rows=recent, dropped=draft.window.dropped))
        return draft, done


def processors_from_settings(recorded: Sequence[dict[str, Any]]) -> list[InputProcessor]:
    """The input processors a provenance record lists (``CompositionSettings.processors``),
    rebuilt; InvalidInputError naming a processor that is not one of ours (its code is
    not in the record)."""
    out: list[InputProcessor] = []
    for entry in recorded:
        name = entry.get("name")
        if name == TokenLimiter.name:
            out.append(TokenLimiter(entry["limit"], priority=entry.get("priority",
                                                                       DEFAULT_PRIORITY),
                                    on_overflow=entry.get("on_overflow", "pass")))
        elif name == TOOL_CALL_FILTER:
            out.append(ToolCallFilter(entry.get("exclude")))
        else:
            raise InvalidInputError(f"input processor {name!r} is not one of memory_core's; "
                                    "it cannot be rebuilt from the record")
    return out
