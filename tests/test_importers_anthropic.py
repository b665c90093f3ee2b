"""Anthropic Messages API traffic (``POST /v1/messages``) imports as OpenAI traffic does:
the same messages, lanes, runs and journal records, and imported runs replay
identically and verify. Each record here is written by hand in the API's documented
shapes; the real recordings are in test_importers_real.py."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import yaml

from memory_core.errors import ImportFormatError
from memory_core.importers import import_text
from memory_core.journal.seal import verify_run
from memory_core.runs.replay import replay
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import Message, TextPart, ToolCallPart, ToolResultPart

WEATHER = {"name": "get_weather", "description": "Weather of a city",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}
ASK = {"role": "user", "content": "Weather in Oslo?"}
CALL = {"role": "assistant", "content": [
    {"type": "text", "text": "Let me look."},
    {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}}]}


def message(*blocks: dict[str, Any], stop: str = "end_turn", **usage: int) -> dict[str, Any]:
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x-1",
            "content": list(blocks), "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5, **usage}}


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def jsonl(*records: dict[str, Any]) -> str:
    return "\n".join(json.dumps(r) for r in records) + "\n"


def cassette(*calls: tuple[str, dict[str, Any], int, str]) -> str:
    return yaml.safe_dump({"version": 1, "interactions": [
        {"request": {"method": "POST", "uri": uri, "body": json.dumps(body)},
         "response": {"status": {"code": code}, "body": {"string": answer}}}
        for uri, body, code, answer in calls]})


def stored(s: InMemoryStorage, thread: str) -> list[Message]:
    return [m.as_message() for m in s.memory.get_messages(thread)]


def record(s: InMemoryStorage, rid: str, what: str) -> Any:
    return s.runs.get(f"{rid}:{what}")


def test_a_tool_loop_maps_onto_the_openai_model_and_replays_identically() -> None:
    """Two requests of one tool loop: the call is the assistant's tool-call part, the
    tool_result a tool message named after the call, the text beside it a user message
    after it; one thread; every run replays identically and verifies."""
    first = {"request": {"model": "claude-x", "max_tokens": 512, "system": "Be brief.",
                         "messages": [ASK], "tools": [WEATHER]},
             "response": message(*CALL["content"], stop="tool_use")}
    second = {"request": {"model": "claude-x", "max_tokens": 512, "system": "Be brief.",
                          "tools": [WEATHER], "messages": [ASK, CALL, {"role": "user", "content": [
                              {"type": "tool_result", "tool_use_id": "toolu_1", "content": "Snow"},
                              text("In Celsius please.")]}]},
              "response": message(text("Snowing, -3 °C."))}
    s = InMemoryStorage()
    report = import_text(s, jsonl(first, second))
    assert len(report.threads_created) == 1 and len(report.runs_created) == 2
    assert stored(s, report.threads_created[0]) == [
        Message(role="user", content="Weather in Oslo?"),
        Message(role="assistant", content=[
            TextPart(text="Let me look."),
            ToolCallPart(id="toolu_1", name="get_weather", args={"city": "Oslo"})]),
        Message(role="tool", content=[ToolResultPart(call_id="toolu_1", name="get_weather",
                                                     result="Snow")]),
        Message(role="user", content=[TextPart(text="In Celsius please.")]),
        Message(role="assistant", content="Snowing, -3 °C.")]
    r1, r2 = report.runs_created
    prompt = record(s, r2, "prompt")["items"]
    assert [(i["lane"], i["message"]["role"]) for i in prompt] == [
        ("instructions", "system"), ("recent", "user"), ("recent", "assistant"),
        ("input", "tool"), ("input", "user")]
    assert prompt[0]["message"]["content"] == "Be brief."
    step = record(s, r1, "step:0")
    assert step["response"]["tool_calls"][0]["args"] == {"city": "Oslo"}
    assert step["response"]["finish_reason"] == "tool_use"
    assert [t["name"] for t in step["tools"]] == ["get_weather"]
    assert step["tools"][0]["parameters"] == WEATHER["input_schema"]
    assert record(s, r1, "output")["stop_reason"] == "tool_call"
    assert record(s, r1, "import")["extra"]["api"] == "anthropic"
    for rid in report.runs_created:
        assert verify_run(s, rid).status == "ok"
        assert replay(s, rid).messages_checked == 1
    assert replay(s, r1).ended_on_tool_call


def test_why_forgotten_and_compare_read_imported_claude_runs() -> None:
    """The analyses read an imported Claude run as an imported OpenAI one: the tool
    result is the second run's input, sent by the client; the answer written after."""
    from memory_core.analysis.diff import diff_runs
    from memory_core.analysis.forgotten import why_forgotten

    first = {"request": {"model": "claude-x", "max_tokens": 64, "messages": [ASK]},
             "response": message(*CALL["content"], stop="tool_use")}
    second = {"request": {"model": "claude-x", "max_tokens": 64, "messages": [
        ASK, CALL, {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "Snow"}]}]},
        "response": message(text("Snowing."))}
    s = InMemoryStorage()
    report = import_text(s, jsonl(first, second))
    thread, (r1, r2) = report.threads_created[0], report.runs_created
    fates = [why_forgotten(s, r2, (thread, seq)) for seq in range(4)]
    assert [(e.fate, e.evidence.get("lane")) for e in fates] == [
        ("sent-by-client", "recent"), ("sent-by-client", "recent"),
        ("sent-by-client", "input"), ("written-after", None)]
    diff = diff_runs(s, r1, r2)
    assert [(e.seq, e.lane_a, e.lane_b) for e in diff.entries] == [
        (0, "input", "recent"), (1, None, "recent"), (2, None, "input")]
    assert [p.status for p in diff.steps][:1] == ["changed"]


