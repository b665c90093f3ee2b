"""Anthropic's Messages API (``POST …/v1/messages``, an Anthropic-compatible base URL's
``…/messages``, Claude on Vertex AI's ``:rawPredict``): ``system`` is the
instructions, the response's ``stop_reason`` the finish reason (and its
``stop_sequence`` which one ended it), an error body a failed
run (``anthropic.py`` reads its content blocks and streams). Bedrock's Converse and
Claude's InvokeModel body are read as the Messages API record they are equivalent to
(``bedrock_converse``, ``bedrock_invoke``)."""

from __future__ import annotations

import json
import re
from typing import Any

from memory_core.errors import ImportFormatError
from memory_core.importers.anthropic import (
    anthropic_messages,
    anthropic_reply,
    anthropic_tools,
    is_anthropic_record,
    system_messages,
)
from memory_core.importers.common import Exchange, fail, shortened
from memory_core.importers.formats import Record, RecordFormat, Route, by_url_or_keys
from memory_core.importers.formats.fields import (
    NOT_PARAMS,
    count_of,
    record_context,
    request_fields,
    request_params,
    str_field,
    usage_detail,
    usage_of,
)
from memory_core.importers.gemini import model_in_path as vertex_model
from memory_core.models.base import Usage
from memory_core.types import Message

# the OpenAI Assistants API's messages of a thread (``/threads/{id}/messages``) are not
# model calls; every other ``…/messages`` is the Messages API (Anthropic's own
# ``/v1/messages``, or an Anthropic-compatible base URL such as ``…/anthropic/messages``)
MESSAGES = Route("anthropic", ("/messages",), unless=re.compile(r"/threads/[^/]+/messages$"))
# Claude on Vertex AI: the Messages API's body, the model named by the URL
VERTEX = Route("vertex-anthropic", (":rawPredict", ":streamRawPredict"),
               within="/publishers/anthropic/")

ANTHROPIC_CACHE_TOKENS = ("cache_creation_input_tokens", "cache_read_input_tokens")


def anthropic_usage(raw: Any, where: str, notes: list[str]) -> tuple[Usage, bool]:
    """A Messages API ``usage``: its ``input_tokens`` leave out the prompt tokens written
    to or read from the prompt cache, which OpenAI's ``prompt_tokens`` count; they are
    added, so input tokens are the whole prompt whichever API recorded it (noted)."""
    usage, known = usage_of(raw, where, notes)
    cached = {k: n for k in ANTHROPIC_CACHE_TOKENS
              if (n := count_of(raw.get(k) if isinstance(raw, dict) else None))}
    if known and cached:
        usage = usage.model_copy(update={"input_tokens": usage.input_tokens
                                         + sum(cached.values())})
        said = " + ".join(f"{k} {n}" for k, n in cached.items())
        notes.append(f"{where}: input tokens {usage.input_tokens} = input_tokens "
                     f"{raw['input_tokens']} + {said}")
    return usage, known


# the Messages API's request keys that are the conversation or its packaging: its
# ``metadata`` ({"user_id"}) is a parameter sent with the call, kept as one
ANTHROPIC_NOT_PARAMS = (NOT_PARAMS - {"metadata"}) | {"system"}


