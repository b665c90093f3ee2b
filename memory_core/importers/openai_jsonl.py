"""Reading OpenAI logs: chat-completions request/response records (wrapped
``{"request", "response", "metadata"}`` or flat ``{"messages", "response"}``), fine-tuning
rows (``messages`` only), ShareGPT conversations, Responses API request/response records,
Anthropic Messages API request/response records, batch input+output files, and
responses recorded as SSE streams — as JSON lines, a JSON array, or one
(pretty-printed) JSON document.

Each record becomes one or more ``Exchange``s; any malformed record rejects the whole
file with an ``ImportFormatError`` naming the line (or item) and what was expected."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from memory_core.importers.anthropic import (
    anthropic_messages,
    anthropic_reply,
    anthropic_tools,
    is_anthropic_record,
    system_messages,
)
from memory_core.importers.bedrock import as_anthropic_record, is_converse_record
from memory_core.importers.bedrock import model_in_path as bedrock_model
from memory_core.importers.bedrock_invoke import (
    invoke_completion,
    invoke_family,
    is_invoke_prompt_record,
    own_format,
)
from memory_core.importers.cassette import cassette_records, llm_api, looks_like_cassette
from memory_core.importers.cohere import as_chat_record as cohere_record
from memory_core.importers.cohere import is_cohere_record
from memory_core.importers.common import (
    READ_EVERY,
    Exchange,
    HeldHistory,
    ParsedFile,
    SkippedRecord,
    Stages,
    fail,
    from_unix,
    iso_time,
    openai_message,
    openai_messages,
    sharing,
    split_instructions,
)
from memory_core.importers.gemini import gemini_exchange, is_gemini_record
from memory_core.importers.gemini import model_in_path as gemini_model
from memory_core.importers.har import har_document, har_records, looks_like_har
from memory_core.importers.jsonvalues import iter_documents, load_json
from memory_core.importers.langsmith import as_chat_record as langsmith_record
from memory_core.importers.langsmith import is_langsmith_run, langsmith_rows
from memory_core.importers.ollama import as_chat_record, is_ollama_record
from memory_core.importers.openai_shapes import (
    completed_response,
    reassemble_stream,
    responses_exchange_parts,
    sharegpt_messages,
)
from memory_core.models.base import Usage
from memory_core.openai_codec import from_openai_tools
from memory_core.types import Message

THREAD_KEYS = ("thread_id", "conversation_id")
RESOURCE_KEYS = ("resource_id", "user_id", "user")
# request keys that say where the conversation is held or how it was sent, not how to
# sample: kept in the run's import record as they were (``Exchange.request_fields``)
REQUEST_FIELDS = ("previous_response_id", "conversation", "store", "stream")
# the record's own keys, beside the request's in a flat record ({"messages",
# "response", "thread_id", …}): never request parameters
RECORD_KEYS = {"response", "error", "url", "recorded_at", "resource_id", "user_id",
               *THREAD_KEYS}
# request keys that are the conversation or its packaging, not sampling parameters
NOT_PARAMS = {"messages", "model", "tools", "functions", "input", "instructions",
              "metadata", "user", "stream_options", "prompt", *REQUEST_FIELDS, *RECORD_KEYS}
EXPECTED = ("expected an OpenAI chat-completions record ({\"request\": {\"messages\": "
            "[...]}, \"response\": {...}} or {\"messages\": [...], \"response\": {...}}), a "
            "fine-tuning row ({\"messages\": [...]}), a ShareGPT conversation "
            "({\"conversations\": [...]}), a Responses API record ({\"request\": {\"input\": "
            "...}, \"response\": {\"output\": [...]}}), an Anthropic Messages API record "
            "({\"request\": {\"messages\": [...]}, \"response\": {\"type\": \"message\", "
            "...}}) or batch lines ({\"custom_id\", \"body\"})")


def _str_field(where: str, obj: dict[str, Any], name: str) -> str | None:
    value = obj.get(name)
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str) or not value:
        raise fail(where, f"'{name}' must be a non-empty string, got {value!r}")
    return value


def _first(where: str, sources: list[dict[str, Any]], names: tuple[str, ...]) -> str | None:
    for src in sources:
        for name in names:
            value = _str_field(where, src, name)
            if value is not None:
                return value
    return None


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) \
        and value >= 0 else None


def usage_of(raw: Any) -> tuple[Usage, bool]:
    if not isinstance(raw, dict):
        return Usage(), False
    inp = _count(raw.get("prompt_tokens", raw.get("input_tokens")))
    out = _count(raw.get("completion_tokens", raw.get("output_tokens")))
    if inp is not None and out is not None:
        return Usage(input_tokens=inp, output_tokens=out), True
    return Usage(), False


ANTHROPIC_CACHE_TOKENS = ("cache_creation_input_tokens", "cache_read_input_tokens")


def anthropic_usage(raw: Any, where: str, notes: list[str]) -> tuple[Usage, bool]:
    """A Messages API ``usage``: its ``input_tokens`` leave out the prompt tokens written
    to or read from the prompt cache, which OpenAI's ``prompt_tokens`` count; they are
    added, so input tokens are the whole prompt whichever API recorded it (noted)."""
    usage, known = usage_of(raw)
    cached = {k: n for k in ANTHROPIC_CACHE_TOKENS
              if (n := _count(raw.get(k) if isinstance(raw, dict) else None))}
    if known and cached:
        usage = usage.model_copy(update={"input_tokens": usage.input_tokens
                                         + sum(cached.values())})
        said = " + ".join(f"{k} {n}" for k, n in cached.items())
        notes.append(f"{where}: input tokens {usage.input_tokens} = input_tokens "
                     f"{raw['input_tokens']} + {said}")
    return usage, known


def request_params(request: dict[str, Any], where: str, *,
                   not_params: AbstractSet[str] = NOT_PARAMS) -> dict[str, Any]:
    """Every sampling/request parameter the record kept (temperature, top_p, seed,
    max_tokens, stop, response_format, …); numbers must be finite."""
    params = {k: v for k, v in request.items() if k not in not_params}
    for k in ("temperature", "top_p", "top_k", "seed", "max_tokens", "max_completion_tokens",
              "max_output_tokens", "frequency_penalty", "presence_penalty", "n"):
        v = params.get(k)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int | float)):
            raise fail(where, f"request '{k}' must be a number, got {v!r}")
    return params


def request_fields(request: dict[str, Any]) -> dict[str, Any]:
    """The request's ``REQUEST_FIELDS``, as sent."""
    return {k: request[k] for k in REQUEST_FIELDS if k in request}


