"""AppTest fixtures: a populated and an empty database handed to the workbench as
memory://<name> (a DuckDB file once the adapter is there), chosen through MEMWB_DB."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from app import services
from memory_core.storage.inmemory import InMemoryStorage
from tests.app.fixture_db import FixtureInfo, build_fixture, fixed_clock

ENTRY = Path(__file__).resolve().parents[2] / "app" / "streamlit_app.py"
TIMEOUT = 30
_names = itertools.count()


def register(storage: InMemoryStorage) -> str:
    # a fresh name per test: cached reads are keyed by the database URL
    return services.register_storage(f"apptest{next(_names)}", storage)


@pytest.fixture()
def populated(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[InMemoryStorage, FixtureInfo]]:
    storage = InMemoryStorage(clock=fixed_clock())
    info = build_fixture(storage, long_count=120)
    url = register(storage)
    monkeypatch.setenv(services.ENV_VAR, url)
    yield storage, info
    services.unregister_storage(url.removeprefix(services.MEMORY_SCHEME))


@pytest.fixture()
def empty_db(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemoryStorage]:
    storage = InMemoryStorage()
    url = register(storage)
    monkeypatch.setenv(services.ENV_VAR, url)
    yield storage
    services.unregister_storage(url.removeprefix(services.MEMORY_SCHEME))


@pytest.fixture()
def app() -> Callable[..., AppTest]:
    """An AppTest of the entry script, optionally with URL query params and a page."""

    def make(page: str | None = None, **query: str) -> AppTest:
        at = AppTest.from_file(str(ENTRY), default_timeout=TIMEOUT)
        at.query_params.update(query)
        at.run()
        if page is not None:
            at.switch_page(page)
            at.query_params.update(query)
            at.run()
        return at

    return make
