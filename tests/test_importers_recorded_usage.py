"""Usage and endings as recorded (issue 34 point 4): token counts sent as response
headers (Bedrock's ``X-Amzn-Bedrock-…-Token-Count``), Cohere v1's ``token_count`` and a
stream's ``finish_reason`` on its ``stream-end`` event, citations and a connector's
search documents noted when dropped, a usage object that counts nothing noted; and what
``memwb inspect`` and the run inspector show of an imported run's recorded call.

The real recordings are in tests/fixtures/imports/real (tests/test_importers_real.py
checks what they import as); here each is changed the hostile way: a header that is no
number, one without the other, a stream whose end event lacks the counts."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memory_core.analysis.views import run_view
from memory_core.cli import app as cli
from memory_core.importers import import_file, import_text
from memory_core.importers.common import ImportReport
from memory_core.journal import RunReader
from memory_core.provenance.record import CompositionSettings, Memctx, MessageRef
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.storage.sqlite import SQLiteStorage

REAL = Path(__file__).parent / "fixtures" / "imports" / "real"
BEDROCK_COHERE = "openllmetry-bedrock-invoke-test_cohere_completion.yaml"
COHERE_STREAM = "langchain-cohere-v1-test_stream.yaml"
COHERE_CONNECTORS = "langchain-cohere-v1-test_connectors.yaml"
IN_HEADER = "      X-Amzn-Bedrock-Input-Token-Count:\n      - '9'\n"
OUT_HEADER = "      X-Amzn-Bedrock-Output-Token-Count:\n      - '112'\n"


def _imported(text: str, name: str = "f.yaml") -> tuple[InMemoryStorage, ImportReport]:
    s = InMemoryStorage()
    return s, import_text(s, text, name=name)


def _step(s: InMemoryStorage, report: ImportReport, i: int = 0) -> dict[str, Any]:
    step = s.runs.get(f"{report.runs_created[i]}:step:0")
    assert isinstance(step, dict)
    return step


def _usage(s: InMemoryStorage, report: ImportReport) -> tuple[int, int] | None:
    step = _step(s, report)
    if not step["usage_known"]:
        assert step["response"]["usage"] == {"input_tokens": 0, "output_tokens": 0}
        memctx = s.runs.get(f"{report.runs_created[0]}:memctx")
        assert memctx is not None and "usage" in memctx["unknown_fields"]
        return None
    usage = step["response"]["usage"]
    return usage["input_tokens"], usage["output_tokens"]


def _notes(report: ImportReport) -> list[str]:
    return [k.reason for k in report.skipped]


# -- Bedrock's token-count headers ------------------------------------------------------
def _bedrock(headers: str) -> str:
    """The real Bedrock cassette (Cohere Command, no counts in its body) with
    ``headers`` as its response's token-count headers."""
    text = (REAL / BEDROCK_COHERE).read_text(encoding="utf-8")
    assert IN_HEADER + OUT_HEADER in text
    return text.replace(IN_HEADER + OUT_HEADER, headers)


def test_the_headers_give_the_usage_the_body_lacks() -> None:
    s, report = _imported(_bedrock(IN_HEADER + OUT_HEADER))
    assert _usage(s, report) == (9, 112)
    assert "usage read from the response headers (9 in, 112 out)" in _notes(report)
    assert _step(s, report)["response"]["finish_reason"] == "COMPLETE"


@pytest.mark.parametrize("value", ["'nine'", "'-3'", "'1e3'", "'12.5'", "''", "' 9'"])
def test_a_header_that_is_not_a_count_is_noted_and_no_usage_read(value: str) -> None:
    s, report = _imported(_bedrock(IN_HEADER.replace("'9'", value) + OUT_HEADER))
    assert _usage(s, report) is None
    assert any(n.startswith("response header x-amzn-bedrock-input-token-count ")
               and "is not a token count: usage not read from the headers" in n
               for n in _notes(report)), _notes(report)


@pytest.mark.parametrize(("kept", "missing"), [(IN_HEADER, "output"), (OUT_HEADER, "input")])
def test_one_count_without_the_other_is_noted(kept: str, missing: str) -> None:
    s, report = _imported(_bedrock(kept))
    assert _usage(s, report) is None
    assert (f"the response headers give no x-amzn-bedrock-{missing}-token-count: usage not "
            "read from the headers") in _notes(report)


