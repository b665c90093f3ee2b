"""Spans exported by other tracers import as their OTLP originals do: Zipkin v2 JSON
(written by OpenTelemetry's own Zipkin encoder, tests/fixtures/imports/tracers), Jaeger's
JSON (its UI's download, ``/api/traces``) and Go's stdouttrace span objects — with the
values those formats flatten (arrays as JSON text, Zipkin's numbers as text) typed
again, parents, status and events read, and a value Zipkin's exporter cut named."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memory_core.errors import ImportFormatError
from memory_core.importers import detect_format, import_file, import_text
from memory_core.importers.otel_read import RawSpan, read_otlp, spans_of
from memory_core.storage.inmemory import InMemoryStorage

FIX = Path(__file__).parent / "fixtures" / "imports"
TRACERS = FIX / "tracers"
SOURCES = {  # as tests/fixtures/imports/tracers/make_zipkin.py made them
    "zipkin-otel_genai.json": "otel_genai.json",
    "zipkin-otel_events.json": "otel_events.json",
    "zipkin-openinference_tool_calls.json":
        "real/openinference-openinference_client_span_tool_calls.json",
    "zipkin-vercel-ai-generateText-doGenerate.json": "real/vercel-ai-generateText-doGenerate.json",
}
OTLP_SOURCES = ["otel_genai.json", "otel_events.json", "otel_openinference.json",
                "real/openinference-openinference_client_span_tool_calls.json",
                "real/vercel-all-spans.json"]


def _summary(s: InMemoryStorage, report: Any, times: bool) -> tuple[Any, ...]:
    threads = [[m.as_message().model_dump() for m in s.memory.get_messages(t)]
               for t in report.threads_created]
    runs = []
    for rid in report.runs_created:
        step, memctx = s.runs.get(f"{rid}:step:0"), s.runs.get(f"{rid}:memctx")
        run = s.runs.require_run(rid)
        runs.append((run.status, run.error, run.started_at if times else None,
                     step and (step["model"], step["response"], step.get("tools"),
                               step.get("params")),
                     memctx and memctx.get("unknown_fields")))
    return threads, runs, [(k.where, k.reason) for k in report.skipped]


def _imported(path: Path | None = None, *, text: str | None = None,
              times: bool = True) -> tuple[Any, ...]:
    s = InMemoryStorage()
    report = import_file(s, path) if path is not None else import_text(s, text or "",
                                                                       name="spans.json")
    assert report.format == "otel"
    return _summary(s, report, times)


# -- Zipkin: OpenTelemetry's encoder's own output ------------------------------------------
@pytest.mark.parametrize("name", sorted(SOURCES))
def test_zipkin_export_imports_as_its_source(name: str) -> None:
    text = (TRACERS / name).read_text()
    assert detect_format(text) == "otel"
    # a bare attribute map has no times: the encoder's spans were given some
    times = "openinference" not in name
    got = _imported(TRACERS / name, times=times)
    want = _imported(FIX / SOURCES[name], times=times)
    assert got == want and got[1]


def test_zipkin_tags_are_typed_again_but_content_stays_text() -> None:
    spans = spans_of([("file", json.loads((TRACERS / "zipkin-otel_genai.json").read_text()))])
    chat = spans[0].attrs
    # numbers, which the encoder wrote as text, are numbers again
    assert chat["gen_ai.usage.input_tokens"] == 52
    assert chat["gen_ai.request.temperature"] == 0.2
    # a conversation's JSON stays the text the readers parse
    assert isinstance(chat["gen_ai.input.messages"], str)
    span = {"traceId": "0af7651916cd43dd8448eb211c80319c", "id": "b7ad6b7169203331",
            "name": "chat", "timestamp": 1767427200000000, "duration": 5,
            "tags": {"gen_ai.response.finish_reasons": '["stop"]', "gen_ai.prompt.0.content": "42",
                     "gen_ai.completion.0.content": '["a", "b"]', "llm.is_streaming": "true",
                     "otel.status_code": "ERROR", "error": "rate limited"}}
    [raw] = spans_of([("item 0", span)])
    assert raw.attrs["gen_ai.response.finish_reasons"] == ["stop"]
    assert raw.attrs["llm.is_streaming"] is True
    assert raw.attrs["gen_ai.prompt.0.content"] == "42"  # a message is text
    assert raw.attrs["gen_ai.completion.0.content"] == '["a", "b"]'
    assert raw.status_error == "rate limited"
    assert (raw.end - raw.start).microseconds == 5  # type: ignore[operator]


def test_zipkin_ids_that_read_as_numbers_stay_text() -> None:
    # ids are text in OpenTelemetry: a conversation "4e5" became the thread "400000.0",
    # a user "12e9999" the resource "inf", an id "0042" would have been 42
    spans = json.loads((TRACERS / "zipkin-otel_genai.json").read_text())
    for span in spans:
        if "gen_ai.conversation.id" in span["tags"]:
            span["tags"].update({"gen_ai.conversation.id": "4e5", "user.id": "12e9999",
                                 "gen_ai.response.id": "1001", "session.id": "7"})
    [raw, *_] = spans_of([("file", spans)])
    assert [raw.attrs[k] for k in ("gen_ai.conversation.id", "user.id",
                                   "gen_ai.response.id", "session.id")] == [
        "4e5", "12e9999", "1001", "7"]
    assert raw.attrs["gen_ai.usage.input_tokens"] == 52  # numbers are still numbers
    s = InMemoryStorage()
    report = import_text(s, json.dumps(spans), name="z.json")
    assert report.threads_created == ["4e5"]
    assert {s.runs.require_run(r).resource_id for r in report.runs_created} == {"12e9999"}


def test_a_value_zipkins_exporter_cut_is_named() -> None:
    with pytest.raises(ImportFormatError, match=r"zipkin-cut128-otel_genai\.json.*span "
                       r"eee19b7ec3c1b174.*gen_ai\.(input|output)\.messages is cut at 128 "
                       r"characters.*max_tag_value_length"):
        import_file(InMemoryStorage(), TRACERS / "zipkin-cut128-otel_genai.json")


def test_zipkin_annotations_are_events() -> None:
    """Python's exporter writes an event as ``{"name": {attributes}}``; others write
    the name alone."""
    span = {"traceId": "0af7651916cd43dd8448eb211c80319c", "id": "b7ad6b7169203331",
            "name": "chat", "timestamp": 1767427200000000, "annotations": [
                {"timestamp": 1767427200000001,
                 "value": json.dumps({"gen_ai.user.message": {"content": "hi"}})},
                {"timestamp": 1767427200000002, "value": "retry"}]}
    [raw] = spans_of([("item 0", span)])
    assert raw.events == [("gen_ai.user.message", {"content": "hi"}), ("retry", {})]


# -- Jaeger and Go: written by the published mappings -------------------------------------
def _jaeger_tag(key: str, value: Any) -> dict[str, Any]:
    """OTel's mapping to Jaeger: primitives keep their type, arrays become JSON text."""
    if isinstance(value, bool):
        return {"key": key, "type": "bool", "value": value}
    if isinstance(value, int):
        return {"key": key, "type": "int64", "value": value}
    if isinstance(value, float):
        return {"key": key, "type": "float64", "value": value}
    if isinstance(value, list | dict):
        return {"key": key, "type": "string", "value": json.dumps(value)}
    return {"key": key, "type": "string", "value": value}


