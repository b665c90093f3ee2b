"""The new message rows of an append, built column by column.

Every SQL adapter stores an append as rows of the ``messages`` table. Building them
row by row cost ~40 µs of Python a row (a function call per row and per field), more
than DuckDB takes to store one, so they are built here once per append as columns —
a few list comprehensions of C-level calls — and inserted as they are: DuckDB loads
a large batch as one Arrow table (``StagedMessages.arrow``), the other engines bind
them as rows (``StagedMessages.rows``). The values are the same as the
row-by-row build gave: the same canonical JSON body, lowered text, ISO time (the clock
is asked once per row without a time, as before) and vector.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from memory_core.errors import InvalidInputError
from memory_core.storage.common import Clock, ts_micros
from memory_core.types import AppendRow, Message

#: the messages columns an append writes, in the order of ``StagedMessages.rows``
MESSAGE_INSERT = ("thread_id", "seq", "resource_id", "body", "text_lower", "created_at",
                  "created_us", "run_id", "embedding")


@dataclass(slots=True)
class StagedMessages:
    """New rows of one thread (seqs assigned, none stored yet), column by column.
    ``vectors`` is None when no row carries one."""

    thread_id: str
    resource_id: str | None
    seqs: list[int]
    bodies: list[str]
    texts: list[str | None]
    created_at: list[str]
    created_us: list[int]
    run_ids: list[str | None]
    vectors: list[np.ndarray | None] | None

    def __len__(self) -> int:
        return len(self.seqs)

    def rows(self, vector_param: Callable[[np.ndarray], Any]) -> list[tuple[Any, ...]]:
        """The rows as tuples of ``MESSAGE_INSERT``, vectors bound by vector_param."""
        n = len(self.seqs)
        vectors = [None if v is None else vector_param(v) for v in self.vectors] \
            if self.vectors is not None else [None] * n
        return list(zip([self.thread_id] * n, self.seqs, [self.resource_id] * n,
                        self.bodies, self.texts, self.created_at, self.created_us,
                        self.run_ids, vectors, strict=True))

    def arrow(self) -> pa.Table:
        """The rows as one Arrow table of ``MESSAGE_INSERT`` columns, built from the
        columns with no work per row (an engine that loads Arrow takes it whole)."""
        n = len(self.seqs)
        return pa.table({
            "thread_id": pa.array([self.thread_id] * n, pa.string()),
            "seq": pa.array(self.seqs, pa.int64()),
            "resource_id": pa.array([self.resource_id] * n, pa.string()),
            "body": pa.array(self.bodies, pa.string()),
            "text_lower": pa.array(self.texts, pa.string()),
            "created_at": pa.array(self.created_at, pa.string()),
            "created_us": pa.array(self.created_us, pa.int64()),
            "run_id": pa.array(self.run_ids, pa.string()),
            "embedding": vector_column(self.vectors or [None] * n)})

    def top(self) -> int:
        """The highest seq staged."""
        return max(self.seqs)


def vector_column(values: Sequence[np.ndarray | None]) -> pa.Array:
    """float32 vectors (or None) as one Arrow list column, built from one concatenated
    buffer and its offsets instead of a Python object per float."""
    present = [v for v in values if v is not None]
    if not present:
        return pa.nulls(len(values), pa.list_(pa.float32()))
    has = np.fromiter((v is not None for v in values), bool, len(values))
    offsets = np.zeros(len(values) + 1, np.int64)
    np.cumsum(has * int(present[0].shape[0]), out=offsets[1:])
    return pa.LargeListArray.from_arrays(
        pa.array(offsets), pa.array(np.concatenate(present, dtype=np.float32)),
        mask=pa.array(~has) if len(present) < len(values) else None).cast(
            pa.list_(pa.float32()))


def _lowered(m: Message) -> str | None:
    text = m.text()
    return None if text is None else text.lower()


def _check_encodable(thread_id: str, bodies: Sequence[str]) -> None:
    """A SQL engine stores text as UTF-8: a lone surrogate (``"\\ud800"``) cannot be
    stored, so it is refused here, naming the row, before anything is written (it
    failed later, inside the commit, and left the connection in a transaction). Only
    bodies with a non-ASCII character are encoded (``isascii`` reads a flag CPython
    keeps on the string): most of a bulk ingest is never encoded twice."""
    for i, body in enumerate(bodies):
        if body.isascii():
            continue
        try:
            body.encode("utf-8")
        except UnicodeEncodeError as e:
            raise InvalidInputError(
                f"row {i} of the batch for thread '{thread_id}' holds text that is "
                f"not valid Unicode ({e.reason}: {body[e.start:e.end]!r}); it cannot "
                "be stored") from None


def stage_messages(thread_id: str, resource_id: str | None, seqs: Sequence[int],
                   bodies: Sequence[str], rows: Sequence[AppendRow],
                   clock: Clock) -> StagedMessages:
    """The rows to insert for ``rows`` (already checked; bodies from
    ``common.message_bodies``) at ``seqs``; rows without a time get ``clock()``.
    InvalidInputError when a body cannot be stored as UTF-8."""
    _check_encodable(thread_id, bodies)
    msgs = [r.message for r in rows]
    # Message.text() of a plain string is the string, or None when it is empty
    texts = [(c.lower() or None) if type(c) is str else _lowered(m)
             for m, c in zip(msgs, [m.content for m in msgs], strict=True)]
    # one time for the rows of this append that bring none (read once: a clock per row
    # cost more than DuckDB's insert of them)
    given = [r.created_at for r in rows]
    now = clock() if None in given else None
    now_iso, now_us = (now.isoformat(), ts_micros(now)) if now is not None else ("", 0)
    vectors: list[np.ndarray | None] = [r.embedding for r in rows]
    return StagedMessages(
        thread_id, resource_id, list(seqs), list(bodies), texts,
        [now_iso if c is None else c.isoformat() for c in given],
        [now_us if c is None else ts_micros(c) for c in given],
        [r.run_id for r in rows],
        None if all(v is None for v in vectors) else vectors)


__all__ = ["MESSAGE_INSERT", "StagedMessages", "stage_messages"]
