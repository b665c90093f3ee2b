"""Input processors (SPEC §3, §6 GWT 3, §6.5–6.6): the token limiter with its budget and
lane priority, the over-budget input case, the tool-call filter, and what provenance,
why-forgotten and the inspector say about what they removed."""

from __future__ import annotations

from typing import Any

import pytest

from memory_core.analysis.forgotten import why_forgotten
from memory_core.composition.memory import AgentMemory
from memory_core.composition.processors import (
    TokenBudgetExceeded,
    TokenLimiter,
    ToolCallFilter,
)
from memory_core.composition.working_memory import WorkingMemoryConfig
from memory_core.embedding.hashing import HashingEmbedder
from memory_core.errors import InvalidInputError
from memory_core.models.scripted import ScriptedModel
from memory_core.recall.config import RecallConfig
from memory_core.runs.runner import Agent, Runner
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import Message, TextPart, ToolCallPart, ToolResultPart
from tests.helpers import Tick


def storage() -> InMemoryStorage:
    return InMemoryStorage(clock=Tick())


def user(text: str) -> Message:
    return Message(role="user", content=text)


def bot(text: str) -> Message:
    return Message(role="assistant", content=text)


def filled(mem: AgentMemory, thread: str = "t", n: int = 6, size: int = 40) -> None:
    for i in range(n):
        mem.append(thread, [user(f"message {i} " + "x" * size)], resource_id="r")


def test_spec_6_5_token_limiter_removes_oldest_recent_rows_and_records_them() -> None:
    s = storage()
    mem = AgentMemory(s, recent_n=6, token_budget=40)
    filled(mem)  # each row: 50 chars -> 13 tokens; 6 rows + "hi" = 79
    comp = mem.load_context(thread_id="t", input=[user("hi")])
    assert comp.memctx.tokens.total <= 40
    kept = [i.seq for i in comp.prompt.items if i.lane == "recent"]
    assert kept == [3, 4, 5]  # the oldest gave way first, no more than needed
    removed = [(p.lane, p.seq, p.action, p.processor) for p in comp.memctx.processed]
    assert removed == [("recent", s_, "removed", "token-limiter") for s_ in range(3)]
    assert all(p.tokens_before == 13 and p.tokens_after == 0 for p in comp.memctx.processed)
    assert "40" in comp.memctx.processed[0].reason
    assert [(d.seq, d.reason, d.lane) for d in comp.memctx.dropped] == [
        (i, "token-limit", "recent") for i in range(3)]
    assert comp.memctx.dropped_count == 3
    assert comp.memctx.settings.processors == [
        {"name": "token-limiter", "limit": 40, "priority": ["recalled", "observations",
                                                            "recent", "working_memory"],
         "on_overflow": "pass"}]


def test_spec_6_5_token_limiter_within_budget_changes_nothing() -> None:
    s = storage()
    plain, limited = AgentMemory(s, recent_n=6), AgentMemory(s, recent_n=6, token_budget=10_000)
    filled(plain)
    a = plain.load_context(thread_id="t", input=[user("hi")])
    b = limited.load_context(thread_id="t", input=[user("hi")])
    assert a.prompt == b.prompt and b.memctx.processed == [] and b.memctx.dropped == []


def test_spec_3_token_limiter_recalled_lane_gives_way_first_lowest_score_first() -> None:
    s = storage()
    mem = AgentMemory(s, embed=HashingEmbedder(), recent_n=2,
                      recall=RecallConfig(top_k=2, threshold=0.0, scope="thread"))
    mem.append("t", [user("the refund for order A-1 was approved"), bot("noted"),
                     user("the refund policy allows thirty days"), bot("ok"),
                     user("weather"), bot("sunny")], resource_id="r")
    full = mem.load_context(thread_id="t", input=[user("what about the refund for A-1?")])
    hits = sorted((r.score or 0, r.seq) for r in full.memctx.recalled)
    assert len(hits) == 2
    limited = AgentMemory(s, embed=HashingEmbedder(), recent_n=2,
                          recall=RecallConfig(top_k=2, threshold=0.0, scope="thread"),
                          token_budget=full.memctx.tokens.total - 1)
    comp = limited.load_context(thread_id="t", input=[user("what about the refund for A-1?")])
    assert [r.seq for r in comp.memctx.recalled] == [hits[1][1]]  # the best hit stays
    assert [(d.seq, d.reason, d.lane) for d in comp.memctx.dropped] == [
        (hits[0][1], "token-limit", "recalled")]
    assert comp.memctx.recent_count == full.memctx.recent_count  # recent untouched


def test_spec_6_6_token_limiter_removes_a_tool_exchange_whole() -> None:
    s = storage()
    mem = AgentMemory(s, recent_n=10, token_budget=30)
    call = Message(role="assistant", content=[ToolCallPart(id="c1", name="refund",
                                                            args={"id": "x" * 60})])
    res = Message(role="tool", content=[ToolResultPart(call_id="c1", name="refund",
                                                        result="approved")])
    mem.append("t", [user("start"), call, res, bot("done " + "y" * 40)], resource_id="r")
    comp = mem.load_context(thread_id="t", input=[user("hi")])
    seqs = [i.seq for i in comp.prompt.items if i.lane == "recent"]
    assert 1 not in seqs and 2 not in seqs  # call and result went together
    assert {p.seq for p in comp.memctx.processed} >= {1, 2}


