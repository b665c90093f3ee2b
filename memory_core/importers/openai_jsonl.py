"""Reading OpenAI chat-completions logs: JSONL, one request/response per line, in the
wrapped form ``{"request", "response", "metadata"}`` or the flat ``{"messages", "response"}``.

Each line becomes an ``Exchange``; any malformed line rejects the whole file with an
``ImportFormatError`` naming the line."""

from __future__ import annotations

import json
from typing import Any

from memory_core.importers.common import (
    Exchange,
    ParsedFile,
    SkippedRecord,
    fail,
    from_unix,
    openai_message,
    openai_messages,
    split_instructions,
)
from memory_core.models.base import Usage

THREAD_KEYS = ("thread_id", "conversation_id")
RESOURCE_KEYS = ("resource_id", "user_id", "user")


def _str_field(where: str, obj: dict[str, Any], name: str) -> str | None:
    value = obj.get(name)
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str) or not value:
        raise fail(where, f"'{name}' must be a non-empty string, got {value!r}")
    return value


def _first(where: str, sources: list[dict[str, Any]], names: tuple[str, ...]) -> str | None:
    for src in sources:
        for name in names:
            value = _str_field(where, src, name)
            if value is not None:
                return value
    return None


def _usage(raw: Any) -> tuple[Usage, bool]:
    if not isinstance(raw, dict):
        return Usage(), False
    inp = raw.get("prompt_tokens", raw.get("input_tokens"))
    out = raw.get("completion_tokens", raw.get("output_tokens"))
    if isinstance(inp, int) and isinstance(out, int):
        return Usage(input_tokens=inp, output_tokens=out), True
    return Usage(), False


def _looks_like_batch(obj: dict[str, Any]) -> bool:
    return "custom_id" in obj and ("body" in obj or isinstance(obj.get("response"), dict)
                                   and "body" in obj["response"])


def parse_line(obj: Any, where: str, index: int) -> Exchange:
    if not isinstance(obj, dict):
        raise fail(where, f"expected a JSON object, got {type(obj).__name__}")
    request = obj.get("request", obj)
    if not isinstance(request, dict):
        raise fail(where, f"'request' must be an object, got {type(request).__name__}")
    if "messages" not in request:
        raise fail(where, "missing 'messages' (expected {\"request\": {\"messages\": [...]}, "
                          "\"response\": {...}} or {\"messages\": [...], \"response\": {...}})")
    notes: list[str] = []
    messages = openai_messages(request["messages"], where, notes)
    if not messages:
        raise fail(where, "'messages' is empty")
    metadata = obj.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise fail(where, f"'metadata' must be an object, got {type(metadata).__name__}")
    sources = [obj, metadata, request]

    response = obj.get("response")
    error = obj.get("error")
    reply = None
    usage, usage_known = Usage(), False
    finish = None
    created = None
    model = _str_field(where, request, "model")
    if response is None:
        if not error:
            raise fail(where, "missing 'response' (expected {\"choices\": [{\"message\": "
                              "...}]})")
    else:
        if not isinstance(response, dict):
            raise fail(where, f"'response' must be an object, got {type(response).__name__}")
        choices = response.get("choices")
        if not isinstance(choices, list) or not choices:
            raise fail(where, "response has no 'choices'")
        if len(choices) > 1:
            notes.append(f"{where}: {len(choices) - 1} alternative choice(s) not imported")
        choice = choices[0]
        if not isinstance(choice, dict) or "message" not in choice:
            raise fail(where, "response choice 0 has no 'message'")
        raw_reply = choice["message"]
        if isinstance(raw_reply, dict) and "role" not in raw_reply:
            raw_reply = {**raw_reply, "role": "assistant"}
        reply = openai_message(raw_reply, f"{where}: response", notes)
        if reply.role != "assistant":
            raise fail(where, f"response message has role {reply.role!r}, expected "
                              "'assistant'")
        finish = choice.get("finish_reason") if isinstance(choice.get("finish_reason"),
                                                           str) else None
        usage, usage_known = _usage(response.get("usage"))
        model = _str_field(where, response, "model") or model
        if response.get("created") is not None:
            created = from_unix(response["created"], where, "response.created")
    instructions, history = split_instructions(messages)
    temperature = request.get("temperature")
    seed = request.get("seed")
    return Exchange(
        where=where, index=index, instructions=instructions, history=history,
        response=reply,
        thread_key=_first(where, [obj, metadata], THREAD_KEYS),
        resource_id=_first(where, sources, RESOURCE_KEYS),
        model=model, usage=usage, usage_known=usage_known, finish_reason=finish,
        temperature=float(temperature) if isinstance(temperature, int | float)
        and not isinstance(temperature, bool) else None,
        seed=seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
        started_at=created, finished_at=created,
        error=None if reply is not None else (error if isinstance(error, str)
                                              else json.dumps(error, sort_keys=True)),
        notes=notes)


def _join_batch(rows: list[tuple[int, Any]]) -> tuple[list[tuple[int, Any]],
                                                       list[SkippedRecord]]:
    """OpenAI Batch files: an input line (``custom_id``, ``body``) and its output line
    (``custom_id``, ``response.body``) become one request/response record, so a file
    made by concatenating a batch's input and output files imports directly."""
    outputs: dict[str, tuple[int, dict[str, Any]]] = {}
    for n, obj in rows:
        if isinstance(obj, dict) and _looks_like_batch(obj) and "body" not in obj:
            cid = str(obj["custom_id"])
            if cid in outputs:
                raise fail(f"line {n}", f"batch output for custom_id {cid!r} repeats "
                                        f"line {outputs[cid][0]}")
            outputs[cid] = (n, obj)
    joined: list[tuple[int, Any]] = []
    skipped: list[SkippedRecord] = []
    used: set[str] = set()
    for n, obj in rows:
        if not (isinstance(obj, dict) and _looks_like_batch(obj)):
            joined.append((n, obj))
            continue
        if "body" not in obj:
            continue  # an output line: joined with its input below
        cid = str(obj["custom_id"])
        body = obj["body"]
        if not isinstance(body, dict):
            raise fail(f"line {n}", f"batch 'body' must be an object, got {body!r}")
        if cid not in outputs:
            skipped.append(SkippedRecord(where=f"line {n}", reason=f"batch request "
                                         f"{cid!r} has no output line in this file"))
            continue
        used.add(cid)
        response = outputs[cid][1].get("response") or {}
        record: dict[str, Any] = {"request": body,
                                  "metadata": body.get("metadata") or {}}
        if response.get("status_code", 200) == 200 and isinstance(response.get("body"), dict):
            record["response"] = response["body"]
        else:
            record["error"] = outputs[cid][1].get("error") or response.get("body") or \
                f"status {response.get('status_code')}"
        joined.append((n, record))
    for cid, (n, _) in outputs.items():
        if cid not in used:
            raise fail(f"line {n}", f"batch output for custom_id {cid!r} has no input line "
                                    "in this file (concatenate the batch input file first)")
    return joined, skipped


def parse_openai_jsonl(text: str) -> ParsedFile:
    rows: list[tuple[int, Any]] = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append((n, json.loads(line)))
        except ValueError as e:
            raise fail(f"line {n}", f"invalid JSON: {e}") from None
    rows, skipped = _join_batch(rows)
    exchanges = [parse_line(obj, f"line {n}", i) for i, (n, obj) in enumerate(rows)]
    if not exchanges:
        raise fail("file", "no records (expected one JSON object per line)")
    return ParsedFile(exchanges, skipped)