def test_cached_input_counts_are_part_of_the_input() -> None:
    cache = ("      X-Amzn-Bedrock-Cache-Read-Input-Token-Count:\n      - '100'\n"
             "      X-Amzn-Bedrock-Cache-Write-Input-Token-Count:\n      - '5'\n")
    s, report = _imported(_bedrock(cache + IN_HEADER + OUT_HEADER))
    assert _usage(s, report) == (114, 112)  # as the Messages API's reading counts them
    extra = s.runs.get(f"{report.runs_created[0]}:import")["extra"]
    assert extra["usage_detail"] == {"cached_input": 100}  # (read from the cache)


def test_headers_that_count_otherwise_than_the_body_are_noted_and_the_body_kept() -> None:
    # Titan's body counts 30 in / 29 out (inputTextTokenCount, tokenCount)
    text = (REAL / "openllmetry-bedrock-invoke-test_titan_completion.yaml").read_text()
    head = "    headers:\n      Content-Type:\n      - application/json\n    status:"
    assert text.count(head) == 1
    s, report = _imported(text.replace(head, head.replace(
        "    status:", IN_HEADER.replace("'9'", "'31'") + OUT_HEADER.replace("'112'", "'29'")
        + "    status:")))
    assert _usage(s, report) == (30, 29)
    assert ("the response headers count 31 in, 29 out, the body 30 in, 29 out: the body's "
            "usage kept") in _notes(report)
    same, agreeing = _imported(text.replace(head, head.replace(
        "    status:", IN_HEADER.replace("'9'", "'30'") + OUT_HEADER.replace("'112'", "'29'")
        + "    status:")))
    assert _usage(same, agreeing) == (30, 29)
    assert not [n for n in _notes(agreeing) if "header" in n]


def test_an_http_interaction_file_s_headers_are_read_too() -> None:
    """dd-apm-test-agent's shape: headers as an object, a count as a JSON number."""
    call = {"request": {"method": "POST", "url": "https://bedrock-runtime.us-east-1."
                        "amazonaws.com/model/cohere.command-text-v14/invoke",
                        "headers": {}, "body": {"prompt": "Hi", "max_tokens": 20}},
            "response": {"status": {"code": 200, "message": "OK"},
                         "headers": {"X-Amzn-Bedrock-Input-Token-Count": 2,
                                     "X-Amzn-Bedrock-Output-Token-Count": ["3"]},
                         "body": {"generations": [{"text": "Hello", "finish_reason":
                                                   "COMPLETE"}], "prompt": "Hi"}}}
    s, report = _imported(json.dumps(call), name="call.json")
    assert _usage(s, report) == (2, 3)


def test_a_call_without_the_headers_keeps_its_usage_unknown() -> None:
    s, report = _imported(_bedrock(""))
    assert _usage(s, report) is None
    assert not [n for n in _notes(report) if "header" in n]


# -- Cohere v1: token_count, a stream's end ---------------------------------------------
def _stream_end(text: str) -> tuple[str, dict[str, Any]]:
    """The real v1 stream's stream-end event (its JSON text as the cassette writes it,
    and parsed)."""
    import yaml

    body = yaml.safe_load(text)["interactions"][0]["response"]["body"]["string"]
    line = body.strip().splitlines()[-1]
    return line, json.loads(line)


def _with_stream_end(change: Callable[[dict[str, Any]], None]) -> str:
    import yaml

    doc = yaml.safe_load((REAL / COHERE_STREAM).read_text(encoding="utf-8"))
    body = doc["interactions"][0]["response"]["body"]
    lines = body["string"].strip().splitlines()
    end = json.loads(lines[-1])
    change(end)
    body["string"] = "\n".join([*lines[:-1], json.dumps(end)]) + "\n"
    return str(yaml.safe_dump(doc))


def test_the_real_stream_reads_token_count_and_the_end_event_s_finish_reason() -> None:
    _, end = _stream_end((REAL / COHERE_STREAM).read_text(encoding="utf-8"))
    assert "finish_reason" not in end["response"] and end["finish_reason"] == "COMPLETE"
    assert end["response"]["token_count"]["prompt_tokens"] == 70  # billed: 4
    s, report = _imported((REAL / COHERE_STREAM).read_text(encoding="utf-8"))
    assert _usage(s, report) == (70, 12)
    assert _step(s, report)["response"]["finish_reason"] == "COMPLETE"


