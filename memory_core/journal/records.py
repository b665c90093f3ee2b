"""Typed, versioned journal records and the upgrade chain of each.

Every record kind has one pydantic type and an ordered chain of upgrades (a function per
old version lifting a record one version up), so journals written by any earlier
version of this code are read as current records. ``RECORDS`` lists every kind; readers
go through ``load_record`` and never see an old shape.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from memory_core.errors import InvalidInputError
from memory_core.models.base import ModelIdentity, ModelResponse, ToolSpec
from memory_core.provenance.prompt import FrozenPrompt
from memory_core.provenance.record import MEMCTX_VERSION, Memctx
from memory_core.recall.config import LEGACY_HYBRID
from memory_core.types import Message

M = TypeVar("M", bound=BaseModel)
Upgrade = Callable[[dict[str, Any]], dict[str, Any]]


def validated(model: type[M], data: Any, what: str) -> M:
    """``model.model_validate(data)``, a malformed record becoming an InvalidInputError
    that names the record (``what``) and the first bad field — never a raw traceback."""
    try:
        return model.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err["loc"]) or "(top level)"
        raise InvalidInputError(f"{what} is malformed at {where}: {err['msg']}") from e


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class InputRecord(_Record):
    """``<run>:input``: the messages the caller gave, and the ones composition left to
    persist (after echo trim and retry dedupe)."""

    v: int = 1
    messages: list[Message]
    incoming: list[Message]
    sealed: bool = False  # the run will be sealed when it finishes (journal/seal.py)


class PersistRecord(_Record):
    """``<run>:persist:input`` / ``<run>:persist:output``: the seqs the run stored."""

    v: int = 1
    seqs: list[int]


class ToolSpecRecord(_Record):
    """A tool as it was offered to the model."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def of(cls, spec: ToolSpec) -> ToolSpecRecord:
        return cls(name=spec.name, description=spec.description,
                   parameters=dict(spec.parameters))

    def spec(self) -> ToolSpec:
        return ToolSpec(name=self.name, description=self.description,
                        parameters=dict(self.parameters))


class StepRecord(_Record):
    """``<run>:step:<n>``: one model step — who answered, what it was offered, the
    hashes of its input (for resume/replay divergence checks) and its response."""

    v: int = 2
    response: ModelResponse
    model: ModelIdentity
    tools: list[ToolSpecRecord] = Field(default_factory=list)
    input_hash: str | None = None  # sha256 of the whole input (None: not recorded)
    input_hashes: list[str] | None = None  # 16-hex per input message
    usage_known: bool = True  # False: the recording had no usage (imports)


class ToolRecord(_Record):
    """``<run>:tool:<call_id>``: one tool call and its result or error."""

    v: int = 1
    name: str
    args: Any = None
    status: Literal["ok", "error"]
    result: Any = None
    error: str | None = None


class OutputRecord(_Record):
    """``<run>:output``: how the run ended."""

    v: int = 1
    text: str
    steps: int
    tool_calls: int
    stop_reason: Literal["final", "max_steps", "tool_call"] = "final"


class ImportRecord(_Record):
    """``<run>:import``: where an imported run came from and what its recording said."""

    v: int = 1
    format: str | None = None
    file: str | None = None  # the imported file's name
    sha1: str | None = None  # of the imported file's bytes
    where: str | None = None  # line or span of the source
    notes: list[str] = Field(default_factory=list)
    request_params: dict[str, Any] = Field(default_factory=dict)  # temperature, tools…
    extra: dict[str, Any] = Field(default_factory=dict)

    def held_history(self) -> dict[str, Any] | None:
        """``extra.server_held_history`` (importing.md, "history held server-side"):
        ``reference``, ``reconstructed_from``, ``prompt_messages`` [start, end) and
        ``unrecorded``; None when the request sent its whole history."""
        held = self.extra.get("server_held_history")
        return held if isinstance(held, dict) else None

    def instructions_applied_by(self) -> str | None:
        """``extra.instructions_applied_by``: who applied the request's instructions
        server-side ("agent 'helper'"); None when the client sent them."""
        by = self.extra.get("instructions_applied_by")
        return by if isinstance(by, str) else None


