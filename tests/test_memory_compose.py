"""AgentMemory composition (SPEC §2.5, §3, §5, §6.6): lanes, the recent window, recall
skip rules, tool-pair repair on recall, echo-trim, retry dedupe and determinism."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

import numpy as np
import pytest

from memory_core.composition.memory import AgentMemory, token_text
from memory_core.composition.working_memory import WorkingMemoryConfig
from memory_core.embedding.hashing import HashingEmbedder
from memory_core.errors import InvalidInputError, NotFoundError
from memory_core.models.scripted import ScriptedModel
from memory_core.provenance.prompt import Composition
from memory_core.recall.config import RecallConfig
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import Message, TextPart, ToolCallPart, ToolResultPart
from tests.helpers import Tick

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def storage() -> InMemoryStorage:
    return InMemoryStorage(clock=Tick())


def user(text: str, **meta: Any) -> Message:
    return Message(role="user", content=text, metadata=meta)


def bot(text: str) -> Message:
    return Message(role="assistant", content=text)


def call_msg(cid: str, text: str | None = None, name: str = "refund",
             args: Any = None) -> Message:
    parts: list[Any] = [TextPart(text=text)] if text else []
    parts.append(ToolCallPart(id=cid, name=name, args={"id": "r-7"} if args is None else args))
    return Message(role="assistant", content=parts)


def result_msg(cid: str, result: Any = "approved", name: str = "refund") -> Message:
    return Message(role="tool", content=[ToolResultPart(call_id=cid, name=name, result=result)])


FILLER = ["the weather is sunny today", "let us talk about football", "my cat likes fish",
          "what time is the train", "tea or coffee in the morning", "a song about rivers",
          "mountains are tall", "green apples are sour", "the bus was late again",
          "pizza for dinner tonight"]


def lanes(c: Composition) -> list[tuple[str, int | None]]:
    return [(i.lane, i.seq) for i in c.prompt.items]


def compose(mem: AgentMemory, text: str, thread: str = "t1", **kw: Any) -> Composition:
    return mem.load_context(thread_id=thread, input=[user(text)], **kw)


# -- threads and append ------------------------------------------------------------------
def test_append_creates_thread_with_title_and_embeds_only_text() -> None:
    s = storage()
    mem = AgentMemory(s, embed=HashingEmbedder())
    seqs = mem.append("t1", [user("  Hello\n  there,   refund   please "), call_msg("c1"),
                             result_msg("c1")], "u1")
    assert seqs == [0, 1, 2]
    t = s.memory.get_thread("t1")
    assert t is not None and t.resource_id == "u1" and t.title == "Hello there, refund please"
    block = s.memory.get_embeddings(["t1"])
    assert block.seqs.tolist() == [0]  # pure tool call / result rows are not embedded
    assert mem.append("t1", [user("again")]) == [3]


def test_title_is_cut_to_80_characters() -> None:
    s = storage()
    mem = AgentMemory(s)
    mem.load_context(thread_id="t1", resource_id="u1", input=[user("x" * 200)])
    t = s.memory.get_thread("t1")
    assert t is not None and t.title == "x" * 80 and t.resource_id == "u1"


def test_load_context_without_resource_creates_the_thread_anyway() -> None:
    s = storage()
    AgentMemory(s).load_context(thread_id="t9", input=[user("hi")])
    t = s.memory.get_thread("t9")
    assert t is not None and t.resource_id is None


def test_wrong_dimension_embedder_is_a_clear_error_and_stores_nothing() -> None:
    s = storage()
    AgentMemory(s, embed=HashingEmbedder(64)).append("t1", [user("first")])
    bad = AgentMemory(s, embed=HashingEmbedder(32))
    with pytest.raises(InvalidInputError, match="32-dimensional.*64-dimensional"):
        bad.append("t1", [user("second"), user("third")])
    assert s.memory.count_messages("t1") == 1


def test_embedder_returning_the_wrong_shape_is_named() -> None:
    def broken(texts: list[str]) -> np.ndarray:
        return np.ones((len(texts) + 1, 4), np.float32)

    broken.name = "broken"  # type: ignore[attr-defined]
    with pytest.raises(InvalidInputError, match="'broken' must return shape"):
        AgentMemory(storage(), embed=broken).append("t1", [user("x")])


@pytest.mark.parametrize("kwargs, match", [
    ({"recent_n": -1}, "recent_n"), ({"recent_n": "6"}, "recent_n"),
    ({"recall": {"top_k": 3}}, "RecallConfig"), ({"embed": 3}, "embed"),
])
def test_bad_constructor_arguments(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        AgentMemory(storage(), **kwargs)


def test_bad_call_arguments() -> None:
    mem = AgentMemory(storage())
    with pytest.raises(InvalidInputError, match="thread_id"):
        mem.load_context(thread_id="", input=[user("x")])
    with pytest.raises(InvalidInputError, match="list of messages"):
        mem.load_context(thread_id="t1", input=user("x"))  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match=r"input\[0\]"):
        mem.load_context(thread_id="t1", input=[42])  # type: ignore[list-item]


# -- recent window (SPEC §3) ---------------------------------------------------------------
def test_recent_window_is_the_tail_and_input_comes_last() -> None:
    s = storage()
    mem = AgentMemory(s, recent_n=3)
    mem.append("t1", [user(t) for t in FILLER[:5]])
    c = mem.load_context(thread_id="t1", input=[user("new")], instructions="Be brief.")
    assert lanes(c) == [("instructions", None), ("recent", 2), ("recent", 3), ("recent", 4),
                        ("input", None)]
    assert c.memctx.recent_count == 3 and [r.seq for r in c.memctx.recent] == [2, 3, 4]
    assert c.prompt.items[0].message.role == "system"
    assert c.incoming == [user("new")] and c.memctx.incoming_count == 1


def test_recent_refs_are_capped_at_24_but_count_is_true() -> None:
    s = storage()
    mem = AgentMemory(s, recent_n=30)
    mem.append("t1", [user(f"message {i}") for i in range(40)])
    c = compose(mem, "next")
    assert c.memctx.recent_count == 30
    assert [r.seq for r in c.memctx.recent] == list(range(16, 40))


def test_previews_follow_spec() -> None:
    s = storage()
    mem = AgentMemory(s, recent_n=4)
    mem.append("t1", [user("  lots   of\n space  " + "y" * 200), call_msg("c1"),
                      result_msg("c1", {"ok": True}), bot("done")])
    refs = compose(mem, "q").memctx.recent
    assert refs[0].preview == ("lots of space " + "y" * 200)[:120]
    assert refs[1].preview == '→ refund({"id":"r-7"})'
    assert refs[2].preview == 'refund → {"ok":true}'
    assert [r.role for r in refs] == ["user", "assistant", "tool", "assistant"]


# -- recall skip rules (SPEC §3.2, §3.3) -------------------------------------------------
def test_recall_skipped_when_thread_fits_the_window() -> None:
    s = storage()
    mem = AgentMemory(s, embed=HashingEmbedder(), recent_n=8, recall=RecallConfig())
    mem.append("other", [user("refund for order r-7 was approved")], "u1")
    mem.append("t1", [user("hello")], "u1")
    c = mem.load_context(thread_id="t1", resource_id="u1", input=[user("refund r-7")])
    assert c.memctx.recall_skipped == "thread fits in window"
    assert c.memctx.recalled == [] and all(i.thread_id in (None, "t1") for i in c.prompt.items)


def test_resource_scope_recalls_other_threads_for_a_new_thread() -> None:
    s = storage()
    mem = AgentMemory(s, embed=HashingEmbedder(), recent_n=8,
                      recall=RecallConfig(scope="resource", top_k=1))
    mem.append("old", [user("refund for order r-7 was approved"), bot("noted")] +
               [user(t) for t in FILLER[:4]], "u1")
    mem.append("stranger", [user("refund for order r-7 was approved")], "u2")
    for n in range(0, 4):  # a new thread holding 0-3 messages
        tid = f"new{n}"
        if n:
            mem.append(tid, [user(t) for t in FILLER[5:5 + n]], "u1")
        c = mem.load_context(thread_id=tid, resource_id="u1",
                             input=[user("refund for order r-7")])
        assert c.memctx.recall_skipped is None
        assert [(r.thread_id, r.seq, r.origin) for r in c.memctx.recalled] == \
            [("old", 0, "hit")]
        assert lanes(c)[0] == ("recalled", 0) and c.prompt.items[0].thread_id == "old"
        assert {"old", tid} <= set(c.memctx.scope_snapshot)
        assert "stranger" not in c.memctx.scope_snapshot


def test_skip_reasons_no_query_and_no_embedder() -> None:
    s = storage()
    mem = AgentMemory(s, recent_n=1, recall=RecallConfig())
    mem.append("t1", [user(t) for t in FILLER[:3]])
    assert compose(mem, "weather").memctx.recall_skipped == "no embedder"
    lexical = AgentMemory(s, recent_n=1, recall=RecallConfig(mode="lexical"))
    c = compose(lexical, "weather sunny")
    assert c.memctx.recall_skipped is None and [r.seq for r in c.memctx.recalled] == [0]
    with_embed = AgentMemory(s, embed=HashingEmbedder(), recent_n=1, recall=RecallConfig())
    c = with_embed.load_context(thread_id="t1", input=[bot("only an assistant echo")])
    assert c.memctx.recall_skipped == "no query" and c.memctx.query is None
    off = AgentMemory(s, embed=HashingEmbedder(), recent_n=1)
    assert compose(off, "weather").memctx.recall_skipped == "recall off"


def test_recalled_rows_inside_the_window_are_removed() -> None:
    s = storage()
    mem = AgentMemory(s, embed=HashingEmbedder(), recent_n=2,
                      recall=RecallConfig(top_k=2, message_range=0))
    mem.append("t1", [user("refund order r-7")] + [user(t) for t in FILLER[:3]] +
               [user("refund order r-7 again")])
    c = compose(mem, "refund order r-7")
    recalled = [r.seq for r in c.memctx.recalled]
    recent = [r.seq for r in c.memctx.recent]
    assert 4 in recent and 4 not in recalled and 0 in recalled
    assert any(n.seq == 4 and n.reason == "already-in-window" for n in c.memctx.near_misses)
    seqs = [i.seq for i in c.prompt.items if i.seq is not None]
    assert len(seqs) == len(set(seqs))


def test_recall_order_and_scores_reach_provenance() -> None:
    s = storage()
    mem = AgentMemory(s, embed=HashingEmbedder(), recent_n=2,
                      recall=RecallConfig(top_k=1, message_range=1))
    mem.append("t1", [user(FILLER[0]), user("my refund order r-7"), user(FILLER[1])] +
               [user(t) for t in FILLER[2:6]])
    c = compose(mem, "refund order r-7")
    assert [(r.seq, r.origin) for r in c.memctx.recalled] == \
        [(0, "neighbour"), (1, "hit"), (2, "neighbour")]
    hit = c.memctx.recalled[1]
    assert hit.rank == 1 and hit.score is not None and hit.score > 0
    assert hit.vector_score == pytest.approx(hit.score)
    assert c.memctx.recalled[0].score is None
    assert lanes(c) == [("recalled", 0), ("recalled", 1), ("recalled", 2), ("recent", 5),
                        ("recent", 6), ("input", None)]
    assert [i.origin for i in c.prompt.items[:3]] == ["neighbour", "hit", "neighbour"]
    assert c.memctx.settings.recall == RecallConfig(top_k=1, message_range=1)
    assert c.memctx.query == "refund order r-7"


# -- tool-call pairing on recall (SPEC §5) -----------------------------------------------
def _pairing_memory(s: InMemoryStorage, **kw: Any) -> AgentMemory:
    return AgentMemory(s, embed=HashingEmbedder(), recent_n=2,
                       recall=RecallConfig(top_k=1, **kw))


def test_recalled_call_is_followed_by_its_result() -> None:
    s = storage()
    mem = _pairing_memory(s)
    mem.append("t1", [user(FILLER[0]), call_msg("tc-1", "checking refund order r-7"),
                      result_msg("tc-1")] + [user(t) for t in FILLER[1:5]])
    c = compose(mem, "refund order r-7")
    assert [(r.seq, r.origin) for r in c.memctx.recalled] == [(1, "hit"), (2, "repair")]
    assert lanes(c)[:2] == [("recalled", 1), ("recalled", 2)]
    assert c.prompt.items[1].origin == "repair"
    assert c.memctx.recalled[0].preview == 'checking refund order r-7 → refund({"id":"r-7"})'
    assert c.memctx.dropped_count == 0


def test_orphan_recalled_call_is_dropped_and_never_reaches_the_prompt() -> None:
    s = storage()
    mem = _pairing_memory(s)
    mem.append("t1", [user(FILLER[0]), call_msg("tc-9", "checking refund order r-7")] +
               [user(t) for t in FILLER[1:5]])
    c = compose(mem, "refund order r-7")
    assert c.memctx.dropped_count == 1
    assert [(d.seq, d.reason) for d in c.memctx.dropped] == [(1, "unanswered-tool-call")]
    assert c.memctx.recalled == []
    assert not any(m.tool_calls() for m in c.messages)


def test_same_turn_stored_twice_emits_one_call_and_one_result() -> None:
    s = storage()
    turn = [user("refund order r-7 please"), call_msg("tc-1", "refund order r-7"),
            result_msg("tc-1")]
    AgentMemory(s, embed=HashingEmbedder()).append("t1", turn + turn + [user(t) for t in FILLER[:3]])
    # top_k 2 with range 1 pulls both copies of the call and both results
    c = AgentMemory(s, embed=HashingEmbedder(), recent_n=2,
                    recall=RecallConfig(top_k=2, message_range=1)).load_context(
        thread_id="t1", input=[user("refund order r-7")])
    calls = [m for m in c.messages if m.tool_calls()]
    results = [m for m in c.messages if m.tool_results()]
    assert len(calls) == 1 and len(results) == 1
    assert {(d.seq, d.reason) for d in c.memctx.dropped} == \
        {(4, "duplicate-tool-call-id"), (5, "duplicate-tool-call-id")}
    assert c.memctx.dropped_count == 2
    kept = {r.seq for r in c.memctx.recalled}
    assert not kept & {d.seq for d in c.memctx.dropped}


def test_recent_window_opens_at_the_call_of_a_result_it_would_cut_off() -> None:
    s = storage()
    mem = AgentMemory(s, embed=HashingEmbedder(), recent_n=2)
    parallel = Message(role="assistant", content=[ToolCallPart(id="a", name="lookup"),
                                                  ToolCallPart(id="b", name="ship")])
    mem.append("t1", [user("refund?"), parallel, result_msg("b"), result_msg("a"),
                      bot("approved and shipped")])
    c = compose(mem, "thanks")
    # recent_n=2 would open on the result of "a" (seq 3): the window opens at the call
    assert lanes(c) == [("recent", 1), ("recent", 2), ("recent", 3), ("recent", 4),
                        ("input", None)]
    assert c.memctx.recent_count == 4 and c.memctx.dropped == []


def test_what_the_window_cannot_pair_is_dropped_with_its_lane_and_explained() -> None:
    from memory_core.analysis.forgotten import why_forgotten
    from memory_core.journal import RunKeys
    from memory_core.runs.runner import Agent, Runner

    s = storage()
    mem = AgentMemory(s, embed=HashingEmbedder(), recent_n=3)
    # an imported thread: a result whose call was never stored, a call never answered
    mem.append("t1", [user("refund?"), result_msg("ghost"), call_msg("c-1"), bot("hm")])
    Runner(s, {"a": Agent("a", "Be brief.", ScriptedModel(["ok"]))}, memory=mem).run(
        "a", run_id="r1", thread_id="t1", prompt="and now?")
    e = why_forgotten(s, "r1", ("t1", 1))
    assert e.fate == "dropped" and e.evidence == {"reason": "orphan-tool-result",
                                                  "lane": "recent"}
    assert e.sentence.startswith("It was among the most recent messages, but it was left "
                                 "out because it is a tool result whose call was not in")
    memctx = s.runs.get(RunKeys("r1").memctx)
    assert [(d["seq"], d["lane"], d["reason"]) for d in memctx["dropped"]] == [
        (1, "recent", "orphan-tool-result"), (2, "recent", "unanswered-tool-call")]
    assert [i["seq"] for i in s.runs.get(RunKeys("r1").prompt)["items"] if i["lane"] == "recent"] == [3]


def test_a_neighbour_never_brings_a_result_without_its_call() -> None:
    s = storage()
    mem = AgentMemory(s, embed=HashingEmbedder(), recent_n=1,
                      recall=RecallConfig(top_k=1, message_range={"before": 1, "after": 0},
                                          mode="lexical"))
    mem.append("t1", [user("refund?"), call_msg("c-1"), result_msg("c-1"),
                      bot("refund order r-7 approved")] + [user(t) for t in FILLER[:3]])
    c = compose(mem, "refund order r-7")
    assert lanes(c)[:1] == [("recalled", 3)]
    assert [(d.seq, d.lane, d.reason) for d in c.memctx.dropped] == [
        (2, "recalled", "orphan-tool-result")]


def test_dropped_refs_are_capped_at_24() -> None:
    s = storage()
    mem = AgentMemory(s, embed=HashingEmbedder(), recent_n=1,
                      recall=RecallConfig(top_k=30))
    mem.append("t1", [call_msg(f"c{i}", f"refund order r-7 number {i}") for i in range(30)] +
               [user("tail")])
    c = compose(mem, "refund order r-7 number")
    assert c.memctx.dropped_count == 30 and len(c.memctx.dropped) == 24
    assert all(d.reason == "unanswered-tool-call" for d in c.memctx.dropped)


# -- echo-trim and retry dedupe (SPEC §6.6) -------------------------------------------------
def test_two_basic_turns() -> None:
    s = storage()
    mem = AgentMemory(s)
    c1 = compose(mem, "first")
    mem.append("t1", c1.incoming + [bot("answer")])
    c2 = compose(mem, "second")
    assert (c2.memctx.recent_count, c2.memctx.incoming_count, c2.memctx.echo_trimmed) == \
        (2, 1, 0)


def test_echo_trim_of_a_reposted_conversation() -> None:
    s = storage()
    mem = AgentMemory(s)
    mem.append("t1", [user("first"), bot("answer")])
    c = mem.load_context(thread_id="t1",
                         input=[user("first"), bot("answer"), user("second")])
    assert c.memctx.echo_trimmed == 2 and c.memctx.incoming_count == 1
    assert c.incoming == [user("second")]
    assert lanes(c) == [("recent", 0), ("recent", 1), ("input", None)]


def test_no_echo_trim_without_history() -> None:
    mem = AgentMemory(storage())
    c = mem.load_context(thread_id="t1", input=[user("a"), bot("b"), user("c")])
    assert c.memctx.echo_trimmed == 0 and c.memctx.incoming_count == 3


def test_retry_after_input_was_stored_composes_the_same_prompt() -> None:
    s = storage()
    mem = AgentMemory(s, embed=HashingEmbedder(), recent_n=2, recall=RecallConfig(top_k=1))
    mem.append("t1", [user(t) for t in FILLER[:6]])
    first = compose(mem, "the weather is sunny")
    mem.append("t1", first.incoming)  # the runner persists the input, then crashes
    retry = compose(mem, "the weather is sunny")
    assert retry.incoming == []
    assert retry.prompt.canonical() == first.prompt.canonical()
    assert retry.memctx.model_dump() == first.memctx.model_dump()


# -- lanes, tokens, determinism ---------------------------------------------------------
def test_lane_tokens_add_up() -> None:
    s = storage()
    mem = AgentMemory(s, embed=HashingEmbedder(), recent_n=2, recall=RecallConfig(top_k=1),
                      working_memory=WorkingMemoryConfig())
    mem.append("t1", [user(FILLER[0]), call_msg("tc-1", "refund order r-7"),
                      result_msg("tc-1")] + [user(t) for t in FILLER[1:5]])
    c = mem.load_context(thread_id="t1", input=[user("refund order r-7")],
                         instructions="You are helpful.")
    per_lane: dict[str, int] = {}
    for item in c.prompt.items:
        per_lane[item.lane] = per_lane.get(item.lane, 0) + \
            -(-len(token_text(item.message)) // 4)
    t = c.memctx.tokens
    for lane, n in per_lane.items():
        assert getattr(t, lane) == n, lane
    assert t.total == sum(per_lane.values())
    assert t.recalled > 0 and t.recent > 0 and t.input > 0 and t.working_memory > 0
    # the tool parts are counted through their structural form
    assert token_text(call_msg("x")) == '→ refund({"id":"r-7"})'


def test_custom_token_counter_is_used_and_labelled() -> None:
    def words(text: str) -> int:
        return len(text.split())

    words.label = "words"  # type: ignore[attr-defined]
    mem = AgentMemory(storage(), token_counter=words)
    c = compose(mem, "three words here")
    assert c.memctx.tokens.input == 3 and c.memctx.settings.token_counter == "words"


def test_composition_is_deterministic() -> None:
    def build() -> str:
        s = storage()
        mem = AgentMemory(s, embed=HashingEmbedder(), recent_n=2,
                          recall=RecallConfig(top_k=2, message_range=1, mode="hybrid"),
                          working_memory=WorkingMemoryConfig(scope="resource"))
        mem.append("t1", [user(t) for t in FILLER] + [call_msg("c", "refund order r-7"),
                                                     result_msg("c")], "u1")
        mem.update_working_memory(thread_id="t1", resource_id="u1", patch={"name": "Ayse"})
        comp = mem.load_context(thread_id="t1", resource_id="u1",
                                input=[user("refund order r-7")], instructions="hi")
        again = mem.load_context(thread_id="t1", resource_id="u1",
                                 input=[user("refund order r-7")], instructions="hi")
        assert again.model_dump_json() == comp.model_dump_json()
        return comp.model_dump_json()

    assert build() == build()


# -- working memory lane and tools -------------------------------------------------------------
def test_working_memory_lane_and_tool() -> None:
    s = storage()
    mem = AgentMemory(s, working_memory=WorkingMemoryConfig())
    [tool] = mem.tools(thread_id="t1")
    assert tool.name == "update_working_memory"
    tool.fn({"memory": {"plan": {"step": 1}}})
    c = compose(mem, "hi")
    item = c.prompt.items[0]
    assert item.lane == "working_memory" and item.message.role == "system"
    assert '"step": 1' in str(item.message.content)
    assert c.memctx.working_memory_chars == len(str(item.message.content))
    assert mem.get_working_memory(thread_id="t1") == {"plan": {"step": 1}}


def test_no_tools_when_working_memory_is_off_or_read_only() -> None:
    assert AgentMemory(storage()).tools(thread_id="t1") == []
    ro = AgentMemory(storage(), working_memory=WorkingMemoryConfig(read_only=True))
    assert ro.tools(thread_id="t1") == []
    c = compose(ro, "hi")
    assert "update_working_memory" not in str(c.prompt.items[0].message.content)


def test_resource_working_memory_uses_the_threads_resource() -> None:
    s = storage()
    mem = AgentMemory(s, working_memory=WorkingMemoryConfig(scope="resource"))
    mem.append("t1", [user("hi")], "u1")
    [tool] = mem.tools(thread_id="t1")  # resource looked up from the thread
    tool.fn({"memory": {"city": "Izmir"}})
    assert s.memory.get_working_memory("resource:u1") == {"city": "Izmir"}
    c = mem.load_context(thread_id="t2", resource_id="u1", input=[user("where?")])
    assert "Izmir" in str(c.prompt.items[0].message.content)


# -- recall() -------------------------------------------------------------------------------------
def test_recall_alone_with_overrides() -> None:
    s = storage()
    mem = AgentMemory(s, embed=HashingEmbedder(), recall=RecallConfig(top_k=1))
    mem.append("t1", [user("refund order r-7", lang="en"), user("refund order r-7 now",
                                                                lang="tr")])
    hits = mem.recall("refund order r-7", thread_id="t1")
    assert [h.seq for h in hits] == [0]
    hits = mem.recall("refund order r-7", thread_id="t1", filter={"lang": "tr"})
    assert [h.seq for h in hits] == [1]
    with pytest.raises(InvalidInputError, match="colour"):
        mem.recall("x", thread_id="t1", colour=1)
    with pytest.raises(InvalidInputError, match="top_k"):
        mem.recall("x", thread_id="t1", top_k=0)
    with pytest.raises(NotFoundError, match="nope"):
        mem.recall("x", thread_id="nope")


# -- observational memory lane ----------------------------------------------------------------
def test_observational_lane_replaces_recall_and_shows_unobserved() -> None:
    from memory_core.composition.observational import ObservationalConfig

    s = storage()
    model = ScriptedModel(["User talked about weather and football."])
    mem = AgentMemory(s, embed=HashingEmbedder(), recent_n=2, recall=RecallConfig(),
                      observational_memory=ObservationalConfig(model=model,
                                                               message_threshold=4))
    mem.append("t1", [user(t) for t in FILLER[:6]])
    c = compose(mem, "weather")
    obs_items = [i for i in c.prompt.items if i.lane == "observations"]
    assert len(obs_items) == 1
    assert str(obs_items[0].message.content).startswith("# Observations\n")
    assert c.memctx.observation_count == len(c.memctx.observations) >= 1
    observed = max(o.to_seq or -1 for o in c.memctx.observations)
    assert [i.seq for i in c.prompt.items if i.lane == "recent"] == \
        list(range(observed + 1, 6))
    assert c.memctx.recent_count == 6 - observed - 1
    assert c.memctx.recall_skipped == "observational memory"
    assert c.memctx.tokens.observations > 0
    assert obs_items[0].observation_id == ",".join(o.id for o in c.memctx.observations)
    again = compose(mem, "weather")  # journaled: no second observer call
    assert again.model_dump_json() == c.model_dump_json() and model.calls == 1


def test_resource_scope_repairs_a_call_from_its_own_thread() -> None:
    s = storage()
    mem = AgentMemory(s, embed=HashingEmbedder(), recent_n=2,
                      recall=RecallConfig(scope="resource", top_k=1))
    mem.append("old", [call_msg("tc-1", "refund order r-7 checking"), result_msg("tc-1"),
                       user(FILLER[0])], "u1")
    mem.append("t1", [user(t) for t in FILLER[1:4]], "u1")
    c = mem.load_context(thread_id="t1", resource_id="u1", input=[user("refund order r-7")])
    assert [(r.thread_id, r.seq, r.origin) for r in c.memctx.recalled] == \
        [("old", 0, "hit"), ("old", 1, "repair")]
    assert [(i.lane, i.thread_id, i.seq) for i in c.prompt.items[:2]] == \
        [("recalled", "old", 0), ("recalled", "old", 1)]


@pytest.mark.parametrize("thread_id", ["res:u-ayse", "resource:u-ayse"])
def test_thread_named_like_a_resource_key_cannot_see_person_memory(thread_id: str) -> None:
    s = storage()
    person = AgentMemory(s, working_memory=WorkingMemoryConfig(scope="resource"))
    person.update_working_memory(thread_id="t-ayse", resource_id="u-ayse",
                                 patch={"secret": "Ayse's plan"})
    threaded = AgentMemory(s, working_memory=WorkingMemoryConfig())
    c = threaded.load_context(thread_id=thread_id, input=[user("what do you know?")])
    assert "Ayse's plan" not in str(c.prompt.items[0].message.content)
    assert threaded.get_working_memory(thread_id=thread_id) == {}


def test_recall_per_call_scope_override_reaches_other_threads() -> None:
    s = storage()
    mem = AgentMemory(s, embed=HashingEmbedder(),
                      recall=RecallConfig(top_k=1, message_range={"before": 1, "after": 0}))
    mem.append("a", [user(FILLER[0]), user("refund order r-7 approved")], "u1")
    mem.append("b", [user(FILLER[1])], "u1")
    assert mem.recall("refund order r-7", thread_id="b") == [] or \
        all(h.thread_id == "b" for h in mem.recall("refund order r-7", thread_id="b"))
    hits = mem.recall("refund order r-7", thread_id="b", scope="resource", top_k=1)
    assert [(h.thread_id, h.seq, h.origin) for h in hits] == \
        [("a", 0, "neighbour"), ("a", 1, "hit")]


def test_retry_of_a_reposted_turn_keeps_the_first_attempts_record() -> None:
    s = storage()
    mem = AgentMemory(s)
    mem.append("t1", [user("first"), bot("answer")])
    given = [user("first"), bot("answer"), user("second")]
    first = mem.load_context(thread_id="t1", input=given)
    mem.append("t1", first.incoming, run_id="r2")
    retry = mem.load_context(thread_id="t1", input=given)
    assert retry.incoming == [] and retry.memctx.echo_trimmed == 2
    assert retry.model_dump_json(exclude={"incoming"}) == \
        first.model_dump_json(exclude={"incoming"})


def test_retry_of_a_first_turn_with_imported_history_is_not_trimmed() -> None:
    s = storage()
    mem = AgentMemory(s, recent_n=4)
    given = [user("a"), bot("b"), user("c")]
    first = mem.load_context(thread_id="t1", input=given)
    assert first.memctx.incoming_count == 3 and first.memctx.echo_trimmed == 0
    mem.append("t1", first.incoming, run_id="r1")  # the run's marker tells the cases apart
    retry = mem.load_context(thread_id="t1", input=given)
    assert retry.incoming == []
    assert retry.model_dump_json(exclude={"incoming"}) == \
        first.model_dump_json(exclude={"incoming"})


def test_a_new_message_equal_to_an_older_one_is_not_deduped() -> None:
    s = storage()
    mem = AgentMemory(s)
    mem.append("t1", [user("yes"), bot("ok")])
    c = compose(mem, "yes")
    assert c.incoming == [user("yes")] and c.memctx.recent_count == 2


def test_composition_is_the_same_on_duckdb() -> None:
    from memory_core.storage import duckdb as duckdb_mod

    def build(s: Any) -> str:
        mem = AgentMemory(s, embed=HashingEmbedder(), recent_n=2,
                          recall=RecallConfig(top_k=2, message_range=1, mode="hybrid"),
                          working_memory=WorkingMemoryConfig(scope="resource"))
        rows = [user(t) for t in FILLER[:5]] + [call_msg("c1", "refund order r-7"),
                                                result_msg("c1")] + [user(t) for t in FILLER[5:]]
        for i, m in enumerate(rows):
            mem.append("t1", [m], "u1", created_at=T0 + timedelta(seconds=i))
        mem.update_working_memory(thread_id="t1", resource_id="u1", patch={"a": 1})
        c = mem.load_context(thread_id="t1", resource_id="u1",
                             input=[user("refund order r-7")])
        assert any(r.origin == "hit" for r in c.memctx.recalled)
        return c.model_dump_json()

    assert build(storage()) == build(duckdb_mod.DuckDBStorage(":memory:"))


def _count_store_calls(s: InMemoryStorage, names: Sequence[str]) -> dict[str, int]:
    """Wrap the store's methods on the instance and count how often each is called."""
    counts = dict.fromkeys(names, 0)
    for name in names:
        original = getattr(s.memory, name)

        def counted(*args: Any, _n: str = name, _f: Any = original, **kw: Any) -> Any:
            counts[_n] += 1
            return _f(*args, **kw)

        setattr(s.memory, name, counted)
    return counts


