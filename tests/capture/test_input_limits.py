"""Bounds on what the collector and the proxy read (issue 33.6): a body past
MEMWB_MAX_BODY is a 413 with the rest left unread, a gzip body expanding past
MEMWB_MAX_DECOMPRESSED a 413, and a malformed OTLP export a 400 naming why in one line,
never a 500."""

from __future__ import annotations

import gzip
import select
import socket
from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from memory_core.capture import LoopbackServer, Recorder, collector_app, proxy_app
from memory_core.embedding.hashing import HashingEmbedder
from memory_core.storage.inmemory import InMemoryStorage

MiB = 1 << 20
CHUNK = 64 * 1024
JSON = {"content-type": "application/json"}


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    rec = Recorder(InMemoryStorage(), embed=HashingEmbedder(16))
    yield rec
    rec.close()


def _send_until_answered(port: int, path: str, total: int) -> tuple[int, bytes]:
    """POST ``total`` bytes in 64 KiB chunks (chunked: no length to go by) to a real
    uvicorn, stopping as soon as an answer arrives: (bytes sent, the answer)."""
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, CHUNK)
        sock.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                     "\r\nTransfer-Encoding: chunked\r\n\r\n".encode())
        chunk = f"{CHUNK:x}\r\n".encode() + b" " * CHUNK + b"\r\n"
        while sent < total and not select.select([sock], [], [], 0)[0]:
            try:
                sock.sendall(chunk)
            except OSError:  # the server answered and closed
                break
            sent += CHUNK
        answer = b""
        while b"\r\n\r\n" not in answer:
            part = sock.recv(65536)
            if not part:
                break
            answer += part
    return sent, answer


@pytest.mark.parametrize("which", ["collector", "proxy"])
def test_a_body_past_the_bound_is_a_413_with_the_rest_unread(
        recorder: Recorder, monkeypatch: pytest.MonkeyPatch, which: str) -> None:
    monkeypatch.setenv("MEMWB_MAX_BODY", str(MiB))
    # the proxy refuses before it asks its upstream: none listens there
    app, path = ((collector_app(recorder, settle=0.1), "/v1/traces") if which == "collector"
                 else (proxy_app(recorder, "http://127.0.0.1:9/v1"), "/v1/chat/completions"))
    with LoopbackServer(app, name=which) as server:
        sent, answer = _send_until_answered(server.port, path, 256 * MiB)
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:200]
    # the server stopped reading at the bound: what was sent beyond it is what the
    # sockets' buffers held, never the whole body
    assert sent < 64 * MiB


def test_the_refusals_name_the_bound(recorder: Recorder,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMWB_MAX_BODY", str(MiB))
    big = b" " * (2 * MiB)
    with TestClient(collector_app(recorder, settle=0.1)) as client:
        r = client.post("/v1/traces", content=big, headers=JSON)
    assert r.status_code == 413
    assert r.json()["message"] == ("the request body is larger than 1048576 bytes; "
                                   "raise MEMWB_MAX_BODY to allow more")
    with TestClient(proxy_app(recorder, "http://127.0.0.1:9/v1")) as client:
        r = client.post("/v1/chat/completions", content=big, headers=JSON)
    assert r.status_code == 413
    assert r.json()["error"] == {
        "message": "memwb proxy: the request body is larger than 1048576 bytes; raise "
                   "MEMWB_MAX_BODY to allow more", "type": "request_too_large"}
    recorder.drain()
    # each refusal is counted among what was not recorded, and logged (one line)
    said = "the request body is larger than 1048576 bytes; raise MEMWB_MAX_BODY to allow more"
    assert [f.split(": ", 1)[1] for f in recorder.failures] == [
        f"not read: {said}", f"not forwarded: {said}"]


def test_the_collector_refuses_a_gzip_bomb(recorder: Recorder,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMWB_MAX_DECOMPRESSED", str(MiB))
    bomb = gzip.compress(b" " * (64 * MiB))  # ~64 KiB on the wire
    with TestClient(collector_app(recorder, settle=0.1)) as client:
        r = client.post("/v1/traces", content=bomb,
                        headers={**JSON, "content-encoding": "gzip"})
        assert r.status_code == 413
        assert r.json()["message"] == ("the gzip data decompressed is larger than 1048576 "
                                       "bytes; raise MEMWB_MAX_DECOMPRESSED to allow more")
        # under the bound a compressed export still reads
        r = client.post("/v1/traces", content=gzip.compress(b'{"resourceSpans": []}'),
                        headers={**JSON, "content-encoding": "gzip"})
        assert r.status_code == 200


@pytest.mark.parametrize(("body", "why"), [
    (b"[" * 100_000 + b"]" * 100_000, "nested more than 100 levels deep"),
    (b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"attributes": [{"key": "k", '
     b'"value": {"arrayValue": ' + b"[" * 200 + b"]" * 200 + b'}}]}]}]}]}',
     "nested more than 100 levels deep"),
    (b'{"resourceSpans": 1e999, "gen_ai.system": "openai"}', "the number 1e999 is out of"),
    (b'{"resourceSpans": NaN, "gen_ai.system": "openai"}', "NaN is not a number"),
    (b'{"resourceSpans": "gen_ai.system"}', "'resourceSpans' must be a list, got str"),
])
def test_a_malformed_export_is_a_400_naming_why(recorder: Recorder, body: bytes,
                                                why: str) -> None:
    with TestClient(collector_app(recorder, settle=0.1),
                    raise_server_exceptions=False) as client:
        r = client.post("/v1/traces", content=body, headers=JSON)
    assert r.status_code == 400, r.text
    message = r.json()["message"]
    assert why in message and "\n" not in message and len(message) < 400


@pytest.mark.parametrize("which", ["collector", "proxy"])
def test_a_half_sent_request_is_disconnected(recorder: Recorder,
                                             monkeypatch: pytest.MonkeyPatch,
                                             which: str) -> None:
    monkeypatch.setenv("MEMWB_READ_TIMEOUT", "1")
    app = (collector_app(recorder, settle=0.1) if which == "collector"
           else proxy_app(recorder, "http://127.0.0.1:9/v1"))
    path = "/v1/traces" if which == "collector" else "/v1/chat/completions"
    starts = [b"",  # connected, nothing sent
              f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Ty".encode(),  # half a header
              f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              "Content-Length: 100\r\n\r\n{\"resourceSpans\"".encode()]  # half a body
    with LoopbackServer(app, name=which) as server:
        socks = [socket.create_connection(("127.0.0.1", server.port), timeout=60)
                 for _ in starts]
        try:
            for sock, start in zip(socks, starts, strict=True):
                sock.sendall(start)
            for sock in socks:
                # the server closes each (an empty read); without a deadline this read
                # would wait out the socket's 60 s timeout and fail
                data = sock.recv(65536)
                assert data == b"" or data.startswith(b"HTTP/1.1 "), data[:200]
        finally:
            for sock in socks:
                sock.close()
