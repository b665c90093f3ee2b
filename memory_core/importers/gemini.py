"""Google Gemini API traffic (``generateContent`` and ``streamGenerateContent``, on the
Gemini Developer API and on Vertex AI) read into exchanges: ``contents`` with
``parts`` (``text``, ``functionCall``, ``functionResponse``, ``inlineData``,
``fileData``), ``systemInstruction``, ``tools`` (``functionDeclarations``),
``generationConfig``; the response's first candidate, its ``finishReason`` and
``usageMetadata``; a recorded stream (SSE or a JSON array of chunks) joined first.

Both spellings are read: the REST API's camelCase and the snake_case of Python
logs. The model's text is its text parts joined, as the SDKs' ``response.text`` gives
it (a stream splits one answer over many parts); thought parts (``thought: true``) are
noted, not imported. A ``functionCall`` without an ``id`` (older models give none) gets
the id every importer derives (``derived_call_id``), which a later request that spells
the call out replaces; a ``functionResponse`` without one answers the latest unanswered
call of its name."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from memory_core.importers.common import (
    Exchange,
    fail,
    iso_time,
    list_of,
    object_of,
)
from memory_core.importers.formats.fields import count_of, usage_detail
from memory_core.importers.openai_shapes import stream_events
from memory_core.importers.passes import distinct_calls
from memory_core.models.base import Usage
from memory_core.models.openai_codec import (
    derived_call_id,
    from_openai_tools,
    is_derived_call_id,
    payload_summary,
)
from memory_core.types import Message, TextPart, ToolCallPart, ToolResultPart

GEMINI_PATHS = (":generateContent", ":streamGenerateContent")
_MODEL_IN_PATH = re.compile(r"/models/([^/:]+):")
# generationConfig keys renamed to the names the other importers record
_PARAM_NAMES = {"max_output_tokens": "max_tokens", "stop_sequences": "stop"}
_NUMBERS = ("temperature", "top_p", "top_k", "max_tokens", "seed", "candidate_count",
            "presence_penalty", "frequency_penalty")
# request fields that are neither the conversation nor sampling parameters
_FIELDS = ("cachedContent", "cached_content", "labels")
_CONVERSATION = ("contents", "systemInstruction", "system_instruction", "tools", "model",
                 "generationConfig", "generation_config", *_FIELDS)


def _get(d: dict[str, Any], camel: str) -> Any:
    """``camel`` or its snake_case spelling."""
    if camel in d:
        return d[camel]
    return d.get(_snake(camel))


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def is_gemini_record(request: Any, response: Any) -> bool:
    """A Gemini request (``contents``) or response (``candidates``, ``promptFeedback``,
    or a stream of those)."""
    if isinstance(request, dict) and isinstance(request.get("contents"), list):
        return True
    first = response[0] if isinstance(response, list) and response else response
    return isinstance(first, dict) and ("candidates" in first or "promptFeedback" in first
                                        or "prompt_feedback" in first)


def model_in_path(path: str) -> str | None:
    """The model a Gemini URL names (``…/models/gemini-2.0-flash:generateContent``)."""
    found = _MODEL_IN_PATH.search(path)
    return found.group(1) if found else None


# -- contents ------------------------------------------------------------------------------
def _attachment(kind: str, body: dict[str, Any], index: int) -> dict[str, Any]:
    out: dict[str, Any] = {"index": index, "type": kind}
    mime = _get(body, "mimeType")
    if isinstance(mime, str):
        out["mime_type"] = mime
    uri = _get(body, "fileUri")
    if isinstance(uri, str):
        out["url"] = uri
    data = body.get("data")
    if isinstance(data, str):
        out.update(payload_summary(data))
    return out


def content_messages(content: Any, where: str, notes: list[str], *,
                     role: str | None = None, in_response: bool = False) -> list[Message]:
    """One ``Content`` as our messages: a model turn is one assistant message (its
    text parts joined, then its calls); a user turn's function responses are tool
    messages (in order), followed by a user message of its text and attachments.
    ``in_response``: the response's (a call given an id is noted where it was made)."""
    if not isinstance(content, dict):
        raise fail(where, f"a content must be an object, got {content!r}")
    role = role or content.get("role") or "user"
    if role not in ("user", "model", "function", "tool"):
        raise fail(where, f"unknown role {role!r} (expected 'user' or 'model')")
    raw_parts = content.get("parts")
    # one part sent as an object, not a list of one (R's ellmer: the API accepts it)
    parts = [raw_parts] if isinstance(raw_parts, dict) else list_of(raw_parts, where, "parts")
    texts: list[str] = []
    calls: list[ToolCallPart] = []
    results: list[ToolResultPart] = []
    attachments: list[dict[str, Any]] = []
    for j, p in enumerate(parts):
        pw = f"{where}: part {j}"
        if not isinstance(p, dict):
            raise fail(pw, f"a part must be an object, got {p!r}")
        call, answer = _get(p, "functionCall"), _get(p, "functionResponse")
        if p.get("thought") is True:
            notes.append(f"{pw}: a thought (the model's reasoning summary) not imported")
        elif "text" in p:
            if not isinstance(p["text"], str):
                raise fail(pw, f"'text' must be a string, got {p['text']!r}")
            texts.append(p["text"])
        elif isinstance(call, dict):
            name = call.get("name")
            if not isinstance(name, str) or not name:
                raise fail(pw, f"functionCall has no name: {call!r}")
            args = object_of(call.get("args"), pw, "args")
            cid = call.get("id")
            if not isinstance(cid, str) or not cid:
                cid = derived_call_id(len(calls), name, args)
                if in_response:
                    notes.append(f"{pw}: function call ({name}) had no id; given '{cid}'")
            calls.append(ToolCallPart(id=cid, name=name, args=args))
        elif isinstance(answer, dict):
            name = answer.get("name")
            if not isinstance(name, str) or not name:
                raise fail(pw, f"functionResponse has no name: {answer!r}")
            cid = answer.get("id")
            if answer.get("response") is None:
                # (google/adk-go answers a transfer so: the call's result is no object)
                notes.append(f"{pw}: functionResponse ({name}) has no 'response': kept "
                             "as an empty result")
            results.append(ToolResultPart(call_id=cid if isinstance(cid, str) else "",
                                          name=name, result=answer.get("response")))
        elif isinstance(_get(p, "inlineData"), dict) or isinstance(_get(p, "fileData"), dict):
            kind = "inline_data" if isinstance(_get(p, "inlineData"), dict) else "file_data"
            attachments.append(_attachment(kind, _get(p, _camel(kind)), len(texts)))
            notes.append(f"{pw}: {kind} kept as a placeholder")
        else:
            kinds = ", ".join(k for k in p if k not in ("thoughtSignature",
                                                       "thought_signature"))
            notes.append(f"{pw}: a part of kind {kinds} not imported" if kinds else
                         f"{pw}: a part holding only a thought signature (the model's "
                         "encrypted reasoning state) not imported")
    meta: dict[str, Any] = {"attachments": attachments} if attachments else {}
    if role == "model":
        if results:
            raise fail(where, "a model turn holds a functionResponse")
        text = "".join(texts)
        if not calls:
            return [Message(role="assistant", content=text, metadata=meta)]
        lead: list[TextPart | ToolCallPart | ToolResultPart] = \
            [TextPart(text=text)] if text else []
        return [Message(role="assistant", content=[*lead, *calls], metadata=meta)]
    if calls:
        raise fail(where, f"a {role} turn holds a functionCall (only the model calls)")
    out = [Message(role="tool", content=[r]) for r in results]
    if texts or attachments or not results:
        body: str | list[TextPart | ToolCallPart | ToolResultPart] = \
            texts[0] if len(texts) == 1 else [TextPart(text=t) for t in texts]
        out.append(Message(role="user", content=body if texts else "", metadata=meta))
    return out


