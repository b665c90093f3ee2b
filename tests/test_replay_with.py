"""Replay with another model (SPEC §10.1): a fresh run under a new id from a recorded
run's frozen prompt, with the caller's model and tools, journaled like any run."""

from __future__ import annotations

import pytest

from memory_core.composition.memory import AgentMemory
from memory_core.errors import InvalidInputError, NotFoundError
from memory_core.journal import RunReader
from memory_core.journal.seal import verify_run
from memory_core.models.base import ModelResponse, Tool, ToolSpec
from memory_core.models.scripted import ScriptedModel
from memory_core.runs.replay import replay, replay_with
from memory_core.runs.runner import Agent, Runner
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import Message, ToolCallPart
from tests.helpers import Tick


def _recorded() -> InMemoryStorage:
    s = InMemoryStorage(clock=Tick())
    mem = AgentMemory(s, recent_n=4)
    runner = Runner(storage=s, agents={"a": Agent(name="a", instructions="be brief",
                                                  model=ScriptedModel(["first", "second"]))},
                    memory=mem)
    runner.run("a", run_id="r1", thread_id="t", resource_id="u", prompt="ilk soru")
    runner.run("a", run_id="r2", thread_id="t", resource_id="u", prompt="ikinci soru")
    return s


def test_spec_10_1_replay_with_runs_the_frozen_prompt_on_another_model() -> None:
    s = _recorded()
    before = RunReader(s.runs, "r2").entries()
    stored = [m.seq for m in s.memory.get_messages("t")]
    other = ScriptedModel(["a new answer"], name="other")
    result = replay_with(s, "r2", model=other, new_run_id="r2-other")
    assert result.text == "a new answer" and result.run_id == "r2-other"
    # the model saw exactly the recorded run's frozen prompt
    frozen = RunReader(s.runs, "r2").prompt()
    assert frozen is not None and other.seen[0] == frozen.messages()
    assert [m.text() for m in other.seen[0]][-1] == "ikinci soru"
    new = RunReader(s.runs, "r2-other")
    assert new.step(0) is not None and new.step(0).model.name == "other"  # type: ignore[union-attr]
    assert new.memctx() == RunReader(s.runs, "r2").memctx()
    assert s.runs.get_run("r2-other").status == "completed"  # type: ignore[union-attr]
    assert verify_run(s, "r2-other").status == "ok"
    # the original is untouched and still replays byte-identically; the thread too
    assert [m.seq for m in s.memory.get_messages("t")] == stored
    assert RunReader(s.runs, "r2").entries() == before
    assert replay(s, "r2").output["text"] == "second"  # raises on any mismatch
    # calling again resumes the same run: the model is not asked twice
    again = replay_with(s, "r2", model=other, new_run_id="r2-other")
    assert again.text == "a new answer" and other.calls == 1


def test_spec_10_1_tools_really_run_again() -> None:
    s = _recorded()
    ran: list[dict[str, object]] = []

    def lookup(args: dict[str, object]) -> str:
        ran.append(args)
        return "found"

    tool = Tool(spec=ToolSpec(name="lookup", description="", parameters={}), fn=lookup)
    model = ScriptedModel([ModelResponse(tool_calls=[ToolCallPart(id="c1", name="lookup",
                                                                  args={"q": "x"})]),
                           "done"])
    result = replay_with(s, "r1", model=model, tools=[tool], new_run_id="r1-tools")
    assert ran == [{"q": "x"}] and result.text == "done" and result.tool_calls == 1
    assert RunReader(s.runs, "r1-tools").tool("c1") is not None


def test_spec_10_1_instructions_replace_the_frozen_system_prompt() -> None:
    s = _recorded()
    model = ScriptedModel(["ok"])
    replay_with(s, "r1", model=model, new_run_id="r1-i", instructions="answer in Turkish")
    assert model.seen[0][0] == Message(role="system", content="answer in Turkish")


def test_spec_10_1_no_recorded_input_and_reused_ids_are_refused() -> None:
    s = _recorded()
    with pytest.raises(NotFoundError, match="no recorded input"):
        replay_with(s, "nope", model=ScriptedModel(["x"]), new_run_id="n")
    with pytest.raises(InvalidInputError, match="differ"):
        replay_with(s, "r1", model=ScriptedModel(["x"]), new_run_id="r1")
    with pytest.raises(InvalidInputError, match="another prompt"):
        replay_with(s, "r1", model=ScriptedModel(["x"]), new_run_id="r2")
