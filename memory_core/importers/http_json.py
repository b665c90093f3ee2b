"""HTTP-interaction JSON files: one JSON object per recorded HTTP call, ``{"request":
{"method", "url", "headers", "body"}, "response": {"status", "headers", "body"}}`` —
what Datadog's test agent (dd-apm-test-agent's VCR proxy, used by dd-trace-py's and
dd-trace-js's LLM Observability tests) writes for each call, and what other recorders
write alike. A file holds one such object, a JSON array or JSON lines of them, or a
document listing them (Mastra's ``{"meta", "recordings": [...]}``, a request's
``timestamp`` its time; Symfony AI's and vcrpy's JSON ``{"interactions": [...]}``; Ruby
VCR's JSON ``{"http_interactions": [...]}``, a body ``{"encoding", "string"}``; PostHog's
harness fixtures ``{"provenance": {"recordedAt"}, "interactions": [...]}``, a request's
``path`` alone, a body ``{"kind": "json", "value"}`` or ``{"kind": "sse", "chunks"}``;
Braintrust's seinfeld cassettes ``{"entries": [...], "meta"}``, whose bodies by kind
``seinfeld.py`` reads, each entry's ``recordedAt`` its time); each is
turned into a VCR interaction and read as one (``cassette.interaction_record``), so the
model calls become request/response records and any other call is skipped naming its
method and URL.

Spellings read: the URL as ``url`` or ``uri``; the status as ``{"code", "message"}``,
a number, ``status_code`` or ``statusCode``; a body as text, as a JSON value already
parsed, or as ``"base64:…"`` (the test agent's spelling of a body that is not UTF-8
text: an AWS event stream, say) or ``{"b64": "…"}`` (Elixir's req_llm: the bytes
sent; a stream's as its ``chunks`` beside the response, each ``{"b64": …}``), or —
Elixir's ExVCR, a JSON array of such calls — as
base64 of an Erlang binary term beside ``"binary": true`` (a gzip body, say); llama-stack's
recordings (``tests/integration/recordings``) wrap each response object, and each
chunk of a stream, as ``{"__type__", "__data__"}``: the ``__data__`` is the body. Bodies
are recorded decoded (the test agent keeps what ``requests`` gives, gzip already
undone), so a ``content-encoding`` header is not applied to them — unless the body is
bytes that are no UTF-8 text (dd-trace-js's test agent keeps a brotli body as sent);
gzip bytes are still told by their first bytes."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator
from typing import Any

from memory_core.errors import ImportFormatError
from memory_core.importers.cassette import (
    BackgroundPolls,
    interaction_record,
    parse_recording,
)
from memory_core.importers.common import ParsedFile, SkippedRecord, Stages, fail, from_unix
from memory_core.importers.jsonvalues import first_document, iter_documents
from memory_core.importers.seinfeld import seinfeld_entry

_HEAD = re.compile(r'"(method|url|uri|urlPath|path)"\s*:')
# the keys a request's URL is under: the recorders', then WireMock's stub mappings',
# then a path alone (PostHog's LLM-analytics harness fixtures: the host is the SDK's)
_URL_KEYS = ("url", "uri", "urlPath", "urlPattern", "urlPathPattern", "path")
_SNIFF = 1 << 20  # how far into the file they are looked for


def is_http_interaction(obj: Any) -> bool:
    """One recorded HTTP call: a ``request`` with a ``method`` and a ``url`` (or ``uri``,
    or a WireMock mapping's ``urlPath`` …) beside a ``response`` object. (A model request
    body never has both.)"""
    if not isinstance(obj, dict):
        return False
    req, resp = obj.get("request"), obj.get("response")
    return isinstance(req, dict) and isinstance(resp, dict) \
        and isinstance(req.get("method"), str) and isinstance(_url(req), str)


def _url(req: dict[str, Any]) -> Any:
    return next((req[k] for k in _URL_KEYS if k in req), None)


def looks_like_http_json(text: str) -> bool:
    """The file's first JSON document (or the first item of a JSON array) is an HTTP
    interaction."""
    # (a request's keys sorted, as ``sort_keys`` and ``jq -S`` write them, put its body
    # before "method" and "url": the window is as long as a long body)
    head = text.lstrip()[:_SNIFF]
    if not head.startswith(("{", "[")) or '"request"' not in head or not _HEAD.search(head):
        return False
    doc = first_document(text)  # (JSON lines: the first line's; what follows is ignored)
    start = text.find("\n")
    for _ in range(3):  # a first line that is no JSON (cut off): the next ones tell
        if doc is not None or start < 0:
            break
        end = text.find("\n", start + 1)
        doc = first_document(text[start + 1:end if end >= 0 else len(text)])
        start = end
    if isinstance(doc, list):
        doc = doc[0] if doc else None
    return _recordings(doc) is not None or is_http_interaction(doc)


# the list of calls a document wraps: Mastra's ``{"meta", "recordings": [...]}``, Symfony
# AI's cassettes and vcrpy's JSON serializer ``{"interactions": [...]}``, Ruby VCR's JSON
# ``{"http_interactions": [...], "recorded_with"}``, WireMock's ``{"mappings": [...]}``,
# Braintrust's seinfeld cassettes ``{"entries": [...], "meta"}`` (``seinfeld.py``)
_WRAPPING = ("recordings", "interactions", "http_interactions", "mappings", "entries")


def _listing(doc: Any) -> tuple[str, list[Any]] | None:
    """The key and list of HTTP interactions a document lists under one of
    ``_WRAPPING``: its calls (told by any one of them, so a first one hand-edited past
    reading is a note, not the file's refusal)."""
    for key in _WRAPPING:
        found = doc.get(key) if isinstance(doc, dict) else None
        if isinstance(found, list) and any(is_http_interaction(x) for x in found):
            return key, found
    return None


def _recordings(doc: Any) -> list[Any] | None:
    """The HTTP interactions a document lists under one of ``_WRAPPING``: its calls."""
    listed = _listing(doc)
    return listed[1] if listed is not None else None


def _body(raw: Any, where: str) -> Any:
    """A recorded body as a VCR interaction holds it: text, bytes, or (already parsed)
    ``parsed_body``."""
    if isinstance(raw, str) and raw.startswith("base64:"):
        try:
            return base64.b64decode(raw[len("base64:"):], validate=True)
        except binascii.Error as e:
            raise fail(where, f"body marked 'base64:' is not base64: {e}") from None
    if isinstance(raw, dict) and set(raw) <= {"encoding", "string", "base64_string"} and (
            isinstance(raw.get("string"), str) or isinstance(raw.get("base64_string"), str)):
        # (Ruby VCR's JSON serializer: {"encoding", "string"}, or "base64_string")
        if isinstance(raw.get("string"), str):
            return raw["string"]
        try:
            return base64.b64decode(raw["base64_string"], validate=True)
        except binascii.Error as e:
            raise fail(where, f"body's base64_string is not base64: {e}") from None
    if isinstance(raw, dict) and set(raw) == {"kind", "value"} and raw["kind"] in (
            "json", "text"):
        return raw["value"]  # (PostHog's harness fixtures: {"kind": "json", "value": …})
    if isinstance(raw, dict) and set(raw) == {"kind", "chunks"} and raw["kind"] == "sse":
        chunks = raw["chunks"]  # (and a stream's text as received, chunk by chunk)
        if not isinstance(chunks, list) or not all(isinstance(c, str) for c in chunks):
            raise fail(where, "an SSE body's 'chunks' must be a list of texts")
        return "".join(chunks)
    if isinstance(raw, dict) and set(raw) == {"b64"} and isinstance(raw["b64"], str):
        try:  # (Elixir's req_llm fixtures: the bytes sent, {"b64": "…"})
            return base64.b64decode(raw["b64"], validate=True)
        except binascii.Error as e:
            raise fail(where, f"body {{'b64': …}} is not base64: {e}") from None
    return raw


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _erlang_binary(raw: Any, where: str) -> bytes:
    """An ExVCR body marked ``"binary": true``: base64 of the Erlang term format of a
    binary (``:erlang.term_to_binary/1``: version 131, tag 109, a 4-byte length, the
    bytes), which is what Elixir recorders write for a body that is not UTF-8 text."""
    try:
        data = base64.b64decode(raw, validate=True) if isinstance(raw, str) else b""
    except binascii.Error as e:
        raise fail(where, f"a body marked binary is not base64: {e}") from None
    if len(data) < 6 or data[0] != 131 or data[1] != 109:
        raise fail(where, "a body marked binary is not an Erlang binary term (expected "
                          f"base64 of bytes 131, 109, …; got {data[:6]!r})")
    size = int.from_bytes(data[2:6], "big")
    if len(data) - 6 != size:
        raise fail(where, f"a body marked binary says it holds {size} bytes, but holds "
                          f"{len(data) - 6}")
    return data[6:]


def _typed_value(body: Any) -> Any:
    """A body as llama-stack's recorder writes it — each response object (a stream: each
    chunk) wrapped as ``{"__type__": "<its Python class>", "__data__": {…}}`` — as the
    JSON the server sent."""
    if isinstance(body, dict) and len(body) == 2 and "__type__" in body and "__data__" in body:
        return body["__data__"]
    if isinstance(body, list) and body and all(
            isinstance(x, dict) and "__type__" in x for x in body):
        return [_typed_value(x) for x in body]
    return body


def _raw_body(side: dict[str, Any], where: str) -> Any:
    """A side's body under whichever key its recorder wrote it."""
    if "body" in side:
        return side["body"]
    if isinstance(side.get("body_segments"), list):  # (google-genai's replay client)
        return _segments(side["body_segments"])
    if "jsonBody" in side:  # (WireMock)
        return side["jsonBody"]
    if "base64Body" in side:  # (WireMock)
        return _base64_body(side["base64Body"], where)
    return _content(side.get("content"), where)  # (pal-mcp-server's recorder)


def _stub_request(req: dict[str, Any], where: str) -> dict[str, Any]:
    """A WireMock stub mapping's request (``bodyPatterns``; its recorder writes the body
    sent as ``equalToJson``, or ``equalTo``) as a recorded one; a mapping matching the
    body by another pattern (``contains`` …) holds no request body: one error saying so."""
    patterns = req.get("bodyPatterns")
    if "body" in req or not isinstance(patterns, list) or not patterns:
        return req
    for p in patterns:
        body = p.get("equalToJson", p.get("equalTo")) if isinstance(p, dict) else None
        if isinstance(body, str | dict | list):
            return {**req, "body": body}
    said = ", ".join(f"{k} {str(v)[:40]!r}" for p in patterns if isinstance(p, dict)
                     for k, v in p.items())
    raise fail(where, f"a WireMock stub mapping whose request body is matched by a pattern "
                      f"({said}), not recorded: the conversation is not in the file "
                      "(its recorder writes the body as equalToJson)")


def _base64_body(raw: Any, where: str) -> bytes:
    try:  # (a WireMock mapping's body as bytes)
        return base64.b64decode(raw, validate=True) if isinstance(raw, str) else b""
    except binascii.Error as e:
        raise fail(where, f"base64Body is not base64: {e}") from None


def _segments(segments: list[Any]) -> Any:
    """A body as google-genai's replay client records it (``body_segments``: the JSON
    sent, the JSON received — a stream's chunks one a segment)."""
    return segments[0] if len(segments) == 1 else segments or None


def _content(raw: Any, where: str) -> Any:
    """A body recorded as ``content`` (pal-mcp-server's httpx transport recorder: the
    request's JSON parsed, the response's bytes as ``{"data", "encoding": "base64",
    "size"}``)."""
    if isinstance(raw, dict) and set(raw) <= {"data", "encoding", "size"} \
            and raw.get("encoding") == "base64" and isinstance(raw.get("data"), str):
        try:
            return base64.b64decode(raw["data"], validate=True)
        except binascii.Error as e:
            raise fail(where, f"content's base64 data is not base64: {e}") from None
    return raw


def _side(side: dict[str, Any], where: str) -> dict[str, Any]:
    headers = side.get("headers")
    if headers is not None and not isinstance(headers, dict | list):
        raise fail(where, f"'headers' must be an object, got {type(headers).__name__}")
    if isinstance(headers, list):  # [{name, value}] (HAR's spelling)
        headers = {str(h.get("name")): h.get("value") for h in headers if isinstance(h, dict)}
    raw = _raw_body(side, where)
    body = _erlang_binary(raw, where) if side.get("binary") is True \
        else _typed_value(_body(raw, where))
    # a body recorded decoded (text, JSON; bytes of UTF-8 text) is what the header's
    # encoding gave; bytes that are no text are still as sent (dd-trace-js's test agent
    # keeps a brotli body so): the header then says how to read them
    encoded = isinstance(body, bytes) and not _is_utf8(body)
    out: dict[str, Any] = {"headers": {k: v for k, v in (headers or {}).items()
                                       if encoded or str(k).lower() != "content-encoding"}}
    if isinstance(body, dict | list):
        out["parsed_body"] = body
    elif body is not None and not isinstance(body, str | bytes):
        raise fail(where, f"'body' must be text or JSON, got {type(body).__name__}")
    else:
        out["body"] = body if body is not None else ""
    return out


def _status(resp: dict[str, Any], where: str) -> int:
    raw = resp.get("status", resp.get("status_code", resp.get("statusCode", 200)))
    code = raw.get("code", 200) if isinstance(raw, dict) else raw
    if isinstance(code, str) and code.isdigit():
        code = int(code)
    if not isinstance(code, int) or isinstance(code, bool):
        raise fail(where, f"response status must be a number, got {raw!r}")
    return code


def as_interaction(obj: dict[str, Any], where: str, recorded_at: Any = None
                   ) -> dict[str, Any]:
    """A recorded HTTP call in the shape of a vcrpy interaction; ``recorded_at``: when
    the document listing it says it was recorded (PostHog's ``provenance.recordedAt``),
    for a call that says nothing itself."""
    req, resp = obj["request"], obj["response"]
    request = {"method": req["method"], "uri": _url(req),
               **_side(_stub_request(req, where), f"{where}: request")}
    status: dict[str, Any] = {"code": _status(resp, f"{where}: response")}
    if isinstance(resp.get("statusText"), str):  # (the reason phrase, fetch's name)
        status["message"] = resp["statusText"]
    response = {"status": status, **_side(resp, f"{where}: response")}
    streamed = obj.get("chunks")
    if response.get("body") in ("", None) and isinstance(streamed, list) and streamed:
        # req_llm records a stream's body as its chunks beside the response, each as
        # the bytes received ({"b64": …}): they are the body
        pieces = [_body(c, f"{where}: chunk {i}") for i, c in enumerate(streamed)]
        if all(isinstance(p, bytes) for p in pieces):
            response["body"] = b"".join(pieces)
        elif all(isinstance(p, str) for p in pieces):
            response["body"] = "".join(pieces)
        else:
            raise fail(where, "a stream's chunks must each be text or bytes")
    if "body" in response:  # (vcrpy keeps a response's body under body.string)
        response["body"] = {"string": response["body"]}
    out: dict[str, Any] = {"request": request, "response": response}
    sent = req.get("timestamp")  # (Mastra's: when the request was sent, epoch ms)
    if isinstance(sent, int | float) and not isinstance(sent, bool):
        out["recorded_at"] = from_unix(sent, f"{where}: request", "timestamp").isoformat()
    elif isinstance(obj.get("recordedAt"), str):  # (a seinfeld entry's: its answer read)
        out["recorded_at"] = obj["recordedAt"]  # (one that is no time: noted, undated)
    elif isinstance(recorded_at, str):
        out["recorded_at"] = recorded_at
    return out


def http_rows(docs: Iterator[tuple[str, Any]], skipped: list[SkippedRecord]
              ) -> Iterator[tuple[str, Any]]:
    """Each HTTP interaction as the record of its model call (or skipped, saying why);
    any other document as it is, for the formats to read."""
    for at, doc in docs:
        listing = _listing(doc)
        if listing is None:
            yield from _http_rows([(at, doc)], skipped)
            continue
        key, listed = listing
        provenance = doc.get("provenance")
        when = provenance.get("recordedAt") if isinstance(provenance, dict) else None
        label = "entry" if key == "entries" else "recording"
        yield from _http_rows([(f"{at}: {label} {i}", r) for i, r in enumerate(listed)],
                              skipped, when, key)


def _not_a_call(obj: Any, where: str) -> ImportFormatError:
    """Why an item a document lists among its calls is none."""
    if not isinstance(obj, dict):
        return fail(where, f"an HTTP interaction must be an object, got {type(obj).__name__}")
    for side in ("request", "response"):
        if side not in obj:
            keys = ", ".join(sorted(map(str, obj))[:8]) or "none"
            return fail(where, f"an HTTP interaction needs a 'request' and a 'response' "
                               f"object; this one has no {side!r} (its keys: {keys})")
        if not isinstance(obj[side], dict):
            return fail(where, f"its {side!r} must be an object, got "
                               f"{type(obj[side]).__name__}")
    req = obj["request"]
    if not isinstance(req.get("method"), str):
        return fail(where, f"its request's 'method' must be a text, got {req.get('method')!r}")
    return fail(where, f"its request has no URL (no {', '.join(repr(k) for k in _URL_KEYS)})")


def _http_rows(docs: list[tuple[str, Any]], skipped: list[SkippedRecord],
               recorded_at: Any = None, listed_as: str | None = None
               ) -> Iterator[tuple[str, Any]]:
    """``listed_as``: the key a document lists them under, where each must be a call."""
    calls: list[tuple[str, Any]] = []  # (where, the interaction, or why it is none)
    for where, obj in docs:
        try:
            if listed_as == "entries":
                obj = seinfeld_entry(obj, where)
            calls.append((where, as_interaction(obj, where, recorded_at)
                          if is_http_interaction(obj) else
                          None if listed_as is None else _not_a_call(obj, where)))
        except ImportFormatError as e:
            calls.append((where, e))
    polls = BackgroundPolls(calls)  # (a background response's polls)
    for i, ((where, obj), (_, call)) in enumerate(zip(docs, calls, strict=True)):
        if call is None:
            yield where, obj
            continue
        try:
            got = call if isinstance(call, ImportFormatError) else interaction_record(
                call, where, "HTTP interaction", polls, i)
        except ImportFormatError as e:  # noted, the other interactions read
            got = e
        if isinstance(got, ImportFormatError):
            got = (where, got)
        if isinstance(got, SkippedRecord):
            skipped.append(got)
        else:
            yield got


def parse_http_json(text: str, stages: Stages | None = None) -> ParsedFile:
    """A file of HTTP-interaction JSON objects (see the module's docstring)."""
    skipped: list[SkippedRecord] = []
    rows = list(http_rows(iter_documents(text, keep_going=True), skipped))
    return parse_recording(rows, skipped, "HTTP-interaction file", "interaction", stages)
