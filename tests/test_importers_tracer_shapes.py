"""Shapes tracers' own tests and exports write, which the importer refused (issue 34.3),
each on a real recording of tests/fixtures/imports/real (see its README) and a hostile
variant of it: Polly.js HAR bodies kept as the chunks of a gzip answer; HTTP-interaction
JSON files (Datadog's test agent); LangSmith SDK batches and run start/end lines, merged
by run id; a span export with a tool definition that cannot be read; and the sentence a
refused record gets (what it looks like, the closest format read)."""

from __future__ import annotations

import base64
import copy
import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from memory_core.errors import ImportFormatError
from memory_core.importers import import_file, import_text
from memory_core.storage.inmemory import InMemoryStorage

FIX = Path(__file__).parent / "fixtures" / "imports"
REAL = FIX / "real"
POLLY = REAL / "openllmetryjs-should-set-attributes-in-span-for-tool-calling.har"
DD_OPENAI = REAL / "ddtrace-testagent-openai_chat_completions_post_6c0d752b.json"
DD_ANTHROPIC = REAL / "ddtrace-testagent-anthropic_v1_messages_post_28bbec95.json"
LS_PY = REAL / "langsmithsdk-langsmith_py_wrap_openai_.json"
LS_JS = REAL / "langsmithsdk-langsmith_js_wrap_openai_stream.json"


def _load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _text_of(s: InMemoryStorage, report: Any) -> list[list[str]]:
    return [[f"{m.role}: {m.text() or [p.name for p in m.tool_calls()]}"
             for m in s.memory.get_messages(t)] for t in report.threads_created]


def _imported(text: str, name: str = "f.json") -> tuple[InMemoryStorage, Any]:
    s = InMemoryStorage()
    return s, import_text(s, text, name=name)


def _step(s: InMemoryStorage, rid: str) -> Any:
    return s.runs.get(f"{rid}:step:0")


# -- Polly.js: a content-encoded answer kept as its chunks ------------------------------------
def _polly(mutate: Any) -> str:
    doc = _load(POLLY)
    mutate(doc["log"]["entries"][0]["response"]["content"])
    return json.dumps(doc)


def test_polly_chunks_of_a_gzip_answer_are_joined_and_decoded() -> None:
    s = InMemoryStorage()
    report = import_file(s, POLLY)
    assert _text_of(s, report) == [["user: What's the weather like in Boston?",
                                    "assistant: ['get_current_weather']"]]
    step = _step(s, report.runs_created[0])
    assert step["response"]["usage"] == {"input_tokens": 82, "output_tokens": 18}
    assert step["model"]["name"] == "gpt-4-0613" and report.skipped == []


def test_polly_hex_chunks_read_as_the_base64_ones() -> None:
    """Polly.js before version 5 wrote the chunks as hex, with no ``encoding``."""
    def to_hex(content: dict[str, Any]) -> None:
        chunks = json.loads(content["text"])
        content["text"] = json.dumps([base64.b64decode(c).hex() for c in chunks])
        del content["encoding"]
    s, report = _imported(_polly(to_hex), "hex.har")
    assert _step(s, report.runs_created[0])["response"]["usage"]["input_tokens"] == 82


@pytest.mark.parametrize(("mutate", "error"), [
    # a chunk that is not base64
    (lambda c: c.update(text=json.dumps(["H4sI", "not base64!"])),
     "entry 1: response: chunk 1 of 'content.text' is not base64"),
    # the last chunk lost: the gzip stream ends before its end
    (lambda c: c.update(text=json.dumps(json.loads(c["text"])[:1])),
     "entry 1: response: body cannot be decoded"),
    # an array, but not of strings
    (lambda c: c.update(text=json.dumps([1, 2])),
     "entry 1: response: 'content.text' of a content-encoded response must be a JSON array"),
    (lambda c: c.update(text="[\"H4sI\""),
     "entry 1: response: 'content.text' (a JSON array of chunks) invalid JSON"),
])
def test_polly_chunks_that_cannot_be_read_are_one_error_naming_the_entry(
        mutate: Any, error: str) -> None:
    with pytest.raises(ImportFormatError, match=error.replace("(", r"\(").replace(")", r"\)")):
        _imported(_polly(mutate), "bad.har")


def test_a_chunk_array_of_a_body_not_content_encoded_is_its_text() -> None:
    """Without a content-encoding, ``content.text`` is the body: a JSON array there (a
    Gemini stream) is read as it is, never as chunks."""
    doc = _load(POLLY)
    response = doc["log"]["entries"][0]["response"]
    body = gzip.decompress(b"".join(base64.b64decode(c) for c in json.loads(
        response["content"]["text"]))).decode()
    response["headers"] = [h for h in response["headers"] if h["name"] != "content-encoding"]
    response["content"] = {"mimeType": "application/json", "text": body}
    s, report = _imported(json.dumps(doc), "plain.har")
    assert _step(s, report.runs_created[0])["response"]["usage"]["output_tokens"] == 18


def test_a_har_document_written_as_yaml_reads_as_its_json_form() -> None:
    """Sourcegraph Cody's Polly.js persister writes HAR as YAML (``*.har.yaml``): it was
    refused as "a YAML document … the YAML this importer reads is a VCR cassette"."""
    import yaml

    doc = _load(POLLY)
    s, report = _imported("# recorded by Polly.js\n" + yaml.safe_dump(doc, sort_keys=False),
                          "calls.har.yaml")
    assert report.format == "openai"
    assert _text_of(s, report) == [["user: What's the weather like in Boston?",
                                    "assistant: ['get_current_weather']"]]
    assert _step(s, report.runs_created[0])["response"]["usage"] == {
        "input_tokens": 82, "output_tokens": 18}
    # one without entries is refused as a HAR file, not as a cassette
    with pytest.raises(ImportFormatError, match="a HAR file must hold"):
        _imported("log:\n  version: '1.2'\n  entries: {}\n", "empty.har.yaml")


