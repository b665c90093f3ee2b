"""The durable runner: SPEC §6.6 order, frozen prompt and memctx, one journal entry per
model step and tool call, messages persisted exactly once, run status, resume."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from memory_core.composition.memory import AgentMemory
from memory_core.composition.working_memory import WorkingMemoryConfig
from memory_core.errors import InvalidInputError, ModelError, NotFoundError, ReplayMismatch
from memory_core.journal import RunKeys, RunReader, input_digest, message_hash
from memory_core.journal.keys import is_claim
from memory_core.models.base import ModelResponse, Tool, ToolSpec
from memory_core.models.scripted import RaisingModel, ScriptedModel
from memory_core.runs.runner import Agent, Runner, ToolExecutionError
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import Message, ToolCallPart
from tests.helpers import Tick, jget


def call(cid: str, name: str, **args: Any) -> ToolCallPart:
    return ToolCallPart(id=cid, name=name, args=args)


class Counter:
    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def tool(self) -> Tool:
        def fn(args: dict[str, Any]) -> Any:
            self.calls.append(args)
            return {"balance": 42}
        return Tool(ToolSpec("lookup", "look up a balance"), fn)


def setup(model: Any, *, tools: list[Tool] | None = None, wm: bool = True,
          max_steps: int = 8) -> tuple[InMemoryStorage, AgentMemory, Runner]:
    clock = Tick()
    s = InMemoryStorage(clock=clock)
    mem = AgentMemory(s, recent_n=6,
                      working_memory=WorkingMemoryConfig() if wm else None, clock=clock)
    agent = Agent(name="support", instructions="Be brief.", model=model, tools=tools or [],
                  max_steps=max_steps)
    return s, mem, Runner(s, {"support": agent}, memory=mem, clock=clock)


def test_simple_run_composes_before_persisting_and_journals_everything() -> None:
    model = ScriptedModel(["hello back"])
    s, mem, runner = setup(model, wm=False)
    mem.append("t1", [Message(role="user", content="earlier"),
                      Message(role="assistant", content="ok")], "r1")
    res = runner.run("support", run_id="run1", thread_id="t1", resource_id="r1",
                     prompt="hello")
    assert res.text == "hello back" and res.steps == 1 and res.tool_calls == 0
    assert not res.resumed
    prompt = jget(s, "run1:prompt")
    lanes = [(i["lane"], i["seq"]) for i in prompt["items"]]
    # the input is not in the recent lane: composition ran before it was persisted
    assert lanes == [("instructions", None), ("recent", 0), ("recent", 1), ("input", None)]
    assert jget(s, "run1:input")["messages"][0]["content"] == "hello"
    assert jget(s, "run1:memctx")["recent_count"] == 2
    assert s.runs.get("run1:persist:input") == {"v": 1, "seqs": [2]}
    assert s.runs.get("run1:persist:output") == {"v": 1, "seqs": [3]}
    assert s.runs.get("run1:output") == {"v": 1, "text": "hello back", "steps": 1,
                                         "tool_calls": 0, "stop_reason": "final"}
    step = jget(s, "run1:step:0")
    assert step["v"] == 2 and step["model"] == {
        "kind": "scripted", "name": "scripted", "base_url": None, "temperature": None,
        "top_p": None, "seed": None, "max_tokens": None}
    assert step["input_hashes"] == [message_hash(m) for m in model.seen[0]]
    assert step["input_hash"] == input_digest(model.seen[0])
    msgs = s.memory.get_messages("t1")
    assert [(m.seq, m.role, m.content, m.run_id) for m in msgs] == [
        (0, "user", "earlier", None), (1, "assistant", "ok", None),
        (2, "user", "hello", "run1"), (3, "assistant", "hello back", "run1")]
    run = s.runs.require_run("run1")
    assert run.status == "completed" and run.finished_at is not None and run.agent == "support"
    keys = [k for k, _ in s.runs.list("run1:") if not is_claim(k)]
    assert keys == ["run1:input", "run1:memctx", "run1:prompt", "run1:persist:input",
                    "run1:step:0", "run1:persist:output", "run1:output", "run1:seal"]


def test_tool_calls_and_working_memory_are_journaled_and_persisted() -> None:
    counter = Counter()
    model = ScriptedModel([
        ModelResponse(text="checking", tool_calls=[
            call("c1", "lookup", account="a-1"),
            call("c2", "update_working_memory", memory={"refund": "approved"})]),
        "Your balance is 42."])
    s, mem, runner = setup(model, tools=[counter.tool()])
    res = runner.run("support", run_id="run1", thread_id="t1", prompt="balance?")
    assert res.text == "Your balance is 42." and res.steps == 2 and res.tool_calls == 2
    assert counter.calls == [{"account": "a-1"}]
    assert mem.get_working_memory(thread_id="t1") == {"refund": "approved"}
    assert s.runs.get("run1:tool:c1") == {"v": 1, "name": "lookup", "args": {"account": "a-1"},
                                          "status": "ok", "result": {"balance": 42},
                                          "error": None}
    assert jget(s, "run1:tool:c2")["result"]["ok"] is True
    # step 1 saw the frozen prompt plus the assistant call and both results
    seen = model.seen[1]
    assert seen[:len(res.prompt.items)] == res.prompt.messages()
    assert [m.role for m in seen[len(res.prompt.items):]] == ["assistant", "tool", "tool"]
    stored = s.memory.get_messages("t1")
    assert [(m.seq, m.role) for m in stored] == [(0, "user"), (1, "assistant"), (2, "tool"),
                                                 (3, "tool"), (4, "assistant")]
    assert all(m.run_id == "run1" for m in stored)
    assert stored[2].tool_results()[0].call_id == "c1"


def test_the_working_memory_merge_commits_with_a_mark_of_its_call_left_out_of_the_seal(
        ) -> None:
    """The working-memory tool runs for the Runner's call: its merge is written with
    ``<run>:wm:<call>`` holding the result the tool record holds (what a resume that
    runs the call again returns, tests/test_crash_resume.py). The mark is bookkeeping,
    as a claim is: the seal, written from what the run wrote, leaves it out and still
    verifies."""
    from memory_core.journal.seal import verify_run

    model = ScriptedModel([ModelResponse(tool_calls=[
        call("c1", "update_working_memory", memory={"trip": {"hotel": None}})]), "noted"])
    s, mem, runner = setup(model)
    runner.run("support", run_id="run1", thread_id="t1", prompt="remember")
    result = jget(s, "run1:tool:c1")["result"]
    assert result == {"ok": True, "memory": {"trip": {"hotel": None}}}
    assert s.runs.get(RunKeys("run1").wm("c1")) == {"v": 1, "key": "thread:t1",
                                                    "result": result}
    assert "run1:wm:c1" not in dict(jget(s, "run1:seal")["entries"])
    assert verify_run(s, "run1").status == "ok"


def test_model_error_marks_failed_and_resume_loses_nothing() -> None:
    class Flaky:
        name = "flaky"

        def __init__(self) -> None:
            self.calls = 0

        def complete(self, messages: Any, tools: Any) -> ModelResponse:
            self.calls += 1
            if self.calls == 2:
                raise TimeoutError("read timed out")
            if self.calls == 1:
                return ModelResponse(tool_calls=[call("c1", "lookup")])
            return ModelResponse(text="done")

    counter = Counter()
    model = Flaky()
    s, mem, runner = setup(model, tools=[counter.tool()])
    with pytest.raises(ModelError, match="read timed out"):
        runner.run("support", run_id="run1", thread_id="t1", prompt="go")
    run = s.runs.require_run("run1")
    assert run.status == "failed" and run.error is not None and "TimeoutError" in run.error
    assert [m.seq for m in s.memory.get_messages("t1")] == [0]  # input stored ahead
    res = runner.run("support", run_id="run1", thread_id="t1", prompt="go")
    assert res.resumed and res.text == "done"
    assert model.calls == 3  # step 0 once, the failed try, step 1 once
    assert counter.calls == [{}]
    assert [(m.seq, m.role) for m in s.memory.get_messages("t1")] == [
        (0, "user"), (1, "assistant"), (2, "tool"), (3, "assistant")]
    assert s.runs.require_run("run1").status == "completed"
    assert s.runs.require_run("run1").error is None


def test_tool_exception_fails_the_run_and_resume_applies_it_once() -> None:
    applied: list[int] = []

    def fragile(args: dict[str, Any]) -> Any:
        applied.append(1)
        if len(applied) == 1:
            raise ConnectionError("backend down")
        return "ok"

    model = ScriptedModel([ModelResponse(tool_calls=[call("c1", "fragile")]), "fine"])
    s, mem, runner = setup(model, tools=[Tool(ToolSpec("fragile", "x"), fragile)])
    with pytest.raises(ToolExecutionError, match="backend down"):
        runner.run("support", run_id="run1", thread_id="t1", prompt="go")
    assert s.runs.require_run("run1").status == "failed"
    assert s.runs.get("run1:tool:c1") is None
    res = runner.run("support", run_id="run1", thread_id="t1", prompt="go")
    assert res.text == "fine" and len(applied) == 2 and model.calls == 2
    runner.run("support", run_id="run1", thread_id="t1", prompt="go")
    assert len(applied) == 2


def test_completed_run_resumes_without_model_tools_or_writes() -> None:
    counter = Counter()
    model = ScriptedModel([ModelResponse(tool_calls=[
        call("c1", "lookup"), call("c2", "update_working_memory", memory={"n": 1})]), "end"])
    s, mem, runner = setup(model, tools=[counter.tool()])
    first = runner.run("support", run_id="run1", thread_id="t1", prompt="go")
    journal = RunReader(s.runs, "run1").entries()
    again = Runner(s, {"support": Agent("support", "Be brief.", RaisingModel(),
                                        [counter.tool()])}, memory=mem, clock=Tick())
    res = again.run("support", run_id="run1", thread_id="t1", prompt="go")
    assert res.resumed and res.text == first.text == "end"
    assert res.memctx == first.memctx and res.prompt == first.prompt
    assert len(counter.calls) == 1 and RunReader(s.runs, "run1").entries() == journal
    assert s.memory.count_messages("t1") == 5


def test_resume_reads_the_frozen_prompt_and_never_recomposes() -> None:
    model = ScriptedModel([])  # fails at step 0
    s, mem, runner = setup(model)
    with pytest.raises(ModelError):
        runner.run("support", run_id="run1", thread_id="t1", prompt="first")
    memctx = jget(s, "run1:memctx")
    mem.append("t1", [Message(content="written later")])

    def no_compose(**kw: Any) -> Any:
        raise AssertionError("load_context called on resume")

    mem.load_context = no_compose  # type: ignore[method-assign]
    runner.agents["support"] = Agent("support", "Be brief.", ScriptedModel(["ok"]))
    res = runner.run("support", run_id="run1", thread_id="t1", prompt="first")
    assert res.text == "ok" and s.runs.get("run1:memctx") == memctx
    assert [m.content for m in s.memory.get_messages("t1")] == ["first", "written later", "ok"]


def test_resume_with_another_embedder_is_refused_and_the_same_one_verifies() -> None:
    """The first try embedded the input with one 384-d embedder; a resume with another
    of the same dimension would store the answer's vector from another model (and the
    seal's check of it would call the run tampered): refused, nothing written."""
    from memory_core.embedding.hashing import HashingEmbedder
    from memory_core.journal.seal import verify_run

    def other(texts: list[str]) -> Any:
        return np.stack([np.roll(HashingEmbedder(384)([t])[0], 1) for t in texts])
    other.name = "other-384"  # type: ignore[attr-defined]

    clock = Tick()
    s = InMemoryStorage(clock=clock)

    def runner_with(embed: Any, model: Any) -> Runner:
        mem = AgentMemory(s, recent_n=6, embed=embed, clock=clock)
        return Runner(s, {"support": Agent("support", "Be brief.", model)}, memory=mem,
                      clock=clock)

    with pytest.raises(ModelError):  # fails at step 0, its prompt frozen
        runner_with(HashingEmbedder(384), ScriptedModel([])).run(
            "support", run_id="run1", thread_id="t1", prompt="the gate code is 4512")
    with pytest.raises(InvalidInputError, match="'hashing-384'.*'other-384'"):
        runner_with(other, ScriptedModel(["noted"])).run(
            "support", run_id="run1", thread_id="t1", prompt="the gate code is 4512")
    assert [m.content for m in s.memory.get_messages("t1")] == ["the gate code is 4512"]
    assert s.runs.require_run("run1").status == "failed"
    res = runner_with(HashingEmbedder(384), ScriptedModel(["noted"])).run(
        "support", run_id="run1", thread_id="t1", prompt="the gate code is 4512")
    assert res.resumed and res.text == "noted"
    assert verify_run(s, "run1").status == "ok"


