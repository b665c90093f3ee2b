from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_core.storage.base import Storage
from tests.conformance.support import StepClock
from tests.storage_factories import ADAPTERS, make_storage


@pytest.fixture(params=ADAPTERS)
def adapter(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def storage(adapter: str, tmp_path: Path) -> Iterator[Storage]:
    s = make_storage(adapter, tmp_path)
    try:
        yield s
    finally:
        s.close()


@pytest.fixture
def clock() -> StepClock:
    return StepClock()


@pytest.fixture
def clocked(adapter: str, tmp_path: Path, clock: StepClock) -> Iterator[Storage]:
    """A storage whose clock the test controls (for ordering rules)."""
    s = make_storage(adapter, tmp_path, clock=clock)
    try:
        yield s
    finally:
        s.close()
