"""Cohere's v2 Chat API imports as the chat-completions traffic it is equivalent to
(the real cassettes, tests/fixtures/imports/real/openllmetry-cohere-*:
test_importers_real.py): records without a URL are told by their answer's shape, a tool
result's document parts are its text, the tool_plan is noted and kept out of both the
answer and the history that repeats it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memory_core.errors import ImportFormatError
from memory_core.importers import import_text
from memory_core.storage.inmemory import InMemoryStorage

CALL = {"id": "lookup_1", "type": "function",
        "function": {"name": "lookup", "arguments": "{\"q\": \"otters\"}"}}


def _answer(message: dict[str, Any], finish: str = "COMPLETE") -> dict[str, Any]:
    return {"id": "r1", "message": {"role": "assistant", **message}, "finish_reason": finish,
            "usage": {"billed_units": {"input_tokens": 5, "output_tokens": 2},
                      "tokens": {"input_tokens": 50, "output_tokens": 9}}}


def test_a_tool_loop_of_records_with_document_results() -> None:
    first = {"request": {"model": "command-r-plus", "messages": [
        {"role": "user", "content": "Find otters."}]},
        "response": _answer({"tool_plan": "I will look it up.", "tool_calls": [CALL]},
                            "TOOL_CALL")}
    second = {"request": {"model": "command-r-plus", "messages": [
        {"role": "user", "content": "Find otters."},
        {"role": "assistant", "tool_plan": "I will look it up.", "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "lookup_1", "content": [
            {"type": "document", "document": {"data": "{\"found\": 3}"}}]}]},
        "response": _answer({"content": [{"type": "text", "text": "Three otters."}]})}
    s = InMemoryStorage()
    report = import_text(s, "\n".join(json.dumps(r) for r in (first, second)),
                         name="cohere.jsonl")
    assert report.apis == ["cohere"]
    [thread] = report.threads_created  # the plan kept out of both: one thread
    msgs = [m.as_message() for m in s.memory.get_messages(thread)]
    assert [m.role for m in msgs] == ["user", "assistant", "tool", "assistant"]
    assert [r.result for r in msgs[2].tool_results()] == ["{\"found\": 3}"]
    step = s.runs.get(f"{report.runs_created[1]}:step:0")
    assert step["response"]["usage"] == {"input_tokens": 50, "output_tokens": 9}
    assert any("tool_plan not imported" in k.reason for k in report.skipped)


def test_a_bad_stream_is_refused_naming_it() -> None:
    stream = ('data: {"type":"message-start","delta":{"message":{"role":"assistant"}}}\n\n'
              'data: {"type":"tool-call-delta","index":0,"delta":{"message":{"tool_calls":'
              '{"function":{"arguments":"{"}}}}}\n\n')
    record = {"request": {"model": "command-r", "messages": [
        {"role": "user", "content": "hi"}]}, "response": stream}
    with pytest.raises(ImportFormatError, match=r"line 1: stream: tool-call-delta 0 before "
                                                r"its tool-call-start"):
        import_text(InMemoryStorage(), json.dumps(record), name="c.jsonl")


_V2_STREAM = ('data: {"type":"message-start","delta":{"message":{"role":"assistant"}}}\n\n'
              'data: {"type":"content-delta","index":0,"delta":{"message":{"content":'
              '{"text":"Three."}}}}\n\n'
              'data: {"type":"message-end","delta":{"finish_reason":"COMPLETE"}}\n\n')


def test_a_stream_ends_at_its_quoted_done_marker() -> None:
    """Cohere's v2 stream (weave's cassette) ends ``data: "[DONE]"``, the marker as a
    JSON string: the end of the stream, not a chunk that is no JSON object."""
    record = {"request": {"model": "command", "messages": [
        {"role": "user", "content": "count"}]}, "response": _V2_STREAM + 'data: "[DONE]"\n\n'}
    s = InMemoryStorage()
    report = import_text(s, json.dumps(record), name="c.jsonl")
    [thread] = report.threads_created
    assert [m.as_message().text() for m in s.memory.get_messages(thread)] == ["count", "Three."]


def test_a_stream_chunk_that_is_no_object_is_named() -> None:
    record = {"request": {"model": "command", "messages": [
        {"role": "user", "content": "count"}]}, "response": _V2_STREAM + 'data: [1, 2]\n\n'}
    with pytest.raises(ImportFormatError, match=r"line 1: stream chunk 3 is \[1, 2\], not a "
                                                r"JSON object"):
        import_text(InMemoryStorage(), json.dumps(record), name="c.jsonl")


def test_a_reasoning_stream_notes_its_thinking_and_reads_past_an_odd_delta() -> None:
    """A reasoning model streams its thinking as content deltas before the text: noted
    (it was dropped without a word); a delta whose content is no object adds no text."""
    events = [{"type": "message-start", "delta": {"message": {"role": "assistant"}}},
              {"type": "content-delta", "index": 0,
               "delta": {"message": {"content": {"thinking": "Say it."}}}},
              {"type": "content-delta", "index": 1, "delta": {"message": {"content": "?"}}},
              {"type": "content-delta", "index": 1,
               "delta": {"message": {"content": {"text": "Hello"}}}},
              {"type": "message-end", "delta": {"finish_reason": "COMPLETE"}}]
    stream = "".join(f"data: {json.dumps(e, separators=(',', ':'))}\n\n" for e in events)
    record = {"request": {"model": "command-a-reasoning", "messages": [
        {"role": "user", "content": "hi"}]}, "response": stream}
    s = InMemoryStorage()
    report = import_text(s, json.dumps(record), name="c.jsonl")
    [thread] = report.threads_created
    assert [m.text() for m in s.memory.get_messages(thread)] == ["hi", "Hello"]
    assert [k.reason for k in report.skipped] == [
        "response: the model's thinking not imported",
        "response reassembled from 5 stream event(s)"]


def _v1_answer(text: str, *calls: dict[str, Any]) -> dict[str, Any]:
    return {"response_id": "r", "text": text, "generation_id": "g", "finish_reason": "COMPLETE",
            "meta": {"billed_units": {"input_tokens": 5, "output_tokens": 2},
                     "tokens": {"input_tokens": 40, "output_tokens": 7}},
            **({"tool_calls": list(calls)} if calls else {})}


def _lookup(q: str) -> dict[str, Any]:
    return {"name": "lookup", "parameters": {"q": q}}


def test_a_v1_tool_loop_matches_results_to_calls_by_name_and_parameters() -> None:
    """v1 calls carry no id: each result answers the call of its name and parameters
    (here sent in the other order); the preamble is the instructions, p and k the
    sampling parameters, the tools' parameter_definitions their schema."""
    tools = [{"name": "lookup", "description": "Look up.", "parameter_definitions": {
        "q": {"type": "str", "description": "what", "required": True}}}]
    first = {"request": {"model": "command-r", "preamble": "Be brief.", "p": 0.5, "k": 3,
                         "message": "Otters and seals?", "tools": tools},
             "response": _v1_answer("I will look both up.", _lookup("otters"), _lookup("seals"))}
    second = {"request": {"model": "command-r", "preamble": "Be brief.", "p": 0.5, "k": 3,
                          "message": "", "tools": tools, "chat_history": [
                              {"role": "USER", "message": "Otters and seals?"},
                              {"role": "CHATBOT", "message": "I will look both up.",
                               "tool_calls": [_lookup("otters"), _lookup("seals")]}],
                          "tool_results": [
                              {"call": _lookup("seals"), "outputs": [{"n": 2}]},
                              {"call": _lookup("otters"), "outputs": [{"n": 3}, {"more": 1}]}]},
              "response": _v1_answer("Three otters, two seals.")}
    s = InMemoryStorage()
    report = import_text(s, "\n".join(json.dumps(r) for r in (first, second)),
                         name="cohere.jsonl")
    assert report.apis == ["cohere"]  # (told by the v1 answer's shape: no URL)
    [thread] = report.threads_created
    msgs = [m.as_message() for m in s.memory.get_messages(thread)]
    assert [m.role for m in msgs] == ["user", "assistant", "tool", "tool", "assistant"]
    calls = {c.args["q"]: c.id for c in msgs[1].tool_calls()}
    assert [(r.call_id, r.result) for m in msgs[2:4] for r in m.tool_results()] == [
        (calls["seals"], '{"n": 2}'), (calls["otters"], '{"n": 3}\n{"more": 1}')]
    rid = report.runs_created[0]
    assert s.runs.get(f"{rid}:import")["request_params"] == {"top_p": 0.5, "top_k": 3}
    step = s.runs.get(f"{rid}:step:0")
    assert step["tools"][0]["parameters"] == {
        "type": "object", "properties": {"q": {"type": "str", "description": "what"}},
        "required": ["q"]}
    assert step["response"]["usage"] == {"input_tokens": 40, "output_tokens": 7}
    prompt = s.runs.get(f"{rid}:prompt")["items"]
    assert prompt[0]["lane"] == "instructions" and prompt[0]["message"]["content"] == "Be brief."


