"""The Start page says when the database in use is not the demo one, beside the demo's
stories (a walk: on the 5,000-run database each story ended at "needs the demo
database" only after a click)."""

from __future__ import annotations

from collections.abc import Callable

from streamlit.testing.v1 import AppTest

from memory_core.storage.inmemory import InMemoryStorage
from tests.app.fixture_db import FixtureInfo

MakeApp = Callable[..., AppTest]
NOT_DEMO = ("The database in use is not the demo one: a story opens on the demo database "
            "when this workbench serves it, and otherwise says how to build it.")


def test_another_database_is_said_not_to_be_the_demo(
        populated: tuple[InMemoryStorage, FixtureInfo], app: MakeApp) -> None:
    at = app()
    assert not at.exception
    assert NOT_DEMO in [c.value for c in at.caption]


def test_the_demo_database_is_not(demo: InMemoryStorage, app: MakeApp) -> None:
    at = app()
    assert not at.exception
    assert NOT_DEMO not in [c.value for c in at.caption]
