"""A tool is declared ``Tool(idempotent=True)`` only if running it twice with the same
arguments leaves the same state, and returns the same, as running it once (issue 31).

Every tool the library offers (what ``AgentMemory.tools`` and
``observation_recall_tool`` give in each configuration, and the benchmark's lookup) is
built through its public constructor and, where declared idempotent, run twice over one
store. The working-memory tool is not declared so: its merge stores a new nested object
with its nulls (SPEC §7.6), and a second merge deletes them. Run for a journaled call (as
the Runner runs it) it merges once per call, however often it runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel

from memory_core.composition.memory import AgentMemory
from memory_core.composition.observational import ObservationalConfig
from memory_core.composition.working_memory import TOOL_NAME, WorkingMemoryConfig
from memory_core.embedding.hashing import HashingEmbedder
from memory_core.journal import RunKeys
from memory_core.models.base import Tool, journaled_call
from memory_core.models.scripted import ScriptedModel
from memory_core.storage.base import Storage
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import Message
from tests.helpers import Tick

THREAD, RESOURCE = "t1", "u1"
#: a new nested object holding a null: the patch a second merge treats differently
NESTED_NULL = {"trip": {"hotel": None, "city": "Rome"}}


class TripMemory(BaseModel):
    trip: dict[str, Any] | None = None
    note: str | None = None


def _talk(mem: AgentMemory, texts: list[str]) -> None:
    for i, t in enumerate(texts):
        mem.append(THREAD, [Message(role="user" if i % 2 == 0 else "assistant", content=t)],
                   resource_id=RESOURCE)


def _wm(config: WorkingMemoryConfig, args: dict[str, Any]
        ) -> Callable[[Storage], list[tuple[Tool, dict[str, Any]]]]:
    def offered(s: Storage) -> list[tuple[Tool, dict[str, Any]]]:
        mem = AgentMemory(s, working_memory=config, clock=Tick())
        _talk(mem, ["I am going to Italy.", "Noted."])
        return [(t, args) for t in mem.tools(thread_id=THREAD, resource_id=RESOURCE)]
    return offered


def _observations(semantic: bool) -> Callable[[Storage], list[tuple[Tool, dict[str, Any]]]]:
    def offered(s: Storage) -> list[tuple[Tool, dict[str, Any]]]:
        # observed without an embedder: with one, the tool's first call indexes the
        # observations (a write), its second finds them indexed
        om = ObservationalConfig(model=ScriptedModel(["Refund approved for order 7"]),
                                 message_threshold=2)
        mem = AgentMemory(s, clock=Tick(), observational_memory=om, observation_tool=True)
        _talk(mem, ["refund?", "approved", "order?", "seven"])
        mem.compact_observations(THREAD)
        if semantic:
            mem = AgentMemory(s, clock=Tick(), embed=HashingEmbedder(64),
                              observational_memory=om, observation_tool=True)
        args = {"query": "refund", "expand": True}
        return [(t, args) for t in mem.tools(thread_id=THREAD, resource_id=RESOURCE)]
    return offered


def _bench_lookup(s: Storage) -> list[tuple[Tool, dict[str, Any]]]:
    from bench.runs_db import LOOKUP

    return [(LOOKUP, {"order_id": "A-1234"})]


WM_CONFIGS: dict[str, Callable[[Storage], list[tuple[Tool, dict[str, Any]]]]] = {
    "wm-free-form": _wm(WorkingMemoryConfig(), {"memory": NESTED_NULL}),
    "wm-resource": _wm(WorkingMemoryConfig(scope="resource"), {"memory": NESTED_NULL}),
    "wm-schema": _wm(WorkingMemoryConfig(schema=TripMemory), NESTED_NULL),
    "wm-template": _wm(WorkingMemoryConfig(template="# Trip\n- city:\n- hotel:\n"),
                       {"memory": NESTED_NULL}),
}
OFFERED = {
    **WM_CONFIGS,
    "observations-keyword": _observations(semantic=False),
    "observations-semantic": _observations(semantic=True),
    "bench-lookup": _bench_lookup,
}


def _state(s: Storage) -> dict[str, Any]:
    """Everything a tool could have changed, read through the public API."""
    threads = s.memory.list_threads()
    return {
        "threads": [t.model_dump(mode="json") for t in threads],
        "messages": {t.id: [m.model_dump(mode="json") for m in s.memory.get_messages(t.id)]
                     for t in threads},
        "wm": {k: s.memory.get_working_memory(k) for k in s.memory.list_working_memory_keys()},
        "observations": {t.id: [o.model_dump(mode="json")
                                for o in s.memory.list_observations(t.id)] for t in threads},
        "vectors": [(v.id, v.thread_id, v.vector.tolist(), v.metadata)
                    for v in s.memory.list_observation_vectors()],
        "journal": s.runs.list(""),
        "runs": [r.model_dump(mode="json") for r in s.runs.list_runs()],
    }


def _once_and_twice(tool: Tool, args: dict[str, Any], s: Storage
                    ) -> tuple[tuple[Any, dict[str, Any]], tuple[Any, dict[str, Any]]]:
    """(result, state) after running the tool once, then after running it again."""
    first = tool.fn(dict(args))
    once = _state(s)
    second = tool.fn(dict(args))
    return (first, once), (second, _state(s))


@pytest.mark.parametrize("config", sorted(OFFERED))
def test_a_tool_declared_idempotent_run_twice_is_run_once(config: str) -> None:
    s = InMemoryStorage(clock=Tick())
    offered = OFFERED[config](s)
    assert offered, f"{config} offers no tool"
    for tool, args in offered:
        if not tool.idempotent:
            continue
        once, twice = _once_and_twice(tool, args, s)
        assert twice == once, f"'{tool.name}' is declared idempotent but is not ({config})"


def test_the_declared_idempotent_tools_are_the_reads() -> None:
    """Which tools the check above holds to their word: the library's reads (not a
    vacuous pass), never the working-memory merge."""
    declared = set()
    for config in sorted(OFFERED):
        declared |= {t.name for t, _ in OFFERED[config](InMemoryStorage(clock=Tick()))
                     if t.idempotent}
    assert declared == {"recall_observations", "lookup_order"}


def test_recall_observations_first_call_writes_what_the_second_finds() -> None:
    """The semantic recall tool does write (it indexes observations missing vectors),
    so the idempotence check above compares a real write, not two no-ops."""
    s = InMemoryStorage(clock=Tick())
    ((tool, args),) = OFFERED["observations-semantic"](s)
    assert s.memory.list_observation_vectors() == []
    (first, once), (second, twice) = _once_and_twice(tool, args, s)
    assert len(once["vectors"]) == 1 and twice == once
    assert first == second and first["matches"][0]["text"] == "Refund approved for order 7"


@pytest.mark.parametrize("config", sorted(WM_CONFIGS))
def test_the_working_memory_merge_is_not_idempotent_so_its_tool_is_not_declared_so(
        config: str) -> None:
    """A patch whose new nested object holds a null is stored as given (SPEC §7.6); the
    same patch again merges into that object, where the null deletes the key. So a
    resume that ran the tool again would end with other working memory than a clean
    run: the tool must not claim it may run again."""
    s = InMemoryStorage(clock=Tick())
    ((tool, args),) = OFFERED[config](s)
    assert tool.name == TOOL_NAME
    (first, once), (second, twice) = _once_and_twice(tool, args, s)
    (key,) = once["wm"]
    assert once["wm"][key]["trip"] == {"hotel": None, "city": "Rome"}
    assert twice["wm"][key]["trip"] == {"city": "Rome"}
    assert first != second
    assert not tool.idempotent


@pytest.mark.parametrize("config", sorted(WM_CONFIGS))
def test_the_working_memory_tool_run_twice_for_one_journaled_call_merges_once(
        config: str) -> None:
    """What a resume does when a crash came after the merge but before the Runner
    recorded the result: the tool runs again for the same call. The merge committed
    with a mark of the call, so the second run returns the first's result and leaves
    the working memory as one run did; another call of the run merges again."""
    s = InMemoryStorage(clock=Tick())
    ((tool, args),) = OFFERED[config](s)
    with journaled_call("run-1", "c1"):
        (first, once), (second, twice) = _once_and_twice(tool, args, s)
    (key,) = once["wm"]
    assert once["wm"][key]["trip"] == {"hotel": None, "city": "Rome"}
    assert twice == once and second == first and first["ok"] is True
    assert s.runs.get(RunKeys("run-1").wm("c1")) == {"v": 1, "key": key, "result": first}
    with journaled_call("run-1", "c2"):
        third = tool.fn(dict(args))
    assert third["memory"]["trip"] == {"city": "Rome"}  # a call of its own: merged
    assert s.memory.get_working_memory(key) == third["memory"]


def test_a_refused_working_memory_patch_marks_no_call() -> None:
    """A patch the schema refuses stores nothing, so nothing marks its call: the same
    call run again (with the same patch) is refused again, never answered from a mark."""
    s = InMemoryStorage(clock=Tick())
    ((tool, _),) = WM_CONFIGS["wm-schema"](s)
    with journaled_call("run-1", "c1"):
        first = tool.fn({"unknown": 1})
        second = tool.fn({"unknown": 1})
    assert first["ok"] is False and second == first
    assert s.runs.list("run-1:") == [] and s.memory.list_working_memory_keys() == []