@pytest.mark.parametrize(("change", "error"), [
    ({"tool_results": [{"call": {"name": "search", "parameters": {}}, "outputs": []}]},
     "line 1: request: tool result 0 answers a call of 'search', which the chatbot turn "
     "before it did not make (its calls: lookup)"),
    ({"chat_history": [{"role": "ROBOT", "message": "x"}]},
     "line 1: chat_history 0: unknown role 'ROBOT' (expected SYSTEM, USER, CHATBOT or TOOL)"),
    ({"chat_history": [{"role": "CHATBOT", "message": "x", "tool_calls": [{"parameters": {}}]}]},
     "line 1: chat_history 0: tool call 0 has no 'name' string, got None"),
    ({"chat_history": "hi"}, "line 1: 'chat_history' must be a list, got 'hi'"),
    ({"message": 3}, "line 1: 'message' must be a string, got 3")])
def test_bad_v1_requests_are_refused_naming_the_value(change: dict[str, Any], error: str
                                                      ) -> None:
    request = {"model": "command-r", "message": "", "chat_history": [
        {"role": "USER", "message": "Otters?"},
        {"role": "CHATBOT", "message": "", "tool_calls": [_lookup("otters")]}],
        "tool_results": [{"call": _lookup("otters"), "outputs": [{"n": 3}]}]}
    s = InMemoryStorage()
    with pytest.raises(ImportFormatError) as e:
        import_text(s, json.dumps({"request": {**request, **change},
                                   "response": _v1_answer("ok")}), name="c.jsonl")
    assert str(e.value).startswith(f"{error}; read as a Cohere Chat record, by its request's "
                                   "keys: chat_history, message, model"), str(e.value)
    assert not s.memory.list_threads()