class TitleRecord(_Record):
    """``<run>:title``: the title model's answer on a thread's first turn (SPEC §2.5):
    the cleaned title (None when it failed or was empty: the thread keeps its first-text
    title), who answered and the error, if any. A resume reads it and never asks twice."""

    v: int = 1
    title: str | None
    model: ModelIdentity
    error: str | None = None


class Expectation(_Record):
    """What a pinned run must keep: its answer ``contains`` / ``not_contains`` a
    ``text``; message ``ref`` is ``recalled``; the prompt stays at or under ``tokens``
    (``max_tokens``); its answer is ``unchanged`` against the recorded one."""

    kind: Literal["contains", "not_contains", "recalled", "max_tokens", "unchanged"]
    text: str | None = None
    ref: tuple[str, int] | None = None
    tokens: int | None = None

    @model_validator(mode="after")
    def _complete(self) -> Expectation:
        need = {"contains": "text", "not_contains": "text", "recalled": "ref",
                "max_tokens": "tokens"}.get(self.kind)
        if need is not None and getattr(self, need) in (None, ""):
            raise ValueError(f"a {self.kind!r} expectation needs its {need}")
        if self.tokens is not None and self.tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {self.tokens}")
        return self

    def describe(self) -> str:
        return {"contains": f"answer contains “{self.text}” (any case)",
                "not_contains": f"answer does not contain “{self.text}” (any case)",
                "recalled": f"{self.ref[0]}#{self.ref[1]} is recalled" if self.ref else "",
                "max_tokens": f"prompt ≤ {self.tokens} tokens",
                "unchanged": "answer unchanged"}[self.kind]


class PinRecord(_Record):
    """``suite:<name>:pin:<n>``: a run pinned to a regression suite with what it must
    keep, or (``removed``) taken out of it; the latest record of a run wins."""

    v: int = 1
    run_id: str
    expectations: list[Expectation] = Field(default_factory=list)
    removed: bool = False
    note: str | None = None
    at: datetime


class ObserveRecord(_Record):
    """``om:<thread>:proc:observe:<n>``: observer call n on a thread."""

    v: int = 1
    text: str
    from_seq: int
    to_seq: int
    kept_seqs: list[int] = Field(default_factory=list)
    # the model that answered and the block's tokens it was chosen by (SPEC §8.4 tiers);
    # None in records written before tiers existed
    model: str | None = None
    tokens: int | None = None


class ReflectRecord(_Record):
    """``om:<thread>:proc:reflect:<n>``: reflector call n on a thread."""

    v: int = 1
    text: str
    source_ids: list[str] = Field(default_factory=list)
    model: str | None = None
    tokens: int | None = None


# -- upgrades -------------------------------------------------------------------------
def _input_v1(rec: dict[str, Any]) -> dict[str, Any]:
    # ``incoming`` came later in v1; records without it persisted the messages as given
    return {**rec, "incoming": rec.get("incoming", rec.get("messages", []))}


def _prompt_v0_to_v1(rec: dict[str, Any]) -> dict[str, Any]:
    return {**rec, "v": 1}


def _memctx_v0_to_v1(record: dict[str, Any]) -> dict[str, Any]:
    """v0 (the seed's camelCase form) → v1 snake_case with our additions defaulted."""
    renames = {"threadId": "thread_id", "recentCount": "recent_count",
               "droppedCount": "dropped_count", "observationCount": "observation_count",
               "workingMemoryChars": "working_memory_chars", "incomingCount": "incoming_count",
               "echoTrimmed": "echo_trimmed"}
    out = {renames.get(k, k): val for k, val in record.items()}

    def ref(r: dict[str, Any]) -> dict[str, Any]:
        r = dict(r)
        if "threadId" in r:
            r["thread_id"] = r.pop("threadId")
        return r

    for lane in ("recalled", "recent", "dropped"):
        out[lane] = [ref(r) for r in out.get(lane, [])]
    out.setdefault("settings", {"recent_n": out.get("recent_count", 0),
                                "recall_enabled": bool(out.get("recalled"))})
    for camel in ("chainAppended", "chainInserted", "incomingUnrecoverable",
                  "incomingDedupedByShape"):
        out.pop(camel, None)
    out["v"] = 1
    return out


