"""Each stage of composition (memory_core.composition.stages) alone: its inputs, its output."""

from __future__ import annotations

from typing import Any

from memory_core.composition.memory import AgentMemory
from memory_core.composition.observational import ObservationalConfig, ObservationalMemory
from memory_core.composition.stages import (
    SKIP_FITS,
    SKIP_NO_EMBEDDER,
    SKIP_NO_QUERY,
    SKIP_OBSERVATIONAL,
    SKIP_OFF,
    Draft,
    InputTrim,
    Observed,
    RecallLane,
    SystemBlock,
    Turn,
    Window,
    assemble,
    observation_lane,
    pair_recalled,
    recall_skip,
    recent_window,
    run_recall,
    trim_input,
    working_memory_lane,
)
from memory_core.composition.toolpairs import DUPLICATE, ORPHAN, UNANSWERED
from memory_core.composition.working_memory import (
    KeyLocks,
    WorkingMemory,
    WorkingMemoryConfig,
)
from memory_core.embedding.hashing import HashingEmbedder
from memory_core.models.scripted import ScriptedModel
from memory_core.provenance.record import CompositionSettings
from memory_core.recall.config import RecallConfig
from memory_core.recall.engine import RecallEngine
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import Message, Thread, ToolCallPart, ToolResultPart
from tests.helpers import Tick


def user(text: str) -> Message:
    return Message(role="user", content=text)


def bot(text: str) -> Message:
    return Message(role="assistant", content=text)


def calls(*ids: str) -> Message:
    return Message(role="assistant", content=[ToolCallPart(id=i, name="lookup") for i in ids])


def res(cid: str) -> Message:
    return Message(role="tool", content=[ToolResultPart(call_id=cid, name="lookup",
                                                        result="ok")])


def store_with(*messages: Message, run_id: str | None = None) -> InMemoryStorage:
    s = InMemoryStorage(clock=Tick())
    AgentMemory(s, embed=HashingEmbedder(32)).append("t", list(messages), "u", run_id=run_id)
    return s


def turn_of(s: InMemoryStorage) -> Turn:
    thread = s.memory.get_thread("t")
    assert isinstance(thread, Thread)
    return Turn("t", "u", thread)


# -- 1. input ---------------------------------------------------------------------------
def test_trim_input_echo_trims_and_dedupes_a_stored_input() -> None:
    s = store_with(user("hi"), bot("hello"), user("refund?"))
    echoed = trim_input(s.memory, "t", [user("hi"), bot("hello"), user("again")], recent_n=2)
    assert (echoed.incoming, echoed.echo_trimmed, echoed.deduped) == ([user("again")], 2, 0)
    assert echoed.history_end == 2 and echoed.history_count == 3
    assert echoed.query == "again"
    retry = trim_input(s.memory, "t", [user("refund?")], recent_n=2)
    assert retry.deduped == 1 and retry.history_end == 1 and retry.history_count == 2
    first = trim_input(store_with(user("q"), run_id="r1").memory, "t", [user("q")], 4)
    assert (first.deduped, first.echo_trimmed, first.history_end) == (1, 0, -1)


# -- 2. working memory, 3. observations --------------------------------------------------
def test_working_memory_lane_is_the_rendered_block() -> None:
    s = store_with(user("hi"))
    wm = WorkingMemory(s.memory, WorkingMemoryConfig(), KeyLocks())
    wm.update("t", "u", {"name": "Ada"})
    block = working_memory_lane(wm, turn_of(s))
    assert block.message.role == "system" and "Ada" in (block.message.text() or "")
    assert block.message.text() == wm.render("t", "u")


def test_observation_lane_compacts_then_shows_the_active_observations() -> None:
    s = store_with(*[user(f"message {i}") for i in range(10)])
    om = ObservationalMemory(s, ObservationalConfig(model=ScriptedModel(["obs A"]),
                                                    message_threshold=4), clock=Tick())
    observed = observation_lane(om, "t")
    assert observed.observed_seq == 7 and observed.block is not None
    assert observed.block.message.text() == "# Observations\nobs A"
    assert [o.text for o in observed.block.observations] == ["obs A"]
    nothing = observation_lane(om, "other")
    assert nothing.block is None and nothing.observed_seq == -1


# -- 4. recent window --------------------------------------------------------------------
def test_recent_window_opens_at_a_cut_off_call_and_drops_what_cannot_pair() -> None:
    s = store_with(user("q"), calls("a", "b"), res("b"), res("a"), bot("done"))
    trim = trim_input(s.memory, "t", [user("next")], recent_n=2)
    window = recent_window(s.memory, "t", trim, recent_n=2)
    assert [m.seq for m in window.rows] == [1, 2, 3, 4] and window.dropped == []
    broken = store_with(user("q"), res("ghost"), calls("c"), bot("crashed"))
    trim = trim_input(broken.memory, "t", [user("next")], recent_n=3)
    window = recent_window(broken.memory, "t", trim, recent_n=3)
    assert [m.seq for m in window.rows] == [3]
    assert [(d.message.seq, d.reason) for d in window.dropped] == [(1, ORPHAN), (2, UNANSWERED)]


def test_recent_window_with_observations_is_what_they_do_not_cover() -> None:
    s = store_with(user("q"), calls("a"), res("a"), bot("done"), user("more"))
    trim = trim_input(s.memory, "t", [user("next")], recent_n=1)
    assert [m.seq for m in recent_window(s.memory, "t", trim, 1, observed_seq=3).rows] == [4]
    # observations covered the call but not its result: the window opens at the call
    assert [m.seq for m in recent_window(s.memory, "t", trim, 1, observed_seq=1).rows] == [
        1, 2, 3, 4]


