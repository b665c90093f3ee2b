"""Importers: hand-written OpenAI JSONL and OTLP/JSON files become threads, messages and
honestly reconstructed runs; malformed files are rejected and leave the store unchanged."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_core.analysis.views import run_view
from memory_core.composition.memory import token_text
from memory_core.embedding.hashing import HashingEmbedder
from memory_core.errors import ImportFormatError, InvalidInputError
from memory_core.importers import detect_format, import_file, import_text
from memory_core.importers.writer import UNKNOWN_FIELDS
from memory_core.journal import load_run
from memory_core.lifecycle.erasure import erase_thread
from memory_core.provenance.prompt import FrozenPrompt
from memory_core.provenance.record import Memctx
from memory_core.storage.base import Storage
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.tokens import estimate_tokens
from memory_core.types import Message, ToolCallPart, ToolResultPart

FIX = Path(__file__).parent / "fixtures" / "imports"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def storage() -> InMemoryStorage:
    return InMemoryStorage(clock=lambda: T0)


def snapshot(s: Storage) -> dict[str, Any]:
    """Every table the store has, in a comparable form."""
    threads = s.memory.list_threads()
    tids = [t.id for t in threads]
    emb = s.memory.get_embeddings(tids)
    return {
        "threads": [t.model_dump() for t in threads],
        "messages": {t: [m.model_dump() for m in s.memory.get_messages(t)] for t in tids},
        "embeddings": (list(emb.thread_ids), emb.seqs.tolist(), emb.matrix.tolist()),
        "journal": s.runs.list(""),
        "runs": [r.model_dump() for r in s.runs.list_runs()],
        "wm": s.memory.list_working_memory_keys(),
        "observations": {t: [o.model_dump() for o in s.memory.list_observations(t)]
                         for t in tids},
    }


def only_thread(s: Storage, resource: str | None = None) -> str:
    ts = s.memory.list_threads(resource)
    assert len(ts) == 1
    return ts[0].id


# -- OpenAI JSONL --------------------------------------------------------------------------
def test_openai_groups_by_prefix_and_stores_each_message_once() -> None:
    s = storage()
    report = import_file(s, FIX / "openai_support.jsonl")
    assert report.format == "openai"
    assert len(report.threads_created) == 2 and len(report.runs_created) == 4
    assert report.messages_stored == 8
    refund = only_thread(s, "cust-7")  # metadata.user is the resource
    msgs = s.memory.get_messages(refund)
    assert [m.role for m in msgs] == ["user", "assistant", "tool", "assistant", "user",
                                      "assistant"]
    assert msgs[1].tool_calls() == [ToolCallPart(id="call_order", name="lookup_order",
                                                 args={"order_id": "1042"})]
    # the tool message carries no name; it is looked up from its call
    assert msgs[2].tool_results()[0].name == "lookup_order"
    assert msgs[2].tool_results()[0].call_id == "call_order"
    assert msgs[5].text() == "Done: refund of $89.50 issued for order 1042."
    # messages carry the run that first sent them; timestamps come from response.created
    runs = report.runs_created
    assert [m.run_id for m in msgs] == [runs[0], runs[0], runs[1], runs[1], runs[3], runs[3]]
    assert msgs[4].created_at == datetime.fromtimestamp(1767268860, tz=UTC)
    parcel = s.memory.get_messages(only_thread(s, "cust-9"))
    assert [m.text() for m in parcel] == ["Where is my parcel 77?",
                                          "Parcel 77 left the depot this morning."]
    # the system prompt is instructions, not a stored message
    assert all(m.role != "system" for m in msgs)


def test_openai_run_journal_is_reconstructed_honestly() -> None:
    s = storage()
    report = import_file(s, FIX / "openai_support.jsonl")
    rid = report.runs_created[3]
    tid = only_thread(s, "cust-7")
    run = s.runs.require_run(rid)
    assert run.agent == "gpt-4o-mini-2024-07-18" and run.status == "completed"
    assert run.thread_id == tid and run.resource_id == "cust-7"
    assert run.started_at == datetime.fromtimestamp(1767268860, tz=UTC)

    prompt = load_run(s, rid).prompt
    lanes = [(i.lane, i.seq) for i in prompt.items]
    assert lanes == [("instructions", None), ("recent", 0), ("recent", 1), ("recent", 2),
                     ("recent", 3), ("input", None)]
    stored = s.memory.get_messages(tid)
    for item in prompt.items:
        if item.lane == "recent":
            assert item.thread_id == tid
            assert item.message.content == stored[item.seq].content  # type: ignore[index]
    assert prompt.items[-1].message.text() == "Yes please, refund it."

    memctx = load_run(s, rid).memctx
    assert memctx is not None
    assert memctx.source == "imported"
    assert {"recalled", "near_misses", "dropped", "settings"} <= set(memctx.unknown_fields)
    assert memctx.unknown_fields == UNKNOWN_FIELDS
    assert memctx.recent_count == 4 and [r.seq for r in memctx.recent] == [0, 1, 2, 3]
    assert memctx.settings.recent_n == 4 and memctx.settings.recall_enabled is False
    assert memctx.recalled == [] and memctx.near_misses == []
    assert memctx.tokens.instructions == estimate_tokens("You are a support agent for Acme.")
    assert memctx.tokens.input == estimate_tokens("Yes please, refund it.")
    # counted exactly as AgentMemory counts a composed prompt (tool parts included)
    assert memctx.tokens.recent == sum(estimate_tokens(token_text(m)) for m in stored[:4])

    data = load_run(s, rid)
    assert data.input is not None
    assert [m.model_dump(mode="json") for m in data.input.messages] == [
        {"role": "user", "content": "Yes please, refund it.", "metadata": {}}]
    step = data.steps[0].record
    assert step.response.text == "Done: refund of $89.50 issued for order 1042."
    assert step.response.usage.model_dump() == {"input_tokens": 131, "output_tokens": 14}
    assert step.model.name == "gpt-4o-mini-2024-07-18" and step.model.kind == "imported"
    assert data.output is not None and data.output.model_dump() == {
        "v": 1, "text": step.response.text, "steps": 1, "tool_calls": 0,
        "stop_reason": "final"}
    assert data.persist_input is not None and data.persist_input.seqs == [4]
    assert data.persist_output is not None and data.persist_output.seqs == [5]
    assert data.import_record is not None and data.import_record.where == "line 4"

    # the first run's input is the user message; its response is a tool call
    first = load_run(s, report.runs_created[0])
    assert first.steps[0].response.tool_calls[0].name == "lookup_order"
    assert first.output is not None and first.output.tool_calls == 1
    assert first.output.stop_reason == "tool_call"
    # the second run continues the tool loop: its input is the tool result
    second = load_run(s, report.runs_created[1]).prompt
    assert [i.lane for i in second.items] == ["instructions", "recent", "recent", "input"]
    assert second.items[-1].message.role == "tool"


def test_openai_thread_key_aligns_trimmed_history() -> None:
    s = storage()
    report = import_file(s, FIX / "openai_keyed.jsonl")
    assert report.threads_created == ["conv-trip"]
    msgs = s.memory.get_messages("conv-trip")
    assert [m.text() for m in msgs] == [
        "Plan a weekend in Lisbon.", "Day 1: Alfama. Day 2: Belem.", "Add a food tour.",
        "Added a food tour on Day 1 evening.", "And the budget?", "About 400 euros."]
    # line 3 sent only a window of the history: it maps onto the stored seqs
    prompt = FrozenPrompt.model_validate(s.runs.get(f"{report.runs_created[2]}:prompt"))
    assert [(i.lane, i.seq) for i in prompt.items] == [("recent", 3), ("input", None)]
    # undated records get deterministic times in file order
    assert [r.started_at for r in s.runs.list_runs()] == sorted(
        r.started_at for r in s.runs.list_runs())
    assert s.runs.list_runs()[0].agent == "imported"


def test_openai_retry_is_not_stored_twice_and_a_branch_gets_its_own_thread(
        tmp_path: Path) -> None:
    line1 = {"messages": [{"role": "user", "content": "hi"}],
             "response": {"choices": [{"message": {"role": "assistant", "content": "hello"}}]}}
    branch = {"messages": [{"role": "user", "content": "hi"}],
              "response": {"choices": [{"message": {"role": "assistant", "content": "hey!"}}]}}
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in (line1, line1, branch)) + "\n")
    s = storage()
    report = import_file(s, path)
    assert len(report.runs_created) == 3 and len(report.threads_created) == 2
    texts = sorted([m.text() for m in s.memory.get_messages(t)]
                   for t in report.threads_created)
    assert texts == [["hi", "hello"], ["hi", "hey!"]]


def test_openai_batch_input_and_output_are_joined_by_custom_id() -> None:
    s = storage()
    report = import_file(s, FIX / "openai_batch.jsonl")
    assert len(report.runs_created) == 2
    assert [(k.where, k.reason) for k in report.skipped] == [
        ("line 3", "batch request 'eval-3' has no output line in this file")]
    tid = only_thread(s)
    assert [m.text() for m in s.memory.get_messages(tid)] == [
        "Good morning", "Bonjour", "Thank you", "Merci"]
    run = s.runs.require_run(report.runs_created[1])
    assert run.started_at == datetime.fromtimestamp(1767700010, tz=UTC)
    assert s.runs.get(f"{run.run_id}:import")["where"] == "line 2"


def test_openai_batch_output_without_input_is_rejected(tmp_path: Path) -> None:
    lines = (FIX / "openai_batch.jsonl").read_text().splitlines()
    path = tmp_path / "out-only.jsonl"
    path.write_text("\n".join(lines[3:]) + "\n")
    with pytest.raises(ImportFormatError, match="line 1: batch output for custom_id 'eval-2' "
                                                "has no input line"):
        import_file(storage(), path)


def test_openai_error_line_becomes_a_failed_run(tmp_path: Path) -> None:
    path = tmp_path / "err.jsonl"
    path.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}],
                                "error": {"code": 429, "message": "rate limited"}}) + "\n")
    s = storage()
    report = import_file(s, path)
    run = s.runs.require_run(report.runs_created[0])
    assert run.status == "failed" and "rate limited" in (run.error or "")
    assert s.runs.get(f"{run.run_id}:step:0") is None
    assert s.runs.get(f"{run.run_id}:output") is None


def _line(**fields: Any) -> str:
    base: dict[str, Any] = {"messages": [{"role": "user", "content": "hi"}],
                            "response": {"choices": [{"message": {"role": "assistant",
                                                                  "content": "hello"}}]}}
    base.update(fields)
    return json.dumps(base)


@pytest.mark.parametrize(("line", "expected"), [
    ("[1, 2]", "item 1: expected a JSON object, got int"),
    (_line(messages=[]), "line 1: 'messages' is empty"),
    (_line(messages=[{"role": "user", "content": 5}]),
     "line 1: message 0: content must be a string, null or a list of parts"),
    (_line(messages=[{"role": ["user"], "content": "x"}]),
     "line 1: message 0: unknown role ['user']"),
    # (a Claude Agent SDK transcript's messages: no chat messages at all)
    (_line(messages=[{"direction": "send", "message": {"type": "control_request"}}]),
     "line 1: message 0: has no 'role' (its keys: direction, message): not a chat message"),
    (_line(messages=[{"role": "assistant", "function_call": {"arguments": "{}"}}]),
     "line 1: message 0: tool call 0 has no function name"),
    (_line(messages=[{"role": "tool", "content": "x"}]),
     "line 1: message 0: tool message has no tool_call_id"),
    (_line(response={"choices": [{"message": {"role": "user", "content": "x"}}]}),
     "line 1: response message has role 'user'"),
    (_line(response={"choices": []}), "line 1: response has no 'choices'"),
    (_line(response=None), "line 1: missing 'response'"),
    (_line(thread_id=""), "line 1: 'thread_id' must be a non-empty string"),
    (_line(response={"created": "yesterday", "choices": [{"message": {"content": "x"}}]}),
     "line 1: response.created must be a unix timestamp"),
])
def test_openai_malformed_lines(line: str, expected: str) -> None:
    s = storage()
    with pytest.raises(ImportFormatError) as info:
        import_text(s, line)
    assert str(info.value).startswith(expected), str(info.value)
    assert snapshot(s) == snapshot(storage())


def test_a_function_message_answering_no_call_is_kept_not_its_request_dropped() -> None:
    """A legacy ``function`` message names its tool, and the API takes it with no call
    before it (langgraph's LLMCompiler sends the results of tools its planner ran): the
    request is imported, each result under an id stable across the conversation's
    requests, and noted — it was left out whole, its answer with it."""
    s = storage()
    sent = [{"role": "user", "content": "How old is the oldest parrot?"},
            {"role": "function", "name": "search", "content": "Cookie, 82 years"}]
    report = import_text(s, "\n".join([
        _line(messages=sent, response={"choices": [{"message": {
            "role": "assistant", "content": "Cookie, at 82."}}]}),
        _line(messages=[*sent, {"role": "assistant", "content": "Cookie, at 82."},
                        {"role": "user", "content": "Thanks"}])]))
    assert len(report.runs_created) == 2 and report.threads_created == [only_thread(s)]
    msgs = s.memory.get_messages(only_thread(s))
    [result] = msgs[1].tool_results()
    assert (result.name, result.result) == ("search", "Cookie, 82 years")
    notes = [f"{n.where}: {n.reason}" for n in report.skipped
             if "answers tool call" in n.reason]
    assert notes and notes[0].startswith(f"line 1: message 1 (tool) answers tool call "
                                         f"'{result.call_id}', which no earlier assistant "
                                         "message made: kept as sent"), report.skipped


def test_imported_thread_title_follows_the_spec() -> None:
    # SPEC §2.5: the first user text, whitespace collapsed, trimmed, cut to 80
    s = storage()
    words = "  Please   help " + "x" * 100
    import_text(s, _line(messages=[{"role": "user", "content": "   "},
                                   {"role": "user", "content": words}]))
    thread = s.memory.get_thread(only_thread(s))
    assert thread is not None
    assert thread.title == ("Please help " + "x" * 100)[:80]


def test_openai_developer_role_is_instructions_and_late_system_is_kept() -> None:
    s = storage()
    import_text(s, _line(messages=[
        {"role": "developer", "content": "Be brief."},
        {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"},
        {"role": "system", "content": "The user is now on the premium plan."},
        {"role": "user", "content": "thanks"}]))
    msgs = s.memory.get_messages(only_thread(s))
    assert [m.role for m in msgs] == ["user", "assistant", "system", "user", "assistant"]
    run = s.runs.list_runs()[0]
    prompt = FrozenPrompt.model_validate(s.runs.get(f"{run.run_id}:prompt"))
    assert [i.lane for i in prompt.items] == ["instructions", "recent", "recent", "input",
                                              "input"]
    assert prompt.items[0].message.role == "system"
    # stored as a system message, shown as the developer's it was sent as (the late
    # system message as a system one)
    assert [(i.lane, i.role) for lane in run_view(s, run.run_id).lanes
            for i in lane.items][:3] == [("instructions", "developer"),
                                         ("recent", "user"), ("recent", "assistant")]


# -- OTLP/JSON -------------------------------------------------------------------------------
def test_otel_genai_attributes() -> None:
    s = storage()
    report = import_file(s, FIX / "otel_genai.json")
    assert report.format == "otel"
    assert report.threads_created == ["conv-weather-1"]
    assert [k.reason for k in report.skipped] == [
        "not a model call (operation 'execute_tool') and no message content"]
    thread = s.memory.require_thread("conv-weather-1")
    assert thread.resource_id == "traveller-3"
    msgs = s.memory.get_messages("conv-weather-1")
    assert [m.role for m in msgs] == ["user", "assistant", "tool", "assistant"]
    assert msgs[2].tool_results() == [ToolResultPart(
        call_id="call_w1", name="get_weather", result={"forecast": "rain", "high_c": 14})]
    assert msgs[0].created_at == datetime.fromtimestamp(1767340800, tz=UTC)
    assert msgs[1].created_at == datetime.fromtimestamp(1767340801.5, tz=UTC)
    runs = s.runs.list_runs()
    assert [r.agent for r in runs] == ["gpt-4o-2024-08-06", "gpt-4o"]
    assert runs[0].finished_at == datetime.fromtimestamp(1767340801.5, tz=UTC)
    step = s.runs.get(f"{runs[0].run_id}:step:0")
    assert step["response"]["usage"] == {"input_tokens": 52, "output_tokens": 17}
    assert step["response"]["finish_reason"] == "tool_call"
    assert step["model"]["temperature"] == 0.2
    prompt = FrozenPrompt.model_validate(s.runs.get(f"{runs[1].run_id}:prompt"))
    assert [(i.lane, i.seq) for i in prompt.items] == [
        ("instructions", None), ("recent", 0), ("recent", 1), ("input", None)]
    assert prompt.items[0].message.text() == "You help travellers pack."


def test_otel_older_event_form() -> None:
    s = storage()
    report = import_file(s, FIX / "otel_events.json")
    # no conversation id: the calls group by shared history (not by trace)
    assert len(report.threads_created) == 1
    tid = report.threads_created[0]
    msgs = s.memory.get_messages(tid)
    assert [m.role for m in msgs] == ["user", "assistant", "tool", "assistant"]
    assert msgs[1].tool_calls()[0].args == {"minutes": 9}
    assert msgs[2].tool_results()[0].name == "timer"
    assert msgs[3].text() == "Nine minutes for hard-boiled; I set a timer."
    first = s.runs.list_runs()[0]
    prompt = FrozenPrompt.model_validate(s.runs.get(f"{first.run_id}:prompt"))
    assert [i.lane for i in prompt.items] == ["instructions", "input"]
    step = s.runs.get(f"{first.run_id}:step:0")
    assert step["response"]["usage"] == {"input_tokens": 40, "output_tokens": 12}


def test_otel_openinference_attributes_and_values() -> None:
    s = storage()
    report = import_file(s, FIX / "otel_openinference.json")
    assert report.threads_created == ["sess-42"]
    assert [k.reason for k in report.skipped] == [
        "not a model call (operation 'RETRIEVER') and no message content"]
    assert [m.text() for m in s.memory.get_messages("sess-42")] == [
        "How many vacation days do I get?", "25 days a year.", "Do they roll over?",
        "Up to 5 days roll over."]
    runs = s.runs.list_runs()
    assert runs[0].agent == "gpt-4o-mini" and runs[1].agent == "imported"
    second = FrozenPrompt.model_validate(s.runs.get(f"{runs[1].run_id}:prompt"))
    assert [(i.lane, i.seq) for i in second.items] == [
        ("instructions", None), ("recent", 0), ("recent", 1), ("input", None)]


def _span(span_id: str, attrs: dict[str, str], status: dict[str, Any] | None = None
          ) -> dict[str, Any]:
    return {"traceId": "t" * 32, "spanId": span_id, "name": "chat m",
            "startTimeUnixNano": "1767600000000000000", "endTimeUnixNano": "1767600001000000000",
            "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()],
            "status": status or {}}


def _otlp(*spans: dict[str, Any]) -> str:
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]})


def test_otel_span_without_content_is_skipped_and_failed_span_is_a_failed_run() -> None:
    user = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "hi"}]}])
    text = _otlp(_span("00000000000000aa", {"gen_ai.operation.name": "chat"}),
                 _span("00000000000000bb", {"gen_ai.operation.name": "chat",
                                            "gen_ai.input.messages": user},
                       {"code": 2, "message": "timeout"}))
    s = storage()
    report = import_text(s, text)
    assert [k.where for k in report.skipped] == ["span 00000000000000aa (chat m)"]
    assert "content" in report.skipped[0].reason
    run = s.runs.require_run(report.runs_created[0])
    assert run.status == "failed" and run.error == "timeout"


def test_files_with_nothing_to_import_are_rejected() -> None:
    http = {"traceId": "t" * 32, "spanId": "00000000000000cc", "name": "GET /",
            "attributes": [{"key": "http.request.method", "value": {"stringValue": "GET"}}]}
    with pytest.raises(ImportFormatError, match=r"file: no GenAI model-call spans .*\(1 span"):
        import_text(storage(), _otlp(http))
    with pytest.raises(ImportFormatError, match="file: the file is empty"):
        import_text(storage(), "\n\n", format="openai")


# -- one bad record is left out, noted; the rest of the file imported -----------------------
ONE_BAD = [  # (file, the bad line, its error, its good lines, a text only it holds)
    ("openai_bad_json.jsonl", 3, "invalid JSON: Expecting ',' delimiter", 2, "oops"),
    ("openai_unknown_role.jsonl", 2, "message 1: unknown role 'robot'", 1, "beep"),
    ("openai_missing_messages.jsonl", 2, "this looks like an OpenAI chat-completions record "
                                         "whose request sends no 'messages'", 1, None),
]


@pytest.mark.parametrize(("name", "line", "error", "good", "own"), ONE_BAD)
def test_one_bad_record_is_noted_and_the_rest_imported(
        tmp_path: Path, name: str, line: int, error: str, good: int, own: str | None) -> None:
    s = storage()
    report = import_file(s, FIX / name, embed=HashingEmbedder(16))
    assert len(report.runs_created) == good
    notes = [(k.where, k.reason) for k in report.skipped if k.reason.startswith("not imp")]
    assert [(w, r[:len("not imported: ") + len(error)]) for w, r in notes] == [
        (f"line {line}", f"not imported: {error}")]
    stored = json.dumps(snapshot(s)["messages"], default=str)
    assert any(snapshot(s)["messages"].values())  # (the good records' messages)
    assert own is None or own not in stored  # nothing of the bad one
    # the bad record alone is refused, naming it, and writes nothing
    alone = _only_line(FIX / name, line, tmp_path)
    before = snapshot(s)
    with pytest.raises(ImportFormatError) as info:
        import_file(s, alone)
    assert error in str(info.value) and f"'{alone}'" in str(info.value)
    assert snapshot(s) == before


def _only_line(path: Path, n: int, folder: Path) -> Path:
    """A file of line ``n`` of ``path`` alone (a file none of whose records is read)."""
    alone = folder / f"line{n}-{path.name}"
    alone.write_text(path.read_text(encoding="utf-8").splitlines()[n - 1] + "\n",
                     encoding="utf-8")
    return alone


# -- malformed files leave the store unchanged -----------------------------------------------
MALFORMED = [
    ("otel_missing_messages.json", "span 00aa11bb22cc33dd (chat gpt-4o): missing messages"),
    ("otel_bad_attribute_json.json", "span fedcba9876543210 (chat gpt-4o): "
                                     "gen_ai.input.messages invalid JSON"),
]


@pytest.mark.parametrize(("name", "expected"), MALFORMED)
def test_malformed_file_names_the_record_and_writes_nothing(name: str, expected: str) -> None:
    s = storage()
    import_file(s, FIX / "openai_keyed.jsonl")  # existing data must survive untouched
    before = snapshot(s)
    with pytest.raises(ImportFormatError) as info:
        import_file(s, FIX / name, embed=HashingEmbedder(16))
    # the file first (several files are imported one by one), then the record
    assert str(info.value).startswith(f"file '{FIX / name}': {expected}"), str(info.value)
    assert snapshot(s) == before


def test_importing_the_same_file_twice_is_a_no_op() -> None:
    s = storage()
    first = import_file(s, FIX / "openai_support.jsonl")
    before = snapshot(s)
    again = import_file(s, FIX / "openai_support.jsonl")
    assert again.already_imported and again.runs_created == [] and again.messages_stored == 0
    assert "already imported" in again.skipped[-1].reason
    assert snapshot(s) == before
    assert first.runs_created[0] in again.skipped[-1].reason


def test_thread_id_collision_is_refused_before_writing() -> None:
    s = storage()
    s.memory.create_thread("conv-trip")
    before = snapshot(s)
    with pytest.raises(InvalidInputError, match="thread 'conv-trip' already exists"):
        import_file(s, FIX / "openai_keyed.jsonl")
    assert snapshot(s) == before


@pytest.mark.parametrize("fail_at", [1, 9, 20])
def test_a_write_failing_midway_is_compensated(fail_at: int,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    s = storage()
    import_file(s, FIX / "openai_keyed.jsonl")
    before = snapshot(s)
    calls = {"n": 0}
    real = s.runs.put_if_absent

    def flaky(key: str, value: Any) -> bool:
        calls["n"] += 1
        if calls["n"] == fail_at:
            raise RuntimeError("disk full")
        return real(key, value)

    monkeypatch.setattr(s.runs, "put_if_absent", flaky)
    with pytest.raises(RuntimeError, match="disk full"):
        import_file(s, FIX / "openai_support.jsonl", embed=HashingEmbedder(16))
    monkeypatch.undo()
    assert snapshot(s) == before
    # and the file can then be imported for real
    assert len(import_file(s, FIX / "openai_support.jsonl").runs_created) == 4


def test_a_failed_import_leaves_runs_that_say_the_same_untouched(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 33: the clean-up of a failed import erased its new threads with
    erase_thread, which redacted an existing run of the same person holding the same
    sentence: the database changed although the import failed. It now removes only
    what the import wrote."""
    from memory_core.composition.memory import AgentMemory
    from memory_core.models.scripted import ScriptedModel
    from memory_core.runs.runner import Agent, Runner

    s = storage()
    Runner(s, {"a": Agent("a", "Help.", ScriptedModel(["Sure."]))},
           memory=AgentMemory(s)).run(
        "a", run_id="mine", thread_id="mine", resource_id="cust-7",
        prompt="My order 1042 arrived broken. Can I get a refund?")
    before = snapshot(s)
    real = s.runs.put_if_absent
    calls = {"n": 0}

    def flaky(key: str, value: Any) -> bool:
        calls["n"] += 1
        if calls["n"] == 12:
            raise RuntimeError("disk full")
        return real(key, value)

    monkeypatch.setattr(s.runs, "put_if_absent", flaky)
    with pytest.raises(RuntimeError, match="disk full"):
        import_file(s, FIX / "openai_support.jsonl", embed=HashingEmbedder(16))
    monkeypatch.undo()
    assert snapshot(s) == before


# -- embedding, detection, options -----------------------------------------------------------
def test_embeddings_are_batched_with_progress(monkeypatch: pytest.MonkeyPatch) -> None:
    import memory_core.importers.writer as writer

    monkeypatch.setattr(writer, "EMBED_BATCH", 4)
    s = storage()
    seen: list[tuple[int, int]] = []
    embed = HashingEmbedder(16)
    report = import_file(s, FIX / "openai_support.jsonl", embed=embed,
                         progress=lambda d, t: seen.append((d, t)))
    # 8 messages, 2 of them tool call/result with no text
    assert report.embeddings_stored == 6
    assert seen == [(0, 6), (4, 6), (6, 6)]
    tid = only_thread(s, "cust-7")
    block = s.memory.get_embeddings([tid])
    assert block.seqs.tolist() == [0, 3, 4, 5]
    texts = [m.text() or "" for m in s.memory.get_messages(tid, seqs=[0, 3, 4, 5])]
    assert np.allclose(block.matrix, embed(texts))
    memctx = s.runs.get(f"{report.runs_created[0]}:memctx")
    assert memctx["settings"]["embedder"] == "hashing-16"


def test_stages_follow_the_whole_import(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """``stages`` reports reading as it goes (no total until the file is read), then
    planning, embedding, threads stored and runs recorded, each ending at its total."""
    import memory_core.importers.common as common
    import memory_core.importers.openai_jsonl as openai_jsonl
    import memory_core.importers.writer as writer

    for mod in (common, openai_jsonl):
        monkeypatch.setattr(mod, "READ_EVERY", 2)
    monkeypatch.setattr(writer, "WRITE_BATCH_THREADS", 1)
    monkeypatch.setattr(writer, "WRITE_BATCH_RUNS", 3)
    seen: list[tuple[str, int, int]] = []
    report = import_file(storage(), FIX / "openai_support.jsonl", embed=HashingEmbedder(16),
                         stages=lambda *a: seen.append(a))
    assert len(report.runs_created) == 4 and len(report.threads_created) == 2
    assert seen == [("read", 2, 0), ("read", 4, 0), ("read", 4, 4), ("planned", 4, 4),
                    ("embedded", 0, 6), ("embedded", 6, 6), ("stored", 1, 2),
                    ("stored", 2, 2), ("recorded", 3, 4), ("recorded", 4, 4)]
    # a file that fails to read reports no total (nothing else either)
    seen.clear()
    with pytest.raises(ImportFormatError):
        import_file(storage(), _only_line(FIX / "openai_unknown_role.jsonl", 2, tmp_path),
                    stages=lambda *a: seen.append(a))
    assert all(total == 0 for _, _, total in seen)


def test_an_otlp_import_reports_its_model_calls_read_and_embedding_to_both_callbacks(
        ) -> None:
    """OTLP is read whole: "read" comes once, counting the model calls; with both
    ``progress`` and ``stages`` the embedding goes to each."""
    seen: list[tuple[str, int, int]] = []
    embedded: list[tuple[int, int]] = []
    report = import_file(storage(), FIX / "otel_genai.json", embed=HashingEmbedder(16),
                         progress=lambda d, t: embedded.append((d, t)),
                         stages=lambda *a: seen.append(a))
    calls = len(report.runs_created)
    assert seen[:2] == [("read", calls, calls), ("planned", calls, calls)]
    assert [(d, t) for stage, d, t in seen if stage == "embedded"] == embedded
    assert embedded[-1] == (report.embeddings_stored, report.embeddings_stored)
    assert [s for s, _, _ in seen][-1] == "recorded"


def test_the_cli_prints_each_stage_start_and_end_and_little_between(
        capsys: pytest.CaptureFixture[str]) -> None:
    from memory_core.cli import ImportProgress

    show = ImportProgress(every=3600)
    for done in range(0, 5001, 1000):
        show("read", done, 0)
    show("read", 5000, 5000)
    for done in (0, 64, 128):
        show("embedded", done, 128)
    assert capsys.readouterr().err.splitlines() == [
        "read 0 records", "read 5,000 records", "embedded 0 of 128 messages",
        "embedded 128 messages"]


def test_embedder_dimension_mismatch_is_refused_before_writing() -> None:
    s = storage()
    import_file(s, FIX / "openai_keyed.jsonl", embed=HashingEmbedder(16))
    before = snapshot(s)
    with pytest.raises(InvalidInputError, match="32-dimensional"):
        import_file(s, FIX / "otel_genai.json", embed=HashingEmbedder(32))
    assert snapshot(s) == before


def test_format_detection_and_explicit_format() -> None:
    assert detect_format((FIX / "otel_genai.json").read_text()) == "otel"
    assert detect_format((FIX / "openai_support.jsonl").read_text()) == "openai"
    one_line = json.dumps(json.loads((FIX / "otel_events.json").read_text()))
    assert detect_format(one_line + "\n" + one_line) == "otel"
    with pytest.raises(ImportFormatError, match="line 1: this looks like a JSON object with "
                                                "keys resourceSpans"):
        import_text(storage(), one_line, format="openai")
    with pytest.raises(ImportFormatError, match="line 1: expected an OTLP/JSON object"):
        import_file(storage(), FIX / "openai_keyed.jsonl", format="otel")
    with pytest.raises(InvalidInputError, match="unknown import format 'csv'"):
        import_file(storage(), FIX / "otel_genai.json", format="csv")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="cannot read import file"):
        import_file(storage(), FIX / "does-not-exist.jsonl")


def test_resource_id_option_overrides_the_records() -> None:
    s = storage()
    import_file(s, FIX / "openai_support.jsonl", resource_id="acme")
    assert s.memory.list_resources() == ["acme"]
    assert {r.resource_id for r in s.runs.list_runs()} == {"acme"}


def test_erasing_an_imported_thread_removes_its_runs_and_journal() -> None:
    s = storage()
    import_file(s, FIX / "otel_genai.json")
    report = erase_thread(s, "conv-weather-1")
    assert report.runs == 2 and report.journal_entries > 0
    assert s.runs.list("") == [] and s.runs.list_runs() == []


def test_docs_name_every_unknown_field_and_report_field() -> None:
    from memory_core.importers import ImportReport

    doc = (Path(__file__).parent.parent / "docs" / "importing.md").read_text()
    for name in [*UNKNOWN_FIELDS, *ImportReport.model_fields]:
        if name not in ("format", "file", "sha1"):
            assert f"`{name}`" in doc, name


def test_duckdb_storage_imports_too(tmp_path: Path) -> None:
    from memory_core.storage import duckdb as duck
    s = duck.DuckDBStorage(str(tmp_path / "imp.duckdb"))
    try:
        report = import_file(s, FIX / "openai_support.jsonl", embed=HashingEmbedder(16))
        assert report.messages_stored == 8
        tid = only_thread(s, "cust-7")
        assert s.memory.get_messages(tid)[2].tool_results()[0].name == "lookup_order"
        assert Memctx.model_validate(s.runs.get(f"{report.runs_created[3]}:memctx")
                                     ).source == "imported"
        before = snapshot(s)
        with pytest.raises(ImportFormatError, match="line 1: message 1: unknown role"):
            import_file(s, _only_line(FIX / "openai_unknown_role.jsonl", 2, tmp_path))
        assert import_file(s, FIX / "openai_support.jsonl").already_imported
        assert snapshot(s) == before
    finally:
        s.close()


# -- property: OpenAI JSONL round trip -------------------------------------------------------
_text = st.text(alphabet=st.characters(codec="utf-8", categories=("L", "N", "P", "Zs")),
                min_size=1, max_size=30)
_args = st.dictionaries(st.sampled_from(["q", "city", "n"]),
                        st.one_of(st.integers(-5, 5), _text), max_size=2)


@st.composite
def conversations(draw: st.DrawFn, cid: int) -> list[Message]:
    """A well-formed conversation: user turns, each answered by text or by tool calls
    whose results come back before the final answer."""
    msgs: list[Message] = []
    for turn in range(draw(st.integers(1, 4))):
        # the first user message carries the conversation id so conversations differ
        text = draw(_text)
        msgs.append(Message(role="user", content=f"c{cid}: {text}" if turn == 0 else text))
        if draw(st.booleans()):
            n = draw(st.integers(1, 2))
            calls = [ToolCallPart(id=f"call_{cid}_{turn}_{k}", name=draw(st.sampled_from(
                ["search", "weather"])), args=draw(_args)) for k in range(n)]
            msgs.append(Message(role="assistant", content=list(calls)))
            for c in calls:
                msgs.append(Message(role="tool", content=[ToolResultPart(
                    call_id=c.id, name=c.name, result=draw(_text))]))
        msgs.append(Message(role="assistant", content=draw(_text)))
    return msgs


def _to_openai(m: Message) -> dict[str, Any]:
    if m.role == "tool":
        r = m.tool_results()[0]
        return {"role": "tool", "tool_call_id": r.call_id, "content": r.result}
    calls = m.tool_calls()
    if calls:
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": c.id, "type": "function",
             "function": {"name": c.name, "arguments": json.dumps(c.args)}} for c in calls]}
    return {"role": m.role, "content": m.text()}


