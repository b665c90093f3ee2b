"""AppTest fixtures: a populated and an empty database handed to the workbench as
memory://<name>, chosen through MEMWB_DB, and the populated one as a DuckDB file.

The populated database is tests/app/fixture_db.py, built by the real Runner. In memory
it is rebuilt per test (it takes well under a second and tests write to it); the DuckDB
file is built once per session and copied for each test."""

from __future__ import annotations

import itertools
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from app import services
from memory_core.storage.inmemory import InMemoryStorage
from tests.app.fixture_db import FixtureInfo, build_duckdb_file, build_fixture, fixed_clock

ENTRY = Path(__file__).resolve().parents[2] / "app" / "streamlit_app.py"
TIMEOUT = 30
_names = itertools.count()


def register(storage: InMemoryStorage) -> str:
    # a fresh name per test: cached reads are keyed by the database URL
    return services.register_storage(f"apptest{next(_names)}", storage)


def served(storage: InMemoryStorage,
           monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemoryStorage]:
    """Serve ``storage`` to the app for one test (``yield from`` it in a fixture)."""
    url = register(storage)
    monkeypatch.setenv(services.ENV_VAR, url)
    yield storage
    services.unregister_storage(url.removeprefix(services.MEMORY_SCHEME))


@pytest.fixture()
def populated(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[InMemoryStorage, FixtureInfo]]:
    clock = fixed_clock()
    storage = InMemoryStorage(clock=clock)
    info = build_fixture(storage, clock=clock)
    url = register(storage)
    monkeypatch.setenv(services.ENV_VAR, url)
    yield storage, info
    services.unregister_storage(url.removeprefix(services.MEMORY_SCHEME))


@pytest.fixture(scope="session")
def built_duckdb_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("fixture-db") / "fixture.duckdb"
    build_duckdb_file(str(path))
    return path


@pytest.fixture()
def duckdb_copy(built_duckdb_file: Path, tmp_path: Path) -> Path:
    """A private copy of the session's fixture DuckDB file (tests may write to it)."""
    path = tmp_path / "fixture.duckdb"
    shutil.copyfile(built_duckdb_file, path)
    return path


@pytest.fixture()
def empty_db(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemoryStorage]:
    storage = InMemoryStorage()
    url = register(storage)
    monkeypatch.setenv(services.ENV_VAR, url)
    yield storage
    services.unregister_storage(url.removeprefix(services.MEMORY_SCHEME))


@pytest.fixture(scope="module")
def demo_storage() -> InMemoryStorage:
    """The demo scenarios (sample_data), built once per module with the hashing embedder."""
    from sample_data.build import DemoClock, build_into

    clock = DemoClock()
    storage = InMemoryStorage(clock=clock)
    build_into(storage, clock, embedder="hashing", progress=lambda _m: None)
    return storage


@pytest.fixture()
def demo(demo_storage: InMemoryStorage, monkeypatch: pytest.MonkeyPatch,
         ) -> Iterator[InMemoryStorage]:
    """The module's demo database served through MEMWB_DB (a fresh name per test)."""
    url = register(demo_storage)
    monkeypatch.setenv(services.ENV_VAR, url)
    yield demo_storage
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


@pytest.fixture()
def spinner_log(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The statuses (st.spinner texts) shown, in order; no embedding model counts as
    loaded in this process."""
    shown: list[str] = []

    @contextmanager
    def spinner(text: str) -> Iterator[None]:
        shown.append(text)
        yield

    monkeypatch.setattr(st, "spinner", spinner)
    monkeypatch.setattr(services, "_embedders_loaded", set())
    yield shown
