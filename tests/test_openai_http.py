"""OpenAIChatModel (on the openai SDK) against the fake provider on 127.0.0.1: the
request format every provider accepts, tool calls (parallel, streamed), usage, retries
on 429/5xx, and one clear ModelError for timeouts, garbage, HTTP errors and refusals."""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest

from memory_core.errors import InvalidInputError, ModelError
from memory_core.models.base import ModelIdentity, ModelResponse, ToolSpec, model_identity
from memory_core.models.openai_chat import OpenAIChatModel, public_url
from memory_core.models.openai_codec import to_openai_messages
from memory_core.types import Message, ToolCallPart, ToolResultPart
from tests.fake_provider.server import FakeProvider, Fault
from tests.fake_provider.validation import validate_request

REFUND = ToolSpec("refund", "Issue a refund for an order",
                  {"type": "object", "properties": {"order_id": {"type": "string"}},
                   "required": ["order_id"]})
ASK = [Message(role="user", content="The refund for order r-7 was 40 euros."),
       Message(role="assistant", content="Noted."),
       Message(role="user", content="How much was the refund for order r-7?")]
TWO_CALLS = ModelResponse(tool_calls=[
    ToolCallPart(id="call_a", name="refund", args={"order_id": "r-7", "note": "x" * 23}),
    ToolCallPart(id="call_b", name="refund", args={"order_id": "r-8"})])


def model(fp: FakeProvider, **kw: Any) -> OpenAIChatModel:
    kw.setdefault("model", "fake-model")
    kw.setdefault("max_retries", 0)
    return OpenAIChatModel(base_url=fp.base_url, **kw)


def test_request_is_openai_format_and_answer_comes_from_the_prompt(
        fake_provider: FakeProvider) -> None:
    m = model(fake_provider, api_key="sk-test-123", temperature=0.0, seed=7, top_p=0.5,
              max_tokens=200)
    call = ToolCallPart(id="call-1", name="refund", args={"order_id": "r-7"})
    msgs = [Message(role="system", content="Be brief."), *ASK,
            Message(role="assistant", content=[call]),
            Message(role="tool", content=[ToolResultPart(call_id="call-1", name="refund",
                                                         result={"status": "ok"})])]
    r = m.complete(msgs, [REFUND])
    assert r.text is not None and "40 euros" in r.text
    assert (r.model, r.finish_reason) == ("fake-model", "stop")
    assert r.usage.input_tokens > 0 and r.usage.output_tokens > 0
    (req,) = fake_provider.requests
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == "Bearer sk-test-123"
    body = req.body
    assert (body["model"], body["temperature"], body["seed"], body["top_p"],
            body["max_tokens"], body["stream"]) == ("fake-model", 0.0, 7, 0.5, 200, False)
    assert body["tools"] == [{"type": "function", "function": {
        "name": "refund", "description": "Issue a refund for an order",
        "parameters": REFUND.parameters}}]
    assert body["messages"][-2:] == [
        {"role": "assistant", "content": None, "tool_calls": [{
            "id": "call-1", "type": "function",
            "function": {"name": "refund", "arguments": "{\"order_id\": \"r-7\"}"}}]},
        {"role": "tool", "tool_call_id": "call-1", "name": "refund",
         "content": "{\"status\": \"ok\"}"}]
    assert "sk-test-123" not in repr(m) and "sk-test-123" not in repr(m.identity())


def test_unset_sampling_parameters_are_not_sent_and_no_key_sends_no_auth(
        fake_provider: FakeProvider) -> None:
    model(fake_provider).complete(ASK, [])
    (req,) = fake_provider.requests
    assert not {"temperature", "seed", "top_p", "max_tokens", "tools"} & set(req.body)
    assert "authorization" not in req.headers


