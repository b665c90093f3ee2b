"""Reading OTLP exports into plain spans: OTLP/JSON documents, JSON lines of them (the
collector's file exporter) and OTLP protobuf (an SDK's HTTP export body, decoded with
``opentelemetry-proto``), for traces (``resourceSpans``) and logs (``resourceLogs``).

Log records are GenAI events: each is attached to the span it names (trace and span id),
and events whose span is not in the file form a span of their own, so a file holding
only the openai-v2 instrumentation's logs imports too."""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from memory_core.errors import ImportFormatError
from memory_core.importers.common import fail, from_unix, iso_time, list_of
from memory_core.importers.jsonvalues import iter_documents
from memory_core.types import Message

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


@dataclass
class SpanContent:
    """A span's messages as one instrumentation wrote them (``otel_content``)."""
    instructions: list[Message]
    messages: list[Message]
    reply: Message | None
    finish: str | None = None
    notes: list[str] = field(default_factory=list)


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
        values = _listed(v["arrayValue"], where, "arrayValue")
        return [any_value(x, where) for x in values]
    if "kvlistValue" in v:
        return attributes(_listed(v["kvlistValue"], where, "kvlistValue"), where)
    if "bytesValue" in v:
        return v["bytesValue"]
    return None


def _listed(value: Any, where: str, name: str) -> list[Any]:
    """An ``arrayValue``/``kvlistValue``'s ``values`` list (none when it is empty)."""
    values = value.get("values") if isinstance(value, dict) else value
    if values is None:
        return []
    if not isinstance(values, list):
        raise fail(where, f"{name} must hold a 'values' list, got {value!r}"[:300])
    return values


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


def _scoped(container: Any, outer: str, inner: str, legacy: str, where: str
            ) -> list[Any]:
    if not isinstance(container, dict):
        raise fail(where, f"a resource entry must be an object, got {container!r}"[:300])
    items: list[Any] = []
    key = outer if container.get(outer) else legacy
    for scope in list_of(container.get(key), where, key):
        if isinstance(scope, dict):
            items.extend(list_of(scope.get(inner), where, inner))
    return items


# -- span objects as SDKs print them ------------------------------------------------------
def is_sdk_span(doc: Any) -> bool:
    """One span as an SDK holds it, written as JSON: the JS SDK's ``ReadableSpan``
    (``name``, ``spanContext`` {traceId, spanId}, ``attributes`` object, ``startTime``
    as hrtime ``[sec, nanos]``) or Python's ``ConsoleSpanExporter`` (``context``
    {trace_id, span_id}, ``parent_id``, ``start_time`` ISO); or with its ids beside its
    name (``trace_id``, ``span_id``, ``parent_span_id``: what exporters to plain JSON
    and span stores write, strands-agents' evals among them)."""
    return isinstance(doc, dict) and isinstance(doc.get("name"), str) \
        and isinstance(doc.get("attributes"), dict) \
        and (isinstance(_context(doc), dict)
             or isinstance(doc.get("span_id", doc.get("spanId")), str | int)
             and isinstance(doc.get("trace_id", doc.get("traceId")), str | int)
             and any(k in doc for k in ("start_time", "startTime")))


def _sdk_time(value: Any, where: str, what: str) -> datetime | None:
    """hrtime ``[seconds, nanos]``, an ISO 8601 string, epoch seconds/millis, or epoch
    nanoseconds (a Python ``ReadableSpan``'s ``start_time``, dumped as it is held)."""
    if value is None or value == "":
        return None
    if type(value) is int and value > 10**17:
        return _nanos(value, where, what)
    if isinstance(value, list) and len(value) == 2 and all(
            isinstance(x, int) and not isinstance(x, bool) for x in value):
        return _nanos(value[0] * 1_000_000_000 + value[1], where, what)
    if isinstance(value, str):
        return iso_time(value, where, what)
    return from_unix(value, where, what)


def _sdk_id(ctx: dict[str, Any], *keys: str) -> str:
    """The id under the first of ``keys`` present: hex text, or the integer a Python
    ``SpanContext`` holds (dumped as it is: any-agent's traces), as its hex."""
    raw = next((ctx[k] for k in keys if isinstance(ctx.get(k), str | int)
                and not isinstance(ctx.get(k), bool)), "")
    if isinstance(raw, int):
        return f"{raw:032x}" if raw >= 1 << 64 else f"{raw:016x}"
    return _hex_id(raw.removeprefix("0x"))


