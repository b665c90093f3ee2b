"""Azure SDK test-proxy recordings: ``{"Entries": [...], "Variables": {...}}``, what the
Azure SDKs' recorded tests keep for every language (azure-sdk-for-net's
``SessionRecords``, the other SDKs' recordings in azure-sdk-assets) — Azure OpenAI,
Azure AI Inference, and OpenAI itself where a test ran against it. Each entry is one
HTTP call (``RequestUri``, ``RequestMethod``, ``RequestHeaders``, ``RequestBody``,
``StatusCode``, ``ResponseHeaders``, ``ResponseBody``), read as a VCR interaction is
(``cassette.interaction_record``): model calls become records, any other call is
skipped naming its method and URL.

Bodies as the test proxy writes them (its ``RecordEntry``): JSON inline when it parses
as an object; a text body (a ``Content-Type`` with a text encoding: JSON, ``text/…``,
an event stream) as a string, or as an array of its lines, each with its line break,
which are joined as they are; a body of any other type as base64; no body as
``null``, an empty one as ``[]``. Bodies are recorded decoded, so a
``Content-Encoding`` header is not applied to them."""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from memory_core.importers.cassette import interaction_records, parse_recording
from memory_core.importers.common import ParsedFile, Stages, fail
from memory_core.importers.jsonvalues import load_json

_HEAD = re.compile(r'^\s*\{\s*"Entries"\s*:\s*\[')
# content types whose bodies the test proxy writes as text (ContentTypeUtilities)
_TEXT = re.compile(r"json|^text/|xml|event-stream|charset=|javascript|urlencoded", re.I)


def looks_like_azure_proxy(text: str) -> bool:
    """The file opens with ``{"Entries": [`` (the test proxy writes ``Entries`` first)
    and its first entry names a ``RequestUri`` or a ``RequestMethod``."""
    head = text[:4096]
    return bool(_HEAD.match(head)) and ('"RequestUri"' in head or '"RequestMethod"' in head)


def _headers(raw: Any, where: str) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise fail(where, f"headers must be an object, got {type(raw).__name__}")
    out = {}
    for k, v in raw.items():
        if str(k).lower() == "content-encoding":
            continue  # (recorded decoded)
        out[str(k)] = ", ".join(map(str, v)) if isinstance(v, list) else str(v)
    return out


def _body(raw: Any, headers: dict[str, str], where: str) -> Any:
    """A recorded body as a VCR interaction holds it: text, bytes or a parsed value."""
    if raw is None:
        return ""
    if isinstance(raw, dict):
        return raw  # (JSON written inline)
    text = next((v for k, v in headers.items() if k.lower() == "content-type"), "")
    if isinstance(raw, list):
        if not all(isinstance(x, str) for x in raw):
            raise fail(where, "a body recorded as an array must hold its lines as texts")
        return "".join(raw)  # (each line keeps its line break; [] is an empty body)
    if not isinstance(raw, str):
        raise fail(where, f"a body must be text, an object or an array of lines, got "
                          f"{type(raw).__name__}")
    if _TEXT.search(text):
        return raw
    try:  # another type: base64 of the bytes
        return base64.b64decode(raw, validate=True)
    except binascii.Error:
        return raw  # (a text body whose content type was not recorded)


def as_interaction(entry: Any, where: str) -> dict[str, Any]:
    """A test-proxy entry in the shape of a vcrpy interaction."""
    if not isinstance(entry, dict):
        raise fail(where, f"an entry must be an object, got {type(entry).__name__}")
    uri, method = entry.get("RequestUri"), entry.get("RequestMethod")
    if not isinstance(uri, str) or not isinstance(method, str):
        raise fail(where, "an entry needs a 'RequestUri' and a 'RequestMethod' text")
    status = entry.get("StatusCode", 200)
    if not isinstance(status, int) or isinstance(status, bool):
        raise fail(where, f"'StatusCode' must be a number, got {status!r}")
    out: dict[str, Any] = {}
    for side, prefix in (("request", "Request"), ("response", "Response")):
        headers = _headers(entry.get(f"{prefix}Headers"), f"{where}: {side}")
        body = _body(entry.get(f"{prefix}Body"), headers, f"{where}: {side}")
        out[side] = {"headers": headers,
                     **({"parsed_body": body} if isinstance(body, dict) else
                        {"body": body if side == "request" else {"string": body}})}
    out["request"].update(method=method, uri=uri)
    out["response"]["status"] = {"code": status}
    return out


def parse_azure_proxy(text: str, stages: Stages | None = None) -> ParsedFile:
    """A test-proxy recording's model calls (see the module's docstring)."""
    doc = load_json(text, "file", "test-proxy recording:")
    entries = doc.get("Entries") if isinstance(doc, dict) else None
    if not isinstance(entries, list):
        raise fail("file", "a test-proxy recording needs an 'Entries' array")
    rows, skipped = interaction_records(
        [as_interaction(e, f"entry {i}") for i, e in enumerate(entries, start=1)], "entry")
    return parse_recording(rows, skipped, "test-proxy recording", "entry", stages)
