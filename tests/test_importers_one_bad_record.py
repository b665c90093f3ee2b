"""One element of a file that cannot be read is left out with a note, and the rest of
the file imports (the engineering bar: a note, not the refusal of the whole file); a
file none of whose calls can be read is refused with the first one's error, writing
nothing. Each container: JSON lines (a bad line anywhere, the first included), a HAR
file's entries, a file of HTTP interactions, and requests that fail the file-wide check
of tool results."""

from __future__ import annotations

import json
import re
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


def test_a_tool_result_answering_no_call_is_kept_as_sent() -> None:
    """A window trimmed of the call but not of its result, answered by a lenient server:
    what the model was sent is kept, its tool name unknown, and said — as are the
    conversation's later requests that send it again; nothing is left out."""
    orphan = {"role": "tool", "tool_call_id": "call_ghost", "content": "sunny"}
    first = chat("weather?", "checking", key="w")
    bad = chat("and now?", "still sunny", [{"role": "user", "content": "weather?"},
                                           {"role": "assistant", "content": "checking"},
                                           orphan], key="w")
    other = chat("hello", "hi", key="h")
    s = InMemoryStorage()
    report = import_text(s, "\n".join(json.dumps(r) for r in (first, bad, other)))
    assert len(report.runs_created) == 3 and not notes(report)
    said = [(k.where, k.reason) for k in report.skipped if "call_ghost" in k.reason]
    assert said == [("line 2", "message 2 (tool) answers tool call 'call_ghost', but no "
                               "earlier assistant message made that call; the model "
                               "answered the request all the same: kept as sent, its tool "
                               "name unknown")]
    (kept,) = [m for t in s.memory.list_threads() for m in s.memory.get_messages(t.id)
               if m.role == "tool"]
    (result,) = kept.tool_results()
    assert (result.call_id, result.name, result.result) == ("call_ghost", "", "sunny")


def test_a_result_naming_its_tool_but_answering_no_call_is_kept_and_said() -> None:
    """A "function" message names its tool; its tool_call_id answering no call (groq-ruby's
    cassette sends call_6dh1's result as call_b790) was imported without a word. It is
    kept as sent, and the note names the call of that tool before it."""
    call = {"id": "call_6dh1", "type": "function", "function": {
        "name": "get_weather_report", "arguments": '{"city": "Brisbane"}'}}
    asked = [{"role": "user", "content": "Weather in Brisbane?"},
             {"role": "assistant", "content": None, "tool_calls": [call]}]
    result = {"role": "function", "tool_call_id": "call_b790", "name": "get_weather_report",
              "content": "25 degrees"}
    record = chat("", "It is 25 C.")
    record["request"]["messages"] = [*asked, result]
    s = InMemoryStorage()
    report = import_text(s, json.dumps(record))
    assert len(report.runs_created) == 1
    assert [(k.where, k.reason) for k in report.skipped] == [
        ("line 1", "message 2 (tool) answers tool call 'call_b790', which no earlier "
                   "assistant message made (the call of get_weather_report before it is "
                   "'call_6dh1'): kept as sent")]
    assert any("25 degrees" in t for t in texts(s))


def test_a_record_left_out_is_no_link_for_a_later_one() -> None:
    """A Responses record that fails after its response was registered: a later
    request continuing that response must not be joined to the record read next."""
    def resp(rid: str, text: str, inp: str, **req: Any) -> dict[str, Any]:
        return {"request": {"model": "m", "input": inp, **req}, "response": {
            "id": rid, "object": "response", "created_at": 1767600000, "model": "m",
            "output": [{"type": "message", "id": f"msg_{rid}", "role": "assistant",
                        "content": [{"type": "output_text", "text": text}]}]}}
    lines = [resp("resp_a", "A", "hi", temperature="hot"), resp("resp_b", "B", "other"),
             resp("resp_c", "C", "next", previous_response_id="resp_a")]
    s = InMemoryStorage()
    report = import_text(s, "\n".join(json.dumps(r) for r in lines))
    assert len(report.runs_created) == 2 and len(report.threads_created) == 2
    threads = [[m.text() for m in s.memory.get_messages(t)] for t in report.threads_created]
    assert ["other", "B"] in threads and all("next" not in t or "other" not in t
                                             for t in threads)


