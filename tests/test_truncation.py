"""SPEC §2.7: rewinding a thread with ``truncate_messages_after``, and what it leaves
(§11: observations and working memory untouched; the runs that stored removed messages
keep their journals, still verify and still replay)."""

from __future__ import annotations

from typing import Any

import pytest

from memory_core.analysis.views import run_view
from memory_core.composition.memory import AgentMemory
from memory_core.composition.working_memory import WorkingMemoryConfig
from memory_core.embedding.hashing import HashingEmbedder
from memory_core.errors import ReplayMismatch
from memory_core.journal.seal import read_seal, verify_run
from memory_core.models.base import ModelResponse, Tool, ToolSpec
from memory_core.models.scripted import ScriptedModel
from memory_core.recall.config import RecallConfig
from memory_core.runs.replay import replay
from memory_core.runs.runner import Agent, Runner
from memory_core.storage.base import MemoryStore, Storage
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import Message, Observation, ToolCallPart
from tests.helpers import Tick


def texts(msgs: Any) -> list[str]:
    return [m.text() for m in msgs]


def thread_of(n: int, recent_n: int = 2) -> AgentMemory:
    mem = AgentMemory(InMemoryStorage(), recent_n=recent_n)
    mem.append("t", [Message(role="user", content=f"m{i}") for i in range(n)])
    return mem


def test_spec_2_7_recent_two_m0_to_m3_truncate_after_0() -> None:
    mem = thread_of(4)
    assert texts(mem.get_messages("t")) == ["m2", "m3"]  # the no-query view
    assert mem.truncate_messages_after("t", 0) == 1
    assert texts(mem.get_messages("t")) == ["m1", "m2"]
    assert texts(mem.storage.memory.get_messages("t")) == ["m0", "m1", "m2"]


def test_spec_2_7_minus_one_deletes_every_message() -> None:
    mem = thread_of(4)
    assert mem.truncate_messages_after("t", -1) == 4
    assert mem.get_messages("t") == [] and mem.storage.memory.count_messages("t") == 0
    assert mem.storage.memory.get_thread("t") is not None  # the thread itself stays


@pytest.mark.parametrize("index", [1.0, "0", None, True, -2, 2, 7])
def test_spec_2_7_bad_or_past_the_end_index_returns_zero(index: object) -> None:
    mem = thread_of(4)
    assert mem.truncate_messages_after("t", index) == 0
    assert mem.storage.memory.count_messages("t") == 4
    assert mem.truncate_messages_after("nope", 0) == 0  # an unknown thread: empty view


def test_spec_2_7_index_past_the_window_counts_in_the_view_not_the_thread() -> None:
    mem = thread_of(6, recent_n=3)  # view m3 m4 m5: index 3 is past its end
    assert mem.truncate_messages_after("t", 3) == 0
    assert mem.truncate_messages_after("t", 2) == 0  # the last row kept: nothing after
    assert mem.truncate_messages_after("t", 1) == 1


class NoDelete(InMemoryStorage):
    """A storage whose memory store lacks the port's delete."""

    def __init__(self) -> None:
        super().__init__()
        store = self.memory

        class Store(type(store)):  # type: ignore[misc]
            delete_messages_after = MemoryStore.delete_messages_after

        store.__class__ = Store


def test_spec_2_7_a_store_without_delete_returns_none() -> None:
    mem = AgentMemory(NoDelete(), recent_n=2)
    mem.append("t", [Message(role="user", content=f"m{i}") for i in range(3)])
    assert mem.truncate_messages_after("t", 0) is None
    assert mem.storage.memory.count_messages("t") == 3


def test_spec_2_7_observations_and_working_memory_are_left_untouched() -> None:
    mem = AgentMemory(InMemoryStorage(), recent_n=2, working_memory=WorkingMemoryConfig())
    mem.append("t", [Message(role="user", content=f"m{i}") for i in range(4)])
    s = mem.storage
    s.memory.put_observation(Observation(id="o1", thread_id="t", from_seq=2, to_seq=3,
                                         text="the user said m2 and m3",
                                         created_at=Tick()()))
    mem.update_working_memory(thread_id="t", patch={"said": "m3"})
    assert mem.truncate_messages_after("t", 0) == 1
    assert [o.id for o in s.memory.list_observations("t")] == ["o1"]  # SPEC §2.7, §11
    assert mem.get_working_memory(thread_id="t") == {"said": "m3"}


