"""The model a request asked for and where it was sent, kept beside the model that
answered: a router serving another model (simonw/llm's cassette: ``gpt-4.1-mini``
asked of api.openai.com, ``moonshotai/kimi-k2`` answered), an alias resolved
(``claude-3-5-haiku-latest``), a Bedrock model id the body names otherwise. The import
record's ``extra`` holds ``requested_model`` (only when another model answered) and
``endpoint`` (the URL's origin, never its user or password); ``memwb inspect`` prints
them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memory_core.cli import app as cli
from memory_core.importers import import_file, import_text
from memory_core.importers.registry import origin
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.storage.sqlite import SQLiteStorage

REAL = Path(__file__).parent / "fixtures" / "imports" / "real"
ROUTED = "llm-test_tools_streaming_variant_a.yaml"  # simonw/llm @ f3f4f29, Apache-2.0


def _extras(s: InMemoryStorage, runs: list[str]) -> list[dict[str, Any]]:
    out = []
    for rid in runs:
        record = s.runs.get(f"{rid}:import")
        assert isinstance(record, dict)
        out.append(record["extra"])
    return out


def _inspect(tmp_path: Path, name: str) -> list[str]:
    db = tmp_path / "runs.db"
    s = SQLiteStorage(str(db))
    rid = import_file(s, REAL / name).runs_created[0]
    s.close()
    result = CliRunner().invoke(cli, ["inspect", rid, "--db", f"sqlite:///{db}"])
    assert result.exit_code == 0, result.output
    return result.output.splitlines()


def test_a_router_s_choice_is_shown_beside_the_model_asked_for(tmp_path: Path) -> None:
    out = _inspect(tmp_path, ROUTED)
    assert "recorded model: moonshotai/kimi-k2, asked for gpt-4.1-mini" in out, out
    assert "sent to: https://api.openai.com" in out


def test_an_alias_resolved_keeps_the_name_asked_for() -> None:
    s = InMemoryStorage()
    report = import_file(s, REAL / "openllmetry-test_anthropic_image_with_history.yaml")
    extra = _extras(s, report.runs_created)[0]
    assert extra["requested_model"] == "claude-3-5-haiku-latest"
    assert extra["endpoint"] == "https://api.anthropic.com"
    assert s.runs.get_run(report.runs_created[0]).agent == "claude-3-5-haiku-20241022"


def test_an_id_that_only_wraps_the_model_that_answered_is_not_another_model() -> None:
    # the URL's Bedrock model id; the body names the model without its prefix and version
    s = InMemoryStorage()
    report = import_file(
        s, REAL / "openllmetry-bedrock-invoke-test_anthropic_3_completion_streaming.yaml")
    (extra,) = _extras(s, report.runs_created)
    assert "requested_model" not in extra  # kept as the id it was asked as
    assert extra["requested_id"] == "anthropic.claude-3-sonnet-20240229-v1:0"
    assert extra["endpoint"] == "https://bedrock-runtime.us-east-1.amazonaws.com"
    assert s.runs.get_run(report.runs_created[0]).agent == "claude-3-sonnet-20240229"


@pytest.mark.parametrize(("asked", "answered", "another"), [
    ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5-20250929", False),
    ("cohere.command-text-v14", "command-text-v14", False),
    ("models/gemini-2.0-flash", "gemini-2.0-flash", False),  # Go's genai client
    ("gpt-4o", "gpt-4o", False),
    ("gpt-4o", None, False),  # the response names none
    ("gpt-4", "gpt-4-0613", True),  # an alias resolved
    ("gpt-4o-mini", "gpt-4o", True),  # a prefix of the name is another model
    ("gemini-flash-latest", "gemini-3.6-flash", True),
    ("gpt-4.1-mini", "moonshotai/kimi-k2", True),  # a router's choice
])
def test_another_model(asked: str, answered: str | None, another: bool) -> None:
    line = _record(asked, answered) if answered else json.dumps({"request": {
        "model": asked, "messages": [{"role": "user", "content": "hello"}]},
        "response": {"choices": [{"message": {"role": "assistant", "content": "hi"}}]}})
    s = InMemoryStorage()
    (extra,) = _extras(s, import_text(s, line, name="calls.jsonl").runs_created)
    assert ("requested_model" in extra) is another


def _record(model: str, answered: str, **extra: Any) -> str:
    return json.dumps({**extra, "request": {
        "model": model, "messages": [{"role": "user", "content": "hello"}]},
        "response": {"model": answered, "choices": [{"message": {
            "role": "assistant", "content": "hi"}, "finish_reason": "stop"}]}}) + "\n"


def test_a_model_answering_under_the_name_asked_for_is_not_repeated(tmp_path: Path) -> None:
    s = InMemoryStorage()
    report = import_text(s, _record("gpt-4o-mini", "gpt-4o-mini"), name="calls.jsonl")
    (extra,) = _extras(s, report.runs_created)
    assert "requested_model" not in extra
    assert "endpoint" not in extra  # a JSON lines log names no URL: none is invented
    db = tmp_path / "plain.db"
    sq = SQLiteStorage(str(db))
    rid = import_text(sq, _record("gpt-4o-mini", "gpt-4o-mini"), name="calls.jsonl"
                      ).runs_created[0]
    sq.close()
    out = CliRunner().invoke(cli, ["inspect", rid, "--db", f"sqlite:///{db}"]).output
    assert "recorded model: gpt-4o-mini" in out.splitlines()
    assert "sent to: not in the recording" in out.splitlines()


def test_a_url_s_password_is_never_kept() -> None:
    s = InMemoryStorage()
    line = _record("gpt-4o", "gpt-4o-2024-08-06",
                   url="https://alice:s3cret@llm.internal:8443/v1/chat/completions?k=v")
    report = import_text(s, line, name="calls.jsonl")
    (extra,) = _extras(s, report.runs_created)
    assert extra["endpoint"] == "https://llm.internal:8443"
    assert extra["requested_model"] == "gpt-4o"
    assert "s3cret" not in json.dumps(extra) and "alice" not in json.dumps(extra)


def test_an_anthropic_batch_gets_no_endpoint_it_did_not_record() -> None:
    lines = [json.dumps({"custom_id": "a", "params": {
        "model": "claude-3-5-haiku-latest", "max_tokens": 10,
        "messages": [{"role": "user", "content": "hi"}]}}),
        json.dumps({"custom_id": "a", "result": {"type": "succeeded", "message": {
            "id": "msg_1", "type": "message", "role": "assistant",
            "model": "claude-3-5-haiku-20241022", "stop_reason": "end_turn",
            "content": [{"type": "text", "text": "hello"}],
            "usage": {"input_tokens": 3, "output_tokens": 1}}}})]
    s = InMemoryStorage()
    report = import_text(s, "\n".join(lines) + "\n", name="batch.jsonl")
    (extra,) = _extras(s, report.runs_created)
    assert extra["requested_model"] == "claude-3-5-haiku-latest"
    assert "endpoint" not in extra


@pytest.mark.parametrize(("url", "want"), [
    ("https://api.openai.com/v1/chat/completions", "https://api.openai.com"),
    ("http://127.0.0.1:11434/api/chat", "http://127.0.0.1:11434"),
    ("http://[::1]:8080/v1/messages", "http://[::1]:8080"),
    ("https://u:p@host.example/v1", "https://host.example"),
    ("/v1/chat/completions", None),
    ("https://host.example:99999/v1", None),  # a port out of range: malformed
    # the scheme's own port is not said (nock writes its scopes "…:443")
    ("https://bedrock-runtime.us-east-1.amazonaws.com:443/model/x/converse",
     "https://bedrock-runtime.us-east-1.amazonaws.com"),
    ("http://host.example:80/v1", "http://host.example"),
    ("http://host.example:443/v1", "http://host.example:443"),
    ("not a url", None),
])
def test_origin(url: str, want: str | None) -> None:
    assert origin(url) == want


def test_the_id_a_model_was_asked_as_is_shown(tmp_path: Path) -> None:
    out = _inspect(tmp_path,
                   "openllmetry-bedrock-invoke-test_anthropic_3_completion_streaming.yaml")
    assert ("recorded model: claude-3-sonnet-20240229 (bedrock API), asked as "
            "anthropic.claude-3-sonnet-20240229-v1:0") in out, out


def test_how_a_call_was_sent_is_shown_as_recorded(tmp_path: Path) -> None:
    # mirascope's Responses API cassette: streamed; Cohere's, not (``stream: false``,
    # as recorded); OpenLLMetry's Anthropic one sends no such field
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    out = _inspect(tmp_path / "a", "mirascope-test_max_tokens_openai_gpt_4o_responses_"
                                   "stream.yaml")
    assert 'sent with: {"stream": true}' in out, out
    assert 'recorded parameters: {"max_output_tokens": 50}' in out
    out = _inspect(tmp_path / "b", "langchain-cohere-v1-test_connectors.yaml")
    assert 'sent with: {"stream": false}' in out, out
    (tmp_path / "c").mkdir()
    out = _inspect(tmp_path / "c", "openllmetry-test_anthropic_image_with_history.yaml")
    assert not any(line.startswith("sent with:") for line in out), out


def test_an_azure_deployment_named_by_the_url_is_the_model_asked_for() -> None:
    """Azure OpenAI's clients send no ``model``: the URL names the deployment. A call
    that failed (no response naming a model) read "model asked for: unknown, not in the
    recording" with the deployment right there in its URL."""
    url = ("https://acct.openai.azure.com/openai/deployments/my%20gpt-4o/chat/completions"
           "?api-version=2024-10-21")
    failed = {"url": url, "request": {"messages": [{"role": "user", "content": "Hi"}]},
              "error": {"message": "Unauthorized", "statusCode": 401}}
    named = {"url": url, "request": {"model": "gpt-4o", "messages": [
        {"role": "user", "content": "Hello"}]}, "response": {"model": "gpt-4o-2024-08-06",
                                                             "choices": [{"message": {
                                                                 "role": "assistant",
                                                                 "content": "Hi."}}]}}
    s = InMemoryStorage()
    report = import_text(s, json.dumps(failed) + "\n" + json.dumps(named) + "\n")
    first, second = (s.runs.require_run(r) for r in report.runs_created)
    assert first.status == "failed" and first.agent == "my gpt-4o"
    assert [(n.where, n.reason) for n in report.skipped] == [(
        "line 1", "the request names no model; its URL names the Azure OpenAI deployment "
                  "'my gpt-4o', taken as the model asked for")]
    assert second.agent == "gpt-4o-2024-08-06"  # a request that names its model: as sent