# -- HTTP-interaction JSON (Datadog's test agent) ---------------------------------------------
def test_test_agent_interactions_import_as_their_model_calls() -> None:
    for path, api, model in ((DD_OPENAI, "openai", "gpt-3.5-turbo-0125"),
                             (DD_ANTHROPIC, "anthropic", "claude-sonnet-4-5-20250929")):
        s = InMemoryStorage()
        report = import_file(s, path)
        assert report.apis == [api] and report.skipped == []
        assert _text_of(s, report) == [["user: What is the sum of 1 and 2?",
                                        "assistant: ['add']"]]
        step = _step(s, report.runs_created[0])
        assert step["model"]["name"] == model and [t["name"] for t in step["tools"]] == ["add"]


def test_interactions_in_an_array_or_lines_and_what_is_no_model_call() -> None:
    calls = [_load(DD_OPENAI), _load(DD_ANTHROPIC)]
    embeddings = {"request": {"method": "POST", "url": "https://api.openai.com/v1/embeddings",
                              "headers": {}, "body": '{"input": "x", "model": "e"}'},
                  "response": {"status": {"code": 200, "message": "OK"}, "headers": {},
                               "body": '{"data": []}'}}
    s, report = _imported(json.dumps([calls[0], embeddings, calls[1]]))
    assert len(report.runs_created) == 2 and report.apis == ["openai", "anthropic"]
    assert [(k.where, k.reason) for k in report.skipped] == [
        ("item 2", "not a model call this importer reads (POST "
                   "https://api.openai.com/v1/embeddings)")]
    s, report = _imported("\n".join(json.dumps(c) for c in calls) + "\n", "calls.jsonl")
    assert len(report.runs_created) == 2
    with pytest.raises(ImportFormatError, match=r"the HTTP-interaction file holds no model "
                                                r"call this importer reads .*embeddings"):
        _imported(json.dumps(embeddings))


def test_interactions_wrapped_as_json_cassettes_are_read() -> None:
    """A JSON document listing its calls under "interactions" (Symfony AI's cassettes;
    vcrpy's JSON serializer, its URL as "uri") or "http_interactions" (Ruby VCR's JSON,
    each body {"encoding", "string"}) was refused as "a JSON object with keys
    interactions, which is no record this importer reads"."""
    call = _load(DD_OPENAI)
    symfony = {"interactions": [{
        "request": {**call["request"], "signature": "sha256:…"},
        "response": {**call["response"], "body_format": "json"}}]}
    s, report = _imported(json.dumps(symfony), "text_response.json")
    assert len(report.runs_created) == 1
    vcrpy = {"version": 1, "interactions": [{
        "request": {"method": "POST", "uri": call["request"]["url"],
                    "body": call["request"]["body"], "headers": {}},
        "response": {"status": {"code": 200, "message": "OK"}, "headers": {},
                     "body": {"string": call["response"]["body"]}}}]}
    s, report = _imported(json.dumps(vcrpy), "cassette.json")
    assert _text_of(s, report)[0][0] == "user: What is the sum of 1 and 2?"
    ruby = {"recorded_with": "VCR 6.2.0", "http_interactions": [{
        "request": {"method": "post", "uri": call["request"]["url"], "headers": {},
                    "body": {"encoding": "UTF-8", "string": call["request"]["body"]}},
        "response": {"status": {"code": 200, "message": "OK"}, "headers": {},
                     "body": {"encoding": "UTF-8", "base64_string": base64.b64encode(
                         call["response"]["body"].encode()).decode()}},
        "recorded_at": "Sat, 26 Oct 2024 10:00:00 GMT"}]}
    s, report = _imported(json.dumps(ruby), "cassette.json")
    assert _text_of(s, report)[0][0] == "user: What is the sum of 1 and 2?"
    assert len(report.runs_created) == 1


def test_hostile_interactions() -> None:
    """A status given as a number, an error answer, a body already parsed; a body marked
    base64 that is not is one error naming the call."""
    call = _load(DD_OPENAI)
    failed = copy.deepcopy(call)
    failed["response"] = {"status": 429, "body": {"error": {"message": "slow down"}}}
    s, report = _imported(json.dumps(failed))
    run = s.runs.require_run(report.runs_created[0])
    assert run.status == "failed" and "slow down" in (run.error or "")
    parsed = copy.deepcopy(call)
    parsed["request"]["body"] = json.loads(call["request"]["body"])
    s, report = _imported(json.dumps(parsed))
    assert _text_of(s, report)[0][0] == "user: What is the sum of 1 and 2?"
    garbled = copy.deepcopy(call)
    garbled["response"]["body"] = "base64:%%%"
    with pytest.raises(ImportFormatError, match="line 1: response: body marked 'base64:' "
                                                "is not base64"):
        _imported(json.dumps(garbled))
    # req_llm's spelling of the bytes sent: {"b64": …}
    wrapped = copy.deepcopy(call)
    wrapped["request"]["body"] = {"b64": base64.b64encode(
        call["request"]["body"].encode()).decode()}
    s, report = _imported(json.dumps(wrapped))
    assert _text_of(s, report)[0][0] == "user: What is the sum of 1 and 2?"
    wrapped["request"]["body"] = {"b64": "%%%"}
    with pytest.raises(ImportFormatError, match=r"line 1: request: body \{'b64': …\} is not "
                                                "base64"):
        _imported(json.dumps(wrapped))