def _us(at: Any) -> int:
    return round(at.timestamp() * 1_000_000)


def to_jaeger(spans: list[RawSpan]) -> dict[str, Any]:
    out = []
    for k, s in enumerate(spans):
        start = _us(s.start) if s.start else 1_767_427_200_000_000 + k
        tags = [_jaeger_tag(key, v) for key, v in s.attrs.items()]
        tags.append({"key": "span.kind", "type": "string", "value": "client"})
        tags.append({"key": "otel.scope.name", "type": "string", "value": "instr"})
        if s.status_error:
            tags += [{"key": "otel.status_code", "type": "string", "value": "ERROR"},
                     {"key": "otel.status_description", "type": "string",
                      "value": s.status_error},
                     {"key": "error", "type": "bool", "value": True}]
        refs = [{"refType": "CHILD_OF", "traceID": s.trace_id or "1" * 32,
                 "spanID": s.parent_id}] if s.parent_id else []
        # a link: after the parent, never taken for it
        refs.append({"refType": "FOLLOWS_FROM", "traceID": "2" * 32, "spanID": "3" * 16})
        out.append({
            "traceID": s.trace_id or "1" * 32, "spanID": s.span_id.lstrip("#").rjust(16, "0"),
            "flags": 1, "operationName": s.name, "references": refs, "startTime": start,
            "duration": (_us(s.end) - start) if s.end else 1000, "tags": tags,
            "logs": [{"timestamp": start, "fields": [
                {"key": "event", "type": "string", "value": name},
                *(_jaeger_tag(key, v) for key, v in attrs.items())]}
                for name, attrs in s.events],
            "processID": "p1", "warnings": None})
    return {"data": [{"traceID": spans[0].trace_id or "1" * 32, "spans": out,
                      "processes": {"p1": {"serviceName": "agent", "tags": []}},
                      "warnings": None}], "total": 0, "limit": 0, "offset": 0,
            "errors": None}


