"""Gemini API traffic (generateContent, streamGenerateContent; Gemini Developer API and
Vertex AI) imports: recorded cassettes (tests/fixtures/imports/real/pydanticai-google-*,
their expected threads and runs in test_importers_real.py) and JSON records, in REST
camelCase or Python snake_case (every real recording's runs verify and replay:
test_importers_replay.py)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memory_core.errors import ImportFormatError
from memory_core.importers import detect_format, import_file, import_text
from memory_core.journal.seal import verify_run
from memory_core.storage.inmemory import InMemoryStorage

REAL = Path(__file__).parent / "fixtures" / "imports" / "real"


def test_a_withheld_answer_and_a_blocked_prompt_are_failed_runs_saying_why() -> None:
    s = InMemoryStorage()
    [rid] = import_file(s, REAL / "pydanticai-google-test_google_model_safety_settings.yaml"
                        ).runs_created
    run = s.runs.require_run(rid)
    assert (run.status, run.error) == (
        "failed", "no answer recorded (finishReason SAFETY: HARM_CATEGORY_HATE_SPEECH blocked)")
    s = InMemoryStorage()
    name = "pydanticai-google-test_google_model_armor_prompt_template_text_gets_blocked.yaml"
    [rid] = import_file(s, REAL / name).runs_created
    run = s.runs.require_run(rid)
    assert (run.status, run.error) == (
        "failed", "the prompt was blocked (MODEL_ARMOR: The prompt violated Prompt Injection "
                  "and Jailbreak filters.)")


def test_vertex_times_and_the_model_named_only_in_the_url() -> None:
    s = InMemoryStorage()
    report = import_file(s, REAL / "pydanticai-google-test_google_model_vertex_provider.yaml")
    assert report.apis == ["gemini"]  # what `memwb import` says it read (was "openai")
    [rid] = report.runs_created
    assert s.runs.require_run(rid).started_at == datetime(2025, 6, 27, 8, 48, 21, 154666,
                                                          tzinfo=UTC)
    # a request whose response names no model: the URL's model
    text = (REAL / "pydanticai-google-test_google_model_vertex_provider.yaml").read_text()
    s = InMemoryStorage()
    [rid] = import_text(s, text.replace("modelVersion: gemini-2.0-flash", ""),
                        name="c.yaml").runs_created
    assert s.runs.get(f"{rid}:step:0")["model"]["name"] == "gemini-2.0-flash"


# -- records -------------------------------------------------------------------------------
def _record(contents: list[Any], response: Any, **request: Any) -> str:
    return json.dumps({"request": {"contents": contents, **request}, "response": response})


def _answer(*parts: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"candidates": [{"content": {"role": "model", "parts": list(parts)},
                            "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 20, "candidatesTokenCount": 4},
            "modelVersion": "gemini-2.5-flash", **extra}


USER = {"role": "user", "parts": [{"text": "Weather and time in Oslo?"}]}
CALLS = {"role": "model", "parts": [
    {"functionCall": {"name": "weather", "args": {"city": "Oslo"}}},
    {"functionCall": {"name": "clock", "args": {"tz": "Europe/Oslo"}}}]}
# answered in the other order, with no ids: each answers the call of its name
RESULTS = {"role": "user", "parts": [
    {"functionResponse": {"name": "clock", "response": {"time": "09:00"}}},
    {"functionResponse": {"name": "weather", "response": {"sky": "snow"}}}]}


def _import(text: str) -> tuple[InMemoryStorage, Any]:
    s = InMemoryStorage()
    return s, import_text(s, text, name="gemini.jsonl")


def test_a_tool_loop_of_records_is_one_thread_with_calls_answered_by_name() -> None:
    text = "\n".join([
        _record([USER], _answer(*CALLS["parts"])),
        _record([USER, CALLS, RESULTS], _answer({"text": "Snow, "}, {"text": "09:00."}))])
    assert detect_format(text) == "openai"  # the JSON record family
    s, report = _import(text)
    [thread] = report.threads_created
    msgs = [m.as_message() for m in s.memory.get_messages(thread)]
    assert [m.role for m in msgs] == ["user", "assistant", "tool", "tool", "assistant"]
    calls = {c.name: c.id for c in msgs[1].tool_calls()}
    assert [(r.name, r.call_id, r.result) for m in msgs[2:4] for r in m.tool_results()] == [
        ("clock", calls["clock"], {"time": "09:00"}),
        ("weather", calls["weather"], {"sky": "snow"})]
    assert msgs[4].content == "Snow, 09:00."  # text parts joined, as the SDK's .text
    assert any("has no id; it answers call" in k.reason for k in report.skipped)
    for rid in report.runs_created:
        assert verify_run(s, rid).status == "ok"


def test_snake_case_a_json_array_stream_and_attachments() -> None:
    chunks = [{"candidates": [{"content": {"role": "model", "parts": [{"text": "A cat"}]}}]},
              {"candidates": [{"content": {"role": "model", "parts": [{"text": " asleep."}]},
                               "finish_reason": "STOP"}],
               "usage_metadata": {"prompt_token_count": 300, "candidates_token_count": 3},
               "model_version": "gemini-2.0-flash"}]
    contents = [{"role": "user", "parts": [
        {"text": "What is in the picture?"},
        {"inline_data": {"mime_type": "image/png", "data": "iVBORw0KGgo="}}]}]
    s, report = _import(_record(contents, chunks, system_instruction={"parts": [
        {"text": "Describe images."}]}, generation_config={"max_output_tokens": 64}))
    [rid] = report.runs_created
    step = s.runs.get(f"{rid}:step:0")
    assert step["response"]["text"] == "A cat asleep."
    assert step["response"]["usage"] == {"input_tokens": 300, "output_tokens": 3}
    assert step["model"]["name"] == "gemini-2.0-flash"
    assert s.runs.get(f"{rid}:import")["request_params"]["max_tokens"] == 64
    [user, _] = s.memory.get_messages(report.threads_created[0])
    assert user.metadata["attachments"][0]["type"] == "inline_data"
    assert user.metadata["attachments"][0]["mime_type"] == "image/png"
    lanes = [i for i in s.runs.get(f"{rid}:prompt")["items"] if i["lane"] == "instructions"]
    assert [i["message"]["content"] for i in lanes] == ["Describe images."]


def test_server_tools_alternatives_and_an_error_record_are_noted() -> None:
    tools = [{"googleSearch": {}}, {"functionDeclarations": [
        {"name": "weather", "description": "Forecast", "parameters": {"type": "OBJECT"}}]}]
    two = _answer({"text": "Sunny."})
    two["candidates"].append({"content": {"role": "model", "parts": [{"text": "Rain."}]}})
    s, report = _import("\n".join([
        _record([USER], two, tools=tools),
        json.dumps({"request": {"contents": [USER]}, "error": {
            "code": 429, "message": "Resource exhausted", "status": "RESOURCE_EXHAUSTED"}})]))
    first, failed = report.runs_created
    # in the order offered; the server's own tool by name only
    assert [t["name"] for t in s.runs.get(f"{first}:step:0")["tools"]] == ["googleSearch",
                                                                          "weather"]
    reasons = " | ".join(k.reason for k in report.skipped)
    assert "tool 0 of type 'googleSearch' kept by name only" in reasons
    assert "alternative candidate(s) not imported" in reasons
    run = s.runs.require_run(failed)
    assert run.status == "failed" and json.loads(run.error or "")["status"] == \
        "RESOURCE_EXHAUSTED"


@pytest.mark.parametrize("contents, error", [
    ([USER, {"role": "user", "parts": [{"functionResponse": {"name": "weather",
                                                             "response": {}}}]}],
     r"line 1: message 1: the functionResponse named 'weather' answers no function call"),
    ([USER, {"role": "model", "parts": [{"functionResponse": {"name": "w", "response": {}}}]}],
     r"line 1: contents\[1\]: a model turn holds a functionResponse"),
    ([{"role": "robot", "parts": [{"text": "hi"}]}],
     r"line 1: contents\[0\]: unknown role 'robot'"),
    ([{"role": "user", "parts": [{"functionCall": {"name": "w", "args": {}}}]}],
     r"line 1: contents\[0\]: a user turn holds a functionCall"),
    # an id answering no call was taken as is (a dangling result, call left unanswered)
    ([USER, {"role": "model", "parts": [{"functionCall": {"id": "a", "name": "w"}}]},
      {"role": "user", "parts": [{"functionResponse": {"id": "b", "name": "w",
                                                        "response": {}}}]}],
     r"line 1: message 2: the functionResponse named 'w' \(id 'b'\) answers no function "
     r"call of the model turn before it \(its unanswered calls: 'w'\)"),
    # named by neither call of a turn of two: which it answers is not known
    ([USER, CALLS, {"role": "user", "parts": [{"functionResponse": {
        "name": "call_9", "response": {}}}]}],
     r"message 2: the functionResponse named 'call_9' answers no function call of the "
     r"model turn before it \(its unanswered calls: 'weather', 'clock'\)"),
    ([{"role": "user", "parts": [{"text": "hi"}]}],  # (not a bad record: control)
     None),
])
def test_bad_records_are_refused_naming_them(contents: list[Any], error: str | None
                                            ) -> None:
    s = InMemoryStorage()
    if error is None:
        import_text(s, _record(contents, _answer({"text": "ok"})), name="g.jsonl")
        return
    with pytest.raises(ImportFormatError, match=error):
        import_text(s, _record(contents, _answer({"text": "ok"})), name="g.jsonl")
    assert not s.memory.list_threads()


def test_a_bad_sampling_parameter_is_named() -> None:
    with pytest.raises(ImportFormatError, match=r"line 1: generationConfig 'temperature' "
                                                r"must be a number, got 'hot'"):
        import_text(InMemoryStorage(), _record([USER], _answer({"text": "ok"}),
                                               generationConfig={"temperature": "hot"}),
                    name="g.jsonl")


def test_a_flat_records_own_keys_are_not_request_parameters() -> None:
    # {"contents", "response", "thread_id", "url", …} on one level: only what was sent
    # to the API is a parameter (the response and the record's keys were stored as
    # request_params)
    flat = {"contents": [USER], "generationConfig": {"temperature": 0.2},
            "response": _answer({"text": "Snow."}), "thread_id": "conv-9",
            "metadata": {"user_id": "u1"},
            "url": "https://x/v1beta/models/gemini-2.5-flash:generateContent"}
    s, report = _import(json.dumps(flat))
    [rid] = report.runs_created
    assert s.runs.get(f"{rid}:import")["request_params"] == {"temperature": 0.2}
    assert report.threads_created == ["conv-9"]
    assert s.runs.require_run(rid).resource_id == "u1"


def test_an_id_the_call_was_recorded_without_answers_the_call_of_its_name() -> None:
    # the response recorded no id, the client's next request answers with one of its own
    calls = {"role": "model", "parts": [{"functionCall": {"name": "w", "args": {"c": 1}}}]}
    answer = {"role": "user", "parts": [{"functionResponse": {"id": "pyd_1", "name": "w",
                                                               "response": {"r": 2}}}]}
    s, report = _import(_record([USER, calls, answer], _answer({"text": "ok"})))
    msgs = [m.as_message() for m in s.memory.get_messages(report.threads_created[0])]
    [call] = msgs[1].tool_calls()
    assert [r.call_id for r in msgs[2].tool_results()] == [call.id]
    assert any("has id 'pyd_1', which its call was recorded without" in k.reason
               for k in report.skipped)


def test_a_response_named_by_the_client_s_call_id_answers_the_one_unanswered_call() -> None:
    """docker/cagent sends a function response named by its own call id, with no id:
    the second call of its tool loop was left out ("answers no function call"). The
    turn's one unanswered call is the one it answers: paired, named, noted."""
    calls = {"role": "model", "parts": [{"functionCall": {"name": "list_directory",
                                                          "args": {"path": "."}}}]}
    answer = {"role": "user", "parts": [{"functionResponse": {
        "name": "call_1338bc52", "response": {"result": "FILE README.me"}}}]}
    s, report = _import(_record([USER, calls, answer], _answer({"text": "1"})))
    msgs = [m.as_message() for m in s.memory.get_messages(report.threads_created[0])]
    [call] = msgs[1].tool_calls()
    [result] = msgs[2].tool_results()
    assert (result.call_id, result.name) == (call.id, "list_directory")
    notes = [k.reason for k in report.skipped]
    assert any("functionResponse 'call_1338bc52' names no function call of the model turn "
               "before it; it answers the turn's one unanswered call, 'list_directory'" in n
               for n in notes), notes
    assert not any("has no id; it answers call" in n for n in notes)  # (said once)


