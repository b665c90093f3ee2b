"""The OpenAI-compatible recording proxy: ``POST /v1/chat/completions`` is forwarded to
the upstream as it is (headers included; nothing of them is logged or stored), the
upstream's answer goes back as it is — a streamed one chunk by chunk as it arrives —
and each finished exchange is recorded as an imported run (OpenAI chat-completions
request/response). ``GET /v1/models`` passes through unrecorded."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from memory_core.capture.redact import header_secrets, redact, redact_text
from memory_core.capture.server import Recorder, validate_upstream
from memory_core.limits import TooLarge, limit, read_body, too_large
from memory_core.models.openai_stream import ChatStream

log = logging.getLogger("memory_core.capture")
# never forwarded: they describe one hop, not the request (and we want the upstream's
# body uncompressed so it can be recorded)
HOP_HEADERS = frozenset({"host", "content-length", "connection", "keep-alive",
                         "transfer-encoding", "te", "trailer", "upgrade",
                         "proxy-authorization", "proxy-connection", "accept-encoding"})
BACK_DROP = frozenset({"content-length", "content-encoding", "transfer-encoding",
                       "connection", "keep-alive"})
UPSTREAM_TIMEOUT = httpx2.Timeout(600.0, connect=10.0)


def _forward_headers(headers: Any) -> dict[str, str]:
    return {k: v for k, v in headers.items() if k.lower() not in HOP_HEADERS}


def _back_headers(headers: Any) -> dict[str, str]:
    return {k: v for k, v in headers.items() if k.lower() not in BACK_DROP}


def reassemble_sse(raw: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """A streamed chat completion (``text/event-stream`` chunks) as the one response
    object it adds up to, and why it is incomplete (None when it ended with a
    ``finish_reason`` or ``[DONE]``)."""
    response, problem, _ = _reassemble(raw)
    return response, problem


def _reassemble(raw: bytes) -> tuple[dict[str, Any] | None, str | None, list[str]]:
    """``reassemble_sse`` plus notes on the chunks it could not use (a chunk that is
    not a JSON object, a wrong-typed field): those are skipped, never fatal. The
    chunks are added up by ``ChatStream``, the importer's and the model client's too."""
    chat = ChatStream()
    notes: list[str] = []
    done = False
    for line in raw.decode("utf-8", errors="replace").splitlines():
        if not line.startswith("data:"):
            continue  # comments (": keep-alive"), event names, ids, retry hints
        data = line[5:].strip()
        if data == "[DONE]":
            done = True
            continue
        if not data:
            continue
        try:
            chunk = json.loads(data)
        except ValueError:
            notes.append(f"stream chunk is not JSON, skipped: {data[:80]!r}")
            continue
        if not isinstance(chunk, dict):
            notes.append(f"stream chunk is not a JSON object, skipped: {data[:80]!r}")
            continue
        if "error" in chunk:
            return None, (f"the stream carried an error: "
                          f"{json.dumps(chunk['error'])[:300]}"), notes
        chat.add(chunk)
    notes += chat.notes()
    if not chat.head and not chat.text and not chat.calls:
        return None, "the stream held no chunks" + (
            f" it could read ({notes[0]})" if notes else ""), notes
    response = {**chat.completion(), "object": "chat.completion"}
    ended = done or chat.finish is not None
    return response, None if ended else "the stream ended before its last chunk", notes


def _choices_problem(doc: Any) -> str | None:
    """Why a whole answer's shape is not a chat completion the importer can read."""
    if not isinstance(doc, dict):
        return f"the answer is a JSON {type(doc).__name__}, not an object"
    choices = doc.get("choices")
    if not isinstance(choices, list):
        return ("the answer has no choices" if choices is None else
                f"the answer's choices is a {type(choices).__name__}, not a list")
    if not choices:
        return "the answer has no choices"
    if not isinstance(choices[0], dict) or not isinstance(choices[0].get("message"), dict):
        return "the answer's first choice has no message object"
    return None


