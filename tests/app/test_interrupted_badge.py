"""The run inspector on a run a crash left unfinished: an "interrupted" badge, never an
error (verify reports such a run as interrupted, issue 33 point 9)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from streamlit.testing.v1 import AppTest

from app.components import RUN_PAGE
from memory_core.journal.keys import RunKeys
from memory_core.journal.seal import verify_run
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import RunRecord
from tests.app.fixture_db import RESOURCE, SIBLING, T0, FixtureInfo


def test_an_interrupted_run_shows_its_badge(
        populated: tuple[InMemoryStorage, FixtureInfo], app: Callable[..., AppTest]) -> None:
    storage, _ = populated
    storage.runs.start_run(RunRecord(run_id="cut", agent="support", thread_id=SIBLING,
                                     resource_id=RESOURCE, started_at=T0 + timedelta(days=1)))
    storage.runs.put_if_absent(RunKeys("cut").input, {
        "v": 1, "messages": [{"role": "user", "content": "hello"}], "sealed": True})
    assert verify_run(storage, "cut").status == "interrupted"
    at = app(RUN_PAGE, run="cut")
    assert not at.exception
    assert any("interrupted: never finished" in m.value for m in at.markdown)
    assert not at.error
