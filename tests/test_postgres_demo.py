"""Demo runs recorded on PostgreSQL: they replay byte-identically, their provenance is
the same as on the reference adapter, and the workbench shows them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from app import services
from memory_core.runs.replay import replay
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.storage.postgres import PostgresStorage
from sample_data.build import DemoClock, build_into
from tests.pg_server import require_postgres_dsn, schema_for

pytestmark = pytest.mark.postgres
ENTRY = Path(__file__).resolve().parents[1] / "app" / "streamlit_app.py"


@pytest.fixture(scope="module")
def pg_demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PostgresStorage, str]]:
    dsn = require_postgres_dsn()
    schema = schema_for(dsn, tmp_path_factory.mktemp("pgdemo"))
    clock = DemoClock()
    storage = PostgresStorage(dsn, schema=schema, clock=clock)
    build_into(storage, clock, embedder="hashing", progress=lambda _m: None, only=["support"])
    yield storage, f"{dsn}{'&' if '?' in dsn else '?'}schema={schema}"
    storage.close()


def test_runs_recorded_on_postgres_replay_byte_identically(
        pg_demo: tuple[PostgresStorage, str]) -> None:
    storage, _ = pg_demo
    runs = storage.runs.list_runs()
    assert len(runs) >= 40
    for r in runs:
        report = replay(storage, r.run_id)
        assert report.output == storage.runs.get(f"{r.run_id}:output")


def test_provenance_matches_the_reference_adapter(pg_demo: tuple[PostgresStorage, str]) -> None:
    storage, _ = pg_demo
    clock = DemoClock()
    ref = InMemoryStorage(clock=clock)
    build_into(ref, clock, embedder="hashing", progress=lambda _m: None, only=["support"])
    for rid in ("support-3-forgot", "support-3-fixed", "support-1-t05"):
        assert storage.runs.get(f"{rid}:memctx") == ref.runs.get(f"{rid}:memctx")
        assert storage.runs.get(f"{rid}:prompt") == ref.runs.get(f"{rid}:prompt")


def test_the_workbench_shows_a_postgres_run(pg_demo: tuple[PostgresStorage, str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    _, url = pg_demo
    monkeypatch.setenv(services.ENV_VAR, url)
    at = AppTest.from_file(str(ENTRY), default_timeout=60)
    at.query_params.update({"run": "support-3-forgot"})
    at.run()
    at.switch_page("app_pages/run_inspector.py")
    at.query_params.update({"run": "support-3-forgot"})
    at.run()
    assert not at.exception and not at.error
    labels = [t.label for t in at.tabs]
    assert any(label.startswith("Recalled") for label in labels)
    memctx = pg_demo[0].runs.get("support-3-forgot:memctx")
    assert f"Recent ({memctx['recent_count'] + 0})" in labels or any(
        label.startswith("Recent") for label in labels)
