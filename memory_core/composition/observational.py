"""Observational memory (SPEC §8): the observer distils a thread's oldest unobserved
messages into observations, the reflector condenses them; both calls are journaled.

Counters are derived from the stored observations (observed_seq = highest to_seq of
level 0, observe_seq = level-0 count, reflect_seq = level>=1 count), so deleting the
observations "resets the counters" while the journal keeps every model call: running
compaction again re-enters the same step keys and never calls the model twice.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, field_validator

from memory_core.errors import InvalidInputError
from memory_core.journal.keys import ObserverKeys
from memory_core.journal.reader import ObserverReader
from memory_core.journal.records import ObserveRecord, ReflectRecord
from memory_core.journal.writer import ObserverWriter
from memory_core.models.base import Tool, ToolSpec, complete_checked, model_identity
from memory_core.storage.base import ObservationVector, Storage
from memory_core.storage.common import Clock, utc_now
from memory_core.text import preview
from memory_core.tokens import TokenCounter, estimate_tokens
from memory_core.types import Message, Observation, StoredMessage

Embedder = Callable[[list[str]], np.ndarray]
_log = logging.getLogger(__name__)


OBSERVER_INSTRUCTIONS = (
    "You are the observer. Distil the conversation messages below into short, dated "
    "observations: keep decisions, facts, names, numbers and dates; drop chit-chat. "
    "Each message is marked [seq N | date]; keep the marker on every line you write.")
REFLECTOR_INSTRUCTIONS = (
    "You are the reflector. Condense the observations below into fewer observations "
    "without losing decisions, facts, names, numbers or dates.")


VECTOR_NAMESPACE = "observations"
RECALL_TOOL_NAME = "recall_observations"


def overfetch(top_k: int) -> int:
    """How many candidates semantic observation recall asks the vector store for."""
    return max(20 * top_k, 100)


class ObservationalConfig(BaseModel):
    """Observational memory settings. Token mode applies when ``token_threshold`` is
    set, otherwise the unobserved message count is compared with ``message_threshold``;
    reflection runs when active observations exceed ``observation_threshold``."""

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")
    model: Any  # a model, or ModelByTokens to choose one by the block's tokens (§8.4)
    token_threshold: int | None = None
    message_threshold: int = 30
    observation_threshold: int = 40
    # SPEC §8.1: with buffering, load_context never compacts; when the unobserved
    # history is over the threshold it calls on_compact(thread_id) instead (None: the
    # memory compacts in a background thread) and the turn uses what is ready
    buffering: bool = False
    on_compact: Callable[[str], Any] | None = None

    @field_validator("on_compact")
    @classmethod
    def _hook(cls, v: Any) -> Any:
        if v is not None and not callable(v):
            raise ValueError(f"on_compact must be callable, got {type(v).__name__}")
        return v

    @field_validator("token_threshold")
    @classmethod
    def _tok(cls, v: int | None) -> int | None:
        if v is not None and v < 1:
            raise ValueError(f"token_threshold must be >= 1, got {v}")
        return v

    @field_validator("message_threshold", "observation_threshold")
    @classmethod
    def _pos(cls, v: int) -> int:
        if v < 1:
            raise ValueError(f"threshold must be >= 1, got {v}")
        return v

    @property
    def mode(self) -> str:
        return "tokens" if self.token_threshold is not None else "messages"

    @property
    def threshold(self) -> int:
        return self.token_threshold if self.token_threshold is not None \
            else self.message_threshold


class ModelByTokens:
    """Model tiers chosen by token count (SPEC §8.4): ``{4000: small, 32000: large}``
    answers a block with the smallest tier at or above its tokens, else the largest
    tier. It is itself a model (``complete``), so it goes where a model goes."""

    def __init__(self, tiers: Mapping[int, Any]) -> None:
        if not isinstance(tiers, Mapping) or not tiers:
            raise InvalidInputError("ModelByTokens needs a non-empty {max_tokens: model} "
                                    f"mapping, got {tiers!r}")
        for limit, model in tiers.items():
            if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
                raise InvalidInputError(f"ModelByTokens tier limits must be integers >= 1, "
                                        f"got {limit!r}")
            if not callable(getattr(model, "complete", None)):
                raise InvalidInputError(f"ModelByTokens tier {limit} is a "
                                        f"{type(model).__name__}, not a model")
        self.tiers = dict(sorted(tiers.items()))

    def choose(self, tokens: int) -> Any:
        for limit, model in self.tiers.items():
            if limit >= tokens:
                return model
        return self.tiers[max(self.tiers)]

    def complete(self, messages: Sequence[Message], tools: Sequence[Any]) -> Any:
        """Answer with the tier chosen by the messages' estimated tokens."""
        return self.choose(sum(estimate_tokens(m.text() or "") for m in messages)).complete(
            messages, tools)


