"""Every shape agents and their instrumentations write: OTLP log records and protobuf,
OpenLLMetry/OpenLIT/OpenInference attribute forms, the OpenAI log family; what is kept
(tools, parameters, placeholders, usage) and the errors malformed values give."""

from __future__ import annotations

import base64
import hashlib
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memory_core.errors import ImportFormatError
from memory_core.importers import import_file, import_text
from memory_core.importers.refusal import FORMAT_TITLES
from memory_core.importers.registry import FORMATS
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import ToolCallPart, ToolResultPart

T = "1767600000000000000"  # 2026-01-05 08:00:00 UTC in nanoseconds


def s() -> InMemoryStorage:
    return InMemoryStorage()


def attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    if isinstance(value, dict):
        return {"key": key, "value": {"kvlistValue": {"values": [attr(k, v) for k, v in
                                                                 value.items()]}}}
    if isinstance(value, list):
        return {"key": key, "value": {"arrayValue": {"values": [
            attr("", v)["value"] for v in value]}}}
    return {"key": key, "value": {"stringValue": value}}


def span(sid: str, attrs: dict[str, Any], *, trace: str = "a" * 32, name: str = "chat m",
         start: str = T, parent: str = "", events: list[Any] | None = None) -> dict[str, Any]:
    return {"traceId": trace, "spanId": sid, "parentSpanId": parent, "name": name,
            "startTimeUnixNano": start, "endTimeUnixNano": start,
            "attributes": [attr(k, v) for k, v in attrs.items()], "events": events or []}


def log(name: str, body: dict[str, Any], *, trace: str = "a" * 32,
        sid: str = "00000000000000a1") -> dict[str, Any]:
    return {"timeUnixNano": T, "eventName": name, "traceId": trace, "spanId": sid,
            "attributes": [attr("gen_ai.system", "openai")],
            "body": attr("", body)["value"]}


def otlp(spans: list[Any] = (), logs: list[Any] = ()) -> str:  # type: ignore[assignment]
    doc: dict[str, Any] = {}
    if spans:
        doc["resourceSpans"] = [{"scopeSpans": [{"spans": list(spans)}]}]
    if logs:
        doc["resourceLogs"] = [{"scopeLogs": [{"logRecords": list(logs)}]}]
    return json.dumps(doc)


def texts(st: InMemoryStorage, tid: str) -> list[str]:
    out = []
    for m in st.memory.get_messages(tid):
        calls = [f"{p.name}#{p.id}" for p in m.tool_calls()]
        results = [f"{p.name}#{p.call_id}={p.result}" for p in m.tool_results()]
        out.append(f"{m.role}:{m.text() or ''}{''.join(calls)}{''.join(results)}")
    return out


# -- OTel: log records (the openai-v2 instrumentation's default) -------------------------
OPENAI_V2_LOGS = [
    log("gen_ai.system.message", {"content": "You're a helpful assistant."}),
    log("gen_ai.user.message", {"content": "Weather in Seattle?"}),
    log("gen_ai.assistant.message", {"tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "get_weather", "arguments": "{\"city\": \"Seattle\"}"}}]}),
    log("gen_ai.tool.message", {"id": "call_1", "content": "50 degrees and raining"}),
    log("gen_ai.choice", {"index": 0, "finish_reason": "stop", "message": {
        "role": "assistant", "content": "It is 50 degrees and raining."}}),
]
MODEL_SPAN = span("00000000000000a1", {
    "gen_ai.operation.name": "chat", "gen_ai.system": "openai",
    "gen_ai.request.model": "gpt-4o-mini", "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
    "gen_ai.usage.input_tokens": 99, "gen_ai.usage.output_tokens": 25,
    "gen_ai.request.temperature": 0.25})


def test_log_records_attach_to_their_span() -> None:
    st = s()
    report = import_text(st, otlp([MODEL_SPAN], OPENAI_V2_LOGS))
    assert report.format == "otel" and len(report.runs_created) == 1
    tid = report.threads_created[0]
    assert texts(st, tid) == [
        "user:Weather in Seattle?", "assistant:get_weather#call_1",
        "tool:get_weather#call_1=50 degrees and raining",
        "assistant:It is 50 degrees and raining."]
    step = st.runs.get(f"{report.runs_created[0]}:step:0")
    assert step["response"]["usage"] == {"input_tokens": 99, "output_tokens": 25}
    assert step["model"]["name"] == "gpt-4o-mini-2024-07-18"
    assert step["model"]["temperature"] == 0.25
    assert step["response"]["finish_reason"] == "stop"


def test_a_file_of_log_records_alone_imports() -> None:
    st = s()
    report = import_text(st, otlp(logs=OPENAI_V2_LOGS))
    assert len(report.runs_created) == 1
    assert texts(st, report.threads_created[0])[-1] == "assistant:It is 50 degrees and raining."
    memctx = st.runs.get(f"{report.runs_created[0]}:memctx")
    # nothing says which model, usage or tools: listed as unknown, not invented
    assert {"usage", "model", "tools"} <= set(memctx["unknown_fields"])


def test_logs_without_content_are_skipped_as_content_capture_off() -> None:
    no_content = [log("gen_ai.user.message", {}), log("gen_ai.choice", {
        "index": 0, "finish_reason": "stop", "message": {"role": "assistant"}})]
    with pytest.raises(ImportFormatError, match="content capture was off"):
        import_text(s(), otlp([MODEL_SPAN], no_content))


def test_json_lines_of_trace_and_log_exports() -> None:
    text = otlp([MODEL_SPAN]) + "\n" + otlp(logs=OPENAI_V2_LOGS) + "\n"
    st = s()
    report = import_text(st, text)
    assert st.runs.get(f"{report.runs_created[0]}:step:0")["model"]["name"] == \
        "gpt-4o-mini-2024-07-18"
    assert len(texts(st, report.threads_created[0])) == 4


def test_otlp_protobuf_traces_and_logs(tmp_path: Path) -> None:
    from google.protobuf.json_format import ParseDict
    from opentelemetry.proto.logs.v1.logs_pb2 import LogsData
    from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

    def as_proto_ids(d: dict[str, Any]) -> dict[str, Any]:
        import base64
        for key in ("traceId", "spanId", "parentSpanId"):
            if d.get(key):
                d[key] = base64.b64encode(bytes.fromhex(d[key])).decode()
            else:
                d.pop(key, None)
        return d

    traces = json.loads(otlp([as_proto_ids(dict(MODEL_SPAN))]))
    logs = json.loads(otlp(logs=[as_proto_ids(dict(r)) for r in OPENAI_V2_LOGS]))
    (tmp_path / "t.pb").write_bytes(ParseDict(traces, TracesData()).SerializeToString())
    (tmp_path / "l.pb").write_bytes(ParseDict(logs, LogsData()).SerializeToString())
    st = s()
    # the span alone has no content: skipped with its reason in the error
    with pytest.raises(ImportFormatError, match="00000000000000a1.*content capture was off"):
        import_file(st, tmp_path / "t.pb")
    report = import_file(st, tmp_path / "l.pb")
    assert report.format == "otel"
    assert texts(st, report.threads_created[0])[0] == "user:Weather in Seattle?"
    (tmp_path / "junk.pb").write_bytes(b"\x00\x01\x02\xff\xfe")
    with pytest.raises(ImportFormatError, match="not an OTLP protobuf export"):
        import_file(st, tmp_path / "junk.pb")


# -- OTel: other instrumentations' attribute forms ---------------------------------------
def test_openllmetry_indexed_attributes_with_tools() -> None:
    attrs = {
        "llm.request.type": "chat", "gen_ai.system": "openai",
        "gen_ai.request.model": "gpt-4o", "gen_ai.request.max_tokens": 100,
        "gen_ai.prompt.0.role": "system", "gen_ai.prompt.0.content": "Be brief.",
        "gen_ai.prompt.1.role": "user", "gen_ai.prompt.1.content": "Time in Oslo?",
        "gen_ai.prompt.2.role": "assistant",
        "gen_ai.prompt.2.tool_calls.0.id": "call_t", "gen_ai.prompt.2.tool_calls.0.name":
            "clock", "gen_ai.prompt.2.tool_calls.0.arguments": "{\"city\": \"Oslo\"}",
        "gen_ai.prompt.3.role": "tool", "gen_ai.prompt.3.content": "09:00",
        "gen_ai.prompt.3.tool_call_id": "call_t",
        "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "It is 9.",
        "gen_ai.completion.0.finish_reason": "stop",
        "llm.request.functions.0.name": "clock",
        "llm.request.functions.0.description": "Local time",
        "llm.request.functions.0.parameters": "{\"type\": \"object\"}",
        "gen_ai.usage.prompt_tokens": 30, "gen_ai.usage.completion_tokens": 4}
    st = s()
    report = import_text(st, otlp([span("00000000000000b1", attrs, name="openai.chat")]))
    rid = report.runs_created[0]
    assert texts(st, report.threads_created[0]) == [
        "user:Time in Oslo?", "assistant:clock#call_t", "tool:clock#call_t=09:00",
        "assistant:It is 9."]
    step = st.runs.get(f"{rid}:step:0")
    assert step["tools"] == [{"name": "clock", "description": "Local time",
                              "parameters": {"type": "object"}}]
    assert step["model"]["max_tokens"] == 100
    assert step["response"]["usage"] == {"input_tokens": 30, "output_tokens": 4}
    prompt = st.runs.get(f"{rid}:prompt")
    assert prompt["items"][0]["message"]["content"] == "Be brief."


def test_openlit_plain_text_events_and_attributes() -> None:
    events = [{"name": "gen_ai.content.prompt", "attributes": [
                  attr("gen_ai.prompt", "user: What is OTel?")]},
              {"name": "gen_ai.content.completion", "attributes": [
                  attr("gen_ai.completion", "OpenTelemetry, an observability framework.")]}]
    st = s()
    report = import_text(st, otlp([
        span("00000000000000c1", {"gen_ai.operation.name": "chat",
                                  "gen_ai.request.model": "gpt-4o"}, events=events),
        span("00000000000000c2", {"gen_ai.operation.name": "chat",
                                  "gen_ai.prompt": "Say hi", "gen_ai.completion": "Hi!"},
             trace="b" * 32, start="1767600100000000000")]))
    assert len(report.runs_created) == 2
    got = sorted(texts(st, t) for t in report.threads_created)
    assert got == [["user:Say hi", "assistant:Hi!"],
                   ["user:user: What is OTel?",
                    "assistant:OpenTelemetry, an observability framework."]]


def test_system_instructions_spellings_and_any_operation_name() -> None:
    msgs = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "hi"}]}])
    out = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "yo"}],
                       "finish_reason": "stop"}])
    st = s()
    report = import_text(st, otlp([span("00000000000000d1", {
        "gen_ai.operation.name": "completion",  # Latitude's name: still a model call
        "gen_ai.system.instructions": "Answer in slang.",
        "gen_ai.input.messages": msgs, "gen_ai.output.messages": out,
        "gen_ai.tool.definitions": json.dumps([{"type": "function", "name": "f",
                                                "description": "d",
                                                "parameters": {"type": "object"}}])})]))
    rid = report.runs_created[0]
    prompt = st.runs.get(f"{rid}:prompt")
    assert prompt["items"][0]["lane"] == "instructions"
    assert prompt["items"][0]["message"]["content"] == "Answer in slang."
    assert st.runs.get(f"{rid}:step:0")["tools"][0]["name"] == "f"


def test_when_every_span_is_skipped_the_error_lists_why() -> None:
    spans = [span("00000000000000e1", {"gen_ai.operation.name": "chat"}),
             span("00000000000000e2", {"gen_ai.operation.name": "execute_tool"}),
             span("00000000000000e3", {"openinference.span.kind": "RETRIEVER"})]
    with pytest.raises(ImportFormatError) as info:
        import_text(s(), otlp(spans))
    msg = str(info.value)
    assert "3 span(s) read, 3 skipped" in msg
    assert "span 00000000000000e1 (chat m): model call with no message content" in msg
    assert "span 00000000000000e2 (chat m): not a model call (operation 'execute_tool')" in msg
    assert "span 00000000000000e3 (chat m): not a model call (operation 'RETRIEVER')" in msg


def test_an_agent_span_repeating_its_calls_is_skipped_once() -> None:
    user = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "go"}]}])
    done = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "done"}]}])
    agent = span("00000000000000f0", {"gen_ai.operation.name": "invoke_agent",
                                      "gen_ai.input.messages": user,
                                      "gen_ai.output.messages": done}, name="agent")
    chat = span("00000000000000f1", {"gen_ai.operation.name": "chat",
                                     "gen_ai.input.messages": user,
                                     "gen_ai.output.messages": done},
                parent="00000000000000f0", start="1767600000500000000")
    report = import_text(s(), otlp([agent, chat]))
    assert len(report.runs_created) == 1
    assert any("wraps model-call span 00000000000000f1" in k.reason for k in report.skipped)


