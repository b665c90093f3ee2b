"""SPEC §8.1 (buffering and on_compact), §8.3 (observation ids), §8.4 (model tiers by
tokens), §8.9 (semantic observation recall over stored vectors, from AgentMemory) and
§8.10 (the opt-in recall tool, journaled by the Runner)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory_core import AgentMemory
from memory_core.composition.observational import (
    ModelByTokens,
    ObservationalConfig,
    ObservationalMemory,
    observe_key,
    overfetch,
)
from memory_core.embedding.hashing import HashingEmbedder
from memory_core.errors import InvalidInputError
from memory_core.journal import RunReader
from memory_core.models.base import ModelResponse
from memory_core.models.scripted import ScriptedModel
from memory_core.runs.runner import Agent, Runner
from memory_core.storage.base import ObservationVector, Storage
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import Message, ToolCallPart
from tests.helpers import Tick, drop_observations, jget
from tests.storage_factories import make_storage


class CountingEmbedder:
    """HashingEmbedder that counts the texts it embeds."""

    def __init__(self) -> None:
        self.inner = HashingEmbedder(256)
        self.texts: list[str] = []

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.texts += texts
        return self.inner(texts)


def _memory(s: Storage, model: Any, embed: Any = None, **om: Any) -> AgentMemory:
    clock = Tick()
    return AgentMemory(s, embed=embed, clock=clock, observational_memory=ObservationalConfig(
        model=model, **{"message_threshold": 2, **om}))


def _talk(mem: AgentMemory, texts: list[str], thread: str = "t1") -> None:
    for i, t in enumerate(texts):
        mem.append(thread, [Message(role="user" if i % 2 == 0 else "assistant", content=t)],
                   resource_id="ayse")


# -- §8.9 --------------------------------------------------------------------------------
@pytest.mark.parametrize("adapter", ["inmemory", "sqlite", "duckdb-file"])
def test_spec_8_9_recall_observations_from_agent_memory_over_stored_vectors(
        adapter: str, tmp_path: Path) -> None:
    s = make_storage(adapter, tmp_path)
    try:
        embed = CountingEmbedder()
        mem = _memory(s, ScriptedModel(["we talked about the weather",
                                        "the refund was approved on monday"]), embed)
        _talk(mem, ["hi", "hello", "weather?", "sunny"])
        mem.compact_observations("t1")
        _talk(mem, ["refund?", "approved", "when?", "monday"])
        mem.compact_observations("t1")
        stored = s.memory.list_observation_vectors("t1")
        assert [v.id for v in stored] == ["om:t1:0:0", "om:t1:0:1"]
        obs = s.memory.list_observations("t1")
        assert stored[1].metadata == {
            "thread_id": "t1", "level": 0, "from_seq": obs[1].from_seq,
            "to_seq": obs[1].to_seq, "obs_id": obs[1].id, "owner": "ayse",
            "namespace": "observations"}
        # a new memory object (a new process) recalls from the stored vectors: only the
        # query is embedded, never the observations again
        fresh = CountingEmbedder()
        again = _memory(s, ScriptedModel([]), fresh)
        hits = again.recall_observations("refund approved", thread_id="t1")
        assert [h.text for h in hits] == ["the refund was approved on monday",
                                          "we talked about the weather"]
        assert hits[0].range == (obs[1].from_seq, obs[1].to_seq)
        assert hits[0].score is not None and hits[0].score > hits[1].score >= 0
        assert fresh.texts == ["refund approved"]
        assert [h.text for h in again.recall_observations(
            "refund approved", thread_id="t1", top_k=1)] == ["the refund was approved on monday"]
        assert again.recall_observations("refund", thread_id="t1", threshold=1.01) == []
    finally:
        s.close()


def test_spec_8_9_candidates_are_over_fetched_max_20_top_k_100_then_filtered() -> None:
    assert (overfetch(1), overfetch(5), overfetch(6)) == (100, 100, 120)

    def embed(texts: list[str]) -> np.ndarray:
        return np.asarray([[1.0, 0.0] if t == "query" else [1.0, 1.0] for t in texts],
                          dtype=np.float32)

    s = InMemoryStorage(clock=Tick())
    mem = _memory(s, ScriptedModel(["ours"]), embed)
    _talk(mem, ["a", "b", "c", "d"])
    mem.compact_observations("t1")
    # 100 closer vectors of another thread fill the candidates of top_k 5 (100 fetched)
    s.memory.put_observation_vectors([ObservationVector(
        f"om:t2:0:{i}", "t2", np.asarray([1.0, 0.0], np.float32),
        {"thread_id": "t2", "obs_id": f"x{i}"}) for i in range(100)])
    assert mem.recall_observations("query", thread_id="t1") == []
    # top_k 6 fetches 120: the thread's own observation is among them
    assert [h.text for h in mem.recall_observations("query", thread_id="t1", top_k=6)] == \
        ["ours"]


def test_spec_8_9_unresolved_observation_ids_are_skipped_after_slicing() -> None:
    s = InMemoryStorage(clock=Tick())
    mem = _memory(s, ScriptedModel(["kept"]), HashingEmbedder(64))
    _talk(mem, ["a", "b", "c", "d"])
    mem.compact_observations("t1")
    s.memory.put_observation_vectors([ObservationVector(
        "om:t1:9:9", "t1", HashingEmbedder(64)(["ghost"])[0],
        {"thread_id": "t1", "obs_id": "gone"})])
    assert mem.recall_observations("ghost", thread_id="t1", top_k=1) == []
    assert [h.text for h in mem.recall_observations("ghost", thread_id="t1")] == ["kept"]


def test_spec_8_9_without_vectors_falls_back_to_keywords_and_bad_input_is_named() -> None:
    s = InMemoryStorage(clock=Tick())
    mem = _memory(s, ScriptedModel(["Refund approved"]))
    _talk(mem, ["a", "b", "c", "d"])
    mem.compact_observations("t1")
    (hit,) = mem.recall_observations("REFUND", thread_id="t1")
    assert hit.score is None and s.memory.list_observation_vectors() == []
    with pytest.raises(InvalidInputError, match="top_k must be an integer >= 1, got 0"):
        mem.recall_observations("refund", thread_id="t1", top_k=0)
    with pytest.raises(InvalidInputError, match="observational memory is off"):
        AgentMemory(s).recall_observations("refund", thread_id="t1")


def test_spec_8_9_gwt_counters_reset_journal_kept_one_vector() -> None:
    s = InMemoryStorage(clock=Tick())
    embed = CountingEmbedder()
    model = ScriptedModel(["obs A"])
    mem = _memory(s, model, embed, message_threshold=4)
    _talk(mem, [f"m{i}" for i in range(10)])
    mem.compact_observations("t1")
    drop_observations(s)
    mem.compact_observations("t1")
    assert model.calls == 1
    assert [v.id for v in s.memory.list_observation_vectors()] == ["om:t1:0:0"]


def test_spec_8_9_observations_made_before_an_embedder_are_indexed_on_recall() -> None:
    s = InMemoryStorage(clock=Tick())
    mem = _memory(s, ScriptedModel(["the refund"]))
    _talk(mem, ["a", "b", "c", "d"])
    mem.compact_observations("t1")
    later = _memory(s, ScriptedModel([]), HashingEmbedder(64))
    assert [h.text for h in later.recall_observations("refund", thread_id="t1")] == \
        ["the refund"]
    assert [v.id for v in s.memory.list_observation_vectors("t1")] == ["om:t1:0:0"]


# -- §8.10 --------------------------------------------------------------------------------
def test_spec_8_10_recall_tool_is_opt_in_and_journaled_like_other_tools() -> None:
    s = InMemoryStorage(clock=Tick())
    assert _memory(s, ScriptedModel([])).tools(thread_id="t1") == []
    with pytest.raises(InvalidInputError, match="observation_tool=True needs"):
        AgentMemory(s, observation_tool=True)
    clock = Tick()
    mem = AgentMemory(s, clock=clock, observation_tool=True,
                      observational_memory=ObservationalConfig(
                          model=ScriptedModel(["Refund approved for order 7"]),
                          message_threshold=2))
    _talk(mem, ["refund?", "approved", "order?", "seven"])
    mem.compact_observations("t1")
    assert [t.name for t in mem.tools(thread_id="t1")] == ["recall_observations"]
    model = ScriptedModel([
        ModelResponse(tool_calls=[ToolCallPart(id="c1", name="recall_observations",
                                               args={"query": "refund", "expand": True})]),
        "It was approved."])
    runner = Runner(s, {"a": Agent(name="a", instructions="", model=model)}, memory=mem,
                    clock=clock)
    runner.run("a", run_id="run1", thread_id="t1", prompt="was my refund approved?")
    rec = RunReader(s.runs, "run1").tool("c1")
    assert rec is not None and rec.status == "ok"
    (match,) = rec.result["matches"]
    assert match["text"] == "Refund approved for order 7" and match["range"] == [0, 2]
    assert [x["seq"] for x in match["source"]] == [0, 1, 2]


# -- §8.1 buffering ------------------------------------------------------------------------
def test_spec_8_1_buffering_calls_on_compact_only_over_threshold_and_uses_what_is_ready(
        ) -> None:
    s = InMemoryStorage(clock=Tick())
    handed: list[str] = []
    model = ScriptedModel(["obs A"])
    mem = _memory(s, model, buffering=True, on_compact=handed.append, message_threshold=4)
    _talk(mem, ["a", "b", "c"])
    comp = mem.load_context(thread_id="t1", input=[Message(content="d")])
    assert handed == [] and not comp.memctx.observations_pending
    _talk(mem, ["d", "e"])
    comp = mem.load_context(thread_id="t1", input=[Message(content="f")])
    # over the threshold: handed off, not compacted; the turn shows every message
    assert handed == ["t1"] and model.calls == 0
    assert comp.memctx.observations_pending and comp.memctx.observation_count == 0
    assert comp.memctx.recent_count == 5
    assert "observations_pending" in comp.memctx.model_dump(mode="json")
    mem.compact_observations("t1")
    comp = mem.load_context(thread_id="t1", input=[Message(content="f")])
    assert handed == ["t1"] and not comp.memctx.observations_pending
    assert [o.preview for o in comp.memctx.observations] == ["obs A"]
    assert "observations_pending" not in comp.memctx.model_dump(mode="json")


class BlockingModel:
    """An observer that waits until the test releases it."""

    name = "blocking"

    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()

    def complete(self, messages: Any, tools: Any) -> ModelResponse:
        self.started.set()
        assert self.release.wait(30)
        return ModelResponse(text="obs from the background")


def test_spec_8_1_buffered_turn_does_not_wait_for_the_observer() -> None:
    s = InMemoryStorage(clock=Tick())
    model = BlockingModel()
    mem = _memory(s, model, buffering=True, message_threshold=4)
    _talk(mem, [f"m{i}" for i in range(6)])
    comp = mem.load_context(thread_id="t1", input=[Message(content="next")])
    # the observer is still blocked: the turn was composed without it
    assert model.started.wait(30) and comp.memctx.observations_pending
    assert s.memory.list_observations("t1") == []
    model.release.set()
    assert mem.wait_for_observations(30)
    assert [o.text for o in s.memory.list_observations("t1")] == ["obs from the background"]
    assert jget(s, observe_key("t1", 0))["model"] == "blocking"
    comp = mem.load_context(thread_id="t1", input=[Message(content="next")])
    assert not comp.memctx.observations_pending and comp.memctx.observation_count == 1


def test_spec_8_1_buffered_run_journals_what_was_ready() -> None:
    s = InMemoryStorage(clock=Tick())
    handed: list[str] = []
    clock = Tick()
    mem = AgentMemory(s, clock=clock, observational_memory=ObservationalConfig(
        model=ScriptedModel([]), message_threshold=2, buffering=True,
        on_compact=handed.append))
    _talk(mem, ["a", "b", "c"])
    runner = Runner(s, {"a": Agent(name="a", instructions="", model=ScriptedModel(["ok"]))},
                    memory=mem, clock=clock)
    runner.run("a", run_id="run1", thread_id="t1", prompt="d")
    memctx = RunReader(s.runs, "run1").memctx()
    assert handed == ["t1"] and memctx is not None and memctx.observations_pending


# -- §8.4 tiers ----------------------------------------------------------------------------
def test_spec_8_4_model_by_tokens_smallest_tier_at_or_above_else_largest() -> None:
    small, mid, large = (ScriptedModel([n], name=n) for n in ("small", "mid", "large"))
    tiers = ModelByTokens({4000: mid, 100: small, 32000: large})
    assert tiers.choose(1) is small and tiers.choose(100) is small
    assert tiers.choose(101) is mid and tiers.choose(4000) is mid
    assert tiers.choose(32000) is large and tiers.choose(999999) is large
    with pytest.raises(InvalidInputError, match="tier limits must be integers >= 1, got 0"):
        ModelByTokens({0: small})
    with pytest.raises(InvalidInputError, match="non-empty"):
        ModelByTokens({})


def test_spec_8_4_observer_block_is_answered_by_the_tier_of_its_tokens() -> None:
    s = InMemoryStorage(clock=Tick())
    s.memory.create_thread("t1")
    small = ScriptedModel(["short block"], name="small")
    large = ScriptedModel(["long block"], name="large")
    om = ObservationalMemory(s, ObservationalConfig(
        model=ModelByTokens({10: small, 1000: large}), token_threshold=8), clock=Tick())
    mem = AgentMemory(s, clock=Tick())
    mem.append("t1", [Message(content="x" * 200), Message(content="y"),
                      Message(content="z" * 12)])
    om.compact("t1")
    rec = jget(s, observe_key("t1", 0))
    assert (rec["model"], rec["text"], rec["tokens"]) == ("large", "long block", 50)
    assert small.calls == 0 and large.calls == 1


# -- §8.3 ids ---------------------------------------------------------------------------
def test_spec_8_3_observation_ids_are_thread_qualified_so_threads_never_collide() -> None:
    s = InMemoryStorage(clock=Tick())
    mem = _memory(s, ScriptedModel(["one", "two"]))
    _talk(mem, ["a", "b", "c", "d"], thread="t1")
    _talk(mem, ["a", "b", "c", "d"], thread="t2")
    mem.compact_observations("t1")
    mem.compact_observations("t2")
    ids = [o.id for t in ("t1", "t2") for o in s.memory.list_observations(t)]
    assert ids == ["obs-t1-0000", "obs-t2-0000"]


def test_spec_8_1_buffered_run_replays_with_its_composition_and_hands_nothing_off() -> None:
    from memory_core.runs.replay import replay

    s = InMemoryStorage(clock=Tick())
    handed: list[str] = []
    clock = Tick()
    mem = AgentMemory(s, clock=clock, observational_memory=ObservationalConfig(
        model=ScriptedModel(["obs A"]), message_threshold=2, buffering=True,
        on_compact=handed.append))
    _talk(mem, ["a", "b", "c"])
    runner = Runner(s, {"a": Agent(name="a", instructions="", model=ScriptedModel(["ok"]))},
                    memory=mem, clock=clock)
    runner.run("a", run_id="run1", thread_id="t1", prompt="d")
    assert handed == ["t1"]
    mem.compact_observations("t1")  # observations made after the run do not change it
    report = replay(s, "run1", memory=mem)
    assert report.prompt_checked and handed == ["t1"]