@pytest.mark.parametrize(("record", "error"), [  # each raised TypeError/AttributeError
    ({"request": {"contents": [USER], "tools": [{"functionDeclarations": True}]},
      "response": _answer({"text": "ok"})}, r"tool 0: 'functionDeclarations' must be a list"),
    ({"request": {"contents": [USER]}, "response": [
        {"candidates": [{"content": "x"}]}]}, r"candidate content must have a 'parts' list"),
    ({"request": {"contents": [USER]}, "response": [{"candidates": 3}]},
     r"'candidates' must be a list, got 3"),
])
def test_wrong_types_are_refused_naming_them(record: dict[str, Any], error: str) -> None:
    with pytest.raises(ImportFormatError, match=r"line 1: .*" + error):
        _import(json.dumps(record))


def test_safety_ratings_of_another_shape_do_not_crash() -> None:
    response = {"candidates": [{"finishReason": "SAFETY", "safetyRatings": True}]}
    s, report = _import(_record([USER], response))
    [rid] = report.runs_created
    assert s.runs.require_run(rid).error == "no answer recorded (finishReason SAFETY)"


def test_an_attachment_in_the_system_instruction_is_noted_as_not_imported() -> None:
    # the note said "kept as a placeholder", but the instructions keep only their text
    system = {"parts": [{"text": "Be brief."},
                        {"inlineData": {"mimeType": "image/png", "data": "aGk="}}]}
    s, report = _import(_record([USER], _answer({"text": "ok"}), systemInstruction=system))
    reasons = [k.reason for k in report.skipped]
    assert "systemInstruction: part 1: inline_data not imported (the instructions keep " \
           "their text only)" in reasons
    assert not any("kept as a placeholder" in r for r in reasons)


