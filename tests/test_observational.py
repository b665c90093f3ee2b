"""Observational memory: SPEC §8 Given/When/Then, journaled observer and reflector,
derived counters, tool-pair windows, recall and the opt-in recall tool."""

from __future__ import annotations

from typing import Any

import pytest

from memory_core.composition.observational import (
    ObservationalConfig,
    ObservationalMemory,
    observe_key,
    reflect_key,
)
from memory_core.embedding.hashing import HashingEmbedder
from memory_core.errors import InvalidInputError, ModelError
from memory_core.models.scripted import ScriptedModel
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import AppendRow, Message, Observation, ToolCallPart, ToolResultPart
from tests.helpers import Tick, drop_observations, jget


def _store(n: int, thread: str = "t1") -> InMemoryStorage:
    s = InMemoryStorage(clock=Tick())
    s.memory.create_thread(thread)
    s.memory.append_messages(thread, [AppendRow(message=Message(
        role="user" if i % 2 == 0 else "assistant", content=f"message number {i}"))
        for i in range(n)])
    return s


def _om(s: InMemoryStorage, model: Any, **kw: int) -> ObservationalMemory:
    return ObservationalMemory(s, ObservationalConfig(model=model, **kw), clock=Tick())


def test_threshold_4_ten_messages_one_call_range_0_7() -> None:
    s = _store(10)
    model = ScriptedModel(["obs A"])
    om = _om(s, model, message_threshold=4)
    added = om.compact("t1")
    assert model.calls == 1
    assert [(o.from_seq, o.to_seq, o.level, o.text) for o in added] == [(0, 7, 0, "obs A")]
    assert added[0].source_ids == [str(i) for i in range(8)]
    assert om.observed_seq("t1") == 7
    assert [m.seq for m in om.window("t1")] == [8, 9]
    assert om.render("t1") == "# Observations\nobs A"
    rec = jget(s, observe_key("t1", 0))
    assert rec == {"v": 1, "text": "obs A", "from_seq": 0, "to_seq": 7,
                   "kept_seqs": list(range(8)), "model": "scripted", "tokens": 32}
    # the observer saw its instruction and every message labelled by seq
    seen = model.seen[0]
    assert seen[0].role == "system" and len(seen) == 9
    assert seen[1].content == "[seq 0 | 2026-01-01] message number 0"
    assert seen[8].metadata == {"seq": 7, "date": "2026-01-01"}


def test_under_threshold_does_nothing() -> None:
    s = _store(4)
    model = ScriptedModel([])
    om = _om(s, model, message_threshold=4)
    assert om.compact("t1") == [] and model.calls == 0  # "greater than", not equal


def test_counters_reset_but_journal_kept_same_text_one_call() -> None:
    s = _store(10)
    model = ScriptedModel(["obs A"])
    om = _om(s, model, message_threshold=4)
    first = om.compact("t1")
    # reset the counters: they are derived from the observations, so delete those
    drop_observations(s)
    assert om.observed_seq("t1") == -1 and om.observe_seq("t1") == 0
    again = om.compact("t1")
    assert model.calls == 1
    assert [o.text for o in again] == [o.text for o in first] == ["obs A"]
    assert len(s.memory.list_observations("t1")) == 1


def test_reentering_step_with_a_raising_model_never_calls_it() -> None:
    s = _store(10)
    _om(s, ScriptedModel(["obs A"]), message_threshold=4).compact("t1")
    drop_observations(s)
    om2 = _om(s, ScriptedModel([]), message_threshold=4)  # would raise if called
    assert [o.text for o in om2.compact("t1")] == ["obs A"]


def test_model_failure_is_a_model_error_and_nothing_is_recorded() -> None:
    s = _store(10)
    om = _om(s, ScriptedModel([]), message_threshold=4)
    with pytest.raises(ModelError):
        om.compact("t1")
    assert s.runs.get(observe_key("t1", 0)) is None
    assert om.observed_seq("t1") == -1


class _BadModel:
    def __init__(self, outcome: Any) -> None:
        self.outcome = outcome

    def complete(self, messages: Any, tools: Any) -> Any:
        if isinstance(self.outcome, Exception):
            raise self.outcome
        return self.outcome


@pytest.mark.parametrize(("outcome", "message"), [
    (ConnectionError("refused"), "observational model failed at 'om:t1:proc:observe:0': "
                                 "ConnectionError: refused"),
    ("just text", "observational model returned str at 'om:t1:proc:observe:0', "
                  "expected ModelResponse"),
])
def test_a_broken_observer_model_names_the_journal_key(outcome: Any, message: str) -> None:
    s = _store(10)
    om = _om(s, _BadModel(outcome), message_threshold=4)
    with pytest.raises(ModelError) as info:
        om.compact("t1")
    assert str(info.value) == message
    assert s.runs.get(observe_key("t1", 0)) is None


