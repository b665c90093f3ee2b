"""Cohere's v2 Chat API (``POST /v2/chat``, what the ``cohere`` SDK's ``ClientV2.chat``
and ``chat_stream`` send) as the chat-completions record it is equivalent to: its
``messages`` and ``tools`` are OpenAI's already, but for content given as parts
(``text``; a tool result's ``document`` parts, read as their data) and an assistant's
``tool_plan``; the answer is ``message`` with ``finish_reason`` and ``usage.tokens`` (the
tokens the model saw and wrote, not the ``billed_units``); a stream's events
(``message-start``, ``content-delta``, ``tool-plan-delta``, ``tool-call-start``/``-delta``,
``message-end``) are joined first.

The ``tool_plan`` a model writes before its calls, and its ``citations``, are noted, not
imported: clients send the assistant's turn back without them, so keeping the plan in the
answer would make the next request's history differ from it.

The v1 Chat API (``POST /v1/chat``: ``cohere.Client.chat``, LangChain's and LlamaIndex's
older Cohere models) is read too (``_v1_record``): ``preamble`` the instructions,
``chat_history`` (roles ``SYSTEM``, ``USER``, ``CHATBOT``, ``TOOL``, any case; a
chatbot's ``tool_calls`` ``{name, parameters}``, a tool turn's ``tool_results``), then
``tool_results`` answering the last chatbot turn's calls and ``message`` the new user
turn; ``tools`` with ``parameter_definitions``. Its calls carry no id: each result
answers the unanswered call of its ``call``'s name (and parameters, when several share
it) in the chatbot turn before it, and one answering no call is refused, as the API
refuses it. The answer: ``text`` (beside tool calls it is the plan, which clients send
back as that turn's message: kept), ``tool_calls``, ``finish_reason``, ``meta.tokens``
(else the older API's ``token_count``, else ``meta.billed_units``); a stream (JSON lines
of ``event_type``) is its ``stream-end`` event's ``response`` (with the event's
``finish_reason`` when the response has none, as the older API sent it), or its
``text-generation`` and ``tool-calls-generation`` events joined. The documents a
connector's search retrieved (``connectors``: ``web-search``, …), which the model read
beside the conversation, and the answer's citations are noted, not imported."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from memory_core.importers.common import fail, list_of, object_of, openai_tool_call
from memory_core.importers.formats.fields import count_of
from memory_core.importers.ollama import json_lines
from memory_core.importers.openai_shapes import stream_events
from memory_core.models.openai_codec import derived_call_id

COHERE_PATHS = ("/v2/chat", "/v1/chat")
_V1_STREAM_START = re.compile(r'"event_type"\s*:\s*"stream-start"')
_STREAM_TYPES = ("message-start", "content-delta", "tool-plan-delta", "tool-call-start",
                 "message-end")


def _is_answer(response: Any) -> bool:
    return isinstance(response, dict) and isinstance(response.get("message"), dict) and (
        "finish_reason" in response) and isinstance(response.get("usage"), dict) and (
        "billed_units" in response["usage"] or "tokens" in response["usage"])


def _is_v1_answer(response: Any) -> bool:
    return isinstance(response, dict) and "generation_id" in response and (
        "text" in response) and isinstance(response.get("meta"), dict)


def is_cohere_record(obj: Any) -> bool:
    """A record whose answer is Cohere v2's (``message``, ``finish_reason``, ``usage``
    with ``tokens``/``billed_units``) or v1's (``text``, ``generation_id``, ``meta``), or
    a stream of either's events."""
    response = obj.get("response") if isinstance(obj, dict) else None
    if _is_answer(response) or _is_v1_answer(response):
        return True
    if isinstance(response, list) and response and isinstance(response[0], dict) \
            and response[0].get("event_type") == "stream-start":
        return True
    if isinstance(response, str):
        return any(f'"type":"{t}"' in response[:4000] for t in _STREAM_TYPES[:1]) or bool(
            _V1_STREAM_START.search(response[:4000]))
    return isinstance(response, list) and bool(response) and isinstance(response[0], dict) \
        and response[0].get("type") in _STREAM_TYPES