def _camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(w.title() for w in rest)


def answer_ids(messages: list[Message], where: str, notes: list[str]) -> None:
    """A function response without an id answers the latest unanswered call of its
    name (Gemini's older models send neither)."""
    pending: list[ToolCallPart] = []
    derived: set[str] = set()  # the calls recorded without an id
    for i, m in enumerate(messages):
        if m.role == "assistant":
            pending = list(m.tool_calls())
            derived = {c.id for c in pending if is_derived_call_id(c.id)}
        for r in m.tool_results():
            if r.call_id and any(c.id == r.call_id for c in pending):
                pending = [c for c in pending if c.id != r.call_id]
                continue
            # no id; or an id the call was not recorded with: the call of its name
            renamed = False
            match = next((c for c in pending if c.name == r.name
                          and (not r.call_id or c.id in derived)), None)
            if match is None and len(pending) == 1 and not r.call_id:
                # named by something else (cagent names it by its own call id): the
                # turn's one unanswered call is the one it answers
                match = pending[0]
                notes.append(f"{where}: message {i}: functionResponse {r.name!r} names no "
                             f"function call of the model turn before it; it answers the "
                             f"turn's one unanswered call, {match.name!r} ({match.id}), "
                             "and is stored under that name")
                r, renamed = r.model_copy(update={"name": match.name}), True
            if match is None:
                said = f" (id {r.call_id!r})" if r.call_id else ""
                names = ", ".join(repr(c.name) for c in pending)
                raise fail(where, f"message {i}: the functionResponse named {r.name!r}{said} "
                                  "answers no function call of the model turn before it "
                                  + (f"(its unanswered calls: {names})" if names else
                                     "(it has no unanswered call)"))
            pending.remove(match)
            messages[i] = m.model_copy(update={"content": [
                r.model_copy(update={"call_id": match.id})]})
            if renamed:
                continue
            why = f"has id {r.call_id!r}, which its call was recorded without" if r.call_id \
                else "has no id"
            notes.append(f"{where}: message {i}: functionResponse {r.name!r} {why}; it "
                         f"answers call {match.id}")


