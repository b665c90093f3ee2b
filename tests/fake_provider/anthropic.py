"""A local Anthropic Messages API server for the tests: ``POST /v1/messages`` (whole
and streamed answers) and ``POST /v1/messages/count_tokens``, on 127.0.0.1.

It is strict where the real API is (what it rejects, it rejects, with the API's error
shape ``{"type": "error", "error": {"type", "message"}}``): the key (``x-api-key`` or
``Authorization: Bearer``) and the ``anthropic-version`` header are required; the body
needs ``model``, ``max_tokens`` and a non-empty ``messages`` list of ``user`` and
``assistant`` turns whose blocks are of a known type; every ``tool_use`` is answered by
a ``tool_result`` in the next message and every ``tool_result`` answers a ``tool_use``
of the message before; tools need a name and an ``input_schema``; an unknown top-level
field is refused. The answer is scripted (``reply_next``) or says back the last user
turn; a stream is the API's events (``message_start``, ``content_block_*``, ``ping``,
``message_delta``, ``message_stop``). Faults: ``overloaded`` (529), ``rate_limit``
(429 with ``retry-after``), ``stream_error`` (an ``error`` event after the first
delta), ``stream_cut`` (the stream ends after the first delta). Every request is kept (``requests``)."""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.fake_provider.server import Received, serve_in_thread

AnthropicFault = Literal["overloaded", "rate_limit", "stream_error", "stream_cut"]
KNOWN_FIELDS = frozenset({
    "model", "messages", "max_tokens", "system", "metadata", "stop_sequences", "stream",
    "temperature", "top_k", "top_p", "tools", "tool_choice", "thinking", "service_tier",
    "container", "mcp_servers", "context_management", "cache_control", "diagnostics",
    "inference_geo", "output_config", "speed", "user_profile_id", "workspace_id"})
USER_BLOCKS = frozenset({"text", "image", "document", "tool_result", "search_result"})
ASSISTANT_BLOCKS = frozenset({"text", "tool_use", "thinking", "redacted_thinking",
                              "server_tool_use", "web_search_tool_result"})


class Refused(Exception):
    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status, self.kind = status, kind


