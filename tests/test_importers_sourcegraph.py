"""Sourcegraph's completions API — what Cody sends to ``/.api/completions/stream`` and
``/.api/completions/code`` — imports as the chat calls it records (the real recordings,
tests/fixtures/imports/real/cody-*: test_importers_real.py): speakers as roles, a
modelref's model, Cody's parameters, the answer joined from its SSE events by the
URL's ``api-version``, a cut stream, an error event, a bad speaker."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from memory_core.errors import ImportFormatError
from memory_core.importers import import_text
from memory_core.storage.inmemory import InMemoryStorage

HOST = "https://sourcegraph.example.com"
STREAM = f"{HOST}/.api/completions/stream"
MODELREF = "anthropic::2024-10-22::claude-3-5-sonnet-latest"
ASK = [{"speaker": "system", "text": "You are Cody."},
       {"speaker": "human", "text": "Say hello."}]


def _ask(question: str) -> list[dict[str, Any]]:
    """A conversation of its own (the same one asked twice is one thread)."""
    return [ASK[0], {"speaker": "human", "text": question}]


def _sse(*events: tuple[str, dict[str, Any]]) -> str:
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)


def _entry(answer: str, messages: list[Any] | None = None, *, url: str = "",
           status: int = 200, **params: Any) -> dict[str, Any]:
    """A HAR entry as Cody's Polly.js persister writes it: the request body parsed,
    as ``postData.textJSON``."""
    body = {"maxTokensToSample": 4000, "messages": ASK if messages is None else messages,
            "model": MODELREF, "temperature": 0.2, "topK": -1, "topP": -1, **params}
    return {"startedDateTime": "2025-06-18T07:10:03.189Z",
            "request": {"method": "POST", "url": url or f"{STREAM}?api-version=8",
                        "headers": [], "postData": {"mimeType": "application/json",
                                                    "params": [], "textJSON": body}},
            "response": {"status": status, "headers": [],
                         "content": {"mimeType": "text/event-stream", "text": answer}}}


def _import(*entries: dict[str, Any], as_yaml: bool = False
            ) -> tuple[InMemoryStorage, Any]:
    doc = {"log": {"version": "1.2", "creator": {"name": "Polly.JS"}, "entries": list(entries)}}
    s = InMemoryStorage()
    text, name = (yaml.safe_dump(doc), "recording.har.yaml") if as_yaml else (
        json.dumps(doc), "recording.har")
    return s, import_text(s, text, name=name)


def _said(s: InMemoryStorage, report: Any, i: int = 0) -> list[tuple[str, str]]:
    msgs = s.memory.get_messages(report.threads_created[i])
    return [(m.role, m.as_message().text()) for m in msgs]


def _step(s: InMemoryStorage, report: Any, i: int = 0) -> dict[str, Any]:
    return s.runs.get(f"{report.runs_created[i]}:step:0")


def _notes(report: Any) -> list[str]:
    return [k.reason for k in report.skipped]


def test_a_cody_chat_call_in_a_yaml_har_is_its_conversation_and_answer() -> None:
    s, report = _import(_entry(_sse(("completion", {"deltaText": "Hel"}),
                                    ("completion", {"deltaText": "lo.",
                                                    "stopReason": "end_turn"}),
                                    ("done", {}))), as_yaml=True)
    assert _said(s, report) == [("user", "Say hello."), ("assistant", "Hello.")]
    prompt = s.runs.get(f"{report.runs_created[0]}:prompt")["items"]
    assert [(i["lane"], i["message"]["content"]) for i in prompt][0] == (
        "instructions", "You are Cody.")
    step = _step(s, report)
    assert step["model"]["name"] == "claude-3-5-sonnet-latest"
    assert step["response"]["finish_reason"] == "end_turn"
    assert step["usage_known"] is False
    record = s.runs.get(f"{report.runs_created[0]}:import")
    # the modelref names the model that answered: the same model by another id
    assert record["extra"]["requested_id"] == MODELREF
    assert "requested_model" not in record["extra"]
    assert record["extra"]["api"] == "sourcegraph"
    assert record["extra"]["endpoint"] == HOST
    assert record["request_params"] == {"max_tokens": 4000, "temperature": 0.2,
                                        "top_k": -1, "top_p": -1}


def test_before_api_version_2_each_event_carries_the_whole_text_so_far() -> None:
    cumulative = _sse(("completion", {"completion": "Hel"}),
                      ("completion", {"completion": "Hello."}),
                      ("completion", {"completion": "Hello.", "stopReason": "stop"}),
                      ("done", {}))
    s, report = _import(_entry(cumulative, url=f"{STREAM}?api-version=1"),
                        _entry(cumulative, _ask("Again."), url=STREAM))  # (none: 0)
    assert _said(s, report)[-1] == ("assistant", "Hello.")
    assert _said(s, report, 1)[-1] == ("assistant", "Hello.")


def test_an_empty_assistant_message_ending_the_request_is_the_answers_slot() -> None:
    s, report = _import(_entry(_sse(("completion", {"deltaText": "Hi."}), ("done", {})),
                               [*ASK, {"speaker": "assistant"}]))
    assert _said(s, report) == [("user", "Say hello."), ("assistant", "Hi.")]
    assert any("message 2: an empty assistant message ends the request" in n
               for n in _notes(report))


def test_an_assistant_prefill_is_kept_and_the_answer_continues_it() -> None:
    s, report = _import(_entry(
        _sse(("completion", {"deltaText": "x = 1", "stopReason": "stop_sequence"}),
             ("done", {})),
        [*ASK, {"speaker": "assistant", "text": "<CODE>"}], stopSequences=["</CODE>"]))
    assert _said(s, report)[1:] == [("assistant", "<CODE>"), ("assistant", "x = 1")]
    assert any("a prefill" in n for n in _notes(report))
    record = s.runs.get(f"{report.runs_created[0]}:import")
    assert record["request_params"]["stop"] == ["</CODE>"]


def test_a_stream_cut_before_its_end_is_what_came_noted() -> None:
    s, report = _import(_entry(_sse(("completion", {"deltaText": "Hel"}))))
    assert _said(s, report)[-1] == ("assistant", "Hel")
    assert _step(s, report)["response"]["finish_reason"] is None
    assert any("without its 'done' event or a stopReason: it was cut" in n
               for n in _notes(report))


def test_a_stream_cut_inside_an_event_fails_that_call_only() -> None:
    cut = _sse(("completion", {"deltaText": "Hel"})) + 'event: completion\ndata: {"delt'
    s, report = _import(_entry(cut), _entry(_sse(("completion", {"deltaText": "Hi."}),
                                                 ("done", {}))))
    assert len(report.runs_created) == 1
    assert _said(s, report)[-1] == ("assistant", "Hi.")
    assert any(k.where == "entry 1" and "stream event 1 (completion): data invalid JSON"
               in k.reason for k in report.skipped)


def test_a_bad_speaker_is_named_and_the_other_calls_read() -> None:
    s, report = _import(_entry(_sse(("completion", {"deltaText": "?"}), ("done", {})),
                               [{"speaker": "robot", "text": "beep"}]),
                        _entry(_sse(("completion", {"deltaText": "Hi."}), ("done", {}))))
    assert len(report.runs_created) == 1
    assert any("message 0: speaker 'robot' is none of 'system', 'human', 'assistant'"
               in n for n in _notes(report))
    with pytest.raises(ImportFormatError, match="speaker 'robot' is none of"):
        _import(_entry(_sse(("done", {})), [{"speaker": "robot", "text": "beep"}]))


def test_an_error_event_fails_the_call_unless_the_answer_had_begun() -> None:
    s, report = _import(
        _entry(_sse(("error", {"error": "rate limit exceeded"}), ("done", {}))),
        _entry(_sse(("completion", {"deltaText": "Hel"}),
                    ("error", {"error": "upstream closed"}), ("done", {})), _ask("Two.")),
        _entry("model not allowed", _ask("Three."), status=403))
    first, second, third = (s.runs.require_run(r) for r in report.runs_created)
    assert first.status == "failed" and "rate limit exceeded" in (first.error or "")
    assert second.status == "completed"
    assert _said(s, report, 1)[-1] == ("assistant", "Hel")
    assert any("the stream ended with an error after its answer began (upstream closed)"
               in n for n in _notes(report))
    assert third.status == "failed" and "model not allowed" in (third.error or "")


def test_a_code_completion_answered_whole_is_read() -> None:
    entry = _entry("", url=f"{HOST}/.api/completions/code?api-version=8", stream=False)
    entry["response"]["content"] = {
        "mimeType": "application/json",
        "text": json.dumps({"completion": "return a + b", "stopReason": "stop_sequence"})}
    s, report = _import(entry)
    assert _said(s, report)[-1] == ("assistant", "return a + b")
    assert _step(s, report)["response"]["finish_reason"] == "stop_sequence"


def test_streamed_thinking_is_the_answers_reasoning_and_tool_calls_are_noted() -> None:
    s, report = _import(_entry(_sse(
        ("completion", {"delta_thinking": "Greet.", "deltaText": ""}),
        ("completion", {"deltaText": "Hi.", "delta_tool_calls": [{"id": "t1"}]}),
        ("done", {}))))
    assert _said(s, report)[-1] == ("assistant", "Hi.")
    assert any("1 streamed tool call piece(s) (delta_tool_calls) not imported" in n
               for n in _notes(report))


def test_other_sourcegraph_calls_stay_skipped_by_url() -> None:
    graphql = {**_entry("{}", url=f"{HOST}/.api/graphql?CurrentUser")}
    s, report = _import(graphql, _entry(_sse(("completion", {"deltaText": "Hi."}),
                                             ("done", {}))))
    assert len(report.runs_created) == 1
    assert any(n.startswith("not a model call this importer reads (POST "
                            f"{HOST}/.api/graphql)") for n in _notes(report))


def test_a_record_without_a_url_is_told_by_its_speakers() -> None:
    line = {"request": {"messages": ASK, "model": "anthropic/claude-2",
                        "maxTokensToSample": 100},
            "response": {"completion": "Hello.", "stopReason": "stop"}}
    s = InMemoryStorage()
    report = import_text(s, json.dumps(line), name="calls.jsonl")
    assert _said(s, report) == [("user", "Say hello."), ("assistant", "Hello.")]
    assert _step(s, report)["model"]["name"] == "anthropic/claude-2"  # (no modelref)
