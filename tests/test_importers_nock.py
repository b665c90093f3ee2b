"""nock recordings (memory_core/importers/nock.py): nock's older flat rawHeaders with a
gzip body as hex chunks, a call that is no model call, a definition that cannot be
read. The real recordings are in tests/fixtures/imports/real (nock-*)."""

from __future__ import annotations

import gzip
import json

import pytest

from memory_core.errors import ImportFormatError
from memory_core.importers import detect_format, import_text
from memory_core.storage.inmemory import InMemoryStorage

ASK = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hi"}]}
ANSWER = {"id": "c1", "object": "chat.completion", "created": 1766775209, "model": "gpt-4o-mini",
          "choices": [{"index": 0, "finish_reason": "stop",
                       "message": {"role": "assistant", "content": "Hello!"}}],
          "usage": {"prompt_tokens": 8, "completion_tokens": 2, "total_tokens": 10}}


def test_a_gzip_body_in_hex_chunks_a_call_that_is_none_and_a_broken_definition() -> None:
    packed = gzip.compress(json.dumps(ANSWER).encode()).hex()
    definitions = [
        {"scope": "https://api.openai.com:443", "method": "POST", "path": "/v1/chat/completions",
         "body": ASK, "status": 200, "response": [packed[:40], packed[40:]],
         "rawHeaders": ["Content-Type", "application/json", "Content-Encoding", "gzip"]},
        {"scope": "https://api.openai.com:443", "method": "GET", "path": "/v1/models",
         "status": 200, "response": {"data": []}},
        {"scope": "https://api.openai.com:443", "method": "POST",
         "path": "/v1/chat/completions", "body": ASK, "status": "OK", "response": ANSWER},
    ]
    text = json.dumps(definitions)
    assert detect_format(text) == "openai"
    s = InMemoryStorage()
    report = import_text(s, text)
    [rid] = report.runs_created
    assert [m.text() for m in s.memory.get_messages(report.threads_created[0])] == [
        "Hi", "Hello!"]
    assert s.runs.get(f"{rid}:step:0")["response"]["usage"]["input_tokens"] == 8
    said = {(k.where, k.reason) for k in report.skipped}
    assert ("definition 2", "not a model call this importer reads (GET "
            "https://api.openai.com:443/v1/models)") in said
    assert ("definition 3", "not imported: 'status' must be a number, got 'OK'") in said
    with pytest.raises(ImportFormatError, match=r"definition 1: 'status' must be a number"):
        import_text(InMemoryStorage(), json.dumps(definitions[2:]))


def test_notes_on_definitions_come_in_the_file_s_order() -> None:
    def call(status: object) -> dict[str, object]:
        return {"scope": "https://api.openai.com:443", "method": "POST",
                "path": "/v1/chat/completions", "body": ASK, "status": status,
                "response": ANSWER}
    defs = [call(200)] + [{"scope": "https://x", "method": "GET", "path": "/v1/models"}
                          for _ in range(9)] + [call("bad")]
    report = import_text(InMemoryStorage(), json.dumps(defs))
    wheres = [k.where for k in report.skipped]
    assert wheres == sorted(wheres, key=lambda w: int(w.split()[-1]))


def _event(event_type: str, payload: dict) -> bytes:
    """One AWS event-stream message (what Bedrock's ConverseStream sends)."""
    import struct
    import zlib

    def header(name: str, value: str) -> bytes:
        return (bytes([len(name)]) + name.encode() + b"\x07"
                + struct.pack(">H", len(value)) + value.encode())
    headers = header(":event-type", event_type) + header(":message-type", "event")
    body = json.dumps(payload).encode()
    total = 16 + len(headers) + len(body)
    prelude = struct.pack(">II", total, len(headers))
    message = prelude + struct.pack(">I", zlib.crc32(prelude)) + headers + body
    return message + struct.pack(">I", zlib.crc32(message))


CONVERSE = {"messages": [{"role": "user", "content": [{"text": "Hi"}]}]}
STREAM = b"".join([
    _event("messageStart", {"role": "assistant"}),
    _event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Hello!"}}),
    _event("messageStop", {"stopReason": "end_turn"}),
    _event("metadata", {"usage": {"inputTokens": 5, "outputTokens": 2, "totalTokens": 7},
                        "metrics": {"latencyMs": 100}})])


def _binary(response: str) -> str:
    return json.dumps([{
        "scope": "https://bedrock-runtime.us-east-1.amazonaws.com:443", "method": "POST",
        "path": "/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse-stream",
        "body": CONVERSE, "status": 200, "response": response, "responseIsBinary": True,
        "rawHeaders": ["Content-Type", "application/vnd.amazon.eventstream"]}])


def test_a_response_recorded_as_binary_is_its_hex_bytes() -> None:
    """nock writes a response it finds not to be text (``"responseIsBinary": true``: an
    AWS event stream) as one hex text; it was refused as invalid JSON."""
    s = InMemoryStorage()
    report = import_text(s, _binary(STREAM.hex()))
    assert [m.text() for m in s.memory.get_messages(report.threads_created[0])] == [
        "Hi", "Hello!"]
    extra = s.runs.get(f"{report.runs_created[0]}:import")["extra"]
    assert extra["endpoint"] == "https://bedrock-runtime.us-east-1.amazonaws.com"


def test_a_binary_response_that_is_no_hex_is_one_clear_error() -> None:
    with pytest.raises(ImportFormatError, match="recorded as binary .responseIsBinary. "
                                                "must be hex"):
        import_text(InMemoryStorage(), _binary("not hex at all"))
