"""Tool exchanges in a composed prompt: every call reaches the model immediately
followed by all its results, every result right after its call, every call id once —
the rules OpenAI-compatible providers enforce (a prompt breaking them is rejected).

A *tool exchange* is a message holding tool calls together with, for each call id, the
nearest later message of its thread holding that id's result (a result message may
hold only results of that call). Composition carries exchanges whole or not at all:

- the recent window opens at the call of every result it holds (``open_at_calls``),
  then ``pair_tool_calls`` over the window drops what still cannot pair;
- recalled rows (``pair_tool_calls``): a recalled call brings its results (repaired
  from its thread when they were not recalled); a recalled result comes only with its
  recalled call; each exchange is emitted where its first recalled row stands.

Dropped rows name why: ``unanswered-tool-call`` (a result is missing),
``orphan-tool-result`` (its call is not in the prompt), ``duplicate-tool-call-id`` (the
exchange, or one with the same call id, is already in the prompt).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, Literal, TypeVar

from memory_core.types import Message, StoredMessage

T = TypeVar("T")

DropReason = Literal["unanswered-tool-call", "duplicate-tool-call-id", "orphan-tool-result"]
UNANSWERED: DropReason = "unanswered-tool-call"
DUPLICATE: DropReason = "duplicate-tool-call-id"
ORPHAN: DropReason = "orphan-tool-result"

# how far before the window a cut-off call is looked for before reading the whole prefix
LOOKBACK = 32

Ref = tuple[str, int]


@dataclass(frozen=True)
class KeptRow(Generic[T]):
    """A row that reaches the prompt. ``source`` is the recalled item it came from, or
    None for a repair row pulled from the thread (origin ``"repair"``)."""

    message: StoredMessage
    source: T | None

    @property
    def is_repair(self) -> bool:
        return self.source is None


@dataclass(frozen=True)
class DroppedRow(Generic[T]):
    message: StoredMessage
    source: T
    reason: DropReason


@dataclass
class PairingResult(Generic[T]):
    kept: list[KeptRow[T]] = field(default_factory=list)
    dropped: list[DroppedRow[T]] = field(default_factory=list)


def call_ids(m: Message) -> list[str]:
    return [str(p.id) for p in m.tool_calls()]


def result_ids(m: Message) -> list[str]:
    """The call ids ``m`` answers: its tool-result parts, or for a plain-text ``tool``
    message the ``tool_call_id`` of its metadata (how such a message is sent)."""
    ids = [str(p.call_id) for p in m.tool_results()]
    if not ids and m.role == "tool" and isinstance(m.content, str):
        cid = m.metadata.get("tool_call_id") or m.metadata.get("call_id")
        ids = [str(cid)] if cid else []
    return ids


def is_tool_row(m: Message) -> bool:
    """Whether ``m`` takes part in a tool exchange (a ``tool`` message always does:
    without a call id it can only be an orphan)."""
    return bool(m.tool_calls()) or bool(result_ids(m)) or m.role == "tool"


def results_of(call: StoredMessage, later: Sequence[StoredMessage]) -> list[StoredMessage] | None:
    """The result messages completing ``call``'s exchange, in seq order, from ``later``
    (its thread's messages after it, in seq order); None when a call id has no result,
    or its nearest result message also holds calls or answers another call."""
    ids = call_ids(call)
    found: dict[int, StoredMessage] = {}
    for cid in ids:
        hit = next((x for x in later if cid in result_ids(x)), None)
        if hit is None or hit.tool_calls() or not set(result_ids(hit)) <= set(ids):
            return None
        found[hit.seq] = hit
    return [found[s] for s in sorted(found)]


def open_at_calls(window: list[StoredMessage],
                  read_range: Callable[[int, int], Sequence[StoredMessage]]
                  ) -> list[StoredMessage]:
    """``window`` (a contiguous slice of one thread, in seq order) opened earlier so it
    starts at the call of every result it holds whose call was cut off.
    ``read_range(from_seq, to_seq)`` reads the thread before the window (the last
    ``LOOKBACK`` messages first, the whole prefix only when the call is further back).
    Results whose call is nowhere earlier stay; ``pair_tool_calls`` drops them."""
    while window and window[0].seq > 0:
        start = window[0].seq
        called = {c for m in window for c in call_ids(m)}
        pending = {r for m in window for r in result_ids(m)} - called
        if not pending:
            return window
        earlier = list(read_range(max(0, start - LOOKBACK), start - 1))
        starts = [m.seq for m in earlier if set(call_ids(m)) & pending]
        if not starts and start > LOOKBACK:
            earlier = list(read_range(0, start - 1))
            starts = [m.seq for m in earlier if set(call_ids(m)) & pending]
        if not starts:
            return window
        window = [m for m in earlier if m.seq >= min(starts)] + window
    return window


def _adjacent_results(call: StoredMessage, rows: dict[Ref, StoredMessage]
                      ) -> list[StoredMessage] | None:
    """The call's results when they are the rows right after it (seqs are dense, so
    nothing of the thread lies between): pairing needs no thread read then."""
    later: list[StoredMessage] = []
    seq = call.seq + 1
    while (call.thread_id, seq) in rows and not rows[(call.thread_id, seq)].tool_calls():
        later.append(rows[(call.thread_id, seq)])
        seq += 1
    return results_of(call, later) if later else None


def pair_tool_calls(rows: Sequence[T], *, message_of: Callable[[T], StoredMessage],
                    window: Sequence[StoredMessage],
                    read_thread: Callable[[str], Sequence[StoredMessage]],
                    also: Sequence[Message] = ()) -> PairingResult[T]:
    """Keep the tool exchanges of ``rows`` (in prompt order) whole, in that order.

    A call row brings its exchange (results not among ``rows`` are repair rows read
    from its thread, each thread read at most once); a result row is emitted with its
    call when that call is one of ``rows``, else drops as ``orphan-tool-result``.
    ``window`` (stored rows) and ``also`` (e.g. the new input) are what the prompt
    already holds: an exchange reusing one of their call ids or rows, or one emitted
    earlier here, drops as ``duplicate-tool-call-id``. Rows with no tool part pass
    untouched."""
    messages = [message_of(r) for r in rows]
    source = {m.ref: r for m, r in zip(messages, rows, strict=True)}
    by_ref = {m.ref: m for m in messages}
    claimed = {c for m in (*window, *also) for c in call_ids(m)}
    taken: set[Ref] = {m.ref for m in window}
    threads: dict[str, list[StoredMessage]] = {}
    out: PairingResult[T] = PairingResult()

    def later_in_thread(call: StoredMessage) -> list[StoredMessage]:
        if call.thread_id not in threads:
            threads[call.thread_id] = sorted(read_thread(call.thread_id), key=lambda x: x.seq)
        return [x for x in threads[call.thread_id] if x.seq > call.seq]

    for row, m in zip(rows, messages, strict=True):
        if m.ref in taken:
            continue  # already emitted inside an earlier exchange
        if not is_tool_row(m):
            out.kept.append(KeptRow(m, row))
            taken.add(m.ref)
            continue
        call = m if m.tool_calls() else _recalled_call(m, by_ref)
        if call is None:
            out.dropped.append(DroppedRow(m, row, ORPHAN))
            continue
        results = _adjacent_results(call, by_ref)
        if results is None:
            results = results_of(call, later_in_thread(call))
        members = [call, *(results or [])]
        reason = _problem(m, call, results, members, claimed, taken)
        if reason is not None:
            out.dropped.append(DroppedRow(m, row, reason))
            continue
        claimed.update(call_ids(call))
        for x in members:
            out.kept.append(KeptRow(x, source.get(x.ref)))
            taken.add(x.ref)
    return out


def _recalled_call(result: StoredMessage, rows: dict[Ref, StoredMessage]
                   ) -> StoredMessage | None:
    """The row among ``rows`` whose call ``result`` answers: the nearest earlier row of
    its thread calling one of its ids."""
    ids = set(result_ids(result))
    calls = [m for m in rows.values() if m.thread_id == result.thread_id
             and m.seq < result.seq and ids & set(call_ids(m))]
    return max(calls, key=lambda m: m.seq) if calls else None


def _problem(row: StoredMessage, call: StoredMessage, results: list[StoredMessage] | None,
             members: list[StoredMessage], claimed: set[str], taken: set[Ref]
             ) -> DropReason | None:
    if results is None:
        return UNANSWERED if row is call else ORPHAN
    if row is not call and row.ref not in {x.ref for x in results}:
        return ORPHAN  # a stray copy of a result: its call is answered elsewhere
    if set(call_ids(call)) & claimed or any(x.ref in taken for x in members):
        return DUPLICATE
    return None
