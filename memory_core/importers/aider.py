"""Aider's LLM history (``aider --llm-history-file FILE``): every model call Aider makes,
appended to a text file as two blocks. As Aider-AI/aider @
5dc9490bb35f9729ef2c95d00a19ccd30c26339c writes them (``InputOutput.log_llm_history`` in
aider/io.py, ``format_messages`` and ``format_content`` in aider/utils.py, ``Coder.send``
in aider/coders/base_coder.py), each block is a line ``<ROLE> <time>`` — ``TO LLM``
for the request, ``LLM RESPONSE`` for the answer; the time
``datetime.now().isoformat(timespec="seconds")``, local and without a zone — then its
text:

* the request: each message as a line ``-------``, then each line of its content after
  its role in capitals and a space (``USER Fix the bug``); a content that is a list of
  parts (an image, a text Aider marked for prompt caching) as one ``<ROLE> key: value``
  line per key of each part (an image's URL as ``<ROLE> Image_url URL: …``, a text's
  later lines after its first without the role); a ``function_call`` as ``<ROLE>
  Function Call: …`` (a Python value);
* the answer: each line of the text received after ``ASSISTANT``; ``send`` writes it in
  a ``finally``, so a failed or interrupted call writes what it received, nothing when
  nothing came.

Each request and the answer after it are read as one chat completions record (the
registry's ``chat`` format reads it): timed by its two lines (read as UTC, noted), its
model and the tools offered unknown (the history names neither, noted). A request with no answer after it,
or an empty one, is a failed call, noted; a block that cannot be read is left out,
noted with its line, and the rest imported."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from memory_core.errors import ImportFormatError
from memory_core.importers.common import (
    ParsedFile,
    SkippedRecord,
    Stages,
    fail,
    iso_time,
    names_zone,
)
from memory_core.importers.openai_jsonl import parse_records

REQUEST, RESPONSE = "TO LLM", "LLM RESPONSE"
_TIME = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?"
_HEADER = re.compile(rf"({REQUEST}|{RESPONSE}) ({_TIME})")
_FIRST = re.compile(rf"(?:[ \t]*\r?\n)*{REQUEST} {_TIME}\r?(?:\n|$)")  # (after blank lines)
SEPARATOR = "-------"
ROLES = {"SYSTEM": "system", "USER": "user", "ASSISTANT": "assistant"}
# the keys of a content part Aider writes (a text, its prompt-caching mark, an image)
_PART_KEY = re.compile(r"(type|text|cache_control|image_url|Image_url URL): (.*)")
_CACHED = "cache_control"


def looks_like_aider(text: str) -> bool:
    """Its first non-blank line is ``TO LLM <ISO time>``."""
    return _FIRST.match(text) is not None


@dataclass
class _Block:
    kind: str
    line: int
    time: str
    lines: list[tuple[int, str]] = field(default_factory=list)


def _blocks(text: str) -> list[_Block]:
    lines = text.split("\n")
    if lines and lines[-1] == "":  # (the file's last newline)
        lines.pop()
    blocks: list[_Block] = []
    for n, raw in enumerate(lines, 1):
        line = raw.removesuffix("\r")  # (a file written on Windows)
        if (m := _HEADER.fullmatch(line)) is not None:
            blocks.append(_Block(m[1], n, m[2]))
        elif blocks:
            blocks[-1].lines.append((n, line))
        elif line.strip():  # (looks_like_aider: only blank lines come before)
            raise fail(f"line {n}", f"expected '{REQUEST} <time>', got {line[:60]!r}")
    return blocks


def _split(line: str) -> tuple[str, str] | None:
    """A line's role and its text; None for a line no role starts. (A line that is
    just the role is an empty line whose trailing space an editor took.)"""
    role, space, rest = line.partition(" ")
    return (role, rest) if role in ROLES and (space or not rest) else None


def _bad_line(n: int, line: str, expected: str) -> ImportFormatError:
    return fail(f"line {n}", f"expected {expected}, got {line[:60]!r}")


def _parts(role: str, lines: list[tuple[int, str]], cached: list[int]) -> Any:
    """A list content as Aider writes it, its parts again (a text, or an image as an
    ``image_url`` part), or None when the lines are no such list; a single text part is
    its text, and a prompt-caching mark is left out (counted in ``cached``)."""
    items: list[dict[str, str]] = []
    last = ""
    for _, line in lines:
        m = _PART_KEY.fullmatch(line[len(role) + 1:]) if line.startswith(role + " ") else None
        if m is not None and (m[1] == "type" or items):
            if m[1] == "type":
                items.append({})
            items[-1][m[1]] = m[2]
            last = m[1]
        elif items and last == "text":  # a text's later lines, written without the role
            items[-1]["text"] += "\n" + line
        else:
            return None
    parts: list[dict[str, Any]] = []
    for item in items:
        if item["type"] == "text" and "text" in item:
            parts.append({"type": "text", "text": item["text"]})
        elif item["type"] == "image_url" and (url := item.get("Image_url URL",
                                                              item.get("image_url"))):
            parts.append({"type": "image_url", "image_url": {"url": url}})
        else:
            return None
        if _CACHED in item:
            cached.append(1)
    if len(parts) == 1 and parts[0]["type"] == "text":
        return parts[0]["text"]
    return parts


def _message(start: int, lines: list[tuple[int, str]], where: str, notes: list[str],
             cached: list[int]) -> dict[str, Any] | None:
    """The message after the separator on line ``start``; None (noted) for one whose
    role Aider did not write (an empty content)."""
    first = _split(lines[0][1]) if lines else None
    if first is None:
        if all(not line for _, line in lines):
            notes.append(f"{where}: the message at line {start} is empty, its role not "
                         "written: left out")
            return None
        raise _bad_line(lines[0][0], lines[0][1], "a message's line: its role in capitals "
                        f"({', '.join(ROLES)}) and a space, then its text")
    role = first[0]
    if first[1].startswith("type: ") and (parts := _parts(role, lines, cached)) is not None:
        return {"role": ROLES[role], "content": parts}
    texts: list[str] = []
    for n, line in lines:
        got = _split(line)
        if got is None or got[0] != role:
            raise _bad_line(n, line, f"the {role} message of line {start} to go on "
                                     f"('{role} ' and its text)")
        texts.append(got[1])
    if role == "ASSISTANT" and texts[-1].startswith("Function Call: {"):
        notes.append(f"{where}: the function call of the message at line {start} "
                     "(written as a Python value) not imported")
        texts.pop()
    return {"role": ROLES[role], "content": "\n".join(texts) if texts else None}


def _messages(block: _Block, where: str, notes: list[str],
              cached: list[int]) -> list[dict[str, Any]]:
    groups: list[tuple[int, list[tuple[int, str]]]] = []
    for n, line in block.lines:
        if line == SEPARATOR:
            groups.append((n, []))
        elif groups:
            groups[-1][1].append((n, line))
        else:
            raise _bad_line(n, line, f"'{SEPARATOR}' before the first message")
    found = (_message(n, lines, where, notes, cached) for n, lines in groups)
    return [m for m in found if m is not None]


def _answer(block: _Block) -> str:
    texts: list[str] = []
    for n, line in block.lines:
        got = _split(line)
        if got is None or got[0] != "ASSISTANT":
            if not line and len(block.lines) == 1:
                break  # (an empty answer: one empty line)
            raise _bad_line(n, line, "a line of the answer ('ASSISTANT ' and its text)")
        texts.append(got[1])
    return "\n".join(texts)


def _record(request: _Block, response: _Block | None, where: str, notes: list[str],
            cached: list[int]) -> dict[str, Any]:
    for block in (request, response or request):  # (a time the regex let by: month 13)
        iso_time(block.time, f"line {block.line}", f"the {block.kind} time")
    record: dict[str, Any] = {"request": {"messages": _messages(request, where, notes,
                                                                cached)},
                              "started_at": request.time}
    if response is None:
        record["error"] = (f"no {RESPONSE} block follows the request: Aider stopped "
                           "before the call ended")
    elif not (text := _answer(response)):
        record["error"] = (f"the {RESPONSE} block (line {response.line}) is empty: "
                           "nothing was received (Aider writes it when a call fails too)")
    else:
        record["response"] = {"choices": [{"message": {"role": "assistant",
                                                       "content": text}}]}
    if response is not None:
        record["finished_at"] = response.time
    if "error" in record:
        notes.append(f"{where}: no answer: {record['error']}")
    return record


def parse_aider(text: str, stages: Stages | None = None) -> ParsedFile:
    """An Aider LLM history's calls (see the module's docstring)."""
    blocks = _blocks(text)
    rows: list[tuple[str, Any]] = []
    notes: dict[str, list[str]] = {}
    cached: list[int] = []
    i = 0
    while i < len(blocks):
        block, where = blocks[i], f"line {blocks[i].line}"
        i += 1
        if block.kind == RESPONSE:
            rows.append((where, fail(where, f"an {RESPONSE} block with no {REQUEST} block "
                                            "before it")))
            continue
        answer = blocks[i] if i < len(blocks) and blocks[i].kind == RESPONSE else None
        i += answer is not None
        try:
            rows.append((where, _record(block, answer, where,
                                        notes.setdefault(where, []), cached)))
        except ImportFormatError as e:
            rows.append((where, e))
    if rows and all(isinstance(obj, ImportFormatError) for _, obj in rows):
        raise fail("file", f"an Aider LLM history none of whose {len(rows)} block(s) can "
                           f"be read; the first: {rows[0][1]}")
    skipped = [SkippedRecord(where="file", reason=(
        "Aider's LLM history names neither the model nor the tools offered: each "
        "run's are unknown"))]
    if any(not names_zone(b.time) for b in blocks):
        skipped.append(SkippedRecord(where="file", reason=(
            "its times have no time zone (Aider writes the local time): read as UTC")))
    if cached:
        skipped.append(SkippedRecord(where="file", reason=(
            f"{len(cached)} message(s) marked for prompt caching (cache_control): read "
            "as their text, the mark not imported")))
    parsed = parse_records(rows, skipped, stages)
    for ex in parsed.exchanges:
        ex.notes += notes.get(ex.where, [])
        ex.tools = None  # (not written: not "none offered")
        ex.params_known = False  # (nor the parameters sent)
    return parsed
