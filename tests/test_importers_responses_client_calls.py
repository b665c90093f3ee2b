"""Responses API calls of the tools OpenAI defines and the client runs (``local_shell``,
computer use): a ``local_shell_call`` or ``computer_call`` in a response's output is the
answer's tool call (its ``action`` the arguments, its ``call_id`` the id), and the
``…_call_output`` a later request sends back is its result, so the follow-up continues
the thread; a screenshot is a placeholder, never its base64. A tool OpenAI's server
runs (``mcp_call``) stays noted, and an answer that holds only such items says so."""

from __future__ import annotations

import json
from typing import Any

from memory_core.importers import import_text
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import ToolCallPart, ToolResultPart

QUESTION = {"role": "user", "content": "List the files in the current directory"}
ACTION = {"type": "exec", "command": ["ls", "-la"], "env": {}}
SHELL_CALL = {"type": "local_shell_call", "id": "ls_1", "call_id": "call_ls_001",
              "action": ACTION, "status": "completed"}
SHELL_OUT = {"type": "local_shell_call_output", "call_id": "call_ls_001",
             "output": "total 0\nREADME.md"}
DONE = {"type": "message", "id": "msg_2", "role": "assistant",
        "content": [{"type": "output_text", "text": "There is one file: README.md."}]}
PNG = "data:image/png;base64," + "iVBORw0KGgo" * 300


def _line(tools: list[dict[str, Any]], input_: list[Any], output: list[Any],
          rid: str) -> str:
    return json.dumps({"request": {"model": "gpt-4.1", "tools": tools, "input": input_},
                       "response": {"id": rid, "object": "response", "status": "completed",
                                    "model": "gpt-4.1", "output": output}})


def _messages(s: InMemoryStorage, thread: str) -> list[Any]:
    return s.memory.get_messages(thread)


def _one_thread(text: str) -> tuple[list[Any], list[str]]:
    """The messages of the one thread ``text`` imports as, and what the import noted."""
    s = InMemoryStorage()
    report = import_text(s, text, name="calls.jsonl")
    [thread] = report.threads_created
    msgs = _messages(s, thread)
    assert [m.role for m in msgs] == ["user", "assistant", "tool", "assistant"]
    return msgs, [k.reason for k in report.skipped]


def test_a_local_shell_call_is_the_answer_and_its_output_continues_the_thread() -> None:
    tools = [{"type": "local_shell"}]
    text = "\n".join([_line(tools, [QUESTION], [SHELL_CALL], "resp_1"),
                      _line(tools, [QUESTION, SHELL_CALL, SHELL_OUT], [DONE], "resp_2")])
    msgs, noted = _one_thread(text)
    assert msgs[1].content == [ToolCallPart(id="call_ls_001", name="local_shell",
                                            args=ACTION)]
    [result] = msgs[2].tool_results()
    assert (result.call_id, result.name, result.result) == (
        "call_ls_001", "local_shell", "total 0\nREADME.md")
    assert not [n for n in noted if "local_shell_call" in n]


def test_a_computer_call_takes_the_offered_tools_name_and_its_screenshot_is_a_placeholder(
        ) -> None:
    tools = [{"type": "computer_use_preview", "display_width": 1024,
              "display_height": 768, "environment": "browser"}]
    click = {"type": "click", "button": "left", "x": 156, "y": 50}
    call = {"type": "computer_call", "id": "cu_1", "call_id": "call_zw3", "action": click,
            "pending_safety_checks": [], "status": "completed"}
    shot = {"type": "computer_call_output", "call_id": "call_zw3",
            "output": {"type": "computer_screenshot", "image_url": PNG}}
    question = {"role": "user", "content": "Check the latest OpenAI news on bing.com."}
    text = "\n".join([_line(tools, [question], [call], "resp_1"),
                      _line(tools, [question, call, shot], [DONE], "resp_2")])
    msgs, noted = _one_thread(text)
    assert msgs[1].content == [ToolCallPart(id="call_zw3", name="computer_use_preview",
                                            args=click)]
    assert msgs[2].content == [ToolResultPart(call_id="call_zw3",
                                              name="computer_use_preview", result="")]
    [att] = msgs[2].metadata["attachments"]
    assert att["type"] == "computer_screenshot" and att["media_type"] == "image/png"
    assert "input[2]: its computer_screenshot kept as a placeholder" in noted
    assert "iVBORw0KGgo" not in json.dumps([m.model_dump(mode="json") for m in msgs])


