"""Rust's httpmock recordings (rig's test cassettes): YAML documents (``---`` between
them), each one recorded call — ``when``, the request it matched (``path``, ``method``,
``header`` as ``[{name, value}]``, ``body``), and ``then``, the answer (``status``,
``header``, ``body``). Each is read as an HTTP interaction (``http_json``). The
recording names no host: a call is routed by its path, and where it was sent is not
said."""

from __future__ import annotations

from typing import Any

from memory_core.importers.cassette import parse_recording, read_yaml
from memory_core.importers.common import ParsedFile, SkippedRecord, Stages, fail
from memory_core.importers.http_json import http_rows


def looks_like_httpmock(text: str) -> bool:
    """The text opens with a ``when:`` mapping and has a ``then:`` after it."""
    return text.lstrip().startswith("when:") and "\nthen:" in text


def parse_httpmock(text: str, stages: Stages | None = None) -> ParsedFile:
    """The recording's model calls (see the module's docstring); a document that is no
    call is a note, the others read."""
    docs: list[tuple[str, Any]] = []
    for i, doc in enumerate(d for d in read_yaml(text, "httpmock recording", every=True)
                            if d is not None):
        where = f"call {i + 1}"
        when = doc.get("when") if isinstance(doc, dict) else None
        then = doc.get("then") if isinstance(doc, dict) else None
        if not isinstance(when, dict) or not isinstance(then, dict) \
                or not isinstance(when.get("path"), str):
            docs.append((where, fail(where, "an httpmock call needs a 'when' object with "
                                            "a 'path' and a 'then' object")))
            continue
        docs.append((where, {
            "request": {"method": str(when.get("method") or "POST"), "url": when["path"],
                        "headers": when.get("header") or [], "body": when.get("body")},
            "response": {"status": then.get("status", 200), "headers": then.get("header") or [],
                         "body": then.get("body")}}))
    skipped: list[SkippedRecord] = []
    rows = list(http_rows(iter(docs), skipped))  # (a note passes through as it is)
    return parse_recording(rows, skipped, "httpmock recording", "call", stages)
