"""Working memory (SPEC §7): structured state per thread or per resource, rendered into
the system prompt and updated by the model through a deep-merging tool."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from memory_core.errors import InvalidInputError, ReplayMismatch
from memory_core.journal.keys import RunKeys
from memory_core.models.base import JournaledCall, Tool, ToolSpec, current_call
from memory_core.storage.base import (
    RESOURCE_WM_PREFIX,
    THREAD_WM_PREFIX,
    MemoryStore,
    Storage,
)

TOOL_NAME = "update_working_memory"
_TOOL_DESCRIPTION = (
    "Update the working memory with a partial patch. Objects merge recursively, arrays "
    "and scalars replace, and null deletes a key.")
_TEMPLATE_HINT = (f"Update it by calling {TOOL_NAME} with memory set to the whole "
                  "template filled in, as text.")
TEXT_KEY = "text"  # a template's free-form, filled-in text
_UPDATE_HINT = (f"Update it by calling {TOOL_NAME} with only the fields that changed "
                "(null deletes a field).")


@dataclass(frozen=True)
class WorkingMemoryConfig:
    """``schema`` (a pydantic model) or ``template`` (Markdown shown to the model), or
    neither for a free-form record; ``scope`` picks the storage key; ``read_only``
    renders the memory but offers no update tool."""

    schema: type[BaseModel] | None = None
    template: str | None = None
    scope: Literal["thread", "resource"] = "thread"
    read_only: bool = False

    def __post_init__(self) -> None:
        if self.schema is not None and self.template is not None:
            raise InvalidInputError(
                "WorkingMemoryConfig takes a schema or a template, not both; drop one")
        if self.schema is not None and not (isinstance(self.schema, type)
                                            and issubclass(self.schema, BaseModel)):
            raise InvalidInputError(
                f"WorkingMemoryConfig.schema must be a pydantic model class, got "
                f"{self.schema!r}")
        if self.template is not None and not isinstance(self.template, str):
            raise InvalidInputError(
                f"WorkingMemoryConfig.template must be a string, got {self.template!r}")
        if self.scope not in ("thread", "resource"):
            raise InvalidInputError(
                f"WorkingMemoryConfig.scope must be 'thread' or 'resource', got "
                f"{self.scope!r}")
        if not isinstance(self.read_only, bool):
            raise InvalidInputError(
                f"WorkingMemoryConfig.read_only must be a bool, got {self.read_only!r}")


# -- keys (SPEC §7.2) --------------------------------------------------------------------
def working_memory_key(config: WorkingMemoryConfig, thread_id: str,
                       resource_id: str | None) -> str:
    """``resource:<rid>`` for resource scope with a known resource, else
    ``thread:<tid>``."""
    if config.scope == "resource" and resource_id:
        return f"{RESOURCE_WM_PREFIX}{resource_id}"
    return f"{THREAD_WM_PREFIX}{thread_id}"


def read_record(store: MemoryStore, key: str) -> dict[str, Any]:
    """The stored value, or ``{}`` when absent or not an object (SPEC §7.3)."""
    value = store.get_working_memory(key)
    return value if isinstance(value, dict) else {}


# -- deep merge (SPEC §7.6) --------------------------------------------------------------
def deep_merge(existing: Any, update: Any) -> Any:
    """Merge ``update`` into ``existing`` without mutating either.

    Both objects: null deletes a key, two objects merge recursively, arrays and scalars
    replace. A non-object ``existing`` (at any level, so also a new nested object)
    yields ``update`` as-is, nulls included; a non-object ``update`` yields ``{}``.
    """
    if not isinstance(update, dict):
        return {}
    if not isinstance(existing, dict):
        return update
    out: dict[str, Any] = dict(existing)
    for key, value in update.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict):
            # SPEC §7.6 applied at every level: a new nested object (nothing, or a
            # non-object, under the key) is stored as given, nulls included, as the
            # reference stores it; an existing object merges recursively
            out[key] = deep_merge(out.get(key), value)
        else:
            out[key] = value
    return out


# -- schema handling ---------------------------------------------------------------------
_PARTIALS: dict[type[BaseModel], type[BaseModel]] = {}
_PARTIALS_LOCK = threading.Lock()


def partial_model(schema: type[BaseModel]) -> type[BaseModel]:
    """The schema with every top-level field optional and nullable (null deletes), and
    unknown fields refused so a typo reaches the model as an error."""
    with _PARTIALS_LOCK:
        cached = _PARTIALS.get(schema)
        if cached is not None:
            return cached
        fields: dict[str, Any] = {
            name: (Optional[f.annotation], None)  # noqa: UP045 - built at runtime
            for name, f in schema.model_fields.items()}
        model: type[BaseModel] = create_model(
            f"{schema.__name__}Patch", __config__=ConfigDict(extra="forbid"), **fields)
        _PARTIALS[schema] = model
        return model


def tool_parameters(config: WorkingMemoryConfig) -> dict[str, Any]:
    """JSON schema of the tool input: the partial schema, ``{memory: object}``, or with
    a template ``{memory: text | object}`` (text: the whole filled-in template)."""
    if config.schema is not None:
        return partial_model(config.schema).model_json_schema()
    if config.template is not None:
        return {"type": "object",
                "properties": {"memory": {
                    "type": ["string", "object"],
                    "description": "the whole template filled in, as text (replaces it), "
                                   "or an object of fields to merge"}},
                "required": ["memory"]}
    return {"type": "object",
            "properties": {"memory": {"type": "object",
                                      "description": "the fields to merge"}},
            "required": ["memory"]}


def _describe_errors(err: ValidationError) -> str:
    parts = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"]) or "(root)"
        parts.append(f"field '{loc}': {e['msg']}")
    return "; ".join(parts)


def validate_memory(config: WorkingMemoryConfig, merged: dict[str, Any]) -> dict[str, Any]:
    """Check a merged record against the partial schema and return its JSON form
    (coerced values), raising InvalidInputError naming each bad field."""
    if config.schema is None:
        try:
            json.dumps(merged, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise InvalidInputError(f"working memory is not JSON-serialisable: {e}") from e
        return merged
    model = partial_model(config.schema)
    try:
        obj = model.model_validate(merged)
    except ValidationError as e:
        raise InvalidInputError(
            f"working memory patch does not fit {config.schema.__name__}: "
            f"{_describe_errors(e)}") from e
    return obj.model_dump(mode="json", exclude_unset=True)


def patch_from_input(config: WorkingMemoryConfig, args: Any) -> dict[str, Any]:
    """The whole input with a schema; else ``input.memory`` falling back to the input.
    With a template, ``memory`` may also be the filled-in template as text: it replaces
    the free-form text (``{"text": ...}``) the block then shows."""
    if not isinstance(args, dict):
        raise InvalidInputError(
            f"{TOOL_NAME} expects a JSON object, got {type(args).__name__}")
    if config.schema is not None:
        return args
    inner = args.get("memory")
    if config.template is not None and isinstance(inner, str):
        return {TEXT_KEY: inner}
    patch = inner if inner is not None else args
    if not isinstance(patch, dict):
        raise InvalidInputError(
            f"{TOOL_NAME}: 'memory' must be an object, got {type(patch).__name__}")
    return patch


# -- rendering (SPEC §7.4) ---------------------------------------------------------------
def render_block(config: WorkingMemoryConfig, value: dict[str, Any]) -> str:
    """``# Working Memory\\n<working_memory>\\n{BODY}\\n</working_memory>`` plus the
    field list and the update hint.

    With a template the body is the template verbatim and the stored values are not
    shown, as in the reference — unless the model wrote the template back filled in
    (free-form text, ``{"text": ...}``): then that text is the body, so the model reads
    what it wrote as the Markdown it wrote, never as JSON.
    """
    if config.template is not None:
        text_value = value.get(TEXT_KEY)
        body = text_value if isinstance(text_value, str) and text_value else config.template
    else:
        body = json.dumps(value, indent=2, ensure_ascii=False)
    text = f"# Working Memory\n<working_memory>\n{body}\n</working_memory>"
    if config.schema is not None and config.schema.model_fields:
        text += "\nFields: " + ", ".join(config.schema.model_fields)
    if not config.read_only:
        text += "\n" + (_TEMPLATE_HINT if config.template is not None else _UPDATE_HINT)
    return text


# -- per-key serialisation (SPEC §7.7) ---------------------------------------------------
class KeyLocks:
    """One lock per key, created on demand: updates to one key queue up, different keys
    never wait on each other (in-process only, as in the reference)."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}

    def get(self, key: str) -> threading.Lock:
        with self._guard:
            lock = self._locks.get(key)
            if lock is None:
                lock = self._locks[key] = threading.Lock()
            return lock


