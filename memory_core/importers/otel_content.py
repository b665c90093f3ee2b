"""Where each instrumentation puts a model call's messages, tools and parameters on a
span (or on the events/log records attached to it), read into chat messages.

Sources, first found wins: ``gen_ai.input.messages``/``gen_ai.output.messages`` (span or
an ``gen_ai.client.inference.operation.details`` event); the older per-message events
(``gen_ai.user.message`` … ``gen_ai.choice``, also as OTLP log records); OpenLLMetry's
``gen_ai.prompt.N.*``/``gen_ai.completion.N.*``; OpenInference ``llm.input_messages.N.*``
(those two in ``otel_indexed``);
OpenLIT's ``gen_ai.prompt``/``gen_ai.completion`` text (events or attributes); for
OpenInference LLM spans ``input.value``/``output.value``; and the Vercel AI SDK's own
``ai.prompt.messages``/``ai.response.*`` (read first: its spans carry ``gen_ai.*`` usage and
model attributes too, never the messages)."""

from __future__ import annotations

import re
from typing import Any

from memory_core.errors import ImportFormatError
from memory_core.importers.anthropic import anthropic_block, anthropic_messages, assistant_turn
from memory_core.importers.bedrock import converse_blocks
from memory_core.importers.common import fail, openai_message, openai_messages
from memory_core.importers.gemini import answer_ids, content_messages
from memory_core.importers.jsonvalues import load_json
from memory_core.importers.otel_indexed import indexed, openinference, openllmetry
from memory_core.importers.otel_read import Event, RawSpan, SpanContent
from memory_core.models.openai_codec import (
    attachment,
    call_arguments,
    from_openai_tools,
    parse_arguments,
)
from memory_core.types import Message, TextPart, ToolCallPart, ToolResultPart

MODEL_CALL_OPERATIONS = {"chat", "text_completion", "generate_content", "completion"}
EVENT_ROLES = {"gen_ai.system.message": "system", "gen_ai.user.message": "user",
               "gen_ai.assistant.message": "assistant", "gen_ai.tool.message": "tool"}
OTEL_ROLES = ("system", "user", "assistant", "tool")
DETAILS_EVENT = "gen_ai.client.inference.operation.details"
INSTRUCTION_KEYS = ("gen_ai.system_instructions", "gen_ai.system.instructions")
ATTACHMENT_PARTS = ("blob", "uri", "file", "image", "audio", "image_url", "input_audio")
Parts = list[TextPart | ToolCallPart | ToolResultPart]


def _json(value: Any, where: str, key: str) -> Any:
    return load_json(value, where, key) if isinstance(value, str) else value


# -- current convention: messages with typed parts ------------------------------------------
def _parts(raw: Any, where: str, notes: list[str]) -> tuple[Parts, list[dict[str, Any]]]:
    if not isinstance(raw, list):
        raise fail(where, f"'parts' must be a list, got {type(raw).__name__}")
    out: Parts = []
    attachments: list[dict[str, Any]] = []
    for j, p in enumerate(raw):
        kind = p.get("type") if isinstance(p, dict) else None
        if kind == "text":
            if not isinstance(p.get("content"), str):
                raise fail(where, f"text part {j} has no string 'content'")
            out.append(TextPart(text=p["content"]))
        elif kind == "tool_call":
            name, cid = p.get("name"), p.get("id")
            if not isinstance(name, str) or not name:
                raise fail(where, f"tool_call part {j} has no name")
            if not isinstance(cid, str) or not cid:
                raise fail(where, f"tool_call part {j} ({name}) has no id")
            out.append(ToolCallPart(id=cid, name=name,
                                    args=call_arguments(p.get("arguments") or {})))
        elif kind == "tool_call_response":
            cid = p.get("id")
            if not isinstance(cid, str) or not cid:
                raise fail(where, f"tool_call_response part {j} has no id")
            # (the convention's ``response``; pydantic-ai writes ``result``)
            out.append(ToolResultPart(call_id=cid, name="", result=p.get(
                "response", p.get("result"))))
        elif kind in ATTACHMENT_PARTS:
            attachments.append({**attachment({"type": kind, kind: {
                k: v for k, v in p.items() if k in ("uri", "url", "mime_type", "modality")}},
                len(out) + len(attachments)), "type": kind})
            notes.append(f"{where}: part {j} ({kind}) kept as a placeholder")
        elif isinstance(kind, str):
            notes.append(f"{where}: part {j} of type {kind!r} not imported")
        else:
            raise fail(where, f"part {j} has no 'type': {p!r}")
    return out, attachments