def _parts_text(content: Any, where: str, notes: list[str]) -> Any:
    """Content parts as OpenAI's: ``text`` parts kept, a ``document`` part as its data's
    JSON text (what a tool result gives the model), a reasoning model's ``thinking``
    part noted, not imported."""
    if not isinstance(content, list):
        return content
    out: list[dict[str, Any]] = []
    for j, part in enumerate(content):
        if not isinstance(part, dict):
            raise fail(where, f"content part {j} must be an object, got {part!r}")
        if part.get("type") == "thinking":
            notes.append(f"{where}: content part {j} (thinking) not imported")
        elif part.get("type") == "document":
            data = (part.get("document") or {}).get("data")
            out.append({"type": "text", "text": data if isinstance(data, str)
                        else json.dumps(data, ensure_ascii=False)})
        else:
            out.append(part)
    return out


def _message(raw: Any, where: str, notes: list[str]) -> Any:
    if not isinstance(raw, dict):
        return raw  # the chat reader names what is wrong with it
    out = {k: v for k, v in raw.items() if k not in ("tool_plan", "citations")}
    if "content" in raw:
        out["content"] = _parts_text(raw["content"], where, notes)
    if raw.get("tool_plan"):
        notes.append(f"{where}: the assistant's tool_plan not imported")
    return out


def _joined(events: list[dict[str, Any]], where: str, notes: list[str]) -> dict[str, Any]:
    """A stream's events as the answer they stream (a reasoning model's thinking
    deltas noted, not imported)."""
    text: list[str] = []
    thought = False
    plan: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    out: dict[str, Any] = {}
    for ev in events:
        kind = ev.get("type")
        message = ((ev.get("delta") or {}).get("message") or {}) if isinstance(
            ev.get("delta"), dict) else {}
        if kind == "content-delta":
            content = message.get("content")
            content = content if isinstance(content, dict) else {}
            thought = thought or bool(content.get("thinking"))
            text.append(str(content.get("text") or ""))
        elif kind == "tool-plan-delta":
            plan.append(str(message.get("tool_plan") or ""))
        elif kind == "tool-call-start":
            call = message.get("tool_calls") or {}
            fn = call.get("function") or {}
            calls[int(ev.get("index", len(calls)))] = {
                "id": call.get("id"), "type": "function",
                "function": {"name": fn.get("name"), "arguments": fn.get("arguments") or ""}}
        elif kind == "tool-call-delta":
            i = int(ev.get("index", len(calls) - 1))
            if i not in calls:
                raise fail(where, f"stream: tool-call-delta {i} before its tool-call-start")
            fn = (message.get("tool_calls") or {}).get("function") or {}
            calls[i]["function"]["arguments"] += str(fn.get("arguments") or "")
        elif kind == "message-end":
            delta = ev.get("delta") or {}
            out["finish_reason"] = delta.get("finish_reason")
            if isinstance(delta.get("usage"), dict):
                out["usage"] = delta["usage"]
        elif kind == "message-start" and ev.get("id"):
            out["id"] = ev["id"]
    message_out: dict[str, Any] = {"role": "assistant"}
    if text:
        message_out["content"] = [{"type": "text", "text": "".join(text)}]
    if plan:
        message_out["tool_plan"] = "".join(plan)
    if calls:
        message_out["tool_calls"] = [calls[i] for i in sorted(calls)]
    out["message"] = message_out
    if thought:
        notes.append(f"{where}: response: the model's thinking not imported")
    notes.append(f"{where}: response reassembled from {len(events)} stream event(s)")
    return out