def _looks_like_batch(obj: dict[str, Any]) -> bool:
    """A line of a batch file: OpenAI's input (``custom_id``, ``body``) or output
    (``response.body``), or Anthropic's Message Batches request (``params``) or result
    (``result``)."""
    return "custom_id" in obj and (
        "body" in obj or "params" in obj or isinstance(obj.get("result"), dict)
        or isinstance(obj.get("response"), dict) and "body" in obj["response"])


def _batch_request(obj: dict[str, Any]) -> Any:
    """A batch input line's request (OpenAI's ``body``, Anthropic's ``params``), or None
    for an output line."""
    return obj.get("body", obj.get("params")) if ("body" in obj or "params" in obj) \
        else None


def _batch_answer(out: dict[str, Any]) -> tuple[Any, Any]:
    """An output line's response body, or (None, the error): OpenAI's ``response``
    (``status_code``, ``body``) and ``error``, or Anthropic's ``result`` (``succeeded``
    with its ``message``; ``errored``, ``canceled``, ``expired``)."""
    result = out.get("result")
    if isinstance(result, dict):
        if result.get("type") == "succeeded" and isinstance(result.get("message"), dict):
            return result["message"], None
        return None, result.get("error") or f"batch request {result.get('type')}"
    response = out.get("response") or {}
    if response.get("status_code", 200) == 200 and isinstance(response.get("body"), dict):
        return response["body"], None
    return None, out.get("error") or response.get("body") or \
        f"status {response.get('status_code')}"


def _record_context(obj: dict[str, Any], request: dict[str, Any], where: str,
                    *also: dict[str, Any]) -> tuple[str | None, str | None]:
    """The record's thread key and resource: the line's own keys, its ``metadata``'s,
    then the request's (OpenAI's end-user ``user``), then ``also``'s."""
    metadata = obj.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise fail(where, f"'metadata' must be an object, got {type(metadata).__name__}")
    return (_first(where, [obj, metadata], THREAD_KEYS),
            _first(where, [obj, metadata, request, *also], RESOURCE_KEYS))