def _go_value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"Type": "BOOL", "Value": value}
    if isinstance(value, int):
        return {"Type": "INT64", "Value": value}
    if isinstance(value, float):
        return {"Type": "FLOAT64", "Value": value}
    if isinstance(value, list):
        return {"Type": "STRINGSLICE", "Value": value}
    return {"Type": "STRING", "Value": value}


def _go_time(at: Any) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%S.%f") + "123Z"  # nanoseconds, as Go prints them


def to_go(spans: list[RawSpan]) -> str:
    """Go's stdouttrace: span objects printed one after another (indented)."""
    docs = []
    zero = {"TraceID": "0" * 32, "SpanID": "0" * 16, "TraceFlags": "00", "TraceState": "",
            "Remote": False}
    for s in spans:
        ctx = {"TraceID": s.trace_id or "1" * 32, "SpanID": s.span_id.lstrip("#").rjust(16, "0"),
               "TraceFlags": "01", "TraceState": "", "Remote": False}
        docs.append({
            "Name": s.name, "SpanContext": ctx,
            "Parent": {**ctx, "SpanID": s.parent_id} if s.parent_id else zero,
            "SpanKind": 3, "StartTime": _go_time(s.start) if s.start else
            "0001-01-01T00:00:00Z", "EndTime": _go_time(s.end) if s.end else
            "0001-01-01T00:00:00Z",
            "Attributes": [{"Key": k, "Value": _go_value(v)} for k, v in s.attrs.items()],
            "Events": [{"Name": name, "Attributes": [{"Key": k, "Value": _go_value(v)}
                                                       for k, v in attrs.items()],
                        "DroppedAttributeCount": 0, "Time": _go_time(s.start) if s.start
                        else "0001-01-01T00:00:00Z"} for name, attrs in s.events],
            "Links": None,
            "Status": {"Code": "Error" if s.status_error else "Unset",
                       "Description": s.status_error or ""},
            "DroppedAttributes": 0, "DroppedEvents": 0, "DroppedLinks": 0,
            "ChildSpanCount": 0, "Resource": [{"Key": "service.name",
                                               "Value": {"Type": "STRING", "Value": "agent"}}],
            "InstrumentationScope": {"Name": "instr", "Version": "", "SchemaURL": ""},
            "InstrumentationLibrary": {"Name": "instr", "Version": "", "SchemaURL": ""}})
    return "\n".join(json.dumps(d, indent="\t") for d in docs) + "\n"


def _with_ids(spans: list[RawSpan]) -> list[RawSpan]:
    """Spans with hex ids (a bare attribute map has none), so they round-trip."""
    for k, s in enumerate(spans):
        s.span_id = s.span_id if not s.span_id.startswith("#") else f"{k + 1:016x}"
        s.trace_id = s.trace_id or "5" * 32
    return spans


@pytest.mark.parametrize("source", OTLP_SOURCES)
def test_jaeger_export_imports_as_its_source(source: str) -> None:
    spans = _with_ids(read_otlp((FIX / source).read_text()))
    text = json.dumps(to_jaeger(spans), indent=2)
    assert detect_format(text) == "otel"
    times = spans[0].start is not None  # a bare attribute map has none: the copy has some
    assert _imported(text=text, times=times) == _imported(FIX / source, times=times)


@pytest.mark.parametrize("source", OTLP_SOURCES)
def test_go_stdouttrace_imports_as_its_source(source: str) -> None:
    spans = _with_ids(read_otlp((FIX / source).read_text()))
    text = to_go(spans)
    assert detect_format(text) == "otel"
    times = spans[0].start is not None
    assert _imported(text=text, times=times) == _imported(FIX / source, times=times)


