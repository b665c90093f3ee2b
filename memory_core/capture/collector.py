"""The OTLP/HTTP receiver: ``POST /v1/traces`` and ``/v1/logs`` in OTLP/JSON
(``application/json``) or protobuf (``application/x-protobuf``, decoded with
``opentelemetry-proto``), optionally gzip- or deflate-compressed. Each export request is imported
through the importers' OTel entry point and answered with the OTLP response (a partial
success naming why, when it cannot be read).

An SDK exports spans and log records in separate requests, and the openai-v2
instrumentation puts a call's messages in log records while its model and usage stay on
the span: the receiver therefore holds each trace's records (``TraceBuffer``) until the
trace has been quiet for ``settle`` seconds, and imports them together — one run per
call, whatever request each part came in. A trace still busy after ``max_hold`` seconds
is imported in parts; its later calls continue the same thread (importers/stored.py)."""

from __future__ import annotations

import base64
import binascii
import itertools
import json
import threading
import time
import zlib
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from google.protobuf.json_format import MessageToDict
from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from memory_core.capture.server import Recorder
from memory_core.errors import ImportFormatError
from memory_core.importers.jsonvalues import MAX_DEPTH, check_value, loads
from memory_core.importers.otel_read import spans_of
from memory_core.limits import TooLarge, decompress, read_body

Signal = Literal["traces", "logs"]
PROTOBUF = "application/x-protobuf"
ID_KEYS = ("traceId", "spanId", "parentSpanId")
#: an export holding none of these has no GenAI content (semantic conventions, their
#: older event names, OpenInference) and is answered without an import
GENAI_MARKS = ('"gen_ai.', '"llm.', '"openinference.')
#: per signal: request type, response type, the partial-success field counting rejects,
#: and the list of records inside each scope
KINDS: dict[Signal, tuple[type[Message], type[Message], str, tuple[str, str, str]]] = {
    "traces": (trace_service_pb2.ExportTraceServiceRequest,
               trace_service_pb2.ExportTraceServiceResponse, "rejectedSpans",
               ("resourceSpans", "scopeSpans", "spans")),
    "logs": (logs_service_pb2.ExportLogsServiceRequest,
             logs_service_pb2.ExportLogsServiceResponse, "rejectedLogRecords",
             ("resourceLogs", "scopeLogs", "logRecords")),
}


class BadExport(ValueError):
    """An export request that cannot be read; answered with ``status`` (400, or 415
    for a content type OTLP/HTTP does not use)."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def _hex_ids(node: Any) -> Any:
    """Protobuf ids come out of MessageToDict as base64; OTLP/JSON spells them in hex."""
    if isinstance(node, list):
        return [_hex_ids(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for k, v in node.items():
        if k in ID_KEYS and isinstance(v, str):
            try:
                v = base64.b64decode(v, validate=True).hex()
            except (binascii.Error, ValueError):
                pass
        out[k] = _hex_ids(v)
    return out


def decode_export(signal: Signal, body: bytes, content_type: str,
                  encoding: str | None) -> dict[str, Any]:
    """An export request's body as the OTLP/JSON document the importer reads."""
    if encoding in ("gzip", "deflate"):
        try:  # streamed, stopping at MEMWB_MAX_DECOMPRESSED: a small bomb is refused
            body = decompress(body, encoding)
        except TooLarge as e:
            raise BadExport(str(e), status=413) from None
        except (OSError, EOFError, zlib.error) as e:
            raise BadExport(f"body is not valid {encoding}: {e}") from None
    elif encoding not in (None, "", "identity"):  # br, zstd, …: 415, nothing decoded
        raise BadExport(f"unsupported Content-Encoding {encoding!r} (use gzip, deflate or "
                        "none)", status=415)
    if content_type == PROTOBUF:
        try:
            msg = KINDS[signal][0].FromString(body)
        except DecodeError as e:
            raise BadExport(f"body is not an OTLP protobuf {signal} request: {e}") from None
        doc: dict[str, Any] = _hex_ids(MessageToDict(msg))
        return doc
    if content_type == "application/json":
        try:  # NaN, Infinity and 1e999 refused, nesting bounded (MAX_DEPTH)
            parsed = loads(body)
            check_value(parsed, "body", strings=False)
        except RecursionError:
            raise BadExport(f"body is nested more than {MAX_DEPTH} levels deep") from None
        except ImportFormatError as e:  # (check_value's, naming the path: "body: …")
            raise BadExport(str(e)) from None
        except ValueError as e:
            raise BadExport(f"body is not JSON: {e}") from None
        if not isinstance(parsed, dict):
            raise BadExport(f"an OTLP/JSON {signal} request is an object, got "
                            f"{type(parsed).__name__}")
        outer = KINDS[signal][3][0]
        if not isinstance(parsed.get(outer, []), list):
            raise BadExport(f"'{outer}' must be a list, got "
                            f"{type(parsed[outer]).__name__}")
        return parsed
    raise BadExport(f"unsupported Content-Type {content_type!r} (use application/json or "
                    f"{PROTOBUF})", status=415)


