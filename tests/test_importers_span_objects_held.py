"""Span objects dumped as Python's SDK holds them (any-agent's ``AgentTrace``: the spans
under ``spans``, times in epoch nanoseconds, trace and span ids as integers) and
``gen_ai.input.messages`` written in the OpenAI form: read, not refused."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from memory_core.errors import ImportFormatError
from memory_core.importers import import_text
from memory_core.storage.inmemory import InMemoryStorage

TRACE, SPAN, AGENT = 200754113673326459792359196831899614724, 17462846557343803630, 7


def _span(**attrs: Any) -> dict[str, Any]:
    return {"name": "chat gpt-4o-mini", "kind": "client",
            "context": {"trace_id": TRACE, "span_id": SPAN, "is_remote": False},
            "parent": {"trace_id": TRACE, "span_id": AGENT, "is_remote": False},
            "start_time": 1758026601289496000, "end_time": 1758026601631557000,
            "status": {"status_code": "ok", "description": None},
            "attributes": {"gen_ai.operation.name": "chat",
                           "gen_ai.request.model": "gpt-4o-mini", **attrs}}


def _import(doc: dict[str, Any]) -> tuple[InMemoryStorage, Any]:
    s = InMemoryStorage()
    return s, import_text(s, json.dumps(doc), name="agent_trace.json")


def test_a_trace_object_of_held_spans_is_read() -> None:
    doc = {"spans": [_span(**{
        "gen_ai.input.messages": json.dumps([
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "What year is it?"}]),
        "gen_ai.output.messages": json.dumps([
            {"role": "assistant", "parts": [{"type": "text", "content": "2025."}],
             "finish_reason": "stop"}]),
        "gen_ai.usage.input_tokens": 20, "gen_ai.usage.output_tokens": 3})],
        "final_output": "2025."}
    s, report = _import(doc)
    assert len(report.runs_created) == 1
    run = s.runs.require_run(report.runs_created[0])
    assert run.started_at == datetime(2025, 9, 16, 12, 43, 21, 289496, tzinfo=UTC)
    said = [(m.role, m.as_message().text()) for m in
            s.memory.get_messages(report.threads_created[0])]
    assert said == [("user", "What year is it?"), ("assistant", "2025.")]
    # the integer span id read as the hex OpenTelemetry writes
    record = s.runs.get(f"{report.runs_created[0]}:import")
    assert record["where"] == f"span {SPAN:016x} (chat gpt-4o-mini)"


def test_a_time_in_nanoseconds_that_is_no_date_is_one_error_naming_it() -> None:
    span = _span(**{"gen_ai.input.messages": json.dumps([{"role": "user",
                                                          "content": "Hi"}])})
    span["start_time"] = 10**30
    with pytest.raises(ImportFormatError) as e:
        _import({"spans": [span]})
    assert "startTime" in str(e.value) and str(10**30) in str(e.value), str(e.value)


T0 = 1758026601000000000


def _held(sid: int, parent: int | None, name: str, op: str, at: int,
          **attrs: Any) -> dict[str, Any]:
    return {"name": name, "kind": "internal", "context": {"trace_id": TRACE, "span_id": sid},
            "parent": None if parent is None else {"trace_id": TRACE, "span_id": parent},
            "start_time": T0 + at * 10**9, "end_time": T0 + at * 10**9 + 5,
            "status": {"status_code": "ok"},
            "attributes": {"gen_ai.operation.name": op, **attrs}}


def _call(sid: int, parent: int, at: int, tokens: int, output: str, *,
          asked: str | None = None) -> dict[str, Any]:
    tool = output.startswith("[")
    return _held(sid, parent, "call_llm m", "call_llm", at, **{
        "gen_ai.usage.input_tokens": tokens, "gen_ai.output": output,
        "gen_ai.output.type": "json" if tool else "text", **(
            {"gen_ai.input.messages": json.dumps([{"role": "user", "content": asked}])}
            if asked else {})})


def _tool(sid: int, parent: int, at: int, name: str, result: str) -> dict[str, Any]:
    return _held(sid, parent, f"execute_tool {name}", "execute_tool", at, **{
        "gen_ai.tool.name": name, "gen_ai.tool.args": "{}", "gen_ai.output": result})


def _said(s: InMemoryStorage, thread: str) -> list[tuple[str, Any]]:
    """Each message's role and text (a tool message's: its result)."""
    said: list[tuple[str, Any]] = []
    for stored in s.memory.get_messages(thread):
        m = stored.as_message()
        results = m.tool_results()
        said.append((m.role, results[0].result if results else m.text() or None))
    return said


def test_a_sub_agents_call_does_not_take_the_agents_conversation() -> None:
    """Agent A asks sub-agent B through a tool; A's next call, whose input any-agent did
    not record, continues A's conversation (its parent span's), not B's."""
    ask_b = json.dumps([{"tool.name": "ask_b", "tool.args": "{}"}])
    spans = [_held(1, None, "invoke_agent [A]", "invoke_agent", 0),
             _call(2, 1, 1, 10, ask_b, asked="Question for A"),
             _tool(3, 1, 2, "ask_b", "B says 42"),
             _held(4, 3, "invoke_agent [B]", "invoke_agent", 3),
             _call(5, 4, 4, 5, "42", asked="Question for B"),
             _call(6, 1, 20, 30, "A final: 42")]
    s, report = _import({"spans": spans})
    threads = sorted(_said(s, t) for t in report.threads_created)
    assert threads == [
        [("user", "Question for A"), ("assistant", None), ("tool", "B says 42"),
         ("assistant", "A final: 42")],
        [("user", "Question for B"), ("assistant", "42")]]


