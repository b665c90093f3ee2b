"""Requests of one session (a thread key: OpenInference's ``session.id``, LangSmith's
``thread_id`` …) that are not one conversation: a subagent called as a tool, a branch.

Modelled on Arize Phoenix's ``pxi_turn_subagent_trace.json`` (an outside trial on
2026-12-07; the file is under the Elastic License 2.0, so its structure is rebuilt
here, not the file kept): every span of the turn carries the session's id, the
subagent's calls (under the parent's TOOL span) send their own conversation, and the
parent's last call sends its history again with the subagent's result. The subagent's
messages were appended to the session's thread, and the parent's history was stored a
second time after them, without a word."""

from __future__ import annotations

import json
from typing import Any

from memory_core.importers import import_text
from memory_core.storage.inmemory import InMemoryStorage

SESSION = "turn-session"


def _msg(i: int, m: dict[str, Any], side: str = "input") -> dict[str, Any]:
    at = f"llm.{side}_messages.{i}.message"
    out = {f"{at}.role": m["role"]}
    if "content" in m:
        out[f"{at}.content"] = m["content"]
    if "call" in m:
        out[f"{at}.tool_calls.0.tool_call.id"] = m["call"]
        out[f"{at}.tool_calls.0.tool_call.function.name"] = m["name"]
        out[f"{at}.tool_calls.0.tool_call.function.arguments"] = "{}"
    if "answers" in m:
        out[f"{at}.tool_call_id"] = m["answers"]
    return out


def _llm(sid: str, parent: str, minute: int, sent: list[dict[str, Any]],
         answer: dict[str, Any], tools: list[str] | None = None,
         session: str | None = SESSION) -> dict[str, Any]:
    attrs: dict[str, Any] = {"llm.model_name": "claude-fable-5",
                             "llm.input_messages.0.message.role": "system",
                             "llm.input_messages.0.message.content": "You are an analyst."}
    for i, m in enumerate(sent, start=1):
        attrs |= _msg(i, m)
    attrs |= _msg(0, answer, "output")
    for j, name in enumerate(tools or []):
        attrs[f"llm.tools.{j}.tool.json_schema"] = json.dumps(
            {"type": "function", "function": {"name": name, "parameters": {}}}
            if name else {})
    if session is not None:
        attrs["session.id"] = session
    return {"name": "claude-fable-5", "context": {"trace_id": "t1", "span_id": sid},
            "span_kind": "LLM", "parent_id": parent,
            "start_time": f"2026-07-23T00:{minute:02d}:00+00:00",
            "end_time": f"2026-07-23T00:{minute:02d}:30+00:00", "status_code": "OK",
            "attributes": attrs, "events": []}


def _other(sid: str, parent: str | None, kind: str, name: str) -> dict[str, Any]:
    return {"name": name, "context": {"trace_id": "t1", "span_id": sid},
            "span_kind": kind, "parent_id": parent,
            "start_time": "2026-07-23T00:00:00+00:00", "end_time": "2026-07-23T00:59:00+00:00",
            "status_code": "OK", "attributes": {"session.id": SESSION}, "events": []}


U1 = {"role": "user", "content": "what happened in the previous trace?"}
A1 = {"role": "assistant", "content": "The export job failed twice."}
U2 = {"role": "user", "content": "please delegate this analysis"}
CALL = {"role": "assistant", "call": "call-02", "name": "call_subagent"}
RESULT = {"role": "tool", "content": "the disk of node 7 was full", "answers": "call-02"}
DONE = {"role": "assistant", "content": "The delegated analysis is complete: a full disk."}
S1 = {"role": "user", "content": "inspect the example project"}
S_CALL = {"role": "assistant", "call": "call-s1", "name": "bash"}
S_RES = {"role": "tool", "content": "df: /dev/sda1 100%", "answers": "call-s1"}
S_DONE = {"role": "assistant", "content": "the disk of node 7 was full"}


def _turn(tools: tuple[list[str], list[str]] | None = None) -> list[dict[str, Any]]:
    parent_tools, sub_tools = tools or (None, None)
    return [
        _other("s01", None, "AGENT", "turn"),
        _llm("s02", "s01", 1, [U1, A1, U2], CALL, parent_tools),
        _other("s03", "s01", "TOOL", "call_subagent"),
        _other("s04", "s03", "AGENT", "subagent"),
        _llm("s05", "s04", 2, [S1], S_CALL, sub_tools),
        _llm("s07", "s04", 3, [S1, S_CALL, S_RES], S_DONE, sub_tools),
        _llm("s38", "s01", 4, [U1, A1, U2, CALL, RESULT], DONE, parent_tools)]


def _texts(s: InMemoryStorage, tid: str) -> list[str]:
    """Each message's text, a call as "→ NAME", a result as its output."""
    out = []
    for stored in s.memory.get_messages(tid):
        m = stored.as_message()
        results = [str(p.result) for p in m.tool_results()]
        out.append(m.text() or (results[0] if results else
                                "→ " + ",".join(c.name for c in m.tool_calls())))
    return out