def as_chat_record(obj: dict[str, Any], where: str, notes: list[str]) -> dict[str, Any]:
    """A Cohere v2 (or v1) record as the chat-completions record it is equivalent to."""
    request = obj.get("request", obj)
    if not isinstance(request, dict):
        raise fail(where, f"'request' must be an object, got {type(request).__name__}")
    if "messages" not in request and ("message" in request or "chat_history" in request):
        return _v1_record(obj, request, where, notes)
    raw = request.get("messages")
    messages = [_message(m, f"{where}: message {i}", notes) for i, m in enumerate(raw)] \
        if isinstance(raw, list) else raw
    out = {k: v for k, v in obj.items() if k not in ("request", "response")}
    out["request"] = {**request, "messages": messages}
    response = obj.get("response")
    if isinstance(response, list | str):
        response = _joined(stream_events(response, where), where, notes)
    if isinstance(response, dict):
        message = response.get("message")
        if not isinstance(message, dict):
            raise fail(where, "a Cohere response needs a 'message' object")
        reply = _message({**message, "role": message.get("role", "assistant")},
                         f"{where}: response", notes)
        if message.get("citations"):
            notes.append(f"{where}: response: {len(message['citations'])} citation(s) not "
                         "imported")
        if isinstance(reply.get("content"), list) and len(reply["content"]) == 1 and \
                reply["content"][0].get("type") == "text":
            reply["content"] = reply["content"][0].get("text")  # one text part: its text
        out["response"] = _chat_answer(reply, response, response.get("usage"),
                                       request.get("model"))
    return out


def _counted(tokens: Any, names: tuple[str, str]) -> dict[str, Any] | None:
    """``tokens``' counts of ``names`` (input, output) in OpenAI's spelling, when it
    has both."""
    if not isinstance(tokens, dict) or any(tokens.get(n) is None for n in names):
        return None
    return {"prompt_tokens": tokens[names[0]], "completion_tokens": tokens[names[1]]}


def _chat_answer(message: dict[str, Any], response: dict[str, Any], counts: Any,
                 model: Any) -> dict[str, Any]:
    """The answer as a chat completion: its message, finish reason, and the token counts
    of ``counts`` (v2's ``usage``, v1's ``meta``): the ``tokens`` the model saw and
    wrote, else those of the v1 response's ``token_count`` (the older API's:
    ``prompt_tokens``, ``response_tokens``), else the ``billed_units``; v2's
    ``cached_tokens`` as the input's cached part."""
    counts = counts if isinstance(counts, dict) else {}
    usage = _counted(counts.get("tokens"), ("input_tokens", "output_tokens")) or _counted(
        response.get("token_count"), ("prompt_tokens", "response_tokens")) or _counted(
        counts.get("billed_units"), ("input_tokens", "output_tokens"))
    chat: dict[str, Any] = {"choices": [{"message": message,
                                         "finish_reason": response.get("finish_reason")}]}
    if usage is not None:
        cached = count_of(counts.get("cached_tokens"))  # (v2: of the input, cached)
        if cached:
            usage["prompt_tokens_details"] = {"cached_tokens": cached}
        chat["usage"] = usage
    if model:
        chat["model"] = model
    return chat


# -- v1 ----------------------------------------------------------------------------------
_V1_ROLES = {"system": "system", "user": "user", "chatbot": "assistant", "tool": "tool"}
# the v1 request's conversation and tools, read into the chat record's
_V1_CONVERSATION = ("message", "chat_history", "preamble", "tool_results", "tools")
_V1_PARAMS = {"p": "top_p", "k": "top_k", "stop_sequences": "stop"}