def test_unknown_tool_is_reported_back_to_the_model() -> None:
    model = ScriptedModel([ModelResponse(tool_calls=[call("c1", "nope")]), "sorry"])
    s, _, runner = setup(model, wm=False)
    res = runner.run("support", run_id="run1", thread_id="t1", prompt="go")
    rec = jget(s, "run1:tool:c1")
    assert rec["status"] == "error" and "unknown tool 'nope'" in rec["error"]
    assert res.text == "sorry"
    assert model.seen[1][-1].tool_results()[0].result == {"error": rec["error"]}


def test_max_steps_stops_the_loop() -> None:
    model = ScriptedModel([ModelResponse(text="again", tool_calls=[call(f"c{i}", "nope")])
                           for i in range(2)])
    s, _, runner = setup(model, wm=False, max_steps=2)
    res = runner.run("support", run_id="run1", thread_id="t1", prompt="go")
    assert res.stop_reason == "max_steps" and res.steps == 2 and res.text == "again"
    assert jget(s, "run1:output")["stop_reason"] == "max_steps"


def test_without_memory_nothing_is_stored_but_everything_is_journaled() -> None:
    s = InMemoryStorage()
    runner = Runner(s, {"a": Agent("a", "sys", ScriptedModel(["x"]))}, clock=Tick())
    res = runner.run("a", run_id="r", prompt=[Message(content="hi")])
    assert res.text == "x" and res.memctx is None
    assert [i.lane for i in res.prompt.items] == ["instructions", "input"]
    assert s.runs.get("r:memctx") is None and s.runs.get("r:persist:input") is None
    assert s.memory.list_threads() == [] and s.runs.require_run("r").status == "completed"


