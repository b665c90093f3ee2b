"""The Run inspector's Observations lane shows the observations the opt-in
``recall_observations`` tool returned during the run, with their source ranges
(SPEC §8.9–8.10)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from streamlit.testing.v1 import AppTest

from app.components import RUN_PAGE, Id, md, recalled_observations, ref
from memory_core.analysis.views import ToolCallView
from memory_core.composition.memory import AgentMemory
from memory_core.composition.observational import ObservationalConfig
from memory_core.embedding.hashing import HashingEmbedder
from memory_core.models.base import ModelResponse
from memory_core.models.scripted import ScriptedModel
from memory_core.runs.runner import Agent, Runner
from memory_core.storage.base import Storage
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import Message, ToolCallPart
from tests.app.conftest import served
from tests.helpers import Tick

FACT = "Refund <b>approved</b> for order *7*"


def make_run(s: Storage) -> None:
    clock = Tick()
    mem = AgentMemory(s, embed=HashingEmbedder(64), clock=clock, observation_tool=True,
                      observational_memory=ObservationalConfig(
                          model=ScriptedModel([FACT]), message_threshold=2))
    for i, text in enumerate(["refund?", "approved", "order?", "seven"]):
        mem.append("t1", [Message(role="user" if i % 2 == 0 else "assistant", content=text)],
                   resource_id="r")
    mem.compact_observations("t1")
    model = ScriptedModel([
        ModelResponse(tool_calls=[ToolCallPart(id="c1", name="recall_observations",
                                               args={"query": "refund approved"})]),
        "It was approved."])
    Runner(s, {"a": Agent(name="a", instructions="", model=model)}, memory=mem,
           clock=clock).run("a", run_id="run-om", thread_id="t1", prompt="was it approved?")


@pytest.fixture()
def recalled(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemoryStorage]:
    s = InMemoryStorage(clock=Tick())
    make_run(s)
    yield from served(s, monkeypatch)


def test_spec_8_9_inspector_shows_recalled_observations_with_their_source_range(
        recalled: InMemoryStorage, app: Callable[..., AppTest]) -> None:
    at = app(RUN_PAGE, run="run-om")
    assert not at.exception
    captions = [c.value for c in at.caption]
    assert "Recalled during the run by the recall_observations tool" in captions
    # ids in the code font (code spans), our words escaped
    assert any(c.startswith(md("observation ", Id("obs-t1-0000"), " · call ", Id("c1"),
                               " · score "))
               for c in captions)
    # stored text shown literally
    assert FACT in [t.value for t in at.text] + [c.value for c in at.code]
    links = [p.proto.label for p in at.main.get("page_link")]
    assert md("source ", *ref("t1", 0, to_seq=2)).startswith("source `t1` ")
    assert md("source ", *ref("t1", 0, to_seq=2)) in links


def test_spec_8_9_recalled_observations_skip_other_and_failed_calls() -> None:
    ok = ToolCallView(call_id="c1", name="recall_observations", args="{}", status="ok",
                      result='{"matches": [{"id": "o1", "thread_id": "t", "text": "x", '
                             '"range": [3, 5], "score": 0.5}, {"id": "o2", "thread_id": "t",'
                             ' "text": "y"}]}', error=None)
    failed = ok.model_copy(update={"call_id": "c2", "status": "error", "result": "null"})
    other = ok.model_copy(update={"call_id": "c3", "name": "lookup"})
    got = recalled_observations([ok, failed, other])
    assert [(r.id, r.from_seq, r.to_seq, r.score) for r in got] == [
        ("o1", 3, 5, 0.5), ("o2", None, None, None)]