def _v1_text(value: Any, where: str, name: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise fail(where, f"'{name}' must be a string, got {value!r}"[:300])
    return value


def _v1_calls(raw: Any, where: str) -> list[dict[str, Any]]:
    """A chatbot turn's (or the answer's) ``tool_calls`` as OpenAI's: ``{name,
    parameters}`` (the API's; LangChain sent its own ``{name, args, id}``), each with
    its id, or the id every importer derives for a call that has none."""
    out = []
    for j, call in enumerate(list_of(raw, where, "tool_calls")):
        call = object_of(call, where, f"tool_calls[{j}]")
        name = call.get("name")
        if not isinstance(name, str) or not name:
            raise fail(where, f"tool call {j} has no 'name' string, got {name!r}")
        args = call.get("parameters", call.get("args"))
        args = {} if args is None else args
        cid = call.get("id") if isinstance(call.get("id"), str) and call["id"] else \
            derived_call_id(j, name, args)
        out.append(openai_tool_call(cid, name, json.dumps(args, ensure_ascii=False)))
    return out


def _v1_results(raw: Any, calls: list[dict[str, Any]], where: str) -> list[dict[str, Any]]:
    """``tool_results`` (``[{call: {name, parameters}, outputs: [{…}]}]``) as tool
    messages, each answering the unanswered call of the turn before it with its
    ``call``'s name (and parameters, when several calls share the name); its outputs
    (what the model reads as documents) as their JSON texts, one a line."""
    pending = list(calls)
    out = []
    for j, result in enumerate(list_of(raw, where, "tool_results")):
        result = object_of(result, where, f"tool_results[{j}]")
        call = object_of(result.get("call"), where, f"tool_results[{j}].call")
        name, args = call.get("name"), call.get("parameters")
        named = [c for c in pending if c["function"]["name"] == name]
        same = [c for c in named
                if json.loads(c["function"]["arguments"]) == (args if args is not None else {})]
        if not named:
            asked = ", ".join(c["function"]["name"] for c in calls) or "none"
            raise fail(where, f"tool result {j} answers a call of {name!r}, which the "
                              f"chatbot turn before it did not make (its calls: {asked})")
        answered = (same or named)[0]
        pending.remove(answered)
        outputs = list_of(result.get("outputs"), where, f"tool_results[{j}].outputs")
        out.append({"role": "tool", "tool_call_id": answered["id"], "name": name,
                    "content": "\n".join(json.dumps(o, ensure_ascii=False)
                                         for o in outputs)})
    return out


def _v1_history(request: dict[str, Any], where: str) -> list[dict[str, Any]]:
    """A v1 request's conversation as OpenAI messages: ``preamble``, ``chat_history``,
    ``tool_results`` (answering the last chatbot turn's calls), ``message``."""
    messages: list[dict[str, Any]] = []
    preamble = _v1_text(request.get("preamble"), where, "preamble")
    if preamble:
        messages.append({"role": "system", "content": preamble})
    calls: list[dict[str, Any]] = []  # the calls of the last chatbot turn
    for i, turn in enumerate(list_of(request.get("chat_history"), where, "chat_history")):
        tw = f"{where}: chat_history {i}"
        turn = object_of(turn, tw, "turn")
        role = _V1_ROLES.get(str(turn.get("role")).lower())
        if role is None:
            raise fail(tw, f"unknown role {turn.get('role')!r} (expected SYSTEM, USER, "
                           "CHATBOT or TOOL)")
        if role == "tool":
            messages += _v1_results(turn.get("tool_results"), calls, tw)
            calls = []
            continue
        message: dict[str, Any] = {"role": role,
                                   "content": _v1_text(turn.get("message"), tw, "message")}
        calls = _v1_calls(turn.get("tool_calls"), tw) if role == "assistant" else []
        if calls:
            message["tool_calls"] = calls
        messages.append(message)
    if request.get("tool_results") is not None:
        messages += _v1_results(request["tool_results"], calls, f"{where}: request")
    message_text = _v1_text(request.get("message"), where, "message")
    if message_text or request.get("tool_results") is None:
        messages.append({"role": "user", "content": message_text})
    return messages


def _v1_tools(raw: Any, where: str) -> list[dict[str, Any]]:
    """``tools`` (``{name, description, parameter_definitions: {p: {type,
    description, required}}}``) as OpenAI's; each parameter's ``type`` as sent (v1
    names Python's types: ``str``, ``List[int]``)."""
    out = []
    for j, tool in enumerate(list_of(raw, where, "tools")):
        tool = object_of(tool, where, f"tools[{j}]")
        params = object_of(tool.get("parameter_definitions"), where,
                           f"tools[{j}].parameter_definitions")
        properties = {}
        for k, v in params.items():
            v = object_of(v, where, f"tools[{j}].parameter_definitions.{k}")
            properties[k] = {x: v[x] for x in ("type", "description") if x in v}
        out.append({"type": "function", "function": {
            "name": tool.get("name"), "description": tool.get("description", ""),
            "parameters": {"type": "object", "properties": properties,
                           "required": [k for k, v in params.items()
                                        if isinstance(v, dict) and v.get("required")]}}})
    return out


def _v1_stream(events: list[dict[str, Any]], where: str) -> dict[str, Any]:
    """A v1 stream as the answer it streamed: its ``stream-end`` event's ``response``
    when it carries one, else its text and tool-call events joined."""
    for ev in events:
        if ev.get("event_type") == "stream-end" and isinstance(ev.get("response"), dict):
            out = dict(ev["response"])
            if out.get("finish_reason") is None:  # (the older API's: on the event only)
                out["finish_reason"] = ev.get("finish_reason")
            return out
    text: list[str] = []
    out = {}
    for ev in events:
        kind = ev.get("event_type")
        if kind == "text-generation":
            text.append(_v1_text(ev.get("text"), where, "text"))
        elif kind == "tool-calls-generation":
            out["tool_calls"] = ev.get("tool_calls")
            if isinstance(ev.get("text"), str):
                text = [ev["text"]]  # the plan written before the calls, whole
        elif kind == "stream-end":
            out["finish_reason"] = ev.get("finish_reason")
        elif kind == "stream-start" and ev.get("generation_id"):
            out["generation_id"] = ev["generation_id"]
        elif kind == "citation-generation" and isinstance(ev.get("citations"), list):
            out.setdefault("citations", []).extend(ev["citations"])
        elif kind in ("search-results", "search-queries-generation"):
            out.update({k: ev[k] for k in ("documents", "search_results", "search_queries")
                        if k in ev})
    out["text"] = "".join(text)
    return out


def _streamed(response: Any, where: str, notes: list[str],
              join: Callable[[list[dict[str, Any]], str], dict[str, Any]]) -> Any:
    """A v1 record's response: a recorded stream (JSON lines, as a record may hold the
    body, or its events) as the answer ``join`` makes of its events, noted; anything
    else as it is."""
    if isinstance(response, str):
        response = json_lines(response, where) or response
    if isinstance(response, list):
        events = stream_events(response, where)
        response = join(events, where)
        notes.append(f"{where}: response reassembled from {len(events)} stream event(s)")
    return response


def _listed(value: Any) -> list[Any]:
    """``value`` when it is a list, else nothing: what only a note counts."""
    return value if isinstance(value, list) else []


def _searched(request: dict[str, Any], response: dict[str, Any], where: str,
              notes: list[str]) -> None:
    """Note the documents a connector's search retrieved for the answer (what the model
    read beside the conversation, which no message holds): how many, by which
    connectors, for which queries."""
    documents = response.get("documents")
    connectors = [c.get("id") for c in _listed(request.get("connectors"))
                  if isinstance(c, dict)]
    if not isinstance(documents, list) or not documents or not (
            connectors or response.get("search_results")):
        return
    queries = [q.get("text") for q in _listed(response.get("search_queries"))
               if isinstance(q, dict) and isinstance(q.get("text"), str)]
    asked = f" for {', '.join(map(repr, queries))}" if queries else ""
    notes.append(f"{where}: response: {len(documents)} document(s) the search of connector(s) "
                 f"{', '.join(map(str, connectors)) or '?'} retrieved{asked}, which the model "
                 "read beside the conversation, not imported")


def _v1_record(obj: dict[str, Any], request: dict[str, Any], where: str,
               notes: list[str]) -> dict[str, Any]:
    """A Cohere v1 Chat record as the chat-completions record it is equivalent to."""
    chat = {_V1_PARAMS.get(k, k): v for k, v in request.items() if k not in _V1_CONVERSATION}
    chat["messages"] = _v1_history(request, where)
    if request.get("tools") is not None:
        chat["tools"] = _v1_tools(request["tools"], where)
    if request.get("documents"):
        notes.append(f"{where}: {len(request['documents'])} document(s) given to the model "
                     "not imported (kept in the request's parameters)")
    if request.get("conversation_id"):
        notes.append(f"{where}: conversation_id: the history the server holds for it is "
                     "not in the recording")
    out = {k: v for k, v in obj.items() if k not in ("request", "response")}
    out["request"] = chat
    response = _streamed(obj.get("response"), where, notes, _v1_stream)
    if response is not None:
        response = object_of(response, where, "response")
        message: dict[str, Any] = {"role": "assistant",
                                   "content": _v1_text(response.get("text"), where, "text")}
        calls = _v1_calls(response.get("tool_calls"), f"{where}: response")
        if calls:
            message["tool_calls"] = calls
        if cited := _listed(response.get("citations")):
            notes.append(f"{where}: response: {len(cited)} citation(s) not imported")
        _searched(request, response, where, notes)
        out["response"] = _chat_answer(message, response, object_of(
            response.get("meta"), where, "meta"), request.get("model"))
        if "usage" not in out["response"]:
            notes.append(f"{where}: response: no token counts (meta.tokens, token_count or "
                         "meta.billed_units): its usage is unknown")
    return out


# -- v1 Generate (legacy) ----------------------------------------------------------------
GENERATE_PATHS = ("/v1/generate",)
_GENERATE_STREAM = re.compile(r'"event_type"\s*:\s*"(text-generation|stream-end)"')


def is_generate_record(obj: Any) -> bool:
    """A Cohere Generate record: a ``prompt`` answered with ``generations``, or a stream
    of ``text-generation`` events (Text Generation Inference's ``/generate`` takes
    ``inputs``, Ollama's ``/api/generate`` answers ``response``: neither is one)."""
    request = obj.get("request", obj) if isinstance(obj, dict) else None
    if not isinstance(request, dict) or not isinstance(request.get("prompt"), str):
        return False
    response = obj.get("response")
    if isinstance(response, dict):
        return isinstance(response.get("generations"), list)
    if isinstance(response, list):
        return bool(response) and isinstance(response[0], dict) and \
            isinstance(response[0].get("event_type"), str)
    return isinstance(response, str) and bool(_GENERATE_STREAM.search(response[:4000]))


def _generate_stream(events: list[dict[str, Any]], where: str) -> dict[str, Any]:
    """A Generate stream as the answer it streamed: its ``stream-end`` event's
    ``response`` when it carries one, else its ``text-generation`` texts joined."""
    end = next((ev for ev in events if ev.get("event_type") == "stream-end"
                or ev.get("is_finished") is True), None)
    if end is not None and isinstance(end.get("response"), dict):
        out = dict(end["response"])
        gens = out.get("generations")
        if isinstance(gens, list) and gens and isinstance(gens[0], dict) \
                and gens[0].get("finish_reason") is None:
            out["generations"] = [{**gens[0], "finish_reason": end.get("finish_reason")},
                                  *gens[1:]]
        return out
    text = "".join(_v1_text(ev.get("text"), where, "text") for ev in events
                   if ev.get("event_type", "text-generation") == "text-generation"
                   and ev.get("is_finished") is not True)
    return {"generations": [{"text": text, "finish_reason":
                             end.get("finish_reason") if end is not None else None}]}


def generate_as_chat(obj: dict[str, Any], where: str, notes: list[str]) -> dict[str, Any]:
    """A Cohere Generate record (``POST /v1/generate``, the legacy completion API) as
    the chat-completions record it is equivalent to: the prompt is one user message,
    the first generation the answer (others noted), ``meta.billed_units`` the usage."""
    request = object_of(obj.get("request", obj), where, "request")
    prompt = request.get("prompt")
    if not isinstance(prompt, str):
        raise fail(where, "a Cohere Generate request needs its 'prompt' as a string")
    chat = {_V1_PARAMS.get(k, k): v for k, v in request.items() if k != "prompt"}
    chat["messages"] = [{"role": "user", "content": prompt}]
    out = {k: v for k, v in obj.items() if k not in ("request", "response")}
    out["request"] = chat
    response = _streamed(obj.get("response"), where, notes, _generate_stream)
    if response is not None:
        response = object_of(response, where, "response")
        gens = response.get("generations")
        if not isinstance(gens, list) or not gens or not isinstance(gens[0], dict):
            raise fail(where, "a Cohere Generate response needs 'generations', a list of "
                              "objects")
        first = gens[0]
        if len(gens) > 1:
            notes.append(f"{where}: response: {len(gens) - 1} other generation(s) "
                         "(num_generations) not imported")
        message = {"role": "assistant", "content": _v1_text(first.get("text"), where, "text")}
        out["response"] = _chat_answer(
            message, {**response, "finish_reason": first.get("finish_reason")},
            object_of(response.get("meta"), where, "meta"), request.get("model"))
        if "usage" not in out["response"]:
            notes.append(f"{where}: response: no token counts (meta.billed_units): its "
                         "usage is unknown")
    return out
