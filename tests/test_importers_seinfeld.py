"""Braintrust's seinfeld cassettes (its JS SDK's e2e recorder: ``{"entries": [...],
"meta"}``, each body a payload by kind), which were refused whole ("a JSON object with
keys entries, meta, which is no record this importer reads"): every kind the recorder
writes read, each entry read as an HTTP interaction, a hand-edited entry that cannot be
read a note while the rest imports. The real files are in tests/fixtures/imports/real
(``btjs-*``); their expected imports are in test_importers_real.py."""

from __future__ import annotations

import base64
import copy
import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from memory_core.errors import ImportFormatError
from memory_core.importers import import_file, import_text
from memory_core.storage.inmemory import InMemoryStorage

REAL = Path(__file__).parent / "fixtures" / "imports" / "real"
GROQ = REAL / "btjs-groq-v1.cassette.json"
COHERE = REAL / "btjs-cohere-v8.cassette.json"

_ASK = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
_ANSWER = {"id": "c1", "object": "chat.completion", "model": "m", "choices": [
    {"index": 0, "message": {"role": "assistant", "content": "hello"},
     "finish_reason": "stop"}], "usage": {"prompt_tokens": 3, "completion_tokens": 1}}


def _load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _imported(doc: Any) -> tuple[InMemoryStorage, Any]:
    s = InMemoryStorage()
    return s, import_text(s, json.dumps(doc, indent=2), name="x.cassette.json")


def _texts(s: InMemoryStorage, report: Any) -> list[list[str]]:
    return [[f"{m.role}: {m.text()}" for m in s.memory.get_messages(t)]
            for t in report.threads_created]


def _entry(response_body: dict[str, Any], *, status: int = 200,
           headers: dict[str, str] | None = None, request_body: Any = None,
           at: str = "2026-08-04T03:12:59.810Z", **response: Any) -> dict[str, Any]:
    """An entry as the recorder writes it (keys sorted), to a chat-completions URL."""
    return {"callIndex": 0, "id": "0123456789abcdef",
            "matchKey": "POST api.example.com/v1/chat/completions", "recordedAt": at,
            "request": {"body": request_body or {"kind": "json", "value": _ASK},
                        "headers": {}, "method": "POST",
                        "url": "https://api.example.com/v1/chat/completions"},
            "response": {"body": response_body, "headers": headers or {},
                         "status": status, **response}}


def _cassette(*entries: Any) -> dict[str, Any]:
    return {"entries": list(entries), "meta": {"createdAt": "2026-07-06T14:01:21.237Z"}}


def test_every_body_kind_the_recorder_writes_is_read() -> None:
    """``json``, ``text``, ``sse`` (events without their blank line), ``base64`` (bytes
    already decoded: a ``content-encoding`` header does not apply), ``empty``; the
    entry's ``recordedAt`` dates a call whose body has no time, and ``statusText`` is
    the failed call's reason."""
    answer = json.dumps(_ANSWER)
    chunk = {"id": "c2", "object": "chat.completion.chunk", "model": "m", "choices": [
        {"index": 0, "delta": {"content": "streamed"}, "finish_reason": "stop"}]}
    undated = {k: v for k, v in _ANSWER.items() if k != "created"}
    doc = _cassette(
        _entry({"kind": "json", "value": undated}),
        _entry({"kind": "text", "value": answer}, at="2026-08-04T03:13:00.000Z"),
        _entry({"kind": "sse", "chunks": [f"data: {json.dumps(chunk)}", "data: [DONE]"]},
               at="2026-08-04T03:13:01.000Z"),
        _entry({"kind": "base64", "value": base64.b64encode(answer.encode()).decode(),
                "contentType": "application/octet-stream"},
               headers={"content-encoding": "gzip"}, at="2026-08-04T03:13:02.000Z"),
        _entry({"kind": "empty"}, status=500, statusText="Internal Server Error",
               at="2026-08-04T03:13:03.000Z"),
        _entry({"kind": "json", "value": _ANSWER},
               request_body={"kind": "empty"}, at="2026-08-04T03:13:04.000Z"))
    s, report = _imported(doc)
    assert len(report.runs_created) == 5
    runs = [s.runs.require_run(r) for r in report.runs_created]
    assert [r.started_at.isoformat() for r in runs][:2] == [
        "2026-08-04T03:12:59.810000+00:00", "2026-08-04T03:13:00+00:00"]
    answers = [s.runs.get(f"{r}:step:0") for r in report.runs_created]
    assert [a["response"]["text"] if a else None for a in answers] == [
        "hello", "hello", "streamed", "hello", None]
    assert runs[4].status == "failed" and "HTTP 500 Internal Server Error" in (
        runs[4].error or "")
    assert ("file: entry 5", "the request body to https://api.example.com/v1/chat/"
            "completions was not recorded: the conversation is not in the recording") in {
        (k.where, k.reason) for k in report.skipped}