@pytest.mark.parametrize(("recorded", "said"), [(1, "STOP"), (2, "MAX_TOKENS"), (42, "42"),
                                                ("STOP", "STOP")])
def test_a_finish_reason_recorded_as_the_enum_s_number_is_read(recorded: Any,
                                                                said: str) -> None:
    # Go's genai client asks for ``enum-encoding=int``: "finishReason": 1
    answer = _answer({"text": "15 * 7 is 105."})
    answer["candidates"][0]["finishReason"] = recorded
    s, report = _import(_record([USER], answer))
    step = s.runs.get(f"{report.runs_created[0]}:step:0")
    assert isinstance(step, dict) and step["response"]["finish_reason"] == said


def test_one_part_sent_as_an_object_is_a_list_of_one() -> None:
    # R's ellmer sends "systemInstruction": {"parts": {"text": ...}}; Gemini accepts it
    record = json.loads(_record([USER], _answer({"text": "Snow."})))
    record["request"]["systemInstruction"] = {"parts": {"text": "Answer in one word."}}
    s, report = _import(json.dumps(record))
    prompt = s.runs.get(f"{report.runs_created[0]}:prompt")
    assert "Answer in one word." in json.dumps(prompt)
    record["request"]["systemInstruction"] = {"parts": "Answer in one word."}
    with pytest.raises(ImportFormatError, match="'parts' must be a list, got 'Answer in"):
        _import(json.dumps(record))


