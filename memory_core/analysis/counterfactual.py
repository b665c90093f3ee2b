"""Counterfactual replay on the frozen prompt: subtract recalled messages or whole
lanes (or put back a dropped message, a near miss, or a message the run was given only
as a summary), re-run the model, and say whether the answer changed; leave-one-out
attribution is built on it.

The prompt is never re-composed: edits apply to the journaled ``<run_id>:prompt``.
Tool calls of the re-asked model are answered as ``analysis.reask`` says; a sampling
model is re-asked the unchanged prompt first, and ``analysis.noise`` judges the change."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memory_core.analysis.noise import (
    MIN_NOISE_REPEATS,
    Verdict,
    judge,
    samples_temperature,
    similarity,
)
from memory_core.analysis.reask import (
    Attempt,
    ToolBox,
    ToolUse,
    call_key,
    call_outcome,
    offered_specs,
    reask,
    recorded_calls,
)
from memory_core.composition.toolpairs import result_ids
from memory_core.errors import InvalidInputError, NotFoundError
from memory_core.journal import JournalWriter, RunData, RunKeys, RunReader, load_run
from memory_core.models.base import Model, Tool, ToolSpec, model_identity
from memory_core.provenance.prompt import PromptItem
from memory_core.runs.registry import model_from_info
from memory_core.runs.runner import Agent
from memory_core.storage.base import Storage
from memory_core.text import preview as preview_of
from memory_core.types import Message, canonical_json

if TYPE_CHECKING:
    from memory_core.composition.memory import AgentMemory
    from memory_core.provenance.record import Memctx

__all__ = ["AttributionItem", "CounterfactualResult", "ToolUse", "Variant", "VariantChoice",
           "VariantOptions", "apply_variant", "attribution", "counterfactual",
           "list_counterfactuals", "similarity", "variant_options"]

CF_VERSION = 1
Ref = tuple[str, int]
SUBTRACTABLE_LANES = ("recalled", "recent", "observations", "working_memory")
# the runner's default, for a run whose agent (and so its max_steps) is not known
DEFAULT_MAX_STEPS: int = Agent(name="default", instructions="", model=None).max_steps


class Variant(BaseModel):
    """What to change in the frozen prompt. ``subtract_recalled`` is "all" (exactly the
    provenance record's ``recalled`` list), a list of refs of stored messages the run was
    given (recalled or recent: the name is older than that), or empty."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    subtract_recalled: Literal["all"] | list[tuple[str, int]] = Field(default_factory=list)
    subtract_lanes: list[str] = Field(default_factory=list)
    put_back: list[tuple[str, int]] = Field(default_factory=list)
    # a what-if (analysis.whatif): the changed settings the prompt was composed under
    settings: dict[str, Any] = Field(default_factory=dict)

    def key_hash(self, model_name: str, repeats: int, tools: Sequence[str] = ()) -> str:
        """The digest of a counterfactual: the variant, the model, the repeats and (when
        any) the tools that could really run — a result without them is not reused
        once they are given."""
        variant = self.model_dump(mode="json", exclude={"settings"} if not self.settings
                                  else set())
        body: dict[str, Any] = {"variant": variant, "model": model_name, "repeats": repeats}
        if tools:
            body["tools"] = sorted(tools)
        return hashlib.sha256(canonical_json(body).encode()).hexdigest()[:16]

    def describe(self) -> str:
        parts = []
        if self.subtract_recalled == "all":
            parts.append("without all recalled messages")
        elif self.subtract_recalled:
            parts.append("without " + ", ".join(f"{t}#{s}" for t, s in self.subtract_recalled))
        if self.subtract_lanes:
            parts.append("without the " + ", ".join(self.subtract_lanes) + " lane(s)")
        if self.put_back:
            parts.append("with " + ", ".join(f"{t}#{s}" for t, s in self.put_back) + " put back")
        if self.settings:
            parts.append("composed with " + ", ".join(f"{k} = {v}"
                                                      for k, v in self.settings.items()))
        return "; ".join(parts) or "unchanged"


class CounterfactualResult(BaseModel):
    """The journal's counterfactual record of a run. Fields after ``notes`` came later and
    default to what older records meant."""

    model_config = ConfigDict(extra="forbid")
    v: int = CF_VERSION
    run_id: str
    key: str
    variant: Variant
    description: str
    removed: list[tuple[str, int]] = Field(default_factory=list)
    removed_lanes: list[str] = Field(default_factory=list)
    added: list[tuple[str, int]] = Field(default_factory=list)
    original_answer: str | None  # a run that ended on a tool call: that call, as text
    baseline_answers: list[str]  # the unchanged prompt, re-asked
    new_answers: list[str]
    changed: bool
    verdict: Verdict
    # content-word Jaccard of the first new answer vs the answer the verdict compares
    # it with (``similarity_to``): the original, or the first baseline answer
    similarity: float
    model: dict[str, Any]  # the model re-asked: it gave the baseline and new answers
    notes: list[str] = Field(default_factory=list)
    repeats: int = 1  # re-asks of each prompt
    temperature: float | None = None  # what the verdict assumed (None: unknown)
    sampling: bool = False  # temperature > 0 or unknown: noise was measured first
    spread: float | None = None  # largest distance among the unchanged prompt's answers
    baseline_stops: list[str] = Field(default_factory=list)  # how each re-ask ended
    new_stops: list[str] = Field(default_factory=list)
    tool_uses: list[ToolUse] = Field(default_factory=list)
    needs_tools: list[str] = Field(default_factory=list)  # wanted, but missing or refused
    # the model the run recorded, which gave ``original_answer`` (None: not said)
    recorded_model: dict[str, Any] | None = None
    # whether the re-asked model is the recorded one: only then does the original answer
    # count in the verdict (else the variant is judged against the baseline alone, which
    # the re-asked model gave); None in records written before this was said
    same_model: bool | None = None
    similarity_to: Literal["original", "baseline"] = "original"

    @property
    def new_answer(self) -> str:
        return self.new_answers[0] if self.new_answers else ""


@dataclass
class _Setup:
    """Everything a counterfactual of one run needs besides its variant."""

    data: RunData
    model: Model
    info: dict[str, Any]
    passed: bool  # the caller chose the model
    temperature: float | None
    repeats: int
    box: ToolBox
    specs: list[ToolSpec]
    original: str | None
    same_model: bool  # the original answer came from this model
    recorded: dict[str, Any]  # the model the run recorded (its identity)
    baseline: list[Attempt] | None = None  # shared by attribution's counterfactuals

    @property
    def sampling(self) -> bool:
        return samples_temperature(self.temperature)

    def needs_baseline(self) -> bool:
        """A verdict compares answers of one model: another model than the recorded one
        answers the unchanged prompt first (as does one that samples or repeats)."""
        return (self.sampling or self.passed or not self.same_model or self.repeats > 1
                or self.original is None)


def _resolve_model(data: RunData, model: Model | None) -> Model:
    if model is not None:
        return model
    embed_name = data.memctx.settings.embedder if data.memctx else None
    return model_from_info(data.model_info, embed_name)


def _number(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _toolbox(data: RunData, agent: Agent | None, tools: Sequence[Tool] | None,
             agents: Mapping[str, Agent] | None, memory: AgentMemory | None) -> ToolBox:
    for what, obj in (("agent", agent), *(("agents[" + repr(k) + "]", a)
                                          for k, a in (agents or {}).items())):
        if obj is not None and not isinstance(obj, Agent):
            raise InvalidInputError(f"{what} must be a memory_core Agent, got "
                                    f"{type(obj).__name__}")
    for i, t in enumerate(tools or []):
        if not isinstance(t, Tool):
            raise InvalidInputError(f"tools[{i}] must be a memory_core Tool, got "
                                    f"{type(t).__name__}")
    if memory is not None and not hasattr(memory, "working_memory_config"):
        raise InvalidInputError(f"memory must be an AgentMemory, got {type(memory).__name__}")
    wm = memory.working_memory_config if memory is not None else None
    chosen = agent or (agents or {}).get(data.run.agent)
    by_name = {t.name: t for t in (chosen.tools if chosen else [])}
    by_name.update({t.name: t for t in tools or []})
    out = data.output
    recorded_max = out.steps if out is not None and out.stop_reason == "max_steps" else 0
    return ToolBox(
        recorded=recorded_calls(data),
        ends_on=frozenset(call_key(c) for c in data.pending_calls),
        tools=by_name, working_memory=None if wm is None or wm.read_only else wm,
        thread_id=data.run.thread_id, resource_id=data.run.resource_id,
        max_steps=chosen.max_steps if chosen else max(recorded_max or DEFAULT_MAX_STEPS,
                                                      len(data.steps)))


def _setup(storage: Storage, run_id: str, model: Model | None, repeats: int | None, *,
           agent: Agent | None, tools: Sequence[Tool] | None,
           agents: Mapping[str, Agent] | None, memory: AgentMemory | None) -> _Setup:
    if repeats is not None and (isinstance(repeats, bool) or not isinstance(repeats, int)
                                or repeats < 1):
        raise InvalidInputError(f"repeats must be an integer >= 1, got {repeats!r}")
    data = load_run(storage, run_id)
    mdl = _resolve_model(data, model)
    ident = model_identity(mdl)
    recorded = data.model_info
    temperature = ident.temperature
    if temperature is None and model is None:
        temperature = _number(recorded.get("temperature"))
    box = _toolbox(data, agent, tools, agents, memory)
    # a run that ended on calls (its recording's end, or max steps) answered with them
    ended_on_calls = bool(data.steps and data.steps[-1].response.tool_calls)
    original = call_outcome(data.steps[-1].response) if ended_on_calls else data.answer
    n = repeats if repeats is not None else (MIN_NOISE_REPEATS
                                             if samples_temperature(temperature) else 1)
    return _Setup(data=data, model=mdl, info=ident.model_dump(exclude_none=True),
                  passed=model is not None, temperature=temperature, repeats=n, box=box,
                  specs=offered_specs(data, box), original=original,
                  same_model=model is None or ident.name == recorded.get("name"),
                  recorded={k: v for k, v in recorded.items() if v is not None})


class VariantChoice(BaseModel):
    """A message a variant can take out or put back, with a label for pickers."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    thread_id: str
    seq: int
    label: str


class VariantOptions(BaseModel):
    """What a counterfactual of one run can change."""

    model_config = ConfigDict(extra="forbid")
    recalled: list[VariantChoice] = Field(default_factory=list)  # subtractable refs
    # every other stored message the prompt held (the recent window; all of an imported
    # run's history): subtractable too, one by one
    given: list[VariantChoice] = Field(default_factory=list)
    # dropped, near misses, and messages the run was given only as a summary
    put_back: list[VariantChoice] = Field(default_factory=list)
    lanes: list[str] = Field(default_factory=list)  # lanes present in the prompt


def _put_back_choices(data: RunData) -> list[VariantChoice]:
    """Dropped messages, then near misses that are not already in the prompt."""
    m = data.memctx
    if m is None:
        return []
    in_prompt = {(it.thread_id, it.seq) for it in data.prompt.items if it.thread_id is not None}
    out: dict[tuple[str, int], VariantChoice] = {}
    for d in m.dropped:
        out.setdefault((d.thread_id, d.seq), VariantChoice(
            thread_id=d.thread_id, seq=d.seq, label=f"dropped ({d.reason}): {d.preview}"))
    for n in m.near_misses:
        if (n.thread_id, n.seq) not in in_prompt:
            out.setdefault((n.thread_id, n.seq), VariantChoice(
                thread_id=n.thread_id, seq=n.seq,
                label=f"near miss ({n.reason}, {n.score:.2f}): {n.preview}"))
    return list(out.values())


def _summarised_into(memctx: Memctx | None, ref: Ref) -> str | None:
    """The observation a message of the run's own thread was condensed into before the
    run (the run was given only the summary of it), else None."""
    return next((o.id for o in (memctx.observations if memctx else [])
                 if memctx is not None and ref[0] == memctx.thread_id
                 and o.from_seq is not None and o.to_seq is not None
                 and o.from_seq <= ref[1] <= o.to_seq), None)


def _summarised_choices(storage: Storage, data: RunData) -> list[VariantChoice]:
    m = data.memctx
    if m is None:
        return []
    in_prompt = {(it.thread_id, it.seq) for it in data.prompt.items if it.thread_id is not None}
    seqs = sorted({seq for o in m.observations if o.from_seq is not None
                   and o.to_seq is not None for seq in range(o.from_seq, o.to_seq + 1)})
    msgs = storage.memory.get_messages(m.thread_id, seqs=seqs) if seqs else []
    return [VariantChoice(thread_id=x.thread_id, seq=x.seq, label=(
        f"summarised ({_summarised_into(m, (x.thread_id, x.seq))}): {preview_of(x)}"))
        for x in msgs if (x.thread_id, x.seq) not in in_prompt]


def variant_options(storage: Storage, run_id: str) -> VariantOptions:
    """The recalled refs that can be subtracted, the dropped messages and near misses
    that can be put back, and the lanes present — exactly what ``counterfactual``
    accepts for this run."""
    data = load_run(storage, run_id)
    recalled = [VariantChoice(thread_id=r.thread_id, seq=r.seq, label=r.preview)
                for r in (data.memctx.recalled if data.memctx else [])]
    shown = {(c.thread_id, c.seq) for c in recalled}
    given: dict[Ref, VariantChoice] = {}
    for it in data.prompt.items:  # (as ``attribution`` takes them out, one by one)
        if it.lane in ("input", "recalled") or it.thread_id is None or it.seq is None \
                or (it.thread_id, it.seq) in shown:
            continue
        given.setdefault((it.thread_id, it.seq), VariantChoice(
            thread_id=it.thread_id, seq=it.seq, label=preview_of(it.message)))
    present = {it.lane for it in data.prompt.items}
    listed = _put_back_choices(data)
    known = {(c.thread_id, c.seq) for c in listed}
    listed += [c for c in _summarised_choices(storage, data)
               if (c.thread_id, c.seq) not in known]
    return VariantOptions(recalled=recalled, given=list(given.values()), put_back=listed,
                          lanes=[ln for ln in SUBTRACTABLE_LANES if ln in present])


def apply_variant(storage: Storage, data: RunData, variant: Variant) -> tuple[
        list[PromptItem], list[Ref], list[str], list[Ref]]:
    """The edited prompt items plus what was removed (refs, lanes) and added."""
    items = list(data.prompt.items)
    memctx = data.memctx
    recalled_refs = [(r.thread_id, r.seq) for r in memctx.recalled] if memctx else []
    given = {(it.thread_id, it.seq) for it in items
             if it.lane != "input" and it.thread_id is not None and it.seq is not None}
    removed: list[Ref] = []
    if variant.subtract_recalled == "all":
        targets = set(recalled_refs)
    else:
        targets = set()
        for ref in variant.subtract_recalled:
            ref = (str(ref[0]), int(ref[1]))
            if ref not in given:
                raise InvalidInputError(
                    f"{ref[0]}#{ref[1]} is not a stored message run '{data.run.run_id}' was "
                    "given; only those (recalled or recent) can be taken away")
            targets.add(ref)
    kept: list[PromptItem] = []
    for it in items:
        if it.lane != "input" and it.thread_id is not None and it.seq is not None \
                and (it.thread_id, it.seq) in targets:
            removed.append((it.thread_id, it.seq))
            continue
        kept.append(it)
    lanes = []
    for lane in variant.subtract_lanes:
        if lane not in SUBTRACTABLE_LANES:
            raise InvalidInputError(
                f"unknown lane {lane!r}; choose from {', '.join(SUBTRACTABLE_LANES)}")
        lanes.append(lane)
        for it in kept:
            if it.lane == lane and it.thread_id is not None and it.seq is not None:
                if lane != "recalled" or (it.thread_id, it.seq) in recalled_refs:
                    removed.append((it.thread_id, it.seq))
        kept = [it for it in kept if it.lane != lane
                or (lane == "recalled" and (it.thread_id, it.seq) not in recalled_refs)]
    added: list[Ref] = []
    if variant.put_back:
        allowed = {(c.thread_id, c.seq) for c in _put_back_choices(data)}
        present = {(it.thread_id, it.seq) for it in kept if it.thread_id is not None}
        new_items: list[tuple[Any, int, PromptItem]] = []
        for ref in variant.put_back:
            ref = (str(ref[0]), int(ref[1]))
            if ref not in allowed and _summarised_into(memctx, ref) is None:
                raise InvalidInputError(
                    f"{ref[0]}#{ref[1]} was neither dropped nor a near miss in run "
                    f"'{data.run.run_id}', nor given to it only as a summary; only those "
                    "can be put back")
            if ref in present:
                continue
            msgs = storage.memory.get_messages(ref[0], seqs=[ref[1]])
            if not msgs:
                raise NotFoundError(f"message {ref[0]}#{ref[1]} is no longer stored")
            m = msgs[0]
            new_items.append((m.created_at, m.seq, PromptItem(
                lane="recalled", message=m.as_message(), thread_id=m.thread_id, seq=m.seq,
                origin="put-back")))
            added.append(ref)
        # insert after the last existing recalled item (or before recent/input)
        insert_at = max((i + 1 for i, it in enumerate(kept) if it.lane == "recalled"),
                        default=next((i for i, it in enumerate(kept)
                                      if it.lane in ("recent", "input")), len(kept)))
        for _, _, it in sorted(new_items, key=lambda x: (x[0], x[1])):
            kept.insert(insert_at, it)
            insert_at += 1
    kept, orphaned = whole_exchanges(kept)
    removed += [r for r in orphaned if r not in removed]
    return kept, removed, lanes, added


def whole_exchanges(items: list[PromptItem]) -> tuple[list[PromptItem], list[Ref]]:
    """The items with every tool exchange the edit cut in two taken out whole: a call
    whose result was subtracted, or a result (the input, say) whose call was, would
    make a model provider reject the prompt. Returns the items kept and the stored
    refs that went with them."""
    kept = list(items)
    while True:
        calls = {c.id for it in kept for c in it.message.tool_calls()}
        answered = {cid for it in kept for cid in result_ids(it.message)}
        broken = [it for it in kept
                  if (it.message.tool_calls()
                      and not {c.id for c in it.message.tool_calls()} <= answered)
                  or any(cid not in calls for cid in result_ids(it.message))
                  or (it.message.role == "tool" and not result_ids(it.message))]
        if not broken:
            break
        kept = [it for it in kept if it not in broken]
    gone = [(it.thread_id, it.seq) for it in items if it not in kept
            and it.thread_id is not None and it.seq is not None]
    return kept, gone


def _attempts(storage: Storage, setup: _Setup, messages: list[Message], cf_key: str,
              kind: str, reuse: bool = True) -> list[Attempt]:
    return [reask(setup.model, messages, setup.specs, setup.box, storage, cf_key,
                  f"{kind}-{i + 1}", reuse=reuse) for i in range(setup.repeats)]


def _tool_notes(attempts: Sequence[Attempt]) -> list[str]:
    notes: list[str] = []
    for a in attempts:
        for u in a.tool_uses:
            if u.source in ("missing", "refused"):
                notes.append(f"needs tool {u.name}: the re-asked model called "
                             f"{u.name}({canonical_json(u.args)}); {u.reason}")
            elif u.source == "run" and u.reason:
                notes.append(f"{u.name} {u.reason}")
        if a.stop == "max_steps":
            notes.append("a re-ask stopped after the maximum number of model steps")
    return notes


def _judged(setup: _Setup, base: list[Attempt],
            new: list[Attempt]) -> tuple[Verdict, float | None, list[str]]:
    """The verdict on the variant's answers, against answers of the same model only:
    the baseline (the unchanged prompt re-asked), and the original answer when the
    re-asked model is the one that gave it. Without a baseline of that model no verdict
    is given: answers of two models differ whatever the prompt."""
    notes = _tool_notes(base + new)
    if any(a.stop in ("needs_tool", "refused") for a in base + new):
        return "inconclusive", None, notes
    reference = [a.answer for a in base]
    if setup.original is not None and setup.same_model:
        reference.append(setup.original)
    if not reference and setup.original is not None:
        name = setup.info.get("name", "?")
        return "inconclusive", None, notes + [
            f"the original answer came from {setup.recorded.get('name', 'another model')}, "
            f"the new one from {name}; answers of two models are not compared: the "
            f"unchanged prompt must be re-asked with {name} first"]
    j = judge(reference, [a.answer for a in new], sampling=setup.sampling,
              baseline_repeats=len(base))
    return j.verdict, j.spread, notes + j.notes


def _run_variant(storage: Storage, setup: _Setup, variant: Variant, *,
                 reuse: bool = True,
                 composed: tuple[list[PromptItem], list[Ref], list[Ref]] | None = None,
                 ) -> CounterfactualResult:
    data = setup.data
    run_id = data.run.run_id
    digest = variant.key_hash(str(setup.info.get("name", "?")), setup.repeats,
                              setup.box.available())
    key = RunKeys(run_id).cf(digest)
    cached = RunReader(storage.runs, run_id).counterfactual(digest) if reuse else None
    if cached is not None:
        return CounterfactualResult.model_validate(cached)
    removed_lanes: list[str] = []
    if composed is not None:  # a what-if's prompt, with what left and entered it
        items, removed, added = composed
    else:
        items, removed, removed_lanes, added = apply_variant(storage, data, variant)
    if setup.baseline is None:
        setup.baseline = (_attempts(storage, setup, data.prompt.messages(), key, "baseline",
                                    reuse) if setup.needs_baseline() else [])
    base = setup.baseline
    new = _attempts(storage, setup, [i.message for i in items], key, "variant", reuse)
    verdict, spread, notes = _judged(setup, base, new)
    uses = [u for a in base + new for u in a.tool_uses]
    # the similarity shown beside the verdict: with the answer it is judged against
    to_baseline = not setup.same_model and bool(base)
    compared = base[0].answer if to_baseline else setup.original
    result = CounterfactualResult(
        run_id=run_id, key=key, variant=variant, description=variant.describe(),
        removed=removed, removed_lanes=removed_lanes, added=added,
        original_answer=setup.original, baseline_answers=[a.answer for a in base],
        new_answers=[a.answer for a in new], changed=verdict == "changed", verdict=verdict,
        similarity=round(similarity(compared, new[0].answer), 4), model=setup.info,
        notes=list(dict.fromkeys(notes)), repeats=setup.repeats,
        temperature=setup.temperature, sampling=setup.sampling, spread=spread,
        baseline_stops=[a.stop for a in base], new_stops=[a.stop for a in new],
        tool_uses=uses,
        needs_tools=sorted({u.name for u in uses if u.source in ("missing", "refused")}),
        recorded_model=setup.recorded or None, same_model=setup.same_model,
        similarity_to="baseline" if to_baseline else "original")
    # first write wins: asked again (reuse=False), the journal keeps the first result;
    # the result and its seal commit together (a crash leaves no result unsealed)
    with storage.write_batch():
        JournalWriter(storage.runs, run_id).counterfactual(digest,
                                                           result.model_dump(mode="json"))
    return result


def counterfactual(storage: Storage, run_id: str, *,
                   subtract: Literal["all"] | Sequence[Ref] | None = None,
                   lanes: Sequence[str] = (), put_back: Sequence[Ref] = (),
                   model: Model | None = None, repeats: int | None = None,
                   agent: Agent | None = None, tools: Sequence[Tool] | None = None,
                   agents: Mapping[str, Agent] | None = None,
                   memory: AgentMemory | None = None,
                   reuse: bool = True) -> CounterfactualResult:
    """Re-run ``run_id``'s frozen prompt with parts taken away (or put back).

    ``subtract="all"`` removes exactly the provenance record's ``recalled`` list
    (repairs included); a list of ``(thread_id, seq)`` removes those recalled refs;
    ``lanes`` removes whole lanes; ``put_back`` re-inserts dropped messages, near
    misses, or messages of the run's thread condensed into observations before it (word
    for word, beside the summary). ``model`` defaults to the one the run recorded (``registry``).

    ``repeats`` (default: 1 for a model at temperature 0, else 3) is how often each
    prompt is asked; a model that samples is asked the unchanged prompt first, and the
    verdict is "changed" only when every new answer lies beyond those answers' own
    spread, "inconclusive" when they already disagree (see ``analysis.noise``).

    Tool calls: an identical call of the original run gets its recorded result; another
    runs the real tool from ``tools``, ``agent`` or the run's agent in ``agents``,
    journaled under the result's key; the working-memory tool only runs against a
    scratch copy (needs ``memory``); otherwise the re-ask stops and the result names
    the tool it needs. The result is journaled as the run's counterfactual record; asking
    again returns it, unless ``reuse=False``: then the model is really asked again and
    the fresh result returned, while the journal keeps the first (first write wins), so
    a caller can check a recorded result still holds.
    """
    setup = _setup(storage, run_id, model, repeats, agent=agent, tools=tools, agents=agents,
                   memory=memory)
    variant = Variant(subtract_recalled="all" if subtract == "all" else
                      [(str(t), int(s)) for t, s in (subtract or [])],
                      subtract_lanes=list(lanes), put_back=[(str(t), int(s))
                                                            for t, s in put_back])
    return _run_variant(storage, setup, variant, reuse=reuse)


def reask_composed(storage: Storage, run_id: str, items: Sequence[PromptItem],
                   settings: Mapping[str, Any], *, removed: Sequence[Ref] = (),
                   added: Sequence[Ref] = (), model: Model | None = None,
                   repeats: int | None = None, reuse: bool = True) -> CounterfactualResult:
    """Re-ask ``run_id`` with a prompt composed anew under changed ``settings`` (a
    what-if, ``analysis.whatif``), judged against its recorded answer as a
    counterfactual is, and journaled under its own key (the settings are part of it):
    asked again, it returns the record; interrupted, it resumes without asking the
    model again for an answer already journaled."""
    setup = _setup(storage, run_id, model, repeats, agent=None, tools=None, agents=None,
                   memory=None)
    variant = Variant(settings=dict(settings))
    return _run_variant(storage, setup, variant, reuse=reuse,
                        composed=(list(items), list(removed), list(added)))


def list_counterfactuals(storage: Storage, run_id: str) -> list[CounterfactualResult]:
    """Past counterfactuals of a run, in the order they were made (the tool records
    journaled below each result are not results themselves)."""
    storage.runs.require_run(run_id)
    return [CounterfactualResult.model_validate(v)
            for v in RunReader(storage.runs, run_id).counterfactuals()]


class AttributionItem(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["message", "lane"]
    thread_id: str | None = None
    seq: int | None = None
    lane: str | None = None
    preview: str = ""
    changed: bool
    effect: float  # 1 - similarity(original, answer without it); 0 means no effect
    answer_without: str
    verdict: Verdict = "unchanged"
    key: str | None = None  # the counterfactual record behind this item


def attribution(storage: Storage, run_id: str, *, model: Model | None = None,
                include_lanes: bool = False,
                progress: Callable[[int, int], None] | None = None,
                repeats: int | None = None, agent: Agent | None = None,
                tools: Sequence[Tool] | None = None,
                agents: Mapping[str, Agent] | None = None,
                memory: AgentMemory | None = None) -> list[AttributionItem]:
    """Leave-one-out over every stored message the run was given — recalled and recent,
    on composed and imported runs alike — (and optionally over lanes): which items the
    answer depended on, most influential first. Each item is a ``counterfactual`` with
    the same settings; the unchanged prompt is re-asked once for all of them. A tool
    exchange goes as a whole (taking away a call takes its results)."""
    setup = _setup(storage, run_id, model, repeats, agent=agent, tools=tools, agents=agents,
                   memory=memory)
    jobs: list[tuple[Variant, AttributionItem]] = []
    seen: set[Ref] = set()
    for it in setup.data.prompt.items:
        if it.lane == "input" or it.thread_id is None or it.seq is None:
            continue
        ref = (it.thread_id, it.seq)
        if ref in seen:
            continue
        seen.add(ref)
        jobs.append((Variant(subtract_recalled=[ref]), AttributionItem(
            kind="message", thread_id=ref[0], seq=ref[1], lane=it.lane,
            preview=preview_of(it.message), changed=False, effect=0.0, answer_without="")))
    if include_lanes:
        present = {it.lane for it in setup.data.prompt.items}
        jobs += [(Variant(subtract_lanes=[lane]), AttributionItem(
            kind="lane", lane=lane, preview=f"the {lane} lane", changed=False, effect=0.0,
            answer_without="")) for lane in SUBTRACTABLE_LANES if lane in present]
    out: list[AttributionItem] = []
    for i, (variant, item) in enumerate(jobs):
        res = _run_variant(storage, setup, variant)
        out.append(item.model_copy(update={
            "changed": res.changed, "verdict": res.verdict, "key": res.key,
            "effect": round(1 - res.similarity, 4), "answer_without": res.new_answer}))
        if progress is not None:
            progress(i + 1, len(jobs))
    return sorted(out, key=lambda a: (-int(a.changed), -a.effect, a.kind,
                                      a.thread_id or "", a.seq or 0, a.lane or ""))