def test_a_hand_edited_entry_that_cannot_be_read_is_a_note() -> None:
    """Each entry that cannot be read — a body of an unknown kind, base64 that is none,
    SSE chunks that are no texts, a body kept in a sidecar file beside the cassette, a
    request without its URL or that is no object, a ``recordedAt`` that is no time, an
    entry that is no object — is a note naming it and why;
    the others import. A broken first entry does not hide the file's kind."""
    doc = _load(GROQ)
    good = len(doc["entries"])
    broken = copy.deepcopy(doc["entries"][0])
    variants: list[tuple[Any, str]] = []
    for body, why in (
            ({"kind": "xml", "value": "<a/>"}, "a seinfeld body must be an object whose "
             "'kind' is one of empty, json, text, sse, base64, binary; got kind 'xml'"),
            ({"kind": "base64", "value": "not base64!"}, "a 'base64' body's value is not "
             "base64"),
            ({"kind": "sse", "chunks": [{"data": "x"}]}, "an 'sse' body's 'chunks' must be "
             "a list of texts"),
            ({"kind": "binary", "path": "groq-v1.cassette.blobs/ab.bin", "sha256": "ab" * 32,
              "contentType": "text/event-stream"},
             "the body (text/event-stream) was kept outside the cassette, in the file "
             "'groq-v1.cassette.blobs/ab.bin' beside it")):
        entry = copy.deepcopy(broken)
        entry["response"]["body"] = body
        variants.append((entry, "response: " + why))
    no_url = copy.deepcopy(broken)
    del no_url["request"]["url"]
    variants.append((no_url, "its request has no URL"))
    no_request = {**broken, "request": "POST /chat/completions"}
    variants.append((no_request, "its 'request' must be an object, got str"))
    variants.append((42, "an HTTP interaction must be an object, got int"))
    doc["entries"] = [v for v, _ in variants] + doc["entries"]
    s, report = _imported(doc)
    assert len(report.runs_created) == good
    assert _texts(s, report)[0] == ["user: Reply with exactly OK.", "assistant: OK"]
    notes = {k.where: k.reason for k in report.skipped}
    for i, (_, why) in enumerate(variants):
        assert why in notes.get(f"file: entry {i}", ""), (i, notes)


def test_a_request_body_kept_beside_the_cassette_is_a_note_naming_the_file() -> None:
    doc = _load(COHERE)
    doc["entries"][1]["request"]["body"] = {
        "kind": "binary", "path": "cohere-v8.cassette.blobs/cd.bin", "sha256": "cd" * 32}
    s, report = _imported(doc)
    assert len(report.runs_created) == 1
    assert any(k.where == "file: entry 1" and "request: the body was kept outside the "
               "cassette, in the file 'cohere-v8.cassette.blobs/cd.bin'" in k.reason
               for k in report.skipped), report.skipped


def test_a_cassette_of_entries_none_of_which_reads_is_refused_naming_them() -> None:
    entry = _entry({"kind": "json", "value": _ANSWER})
    entry["response"]["body"] = {"kind": "binary", "path": "p.bin", "sha256": "0" * 64}
    with pytest.raises(ImportFormatError, match="entry 0: response: the body was kept "
                                                "outside the cassette"):
        _imported(_cassette(entry))


def test_a_gzipped_cassette_file_reads_as_the_file_it_holds(tmp_path: Path) -> None:
    path = tmp_path / "groq-v1.cassette.json.gz"
    path.write_bytes(gzip.compress(GROQ.read_bytes()))
    report = import_file(InMemoryStorage(), path)
    assert len(report.runs_created) == 4 and report.apis == ["openai"]


def test_any_listed_call_tells_the_list_and_one_that_is_none_is_a_note() -> None:
    """The same for the other documents that list their calls (Mastra's
    ``recordings``): a first one edited past reading was the refusal of the file."""
    doc = _load(REAL / "mastra-provider-acceptance-anthropic.json")
    calls = len(doc["recordings"])
    doc["recordings"][0]["request"].pop("url")
    s, report = _imported(doc)
    assert len(report.runs_created) == calls - 1
    assert ("file: recording 0", "not imported: its request has no URL (no 'url', 'uri', "
            "'urlPath', 'urlPattern', 'urlPathPattern', 'path')") in {
        (k.where, k.reason) for k in report.skipped}