def test_a_test_agent_body_kept_compressed_is_read_by_its_content_encoding() -> None:
    """dd-trace-js's test agent keeps a body as sent: brotli bytes, as "base64:…", beside
    ``Content-Encoding: br`` (dd-trace-py's records bodies decoded, the header kept): the
    header is applied to bytes that are no text and to nothing else; bytes that do not
    decode are one error naming the encoding."""
    import brotli

    call = _load(DD_OPENAI)
    answer = call["response"]["body"]
    s, report = _imported(json.dumps(call))
    want = _text_of(s, report)
    assert want[0][-1] == "assistant: ['add']"
    packed = copy.deepcopy(call)
    packed["response"]["headers"] = {"Content-Encoding": "br"}
    packed["response"]["body"] = "base64:" + base64.b64encode(
        brotli.compress(answer.encode())).decode()
    s, report = _imported(json.dumps(packed))
    assert _text_of(s, report) == want
    # decoded already (text, or bytes of text): the header says what was undone
    for body in (answer, "base64:" + base64.b64encode(answer.encode()).decode()):
        packed["response"]["body"] = body
        s, report = _imported(json.dumps(packed))
        assert _text_of(s, report) == want
    packed["response"]["body"] = "base64:" + base64.b64encode(b"\x83\x00garbage").decode()
    with pytest.raises(ImportFormatError, match=r"line 1: response: body cannot be decoded "
                                                r"\(br\)"):
        _imported(json.dumps(packed))


def test_keys_sorted_behind_a_long_body_and_bodies_recorded_as_content() -> None:
    """A request's keys sorted (``sort_keys``, ``jq -S``) put a long body before
    "method" and "url": the file was refused as no record, or as a request that sends no
    messages. pal-mcp-server's recorder keeps a body as ``content``, the response's as
    ``{"data": base64, "encoding": "base64"}``."""
    call = _load(DD_OPENAI)
    s, report = _imported(json.dumps(call))
    want = _text_of(s, report)
    long = copy.deepcopy(call)
    body = json.loads(call["request"]["body"])
    body["messages"][0]["content"] += " " + "padding " * 2_000
    long["request"]["body"] = json.dumps(body)
    for doc in (long, {"interactions": [long]}):
        s, report = _imported(json.dumps(doc, sort_keys=True))
        assert len(report.runs_created) == 1
    recorded = copy.deepcopy(call)
    for side in ("request", "response"):
        recorded[side]["content"] = recorded[side].pop("body")
    recorded["request"]["content"] = json.loads(recorded["request"]["content"])
    recorded["response"]["content"] = {"data": base64.b64encode(
        recorded["response"]["content"].encode()).decode(), "encoding": "base64", "size": 1}
    s, report = _imported(json.dumps({"interactions": [recorded]}, sort_keys=True))
    assert _text_of(s, report) == want
    recorded["response"]["content"]["data"] = "%%%"
    with pytest.raises(ImportFormatError, match="content's base64 data is not base64"):
        _imported(json.dumps({"interactions": [recorded]}))


def test_google_genai_replay_files_read_their_body_segments() -> None:
    """google-genai's replay client keeps each body as ``body_segments`` (a stream: a
    chunk a segment): the file was refused as a call whose request "was not recorded"."""
    def replay(chunks: list[str]) -> str:
        return json.dumps({"replay_id": "t/mldev", "interactions": [{"request": {
            "method": "post",
            "url": "{MLDEV_URL_PREFIX}/models/gemini-2.5-flash:streamGenerateContent",
            "headers": {}, "body_segments": [{"contents": [
                {"role": "user", "parts": [{"text": "Count to three."}]}]}]},
            "response": {"status_code": 200, "headers": {}, "body_segments": [
                {"candidates": [{"content": {"role": "model", "parts": [{"text": c}]},
                                 **({"finishReason": "STOP"} if i == len(chunks) - 1
                                    else {})}],
                 "usageMetadata": {"promptTokenCount": 4, "candidatesTokenCount": 3},
                 "modelVersion": "gemini-2.5-flash"} for i, c in enumerate(chunks)],
                "byte_segments": [], "sdk_response_segments": []}}]})
    for chunks in (["One, two, three."], ["One, ", "two, ", "three."]):
        s, report = _imported(replay(chunks))
        assert _text_of(s, report) == [["user: Count to three.", "assistant: One, two, three."]]


def test_wiremock_stub_mappings_recorded_and_matched() -> None:
    """WireMock's recorder writes each call as a stub mapping: the request's URL as
    ``url`` or ``urlPath``, the body sent as ``bodyPatterns[0].equalToJson`` (text or
    JSON), the answer as ``body``, ``jsonBody`` or ``base64Body``; an admin export lists
    them under ``mappings``. Such a file was refused saying the request body "was not
    recorded". A stub matching the body by another pattern holds none: it says so."""
    call = _load(DD_OPENAI)
    s, report = _imported(json.dumps(call))
    want = _text_of(s, report)
    sent, answer = call["request"]["body"], call["response"]["body"]
    stubs = [
        {"request": {"method": "POST", "url": "/v1/chat/completions",
                     "bodyPatterns": [{"equalToJson": sent, "ignoreExtraElements": True}]},
         "response": {"status": 200, "body": answer}},
        {"request": {"method": "POST", "urlPath": "/v1/chat/completions",
                     "bodyPatterns": [{"equalToJson": json.loads(sent)}]},
         "response": {"status": 200, "jsonBody": json.loads(answer)}},
        {"request": {"method": "POST", "urlPath": "/v1/chat/completions",
                     "bodyPatterns": [{"equalTo": sent}]},
         "response": {"status": 200, "base64Body": base64.b64encode(answer.encode()).decode()}},
    ]
    for stub in stubs:
        s, report = _imported(json.dumps(stub))
        assert _text_of(s, report) == want, stub
    s, report = _imported(json.dumps({"mappings": stubs, "meta": {"total": 3}}))
    assert len(report.runs_created) == 3
    matched = {"request": {"method": "POST", "url": "/v1/chat/completions",
                           "bodyPatterns": [{"contains": "That is all"}]},
               "response": {"status": 200, "body": answer}}
    with pytest.raises(ImportFormatError, match=r"a WireMock stub mapping whose request body "
                                                r"is matched by a pattern \(contains 'That "
                                                r"is all'\), not recorded"):
        _imported(json.dumps(matched))