def test_calls_group_by_shared_history_across_traces_and_split_within_one() -> None:
    def call(sid: str, trace: str, start: str, inp: list[tuple[str, str]], out: str
             ) -> dict[str, Any]:
        return span(sid, {"gen_ai.operation.name": "chat", "gen_ai.input.messages": json.dumps(
            [{"role": r, "parts": [{"type": "text", "content": c}]} for r, c in inp]),
            "gen_ai.output.messages": json.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": out}]}])},
            trace=trace, start=start)
    spans = [call("0000000000000001", "1" * 32, "1767600000000000000", [("user", "A?")], "a"),
             # the same trace: a different conversation
             call("0000000000000002", "1" * 32, "1767600001000000000", [("user", "B?")], "b"),
             # another trace continuing the first conversation
             call("0000000000000003", "2" * 32, "1767600002000000000",
                  [("user", "A?"), ("assistant", "a"), ("user", "more A")], "a2")]
    st = s()
    report = import_text(st, otlp(spans))
    got = sorted(texts(st, t) for t in report.threads_created)
    assert got == [["user:A?", "assistant:a", "user:more A", "assistant:a2"],
                   ["user:B?", "assistant:b"]]


# -- the OpenAI family ---------------------------------------------------------------------
REC = {"request": {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}],
                   "temperature": 0.3, "top_p": 0.9, "seed": 7, "max_tokens": 64,
                   "stop": ["\n"],
                   "tools": [{"type": "function", "function": {
                       "name": "lookup", "description": "Find", "parameters": {
                           "type": "object", "properties": {"q": {"type": "string"}}}}}]},
       "response": {"model": "gpt-4o-2024", "created": 1767268800,
                    "choices": [{"message": {"role": "assistant", "content": "hello"},
                                 "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 9, "completion_tokens": 2}}}


@pytest.mark.parametrize("text", [
    json.dumps(REC), json.dumps([REC]), json.dumps(REC, indent=2),
    json.dumps([REC, REC], indent=2)])
def test_jsonl_array_and_pretty_json_read_alike(text: str) -> None:
    st = s()
    report = import_text(st, text)
    assert texts(st, report.threads_created[0]) == ["user:hi", "assistant:hello"]


def test_records_holding_line_separators_raw_are_one_line_each() -> None:
    # json.dumps(ensure_ascii=False) writes U+2028, U+2029 and U+0085 raw inside
    # strings; JSON lines end at "\n" only (str.splitlines would cut the record)
    text = "\u2028a\u2029b\x85c"
    rec = {**REC, "request": {**REC["request"], "messages": [{"role": "user",
                                                               "content": text}]}}
    st = s()
    report = import_text(st, json.dumps(rec, ensure_ascii=False) + "\r\n"
                         + json.dumps(REC, ensure_ascii=False) + "\r\n")
    assert texts(st, report.threads_created[0]) == [f"user:{text}", "assistant:hello"]
    assert len(report.runs_created) == 2
    # a file of old Mac line endings (no "\n" at all) is read by lines of "\r"
    st = s()
    report = import_text(st, json.dumps(REC) + "\r" + json.dumps(REC) + "\r")
    assert len(report.runs_created) == 2


def test_json_lines_are_parsed_as_they_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """A large log is never held parsed whole: the reader parses a line when asked for
    its record (and the one after the first, to tell a JSON array from lines)."""
    from memory_core.importers import jsonvalues

    parsed: list[str] = []
    real = jsonvalues.load_json
    monkeypatch.setattr(jsonvalues, "load_json",
                        lambda text, where, what="": parsed.append(where) or real(
                            text, where, what))
    docs = jsonvalues.iter_documents("\n".join(json.dumps(REC) for _ in range(5)))
    assert next(docs)[0] == "line 1" and parsed == ["line 1"]
    assert next(docs)[0] == "line 2" and next(docs)[0] == "line 3"
    assert parsed == ["line 1", "line 2", "line 3"]
    assert [w for w, _ in docs] == ["line 4", "line 5"]


def test_batch_lines_after_plain_records_are_joined() -> None:
    """Records are read one at a time until a batch line; from there the rest of the
    file is read so an output line can find its input (which may come later)."""
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "batched?"}]}
    out = {"custom_id": "r1", "response": {"status_code": 200, "body": REC["response"]}}
    lines = [json.dumps(REC), json.dumps(out),
             json.dumps({"custom_id": "r1", "body": body}), json.dumps(REC)]
    st = s()
    report = import_text(st, "\n".join(lines))
    assert len(report.runs_created) == 3
    prompts = [st.runs.get(f"{rid}:import")["where"] for rid in report.runs_created]
    assert prompts == ["line 1", "line 3", "line 4"]


def test_nothing_in_the_request_is_lost() -> None:
    st = s()
    report = import_text(st, json.dumps(REC))
    rid = report.runs_created[0]
    step = st.runs.get(f"{rid}:step:0")
    assert step["model"] == {"kind": "imported", "name": "gpt-4o-2024", "base_url": None,
                             "temperature": 0.3, "top_p": 0.9, "seed": 7, "max_tokens": 64}
    assert step["tools"] == [{"name": "lookup", "description": "Find", "parameters": {
        "type": "object", "properties": {"q": {"type": "string"}}}}]
    assert step["response"]["usage"] == {"input_tokens": 9, "output_tokens": 2}
    assert st.runs.get(f"{rid}:import")["request_params"] == {
        "temperature": 0.3, "top_p": 0.9, "seed": 7, "max_tokens": 64, "stop": ["\n"]}
    unknown = st.runs.get(f"{rid}:memctx")["unknown_fields"]
    assert not {"tools", "usage", "model"} & set(unknown)