class ObservationMatch(BaseModel):
    """One ``recall_observations`` hit; ``range`` only when the observation has one."""

    model_config = ConfigDict(extra="forbid")
    id: str
    thread_id: str
    level: int
    text: str
    condensed: bool
    range: tuple[int, int] | None = None
    score: float | None = None


def observe_key(thread_id: str, n: int) -> str:
    return ObserverKeys(thread_id).observe(n)


def reflect_key(thread_id: str, n: int) -> str:
    return ObserverKeys(thread_id).reflect(n)


def observation_id(thread_id: str, n: int) -> str:
    """Thread-qualified (the observations table is keyed by id across threads) and
    zero-padded so that id order is creation order under a frozen clock."""
    return f"obs-{thread_id}-{n:04d}"


def reflection_id(thread_id: str, n: int) -> str:
    return f"obs-{thread_id}-r{n:04d}"


def observer_prompt(block: Sequence[StoredMessage]) -> list[Message]:
    """The observer's input: its instruction, then one message per stored row marked
    ``[seq N | YYYY-MM-DD]`` (the ExtractiveSummarizer's input format; tool parts stay
    parts so a call and its result are read as such)."""
    from memory_core.models.summarizer import format_block

    return [Message(role="system", content=OBSERVER_INSTRUCTIONS), *format_block(block)]


