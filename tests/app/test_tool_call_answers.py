"""A run whose answer is a tool call — an imported request the model answered with a
call, a Runner run stopped at max steps — shows that call as its answer on every page
("(no answer recorded)" before), literally; a run with no answer still says so."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import pytest
from streamlit.testing.v1 import AppTest

from app.components import COMPARE_PAGE, RUN_PAGE
from memory_core.composition.memory import AgentMemory
from memory_core.importers import import_text
from memory_core.models.base import ModelResponse, Tool, ToolSpec
from memory_core.models.scripted import ScriptedModel
from memory_core.runs.runner import Agent, Runner
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import ToolCallPart
from tests.app.conftest import served

MakeApp = Callable[..., AppTest]
NO_ANSWER = "(no answer recorded)"
# arguments that Markdown would mangle: shown literally, they stay as recorded
IMPORTED_CALL = '→ lookup_order({"note":"<b>rush</b>","order_id":"*1042*"})'
MAX_STEPS_CALL = '→ search({"q":"_refund_ policy"})'


def _build(storage: InMemoryStorage) -> dict[str, str]:
    call = {"id": "call_1", "type": "function", "function": {
        "name": "lookup_order", "arguments": json.dumps(
            {"order_id": "*1042*", "note": "<b>rush</b>"})}}
    lines = [{"messages": [{"role": "user", "content": "Refund order 1042?"}],
              "response": {"model": "gpt-4o", "choices": [{"message": {
                  "role": "assistant", "content": None, "tool_calls": [call]}}]}},
             {"messages": [{"role": "user", "content": "Are you there?"}],
              "error": {"message": "rate limited"}}]
    imported, failed = import_text(storage, "".join(json.dumps(x) + "\n" for x in lines),
                                   name="calls.jsonl").runs_created
    search = Tool(ToolSpec("search", "search the docs"), lambda args: "nothing found")
    model = ScriptedModel([ModelResponse(tool_calls=[ToolCallPart(
        id="c1", name="search", args={"q": "_refund_ policy"})])])
    agent = Agent("helper", "Help.", model, tools=[search], max_steps=1)
    Runner(storage, {"helper": agent}, memory=AgentMemory(storage)).run(
        "helper", run_id="max-steps", thread_id="t-max", prompt="What is the policy?")
    return {"imported": imported, "failed": failed, "max_steps": "max-steps"}


@pytest.fixture()
def runs(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    storage = InMemoryStorage()
    ids = _build(storage)
    yield from (ids for _ in served(storage, monkeypatch))


def _texts(at: AppTest) -> list[str]:
    return [t.value for t in at.text]


@pytest.mark.parametrize(("run", "shown"), [("imported", IMPORTED_CALL),
                                            ("max_steps", MAX_STEPS_CALL)])
def test_the_run_inspector_shows_the_call_a_run_answered_with(
        runs: dict[str, str], app: MakeApp, run: str, shown: str) -> None:
    at = app(RUN_PAGE, run=runs[run])
    assert not at.exception and not at.error
    texts = _texts(at)
    assert shown in texts, "|".join(texts)  # st.text: the arguments exactly as recorded
    assert NO_ANSWER not in texts


def test_the_run_inspector_says_no_answer_only_when_there_is_none(
        runs: dict[str, str], app: MakeApp) -> None:
    at = app(RUN_PAGE, run=runs["failed"])
    assert not at.exception
    assert NO_ANSWER in _texts(at)


def test_compare_shows_each_runs_call(runs: dict[str, str], app: MakeApp) -> None:
    at = app(COMPARE_PAGE, a=runs["imported"], b=runs["max_steps"])
    assert not at.exception and not at.error
    texts = _texts(at)
    assert IMPORTED_CALL in texts and MAX_STEPS_CALL in texts
    assert NO_ANSWER not in texts