def test_identity_records_sampling_and_a_base_url_without_credentials(
        fake_provider: FakeProvider) -> None:
    port = fake_provider.port
    m = OpenAIChatModel(
        base_url=f"http://user:pa55@127.0.0.1:{port}/v1/?api-version=2024-06-01&api-key=S3CRET",
        model="fake-model", temperature=0.7, seed=3, max_tokens=50, max_retries=0)
    assert model_identity(m) == ModelIdentity(
        kind="openai", name="fake-model",
        base_url=f"http://127.0.0.1:{port}/v1?api-version=2024-06-01",
        temperature=0.7, seed=3, max_tokens=50)
    m.complete(ASK, [])
    (req,) = fake_provider.requests
    # query parameters (Azure's api-version, a key) still reach the server
    assert "api-version=2024-06-01" in req.query and "api-key=S3CRET" in req.query
    assert "S3CRET" not in repr(m) and "pa55" not in m.url
    assert public_url("https://k:v@[::1]:8443/v1?token=x&a=1#f") == "https://[::1]:8443/v1?a=1"


def test_parallel_tool_calls_parse_the_same_streamed_or_not(
        fake_provider: FakeProvider) -> None:
    fake_provider.reply_next(TWO_CALLS, TWO_CALLS)
    plain = model(fake_provider).complete(ASK, [REFUND])
    streamed = model(fake_provider, stream=True).complete(ASK, [REFUND])
    assert plain.tool_calls == streamed.tool_calls == TWO_CALLS.tool_calls
    assert plain.finish_reason == streamed.finish_reason == "tool_calls"
    assert plain.text is None and streamed.text is None
    assert plain.usage == streamed.usage and streamed.usage.output_tokens > 0
    body = fake_provider.chat_bodies[1]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


def test_streamed_text_is_assembled_with_usage(fake_provider: FakeProvider) -> None:
    plain = model(fake_provider, temperature=0).complete(ASK, [])
    streamed = model(fake_provider, temperature=0, stream=True).complete(ASK, [])
    assert streamed.text == plain.text and streamed.text and len(streamed.text) > 7
    assert streamed.usage == plain.usage and streamed.usage.input_tokens > 0


