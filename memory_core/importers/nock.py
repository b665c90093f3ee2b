"""nock recordings: what Node's nock writes when it records (``nock.recorder.rec({
output_objects: true })``, ``nockBack`` fixtures) — a JSON array of definitions, each
``{"scope", "method", "path", "body", "status", "response", "rawHeaders"}``.

A definition's ``body`` and ``response`` are JSON as sent (an object), text, or — for a
response that came content-encoded (gzip, br) — the JSON array of its chunks as hex,
decoded with the ``content-encoding`` of its ``rawHeaders`` (an object, or nock's
older flat list of names and values); a response nock found not to be text
(``"responseIsBinary": true``: an AWS event stream) is one hex text. Each definition is read as a VCR interaction
(``cassette.interaction_records``): calls that are no model call are skipped saying so,
one that cannot be read is left out, noted."""

from __future__ import annotations

import re
from typing import Any

from memory_core.errors import ImportFormatError
from memory_core.importers.cassette import interaction_records, parse_recording
from memory_core.importers.common import ParsedFile, Stages, fail
from memory_core.importers.jsonvalues import load_json

_START = re.compile(r'\s*\[\s*\{\s*"scope"\s*:')


def looks_like_nock(text: str) -> bool:
    """A JSON array whose first definition starts with its ``scope`` (as nock writes
    it), with a ``method`` and a ``path`` near it."""
    head = text[:4096]
    return _START.match(head) is not None and '"method"' in head and '"path"' in head


def _headers(raw: Any, where: str) -> dict[str, list[str]]:
    if raw is None:
        return {}
    if isinstance(raw, list) and len(raw) % 2 == 0 and all(isinstance(x, str) for x in raw):
        pairs = list(zip(raw[::2], raw[1::2], strict=True))  # (nock before v13)
    elif isinstance(raw, dict):
        pairs = [(str(k), v) for k, v in raw.items()]
    else:
        raise fail(where, "'rawHeaders' must be an object or a list of names and values")
    out: dict[str, list[str]] = {}
    for name, value in pairs:
        values = value if isinstance(value, list) else [value]
        out.setdefault(name, []).extend(str(v) for v in values)
    return out


def _side(value: Any, where: str, encoded: bool, binary: bool = False) -> dict[str, Any]:
    """A body as a VCR interaction holds it: JSON already parsed, text, or the bytes
    of hex chunks (a content-encoded body) or of one hex text (``responseIsBinary``)."""
    if encoded and isinstance(value, list) and all(isinstance(c, str) for c in value) \
            or binary and isinstance(value, str):
        try:
            return {"body": {"string": bytes.fromhex("".join(value))}}
        except ValueError as e:
            what = "a content-encoded body must be hex chunks" if isinstance(value, list) \
                else "a body recorded as binary (responseIsBinary) must be hex"
            raise fail(where, f"{what}: {e}") from None
    if isinstance(value, dict | list):
        return {"parsed_body": value}
    if value is None or isinstance(value, str):
        return {"body": {"string": value or ""}}
    raise fail(where, f"a body must be JSON or text, got {type(value).__name__}")


def _interaction(d: Any, where: str) -> dict[str, Any]:
    if not isinstance(d, dict) or not isinstance(d.get("scope"), str):
        raise fail(where, "a nock definition needs a 'scope' (the origin it was sent to)")
    headers = _headers(d.get("rawHeaders"), where)
    encoding = next(((v or [""])[0] for k, v in headers.items()
                     if k.lower() == "content-encoding"), "").strip().lower()
    status = d.get("status", 200)
    if isinstance(status, bool) or not isinstance(status, int):
        raise fail(where, f"'status' must be a number, got {status!r}")
    return {
        "request": {"method": d.get("method") or "POST",
                    "uri": d["scope"].rstrip("/") + str(d.get("path") or ""),
                    **_side(d.get("body"), f"{where}: request", False)},
        "response": {"status": {"code": status}, "headers": headers,
                     **_side(d.get("response"), f"{where}: response",
                             encoding not in ("", "identity"),
                             d.get("responseIsBinary") is True)},
    }


def parse_nock(text: str, stages: Stages | None = None) -> ParsedFile:
    """A nock recording's model calls (see the module's docstring)."""
    doc = load_json(text, "file", "nock recording")
    if not isinstance(doc, list):
        raise fail("file", "a nock recording must be a JSON array of definitions")
    interactions: list[Any] = []
    for i, d in enumerate(doc, start=1):
        try:
            interactions.append(_interaction(d, f"definition {i}"))
        except ImportFormatError as e:  # noted, the other definitions read
            interactions.append(e)
    rows, skipped = interaction_records(interactions, label="definition")
    return parse_recording(rows, skipped, "nock recording", "definition", stages)
