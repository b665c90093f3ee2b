"""Every imported run replays identically and verifies: the answer a replay rebuilds
from the recorded step is the message the import stored, whatever its shape."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memory_core.importers import import_text
from memory_core.journal.seal import verify_run
from memory_core.runs.replay import replay
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import TextPart, ToolCallPart

CALL = {"type": "function_call", "call_id": "call_1", "name": "lookup",
        "arguments": "{\"q\": \"x\"}"}


def _responses(*content: dict[str, Any]) -> dict[str, Any]:
    output = [{"type": "message", "role": "assistant", "content": list(
        c for c in content if c.get("type") == "output_text")}]
    output += [c for c in content if c.get("type") == "function_call"]
    return {"request": {"model": "gpt-4o", "input": [{"role": "user", "content": "hi"}]},
            "response": {"id": "resp_1", "model": "gpt-4o", "output": output}}


def _chat(content: Any, tool_calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        msg["tool_calls"] = tool_calls
    return {"messages": [{"role": "user", "content": "hi"}],
            "response": {"model": "gpt-4o", "choices": [{"message": msg}]}}


TEXT = [{"type": "output_text", "text": "First part."},
        {"type": "output_text", "text": "Second part."}]
CHAT_CALL = [{"id": "call_1", "type": "function",
              "function": {"name": "lookup", "arguments": "{\"q\": \"x\"}"}}]
CHAT_TEXT = [{"type": "text", "text": "First part."}, {"type": "text", "text": "Second part."}]


@pytest.mark.parametrize(("record", "parts"), [
    (_responses(*TEXT), ["First part.", "Second part."]),
    (_responses(*TEXT, CALL), ["First part.", "Second part.", "lookup"]),
    (_chat(CHAT_TEXT), ["First part.", "Second part."]),
    (_chat(CHAT_TEXT, CHAT_CALL), ["First part.", "Second part.", "lookup"]),
], ids=["responses-text", "responses-text-and-call", "chat-text", "chat-text-and-call"])
def test_an_answer_of_several_text_parts_keeps_them_and_replays(record: dict[str, Any],
                                                                parts: list[str]) -> None:
    st = InMemoryStorage()
    (run,) = import_text(st, json.dumps(record) + "\n", name="answer.jsonl").runs_created
    thread = st.runs.get_run(run).thread_id
    assert thread is not None
    answer = st.memory.get_messages(thread)[-1].as_message()
    # the parts' boundaries are kept as recorded, never joined
    assert [p.text if isinstance(p, TextPart) else p.name for p in answer.parts
            if isinstance(p, TextPart | ToolCallPart)] == parts
    assert verify_run(st, run).status == "ok"
    report = replay(st, run)  # "stored message 0 … differs from the replayed one" before
    assert report.messages_checked == 1
    assert report.output["text"] == "First part. Second part."



@pytest.mark.parametrize("message", [
    {"role": "assistant", "content": None, "refusal": "I can't help with that."},
    {"role": "assistant", "content": "hi", "audio": {"id": "au_1", "data": "AAAA"}},
    {"role": "assistant", "content": "hi", "name": "helper-bot"},
], ids=["refusal", "audio", "name"])
def test_an_answer_with_metadata_replays(message: dict[str, Any]) -> None:
    """What the answer message keeps beside its text (a refusal, an audio placeholder,
    the speaker's name) is in the stored message, so the step holds it too."""
    st = InMemoryStorage()
    line = {"messages": [{"role": "user", "content": "hi"}],
            "response": {"choices": [{"message": message}]}}
    (run,) = import_text(st, json.dumps(line) + "\n", name="meta.jsonl").runs_created
    assert verify_run(st, run).status == "ok"
    assert replay(st, run).messages_checked == 1


def test_an_otel_answer_of_several_text_parts_replays() -> None:
    from tests.test_importers_formats import otlp, span

    out = [{"role": "assistant", "finish_reason": "tool_call", "parts": [
        {"type": "text", "content": "First part."}, {"type": "text", "content": "Second."},
        {"type": "tool_call", "id": "c1", "name": "lookup", "arguments": {"q": "x"}}]}]
    one = span("00000000000000a1", {
        "gen_ai.operation.name": "chat", "gen_ai.request.model": "m",
        "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [
            {"type": "text", "content": "hi"}]}]),
        "gen_ai.output.messages": json.dumps(out)})
    st = InMemoryStorage()
    (run,) = import_text(st, otlp([one])).runs_created
    report = replay(st, run)
    assert report.ended_on_tool_call and report.messages_checked == 1

REAL = Path(__file__).parent / "fixtures" / "imports" / "real"


def test_a_request_of_instructions_alone_replays() -> None:
    from memory_core.errors import InvalidInputError
    from memory_core.models.scripted import ScriptedModel
    from memory_core.runs.runner import Agent, Runner

    st = InMemoryStorage()
    row = {"messages": [{"role": "system", "content": "Be upbeat."},
                        {"role": "assistant", "content": "You're great!"}]}
    (run,) = import_text(st, json.dumps(row) + "\n", name="ft.jsonl").runs_created
    # nothing was sent after the instructions: the recorded input is empty, and the
    # replay's resume reads it back ("prompt must not be an empty list" before)
    assert replay(st, run).output["text"] == "You're great!"
    runner = Runner(st, {"a": Agent(name="a", instructions="", model=ScriptedModel(["x"]))})
    with pytest.raises(InvalidInputError, match="empty list"):
        runner.run("a", run_id="fresh", prompt=[])  # a fresh run still needs a prompt


def test_the_run_view_shows_an_answer_of_several_parts_one_a_line() -> None:
    """The run inspector's "Model steps" box showed the step's text with its parts
    joined by spaces; the answer below it showed one a line."""
    from memory_core.analysis.views import run_view

    st = InMemoryStorage()
    [rid] = import_text(st, json.dumps(_responses(*TEXT)), name="r.jsonl").runs_created
    view = run_view(st, rid)
    assert view.steps[0].text == "First part.\nSecond part."
    assert view.answer == "First part.\nSecond part."