def _parts_message(raw: Any, where: str, notes: list[str]) -> list[Message]:
    """One message of typed parts, as the messages the OpenAI form has for it (see
    ``_one_result_each``)."""
    if not isinstance(raw, dict):
        raise fail(where, f"a message must be an object, got {raw!r}")
    role = raw.get("role")
    if not isinstance(role, str) or role not in OTEL_ROLES:
        raise fail(where, f"unknown role {role!r} (expected one of {', '.join(OTEL_ROLES)})")
    parts, attachments = _parts(raw.get("parts"), where, notes)
    meta: dict[str, Any] = {"name": raw["name"]} if isinstance(raw.get("name"), str) else {}
    return _one_result_each(role, parts, attachments, meta, where)


def _one_result_each(role: str, parts: Parts, attachments: list[dict[str, Any]],
                     meta: dict[str, Any], where: str) -> list[Message]:
    """Tool results as the OpenAI form has them, and the Anthropic and Vercel readers
    make them: a tool message per result. A ``tool`` message of several results is
    split, its other parts staying with the result they follow (or the first); a
    ``user`` message carrying results (instrumentations of the Anthropic API put the
    ``tool_result`` blocks of a user turn there) is its results as tool messages, then
    the rest of the turn as a user message — so a conversation imports alike from its
    spans and from its HTTP recording."""
    if not any(isinstance(p, ToolResultPart) for p in parts):
        return [_message(role, parts, attachments, meta)]
    if role == "assistant":
        raise fail(where, "an assistant message holds a tool_call_response")
    groups: list[Parts] = [[]]
    rest: Parts = []
    for part in parts:
        if isinstance(part, ToolResultPart):
            if any(isinstance(q, ToolResultPart) for q in groups[-1]):
                groups.append([])
            groups[-1].append(part)
        elif role == "tool":
            groups[-1].append(part)
        else:
            rest.append(part)
    out = [_message("tool", group, attachments if i == 0 and role == "tool" else [], meta)
           for i, group in enumerate(groups)]
    if rest or (attachments and role != "tool"):
        out.append(_message(role, rest, attachments, meta))
    return out


def _message(role: str, parts: Parts, attachments: list[dict[str, Any]],
             meta: dict[str, Any] | None = None) -> Message:
    """A message of ``parts``: one text part (or none) is plain text content."""
    meta = dict(meta or {})
    if attachments:
        meta["attachments"] = attachments
    if all(isinstance(p, TextPart) for p in parts) and len(parts) <= 1:
        text = parts[0].text if parts else ""  # type: ignore[union-attr]
        return Message(role=role, content=text, metadata=meta)  # type: ignore[arg-type]
    return Message(role=role, content=parts, metadata=meta)  # type: ignore[arg-type]


# the keys of a part of Gemini's own ``Content`` (which has no 'type')
_GEMINI_PARTS = ("text", "functionCall", "functionResponse", "inlineData", "fileData",
                 "executableCode", "codeExecutionResult", "function_call",
                 "function_response", "inline_data", "file_data")


def _gemini_content(m: Any) -> bool:
    """Gemini's own ``Content`` (role ``user``/``model``, parts ``{text}``,
    ``functionCall`` …, no 'type'), as Gemini CLI's ``llm_call`` span keeps the
    request's contents under the convention's keys."""
    parts = m.get("parts") if isinstance(m, dict) else None
    return m.get("role") in ("user", "model", None) and isinstance(parts, list) and all(
        isinstance(p, dict) and "type" not in p and any(k in p for k in _GEMINI_PARTS)
        for p in parts) if isinstance(m, dict) else False


def _parts_messages(where: str, attrs: dict[str, Any], key: str,
                    notes: list[str]) -> list[Message] | None:
    raw = _json(attrs.get(key), where, key)
    if raw is None:
        return None
    if isinstance(raw, dict) and raw.get("parts") and _gemini_content(raw):
        raw = [raw]  # (Gemini CLI: the response's one Content, not a list)
    if not isinstance(raw, list):
        raise fail(where, f"{key} must be a JSON array of messages")
    if raw and all(isinstance(m, dict) and "parts" not in m for m in raw):
        # the OpenAI form under the convention's key (any-agent, LiteLLM): read as such
        return openai_messages(raw, f"{where}: {key}", notes)
    if raw and all(_gemini_content(m) for m in raw):  # read as the Gemini API's
        out = key.endswith("output.messages")
        msgs = [msg for i, m in enumerate(raw) for msg in content_messages(
            m, f"{where}: {key}[{i}]", notes, role="model" if out else None,
            in_response=out)]
        answer_ids(msgs, f"{where}: {key}", notes)  # (id-less responses: by name)
        return msgs
    return [msg for i, m in enumerate(raw)
            for msg in _parts_message(m, f"{where}: {key}[{i}]", notes)]