def request_contents(request: dict[str, Any], where: str, notes: list[str]
                     ) -> list[Message]:
    contents = request.get("contents")
    if isinstance(contents, dict | str):
        contents = [contents]
    if not isinstance(contents, list) or not contents:
        raise fail(where, "'contents' must be a non-empty list")
    out: list[Message] = []
    for i, c in enumerate(contents):
        if isinstance(c, str):  # the SDKs accept a bare string as a user turn
            c = {"role": "user", "parts": [{"text": c}]}
        out.extend(content_messages(c, f"{where}: contents[{i}]", notes))
    return out


def request_instructions(request: dict[str, Any], where: str, notes: list[str]
                         ) -> list[Message]:
    raw = _get(request, "systemInstruction")
    if raw is None:
        return []
    if isinstance(raw, str):
        return [Message(role="system", content=raw)]
    said: list[str] = []
    msgs = content_messages(raw, f"{where}: systemInstruction", said, role="user")
    # the instructions are text: an attachment there is not kept (not "a placeholder")
    notes.extend(n.replace("kept as a placeholder", "not imported (the instructions "
                           "keep their text only)") for n in said)
    texts = [m.text() for m in msgs if m.role == "user"]
    return [Message(role="system", content="\n".join(t for t in texts if t))]


def offered_tools(raw: Any, where: str, notes: list[str]) -> list[dict[str, Any]]:
    """``tools`` as the OpenAI form has them, read by the one reader of offered tools:
    each ``functionDeclarations`` entry a function, each other kind (``googleSearch``,
    ``codeExecution``: tools the server runs) a tool of that type, kept by name."""
    tools: list[Any] = []
    for j, tool in enumerate(list_of(raw, where, "tools")):
        if not isinstance(tool, dict):
            raise fail(where, f"tool {j} must be an object, got {tool!r}"[:300])
        for fn in list_of(_get(tool, "functionDeclarations"), f"{where}: tool {j}",
                          "functionDeclarations"):
            if not isinstance(fn, dict):
                raise fail(where, f"tool {j}: a function declaration must be an object, "
                                  f"got {fn!r}"[:300])
            tools.append({"type": "function", "function": {
                **fn, "parameters": fn.get("parameters", _get(fn, "parametersJsonSchema"))}})
        tools += [{"type": kind} for kind in tool
                  if kind not in ("functionDeclarations", "function_declarations")]
    return from_openai_tools(tools, where, notes)


def _params(request: dict[str, Any], where: str) -> dict[str, Any]:
    config = _get(request, "generationConfig") or {}
    if not isinstance(config, dict):
        raise fail(where, f"'generationConfig' must be an object, got {config!r}")
    params = {_PARAM_NAMES.get(_snake(k), _snake(k)): v for k, v in config.items()}
    params.update({_snake(k): v for k, v in request.items() if k not in _CONVERSATION})
    for k in _NUMBERS:
        v = params.get(k)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int | float)
                              or not math.isfinite(v)):
            raise fail(where, f"generationConfig '{k}' must be a number, got {v!r}")
    return params


