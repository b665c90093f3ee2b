"""Observational memory (SPEC §8): the observer distils a thread's oldest unobserved
messages into observations, the reflector condenses them; both calls are journaled.

Counters are derived from the stored observations (observed_seq = highest to_seq of
level 0, observe_seq = level-0 count, reflect_seq = level>=1 count), so deleting the
observations "resets the counters" while the journal keeps every model call: running
compaction again re-enters the same step keys and never calls the model twice.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, field_validator

from memory_core.errors import InvalidInputError
from memory_core.journal.keys import ObserverKeys
from memory_core.journal.reader import ObserverReader
from memory_core.journal.records import ObserveRecord, ReflectRecord
from memory_core.journal.writer import ObserverWriter
from memory_core.models.base import Tool, ToolSpec, complete_checked
from memory_core.provenance import preview
from memory_core.storage.base import Storage
from memory_core.storage.common import Clock, utc_now
from memory_core.tokens import TokenCounter, estimate_tokens
from memory_core.types import Message, Observation, StoredMessage
from memory_core.vectors import cosine_to

Embedder = Callable[[list[str]], np.ndarray]


OBSERVER_INSTRUCTIONS = (
    "You are the observer. Distil the conversation messages below into short, dated "
    "observations: keep decisions, facts, names, numbers and dates; drop chit-chat. "
    "Each message is marked [seq N | date]; keep the marker on every line you write.")
REFLECTOR_INSTRUCTIONS = (
    "You are the reflector. Condense the observations below into fewer observations "
    "without losing decisions, facts, names, numbers or dates.")


class ObservationalConfig(BaseModel):
    """Observational memory settings. Token mode applies when ``token_threshold`` is
    set, otherwise the unobserved message count is compared with ``message_threshold``;
    reflection runs when active observations exceed ``observation_threshold``."""

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")
    model: Any
    token_threshold: int | None = None
    message_threshold: int = 30
    observation_threshold: int = 40

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
        self._vectors: dict[str, np.ndarray] = {}  # observation text -> vector

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

    def _call(self, messages: list[Message], key: str) -> tuple[str, list[int] | None]:
        resp = complete_checked(self.config.model, messages, [], label="observational model",
                                key=key)
        text = (resp.text or "").strip()
        kept = getattr(self.config.model, "last_kept_seqs", None)
        if kept is not None:
            return text, [int(k) for k in kept]
        # an LLM reports kept seqs through the markers or a trailing "kept: 3,7" line
        from memory_core.models.summarizer import parse_summary

        parts = parse_summary(text)
        return parts.text.strip(), (list(parts.kept_seqs) or None)

    def _observe(self, thread_id: str, block: list[StoredMessage]) -> Observation:
        n = self.observe_seq(thread_id)
        rec = ObserverReader(self.storage.runs, thread_id).observe(n)
        if rec is None:
            prompt = observer_prompt(block)
            text, kept = self._call(prompt, observe_key(thread_id, n))
            rec = ObserverWriter(self.storage.runs, thread_id).observe(n, ObserveRecord(
                text=text, from_seq=block[0].seq, to_seq=block[-1].seq,
                kept_seqs=kept if kept is not None else [m.seq for m in block]))
        lo, hi = rec.from_seq, rec.to_seq
        obs = Observation(id=observation_id(thread_id, n), thread_id=thread_id, from_seq=lo,
                          to_seq=hi, level=0, text=rec.text,
                          source_ids=[str(m.seq) for m in block if lo <= m.seq <= hi]
                          or [str(s) for s in range(lo, hi + 1)],
                          created_at=self.clock())
        self.storage.memory.put_observation(obs)
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
            text, _ = self._call(prompt, reflect_key(thread_id, n))
            rec = ObserverWriter(self.storage.runs, thread_id).reflect(
                n, ReflectRecord(text=text, source_ids=[o.id for o in act]))
        sources = [o for o in act if o.id in set(rec.source_ids)]
        ranged = [o for o in sources if o.from_seq is not None and o.to_seq is not None]
        obs = Observation(
            id=reflection_id(thread_id, n), thread_id=thread_id, level=1, text=rec.text,
            from_seq=min(o.from_seq for o in ranged if o.from_seq is not None)
            if ranged else None,
            to_seq=max(o.to_seq for o in ranged if o.to_seq is not None) if ranged else None,
            source_ids=list(rec.source_ids), created_at=self.clock())
        self.storage.memory.put_observation(obs)
        self.storage.memory.mark_condensed(list(rec.source_ids))
        return obs

    # -- recall ----------------------------------------------------------------------
    def _match(self, o: Observation, score: float | None) -> ObservationMatch:
        rng = (o.from_seq, o.to_seq) if (o.from_seq is not None and o.to_seq is not None
                                         and o.thread_id) else None
        return ObservationMatch(id=o.id, thread_id=o.thread_id, level=o.level, text=o.text,
                                condensed=o.condensed, range=rng, score=score)

    def _vector(self, text: str) -> np.ndarray:
        v = self._vectors.get(text)
        if v is None:
            assert self.embed is not None
            v = np.asarray(self.embed([text]), dtype=np.float32)[0]
            self._vectors[text] = v
        return v

    def recall_observations(self, thread_id: str, query: str, *,
                            semantic: bool | None = None, top_k: int = 5,
                            threshold: float = 0.0) -> list[ObservationMatch]:
        """Observations of the thread matching ``query``, condensed ones included.
        Keyword mode is a case-insensitive substring match (SPEC §8.8); semantic mode
        (the default when an embedder is set) ranks by cosine (§8.9)."""
        if not isinstance(query, str):
            raise InvalidInputError(f"query must be a string, got {type(query).__name__}")
        if not query.strip():
            return []
        if top_k < 1:
            raise InvalidInputError(f"top_k must be >= 1, got {top_k}")
        obs = self._observations(thread_id)
        use_vectors = self.embed is not None if semantic is None else semantic
        if use_vectors and self.embed is None:
            raise InvalidInputError("semantic observation recall needs an embedder "
                                    "(ObservationalMemory(embed=...))")
        if not use_vectors:
            needle = query.lower()
            return [self._match(o, None) for o in obs if needle in o.text.lower()]
        q = self._vector(query)
        sims: list[float] = ([float(x) for x in cosine_to(
            np.stack([self._vector(o.text) for o in obs]), q)] if obs else [])
        scored = [(s, i, o) for i, (s, o) in enumerate(zip(sims, obs, strict=True))
                  if s >= threshold]
        scored.sort(key=lambda t: (-t[0], t[1]))
        return [self._match(o, round(s, 6)) for s, _, o in scored[:top_k]]

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
            name="recall_observations",
            description="Search this conversation's observations (compacted history) by "
                        "keyword; set expand to see the original messages.",
            parameters={"type": "object",
                        "properties": {"query": {"type": "string"},
                                       "expand": {"type": "boolean"}},
                        "required": ["query"]})
        return Tool(spec=spec, fn=run)


__all__ = ["ObservationalConfig", "ObservationalMemory", "ObservationMatch", "observe_key",
           "reflect_key", "observer_prompt", "observation_id", "reflection_id"]