def test_exvcr_binary_bodies_and_what_is_no_erlang_binary() -> None:
    """ExVCR (Elixir) records a body that is not UTF-8 text as base64 of an Erlang
    binary term beside ``"binary": true``: the bytes it holds are the body, gzip or not;
    a body so marked that is no such term is one error naming the call and what it is."""
    call = _load(DD_OPENAI)
    answer = call["response"]["body"]
    answer = answer if isinstance(answer, str) else json.dumps(answer)

    def term(data: bytes) -> str:
        return base64.b64encode(bytes([131, 109]) + len(data).to_bytes(4, "big")
                                + data).decode()

    for data in (answer.encode(), gzip.compress(answer.encode())):
        exvcr = copy.deepcopy(call)
        exvcr["response"] = {"status_code": 200, "binary": True, "body": term(data)}
        s, report = _imported(json.dumps([exvcr]))
        assert _text_of(s, report) == [["user: What is the sum of 1 and 2?",
                                        "assistant: ['add']"]]
    for body, said in (("%%%", "a body marked binary is not base64"),
                       (base64.b64encode(b"\x83h\x02abcdef").decode(),
                        "a body marked binary is not an Erlang binary term"),
                       (term(b"abc")[:-4], "a body marked binary says it holds 3 bytes")):
        bad = copy.deepcopy(call)
        bad["response"] = {"status_code": 200, "binary": True, "body": body}
        with pytest.raises(ImportFormatError, match=f"item 1: response: {said}"):
            _imported(json.dumps([bad]))


# -- the Azure SDKs' test proxy ------------------------------------------------------------------
def _proxy_entry(uri: str, body: Any, response: Any, *, content_type: str = "application/json",
                 status: Any = 200, method: str = "POST") -> dict[str, Any]:
    return {"RequestUri": uri, "RequestMethod": method,
            "RequestHeaders": {"Content-Type": "application/json", "api-key": "Sanitized"},
            "RequestBody": body, "StatusCode": status,
            "ResponseHeaders": {"Content-Type": content_type}, "ResponseBody": response}


def test_azure_test_proxy_entries_stream_lines_and_other_calls() -> None:
    """A stream is recorded as an array of its lines (each keeping its line break) and
    read joined; a call that is no model call (a token request) is skipped naming it."""
    chunks = [{"id": "c1", "object": "chat.completion.chunk", "model": "gpt-4o",
               "choices": [{"index": 0, "delta": {"role": "assistant", "content": w}}]}
              for w in ("Hel", "lo")]
    chunks.append({"id": "c1", "object": "chat.completion.chunk", "model": "gpt-4o",
                   "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    lines = [line for c in chunks for line in (f"data: {json.dumps(c)}\n", "\n")]
    lines.append("data: [DONE]\n")
    uri = "https://x.openai.azure.com/openai/deployments/gpt-4o/chat/completions?api-version=1"
    body = {"messages": [{"role": "user", "content": "Hi"}], "stream": True}
    doc = {"Entries": [
        _proxy_entry("https://login.microsoftonline.com/t/oauth2/v2.0/token", None,
                     {"access_token": "Sanitized"}),
        _proxy_entry(uri, body, lines, content_type="text/event-stream")],
        "Variables": {"OPENAI_ENDPOINT": "https://x.openai.azure.com/"}}
    s, report = _imported(json.dumps(doc, indent=2))
    assert _text_of(s, report) == [["user: Hi", "assistant: Hello"]]
    assert [k.where for k in report.skipped if "not a model call" in k.reason] == ["entry 1"]


def test_hostile_azure_test_proxy_entries() -> None:
    uri = "https://x.openai.azure.com/openai/deployments/gpt-4o/chat/completions?api-version=1"
    body = {"messages": [{"role": "user", "content": "Hi"}]}
    answer = {"id": "c", "object": "chat.completion", "model": "gpt-4o", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "Hello"},
         "finish_reason": "stop"}]}
    failed = _proxy_entry(uri, body, {"error": {"code": "429", "message": "slow down"}},
                          status=429)
    s, report = _imported(json.dumps({"Entries": [failed, _proxy_entry(uri, body, answer)]}))
    runs = [s.runs.require_run(r) for r in report.runs_created]
    assert [r.status for r in runs] == ["failed", "completed"]
    assert "slow down" in (runs[0].error or "")
    for entry, said in (({"RequestMethod": "POST"}, "entry 1: an entry needs a 'RequestUri'"),
                        (_proxy_entry(uri, body, answer, status="OK"),
                         "entry 1: 'StatusCode' must be a number, got 'OK'"),
                        (_proxy_entry(uri, body, [1, 2], content_type="text/plain"),
                         "entry 1: response: a body recorded as an array must hold its "
                         "lines as texts")):
        with pytest.raises(ImportFormatError, match=said):
            _imported(json.dumps({"Entries": [entry]}))
    # a recording cut short is one error naming it, not a traceback
    with pytest.raises(ImportFormatError, match="file: test-proxy recording: invalid JSON"):
        _imported(json.dumps({"Entries": [failed]})[:120])


# -- LangSmith: the SDK's batches, merged by run id -------------------------------------------
def test_a_batch_merges_each_runs_start_and_end() -> None:
    for path in (LS_PY, LS_JS):  # the JS patch names its run only in its dotted_order
        s = InMemoryStorage()
        report = import_file(s, path)
        assert _text_of(s, report) == [["user: howdy",
                                        "assistant: Howdy! How can I assist you today?"]]
        step = _step(s, report.runs_created[0])
        assert step["usage_known"] is True  # from outputs.usage_metadata
        assert step["response"]["usage"] == {"input_tokens": 9, "output_tokens": 9}
        assert step["response"]["finish_reason"] == "stop"
        record = s.runs.get(f"{report.runs_created[0]}:import")
        assert "extra_headers" not in record["request_params"]  # the client's options


