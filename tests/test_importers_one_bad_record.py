"""One element of a file that cannot be read is left out with a note, and the rest of
the file imports (the engineering bar: a note, not the refusal of the whole file); a
file none of whose calls can be read is refused with the first one's error, writing
nothing. Each container: JSON lines (a bad line anywhere, the first included), a HAR
file's entries, a file of HTTP interactions, and requests that fail the file-wide check
of tool results."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memory_core.errors import ImportFormatError
from memory_core.importers import import_text
from memory_core.storage.inmemory import InMemoryStorage

URL = "https://api.openai.com/v1/chat/completions"


def chat(ask: str, answer: str, history: list[dict[str, Any]] | None = None,
         key: str | None = None) -> dict[str, Any]:
    rec: dict[str, Any] = {"request": {"model": "gpt-4o", "messages": [
        *(history or []), {"role": "user", "content": ask}]}, "response": {
        "id": f"c-{ask}", "object": "chat.completion", "model": "gpt-4o", "choices": [
            {"index": 0, "message": {"role": "assistant", "content": answer},
             "finish_reason": "stop"}]}}
    if key is not None:
        rec["metadata"] = {"thread_id": key}
    return rec


def texts(s: InMemoryStorage) -> list[str]:
    return [str(m.content) for t in s.memory.list_threads() for m in s.memory.get_messages(t.id)]


def notes(report: Any) -> list[tuple[str, str]]:
    return [(k.where, k.reason) for k in report.skipped if k.reason.startswith("not imp")]


@pytest.mark.parametrize("bad_at", [0, 1, 2])
def test_a_line_that_is_no_json_is_noted_wherever_it_is(bad_at: int) -> None:
    lines = [json.dumps(chat(f"q{i}", f"a{i}")) for i in range(3)]
    lines[bad_at] = lines[bad_at][:40]  # a line cut off while it was written
    s = InMemoryStorage()
    report = import_text(s, "\n".join(lines) + "\n")
    assert len(report.runs_created) == 2
    [(where, reason)] = notes(report)
    assert where == f"line {bad_at + 1}" and reason.startswith("not imported: invalid JSON")
    assert f"q{bad_at}" not in texts(s)
    assert {f"q{i}" for i in range(3) if i != bad_at} <= set(texts(s))


def test_a_file_of_only_bad_lines_is_refused_writing_nothing() -> None:
    s = InMemoryStorage()
    with pytest.raises(ImportFormatError, match=r"^line 1: message 0: unknown role 'robot'"):
        import_text(s, json.dumps({"messages": [{"role": "robot", "content": "beep"}]})
                    + "\n" + json.dumps({"messages": [{"role": "robot", "content": "b"}]}))
    assert s.memory.list_threads() == [] and s.runs.list_runs() == []


def test_a_broken_pretty_printed_document_is_still_one_error() -> None:
    text = json.dumps([chat("q", "a")], indent=2)[:-20]  # not lines: the file is cut
    with pytest.raises(ImportFormatError, match=r"^file: invalid JSON"):
        import_text(InMemoryStorage(), text)


def _entry(request: Any, status: Any = 200) -> dict[str, Any]:
    return {"startedDateTime": "2026-01-01T00:00:00Z",
            "request": {"method": "POST", "url": URL,
                        "postData": {"mimeType": "application/json",
                                     "text": json.dumps(request["request"])}},
            "response": {"status": status, "content": {
                "mimeType": "application/json", "text": json.dumps(request["response"])}}}


def test_a_har_entry_that_cannot_be_read_is_noted() -> None:
    entries = [_entry(chat("q0", "a0")), _entry(chat("q1", "a1"), status="OK"),
               _entry(chat("q2", "a2"))]
    s = InMemoryStorage()
    report = import_text(s, json.dumps({"log": {"version": "1.2", "entries": entries}}))
    assert len(report.runs_created) == 2
    assert notes(report) == [("entry 2", "not imported: response 'status' must be a number, "
                                         "got 'OK'")]
    assert "q1" not in texts(s)
    with pytest.raises(ImportFormatError, match=r"^entry 1: response 'status' must be a "):
        import_text(InMemoryStorage(), json.dumps({"log": {"entries": entries[1:2]}}))


def test_an_http_interaction_that_cannot_be_read_is_noted() -> None:
    def call(rec: dict[str, Any], status: Any = 200) -> str:
        return json.dumps({"request": {"method": "POST", "url": URL, "body": rec["request"]},
                           "response": {"status": status, "body": rec["response"]}})
    lines = [call(chat("q0", "a0")), call(chat("q1", "a1"), status=[200]),
             call(chat("q2", "a2"))]
    s = InMemoryStorage()
    report = import_text(s, "\n".join(lines))
    assert len(report.runs_created) == 2
    [(where, reason)] = notes(report)
    assert where == "line 2" and "status must be a number" in reason
    assert "q1" not in texts(s)


def test_a_tool_result_answering_no_call_leaves_out_its_request_only() -> None:
    """Its conversation's later requests send it again, so they are left out too; a
    conversation without it imports whole."""
    orphan = {"role": "tool", "tool_call_id": "call_ghost", "content": "sunny"}
    first = chat("weather?", "checking", key="w")
    bad = chat("and now?", "still sunny", [{"role": "user", "content": "weather?"},
                                           {"role": "assistant", "content": "checking"},
                                           orphan], key="w")
    other = chat("hello", "hi", key="h")
    s = InMemoryStorage()
    report = import_text(s, "\n".join(json.dumps(r) for r in (first, bad, other)))
    assert len(report.runs_created) == 2
    assert notes(report) == [("line 2", "not imported: message 2 (tool) answers tool call "
                                        "'call_ghost', but no earlier assistant message "
                                        "made that call")]
    assert "sunny" not in " ".join(texts(s)) and {"hello", "weather?"} <= set(texts(s))
