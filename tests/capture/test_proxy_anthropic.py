"""memwb proxy on Anthropic's Messages API: the real anthropic SDK (as Claude Code and
the Anthropic SDKs call it) talks to the recording proxy, which forwards to a strict
fake Messages API; every exchange — whole, streamed, a tool loop, an upstream error, a
stream cut short — becomes an imported run the workbench shows."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import anthropic
import httpx2
import pytest

from memory_core.analysis.views import run_view, thread_messages, thread_summaries
from memory_core.capture import LoopbackServer, Recorder, proxy_app
from memory_core.embedding.hashing import HashingEmbedder
from memory_core.journal import load_run
from memory_core.storage.duckdb import DuckDBStorage
from tests.fake_provider.anthropic import FakeAnthropic

KEY = "sk-ant-api03-capture-secret-0001"
MODEL = "claude-fake-1"
ASK = [{"role": "user", "content": "My locker code is 4417. What is my locker code?"}]
LOOKUP = {"name": "lookup", "description": "Look a thing up",
          "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}}}


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[tuple[FakeAnthropic, LoopbackServer, Recorder, str]]:
    db = str(tmp_path / "cap.duckdb")
    with FakeAnthropic(api_key=KEY) as fa:
        storage = DuckDBStorage(db)
        recorder = Recorder(storage, embed=HashingEmbedder(64))
        with LoopbackServer(proxy_app(recorder, fa.base_url + "/v1"), name="proxy") as server:
            yield fa, server, recorder, db
        recorder.close()
        storage.close()


def _client(server: LoopbackServer, key: str = KEY) -> anthropic.Anthropic:
    # what ANTHROPIC_BASE_URL=http://127.0.0.1:<port> gives Claude Code and the SDKs
    return anthropic.Anthropic(base_url=server.url, api_key=key, max_retries=0)


def _runs(recorder: Recorder, db: str) -> DuckDBStorage:
    recorder.drain()
    assert not recorder.failures
    return DuckDBStorage(db)


def test_whole_and_streamed_answers_become_runs_the_workbench_shows(setup) -> None:  # type: ignore[no-untyped-def]
    fa, server, recorder, db = setup
    client = _client(server)
    whole = client.messages.create(model=MODEL, max_tokens=200, system="You keep notes.",
                                   messages=ASK)  # type: ignore[arg-type]
    answer = whole.content[0].text  # type: ignore[union-attr]
    assert "4417" in answer
    with client.messages.stream(model=MODEL, max_tokens=200, system="You keep notes.",
                                messages=ASK) as stream:  # type: ignore[arg-type]
        pieces = list(stream.text_stream)
    assert len(pieces) > 1 and "".join(pieces) == answer  # it arrived in pieces
    # Claude Code calls /v1/messages?beta=true: the query is forwarded as it is
    client.messages.create(model=MODEL, max_tokens=50, messages=ASK,  # type: ignore[arg-type]
                           extra_query={"beta": "true"})
    assert [r.query for r in fa.requests] == ["", "", "beta=true"]
    # the credential and the version header reach the upstream as the client sent them
    assert all(r.headers["authorization"] == f"Bearer {KEY}" and r.headers[
        "anthropic-version"] for r in fa.requests)
    s = _runs(recorder, db)
    try:
        assert len(recorder.runs) == 3
        for rid in recorder.runs[:2]:
            data = load_run(s, rid)
            assert data.answer == answer and data.run.status == "completed"
            assert data.run.agent == MODEL
            step = data.steps[0]
            # the API's own counts (the streamed one's from its message_delta)
            assert step.record.usage_known
            assert step.response.usage.output_tokens == whole.usage.output_tokens
            assert step.response.usage.input_tokens == whole.usage.input_tokens
            assert step.response.finish_reason == "end_turn"
            view = run_view(s, rid)
            assert view.lane("instructions").items[0].text == "You keep notes."
            assert [i.text for i in view.lane("input").items] == [ASK[0]["content"]]
            assert KEY not in json.dumps(s.runs.list(rid), default=str)
        # the proxy's own times (the Messages API's answer holds none): in arrival order
        runs = [s.runs.require_run(r) for r in recorder.runs]
        assert all(r.started_at.year >= 2026 and r.finished_at >= r.started_at
                   for r in runs)
        assert [r.run_id for r in s.runs.list_runs()] == recorder.runs
        # asked twice with the same instructions: one conversation; without: another
        threads = thread_summaries(s, None)
        assert len(threads) == 2 and sorted(t.run_count for t in threads) == [1, 2]
    finally:
        s.close()


def test_a_tool_loop_streamed_is_one_thread_with_its_call_and_result(setup) -> None:  # type: ignore[no-untyped-def]
    fa, server, recorder, db = setup
    client = _client(server)
    fa.reply_next([{"type": "text", "text": "Let me look."},
                   {"type": "tool_use", "id": "toolu_01", "name": "lookup",
                    "input": {"q": "locker floor"}}], stop_reason="tool_use")
    with client.messages.stream(model=MODEL, max_tokens=200, messages=ASK,  # type: ignore[arg-type]
                                tools=[LOOKUP]) as stream:  # type: ignore[list-item]
        first = stream.get_final_message()
    assert first.stop_reason == "tool_use"
    msgs = [*ASK, {"role": "assistant", "content": [b.model_dump(exclude_none=True)
                                                    for b in first.content]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01",
                                          "content": "Floor 3, row B"}]}]
    second = client.messages.create(model=MODEL, max_tokens=200, messages=msgs,  # type: ignore[arg-type]
                                    tools=[LOOKUP])  # type: ignore[list-item]
    assert "Floor 3" in second.content[0].text  # type: ignore[union-attr]
    s = _runs(recorder, db)
    try:
        threads = thread_summaries(s, None)
        assert len(threads) == 1 and threads[0].run_count == 2
        call_run, result_run = (load_run(s, r) for r in recorder.runs)
        calls = call_run.steps[0].response.tool_calls
        assert [(c.id, c.name, c.args) for c in calls] == [
            ("toolu_01", "lookup", {"q": "locker floor"})]
        assert call_run.steps[0].response.finish_reason == "tool_use"
        assert [t.name for t in call_run.steps[0].record.tools] == ["lookup"]
        page = thread_messages(s, threads[0].thread_id)
        assert [m.role for m in page.messages] == ["user", "assistant", "tool", "assistant"]
        assert result_run.answer == second.content[0].text  # type: ignore[union-attr]
        assert "Floor 3, row B" in json.dumps(
            [i.text for i in run_view(s, recorder.runs[1]).lane("input").items])
    finally:
        s.close()


def test_upstream_errors_reach_the_client_as_they_are_and_are_failed_runs(setup) -> None:  # type: ignore[no-untyped-def]
    fa, server, recorder, db = setup
    client = _client(server)
    with pytest.raises(anthropic.AuthenticationError):
        _client(server, key="sk-ant-api03-wrong-key-000000").messages.create(
            model=MODEL, max_tokens=10, messages=ASK)  # type: ignore[arg-type]
    fa.fail_next("overloaded")
    with pytest.raises(anthropic.APIStatusError) as over:
        client.messages.create(model=MODEL, max_tokens=10, messages=ASK)  # type: ignore[arg-type]
    assert over.value.status_code == 529
    fa.fail_next("rate_limit")
    with pytest.raises(anthropic.RateLimitError) as rl:
        client.messages.create(model=MODEL, max_tokens=10, messages=ASK)  # type: ignore[arg-type]
    assert rl.value.response.headers["retry-after"] == "1"
    # what the API refuses is refused through the proxy too, and recorded as asked
    bad = httpx2.post(f"{server.url}/v1/messages", json={"model": MODEL, "messages": ASK},
                      headers={"x-api-key": KEY, "anthropic-version": "2023-06-01"})
    assert bad.status_code == 400 and bad.json()["error"]["message"] == \
        "max_tokens: Field required"
    s = _runs(recorder, db)
    try:
        runs = [s.runs.require_run(r) for r in recorder.runs]
        assert [r.status for r in runs] == ["failed"] * 4
        assert [r.error for r in runs] == [
            "HTTP 401: invalid x-api-key", "HTTP 529: Overloaded",
            "HTTP 429: Number of request tokens has exceeded your per-minute rate limit",
            "HTTP 400: max_tokens: Field required"]
        stored = json.dumps([s.runs.list(r.run_id) for r in runs], default=str)
        assert "sk-ant-api03-wrong-key" not in stored and KEY not in stored
    finally:
        s.close()


def test_a_stream_cut_short_or_ended_by_an_error_event_is_a_failed_run(setup) -> None:  # type: ignore[no-untyped-def]
    fa, server, recorder, db = setup
    fa.fail_next("stream_error")
    with pytest.raises(anthropic.APIStatusError):
        with _client(server).messages.stream(model=MODEL, max_tokens=100,
                                             messages=ASK) as stream:  # type: ignore[arg-type]
            stream.get_final_message()
    fa.fail_next("stream_cut")
    with httpx2.stream("POST", f"{server.url}/v1/messages", json={
            "model": MODEL, "max_tokens": 100, "messages": ASK, "stream": True},
            headers={"x-api-key": KEY, "anthropic-version": "2023-06-01"}) as cut:
        events = [line for line in cut.iter_lines() if line.startswith("event:")]
    assert "event: message_stop" not in events and "event: content_block_delta" in events
    s = _runs(recorder, db)
    try:
        runs = [s.runs.require_run(r) for r in recorder.runs]
        assert [r.status for r in runs] == ["failed", "failed"]
        assert runs[0].error == "the stream carried an error: overloaded_error: Overloaded"
        assert runs[1].error == "the stream ended before message_stop"
    finally:
        s.close()


def test_count_tokens_passes_through_and_is_not_recorded(setup) -> None:  # type: ignore[no-untyped-def]
    fa, server, recorder, db = setup
    counted = _client(server).messages.count_tokens(model=MODEL, messages=ASK)  # type: ignore[arg-type]
    assert counted.input_tokens > 0
    assert [r.path for r in fa.requests] == ["/v1/messages/count_tokens"]
    recorder.drain()
    assert recorder.runs == [] and recorder.failures == []


def test_the_fake_refuses_what_the_messages_api_refuses(setup) -> None:  # type: ignore[no-untyped-def]
    """The fake upstream is strict: a tool result with no call before it, a call left
    unanswered, a role the API does not know, a missing version header."""
    fa, server, recorder, db = setup
    client = _client(server)
    orphan = [*ASK, {"role": "assistant", "content": "ok"},
              {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_x",
                                            "content": "4417"}]}]
    with pytest.raises(anthropic.BadRequestError, match="unexpected `tool_use_id`"):
        client.messages.create(model=MODEL, max_tokens=10, messages=orphan)  # type: ignore[arg-type]
    unanswered = [*ASK, {"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_y", "name": "lookup", "input": {}}]},
        {"role": "user", "content": "never mind"}]
    with pytest.raises(anthropic.BadRequestError, match="without `tool_result`"):
        client.messages.create(model=MODEL, max_tokens=10, messages=unanswered,  # type: ignore[arg-type]
                               tools=[LOOKUP])  # type: ignore[list-item]
    with pytest.raises(anthropic.BadRequestError, match="'user' or 'assistant'"):
        client.messages.create(model=MODEL, max_tokens=10,
                               messages=[{"role": "system", "content": "x"}])  # type: ignore[list-item]
    plain = httpx2.post(f"{server.url}/v1/messages", headers={"x-api-key": KEY}, json={
        "model": MODEL, "max_tokens": 10, "messages": ASK})
    assert plain.status_code == 400 and "anthropic-version" in plain.text
    recorder.drain()
    # each was asked, so each is a failed run (what the client sent, as it sent it)
    assert len(recorder.runs) + len(recorder.failures) == 4


def test_a_claude_code_shaped_session_is_recorded_as_it_was_sent(setup) -> None:  # type: ignore[no-untyped-def]
    """What Claude Code sends (ANTHROPIC_BASE_URL at the proxy): ?beta=true, an OAuth
    bearer token and beta headers, the system prompt as cached text blocks, a
    reminder block before the question, extended thinking streamed back (its signature
    too) and sent back with the tool call, metadata.user_id, a billing block whose
    digest changes every request. One thread of two runs,
    the thinking kept out of the stored answer but the call in it, the user id the
    resource, the token nowhere."""
    fa, server, recorder, db = setup
    headers = {"authorization": f"Bearer {KEY}", "anthropic-version": "2023-06-01",
               "anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14",
               "x-app": "cli"}
    # its billing block first, whose digest changes every request (cch=…)
    billing = "x-anthropic-billing-header: cc_version=2.1.113.b14; cc_entrypoint=cli; cch={};"
    system = [{"type": "text", "text": billing.format("0b6c7")},
              {"type": "text", "text": "You are Claude Code.",
               "cache_control": {"type": "ephemeral"}},
              {"type": "text", "text": "Working directory: /home/u/proj"}]
    question = {"role": "user", "content": [
        {"type": "text", "text": "<system-reminder>Use pytest.</system-reminder>"},
        {"type": "text", "text": "why does the test fail?",
         "cache_control": {"type": "ephemeral"}}]}
    bash = {"name": "Bash", "description": "Executes a given bash command", "input_schema": {
        "type": "object", "properties": {"command": {"type": "string"}},
        "required": ["command"]}}
    turn = [{"type": "thinking", "thinking": "Run the tests first.", "signature": "EpYBc2ln"},
            {"type": "text", "text": "I'll run the tests."},
            {"type": "tool_use", "id": "toolu_01A", "name": "Bash",
             "input": {"command": "pytest -q"}}]
    body = {"model": "claude-sonnet-4-5", "max_tokens": 32000, "system": system,
            "tools": [bash], "messages": [question], "stream": True,
            "thinking": {"type": "enabled", "budget_tokens": 31999},
            "metadata": {"user_id": "user_0123_account_1111_session_2222"}}
    fa.reply_next(turn, stop_reason="tool_use")
    with httpx2.stream("POST", f"{server.url}/v1/messages?beta=true", json=body,
                       headers=headers) as first:
        assert b"signature_delta" in b"".join(first.iter_bytes())
    body["system"] = [{"type": "text", "text": billing.format("d456a")}, *system[1:]]
    body["messages"] = [question, {"role": "assistant", "content": turn}, {
        "role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01A",
                                     "content": "1 failed: test_sum - assert 3 == 4"}]}]
    with httpx2.stream("POST", f"{server.url}/v1/messages?beta=true", json=body,
                       headers=headers) as second:
        assert second.status_code == 200 and b"message_stop" in b"".join(second.iter_bytes())
    assert [r.query for r in fa.requests] == ["beta=true", "beta=true"]
    s = _runs(recorder, db)
    try:
        [thread] = thread_summaries(s, None)
        assert thread.run_count == 2
        assert thread.resource_id == "user_0123_account_1111_session_2222"
        first_run, second_run = (load_run(s, r) for r in recorder.runs)
        step = first_run.steps[0]
        assert step.response.finish_reason == "tool_use" and step.response.text == \
            "I'll run the tests."
        assert [(c.name, c.args) for c in step.response.tool_calls] == [
            ("Bash", {"command": "pytest -q"})]
        view = run_view(s, recorder.runs[1])
        assert [i.text for i in view.lane("instructions").items] == [
            billing.format("d456a") + "\nYou are Claude Code.\nWorking directory: /home/u/proj"]
        assert "assert 3 == 4" in view.lane("input").items[-1].text
        assert second_run.answer == "You said: 1 failed: test_sum - assert 3 == 4"
        assert KEY not in json.dumps([s.runs.list(r) for r in recorder.runs], default=str)
    finally:
        s.close()


def test_an_unreachable_upstream_and_a_body_not_json_are_said_in_the_api_s_shape(
        tmp_path: Path) -> None:
    """The proxy's own errors take the Messages API's shape, so the client's SDK reads
    the message; a body that is not JSON is forwarded and its not being recorded is
    said as that (it read "the request has no 'messages' list")."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]  # nothing listens there once closed
    storage = DuckDBStorage(str(tmp_path / "down.duckdb"))
    recorder = Recorder(storage, embed=HashingEmbedder(64))
    try:
        with LoopbackServer(proxy_app(recorder, f"http://127.0.0.1:{dead}/v1")) as server:
            with pytest.raises(anthropic.APIStatusError) as down:
                _client(server).messages.create(model=MODEL, max_tokens=10, messages=ASK)  # type: ignore[arg-type]
            assert down.value.status_code == 502
            assert "memwb proxy: upstream" in str(down.value) and "unreachable" in str(
                down.value)
            bad = httpx2.post(f"{server.url}/v1/messages", content=b"{not json",
                              headers={"x-api-key": KEY})
            assert bad.status_code == 502 and bad.json()["type"] == "error"
        recorder.drain()
        [run] = [storage.runs.require_run(r) for r in recorder.runs]
        assert run.status == "failed" and "unreachable" in (run.error or "")
        assert [f.split(": ", 1)[1] for f in recorder.failures] == [
            "the request body is not JSON"]
    finally:
        recorder.close()
        storage.close()
