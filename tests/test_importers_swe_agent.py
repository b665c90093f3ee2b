"""SWE-agent's trajectories (``*.traj``) and mini-swe-agent's (``*.traj.json``): each
model call a run of what it was sent. SWE-agent keeps that with each step from 1.1 on
(``query``); 1.0 kept each step's history after it (``messages``), which the next step
is sent; a trajectory with neither holds only the agent's transcript (``history``,
trimmed before each call) and is refused. mini-swe-agent sends its whole list of
messages each call. The real files are SWE-agent's own demonstration (a 1.0 replay) and
a mini-swe-agent 2.2.7 run (tests/fixtures/imports/real/README.md)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memory_core.cli import app
from memory_core.errors import ImportFormatError
from memory_core.importers import import_file, import_text
from memory_core.storage.duckdb import DuckDBStorage
from memory_core.storage.inmemory import InMemoryStorage

REAL = Path(__file__).parent / "fixtures" / "imports" / "real"
MARSHMALLOW = REAL / "sweagent-marshmallow-code__marshmallow-1867.traj"
MINI = REAL / "minisweagent-pvlib__pvlib-python-1606.traj.json"
SYSTEM = {"role": "system", "content": "You are an autonomous programmer.",
          "agent": "main", "message_type": "system_prompt"}
TASK = {"role": "user", "content": "Fix the bug in fields.py.", "agent": "main",
        "message_type": "observation"}


def _call(i: int, command: str) -> dict[str, Any]:
    return {"id": f"call_{i}", "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": command})}}


def _answer(i: int, text: str, command: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text, "thought": text, "action": command,
            "agent": "main", "tool_calls": [_call(i, command)], "message_type": "action"}


def _output(i: int, text: str) -> dict[str, Any]:
    return {"role": "tool", "content": text, "agent": "main", "message_type": "observation",
            "tool_call_ids": [f"call_{i}"]}


def _step(text: str, command: str, observation: str, **more: Any) -> dict[str, Any]:
    return {"action": command, "observation": observation, "response": text,
            "thought": text, "execution_time": 0.1, "state": {"working_dir": "/testbed"},
            "extra_info": {}, **more}


def _trajectory(steps: list[dict[str, Any]], history: list[dict[str, Any]]
                ) -> dict[str, Any]:
    return {"trajectory": steps, "history": history,
            "info": {"exit_status": "submitted", "model_stats": {
                "instance_cost": 0.02, "tokens_sent": 7141, "tokens_received": 243,
                "api_calls": len(steps)}},
            "replay_config": json.dumps({"agent": {"model": {
                "name": "gpt-4o", "convert_system_to_user": False}}}),
            "environment": "main"}


# the transcript of three steps; the third step's query has the first output elided
A0, O0 = _answer(0, "Let me look around.", "ls"), _output(0, "fields.py\nsetup.py")
A1, O1 = _answer(1, "Open the file.", "cat fields.py"), _output(1, "def total_seconds(): ...")
A2, O2 = _answer(2, "Submit.", "submit"), _output(2, "diff --git a/fields.py")
ELIDED = {**O0, "content": "Old environment output: (2 lines omitted)"}
HISTORY = [SYSTEM, TASK, A0, O0, A1, O1, A2, O2]


def _query_trajectory() -> dict[str, Any]:
    """SWE-agent 1.1: each step keeps its query."""
    return _trajectory([
        _step("Let me look around.", "ls", "fields.py\nsetup.py", query=[SYSTEM, TASK]),
        _step("Open the file.", "cat fields.py", "def total_seconds(): ...",
              query=[SYSTEM, TASK, A0, O0]),
        _step("Submit.", "submit", "diff --git a/fields.py",
              query=[SYSTEM, TASK, A0, ELIDED, A1, O1])], HISTORY)


def _prompt(s: InMemoryStorage, run: str) -> list[tuple[str, str]]:
    """The run's prompt as (role, text): a tool message's text its result."""
    def text(content: Any) -> str:
        return content if isinstance(content, str) else "".join(
            str(p.get("text", p.get("result", ""))) for p in content)
    return [(i["message"]["role"], text(i["message"]["content"]))
            for i in s.runs.get(f"{run}:prompt")["items"]]


def _reasons(report: Any) -> list[str]:
    return [f"{k.where}: {k.reason}" for k in report.skipped]


def test_each_step_is_a_run_of_the_query_it_keeps() -> None:
    """Refused as "a JSON object with keys environment, history, info, …", though each
    step keeps what it was sent. Each step is a run: its query the request (the third
    one with an observation elided, as it was sent), its response and the tool calls
    the history keeps of it the answer; the model the replay config's; no usage, no
    times, no tools offered."""
    s = InMemoryStorage()
    report = import_text(s, json.dumps(_query_trajectory(), indent=2), name="t.traj")
    assert len(report.runs_created) == 3 and report.undated
    first, _, third = report.runs_created
    assert _prompt(s, first) == [("system", SYSTEM["content"]), ("user", TASK["content"])]
    assert ("tool", "Old environment output: (2 lines omitted)") in _prompt(s, third)
    step = s.runs.get(f"{third}:step:0")
    assert step["response"]["text"] == "Submit."
    assert [c["name"] for c in step["response"]["tool_calls"]] == ["bash"]
    assert step["model"]["name"] == "gpt-4o" and step["usage_known"] is False
    memctx = s.runs.get(f"{third}:memctx")
    assert {"tools", "usage"} <= set(memctx["unknown_fields"])
    assert ("file: trajectory[0]: SWE-agent counts usage only for the whole task "
            "(info.model_stats: api_calls 3, tokens_sent 7141, tokens_received 243, "
            "instance_cost 0.02): no call's own is known") in _reasons(report)


def test_a_requeried_step_and_swe_agents_own_exit() -> None:
    """A step whose answer could not be parsed is requeried: its answer is not kept in
    the history (its tool calls unknown, noted), the retry's query sends it back with
    the error. An exit SWE-agent makes itself after an error keeps the empty query
    ``[{}]``: no model call, noted."""
    bad = {"role": "assistant", "content": "I will run ls", "agent": "main",
           "message_type": "assistant"}
    error = {"role": "user", "content": "Your output could not be parsed.", "agent": "main",
             "message_type": "user"}
    doc = _trajectory([
        _step("I will run ls", "", "", query=[SYSTEM, TASK]),
        _step("Let me look around.", "ls", "fields.py\nsetup.py",
              query=[SYSTEM, TASK, bad, error]),
        _step("Exit due to cost limit", "", "Exited (autosubmitted)", query=[{}])],
        HISTORY[:4])
    s = InMemoryStorage()
    report = import_text(s, json.dumps(doc), name="t.traj")
    assert len(report.runs_created) == 2
    assert ("user", "Your output could not be parsed.") in _prompt(s, report.runs_created[1])
    reasons = _reasons(report)
    assert ("line 1: trajectory[0]: its answer is not kept in the history (requeried): its "
            "tool calls, if any, not recorded") in reasons
    assert any(r.startswith("line 1: trajectory[2]: not imported: no model call: SWE-agent's "
                            "own step ('Exit due to cost limit')") for r in reasons), reasons


def test_a_1_0_step_was_sent_the_messages_of_the_step_before() -> None:
    """SWE-agent 1.0 kept with each step the history after it (``messages``), which
    the next step is sent: a step's request is the step before's messages, the first
    step's is kept by no step (noted, not imported), and a step after a requeried one
    (which kept its messages without its answer) was sent what no step keeps."""
    bad = "I will run ls"
    doc = _trajectory([
        _step("Let me look around.", "ls", "fields.py\nsetup.py",
              messages=[SYSTEM, TASK, A0, O0]),
        _step(bad, "", "", messages=[SYSTEM, TASK, A0, O0]),  # requeried: history as before
        _step("Open the file.", "cat fields.py", "def total_seconds(): ...",
              messages=[SYSTEM, TASK, A0, O0, A1, O1]),
        _step("Submit.", "submit", "diff --git a/fields.py",
              messages=[SYSTEM, TASK, A0, ELIDED, A1, O1, A2, O2])], HISTORY)
    s = InMemoryStorage()
    report = import_text(s, json.dumps(doc), name="t.traj")
    assert len(report.runs_created) == 2  # the requeried step, and the last
    requeried, last = report.runs_created
    assert _prompt(s, requeried)[-1] == ("tool", "fields.py\nsetup.py")
    assert s.runs.get(f"{requeried}:step:0")["response"]["text"] == bad
    assert _prompt(s, last)[-1] == ("tool", "def total_seconds(): ...")
    reasons = _reasons(report)
    assert ("line 1: trajectory[0]: not imported: what the first step was sent is kept by no "
            "step (SWE-agent 1.0 keeps with each step the history after it, which the next "
            "step is sent)") in reasons
    assert any(r.startswith("line 1: trajectory[2]: not imported: what it was sent is kept "
                            "by no step: the step before was requeried") for r in reasons)
    assert any(r.endswith("its request is the messages kept with the step before "
                          "(SWE-agent 1.0 keeps with each step the history after it, which "
                          "the next step is sent)") for r in reasons), reasons


@pytest.mark.parametrize("doc", [
    {"history": HISTORY},  # a demonstration
    {k: v for k, v in _query_trajectory().items() if k != "replay_config"} | {
        "trajectory": [{k: v for k, v in step.items() if k != "query"}
                       for step in _query_trajectory()["trajectory"]]}])
def test_a_trajectory_that_keeps_no_step_s_messages_is_refused(doc: dict[str, Any]) -> None:
    with pytest.raises(ImportFormatError, match=(
            r"a SWE-agent trajectory whose steps do not keep what the model was sent: its "
            r"'history' is the agent's transcript, which SWE-agent's history processors "
            r"trim before each call \(old observations elided\), not what each call was "
            r"sent; SWE-agent keeps that with each step from 1.0 on \(a step's 'messages' "
            r"in 1.0, its 'query' from 1.1\)$")):
        import_text(InMemoryStorage(), json.dumps(doc), name="t.traj")


def test_a_malformed_step_is_named_and_the_others_import() -> None:
    doc = _query_trajectory()
    doc["trajectory"][1]["query"] = "not a list"
    doc["trajectory"][2]["query"][3] = {"role": "tool", "content": "x"}  # no call id
    report = import_text(InMemoryStorage(), json.dumps(doc), name="t.traj")
    assert len(report.runs_created) == 1
    reasons = _reasons(report)
    assert any(r.startswith("line 1: trajectory[1]: not imported: a step needs the messages "
                            "it was sent (a list), got 'not a list'") for r in reasons)
    assert any(r.startswith("line 1: trajectory[2]: not imported: message 3: a tool message "
                            "needs its 'tool_call_ids'") for r in reasons), reasons


def _mini() -> dict[str, Any]:
    """mini-swe-agent 2's trajectory: each answer with the API's response in ``extra``."""
    def answer(i: int, command: str, created: int) -> dict[str, Any]:
        message = {"content": "", "role": "assistant", "tool_calls": [_call(i, command)]}
        return {**message, "extra": {"actions": [{"command": command}], "cost": 0.001,
                                     "timestamp": created + 0.5, "response": {
            "id": f"r{i}", "created": created, "model": "deepseek-reasoner",
            "object": "chat.completion",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": message}],
            "usage": {"prompt_tokens": 100 * (i + 1), "completion_tokens": 10,
                      "total_tokens": 100 * (i + 1) + 10}}}}

    def output(i: int, text: str) -> dict[str, Any]:
        return {"content": text, "tool_call_id": f"call_{i}", "role": "tool",
                "extra": {"returncode": 0, "timestamp": 1776075650.0}}

    return {"info": {"model_stats": {"instance_cost": 0.002, "api_calls": 3},
                     "config": {"model": {"model_name": "deepseek/deepseek-reasoner"}},
                     "mini_version": "2.2.7", "exit_status": "Submitted"},
            "messages": [
                {"role": "system", "content": "You are a helpful assistant."},
                {"role": "user", "content": "Fix golden-section search."},
                answer(0, "ls", 1776075645), output(0, "pvlib\nsetup.py"),
                {"role": "user", "content": "Tool call error: no tool call.",
                 "extra": {"interrupt_type": "FormatError", "response": {"id": "r1"}}},
                answer(2, "cat pvlib/tools.py", 1776075653), output(2, "def golden(): ..."),
                {"role": "exit", "content": "", "extra": {"exit_status": "Submitted"}}],
            "trajectory_format": "mini-swe-agent-1.1"}


def test_mini_swe_agent_each_answer_is_a_call_of_every_message_before_it() -> None:
    """mini-swe-agent sends its whole list of messages each call (less their
    ``extra``): each assistant message is a run of the messages before it, answered by
    the response ``extra`` keeps (its usage and time); a format error's call, whose
    answer is not among the messages, is noted; the exit message was never sent."""
    s = InMemoryStorage()
    report = import_text(s, json.dumps(_mini(), indent=2), name="t.traj.json")
    assert len(report.runs_created) == 2 and len(report.threads_created) == 1
    first, second = report.runs_created
    assert [r for r, _ in _prompt(s, second)] == ["system", "user", "assistant", "tool",
                                                  "user"]
    assert _prompt(s, second)[-1] == ("user", "Tool call error: no tool call.")
    step = s.runs.get(f"{second}:step:0")
    assert (step["response"]["usage"]["input_tokens"],
            step["response"]["usage"]["output_tokens"]) == (300, 10)
    assert step["model"]["name"] == "deepseek-reasoner"
    assert s.runs.require_run(first).started_at.timestamp() == 1776075645
    reasons = _reasons(report)
    assert ("file: messages[2]: rebuilt from the transcript; mini-swe-agent sends its whole "
            "history each call") in reasons
    assert any(r.startswith("file: messages[4]: not imported: a call whose answer "
                            "mini-swe-agent could not parse") for r in reasons), reasons
    # a message that is no object: the calls that sent it are named, the first imports
    doc = _mini()
    doc["messages"][3] = "not a message"
    report = import_text(InMemoryStorage(), json.dumps(doc), name="t.traj.json")
    assert len(report.runs_created) == 1
    assert any(r.startswith("line 1: messages[5]: not imported: message 3: a message must "
                            "be an object") for r in _reasons(report)), _reasons(report)


def test_the_real_files_import_verify_and_replay(tmp_path: Path) -> None:
    """SWE-agent's demonstration (a 1.0 replay, 13 steps): 12 runs, the first step's
    request kept by no step; an observation in step 2's messages was sent by step 3's
    call, not step 1's. mini-swe-agent's run: 4 calls, one thread."""
    db = tmp_path / "swe.duckdb"
    runner = CliRunner()
    out = runner.invoke(app, ["import", str(MARSHMALLOW), "--db", str(db),
                              "--embedder", "none"])
    assert out.exit_code == 0, out.output
    assert "12 runs" in out.output and "SWE-agent's 'replay'" in out.output
    with DuckDBStorage(db) as s:
        runs = [r.run_id for r in s.runs.list_runs()]
    assert len(runs) == 12  # steps 1 to 12
    phrase = "Obtaining file:///testbed"  # the observation of step 2
    out = runner.invoke(app, ["why", runs[2], "--text", phrase, "--db", str(db)])
    assert out.output.startswith("sent-by-client"), out.output
    out = runner.invoke(app, ["why", runs[0], "--text", phrase, "--db", str(db)])
    assert out.output.startswith("not-sent-by-client"), out.output
    out = runner.invoke(app, ["verify", "--all", "--db", str(db)])
    assert out.exit_code == 0 and "12 runs checked, 0 tampered" in out.output, out.output
    for run in (runs[0], runs[-1]):
        out = runner.invoke(app, ["replay", run, "--db", str(db)])
        assert out.exit_code == 0 and f"replay of {run}: identical" in out.output, out.output
    s2 = InMemoryStorage()
    report = import_file(s2, MINI)
    assert len(report.runs_created) == 4 and len(report.threads_created) == 1
    assert not report.undated


def test_a_step_s_answer_the_history_does_not_keep_keeps_its_text() -> None:
    """A history whose answers differ from the steps' responses (hand-edited, or a
    step requeried): the answers are the steps' texts, their calls unknown."""
    doc = copy.deepcopy(_query_trajectory())
    doc["history"] = [SYSTEM, TASK]
    s = InMemoryStorage()
    report = import_text(s, json.dumps(doc), name="t.traj")
    assert len(report.runs_created) == 3
    step = s.runs.get(f"{report.runs_created[0]}:step:0")
    assert step["response"]["text"] == "Let me look around."
    assert not step["response"].get("tool_calls")


