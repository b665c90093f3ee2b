"""memwb with a real (OpenAI-compatible) model, through the fake provider: the demo
played against a server, and counterfactuals that re-ask the recorded model or the one
--model/--base-url choose."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_core.journal import load_run
from memory_core.runs.registry import recorded_identity
from memory_core.storage.duckdb import DuckDBStorage
from sample_data.build import SCENARIOS
from tests.fake_provider.server import FakeProvider
from tests.fake_provider.validation import validate_request
from tests.helpers import cf_records
from tests.test_cli import error_line, memwb, ok

ENV_VARS = ("MEMWB_OPENAI_BASE_URL", "MEMWB_OPENAI_MODEL", "MEMWB_OPENAI_API_KEY",
            "OPENAI_API_KEY", "MEMWB_OPENAI_TIMEOUT", "MEMWB_OPENAI_MAX_RETRIES", "MEMWB_DB")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ENV_VARS:
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(scope="module")
def server() -> Iterator[FakeProvider]:
    with FakeProvider(models=("fake-model",), strict_models=True, max_lifetime=600) as fp:
        yield fp


@pytest.fixture(scope="module")
def real_demo(server: FakeProvider, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The four demo stories played against the fake server (hashing embedder)."""
    path = tmp_path_factory.mktemp("real") / "real.duckdb"
    with pytest.MonkeyPatch.context() as mp:
        for var in ENV_VARS:
            mp.delenv(var, raising=False)
        mp.setenv("MEMWB_OPENAI_BASE_URL", server.base_url)
        mp.setenv("MEMWB_OPENAI_MODEL", "fake-model")
        ok(memwb("demo", "--db", str(path), "--embedder", "hashing", "--model", "openai"))
    return path


def question_runs(path: Path, kind: str = "openai") -> list[str]:
    """Runs answered by a model of ``kind`` that recalled something."""
    storage = DuckDBStorage(str(path), read_only=True)
    try:
        out = []
        for run in storage.runs.list_runs():
            data = load_run(storage, run.run_id)
            if recorded_identity(data.model_info).kind == kind and data.memctx and \
                    data.memctx.recalled:
                out.append(run.run_id)
        return sorted(out)
    finally:
        storage.close()


@pytest.mark.slow
def test_demo_with_model_openai_plays_every_story_against_the_server(
        real_demo: Path, server: FakeProvider) -> None:
    storage = DuckDBStorage(str(real_demo), read_only=True)
    try:
        runs = storage.runs.list_runs()
        assert runs and all(r.status == "completed" for r in runs)
        steps = [recorded_identity(s.model) for r in runs
                 for s in load_run(storage, r.run_id).steps]
        threads = {t.resource_id for t in storage.memory.list_threads()}
    finally:
        storage.close()
    # the server answered the questions, playback said the history
    assert {s.kind for s in steps} == {"openai", "scripted"}
    assert len(threads) == len(SCENARIOS)
    bodies = server.chat_bodies
    assert len(bodies) == sum(s.kind == "openai" for s in steps) >= 12
    assert {b["model"] for b in bodies} == {"fake-model"}
    for body in bodies:  # every prompt the demo composed was one a provider accepts
        validate_request(body)
    assert any("tools" in b for b in bodies)


def test_demo_model_errors_name_the_problem(tmp_path: Path) -> None:
    line = error_line(memwb("demo", "--db", str(tmp_path / "x.duckdb"), "--embedder",
                            "hashing", "--model", "openai"))
    assert "set MEMWB_OPENAI_MODEL" in line
    assert "unknown demo model 'gpt'" in error_line(
        memwb("demo", "--db", str(tmp_path / "x.duckdb"), "--model", "gpt"))
    assert not (tmp_path / "x.duckdb").exists()


