"""A local OpenAI-compatible model server for the tests: a starlette app served by
uvicorn on 127.0.0.1 (an ephemeral port) in a background thread.

It behaves like a real provider where our client and analysis can tell the difference:

* ``POST /v1/chat/completions`` with tools and parallel tool calls, ``usage``, and SSE
  streaming (``stream: true``, with a final usage chunk when
  ``stream_options.include_usage`` is set); ``GET /v1/models``.
* Every request is validated like providers do (``validation.validate_request``:
  message order and tool-call pairing, unique tool-call ids, tool schemas, the model
  name, sampling ranges); a bad request gets an OpenAI-shaped 400 JSON error.
* Answers come from the prompt: the "brain" is the offline ``ReaderModel`` (with a
  hashing embedder), so a counterfactual that removes a fact changes the answer, and
  it calls offered tools the way the reader does. A test can script the next replies
  instead (``reply_next``), e.g. parallel tool calls.
* Sampling noise: temperature 0 is deterministic; above 0 (and when the request leaves
  temperature unset, like OpenAI's default of 1) the phrasing varies — seeded by
  ``seed`` and the prompt when a seed is given, random otherwise.
* Scripted faults (``fail_next`` or an ``X-Fake-Fault`` request header): 429 with
  ``Retry-After``, 500, a delay longer than the client's timeout, a garbage body.
* It records every request it received (``requests``, ``chat_bodies``).

Use it as a context manager (``with FakeProvider() as fp: fp.base_url``) or through the
``fake_provider`` pytest fixture. It stops when the block or test ends, and by itself
after ``max_lifetime`` seconds in any case, so no test leaves a server running.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import socket
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from memory_core.embedding.hashing import HashingEmbedder
from memory_core.models.base import Model, ModelResponse, ToolSpec
from memory_core.tokens import estimate_tokens
from memory_core.types import Message, Part, TextPart, ToolCallPart, ToolResultPart
from tests.fake_provider.validation import InvalidRequest, validate_request

FaultKind = Literal["rate_limit", "server_error", "delay", "garbage"]
FAULT_HEADER = "X-Fake-Fault"
# What a temperature > 0 may add around the same answer: the facts stay, the words move.
OPENERS = ("", "Sure. ", "Let me check. ", "Here is what I have: ", "OK — ")
CLOSERS = ("", " Anything else?", " Hope that helps.", " Let me know if you need more.")


@dataclass(frozen=True)
class Fault:
    """One scripted failure: ``rate_limit`` (429 with Retry-After = ``seconds``),
    ``server_error`` (500), ``delay`` (answer only after ``seconds``), ``garbage``
    (200 with a body that is not JSON)."""

    kind: FaultKind
    seconds: float = 0.05


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: Any


def serve_in_thread(app: Any, name: str) -> tuple[uvicorn.Server, threading.Thread, int]:
    """``app`` served by uvicorn on 127.0.0.1 (an ephemeral port) in a daemon thread,
    once it has started: the server, its thread and its port."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False,
                            timeout_graceful_shutdown=1)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]},
                              name=f"{name}-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            server.should_exit = True
            thread.join(timeout=10)
            raise RuntimeError(f"the {name} did not start")
        time.sleep(0.01)
    return server, thread, port


