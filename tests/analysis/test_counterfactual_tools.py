"""Counterfactuals whose re-asked model calls tools: an identical call reuses the recorded
result, another call runs the caller's real tool in the counterfactual's own journal
(never touching the thread, its working memory or the original run), and without a tool
the re-ask stops with "needs tool X" — no result is ever invented."""

from __future__ import annotations

from typing import Any

import pytest

from memory_core.analysis.counterfactual import attribution, counterfactual, list_counterfactuals
from memory_core.composition.memory import AgentMemory
from memory_core.composition.working_memory import TOOL_NAME as WM_TOOL
from memory_core.composition.working_memory import WorkingMemoryConfig
from memory_core.errors import InvalidInputError
from memory_core.models.base import ModelIdentity, ModelResponse, Tool, ToolSpec
from memory_core.models.scripted import ScriptedModel
from memory_core.runs.runner import Agent, Runner
from memory_core.storage.base import Storage
from memory_core.types import ToolCallPart
from tests.analysis.conftest import World, assistant, recall, user
from tests.helpers import jget

QUESTION = "Can I get a refund for my blender order?"
WM_KEY = "thread:cur"


class Scripted0(ScriptedModel):
    """A scripted model that states temperature 0: one answer per prompt, no noise."""

    def identity(self) -> ModelIdentity:
        return ModelIdentity(kind="scripted", name=self.name, temperature=0.0)


def lookup(cid: str, order_id: str) -> ModelResponse:
    return ModelResponse(tool_calls=[ToolCallPart(id=cid, name="lookup_order",
                                                  args={"order_id": order_id})])


def wm_patch(cid: str, **memory: Any) -> ModelResponse:
    return ModelResponse(tool_calls=[ToolCallPart(id=cid, name=WM_TOOL,
                                                  args={"memory": memory})])


class Orders:
    """The real lookup_order tool, counting every execution."""

    def __init__(self) -> None:
        self.ran: list[dict[str, Any]] = []

    def tool(self) -> Tool:
        def fn(args: dict[str, Any]) -> Any:
            self.ran.append(args)
            return {"order_id": args["order_id"], "status": "delivered", "total": 89.5}
        return Tool(ToolSpec("lookup_order", "Look up an order by id.",
                             {"type": "object",
                              "properties": {"order_id": {"type": "string"}}}), fn)


def memory_of(w: World) -> AgentMemory:
    return w.memory(recall=recall(top_k=2, threshold=0.5),
                    working_memory=WorkingMemoryConfig(scope="thread"))


def agent_of(orders: Orders, model: Any = None, max_steps: int = 8) -> Agent:
    return Agent(name="a", instructions="Help with orders.",
                 model=model or ScriptedModel([]), tools=[orders.tool()],
                 max_steps=max_steps)


@pytest.fixture
def orders() -> Orders:
    return Orders()


@pytest.fixture
def tool_story(world: World, orders: Orders) -> World:
    """Run r1: the model looks up order 1042, then answers."""
    w = world
    w.say("old", "r1", user("My blender order is 1042, it arrived broken."),
          assistant("Sorry to hear that."), user("Nice weather today."))
    w.say("cur", "r1", user("Hello"), assistant("Hi!"))
    w.storage.memory.put_working_memory(WM_KEY, {"customer": "Anna"})
    model = ScriptedModel([lookup("c1", "1042"),
                           "Order 1042 was delivered; I can refund 89.50."], name="orig")
    Runner(w.storage, {"a": agent_of(orders, model)}, memory=memory_of(w),
           clock=w.clock).run("a", run_id="r1", thread_id="cur", resource_id="r1",
                              prompt=QUESTION)
    orders.ran.clear()
    return w


def state(s: Storage) -> dict[str, Any]:
    """What a counterfactual must never change: messages, working memory and every
    record of the original run."""
    return {"messages": {t: [m.model_dump() for m in s.memory.get_messages(t)]
                         for t in ("old", "cur")},
            "wm": s.memory.get_working_memory(WM_KEY),
            "run": [(k, v) for k, v in s.runs.list("r1:") if not k.startswith("r1:cf:")],
            "row": s.runs.require_run("r1").model_dump()}