def _chat_response(response: Any, where: str, notes: list[str]
                   ) -> tuple[Message, str | None, Usage, bool, dict[str, Any]]:
    if isinstance(response, list | str):
        response = reassemble_stream(response, where, notes)
    if not isinstance(response, dict):
        raise fail(where, f"'response' must be an object, got {type(response).__name__}")
    choices = response.get("choices")
    if not isinstance(choices, list) or not choices:
        raise fail(where, "response has no 'choices'")
    if len(choices) > 1:
        notes.append(f"{where}: {len(choices) - 1} alternative choice(s) not imported")
    choice = choices[0]
    if not isinstance(choice, dict) or "message" not in choice:
        raise fail(where, "response choice 0 has no 'message'")
    raw_reply = choice["message"]
    if isinstance(raw_reply, dict) and "role" not in raw_reply:
        raw_reply = {**raw_reply, "role": "assistant"}
    reply = openai_message(raw_reply, f"{where}: response", notes)
    if reply.role != "assistant":
        raise fail(where, f"response message has role {reply.role!r}, expected 'assistant'")
    finish = choice.get("finish_reason") if isinstance(choice.get("finish_reason"),
                                                       str) else None
    usage, known = usage_of(response.get("usage"))
    return reply, finish, usage, known, response


def chat_exchange(obj: dict[str, Any], where: str, index: int,
                  notes: list[str] | None = None, api: str | None = None) -> Exchange:
    """A chat-completions record, or a fine-tuning row whose last message is the
    assistant's answer; ``notes``: what reading it so far noted (an Ollama record
    turned into this one)."""
    request = obj.get("request", obj)
    if not isinstance(request, dict):
        raise fail(where, f"'request' must be an object, got {type(request).__name__}")
    notes = list(notes or [])
    messages = openai_messages(request["messages"], where, notes)
    if not messages:
        raise fail(where, "'messages' is empty")
    thread_key, resource = _record_context(obj, request, where)
    response, error = obj.get("response"), obj.get("error")
    reply: Message | None = None
    usage, usage_known, finish, created = Usage(), False, None, None
    model = _str_field(where, request, "model")
    if response is not None:
        reply, finish, usage, usage_known, body = _chat_response(response, where, notes)
        model = _str_field(where, body, "model") or model
        if body.get("created") is not None:
            created = from_unix(body["created"], where, "response.created")
    elif not error:
        if messages[-1].role != "assistant":
            raise fail(where, "missing 'response' and the last message is not the "
                              "assistant's (a fine-tuning row ends with the answer): "
                              + EXPECTED)
        reply = messages.pop()  # fine-tuning row: the last message is the answer
        notes.append(f"{where}: no response recorded; the last message is taken as the "
                     "answer (fine-tuning row)")
    instructions, history = split_instructions(messages)
    return Exchange(
        where=where, index=index, instructions=instructions, history=history,
        response=reply, thread_key=thread_key, resource_id=resource,
        model=model, usage=usage, usage_known=usage_known, finish_reason=finish,
        params=request_params(request, where), request_fields=request_fields(request),
        tools=from_openai_tools(request.get("tools", request.get("functions")) or [],
                                where, notes),
        started_at=created, finished_at=created,
        error=None if reply is not None else (error if isinstance(error, str)
                                              else json.dumps(error, sort_keys=True)),
        notes=notes, api=api)


def sharegpt_exchanges(obj: dict[str, Any], where: str, index: int) -> list[Exchange]:
    """A ShareGPT conversation: one exchange per assistant turn, each with the turns
    before it as its request (they group into one thread by shared history)."""
    notes: list[str] = []
    messages = sharegpt_messages(obj["conversations"], where, notes)
    key = _str_field(where, obj, "id")
    tools = from_openai_tools(_tools_field(obj.get("tools"), where), where, notes)
    out: list[Exchange] = []
    for i, m in enumerate(messages):
        if m.role != "assistant" or i == 0:
            continue
        instructions, history = split_instructions(messages[:i])
        if not history:
            continue
        out.append(Exchange(where=f"{where} turn {i}", index=index + len(out),
                            instructions=instructions, history=history, response=m,
                            thread_key=key, tools=tools, notes=notes if not out else []))
    if not out:
        raise fail(where, "ShareGPT conversation has no assistant ('gpt') turn after a "
                          "user turn")
    return out