def test_jaeger_status_parent_links_and_logs() -> None:
    spans = _with_ids(read_otlp((FIX / "otel_genai.json").read_text()))
    spans[0].status_error = "upstream 503"
    del spans[0].attrs["gen_ai.output.messages"]  # the call failed: no answer
    doc = to_jaeger(spans)
    got = spans_of([("file", doc)])
    assert got[0].status_error == "upstream 503"
    # the FOLLOWS_FROM link is not a parent
    assert [s.parent_id for s in got] == [s.parent_id for s in spans]
    # a Jaeger trace on its own (no "data" wrapper) reads the same
    assert [s.span_id for s in spans_of([("file", doc["data"][0])])] == \
        [s.span_id for s in got]
    s = InMemoryStorage()
    report = import_text(s, json.dumps(doc), name="jaeger.json")
    failed = s.runs.require_run(report.runs_created[0])
    assert (failed.status, failed.error) == ("failed", "upstream 503")


def test_a_bad_tag_is_named(tmp_path: Path) -> None:
    doc = to_jaeger(_with_ids(read_otlp((FIX / "otel_genai.json").read_text())))
    doc["data"][0]["spans"][0]["tags"].append(
        {"key": "gen_ai.usage.input_tokens", "type": "int64", "value": "many"})
    bad = tmp_path / "jaeger.json"
    bad.write_text(json.dumps(doc))
    s = InMemoryStorage()
    with pytest.raises(ImportFormatError, match=r"^file '.*jaeger\.json': span .*"
                       r"\(chat gpt-4o\): tag gen_ai\.usage\.input_tokens of type int64 has "
                       r"the value 'many'$"):
        import_file(s, bad)
    assert not s.memory.list_threads()  # nothing half-written


# -- Phoenix: span JSON with nested attributes -----------------------------------------------
def _nested(flat: dict[str, Any]) -> dict[str, Any]:
    """Dotted attributes nested as Phoenix's span JSON holds them (a numbered segment
    makes a list)."""
    root: dict[str, Any] = {}
    for key, value in flat.items():
        node: Any = root
        segs = key.split(".")
        for seg, nxt in zip(segs[:-1], segs[1:], strict=True):
            child: Any = [] if nxt.isdigit() else {}
            if isinstance(node, list):
                i = int(seg)
                while len(node) <= i:
                    node.append(None)
                node[i] = node[i] if node[i] is not None else child
                node = node[i]
            else:
                node = node.setdefault(seg, child)
        if isinstance(node, list):
            i = int(segs[-1])
            while len(node) <= i:
                node.append(None)
            node[i] = value
        else:
            node[segs[-1]] = value
    return root


def test_a_phoenix_span_with_nested_attributes_imports_as_its_flat_source() -> None:
    source = FIX / "real" / "openinference-openinference_client_span_tool_calls.json"
    flat = json.loads(source.read_text())
    phoenix = {"name": "ChatCompletion", "span_kind": "LLM", "parent_id": None,
               "context": {"trace_id": "0x6c80880dbeb609e2ed41e06a6397a0dd",
                           "span_id": "0xd9bdedf0df0b7208"},
               "start_time": "2024-05-08T21:46:11.480777Z",
               "end_time": "2024-05-08T21:46:35.368042Z", "status_code": "OK",
               "status_message": "", "events": [], "attributes": _nested(flat)}
    assert isinstance(phoenix["attributes"]["llm"]["input_messages"], list)
    text = json.dumps(phoenix, indent=2)
    assert detect_format(text) == "otel"
    assert _imported(text=text, times=False) == _imported(source, times=False)
    [raw] = spans_of([("file", phoenix)])
    assert raw.start == datetime(2024, 5, 8, 21, 46, 11, 480777, tzinfo=UTC)
    phoenix["status_code"], phoenix["status_message"] = "ERROR", "rate limited"
    assert spans_of([("file", phoenix)])[0].status_error == "rate limited"


def _otlp(span: dict[str, Any]) -> dict[str, Any]:
    return {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}


_SPAN = {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174",
         "name": "chat m", "startTimeUnixNano": "1767340800000000000",
         "endTimeUnixNano": "1767340801000000000", "attributes": []}


