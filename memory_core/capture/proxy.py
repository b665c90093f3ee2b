"""The recording proxy: ``POST /v1/chat/completions`` (OpenAI-compatible) and
``POST /v1/messages`` (Anthropic's Messages API: Claude Code, the Anthropic SDKs) are
forwarded to the upstream as they are (headers included; nothing of them is logged or
stored), the upstream's answer goes back as it is — a streamed one chunk by chunk as it
arrives — and each finished exchange is recorded as an imported run (the request and
the response it adds up to, as ``memwb import`` reads them). ``GET /v1/models`` and
``POST /v1/messages/count_tokens`` pass through unrecorded."""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import httpx2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from memory_core.capture.redact import header_secrets, redact, redact_text
from memory_core.capture.server import Recorder, validate_upstream
from memory_core.errors import ImportFormatError
from memory_core.importers.anthropic import reassemble_anthropic_stream
from memory_core.importers.openai_shapes import stream_events
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
# the APIs recorded: the path each is served at (and forwarded to, after the upstream's
# base URL)
CHAT, MESSAGES = "/chat/completions", "/messages"


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


def reassemble_messages_sse(raw: bytes) -> tuple[dict[str, Any] | None, str | None,
                                                 list[str]]:
    """A streamed Messages API answer as the message it adds up to (or the error body
    its ``error`` event carried), why it is incomplete (None when it reached
    ``message_stop`` or an error), and notes on what was not read — reassembled by the
    importer's own reader (``importers/anthropic.py``)."""
    text = raw.decode("utf-8", errors="replace")
    notes: list[str] = []
    try:
        events = stream_events(text, "the stream")
        message = reassemble_anthropic_stream(events, "the stream", notes)
    except ImportFormatError as e:
        return None, str(e), notes
    notes = [n for n in notes if "reassembled from" not in n]  # (how, not what)
    if message.get("type") == "error":
        error = message.get("error")
        said = (f"{error.get('type')}: {error.get('message')}" if isinstance(error, dict)
                else json.dumps(error, ensure_ascii=False))
        return None, f"the stream carried an error: {said}"[:500], notes
    if not any(e.get("type") == "message_stop" for e in events):
        return None, "the stream ended before message_stop", notes
    return message, None, notes