# -- the response ----------------------------------------------------------------------------
def _joined(response: Any, where: str, notes: list[str]) -> dict[str, Any]:
    """A recorded stream (SSE text or a JSON array of chunks) as one response: the first
    candidate's parts in order, the last finish reason, usage and model (noted)."""
    if isinstance(response, dict):
        return response
    if not isinstance(response, list | str):
        raise fail(where, f"'response' must be an object, got {type(response).__name__}")
    parts: list[Any] = []
    out: dict[str, Any] = {}
    finish, others, grounding = None, False, None
    cited: list[Any] = []
    chunks = stream_events(response, where)
    for chunk in chunks:
        for key in ("usageMetadata", "modelVersion", "responseId", "createTime",
                    "promptFeedback"):
            if _get(chunk, key) is not None:
                out[key] = _get(chunk, key)
        candidates = list_of(chunk.get("candidates"), f"{where}: a stream chunk",
                             "candidates")
        for cand in candidates:
            if not isinstance(cand, dict) or cand.get("index", 0) != 0:
                others = True
                continue
            content = cand.get("content") or {}
            more = content.get("parts") or [] if isinstance(content, dict) else None
            if not isinstance(more, list):
                raise fail(where, f"a stream chunk's candidate content must have a "
                                  f"'parts' list, got {content!r}"[:300])
            parts.extend(more)
            finish = _get(cand, "finishReason") or finish
            grounding = _get(cand, "groundingMetadata") or grounding
            cited += _citations(cand)
    if parts or finish:
        out["candidates"] = [{"content": {"role": "model", "parts": parts},
                              "finishReason": finish,
                              **({"groundingMetadata": grounding} if grounding else {}),
                              **({"citationMetadata": {"citationSources": cited}}
                                 if cited else {})}]
    if others:
        out["alternatives"] = True
    notes.append(f"{where}: response reassembled from {len(chunks)} stream chunk(s)")
    return out


def _citations(cand: dict[str, Any]) -> list[Any]:
    """A candidate's citations of sources its text recites (``citationMetadata``:
    ``citationSources`` in the Gemini API, ``citations`` in Vertex AI's)."""
    meta = _get(cand, "citationMetadata")
    if not isinstance(meta, dict):
        return []
    got = _get(meta, "citationSources") or meta.get("citations")
    return [c for c in got if isinstance(c, dict)] if isinstance(got, list) else []


def _usage(meta: Any) -> tuple[Usage, bool]:
    """Input: the prompt's tokens and those a server-side tool added to it (Google
    Search's results, ``toolUsePromptTokenCount``); output: the answer's and its
    thoughts' (both billed as output)."""
    if not isinstance(meta, dict):
        return Usage(), False
    inp, out = _get(meta, "promptTokenCount"), _get(meta, "candidatesTokenCount")
    thoughts = _get(meta, "thoughtsTokenCount") or 0
    tool_use = count_of(_get(meta, "toolUsePromptTokenCount"))
    if isinstance(inp, int) and tool_use:
        inp += tool_use
    if out is None and isinstance(inp, int):
        out = 0  # an answer of no tokens (blocked, or cut at once) reports none
    if all(isinstance(x, int) and not isinstance(x, bool) and x >= 0
           for x in (inp, out, thoughts)):
        return Usage(input_tokens=inp, output_tokens=out + thoughts), True
    return Usage(), False


# a client asking for ``enum-encoding=int`` (Go's genai) gets the enum's number
_FINISH_NUMBERS = ("FINISH_REASON_UNSPECIFIED", "STOP", "MAX_TOKENS", "SAFETY", "RECITATION",
                   "OTHER")


