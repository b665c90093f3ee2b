"""What if a memory setting had been different? Every chosen past run composed again,
as of the time it ran, under changed settings, and compared with what it was given.

A run is re-composed from the store as it was when the run started: each thread of its
scope only up to the seq it had then (the run's recall snapshot where it recorded one,
else the messages created before the run started); working memory and observations as
the run's frozen prompt holds them (the store keeps no history of them, so a change
that needs their past — turning them on — cannot be answered for that run, and says
so). The run is first re-composed with its own settings: when that does not give its
recorded prompt, a change could not be told from drift, and the run is reported as one
that cannot be re-composed, never guessed at. Imported runs were not composed by us;
they are reported likewise.

Without a model this is composition only, fast and free; with one, the runs whose prompt
changed are re-asked and their answers judged (``memwb whatif --model``; the workbench
page "What if")."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memory_core.analysis.counterfactual import CounterfactualResult, reask_composed
from memory_core.analysis.stored_vectors import prime_with_stored
from memory_core.analysis.whatif_reads import ReadOnce, Threads, tail_upto
from memory_core.analysis.wording import RECALL_WAS_OFF, score_text
from memory_core.composition.processors import (
    DEFAULT_PRIORITY,
    TokenLimiter,
    processors_from_settings,
    run_processors,
)
from memory_core.composition.stages import (
    InputTrim,
    Observed,
    RecallLane,
    SystemBlock,
    Turn,
    Window,
    compose_turn,
    pair_recalled,
    recall_skip,
    run_recall,
    token_text,
)
from memory_core.embedding.hashing import Embedder
from memory_core.errors import InvalidInputError, MemoryCoreError, NotFoundError
from memory_core.journal import RunData, load_run
from memory_core.models.base import Model
from memory_core.provenance.prompt import Composition, FrozenPrompt
from memory_core.provenance.record import CompositionSettings, LaneTokens, Memctx, MessageRef
from memory_core.recall.config import RecallConfig
from memory_core.recall.engine import RecallEngine
from memory_core.runs.registry import resolve_embedder
from memory_core.storage.base import MemoryStore, Storage
from memory_core.storage.common import ts_micros
from memory_core.text import preview, tokenize
from memory_core.tokens import estimate_tokens
from memory_core.types import Message

#: lanes whose items are stored messages, compared by (thread, seq)
MESSAGE_LANES = ("recalled", "recent")
#: lanes made of one block each, compared by their text
BLOCK_LANES = ("instructions", "working_memory", "observations")
#: the settings a what-if may change, beyond ``recall.<field>``
TOP_SETTINGS = ("recent_n", "recall", "token_budget", "token_priority", "working_memory",
                "observational")

Ref = tuple[str, int]


# -- the changes ---------------------------------------------------------------------------
class Changes(BaseModel):
    """Settings to change, validated: ``recent_n``; ``recall`` (``"off"`` or ``"on"``)
    and any ``RecallConfig`` field as ``recall.<field>``; ``token_budget`` (an integer,
    or ``"off"``); ``token_priority`` (lanes, lowest kept first); ``working_memory`` and
    ``observational`` (``"off"``, or what the run had)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    recent_n: int | None = None
    recall: Literal["on", "off"] | None = None
    recall_fields: dict[str, Any] = Field(default_factory=dict)
    token_budget: int | Literal["off"] | None = None
    token_priority: tuple[str, ...] | None = None
    working_memory: Literal["off", "thread", "resource"] | None = None
    observational: Literal["on", "off"] | None = None

    def flat(self) -> dict[str, Any]:
        """The changes as ``key: value``, as a user writes them (``recall.threshold``)."""
        out: dict[str, Any] = {k: v for k, v in self.model_dump().items()
                               if v is not None and k != "recall_fields"}
        if self.token_priority is not None:
            out["token_priority"] = ",".join(self.token_priority)
        out.update({f"recall.{k}": v for k, v in self.recall_fields.items()})
        return out

    def describe(self) -> str:
        return said_as_written(self.flat())


def said_as_written(changes: Mapping[str, Any]) -> str:
    """Changes as a user writes them: ``recall.filter = null``, not ``None``."""
    return ", ".join(f"{k} = {v if isinstance(v, str) else json.dumps(v)}"
                     for k, v in changes.items()) or "no change"


