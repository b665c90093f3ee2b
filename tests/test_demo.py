"""The demo data: deterministic, every run replays byte-identically, and the stories
it tells hold (checked on the hashing embedder here; the MiniLM build is the same code
path and is checked by test_demo_minilm.py)."""

from __future__ import annotations

from typing import Any

import pytest

from memory_core.errors import InvalidInputError
from memory_core.journal.keys import is_claim
from memory_core.runs.replay import replay
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import canonical_json
from sample_data.build import SCENARIOS, DemoClock, build_into


def snapshot(storage: InMemoryStorage) -> dict[str, Any]:
    """Everything stored, as comparable JSON: threads, messages, WM, observations,
    runs and every journal entry."""
    mem = storage.memory
    out: dict[str, Any] = {"threads": [], "wm": {}, "journal": [(k, v) for k, v in storage.runs.list("")
                                                       if not is_claim(k)],
                           "runs": [r.model_dump(mode="json")
                                    for r in storage.runs.list_runs()]}
    for t in mem.list_threads():
        out["threads"].append({
            "thread": t.model_dump(mode="json"),
            "messages": [m.model_dump(mode="json") for m in mem.get_messages(t.id)],
            "vectors": mem.get_embeddings([t.id]).matrix.tolist(),
            "observations": [o.model_dump(mode="json") for o in mem.list_observations(t.id)]})
    for key in mem.list_working_memory_keys():
        out["wm"][key] = mem.get_working_memory(key)
    return out


@pytest.fixture(scope="module")
def demo() -> tuple[InMemoryStorage, list[str]]:
    clock = DemoClock()
    storage = InMemoryStorage(clock=clock)
    ids = build_into(storage, clock, embedder="hashing", progress=lambda _m: None)
    return storage, ids


def test_unknown_scenario_or_embedder_is_named_before_anything_is_written() -> None:
    clock = DemoClock()
    storage = InMemoryStorage(clock=clock)
    with pytest.raises(InvalidInputError, match="'suport'"):
        build_into(storage, clock, embedder="hashing", progress=lambda _m: None,
                   only=["support", "suport"])
    with pytest.raises(InvalidInputError, match="'word2vec'"):
        build_into(storage, clock, embedder="word2vec", progress=lambda _m: None)
    assert storage.memory.list_threads() == [] and storage.runs.list_runs() == []


def test_scenarios_are_long_enough() -> None:
    for s in SCENARIOS:
        turns = sum(1 for t in s.threads for x in t.turns if hasattr(x, "user"))
        assert turns >= 40, s.key
        assert len(s.threads) >= 2, s.key


def test_building_twice_gives_identical_data(demo: tuple[InMemoryStorage, list[str]]) -> None:
    storage, _ = demo
    clock = DemoClock()
    again = InMemoryStorage(clock=clock)
    build_into(again, clock, embedder="hashing", progress=lambda _m: None)
    assert canonical_json(snapshot(again)) == canonical_json(snapshot(storage))


def test_every_demo_run_replays_byte_identically(
        demo: tuple[InMemoryStorage, list[str]]) -> None:
    storage, ids = demo
    assert len(ids) >= 160
    for rid in ids:
        report = replay(storage, rid)
        assert report.output == storage.runs.get(f"{rid}:output")


def test_the_stories_have_their_moments(demo: tuple[InMemoryStorage, list[str]]) -> None:
    storage, _ = demo
    assert storage.runs.get("trip-3-budget:memctx")["working_memory_chars"] > 0
    assert "2000" in storage.runs.get("trip-3-budget:output")["text"]
    assert storage.runs.get("tech-staging-range:memctx")["observation_count"] >= 1
    tiles = storage.runs.get("home-tiles:memctx")
    assert any(n["reason"] == "filtered-out" and n["thread_id"] == "bathroom-plans"
               for n in tiles["near_misses"])
    wm_calls = [k for k, v in storage.runs.list("trip-") if ":tool:" in k
                and v["name"] == "update_working_memory"]
    assert len(wm_calls) >= 5


def test_spec_6_5_demo_story_the_token_budget_trims_the_gate_code(
        demo: tuple[InMemoryStorage, list[str]]) -> None:
    """The fifth story: the token limiter removes the gate code from the small-budget
    run (provenance and why-forgotten say so) and the answer goes; the large-budget run
    keeps it and answers."""
    from memory_core.analysis.forgotten import why_forgotten
    from sample_data.scenarios.move import GATE_FACT

    storage, ids = demo
    assert {"move-gate-small-budget", "move-gate-large-budget"} <= set(ids)
    fact = next(m for m in storage.memory.get_messages("new-flat") if m.text() == GATE_FACT)
    small = storage.runs.get("move-gate-small-budget:memctx")
    gone = next(d for d in small["dropped"] if d["seq"] == fact.seq)
    assert gone["reason"] == "token-limit" and gone["thread_id"] == "new-flat"
    assert any(p["processor"] == "token-limiter" and p["seq"] == fact.seq
               and p["action"] == "removed" for p in small["processed"])
    assert small["settings"]["processors"][0]["limit"] == 160
    assert "I don't know" in storage.runs.get("move-gate-small-budget:output")["text"]
    e = why_forgotten(storage, "move-gate-small-budget", ("new-flat", fact.seq))
    assert e.fate == "trimmed-by-token-limit" and not e.reached_model

    large = storage.runs.get("move-gate-large-budget:memctx")
    assert large["dropped"] == [] and large["settings"]["processors"][0]["limit"] == 1000
    assert "4417" in storage.runs.get("move-gate-large-budget:output")["text"]
    assert why_forgotten(storage, "move-gate-large-budget",
                         ("new-flat", fact.seq)).fate == "recent"
