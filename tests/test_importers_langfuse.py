"""Langfuse exports (memory_core/importers/langfuse.py) in the shapes its API gives them:
input and output as JSON values (the API) or JSON text (the UI's export), a trace's
session and user, failed generations, one observation that cannot be read. The real
exports are in tests/fixtures/imports/real (langfuse-*)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memory_core.errors import ImportFormatError
from memory_core.importers import detect_format, import_text
from memory_core.storage.inmemory import InMemoryStorage

TRACE = "5f1c2e0a9b8d7c6e5f1c2e0a9b8d7c6e"


def gen(oid: str, start: str, inp: Any, out: Any, **more: Any) -> dict[str, Any]:
    return {"id": oid, "traceId": TRACE, "type": "GENERATION", "name": "ChatOpenAI",
            "startTime": f"2026-03-01T10:00:{start}Z", "endTime": f"2026-03-01T10:00:{start}Z",
            "parentObservationId": None, "model": "gpt-4o-mini", "input": inp,
            "output": out, "usageDetails": {"input": 20, "output": 5, "total": 25},
            "level": "DEFAULT", "statusMessage": None, "metadata": {}, **more}


ASK = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather?"}]
CALL = {"role": "assistant", "content": "", "tool_calls": [{
    "id": "call_1", "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}]}


def test_the_api_s_observations_list_imports_with_the_trace_s_session_and_user() -> None:
    trace = {"id": TRACE, "sessionId": "chat-42", "userId": "ana", "observations": [
        gen("b", "05", [*ASK, CALL, {"role": "tool", "tool_call_id": "call_1",
                                     "content": "rain"}],
            {"role": "assistant", "content": "Rain."}),
        gen("a", "01", ASK, CALL),  # (listed after the call it began before)
        {"id": "t", "traceId": TRACE, "type": "TOOL", "name": "get_weather",
         "startTime": "2026-03-01T10:00:03Z", "input": {"city": "Oslo"}, "output": "rain"}]}
    text = json.dumps(trace)
    assert detect_format(text) == "otel"
    s = InMemoryStorage()
    report = import_text(s, text)
    assert len(report.runs_created) == 2 and len(report.threads_created) == 1
    tid = report.threads_created[0]
    thread = s.memory.get_thread(tid)
    assert thread is not None and thread.resource_id == "ana"
    assert [m.role for m in s.memory.get_messages(tid)] == ["user", "assistant", "tool",
                                                            "assistant"]
    first = s.runs.get(f"{report.runs_created[0]}:step:0")
    assert first["model"]["name"] == "gpt-4o-mini" and first["usage_known"]
    assert (first["response"]["usage"]["input_tokens"], first["response"]["usage"][
        "output_tokens"]) == (20, 5)
    assert any("1 TOOL" in k.reason for k in report.skipped)
    # the same observations as the UI exports them (JSON as text) import alike
    ui = {"trace": {k: v for k, v in trace.items() if k != "observations"},
          "observations": [{**o, "input": json.dumps(o["input"]),
                            "output": json.dumps(o["output"])}
                           for o in trace["observations"]]}  # type: ignore[attr-defined]
    again = import_text(s2 := InMemoryStorage(), json.dumps(ui))
    assert [m.text() for m in s2.memory.get_messages(again.threads_created[0])] == [
        m.text() for m in s.memory.get_messages(tid)]


def test_a_failed_generation_is_a_failed_run_with_its_status_message() -> None:
    doc = {"data": [gen("a", "01", ASK, None, level="ERROR",
                        statusMessage="429 Too Many Requests")]}
    s = InMemoryStorage()
    report = import_text(s, json.dumps(doc))
    run = s.runs.require_run(report.runs_created[0])
    assert run.status == "failed" and run.error == "429 Too Many Requests"


def test_one_generation_that_cannot_be_read_is_noted_and_the_rest_imported() -> None:
    bad = gen("b", "02", [{"role": "narrator", "content": "Once"}], "upon")
    doc = {"data": [gen("a", "01", ASK, {"role": "assistant", "content": "Sunny."}), bad]}
    s = InMemoryStorage()
    report = import_text(s, json.dumps(doc))
    assert len(report.runs_created) == 1
    [note] = [k for k in report.skipped if k.reason.startswith("not imported")]
    assert note.where == "observation b (ChatOpenAI)" and "'narrator'" in note.reason
    with pytest.raises(ImportFormatError, match=r"observation b \(ChatOpenAI\): .*narrator"):
        import_text(InMemoryStorage(), json.dumps({"data": [bad]}))


def test_an_export_without_a_generation_says_what_it_holds() -> None:
    doc = {"data": [{"id": "s", "traceId": TRACE, "type": "SPAN", "name": "agent",
                     "startTime": "2026-03-01T10:00:00Z"}]}
    with pytest.raises(ImportFormatError, match=r"no GENERATION observation .* 1 SPAN"):
        import_text(InMemoryStorage(), json.dumps(doc))


def test_langchain_js_tool_results_named_by_their_tool_are_results() -> None:
    """LangChain.js through Langfuse: a tool's result has the tool's name as its role."""
    inp = [ASK[1], CALL, {"role": "get_weather", "content": "rain", "additional_kwargs": {}}]
    s = InMemoryStorage()
    report = import_text(s, json.dumps({"data": [gen("a", "01", inp, {
        "role": "assistant", "content": "Rain."})]}))
    [tid] = report.threads_created
    [result] = [p for m in s.memory.get_messages(tid) for p in m.tool_results()]
    assert (result.call_id, result.name, result.result) == ("call_1", "get_weather", "rain")
    assert any("the role 'get_weather', a tool's name" in k.reason for k in report.skipped)


def test_attributes_kept_as_text_are_read_as_the_span_had_them() -> None:
    """Langfuse keeps every attribute value as text: parameters and counts are numbers
    again, the conventions' arrays lists; message text stays text."""
    attrs = {"gen_ai.operation.name": "chat", "gen_ai.request.temperature": "0.7",
             "gen_ai.request.max_tokens": "256", "gen_ai.usage.input_tokens": "31",
             "gen_ai.usage.output_tokens": "7",
             "gen_ai.response.finish_reasons": '["stop"]'}
    doc = {"data": [gen("a", "01", [{"role": "user", "content": "[1, 2]"}],
                        [{"role": "assistant", "content": "12"}],
                        metadata=json.dumps({"attributes": attrs}))]}
    s = InMemoryStorage()
    report = import_text(s, json.dumps(doc))
    rid = report.runs_created[0]
    record = s.runs.get(f"{rid}:import")
    assert record["request_params"] == {"temperature": 0.7, "max_tokens": 256}
    step = s.runs.get(f"{rid}:step:0")
    assert (step["response"]["usage"]["input_tokens"],
            step["response"]["finish_reason"]) == (31, "stop")
    assert [m.text() for m in s.memory.get_messages(report.threads_created[0])] == [
        "[1, 2]", "12"]