def _resume_with_tampered_step(edit: Callable[[dict[str, Any]], None]) -> None:
    """Fail run1 after its first step, rewrite that step record with ``edit`` and
    resume: the resume must notice the recorded input no longer matches."""
    model = ScriptedModel([ModelResponse(tool_calls=[call("c1", "lookup")])])
    s, _, runner = setup(model, tools=[Counter().tool()], wm=False)
    with pytest.raises(ModelError):
        runner.run("support", run_id="run1", thread_id="t1", prompt="go")
    rec = jget(s, RunKeys("run1").step(0))
    s.runs.delete(RunKeys("run1").step(0))
    edit(rec)
    s.runs.put_if_absent(RunKeys("run1").step(0), rec)
    runner.run("support", run_id="run1", thread_id="t1", prompt="go")


def test_changed_step_input_on_resume_raises_replay_mismatch() -> None:
    with pytest.raises(ReplayMismatch, match=r"run1:step:0.*message 1"):
        _resume_with_tampered_step(lambda rec: rec["input_hashes"].__setitem__(1, "0" * 16))


def test_bad_calls_name_the_bad_value() -> None:
    s, _, runner = setup(ScriptedModel(["x", "y"]), wm=False)
    with pytest.raises(NotFoundError, match="'ghost'"):
        runner.run("ghost", run_id="r", prompt="hi")
    with pytest.raises(InvalidInputError, match="run_id"):
        runner.run("support", run_id="a:b", prompt="hi")
    with pytest.raises(InvalidInputError, match="prompt"):
        runner.run("support", run_id="r", prompt="  ")
    runner.run("support", run_id="r", thread_id="t1", prompt="hi")
    with pytest.raises(InvalidInputError, match="'t1'"):
        runner.run("support", run_id="r", thread_id="t2", prompt="hi")
    with pytest.raises(InvalidInputError, match="max_steps"):
        Agent("a", "i", None, max_steps=0)
    with pytest.raises(InvalidInputError, match="'x'"):
        Runner(s, {"x": Agent("y", "i", None)})