def test_system_as_text_blocks_is_the_instructions_lane() -> None:
    rec = {"request": {"model": "claude-x", "max_tokens": 64,
                       "system": [text("You are terse."),
                                  {**text("Answer in French."),
                                   "cache_control": {"type": "ephemeral"}}],
                       "messages": [{"role": "user", "content": [text("Hi")]}]},
           "response": message(text("Salut."))}
    s = InMemoryStorage()
    rid = import_text(s, jsonl(rec)).runs_created[0]
    items = record(s, rid, "prompt")["items"]
    assert items[0]["lane"] == "instructions"
    assert [p["text"] for p in items[0]["message"]["content"]] == ["You are terse.",
                                                                   "Answer in French."]
    assert [i["lane"] for i in items[1:]] == ["input"]
    assert replay(s, rid).messages_checked == 1


def test_a_tool_result_with_is_error_and_block_content() -> None:
    """Block content: its texts joined by newlines (as a tool message's parts are), an
    image kept as a placeholder; is_error kept on the tool message."""
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": "iVBORw0KGgo="}}
    rec = {"request": {"model": "claude-x", "max_tokens": 64, "messages": [ASK, CALL, {
        "role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                     "is_error": True,
                                     "content": [text("upstream timeout"), text("retry later"),
                                                 image]}]}]},
           "response": message(text("The weather service is down."))}
    s = InMemoryStorage()
    report = import_text(s, jsonl(rec))
    tool = stored(s, report.threads_created[0])[2]
    assert tool.content == [ToolResultPart(call_id="toolu_1", name="get_weather",
                                           result="upstream timeout\nretry later")]
    assert tool.metadata["is_error"] is True
    [att] = tool.metadata["attachments"]
    assert att["type"] == "image" and att["media_type"] == "image/png"
    # (the 8 bytes "iVBORw0KGgo=" encodes)
    assert att["bytes"] == 8 and len(att["sha256"]) == 64
    assert any("(image) kept as a placeholder" in k.reason for k in report.skipped)


