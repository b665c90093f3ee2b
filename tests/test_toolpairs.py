"""Tool exchanges in a prompt: recalled calls repaired with their results, results
only with their calls, duplicates and unanswered calls dropped, and the recent window
opened at the call of a result it holds."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_core.composition.toolpairs import (
    DUPLICATE,
    ORPHAN,
    UNANSWERED,
    call_ids,
    open_at_calls,
    pair_tool_calls,
)
from memory_core.models.openai_codec import to_openai_messages
from memory_core.types import Message, StoredMessage, TextPart, ToolCallPart, ToolResultPart
from tests.fake_provider.validation import validate_messages

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def msg(seq: int, role: str = "user", *parts: object, text: str | None = None,
        thread: str = "t1") -> StoredMessage:
    content: object = text if text is not None else list(parts)
    return StoredMessage(role=role, content=content, thread_id=thread, seq=seq,  # type: ignore[arg-type]
                         created_at=T0)


def call(seq: int, cid: str, *, text: str | None = None, thread: str = "t1") -> StoredMessage:
    parts: list[object] = [TextPart(text=text)] if text else []
    parts.append(ToolCallPart(id=cid, name="refund", args={"id": "r-7"}))
    return msg(seq, "assistant", *parts, thread=thread)


def result(seq: int, cid: str, thread: str = "t1") -> StoredMessage:
    return msg(seq, "tool", ToolResultPart(call_id=cid, name="refund", result="ok"),
               thread=thread)


class Reader:
    def __init__(self, rows: Sequence[StoredMessage]) -> None:
        self.rows = list(rows)
        self.reads: list[str] = []

    def __call__(self, tid: str) -> list[StoredMessage]:
        self.reads.append(tid)
        return [r for r in self.rows if r.thread_id == tid]


def run(rows: Sequence[StoredMessage], window: Sequence[StoredMessage] = (),
        thread: Sequence[StoredMessage] = ()):  # type: ignore[no-untyped-def]
    reader = Reader(thread)
    out = pair_tool_calls(list(rows), message_of=lambda m: m, window=list(window),
                          read_thread=reader)
    return out, reader


def seqs(out) -> list[tuple[int, bool]]:  # type: ignore[no-untyped-def]
    return [(k.message.seq, k.is_repair) for k in out.kept]


def test_rows_without_tool_parts_pass_and_results_without_their_call_drop() -> None:
    rows = [msg(0, text="a"), result(3, "x"), result(5, "x")]
    out, reader = run(rows)
    assert seqs(out) == [(0, False)] and reader.reads == []
    assert [(d.message.seq, d.reason) for d in out.dropped] == [(3, ORPHAN), (5, ORPHAN)]


def test_call_answered_inside_recalled_rows_is_kept_without_a_read() -> None:
    out, reader = run([call(1, "a"), result(2, "a")])
    assert seqs(out) == [(1, False), (2, False)] and reader.reads == []


def test_an_exchange_already_in_the_window_is_a_duplicate() -> None:
    thread = [call(1, "b"), result(2, "b"), call(3, "c"), result(4, "c")]
    # its result is in the window (so, in a composed prompt, is its call)
    out, _ = run([thread[0]], window=[thread[1]], thread=thread)
    assert out.kept == [] and [d.reason for d in out.dropped] == [DUPLICATE]
    # another exchange reusing a call id of the window
    out, _ = run([call(7, "c")], window=thread[2:], thread=thread + [result(8, "c")])
    assert out.kept == [] and [d.reason for d in out.dropped] == [DUPLICATE]


def test_orphan_call_is_dropped_as_unanswered() -> None:
    thread = [call(1, "tc-9"), msg(2, text="no result ever")]
    out, _ = run([thread[0]], thread=thread)
    assert out.kept == []
    assert [(d.message.seq, d.reason) for d in out.dropped] == [(1, UNANSWERED)]


def test_repair_takes_the_nearest_later_result_only() -> None:
    thread = [result(0, "c"), call(1, "c"), result(2, "c"), result(3, "c")]
    out, _ = run([thread[1]], thread=thread)
    assert seqs(out) == [(1, False), (2, True)]


def test_same_turn_stored_twice_emits_one_call_and_one_result() -> None:
    rows = [call(1, "tc-1"), result(2, "tc-1"), call(5, "tc-1"), result(6, "tc-1")]
    out, _ = run(rows)
    assert seqs(out) == [(1, False), (2, False)]
    assert [(d.message.seq, d.reason) for d in out.dropped] == [(5, DUPLICATE), (6, DUPLICATE)]


def test_duplicate_call_repaired_once() -> None:
    thread = [call(1, "d"), result(2, "d"), call(5, "d"), result(6, "d")]
    out, _ = run([thread[0], thread[2]], thread=thread)
    assert seqs(out) == [(1, False), (2, True)]
    assert [(d.message.seq, d.reason) for d in out.dropped] == [(5, DUPLICATE)]


def test_repair_row_is_inserted_before_later_recalled_rows() -> None:
    thread = [call(1, "e"), result(2, "e"), msg(3, text="x")]
    # the result row is recalled later via a neighbour of another hit
    out, _ = run([thread[0], thread[2]], thread=thread)
    assert seqs(out) == [(1, False), (2, True), (3, False)]


def test_each_thread_is_read_once() -> None:
    thread = [call(1, "a"), call(2, "b"), result(3, "a"), result(4, "b")]
    out, reader = run([thread[0], thread[1]], thread=thread)
    assert seqs(out) == [(1, False), (3, True), (2, False), (4, True)]
    assert reader.reads == ["t1"]


def test_parallel_calls_in_one_row_need_every_result() -> None:
    both = msg(1, "assistant", ToolCallPart(id="p", name="a"), ToolCallPart(id="q", name="b"))
    thread = [both, result(2, "p")]
    out, _ = run([both], thread=thread)
    assert out.kept == [] and out.dropped[0].reason == UNANSWERED
    thread.append(result(3, "q"))
    out, _ = run([both], thread=thread)
    assert seqs(out) == [(1, False), (2, True), (3, True)]


def test_repair_reads_the_calls_own_thread() -> None:
    other = [call(1, "z", thread="t2"), result(2, "z", thread="t2")]
    out, reader = run([other[0]], thread=other + [result(9, "z")])
    assert [(k.message.thread_id, k.message.seq) for k in out.kept] == [("t2", 1), ("t2", 2)]
    assert reader.reads == ["t2"]


def test_a_recalled_result_comes_right_after_its_recalled_call() -> None:
    # recalled rows of two threads interleave by time; the exchange stays together
    t1 = [call(1, "a"), result(2, "a")]
    other = msg(1, text="meanwhile", thread="t2")
    out, _ = run([t1[0], other, t1[1]], thread=t1)
    assert [(k.message.thread_id, k.message.seq, k.is_repair) for k in out.kept] == [
        ("t1", 1, False), ("t1", 2, False), ("t2", 1, False)]


def test_a_neighbour_result_without_its_call_is_dropped_not_split() -> None:
    thread = [call(1, "a"), result(2, "a"), msg(3, "assistant", text="approved")]
    out, _ = run(thread[1:], thread=thread)
    assert seqs(out) == [(3, False)]
    assert [(d.message.seq, d.reason) for d in out.dropped] == [(2, ORPHAN)]


def test_a_result_of_a_dropped_call_is_an_orphan() -> None:
    both = msg(1, "assistant", ToolCallPart(id="p", name="a"), ToolCallPart(id="q", name="b"))
    thread = [both, result(2, "p")]
    out, _ = run(thread, thread=thread)
    assert out.kept == []
    assert [(d.message.seq, d.reason) for d in out.dropped] == [(1, UNANSWERED), (2, ORPHAN)]


def test_a_plain_tool_message_pairs_by_its_metadata_id_or_is_an_orphan() -> None:
    plain = StoredMessage(role="tool", content="42", metadata={"tool_call_id": "k"},
                          thread_id="t1", seq=2, created_at=T0)
    bare = StoredMessage(role="tool", content="43", thread_id="t1", seq=3, created_at=T0)
    out, _ = run([call(1, "k"), plain, bare])
    assert seqs(out) == [(1, False), (2, False)]
    assert [(d.message.seq, d.reason) for d in out.dropped] == [(3, ORPHAN)]


class Ranges:
    def __init__(self, rows: Sequence[StoredMessage]) -> None:
        self.rows = list(rows)
        self.reads: list[tuple[int, int]] = []

    def __call__(self, a: int, b: int) -> list[StoredMessage]:
        self.reads.append((a, b))
        return [r for r in self.rows if a <= r.seq <= b]


def test_the_window_opens_at_the_call_of_a_result_it_holds() -> None:
    thread = [msg(0, text="q"), both_calls(1), result(2, "p"), result(3, "q"),
              msg(4, "assistant", text="done")]
    ranges = Ranges(thread)
    assert [m.seq for m in open_at_calls(thread[3:], ranges)] == [1, 2, 3, 4]
    assert ranges.reads == [(0, 2)]
    # nothing cut off: nothing read
    ranges.reads.clear()
    assert [m.seq for m in open_at_calls(thread[4:], ranges)] == [4] and ranges.reads == []


def test_a_call_far_back_is_found_after_the_short_look_back() -> None:
    far = [call(0, "z")] + [msg(i, text=f"t{i}") for i in range(1, 40)] + [result(40, "z")]
    ranges = Ranges(far)
    assert open_at_calls(far[40:], ranges)[0].seq == 0
    assert ranges.reads == [(8, 39), (0, 39)]
    # a result whose call does not exist stays: pairing drops it
    ranges = Ranges(far[1:])
    assert [m.seq for m in open_at_calls(far[40:], ranges)] == [40]


def both_calls(seq: int) -> StoredMessage:
    return msg(seq, "assistant", ToolCallPart(id="p", name="a"), ToolCallPart(id="q", name="b"))


# -- properties ---------------------------------------------------------------------------
row_kind = st.tuples(st.sampled_from(["call", "result", "text"]), st.sampled_from("abcd"))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(row_kind, min_size=1, max_size=14), st.data())
def test_pairing_invariants(kinds: list[tuple[str, str]], data: st.DataObject) -> None:
    thread = []
    for seq, (kind, cid) in enumerate(kinds):
        if kind == "call":
            thread.append(call(seq, cid))
        elif kind == "result":
            thread.append(result(seq, cid))
        else:
            thread.append(msg(seq, text=f"text {seq}"))
    cut = data.draw(st.integers(0, len(thread)))
    history, window = thread[:cut], thread[cut:]
    picked = sorted(set(data.draw(st.lists(st.integers(0, max(cut - 1, 0)), max_size=cut))))
    recalled = [history[i] for i in picked if i < cut]
    out, _ = run(recalled, window=window, thread=thread)

    kept_calls = [c for k in out.kept for c in k.message.tool_calls()]
    kept_results = [r for k in out.kept for r in k.message.tool_results()]
    # no id is emitted twice, per kind (SPEC §5.1: rows pass untouched when no
    # recalled row carries a call)
    if any(m.tool_calls() for m in recalled):
        assert len({c.id for c in kept_calls}) == len(kept_calls)
        assert len({r.call_id for r in kept_results}) == len(kept_results)
    # every emitted call has its result in the prompt (recalled rows or the window)
    answered = {r.call_id for r in kept_results} | \
        {r.call_id for m in window for r in m.tool_results()}
    assert all(c.id in answered for c in kept_calls)
    # every recalled row is kept or dropped exactly once; repairs come from the thread
    sources = [k.message.seq for k in out.kept if not k.is_repair] + \
        [d.message.seq for d in out.dropped]
    assert sorted(sources) == [m.seq for m in recalled]
    assert all(k.message.seq not in picked for k in out.kept if k.is_repair)
    # the recalled lane alone is a valid provider request: exchanges whole, in order,
    # and none reuses a call id of the window
    validate_messages(to_openai_messages([k.message for k in out.kept]
                                         + [Message(role="user", content="q")]))
    assert not {c.id for c in kept_calls} & {c for m in window for c in call_ids(m)}
