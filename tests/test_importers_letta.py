"""Letta's agent files (``.af``): each answer of the agent a run whose prompt is rebuilt
as Letta builds a request — the system message in effect (written anew whenever the
memory changes), then the messages in the agent's context, a summary taking the place
of those before it. The real files are Letta's own test agent files
(tests/fixtures/imports/real/README.md); the small ones below are written after them."""

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
CONVO = REAL / "letta-memgpt_agent_with_convo.af"
V2 = REAL / "letta-test_agent.af"


def _prompt(s: InMemoryStorage, rid: str) -> list[dict[str, Any]]:
    return s.runs.get(f"{rid}:prompt")["items"]


def _text(item: dict[str, Any]) -> str:
    content = item["message"]["content"]
    return content if isinstance(content, str) else " ".join(
        p.get("text", "") for p in content if isinstance(p, dict))


def _notes(s: InMemoryStorage, rid: str) -> list[str]:
    return s.runs.get(f"{rid}:import")["notes"]


def _msg(role: str, text: str | None, at: str, **extra: Any) -> dict[str, Any]:
    """A message as Letta exports it: its content a list of parts."""
    return {"role": role, "content": [] if text is None else [{"type": "text", "text": text}],
            "created_at": at, "model": "gpt-4o-mini" if role != "user" else None,
            "tool_calls": None, "tool_call_id": None, "tool_returns": [], **extra}


def _call(i: int, name: str = "send_message", **args: Any) -> dict[str, Any]:
    return {"id": f"call_{i}", "type": "function",
            "function": {"name": name, "arguments": json.dumps(args or {"message": "ok"})}}


def _result(i: int, text: str, at: str) -> dict[str, Any]:
    return _msg("tool", text, at, tool_call_id=f"call_{i}")


def _user(text: str, at: str) -> dict[str, Any]:
    return _msg("user", json.dumps({"type": "user_message", "message": text}), at)


