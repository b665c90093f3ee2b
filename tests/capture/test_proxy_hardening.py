"""memwb proxy (issue 33.5): keys echoed by the upstream are redacted from what is
recorded, an unusual but complete stream is relayed whole and recorded, and an answer
with a wrong-typed ``choices`` is recorded as a failed run rather than dropped."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from memory_core.capture import LoopbackServer, Recorder, proxy_app
from memory_core.capture.redact import redact_text
from memory_core.journal import load_run
from memory_core.storage.duckdb import DuckDBStorage

KEY = "sk-proj-Zx81hQ0aLm2vB9nK4tR7yW3eU6iO5pAs"
OTHER = "sk-ant-api03-Qw3rTy7UiOp1AsDfGh2JkL9ZxCvBnM"
USER = [{"role": "user", "content": "My locker code is 4417. What is my locker code?"}]


class Upstream:
    """An upstream on 127.0.0.1 that answers each chat request with the next canned
    (status, content type, body) and remembers the headers it was sent."""

    def __init__(self) -> None:
        self.replies: list[tuple[int, str, bytes]] = []
        self.seen: list[dict[str, str]] = []

        async def chat(request: Request) -> Response:
            self.seen.append(dict(request.headers))
            status, ctype, body = self.replies.pop(0)
            return Response(body, status_code=status, media_type=ctype)

        self.server = LoopbackServer(Starlette(routes=[Route(
            "/v1/chat/completions", chat, methods=["POST"])]), name="canned")


@pytest.fixture
def proxy(tmp_path: Path) -> Iterator[tuple[Upstream, str, Recorder, DuckDBStorage]]:
    up = Upstream()
    storage = DuckDBStorage(str(tmp_path / "h.duckdb"))
    recorder = Recorder(storage)
    with up.server, LoopbackServer(proxy_app(recorder, up.server.url + "/v1")) as server:
        yield up, server.url, recorder, storage
    recorder.close()
    storage.close()


def _post(url: str, *, stream: bool = False,
          headers: dict[str, str] | None = None) -> httpx2.Response:
    body = {"model": "m", "messages": USER, **({"stream": True} if stream else {})}
    return httpx2.post(url + "/v1/chat/completions", json=body, timeout=30,
                       headers={"Authorization": f"Bearer {KEY}", **(headers or {})})


def _everything(storage: DuckDBStorage) -> str:
    """All that the database holds about its runs, as one text."""
    out = []
    for run in storage.runs.list_runs():
        out.append(json.dumps(storage.runs.list(run.run_id), default=str))
        out.append(json.dumps(run, default=str))
        data = load_run(storage, run.run_id)
        out.append(repr(data))
    return "\n".join(out)


def test_redact_text_keeps_a_prefix_and_the_prose() -> None:
    text = (f"Incorrect API key provided: {KEY}. Also {OTHER}, sk-abcdefghijklmnop1234, "
            "header Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig and a secret-shaped s3cr3t!x")
    out = redact_text(text, ["s3cr3t!x"])
    for secret in (KEY, OTHER, "sk-abcdefghijklmnop1234", "eyJhbGciOiJIUzI1NiJ9", "s3cr3t!x"):
        assert secret not in out
    assert "sk-proj-…[redacted]" in out and "sk-ant-api03-…[redacted]" in out
    assert "Bearer [redacted]" in out and "[redacted key]" in out
    # ordinary words are left alone
    assert redact_text("a risk-assessment task-scheduler; Bearer bonds") == \
        "a risk-assessment task-scheduler; Bearer bonds"
    # the keys of other providers an OpenAI-compatible upstream may echo: Groq, Google,
    # xAI, Hugging Face
    others = ("gsk_8Fq2LmN0pQ4rS6tU8vW1xY3z", "AIzaSyD4kL0mN2pQ5rS7tU9vW1xY3zA5bC7dE9f",
              "xai-7Hj2Kl4Mn6Pq8Rs0Tu2Vw4Xy", "hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123")
    out = redact_text(" ".join(others))
    assert out == "gsk_…[redacted] AIza…[redacted] xai-…[redacted] hf_…[redacted]"
    assert redact_text("hf_hub and gsk_short") == "hf_hub and gsk_short"


def test_an_echoed_key_is_redacted_from_the_recorded_error(proxy) -> None:  # type: ignore[no-untyped-def]
    up, url, recorder, storage = proxy
    echo = json.dumps({"error": {"message": f"Incorrect API key provided: {KEY}. "
                                            f"Bearer {KEY}", "type": "invalid_request_error"}})
    up.replies.append((401, "application/json", echo.encode()))
    resp = _post(url)
    # the client gets the upstream's answer unchanged, key and all
    assert resp.status_code == 401 and resp.content == echo.encode()
    # the upstream got the Authorization header as sent
    assert up.seen[0]["authorization"] == f"Bearer {KEY}"
    recorder.drain()
    [run] = storage.runs.list_runs()
    assert run.status == "failed" and (run.error or "").startswith("HTTP 401")
    assert "[redacted" in (run.error or "")
    assert KEY not in _everything(storage) and KEY[8:] not in _everything(storage)


def test_keys_in_recorded_bodies_are_redacted_and_authorization_not_stored(proxy) -> None:  # type: ignore[no-untyped-def]
    up, url, recorder, storage = proxy
    odd = "opaque-token-9f8e7d6c5b4a"  # not key-shaped: redacted as the request's own value
    answer = {"id": "c1", "model": "m", "object": "chat.completion", "choices": [{
        "index": 0, "finish_reason": "stop", "message": {
            "role": "assistant", "content": f"Your key {OTHER} and {odd} are set."}}]}
    up.replies.append((200, "application/json", json.dumps(answer).encode()))
    resp = _post(url, headers={"Authorization": f"Bearer {odd}"})
    assert resp.json() == answer  # unchanged for the client
    recorder.drain()
    assert not recorder.failures
    stored = _everything(storage)
    assert OTHER not in stored and odd not in stored
    assert "sk-ant-api03-…[redacted]" in stored and "[redacted key]" in stored
    assert "authorization" not in stored.lower()


UNUSUAL = (
    b": keep-alive\r\n\r\n"
    b"event: ping\r\ndata: {\"type\": \"ping\"}\r\n\r\n"
    b"data:{\"id\":\"c9\",\"model\":\"m\",\"choices\":[{\"index\":0,"
    b"\"delta\":{\"role\":\"assistant\",\"content\":\"Your code \"}}]}\r\n\r\n"
    b"data: {\"id\":\"c9\",\"choices\":[]}\r\n\r\n"
    b"data: [1, 2, 3]\r\n\r\n"
    b"data: \"just a string\"\r\n\r\n"
    b"data: {\"id\":\"c9\",\"choices\":7}\r\n\r\n"
    b"data: {\"id\":\"c9\",\"choices\":[{\"index\":0,\"delta\":\"odd\"}]}\r\n\r\n"
    b"data: {\"id\":\"c9\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"is 4417.\","
    b"\"tool_calls\":[{\"index\":null}]},\"finish_reason\":\"stop\"}]}\r\n\r\n"
    b": keep-alive\r\n\r\n"
    b"data: {\"id\":\"c9\",\"choices\":[],\"usage\":{\"prompt_tokens\":5,"
    b"\"completion_tokens\":4,\"total_tokens\":9}}\r\n\r\n"
    b"data: [DONE]\r\n\r\n")


def test_an_unusual_but_complete_stream_is_relayed_whole_and_recorded(proxy) -> None:  # type: ignore[no-untyped-def]
    up, url, recorder, storage = proxy
    up.replies.append((200, "text/event-stream", UNUSUAL))
    resp = _post(url, stream=True)
    assert resp.status_code == 200 and resp.content == UNUSUAL
    recorder.drain()
    assert not recorder.failures
    [run] = storage.runs.list_runs()
    data = load_run(storage, run.run_id)
    assert run.status == "completed" and data.answer == "Your code is 4417."
    assert data.steps[0].response.usage.output_tokens == 4


def test_a_recording_failure_never_cuts_the_stream(proxy, monkeypatch,  # type: ignore[no-untyped-def]
                                                   caplog) -> None:
    from memory_core.capture import proxy as proxy_mod

    def boom(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError(f"recording broke ({KEY})")

    monkeypatch.setattr(proxy_mod._Exchanges, "streamed", boom)
    up, url, recorder, storage = proxy
    up.replies.append((200, "text/event-stream", UNUSUAL))
    with caplog.at_level(logging.WARNING, logger="memory_core.capture"):
        resp = _post(url, stream=True)
        assert resp.status_code == 200 and resp.content == UNUSUAL
        recorder.drain()
    lines = [r.getMessage() for r in caplog.records if "not recorded" in r.getMessage()]
    assert len(lines) == 1 and "recording broke" in lines[0] and KEY not in lines[0]


@pytest.mark.parametrize("choices", [{"0": {"message": {"role": "assistant"}}},
                                     "a string", None, [], ["not an object"]])
def test_a_wrong_typed_choices_is_relayed_and_recorded_as_not_understood(  # type: ignore[no-untyped-def]
        proxy, choices: Any) -> None:
    up, url, recorder, storage = proxy
    body = json.dumps({"id": "c1", "object": "chat.completion", "choices": choices}).encode()
    up.replies.append((200, "application/json", body))
    resp = _post(url)
    assert resp.status_code == 200 and resp.content == body
    recorder.drain()
    assert not recorder.failures
    [run] = storage.runs.list_runs()
    assert run.status == "failed"
    assert "shape was not understood" in (run.error or "")


def test_a_stream_the_upstream_breaks_off_is_a_failed_run_that_says_so(tmp_path: Path,
                                                                    caplog) -> None:  # type: ignore[no-untyped-def]
    """An upstream that drops the connection mid-stream: the client's stream ends there,
    the run is failed naming the cause (it read "the stream ended before its last
    chunk", as a client going away did), and the log has one line, no traceback."""
    import socket
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def serve() -> None:
        conn, _ = listener.accept()
        conn.recv(65536)
        chunk = b'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,' \
                b'"delta":{"content":"Hel"}}]}\n\n'
        conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                     b"transfer-encoding: chunked\r\n\r\n"
                     + f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
        conn.close()  # no last chunk: the stream is broken off
    threading.Thread(target=serve, daemon=True).start()
    storage = DuckDBStorage(str(tmp_path / "cut.duckdb"))
    recorder = Recorder(storage)
    base = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    try:
        with caplog.at_level(logging.WARNING, "memory_core.capture"), LoopbackServer(
                proxy_app(recorder, base)) as server:
            with httpx2.stream("POST", server.url + "/v1/chat/completions", json={
                    "model": "m", "messages": USER, "stream": True}, timeout=30) as resp:
                got = b""
                try:
                    for piece in resp.iter_bytes():
                        got += piece
                except httpx2.HTTPError:
                    pass  # the client's stream is broken off too
            assert b"Hel" in got
        recorder.drain()
        [run] = storage.runs.list_runs()
        assert run.status == "failed"
        assert (run.error or "").startswith("the upstream broke off the stream (")
        assert not any(r.exc_info for r in caplog.records)
    finally:
        recorder.close()
        storage.close()
        listener.close()
