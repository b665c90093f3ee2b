"""The stages of composing one turn's prompt (``AgentMemory.load_context``), each with
one job and explicit inputs and outputs, so each can be read and tested alone:

1. ``trim_input`` — echo-trim and retry-dedupe the incoming messages (SPEC §6.6);
2. ``working_memory_lane`` — the rendered working-memory block;
3. ``observation_lane`` — compact, then the active observations and what they cover;
4. ``recent_window`` — the tail (or the unobserved messages), opened at the call of any
   result it holds, with what still cannot pair dropped;
5. ``recall_skip`` / ``run_recall`` — whether recall runs, and its hits and near misses;
6. ``pair_recalled`` — the recalled rows as whole tool exchanges;
7. ``processors.run_processors`` — the input processors (token limiter, tool-call
   filter) trim the lanes, each change recorded (SPEC §6.6 step 4);
8. ``assemble`` — the lanes, their token counts and the provenance record (Memctx).

The stages fill a ``Draft`` that ``assemble`` turns into the ``Composition``;
``compose_turn`` runs stages 4 to 8 in that order from what stages 1 to 3 gave, for the
live composer (``AgentMemory``) and the as-of one (``analysis.whatif``) alike.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memory_core.composition.toolpairs import (
    DroppedRow,
    KeptRow,
    open_at_calls,
    pair_tool_calls,
)
from memory_core.provenance.prompt import Composition, FrozenPrompt, PromptItem
from memory_core.provenance.record import (
    PROVENANCE_DROPPED_CAP,
    PROVENANCE_RECENT_CAP,
    CompositionSettings,
    LaneTokens,
    Memctx,
    MessageRef,
    ObservationRef,
    Processed,
)
from memory_core.recall.results import NearMiss
from memory_core.storage.base import MemoryStore
from memory_core.text import PREVIEW_CHARS, preview, structural_text
from memory_core.types import Message, Observation, StoredMessage, Thread

if TYPE_CHECKING:
    from memory_core.composition.observational import ObservationalMemory
    from memory_core.composition.working_memory import WorkingMemory
    from memory_core.recall.config import RecallConfig
    from memory_core.recall.engine import RecallEngine
    from memory_core.recall.results import RecallHit

# why recall did not run (Memctx.recall_skipped)
SKIP_OFF = "recall off"
SKIP_OBSERVATIONAL = "observational memory"
SKIP_NO_QUERY = "no query"
SKIP_NO_EMBEDDER = "no embedder"
SKIP_FITS = "thread fits in window"

Count = Callable[[Sequence[Message]], int]


def token_text(message: Message) -> str:
    """What the token counter sees of a message: text parts, and tool parts in their
    structural form (unclipped), joined by spaces."""
    return structural_text(message)


@dataclass(frozen=True)
class Turn:
    """Whom the turn composes for: the thread as read at its start and its resource."""

    thread_id: str
    resource_id: str | None
    thread: Thread


# -- 1. input --------------------------------------------------------------------------
@dataclass(frozen=True)
class InputTrim:
    incoming: list[Message]  # the new input, after echo-trim
    echo_trimmed: int  # leading given messages taken as re-sent history
    deduped: int  # trailing stored rows that are this input (a retry): not history
    history_end: int  # last seq of history (-1: none)
    history_count: int
    tail: list[StoredMessage]  # the stored tail, read once for the window

    @property
    def query(self) -> str | None:
        """The last user text of the input: what recall searches with."""
        return next((m.text() for m in reversed(self.incoming)
                     if m.role == "user" and m.text()), None)


def trim_input(store: MemoryStore, thread_id: str, given: list[Message],
               recent_n: int) -> InputTrim:
    """Echo-trim (SPEC §6.6.2: a client re-sending the conversation) and de-duplicate
    against the stored tail (§6.6.3: rows already stored are the input, not history,
    so a retry composes what the first attempt composed; a thread holding nothing but
    this input, written by one run, is a retried first turn and is not trimmed)."""
    history_len = store.count_messages(thread_id)
    tail = store.get_tail(thread_id, recent_n + len(given))
    if (given and history_len == len(given) and _ends_with(tail, given)
            and len({m.run_id for m in tail}) == 1 and tail[0].run_id is not None):
        incoming, echo_trimmed, deduped = given, 0, len(given)
    else:
        incoming, echo_trimmed = given, 0
        if history_len > 0:
            last = max((i for i, m in enumerate(given) if m.role in ("assistant", "tool")),
                       default=-1)
            incoming, echo_trimmed = given[last + 1:], last + 1
        deduped = len(incoming) if incoming and _ends_with(tail, incoming) else 0
    if deduped:
        history_end = tail[len(tail) - deduped].seq - 1
    else:
        history_end = tail[-1].seq if tail else store.max_seq(thread_id)
    return InputTrim(incoming=list(incoming), echo_trimmed=echo_trimmed, deduped=deduped,
                     history_end=history_end, history_count=history_len - deduped, tail=tail)


def _ends_with(tail: Sequence[StoredMessage], messages: Sequence[Message]) -> bool:
    """Whether the stored tail ends with exactly these messages (role, content and
    metadata), i.e. they were already persisted."""
    if not messages or len(tail) < len(messages):
        return False
    stored = tail[len(tail) - len(messages):]
    return all(a.as_message().canonical_json() == b.canonical_json()
               for a, b in zip(stored, messages, strict=True))


# -- 2. working memory, 3. observations ----------------------------------------------------
@dataclass(frozen=True)
class SystemBlock:
    """A lane made of one system message (working memory, observations)."""

    message: Message
    observations: list[Observation] = field(default_factory=list)


def working_memory_lane(wm: WorkingMemory, turn: Turn) -> SystemBlock:
    return SystemBlock(Message(role="system", content=wm.render(turn.thread_id,
                                                                turn.resource_id)))


@dataclass(frozen=True)
class Observed:
    observed_seq: int  # messages up to here are covered by observations
    block: SystemBlock | None  # None: no active observation
    # buffering handed compaction off (SPEC §8.1): the lane holds what was ready
    pending: bool = False


def observation_lane(om: ObservationalMemory, thread_id: str,
                     hand_off: Callable[[str], object] | None = None) -> Observed:
    """Compact (or, buffering, hand compaction to ``hand_off`` when over the threshold
    and use what is ready), then the active observations and what they cover."""
    pending = False
    if hand_off is None:
        om.compact(thread_id)
    elif om.needs_compaction(thread_id):
        hand_off(thread_id)
        pending = True
    return Observed(om.observed_seq(thread_id), observations_block(om.active(thread_id)),
                    pending)


def observations_block(observations: Sequence[Observation]) -> SystemBlock | None:
    """SPEC §8.1: ``# Observations`` and the texts joined by newlines; None for none."""
    if not observations:
        return None
    text = "# Observations\n" + "\n".join(o.text for o in observations)
    return SystemBlock(Message(role="system", content=text), list(observations))


