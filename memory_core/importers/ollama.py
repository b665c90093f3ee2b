"""Ollama's native API (``POST /api/chat``, ``POST /api/generate``) as its clients
record it (ollama-python, ollama-js, LangChain's ChatOllama): each record becomes the
chat-completions record it is equivalent to, and is read as one.

- ``/api/chat``: ``messages`` as OpenAI's, except ``images`` (base64, kept as
  placeholders), ``tool_calls`` whose ``arguments`` are an object and carry no id
  (given the derived id every importer gives, which a later request naming the call
  replaces), ``tool_name`` on a tool result, and ``thinking`` (noted, not imported);
- ``/api/generate``: ``system`` and ``prompt`` are the instructions and the user
  message; ``context`` (the token ids of earlier turns) is noted, not decoded;
- the answer: ``message`` (or ``response`` for generate), ``done_reason``,
  ``prompt_eval_count`` / ``eval_count`` as usage, ``created_at``; a stream (JSON
  lines of partial answers, the last one ``done``) is joined first;
- ``options`` (``temperature``, ``num_predict``, ``top_p``, …) are parameters, as
  ``format``, ``keep_alive`` and ``think`` are; a key Ollama does not read (a
  ``temperature`` beside ``messages``) is noted, not a parameter; ``num_predict`` (the most tokens to
  write) as ``max_tokens``, as the model identity records it for every API (a negative
  one — no limit — keeps its name);
- a record with no answer (a failed call, no URL) is told by the keys only Ollama's
  requests have (``options``, ``keep_alive``, ``context``, …)."""

from __future__ import annotations

from typing import Any

from memory_core.errors import ImportFormatError
from memory_core.importers.common import fail, iso_time
from memory_core.importers.jsonvalues import load_json

OLLAMA_PATHS = ("/api/chat", "/api/generate")
_NOT_SENT = ("messages", "prompt", "system", "images", "context", "options")
# settings Ollama reads only under ``options`` (and OpenAI's names for two of them):
# beside ``messages`` the server ignores them
_OPTIONS_ONLY = frozenset((
    "temperature", "top_p", "top_k", "min_p", "typical_p", "seed", "num_predict",
    "max_tokens", "stop", "num_ctx", "num_keep", "repeat_penalty", "repeat_last_n",
    "presence_penalty", "frequency_penalty", "penalize_newline", "mirostat",
    "mirostat_tau", "mirostat_eta", "tfs_z", "num_batch", "num_gpu", "main_gpu",
    "num_thread", "use_mmap", "numa", "low_vram"))


def json_lines(text: str, where: str) -> list[Any] | None:
    """A body of JSON lines (Ollama streams ``application/x-ndjson``): its objects, or
    None when it is not several lines of JSON objects. Several lines whose first is a
    whole JSON object but whose others are not all objects are a stream with a broken
    line: one error naming the first line that is no JSON object (it was read as one
    JSON body, "Extra data: line 2 column 1")."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(lines) < 2 or not lines[0].lstrip().startswith("{"):
        return None
    if not all(ln.lstrip().startswith("{") for ln in lines):
        try:  # (pretty-printed JSON opens a line with "{" too, but is no object alone)
            if not isinstance(load_json(lines[0], where), dict):
                return None
        except ImportFormatError:
            return None
    return [load_json(ln, where, f"stream line {n}") for n, ln in enumerate(lines, 1)]


def _is_answer(chunk: Any) -> bool:
    return isinstance(chunk, dict) and "done" in chunk and "choices" not in chunk and (
        "message" in chunk or "response" in chunk)


# request keys only Ollama's API has (OpenAI's ``format`` is ``response_format``), and
# keys only its messages have
_OWN_KEYS = ("options", "keep_alive", "context", "template", "raw", "think")
_OWN_MESSAGE_KEYS = ("images", "tool_name", "thinking")


def is_ollama_record(obj: Any) -> bool:
    """A record whose answer is Ollama's (``done``, and ``message`` or ``response``), or
    that has no answer (a failed call) and whose request — a ``model`` and ``messages``
    or a ``prompt`` — has keys only Ollama's has."""
    if not isinstance(obj, dict):
        return False
    response = obj.get("response")
    first = response[0] if isinstance(response, list) and response else response
    if _is_answer(first):
        return True
    request = obj.get("request", obj)
    if response is not None or not isinstance(request, dict):
        return False
    messages = request.get("messages")
    if not isinstance(request.get("model"), str) or not ("prompt" in request or isinstance(
            messages, list)):  # (no call: an agent's session with a 'context' object)
        return False
    return any(k in request for k in _OWN_KEYS) or isinstance(messages, list) and any(
        isinstance(m, dict) and any(k in m for k in _OWN_MESSAGE_KEYS) for m in messages)


def _images(images: Any, where: str) -> list[dict[str, Any]]:
    if images is None:
        return []
    if not isinstance(images, list) or not all(isinstance(i, str) for i in images):
        raise fail(where, f"'images' must be a list of base64 strings, got {images!r}")
    return [{"type": "image", "image": {"data": i}} for i in images]


