"""Issue 13: a call's span and the log records carrying its messages, written by the
OpenTelemetry SDK's own OTLP encoders to two files (traces and logs are exported
separately), import together as one run — from the library and from `memwb import`."""

from __future__ import annotations

from pathlib import Path

import pytest
from opentelemetry import context as otel_context
from opentelemetry._logs import LogRecord
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from memory_core.errors import ImportFormatError
from memory_core.importers import import_otel_files
from memory_core.journal import load_run
from memory_core.storage.duckdb import DuckDBStorage
from memory_core.storage.inmemory import InMemoryStorage
from tests.test_cli import memwb, ok

TURNS = [("Where is my parcel 7781?", "Parcel 7781 is at the depot in Ghent."),
         ("When will it arrive?", "It arrives on Thursday.")]


def _export(tmp_path: Path) -> tuple[Path, Path]:
    """Two chat calls of one conversation, as the openai-v2 instrumentation records them
    by default: model and usage on the span, messages as log records."""
    resource = Resource.create({"service.name": "parcel-agent"})
    spans, logs = InMemorySpanExporter(), InMemoryLogRecordExporter()
    tp = TracerProvider(resource=resource)
    tp.add_span_processor(SimpleSpanProcessor(spans))
    lp = LoggerProvider(resource=resource)
    lp.add_log_record_processor(SimpleLogRecordProcessor(logs))
    tracer = tp.get_tracer("opentelemetry.instrumentation.openai_v2")
    logger = lp.get_logger("opentelemetry.instrumentation.openai_v2")
    history: list[tuple[str, str]] = []
    for n, (q, a) in enumerate(TURNS):
        with tracer.start_as_current_span("chat gpt-4o-mini") as span:
            span.set_attributes({"gen_ai.operation.name": "chat", "gen_ai.system": "openai",
                                 "gen_ai.request.model": "gpt-4o-mini",
                                 "gen_ai.usage.input_tokens": 20 + n,
                                 "gen_ai.usage.output_tokens": 8 + n})
            def emit(name: str, body: dict[str, object]) -> None:
                logger.emit(LogRecord(event_name=name, context=otel_context.get_current(),
                                      body=body, attributes={"gen_ai.system": "openai"}))

            emit("gen_ai.system.message", {"content": "You track parcels."})
            for uq, ua in history:
                emit("gen_ai.user.message", {"content": uq})
                emit("gen_ai.assistant.message", {"content": ua})
            emit("gen_ai.user.message", {"content": q})
            emit("gen_ai.choice", {"index": 0, "finish_reason": "stop",
                                   "message": {"role": "assistant", "content": a}})
        history.append((q, a))
    traces_pb = tmp_path / "traces.pb"
    traces_pb.write_bytes(encode_spans(spans.get_finished_spans()).SerializeToString())
    logs_pb = tmp_path / "logs.pb"
    logs_pb.write_bytes(encode_logs(logs.get_finished_logs()).SerializeToString())
    return traces_pb, logs_pb


def test_spans_and_their_logs_in_two_files_are_one_run_per_call(tmp_path: Path) -> None:
    traces_pb, logs_pb = _export(tmp_path)
    s = InMemoryStorage()
    report = import_otel_files(s, [traces_pb, logs_pb])
    assert len(report.runs_created) == 2 and len(report.threads_created) == 1
    (tid,) = report.threads_created
    assert [m.text() for m in s.memory.get_messages(tid)] == [t for qa in TURNS for t in qa]
    for n, rid in enumerate(report.runs_created):
        data = load_run(s, rid)
        step = data.steps[0]
        assert data.answer == TURNS[n][1]
        assert step.record.usage_known
        assert (step.response.usage.input_tokens, step.response.usage.output_tokens) == (
            20 + n, 8 + n)
    assert import_otel_files(s, [traces_pb, logs_pb]).already_imported
    # the traces file alone has no messages: the error says where they may be
    with pytest.raises(ImportFormatError, match="import the files together"):
        import_otel_files(InMemoryStorage(), [traces_pb])


def test_a_file_that_is_not_otlp_is_named(tmp_path: Path) -> None:
    traces_pb, _ = _export(tmp_path)
    other = tmp_path / "chat.jsonl"
    other.write_text('{"messages": [{"role": "user", "content": "hi"}]}\n')
    with pytest.raises(ImportFormatError, match="chat.jsonl"):
        import_otel_files(InMemoryStorage(), [traces_pb, other])


def test_memwb_import_takes_both_files(tmp_path: Path) -> None:
    traces_pb, logs_pb = _export(tmp_path)
    db = str(tmp_path / "cli.duckdb")
    out = ok(memwb("import", str(traces_pb), str(logs_pb), "--db", db))
    assert "traces.pb + " in out and "2 runs" in out
    s = DuckDBStorage(db)
    try:
        runs = s.runs.list_runs()
        assert len(runs) == 2
        assert all(load_run(s, r.run_id).steps[0].record.usage_known for r in runs)
    finally:
        s.close()


def test_a_span_exported_twice_or_before_it_ended_is_read_once() -> None:
    """The same spans written twice (a file appended to again), and a span exported at
    its start without an end and again when it ended (Microsoft's Agent Framework
    samples): each call is one run, the copies said — they were two runs, and the
    refusal of a file without content listed every span twice."""
    import copy
    import json

    from memory_core.importers import import_text

    doc = json.loads((Path(__file__).parent / "fixtures" / "imports" /
                      "otel_genai.json").read_text(encoding="utf-8"))
    once = InMemoryStorage()
    single = import_text(once, json.dumps(doc), name="once.json")
    started = copy.deepcopy(doc)
    for span in started["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        del span["endTimeUnixNano"]
    twice = InMemoryStorage()
    report = import_text(twice, "\n".join(json.dumps(d) for d in (started, doc, doc)),
                         name="twice.jsonl")
    assert len(report.runs_created) == len(single.runs_created) == 2
    assert [len(twice.memory.get_messages(t)) for t in report.threads_created] == \
        [len(once.memory.get_messages(t)) for t in single.threads_created]
    reasons = [k.reason for k in report.skipped]
    assert sum("exported before it ended" in r for r in reasons) == 4, reasons
    assert sum(r.startswith("the same span as") for r in reasons) == 4, reasons