def _instructions(where: str, attrs: dict[str, Any], notes: list[str]) -> list[Message]:
    key = next((k for k in INSTRUCTION_KEYS if attrs.get(k) is not None), None)
    if key is None:
        return []
    raw = attrs[key]
    parsed = parse_arguments(raw) if isinstance(raw, str) else raw
    if isinstance(parsed, list):
        parts, _ = _parts(parsed, f"{where}: {key}", notes)
        text = "\n".join(p.text for p in parts if isinstance(p, TextPart))
    elif isinstance(parsed, str):
        text = parsed
    else:
        raise fail(where, f"{key} must be text or a JSON array of parts, got {raw!r}")
    return [Message(role="system", content=text)] if text else []


def _current(span: RawSpan, notes: list[str]) -> SpanContent | None:
    attrs = dict(span.attrs)
    for name, body in span.events:  # the newest convention's event carries the same keys
        if name == DETAILS_EVENT:
            for k, v in body.items():
                attrs.setdefault(k, v)
    instructions = _instructions(span.where, attrs, notes)
    msgs = _parts_messages(span.where, attrs, "gen_ai.input.messages", notes)
    outs = _parts_messages(span.where, attrs, "gen_ai.output.messages", notes)
    if msgs is None and not outs:
        return SpanContent(instructions, [], None, notes=notes) if instructions else None
    finish = None
    if outs:
        if len(outs) > 1:
            notes.append(f"{span.where}: {len(outs) - 1} alternative output message(s) "
                         "not imported")
        raw_out = _json(attrs["gen_ai.output.messages"], span.where, "gen_ai.output.messages")
        first = raw_out[0] if isinstance(raw_out, list) else raw_out  # (Gemini CLI: one)
        finish = first.get("finish_reason") if isinstance(first, dict) else None
    return SpanContent(instructions, msgs or [], outs[0] if outs else None,
                       finish if isinstance(finish, str) else None, notes)


# -- older convention: one event per message ----------------------------------------------------
def _event_body(body: dict[str, Any], where: str) -> dict[str, Any]:
    """Span events carry the event body as one JSON attribute or flattened; log records
    carry it as a map. JSON strings of structured fields are decoded."""
    for key in ("body", "gen_ai.event.content", "event.body"):
        if isinstance(body.get(key), str) and body[key].lstrip().startswith("{"):
            decoded = load_json(body[key], where, key)
            if isinstance(decoded, dict):
                return decoded
    return {k: parse_arguments(v) if k in ("tool_calls", "message") else v
            for k, v in body.items()}


def json_messages(value: Any, where: str, key: str, role: str, notes: list[str]
                  ) -> tuple[list[Message], str | None]:
    """Messages recorded as one JSON value (or plain text): a list of messages in the
    OpenAI form or the current ``parts`` form, ``{"messages": […]}``, a chat completion
    (``choices``), ``{"text": …}``, one message, or — not JSON — text of ``role``.
    Returns the messages and a finish reason when the value names one."""
    parsed = parse_arguments(value) if isinstance(value, str) else value
    kw = f"{where}: {key}"
    if isinstance(parsed, dict) and isinstance(parsed.get("messages"), list):
        parsed = parsed["messages"]
    if isinstance(parsed, list) and parsed and all(isinstance(m, dict) for m in parsed):
        if any("parts" in m for m in parsed):
            return [msg for i, m in enumerate(parsed)
                    for msg in _parts_message(m, f"{kw}[{i}]", notes)], None
        if _all_converse(parsed):
            return _converse_messages(parsed, role, kw, notes), None
        return openai_messages([{"role": role, **m} for m in parsed], kw, notes), None
    if isinstance(parsed, dict):
        finish = parsed.get("finish_reason")
        finish = finish if isinstance(finish, str) else None
        if "content" not in parsed and _converse(parsed.get("message")) is not None:
            # (Strands: {"message": <its Converse blocks as JSON text>, "finish_reason"})
            return _converse_messages([{"role": parsed.get("role", role),
                                        "content": parsed["message"]}], role, kw,
                                      notes), finish
        choices = parsed.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            c0 = choices[0]
            raw = c0.get("message") or {"content": c0.get("text")}
            fin = c0.get("finish_reason")
            return [openai_message({"role": role, **raw}, kw, notes)], \
                fin if isinstance(fin, str) else None
        if isinstance(parsed.get("parts"), list):
            return _parts_message({"role": role, **parsed}, kw, notes), finish
        if parsed.get("role", role) == "assistant" and isinstance(parsed.get("content"), list) \
                and any(map(anthropic_block, parsed["content"])):  # (the Messages API's)
            return [assistant_turn(parsed["content"], kw, notes)], finish
        if isinstance(parsed.get("text"), str) or "content" in parsed:
            return [openai_message({"role": role, "content": parsed.get("text"), **{
                k: v for k, v in parsed.items() if k in ("role", "content", "tool_calls",
                                                         "name")}}, kw, notes)], finish
    if isinstance(value, str):
        return [Message(role=role, content=value)], None  # type: ignore[arg-type]
    raise fail(where, f"{key} must be text or JSON messages, got {value!r}")