def _content(text: Any, images: Any, where: str) -> Any:
    parts = _images(images, where)
    if not parts:
        return text
    return ([{"type": "text", "text": text}] if text else []) + parts


def _message(raw: Any, where: str, notes: list[str]) -> Any:
    """One Ollama message as OpenAI's."""
    if not isinstance(raw, dict):
        return raw  # the chat reader names what is wrong with it
    out = {k: v for k, v in raw.items() if k not in ("images", "thinking", "tool_name")}
    out["content"] = _content(raw.get("content"), raw.get("images"), where)
    if isinstance(raw.get("tool_name"), str) and "name" not in raw:
        out["name"] = raw["tool_name"]
    if raw.get("thinking"):
        notes.append(f"{where}: the model's thinking not imported")
    return out


def _joined(response: Any, where: str, notes: list[str]) -> dict[str, Any]:
    """The answer as a chat completion: a stream's partial answers joined."""
    chunks = response if isinstance(response, list) else [response]
    if not chunks or not all(_is_answer(c) for c in chunks):
        raise fail(where, "every line of a recorded Ollama stream must be an answer "
                          "object ('done', and 'message' or 'response')")
    text: list[str] = []
    calls: list[Any] = []
    thinking = False
    for c in chunks:
        msg = c.get("message")
        if isinstance(msg, dict):
            if isinstance(msg.get("content"), str):
                text.append(msg["content"])
            calls.extend(msg.get("tool_calls") or [])
            thinking = thinking or bool(msg.get("thinking"))
        elif isinstance(c.get("response"), str):
            text.append(c["response"])
        thinking = thinking or bool(c.get("thinking"))
    last = chunks[-1]
    if thinking:
        notes.append(f"{where}: the model's thinking not imported")
    if not last.get("done"):
        notes.append(f"{where}: the recorded stream ends before its last line ('done' "
                     "is false): the answer may be cut")
    message: dict[str, Any] = {"role": "assistant", "content": "".join(text)}
    if calls:
        message["tool_calls"] = calls
    out: dict[str, Any] = {"model": last.get("model"),
                           "choices": [{"message": message,
                                        "finish_reason": last.get("done_reason")}]}
    created = iso_time(chunks[0].get("created_at"), where, "created_at")
    if created is not None:
        out["created"] = created.timestamp()
    if isinstance(last.get("prompt_eval_count"), int) and isinstance(
            last.get("eval_count"), int):
        out["usage"] = {"prompt_tokens": last["prompt_eval_count"],
                        "completion_tokens": last["eval_count"]}
    return out


def as_chat_record(obj: dict[str, Any], where: str, notes: list[str]) -> dict[str, Any]:
    """An Ollama record as the chat-completions record it is equivalent to."""
    request = obj.get("request", obj)
    if not isinstance(request, dict):
        raise fail(where, f"'request' must be an object, got {type(request).__name__}")
    if "messages" in request:
        raw = request["messages"]
        messages = [_message(m, f"{where}: message {i}", notes) for i, m in enumerate(raw)] \
            if isinstance(raw, list) else raw
    else:
        prompt = request.get("prompt")
        if not isinstance(prompt, str):
            raise fail(where, f"an Ollama generate request needs a string 'prompt', got "
                              f"{prompt!r}")
        system = request.get("system")
        messages = ([{"role": "system", "content": system}] if system else []) + [
            {"role": "user", "content": _content(prompt, request.get("images"), where)}]
        context = request.get("context")
        if context is not None and not isinstance(context, list):
            raise fail(where, f"'context' must be a list of token ids, got {context!r}"[:300])
        if context:
            notes.append(f"{where}: 'context' ({len(context)} token ids of the "
                         "earlier turns) not imported: the history it encodes is not text")
    options = request.get("options") or {}
    if not isinstance(options, dict):
        raise fail(where, f"'options' must be an object, got {options!r}")
    limit = options.get("num_predict")
    if isinstance(limit, int) and not isinstance(limit, bool) and limit >= 0:
        options = {**{k: v for k, v in options.items() if k != "num_predict"},
                   "max_tokens": limit}
    ignored = [k for k in request if k in _OPTIONS_ONLY]
    if ignored:
        # (langchainrb sends ``temperature`` beside ``messages``: the server ran with
        # its own default, so it is no parameter of the run)
        notes.append(f"{where}: {', '.join(repr(k) for k in ignored)} sent at the top "
                     "level, where Ollama does not read "
                     f"{'it' if len(ignored) == 1 else 'them'} (sampling settings go "
                     "under 'options'): not a parameter of the run")
    chat = {**{k: v for k, v in request.items() if k not in _NOT_SENT and k not in ignored},
            **options, "messages": messages}
    out = {k: v for k, v in obj.items() if k not in ("request", "response")}
    out["request"] = chat
    if obj.get("response") is not None:
        out["response"] = _joined(obj["response"], where, notes)
    return out