def test_a_subagent_s_calls_in_the_parent_s_session_are_a_thread_of_their_own() -> None:
    s = InMemoryStorage()
    report = import_text(s, json.dumps(_turn()), name="turn.json")
    assert report.threads_created == [SESSION, f"{SESSION}~2"]
    # the parent's conversation whole, once: its last call continues its first
    assert _texts(s, SESSION) == [U1["content"], A1["content"], U2["content"],
                                  "→ call_subagent", RESULT["content"], DONE["content"]]
    assert _texts(s, f"{SESSION}~2") == [S1["content"], "→ bash", S_RES["content"],
                                         S_DONE["content"]]
    runs = {s.runs.require_run(r).thread_id for r in report.runs_created}
    assert runs == {SESSION, f"{SESSION}~2"}
    said = [k.reason for k in report.skipped if k.where == "span s05 (claude-fable-5)"]
    assert any(f"continues none of session {SESSION}'s conversations" in r
               and f"stored as thread {SESSION}~2" in r for r in said), said
    # the subagent's thread is no branch of the parent's: they share no message
    assert s.memory.get_thread(f"{SESSION}~2").parent_thread_id is None  # type: ignore[union-attr]


def test_a_session_that_sends_only_new_messages_stays_one_thread() -> None:
    """A tracer that records only each call's new messages under a session id: no
    request continues another, and they are one conversation, in order."""
    spans = [_llm("a1", "r", 1, [U1], A1), _llm("a2", "r", 2, [U2], DONE)]
    s = InMemoryStorage()
    report = import_text(s, json.dumps(spans), name="turn.json")
    assert report.threads_created == [SESSION]
    assert _texts(s, SESSION) == [U1["content"], A1["content"], U2["content"],
                                  DONE["content"]]


def test_a_request_of_the_session_that_goes_on_otherwise_is_a_branch() -> None:
    """A request that sends the session's first messages, then another one (a user who
    edited their question), is a branch of that thread, not its history appended
    again."""
    edited = {"role": "user", "content": "please delegate this analysis to the ops agent"}
    spans = [_llm("b1", "r", 1, [U1, A1, U2], CALL), _llm("b2", "r", 2, [U1, A1, edited], DONE)]
    s = InMemoryStorage()
    report = import_text(s, json.dumps(spans), name="turn.json")
    assert report.threads_created == [SESSION, f"{SESSION}~2"]
    assert _texts(s, SESSION) == [U1["content"], A1["content"], U2["content"],
                                  "→ call_subagent"]
    assert _texts(s, f"{SESSION}~2") == [U1["content"], A1["content"], edited["content"],
                                         DONE["content"]]
    assert s.memory.get_thread(f"{SESSION}~2").parent_thread_id == SESSION  # type: ignore[union-attr]
    said = [k.reason for k in report.skipped if k.where == "span b2 (claude-fable-5)"]
    assert any(f"shares its first 2 message(s) with thread {SESSION}" in r for r in said), said


def test_the_same_file_imported_again_finds_the_session_s_threads_done() -> None:
    """The session's second thread is named by its place, so an import of the file
    again finds it done."""
    s = InMemoryStorage()
    text = json.dumps(_turn())
    first = import_text(s, text, name="turn.json")
    again = import_text(s, text, name="turn.json")
    assert again.already_imported and first.threads_created == [SESSION, f"{SESSION}~2"]


def test_tools_offered_whose_definitions_were_all_blanked_are_unknown() -> None:
    """Phoenix's fixture blanks every tool definition to ``{}``: the tools were offered,
    but which is not recorded — so no call is said to name a tool "not offered"."""
    s = InMemoryStorage()
    report = import_text(s, json.dumps(_turn(([""] * 3, [""] * 2))), name="turn.json")
    notes = [k.reason for k in report.skipped]
    assert not [n for n in notes if "did not offer" in n], notes
    assert any("none of the 3 tool definitions in llm.tools could be read: the tools "
               "offered are unknown" in n for n in notes), notes
    step = s.runs.get(f"{report.runs_created[0]}:step:0")
    memctx = s.runs.get(f"{report.runs_created[0]}:memctx")
    assert "tools" in memctx["unknown_fields"] and not step["tools"]


def test_a_blanked_definition_beside_named_ones_leaves_the_named_offered() -> None:
    s = InMemoryStorage()
    report = import_text(s, json.dumps(_turn((["", "call_subagent"], ["bash"]))),
                         name="turn.json")
    notes = [k.reason for k in report.skipped]
    assert not [n for n in notes if "did not offer" in n or "are unknown" in n], notes
    assert any("llm.tools[0] not read, left out of the tools offered" in n for n in notes)
    step = s.runs.get(f"{report.runs_created[0]}:step:0")
    assert [t["name"] for t in step["tools"]] == ["call_subagent"]
