"""AutoGen's recorded sessions: what ``ChatCompletionClientRecorder`` (autogen-ext's
``task_centric_memory``) writes in record mode — a JSON array of ``{"mode": "create",
"messages": [...], "response": {...}, "stream": []}``, the messages as AutoGen's own
``LLMMessage``s dumped (``SystemMessage``, ``UserMessage``, ``AssistantMessage``,
``FunctionExecutionResultMessage``) and the response a ``CreateResult``. Each record
is read as the chat completions request AutoGen's OpenAI client makes of it (a
message's ``source`` sent as its ``name``, an assistant's ``thought`` as the text
beside its calls); the recorder keeps no model name and no tools offered."""

from __future__ import annotations

from typing import Any

from memory_core.importers.common import Exchange, fail
from memory_core.importers.formats import Record, RecordFormat
from memory_core.importers.formats.chat import chat_exchange

_TYPES = ("SystemMessage", "UserMessage", "AssistantMessage", "FunctionExecutionResultMessage")
# CreateResult.finish_reason in chat completions' words
_FINISH = {"function_calls": "tool_calls", "unknown": None}


def _matches(record: Record) -> bool:
    """A record of AutoGen's recorder: its ``mode``, and messages typed as AutoGen's."""
    obj = record.obj
    messages = obj.get("messages")
    return record.api is None and obj.get("mode") in ("create", "create_stream") \
        and isinstance(messages, list) and bool(messages) and all(
            isinstance(m, dict) and m.get("type") in _TYPES for m in messages)


def _read(record: Record) -> list[Exchange]:
    where, obj = record.where, record.obj
    notes: list[str] = []
    messages: list[dict[str, Any]] = []
    for i, m in enumerate(obj["messages"]):
        messages += _message(m, f"{where}: message {i}", notes)
    chat: dict[str, Any] = {"request": {"messages": messages}}
    response = _response(obj, where, notes)
    if response is not None:
        chat["response"] = response
    else:
        chat["error"] = "the recorder kept no response for this call"
    ex = chat_exchange(chat, where, record.index, notes, api="autogen")
    ex.tools = None  # (not recorded: the calls are not checked against "none offered")
    ex.params_known = False  # (nor the parameters sent)
    return [ex]


def _text(value: Any, label: str) -> str:
    if not isinstance(value, str):
        raise fail(label, f"'content' must be a string, got {type(value).__name__}")
    return value


def _user_content(content: Any, label: str, notes: list[str]) -> Any:
    """A ``UserMessage``'s content — a text, or a list of texts and images (an
    AutoGen ``Image`` dumps as ``{"data": <base64>}``) — in chat completions' parts."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise fail(label, "'content' must be a string or a list of strings and images, "
                          f"got {type(content).__name__}")
    parts: list[dict[str, Any]] = []
    for j, p in enumerate(content):
        if isinstance(p, str):
            parts.append({"type": "text", "text": p})
        elif isinstance(p, dict) and isinstance(p.get("data"), str):
            parts.append({"type": "image", "image": {"data": p["data"]}})
        else:
            raise fail(label, f"content part {j} must be a string or an image "
                              f"({{\"data\": base64}}), got {str(p)[:80]!r}")
    return parts


def _calls(content: list[Any], label: str) -> list[dict[str, Any]]:
    """AutoGen ``FunctionCall``s (``{"id", "name", "arguments"}``) as chat tool calls."""
    out = []
    for j, c in enumerate(content):
        if not isinstance(c, dict) or not isinstance(c.get("name"), str):
            raise fail(label, f"function call {j} must be an object with a 'name', got "
                              f"{str(c)[:80]!r}")
        out.append({"id": c.get("id"), "type": "function",
                    "function": {"name": c["name"], "arguments": c.get("arguments", "")}})
    return out


def _assistant(content: Any, thought: Any, source: Any, label: str, notes: list[str]
               ) -> dict[str, Any]:
    """An ``AssistantMessage`` (or a ``CreateResult``'s answer) as AutoGen's OpenAI
    client sends it: calls with the ``thought`` as their text; a text alone, its
    ``thought`` (a reasoning model's) left out, noted."""
    out: dict[str, Any] = {"role": "assistant"}
    if isinstance(content, list):
        out["content"] = thought if isinstance(thought, str) and thought else None
        out["tool_calls"] = _calls(content, label)
    else:
        out["content"] = _text(content, label)
        if isinstance(thought, str) and thought:
            notes.append(f"{label}: its thought ({len(thought):,} characters of the "
                         "model's reasoning) not imported")
    if isinstance(source, str) and source:
        out["name"] = source
    return out


def _message(m: dict[str, Any], label: str, notes: list[str]) -> list[dict[str, Any]]:
    kind, content = m["type"], m.get("content")
    if kind == "SystemMessage":
        return [{"role": "system", "content": _text(content, label)}]
    if kind == "UserMessage":
        out = {"role": "user", "content": _user_content(content, label, notes)}
        if isinstance(m.get("source"), str) and m["source"]:
            out["name"] = m["source"]
        return [out]
    if kind == "AssistantMessage":
        return [_assistant(content, m.get("thought"), m.get("source"), label, notes)]
    # FunctionExecutionResultMessage: one tool message a result
    if not isinstance(content, list):
        raise fail(label, "a FunctionExecutionResultMessage's 'content' must be a list of "
                          f"results, got {type(content).__name__}")
    results = []
    for j, r in enumerate(content):
        if not isinstance(r, dict) or not isinstance(r.get("call_id"), str):
            raise fail(label, f"result {j} must be an object with a 'call_id', got "
                              f"{str(r)[:80]!r}")
        if r.get("is_error"):
            notes.append(f"{label}: the result of call {r['call_id']!r} is marked an error "
                         "(is_error), kept as its text")
        results.append({"role": "tool", "tool_call_id": r["call_id"],
                        "content": _text(r.get("content"), f"{label} result {j}")})
    return results


def _response(obj: dict[str, Any], where: str, notes: list[str]) -> dict[str, Any] | None:
    """The ``CreateResult`` as a chat completion: the record's ``response``, or for a
    streamed call the one its ``stream`` ends with (its text chunks joined when it ends
    with none)."""
    result = obj.get("response")
    stream = obj.get("stream")
    if not result and isinstance(stream, list) and stream:
        final = stream[-1]
        if isinstance(final, dict):
            result = final
        elif all(isinstance(c, str) for c in stream):
            result = {"content": "".join(stream)}
            notes.append(f"{where}: a stream of {len(stream)} text chunks without its "
                         "result: no usage or finish reason recorded")
    if not result:
        return None
    if not isinstance(result, dict):
        raise fail(where, f"'response' must be an object (AutoGen's CreateResult), got "
                          f"{type(result).__name__}")
    label = f"{where}: response"
    message = _assistant(result.get("content"), result.get("thought"), None, label, notes)
    finish = result.get("finish_reason")
    choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": (
        _FINISH.get(finish, finish) if isinstance(finish, str) else finish)}
    if result.get("cached"):
        notes.append(f"{where}: the answer came from AutoGen's cache (cached: true), "
                     "not from a call to the model")
    out: dict[str, Any] = {"choices": [choice]}
    usage = result.get("usage")
    if isinstance(usage, dict):
        out["usage"] = usage
    return out


FORMAT = RecordFormat("autogen", 15, _matches, _read)
