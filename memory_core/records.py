"""Reading journal records of every format version this project has written.

Each record kind has an upgrade chain: a function per old version that lifts it one
version up, so replay and analysis of old journals keep working after schema changes.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from memory_core.errors import InvalidInputError
from memory_core.prompt import FrozenPrompt
from memory_core.provenance import MEMCTX_VERSION, Memctx

M = TypeVar("M", bound=BaseModel)


def validated(model: type[M], data: Any, what: str) -> M:
    """``model.model_validate(data)``, a malformed record becoming an InvalidInputError
    that names the record (``what``) and the first bad field — never a raw traceback."""
    try:
        return model.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err["loc"]) or "(top level)"
        raise InvalidInputError(f"{what} is malformed at {where}: {err['msg']}") from e


def _version(record: Any, kind: str) -> int:
    if not isinstance(record, dict):
        raise InvalidInputError(f"{kind} record must be a JSON object, got {type(record).__name__}")
    v = record.get("v", 0)
    if not isinstance(v, int):
        raise InvalidInputError(f"{kind} record has a non-integer version {v!r}")
    return v


def upgrade_prompt(record: Any, key: str) -> FrozenPrompt:
    """The ``:prompt`` record at journal ``key``, lifted to the current format."""
    v = _version(record, "prompt")
    if v > 1:
        raise InvalidInputError(f"prompt record version {v} is newer than this code (1)")
    return validated(FrozenPrompt, {**record, "v": 1}, f"journal entry '{key}'")


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
        settings["recall"] = {k: v for k, v in flat.items() if v is not None}
        unknown += ["settings.recall.near_misses", "settings.recall.rrf_k"]
    else:
        settings["recall"] = None
        if settings.get("recall_enabled") or len(unknown) < len(out.get("unknown_fields", [])):
            unknown.append("settings.recall")
    out["settings"] = settings
    out["unknown_fields"] = list(dict.fromkeys(unknown))
    out["v"] = 2
    return out


_MEMCTX_UPGRADES = {0: _memctx_v0_to_v1, 1: _memctx_v1_to_v2}


def upgrade_memctx(record: Any, key: str) -> Memctx:
    """The ``:memctx`` record at journal ``key``, lifted to the current format."""
    v = _version(record, "memctx")
    if v > MEMCTX_VERSION:
        raise InvalidInputError(
            f"memctx record version {v} is newer than this code ({MEMCTX_VERSION})")
    data = dict(record)
    try:
        while v < MEMCTX_VERSION:
            data = _MEMCTX_UPGRADES[v](data)
            v = data["v"]
    except (KeyError, TypeError, AttributeError) as e:
        raise InvalidInputError(
            f"journal entry '{key}' cannot be upgraded from version {v}: {e!r}") from e
    return validated(Memctx, data, f"journal entry '{key}'")


def upgrade_step(record: Any) -> dict[str, Any]:
    """``:step:<n>`` entries: v0 had no model info and no input hash; v1 adds both.
    Records without per-message hashes get ``input_hashes: None``, which readers treat
    as "not verifiable" position-wise."""
    v = _version(record, "step")
    if v > 1:
        raise InvalidInputError(f"step record version {v} is newer than this code (1)")
    data = dict(record)
    data.setdefault("model", {})
    data.setdefault("input_hash", None)
    data.setdefault("input_hashes", None)
    data.setdefault("tools", [])  # the offered tool specs, recorded since the analysis engine
    data["v"] = 1
    return data


def upgrade_output(record: dict[str, Any]) -> dict[str, Any]:
    """``:output`` entries: ``stop_reason`` came later; records without it ended on a
    final answer."""
    rec = dict(record)
    rec.setdefault("stop_reason", "final")
    return rec


def upgrade_input(record: dict[str, Any]) -> dict[str, Any]:
    """``:input`` entries: ``incoming`` (what composition decided to persist) came
    later; records without it persisted the messages as given."""
    rec = dict(record)
    rec.setdefault("incoming", rec.get("messages", []))
    return rec