def test_counterfactual_re_asks_the_recorded_server_only_when_named(
        real_demo: Path, server: FakeProvider, tmp_path: Path) -> None:
    db = tmp_path / "copy.duckdb"
    db.write_bytes(real_demo.read_bytes())
    run = question_runs(db)[0]
    asked = len(server.chat_bodies)
    line = error_line(memwb("counterfactual", run, "--db", str(db), "--subtract", "all"))
    assert line == (f"error: the run's model 'fake-model' was asked at {server.base_url}, a "
                    f"server named by this database: pass --base-url {server.base_url} (or "
                    "set MEMWB_OPENAI_BASE_URL) to ask it again; a database's recorded "
                    "server is never called unless you name it")
    assert len(server.chat_bodies) == asked
    out = ok(memwb("counterfactual", run, "--db", str(db), "--subtract", "all",
                   "--base-url", server.base_url))
    assert out.splitlines()[-1].startswith("verdict:")
    assert len(server.chat_bodies) > asked  # the named server was asked again


def test_counterfactual_with_the_offline_reader_or_another_server(
        real_demo: Path, server: FakeProvider, tmp_path: Path) -> None:
    db = tmp_path / "copy.duckdb"
    db.write_bytes(real_demo.read_bytes())
    run = question_runs(db)[0]
    asked = len(server.chat_bodies)
    ok(memwb("counterfactual", run, "--db", str(db), "--subtract", "all", "--model", "reader"))
    assert len(server.chat_bodies) == asked  # the reader runs here
    with FakeProvider(models=("other-model",), strict_models=True) as other:
        ok(memwb("counterfactual", run, "--db", str(db), "--subtract", "all",
                 "--model", "other-model", "--base-url", other.base_url))
        assert other.chat_bodies and {b["model"] for b in other.chat_bodies} == \
            {"other-model"}
    assert len(server.chat_bodies) == asked
    storage = DuckDBStorage(str(db), read_only=True)
    try:
        models = sorted(json.dumps(v["model"], sort_keys=True)
                        for _, v in cf_records(storage, run))
    finally:
        storage.close()
    assert len(models) == 2 and any("other-model" in m for m in models)


@pytest.mark.slow
def test_counterfactual_model_errors_are_one_line(real_demo: Path, server: FakeProvider,
                                                  tmp_path: Path) -> None:
    db = tmp_path / "copy.duckdb"
    db.write_bytes(real_demo.read_bytes())
    run = question_runs(db)[0]

    def cf(*args: str) -> str:
        return error_line(memwb("counterfactual", run, "--db", str(db), "--subtract", "all",
                                *args))

    # another name is not sent to the run's recorded server unless it is named
    assert "never called unless you name it" in cf("--model", "llama3.1")
    # the server the run recorded, named: it does not serve that name
    named = cf("--model", "llama3.1", "--base-url", server.base_url)
    assert "HTTP 404" in named and "`llama3.1` does not exist" in named
    assert "takes no base URL" in cf("--model", "reader", "--base-url", "http://127.0.0.1:1/v1")
    assert "'ftp://x'" in cf("--model", "m", "--base-url", "ftp://x")
    refused = cf("--model", "m", "--base-url", "http://127.0.0.1:9/v1")
    assert "connection refused by http://127.0.0.1:9/v1/chat/completions" in refused


def test_a_model_name_without_a_server_names_the_variable(real_demo: Path,
                                                          tmp_path: Path) -> None:
    db = tmp_path / "copy.duckdb"
    db.write_bytes(real_demo.read_bytes())
    # a history turn, said by the playback model: no server was ever recorded for it
    run = question_runs(db, kind="scripted")[0]
    line = error_line(memwb("counterfactual", run, "--db", str(db), "--lane", "recent",
                            "--model", "llama3.1"))
    assert line == ("error: the model 'llama3.1' is served by an OpenAI-compatible server, "
                    "and none is configured: set MEMWB_OPENAI_BASE_URL to the server's base "
                    "URL (e.g. http://127.0.0.1:11434/v1 for Ollama)")
    line = error_line(memwb("counterfactual", run, "--db", str(db), "--lane", "recent"))
    assert "'scripted-playback' is a scripted model that cannot be rebuilt" in line
