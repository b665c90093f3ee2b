"""The lane-by-lane view of one run the run inspector shows (``run_view``): the prompt's
lanes with what reached the model and what was left out, recall's candidates in rank
order, the steps, tool calls and the recorded call."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memory_core.analysis.recorded import RecordedCall, recorded_call
from memory_core.analysis.rendering import (
    VIEW_LANES,
    _json_text,
    render_text,
    run_answer,
    tool_call_text,
)
from memory_core.errors import MemoryCoreError, NotFoundError
from memory_core.journal import RunReader, RunStep
from memory_core.journal.records import ImportRecord
from memory_core.provenance.prompt import FrozenPrompt, PromptItem
from memory_core.provenance.record import (
    CompositionSettings,
    Memctx,
    MessageRef,
    ObservationRef,
)
from memory_core.recall.results import NearMiss
from memory_core.storage.base import Storage
from memory_core.text import PREVIEW_CHARS
from memory_core.tokens import estimate_tokens
from memory_core.types import (
    RunRecord,
    StoredMessage,
    TextPart,
)


# -- one run ----------------------------------------------------------------------------
class ObservationSource(BaseModel):
    model_config = ConfigDict(frozen=True)
    observation_id: str
    thread_id: str
    level: int
    from_seq: int | None
    to_seq: int | None


class LaneItem(BaseModel):
    model_config = ConfigDict(frozen=True)
    lane: str
    role: str
    text: str
    thread_id: str | None = None
    seq: int | None = None
    observation_id: str | None = None
    sources: list[ObservationSource] = Field(default_factory=list)
    score: float | None = None
    # the cosine, where the score is another (hybrid recall's fused score): the one
    # recall's threshold applies to
    similarity: float | None = None
    # hybrid recall's word score (BM25 against the question): above 0, the message
    # shares a word with it, which lets it in whatever its similarity
    lexical: float | None = None
    rank: int | None = None
    origin: str | None = None
    reason: str | None = None
    tokens: int = 0
    # who wrote it, where the message names them (a multi-agent conversation's agent,
    # an OpenAI message's ``name``)
    name: str | None = None
    # a tool result its tool reported as an error (the message's ``is_error``: the
    # model was told so, as Anthropic's and LangChain's results say)
    error: bool = False


def error_result(metadata: Mapping[str, Any] | None) -> bool:
    """Whether a message is a tool result its tool reported as an error (its
    ``is_error``, which the model was told)."""
    return (metadata or {}).get("is_error") is True


def speaker_name(metadata: Mapping[str, Any] | None) -> str | None:
    """The ``name`` a message carries in its metadata (the agent or participant that
    wrote it), when it is a non-empty string."""
    name = (metadata or {}).get("name")
    return name if isinstance(name, str) and name.strip() else None


def _similarity(ref: MessageRef | NearMiss | None, memctx: Memctx | None) -> float | None:
    """The cosine beside a hybrid run's fused score (shown even where the two are
    equal: a row in neither list scores 0 whatever its cosine); None in other modes."""
    if ref is None or ref.vector_score is None:
        return None
    rc = memctx.settings.recall if memctx is not None else None
    if rc is not None and rc.mode == "hybrid":
        return ref.vector_score
    return None if ref.vector_score == ref.score else ref.vector_score


def _lexical(ref: MessageRef | NearMiss, memctx: Memctx) -> float | None:
    """A hybrid run's word score of ``ref`` (None in other modes)."""
    rc = memctx.settings.recall
    return ref.lexical_score if rc is not None and rc.mode == "hybrid" else None


class LaneView(BaseModel):
    model_config = ConfigDict(frozen=True)
    lane: str
    items: list[LaneItem]
    tokens: int
    total_count: int  # for dropped: the uncapped count from memctx


class ScoreCandidate(BaseModel):
    """One point of the score chart: a recall hit or a near miss."""

    model_config = ConfigDict(frozen=True)
    thread_id: str
    seq: int
    rank: int
    score: float
    status: Literal["hit", "below-threshold", "beyond-top-k", "filtered-out",
                    "already-in-window", "duplicate-of-query", "dropped"]
    preview: str
    filter_clause: str | None = None
    reason: str | None = None  # "dropped": why composition left the hit out
    # the cosine, where the score is another (hybrid recall's fused score): the one
    # recall's threshold applies to
    similarity: float | None = None
    # hybrid recall's word score (BM25 against the question): above 0, the message
    # shares a word with it, which lets it in whatever its similarity
    lexical: float | None = None