def _message_problem(doc: Any) -> str | None:
    """Why a whole answer is not a Messages API message (or error body)."""
    if not isinstance(doc, dict):
        return f"the answer is a JSON {type(doc).__name__}, not an object"
    if doc.get("type") == "error":
        return None
    if doc.get("type") != "message" or not isinstance(doc.get("content"), list):
        return "the answer is not a message with a list of content blocks"
    return None


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
    key-shaped strings (and the request's own credentials) redacted from all of it.
    ``api``: the path the exchange was served at (``CHAT`` or ``MESSAGES``)."""

    def __init__(self, recorder: Recorder, base: str, api: str) -> None:
        self.recorder, self.base, self.api = recorder, base, api

    def record(self, request: Any, response: dict[str, Any] | None,
               error: str | None, *, began: datetime, secrets: list[str] | None = None,
               notes: list[str] | None = None) -> None:
        """The exchange that began at ``began`` and ends now, as a record: the proxy's
        own times are the run's (the Messages API's answer holds none; a chat
        completion's ``created`` counts whole seconds on the upstream's clock)."""
        cid = uuid.uuid4().hex[:16]
        name = f"proxy:{cid}"
        if request is None:
            self.recorder.refused(name, "the request body is not JSON")
            return
        if not isinstance(request, dict) or not isinstance(request.get("messages"), list):
            self.recorder.refused(name, "the request has no 'messages' list")
            return
        # the id makes each exchange its own record: the same question asked twice is
        # two runs, not an "already imported" no-op
        meta: dict[str, Any] = {"memwb_capture_id": cid}
        if notes:
            meta["memwb_capture_notes"] = notes
            log.info("%s: %s", name, "; ".join(redact_text(n, secrets or ()) for n in notes))
        # the URL says which API (the bodies alone may not) and where it was sent
        line: dict[str, Any] = {"request": request, "metadata": meta,
                                "url": self.base + self.api,
                                "started_at": began.isoformat(),
                                "finished_at": datetime.now(UTC).isoformat()}
        if response is not None:
            line["response"] = response
        else:
            line["error"] = error or "no response"
        line = redact(line, secrets or ())
        self.recorder.submit(json.dumps(line, ensure_ascii=False), name=name, format="openai")

    def finished(self, request: Any, status: int, body: bytes, *, began: datetime,
                 secrets: list[str] | None = None) -> None:
        """A whole (not streamed) answer."""
        if status >= 400:
            self.record(request, None, f"HTTP {status}: {_error_text(body)}",
                        began=began, secrets=secrets)
            return
        try:
            doc = json.loads(body)
        except ValueError:
            self.record(request, None, f"HTTP {status}: the upstream's body is not JSON",
                        began=began, secrets=secrets)
            return
        problem = (_message_problem if self.api == MESSAGES else _choices_problem)(doc)
        if problem is not None:
            excerpt = body.decode("utf-8", errors="replace")[:300]
            self.record(request, None, f"HTTP {status}: the answer's shape was not "
                        f"understood ({problem}): {excerpt}", began=began, secrets=secrets)
            return
        self.record(request, doc, None, began=began, secrets=secrets)

    def streamed(self, request: Any, raw: bytes, *, began: datetime,
                 secrets: list[str] | None = None, cut: str | None = None) -> None:
        """A streamed answer; ``cut``: why the stream stopped early, when it did (it
        names the cause of an incomplete stream)."""
        response, problem, notes = (reassemble_messages_sse if self.api == MESSAGES
                                    else _reassemble)(raw)
        if problem is not None:
            ended_early = problem.startswith("the stream ended before")
            self.record(request, None, cut if cut and ended_early else problem,
                        began=began, secrets=secrets, notes=notes)
        else:
            self.record(request, response, None, began=began, secrets=secrets, notes=notes)


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


def _proxy_error(api: str, message: str, kind: str, status: int) -> JSONResponse:
    """The proxy's own error, in the shape of the API the client called (so its SDK
    reads the message)."""
    error = {"message": f"memwb proxy: {message}", "type": kind}
    return JSONResponse({"type": "error", "error": error} if api == MESSAGES
                        else {"error": error}, status_code=status)


def proxy_app(recorder: Recorder, upstream: str) -> Starlette:
    """The proxy as an ASGI app forwarding to ``upstream``: the base URL both APIs sit
    under, as far as its version (``https://api.openai.com/v1``,
    ``https://api.anthropic.com/v1``): ``/v1/<path>`` is forwarded to
    ``<upstream>/<path>``."""
    base = validate_upstream(upstream)
    state: dict[str, httpx2.AsyncClient] = {}

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with httpx2.AsyncClient(timeout=UPSTREAM_TIMEOUT) as client:
            state["client"] = client
            yield

    def recorded(api: str) -> Any:
        """The handler of one recorded API (``CHAT`` or ``MESSAGES``)."""
        exchanges = _Exchanges(recorder, base, api)

        async def handle(request: Request) -> Response:
            recorder.begin()
            streaming = False
            try:
                response = await exchange(request, api, exchanges)
                streaming = isinstance(response, StreamingResponse)
                return response
            finally:
                if not streaming:  # a stream's relay ends the exchange when it does
                    recorder.end()
        return handle

    async def exchange(request: Request, api: str, exchanges: _Exchanges) -> Response:
        began = datetime.now(UTC)
        try:
            raw = await read_body(request)
        except TooLarge as e:  # past MEMWB_MAX_BODY: refused, the rest left unread
            recorder.refused(f"proxy:{uuid.uuid4().hex[:16]}", f"not forwarded: {e}")
            return _proxy_error(api, str(e), "request_too_large", 413)
        try:
            body: Any = json.loads(raw)
        except (ValueError, RecursionError):
            body = None  # forwarded anyway: the upstream answers it; not recorded
        client = state["client"]
        secrets = header_secrets(request.headers)
        up = client.build_request("POST", base + api, content=raw,
                                  headers=_forward_headers(request.headers),
                                  params=request.query_params)
        try:
            resp = await client.send(up, stream=True)
        except httpx2.HTTPError as e:
            why = f"upstream {base} unreachable: {type(e).__name__}: {e}"
            exchanges.record(body, None, why, began=began, secrets=secrets)
            return _proxy_error(api, why, "upstream_unreachable", 502)
        streamed = "text/event-stream" in resp.headers.get("content-type", "")
        if not streamed or resp.status_code >= 400:
            try:  # decoded as it arrives: a small gzip answer may expand to gigabytes
                data = await _bounded_answer(resp)
            except TooLarge as e:
                why = f"upstream {base}: {e}"
                exchanges.record(body, None, why, began=began, secrets=secrets)
                return _proxy_error(api, why, "upstream_too_large", 502)
            finally:
                await resp.aclose()
            try:
                exchanges.finished(body, resp.status_code, data, began=began,
                                   secrets=secrets)
            except Exception as e:  # noqa: BLE001 - the client gets its answer anyway
                log.warning("not recorded: %s", redact_text(f"{type(e).__name__}: {e}",
                                                             secrets))
            return Response(data, status_code=resp.status_code,
                            headers=_back_headers(resp.headers))

        async def relay() -> AsyncIterator[bytes]:
            seen: list[bytes] = []
            held, cap = 0, limit("MEMWB_MAX_BODY")
            cut: str | None = None  # why the stream stopped early, if it did
            try:
                async for piece in resp.aiter_bytes():
                    held += len(piece)
                    if held <= cap:  # past the bound relayed, not held for the record
                        seen.append(piece)
                    yield piece
            except httpx2.HTTPError as e:  # the client's stream ends here too
                said = redact_text(str(e), secrets)
                cut = (f"the upstream broke off the stream ({type(e).__name__}"
                       + (f": {said})" if said else ")"))
                log.warning("%s", cut)
            except (asyncio.CancelledError, GeneratorExit):
                cut = "the client went away (or the proxy stopped) before the stream ended"
                raise
            finally:
                try:
                    await resp.aclose()
                    if held > cap:
                        exchanges.record(body, None, "the streamed answer is larger "
                                         f"than {cap} bytes; raise MEMWB_MAX_BODY to "
                                         "record it", began=began, secrets=secrets)
                    else:
                        exchanges.streamed(body, b"".join(seen), began=began,
                                           secrets=secrets, cut=cut)
                except Exception as e:  # noqa: BLE001 - recording must not cut the stream
                    log.warning("a streamed exchange not recorded: %s",
                                redact_text(f"{type(e).__name__}: {e}", secrets))
                finally:
                    recorder.end()

        return StreamingResponse(relay(), status_code=resp.status_code,
                                 headers=_back_headers(resp.headers))

    def passed(path: str, api: str) -> Any:
        """A handler forwarding ``<upstream><path>`` as it is, not recorded."""
        async def handle(request: Request) -> Response:
            try:
                raw = await read_body(request)
            except TooLarge as e:
                return _proxy_error(api, str(e), "request_too_large", 413)
            try:
                resp = await state["client"].request(
                    request.method, base + path, content=raw or None,
                    headers=_forward_headers(request.headers), params=request.query_params)
            except httpx2.HTTPError as e:
                return _proxy_error(api, f"upstream {base} unreachable: "
                                    f"{type(e).__name__}: {e}", "upstream_unreachable", 502)
            return Response(resp.content, status_code=resp.status_code,
                            headers=_back_headers(resp.headers))
        return handle

    return Starlette(lifespan=lifespan, routes=[
        Route("/v1" + CHAT, recorded(CHAT), methods=["POST"]),
        Route("/v1" + MESSAGES, recorded(MESSAGES), methods=["POST"]),
        Route("/v1/messages/count_tokens", passed("/messages/count_tokens", MESSAGES),
              methods=["POST"]),
        Route("/v1/models", passed("/models", CHAT), methods=["GET"])])