# the kinds of block a Bedrock Converse message holds, each an object of one key
_CONVERSE_KINDS = {"text", "toolUse", "toolResult", "image", "document", "video",
                   "reasoningContent", "guardContent", "cachePoint", "searchResult"}


def _converse(content: Any) -> list[Any] | None:
    """Content that is Bedrock Converse blocks (or their JSON text, as Strands Agents
    records a message's content), else None."""
    blocks = parse_arguments(content) if isinstance(content, str) \
        and content.lstrip().startswith("[{") else content
    if isinstance(blocks, list) and blocks and all(
            isinstance(b, dict) and len(b) == 1 and next(iter(b)) in _CONVERSE_KINDS
            for b in blocks):
        return blocks
    return None


def _all_converse(messages: list[dict[str, Any]]) -> bool:
    """Every message's content Converse blocks, and none in the OpenAI form's way of
    carrying calls (``tool_calls``, ``tool_call_id``): a text that happens to read as
    ``[{"text": …}]`` in an OpenAI conversation stays that conversation's text."""
    return all(_converse(m.get("content")) is not None and "tool_calls" not in m
               and "tool_call_id" not in m for m in messages)


def _converse_messages(raw: list[dict[str, Any]], role: str, where: str,
                       notes: list[str]) -> list[Message]:
    """Messages whose content is Converse blocks (a tool's results under the role
    ``tool``, as Strands Agents records them) or text, read as the Messages API's: the
    Converse reader's own translation of each block."""
    system: list[Message] = []
    converted: list[dict[str, Any]] = []
    for i, m in enumerate(raw):
        said = m.get("role", role)
        blocks = _converse(m.get("content"))
        content = converse_blocks(blocks, f"{where}[{i}]", notes) if blocks is not None \
            else m.get("content")
        if said in ("system", "developer"):  # (the Messages API has no such turn)
            texts = [b.get("text") for b in content if isinstance(b, dict)] \
                if isinstance(content, list) else [content]
            system.append(Message(role="system", content="\n".join(
                t for t in texts if isinstance(t, str))))
            continue
        converted.append({"role": "user" if said == "tool" else said,
                          "content": "" if content is None else content})
    if not system and len(converted) == 1 and converted[0]["role"] == "assistant" \
            and isinstance(converted[0]["content"], list):
        return [assistant_turn(converted[0]["content"], where, notes)]
    return system + anthropic_messages(converted, where, notes)


def _text_or_messages(value: Any, where: str, key: str, role: str,
                      notes: list[str]) -> list[Message]:
    """``gen_ai.prompt``/``gen_ai.completion``: JSON messages, or (OpenLIT) plain text."""
    return json_messages(value, where, key, role, notes)[0]


def _has_content(body: dict[str, Any]) -> bool:
    message = body.get("message")
    return (body.get("content") is not None or bool(body.get("tool_calls"))
            or (isinstance(message, dict) and (message.get("content") is not None
                                               or bool(message.get("tool_calls")))))


def _events(span: RawSpan, notes: list[str]) -> SpanContent | None:
    msgs: list[Message] = []
    reply: Message | None = None
    finish: str | None = None
    empty = 0
    for k, (name, raw) in enumerate(span.events):
        ew = f"{span.where}: event {k} ({name})"
        body = _event_body(raw, ew)
        if name in EVENT_ROLES or name == "gen_ai.choice":
            if not _has_content(body):
                if name != "gen_ai.assistant.message":
                    return None  # recorded without content: nothing here is the conversation
                empty += 1
                continue
        if name in EVENT_ROLES:
            role = body.get("role") or EVENT_ROLES[name]
            msgs.append(openai_message({"role": role, "content": body.get("content"),
                                        "tool_calls": body.get("tool_calls"),
                                        "tool_call_id": body.get("id"),
                                        "name": body.get("name")}, ew, notes))
        elif name == "gen_ai.choice":
            if reply is not None:
                notes.append(f"{ew}: alternative choice not imported")
                continue
            message = body.get("message") or body
            if not isinstance(message, dict):
                raise fail(ew, "'message' must be an object")
            reply = openai_message({"role": message.get("role") or "assistant",
                                    "content": message.get("content"),
                                    "tool_calls": message.get("tool_calls")}, ew, notes)
            finish = body.get("finish_reason") if isinstance(body.get("finish_reason"),
                                                             str) else None
        elif name == "gen_ai.content.prompt" and body.get("gen_ai.prompt") is not None:
            msgs.extend(_text_or_messages(body["gen_ai.prompt"], ew, "gen_ai.prompt", "user",
                                          notes))
        elif name == "gen_ai.content.completion" and body.get("gen_ai.completion") is not None:
            done, said = json_messages(body["gen_ai.completion"], ew, "gen_ai.completion",
                                       "assistant", notes)
            reply = done[0] if done else reply
            finish = said or finish
    if not msgs and reply is None:
        return None
    if empty:
        notes.append(f"{span.where}: {empty} event(s) without content not imported")
    return SpanContent([], msgs, reply, finish, notes)