@pytest.mark.parametrize(("doc", "error"), [  # each raised TypeError/AttributeError
    ({"resourceSpans": True}, r"'resourceSpans' must be a list, got True"),
    ({"resourceSpans": ["x"]}, r"a resource entry must be an object, got 'x'"),
    ({"resourceSpans": [{"scopeSpans": True}]}, r"'scopeSpans' must be a list"),
    ({"resourceSpans": [{"scopeSpans": [{"spans": -1}]}]}, r"'spans' must be a list"),
    (_otlp({**_SPAN, "attributes": [{"key": "gen_ai.input.messages", "value": {
        "arrayValue": {"values": 1.5}}}]}), r"arrayValue must hold a 'values' list"),
    ([{"traceId": "5b8efff798038103d269b633813fc60c", "id": "eee19b7ec3c1b174",
       "name": "chat", "timestamp": 1767427200000000, "tags": {}, "annotations": True}],
     r"'annotations' must be a list, got True"),
    ([{"name": "ai.generateText.doGenerate", "spanContext": {
        "traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174"},
       "attributes": {}, "startTime": [1767427200, 0], "events": True}],
     r"'events' must be a list, got True"),
])
def test_wrong_types_in_span_files_are_named(doc: Any, error: str) -> None:
    with pytest.raises(ImportFormatError, match=error):
        import_text(InMemoryStorage(), json.dumps(doc), name="t.json")


def test_an_operation_name_of_another_type_does_not_crash() -> None:
    span = {**_SPAN, "attributes": [
        {"key": "gen_ai.operation.name", "value": {"arrayValue": {"values": [
            {"stringValue": "chat"}]}}}]}
    with pytest.raises(ImportFormatError, match=r"no GenAI model-call spans"):
        import_text(InMemoryStorage(), json.dumps(_otlp(span)), name="t.json")


def test_go_events_that_are_not_a_list_are_named() -> None:
    span = {"Name": "chat", "SpanContext": {"TraceID": "5b8efff798038103d269b633813fc60c",
                                            "SpanID": "eee19b7ec3c1b174"},
            "StartTime": "2026-01-02T08:00:00Z", "EndTime": "2026-01-02T08:00:01Z",
            "Attributes": [], "Events": True}  # (raised TypeError)
    with pytest.raises(ImportFormatError, match=r"span eee19b7ec3c1b174 \(chat\): 'Events' "
                                                r"must be a list, got True"):
        import_text(InMemoryStorage(), json.dumps(span), name="go.json")


@pytest.mark.parametrize(("change", "error"), [  # each raised TypeError/AttributeError
    ({"references": True}, r"'references' must be a list, got True"),
    ({"logs": True}, r"'logs' must be a list, got True"),
    ({"logs": ["42"]}, r"log 0 must be an object, got '42'"),
])
def test_jaeger_fields_of_the_wrong_type_are_named(change: dict[str, Any], error: str) -> None:
    span = {"traceID": "5b8efff798038103d269b633813fc60c", "spanID": "eee19b7ec3c1b174",
            "operationName": "chat", "startTime": 1767427200000000, "duration": 5,
            "tags": [], **change}
    doc = {"data": [{"traceID": span["traceID"], "spans": [span], "processes": {}}]}
    with pytest.raises(ImportFormatError, match=r"span eee19b7ec3c1b174 \(chat\): " + error):
        import_text(InMemoryStorage(), json.dumps(doc), name="jaeger.json")


@pytest.mark.parametrize(("path", "value", "error"), [  # each raised AttributeError
    (("input_messages", 1, "message"), [], r"llm.input_messages.1: message must be "
                                           r"attributes of an object, got \[\]"),
    (("input_messages", 1, "message", "tool_calls", 0, "tool_call"), [None],
     r"llm.input_messages.1: tool_calls.0.tool_call must be attributes of an object"),
    (("output_messages", 0, "message", "contents"), {"a": 1},
     r"llm.output_messages.0: contents.0 must be attributes of an object, got 1"),
])
def test_openinference_messages_of_the_wrong_shape_are_named(path: tuple[Any, ...],
                                                             value: Any, error: str) -> None:
    flat = json.loads((FIX / "real" / "openinference-openinference_client_span_tool_calls.json"
                       ).read_text())
    attrs = _nested(flat)
    node = attrs["llm"]
    for seg in path[:-1]:
        node = node[seg]
    node[path[-1]] = value
    span = {"name": "ChatCompletion", "context": {"trace_id": "0x6c80880dbeb609e2ed41e06a6397a0dd",
                                                  "span_id": "0xd9bdedf0df0b7208"},
            "start_time": "2024-05-08T21:46:11.480777Z", "attributes": attrs}
    with pytest.raises(ImportFormatError, match=error):
        import_text(InMemoryStorage(), json.dumps(span), name="phoenix.json")