def test_run_start_and_end_as_lines() -> None:
    batch = _load(LS_PY)
    post, patch = batch["post"][0], batch["patch"][0]
    for text in (json.dumps(post) + "\n" + json.dumps(patch) + "\n",
                 json.dumps({"post": [post]}) + "\n" + json.dumps({"patch": [patch]}) + "\n",
                 json.dumps({"post": post}) + "\n" + json.dumps({"patch": patch}) + "\n"):
        s, report = _imported(text, "runs.jsonl")
        assert len(report.runs_created) == 1 and report.skipped == []
        assert s.runs.require_run(report.runs_created[0]).status == "completed"
        assert _step(s, report.runs_created[0])["response"]["usage"]["input_tokens"] == 9


def test_a_batch_with_a_start_whose_end_is_missing_imports_what_is_there() -> None:
    """The JS run's patch lost, the Python run's kept, and a patch of a run the file
    never started: the first is a failed run with its question and a note, the second
    imports whole, the third is skipped saying so."""
    py, js = _load(LS_PY), _load(LS_JS)
    stray = {**py["patch"][0], "id": "00000000-0000-0000-0000-00000000dead"}
    batch = {"post": [js["post"][0], py["post"][0]], "patch": [py["patch"][0], stray]}
    s, report = _imported(json.dumps(batch))
    unfinished, whole = report.runs_created
    run = s.runs.require_run(unfinished)
    assert run.status == "failed" and "no answer" in (run.error or "")
    assert s.runs.get(f"{unfinished}:import")["notes"] == [
        "line 1: post 0: the run's start (post) is in the file but not its end (patch): "
        "imported without an answer"]
    # dated by its start (the JS SDK's epoch milliseconds): nothing else dates it
    assert run.started_at.isoformat() == "2024-10-13T07:05:35.809000+00:00"
    assert s.runs.require_run(whole).status == "completed"
    # (the two SDKs' runs were recorded two days apart, the later one first in the batch)
    assert [k.where for k in report.skipped] == ["file", "line 1: patch 1", "line 1: post 0"]
    assert "runs are listed by their recorded times" in report.skipped[0].reason
    assert "whose start (post) is not in this file" in report.skipped[1].reason
    with pytest.raises(ImportFormatError, match="no model call among its records; the end "
                                                r"\(patch\) of LangSmith run"):
        _imported(json.dumps({"patch": [stray]}))


# -- span exports: a tool definition that cannot be read --------------------------------------
def test_a_nameless_tool_in_a_span_export_is_noted_and_the_rest_imports() -> None:
    """The Vercel AI SDK's spans (a real export) with tools offered on the first model
    call, one of them without a name: that one is left out, noted; the other is kept,
    and every call of the file imports (the whole file was refused)."""
    spans = _load(REAL / "vercel-all-spans.json")
    spans[0]["attributes"]["ai.prompt.tools"] = [
        json.dumps({"type": "function", "name": "get_weather", "description": "Weather",
                    "inputSchema": {"type": "object"}}),
        json.dumps({"type": "function", "description": "a tool with no name",
                    "inputSchema": {"type": "object"}})]
    s, report = _imported(json.dumps(spans), "spans.json")
    assert len(report.runs_created) == 4
    first = report.runs_created[0]
    assert [t["name"] for t in _step(s, first)["tools"]] == ["get_weather"]
    notes = s.runs.get(f"{first}:import")["notes"]
    assert any("ai.prompt.tools[1] not read, left out of the tools offered: the "
               "definition has no name" in n for n in notes), notes


def test_otlp_tool_definitions_read_one_by_one() -> None:
    """gen_ai.tool.definitions of an OTLP/JSON export: a nameless definition, one that
    is not JSON and one that is no object are left out, noted; Gemini's declarations
    are their functions and its built-in tools kept by name."""
    doc = _load(FIX / "otel_genai.json")
    span = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    tools = [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}},
             {"type": "function", "function": {"description": "no name"}},
             {"function_declarations": [{"name": "lookup", "description": "Look up",
                                         "parameters": {"type": "OBJECT"}}]},
             {"code_execution": {}}, 7]
    span["attributes"].append({"key": "gen_ai.tool.definitions",
                               "value": {"stringValue": json.dumps(tools)}})
    s, report = _imported(json.dumps(doc), "trace.json")
    first = report.runs_created[0]
    assert [t["name"] for t in _step(s, first)["tools"]] == ["get_weather", "lookup",
                                                             "code_execution"]
    notes = s.runs.get(f"{first}:import")["notes"]
    assert [n.split(": ", 1)[1] for n in notes] == [
        "gen_ai.tool.definitions[1] not read, left out of the tools offered: the definition "
        "has no name: {'type': 'function', 'function': {'description': 'no name'}}",
        "gen_ai.tool.definitions[3]: Gemini's built-in tool 'code_execution' kept by name "
        "only",
        "gen_ai.tool.definitions[4] not read, left out of the tools offered: the definition "
        "must be an object, got 7"], notes
    span["attributes"][-1] = {"key": "gen_ai.tool.definitions",
                              "value": {"stringValue": "[{\"name\": "}}
    s, report = _imported(json.dumps(doc), "trace.json")
    first = report.runs_created[0]
    assert "tools" in s.runs.get(f"{first}:memctx")["unknown_fields"]
    assert any("the tools offered are unknown" in n
               for n in s.runs.get(f"{first}:import")["notes"])