def error_body(message: str, *, kind: str = "invalid_request_error",
               param: str | None = None, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def _from_openai(raw: list[dict[str, Any]]) -> list[Message]:
    """The (already validated) request messages as ours, for the brain."""
    names: dict[str, str] = {}
    out: list[Message] = []
    for m in raw:
        content = m.get("content")
        text = content if isinstance(content, str) else "\n".join(
            p.get("text", "") for p in content or [] if p.get("type") == "text")
        if m["role"] == "tool":
            try:
                result: Any = json.loads(text)
            except ValueError:
                result = text
            call_id = m["tool_call_id"]
            out.append(Message(role="tool", content=[ToolResultPart(
                call_id=call_id, name=names.get(call_id, ""), result=result)]))
            continue
        calls = m.get("tool_calls") or []
        if not calls:
            role = "system" if m["role"] == "developer" else m["role"]
            out.append(Message(role=role, content=text or ""))
            continue
        parts: list[Part] = [TextPart(text=text)] if text else []
        for c in calls:
            names[c["id"]] = c["function"]["name"]
            try:
                args = json.loads(c["function"]["arguments"] or "{}")
            except ValueError:
                args = {"_unparsed": c["function"]["arguments"]}
            parts.append(ToolCallPart(id=c["id"], name=c["function"]["name"], args=args))
        out.append(Message(role="assistant", content=parts))
    return out


def _specs(body: dict[str, Any]) -> list[ToolSpec]:
    return [ToolSpec(t["function"]["name"], t["function"].get("description", ""),
                     t["function"].get("parameters") or {"type": "object", "properties": {}})
            for t in body.get("tools") or []]


def _digest(body: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(body.get("messages"), sort_keys=True).encode()
                          ).hexdigest()


@dataclass
class FakeProvider:
    """The fake provider; see the module docstring. ``models`` lists the model names
    ``/v1/models`` reports; with ``strict_models`` any other name gets a 404 like an
    unknown model does at OpenAI. ``api_key`` makes it require that bearer token."""

    brain: Model | None = None
    models: Sequence[str] = ("fake-model",)
    strict_models: bool = False
    api_key: str | None = None
    max_lifetime: float = 120.0
    requests: list[Received] = field(default_factory=list)
    _faults: deque[Fault | None] = field(default_factory=deque)
    _replies: deque[ModelResponse] = field(default_factory=deque)
    _server: uvicorn.Server | None = None
    _thread: threading.Thread | None = None
    _timer: threading.Timer | None = None
    _stopping: bool = False
    port: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        if self.brain is None:
            from memory_core.models.reader import ReaderModel

            self.brain = ReaderModel(embed=HashingEmbedder(64))

    # -- what tests use -------------------------------------------------------------
    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def chat_bodies(self) -> list[dict[str, Any]]:
        return [r.body for r in self.requests if r.path.endswith("/chat/completions")]

    def fail_next(self, *faults: Fault, after: int = 0) -> None:
        """Answer the next requests with these faults, in order, once ``after`` more
        chat requests have been answered normally."""
        with self._lock:
            self._faults.extend([None] * after)
            self._faults.extend(faults)

    def reply_next(self, *responses: ModelResponse) -> None:
        """Answer the next valid chat requests with these responses instead of the brain."""
        with self._lock:
            self._replies.extend(responses)

    # -- lifecycle ------------------------------------------------------------------
    def __enter__(self) -> FakeProvider:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        app = Starlette(routes=[
            Route("/v1/chat/completions", self._chat, methods=["POST"]),
            Route("/v1/models", self._models, methods=["GET"])])
        self._server, self._thread, self.port = serve_in_thread(app, "fake-provider")
        self._timer = threading.Timer(self.max_lifetime, self.stop)
        self._timer.daemon = True
        self._timer.start()

    def stop(self) -> None:
        self._stopping = True
        if self._timer is not None and self._timer is not threading.current_thread():
            self._timer.cancel()
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=10)

    # -- endpoints ------------------------------------------------------------------
    async def _models(self, request: Request) -> Response:
        self.requests.append(Received("GET", request.url.path, request.url.query,
                                     dict(request.headers), None))
        return JSONResponse({"object": "list", "data": [
            {"id": m, "object": "model", "created": 0, "owned_by": "fake-provider"}
            for m in self.models]})

    async def _chat(self, request: Request) -> Response:
        raw = await request.body()
        try:
            body: Any = json.loads(raw)
        except (ValueError, RecursionError):  # (nested deeper than Python parses: a 400)
            body = raw.decode("utf-8", errors="replace")
        self.requests.append(Received("POST", request.url.path, request.url.query,
                                      dict(request.headers), body))
        if self.api_key is not None and \
                request.headers.get("authorization") != f"Bearer {self.api_key}":
            return JSONResponse(error_body("Incorrect API key provided.",
                                           code="invalid_api_key"), status_code=401)
        fault = self._next_fault(request)
        if fault is not None and fault.kind != "delay":
            return self._fault_response(fault)
        try:
            validate_request(body)
        except InvalidRequest as e:
            return JSONResponse(error_body(str(e), param=e.param), status_code=400)
        if self.strict_models and body["model"] not in self.models:
            return JSONResponse(error_body(
                f"The model `{body['model']}` does not exist or you do not have access to it.",
                code="model_not_found"), status_code=404)
        # answered before any delay, so a late answer never takes a scripted reply
        # meant for a later request
        completion = self.answer(body)
        if fault is not None:
            await self._sleep(fault.seconds)
        if body.get("stream"):
            usage = bool((body.get("stream_options") or {}).get("include_usage"))
            return StreamingResponse(self._stream(completion, usage),
                                     media_type="text/event-stream")
        return JSONResponse(completion)

    def _next_fault(self, request: Request) -> Fault | None:
        named = request.headers.get(FAULT_HEADER)
        if named:
            kind, _, seconds = named.partition(":")
            return Fault(kind, float(seconds or 0.05))  # type: ignore[arg-type]
        with self._lock:
            return self._faults.popleft() if self._faults else None

    @staticmethod
    def _fault_response(fault: Fault) -> Response:
        if fault.kind == "rate_limit":
            return JSONResponse(
                error_body("Rate limit reached for requests. Please try again later.",
                           kind="requests", code="rate_limit_exceeded"), status_code=429,
                headers={"Retry-After": str(max(1, round(fault.seconds))),
                         "retry-after-ms": str(int(fault.seconds * 1000))})
        if fault.kind == "server_error":
            return JSONResponse(error_body("The server had an error while processing your "
                                           "request.", kind="server_error"), status_code=500)
        return Response("<html>502 Bad Gateway</html>", status_code=200,
                        media_type="application/json")

    async def _sleep(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end and not self._stopping:
            await asyncio.sleep(0.02)

    # -- answering ------------------------------------------------------------------
    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        """The chat.completion object for a validated request."""
        with self._lock:
            scripted = self._replies.popleft() if self._replies else None
        digest = _digest(body)
        if scripted is not None:
            resp = scripted
        else:
            assert self.brain is not None
            resp = self.brain.complete(_from_openai(body["messages"]), _specs(body))
        text = self._sample(resp.text, body, digest) if resp.text else resp.text
        finish = "tool_calls" if resp.tool_calls else "stop"
        limit = body.get("max_completion_tokens") or body.get("max_tokens")
        if text and limit is not None and len(text.split()) > limit:
            text, finish = " ".join(text.split()[:limit]), "length"
        calls = [{"id": c.id or f"call_{digest[:8]}{i}", "type": "function",
                  "function": {"name": c.name, "arguments": json.dumps(c.args)}}
                 for i, c in enumerate(resp.tool_calls)]
        message: dict[str, Any] = {"role": "assistant", "content": text or None,
                                   "refusal": None}
        if calls:
            message["tool_calls"] = calls
        prompt_tokens = estimate_tokens(json.dumps(body["messages"]))
        completion_tokens = estimate_tokens((text or "") + json.dumps(calls) if calls
                                            else text or "")
        return {"id": f"chatcmpl-{digest[:20]}", "object": "chat.completion",
                "created": int(time.time()), "model": body["model"],
                "system_fingerprint": "fp_fake",
                "choices": [{"index": 0, "message": message, "logprobs": None,
                             "finish_reason": finish}],
                "usage": {"prompt_tokens": prompt_tokens,
                          "completion_tokens": completion_tokens,
                          "total_tokens": prompt_tokens + completion_tokens}}

    @staticmethod
    def _sample(text: str, body: dict[str, Any], digest: str) -> str:
        temperature = body.get("temperature")
        temperature = 1.0 if temperature is None else float(temperature)
        if temperature <= 0:
            return text
        seed = body.get("seed")
        rng = random.Random(f"{seed}:{digest}") if seed is not None else random.Random()
        if rng.random() > min(1.0, temperature):
            return text
        return rng.choice(OPENERS) + text + rng.choice(CLOSERS)

    @staticmethod
    async def _stream(completion: dict[str, Any], include_usage: bool) -> AsyncIterator[str]:
        """The completion as chat.completion.chunk events: a role delta, the content in
        pieces, each tool call's id/name then its arguments in fragments, the finish
        reason, the usage chunk when asked for, then ``[DONE]``."""
        head = {k: completion[k] for k in ("id", "created", "model", "system_fingerprint")}

        def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
            return "data: " + json.dumps({
                **head, "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": delta, "logprobs": None,
                             "finish_reason": finish}]}) + "\n\n"

        choice = completion["choices"][0]
        message = choice["message"]
        yield chunk({"role": "assistant", "content": ""})
        text = message.get("content") or ""
        for i in range(0, len(text), 7):
            yield chunk({"content": text[i:i + 7]})
            await asyncio.sleep(0)
        calls = message.get("tool_calls") or []
        for index, call in enumerate(calls):
            yield chunk({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                         "function": {"name": call["function"]["name"],
                                                      "arguments": ""}}]})
        # parallel calls' arguments arrive interleaved, as some servers send them
        pieces = [[c["function"]["arguments"][i:i + 5]
                   for i in range(0, len(c["function"]["arguments"]), 5)] for c in calls]
        for step in range(max((len(p) for p in pieces), default=0)):
            for index, parts in enumerate(pieces):
                if step < len(parts):
                    yield chunk({"tool_calls": [{"index": index,
                                                 "function": {"arguments": parts[step]}}]})
        yield chunk({}, choice["finish_reason"])
        if include_usage:
            yield "data: " + json.dumps({**head, "object": "chat.completion.chunk",
                                         "choices": [], "usage": completion["usage"]}) + "\n\n"
        yield "data: [DONE]\n\n"


@pytest.fixture
def fake_provider() -> Iterator[FakeProvider]:
    """A running fake provider for one test; stopped when the test ends."""
    with FakeProvider() as provider:
        yield provider
