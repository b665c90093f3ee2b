"""A tool result its tool reported as an error (``is_error``: Anthropic's tool_result,
LangChain's ToolMessage with status "error") — which the model was told — is said as
one by ``memwb inspect`` and the run inspector; it was stored but shown like any other
result (an outside trial on anthropic-sdk-python's tool-runner snapshot)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest
from typer.testing import CliRunner

from app.components import RUN_PAGE
from memory_core.analysis.views import run_view
from memory_core.cli import app as cli
from memory_core.importers import import_text
from memory_core.storage.duckdb import DuckDBStorage
from memory_core.storage.inmemory import InMemoryStorage
from tests.app.conftest import served

MakeApp = Callable[..., AppTest]
CALL = {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1",
                                          "name": "get_weather", "input": {"city": "SF"}}]}


def _record(is_error: bool) -> str:
    """A request whose history holds the result (in the recent lane, the one the run
    inspector opens on), then asks again."""
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": is_error,
              "content": "RuntimeError('Unexpected error, try again')" if is_error
              else "Sunny."}
    return json.dumps({"request": {"model": "claude-haiku-4-5", "max_tokens": 64, "messages": [
        {"role": "user", "content": "Weather in SF?"}, CALL,
        {"role": "user", "content": [result]},
        {"role": "assistant", "content": "The weather tool answered."},
        {"role": "user", "content": "So?"}]}, "response": {
        "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
        "content": [{"type": "text", "text": "Sorry, the weather tool failed."}],
        "stop_reason": "end_turn", "usage": {"input_tokens": 9, "output_tokens": 5}}})


def _results(storage: InMemoryStorage | DuckDBStorage, run: str) -> list[tuple[str, bool]]:
    return [(it.role, it.error) for lane in run_view(storage, run).lanes
            for it in lane.items if it.role == "tool"]


def test_an_error_result_is_said_one_where_the_run_is_shown(tmp_path: Path) -> None:
    db = tmp_path / "e.duckdb"
    with DuckDBStorage(db) as s:
        failed = import_text(s, _record(True), name="e.jsonl").runs_created[0]
        fine = import_text(s, _record(False), name="f.jsonl").runs_created[0]
        assert _results(s, failed) == [("tool", True)]
        assert _results(s, fine) == [("tool", False)]
    out = CliRunner().invoke(cli, ["inspect", failed, "--db", str(db)])
    assert out.exit_code == 0 and "tool (error)" in out.output, out.output
    out = CliRunner().invoke(cli, ["inspect", fine, "--db", str(db)])
    assert "(error)" not in out.output, out.output


@pytest.fixture()
def failed_run(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    storage = InMemoryStorage()
    run = import_text(storage, _record(True), name="e.jsonl").runs_created[0]
    yield from (run for _ in served(storage, monkeypatch))


def test_the_run_inspector_says_an_error_result(failed_run: str, app: MakeApp) -> None:
    at = app(RUN_PAGE, run=failed_run)
    assert not at.exception and not at.error
    captions = [c.value for c in at.caption]
    assert any("an error result" in c for c in captions), "|".join(captions)
