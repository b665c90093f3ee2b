"""Our messages and tools in the OpenAI chat-completions format (the request side of
the codec). The client itself is :mod:`memory_core.models.openai_chat`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from memory_core.models.base import ToolSpec
from memory_core.types import Message, TextPart, ToolCallPart, ToolResultPart


def to_openai_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Our messages in the OpenAI chat format: assistant tool calls carry JSON-string
    arguments, each tool result becomes a ``tool`` message with its ``tool_call_id``."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if isinstance(m.content, str):
            plain: dict[str, Any] = {"role": m.role, "content": m.content}
            call_id = m.metadata.get("tool_call_id") or m.metadata.get("call_id")
            if m.role == "tool" and call_id:
                plain["tool_call_id"] = str(call_id)
            out.append(plain)
            continue
        text = " ".join(p.text for p in m.content if isinstance(p, TextPart))
        calls = [p for p in m.content if isinstance(p, ToolCallPart)]
        results = [p for p in m.content if isinstance(p, ToolResultPart)]
        if m.role == "assistant":
            msg: dict[str, Any] = {"role": "assistant", "content": text or None}
            if calls:
                msg["tool_calls"] = [
                    {"id": c.id, "type": "function",
                     "function": {"name": c.name,
                                  "arguments": json.dumps(c.args, ensure_ascii=False,
                                                          sort_keys=True)}}
                    for c in calls]
            out.append(msg)
            continue
        for r in results:
            content = r.result if isinstance(r.result, str) else json.dumps(
                r.result, ensure_ascii=False, sort_keys=True)
            out.append({"role": "tool", "tool_call_id": r.call_id, "name": r.name,
                        "content": content})
        if text or not results:
            out.append({"role": "user" if m.role == "tool" else m.role, "content": text})
    return out


def to_openai_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [{"type": "function",
             "function": {"name": t.name, "description": t.description,
                          "parameters": t.parameters}} for t in tools]


def __getattr__(name: str) -> Any:
    # the client moved to memory_core.models.openai_chat (on the openai SDK)
    if name == "OpenAIChatModel":
        from memory_core.models.openai_chat import OpenAIChatModel

        return OpenAIChatModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
