"""ATIF trajectories (Harbor's Agent Trajectory Interchange Format, ``ATIF-v1.0`` …
``v1.7``): each agent step a run whose prompt is rebuilt from the steps before it, its
usage the step's metrics, its tool calls answered by the observation results naming
them. The real files are NVIDIA NeMo Agent Toolkit's (tests/fixtures/imports/real); the
trajectories below are written after the spec's own examples."""

from __future__ import annotations

import copy
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memory_core.cli import app
from memory_core.errors import ImportFormatError
from memory_core.importers import import_text
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import ToolCallPart, ToolResultPart


def _step(i: int, source: str, message: Any, **fields: Any) -> dict[str, Any]:
    return {"step_id": i, "timestamp": f"2025-10-11T10:30:{i:02d}Z", "source": source,
            "message": message, **fields}


def _call(cid: str | None, name: str, **args: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"function_name": name, "arguments": args}
    if cid is not None:
        out["tool_call_id"] = cid
    return out


def _trajectory(steps: list[dict[str, Any]], **root: Any) -> dict[str, Any]:
    return {"schema_version": "ATIF-v1.5", "session_id": "sess-1",
            "agent": {"name": "harbor-agent", "version": "1.0.0",
                      "model_name": "gemini-2.5-flash"},
            "steps": steps, **root}


def _stock() -> dict[str, Any]:
    """The spec's example: a question, two searches in one step, the answer."""
    return _trajectory([
        _step(1, "system", "You answer questions about stocks."),
        _step(2, "user", "What is the current trading price of Alphabet (GOOGL)?"),
        _step(3, "agent", "I will search for the price and volume.",
              reasoning_content="Two data points are needed.", reasoning_effort="medium",
              tool_calls=[_call("call_price_1", "financial_search", ticker="GOOGL",
                                metric="price"),
                          _call("call_volume_2", "financial_search", ticker="GOOGL",
                                metric="volume")],
              observation={"results": [
                  {"source_call_id": "call_price_1", "content": "GOOGL trades at $185.35"},
                  {"source_call_id": "call_volume_2", "content": "GOOGL volume: 1.5M"}]},
              metrics={"prompt_tokens": 520, "completion_tokens": 80, "cached_tokens": 200,
                       "cost_usd": 0.00045}),
        _step(4, "system", "Label the figures with the date."),
        _step(5, "agent", "GOOGL trades at $185.35 on a volume of 1.5M.",
              model_name="gemini-2.5-pro",
              metrics={"prompt_tokens": 600, "completion_tokens": 44,
                       "logprobs": [-0.1, -0.2], "extra": {"reasoning_tokens": 12}})],
        agent={"name": "harbor-agent", "version": "1.0.0", "model_name": "gemini-2.5-flash",
               "tool_definitions": [{"type": "function", "function": {
                   "name": "financial_search", "description": "Search financial data",
                   "parameters": {"type": "object", "properties": {
                       "ticker": {"type": "string"}, "metric": {"type": "string"}}}}}],
               "extra": {"temperature": 0.3}},
        final_metrics={"total_prompt_tokens": 1120, "total_completion_tokens": 124})


def _import(doc: Any) -> tuple[InMemoryStorage, Any]:
    s = InMemoryStorage()
    return s, import_text(s, json.dumps(doc))


def _rendered(s: InMemoryStorage, thread: str) -> list[str]:
    out = []
    for m in s.memory.get_messages(thread):
        bits = [f"→{p.name}#{p.id}" if isinstance(p, ToolCallPart) else
                f"{p.name}#{p.call_id}={p.result}" if isinstance(p, ToolResultPart) else p.text
                for p in m.parts]
        out.append(f"{m.role}: {' '.join(bits)}")
    return out


def _notes(s: InMemoryStorage, rid: str) -> list[str]:
    return s.runs.get(f"{rid}:import")["notes"]


def _prompt(s: InMemoryStorage, rid: str) -> list[tuple[str, str]]:
    return [(i["lane"], i["message"]["role"]) for i in s.runs.get(f"{rid}:prompt")["items"]]


