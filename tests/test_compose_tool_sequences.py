"""Composition never produces an invalid tool sequence (issue #12.4): over random
threads with tool calls (single and parallel, results in any order and split or joined,
error results, and some damaged threads: a result never stored, a call id reused, a
result without its call), random ``recent_n``, ``message_range`` and recall settings,
every composed prompt passes the provider validation of the fake server."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_core.composition.memory import AgentMemory
from memory_core.embedding.hashing import HashingEmbedder
from memory_core.models.openai_codec import to_openai_messages
from memory_core.provenance.record import PROVENANCE_DROPPED_CAP
from memory_core.recall.config import RecallConfig
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import Message, TextPart, ToolCallPart, ToolResultPart
from tests.fake_provider.validation import validate_messages
from tests.helpers import Tick

WORDS = ["refund", "order", "blender", "kettle", "ship", "address", "status", "lamp",
         "voucher", "paid", "late", "box"]


@dataclass
class Ids:
    n: int = 0

    def next(self) -> str:
        self.n += 1
        return f"call_{self.n}"


def _text(draw: Any) -> str:
    return " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4)))


@st.composite
def exchange(draw: Any, ids: Ids) -> tuple[list[Message], bool]:
    """An assistant turn with 1-3 calls and its results; True when it was damaged."""
    calls = [ToolCallPart(id=ids.next(), name=draw(st.sampled_from(["lookup", "ship"])),
                          args={"q": _text(draw)})
             for _ in range(draw(st.integers(1, 3)))]
    damage = draw(st.sampled_from(["none"] * 8 + ["missing", "reused", "orphan"]))
    if damage == "reused" and ids.n > len(calls):
        calls[0] = calls[0].model_copy(update={"id": "call_1"})
    text = [TextPart(text=_text(draw))] if draw(st.booleans()) else []
    out = [Message(role="assistant", content=[*text, *calls])]
    results = [ToolResultPart(call_id=c.id, name=c.name,
                              result=draw(st.sampled_from([{"ok": True}, "done",
                                                           {"error": "timeout"}])))
               for c in calls]
    results = draw(st.permutations(results))
    if damage == "missing":
        results = results[1:]
    if damage == "orphan":
        results.append(ToolResultPart(call_id="ghost_" + ids.next(), name="lookup",
                                      result="lost"))
    if results and draw(st.booleans()):
        out.append(Message(role="tool", content=list(results)))  # joined in one message
    else:
        out += [Message(role="tool", content=[r]) for r in results]
    return out, damage != "none"


@st.composite
def thread(draw: Any) -> tuple[list[list[Message]], bool]:
    """Turns (each appended as one batch, like a run persists them); True if damaged."""
    ids = Ids()
    turns: list[list[Message]] = []
    damaged = False
    for _ in range(draw(st.integers(1, 6))):
        turn = [Message(role="user", content=_text(draw))]
        for _ in range(draw(st.integers(0, 2))):
            msgs, bad = draw(exchange(ids))
            turn += msgs
            damaged |= bad
        turn.append(Message(role="assistant", content=_text(draw)))
        turns.append(turn)
    return turns, damaged


message_range = st.one_of(
    st.integers(0, 3),
    st.builds(lambda b, a: {"before": b, "after": a}, st.integers(0, 3), st.integers(0, 3)))
recall_config = st.one_of(st.none(), st.builds(
    RecallConfig, top_k=st.integers(1, 4), message_range=message_range,
    mode=st.sampled_from(["vector", "lexical", "hybrid"]),
    scope=st.sampled_from(["thread", "resource"]), threshold=st.sampled_from([0.0, 0.2])))


@pytest.mark.slow
@settings(max_examples=520, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(thread(), st.lists(thread(), max_size=1), st.integers(0, 8), recall_config, st.data())
def test_every_composed_prompt_is_a_valid_provider_request(
        main: tuple[list[list[Message]], bool], others: list[tuple[list[list[Message]], bool]],
        recent_n: int, recall: RecallConfig | None, data: st.DataObject) -> None:
    clock = Tick()
    memory = AgentMemory(InMemoryStorage(clock=clock), embed=HashingEmbedder(32),
                         recent_n=recent_n, recall=recall, clock=clock)
    for i, (turns, _) in enumerate(others):  # another thread of the same person
        for turn in turns:
            memory.append(f"other-{i}", turn, "u", created_at=clock())
    turns, damaged = main
    for turn in turns:
        memory.append("t", turn, "u", created_at=clock())
    question = Message(role="user", content=_text(data.draw))
    target, given = "t", [question]
    if data.draw(st.integers(0, 3)) == 0:
        # a client posts a whole conversation (its ids reuse call_1...) to a new thread
        posted, posted_damaged = data.draw(thread())
        if not posted_damaged:
            target, given = "fresh", [m for turn in posted for m in turn] + [question]
    comp = memory.load_context(thread_id=target, resource_id="u", input=given,
                               instructions="You are a support agent.")

    validate_messages(to_openai_messages(comp.prompt.messages()))
    recent = [i.seq for i in comp.prompt.items if i.lane == "recent"]
    if not damaged and target == "t":
        # an intact thread loses nothing from its window, which opens at most earlier
        history = [m for turn in turns for m in turn]
        last = list(range(len(history)))[-recent_n:] if recent_n else []
        assert set(last) <= set(recent) and recent == sorted(recent)
        assert not [d for d in comp.memctx.dropped if d.lane == "recent"]
    listed = [(d.thread_id, d.seq) for d in comp.memctx.dropped]
    assert len(listed) == len(set(listed))  # a row is dropped once, from one lane
    shown = {(i.thread_id, i.seq) for i in comp.prompt.items if i.seq is not None}
    assert not set(listed) & shown
    assert len(comp.memctx.dropped) == min(comp.memctx.dropped_count, PROVENANCE_DROPPED_CAP)
