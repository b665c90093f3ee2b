"""Thread titles (SPEC §2.5): the first-text title, and the ``generate_title`` model
asked once on a thread's first turn, journaled under ``<run>:title``."""

from __future__ import annotations

import pytest

from memory_core.composition.memory import AgentMemory
from memory_core.errors import InvalidInputError
from memory_core.journal import RunKeys, RunReader
from memory_core.models.scripted import RaisingModel, ScriptedModel
from memory_core.runs.runner import Agent, Runner
from memory_core.storage.inmemory import InMemoryStorage
from tests.helpers import Tick


def _runner(s: InMemoryStorage, titler: object) -> Runner:
    mem = AgentMemory(s, generate_title=titler)
    return Runner(storage=s, agents={"a": Agent(name="a", instructions="hi",
                                                model=ScriptedModel(["one", "two"]))},
                  memory=mem)


def test_spec_2_5_generate_title_names_the_thread_on_its_first_turn_once() -> None:
    s = InMemoryStorage(clock=Tick())
    titler = ScriptedModel(['  "Refund   for order A-1"  '])
    runner = _runner(s, titler)
    runner.run("a", run_id="r1", thread_id="t", resource_id="u", prompt="my refund for A-1?")
    assert s.memory.get_thread("t").title == "Refund for order A-1"  # type: ignore[union-attr]
    rec = RunReader(s.runs, "r1").title()
    assert rec is not None and rec.title == "Refund for order A-1"
    assert rec.model.name == "scripted" and rec.error is None
    assert "my refund for A-1?" in (titler.seen[0][-1].text() or "")
    # the second turn does not ask; a resume of the first reads the record
    runner.run("a", run_id="r2", thread_id="t", resource_id="u", prompt="and now?")
    assert titler.calls == 1 and RunReader(s.runs, "r2").title() is None
    again = AgentMemory(s, generate_title=RaisingModel())
    assert again.title_thread("t", [], run_id="r1") == "Refund for order A-1"


def test_spec_2_5_title_errors_and_empty_titles_are_recorded_and_ignored() -> None:
    s = InMemoryStorage(clock=Tick())
    _runner(s, RaisingModel()).run("a", run_id="r1", thread_id="t", prompt="  hello   there ")
    assert s.memory.get_thread("t").title == "hello there"  # type: ignore[union-attr]
    rec = RunReader(s.runs, "r1").title()
    assert rec is not None and rec.title is None and "ModelError" in (rec.error or "")
    _runner(s, ScriptedModel(["   "])).run("a", run_id="r2", thread_id="t2", prompt="x y")
    assert s.memory.get_thread("t2").title == "x y"  # type: ignore[union-attr]
    assert s.runs.get(RunKeys("r2").title)["title"] is None


def test_spec_2_5_without_a_title_model_nothing_is_asked_or_journaled() -> None:
    s = InMemoryStorage(clock=Tick())
    _runner(s, None).run("a", run_id="r1", thread_id="t", prompt="hello")
    assert s.runs.get(RunKeys("r1").title) is None
    assert s.memory.get_thread("t").title == "hello"  # type: ignore[union-attr]


def test_spec_2_5_a_title_model_must_be_a_model() -> None:
    with pytest.raises(InvalidInputError, match="generate_title"):
        AgentMemory(InMemoryStorage(), generate_title="gpt")
