"""Reading OpenTelemetry GenAI spans exported as OTLP/JSON: the current attributes
(gen_ai.input/output.messages, system_instructions), the older span events, OpenInference.

Each model-call span becomes an ``Exchange``; a malformed span rejects the whole file
with an ``ImportFormatError`` naming the span id and name."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

from memory_core.importers.common import (
    Exchange,
    ParsedFile,
    SkippedRecord,
    fail,
    openai_message,
    openai_messages,
    parse_json_value,
    split_instructions,
)
from memory_core.models.base import Usage
from memory_core.types import Message, TextPart, ToolCallPart, ToolResultPart

MODEL_CALL_OPERATIONS = {"chat", "text_completion", "generate_content"}
EVENT_ROLES = {"gen_ai.system.message": "system", "gen_ai.user.message": "user",
               "gen_ai.assistant.message": "assistant", "gen_ai.tool.message": "tool"}
OTEL_ROLES = ("system", "user", "assistant", "tool")
_OI_INDEX = re.compile(r"^llm\.(input|output)_messages\.(\d+)\.message\.(.+)$")

Parts = list[TextPart | ToolCallPart | ToolResultPart]


# -- OTLP/JSON values ---------------------------------------------------------------------
def any_value(v: Any) -> Any:
    """An OTLP AnyValue ({"stringValue": ...} etc.) as a plain Python value."""
    if not isinstance(v, dict):
        return v
    if "stringValue" in v:
        return v["stringValue"]
    if "intValue" in v:
        return int(v["intValue"])  # int64 is a JSON string in OTLP/JSON
    if "doubleValue" in v:
        return float(v["doubleValue"])
    if "boolValue" in v:
        return bool(v["boolValue"])
    if "arrayValue" in v:
        return [any_value(x) for x in (v["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in v:
        return attributes((v["kvlistValue"] or {}).get("values", []))
    if "bytesValue" in v:
        return v["bytesValue"]
    return None


def attributes(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, list):
        return {}
    return {a["key"]: any_value(a.get("value")) for a in raw
            if isinstance(a, dict) and isinstance(a.get("key"), str)}


def _nanos(value: Any) -> datetime | None:
    try:
        n = int(value)
    except (TypeError, ValueError):
        return None
    if n <= 0:
        return None
    return datetime.fromtimestamp(n // 1_000_000_000, tz=UTC).replace(
        microsecond=(n % 1_000_000_000) // 1000)


# -- current convention: JSON messages with parts -------------------------------------------
def _json_attr(where: str, attrs: dict[str, Any], key: str) -> Any:
    value = attrs.get(key)
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError as e:
            raise fail(where, f"{key} is not valid JSON: {e}") from None
    return value


def _parts(raw: Any, where: str, notes: list[str]) -> Parts:
    if not isinstance(raw, list):
        raise fail(where, f"'parts' must be a list, got {type(raw).__name__}")
    out: Parts = []
    for j, p in enumerate(raw):
        kind = p.get("type") if isinstance(p, dict) else None
        if kind == "text":
            if not isinstance(p.get("content"), str):
                raise fail(where, f"text part {j} has no string 'content'")
            out.append(TextPart(text=p["content"]))
        elif kind == "tool_call":
            if not isinstance(p.get("name"), str) or not p["name"]:
                raise fail(where, f"tool_call part {j} has no name")
            if not isinstance(p.get("id"), str) or not p["id"]:
                raise fail(where, f"tool_call part {j} ({p['name']}) has no id")
            out.append(ToolCallPart(id=p["id"], name=p["name"],
                                    args=parse_json_value(p.get("arguments") or {})))
        elif kind == "tool_call_response":
            if not isinstance(p.get("id"), str) or not p["id"]:
                raise fail(where, f"tool_call_response part {j} has no id")
            out.append(ToolResultPart(call_id=p["id"], name="", result=p.get("response")))
        elif isinstance(kind, str):
            notes.append(f"{where}: part {j} of type {kind!r} not imported")
        else:
            raise fail(where, f"part {j} has no 'type': {p!r}")
    return out


def _parts_message(raw: Any, where: str, notes: list[str]) -> Message:
    if not isinstance(raw, dict):
        raise fail(where, f"a message must be an object, got {raw!r}")
    role = raw.get("role")
    if role not in OTEL_ROLES:
        raise fail(where, f"unknown role {role!r} (expected one of {', '.join(OTEL_ROLES)})")
    parts = _parts(raw.get("parts"), where, notes)
    meta = {"name": raw["name"]} if isinstance(raw.get("name"), str) else {}
    if all(isinstance(p, TextPart) for p in parts) and len(parts) <= 1:
        text = parts[0].text if parts else ""  # type: ignore[union-attr]
        return Message(role=role, content=text, metadata=meta)
    return Message(role=role, content=parts, metadata=meta)


def _parts_messages(where: str, attrs: dict[str, Any], key: str,
                    notes: list[str]) -> list[Message] | None:
    raw = _json_attr(where, attrs, key)
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise fail(where, f"{key} must be a JSON array of messages")
    return [_parts_message(m, f"{where}: {key}[{i}]", notes) for i, m in enumerate(raw)]


def _system_instructions(where: str, attrs: dict[str, Any],
                         notes: list[str]) -> list[Message]:
    raw = attrs.get("gen_ai.system_instructions")
    if raw is None:
        return []
    parsed = _json_attr(where, attrs, "gen_ai.system_instructions")
    if isinstance(parsed, list):
        parts = _parts(parsed, f"{where}: gen_ai.system_instructions", notes)
        text = "\n".join(p.text for p in parts if isinstance(p, TextPart))
    elif isinstance(parsed, str):
        text = parsed
    else:
        raise fail(where, "gen_ai.system_instructions must be a JSON array of parts")
    return [Message(role="system", content=text)] if text else []


# -- older convention: span events ------------------------------------------------------------
def _event_body(ev_attrs: dict[str, Any]) -> dict[str, Any]:
    """Span events carry the log-event body either as one JSON attribute or flattened
    into attributes; accept both."""
    for key in ("body", "gen_ai.event.content", "event.body"):
        if isinstance(ev_attrs.get(key), str):
            try:
                body = json.loads(ev_attrs[key])
            except ValueError:
                continue
            if isinstance(body, dict):
                return body
    return {k: parse_json_value(v) if k in ("tool_calls", "message") else v
            for k, v in ev_attrs.items()}


def _event_messages(where: str, events: list[Any], notes: list[str]
                    ) -> tuple[list[Message], Message | None, str | None]:
    msgs: list[Message] = []
    reply: Message | None = None
    finish: str | None = None
    for k, ev in enumerate(events):
        if not isinstance(ev, dict):
            continue
        name = ev.get("name")
        body = _event_body(attributes(ev.get("attributes")))
        ew = f"{where}: event {k} ({name})"
        if name in EVENT_ROLES:
            role = body.get("role", EVENT_ROLES[name])
            raw = {"role": role, "content": body.get("content"),
                   "tool_calls": body.get("tool_calls"), "tool_call_id": body.get("id")}
            msgs.append(openai_message(raw, ew, notes))
        elif name == "gen_ai.choice":
            if reply is not None:
                notes.append(f"{ew}: alternative choice not imported")
                continue
            message = body.get("message") or {}
            if not isinstance(message, dict):
                raise fail(ew, "'message' must be an object")
            raw = {"role": message.get("role") or "assistant",
                   "content": message.get("content"), "tool_calls": message.get("tool_calls")}
            reply = openai_message(raw, ew, notes)
            finish = body.get("finish_reason") if isinstance(body.get("finish_reason"),
                                                             str) else None
        elif name == "gen_ai.content.prompt":
            msgs.extend(openai_messages(_json_attr(ew, body, "gen_ai.prompt"), ew, notes))
        elif name == "gen_ai.content.completion":
            done = _json_attr(ew, body, "gen_ai.completion")
            if isinstance(done, list) and done:
                reply = openai_message({"role": "assistant", **done[0]}, ew, notes)
    return msgs, reply, finish


# -- OpenInference ----------------------------------------------------------------------------
def _oi_messages(where: str, attrs: dict[str, Any], side: str,
                 notes: list[str]) -> list[Message]:
    flat: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        m = _OI_INDEX.match(key)
        if m and m.group(1) == side:
            flat.setdefault(int(m.group(2)), {})[m.group(3)] = value
    out: list[Message] = []
    for i in sorted(flat):
        f = flat[i]
        calls: dict[int, dict[str, Any]] = {}
        texts: list[tuple[int, str]] = []
        for key, value in f.items():
            tc = re.match(r"^tool_calls\.(\d+)\.tool_call\.(.+)$", key)
            if tc:
                slot = calls.setdefault(int(tc.group(1)), {"function": {}})
                if tc.group(2) == "id":
                    slot["id"] = value
                elif tc.group(2) == "function.name":
                    slot["function"]["name"] = value
                elif tc.group(2) == "function.arguments":
                    slot["function"]["arguments"] = value
            cm = re.match(r"^contents\.(\d+)\.message_content\.text$", key)
            if cm and isinstance(value, str):
                texts.append((int(cm.group(1)), value))
        content = f.get("content")
        if content is None and texts:
            content = "\n".join(t for _, t in sorted(texts))
        raw = {"role": f.get("role"), "content": content,
               "tool_calls": [calls[j] for j in sorted(calls)] or None,
               "tool_call_id": f.get("tool_call_id"), "name": f.get("name")}
        out.append(openai_message(raw, f"{where}: llm.{side}_messages.{i}", notes))
    return out


def _oi_values(where: str, attrs: dict[str, Any], notes: list[str]
               ) -> tuple[list[Message], Message | None]:
    """``input.value``/``output.value``: a JSON request/response when the mime type says
    so, else plain text as one user message and one assistant reply."""
    msgs: list[Message] = []
    reply: Message | None = None
    inp, out = attrs.get("input.value"), attrs.get("output.value")
    if isinstance(inp, str):
        parsed = parse_json_value(inp) if attrs.get("input.mime_type") == "application/json" \
            else inp
        if isinstance(parsed, dict) and "messages" in parsed:
            msgs = openai_messages(parsed["messages"], f"{where}: input.value", notes)
        elif isinstance(parsed, str):
            msgs = [Message(role="user", content=parsed)]
        else:
            raise fail(where, "input.value is JSON but has no 'messages'")
    if isinstance(out, str):
        parsed = parse_json_value(out) if attrs.get("output.mime_type") == "application/json" \
            else out
        if isinstance(parsed, dict) and isinstance(parsed.get("choices"), list) \
                and parsed["choices"]:
            raw = parsed["choices"][0].get("message", {})
            reply = openai_message({"role": "assistant", **raw}, f"{where}: output.value",
                                   notes)
        elif isinstance(parsed, str):
            reply = Message(role="assistant", content=parsed)
        else:
            raise fail(where, "output.value is JSON but has no 'choices'")
    return msgs, reply


# -- spans ------------------------------------------------------------------------------------
def _is_genai(attrs: dict[str, Any], events: list[Any]) -> bool:
    if any(k.startswith(("gen_ai.", "llm.")) for k in attrs):
        return True
    if attrs.get("openinference.span.kind"):
        return True
    return any(isinstance(e, dict) and str(e.get("name", "")).startswith("gen_ai.")
               for e in events)


def _int_attr(attrs: dict[str, Any], *keys: str) -> int | None:
    for k in keys:
        v = attrs.get(k)
        if isinstance(v, int) and not isinstance(v, bool):
            return v
    return None


def parse_span(span: dict[str, Any], index: int) -> Exchange | SkippedRecord | None:
    sid = span.get("spanId") or "?"
    where = f"span {sid} ({span.get('name', '')})"
    attrs = attributes(span.get("attributes"))
    events = span.get("events") or []
    if not isinstance(events, list):
        raise fail(where, "'events' must be a list")
    if not _is_genai(attrs, events):
        return None
    op = attrs.get("gen_ai.operation.name")
    kind = attrs.get("openinference.span.kind")
    if (op is not None and op not in MODEL_CALL_OPERATIONS) or (kind is not None
                                                                and kind != "LLM"):
        return SkippedRecord(where=where, reason=f"not a model call (operation {op or kind!r})")
    notes: list[str] = []
    instructions = _system_instructions(where, attrs, notes)
    msgs = _parts_messages(where, attrs, "gen_ai.input.messages", notes)
    outs = _parts_messages(where, attrs, "gen_ai.output.messages", notes)
    reply: Message | None = None
    finish: str | None = None
    if outs:
        if len(outs) > 1:
            notes.append(f"{where}: {len(outs) - 1} alternative output message(s) not imported")
        reply = outs[0]
        raw_out = _json_attr(where, attrs, "gen_ai.output.messages")
        if isinstance(raw_out[0].get("finish_reason"), str):
            finish = raw_out[0]["finish_reason"]
    if msgs is None:
        ev_msgs, ev_reply, ev_finish = _event_messages(where, events, notes)
        if ev_msgs or ev_reply:
            msgs, reply, finish = ev_msgs, reply or ev_reply, finish or ev_finish
    if msgs is None or (not msgs and reply is None):
        oi_in = _oi_messages(where, attrs, "input", notes)
        oi_out = _oi_messages(where, attrs, "output", notes)
        if oi_in or oi_out:
            msgs, reply = oi_in, reply or (oi_out[0] if oi_out else None)
        else:
            v_in, v_out = _oi_values(where, attrs, notes)
            if v_in or v_out:
                msgs, reply = v_in, reply or v_out
    if not msgs and not instructions:
        if reply is None:
            return SkippedRecord(where=where, reason="no message content recorded (content "
                                                     "capture was probably off)")
        raise fail(where, "missing messages: the span has an output but no input messages")
    if reply is not None and reply.role != "assistant":
        raise fail(where, f"output message has role {reply.role!r}, expected 'assistant'")
    lead, history = split_instructions(msgs or [])
    status = span.get("status") or {}
    error = None
    if isinstance(status, dict) and status.get("code") in (2, "STATUS_CODE_ERROR"):
        error = str(status.get("message") or "the recorded call failed")
    elif reply is None:
        raise fail(where, "no output message (gen_ai.output.messages, a gen_ai.choice event "
                          "or output.value) and the span did not fail")
    inp_tokens = _int_attr(attrs, "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens",
                           "llm.token_count.prompt")
    out_tokens = _int_attr(attrs, "gen_ai.usage.output_tokens",
                           "gen_ai.usage.completion_tokens", "llm.token_count.completion")
    reasons = attrs.get("gen_ai.response.finish_reasons")
    if finish is None and isinstance(reasons, list) and reasons:
        finish = str(reasons[0])
    temperature = attrs.get("gen_ai.request.temperature")
    model = (attrs.get("gen_ai.response.model") or attrs.get("gen_ai.request.model")
             or attrs.get("llm.model_name"))
    key = attrs.get("gen_ai.conversation.id") or attrs.get("session.id") or span.get("traceId")
    user = attrs.get("enduser.id") or attrs.get("user.id")
    return Exchange(
        where=where, index=index, instructions=instructions + lead, history=history,
        response=reply, thread_key=str(key) if key else None,
        resource_id=str(user) if user else None,
        model=str(model) if model else None,
        usage=Usage(input_tokens=inp_tokens or 0, output_tokens=out_tokens or 0),
        usage_known=inp_tokens is not None and out_tokens is not None,
        finish_reason=finish,
        temperature=float(temperature) if isinstance(temperature, int | float) else None,
        seed=_int_attr(attrs, "gen_ai.request.seed"),
        started_at=_nanos(span.get("startTimeUnixNano")),
        finished_at=_nanos(span.get("endTimeUnixNano")), error=error, notes=notes)


def _documents(text: str) -> list[tuple[str, Any]]:
    """One OTLP/JSON document, or JSON lines of them (what the file exporter writes)."""
    try:
        return [("file", json.loads(text))]
    except ValueError:
        pass
    docs: list[tuple[str, Any]] = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            docs.append((f"line {n}", json.loads(line)))
        except ValueError as e:
            raise fail(f"line {n}", f"invalid JSON: {e}") from None
    return docs


def parse_otlp_json(text: str) -> ParsedFile:
    spans: list[tuple[int, int, dict[str, Any]]] = []
    for where, doc in _documents(text):
        if not isinstance(doc, dict) or not isinstance(doc.get("resourceSpans"), list):
            raise fail(where, "expected an OTLP/JSON object with 'resourceSpans'")
        for rs in doc["resourceSpans"]:
            for ss in (rs or {}).get("scopeSpans") or (rs or {}).get("instrumentationLibrarySpans") \
                    or []:
                for span in (ss or {}).get("spans") or []:
                    if not isinstance(span, dict):
                        raise fail(where, f"a span must be an object, got {span!r}")
                    start = _nanos(span.get("startTimeUnixNano"))
                    spans.append((int(start.timestamp() * 1e6) if start else 0,
                                  len(spans), span))
    # conversation order is time order; the file's order is the exporter's batching
    spans.sort(key=lambda s: (s[0], s[1]))
    exchanges: list[Exchange] = []
    skipped: list[SkippedRecord] = []
    for _, _, span in spans:
        got = parse_span(span, len(exchanges))
        if isinstance(got, Exchange):
            exchanges.append(got)
        elif got is not None:
            skipped.append(got)
    if not exchanges:
        raise fail("file", "no GenAI model-call spans with message content "
                           f"({len(spans)} span(s) read, {len(skipped)} skipped)")
    return ParsedFile(exchanges, skipped)
