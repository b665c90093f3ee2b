"""promptfoo's eval results (``promptfoo eval -o``, ``promptfoo export``, ``-o
results.jsonl``): each result a run, through ``import_text``/``import_file``. The
documents are promptfoo's own sample export (tests/fixtures/imports/real), changed
where a test says so."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memory_core.errors import ImportFormatError
from memory_core.importers import ImportReport, import_file, import_text
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import Message

SAMPLE = Path(__file__).parent / "fixtures" / "imports" / "real" / "promptfoo-sample-export.json"


def _export() -> dict[str, Any]:
    return json.loads(SAMPLE.read_text(encoding="utf-8"))


def _results(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return doc["results"]["results"]


def _import(doc: Any, name: str = "results.json") -> tuple[InMemoryStorage, ImportReport]:
    s = InMemoryStorage()
    text = doc if isinstance(doc, str) else json.dumps(doc)
    return s, import_text(s, text, name=name)


def _notes(report: ImportReport) -> list[str]:
    return [f"{n.where}: {n.reason}" for n in report.skipped]


def _thread(s: InMemoryStorage, tid: str) -> list[tuple[str, str]]:
    return [(m.role, m.text() or "") for m in s.memory.get_messages(tid)]


def _answer(s: InMemoryStorage, rid: str) -> Message:
    run = s.runs.require_run(rid)
    return s.memory.get_messages(run.thread_id)[-1]


def _extra(s: InMemoryStorage, rid: str) -> dict[str, Any]:
    return s.runs.get(f"{rid}:import")["extra"]


def _step(s: InMemoryStorage, rid: str) -> dict[str, Any]:
    step = s.runs.get(f"{rid}:step:0")
    assert step is not None
    return step


def test_each_result_of_an_export_is_a_run_of_the_model_its_provider_names() -> None:
    s = InMemoryStorage()
    report = import_file(s, SAMPLE)
    assert len(report.runs_created) == 4 and len(report.threads_created) == 4
    runs = [s.runs.require_run(r) for r in report.runs_created]
    assert [r.agent for r in runs] == ["gpt-5-mini", "gpt-5", "gpt-5-mini", "gpt-5"]
    # the provider id is how the eval asked for the model
    assert [_extra(s, r)["requested_id"] for r in report.runs_created] == [
        "openai:gpt-5-mini", "openai:gpt-5", "openai:gpt-5-mini", "openai:gpt-5"]
    # the call's own usage, not its graders'
    usage = _step(s, report.runs_created[0])["response"]["usage"]
    assert (usage["input_tokens"], usage["output_tokens"]) == (37, 245)
    # dated by the eval, a microsecond apart in the file's order, latencyMs the duration
    start = datetime(2025, 10, 1, 20, 8, 11, 168000, tzinfo=UTC)
    assert [r.started_at for r in runs] == [start + timedelta(microseconds=i)
                                            for i in range(4)]
    assert runs[0].finished_at == start + timedelta(milliseconds=5794)
    assert _thread(s, runs[1].thread_id) == [
        ("user", "Solve this riddle: I speak without a mouth and hear without ears. I have "
                 "no body, but I come alive with wind. What am I?"),
        ("assistant", "An echo.")]
    notes = _notes(report)
    assert "results[0]: promptfoo's grading of the answer (failed, score 0.75: 'Latency " \
           "5794ms is greater than threshold 3000ms') not imported; its graders' own model " \
           "calls used 256 tokens (227 prompt, 29 completion), not this call's" in notes


def test_a_result_without_its_response_is_noted_and_the_rest_imports() -> None:
    doc = _export()
    del _results(doc)[1]["response"]  # (its call answered: an assertion failed it)
    s, report = _import(doc)
    assert len(report.runs_created) == 3
    assert [s.runs.require_run(r).agent for r in report.runs_created] == [
        "gpt-5-mini", "gpt-5-mini", "gpt-5"]
    (note,) = [n for n in _notes(report) if "not imported: " in n]
    assert note.startswith("line 1: results[1]: not imported: the result keeps no response: "
                           "its answer is not in the file")


def test_a_provider_error_is_a_failed_run_and_no_retry_of_the_next_provider() -> None:
    doc = _export()
    failed = _results(doc)[0]
    failed["response"] = {"error": "API error: 429 Too Many Requests", "output": "partial"}
    failed["error"], failed["failureReason"] = "API error: 429 Too Many Requests", 2
    s, report = _import(doc)
    run = s.runs.require_run(report.runs_created[0])
    assert run.status == "failed" and run.error == "API error: 429 Too Many Requests"
    assert run.agent == "gpt-5-mini"
    notes = _notes(report)
    assert any("its output beside the provider's error (\"partial\") not imported" in n
               for n in notes)
    # gpt-5 answered the same prompt next: another provider's call, not its retry
    assert not [n for n in notes if "a retry" in n]
    # a result whose call failed before any response was kept: the same
    doc = _export()
    del _results(doc)[0]["response"]
    _results(doc)[0].update(error="Error: request timed out", failureReason=2)
    s, report = _import(doc)
    run = s.runs.require_run(report.runs_created[0])
    assert run.status == "failed" and run.error == "Error: request timed out"


def test_a_json_or_yaml_chat_prompt_is_sent_as_its_messages_a_text_as_one() -> None:
    doc = _export()
    chat = [{"role": "system", "content": "Answer in one word."},
            {"role": "user", "content": "What speaks without a mouth?"}]
    _results(doc)[0]["prompt"]["raw"] = json.dumps(chat, indent=2)
    _results(doc)[1]["prompt"]["raw"] = ("- role: system\n  content: Answer in one word.\n"
                                         "- role: user\n  content: What speaks without a "
                                         "mouth?\n")
    _results(doc)[2]["prompt"]["raw"] = "[INST] What speaks without a mouth? [/INST]"
    s, report = _import(doc)
    for rid in report.runs_created[:2]:
        prompt = s.runs.get(f"{rid}:prompt")["items"]
        assert [(i["lane"], i["message"]["role"], i["message"]["content"])
                for i in prompt] == [("instructions", "system", "Answer in one word."),
                                     ("input", "user", "What speaks without a mouth?")]
    run = s.runs.require_run(report.runs_created[2])
    assert _thread(s, run.thread_id)[0] == (
        "user", "[INST] What speaks without a mouth? [/INST]")


def test_the_answer_s_tool_calls_are_read_however_promptfoo_kept_them() -> None:
    doc = _export()
    rs = _results(doc)
    rs[0]["response"]["output"] = [{"id": "call_1", "type": "function", "function": {
        "name": "lookup", "arguments": "{\"word\": \"echo\"}"}}]
    rs[1]["response"]["output"] = ('Let me check.\n\n{"type":"tool_use","id":"toolu_1",'
                                   '"name":"lookup","input":{"word":"echo"}}')
    rs[2]["response"]["output"] = {"role": "assistant", "content": "Checking.", "tool_calls": [
        {"id": "call_2", "type": "function",
         "function": {"name": "lookup", "arguments": "{}"}}]}
    rs[3]["response"]["output"] = {"answer": "married", "confidence": 0.9}
    s, report = _import(doc)
    answers = [_answer(s, r) for r in report.runs_created]
    assert [[(p.id, p.name, p.args) for p in a.tool_calls()] for a in answers[:3]] == [
        [("call_1", "lookup", {"word": "echo"})], [("toolu_1", "lookup", {"word": "echo"})],
        [("call_2", "lookup", {})]]
    assert [a.text() for a in answers] == [None, "Let me check.", "Checking.",
                                          '{"answer":"married","confidence":0.9}']
    notes = _notes(report)
    assert "line 1: results[1]: its output holds 1 tool call(s) as JSON text (as promptfoo " \
           "writes them): read as the answer's calls" in notes
    assert any(n.startswith("line 1: results[3]: response: content is a JSON object")
               for n in notes)


def test_a_text_that_only_looks_like_a_call_stays_text() -> None:
    doc = _export()
    said = 'Here is the JSON:\n{"name": "Bob", "arguments": "none"}'
    _results(doc)[0]["response"]["output"] = said
    s, report = _import(doc)
    answer = _answer(s, report.runs_created[0])
    assert answer.text() == said and not answer.tool_calls()


def test_an_answer_from_promptfoo_s_cache_has_its_usage_unknown() -> None:
    doc = _export()
    r = _results(doc)[0]
    r["response"]["cached"], r["response"]["tokenUsage"] = True, {"cached": 282, "total": 282}
    s, report = _import(doc)
    step = _step(s, report.runs_created[0])
    assert step["usage_known"] is False
    assert "line 1: results[0]: answered from promptfoo's cache (the call was made by an " \
           "earlier eval): its token counts are that call's total only (282): usage " \
           "unknown" in _notes(report)


def test_tokens_counted_in_neither_count_are_noted_and_the_raw_model_answered() -> None:
    """Gemini through promptfoo: its thinking is in the total only; the provider's raw
    response names the model that answered."""
    doc = _export()
    r = _results(doc)[0]
    r["provider"] = {"id": "google:gemini-2.5-flash", "label": ""}
    r["response"] = {"output": "An echo.", "cached": False, "tokenUsage": {
        "prompt": 64, "completion": 17, "total": 200, "numRequests": 1},
        "raw": {"candidates": [], "modelVersion": "gemini-2.5-flash-preview"}}
    s, report = _import(doc)
    rid = report.runs_created[0]
    assert s.runs.require_run(rid).agent == "gemini-2.5-flash-preview"
    assert _extra(s, rid)["requested_model"] == "google:gemini-2.5-flash"
    usage = _step(s, rid)["response"]["usage"]
    assert (usage["input_tokens"], usage["output_tokens"]) == (64, 17)
    assert "line 1: results[0]: its tokenUsage total (200) is 119 more than its prompt (64) " \
           "and completion (17) tokens: counted in neither (a model's thinking, for one), " \
           "not in its usage" in _notes(report)


@pytest.mark.parametrize(("pid", "model"), [
    ("openai:chat:gpt-4o", "gpt-4o"), ("ollama:chat:llama3.1:8b", "llama3.1:8b"),
    ("bedrock:anthropic.claude-3-haiku-20240307-v1:0", "anthropic.claude-3-haiku-20240307-v1:0"),
    ("anthropic:messages:claude-sonnet-4-5", "claude-sonnet-4-5"),
    ("openrouter:meta-llama/llama-3-8b", "meta-llama/llama-3-8b")])
def test_the_model_is_the_one_the_provider_id_names(pid: str, model: str) -> None:
    doc = _export()
    _results(doc)[0]["provider"] = {"id": pid, "label": ""}
    s, report = _import(doc)
    rid = report.runs_created[0]
    assert s.runs.require_run(rid).agent == model
    assert _extra(s, rid)["requested_id"] == pid


def test_a_provider_that_is_a_program_names_no_model_and_its_label_is_kept() -> None:
    doc = _export()
    _results(doc)[0]["provider"] = {"id": "file://providers/agent.py", "label": "My agent"}
    _results(doc)[0]["prompt"]["raw"] = ""
    s, report = _import(doc)
    rid = report.runs_created[0]
    assert s.runs.require_run(rid).agent == "imported"
    assert "model" in s.runs.get(f"{rid}:memctx")["unknown_fields"]
    assert _extra(s, rid)["request_fields"] == {"provider_label": "My agent"}
    notes = _notes(report)
    assert "line 1: results[0]: its provider 'file://providers/agent.py' names no model (a " \
           "program or service promptfoo called): the model is not recorded" in notes
    assert any(n.startswith("line 1: results[0]: its prompt is empty") for n in notes)


def test_the_same_prompt_answered_alike_by_two_providers_is_one_thread_of_two_runs() -> None:
    doc = _export()
    _results(doc)[0]["response"]["output"] = "An echo."  # (as gpt-5 answered it)
    s, report = _import(doc)
    first, second = (s.runs.require_run(r) for r in report.runs_created[:2])
    assert first.thread_id == second.thread_id and (first.agent, second.agent) == (
        "gpt-5-mini", "gpt-5")
    assert len(report.threads_created) == 3


def test_a_results_file_of_lines_is_read_undated() -> None:
    lines = "\n".join(json.dumps(r) for r in _results(_export()))
    s, report = _import(lines, name="results.jsonl")
    assert len(report.runs_created) == 4 and report.undated
    assert [s.runs.require_run(r).agent for r in report.runs_created] == [
        "gpt-5-mini", "gpt-5", "gpt-5-mini", "gpt-5"]


def test_an_older_summary_is_read_from_its_table() -> None:
    """A version 2 summary that keeps its table but no results (as the web viewer's
    table holds them): each row's outputs, the provider its column's."""
    doc = _export()
    rs = _results(doc)
    table = {"head": {"prompts": [{"raw": "Solve this riddle: {{riddle}}",
                                   "provider": "openai:gpt-5"},
                                  {"raw": "Solve this riddle: {{riddle}}",
                                   "provider": "openai:gpt-5-mini"}], "vars": ["riddle"]},
             "body": [{"testIdx": 0, "vars": ["…"], "outputs": [
                 {"prompt": rs[1]["prompt"]["raw"], "text": "An echo.", "pass": False,
                  "failureReason": 1, "score": 0.5, "latencyMs": 6197},
                 {"prompt": rs[0]["prompt"]["raw"], "error": "API error: 500", "pass": False,
                  "failureReason": 2, "text": "API error: 500", "latencyMs": 12}]}]}
    doc["results"] = {"version": 2, "timestamp": "2024-05-01T10:00:00Z", "results": [],
                      "table": table, "stats": {"successes": 0, "failures": 2}}
    s, report = _import(doc)
    answered, failed = (s.runs.require_run(r) for r in report.runs_created)
    assert (answered.agent, answered.status) == ("gpt-5", "completed")
    assert _thread(s, answered.thread_id)[-1] == ("assistant", "An echo.")
    assert (failed.agent, failed.status, failed.error) == ("gpt-5-mini", "failed",
                                                           "API error: 500")
    assert any(n.startswith("line 1: table row 0, output 0: read from the eval's table")
               for n in _notes(report))


def test_an_eval_with_no_results_is_refused_saying_so() -> None:
    # (a serialised Eval whose results were not loaded: promptfoo's own examples keep one)
    doc = {"_resultsLoaded": False, "createdAt": 1758065695513, "id": "eval-IF3",
           "config": {"prompts": ["x"]}, "results": [],
           "prompts": [{"raw": "x", "provider": "openai:gpt-4.1-mini", "metrics": {}}],
           "persisted": True, "vars": []}
    with pytest.raises(ImportFormatError) as e:
        _import(doc)
    assert str(e.value) == ("line 1: a promptfoo eval holding no results (its 'results' are "
                            "empty, and no table): no model call to import")


def test_a_stripped_prompt_is_left_out_saying_why() -> None:
    doc = _export()
    _results(doc)[2]["prompt"]["raw"] = "[prompt stripped]"
    s, report = _import(doc)
    assert len(report.runs_created) == 3
    assert any(n.startswith("line 1: results[2]: not imported: its prompt was stripped from "
                            "the file (PROMPTFOO_STRIP_PROMPT_TEXT)") for n in _notes(report))


def test_an_eval_time_that_is_no_time_is_one_error_naming_it() -> None:
    doc = _export()
    doc["results"]["timestamp"] = "yesterday"
    with pytest.raises(ImportFormatError) as e:
        _import(doc)
    assert "results.timestamp" in str(e.value) and "'yesterday'" in str(e.value)
    assert "\n" not in str(e.value)


def test_an_export_with_a_result_that_is_no_object_imports_the_rest() -> None:
    doc = _export()
    _results(doc)[3] = "oops"
    _results(doc)[2]["provider"] = {"label": "no id"}
    s, report = _import(doc)
    assert len(report.runs_created) == 2
    notes = [n for n in _notes(report) if "not imported" in n]
    assert any(n.startswith("line 1: results[3]: not imported: a result must be an object")
               for n in notes)
    assert any("results[2]: not imported: a result's provider must name its id" in n
               for n in notes)


def test_importing_the_export_twice_is_a_no_op() -> None:
    s = InMemoryStorage()
    import_file(s, SAMPLE)
    again = import_file(s, SAMPLE)
    assert again.already_imported and not again.runs_created


def test_an_unchanged_copy_of_the_sample_still_imports_whole() -> None:
    """(The tests above change copies; the file itself is not touched.)"""
    doc = copy.deepcopy(_export())
    _, report = _import(doc)
    assert len(report.runs_created) == 4
