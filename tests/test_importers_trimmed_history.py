"""A client that sends an answer back trimmed (ldp's ReAct loop drops the closing
newline the model wrote) continues the same thread: the message is stored once, as
recorded, and the report says the text came back with other whitespace. Whitespace
inside a text still tells two messages apart."""

from __future__ import annotations

import json
from typing import Any

from memory_core.importers import import_text
from memory_core.storage.inmemory import InMemoryStorage

QUESTION = {"role": "user", "content": "Cast '5.5' to a float."}
NEXT = {"role": "user", "content": "Observation: 5.5"}
DONE = {"role": "assistant", "content": "Final Answer: 5.5"}


def _line(messages: list[dict[str, Any]], answer: dict[str, Any]) -> str:
    return json.dumps({"request": {"model": "gpt-4o-mini", "messages": messages},
                       "response": {"choices": [{"message": answer}]}})


def _said(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def _import(first: str, sent_back: str) -> Any:
    s = InMemoryStorage()
    text = "\n".join([_line([QUESTION], _said(first)),
                      _line([QUESTION, _said(sent_back), NEXT], DONE)])
    report = import_text(s, text, name="react.jsonl")
    return s, report


def test_an_answer_sent_back_trimmed_continues_its_thread_and_says_so() -> None:
    s, report = _import("Action: cast_float\nAction Input: ('5.5',)\n",
                        "Action: cast_float\nAction Input: ('5.5',)")
    assert len(report.threads_created) == 1 and report.messages_stored == 4
    stored = [m.content for m in s.memory.get_messages(report.threads_created[0])]
    assert stored[1] == "Action: cast_float\nAction Input: ('5.5',)\n"  # as recorded
    assert [(n.where, n.reason) for n in report.skipped] == [(
        "line 2", "message 1 (assistant) is sent with other whitespace around its text "
                  "than line 1 recorded: taken as the same message, stored once as first "
                  "recorded")]


def test_an_answer_sent_back_as_recorded_says_nothing() -> None:
    _, report = _import("Action: cast_float\n", "Action: cast_float\n")
    assert len(report.threads_created) == 1 and not report.skipped


def test_whitespace_inside_a_text_is_another_message() -> None:
    _, report = _import("Action: cast_float\nAction Input: 5.5",
                        "Action: cast_float Action Input: 5.5")
    assert len(report.threads_created) == 2


def test_a_whitespace_only_answer_sent_back_as_a_text_part_continues_the_thread() -> None:
    s = InMemoryStorage()
    again = {"role": "user", "content": "again"}
    text = "\n".join([_line([QUESTION], _said(" ")), _line(
        [QUESTION, {"role": "assistant", "content": [{"type": "text", "text": " "}]}, again],
        DONE)])
    report = import_text(s, text, name="react.jsonl")
    assert len(report.threads_created) == 1 and report.messages_stored == 4


def test_a_retry_answered_with_other_whitespace_says_which_answer_is_kept() -> None:
    s = InMemoryStorage()
    text = "\n".join([_line([QUESTION], _said("Hello!")), _line([QUESTION], _said("Hello!\n"))])
    report = import_text(s, text, name="calls.jsonl")
    assert len(report.threads_created) == 1
    assert [n.reason for n in report.skipped] == [
        "its answer differs from line 1's only in the whitespace around its text: taken as "
        "that answer, stored once as line 1 recorded it",
        "the same messages and answer as line 1: stored once, and both runs refer to them"]