def test_parts_names_images_and_missing_ids_are_kept_with_notice() -> None:
    rec = {"messages": [
        {"role": "developer", "content": "Be kind."},
        {"role": "user", "name": "ann", "content": [
            {"type": "text", "text": "What is this?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            {"type": "text", "text": "Be brief."}]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"type": "function", "function": {"name": "see", "arguments": "{}"}}]},
        {"role": "tool", "content": "a cat"}],
        "response": {"choices": [{"message": {"content": "A cat."}}]}}
    st = s()
    report = import_text(st, json.dumps(rec))
    msgs = st.memory.get_messages(report.threads_created[0])
    user = msgs[0]
    assert [p.text for p in user.parts] == ["What is this?", "Be brief."]  # not joined
    assert user.metadata["name"] == "ann"
    assert user.metadata["attachments"] == [{
        "index": 1, "type": "image_url", "media_type": "image/png", "bytes": 3,
        "sha256": hashlib.sha256(b"\0\0\0").hexdigest()}]
    call = msgs[1].tool_calls()[0]
    assert call.id.startswith("call-") and msgs[2].tool_results()[0].call_id == call.id
    reasons = " ".join(k.reason for k in report.skipped)
    assert "kept as a placeholder" in reasons and "had no id" in reasons
    assert "had no tool_call_id" in reasons
    prompt = st.runs.get(f"{report.runs_created[0]}:prompt")
    assert prompt["items"][0]["message"]["metadata"] == {"openai_role": "developer"}


def test_an_image_written_into_a_text_as_html_is_a_placeholder() -> None:
    """NVIDIA's API takes an image as <img src="data:…"> in the message text (paper-qa's
    nemotron cassette): 672,076 characters of base64 were stored as the text, the
    thread's title and a 168,019-token estimate. Each such image is now a placeholder,
    as an image_url part's data URI is; a small one, an example of the markup, stays."""
    data = "iVBORw0KGgo" * 200
    text = f'Parse this. <img src="data:image/png;base64,{data}" /> Thanks.'
    small = 'Write <img src="data:image/png;base64,AAAA"/> in HTML.'
    st = InMemoryStorage()
    report = import_text(st, "\n".join(json.dumps({
        "messages": [{"role": "user", "content": t}],
        "response": {"choices": [{"message": {"role": "assistant", "content": "ok"}}]}})
        for t in (text, small)))
    first, second = (st.memory.get_messages(t)[0] for t in report.threads_created)
    assert [p.text for p in first.parts] == ["Parse this. ", " Thanks."]
    assert first.metadata["attachments"] == [{
        "index": 1, "type": "image_url", "media_type": "image/png",
        **_decoded(data)}]
    assert data not in json.dumps(st.runs.list(report.runs_created[0]), default=str)
    assert second.content == small and "attachments" not in second.metadata
    assert [k.reason for k in report.skipped if "<img" in k.reason] == [
        'message 0: 1 image(s) written into its text as <img src="data:…"> kept as '
        "placeholders"]


def _decoded(data: str) -> dict[str, Any]:
    raw = base64.b64decode(data + "=" * (-len(data) % 4))
    return {"bytes": len(raw), "sha256": hashlib.sha256(raw).hexdigest()}


def test_a_placeholder_names_the_size_and_digest_of_what_was_sent() -> None:
    """An outside trial (Braintrust's cassettes): a placeholder's size and sha256 were
    the base64 text's — a 1,958,567-byte PNG said 2,611,424 bytes and a digest no file
    has. They are the decoded content's now, for a data URI, an audio part's data and a
    Gemini inline part, base64 wrapped or URL-safe alike; text that is not base64 is
    summarised as it is, and says so."""
    png = bytes(range(256)) * 5 + b"\xfb\xff"
    plain, safe = base64.b64encode(png).decode(), base64.urlsafe_b64encode(png).decode()
    want = {"bytes": len(png), "sha256": hashlib.sha256(png).hexdigest()}
    parts = [{"type": "image_url", "image_url": {"url": f"data:image/png;base64,{plain}"}},
             {"type": "input_audio", "input_audio": {"data": safe, "format": "wav"}},
             {"type": "image_url", "image_url": {
                 "url": "data:image/png;base64," + "\n".join(plain[i:i + 76]
                                                            for i in range(0, len(plain), 76))}},
             {"type": "image_url", "image_url": {"url": "data:text/plain,a%20b"}},
             {"type": "image_url", "image_url": {"url": "data:image/png;base64,@@not it@@"}}]
    st = InMemoryStorage()
    report = import_text(st, json.dumps({"messages": [{"role": "user", "content": [
        {"type": "text", "text": "What is this?"}, *parts]}], "response": {"choices": [
            {"message": {"role": "assistant", "content": "A test card."}}]}}))
    got = st.memory.get_messages(report.threads_created[0])[0].metadata["attachments"]
    assert [{k: a[k] for k in ("bytes", "sha256") if k in a} for a in got[:3]] == [want] * 3
    assert (got[3]["bytes"], got[3]["sha256"]) == (3, hashlib.sha256(b"a b").hexdigest())
    assert got[4]["encoded"] == "not base64" and got[4]["bytes"] == len("@@not it@@")
    gemini = {"contents": [{"role": "user", "parts": [
        {"text": "What is this?"}, {"inlineData": {"mimeType": "image/png", "data": plain}}]}]}
    st = InMemoryStorage()
    report = import_text(st, json.dumps({"request": gemini, "response": {"candidates": [
        {"content": {"role": "model", "parts": [{"text": "A test card."}]}}]}}))
    (att,) = st.memory.get_messages(report.threads_created[0])[0].metadata["attachments"]
    assert {k: att[k] for k in ("bytes", "sha256")} == want, att


def test_fine_tuning_rows_and_sharegpt_conversations() -> None:
    ft = {"messages": [{"role": "user", "content": "2+2?"},
                       {"role": "assistant", "content": "4"}]}
    st = s()
    report = import_text(st, json.dumps(ft))
    assert texts(st, report.threads_created[0]) == ["user:2+2?", "assistant:4"]
    with pytest.raises(ImportFormatError, match="last message is not the assistant's"):
        import_text(s(), json.dumps({"messages": [{"role": "user", "content": "x"}]}))
    share = [{"id": "c1", "conversations": [
        {"from": "system", "value": "Use tools."},
        {"from": "human", "value": "Weather?"},
        {"from": "function_call", "value": "{\"name\": \"w\", \"arguments\": {}}"},
        {"from": "observation", "value": "sunny"},
        {"from": "gpt", "value": "Sunny."}]}]
    st = s()
    report = import_text(st, json.dumps(share))
    assert report.threads_created == ["c1"]
    got = texts(st, "c1")
    assert got[0] == "user:Weather?" and got[2].startswith("tool:w#call-")
    assert got[3] == "assistant:Sunny." and len(report.runs_created) == 2
    with pytest.raises(ImportFormatError, match="turn 0: unknown speaker 'robot'"):
        import_text(s(), json.dumps({"conversations": [{"from": "robot", "value": "x"}]}))


def test_responses_api_records() -> None:
    rec = {"request": {"model": "gpt-4.1", "instructions": "Be nice", "input": [
        {"role": "user", "content": [{"type": "input_text", "text": "Paris weather?"}]},
        {"type": "function_call", "call_id": "c1", "name": "w", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "Rainy"}]},
           "response": {"object": "response", "model": "gpt-4.1-x", "created_at": 1759502598,
                        "output": [{"type": "reasoning", "summary": []},
                                   {"type": "message", "role": "assistant", "content": [
                                       {"type": "output_text", "text": "Rainy."}]}],
                        "usage": {"input_tokens": 43, "output_tokens": 21}}}
    st = s()
    report = import_text(st, json.dumps(rec))
    assert texts(st, report.threads_created[0]) == [
        "user:Paris weather?", "assistant:w#c1", "tool:w#c1=Rainy", "assistant:Rainy."]
    step = st.runs.get(f"{report.runs_created[0]}:step:0")
    assert step["response"]["usage"] == {"input_tokens": 43, "output_tokens": 21}
    assert any("'reasoning' not imported" in k.reason for k in report.skipped)


def test_sse_streams_are_reassembled_and_a_bare_stream_is_explained() -> None:
    chunks = [{"model": "m1", "choices": [{"index": 0, "delta": {"role": "assistant",
                                                                  "content": "Hel"}}]},
              {"choices": [{"index": 0, "delta": {"content": "lo", "tool_calls": [
                  {"index": 0, "id": "c9", "function": {"name": "f", "arguments": "{\"a\""}}]}}]},
              {"choices": [{"index": 0, "delta": {"tool_calls": [
                  {"index": 0, "function": {"arguments": ": 1}"}}]}, "finish_reason": "stop"}],
               "usage": {"prompt_tokens": 3, "completion_tokens": 4}}]
    sse = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    st = s()
    report = import_text(st, json.dumps({"messages": [{"role": "user", "content": "x"}],
                                         "response": sse}))
    msgs = st.memory.get_messages(report.threads_created[0])
    assert msgs[1].text() == "Hello"
    assert msgs[1].tool_calls() == [ToolCallPart(id="c9", name="f", args={"a": 1})]
    step = st.runs.get(f"{report.runs_created[0]}:step:0")
    assert step["response"]["usage"] == {"input_tokens": 3, "output_tokens": 4}
    with pytest.raises(ImportFormatError, match="server-sent-events stream"):
        import_text(s(), sse)


def test_a_groq_stream_gives_its_usage_from_x_groq() -> None:
    """Groq's streams carry the usage in the last chunk's ``x_groq`` object, not at its
    top level: the run said its usage was unknown."""
    chunks = [{"model": "llama3-8b-8192", "x_groq": {"id": "req_1"}, "choices": [
                  {"index": 0, "delta": {"role": "assistant", "content": "Hi"}}]},
              {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
               "x_groq": {"id": "req_1", "usage": {"prompt_tokens": 12, "completion_tokens": 26,
                                                   "queue_time": 0.02}}}]
    sse = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    st = s()
    report = import_text(st, json.dumps({"messages": [{"role": "user", "content": "x"}],
                                         "response": sse}))
    step = st.runs.get(f"{report.runs_created[0]}:step:0")
    assert step["usage_known"] is True
    assert step["response"]["usage"] == {"input_tokens": 12, "output_tokens": 26}


def test_a_refusal_is_the_answer_text_streamed_or_not_and_sent_back_alike() -> None:
    """A structured-outputs refusal comes as ``content: null`` and ``refusal``: the
    answer was stored empty (the refusal in metadata, streamed refusal deltas dropped),
    so the run showed no answer and its replay differed; the Responses API's refusal
    part was read as text. A later request sending it back continues the thread."""
    no = "I can't help with that."
    ask = {"role": "user", "content": "Synthesize it."}
    refused = {"role": "assistant", "content": None, "refusal": no}
    plain = {"request": {"model": "gpt-4o", "messages": [ask]},
             "response": {"choices": [{"message": refused}]}}
    chunks = [{"choices": [{"index": 0, "delta": {"role": "assistant", "refusal": ""}}]},
              {"choices": [{"index": 0, "delta": {"refusal": "I can't "}}]},
              {"choices": [{"index": 0, "delta": {"refusal": "help with that."},
                            "finish_reason": "stop"}]}]
    streamed = {"request": {"model": "gpt-4o", "messages": [ask]},
                "response": "".join(f"data: {json.dumps(c)}\n\n" for c in chunks)}
    again = {"request": {"model": "gpt-4o", "messages": [
                 ask, refused, {"role": "user", "content": "Why?"}]},
             "response": {"choices": [{"message": {"role": "assistant",
                                                   "content": "Safety."}}]}}
    for first in (plain, streamed):
        st = s()
        report = import_text(st, "\n".join(json.dumps(r) for r in (first, again)))
        assert len(report.threads_created) == 1
        msgs = st.memory.get_messages(report.threads_created[0])
        assert [(m.role, m.text()) for m in msgs] == [
            ("user", "Synthesize it."), ("assistant", no), ("user", "Why?"),
            ("assistant", "Safety.")]
        step = st.runs.get(f"{report.runs_created[0]}:step:0")
        assert step["response"]["text"] == no
        assert any("the answer is a refusal ('refusal'), stored as its text" in k.reason
                   for k in report.skipped)


def test_an_answer_s_url_citations_are_noted_with_the_pages_cited() -> None:
    """A web-searched Responses answer annotates its text with ``url_citation``s
    (Weave's cassette): they were dropped without a note while the search call beside
    them was noted."""
    cite = {"type": "url_citation", "start_index": 0, "end_index": 12,
            "url": "https://news.example/markets", "title": "Markets"}
    record = {"request": {"model": "gpt-4o", "input": "News today?",
                          "tools": [{"type": "web_search_preview"}]},
              "response": {"id": "resp_1", "object": "response", "model": "gpt-4o",
                           "output": [
                               {"type": "web_search_call", "id": "ws_1", "status": "completed"},
                               {"type": "message", "role": "assistant", "content": [
                                   {"type": "output_text", "text": "Stocks rose.",
                                    "annotations": [cite, {**cite, "start_index": 6}]}]}],
                           "usage": {"input_tokens": 9, "output_tokens": 3}}}
    st = s()
    report = import_text(st, json.dumps(record))
    assert "output[1]: 2 annotation(s) of its text (url_citation) not imported; citing " \
           "https://news.example/markets" in [n.reason for n in report.skipped]
    step = st.runs.get(f"{report.runs_created[0]}:step:0")
    assert step["response"]["text"] == "Stocks rose."


def test_a_responses_stream_cut_at_max_output_tokens_imports_as_incomplete() -> None:
    """A Responses API stream that stops at ``max_output_tokens`` ends with
    ``response.incomplete``, not ``response.completed``: the whole file was refused
    (Mirascope's max-tokens recordings)."""
    final = {"id": "resp_1", "object": "response", "status": "incomplete",
             "model": "gpt-4o", "incomplete_details": {"reason": "max_output_tokens"},
             "output": [{"type": "message", "role": "assistant", "content": [
                 {"type": "output_text", "text": "1. Alabama\n2. Alaska"}]}],
             "usage": {"input_tokens": 14, "output_tokens": 8}}
    events = [{"type": "response.created", "response": {**final, "status": "in_progress",
                                                        "output": []}},
              {"type": "response.output_text.delta", "delta": "1. Alabama\n2. Alaska"},
              {"type": "response.incomplete", "response": final}]
    stream = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    record = {"request": {"model": "gpt-4o", "input": "List all U.S. states.",
                          "max_output_tokens": 8, "stream": True}, "response": stream}
    st = s()
    report = import_text(st, json.dumps(record))
    step = st.runs.get(f"{report.runs_created[0]}:step:0")
    assert step["response"]["text"] == "1. Alabama\n2. Alaska"
    # the finish reason says why it stopped, as a chat completion's "length" would
    assert step["response"]["finish_reason"] == "incomplete: max_output_tokens"
    assert step["response"]["usage"] == {"input_tokens": 14, "output_tokens": 8}
    cut = "".join(f"data: {json.dumps(e)}\n\n" for e in events[:2])
    with pytest.raises(ImportFormatError, match="line 1: the recorded Responses stream has no "
                       "response.completed, response.incomplete or response.failed event"):
        import_text(s(), json.dumps({**record, "response": cut}))


def test_a_completed_response_of_server_side_calls_only_is_no_failure() -> None:
    """Trial 10: a Responses call whose output is one remote MCP server's call (run by
    OpenAI: mcp_call roll -> "4"), status completed, was stored as a failed run
    ("no output recorded") and its usage was lost."""
    record = {"request": {"model": "gpt-4o-mini", "input": "Roll 2d4+1", "tools": [
        {"type": "mcp", "server_label": "dmcp", "server_url": "https://example.invalid/sse",
         "require_approval": "never"}]},
              "response": {"id": "resp_1", "object": "response", "status": "completed",
                           "created_at": 1741294021, "model": "gpt-4.1-2025-04-14",
                           "output": [{"id": "mcp_1", "type": "mcp_call", "name": "roll",
                                       "arguments": '{"diceRollExpression": "2d4 + 1"}',
                                       "output": "4", "server_label": "dmcp"}],
                           "usage": {"input_tokens": 291, "output_tokens": 23}}}
    st = s()
    report = import_text(st, json.dumps(record))
    run = st.runs.require_run(report.runs_created[0])
    assert run.status == "completed" and run.error is None
    step = st.runs.get(f"{report.runs_created[0]}:step:0")
    assert step["response"]["usage"] == {"input_tokens": 291, "output_tokens": 23}
    reasons = [k.reason for k in report.skipped]
    assert "output[0]: item of type 'mcp_call' not imported" in reasons
    # (and says why it is empty: the server ran the tool, and its item is not imported)
    assert ("the answer is empty (finish reason 'completed'): its output holds only items "
            "of tools OpenAI's server ran (mcp_call), which are not imported") in reasons
    # a response that failed or holds no output at all still fails
    failed = {**record["response"], "status": "failed", "output": [],
              "error": {"code": "server_error", "message": "boom"}}
    report = import_text(st2 := s(), json.dumps({**record, "response": failed}))
    assert st2.runs.require_run(report.runs_created[0]).status == "failed"


def test_a_responses_answer_cut_before_any_message_says_why() -> None:
    """gpt-5 can spend all of max_output_tokens reasoning: the response is "incomplete"
    with only a reasoning item. The failed run said "no output recorded", as if the
    recording had lost it; then it was a failed run that dropped its usage (295 in,
    4,096 out, all reasoning: where the tokens went). It is an empty answer, as a chat
    completion cut at its length is, its finish reason and its usage as recorded."""
    record = {"request": {"model": "gpt-5-mini", "input": "Recommend a book.",
                          "max_output_tokens": 4096},
              "response": {"id": "resp_1", "object": "response", "status": "incomplete",
                           "incomplete_details": {"reason": "max_output_tokens"},
                           "output": [{"id": "rs_1", "type": "reasoning", "summary": []}],
                           "usage": {"input_tokens": 295, "output_tokens": 4096,
                                     "output_tokens_details": {"reasoning_tokens": 4096}}}}
    st = s()
    report = import_text(st, json.dumps(record))
    rid = report.runs_created[0]
    assert st.runs.require_run(rid).status == "completed"
    step = st.runs.get(f"{rid}:step:0")
    assert step["response"]["text"] is None and step["usage_known"]
    assert step["response"]["usage"] == {"input_tokens": 295, "output_tokens": 4096}
    assert step["response"]["finish_reason"] == "incomplete: max_output_tokens"
    assert "the answer is empty (finish reason 'incomplete: max_output_tokens', 4096 " \
           "output token(s) of reasoning)" in [k.reason for k in report.skipped]


def test_custom_tool_calls_are_read_in_chat_and_responses_records() -> None:
    """GPT-5's custom tools take free-form input: chat ``{"type": "custom", "custom":
    {"name", "input"}}`` calls refused the file ("tool call 0 has no function name");
    the Responses API's ``custom_tool_call`` items were not imported (the run failed
    with no output); the offered tool was named "custom". The input is the call's
    argument, kept as sent (``"42"`` stays text)."""
    tool = {"type": "custom", "custom": {"name": "math_exp", "description": "Math"}}
    call = {"id": "call_1", "type": "custom", "custom": {"name": "math_exp", "input": "42"}}
    ask = {"role": "user", "content": "Add."}
    chat = [{"request": {"model": "gpt-5", "messages": [ask], "tools": [tool]},
             "response": {"choices": [{"message": {"role": "assistant", "content": None,
                                                   "tool_calls": [call]}}]}},
            {"request": {"model": "gpt-5", "tools": [tool], "messages": [
                ask, {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "call_1", "content": "42"}]},
             "response": {"choices": [{"message": {"role": "assistant",
                                                   "content": "It is 42."}}]}}]
    flat = {"type": "custom", "name": "math_exp", "description": "Math"}
    item = {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_1",
            "name": "math_exp", "input": "42"}
    responses = [{"request": {"model": "gpt-5", "input": "Add.", "tools": [flat]},
                  "response": {"id": "resp_1", "output": [item]}},
                 {"request": {"model": "gpt-5", "tools": [flat], "input": [
                     {"role": "user", "content": "Add."}, item,
                     {"type": "custom_tool_call_output", "call_id": "call_1",
                      "output": "42"}]},
                  "response": {"id": "resp_2", "output": [
                      {"type": "message", "role": "assistant",
                       "content": [{"type": "output_text", "text": "It is 42."}]}]}}]
    for records in (chat, responses):
        st = s()
        report = import_text(st, "\n".join(json.dumps(r) for r in records))
        msgs = st.memory.get_messages(report.threads_created[0])
        assert len(report.threads_created) == 1 and len(msgs) == 4
        assert msgs[1].tool_calls() == [ToolCallPart(id="call_1", name="math_exp", args="42")]
        assert msgs[2].tool_results()[0].name == "math_exp"
        step = st.runs.get(f"{report.runs_created[0]}:step:0")
        assert [(t["name"], t["description"]) for t in step["tools"]] == [("math_exp", "Math")]
        assert not [k for k in report.skipped if "kept by name only" in k.reason]


def test_a_responses_stored_prompt_is_read_from_what_the_response_rendered() -> None:
    """A Responses API request may send a stored prompt (``{"prompt": {"id", "version",
    "variables"}}``) and no input: it was taken for a legacy completion ("'prompt' must
    be a string or a list of strings"). The server renders it and echoes the messages as
    the response's ``instructions`` items: the developer one is the run's instructions,
    the rest its input; without that echo, the prompt holds only what was sent."""
    def record(rendered: Any) -> dict[str, Any]:
        return {"request": {"prompt": {"id": "pmpt_1", "version": "4",
                                       "variables": {"question": "What is ML?"}}},
                "response": {"id": "resp_1", "object": "response", "model": "o4-mini",
                             "instructions": rendered, "output": [
                                 {"type": "message", "role": "assistant", "content": [
                                     {"type": "output_text", "text": "Learning from data."}]}],
                             "usage": {"input_tokens": 31, "output_tokens": 5}}}

    echoed = [{"type": "message", "role": "developer",
               "content": [{"type": "input_text", "text": "Be direct."}]},
              {"type": "message", "role": "user",
               "content": [{"type": "input_text", "text": "Answer: What is ML?"}]}]
    st = s()
    report = import_text(st, json.dumps(record(echoed)))
    rid = report.runs_created[0]
    assert [(i["lane"], i["message"]["role"]) for i in st.runs.get(f"{rid}:prompt")["items"]
            ] == [("instructions", "system"), ("input", "user")]
    assert [m.text() for m in st.memory.get_messages(report.threads_created[0])] == [
        "Answer: What is ML?", "Learning from data."]
    assert any("prompt 'pmpt_1' (version 4) rendered server-side; its messages are taken "
               "from the response's 'instructions'" in k.reason for k in report.skipped)
    st = s()
    report = import_text(st, json.dumps(record(None)))
    assert [m.text() for m in st.memory.get_messages(report.threads_created[0])] == [
        "Learning from data."]
    assert any("rendered server-side and not echoed" in k.reason for k in report.skipped)


def test_an_unknown_shape_names_what_it_saw_and_what_to_do() -> None:
    with pytest.raises(ImportFormatError) as info:
        import_text(s(), json.dumps({"prompt_text": "x", "answer": "y"}))
    msg = str(info.value)
    assert "keys answer, prompt_text" in msg
    # (it shares no key with any format: the commonest is named, not as the closest)
    assert "it shares too little with any format this importer reads to name the " \
           "closest — the commonest is an OpenAI chat-completions" in msg


# -- errors, not tracebacks -----------------------------------------------------------------
BAD_OPENAI = [
    ('{"messages": [{"role": "user", "content": "x"}], "response": {"created": NaN, '
     '"choices": [{"message": {"content": "y"}}]}}', "line 1: invalid JSON: NaN is not"),
    (json.dumps({"messages": [{"role": "user", "content": "x"}], "response": {
        "created": 1e300, "choices": [{"message": {"content": "y"}}]}}),
     "line 1: response.created 1e+300 is not a plausible unix timestamp"),
    ('{"messages": [{"role": "user", "content": "\\ud800"}], "response": {"choices": '
     '[{"message": {"content": "y"}}]}}',
     "line 1: the string at /messages/0/content contains a lone UTF-16 surrogate"),
    ('{"messages": [{"role": "user", "content": "a\\u0000b"}], "response": {"choices": '
     '[{"message": {"content": "y"}}]}}',
     "line 1: the string at /messages/0/content contains a NUL character"),
    ('{"messages": [{"role": "user", "content": ' + "[" * 200 + "]" * 200 + "}]}",
     "line 1: nested more than 100 levels deep"),
    (json.dumps({"messages": [{"role": ["user"], "content": "x"}]}),
     "line 1: message 0: unknown role ['user']"),
    (json.dumps({"messages": [{"role": "user", "content": "x"}], "temperature": "hot",
                 "response": {"choices": [{"message": {"content": "y"}}]}}),
     "line 1: request 'temperature' must be a number, got 'hot'"),
]


@pytest.mark.parametrize(("text", "expected"), BAD_OPENAI)
def test_malformed_openai_values_name_the_line(text: str, expected: str) -> None:
    st = s()
    with pytest.raises(ImportFormatError) as info:
        import_text(st, text, format="openai")
    assert str(info.value).startswith(expected), str(info.value)
    assert st.memory.list_threads() == [] and st.runs.list("") == []


def _content_span(extra: dict[str, Any], **kw: Any) -> dict[str, Any]:
    msgs = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "hi"}]}])
    out = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "yo"}]}])
    return span("00000000000000aa", {"gen_ai.operation.name": "chat",
                                     "gen_ai.input.messages": msgs,
                                     "gen_ai.output.messages": out, **extra}, **kw)