STREAM = [
    {"type": "message_start", "message": {
        "id": "msg_s", "type": "message", "role": "assistant", "model": "claude-x-2",
        "content": [], "stop_reason": None, "usage": {"input_tokens": 40, "output_tokens": 1}}},
    {"type": "content_block_start", "index": 0,
     "content_block": {"type": "thinking", "thinking": "", "signature": ""}},
    {"type": "content_block_delta", "index": 0,
     "delta": {"type": "thinking_delta", "thinking": "Need the tool."}},
    {"type": "content_block_delta", "index": 0,
     "delta": {"type": "signature_delta", "signature": "c2ln"}},
    {"type": "content_block_stop", "index": 0},
    {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
    {"type": "ping"},
    {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Check"}},
    {"type": "content_block_delta", "index": 1,
     "delta": {"type": "text_delta", "text": "ing Oslo."}},
    {"type": "content_block_stop", "index": 1},
    {"type": "content_block_start", "index": 2, "content_block": {
        "type": "tool_use", "id": "toolu_s", "name": "get_weather", "input": {}}},
    {"type": "content_block_delta", "index": 2,
     "delta": {"type": "input_json_delta", "partial_json": ""}},
    {"type": "content_block_delta", "index": 2,
     "delta": {"type": "input_json_delta", "partial_json": "{\"ci"}},
    {"type": "content_block_delta", "index": 2,
     "delta": {"type": "input_json_delta", "partial_json": "ty\": \"Oslo\"}"}},
    {"type": "content_block_stop", "index": 2},
    {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
     "usage": {"output_tokens": 31}},
    {"type": "message_stop"}]


def sse(events: list[dict[str, Any]]) -> str:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)


def test_a_streamed_response_is_reassembled() -> None:
    """Text deltas joined, input_json_delta pieces joined and parsed into the call's
    arguments, stop reason and output tokens from message_delta; thinking noted."""
    body = {"model": "claude-x", "max_tokens": 256, "stream": True, "messages": [ASK],
            "tools": [WEATHER]}
    s = InMemoryStorage()
    report = import_text(s, cassette(("https://api.anthropic.com/v1/messages", body, 200,
                                      sse(STREAM))))
    reply = stored(s, report.threads_created[0])[1]
    assert reply == Message(role="assistant", content=[
        TextPart(text="Checking Oslo."),
        ToolCallPart(id="toolu_s", name="get_weather", args={"city": "Oslo"})])
    rid = report.runs_created[0]
    step = record(s, rid, "step:0")
    assert step["response"]["usage"] == {"input_tokens": 40, "output_tokens": 31}
    assert step["response"]["finish_reason"] == "tool_use"
    assert step["model"]["name"] == "claude-x-2" and step["usage_known"] is True
    imp = record(s, rid, "import")
    assert imp["extra"]["request_fields"] == {"stream": True}
    assert "stream" not in imp["request_params"]
    reasons = [k.reason for k in report.skipped]
    assert "response reassembled from 17 stream event(s)" in reasons
    assert "response: content block 0 (thinking) not imported" in reasons
    assert verify_run(s, rid).status == "ok" and replay(s, rid).messages_checked == 1
    # the same events as a list of parsed objects read alike
    listed = InMemoryStorage()
    again = import_text(listed, jsonl({"request": body, "response": STREAM}))
    assert stored(listed, again.threads_created[0])[1] == reply


def test_a_stream_cut_before_its_message_start_is_an_error() -> None:
    with pytest.raises(ImportFormatError, match=r"line 1: stream event 0: "
                                                r"'content_block_start' event before "
                                                "message_start"):
        import_text(InMemoryStorage(), jsonl({"request": {"model": "c", "messages": [ASK]},
                                              "response": STREAM[5:]}))


def test_an_error_response_is_a_failed_run() -> None:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    body = {"model": "claude-x", "max_tokens": 64, "messages": [ASK]}
    s = InMemoryStorage()
    report = import_text(s, cassette(
        ("https://api.anthropic.com/v1/messages", body, 529, json.dumps(error))))
    run = s.runs.require_run(report.runs_created[0])
    assert run.status == "failed" and run.error is not None
    # the status as recorded (this one's reason phrase is not), then the error as sent
    status, _, said = run.error.partition(": ")
    assert status == "HTTP 529" and json.loads(said) == error["error"]
    assert said == '{"type": "overloaded_error", "message": "Overloaded"}'
    assert stored(s, report.threads_created[0]) == [Message(role="user",
                                                            content="Weather in Oslo?")]
    # a JSON-lines record whose response is the error body (and an error event in a
    # stream) are failed runs alike
    lines = InMemoryStorage()
    report = import_text(lines, jsonl({"request": body, "response": error},
                                      {"request": body, "response": sse([STREAM[0], error])}))
    for rid in report.runs_created:
        failed = lines.runs.require_run(rid)
        assert failed.status == "failed" and json.loads(failed.error or "") == error["error"]
        # sealed as failed by the import: it verifies (it read "tampered: the run was
        # sealed as finished but its status is 'failed'", OpenAI's failed calls alike)
        assert verify_run(lines, rid).status == "ok"


def test_a_completed_imported_run_marked_failed_afterwards_is_tampered() -> None:
    s = InMemoryStorage()
    rid = import_text(s, jsonl({"request": {"model": "c", "max_tokens": 8, "messages": [ASK]},
                                "response": message(text("Cold."))})).runs_created[0]
    s.runs.set_run_status(rid, "failed", error="edited")
    report = verify_run(s, rid)
    assert report.status == "tampered" and report.first_mismatch == "runs-table row"


def test_an_orphan_tool_result_is_an_error_naming_the_record() -> None:
    """Its request is left out with that error as a note; alone, it is refused."""
    ghost = {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_ghost", "content": "42"}]}
    ok = {"request": {"model": "c", "max_tokens": 8, "messages": [ASK]},
          "response": message(text("Hi"))}
    bad = {"request": {"model": "c", "max_tokens": 8,
                       "messages": [ASK, {"role": "assistant", "content": "Hm."}, ghost]},
           "response": message(text("Hi"))}
    said = ("message 2 (user) answers tool call 'toolu_ghost', but the assistant message "
            "before it made no such call")
    s = InMemoryStorage()
    report = import_text(s, jsonl(ok, bad))
    assert len(report.runs_created) == 1
    assert [(k.where, k.reason[:len(said) + 14]) for k in report.skipped] == [
        ("line 2", f"not imported: {said}")]
    with pytest.raises(ImportFormatError, match=re.escape(f"line 1: {said}")):
        import_text(s := InMemoryStorage(), jsonl(bad))
    assert s.memory.list_threads() == []  # nothing half-written


@pytest.mark.parametrize(("after", "said"), [
    ([{"role": "user", "content": "Never mind."}], "message 2 (user) does not answer"),
    ([], "no message after it answers")])  # the request ends with the call
def test_an_unanswered_tool_call_is_an_error_naming_the_record(after: list[Any],
                                                               said: str) -> None:
    rec = {"request": {"model": "c", "max_tokens": 8, "messages": [ASK, CALL, *after]},
           "response": message(text("OK"))}
    with pytest.raises(ImportFormatError) as e:
        import_text(InMemoryStorage(), jsonl(rec))
    assert str(e.value).startswith(f"line 1: message 1 (assistant) made tool call(s) "
                                   f"'toolu_1' that {said}")


def test_thinking_is_noted_not_invented() -> None:
    """Thinking and redacted thinking blocks (response and history) are noted; the
    stored messages hold only what the conversation said."""
    thinking = {"type": "thinking", "thinking": "Hmm.", "signature": "c2ln"}
    redacted = {"type": "redacted_thinking", "data": "ZW5j"}
    rec = {"request": {"model": "c", "max_tokens": 8, "thinking": {"type": "enabled",
                                                                    "budget_tokens": 1024},
                       "messages": [ASK, {"role": "assistant", "content": [redacted, text("A")]},
                                    {"role": "user", "content": "More?"}]},
           "response": message(thinking, text("B"), text(" and C"))}
    s = InMemoryStorage()
    report = import_text(s, jsonl(rec))
    assert [m.content for m in stored(s, report.threads_created[0])] == [
        "Weather in Oslo?", "A", "More?", "B and C"]
    reasons = [k.reason for k in report.skipped]
    assert "message 1: content block 0 (redacted_thinking) not imported" in reasons
    assert "response: content block 0 (thinking) not imported" in reasons
    assert "response: 2 text blocks joined into one text" in reasons
    rid = report.runs_created[0]
    assert record(s, rid, "import")["request_params"]["thinking"] == {"type": "enabled",
                                                                      "budget_tokens": 1024}
    assert replay(s, rid).messages_checked == 1


def test_sampling_parameters_resource_and_cached_usage_are_recorded() -> None:
    rec = {"request": {"model": "claude-x", "max_tokens": 300, "temperature": 0.3,
                       "top_p": 0.9, "top_k": 40, "stop_sequences": ["END"],
                       "tool_choice": {"type": "auto"}, "metadata": {"user_id": "cust-7"},
                       "messages": [ASK], "tools": [WEATHER]},
           "response": message(text("Cold."), cache_read_input_tokens=1000,
                               cache_creation_input_tokens=24)}
    s = InMemoryStorage()
    report = import_text(s, jsonl(rec))
    rid = report.runs_created[0]
    assert s.runs.require_run(rid).resource_id == "cust-7"
    params = record(s, rid, "import")["request_params"]
    assert params == {"max_tokens": 300, "temperature": 0.3, "top_p": 0.9, "top_k": 40,
                      "stop_sequences": ["END"], "tool_choice": {"type": "auto"},
                      "metadata": {"user_id": "cust-7"}}
    model = record(s, rid, "step:0")["model"]
    assert (model["temperature"], model["top_p"], model["max_tokens"]) == (0.3, 0.9, 300)
    # input_tokens leaves out the cached prompt: the whole prompt is 10 + 1000 + 24
    assert record(s, rid, "step:0")["response"]["usage"] == {"input_tokens": 1034,
                                                            "output_tokens": 5}
    assert any("input tokens 1034 = input_tokens 10" in k.reason for k in report.skipped)


def test_a_bad_top_k_is_an_error_naming_the_value() -> None:
    rec = {"request": {"model": "c", "max_tokens": 8, "top_k": "forty", "messages": [ASK]},
           "response": message(text("x"))}
    with pytest.raises(ImportFormatError, match="line 1: request 'top_k' must be a number, "
                                                "got 'forty'"):
        import_text(InMemoryStorage(), jsonl(rec))


@pytest.mark.parametrize(("uri", "imported"), [
    ("https://api.anthropic.com/v1/messages", True),
    ("https://api.anthropic.com/v1/messages?beta=true", True),
    ("https://api.deepseek.com/anthropic/messages", True),  # an Anthropic-compatible base
    ("https://api.anthropic.com/v1/messages/count_tokens", False),
    ("https://api.openai.com/v1/threads/thread_1/messages", False),  # Assistants API
])
def test_cassettes_are_read_by_their_url(uri: str, imported: bool) -> None:
    body = {"model": "claude-x", "max_tokens": 64, "messages": [ASK]}
    answer = json.dumps(message(text("Cold.")))
    other = ("https://api.openai.com/v1/chat/completions",
             {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}, 200,
             json.dumps({"choices": [{"message": {"role": "assistant", "content": "hello"}}]}))
    s = InMemoryStorage()
    report = import_text(s, cassette((uri, body, 200, answer), other))
    assert len(report.runs_created) == (2 if imported else 1)
    if imported:
        assert stored(s, report.threads_created[0])[1].content == "Cold."
    else:
        assert report.skipped[0].where == "interaction 1"
        assert "not a model call this importer reads" in \
            report.skipped[0].reason


def test_bad_blocks_and_roles_are_errors_naming_them() -> None:
    def attempt(messages: list[Any], **request: Any) -> str:
        rec = {"request": {"model": "c", "max_tokens": 8, "messages": messages, **request},
               "response": message(text("x"))}
        with pytest.raises(ImportFormatError) as e:
            import_text(InMemoryStorage(), jsonl(rec))
        # (each error says the record was read as the Messages API's, by its keys)
        said, _, read_as = str(e.value).partition("; read as an Anthropic Messages API "
                                                  "record, by its request's keys: ")
        assert read_as.startswith("max_tokens, messages, model"), str(e.value)
        return said

    assert attempt([{"role": "robot", "content": "x"}, ASK]) == (
        "line 1: message 0: unknown role 'robot' (expected user, assistant or system)")
    assert attempt([{"role": "user", "content": [{"type": "video", "url": "v"}]}]) == (
        "line 1: message 0: content block 0 of a user message has type 'video' (expected "
        "text, image, document, search_result, container_upload or tool_result)")
    assert attempt([ASK], system=[{"type": "image"}]).startswith(
        "line 1: system block 0 must be a text block")
    assert attempt([ASK, {"role": "assistant", "content": [
        {"type": "tool_use", "name": "f", "input": {}}]}]).startswith(
        "line 1: message 1: tool_use block 0 needs an 'id' and a 'name'")


SEARCH_RESULT = {"type": "search_result", "source": "https://docs.example/snow",
                 "title": "Snow in Oslo", "citations": {"enabled": True},
                 "content": [text("Oslo gets snow from November."), text("Up to 30 cm.")]}


def test_search_results_are_read_as_their_text_with_source_and_title_kept() -> None:
    """A search_result block (in a user message, or a tool_result's content) is text the
    model read: its texts are the message's text parts (or the tool result's, joined),
    its source, title and place in metadata.search_results; noted."""
    rec = {"request": {"model": "c", "max_tokens": 8, "messages": [
        {"role": "user", "content": [SEARCH_RESULT, text("Does it snow in Oslo?")]},
        CALL,
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                      "content": [text("Found:"), {
                                          **SEARCH_RESULT, "citations": None,
                                          "content": [text("Snowing now.")]}]}]}]},
           "response": message(text("It snows."))}
    s = InMemoryStorage()
    report = import_text(s, jsonl(rec))
    msgs = stored(s, report.threads_created[0])
    assert msgs[0].content == [TextPart(text="Oslo gets snow from November."),
                               TextPart(text="Up to 30 cm."),
                               TextPart(text="Does it snow in Oslo?")]
    assert msgs[0].metadata["search_results"] == [{
        "index": 0, "texts": 2, "source": "https://docs.example/snow",
        "title": "Snow in Oslo", "citations": True}]
    assert msgs[2].tool_results()[0].result == "Found:\nSnowing now."
    assert msgs[2].metadata["search_results"] == [{
        "index": 1, "texts": 1, "source": "https://docs.example/snow", "title": "Snow in Oslo"}]
    reasons = {k.reason for k in report.skipped}
    assert "message 0: content block 0 (search_result) read as its text; its source and " \
        "title kept in metadata.search_results" in reasons
    assert "message 2: tool_result block 0: content block 1 (search_result) read as its " \
        "text; its source and title kept in metadata.search_results" in reasons
    assert replay(s, report.runs_created[0]).messages_checked == 1