def _tool_store(call_seq: int, n_before: int) -> InMemoryStorage:
    s = InMemoryStorage(clock=Tick())
    s.memory.create_thread("t1")
    rows = [AppendRow(message=Message(role="user", content=f"m{i}")) for i in range(n_before)]
    rows.append(AppendRow(message=Message(role="assistant", content=[
        ToolCallPart(id="c1", name="lookup", args={"q": "x"})])))
    rows.append(AppendRow(message=Message(role="tool", content=[
        ToolResultPart(call_id="c1", name="lookup", result="42")])))
    rows += [AppendRow(message=Message(role="user", content=f"after {i}")) for i in range(3)]
    s.memory.append_messages("t1", rows)
    assert s.memory.get_messages("t1")[call_seq].tool_calls()
    return s


def test_observed_seq_1_with_call_at_seq_1_window_includes_the_call() -> None:
    s = _tool_store(call_seq=1, n_before=1)
    s.memory.put_observation(Observation(id="obs-t1-0000", thread_id="t1", from_seq=0,
                                         to_seq=1, text="seen", created_at=Tick()()))
    om = _om(s, ScriptedModel([]), message_threshold=30)
    assert om.observed_seq("t1") == 1
    assert [m.seq for m in om.window("t1")] == [1, 2, 3, 4, 5]


def test_block_never_ends_between_a_call_and_its_result() -> None:
    # 8 messages, threshold 4, keep 2: the plain block would be 0..5, whose last row is
    # the call at seq 5 (result at 6), so the block stops before the call
    s = InMemoryStorage(clock=Tick())
    s.memory.create_thread("t1")
    rows = [AppendRow(message=Message(role="user", content=f"m{i}")) for i in range(5)]
    rows.append(AppendRow(message=Message(role="assistant", content=[
        ToolCallPart(id="c9", name="lookup", args={})])))
    rows.append(AppendRow(message=Message(role="tool", content=[
        ToolResultPart(call_id="c9", name="lookup", result=1)])))
    rows.append(AppendRow(message=Message(role="user", content="last")))
    s.memory.append_messages("t1", rows)
    model = ScriptedModel(["first", "second"])
    om = _om(s, model, message_threshold=4)
    added = om.compact("t1")
    assert (added[0].from_seq, added[0].to_seq) == (0, 4)
    assert all(o.to_seq != 5 for o in added)
    assert [m.seq for m in om.window("t1")][0] in (5, 7)


def test_block_of_a_lone_call_extends_through_its_result() -> None:
    s = _tool_store(call_seq=0, n_before=0)  # call 0, result 1, then 3 user rows
    om = _om(s, ScriptedModel(["x"]), message_threshold=8)  # keep 4: plain block is [0]
    block = om.select_block(s.memory.get_messages("t1"))
    assert [m.seq for m in block] == [0, 1]


def test_token_mode_counts_tokens_not_messages() -> None:
    s = InMemoryStorage(clock=Tick())
    s.memory.create_thread("t1")
    s.memory.append_messages("t1", [AppendRow(message=Message(content="x" * 40))
                                    for _ in range(3)])  # 10 tokens each
    model = ScriptedModel(["tok"])
    om_msgs = _om(s, model, message_threshold=30)
    assert om_msgs.compact("t1") == []  # 3 messages is under 30
    om_tok = _om(s, model, token_threshold=25)  # 30 tokens > 25, keep 12
    added = om_tok.compact("t1")
    assert [(o.from_seq, o.to_seq) for o in added] == [(0, 1)]
    assert om_tok.size(om_tok.window("t1")) == 10


def _grow(s: InMemoryStorage, om: ObservationalMemory, rounds: int) -> list[Observation]:
    """Append 3 messages and compact, ``rounds`` times: with threshold 2 (keep 1) each
    round adds exactly one observation."""
    added: list[Observation] = []
    for r in range(rounds):
        s.memory.append_messages("t1", [AppendRow(message=Message(content=f"r{r} m{i}"))
                                        for i in range(3)])
        added += om.compact("t1")
    return added


def test_reflection_condenses_past_the_observation_threshold() -> None:
    s = _store(0)
    model = ScriptedModel(["o0", "o1", "o2", "reflected"])
    om = _om(s, model, message_threshold=2, observation_threshold=2)
    added = _grow(s, om, 3)
    assert [(o.id, o.level, o.from_seq, o.to_seq) for o in added] == [
        ("obs-t1-0000", 0, 0, 1), ("obs-t1-0001", 0, 2, 4), ("obs-t1-0002", 0, 5, 7),
        ("obs-t1-r0000", 1, 0, 7)]
    r = added[-1]
    assert r.source_ids == ["obs-t1-0000", "obs-t1-0001", "obs-t1-0002"]
    assert s.runs.get(reflect_key("t1", 0)) == {"v": 1, "text": "reflected",
                                                 "source_ids": r.source_ids,
                                                 "model": "scripted", "tokens": 3}
    assert (om.observe_seq("t1"), om.reflect_seq("t1"), om.observed_seq("t1")) == (3, 1, 7)
    assert [o.id for o in om.active("t1")] == ["obs-t1-r0000"]
    assert om.render("t1") == "# Observations\nreflected"
    assert model.calls == 4