def test_a_stream_end_without_counts_leaves_the_usage_unknown_and_says_so() -> None:
    def strip(end: dict[str, Any]) -> None:
        del end["response"]["token_count"], end["response"]["meta"]

    s, report = _imported(_with_stream_end(strip))
    assert _usage(s, report) is None
    assert _step(s, report)["response"]["finish_reason"] == "COMPLETE"
    assert ("response: no token counts (meta.tokens, token_count or meta.billed_units): "
            "its usage is unknown") in _notes(report)


def test_a_stream_end_without_its_response_joins_the_text_events() -> None:
    def strip(end: dict[str, Any]) -> None:
        del end["response"]

    s, report = _imported(_with_stream_end(strip))
    assert _usage(s, report) is None
    assert _step(s, report)["response"]["text"] == "Wow! It's Pickle Rick! What brings you here?"
    assert _step(s, report)["response"]["finish_reason"] == "COMPLETE"


@pytest.mark.parametrize(("meta", "token_count", "usage"), [
    ({"tokens": {"input_tokens": 5, "output_tokens": 6},
      "billed_units": {"input_tokens": 1, "output_tokens": 6}},
     {"prompt_tokens": 7, "response_tokens": 6}, (5, 6)),  # the tokens the model saw
    ({"billed_units": {"input_tokens": 1, "output_tokens": 6}},
     {"prompt_tokens": 7, "response_tokens": 6}, (7, 6)),  # the older API's count
    # a counts object missing its input (a real stream's: tokens {output_tokens})
    ({"tokens": {"output_tokens": 6}, "billed_units": {"input_tokens": 1, "output_tokens": 6}},
     None, (1, 6)),
    ({"tokens": {"output_tokens": 6}}, {"prompt_tokens": 7}, None),
])
def test_cohere_v1_counts_in_order(meta: dict[str, Any], token_count: Any,
                                   usage: tuple[int, int] | None) -> None:
    answer: dict[str, Any] = {"text": "Hi", "generation_id": "g", "finish_reason": "COMPLETE",
                              "meta": meta}
    if token_count is not None:
        answer["token_count"] = token_count
    record = {"url": "https://api.cohere.ai/v1/chat", "request": {"message": "Hello"},
              "response": answer}
    s, report = _imported(json.dumps(record), name="r.jsonl")
    assert _usage(s, report) == usage


def test_a_connector_s_documents_are_noted_only_when_a_search_retrieved_them() -> None:
    answer = {"text": "Hi", "generation_id": "g", "finish_reason": "COMPLETE",
              "meta": {"tokens": {"input_tokens": 5, "output_tokens": 1}},
              "documents": [{"id": "doc_0", "snippet": "…"}]}
    given = {"url": "https://api.cohere.ai/v1/chat", "response": answer,
             "request": {"message": "Hello", "documents": [{"snippet": "…"}]}}
    _, report = _imported(json.dumps(given), name="r.jsonl")
    assert not [n for n in _notes(report) if "retrieved" in n]  # the request's own
    searched = {**given, "request": {"message": "Hello", "connectors": [{"id": "intranet"}]}}
    _, report = _imported(json.dumps(searched), name="r.jsonl")
    assert ("response: 1 document(s) the search of connector(s) intranet retrieved, which "
            "the model read beside the conversation, not imported") in _notes(report)


# -- citations, and usage that counts nothing -------------------------------------------
def test_anthropic_citations_are_noted_where_they_are() -> None:
    cited = {"type": "text", "text": "Paris.", "citations": [
        {"type": "char_location", "cited_text": "Paris is the capital", "document_index": 0,
         "start_char_index": 0, "end_char_index": 20}]}
    record = {"url": "https://api.anthropic.com/v1/messages",
              "request": {"model": "claude-x", "max_tokens": 9, "messages": [
                  {"role": "user", "content": "Capital of France?"},
                  {"role": "assistant", "content": [cited]},
                  {"role": "user", "content": "And of Italy?"}]},
              "response": {"type": "message", "role": "assistant", "content": [
                  {"type": "text", "text": "Rome.", "citations": [cited["citations"][0]] * 2},
                  {"type": "text", "text": " Yes.", "citations": None}],
                  "stop_reason": "end_turn", "usage": {"input_tokens": 3, "output_tokens": 2}}}
    s, report = _imported(json.dumps(record), name="r.jsonl")
    notes = _notes(report)
    assert "message 1: 1 citation(s) of its text not imported" in notes
    assert "response: 2 citation(s) of its text not imported" in notes
    assert _step(s, report)["response"]["text"] == "Rome. Yes."