def _value(text: str) -> Any:
    """``0.5`` → 0.5, ``6`` → 6, ``true``/``null``, a JSON object or list; else the text."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def parse_changes(items: Iterable[str] | Mapping[str, Any]) -> Changes:
    """``["recall.threshold=0.5", "recent_n=6"]`` (or a mapping) as ``Changes``; one
    InvalidInputError naming the bad setting or value."""
    pairs: list[tuple[str, Any]] = []
    if isinstance(items, Mapping):
        pairs = list(items.items())
    else:
        for item in items:
            if not isinstance(item, str) or "=" not in item:
                raise InvalidInputError(f"a setting is written key=value, got {item!r}")
            key, _, raw = item.partition("=")
            pairs.append((key.strip(), _value(raw.strip())))
    fields: dict[str, Any] = {}
    recall_fields: dict[str, Any] = {}
    seen: set[str] = set()
    for key, value in pairs:
        if key in seen:  # (the last one silently won)
            raise InvalidInputError(f"setting {key!r} is given twice: give it once")
        seen.add(key)
        if key.startswith("recall."):
            name = key.removeprefix("recall.")
            if name not in RecallConfig.model_fields:
                raise InvalidInputError(
                    f"unknown recall setting {name!r}; known: {sorted(RecallConfig.model_fields)}")
            if isinstance(value, bool) and "bool" not in str(
                    RecallConfig.model_fields[name].annotation):
                raise InvalidInputError(f"recall.{name} takes no true/false, got {value!r}")
            if name == "filter" and isinstance(value, str) and value.lower() in ("off", "none"):
                value = None  # (no filter: as null)
            recall_fields[name] = value
        elif key in TOP_SETTINGS:
            if isinstance(value, str) and value.lower() in ("on", "off"):
                value = value.lower()  # (OFF, Off: as off)
            if isinstance(value, bool):  # (true read as 1 by an integer setting)
                raise InvalidInputError(f"{key} takes no true/false, got {value!r}"
                                        + _ON_OFF.get(key, ""))
            if key == "token_priority" and isinstance(value, str):
                value = tuple(p.strip() for p in value.split(",") if p.strip())
                if not value:
                    raise InvalidInputError("token_priority names no lane: give the lanes, "
                                            "comma-separated, lowest kept first")
            fields[key] = value
        else:
            raise InvalidInputError(f"unknown setting {key!r}; known: {list(TOP_SETTINGS)} "
                                    "and recall.<field>")
    try:
        if recall_fields:  # each value checked as RecallConfig checks it
            RecallConfig(**recall_fields)
        changes = Changes(**fields, recall_fields=recall_fields)
        if changes.token_priority is not None:
            TokenLimiter(1, priority=changes.token_priority)
        if isinstance(changes.token_budget, int):
            TokenLimiter(changes.token_budget)
        if changes.recent_n is not None and changes.recent_n < 0:
            raise InvalidInputError(f"recent_n must be >= 0, got {changes.recent_n}")
    except ValidationError as e:
        err = e.errors()[0]
        # the setting as the user wrote it ("token_budget", not "token_budget.int")
        where = str(err["loc"][0]) if err["loc"] else "setting"
        raise InvalidInputError(f"{where}: {err['msg']} (got {err.get('input')!r})"
                                + _ON_OFF.get(where, "")) from None
    return changes


_ON_OFF = {"recall": "; write on or off", "observational": "; write on or off",
           "working_memory": "; write off, thread or resource",
           "token_budget": "; write a number or off"}


# -- the report ----------------------------------------------------------------------------
class MessageKey(BaseModel):
    model_config = ConfigDict(extra="forbid")
    thread_id: str
    seq: int
    preview: str
    # a recalled message's recall: entering, its score and rank in the what-if; leaving,
    # those it had as recorded, and ``now`` what recall made of it in the what-if, in
    # words ("below the threshold 0.600", "outside the top 1"; None: not a near miss)
    score: float | None = None
    similarity: float | None = None  # the cosine, where ``score`` is a fused one
    rank: int | None = None
    now: str | None = None

    def recall_text(self, *, entered: bool) -> str:
        """Its recall in words ("" when it has none): entering, "rank 2, score 0.512";
        leaving, "was rank 2, score 0.455 · now beyond the top-k"."""
        if self.score is None:
            return ""
        score = (f"fused score {score_text(self.score)}, similarity "
                 f"{score_text(self.similarity)}" if self.similarity is not None
                 else f"score {score_text(self.score)}")
        said = f"{'rank' if entered else 'was rank'} {self.rank}, {score}"
        if not entered and self.now is not None:
            said += f" · now {self.now}"
        return said


def _now_words(reason: str, memctx: Memctx) -> str:
    """A near miss's reason in words, with the what-if's own bound."""
    rc = memctx.settings.recall
    if reason == "below-threshold" and rc is not None:
        bar = f"below the threshold {score_text(rc.threshold)}"
        # hybrid recall also takes a message sharing a word with the question
        return f"{bar} (it shares no word with the question)" if rc.mode == "hybrid" \
            else bar
    if reason == "beyond-top-k" and rc is not None:
        return f"outside the top {rc.top_k}"
    return {"filtered-out": "left out by the filter",
            "already-in-window": "in the recent window",
            "duplicate-of-query": "taken for the question itself"}.get(
                reason, reason.replace("-", " "))


class LaneChange(BaseModel):
    """A lane's stored messages that enter and leave it (for a block lane: whether its
    text changed)."""

    model_config = ConfigDict(extra="forbid")
    lane: str
    entered: list[MessageKey] = Field(default_factory=list)
    left: list[MessageKey] = Field(default_factory=list)
    block_changed: bool = False


class KeyMessage(MessageKey):
    """A message the recorded answer quotes, and whether the what-if keeps it."""

    lane_before: str
    lane_after: str | None  # None: no longer in the prompt


class RunWhatIf(BaseModel):
    """One run composed again under the changes."""

    model_config = ConfigDict(extra="forbid")
    run_id: str
    thread_id: str | None
    status: Literal["changed", "unchanged", "cannot"]
    reason: str | None = None  # why it cannot be re-composed
    # "cannot" because a recall setting was changed where recall was off (recall=on
    # would try it): counted apart from the runs whose composition is not recorded
    recall_off: bool = False
    lanes: list[LaneChange] = Field(default_factory=list)
    tokens_before: LaneTokens | None = None
    tokens_after: LaneTokens | None = None
    key_messages: list[KeyMessage] = Field(default_factory=list)
    prompt_after: FrozenPrompt | None = None
    memctx_after: Memctx | None = None
    # re-asked (``what_if(ask=True)``): the model's answers to the new prompt, judged
    # against the recorded answer as a counterfactual is
    answer: CounterfactualResult | None = None
    ask_error: str | None = None  # why the re-ask failed (the model was unreachable …)

    @property
    def key_lost(self) -> list[KeyMessage]:
        return [k for k in self.key_messages if k.lane_after is None]

    @property
    def entered(self) -> int:
        return sum(len(c.entered) for c in self.lanes)

    @property
    def left(self) -> int:
        return sum(len(c.left) for c in self.lanes)


class WhatIfReport(BaseModel):
    model_config = ConfigDict(extra="forbid")
    changes: dict[str, Any]
    runs: list[RunWhatIf]

    def count(self, status: str) -> int:
        return sum(1 for r in self.runs if r.status == status)

    @property
    def sentence(self) -> str:
        """The outcome in plain words."""
        n, changed, cannot = len(self.runs), self.count("changed"), self.count("cannot")
        what = said_as_written(self.changes)
        if not n:
            return f"With {what}: no runs to re-compose."
        out = (f"With {what}, {changed} of {n} past run{'s' if n != 1 else ''} would have "
               f"been given a different prompt")
        lost = sum(1 for r in self.runs if r.key_lost)
        gained = sum(1 for r in self.runs if r.status == "changed" and r.entered)
        if changed:
            out += (f" ({gained} with messages added, {lost} losing a message its answer "
                    "quoted)")
        out += "."
        asked = [r for r in self.runs if r.answer is not None]
        if asked:
            moved = sum(1 for r in asked if r.answer and r.answer.verdict == "changed")
            unsure = sum(1 for r in asked if r.answer and r.answer.verdict == "inconclusive")
            out += (f" Re-asked, {moved} of {len(asked)} answer{'s' if len(asked) != 1 else ''}"
                    f" changed" + (f" ({unsure} inconclusive)" if unsure else "") + ".")
        failed = sum(1 for r in self.runs if r.ask_error)
        if failed:
            out += f" {failed} could not be re-asked."
        if cannot:
            why = {r.reason or "" for r in self.runs if r.status == "cannot"}
            out += (f" {cannot} could not be re-composed with it ("
                    + (next(iter(why)) if len(why) == 1 else "each run's line says why")
                    + ").")
        return out


# -- as of the time a run ran ------------------------------------------------------------
def _history_end(data: RunData, threads: Threads) -> int:
    """The last seq of the run's thread before its input was stored."""
    memctx, thread_id = data.memctx, data.run.thread_id
    assert memctx is not None and thread_id is not None
    if data.persist_input is not None and data.persist_input.seqs:
        return min(data.persist_input.seqs) - 1
    if thread_id in memctx.scope_snapshot:
        return memctx.scope_snapshot[thread_id]
    return threads.last_before(thread_id, ts_micros(data.run.started_at))