def test_whole_input_hash_is_checked_when_per_message_hashes_are_absent() -> None:
    def edit(rec: dict[str, Any]) -> None:
        del rec["input_hashes"]
        rec["input_hash"] = "f" * 64

    with pytest.raises(ReplayMismatch, match="whole-input hash"):
        _resume_with_tampered_step(edit)


def test_bad_tool_arguments_are_recorded_and_fed_back_not_fatal() -> None:
    def strict(args: dict[str, Any]) -> Any:
        raise ValueError(f"order id must be digits, got {args.get('order')!r}")

    model = ScriptedModel([ModelResponse(tool_calls=[call("c1", "strict", order="x")]),
                           "I need a valid order id."])
    s, _, runner = setup(model, tools=[Tool(ToolSpec("strict", "x"), strict)], wm=False)
    res = runner.run("support", run_id="run1", thread_id="t1", prompt="go")
    rec = jget(s, "run1:tool:c1")
    assert rec["status"] == "error" and "got 'x'" in rec["error"]
    assert res.text == "I need a valid order id."
    assert s.runs.require_run("run1").status == "completed"


@pytest.mark.parametrize("bad", [{1: "int key"}, {"x": float("nan")}, {"s": {1, 2}}])
def test_a_tool_result_storage_would_refuse_is_an_error_the_model_sees(bad: Any) -> None:
    model = ScriptedModel([ModelResponse(tool_calls=[call("c1", "odd")]), "Noted."])
    s, _, runner = setup(model, tools=[Tool(ToolSpec("odd", "x"), lambda a: bad)], wm=False)
    res = runner.run("support", run_id="run1", thread_id="t1", prompt="go")
    rec = jget(s, "run1:tool:c1")
    assert rec["status"] == "error" and "result of tool 'odd'" in rec["error"]
    assert res.text == "Noted." and s.runs.require_run("run1").status == "completed"