def test_an_otlp_json_lines_export_cut_off_mid_line_keeps_its_whole_lines() -> None:
    from tests.test_importers import FIX  # (the OTLP fixture, one export a line)
    doc = json.dumps(json.loads((FIX / "otel_genai.json").read_text(encoding="utf-8")))
    s = InMemoryStorage()
    report = import_text(s, doc + "\n" + doc[: len(doc) // 2] + "\n")
    assert report.runs_created
    assert [k.where for k in report.skipped if k.reason.startswith("not imported: invalid")
            ] == ["line 2"]


def test_an_http_interaction_log_whose_first_line_is_cut_is_still_read_as_one() -> None:
    def call(q: str) -> str:
        rec = chat(q, "a")
        return json.dumps({"request": {"method": "POST", "url": URL, "body": rec["request"]},
                           "response": {"status": 200, "body": rec["response"]}})
    report = import_text(InMemoryStorage(), "\n".join([call("q0")[:50], call("q1"),
                                                       call("q2")]))
    assert len(report.runs_created) == 2
    assert [k.where for k in report.skipped if k.reason.startswith("not imp")] == ["line 1"]


def test_a_first_line_holding_what_cannot_be_stored_is_a_line_not_a_document() -> None:
    """A NUL in the first record: that line is left out (it was read as the start of a
    document printed over several lines: the whole file parsed, then refused)."""
    first = json.dumps(chat("a\u0000b", "x"))
    report = import_text(InMemoryStorage(), "\n".join([first, json.dumps(chat("q", "a"))]))
    assert len(report.runs_created) == 1
    [(where, reason)] = notes(report)
    assert where == "line 1" and "contains a NUL character" in reason
    with pytest.raises(ImportFormatError, match=r"^line 1: the string at .* NUL"):
        import_text(InMemoryStorage(), first + "\n" + first)


def test_notes_come_in_the_file_s_order() -> None:
    """What reading noted (line 2 left out) and what a call's own reading noted (line
    1's second choice, line 3's) are listed by line, not by when they were made."""
    two = chat("q0", "a0")
    two["response"]["choices"].append({"index": 1, "message": {"role": "assistant",
                                                                "content": "b0"}})
    three = chat("q2", "a2")
    three["response"]["choices"].append({"index": 1, "message": {"role": "assistant",
                                                                  "content": "b2"}})
    report = import_text(InMemoryStorage(), "\n".join(
        [json.dumps(two), "{not json", json.dumps(three)]))
    assert [k.where for k in report.skipped] == ["line 1", "line 2", "line 3"]


def test_a_call_with_no_messages_that_the_server_refused_says_so() -> None:
    """A recorded call sending ``"messages": []`` answered 400 (envoyproxy/ai-gateway's
    cassette): its refusal said only "'messages' is empty"; it says the server refused
    the call, in the server's words. Beside a good call it is a note, alone the error."""
    refused = {"request": {"model": "m", "messages": []}, "error": {
        "message": "Invalid 'messages': empty array.", "type": "invalid_request_error"}}
    said = ("'messages' is empty: the server refused the call (Invalid 'messages': empty "
            "array.); there is no conversation to import")
    with pytest.raises(ImportFormatError, match=re.escape(f"line 1: {said}")):
        import_text(InMemoryStorage(), json.dumps(refused))
    report = import_text(InMemoryStorage(), "\n".join(
        json.dumps(r) for r in (chat("hello", "hi"), refused)))
    [(where, note)] = notes(report)
    assert where == "line 2" and note.startswith(f"not imported: {said}")


def test_why_says_the_kept_orphan_result_s_tool_is_not_recorded() -> None:
    """`why` said "in the result of tool  (call call_ghost)", a blank for its name."""
    from memory_core.analysis.forgotten import why_forgotten

    orphan = {"role": "tool", "tool_call_id": "call_ghost", "content": "sunny at 42"}
    s = InMemoryStorage()
    report = import_text(s, json.dumps(chat("and now?", "still sunny", [
        {"role": "user", "content": "weather?"}, orphan])))
    e = why_forgotten(s, report.runs_created[0], "sunny at 42")
    assert e.fate == "sent-by-client" and e.evidence["part"] == "tool-result"
    assert "the result of a tool whose name is not recorded (call call_ghost)" in e.sentence
    assert "tool" not in e.evidence