def test_malformed_otel_values_name_the_span() -> None:
    bad_int = _content_span({})
    bad_int["attributes"].append({"key": "gen_ai.usage.input_tokens",
                                  "value": {"intValue": "many"}})
    cases = [
        (otlp([bad_int]), "span 00000000000000aa (chat m): attribute gen_ai.usage.input_tokens"
                          ": intValue 'many' is not an integer"),
        (otlp([_content_span({}, start="99999999999999999999999")]),
         "span 00000000000000aa (chat m): startTimeUnixNano 99999999999999999999999 is not "
         "a plausible unix timestamp"),
        (otlp([_content_span({}, start="soon")]),
         "span 00000000000000aa (chat m): startTimeUnixNano must be an integer"),
        (otlp([_content_span({"gen_ai.input.messages": json.dumps(
            [{"role": ["user"], "parts": []}])})]),
         "span 00000000000000aa (chat m): gen_ai.input.messages[0]: unknown role ['user']"),
    ]
    for text, expected in cases:
        with pytest.raises(ImportFormatError) as info:
            import_text(s(), text)
        assert str(info.value).startswith(expected), str(info.value)


def test_tool_results_keep_their_call_ids_in_parallel_calls() -> None:
    rec = {"messages": [
        {"role": "user", "content": "both"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
            {"id": "b", "type": "function", "function": {"name": "g", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "b", "content": "B"},
        {"role": "tool", "tool_call_id": "a", "content": "A"}],
        "response": {"choices": [{"message": {"content": "ok"}}]}}
    st = s()
    report = import_text(st, json.dumps(rec))
    results = [p for m in st.memory.get_messages(report.threads_created[0])
               for p in m.tool_results()]
    assert results == [ToolResultPart(call_id="b", name="g", result="B"),
                       ToolResultPart(call_id="a", name="f", result="A")]


def test_raw_lone_surrogates_in_text_name_the_line() -> None:
    text = json.dumps({"messages": [{"role": "user", "content": "ok"}],
                       "response": {"choices": [{"message": {"content": "y"}}]}})
    with pytest.raises(ImportFormatError, match="line 2: contains a lone UTF-16 surrogate"):
        import_text(s(), text + "\n" + text.replace("ok", "\ud800"))


def test_the_latest_conventions_details_event_with_structured_values() -> None:
    """gen_ai.client.inference.operation.details as a log record whose attributes hold
    the messages as OTLP arrays of key/value lists (no JSON strings)."""
    details = {"timeUnixNano": T, "eventName": "gen_ai.client.inference.operation.details",
               "traceId": "a" * 32, "spanId": "00000000000000a1", "attributes": [
                   attr("gen_ai.input.messages", [{"role": "user", "parts": [
                       {"type": "text", "content": "Ping?"}]}]),
                   attr("gen_ai.output.messages", [{"role": "assistant", "parts": [
                       {"type": "text", "content": "Pong."}], "finish_reason": "stop"}]),
                   attr("gen_ai.system_instructions", [{"type": "text",
                                                        "content": "Answer briefly."}])]}
    st = s()
    report = import_text(st, otlp([MODEL_SPAN], [details]))
    assert texts(st, report.threads_created[0]) == ["user:Ping?", "assistant:Pong."]
    prompt = st.runs.get(f"{report.runs_created[0]}:prompt")
    assert prompt["items"][0]["message"]["content"] == "Answer briefly."
    step = st.runs.get(f"{report.runs_created[0]}:step:0")
    assert step["response"]["finish_reason"] == "stop"


def test_a_cassette_answer_with_no_body_is_a_failed_run_saying_so() -> None:
    import yaml

    s = InMemoryStorage()
    req = {"model": "gpt-4o", "messages": [{"role": "user", "content": "Hi"}]}
    ok = {"id": "c1", "object": "chat.completion", "model": "gpt-4o", "choices": [
        {"index": 0, "finish_reason": "stop",
         "message": {"role": "assistant", "content": "Hello"}}]}

    def interaction(body: str, code: int) -> dict[str, Any]:
        return {"request": {"method": "POST", "uri": "https://api.openai.com/v1/chat/completions",
                            "body": json.dumps(req), "headers": {}},
                "response": {"status": {"code": code, "message": "OK"}, "headers": {},
                             "body": {"string": body}}}

    text = yaml.safe_dump({"interactions": [interaction(json.dumps(ok), 200),
                                            interaction("", 200), interaction("", 503)],
                           "version": 1})
    report = import_text(s, text)
    errors = [s.runs.require_run(r).error for r in report.runs_created]
    assert errors[0] is None
    # a 200 whose body is missing: the answer was not recorded (it read "HTTP 200")
    assert errors[1] is not None and "response body was not recorded" in errors[1]
    assert errors[2] is not None and "HTTP 503" in errors[2]


def test_a_cassette_body_in_brotli_is_read_when_a_codec_is_installed_else_named(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Agno's recordings (httpx with brotli installed) hold ``content-encoding: br``
    bodies: the error said "'utf-8' codec can't decode byte 0xc4", naming neither the
    encoding nor what to do."""
    import sys
    import types

    import yaml

    answer = {"id": "c1", "object": "chat.completion", "model": "gpt-4o", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "Hello"}}]}
    packed = b"BR" + json.dumps(answer).encode()  # what the fake codec below unpacks

    def cassette(encoding: str) -> str:
        req = {"model": "gpt-4o", "messages": [{"role": "user", "content": "Hi"}]}
        return yaml.safe_dump({"interactions": [{
            "request": {"method": "POST", "uri": "https://api.openai.com/v1/chat/completions",
                        "body": json.dumps(req), "headers": {}},
            "response": {"status": {"code": 200}, "headers": {"Content-Encoding": [encoding]},
                         "body": {"string": packed}}}]})

    monkeypatch.setitem(sys.modules, "brotli", None)  # not installed
    monkeypatch.setitem(sys.modules, "brotlicffi", None)
    with pytest.raises(ImportFormatError, match=r"interaction 1: response: body has "
                       r"content-encoding 'br': install the 'brotli' package"):
        import_text(InMemoryStorage(), cassette("br"))
    with pytest.raises(ImportFormatError, match="content-encoding 'compress', which the "
                                                "importer does not read"):
        import_text(InMemoryStorage(), cassette("compress"))
    class Decompressor:  # brotli's streaming API, as limits.decompress drives it
        def __init__(self) -> None:
            self.seen = b""

        def process(self, data: bytes) -> bytes:
            before, self.seen = len(self.seen), self.seen + data
            return self.seen[max(before, 2):]

        def is_finished(self) -> bool:
            return self.seen.startswith(b"BR")

    monkeypatch.setitem(sys.modules, "brotli", types.SimpleNamespace(
        Decompressor=Decompressor))
    st = InMemoryStorage()
    report = import_text(st, cassette("br"))
    assert [m.text() for m in st.memory.get_messages(report.threads_created[0])] == [
        "Hi", "Hello"]


def test_a_brotli_body_is_read_on_a_default_install() -> None:
    """brotli is a dependency: a cassette whose answer the server sent as
    ``content-encoding: br`` (wandb/weave's OpenAI and Mistral recordings) imports
    without installing anything more."""
    import brotli
    import yaml

    answer = {"id": "c1", "object": "chat.completion", "model": "gpt-4o", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "Hello"}}]}
    req = {"model": "gpt-4o", "messages": [{"role": "user", "content": "Hi"}]}
    text = yaml.safe_dump({"interactions": [{
        "request": {"method": "POST", "uri": "https://api.openai.com/v1/chat/completions",
                    "body": json.dumps(req), "headers": {}},
        "response": {"status": {"code": 200}, "headers": {"Content-Encoding": ["br"]},
                     "body": {"string": brotli.compress(json.dumps(answer).encode())}}}]})
    st = InMemoryStorage()
    report = import_text(st, text)
    assert [m.text() for m in st.memory.get_messages(report.threads_created[0])] == [
        "Hi", "Hello"]


def test_a_brotli_body_is_bounded_like_gzip(monkeypatch: pytest.MonkeyPatch) -> None:
    """A br body was decompressed whole by the codec (issue 33.6): now it is fed a few
    bytes at a time and refused once its output passes MEMWB_MAX_DECOMPRESSED."""
    import sys
    import types

    import yaml

    fed: list[int] = []

    class Decompressor:  # every byte fed expands to 1 MiB
        def process(self, data: bytes) -> bytes:
            fed.append(len(data))
            return b" " * (len(data) << 20)

        def is_finished(self) -> bool:
            return False

    monkeypatch.setitem(sys.modules, "brotli", types.SimpleNamespace(
        Decompressor=Decompressor))
    monkeypatch.setenv("MEMWB_MAX_DECOMPRESSED", str(64 << 20))
    req = {"model": "gpt-4o", "messages": [{"role": "user", "content": "Hi"}]}
    text = yaml.safe_dump({"interactions": [{
        "request": {"method": "POST", "uri": "https://api.openai.com/v1/chat/completions",
                    "body": json.dumps(req), "headers": {}},
        "response": {"status": {"code": 200}, "headers": {"Content-Encoding": ["br"]},
                     "body": {"string": b"x" * 10_000}}}]})
    with pytest.raises(ImportFormatError, match=r"interaction 1: response: body: the br data "
                       r"decompressed is larger than 67108864 bytes; raise "
                       r"MEMWB_MAX_DECOMPRESSED"):
        import_text(InMemoryStorage(), text)
    assert sum(fed) <= 80  # it stopped a step past the bound, not at 10,000 bytes


def test_a_cassette_url_with_a_fragment_is_still_a_model_call() -> None:
    """Mistral's client records a streamed call as ``…/v1/chat/completions#stream``:
    the fragment hid the path, and the call was skipped as "not a chat … call"."""
    import yaml

    req = {"model": "mistral-small-latest", "messages": [{"role": "user", "content": "Hi"}]}
    ok = {"id": "c1", "object": "chat.completion", "model": "mistral-small-latest",
          "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello"}}]}
    text = yaml.safe_dump({"interactions": [{
        "request": {"method": "POST", "body": json.dumps(req),
                    "uri": "https://api.mistral.ai/v1/chat/completions#stream"},
        "response": {"status": {"code": 200}, "body": {"string": json.dumps(ok)}}}]})
    st = InMemoryStorage()
    report = import_text(st, text)
    assert [m.text() for m in st.memory.get_messages(report.threads_created[0])] == [
        "Hi", "Hello"]
    assert report.skipped == []


def test_a_cassette_of_vcrpys_older_httpx_stubs_is_read() -> None:
    """vcrpy's older httpx stubs wrote ``status_code`` and the body as ``content``
    text (Portkey's recordings): every answer read "the response body was not recorded
    (HTTP 200)", and an error status passed for 200."""
    import yaml

    def call(q: str, code: int, content: str) -> dict[str, Any]:
        req = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": q}]}
        return {"request": {"method": "POST", "uri": "https://api.portkey.ai/v1/chat/completions",
                            "body": json.dumps(req), "headers": {}},
                "response": {"status_code": code, "http_version": "HTTP/1.1", "headers": {},
                             "content": content}}

    ok = {"id": "c1", "object": "chat.completion", "model": "gpt-4o-mini", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "Sunny."}}],
          "usage": {"prompt_tokens": 12, "completion_tokens": 2}}
    limited = json.dumps({"error": {"message": "Rate limit reached"}})
    st = InMemoryStorage()
    report = import_text(st, yaml.safe_dump({"interactions": [
        call("Weather?", 200, json.dumps(ok)), call("Again?", 429, limited)]}))
    answered, failed = (st.runs.require_run(r) for r in report.runs_created)
    assert answered.status == "completed" and failed.status == "failed"
    assert [m.text() for m in st.memory.get_messages(answered.thread_id or "")] == [
        "Weather?", "Sunny."]
    assert "Rate limit reached" in (failed.error or "")


def test_a_cassette_call_that_sends_no_conversation_is_skipped_saying_so() -> None:
    """Portkey's prompts API (``…/prompts/<id>/completions``) sends template variables
    and the server renders the messages: such a call failed the whole cassette with
    "missing 'messages'"; it is skipped, naming what it sent, and the rest imports."""
    import yaml

    answer = {"id": "c1", "object": "chat.completion", "model": "gpt-4o-mini", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "Sunny."}}]}

    def call(path: str, body: dict[str, Any]) -> dict[str, Any]:
        return {"request": {"method": "POST", "uri": f"https://api.portkey.ai/v1{path}",
                            "body": json.dumps(body)},
                "response": {"status": {"code": 200}, "body": {"string": json.dumps(answer)}}}

    template = call("/prompts/pp-weather/completions",
                    {"variables": {"location": "Paris"}, "stream": False})
    chat = call("/chat/completions", {"model": "gpt-4o-mini", "messages": [
        {"role": "user", "content": "Weather?"}]})
    st = InMemoryStorage()
    report = import_text(st, yaml.safe_dump({"interactions": [template, chat]}))
    assert len(report.runs_created) == 1
    assert [(k.where, k.reason) for k in report.skipped] == [(
        "interaction 1", "the request to https://api.portkey.ai/v1/prompts/pp-weather/"
        "completions sends no messages, input, prompt or contents (its keys: stream, variables): "
        "the conversation is not in the recording")]
    # (a file of such calls alone: model calls, none with its conversation, said so)
    with pytest.raises(ImportFormatError, match="the cassette holds 1 model call.s., none of "
                                                "which can be imported: .*sends no messages"):
        import_text(InMemoryStorage(), yaml.safe_dump({"interactions": [template]}))
    embed = call("/embeddings", {"model": "e", "input": "x"})
    with pytest.raises(ImportFormatError, match="holds no model call this importer reads .* its 2 "
                                                "interaction.*sends no messages"):
        import_text(InMemoryStorage(), yaml.safe_dump({"interactions": [template, embed]}))