def test_each_agent_step_is_a_call_whose_prompt_is_the_steps_before_it() -> None:
    s, report = _import(_stock())
    assert report.threads_created == ["sess-1"]
    assert _rendered(s, "sess-1") == [
        "user: What is the current trading price of Alphabet (GOOGL)?",
        "assistant: I will search for the price and volume. →financial_search#call_price_1 "
        "→financial_search#call_volume_2",
        "tool: financial_search#call_price_1=GOOGL trades at $185.35",
        "tool: financial_search#call_volume_2=GOOGL volume: 1.5M",
        "system: Label the figures with the date.",
        "assistant: GOOGL trades at $185.35 on a volume of 1.5M."]
    first, second = report.runs_created
    assert _prompt(s, first) == [("instructions", "system"), ("input", "user")]
    assert _prompt(s, second) == [("instructions", "system"), ("recent", "user"),
                                  ("recent", "assistant"), ("input", "tool"),
                                  ("input", "tool"), ("input", "system")]
    # the step's model, else the agent's; the tools its tool_definitions
    steps = [s.runs.get(f"{rid}:step:0") for rid in report.runs_created]
    assert [st["model"]["name"] for st in steps] == ["gemini-2.5-flash", "gemini-2.5-pro"]
    assert [[t["name"] for t in st["tools"]] for st in steps] == [["financial_search"]] * 2
    # the usage its metrics: the cached tokens within the prompt's, as ATIF counts them
    usage = [(st["response"]["usage"]["input_tokens"], st["response"]["usage"]["output_tokens"])
             for st in steps]
    assert usage == [(520, 80), (600, 44)]
    details = [s.runs.get(f"{rid}:import")["extra"].get("usage_detail") for rid in
               report.runs_created]
    assert details == [{"cached_input": 200}, {"reasoning": 12}]
    # a call ends at its step's time and begins at the step's before it
    run = s.runs.require_run(first)
    assert run.started_at == datetime(2025, 10, 11, 10, 30, 2, tzinfo=UTC)
    notes = " | ".join(_notes(s, first))
    for said in ("its prompt is rebuilt from the trajectory's steps before it",
                 "its reasoning (reasoning_content, 27 characters) not imported",
                 "its reasoning_effort 'medium' not imported",
                 "its cost (metrics.cost_usd, $0.00045) not imported",
                 "final_metrics (total_prompt_tokens 1120, total_completion_tokens 124) not "
                 "imported", "the agent's extra: temperature: not imported"):
        assert said in notes, said
    assert "its logprobs (metrics) not imported" in " | ".join(_notes(s, second))


def test_a_tool_call_without_an_id_is_given_one_and_stays_one_conversation() -> None:
    doc = _stock()
    doc["steps"][2]["tool_calls"][1].pop("tool_call_id")
    s, report = _import(doc)
    assert report.threads_created == ["sess-1"] and len(report.runs_created) == 2
    calls = [p for m in s.memory.get_messages("sess-1") for p in m.tool_calls()]
    assert calls[0].id == "call_price_1" and calls[1].id.startswith("call-")
    notes = " | ".join(_notes(s, report.runs_created[0]))
    assert f"tool call 1 (financial_search) had no id; given '{calls[1].id}'" in notes
    # its result names the id no call has now: left out of the next prompt, noted
    later = " | ".join(_notes(s, report.runs_created[1]))
    assert ("steps[2]: observation result 1 names tool call 'call_volume_2', which steps[2] "
            "does not make: not imported") in later


def test_a_result_naming_no_call_of_its_step_is_noted_and_the_rest_imports() -> None:
    doc = _stock()
    doc["steps"][2]["observation"]["results"].append(
        {"source_call_id": "call_elsewhere", "content": "stray"})
    s, report = _import(doc)
    assert len(report.runs_created) == 2
    assert "stray" not in " ".join(_rendered(s, "sess-1"))
    assert any("observation result 2 names tool call 'call_elsewhere', which steps[2] does "
               "not make: not imported" in n for n in _notes(s, report.runs_created[1]))


def test_results_naming_no_call_are_the_users_as_terminus_2_records_a_terminal() -> None:
    doc = _trajectory([
        _step(1, "user", "Create hello.txt."),
        _step(2, "agent", '{"commands": [{"keystrokes": "echo hi > hello.txt\\n"}]}',
              tool_calls=[_call("call_0_1", "bash_command", keystrokes="echo hi > hello.txt\n")],
              observation={"results": [{"content": "New Terminal Output:\n$ "}]}),
        _step(3, "agent", '{"task_complete": true}')])
    s, report = _import(doc)
    assert _rendered(s, "sess-1")[2:] == ["user: New Terminal Output:\n$ ",
                                          'assistant: {"task_complete": true}']
    notes = " | ".join(_notes(s, report.runs_created[1]))
    assert "observation result(s) 0 name no tool call (a non-tool action's output): rebuilt " \
           "as the user's messages" in notes
    assert "tool call(s) 'call_0_1' answered by no observation result naming them" in notes


