"""Tool-call pairing on recalled rows (SPEC §5): every recalled call reaches the model
with its result, repaired from its thread when needed; orphans and duplicates drop."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, Literal, TypeVar

from memory_core.types import StoredMessage

T = TypeVar("T")

DropReason = Literal["unanswered-tool-call", "duplicate-tool-call-id"]
UNANSWERED: DropReason = "unanswered-tool-call"
DUPLICATE: DropReason = "duplicate-tool-call-id"


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


def call_ids(m: StoredMessage) -> list[str]:
    return [str(p.id) for p in m.tool_calls()]


def result_ids(m: StoredMessage) -> list[str]:
    return [str(p.call_id) for p in m.tool_results()]


def pair_tool_calls(rows: Sequence[T], *, message_of: Callable[[T], StoredMessage],
                    window: Sequence[StoredMessage],
                    read_thread: Callable[[str], Sequence[StoredMessage]]
                    ) -> PairingResult[T]:
    """Pair the tool calls of ``rows`` (recalled, in prompt order).

    Claiming: a row is claimed only when all its call ids and result ids (tracked per
    kind) are unseen; then they all become seen. A result-only row with a seen id, or a call row whose claim
    conflicts, drops as ``duplicate-tool-call-id``. A call row whose calls are all
    answered (a result among the recalled rows or the window) is kept; otherwise each
    missing result is the nearest later row of its thread holding it (each thread is
    read once). Still missing: the call drops as ``unanswered-tool-call``; else the
    repair rows whose result ids are unseen follow the call.
    """
    messages = [message_of(r) for r in rows]
    if not any(m.tool_calls() for m in messages):
        return PairingResult(kept=[KeptRow(m, r) for m, r in zip(messages, rows, strict=True)])

    answered: set[str] = set()
    for m in (*messages, *window):
        answered.update(result_ids(m))

    threads: dict[str, Sequence[StoredMessage]] = {}
    # ids are claimed per kind: a call and its own result never conflict, a second copy
    # of either does
    seen: set[tuple[str, str]] = set()
    out: PairingResult[T] = PairingResult()

    for row, m in zip(rows, messages, strict=True):
        calls = call_ids(m)
        ids = {("call", c) for c in calls} | {("result", r) for r in result_ids(m)}
        if not ids:
            out.kept.append(KeptRow(m, row))
            continue
        if ids & seen:
            out.dropped.append(DroppedRow(m, row, DUPLICATE))
            continue
        seen |= ids
        missing = [c for c in calls if c not in answered]
        if not missing:
            out.kept.append(KeptRow(m, row))
            continue
        if m.thread_id not in threads:
            threads[m.thread_id] = sorted(read_thread(m.thread_id), key=lambda x: x.seq)
        repairs: dict[int, StoredMessage] = {}
        unresolved = False
        for cid in missing:
            found = next((x for x in threads[m.thread_id]
                          if x.seq > m.seq and cid in result_ids(x)), None)
            if found is None:
                unresolved = True
                break
            repairs[found.seq] = found
        if unresolved:
            out.dropped.append(DroppedRow(m, row, UNANSWERED))
            continue
        out.kept.append(KeptRow(m, row))
        for seq in sorted(repairs):
            rep = repairs[seq]
            rkeys = {("result", r) for r in result_ids(rep)}
            if rkeys & seen:
                continue
            seen |= rkeys
            out.kept.append(KeptRow(rep, None))
    return out
