"""Calls to APIs whose model work happens on the server, apart from the call recorded —
OpenAI's Assistants API (threads and runs: ruby-openai's runs_submit_tool_outputs.yml,
lemur's openaiassistant.yml), Anthropic's Message Batches (anthropic-rb's
http_post_with_error_response.yml, batch_results.yml), OpenAI's Batch API — are skipped
naming the API and why they hold no model call; a file of nothing else is refused so,
each reason once, not as "not a model call this importer reads"."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from memory_core.errors import ImportFormatError
from memory_core.importers import import_text
from memory_core.storage.inmemory import InMemoryStorage

OPENAI = "https://api.openai.com/v1"
ANTHROPIC = "https://api.anthropic.com/v1"
ASSISTANTS = ("OpenAI's Assistants API: the runs' model calls happen on the server and are "
              "not in the recording")
BATCH_SENT = ("Anthropic's Message Batches: the answers come later from …/results, not in "
              "this call")


def _call(method: str, uri: str, body: Any = None, answer: Any = None,
          status: int = 200) -> dict[str, Any]:
    """One interaction as Ruby's VCR writes it."""
    return {"request": {"method": method, "uri": uri,
                        "body": {"encoding": "UTF-8",
                                 "string": "" if body is None else json.dumps(body)},
                        "headers": {"Content-Type": ["application/json"]}},
            "response": {"status": {"code": status, "message": "OK"},
                         "headers": {"Content-Type": ["application/json"]},
                         "body": {"encoding": "UTF-8", "string": json.dumps(answer or {})}},
            "recorded_at": "Wed, 29 Jan 2025 12:52:57 GMT"}


def _cassette(*calls: dict[str, Any]) -> str:
    return yaml.safe_dump({"http_interactions": list(calls), "recorded_with": "VCR 6.1.0"})


def _refusal(*calls: dict[str, Any]) -> str:
    with pytest.raises(ImportFormatError) as e:
        import_text(InMemoryStorage(), _cassette(*calls), name="c.yml")
    return str(e.value)


RUN = f"{OPENAI}/threads/thread_x/runs/run_y/submit_tool_outputs"


def test_an_assistants_run_is_refused_naming_the_api_and_why() -> None:
    said = _refusal(_call("post", RUN, {"tool_outputs": [{"tool_call_id": "c1",
                                                          "output": "42"}]},
                          {"object": "thread.run", "status": "queued"}),
                    _call("post", f"{OPENAI}/threads/thread_z/runs/run_w/submit_tool_outputs",
                          {"tool_outputs": []}, {"object": "thread.run"}))
    assert said == (f"file: the cassette holds no model call this importer reads: "
                    f"{ASSISTANTS}; its 2 interaction(s): post {RUN}; post "
                    f"{OPENAI}/threads/thread_z/runs/run_w/submit_tool_outputs")


def test_an_assistants_session_says_its_reason_once() -> None:
    said = _refusal(
        _call("post", f"{OPENAI}/assistants", {"model": "gpt-4o", "instructions": "Help."}),
        _call("post", f"{OPENAI}/threads", {}),
        _call("post", f"{OPENAI}/threads/thread_a/messages", {"role": "user",
                                                              "content": "Hi"}),
        _call("post", f"{OPENAI}/threads/thread_a/runs", {"assistant_id": "asst_1"}),
        _call("get", f"{OPENAI}/threads/thread_a/runs/run_1"),
        _call("get", f"{OPENAI}/threads/thread_a/messages?limit=100&order=asc"))
    assert said.count(ASSISTANTS) == 1
    assert said.startswith(f"file: the cassette holds no model call this importer reads: "
                           f"{ASSISTANTS}; its 6 interaction(s): post {OPENAI}/assistants; "
                           f"post {OPENAI}/threads; post {OPENAI}/threads/thread_a/messages; "
                           "3 more")


def test_a_message_batch_sent_is_refused_saying_its_answers_come_later() -> None:
    said = _refusal(_call("post", f"{ANTHROPIC}/messages/batches", {"requests": [
        {"custom_id": "r1", "params": {"model": "claude-3-haiku-20240307", "max_tokens": 124,
                                       "messages": [{"role": "user", "content": "Hi"}]}}]},
        {"type": "error", "error": {"type": "authentication_error"}}, status=401))
    assert said == (f"file: the cassette holds no model call this importer reads: "
                    f"{BATCH_SENT}; its 1 interaction(s): post {ANTHROPIC}/messages/batches")


def test_a_batch_s_results_and_status_are_named_so() -> None:
    said = _refusal(_call("get", f"{ANTHROPIC}/messages/batches/msgbatch_1/results"),
                    _call("get", f"{ANTHROPIC}/messages/batches/msgbatch_1"))
    assert "Anthropic's Message Batches: the results of a batch, apart from the requests " \
           "they answer" in said
    assert "Anthropic's Message Batches: a batch's status; the answers come from " \
           "…/results" in said
    said = _refusal(_call("post", f"{OPENAI}/batches", {"input_file_id": "file-1"}))
    assert "OpenAI's Batch API: the requests are in an uploaded file and the answers in " \
           "its output file" in said


def test_beside_a_model_call_a_run_is_a_note_naming_the_api() -> None:
    chat = _call("post", f"{OPENAI}/chat/completions",
                 {"model": "gpt-4o", "messages": [{"role": "user", "content": "Hi"}]},
                 {"object": "chat.completion", "model": "gpt-4o", "choices": [
                     {"index": 0, "message": {"role": "assistant", "content": "Hello."},
                      "finish_reason": "stop"}]})
    s = InMemoryStorage()
    report = import_text(s, _cassette(_call("post", RUN, {"tool_outputs": []}), chat),
                         name="c.yml")
    assert len(report.runs_created) == 1
    assert [(k.where, k.reason) for k in report.skipped] == [
        ("interaction 1", f"not a model call this importer reads (post {RUN}): {ASSISTANTS}")]


def test_a_file_of_other_calls_too_is_refused_as_before_each_named() -> None:
    said = _refusal(_call("post", RUN, {"tool_outputs": []}),
                    _call("get", f"{OPENAI}/models"))
    assert said.startswith("file: the cassette holds no model call this importer reads "
                           "(chat completions")
    assert f"(post {RUN}): {ASSISTANTS}" in said
    assert f"not a model call this importer reads (get {OPENAI}/models)" in said
