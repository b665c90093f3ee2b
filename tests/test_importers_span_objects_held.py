"""Span objects dumped as Python's SDK holds them (any-agent's ``AgentTrace``: the spans
under ``spans``, times in epoch nanoseconds, trace and span ids as integers) and
``gen_ai.input.messages`` written in the OpenAI form: read, not refused."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

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
    try:
        _import({"spans": [span]})
    except Exception as e:  # noqa: BLE001 - the one error, whatever its class says
        assert "start" in str(e) and str(10**30) in str(e), str(e)
    else:
        raise AssertionError("imported a span dated 10**30 ns")
