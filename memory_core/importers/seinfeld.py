"""Braintrust's seinfeld cassettes (the JS SDK's e2e recorder, ``dev-packages/seinfeld``:
``__cassettes__/<name>.cassette.json``): ``{"meta": {"createdAt"}, "entries": [{"id",
"matchKey", "callIndex", "recordedAt", "request": {"method", "url", "headers", "body"},
"response": {"status", "statusText", "headers", "body"}}]}``, the entries in the order
their answers were read, each stamped ``recordedAt`` once its answer was read whole.

Each entry is put in the shape ``http_json.as_interaction`` reads (and then read as every
HTTP interaction is). A body is one of the recorder's payloads, chosen by the
``content-type`` it was sent with: ``{"kind": "empty"}``; ``{"kind": "json", "value"}``
(the JSON parsed); ``{"kind": "text", "value"}`` (Ollama's JSON-lines streams, plain-text
errors); ``{"kind": "sse", "chunks"}`` — a server-sent-events stream split at its blank
lines, each chunk one event without the blank line that ended it (joined back with it);
``{"kind": "base64", "value", "contentType"}`` — any other bytes (an AWS event stream);
and ``{"kind": "binary", "path", "sha256"}``, a body of 64 KiB or more the recorder wrote
beside the cassette (``<name>.cassette.blobs/<sha256>.bin``): not in the file, so its
entry cannot be read and is a note. Bodies are kept as the fetch layer gave them, already
decoded: a ``content-encoding`` header does not apply to them."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from memory_core.importers.common import fail

#: the payload kinds the recorder writes
KINDS = ("empty", "json", "text", "sse", "base64", "binary")


def seinfeld_entry(entry: Any, where: str) -> Any:
    """``entry`` with its bodies as ``as_interaction`` reads them (JSON, text or
    bytes), its ``content-encoding`` headers dropped and its ``statusText`` kept; one
    error naming the side of a body that cannot be read. Anything but an entry with
    both sides is returned as it is (``http_json`` says what it lacks)."""
    req = entry.get("request") if isinstance(entry, dict) else None
    resp = entry.get("response") if isinstance(entry, dict) else None
    if not isinstance(req, dict) or not isinstance(resp, dict):
        return entry
    return {**entry, "request": _side(req, f"{where}: request"),
            "response": _side(resp, f"{where}: response")}


def _side(side: dict[str, Any], where: str) -> dict[str, Any]:
    out = {**side, "body": _payload(side.get("body"), where)}
    headers = side.get("headers")
    if isinstance(headers, dict):
        out["headers"] = {k: v for k, v in headers.items()
                          if str(k).lower() != "content-encoding"}
    return out


def _payload(body: Any, where: str) -> Any:
    """A recorded body payload as the JSON, text or bytes it holds (None: empty)."""
    kind = body.get("kind") if isinstance(body, dict) else None
    if kind not in KINDS:
        got = f"kind {kind!r}" if isinstance(body, dict) else type(body).__name__
        raise fail(where, f"a seinfeld body must be an object whose 'kind' is one of "
                          f"{', '.join(KINDS)}; got {got}")
    value = body.get("value")
    if kind == "empty":
        return None
    if kind == "json":  # (a JSON value that is no object or array: its text as sent)
        return value if isinstance(value, dict | list) else json.dumps(value)
    if kind == "sse":
        chunks = body.get("chunks")
        if not isinstance(chunks, list) or not all(isinstance(c, str) for c in chunks):
            raise fail(where, "an 'sse' body's 'chunks' must be a list of texts (its events)")
        return "".join(f"{c}\n\n" for c in chunks)
    if kind == "binary":
        typed = f" ({body['contentType']})" if isinstance(body.get("contentType"), str) else ""
        raise fail(where, f"the body{typed} was kept outside the cassette, in the file "
                          f"{body.get('path')!r} beside it (the recorder's sidecar for a "
                          "body of 64 KiB or more): it is not in this file")
    if not isinstance(value, str):
        raise fail(where, f"a {kind!r} body's 'value' must be a string, got "
                          f"{type(value).__name__}")
    if kind == "text":
        return value
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as e:
        raise fail(where, f"a 'base64' body's value is not base64: {e}") from None