def test_a_container_upload_is_an_attachment_placeholder() -> None:
    """A file uploaded into the code execution tool's container is kept as the
    placeholder an image or document is, its file id what identifies it."""
    rec = {"request": {"model": "c", "max_tokens": 8, "messages": [
        {"role": "user", "content": [text("Plot this."),
                                     {"type": "container_upload", "file_id": "file_011"}]}]},
           "response": message(text("Done."))}
    s = InMemoryStorage()
    report = import_text(s, jsonl(rec))
    [user, _] = stored(s, report.threads_created[0])
    assert user.content == [TextPart(text="Plot this.")]
    assert user.metadata["attachments"] == [
        {"index": 1, "type": "container_upload", "file_id": "file_011", "source": "file"}]
    assert "message 0: content block 1 (container_upload) kept as a placeholder" in {
        k.reason for k in report.skipped}


@pytest.mark.parametrize(("block", "error"), [
    ({**SEARCH_RESULT, "title": None},
     "search_result block 0 has no 'title' string, got None"),
    ({**SEARCH_RESULT, "source": 3}, "search_result block 0 has no 'source' string, got 3"),
    ({**SEARCH_RESULT, "content": "Snow."},
     "search_result block 0 needs a 'content' list of text blocks, got 'Snow.'"),
    ({**SEARCH_RESULT, "content": [{"type": "image"}]},
     "search_result block 0: content block 0 must be a text block, got {'type': 'image'}"),
    ({"type": "container_upload"},
     "container_upload block 0 has no 'file_id' string, got None")])