def test_a_langsmith_usage_metadata_that_counts_nothing_is_noted() -> None:
    text = (REAL / "langsmithsdk-langsmith_py_wrap_openai_.json").read_text(encoding="utf-8")
    s, report = _imported(text, name="runs.json")
    assert _usage(s, report) == (9, 9)  # outputs.usage_metadata, stored since #34.3
    batch = json.loads(text)
    for run in batch["patch"]:
        run["outputs"]["usage_metadata"] = {"input_tokens": "nine", "output_tokens": None}
    s, report = _imported(json.dumps(batch), name="runs.json")
    assert _usage(s, report) is None
    assert any("gives no input and output token counts: usage unknown" in n
               for n in _notes(report)), _notes(report)


# -- memwb inspect and the run inspector ------------------------------------------------
def _db(tmp_path: Path, *names: str) -> tuple[str, list[str]]:
    db = tmp_path / "runs.db"
    s = SQLiteStorage(str(db))
    runs = [r for name in names for r in import_file(s, REAL / name).runs_created]
    s.close()
    return f"sqlite:///{db}", runs


def _memwb(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_inspect_shows_the_recorded_call_beside_the_estimate(tmp_path: Path) -> None:
    url, (bedrock, connectors, failed) = _db(
        tmp_path, BEDROCK_COHERE, COHERE_CONNECTORS, "otelv2-test_chat_completion_404.yaml")
    out = _memwb("inspect", bedrock, "--db", url).splitlines()
    assert "recorded model: cohere.command-text-v14 (bedrock API)" in out
    assert ('recorded parameters: {"max_tokens": 200, "temperature": 0.5, "top_p": 0.5}'
            in out)
    assert "tools offered: none" in out and "finish reason: COMPLETE" in out
    line = next(ln for ln in out if ln.startswith("recorded usage: "))
    assert line.startswith("recorded usage: 9 in / 112 out; our estimate: 9 in / ")
    out = _memwb("inspect", connectors, "--db", url).splitlines()
    assert "recorded model: unknown (cohere API), not in the recording" in out
    assert any(ln.startswith("recorded usage: 19783 in / 7 out; our estimate: 12 in / ")
               for ln in out), out
    out = _memwb("inspect", failed, "--db", url).splitlines()
    assert any(ln.startswith("recorded usage: none (no answer was recorded") for ln in out), out
    # the request is recorded whole: it offered no tools, and its error is said; no
    # answer named a model, so the one shown is the one asked for, said so
    assert "tools offered: none" in out
    assert "model asked for: this-model-does-not-exist" in out, out
    assert not any(ln.startswith("recorded model") for ln in out)
    failure = next(ln for ln in out if ln.startswith("failed: "))
    assert failure.startswith('failed: HTTP 404 Not Found: {"message": "The model `this-')
    assert failure.endswith('"type": "invalid_request_error", "param": null, "code": '
                            '"model_not_found"}'), failure
    assert '"code": "model_not_found"' in failure and \
        "The model `this-model-does-not-exist` does not exist" in failure, failure
    # (it read "answer: None", then "none (the run failed)", of a call the recording
    # shows answered with an error, or whose body the recorder did not keep)
    assert out[-1] == "answer: none recorded (the line above says why)"
    # the run list names the error of the run that failed, and only of that one
    listed = _memwb("runs", "--db", url).splitlines()
    assert listed[0].split() == ["run_id", "agent", "thread_id", "status", "started_at",
                                 "error"]
    # (the status as recorded, then the error as the body sent it: its keys in order)
    assert any(ln.startswith(failed) and 'HTTP 404 Not Found: {"message": "The model' in ln
               for ln in listed), listed
    assert all("{" not in ln for ln in listed if ln.startswith(bedrock))


def test_inspect_says_a_usage_the_recording_lacks_is_unknown(tmp_path: Path) -> None:
    text = _bedrock("")
    (tmp_path / "bare.yaml").write_text(text, encoding="utf-8")
    db = tmp_path / "bare.db"
    s = SQLiteStorage(str(db))
    rid = import_file(s, tmp_path / "bare.yaml").runs_created[0]
    s.close()
    out = _memwb("inspect", rid, "--db", f"sqlite:///{db}").splitlines()
    assert any(ln.startswith("recorded usage: unknown (not in the recording); our estimate")
               for ln in out), out


def test_inspect_json_never_prints_what_it_lists_as_unknown(tmp_path: Path) -> None:
    url, runs = _db(tmp_path, COHERE_CONNECTORS)
    out = json.loads(_memwb("inspect", runs[0], "--json", "--db", url))
    unknown = out["unknown_fields"]
    assert "settings" in unknown and "model" in unknown
    for field in ("settings", "recalled", "near_misses", "dropped", "dropped_count", "query",
                  "recall_skipped", "observations", "observation_count", "scope_snapshot",
                  "working_memory_chars"):
        assert field not in out, field
    assert out["source"] == "imported" and out["recent_count"] == 0 and out["tokens"]


def test_a_record_with_nothing_unknown_is_printed_whole() -> None:
    m = Memctx(thread_id="t", settings=CompositionSettings(recent_n=2, recall_enabled=True),
               recent=[MessageRef(thread_id="t", seq=1, role="user", preview="hi")])
    assert m.known_json() == m.model_dump(mode="json")
    other = m.model_copy(update={"source": "messages-only",
                                 "unknown_fields": ["recent.seq", "settings", "dropped"]})
    shown = other.known_json()
    assert "settings" not in shown and "dropped" not in shown and "dropped_count" not in shown
    assert shown["recent"] == [{k: v for k, v in m.model_dump(mode="json")["recent"][0].items()
                                if k != "seq"}]


def test_the_run_view_carries_the_recorded_call_only_for_an_imported_run() -> None:
    s = InMemoryStorage()
    rid = import_file(s, REAL / COHERE_STREAM).runs_created[0]
    rec = run_view(s, rid).recorded
    assert rec is not None and rec.model is None and rec.api == "cohere"
    assert rec.usage is not None and (rec.usage.input_tokens, rec.usage.output_tokens) == (70, 12)
    assert rec.estimated_in == RunReader(s.runs, rid).memctx().tokens.total  # type: ignore[union-attr]
    assert rec.tools == [] and rec.finish_reason == "COMPLETE" and rec.estimated_out


# -- what the usage says within its counts ---------------------------------------------------
@pytest.mark.parametrize(("usage", "detail", "said"), [
    ({"prompt_tokens": 120, "completion_tokens": 170,
      "prompt_tokens_details": {"cached_tokens": 40},
      "completion_tokens_details": {"reasoning_tokens": 150}},
     {"reasoning": 150, "cached_input": 40},
     " (150 of the output reasoning; 40 of the input cached)"),
    # a predicted output: the prediction's tokens the answer took, and those it did not
    # (billed as output all the same)
    ({"prompt_tokens": 300, "completion_tokens": 90,
      "completion_tokens_details": {"reasoning_tokens": 0, "accepted_prediction_tokens": 60,
                                    "rejected_prediction_tokens": 18}},
     {"accepted_prediction": 60, "rejected_prediction": 18},
     " (60 of the output from the prediction; 18 of the output for the prediction's "
     "unused part)"),
    ({"prompt_tokens": 12, "completion_tokens": 5,
      "completion_tokens_details": {"reasoning_tokens": 0}}, {}, ""),  # none: nothing said
    # the input written to the prompt cache (PostHog's harness recordings): it was lost
    ({"prompt_tokens": 1942, "completion_tokens": 5,
      "prompt_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 1930}},
     {"cache_write": 1930}, " (1930 of the input written to the cache)"),
])
def test_reasoning_and_cached_tokens_are_kept_beside_the_counts(
        tmp_path: Path, usage: dict[str, Any], detail: dict[str, int], said: str) -> None:
    line = json.dumps({"request": {"model": "o4-mini", "messages": [
        {"role": "user", "content": "Plan my trip."}]}, "response": {
        "model": "o4-mini", "usage": usage, "choices": [{"message": {
            "role": "assistant", "content": "Go to Lisbon."}, "finish_reason": "stop"}]}})
    db = tmp_path / "r.db"
    s = SQLiteStorage(str(db))
    rid = import_text(s, line + "\n", name="calls.jsonl").runs_created[0]
    assert s.runs.get(f"{rid}:import")["extra"].get("usage_detail", {}) == detail
    s.close()
    out = _memwb("inspect", rid, "--db", f"sqlite:///{db}").splitlines()
    line_said = next(ln for ln in out if ln.startswith("recorded usage: "))
    want = (f"recorded usage: {usage['prompt_tokens']} in / {usage['completion_tokens']} "
            f"out{said}; our estimate")
    assert line_said.startswith(want), line_said


def test_gemini_thoughts_are_said_within_the_output(tmp_path: Path) -> None:
    url, (first, _second) = _db(tmp_path, "pydanticai-google-test_google_model_thinking_part.yaml")
    out = _memwb("inspect", first, "--db", url).splitlines()
    assert any(ln.startswith("recorded usage: ") and "(1001 of the output reasoning)" in ln
               for ln in out), out


def test_a_failed_call_keeps_the_tools_it_offered() -> None:
    # no step record is written for a call without an answer: the import record keeps
    # the names of the tools its request offered, so "not recorded" is not said of them
    tools = [{"type": "function", "function": {"name": n, "parameters": {}}}
             for n in ("lookup", "refund")]
    s = InMemoryStorage()
    report = import_text(s, json.dumps({
        "request": {"model": "gpt-4o", "tools": tools,
                    "messages": [{"role": "user", "content": "refund order 7"}]},
        "error": {"message": "Rate limit reached", "type": "rate_limit_error"}}))
    view = run_view(s, report.runs_created[0])
    assert view.error is not None and "Rate limit reached" in view.error
    assert view.recorded is not None and not view.recorded.answered
    assert view.recorded.tools == ["lookup", "refund"]
    assert view.recorded.said()["tools"] == "lookup, refund"


def test_inspect_names_the_stop_sequence_that_ended_the_answer(tmp_path: Path) -> None:
    # ldp's ReAct agent on Claude stops at "Action:": stop_reason stop_sequence, and the
    # response says which of the request's stop sequences it was
    url, (stopped, called) = _db(tmp_path, "ldp-test_react_dummyenv_claude.yaml")
    assert 'finish reason: stop_sequence ("Action:")' in _memwb(
        "inspect", stopped, "--db", url).splitlines()
    assert "finish reason: tool_use" in _memwb("inspect", called, "--db", url).splitlines()


def test_a_failed_call_whose_response_named_a_model_shows_it_as_recorded(
        tmp_path: Path) -> None:
    # a failed Responses API call names the model that served it: that one is the
    # recorded model, the one asked for beside it (it read "model asked for: <served>,
    # asked for <asked>")
    record = {"request": {"model": "o3", "input": "hi"},
              "response": {"status": "failed", "model": "gpt-4.1-mini", "output": [],
                           "error": {"code": "server_error", "message": "boom"}}}
    (tmp_path / "failed.jsonl").write_text(json.dumps(record), encoding="utf-8")
    db = tmp_path / "runs.db"
    s = SQLiteStorage(str(db))
    rid = import_file(s, tmp_path / "failed.jsonl").runs_created[0]
    s.close()
    out = _memwb("inspect", rid, "--db", f"sqlite:///{db}").splitlines()
    assert "recorded model: gpt-4.1-mini, asked for o3" in out, out


@pytest.mark.parametrize(("usage", "out", "noted"), [
    # xAI: the reasoning beside the completion's tokens, the total their sum
    ({"prompt_tokens": 288, "completion_tokens": 27, "total_tokens": 628,
      "completion_tokens_details": {"reasoning_tokens": 313}}, 340, True),
    # no total, but more reasoning than output: it cannot be within
    ({"prompt_tokens": 10, "completion_tokens": 4,
      "completion_tokens_details": {"reasoning_tokens": 50}}, 54, True),
    # OpenAI's: the reasoning within the completion's tokens
    ({"prompt_tokens": 288, "completion_tokens": 340, "total_tokens": 628,
      "completion_tokens_details": {"reasoning_tokens": 313}}, 340, False),
])
def test_reasoning_counted_beside_the_output_is_counted_within_it(
        usage: dict[str, Any], out: int, noted: bool) -> None:
    line = json.dumps({"request": {"model": "grok-3-mini", "messages": [
        {"role": "user", "content": "Weather?"}]}, "response": {
        "model": "grok-3-mini", "usage": usage, "choices": [{"message": {
            "role": "assistant", "content": "Sunny."}, "finish_reason": "stop"}]}})
    s, report = _imported(line + "\n", name="calls.jsonl")
    rid = report.runs_created[0]
    assert s.runs.get(f"{rid}:step:0")["response"]["usage"]["output_tokens"] == out
    assert s.runs.get(f"{rid}:import")["extra"]["usage_detail"]["reasoning"] == \
        usage["completion_tokens_details"]["reasoning_tokens"]
    assert any("beside its" in k.reason for k in report.skipped) is noted


def test_an_answer_in_audio_is_its_transcript_and_sent_back_by_id_is_the_same() -> None:
    """gpt-4o-audio answers with ``audio`` (an id, the data, a transcript) and no
    content; a client sends the answer back as ``{"audio": {"id"}}`` alone (OpenAI's
    .NET SDK's ChatWithAudio test): one conversation, the answer its transcript."""
    said = "Hi there! I'm hearing you loud and clear."
    first = {"request": {"model": "gpt-4o-audio-preview", "messages": [
        {"role": "user", "content": "Can you hear me?"}]}, "response": {
        "model": "gpt-4o-audio-preview", "choices": [{"message": {
            "role": "assistant", "content": None, "audio": {
                "id": "audio_1", "data": "UklGRg==", "transcript": said}},
            "finish_reason": "stop"}]}}
    second = {"request": {"model": "gpt-4o-audio-preview", "messages": [
        {"role": "user", "content": "Can you hear me?"},
        {"role": "assistant", "audio": {"id": "audio_1"}},
        {"role": "user", "content": "What is the weather?"}]}, "response": {
        "model": "gpt-4o-audio-preview", "choices": [{"message": {
            "role": "assistant", "content": "Sunny."}, "finish_reason": "stop"}]}}
    lost = {**second, "request": {"messages": [
        {"role": "user", "content": "Again?"},
        {"role": "assistant", "audio": {"id": "audio_elsewhere"}},
        {"role": "user", "content": "Well?"}]}}
    text = "\n".join(json.dumps(x) for x in (first, second, lost)) + "\n"
    s, report = _imported(text, name="calls.jsonl")
    assert len(report.threads_created) == 2
    assert [m.text() for m in s.memory.get_messages(report.threads_created[0])] == [
        "Can you hear me?", said, "What is the weather?", "Sunny."]
    reasons = [k.reason for k in report.skipped]
    assert "response: the answer is audio: its transcript stored as its text" in reasons
    assert "message 1: an audio answer sent back by its id 'audio_1': stored as the " \
        "transcript of the answer of that id" in reasons
    assert any("'audio_elsewhere', whose transcript is not in the file" in r
               for r in reasons)


def test_an_anthropic_cache_write_is_kept_beside_the_input() -> None:
    """``cache_creation_input_tokens`` (the prompt written to the cache, billed above
    the input) was only in a note: it is kept within the input count, as a read is."""
    record = {"request": {"model": "claude-x", "max_tokens": 8, "messages": [
        {"role": "user", "content": "Hi"}]},
        "response": {"type": "message", "role": "assistant", "model": "claude-x",
                     "content": [{"type": "text", "text": "Hello."}],
                     "stop_reason": "end_turn",
                     "usage": {"input_tokens": 11, "output_tokens": 5,
                               "cache_creation_input_tokens": 11149,
                               "cache_read_input_tokens": 30}}}
    s = InMemoryStorage()
    rid = import_text(s, json.dumps(record), name="a.jsonl").runs_created[0]
    assert s.runs.get(f"{rid}:import")["extra"]["usage_detail"] == {
        "cached_input": 30, "cache_write": 11149}
    rec = run_view(s, rid).recorded
    assert rec is not None and rec.usage is not None and rec.usage.input_tokens == 11190
    assert rec.said()["input_within"] == \
        "of them 30 read from the cache, 11,149 written to the cache"


@pytest.mark.parametrize(("usage", "counted", "noted"), [
    # Charm's proxy (hyper.charm.land): the cached input beside prompt_tokens
    ({"prompt_tokens": 704, "completion_tokens": 45, "total_tokens": 8621,
      "prompt_tokens_details": {"cached_tokens": 7872}}, (8576, 45), True),
    # more cached than input, no total
    ({"prompt_tokens": 91, "completion_tokens": 12,
      "prompt_tokens_details": {"cached_tokens": 8576}}, (8667, 12), True),
    # OpenAI's: the cached input within prompt_tokens
    ({"prompt_tokens": 9005, "completion_tokens": 115, "total_tokens": 9120,
      "prompt_tokens_details": {"cached_tokens": 8000}}, (9005, 115), False)])
def test_cached_input_counted_beside_the_input_is_added_to_it(
        usage: dict[str, Any], counted: tuple[int, int], noted: bool) -> None:
    """A server that counts the cached input beside ``prompt_tokens`` (its total is
    prompt + completion + cached) was shown as "704 in (7872 of the input cached)",
    the input understated twelvefold."""
    line = json.dumps({"request": {"model": "glm-5.1", "messages": [
        {"role": "user", "content": "Edit the file."}]}, "response": {
        "object": "chat.completion", "model": "glm-5.1", "usage": usage, "choices": [
            {"index": 0, "finish_reason": "stop",
             "message": {"role": "assistant", "content": "Done."}}]}})
    s, report = _imported(line + "\n", name="f.jsonl")
    assert _usage(s, report) == counted
    said = [k.reason for k in report.skipped if "cached input token(s) beside" in k.reason]
    assert bool(said) == noted, report.skipped


def test_inspect_says_parameters_are_unknown_where_a_file_keeps_none(tmp_path: Path) -> None:
    """A prompt rebuilt from an agent's session keeps no parameters it was sent: they
    are unknown, not "none"; a trajectory whose config sets them has them, said from
    where; a request recorded whole with none sent says none."""
    url, runs = _db(tmp_path, "roo-03deadab-api_conversation_history.json",
                    "minisweagent-pvlib__pvlib-python-1606.traj.json",
                    "sweagent-marshmallow-code__marshmallow-1867.traj",
                    "semantickernel-serializedChatHistoryV1_15_1.json")
    said = {run: _memwb("inspect", run, "--db", url).splitlines() for run in runs}
    lines = {run: next(ln for ln in out if ln.startswith("recorded parameters: "))
             for run, out in said.items()}
    mini = [run for run in runs if '"temperature": 0.0' in lines[run]]
    assert mini and all(lines[run] == 'recorded parameters: {"parallel_tool_calls": true, '
                        '"temperature": 0.0}' for run in mini), lines
    assert any("config sets them (info.config.model.model_kwargs); its other settings "
               "(drop_params) not read as sent" in ln for ln in said[mini[0]]), said[mini[0]]
    # Roo's history, SWE-agent's replay (no model called) and a chat history: unknown
    unknown = [run for run in runs if run not in mini]
    assert len(unknown) >= 3 and all(
        lines[run] == "recorded parameters: unknown (not in the recording)"
        for run in unknown), lines
    assert all("params" in line for run in unknown for line in said[run]
               if line.startswith("note: not in the record (shown as unknown)"))
    (tmp_path / "whole").mkdir()
    url, (whole,) = _db(tmp_path / "whole", "otelv2-test_chat_completion_404.yaml")
    assert "recorded parameters: none" in _memwb("inspect", whole, "--db", url).splitlines()


def test_a_failed_call_s_tools_not_recorded_are_unknown_not_for_want_of_an_answer() -> None:
    """The tools offered are the request's: a failed Aider call said "not recorded (no
    answer)" where the file keeps no call's tools (outside trial 56)."""
    from memory_core.analysis.recorded import UNRECORDED, RecordedCall

    failed = RecordedCall(model=None, api=None, params=None, tools=None, answered=False,
                          usage=None, finish_reason=None, estimated_in=3,
                          estimated_out=None)
    assert failed.said()["tools"] == UNRECORDED
    assert failed.model_copy(update={"tools": []}).said()["tools"] == "none"