def test_google_search_grounding_is_noted_and_its_tokens_are_input() -> None:
    # chatlas' streamed answer with Google Search: 118 tokens of search results that
    # the model read, counted apart (toolUsePromptTokenCount), and the queries made
    answer = _answer({"text": "ggplot2 1.0.0 came out in May 2014."},
                     usageMetadata={"promptTokenCount": 27, "candidatesTokenCount": 229,
                                    "toolUsePromptTokenCount": 118})
    answer["candidates"][0]["groundingMetadata"] = {
        "webSearchQueries": ["ggplot2 1.0.0 CRAN release date", "ggplot2 1.0.0"],
        "groundingChunks": [{"web": {"uri": "https://rpkg.net", "title": "rpkg.net"}}]}
    s, report = _import(_record([USER], answer))
    step = s.runs.get(f"{report.runs_created[0]}:step:0")
    assert isinstance(step, dict)
    assert (step["response"]["usage"]["input_tokens"],
            step["response"]["usage"]["output_tokens"]) == (145, 229)
    assert [n.reason for n in report.skipped] == [
        "response: its grounding (Google Search: 2 queries, 1 source) not imported; the "
        "search results' tokens are counted in the input"]


def test_citations_of_recited_sources_are_noted_streamed_or_not() -> None:
    """An answer that recites sources carries ``citationMetadata`` (Weave's cassette:
    two GitHub repositories); it was dropped without a word, and ``why`` on a cited
    repository then said "never said". Noted with the sources, in a stream too, and in
    Vertex AI's spelling (``citations``)."""
    cited = {"citationSources": [
        {"startIndex": 0, "endIndex": 9, "uri": "https://github.com/a/leap"},
        {"startIndex": 9, "endIndex": 20, "uri": "https://github.com/b/codeWarsTwo"}]}
    want = ("response: its 2 citation(s) of sources its text recites not imported "
            "(https://github.com/a/leap, https://github.com/b/codeWarsTwo)")
    answer = _answer({"text": "def leap(y): ..."})
    answer["candidates"][0]["citationMetadata"] = cited
    _, report = _import(_record([USER], answer))
    assert [n.reason for n in report.skipped] == [want]
    chunks = [{"candidates": [{"content": {"role": "model", "parts": [{"text": "def "}]}}]},
              {"candidates": [{"content": {"role": "model", "parts": [{"text": "leap"}]},
                               "finishReason": "STOP", "citationMetadata": cited}]}]
    _, report = _import(_record([USER], chunks))
    assert want in [n.reason for n in report.skipped]
    vertex = _answer({"text": "def leap(y): ..."})
    vertex["candidates"][0]["citationMetadata"] = {"citations": [
        {"startIndex": 0, "uri": "https://github.com/a/leap"}]}
    _, report = _import(_record([USER], vertex))
    assert [n.reason for n in report.skipped] == [
        "response: its 1 citation(s) of sources its text recites not imported "
        "(https://github.com/a/leap)"]


