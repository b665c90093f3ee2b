"""memwb collect (issue 13.5): the real OpenTelemetry SDK exporter (OTLP/HTTP protobuf)
and plain OTLP/JSON posts reach the receiver, whose GenAI spans become imported runs
the workbench shows (memory_core.analysis.views)."""

from __future__ import annotations

import gzip
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from memory_core.analysis.views import run_view, thread_messages, thread_summaries
from memory_core.capture import LoopbackServer, Recorder, collector_app
from memory_core.capture.collector import decode_export
from memory_core.embedding.hashing import HashingEmbedder
from memory_core.importers import import_file
from memory_core.journal import load_run
from memory_core.storage.duckdb import DuckDBStorage
from memory_core.storage.inmemory import InMemoryStorage

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "imports"
QUESTION = "Which gate does flight LX318 leave from?"
ANSWER = "Flight LX318 leaves from gate B12."


@pytest.fixture
def collector(tmp_path: Path) -> Iterator[tuple[LoopbackServer, Recorder, str]]:
    db = str(tmp_path / "otel.duckdb")
    storage = DuckDBStorage(db)
    recorder = Recorder(storage, embed=HashingEmbedder(64))
    with LoopbackServer(collector_app(recorder, settle=0.3), name="collect") as server:
        yield server, recorder, db
    recorder.close()
    storage.close()


def _chat_span(provider: TracerProvider, question: str, answer: str) -> None:
    tracer = provider.get_tracer("test.genai")
    with tracer.start_as_current_span("invoke_agent"), \
            tracer.start_as_current_span("chat gpt-4o") as span:
        span.set_attributes({
            "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
            "gen_ai.usage.input_tokens": 21, "gen_ai.usage.output_tokens": 9,
            "gen_ai.system_instructions": json.dumps(
                [{"type": "text", "content": "You answer travellers."}]),
            "gen_ai.input.messages": json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": question}]}]),
            "gen_ai.output.messages": json.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": answer}],
                  "finish_reason": "stop"}])})


@pytest.mark.parametrize("compression", [Compression.NoCompression, Compression.Gzip])
def test_the_sdk_exporter_s_spans_become_runs_the_workbench_shows(
        collector: tuple[LoopbackServer, Recorder, str], compression: Compression) -> None:
    server, recorder, db = collector
    provider = TracerProvider(resource=Resource.create({"service.name": "travel-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(
        endpoint=server.url + "/v1/traces", compression=compression, timeout=10)))
    _chat_span(provider, QUESTION, ANSWER)
    _chat_span(provider, "And when does it board?", "Boarding starts at 10:40.")
    provider.shutdown()
    recorder.drain()
    assert not recorder.failures
    s = DuckDBStorage(db)
    try:
        runs = s.runs.list_runs()
        assert len(runs) == 2
        answers = set()
        for r in runs:
            data = load_run(s, r.run_id)
            assert data.memctx is not None and data.memctx.imported
            assert data.steps[0].record.usage_known
            answers.add(data.answer)
            view = run_view(s, r.run_id)
            assert view.lane("instructions").items[0].text == "You answer travellers."
        assert answers == {ANSWER, "Boarding starts at 10:40."}
        threads = thread_summaries(s, None)
        assert len(threads) == 2
        texts = {m.text for t in threads for m in thread_messages(s, t.thread_id).messages}
        assert {QUESTION, ANSWER} <= texts
    finally:
        s.close()


def _post(url: str, body: bytes, ctype: str, encoding: str | None = None
          ) -> tuple[int, bytes]:
    req = urllib.request.Request(url, data=body, method="POST",
                                 headers={"Content-Type": ctype,
                                          **({"Content-Encoding": encoding} if encoding else {})})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_otlp_json_posts_import_like_the_file_does(
        collector: tuple[LoopbackServer, Recorder, str]) -> None:
    server, recorder, db = collector
    raw = (FIX / "otel_genai.json").read_bytes()
    status, body = _post(server.url + "/v1/traces", raw, "application/json")
    assert (status, json.loads(body)) == (200, {})
    # sent again (an exporter retry): nothing new, still a success
    assert _post(server.url + "/v1/traces", gzip.compress(raw), "application/json",
                 "gzip")[0] == 200
    recorder.drain()
    ref = InMemoryStorage()
    expected = import_file(ref, FIX / "otel_genai.json")
    s = DuckDBStorage(db)
    try:
        assert len(s.runs.list_runs()) == len(expected.runs_created)
        assert ({m.text() for t in s.memory.list_threads() for m in s.memory.get_messages(t.id)}
                == {m.text() for t in ref.memory.list_threads()
                    for m in ref.memory.get_messages(t.id)})
    finally:
        s.close()