class ObservationalMemory:
    """Observer and reflector over one storage; every model call is journaled."""

    def __init__(self, storage: Storage, config: ObservationalConfig, *,
                 token_counter: TokenCounter = estimate_tokens, clock: Clock = utc_now,
                 embed: Embedder | None = None) -> None:
        self.storage = storage
        self.config = config
        self.token_counter = token_counter
        self.clock = clock
        self.embed = embed

    # -- derived counters ------------------------------------------------------------
    def _observations(self, thread_id: str) -> list[Observation]:
        return self.storage.memory.list_observations(thread_id, include_condensed=True)

    def observed_seq(self, thread_id: str) -> int:
        """Highest seq covered by a level-0 observation; -1 when none."""
        tos = [o.to_seq for o in self._observations(thread_id)
               if o.level == 0 and o.to_seq is not None]
        return max(tos) if tos else -1

    def observe_seq(self, thread_id: str) -> int:
        return sum(1 for o in self._observations(thread_id) if o.level == 0)

    def reflect_seq(self, thread_id: str) -> int:
        return sum(1 for o in self._observations(thread_id) if o.level >= 1)

    def active(self, thread_id: str) -> list[Observation]:
        """The observations not condensed away, in creation order."""
        return self.storage.memory.list_observations(thread_id, include_condensed=False)

    def render(self, thread_id: str) -> str | None:
        """The observations system text (SPEC §8.1), None when there are none."""
        act = self.active(thread_id)
        if not act:
            return None
        return "# Observations\n" + "\n".join(o.text for o in act)

    def window(self, thread_id: str) -> list[StoredMessage]:
        """The unobserved messages shown after the observations. When the window would
        open on a tool result whose call was observed, it starts at that call (§8.7)."""
        observed = self.observed_seq(thread_id)
        msgs = self.storage.memory.get_messages(thread_id)
        start = observed + 1
        rest = [m for m in msgs if m.seq >= start]
        early = {c.id: m.seq for m in msgs if m.seq < start for c in m.tool_calls()}
        orphan_calls = [early[r.call_id] for m in rest for r in m.tool_results()
                        if r.call_id in early]
        if orphan_calls:
            start = min(orphan_calls)
        return [m for m in msgs if m.seq >= start]

    # -- sizing ----------------------------------------------------------------------
    def size(self, messages: Sequence[StoredMessage]) -> int:
        if self.config.token_threshold is None:
            return len(messages)
        return sum(self.token_counter(m.text() or preview(m)) for m in messages)

    def _unobserved(self, thread_id: str) -> list[StoredMessage]:
        observed = self.observed_seq(thread_id)
        return [m for m in self.storage.memory.get_messages(thread_id) if m.seq > observed]

    def select_block(self, unobserved: Sequence[StoredMessage]) -> list[StoredMessage]:
        """The oldest rows to observe: take rows while what remains is larger than
        keep = floor(threshold/2), at least one, never ending between a tool call and
        its result (SPEC §8.3, §8.7)."""
        if not unobserved:
            return []
        keep = self.config.threshold // 2
        k = 0
        while k < len(unobserved) and (k == 0 or self.size(unobserved[k:]) > keep):
            k += 1
        block, rest = list(unobserved[:k]), list(unobserved[k:])
        pending = {c.id: i for i, m in enumerate(block) for c in m.tool_calls()}
        cut = [pending[r.call_id] for m in rest for r in m.tool_results()
               if r.call_id in pending]
        if cut and min(cut) > 0:
            return block[:min(cut)]
        if cut:
            # the block is one call whose result is later: take through its last result
            ids = set(pending)
            last = max(i for i, m in enumerate(rest)
                       if any(r.call_id in ids for r in m.tool_results()))
            return block + rest[:last + 1]
        return block

    # -- compaction ------------------------------------------------------------------
    def needs_compaction(self, thread_id: str) -> bool:
        return self.size(self._unobserved(thread_id)) > self.config.threshold

    def compact(self, thread_id: str) -> list[Observation]:
        """Observe while the unobserved history is over the threshold, then reflect
        when the active observations are too many. Returns the observations added."""
        added: list[Observation] = []
        self._repair_reflection(thread_id)
        while True:
            unobserved = self._unobserved(thread_id)
            if self.size(unobserved) <= self.config.threshold:
                break
            block = self.select_block(unobserved)
            added.append(self._observe(thread_id, block))
            reflected = self._maybe_reflect(thread_id)
            if reflected is not None:
                added.append(reflected)
        return added

    def _call(self, messages: list[Message], key: str,
              tokens: int) -> tuple[str, list[int] | None, str]:
        """One observer/reflector call: its text, the seqs it kept, and the name of the
        model that answered (a ``ModelByTokens`` tier chosen by ``tokens``)."""
        model = self.config.model
        if isinstance(model, ModelByTokens):
            model = model.choose(tokens)
        resp = complete_checked(model, messages, [], label="observational model", key=key)
        text = (resp.text or "").strip()
        name = model_identity(model).name
        kept = getattr(model, "last_kept_seqs", None)
        if kept is not None:
            return text, [int(k) for k in kept], name
        # an LLM reports kept seqs through the markers or a trailing "kept: 3,7" line
        from memory_core.models.summarizer import parse_summary

        parts = parse_summary(text)
        return parts.text.strip(), (list(parts.kept_seqs) or None), name

    def _observe(self, thread_id: str, block: list[StoredMessage]) -> Observation:
        n = self.observe_seq(thread_id)
        rec = ObserverReader(self.storage.runs, thread_id).observe(n)
        if rec is None:
            prompt = observer_prompt(block)
            tokens = sum(self.token_counter(m.text() or preview(m)) for m in block)
            text, kept, name = self._call(prompt, observe_key(thread_id, n), tokens)
            rec = ObserverWriter(self.storage.runs, thread_id).observe(n, ObserveRecord(
                text=text, from_seq=block[0].seq, to_seq=block[-1].seq,
                kept_seqs=kept if kept is not None else [m.seq for m in block],
                model=name, tokens=tokens))
        lo, hi = rec.from_seq, rec.to_seq
        obs = Observation(id=observation_id(thread_id, n), thread_id=thread_id, from_seq=lo,
                          to_seq=hi, level=0, text=rec.text,
                          source_ids=[str(m.seq) for m in block if lo <= m.seq <= hi]
                          or [str(s) for s in range(lo, hi + 1)],
                          created_at=self.clock())
        self.storage.memory.put_observation(obs)
        self._index(obs, n)
        return obs

    def _repair_reflection(self, thread_id: str) -> None:
        """A crash between adding a reflection and marking its sources leaves sources
        active; mark them now (the reflection is written first so nothing is lost)."""
        obs = self._observations(thread_id)
        condensed_by = {sid for o in obs if o.level >= 1 for sid in o.source_ids}
        stale = [o.id for o in obs if not o.condensed and o.id in condensed_by]
        if stale:
            self.storage.memory.mark_condensed(stale)

    def _maybe_reflect(self, thread_id: str) -> Observation | None:
        act = self.active(thread_id)
        if len(act) <= self.config.observation_threshold:
            return None
        n = self.reflect_seq(thread_id)
        rec = ObserverReader(self.storage.runs, thread_id).reflect(n)
        if rec is None:
            prompt = [Message(role="system", content=REFLECTOR_INSTRUCTIONS),
                      Message(role="user", content="\n".join(f"[{o.id}] {o.text}"
                                                             for o in act))]
            tokens = sum(self.token_counter(o.text) for o in act)
            text, _, name = self._call(prompt, reflect_key(thread_id, n), tokens)
            rec = ObserverWriter(self.storage.runs, thread_id).reflect(
                n, ReflectRecord(text=text, source_ids=[o.id for o in act], model=name,
                                 tokens=tokens))
        sources = [o for o in act if o.id in set(rec.source_ids)]
        ranged = [o for o in sources if o.from_seq is not None and o.to_seq is not None]
        obs = Observation(
            id=reflection_id(thread_id, n), thread_id=thread_id, level=1, text=rec.text,
            from_seq=min(o.from_seq for o in ranged if o.from_seq is not None)
            if ranged else None,
            to_seq=max(o.to_seq for o in ranged if o.to_seq is not None) if ranged else None,
            source_ids=list(rec.source_ids), created_at=self.clock())
        self.storage.memory.put_observation(obs)
        self._index(obs, n)
        self.storage.memory.mark_condensed(list(rec.source_ids))
        return obs

    # -- recall ----------------------------------------------------------------------
    def _match(self, o: Observation, score: float | None) -> ObservationMatch:
        rng = (o.from_seq, o.to_seq) if (o.from_seq is not None and o.to_seq is not None
                                         and o.thread_id) else None
        return ObservationMatch(id=o.id, thread_id=o.thread_id, level=o.level, text=o.text,
                                condensed=o.condensed, range=rng, score=score)

    # -- vectors (SPEC §8.9) ------------------------------------------------------------
    def _embed(self, texts: list[str]) -> np.ndarray:
        assert self.embed is not None
        return np.asarray(self.embed(texts), dtype=np.float32).reshape(len(texts), -1)

    def _vector_item(self, o: Observation, n: int, vec: np.ndarray) -> ObservationVector:
        thread = self.storage.memory.get_thread(o.thread_id)
        return ObservationVector(
            id=ObserverKeys(o.thread_id).vector(o.level, n), thread_id=o.thread_id,
            vector=vec, metadata={"thread_id": o.thread_id, "level": o.level,
                                  "from_seq": o.from_seq, "to_seq": o.to_seq, "obs_id": o.id,
                                  "owner": thread.resource_id if thread else None,
                                  "namespace": VECTOR_NAMESPACE})

    def _index(self, obs: Observation, n: int) -> None:
        """Store the vector of observation ``n`` of its level (first write wins: an
        observation made again after a counter reset keeps its one vector)."""
        if self.embed is None:
            return
        vid = ObserverKeys(obs.thread_id).vector(obs.level, n)
        if any(v.id == vid for v in self.storage.memory.list_observation_vectors(
                obs.thread_id)):
            return
        self.storage.memory.put_observation_vectors(
            [self._vector_item(obs, n, self._embed([obs.text])[0])])

    def index_missing(self, thread_id: str) -> int:
        """Store vectors for the thread's observations that have none (made before an
        embedder was set, or copied by clone_thread); returns how many were added."""
        if self.embed is None:
            return 0
        have = {v.metadata.get("obs_id")
                for v in self.storage.memory.list_observation_vectors(thread_id)}
        counts: dict[int, int] = {}
        todo: list[tuple[Observation, int]] = []
        for o in self._observations(thread_id):
            n = counts.get(o.level, 0)
            counts[o.level] = n + 1
            if o.id not in have:
                todo.append((o, n))
        if todo:
            vecs = self._embed([o.text for o, _ in todo])
            self.storage.memory.put_observation_vectors(
                [self._vector_item(o, n, vecs[i]) for i, (o, n) in enumerate(todo)])
        return len(todo)

    def recall_observations(self, thread_id: str, query: str, *,
                            semantic: bool | None = None, top_k: int = 5,
                            threshold: float = 0.0) -> list[ObservationMatch]:
        """Observations of the thread matching ``query``, condensed ones included.
        Keyword mode is a case-insensitive substring match (SPEC §8.8); semantic mode
        (the default when an embedder is set) asks the stored observation vectors for
        ``max(20·top_k, 100)`` candidates by cosine, keeps the thread's at or above
        ``threshold``, best first, the first ``top_k``, skipping ids that no longer
        resolve to an observation (§8.9)."""
        if not isinstance(query, str):
            raise InvalidInputError(f"query must be a string, got {type(query).__name__}")
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise InvalidInputError(f"top_k must be an integer >= 1, got {top_k!r}")
        if not query.strip():
            return []
        use_vectors = self.embed is not None if semantic is None else semantic
        if use_vectors and self.embed is None:
            raise InvalidInputError("semantic observation recall needs an embedder "
                                    "(ObservationalMemory(embed=...))")
        obs = {o.id: o for o in self._observations(thread_id)}
        if not use_vectors:
            needle = query.lower()
            return [self._match(o, None) for o in obs.values() if needle in o.text.lower()]
        self.index_missing(thread_id)
        fetched = self.storage.memory.query_observation_vectors(
            self._embed([query])[0], overfetch(top_k))
        kept = [v for v in fetched if v.metadata.get("thread_id") == thread_id
                and v.score is not None and v.score >= threshold]
        kept.sort(key=lambda v: (-(v.score or 0.0), v.id))
        return [self._match(obs[str(v.metadata.get("obs_id"))], v.score)
                for v in kept[:top_k] if str(v.metadata.get("obs_id")) in obs]

    def recall_tool(self, thread_id: str) -> Tool:
        """An opt-in ``recall_observations({query, expand?})`` tool returning
        ``{matches}``; with ``expand`` each match carries its source messages. Nothing
        registers it automatically."""

        def run(args: dict[str, Any]) -> dict[str, Any]:
            query = args.get("query")
            if not isinstance(query, str):
                raise InvalidInputError(f"recall_observations needs a string 'query', "
                                        f"got {query!r}")
            matches = self.recall_observations(thread_id, query)
            out: list[dict[str, Any]] = []
            for m in matches:
                d = m.model_dump(mode="json", exclude_none=True)
                if args.get("expand") and m.range is not None:
                    src = self.storage.memory.get_messages(m.thread_id, from_seq=m.range[0],
                                                           to_seq=m.range[1])
                    d["source"] = [{"seq": s.seq, "role": s.role, "text": preview(s)}
                                   for s in src]
                out.append(d)
            return {"matches": out}

        spec = ToolSpec(
            name=RECALL_TOOL_NAME,
            description="Search this conversation's observations (compacted history) by "
                        "keyword; set expand to see the original messages.",
            parameters={"type": "object",
                        "properties": {"query": {"type": "string"},
                                       "expand": {"type": "boolean"}},
                        "required": ["query"]})
        # a read (its one write, indexing observations missing vectors, is done once):
        # run twice, the same state and result (tests/test_tools_idempotent.py)
        return Tool(spec=spec, fn=run, idempotent=True)


