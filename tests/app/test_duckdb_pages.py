"""The workbench over a real DuckDB file: opened read-only by path, the run inspector
from a URL, and a run written by another handle appearing after Refresh."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from app import services
from app.components import RUN_PAGE
from memory_core.storage.duckdb import DuckDBStorage
from memory_core.types import RunRecord
from tests.app.conftest import ENTRY, TIMEOUT
from tests.app.fixture_db import REFUND_TEXT, RESOURCE, RUN_1, SCRIPT_TEXT, T0, THREAD, tab_labels
from tests.app.markdown import each_lane


@pytest.fixture()
def db_file(duckdb_copy: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(services.ENV_VAR, str(duckdb_copy))
    return duckdb_copy


def _run(page: str | None = None, **query: str) -> AppTest:
    at = AppTest.from_file(str(ENTRY), default_timeout=TIMEOUT)
    at.query_params.update(query)
    at.run()
    if page:
        at.switch_page(page)
        at.query_params.update(query)
        at.run()
    return at


def test_run_inspector_on_a_duckdb_file(db_file: Path) -> None:
    at = _run(run=RUN_1)
    assert not at.exception and not at.error
    reader = DuckDBStorage(str(db_file), read_only=True)
    try:
        labels = tab_labels(reader, RUN_1)
    finally:
        reader.close()
    assert [t.label for t in at.tabs] == labels
    assert any(SCRIPT_TEXT in [t.value for t in drawn.text] for drawn in each_lane(at, RUN_1))
    assert isinstance(services.get_services(str(db_file)).storage, DuckDBStorage)
    assert services.get_services(str(db_file)).storage.read_only  # type: ignore[attr-defined]


def test_threads_on_a_duckdb_file_via_duckdb_url(db_file: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(services.ENV_VAR, f"duckdb://{db_file}")
    at = _run(thread=THREAD)
    assert not at.exception and not at.error
    assert [t.value for t in at.text][0] == REFUND_TEXT


def test_a_run_written_by_another_handle_appears_after_refresh(db_file: Path) -> None:
    at = _run(RUN_PAGE, run=RUN_1)
    before = list(next(s for s in at.selectbox if s.label == "Run").options)
    writer = DuckDBStorage(str(db_file))
    try:
        writer.runs.start_run(RunRecord(run_id="run-live", agent="support", thread_id=THREAD,
                                        resource_id=RESOURCE,
                                        started_at=T0 + timedelta(hours=9)))
    finally:
        writer.close()
    next(b for b in at.sidebar.button if b.label == "Refresh").click().run()
    after = list(next(s for s in at.selectbox if s.label == "Run").options)
    assert after[:-1] == before and after[-1].endswith(" · run-live (running)")
    assert not at.exception