# -- 4. recent window --------------------------------------------------------------------
@dataclass(frozen=True)
class Window:
    rows: list[StoredMessage]  # the recent lane, in seq order
    dropped: list[DroppedRow[StoredMessage]] = field(default_factory=list)

    @property
    def refs(self) -> frozenset[tuple[str, int]]:
        """Every row the window covered, dropped ones included: recall leaves them
        out, so a row the window could not pair is not recalled (and dropped) again."""
        return frozenset([*(s.ref for s in self.rows), *(d.message.ref for d in self.dropped)])


def recent_window(store: MemoryStore, thread_id: str, trim: InputTrim, recent_n: int,
                  observed_seq: int | None = None) -> Window:
    """The last ``recent_n`` history messages, or with observational memory every
    message after ``observed_seq`` (SPEC §8.7). A window never splits a tool exchange:
    it opens at the call of any result it holds (so it may exceed ``recent_n``), and
    what still cannot pair (a call without its results, a result whose call does not
    exist) is dropped with its reason."""
    end = trim.history_end
    if observed_seq is not None:
        raw = store.get_messages(thread_id, from_seq=observed_seq + 1, to_seq=end) \
            if end > observed_seq else []
    else:
        raw = [s for s in trim.tail if s.seq <= end][-recent_n:] if recent_n else []
    rows = open_at_calls(list(raw), lambda a, b: store.get_messages(
        thread_id, from_seq=a, to_seq=b))
    paired = pair_tool_calls(rows, message_of=lambda m: m, window=(),
                             read_thread=lambda _tid: rows)
    return Window(rows=[k.message for k in paired.kept], dropped=paired.dropped)


# -- 5. recall, 6. tool pairing -----------------------------------------------------------
def recall_skip(config: RecallConfig | None, *, observational: bool, query: str | None,
                has_embedder: bool, history_count: int, recent_n: int) -> str | None:
    """Why recall does not run this turn, or None when it runs."""
    if observational:
        return SKIP_OBSERVATIONAL if config is not None else SKIP_OFF
    if config is None:
        return SKIP_OFF
    if not query:
        return SKIP_NO_QUERY
    if not has_embedder and config.mode != "lexical":
        return SKIP_NO_EMBEDDER
    if history_count <= recent_n and config.scope != "resource":
        return SKIP_FITS
    return None


