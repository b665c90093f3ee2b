"""AppTest: the run inspector on runs made with another memory (SPEC §6.8) and on a run
whose stored messages a truncation removed (SPEC §2.7)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from streamlit.testing.v1 import AppTest

from app.components import RUN_PAGE
from memory_core.composition.memory import AgentMemory
from memory_core.models.scripted import ScriptedModel
from memory_core.runs.runner import Agent, Runner
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import Message
from tests.app.fixture_db import T0, FixtureInfo

Populated = tuple[InMemoryStorage, FixtureInfo]
MakeApp = Callable[..., AppTest]


class Elsewhere:
    def get_messages(self, thread_id: str) -> list[Message]:
        return [Message(role="user", content="**kept elsewhere**"),
                Message(role="assistant", content="noted")]


def later(days: int) -> Callable[[], object]:
    return lambda: T0 + timedelta(days=days)


def test_the_inspector_says_another_memory_gives_no_provenance_record(
        populated: Populated, app: MakeApp) -> None:
    storage, _ = populated
    runner = Runner(storage, {"other": Agent(name="other", instructions="x",
                                             model=ScriptedModel(["fine"]))},
                    memory=Elsewhere(), clock=later(30))  # type: ignore[arg-type]
    runner.run("other", run_id="mo-1", thread_id="far-away", prompt="hello")
    at = app(RUN_PAGE, run="mo-1")
    assert not at.exception and not at.error
    warnings = [w.value for w in at.warning]
    assert any("this memory gives no provenance record" in w for w in warnings)
    labels = [t.label for t in at.tabs]
    assert "Recent (2)" in labels and "Recalled (0)" in labels
    assert "**kept elsewhere**" in [t.value for t in at.text]  # literal, not Markdown


def test_the_inspector_shows_a_run_whose_messages_were_truncated(
        populated: Populated, app: MakeApp) -> None:
    storage, _ = populated
    mem = AgentMemory(storage, recent_n=4)
    runner = Runner(storage, {"short": Agent(name="short", instructions="x",
                                             model=ScriptedModel(["one", "two"]))},
                    memory=mem, clock=later(31))  # type: ignore[arg-type]
    runner.run("short", run_id="tr-1", thread_id="rewound", prompt="first")
    runner.run("short", run_id="tr-2", thread_id="rewound", prompt="second")
    assert mem.truncate_messages_after("rewound", -1) == 4
    at = app(RUN_PAGE, run="tr-2")
    assert not at.exception and not at.error
    assert not any("no longer matches its seal" in e.value for e in at.error)
    assert "two" in [t.value for t in at.text]
