"""MLflow traces (memory_core/importers/mlflow.py) in MLflow 3's and MLflow 2's span
shapes, as ``Trace.to_json()`` writes them: every attribute JSON text, the model spans'
request and response bodies read by the registry's formats."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memory_core.errors import ImportFormatError
from memory_core.importers import detect_format, import_text
from memory_core.storage.inmemory import InMemoryStorage

ASK = {"model": "gpt-4o-mini", "temperature": 0.2,
       "messages": [{"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "Best apple for pie?"}]}
ANSWER = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1764694341,
          "model": "gpt-4o-mini-2024-07-18", "choices": [
              {"index": 0, "finish_reason": "stop",
               "message": {"role": "assistant", "content": "Granny Smith."}}]}


def attrs(kind: str, inputs: Any = None, outputs: Any = None, **more: Any) -> dict[str, str]:
    out = {"mlflow.traceRequestId": json.dumps("tr-1"), "mlflow.spanType": json.dumps(kind)}
    if inputs is not None:
        out["mlflow.spanInputs"] = json.dumps(inputs)
    if outputs is not None:
        out["mlflow.spanOutputs"] = json.dumps(outputs)
    return out | {k: json.dumps(v) for k, v in more.items()}


def span3(sid: str, parent: str | None, kind: str, start: int, **kw: Any) -> dict[str, Any]:
    """A span as MLflow 3 writes it."""
    return {"trace_id": "tr-1", "span_id": sid, "parent_span_id": parent, "name": kind.lower(),
            "start_time_unix_nano": start, "end_time_unix_nano": start + 10**9,
            "events": [], "status": {"code": kw.pop("code", "STATUS_CODE_OK"),
                                     "message": kw.pop("message", "")},
            "attributes": attrs(kind, **kw)}


def span2(sid: str, parent: str | None, kind: str, start: int, **kw: Any) -> dict[str, Any]:
    """A span as MLflow 2 writes it."""
    return {"name": kind.lower(), "context": {"span_id": sid, "trace_id": "0xabc"},
            "parent_id": parent, "start_time": start, "end_time": start + 10**9,
            "status_code": kw.pop("code", "OK"), "status_message": kw.pop("message", ""),
            "attributes": attrs(kind, **kw), "events": []}


def test_an_mlflow_3_trace_s_model_span_is_its_call() -> None:
    answer = dict(ANSWER)  # (no usage: MLflow counted it)
    trace = {"info": {"trace_id": "tr-1", "state": "OK",
                      "trace_metadata": {"mlflow.trace_schema.version": "3"}},
             "data": {"spans": [
                 span3("a", None, "AGENT", 1764694340000000000, inputs={"q": "pie"},
                       outputs="Granny Smith."),
                 span3("b", "a", "CHAT_MODEL", 1764694340500000000, inputs=ASK,
                       outputs=answer, **{"mlflow.chat.tokenUsage": {
                           "input_tokens": 27, "output_tokens": 4, "total_tokens": 31}})]}}
    text = json.dumps(trace)
    assert detect_format(text) == "openai"
    s = InMemoryStorage()
    report = import_text(s, text)
    [rid] = report.runs_created
    assert [(m.role, m.text()) for m in s.memory.get_messages(report.threads_created[0])] == [
        ("user", "Best apple for pie?"), ("assistant", "Granny Smith.")]
    step = s.runs.get(f"{rid}:step:0")
    assert step["model"]["name"] == "gpt-4o-mini-2024-07-18"
    assert (step["response"]["usage"]["input_tokens"],
            step["response"]["usage"]["output_tokens"]) == (27, 4)
    assert s.runs.get(f"{rid}:import")["request_params"]["temperature"] == 0.2
    assert s.runs.require_run(rid).started_at.year == 2025
    said = [(k.where, k.reason) for k in report.skipped]
    assert ("span b (chat_model)", "the usage read from mlflow.chat.tokenUsage") in said
    assert ("file", "spans that are not model calls, not imported: 1 AGENT") in said


def test_an_mlflow_2_trace_wrapper_failure_and_unreadable_inputs() -> None:
    """A framework's model span around the client's is left out for the inner one; a
    failed call is a failed run; inputs that are no request body are noted."""
    spans = [
        span2("0x1", None, "CHAT_MODEL", 1731124123000000000,
              inputs=[[{"type": "human", "content": "hi"}]], outputs={"x": 1}),
        span2("0x2", "0x1", "CHAT_MODEL", 1731124123100000000, inputs=ASK, outputs=ANSWER),
        span2("0x3", None, "LLM", 1731124124000000000, inputs=ASK, code="ERROR",
              message="RateLimitError: 429"),
        span2("0x4", None, "CHAT_MODEL", 1731124125000000000,
              inputs=[[{"type": "human", "content": "hi"}]], outputs={"x": 1}),
    ]
    s = InMemoryStorage()
    report = import_text(s, json.dumps({"spans": spans}))
    assert len(report.runs_created) == 2
    ok, failed = (s.runs.require_run(r) for r in report.runs_created)
    assert ok.status == "completed"
    assert failed.status == "failed" and failed.error == "RateLimitError: 429"
    said = {(k.where, k.reason) for k in report.skipped}
    assert ("span 0x1 (chat_model)", "a model span around another: its messages are read "
            "from the inner one") in said
    assert ("span 0x4 (chat_model)", "not imported: mlflow.spanInputs is not a request "
            "body (got list)") in said


def test_a_trace_without_a_model_span_says_what_it_holds() -> None:
    trace = {"info": {}, "data": {"spans": [
        span3("a", None, "RETRIEVER", 1764694340000000000, inputs={"q": "pie"}, outputs=[])]}}
    with pytest.raises(ImportFormatError, match=r"no CHAT_MODEL or LLM span .* 1 RETRIEVER"):
        import_text(InMemoryStorage(), json.dumps(trace))


def test_other_files_naming_mlflow_s_attribute_are_not_taken_for_mlflow_traces() -> None:
    """An OTLP export of MLflow's spans ({"key": "mlflow.spanType"}) is read as OTLP,
    and a record whose data holds a key named so is read as its own format."""
    from memory_core.importers import detect_format
    otlp = {"resourceSpans": [{"scopeSpans": [{"spans": [{
        "traceId": "ab" * 16, "spanId": "cd" * 8, "name": "chat",
        "attributes": [{"key": "mlflow.spanType", "value": {"stringValue": '"LLM"'}}]}]}]}]}
    assert detect_format(json.dumps(otlp)) == "otel"
    record = {"request": {"model": "m", "messages": [{"role": "user", "content": "Hi"}]},
              "response": {"choices": [{"message": {"role": "assistant", "content": "x"}}]},
              "metadata": {"filter": {"mlflow.spanType": "LLM"}}}
    assert len(import_text(InMemoryStorage(), json.dumps(record)).runs_created) == 1


def test_a_span_that_cannot_be_read_is_noted_and_a_parent_cycle_keeps_both() -> None:
    spans = [span3("a", "b", "CHAT_MODEL", 1764694340000000000, inputs=ASK, outputs=ANSWER),
             span3("b", "a", "CHAT_MODEL", 1764694341000000000, inputs=ASK, outputs=ANSWER),
             span3("c", None, "LLM", 1764694342000000000, inputs="just text", outputs="x")]
    report = import_text(InMemoryStorage(), json.dumps({"data": {"spans": spans}}))
    assert len(report.runs_created) == 2
    assert ("span c (llm)", "not imported: mlflow.spanInputs is not a request body "
            "(got str)") in {(k.where, k.reason) for k in report.skipped}