# -- a refused record: what it looks like, the closest format read ----------------------------
@pytest.mark.parametrize(("record", "looks", "closest"), [
    ({"request": {"model": "gpt-4o"}, "response": {"choices": []}},
     "an OpenAI chat-completions record whose request sends no 'messages'",
     "an OpenAI chat-completions record"),
    ({"inputs": {"question": "q"}, "outputs": {"answer": "a"}},
     "a LangSmith dataset example, or a run without its 'run_type'", "a LangSmith run"),
    ({"id": "msg_1", "type": "message", "role": "assistant", "content": [],
      "stop_reason": "end_turn"},
     "the response of an Anthropic Messages API record without its request",
     "an Anthropic Messages API record"),
    ({"role": "user", "content": "hi"}, "one chat message",
     "an OpenAI chat-completions record"),
    ({"candidates": [], "usageMetadata": {}},
     "the response of a Gemini API record without its request", "a Gemini API record"),
    # a file of stream events (vercel/ai's Anthropic fixtures): the answer's pieces
    ({"type": "message_start", "message": {"id": "msg_1", "type": "message",
                                           "role": "assistant", "content": []}},
     "one event of the streamed answer of an Anthropic Messages API record "
     "(message_start), without the request", "an Anthropic Messages API record"),
    ({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [
        {"index": 0, "delta": {"content": "Hi"}}]},
     "one event of the streamed answer of an OpenAI chat-completions record "
     "(chat.completion.chunk)", "an OpenAI chat-completions record"),
    ({"type": "response.output_text.delta", "delta": "Hi"},
     "one event of the streamed answer of a Responses API record", "a Responses API record"),
    # (an outside trial on vercel/ai's fixtures: a stream's first event holds the response
    # so far, and was read as a record without its request's 'input')
    ({"type": "response.created", "sequence_number": 0, "response": {
        "id": "resp_1", "object": "response", "status": "in_progress", "output": []}},
     "one event of the streamed answer of a Responses API record (response.created), "
     "without the request", "a Responses API record"),
    # a Converse answer was named a Responses API one ("output"), a Cohere v2 answer
    # "no record this importer reads", a legacy completion a chat completion
    ({"output": {"message": {"role": "assistant", "content": [{"text": "Hi"}]}},
      "stopReason": "end_turn", "usage": {"inputTokens": 3, "outputTokens": 1}},
     "the response of a Bedrock Converse record without its request",
     "a Bedrock Converse record"),
    ({"id": "c1", "finish_reason": "TOOL_CALL", "message": {
        "role": "assistant", "tool_plan": "Look it up.", "tool_calls": []},
      "usage": {"billed_units": {"input_tokens": 3}}},
     "the response of a Cohere Chat record without its request", "a Cohere Chat record"),
    # openinference-js's Anthropic cassettes hold a response alone: {status, headers, body}
    ({"status": 200, "headers": {"content-type": "application/json"},
      "body": {"id": "msg_1", "type": "message", "content": []}},
     "an HTTP response (its status and body) without the request it answers",
     "an HTTP interaction"),
    ({"id": "cmpl-1", "object": "text_completion", "model": "gpt-3.5-turbo-instruct",
      "choices": [{"index": 0, "text": "Hi", "finish_reason": "stop"}]},
     "the response of a legacy completions record without its request",
     "a legacy completions record"),
    # (trial 10: a span whose ids were removed, which was said to be "a JSON object with
    # keys …" while the closest format named was a span; one as OTLP/JSON writes it, its
    # attributes a list of {key, value}, is read now, ids or none)
    ({"name": "ChatCompletion", "kind": "SPAN_KIND_INTERNAL", "attributes": {
        "llm.system": "openai"}, "status": {}},
     "a span ('ChatCompletion') without its trace and span ids", "an OpenTelemetry span"),
    # (an object with a name and attributes that are no span's is not called one)
    ({"name": "web", "attributes": {"replicas": 2}, "spec": {}},
     "a JSON object with keys attributes, name, spec", "an OpenTelemetry span"),
    # (an outside trial: a chunk of an Ollama stream, not its last, was named OpenAI's)
    ({"model": "phi3", "created_at": "2024-07-02T10:22:01.1Z",
      "message": {"role": "assistant", "content": "Hel"}, "done": False},
     "the response of an Ollama record without its request", "an Ollama record"),
    # (an outside trial: goose's scenario recordings, calls keyed by a hash of their
    # request, were "a JSON object with keys 205407e3…, 586e1757…" as if those were
    # field names, then an evaluation row whose sent messages "are not in it")
    ({"205407e3c76ac3acb35d9da9f560058217d3b267873f8e0a715a1946e2714ddd": {
        "input": {"system": "You are goose.", "messages": [], "tools": []},
        "output": {"message": {"role": "assistant"}, "usage": {}}},
      "586e1757b28212d5816fef39a5f7c91304fd7853e8bf49546a1439a1eea41b04": {
          "input": {}, "output": {}}},
     "2 object(s) keyed by hashes (205407e3c76a…), the first of them a model call recorded "
     "as its input (messages, system, tools) and output (message, usage), in a shape this "
     "importer does not read", "a Responses API record"),
    # (an outside trial: TruLens's event rows, an app's span, were "a JSON object with
    # keys event_id, record, …" whose closest format was a chat record)
    ({"event_id": "1753680176729768885", "record": {
        "kind": 1, "name": "__main__.RAG.generate_completion", "parent_span_id": "1"},
      "record_attributes": {"ai.observability.app_name": "coffee_rag",
                            "ai.observability.call.return": "Seattle."},
      "record_type": "SPAN", "resource_attributes": {}, "start_timestamp": "2025-07-28",
      "timestamp": "2025-07-28", "trace": {"span_id": "2", "trace_id": "3"}},
     "an event of TruLens's span table (record, record_attributes, trace) for "
     "'__main__.RAG.generate_completion', whose attributes (ai.observability.app_name, "
     "ai.observability.call.return …) are an app's, holding no model call's messages",
     "an OpenTelemetry span"),
])
def test_a_refused_record_says_what_it_looks_like_and_the_closest_format(
        tmp_path: Path, record: dict[str, Any], looks: str, closest: str) -> None:
    path = tmp_path / "export.json"
    path.write_text(json.dumps(record) + "\n")
    with pytest.raises(ImportFormatError) as e:
        import_file(InMemoryStorage(), path)
    message = str(e.value)
    assert message.startswith(f"file '{path}': line 1: this looks like {looks}"), message
    assert f"; the closest format this importer reads is {closest}, " in message
    assert message.count(". ") == 0  # one sentence