def test_bad_search_results_and_uploads_are_errors_naming_the_value(
        block: dict[str, Any], error: str) -> None:
    rec = {"request": {"model": "c", "max_tokens": 8,
                       "messages": [{"role": "user", "content": [block]}]},
           "response": message(text("x"))}
    with pytest.raises(ImportFormatError) as e:
        import_text(InMemoryStorage(), jsonl(rec))
    assert str(e.value) == (f"line 1: message 0: {error}; read as an Anthropic Messages "
                            "API record, by its request's keys: max_tokens, messages, model")


def test_repeated_anthropic_history_is_read_once_and_named_per_request() -> None:
    """Each request repeats its history: an identical raw message is read once per file
    (``SharedMessages``); a shared tool result still takes the name of each request's
    own call."""
    from memory_core.importers.containers import parse_openai

    result = {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}]}

    def conv(question: str, tool: str) -> dict[str, Any]:
        call = {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": tool, "input": {}}]}
        return {"request": {"model": "c", "max_tokens": 8, "messages": [
            {"role": "user", "content": question}, call, result]},
            "response": message(text("done"))}

    parsed = parse_openai(jsonl(conv("find it", "lookup"), conv("search it", "search")))
    a, b = parsed.exchanges
    assert a.history[2] is b.history[2]  # the same raw tool_result message, read once
    s = InMemoryStorage()
    report = import_text(s, jsonl(conv("find it", "lookup"), conv("search it", "search")))
    names = [m.tool_results()[0].name for t in report.threads_created
             for m in stored(s, t) if m.role == "tool"]
    assert names == ["lookup", "search"]


@pytest.mark.parametrize("flat", [
    {"messages": [{"role": "user", "content": "hi"}], "temperature": 0.2,
     "response": {"choices": [{"message": {"role": "assistant", "content": "hello"}}]}},
    {"model": "c", "system": "Be kind.", "messages": [{"role": "user", "content": "hi"}],
     "temperature": 0.2, "response": message(text("hello"))}])
def test_a_flat_record_s_own_keys_are_not_request_parameters(flat: dict[str, Any]) -> None:
    """A flat record holds the request's keys beside its own: its response, thread key
    and resource are not parameters (they were listed in request_params)."""
    s = InMemoryStorage()
    report = import_text(s, jsonl({**flat, "thread_id": "conv-1", "user_id": "u-1"}))
    assert report.threads_created == ["conv-1"]
    params = record(s, report.runs_created[0], "import")["request_params"]
    assert params == {"temperature": 0.2}


def test_a_prefilled_answer_is_noted() -> None:
    """A request ending with an assistant message (a prefill the response continues) is
    stored as sent, and noted."""
    rec = {"request": {"model": "c", "max_tokens": 8, "messages": [
        ASK, {"role": "assistant", "content": "The weather is"}]},
        "response": message(text(" snowy."))}
    s = InMemoryStorage()
    report = import_text(s, jsonl(rec))
    assert [m.content for m in stored(s, report.threads_created[0])] == [
        "Weather in Oslo?", "The weather is", " snowy."]
    assert any("ends with an assistant message (a prefill)" in k.reason
               for k in report.skipped)
    rid = report.runs_created[0]
    # the prefill is the client's, sent with the question: both are the input (the
    # input was empty, and replay failed: "prompt must not be an empty list")
    assert [(i["lane"], i["message"]["role"]) for i in record(s, rid, "prompt")["items"]] == [
        ("input", "user"), ("input", "assistant")]
    assert replay(s, rid).messages_checked == 1


def test_newer_context_blocks_are_noted_and_a_later_system_message_kept() -> None:
    """A compaction summary (and its stream delta), a tool_reference in a tool result and
    a system message adding a deferred tool are API-managed context: noted, not stored
    as text; the system message keeps its place, as a later OpenAI system message does."""
    compaction = {"type": "compaction", "content": "Summary: asked about Oslo."}
    rec = {"request": {"model": "c", "max_tokens": 8, "messages": [
        ASK, {"role": "assistant", "content": [compaction, *CALL["content"]]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                      "content": [{"type": "tool_reference",
                                                   "tool_name": "get_weather"}]}]},
        {"role": "system", "content": [
            {"type": "tool_addition", "tool": {"type": "tool_reference", "name": "f"}},
            text("Tools may change.")]},
        {"role": "user", "content": "And now?"}]},
        "response": sse([STREAM[0],
                         {"type": "content_block_start", "index": 0,
                          "content_block": {"type": "compaction", "content": None}},
                         {"type": "content_block_delta", "index": 0,
                          "delta": {"type": "compaction_delta", "content": "Summary."}},
                         {"type": "content_block_start", "index": 1,
                          "content_block": {"type": "text", "text": "Still snowing."}},
                         {"type": "message_stop"}])}
    s = InMemoryStorage()
    report = import_text(s, jsonl(rec))
    msgs = stored(s, report.threads_created[0])
    assert [(m.role, m.text()) for m in msgs] == [
        ("user", "Weather in Oslo?"), ("assistant", "Let me look."), ("tool", None),
        ("system", "Tools may change."), ("user", "And now?"), ("assistant", "Still snowing.")]
    assert msgs[2].tool_results()[0].result == ""
    reasons = {k.reason for k in report.skipped}
    assert {"message 1: content block 0 (compaction) not imported",
            "message 2: tool_result block 0: content block 0 (tool_reference) not imported",
            "message 3: content block 0 (tool_addition) not imported",
            "response: content block 0 (compaction) not imported"} <= reasons
    assert replay(s, report.runs_created[0]).messages_checked == 1