def _counted(value: Any) -> int:
    """How many records a list holds; a value of another type counts as one, so an
    export whose ``spans`` is a number is checked (and refused naming it), not taken
    for one with nothing in it."""
    return len(value) if isinstance(value, list) else int(value is not None)


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def count_records(signal: Signal, doc: dict[str, Any]) -> int:
    outer, scope, items = KINDS[signal][3]
    return sum(_counted(s.get(items)) if isinstance(s, dict) else 1
               for r in _listed(doc.get(outer) or [])
               for s in (_listed(r.get(scope) or []) if isinstance(r, dict) else [r]))


def _answer(signal: Signal, content_type: str, rejected: int, reason: str | None) -> Response:
    _, resp_type, field, _ = KINDS[signal]
    partial = {field: str(rejected), "errorMessage": reason} if reason else None
    if content_type == PROTOBUF:
        msg = resp_type()
        if partial is not None:
            ps = getattr(msg, "partial_success")  # noqa: B009 - generated type
            setattr(ps, "rejected_spans" if signal == "traces" else "rejected_log_records",
                    rejected)
            ps.error_message = reason
        return Response(msg.SerializeToString(), media_type=PROTOBUF)
    return JSONResponse({"partialSuccess": partial} if partial else {})


def split_by_trace(signal: Signal, doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The export's records regrouped per trace id, each part a document of its own
    with the resource and scope it came under (records without a trace id: key "")."""
    outer, scope_key, items = KINDS[signal][3]
    parts: dict[str, dict[str, Any]] = {}
    for res in doc.get(outer) or []:
        if not isinstance(res, dict):
            continue
        for scope in res.get(scope_key) or []:
            if not isinstance(scope, dict):
                continue
            for rec in scope.get(items) or []:
                trace = rec.get("traceId") if isinstance(rec, dict) else None
                part = parts.setdefault(trace if isinstance(trace, str) else "", {outer: []})
                holders = part[outer]
                if not holders or holders[-1]["_from"] is not res:
                    holders.append({"_from": res, "resource": res.get("resource") or {},
                                    scope_key: []})
                scopes = holders[-1][scope_key]
                if not scopes or scopes[-1]["_from"] is not scope:
                    scopes.append({"_from": scope, "scope": scope.get("scope") or {},
                                   items: []})
                scopes[-1][items].append(rec)
    return {t: _strip(p) for t, p in parts.items()}


def _strip(node: Any) -> Any:
    if isinstance(node, list):
        return [_strip(v) for v in node]
    if isinstance(node, dict):
        return {k: _strip(v) for k, v in node.items() if k != "_from"}
    return node


@dataclass
class _Held:
    first: float
    last: float
    docs: list[dict[str, Any]] = field(default_factory=list)


class TraceBuffer:
    """Holds each trace's parts until the trace is quiet for ``settle`` seconds (or held
    for ``max_hold``), then hands them to the recorder as one OTLP/JSON document. The
    recorder counts every held trace as an exchange under way, so ``Recorder.drain``
    waits for it; ``close`` imports whatever is held."""

    def __init__(self, recorder: Recorder, *, settle: float = 2.0, max_hold: float = 30.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.recorder, self.settle, self.max_hold, self.clock = (recorder, settle,
                                                                 max_hold, clock)
        self._cv = threading.Condition()
        self._held: dict[str, _Held] = {}
        self._ids = itertools.count(1)
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._stop = False
        self._thread = threading.Thread(target=self._run, name="memwb-collect-buffer",
                                        daemon=True)
        self._thread.start()

    SEEN_CAP = 200_000  # records remembered to drop an exporter's retries

    def _fresh(self, signal: Signal, doc: dict[str, Any]) -> dict[str, Any]:
        """The export without records already received (an exporter retries a request
        it got no answer to): spans by their ids, log records by their content."""
        outer, scope_key, items = KINDS[signal][3]
        for res in doc.get(outer) or []:
            for scope in (res.get(scope_key) or []) if isinstance(res, dict) else []:
                if not isinstance(scope, dict):
                    continue
                kept = []
                for rec in scope.get(items) or []:
                    ident = (f"span:{rec.get('traceId')}:{rec.get('spanId')}"
                             if signal == "traces" and isinstance(rec, dict)
                             else "log:" + json.dumps(rec, sort_keys=True))
                    if ident not in self._seen:
                        self._seen[ident] = None
                        kept.append(rec)
                scope[items] = kept
        while len(self._seen) > self.SEEN_CAP:
            self._seen.popitem(last=False)
        return doc

    def add(self, signal: Signal, doc: dict[str, Any]) -> None:
        now = self.clock()
        with self._cv:
            for trace, part in split_by_trace(signal, self._fresh(signal, doc)).items():
                key = trace or f"untraced-{next(self._ids)}"  # nothing to join it with
                held = self._held.get(key)
                if held is None:
                    held = self._held[key] = _Held(now, now)
                    self.recorder.begin()
                held.docs.append(part)
                held.last = now
            self._cv.notify_all()

    def _due(self, everything: bool) -> list[tuple[str, _Held]]:
        now = self.clock()
        due = [(k, h) for k, h in self._held.items() if everything
               or now - h.last >= self.settle or now - h.first >= self.max_hold]
        for k, _ in due:
            del self._held[k]
        return due

    def _hand_on(self, due: list[tuple[str, _Held]]) -> None:
        for key, held in due:
            merged: dict[str, Any] = {"resourceSpans": [], "resourceLogs": []}
            for d in held.docs:
                for k in merged:
                    merged[k] += d.get(k) or []
            try:
                self.recorder.submit(json.dumps(merged, ensure_ascii=False),
                                     name=f"collect:trace:{key[:32]}:{next(self._ids)}",
                                     format="otel")
            finally:
                self.recorder.end()

    def _run(self) -> None:
        while True:
            with self._cv:
                if self._stop:
                    return
                self._cv.wait(timeout=min(0.1, self.settle / 4) if self._held else None)
                due = self._due(everything=False)
            self._hand_on(due)

    def close(self) -> None:
        """Hand on everything held, and stop."""
        with self._cv:
            self._stop = True
            due = self._due(everything=True)
            self._cv.notify_all()
        self._hand_on(due)
        self._thread.join(timeout=5)


def _readable(signal: Signal, doc: dict[str, Any]) -> str | None:
    """Why the export cannot be read as OTLP (None when it can): found now, so the
    exporter is told, although the import waits for the rest of the trace."""
    try:
        spans_of([(f"{signal} export", doc)])
    except ImportFormatError as e:
        return str(e)
    return None


def collector_app(recorder: Recorder, *, settle: float = 2.0,
                  max_hold: float = 30.0) -> Starlette:
    """The receiver as an ASGI app writing through ``recorder``; see ``TraceBuffer`` for
    ``settle`` and ``max_hold`` (seconds)."""
    buffer: list[TraceBuffer] = []

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        buffer.append(TraceBuffer(recorder, settle=settle, max_hold=max_hold))
        try:
            yield
        finally:
            buffer.pop().close()  # nothing held is lost on shutdown

    async def receive(request: Request, signal: Signal) -> Response:
        ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
        try:
            doc = decode_export(signal, await read_body(request), ctype,
                                request.headers.get("content-encoding"))
        except (TooLarge, BadExport) as e:  # (TooLarge: the body, past MEMWB_MAX_BODY)
            recorder.refused(f"{signal} export", f"not read: {e}")  # (logged, counted)
            return JSONResponse({"code": 3, "message": str(e)},
                                status_code=413 if isinstance(e, TooLarge) else e.status)
        total = count_records(signal, doc)
        text = json.dumps(doc, ensure_ascii=False)
        if total == 0 or not any(mark in text for mark in GENAI_MARKS):
            # an application's other telemetry (HTTP, database spans…): accepted, and
            # nothing in it for us
            return _answer(signal, ctype, 0, None)
        if (reason := _readable(signal, doc)) is not None:
            recorder.refused(f"collect:{signal}", reason)
            return _answer(signal, ctype, total, reason)
        buffer[0].add(signal, doc)
        return _answer(signal, ctype, 0, None)

    async def traces(request: Request) -> Response:
        return await receive(request, "traces")

    async def logs(request: Request) -> Response:
        return await receive(request, "logs")

    return Starlette(routes=[Route("/v1/traces", traces, methods=["POST"]),
                             Route("/v1/logs", logs, methods=["POST"])], lifespan=lifespan)