def test_what_cannot_be_imported_is_a_partial_success_naming_why(
        collector: tuple[LoopbackServer, Recorder, str]) -> None:
    server, recorder, _ = collector
    plain = {"resourceSpans": [{"scopeSpans": [{"spans": [{
        "traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174",
        "name": "chat", "startTimeUnixNano": "1767340800000000000",
        "endTimeUnixNano": "1767340800000000001", "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}]}]}]}]}
    status, body = _post(server.url + "/v1/traces", json.dumps(plain).encode(),
                         "application/json")
    # a span without content may get it from log records exported later: accepted, and
    # once its trace is quiet the recorder names why nothing could be imported
    assert (status, json.loads(body)) == (200, {})
    recorder.drain()
    assert len(recorder.failures) == 1 and "content capture" in recorder.failures[0]
    # an export that is not OTLP inside is refused at once, naming why
    broken = {"resourceSpans": [{"scopeSpans": [{"spans": ["not a span"]}]}],
              "gen_ai.note": 1}
    status, body = _post(server.url + "/v1/traces", json.dumps(broken).encode(),
                         "application/json")
    answer = json.loads(body)
    assert status == 200 and answer["partialSuccess"]["rejectedSpans"] == "1"
    assert "span" in answer["partialSuccess"]["errorMessage"]
    assert len(recorder.failures) == 2
    # other telemetry is accepted and left alone: no import, no complaint
    other = json.loads(json.dumps(plain))
    other["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"] = []
    status, body = _post(server.url + "/v1/traces", json.dumps(other).encode(),
                         "application/json")
    assert (status, json.loads(body)) == (200, {}) and len(recorder.failures) == 2
    # protobuf callers get the protobuf response type
    req = trace_service_pb2.ExportTraceServiceRequest()
    status, body = _post(server.url + "/v1/traces", req.SerializeToString(),
                         "application/x-protobuf")
    assert status == 200
    trace_service_pb2.ExportTraceServiceResponse.FromString(body)
    for payload, ctype, code in [(b"{oops", "application/json", 400),
                                 (b"\xff\x00garbage", "application/x-protobuf", 400),
                                 (b"[]", "application/json", 400),
                                 (b"{}", "text/plain", 415)]:
        status, body = _post(server.url + "/v1/logs", payload, ctype)
        assert status == code and json.loads(body)["message"], payload


def test_protobuf_ids_come_out_in_hex_as_otlp_json_spells_them() -> None:
    req = trace_service_pb2.ExportTraceServiceRequest()
    span = req.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id = bytes.fromhex("5b8efff798038103d269b633813fc60c")
    span.span_id = bytes.fromhex("eee19b7ec3c1b174")
    span.name = "chat"
    doc = decode_export("traces", req.SerializeToString(), "application/x-protobuf", None)
    got = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert got["traceId"] == "5b8efff798038103d269b633813fc60c"
    assert got["spanId"] == "eee19b7ec3c1b174"


def test_the_sdk_log_exporter_is_answered_and_its_records_handed_on(
        collector: tuple[LoopbackServer, Recorder, str]) -> None:
    """GenAI content in OTLP log records (the openai-v2 instrumentation's default): the
    receiver decodes the export and hands the OTLP/JSON document to the importer; the
    exporter always gets an OTLP answer (a partial success when nothing could be read)."""
    from opentelemetry._logs import LogRecord

    server, recorder, db = collector
    exporter = OTLPLogExporter(endpoint=server.url + "/v1/logs", timeout=10)
    provider = LoggerProvider(resource=Resource.create({"service.name": "travel-agent"}))
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    logger = provider.get_logger("test.genai")
    logger.emit(LogRecord(event_name="gen_ai.user.message",
                          body={"content": QUESTION}, attributes={"gen_ai.system": "openai"}))
    provider.shutdown()
    recorder.drain()
    s = DuckDBStorage(db)
    try:
        # either the importer read the record, or the recorder names why it did not
        assert s.runs.list_runs() or recorder.failures
        assert all(f.startswith("collect:") for f in recorder.failures)
    finally:
        s.close()


def test_a_call_whose_messages_are_logs_and_usage_a_span_is_one_run(
        tmp_path: Path) -> None:
    """The openai-v2 instrumentation's default: the chat span carries the model and the
    usage, the messages go out as log records — through two exporters, in separate
    requests, logs first. The receiver holds the trace until it is quiet and imports
    both together: one run with the messages, the model and the recorded usage."""
    from opentelemetry import context as otel_context
    from opentelemetry import trace as otel_trace
    from opentelemetry._logs import LogRecord

    db = str(tmp_path / "joined.duckdb")
    storage = DuckDBStorage(db)
    recorder = Recorder(storage, embed=HashingEmbedder(64))
    with LoopbackServer(collector_app(recorder, settle=0.5), name="collect") as server:
        logs = LoggerProvider(resource=Resource.create({"service.name": "travel-agent"}))
        logs.add_log_record_processor(SimpleLogRecordProcessor(OTLPLogExporter(
            endpoint=server.url + "/v1/logs", timeout=10)))
        spans = TracerProvider(resource=Resource.create({"service.name": "travel-agent"}))
        spans.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(
            endpoint=server.url + "/v1/traces", timeout=10)))
        logger = logs.get_logger("opentelemetry.instrumentation.openai_v2")
        with spans.get_tracer("opentelemetry.instrumentation.openai_v2").start_as_current_span(
                "chat gpt-4o-mini") as span:
            span.set_attributes({"gen_ai.operation.name": "chat", "gen_ai.system": "openai",
                                 "gen_ai.request.model": "gpt-4o-mini",
                                 "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
                                 "gen_ai.usage.input_tokens": 24,
                                 "gen_ai.usage.output_tokens": 11})
            ctx = otel_context.get_current()
            logger.emit(LogRecord(event_name="gen_ai.user.message", context=ctx,
                                  body={"content": QUESTION},
                                  attributes={"gen_ai.system": "openai"}))
            logger.emit(LogRecord(event_name="gen_ai.choice", context=ctx, body={
                "index": 0, "finish_reason": "stop",
                "message": {"role": "assistant", "content": ANSWER}},
                attributes={"gen_ai.system": "openai"}))
            assert otel_trace.get_current_span() is span
        spans.shutdown()  # the span is exported after its logs, in its own request
        logs.shutdown()
        recorder.drain()
    recorder.close()
    try:
        assert not recorder.failures
        runs = storage.runs.list_runs()
        assert len(runs) == 1
        data = load_run(storage, runs[0].run_id)
        assert data.answer == ANSWER
        step = data.steps[0]
        assert step.record.usage_known
        assert (step.response.usage.input_tokens, step.response.usage.output_tokens) == (24, 11)
        assert step.record.model.name == "gpt-4o-mini-2024-07-18"
        view = run_view(storage, runs[0].run_id)
        assert [i.text for i in view.lane("input").items] == [QUESTION]
    finally:
        storage.close()


def test_split_by_trace_keeps_each_record_under_its_resource_and_scope() -> None:
    from memory_core.capture.collector import split_by_trace

    def span(trace: str, sid: str) -> dict[str, str]:
        return {"traceId": trace, "spanId": sid, "name": sid}

    doc = {"resourceSpans": [
        {"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "a"}}]},
         "scopeSpans": [{"scope": {"name": "s1"}, "spans": [span("t1", "1"), span("t2", "2")]},
                        {"scope": {"name": "s2"}, "spans": [span("t1", "3")]}]},
        {"resource": {}, "scopeSpans": [{"scope": {"name": "s3"}, "spans": [span("t2", "4")]}]}]}
    parts = split_by_trace("traces", doc)
    assert sorted(parts) == ["t1", "t2"]
    t1 = parts["t1"]["resourceSpans"]
    assert len(t1) == 1 and [s["scope"]["name"] for s in t1[0]["scopeSpans"]] == ["s1", "s2"]
    assert [[sp["spanId"] for sp in s["spans"]] for s in t1[0]["scopeSpans"]] == [["1"], ["3"]]
    t2 = parts["t2"]["resourceSpans"]
    assert [r["resource"] for r in t2] == [doc["resourceSpans"][0]["resource"], {}]
    assert [[sp["spanId"] for s in r["scopeSpans"] for sp in s["spans"]] for r in t2] == \
        [["2"], ["4"]]