class WorkingMemory:
    """Reads, renders and updates working memory in one store under one config.

    ``storage``: the Storage ``store`` is part of (``AgentMemory`` gives it). With it, a
    patch applied for a journaled call (the tool run by the Runner, ``journaled_call``)
    is applied once per call, however often the call runs: a resume after a crash that
    came between the merge and the Runner's record of the result runs the tool again,
    and the merge is not idempotent (a new nested object keeps its nulls, SPEC §7.6,
    which a second merge deletes)."""

    def __init__(self, store: MemoryStore, config: WorkingMemoryConfig,
                 locks: KeyLocks | None = None, storage: Storage | None = None) -> None:
        if storage is not None and storage.memory is not store:
            raise InvalidInputError("WorkingMemory: storage must be the Storage whose "
                                    "memory store is store")
        self.store = store
        self.config = config
        self.locks = locks or KeyLocks()
        self.storage = storage

    def key(self, thread_id: str, resource_id: str | None) -> str:
        return working_memory_key(self.config, thread_id, resource_id)

    def get(self, thread_id: str, resource_id: str | None = None) -> dict[str, Any]:
        return read_record(self.store, self.key(thread_id, resource_id))

    def render(self, thread_id: str, resource_id: str | None = None) -> str:
        return render_block(self.config, self.get(thread_id, resource_id))

    def update(self, thread_id: str, resource_id: str | None, patch: Any, *,
               call: JournaledCall | None = None) -> dict[str, Any]:
        """Merge ``patch`` under the key's lock and store it; returns
        ``{"ok": True, "memory": merged}``. A bad patch raises InvalidInputError and
        stores nothing.

        With ``call`` (and a ``storage``) the patch is applied once per call: the merge
        and the mark ``<run>:wm:<call>`` holding its result commit in one transaction
        (``Storage.write_batch``), and a call marked already returns the result it
        recorded without merging again."""
        if self.config.read_only:
            raise InvalidInputError("working memory is read-only in this configuration")
        if not isinstance(patch, dict):
            raise InvalidInputError(
                f"a working-memory patch must be an object, got {type(patch).__name__}")
        key = self.key(thread_id, resource_id)
        if call is not None and self.storage is not None:
            return self._update_once(key, patch, call, self.storage)
        with self.locks.get(key):
            return {"ok": True, "memory": self._merge(key, patch)}

    def _merge(self, key: str, patch: dict[str, Any]) -> dict[str, Any]:
        merged = deep_merge(read_record(self.store, key), patch)
        clean = validate_memory(self.config, merged)
        self.store.put_working_memory(key, clean)
        return clean

    def _update_once(self, key: str, patch: dict[str, Any], call: JournaledCall,
                     storage: Storage) -> dict[str, Any]:
        mark = RunKeys(call.run_id).wm(call.call_id)
        # the key's lock, then the storage's transaction: the order of every update
        # (the lock, then the store's own write); nothing that holds a transaction
        # takes a key's lock (the Runner runs tools outside its write groups)
        with self.locks.get(key), storage.write_batch():
            done = storage.runs.get(mark)
            if done is not None:
                return _marked_result(mark, done)
            result = {"ok": True, "memory": self._merge(key, patch)}
            if not storage.runs.put_if_absent(mark, {"v": 1, "key": key, "result": result}):
                # only another process running this very call could have: the run is
                # not this one's (its claim was lost), and the merge rolls back
                raise ReplayMismatch(f"'{mark}' was written by another process while "
                                     "this one applied it")
        return result

    def tool(self, thread_id: str, resource_id: str | None) -> Tool:
        """The ``update_working_memory`` tool bound to one thread/resource. A bad patch
        comes back as ``{"ok": False, "error": ...}`` so the model can correct it. Run
        for a journaled call (the Runner's), it applies its patch once per call."""

        def run(args: dict[str, Any]) -> Any:
            try:
                patch = patch_from_input(self.config, args)
                return self.update(thread_id, resource_id, patch, call=current_call())
            except InvalidInputError as e:
                return {"ok": False, "error": str(e)}

        fn: Callable[[dict[str, Any]], Any] = run
        # not idempotent, unlike the reference's marking (SPEC §7.5): a new nested
        # object is stored with its nulls (§7.6) and a second merge deletes them
        # (tests/test_tools_idempotent.py); run for a journaled call it merges once
        return Tool(spec=ToolSpec(name=TOOL_NAME, description=_TOOL_DESCRIPTION,
                                  parameters=tool_parameters(self.config)), fn=fn)


def _marked_result(mark: str, value: Any) -> dict[str, Any]:
    """The result a working-memory mark recorded."""
    result = value.get("result") if isinstance(value, dict) else None
    if not isinstance(result, dict):
        raise ReplayMismatch(f"journal entry '{mark}' is not a working-memory mark: "
                             f"{value!r}")
    return result
