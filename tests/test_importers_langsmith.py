"""LangSmith runs import: each ``llm`` run is the model call it recorded (LangChain's
three message serialisations, tool calls and results, a wrap_openai client's request
and response, errors, token counts, the thread from its metadata, its start time);
chains, tools and retrievers are skipped naming their type; ``{"runs"}`` and
``{"items"}`` wrappers and JSON lines are read."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from memory_core.errors import ImportFormatError
from memory_core.importers import import_text
from memory_core.journal.seal import verify_run
from memory_core.runs.replay import replay
from memory_core.storage.inmemory import InMemoryStorage


def lc(kind: str, **kwargs: Any) -> dict[str, Any]:
    """A message as ``langchain_core.load.dumpd`` writes it."""
    return {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", kind],
            "kwargs": {"type": kind.removesuffix("Message").lower(), **kwargs}}


SYSTEM = lc("SystemMessage", content="You are a weather bot.")
ASK = lc("HumanMessage", content="Weather in Oslo?")
CALL = lc("AIMessage", content="", tool_calls=[
    {"name": "get_weather", "args": {"city": "Oslo"}, "id": "call_1", "type": "tool_call"}])
RESULT = lc("ToolMessage", content="Snow, -3C", tool_call_id="call_1", name="get_weather")
ANSWER = lc("AIMessage", content="It is snowing in Oslo.",
            response_metadata={"finish_reason": "stop", "model_name": "gpt-4o-2024-08-06"},
            usage_metadata={"input_tokens": 80, "output_tokens": 7, "total_tokens": 87})
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}}}}]


def llm_run(messages: list[Any], answer: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"id": "0c6d-1", "name": "ChatOpenAI", "run_type": "llm",
            "start_time": "2026-03-02T10:00:00.250000", "end_time": "2026-03-02T10:00:01",
            "inputs": {"messages": [messages]},
            "outputs": {"generations": [[{"text": answer["kwargs"]["content"],
                                          "type": "ChatGeneration", "message": answer,
                                          "generation_info": {"finish_reason": "stop"}}]],
                        "llm_output": None},
            "extra": {"invocation_params": {"model": "gpt-4o", "temperature": 0.2,
                                            "tools": TOOLS, "_type": "openai-chat"},
                      "metadata": {"thread_id": "conv-42", "ls_provider": "openai"}},
            "error": None, **extra}


def _import(doc: Any) -> tuple[InMemoryStorage, Any]:
    s = InMemoryStorage()
    return s, import_text(s, json.dumps(doc), name="runs.json")


def test_an_agent_trace_of_runs_imports_its_model_calls() -> None:
    chain = {"id": "root", "name": "AgentExecutor", "run_type": "chain",
             "inputs": {"input": "Weather in Oslo?"}, "outputs": {"output": "snow"}}
    tool = {"id": "t1", "name": "get_weather", "run_type": "tool",
            "inputs": {"city": "Oslo"}, "outputs": {"output": "Snow, -3C"}}
    s, report = _import([chain, llm_run([SYSTEM, ASK], CALL), tool,
                         llm_run([SYSTEM, ASK, CALL, RESULT], ANSWER)])
    [thread] = report.threads_created
    msgs = [m.as_message() for m in s.memory.get_messages(thread)]
    assert [m.role for m in msgs] == ["user", "assistant", "tool", "assistant"]
    assert [(c.id, c.name, c.args) for c in msgs[1].tool_calls()] == [
        ("call_1", "get_weather", {"city": "Oslo"})]
    assert msgs[3].content == "It is snowing in Oslo."
    assert [k.reason for k in report.skipped] == [
        "not a model call (LangSmith run_type 'chain', AgentExecutor)",
        "not a model call (LangSmith run_type 'tool', get_weather)"]
    first, second = report.runs_created
    step = s.runs.get(f"{second}:step:0")
    assert step["model"]["name"] == "gpt-4o-2024-08-06"
    assert step["response"]["usage"] == {"input_tokens": 80, "output_tokens": 7}
    assert [t["name"] for t in step["tools"]] == ["get_weather"]
    assert s.runs.get(f"{second}:import")["request_params"]["temperature"] == 0.2
    assert s.memory.get_thread(thread).metadata["import"]["key"] == "conv-42"
    assert s.runs.require_run(first).started_at == datetime(2026, 3, 2, 10, 0, 0, 250000,
                                                            tzinfo=UTC)
    for rid in report.runs_created:
        assert verify_run(s, rid).status == "ok"
        assert replay(s, rid).messages_checked == 1


@pytest.mark.parametrize("human", [
    lc("HumanMessage", content="hi"),
    {"type": "human", "data": {"content": "hi", "additional_kwargs": {}}},
    {"type": "human", "content": "hi"},
], ids=["dumpd", "message_to_dict", "plain"])
def test_every_langchain_message_serialisation_reads(human: dict[str, Any]) -> None:
    s, report = _import({"runs": [llm_run([human], lc("AIMessage", content="hello"))]})
    [thread] = report.threads_created
    assert [(m.role, m.text()) for m in s.memory.get_messages(thread)] == [
        ("user", "hi"), ("assistant", "hello")]


def test_a_wrap_openai_run_is_its_request_and_response() -> None:
    run = {"name": "ChatOpenAI", "run_type": "LLM", "start_time": "2026-03-02T10:00:00Z",
           "inputs": {"model": "gpt-4o-mini", "messages": [
               {"role": "user", "content": "Say hi"}], "temperature": 0},
           "outputs": {"choices": [{"message": {"role": "assistant", "content": "hi"},
                                    "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": 9, "completion_tokens": 1},
                       "model": "gpt-4o-mini-2024-07-18"}}
    s, report = _import({"items": [run], "next_cursor": None})
    [rid] = report.runs_created
    assert s.runs.get(f"{rid}:step:0")["model"]["name"] == "gpt-4o-mini-2024-07-18"


def test_a_failed_run_and_a_file_of_no_model_call() -> None:
    s, report = _import([{**llm_run([ASK], ANSWER), "outputs": None,
                          "error": "RateLimitError: 429"}])
    run = s.runs.require_run(report.runs_created[0])
    assert (run.status, run.error) == ("failed", "RateLimitError: 429")
    with pytest.raises(ImportFormatError, match=r"no model call among its records; not a "
                                                r"model call \(LangSmith run_type 'chain'"):
        import_text(InMemoryStorage(), json.dumps([
            {"name": "c", "run_type": "chain", "inputs": {}, "outputs": {}}]), name="r.json")
    with pytest.raises(ImportFormatError, match=r"item 1: message 0: a LangChain message of "
                                                r"unknown type 'robotmessage'"):
        import_text(InMemoryStorage(), json.dumps([llm_run([lc("RobotMessage", content="x")],
                                                           ANSWER)]), name="r.json")


def test_reasoning_blocks_and_unparsed_tool_calls_of_an_answer() -> None:
    # ChatAnthropic with thinking (and ChatOpenAI's reasoning blocks) refused the whole
    # file ("unknown type 'thinking'"); calls LangChain could not parse
    # (invalid_tool_calls) were dropped without a word
    thinking = lc("AIMessage", content=[
        {"type": "thinking", "thinking": "They want Oslo.", "signature": "sig"},
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Oslo"}}],
        tool_calls=[{"name": "get_weather", "args": {"city": "Oslo"}, "id": "call_1"}],
        invalid_tool_calls=[{"name": "get_time", "args": "{\"tz\": Oslo", "id": "call_2",
                             "error": None, "type": "invalid_tool_call"}])
    reasoning = lc("AIMessage", content=[{"type": "reasoning", "summary": []},
                                         {"type": "text", "text": "Snow."}])
    s, report = _import([llm_run([ASK], thinking), llm_run([ASK], reasoning)])
    first, second = report.runs_created
    step = s.runs.get(f"{first}:step:0")["response"]
    assert step["text"] == "Checking."
    assert [(c["id"], c["name"], c["args"]) for c in step["tool_calls"]] == [
        ("call_1", "get_weather", {"city": "Oslo"}), ("call_2", "get_time", '{"tz": Oslo')]
    assert s.runs.get(f"{second}:step:0")["response"]["text"] == "Snow."
    reasons = [k.reason for k in report.skipped]
    assert "generation: content block 0 (thinking) not imported" in reasons
    assert "generation: content block 0 (reasoning) not imported" in reasons
    assert any("1 tool call(s) LangChain could not parse" in r for r in reasons)
    for rid in report.runs_created:
        assert verify_run(s, rid).status == "ok"
        assert replay(s, rid).messages_checked == 1


def test_chunk_classes_of_every_message_read() -> None:
    chat = {"type": "ChatMessageChunk", "data": {"role": "user", "content": "hi"}}
    s, report = _import([llm_run([chat], lc("AIMessageChunk", content="hello"))])
    [thread] = report.threads_created
    assert [(m.role, m.text()) for m in s.memory.get_messages(thread)] == [
        ("user", "hi"), ("assistant", "hello")]


def test_a_failed_tool_result_keeps_is_error() -> None:
    failed = lc("ToolMessage", content="timeout", tool_call_id="call_1", name="get_weather",
                status="error")
    s, report = _import([llm_run([SYSTEM, ASK, CALL, failed], ANSWER)])
    msgs = s.memory.get_messages(report.threads_created[0])
    [tool] = [m for m in msgs if m.role == "tool"]
    assert tool.metadata.get("is_error") is True


def test_a_run_is_timed_by_its_own_start_and_end() -> None:
    """LangSmith's times of the call, not an answer's ``created`` (whole seconds); one
    that is no time is one error naming its key."""
    run = llm_run([lc("HumanMessage", content="Weather in Oslo?")], ANSWER,
                  start_time="2026-03-02T10:00:00.250000", end_time=1772445601500)
    s, report = _import([run])
    got = s.runs.require_run(report.runs_created[0])
    assert (got.started_at, got.finished_at) == (
        datetime(2026, 3, 2, 10, 0, 0, 250000, tzinfo=UTC),
        datetime(2026, 3, 2, 10, 0, 1, 500000, tzinfo=UTC))
    with pytest.raises(ImportFormatError, match="start_time 'soon' is not an ISO 8601"):
        _import([{**run, "start_time": "soon"}])
