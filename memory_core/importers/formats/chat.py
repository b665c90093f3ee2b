"""OpenAI chat completions (``POST …/chat/completions``): a ``{"request": {"messages",
…}, "response": {"choices", …}}`` record, flat (``{"messages", "response"}``), with an
``error`` instead of a response, a response recorded as a stream, or a fine-tuning row
(``messages`` only: the last one is the answer). Other APIs' records that are
equivalent to one (Ollama's, Cohere's, LangSmith runs, Bedrock chat bodies) are
turned into one and read by ``chat_exchange``."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from typing import Any
from urllib.parse import unquote

from memory_core.errors import ImportFormatError
from memory_core.importers.common import (
    Exchange,
    fail,
    from_unix,
    openai_message,
    openai_messages,
    shortened,
    split_instructions,
)
from memory_core.importers.formats import Record, RecordFormat, Route
from memory_core.importers.formats.fields import (
    EXPECTED,
    NOT_PARAMS,
    record_context,
    request_fields,
    request_params,
    str_field,
    usage_detail,
    usage_of,
)
from memory_core.importers.formats.llamafactory import (
    is_v1,
    renumbered,
    tools_of,
    v1_messages,
)
from memory_core.importers.openai_shapes import alternatives_note, reassemble_stream
from memory_core.models.base import Usage
from memory_core.models.openai_codec import from_openai_tools
from memory_core.models.openai_stream import REASONING_KEYS
from memory_core.types import Message

# OpenAI's chat completions, Responses API and legacy completions (and every server
# compatible with them): the three formats of the OpenAI family tell them apart by keys
OPENAI = Route("openai", ("/chat/completions", "/responses", "/completions"))


# the keys of a chat message the codec reads (``models/openai_codec.py``): any other is
# dropped, and noted (``_note_unread_keys``)
READ_KEYS = frozenset(("role", "content", "name", "tool_calls", "function_call",
                       "tool_call_id", "refusal", "audio", "is_error", *REASONING_KEYS))


def _note_unread_keys(raw: Any, where: str, notes: list[str], *, said: tuple[str, ...] = ()
                      ) -> None:
    """One note per key of the messages ``raw`` (a list, or one message) that is read
    nowhere and holds something (a null, false or empty one drops nothing), naming the
    messages that have it; ``said``: keys another note names already. Ollama's
    ``images`` (base64) are not imported either: its OpenAI-compatible API does not read
    them (its ``/api/chat`` does, and its reader keeps them as placeholders)."""
    messages = raw if isinstance(raw, list) else [raw]
    found: dict[str, list[int]] = {}
    in_parts: dict[str, list[int]] = {}  # (a text part's other keys: cache_control …)
    for i, m in enumerate(messages):
        for key, value in m.items() if isinstance(m, dict) else ():
            if key not in READ_KEYS and key not in said and _holds(value):
                found.setdefault(str(key), []).append(i)
        content = m.get("content") if isinstance(m, dict) else None
        for part in content if isinstance(content, list) else ():
            if isinstance(part, dict) and part.get("type") == "text":
                for key, value in part.items():
                    if key not in ("type", "text") and _holds(value) \
                            and i not in in_parts.get(key, []):
                        in_parts.setdefault(str(key), []).append(i)
    which = "message(s) {}" if isinstance(raw, list) else "response"
    for key, at in found.items():
        why = (": Ollama's OpenAI-compatible API does not read it (its /api/chat does)"
               if key == "images" else "")
        notes.append(f"{where}: {which.format(', '.join(map(str, at)))}: key {key!r} not "
                     f"imported (no key of the OpenAI chat format){why}")
    for key, at in in_parts.items():
        why = (": a mark where the provider caches the prompt, no text it reads"
               if key == "cache_control" else "")
        notes.append(f"{where}: {which.format(', '.join(map(str, at)))}: text parts' key "
                     f"{key!r} not imported (no key of the OpenAI chat format){why}")


def _holds(value: Any) -> bool:
    """Whether a value says anything (a null, false or empty one drops nothing)."""
    return value is not None and value is not False and value not in ("", [], {})


def _answered(response: dict[str, Any]) -> bool:
    """Whether a chat completion's first choice says anything (text or calls)."""
    choices = response.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, dict) else None
    return isinstance(message, dict) and bool(message.get("content")
                                              or message.get("tool_calls"))


def _error_said(error: Any) -> str:
    said = error.get("message") if isinstance(error, dict) else error
    return shortened(str(said), 120)


