"""AgentMemory: appends messages with their embeddings and composes each turn's prompt
from lanes (instructions, working memory, observations, recalled, recent, input)
together with the provenance record (Memctx) that says why each message is there."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from memory_core.composition.presets import preset_kwargs
from memory_core.composition.processors import InputProcessor, TokenLimiter, run_processors
from memory_core.composition.stages import (
    InputTrim,
    RecallLane,
    Turn,
    Window,
    compose_turn,
    observation_lane,
    pair_recalled,
    recall_skip,
    recent_window,
    run_recall,
    token_text,
    trim_input,
    working_memory_lane,
)
from memory_core.composition.working_memory import (
    KeyLocks,
    WorkingMemory,
    WorkingMemoryConfig,
)
from memory_core.embedding.hashing import Embedder, embedder_name
from memory_core.errors import InvalidInputError, MemoryCoreError, NotFoundError
from memory_core.models.base import Tool
from memory_core.provenance.prompt import Composition
from memory_core.provenance.record import CompositionSettings
from memory_core.storage.base import Storage
from memory_core.storage.common import Clock, utc_now
from memory_core.tokens import TokenCounter, counter_label, estimate_tokens
from memory_core.types import AppendRow, Message, Observation, StoredMessage, Thread

if TYPE_CHECKING:
    from memory_core.composition.observational import (
        BackgroundCompactor,
        ObservationalConfig,
        ObservationalMemory,
        ObservationMatch,
    )
    from memory_core.journal import TitleRecord
    from memory_core.recall.config import RecallConfig
    from memory_core.recall.engine import RecallEngine
    from memory_core.recall.results import RecallHit

__all__ = ["AgentMemory", "thread_title", "token_text"]

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


TITLE_INSTRUCTIONS = ("Write a short title (at most 8 words) for a conversation that "
                      "starts with the user's message below. Answer with the title only.")


def ask_title(model: Any, messages: Sequence[Message], *, key: str) -> TitleRecord:
    """One title-model call: its cleaned answer (whitespace collapsed, quotes trimmed,
    cut to 80 characters; None when empty) or the error, as a ``TitleRecord``."""
    from memory_core.journal import TitleRecord
    from memory_core.models.base import complete_checked, model_identity

    identity = model_identity(model)
    first = thread_title(messages)
    if first is None:
        return TitleRecord(title=None, model=identity, error="no user text to title")
    prompt = [Message(role="system", content=TITLE_INSTRUCTIONS),
              Message(role="user", content=first)]
    try:
        resp = complete_checked(model, prompt, [], label="title model", key=key)
    except MemoryCoreError as e:
        return TitleRecord(title=None, model=identity, error=f"{type(e).__name__}: {e}")
    title = " ".join((resp.text or "").split()).strip("\"'` ")[:TITLE_CHARS] or None
    return TitleRecord(title=title, model=identity)


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


def _processor_chain(processors: Sequence[InputProcessor],
                     token_budget: int | None) -> tuple[InputProcessor, ...]:
    if isinstance(processors, InputProcessor) or not isinstance(processors, Sequence):
        raise InvalidInputError(
            f"processors must be a list of input processors, got {type(processors).__name__}")
    for i, p in enumerate(processors):
        if not isinstance(p, InputProcessor):
            raise InvalidInputError(
                f"processors[{i}] is a {type(p).__name__}, not an input processor (it needs "
                "name, settings() and process(draft, count))")
    chain = tuple(processors)
    if token_budget is not None:
        if any(isinstance(p, TokenLimiter) for p in chain):
            raise InvalidInputError(
                "token_budget and a TokenLimiter in processors both set a budget; pass one")
        chain += (TokenLimiter(token_budget),)
    return chain


def _check_id(name: str, value: Any, *, optional: bool = False) -> None:
    if value is None and optional:
        return
    if not isinstance(value, str) or not value:
        raise InvalidInputError(f"{name} must be a non-empty string, got {value!r}")


class AgentMemory:
    """Conversation memory over a Storage.

    ``embed`` is any ``list[str] -> float32 (n, d)`` callable (None: no vectors, no
    vector recall). ``recall=None`` turns recall off; ``working_memory`` and
    ``observational_memory`` are off unless configured. ``token_counter`` measures the
    lanes (default ceil(chars/4)); ``clock`` is handed to observational memory.
    ``processors`` is the input-processor chain run on the composed lanes (SPEC §6.6
    step 4); ``token_budget=N`` is shorthand for a ``TokenLimiter(N)`` run last.
    ``generate_title`` is a model (``complete(messages, tools)``) asked for a thread
    title on a thread's first turn run by the Runner, journaled under ``<run>:title``
    (SPEC §2.5; see ``title_thread``). ``observation_tool=True`` opts in to the
    ``recall_observations`` tool (SPEC §8.10; never registered otherwise).
    """

    def __init__(self, storage: Storage, embed: Embedder | None = None, recent_n: int = 6,
                 recall: RecallConfig | None = None,
                 working_memory: WorkingMemoryConfig | None = None,
                 observational_memory: ObservationalConfig | None = None,
                 token_counter: TokenCounter = estimate_tokens,
                 clock: Clock = utc_now, *, token_budget: int | None = None,
                 processors: Sequence[InputProcessor] = (),
                 generate_title: Any = None, observation_tool: bool = False) -> None:
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
            from memory_core.recall.config import RecallConfig as _RecallConfig

            if not isinstance(recall, _RecallConfig):
                raise InvalidInputError(
                    f"recall must be a RecallConfig or None, got {type(recall).__name__}")
        self.processors = _processor_chain(processors, token_budget)
        if generate_title is not None and not callable(getattr(generate_title, "complete",
                                                               None)):
            raise InvalidInputError(
                "generate_title must be a model with complete(messages, tools), got "
                f"{type(generate_title).__name__}")
        self.generate_title = generate_title
        if observation_tool and observational_memory is None:
            raise InvalidInputError("observation_tool=True needs observational_memory "
                                    "(there are no observations to recall without it)")
        self.observation_tool = bool(observation_tool)
        self.storage = storage
        self.embed = embed
        #: the store's vector dimension once it has one (it never changes after)
        self._store_dim: int | None = None
        self.recent_n = recent_n
        self.recall_config = recall
        self.working_memory_config = working_memory
        self.observational_config = observational_memory
        self.token_counter = token_counter
        self.clock = clock
        self._wm_locks = KeyLocks()
        self._wm = (WorkingMemory(storage.memory, working_memory, self._wm_locks, storage)
                    if working_memory is not None else None)
        self._engine: RecallEngine | None = None
        self._om: ObservationalMemory | None = None
        self._compactor: BackgroundCompactor | None = None
        self._lazy_lock = threading.Lock()

    @classmethod
    def from_preset(cls, name: str, *, storage: Storage, embed: Embedder | None = None,
                    **overrides: Any) -> AgentMemory:
        """A memory configured as a named preset (``composition/presets.py``: ``chat``,
        ``recall``); ``overrides`` are any other keyword arguments (``recent_n``,
        ``recall``, ``working_memory``, ``token_budget`` ...) and win over the preset's
        (SPEC §3.1).

        Example: ``AgentMemory.from_preset("recall", storage=s, token_budget=4000)``"""
        return cls(storage, **{**preset_kwargs(name, embed), **overrides})

    # -- lazily built collaborators ---------------------------------------------------
    def _recall_engine(self) -> RecallEngine:
        with self._lazy_lock:
            if self._engine is None:
                from memory_core.recall.engine import RecallEngine as _RecallEngine

                self._engine = _RecallEngine(self.storage.memory, self.embed)
            return self._engine

    def _observational(self) -> ObservationalMemory:
        with self._lazy_lock:
            if self._om is None:
                from memory_core.composition.observational import ObservationalMemory as _OM

                assert self.observational_config is not None
                self._om = _OM(self.storage, self.observational_config,
                               token_counter=self.token_counter, clock=self.clock,
                               embed=self.embed)
            return self._om

    def _hand_off(self) -> Callable[[str], object] | None:
        """Where buffered observational memory hands compaction (None: not buffered)."""
        config = self.observational_config
        if config is None or not config.buffering:
            return None
        if config.on_compact is not None:
            return config.on_compact
        om = self._observational()
        with self._lazy_lock:
            if self._compactor is None:
                from memory_core.composition.observational import BackgroundCompactor as _BC

                self._compactor = _BC(om)
            return self._compactor

    # -- observational memory (SPEC §8) ------------------------------------------------
    def _require_om(self) -> ObservationalMemory:
        if self.observational_config is None:
            raise InvalidInputError("observational memory is off; pass "
                                    "observational_memory=ObservationalConfig(...)")
        return self._observational()

    def compact_observations(self, thread_id: str) -> list[Observation]:
        """Compact the thread now (what ``on_compact`` is asked to arrange when
        buffering); returns the observations added."""
        _check_id("thread_id", thread_id)
        return self._require_om().compact(thread_id)

    def wait_for_observations(self, timeout: float | None = None) -> bool:
        """Join the background compactions of buffered observational memory; False
        when one still runs at ``timeout``."""
        return self._compactor.wait(timeout) if self._compactor is not None else True

    def recall_observations(self, query: str, *, thread_id: str, top_k: int = 5,
                            threshold: float = 0.0,
                            semantic: bool | None = None) -> list[ObservationMatch]:
        """SPEC §8.8–8.9: the thread's observations matching ``query`` — by cosine over
        the stored observation vectors when an embedder is set (top_k 5, threshold 0),
        else by case-insensitive substring — condensed ones included."""
        _check_id("thread_id", thread_id)
        return self._require_om().recall_observations(
            thread_id, query, semantic=semantic, top_k=top_k, threshold=threshold)

    def observation_recall_tool(self, thread_id: str) -> Tool:
        """The opt-in ``recall_observations({query, expand?})`` tool of a thread."""
        _check_id("thread_id", thread_id)
        return self._require_om().recall_tool(thread_id)

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

    def title_thread(self, thread_id: str, messages: Sequence[Message], *,
                     run_id: str) -> str | None:
        """SPEC §2.5: ask ``generate_title`` for the thread's title from the first turn's
        ``messages`` once per run, journaled under ``<run_id>:title`` (a resume reads the
        record and never asks again), and set it on the thread. An error or an empty
        answer is recorded and ignored: the thread keeps its first-text title."""
        from memory_core.journal import JournalWriter, RunReader

        if self.generate_title is None:
            return None
        recorded = RunReader(self.storage.runs, run_id).title()
        if recorded is None:
            recorded = JournalWriter(self.storage.runs, run_id).title(
                ask_title(self.generate_title, messages, key=f"{run_id}:title"))
        if recorded.title:
            thread = self.storage.memory.get_thread(thread_id)
            if thread is not None and thread.title != recorded.title:
                self.storage.memory.update_thread(thread_id, title=recorded.title)
        return recorded.title

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
        dim = self._store_dim
        if dim is None:
            # fixed by the store's first vector and never changed after: read until then
            dim = self._store_dim = self.storage.memory.embedding_dim()
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
        rows = self.prepare_append(messages, run_id=run_id, created_at=created_at)
        if not rows:
            return []
        with self.storage.session():  # one open of a DuckDB file for the whole append
            return self.append_rows(thread_id, rows, resource_id)

    def prepare_append(self, messages: Sequence[Message], *, run_id: str | None = None,
                       created_at: datetime | None = None) -> list[AppendRow]:
        """The rows ``append`` would store: the messages checked and embedded, without
        touching the store (the Runner embeds before it opens a write group)."""
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
        return [AppendRow(message=m, run_id=run_id, created_at=created_at, embedding=v)
                for m, v in zip(msgs, vectors, strict=True)]

    def append_rows(self, thread_id: str, rows: Sequence[AppendRow],
                    resource_id: str | None = None) -> list[int]:
        """Store rows made by ``prepare_append`` (the thread is created when missing)."""
        _check_id("thread_id", thread_id)
        _check_id("resource_id", resource_id, optional=True)
        try:  # the thread exists on every turn but the first: no look first
            return self.storage.memory.append_messages(thread_id, list(rows))
        except NotFoundError:
            self._ensure_thread(thread_id, resource_id, [r.message for r in rows])
        return self.storage.memory.append_messages(thread_id, list(rows))

    # -- recall -------------------------------------------------------------------------
    def _config_with(self, overrides: Mapping[str, Any]) -> RecallConfig:
        from memory_core.recall.config import RecallConfig as _RecallConfig

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
        with self.storage.session():
            if resource_id is None:
                thread = self.storage.memory.get_thread(thread_id)
                resource_id = thread.resource_id if thread else None
            outcome = self._recall_engine().run(query, thread_id=thread_id,
                                                resource_id=resource_id, config=config,
                                                window=frozenset(), thread=thread)
        return list(outcome.hits)

    # -- working memory -----------------------------------------------------------------
    # -- the no-query view and truncation (SPEC §2.7) ----------------------------------
    def get_messages(self, thread_id: str) -> list[StoredMessage]:
        """The no-query view of a thread: its recent window as a turn without input
        would see it (the last ``recent_n`` messages, opened at a cut-off tool call;
        with observational memory, the messages not yet observed). Nothing is written
        (the observer does not run); an unknown thread has no messages."""
        _check_id("thread_id", thread_id)
        store = self.storage.memory
        if store.get_thread(thread_id) is None:
            return []
        observed = (self._observational().observed_seq(thread_id)
                    if self.observational_config is not None else None)
        trim = trim_input(store, thread_id, [], self.recent_n)
        return recent_window(store, thread_id, trim, self.recent_n, observed).rows

    def truncate_messages_after(self, thread_id: str, index: object) -> int | None:
        """Rewind a thread (SPEC §2.7): keep ``get_messages(thread_id)[index]`` and
        delete every later message of the thread (``-1``: all); returns how many went,
        0 for a non-integer index, one below -1 or past the end, None when the store
        cannot delete. Observations and working memory are left as they are; the
        runs that stored removed messages keep their records (see
        ``memory_core.lifecycle.truncation``)."""
        from memory_core.lifecycle.truncation import truncate_messages_after

        _check_id("thread_id", thread_id)
        view = self.get_messages(thread_id)
        return truncate_messages_after(self.storage, thread_id, index, view)

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
        working memory is off or read-only, and the observation recall tool when
        ``observation_tool`` opted in."""
        _check_id("thread_id", thread_id)
        out: list[Tool] = []
        if self._wm is not None and not self._wm.config.read_only:
            if resource_id is None:
                thread = self.storage.memory.get_thread(thread_id)
                resource_id = thread.resource_id if thread else None
            out.append(self._wm.tool(thread_id, resource_id))
        if self.observation_tool:
            out.append(self.observation_recall_tool(thread_id))
        return out

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
            embedder=embedder_name(self.embed) if self.embed is not None else None,
            processors=[p.settings() for p in self.processors])

    def _count(self, messages: Sequence[Message]) -> int:
        return sum(int(self.token_counter(token_text(m))) for m in messages)

    def load_context(self, *, thread_id: str, resource_id: str | None = None,
                     input: Sequence[Message], instructions: str | None = None) -> Composition:
        """Compose the prompt for one turn, before its input is persisted, as the stages
        of ``memory_core.composition.stages``: trim the input, render working memory, compact and
        show observations, take the recent window, recall and pair tool calls, then
        assemble the lanes and their provenance record.

        A missing thread is created (with ``resource_id``, which may be None so that a
        first turn without a resource still works). ``Composition.incoming`` holds the
        rows the caller still has to persist (none on a retry whose input is stored).
        """
        _check_id("thread_id", thread_id)
        _check_id("resource_id", resource_id, optional=True)
        if instructions is not None and not isinstance(instructions, str):
            raise InvalidInputError(
                f"instructions must be a string or None, got {type(instructions).__name__}")
        given = _coerce_messages(input, "input")
        with self.storage.session():  # one open of a DuckDB file for all its reads
            return self._compose(thread_id, resource_id, given, instructions)

    def _compose(self, thread_id: str, resource_id: str | None, given: list[Message],
                 instructions: str | None) -> Composition:
        store = self.storage.memory
        thread = self._ensure_thread(thread_id, resource_id, given)
        turn = Turn(thread_id, resource_id if resource_id is not None else thread.resource_id,
                    thread)
        trim = trim_input(store, thread_id, given, self.recent_n)
        wm = working_memory_lane(self._wm, turn) if self._wm is not None else None
        observed = (observation_lane(self._observational(), thread_id, self._hand_off())
                    if self.observational_config is not None else None)
        processors = self.processors
        return compose_turn(
            store, turn, trim, recent_n=self.recent_n, instructions=instructions,
            working_memory=wm, observed=observed,
            recall=lambda window: self._recall_lane(turn, trim, window),
            process=(lambda d: run_processors(d, processors, self._count)) if processors
            else None,
            settings=self.settings(), count=self._count,
            count_text=lambda text: int(self.token_counter(text)))

    def _recall_lane(self, turn: Turn, trim: InputTrim, window: Window) -> RecallLane:
        """Recall (stage 5) and tool pairing (stage 6), or why recall did not run."""
        rc = self.recall_config
        skipped = recall_skip(rc, observational=self.observational_config is not None,
                              query=trim.query, has_embedder=self.embed is not None,
                              history_count=trim.history_count, recent_n=self.recent_n)
        if skipped is not None or rc is None:
            return RecallLane(skipped=skipped)
        lane = run_recall(self._recall_engine(), self.storage.memory, turn, trim, window, rc)
        return pair_recalled(self.storage.memory, lane, window, trim.incoming)