def _as_of(data: RunData, scope: Sequence[str], end: int, threads: Threads) -> dict[str, int]:
    """Each scope thread's highest seq when the run started (-1: it did not exist)."""
    memctx = data.memctx
    assert memctx is not None and data.run.thread_id is not None
    started = ts_micros(data.run.started_at)
    threads.load(list(scope))
    out = {t: memctx.scope_snapshot[t] if t in memctx.scope_snapshot
           else threads.last_before(t, started) for t in scope}
    out[data.run.thread_id] = end
    return out


# -- re-composition ------------------------------------------------------------------------
class Cannot(Exception):
    """This run cannot be re-composed; the message says why, in plain words
    (``recall_off``: a recall setting was changed where recall was off)."""

    def __init__(self, reason: str, *, recall_off: bool = False) -> None:
        super().__init__(reason)
        self.recall_off = recall_off


def changed_settings(settings: CompositionSettings, changes: Changes) -> CompositionSettings:
    """The run's recorded settings with the changes applied."""
    recall = settings.recall
    if changes.recall_fields and recall is None and changes.recall != "on":
        # (said, not ignored: "unchanged" would read as the change making no difference)
        named = ", ".join(f"recall.{k}" for k in changes.recall_fields)
        raise Cannot(f"{named} was changed, but {RECALL_WAS_OFF}: give recall=on too",
                     recall_off=True)
    if changes.recall == "off":
        recall = None
    elif changes.recall == "on" or changes.recall_fields and recall is not None:
        # a recall field changes recall where it ran; turning it on is recall=on's
        base = (recall or RecallConfig()).model_dump()
        recall = RecallConfig(**{**base, **changes.recall_fields})
    processors = [dict(p) for p in settings.processors]
    limiter = next((p for p in processors if p.get("name") == TokenLimiter.name), None)
    if changes.token_budget == "off":
        processors = [p for p in processors if p.get("name") != TokenLimiter.name]
    elif changes.token_budget is not None or changes.token_priority is not None:
        if limiter is None:
            if changes.token_budget is None:
                raise Cannot("token_priority was changed, but the run had no token budget "
                             "(give token_budget too)")
            limiter = {"name": TokenLimiter.name, "priority": list(DEFAULT_PRIORITY),
                       "on_overflow": "pass"}
            processors.insert(0, limiter)
        if changes.token_budget is not None:
            limiter["limit"] = changes.token_budget
        if changes.token_priority is not None:
            limiter["priority"] = list(changes.token_priority)
    observational = settings.observational
    if changes.observational is not None:
        observational = changes.observational == "on"
    wm = changes.working_memory or settings.working_memory
    return settings.model_copy(update={
        "recent_n": changes.recent_n if changes.recent_n is not None else settings.recent_n,
        "recall": recall, "recall_enabled": recall is not None and not observational,
        "observational": observational, "working_memory": wm, "processors": processors})