@dataclass
class RecallLane:
    kept: list[KeptRow[RecallHit]] = field(default_factory=list)
    dropped: list[DroppedRow[RecallHit]] = field(default_factory=list)
    near_misses: list[NearMiss] = field(default_factory=list)
    scope_snapshot: dict[str, int] = field(default_factory=dict)
    skipped: str | None = None


def run_recall(engine: RecallEngine, store: MemoryStore, turn: Turn, trim: InputTrim,
               window: Window, config: RecallConfig,
               as_of: dict[str, int] | None = None) -> RecallLane:
    """Recall for the turn's query, the window's rows excluded. A retried turn (its
    input already stored) ranks as its first attempt did, before that input existed;
    ``as_of`` (each scope thread's last seq) ranks as of any past moment (a what-if)."""
    assert trim.query is not None
    if as_of is None and trim.deduped:
        scope = engine.scope_threads(turn.thread_id, turn.resource_id, config,
                                     thread=turn.thread)
        stats = store.thread_stats(scope)  # one query for the scope's max seqs
        as_of = {t: stats.get(t, (0, -1))[1] for t in scope}
        as_of[turn.thread_id] = trim.history_end
    outcome = engine.run(trim.query, thread_id=turn.thread_id, resource_id=turn.resource_id,
                         config=config, window=window.refs, as_of=as_of, thread=turn.thread)
    # the engine already removes window rows; checked again because a stray one would
    # show twice in the prompt
    hits = [h for h in outcome.hits if (h.thread_id, h.seq) not in window.refs]
    return RecallLane(kept=[KeptRow(h.message, h) for h in hits],
                      near_misses=list(outcome.near_misses),
                      scope_snapshot=dict(outcome.scope_snapshot), skipped=outcome.skipped)


def pair_recalled(store: MemoryStore, lane: RecallLane, window: Window,
                  incoming: Sequence[Message] = ()) -> RecallLane:
    """The recalled rows as whole tool exchanges (``toolpairs.pair_tool_calls``), none
    reusing a call id of the window or the input; a repair only ever looks after its
    call, so each thread is read from its earliest recalled call, not from seq 0."""
    hits = [k.source for k in lane.kept if k.source is not None]
    first_call: dict[str, int] = {}
    for h in hits:
        if h.message.tool_calls():
            first_call[h.thread_id] = min(first_call.get(h.thread_id, h.seq), h.seq)
    pairing = pair_tool_calls(
        hits, message_of=lambda h: h.message, window=window.rows,
        read_thread=lambda tid: store.get_messages(tid, from_seq=first_call.get(tid, -1) + 1),
        also=incoming)
    return RecallLane(kept=pairing.kept, dropped=pairing.dropped,
                      near_misses=lane.near_misses, scope_snapshot=lane.scope_snapshot,
                      skipped=lane.skipped)


# -- 7. assembly ------------------------------------------------------------------------
@dataclass
class Draft:
    """Everything the stages decided for one turn, before assembly."""

    turn: Turn
    trim: InputTrim
    window: Window
    recall: RecallLane
    instructions: str | None = None
    working_memory: SystemBlock | None = None
    observed: Observed | None = None
    # what the input processors changed, and the stored rows they removed (with the
    # recall hit each came from, None for recent rows and repairs)
    processed: list[Processed] = field(default_factory=list)
    trimmed: list[Trimmed] = field(default_factory=list)


@dataclass(frozen=True)
class Trimmed:
    """A stored row an input processor removed from its lane."""

    message: StoredMessage
    lane: str
    reason: str
    source: RecallHit | None = None


def assemble(draft: Draft, *, settings: CompositionSettings, count: Count,
             count_text: Callable[[str], int]) -> Composition:
    """The prompt, lane by lane, and its provenance record."""
    items: list[PromptItem] = []
    tokens = LaneTokens()
    if draft.instructions:
        msg = Message(role="system", content=draft.instructions)
        items.append(PromptItem(lane="instructions", message=msg))
        tokens.instructions = count([msg])
    if draft.working_memory is not None:
        items.append(PromptItem(lane="working_memory", message=draft.working_memory.message))
        tokens.working_memory = count([draft.working_memory.message])
    block = draft.observed.block if draft.observed else None
    if block is not None:
        items.append(PromptItem(lane="observations", message=block.message,
                                observation_id=",".join(o.id for o in block.observations)))
        tokens.observations = count([block.message])
    for kept in draft.recall.kept:
        m = kept.message
        items.append(PromptItem(lane="recalled", message=m.as_message(), thread_id=m.thread_id,
                                seq=m.seq, origin=_origin(kept)))
    tokens.recalled = count([k.message for k in draft.recall.kept])
    items += [PromptItem(lane="recent", message=s.as_message(), thread_id=s.thread_id,
                         seq=s.seq) for s in draft.window.rows]
    tokens.recent = count(draft.window.rows)
    items += [PromptItem(lane="input", message=m) for m in draft.trim.incoming]
    tokens.input = count(draft.trim.incoming)
    memctx = provenance(draft, settings=settings, tokens=tokens, count_text=count_text)
    return Composition(prompt=FrozenPrompt(items=items), memctx=memctx,
                       incoming=[] if draft.trim.deduped else list(draft.trim.incoming))