def test_a_har_file_is_read_as_its_model_calls() -> None:
    """HAR (browser exports, Polly.js recordings such as Mirascope's TypeScript tests):
    each entry is a request/response; its content is decoded text (or base64) whatever
    content-encoding header it kept; other entries are skipped with their URL."""
    import base64

    def entry(url: str, body: str | None, status: int, text: str,
              encoding: str | None = None) -> dict[str, Any]:
        content: dict[str, Any] = {"mimeType": "application/json", "text": text}
        if encoding:
            content["encoding"] = encoding
        return {"startedDateTime": "2026-01-26T05:44:29.447Z", "request": {
                    "method": "POST" if body else "GET", "url": url, "headers": [
                        {"name": "authorization", "value": "[REDACTED]"}],
                    **({"postData": {"mimeType": "application/json", "text": body}}
                       if body else {})},
                "response": {"status": status, "headers": [
                    {"name": "content-encoding", "value": "br"}], "content": content}}

    def chat(q: str) -> str:
        return json.dumps({"model": "gpt-5-mini", "messages": [{"role": "user", "content": q}]})

    answer = json.dumps({"id": "c1", "object": "chat.completion", "model": "gpt-5-mini",
                         "created": 1769406269, "choices": [{"index": 0, "message": {
                             "role": "assistant", "content": "4242"}}],
                         "usage": {"prompt_tokens": 15, "completion_tokens": 11}})
    har = {"log": {"version": "1.2", "creator": {"name": "Polly.JS"}, "entries": [
        entry("https://example.test/health", None, 200, "ok"),
        entry("https://api.openai.com/v1/chat/completions", chat("What is 4200 + 42?"), 200,
              base64.b64encode(answer.encode()).decode(), "base64"),
        entry("https://api.openai.com/v1/chat/completions", chat("Again?"), 404,
              json.dumps({"error": {"message": "The model does not exist"}}))]}}
    st = InMemoryStorage()
    report = import_text(st, json.dumps(har, indent=2), name="calls.har")
    done, failed = (st.runs.require_run(r) for r in report.runs_created)
    assert [m.text() for m in st.memory.get_messages(done.thread_id or "")] == [
        "What is 4200 + 42?", "4242"]
    assert failed.status == "failed" and "does not exist" in (failed.error or "")
    assert [(k.where, k.reason) for k in report.skipped] == [
        ("entry 1", "not a model call this importer reads "
                    "(GET https://example.test/health)")]
    # the failed call's body has no time: it takes its entry's startedDateTime
    assert failed.started_at.isoformat() == "2026-01-26T05:44:29.447000+00:00"
    with pytest.raises(ImportFormatError, match=r"a HAR file must hold \{\"log\": "):
        import_text(InMemoryStorage(), '{"log": {"version": "1.2"}}')
    with pytest.raises(ImportFormatError, match="entry 1: response 'status' must be a number"):
        import_text(InMemoryStorage(), json.dumps({"log": {"entries": [
            {**har["log"]["entries"][1], "response": {"status": "200"}}]}}))


def test_a_cassette_with_python_tagged_header_names_is_read_as_plain_values() -> None:
    """vcrpy with aiohttp writes header names as ``!!python/object/apply:multidict.
    _multidict.istr`` objects (dd-trace-py's recordings): the safe loader refused the
    file ("could not determine a constructor"). The tags are read as the plain values
    they hold, and no Python object is ever made (``os.system`` is not called)."""
    import base64
    import gzip

    answer = {"id": "c1", "object": "chat.completion", "model": "gpt-4o", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "Hello"}}]}
    packed = base64.b64encode(gzip.compress(json.dumps(answer).encode())).decode()
    istr = "!!python/object/apply:multidict._multidict.istr"
    text = f"""interactions:
- request:
    body: '{{"model": "gpt-4o", "messages": [{{"role": "user", "content": "Hi"}}]}}'
    headers:
      ? {istr}
      - Content-Type
      : - application/json
      ? !!python/object/apply:os.system
      - echo not run
      : - x
    method: POST
    uri: https://api.openai.com/v1/chat/completions
  response:
    body:
      string: !!binary |
        {packed}
    headers:
      ? {istr}
      - Content-Encoding
      : - gzip
    status:
      code: 200
      message: OK
version: 1
"""
    st = InMemoryStorage()
    report = import_text(st, text)
    assert [m.text() for m in st.memory.get_messages(report.threads_created[0])] == [
        "Hi", "Hello"]


def test_a_cassette_of_another_api_is_refused_naming_what_it_holds() -> None:
    import yaml

    def call(url: str) -> dict[str, Any]:
        return {"request": {"method": "POST", "uri": url, "body": "{}", "headers": {}},
                "response": {"status": {"code": 200}, "headers": {}, "body": {"string": "{}"}}}

    rerank = "https://api.cohere.com/v2/rerank"
    text = yaml.safe_dump({"interactions": [call(rerank), call(rerank),
                                            call("https://example.test/v1/embeddings")]})
    with pytest.raises(ImportFormatError) as e:
        import_text(InMemoryStorage(), text)
    said = str(e.value)
    assert "its 3 interaction(s)" in said
    assert f"(POST {rerank}) ×2" in said and "(POST https://example.test/v1/embeddings)" in said


def test_an_undated_call_between_dated_ones_is_placed_between_them() -> None:
    import yaml

    def call(code: int, created: int | None) -> dict[str, Any]:
        body = "" if created is None else json.dumps({
            "id": f"c{created}", "object": "chat.completion", "model": "gpt-4o",
            "created": created, "choices": [{"index": 0, "finish_reason": "stop", "message": {
                "role": "assistant", "content": f"answer {created}"}}]})
        req = {"model": "gpt-4o", "messages": [{"role": "user", "content": f"q {created}"}]}
        return {"request": {"method": "POST", "uri": "https://api.openai.com/v1/chat/completions",
                            "body": json.dumps(req), "headers": {}},
                "response": {"status": {"code": code}, "headers": {}, "body": {"string": body}}}

    t1, t2 = 1_767_225_600, 1_767_225_660  # 2026-01-01 00:00 and a minute later
    text = yaml.safe_dump({"interactions": [call(503, None), call(200, t1), call(500, None),
                                            call(500, None), call(200, t2)]})
    s = InMemoryStorage()
    report = import_text(s, text)
    runs = [s.runs.require_run(r) for r in report.runs_created]
    starts = [r.started_at for r in runs]
    # in file order, each failed call beside the answered ones around it, none in 1970
    assert starts == sorted(starts) and len(set(starts)) == 5
    assert starts[0] == datetime(2026, 1, 1, tzinfo=UTC) - timedelta(microseconds=1)
    assert [r.status for r in runs] == ["failed", "completed", "failed", "failed", "completed"]
    placed = {k.where: k.reason for k in report.skipped if "no time recorded" in k.reason}
    assert placed == {"interaction 1": "no time recorded; placed just before interaction 2",
                      "interaction 3": "no time recorded; placed just after interaction 2",
                      "interaction 4": "no time recorded; placed just after interaction 2"}


def test_a_cassette_request_whose_body_was_not_recorded_is_skipped() -> None:
    """A recorder that filters request bodies out (vcrpy's ``filter_post_data_parameters``
    taken far, or ``body: null``) left the whole cassette refused: "the request body is
    not a JSON object". The other calls import; that one is skipped saying why."""
    import yaml

    def call(body: Any) -> dict[str, Any]:
        return {"request": {"method": "POST", "uri": "https://api.openai.com/v1/chat/completions",
                            "body": body, "headers": {}},
                "response": {"status": {"code": 200}, "headers": {}, "body": {"string": json.dumps(
                    {"choices": [{"message": {"role": "assistant", "content": "ok"}}]})}}}

    ok = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    s = InMemoryStorage()
    report = import_text(s, yaml.safe_dump({"interactions": [call(None), call(ok)]}),
                         name="c.yaml")
    assert len(report.runs_created) == 1
    assert [(k.where, k.reason) for k in report.skipped] == [
        ("interaction 1", "the request body to https://api.openai.com/v1/chat/completions "
                          "was not recorded: the conversation is not in the recording")]
    with pytest.raises(ImportFormatError, match="the cassette holds 1 model call.s., none of "
                                                "which can be imported: the request body to "
                                                ".* was not recorded"):
        import_text(InMemoryStorage(), yaml.safe_dump({"interactions": [call(None)]}),
                    name="c.yaml")
    with pytest.raises(ImportFormatError, match="interaction 1: the request body is not a "
                                                "JSON object, got list"):
        import_text(InMemoryStorage(), yaml.safe_dump({"interactions": [call("[1, 2]")]}),
                    name="c.yaml")


