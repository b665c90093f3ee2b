"""Objects of an agent framework's own (an outside trial's files): the OpenAI Agents
SDK's run result dumped to JSON is read as its model calls; an evaluation row
(``{"input", "output"}``) and an agent trajectory are refused saying what they are —
one was stored as a failed Responses API run, its answer a request parameter; a
failed call whose error is plain text is a failed run, not "body invalid JSON"
(the real run result: tests/fixtures/imports/real/agentops-*)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memory_core.errors import ImportFormatError
from memory_core.importers import import_text
from memory_core.storage.inmemory import InMemoryStorage


def _message(text: str, mid: str) -> dict[str, Any]:
    return {"id": mid, "type": "message", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


CALL = {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "get_weather",
        "arguments": '{"city": "Oslo"}', "status": "completed"}


def _run(**extra: Any) -> dict[str, Any]:
    return {"input": "Weather in Oslo?", "final_output": "Snowing in Oslo.",
            "raw_responses": [
                {"response_id": "resp_1", "output": [CALL],
                 "usage": {"requests": 1, "input_tokens": 40, "output_tokens": 9,
                           "total_tokens": 49}},
                {"response_id": "resp_2", "output": [_message("Snowing in Oslo.", "msg_2")],
                 "usage": {"requests": 1, "input_tokens": 70, "output_tokens": 5,
                           "total_tokens": 75}}], **extra}


RESULT = {"type": "tool_call_output_item", "output": "snow",
          "raw_item": {"type": "function_call_output", "call_id": "call_1", "output": "snow"}}


def test_a_run_result_is_its_model_calls_in_one_thread() -> None:
    s = InMemoryStorage()
    report = import_text(s, json.dumps(_run(new_items=[RESULT])), name="run.json")
    assert len(report.runs_created) == 2 and len(report.threads_created) == 1
    msgs = [m.as_message() for m in s.memory.get_messages(report.threads_created[0])]
    assert [m.role for m in msgs] == ["user", "assistant", "tool", "assistant"]
    [call] = msgs[1].tool_calls()
    [result] = msgs[2].tool_results()
    assert (call.name, result.call_id, result.name, result.result) == \
        ("get_weather", call.id, "get_weather", "snow")
    assert msgs[3].text() == "Snowing in Oslo."
    usages = [s.runs.get(f"{r}:step:0")["response"]["usage"] for r in report.runs_created]
    assert usages == [{"input_tokens": 40, "output_tokens": 9},
                      {"input_tokens": 70, "output_tokens": 5}]
    # the run result records no tools: not "none offered"
    memctx = s.runs.get(f"{report.runs_created[0]}:memctx")
    assert "tools" in memctx["unknown_fields"]
    assert not any("did not offer" in k.reason for k in report.skipped)


def test_a_tool_result_missing_from_the_run_s_items_is_noted() -> None:
    s = InMemoryStorage()
    report = import_text(s, json.dumps(_run()), name="run.json")
    assert len(report.runs_created) == 2
    assert any("the result of call 'call_1' is not among the run's items" in k.reason
               for k in report.skipped)


def test_a_malformed_raw_response_is_named() -> None:
    with pytest.raises(ImportFormatError, match=r"response 1: a raw response must be an "
                                                r"object with an 'output' list"):
        import_text(InMemoryStorage(), json.dumps(_run(raw_responses=[
            {"output": [_message("a", "m1")]}, {"output": "b"}])), name="run.json")


def test_evaluation_rows_are_refused_saying_what_they_are() -> None:
    rows = "\n".join(json.dumps(r) for r in ({"input": "What is 2+2?", "output": "4"},
                                             {"input": "Capital of Peru?", "output": "Lima"}))
    s = InMemoryStorage()
    with pytest.raises(ImportFormatError) as e:
        import_text(s, rows, name="rows.jsonl")
    assert "line 1: this looks like an evaluation row (an input and the output it got), " \
           "not a recorded model call" in str(e.value)
    assert not s.memory.list_threads() and not s.runs.list_runs()


def test_an_input_alone_is_refused_not_stored_as_a_failed_call() -> None:
    """An eval dataset row ({"input", "expected_output"}) and Genkit's flow test
    ({"name", "input": "", "commands", "result", "trace"}) were stored as failed
    Responses API calls, their other keys as "recorded parameters" (outside trial 57)."""
    for text, beside in (
            ('{"input": "What is 2+2?", "expected_output": "4"}\n'
             '{"input": "Capital of Peru?", "expected_output": "Lima"}\n', "expected_output"),
            (json.dumps({"name": "flow", "input": "", "commands": [], "result": {},
                         "trace": {}}), "commands, name, result, trace")):
        s = InMemoryStorage()
        with pytest.raises(ImportFormatError) as e:
            import_text(s, text, name="rows.jsonl")
        assert f"this looks like an input with no model, answer or error (beside it: " \
               f"{beside}) — an evaluation dataset row" in str(e.value), str(e.value)
        assert not s.memory.list_threads() and not s.runs.list_runs()
    # a request with its model and no answer is still a call that failed
    report = import_text(s := InMemoryStorage(), '{"input": "hi", "model": "gpt-4o"}',
                         name="r.jsonl")
    assert s.runs.require_run(report.runs_created[0]).status == "failed"


def test_an_object_sharing_one_key_with_a_format_names_no_closest_one() -> None:
    trajectory = {"session_id": "s1", "actor": {"name": "x"},
                  "events": [{"kind": "user", "text": "hi"}]}
    with pytest.raises(ImportFormatError) as e:
        import_text(InMemoryStorage(), json.dumps(trajectory), name="t.json")
    said = str(e.value)
    assert "keys actor, events, session_id, which is no record" in said
    assert "shares too little with any format this importer reads to name the closest" \
        in said
    assert "LangSmith" not in said and "the commonest is an OpenAI chat-completions" in said


def test_a_failed_call_s_plain_text_error_is_a_failed_run() -> None:
    cassette = """interactions:
- request:
    body: '{"model": "m", "messages": [{"role": "user", "content": "hi"}]}'
    method: POST
    uri: https://router.example/v1/chat/completions
  response:
    body:
      string: 'Failed to deserialize the JSON body into the target type'
    headers:
      Content-Type:
      - text/plain; charset=utf-8
    status:
      code: 422
      message: Unprocessable Entity
version: 1
"""
    s = InMemoryStorage()
    report = import_text(s, cassette, name="c.yaml")
    [rid] = report.runs_created
    run = s.runs.require_run(rid)
    assert run.status == "failed"
    assert run.error == ("HTTP 422 Unprocessable Entity: Failed to deserialize the JSON "
                         "body into the target type")
    # a 200 whose body is no JSON is still refused as malformed
    with pytest.raises(ImportFormatError, match="response: body invalid JSON"):
        import_text(InMemoryStorage(), cassette.replace("code: 422", "code: 200"),
                    name="c.yaml")