def test_a_step_that_cannot_be_read_is_noted_and_left_out() -> None:
    doc = _stock()
    doc["steps"].insert(3, {"step_id": 4, "source": "environment", "message": "tick"})
    doc["steps"][4]["message"] = {"not": "a message"}  # (the system step after it)
    s, report = _import(doc)
    assert len(report.runs_created) == 2
    notes = " | ".join(_notes(s, report.runs_created[1]))
    assert "steps[3] cannot be read (source 'environment' is not one of system, user, " \
           "agent): left out of the prompts after it" in notes
    assert "steps[4] cannot be read (message must be a text or a list of parts" in notes
    # a call that cannot be read is left out, saying why; the others import
    doc = _stock()
    doc["steps"][2]["tool_calls"][0] = {"tool_call_id": "x", "arguments": {}}
    s, report = _import(doc)
    assert len(report.runs_created) == 1
    assert any(k.where.endswith("steps[2]") and "tool call 0 has no function_name" in k.reason
               for k in report.skipped), report.skipped


def test_images_are_placeholders_by_their_path() -> None:
    image = {"type": "image", "source": {"media_type": "image/png", "path": "images/a.png"}}
    doc = _trajectory([
        _step(1, "user", [{"type": "text", "text": "What is in this image?"}, image]),
        _step(2, "agent", "", tool_calls=[_call("v", "view", path="b.png")],
              observation={"results": [{"source_call_id": "v", "content": [
                  {"type": "text", "text": "a cat"}, {**image, "source": {
                      "media_type": "image/jpeg", "path": "images/b.jpg"}}]}]}),
        _step(3, "agent", "A cat.")], schema_version="ATIF-v1.6")
    s, report = _import(doc)
    msgs = s.memory.get_messages("sess-1")
    urls = [a["url"] for m in msgs for a in m.metadata.get("attachments", [])]
    assert urls == ["images/a.png", "images/b.jpg"]
    assert msgs[2].tool_results()[0].result == "a cat"


def test_an_embedded_subagent_is_a_conversation_of_its_own() -> None:
    doc = _stock()
    doc["schema_version"] = "ATIF-v1.7"
    doc["steps"][2]["tool_calls"].append(_call("call_delegate", "research"))
    doc["steps"][2]["observation"]["results"].append(
        {"source_call_id": "call_delegate",
         "subagent_trajectory_ref": [{"trajectory_id": "sub-1"}]})
    doc["subagent_trajectories"] = [{
        "schema_version": "ATIF-v1.7", "trajectory_id": "sub-1",
        "agent": {"name": "researcher", "version": "1", "model_name": "gpt-5-mini"},
        "steps": [_step(1, "user", "Research GOOGL."), _step(2, "agent", "Done.")]}]
    s, report = _import(doc)
    assert report.threads_created == ["sess-1", "sess-1/sub-1"]
    assert _rendered(s, "sess-1/sub-1") == ["user: Research GOOGL.", "assistant: Done."]
    assert s.runs.get(f"{report.runs_created[2]}:step:0")["model"]["name"] == "gpt-5-mini"
    assert any("delegated to the embedded subagent trajectory 'sub-1' (its own thread) — its "
               "content empty" in n for n in _notes(s, report.runs_created[1]))
    # one in another file is named, not read
    doc["steps"][2]["observation"]["results"][-1]["subagent_trajectory_ref"] = [
        {"trajectory_path": "subagents/sub-2.json"}]
    s, report = _import(doc)
    assert any("the subagent trajectory in 'subagents/sub-2.json', another file: not "
               "imported from this one" in n for n in _notes(s, report.runs_created[1]))


def test_a_replacing_context_boundary_starts_the_prompts_after_it_anew() -> None:
    doc = _stock()
    doc["steps"][3] = _step(4, "system", "Context compaction performed", observation={
        "results": [{"content": "Summary: GOOGL price and volume were found."}]},
        extra={"context_management": {"type": "compaction", "boundary": "replace"}})
    s, report = _import(doc)
    later = report.runs_created[1]
    assert _prompt(s, later) == [("input", "user")]
    assert s.runs.get(f"{later}:prompt")["items"][0]["message"]["content"] == \
        "Summary: GOOGL price and volume were found."
    notes = " | ".join(_notes(s, later))
    assert "steps[3] (system) replaced the agent's context (context_management boundary " \
           "'replace')" in notes
    assert "steps[2]'s observation results, steps[3] (system): in no prompt (the context " \
           "replaced at steps[3]): not imported" in notes