# -- OpenInference LLM spans' input.value/output.value ------------------------------------------
def _oi_values(span: RawSpan, notes: list[str]) -> SpanContent | None:
    """``input.value``/``output.value`` of an LLM span: JSON messages or a JSON
    request/response when the mime type says so, else plain text."""
    where, attrs = span.where, span.attrs
    if attrs.get("openinference.span.kind") != "LLM":
        return None
    msgs: list[Message] = []
    reply: Message | None = None
    finish: str | None = None
    prompts = _oi_prompts(attrs)
    if prompts:  # a completion's prompts: input.value may be the call's arguments
        msgs = [Message(role="user", content=p) for p in prompts]  # (``{"args": [...]}``)
        if len(prompts) > 1:
            notes.append(f"{where}: llm.prompts holds {len(prompts)} prompts: each kept as "
                         "a user message")
    for side, role in (("input", "user"), ("output", "assistant")):
        value = attrs.get(f"{side}.value")
        if not isinstance(value, str) or side == "input" and prompts:
            continue
        if attrs.get(f"{side}.mime_type") == "application/json":
            load_json(value, where, f"{side}.value")  # a malformed value names the span
            got, fin = json_messages(value, where, f"{side}.value", role, notes)
        else:
            got, fin = [Message(role=role, content=value)], None  # type: ignore[arg-type]
        if side == "input":
            msgs = got
        elif got:
            reply, finish = got[0], fin
    if not msgs and reply is None:
        return None
    return SpanContent([], msgs, reply, finish, notes)


def _oi_prompts(attrs: dict[str, Any]) -> list[str]:
    """OpenInference's ``llm.prompts`` of a completion-style LLM span — a JSON list of
    texts, or ``llm.prompts.N.prompt.text`` — the prompts the model was sent."""
    raw = attrs.get("llm.prompts")
    listed = parse_arguments(raw) if isinstance(raw, str) else raw
    if isinstance(listed, list) and listed and all(isinstance(p, str) for p in listed):
        return listed
    texts = [(p.get("prompt") or {}).get("text") if isinstance(p.get("prompt"), dict)
             else None for p in indexed(attrs, "llm.prompts").values()]
    return [t for t in texts if isinstance(t, str)] if texts and all(
        isinstance(t, str) for t in texts) else []


def _openlit_attrs(span: RawSpan, notes: list[str]) -> SpanContent | None:
    events: list[Event] = []
    for key, name in (("gen_ai.prompt", "gen_ai.content.prompt"),
                      ("gen_ai.content.prompt", "gen_ai.content.prompt"),
                      ("gen_ai.completion", "gen_ai.content.completion"),
                      ("gen_ai.content.completion", "gen_ai.content.completion")):
        value = span.attrs.get(key)
        if isinstance(value, str):
            events.append((name, {name.replace("content.", ""): value}))
    if not events:
        return None
    return _events(RawSpan(span.where, span.trace_id, span.span_id, span.parent_id,
                           span.name, span.start, span.end, {}, events), notes)


# -- the Vercel AI SDK's own attributes (``ai.*``) ------------------------------------------------
def vercel_operation(span: RawSpan) -> str | None:
    """``ai.operationId`` (``ai.generateText.doGenerate``, ``ai.toolCall`` …), or the
    span name's first word when it is one; None for spans the AI SDK did not write."""
    op = span.attrs.get("ai.operationId")
    if isinstance(op, str) and op:
        return op
    first = span.name.split(" ", 1)[0]
    return first if first.startswith("ai.") and any(k.startswith("ai.") for k in span.attrs) \
        else None


def _vercel_attachment(p: dict[str, Any], kind: str, index: int) -> dict[str, Any]:
    """An ``image`` (``image``, ``mimeType``) or ``file`` (``data``, ``mediaType``,
    ``filename``) part as a placeholder: a URL is kept, inline data summarised."""
    value = p.get("image" if kind == "image" else "data")
    body: dict[str, Any] = {"filename": p.get("filename")}
    if isinstance(value, str) and value.startswith(("http://", "https://", "data:")):
        body["url"] = value
    elif isinstance(value, str):
        body["data"] = value
    out = attachment({"type": kind, kind: body}, index)
    media = p.get("mediaType", p.get("mimeType"))
    if isinstance(media, str):
        out.setdefault("media_type", media)
    return out


def _vercel_output(p: dict[str, Any]) -> Any:
    """A tool result's value: ``output`` ({type: text/json/error-text/…, value}) since
    AI SDK 5, ``result`` before."""
    out = p.get("output", p.get("result"))
    if isinstance(out, dict) and isinstance(out.get("type"), str) and "value" in out:
        return out["value"]
    return out


