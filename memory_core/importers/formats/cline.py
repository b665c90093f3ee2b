"""Cline's and Roo Code's task history (``api_conversation_history.json`` in a task's
folder of the extension's storage): the messages of one task as the extension keeps
them to send — a JSON array of Anthropic Messages API messages, each with ``ts``, the
time it was saved in milliseconds, and (Cline since 3.2x) an answer's ``modelInfo``
(``modelId``, ``providerId``, ``mode``) and ``metrics`` (``tokens``: ``prompt`` — the
cached ones within —, ``completion``, ``cached``; ``cost``). Each assistant message is
the answer of one model call, whose prompt is rebuilt as the extension builds a request:
every message before it (noted on each call). The history keeps neither the system
prompt nor the tools offered (unknown, noted once); the model and usage where the
answer has no ``modelInfo``/``metrics`` are unknown (the task's ``ui_messages.json``
beside it has tokens, as ``api_req_started`` messages); the tools the model used in a
text (``<read_file>…</read_file>``) stay that text. A call is dated from the message
before it (sent) to its answer (saved)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from memory_core.importers.common import Exchange, fail
from memory_core.importers.formats import Record, RecordFormat
from memory_core.importers.formats.anthropic import anthropic_exchange
from memory_core.models.base import Usage

KEY = "cline_task_call"  # a call of a task history, as ``cline_histories`` gives it
REBUILT = ("its prompt is rebuilt from the task's history as Cline and Roo Code send it "
           "(every message before the answer); the history keeps no system prompt, and "
           "not whether the extension cut older messages out of a request")
UNKNOWN = ("the task's history keeps neither the system prompt nor the tools offered: "
           "both are unknown")
_KEYS = {"role", "content", "ts", "modelInfo", "metrics"}


def _is_message(obj: Any) -> bool:
    """A message of a task history: a role, its content and the time it was saved."""
    return isinstance(obj, dict) and obj.get("role") in ("user", "assistant") \
        and "content" in obj and type(obj.get("ts")) in (int, float) and set(obj) <= _KEYS


def cline_histories(docs: Iterable[tuple[str, Any]]) -> Iterator[tuple[str, Any]]:
    """The documents, a task history (a file whose every document is one of its
    messages) given as its calls, each named by its answer (``item 4``); anything else
    as it is."""
    held: list[tuple[str, Any]] = []
    it = iter(docs)
    for where, obj in it:
        if not _is_message(obj):
            yield from held
            yield where, obj
            yield from it
            return
        held.append((where, obj))
    if not any(obj["role"] == "assistant" for _, obj in held):
        yield from held  # (no answer: not a task's calls)
        return
    first = True
    for i, (where, obj) in enumerate(held):
        if obj["role"] == "assistant":
            yield where, {KEY: _Call(tuple(m for _, m in held[:i]), obj,
                                     (UNKNOWN,) if first else ())}
            first = False


@dataclass(frozen=True)
class _Call:
    """A call of a task history (``cline_histories``): the messages sent, the answer,
    and what to note of the history once."""

    sent: tuple[dict[str, Any], ...]
    answer: dict[str, Any]
    notes: tuple[str, ...]


def _time(ts: Any, where: str) -> datetime:
    try:
        return datetime.fromtimestamp(ts / 1000, UTC)
    except (OverflowError, OSError, ValueError) as e:
        raise fail(where, f"'ts' {ts!r} is no time in milliseconds: {e}") from None


def _read(record: Record) -> list[Exchange]:
    call, where = record.obj[KEY], record.where
    sent, answer = call.sent, call.answer
    notes = [f"{where}: {n}" for n in call.notes] + [f"{where}: {REBUILT}"]
    if not sent:
        raise fail(where, "an assistant message before any other: no request was sent")
    content = answer["content"]
    reply = {"type": "message", "role": "assistant",
             "content": [{"type": "text", "text": content}] if isinstance(content, str)
             else content}
    request = {"messages": [{"role": m["role"], "content": m["content"]} for m in sent]}
    ex = anthropic_exchange({"request": request, "response": reply}, where, record.index,
                            notes)
    ex.tools = None  # (not kept: not "none offered")
    ex.params_known = False  # (nor the parameters sent)
    info, metrics = answer.get("modelInfo"), answer.get("metrics")
    model = info.get("modelId") if isinstance(info, dict) else None
    if isinstance(model, str) and model:
        ex.model = ex.requested_model = model
    tokens = metrics.get("tokens") if isinstance(metrics, dict) else None
    if isinstance(tokens, dict) and all(type(tokens.get(k)) is int
                                        for k in ("prompt", "completion")):
        ex.usage = Usage(input_tokens=tokens["prompt"], output_tokens=tokens["completion"])
        ex.usage_known = True
        if type(tokens.get("cached")) is int and tokens["cached"]:
            ex.usage_detail = {"cached_input": tokens["cached"]}
    unknown = [w for w, known in (("model", model is not None),
                                  ("usage", ex.usage_known)) if not known]
    if unknown:
        ex.notes.append(f"{where}: the answer has no {' and no '.join(unknown)} recorded "
                        f"(no {'modelInfo' if model is None else 'metrics'}"
                        f"{' or metrics' if len(unknown) == 2 else ''}; the task's "
                        "ui_messages.json holds its tokens): unknown")
    ex.started_at = _time(sent[-1]["ts"], where)
    ex.finished_at = _time(answer["ts"], where)
    return [ex]


FORMAT = RecordFormat("cline", 14, lambda r: isinstance(r.obj.get(KEY), _Call), _read)
