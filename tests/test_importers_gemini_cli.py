"""What Gemini CLI's telemetry writes (an outside trial): its ``llm_call`` span keeps the
request's ``contents`` and the response's one ``Content`` in Gemini's own shape under
the GenAI convention's keys — refused ("part 0 has no 'type'"); its file exporter writes
each span as ``JSON.stringify`` gives it, the ids under the JS SDK's private
``_spanContext`` — refused ("without its trace and span ids"). Both are read (the real
span: tests/fixtures/imports/real/langwatch-gemini-cli-*)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memory_core.errors import ImportFormatError
from memory_core.importers import import_text
from memory_core.storage.inmemory import InMemoryStorage

CALL = {"functionCall": {"name": "list_directory", "args": {"path": "."}}}
ANSWER = {"functionResponse": {"name": "list_directory", "response": {"output": "a.txt"}}}


def _attrs(**extra: Any) -> dict[str, Any]:
    contents = [{"role": "user", "parts": [{"text": "What files are here?"}]},
                {"role": "model", "parts": [CALL]},
                {"role": "user", "parts": [ANSWER]}]
    out = {"role": "model", "parts": [{"text": "checking", "thought": True},
                                      {"text": "One: a.txt."}]}
    return {"gen_ai.operation.name": "llm_call", "gen_ai.request.model": "gemini-2.5-flash",
            "gen_ai.conversation.id": "sess-1",
            "gen_ai.system_instructions": json.dumps("You are terse."),
            "gen_ai.input.messages": json.dumps(contents),
            "gen_ai.output.messages": json.dumps(out),
            "gen_ai.usage.input_tokens": 50, "gen_ai.usage.output_tokens": 6, **extra}


def _span(ids_key: str = "_spanContext") -> dict[str, Any]:
    """A span as ``JSON.stringify(span)`` writes a JS SDK ``SpanImpl``."""
    return {"resource": {"_rawAttributes": [["service.name", "gemini-cli"]]},
            "instrumentationScope": {"name": "gemini-cli"},
            ids_key: {"traceId": "0af7651916cd43dd8448eb211c80319c",
                      "spanId": "b7ad6b7169203331", "traceFlags": 1},
            "parentSpanContext": None, "kind": 0, "attributes": _attrs(), "links": [],
            "events": [], "name": "llm_call", "status": {"code": 1},
            "startTime": [1780734307, 335000000], "endTime": [1780734309, 225000000],
            "_ended": True, "_duration": [1, 890000000]}


def test_gemini_content_under_the_convention_s_keys_is_read_as_gemini_s() -> None:
    s = InMemoryStorage()
    report = import_text(s, json.dumps(_attrs()), name="span.json")
    [rid] = report.runs_created
    [thread] = report.threads_created
    msgs = s.memory.get_messages(thread)
    assert [m.role for m in msgs] == ["user", "assistant", "tool", "assistant"]
    [call] = msgs[1].tool_calls()
    [result] = msgs[2].tool_results()
    assert (call.name, result.name, result.call_id) == ("list_directory", "list_directory",
                                                       call.id)
    assert msgs[3].text() == "One: a.txt."
    items = s.runs.get(f"{rid}:prompt")["items"]
    assert (items[0]["lane"], items[0]["message"]["content"]) == ("instructions",
                                                                  "You are terse.")
    step = s.runs.get(f"{rid}:step:0")
    assert step["response"]["usage"] == {"input_tokens": 50, "output_tokens": 6}
    assert any("a thought (the model's reasoning summary) not imported" in k.reason
               for k in report.skipped)


@pytest.mark.parametrize("ids_key", ["_spanContext", "spanContext"])
def test_a_js_span_given_to_json_stringify_is_read_with_its_ids(ids_key: str) -> None:
    s = InMemoryStorage()
    report = import_text(s, json.dumps(_span(ids_key), indent=2), name="telemetry.log")
    [rid] = report.runs_created
    run = s.runs.require_run(rid)
    assert run.started_at.isoformat() == "2026-06-06T08:25:07.335000+00:00"
    assert [m.text() for m in s.memory.get_messages(run.thread_id or "")][-1] == "One: a.txt."


def test_a_span_store_s_record_without_ids_is_said_to_be_a_span() -> None:
    record = {"scopeName": "codex", "spanName": "session_task.turn",
              "attributes": {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"}}
    with pytest.raises(ImportFormatError) as e:
        import_text(InMemoryStorage(), json.dumps(record), name="span.json")
    said = str(e.value)
    assert "this looks like a span ('session_task.turn') without its trace and span ids" \
        in said
    assert "the closest format this importer reads is an OpenTelemetry span" in said


def test_a_span_without_content_says_how_capture_is_turned_on() -> None:
    attrs = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m",
             "gen_ai.usage.input_tokens": 3, "gen_ai.usage.output_tokens": 1}
    with pytest.raises(ImportFormatError) as e:
        import_text(InMemoryStorage(), json.dumps(attrs), name="span.json")
    assert "content capture was off when it was recorded — it is turned on by, e.g., " \
           "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true —" in str(e.value)
