"""OpenHands' LLM completion logs (``LLM(log_completions=True)``: one JSON file per model
call in its ``log_completions_folder``): ``{"messages", "tools", "kwargs",
"context_window", "response", "cost", "timestamp", "latency_sec"}``, and, when the model
is driven without native tool calling (OpenHands writes the tools into the prompt and
reads a call out of the answer's ``<function=…>`` text: "non-fncall" mode),
``raw_messages`` and ``raw_response`` too. A file holds one log, or a JSON array or
JSON lines of them.

Each log is read as the call as sent and answered: ``messages`` the request, ``kwargs``
its parameters (its ``tools`` the tools offered; ``extra_body.metadata``, the client's
tags, kept as sent with it, not as a parameter) and ``response`` the answer — in
non-fncall mode ``raw_response``, what the model wrote, for ``response`` is then
OpenHands' reading of it (the call it read out of the text) and ``raw_messages`` the
agent's own form of the messages: neither was sent or written by the model. The next
request sends the answer back as OpenHands read it, written out as text again
(``Exchange.sent_back_as``): the thread goes on from that form. ``timestamp`` is when
the log was written, once the call returned: the call ended then and began
``latency_sec`` before. ``cost`` and ``context_window`` are noted."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any, TypeGuard

from memory_core.importers.common import Exchange, fail, from_unix, shortened
from memory_core.importers.formats import Record, RecordFormat
from memory_core.importers.formats.chat import chat_exchange
from memory_core.types import Message

_MARKS = ("messages", "response", "kwargs", "latency_sec")


def is_log(obj: Any) -> bool:
    """One completion log: the messages sent, the response, the call's kwargs and its
    latency."""
    return isinstance(obj, dict) and all(k in obj for k in _MARKS)


def _object(obj: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    value = obj.get(key)
    if not isinstance(value, dict):
        raise fail(where, f"an OpenHands log's '{key}' must be an object, got "
                          f"{shortened(repr(value), 60)}")
    return value


def _number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _first_message(response: dict[str, Any]) -> dict[str, Any] | None:
    choices = response.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, dict) else None
    return message if isinstance(message, dict) else None


def _tools(obj: dict[str, Any], kwargs: dict[str, Any], where: str,
           notes: list[str]) -> Any:
    """The tools the call offered: ``kwargs``' (what was sent), else the log's own list
    (later OpenHands drops the copy in ``kwargs``) — unless they were written into the
    prompt (non-fncall mode, ``raw_messages`` logged): then none were offered."""
    if "tools" in kwargs:
        return kwargs["tools"]
    listed = obj.get("tools")
    if "raw_messages" not in obj or not isinstance(listed, list) or not listed:
        return listed
    names = [str(t.get("function", t).get("name")) for t in listed
             if isinstance(t, dict) and isinstance(t.get("function", t), dict)]
    notes.append(f"{where}: its tools ({shortened(', '.join(names), 80)}) were written "
                 "into the prompt, not sent with the call: none offered")
    return None


def _written(obj: dict[str, Any], read: dict[str, Any], where: str, notes: list[str],
             offered: bool) -> dict[str, Any]:
    """A non-fncall log's answer as the model wrote it: ``raw_response``, its usage
    (which that copy does not keep) and a tool call it logged empty (``{}``: the model
    called the tool natively, and the call was lost in the copy) from ``response``,
    OpenHands' reading — which passes an answer without ``<function=…>`` text on as it
    came."""
    raw = _object(obj, "raw_response", where)
    message, kept = _first_message(raw), _first_message(read)
    calls = message.get("tool_calls") if message is not None else None
    if message is not None and isinstance(calls, list) and calls and not any(calls):
        same = kept is not None and kept.get("content") == message.get("content")
        found = kept.get("tool_calls") if kept is not None and same else None
        if isinstance(found, list) and len(found) == len(calls):
            message = {**message, "tool_calls": found}
            notes.append(f"{where}: raw_response logged its {len(calls)} tool call(s) "
                         "empty: taken from response, which passed the answer on as it came")
        else:
            message = {k: v for k, v in message.items() if k != "tool_calls"}
            notes.append(f"{where}: raw_response logged its {len(calls)} tool call(s) "
                         "empty: not imported")
        choices = raw["choices"]
        raw = {**raw, "choices": [{**choices[0], "message": message}, *choices[1:]]}
    if "usage" not in raw and "usage" in read:  # (the same call's count)
        raw = {**raw, "usage": read["usage"]}
    also = ", its tools sent with the call as well" if offered else ""
    notes.append(f"{where}: tool calling written into the prompt (OpenHands' non-native "
                 f"mode{also}): the answer is what the model wrote (raw_response); "
                 "OpenHands' reading of it (response) and the agent's own form of the "
                 "messages (raw_messages) not imported")
    return raw


def _as_text(message: dict[str, Any] | None) -> str | None:
    """An answer as OpenHands writes it into its next request in non-fncall mode: its
    text, then its one call as ``<function=name>`` with a ``<parameter=…>`` line each
    (``convert_tool_call_to_string``); None when it cannot be written so."""
    if message is None or not isinstance(content := message.get("content") or "", str):
        return None
    calls = message.get("tool_calls")
    if not calls:
        return content
    one = calls[0] if isinstance(calls, list) and len(calls) == 1 else None
    fn = one.get("function") if isinstance(one, dict) else None
    if not isinstance(fn, dict):
        return None
    try:
        args = json.loads(fn["arguments"])
    except (KeyError, TypeError, ValueError):
        return None
    if not isinstance(args, dict):
        return None
    out = f"<function={fn['name']}>\n"
    for name, value in args.items():
        wide = "\n" if isinstance(value, str) and "\n" in value else ""
        said = json.dumps(value) if isinstance(value, list | dict) else f"{value}"
        out += f"<parameter={name}>{wide}{said}{wide}</parameter>\n"
    return f"{content}\n\n{out}</function>".lstrip()


def _as_chat(obj: dict[str, Any], where: str, notes: list[str]) -> dict[str, Any]:
    kwargs = _object(obj, "kwargs", where)
    extra = kwargs.get("extra_body")
    extra = extra if isinstance(extra, dict) else {}
    # (extra_body is merged into the body: its keys were sent as the request's)
    request = {**{k: v for k, v in extra.items() if k != "metadata"},
               **{k: v for k, v in kwargs.items() if k not in ("extra_body", "tools")},
               "messages": obj["messages"]}
    tools = _tools(obj, kwargs, where, notes)
    if tools is not None:
        request["tools"] = tools
    response = _object(obj, "response", where)
    if "raw_response" in obj:
        response = _written(obj, response, where, notes, "tools" in kwargs)
    return {"request": request, "response": response}


def _date(ex: Exchange, obj: dict[str, Any], where: str) -> None:
    """The call's end at the log's ``timestamp`` and its start ``latency_sec`` before."""
    end, took = obj.get("timestamp"), obj.get("latency_sec")
    if not _number(end):
        ex.notes.append(f"{where}: its timestamp {shortened(repr(end), 40)} is no unix "
                        "time: dated by the response's (whole seconds)")
        return
    ex.finished_at = ex.started_at = from_unix(end, where, "timestamp")
    if _number(took) and 0 <= took <= end:
        ex.started_at = ex.finished_at - timedelta(seconds=took)
    else:
        ex.notes.append(f"{where}: its latency_sec {shortened(repr(took), 40)} is no "
                        "duration: the call's start is not known, dated at its end (when "
                        "the log was written)")


def _read(record: Record) -> list[Exchange]:
    obj, where = record.obj, record.where
    notes: list[str] = []
    ex = chat_exchange(_as_chat(obj, where, notes), where, record.index, notes)
    _date(ex, obj, where)
    if "raw_response" in obj and ex.response is not None:
        # OpenHands sends its reading of the answer back, written out as text again
        text = _as_text(_first_message(obj["response"]))
        if text and text != (ex.response.text() or ""):
            ex.sent_back_as = Message(role="assistant", content=text)
    extra = obj["kwargs"].get("extra_body")
    if isinstance(extra, dict) and extra.get("metadata") is not None:
        ex.request_fields = {**ex.request_fields, "metadata": extra["metadata"]}
    said = [f"{what} ({obj[k]}{unit})" for k, what, unit in (
        ("cost", "its cost", ""), ("context_window", "the model's context window", " tokens"))
        if _number(obj.get(k))]
    if said:
        ex.notes.append(f"{where}: OpenHands logged {' and '.join(said)}: no parameters "
                        "of the call, kept in this note")
    return [ex]


FORMAT = RecordFormat("openhands", 18, lambda r: is_log(r.obj), _read)