def test_a_call_sent_back_without_the_id_its_answer_recorded_takes_it() -> None:
    # Gemini 3 answers with functionCall ids; a client sends the call back without
    # one: the call and its result take the recorded id, and the loop is one thread
    asked = _answer({"functionCall": {"name": "weather", "args": {"city": "Oslo"},
                                      "id": "spt7zdfl"}})
    call = {"role": "model", "parts": [{"functionCall": {"name": "weather",
                                                         "args": {"city": "Oslo"}}}]}
    result = {"role": "user", "parts": [{"functionResponse": {
        "name": "weather", "response": {"sky": "snow"}}}]}
    other = {"role": "model", "parts": [{"functionCall": {"name": "weather",
                                                          "args": {"city": "Bergen"}}}]}
    text = "\n".join([_record([USER], asked),
                      _record([USER, call, result], _answer({"text": "Snow."})),
                      # a call no answer of the file made keeps the id we derive
                      _record([USER, other, result], _answer({"text": "Rain."}))])
    s, report = _import(text)
    first = report.threads_created[0]
    ids = [p.id if hasattr(p, "id") else p.call_id
           for m in s.memory.get_messages(first) if not isinstance(m.content, str)
           for p in m.content]
    assert ids == ["spt7zdfl", "spt7zdfl"]
    assert [n.reason for n in report.skipped if "takes it" in n.reason] == [
        "a tool call sent back without the id its answer recorded takes it: spt7zdfl"]
    assert len(report.threads_created) == 2  # the Bergen call: another conversation


def test_a_file_of_answers_without_requests_says_so() -> None:
    """gemini-cli's --fake-responses files ({"method": …, "response": [...]} a line) hold
    the answers it replays, not what was sent: refused as such (it said "'contents' must
    be a non-empty list", which read as a malformed request)."""
    line = {"method": "generateContentStream", "response": [{"candidates": [{
        "content": {"parts": [{"text": "Final Answer"}], "role": "model"},
        "finishReason": "STOP", "index": 0}]}]}
    with pytest.raises(ImportFormatError) as e:
        import_text(InMemoryStorage(), json.dumps(line) + "\n", name="flow.responses")
    assert str(e.value).startswith(
        "line 1: the answer of a Gemini API call (generateContentStream) without its "
        "request, as gemini-cli's fake-responses files record them: what the model was "
        "sent is not in the file"), str(e.value)


def test_a_bare_thought_signature_and_a_response_without_result_are_said_so() -> None:
    """Gemini 3 answers with a part holding only a ``thoughtSignature`` (noted as "a
    part of kind none"); google/adk-go answers a transfer with a ``functionResponse``
    that has no ``response`` (stored as null without a word)."""
    transfer = {"role": "model", "parts": [{"functionCall": {
        "id": "t1", "name": "transfer_to_agent", "args": {"agent_name": "b"}}}]}
    done = {"role": "user", "parts": [{"functionResponse": {
        "id": "t1", "name": "transfer_to_agent"}}]}
    text = "\n".join([
        _record([USER], _answer(*transfer["parts"])),
        _record([USER, transfer, done],
                _answer({"thoughtSignature": "c2lnbmF0dXJl"}, {"text": "Snow."}))])
    s, report = _import(text)
    reasons = [k.reason for k in report.skipped]
    assert any(r.endswith("functionResponse (transfer_to_agent) has no 'response': kept as "
                          "an empty result") for r in reasons), reasons
    assert any(r.endswith("a part holding only a thought signature (the model's encrypted "
                          "reasoning state) not imported") for r in reasons), reasons
    assert not any("kind none" in r for r in reasons)
    [thread] = report.threads_created
    assert [m.role for m in s.memory.get_messages(thread)] == \
        ["user", "assistant", "tool", "assistant"]
