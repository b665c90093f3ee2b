"""The fixtures every conformance test builds on. ``adapter`` (the AdapterFactory under
test, one parameter per factory) is made by ``conformance_tests``; these build on it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_core.storage.base import Storage
from memory_core.testing.factory import AdapterFactory
from memory_core.testing.support import StepClock


@pytest.fixture
def storage(adapter: AdapterFactory, tmp_path: Path) -> Iterator[Storage]:
    s = adapter.open(tmp_path)
    try:
        yield s
    finally:
        s.close()


@pytest.fixture
def clock() -> StepClock:
    return StepClock()


@pytest.fixture
def clocked(adapter: AdapterFactory, tmp_path: Path, clock: StepClock) -> Iterator[Storage]:
    """A storage whose clock the test controls (for ordering rules)."""
    s = adapter.open(tmp_path, clock=clock)
    try:
        yield s
    finally:
        s.close()


@pytest.fixture
def two(storage: Storage) -> Storage:
    """Threads "a" and "b" (the embedding tests)."""
    storage.memory.create_thread("a")
    storage.memory.create_thread("b")
    return storage


@pytest.fixture
def t1(storage: Storage) -> Storage:
    """Thread "t1" of resource "u1" (the message tests)."""
    storage.memory.create_thread("t1", resource_id="u1")
    return storage


FIXTURES = {"storage": storage, "clock": clock, "clocked": clocked, "two": two, "t1": t1}
