"""The run inspector's "Recorded call" on imported runs (issue 34 point 4): the model,
the recorded usage beside our estimate, the finish reason, the tools offered, where the
call was sent and the model it asked for when another answered."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from streamlit.testing.v1 import AppTest

from app.components import RUN_PAGE
from memory_core.importers import import_file, import_text
from memory_core.storage.inmemory import InMemoryStorage

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "imports" / "real"
COHERE_CONNECTORS = "langchain-cohere-v1-test_connectors.yaml"


def test_the_run_inspector_shows_the_recorded_call(empty_db: InMemoryStorage,
                                                   app: Callable[..., AppTest]) -> None:
    rid = import_file(empty_db, REAL / COHERE_CONNECTORS).runs_created[0]
    # (imported before the first page run: the pages cache what they read)
    bare = import_file(empty_db, REAL / "langchain-cohere-v1-test_streaming_tool_call.yaml")
    at = app(RUN_PAGE, run=rid)
    assert not at.exception and not at.error
    assert any(m.value == "#### Recorded call" for m in at.markdown)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Input tokens (recorded)"] == "19,783"
    assert metrics["Output tokens (recorded)"] == "7"
    # (escaped Markdown: a URL is set in code so that it is shown, not linked)
    captions = [c.value.replace("\\", "").replace("`", "") for c in at.caption]
    assert "our estimate: 12 tokens (chars/4)" in captions
    assert ("Finish reason: COMPLETE · tools offered: none · sent to: https://api.cohere.ai"
            ' · sent with: {"stream": false}' in captions)
    at = app(RUN_PAGE, run=bare.runs_created[0])
    assert not at.exception
    assert ("Finish reason: COMPLETE · tools offered: Person · sent to: "
            'https://api.cohere.com · sent with: {"stream": true}') in [c.value.replace("\\", "").replace("`", "")
                                     for c in at.caption]


def test_the_run_inspector_says_how_the_call_was_sent(
        empty_db: InMemoryStorage, app: Callable[..., AppTest]) -> None:
    # mirascope's Responses API cassette: sent as a stream
    rid = import_file(empty_db, REAL / "mirascope-test_max_tokens_openai_gpt_4o_responses_"
                                       "stream.yaml").runs_created[0]
    at = app(RUN_PAGE, run=rid)
    assert not at.exception and not at.error
    captions = [c.value.replace("\\", "").replace("`", "") for c in at.caption]
    assert any(c.endswith(' · sent with: {"stream": true}') for c in captions), captions


def test_the_run_inspector_names_the_model_asked_for_beside_the_one_that_answered(
        empty_db: InMemoryStorage, app: Callable[..., AppTest]) -> None:
    # simonw/llm's cassette: gpt-4.1-mini asked of api.openai.com, answered by kimi-k2
    rid = import_file(empty_db, REAL / "llm-test_tools_streaming_variant_a.yaml"
                      ).runs_created[0]
    at = app(RUN_PAGE, run=rid)
    assert not at.exception and not at.error
    shown = [m.value for m in at.markdown] + [t.value for t in at.text]
    assert any("moonshotai/kimi-k2, asked for gpt-4.1-mini" in v for v in shown), shown


def test_the_run_inspector_says_the_reasoning_within_the_output(
        empty_db: InMemoryStorage, app: Callable[..., AppTest]) -> None:
    # pydantic-ai's Gemini cassette: 1,001 of the output tokens were thoughts
    rid = import_file(empty_db, REAL / "pydanticai-google-test_google_model_thinking_part.yaml"
                      ).runs_created[0]
    at = app(RUN_PAGE, run=rid)
    assert not at.exception and not at.error
    assert "of them 1,001 reasoning" in [c.value.replace("\\", "") for c in at.caption]


def test_the_run_inspector_says_a_predicted_outputs_tokens_within_the_output(
        empty_db: InMemoryStorage, app: Callable[..., AppTest]) -> None:
    usage = {"prompt_tokens": 300, "completion_tokens": 90, "completion_tokens_details": {
        "accepted_prediction_tokens": 60, "rejected_prediction_tokens": 18}}
    line = json.dumps({"request": {"model": "gpt-4o", "prediction": {
        "type": "content", "content": "def f(): pass"}, "messages": [
        {"role": "user", "content": "Rename f to g."}]}, "response": {
        "model": "gpt-4o", "usage": usage, "choices": [{"message": {
            "role": "assistant", "content": "def g(): pass"}, "finish_reason": "stop"}]}})
    rid = import_text(empty_db, line, name="calls.jsonl").runs_created[0]
    at = app(RUN_PAGE, run=rid)
    assert not at.exception and not at.error
    assert "of them 60 from the prediction, 18 for the prediction's unused part" in [
        c.value.replace("\\", "") for c in at.caption]


def test_a_failed_call_shows_the_model_it_asked_for_as_such(
        empty_db: InMemoryStorage, app: Callable[..., AppTest]) -> None:
    # a 404: no answer named the model that answered; the one shown is the one asked for
    rid = import_file(empty_db, REAL / "otelv2-test_chat_completion_404.yaml").runs_created[0]
    answered = import_file(empty_db, REAL / COHERE_CONNECTORS).runs_created[0]
    at = app(RUN_PAGE, run=rid)
    assert not at.exception
    captions = [c.value for c in at.caption]
    assert "Model asked for" in captions and "Model" not in captions, captions
    at = app(RUN_PAGE, run=answered)
    assert "Model" in [c.value for c in at.caption]


def test_the_run_inspector_says_parameters_a_rebuilt_prompt_lacks_are_unknown(
        empty_db: InMemoryStorage, app: Callable[..., AppTest]) -> None:
    # Roo Code's task history keeps the messages, not what they were sent with; the
    # failed call's cassette (its error shown) keeps a request that sent none
    roo = import_file(empty_db, REAL / "roo-03deadab-api_conversation_history.json")
    bare = import_file(empty_db, REAL / "otelv2-test_chat_completion_404.yaml")
    texts = {}
    for rid in (roo.runs_created[0], bare.runs_created[0]):
        at = app(RUN_PAGE, run=rid)
        assert not at.exception and (rid == bare.runs_created[0] or not at.error)
        texts[rid] = [t.value for t in at.text]
    assert "(not in the recording)" in texts[roo.runs_created[0]]
    assert "(none recorded)" in texts[bare.runs_created[0]]
    assert "(not in the recording)" not in texts[bare.runs_created[0]]