# why composition left a stored message out of the prompt (``MessageRef.reason``), in words
DROP_REASON_WORDS: dict[str, str] = {
    "unanswered-tool-call": "a tool call without its result",
    "orphan-tool-result": "a tool result without its call",
    "duplicate-tool-call-id": "its tool call id was already in the prompt",
    "token-limit": "trimmed by the token limiter",
    "tool-call-filter": "removed by the tool-call filter",
}


def drop_reason_text(reason: str | None) -> str:
    """A dropped row's reason in words (the code itself when it is not one we know)."""
    return DROP_REASON_WORDS.get(reason or "", reason or "no reason recorded")


class StepView(BaseModel):
    model_config = ConfigDict(frozen=True)
    n: int
    text: str | None
    tool_calls: list[str]
    model: dict[str, Any]
    input_tokens: int
    output_tokens: int
    finish_reason: str | None
    usage_known: bool = True  # False: an imported step whose recording had no usage


class ToolCallView(BaseModel):
    model_config = ConfigDict(frozen=True)
    call_id: str
    name: str
    args: str
    status: str
    result: str
    error: str | None


class RunView(BaseModel):
    model_config = ConfigDict(frozen=True)
    run: RunRecord
    error: str | None
    query: str | None
    lanes: list[LaneView]
    settings: dict[str, Any]
    threshold: float | None
    top_k: int | None
    candidates: list[ScoreCandidate]
    # "vector", "lexical" or "hybrid" (None: no recall configured); hybrid recall also
    # takes a message below the threshold that shares a word with the question
    recall_mode: str | None = None
    recall_skipped: str | None
    steps: list[StepView]
    tool_calls: list[ToolCallView]
    answer: str | None
    notes: list[str]
    recorded: RecordedCall | None = None  # an imported run: what its recording says
    imported: bool = False  # from a recording: no memory settings, scores or drops
    # the provenance record's fields its writer could not know (``Memctx.unknown_fields``)
    unknown_fields: list[str] = Field(default_factory=list)

    def ranked(self) -> list[ScoreCandidate]:
        """Every recall candidate in rank order: ``candidates`` plus the hits that
        composition then dropped (status "dropped", with the reason), so a chart of
        them starts at rank 1."""
        dropped = [ScoreCandidate(thread_id=i.thread_id, seq=i.seq, rank=i.rank,
                                  score=i.score, status="dropped",
                                  preview=" ".join(i.text.split())[:PREVIEW_CHARS],
                                  reason=i.reason, similarity=i.similarity)
                   for i in self.lane("dropped").items
                   if i.thread_id is not None and i.seq is not None and i.rank is not None
                   and i.score is not None and i.origin in (None, "hit")]
        return sorted([*self.candidates, *dropped],
                      key=lambda c: (c.rank, -c.score, c.thread_id, c.seq))

    def lane(self, name: str) -> LaneView:
        for lv in self.lanes:
            if lv.lane == name:
                return lv
        raise NotFoundError(f"lane '{name}' does not exist; lanes are {list(VIEW_LANES)}")

    @property
    def total_tokens(self) -> int:
        return sum(lv.tokens for lv in self.lanes if lv.lane != "dropped")


def _ref_key(thread_id: str | None, seq: int | None) -> tuple[str, int] | None:
    return None if thread_id is None or seq is None else (thread_id, seq)


def _lane_items(storage: Storage, prompt: FrozenPrompt | None,
                memctx: Memctx | None) -> dict[str, list[LaneItem]]:
    recalled_refs: dict[tuple[str, int], MessageRef] = {}
    obs_refs: dict[str, ObservationRef] = {}
    if memctx is not None:
        recalled_refs = {(r.thread_id, r.seq): r for r in memctx.recalled}
        obs_refs = {o.id: o for o in memctx.observations}
    lanes: dict[str, list[LaneItem]] = {lane: [] for lane in VIEW_LANES}
    for item in (prompt.items if prompt is not None else []):
        lanes[item.lane].append(_lane_item(item, recalled_refs, obs_refs, memctx))
    if memctx is not None:
        lanes["dropped"] = _dropped_items(storage, memctx)
    return lanes


