"""The fake provider answers like a real one: OpenAI-shaped 400s for invalid requests,
SSE streaming with a usage chunk, /v1/models, faults on request, and it stops."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from typing import Any

import pytest

from tests.fake_provider.server import FAULT_HEADER, FakeProvider
from tests.fake_provider.validation import InvalidRequest, validate_request

USER = [{"role": "user", "content": "hi"}]
TOOL = {"type": "function", "function": {"name": "lookup", "parameters": {
    "type": "object", "properties": {}}}}


def post(fp: FakeProvider, body: Any, headers: dict[str, str] | None = None
         ) -> tuple[int, dict[str, str], str]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(fp.base_url + "/chat/completions", data=data, method="POST",
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, _lower(resp.headers), resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, _lower(e.headers), e.read().decode()


def _lower(headers: Any) -> dict[str, str]:
    return {k.lower(): v for k, v in headers.items()}


@pytest.mark.parametrize("body, param, needle", [
    ({"messages": USER}, "model", "you must provide a model parameter"),
    ({"model": "m", "messages": USER, "tools": []}, "tools", "empty array"),
    ({"model": "m", "messages": USER, "tools": [
        {"type": "function", "function": {"name": "look up"}}]},
     "tools[0].function.name", "does not match pattern"),
    ({"model": "m", "messages": USER, "tools": [TOOL, TOOL]}, "tools[1].function.name",
     "Duplicate tool name"),
    ({"model": "m", "messages": USER, "tools": [{"type": "function", "function": {
        "name": "f", "parameters": {"type": "string"}}}]}, "tools[0].function.parameters",
     "type: \"object\""),
    ({"model": "m", "messages": USER, "tool_choice": "auto"}, "tool_choice",
     "only allowed when 'tools'"),
    ({"model": "m", "messages": USER, "temperature": 2.5}, "temperature", "out of range"),
    ({"model": "m", "messages": USER, "stream_options": {"include_usage": True}},
     "stream_options", "only allowed when 'stream' is enabled"),
    ({"model": "m", "messages": USER, "max_tokens": 0}, "max_tokens", "below minimum"),
    ({"model": "m", "messages": USER, "temprature": 1}, "temprature", "Unrecognized"),
    ({"model": "m", "messages": [{"role": "tool", "tool_call_id": "x", "content": "r"}]},
     "messages.[0].role", "preceeding"),
])
def test_invalid_requests_get_openai_shaped_400s(fake_provider: FakeProvider,
                                                 body: dict[str, Any], param: str,
                                                 needle: str) -> None:
    with pytest.raises(InvalidRequest, match=needle):
        validate_request(body)
    status, _, text = post(fake_provider, body)
    assert status == 400
    error = json.loads(text)["error"]
    assert needle in error["message"] and error["param"] == param
    assert error["type"] == "invalid_request_error"


def test_a_body_that_is_not_json_is_a_400(fake_provider: FakeProvider) -> None:
    status, _, text = post(fake_provider, b"{oops")
    assert status == 400 and "JSON object" in json.loads(text)["error"]["message"]


def test_a_valid_request_with_tools_passes_and_is_recorded(fake_provider: FakeProvider
                                                           ) -> None:
    body = {"model": "m", "messages": USER, "tools": [TOOL], "tool_choice": "auto",
            "parallel_tool_calls": True, "temperature": 0, "seed": 1}
    validate_request(body)
    status, _, text = post(fake_provider, body)
    reply = json.loads(text)
    assert status == 200 and reply["object"] == "chat.completion"
    assert reply["usage"]["total_tokens"] == (reply["usage"]["prompt_tokens"]
                                              + reply["usage"]["completion_tokens"])
    assert fake_provider.chat_bodies == [body]


def test_stream_is_server_sent_events_ending_in_usage_and_done(fake_provider: FakeProvider
                                                               ) -> None:
    status, headers, text = post(fake_provider, {
        "model": "m", "messages": USER, "temperature": 0, "stream": True,
        "stream_options": {"include_usage": True}})
    assert status == 200 and headers["content-type"].startswith("text/event-stream")
    events = [line[len("data: "):] for line in text.split("\n\n") if line]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] > 0
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
    text_out = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks[:-1])
    plain = json.loads(post(fake_provider, {"model": "m", "messages": USER,
                                            "temperature": 0})[2])
    assert text_out == plain["choices"][0]["message"]["content"]


def test_faults_by_header_and_models_list(fake_provider: FakeProvider) -> None:
    status, headers, text = post(fake_provider, {"model": "m", "messages": USER},
                                 {FAULT_HEADER: "rate_limit:2"})
    assert status == 429 and headers["retry-after"] == "2" and headers["retry-after-ms"] == "2000"
    assert json.loads(text)["error"]["code"] == "rate_limit_exceeded"
    assert post(fake_provider, {"model": "m", "messages": USER},
                {FAULT_HEADER: "server_error"})[0] == 500
    with urllib.request.urlopen(fake_provider.base_url + "/models", timeout=10) as resp:
        models = json.loads(resp.read())
    assert [m["id"] for m in models["data"]] == ["fake-model"]


def test_it_stops_by_itself_after_its_lifetime() -> None:
    fp = FakeProvider(max_lifetime=0.3)
    fp.start()
    assert fp._thread is not None
    fp._thread.join(timeout=10)
    assert not fp._thread.is_alive()
    with socket.socket() as s, pytest.raises(OSError):
        s.settimeout(2)
        s.connect(("127.0.0.1", fp.port))
    fp.stop()  # stopping again is harmless
