"""Gemini CLI's chat files (``chats/session-*.json``, and the ``.jsonl`` log gemini-cli
writes since April 2026): each model answer one run, its prompt rebuilt from the
messages before it as gemini-cli sends it (noted), tool results from the answer's
``toolCalls`` (or the user message holding them), usage from ``tokens``; what the
terminal showed (``info``, ``error``, ``warning``) noted, never imported. The sessions
here are built from gemini-cli's own types (``chatRecordingTypes.ts``)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from memory_core.errors import ImportFormatError
from memory_core.importers import import_text
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import ToolCallPart, ToolResultPart
from tests.helpers import prompt_texts

SESSION = {"sessionId": "0b23371a-ce2e-4b1c-81a0-44af5d94d9ce", "projectHash": "2d33ff91",
           "startTime": "2026-03-18T01:46:08.000Z", "lastUpdated": "2026-03-18T01:47:00.000Z",
           "kind": "main"}
TOKENS = {"input": 7295, "output": 34, "cached": 5000, "thoughts": 37, "tool": 0,
          "total": 7366}


def _call(cid: str, name: str, args: dict[str, Any], output: str,
          status: str = "success") -> dict[str, Any]:
    return {"id": cid, "name": name, "args": args, "status": status,
            "timestamp": "2026-03-18T01:46:11.000Z", "displayName": name,
            "result": [{"functionResponse": {"id": cid, "name": name,
                                             "response": {"output": output}}}]}


MESSAGES = [
    {"id": "m0", "timestamp": "2026-03-18T01:46:08.884Z", "type": "user",
     "content": [{"text": "Count the lines of poem.md"}]},
    {"id": "m1", "timestamp": "2026-03-18T01:46:10.659Z", "type": "gemini",
     "content": "I will count them.", "model": "gemini-2.5-pro", "tokens": TOKENS,
     "thoughts": [{"subject": "Planning", "description": "wc -l",
                   "timestamp": "2026-03-18T01:46:09.000Z"}],
     "toolCalls": [_call("run_shell_command-1", "run_shell_command",
                         {"command": "wc -l poem.md"}, "5 poem.md")]},
    {"id": "m2", "timestamp": "2026-03-18T01:46:12.000Z", "type": "info",
     "content": "Loaded cached credentials."},
    {"id": "m3", "timestamp": "2026-03-18T01:46:15.000Z", "type": "gemini",
     "content": "poem.md has 5 lines.", "model": "gemini-2.5-pro",
     "tokens": {**TOKENS, "input": 7400, "output": 9, "thoughts": 0}},
]


def _imported(text: str, name: str = "session-2026-03-18T01-46-0b23371a.json"
              ) -> tuple[InMemoryStorage, Any]:
    s = InMemoryStorage()
    return s, import_text(s, text, name=name)


def _rendered(s: InMemoryStorage, tid: str) -> list[str]:
    out = []
    for m in s.memory.get_messages(tid):
        bits = [f"→{p.name}" if isinstance(p, ToolCallPart) else
                f"{p.name}={p.result}" if isinstance(p, ToolResultPart) else p.text
                for p in m.parts]
        out.append(f"{m.role}: {' '.join(bits)}")
    return out




def test_a_session_imports_each_answer_as_a_run_its_prompt_rebuilt() -> None:
    s, report = _imported(json.dumps({**SESSION, "messages": MESSAGES}, indent=2))
    (tid,) = report.threads_created
    assert _rendered(s, tid) == [
        "user: Count the lines of poem.md",
        "assistant: I will count them. →run_shell_command",
        "tool: run_shell_command={'output': '5 poem.md'}",
        "assistant: poem.md has 5 lines."]
    first, second = (s.runs.get_run(r) for r in report.runs_created)
    assert first.started_at == datetime(2026, 3, 18, 1, 46, 8, 884000, tzinfo=UTC)
    # sent when its tool ended, answered at its own time
    assert second.started_at == datetime(2026, 3, 18, 1, 46, 11, tzinfo=UTC)
    step = s.runs.get(f"{report.runs_created[0]}:step:0")
    assert step["model"]["name"] == "gemini-2.5-pro"
    usage = step["response"]["usage"]
    # the thoughts are billed as output: counted there, as the Gemini API's are read
    assert (usage["input_tokens"], usage["output_tokens"]) == (7295, 34 + 37)
    record = s.runs.get(f"{report.runs_created[0]}:import")
    assert record["extra"]["usage_detail"] == {"reasoning": 37, "cached_input": 5000}
    sent = prompt_texts(s, report.runs_created[1])
    assert [r for r, _ in sent] == ["user", "assistant", "tool"]
    assert "tools" in s.runs.get(f"{report.runs_created[0]}:memctx")["unknown_fields"]
    reasons = [k.reason for k in report.skipped]
    assert sum("its prompt is rebuilt from the Gemini CLI session" in r
               for r in reasons) == 2
    assert "the session's messages of what the terminal showed, never sent to the model, " \
           "not imported: info" in reasons
    assert "its 1 thought(s) (the model's reasoning summaries) not imported" in reasons


def _jsonl(*lines: Any) -> str:
    return "\n".join(json.dumps(x) for x in lines) + "\n"


def test_the_jsonl_log_is_read_as_gemini_cli_resumes_it() -> None:
    """A message written again replaces the earlier copy in its place; ``$rewindTo``
    cuts the session there; the tool results recorded as a user message of their own
    (gemini-cli since May 2026) are sent as they are, not again from ``toolCalls``; a
    line cut short is a note."""
    call = _call("read_file_1", "read_file", {"file_path": "a.txt"}, "alpha")
    text = _jsonl(
        SESSION,
        {"id": "u1", "timestamp": "2026-05-20T10:00:00.000Z", "type": "user",
         "content": [{"text": "What is in a.txt?"}]},
        {"$set": {"lastUpdated": "2026-05-20T10:00:00.000Z"}},
        {"id": "g1", "timestamp": "2026-05-20T10:00:02.000Z", "type": "gemini",
         "content": "", "model": "gemini-3-flash-preview", "thoughts": []},
        {"id": "g1", "timestamp": "2026-05-20T10:00:02.000Z", "type": "gemini",
         "content": "", "model": "gemini-3-flash-preview", "thoughts": [], "tokens": TOKENS,
         "toolCalls": [call]},
        {"id": "u2", "timestamp": "2026-05-20T10:00:03.000Z", "type": "user",
         "content": call["result"]},
        {"id": "g2", "timestamp": "2026-05-20T10:00:05.000Z", "type": "gemini",
         "content": "It says alpha.", "model": "gemini-3-flash-preview", "tokens": TOKENS},
        {"id": "u3", "timestamp": "2026-05-20T10:01:00.000Z", "type": "user",
         "content": "no, say beta"},
        {"id": "g3", "timestamp": "2026-05-20T10:01:02.000Z", "type": "gemini",
         "content": "beta", "model": "gemini-3-flash-preview", "tokens": TOKENS},
        {"$rewindTo": "u3"},
        {"id": "u4", "timestamp": "2026-05-20T10:02:00.000Z", "type": "user",
         "content": "thanks"},
    ) + '{"id": "g4", "timestamp": "2026-05-20T10:02:0'
    s, report = _imported(text, name="session-2026-05-20T10-00-0b23371a.jsonl")
    (tid,) = report.threads_created
    assert _rendered(s, tid) == [
        "user: What is in a.txt?", "assistant: →read_file",
        "tool: read_file={'output': 'alpha'}", "assistant: It says alpha."]
    assert len(report.runs_created) == 2
    reasons = [k.reason for k in report.skipped]
    assert any("2 message(s) rewound away ($rewindTo) not imported" in r for r in reasons)
    assert any("1 line(s) write a message again" in r for r in reasons)
    assert any(k.where == "line 12" and k.reason.startswith("not imported:")
               for k in report.skipped), report.skipped


def test_a_replaced_history_and_gemini_clis_own_turns() -> None:
    """``$set`` with ``messages`` replaces the session (a compression's summary and
    gemini-cli's acknowledgement, which names no model and counts no tokens: no call,
    but sent with the prompts after it)."""
    text = _jsonl(
        SESSION,
        {"id": "u1", "timestamp": "2026-05-20T10:00:00.000Z", "type": "user",
         "content": "long talk"},
        {"id": "g1", "timestamp": "2026-05-20T10:00:01.000Z", "type": "gemini",
         "content": "long answer", "model": "gemini-3-flash-preview", "tokens": TOKENS},
        {"$set": {"messages": [
            {"id": "s1", "timestamp": "2026-05-20T10:05:00.000Z", "type": "user",
             "content": [{"text": "<state_snapshot>we talked</state_snapshot>"}]},
            {"id": "s2", "timestamp": "2026-05-20T10:05:00.000Z", "type": "gemini",
             "content": [{"text": "Got it. Thanks for the additional context!"}],
             "thoughts": [], "tokens": None}]}},
        {"id": "u2", "timestamp": "2026-05-20T10:06:00.000Z", "type": "user",
         "content": "go on"},
        {"id": "g2", "timestamp": "2026-05-20T10:06:01.000Z", "type": "gemini",
         "content": "Going on.", "model": "gemini-3-flash-preview", "tokens": TOKENS})
    s, report = _imported(text, name="s.jsonl")
    (run,) = report.runs_created
    assert [t for _, t in prompt_texts(s, run)] == [
        "<state_snapshot>we talked</state_snapshot>",
        "Got it. Thanks for the additional context!", "go on"]
    reasons = [k.reason for k in report.skipped]
    assert any("2 message(s) no longer in the history that replaced the session's" in r
               for r in reasons)
    assert any("1 model turn(s) gemini-cli wrote itself" in r for r in reasons)


def test_answers_whose_tool_calls_are_not_kept_are_notes_and_later_prompts_say_so() -> None:
    """A subagent's session keeps its answers' thoughts and tokens but not their tool
    calls: such an answer is not imported, and the calls after it say what their
    prompt lacks."""
    empty = {"id": "g1", "timestamp": "2026-03-18T02:08:46.935Z", "type": "gemini",
             "content": "", "model": "gemini-3-flash-preview", "tokens": {**TOKENS,
                                                                         "output": 10},
             "thoughts": [{"subject": "s", "description": "d", "timestamp": "x"}]}
    session = {**SESSION, "kind": "subagent", "messages": [
        MESSAGES[0], empty,
        {**MESSAGES[3], "id": "g2", "timestamp": "2026-03-18T02:09:05.183Z"}]}
    s, report = _imported(json.dumps(session))
    (run,) = report.runs_created
    assert s.runs.get_run(run).started_at == datetime(2026, 3, 18, 2, 8, 46, 935000,
                                                      tzinfo=UTC)
    reasons = [k.reason for k in report.skipped]
    assert any(r.startswith("not imported: an answer holding neither text nor a tool call "
                            "(10 output tokens)") for r in reasons), reasons
    assert any("its prompt lacks what followed 1 earlier answer(s) (line 1: messages[1])"
               in r for r in reasons), reasons
    with pytest.raises(ImportFormatError, match="a Gemini CLI session .* holding no answer "
                                                "that can be imported"):
        _imported(json.dumps({**session, "messages": session["messages"][:2]}))


def test_usage_counting_nothing_is_unknown() -> None:
    zero = {k: 0 for k in TOKENS}
    s, report = _imported(json.dumps({**SESSION, "messages": [
        MESSAGES[0], {**MESSAGES[3], "tokens": zero}]}))
    step = s.runs.get(f"{report.runs_created[0]}:step:0")
    assert step["usage_known"] is False
    assert any("its tokens count nothing (every count 0)" in k.reason for k in report.skipped)


def test_one_bad_message_is_a_note_and_the_rest_imports() -> None:
    bad = [MESSAGES[0], {**MESSAGES[1], "toolCalls": "run it"},
           {"id": "u2", "timestamp": "2026-03-18T01:47:00.000Z", "type": "user",
            "content": 7}, {**MESSAGES[3], "id": "g9"},
           {"id": "x", "timestamp": "2026-03-18T01:47:00.000Z", "type": "tool",
            "content": "?"}]
    s, report = _imported(json.dumps({**SESSION, "messages": bad}))
    assert len(report.runs_created) == 1
    reasons = [k.reason for k in report.skipped]
    assert any("'toolCalls' must be a list of objects, got 'run it'" in r for r in reasons)
    assert any("'content' must be a text or a list of parts, got int" in r for r in reasons)
    assert any("a message of type 'tool' (expected one of user, gemini" in r
               for r in reasons)
    # the answer after them was sent what the file no longer holds readably: said
    assert any("its prompt lacks 2 earlier message(s) that could not be read (line 1: "
               "messages[1], line 1: messages[2])" in r for r in reasons), reasons
    with pytest.raises(ImportFormatError, match="a part of 'content' must be an object or "
                                                "a text, got 7"):
        _imported(json.dumps({**SESSION, "messages": [
            {**MESSAGES[0], "content": [7]}, MESSAGES[3]]}))


def test_a_session_of_no_model_call_is_refused_naming_gemini_cli() -> None:
    """Not said to be an OpenAI chat record (what the importer said before)."""
    only = {**SESSION, "messages": [MESSAGES[0], MESSAGES[2]]}
    with pytest.raises(ImportFormatError) as e:
        _imported(json.dumps(only))
    assert "a Gemini CLI session (its messages: user, info) holding no answer of the " \
           "model" in str(e.value)
    assert "OpenAI" not in str(e.value)


@pytest.mark.parametrize(("doc", "said"), [
    # gemini-cli's Logger (logs.json): the user's prompts only
    ([{"sessionId": "s1", "messageId": 0, "timestamp": "2025-07-01T00:00:00.000Z",
       "type": "user", "message": "hello"}],
     "this is an entry of Gemini CLI's prompt log (logs.json"),
    # Roo Code's (and Cline's) ClineMessage: what the panel showed
    ([{"ts": 1758819562059, "type": "say", "say": "text", "text": "List the files."},
      {"ts": 1758819563000, "type": "ask", "ask": "tool", "text": "{}"}],
     "this is a message of Cline's or Roo Code's UI messages (ui_messages.json: ts, type "
     "'say', say 'text'), which hold what the panel showed, not the model calls: import "
     "api_conversation_history.json from the same task folder"),
])
def test_other_files_of_agents_are_refused_by_name(doc: Any, said: str) -> None:
    with pytest.raises(ImportFormatError, match="item 1: " + _escaped(said)):
        _imported(json.dumps(doc), name="f.json")


def test_a_pi_session_is_refused_by_name() -> None:
    text = _jsonl(
        {"type": "session", "version": 3, "id": "a1b2", "timestamp": "2026-01-01T00:00:00Z",
         "cwd": "/work"},
        {"type": "message", "id": "e1", "parentId": None, "timestamp": "2026-01-01T00:00:01Z",
         "message": {"role": "user", "content": "hi", "timestamp": 1767225601000}})
    with pytest.raises(ImportFormatError, match="line 1: this is a line of a pi coding "
                                                "agent session .* record pi's model calls "
                                                "with `memwb proxy` instead"):
        _imported(text, name="s.jsonl")


def _escaped(text: str) -> str:
    import re
    return re.escape(text)


def test_wrong_types_at_every_depth_import_or_refuse_in_one_line() -> None:
    """The session document and its JSON-lines log, each value at a time replaced by
    one of another type: imported, or refused in one line — never a crash."""
    from memory_core.errors import MemoryCoreError
    from tests.hostile.corpus import wrong_types

    doc = {**SESSION, "messages": MESSAGES}
    cases = [(w, json.dumps(d)) for w, d in wrong_types(doc)]
    lines = [SESSION, *MESSAGES, {"$set": {"lastUpdated": "x"}}, {"$rewindTo": "m3"}]
    cases += [(w, _jsonl(*d)) for w, d in wrong_types(lines)]
    for where, text in cases:
        try:
            import_text(InMemoryStorage(), text, name="s.jsonl")
        except MemoryCoreError as e:
            assert "\n" not in str(e) and str(e).strip(), (where, e)