def _agent(messages: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    """Letta ≤ 0.10's export of one agent."""
    return {"agent_type": "memgpt_agent", "name": "helper", "system": "You help.",
            "llm_config": {"model": "gpt-4o-mini", "temperature": 0.7},
            "core_memory": [], "tool_rules": [], "message_buffer_autoclear": False,
            "tools": [{"name": "send_message", "json_schema": {
                "name": "send_message", "description": "Say it.",
                "parameters": {"type": "object", "properties": {
                    "message": {"type": "string"}}}}}],
            "messages": messages,
            "in_context_message_indices": list(range(len(messages))), **fields}


def _v2(messages: list[dict[str, Any]], context: list[str]) -> dict[str, Any]:
    """Letta's ``AgentFileSchema`` export of one agent: its context only, by ids."""
    return {"agents": [{"id": "agent-0", "name": "helper", "agent_type": "letta_v1_agent",
                        "llm_config": {"model": "gpt-4o-mini"}, "tool_ids": ["tool-0"],
                        "messages": messages, "in_context_message_ids": context}],
            "tools": [{"id": "tool-0", "name": "Bash", "json_schema": {
                "name": "Bash", "description": "Run it.", "parameters": {}}}],
            "blocks": [], "groups": [], "files": [], "sources": [], "mcp_servers": []}


SYS = "2025-01-01T10:00:00"


def test_a_letta_agent_file_is_read_as_the_calls_its_agent_made() -> None:
    # refused before as "an Anthropic Messages API record" (its 'system' and 'messages')
    s = InMemoryStorage()
    report = import_file(s, CONVO)
    assert len(report.runs_created) == 27 and report.apis == ["openai"]
    runs = report.runs_created
    # each call's instructions: the system message Letta wrote before it, from the
    # memory as it then was (the human block edited before the second call)
    first, second, last = (" ".join(_text(i) for i in _prompt(s, r)
                                    if i["lane"] == "instructions") for r in
                           (runs[0], runs[1], runs[-1]))
    assert "First name: Chad" in first and "First name: Sarah" in second
    assert "Jean-Luc" in last and "First name: Sam" not in last  # (written after it)
    # the first call was sent the boot messages and the user's, not the system messages
    # Letta wrote later: one system message, as instructions
    roles = [(i["lane"], i["message"]["role"]) for i in _prompt(s, runs[0])]
    assert roles == [("instructions", "system"), ("recent", "assistant"), ("input", "tool"),
                     ("input", "user"), ("input", "user")]
    assert s.runs.get(f"{runs[0]}:step:0")["model"]["name"] == "gpt-4-0613"
    assert "tools" not in s.runs.get(f"{runs[0]}:memctx")["unknown_fields"]


def test_after_a_summary_the_calls_are_a_thread_of_their_own_beginning_with_it() -> None:
    s = InMemoryStorage()
    report = import_file(s, CONVO)
    before, after = report.threads_created
    assert after == f"{before}-summary-1"
    summarised = report.runs_created[24]  # the call answering "am I your friend?"
    assert s.runs.require_run(summarised).thread_id == after
    sent = [_text(i) for i in _prompt(s, summarised) if i["lane"] != "instructions"]
    assert len(sent) == 2 and "have been hidden from view" in sent[0]
    assert "am I your friend?" in sent[1]
    said = " ".join(_notes(s, summarised))
    assert "the summary messages[81] took the place of the messages before it" in said
    assert f"as thread {after}, the messages before it in thread {before}" in said
    later = " ".join(_notes(s, report.runs_created[-1]))
    assert f"begins with Letta's summary messages[81]; the conversation before it is " \
           f"thread {before}" in later


def test_why_says_a_phrase_said_before_the_summary_was_not_sent(tmp_path: Path) -> None:
    db = tmp_path / "letta.duckdb"
    runner = CliRunner()
    out = runner.invoke(app, ["import", str(CONVO), "--db", str(db), "--embedder", "none"])
    assert out.exit_code == 0 and "27 runs" in out.output, out.output
    with DuckDBStorage(db) as s:
        runs = [r.run_id for r in s.runs.list_runs()]
    out = runner.invoke(app, ["why", runs[-1], "--text", "not chad", "--db", str(db)])
    assert out.output.startswith("not-sent-by-client"), out.output
    out = runner.invoke(app, ["why", runs[-1], "--text", "am I your friend", "--db", str(db)])
    assert out.output.startswith("sent-by-client"), out.output
    out = runner.invoke(app, ["inspect", runs[-1], "--db", str(db)])
    assert "tools offered: archival_memory_search" in out.output, out.output
    assert "rebuilt from the agent's messages" in out.output


def test_an_agent_file_schema_export_leaves_out_the_approvals_letta_does_not_send() -> None:
    s = InMemoryStorage()
    report = import_file(s, V2)
    assert len(report.runs_created) == 7 and len(report.threads_created) == 1
    reasons = " ".join(k.reason for k in report.skipped)
    assert "messages[3] (approval), messages[6] (approval), messages[11] (approval), " \
           "messages[14] (approval): the user's answers to tool calls" in reasons
    # the denied call's result, as the tool message after the approval says it
    msgs = s.memory.get_messages(report.threads_created[0])
    denied = [r.result for m in msgs for r in m.tool_results() if "denied" in r.result]
    assert len(denied) == 1 and "User reason: just stop" in denied[0]
    # the last answer asked to run three tools at once: one answer, three calls
    last = s.runs.get(f"{report.runs_created[-1]}:step:0")["response"]["tool_calls"]
    assert [c["name"] for c in last] == ["Bash"] * 3


def test_an_assistant_message_and_the_approval_after_it_are_one_answer() -> None:
    # Letta stores an answer's calls that need approval apart from the others
    messages = [
        {**_msg("system", "You help.", SYS), "id": "m0"},
        {**_user("list and run", "2025-01-01T10:00:01"), "id": "m1"},
        {**_msg("assistant", "Two things.", "2025-01-01T10:00:02",
                tool_calls=[_call(1, "Bash", command="ls")]), "id": "m2"},
        {**_msg("approval", None, "2025-01-01T10:00:02.1",
                tool_calls=[_call(2, "Bash", command="rm x")]), "id": "m3"},
        {**_msg("approval", None, "2025-01-01T10:00:05",
                approvals=[{"type": "approval", "tool_call_id": "call_2",
                            "approve": True}]), "id": "m4"},
        {**_msg("tool", None, "2025-01-01T10:00:06", tool_returns=[
            {"tool_call_id": "call_1", "status": "success", "func_response": "a b"},
            {"tool_call_id": "call_2", "status": "success", "func_response": "done"}]),
         "id": "m5"},
        {**_msg("assistant", "Both ran.", "2025-01-01T10:00:07"), "id": "m6"}]
    s = InMemoryStorage()
    report = import_text(s, json.dumps(_v2(messages, [m["id"] for m in messages])),
                         name="a.af")
    assert len(report.runs_created) == 2
    answer = s.runs.get(f"{report.runs_created[0]}:step:0")["response"]
    assert [c["id"] for c in answer["tool_calls"]] == ["call_1", "call_2"]
    sent = [(i["lane"], i["message"]["role"]) for i in _prompt(s, report.runs_created[1])]
    assert sent == [("instructions", "system"), ("recent", "user"), ("recent", "assistant"),
                    ("input", "tool"), ("input", "tool")]


def test_a_call_before_a_summary_an_export_of_the_context_does_not_hold_is_left_out(
) -> None:
    # an AgentFileSchema export holds the context: the summary first, whenever written,
    # then what it kept; what the earlier call was sent beside these is not in the file
    messages = [
        {**_msg("system", "You help.", SYS), "id": "m0"},
        {**_msg("user", json.dumps({"type": "system_alert", "message": "Note: prior "
                                    "messages have been hidden from view. Summary: hi."}),
                "2025-01-01T10:05:00"), "id": "m9"},
        {**_msg("assistant", "Earlier answer.", "2025-01-01T10:01:00"), "id": "m5"},
        {**_user("and now?", "2025-01-01T10:06:00"), "id": "m10"},
        {**_msg("assistant", "Now this.", "2025-01-01T10:06:05"), "id": "m11"}]
    s = InMemoryStorage()
    report = import_text(s, json.dumps(_v2(messages, [m["id"] for m in messages])),
                         name="a.af")
    assert len(report.runs_created) == 1 and len(report.threads_created) == 1
    skipped = {k.where: k.reason for k in report.skipped}
    assert skipped["line 1: agents[0]: messages[2]"].startswith(
        "not imported: what this call was sent is not all in the file")
    roles = [_text(i)[:20] for i in _prompt(s, report.runs_created[0])]
    assert roles == ["You help.", '{"type": "system_ale', "Earlier answer.",
                     '{"type": "user_messa']


def test_with_autoclear_each_input_starts_from_the_system_message() -> None:
    messages = [_msg("system", "You help.", SYS), _user("one", "2025-01-01T10:00:01"),
                _msg("assistant", "First.", "2025-01-01T10:00:02", tool_calls=[_call(1)]),
                _result(1, "sent", "2025-01-01T10:00:03"),
                _msg("user", json.dumps({"type": "heartbeat", "reason": "go on"}),
                     "2025-01-01T10:00:04"),
                _msg("assistant", "Second.", "2025-01-01T10:00:05"),
                _user("two", "2025-01-01T10:01:00"),
                _msg("assistant", "Third.", "2025-01-01T10:01:02")]
    s = InMemoryStorage()
    report = import_text(s, json.dumps(_agent(
        messages, message_buffer_autoclear=True, in_context_message_indices=[0])),
        name="a.af")
    sizes = [len(_prompt(s, r)) for r in report.runs_created]
    assert sizes == [2, 5, 2]  # (the heartbeat goes on the same input's step)
    assert not [k for k in report.skipped if "evicted" in k.reason]


def test_messages_out_of_the_context_that_no_summary_explains_are_noted() -> None:
    messages = [_msg("system", "You help.", SYS), _user("one", "2025-01-01T10:00:01"),
                _msg("assistant", "First.", "2025-01-01T10:00:02"),
                _user("two", "2025-01-01T10:01:00"),
                _msg("assistant", "Second.", "2025-01-01T10:01:02")]
    s = InMemoryStorage()
    report = import_text(s, json.dumps(_agent(messages,
                                              in_context_message_indices=[0, 3, 4])),
                         name="a.af")
    assert len(report.runs_created) == 2
    notes = " ".join(_notes(s, report.runs_created[1]))
    assert "its prompt holds messages[1] (user), messages[2] (assistant), not in the " \
           "agent's context at the end: Letta evicted them at a time the file does not " \
           "say" in notes


def test_a_broken_message_is_noted_and_the_rest_of_the_agent_imports() -> None:
    doc = json.loads(CONVO.read_text(encoding="utf-8"))
    bad = copy.deepcopy(doc)
    bad["messages"][5]["tool_calls"] = "oops"  # an answer: its call is left out
    bad["messages"][11]["content"] = 42  # a user's message: left out of the prompts
    s = InMemoryStorage()
    report = import_text(s, json.dumps(bad), name="bad.af")
    assert len(report.runs_created) == 26
    skipped = {k.where: k.reason for k in report.skipped if k.reason.startswith("not imp")}
    assert skipped["line 1: messages[5]"] == ("not imported: 'tool_calls' must be a list of "
                                               "calls, got 'oops'")
    notes = " ".join(_notes(s, report.runs_created[2]))
    assert "its prompt would hold messages[11], which cannot be read ('content' must be a " \
           "list of parts or a text, got 42): left out" in notes


def test_an_agent_file_with_no_answer_is_refused_as_letta_s() -> None:
    messages = [_msg("system", "You help.", SYS),
                _msg("assistant", "Bootup sequence complete.", SYS, tool_calls=[_call(1)]),
                _result(1, "ok", SYS)]
    with pytest.raises(ImportFormatError) as e:
        import_text(InMemoryStorage(), json.dumps(_agent(messages)), name="a.af")
    assert str(e.value) == (
        "line 1: a Letta agent file (agent 'helper') with no answer of its model to "
        "import: its 3 message(s) (1 system, 1 assistant, 1 tool) hold none; "
        "messages[1] (assistant) is Letta's initial message sequence, no model call (an "
        "agent exported before anyone talked to it)")
    broken = _agent([])
    broken["messages"] = {"0": "x"}
    with pytest.raises(ImportFormatError, match="^line 1: a Letta agent file \\(agent "
                                                "'helper'\\): 'messages' must be a list"):
        import_text(InMemoryStorage(), json.dumps(broken), name="a.af")


def test_an_agent_file_written_as_a_json_string_is_read_as_the_file_it_holds() -> None:
    messages = [_msg("system", "You help.", SYS), _user("one", "2025-01-01T10:00:01"),
                _msg("assistant", "First.", "2025-01-01T10:00:02")]
    s = InMemoryStorage()
    report = import_text(s, json.dumps(json.dumps(_agent(messages))), name="a.af")
    assert len(report.runs_created) == 1
    assert any("encoded twice" in k.reason for k in report.skipped)


def test_a_system_message_letta_rewrote_after_a_call_is_said_not_to_be_what_it_sent(
) -> None:
    # Letta 0.10 rewrites its one system message at each step (the time, the counts it
    # states): its updated_at, after all but the last call, says the file holds a later
    # version than they were sent
    s = InMemoryStorage()
    report = import_file(s, REAL / "letta-max_messages.af")
    said = "its instructions are the system message messages[0] as Letta last rewrote it, " \
           "at 2025-08-08T18:14:30.450553+00:00, after this call"
    assert all(any(said in n for n in _notes(s, r)) for r in report.runs_created[:-1])
    assert not any(said in n for n in _notes(s, report.runs_created[-1]))
    # an AgentFileSchema message keeps no updated_at: what may be so is said
    s = InMemoryStorage()
    report = import_file(s, V2)
    assert any("so this call may have been sent an earlier version" in n
               for n in _notes(s, report.runs_created[0]))
