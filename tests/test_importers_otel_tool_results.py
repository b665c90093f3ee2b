"""Tool results in OTel GenAI ``parts`` messages take the OpenAI form's shape, as the
Anthropic and Vercel readers give them: a tool message per result. Instrumentations of
the Anthropic API (OpenLLMetry's) put a user turn's ``tool_result`` blocks in a ``user``
message as ``tool_call_response`` parts: that message was stored as a user message
holding tool results, so a conversation imported from its spans and from its HTTP
recording made two different threads."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memory_core.errors import ImportFormatError
from memory_core.importers import import_text
from memory_core.storage.inmemory import InMemoryStorage

CALL = {"type": "tool_call", "id": "toolu_1", "name": "get_weather",
        "arguments": {"city": "Paris"}}
CALL2 = {"type": "tool_call", "id": "toolu_2", "name": "get_time", "arguments": {}}


def _span(messages: list[dict[str, Any]], answer: str = "It is rainy.") -> str:
    return json.dumps({
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": "claude-sonnet-4-5",
        "gen_ai.input.messages": json.dumps(messages),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
            {"type": "text", "content": answer}], "finish_reason": "end_turn"}]),
        "gen_ai.usage.input_tokens": 50, "gen_ai.usage.output_tokens": 6})


def _stored(text: str, name: str) -> list[tuple[str, Any]]:
    s = InMemoryStorage()
    report = import_text(s, text, name=name)
    [thread] = report.threads_created
    out = []
    for m in s.memory.get_messages(thread):
        msg = m.as_message()
        out.append((msg.role, [p.model_dump(mode="json") for p in msg.parts]))
    return out


ASKED = [{"role": "user", "parts": [{"type": "text", "content": "Weather and time?"}]},
         {"role": "assistant", "parts": [{"type": "text", "content": "Checking."}, CALL,
                                         CALL2]}]


def test_a_user_turn_of_tool_results_imports_as_its_http_recording_does() -> None:
    turn = {"role": "user", "parts": [
        {"type": "tool_call_response", "id": "toolu_1", "response": "Rainy"},
        {"type": "tool_call_response", "id": "toolu_2", "response": "09:00"},
        {"type": "text", "content": "Thanks"}]}
    from_spans = _stored(_span([*ASKED, turn]), "spans.json")
    assert [role for role, _ in from_spans] == ["user", "assistant", "tool", "tool", "user",
                                                "assistant"]
    # the same exchange as the Messages API records it
    record = {"request": {"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": [
        {"role": "user", "content": "Weather and time?"},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather",
             "input": {"city": "Paris"}},
            {"type": "tool_use", "id": "toolu_2", "name": "get_time", "input": {}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "Rainy"},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "09:00"},
            {"type": "text", "text": "Thanks"}]}]},
        "response": {"type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                     "content": [{"type": "text", "text": "It is rainy."}],
                     "stop_reason": "end_turn",
                     "usage": {"input_tokens": 50, "output_tokens": 6}}}
    from_http = _stored(json.dumps(record), "messages.jsonl")
    assert [(role, [{k: v for k, v in p.items() if k != "name"} for p in parts])
            for role, parts in from_spans] == \
        [(role, [{k: v for k, v in p.items() if k != "name"} for p in parts])
         for role, parts in from_http]


def test_a_tool_message_of_two_results_is_two_messages() -> None:
    turn = {"role": "tool", "parts": [
        {"type": "tool_call_response", "id": "toolu_1", "response": "Rainy"},
        {"type": "tool_call_response", "id": "toolu_2", "response": "09:00"}]}
    stored = _stored(_span([*ASKED, turn]), "spans.json")
    assert [(role, [p.get("call_id") for p in parts]) for role, parts in stored[2:4]] == [
        ("tool", ["toolu_1"]), ("tool", ["toolu_2"])]


def test_an_assistant_message_holding_a_result_is_refused() -> None:
    bad = {"role": "assistant", "parts": [
        {"type": "tool_call_response", "id": "toolu_1", "response": "Rainy"}]}
    with pytest.raises(ImportFormatError, match="an assistant message holds a "
                                                "tool_call_response"):
        import_text(InMemoryStorage(), _span([ASKED[0], bad]), name="spans.json")


def test_openllmetry_anthropic_spans_read_their_content_blocks() -> None:
    """OpenLLMetry's Anthropic instrumentation (its indexed attributes) writes a
    message's content blocks as the JSON it sent: tool_use and tool_result blocks failed
    the whole file ("content part 1 has unknown type 'tool_use'")."""
    blocks_asked = [{"type": "text", "text": "Let me check."},
                    {"type": "tool_use", "id": "toolu_01", "name": "get_weather",
                     "input": {"location": "SF"}}]
    answered = [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "Sunny, 70F"}]
    span = {"gen_ai.system": "Anthropic", "llm.request.type": "chat",
            "gen_ai.request.model": "claude-3-5-sonnet-20240620",
            "gen_ai.prompt.0.role": "system", "gen_ai.prompt.0.content": "Be brief.",
            "gen_ai.prompt.1.role": "user", "gen_ai.prompt.1.content": "Weather in SF?",
            "gen_ai.prompt.2.role": "assistant",
            "gen_ai.prompt.2.content": json.dumps(blocks_asked),
            "gen_ai.prompt.3.role": "user", "gen_ai.prompt.3.content": json.dumps(answered),
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.content": "Sunny and 70F.",
            "gen_ai.completion.0.finish_reason": "end_turn",
            "gen_ai.usage.prompt_tokens": 300, "gen_ai.usage.completion_tokens": 5}
    s = InMemoryStorage()
    report = import_text(s, json.dumps(span), name="span.json")
    [rid] = report.runs_created
    msgs = [m.as_message() for m in s.memory.get_messages(report.threads_created[0])]
    assert [m.role for m in msgs] == ["user", "assistant", "tool", "assistant"]
    assert [(c.id, c.name, c.args) for c in msgs[1].tool_calls()] == [
        ("toolu_01", "get_weather", {"location": "SF"})]
    assert [(r.call_id, r.result) for r in msgs[2].tool_results()] == [
        ("toolu_01", "Sunny, 70F")]
    lanes = [i["lane"] for i in s.runs.get(f"{rid}:prompt")["items"]]
    assert lanes[0] == "instructions"
    # a tool_result answering no call is refused, as the API refuses it
    span["gen_ai.prompt.3.content"] = json.dumps([{**answered[0], "tool_use_id": "toolu_9"}])
    with pytest.raises(ImportFormatError, match="toolu_9"):
        import_text(InMemoryStorage(), json.dumps(span), name="span.json")


def test_openllmetry_anthropic_thinking_is_a_completion_of_its_own() -> None:
    """Its Anthropic instrumentation writes an answer's thinking block as completion 0
    with role "thinking" and the answer as completion 1: the span failed ("unknown role
    'thinking'")."""
    span = {"gen_ai.system": "Anthropic", "llm.request.type": "chat",
            "gen_ai.request.model": "claude-3-7-sonnet-20250219",
            "gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "Weather in Oslo?",
            "gen_ai.completion.0.finish_reason": "tool_use",
            "gen_ai.completion.0.role": "thinking",
            "gen_ai.completion.0.content": "They want the weather in Oslo.",
            "gen_ai.completion.1.role": "assistant",
            "gen_ai.completion.1.content": "Let me check.",
            "gen_ai.completion.1.tool_calls.0.id": "toolu_1",
            "gen_ai.completion.1.tool_calls.0.name": "get_weather",
            "gen_ai.completion.1.tool_calls.0.arguments": '{"city": "Oslo"}'}
    s = InMemoryStorage()
    report = import_text(s, json.dumps(span), name="span.json")
    [rid] = report.runs_created
    step = s.runs.get(f"{rid}:step:0")["response"]
    assert (step["text"], step["finish_reason"]) == ("Let me check.", "tool_use")
    assert [(c["id"], c["args"]) for c in step["tool_calls"]] == [("toolu_1", {"city": "Oslo"})]
    assert any("gen_ai.completion.0: the model's thinking not imported" in k.reason
               for k in report.skipped)
    assert not any("alternative" in k.reason for k in report.skipped)