def test_openinference_s_gemini_role_model_is_the_assistant() -> None:
    """OpenInference's Gemini instrumentations write Gemini's own name of the answering
    role ("model") in llm.input_messages and llm.output_messages."""
    attrs = {"openinference.span.kind": "LLM", "llm.model_name": "gemini-2.5-flash",
             "llm.input_messages.0.message.role": "user",
             "llm.input_messages.0.message.content": "Hi",
             "llm.input_messages.1.message.role": "model",
             "llm.input_messages.1.message.content": "Hello!",
             "llm.input_messages.2.message.role": "user",
             "llm.input_messages.2.message.content": "Bye",
             "llm.output_messages.0.message.role": "model",
             "llm.output_messages.0.message.content": "Goodbye!"}
    span = {"name": "GenerateContent", "context": {"trace_id": "0x" + "ab" * 16,
                                                   "span_id": "0x" + "cd" * 8},
            "start_time": "2025-08-01T13:22:12Z", "attributes": attrs}
    s = InMemoryStorage()
    report = import_text(s, json.dumps(span), name="gemini.json")
    assert [(m.role, m.text()) for m in s.memory.get_messages(report.threads_created[0])] == [
        ("user", "Hi"), ("assistant", "Hello!"), ("user", "Bye"), ("assistant", "Goodbye!")]


def _flat_span(sid: str, name: str, attrs: dict[str, Any], parent: str | None = None,
               start: int = 1700000000000000000) -> dict[str, Any]:
    """A span object with its ids beside its name, times in nanoseconds (strands-agents'
    evals keep spans so)."""
    return {"trace_id": "a1b2c3d4e5f6a1b2c3d4e5f6a1b2c3d4", "span_id": sid,
            "parent_span_id": parent, "name": name, "start_time": start,
            "end_time": start + 2_000_000_000, "attributes": attrs, "span_events": [],
            "scope": {"name": "test"}}


def test_span_objects_with_their_ids_beside_their_names_import() -> None:
    """Trial 10: eight files of such span objects were refused with "the closest format
    this importer reads is an OpenTelemetry span … with gen_ai.* attributes" — which
    they were."""
    chat = _flat_span("1000000000000002", "chat gpt-4o", {
        "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
        "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [
            {"type": "text", "content": "Weather in Paris?"}]}]),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
            {"type": "text", "content": "Rainy, 57°F."}], "finish_reason": "stop"}]),
        "gen_ai.usage.input_tokens": 15, "gen_ai.usage.output_tokens": 4},
        parent="1000000000000001")
    agent = _flat_span("1000000000000001", "invoke_agent Weather", {
        "gen_ai.operation.name": "invoke_agent"})
    text = json.dumps([agent, chat])
    assert detect_format(text) == "otel"
    s = InMemoryStorage()
    report = import_text(s, text)
    assert [m.text() for m in s.memory.get_messages(report.threads_created[0])] == [
        "Weather in Paris?", "Rainy, 57°F."]
    run = s.runs.require_run(report.runs_created[0])
    assert run.started_at == datetime.fromtimestamp(1700000000, tz=UTC)


def test_google_adk_s_call_llm_spans_are_read_from_its_request_and_answer() -> None:
    """ADK keeps each model call's LlmRequest and LlmResponse (Gemini's shapes, as JSON
    text) on its call_llm span, and the attribute as "{}" on its execute_tool spans."""
    request = {"model": "gemini-2.5-flash", "config": {
        "system_instruction": "You add numbers.",
        "tools": [{"function_declarations": [{"name": "add", "parameters_json_schema": {
            "type": "object", "properties": {"a": {"type": "integer"}}}}]}]},
        "contents": [{"role": "user", "parts": [{"text": "2+2?"}]}]}
    answer = {"content": {"role": "model", "parts": [{"text": "4."}]},
              "finish_reason": "STOP"}
    call = _flat_span("2000000000000002", "call_llm", {
        "gen_ai.system": "gcp.vertex.agent", "gen_ai.request.model": "gemini-2.5-flash",
        "gcp.vertex.agent.llm_request": json.dumps(request),
        "gcp.vertex.agent.llm_response": json.dumps(answer),
        "gen_ai.usage.input_tokens": 20, "gen_ai.usage.output_tokens": 2})
    tool = _flat_span("2000000000000003", "execute_tool add", {
        "gen_ai.operation.name": "execute_tool", "gcp.vertex.agent.llm_request": "{}",
        "gcp.vertex.agent.llm_response": "{}"}, parent="2000000000000002")
    s = InMemoryStorage()
    report = import_text(s, json.dumps([call, tool]))
    assert len(report.runs_created) == 1
    rid = report.runs_created[0]
    prompt = s.runs.get(f"{rid}:prompt")["items"]
    assert [(i["lane"], i["message"]["content"]) for i in prompt] == [
        ("instructions", "You add numbers."), ("input", "2+2?")]
    step = s.runs.get(f"{rid}:step:0")
    assert ([t["name"] for t in step["tools"]], step["response"]["finish_reason"],
            step["response"]["text"]) == (["add"], "STOP", "4.")