# the RecallConfig fields v1 recorded flat in ``settings`` (it lacked near_misses, rrf_k)
_V1_RECALL_FIELDS = ("top_k", "threshold", "message_range", "scope", "filter", "mode")


def _memctx_v1_to_v2(record: dict[str, Any]) -> dict[str, Any]:
    """v1 → v2: the flat recall settings become ``settings.recall`` (the whole
    RecallConfig). What v1 never recorded takes RecallConfig's defaults and is listed
    in ``unknown_fields``: ``settings.recall.near_misses``/``rrf_k`` when recall was
    configured, ``settings.recall`` when recall ran but its settings were not recorded
    (records upgraded from v0)."""
    out = dict(record)
    settings = dict(out["settings"])
    flat = {k: settings.pop(k, None) for k in _V1_RECALL_FIELDS}
    unknown = [u for u in out.get("unknown_fields", [])
               if u.removeprefix("settings.") not in _V1_RECALL_FIELDS]
    if flat["top_k"] is not None:
        # v1 recall ranked with rank-only fusion and none of the later refinements
        settings["recall"] = {**LEGACY_HYBRID,
                              **{k: v for k, v in flat.items() if v is not None}}
        unknown += ["settings.recall.near_misses", "settings.recall.rrf_k"]
    else:
        settings["recall"] = None
        if settings.get("recall_enabled") or len(unknown) < len(out.get("unknown_fields", [])):
            unknown.append("settings.recall")
    out["settings"] = settings
    out["unknown_fields"] = list(dict.fromkeys(unknown))
    out["v"] = 2
    return out


def _seed_memctx(rec: dict[str, Any]) -> int | None:
    """SPEC §6.5's seed record is camelCase whatever its ``v`` says: read it as v0."""
    return 0 if "threadId" in rec or "recentCount" in rec else None


def _step_v0_to_v1(rec: dict[str, Any]) -> dict[str, Any]:
    # v0 had no model info and no input hashes: "not verifiable" position-wise
    out = dict(rec)
    out.setdefault("model", {})
    out.setdefault("input_hash", None)
    out.setdefault("input_hashes", None)
    out["v"] = 1
    return out


_KNOWN_KINDS = {"offline-reader": "reader", "extractive-summarizer": "summarizer",
                "scripted": "scripted", "raising": "scripted"}


def identity_from_v1(info: Any, response_model: Any = None) -> dict[str, Any]:
    """A v1 step's ``{"name", "temperature", "seed"}`` as a ModelIdentity dict: names
    ``openai:<model>`` were the HTTP client, the reader/summariser/scripted models had
    fixed names, anything else is a model we know only by name."""
    info = dict(info) if isinstance(info, dict) else {}
    name = info.get("name")
    if not isinstance(name, str) or not name:
        name = response_model if isinstance(response_model, str) and response_model \
            else "unknown"
    kind = _KNOWN_KINDS.get(name, "custom")
    if name.startswith("openai:"):
        kind, name = "openai", name[len("openai:"):]

    def num(k: str) -> Any:
        v = info.get(k)
        return v if isinstance(v, int | float) and not isinstance(v, bool) else None

    seed = num("seed")
    return {"kind": kind, "name": name, "temperature": num("temperature"),
            "seed": int(seed) if seed is not None else None}


def _step_v1_to_v2(rec: dict[str, Any]) -> dict[str, Any]:
    out = dict(rec)
    resp = out.get("response")
    out["model"] = identity_from_v1(out.get("model"),
                                    resp.get("model") if isinstance(resp, dict) else None)
    out.setdefault("tools", [])
    out["v"] = 2
    return out