class _Exchanges:
    """Turns a finished exchange into the one JSONL record the importer reads, with
    key-shaped strings (and the request's own credentials) redacted from all of it."""

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder

    def record(self, request: Any, response: dict[str, Any] | None,
               error: str | None, *, secrets: list[str] | None = None,
               notes: list[str] | None = None) -> None:
        cid = uuid.uuid4().hex[:16]
        name = f"proxy:{cid}"
        if not isinstance(request, dict) or not isinstance(request.get("messages"), list):
            self.recorder.refused(name, "the request has no 'messages' list")
            return
        # the id makes each exchange its own record: the same question asked twice is
        # two runs, not an "already imported" no-op
        meta: dict[str, Any] = {"memwb_capture_id": cid}
        if notes:
            meta["memwb_capture_notes"] = notes
            log.info("%s: %s", name, "; ".join(redact_text(n, secrets or ()) for n in notes))
        line: dict[str, Any] = {"request": request, "metadata": meta}
        if response is not None:
            line["response"] = response
        else:
            line["error"] = error or "no response"
        line = redact(line, secrets or ())
        self.recorder.submit(json.dumps(line, ensure_ascii=False), name=name, format="openai")

    def finished(self, request: Any, status: int, body: bytes, *,
                 secrets: list[str] | None = None) -> None:
        """A whole (not streamed) answer."""
        if status >= 400:
            self.record(request, None, f"HTTP {status}: {_error_text(body)}",
                        secrets=secrets)
            return
        try:
            doc = json.loads(body)
        except ValueError:
            self.record(request, None, f"HTTP {status}: the upstream's body is not JSON",
                        secrets=secrets)
            return
        problem = _choices_problem(doc)
        if problem is not None:
            excerpt = body.decode("utf-8", errors="replace")[:300]
            self.record(request, None, f"HTTP {status}: the answer's shape was not "
                        f"understood ({problem}): {excerpt}", secrets=secrets)
            return
        self.record(request, doc, None, secrets=secrets)

    def streamed(self, request: Any, raw: bytes, *,
                 secrets: list[str] | None = None) -> None:
        response, problem, notes = _reassemble(raw)
        if problem is not None:
            self.record(request, None, problem, secrets=secrets, notes=notes)
        else:
            self.record(request, response, None, secrets=secrets, notes=notes)


def _error_text(body: bytes) -> str:
    text = body.decode("utf-8", errors="replace")
    try:
        doc = json.loads(text)
        msg = doc.get("error", {}).get("message") if isinstance(doc, dict) else None
        if isinstance(msg, str):
            return msg[:500]
    except (ValueError, AttributeError):
        pass
    return text[:500]


async def _bounded_answer(resp: httpx2.Response) -> bytes:
    """An upstream's whole answer, decoded, refused (TooLarge) once it passes
    ``MEMWB_MAX_BODY`` bytes; the rest is not read."""
    cap = limit("MEMWB_MAX_BODY")
    out: list[bytes] = []
    size = 0
    async for piece in resp.aiter_bytes():
        size += len(piece)
        if size > cap:
            raise too_large("the upstream's answer", "MEMWB_MAX_BODY")
        out.append(piece)
    return b"".join(out)