def test_stream_assembly_of_interleaved_fragments() -> None:
    m = OpenAIChatModel(base_url="http://127.0.0.1:9/v1", model="m")
    chunks = [
        {"model": "m", "choices": [{"index": 0, "delta": {"role": "assistant",
                                                          "content": "Check"}}]},
        {"choices": [{"index": 0, "delta": {"content": "ing.", "tool_calls": [
            {"index": 1, "id": "b", "type": "function",
             "function": {"name": "refund", "arguments": "{\"order"}},
            {"index": 0, "id": "a", "type": "function",
             "function": {"name": "ref", "arguments": ""}}]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "function": {"name": "und", "arguments": "{}"}},
            {"index": 1, "function": {"arguments": "_id\": \"r-8\"}"}}]},
            "finish_reason": "tool_calls"}]},
        {"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 4}}]
    r = m.parse_response(m.assemble_stream(chunks))
    assert r.text == "Checking."
    assert [(c.id, c.name, c.args) for c in r.tool_calls] == [
        ("a", "refund", {}), ("b", "refund", {"order_id": "r-8"})]
    assert (r.usage.input_tokens, r.usage.output_tokens, r.finish_reason) == \
        (9, 4, "tool_calls")


def test_429_then_200_succeeds_after_a_retry(fake_provider: FakeProvider) -> None:
    fake_provider.fail_next(Fault("rate_limit", 0.05))
    r = model(fake_provider, max_retries=2, temperature=0).complete(ASK, [])
    assert r.text and "40 euros" in r.text
    assert len(fake_provider.chat_bodies) == 2
    # the same 429 without retries is one clear error with the provider's message
    fake_provider.fail_next(Fault("rate_limit", 0.05))
    with pytest.raises(ModelError, match=r"^HTTP 429 from http://127\.0\.0\.1:\d+/v1/chat/"
                                         r"completions: Rate limit reached"):
        model(fake_provider, max_retries=0).complete(ASK, [])


def test_5xx_is_retried_and_named_when_retries_run_out(fake_provider: FakeProvider) -> None:
    fake_provider.fail_next(Fault("server_error"))
    assert model(fake_provider, max_retries=1).complete(ASK, []).text
    fake_provider.fail_next(Fault("server_error"), Fault("server_error"))
    with pytest.raises(ModelError, match=r"HTTP 500 from .* \(after 1 retries\): The server "
                                         r"had an error"):
        model(fake_provider, max_retries=1).complete(ASK, [])
    assert len(fake_provider.chat_bodies) == 4


def test_max_retries_comes_from_the_environment(fake_provider: FakeProvider) -> None:
    env = {"MEMWB_OPENAI_BASE_URL": fake_provider.base_url, "MEMWB_OPENAI_MODEL": "m",
           "MEMWB_OPENAI_MAX_RETRIES": "0"}
    fake_provider.fail_next(Fault("rate_limit", 0.05))
    with pytest.raises(ModelError, match="HTTP 429"):
        OpenAIChatModel.from_env(env).complete(ASK, [])
    assert len(fake_provider.chat_bodies) == 1
    with pytest.raises(InvalidInputError, match="MEMWB_OPENAI_MAX_RETRIES='lots'"):
        OpenAIChatModel.from_env({**env, "MEMWB_OPENAI_MAX_RETRIES": "lots"})
    with pytest.raises(InvalidInputError, match="max_retries must be an integer >= 0, got -1"):
        OpenAIChatModel.from_env({**env, "MEMWB_OPENAI_MAX_RETRIES": "-1"})


def test_timeout_is_one_clear_error_and_is_retried(fake_provider: FakeProvider) -> None:
    fake_provider.fail_next(Fault("delay", 3.0), Fault("delay", 3.0))
    with pytest.raises(ModelError, match=r"^timed out after 0\.2s waiting for "
                                         r"http://127\.0\.0\.1:\d+/v1/chat/completions "
                                         r"\(after 1 retries\)$"):
        model(fake_provider, timeout=0.2, max_retries=1).complete(ASK, [])
    assert len(fake_provider.chat_bodies) == 2


def test_garbage_body_is_a_clear_error(fake_provider: FakeProvider) -> None:
    fake_provider.fail_next(Fault("garbage"))
    with pytest.raises(ModelError, match=r"malformed JSON from http://127\.0\.0\.1.*502 Bad"):
        model(fake_provider).complete(ASK, [])


def test_provider_400_message_is_shown(fake_provider: FakeProvider) -> None:
    orphan = [Message(role="tool", content="{}", metadata={"tool_call_id": "zz"})]
    with pytest.raises(ModelError, match=r"^HTTP 400 from .*: Invalid parameter: messages "
                                         r"with role 'tool' must be a response"):
        model(fake_provider).complete(orphan, [])


def test_a_rejected_key_never_appears_in_the_error() -> None:
    with FakeProvider(api_key="the-right-key") as fp:
        m = model(fp, api_key="sk-wrong-SECRET-value")
        with pytest.raises(ModelError) as info:
            m.complete(ASK, [])
    assert "HTTP 401" in str(info.value) and "SECRET" not in str(info.value)
    assert "SECRET" not in repr(m) and "\n" not in str(info.value)


def test_unknown_model_is_the_providers_404() -> None:
    with FakeProvider(models=("llama3.1",), strict_models=True) as fp:
        with pytest.raises(ModelError, match=r"HTTP 404 .*The model `lama3\.1` does not exist"):
            model(fp, model="lama3.1").complete(ASK, [])
        assert model(fp, model="llama3.1").complete(ASK, []).text


def test_connection_refused() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    m = OpenAIChatModel(base_url=f"http://127.0.0.1:{port}/v1", model="m", timeout=2.0,
                        max_retries=0)
    # the URL was given: the fix is that URL, not the environment (a trial of whatif
    # --base-url was told to set MEMWB_OPENAI_BASE_URL)
    with pytest.raises(ModelError, match=rf"^connection refused by http://127\.0\.0\.1:{port}"
                                         r"/v1/chat/completions: is the server running\? "
                                         r"\(check the base URL given\)$"):
        m.complete(ASK, [])
    from_env = OpenAIChatModel(model="m", timeout=2.0, max_retries=0, environ={
        "MEMWB_OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1"})
    with pytest.raises(ModelError, match=r"\(set MEMWB_OPENAI_BASE_URL\)$"):
        from_env.complete(ASK, [])
    secret = OpenAIChatModel(base_url=f"http://admin:hunter22@127.0.0.1:{port}/v1"
                                      "?api-key=S3CRET-Q", model="m", api_key="sk-S3CRET-K",
                             max_retries=0)
    with pytest.raises(ModelError) as info:
        secret.complete(ASK, [])
    assert "S3CRET" not in str(info.value) and "hunter22" not in str(info.value)
    assert "*** *** ***" == secret._redact("hunter22 S3CRET-Q sk-S3CRET-K")


@pytest.mark.parametrize("message, needle", [
    ({"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {
        "name": "refund", "arguments": "{order_id: r-7"}}]},
     r"malformed JSON arguments for tool 'refund'"),
    ({"role": "assistant", "tool_calls": [{"id": "c", "function": {"arguments": "{}"}}]},
     r"tool call 0 .* has no function name"),
    ({"role": "assistant", "tool_calls": [{"id": "c", "function": {
        "name": "refund", "arguments": "[1]"}}]}, r"are not a JSON object"),
    ({"role": "assistant", "content": 42}, r"unexpected content type int"),
])
def test_malformed_responses_are_model_errors(message: dict[str, Any], needle: str) -> None:
    m = OpenAIChatModel(base_url="http://127.0.0.1:9/v1", model="m")
    with pytest.raises(ModelError, match=needle):
        m.parse_response({"choices": [{"message": message}]})
    with pytest.raises(ModelError, match=r"no choices\[0\]\.message"):
        m.parse_response({"error": "nope"})


