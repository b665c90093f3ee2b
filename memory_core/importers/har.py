"""HTTP Archive (HAR 1.2) files: what browsers' developer tools export, and what
Polly.js (Mirascope's TypeScript tests, OpenLLMetry-JS's, among others) records. Each
entry is turned into the shape of a VCR interaction and read as one
(``cassette.interaction_records``): the model calls become request/response records,
every other entry is skipped with its URL.

A response body is ``content.text``: the decoded text, or base64 of the bytes
(``encoding: "base64"``). Polly.js's Node adapter records a response sent with a
``content-encoding`` (gzip, deflate, br) as the chunks it arrived in, still encoded: a
JSON array of base64 strings (hex strings before Polly 5) — joined, then decoded by the
response's ``content-encoding`` as a cassette's body is. A HAR document written as YAML
(Sourcegraph Cody's recordings, ``*.har.yaml``) is read the same way; its persister
writes a JSON request body parsed, as ``postData.textJSON``, in place of its text."""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from memory_core.errors import ImportFormatError
from memory_core.importers.cassette import interaction_records, parse_recording, read_yaml
from memory_core.importers.common import ParsedFile, SkippedRecord, Stages, fail
from memory_core.importers.jsonvalues import load_json

_START = re.compile(r'\s*\{\s*"log"\s*:')
# the same document written as YAML (Sourcegraph Cody's Polly.js persister: *.har.yaml)
_YAML_START = re.compile(r"(?:[ \t]*(?:#[^\n]*)?\n)*(?:---[ \t]*\n)?log:[ \t]*\n")


def looks_like_har(text: str) -> bool:
    """A HAR document starts ``{"log":``, or ``log:`` in YAML with its ``entries`` near
    (its entries are checked when it is read)."""
    head = text[:4000]
    return _START.match(head) is not None or (
        _YAML_START.match(head) is not None and "\n  entries:" in head)


def har_document(text: str) -> dict[str, Any]:
    """The HAR document, ``{"log": {"entries": [...]}}``, or one error saying why not."""
    doc = load_json(text, "file", "HAR document") if _START.match(text[:200]) \
        else read_yaml(text, "HAR document")
    log = doc.get("log") if isinstance(doc, dict) else None
    if not isinstance(doc, dict) or not isinstance(log, dict) \
            or not isinstance(log.get("entries"), list):
        raise fail("file", "a HAR file must hold {\"log\": {\"entries\": [...]}}")
    return doc


def _headers(raw: Any, where: str) -> dict[str, list[str]]:
    if raw is None:
        return {}
    if not isinstance(raw, list) or not all(isinstance(h, dict) and isinstance(
            h.get("name"), str) and isinstance(h.get("value"), str) for h in raw):
        raise fail(where, f"'headers' must be a list of {{name, value}} strings, got {raw!r}")
    out: dict[str, list[str]] = {}
    for h in raw:
        out.setdefault(h["name"], []).append(h["value"])
    return out


def _content(content: Any, where: str, encoded: bool) -> tuple[str | bytes, bool]:
    """A response's ``content``: its text, or the bytes of base64 text; and whether they
    are still content-encoded (Polly.js's chunks of an ``encoded`` response)."""
    if content is None:
        return "", False
    if not isinstance(content, dict):
        raise fail(where, f"'content' must be an object, got {type(content).__name__}")
    text = content.get("text", "")
    if not isinstance(text, str):
        raise fail(where, f"'content.text' must be a string, got {type(text).__name__}")
    base64_text = content.get("encoding") == "base64"
    if encoded and text.lstrip().startswith("["):
        return _chunks(text, base64_text, where), True
    if base64_text:
        try:
            return base64.b64decode(text, validate=True), False
        except binascii.Error as e:
            raise fail(where, f"'content.text' is not base64: {e}") from None
    return text, False


def _chunks(text: str, base64_text: bool, where: str) -> bytes:
    """Polly.js's record of a content-encoded response: the JSON array of the chunks it
    arrived in, each base64 (``encoding: "base64"``) or, before Polly 5, hex — joined."""
    kind = "base64" if base64_text else "hex"
    chunks = load_json(text, where, "'content.text' (a JSON array of chunks)")
    if not isinstance(chunks, list) or not all(isinstance(c, str) for c in chunks):
        raise fail(where, f"'content.text' of a content-encoded response must be a JSON "
                          f"array of {kind} strings (as Polly.js records its chunks)")
    out = []
    for i, chunk in enumerate(chunks):
        try:
            out.append(base64.b64decode(chunk, validate=True) if base64_text
                       else bytes.fromhex(chunk))
        except (binascii.Error, ValueError) as e:
            raise fail(where, f"chunk {i} of 'content.text' is not {kind}: {e}") from None
    return b"".join(out)


def _interaction(entry: Any, where: str) -> dict[str, Any]:
    if not isinstance(entry, dict) or not isinstance(entry.get("request"), dict) \
            or not isinstance(entry.get("response"), dict):
        raise fail(where, "an entry needs a 'request' and a 'response' object")
    req, resp = entry["request"], entry["response"]
    post = req.get("postData")
    if post is not None and not isinstance(post, dict):
        raise fail(where, f"'postData' must be an object, got {type(post).__name__}")
    status = resp.get("status")
    if not isinstance(status, int) or isinstance(status, bool):
        raise fail(where, f"response 'status' must be a number, got {status!r}")
    headers = _headers(resp.get("headers"), f"{where}: response")
    encoding = next((v[0] for k, v in headers.items() if k.lower() == "content-encoding"),
                    "").strip().lower()
    body, still_encoded = _content(resp.get("content"), f"{where}: response",
                                   encoding not in ("", "identity"))
    if not still_encoded:  # the text is decoded already: no content-encoding applies
        headers = {k: v for k, v in headers.items() if k.lower() != "content-encoding"}
    return {
        "recorded_at": entry.get("startedDateTime"),
        "request": {"method": req.get("method"), "uri": req.get("url"),
                    **_post_body(post or {}, where),
                    "headers": _headers(req.get("headers"), f"{where}: request")},
        "response": {"status": {"code": status}, "headers": headers,
                     "body": {"string": body}},
    }


def _post_body(post: dict[str, Any], where: str) -> dict[str, Any]:
    """A request's body: ``postData.text``, or the JSON Cody's Polly.js persister writes
    parsed in its place (``textJSON``)."""
    if post.get("text") in (None, "") and "textJSON" in post:
        if not isinstance(post["textJSON"], dict | list):
            raise fail(where, "'postData.textJSON' must be a JSON object or array, got "
                              f"{type(post['textJSON']).__name__}")
        return {"parsed_body": post["textJSON"]}
    return {"body": post.get("text", "")}


def har_records(doc: dict[str, Any]) -> tuple[list[tuple[str, Any]], list[SkippedRecord]]:
    """The HAR file's model calls as ``{"request", "response"|"error"}`` records."""
    interactions: list[Any] = []
    for i, entry in enumerate(doc["log"]["entries"], start=1):
        try:
            interactions.append(_interaction(entry, f"entry {i}"))
        except ImportFormatError as e:  # noted, the other entries read
            interactions.append(e)
    return interaction_records(interactions, label="entry")


def parse_har(text: str, stages: Stages | None = None) -> ParsedFile:
    """A HAR file's model calls (see the module's docstring)."""
    rows, skipped = har_records(har_document(text))
    return parse_recording(rows, skipped, "HAR file", "entry", stages)
