"""AutoGen's recorded sessions (``ChatCompletionClientRecorder``'s JSON array of
``{"mode", "messages", "response", "stream"}``) import as the chat completions calls
AutoGen's OpenAI client makes of them: a tool loop's calls paired with their results,
an assistant's thought beside its calls, images, errors and cached answers kept or
noted (the real session: tests/fixtures/imports/real/autogen-*, test_importers_real)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memory_core.errors import ImportFormatError
from memory_core.importers import import_text
from memory_core.storage.inmemory import InMemoryStorage

SYSTEM = {"content": "You are helpful.", "type": "SystemMessage"}


def _user(text: Any) -> dict[str, Any]:
    return {"content": text, "source": "user", "type": "UserMessage"}


def _result(content: Any, **extra: Any) -> dict[str, Any]:
    return {"finish_reason": "stop", "content": content,
            "usage": {"prompt_tokens": 30, "completion_tokens": 5}, "cached": False,
            "logprobs": None, "thought": None, **extra}


def _record(messages: list[dict[str, Any]], response: Any, **extra: Any) -> dict[str, Any]:
    return {"mode": "create", "messages": messages, "response": response, "stream": [],
            **extra}


def _import(*records: dict[str, Any]) -> tuple[InMemoryStorage, Any]:
    s = InMemoryStorage()
    return s, import_text(s, json.dumps(list(records), indent=2), name="session.json")


CALL = {"id": "call_1", "arguments": '{"city": "Paris"}', "name": "get_weather"}


def test_a_tool_loop_is_one_thread_with_calls_and_results_paired() -> None:
    ask = [SYSTEM, _user("Weather in Paris?")]
    called = {"content": [CALL], "thought": "Let me look that up.", "source": "assistant",
              "type": "AssistantMessage"}
    result = {"content": [{"content": "18 C, sunny", "name": "get_weather",
                           "call_id": "call_1", "is_error": False}],
              "type": "FunctionExecutionResultMessage"}
    s, report = _import(
        _record(ask, _result([CALL], finish_reason="function_calls",
                             thought="Let me look that up.")),
        _record([*ask, called, result], _result("It is 18 C and sunny in Paris.")))
    assert report.apis == ["autogen"]
    assert len(report.runs_created) == 2 and len(report.threads_created) == 1
    msgs = [m.as_message() for m in s.memory.get_messages(report.threads_created[0])]
    assert [m.role for m in msgs] == ["user", "assistant", "tool", "assistant"]
    assert msgs[0].metadata.get("name") == "user"  # (source, sent as the name)
    [call] = msgs[1].tool_calls()
    assert (call.id, call.name, call.args) == ("call_1", "get_weather", {"city": "Paris"})
    assert msgs[1].text() == "Let me look that up."  # (the thought beside the calls)
    [res] = msgs[2].tool_results()
    assert (res.call_id, res.name) == ("call_1", "get_weather")
    assert msgs[3].text() == "It is 18 C and sunny in Paris."
    first = s.runs.get(f"{report.runs_created[0]}:step:0")
    assert first["response"]["finish_reason"] == "tool_calls"
    assert first["response"]["usage"] == {"input_tokens": 30, "output_tokens": 5}
    [first_item] = s.runs.get(f"{report.runs_created[1]}:prompt")["items"][:1]
    assert (first_item["lane"], first_item["message"]["content"]) == \
        ("instructions", "You are helpful.")
    # no tools are recorded: the call is not said to name a tool "not offered"
    assert not any("did not offer" in k.reason for k in report.skipped)


def test_images_errors_thoughts_and_cached_answers_are_kept_or_noted() -> None:
    failed = {"content": [{"content": "Error: timeout", "name": "lookup", "call_id": "c9",
                           "is_error": True}], "type": "FunctionExecutionResultMessage"}
    called = {"content": [{"id": "c9", "arguments": "{}", "name": "lookup"}],
              "thought": None, "source": "assistant", "type": "AssistantMessage"}
    s, report = _import(_record(
        [SYSTEM, _user(["What is this?", {"data": "iVBORw0KGgo="}]), called, failed],
        _result("A cat.", thought="It has whiskers.", cached=True)))
    msgs = [m.as_message() for m in s.memory.get_messages(report.threads_created[0])]
    assert msgs[0].metadata["attachments"][0]["type"] == "image"
    assert msgs[0].text() == "What is this?"
    assert msgs[2].tool_results()[0].name == "lookup"
    reasons = " | ".join(k.reason for k in report.skipped)
    assert "call 'c9' is marked an error (is_error)" in reasons
    assert "thought (16 characters of the model's reasoning) not imported" in reasons
    assert "from AutoGen's cache (cached: true)" in reasons
    assert msgs[-1].text() == "A cat."


def test_a_streamed_call_is_read_from_its_stream() -> None:
    s, report = _import(
        {"mode": "create_stream", "messages": [SYSTEM, _user("Hi")], "response": {},
         "stream": ["Hel", "lo", _result("Hello")]},
        {"mode": "create_stream", "messages": [SYSTEM, _user("Bye")], "response": {},
         "stream": ["Good", "bye"]})
    first, second = (s.runs.get(f"{r}:output")["text"] for r in report.runs_created)
    assert (first, second) == ("Hello", "Goodbye")
    assert s.runs.get(f"{report.runs_created[0]}:step:0")["usage_known"] is True
    assert any("stream of 2 text chunks without its result" in k.reason
               for k in report.skipped)


def test_a_record_without_a_response_is_a_failed_run() -> None:
    s, report = _import(_record([SYSTEM, _user("Hi")], None),
                        _record([SYSTEM, _user("Hi again")], _result("Hello")))
    runs = [s.runs.require_run(r) for r in report.runs_created]
    assert [r.status for r in runs] == ["failed", "completed"]
    assert "kept no response" in (runs[0].error or "")


@pytest.mark.parametrize(("message", "said"), [
    ({"content": 3, "type": "SystemMessage"}, "message 0: 'content' must be a string, got int"),
    ({"content": [1], "source": "u", "type": "UserMessage"}, "content part 0 must be"),
    ({"content": "x", "type": "FunctionExecutionResultMessage"},
     "a FunctionExecutionResultMessage's 'content' must be a list of results, got str"),
    ({"content": [{"content": "x"}], "type": "FunctionExecutionResultMessage"},
     "result 0 must be an object with a 'call_id'"),
])
def test_a_malformed_message_is_named(message: dict[str, Any], said: str) -> None:
    with pytest.raises(ImportFormatError, match="item 1") as e:
        _import(_record([message, _user("Hi")], _result("ok")))
    assert said in str(e.value)


def test_one_malformed_record_is_a_note_not_a_refusal() -> None:
    s, report = _import(_record([{"content": 3, "type": "SystemMessage"}], _result("ok")),
                        _record([SYSTEM, _user("Hi")], _result("Hello")))
    assert len(report.runs_created) == 1
    assert any("'content' must be a string" in k.reason for k in report.skipped)