def anthropic_exchange(obj: dict[str, Any], where: str, index: int,
                       notes: list[str] | None = None, api: str = "anthropic") -> Exchange:
    """An Anthropic Messages API record (``anthropic.py`` reads its shapes): ``system``
    is the instructions, the response's ``stop_reason`` the finish reason, an error
    body (or ``error`` on the line) a failed run; the request's ``metadata.user_id``
    names the resource when the line does not. ``notes`` and ``api``: what reading it
    noted before, and which API it was (a Bedrock Converse record turned into one)."""
    request = obj.get("request", obj)
    if not isinstance(request, dict):
        raise fail(where, f"'request' must be an object, got {type(request).__name__}")
    if "messages" not in request:
        raise fail(where, "Messages API record has no request 'messages'")
    notes = list(notes or [])
    strict = list(notes)
    try:
        history = anthropic_messages(request["messages"], where, strict)
        notes = strict
    except ImportFormatError:
        refused = _refusal(obj, where)
        if refused is None:
            raise
        # a call the API refused: its request as sent, whatever broke the API's rules
        history = anthropic_messages(request["messages"], where, notes, refused=refused)
    if not history:
        raise fail(where, "'messages' is empty")
    if history[-1].role == "assistant":
        notes.append(f"{where}: the request ends with an assistant message (a prefill): "
                     "the response continues its text")
    if marked := _cache_marks(request):
        notes.append(f"{where}: {len(marked)} prompt-caching mark(s) (cache_control: "
                     f"{', '.join(marked[:5])}{' …' if len(marked) > 5 else ''}) not "
                     "imported: where the provider caches the prompt, no text it reads")
    sent = request.get("metadata")
    thread_key, resource = record_context(obj, request, where,
                                           *([sent] if isinstance(sent, dict) else []))
    response, error = obj.get("response"), obj.get("error")
    if response is None and not error:
        raise fail(where, "Messages API record has neither a 'response' nor an 'error'")
    reply: Message | None = None
    body: dict[str, Any] = {}
    if response is not None:
        reply, body, failed = anthropic_reply(response, where, notes)
        error = error or failed
    usage, known = anthropic_usage(body.get("usage"), where, notes) if reply is not None \
        else (Usage(), False)
    finish, stop = body.get("stop_reason"), body.get("stop_sequence")
    details = body.get("stop_details")
    if isinstance(details, dict) and details:  # (a refusal's category and explanation)
        said = "; ".join(f"{k}: {v}" for k, v in details.items() if v not in (None, ""))
        notes.append(f"{where}: stopped ({finish}) — {shortened(said, 300)}")
    return Exchange(
        where=where, index=index, instructions=system_messages(request.get("system"), where),
        history=history, response=reply, thread_key=thread_key, resource_id=resource,
        model=str_field(where, body, "model") or str_field(where, request, "model"),
        requested_model=str_field(where, request, "model"),
        usage=usage, usage_known=known, finish_reason=finish if isinstance(finish, str) else None,
        stop_sequence=stop if isinstance(stop, str) else None,
        usage_detail=usage_detail(body.get("usage")) if known else {},
        params=request_params(request, where, not_params=ANTHROPIC_NOT_PARAMS),
        request_fields=request_fields(request),
        tools=anthropic_tools(request.get("tools") or [], where, notes,
                              request.get("mcp_servers")),
        error=None if reply is not None else _error_text(error),
        notes=notes, api=api)


def _cache_marks(request: dict[str, Any]) -> list[str]:
    """Where a request marks its prompt for caching (``cache_control`` on a block of
    the system prompt, of a message or of a tool result's content, on a tool, or on
    the request itself): "system block 0", "message 2 block 1", "tool 3"."""
    def blocks(value: Any) -> list[Any]:
        return value if isinstance(value, list) else []

    def marked(block: Any) -> bool:
        return isinstance(block, dict) and bool(block.get("cache_control"))

    found = ["the request"] if request.get("cache_control") else []
    found += [f"system block {j}" for j, b in enumerate(blocks(request.get("system")))
              if marked(b)]
    for i, m in enumerate(blocks(request.get("messages"))):
        for j, b in enumerate(blocks(m.get("content") if isinstance(m, dict) else None)):
            inner = b.get("content") if isinstance(b, dict) else None
            found += [f"message {i} block {j}"] if marked(b) else []
            found += [f"message {i} block {j} part {k}"
                      for k, part in enumerate(blocks(inner)) if marked(part)]
    return found + [f"tool {k}" for k, t in enumerate(blocks(request.get("tools")))
                    if marked(t)]


def _refusal(obj: dict[str, Any], where: str) -> str | None:
    """The error a record of a call the API refused holds (its ``error``, or an error
    body as the response), as text; None for a call that was answered."""
    error = obj.get("error")
    if not error and obj.get("response") is not None:
        reply, _, failed = anthropic_reply(obj["response"], where, [])
        error = failed if reply is None else None
    return _error_text(error) if error else None


def _error_text(error: Any) -> str:
    """A recorded error as the run keeps it: its text, or its JSON."""
    return error if isinstance(error, str) else json.dumps(error, sort_keys=True,
                                                           ensure_ascii=False)


def _read(record: Record) -> list[Exchange]:
    obj, request, path = record.obj, record.obj.get("request"), record.path
    if record.api == "vertex-anthropic" and path is not None and isinstance(request, dict) \
            and "model" not in request:
        obj = {**obj, "request": {**request, "model": vertex_model(path)}}
    return [anthropic_exchange(obj, record.where, record.index)]


FORMAT = RecordFormat(
    "anthropic", 80,
    lambda r: by_url_or_keys(r, ("anthropic", "vertex-anthropic"), is_anthropic_record),
    _read, routes=(MESSAGES, VERTEX))