def test_crash_between_reflection_and_marking_is_repaired() -> None:
    s = _store(0)
    om = _om(s, ScriptedModel(["a", "b", "c", "r", "d"]), message_threshold=2,
             observation_threshold=2)
    real = s.memory.mark_condensed
    s.memory.mark_condensed = lambda observation_ids: None  # type: ignore[method-assign]
    _grow(s, om, 3)  # the reflection is stored, the marking is lost
    assert len(om.active("t1")) == 4
    s.memory.mark_condensed = real  # type: ignore[method-assign]
    _grow(s, om, 1)  # the next compaction repairs first, then observes once more
    assert [o.id for o in om.active("t1")] == ["obs-t1-r0000", "obs-t1-0003"]


def test_recall_observations_keyword_includes_condensed_and_blank_is_empty() -> None:
    s = _store(0)
    om = _om(s, ScriptedModel(["Refund approved", "Shipping late", "Refund paid", "summary"]),
             message_threshold=2, observation_threshold=2)
    _grow(s, om, 3)
    hits = om.recall_observations("t1", "REFUND")
    assert [h.id for h in hits] == ["obs-t1-0000", "obs-t1-0002"]
    assert all(h.condensed for h in hits) and hits[0].range == (0, 1)
    assert om.recall_observations("t1", "   ") == []
    with pytest.raises(InvalidInputError, match="embedder"):
        om.recall_observations("t1", "refund", semantic=True)


def test_recall_observations_semantic_ranks_by_cosine() -> None:
    s = _store(0)
    om = ObservationalMemory(s, ObservationalConfig(model=ScriptedModel(
        ["we talked about the weather", "the refund was approved on monday"]),
        message_threshold=2), clock=Tick(), embed=HashingEmbedder(256))
    _grow(s, om, 2)
    hits = om.recall_observations("t1", "refund approved", top_k=1)
    assert [h.text for h in hits] == ["the refund was approved on monday"]
    assert hits[0].score is not None and hits[0].score > 0
    assert len(om.recall_observations("t1", "refund approved", top_k=5)) == 2
    assert om.recall_observations("t1", "refund", semantic=False)[0].score is None


def test_recall_tool_is_opt_in_and_expands_sources() -> None:
    s = _store(10)
    om = _om(s, ScriptedModel(["Refund approved"]), message_threshold=4)
    om.compact("t1")
    tool = om.recall_tool("t1")
    assert tool.name == "recall_observations"
    out = tool.fn({"query": "refund", "expand": True})
    assert [m["id"] for m in out["matches"]] == ["obs-t1-0000"]
    assert [x["seq"] for x in out["matches"][0]["source"]] == list(range(8))
    assert "source" not in tool.fn({"query": "refund"})["matches"][0]
    with pytest.raises(InvalidInputError, match="query"):
        tool.fn({})


def test_config_validation_names_the_value() -> None:
    with pytest.raises(ValueError, match="-1"):
        ObservationalConfig(model=None, token_threshold=-1)
    assert ObservationalConfig(model=None).mode == "messages"
    assert ObservationalConfig(model=None, token_threshold=10).threshold == 10


def test_extractive_summarizer_output_and_kept_seqs_are_journaled() -> None:
    from memory_core.models.summarizer import ExtractiveSummarizer

    s = InMemoryStorage(clock=Tick())
    s.memory.create_thread("t1")
    facts = ["Hi there.", "We agreed the refund of $40 is approved on 2026-01-03.",
             "ok", "The courier is DHL, tracking 99812.", "thanks", "sure",
             "Your new address is 12 Elm Street.", "bye", "later", "fine"]
    s.memory.append_messages("t1", [AppendRow(message=Message(
        role="user" if i % 2 == 0 else "assistant", content=t)) for i, t in enumerate(facts)])
    model = ExtractiveSummarizer(max_sentences=3)
    om = _om(s, model, message_threshold=4)  # type: ignore[arg-type]
    (obs,) = om.compact("t1")
    rec = jget(s, observe_key("t1", 0))
    assert rec["kept_seqs"] == model.last_kept_seqs and rec["kept_seqs"]
    assert set(rec["kept_seqs"]) <= set(range(8)) and 1 in rec["kept_seqs"]
    assert "[seq 1 | 2026-01-01] We agreed the refund of $40" in obs.text
    drop_observations(s)
    om2 = _om(s, ScriptedModel([]), message_threshold=4)
    assert [o.text for o in om2.compact("t1")] == [obs.text]


def test_llm_style_kept_line_is_parsed_and_stripped() -> None:
    s = _store(10)
    om = _om(s, ScriptedModel(["- [seq 2] the refund was approved\nkept: 2, 5"]),
             message_threshold=4)
    (obs,) = om.compact("t1")
    assert obs.text == "- [seq 2] the refund was approved"
    assert jget(s, observe_key("t1", 0))["kept_seqs"] == [2, 5]
