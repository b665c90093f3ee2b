"""Cline's and Roo Code's task history (``api_conversation_history.json``): each answer
one run, its prompt the messages before it (rebuilt, noted), timed by the messages'
``ts``; an answer's ``modelInfo`` and ``metrics`` its model and usage; what the history
does not keep (system prompt, tools offered) unknown, not "none"."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from memory_core.importers import import_text
from memory_core.journal import load_run
from memory_core.storage.inmemory import InMemoryStorage

T0 = 1758819562059  # ms


def _m(role: str, content: Any, ts: int, **more: Any) -> dict[str, Any]:
    return {"role": role, "content": content, "ts": ts, **more}


HISTORY = [
    _m("user", [{"type": "text", "text": "<task>\nList the files.\n</task>"}], T0),
    _m("assistant", [{"type": "text", "text": "Listing."},
                     {"type": "tool_use", "id": "toolu_1", "name": "list_files",
                      "input": {"path": "."}}], T0 + 4000,
       modelInfo={"modelId": "claude-sonnet-4-5", "providerId": "anthropic", "mode": "act"},
       metrics={"tokens": {"prompt": 1200, "completion": 30, "cached": 1000}, "cost": 0.01}),
    _m("user", [{"type": "tool_result", "tool_use_id": "toolu_1",
                 "content": "README.md\nsetup.py"}], T0 + 5000),
    _m("assistant", "There are two files: README.md and setup.py.", T0 + 9000),
]


def test_a_task_history_imports_as_its_calls() -> None:
    s = InMemoryStorage()
    report = import_text(s, json.dumps(HISTORY), name="api_conversation_history.json")
    (tid,) = report.threads_created
    assert [m.role for m in s.memory.get_messages(tid)] == ["user", "assistant", "tool",
                                                            "assistant"]
    first, second = (s.runs.get_run(r) for r in report.runs_created)
    assert first.started_at == datetime.fromtimestamp(T0 / 1000, UTC)
    assert second.started_at == datetime.fromtimestamp((T0 + 5000) / 1000, UTC)
    answered = load_run(s, report.runs_created[0]).steps[0].response
    assert (first.agent, answered.model) == ("claude-sonnet-4-5", "claude-sonnet-4-5")
    assert (answered.usage.input_tokens, answered.usage.output_tokens) == (1200, 30)
    two = s.runs.get(f"{report.runs_created[1]}:memctx")
    assert {"model", "usage", "tools"} <= set(two["unknown_fields"])
    reasons = [k.reason for k in report.skipped]
    assert reasons.count("the task's history keeps neither the system prompt nor the "
                         "tools offered: both are unknown") == 1
    assert sum("its prompt is rebuilt from the task's history" in r for r in reasons) == 2
    assert any(r.startswith("the answer has no model and no usage recorded") for r in reasons)


def test_what_is_not_a_task_history_is_read_as_before() -> None:
    """A list of messages without ``ts`` (a fine-tuning row's), with another key, or
    with no answer: not a task history — the refusal of a list of chat messages."""
    for doc in ([{k: v for k, v in m.items() if k != "ts"} for m in HISTORY],
                [{**m, "id": i} for i, m in enumerate(HISTORY)],
                [m for m in HISTORY if m["role"] == "user"]):
        try:
            import_text(InMemoryStorage(), json.dumps(doc), name="h.json")
        except Exception as e:  # noqa: BLE001 (the refusal's sentence is what is checked)
            assert "chat messages, not requests holding them" in str(e), e
        else:
            raise AssertionError("imported")


def test_an_answer_with_a_broken_time_is_a_note_and_the_rest_imports() -> None:
    broken = [*HISTORY[:3], {**HISTORY[3], "ts": 10 ** 20}]
    report = import_text(InMemoryStorage(), json.dumps(broken), name="h.json")
    assert len(report.runs_created) == 1
    assert any("'ts' 100000000000000000000 is no time in milliseconds" in k.reason
               for k in report.skipped), report.skipped
