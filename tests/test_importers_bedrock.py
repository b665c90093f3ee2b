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
    llama = {"prompt": "<|begin_of_text|>hi", "max_gen_len": 50}
    with pytest.raises(ImportFormatError, match=r"a Bedrock InvokeModel call to "
                                                r"meta\.llama3-8b-instruct-v1:0 in that "
                                                r"model's own format \(keys: max_gen_len, "
                                                r"prompt\)"):
        import_text(InMemoryStorage(), _invoke_cassette(
            "meta.llama3-8b-instruct-v1%3A0", llama, {"generation": "hello"}),
            name="i.yaml")
