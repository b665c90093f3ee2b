"""Reading OTLP exports into plain spans: OTLP/JSON documents, JSON lines of them (the
collector's file exporter) and OTLP protobuf (an SDK's HTTP export body, decoded with
``opentelemetry-proto``), for traces (``resourceSpans``) and logs (``resourceLogs``).

Log records are GenAI events: each is attached to the span it names (trace and span id),
and events whose span is not in the file form a span of their own, so a file holding
only the openai-v2 instrumentation's logs imports too."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from memory_core.importers.common import fail, from_unix
from memory_core.importers.jsonvalues import read_documents

Event = tuple[str, dict[str, Any]]  # (event name, body merged over attributes)


@dataclass
class RawSpan:
    where: str
    trace_id: str
    span_id: str
    parent_id: str
    name: str
    start: datetime | None
    end: datetime | None
    attrs: dict[str, Any]
    events: list[Event] = field(default_factory=list)
    status_error: str | None = None  # the span's error status message, when it failed
    from_logs: bool = False


# -- OTLP values ---------------------------------------------------------------------------
def any_value(v: Any, where: str) -> Any:
    """An OTLP AnyValue (``{"stringValue": ...}`` etc.) as a plain Python value."""
    if not isinstance(v, dict):
        return v
    if "stringValue" in v:
        return v["stringValue"]
    if "intValue" in v:
        try:
            return int(v["intValue"])  # int64 is a JSON string in OTLP/JSON
        except (TypeError, ValueError):
            raise fail(where, f"intValue {v['intValue']!r} is not an integer") from None
    if "doubleValue" in v:
        try:
            return float(v["doubleValue"])
        except (TypeError, ValueError):
            raise fail(where, f"doubleValue {v['doubleValue']!r} is not a number") from None
    if "boolValue" in v:
        return bool(v["boolValue"])
    if "arrayValue" in v:
        return [any_value(x, where) for x in (v["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in v:
        return attributes((v["kvlistValue"] or {}).get("values", []), where)
    if "bytesValue" in v:
        return v["bytesValue"]
    return None


def attributes(raw: Any, where: str) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, list):
        raise fail(where, f"attributes must be a list, got {type(raw).__name__}")
    out: dict[str, Any] = {}
    for a in raw:
        if not isinstance(a, dict) or not isinstance(a.get("key"), str):
            raise fail(where, f"an attribute must be an object with a string 'key', got {a!r}")
        out[a["key"]] = any_value(a.get("value"), f"{where}: attribute {a['key']}")
    return out


def _nanos(value: Any, where: str, what: str) -> datetime | None:
    if value is None or value in (0, "0", ""):
        return None
    return from_unix(value, where, what, scale=1_000_000_000)


def _hex_id(value: Any) -> str:
    """Trace/span ids are hex in OTLP/JSON; protobuf-to-JSON gives base64."""
    if not isinstance(value, str) or not value:
        return ""
    if all(c in "0123456789abcdefABCDEF" for c in value) and len(value) in (16, 32):
        return value.lower()
    try:
        return base64.b64decode(value, validate=True).hex()
    except (binascii.Error, ValueError):
        return value


# -- documents -----------------------------------------------------------------------------
def _span(raw: Any, where_doc: str, order: int) -> RawSpan:
    if not isinstance(raw, dict):
        raise fail(where_doc, f"a span must be an object, got {raw!r}")
    sid = _hex_id(raw.get("spanId")) or f"#{order}"
    where = f"span {sid} ({raw.get('name', '')})"
    events_raw = raw.get("events") or []
    if not isinstance(events_raw, list):
        raise fail(where, "'events' must be a list")
    events: list[Event] = []
    for k, ev in enumerate(events_raw):
        if isinstance(ev, dict):
            ew = f"{where}: event {k} ({ev.get('name')})"
            events.append((str(ev.get("name") or ""), attributes(ev.get("attributes"), ew)))
    status = raw.get("status") or {}
    failed = isinstance(status, dict) and status.get("code") in (2, "STATUS_CODE_ERROR")
    return RawSpan(
        where=where, trace_id=_hex_id(raw.get("traceId")), span_id=sid,
        parent_id=_hex_id(raw.get("parentSpanId")), name=str(raw.get("name") or ""),
        start=_nanos(raw.get("startTimeUnixNano"), where, "startTimeUnixNano"),
        end=_nanos(raw.get("endTimeUnixNano"), where, "endTimeUnixNano"),
        attrs=attributes(raw.get("attributes"), where), events=events,
        status_error=(str(status.get("message") or "the recorded call failed")
                      if failed else None))


def _log_event(raw: Any, where: str) -> tuple[str, str, datetime | None, Event]:
    if not isinstance(raw, dict):
        raise fail(where, f"a log record must be an object, got {raw!r}")
    attrs = attributes(raw.get("attributes"), where)
    name = raw.get("eventName") or attrs.get("event.name") or ""
    body = any_value(raw.get("body"), where)
    merged = dict(attrs)
    if isinstance(body, dict):
        merged.update(body)
    elif body is not None:
        merged["body"] = body
    at = _nanos(raw.get("timeUnixNano") or raw.get("observedTimeUnixNano"), where,
                "timeUnixNano")
    return _hex_id(raw.get("traceId")), _hex_id(raw.get("spanId")), at, (str(name), merged)


def _scoped(container: dict[str, Any], outer: str, inner: str, legacy: str) -> list[Any]:
    items: list[Any] = []
    for scope in container.get(outer) or container.get(legacy) or []:
        if isinstance(scope, dict):
            items.extend(scope.get(inner) or [])
    return items


# -- span objects as SDKs print them ------------------------------------------------------
def is_sdk_span(doc: Any) -> bool:
    """One span as an SDK holds it, written as JSON: the JS SDK's ``ReadableSpan``
    (``name``, ``spanContext`` {traceId, spanId}, ``attributes`` object, ``startTime``
    as hrtime ``[sec, nanos]``) or Python's ``ConsoleSpanExporter`` (``context``
    {trace_id, span_id}, ``parent_id``, ``start_time`` ISO)."""
    return isinstance(doc, dict) and isinstance(doc.get("name"), str) \
        and isinstance(doc.get("attributes"), dict) \
        and isinstance(doc.get("spanContext", doc.get("context")), dict)


def _sdk_time(value: Any, where: str, what: str) -> datetime | None:
    """hrtime ``[seconds, nanos]``, an ISO 8601 string, or epoch seconds/millis."""
    if value is None or value == "":
        return None
    if isinstance(value, list) and len(value) == 2 and all(
            isinstance(x, int) and not isinstance(x, bool) for x in value):
        return _nanos(value[0] * 1_000_000_000 + value[1], where, what)
    if isinstance(value, str):
        try:
            at = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise fail(where, f"{what} {value!r} is not an ISO 8601 time") from None
        return at if at.tzinfo else at.replace(tzinfo=UTC)
    return from_unix(value, where, what)


def _sdk_id(ctx: dict[str, Any], *keys: str) -> str:
    raw = next((ctx[k] for k in keys if isinstance(ctx.get(k), str)), "")
    return _hex_id(raw.removeprefix("0x"))


def _sdk_span(raw: dict[str, Any], order: int) -> RawSpan:
    ctx = raw.get("spanContext", raw.get("context")) or {}
    sid = _sdk_id(ctx, "spanId", "span_id") or f"#{order}"
    where = f"span {sid} ({raw['name']})"
    parent_ctx = raw.get("parentSpanContext")
    parent = _sdk_id(parent_ctx, "spanId") if isinstance(parent_ctx, dict) else \
        _sdk_id(raw, "parentSpanId", "parent_id", "parentId")
    events: list[Event] = []
    for ev in raw.get("events") or []:
        if isinstance(ev, dict):
            attrs = ev.get("attributes")
            events.append((str(ev.get("name") or ""), dict(attrs) if isinstance(attrs, dict)
                           else {}))
    status = raw.get("status") or {}
    failed = isinstance(status, dict) and status.get(
        "code", status.get("status_code")) in (2, "ERROR", "STATUS_CODE_ERROR")
    message = status.get("message") or status.get("description") if failed else None
    return RawSpan(
        where=where, trace_id=_sdk_id(ctx, "traceId", "trace_id"), span_id=sid,
        parent_id=parent, name=raw["name"],
        start=_sdk_time(raw.get("startTime", raw.get("start_time")), where, "startTime"),
        end=_sdk_time(raw.get("endTime", raw.get("end_time")), where, "endTime"),
        attrs=dict(raw["attributes"]), events=events,
        status_error=str(message or "the recorded call failed") if failed else None)


def is_attribute_map(doc: Any) -> bool:
    """One span's attributes as a flat JSON object (``{"gen_ai.input.messages": …}``),
    as instrumentations' tests and span exporters to plain JSON write them."""
    return isinstance(doc, dict) and bool(doc) and "resourceSpans" not in doc and all(
        isinstance(k, str) for k in doc) and any(
        k.startswith(("gen_ai.", "llm.", "openinference.", "ai.")) for k in doc)


