"""LLaMA-Factory's v1 training rows: the OpenAI fine-tuning row's ``messages``, each
message's content a list of ``{"type", "value"}`` parts — ``text``, ``reasoning`` (the
model's thinking before its answer), ``tool_call`` (a JSON text ``{"name",
"arguments"}``), ``image_url``/``video_url``/``audio_url`` (a file path) — with the
row's ``tools`` as JSON text. ``v1_messages`` turns them into the OpenAI form the chat
format reads (``chat.chat_exchange``)."""

from __future__ import annotations

import json
from typing import Any

from memory_core.importers.common import fail
from memory_core.importers.jsonvalues import load_json

_MEDIA = {"image_url": "image_url", "video_url": "video_url", "audio_url": "input_audio"}


def is_v1(messages: Any) -> bool:
    """Messages whose content parts carry ``value`` (not ``text``): LLaMA-Factory v1's."""
    return isinstance(messages, list) and any(
        isinstance(m, dict) and isinstance(m.get("content"), list) and any(
            isinstance(p, dict) and "value" in p and "text" not in p for p in m["content"])
        for m in messages)


def v1_messages(messages: list[Any], where: str, notes: list[str]) -> list[Any]:
    """The messages in the OpenAI form: texts joined into the content, tool calls as
    ``tool_calls`` (given ids when read), media as placeholders, the reasoning left out
    (noted)."""
    out: list[Any] = []
    for i, m in enumerate(messages):
        if not (isinstance(m, dict) and isinstance(m.get("content"), list)):
            out.append(m)
            continue
        at = f"{where}: message {i}"
        content: list[dict[str, Any]] = []
        calls: list[dict[str, Any]] = []
        for j, p in enumerate(m["content"]):
            kind = p.get("type") if isinstance(p, dict) else None
            value = p.get("value") if isinstance(p, dict) else None
            if kind == "text" and isinstance(value, str):
                content.append({"type": "text", "text": value})
            elif kind == "reasoning" and isinstance(value, str):
                notes.append(f"{at}: part {j}: the model's reasoning not imported")
            elif kind == "tool_call" and isinstance(value, str):
                call = load_json(value, at, f"part {j} (tool_call)")
                if not isinstance(call, dict) or not isinstance(call.get("name"), str):
                    raise fail(at, f"part {j}: a tool_call must be a JSON object with a "
                                   f"'name', got {value[:80]!r}")
                args = call.get("arguments", {})
                calls.append({"id": None, "type": "function", "function": {
                    "name": call["name"],
                    "arguments": args if isinstance(args, str) else json.dumps(args)}})
            elif kind in _MEDIA and isinstance(value, str):
                inner = _MEDIA[kind]
                content.append({"type": inner, inner: {"url": value}})
            else:
                raise fail(at, f"part {j} must be {{\"type\": text, reasoning, tool_call "
                               "or image_url, \"value\": text}}, got "
                               f"{json.dumps(p)[:80]}")
        texts = [c["text"] for c in content if c["type"] == "text"]
        body = "".join(texts) if len(texts) == len(content) else content
        rest = {k: v for k, v in m.items() if k not in ("content", "loss_weight")}
        results = _results(body) if m.get("role") == "tool" else None
        if results is not None:  # several results in one message: one message each
            notes.append(f"{at}: {len(results)} tool results in one message: read as "
                         f"{len(results)} results, answering the calls in order")
            out += [rest | {"content": r} for r in results]
            continue
        out.append(rest | {"content": body or (None if calls else ""),
                           **({"tool_calls": calls} if calls else {})})
    return out


def _results(body: Any) -> list[str] | None:
    """A tool message's text that is a JSON list of two or more results, each
    ``{"tool_call_id" or "name", "content"}`` (how these rows answer parallel calls):
    each result's content; None for any other text."""
    if not (isinstance(body, str) and body.startswith("[{")):
        return None
    try:
        items = json.loads(body)
    except ValueError:
        return None
    if not (isinstance(items, list) and len(items) > 1 and all(
            isinstance(i, dict) and "content" in i and ("tool_call_id" in i or "name" in i)
            for i in items)):
        return None
    return [i["content"] if isinstance(i["content"], str) else json.dumps(i["content"])
            for i in items]


def tools_of(raw: Any, where: str) -> Any:
    """The row's ``tools``: LLaMA-Factory writes the list as JSON text."""
    if isinstance(raw, str) and raw.lstrip().startswith("["):
        return load_json(raw, where, "tools")
    return raw