def _lane_item(item: PromptItem, recalled_refs: dict[tuple[str, int], MessageRef],
               obs_refs: dict[str, ObservationRef], memctx: Memctx | None) -> LaneItem:
    text = render_text(item.message)
    ref = None
    key = _ref_key(item.thread_id, item.seq)
    if key is not None:
        ref = recalled_refs.get(key) if item.lane == "recalled" else None
    sources: list[ObservationSource] = []
    if item.lane == "observations" and memctx is not None:
        # one observations message may carry several observations; without an id on the
        # item it stands for all of them
        picked = ([obs_refs[item.observation_id]] if item.observation_id in obs_refs
                  else list(memctx.observations))
        sources = [ObservationSource(observation_id=o.id, thread_id=o.thread_id,
                                     level=o.level, from_seq=o.from_seq, to_seq=o.to_seq)
                   for o in picked]
    role: str = item.message.role
    if role == "system" and item.message.metadata.get("openai_role") == "developer":
        role = "developer"  # (stored as a system message: shown as it was sent)
    return LaneItem(
        lane=item.lane, role=role, text=text, thread_id=item.thread_id,
        seq=item.seq, observation_id=item.observation_id, sources=sources,
        score=ref.score if ref else None, similarity=_similarity(ref, memctx),
        rank=ref.rank if ref else None, origin=item.origin or (ref.origin if ref else None),
        # (the estimate of what the prompt's lane counts: an attachment's is not known)
        tokens=estimate_tokens(render_text(item.message, attachments=False)),
        name=speaker_name(item.message.metadata),
        error=error_result(item.message.metadata))


def _dropped_items(storage: Storage, memctx: Memctx) -> list[LaneItem]:
    refs = memctx.dropped
    full: dict[tuple[str, int], StoredMessage] = {}
    by_thread: dict[str, list[int]] = {}
    for r in refs:
        by_thread.setdefault(r.thread_id, []).append(r.seq)
    for tid, seqs in by_thread.items():
        for m in storage.memory.get_messages(tid, seqs=seqs):
            full[(m.thread_id, m.seq)] = m
    out: list[LaneItem] = []
    for r in refs:
        stored = full.get((r.thread_id, r.seq))
        # the message may have been erased since; the preview is what provenance kept
        text = render_text(stored) if stored is not None else r.preview
        out.append(LaneItem(lane="dropped", role=r.role, text=text, thread_id=r.thread_id,
                            seq=r.seq, reason=r.reason, score=r.score,
                            similarity=_similarity(r, memctx), rank=r.rank, origin=r.origin,
                            tokens=estimate_tokens(text if stored is None else render_text(
                                stored, attachments=False)),
                            name=speaker_name(stored.metadata if stored else None),
                            error=error_result(stored.metadata if stored else None)))
    return out


def _lane_tokens(lane: str, items: list[LaneItem], memctx: Memctx | None) -> int:
    if memctx is not None and lane != "dropped":
        return int(getattr(memctx.tokens, lane))
    return sum(i.tokens for i in items)