def error_body(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


def _invalid(message: str) -> Refused:
    return Refused(400, "invalid_request_error", message)


def _blocks(content: Any, where: str) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        raise _invalid(f"{where}: Input should be a valid string or list")
    for j, b in enumerate(content):
        if not isinstance(b, dict) or not isinstance(b.get("type"), str):
            raise _invalid(f"{where}.{j}: Input should be a valid dictionary with a 'type'")
    return content


def validate(body: Any, *, counting: bool = False) -> None:
    """Refused as the Messages API refuses a body (``counting``: count_tokens, which
    takes no ``max_tokens``)."""
    if not isinstance(body, dict):
        raise _invalid("body: Input should be a valid dictionary")
    extra = sorted(set(body) - KNOWN_FIELDS)
    if extra:
        raise _invalid(f"{extra[0]}: Extra inputs are not permitted")
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise _invalid("model: Field required")
    if not counting:
        mt = body.get("max_tokens")
        if isinstance(mt, bool) or not isinstance(mt, int):
            raise _invalid("max_tokens: Field required")
        if mt < 1:
            raise _invalid("max_tokens: Input should be greater than or equal to 1")
    t = body.get("temperature")
    if t is not None and (isinstance(t, bool) or not isinstance(t, int | float)
                          or not 0 <= t <= 1):
        raise _invalid("temperature: Input should be less than or equal to 1")
    system = body.get("system")
    if system is not None and not isinstance(system, str):
        for j, b in enumerate(_blocks(system, "system")):
            if b["type"] != "text" or not isinstance(b.get("text"), str):
                raise _invalid(f"system.{j}: Input should be a text block")
    for j, tool in enumerate(body.get("tools") or []):
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            raise _invalid(f"tools.{j}.name: Field required")
        if tool.get("type") in (None, "custom") and not isinstance(tool.get("input_schema"),
                                                                  dict):
            raise _invalid(f"tools.{j}.input_schema: Field required")
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise _invalid("messages: Field required")
    if not messages:
        raise _invalid("messages: at least one message is required")
    asked: list[str] = []  # the tool_use ids of the message before
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in ("user", "assistant"):
            raise _invalid(f"messages.{i}.role: Input should be 'user' or 'assistant'")
        blocks = _blocks(m.get("content"), f"messages.{i}.content")
        allowed = USER_BLOCKS if m["role"] == "user" else ASSISTANT_BLOCKS
        for j, b in enumerate(blocks):
            if b["type"] not in allowed:
                raise _invalid(f"messages.{i}.content.{j}.type: a {m['role']} message "
                               f"cannot hold a '{b['type']}' block")
        answered = [b.get("tool_use_id") for b in blocks if b["type"] == "tool_result"]
        for j, b in enumerate(blocks):
            if b["type"] == "tool_result" and b.get("tool_use_id") not in asked:
                raise _invalid(
                    f"messages.{i}.content.{j}: unexpected `tool_use_id` found in "
                    f"`tool_result` blocks: {b.get('tool_use_id')}. Each `tool_result` "
                    "block must have a corresponding `tool_use` block in the previous "
                    "message.")
        missing = [a for a in asked if a not in answered]
        if missing:
            raise _invalid(f"messages.{i - 1}: `tool_use` ids were found without "
                           f"`tool_result` blocks immediately after: {missing[0]}. Each "
                           "`tool_use` block must have a corresponding `tool_result` "
                           "block in the next message.")
        asked = [b.get("id") for b in blocks if b["type"] == "tool_use"]
        for j, b in enumerate(blocks):
            if b["type"] == "tool_use" and not (isinstance(b.get("id"), str)
                                                and isinstance(b.get("name"), str)
                                                and isinstance(b.get("input"), dict)):
                raise _invalid(f"messages.{i}.content.{j}: a tool_use needs an id, a name "
                               "and an input object")


def _said(block: dict[str, Any]) -> str:
    if block["type"] == "text":
        return str(block.get("text", ""))
    if block["type"] == "tool_result":
        c = block.get("content")
        return c if isinstance(c, str) else " ".join(
            str(x.get("text", "")) for x in c or [] if isinstance(x, dict))
    return ""


def _tokens(value: Any) -> int:
    return max(1, len(json.dumps(value)) // 4)


@dataclass
class FakeAnthropic:
    """The fake Messages API; see the module docstring. ``api_key``: the key it takes."""

    api_key: str = "sk-ant-fake-key-000000"
    max_lifetime: float = 120.0
    requests: list[Received] = field(default_factory=list)
    _replies: deque[tuple[list[dict[str, Any]], str]] = field(default_factory=deque)
    _faults: deque[AnthropicFault] = field(default_factory=deque)
    _server: uvicorn.Server | None = None
    _thread: threading.Thread | None = None
    _timer: threading.Timer | None = None
    port: int = 0

    @property
    def base_url(self) -> str:
        """What an Anthropic client takes (it adds ``/v1/messages`` itself)."""
        return f"http://127.0.0.1:{self.port}"

    def reply_next(self, content: list[dict[str, Any]], stop_reason: str = "end_turn"
                   ) -> None:
        """Answer the next valid request with these content blocks."""
        self._replies.append((content, stop_reason))

    def fail_next(self, *faults: AnthropicFault) -> None:
        self._faults.extend(faults)

    def __enter__(self) -> FakeAnthropic:
        app = Starlette(routes=[
            Route("/v1/messages", self._messages, methods=["POST"]),
            Route("/v1/messages/count_tokens", self._count, methods=["POST"])])
        self._server, self._thread, self.port = serve_in_thread(app, "fake-anthropic")
        self._timer = threading.Timer(self.max_lifetime, self._stop)
        self._timer.daemon = True
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._stop()

    def _stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=10)

    async def _read(self, request: Request, *, counting: bool = False) -> dict[str, Any]:
        raw = await request.body()
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = raw.decode("utf-8", errors="replace")
        self.requests.append(Received("POST", request.url.path, request.url.query,
                                      dict(request.headers), body))
        key = request.headers.get("x-api-key") or request.headers.get(
            "authorization", "").removeprefix("Bearer ")
        if key != self.api_key:
            raise Refused(401, "authentication_error", "invalid x-api-key")
        if not request.headers.get("anthropic-version"):
            raise _invalid("anthropic-version: header is required")
        if isinstance(body, str):
            raise _invalid("There was an issue with the request body: not valid JSON")
        validate(body, counting=counting)
        return body

    async def _count(self, request: Request) -> Response:
        try:
            body = await self._read(request, counting=True)
        except Refused as e:
            return JSONResponse(error_body(e.kind, str(e)), status_code=e.status)
        return JSONResponse({"input_tokens": _tokens(body["messages"])})

    async def _messages(self, request: Request) -> Response:
        try:
            body = await self._read(request)
        except Refused as e:
            return JSONResponse(error_body(e.kind, str(e)), status_code=e.status)
        fault = self._faults.popleft() if self._faults else None
        if fault == "overloaded":
            return JSONResponse(error_body("overloaded_error", "Overloaded"), status_code=529)
        if fault == "rate_limit":
            return JSONResponse(error_body("rate_limit_error", "Number of request tokens "
                                           "has exceeded your per-minute rate limit"),
                                status_code=429, headers={"retry-after": "1"})
        message = self._answer(body)
        headers = {"request-id": f"req_{uuid.uuid4().hex[:24]}"}
        if body.get("stream"):
            return StreamingResponse(self._events(message, fault),
                                     media_type="text/event-stream", headers=headers)
        return JSONResponse(message, headers=headers)

    def _answer(self, body: dict[str, Any]) -> dict[str, Any]:
        if self._replies:
            content, stop = self._replies.popleft()
        else:
            last = _blocks(body["messages"][-1]["content"], "")
            said = " ".join(s for s in map(_said, last) if s)
            content, stop = [{"type": "text", "text": f"You said: {said}"}], "end_turn"
        return {"id": f"msg_{uuid.uuid4().hex[:24]}", "type": "message",
                "role": "assistant", "model": body["model"], "content": content,
                "stop_reason": stop, "stop_sequence": None,
                "usage": {"input_tokens": _tokens(body["messages"]),
                          "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                          "output_tokens": _tokens(content)}}

    @staticmethod
    async def _events(message: dict[str, Any], fault: AnthropicFault | None
                      ) -> AsyncIterator[str]:
        def event(kind: str, data: dict[str, Any]) -> str:
            return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n"

        usage = message["usage"]
        yield event("message_start", {"message": {
            **message, "content": [], "stop_reason": None,
            "usage": {**usage, "output_tokens": 1}}})
        yield event("ping", {})
        for index, block in enumerate(message["content"]):
            if block["type"] == "text":
                yield event("content_block_start", {"index": index, "content_block": {
                    "type": "text", "text": ""}})
                text = block["text"]
                for i in range(0, len(text), 6):
                    yield event("content_block_delta", {"index": index, "delta": {
                        "type": "text_delta", "text": text[i:i + 6]}})
                    if fault == "stream_error":
                        yield event("error", {"error": {"type": "overloaded_error",
                                                        "message": "Overloaded"}})
                    if fault in ("stream_error", "stream_cut"):
                        return
                    await asyncio.sleep(0)
            elif block["type"] == "thinking":  # its text, then its signature
                yield event("content_block_start", {"index": index, "content_block": {
                    "type": "thinking", "thinking": "", "signature": ""}})
                yield event("content_block_delta", {"index": index, "delta": {
                    "type": "thinking_delta", "thinking": block["thinking"]}})
                yield event("content_block_delta", {"index": index, "delta": {
                    "type": "signature_delta", "signature": block["signature"]}})
            else:  # tool_use: its input streamed as JSON pieces
                yield event("content_block_start", {"index": index, "content_block": {
                    **block, "input": {}}})
                raw = json.dumps(block["input"])
                for i in range(0, len(raw), 5):
                    yield event("content_block_delta", {"index": index, "delta": {
                        "type": "input_json_delta", "partial_json": raw[i:i + 5]}})
            yield event("content_block_stop", {"index": index})
        yield event("message_delta", {"delta": {"stop_reason": message["stop_reason"],
                                                "stop_sequence": None},
                                      "usage": {"output_tokens": usage["output_tokens"]}})
        yield event("message_stop", {})