def _vercel_call(c: Any, where: str) -> ToolCallPart:
    """A ``tool-call`` part or an ``ai.response.toolCalls`` item: ``toolCallId``,
    ``toolName`` and ``input`` (AI SDK 5+) or ``args`` (before), an object or JSON text."""
    if not isinstance(c, dict):
        raise fail(where, f"a tool call must be an object, got {c!r}")
    name, cid = c.get("toolName"), c.get("toolCallId")
    if not isinstance(name, str) or not name:
        raise fail(where, f"tool call has no toolName: {c!r}")
    if not isinstance(cid, str) or not cid:
        raise fail(where, f"tool call {name} has no toolCallId")
    return ToolCallPart(id=cid, name=name,
                        args=parse_arguments(c.get("input", c.get("args", {}))))


def _vercel_message(raw: Any, where: str, notes: list[str]) -> list[Message]:
    """One AI SDK prompt message: content text, or parts ``text``, ``tool-call``,
    ``tool-result`` (a tool message of N results is N messages, one a result, as the
    OpenAI form has them; its text and attachments stay with the result they follow, or
    the first), ``image``/``file`` (placeholders); others are noted."""
    if not isinstance(raw, dict):
        raise fail(where, f"a message must be an object, got {raw!r}")
    role, content = raw.get("role"), raw.get("content")
    if not isinstance(role, str) or role not in OTEL_ROLES:
        raise fail(where, f"unknown role {role!r} (expected one of {', '.join(OTEL_ROLES)})")
    if isinstance(content, str):
        return [Message(role=role, content=content)]  # type: ignore[arg-type]
    if not isinstance(content, list):
        raise fail(where, f"content must be text or a list of parts, got {content!r}")
    # the messages the parts make: one, or for a tool message one a result
    made: list[tuple[Parts, list[dict[str, Any]]]] = [([], [])]
    for j, p in enumerate(content):
        parts, attachments = made[-1]
        kind = p.get("type") if isinstance(p, dict) else None
        if kind == "text" and isinstance(p.get("text"), str):
            parts.append(TextPart(text=p["text"]))
        elif kind == "tool-call" and role == "assistant":
            parts.append(_vercel_call(p, f"{where}: part {j}"))
        elif kind == "tool-result" and role == "tool":
            cid = p.get("toolCallId")
            if not isinstance(cid, str) or not cid:
                raise fail(where, f"tool-result part {j} has no toolCallId")
            name = p.get("toolName") if isinstance(p.get("toolName"), str) else ""
            if any(isinstance(q, ToolResultPart) for q in parts):
                parts, attachments = [], []
                made.append((parts, attachments))
            parts.append(ToolResultPart(call_id=cid, name=name, result=_vercel_output(p)))
        elif kind in ("image", "file"):
            attachments.append(_vercel_attachment(p, kind, len(parts) + len(attachments)))
            notes.append(f"{where}: part {j} ({kind}) kept as a placeholder")
        elif isinstance(kind, str):
            notes.append(f"{where}: part {j} of type {kind!r} not imported")
        else:
            raise fail(where, f"part {j} has no 'type': {p!r}")
    if role == "tool":
        return [_message(role, parts, attachments) for parts, attachments in made
                if parts or attachments]
    return [_message(role, *made[0])]


def _vercel_reply(attrs: dict[str, Any], where: str) -> Message | None:
    """``ai.response.text`` (or a generated object's JSON, ``ai.response.object``) and
    ``ai.response.toolCalls``; None when the span recorded no output."""
    text, obj = attrs.get("ai.response.text"), attrs.get("ai.response.object")
    calls = _json(attrs.get("ai.response.toolCalls"), where, "ai.response.toolCalls")
    if text is None and obj is None and calls is None:
        return None
    if calls is not None and not isinstance(calls, list):
        raise fail(where, "ai.response.toolCalls must be a JSON array of tool calls")
    parts: Parts = []
    body = text if isinstance(text, str) and text else obj
    if isinstance(body, str) and body:
        parts.append(TextPart(text=body))
    parts += [_vercel_call(c, f"{where}: ai.response.toolCalls[{i}]")
              for i, c in enumerate(calls or [])]
    return _message("assistant", parts, [])


def _vercel(span: RawSpan, notes: list[str]) -> SpanContent | None:
    """A model call of the AI SDK (``ai.*.doGenerate``/``doStream``): the prompt the
    model got in ``ai.prompt.messages``. (The ``ai.generateText`` … spans around them
    record the caller's ``ai.prompt`` instead, and are not read.)"""
    raw = _json(span.attrs.get("ai.prompt.messages"), span.where, "ai.prompt.messages")
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise fail(span.where, "ai.prompt.messages must be a JSON array of messages")
    msgs = [m for i, item in enumerate(raw)
            for m in _vercel_message(item, f"{span.where}: ai.prompt.messages[{i}]", notes)]
    finish = span.attrs.get("ai.response.finishReason")
    return SpanContent([], msgs, _vercel_reply(span.attrs, span.where),
                       finish if isinstance(finish, str) else None, notes)