def test_steps_that_are_no_call_of_this_trajectory_are_in_the_prompts_only() -> None:
    doc = _stock()
    doc["steps"][2]["is_copied_context"] = True
    doc["steps"][4]["llm_call_count"] = 3
    s, report = _import(doc)
    (rid,) = report.runs_created
    step = s.runs.get(f"{rid}:step:0")
    assert step["usage_known"] is False  # (the metrics of three calls)
    notes = " | ".join(_notes(s, rid))
    assert "steps[2] (agent) is copied from an earlier trajectory (is_copied_context)" in notes
    assert "the step stands for 3 model calls (llm_call_count), imported as one" in notes
    doc["steps"][2]["is_copied_context"] = None
    doc["steps"][2]["llm_call_count"] = 0
    s, report = _import(doc)
    assert len(report.runs_created) == 1
    assert any("steps[2] (agent) is no model call (llm_call_count 0" in n
               for n in _notes(s, report.runs_created[0]))


def test_what_no_call_was_sent_is_noted_on_the_last_call() -> None:
    doc = _stock()
    doc["steps"].append(_step(6, "user", "Thanks!"))
    doc["continued_trajectory_ref"] = "trajectory.cont-1.json"
    s, report = _import(doc)
    last = " | ".join(_notes(s, report.runs_created[-1]))
    assert "steps[5] (user): after the trajectory's last call, sent in no call it holds: " \
           "not imported" in last
    first = " | ".join(_notes(s, report.runs_created[0]))
    assert "the trajectory continues in 'trajectory.cont-1.json'" in first


@pytest.mark.parametrize(("change", "said"), [
    ({"schema_version": "ATIF-v2.0"},
     "schema_version 'ATIF-v2.0': this importer reads ATIF-v1.0 to ATIF-v1.x"),
    ({"steps": [_step(1, "user", "hi")]},
     "an ATIF trajectory with no agent step to import: it holds no model call"),
    ({"steps": [_step(1, "agent", "hi")]},
     "steps[0]: what this call was sent is not in the trajectory (no step before it)"),
    ({"steps": {"1": "x"}}, "'steps' must be a list"),
])
def test_a_trajectory_with_nothing_to_import_is_refused_saying_why(
        change: dict[str, Any], said: str) -> None:
    with pytest.raises(ImportFormatError, match=re.escape(said)):
        import_text(InMemoryStorage(), json.dumps({**_stock(), **change}))


def test_a_trajectory_without_its_atif_version_is_refused_naming_atif() -> None:
    doc = {"schema_version": "1.0", "session_id": "s1", "agent": {"name": "x"},
           "steps": [{"step_id": 1, "source": "user", "message": "hi"}]}
    with pytest.raises(ImportFormatError) as e:
        import_text(InMemoryStorage(), json.dumps(doc), name="t.json")
    assert "the closest format this importer reads is an ATIF trajectory, " \
           '{"schema_version": "ATIF-v1.7"' in str(e.value)


def test_versions_before_and_after_the_fields_this_reader_knows() -> None:
    doc = copy.deepcopy(_stock())
    doc["schema_version"] = "ATIF-v1.0"
    del doc["agent"]["tool_definitions"]
    s, report = _import(doc)
    rid = report.runs_created[0]
    assert "tools" in s.runs.get(f"{rid}:memctx")["unknown_fields"]
    assert any("tool_definitions are not recorded" in n for n in _notes(s, rid))
    doc["schema_version"] = "ATIF-v1.9"
    doc["steps"][1]["mood"] = "curious"
    s, report = _import(doc)
    notes = " | ".join(_notes(s, report.runs_created[0]))
    assert "ATIF-v1.9 is newer than ATIF-v1.7" in notes
    assert "steps' keys (no field of ATIF up to v1.7): mood: not imported" in notes


def test_the_cli_imports_a_trajectory_file(tmp_path: Path) -> None:
    path = tmp_path / "trajectory.json"
    path.write_text(json.dumps(_stock(), indent=2), encoding="utf-8")
    result = CliRunner().invoke(app, ["import", str(path), "--db", str(tmp_path / "x.db"),
                                      "--embedder", "none"])
    assert result.exit_code == 0, result.output
    assert "1 thread, 6 messages, 0 embeddings, 2 runs" in result.output
    assert "an ATIF-v1.5 trajectory of agent 'harbor-agent' 1.0.0" in result.output