class _Composer:
    """Composes runs as of their time, sharing one recall engine per embedder."""

    def __init__(self, storage: Storage, embed: Embedder | None) -> None:
        self.storage = storage
        self.embed = embed
        # (duck-typed: every other method is the store's own)
        self.store = cast(MemoryStore, ReadOnce(storage.memory))
        self.threads = Threads(storage)
        self._engines: dict[str, tuple[Embedder | None, RecallEngine]] = {}

    def engine(self, settings: CompositionSettings) -> tuple[Embedder | None, RecallEngine]:
        key = settings.embedder or ""
        if key not in self._engines:
            try:
                embed = resolve_embedder(settings, self.embed)
            except MemoryCoreError as e:
                raise Cannot(f"its embedder cannot be rebuilt ({e})") from None
            self._engines[key] = (embed, RecallEngine(self.storage.memory, embed))
        return self._engines[key]

    def compose(self, data: RunData, settings: CompositionSettings) -> Composition:
        memctx, run = data.memctx, data.run
        assert memctx is not None and run.thread_id is not None
        if settings.token_counter != "chars/4":
            raise Cannot(f"it counted tokens with {settings.token_counter!r}, which cannot "
                         "be rebuilt")
        store = self.store
        thread = store.get_thread(run.thread_id)
        if thread is None:
            raise Cannot(f"its thread {run.thread_id!r} is no longer stored")
        turn = Turn(run.thread_id, run.resource_id, thread)
        end = _history_end(data, self.threads)
        self.threads.load([run.thread_id])
        incoming = [i.message for i in data.prompt.items if i.lane == "input"]
        tail = tail_upto(self.store, run.thread_id, end, settings.recent_n + len(incoming) + 1,
                     self.threads)
        trim = InputTrim(incoming=incoming, echo_trimmed=memctx.echo_trimmed, deduped=0,
                         history_end=end, history_count=self.threads.count_upto(
                             run.thread_id, end), tail=tail)
        wm = self._working_memory(data, settings)
        observed = self._observed(data, settings, end)
        instructions = next((i.message.text() for i in data.prompt.items
                             if i.lane == "instructions"), None)
        try:
            processors = processors_from_settings(settings.processors)
        except InvalidInputError as e:
            raise Cannot(str(e)) from None
        return compose_turn(
            store, turn, trim, recent_n=settings.recent_n, instructions=instructions,
            working_memory=wm, observed=observed,
            recall=lambda window: self._recall(data, settings, turn, trim, window, end),
            process=(lambda d: run_processors(d, processors, _count)) if processors
            else None,
            settings=settings, count=_count, count_text=estimate_tokens)

    def _working_memory(self, data: RunData, settings: CompositionSettings
                        ) -> SystemBlock | None:
        recorded = data.memctx.settings.working_memory if data.memctx else "off"
        if settings.working_memory == "off":
            return None
        if settings.working_memory != recorded:
            raise Cannot("working memory as it was then is not recorded (the run had it "
                         f"{recorded})")
        block = next((i.message for i in data.prompt.items if i.lane == "working_memory"),
                     None)
        return SystemBlock(block) if block is not None else None

    def _observed(self, data: RunData, settings: CompositionSettings,
                  end: int) -> Observed | None:
        memctx = data.memctx
        assert memctx is not None
        if not settings.observational:
            return None
        if not memctx.settings.observational:
            raise Cannot("observations as they were then are not recorded (the run had "
                         "observational memory off)")
        recent = [i.seq for i in data.prompt.items if i.lane == "recent" and i.seq is not None]
        recent += [d.seq for d in memctx.dropped if d.lane == "recent"]
        observed_seq = min(recent) - 1 if recent else end
        item = next((i for i in data.prompt.items if i.lane == "observations"), None)
        if item is None:
            return Observed(observed_seq, None, memctx.observations_pending)
        wanted = [o.id for o in memctx.observations]
        held = {o.id: o for o in self.storage.memory.list_observations(data.run.thread_id or "")}
        if any(i not in held for i in wanted):
            raise Cannot("an observation the run was given is no longer stored")
        return Observed(observed_seq, SystemBlock(item.message, [held[i] for i in wanted]),
                        memctx.observations_pending)

    def _recall(self, data: RunData, settings: CompositionSettings, turn: Turn,
                trim: InputTrim, window: Window, end: int) -> RecallLane:
        rc = settings.recall if settings.recall_enabled else None
        embed, engine = self.engine(settings) if rc is not None else (None, None)
        skipped = recall_skip(rc, observational=settings.observational, query=trim.query,
                              has_embedder=embed is not None,
                              history_count=trim.history_count, recent_n=settings.recent_n)
        if skipped is not None or rc is None or engine is None:
            return RecallLane(skipped=skipped)
        assert trim.query is not None
        if self.embed is None and data.persist_input is not None:  # (the run's own
            # embedder: its question's stored vector, not the model's load)
            prime_with_stored(embed, self.storage, turn.thread_id,
                              data.persist_input.seqs, trim.query)
        scope = engine.scope_threads(turn.thread_id, turn.resource_id, rc, thread=turn.thread)
        as_of = _as_of(data, scope, end, self.threads)
        lane = run_recall(engine, self.store, turn, trim, window, rc, as_of)
        return pair_recalled(self.store, lane, window, trim.incoming)


