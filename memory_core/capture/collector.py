"""The OTLP/HTTP receiver: ``POST /v1/traces`` and ``/v1/logs`` in OTLP/JSON
(``application/json``) or protobuf (``application/x-protobuf``, decoded with
``opentelemetry-proto``), optionally gzip-compressed. Each export request is imported
as it arrives through the importers' OTel entry point, then answered with the OTLP
response (a partial success naming why, when nothing of it could be imported)."""

from __future__ import annotations

import asyncio
import base64
import binascii
import gzip
import json
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
    if encoding == "gzip":
        try:
            body = gzip.decompress(body)
        except (OSError, EOFError) as e:
            raise BadExport(f"body is not valid gzip: {e}") from None
    elif encoding not in (None, "", "identity"):
        raise BadExport(f"unsupported Content-Encoding {encoding!r} (use gzip or none)")
    if content_type == PROTOBUF:
        try:
            msg = KINDS[signal][0].FromString(body)
        except DecodeError as e:
            raise BadExport(f"body is not an OTLP protobuf {signal} request: {e}") from None
        doc: dict[str, Any] = _hex_ids(MessageToDict(msg))
        return doc
    if content_type == "application/json":
        try:
            parsed = json.loads(body)
        except ValueError as e:
            raise BadExport(f"body is not JSON: {e}") from None
        if not isinstance(parsed, dict):
            raise BadExport(f"an OTLP/JSON {signal} request is an object, got "
                            f"{type(parsed).__name__}")
        return parsed
    raise BadExport(f"unsupported Content-Type {content_type!r} (use application/json or "
                    f"{PROTOBUF})", status=415)


def count_records(signal: Signal, doc: dict[str, Any]) -> int:
    outer, scope, items = KINDS[signal][3]
    return sum(len(s.get(items) or []) for r in doc.get(outer) or [] if isinstance(r, dict)
               for s in r.get(scope) or [] if isinstance(s, dict))


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


def collector_app(recorder: Recorder) -> Starlette:
    """The receiver as an ASGI app writing through ``recorder``."""
    counter = {"n": 0}

    async def receive(request: Request, signal: Signal) -> Response:
        ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
        try:
            doc = decode_export(signal, await request.body(), ctype,
                                request.headers.get("content-encoding"))
        except BadExport as e:
            return JSONResponse({"code": 3, "message": str(e)}, status_code=e.status)
        total = count_records(signal, doc)
        text = json.dumps(doc, ensure_ascii=False)
        if total == 0 or not any(mark in text for mark in GENAI_MARKS):
            # an application's other telemetry (HTTP, database spans…): accepted, and
            # nothing in it for us
            return _answer(signal, ctype, 0, None)
        counter["n"] += 1
        name = f"collect:{signal}:{counter['n']}"
        outcome = await asyncio.wrap_future(recorder.submit(text, name=name, format="otel"))
        if outcome.report is None:
            return _answer(signal, ctype, total, outcome.reason)
        return _answer(signal, ctype, 0, None)

    async def traces(request: Request) -> Response:
        return await receive(request, "traces")

    async def logs(request: Request) -> Response:
        return await receive(request, "logs")

    return Starlette(routes=[Route("/v1/traces", traces, methods=["POST"]),
                             Route("/v1/logs", logs, methods=["POST"])])