def test_bedrock_converse_blocks_as_strands_agents_records_them() -> None:
    """Strands Agents records each message's content as Bedrock Converse blocks in JSON
    text, a tool's results under the role ``tool``, and its answer as ``{"message",
    "finish_reason"}``: they were stored as that JSON (trial 10)."""
    prompt = [{"role": "system", "content": json.dumps([{"text": "Be brief."}])},
              {"role": "user", "content": json.dumps([{"text": "Package status?"}])},
              {"role": "assistant", "content": json.dumps([
                  {"text": "Checking."},
                  {"toolUse": {"toolUseId": "tu_1", "name": "status", "input": {"u": "Bob"}}}])},
              {"role": "tool", "content": json.dumps([{"toolResult": {
                  "toolUseId": "tu_1", "status": "success",
                  "content": [{"text": "Ready for pickup"}]}}])}]
    answer = {"message": json.dumps([{"text": "It is ready."}]), "finish_reason": "end_turn"}
    span = _flat_span("3000000000000001", "chat", {
        "gen_ai.operation.name": "chat", "gen_ai.request.model": "claude",
        "gen_ai.prompt": json.dumps(prompt), "gen_ai.completion": json.dumps(answer)})
    s = InMemoryStorage()
    report = import_text(s, json.dumps([span]))
    rid = report.runs_created[0]
    prompt_items = s.runs.get(f"{rid}:prompt")["items"]
    assert [(i["lane"], i["message"]["role"]) for i in prompt_items] == [
        ("instructions", "system"), ("recent", "user"), ("recent", "assistant"),
        ("input", "tool")]
    msgs = s.memory.get_messages(report.threads_created[0])
    assert [(m.role, m.text()) for m in msgs] == [
        ("user", "Package status?"), ("assistant", "Checking."),
        ("tool", None), ("assistant", "It is ready.")]
    assert msgs[1].tool_calls()[0].id == "tu_1" and msgs[2].tool_results()[0].call_id == "tu_1"
    step = s.runs.get(f"{rid}:step:0")
    assert step["response"]["finish_reason"] == "end_turn"