def test_spec_6_5_token_limiter_shortens_working_memory_last() -> None:
    s = storage()
    wm = WorkingMemoryConfig(template="# Notes\n" + "note line\n" * 40, read_only=True)
    full = AgentMemory(s, working_memory=wm).load_context(thread_id="t", input=[user("hi")])
    budget = full.memctx.tokens.total - 20
    comp = AgentMemory(s, working_memory=wm, token_budget=budget).load_context(
        thread_id="t", input=[user("hi")])
    [p] = comp.memctx.processed
    assert (p.lane, p.action, p.processor) == ("working_memory", "shortened", "token-limiter")
    assert p.tokens_after < p.tokens_before and comp.memctx.tokens.total <= budget
    wm_item = next(i for i in comp.prompt.items if i.lane == "working_memory")
    assert (wm_item.message.text() or "").endswith("…")
    assert comp.memctx.dropped == []  # nothing stored was removed


def test_spec_6_5_input_over_budget_passes_recorded_and_never_trimmed(
        caplog: pytest.LogCaptureFixture) -> None:
    s = storage()
    mem = AgentMemory(s, recent_n=4, token_budget=5)
    filled(mem, n=2)
    question = user("a very long question " * 5)
    with caplog.at_level("WARNING"):
        comp = mem.load_context(thread_id="t", input=[question])
    assert [i.message for i in comp.prompt.items if i.lane == "input"] == [question]
    assert [i.lane for i in comp.prompt.items] == ["input"]
    assert comp.memctx.over_budget == comp.memctx.tokens.total - 5 > 0
    assert "over the budget" in caplog.text


def test_spec_6_5_input_over_budget_fails_when_asked_and_writes_nothing() -> None:
    s = storage()
    mem = AgentMemory(s, processors=[TokenLimiter(5, on_overflow="fail")])
    with pytest.raises(TokenBudgetExceeded, match="token budget of 5"):
        mem.load_context(thread_id="t", input=[user("a very long question " * 5)])
    assert s.memory.get_messages("t") == []


@pytest.mark.parametrize("bad", [0, -3, True, "100"])
def test_spec_6_5_bad_token_budget_is_refused(bad: Any) -> None:
    with pytest.raises(InvalidInputError, match="token budget"):
        AgentMemory(storage(), token_budget=bad)


def test_spec_6_5_bad_priority_and_double_budget_are_refused() -> None:
    with pytest.raises(InvalidInputError, match="input"):
        TokenLimiter(10, priority=["input"])
    with pytest.raises(InvalidInputError, match="both"):
        AgentMemory(storage(), token_budget=5, processors=[TokenLimiter(5)])
    with pytest.raises(InvalidInputError, match="processors\\[0\\]"):
        AgentMemory(storage(), processors=[object()])  # type: ignore[list-item]


def test_spec_6_6_tool_call_filter_removes_exchanges_and_keeps_text() -> None:
    s = storage()
    mem = AgentMemory(s, recent_n=10, processors=[ToolCallFilter(exclude=["lookup"])])
    mixed = Message(role="assistant", content=[TextPart(text="checking"),
                                               ToolCallPart(id="c1", name="lookup")])
    res = Message(role="tool", content=[ToolResultPart(call_id="c1", name="lookup",
                                                        result="found")])
    other = Message(role="assistant", content=[ToolCallPart(id="c2", name="refund")])
    other_res = Message(role="tool", content=[ToolResultPart(call_id="c2", name="refund",
                                                              result="ok")])
    mem.append("t", [user("go"), mixed, res, other, other_res], resource_id="r")
    comp = mem.load_context(thread_id="t", input=[user("hi")])
    actions = [(p.seq, p.action, p.processor) for p in comp.memctx.processed]
    assert actions == [(1, "shortened", "tool-call-filter"), (2, "removed", "tool-call-filter")]
    recent = {i.seq: i.message for i in comp.prompt.items if i.lane == "recent"}
    assert recent[1].text() == "checking" and recent[1].tool_calls() == []
    assert 2 not in recent and recent[3].tool_calls()[0].name == "refund"
    assert [(d.seq, d.reason) for d in comp.memctx.dropped] == [(2, "tool-call-filter")]


def test_spec_6_6_tool_call_filter_never_touches_the_input() -> None:
    s = storage()
    mem = AgentMemory(s, processors=[ToolCallFilter()])
    given = [user("go"), Message(role="assistant", content=[ToolCallPart(id="c", name="x")]),
             Message(role="tool", content=[ToolResultPart(call_id="c", name="x", result=1)])]
    comp = mem.load_context(thread_id="new", input=given)
    assert [i.message for i in comp.prompt.items if i.lane == "input"] == given
    assert comp.memctx.processed == []


def _trimmed_run() -> tuple[InMemoryStorage, str]:
    s = storage()
    mem = AgentMemory(s, recent_n=6, token_budget=40)
    filled(mem)
    runner = Runner(storage=s, agents={"a": Agent(name="a", instructions="be brief",
                                                  model=ScriptedModel(["ok"]))}, memory=mem)
    runner.run("a", run_id="run-1", thread_id="t", resource_id="r", prompt="hi")
    return s, "run-1"


def test_spec_6_5_token_limit_removals_reach_the_journal_and_why_forgotten() -> None:
    s, run_id = _trimmed_run()
    ctx = s.runs.get(f"{run_id}:memctx")
    # instructions (3 tokens) count too: 4 rows give way
    assert [d["reason"] for d in ctx["dropped"]] == ["token-limit"] * 4
    assert ctx["processed"][0]["processor"] == "token-limiter"
    e = why_forgotten(s, run_id, ("t", 0))
    assert e.fate == "trimmed-by-token-limit" and not e.reached_model
    assert "token" in e.sentence and e.evidence["lane"] == "recent"
    assert why_forgotten(s, run_id, ("t", 5)).fate == "recent"
