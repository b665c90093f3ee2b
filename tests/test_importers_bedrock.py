"""Bedrock Converse traffic (boto3's converse / converse_stream) imports as the
Messages API record it is equivalent to: real cassettes (tests/fixtures/imports/real/
*-bedrock-*: test_importers_real.py and test_importers_replay.py); AWS's
binary event stream is decoded with its checksums checked; records without a URL are
told by their shape."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest

from memory_core.errors import ImportFormatError
from memory_core.importers import import_text
from memory_core.importers.bedrock import event_stream, model_in_path
from memory_core.journal.seal import verify_run
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import TextPart

REAL = Path(__file__).parent / "fixtures" / "imports" / "real"


def _message(event: str, payload: dict[str, Any], *, kind: str = "event") -> bytes:
    """One AWS event-stream message, as the service frames it."""
    def header(name: str, value: str) -> bytes:
        raw = value.encode()
        return bytes([len(name)]) + name.encode() + b"\x07" + struct.pack(">H", len(raw)) + raw
    headers = header(":event-type" if kind == "event" else ":exception-type", event) + \
        header(":message-type", kind) + header(":content-type", "application/json")
    body = json.dumps(payload).encode()
    total = 12 + len(headers) + len(body) + 4
    prelude = struct.pack(">II", total, len(headers))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + headers + body
    return message + struct.pack(">I", zlib.crc32(message))


STREAM = b"".join([
    _message("messageStart", {"role": "assistant"}),
    _message("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Let me look."}}),
    _message("contentBlockStop", {"contentBlockIndex": 0}),
    _message("contentBlockStart", {"contentBlockIndex": 1, "start": {"toolUse": {
        "toolUseId": "tooluse_1", "name": "lookup"}}}),
    _message("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"toolUse": {
        "input": '{"q": "o'}}}),
    _message("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"toolUse": {
        "input": 'tters"}'}}}),
    _message("messageStop", {"stopReason": "tool_use"}),
    _message("metadata", {"usage": {"inputTokens": 40, "outputTokens": 12}}),
])


def _cassette(body: bytes, *, model: str = "us.amazon.nova-micro-v1%3A0") -> str:
    import yaml

    request = {"messages": [{"role": "user", "content": [{"text": "Find otters."}]}],
               "toolConfig": {"tools": [{"toolSpec": {"name": "lookup", "inputSchema": {
                   "json": {"type": "object"}}}}, {"cachePoint": {"type": "default"}}]}}
    return yaml.safe_dump({"interactions": [{
        "request": {"method": "POST", "body": json.dumps(request), "headers": {},
                    "uri": f"https://bedrock-runtime.us-east-1.amazonaws.com/model/{model}"
                           "/converse-stream"},
        "response": {"status": {"code": 200}, "body": {"string": body},
                     "headers": {"Content-Type": ["application/vnd.amazon.eventstream"]}}}]})


def test_an_event_stream_with_a_streamed_tool_call_is_joined() -> None:
    s = InMemoryStorage()
    report = import_text(s, _cassette(STREAM), name="c.yaml")
    [rid] = report.runs_created
    step = s.runs.get(f"{rid}:step:0")
    assert step["response"]["text"] == "Let me look."
    assert [(c["name"], c["args"]) for c in step["response"]["tool_calls"]] == [
        ("lookup", {"q": "otters"})]
    assert step["response"]["usage"] == {"input_tokens": 40, "output_tokens": 12}
    assert step["model"]["name"] == "us.amazon.nova-micro-v1:0"
    assert any("is not a tool specification" in k.reason for k in report.skipped)


def test_a_damaged_event_stream_is_refused_naming_it() -> None:
    damaged = bytearray(STREAM)
    damaged[40] ^= 0xFF  # inside the first message's payload: its checksum fails
    with pytest.raises(ImportFormatError, match=r"interaction 1: response: the event stream "
                                                r"message at byte 0 fails its checksum"):
        import_text(InMemoryStorage(), _cassette(bytes(damaged)), name="c.yaml")
    with pytest.raises(ImportFormatError, match=r"ends inside a message|damaged at byte"):
        event_stream(STREAM[:-5], "x")


def test_an_exception_event_is_a_failed_run() -> None:
    body = _message("messageStart", {"role": "assistant"}) + _message(
        "throttlingException", {"message": "Too many requests"}, kind="exception")
    s = InMemoryStorage()
    [rid] = import_text(s, _cassette(body), name="c.yaml").runs_created
    run = s.runs.require_run(rid)
    assert run.status == "failed" and "Too many requests" in (run.error or "")
    assert verify_run(s, rid).status == "ok"


def test_a_converse_record_without_a_url_is_told_by_its_shape() -> None:
    record = {"request": {"modelId": "anthropic.claude-3-haiku-20240307-v1:0", "messages": [
        {"role": "user", "content": [
            {"text": "Describe it."},
            {"image": {"format": "png", "source": {"bytes": "iVBORw0KGgo="}}}]}],
        "system": [{"text": "Be brief."}, {"cachePoint": {"type": "default"}}],
        "inferenceConfig": {"maxTokens": 50, "topP": 0.9}},
        "response": {"output": {"message": {"role": "assistant", "content": [
            {"text": "A small PNG."}]}}, "stopReason": "end_turn",
            "usage": {"inputTokens": 1500, "outputTokens": 4, "cacheReadInputTokens": 1000}}}
    s = InMemoryStorage()
    report = import_text(s, json.dumps(record), name="b.jsonl")
    [rid] = report.runs_created
    step = s.runs.get(f"{rid}:step:0")
    assert step["model"]["name"] == "anthropic.claude-3-haiku-20240307-v1:0"
    # cached prompt tokens are counted in, as for the Messages API
    assert step["response"]["usage"]["input_tokens"] == 2500
    params = s.runs.get(f"{rid}:import")["request_params"]
    assert (params["max_tokens"], params["top_p"]) == (50, 0.9)
    assert s.runs.get(f"{rid}:import")["extra"]["api"] == "bedrock"
    [user, _] = s.memory.get_messages(report.threads_created[0])
    assert user.metadata["attachments"][0]["type"] == "image"
    assert any("a cachePoint block not imported" in k.reason for k in report.skipped)


def test_converse_search_results_are_read_as_the_messages_api_reads_them() -> None:
    """A searchResult block (in a message, or a toolResult's content) is the Messages
    API's search_result: its texts the text, its source and title kept; a bad one is
    refused naming the value."""
    found = {"searchResult": {"source": "kb://doc-7", "title": "Refunds",
                              "content": [{"text": "Refunds take 5 days."}],
                              "citations": {"enabled": True}}}
    record = {"request": {"messages": [
        {"role": "user", "content": [found, {"text": "How long?"}]},
        {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t1", "name": "kb",
                                                       "input": {}}}]},
        {"role": "user", "content": [{"toolResult": {"toolUseId": "t1", "content": [
            found]}}]}], "inferenceConfig": {}},
        "response": {"output": {"message": {"role": "assistant", "content": [
            {"text": "5 days."}]}}, "stopReason": "end_turn"}}
    s = InMemoryStorage()
    report = import_text(s, json.dumps(record), name="b.jsonl")
    user, _, tool, _ = [m.as_message() for m in s.memory.get_messages(
        report.threads_created[0])]
    assert user.content == [TextPart(text="Refunds take 5 days."), TextPart(text="How long?")]
    assert user.metadata["search_results"] == [{"index": 0, "texts": 1, "source": "kb://doc-7",
                                                "title": "Refunds", "citations": True}]
    assert tool.tool_results()[0].result == "Refunds take 5 days."
    assert tool.metadata["search_results"][0]["source"] == "kb://doc-7"
    bad = json.loads(json.dumps(record))
    bad["request"]["messages"][0]["content"][0]["searchResult"]["content"] = [{"json": {}}]
    with pytest.raises(ImportFormatError, match=r"line 1: message 0: search_result block 0: "
                                                r"content block 0 must be a text block, "
                                                r"got \{'json': \{\}\}"):
        import_text(InMemoryStorage(), json.dumps(bad), name="b.jsonl")


def test_a_tool_result_answering_no_call_is_refused() -> None:
    record = {"request": {"messages": [
        {"role": "user", "content": [{"text": "hi"}]},
        {"role": "user", "content": [{"toolResult": {"toolUseId": "nope", "content": [
            {"json": {"ok": True}}]}}]}], "inferenceConfig": {}},
        "response": {"output": {"message": {"role": "assistant", "content": [
            {"text": "ok"}]}}, "stopReason": "end_turn"}}
    s = InMemoryStorage()
    with pytest.raises(ImportFormatError, match=r"line 1: .*nope"):
        import_text(s, json.dumps(record), name="b.jsonl")
    assert not s.memory.list_threads()


def test_the_model_is_read_from_the_url_decoded() -> None:
    arn = "arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Ainference-profile%2Fus.meta.llama3"
    assert model_in_path(f"/model/{arn}/converse") == \
        "arn:aws:bedrock:us-east-1:1:inference-profile/us.meta.llama3"
    assert model_in_path("/model/amazon.nova-pro-v1%3A0/converse-stream") == \
        "amazon.nova-pro-v1:0"


def _invoke_cassette(model: str, body: dict[str, Any], answer: dict[str, Any]) -> str:
    import yaml

    return yaml.safe_dump({"interactions": [{
        "request": {"method": "POST", "body": json.dumps(body), "headers": {},
                    "uri": f"https://bedrock-runtime.us-east-1.amazonaws.com/model/{model}"
                           "/invoke"},
        "response": {"status": {"code": 200}, "body": {"string": json.dumps(answer)},
                     "headers": {"Content-Type": ["application/json"]}}}]})


def test_invoke_model_reads_claude_and_names_the_other_formats() -> None:
    claude = {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 50,
              "messages": [{"role": "user", "content": "hi"}]}
    # an error body names no model: the run's model is the URL's
    s = InMemoryStorage()
    report = import_text(s, _invoke_cassette(
        "anthropic.claude-3-haiku-20240307-v1%3A0", claude,
        {"type": "message", "role": "assistant", "content": [{"type": "text", "text": "yo"}],
         "stop_reason": "end_turn", "usage": {"input_tokens": 8, "output_tokens": 1}}),
        name="i.yaml")
    [rid] = report.runs_created
    assert report.apis == ["bedrock"]
    assert s.runs.get(f"{rid}:step:0")["model"]["name"] == \
        "anthropic.claude-3-haiku-20240307-v1:0"
    # an image model's prompt is not read: the cassette holds no call it reads
    image = {"prompt": "a cat", "mode": "text-to-image"}
    with pytest.raises(ImportFormatError, match=r"a Bedrock InvokeModel call to "
                                                r"stability\.sd3-large-v1:0 in that "
                                                r"model's own format \(keys: mode, "
                                                r"prompt\)"):
        import_text(InMemoryStorage(), _invoke_cassette(
            "stability.sd3-large-v1%3A0", image, {"images": ["iVBO"]}), name="i.yaml")


def _framed(total: int, headers: bytes = b"", body: bytes = b"") -> bytes:
    """A message whose prelude claims ``total`` bytes, with valid checksums."""
    prelude = struct.pack(">II", total, len(headers))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + headers + body
    return message + struct.pack(">I", zlib.crc32(message))


def test_event_stream_framing_that_cannot_be_is_refused_naming_it() -> None:
    # a prelude claiming 0 bytes (checksum right) raised struct.error; headers running past
    # the message raised IndexError/struct.error
    with pytest.raises(ImportFormatError, match=r"damaged at byte 0"):
        event_stream(_framed(0) + STREAM, "x")
    bad_header = bytes([11]) + b":event-type" + b"\x07" + struct.pack(">H", 500) + b"ab"
    with pytest.raises(ImportFormatError, match=r"unreadable headers"):
        event_stream(_framed(16 + len(bad_header), bad_header), "x")


def test_an_error_message_of_the_stream_is_a_failed_run() -> None:
    # AWS event streams frame a server error as :message-type "error" with
    # :error-code/:error-message headers (no :event-type): it was ignored, the run
    # "completed" with an empty answer
    def header(name: str, value: str) -> bytes:
        raw = value.encode()
        return bytes([len(name)]) + name.encode() + b"\x07" + struct.pack(">H", len(raw)) + raw
    headers = header(":message-type", "error") + header(":error-code", "InternalFailure") \
        + header(":error-message", "boom")
    body = _message("messageStart", {"role": "assistant"}) + _framed(
        16 + len(headers), headers)
    s = InMemoryStorage()
    [rid] = import_text(s, _cassette(body), name="c.yaml").runs_created
    run = s.runs.require_run(rid)
    assert run.status == "failed" and "boom" in (run.error or "")
    assert verify_run(s, rid).status == "ok"


@pytest.mark.parametrize(("events", "error"), [
    ([{"_event": "contentBlockDelta", "contentBlockIndex": "x", "delta": {"text": "a"}}],
     r"stream event 0: 'contentBlockIndex' must be a block number, got 'x'"),
    ([{"_event": "contentBlockDelta", "delta": 3}], r"'delta' must be an object, got 3"),
    ([{"_event": "contentBlockDelta", "delta": {"toolUse": "x"}}],
     r"'delta.toolUse' must be an object"),
    ([{"_event": "contentBlockDelta", "delta": {"text": None}},
      {"_event": "contentBlockDelta", "delta": {"toolUse": {"input": "{}"}}}],
     r"stream event 1: a toolUse delta for block 0, which is a text block"),
    ([{"_event": "contentBlockDelta", "delta": {"text": ["a"]}}],
     r"a streamed piece must be text"),
    ([{"text": "a"}], r"stream event 0: not an event of a ConverseStream"),
])
def test_bad_stream_events_are_refused_naming_them(events: list[Any], error: str) -> None:
    record = {"request": {"messages": [{"role": "user", "content": [{"text": "hi"}]}],
                          "inferenceConfig": {}}, "response": events}
    with pytest.raises(ImportFormatError, match=r"line 1: (stream event \d: )?" + error):
        import_text(InMemoryStorage(), json.dumps(record), name="b.jsonl")


@pytest.mark.parametrize(("change", "error"), [
    ({"response": {"output": ["x"]}}, r"needs 'output.message'"),
    ({"request": {"messages": [{"role": "user", "content": [{"text": "hi"}]}],
                  "toolConfig": {"tools": 3}}}, r"'toolConfig.tools' must be a list"),
    ({"request": {"messages": [{"role": "user", "content": [
        {"toolResult": {"toolUseId": "t", "content": True}}]}], "inferenceConfig": {}}},
     r"toolResult 'content' must be a list"),
    # in Converse's names, not those of the Messages API the blocks are read as
    ({"response": {"output": {"message": {"role": "assistant", "content": [
        {"toolResult": {"toolUseId": "t", "content": [{"text": "x"}]}}]}}}},
     r"response: block 0 of a Converse assistant message is a 'toolResult' block \(the "
     r"assistant's blocks are text, toolUse, reasoningContent, citationsContent or "
     r"guardContent\)"),
    ({"request": {"messages": [{"role": "user", "content": [
        {"text": "hi"}, {"toolUse": {"toolUseId": "t", "name": "f", "input": {}}}]}]}},
     r"message 0: block 1 of a Converse user message is a 'toolUse' block"),
])
def test_bad_converse_fields_are_refused_naming_them(change: dict[str, Any], error: str
                                                     ) -> None:
    record = {"request": {"messages": [{"role": "user", "content": [{"text": "hi"}]}],
                          "inferenceConfig": {}},
              "response": {"output": {"message": {"role": "assistant", "content": [
                  {"text": "ok"}]}}, "stopReason": "end_turn"}, **change}
    with pytest.raises(ImportFormatError, match=r"line 1: .*" + error):
        import_text(InMemoryStorage(), json.dumps(record), name="b.jsonl")


def test_guard_content_and_reasoning_of_other_shapes_do_not_crash() -> None:
    record = {"request": {"messages": [{"role": "user", "content": [
        {"guardContent": {"text": [{}]}}]}], "inferenceConfig": {}},
        "response": {"output": {"message": {"role": "assistant", "content": [
            {"reasoningContent": {"reasoningText": "x"}}, {"text": "ok"}]}},
            "stopReason": "end_turn"}}
    s = InMemoryStorage()
    [rid] = import_text(s, json.dumps(record), name="b.jsonl").runs_created
    assert s.runs.get(f"{rid}:step:0")["response"]["text"] == "ok"


def test_records_told_apart_by_shape() -> None:
    # a failed text-only Converse call (no inferenceConfig, no answer) was read as
    # chat completions and refused ("content part 0 has unknown type None"); a Responses
    # API record whose output is an object was taken for Converse ("a Converse request
    # needs a 'messages' list")
    failed = {"request": {"messages": [{"role": "user", "content": [{"text": "hi"}]}],
                          "system": [{"text": "Be brief."}]},
              "error": {"message": "ValidationException"}}
    s = InMemoryStorage()
    report = import_text(s, json.dumps(failed), name="b.jsonl")
    assert report.apis == ["bedrock"]
    assert s.runs.require_run(report.runs_created[0]).status == "failed"
    responses = {"request": {"model": "gpt-4.1", "input": "hi"},
                 "response": {"id": "resp_1", "object": "response", "output": {}}}
    with pytest.raises(ImportFormatError, match=r"line 1: 'output' must be a string or a "
                                                r"list of items, got dict"):
        import_text(InMemoryStorage(), json.dumps(responses), name="r.jsonl")


def test_a_documents_format_is_its_media_type() -> None:
    # "txt" was "text/txt", "docx" "text/docx"
    record = {"request": {"messages": [{"role": "user", "content": [
        {"text": "Summarise."},
        {"document": {"format": "docx", "name": "report", "source": {"bytes": "UEsD"}}},
        {"document": {"format": "txt", "name": "notes", "source": {"bytes": "aGk="}}}]}],
        "inferenceConfig": {}},
        "response": {"output": {"message": {"role": "assistant", "content": [
            {"text": "ok"}]}}, "stopReason": "end_turn"}}
    s = InMemoryStorage()
    report = import_text(s, json.dumps(record), name="b.jsonl")
    [user, _] = s.memory.get_messages(report.threads_created[0])
    assert [a.get("media_type") for a in user.metadata["attachments"]] == [
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "text/plain"]


def _interaction(uri: str, request: dict[str, Any], body: Any, content_type: str
                 ) -> dict[str, Any]:
    return {"request": {"method": "POST", "body": json.dumps(request), "headers": {},
                        "uri": uri},
            "response": {"status": {"code": 200}, "body": {"string": body},
                         "headers": {"Content-Type": [content_type]}}}


def test_claude_through_invoke_model_is_the_messages_api() -> None:
    # AnthropicBedrock / ChatBedrock post the Messages API's body (with
    # anthropic_version) to /model/{id}/invoke: it was skipped as not a model call
    import base64

    import yaml

    base = "https://bedrock-runtime.us-east-1.amazonaws.com/model/"
    claude = "anthropic.claude-3-5-haiku-20241022-v1%3A0"
    ask = {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 50,
           "messages": [{"role": "user", "content": "Hi?"}]}
    answer = {"id": "msg_1", "type": "message", "role": "assistant",
              "model": "claude-3-5-haiku-20241022", "content": [{"type": "text", "text": "Hello."}],
              "stop_reason": "end_turn", "usage": {"input_tokens": 9, "output_tokens": 3}}
    events = [
        {"type": "message_start", "message": {**answer, "content": [], "stop_reason": None}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hey."}},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}},
        {"type": "message_stop"}]
    stream = b"".join(_message("chunk", {"bytes": base64.b64encode(json.dumps(e).encode()).decode()})
                      for e in events)
    embed = {"inputText": "Hi?"}
    cassette = yaml.safe_dump({"interactions": [
        _interaction(f"{base}{claude}/invoke", ask, json.dumps(answer), "application/json"),
        _interaction(f"{base}{claude}/invoke-with-response-stream", ask, stream,
                     "application/vnd.amazon.eventstream"),
        _interaction(f"{base}amazon.titan-embed-text-v2%3A0/invoke", embed,
                     json.dumps({"embedding": [0.1]}), "application/json")]})
    s = InMemoryStorage()
    report = import_text(s, cassette, name="c.yaml")
    assert report.apis == ["bedrock"]
    first, second = report.runs_created
    assert s.runs.get(f"{first}:step:0")["response"]["text"] == "Hello."
    assert s.runs.get(f"{second}:step:0")["response"]["text"] == "Hey."
    assert [k.reason for k in report.skipped if "own format" in k.reason] == [
        "a Bedrock InvokeModel call to amazon.titan-embed-text-v2:0 in that model's own "
        "format (keys: inputText): only Claude's Messages and Text Completions bodies, "
        "Nova's messages, chat messages, Cohere's chat, plain-prompt models (Llama, Mistral, "
        "Titan text, Cohere Command, AI21) and the Converse API are read"]
    for rid in report.runs_created:
        assert verify_run(s, rid).status == "ok"


def test_an_unknown_stream_event_is_noted() -> None:
    body = STREAM + _message("citationsDelta", {"contentBlockIndex": 0, "citation": {}})
    s = InMemoryStorage()
    report = import_text(s, _cassette(body), name="c.yaml")
    assert any("an event of kind 'citationsDelta' not imported" in k.reason
               for k in report.skipped)


_LLAMA = "meta.llama3-8b-instruct-v1%3A0"
_MISTRAL = "mistral.mistral-7b-instruct-v0%3A2"


def _chunks(*events: dict[str, Any]) -> bytes:
    """An InvokeModelWithResponseStream body: each event a chunk of base64 JSON."""
    import base64

    return b"".join(_message("chunk", {"bytes": base64.b64encode(json.dumps(e).encode())
                                       .decode()}) for e in events)


def _import_invoke(model: str, body: dict[str, Any], answer: Any, *, stream: bool = False
                   ) -> tuple[InMemoryStorage, Any]:
    import yaml

    uri = "https://bedrock-runtime.us-east-1.amazonaws.com/model/" + model + (
        "/invoke-with-response-stream" if stream else "/invoke")
    kind = "application/vnd.amazon.eventstream" if stream else "application/json"
    s = InMemoryStorage()
    report = import_text(s, yaml.safe_dump({"interactions": [_interaction(
        uri, body, answer if stream else json.dumps(answer), kind)]}), name="i.yaml")
    return s, report


def test_plain_prompt_models_are_read_as_legacy_completions() -> None:
    """Llama's and Mistral's prompt is one user message (its template as sent), their
    parameters the completions API's, the answer and its counts theirs; streamed, the
    chunks are joined and the usage is the last one's invocation metrics."""
    prompt = "<|begin_of_text|><|start_header_id|>user<|end_header_id|>Hi?<|eot_id|>"
    s, report = _import_invoke(_LLAMA, {"prompt": prompt, "max_gen_len": 64, "top_p": 0.5},
                               {"generation": "Hello.", "prompt_token_count": 9,
                                "generation_token_count": 3, "stop_reason": "stop"})
    [rid] = report.runs_created
    step = s.runs.get(f"{rid}:step:0")
    assert (step["model"]["name"], step["model"]["max_tokens"], step["model"]["top_p"]) == (
        "meta.llama3-8b-instruct-v1:0", 64, 0.5)
    assert (step["response"]["text"], step["response"]["finish_reason"]) == ("Hello.", "stop")
    assert (step["response"]["usage"]["input_tokens"],
            step["response"]["usage"]["output_tokens"]) == (9, 3)
    assert [(m.role, m.as_message().text()) for m in s.memory.get_messages(
        report.threads_created[0])] == [("user", prompt), ("assistant", "Hello.")]
    assert report.apis == ["bedrock"] and verify_run(s, rid).status == "ok"

    metrics = {"amazon-bedrock-invocationMetrics": {"inputTokenCount": 12,
                                                    "outputTokenCount": 4}}
    s, report = _import_invoke(_MISTRAL, {"prompt": "<s>[INST] Hi? [/INST]", "max_tokens": 9,
                                          "top_k": 5, "stop": ["</s>"]}, _chunks(
        {"outputs": [{"text": "Hel", "stop_reason": None}]},
        {"outputs": [{"text": "lo.", "stop_reason": "stop"}], **metrics}), stream=True)
    [rid] = report.runs_created
    step = s.runs.get(f"{rid}:step:0")
    assert (step["response"]["text"], step["response"]["finish_reason"]) == ("Hello.", "stop")
    assert (step["response"]["usage"]["input_tokens"],
            step["response"]["usage"]["output_tokens"]) == (12, 4)
    assert s.runs.get(f"{rid}:import")["request_params"] == {
        "max_tokens": 9, "top_k": 5, "stop": ["</s>"]}
    assert "interaction 1: response joined from 2 stream chunk(s)" in {
        f"{k.where}: {k.reason}" for k in report.skipped}

    # Mistral's answer without a stream says no token counts: the usage is unknown
    s, report = _import_invoke(_MISTRAL, {"prompt": "Hi?"}, {"outputs": [
        {"text": "Yo.", "stop_reason": "length"}]})
    assert s.runs.get(f"{report.runs_created[0]}:step:0")["usage_known"] is False


def test_a_plain_prompt_record_without_a_url_is_told_by_its_answer() -> None:
    for record, text in (
            ({"prompt": "Hi?", "response": {"generation": "Hey.", "prompt_token_count": 2,
                                            "generation_token_count": 2}}, "Hey."),
            ({"request": {"inputText": "Hi?", "textGenerationConfig": {"maxTokenCount": 5}},
              "response": {"inputTextTokenCount": 2, "results": [
                  {"outputText": "Hi!", "tokenCount": 2, "completionReason": "FINISH"}]}},
             "Hi!"),
            ({"request": {"prompt": "Hi?"}, "response": {"outputs": [
                {"text": "Salut.", "stop_reason": "stop"}]}}, "Salut.")):
        s = InMemoryStorage()
        report = import_text(s, json.dumps(record), name="b.jsonl")
        step = s.runs.get(f"{report.runs_created[0]}:step:0")
        assert step["response"]["text"] == text, record


@pytest.mark.parametrize(("answer", "error"), [
    ({"generation": 3}, "the answer's text must be a string, got 3"),
    ({"generation": "x", "prompt_token_count": "8"},
     "'prompt_token_count' must be a token count, got '8'"),
    ({"outputs": []}, "'outputs' is empty: the answer has no text"),
    ({"outputs": {"text": "x"}}, "'outputs' must be a list, got {'text': 'x'}"),
    ({"answer": "x"}, "an InvokeModel answer of no shape this importer reads (keys: "
                      "answer; expected generation, outputs, results, outputText, "
                      "generations, is_finished (a Cohere stream), completion, completions "
                      "or choices)")])
def test_a_bad_plain_prompt_answer_is_refused_naming_the_value(answer: Any, error: str
                                                                ) -> None:
    with pytest.raises(ImportFormatError) as e:
        _import_invoke(_LLAMA, {"prompt": "Hi?"}, answer)
    assert str(e.value) == f"interaction 1: {error}"


def test_nova_through_invoke_model_is_read_as_converse() -> None:
    """Nova's InvokeModel body is Converse's blocks (its tools a toolConfig); its stream
    Converse's events, each a chunk keyed by its name; a chunk of no such event is
    refused naming its keys."""
    body = {"schemaVersion": "messages-v1", "system": [{"text": "Be brief."}],
            "messages": [{"role": "user", "content": [{"text": "Find otters."}]}],
            "inferenceConfig": {"max_new_tokens": 20},
            "toolConfig": {"tools": [{"toolSpec": {"name": "lookup", "inputSchema": {
                "json": {"type": "object"}}}}]}}
    events = [{"messageStart": {"role": "assistant"}},
              {"contentBlockDelta": {"delta": {"text": "Looking."}, "contentBlockIndex": 0}},
              {"contentBlockStart": {"start": {"toolUse": {"toolUseId": "t1",
                                                           "name": "lookup"}},
                                     "contentBlockIndex": 1}},
              {"contentBlockDelta": {"delta": {"toolUse": {"input": '{"q": "otters"}'}},
                                     "contentBlockIndex": 1}},
              {"messageStop": {"stopReason": "tool_use"}},
              {"metadata": {"usage": {"inputTokens": 11, "outputTokens": 6}}}]
    s, report = _import_invoke("amazon.nova-micro-v1%3A0", body, _chunks(*events),
                               stream=True)
    [rid] = report.runs_created
    step = s.runs.get(f"{rid}:step:0")
    assert step["model"]["name"] == "amazon.nova-micro-v1:0"
    assert step["model"]["max_tokens"] == 20 and [t["name"] for t in step["tools"]] == [
        "lookup"]
    assert step["response"]["text"] == "Looking."
    assert [(c["name"], c["args"]) for c in step["response"]["tool_calls"]] == [
        ("lookup", {"q": "otters"})]
    assert (step["response"]["usage"]["input_tokens"],
            step["response"]["usage"]["output_tokens"]) == (11, 6)
    with pytest.raises(ImportFormatError) as e:
        _import_invoke("amazon.nova-micro-v1%3A0", body, _chunks(
            events[0], {"surprise": {}}), stream=True)
    assert str(e.value) == ("interaction 1: stream event 1: not an event of a "
                            "ConverseStream (nor a chunk of Nova's holding one of "
                            "messageStart, contentBlockStart, contentBlockDelta, "
                            "contentBlockStop, messageStop, metadata): its keys are surprise")


def test_chat_bodies_through_invoke_model_are_read_as_chat() -> None:
    """AI21 Jamba's (and Mistral Large's) body is chat completions'; Cohere Command R's
    is Cohere's v1 Chat: both read so, the model the URL's."""
    s, report = _import_invoke("ai21.jamba-1-5-mini-v1%3A0", {
        "messages": [{"role": "system", "content": "Be brief."},
                     {"role": "user", "content": "Hi?"}], "max_tokens": 20},
        {"id": "c1", "choices": [{"index": 0, "message": {"role": "assistant",
                                                          "content": "Hello."},
                                  "finish_reason": "stop"}],
         "usage": {"prompt_tokens": 9, "completion_tokens": 2}})
    step = s.runs.get(f"{report.runs_created[0]}:step:0")
    assert (step["model"]["name"], step["model"]["max_tokens"], step["response"]["text"]) == (
        "ai21.jamba-1-5-mini-v1:0", 20, "Hello.")
    assert report.apis == ["bedrock"]

    s, report = _import_invoke("cohere.command-r-v1%3A0", {
        "message": "Otters?", "preamble": "Be brief.", "chat_history": [
            {"role": "USER", "message": "Hi"}, {"role": "CHATBOT", "message": "Hello."}]},
        {"response_id": "r", "text": "Yes, otters.", "generation_id": "g",
         "finish_reason": "COMPLETE", "chat_history": []})
    [rid] = report.runs_created
    step = s.runs.get(f"{rid}:step:0")
    assert (step["model"]["name"], step["response"]["text"]) == (
        "cohere.command-r-v1:0", "Yes, otters.")
    assert [(m.role, m.as_message().text()) for m in s.memory.get_messages(
        report.threads_created[0])] == [("user", "Hi"), ("assistant", "Hello."),
                                        ("user", "Otters?"), ("assistant", "Yes, otters.")]
    assert report.apis == ["bedrock"] and verify_run(s, rid).status == "ok"