def _lines(conv: list[Message], system: str | None, key: str | None) -> list[str]:
    """One request per assistant message: everything before it, and it as response."""
    head = [{"role": "system", "content": system}] if system else []
    out = []
    for i, m in enumerate(conv):
        if m.role == "assistant":
            rec: dict[str, Any] = {
                "request": {"messages": head + [_to_openai(x) for x in conv[:i]]},
                "response": {"choices": [{"message": _to_openai(m)}]}}
            if key is not None:
                rec["metadata"] = {"conversation_id": key}
            out.append(json.dumps(rec))
    return out


def _shape(m: Message) -> str:
    return json.dumps([m.role, [p.model_dump() for p in m.parts]], sort_keys=True)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), n=st.integers(1, 3), system=st.one_of(st.none(), _text),
       keyed=st.booleans())
def test_openai_jsonl_round_trip(data: st.DataObject, n: int, system: str | None,
                                 keyed: bool) -> None:
    convs = [data.draw(conversations(cid)) for cid in range(n)]
    queues = [_lines(c, system, f"conv-{cid}" if keyed else None)
              for cid, c in enumerate(convs)]
    # interleave the conversations' lines, keeping each conversation's order
    lines: list[str] = []
    while any(queues):
        k = data.draw(st.sampled_from([i for i, q in enumerate(queues) if q]))
        lines.append(queues[k].pop(0))
    s = storage()
    report = import_text(s, "\n".join(lines) + "\n", name="prop.jsonl")
    assert len(report.threads_created) == n
    assert len(report.runs_created) == len(lines)
    stored = {tid: [_shape(m) for m in s.memory.get_messages(tid)]
              for tid in report.threads_created}
    expected = [[_shape(m) for m in c] for c in convs]
    assert sorted(stored.values()) == sorted(expected)
    if keyed:
        assert stored == {f"conv-{cid}": e for cid, e in enumerate(expected)}
    assert report.messages_stored == sum(len(c) for c in convs)