def _token_ids(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(
        isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in value)


def _prompt_texts(raw: Any, where: str) -> list[tuple[str, list[str]]]:
    """A legacy completion's ``prompt`` as the texts of its calls, each with what reading
    it noted: a string, a list of strings (a batch), or token ids — a list of them (one
    prompt) or a list of such lists (a batch) — each as a placeholder text naming how
    many ids it had (noted: the importer has no tokenizer to decode them)."""
    prompts = [raw] if isinstance(raw, str) or _token_ids(raw) else raw
    if not isinstance(prompts, list) or not prompts or not (
            all(isinstance(p, str) for p in prompts) or all(_token_ids(p) for p in prompts)):
        raise fail(where, "'prompt' must be a string, a list of strings, a list of token ids "
                          f"or a list of lists of token ids, got {raw!r}"[:300])
    texts: list[tuple[str, list[str]]] = []
    for i, p in enumerate(prompts):
        if isinstance(p, str):
            texts.append((p, []))
            continue
        label = where if len(prompts) == 1 else f"{where} prompt {i}"  # (its exchange's)
        texts.append((f"[prompt of {len(p)} token ids]", [
            f"{label}: the prompt was sent as {len(p)} token ids, not text: stored as a "
            "placeholder naming their number (they are not decoded)"]))
    return texts


def completion_exchanges(obj: dict[str, Any], where: str, index: int,
                         notes: list[str] | None = None, api: str | None = None
                         ) -> list[Exchange]:
    """A legacy ``/completions`` record: each prompt is a user message and the choice
    with its index the answer (a list of prompts is a batch of calls); ``notes`` and
    ``api``: those of another API's record read as one (a Bedrock model's prompt)."""
    request = obj.get("request", obj)
    prompts = _prompt_texts(request["prompt"], where)
    response = obj.get("response")
    if isinstance(response, list | str):
        response = reassemble_stream(response, where, [])
    choices = response.get("choices") if isinstance(response, dict) else None
    if choices is not None and not isinstance(choices, list):
        raise fail(where, f"response 'choices' must be a list, got {choices!r}"[:300])
    by_index: dict[Any, Any] = {}
    for i, c in enumerate(choices or []):
        if isinstance(c, dict):
            at = c.get("index", i)
            if isinstance(at, bool) or not isinstance(at, int):
                raise fail(where, f"choice {i}: 'index' must be an integer, got {at!r}")
            by_index[at] = c
    rest = {k: v for k, v in request.items() if k != "prompt"}
    out: list[Exchange] = []
    for i, (prompt, noted) in enumerate(prompts):
        record: dict[str, Any] = {**{k: v for k, v in obj.items() if k != "request"},
                                  "request": {**rest, "messages": [{"role": "user",
                                                                    "content": prompt}]}}
        choice = by_index.get(i)
        if isinstance(response, dict) and choice is not None:
            text = choice.get("text", (choice.get("message") or {}).get("content"))
            record["response"] = {**response, "choices": [{
                "message": {"role": "assistant", "content": text},
                "finish_reason": choice.get("finish_reason")}]}
        elif "error" not in obj:
            record.pop("response", None)
            record["error"] = f"no completion recorded for prompt {i}"
        label = where if len(prompts) == 1 else f"{where} prompt {i}"
        out.append(chat_exchange(record, label, index + i, [*(notes or []), *noted], api))
    return out


def _tools_field(raw: Any, where: str) -> Any:
    # ShareGPT-style datasets often store tools as a JSON string
    return load_json(raw, where, "tools") if isinstance(raw, str) else raw


@dataclass
class Held:
    """What the server holds after a recorded Responses API response: the conversation
    a later request continues by sending its id as ``previous_response_id``."""

    where: str  # the record whose response it is
    index: int  # its exchange
    messages: list[Message]  # its history (without its own instructions) and reply
    unrecorded: str | None  # HeldHistory.unrecorded of that record


@dataclass
class ServerHistory:
    """The file's Responses API responses read so far: what the server holds after
    each (by response id), and which exchange output each item (by item id: ``msg_…``,
    ``fc_…``, ``rs_…``)."""

    responses: dict[str, Held] = field(default_factory=dict)
    items: dict[str, int] = field(default_factory=dict)


def _item_ids(items: Any) -> list[str]:
    """The ids of a Responses API item list (an ``input`` or an ``output``)."""
    if not isinstance(items, list):
        return []
    return [i["id"] for i in items if isinstance(i, dict) and isinstance(i.get("id"), str)
            and i["id"]]


def _an_id(value: Any) -> str | None:
    """A response id as a reference: a non-empty string (anything else refers to
    nothing, and a record's other checks say whether it is malformed)."""
    return value if isinstance(value, str) and value else None


def _held_history(request: dict[str, Any], held: ServerHistory
                  ) -> tuple[list[Message], HeldHistory | None]:
    """The history a request continues without sending it, and how it was found: the
    earlier record whose response its ``previous_response_id`` names (its history and
    reply); nothing when that response (or a ``conversation``) is not in the file."""
    prev = _an_id(request.get("previous_response_id"))
    conversation = request.get("conversation")
    if prev is None and conversation is None:
        return [], None
    if prev is None:
        cid = conversation.get("id") if isinstance(conversation, dict) else conversation
        ref = f"conversation {str(cid)!r}"
    else:
        ref = f"previous_response_id {prev!r}"
        found = held.responses.get(prev)
        if found is not None:
            return found.messages, HeldHistory(ref, source=found.where,
                                               count=len(found.messages),
                                               unrecorded=found.unrecorded,
                                               continues=found.index)
    return [], HeldHistory(ref, unrecorded=ref)


def _held_note(where: str, h: HeldHistory) -> str:
    if h.source is None:
        return (f"{where}: history held server-side ({h.reference}) is not in the file: "
                "the prompt holds only what this request sent")
    note = (f"{where}: history held server-side ({h.reference}) reconstructed from "
            f"{h.source}: prompt messages {h.start + 1}–{h.start + h.count} were not sent "
            "with this request")
    if h.unrecorded is not None:
        note += f"; the history before {h.unrecorded} is not in the file"
    return note


def responses_exchange(obj: dict[str, Any], where: str, index: int,
                       held: ServerHistory | None = None) -> Exchange:
    """A Responses API record. With ``held`` (the file's earlier responses by id), a
    request that sent ``previous_response_id`` instead of its history gets the history
    back: the referenced record's history and reply, then its own input (its own
    ``instructions`` first: they are not inherited); and its response is added to
    ``held`` for the requests after it."""
    notes: list[str] = []
    request = obj.get("request", obj)
    if not isinstance(request, dict):
        raise fail(where, f"'request' must be an object, got {type(request).__name__}")
    response = completed_response(obj.get("response"), where, notes)
    own, inputs, reply, tools = responses_exchange_parts(request, response, where, notes)
    held = held if held is not None else ServerHistory()
    carried, history_held = _held_history(request, held)
    # an input item an earlier response output (a client sending back what it got, with
    # its ids): the request continues that response even when it sends only part of
    # the history before it
    replayed = [held.items[i] for i in _item_ids(request.get("input")) if i in held.items]
    if history_held is not None:
        history_held.start = len(own) if carried else 0
        notes.insert(0, _held_note(where, history_held))
    instructions, history = split_instructions([*own, *carried, *inputs])
    thread_key, resource = _record_context(obj, request, where)
    usage, known = usage_of(response.get("usage") if isinstance(response, dict) else None)
    created = response.get("created_at") if isinstance(response, dict) else None
    at = from_unix(created, where, "response.created_at") if created is not None else None
    model = _str_field(where, response, "model") if isinstance(response, dict) else None
    error = obj.get("error") or (response.get("error") if isinstance(response, dict) else None)
    if not error and reply is None and isinstance(response, dict) \
            and response.get("status") == "incomplete":
        # it stopped (max_output_tokens while reasoning, a content filter) before any
        # message: say so rather than "no output recorded"
        details = response.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        error = f"the response is incomplete ({reason or 'no reason given'}) and holds no " \
                "output message"
    rid = _an_id(response.get("id")) if isinstance(response, dict) else None
    if rid is not None:
        held.responses[rid] = Held(where, index,
                                   [*carried, *inputs, *([reply] if reply else [])],
                                   history_held.unrecorded if history_held is not None
                                   else None)
    if isinstance(response, dict):
        held.items.update(dict.fromkeys(_item_ids(response.get("output")), index))
    return Exchange(
        where=where, index=index, instructions=instructions, history=history, response=reply,
        thread_key=thread_key, resource_id=resource,
        model=model or _str_field(where, request, "model"), usage=usage, usage_known=known,
        finish_reason=_str_field(where, response, "status") if isinstance(response, dict)
        else None,
        params=request_params(request, where), request_fields=request_fields(request),
        tools=tools, started_at=at, finished_at=at,
        error=None if reply is not None else json.dumps(error or "no output recorded",
                                                        sort_keys=True),
        notes=notes, held=history_held, replays=max(replayed, default=None))


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
    history = anthropic_messages(request["messages"], where, notes)
    if not history:
        raise fail(where, "'messages' is empty")
    if history[-1].role == "assistant":
        notes.append(f"{where}: the request ends with an assistant message (a prefill): "
                     "the response continues its text")
    sent = request.get("metadata")
    thread_key, resource = _record_context(obj, request, where,
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
    finish = body.get("stop_reason")
    return Exchange(
        where=where, index=index, instructions=system_messages(request.get("system"), where),
        history=history, response=reply, thread_key=thread_key, resource_id=resource,
        model=_str_field(where, body, "model") or _str_field(where, request, "model"),
        usage=usage, usage_known=known, finish_reason=finish if isinstance(finish, str) else None,
        params=request_params(request, where, not_params=ANTHROPIC_NOT_PARAMS),
        request_fields=request_fields(request),
        tools=anthropic_tools(request.get("tools") or [], where, notes),
        error=None if reply is not None else (error if isinstance(error, str)
                                              else json.dumps(error, sort_keys=True)),
        notes=notes, api=api)


def record_kind(obj: Any) -> str:
    """Which OpenAI record shape ``obj`` is (for dispatch and for error messages)."""
    if not isinstance(obj, dict):
        return "not-an-object"
    request = obj.get("request", obj)
    if isinstance(obj.get("conversations"), list):
        return "sharegpt"
    if is_langsmith_run(obj):
        return "langsmith"
    api = llm_api(obj["url"]) if isinstance(obj.get("url"), str) else None
    if api == "ollama" or (api is None and is_ollama_record(obj)):
        return "ollama"
    if api == "cohere" or (api is None and is_cohere_record(obj)):
        return "cohere"
    if api == "bedrock-invoke":
        family = invoke_family(request, bedrock_model(obj["url"].split("?", 1)[0])) \
            if isinstance(request, dict) else None
        return {"claude": "anthropic", "nova": "bedrock", "prompt": "bedrock-prompt",
                "chat": "bedrock-chat", "cohere": "bedrock-cohere",
                None: "bedrock-other"}[family]
    if api == "bedrock" or (api is None and is_converse_record(obj)):
        return "bedrock"
    if api is None and is_invoke_prompt_record(obj):
        return "bedrock-prompt"
    if api in ("anthropic", "vertex-anthropic") or (
            api is None and is_anthropic_record(obj)):
        return "anthropic"
    if api == "gemini" or (api is None and is_gemini_record(request, obj.get("response"))):
        return "gemini"
    if isinstance(request, dict) and "messages" in request:
        return "chat"
    if isinstance(request, dict) and "prompt" in request and "input" not in request \
            and not isinstance(request["prompt"], dict):  # (a Responses stored prompt)
        return "completion"
    response = obj.get("response")
    if (isinstance(request, dict) and "input" in request) or (
            isinstance(response, dict) and (response.get("object") == "response"
                                            or isinstance(response.get("output"), list))):
        return "responses"
    return "unknown"


def parse_record(obj: Any, where: str, index: int, held: ServerHistory | None = None
                 ) -> list[Exchange]:
    """The exchanges of one record; ``held``: the file's Responses API responses read
    so far (see ``responses_exchange``). A call whose body says no time takes the one
    its recording gives (``recorded_at``: a HAR entry's start, an HTTP ``Date``)."""
    exchanges = _parse_record(obj, where, index, held)
    when = obj.get("start_time" if is_langsmith_run(obj) else "recorded_at") \
        if isinstance(obj, dict) else None
    if isinstance(when, str):
        at = iso_time(when, where, "recorded_at")
        for ex in exchanges:
            if ex.started_at is None:
                ex.started_at = ex.finished_at = at
    return exchanges


def _parse_record(obj: Any, where: str, index: int, held: ServerHistory | None
                  ) -> list[Exchange]:
    kind = record_kind(obj)
    notes: list[str] = []  # what turning another API's record into ours noted
    if kind == "langsmith":
        return [chat_exchange(langsmith_record(obj, where, notes), where, index, notes)]
    if kind == "cohere":
        return [chat_exchange(cohere_record(obj, where, notes), where, index, notes,
                              api="cohere")]
    if kind == "ollama":
        return [chat_exchange(as_chat_record(obj, where, notes), where, index, notes,
                              api="ollama")]
    if kind == "chat":
        return [chat_exchange(obj, where, index)]
    if kind == "completion":
        return completion_exchanges(obj, where, index)
    if kind == "sharegpt":
        return sharegpt_exchanges(obj, where, index)
    if kind == "responses":
        return [responses_exchange(obj, where, index, held)]
    if kind == "gemini":
        if "request" not in obj:  # flat: the record's own keys are not the request's
            obj = {"request": {k: v for k, v in obj.items()
                               if k not in RECORD_KEYS and k != "metadata"},
                   **{k: v for k, v in obj.items() if k in RECORD_KEYS or k == "metadata"}}
        request = obj.get("request", obj)
        thread_key, resource = _record_context(
            obj, request if isinstance(request, dict) else {}, where)
        return [gemini_exchange(obj, where, index, thread_key=thread_key,
                                resource_id=resource)]
    if kind == "anthropic":
        url = obj.get("url") if isinstance(obj, dict) else None
        request = obj.get("request") if isinstance(obj, dict) else None
        api = llm_api(url) if isinstance(url, str) else None
        if isinstance(url, str) and api in ("bedrock-invoke", "vertex-anthropic") and \
                isinstance(request, dict) and "model" not in request:
            # Bedrock and Vertex AI name the model in the URL only
            path = url.split("?", 1)[0]
            obj = {**obj, "request": {**request, "model": bedrock_model(path)
                                      if api == "bedrock-invoke" else gemini_model(path)}}
        if api in ("bedrock-invoke", "vertex-anthropic"):
            return [anthropic_exchange(obj, where, index,
                                       api="bedrock" if api == "bedrock-invoke" else
                                       "anthropic")]
        return [anthropic_exchange(obj, where, index)]
    if kind == "bedrock":
        return [anthropic_exchange(as_anthropic_record(obj, where, notes), where, index,
                                   notes, api="bedrock")]
    if kind.startswith("bedrock-"):  # InvokeModel with a body not the Messages API's
        return _invoke_exchanges(obj, kind, where, index, notes)
    if kind == "not-an-object":
        raise fail(where, f"expected a JSON object, got {type(obj).__name__}")
    keys = ", ".join(sorted(obj)[:8]) or "none"
    raise fail(where, f"missing 'messages': a JSON object with keys {keys} is not a record "
                      f"this importer reads; {EXPECTED}")


def _invoke_exchanges(obj: dict[str, Any], kind: str, where: str, index: int,
                      notes: list[str]) -> list[Exchange]:
    """A Bedrock InvokeModel record in a model's own format (``bedrock_invoke.py``): a
    plain prompt's as a legacy completion, an OpenAI-shaped chat body (AI21 Jamba,
    Mistral Large) as chat, Cohere Command R's as Cohere v1 Chat; the model the URL's
    when the body names none."""
    url = obj.get("url")
    model = bedrock_model(url.split("?", 1)[0]) if isinstance(url, str) else None
    if "request" not in obj:  # flat: the record's own keys are not the request's
        obj = {"request": {k: v for k, v in obj.items() if k not in RECORD_KEYS},
               **{k: v for k, v in obj.items() if k in RECORD_KEYS}}
    request = obj["request"] if isinstance(obj["request"], dict) else {}
    if kind == "bedrock-other":
        raise fail(where, own_format(model, request))
    if kind == "bedrock-prompt":
        return completion_exchanges(invoke_completion(obj, model, where, notes), where,
                                    index, notes, api="bedrock")
    if model and "model" not in request:
        obj = {**obj, "request": {**request, "model": model}}
    if kind == "bedrock-cohere":
        obj = cohere_record(obj, where, notes)
    return [chat_exchange(obj, where, index, notes, api="bedrock")]


def _join_batch(rows: list[tuple[str, Any]]) -> tuple[list[tuple[str, Any]],
                                                       list[SkippedRecord]]:
    """Batch files — OpenAI's (an input line ``custom_id``, ``body`` and its output line
    ``custom_id``, ``response.body``) and Anthropic's Message Batches (``params``, then
    ``result``): a request and its answer become one request/response record, so a file
    made by concatenating a batch's input and output files imports directly."""
    outputs: dict[str, tuple[str, dict[str, Any]]] = {}
    for n, obj in rows:
        if isinstance(obj, dict) and _looks_like_batch(obj) and _batch_request(obj) is None:
            cid = str(obj["custom_id"])
            if cid in outputs:
                raise fail(n, f"batch output for custom_id {cid!r} repeats {outputs[cid][0]}")
            outputs[cid] = (n, obj)
    joined: list[tuple[str, Any]] = []
    skipped: list[SkippedRecord] = []
    used: set[str] = set()
    for n, obj in rows:
        if not (isinstance(obj, dict) and _looks_like_batch(obj)):
            joined.append((n, obj))
            continue
        body = _batch_request(obj)
        if body is None:
            continue  # an output line: joined with its input below
        cid = str(obj["custom_id"])
        if not isinstance(body, dict):
            key = "body" if "body" in obj else "params"
            raise fail(n, f"batch '{key}' must be an object, got {body!r}")
        if cid not in outputs:
            skipped.append(SkippedRecord(where=n, reason=f"batch request {cid!r} has no "
                                                         "output line in this file"))
            continue
        used.add(cid)
        record: dict[str, Any] = {"request": body, "metadata": body.get("metadata") or {}}
        if "params" in obj:  # each request of a Message Batch is a Messages API call
            record["url"] = "https://api.anthropic.com/v1/messages"
        answer, error = _batch_answer(outputs[cid][1])
        if answer is not None:
            record["response"] = answer
        else:
            record["error"] = error
        joined.append((n, record))
    for cid, (n, _) in outputs.items():
        if cid not in used:
            raise fail(n, f"batch output for custom_id {cid!r} has no input line in this "
                          "file (concatenate the batch input file first)")
    return joined, skipped


def _joined(docs: Iterator[tuple[str, Any]], skipped: list[SkippedRecord]
            ) -> Iterator[tuple[str, Any]]:
    """The file's records one at a time, batch lines joined (``_join_batch``): a batch
    output may come after its input, so from the first batch line on the rest of the
    file is read before it goes on (the records before it have no batch line)."""
    for where, obj in docs:
        if isinstance(obj, dict) and _looks_like_batch(obj):
            joined, found = _join_batch([(where, obj), *docs])
            skipped += found
            yield from joined
            return
        yield where, obj


def _exchanges(rows: Iterable[tuple[str, Any]], stages: Stages | None
               ) -> tuple[list[Exchange], int]:
    """Every record's exchanges, each record let go once turned into them, and how many
    records were read."""
    out: list[Exchange] = []
    held = ServerHistory()
    read = 0
    for where, obj in rows:
        out += parse_record(obj, where, len(out), held)
        read += 1
        if stages is not None and read % READ_EVERY == 0:
            stages("read", read, 0)  # (the total is known once the file is read)
    return out, read


def parse_openai(text: str, stages: Stages | None = None) -> ParsedFile:
    """``stages("read", records, 0)`` every ``READ_EVERY`` records (the importer reports
    the total once the file is valid)."""
    with sharing():  # a request repeats its history: each message parsed once
        return _parse_openai(text, stages)


def _said(skipped: list[SkippedRecord]) -> str:
    """What was skipped instead, each kind once (three at most)."""
    kinds = Counter(k.reason for k in skipped)
    said = [f"{r} ×{n}" if n > 1 else r for r, n in list(kinds.items())[:3]]
    more = f"; {len(kinds) - 3} more kind(s)" if len(kinds) > 3 else ""
    return "; ".join(said) + more


def _parse_openai(text: str, stages: Stages | None) -> ParsedFile:
    rows: Iterable[tuple[str, Any]]
    skipped: list[SkippedRecord]
    if looks_like_cassette(text) or looks_like_har(text):
        har = looks_like_har(text)
        rows, skipped = har_records(har_document(text)) if har else cassette_records(text)
        what, unit = ("HAR file", "entry") if har else ("cassette", "interaction")
        if not rows:
            # what it holds instead, each kind once (an embeddings cassette: its URL)
            raise fail("file", f"the {what} holds no model call this importer reads "
                               "(chat completions, Responses, Anthropic Messages, Gemini, "
                               f"Cohere, Ollama, Bedrock); its {len(skipped)} {unit}(s): "
                               f"{_said(skipped)}" if skipped else
                       f"the {what} holds no {unit}")
    else:
        skipped = []
        rows = _joined(langsmith_rows(iter_documents(text), skipped), skipped)
    exchanges, read = _exchanges(rows, stages)
    if not exchanges and skipped:
        raise fail("file", f"no model call among its records; {_said(skipped)}")
    if not exchanges:
        raise fail("file", "no records (expected one JSON object per line, a JSON array of "
                           "them, or one JSON object)")
    return ParsedFile(exchanges, skipped, records=read)


parse_openai_jsonl = parse_openai
