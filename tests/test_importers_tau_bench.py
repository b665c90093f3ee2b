"""τ-bench's results (``tau_bench/run.py``'s JSON array of ``{"task_id", "reward",
"info", "traj", "trial"}``; an outside trial's file was refused "no record"): each
assistant message of an episode's ``traj`` one run, its prompt rebuilt as the messages
before it, one thread an episode; model, parameters, tools and usage unknown; the
grading noted, not imported; a failed or malformed episode a note, the rest imported
(the real file: tests/fixtures/imports/real/taubench-*)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memory_core.errors import ImportFormatError
from memory_core.importers import import_text
from memory_core.storage.inmemory import InMemoryStorage

CALL = {"id": "call_1", "type": "function",
        "function": {"name": "get_user_details", "arguments": '{"user_id": "mia_li_3668"}'}}


def _episode(task: int, trial: int = 0, **more: Any) -> dict[str, Any]:
    traj = [
        {"role": "system", "content": "# Airline Agent Policy"},
        {"role": "user", "content": f"Hi, task {task}. My user id is mia_li_3668."},
        {"content": None, "role": "assistant", "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_1", "name": "get_user_details",
         "content": '{"name": "Mia"}'},
        {"content": "Hello Mia, how can I help?", "role": "assistant"},
        {"role": "user", "content": "###STOP###"},
    ]
    return {"task_id": task, "reward": 1.0,
            "info": {"task": {"user_id": "mia_li_3668"}, "source": "user",
                     "user_cost": 0.003, "reward_info": {"reward": 1.0}},
            "traj": traj, "trial": trial, **more}


def _reasons(report: Any) -> list[str]:
    return [k.reason for k in report.skipped]


def test_each_answer_of_an_episode_is_a_run_and_each_episode_a_thread() -> None:
    s = InMemoryStorage()
    report = import_text(s, json.dumps([_episode(0), _episode(0, trial=1)]),
                         name="tool-calling-gpt-4o-0.0_range_0-1.json")
    assert report.threads_created == ["tau-bench/0/0", "tau-bench/0/1"]
    assert len(report.runs_created) == 4
    msgs = s.memory.get_messages("tau-bench/0/0")
    assert [m.role for m in msgs] == ["user", "assistant", "tool", "assistant"]
    assert msgs[1].tool_calls()[0].name == "get_user_details"
    second = report.runs_created[1]
    prompt = s.runs.get(f"{second}:prompt")["items"]
    assert [(i["lane"], i["message"]["role"]) for i in prompt] == [
        ("instructions", "system"), ("recent", "user"), ("recent", "assistant"),
        ("input", "tool")]
    memctx = s.runs.get(f"{second}:memctx")
    assert {"model", "tools", "params", "usage"} <= set(memctx["unknown_fields"])
    reasons = _reasons(report)
    assert sum(r.startswith("τ-bench's results keep neither the agent's model") for r in
               reasons) == 1
    assert sum(r.startswith("the user's messages are τ-bench's user simulator's") for r in
               reasons) == 1
    assert reasons.count("the episode's reward (1.0) and info (reward_info, source, task, "
                         "user_cost) not imported: τ-bench's task and grading, no model "
                         "call") == 2
    assert sum("its prompt is rebuilt from the episode's trajectory" in r
               for r in reasons) == 4
    # the user simulator's last message, after the last answer, was sent in no call
    assert [m.role for m in s.memory.get_messages("tau-bench/0/1")][-1] == "assistant"
    assert reasons.count("the episode's 1 message(s) after its last answer (user; the "
                         "user simulator's '###STOP###' ends an episode) were sent in no "
                         "call: not imported") == 2


def test_a_failed_episode_is_a_note_and_the_rest_imports() -> None:
    failed = {"task_id": 7, "reward": 0.0, "traj": [], "trial": 0,
              "info": {"error": "RateLimitError: too many requests", "traceback": "…"}}
    report = import_text(InMemoryStorage(), json.dumps([failed, _episode(1)]), name="r.json")
    assert report.threads_created == ["tau-bench/1/0"]
    [note] = [k for k in report.skipped if k.where == "item 1"]
    assert "τ-bench's run of task 7 failed (RateLimitError: too many requests)" in note.reason


def test_a_malformed_message_ends_its_episode_and_the_rest_imports() -> None:
    broken = _episode(2)
    broken["traj"][3] = "not a message"
    report = import_text(InMemoryStorage(), json.dumps([broken, _episode(3)]), name="r.json")
    assert report.threads_created == ["tau-bench/2/0", "tau-bench/3/0"]
    assert len(report.runs_created) == 1 + 2  # (the first answer only of the broken one)
    [note] = [k for k in report.skipped if k.where == "item 1: traj[3]"]
    assert "a message must be an object with its 'role', got 'not a message'" in note.reason
    assert "the episode's 1 later call(s), whose prompts hold it, not imported" in note.reason


def test_an_answer_that_cannot_be_read_is_a_note() -> None:
    bad = _episode(4)
    bad["traj"][4]["tool_calls"] = "get_user_details"
    report = import_text(InMemoryStorage(), json.dumps([bad]), name="r.json")
    assert len(report.runs_created) == 1
    [note] = [k for k in report.skipped if k.where == "item 1: traj[4]"]
    assert "tool_calls must be a list, got str" in note.reason


def test_a_file_of_failed_episodes_is_refused_saying_why() -> None:
    failed = {"task_id": 7, "reward": 0.0, "traj": [], "trial": 0,
              "info": {"error": "AuthenticationError", "traceback": "…"}}
    with pytest.raises(ImportFormatError, match=r"item 1: an episode with an empty "
                       r"trajectory: τ-bench's run of task 7 failed \(AuthenticationError\)"):
        import_text(InMemoryStorage(), json.dumps([failed]), name="r.json")


def test_an_episode_with_another_key_is_not_read_as_one() -> None:
    with pytest.raises(ImportFormatError) as e:
        import_text(InMemoryStorage(), json.dumps([_episode(5, extra=1)]), name="r.json")
    assert "τ-bench" not in str(e.value)