@pytest.mark.parametrize("scope", ["thread", "resource"])
def test_a_turn_reads_its_thread_once_and_lists_the_resource_once(
        scope: Literal["thread", "resource"]) -> None:
    # each store call is a round trip on a database: recall reuses the thread the turn
    # already read, and a retried turn reads the scope's max seqs in one query
    s = storage()
    mem = AgentMemory(s, embed=HashingEmbedder(), recent_n=1,
                      recall=RecallConfig(scope=scope, top_k=1))
    mem.append("t1", [user("refund for order r-7 was approved"), bot("noted")] +
               [user(t) for t in FILLER[:3]], "u1")
    mem.append("t2", [user("refund for order r-7 was sent")], "u1")
    counts = _count_store_calls(s, ["get_thread", "list_threads", "thread_stats",
                                    "scope_counts"])
    c = mem.load_context(thread_id="t1", resource_id="u1", input=[user("refund r-7")])
    assert c.memctx.recalled and c.memctx.recall_skipped is None
    # recall's scope and its change check: one scope_counts call, whatever the scope
    assert counts == {"get_thread": 1, "list_threads": 0, "thread_stats": 0,
                      "scope_counts": 1}
    mem.append("t1", [user("refund r-7")], "u1", run_id="r1")
    for k in counts:
        counts[k] = 0
    retry = mem.load_context(thread_id="t1", resource_id="u1", input=[user("refund r-7")])
    assert retry.incoming == [] and retry.memctx.recalled == c.memctx.recalled
    assert counts == {"get_thread": 1, "list_threads": 0, "thread_stats": 1,
                      "scope_counts": 2}
    assert mem.recall("refund r-7", thread_id="t1") == mem.recall(
        "refund r-7", thread_id="t1", resource_id="u1")