def finish_reason(value: Any) -> str | None:
    """A candidate's ``finishReason`` as text: its name, also when recorded as the
    enum's number (``1`` is ``STOP``; a number with no name known here, as recorded)."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return _FINISH_NUMBERS[value] if 0 <= value < len(_FINISH_NUMBERS) else str(value)
    return None


def _reply(response: dict[str, Any], where: str, notes: list[str]
           ) -> tuple[Message | None, str | None, str | None]:
    """The answer, the finish reason, and why there is no answer (when none)."""
    candidates = list_of(response.get("candidates"), f"{where}: response", "candidates")
    if len(candidates) > 1 or response.get("alternatives"):
        notes.append(f"{where}: alternative candidate(s) not imported")
    if not candidates:
        feedback = _get(response, "promptFeedback") or {}
        feedback = feedback if isinstance(feedback, dict) else {}
        reason = _get(feedback, "blockReason")
        why = ": ".join(str(x) for x in (reason, _get(feedback, "blockReasonMessage")) if x)
        return None, None, (f"the prompt was blocked ({why})" if reason else
                            "the response has no candidates")
    cand = candidates[0]
    if not isinstance(cand, dict):
        raise fail(where, f"response candidate 0 must be an object, got {cand!r}")
    grounding = _get(cand, "groundingMetadata")
    if isinstance(grounding, dict) and grounding:
        queries = _get(grounding, "webSearchQueries")
        sources = _get(grounding, "groundingChunks")
        n, m = (len(x) if isinstance(x, list) else 0 for x in (queries, sources))
        notes.append(f"{where}: response: its grounding (Google Search: {n} "
                     f"quer{'y' if n == 1 else 'ies'}, {m} source{'' if m == 1 else 's'}) "
                     "not imported; the search results' tokens are counted in the input")
    if cited := _citations(cand):
        uris = list(dict.fromkeys(str(c["uri"]) for c in cited if isinstance(c.get("uri"), str)))
        notes.append(f"{where}: response: its {len(cited)} citation(s) of sources its text "
                     "recites not imported"
                     + (f" ({', '.join(uris[:3])}{' …' if len(uris) > 3 else ''})"
                        if uris else ""))
    finish = finish_reason(_get(cand, "finishReason"))
    content = cand.get("content")
    msgs = content_messages(content, f"{where}: response", notes, role="model",
                            in_response=True) \
        if isinstance(content, dict) else []
    reply = msgs[0] if msgs else None
    if reply is not None and finish in _ENDED:
        return reply, finish, None  # (an empty text that ended as any answer does: said)
    if reply is None or (not reply.tool_calls() and not reply.text()):
        ratings = _get(cand, "safetyRatings")
        blocked = [str(r.get("category")) for r in
                   (ratings if isinstance(ratings, list) else [])
                   if isinstance(r, dict) and r.get("blocked") is True]
        because = f": {', '.join(blocked)} blocked" if blocked else ""
        return None, finish, f"no answer recorded (finishReason {finish or 'none'}{because})"
    return reply, finish, None


# how an answer ends that the model wrote, though it may be empty (a part of "" text, a
# reasoning model stopped at its limit); other reasons withhold it (SAFETY, RECITATION …)
_ENDED = ("STOP", "MAX_TOKENS")


def gemini_exchange(obj: dict[str, Any], where: str, index: int, *,
                    thread_key: str | None, resource_id: str | None) -> Exchange:
    """A ``{"request", "response"|"error"}`` record of the Gemini API."""
    request = obj.get("request", obj)
    if not isinstance(request, dict):
        raise fail(where, f"'request' must be an object, got {type(request).__name__}")
    notes: list[str] = []
    history = request_contents(request, where, notes)
    instructions = request_instructions(request, where, notes)
    reply, finish, usage, known, created, error = None, None, Usage(), False, None, None
    detail: dict[str, int] = {}
    url = obj.get("url")
    model = asked = request.get("model") or obj.get("model") or (
        model_in_path(url) if isinstance(url, str) else None)
    if obj.get("response") is not None:
        response = _joined(obj["response"], where, notes)
        reply, finish, error = _reply(response, where, notes)
        usage, known = _usage(_get(response, "usageMetadata"))
        detail = usage_detail(_get(response, "usageMetadata")) if known else {}
        version = _get(response, "modelVersion")
        if isinstance(version, str) and version.startswith("models/"):
            version = version[len("models/"):]  # (as the request's URL names it)
        model = version or model
        created = iso_time(_get(response, "createTime"), where, "createTime")
    else:
        raw = obj.get("error") or "no response recorded"
        error = raw if isinstance(raw, str) else json.dumps(raw, sort_keys=True)
    history = distinct_calls(history)  # (before results without ids take their calls')
    answer_ids(history, where, notes)
    fields = {k: request[k] for k in _FIELDS if k in request}
    return Exchange(
        where=where, index=index, instructions=instructions, history=history,
        response=reply, thread_key=thread_key, resource_id=resource_id,
        model=str(model) if model else None, requested_model=str(asked) if asked else None,
        usage=usage, usage_known=known, usage_detail=detail,
        finish_reason=finish, params=_params(request, where), request_fields=fields,
        tools=offered_tools(request.get("tools"), where, notes), started_at=created,
        finished_at=created, error=error if reply is None else None, notes=notes,
        api="gemini")
