"""Imported runs (OpenAI chat-completions JSONL) whose recorded response is a tool call:
replay verifies what was recorded and stops where the recording stops; counterfactual and
attribution re-ask a model and compare against that call."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memory_core.analysis.counterfactual import attribution, counterfactual
from memory_core.cli import app
from memory_core.errors import ReplayMismatch
from memory_core.importers import import_text
from memory_core.models.base import ModelIdentity, ModelResponse, ToolSpec
from memory_core.models.scripted import ScriptedModel
from memory_core.runs.replay import replay
from memory_core.storage.base import Storage
from memory_core.storage.duckdb import DuckDBStorage
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import Message, ToolCallPart
from tests.helpers import jget

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


def unseal(s: Storage, rid: str) -> None:
    """As an import made before runs were sealed: replay's own checks are what catch a
    change (on a sealed run verification names the record first, tests/test_seal.py)."""
    s.runs.delete(f"{rid}:seal")
    rec = jget(s, f"{rid}:input")
    s.runs.delete(f"{rid}:input")
    s.runs.put_if_absent(f"{rid}:input", {k: v for k, v in rec.items() if k != "sealed"})


def test_replay_of_an_imported_tool_call_still_checks_the_record() -> None:
    s, rid = imported_tool_call_run()
    unseal(s, rid)
    out = jget(s, f"{rid}:output")
    s.runs.delete(f"{rid}:output")
    s.runs.put_if_absent(f"{rid}:output", {**out, "tool_calls": 2})
    with pytest.raises(ReplayMismatch, match=f"'{rid}:output' differs"):
        replay(s, rid)


def test_replay_of_an_imported_tool_call_checks_the_stored_message() -> None:
    s, rid = imported_tool_call_run()
    unseal(s, rid)
    step = jget(s, f"{rid}:step:0")
    s.runs.delete(f"{rid}:step:0")
    step["response"]["tool_calls"][0]["args"] = {"order_id": "9999"}
    s.runs.put_if_absent(f"{rid}:step:0", step)
    with pytest.raises(ReplayMismatch, match="persist:output': stored message 0"):
        replay(s, rid)


class Scripted0(ScriptedModel):
    """A scripted model stating temperature 0, which remembers the tools it was offered."""

    offered: list[list[str]]

    def identity(self) -> ModelIdentity:
        return ModelIdentity(kind="scripted", name=self.name, temperature=0.0)

    def complete(self, messages: Sequence[Message],
                 tools: Sequence[ToolSpec]) -> ModelResponse:
        self.offered = [*getattr(self, "offered", []), [t.name for t in tools]]
        return super().complete(messages, tools)


def call(order_id: str, cid: str = "z1") -> ModelResponse:
    return ModelResponse(tool_calls=[ToolCallPart(id=cid, name="lookup_order",
                                                  args={"order_id": order_id})])


RECORDED_CALL = '[calls lookup_order({"order_id":"1042"})]'


def test_counterfactual_of_an_imported_tool_call_compares_the_call() -> None:
    s, rid = imported_tool_call_run(history=True)
    model = Scripted0([call("1042"), "Which order do you mean?"])
    res = counterfactual(s, rid, lanes=["recent"], model=model)
    assert res.original_answer == RECORDED_CALL
    # the unchanged prompt makes the recorded call again: it stops there, as the recording
    assert res.baseline_answers == [RECORDED_CALL] and res.baseline_stops == ["recording_ends"]
    assert res.new_answers == ["Which order do you mean?"] and res.new_stops == ["final"]
    assert res.verdict == "changed" and res.removed_lanes == ["recent"]
    assert [u.source for u in res.tool_uses] == ["recording-ends"]
    assert model.offered[0] == ["lookup_order"]  # the imported run's tool, offered again
    assert not s.runs.list(f"{res.key}:tool:") and not s.runs.list(f"{rid}:tool:")


def test_an_imported_tool_call_made_again_is_unchanged() -> None:
    s, rid = imported_tool_call_run(history=True)
    res = counterfactual(s, rid, lanes=["recent"], model=Scripted0([call("1042"),
                                                                    call("1042", "z2")]))
    assert res.new_answers == [RECORDED_CALL] and res.verdict == "unchanged"


def test_an_imported_run_with_another_call_needs_the_tool() -> None:
    s, rid = imported_tool_call_run(history=True)
    res = counterfactual(s, rid, lanes=["recent"], model=Scripted0([call("1042"),
                                                                    call("9")]))
    assert res.needs_tools == ["lookup_order"] and res.verdict == "inconclusive"
    assert res.new_stops == ["needs_tool"]


def test_an_imported_run_of_unknown_temperature_measures_noise_first() -> None:
    s, rid = imported_tool_call_run(history=True, temperature=None)
    model = ScriptedModel([call("1042")] * 3 + ["Which order?"] * 3,
                          name="gpt-4o-mini-2024-07-18")
    res = counterfactual(s, rid, lanes=["recent"], model=model)
    assert res.temperature is None and res.sampling and res.repeats == 3
    assert res.verdict == "changed"


def test_attribution_of_an_imported_run_over_its_messages_and_lanes() -> None:
    """A captured conversation has no recall lane (the client sent its history): each
    message it was given is taken away in turn, and the one that carried the order
    number is found."""
    s, rid = imported_tool_call_run(history=True)
    # the unchanged prompt, then: without the user's turn, without the reply, without
    # the recent lane
    model = Scripted0([call("1042"), "Which order do you mean?", call("1042"),
                       "Which order do you mean?"])
    ranked = attribution(s, rid, include_lanes=True, model=model)
    assert [(a.kind, a.lane, a.verdict) for a in ranked] == [
        ("lane", "recent", "changed"), ("message", "recent", "changed"),
        ("message", "recent", "unchanged")]
    assert "order 1042" in ranked[1].preview and ranked[1].seq == 0


def test_the_cli_replays_an_imported_tool_call_and_says_where_it_stopped(
        tmp_path: Path) -> None:
    db = str(tmp_path / "imp.duckdb")
    storage = DuckDBStorage(db)
    try:
        line = exchange([{"role": "user", "content": ASK}],
                        {"content": None, "tool_calls": [LOOKUP]})
        (rid,) = import_text(storage, line + "\n", format="openai").runs_created
    finally:
        storage.close()
    result = CliRunner().invoke(app, ["replay", rid, "--db", db])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith(f"replay of {rid}: identical (1 step, recorded without input "
                               "hashes, so its input is not compared; 0 tool calls")
    assert lines[1].startswith("note: the recording ends on the model's call to lookup_order")
