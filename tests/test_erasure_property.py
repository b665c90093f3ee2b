"""Erasure changes exactly the erased records and their provable copies (issue 33):
a property test over runs of 1–120 steps whose tool-call ids are prefixes of each other
(c1, c10, c100 …), some of whose calls quote the erased sentence, beside another person
who says the same sentence in a run of their own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from memory_core.journal.seal import verify_run
from memory_core.lifecycle.erasure import erase_thread
from memory_core.models.base import ModelResponse, Tool, ToolSpec
from memory_core.models.scripted import ScriptedModel
from memory_core.runs.replay import replay
from memory_core.runs.runner import Agent, Runner
from memory_core.storage.base import Storage
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.storage.sqlite import SQLiteStorage
from memory_core.types import AppendRow, Message, ToolCallPart

SENTENCE = "My locker code is QX-4471-KESTREL."


def _run_notes(s: Storage, run_id: str, thread: str, resource: str,
               quoting: set[int], steps: int) -> None:
    """A run of ``steps`` tool calls c1 … c<steps>, those in ``quoting`` with the
    sentence in their arguments (and so in their results), then a final answer."""
    script = [ModelResponse(tool_calls=[ToolCallPart(
        id=f"c{i}", name="note",
        args={"text": SENTENCE if i in quoting else f"note {i}"})])
        for i in range(1, steps + 1)] + [ModelResponse(text="Noted.")]
    tool = Tool(ToolSpec("note", "keep a note"), lambda a: {"kept": a["text"]})
    agent = Agent("a", "Take notes.", ScriptedModel(script), tools=[tool],
                  max_steps=steps + 1)
    Runner(s, {"a": agent}).run("a", run_id=run_id, thread_id=thread, resource_id=resource,
                                prompt="Take the notes.")


def _records(s: Storage, run_id: str) -> dict[str, Any]:
    return dict(s.runs.list(f"{run_id}:"))


def _check(s: Storage, steps: int, quoting: set[int]) -> None:
    # Ada's own thread holds the sentence; her other thread's run quotes it in its calls
    s.memory.create_thread("secret", resource_id="ada")
    s.memory.append_messages("secret", [AppendRow(message=Message(content=SENTENCE))])
    _run_notes(s, "m1", "notes", "ada", quoting, steps)
    # Bo says the same sentence in his own run: equal text, not a copy
    _run_notes(s, "b1", "bo-notes", "bo", {1, 2}, 3)
    m1, b1 = _records(s, "m1"), _records(s, "b1")
    b1_messages = s.memory.get_messages("bo-notes")

    report = erase_thread(s, "secret")

    after_m1, after_b1 = _records(s, "m1"), _records(s, "b1")
    # Bo's run and messages are exactly as they were, and still verify as sealed
    assert after_b1 == b1 and s.memory.get_messages("bo-notes") == b1_messages
    assert verify_run(s, "b1").status == "ok"
    # Ada's run keeps every record (no prefix took c10 with c1) ...
    assert set(after_m1) == set(m1)
    # ... and exactly those that held the sentence changed, besides its seal
    changed = {k for k in m1 if after_m1[k] != m1[k]} - {"m1:seal"}
    held = {k for k, v in m1.items() if SENTENCE in repr(v)} - {"m1:seal"}
    assert changed == held, (sorted(changed ^ held), steps, sorted(quoting))
    assert SENTENCE not in repr(after_m1)
    assert ("m1" in report.redacted_runs) == bool(held)
    assert "b1" not in report.redacted_runs
    assert verify_run(s, "m1").status == ("redacted" if held else "ok")
    assert replay(s, "m1").steps == steps + 1


@st.composite
def _runs(draw: st.DrawFn) -> tuple[int, set[int]]:
    steps = draw(st.integers(min_value=1, max_value=120))
    quoting = draw(st.sets(st.integers(min_value=1, max_value=steps), max_size=6))
    return steps, quoting


@pytest.mark.slow
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_runs())
@example((12, {1}))  # c1 quotes it; c10, c11 must stay as they were
@example((120, {1, 10, 100}))
def test_erasure_changes_exactly_the_erased_records_in_memory(
        run: tuple[int, set[int]]) -> None:
    steps, quoting = run
    s = InMemoryStorage()
    _check(s, steps, quoting)


@pytest.mark.slow
@settings(max_examples=4, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(_runs())
def test_erasure_changes_exactly_the_erased_records_on_sqlite(
        tmp_path: Path, run: tuple[int, set[int]]) -> None:
    steps, quoting = run
    path = tmp_path / f"e{steps}-{len(quoting)}.db"
    path.unlink(missing_ok=True)
    s = SQLiteStorage(str(path))
    try:
        _check(s, steps, quoting)
    finally:
        s.close()
        path.unlink(missing_ok=True)