def test_the_parameters_each_call_was_sent_are_the_config_s_or_unknown() -> None:
    """Neither SWE-agent's steps nor mini-swe-agent's messages keep what each call was
    sent with; the trajectory's model config does: SWE-agent's temperature, top_p, a
    stop list and completion_kwargs, mini-swe-agent's model_kwargs (litellm's own
    options not sent). Without a config the parameters are unknown, not "none"."""
    doc = _query_trajectory()
    doc["replay_config"] = json.dumps({"agent": {"model": {
        "name": "gpt-4o", "temperature": 0.0, "top_p": 1.0, "stop": [],
        "completion_kwargs": {"max_tokens": 512, "num_retries": 3},
        "per_instance_cost_limit": 3.0}}})
    s = InMemoryStorage()
    report = import_text(s, json.dumps(doc), name="t.traj")
    for run in report.runs_created:
        assert s.runs.get(f"{run}:import")["request_params"] == {
            "temperature": 0.0, "top_p": 1.0, "max_tokens": 512}
        assert "params" not in s.runs.get(f"{run}:memctx")["unknown_fields"]
        assert s.runs.get(f"{run}:step:0")["model"]["temperature"] == 0.0
    notes = s.runs.get(f"{report.runs_created[0]}:import")["notes"]
    assert any("as the trajectory's config sets them (replay_config.agent.model); its "
               "other settings (num_retries) not read as sent" in n
               for n in notes), notes
    doc["replay_config"] = json.dumps({"agent": {"model": {"name": "gpt-4o"}}})
    report = import_text(s := InMemoryStorage(), json.dumps(doc), name="t.traj")
    assert all(s.runs.get(f"{run}:import")["request_params"] == {}
               and "params" in s.runs.get(f"{run}:memctx")["unknown_fields"]
               for run in report.runs_created)
    mini = _mini()
    mini["info"]["config"]["model"]["model_kwargs"] = {"drop_params": True, "seed": 7}
    report = import_text(s := InMemoryStorage(), json.dumps(mini), name="m.traj.json")
    assert report.runs_created and all(
        s.runs.get(f"{run}:import")["request_params"] == {"seed": 7}
        for run in report.runs_created)
    report = import_text(s := InMemoryStorage(), json.dumps(_mini()), name="m.traj.json")
    assert all("params" in s.runs.get(f"{run}:memctx")["unknown_fields"]
               for run in report.runs_created)