class BackgroundCompactor:
    """The default ``on_compact`` of buffered observational memory: compacts a thread in
    a background thread so the turn does not wait for the observer. One compaction per
    thread at a time (a hand-off while one runs is folded into it: it loops until the
    thread is under the threshold); ``wait()`` joins them; a failure is logged and
    kept in ``errors`` (the journal makes the next attempt resume, never re-ask)."""

    def __init__(self, om: ObservationalMemory) -> None:
        self.om = om
        self.errors: list[tuple[str, BaseException]] = []
        self._lock = threading.Lock()
        self._running: dict[str, threading.Thread] = {}
        self._again: set[str] = set()

    def __call__(self, thread_id: str) -> None:
        with self._lock:
            if thread_id in self._running:
                self._again.add(thread_id)
                return
            t = threading.Thread(target=self._run, args=(thread_id,), daemon=True,
                                 name=f"observer:{thread_id}")
            self._running[thread_id] = t
        t.start()

    def _run(self, thread_id: str) -> None:
        while True:
            try:
                self.om.compact(thread_id)
            except Exception as e:  # noqa: BLE001 - a background failure must not vanish
                _log.warning("background observation of thread '%s' failed: %s",
                             thread_id, e)
                with self._lock:
                    self.errors.append((thread_id, e))
            with self._lock:
                if thread_id not in self._again:
                    del self._running[thread_id]
                    return
                self._again.discard(thread_id)

    def wait(self, timeout: float | None = None) -> bool:
        """Join every running compaction; False when one is still running at timeout."""
        while True:
            with self._lock:
                running = list(self._running.values())
            if not running:
                return True
            for t in running:
                t.join(timeout)
                if t.is_alive():
                    return False


__all__ = ["BackgroundCompactor", "ModelByTokens", "ObservationalConfig", "ObservationalMemory", "ObservationMatch",
           "RECALL_TOOL_NAME", "overfetch", "observe_key",
           "reflect_key", "observer_prompt", "observation_id", "reflection_id"]