def proxy_app(recorder: Recorder, upstream: str) -> Starlette:
    """The proxy as an ASGI app forwarding to ``upstream`` (a base URL such as
    ``https://api.openai.com/v1``)."""
    base = validate_upstream(upstream)
    exchanges = _Exchanges(recorder)
    state: dict[str, httpx2.AsyncClient] = {}

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with httpx2.AsyncClient(timeout=UPSTREAM_TIMEOUT) as client:
            state["client"] = client
            yield

    async def unreachable(e: Exception, request: Any, secrets: list[str]) -> Response:
        why = f"upstream {base} unreachable: {type(e).__name__}: {e}"
        exchanges.record(request, None, why, secrets=secrets)
        return JSONResponse({"error": {"message": f"memwb proxy: {why}",
                                       "type": "upstream_unreachable"}}, status_code=502)

    async def chat(request: Request) -> Response:
        recorder.begin()
        streaming = False
        try:
            response = await exchange(request)
            streaming = isinstance(response, StreamingResponse)
            return response
        finally:
            if not streaming:  # a stream's relay ends the exchange when the stream does
                recorder.end()

    async def exchange(request: Request) -> Response:
        try:
            raw = await read_body(request)
        except TooLarge as e:  # past MEMWB_MAX_BODY: refused, the rest left unread
            return JSONResponse({"error": {"message": f"memwb proxy: {e}",
                                           "type": "request_too_large"}}, status_code=413)
        try:
            body: Any = json.loads(raw)
        except (ValueError, RecursionError):
            body = None  # forwarded anyway: the upstream answers it; not recorded
        client = state["client"]
        secrets = header_secrets(request.headers)
        up = client.build_request("POST", f"{base}/chat/completions", content=raw,
                                  headers=_forward_headers(request.headers),
                                  params=request.query_params)
        try:
            resp = await client.send(up, stream=True)
        except httpx2.HTTPError as e:
            return await unreachable(e, body, secrets)
        streamed = "text/event-stream" in resp.headers.get("content-type", "")
        if not streamed or resp.status_code >= 400:
            try:  # decoded as it arrives: a small gzip answer may expand to gigabytes
                data = await _bounded_answer(resp)
            except TooLarge as e:
                why = f"upstream {base}: {e}"
                exchanges.record(body, None, why, secrets=secrets)
                return JSONResponse({"error": {"message": f"memwb proxy: {why}",
                                               "type": "upstream_too_large"}},
                                    status_code=502)
            finally:
                await resp.aclose()
            try:
                exchanges.finished(body, resp.status_code, data, secrets=secrets)
            except Exception as e:  # noqa: BLE001 - the client gets its answer anyway
                log.warning("not recorded: %s", redact_text(f"{type(e).__name__}: {e}",
                                                             secrets))
            return Response(data, status_code=resp.status_code,
                            headers=_back_headers(resp.headers))

        async def relay() -> AsyncIterator[bytes]:
            seen: list[bytes] = []
            held, cap = 0, limit("MEMWB_MAX_BODY")
            try:
                async for piece in resp.aiter_bytes():
                    held += len(piece)
                    if held <= cap:  # past the bound relayed, not held for the record
                        seen.append(piece)
                    yield piece
            finally:
                try:
                    await resp.aclose()
                    if held > cap:
                        exchanges.record(body, None, "the streamed answer is larger "
                                         f"than {cap} bytes; raise MEMWB_MAX_BODY to "
                                         "record it", secrets=secrets)
                    else:
                        exchanges.streamed(body, b"".join(seen), secrets=secrets)
                except Exception as e:  # noqa: BLE001 - recording must not cut the stream
                    log.warning("a streamed exchange not recorded: %s",
                                redact_text(f"{type(e).__name__}: {e}", secrets))
                finally:
                    recorder.end()

        return StreamingResponse(relay(), status_code=resp.status_code,
                                 headers=_back_headers(resp.headers))

    async def models(request: Request) -> Response:
        try:
            resp = await state["client"].get(f"{base}/models",
                                             headers=_forward_headers(request.headers))
        except httpx2.HTTPError as e:
            return JSONResponse({"error": {"message": f"memwb proxy: upstream {base} "
                                           f"unreachable: {type(e).__name__}: {e}",
                                           "type": "upstream_unreachable"}}, status_code=502)
        return Response(resp.content, status_code=resp.status_code,
                        headers=_back_headers(resp.headers))

    return Starlette(lifespan=lifespan, routes=[
        Route("/v1/chat/completions", chat, methods=["POST"]),
        Route("/v1/models", models, methods=["GET"])])