def span_content(span: RawSpan) -> SpanContent | None:
    """The span's messages from the first source that has any; None when it has none."""
    notes: list[str] = []
    for reader in (_vercel, _current, _events, openllmetry, openinference, _oi_values,
                   _openlit_attrs):
        got = reader(span, notes)
        if got is not None and (got.messages or got.reply is not None):
            if not got.instructions:
                got.instructions = _instructions(span.where, span.attrs, notes)
            return got
    return None


# -- tools and parameters ---------------------------------------------------------------------
def span_tools(span: RawSpan, notes: list[str]) -> list[dict[str, Any]] | None:
    """Offered tools, or None when the span does not record them. A definition that
    cannot be read (no name, not JSON, not an object) is left out, noted: the span's
    other tools and its messages are still imported."""
    attrs, where = span.attrs, span.where
    if "ai.prompt.messages" in attrs:  # recorded with the prompt: absent when none offered
        listed = attrs.get("ai.prompt.tools") or []
        if not isinstance(listed, list):
            raise fail(where, "ai.prompt.tools must be a list of JSON tool definitions")
        return _offered([(t, _vercel_tool) for t in listed], where, "ai.prompt.tools", notes)
    raw = attrs.get("gen_ai.tool.definitions")
    if raw is not None:
        try:
            listed = _json(raw, where, "gen_ai.tool.definitions")
        except ImportFormatError as e:  # the messages are still there: tools unknown
            notes.append(f"{str(e)[:300]}; the tools offered are unknown")
            return None
        if not isinstance(listed, list):
            notes.append(f"{where}: gen_ai.tool.definitions is not a list (got "
                         f"{type(listed).__name__}); the tools offered are unknown")
            return None
        return _offered([(t, None) for t in listed], where, "gen_ai.tool.definitions", notes)
    fns = indexed(attrs, "llm.request.functions")
    if fns:
        return _offered([({"type": "function", "function": {
            "name": f.get("name"), "description": f.get("description"),
            "parameters": parse_arguments(f.get("parameters"))}}, None)
            for f in fns.values()], where, "llm.request.functions", notes)
    oi = indexed(attrs, "llm.tools")
    if oi:
        return _offered([((t.get("tool") or {}).get("json_schema"), None)
                         for t in oi.values()], where, "llm.tools", notes)
    asked = attrs.get("model_request_parameters")  # pydantic-ai's (JSON text, or kept
    asked = parse_arguments(asked) if isinstance(asked, str) else asked  # parsed)
    if isinstance(asked, dict) and any(isinstance(asked.get(k), list) for k in _PYDANTIC_TOOLS):
        return _offered([({"type": "function", "function": {
            # (a built-in tool, the provider's own — web search —, by its kind)
            "name": t.get("name", t.get("kind") if k == "builtin_tools" else None),
            "description": t.get("description"),
            "parameters": t.get("parameters_json_schema")}} if isinstance(t, dict) else t, None)
            for k in _PYDANTIC_TOOLS for t in asked.get(k) or []],
            where, "model_request_parameters", notes)
    inp = attrs.get("input.value")
    if attrs.get("input.mime_type") == "application/json" and isinstance(inp, str):
        body = parse_arguments(inp)
        # (a request body: its messages a list; a tracer that hides the conversation
        # writes {"messages": "[sanitized …]"}, which says nothing of the tools)
        if isinstance(body, dict) and isinstance(body.get("messages"), list):
            return from_openai_tools(body.get("tools") or [], where, notes)
    return None


# pydantic-ai's ``model_request_parameters``: the function tools, the output tools
# (``final_result``) and the provider's built-in tools it offered the model
_PYDANTIC_TOOLS = ("function_tools", "output_tools", "builtin_tools")
# Gemini's tools that are no function (what OpenInference's google-genai instrumentation
# writes as a tool's json_schema: ``{"code_execution": {}}``), kept by name
_GEMINI_TOOLS = ("google_search", "googleSearch", "google_search_retrieval",
                 "googleSearchRetrieval", "code_execution", "codeExecution", "url_context",
                 "urlContext", "retrieval", "enterprise_web_search", "enterpriseWebSearch",
                 "google_maps", "googleMaps", "computer_use", "computerUse", "file_search",
                 "fileSearch")