def _candidates(memctx: Memctx | None, prompt: FrozenPrompt | None) -> list[ScoreCandidate]:
    if memctx is None:
        return []
    # a near miss the prompt holds in its recent window or input was never left out
    # (records written before recall named the window first say "below-threshold",
    # "filtered-out" …)
    held = {(i.thread_id, i.seq) for i in (prompt.items if prompt is not None else [])
            if i.lane in ("recent", "input")}
    out: list[ScoreCandidate] = []
    for r in memctx.recalled:
        if r.origin in (None, "hit") and r.score is not None and r.rank is not None:
            out.append(ScoreCandidate(thread_id=r.thread_id, seq=r.seq, rank=r.rank,
                                      score=r.score, status="hit", preview=r.preview,
                                      similarity=_similarity(r, memctx),
                                      lexical=_lexical(r, memctx)))
    for nm in memctx.near_misses:
        status = "already-in-window" if (nm.thread_id, nm.seq) in held and nm.reason in (
            "below-threshold", "beyond-top-k", "filtered-out") else nm.reason
        out.append(ScoreCandidate(thread_id=nm.thread_id, seq=nm.seq, rank=nm.rank,
                                  score=nm.score, status=status, preview=nm.preview,
                                  filter_clause=nm.filter_clause,
                                  similarity=_similarity(nm, memctx),
                                  lexical=_lexical(nm, memctx)))
    # a filtered-out row's record holds where it would have gone among the rows the
    # filter passed, which every such row above the first hit shares (five read "rank
    # 1"): it is said as its rank with the filter lifted, as why-forgotten counts it —
    # every row recorded with a higher score goes before it (the other filtered-out
    # rows, a window row the filter did not pass), and every row its record counted
    every = sorted(out, key=lambda c: (-c.score, c.rank, c.thread_id, c.seq))
    place = {id(c): i + 1 for i, c in enumerate(every)}
    filtered = [c for c in every if c.status == "filtered-out"]
    lifted = {id(c): max(c.rank + i, place[id(c)]) for i, c in enumerate(filtered)}
    out = [c.model_copy(update={"rank": lifted[id(c)]}) if id(c) in lifted else c
           for c in out]
    # within a rank, the higher score first: the order recall ranked them in
    return sorted(out, key=lambda c: (c.rank, -c.score, c.thread_id, c.seq))


def _steps(steps: Sequence[RunStep]) -> list[StepView]:
    out: list[StepView] = []
    for step in steps:
        resp = step.response
        # the answer's text parts one a line, as stored (``resp.text`` joins a recorded
        # answer of several parts with spaces)
        texts = [p.text for p in resp.as_message().parts if isinstance(p, TextPart)]
        out.append(StepView(n=step.index, text="\n".join(texts) if texts else resp.text,
                            tool_calls=[tool_call_text(c) for c in resp.tool_calls],
                            model=step.model.model_dump(mode="json"),
                            input_tokens=resp.usage.input_tokens,
                            output_tokens=resp.usage.output_tokens,
                            finish_reason=resp.finish_reason, usage_known=step.record.usage_known))
    return out


def _tool_calls(reader: RunReader) -> list[ToolCallView]:
    return [ToolCallView(call_id=call_id, name=t.name, args=_json_text(t.args or {}),
                         status=t.status, result=_json_text(t.result), error=t.error)
            for call_id, t in reader.tools().items()]


UNKNOWN_SETTING = "unknown (not in the record)"


def _known_settings(memctx: Memctx | None) -> dict[str, Any]:
    """The run's settings as the Settings table shows them: a setting the record could
    not know (``unknown_fields``) reads ``UNKNOWN_SETTING``, never a placeholder value;
    an imported run's ``embedder`` is kept (it embedded its messages in this database)."""
    if memctx is None:
        return {}
    flat = memctx.settings.flat()
    return {k: v if not memctx.is_unknown_setting(k)
            or (k == "embedder" and memctx.imported) else UNKNOWN_SETTING
            for k, v in flat.items()}


def _truncated(storage: Storage, run_id: str) -> list[tuple[str, int]]:
    """The stored messages of the run a truncation removed (SPEC §2.7), from its seal."""
    from memory_core.journal.seal import read_seal

    try:
        seal = read_seal(storage, run_id)
    except (MemoryCoreError, ValueError):
        return []  # a damaged seal is the badge's to report
    return list(seal.truncated) if seal is not None else []


def _these(n: int) -> str:
    return "no message" if n == 0 else "this one message" if n == 1 \
        else f"these {n} messages"


def _imported_note(record: ImportRecord | None, shown: int, instructed: int) -> str:
    """What an imported run's prompt is: what the client sent, or — for a Responses API
    request that sent ``previous_response_id`` instead of its history — which of the
    prompt's messages the server held and were reconstructed from an earlier record
    (importing.md, "history held server-side"); then what the import noted of this
    call (a thinking block not imported, a stream reassembled), the first few — the
    note of an empty answer first, which says why the answer shown is empty."""
    noted = sorted(record.notes if record is not None else [],
                   key=lambda n: ": the answer is empty" not in n)
    more = f"; and {len(noted) - _NOTES_SHOWN} more" if len(noted) > _NOTES_SHOWN else ""
    return _prompt_said(record, shown, instructed) + (
        f". The import noted: {'; '.join(noted[:_NOTES_SHOWN])}{more}" if noted else "")


