"""Reading JSON from import files strictly: NaN/Infinity, nesting deeper than any
recording needs, lone UTF-16 surrogates and NUL characters are errors naming the record
(they would otherwise fail later, inside a store write, or be stored as garbage)."""

from __future__ import annotations

import json
import re
from typing import Any

from memory_core.importers.common import fail

MAX_DEPTH = 100
# escapes that decode to a lone surrogate or a NUL: checked value by value when present
_SUSPECT = re.compile(r"\\u(?:0000|[dD][89a-fA-F][0-9a-fA-F]{2})")


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _bad_string(s: str) -> str | None:
    if "\x00" in s:
        return "contains a NUL character"
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return "contains a lone UTF-16 surrogate (not valid Unicode)"
    return None


def check_value(value: Any, where: str, *, strings: bool) -> None:
    """Depth and (when ``strings``) every string and key of ``value``; the error names
    the path inside the record."""
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    while stack:
        v, path, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise fail(where, f"nested more than {MAX_DEPTH} levels deep at {path or '/'}")
        if isinstance(v, dict):
            for k, x in v.items():
                if strings and (bad := _bad_string(k)):
                    raise fail(where, f"key {k!r} at {path or '/'} {bad}")
                stack.append((x, f"{path}/{k}", depth + 1))
        elif isinstance(v, list):
            stack.extend((x, f"{path}/{i}", depth + 1) for i, x in enumerate(v))
        elif strings and isinstance(v, str) and (bad := _bad_string(v)):
            raise fail(where, f"the string at {path or '/'} {bad}")


def load_json(text: str, where: str, what: str = "") -> Any:
    """``json.loads`` that names ``where`` (and ``what``) in every failure."""
    label = f"{what} " if what else ""
    try:
        value = json.loads(text, parse_constant=_no_constants)
    except RecursionError:
        raise fail(where, f"{label}nested too deeply to read") from None
    except ValueError as e:
        raise fail(where, f"{label}invalid JSON: {e}") from None
    check_value(value, where, strings=bool(_SUSPECT.search(text)))
    return value


def _is_sse(first: str) -> bool:
    return first.startswith(("data:", "event:", ": "))


def read_documents(text: str) -> list[tuple[str, Any]]:
    """The records of a file: JSON lines (``line N``), a JSON array (``item N``) or one
    JSON document (``file``), in that order of preference."""
    lines = [(n, ln) for n, ln in enumerate(text.splitlines(), start=1) if ln.strip()]
    if not lines:
        raise fail("file", "the file is empty")
    if _is_sse(lines[0][1].lstrip()):
        raise fail("file", "this is a server-sent-events stream (lines starting 'data:'): it "
                           "holds a response without its request; import a record "
                           "{\"request\": {...}, \"response\": \"<the stream text>\"} instead")
    rows: list[tuple[str, Any]] = []
    try:
        for n, ln in lines:
            rows.append((f"line {n}", load_json(ln, f"line {n}")))
    except Exception as line_error:
        if len(lines) == 1 or not lines[0][1].lstrip().startswith(("{", "[")) or rows:
            raise
        doc = load_json(text, "file")  # pretty-printed JSON spans several lines
        if len(rows) == 0 and not isinstance(doc, dict | list):
            raise line_error from None
        rows = [("file", doc)]
    if len(rows) == 1 and isinstance(rows[0][1], list):
        return [(f"item {i + 1}", x) for i, x in enumerate(rows[0][1])]
    return rows