@pytest.mark.parametrize(("record", "error"), [  # each raised TypeError / ValidationError
    ({"request": {"prompt": "Say hi"}, "response": {"choices": [{"index": ["x"], "text": "hi"}]}},
     r"line 1: choice 0: 'index' must be an integer, got \['x'\]"),
    ({"request": {"prompt": "Say hi"}, "response": {"choices": -1}},
     r"line 1: response 'choices' must be a list, got -1"),
    ({"request": {"input": "hi"}, "response": {"object": "response", "status": True, "output": [
        {"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "hello"}]}]}},
     r"line 1: 'status' must be a non-empty string, got True"),
])
def test_wrong_types_in_completions_and_responses_are_named(record: dict[str, Any],
                                                            error: str) -> None:
    s = InMemoryStorage()
    with pytest.raises(ImportFormatError, match=error):
        import_text(s, json.dumps(record), name="r.jsonl")
    assert not s.memory.list_threads()


def test_a_cassettes_requests_other_than_post_are_not_model_calls() -> None:
    # GET …/v1/chat/completions lists stored completions: it failed the whole cassette
    # ("the request body is not a JSON object")
    import yaml

    def side(body: Any) -> dict[str, Any]:
        return {"headers": {}, "body": {"string": json.dumps(body)} if body else None}
    listing = {"request": {"method": "GET", "uri": "https://api.openai.com/v1/chat/completions"
                                                  "?limit=10", **side(None)},
               "response": {"status": {"code": 200}, **side({"object": "list", "data": []})}}
    call = {"request": {"method": "POST", "uri": "https://api.openai.com/v1/chat/completions",
                        **side({"model": "m", "messages": [{"role": "user", "content": "hi"}]})},
            "response": {"status": {"code": 200}, **side({"created": 1767268800, "choices": [
                {"message": {"role": "assistant", "content": "yo"}}]})}}
    call["request"]["body"] = call["request"]["body"]["string"]
    report = import_text(InMemoryStorage(), yaml.safe_dump({"interactions": [listing, call]}),
                         name="c.yaml")
    assert len(report.runs_created) == 1
    assert [k.reason for k in report.skipped] == [
        "not a model call this importer reads (GET https://api.openai.com/v1/chat/completions)"]


@pytest.mark.parametrize(("prompt", "texts", "noted"), [
    ([464, 3290, 318], ["[prompt of 3 token ids]"],
     ["line 1: the prompt was sent as 3 token ids, not text: stored as a placeholder "
      "naming their number (they are not decoded)"]),
    ([[1, 2], [3, 4, 5]], ["[prompt of 2 token ids]", "[prompt of 3 token ids]"],
     ["line 1 prompt 0: the prompt was sent as 2 token ids, not text: stored as a "
      "placeholder naming their number (they are not decoded)",
      "line 1 prompt 1: the prompt was sent as 3 token ids, not text: stored as a "
      "placeholder naming their number (they are not decoded)"])])
def test_a_completion_prompt_of_token_ids_is_a_placeholder(prompt: Any, texts: list[str],
                                                          noted: list[str]) -> None:
    """A legacy completion's prompt given as token ids (one list, or a batch of lists)
    is each call's user message as a placeholder naming how many ids, noted — it was
    refused."""
    record = {"request": {"model": "davinci-002", "prompt": prompt, "max_tokens": 5},
              "response": {"choices": [{"index": i, "text": f" answer {i}"}
                                       for i in range(len(texts))]}}
    s = InMemoryStorage()
    report = import_text(s, json.dumps(record), name="c.jsonl")
    assert len(report.runs_created) == len(texts)
    users = [m.as_message().text() for t in report.threads_created
             for m in s.memory.get_messages(t) if m.role == "user"]
    assert users == texts
    assert [f"{k.where}: {k.reason}" for k in report.skipped
            if "token ids" in k.reason] == noted


def test_a_batch_with_n_answers_each_prompt_and_its_usage_is_counted_once() -> None:
    """A batch of two prompts with ``n: 2``: OpenAI lists each prompt's choices in turn
    (prompt 1's first is choice 2, not 1); the request's one usage goes to the first
    prompt's run only, so the runs add up to what the request used; all noted."""
    record = {"request": {"model": "davinci-002", "prompt": ["Say A.", "Say B."], "n": 2},
              "response": {"model": "davinci-002", "usage": {
                  "prompt_tokens": 6, "completion_tokens": 8, "total_tokens": 14},
                  "choices": [{"index": i, "text": f" {'AABB'[i]}{i % 2}",
                               "finish_reason": "stop"} for i in range(4)]}}
    s = InMemoryStorage()
    report = import_text(s, json.dumps(record), name="c.jsonl")
    answers = [m.as_message().text() for t in report.threads_created
               for m in s.memory.get_messages(t) if m.role == "assistant"]
    assert answers == [" A0", " B0"]
    steps = [s.runs.get(f"{rid}:step:0") for rid in report.runs_created]
    assert [(st["usage_known"], st["response"]["usage"]["input_tokens"],
             st["response"]["usage"]["output_tokens"]) for st in steps] == [
        (True, 6, 8), (False, 0, 0)]
    assert [f"{k.where}: {k.reason}" for k in report.skipped if "same second" not in k.reason
            ] == ["line 1 prompt 0: the response's usage counts all 2 prompts of the batch: "
                  "recorded with this run",
                  "line 1 prompt 0: 1 alternative choice(s) not imported (the recorded "
                  "usage counts their tokens too)",
                  "line 1 prompt 1: the response's usage counts all 2 prompts of the batch: "
                  "recorded with prompt 0's run",
                  "line 1 prompt 1: 1 alternative choice(s) not imported (the recorded "
                  "usage counts their tokens too)"]


@pytest.mark.parametrize("prompt", [[], [1, "two"], [[1], "x"], [[]], [True], [-1], 3])
def test_a_completion_prompt_of_no_known_form_is_refused_naming_it(prompt: Any) -> None:
    record = {"request": {"prompt": prompt}, "response": {"choices": [{"text": "x"}]}}
    with pytest.raises(ImportFormatError) as e:
        import_text(InMemoryStorage(), json.dumps(record), name="c.jsonl")
    assert str(e.value) == ("line 1: 'prompt' must be a string, a list of strings, a list of "
                            "token ids or a list of lists of token ids, got " + repr(prompt)
                            + "; read as a legacy completions record, by its request's "
                              "keys: prompt")


def test_a_record_read_by_its_keys_and_malformed_says_what_it_was_read_as() -> None:
    # a tracer's span log (Braintrust's shape): its 'input' key made it a Responses API
    # record, whose error alone ("'input' must be …") sent the user the wrong way
    span = {"input": {"kind": "undefined"}, "metadata": {"scenario": "chat"},
            "metrics": {"tokens": 3}, "name": "root", "output": None, "type": "task"}
    with pytest.raises(ImportFormatError) as e:
        import_text(InMemoryStorage(), json.dumps([span]), name="spans.json")
    assert str(e.value) == (
        "item 1: 'input' must be a string or a list of items, got dict; read as a Responses "
        "API record, by its keys: input, metadata, metrics, name, output, type")
    # a record whose URL names its API is that API's: its error is said as it is
    call = {"url": "https://api.openai.com/v1/responses", "request": {"input": 3},
            "response": {"output": []}}
    with pytest.raises(ImportFormatError) as e:
        import_text(InMemoryStorage(), json.dumps(call), name="call.json")
    assert "read as" not in str(e.value)
    # every format of the registry is named so
    assert {f.name for f in FORMATS} <= set(FORMAT_TITLES)


def test_a_text_part_without_its_text_says_so_not_that_text_is_unknown() -> None:
    # a text part without its text said "unknown type 'text' (expected text, …)",
    # contradicting itself (LLaMA-Factory's v1 "value" is read: formats/llamafactory.py)
    row = {"messages": [
        {"role": "user", "content": [{"type": "text", "content": "Schools near 40, -75?"}]},
        {"role": "assistant", "content": "Two."}]}
    with pytest.raises(ImportFormatError) as e:
        import_text(InMemoryStorage(), json.dumps(row), name="v1.jsonl")
    assert "line 1: message 0: content part 0 of type 'text' has no string 'text' (its " \
           "keys: type, content)" in str(e.value), str(e.value)


def test_a_rows_media_lists_are_named_not_taken_for_parameters() -> None:
    # LLaMA-Factory's multimodal demo: "images" beside the messages, an <image> token in
    # the text; inspect listed {"images": [...]} as the request's parameters
    row = {"messages": [{"role": "user", "content": "<image>Who are they?"},
                        {"role": "assistant", "content": "Two footballers."}],
           "images": ["mllm_demo_data/1.jpg"], "temperature": 0.2}
    s = InMemoryStorage()
    report = import_text(s, json.dumps(row), name="mllm.jsonl")
    record = s.runs.get(f"{report.runs_created[0]}:import")
    assert record["request_params"] == {"temperature": 0.2}
    assert "line 1: the record's images (1 named) not imported" in record["notes"]


def _batch(choices: list[int], **request: Any) -> tuple[InMemoryStorage, Any]:
    record = {"request": {"model": "davinci-002", "prompt": ["Say A.", "Say B."], **request},
              "response": {"model": "davinci-002", "usage": {
                  "prompt_tokens": 6, "completion_tokens": 8, "total_tokens": 14},
                  "choices": [{"index": i, "text": f" c{i}"} for i in choices]}}
    s = InMemoryStorage()
    return s, import_text(s, json.dumps(record), name="c.jsonl")


def test_a_batch_whose_first_prompt_has_no_answer_keeps_its_usage_with_the_next() -> None:
    s, report = _batch([1])
    steps = [s.runs.get(f"{rid}:step:0") for rid in report.runs_created]
    assert steps[0] is None  # prompt 0: no completion recorded, a failed run
    assert steps[1]["usage_known"] is True
    assert "line 1 prompt 1: the response's usage counts all 2 prompts of the batch: " \
           "recorded with this run" in [f"{k.where}: {k.reason}" for k in report.skipped]


def test_a_batch_with_n_as_a_whole_float_and_stray_choices_is_said() -> None:
    s, report = _batch([0, 1, 2, 3], n=2.0)
    answers = [m.as_message().text() for t in report.threads_created
               for m in s.memory.get_messages(t) if m.role == "assistant"]
    assert answers == [" c0", " c2"]
    s, report = _batch([0, 1, 2, 3])  # n 1: choices 2 and 3 answer no prompt
    assert "line 1 prompt 1: choice(s) 2, 3 answer no prompt of the 2 (n 1): not imported" \
        in [f"{k.where}: {k.reason}" for k in report.skipped]


def test_llamafactory_v1_rows_with_a_bad_part_are_left_out_naming_it() -> None:
    """LLaMA-Factory's v1 rows: a tool_call that is no JSON object with a name, or a part
    of a type the rows do not have, is that row's error (noted; the others imported)."""
    from memory_core.importers import import_text
    from memory_core.storage.inmemory import InMemoryStorage

    def row(*parts: dict[str, Any]) -> str:
        return json.dumps({"messages": [
            {"role": "user", "content": [{"type": "text", "value": "Hi"}]},
            {"role": "assistant", "content": list(parts)}]})
    good = row({"type": "reasoning", "value": "They greet."},
               {"type": "text", "value": "Hello!"})
    report = import_text(InMemoryStorage(), "\n".join([
        good, row({"type": "tool_call", "value": "not json"}),
        row({"type": "tool_call", "value": '{"arguments": {}}'}),
        row({"type": "audio", "value": "a.wav"})]))
    assert len(report.runs_created) == 1
    said = [(k.where, k.reason) for k in report.skipped if "not imported:" in k.reason]
    assert [w for w, _ in said] == ["line 2", "line 3", "line 4"]
    for (_, reason), start in zip(said, [
            "not imported: message 1: part 0 (tool_call) invalid JSON: Expecting",
            "not imported: message 1: part 0: a tool_call must be a JSON object with a",
            'not imported: message 1: part 0 must be {"type": text, reasoning, tool'],
            strict=True):
        assert reason.startswith(start), reason
    assert ("line 1", "message 1: part 0: the model's reasoning not imported") in [
        (k.where, k.reason) for k in report.skipped]


def test_review_hostile_values_in_the_newer_readers_are_one_clear_note() -> None:
    """What a review threw at the LLaMA-Factory, MLflow and nock readers: each a note
    or one clear error, never another exception."""
    from memory_core.importers import import_text
    from memory_core.storage.inmemory import InMemoryStorage

    def rows(*texts: str) -> InMemoryStorage:
        s = InMemoryStorage()
        import_text(s, "\n".join(texts))
        return s
    good = json.dumps({"messages": [{"role": "user", "content": "Hi"},
                                    {"role": "assistant", "content": "Hello"}]})
    odd = json.dumps({"messages": [
        {"role": "user", "content": [{"type": ["text"], "value": "x"}]},
        {"role": "assistant", "content": [{"type": "text", "value": "y"}]}]})
    deep = json.dumps({"messages": [
        {"role": "user", "content": [{"type": "text", "value": "q"}]},
        {"role": "tool", "content": [{"type": "text", "value": "[{" + "[" * 5000}]},
        {"role": "assistant", "content": [{"type": "text", "value": "a"}]}]})
    for text in (odd, deep):
        rows(good, text)  # (the other row imports; this one is noted or read)
    span = {"name": "chat", "span_id": "s", "start_time_unix_nano": "9" * 5000,
            "attributes": {"mlflow.spanType": json.dumps("CHAT_MODEL"),
                           "mlflow.spanInputs": "[" * 5000 + "]" * 5000}}
    with pytest.raises(ImportFormatError, match="span s .*nested"):
        import_text(InMemoryStorage(), json.dumps({"spans": [span]}))
    nock = [{"scope": "https://api.openai.com:443", "method": "POST",
             "path": "/v1/chat/completions", "status": 200,
             "body": {"model": "m", "messages": [{"role": "user", "content": "Hi"}]},
             "response": {"choices": [{"message": {"role": "assistant", "content": "Yo"}}]},
             "rawHeaders": {"content-encoding": []}}]
    assert len(import_text(InMemoryStorage(), json.dumps(nock)).runs_created) == 1


def test_stream_chunks_with_no_choices_are_noted_not_dropped_silently() -> None:
    """A chunk with no ``choices`` and no usage gave nothing and said nothing: a stream of
    them imported as an empty answer. It is noted; Writer's completions stream (chunks
    of ``{"value": text}``) is read as its text."""
    ask = {"model": "m", "prompt": "Tell me a joke", "stream": True}
    unknown = "".join(f"data: {json.dumps(c)}\n\n" for c in [{"token": "Hi"}, {"token": "!"}])
    s = InMemoryStorage()
    report = import_text(s, json.dumps({"request": ask, "response": unknown,
                                        "url": "https://x.example/v1/completions"}))
    assert any("2 stream chunk(s) with no choices skipped (keys: token)" in k.reason
               for k in report.skipped), report.skipped
    assert any("the answer is empty" in k.reason for k in report.skipped)
    values = "".join(f"data: {json.dumps({'value': v})}\n\n" for v in ["Why ", "not?"])
    s = InMemoryStorage()
    report = import_text(s, json.dumps({"request": ask, "response": values,
                                        "url": "https://api.writer.com/v1/completions"}))
    assert [m.text() for m in s.memory.get_messages(report.threads_created[0])] == [
        "Tell me a joke", "Why not?"]


def test_v1_chat_is_cohere_s_unless_the_answer_is_a_chat_completion() -> None:
    """``/v1/chat`` is Cohere v1's path and Writer's (OpenAI-compatible): a record there
    answered with ``choices`` is read as chat completions (it was refused as "a Cohere
    response needs a 'message' object"); Cohere's own stays Cohere's."""
    writer = {"url": "https://api.writer.com/v1/chat",
              "request": {"model": "palmyra-x4", "messages": [{"role": "user",
                                                                "content": "Hi"}]},
              "response": {"object": "chat.completion", "model": "palmyra-x4",
                           "choices": [{"index": 0, "finish_reason": "stop", "message": {
                               "role": "assistant", "content": "Hello"}}]}}
    cohere = {"url": "https://api.cohere.ai/v1/chat",
              "request": {"model": "command-r", "message": "Hi"},
              "response": {"text": "Hello", "generation_id": "g", "finish_reason": "COMPLETE",
                           "meta": {"billed_units": {"input_tokens": 1, "output_tokens": 1}}}}
    for record, api in ((writer, None), (cohere, "cohere")):
        s = InMemoryStorage()
        report = import_text(s, json.dumps(record))
        assert [m.text() for m in s.memory.get_messages(report.threads_created[0])] == [
            "Hi", "Hello"]
        assert s.runs.get(f"{report.runs_created[0]}:import")["extra"].get("api") == api


def test_a_claude_answer_alone_without_its_type_is_named_as_one() -> None:
    """Kong's gateway fixtures keep Claude's answer without its "type": it was "a JSON
    object with keys content, model, stop_reason, usage, which is no record this
    importer reads", where the typed one is named the response it is."""
    answer = {"content": [{"type": "text", "text": "You cannot divide by zero."}],
              "stop_reason": "stop_sequence", "model": "claude-2.1",
              "usage": {"input_tokens": 0, "output_tokens": 0}}
    with pytest.raises(ImportFormatError, match="the response of an Anthropic Messages API "
                                                "record without its request"):
        import_text(InMemoryStorage(), json.dumps(answer, indent=2))


def test_a_responses_api_answer_alone_is_named_as_one() -> None:
    """A Responses API response without its request was called "the response of an
    OpenAI chat-completions record" (both have model, tools and temperature)."""
    answer = {"id": "resp_1", "object": "response", "model": "gpt-4o", "output": [],
              "tools": [], "tool_choice": "auto", "temperature": 1.0, "top_p": 1.0,
              "instructions": None, "previous_response_id": None, "status": "completed"}
    with pytest.raises(ImportFormatError, match="the response of a Responses API record "
                                                "without its request"):
        import_text(InMemoryStorage(), json.dumps(answer))


def test_a_refused_cassette_names_its_posts_before_its_gets() -> None:
    """What a cassette holds instead of a model call this importer reads, POSTs first:
    watsonx's model call was hidden under "3 more kind(s)" behind a token request and
    two GETs."""
    def call(method: str, uri: str) -> str:
        return (f"- request:\n    method: {method}\n    uri: {uri}\n    body: '{{}}'\n"
                "  response:\n    status: {code: 200}\n    body: {string: '{}'}\n")
    text = "interactions:\n" + "".join([
        call("POST", "https://iam.example/token"), call("GET", "https://api.example/spaces"),
        call("GET", "https://api.example/projects/1"), call("GET", "https://api.example/a"),
        call("POST", "https://ml.example/ml/v1/text/generation_stream")]) + "version: 1\n"
    with pytest.raises(ImportFormatError) as e:
        import_text(InMemoryStorage(), text, name="c.yaml")
    shown = str(e.value).split("interaction(s): ", 1)[1]
    assert shown.index("generation_stream") < shown.index("GET"), shown


def test_an_agent_session_with_a_context_object_is_not_called_an_ollama_record() -> None:
    """Google ADK's session files have a top-level ``context`` object: the refusal said
    "an Ollama generate request needs a string 'prompt'" (Ollama's ``context`` is a
    request's token ids), which sent the user the wrong way."""
    session = {"id": "s1", "context": {"user": "u"}, "events": [{"author": "agent"}],
               "artifacts": {}}
    with pytest.raises(ImportFormatError) as e:
        import_text(InMemoryStorage(), json.dumps(session))
    assert "Ollama" not in str(e.value) and "keys artifacts, context, events, id" in str(e.value)


def test_a_gemini_model_version_is_named_without_its_models_prefix() -> None:
    """``"modelVersion": "models/gemini-2.5-flash"`` read as another model than the
    ``gemini-2.5-flash`` the URL asked for."""
    record = {"url": "https://generativelanguage.googleapis.com/v1beta/models/"
                     "gemini-2.5-flash:generateContent",
              "request": {"contents": [{"role": "user", "parts": [{"text": "Hi"}]}]},
              "response": {"candidates": [{"content": {"role": "model", "parts": [
                  {"text": "Hello"}]}, "finishReason": "STOP"}],
                  "modelVersion": "models/gemini-2.5-flash"}}
    s = InMemoryStorage()
    report = import_text(s, json.dumps(record))
    step = s.runs.get(f"{report.runs_created[0]}:step:0")
    assert step["model"]["name"] == "gemini-2.5-flash"


def test_an_anthropic_refusal_keeps_its_stop_details() -> None:
    """Claude stopping with ``stop_reason: "refusal"`` says why in ``stop_details``
    (category, explanation): the run was an empty answer with nothing saying why."""
    response = {"type": "message", "role": "assistant", "model": "claude-opus-4-6",
                "content": [], "stop_reason": "refusal", "stop_sequence": None,
                "stop_details": {"type": "refusal", "category": "reasoning_extraction",
                                 "explanation": "This request was blocked."},
                "usage": {"input_tokens": 10, "output_tokens": 0}}
    record = {"url": "https://api.anthropic.com/v1/messages",
              "request": {"model": "claude-opus-4-6", "max_tokens": 100,
                          "messages": [{"role": "user", "content": "Hi"}]},
              "response": response}
    report = import_text(InMemoryStorage(), json.dumps(record))
    reasons = [k.reason for k in report.skipped]
    assert "stopped (refusal) — type: refusal; category: reasoning_extraction; " \
           "explanation: This request was blocked." in reasons, reasons
    assert "the answer is empty (finish reason 'refusal')" in reasons


def test_a_cassette_of_requests_and_responses_pairs_them_in_order() -> None:
    """LangChain's recorder writes ``requests`` and ``responses`` as two lists (refused
    as "not a VCR cassette"); lists of different lengths cannot be paired: one error."""
    ask = json.dumps({"model": "m", "messages": [{"role": "user", "content": "Hi"}]})
    answer = json.dumps({"choices": [{"message": {"role": "assistant", "content": "Hello"}}]})
    request = ("- body: '" + ask + "'\n  method: POST\n"
               "  uri: https://api.openai.com/v1/chat/completions\n")
    response = "- status: {code: 200}\n  body: {string: '" + answer + "'}\n"
    s = InMemoryStorage()
    report = import_text(s, "requests:\n" + request + "responses:\n" + response,
                         name="c.yaml")
    assert [m.text() for m in s.memory.get_messages(report.threads_created[0])] == [
        "Hi", "Hello"]
    with pytest.raises(ImportFormatError, match="holds 2 requests but 1 responses"):
        import_text(InMemoryStorage(), "requests:\n" + request * 2 + "responses:\n"
                    + response, name="c.yaml")


def test_a_stream_error_after_the_answer_began_keeps_what_came_before() -> None:
    chunks = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hel"}}]},
              {"choices": [{"index": 0, "delta": {}, "finish_reason": "error"}],
               "error": {"code": 502, "message": "upstream reset"}}]
    stream = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks)
    s = InMemoryStorage()
    report = import_text(s, json.dumps({"request": {"model": "m", "messages": [
        {"role": "user", "content": "Hi"}]}, "response": stream}))
    assert [m.text() for m in s.memory.get_messages(report.threads_created[0])] == [
        "Hi", "Hel"]
    assert any("the stream ended with an error after its answer began (upstream reset)"
               in k.reason for k in report.skipped), report.skipped


def test_a_claude_code_transcript_is_read_not_refused() -> None:
    """A Claude Code session log (~/.claude/projects/*.jsonl) was refused, advising
    ``memwb proxy``: each call is now read, its request rebuilt (noted)."""
    lines = [{"type": "user", "sessionId": "s", "uuid": "u1", "parentUuid": None,
              "cwd": "/tmp", "message": {"role": "user", "content": "Hello"}},
             {"type": "assistant", "sessionId": "s", "uuid": "u2", "parentUuid": "u1",
              "message": {"id": "m1", "role": "assistant", "model": "claude-x",
                          "content": [{"type": "text", "text": "Hi"}]}}]
    report = import_text(InMemoryStorage(), "".join(json.dumps(x) + "\n" for x in lines),
                         name="session.jsonl")
    assert len(report.runs_created) == 1
    assert not [k for k in report.skipped if "memwb proxy" in k.reason]


def test_an_answer_s_citations_are_said_not_dropped_silently() -> None:
    """OpenRouter's url_citation annotations and Perplexity's citations were dropped
    without a word (Cohere's and Anthropic's were noted)."""
    ask = {"model": "m", "messages": [{"role": "user", "content": "Who won?"}]}
    chunks = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": "X[1]."}}],
               "citations": ["https://a.example", "https://b.example"]},
              {"choices": [{"index": 0, "delta": {"annotations": [
                  {"type": "url_citation", "url_citation": {"url": "https://a.example"}}]},
                  "finish_reason": "stop"}]}]
    stream = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks)
    report = import_text(InMemoryStorage(), json.dumps({"request": ask, "response": stream}))
    assert any("the answer's citations (3: sources it cites) not imported" in k.reason
               for k in report.skipped), report.skipped
    plain = {"choices": [{"message": {"role": "assistant", "content": "X.", "annotations": [
        {"type": "url_citation"}]}}], "citations": ["https://a.example"]}
    report = import_text(InMemoryStorage(), json.dumps({"request": ask, "response": plain}))
    assert any("its annotations, citations (sources the answer cites) not imported"
               in k.reason for k in report.skipped), report.skipped


