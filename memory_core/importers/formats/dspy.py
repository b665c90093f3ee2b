"""DSPy's LM history (``dspy.LM.history``, what ``inspect_history`` prints, dumped as
JSON): one entry per call, ``{"messages" (or "prompt"), "kwargs", "outputs",
"usage", "cost", "timestamp", "uuid", "model", "response_model", "model_type"}``. A
file holds a list of entries (a JSON array, or JSON lines), or an object of such lists
(DSPy's own tests keep ``{"lm": [...], "reflection_lm": [...]}``: each list the history
of one LM). Each entry is read as the chat completion it was: its messages the request,
``kwargs`` its parameters, its first output the answer (a text, or ``{"text",
"tool_calls"}``), ``usage`` its counts, ``timestamp`` its time (DSPy writes the local
time without a zone: read as UTC, noted)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from memory_core.importers.common import fail, iso_time, names_zone
from memory_core.importers.formats import RecordFormat
from memory_core.importers.formats.chat import read_as_chat

_MARKS = ("outputs", "model_type", "uuid")


def is_entry(obj: Any) -> bool:
    """One entry of an LM's history: its outputs, model type and uuid, beside the
    messages (or prompt) it was sent."""
    return isinstance(obj, dict) and all(k in obj for k in _MARKS) and (
        "messages" in obj or "prompt" in obj)


def dspy_histories(docs: Iterable[tuple[str, Any]]) -> Iterator[tuple[str, Any]]:
    """The documents, an object whose values are all LMs' histories (lists of entries)
    given as its entries, each named by its list and place (``lm[3]``)."""
    for where, obj in docs:
        lists = obj.values() if isinstance(obj, dict) and obj else ()
        if lists and all(isinstance(v, list) and v and all(is_entry(e) for e in v)
                         for v in lists):
            for name, entries in obj.items():
                for i, entry in enumerate(entries):
                    yield f"{where}: {name}[{i}]", entry
        else:
            yield where, obj


def _answer(output: Any, where: str, notes: list[str]) -> dict[str, Any]:
    """An output as the assistant's message: its text, or its text and tool calls."""
    if isinstance(output, str):
        return {"role": "assistant", "content": output}
    if not isinstance(output, dict):
        raise fail(where, f"an output must be a text or an object, got {output!r}"[:200])
    text, calls = output.get("text"), output.get("tool_calls")
    left = sorted(k for k, v in output.items() if k not in ("text", "tool_calls")
                  and v not in (None, "", [], {}))
    if left:  # (a model's reasoning_content, citations …)
        notes.append(f"{where}: the output's {', '.join(left)} not imported")
    return {"role": "assistant", "content": text,
            **({"tool_calls": calls} if calls else {})}


def _as_chat(obj: dict[str, Any], where: str, notes: list[str]) -> dict[str, Any]:
    messages = obj.get("messages")
    if messages is None and isinstance(obj.get("prompt"), str):
        messages = [{"role": "user", "content": obj["prompt"]}]
    if not isinstance(messages, list):
        raise fail(where, "a DSPy history entry needs its 'messages' (a list) or its "
                          f"'prompt' (a text), got {messages!r}"[:200])
    kwargs = obj["kwargs"] if isinstance(obj.get("kwargs"), dict) else {}
    outputs = obj["outputs"]
    if not isinstance(outputs, list):
        raise fail(where, f"a DSPy history entry's 'outputs' must be a list, got "
                          f"{type(outputs).__name__}")
    if len(outputs) > 1:
        notes.append(f"{where}: {len(outputs) - 1} other output(s) not imported")
    if isinstance(obj.get("cost"), int | float) and not isinstance(obj["cost"], bool):
        notes.append(f"{where}: its cost ({obj['cost']}) not imported")
    request = {**{k: v for k, v in kwargs.items() if k not in ("messages", "prompt")},
               "messages": messages}
    if isinstance(obj.get("model"), str):
        request["model"] = obj["model"]
    record: dict[str, Any] = {"request": request}
    if not outputs:
        record["error"] = "the entry records no output"
        return record
    usage = obj.get("usage")
    record["response"] = {
        "model": obj.get("response_model") or obj.get("model"),
        "choices": [{"message": _answer(outputs[0], where, notes)}],
        **({"usage": usage} if isinstance(usage, dict) and usage else {})}
    when = iso_time(obj.get("timestamp"), where, "timestamp")  # (None: not a text)
    if when is not None and not names_zone(obj["timestamp"]):
        notes.append(f"{where}: its timestamp has no time zone (DSPy writes the local "
                     "time): read as UTC")
    return record


# (dated by the entry's timestamp: the chat completion it holds has no time)
FORMAT = RecordFormat("dspy", 17, lambda r: is_entry(r.obj), read_as_chat(_as_chat),
                      dated_by="timestamp")