_NOTES_SHOWN = 5  # (a call can gather dozens: each the CLI's import report lists)


def _prompt_said(record: ImportRecord | None, shown: int, instructed: int) -> str:
    """``shown``: the prompt's items, ``instructed`` of them its instructions (said
    apart: Anthropic's, Gemini's and Responses' requests send them outside their
    messages)."""
    head = ("imported run: this recording does not say whether memory recalled anything "
            "— it holds what the client sent the model and what came back, not memory "
            "settings, recall scores or what was left out; ")
    held = record.held_history() if record is not None else None
    by = record.instructions_applied_by() if record is not None else None
    sent = _these(shown - instructed) + (
        f" beside the instructions the server applied ({by})" if instructed and by
        else " beside its instructions" if instructed else "")
    if held is None:
        return head + f"the client sent {sent}"
    unrecorded = (f"; the history before {held['unrecorded']} is not in the recording"
                  if held.get("unrecorded") else "")
    span = held.get("prompt_messages") or [0, 0]
    if not held.get("reconstructed_from") or span[1] <= span[0]:
        return (head + f"the client sent {sent} and referred to the rest "
                f"of the conversation by {held['reference']}, held by the server"
                + unrecorded)
    lo, hi = int(span[0]), int(span[1])
    return (head + f"the client sent {shown - (hi - lo)} of these {shown} messages; "
            f"messages {lo + 1}–{hi} were held by the server ({held['reference']}) and "
            f"are reconstructed from {held['reconstructed_from']} of the recording"
            + unrecorded)


def run_view(storage: Storage, run_id: str) -> RunView:
    """Everything the run inspector shows about one run, from its journal."""
    run = storage.runs.require_run(run_id)
    reader = RunReader(storage.runs, run_id)
    prompt, memctx = reader.prompt(), reader.memctx()
    record = reader.import_record() if memctx is not None and memctx.imported else None
    notes: list[str] = []
    if prompt is None:
        notes.append(f"run '{run_id}' has no frozen prompt in the journal "
                     f"(status {run.status}): it never reached composition")
    if memctx is None:
        notes.append(f"run '{run_id}' has no provenance record ('{reader.keys.memctx}'): "
                     "scores, dropped items and near misses are unknown")
    elif memctx.imported:
        items_sent = prompt.items if prompt is not None else []
        notes.append(_imported_note(record, len(items_sent), sum(
            1 for it in items_sent if it.lane == "instructions")))
    elif memctx.messages_only:
        from memory_core.composition.other_memory import NO_PROVENANCE

        notes.append(NO_PROVENANCE)
    gone = _truncated(storage, run_id)
    if gone:
        notes.append(f"{len(gone)} message(s) this run stored were removed since by a "
                     f"truncation of the thread (seq {', '.join(str(q) for _, q in gone)}); "
                     "its records are kept and still verify")
    items = _lane_items(storage, prompt, memctx)
    lanes = [LaneView(lane=lane, items=items[lane], tokens=_lane_tokens(lane, items[lane], memctx),
                      total_count=(memctx.dropped_count if lane == "dropped" and memctx
                                   else len(items[lane])))
             for lane in VIEW_LANES]
    settings: CompositionSettings | None = memctx.settings if memctx else None
    steps = reader.steps()
    return RunView(
        run=run, error=run.error, query=memctx.query if memctx else None,
        lanes=lanes, settings=_known_settings(memctx),
        threshold=(settings.recall.threshold if settings and settings.recall
                   and memctx and not memctx.is_unknown_setting("threshold") else None),
        top_k=(settings.recall.top_k if settings and settings.recall
               and memctx and not memctx.is_unknown_setting("top_k") else None),
        candidates=_candidates(memctx, prompt),
        recall_mode=settings.recall.mode if settings and settings.recall else None,
        recall_skipped=memctx.recall_skipped if memctx else None,
        steps=_steps(steps), tool_calls=_tool_calls(reader), notes=notes,
        answer=run_answer(steps, reader.output()),
        recorded=recorded_call(record, memctx, steps, run.agent),
        imported=bool(memctx and memctx.imported),
        unknown_fields=list(memctx.unknown_fields) if memctx else [])