@pytest.mark.parametrize(("value", "tools"), [
    # Phoenix's own traces hide the conversation: no request body, the tools unknown
    ({"messages": "[sanitized conversation history]"}, None),
    # the request body as sent, without tools: none were offered
    ({"messages": [{"role": "user", "content": "Save it."}]}, []),
    ({"messages": [{"role": "user", "content": "Save it."}], "tools": [{
        "type": "function", "function": {"name": "list_datasets"}}]}, ["list_datasets"]),
])
def test_openinference_input_value_says_the_tools_only_when_it_is_the_request(
        value: dict[str, Any], tools: list[str] | None) -> None:
    span = {"name": "claude", "context": {"trace_id": "t1", "span_id": "s2"},
            "span_kind": "LLM", "parent_id": None, "start_time": "2026-07-09T00:00:01+00:00",
            "end_time": "2026-07-09T00:00:02+00:00", "status_code": "OK", "attributes": {
                "openinference.span.kind": "LLM", "llm.model_name": "claude",
                "input.mime_type": "application/json", "input.value": json.dumps(value),
                "llm.input_messages.0.message.role": "user",
                "llm.input_messages.0.message.content": "Save it.",
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call-04",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.name":
                    "list_datasets",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments":
                    "{}"}}
    s, report = _imported(json.dumps([span]), "spans.json")
    rid = report.runs_created[0]
    unknown = "tools" in s.runs.get(f"{rid}:memctx")["unknown_fields"]
    assert unknown is (tools is None)
    if tools is not None:
        assert [t["name"] for t in _step(s, rid)["tools"]] == tools
    # a call is said to name a tool not offered only when the offer is known
    said = any("did not offer" in k.reason for k in report.skipped)
    assert said is (tools == [])


def test_span_objects_grouped_under_names_read_as_the_list_of_them() -> None:
    """OpenInference's fixtures keep the AI SDK's spans grouped by operation
    (``{"ai.generateText.doGenerate": [spans], …}``): the same runs as the flat list,
    not one span's attributes."""
    spans = _load(REAL / "vercel-all-spans.json")
    grouped: dict[str, list[Any]] = {}
    for span in spans:
        grouped.setdefault(span["name"], []).append(span)
    flat, want = _imported(json.dumps(spans), "all.json")
    s, report = _imported(json.dumps(grouped), "by-operation.json")
    assert len(report.runs_created) == len(want.runs_created) > 0
    assert sorted(_text_of(s, report)) == sorted(_text_of(flat, want))


def test_mastra_recordings_with_a_bad_timestamp_name_it() -> None:
    doc = _load(REAL / "mastra-provider-acceptance-anthropic.json")
    doc["recordings"][1]["request"]["timestamp"] = -5
    s, report = _imported(json.dumps(doc), "recording.json")
    assert len(report.runs_created) == 2
    assert any(k.where == "line 1: recording 1" and "timestamp -5 is not" in k.reason
               for k in report.skipped), report.skipped


def test_an_httpmock_document_that_is_no_call_is_a_note() -> None:
    text = (REAL / "rig-httpmock-default_max_turns_allows_multi_step_tool_use.yaml"
            ).read_text()
    s, report = _imported(text + "---\nwhen:\n  method: POST\nthen:\n  status: 200\n",
                          "calls.yaml")
    assert len(report.runs_created) == 3
    assert ("call 4", "not imported: an httpmock call needs a 'when' object with a 'path' "
            "and a 'then' object") in {(k.where, k.reason) for k in report.skipped}
    with pytest.raises(ImportFormatError, match="invalid YAML httpmock recording"):
        _imported("when:\n  path: [unclosed\nthen: {}\n", "calls.yaml")


# -- PostHog's harness fixtures: a path, bodies by kind, the document's time ---------------
PH_TOOLS = REAL / "posthog-harness-anthropic-tools.json"


def test_posthog_harness_bodies_by_kind_and_hostile_variants() -> None:
    """The request's ``path`` is its URL (no host recorded); ``{"kind": "json",
    "value"}`` is the body, ``{"kind": "sse", "chunks"}`` the stream's text joined; the
    document's ``provenance.recordedAt`` dates a call its body does not. Each was
    refused whole: "shares too little with any format"."""
    doc = _load(PH_TOOLS)
    s, report = _imported(json.dumps(doc), "anthropic-tools.json")
    [rid] = report.runs_created
    assert s.runs.require_run(rid).started_at.isoformat() == "2026-09-19T20:07:25.253000+00:00"
    assert _text_of(s, report) == [["user: Get the weather in Paris in celsius.",
                                    "assistant: ['get_weather']"]]
    # a stream whose chunks are no texts: one error naming it, nothing written
    bad = copy.deepcopy(doc)
    bad["interactions"][0]["response"]["body"]["chunks"] = [{"event": "message_start"}]
    with pytest.raises(ImportFormatError, match="recording 0: response: an SSE body's "
                                                "'chunks' must be a list of texts"):
        _imported(json.dumps(bad), "bad.json")
    # an interaction that is no model call (an embedding) beside the one that is
    embed = {"request": {"method": "POST", "path": "/v1/embeddings", "body": {
        "kind": "json", "value": {"model": "e", "input": "x"}}},
        "response": {"status": 200, "body": {"kind": "json", "value": {"data": []}}}}
    two = copy.deepcopy(doc)
    two["interactions"].insert(0, embed)
    s, report = _imported(json.dumps(two), "two.json")
    assert len(report.runs_created) == 1
    assert any(k.where.endswith("recording 0") for k in report.skipped), report.skipped


