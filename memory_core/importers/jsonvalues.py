"""Reading JSON from import files strictly: NaN/Infinity, nesting deeper than any
recording needs, lone UTF-16 surrogates and NUL characters are errors naming the record
(they would otherwise fail later, inside a store write, or be stored as garbage)."""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Iterator
from itertools import chain
from typing import Any

from memory_core.errors import ImportFormatError
from memory_core.importers.common import fail

MAX_DEPTH = 100
# escapes that decode to a lone surrogate or a NUL: checked value by value when present
_SUSPECT = re.compile(r"\\u(?:0000|[dD][89a-fA-F][0-9a-fA-F]{2})")
_SPACE = re.compile(r"\s*")


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def finite(text: str) -> float:
    """A JSON number with a fraction or an exponent, refused when it is beyond a 64-bit
    float (``1e999`` would read as infinity, which nothing downstream can store)."""
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"the number {text[:40]} is out of range (beyond a 64-bit float)")
    return value


def whole(text: str) -> int:
    """A JSON integer, refused when it has more digits than Python converts (its
    ``int_max_str_digits``, 4,300): the error names the number, not the interpreter."""
    digits = len(text.lstrip("-"))
    most = sys.get_int_max_str_digits()
    if most and digits > most:
        raise ValueError(f"the number {text[:20]}… ({digits} digits) is too long "
                         f"(more than {most} digits)")
    return int(text)


def loads(text: str | bytes) -> Any:
    """``json.loads`` refusing what JSON does not allow or a float or an int cannot
    hold (NaN, Infinity, ``1e999``, 5,000 digits) with a ValueError naming it;
    RecursionError when nested too deeply."""
    if type(text) is str and not text.startswith("\ufeff"):
        return _DECODER.decode(text)  # (what json.loads does, its decoder made once)
    return json.loads(text, parse_constant=_no_constants, parse_float=finite,
                      parse_int=whole)


_DECODER = json.JSONDecoder(parse_constant=_no_constants, parse_float=finite,
                            parse_int=whole)


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
        value = loads(text)
    except RecursionError:
        raise fail(where, f"{label}nested too deeply to read") from None
    except ValueError as e:
        raise fail(where, f"{label}invalid JSON: {e}") from None
    strings = bool(_SUSPECT.search(text))
    # nesting deeper than MAX_DEPTH takes more brackets than that: most records have
    # fewer, and need no walk (a tenth of reading a log)
    if strings or text.count("[") + text.count("{") > MAX_DEPTH:
        check_value(value, where, strings=strings)
    return value


def json_or_text(raw: Any, where: str, what: str) -> Any:
    """A value some exports keep as JSON text (Langfuse's observations, MLflow's span
    attributes): the JSON it holds, checked as a record's is (an error naming ``where``
    when nested too deeply, or holding a NUL or a lone surrogate), or — text that is no
    JSON — the text itself."""
    if not (isinstance(raw, str) and raw.lstrip()[:1] in ('"', "{", "[")):
        return raw
    try:
        value = loads(raw)
    except ValueError:
        return raw
    except RecursionError:
        raise fail(where, f"{what} nested too deeply to read") from None
    check_value(value, f"{where}: {what}", strings=True)
    return value


def is_sse(text: str) -> bool:
    """Text that starts as a server-sent-events stream does: a ``data:`` or ``event:``
    field, or a comment (``: keep-alive``; OpenRouter opens its streams with
    ``: OPENROUTER PROCESSING``), which no JSON text starts with."""
    return text.lstrip().startswith(("data:", "event:", ":"))


def _lines(text: str) -> Iterator[tuple[int, str]]:
    """Numbered non-blank lines, one at a time (a large log is not copied into a list).
    Lines end at ``\n`` (``\r\n`` too; ``\r`` alone in a file without ``\n``): not at the
    other characters ``str.splitlines`` breaks on, which JSON strings may hold raw
    (U+2028, U+0085, …)."""
    sep = "\n" if "\n" in text or "\r" not in text else "\r"
    pos, n, end = 0, 0, len(text)
    while pos < end:
        nxt = text.find(sep, pos)
        if nxt < 0:
            nxt = end
        n += 1
        line = text[pos:nxt]
        pos = nxt + 1
        if line.strip():
            yield n, line