def test_claude_on_vertex_ai_is_read_by_its_url() -> None:
    """Vertex AI serves Claude at ``…/publishers/anthropic/models/<model>:rawPredict``
    (``:streamRawPredict``) with the Messages API's body and no model in it: such a
    cassette was skipped as "not a model call"."""
    import yaml

    body = {"anthropic_version": "vertex-2023-10-16", "max_tokens": 64,
            "messages": [{"role": "user", "content": "hi"}]}
    answer = {"type": "message", "role": "assistant", "content": [
        {"type": "text", "text": "hello"}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 8, "output_tokens": 1}}
    url = ("https://us-east5-aiplatform.googleapis.com/v1/projects/p/locations/us-east5/"
           "publishers/anthropic/models/claude-3-5-sonnet-v2@20241022:rawPredict")
    text = yaml.safe_dump({"interactions": [{
        "request": {"method": "POST", "uri": url, "body": json.dumps(body), "headers": {}},
        "response": {"status": {"code": 200}, "headers": {},
                     "body": {"string": json.dumps(answer)}}}]})
    s = InMemoryStorage()
    report = import_text(s, text, name="vertex.yaml")
    [rid] = report.runs_created
    assert report.apis == ["anthropic"]
    assert s.runs.get(f"{rid}:step:0")["model"]["name"] == "claude-3-5-sonnet-v2@20241022"
    assert s.runs.get(f"{rid}:step:0")["response"]["text"] == "hello"


def test_a_message_batch_file_joins_its_requests_and_results() -> None:
    """Anthropic's Message Batches: the requests file (``custom_id``, ``params``) and the
    results file (``custom_id``, ``result``) concatenated import as request/response
    records, as OpenAI's batch files do; they were refused as unknown records."""
    def params(text: str) -> dict[str, Any]:
        return {"model": "claude-sonnet-4-5", "max_tokens": 64,
                "messages": [{"role": "user", "content": text}],
                "metadata": {"user_id": "cust-7"}}

    message = {"id": "msg_1", "type": "message", "role": "assistant",
               "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": "Paris."}],
               "stop_reason": "end_turn", "usage": {"input_tokens": 12, "output_tokens": 2}}
    lines = [
        {"custom_id": "q1", "params": params("Capital of France?")},
        {"custom_id": "q2", "params": params("Capital of Peru?")},
        {"custom_id": "q3", "params": params("Capital of Chad?")},
        {"custom_id": "q2", "result": {"type": "errored", "error": {
            "type": "invalid_request_error", "message": "max_tokens too large"}}},
        {"custom_id": "q1", "result": {"type": "succeeded", "message": message}},
        {"custom_id": "q3", "result": {"type": "expired"}},
    ]
    s = InMemoryStorage()
    report = import_text(s, "\n".join(json.dumps(x) for x in lines), name="batch.jsonl")
    ok, errored, expired = (s.runs.require_run(r) for r in report.runs_created)
    assert (ok.status, errored.status, expired.status) == ("completed", "failed", "failed")
    assert "max_tokens too large" in (errored.error or "")
    assert expired.error == "batch request expired"
    assert report.apis == ["anthropic"]
    assert ok.resource_id == "cust-7"
    assert s.runs.get(f"{ok.run_id}:step:0")["response"]["text"] == "Paris."