def _count(messages: Sequence[Message]) -> int:
    return sum(estimate_tokens(token_text(m)) for m in messages)


# -- comparing -----------------------------------------------------------------------------
def _lanes(prompt: FrozenPrompt) -> dict[str, dict[Ref, Message]]:
    out: dict[str, dict[Ref, Message]] = {lane: {} for lane in MESSAGE_LANES}
    for item in prompt.items:
        if item.lane in MESSAGE_LANES and item.thread_id is not None and item.seq is not None:
            out[item.lane][(item.thread_id, item.seq)] = item.message
    return out


def _blocks(prompt: FrozenPrompt) -> dict[str, str]:
    return {lane: "\n".join(i.message.text() or "" for i in prompt.items if i.lane == lane)
            for lane in BLOCK_LANES}


def _same(a: FrozenPrompt, b: FrozenPrompt) -> bool:
    return _lanes(a) == _lanes(b) and _blocks(a) == _blocks(b)


# a number as written (an amount, a code, a date, an address): digits and the separators
# inside it, "10.8.0.0/16" one number, not "10", "8", "0", "0" and "16"
_NUMBER = re.compile(r"\d+(?:[.,:/-]\d+)*")


def _numbers(text: str) -> set[str]:
    """The numbers of a text that say something specific: three digits or more (a
    "10%" or a "2" is said everywhere)."""
    return {n for n in _NUMBER.findall(text) if sum(c.isdigit() for c in n) >= 3}