def test_an_identical_call_reuses_the_recorded_result(tool_story: World,
                                                      orders: Orders) -> None:
    model = Scripted0([lookup("x1", "1042"), "refund 89.50 approved",
                       lookup("x2", "1042"), "no refund possible"], name="orig")
    res = counterfactual(tool_story.storage, "r1", lanes=["recalled"], model=model)
    assert orders.ran == []  # nothing executed
    assert [(u.attempt, u.source, u.recorded_call_id, u.status) for u in res.tool_uses] == [
        ("baseline-1", "reused", "c1", "ok"), ("variant-1", "reused", "c1", "ok")]
    # the model saw the recorded result as the tool message
    tool_msg = model.seen[1][-1]
    assert tool_msg.role == "tool"
    assert tool_msg.tool_results()[0].result == {"order_id": "1042", "status": "delivered",
                                                  "total": 89.5}
    assert tool_msg.tool_results()[0].call_id == "x1"
    assert res.new_stops == ["final"] and res.needs_tools == []
    assert not tool_story.storage.runs.list(f"{res.key}:tool:")  # no tool run journaled


def test_another_call_runs_the_given_tool_in_the_counterfactuals_journal(
        tool_story: World, orders: Orders) -> None:
    before = state(tool_story.storage)
    model = Scripted0([lookup("x1", "1042"), "refund 89.50 approved",
                       lookup("x2", "77"), wm_patch("x3", order="77"),
                       "order 77 was delivered"], name="orig")
    res = counterfactual(tool_story.storage, "r1", lanes=["recalled"], model=model,
                         tools=[orders.tool()], memory=memory_of(tool_story))
    assert orders.ran == [{"order_id": "77"}]
    sources = [(u.attempt, u.name, u.source) for u in res.tool_uses]
    assert sources == [("baseline-1", "lookup_order", "reused"),
                       ("variant-1", "lookup_order", "run"),
                       ("variant-1", WM_TOOL, "run")]
    run_use, wm_use = res.tool_uses[1], res.tool_uses[2]
    assert run_use.key is not None and run_use.key.startswith(f"{res.key}:tool:variant-1:")
    rec = jget(tool_story.storage, run_use.key)
    assert rec["result"]["order_id"] == "77" and rec["status"] == "ok"
    # the working-memory update ran against a scratch copy that started from the stored one
    wm_rec = jget(tool_story.storage, wm_use.key or "")
    assert wm_rec["result"] == {"ok": True, "memory": {"customer": "Anna", "order": "77"}}
    assert "scratch copy" in (wm_use.reason or "")
    assert res.new_answers == ["order 77 was delivered"]
    assert state(tool_story.storage) == before  # thread, WM and the run untouched
    # asked again: the journaled result, no second execution
    again = counterfactual(tool_story.storage, "r1", lanes=["recalled"], model=model,
                           tools=[orders.tool()], memory=memory_of(tool_story))
    assert again == res and orders.ran == [{"order_id": "77"}]
    assert [c.key for c in list_counterfactuals(tool_story.storage, "r1")] == [res.key]


def test_without_the_tool_the_reask_stops_and_names_it(tool_story: World,
                                                       orders: Orders) -> None:
    before = state(tool_story.storage)
    model = Scripted0([lookup("x1", "1042"), "refund 89.50 approved",
                       lookup("x2", "77")], name="orig")
    res = counterfactual(tool_story.storage, "r1", lanes=["recalled"], model=model)
    assert model.calls == 3  # stopped at the call: nothing was made up to continue
    assert res.needs_tools == ["lookup_order"] and res.new_stops == ["needs_tool"]
    assert res.verdict == "inconclusive" and not res.changed
    missing = res.tool_uses[-1]
    assert (missing.source, missing.args, missing.key) == ("missing", {"order_id": "77"}, None)
    assert any(n.startswith("needs tool lookup_order") for n in res.notes)
    assert res.new_answers == ['[calls lookup_order({"order_id":"77"})]']
    assert orders.ran == [] and not tool_story.storage.runs.list(f"{res.key}:tool:")
    assert state(tool_story.storage) == before
    # once the tool is given, the earlier "needs tool" result is not reused
    model2 = Scripted0([lookup("x1", "1042"), "refund 89.50 approved",
                        lookup("x2", "77"), "order 77 was delivered"], name="orig")
    ran = counterfactual(tool_story.storage, "r1", lanes=["recalled"], model=model2,
                         agent=agent_of(orders))
    assert ran.key != res.key and ran.needs_tools == [] and orders.ran == [{"order_id": "77"}]