def test_claude_code_s_billing_block_does_not_split_its_conversation() -> None:
    """Claude Code and the Claude Agent SDK open every request's system prompt with a
    billing block whose digest changes every request (``cch=…``): a tool loop was
    stored as a thread a request ("sends the whole of thread … under other
    instructions"). The block is left out of the conversation's identity — the real
    recordings of dd-trace-js's test agent, two calls of one loop, make one thread — and
    kept in the instructions stored; instructions that differ otherwise still part."""
    from pathlib import Path

    from memory_core.importers import import_file

    real = Path(__file__).parent / "fixtures" / "imports" / "real"
    s = InMemoryStorage()
    first = import_file(s, real / "ddtracejs-claude-agent-sdk_messages_post_d2998a83.json")
    second = import_file(s, real / "ddtracejs-claude-agent-sdk_messages_post_3cc65b08.json")
    [thread] = first.threads_created
    assert second.threads_created == [] and not [
        n for n in second.skipped if "thread" in n.reason]
    assert [r.thread_id for r in s.runs.list_runs()] == [thread, thread]
    [rid] = second.runs_created
    [system] = [i["message"] for i in record(s, rid, "prompt")["items"]
                if i["lane"] == "instructions"]
    assert system["content"][0]["text"].endswith("cc_entrypoint=sdk-ts; cch=0b6c7;")

    def call(billing: str, rules: str, messages: list[dict[str, Any]],
             answer: dict[str, Any]) -> dict[str, Any]:
        return {"request": {"model": "claude-x-1", "max_tokens": 100, "tools": [WEATHER],
                            "system": [text(f"x-anthropic-billing-header: cc_version=2.1; "
                                            f"cch={billing};"), text(rules)],
                            "messages": messages}, "response": answer}
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                           "content": "12 °C"}]}
    loop = [call("0fec7", "You are an agent.", [ASK], message(*CALL["content"])),
            call("aeff9", "You are an agent.", [ASK, CALL, result], message(text("12 °C.")))]
    report = import_text(InMemoryStorage(), jsonl(*loop))
    assert len(report.threads_created) == 1 and len(report.runs_created) == 2
    other = call("aeff9", "You are another agent.", [ASK, CALL, result],
                 message(text("12 °C.")))
    report = import_text(InMemoryStorage(), jsonl(loop[0], other))
    assert len(report.threads_created) == 2
    assert any("under other instructions" in n.reason for n in report.skipped)
    # a client that sends it as a line of a system message's text (an OpenAI-style proxy)
    openai = [{"request": {"model": "m", "messages": [
        {"role": "system", "content": f"x-anthropic-billing-header: cch={c};\nBe brief."},
        *msgs]}, "response": {"choices": [{"message": {"role": "assistant",
                                                        "content": a}}]}}
        for c, msgs, a in (("0fec7", [{"role": "user", "content": "Hi"}], "Hello."),
                           ("aeff9", [{"role": "user", "content": "Hi"},
                                      {"role": "assistant", "content": "Hello."},
                                      {"role": "user", "content": "Bye"}], "Bye."))]
    report = import_text(InMemoryStorage(), jsonl(*openai))
    assert len(report.threads_created) == 1 and len(report.runs_created) == 2


# -- a call the API refused for its history -----------------------------------------------
_ORPHAN = [{"role": "user", "content": "What's the weather in SF?"},
           {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                         "content": "Sunny, 20°C."}]}]
_REFUSED = {"type": "error", "error": {
    "type": "invalid_request_error", "message": "messages.0.content.1: unexpected "
    "`tool_use_id` found in `tool_result` blocks: toolu_1."}}


def _call(messages: list[dict[str, Any]], response: dict[str, Any]) -> str:
    return json.dumps({"request": {"model": "claude-haiku-4-5", "max_tokens": 64,
                                   "messages": messages}, "response": response})


def test_a_call_the_api_refused_for_its_history_is_a_failed_run() -> None:
    """An outside trial (anthropic-sdk-python's tool-runner snapshot, a client bug caught
    on the wire): the request sent a tool_result whose tool_use it had dropped, and the
    API answered 400. The history check left the call out, so the failure — the one
    call that showed the bug — was not in the import."""
    s = InMemoryStorage()
    report = import_text(s, _call(_ORPHAN, _REFUSED), name="refused.jsonl")
    run = s.runs.require_run(report.runs_created[0])
    assert run.status == "failed" and "unexpected `tool_use_id`" in (run.error or "")
    stored = [m.as_message() for m in s.memory.get_messages(report.threads_created[0])]
    assert [r.result for r in stored[1].tool_results()] == ["Sunny, 20°C."]
    assert any("answers tool call 'toolu_1', but no earlier assistant message made that "
               "call; the API refused the call" in k.reason for k in report.skipped)
    # an unanswered call in a refused request: kept, said
    unanswered = [{"role": "user", "content": "Weather?"},
                  {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_2",
                                                     "name": "get_weather", "input": {}}]},
                  {"role": "user", "content": "Well?"}]
    again = import_text(InMemoryStorage(), _call(unanswered, _REFUSED), name="u.jsonl")
    assert len(again.runs_created) == 1
    assert any("made tool call(s) 'toolu_2' that message 2 (user) does not answer" in k.reason
               and "the API refused the call" in k.reason for k in again.skipped)


def test_the_same_history_answered_is_still_refused() -> None:
    """The API answers no such request: a record that says it did is malformed."""
    answered = {"type": "message", "role": "assistant", "model": "claude-haiku-4-5",
                "content": [{"type": "text", "text": "Sunny."}], "stop_reason": "end_turn",
                "usage": {"input_tokens": 9, "output_tokens": 2}}
    with pytest.raises(ImportFormatError, match="made no such call"):
        import_text(InMemoryStorage(), _call(_ORPHAN, answered), name="a.jsonl")


def test_a_call_code_execution_made_is_said_not_the_model_s() -> None:
    """Programmatic tool calling (anthropic-sdk-python's snapshot): a tool_use whose
    ``caller`` is the code execution tool was shown as the model's own call."""
    answer = {"type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
              "content": [{"type": "tool_use", "id": "toolu_9", "name": "get_weather",
                           "input": {"location": "NYC"}, "caller": {
                               "type": "code_execution_20260120", "tool_id": "srvtoolu_1"}},
                          {"type": "tool_use", "id": "toolu_8", "name": "get_weather",
                           "input": {"location": "SF"}, "caller": {"type": "direct"}}],
              "stop_reason": "tool_use", "usage": {"input_tokens": 9, "output_tokens": 2}}
    report = import_text(InMemoryStorage(), _call([{"role": "user", "content": "Weather?"}],
                                                  answer), name="c.jsonl")
    said = [k.reason for k in report.skipped if "made by" in k.reason]
    assert said == ["response: content block 0: tool call 'toolu_9' (get_weather) was made "
                    "by code_execution_20260120 (srvtoolu_1), not by the model directly: "
                    "its caller not imported"], said