def quoted_by(answer: str | None, message: Message, said: AbstractSet[str] = frozenset()
              ) -> bool:
    """Whether the answer quotes the message: they share a run of four words, or a
    number of three digits or more (an amount, a code, a date) that is not among
    ``said`` — the numbers of the run's own question and those several messages of its
    prompt repeat: an answer saying "3.11" in a conversation about moving to 3.11
    quotes none of them."""
    if not answer:
        return False
    text = message.text() or ""
    if (_numbers(answer) & _numbers(text)) - said:
        return True
    a, m = tokenize(answer), tokenize(text)
    grams = {tuple(m[i:i + 4]) for i in range(len(m) - 3)}
    return any(tuple(a[i:i + 4]) in grams for i in range(len(a) - 3))


def _said_anyway(data: RunData, lanes: Mapping[str, Mapping[Ref, Message]]) -> set[str]:
    """The numbers that single out no message of a run's prompt: its question's, and
    those three or more of its prompt's messages hold (the conversation's topic)."""
    asked = "\n".join(m.text() or "" for m in data.input.messages) if data.input else ""
    counts = Counter(n for by_ref in lanes.values() for m in by_ref.values()
                     for n in _numbers(m.text() or ""))
    return _numbers(asked) | {n for n, c in counts.items() if c >= 3}


def _key(ref: Ref, message: Message, recall: Memctx | None = None,
         now: Memctx | None = None) -> MessageKey:
    """``ref`` as a key; a recalled one with its recall in ``recall`` (its score, rank
    and similarity) and what recall made of it in ``now`` (a near miss's reason)."""
    key = MessageKey(thread_id=ref[0], seq=ref[1], preview=preview(message))
    hit = next((r for r in recall.recalled if (r.thread_id, r.seq) == ref
                and r.score is not None), None) if recall is not None else None
    if hit is not None:
        key.score, key.rank = hit.score, hit.rank
        if hit.vector_score is not None and hit.vector_score != hit.score:
            key.similarity = hit.vector_score
    if now is not None:
        reason = next((nm.reason for nm in now.near_misses
                       if (nm.thread_id, nm.seq) == ref), None)
        rc = now.settings.recall
        if reason is None and hit is not None and rc is not None and _under_bar(hit, rc):
            # not among the near misses the what-if kept, but its cosine (the same
            # question, the same vectors) is under the new bar
            reason = "below-threshold"
        key.now = _now_words(reason, now) if reason is not None else None
    return key


def _under_bar(hit: MessageRef, rc: RecallConfig) -> bool:
    """Whether a recorded hit falls under ``rc``'s bar with its recorded scores: its
    cosine in vector mode; in hybrid mode its cosine too, when it shared no word with
    the question (words alone let a message in)."""
    if rc.mode == "vector" and hit.score is not None:
        return hit.score < rc.threshold
    if rc.mode == "hybrid" and hit.vector_score is not None and not hit.lexical_score:
        return hit.vector_score < rc.threshold or hit.vector_score <= 0
    return False