def compose_turn(store: MemoryStore, turn: Turn, trim: InputTrim, *, recent_n: int,
                 instructions: str | None, working_memory: SystemBlock | None,
                 observed: Observed | None, recall: Callable[[Window], RecallLane],
                 process: Callable[[Draft], Draft] | None, settings: CompositionSettings,
                 count: Count, count_text: Callable[[str], int]) -> Composition:
    """Stages 4 to 8 in composition's order: the recent window (after what the
    observations cover), ``recall`` of that window (stages 5 and 6), the input
    processors (``process``, when there are any), then assembly."""
    window = recent_window(store, turn.thread_id, trim, recent_n,
                           observed.observed_seq if observed else None)
    draft = Draft(turn=turn, trim=trim, window=window, recall=recall(window),
                  instructions=instructions, working_memory=working_memory,
                  observed=observed)
    if process is not None:
        draft = process(draft)
    return assemble(draft, settings=settings, count=count, count_text=count_text)


def provenance(draft: Draft, *, settings: CompositionSettings, tokens: LaneTokens,
               count_text: Callable[[str], int]) -> Memctx:
    """The Memctx record of a draft (SPEC §6)."""
    turn, trim, recall, window = draft.turn, draft.trim, draft.recall, draft.window
    budget = next((p.get("limit") for p in settings.processors
                   if p.get("name") == "token-limiter"), None)
    dropped = ([_ref(d.message, lane="recent", reason=d.reason) for d in window.dropped]
               + [_ref(d.message, score=d.source.score, rank=d.source.rank,
                       origin=d.source.origin, lane="recalled", reason=d.reason)
                  for d in recall.dropped]
               + [_trimmed_ref(t) for t in draft.trimmed])
    observations = draft.observed.block.observations if (
        draft.observed and draft.observed.block) else []
    extra: dict[str, Any] = {}
    if dropped:
        extra = {"dropped_count": len(dropped), "dropped": dropped[:PROVENANCE_DROPPED_CAP]}
    return Memctx(
        thread_id=turn.thread_id, resource_id=turn.resource_id, query=trim.query,
        recall_skipped=recall.skipped, recalled=[_recalled_ref(k) for k in recall.kept],
        recent_count=len(window.rows),
        recent=[_ref(s) for s in window.rows[-PROVENANCE_RECENT_CAP:]],
        near_misses=recall.near_misses, observation_count=len(observations),
        observations=[_obs_ref(o, count_text) for o in observations],
        working_memory_chars=(len(draft.working_memory.message.text() or "")
                              if draft.working_memory else 0),
        tokens=tokens, settings=settings, incoming_count=len(trim.incoming),
        echo_trimmed=trim.echo_trimmed,
        scope_snapshot=recall.scope_snapshot or {turn.thread_id: trim.history_end},
        processed=list(draft.processed), over_budget=max(0, tokens.total - budget)
        if budget is not None else 0,
        observations_pending=bool(draft.observed and draft.observed.pending), **extra)


def _trimmed_ref(t: Trimmed) -> MessageRef:
    src = t.source
    return _ref(t.message, score=src.score if src else None, rank=src.rank if src else None,
                origin=(src.origin if src else "repair") if t.lane == "recalled" else None,
                lane=t.lane, reason=t.reason)


def _origin(kept: KeptRow[RecallHit]) -> str:
    return "repair" if kept.source is None else kept.source.origin


def _recalled_ref(kept: KeptRow[RecallHit]) -> MessageRef:
    src = kept.source
    if src is None:
        return _ref(kept.message, origin="repair")
    return _ref(kept.message, score=src.score, rank=src.rank, vector_score=src.vector_score,
                lexical_score=src.lexical_score, origin=src.origin)


def _ref(m: StoredMessage, **fields: Any) -> MessageRef:
    return MessageRef(thread_id=m.thread_id, seq=m.seq, role=m.role, preview=preview(m),
                      **fields)


def _obs_ref(o: Observation, count_text: Callable[[str], int]) -> ObservationRef:
    text = " ".join(o.text.split())
    return ObservationRef(id=o.id, thread_id=o.thread_id, level=o.level,
                          from_seq=o.from_seq, to_seq=o.to_seq, preview=text[:PREVIEW_CHARS],
                          tokens=int(count_text(o.text)))