def test_texts_apart_from_each_other_are_paragraphs_not_glued() -> None:
    """Texts next to each other are one text (cut where citations start and end); a
    text after a server tool's call and result is another paragraph. It read
    "…recent developments.Based on my research", text the model never wrote."""
    use = {"type": "mcp_tool_use", "id": "mcptoolu_1", "name": "search_repositories",
           "server_name": "github", "input": {"query": "ai"}}
    result = {"type": "mcp_tool_result", "tool_use_id": "mcptoolu_1", "is_error": False,
              "content": [{"type": "text", "text": "{\"full_name\":\"lutzroeder/netron\"}"}]}
    rec = {"request": {"model": "c", "max_tokens": 8, "messages": [ASK]},
           "response": message(text("Let me look at recent developments."), use, result,
                               text("Based on my research, "), text("netron leads."))}
    s = InMemoryStorage()
    report = import_text(s, jsonl(rec))
    assert [m.content for m in stored(s, report.threads_created[0])][-1] == (
        "Let me look at recent developments.\n\nBased on my research, netron leads.")
    assert ("response: 3 text blocks joined into one text, a blank line where other "
            "blocks stood between two of them (1 place)") in [k.reason for k in report.skipped]


# Mistral's Magistral sends its earlier answer back as content blocks: a ``thinking``
# block (a list of text chunks) and the text. The answer is a chat completion, however
# it was recorded: whole, its chunks, or their SSE text.
_MAGISTRAL_HISTORY = [
    {"role": "user", "content": "What is 17 times 19?"},
    {"role": "assistant", "content": [
        {"type": "thinking", "closed": True,
         "thinking": [{"type": "text", "text": "17 x 20 = 340, minus 17 is 323."}]},
        {"type": "text", "text": "323"}]},
    {"role": "user", "content": "Plus one?"}]
_CHUNKS = [{"object": "chat.completion.chunk", "model": "magistral-small-latest",
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": "324"}}]},
           {"object": "chat.completion.chunk", "model": "magistral-small-latest",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]


@pytest.mark.parametrize("response", [
    {"object": "chat.completion", "model": "magistral-small-latest", "choices": [
        {"index": 0, "finish_reason": "stop",
         "message": {"role": "assistant", "content": "324"}}]},
    _CHUNKS,
    "".join(f"data: {json.dumps(c)}\n\n" for c in _CHUNKS) + "data: [DONE]\n\n"],
    ids=["whole", "chunks", "sse"])
def test_a_chat_completion_with_thinking_blocks_in_its_history_is_no_claude_call(
        response: Any) -> None:
    s = InMemoryStorage()
    line = json.dumps({"request": {"model": "magistral-small-latest",
                                   "messages": _MAGISTRAL_HISTORY}, "response": response})
    report = import_text(s, line + "\n")
    (tid,) = report.threads_created
    assert [m.text() for m in s.memory.get_messages(tid)] == [
        "What is 17 times 19?", "323", "Plus one?", "324"]
    assert any("thinking" in k.reason for k in report.skipped), report.skipped


def test_prompt_caching_marks_are_noted_where_they_are() -> None:
    """Two outside trials (LangChain's prompt caching test, Claude Code's requests):
    ``cache_control`` on a system block, a message's block, a tool result's part or a
    tool was dropped without a word. It changes no text the model reads; one note per
    request now says where the marks were."""
    mark = {"type": "ephemeral"}
    request = {"model": "claude-x", "max_tokens": 16, "cache_control": mark,
               "system": [{"type": "text", "text": "Be brief.", "cache_control": mark}],
               "tools": [{"name": "look", "input_schema": {"type": "object"}},
                         {"name": "find", "input_schema": {"type": "object"},
                          "cache_control": mark}],
               "messages": [
                   {"role": "user", "content": [{"type": "text", "text": "Look.",
                                                 "cache_control": mark}]},
                   {"role": "assistant", "content": [
                       {"type": "tool_use", "id": "toolu_1", "name": "look", "input": {}}]},
                   {"role": "user", "content": [
                       {"type": "tool_result", "tool_use_id": "toolu_1", "content": [
                           {"type": "text", "text": "a door", "cache_control": mark}]}]}]}
    response = {"type": "message", "role": "assistant", "model": "claude-x",
                "content": [{"type": "text", "text": "A door."}], "stop_reason": "end_turn",
                "usage": {"input_tokens": 9, "output_tokens": 3}}
    s = InMemoryStorage()
    report = import_text(s, json.dumps({"request": request, "response": response}))
    assert [k.reason for k in report.skipped if "cache" in k.reason] == [
        "5 prompt-caching mark(s) (cache_control: the request, system block 0, message 0 "
        "block 0, message 2 block 0 part 0, tool 1) not imported: where the provider "
        "caches the prompt, no text it reads"]
    (tid,) = report.threads_created
    assert [m.text() for m in s.memory.get_messages(tid)][0] == "Look."
    plain = {**request, "messages": [{"role": "user", "content": "Look."}]}
    del plain["cache_control"], plain["system"], plain["tools"]
    report = import_text(InMemoryStorage(), json.dumps({"request": plain, "response": response}))
    assert not [k for k in report.skipped if "cache" in k.reason]