def test_an_observation_that_cannot_be_read_at_all_is_noted() -> None:
    """A time that is no time, an observation that is no object: left out, noted, with
    the notes of an observation named with ': ' kept on it."""
    ok = gen("a", "01", "user: hi\nassistant: yo\nuser: ok", "fine", name="OpenAI: chat")
    bad = {**gen("b", "02", ASK, "x"), "startTime": "yesterday"}
    s = InMemoryStorage()
    report = import_text(s, json.dumps({"data": [ok, bad, 5]}))
    assert len(report.runs_created) == 1
    said = {(k.where, k.reason) for k in report.skipped}
    assert ("observation b (ChatOpenAI)", "not imported: startTime 'yesterday' is not an "
            "ISO 8601 time") in said
    assert ("observation 2", "not imported: expected an object, got int") in said
    assert ("observation a (OpenAI: chat)", "input recorded as text, one 'role: text' after "
            "another: read as 3 message(s)") in said


def test_observations_as_json_lines_and_a_trace_larger_than_the_file_s_head() -> None:
    obs = [gen("a", "01", ASK, {"role": "assistant", "content": "Sunny."}),
           gen("b", "02", [*ASK, {"role": "assistant", "content": "Sunny."},
                           {"role": "user", "content": "Sure?"}], "Yes.")]
    lines = import_text(InMemoryStorage(), "\n".join(json.dumps(o) for o in obs))
    assert len(lines.runs_created) == 2 and len(lines.threads_created) == 1
    big = {"trace": {"id": TRACE, "input": "x" * 200_000, "output": None},
           "observations": obs}
    assert len(import_text(InMemoryStorage(), json.dumps(big)).runs_created) == 2


