"""Builders shared by the conformance tests: a controllable clock and append rows.

Nothing here knows which adapter it serves; it only speaks the ports' types."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from memory_core.types import AppendRow, Message

T0 = datetime(2024, 1, 1, tzinfo=UTC)


class StepClock:
    """Advances one second per call unless pinned with ``set``; aware UTC times."""

    def __init__(self, start: datetime = T0) -> None:
        self.now = start

    def set(self, seconds: float) -> None:
        self.now = T0 + timedelta(seconds=seconds)

    def __call__(self) -> datetime:
        t = self.now
        self.now = t + timedelta(seconds=1)
        return t


def row(text: str = "hi", *, role: str = "user", seq: int | None = None,
        run_id: str | None = None, embedding: Any = None,
        created_at: datetime | None = None, **metadata: Any) -> AppendRow:
    return AppendRow(message=Message(role=role, content=text, metadata=metadata),  # type: ignore[arg-type]
                     seq=seq, run_id=run_id, embedding=embedding, created_at=created_at)


def vec(*xs: float) -> np.ndarray:
    return np.asarray(xs, dtype=np.float32)