# -- 5. recall ---------------------------------------------------------------------------
def test_recall_skip_names_why_recall_does_not_run() -> None:
    rc = RecallConfig()
    base: dict[str, Any] = {"observational": False, "query": "q", "has_embedder": True,
                            "history_count": 9, "recent_n": 2}
    assert recall_skip(rc, **base) is None
    assert recall_skip(None, **base) == SKIP_OFF
    assert recall_skip(rc, **{**base, "observational": True}) == SKIP_OBSERVATIONAL
    assert recall_skip(None, **{**base, "observational": True}) == SKIP_OFF
    assert recall_skip(rc, **{**base, "query": None}) == SKIP_NO_QUERY
    assert recall_skip(rc, **{**base, "has_embedder": False}) == SKIP_NO_EMBEDDER
    assert recall_skip(rc.replace(mode="lexical"), **{**base, "has_embedder": False}) is None
    assert recall_skip(rc, **{**base, "history_count": 2}) == SKIP_FITS
    assert recall_skip(rc.replace(scope="resource"), **{**base, "history_count": 2}) is None


def test_run_recall_leaves_the_window_out() -> None:
    s = store_with(user("refund for the blender"), bot("ok"), user("refund blender again"))
    engine = RecallEngine(s.memory, HashingEmbedder(32))
    trim = trim_input(s.memory, "t", [user("blender refund")], recent_n=1)
    window = recent_window(s.memory, "t", trim, 1)
    lane = run_recall(engine, s.memory, turn_of(s), trim, window,
                      RecallConfig(top_k=3, mode="lexical"))
    assert [k.message.seq for k in lane.kept] == [0]
    assert all(k.source is not None and k.source.origin == "hit" for k in lane.kept)
    assert lane.skipped is None and lane.scope_snapshot == {"t": 2}


# -- 6. tool pairing --------------------------------------------------------------------
def test_pair_recalled_repairs_a_call_with_its_result_and_keeps_the_scores() -> None:
    call = Message(role="assistant", content=[ToolCallPart(id="a", name="lookup",
                                                           args={"order": "blender"})])
    s = store_with(user("blender order"), call, res("a"), bot("done"), user("x"), user("y"))
    engine = RecallEngine(s.memory, HashingEmbedder(32))
    trim = trim_input(s.memory, "t", [user("blender order")], recent_n=1)
    window = recent_window(s.memory, "t", trim, 1)
    raw = run_recall(engine, s.memory, turn_of(s), trim, window,
                     RecallConfig(top_k=1, message_range={"before": 0, "after": 1}))
    assert [k.message.seq for k in raw.kept] == [0, 1]
    paired = pair_recalled(s.memory, raw, window)
    assert [(k.message.seq, k.is_repair) for k in paired.kept] == [
        (0, False), (1, False), (2, True)]
    assert paired.near_misses == raw.near_misses and paired.dropped == []


def test_pair_recalled_never_reuses_a_call_id_of_the_input() -> None:
    s = store_with(user("blender order"), calls("call_1"), res("call_1"), bot("done"))
    engine = RecallEngine(s.memory, HashingEmbedder(32))
    s.memory.create_thread("fresh", resource_id="u")
    fresh = s.memory.get_thread("fresh")
    assert fresh is not None
    # a client posts a whole conversation, with its own call_1, into a new thread
    posted = [user("hi"), calls("call_1"), res("call_1"), user("blender order")]
    trim = trim_input(s.memory, "fresh", posted, recent_n=2)
    window = recent_window(s.memory, "fresh", trim, 2)
    raw = run_recall(engine, s.memory, Turn("fresh", "u", fresh), trim, window,
                     RecallConfig(top_k=1, scope="resource", mode="lexical",
                                  message_range={"before": 0, "after": 1}))
    assert [k.message.seq for k in raw.kept] == [0, 1]
    assert [(k.message.seq, k.is_repair) for k in pair_recalled(
        s.memory, raw, window).kept] == [(0, False), (1, False), (2, True)]
    paired = pair_recalled(s.memory, raw, window, trim.incoming)
    assert [k.message.seq for k in paired.kept] == [0]
    assert [(d.message.seq, d.reason) for d in paired.dropped] == [(1, DUPLICATE)]


# -- 7. assembly -------------------------------------------------------------------------
def test_assemble_orders_the_lanes_counts_them_and_records_provenance() -> None:
    s = store_with(user("old"), calls("a"), res("a"), user("ghost result?"))
    rows = s.memory.get_messages("t")
    trim = InputTrim(incoming=[user("new")], echo_trimmed=0, deduped=0, history_end=3,
                     history_count=4, tail=rows)
    obs_block = SystemBlock(Message(role="system", content="# Observations\nx"))
    draft = Draft(turn=turn_of(s), trim=trim,
                  window=Window(rows=rows[1:3]),
                  recall=RecallLane(skipped="recall off"), instructions="be brief",
                  working_memory=SystemBlock(Message(role="system", content="wm")),
                  observed=Observed(observed_seq=-1, block=obs_block))
    settings = CompositionSettings(recent_n=2, recall_enabled=False)
    comp = assemble(draft, settings=settings, count=len, count_text=len)
    assert [(i.lane, i.seq) for i in comp.prompt.items] == [
        ("instructions", None), ("working_memory", None), ("observations", None),
        ("recent", 1), ("recent", 2), ("input", None)]
    t = comp.memctx.tokens  # count=len: one token per message
    assert (t.instructions, t.working_memory, t.observations, t.recalled, t.recent,
            t.input) == (1, 1, 1, 0, 2, 1)
    m = comp.memctx
    assert m.recall_skipped == "recall off" and m.recent_count == 2 and m.query == "new"
    assert m.working_memory_chars == 2 and m.scope_snapshot == {"t": 3}
    assert m.settings == settings and comp.incoming == [user("new")]