def test_what_the_converse_and_adk_readers_must_leave_as_it_was() -> None:
    """Review: a user text that reads as ``[{"text": …}]`` in an OpenAI conversation
    with a tool call stays that conversation (it was read as Converse blocks, the call
    dropped); ADK's request attribute that ADK could not write ("<not serializable>")
    does not sink a span whose messages come from the conventions; an object with a
    ``message`` that is no Converse content is kept as its text, as before."""
    msgs = [{"role": "user", "content": json.dumps([{"text": "Great"}, {"text": "Died"}])},
            {"role": "assistant", "content": None, "tool_calls": [{
                "id": "call_1", "type": "function",
                "function": {"name": "sentiment", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "positive, negative"}]
    span = _flat_span("4000000000000001", "chat", {
        "gen_ai.operation.name": "chat", "gen_ai.prompt": json.dumps(msgs),
        "gen_ai.completion": json.dumps({"message": 3}),
        "gcp.vertex.agent.llm_request": json.dumps({"config": {"tools": [
            "<not serializable>"]}})})
    s = InMemoryStorage()
    report = import_text(s, json.dumps([span]))
    got = [(m.role, m.text()) for m in s.memory.get_messages(report.threads_created[0])]
    assert got == [("user", msgs[0]["content"]), ("assistant", None), ("tool", None),
                   ("assistant", '{"message": 3}')]
    assert any("the tools of gcp.vertex.agent.llm_request not read" in k.reason
               for k in report.skipped)
    span["attributes"]["gcp.vertex.agent.llm_request"] = "<not serializable>"
    assert len(import_text(InMemoryStorage(), json.dumps([span])).runs_created) == 1


def test_a_call_above_another_is_no_wrapper_unless_the_inner_repeats_it() -> None:
    """Review: a planning call whose tool made a call of its own (Langfuse: generation,
    span, generation) was left out as a "wrapper" of the inner call, which does not
    hold its messages."""
    def obs(i: str, kind: str, parent: str | None, start: str, inp: Any = None,
            out: Any = None) -> dict[str, Any]:
        return {"id": i, "traceId": "t1", "type": kind, "name": i, "startTime": start,
                "endTime": start, "model": "gpt-4o", "input": inp, "output": out,
                "metadata": {}, "parentObservationId": parent}
    trace = {"trace": {"id": "t1"}, "observations": [
        obs("plan", "GENERATION", None, "2025-01-01T00:00:00Z",
            [{"role": "user", "content": "Find flights to Rome"}],
            {"role": "assistant", "content": "Plan: search, then book."}),
        obs("search", "SPAN", "plan", "2025-01-01T00:00:01Z"),
        obs("rewrite", "GENERATION", "search", "2025-01-01T00:00:02Z",
            [{"role": "user", "content": "As a search query: Rome"}],
            {"role": "assistant", "content": "flights FCO"})]}
    report = import_text(InMemoryStorage(), json.dumps(trace))
    assert len(report.runs_created) == 2
    assert not [k for k in report.skipped if "wraps" in k.reason]


def test_a_record_with_trace_ids_but_no_span_times_is_no_span() -> None:
    """Review: JSON lines of chat records stamped with a trace context (and a name and
    attributes) were taken for span objects and refused."""
    line = {"name": "chat", "attributes": {"app": "x"}, "trace_id": "a" * 32,
            "span_id": "b" * 16, "messages": [{"role": "user", "content": "Hi"}],
            "response": {"choices": [{"message": {"role": "assistant",
                                                  "content": "Hello"}}]}}
    report = import_text(InMemoryStorage(), json.dumps(line))
    assert report.format == "openai" and len(report.runs_created) == 1


def test_pydantic_ai_s_request_parameters_name_the_tools_offered() -> None:
    """pydantic-ai's spans list what it offered the model in ``model_request_parameters``
    (JSON text on the wire): function tools, output tools and the provider's built-in
    tools (by their kind); a tool result's text under ``result``."""
    asked = {"function_tools": [{"name": "get_weather", "description": "Weather.",
                                 "parameters_json_schema": {"type": "object"}}],
             "output_tools": [], "builtin_tools": [{"kind": "web_search"}]}
    chat = _flat_span("1000000000000002", "chat gpt-4o", {
        "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
        "model_request_parameters": json.dumps(asked),
        "gen_ai.input.messages": json.dumps([
            {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]},
            {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1",
                                             "name": "get_weather", "arguments": {}}]},
            {"role": "user", "parts": [{"type": "tool_call_response", "id": "c1",
                                        "name": "get_weather", "result": "Rainy, 57°F."}]}]),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
            {"type": "text", "content": "It is rainy."}], "finish_reason": "stop"}])})
    s = InMemoryStorage()
    report = import_text(s, json.dumps([chat]))
    step = s.runs.get(f"{report.runs_created[0]}:step:0")
    assert [t["name"] for t in step["tools"]] == ["get_weather", "web_search"]
    result = s.memory.get_messages(report.threads_created[0])[2].as_message()
    assert [r.result for r in result.tool_results()] == ["Rainy, 57°F."]


def test_openinference_s_prompts_are_the_user_s_not_the_call_s_arguments() -> None:
    """A completion-style LLM span: ``input.value`` is the call's arguments
    (LlamaIndex: ``{"args": [...]}``), ``llm.prompts`` (a JSON list, or
    ``llm.prompts.N.prompt.text``) what the model was sent."""
    for prompts in ({"llm.prompts": json.dumps(["What is Langfuse?"])},
                    {"llm.prompts.0.prompt.text": "What is Langfuse?"}):
        span = _flat_span("1000000000000002", "OpenAI.complete", {
            "openinference.span.kind": "LLM", "llm.model_name": "gpt-4o",
            "input.value": json.dumps({"args": ["What is Langfuse?"]}),
            "input.mime_type": "application/json", **prompts,
            "output.value": "An observability platform."})
        s = InMemoryStorage()
        report = import_text(s, json.dumps([span]))
        got = [m.as_message().text() for m in s.memory.get_messages(report.threads_created[0])]
        assert got == ["What is Langfuse?", "An observability platform."], prompts