def test_a_computer_call_without_the_tool_offered_is_named_computer() -> None:
    call = {"type": "computer_call", "call_id": "call_1",
            "action": {"type": "screenshot"}}
    s = InMemoryStorage()
    report = import_text(s, _line([], [QUESTION], [call], "resp_1"), name="c.jsonl")
    [answer] = _messages(s, report.threads_created[0])[1:]
    assert [(c.name, c.args) for c in answer.tool_calls()] == [
        ("computer", {"type": "screenshot"})]


def test_a_local_shell_call_without_call_id_or_action_is_noted_not_a_crash() -> None:
    no_id = {"type": "local_shell_call", "action": ACTION}
    no_action = {"type": "local_shell_call", "call_id": "call_2", "action": "ls -la"}
    text = "\n".join([_line([], [QUESTION], [no_id], "resp_1"),
                      _line([], [QUESTION], [no_action], "resp_2")])
    s = InMemoryStorage()
    report = import_text(s, text, name="bad.jsonl")
    reasons = [(k.where, k.reason) for k in report.skipped]
    [call] = _messages(s, report.threads_created[0])[1].tool_calls()
    assert call.name == "local_shell" and call.args == ACTION
    assert ("line 1", f"output[0]: local_shell_call item 0 has no call_id; given "
                      f"{call.id!r}") in reasons
    assert any(w == "line 2" and "local_shell_call item 0 has no 'action' object, got "
               "'ls -la'" in r for w, r in reasons), reasons


def test_inspect_shows_why_the_answer_is_empty_before_the_other_notes() -> None:
    # (the recording notes six things: the view shows five, the empty answer's first)
    from pathlib import Path

    from memory_core.analysis import views
    from memory_core.importers import import_file

    s = InMemoryStorage()
    real = Path(__file__).parent / "fixtures" / "imports" / "real"
    report = import_file(s, real / "otjs-openai-responses-records-mcp-calls.json")
    [note] = [n for n in views.run_view(s, report.runs_created[0]).notes
              if "The import noted: " in n]
    shown = note.split("The import noted: ", 1)[1]
    assert shown.startswith("definition 1: the answer is empty (finish reason 'completed'): "
                            "its output holds only items of tools OpenAI's server ran"), shown


def test_a_failed_responses_call_s_error_text_is_kept_unquoted() -> None:
    """An outside trial (Braintrust's LiteLLM cassette): a Responses call recorded with
    HTTP 200 and no body listed its error as "\\"the response body was not recorded
    (HTTP 200)\\"", a text encoded as JSON. A text is kept as it is; an error object as
    JSON, its letters as they are."""
    url = "https://api.openai.com/v1/responses"
    rows = [{"url": url, "request": {"model": "gpt-4o-mini", "input": "Hi"},
             "error": "the response body was not recorded (HTTP 200)"},
            {"url": url, "request": {"model": "gpt-4o-mini", "input": "Hi"},
             "error": {"message": "Modèle inconnu", "code": "model_not_found"}}]
    s = InMemoryStorage()
    report = import_text(s, "\n".join(json.dumps(r) for r in rows))
    errors = [s.runs.get_run(r).error for r in report.runs_created]
    assert errors == ["the response body was not recorded (HTTP 200)",
                      '{"code": "model_not_found", "message": "Modèle inconnu"}']