def iter_documents(text: str, keep_going: bool = False) -> Iterator[tuple[str, Any]]:
    """The records of a file as ``read_documents`` gives them, read one line at a time:
    a JSON-lines file's records are parsed as they are asked for, so a caller that
    turns each into something smaller never holds the whole file parsed. With
    ``keep_going``, a line of a JSON-lines file that is no JSON (a log cut off while a
    line was written) comes as its error in place of the object, and the lines after
    it are read."""
    lines = _lines(text)
    first = next(lines, None)
    if first is None:
        raise fail("file", "the file is empty")
    if is_sse(first[1]):
        raise fail("file", "this is a server-sent-events stream (lines starting 'data:'): it "
                           "holds a response without its request; import a record "
                           "{\"request\": {...}, \"response\": \"<the stream text>\"} instead")
    second = next(lines, None)
    try:
        doc: Any = load_json(first[1], f"line {first[0]}")
    except ImportFormatError as line_error:
        if second is None or not first[1].lstrip().startswith(("{", "[")):
            raise
        if _whole_value(first[1]):  # a record of JSON lines holding what cannot be read
            if not keep_going:  # (NaN, a NUL, a lone surrogate): not spread over lines
                raise
            doc = line_error
        else:
            try:
                whole = load_json(text, "file")  # pretty-printed JSON spans several lines
            except ImportFormatError:
                docs = _concatenated(text)
                if docs is not None:
                    yield from docs
                    return
                if not (keep_going and second[1].lstrip().startswith("{")
                        and _whole_value(second[1])):
                    raise
                doc = line_error  # JSON lines whose first line is broken
            else:
                if not isinstance(whole, dict | list):
                    raise line_error from None
                yield from _items(whole) if isinstance(whole, list) else [("file", whole)]
                return
    if second is None and isinstance(doc, list):  # one JSON array
        yield from _items(doc)
        return
    yield f"line {first[0]}", doc
    for n, ln in chain([second], lines) if second is not None else ():
        try:
            yield f"line {n}", load_json(ln, f"line {n}")
        except ImportFormatError as e:
            if not keep_going:
                raise
            yield f"line {n}", e


_LENIENT = json.JSONDecoder()  # (NaN and huge numbers read: only the extent is asked)


def _whole_value(line: str) -> bool:
    """A line that is one whole JSON value by itself (NaN, ``1e999``, a NUL or a lone
    surrogate in it or not): a record of JSON lines, never the first line of a document
    printed over several."""
    stripped = line.strip()
    try:
        _, end = _LENIENT.raw_decode(stripped)
    except (ValueError, RecursionError):
        return False
    return end == len(stripped)


def _concatenated(text: str) -> list[tuple[str, Any]] | None:
    """Pretty-printed JSON objects one after another (``document N``), as Python's
    ``ConsoleSpanExporter`` prints spans; None unless the whole text is two or more."""
    decoder = json.JSONDecoder(parse_constant=_no_constants, parse_float=finite,
                               parse_int=whole)
    docs: list[tuple[str, Any]] = []
    pos = 0
    try:
        while (pos := _SPACE.match(text, pos).end()) < len(text):  # type: ignore[union-attr]
            value, pos = decoder.raw_decode(text, pos)
            docs.append((f"document {len(docs) + 1}", value))
    except (ValueError, RecursionError):
        return None
    if len(docs) < 2:
        return None
    for where, value in docs:
        check_value(value, where, strings=bool(_SUSPECT.search(text)))
    return docs


def first_document(text: str) -> Any:
    """The first JSON value of ``text`` (what follows it ignored); None when it has none."""
    try:
        return json.JSONDecoder().raw_decode(text.lstrip())[0]
    except (ValueError, RecursionError):
        return None


def _items(doc: list[Any]) -> Iterator[tuple[str, Any]]:
    return ((f"item {i + 1}", x) for i, x in enumerate(doc))


def read_documents(text: str) -> list[tuple[str, Any]]:
    """The records of a file: JSON lines (``line N``), a JSON array (``item N``), one
    JSON document (``file``) or several printed one after another (``document N``), in
    that order of preference."""
    return list(iter_documents(text))