def test_hosted_mcp_tools_are_told_apart_by_their_server() -> None:
    """Two MCP servers offered were both listed as tool "mcp"."""
    record = {"request": {"model": "gpt-4.1", "input": "Hi", "tools": [
        {"type": "mcp", "server_label": "github", "server_url": "https://a.example"},
        {"type": "mcp", "server_label": "stripe", "server_url": "https://b.example"}]},
        "response": {"object": "response", "model": "gpt-4.1", "output": [
            {"type": "message", "role": "assistant", "content": [
                {"type": "output_text", "text": "Hello"}]}]}}
    s = InMemoryStorage()
    report = import_text(s, json.dumps(record))
    step = s.runs.get(f"{report.runs_created[0]}:step:0")
    assert [t["name"] for t in step["tools"]] == ["mcp:github", "mcp:stripe"]


def test_a_cassette_of_websocket_messages_says_what_it_holds() -> None:
    """pydantic-ai records realtime sessions as interactions of {kind, direction, data}:
    refused with "an interaction needs a 'request' and a 'response' object" alone."""
    text = ("version: 1\ninteractions:\n- kind: message\n  direction: received\n"
            "  data: {type: session.created}\n")
    with pytest.raises(ImportFormatError, match="this one has data, direction, kind — a "
                                                "WebSocket message"):
        import_text(InMemoryStorage(), text, name="ws.yaml")


