"""Sourcegraph's completions API — what Cody's clients send to a Sourcegraph instance
(``POST /.api/completions/stream`` for chat and edits, ``/.api/completions/code`` for
autocomplete) — as the chat-completions record it is equivalent to.

The request (Cody's ``CompletionParameters``): ``messages`` of ``{"speaker": "system" |
"human" | "assistant", "text"}`` (newer clients: ``content``, a text or parts of
``text`` and ``image_url``), ``model`` (a modelref ``provider::api-version::model``, or
an older ``provider/model``), ``maxTokensToSample``, ``temperature``, ``topK``,
``topP``, ``stopSequences``. A human speaks as the user. An assistant message with no
text ending the request is the slot older clients left for the answer: not imported,
noted; one with text is a prefill the answer continues (kept, noted by the writer's
rules as any prefill is). ``topK``/``topP`` of -1 are Cody's way of leaving them to the
server: kept as sent.

The answer: an SSE stream of ``event: completion`` (``{"completion": <the whole text so
far>}`` up to ``api-version`` 1, ``{"deltaText": <what is new>}`` from 2 — the URL's
``api-version`` query parameter says which), ``event: error`` (``{"error"}``) and
``event: done``; with ``"stream": false`` one JSON ``{"completion", "stopReason"}``.
``stopReason`` is the finish reason. The API counts no tokens: the usage is unknown.
A stream that ends with no ``done`` event and no ``stopReason`` was cut: what came is
the answer, noted; an error event after text began keeps that text, noted; one before
any text fails the call. Streamed thinking (``delta_thinking``) is kept as the answer's
reasoning; streamed tool calls (``delta_tool_calls``) are noted, not imported."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qs, urlsplit

from memory_core.importers.common import fail, object_of, shortened
from memory_core.importers.jsonvalues import load_json

SOURCEGRAPH_PATHS = ("/.api/completions/stream", "/.api/completions/code")
_ROLES = {"system": "system", "human": "user", "assistant": "assistant"}
# Cody's parameter names, as the chat format's
_PARAMS = {"maxTokensToSample": "max_tokens", "topK": "top_k", "topP": "top_p",
           "stopSequences": "stop"}
_EVENTS = ("completion", "error", "done")
_MODELREF = re.compile(r"[^:]+::[^:]+::(.+)")


def is_sourcegraph_record(obj: Any) -> bool:
    """A record of Sourcegraph's completions API told by its keys: its request's
    messages carry a ``speaker`` (no other API's do), or it asks ``maxTokensToSample``
    beside its ``messages``."""
    request = obj.get("request", obj) if isinstance(obj, dict) else None
    if not isinstance(request, dict) or not isinstance(request.get("messages"), list):
        return False
    return "maxTokensToSample" in request or any(
        isinstance(m, dict) and "speaker" in m for m in request["messages"])


def model_name(model: Any) -> Any:
    """The model a modelref (``anthropic::2024-10-22::claude-3-5-sonnet-latest``) names:
    its last part; any other id as it is."""
    found = _MODELREF.fullmatch(model) if isinstance(model, str) else None
    return found[1] if found is not None else model


def _content(raw: dict[str, Any], where: str, notes: list[str]) -> Any:
    """A message's content: its ``text``, else its ``content`` (a text, or parts in
    OpenAI's shape, kept so); None when it has neither."""
    text, content = raw.get("text"), raw.get("content")
    if text is not None and not isinstance(text, str):
        raise fail(where, f"'text' must be a string, got {shortened(repr(text))}")
    if raw.get("base64Image"):
        notes.append(f"{where}: its base64Image (an image sent beside the text) not "
                     "imported")
    if text is not None or content is None:
        if content not in (None, "", []) and content != text:
            notes.append(f"{where}: its 'content' not imported: its 'text' is read")
        return text
    if not isinstance(content, str | list):
        raise fail(where, f"'content' must be a string or a list of parts, got "
                          f"{shortened(repr(content))}")
    return content


def _messages(raw: Any, where: str, notes: list[str]) -> list[dict[str, Any]]:
    if not isinstance(raw, list):
        raise fail(where, f"'messages' must be a list, got {shortened(repr(raw))}")
    out: list[dict[str, Any]] = []
    for i, m in enumerate(raw):
        at = f"{where}: message {i}"
        if not isinstance(m, dict):
            raise fail(at, f"a message must be an object, got {shortened(repr(m))}")
        speaker = m.get("speaker")
        if not isinstance(speaker, str) or speaker not in _ROLES:
            raise fail(at, f"speaker {shortened(repr(speaker))} is none of 'system', "
                           "'human', 'assistant'")
        content = _content(m, at, notes)
        if content in (None, "") and speaker == "assistant" and i == len(raw) - 1:
            notes.append(f"{at}: an empty assistant message ends the request (the slot "
                         "Cody's older clients leave for the answer): not imported")
            continue
        out.append({"role": _ROLES[speaker], "content": content or ""})
    if out and out[-1]["role"] == "assistant":
        notes.append(f"{where}: the request ends with an assistant message (a prefill): "
                     "the response continues its text")
    return out


def _api_version(url: Any) -> int:
    """The ``api-version`` the URL asks for (0 when none: the cumulative answers)."""
    if not isinstance(url, str):
        return 0
    try:
        said = parse_qs(urlsplit(url).query).get("api-version", ["0"])[0]
    except ValueError:
        return 0
    return int(said) if said.isdigit() else 0


def _events(text: str, where: str) -> list[tuple[str, dict[str, Any]]]:
    """An SSE text's events, each its name (the last ``event:`` line before its data)
    and its data as an object."""
    events: list[tuple[str, dict[str, Any]]] = []
    name = "completion"
    for line in text.splitlines():
        if line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            at = f"{where}: stream event {len(events)} ({name})"
            if name not in _EVENTS:
                raise fail(at, f"event {shortened(repr(name))} is none of "
                               f"{', '.join(map(repr, _EVENTS))}")
            data = load_json(line[5:].strip(), at, "data")
            if not isinstance(data, dict):
                raise fail(at, f"its data must be a JSON object, got {shortened(repr(data))}")
            events.append((name, data))
    if not events:
        raise fail(where, "the recorded stream has no events")
    return events


def _text(data: dict[str, Any], key: str, where: str) -> str:
    value = data.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise fail(where, f"'{key}' must be a string, got {shortened(repr(value))}")
    return value


def _joined(text: str, version: int, where: str, notes: list[str]
            ) -> tuple[dict[str, Any], Any]:
    """A stream's answer (``{"completion", "stopReason", "thinking"}``) and the error it
    ended with, if any."""
    events = _events(text, where)
    answer, thinking, stop, error, calls = "", "", None, None, 0
    for i, (name, data) in enumerate(events):
        at = f"{where}: stream event {i} ({name})"
        if name == "error":
            error = data.get("error", data)
        elif name == "completion":
            if version >= 2:
                answer += _text(data, "deltaText", at)
            elif "completion" in data:
                answer = _text(data, "completion", at)
            thinking += _text(data, "delta_thinking", at)
            calls += len(data["delta_tool_calls"]) if isinstance(
                data.get("delta_tool_calls"), list) else 0
            stop = data.get("stopReason") or stop
    kind = "the text so far (api-version < 2)" if version < 2 else "deltaText"
    notes.append(f"{where}: response reassembled from {len(events)} stream event(s), each "
                 f"'completion' carrying {kind}")
    if calls:
        notes.append(f"{where}: response: {calls} streamed tool call piece(s) "
                     "(delta_tool_calls) not imported")
    if events[-1][0] != "done" and stop is None and error is None:
        notes.append(f"{where}: the stream ends without its 'done' event or a stopReason: "
                     "it was cut, the answer is what came before")
    return {"completion": answer, "stopReason": stop, "thinking": thinking}, error


def _answer(response: Any, url: Any, where: str, notes: list[str]
            ) -> tuple[dict[str, Any] | None, Any]:
    """The answer (``{"completion", "stopReason"}``) and the error the call failed or
    ended with."""
    if isinstance(response, str):
        return _joined(response, _api_version(url), where, notes)
    body = object_of(response, where, "response")
    if "error" in body and "completion" not in body:
        return None, body["error"]
    if "completion" not in body and "deltaText" not in body:
        keys = ", ".join(sorted(map(str, body))[:8]) or "none"
        raise fail(where, f"a Sourcegraph completions response needs 'completion' (its "
                          f"keys: {keys})")
    return {"completion": _text(body, "completion", where) or _text(body, "deltaText", where),
            "stopReason": body.get("stopReason")}, None


def as_chat_record(obj: dict[str, Any], where: str, notes: list[str]) -> dict[str, Any]:
    """A record of Sourcegraph's completions API as the chat-completions record it is
    equivalent to (see the module's docstring)."""
    request = object_of(obj.get("request", obj), where, "request")
    chat = {_PARAMS.get(k, k): v for k, v in request.items() if k != "messages"}
    chat["messages"] = _messages(request.get("messages"), where, notes)
    out = {k: v for k, v in obj.items() if k not in ("request", "response", "error")}
    out["request"] = chat
    answer, error = (None, None) if obj.get("response") is None else _answer(
        obj["response"], obj.get("url"), where, notes)
    error = obj.get("error") or error
    if answer is not None and (answer["completion"] or answer.get("thinking")
                               or error is None):
        if error is not None:
            said = error.get("message", error) if isinstance(error, dict) else error
            notes.append(f"{where}: the stream ended with an error after its answer began "
                         f"({shortened(str(said), 120)}): the answer is what came before")
            error = None
        message: dict[str, Any] = {"role": "assistant", "content": answer["completion"]}
        if answer.get("thinking"):
            message["reasoning_content"] = answer["thinking"]
        out["response"] = {"choices": [{"message": message,
                                        "finish_reason": answer["stopReason"]}],
                           **({"model": name} if isinstance(
                               name := model_name(request.get("model")), str) else {})}
    if error is not None:
        out["error"] = error
    return out
