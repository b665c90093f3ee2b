"""Semantic Kernel's serialised chat history (.NET ``ChatHistory`` as ``JsonSerializer``
writes it): a JSON array of messages ``{"Role": {"Label"}, "Items": [{"$type": …}],
"ModelId", "Metadata": {"Usage", "FinishReason", "Created", …}}``. The file's messages
are gathered into one record (``chat_histories``), read as one exchange per assistant
message with the messages before it as its request (as ShareGPT's conversations), its
model, usage, finish reason and time from the message's metadata."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from memory_core.importers.common import (
    Exchange,
    fail,
    iso_time,
    openai_messages,
    split_instructions,
)
from memory_core.importers.formats import RecordFormat
from memory_core.models.base import Usage

KEY = "semantic_kernel_chat_history"  # the record the file's messages are gathered into
_ROLES = ("system", "developer", "user", "assistant", "tool")
_TOOL_CALL_ID = "ChatCompletionsToolCall.Id"  # (a tool message's metadata: its call)


def is_message(obj: Any) -> bool:
    """One message of a serialised ``ChatHistory``."""
    return isinstance(obj, dict) and isinstance(obj.get("Role"), dict) and isinstance(
        obj["Role"].get("Label"), str) and isinstance(obj.get("Items"), list)


def chat_histories(docs: Iterable[tuple[str, Any]]) -> Iterator[tuple[str, Any]]:
    """The documents, a file whose first document is a ``ChatHistory`` message gathered
    into one record of all of them (its history; message ``i`` is "item i+1" of the
    file's array)."""
    docs = iter(docs)
    for where, obj in docs:
        if is_message(obj):
            yield "file", {KEY: [obj, *(rest for _, rest in docs)]}
            return
        yield where, obj


def _item(item: Any, at: str, notes: list[str]) -> tuple[str, Any] | None:
    """One of a message's ``Items`` as (kind, what): its text, a call in the OpenAI form,
    or a result (call id, result); None for what is not imported (noted)."""
    kind = item.get("$type") if isinstance(item, dict) else None
    if kind == "TextContent":
        text = item.get("Text")
        if text is not None and not isinstance(text, str):
            raise fail(at, f"TextContent's Text must be a string, got {text!r}"[:200])
        return ("text", text or "")
    if kind == "FunctionCallContent":
        fn, plugin, args = item.get("FunctionName"), item.get("PluginName"), item.get("Arguments")
        if not isinstance(fn, str) or not fn or plugin is not None and not isinstance(
                plugin, str) or args is not None and not isinstance(args, str | dict):
            raise fail(at, "a FunctionCallContent needs its FunctionName (a text), a "
                           "PluginName that is a text or none, and Arguments that are an "
                           f"object, a text or none; got {item!r}"[:300])
        call_id = item.get("Id")
        return ("call", {"id": call_id if isinstance(call_id, str) else None,
                         "type": "function", "function": {
                             # (the name the model is given: the plugin's, then its own)
                             "name": f"{plugin}-{fn}" if plugin else fn,
                             "arguments": args if isinstance(args, str) else
                             json.dumps(args or {}, ensure_ascii=False)}})
    if kind == "FunctionResultContent":
        call_id = item.get("CallId")
        if not isinstance(call_id, str) or not call_id:
            raise fail(at, f"a FunctionResultContent needs its CallId, got {call_id!r}"[:200])
        return ("result", (call_id, item.get("Result")))
    notes.append(f"{at}: an item of type {kind!r} not imported")
    return None


def _as_openai(obj: dict[str, Any], at: str, notes: list[str]) -> list[dict[str, Any]]:
    """A ``ChatHistory`` message as OpenAI chat messages (a tool message per result)."""
    role = obj["Role"]["Label"].lower()
    if role not in _ROLES:
        raise fail(at, f"Role.Label {obj['Role']['Label']!r} is no chat role "
                       f"(expected one of {', '.join(_ROLES)})")
    items = [got for j, it in enumerate(obj["Items"])
             if (got := _item(it, f"{at}: item {j}", notes)) is not None]
    results = [what for kind, what in items if kind == "result"]
    if results:  # (SK repeats a result as a TextContent beside it: the result is kept)
        return [{"role": "tool", "tool_call_id": cid, "content": result if isinstance(
            result, str) else json.dumps(result, ensure_ascii=False)}
            for cid, result in results]
    text = "".join(what for kind, what in items if kind == "text")
    calls = [what for kind, what in items if kind == "call"]
    out: dict[str, Any] = {"role": role, "content": text or None}
    meta = obj.get("Metadata")
    answers = meta.get(_TOOL_CALL_ID) if isinstance(meta, dict) else None
    if role == "tool" and isinstance(answers, str):  # (an older history: the result's
        out["tool_call_id"] = answers  # text alone, the call it answers in metadata)
    if calls:
        out["tool_calls"] = calls
    return [out]


def _answer_facts(obj: dict[str, Any]) -> dict[str, Any]:
    """What an assistant message's metadata (or its first item's) says of its call."""
    meta = obj.get("Metadata")
    if not isinstance(meta, dict):
        first = obj["Items"][0] if obj["Items"] else {}
        meta = first.get("Metadata") if isinstance(first, dict) else None
    return meta if isinstance(meta, dict) else {}


def history_exchanges(record: dict[str, Any], where: str, index: int) -> list[Exchange]:
    """One exchange per assistant message of the history, its request every message
    before it; they group into one thread by their shared history."""
    notes: list[str] = []
    raw: list[dict[str, Any]] = []
    spans: list[tuple[str, dict[str, Any], int]] = []  # (where, message, index in raw)
    for n, obj in enumerate(record[KEY], start=1):
        at = f"item {n}"
        if not is_message(obj):
            raise fail(at, "expected a ChatHistory message ({\"Role\": {\"Label\"}, "
                           "\"Items\": [...]}) like the file's first")
        got = _as_openai(obj, at, notes)
        spans.append((at, obj, len(raw)))
        raw += got
    messages = openai_messages(raw, where, notes)
    out: list[Exchange] = []
    for at, obj, i in spans:
        if obj["Role"]["Label"].lower() != "assistant":
            continue
        instructions, history = split_instructions(messages[:i])
        if not history:
            continue
        meta = _answer_facts(obj)
        counted = meta.get("Usage")
        usage: dict[str, Any] = counted if isinstance(counted, dict) else {}
        inp = usage.get("PromptTokens", usage.get("InputTokenCount"))
        outp = usage.get("CompletionTokens", usage.get("OutputTokenCount"))
        counts = (inp, outp) if isinstance(inp, int) and isinstance(outp, int) and not (
            isinstance(inp, bool) or isinstance(outp, bool)) and min(inp, outp) >= 0 else None
        finish = meta.get("FinishReason")
        model = obj.get("ModelId") if isinstance(obj.get("ModelId"), str) else None
        out.append(Exchange(
            where=at, index=index + len(out), instructions=instructions, history=history,
            response=messages[i], model=model,
            usage=Usage(input_tokens=counts[0], output_tokens=counts[1]) if counts
            else Usage(), usage_known=counts is not None,
            finish_reason=finish if isinstance(finish, str) else None,
            params_known=False,  # (a chat history keeps no execution settings)
            started_at=iso_time(meta.get("Created"), at, "Metadata.Created"),
            notes=notes if not out else []))
    if not out:
        raise fail(where, "the chat history has no assistant message after a user message")
    return out


FORMAT = RecordFormat("semantic-kernel", 12, lambda r: isinstance(r.obj.get(KEY), list),
                      lambda r: history_exchanges(r.obj, r.where, r.index))