def compare(data: RunData, after: Composition) -> RunWhatIf:
    """The recorded composition of a run beside its what-if one."""
    before_lanes, after_lanes = _lanes(data.prompt), _lanes(after.prompt)
    before_blocks, after_blocks = _blocks(data.prompt), _blocks(after.prompt)
    recalls = {"recalled": (data.memctx, after.memctx)}
    changes = [LaneChange(lane=lane,
                          entered=[_key(r, m, recalls.get(lane, (None, None))[1])
                                   for r, m in after_lanes[lane].items()
                                   if r not in before_lanes[lane]],
                          left=[_key(r, m, *recalls.get(lane, (None, None)))
                                for r, m in before_lanes[lane].items()
                                if r not in after_lanes[lane]])
               for lane in MESSAGE_LANES]
    changes += [LaneChange(lane=lane, block_changed=True) for lane in BLOCK_LANES
                if before_blocks[lane] != after_blocks[lane]]
    changes = [c for c in changes if c.entered or c.left or c.block_changed]
    where_after = {r: lane for lane in MESSAGE_LANES for r in after_lanes[lane]}
    said = _said_anyway(data, before_lanes) if data.answer else set()
    keys = [KeyMessage(thread_id=r[0], seq=r[1], preview=preview(m), lane_before=lane,
                       lane_after=where_after.get(r))
            for lane in MESSAGE_LANES for r, m in before_lanes[lane].items()
            if quoted_by(data.answer, m, said)]
    assert data.memctx is not None
    return RunWhatIf(run_id=data.run_id, thread_id=data.run.thread_id,
                     status="changed" if changes else "unchanged", lanes=changes,
                     tokens_before=data.memctx.tokens, tokens_after=after.memctx.tokens,
                     key_messages=keys, prompt_after=after.prompt, memctx_after=after.memctx)


# -- entry points --------------------------------------------------------------------------
def _cannot(data: RunData | None, run_id: str, reason: str, *,
            recall_off: bool = False) -> RunWhatIf:
    return RunWhatIf(run_id=run_id, thread_id=data.run.thread_id if data else None,
                     status="cannot", reason=reason, recall_off=recall_off)


def _one(composer: _Composer, run_id: str, changes: Changes) -> RunWhatIf:
    try:
        data = load_run(composer.storage, run_id)
    except NotFoundError:
        raise
    except MemoryCoreError as e:
        return _cannot(None, run_id, f"its record cannot be read ({e})")
    memctx = data.memctx
    if memctx is None or memctx.source != "composed":
        why = ("it was imported: the recording holds the prompt its client sent, not how "
               "it was composed" if memctx is not None and memctx.imported
               else "its composition was not recorded")
        return _cannot(data, run_id, why)
    if data.run.thread_id is None:
        return _cannot(data, run_id, "it ran on no thread")
    try:
        settings = changed_settings(memctx.settings, changes)
        baseline = composer.compose(data, memctx.settings)
        if not _same(baseline.prompt, data.prompt):
            return _cannot(data, run_id, "composed again with its own settings it is not "
                           "given its recorded prompt (the store or the code changed since), "
                           "so a change could not be told from that drift")
        after = baseline if settings == memctx.settings else composer.compose(data, settings)
    except Cannot as e:
        return _cannot(data, run_id, str(e), recall_off=e.recall_off)
    except InvalidInputError as e:
        return _cannot(data, run_id, f"the changed settings do not apply to it ({e})")
    return compare(data, after)


def runs_in_scope(storage: Storage, *, run_ids: Sequence[str] | None = None,
                  thread_id: str | None = None, resource_id: str | None = None) -> list[str]:
    """The runs a what-if covers, oldest first: the given ones, a thread's, a
    resource's, or every run. Runs given with a thread or a resource must be theirs; a
    thread or resource that is not stored is NotFoundError (a typo read as "no runs")."""
    if run_ids and (thread_id is not None or resource_id is not None):
        raise InvalidInputError("give runs, or a thread or resource, not both: runs given "
                                "are re-composed whatever their thread")
    if run_ids:
        return list(dict.fromkeys(run_ids))
    thread = storage.memory.get_thread(thread_id) if thread_id is not None else None
    if thread_id is not None and thread is None:
        raise NotFoundError(f"thread '{thread_id}' does not exist")
    if resource_id is not None and resource_id not in storage.memory.list_resources():
        raise NotFoundError(f"resource '{resource_id}' has no threads")
    if thread is not None and resource_id is not None and thread.resource_id != resource_id:
        # (read as "no runs to re-compose": a typo, or the wrong resource)
        owner = f"resource '{thread.resource_id}'" if thread.resource_id else "no resource"
        raise InvalidInputError(f"thread '{thread_id}' is not in resource '{resource_id}': "
                                f"it belongs to {owner}")
    rows = storage.runs.list_runs(thread_id=thread_id, resource_id=resource_id)
    if thread_id is not None and resource_id is not None:
        rows = [r for r in rows if r.resource_id == resource_id]
    return [r.run_id for r in sorted(rows, key=lambda r: (r.started_at, r.run_id))]


