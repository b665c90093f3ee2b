"""The provenance record of one composition (journal key ``<run_id>:memctx``):
which messages reached the prompt through which lane, which were dropped and why,
which candidates just missed, the per-lane token counts and the settings used."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from memory_core.recall.config import RecallConfig
from memory_core.recall.results import NearMiss

MEMCTX_VERSION = 2  # v2: settings.recall holds the whole RecallConfig
PROVENANCE_RECENT_CAP = 24
PROVENANCE_DROPPED_CAP = 24

Lane = Literal["instructions", "working_memory", "observations", "recalled", "recent", "input"]
LANES: tuple[str, ...] = ("instructions", "working_memory", "observations", "recalled",
                          "recent", "input")


class MessageRef(BaseModel):
    """A stored message as provenance names it (SPEC §6.1)."""

    model_config = ConfigDict(extra="forbid")
    thread_id: str
    seq: int
    role: str
    preview: str
    score: float | None = None  # the ranking score for recall hits (fused in hybrid mode)
    rank: int | None = None  # 1-based rank among eligible candidates, hits only
    vector_score: float | None = None  # cosine, when computed
    lexical_score: float | None = None  # BM25, hybrid mode only
    origin: Literal["hit", "neighbour", "repair"] | None = None
    # dropped: "unanswered-tool-call" | "orphan-tool-result" | "duplicate-tool-call-id"
    # | "token-limit" (the token limiter removed it) | "tool-call-filter"
    reason: str | None = None
    # dropped: the lane it was left out of ("recent": the window could not pair it;
    # None in records before memctx v2, which dropped recalled rows only)
    lane: Literal["recalled", "recent"] | None = None


class ObservationRef(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    thread_id: str
    level: int
    from_seq: int | None = None
    to_seq: int | None = None
    preview: str
    tokens: int = 0


class Processed(BaseModel):
    """One change an input processor made to the composed lanes (SPEC §6.6 step 4):
    which processor, which item (a stored message by thread/seq, an observation by
    id, or the working-memory block), whether it was removed or shortened, its tokens
    before and after, and why."""

    model_config = ConfigDict(extra="forbid")
    processor: str  # "token-limiter" | "tool-call-filter" | a custom processor's name
    lane: Lane
    thread_id: str | None = None
    seq: int | None = None
    observation_id: str | None = None
    action: Literal["removed", "shortened"]
    tokens_before: int
    tokens_after: int
    reason: str


class LaneTokens(BaseModel):
    model_config = ConfigDict(extra="forbid")
    instructions: int = 0
    working_memory: int = 0
    observations: int = 0
    recalled: int = 0
    recent: int = 0
    input: int = 0

    @property
    def total(self) -> int:
        return (self.instructions + self.working_memory + self.observations + self.recalled
                + self.recent + self.input)


class CompositionSettings(BaseModel):
    """How a composition was configured. ``recall`` is the run's RecallConfig itself,
    every field (None when none was configured), so analysis rebuilds it exactly; it
    is recorded even when observational memory turned recall off (``recall_enabled``
    says whether it ran)."""

    model_config = ConfigDict(extra="forbid")
    recent_n: int
    recall_enabled: bool
    recall: RecallConfig | None = None
    working_memory: Literal["off", "thread", "resource"] = "off"
    working_memory_read_only: bool = False
    observational: bool = False
    token_counter: str = "chars/4"
    embedder: str | None = None
    # the input processors in the order they ran, each as its settings
    # ({"name": "token-limiter", "limit": 4000, "priority": [...]}); [] before they existed
    processors: list[dict[str, Any]] = Field(default_factory=list)

    @model_serializer(mode="wrap")
    def _omit_unused(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _omit_defaults(handler(self), {"processors": []})

    def flat(self) -> dict[str, Any]:
        """The settings as one flat JSON dict, the recall fields inlined (``top_k``,
        ``threshold``, ...; None when recall was not configured), for tables and
        setting-by-setting diffs."""
        data = self.model_dump(mode="json", exclude={"recall"})
        recall = (self.recall.model_dump(mode="json") if self.recall is not None
                  else dict.fromkeys(RecallConfig.model_fields))
        return {**data, **recall}


class Memctx(BaseModel):
    """Journal record ``<run_id>:memctx`` (and what ``load_context`` returns).

    Seed fields: recalled, recent_count, recent (capped at 24), dropped_count, dropped
    (capped at 24), observation_count, working_memory_chars. Ours on top: v, thread_id,
    resource_id, query, recall_skipped, tokens, settings, near_misses, observations,
    incoming_count, echo_trimmed, processed, over_budget.
    """

    model_config = ConfigDict(extra="forbid")
    v: int = MEMCTX_VERSION
    thread_id: str
    resource_id: str | None = None
    query: str | None = None
    recall_skipped: str | None = None  # why recall did not run, when it did not
    recalled: list[MessageRef] = Field(default_factory=list)
    recent_count: int = 0
    recent: list[MessageRef] = Field(default_factory=list)
    dropped_count: int = 0
    dropped: list[MessageRef] = Field(default_factory=list)
    near_misses: list[NearMiss] = Field(default_factory=list)
    observation_count: int = 0
    observations: list[ObservationRef] = Field(default_factory=list)
    working_memory_chars: int = 0
    tokens: LaneTokens = Field(default_factory=LaneTokens)
    settings: CompositionSettings
    incoming_count: int = 0
    echo_trimmed: int = 0
    # highest seq of every thread in recall scope when composing: lets analysis rank a
    # message exactly as it ranked then, ignoring what was written later
    scope_snapshot: dict[str, int] = Field(default_factory=dict)
    # "composed" by AgentMemory, or "imported" (reconstructed from a recorded request:
    # fields that could not be known are listed in unknown_fields, never invented)
    # what the input processors removed or shortened, in order (removed messages are
    # also in dropped, reason "token-limit" or "tool-call-filter")
    processed: list[Processed] = Field(default_factory=list)
    # tokens the prompt still exceeds the token budget by: instructions and the input
    # never give way, so when they alone exceed it the prompt goes out over budget
    over_budget: int = 0
    # observational memory with buffering (SPEC §8.1): the unobserved history was over
    # the threshold, compaction was handed off and the prompt used the observations
    # ready then (the ones in ``observations``); replay reads this frozen record
    observations_pending: bool = False
    # "messages-only": the memory offered only get_messages (SPEC §6.8, other_memory.py)
    source: Literal["composed", "imported", "messages-only"] = "composed"
    unknown_fields: list[str] = Field(default_factory=list)

    def is_unknown(self, field: str) -> bool:
        """Whether ``field`` (a dotted path such as ``settings.recall.top_k``) is one the
        record could not know: it or a path above it is in ``unknown_fields``."""
        parts = field.split(".")
        return any(".".join(parts[:i]) in self.unknown_fields for i in range(1, len(parts) + 1))

    def is_unknown_setting(self, key: str) -> bool:
        """``is_unknown`` for a key of ``settings.flat()`` (``top_k``, ``recent_n``…)."""
        inner = "" if key in CompositionSettings.model_fields else "recall."
        return self.is_unknown(f"settings.{inner}{key}")

    def known_json(self) -> dict[str, Any]:
        """The record as JSON without what it could not know: a field named in
        ``unknown_fields`` (or under one), and the count of one (``dropped_count``,
        ``observation_count``, ``working_memory_chars``), is left out, never shown as the
        placeholder it is stored with (an imported run's ``settings.recall_enabled:
        false``, its ``recalled: []``). A record with nothing unknown is all of it."""
        return _known(self.model_dump(mode="json"), self.is_unknown, "")

    @property
    def imported(self) -> bool:
        return self.source == "imported"

    @property
    def messages_only(self) -> bool:
        return self.source == "messages-only"

    @model_serializer(mode="wrap")
    def _omit_unused(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _omit_defaults(handler(self), {"processed": [], "over_budget": 0,
                                                "observations_pending": False})


# counts of a field, unknown when it is
_COUNT_OF = {"dropped_count": "dropped", "observation_count": "observations",
             "working_memory_chars": "working_memory"}


def _known(data: dict[str, Any], unknown: Callable[[str], bool], at: str) -> dict[str, Any]:
    """``data`` (at the dotted path ``at``) without the fields ``unknown`` names, looked
    for in nested objects and in the objects of lists (``recent.seq``)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        path = at + key
        if unknown(path) or (not at and key in _COUNT_OF and unknown(_COUNT_OF[key])):
            continue
        if isinstance(value, dict):
            value = _known(value, unknown, path + ".")
        elif isinstance(value, list):
            value = [_known(v, unknown, path + ".") if isinstance(v, dict) else v
                     for v in value]
        out[key] = value
    return out


def _omit_defaults(data: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    """Leave out fields added after memctx v2 while they hold their default, so a run
    without input processors records (and seals) exactly what it did before them;
    reading fills the defaults back in."""
    return {k: v for k, v in data.items() if k not in defaults or v != defaults[k]}


# -- previews (SPEC §6.2, §6.3) ---------------------------------------------------------
