"""AgentMemory: appends messages with their embeddings and composes each turn's prompt
from lanes (instructions, working memory, observations, recalled, recent, input)
together with the provenance record (Memctx) that says why each message is there."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from memory_core.embedders import Embedder, embedder_name
from memory_core.errors import InvalidInputError
from memory_core.models.base import Tool
from memory_core.prompt import Composition, FrozenPrompt, PromptItem
from memory_core.provenance import (
    PREVIEW_CHARS,
    PROVENANCE_DROPPED_CAP,
    PROVENANCE_RECENT_CAP,
    CompositionSettings,
    LaneTokens,
    Memctx,
    MessageRef,
    NearMiss,
    ObservationRef,
    preview,
    structural_text,
)
from memory_core.storage.base import Storage
from memory_core.storage.common import Clock, utc_now
from memory_core.tokens import TokenCounter, counter_label, estimate_tokens
from memory_core.toolpairs import pair_tool_calls
from memory_core.types import (
    AppendRow,
    Message,
    Observation,
    StoredMessage,
    Thread,
)
from memory_core.working_memory import KeyLocks, WorkingMemory, WorkingMemoryConfig

if TYPE_CHECKING:
    from memory_core.observational import ObservationalConfig, ObservationalMemory
    from memory_core.recall import RecallConfig, RecallEngine, RecallHit

TITLE_CHARS = 80

# why recall did not run (Memctx.recall_skipped)
SKIP_OFF = "recall off"
SKIP_OBSERVATIONAL = "observational memory"
SKIP_NO_QUERY = "no query"
SKIP_NO_EMBEDDER = "no embedder"
SKIP_FITS = "thread fits in window"


def thread_title(messages: Sequence[Message]) -> str | None:
    """SPEC §2.5: the first user text, whitespace collapsed, trimmed, cut to 80."""
    for m in messages:
        if m.role == "user":
            text = " ".join((m.text() or "").split())
            if text:
                return text[:TITLE_CHARS]
    return None


def token_text(message: Message) -> str:
    """What the token counter sees of a message: text parts, and tool parts in their
    structural form (unclipped), joined by spaces."""
    return structural_text(message)


def _coerce_messages(messages: Any, what: str) -> list[Message]:
    if isinstance(messages, Message | str | Mapping):
        raise InvalidInputError(f"{what} must be a list of messages, got one "
                                f"{type(messages).__name__}; wrap it in a list")
    out: list[Message] = []
    for i, m in enumerate(messages):
        if isinstance(m, StoredMessage):
            out.append(m.as_message())
        elif isinstance(m, Message):
            out.append(m)
        elif isinstance(m, Mapping):
            try:
                out.append(Message.model_validate(dict(m)))
            except ValueError as e:
                raise InvalidInputError(f"{what}[{i}] is not a valid message: {e}") from e
        else:
            raise InvalidInputError(
                f"{what}[{i}] must be a Message or a dict, got {type(m).__name__}")
    return out


def _check_id(name: str, value: Any, *, optional: bool = False) -> None:
    if value is None and optional:
        return
    if not isinstance(value, str) or not value:
        raise InvalidInputError(f"{name} must be a non-empty string, got {value!r}")


@dataclass
class _Lanes:
    items: list[PromptItem] = field(default_factory=list)

    def add(self, lane: Any, message: Message, **source: Any) -> None:
        self.items.append(PromptItem(lane=lane, message=message, **source))


class AgentMemory:
    """Conversation memory over a Storage.

    ``embed`` is any ``list[str] -> float32 (n, d)`` callable (None: no vectors, no
    vector recall). ``recall=None`` turns recall off; ``working_memory`` and
    ``observational_memory`` are off unless configured. ``token_counter`` measures the
    lanes (default ceil(chars/4)); ``clock`` is handed to observational memory.
    """

    def __init__(self, storage: Storage, embed: Embedder | None = None, recent_n: int = 6,
                 recall: RecallConfig | None = None,
                 working_memory: WorkingMemoryConfig | None = None,
                 observational_memory: ObservationalConfig | None = None,
                 token_counter: TokenCounter = estimate_tokens,
                 clock: Clock = utc_now) -> None:
        if not isinstance(storage, Storage):
            raise InvalidInputError(
                f"storage must be a memory_core Storage, got {type(storage).__name__}")
        if isinstance(recent_n, bool) or not isinstance(recent_n, int) or recent_n < 0:
            raise InvalidInputError(f"recent_n must be an integer >= 0, got {recent_n!r}")
        if embed is not None and not callable(embed):
            raise InvalidInputError(f"embed must be callable, got {type(embed).__name__}")
        if working_memory is not None and not isinstance(working_memory, WorkingMemoryConfig):
            raise InvalidInputError(
                "working_memory must be a WorkingMemoryConfig, got "
                f"{type(working_memory).__name__}")
        if not callable(token_counter):
            raise InvalidInputError("token_counter must be a callable str -> int")
        if recall is not None:
            from memory_core.recall import RecallConfig as _RecallConfig

            if not isinstance(recall, _RecallConfig):
                raise InvalidInputError(
                    f"recall must be a RecallConfig or None, got {type(recall).__name__}")
        self.storage = storage
        self.embed = embed
        self.recent_n = recent_n
        self.recall_config = recall
        self.working_memory_config = working_memory
        self.observational_config = observational_memory
        self.token_counter = token_counter
        self.clock = clock
        self._wm_locks = KeyLocks()
        self._wm = (WorkingMemory(storage.memory, working_memory, self._wm_locks)
                    if working_memory is not None else None)
        self._engine: RecallEngine | None = None
        self._om: ObservationalMemory | None = None
        self._lazy_lock = threading.Lock()

    # -- lazily built collaborators ---------------------------------------------------
    def _recall_engine(self) -> RecallEngine:
        with self._lazy_lock:
            if self._engine is None:
                from memory_core.recall import RecallEngine as _RecallEngine

                self._engine = _RecallEngine(self.storage.memory, self.embed)
            return self._engine

    def _observational(self) -> ObservationalMemory:
        with self._lazy_lock:
            if self._om is None:
                from memory_core.observational import ObservationalMemory as _OM

                assert self.observational_config is not None
                self._om = _OM(self.storage, self.observational_config,
                               token_counter=self.token_counter, clock=self.clock,
                               embed=self.embed)
            return self._om

    # -- threads ------------------------------------------------------------------------
    def _ensure_thread(self, thread_id: str, resource_id: str | None,
                       messages: Sequence[Message]) -> Thread:
        store = self.storage.memory
        thread = store.get_thread(thread_id)
        if thread is not None:
            return thread
        try:
            return store.create_thread(thread_id, resource_id=resource_id,
                                       title=thread_title(messages))
        except InvalidInputError:
            # a concurrent turn created it between our read and our write
            thread = store.get_thread(thread_id)
            if thread is None:
                raise
            return thread

    # -- append -------------------------------------------------------------------------
    def _embed_texts(self, texts: list[str]) -> np.ndarray:
        assert self.embed is not None
        name = embedder_name(self.embed)
        try:
            vecs = np.asarray(self.embed(texts), dtype=np.float32)
        except (TypeError, ValueError) as e:
            raise InvalidInputError(f"embedder '{name}' returned no usable array: {e}") from e
        if vecs.ndim != 2 or vecs.shape[0] != len(texts) or vecs.shape[1] == 0:
            raise InvalidInputError(
                f"embedder '{name}' must return shape ({len(texts)}, d) for {len(texts)} "
                f"texts, got {vecs.shape}")
        if not np.all(np.isfinite(vecs)):
            raise InvalidInputError(f"embedder '{name}' returned NaN or infinity")
        dim = self.storage.memory.embedding_dim()
        if dim is not None and vecs.shape[1] != dim:
            raise InvalidInputError(
                f"embedder '{name}' returns {vecs.shape[1]}-dimensional vectors, but this "
                f"store holds {dim}-dimensional vectors; use the embedder the store was "
                "built with")
        return vecs

    def append(self, thread_id: str, messages: Sequence[Message],
               resource_id: str | None = None, *, run_id: str | None = None,
               created_at: datetime | None = None) -> list[int]:
        """Store ``messages`` on the thread (created when missing) all-or-nothing and
        return their seqs. Messages with text are embedded first, outside any store
        lock (SPEC §1.3)."""
        _check_id("thread_id", thread_id)
        _check_id("resource_id", resource_id, optional=True)
        _check_id("run_id", run_id, optional=True)
        msgs = _coerce_messages(messages, "messages")
        if not msgs:
            return []
        texts = [m.text() for m in msgs]
        vectors: list[np.ndarray | None] = [None] * len(msgs)
        if self.embed is not None:
            idx = [i for i, t in enumerate(texts) if t]
            if idx:
                vecs = self._embed_texts([texts[i] or "" for i in idx])
                for j, i in enumerate(idx):
                    vectors[i] = vecs[j]
        self._ensure_thread(thread_id, resource_id, msgs)
        rows = [AppendRow(message=m, run_id=run_id, created_at=created_at, embedding=v)
                for m, v in zip(msgs, vectors, strict=True)]
        return self.storage.memory.append_messages(thread_id, rows)

    # -- recall -------------------------------------------------------------------------
    def _config_with(self, overrides: Mapping[str, Any]) -> RecallConfig:
        from memory_core.recall import RecallConfig as _RecallConfig

        base = self.recall_config or _RecallConfig()
        if not overrides:
            return base
        unknown = sorted(set(overrides) - set(_RecallConfig.model_fields))
        if unknown:
            raise InvalidInputError(
                f"unknown recall setting(s) {unknown}; known: "
                f"{sorted(_RecallConfig.model_fields)}")
        try:
            return base.replace(**overrides)
        except InvalidInputError:
            raise
        except ValueError as e:
            raise InvalidInputError(f"invalid recall settings {dict(overrides)}: {e}") from e

    def recall(self, query: str, *, thread_id: str, resource_id: str | None = None,
               **overrides: Any) -> list[RecallHit]:
        """Recall alone: the configured settings (with ``overrides``) and the engine that
        composition uses, without the recent-window removal and skip rules of a turn."""
        _check_id("thread_id", thread_id)
        _check_id("resource_id", resource_id, optional=True)
        if not isinstance(query, str):
            raise InvalidInputError(f"query must be a string, got {type(query).__name__}")
        config = self._config_with(overrides)
        thread: Thread | None = None
        if resource_id is None:
            thread = self.storage.memory.get_thread(thread_id)
            resource_id = thread.resource_id if thread else None
        outcome = self._recall_engine().run(query, thread_id=thread_id,
                                            resource_id=resource_id, config=config,
                                            window=frozenset(), thread=thread)
        return list(outcome.hits)

    # -- working memory -----------------------------------------------------------------
    def _require_wm(self) -> WorkingMemory:
        if self._wm is None:
            raise InvalidInputError(
                "working memory is off; pass working_memory=WorkingMemoryConfig(...)")
        return self._wm

    def get_working_memory(self, *, thread_id: str,
                           resource_id: str | None = None) -> dict[str, Any]:
        _check_id("thread_id", thread_id)
        return self._require_wm().get(thread_id, resource_id)

    def update_working_memory(self, *, thread_id: str, resource_id: str | None = None,
                              patch: Any) -> dict[str, Any]:
        """Deep-merge ``patch`` into the thread's (or resource's) working memory under
        the key's lock; returns ``{"ok": True, "memory": merged}``."""
        _check_id("thread_id", thread_id)
        _check_id("resource_id", resource_id, optional=True)
        return self._require_wm().update(thread_id, resource_id, patch)

    def tools(self, *, thread_id: str, resource_id: str | None = None) -> list[Tool]:
        """The tools memory offers the model: the working-memory update tool, unless
        working memory is off or read-only."""
        _check_id("thread_id", thread_id)
        if self._wm is None or self._wm.config.read_only:
            return []
        if resource_id is None:
            thread = self.storage.memory.get_thread(thread_id)
            resource_id = thread.resource_id if thread else None
        return [self._wm.tool(thread_id, resource_id)]

    # -- composition --------------------------------------------------------------------
    def settings(self) -> CompositionSettings:
        """What provenance records of this memory's configuration: the RecallConfig
        whole, recent_n, working-memory and observational settings, the token counter
        and the embedder by name."""
        wm = self.working_memory_config
        return CompositionSettings(
            recent_n=self.recent_n,
            recall_enabled=self.recall_config is not None and self.observational_config is None,
            recall=self.recall_config,
            working_memory=wm.scope if wm else "off",
            working_memory_read_only=bool(wm and wm.read_only),
            observational=self.observational_config is not None,
            token_counter=counter_label(self.token_counter),
            embedder=embedder_name(self.embed) if self.embed is not None else None)

    def _count(self, messages: Sequence[Message]) -> int:
        return sum(int(self.token_counter(token_text(m))) for m in messages)

    def load_context(self, *, thread_id: str, resource_id: str | None = None,
                     input: Sequence[Message], instructions: str | None = None) -> Composition:
        """Compose the prompt for one turn, before its input is persisted.

        A missing thread is created (with ``resource_id``, which may be None so that a
        first turn without a resource still works). Then the incoming list is
        echo-trimmed (SPEC §6.6.2) and de-duplicated against the stored tail (§6.6.3:
        rows already stored are treated as the input, not as history, so a retry
        composes the same prompt as the first attempt; a thread holding nothing but
        this input, written by one run, is a retried first turn and is not trimmed).
        ``Composition.incoming`` holds the rows the caller still has to persist.
        """
        _check_id("thread_id", thread_id)
        _check_id("resource_id", resource_id, optional=True)
        if instructions is not None and not isinstance(instructions, str):
            raise InvalidInputError(
                f"instructions must be a string or None, got {type(instructions).__name__}")
        given = _coerce_messages(input, "input")
        store = self.storage.memory
        thread = self._ensure_thread(thread_id, resource_id, given)
        resource = resource_id if resource_id is not None else thread.resource_id

        history_len = store.count_messages(thread_id)
        tail = store.get_tail(thread_id, self.recent_n + len(given))
        if (given and history_len == len(given) and _ends_with(tail, given)
                and len({m.run_id for m in tail}) == 1 and tail[0].run_id is not None):
            # a retry of a first turn: one run stored exactly this input, which its
            # first attempt composed against an empty thread (so without echo-trim)
            incoming, echo_trimmed, deduped = given, 0, len(given)
        else:
            incoming, echo_trimmed = given, 0
            if history_len > 0:
                last = max((i for i, m in enumerate(given)
                            if m.role in ("assistant", "tool")), default=-1)
                incoming, echo_trimmed = given[last + 1:], last + 1
            deduped = len(incoming) if incoming and _ends_with(tail, incoming) else 0
        if deduped:
            history_end = tail[len(tail) - deduped].seq - 1
        else:
            history_end = tail[-1].seq if tail else store.max_seq(thread_id)
        history_count = history_len - deduped

        lanes = _Lanes()
        tokens = LaneTokens()
        memctx_extra: dict[str, Any] = {}

        if instructions:
            msg = Message(role="system", content=instructions)
            lanes.add("instructions", msg)
            tokens.instructions = self._count([msg])

        wm_chars = 0
        if self._wm is not None:
            block = self._wm.render(thread_id, resource)
            wm_chars = len(block)
            msg = Message(role="system", content=block)
            lanes.add("working_memory", msg)
            tokens.working_memory = self._count([msg])

        observations: list[Observation] = []
        if self.observational_config is not None:
            om = self._observational()
            om.compact(thread_id)
            observed = om.observed_seq(thread_id)
            observations = om.active(thread_id)
            window = self._unobserved_window(thread_id, observed, history_end)
            if observations:
                text = "# Observations\n" + "\n".join(o.text for o in observations)
                msg = Message(role="system", content=text)
                lanes.add("observations", msg,
                          observation_id=",".join(o.id for o in observations))
                tokens.observations = self._count([msg])
        else:
            window = [s for s in tail if s.seq <= history_end][-self.recent_n:] \
                if self.recent_n else []

        query = next((m.text() for m in reversed(incoming) if m.role == "user" and m.text()),
                     None)
        recalled_refs: list[MessageRef] = []
        dropped_refs: list[MessageRef] = []
        near_misses: list[NearMiss] = []
        scope_snapshot: dict[str, int] = {thread_id: history_end}
        skipped: str | None = None
        rc = self.recall_config
        if self.observational_config is not None:
            skipped = SKIP_OBSERVATIONAL if rc is not None else SKIP_OFF
        elif rc is None:
            skipped = SKIP_OFF
        elif not query:
            skipped = SKIP_NO_QUERY
        elif self.embed is None and rc.mode != "lexical":
            skipped = SKIP_NO_EMBEDDER
        elif history_count <= self.recent_n and rc.scope != "resource":
            skipped = SKIP_FITS
        else:
            assert query is not None
            window_refs = frozenset(s.ref for s in window)
            engine = self._recall_engine()
            as_of: dict[str, int] | None = None
            if deduped:
                # the retried input is already stored: rank as the first attempt did,
                # before it was written
                scope = engine.scope_threads(thread_id, resource, rc, thread=thread)
                stats = store.thread_stats(scope)  # one query for the scope's max seqs
                as_of = {t: stats.get(t, (0, -1))[1] for t in scope}
                as_of[thread_id] = history_end
            outcome = engine.run(query, thread_id=thread_id, resource_id=resource,
                                 config=rc, window=window_refs, as_of=as_of, thread=thread)
            skipped = outcome.skipped
            scope_snapshot = dict(outcome.scope_snapshot) or scope_snapshot
            near_misses = list(outcome.near_misses)
            # the engine already removes window rows; checked again because a stray one
            # would show twice in the prompt
            hits = [h for h in outcome.hits if (h.thread_id, h.seq) not in window_refs]
            # a repair only ever looks after its call: read each thread from its earliest
            # recalled call, not from seq 0
            first_call: dict[str, int] = {}
            for h in hits:
                if h.message.tool_calls():
                    first_call[h.thread_id] = min(first_call.get(h.thread_id, h.seq), h.seq)
            pairing = pair_tool_calls(
                hits, message_of=lambda h: h.message, window=window,
                read_thread=lambda tid: store.get_messages(
                    tid, from_seq=first_call.get(tid, -1) + 1))
            recalled_msgs: list[Message] = []
            for kept in pairing.kept:
                m = kept.message
                src = kept.source
                if src is None:
                    ref = _ref(m, origin="repair")
                    origin = "repair"
                else:
                    origin = src.origin
                    ref = _ref(m, score=src.score, rank=src.rank,
                               vector_score=src.vector_score,
                               lexical_score=src.lexical_score, origin=src.origin)
                recalled_refs.append(ref)
                lanes.add("recalled", m.as_message(), thread_id=m.thread_id, seq=m.seq,
                          origin=origin)
                recalled_msgs.append(m)
            tokens.recalled = self._count(recalled_msgs)
            for d in pairing.dropped:
                dropped_refs.append(_ref(d.message, score=d.source.score, rank=d.source.rank,
                                         origin=d.source.origin, reason=d.reason))

        for s in window:
            lanes.add("recent", s.as_message(), thread_id=s.thread_id, seq=s.seq)
        tokens.recent = self._count(window)
        for msg_in in incoming:
            lanes.add("input", msg_in)
        tokens.input = self._count(incoming)

        if dropped_refs:
            memctx_extra["dropped_count"] = len(dropped_refs)
            memctx_extra["dropped"] = dropped_refs[:PROVENANCE_DROPPED_CAP]
        memctx = Memctx(
            thread_id=thread_id, resource_id=resource, query=query, recall_skipped=skipped,
            recalled=recalled_refs, recent_count=len(window),
            recent=[_ref(s) for s in window[-PROVENANCE_RECENT_CAP:]],
            near_misses=near_misses,
            observation_count=len(observations),
            observations=[self._obs_ref(o) for o in observations],
            working_memory_chars=wm_chars, tokens=tokens, settings=self.settings(),
            incoming_count=len(incoming), echo_trimmed=echo_trimmed,
            scope_snapshot=scope_snapshot, **memctx_extra)
        return Composition(prompt=FrozenPrompt(items=lanes.items), memctx=memctx,
                           incoming=[] if deduped else list(incoming))

    def _unobserved_window(self, thread_id: str, observed_seq: int,
                           history_end: int) -> list[StoredMessage]:
        """Messages after ``observed_seq``; when one of them answers a call that was
        observed away, the window opens just before the earliest such call (SPEC §8.7)
        so no result reaches the model without its call."""
        store = self.storage.memory
        if history_end <= observed_seq:
            return []
        window = store.get_messages(thread_id, from_seq=observed_seq + 1, to_seq=history_end)
        pending = {r for m in window for r in (str(p.call_id) for p in m.tool_results())}
        pending -= {str(p.id) for m in window for p in m.tool_calls()}
        if not pending or observed_seq < 0:
            return window
        earlier = store.get_messages(thread_id, to_seq=observed_seq)
        starts = [m.seq for m in earlier if {str(p.id) for p in m.tool_calls()} & pending]
        if not starts:
            return window
        return store.get_messages(thread_id, from_seq=min(starts), to_seq=history_end)

    def _obs_ref(self, o: Observation) -> ObservationRef:
        text = " ".join(o.text.split())
        return ObservationRef(id=o.id, thread_id=o.thread_id, level=o.level,
                              from_seq=o.from_seq, to_seq=o.to_seq,
                              preview=text[:PREVIEW_CHARS],
                              tokens=int(self.token_counter(o.text)))


def _ends_with(tail: Sequence[StoredMessage], messages: Sequence[Message]) -> bool:
    """Whether the stored tail ends with exactly these messages (role, content and
    metadata), i.e. they were already persisted."""
    if not messages or len(tail) < len(messages):
        return False
    stored = tail[len(tail) - len(messages):]
    return all(a.as_message().canonical_json() == b.canonical_json()
               for a, b in zip(stored, messages, strict=True))


def _ref(m: StoredMessage, **fields: Any) -> MessageRef:
    return MessageRef(thread_id=m.thread_id, seq=m.seq, role=m.role, preview=preview(m),
                      **fields)
