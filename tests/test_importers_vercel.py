"""The Vercel AI SDK's own span attributes (``ai.prompt.messages``, ``ai.response.*``,
``ai.usage.*``, ``ai.settings.*``) and span objects written as the SDKs hold them (a JSON
array of ``ReadableSpan``s, Python's ``ConsoleSpanExporter`` output)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from memory_core.errors import ImportFormatError
from memory_core.importers import detect_format, import_text
from memory_core.storage.inmemory import InMemoryStorage
from tests.test_importers_formats import otlp, span, texts

TRACE = "c" * 32
WEATHER_TOOL = {"type": "function", "name": "get_weather", "description": "Weather now",
                "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}}
ASK = {"role": "user", "content": [{"type": "text", "text": "Weather in Oslo?"}]}
CALL = {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "call_o1",
                                          "toolName": "get_weather",
                                          "input": {"city": "Oslo"}}]}
RESULT = {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "call_o1",
                                       "toolName": "get_weather",
                                       "output": {"type": "json", "value": {"temp": -3}}}]}
SYSTEM = {"role": "system", "content": "You answer in one line."}


def do_generate(sid: str, messages: list[dict[str, Any]], start: str,
                **response: Any) -> dict[str, Any]:
    """An ``ai.generateText.doGenerate`` span as AI SDK 5/6 writes it (with the
    ``gen_ai.*`` attributes it adds)."""
    return span(sid, {
        "operation.name": "ai.generateText.doGenerate weather",
        "ai.operationId": "ai.generateText.doGenerate", "ai.telemetry.functionId": "weather",
        "ai.model.provider": "openai.chat", "ai.model.id": "gpt-4o-mini",
        "ai.settings.maxRetries": 2, "ai.settings.temperature": 0.2,
        "ai.settings.maxOutputTokens": 300,
        "ai.prompt.messages": json.dumps(messages),
        "ai.prompt.tools": [json.dumps(WEATHER_TOOL)],
        "ai.prompt.toolChoice": json.dumps({"type": "auto"}),
        "gen_ai.system": "openai.chat", "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.request.temperature": 0.2,
        **{f"ai.response.{k}": v for k, v in response.items()},
        "ai.response.model": "gpt-4o-mini-2024-07-18",
        "ai.usage.promptTokens": 40, "ai.usage.completionTokens": 12,
        "gen_ai.usage.input_tokens": 40, "gen_ai.usage.output_tokens": 12,
    }, trace=TRACE, name="ai.generateText.doGenerate", start=start, parent="00000000000000b0")


TOOL_LOOP = [
    span("00000000000000b0", {"ai.operationId": "ai.generateText",
                              "ai.prompt": json.dumps({"system": SYSTEM["content"],
                                                       "prompt": "Weather in Oslo?"}),
                              "ai.response.text": "It is -3 °C in Oslo."},
         trace=TRACE, name="ai.generateText", start="1767600000000000000"),
    do_generate("00000000000000b1", [SYSTEM, ASK], "1767600000100000000",
                finishReason="tool-calls", text="",
                toolCalls=json.dumps([{"type": "tool-call", "toolCallId": "call_o1",
                                       "toolName": "get_weather",
                                       "input": json.dumps({"city": "Oslo"})}])),
    span("00000000000000b2", {"ai.operationId": "ai.toolCall",
                              "ai.toolCall.name": "get_weather", "ai.toolCall.id": "call_o1",
                              "ai.toolCall.args": json.dumps({"city": "Oslo"}),
                              "ai.toolCall.result": json.dumps({"temp": -3})},
         trace=TRACE, name="ai.toolCall", start="1767600000200000000",
         parent="00000000000000b0"),
    do_generate("00000000000000b3", [SYSTEM, ASK, CALL, RESULT], "1767600000300000000",
                finishReason="stop", text="It is -3 °C in Oslo."),
]


def test_a_tool_loop_of_do_generate_spans_is_one_thread_of_two_runs() -> None:
    st = InMemoryStorage()
    report = import_text(st, otlp(TOOL_LOOP))
    assert report.format == "otel"
    assert len(report.threads_created) == 1 and len(report.runs_created) == 2
    assert texts(st, report.threads_created[0]) == [
        "user:Weather in Oslo?", "assistant:get_weather#call_o1",
        "tool:get_weather#call_o1={'temp': -3}", "assistant:It is -3 °C in Oslo."]
    call = st.memory.get_messages(report.threads_created[0])[1].tool_calls()[0]
    assert call.args == {"city": "Oslo"}  # the response's JSON text, parsed
    first, second = report.runs_created
    prompt = st.runs.get(f"{first}:prompt")
    assert [i["message"]["content"] for i in prompt["items"]
            if i["lane"] == "instructions"] == ["You answer in one line."]
    step = st.runs.get(f"{first}:step:0")
    assert step["model"]["name"] == "gpt-4o-mini-2024-07-18"
    assert (step["model"]["temperature"], step["model"]["max_tokens"]) == (0.2, 300)
    assert step["response"]["finish_reason"] == "tool-calls"
    assert step["response"]["usage"] == {"input_tokens": 40, "output_tokens": 12}
    assert [t["name"] for t in step["tools"]] == ["get_weather"]
    assert step["tools"][0]["parameters"] == WEATHER_TOOL["inputSchema"]
    params = st.runs.get(f"{first}:import")["request_params"]
    assert params["tool_choice"] == {"type": "auto"} and params["max_retries"] == 2
    assert st.runs.get(f"{second}:step:0")["response"]["finish_reason"] == "stop"
    # the wrapper and the tool execution are neither runs nor messages: said why
    reasons = {k.where: k.reason for k in report.skipped}
    assert "wraps the model calls" in reasons["span 00000000000000b0 (ai.generateText)"]
    assert "tool execution" in reasons["span 00000000000000b2 (ai.toolCall)"]


def test_older_sdk_shapes_args_result_and_prompt_tokens() -> None:
    """AI SDK 3/4: tool-call ``args``, tool-result ``result``, ``ai.response.toolCalls``
    items with ``args`` as JSON text; an ``image`` part is a placeholder."""
    ask = {"role": "user", "content": [{"type": "text", "text": "What is this?"},
                                       {"type": "image", "image": "https://x.test/a.png",
                                        "mimeType": "image/png"}]}
    call = {"role": "assistant", "content": [
        {"type": "text", "text": "Looking."},
        {"type": "tool-call", "toolCallId": "t1", "toolName": "zoom", "args": {"x": 1}}]}
    result = {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "t1",
                                           "toolName": "zoom", "result": "a cat"}]}
    spans = [do_generate("00000000000000d1", [ask], "1767600000100000000",
                         text="Looking.", toolCalls=json.dumps([
                             {"toolCallType": "function", "toolCallId": "t1",
                              "toolName": "zoom", "args": "{\"x\": 1}"}])),
             do_generate("00000000000000d2", [ask, call, result], "1767600000200000000",
                         text="A cat.")]
    st = InMemoryStorage()
    report = import_text(st, otlp(spans))
    assert texts(st, report.threads_created[0]) == [
        "user:What is this?", "assistant:Looking.zoom#t1", "tool:zoom#t1=a cat",
        "assistant:A cat."]
    first = st.memory.get_messages(report.threads_created[0])[0]
    assert first.metadata["attachments"] == [
        {"index": 1, "type": "image", "url": "https://x.test/a.png", "media_type": "image/png"}]


def test_text_beside_tool_results_stays_with_the_result_it_follows() -> None:
    """A tool message's text parts (and attachments) are kept, in order, with the result
    they follow (text before any result, with the first); a tool message of text alone
    is kept too. They were dropped without a note."""
    from memory_core.runs.replay import replay

    two = {"role": "assistant", "content": [
        {"type": "tool-call", "toolCallId": "a1", "toolName": "get_weather",
         "input": {"city": "Oslo"}},
        {"type": "tool-call", "toolCallId": "a2", "toolName": "get_weather",
         "input": {"city": "Bergen"}}]}
    results = {"role": "tool", "content": [
        {"type": "text", "text": "Both cities:"},
        {"type": "tool-result", "toolCallId": "a1", "toolName": "get_weather",
         "output": {"type": "text", "value": "-3"}},
        {"type": "tool-result", "toolCallId": "a2", "toolName": "get_weather",
         "output": {"type": "text", "value": "4"}},
        {"type": "text", "text": "(Bergen from cache)"},
        {"type": "image", "image": "https://x.test/map.png", "mimeType": "image/png"}]}
    spans = [do_generate("00000000000000c1", [ASK, two, results], "1767600000100000000",
                         finishReason="stop", text="-3 and 4.")]
    st = InMemoryStorage()
    report = import_text(st, otlp(spans))
    stored = st.memory.get_messages(report.threads_created[0])
    assert texts(st, report.threads_created[0]) == [
        "user:Weather in Oslo?", "assistant:get_weather#a1get_weather#a2",
        "tool:Both cities:get_weather#a1=-3", "tool:(Bergen from cache)get_weather#a2=4",
        "assistant:-3 and 4."]
    # in the order recorded
    assert [type(q).__name__ for q in stored[2].parts] == ["TextPart", "ToolResultPart"]
    assert [type(q).__name__ for q in stored[3].parts] == ["ToolResultPart", "TextPart"]
    assert stored[3].metadata["attachments"] == [
        {"index": 2, "type": "image", "url": "https://x.test/map.png",
         "media_type": "image/png"}]
    assert replay(st, report.runs_created[0]).messages_checked == 1


def test_a_tool_message_of_text_alone_is_kept() -> None:
    only = {"role": "tool", "content": [{"type": "text", "text": "the tool said nothing"}]}
    spans = [do_generate("00000000000000c2", [ASK, CALL, RESULT, only], "1767600000100000000",
                         finishReason="stop", text="Nothing more.")]
    st = InMemoryStorage()
    report = import_text(st, otlp(spans))
    assert texts(st, report.threads_created[0])[-2:] == [
        "tool:the tool said nothing", "assistant:Nothing more."]


def test_generate_object_response_is_the_objects_json() -> None:
    obj = json.dumps({"name": "eggs"})
    one = do_generate("00000000000000e1", [ASK], "1767600000100000000", object=obj,
                      finishReason="stop")
    st = InMemoryStorage()
    report = import_text(st, otlp([one]))
    assert texts(st, report.threads_created[0])[-1] == f"assistant:{obj}"


def test_inputs_not_recorded_and_attributes_not_understood_say_so() -> None:
    no_inputs = span("00000000000000f1", {
        "ai.operationId": "ai.streamText.doStream", "ai.response.text": "hi",
        "gen_ai.system": "openai"}, name="ai.streamText.doStream")
    odd = span("00000000000000f2", {"gen_ai.operation.name": "chat",
                                    "gen_ai.request.model": "m",
                                    "gen_ai.usage.input_tokens": 3,
                                    "vendor.prompt.history": "[…]"})
    off = span("00000000000000f3", {"gen_ai.operation.name": "chat",
                                    "gen_ai.usage.input_tokens": 3})
    with pytest.raises(ImportFormatError) as info:
        import_text(InMemoryStorage(), otlp([no_inputs, odd, off]))
    msg = str(info.value)
    assert "span 00000000000000f1 (ai.streamText.doStream): AI SDK model call " \
           "(ai.streamText.doStream) without ai.prompt.messages" in msg
    assert "span 00000000000000f2 (chat m): model call whose content this importer does " \
           "not read: found vendor.prompt.history" in msg
    assert "span 00000000000000f3 (chat m): model call with no message content: the span " \
           "records none (content capture was off" in msg


# -- span objects as the SDKs hold them ----------------------------------------------------
def _plain(s: dict[str, Any]) -> dict[str, Any]:
    """An OTLP/JSON span of TOOL_LOOP as the JS SDK's ReadableSpan: hrtime times,
    attributes as an object."""
    def value(v: dict[str, Any]) -> Any:
        if "arrayValue" in v:
            return [value(x) for x in v["arrayValue"]["values"]]
        if "intValue" in v:
            return int(v["intValue"])
        return next(iter(v.values()))
    ns = int(s["startTimeUnixNano"])
    out = {"name": s["name"], "spanContext": {"traceId": s["traceId"], "spanId": s["spanId"]},
           "attributes": {a["key"]: value(a["value"]) for a in s["attributes"]},
           "startTime": [ns // 10**9, ns % 10**9], "endTime": [ns // 10**9, ns % 10**9],
           "status": {"code": 0}, "events": []}
    if s["parentSpanId"]:
        out["parentSpanContext"] = {"traceId": s["traceId"], "spanId": s["parentSpanId"]}
    return out


@pytest.mark.parametrize("layout", ["array", "lines"])
def test_sdk_span_objects_import_like_otlp(layout: str) -> None:
    objs = [_plain(s) for s in TOOL_LOOP]
    text = json.dumps(objs, indent=2) if layout == "array" else \
        "\n".join(json.dumps(o) for o in objs)
    assert detect_format(text) == "otel"
    st = InMemoryStorage()
    report = import_text(st, text)
    assert len(report.threads_created) == 1 and len(report.runs_created) == 2
    assert texts(st, report.threads_created[0])[-1] == "assistant:It is -3 °C in Oslo."
    run = st.runs.require_run(report.runs_created[0])
    assert run.started_at == datetime(2026, 1, 5, 8, 0, 0, 100000, tzinfo=UTC)


def _console_span(sid: str, msgs: list[dict[str, Any]], *, parent: str | None = None,
                  status: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"name": "chat gpt-4o", "context": {"trace_id": "0x" + "d" * 32,
                                               "span_id": f"0x{sid}", "trace_state": "[]"},
            "kind": "SpanKind.CLIENT", "parent_id": parent,
            "start_time": "2026-01-05T08:00:00.250000Z",
            "end_time": "2026-01-05T08:00:01.000000Z",
            "status": status or {"status_code": "UNSET"},
            "attributes": {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                           "gen_ai.input.messages": json.dumps(msgs)},
            "events": [], "links": [], "resource": {"attributes": {}}}


def test_python_console_span_exporter_objects() -> None:
    """``ConsoleSpanExporter``'s ``to_json``: ``context`` with 0x ids, ISO times,
    ``parent_id``, ``status_code``."""
    hi = [{"role": "user", "parts": [{"type": "text", "content": "hi"}]}]
    spans = [_console_span("00000000000000a9", hi,
                           status={"status_code": "ERROR", "description": "timeout"})]
    text = json.dumps(spans[0], indent=4)
    assert detect_format(text) == "otel"
    st = InMemoryStorage()
    report = import_text(st, text)
    run = st.runs.require_run(report.runs_created[0])
    assert run.status == "failed" and run.error == "timeout"
    assert run.started_at == datetime(2026, 1, 5, 8, 0, 0, 250000, tzinfo=UTC)
    assert texts(st, report.threads_created[0]) == ["user:hi"]


def test_console_exporter_output_of_several_spans_one_after_another() -> None:
    """What ``ConsoleSpanExporter`` prints: each span's ``to_json()`` (indented) and a
    newline, with nothing around them."""
    user = {"role": "user", "parts": [{"type": "text", "content": "hi"}]}
    hello = {"role": "assistant", "parts": [{"type": "text", "content": "hello"}]}
    bye = {"role": "user", "parts": [{"type": "text", "content": "bye"}]}
    one = _console_span("00000000000000c1", [user])
    one["attributes"]["gen_ai.output.messages"] = json.dumps([hello])
    two = _console_span("00000000000000c2", [user, hello, bye])
    two["attributes"]["gen_ai.output.messages"] = json.dumps(
        [{"role": "assistant", "parts": [{"type": "text", "content": "ciao"}]}])
    text = json.dumps(one, indent=4) + "\n" + json.dumps(two, indent=4) + "\n"
    assert detect_format(text) == "otel"
    st = InMemoryStorage()
    report = import_text(st, text)
    assert len(report.runs_created) == 2
    assert texts(st, report.threads_created[0]) == [
        "user:hi", "assistant:hello", "user:bye", "assistant:ciao"]
    with pytest.raises(ImportFormatError, match="file: invalid JSON"):
        import_text(InMemoryStorage(), text + "{oops")
