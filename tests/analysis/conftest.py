"""A small world for the analysis tests: a keyword embedder whose cosine scores are
known in advance, and helpers to run turns through the real Runner."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from memory_core.composition.memory import AgentMemory
from memory_core.models.reader import ReaderModel
from memory_core.models.scripted import ScriptedModel
from memory_core.recall.config import RecallConfig
from memory_core.runs.runner import Agent, Runner
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import Message, TextPart, ToolCallPart

QUESTION = "What did we decide about the refund for my blender?"
AXES = ["refund", "blender", "kettle", "weather", "lamp", "voucher", "cash"]


class KeywordEmbedder:
    """One axis per keyword plus a constant axis: cosine scores follow from which
    keywords two texts share, so tests can place a message above or below a bar."""

    name = "keyword-test"

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), len(AXES) + 1), dtype=np.float32)
        for i, t in enumerate(texts):
            low = t.lower()
            for j, k in enumerate(AXES):
                if k in low:
                    out[i, j] = 1.0
            out[i, -1] = 0.3
            out[i] /= np.linalg.norm(out[i])
        return out


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2027, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


class World:
    def __init__(self) -> None:
        self.clock = Clock()
        self.storage = InMemoryStorage(clock=self.clock)
        self.embed = KeywordEmbedder()

    def memory(self, **kw: Any) -> AgentMemory:
        kw.setdefault("recent_n", 2)
        return AgentMemory(self.storage, embed=self.embed, clock=self.clock, **kw)

    def say(self, thread: str, resource: str, *messages: Message) -> list[int]:
        if self.storage.memory.get_thread(thread) is None:
            self.storage.memory.create_thread(thread, resource_id=resource)
        return self.memory().append(thread, list(messages), resource, created_at=self.clock())

    def run(self, run_id: str, thread: str, resource: str, question: str, *,
            memory: AgentMemory, model: Any = None) -> Any:
        agent = Agent(name="a", instructions="Answer from memory.",
                      model=model or ReaderModel(embed=self.embed))
        runner = Runner(self.storage, {"a": agent}, memory=memory, clock=self.clock)
        return runner.run("a", run_id=run_id, thread_id=thread, resource_id=resource,
                          prompt=question)


@pytest.fixture
def world() -> World:
    return World()


def user(text: str, **meta: Any) -> Message:
    return Message(role="user", content=text, metadata=meta)


def assistant(text: str) -> Message:
    return Message(role="assistant", content=text)


def recall(**kw: Any) -> RecallConfig:
    kw.setdefault("scope", "resource")
    return RecallConfig(**kw)


def scripted(*texts: str) -> ScriptedModel:
    return ScriptedModel(list(texts))


@pytest.fixture
def story(world: World) -> World:
    """Run r1 (reader model): old#0 carries the fact (240 euros), old#2 is an
    irrelevant hit, old#4 an unanswered tool call that is dropped."""
    w = world
    w.say("old", "r1",
          user("The refund for the blender was approved: 240 euros."),  # 0 carries the fact
          assistant("Noted."),
          user("Refund ok?"),                                            # 2 irrelevant hit
          user("Nice weather today."),
          Message(role="assistant", content=[TextPart(text="Starting the blender refund."),
                                             ToolCallPart(id="c1", name="refund", args={})]))
    w.say("cur", "r1", user("Hello"), assistant("Hi!"), user("Quick thing first."))
    w.run("r1", "cur", "r1", QUESTION, memory=w.memory(recall=recall(top_k=3, threshold=0.5)))
    return w


def hybrid_pair(w: World) -> World:
    """Runs "ra" (the refund question) and "rb" (about the weather) with one hybrid
    recall: the refund decision is recalled in ra and left out of rb, whose question
    shares no word with it, its similarity under the bar."""
    w.say("old", "r1", user("The refund for the blender was approved."),
          assistant("Noted."), user("Nice weather today."))
    w.say("cur", "r1", user("Hello"), assistant("Hi!"))
    hybrid = recall(top_k=3, threshold=0.5, mode="hybrid")
    w.run("ra", "cur", "r1", QUESTION, memory=w.memory(recall=hybrid))
    w.run("rb", "cur", "r1", "How is the weather?", memory=w.memory(recall=hybrid))
    return w
