"""SPEC statements the tally (docs/spec_tally.md) holds with a test of their own."""

from __future__ import annotations

from typing import Any

from memory_core.composition.memory import AgentMemory
from memory_core.composition.working_memory import WorkingMemoryConfig
from memory_core.models.base import ModelResponse
from memory_core.models.scripted import ScriptedModel
from memory_core.runs.runner import Agent, Runner
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import ToolCallPart
from tests.helpers import Tick


def test_spec_3_1_default_recent_window_is_six() -> None:
    s = InMemoryStorage(clock=Tick())
    mem = AgentMemory(s)
    for i in range(9):
        mem.append("t", [{"role": "user", "content": f"m{i}"}])  # type: ignore[list-item]
    comp = mem.load_context(thread_id="t", input=[{"role": "user", "content": "q"}])  # type: ignore[list-item]
    assert mem.recent_n == 6 and [i.seq for i in comp.prompt.items if i.lane == "recent"] \
        == [3, 4, 5, 6, 7, 8]


def test_spec_7_gwt_resumed_run_writes_working_memory_once() -> None:
    s = InMemoryStorage(clock=Tick())
    writes: list[Any] = []
    put = s.memory.put_working_memory

    def counting_put(key: str, value: Any) -> None:
        writes.append(value)
        put(key, value)

    s.memory.put_working_memory = counting_put  # type: ignore[method-assign]
    mem = AgentMemory(s, working_memory=WorkingMemoryConfig())
    patch = ToolCallPart(id="c1", name="update_working_memory", args={"memory": {"n": 1}})
    model = ScriptedModel([ModelResponse(tool_calls=[patch]), "done"])
    runner = Runner(storage=s, agents={"a": Agent(name="a", instructions="x", model=model)},
                    memory=mem)
    runner.run("a", run_id="r1", thread_id="t", prompt="go")
    runner.run("a", run_id="r1", thread_id="t", prompt="go")  # resumed: already complete
    assert writes == [{"n": 1}] and mem.get_working_memory(thread_id="t") == {"n": 1}
