"""Semantic Kernel's serialised ``ChatHistory`` (formats/semantic_kernel.py): the real
file is in the corpus (tests/test_importers_real.py); here what such a file may hold
besides, and what is wrong in one."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memory_core.errors import ImportFormatError
from memory_core.importers import detect_format, import_text
from memory_core.storage.inmemory import InMemoryStorage


def _msg(role: str, *items: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"Role": {"Label": role}, "Items": list(items), **more}


def _text(text: str) -> dict[str, Any]:
    return {"$type": "TextContent", "Text": text}


_ANSWER = {"ModelId": "gpt-4o", "Metadata": {"Usage": {"PromptTokens": 12,
                                                        "CompletionTokens": 3},
                                             "FinishReason": "stop",
                                             "Created": "2024-07-16T16:13:00+00:00"}}


def test_a_system_message_is_the_instructions_and_each_answer_a_run() -> None:
    history = [_msg("system", _text("Be brief.")), _msg("user", _text("Hi")),
               _msg("assistant", _text("Hello."), **_ANSWER), _msg("user", _text("Bye")),
               _msg("assistant", _text("Bye."), ModelId="gpt-4o")]
    text = json.dumps(history)
    assert detect_format(text) == "openai"
    s = InMemoryStorage()
    report = import_text(s, text, name="history.json")
    assert len(report.runs_created) == 2
    first, second = (s.runs.get(f"{r}:step:0") for r in report.runs_created)
    assert first["response"]["usage"]["input_tokens"] == 12 and first["usage_known"]
    assert second["usage_known"] is False  # (no metadata: the usage is unknown)
    got = [m.as_message().text() for m in s.memory.get_messages(report.threads_created[0])]
    assert got == ["Hi", "Hello.", "Bye", "Bye."]


def test_an_item_of_another_type_is_noted_not_imported() -> None:
    image = {"$type": "ImageContent", "Uri": "https://example.com/a.png"}
    history = [_msg("user", _text("What is this?"), image),
               _msg("assistant", _text("A cat."), **_ANSWER)]
    report = import_text(InMemoryStorage(), json.dumps(history), name="h.json")
    assert any("an item of type 'ImageContent' not imported" in k.reason
               for k in report.skipped)


@pytest.mark.parametrize(("history", "error"), [
    ([_msg("user", _text("Hi")), _msg("robot", _text("Beep."))], "'robot' is no chat role"),
    ([_msg("user", _text("Hi")), {"role": "assistant", "content": "x"}],
     "like the file's first"),
    ([_msg("user", _text("Hi"))], "no assistant message after a user message"),
])
def test_what_is_wrong_in_a_history_is_named(history: list[Any], error: str) -> None:
    with pytest.raises(ImportFormatError, match=error):
        import_text(InMemoryStorage(), json.dumps(history), name="h.json")


def test_a_tool_message_without_a_result_item_answers_the_call_its_metadata_names() -> None:
    """Histories serialised before FunctionResultContent: a tool message is its text,
    the call it answers in ``Metadata["ChatCompletionsToolCall.Id"]`` (two calls'
    results in the other order still answer their own)."""
    calls = [{"$type": "FunctionCallContent", "Id": f"call_{c}", "PluginName": "Helper",
              "FunctionName": "Weather", "Arguments": {"city": c}} for c in ("Boston", "Oslo")]
    history = [_msg("user", _text("Weather?")), _msg("assistant", *calls, **_ANSWER),
               _msg("tool", _text("Oslo: snow"),
                    Metadata={"ChatCompletionsToolCall.Id": "call_Oslo"}),
               _msg("tool", _text("Boston: rain"),
                    Metadata={"ChatCompletionsToolCall.Id": "call_Boston"}),
               _msg("assistant", _text("Snow and rain."), **_ANSWER)]
    s = InMemoryStorage()
    report = import_text(s, json.dumps(history), name="h.json")
    results = [r for m in s.memory.get_messages(report.threads_created[0])[2:4]
               for r in m.as_message().tool_results()]
    assert [(r.call_id, r.result) for r in results] == [("call_Oslo", "Oslo: snow"),
                                                        ("call_Boston", "Boston: rain")]
