"""What every importer produces (one ``Exchange`` per recorded model request) and the
conversions they share: OpenAI-style messages to ``Message``, tool-name resolution.

Parsers only read and validate; nothing here touches storage (see ``writer.py``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, Field

from memory_core.errors import ImportFormatError
from memory_core.models.base import Usage
from memory_core.types import Message, TextPart, ToolCallPart, ToolResultPart

ImportFormat = Literal["openai", "otel"]
Progress = Callable[[int, int], None]

# OpenAI's "developer" role is the system role of newer models.
OPENAI_ROLES: dict[str, str] = {"system": "system", "developer": "system", "user": "user",
                                "assistant": "assistant", "tool": "tool"}
# A record with no timestamp gets one from this fixed origin plus its index, so that
# importing the same file twice gives the same data.
UNDATED_ORIGIN = datetime(1970, 1, 1, tzinfo=UTC)


class SkippedRecord(BaseModel):
    """A record of the file that was deliberately not imported, and why."""

    where: str
    reason: str


class ImportReport(BaseModel):
    """What an import wrote. ``already_imported`` is True when the file's runs were
    found in the store and nothing was written (importing is idempotent per file)."""

    format: ImportFormat
    file: str
    sha1: str
    threads_created: list[str] = Field(default_factory=list)
    messages_stored: int = 0
    embeddings_stored: int = 0
    runs_created: list[str] = Field(default_factory=list)
    skipped: list[SkippedRecord] = Field(default_factory=list)
    already_imported: bool = False


@dataclass
class Exchange:
    """One recorded model request and its response, normalised.

    ``instructions`` are the leading system messages (the prompt's instructions lane);
    ``history`` is the rest of the request in order; ``response`` the assistant reply.
    """

    where: str  # "line 3" or "span 5b8aa5a2d2c872e8 (chat gpt-4o)": used in errors
    index: int
    instructions: list[Message]
    history: list[Message]
    response: Message | None
    thread_key: str | None = None
    resource_id: str | None = None
    model: str | None = None
    usage: Usage = field(default_factory=Usage)
    usage_known: bool = False
    finish_reason: str | None = None
    temperature: float | None = None
    seed: int | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    error: str | None = None  # the recorded call failed (status "failed")
    notes: list[str] = field(default_factory=list)  # what was dropped while reading


@dataclass
class ParsedFile:
    """A parser's result: the exchanges to import and the records it skipped."""

    exchanges: list[Exchange]
    skipped: list[SkippedRecord] = field(default_factory=list)


def fail(where: str, problem: str) -> ImportFormatError:
    return ImportFormatError(f"{where}: {problem}")


def undated(index: int) -> datetime:
    return UNDATED_ORIGIN + timedelta(seconds=index)


def from_unix(value: Any, where: str, what: str) -> datetime:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise fail(where, f"{what} must be a unix timestamp in seconds, got {value!r}")
    return datetime.fromtimestamp(float(value), tz=UTC)


def parse_json_value(text: Any) -> Any:
    """Tool arguments arrive as a JSON string (OpenAI) or as a value (OTel); keep
    anything that is not valid JSON as the string it was."""
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def split_instructions(messages: Sequence[Message]) -> tuple[list[Message], list[Message]]:
    """Leading system messages are the agent's instructions; a system message later in
    the conversation is part of the conversation and stays there."""
    i = 0
    while i < len(messages) and messages[i].role == "system":
        i += 1
    return list(messages[:i]), list(messages[i:])


# -- OpenAI chat-completions messages ----------------------------------------------------
def _openai_text(content: Any, where: str, notes: list[str]) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise fail(where, f"content must be a string, null or a list of parts, got "
                          f"{type(content).__name__}")
    texts: list[str] = []
    for j, part in enumerate(content):
        if not isinstance(part, dict):
            raise fail(where, f"content part {j} must be an object, got {part!r}")
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif kind == "refusal" and isinstance(part.get("refusal"), str):
            texts.append(part["refusal"])
        else:
            notes.append(f"{where}: content part {j} of type {kind!r} not imported")
    return "\n".join(texts)


def _openai_tool_calls(raw: Any, where: str) -> list[ToolCallPart]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise fail(where, f"tool_calls must be a list, got {type(raw).__name__}")
    calls: list[ToolCallPart] = []
    for j, tc in enumerate(raw):
        fn = tc.get("function") if isinstance(tc, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
            raise fail(where, f"tool call {j} has no function name: {tc!r}")
        call_id = tc.get("id")
        if not isinstance(call_id, str) or not call_id:
            raise fail(where, f"tool call {j} ({fn['name']}) has no id")
        calls.append(ToolCallPart(id=call_id, name=fn["name"],
                                  args=parse_json_value(fn.get("arguments", {}))))
    return calls


def openai_message(raw: Any, where: str, notes: list[str]) -> Message:
    """One OpenAI chat message (request or response side) as a ``Message``. Tool
    results get an empty name here; ``resolve_tool_names`` fills it from the call."""
    if not isinstance(raw, dict):
        raise fail(where, f"a message must be an object, got {raw!r}")
    role = raw.get("role")
    if role not in OPENAI_ROLES:
        raise fail(where, f"unknown role {role!r} (expected one of "
                          f"{', '.join(OPENAI_ROLES)})")
    if "function_call" in raw and raw["function_call"] is not None:
        raise fail(where, "legacy 'function_call' messages are not supported; "
                          "use tool_calls")
    metadata: dict[str, Any] = {}
    if isinstance(raw.get("name"), str):
        metadata["name"] = raw["name"]
    text = _openai_text(raw.get("content"), where, notes)
    if role == "tool":
        call_id = raw.get("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            raise fail(where, "tool message has no tool_call_id")
        return Message(role="tool", content=[ToolResultPart(call_id=call_id, name="",
                                                            result=text)],
                       metadata=metadata)
    calls = _openai_tool_calls(raw.get("tool_calls"), where) if role == "assistant" else []
    if calls:
        parts: list[TextPart | ToolCallPart | ToolResultPart] = []
        if text:
            parts.append(TextPart(text=text))
        parts.extend(calls)
        return Message(role="assistant", content=parts, metadata=metadata)
    return Message(role=OPENAI_ROLES[role], content=text, metadata=metadata)  # type: ignore[arg-type]


def openai_messages(raw: Any, where: str, notes: list[str]) -> list[Message]:
    if not isinstance(raw, list):
        raise fail(where, f"'messages' must be a list, got {type(raw).__name__}")
    return [openai_message(m, f"{where}: message {i}", notes) for i, m in enumerate(raw)]


# -- tool-name resolution ---------------------------------------------------------------
def resolve_tool_names(exchanges: Sequence[Exchange]) -> None:
    """Give every tool result the name of the call it answers, in place.

    A result must answer a call made earlier in the same request, or (when records
    carry a thread key and clients send a trimmed window) earlier in that thread;
    otherwise the file is malformed and the error names the record and message.
    """
    known_by_key: dict[str, dict[str, str]] = {}
    for ex in exchanges:
        known = dict(known_by_key.get(ex.thread_key, {})) if ex.thread_key else {}
        conv = ex.history + ([ex.response] if ex.response is not None else [])
        for i, m in enumerate(conv):
            if not isinstance(m.content, list):
                continue
            new_parts: list[TextPart | ToolCallPart | ToolResultPart] = []
            changed = False
            for p in m.content:
                if isinstance(p, ToolCallPart):
                    known[p.id] = p.name
                elif isinstance(p, ToolResultPart) and not p.name:
                    name = known.get(p.call_id)
                    if name is None:
                        label = ("response" if i == len(ex.history)
                                 else f"message {i + len(ex.instructions)}")
                        raise fail(ex.where, f"{label} (tool) answers tool call "
                                             f"'{p.call_id}', but no earlier assistant "
                                             "message made that call")
                    p = p.model_copy(update={"name": name})
                    changed = True
                new_parts.append(p)
            if changed:
                m.content = new_parts
        if ex.thread_key:
            known_by_key[ex.thread_key] = known