def test_the_working_memory_tool_is_refused_without_a_scratch_copy(
        tool_story: World, orders: Orders) -> None:
    before = state(tool_story.storage)
    model = Scripted0([lookup("x1", "1042"), "refund 89.50 approved",
                       wm_patch("x2", customer="Mallory")], name="orig")
    # even a caller's tool bound to the real store never runs under that name
    real_wm = memory_of(tool_story).tools(thread_id="cur", resource_id="r1")
    res = counterfactual(tool_story.storage, "r1", lanes=["recalled"], model=model,
                         tools=real_wm)
    assert res.new_stops == ["refused"] and res.needs_tools == [WM_TOOL]
    assert "pass memory=" in (res.tool_uses[-1].reason or "")
    assert state(tool_story.storage) == before


def test_the_registered_agent_supplies_tools_and_max_steps(tool_story: World,
                                                           orders: Orders) -> None:
    # a model that keeps calling stops at the agent's max_steps
    model = Scripted0([lookup("x1", "1042"), "refund 89.50 approved",
                       lookup("y1", "5"), lookup("y2", "6")], name="orig")
    res = counterfactual(tool_story.storage, "r1", lanes=["recalled"], model=model,
                         agents={"a": agent_of(orders, max_steps=2)})
    assert orders.ran == [{"order_id": "5"}, {"order_id": "6"}]
    assert res.new_stops == ["max_steps"]
    assert [u.source for u in res.tool_uses if u.attempt == "variant-1"] == ["run", "run"]


def test_attribution_reuses_recorded_tool_results(tool_story: World, orders: Orders) -> None:
    prompt = jget(tool_story.storage, "r1:prompt")
    n = len({(i["thread_id"], i["seq"]) for i in prompt["items"]
             if i["lane"] != "input" and i.get("thread_id") is not None})
    assert n >= 2  # every stored message it was given: recalled and recent
    script: list[str | ModelResponse] = [lookup("x0", "1042"), "refund 89.50 approved"]
    for i in range(n):
        script += [lookup(f"x{i + 1}", "1042"), "refund 89.50 approved"]
    model = Scripted0(script, name="orig")
    ranked = attribution(tool_story.storage, "r1", model=model)
    assert model.calls == len(script)  # the unchanged prompt asked once for all items
    assert all(a.verdict == "unchanged" and a.key for a in ranked)
    assert orders.ran == []


def test_bad_tool_arguments_are_named(tool_story: World) -> None:
    with pytest.raises(InvalidInputError, match=r"tools\[0\] must be a memory_core Tool"):
        counterfactual(tool_story.storage, "r1", lanes=["recalled"], model=Scripted0([]),
                       tools=["lookup_order"])  # type: ignore[list-item]
    with pytest.raises(InvalidInputError, match="agent must be a memory_core Agent"):
        counterfactual(tool_story.storage, "r1", lanes=["recalled"], model=Scripted0([]),
                       agent="a")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="repeats must be an integer >= 1, got 0"):
        counterfactual(tool_story.storage, "r1", lanes=["recalled"], model=Scripted0([]),
                       repeats=0)


def test_a_run_stopped_at_max_steps_answered_with_its_calls() -> None:
    from memory_core.storage.inmemory import InMemoryStorage

    st = InMemoryStorage()
    search = Tool(ToolSpec("search", "search the docs"), lambda args: "nothing found")
    call = ModelResponse(tool_calls=[ToolCallPart(id="c1", name="search",
                                                  args={"q": "refund policy"})])
    agent = Agent("helper", "Help.", ScriptedModel([call]), tools=[search], max_steps=1)
    Runner(st, {"helper": agent}, memory=AgentMemory(st)).run(
        "helper", run_id="r1", thread_id="t1", prompt="What is the policy?")
    res = counterfactual(st, "r1", lanes=["recent"], agent=agent,
                         model=ScriptedModel([call, call], name="orig"), repeats=1)
    # its answer was the call, not "" (shown as "(no answer recorded)"); a re-ask that
    # stops at max steps on the same call answers the same
    assert res.original_answer == '[calls search({"q":"refund policy"})]'
    assert res.new_answers == [res.original_answer] and res.verdict == "unchanged"