def answered_as_chat(record: dict[str, Any]) -> bool:
    """Whether a record's response is a chat completion or a stream of its chunks (it
    has ``choices``, which no other API's answer has): Writer's ``/v1/chat``, say, a
    path Cohere v1 uses too."""
    response = record.get("response")
    if isinstance(response, dict):
        return isinstance(response.get("choices"), list)
    if isinstance(response, list):
        return bool(response) and isinstance(response[0], dict) and "choices" in response[0]
    return isinstance(response, str) and '"choices"' in response[:4000]


def _chat_response(response: Any, where: str, notes: list[str]
                   ) -> tuple[Message, str | None, Usage, bool, dict[str, Any]]:
    """A chat completion's answer (a stream was reassembled by ``chat_exchange``)."""
    if not isinstance(response, dict):
        raise fail(where, f"'response' must be an object, got {type(response).__name__}")
    choices = response.get("choices")
    if not isinstance(choices, list) or not choices:
        raise fail(where, "response has no 'choices'")
    if len(choices) > 1:
        notes.append(alternatives_note(where, len(choices) - 1, response.get("usage")))
    choice = choices[0]
    if isinstance(choice, dict) and "message" not in choice \
            and isinstance(choice.get("finish_reason"), str):
        # a choice ended with no message (Azure's "content_filter" withholding the
        # answer): the answer is empty, its finish reason says why (say_empty_answers)
        choice = {**choice, "message": {"role": "assistant", "content": ""}}
    if not isinstance(choice, dict) or "message" not in choice:
        raise fail(where, "response choice 0 has no 'message'")
    raw_reply = choice["message"]
    cited = [k for k, v in (("annotations", raw_reply.get("annotations")
                             if isinstance(raw_reply, dict) else None),
                            ("citations", response.get("citations")),
                            ("search_results", response.get("search_results"))) if v]
    if cited:  # (url_citation annotations; Perplexity's citations, search results)
        notes.append(f"{where}: response: its {', '.join(cited)} (sources the answer cites) "
                     "not imported")
    if isinstance(raw_reply, dict) and "role" not in raw_reply:
        raw_reply = {**raw_reply, "role": "assistant"}
    reply = openai_message(raw_reply, f"{where}: response", notes)
    _note_unread_keys(raw_reply, where, notes, said=("annotations",))
    if reply.role != "assistant":
        raise fail(where, f"response message has role {reply.role!r}, expected 'assistant'")
    # (Gemini's OpenAI-compatible API wrote camelCase in 2024: "finishReason")
    said = choice.get("finish_reason", choice.get("finishReason"))
    finish = said if isinstance(said, str) else None
    usage, known = usage_of(response.get("usage"), where, notes)
    return reply, finish, usage, known, response


def _not_params(record: dict[str, Any], where: str, notes: list[str]) -> AbstractSet[str]:
    """``NOT_PARAMS`` and a record's lists of the media its messages refer to (a training
    row's ``images``, ``videos``, ``audios`` in LLaMA-Factory's data: file paths or URLs,
    an ``<image>`` token in the text for each), named in the notes: not parameters."""
    keys = [k for k in _MEDIA if isinstance(record.get(k), list)]
    for k in keys:
        notes.append(f"{where}: the record's {k} ({len(record[k])} named) not imported")
    return NOT_PARAMS.union(keys) if keys else NOT_PARAMS


_MEDIA = ("images", "videos", "audios")