def test_a_v1_stream_without_its_response_is_joined() -> None:
    """A v1 stream whose stream-end carries no response: its text-generation events
    joined, or the plan and calls of its tool-calls-generation event."""
    events = [{"event_type": "stream-start", "generation_id": "g"},
              {"event_type": "text-generation", "text": "I will "},
              {"event_type": "text-generation", "text": "look."},
              {"event_type": "tool-calls-generation", "text": "I will look.",
               "tool_calls": [_lookup("otters")]},
              {"event_type": "stream-end", "finish_reason": "COMPLETE"}]
    for stream, text, calls in ((events[:3] + events[4:], "I will look.", 0),
                                (events, "I will look.", 1)):
        record = {"request": {"model": "command-r", "message": "Otters?"},
                  "response": "\n".join(json.dumps(e) for e in stream)}
        s = InMemoryStorage()
        report = import_text(s, json.dumps(record), name="c.jsonl")
        step = s.runs.get(f"{report.runs_created[0]}:step:0")
        assert (step["response"]["text"], len(step["response"]["tool_calls"]),
                step["response"]["finish_reason"]) == (text, calls, "COMPLETE")


# -- the legacy Generate API (/v1/generate) ------------------------------------------------
def _generate(response: Any, **request: Any) -> str:
    return json.dumps({"url": "https://api.cohere.ai/v1/generate",
                       "request": {"model": "command-light", "prompt": "What happened to Pluto?",
                                   **request}, "response": response})


def test_a_generate_call_is_the_prompt_answered_by_its_first_generation() -> None:
    s = InMemoryStorage()
    report = import_text(s, _generate({"generations": [
        {"text": " It became a dwarf planet.", "finish_reason": "COMPLETE"},
        {"text": " It was renamed.", "finish_reason": "COMPLETE"}],
        "meta": {"billed_units": {"input_tokens": 5, "output_tokens": 7}}},
        num_generations=2, stop_sequences=["\n"]), name="g.jsonl")
    got = [m.as_message() for m in s.memory.get_messages(report.threads_created[0])]
    assert [(m.role, m.text()) for m in got] == [
        ("user", "What happened to Pluto?"), ("assistant", " It became a dwarf planet.")]
    step = s.runs.get(f"{report.runs_created[0]}:step:0")
    assert step["response"]["usage"]["input_tokens"] == 5
    assert step["response"]["finish_reason"] == "COMPLETE"
    assert any("1 other generation(s) (num_generations) not imported" in k.reason
               for k in report.skipped)


def test_a_generate_stream_without_its_end_is_its_texts_joined() -> None:
    events = "\n".join(json.dumps(e) for e in [
        {"text": " It", "is_finished": False, "event_type": "text-generation"},
        {"text": " shrank.", "is_finished": False, "event_type": "text-generation"}])
    s = InMemoryStorage()
    report = import_text(s, _generate(events, stream=True), name="g.jsonl")
    last = s.memory.get_messages(report.threads_created[0])[-1].as_message()
    assert last.text() == " It shrank."
    assert any("no token counts" in k.reason for k in report.skipped)


def test_a_generate_answer_without_generations_is_named() -> None:
    with pytest.raises(ImportFormatError, match="needs 'generations'"):
        import_text(InMemoryStorage(), _generate({"text": "?"}), name="g.jsonl")


def test_other_apis_generate_paths_are_not_cohere_s() -> None:
    """Ollama's /api/generate answers ``response``; it stays Ollama's."""
    s = InMemoryStorage()
    report = import_text(s, json.dumps({
        "url": "http://localhost:11434/api/generate",
        "request": {"model": "llama3", "prompt": "Hi", "stream": False},
        "response": {"model": "llama3", "response": "Hello!", "done": True,
                     "created_at": "2024-01-01T00:00:00Z"}}), name="o.jsonl")
    assert report.apis == ["ollama"]
