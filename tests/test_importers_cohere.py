"""Cohere's v2 Chat API imports as the chat-completions traffic it is equivalent to
(the real cassettes, tests/fixtures/imports/real/openllmetry-cohere-*:
test_importers_real.py): records without a URL are told by their answer's shape, a tool
result's document parts are its text, the tool_plan is noted and kept out of both the
answer and the history that repeats it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memory_core.errors import ImportFormatError
from memory_core.importers import import_text
from memory_core.storage.inmemory import InMemoryStorage

CALL = {"id": "lookup_1", "type": "function",
        "function": {"name": "lookup", "arguments": "{\"q\": \"otters\"}"}}


def _answer(message: dict[str, Any], finish: str = "COMPLETE") -> dict[str, Any]:
    return {"id": "r1", "message": {"role": "assistant", **message}, "finish_reason": finish,
            "usage": {"billed_units": {"input_tokens": 5, "output_tokens": 2},
                      "tokens": {"input_tokens": 50, "output_tokens": 9}}}


def test_a_tool_loop_of_records_with_document_results() -> None:
    first = {"request": {"model": "command-r-plus", "messages": [
        {"role": "user", "content": "Find otters."}]},
        "response": _answer({"tool_plan": "I will look it up.", "tool_calls": [CALL]},
                            "TOOL_CALL")}
    second = {"request": {"model": "command-r-plus", "messages": [
        {"role": "user", "content": "Find otters."},
        {"role": "assistant", "tool_plan": "I will look it up.", "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "lookup_1", "content": [
            {"type": "document", "document": {"data": "{\"found\": 3}"}}]}]},
        "response": _answer({"content": [{"type": "text", "text": "Three otters."}]})}
    s = InMemoryStorage()
    report = import_text(s, "\n".join(json.dumps(r) for r in (first, second)),
                         name="cohere.jsonl")
    assert report.apis == ["cohere"]
    [thread] = report.threads_created  # the plan kept out of both: one thread
    msgs = [m.as_message() for m in s.memory.get_messages(thread)]
    assert [m.role for m in msgs] == ["user", "assistant", "tool", "assistant"]
    assert [r.result for r in msgs[2].tool_results()] == ["{\"found\": 3}"]
    step = s.runs.get(f"{report.runs_created[1]}:step:0")
    assert step["response"]["usage"] == {"input_tokens": 50, "output_tokens": 9}
    assert any("tool_plan not imported" in k.reason for k in report.skipped)


def test_a_bad_stream_is_refused_naming_it() -> None:
    stream = ('data: {"type":"message-start","delta":{"message":{"role":"assistant"}}}\n\n'
              'data: {"type":"tool-call-delta","index":0,"delta":{"message":{"tool_calls":'
              '{"function":{"arguments":"{"}}}}}\n\n')
    record = {"request": {"model": "command-r", "messages": [
        {"role": "user", "content": "hi"}]}, "response": stream}
    with pytest.raises(ImportFormatError, match=r"line 1: stream: tool-call-delta 0 before "
                                                r"its tool-call-start"):
        import_text(InMemoryStorage(), json.dumps(record), name="c.jsonl")
