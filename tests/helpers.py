"""Small helpers shared by the runner, replay, observational and composition tests:
a one-second-per-read clock and a journal read that must find its key."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def jget(s: Any, key: str) -> Any:
    """A journal value that must exist."""
    value = s.runs.get(key)
    assert value is not None, key
    return value


class Tick:
    """A clock that advances one second per read, starting one second after ``start``."""

    def __init__(self, start: datetime = T0) -> None:
        self.t = start

    def __call__(self) -> datetime:
        self.t += timedelta(seconds=1)
        return self.t
