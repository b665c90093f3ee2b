"""httprr traces (``rsc.io/httprr``, the recorder behind Go projects' tests such as
langchaingo's ``testdata/*.httprr``): the line ``httprr trace v1``, then for each call a
line ``<request bytes> <response bytes>`` and the request and the response as Go's
``Request.Write`` and ``Response.Write`` put them on the wire (a start line, headers, a
blank line, the body — chunked when its length was not known). Each call is read as a
VCR interaction is (``cassette.interaction_record``): calls that are no model call (a
search tool's ``GET``) are skipped with their method and URL."""

from __future__ import annotations

import http.client
import io
from typing import Any

from memory_core.importers.cassette import interaction_records, parse_recording
from memory_core.importers.common import ParsedFile, Stages, fail

MAGIC = "httprr trace v1\n"
MAGIC_BYTES = MAGIC.encode()


def looks_like_httprr(text: str) -> bool:
    return text.startswith(MAGIC)


def _dechunked(body: bytes, where: str) -> bytes:
    """A body sent with ``Transfer-Encoding: chunked``: each chunk's size in hex, a
    line, the chunk, a line; a size of 0 ends it."""
    out, pos = bytearray(), 0
    while True:
        end = body.find(b"\r\n", pos)
        size_text = body[pos:end].split(b";", 1)[0].strip() if end >= 0 else b""
        try:
            size = int(size_text, 16)
        except ValueError:
            raise fail(where, f"a chunked body's chunk size is not hexadecimal: "
                              f"{body[pos:pos + 20]!r}") from None
        if size == 0:
            return bytes(out)
        chunk = body[end + 2:end + 2 + size]
        if len(chunk) < size:
            raise fail(where, f"a chunked body ends inside a chunk of {size} bytes")
        out += chunk
        pos = end + 2 + size + 2


def _message(raw: bytes, where: str) -> tuple[str, dict[str, list[str]], bytes]:
    """An HTTP/1.x message: its start line, its headers (each name's values in order)
    and its body (de-chunked)."""
    fp = io.BytesIO(raw)
    start = fp.readline().decode("latin-1").strip()
    if not start:
        raise fail(where, "an HTTP message without a start line")
    try:
        parsed = http.client.parse_headers(fp)
    except http.client.HTTPException as e:
        raise fail(where, f"its headers cannot be read: {e}") from None
    headers: dict[str, list[str]] = {}
    for name, value in parsed.items():
        headers.setdefault(name, []).append(value)
    body = fp.read()
    if "chunked" in ",".join(parsed.get_all("Transfer-Encoding") or []).lower():
        body = _dechunked(body, where)
    return start, headers, body


def _text(body: bytes) -> str | bytes:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        return body  # (a compressed body: the cassette reader decodes it by its header)


def _interaction(request: bytes, response: bytes, where: str) -> dict[str, Any]:
    start, req_headers, req_body = _message(request, f"{where}: request")
    parts = start.split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        raise fail(where, f"expected a request line 'METHOD URL HTTP/1.1', got {start!r}")
    status, resp_headers, resp_body = _message(response, f"{where}: response")
    line = status.split(" ", 2)
    if len(line) < 2 or not line[0].startswith("HTTP/") or not line[1].isdigit():
        raise fail(where, f"expected a status line 'HTTP/1.1 200 OK', got {status!r}")
    return {"request": {"method": parts[0], "uri": parts[1], "headers": req_headers,
                        "body": _text(req_body)},
            "response": {"status": {"code": int(line[1]),
                                    "message": line[2] if len(line) > 2 else ""},
                         "headers": resp_headers, "body": {"string": _text(resp_body)}}}


def httprr_interactions(data: bytes) -> list[dict[str, Any]]:
    """The trace's calls (its bytes: the sizes count bytes, and a body may be
    compressed) as vcrpy-shaped interactions. ImportFormatError naming the call when a
    size line is malformed or the file ends inside a call."""
    pos, calls = len(MAGIC.encode()), list[dict[str, Any]]()
    while pos < len(data):
        where = f"call {len(calls) + 1}"
        end = data.find(b"\n", pos)
        sizes = data[pos:end if end >= 0 else len(data)].split()
        if len(sizes) != 2 or not all(s.isdigit() for s in sizes):
            raise fail(where, f"expected a line '<request bytes> <response bytes>', got "
                              f"{data[pos:pos + 40]!r}")
        asked, answered = int(sizes[0]), int(sizes[1])
        pos = end + 1
        if pos + asked + answered > len(data):
            raise fail(where, f"the file ends inside the call ({asked} + {answered} bytes "
                              f"announced, {len(data) - pos} left)")
        calls.append(_interaction(data[pos:pos + asked],
                                  data[pos + asked:pos + asked + answered], where))
        pos += asked + answered
    return calls


def parse_httprr(text: str, stages: Stages | None = None) -> ParsedFile:
    """An httprr trace's model calls (see the module's docstring)."""
    return parse_httprr_bytes(text.encode("utf-8"), stages)


def parse_httprr_bytes(data: bytes, stages: Stages | None = None) -> ParsedFile:
    """``parse_httprr`` of a file as read: one whose bodies are not all UTF-8 text
    (gzip) is not text, and is read so."""
    rows, skipped = interaction_records(httprr_interactions(data), "call")
    return parse_recording(rows, skipped, "httprr trace", "call", stages)