def test_langfuse_2_s_usage_and_an_api_answer_as_its_sdk_wraps_it() -> None:
    """Langfuse 2's API gives an observation's counts as ``usage`` ({input, output,
    total, unit}) and promptTokens/completionTokens, not usageDetails; a client may
    keep the answer as received, {"message", "data": trace}."""
    obs = {k: v for k, v in gen("a", "01", ASK, "Sunny.").items() if k != "usageDetails"}
    for extra in ({"usage": {"input": 13, "output": 353, "total": 366, "unit": "TOKENS"}},
                  {"promptTokens": 13, "completionTokens": 353}):
        doc = {"message": "ok", "data": {"id": TRACE, "observations": [{**obs, **extra}]}}
        s = InMemoryStorage()
        report = import_text(s, json.dumps(doc))
        step = s.runs.get(f"{report.runs_created[0]}:step:0")
        assert step["usage_known"] and (step["response"]["usage"]["input_tokens"],
                                        step["response"]["usage"]["output_tokens"]) == (13, 353)


def test_langfuse_2_usage_in_another_unit_is_no_token_count() -> None:
    obs = {k: v for k, v in gen("a", "01", ASK, "Sunny.").items() if k != "usageDetails"}
    doc = {"data": [{**obs, "usage": {"input": 1200, "output": 340, "unit": "CHARACTERS"},
                     "promptTokens": 1200, "completionTokens": 340}]}
    s = InMemoryStorage()
    report = import_text(s, json.dumps(doc))
    assert s.runs.get(f"{report.runs_created[0]}:step:0")["usage_known"] is False


def test_an_answer_in_the_messages_api_s_blocks_is_read_by_its_reader() -> None:
    """An output in Anthropic's form (text and tool_use blocks) is read as the Messages
    API reads an assistant turn: its call kept with its id and arguments."""
    out = {"role": "assistant", "content": [
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather",
         "input": {"city": "Oslo"}}]}
    s = InMemoryStorage()
    report = import_text(s, json.dumps({"data": [gen("a", "01", ASK, out)]}))
    [reply] = [m for m in s.memory.get_messages(report.threads_created[0])
               if m.role == "assistant"]
    [call] = reply.tool_calls()
    assert (reply.text(), call.id, call.name, call.args) == (
        "Checking.", "toolu_1", "get_weather", {"city": "Oslo"})


def _counts(s: InMemoryStorage, rid: str) -> tuple[int, int, dict[str, int]]:
    usage = s.runs.get(f"{rid}:step:0")["response"]["usage"]
    return (usage["input_tokens"], usage["output_tokens"],
            s.runs.get(f"{rid}:import")["extra"].get("usage_detail", {}))


@pytest.mark.parametrize(("details", "counted"), [
    # Langfuse's own: every count beside the others, ``total`` their sum
    ({"input": 179, "output": 35, "total": 298, "input_cache_read": 20,
      "output_reasoning": 64}, (199, 99, {"reasoning": 64, "cached_input": 20})),
    # OpenInference's names as Langfuse keeps them, details within (total = in + out)
    ({"input": 85, "output": 29, "total": 114, "prompt_details.cache_read": 40,
      "completion_details.reasoning": 10}, (85, 29, {"reasoning": 10, "cached_input": 40})),
    # a total that is no sum of the counts: the counts taken as they are
    ({"input": 50, "output": 30, "total": 999, "output_reasoning": 12},
     (50, 30, {"reasoning": 12})),
])
def test_usage_details_are_counted_within_input_and_output(
        details: dict[str, int], counted: tuple[int, int, dict[str, int]]) -> None:
    doc = {"data": [{**gen("a", "01", ASK, "Sunny."), "usageDetails": details}]}
    s = InMemoryStorage()
    report = import_text(s, json.dumps(doc))
    assert _counts(s, report.runs_created[0]) == counted