def test_a_runs_records_are_made_when_its_write_batch_comes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Each run's journal records (its frozen prompt repeats its history) are made for
    the write batch that stores them, not all before the first write: all at once, a
    large log's runs held ~45x the file in memory. The result is the same."""
    from memory_core.importers import writer

    lines = "\n".join(_line(messages=[{"role": "user", "content": f"question {i}"}])
                      for i in range(7))
    expected = storage()
    import_text(expected, lines)
    made: list[int] = []
    at_first_start: list[int] = []
    real_records = writer.run_records

    def records(*a: Any, **k: Any) -> Any:
        made.append(1)
        return real_records(*a, **k)

    s = storage()
    first_start = type(s.runs).start_runs

    def start_runs(self: Any, runs: Any) -> Any:
        at_first_start.append(len(made))
        return first_start(self, runs)

    monkeypatch.setattr(writer, "run_records", records)
    monkeypatch.setattr(writer, "WRITE_BATCH_RUNS", 3)
    monkeypatch.setattr(type(s.runs), "start_runs", start_runs)
    report = import_text(s, lines)
    assert at_first_start[:1] == [3] and len(made) == 7  # a batch's, then the rest, once
    assert report.runs_created == [r.run_id for r in s.runs.list_runs()] and \
        len(report.runs_created) == 7
    assert snapshot(s) == snapshot(expected)