def spans_of(docs: list[tuple[str, Any]]) -> list[RawSpan]:
    """Every span of the documents, with log-record events attached, in start order."""
    spans: list[RawSpan] = []
    logs: list[tuple[str, str, datetime | None, Event, str]] = []
    for where, doc in docs:
        if is_attribute_map(doc):
            spans.append(RawSpan(where=f"{where} (span attributes)", trace_id="",
                                 span_id=f"#{len(spans)}", parent_id="", name="",
                                 start=None, end=None, attrs=dict(doc)))
            continue
        if is_sdk_span(doc):
            spans.append(_sdk_span(doc, len(spans)))
            continue
        if not isinstance(doc, dict) or not ("resourceSpans" in doc or "resourceLogs" in doc):
            raise fail(where, "expected an OTLP/JSON object with 'resourceSpans' or "
                              "'resourceLogs', or a span object (name, spanContext or "
                              "context, attributes)")
        for rs in doc.get("resourceSpans") or []:
            for raw in _scoped(rs or {}, "scopeSpans", "spans", "instrumentationLibrarySpans"):
                spans.append(_span(raw, where, len(spans)))
        for rl in doc.get("resourceLogs") or []:
            for raw in _scoped(rl or {}, "scopeLogs", "logRecords",
                               "instrumentationLibraryLogs"):
                lw = f"{where}: log record {len(logs)}"
                logs.append((*_log_event(raw, lw), lw))
    by_id = {(s.trace_id, s.span_id): s for s in spans}
    group = 0  # events with no span context: one group per answer (gen_ai.choice)
    for trace, span_id, at, event, _lw in logs:
        key = (trace, span_id or f"log{group}")
        if not span_id and event[0] == "gen_ai.choice":
            group += 1
        target = by_id.get(key)
        if target is None:
            target = RawSpan(where=f"span {key[1]} (log records)", trace_id=trace,
                             span_id=key[1], parent_id="", name="log records", start=at,
                             end=at, attrs={}, from_logs=True)
            by_id[key] = target
            spans.append(target)
        target.events.append(event)
        if target.from_logs and at is not None:
            target.end = max(target.end or at, at)
            target.start = min(target.start or at, at)
        if target.from_logs:  # a standalone event group: its attributes name the model
            for k, v in event[1].items():
                if k.startswith("gen_ai.") and not isinstance(v, dict | list):
                    target.attrs.setdefault(k, v)
    order = {id(s): i for i, s in enumerate(spans)}
    spans.sort(key=lambda s: (s.start.timestamp() if s.start else 0.0, order[id(s)]))
    return spans


def protobuf_documents(data: bytes) -> list[tuple[str, Any]]:
    """An OTLP protobuf body (traces or logs) as one OTLP/JSON-shaped document."""
    from google.protobuf.json_format import MessageToDict
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.logs.v1.logs_pb2 import LogsData
    from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

    found: list[dict[str, Any]] = []
    for cls in (TracesData, LogsData):
        msg = cls()
        try:
            msg.ParseFromString(data)
        except DecodeError:
            continue
        doc = MessageToDict(msg)
        if doc.get("resourceSpans") or doc.get("resourceLogs"):
            found.append(doc)
    if not found:
        raise fail("file", "binary file is not an OTLP protobuf export (neither "
                           "TracesData/ExportTraceServiceRequest nor LogsData)")
    return [("file", found[0])]


def read_otlp(text: str | None, data: bytes | None = None) -> list[RawSpan]:
    docs = protobuf_documents(data) if data is not None else read_documents(text or "")
    return spans_of(docs)