# -- background Responses: answered "queued", then polled or cancelled ----------------------
def _response(status: str, text: str | None = None) -> dict[str, Any]:
    return {"id": "resp_bg1", "object": "response", "model": "gpt-5-mini", "status": status,
            "created_at": 1789870232, "output": [] if text is None else [
                {"type": "message", "role": "assistant", "content": [
                    {"type": "output_text", "text": text}]}],
            "usage": None if text is None else {"input_tokens": 20, "output_tokens": 36}}


def _background(*after: tuple[str, str, dict[str, Any]]) -> list[dict[str, Any]]:
    """A vcrpy-shaped POST answered queued, then each (method, path, body) after it."""
    post = {"request": {"method": "POST", "uri": "https://api.openai.com/v1/responses",
                        "body": json.dumps({"model": "gpt-5-mini", "background": True,
                                            "input": "What is 17 * 23?"})},
            "response": {"status": {"code": 200}, "body": {"string": json.dumps(
                _response("queued"))}}}
    return [post, *({"request": {"method": m, "uri": f"https://api.openai.com{p}",
                                 "body": None},
                     "response": {"status": {"code": 200},
                                  "body": {"string": json.dumps(b)}}} for m, p, b in after)]


def test_a_background_call_is_answered_by_its_last_poll() -> None:
    """PostHog's harness recorded a background Responses call: the POST answered
    "queued", two GETs of the response, the last "completed" with the answer. The run
    was failed, "no output recorded", and the polls "not a model call"."""
    import yaml

    polled = "/v1/responses/resp_bg1"
    cassette = yaml.safe_dump({"interactions": _background(
        ("GET", polled, _response("in_progress")),
        ("GET", polled, _response("completed", "391")))})
    s, report = _imported(cassette, "background.yaml")
    [rid] = report.runs_created
    run = s.runs.require_run(rid)
    assert run.status == "completed" and _text_of(s, report) == [
        ["user: What is 17 * 23?", "assistant: 391"]]
    assert _step(s, rid)["response"]["usage"] == {"input_tokens": 20, "output_tokens": 36}
    reasons = {k.where: k.reason for k in report.skipped}
    assert reasons["interaction 2"] == ("a poll of background response resp_bg1 (GET "
                                        f"https://api.openai.com{polled}), read into the "
                                        "call that started it")
    assert reasons["interaction 3"].startswith("a poll of background response")
    assert "a background call, answered 'queued': its answer is the last response read " \
           "of it, at interaction 3" in reasons["interaction 1"]


def test_a_background_call_cancelled_or_never_seen_to_end_says_so() -> None:
    import yaml

    cancelled = yaml.safe_dump({"interactions": _background(
        ("POST", "/v1/responses/resp_bg1/cancel", _response("cancelled")))})
    s, report = _imported(cancelled, "cancel.yaml")
    run = s.runs.require_run(report.runs_created[0])
    assert run.status == "failed" and "the response was cancelled before it answered" \
        in (run.error or "")
    assert any(k.reason.startswith("the cancellation of background response resp_bg1")
               for k in report.skipped)
    # polled, but never seen to end: what the recording holds, said
    s, report = _imported(yaml.safe_dump({"interactions": _background(
        ("GET", "/v1/responses/resp_bg1", _response("in_progress")))}), "cut.yaml")
    run = s.runs.require_run(report.runs_created[0])
    assert run.status == "failed" and "still queued when the recording ended" \
        in (run.error or ""), run.error
    # a GET of a response no call of the file started stays what it was: no model call
    _, report = _imported(yaml.safe_dump({"interactions": [
        _background()[0], {"request": {"method": "GET", "uri":
                                       "https://api.openai.com/v1/responses/resp_other"},
                           "response": {"status": {"code": 200}, "body": {"string":
                                        json.dumps({**_response("completed", "x"),
                                                    "id": "resp_other"})}}}]}), "o.yaml")
    assert any(k.reason.startswith("not a model call this importer reads (GET")
               for k in report.skipped), report.skipped


def test_a_post_to_an_unknown_path_says_what_it_sends() -> None:
    """huggingface_hub's text-generation cassettes (``{"inputs", "parameters"}`` to
    ``…/models/<id>``) were "not a model call this importer reads", as a GET would be:
    the reason now says it is a call in a format not read, and a conversation sent to
    a path no format serves says so."""
    import yaml

    def cassette(path: str, body: dict[str, Any]) -> str:
        return yaml.safe_dump({"interactions": [{
            "request": {"method": "POST", "uri": f"https://example.test{path}",
                        "body": json.dumps(body)},
            "response": {"status": {"code": 200}, "body": {"string": "[]"}}}]})

    with pytest.raises(ImportFormatError, match=r"\(POST https://example.test/models/t5\): a "
                       r"Hugging Face text-generation call \(\{\"inputs\", \"parameters\"\}"):
        _imported(cassette("/models/t5", {"inputs": "Hi", "parameters": {}}), "hf.yaml")
    with pytest.raises(ImportFormatError, match=r"\(POST https://example.test/v9/talk\): it "
                       r"sends 'messages', but to a path no API this importer reads is "
                       r"served at"):
        _imported(cassette("/v9/talk", {"messages": []}), "x.yaml")