def _flattened(attrs: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Attributes as OpenTelemetry has them — dotted keys, primitive values and lists of
    them — when a tool wrote them nested (Phoenix's span JSON: ``{"llm":
    {"input_messages": [{"message": {...}}]}}``): an object becomes its keys under a dot,
    a list of objects its items by index. OpenTelemetry values are never objects, so
    nothing else changes."""
    out: dict[str, Any] = {}
    for key, value in attrs.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flattened(value, f"{name}."))
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            for i, item in enumerate(value):
                out.update(_flattened(item, f"{name}.{i}."))
        else:
            out[name] = value
    return out


def _context(raw: dict[str, Any]) -> Any:
    """A span object's ids: the JS SDK's ``spanContext`` (``_spanContext`` in a span
    given to ``JSON.stringify`` as it is held, Gemini CLI's telemetry file among them)
    or Python's ``context``."""
    return raw.get("spanContext", raw.get("_spanContext", raw.get("context")))


def _sdk_span(raw: dict[str, Any], order: int) -> RawSpan:
    ctx = _context(raw)
    ctx = ctx if isinstance(ctx, dict) else raw  # (its ids beside its name)
    sid = _sdk_id(ctx, "spanId", "span_id") or f"#{order}"
    where = f"span {sid} ({raw['name']})"
    # the JS SDK's parentSpanContext; a Python SpanContext dumped as held ("parent")
    parent_ctx = raw.get("parentSpanContext", raw.get("parent"))
    parent = _sdk_id(parent_ctx, "spanId", "span_id") if isinstance(parent_ctx, dict) \
        else _sdk_id(raw, "parentSpanId", "parent_id", "parentId", "parent_span_id")
    events: list[Event] = []
    for ev in list_of(raw.get("events", raw.get("span_events")), where, "events"):
        if isinstance(ev, dict):
            attrs = ev.get("attributes")
            events.append((str(ev.get("name") or ""), dict(attrs) if isinstance(attrs, dict)
                           else {}))
    status = raw.get("status") or {"status_code": raw.get("status_code"),  # (Phoenix's)
                                    "message": raw.get("status_message")}
    failed = isinstance(status, dict) and status.get(
        "code", status.get("status_code")) in (2, "ERROR", "STATUS_CODE_ERROR")
    message = status.get("message") or status.get("description") if failed else None
    return RawSpan(
        where=where, trace_id=_sdk_id(ctx, "traceId", "trace_id"), span_id=sid,
        parent_id=parent, name=raw["name"],
        start=_sdk_time(raw.get("startTime", raw.get("start_time")), where, "startTime"),
        end=_sdk_time(raw.get("endTime", raw.get("end_time")), where, "endTime"),
        attrs=_flattened(raw["attributes"]), events=events,
        status_error=str(message or "the recorded call failed") if failed else None)


# -- other tracers' JSON: Jaeger, Zipkin v2, Go's stdouttrace -----------------------------
# Attributes that may hold a conversation (not its usage, model or settings): kept as the
# text they are when a tracer wrote every value as a string.
_CONTENT_LIKE = re.compile(r"messages|prompt|completion|content|choice|instructions|"
                           r"\.text$|\.object$|toolCalls|(input|output)\.value", re.I)
_NOT_CONTENT = re.compile(r"tokens|usage|count|mime_type|\.tools|toolChoice|functions|"
                          r"template\.variables", re.I)
# identifiers are text in OpenTelemetry's conventions (gen_ai.conversation.id,
# session.id, user.id, gen_ai.response.id, gen_ai.tool.call.id…), however they read:
# a conversation "4e5" is not the number 400000.0, nor an id "0042" the number 42
_ID_KEY = re.compile(r"(^|[._])id$", re.I)
_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
# Python's Zipkin exporter cuts every tag value (and event attribute) to this many
# characters unless told otherwise (``max_tag_value_length``)
ZIPKIN_CUT = 128


def is_content_key(key: str) -> bool:
    return bool(_CONTENT_LIKE.search(key)) and not _NOT_CONTENT.search(key)


def _untyped(key: str, value: Any, *, scalars: bool) -> Any:
    """A value a tracer wrote as a string, typed again as OpenTelemetry had it, which
    the Jaeger and Zipkin mappings (OTel's "mapping to non-OTLP formats") lose: an array
    attribute became its JSON text (both), and with ``scalars`` (Zipkin, whose tags are
    all strings) a number or boolean became its text too. Content-like attributes stay
    the text they are: a message that reads ``[1, 2]`` or ``42`` is text."""
    if not isinstance(value, str) or is_content_key(key):
        return value
    if value.startswith("[") and value.endswith("]"):
        try:
            parsed = json.loads(value)
        except ValueError:
            return value
        if isinstance(parsed, list) and all(
                x is None or isinstance(x, str | int | float | bool) for x in parsed):
            return parsed
        return value
    if scalars and not _ID_KEY.search(key):
        if value in ("true", "false"):
            return value == "true"
        if _NUMBER.fullmatch(value):
            number = float(value)
            return int(value) if number.is_integer() and "." not in value \
                and "e" not in value.lower() else number
    return value


def is_jaeger(doc: Any) -> bool:
    """Jaeger's JSON (its UI's "Download JSON", ``/api/traces``): ``{"data": [trace]}``
    or one trace, ``{"traceID", "spans": [...], "processes"}``."""
    if isinstance(doc, dict) and isinstance(doc.get("data"), list) and doc["data"]:
        return is_jaeger(doc["data"][0])
    return isinstance(doc, dict) and isinstance(doc.get("spans"), list) and (
        "traceID" in doc or "processes" in doc) and all(
        isinstance(s, dict) and "spanID" in s for s in doc["spans"][:1])


def is_zipkin_span(doc: Any) -> bool:
    """A Zipkin v2 span (``/api/v2/spans``, its UI's download: a JSON array of them)."""
    return isinstance(doc, dict) and isinstance(doc.get("traceId"), str) \
        and isinstance(doc.get("id"), str) and "attributes" not in doc \
        and ("localEndpoint" in doc or "tags" in doc or "annotations" in doc
             or "timestamp" in doc)


def is_go_span(doc: Any) -> bool:
    """A span as Go's stdouttrace exporter prints it (``Name``, ``SpanContext``)."""
    return isinstance(doc, dict) and isinstance(doc.get("Name"), str) \
        and isinstance(doc.get("SpanContext"), dict)


def is_span_document(doc: Any) -> bool:
    """A document the span readers take besides OTLP: one span's attributes, a span
    object as an SDK or tracer writes it, or a list of those (bare, or a trace object's
    ``spans``), or a Jaeger export."""
    if isinstance(doc, list):
        return bool(doc) and _is_span_object(doc[0])
    return is_attribute_map(doc) or _is_span_object(doc) or is_jaeger(doc) or \
        _is_span_list(doc)


def _is_span_list(doc: Any) -> bool:
    """A trace object holding its span objects under ``spans`` (any-agent's
    ``AgentTrace``: ``{"spans": [...], "final_output": ...}``), or span objects grouped
    under names (OpenInference's fixtures: ``{"ai.generateText": [spans], …}``)."""
    if not isinstance(doc, dict) or not doc:
        return False
    if isinstance(doc.get("spans"), list):
        return bool(doc["spans"]) and _is_span_object(doc["spans"][0])
    return all(isinstance(v, list) and v and _is_span_object(v[0]) for v in doc.values())


def _listed_spans(doc: dict[str, Any]) -> list[Any]:
    """The span objects of a ``_is_span_list`` document, in its order."""
    if isinstance(doc.get("spans"), list):
        return list(doc["spans"])
    return [span for group in doc.values() for span in group]


def is_otlp_span(doc: Any) -> bool:
    """One span as OTLP/JSON writes it inside ``scopeSpans`` (``name``, ``attributes``
    as a list of ``{key, value}``), on its own: envoyproxy/ai-gateway's test spans. Its
    ids are not needed (a span numbered by its place has none)."""
    attrs = doc.get("attributes") if isinstance(doc, dict) else None
    return isinstance(doc, dict) and isinstance(doc.get("name"), str) \
        and isinstance(attrs, list) and bool(attrs) \
        and all(isinstance(a, dict) and "key" in a for a in attrs)


def _is_span_object(doc: Any) -> bool:
    return is_sdk_span(doc) or is_zipkin_span(doc) or is_go_span(doc) or is_otlp_span(doc)


def _micros(value: Any, where: str, what: str) -> datetime | None:
    if value is None or value in (0, "0", ""):
        return None
    return from_unix(value, where, what, scale=1_000_000)


def _after(start: datetime | None, micros: Any) -> datetime | None:
    if start is None or isinstance(micros, bool) or not isinstance(micros, int | float):
        return start
    return start + timedelta(microseconds=micros)


def _jaeger_value(tag: Any, where: str) -> tuple[str, Any]:
    if not isinstance(tag, dict) or not isinstance(tag.get("key"), str):
        raise fail(where, f"a tag must be an object with a string 'key', got {tag!r}")
    kind, value = str(tag.get("type") or "string").lower(), tag.get("value")
    value = "" if value is None else value
    try:
        if kind == "int64" and not isinstance(value, bool):
            value = int(value)
        elif kind == "float64" and not isinstance(value, bool):
            value = float(value)
        elif kind == "bool" and isinstance(value, str):
            value = value == "true"
    except (TypeError, ValueError):
        raise fail(where, f"tag {tag['key']} of type {kind} has the value {value!r}") \
            from None
    return tag["key"], _untyped(tag["key"], value, scalars=False)


def _keyed(raw: Any, where: str, what: str,
           pair: Callable[[Any, str], tuple[str, Any]]) -> dict[str, Any]:
    """A list of key-value objects (``what``, e.g. Jaeger's ``tags``) as a dict."""
    if raw is None:
        return {}
    if not isinstance(raw, list):
        raise fail(where, f"'{what}' must be a list, got {type(raw).__name__}")
    return dict(pair(item, where) for item in raw)


def _jaeger_tags(raw: Any, where: str) -> dict[str, Any]:
    return _keyed(raw, where, "tags", _jaeger_value)


def _status(attrs: dict[str, Any]) -> str | None:
    """The error of a span whose status a tracer wrote as tags (``otel.status_code``,
    ``otel.status_description``, and Jaeger's ``error`` flag or Zipkin's ``error``
    message)."""
    code = str(attrs.get("otel.status_code") or "").upper()
    flag = attrs.get("error")
    if code != "ERROR" and flag is not True and not (isinstance(flag, str) and flag
                                                     and code != "OK"):
        return None
    message = attrs.get("otel.status_description") or (flag if isinstance(flag, str)
                                                       else None)
    return str(message or "the recorded call failed")


def _jaeger_spans(doc: dict[str, Any], where_doc: str, first: int) -> list[RawSpan]:
    traces = doc["data"] if isinstance(doc.get("data"), list) else [doc]
    out: list[RawSpan] = []
    for trace in traces:
        spans = list_of(trace.get("spans"), where_doc, "spans") \
            if isinstance(trace, dict) else []
        for raw in spans:
            if not isinstance(raw, dict):
                raise fail(where_doc, f"a Jaeger span must be an object, got {raw!r}")
            sid = _hex_id(raw.get("spanID")) or f"#{first + len(out)}"
            where = f"span {sid} ({raw.get('operationName', '')})"
            attrs = _jaeger_tags(raw.get("tags"), where)
            # the parent is the CHILD_OF reference (links come after it as FOLLOWS_FROM)
            parent = next((r for r in list_of(raw.get("references"), where, "references")
                           if isinstance(r, dict) and r.get("refType") == "CHILD_OF"), {})
            events: list[Event] = []
            for k, log in enumerate(list_of(raw.get("logs"), where, "logs")):
                if not isinstance(log, dict):
                    raise fail(where, f"log {k} must be an object, got {log!r}"[:300])
                fields = _jaeger_tags(log.get("fields"), f"{where}: log {k}")
                events.append((str(fields.pop("event", "")), fields))
            start = _micros(raw.get("startTime"), where, "startTime")
            out.append(RawSpan(
                where=where, trace_id=_hex_id(raw.get("traceID")), span_id=sid,
                parent_id=_hex_id(raw.get("parentSpanID") or parent.get("spanID")),
                name=str(raw.get("operationName") or ""), start=start,
                end=_after(start, raw.get("duration")), attrs=attrs, events=events,
                status_error=_status(attrs)))
    return out


def _zipkin_event(value: Any) -> Event:
    """An annotation: Python's exporter writes ``{"<event name>": {attributes}}`` as
    JSON, others the event's name alone."""
    if isinstance(value, str) and value.startswith("{"):
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and len(parsed) == 1:
            (name, attrs), = parsed.items()
            if isinstance(attrs, dict):
                return str(name), dict(attrs)
    return str(value or ""), {}


def _check_uncut(key: str, value: Any, where: str) -> None:
    """A JSON value exactly as long as Python's Zipkin exporter cuts tags, that no longer
    parses, was cut by it: the rest of the recording is lost."""
    if not isinstance(value, str) or len(value) != ZIPKIN_CUT or value[:1] not in "[{":
        return
    try:
        json.loads(value)
    except ValueError:
        raise fail(where, f"{key} is cut at {ZIPKIN_CUT} characters and is no longer "
                          "JSON: OpenTelemetry's Zipkin exporter cuts every tag value to "
                          f"{ZIPKIN_CUT} characters unless told otherwise; export the "
                          "spans again with a larger max_tag_value_length (or as OTLP)") \
            from None


def _zipkin_span(raw: dict[str, Any], order: int) -> RawSpan:
    sid = _hex_id(raw.get("id")) or f"#{order}"
    where = f"span {sid} ({raw.get('name', '')})"
    tags = raw.get("tags") or {}
    if not isinstance(tags, dict):
        raise fail(where, f"'tags' must be an object, got {type(tags).__name__}")
    attrs = {str(k): _untyped(str(k), v, scalars=True) for k, v in tags.items()}
    events = [_zipkin_event((a or {}).get("value"))
              for a in list_of(raw.get("annotations"), where, "annotations")
              if isinstance(a, dict)]
    for key, value in [*attrs.items(), *(kv for _, ev in events for kv in ev.items())]:
        _check_uncut(key, value, where)
    start = _micros(raw.get("timestamp"), where, "timestamp")
    return RawSpan(
        where=where, trace_id=_hex_id(raw.get("traceId")), span_id=sid,
        parent_id=_hex_id(raw.get("parentId")), name=str(raw.get("name") or ""),
        start=start, end=_after(start, raw.get("duration")), attrs=attrs, events=events,
        status_error=_status(attrs))


def _go_value(raw: Any, where: str) -> tuple[str, Any]:
    if not isinstance(raw, dict) or not isinstance(raw.get("Key"), str):
        raise fail(where, f"an attribute must be an object with a string 'Key', got {raw!r}")
    value = raw.get("Value")
    return raw["Key"], value.get("Value") if isinstance(value, dict) else value


def _go_attrs(raw: Any, where: str) -> dict[str, Any]:
    return _keyed(raw, where, "Attributes", _go_value)


def _go_time(value: Any, where: str, what: str) -> datetime | None:
    if isinstance(value, str) and value.startswith("0001-01-01"):
        return None  # Go's zero time: not set
    return _sdk_time(value, where, what)


def _go_span(raw: dict[str, Any], order: int) -> RawSpan:
    ctx = raw["SpanContext"]
    sid = _sdk_id(ctx, "SpanID") or f"#{order}"
    where = f"span {sid} ({raw['Name']})"
    parent: Any = raw.get("Parent")
    parent_id = _sdk_id(parent, "SpanID") if isinstance(parent, dict) else ""
    events: list[Event] = []
    for k, ev in enumerate(list_of(raw.get("Events"), where, "Events")):
        if isinstance(ev, dict):
            events.append((str(ev.get("Name") or ""),
                           _go_attrs(ev.get("Attributes"), f"{where}: event {k}")))
    status: Any = raw.get("Status")
    status = status if isinstance(status, dict) else {}
    failed = str(status.get("Code") or "").lower() == "error"
    return RawSpan(
        where=where, trace_id=_sdk_id(ctx, "TraceID"), span_id=sid,
        parent_id="" if parent_id.strip("0") == "" else parent_id, name=raw["Name"],
        start=_go_time(raw.get("StartTime"), where, "StartTime"),
        end=_go_time(raw.get("EndTime"), where, "EndTime"),
        attrs=_go_attrs(raw.get("Attributes"), where), events=events,
        status_error=str(status.get("Description") or "the recorded call failed")
        if failed else None)


def _span_objects(doc: Any, where: str, first: int) -> list[RawSpan] | None:
    """The spans of a non-OTLP document, or None when it is none of those shapes."""
    if is_jaeger(doc):
        return _jaeger_spans(doc, where, first)
    if _is_span_list(doc):
        doc = _listed_spans(doc)
    items = doc if isinstance(doc, list) and doc and _is_span_object(doc[0]) else [doc]
    out: list[RawSpan] = []
    for item in items:
        n = first + len(out)
        if is_sdk_span(item):
            out.append(_sdk_span(item, n))
        elif is_zipkin_span(item):
            out.append(_zipkin_span(item, n))
        elif is_go_span(item):
            out.append(_go_span(item, n))
        elif is_otlp_span(item):
            out.append(_span(item, where, n))
        elif items is doc:
            raise fail(where, f"item {len(out)} is not a span object like the first: "
                              f"{str(item)[:120]}")
        else:
            return None
    return out


def is_attribute_map(doc: Any) -> bool:
    """One span's attributes as a flat JSON object (``{"gen_ai.input.messages": …}``),
    as instrumentations' tests and span exporters to plain JSON write them."""
    return isinstance(doc, dict) and bool(doc) and "resourceSpans" not in doc and all(
        isinstance(k, str) for k in doc) and any(
        k.startswith(("gen_ai.", "llm.", "openinference.", "ai.")) for k in doc) \
        and not _is_span_list(doc)


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
        objects = _span_objects(doc, where, len(spans))
        if objects is not None:
            spans.extend(objects)
            continue
        if not isinstance(doc, dict) or not ("resourceSpans" in doc or "resourceLogs" in doc):
            raise fail(where, "expected an OTLP/JSON object with 'resourceSpans' or "
                              "'resourceLogs', a span object (an SDK's: name, "
                              "spanContext or context, attributes; Zipkin's: traceId, "
                              "id; Go's: Name, SpanContext) or a Jaeger export (data, "
                              "spans)")
        for rs in list_of(doc.get("resourceSpans"), where, "resourceSpans"):
            for raw in _scoped(rs or {}, "scopeSpans", "spans", "instrumentationLibrarySpans",
                               where):
                spans.append(_span(raw, where, len(spans)))
        for rl in list_of(doc.get("resourceLogs"), where, "resourceLogs"):
            for raw in _scoped(rl or {}, "scopeLogs", "logRecords",
                               "instrumentationLibraryLogs", where):
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
        try:  # text with a bad byte in it is named as that, not as a binary file
            data.decode("utf-8")
        except UnicodeDecodeError as e:
            bad = data[e.start:e.start + 1].hex()
            raise fail("file", "not an OTLP protobuf export, nor UTF-8 text (byte "
                               f"0x{bad} at offset {e.start} is not UTF-8)") from None
        raise fail("file", "binary file is not an OTLP protobuf export (neither "
                           "TracesData/ExportTraceServiceRequest nor LogsData)")
    return [("file", found[0])]


def read_otlp(text: str | None, data: bytes | None = None) -> list[RawSpan]:
    """The spans of an export; ImportFormatError for any line that is no JSON."""
    spans, failed = read_otlp_lines(text, data)
    if failed:
        raise failed[0][1]
    return spans


def read_otlp_lines(text: str | None, data: bytes | None = None
                    ) -> tuple[list[RawSpan], list[tuple[str, ImportFormatError]]]:
    """The spans of an export, and the lines of a JSON-lines export that are no JSON
    (a file cut off while a line was written), with their errors; ImportFormatError
    when no line is."""
    if data is not None:
        return spans_of(protobuf_documents(data)), []
    docs: list[tuple[str, Any]] = []
    failed: list[tuple[str, ImportFormatError]] = []
    for where, doc in iter_documents(text or "", keep_going=True):
        if isinstance(doc, ImportFormatError):
            failed.append((where, doc))
        else:
            docs.append((where, doc))
    if not docs:
        raise failed[0][1]
    return spans_of(docs), failed
