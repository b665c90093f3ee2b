"""Every pick of a run or thread picker takes effect (a walk in Chromium: every second
change of the Run and Thread pickers was ignored on the run pages). An unkeyed
selectbox whose index follows the current run is another widget each time that index
moves, so the pick made on the widget before was dropped for its default."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from streamlit.testing.v1 import AppTest

from app.components import COMPARE_PAGE, RUN_PAGE, TIMELINE_PAGE, WHY_PAGE
from memory_core.storage.inmemory import InMemoryStorage
from tests.app.fixture_db import RUN_1, RUN_2, FixtureInfo

MakeApp = Callable[..., AppTest]
LOWER = "run-lower-bar"  # support-1's third run


def _select(at: AppTest, label: str, value: object) -> AppTest:
    [box] = [s for s in at.selectbox if s.label == label]
    box.set_value(value).run()
    assert not at.exception, at.exception  # (a failed run's page shows its error)
    return at


def _value(at: AppTest, label: str) -> object:
    [box] = [s for s in at.selectbox if s.label == label]
    return box.value


@pytest.mark.parametrize("page", [RUN_PAGE, WHY_PAGE])
def test_each_run_picked_in_turn_is_the_one_shown(
        populated: tuple[InMemoryStorage, FixtureInfo], app: MakeApp, page: str) -> None:
    at = app(page, run=RUN_1)
    for run_id in (RUN_2, LOWER, RUN_1, LOWER, RUN_2):
        _select(at, "Run", run_id)
        assert _value(at, "Run") == run_id
        assert at.query_params["run"] == run_id


def test_each_thread_picked_in_turn_is_the_one_shown(
        populated: tuple[InMemoryStorage, FixtureInfo], app: MakeApp) -> None:
    at = app(RUN_PAGE, run=RUN_1)
    for thread in ("faq-1", "notes-1", "support-2", "support-1", "faq-1"):
        _select(at, "Thread", thread)
        assert _value(at, "Thread") == thread
        run = at.query_params["run"]
        assert populated[0].runs.require_run(run).thread_id == thread


def test_compare_and_timeline_keep_each_pick(
        populated: tuple[InMemoryStorage, FixtureInfo], app: MakeApp) -> None:
    at = app(COMPARE_PAGE, a=RUN_1, b=RUN_2)
    for run_id in (LOWER, RUN_1, LOWER):
        _select(at, "Run B", run_id)
        assert _value(at, "Run B") == run_id
    at = app(TIMELINE_PAGE, run=RUN_1)
    for run_id in (RUN_2, LOWER, RUN_1):
        _select(at, "Marked run", run_id)
        assert _value(at, "Marked run") == run_id