def test_spec_2_7_truncated_seqs_are_not_given_again_and_recall_sees_the_new_rows() -> None:
    mem = AgentMemory(InMemoryStorage(), HashingEmbedder(), recent_n=1,
                      recall=RecallConfig(top_k=1, threshold=0.0))
    mem.append("t", [Message(role="user", content=w) for w in
                     ("apples", "pears", "plums", "figs")])
    assert mem.recall("plums", thread_id="t")[0].message.text() == "plums"  # warms a cache
    assert mem.truncate_messages_after("t", -1) == 4
    seqs = mem.append("t", [Message(role="user", content=w) for w in
                            ("kiwis", "limes", "dates", "grapes")])
    assert list(seqs) == [4, 5, 6, 7]  # same count, new seqs: no stale cache or refs
    assert mem.recall("dates", thread_id="t")[0].message.text() == "dates"


def two_turns() -> tuple[Storage, AgentMemory, Runner]:
    s = InMemoryStorage(clock=Tick())
    mem = AgentMemory(s, recent_n=2)
    call = ToolCallPart(id="c1", name="lookup", args={"q": "x"})
    model = ScriptedModel(["first answer",
                           ModelResponse(tool_calls=[call]), "second answer"])
    tool = Tool(spec=ToolSpec(name="lookup", description="d"), fn=lambda args: {"found": "y"})
    runner = Runner(s, {"a": Agent(name="a", instructions="be brief", model=model,
                                   tools=[tool])}, memory=mem, clock=Tick())
    runner.run("a", run_id="r1", thread_id="t", prompt="first question")
    runner.run("a", run_id="r2", thread_id="t", prompt="second question")
    return s, mem, runner


def test_spec_2_7_runs_whose_messages_went_keep_their_journal_verify_and_replay() -> None:
    s, mem, _ = two_turns()
    before = {k for k, _ in s.runs.list("r2:")}
    # r2 stored seqs 2..5 (question, call, result, answer); keep r1 and r2's question
    assert texts(mem.get_messages("t"))[-1] == "second answer"
    assert mem.truncate_messages_after("t", -1) == 6
    assert {k for k, _ in s.runs.list("r2:")} == before  # records kept
    seal = read_seal(s, "r2")
    assert seal is not None and seal.truncated == [("t", i) for i in range(2, 6)]
    report = verify_run(s, "r2")
    assert report.status == "ok" and "4 stored message(s) removed by truncation" in report.detail
    assert verify_run(s, "r1").status == "ok"
    for rid in ("r1", "r2"):
        assert replay(s, rid).output["text"] in ("first answer", "second answer")
    # re-composing r2 over the rewound store cannot find its history: said, not hidden
    with pytest.raises(ReplayMismatch, match="re-composed prompt differs"):
        replay(s, "r2", memory=mem)
    view = run_view(s, "r2")  # the workbench's view of such a run does not fail
    assert [i.text for i in view.lane("input").items] == ["second question"]
    assert view.answer == "second answer"
    assert any("4 message(s) this run stored were removed since by a truncation" in n
               and "seq 2, 3, 4, 5" in n for n in view.notes)
    assert any("2 message(s) this run stored" in n and "seq 0, 1" in n
               for n in run_view(s, "r1").notes)


def test_spec_2_7_a_partly_truncated_run_replays_against_what_remains() -> None:
    s, mem, runner = two_turns()
    view = mem.get_messages("t")  # recent_n=2 extended to the call: call, result, answer
    at = next(i for i, m in enumerate(view) if m.tool_results())
    assert mem.truncate_messages_after("t", at) == 1  # the answer goes, the exchange stays
    assert read_seal(s, "r2").truncated == [("t", 5)]  # type: ignore[union-attr]
    rep = replay(s, "r2")
    assert rep.messages_checked == 2  # the call and its result, still stored
    assert not any("truncation" in n for n in run_view(s, "r1").notes)  # r1 untouched
    # a later turn stores after the old highest seq and seals normally
    runner.agents["a"] = Agent(name="a", instructions="be brief",
                               model=ScriptedModel(["third answer"]))
    res = runner.run("a", run_id="r3", thread_id="t", prompt="third question")
    assert res.input_seqs == [6] and verify_run(s, "r3").status == "ok"
    assert replay(s, "r2").messages_checked == 2