def chat_exchange(obj: dict[str, Any], where: str, index: int,
                  notes: list[str] | None = None, api: str | None = None) -> Exchange:
    """A chat-completions record, or a fine-tuning row whose last message is the
    assistant's answer; ``notes``: what reading it so far noted (an Ollama record
    turned into this one)."""
    request = obj.get("request", obj)
    if not isinstance(request, dict):
        raise fail(where, f"'request' must be an object, got {type(request).__name__}")
    notes = list(notes or [])
    raw_messages, raw_tools = request["messages"], request.get("tools",
                                                               request.get("functions"))
    origin = None
    if is_v1(raw_messages):  # (LLaMA-Factory's v1 training rows)
        raw_messages, origin = v1_messages(raw_messages, where, notes)
        raw_tools = tools_of(raw_tools, where)
    start = len(notes)
    try:
        messages = openai_messages(raw_messages, where, notes)
    except ImportFormatError as e:  # (naming the row's own messages)
        raise e if origin is None else ImportFormatError(renumbered(str(e), origin)) \
            from None
    _note_unread_keys(raw_messages, where, notes)
    if origin is not None:
        notes[start:] = [renumbered(n, origin) for n in notes[start:]]
    if not messages:
        # (a call refused for it, recorded: the server's words say so)
        refused = obj.get("error") or (obj["response"].get("error") if isinstance(
            obj.get("response"), dict) else None)
        raise fail(where, "'messages' is empty" + (
            f": the server refused the call ({_error_said(refused)}); there is no "
            "conversation to import" if refused else ""))
    thread_key, resource = record_context(obj, request, where)
    response, error = obj.get("response"), obj.get("error")
    if isinstance(response, list | str):
        response = reassemble_stream(response, where, notes)
    if isinstance(response, dict) and response.get("error") and not _answered(response):
        # an error sent with HTTP 200 (Azure's prompt filter; OpenRouter's mid-stream,
        # after nothing was said): the call failed
        error, response = response["error"], None
        notes.append(f"{where}: the response is an error, recorded with a success status")
    elif isinstance(response, dict) and response.get("error"):
        notes.append(f"{where}: the stream ended with an error after its answer began "
                     f"({_error_said(response['error'])}): the answer is what came before")
    reply: Message | None = None
    rebuilt = False
    usage, usage_known, finish, created = Usage(), False, None, None
    model = asked = str_field(where, request, "model")
    detail: dict[str, int] = {}
    if response is not None:
        reply, finish, usage, usage_known, body = _chat_response(response, where, notes)
        detail = usage_detail(body.get("usage")) if usage_known else {}
        model = str_field(where, body, "model") or model
        if body.get("created") is not None:
            created = from_unix(body["created"], where, "response.created")
    elif not error:
        if messages[-1].role != "assistant":
            raise fail(where, "missing 'response' and the last message is not the "
                              "assistant's (a fine-tuning row ends with the answer): "
                              + EXPECTED)
        reply = messages.pop()  # fine-tuning row: the last message is the answer
        rebuilt = True  # (a row, not a request: what it was sent with is not kept)
        notes.append(f"{where}: no response recorded; the last message is taken as the "
                     "answer (fine-tuning row)")
    instructions, history = split_instructions(messages)
    return Exchange(
        where=where, index=index, instructions=instructions, history=history,
        response=reply, thread_key=thread_key, resource_id=resource,
        model=model, requested_model=asked, usage=usage, usage_known=usage_known,
        usage_detail=detail,
        finish_reason=finish,
        params=(params := request_params(request, where,
                                         not_params=_not_params(request, where, notes))),
        params_known=bool(params) or not rebuilt, request_fields=request_fields(request),
        tools=from_openai_tools(raw_tools or [], where, notes),
        started_at=created, finished_at=created,
        error=None if reply is not None else (error if isinstance(error, str) else json.dumps(
            error, sort_keys=True, ensure_ascii=False)),
        notes=notes, api=api)


def _matches(record: Record) -> bool:
    """A request with ``messages``, sent to no URL or to OpenAI's."""
    request = record.request
    return record.api in (None, "openai") and isinstance(request, dict) \
        and "messages" in request


# Azure OpenAI's URL names the deployment (``…/openai/deployments/<name>/chat/…``), and
# its clients send no ``model``
_DEPLOYMENT = re.compile(r"/deployments/([^/]+)/")


def _read(record: Record) -> list[Exchange]:
    obj, request = record.obj, record.request
    found = _DEPLOYMENT.search(record.path or "")
    if found is None or not isinstance(request, dict) or "model" in request:
        return [chat_exchange(obj, record.where, record.index)]
    name = unquote(found.group(1))
    named = {**request, "model": name}
    notes = [f"{record.where}: the request names no model; its URL names the Azure OpenAI "
             f"deployment {name!r}, taken as the model asked for"]
    return [chat_exchange({**obj, "request": named} if "request" in obj else named,
                          record.where, record.index, notes)]


FORMAT = RecordFormat("chat", 100, _matches, _read, routes=(OPENAI,))


def read_as_chat(convert: Callable[[dict[str, Any], str, list[str]], dict[str, Any]],
                 api: str | None = None) -> Callable[[Record], list[Exchange]]:
    """The reader of a format whose records are turned into chat completions records
    (``convert(obj, where, notes)``, noting what it drops) and read as one; ``api``:
    what the report calls the calls (None: the OpenAI family's)."""
    def read(record: Record) -> list[Exchange]:
        notes: list[str] = []
        return [chat_exchange(convert(record.obj, record.where, notes), record.where,
                              record.index, notes, api=api)]
    return read
