"""OpenAIChatModel against a fake OpenAI-compatible server on 127.0.0.1: the request
format, tool calls, and clear ModelErrors for timeouts, bad JSON, HTTP errors and refusals."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from memory_core.errors import InvalidInputError, ModelError
from memory_core.models.base import ToolSpec
from memory_core.models.openai_http import OpenAIChatModel, to_openai_messages
from memory_core.types import Message, ToolCallPart, ToolResultPart

Reply = Callable[[BaseHTTPRequestHandler], None]


@dataclass
class FakeServer:
    url: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    reply: Reply | None = None
    release: threading.Event = field(default_factory=threading.Event)


def send(status: int, body: str | bytes) -> Reply:
    def reply(h: BaseHTTPRequestHandler) -> None:
        data = body.encode() if isinstance(body, str) else body
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)
    return reply


def completion(message: dict[str, Any], **extra: Any) -> Reply:
    return send(200, json.dumps({"id": "x", "model": "fake-model",
                                 "choices": [{"index": 0, "message": message,
                                              "finish_reason": extra.pop("finish", "stop")}],
                                 **extra}))


@pytest.fixture
def server() -> Iterator[FakeServer]:
    state: FakeServer

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            length = int(self.headers.get("Content-Length", "0"))
            state.requests.append({"path": self.path,
                                   "body": json.loads(self.rfile.read(length))})
            state.headers.append(dict(self.headers))
            assert state.reply is not None
            state.reply(self)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    state = FakeServer(url=f"http://127.0.0.1:{httpd.server_address[1]}/v1")
    t = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                         daemon=True)
    t.start()
    try:
        yield state
    finally:
        state.release.set()
        httpd.shutdown()
        httpd.server_close()
        t.join()


REFUND = ToolSpec("refund", "Issue a refund for an order",
                  {"type": "object", "properties": {"order_id": {"type": "string"}},
                   "required": ["order_id"]})


def test_happy_path_sends_openai_format_and_parses_text_and_usage(server: FakeServer) -> None:
    server.reply = completion({"role": "assistant", "content": "Refund issued."},
                              usage={"prompt_tokens": 42, "completion_tokens": 3})
    model = OpenAIChatModel(base_url=server.url + "/", model="llama3.1", api_key="sk-test",
                            temperature=0.0, seed=7)
    call = ToolCallPart(id="call-1", name="refund", args={"order_id": "r-7"})
    msgs = [Message(role="system", content="Be brief."),
            Message(role="user", content="please refund order r-7"),
            Message(role="assistant", content=[call]),
            Message(role="tool", content=[ToolResultPart(call_id="call-1", name="refund",
                                                         result={"status": "ok"})])]
    r = model.complete(msgs, [REFUND])
    assert (r.text, r.tool_calls, r.model, r.finish_reason) == \
        ("Refund issued.", [], "fake-model", "stop")
    assert (r.usage.input_tokens, r.usage.output_tokens) == (42, 3)
    (req,) = server.requests
    assert req["path"] == "/v1/chat/completions"
    body = req["body"]
    assert body["model"] == "llama3.1" and body["temperature"] == 0.0 and body["seed"] == 7
    assert body["stream"] is False
    assert body["tools"] == [{"type": "function", "function": {
        "name": "refund", "description": "Issue a refund for an order",
        "parameters": REFUND.parameters}}]
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "please refund order r-7"},
        {"role": "assistant", "content": None, "tool_calls": [{
            "id": "call-1", "type": "function",
            "function": {"name": "refund", "arguments": "{\"order_id\": \"r-7\"}"}}]},
        {"role": "tool", "tool_call_id": "call-1", "name": "refund",
         "content": "{\"status\": \"ok\"}"}]
    assert server.headers[0]["Authorization"] == "Bearer sk-test"
    assert "sk-test" not in repr(model)


def test_tool_call_response_is_parsed(server: FakeServer) -> None:
    server.reply = completion({"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_abc", "type": "function",
         "function": {"name": "refund", "arguments": "{\"order_id\": \"r-7\"}"}},
        {"type": "function", "function": {"name": "refund", "arguments": {"order_id": "r-8"}}},
    ]}, finish="tool_calls")
    r = OpenAIChatModel(base_url=server.url, model="m").complete(
        [Message(content="refund r-7 and r-8")], [REFUND])
    assert r.text is None and r.finish_reason == "tool_calls"
    assert [(c.id, c.name, c.args) for c in r.tool_calls][0] == \
        ("call_abc", "refund", {"order_id": "r-7"})
    second = r.tool_calls[1]
    assert second.args == {"order_id": "r-8"} and second.id.startswith("call-")
    assert "tools" in server.requests[0]["body"]


def test_malformed_tool_arguments_name_the_tool(server: FakeServer) -> None:
    server.reply = completion({"role": "assistant", "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "refund",
                                                     "arguments": "{order_id: r-7"}}]})
    with pytest.raises(ModelError, match=r"malformed JSON arguments for tool 'refund'"):
        OpenAIChatModel(base_url=server.url, model="m").complete([Message(content="x")], [])


def test_timeout_raises_model_error_naming_the_url(server: FakeServer) -> None:
    def slow(h: BaseHTTPRequestHandler) -> None:
        server.release.wait(5.0)  # released at teardown, so the test does not linger
    server.reply = slow
    model = OpenAIChatModel(base_url=server.url, model="m", timeout=0.2)
    with pytest.raises(ModelError, match=r"timed out after 0.2s waiting for http://127\.0\.0\.1"):
        model.complete([Message(content="hi")], [])


def test_malformed_json_body(server: FakeServer) -> None:
    server.reply = send(200, "{\"choices\": [oops")
    with pytest.raises(ModelError, match=r"malformed JSON from http://127\.0\.0\.1.*oops"):
        OpenAIChatModel(base_url=server.url, model="m").complete([Message(content="hi")], [])


def test_unexpected_shape(server: FakeServer) -> None:
    server.reply = send(200, json.dumps({"error": "nope"}))
    with pytest.raises(ModelError, match=r"no choices\[0\]\.message"):
        OpenAIChatModel(base_url=server.url, model="m").complete([Message(content="hi")], [])


def test_http_500_reports_status_and_body_excerpt(server: FakeServer) -> None:
    server.reply = send(500, json.dumps({"error": {"message": "model 'm' not loaded"}}))
    with pytest.raises(ModelError, match=r"HTTP 500 from http://127\.0\.0\.1.*not loaded"):
        OpenAIChatModel(base_url=server.url, model="m").complete([Message(content="hi")], [])


def test_connection_refused() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # the port was free and is closed now: nothing listens there
    model = OpenAIChatModel(base_url=f"http://127.0.0.1:{port}/v1", model="m", timeout=2.0)
    with pytest.raises(ModelError, match=rf"connection refused by http://127\.0\.0\.1:{port}"):
        model.complete([Message(content="hi")], [])


def test_configuration_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("MEMWB_OPENAI_BASE_URL", "MEMWB_OPENAI_MODEL", "MEMWB_OPENAI_API_KEY",
                "MEMWB_OPENAI_TIMEOUT", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(InvalidInputError, match="MEMWB_OPENAI_MODEL"):
        OpenAIChatModel.from_env()
    m = OpenAIChatModel.from_env({"MEMWB_OPENAI_MODEL": "qwen2.5", "OPENAI_API_KEY": "k",
                                  "MEMWB_OPENAI_TIMEOUT": "4.5"})
    assert (m.url, m.model, m.name, m.timeout) == \
        ("http://127.0.0.1:11434/v1/chat/completions", "qwen2.5", "qwen2.5", 4.5)
    monkeypatch.setenv("MEMWB_OPENAI_MODEL", "env-model")
    monkeypatch.setenv("MEMWB_OPENAI_BASE_URL", "http://localhost:8000/v1")
    assert OpenAIChatModel().url == "http://localhost:8000/v1/chat/completions"
    # an explicit environ is the only source: os.environ does not leak into it
    with pytest.raises(InvalidInputError, match="MEMWB_OPENAI_MODEL"):
        OpenAIChatModel.from_env({})
    assert OpenAIChatModel.from_env({"MEMWB_OPENAI_MODEL": "m"}).base_url == \
        "http://127.0.0.1:11434/v1"
    with pytest.raises(InvalidInputError, match="'soon'"):
        OpenAIChatModel.from_env({"MEMWB_OPENAI_MODEL": "m", "MEMWB_OPENAI_TIMEOUT": "soon"})
    with pytest.raises(InvalidInputError, match="'localhost:1'"):
        OpenAIChatModel(base_url="localhost:1", model="m")


def test_text_and_string_tool_messages_convert() -> None:
    msgs = to_openai_messages([
        Message(role="tool", content="{\"ok\": true}", metadata={"tool_call_id": "c9"}),
        Message(role="user", content=[]),
    ])
    assert msgs == [{"role": "tool", "content": "{\"ok\": true}", "tool_call_id": "c9"},
                    {"role": "user", "content": ""}]


@pytest.mark.parametrize("failure", ["timeout", "malformed"])
def test_a_failing_server_fails_the_run_and_the_run_resumes_losing_nothing(
        server: FakeServer, failure: str) -> None:
    """The model server times out (or answers garbage) at step 1, after a tool call was
    journaled at step 0; the run fails with a clear ModelError, and running the same
    run_id again once the server is back calls the model only for the missing step."""
    from memory_core.memory import AgentMemory
    from memory_core.models.base import Tool
    from memory_core.runner import Agent, Runner
    from memory_core.storage.inmemory import InMemoryStorage

    applied: list[dict[str, Any]] = []
    lookup = Tool(ToolSpec("lookup", "Look something up.", {"type": "object", "properties": {
        "q": {"type": "string"}}}), lambda args: applied.append(args) or {"found": "42"})
    storage = InMemoryStorage()
    memory = AgentMemory(storage, recent_n=4)
    model = OpenAIChatModel(base_url=server.url, model="m", timeout=0.3)
    runner = Runner(storage, {"a": Agent(name="a", instructions="Be brief.", model=model,
                                         tools=[lookup])}, memory=memory)
    call = completion({"role": "assistant", "content": None, "tool_calls": [{
        "id": "c1", "type": "function",
        "function": {"name": "lookup", "arguments": json.dumps({"q": "answer"})}}]},
        finish="tool_calls")

    def slow(h: BaseHTTPRequestHandler) -> None:
        server.release.wait(3.0)

    replies = [call, slow if failure == "timeout" else send(200, "{\"choices\": [oops")]
    server.reply = lambda h: replies.pop(0)(h)
    with pytest.raises(ModelError, match=r"http://127\.0\.0\.1"):
        runner.run("a", run_id="r1", thread_id="t", resource_id="u", prompt="What is it?")
    run = storage.runs.get_run("r1")
    assert run is not None and run.status == "failed" and "ModelError" in (run.error or "")
    assert storage.runs.get("r1:step:0") is not None and storage.runs.get("r1:step:1") is None
    assert len(applied) == 1

    server.release.set()
    served = len(server.requests)
    server.reply = completion({"role": "assistant", "content": "It is 42."})
    result = runner.run("a", run_id="r1", thread_id="t", resource_id="u", prompt="What is it?")
    assert result.text == "It is 42."
    assert len(server.requests) == served + 1  # only the missing step was asked for
    assert len(applied) == 1  # the tool was not applied again
    assert storage.runs.get_run("r1").status == "completed"  # type: ignore[union-attr]
    roles = [m.role for m in storage.memory.get_messages("t")]
    assert roles == ["user", "assistant", "tool", "assistant"]
