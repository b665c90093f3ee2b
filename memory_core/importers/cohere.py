"""Cohere's v2 Chat API (``POST /v2/chat``, what the ``cohere`` SDK's ``ClientV2.chat``
and ``chat_stream`` send) as the chat-completions record it is equivalent to: its
``messages`` and ``tools`` are OpenAI's already, but for content given as parts
(``text``; a tool result's ``document`` parts, read as their data) and an assistant's
``tool_plan``; the answer is ``message`` with ``finish_reason`` and ``usage.tokens`` (the
tokens the model saw and wrote, not the ``billed_units``); a stream's events
(``message-start``, ``content-delta``, ``tool-plan-delta``, ``tool-call-start``/``-delta``,
``message-end``) are joined first.

The ``tool_plan`` a model writes before its calls, and its ``citations``, are noted, not
imported: clients send the assistant's turn back without them, so keeping the plan in the
answer would make the next request's history differ from it."""

from __future__ import annotations

import json
from typing import Any

from memory_core.importers.common import fail
from memory_core.importers.openai_shapes import stream_events

COHERE_PATHS = ("/v2/chat",)
_STREAM_TYPES = ("message-start", "content-delta", "tool-plan-delta", "tool-call-start",
                 "message-end")


def _is_answer(response: Any) -> bool:
    return isinstance(response, dict) and isinstance(response.get("message"), dict) and (
        "finish_reason" in response) and isinstance(response.get("usage"), dict) and (
        "billed_units" in response["usage"] or "tokens" in response["usage"])


def is_cohere_record(obj: Any) -> bool:
    """A record whose answer is Cohere v2's (``message``, ``finish_reason``, ``usage``
    with ``tokens``/``billed_units``) or a stream of its events."""
    response = obj.get("response") if isinstance(obj, dict) else None
    if _is_answer(response):
        return True
    if isinstance(response, str):
        return any(f'"type":"{t}"' in response[:4000] for t in _STREAM_TYPES[:1])
    return isinstance(response, list) and bool(response) and isinstance(response[0], dict) \
        and response[0].get("type") in _STREAM_TYPES


def _parts_text(content: Any, where: str) -> Any:
    """Content parts as OpenAI's: ``text`` parts kept, a ``document`` part as its data's
    JSON text (what a tool result gives the model)."""
    if not isinstance(content, list):
        return content
    out: list[dict[str, Any]] = []
    for j, part in enumerate(content):
        if not isinstance(part, dict):
            raise fail(where, f"content part {j} must be an object, got {part!r}")
        if part.get("type") == "document":
            data = (part.get("document") or {}).get("data")
            out.append({"type": "text", "text": data if isinstance(data, str)
                        else json.dumps(data, ensure_ascii=False)})
        else:
            out.append(part)
    return out


def _message(raw: Any, where: str, notes: list[str]) -> Any:
    if not isinstance(raw, dict):
        return raw  # the chat reader names what is wrong with it
    out = {k: v for k, v in raw.items() if k not in ("tool_plan", "citations")}
    if "content" in raw:
        out["content"] = _parts_text(raw["content"], where)
    if raw.get("tool_plan"):
        notes.append(f"{where}: the assistant's tool_plan not imported")
    return out


def _joined(events: list[dict[str, Any]], where: str) -> dict[str, Any]:
    """A stream's events as the answer they stream."""
    text: list[str] = []
    plan: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    out: dict[str, Any] = {}
    for ev in events:
        kind = ev.get("type")
        message = ((ev.get("delta") or {}).get("message") or {}) if isinstance(
            ev.get("delta"), dict) else {}
        if kind == "content-delta":
            text.append(str((message.get("content") or {}).get("text") or ""))
        elif kind == "tool-plan-delta":
            plan.append(str(message.get("tool_plan") or ""))
        elif kind == "tool-call-start":
            call = message.get("tool_calls") or {}
            fn = call.get("function") or {}
            calls[int(ev.get("index", len(calls)))] = {
                "id": call.get("id"), "type": "function",
                "function": {"name": fn.get("name"), "arguments": fn.get("arguments") or ""}}
        elif kind == "tool-call-delta":
            i = int(ev.get("index", len(calls) - 1))
            if i not in calls:
                raise fail(where, f"stream: tool-call-delta {i} before its tool-call-start")
            fn = (message.get("tool_calls") or {}).get("function") or {}
            calls[i]["function"]["arguments"] += str(fn.get("arguments") or "")
        elif kind == "message-end":
            delta = ev.get("delta") or {}
            out["finish_reason"] = delta.get("finish_reason")
            if isinstance(delta.get("usage"), dict):
                out["usage"] = delta["usage"]
        elif kind == "message-start" and ev.get("id"):
            out["id"] = ev["id"]
    message_out: dict[str, Any] = {"role": "assistant"}
    if text:
        message_out["content"] = [{"type": "text", "text": "".join(text)}]
    if plan:
        message_out["tool_plan"] = "".join(plan)
    if calls:
        message_out["tool_calls"] = [calls[i] for i in sorted(calls)]
    out["message"] = message_out
    return out


def as_chat_record(obj: dict[str, Any], where: str, notes: list[str]) -> dict[str, Any]:
    """A Cohere v2 record as the chat-completions record it is equivalent to."""
    request = obj.get("request", obj)
    if not isinstance(request, dict):
        raise fail(where, f"'request' must be an object, got {type(request).__name__}")
    raw = request.get("messages")
    messages = [_message(m, f"{where}: message {i}", notes) for i, m in enumerate(raw)] \
        if isinstance(raw, list) else raw
    out = {k: v for k, v in obj.items() if k not in ("request", "response")}
    out["request"] = {**request, "messages": messages}
    response = obj.get("response")
    if isinstance(response, list | str):
        response = _joined(stream_events(response, where), where)
    if isinstance(response, dict):
        message = response.get("message")
        if not isinstance(message, dict):
            raise fail(where, "a Cohere response needs a 'message' object")
        reply = _message({**message, "role": message.get("role", "assistant")},
                         f"{where}: response", notes)
        if message.get("citations"):
            notes.append(f"{where}: response: {len(message['citations'])} citation(s) not "
                         "imported")
        if isinstance(reply.get("content"), list) and len(reply["content"]) == 1 and \
                reply["content"][0].get("type") == "text":
            reply["content"] = reply["content"][0].get("text")  # one text part: its text
        usage: Any = response.get("usage")
        tokens = (usage.get("tokens") or usage.get("billed_units")) if isinstance(
            usage, dict) else None
        chat: dict[str, Any] = {"choices": [{"message": reply,
                                             "finish_reason": response.get("finish_reason")}]}
        if isinstance(tokens, dict) and "input_tokens" in tokens:
            chat["usage"] = {"prompt_tokens": tokens.get("input_tokens"),
                             "completion_tokens": tokens.get("output_tokens")}
        if request.get("model"):
            chat["model"] = request["model"]
        out["response"] = chat
    return out
