"""The Run inspector's Dropped lane names rows the token limiter removed (SPEC §6.5)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from streamlit.testing.v1 import AppTest

from app.components import RUN_PAGE
from memory_core.composition.memory import AgentMemory
from memory_core.models.scripted import ScriptedModel
from memory_core.runs.runner import Agent, Runner
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import Message
from tests.app.conftest import served
from tests.helpers import Tick


@pytest.fixture()
def trimmed(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemoryStorage]:
    s = InMemoryStorage(clock=Tick())
    mem = AgentMemory(s, recent_n=6, token_budget=40)
    for i in range(6):
        mem.append("t", [Message(role="user", content=f"message {i} " + "x" * 40)],
                   resource_id="r")
    Runner(storage=s, agents={"a": Agent(name="a", instructions="be brief",
                                         model=ScriptedModel(["ok"]))},
           memory=mem).run("a", run_id="run-1", thread_id="t", resource_id="r", prompt="hi")
    yield from served(s, monkeypatch)


def test_spec_6_5_dropped_lane_says_trimmed_by_the_token_limiter(
        trimmed: InMemoryStorage, app: Callable[..., AppTest]) -> None:
    at = app(RUN_PAGE, run="run-1")
    assert not at.exception
    captions = [c.value for c in at.caption]
    assert sum("trimmed by the token limiter" in c for c in captions) >= 1


@pytest.fixture()
def move_demo(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemoryStorage]:
    from sample_data.build import DemoClock, build_into

    clock = DemoClock()
    s = InMemoryStorage(clock=clock)
    build_into(s, clock, embedder="hashing", progress=lambda _m: None, only=["move"])
    yield from served(s, monkeypatch)


def test_spec_6_5_demo_story_dropped_lane_shows_the_trimmed_gate_code(
        move_demo: InMemoryStorage, app: Callable[..., AppTest]) -> None:
    at = app(RUN_PAGE, run="move-gate-small-budget")
    assert not at.exception
    captions = [c.value for c in at.caption]
    assert sum("trimmed by the token limiter" in c for c in captions) >= 6
    shown = " ".join([*(t.value for t in at.text), *(c.value for c in at.code),
                      *(m.value for m in at.markdown)])
    assert "gate code is 4417" in shown