def what_if(storage: Storage, changes: Changes | Iterable[str] | Mapping[str, Any], *,
            run_ids: Sequence[str] | None = None, thread_id: str | None = None,
            resource_id: str | None = None, embed: Embedder | None = None,
            progress: Callable[[int, int], None] | None = None, ask: bool = False,
            model: Model | None = None, repeats: int | None = None,
            concurrency: int = 2) -> WhatIfReport:
    """Re-compose the chosen runs (``run_ids``, a thread's, a resource's, or all) as of
    their time under ``changes`` (``["recall.threshold=0.5", …]``, a mapping or
    ``Changes``) and report, run by run, what enters and leaves each lane, tokens per
    lane before and after, and the messages the recorded answer quoted, kept or lost.
    ``embed`` replaces the embedder the runs recorded (the same one for every run).

    With ``ask`` (or a ``model``), each run whose prompt changed is re-asked — the
    model it recorded, rebuilt, unless ``model`` is given — with at most
    ``concurrency`` runs asked at once; each answer is judged against the recorded
    one as a counterfactual is (``verdict`` changed / unchanged / inconclusive) and
    journaled under the what-if's own key, so asking again (or resuming an interrupted
    what-if) asks the model nothing it already answered. ``progress(done, total)`` is
    told after each run composed, then after each run re-asked."""
    if not isinstance(changes, Changes):
        changes = parse_changes(changes)
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise InvalidInputError(f"concurrency must be an integer >= 1, got {concurrency!r}")
    if repeats is not None and not ask and model is None:  # (it was ignored without a word)
        raise InvalidInputError("repeats asks each prompt several times: ask too (--ask)")
    composer = _Composer(storage, embed)
    out: list[RunWhatIf] = []
    # (one hold of the file for every read: a DuckDB file opened and let go for each
    # run's check was ~2 ms a run, a fifth of a 1,000-run what-if)
    with storage.session():
        ids = runs_in_scope(storage, run_ids=run_ids, thread_id=thread_id,
                            resource_id=resource_id)
        if run_ids:
            missing = [r for r in ids if storage.runs.get_run(r) is None]
            if missing:
                raise NotFoundError(f"run '{missing[0]}' does not exist")
        for i, run_id in enumerate(ids):
            out.append(_one(composer, run_id, changes))
            if progress is not None:
                progress(i + 1, len(ids))
    if ask or model is not None:
        _ask([r for r in out if r.status == "changed"], storage, changes,
             model=model, repeats=repeats, concurrency=concurrency, progress=progress)
    return WhatIfReport(changes=changes.flat(), runs=out)


def _ask(runs: Sequence[RunWhatIf], storage: Storage, changes: Changes, *,
         model: Model | None, repeats: int | None, concurrency: int,
         progress: Callable[[int, int], None] | None) -> None:
    """Re-ask the changed runs, ``concurrency`` at a time; each run's outcome (or why
    it could not be asked) is set on it."""
    from concurrent.futures import ThreadPoolExecutor

    def one(run: RunWhatIf) -> None:
        assert run.prompt_after is not None
        removed = [(k.thread_id, k.seq) for c in run.lanes for k in c.left]
        added = [(k.thread_id, k.seq) for c in run.lanes for k in c.entered]
        try:
            run.answer = reask_composed(storage, run.run_id, run.prompt_after.items,
                                        changes.flat(), removed=removed, added=added,
                                        model=model, repeats=repeats)
        except MemoryCoreError as e:
            run.ask_error = str(e)

    done = 0
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        for _ in pool.map(one, runs):
            done += 1
            if progress is not None:
                progress(done, len(runs))
