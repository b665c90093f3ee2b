"""An OpenAI-compatible server's reasoning text — DeepSeek's and vLLM's
``reasoning_content``, OpenRouter's ``reasoning`` — is not imported, and says so: in a
response, streamed or not, and in an answer the client sends back (it was dropped
without a word)."""

from __future__ import annotations

import json

from memory_core.importers import import_text
from memory_core.models.openai_stream import ChatStream
from memory_core.storage.inmemory import InMemoryStorage

QUESTION = {"role": "user", "content": "What is today's date?"}


def test_reasoning_in_an_answer_and_sent_back_is_noted() -> None:
    answer = {"role": "assistant", "content": "It is Monday.",
              "reasoning_content": "Let me get the current date."}
    lines = [json.dumps({"request": {"model": "deepseek-chat", "messages": [QUESTION]},
                         "response": {"choices": [{"message": answer}]}}),
             json.dumps({"request": {"model": "deepseek-chat", "messages": [
                 QUESTION, answer, {"role": "user", "content": "And tomorrow?"}]},
                 "response": {"choices": [{"message": {
                     "role": "assistant", "content": "Tuesday.",
                     "reasoning": "One day later."}}]}})]
    s = InMemoryStorage()
    report = import_text(s, "\n".join(lines), name="calls.jsonl")
    assert [(n.where, n.reason) for n in report.skipped] == [
        ("line 1", "response: its reasoning ('reasoning_content', 28 characters) not "
                   "imported"),
        ("line 2", "message 1: its reasoning ('reasoning_content', 28 characters) not "
                   "imported"),
        ("line 2", "response: its reasoning ('reasoning', 14 characters) not imported")]
    assert len(report.threads_created) == 1  # the answer sent back is the one stored


def test_a_stream_s_reasoning_is_joined_as_its_text_is() -> None:
    stream = ChatStream()
    for delta in ({"role": "assistant", "reasoning_content": "Let me "},
                  {"reasoning_content": "think."}, {"content": "Monday."}):
        stream.add({"id": "c1", "model": "deepseek-chat",
                    "choices": [{"index": 0, "delta": delta}]})
    message = stream.completion()["choices"][0]["message"]
    assert message["reasoning_content"] == "Let me think."
    assert message["content"] == "Monday."