def test_a_fresh_run_reads_back_none_of_its_own_records() -> None:
    """A run whose row this attempt inserted has nothing recorded before it: it does
    not look for stored steps, persist records or messages of its own, nor read back
    what it writes (a resumed run still does: tests/test_crash_resume.py)."""
    from memory_core.composition.memory import AgentMemory
    from memory_core.embedding.hashing import HashingEmbedder
    from memory_core.models.scripted import ScriptedModel
    from memory_core.storage.inmemory import InMemoryStorage

    s = InMemoryStorage()
    mem = AgentMemory(s, embed=HashingEmbedder(32), recent_n=4)
    runner = Runner(s, {"a": Agent(name="a", instructions="A.",
                                   model=ScriptedModel(["one", "two"]))}, memory=mem)
    runner.run("a", run_id="r0", thread_id="t", resource_id="u", prompt="first")
    reads: list[str] = []
    get, listed, by_run = s.runs.get, s.runs.list, s.memory.get_messages_by_run
    s.runs.get = lambda key: (reads.append(key), get(key))[1]  # type: ignore[method-assign]
    s.runs.list = (  # type: ignore[method-assign]
        lambda prefix: (reads.append(f"list {prefix}"), listed(prefix))[1])
    s.memory.get_messages_by_run = (  # type: ignore[method-assign]
        lambda t, r: (reads.append(f"messages of {r}"), by_run(t, r))[1])
    result = runner.run("a", run_id="r1", thread_id="t", resource_id="u", prompt="second")
    assert result.text == "two" and result.input_seqs == [2] and result.output_seqs == [3]
    # the look before the claim, then (the claim made) the one look at the run's records
    # that tells a fresh run from a resumed one; the claim is checked and released
    # without reads (an adapter whose write groups are transactions claims inside the
    # first group and needs only the first look: tests/test_runner_groups.py)
    assert [k for k in reads if "r1:" in k or k == "messages of r1"] == [
        "list r1:", "list r1:"]