def test_lenient_response_shapes_parse() -> None:
    m = OpenAIChatModel(base_url="http://127.0.0.1:9/v1", model="m")
    r = m.parse_response({"choices": [{"message": {
        "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
        "tool_calls": [{"type": "function", "function": {"name": "refund",
                                                         "arguments": {"order_id": "r-8"}}}]},
        "finish_reason": "tool_calls"}]})
    assert r.text == "ab" and r.model == "m"
    (call,) = r.tool_calls
    assert call.args == {"order_id": "r-8"} and call.id.startswith("call-")


def test_configuration_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("MEMWB_OPENAI_BASE_URL", "MEMWB_OPENAI_MODEL", "MEMWB_OPENAI_API_KEY",
                "MEMWB_OPENAI_TIMEOUT", "MEMWB_OPENAI_MAX_RETRIES", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(InvalidInputError, match="set MEMWB_OPENAI_MODEL"):
        OpenAIChatModel.from_env()
    m = OpenAIChatModel.from_env({"MEMWB_OPENAI_MODEL": "qwen2.5", "OPENAI_API_KEY": "k",
                                  "MEMWB_OPENAI_TIMEOUT": "4.5"})
    assert (m.url, m.model, m.name, m.timeout, m.max_retries) == \
        ("http://127.0.0.1:11434/v1/chat/completions", "qwen2.5", "qwen2.5", 4.5, 2)
    monkeypatch.setenv("MEMWB_OPENAI_MODEL", "env-model")
    monkeypatch.setenv("MEMWB_OPENAI_BASE_URL", "http://localhost:8000/v1")
    assert OpenAIChatModel().url == "http://localhost:8000/v1/chat/completions"
    # an explicit environ is the only source: os.environ does not leak into it
    with pytest.raises(InvalidInputError, match="MEMWB_OPENAI_MODEL"):
        OpenAIChatModel.from_env({})
    assert OpenAIChatModel.from_env({"MEMWB_OPENAI_MODEL": "m"}).base_url == \
        "http://127.0.0.1:11434/v1"
    with pytest.raises(InvalidInputError, match="'soon'"):
        OpenAIChatModel.from_env({"MEMWB_OPENAI_MODEL": "m", "MEMWB_OPENAI_TIMEOUT": "soon"})
    with pytest.raises(InvalidInputError, match="'localhost:1'"):
        OpenAIChatModel(base_url="localhost:1", model="m")
    with pytest.raises(InvalidInputError, match="temperature must be a number in \\[0, 2\\], "
                                                "got 3"):
        OpenAIChatModel(model="m", temperature=3)


def test_text_and_string_tool_messages_convert() -> None:
    msgs = to_openai_messages([
        Message(role="tool", content="{\"ok\": true}", metadata={"tool_call_id": "c9"}),
        Message(role="user", content=[]),
    ])
    assert msgs == [{"role": "tool", "content": "{\"ok\": true}", "tool_call_id": "c9"},
                    {"role": "user", "content": ""}]


def test_sampling_noise_is_seeded_and_zero_temperature_is_deterministic(
        fake_provider: FakeProvider) -> None:
    cold = {model(fake_provider, temperature=0).complete(ASK, []).text for _ in range(3)}
    assert len(cold) == 1
    (core,) = cold
    assert core is not None
    seeded = [model(fake_provider, temperature=1.0, seed=s).complete(ASK, []).text
              for s in (1, 1, 2, 3, 4, 5, 6, 7, 8)]
    assert seeded[0] == seeded[1]  # same seed, same prompt: same answer
    assert len(set(seeded)) > 1  # other seeds phrase it differently
    assert all(t is not None and core in t for t in seeded)  # the facts stay


@pytest.mark.parametrize("failure", ["timeout", "garbage"])
def test_a_failing_server_fails_the_run_and_the_run_resumes_losing_nothing(
        fake_provider: FakeProvider, failure: str) -> None:
    """The server times out (or answers garbage) at step 1, after a tool call was
    journaled at step 0; the run fails with a clear ModelError, and running the same
    run_id again once the server is back asks the model only for the missing step."""
    from memory_core.composition.memory import AgentMemory
    from memory_core.models.base import Tool
    from memory_core.runs.runner import Agent, Runner
    from memory_core.storage.inmemory import InMemoryStorage

    applied: list[dict[str, Any]] = []
    lookup = Tool(ToolSpec("lookup", "Look something up.", {"type": "object", "properties": {
        "q": {"type": "string"}}}), lambda args: applied.append(args) or {"found": "42"})
    storage = InMemoryStorage()
    runner = Runner(storage, {"a": Agent(
        name="a", instructions="Be brief.", tools=[lookup],
        model=model(fake_provider, timeout=0.3, temperature=0))},
        memory=AgentMemory(storage, recent_n=4))
    fake_provider.reply_next(ModelResponse(tool_calls=[
        ToolCallPart(id="c1", name="lookup", args={"q": "answer"})]))
    fake_provider.fail_next(Fault("delay", 3.0) if failure == "timeout" else Fault("garbage"),
                            after=1)
    with pytest.raises(ModelError, match=r"http://127\.0\.0\.1") as info:
        runner.run("a", run_id="r1", thread_id="t", resource_id="u", prompt="What is it?")
    assert ("timed out" if failure == "timeout" else "malformed JSON") in str(info.value)
    run = storage.runs.get_run("r1")
    assert run is not None and run.status == "failed" and "ModelError" in (run.error or "")
    assert storage.runs.get("r1:step:0") is not None and storage.runs.get("r1:step:1") is None
    assert len(applied) == 1

    served = len(fake_provider.chat_bodies)
    fake_provider.reply_next(ModelResponse(text="It is 42."))
    result = runner.run("a", run_id="r1", thread_id="t", resource_id="u", prompt="What is it?")
    assert result.text == "It is 42."
    assert len(fake_provider.chat_bodies) == served + 1  # only the missing step was asked
    assert len(applied) == 1  # the tool was not applied again
    assert storage.runs.get_run("r1").status == "completed"  # type: ignore[union-attr]
    assert [m.role for m in storage.memory.get_messages("t")] == \
        ["user", "assistant", "tool", "assistant"]
    for body in fake_provider.chat_bodies:  # every request we sent was a valid one
        validate_request(body)
    assert json.loads(fake_provider.chat_bodies[-1]["messages"][-1]["content"]) == \
        {"found": "42"}
