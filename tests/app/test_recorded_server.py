"""Issue 33.4: a database is data from elsewhere. A run that records a loopback
"attacker" server (the fake provider on 127.0.0.1, its requests counted) is re-asked —
by `memwb counterfactual`, the library's counterfactual and the workbench's page — only
when the user names that server (--base-url, MEMWB_OPENAI_BASE_URL, the page's
confirmation), and the API key goes only to the host it was configured for."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from app import services
from app.components import COUNTERFACTUAL_PAGE
from memory_core.analysis.counterfactual import attribution, counterfactual
from memory_core.embedding.hashing import HashingEmbedder
from memory_core.journal import load_run
from memory_core.runs.registry import RecordedServerError, model_for_run
from memory_core.storage.duckdb import DuckDBStorage
from sample_data.build import EPOCH, DemoClock, play_scenario
from sample_data.scenarios.home import HOME
from tests.fake_provider.server import FakeProvider
from tests.helpers import copy_run_with_model
from tests.test_cli import error_line, memwb, ok

MakeApp = Callable[..., AppTest]
SOURCE = "home-worktops"  # the offline reader answered it from 3 recalled messages
KEY = "sk-users-own-key"
ENV_VARS = ("MEMWB_OPENAI_BASE_URL", "MEMWB_OPENAI_MODEL", "MEMWB_OPENAI_API_KEY",
            "OPENAI_API_KEY", "MEMWB_OPENAI_MAX_RETRIES", "MEMWB_DB")
_names = itertools.count()


@pytest.fixture(scope="module")
def attacker() -> Iterator[FakeProvider]:
    with FakeProvider(max_lifetime=600) as fp:
        yield fp


@pytest.fixture(scope="module")
def db_file(tmp_path_factory: pytest.TempPathFactory, attacker: FakeProvider) -> Path:
    """A DuckDB database whose run ``evil`` says the attacker's server answered it."""
    path = tmp_path_factory.mktemp("evil") / "evil.duckdb"
    clock = DemoClock()
    storage = DuckDBStorage(str(path), clock=clock)
    try:
        play_scenario(storage, HOME, HashingEmbedder(64), clock, lambda _m: None, EPOCH)
        copy_run_with_model(storage, SOURCE, "evil", {
            "kind": "openai", "name": "fake-model", "base_url": attacker.base_url,
            "temperature": 0.0})
    finally:
        storage.close()
    return path


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("MEMWB_OPENAI_MAX_RETRIES", "0")


@pytest.fixture()
def db(db_file: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "copy.duckdb"
    copy.write_bytes(db_file.read_bytes())
    return copy


def chats(fp: FakeProvider, since: int) -> list[dict[str, str]]:
    """The headers of each chat request ``fp`` received after the first ``since``."""
    return [r.headers for r in fp.requests[since:] if r.path.endswith("/chat/completions")]


def test_the_cli_asks_the_recorded_server_only_when_named(
        db: Path, db_file: Path, attacker: FakeProvider, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    before = len(attacker.requests)
    for extra in ((), ("--model", "other-model")):
        line = error_line(memwb("counterfactual", "evil", "--db", str(db),
                                "--subtract", "all", *extra))
        assert f"pass --base-url {attacker.base_url} (or set MEMWB_OPENAI_BASE_URL)" in line
        assert "never called unless you name it" in line
    assert len(attacker.requests) == before  # nothing reached it
    # named on the command line: asked, with the key the user gave for that host
    ok(memwb("counterfactual", "evil", "--db", str(db), "--subtract", "all",
             "--base-url", attacker.base_url))
    asked = chats(attacker, before)
    assert asked and all(h.get("authorization") == f"Bearer {KEY}" for h in asked)
    # named by the environment: the same (a fresh copy: no journaled result to reuse)
    before = len(attacker.requests)
    fresh = tmp_path / "fresh.duckdb"
    fresh.write_bytes(db_file.read_bytes())
    monkeypatch.setenv("MEMWB_OPENAI_BASE_URL", attacker.base_url)
    ok(memwb("counterfactual", "evil", "--db", str(fresh), "--subtract", "all"))
    assert chats(attacker, before)


def test_the_library_asks_the_recorded_server_only_when_confirmed_and_keyless(
        db: Path, attacker: FakeProvider, monkeypatch: pytest.MonkeyPatch) -> None:
    storage = DuckDBStorage(str(db))
    try:
        before = len(attacker.requests)
        monkeypatch.setenv("MEMWB_OPENAI_API_KEY", KEY)
        with pytest.raises(RecordedServerError) as err:
            counterfactual(storage, "evil", subtract="all")
        assert err.value.server == attacker.base_url
        with pytest.raises(RecordedServerError):
            attribution(storage, "evil")
        assert len(attacker.requests) == before
        with FakeProvider() as mine:  # the server the key was configured for
            monkeypatch.setenv("MEMWB_OPENAI_BASE_URL", mine.base_url)
            counterfactual(storage, "evil", subtract="all")
            assert len(attacker.requests) == before
            assert chats(mine, 0) and all(h.get("authorization") == f"Bearer {KEY}"
                                          for h in chats(mine, 0))
            # confirmed: the recorded server, but the key stays with its own host
            info = load_run(storage, "evil").model_info
            model = model_for_run(info, use_recorded_server=True)
            asked_mine = len(mine.requests)
            res = counterfactual(storage, "evil", subtract="all", model=model, reuse=False)
            assert len(mine.requests) == asked_mine
        asked = chats(attacker, before)
        assert asked and res.new_answers
        assert all("authorization" not in h for h in asked)
        assert KEY not in repr([r.headers for r in attacker.requests[before:]])
    finally:
        storage.close()


@pytest.fixture()
def page_db(db: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv(services.ENV_VAR, str(db))
    yield str(db)


def _button(at: AppTest, label: str) -> Any:
    return next(b for b in at.button if b.label == label)


def test_the_page_asks_the_recorded_server_only_once_confirmed_and_keyless(
        page_db: str, attacker: FakeProvider, app: MakeApp,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMWB_OPENAI_API_KEY", KEY)
    before = len(attacker.requests)
    at = app(COUNTERFACTUAL_PAGE, run="evil")
    assert not at.exception
    (box,) = at.checkbox
    host = attacker.base_url.split("/")[2]
    assert box.label == f"Ask `{host}` again — this database names it"
    assert not box.value
    for label in ("Run counterfactual", "Run attribution"):
        assert _button(at, label).disabled
        assert "tick the box" in (_button(at, label).help or "")
    at.radio[0].set_value("Subtract all recalled").run()
    assert len(attacker.requests) == before
    # ticked: the recorded server is asked, without the key configured for no host
    at.checkbox[0].check().run()
    assert any("without your API key" in c.value for c in at.caption)
    _button(at, "Run counterfactual").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any(m.value.startswith("## Verdict:") for m in at.markdown)
    asked = chats(attacker, before)
    assert asked and all("authorization" not in h for h in asked)
