"""Conformance: message batches (dense seqs, all-or-nothing, explicit-seq idempotency,
mixed batches refused) and the read paths (all, range, seqs, tail, by run, search)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memory_core.errors import InvalidInputError, NotFoundError
from memory_core.lifecycle.erasure import erase_resource, erase_thread
from memory_core.storage.base import MemoryStore, Storage
from memory_core.testing.support import T0, StepClock, row, vec
from memory_core.types import AppendRow, Message, TextPart, ToolCallPart, ToolResultPart


def test_seqs_are_dense_from_zero_per_thread(t1: Storage) -> None:
    t1.memory.create_thread("t2")
    assert t1.memory.append_messages("t1", [row("a"), row("b")]) == [0, 1]
    assert t1.memory.append_messages("t2", [row("x")]) == [0]
    assert t1.memory.append_messages("t1", [row("c")]) == [2]
    assert [m.seq for m in t1.memory.get_messages("t1")] == [0, 1, 2]
    assert t1.memory.count_messages("t1") == 3 and t1.memory.max_seq("t1") == 2


def test_empty_thread_has_no_messages(t1: Storage) -> None:
    assert t1.memory.get_messages("t1") == []
    assert t1.memory.count_messages("t1") == 0 and t1.memory.max_seq("t1") == -1
    assert t1.memory.append_messages("t1", []) == []


def test_append_to_unknown_thread_is_refused(storage: Storage) -> None:
    with pytest.raises(NotFoundError, match="thread 'ghost' does not exist"):
        storage.memory.append_messages("ghost", [row("a")])


def test_failing_batch_leaves_nothing_behind(t1: Storage) -> None:
    t1.memory.append_messages("t1", [row("first", embedding=vec(1, 0, 0))])
    bad = [row("a", embedding=vec(1, 0, 0)), row("b"), row("c", embedding=vec(1, 0))]
    with pytest.raises(InvalidInputError, match="row 2: embedding has dimension 2"):
        t1.memory.append_messages("t1", bad)
    assert [m.text() for m in t1.memory.get_messages("t1")] == ["first"]
    assert list(t1.memory.get_embeddings(["t1"]).seqs) == [0]
    assert t1.memory.append_messages("t1", [row("next")]) == [1]


def test_explicit_seq_rewrite_is_ignored_and_returns_seq(t1: Storage) -> None:
    assert t1.memory.append_messages("t1", [row("a", seq=0), row("b", seq=1)]) == [0, 1]
    assert t1.memory.append_messages("t1", [row("A", seq=1), row("c", seq=2)]) == [1, 2]
    assert [m.text() for m in t1.memory.get_messages("t1")] == ["a", "b", "c"]


def test_explicit_seq_rewrite_does_not_add_an_embedding(t1: Storage) -> None:
    t1.memory.append_messages("t1", [row("a", seq=0)])
    t1.memory.append_messages("t1", [row("a", seq=0, embedding=vec(1, 2))])
    assert len(t1.memory.get_embeddings(["t1"])) == 0


def test_assigned_seqs_continue_after_explicit_ones(t1: Storage) -> None:
    t1.memory.append_messages("t1", [row("a", seq=0), row("b", seq=4)])
    assert t1.memory.append_messages("t1", [row("c")]) == [5]


def test_mixed_batch_is_refused_naming_thread(t1: Storage) -> None:
    with pytest.raises(InvalidInputError, match="batch for thread 't1' mixes rows"):
        t1.memory.append_messages("t1", [row("a", seq=0), row("b")])
    assert t1.memory.count_messages("t1") == 0


def test_batch_repeating_a_seq_is_refused(t1: Storage) -> None:
    with pytest.raises(InvalidInputError, match="repeats a seq"):
        t1.memory.append_messages("t1", [row("a", seq=3), row("b", seq=3)])
    assert t1.memory.count_messages("t1") == 0


def test_round_trip_keeps_every_field(t1: Storage) -> None:
    when = T0.replace(microsecond=123456)
    parts = Message(role="assistant", content=[
        TextPart(text="calling"), ToolCallPart(id="c1", name="lookup", args={"q": [1, "x"]})],
        metadata={"k": {"nested": True}})
    result = Message(role="tool", content=[ToolResultPart(call_id="c1", name="lookup",
                                                          result={"ok": 1.5})])
    t1.memory.append_messages("t1", [
        AppendRow(message=parts, created_at=when, run_id="r1"),
        AppendRow(message=result, created_at=when, run_id="r1")])
    a, b = t1.memory.get_messages("t1")
    assert a.as_message() == parts and b.as_message() == result
    assert (a.thread_id, a.resource_id, a.seq, a.created_at, a.run_id) == \
        ("t1", "u1", 0, when, "r1")
    assert a.text() == "calling" and b.text() is None


def test_created_at_defaults_to_the_clock(clocked: Storage, clock: StepClock) -> None:
    clocked.memory.create_thread("t1")
    clock.set(50)
    clocked.memory.append_messages("t1", [row("a")])
    (m,) = clocked.memory.get_messages("t1")
    assert m.created_at == T0 + timedelta(seconds=50)


def test_get_by_inclusive_range(t1: Storage) -> None:
    t1.memory.append_messages("t1", [row(str(i)) for i in range(6)])
    assert [m.seq for m in t1.memory.get_messages("t1", from_seq=2, to_seq=4)] == [2, 3, 4]
    assert [m.seq for m in t1.memory.get_messages("t1", from_seq=4)] == [4, 5]
    assert [m.seq for m in t1.memory.get_messages("t1", to_seq=1)] == [0, 1]


def test_get_by_seqs_sorted_skipping_unknown(t1: Storage) -> None:
    t1.memory.append_messages("t1", [row(str(i)) for i in range(6)])
    assert [m.seq for m in t1.memory.get_messages("t1", seqs=[5, 1, 99, 1])] == [1, 5]
    assert t1.memory.get_messages("t1", seqs=[]) == []


def test_get_messages_of_unknown_thread_is_empty(storage: Storage) -> None:
    assert storage.memory.get_messages("ghost") == []
    assert storage.memory.count_messages("ghost") == 0


def test_get_tail(t1: Storage) -> None:
    t1.memory.append_messages("t1", [row(str(i)) for i in range(5)])
    assert [m.seq for m in t1.memory.get_tail("t1", 2)] == [3, 4]
    assert [m.seq for m in t1.memory.get_tail("t1", 9)] == [0, 1, 2, 3, 4]
    assert t1.memory.get_tail("t1", 0) == []
    assert t1.memory.get_tail("ghost", 3) == []
    assert t1.memory.get_tail("t1", -1) == []


def test_get_tail_counts_seqs_not_rows_across_a_gap(t1: Storage) -> None:
    # the port's rule is "seqs from max_seq - n + 1": a gap yields fewer than n rows
    t1.memory.append_messages("t1", [row("a", seq=0), row("b", seq=5), row("c", seq=6)])
    assert [m.seq for m in t1.memory.get_tail("t1", 2)] == [5, 6]
    assert [m.seq for m in t1.memory.get_tail("t1", 4)] == [5, 6]
    assert [m.seq for m in t1.memory.get_tail("t1", 7)] == [0, 5, 6]


def test_get_messages_by_run(t1: Storage) -> None:
    t1.memory.append_messages("t1", [row("a", run_id="r1"), row("b", run_id="r2")])
    t1.memory.append_messages("t1", [row("c", run_id="r1"), row("d")])
    assert [m.text() for m in t1.memory.get_messages_by_run("t1", "r1")] == ["a", "c"]
    assert t1.memory.get_messages_by_run("t1", "r9") == []


def test_search_is_case_insensitive_substring(t1: Storage) -> None:
    t1.memory.append_messages("t1", [row("The Quick fox"), row("slow"),
                                     row("QUICKSILVER", role="assistant")])
    found = t1.memory.search_messages("quick")
    assert [m.text() for m in found] == ["The Quick fox", "QUICKSILVER"]
    assert t1.memory.search_messages("") == []


def test_search_reads_text_parts_only(t1: Storage) -> None:
    t1.memory.append_messages("t1", [AppendRow(message=Message(role="assistant", content=[
        ToolCallPart(id="c", name="needle", args={"needle": 1})]))])
    assert t1.memory.search_messages("needle") == []


def test_search_filters_by_resource_and_thread_and_limits(clocked: Storage) -> None:
    m = clocked.memory
    m.create_thread("a", resource_id="u1")
    m.create_thread("b", resource_id="u1")
    m.create_thread("c", resource_id="u2")
    for tid in ("a", "b", "c"):
        m.append_messages(tid, [row(f"apple in {tid}"), row(f"apple again {tid}")])
    assert {x.thread_id for x in m.search_messages("apple", resource_id="u1")} == {"a", "b"}
    assert {x.thread_id for x in m.search_messages("apple", thread_id="c")} == {"c"}
    everything = m.search_messages("apple")
    assert [(x.thread_id, x.seq) for x in everything] == [
        ("a", 0), ("a", 1), ("b", 0), ("b", 1), ("c", 0), ("c", 1)]  # by created_at
    assert m.search_messages("apple", limit=2) == everything[:2]


def test_thread_stats_counts_and_max_seq_of_existing_threads(t1: Storage) -> None:
    m = t1.memory
    m.create_thread("t2")
    m.create_thread("empty")
    m.append_messages("t1", [row("a"), row("b"), row("c")])
    m.append_messages("t2", [AppendRow(message=Message(role="user", content="x"), seq=7),
                             AppendRow(message=Message(role="user", content="y"), seq=2)])
    stats = m.thread_stats(["t1", "t2", "empty", "ghost", "t1"])
    assert stats == {"t1": (3, 2), "t2": (2, 7), "empty": (0, -1)}  # ghost absent
    assert m.thread_stats([]) == {}
    m.append_messages("t1", [row("d")])
    assert m.thread_stats(["t1"]) == {"t1": (4, 3)}
    # the port's default (built on count_messages/max_seq) agrees with the override
    assert MemoryStore.thread_stats(m, ["t1", "t2", "empty", "ghost"]) == {
        "t1": (4, 3), "t2": (2, 7), "empty": (0, -1)}
    m.delete_thread("t2")
    assert m.thread_stats(["t2", "empty"]) == {"empty": (0, -1)}


def _assert_stats_exact(m: MemoryStore, tids: list[str]) -> None:
    """thread_stats, count_messages and max_seq all agree with the stored messages."""
    truth: dict[str, tuple[int, int]] = {}
    for t in tids:
        if m.get_thread(t) is not None:
            seqs = [x.seq for x in m.get_messages(t)]
            truth[t] = (len(seqs), max(seqs, default=-1))
    assert m.thread_stats(tids) == truth
    for t in tids:
        assert (m.count_messages(t), m.max_seq(t)) == truth.get(t, (0, -1))


def test_thread_stats_stay_exact_through_explicit_seqs_clone_and_erase(
        storage: Storage) -> None:
    m = storage.memory
    tids = ["a", "b", "a2", "b2"]
    m.create_thread("a", resource_id="r")
    m.create_thread("b", resource_id="gone")
    _assert_stats_exact(m, tids)
    assert m.append_messages("a", [row("x", seq=5), row("y", seq=1)]) == [5, 1]
    _assert_stats_exact(m, tids)
    # a replayed batch is ignored row by row: no count change, no max change
    assert m.append_messages("a", [row("x", seq=5), row("y", seq=1)]) == [5, 1]
    _assert_stats_exact(m, tids)
    assert m.thread_stats(["a"]) == {"a": (2, 5)}
    # partly repeated: only the new rows count, and a lower new seq keeps the max
    assert m.append_messages("a", [row("y", seq=1), row("z", seq=3), row("w", seq=9)]) \
        == [1, 3, 9]
    assert m.append_messages("a", [row("v", seq=0)]) == [0]
    assert m.thread_stats(["a"]) == {"a": (5, 9)}
    assert m.append_messages("a", [row("next")]) == [10]
    _assert_stats_exact(m, tids)
    # a batch refused before writing leaves the counters alone
    m.append_messages("b", [row("p", embedding=vec(1, 0))])
    with pytest.raises(InvalidInputError):
        m.append_messages("b", [row("q"), row("bad", embedding=vec(1, 0, 0))])
    assert m.thread_stats(["b"]) == {"b": (1, 0)}
    # a clone starts with the source's counters and then moves on its own
    m.clone_thread("a", "a2")
    assert m.thread_stats(["a", "a2"]) == {"a": (6, 10), "a2": (6, 10)}
    m.append_messages("a2", [row("only in the clone")])
    m.append_messages("a", [row("only in a", seq=20), row("again", seq=3)])
    assert m.thread_stats(["a", "a2"]) == {"a": (7, 20), "a2": (7, 11)}
    m.clone_thread("b", "b2", resource_id="gone")
    _assert_stats_exact(m, tids)
    # erasure: gone from the stats, and a thread recreated under the same id is empty
    erase_thread(storage, "a2")
    assert m.thread_stats(tids) == {"a": (7, 20), "b": (1, 0), "b2": (1, 0)}
    erase_resource(storage, "gone")
    assert m.thread_stats(tids) == {"a": (7, 20)}
    m.create_thread("a2")
    assert m.thread_stats(["a2"]) == {"a2": (0, -1)}
    assert m.append_messages("a2", [row("fresh")]) == [0]
    _assert_stats_exact(m, tids)


def test_get_messages_by_refs_across_threads(t1: Storage) -> None:
    m = t1.memory
    m.create_thread("t2")
    m.append_messages("t1", [row("a"), row("b"), row("c")])
    m.append_messages("t2", [row("x"), row("y")])
    got = m.get_messages_by_refs([("t2", 1), ("t1", 2), ("t1", 0), ("t1", 2),
                                  ("t1", 9), ("ghost", 0)])
    assert [(x.thread_id, x.seq, x.text()) for x in got] == [
        ("t1", 0, "a"), ("t1", 2, "c"), ("t2", 1, "y")]  # by thread, seq; each once
    assert got[0] == m.get_messages("t1", seqs=[0])[0]
    assert MemoryStore.get_messages_by_refs(m, [("t2", 1), ("t1", 2), ("t1", 0),
                                                ("ghost", 0)]) == got
    assert m.get_messages_by_refs([]) == []