def _output_v1(rec: dict[str, Any]) -> dict[str, Any]:
    # ``stop_reason`` came later; records without it ended on a final answer
    return {**rec, "stop_reason": rec.get("stop_reason", "final")}


@dataclass(frozen=True)
class RecordSpec:
    """One record kind: its type, current version and the upgrade chain to it.
    ``normalise`` fills fields that were added within the current version."""

    kind: str
    model: type[BaseModel]
    version: int
    upgrades: dict[int, Upgrade] = field(default_factory=dict)
    normalise: Upgrade | None = None
    doc: str = ""
    # the version a record really is when its "v" says otherwise (the seed's memctx)
    detect: Callable[[dict[str, Any]], int | None] | None = None


RECORDS: dict[str, RecordSpec] = {s.kind: s for s in (
    RecordSpec("import", ImportRecord, 1, doc="where an imported run came from"),
    RecordSpec("input", InputRecord, 1, normalise=_input_v1, doc="the run's input messages"),
    RecordSpec("memctx", Memctx, MEMCTX_VERSION, {0: _memctx_v0_to_v1, 1: _memctx_v1_to_v2},
               doc="the provenance record of the composition", detect=_seed_memctx),
    RecordSpec("prompt", FrozenPrompt, 1, {0: _prompt_v0_to_v1},
               doc="the frozen, lane-tagged prompt of step 0"),
    RecordSpec("persist", PersistRecord, 1, doc="seqs of stored input or output"),
    RecordSpec("step", StepRecord, 2, {0: _step_v0_to_v1, 1: _step_v1_to_v2},
               doc="one model step"),
    RecordSpec("tool", ToolRecord, 1, doc="one tool call and its result"),
    RecordSpec("output", OutputRecord, 1, normalise=_output_v1, doc="how the run ended"),
    RecordSpec("title", TitleRecord, 1, doc="the model-made thread title of a first turn"),
    RecordSpec("observe", ObserveRecord, 1, doc="one observer call of a thread"),
    RecordSpec("reflect", ReflectRecord, 1, doc="one reflector call of a thread"),
    RecordSpec("pin", PinRecord, 1, doc="a run pinned to a regression suite"),
)}


def upgraded_dict(kind: str, raw: Any, key: str) -> tuple[dict[str, Any], bool]:
    """The raw record at ``key`` lifted to the current version of ``kind`` (as a dict),
    and whether an upgrade (or normalisation) changed it."""
    spec = RECORDS[kind]
    if not isinstance(raw, dict):
        raise InvalidInputError(
            f"journal entry '{key}' must be a JSON object, got {type(raw).__name__}")
    v = raw.get("v", 0)
    if not isinstance(v, int) or isinstance(v, bool):
        raise InvalidInputError(f"journal entry '{key}' has a non-integer version {v!r}")
    if v > spec.version:
        raise InvalidInputError(f"journal entry '{key}' is {kind} record version {v}, "
                                f"newer than this code ({spec.version})")
    data = dict(raw)
    if spec.detect is not None:
        real = spec.detect(data)
        if real is not None:
            v = real
    try:
        while v < spec.version:
            step = spec.upgrades.get(v)
            if step is None:
                raise InvalidInputError(f"journal entry '{key}': no upgrade of {kind} "
                                        f"records from version {v}")
            data = step(data)
            v = data["v"]
        if spec.normalise is not None:
            data = spec.normalise(data)
    except (KeyError, TypeError, AttributeError, ValueError) as e:
        raise InvalidInputError(
            f"journal entry '{key}' cannot be upgraded from version {v}: {e!r}") from e
    return data, data != raw


def load_record(kind: str, model: type[M], raw: Any, key: str) -> M:
    """The record at ``key`` as the current ``model`` of ``kind``."""
    data, _ = upgraded_dict(kind, raw, key)
    return validated(model, data, f"journal entry '{key}'")
