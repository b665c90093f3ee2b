"""Imported runs (OpenAI chat-completions JSONL) whose recorded response is a tool call:
replay verifies what was recorded and stops where the recording stops; counterfactual and
attribution re-ask a model and compare against that call."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memory_core.errors import ReplayMismatch
from memory_core.importers import import_text
from memory_core.replay import replay
from memory_core.storage.inmemory import InMemoryStorage

SYSTEM = "You are a support agent for Acme."
ASK = "My order 1042 arrived broken. Can I get a refund?"
LOOKUP = {"id": "call_1", "type": "function",
          "function": {"name": "lookup_order", "arguments": "{\"order_id\": \"1042\"}"}}


def exchange(messages: list[dict[str, Any]], reply: dict[str, Any], *,
             temperature: float | None = 0.0) -> str:
    request: dict[str, Any] = {"model": "gpt-4o-mini", "messages": messages}
    if temperature is not None:
        request["temperature"] = temperature
    return json.dumps({
        "request": request,
        "response": {"created": 1767268800, "model": "gpt-4o-mini-2024-07-18",
                     "choices": [{"index": 0, "finish_reason": "tool_calls"
                                  if reply.get("tool_calls") else "stop",
                                  "message": {"role": "assistant", **reply}}]},
        "metadata": {"user": "cust-7", "conversation_id": "conv-1"}})


def imported_tool_call_run(*, temperature: float | None = 0.0,
                           history: bool = False) -> tuple[InMemoryStorage, str]:
    """One imported exchange whose response is a call to lookup_order (with an earlier
    turn in the request when ``history``, so the run has a recent lane)."""
    s = InMemoryStorage()
    msgs: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
    if history:
        msgs += [{"role": "user", "content": "Hi, I bought a blender, order 1042."},
                 {"role": "assistant", "content": "Thanks, noted order 1042."}]
    msgs.append({"role": "user", "content": ASK})
    line = exchange(msgs, {"content": None, "tool_calls": [LOOKUP]},
                    temperature=temperature)
    report = import_text(s, line + "\n", format="openai")
    (rid,) = report.runs_created
    return s, rid


def test_replay_of_an_imported_tool_call_stops_where_the_recording_stops() -> None:
    s, rid = imported_tool_call_run()
    rep = replay(s, rid)
    assert rep.ended_on_tool_call and rep.pending_tool_calls == ["lookup_order"]
    assert rep.steps == 1 and rep.tool_calls == 0
    assert rep.messages_checked == 1  # the stored assistant tool-call message
    assert "recording ends on the model's call to lookup_order" in rep.notes[0]
    assert not s.runs.list(f"{rid}:tool:")  # nothing was invented or executed


def test_replay_of_an_imported_tool_call_still_checks_the_record() -> None:
    s, rid = imported_tool_call_run()
    out = s.runs.get(f"{rid}:output")
    s.runs.delete(f"{rid}:output")
    s.runs.put_if_absent(f"{rid}:output", {**out, "tool_calls": 2})
    with pytest.raises(ReplayMismatch, match=f"'{rid}:output' differs"):
        replay(s, rid)


def test_replay_of_an_imported_tool_call_checks_the_stored_message() -> None:
    s, rid = imported_tool_call_run()
    step = s.runs.get(f"{rid}:step:0")
    s.runs.delete(f"{rid}:step:0")
    step["response"]["tool_calls"][0]["args"] = {"order_id": "9999"}
    s.runs.put_if_absent(f"{rid}:step:0", step)
    with pytest.raises(ReplayMismatch, match="persist:output': stored message 0"):
        replay(s, rid)
