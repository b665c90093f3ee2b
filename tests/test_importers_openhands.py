"""OpenHands' LLM completion logs (``log_completions=True``, one JSON file per model
call): each log is one run of the call as sent and answered. Driven without native tool
calling, the model's answer is ``raw_response`` — the text it wrote, ``<function=…>``
and all — not ``response``, OpenHands' reading of it; the next request sends that
reading back as text again, and continues the thread. The logs of the real corpus are
agent-sdk's own fixtures (tests/fixtures/imports/real/README.md)."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memory_core.cli import app
from memory_core.errors import ImportFormatError
from memory_core.importers import import_file, import_text
from memory_core.storage.duckdb import DuckDBStorage
from memory_core.storage.inmemory import InMemoryStorage

REAL = Path(__file__).parent / "fixtures" / "imports" / "real"
DEEPSEEK = [REAL / f"openhands-litellm_proxy__deepseek__deepseek-chat-{t}.json"
            for t in ("1757015054.055", "1757015062.589", "1757015068.723", "1757015076.651")]
CLAUDE = [REAL / f"openhands-litellm_proxy__anthropic__claude-sonnet-4-20250514-{t}.json"
          for t in ("1757015025.972", "1757015029.090")]
TOOLS = ["execute_bash", "str_replace_editor", "finish"]


def _log(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def _reasons(report: Any) -> list[str]:
    return [f"{k.where}: {k.reason}" for k in report.skipped]


def _answer(s: InMemoryStorage, run_id: str) -> dict[str, Any]:
    return s.runs.get(f"{run_id}:step:0")["response"]


def test_a_native_log_is_a_run_of_its_messages_and_response() -> None:
    """Read as a chat record, the whole log's other keys were its parameters
    (cost, timestamp, latency_sec, context_window, kwargs) and the run began at the
    response's ``created``; now only ``kwargs``' are, and the call ends at the log's
    ``timestamp``, having begun ``latency_sec`` before."""
    s = InMemoryStorage()
    report = import_file(s, CLAUDE[1])
    run = report.runs_created[0]
    answer = _answer(s, run)
    assert answer["text"] == ("Let me first check the current directory structure and then "
                              "create the file in the appropriate location:")
    assert [c["name"] for c in answer["tool_calls"]] == ["execute_bash"]
    record = s.runs.get(f"{run}:import")
    assert record["request_params"] == {"max_completion_tokens": 64000, "temperature": 0.0,
                                        "top_p": 1.0}
    assert [t["name"] for t in s.runs.get(f"{run}:step:0")["tools"]] == TOOLS
    # timestamp 1757015029.090024, latency_sec 3.1146161556243896
    got = s.runs.require_run(run)
    assert got.finished_at == datetime(2025, 9, 4, 19, 43, 49, 90024, tzinfo=UTC)
    assert got.started_at == datetime(2025, 9, 4, 19, 43, 45, 975408, tzinfo=UTC)
    assert "line 1: OpenHands logged its cost (0.016431) and the model's context window " \
        "(200000 tokens): no parameters of the call, kept in this note" in _reasons(report)


def test_a_non_native_log_answers_with_what_the_model_wrote() -> None:
    """In non-fncall mode ``response`` is OpenHands' reading of the answer (the call it
    read out of the text, the text cut before it); the model wrote ``raw_response``."""
    s = InMemoryStorage()
    report = import_file(s, DEEPSEEK[1])
    run = report.runs_created[0]
    answer = _answer(s, run)
    assert answer["tool_calls"] == []
    assert answer["text"].endswith(
        "<function=str_replace_editor>\n<parameter=command>view</parameter>\n"
        "<parameter=path>/Users/xingyaow/Projects/OpenHands/openhands-v1-dev/agent-sdk."
        "worktree/telemetry/hello.py</parameter>\n<parameter=security_risk>LOW</parameter>\n")
    assert answer["usage"] == {"input_tokens": 8856, "output_tokens": 100}  # (response's)
    assert answer["finish_reason"] == "stop"
    assert "line 1: tool calling written into the prompt (OpenHands' non-native mode, its " \
        "tools sent with the call as well): the answer is what the model wrote " \
        "(raw_response); OpenHands' reading of it (response) and the agent's own form of " \
        "the messages (raw_messages) not imported" in _reasons(report)
    record = s.runs.get(f"{run}:import")
    assert record["request_params"] == {"max_completion_tokens": 8192, "stop": ["</function"],
                                        "temperature": 0.0, "top_p": 1.0}


def test_a_tool_call_the_raw_response_logged_empty_is_the_responses() -> None:
    """DeepSeek answered the first call with a native call (the tools were sent as well
    as written into the prompt), which ``raw_response`` logged as ``{}``; ``response``
    passed the answer on as it came."""
    s = InMemoryStorage()
    report = import_file(s, DEEPSEEK[0])
    answer = _answer(s, report.runs_created[0])
    assert [(c["id"], c["name"], c["args"]) for c in answer["tool_calls"]] == [
        ("call_00_MYiKq2phNBtYd9chUKjkAgdV", "execute_bash",
         {"command": "pwd && ls -la", "security_risk": "LOW"})]
    assert "line 1: raw_response logged its 1 tool call(s) empty: taken from response, " \
        "which passed the answer on as it came" in _reasons(report)
    # without the response's reading, the empty call is left out, said so
    log = _log(DEEPSEEK[0])
    log["response"]["choices"][0]["message"]["tool_calls"] = []
    report = import_text(s, json.dumps(log), name="lost.json")
    assert _answer(s, report.runs_created[0])["tool_calls"] == []
    assert "line 1: raw_response logged its 1 tool call(s) empty: not imported" \
        in _reasons(report)


def test_the_logs_of_one_conversation_are_one_thread(tmp_path: Path) -> None:
    """The next request sends the answer back as OpenHands writes its reading of it out
    — the call closed by ``</function>`` (the stop sequence cut it), a native call as
    ``<function=…>`` text — so each log began a thread of its own: four for DeepSeek's
    four calls. Imported one by one, and as a JSON array or JSON lines, in order."""
    db = tmp_path / "oh.duckdb"
    out = CliRunner().invoke(app, ["import", *map(str, DEEPSEEK), "--db", str(db),
                                   "--embedder", "none"])
    assert out.exit_code == 0, out.output
    assert "message 3 (assistant) is the answer an earlier import recorded, sent back as " \
        "its client rewrites it (recorded …'=security_risk>LOW</parameter>', sent " \
        "…'=security_risk>LOW</parameter>\\n</function>')" in out.output
    with DuckDBStorage(db) as s:
        threads = s.memory.list_threads()
        assert len(threads) == 1 and len(s.runs.list_runs()) == 4
        stored = s.memory.get_messages(threads[0].id)
        assert [m.role for m in stored] == ["user", "assistant"] * 4
        assert stored[3].text().endswith("<parameter=security_risk>LOW</parameter>\n")
    logs = [_log(p) for p in DEEPSEEK]
    for text in (json.dumps(logs), "\n".join(json.dumps(g) for g in logs)):
        s = InMemoryStorage()
        report = import_text(s, text, name="logs.json")
        assert report.threads_created and len(report.threads_created) == 1
        runs = report.runs_created
        assert [s.runs.require_run(r).started_at.second for r in runs] == [7, 14, 22, 29]
        last = _answer(s, runs[3])["text"]
        assert last.startswith("<function=finish>\n<parameter=message>The hello.py file")
    s = InMemoryStorage()  # the native logs continue their thread as before
    for path in CLAUDE:
        report = import_file(s, path)
    assert len(s.memory.list_threads()) == 1 and len(s.runs.list_runs()) == 2


def _native(**over: Any) -> dict[str, Any]:
    tool = {"type": "function", "function": {"name": "finish", "description": "Done.",
                                             "parameters": {"type": "object"}}}
    log = {"messages": [{"role": "system", "content": "You are OpenHands agent."},
                        {"role": "user", "content": "Say hi."}],
           "tools": [tool],
           "kwargs": {"extra_body": {"metadata": {"tags": ["agent:Agent"]}},
                      "tools": [tool], "temperature": 0.0, "max_completion_tokens": 64},
           "context_window": 8192,
           "response": {"id": "r1", "created": 1757015025, "model": "m",
                        "object": "chat.completion",
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": "Hi."}}],
                        "usage": {"prompt_tokens": 9, "completion_tokens": 2}},
           "cost": 0.25, "timestamp": 1757015030.5, "latency_sec": 2.25}
    return {**log, **over}


def test_tools_are_offered_when_sent_and_tags_are_no_parameters() -> None:
    """``kwargs``' tools were sent; later OpenHands drops them from ``kwargs`` (the log
    has them at its top), which in non-fncall mode it wrote into the prompt and never
    sent. ``extra_body.metadata`` (the client's tags) was sent with the call."""
    s = InMemoryStorage()
    report = import_text(s, json.dumps(_native()), name="log.json")
    run = report.runs_created[0]
    record = s.runs.get(f"{run}:import")
    assert record["request_params"] == {"max_completion_tokens": 64, "temperature": 0.0}
    assert record["extra"]["request_fields"] == {"metadata": {"tags": ["agent:Agent"]}}
    assert [t["name"] for t in s.runs.get(f"{run}:step:0")["tools"]] == ["finish"]
    assert "line 1: OpenHands logged its cost (0.25) and the model's context window (8192 " \
        "tokens): no parameters of the call, kept in this note" in _reasons(report)
    later = _native()
    later["kwargs"] = {k: v for k, v in later["kwargs"].items() if k != "tools"}
    report = import_text(s, json.dumps(later), name="later.json")
    assert [t["name"] for t in s.runs.get(f"{report.runs_created[0]}:step:0")["tools"]] \
        == ["finish"]
    prompted = _native(raw_messages=later["messages"],
                       raw_response=copy.deepcopy(later["response"]), kwargs=later["kwargs"])
    report = import_text(s, json.dumps(prompted), name="prompted.json")
    assert s.runs.get(f"{report.runs_created[0]}:step:0")["tools"] == []
    assert "line 1: its tools (finish) were written into the prompt, not sent with the " \
        "call: none offered" in _reasons(report)


def test_a_log_is_dated_by_its_timestamp_less_its_latency() -> None:
    s = InMemoryStorage()
    report = import_text(s, json.dumps(_native()), name="log.json")
    run = s.runs.require_run(report.runs_created[0])
    assert run.finished_at == datetime(2025, 9, 4, 19, 43, 50, 500000, tzinfo=UTC)
    assert run.started_at == datetime(2025, 9, 4, 19, 43, 48, 250000, tzinfo=UTC)
    report = import_text(s, json.dumps(_native(latency_sec="slow")), name="b.json")
    run = s.runs.require_run(report.runs_created[0])
    assert run.started_at == run.finished_at == datetime(2025, 9, 4, 19, 43, 50, 500000,
                                                         tzinfo=UTC)
    assert "line 1: its latency_sec 'slow' is no duration: the call's start is not known, " \
        "dated at its end (when the log was written)" in _reasons(report)
    report = import_text(s, json.dumps(_native(timestamp=None)), name="c.json")
    run = s.runs.require_run(report.runs_created[0])
    assert run.started_at == datetime(2025, 9, 4, 19, 43, 45, tzinfo=UTC)  # created
    assert "line 1: its timestamp None is no unix time: dated by the response's (whole " \
        "seconds)" in _reasons(report)


def test_a_malformed_log_is_named_and_the_others_read() -> None:
    good = _log(DEEPSEEK[1])
    bad = {**good, "raw_response": ["not", "a", "response"]}
    report = import_text(InMemoryStorage(), json.dumps([good, bad]), name="logs.json")
    assert len(report.runs_created) == 1
    assert any(k.where == "item 2" and k.reason.startswith(
        "not imported: an OpenHands log's 'raw_response' must be an object, got "
        "['not', 'a', 'response']") for k in report.skipped), report.skipped
    with pytest.raises(ImportFormatError) as refused:
        import_text(InMemoryStorage(), json.dumps(bad), name="bad.json")
    said = str(refused.value)
    assert said.startswith("line 1: an OpenHands log's 'raw_response' must "
                           "be an object, got ['not', 'a', 'response']; read as an OpenHands "
                           "LLM completion log, by its keys"), said
    assert said.count("\n") == 0


def test_a_log_without_its_call_is_refused_naming_the_format() -> None:
    log = {k: v for k, v in _native().items() if k not in ("messages", "response")}
    with pytest.raises(ImportFormatError, match="the closest format this importer reads is "
                                                "an OpenHands LLM completion log"):
        import_text(InMemoryStorage(), json.dumps(log), name="log.json")


def test_why_names_the_models_own_text_its_answer(tmp_path: Path) -> None:
    """``why`` found the model's ``<function=…>`` text only in a later request's history,
    OpenHands' reading having cut it from the answer."""
    db = tmp_path / "oh.duckdb"
    runner = CliRunner()
    out = runner.invoke(app, ["import", *map(str, DEEPSEEK), "--db", str(db),
                              "--embedder", "none"])
    assert out.exit_code == 0, out.output
    with DuckDBStorage(db) as s:
        runs = [r.run_id for r in s.runs.list_runs()]
    for run, phrase in ((runs[1], "<parameter=command>view</parameter>"),
                        (runs[2], "<parameter=command>python hello.py</parameter>"),
                        (runs[3], "contains the requested code. It successfully prints")):
        out = runner.invoke(app, ["why", run, "--text", phrase, "--db", str(db)])
        assert out.exit_code == 0, out.output
        assert out.output.startswith("written-after"), out.output
        assert "This is the answer recorded for this request" in out.output
    out = runner.invoke(app, ["why", runs[2], "--text", "You are OpenHands agent",
                              "--db", str(db)])
    assert out.output.startswith("instructions:"), out.output
    for run in runs:
        out = runner.invoke(app, ["verify", run, "--db", str(db)])
        assert out.exit_code == 0 and "0 tampered" in out.output, out.output
        out = runner.invoke(app, ["replay", run, "--db", str(db)])
        assert out.exit_code == 0 and f"replay of {run}: identical" in out.output, out.output
