"""Continue's chat sessions (the IDE assistant's ``~/.continue/sessions/<id>.json``):
``{"sessionId", "title", "workspaceDirectory", "history": [{"message": {"role",
"content"}, "contextItems", "promptLogs"}]}``. One exchange per assistant message, the
messages before it its request (one thread, keyed by the session); the model and its
options from the message's prompt log (``completionOptions``: ``model``,
``maxTokens``, ``temperature``). A message's context items (files, code it was given
with) are named in a note, not imported; tool calls (``toolCalls``, ``toolCallId``)
are read as the chat format's."""

from __future__ import annotations

from typing import Any

from memory_core.importers.common import Exchange, fail, openai_messages, split_instructions
from memory_core.importers.formats import RecordFormat

_OPTIONS = {"maxTokens": "max_tokens", "temperature": "temperature", "topP": "top_p",
            "stop": "stop", "presencePenalty": "presence_penalty",
            "frequencyPenalty": "frequency_penalty"}


def is_session(obj: Any) -> bool:
    """A Continue session: its id and a history of ``{"message": …}`` items."""
    history = obj.get("history") if isinstance(obj, dict) else None
    return isinstance(obj, dict) and isinstance(obj.get("sessionId"), str) \
        and isinstance(history, list) and bool(history) and all(
            isinstance(h, dict) and isinstance(h.get("message"), dict) for h in history)


def _as_openai(message: dict[str, Any]) -> dict[str, Any]:
    """A Continue ``ChatMessage`` in the OpenAI shape (its tool calls camel-cased)."""
    out = {k: v for k, v in message.items() if k in ("role", "content", "name")}
    if isinstance(message.get("toolCalls"), list) and message["toolCalls"]:
        out["tool_calls"] = message["toolCalls"]
    if isinstance(message.get("toolCallId"), str):
        out["tool_call_id"] = message["toolCallId"]
    return out


def _log(item: dict[str, Any]) -> dict[str, Any]:
    logs = item.get("promptLogs")
    first = logs[0] if isinstance(logs, list) and logs else None
    return first if isinstance(first, dict) else {}


def session_exchanges(obj: dict[str, Any], where: str, index: int) -> list[Exchange]:
    notes: list[str] = []
    history = obj["history"]
    for i, item in enumerate(history):
        attached = item.get("contextItems")
        if isinstance(attached, list) and attached:
            names = [str(c.get("name") or c.get("description") or "?") for c in attached
                     if isinstance(c, dict)]
            notes.append(f"{where}: history[{i}]: its {len(attached)} context item(s) "
                         f"({', '.join(names[:3])}{' …' if len(names) > 3 else ''}) not "
                         "imported: Continue sends their text with the message")
    messages = openai_messages([_as_openai(h["message"]) for h in history], where, notes)
    out: list[Exchange] = []
    for i, m in enumerate(messages):
        if m.role != "assistant":
            continue
        instructions, sent = split_instructions(messages[:i])
        if not sent:
            continue
        log = _log(history[i])
        options = log.get("completionOptions")
        known = isinstance(options, dict)  # (else the parameters sent are not kept)
        options = options if isinstance(options, dict) else {}
        model = options.get("model") if isinstance(options.get("model"), str) else None
        params = {ours: options[k] for k, ours in _OPTIONS.items() if k in options}
        out.append(Exchange(where=f"{where}: history[{i}]", index=index + len(out),
                            instructions=instructions, history=sent, response=m,
                            thread_key=obj["sessionId"], model=model,
                            params=params, params_known=known,
                            notes=notes if not out else []))
    if not out:
        raise fail(where, "the Continue session has no assistant message after a user "
                          "message")
    return out


FORMAT = RecordFormat("continue", 13, lambda r: is_session(r.obj),
                      lambda r: session_exchanges(r.obj, r.where, r.index))