def _continuing(oid: str, start: str, inp: Any, out: Any, rid: str,
                conversation: str | None) -> dict[str, Any]:
    attrs = {"gen_ai.operation.name": "chat", "gen_ai.response.id": rid,
             "server.address": "Unknown"}
    if conversation is not None:
        attrs["gen_ai.conversation.id"] = conversation
    return gen(oid, start, inp, out, metadata={"attributes": attrs})


def test_a_call_continuing_a_response_held_by_the_server_gets_its_history() -> None:
    """Microsoft's Agent Framework on the Responses API: each call after the first sends
    only what is new, its ``gen_ai.conversation.id`` the response it continues."""
    result = {"role": "tool", "tool_call_id": "call_1", "content": "rain"}
    again = {"role": "user", "content": "And tomorrow?"}
    obs = [_continuing("c", "09", [again], {"role": "assistant", "content": "Sun."},
                       "resp_3", "resp_2"),  # (listed first: the order they began counts)
           _continuing("a", "01", [ASK[1]], CALL, "resp_1", None),
           _continuing("b", "05", [result], {"role": "assistant", "content": "Rain."},
                       "resp_2", "resp_1")]
    s = InMemoryStorage()
    report = import_text(s, json.dumps({"data": obs}))
    assert len(report.threads_created) == 1 and len(report.runs_created) == 3
    assert [m.text() or m.role for m in s.memory.get_messages(report.threads_created[0])
            ] == ["Weather?", "assistant", "tool", "Rain.", "And tomorrow?", "Sun."]
    last = report.runs_created[2]
    held = s.runs.get(f"{last}:import")["extra"]["server_held_history"]
    assert held["reconstructed_from"] == "observation b (ChatOpenAI)"
    assert held["prompt_messages"] == [0, 4]
    assert len(s.runs.get(f"{last}:input")["messages"]) == 1
    # Unknown is no server: nothing said of where the calls went
    assert all("endpoint" not in s.runs.get(f"{r}:import")["extra"]
               for r in report.runs_created)


def test_a_result_for_a_call_of_a_response_not_in_the_file_is_kept_noted() -> None:
    result = {"role": "tool", "tool_call_id": "call_1", "content": "rain"}
    obs = [_continuing("a", "01", ASK, {"role": "assistant", "content": "Hi."},
                       "resp_1", None),
           _continuing("b", "05", [result], {"role": "assistant", "content": "Rain."},
                       "resp_2", "resp_elsewhere")]
    s = InMemoryStorage()
    report = import_text(s, json.dumps({"data": obs}))
    assert len(report.runs_created) == 2
    assert any("no earlier assistant message made that call; the model answered the "
               "request all the same: kept as sent" in k.reason for k in report.skipped)


@pytest.mark.parametrize(("attrs", "endpoint"), [
    ({"server.address": "aiplatform.googleapis.com", "server.port": "443"},
     "aiplatform.googleapis.com:443"),
    ({"server.address": "localhost", "server.port": 8080}, "localhost:8080"),
    ({"server.address": "::1"}, "::1"),
    ({"server.address": "api.openai.com"}, "api.openai.com"),
    ({"server.address": "Unknown"}, None),
    ({"server.address": "a host; rm -rf"}, None),
])
def test_where_a_span_says_it_was_sent_is_kept_literally(attrs: dict[str, Any],
                                                         endpoint: str | None) -> None:
    obs = gen("a", "01", ASK, "Sunny.", metadata={"attributes": {
        "gen_ai.operation.name": "chat", **attrs}})
    s = InMemoryStorage()
    report = import_text(s, json.dumps({"data": [obs]}))
    assert s.runs.get(f"{report.runs_created[0]}:import")["extra"].get("endpoint") == endpoint