def test_a_tool_called_alike_twice_gives_two_calls_of_their_own() -> None:
    search = json.dumps([{"tool.name": "search", "tool.args": "{}"}])
    spans = [_call(2, 1, 0, 10, search, asked="Q"), _tool(3, 1, 1, "search", "r1"),
             _call(4, 1, 2, 20, search), _tool(5, 1, 3, "search", "r2"),
             _call(6, 1, 4, 30, "done")]
    s, report = _import({"spans": spans})
    (thread,) = report.threads_created
    calls = [p.id for m in s.memory.get_messages(thread) for p in m.as_message().tool_calls()]
    results = [p.call_id for m in s.memory.get_messages(thread)
               for p in m.as_message().tool_results()]
    assert len(set(calls)) == 2 and results == calls


def test_two_spans_of_one_id_stay_two() -> None:
    # a tracer's fault: a malformed span and a good one under the same id
    good = _span(**{"gen_ai.input.messages": json.dumps([{"role": "user",
                                                          "content": "other"}]),
                    "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
                        {"type": "text", "content": "ok"}]}])})
    bad = _span(**{"gen_ai.input.messages": json.dumps([{"role": "narrator",
                                                         "parts": []}])})
    s, report = _import({"spans": [bad, good]})
    assert len(report.runs_created) == 1
    assert [k.reason.split(":")[0] for k in report.skipped] == ["not imported"]


def test_an_agent_span_over_a_call_that_cannot_be_read_is_still_a_wrapper() -> None:
    """An agent span repeating its call's messages wraps that call even when the call
    itself cannot be read: it is not imported in the call's place."""
    said = {"gen_ai.input.messages": json.dumps([{"role": "user", "content": "Hi"}]),
            "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
                {"type": "text", "content": "Hello"}]}])}
    agent = {**_span(**said), "name": "invoke_agent a",
             "context": {"trace_id": TRACE, "span_id": AGENT}, "parent": None}
    broken = _span(**{**said, "gen_ai.input.messages": json.dumps(
        [{"role": "narrator", "parts": []}])})
    other = {**_span(**said), "context": {"trace_id": TRACE, "span_id": 99}, "parent": None}
    s, report = _import({"spans": [agent, broken, other]})
    assert len(report.runs_created) == 1
    reasons = {k.where: k.reason for k in report.skipped}
    assert reasons[f"span {AGENT:016x} (invoke_agent a)"].startswith(
        f"wraps model-call span {SPAN:016x}")
    assert reasons[f"span {SPAN:016x} (chat gpt-4o-mini)"].startswith("not imported: ")