def test_a_request_ending_with_an_assistant_message_has_it_as_its_input() -> None:
    """crewAI nudges a looping agent with an assistant-role message ("Now it's time you
    MUST give your absolute best final answer") as the request's last message: the run's
    input was empty (what follows the last assistant message), so its replay failed
    with "prompt must not be an empty list of messages". That message is the input."""
    import json

    from memory_core.importers import import_text
    from memory_core.journal.seal import verify_run
    from memory_core.runs.replay import replay
    from memory_core.storage.inmemory import InMemoryStorage

    call = {"id": "call_1", "type": "function",
            "function": {"name": "get_final_answer", "arguments": "{}"}}
    ask = [{"role": "system", "content": "You are a tester."},
           {"role": "user", "content": "Keep using the tool."}]
    first = {"request": {"model": "m", "messages": ask},
             "response": {"choices": [{"message": {"role": "assistant", "content": None,
                                                   "tool_calls": [call]}}]}}
    nudge = {"role": "assistant", "content": "Now give your final answer."}
    second = {"request": {"model": "m", "messages": [
                  *ask, {"role": "assistant", "content": None, "tool_calls": [call]},
                  {"role": "tool", "tool_call_id": "call_1", "content": "42"}, nudge]},
              "response": {"choices": [{"message": {"role": "assistant", "content": "42"}}]}}
    st = InMemoryStorage()
    report = import_text(st, "\n".join(json.dumps(r) for r in (first, second)))
    rid = report.runs_created[1]
    assert [(i["lane"], i["message"]["role"]) for i in st.runs.get(f"{rid}:prompt")["items"]
            ] == [("instructions", "system"), ("recent", "user"), ("recent", "assistant"),
                  ("input", "tool"), ("input", "assistant")]
    # the tool result, first sent with the nudge, is input too
    assert [m["content"] for m in st.runs.get(f"{rid}:input")["messages"]][1:] == [
        "Now give your final answer."]
    assert verify_run(st, rid).status == "ok"
    assert replay(st, rid).messages_checked == 1