# -- DSPy's LM history ---------------------------------------------------------------------
def _dspy_entry(question: str, answer: Any, **over: Any) -> dict[str, Any]:
    return {"prompt": None, "messages": [
        {"role": "system", "content": "Your input fields are: `input`."},
        {"role": "user", "content": f"[[ ## input ## ]]\n{question}"}],
        "kwargs": {"temperature": 0.0}, "response": "…", "outputs": [answer],
        "usage": {"prompt_tokens": 40, "completion_tokens": 9, "total_tokens": 49},
        "cost": 0.0001624, "timestamp": "2025-08-13T18:20:44.059820",
        "uuid": "93b03c3f-7e96-43a0-bac1-2ececc179365", "model": "openai/gpt-4.1-mini",
        "response_model": "gpt-4.1-mini-2025-04-14", "model_type": "chat", **over}


def test_dspy_lm_history_entries_are_chat_calls() -> None:
    """DSPy's LM history, as its tests keep it (``{"lm": [...], "reflection_lm":
    [...]}``): refused as "a JSON object with keys lm, reflection_lm" though each entry
    is a request and its answer. Each entry is a run; a list, or JSON lines, too."""
    call = {"id": "call_1", "type": "function",
            "function": {"name": "search", "arguments": "{\"q\": \"fox\"}"}}
    doc = {"lm": [_dspy_entry("What does the fox say?", "[[ ## output ## ]]\nRing-ding."),
                  _dspy_entry("Search it.", {"text": None, "tool_calls": [call],
                                             "reasoning_content": "Look it up."})],
           "reflection_lm": [_dspy_entry("Improve the instruction.", "Be terse.",
                                         usage={}, outputs=["Be terse.", "Be brief."])]}
    st = s()
    report = import_text(st, json.dumps(doc), name="history.json")
    assert len(report.runs_created) == 3
    first = st.runs.get(f"{report.runs_created[0]}:step:0")
    assert first["response"]["text"] == "[[ ## output ## ]]\nRing-ding."
    assert first["response"]["usage"] == {"input_tokens": 40, "output_tokens": 9}
    assert first["model"]["name"] == "gpt-4.1-mini-2025-04-14"
    run = st.runs.require_run(report.runs_created[0])
    assert run.started_at.isoformat() == "2025-08-13T18:20:44.059820+00:00"
    assert st.runs.get(f"{report.runs_created[0]}:import")["request_params"] == {
        "temperature": 0.0}
    second = st.runs.get(f"{report.runs_created[1]}:step:0")
    assert [c["name"] for c in second["response"]["tool_calls"]] == ["search"]
    reasons = {(k.where, k.reason) for k in report.skipped}
    assert ("line 1: lm[1]", "the output's reasoning_content not imported") in reasons
    assert ("line 1: reflection_lm[0]", "1 other output(s) not imported") in reasons
    assert ("line 1: lm[0]", "its cost (0.0001624) not imported") in reasons
    assert ("line 1: lm[0]", "its timestamp has no time zone (DSPy writes the local "
            "time): read as UTC") in reasons
    # the usage DSPy kept empty (a cached call) is unknown, not zero
    from memory_core.analysis.views import run_view

    third = run_view(st, report.runs_created[2]).recorded
    assert third is not None and third.usage is None
    # a timestamp that names its zone, an offset west of UTC too, is read as written
    west = [_dspy_entry("Sky?", "Blue.", timestamp="2025-08-13T18:20:44-05:00")]
    report = import_text(s(), json.dumps(west), name="w.json")
    assert not any("no time zone" in k.reason for k in report.skipped), report.skipped
    # a list of entries (json.dump(lm.history)) and JSON lines read alike
    for text in (json.dumps(doc["lm"]), "\n".join(json.dumps(e) for e in doc["lm"])):
        assert len(import_text(s(), text, name="h.json").runs_created) == 2


def test_a_bad_dspy_entry_is_named_and_the_others_read() -> None:
    doc = {"lm": [_dspy_entry("What does the fox say?", "Ring."),
                  _dspy_entry("Sky?", "Blue.", messages="not a list")]}
    report = import_text(s(), json.dumps(doc), name="history.json")
    assert len(report.runs_created) == 1
    assert any(k.where == "line 1: lm[1]" and "needs its 'messages' (a list)" in k.reason
               for k in report.skipped), report.skipped


# -- Continue's chat sessions ------------------------------------------------------------
def test_a_continue_session_is_one_thread_a_run_per_answer() -> None:
    """Continue keeps a chat as ``{"sessionId", "history": [{"message", "contextItems",
    "promptLogs"}]}``: refused as "a JSON object with keys history, sessionId, …". Each
    answer is a run of the session's thread; its prompt log gives the model and options;
    context items are named, not imported; tool calls are read."""
    call = {"id": "call_1", "type": "function",
            "function": {"name": "read_file", "arguments": "{\"path\": \"a.kt\"}"}}
    log = {"modelTitle": "GPT-4o", "prompt": "<user>\n…", "completion": "…",
           "completionOptions": {"model": "gpt-4o", "maxTokens": 2048, "temperature": 0.2}}
    session = {"sessionId": "s-1", "title": "Env vars", "workspaceDirectory": "/w",
               "history": [
                   {"message": {"role": "user", "content": [
                       {"type": "text", "text": "How do I read env vars in Kotlin?"}]},
                    "contextItems": [{"name": "Main.kt", "content": "fun main() {}"}]},
                   {"message": {"role": "assistant", "content": "", "toolCalls": [call]},
                    "contextItems": [], "promptLogs": [log]},
                   {"message": {"role": "tool", "content": "fun main() {}",
                                "toolCallId": "call_1"}, "contextItems": []},
                   {"message": {"role": "assistant", "content": "Use System.getenv."},
                    "contextItems": [], "promptLogs": [log]}]}
    st = s()
    report = import_text(st, json.dumps(session), name="s-1.json")
    assert report.threads_created == ["s-1"] and len(report.runs_created) == 2
    msgs = [m.as_message() for m in st.memory.get_messages("s-1")]
    assert [m.role for m in msgs] == ["user", "assistant", "tool", "assistant"]
    assert [c.name for c in msgs[1].tool_calls()] == ["read_file"]
    assert [r.call_id for r in msgs[2].tool_results()] == ["call_1"]
    second = report.runs_created[1]
    assert st.runs.get(f"{second}:step:0")["model"]["name"] == "gpt-4o"
    assert st.runs.get(f"{second}:import")["request_params"] == {
        "max_tokens": 2048, "temperature": 0.2}
    assert any("history[0]: its 1 context item(s) (Main.kt) not imported" in k.reason
               for k in report.skipped), report.skipped
    # a prompt log naming only its title (a label the user chose): the model unknown
    from memory_core.analysis.views import run_view

    titled = {**session, "history": [session["history"][0], {
        "message": {"role": "assistant", "content": "Use System.getenv."},
        "promptLogs": [{"modelTitle": "My favourite model", "completionOptions": {}}]}]}
    st = s()
    [rid] = import_text(st, json.dumps(titled), name="t.json").runs_created
    rec = run_view(st, rid).recorded
    assert rec is not None and rec.requested_model is None and "favourite" not in str(
        rec.said()["model"])
    lone = {**session, "history": session["history"][:1]}
    with pytest.raises(ImportFormatError, match="the Continue session has no assistant "
                                                "message after a user message"):
        import_text(s(), json.dumps(lone), name="lone.json")


def test_credentials_in_a_request_are_withheld_everywhere(tmp_path: Path) -> None:
    """A token sent to an MCP server (Anthropic's ``mcp_servers``, a Responses MCP tool's
    ``headers``) or a client's ``api_key`` logged among its settings is stored as
    "[withheld]", noted with where it was; it is in no byte of the database."""
    from memory_core.storage.sqlite import SQLiteStorage

    secret = "sk-live-0123456789abcdef"
    records = [
        {"request": {"model": "claude-haiku-4-5", "max_tokens": 64,
                     "messages": [{"role": "user", "content": "Hi"}],
                     "mcp_servers": [{"name": "gh", "type": "url", "url": "https://x.test/mcp",
                                      "authorization_token": secret}]},
         "response": {"type": "message", "role": "assistant", "model": "claude-haiku-4-5",
                      "content": [{"type": "text", "text": "Hello."}],
                      "stop_reason": "end_turn",
                      "usage": {"input_tokens": 5, "output_tokens": 2}}},
        {"request": {"model": "gpt-4o-mini", "api_key": secret, "temperature": 0,
                     "messages": [{"role": "user", "content": "Weather?"}],
                     "tools": [{"type": "mcp", "server_label": "wx",
                                "headers": {"Authorization": f"Bearer {secret}"}}]},
         "response": {"object": "chat.completion", "model": "gpt-4o-mini", "choices": [
             {"index": 0, "finish_reason": "stop",
              "message": {"role": "assistant", "content": "Sunny."}}]}}]
    db = tmp_path / "x.db"
    with SQLiteStorage(str(db)) as s:
        report = import_text(s, "".join(json.dumps(r) + "\n" for r in records))
        first, second = report.runs_created
        assert s.runs.get(f"{first}:import")["request_params"]["mcp_servers"][0][
            "authorization_token"] == "[withheld]"
        assert s.runs.get(f"{second}:import")["request_params"]["api_key"] == "[withheld]"
        assert [t["name"] for t in s.runs.get(f"{first}:step:0")["tools"]] == ["mcp:gh"]
    notes = [k.reason for k in report.skipped]
    assert ("request 'mcp_servers[0].authorization_token': a credential, withheld "
            "(stored as [withheld])") in notes
    assert "request 'api_key': a credential, withheld (stored as [withheld])" in notes
    # (an MCP tool is kept by name only: its headers are not stored at all)
    assert secret.encode() not in b"".join(p.read_bytes() for p in tmp_path.iterdir())


def test_alternative_choices_are_said_alike_whole_or_streamed() -> None:
    """n = 2: the choice after the first is left out, said the same way whether the
    answer was recorded whole or as a stream (the stream said "stream choices other
    than index 0 not imported", without how many or what the usage counts)."""
    usage = {"prompt_tokens": 9, "completion_tokens": 8, "total_tokens": 17}
    whole = {"object": "chat.completion", "model": "gpt-4o-mini", "usage": usage,
             "choices": [{"index": i, "finish_reason": "stop", "message": {
                 "role": "assistant", "content": text}} for i, text in enumerate("AB")]}
    chunks = [{"object": "chat.completion.chunk", "model": "gpt-4o-mini", "choices": [
        {"index": i, "delta": {"role": "assistant", "content": text}}]}
        for i, text in enumerate("AB")]
    chunks.append({"object": "chat.completion.chunk", "model": "gpt-4o-mini",
                   "choices": [], "usage": usage})
    said = []
    for response in (whole, chunks):
        line = json.dumps({"request": {"model": "gpt-4o-mini", "n": 2, "messages": [
            {"role": "user", "content": "Say a letter."}]}, "response": response})
        report = import_text(InMemoryStorage(), line + "\n")
        said.append([k.reason for k in report.skipped if "choice" in k.reason])
    assert said[0] == said[1] == ["1 alternative choice(s) not imported (the recorded "
                                  "usage counts their tokens too)"], said


def test_a_failed_call_without_a_body_keeps_its_recorded_reason() -> None:
    """ruby-openai's streamed 500 records no body, only its status: the run's error
    read "HTTP 500", without the "Internal Server Error" the recording holds."""
    import yaml

    req = {"model": "gpt-4o", "messages": [{"role": "user", "content": "Hi"}]}

    def interaction(status: Any) -> dict[str, Any]:
        return {"request": {"method": "POST", "uri": "https://api.openai.com/v1/chat/completions",
                            "body": json.dumps(req), "headers": {}},
                "response": {"status": status, "headers": {}, "body": {"string": ""}}}

    text = yaml.safe_dump({"interactions": [
        interaction({"code": 500, "message": "Internal Server Error"}),
        interaction("502 Bad Gateway"), interaction({"code": 503, "message": ""})],
        "version": 1})
    s = InMemoryStorage()
    report = import_text(s, text)
    assert [s.runs.require_run(r).error for r in report.runs_created] == [
        "HTTP 500 Internal Server Error", "HTTP 502 Bad Gateway", "HTTP 503"]
