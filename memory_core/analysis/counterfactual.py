"""Counterfactual replay on the frozen prompt: subtract recalled messages or whole
lanes (or put back a dropped message or near miss), re-run the model, and say whether
the answer changed; leave-one-out attribution is built on it.

The prompt is never re-composed: edits apply to the journaled ``<run_id>:prompt``."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memory_core.embedders import tokenize
from memory_core.errors import InvalidInputError, NotFoundError
from memory_core.journal import JournalWriter, RunData, RunKeys, RunReader, load_run
from memory_core.models.base import Model, ModelResponse, ToolSpec
from memory_core.prompt import PromptItem
from memory_core.registry import model_from_info
from memory_core.storage.base import Storage
from memory_core.types import Message, ToolResultPart, canonical_json

CF_VERSION = 1
Ref = tuple[str, int]
SUBTRACTABLE_LANES = ("recalled", "recent", "observations", "working_memory")
Verdict = Literal["changed", "unchanged", "inconclusive"]


class Variant(BaseModel):
    """What to change in the frozen prompt. ``subtract_recalled`` is "all" (exactly the
    provenance record's ``recalled`` list), a list of refs from it, or empty."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    subtract_recalled: Literal["all"] | list[tuple[str, int]] = Field(default_factory=list)
    subtract_lanes: list[str] = Field(default_factory=list)
    put_back: list[tuple[str, int]] = Field(default_factory=list)

    def key_hash(self, model_name: str, repeats: int) -> str:
        body = canonical_json({"variant": self.model_dump(mode="json"), "model": model_name,
                               "repeats": repeats})
        return hashlib.sha256(body.encode()).hexdigest()[:16]

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
        return "; ".join(parts) or "unchanged"


class CounterfactualResult(BaseModel):
    model_config = ConfigDict(extra="forbid")
    v: int = CF_VERSION
    run_id: str
    key: str
    variant: Variant
    description: str
    removed: list[tuple[str, int]] = Field(default_factory=list)
    removed_lanes: list[str] = Field(default_factory=list)
    added: list[tuple[str, int]] = Field(default_factory=list)
    original_answer: str | None
    baseline_answers: list[str]
    new_answers: list[str]
    changed: bool
    verdict: Verdict
    similarity: float  # token Jaccard of the first new answer vs the original
    model: dict[str, Any]
    notes: list[str] = Field(default_factory=list)

    @property
    def new_answer(self) -> str:
        return self.new_answers[0] if self.new_answers else ""


def _norm(text: str | None) -> str:
    return " ".join((text or "").split())


def similarity(a: str | None, b: str | None) -> float:
    ta, tb = set(tokenize(a or "")), set(tokenize(b or ""))
    if not ta and not tb:
        return 1.0
    return len(ta & tb) / len(ta | tb)


def _model_info(model: Any) -> dict[str, Any]:
    return {k: getattr(model, k) for k in ("name", "temperature", "seed")
            if getattr(model, k, None) is not None}


def _resolve_model(data: RunData, model: Model | None) -> Model:
    if model is not None:
        return model
    embed_name = data.memctx.settings.embedder if data.memctx else None
    return model_from_info(data.model_info, embed_name)


def _tool_specs(data: RunData) -> list[ToolSpec]:
    """Tools the run's model was offered, as the first step recorded them."""
    return data.steps[0].tool_specs if data.steps else []


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
    put_back: list[VariantChoice] = Field(default_factory=list)  # dropped + near misses
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


def variant_options(storage: Storage, run_id: str) -> VariantOptions:
    """The recalled refs that can be subtracted, the dropped messages and near misses
    that can be put back, and the lanes present — exactly what ``counterfactual``
    accepts for this run."""
    data = load_run(storage, run_id)
    recalled = [VariantChoice(thread_id=r.thread_id, seq=r.seq, label=r.preview)
                for r in (data.memctx.recalled if data.memctx else [])]
    present = {it.lane for it in data.prompt.items}
    return VariantOptions(recalled=recalled, put_back=_put_back_choices(data),
                          lanes=[ln for ln in SUBTRACTABLE_LANES if ln in present])


def apply_variant(storage: Storage, data: RunData, variant: Variant) -> tuple[
        list[PromptItem], list[Ref], list[str], list[Ref]]:
    """The edited prompt items plus what was removed (refs, lanes) and added."""
    items = list(data.prompt.items)
    memctx = data.memctx
    recalled_refs = [(r.thread_id, r.seq) for r in memctx.recalled] if memctx else []
    removed: list[Ref] = []
    if variant.subtract_recalled == "all":
        targets = set(recalled_refs)
    else:
        targets = set()
        for ref in variant.subtract_recalled:
            ref = (str(ref[0]), int(ref[1]))
            if ref not in recalled_refs:
                raise InvalidInputError(
                    f"{ref[0]}#{ref[1]} is not in run '{data.run.run_id}''s recalled list; "
                    "only recalled messages can be subtracted")
            targets.add(ref)
    kept: list[PromptItem] = []
    for it in items:
        if it.lane == "recalled" and it.thread_id is not None and it.seq is not None \
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
            if ref not in allowed:
                raise InvalidInputError(
                    f"{ref[0]}#{ref[1]} was neither dropped nor a near miss in run "
                    f"'{data.run.run_id}'; only those can be put back")
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
    return kept, removed, lanes, added


def _run_model(model: Model, messages: list[Message], tools: list[ToolSpec],
               data: RunData, max_steps: int = 6) -> tuple[str, list[str]]:
    """Run the model to a final answer. Tool calls are never executed: a call that the
    original run made with the same name and arguments gets its recorded result; any
    other call ends the variant with a note (re-running tools could have side effects)."""
    notes: list[str] = []
    convo = list(messages)
    recorded = {(t.name, canonical_json(t.args)): t for t in data.tools.values()}
    for _ in range(max_steps):
        resp: ModelResponse = model.complete(convo, tools)
        if not resp.tool_calls:
            return resp.text or "", notes
        convo.append(Message(role="assistant", content=[*resp.tool_calls]))
        for call in resp.tool_calls:
            rec = recorded.get((call.name, canonical_json(call.args)))
            if rec is None:
                notes.append(f"the variant asked for {call.name}({canonical_json(call.args)}), "
                             "which the original run never executed; it was not run")
                return (resp.text or f"[stopped: wanted to call {call.name}]"), notes
            convo.append(Message(role="tool", content=[ToolResultPart(
                call_id=call.id, name=call.name, result=rec.result)]))
    notes.append(f"stopped after {max_steps} model steps")
    return "", notes


def counterfactual(storage: Storage, run_id: str, *,
                   subtract: Literal["all"] | Sequence[Ref] | None = None,
                   lanes: Sequence[str] = (), put_back: Sequence[Ref] = (),
                   model: Model | None = None, repeats: int = 1) -> CounterfactualResult:
    """Re-run ``run_id``'s frozen prompt with parts taken away (or put back).

    ``subtract="all"`` removes exactly the provenance record's ``recalled`` list
    (repairs included); a list of ``(thread_id, seq)`` removes those recalled refs;
    ``lanes`` removes whole lanes; ``put_back`` re-inserts dropped messages or near
    misses. With ``repeats > 1`` the unchanged prompt is run that many times first,
    and a change counts only when the new answers fall outside that noise floor.
    The result is journaled as a counterfactual record of the run; asking again returns it.
    """
    if repeats < 1:
        raise InvalidInputError(f"repeats must be >= 1, got {repeats}")
    data = load_run(storage, run_id)
    variant = Variant(subtract_recalled="all" if subtract == "all" else
                      [(str(t), int(s)) for t, s in (subtract or [])],
                      subtract_lanes=list(lanes), put_back=[(str(t), int(s))
                                                            for t, s in put_back])
    mdl = _resolve_model(data, model)
    info = _model_info(mdl)
    digest = variant.key_hash(str(info.get('name', '?')), repeats)
    key = RunKeys(run_id).cf(digest)
    cached = RunReader(storage.runs, run_id).counterfactual(digest)
    if cached is not None:
        return CounterfactualResult.model_validate(cached)
    items, removed, removed_lanes, added = apply_variant(storage, data, variant)
    tools = _tool_specs(data)
    original = data.answer
    baseline: list[str] = []
    notes: list[str] = []
    if repeats > 1 or model is not None:
        for _ in range(repeats):
            ans, n = _run_model(mdl, data.prompt.messages(), tools, data)
            baseline.append(ans)
            notes += n
    new: list[str] = []
    for _ in range(repeats):
        ans, n = _run_model(mdl, [i.message for i in items], tools, data)
        new.append(ans)
        notes += n
    reference = {_norm(a) for a in baseline} | {_norm(original)}
    verdict: Verdict
    if baseline and len({_norm(a) for a in baseline}) > 1:
        # the unchanged prompt already gives several answers: only a new answer outside
        # all of them counts, and only if every repeat agrees
        outside = [_norm(a) not in reference for a in new]
        verdict = "changed" if all(outside) else ("unchanged" if not any(outside)
                                                  else "inconclusive")
    else:
        verdict = "changed" if any(_norm(a) not in reference for a in new) else "unchanged"
    result = CounterfactualResult(
        run_id=run_id, key=key, variant=variant, description=variant.describe(),
        removed=removed, removed_lanes=removed_lanes, added=added, original_answer=original,
        baseline_answers=baseline, new_answers=new, changed=verdict == "changed",
        verdict=verdict, similarity=round(similarity(original, new[0]), 4), model=info,
        notes=sorted(set(notes)))
    JournalWriter(storage.runs, run_id).counterfactual(digest, result.model_dump(mode="json"))
    return result


def list_counterfactuals(storage: Storage, run_id: str) -> list[CounterfactualResult]:
    """Past counterfactuals of a run, in the order they were made."""
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


def attribution(storage: Storage, run_id: str, *, model: Model | None = None,
                include_lanes: bool = False,
                progress: Callable[[int, int], None] | None = None) -> list[AttributionItem]:
    """Leave-one-out over the recalled messages (and optionally lanes): which items the
    answer depended on, most influential first."""
    data = load_run(storage, run_id)
    memctx = data.memctx
    if memctx is None:
        raise InvalidInputError(f"run '{run_id}' has no provenance record (:memctx)")
    jobs: list[tuple[str, Any]] = [("message", r) for r in memctx.recalled]
    if include_lanes:
        present = {it.lane for it in data.prompt.items}
        jobs += [("lane", lane) for lane in SUBTRACTABLE_LANES if lane in present]
    out: list[AttributionItem] = []
    for i, (kind, obj) in enumerate(jobs):
        if kind == "message":
            res = counterfactual(storage, run_id, subtract=[(obj.thread_id, obj.seq)],
                                 model=model)
            item = AttributionItem(kind="message", thread_id=obj.thread_id, seq=obj.seq,
                                   preview=obj.preview, changed=res.changed,
                                   effect=round(1 - res.similarity, 4),
                                   answer_without=res.new_answer)
        else:
            res = counterfactual(storage, run_id, lanes=[obj], model=model)
            item = AttributionItem(kind="lane", lane=obj, preview=f"the {obj} lane",
                                   changed=res.changed, effect=round(1 - res.similarity, 4),
                                   answer_without=res.new_answer)
        out.append(item)
        if progress is not None:
            progress(i + 1, len(jobs))
    return sorted(out, key=lambda a: (-int(a.changed), -a.effect, a.kind,
                                      a.thread_id or "", a.seq or 0, a.lane or ""))