def test_a_span_that_cannot_be_a_run_is_noted_and_the_others_import() -> None:
    """One malformed model-call span of an export (a role no convention has) is left out
    with a note naming why; the file's other call imports. (It refused the file.)"""
    s = storage()
    report = import_file(s, FIX / "otel_unknown_role.json")
    assert len(report.runs_created) == 1
    assert [(k.where, k.reason) for k in report.skipped] == [(
        "span 9f8e7d6c5b4a3921 (chat gpt-4o)",
        "not imported: gen_ai.input.messages[0]: unknown role 'narrator' (expected one of "
        "system, user, assistant, tool)")]


def test_instructions_extended_as_a_conversation_goes_on_keep_its_thread() -> None:
    """Google ADK adds the artifacts it holds to its system instruction during a
    conversation: a request that continues a whole earlier conversation (its messages and
    answer) with those instructions and more after them stays in its thread, noted.
    Instructions changed otherwise, or a conversation not continued whole, start a new
    thread as before (two agents asked the same question are two conversations)."""
    def rec(system: str, *turns: str) -> str:
        msgs = [{"role": "system", "content": system}]
        for i, t in enumerate(turns[:-1]):
            msgs.append({"role": "user" if i % 2 == 0 else "assistant", "content": t})
        return json.dumps({"request": {"model": "m", "messages": msgs}, "response": {
            "choices": [{"message": {"role": "assistant", "content": turns[-1]}}]}})

    base = "You are a helpful agent."
    s = InMemoryStorage()
    report = import_text(s, "\n".join([
        rec(base, "Hi", "Hello"),
        rec(base + "\nYou hold the artifact a.png.", "Hi", "Hello", "Describe it", "A cross"),
        rec("You are another agent.", "Hi", "Hello", "Again", "Sure"),  # not an extension
        rec(base + " More.", "Hi", "Hey", "Describe it", "A dot"),  # not continued whole
    ]) + "\n")
    threads = [[m.text() for m in s.memory.get_messages(t)] for t in report.threads_created]
    assert threads[0] == ["Hi", "Hello", "Describe it", "A cross"]
    assert len(threads) == 3
    notes = [k.reason for k in report.skipped if "more added" in k.reason]
    assert notes == ["its instructions are those of the conversation it continues with "
                     "more added ('You hold the artifact a.png.'): kept in that "
                     "conversation's thread"]


def test_a_message_naming_an_otlp_key_is_no_span_export() -> None:
    """A chat record whose message says "resourceLogs" (found by the round trip above)
    was taken for an OTLP export by its first 4 KB and refused as one."""
    line = json.dumps({"messages": [
        {"role": "user", "content": "What is the field for log records?"},
        {"role": "assistant", "content": "resourceLogs"}]})
    report = import_text(InMemoryStorage(), line + "\n")
    assert report.format == "openai" and len(report.runs_created) == 1