def _offered(items: list[tuple[Any, Any]], where: str, source: str, notes: list[str]
             ) -> list[dict[str, Any]] | None:
    """The tool definitions of ``source`` (each a JSON text or value, with the function
    that puts it in the OpenAI form), read one by one: Gemini's ``function_declarations``
    are their functions, its built-in tools kept by name; one that cannot be read is
    left out with a note naming it. None (the tools offered are unknown) when none of
    them could be read: tools were offered, but which is not in the recording (a
    tracer that blanked them: ``{}``), so no call is said to name a tool not offered."""
    out: list[dict[str, Any]] = []
    unread = 0
    for j, (raw, convert) in enumerate(items):
        at = f"{source}[{j}]"
        tools: list[Any] = []
        try:
            tool = _json(raw, where, at)
            if convert is not None:
                tool = convert(tool)
            declared = tool.get("function_declarations", tool.get("functionDeclarations")) \
                if isinstance(tool, dict) else None
            if isinstance(declared, list):  # a Gemini tool: its functions
                tools = [{"type": "function", "function": {
                    "name": d.get("name"), "description": d.get("description"),
                    "parameters": d.get("parameters", d.get(
                        "parameters_json_schema", d.get("parametersJsonSchema")))}}
                    if isinstance(d, dict) else d for d in declared]
            elif isinstance(tool, dict) and len(tool) == 1 and next(iter(tool)) in _GEMINI_TOOLS:
                name = next(iter(tool))
                notes.append(f"{where}: {at}: Gemini's built-in tool {name!r} kept by name "
                             "only")
                out.append({"name": name, "description": "", "parameters": {}, "type": name})
                continue
            else:
                tools = [tool]
            read = from_openai_tools(tools, f"{where}: {at}", notes)
        except ImportFormatError as e:
            problem = str(e).removeprefix(f"{where}: ").removeprefix(f"{at}: ")
            problem = problem.removeprefix(f"{at} ").replace("tool 0 ", "the definition ", 1) \
                if len(tools) <= 1 else problem
            notes.append(f"{where}: {at} not read, left out of the tools offered: "
                         f"{problem}"[:400])
            unread += 1
            continue
        out += read
    if unread and unread == len(items):
        notes.append(f"{where}: none of the {unread} tool definitions in {source} could be "
                     "read: the tools offered are unknown")
        return None
    return out


def _vercel_tool(t: Any) -> Any:
    """An ``ai.prompt.tools`` item (``{type: "function", name, description,
    inputSchema | parameters}``) in the OpenAI form; provider tools as they are."""
    if isinstance(t, dict) and t.get("type", "function") == "function":
        return {"type": "function", "function": {
            "name": t.get("name"), "description": t.get("description"),
            "parameters": t.get("inputSchema", t.get("parameters"))}}
    return t


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def _vercel_params(attrs: dict[str, Any], where: str) -> dict[str, Any]:
    """``ai.settings.*`` (``maxOutputTokens``/``maxTokens`` as ``max_tokens``, the rest
    in snake case) and ``ai.prompt.toolChoice``."""
    params: dict[str, Any] = {}
    for key, value in attrs.items():
        if key.startswith("ai.settings.") and "." not in key[len("ai.settings."):]:
            name = _snake(key[len("ai.settings."):])
            params[{"max_output_tokens": "max_tokens"}.get(name, name)] = value
    if attrs.get("ai.prompt.toolChoice") is not None:
        params["tool_choice"] = _json(attrs["ai.prompt.toolChoice"], where,
                                      "ai.prompt.toolChoice")
    return params


# what llm.invocation_parameters may hold that is no request parameter: the model and
# tools (recorded apart), and the fields of a response (the OpenAI Agents SDK records
# the Responses API's whole Response there)
_NOT_PARAMS = {"model", "tools", "id", "object", "created_at", "status", "error",
               "incomplete_details", "output", "output_text", "usage", "billing"}


def span_params(attrs: dict[str, Any], where: str) -> dict[str, Any]:
    """Request parameters the span recorded (``gen_ai.request.*`` without the model,
    OpenInference ``llm.invocation_parameters``, the AI SDK's ``ai.settings.*``)."""
    params: dict[str, Any] = _vercel_params(attrs, where)
    inv = attrs.get("llm.invocation_parameters")
    if isinstance(inv, str):
        decoded = load_json(inv, where, "llm.invocation_parameters")
        if isinstance(decoded, dict):  # (the OpenAI Agents SDK's: the whole Response)
            params.update({k: v for k, v in decoded.items() if k not in _NOT_PARAMS and not (
                k == "instructions" and isinstance(v, str))})  # (in the prompt instead)
    for key, value in attrs.items():
        if key.startswith(("gen_ai.request.", "llm.request.")) and not key.endswith(".model") \
                and not key.startswith("llm.request.functions") \
                and not key.startswith("llm.request.type"):
            params[key.split(".", 2)[2]] = value
    for k in ("temperature", "top_p", "seed", "max_tokens"):
        v = params.get(k)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int | float)):
            raise fail(where, f"request parameter {k} must be a number, got {v!r}")
    return params
