"""memwb proxy (issue 13.5): the real openai SDK talks to the recording proxy, which
forwards to the fake model server; every exchange becomes an imported run the
workbench shows (memory_core.analysis.views), streamed answers included."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from memory_core.analysis.views import (
    list_runs,
    run_view,
    thread_messages,
    thread_summaries,
)
from memory_core.capture import LoopbackServer, Recorder, proxy_app, reassemble_sse
from memory_core.embedding.hashing import HashingEmbedder
from memory_core.errors import InvalidInputError
from memory_core.journal import load_run
from memory_core.models.base import ModelResponse
from memory_core.storage.duckdb import DuckDBStorage
from memory_core.types import ToolCallPart
from tests.fake_provider.server import FAULT_HEADER, FakeProvider

KEY = "sk-capture-secret-0001"
USER = [{"role": "system", "content": "You keep notes."},
        {"role": "user", "content": "My locker code is 4417. What is my locker code?"}]


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[tuple[FakeProvider, LoopbackServer, Recorder, str]]:
    db = str(tmp_path / "cap.duckdb")
    with FakeProvider(api_key=KEY) as fp:
        storage = DuckDBStorage(db)
        recorder = Recorder(storage, embed=HashingEmbedder(64))
        with LoopbackServer(proxy_app(recorder, fp.base_url), name="proxy") as server:
            yield fp, server, recorder, db
        recorder.close()
        storage.close()


def _client(server: LoopbackServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0)


def _runs(db: str) -> tuple[DuckDBStorage, list[str]]:
    s = DuckDBStorage(db)
    return s, [r.run_id for r in s.runs.list_runs()]


def test_plain_and_streamed_exchanges_become_runs_the_workbench_shows(setup) -> None:  # type: ignore[no-untyped-def]
    fp, server, recorder, db = setup
    client = _client(server)
    plain = client.chat.completions.create(model="fake-model", messages=USER,  # type: ignore[arg-type]
                                           temperature=0)
    answer = plain.choices[0].message.content
    assert answer and "4417" in answer
    pieces = [c.choices[0].delta.content or "" for c in client.chat.completions.create(
        model="fake-model", messages=USER, temperature=0, stream=True,  # type: ignore[arg-type]
        stream_options={"include_usage": True}) if c.choices]
    assert len([p for p in pieces if p]) > 1  # it really arrived in chunks
    assert "".join(pieces) == answer
    # the upstream saw the requests as sent, credentials included (FakeProvider checks the key)
    assert [b["stream"] for b in fp.chat_bodies if "stream" in b] == [True]
    recorder.drain()
    assert not recorder.failures
    s, run_ids = _runs(db)
    try:
        assert sorted(run_ids) == sorted(recorder.runs) and len(run_ids) == 2
        for rid in run_ids:
            data = load_run(s, rid)
            assert data.answer == answer and data.run.status == "completed"
            assert data.memctx is not None and data.memctx.imported
            view = run_view(s, rid)
            assert [i.text for i in view.lane("input").items][-1] == USER[1]["content"]
            assert view.lane("instructions").items[0].text == "You keep notes."
            assert view.answer == answer
        steps = [load_run(s, r).steps[0] for r in run_ids]
        # the streamed answer's usage came in its last chunk, and is kept
        assert all(st.record.usage_known and st.response.usage.output_tokens > 0
                   for st in steps)
        # the same request sent twice, answered alike: one conversation, two runs
        threads = thread_summaries(s, None)
        assert len(threads) == 1 and threads[0].run_count == 2
        page = thread_messages(s, threads[0].thread_id)
        assert [m.role for m in page.messages] == ["user", "assistant"]
        assert {r.run_id for r in list_runs(s)} == set(run_ids)
        # nothing of the Authorization header is stored anywhere
        for rid in run_ids:
            assert KEY not in json.dumps(s.runs.list(rid), default=str)
    finally:
        s.close()


def test_a_conversation_through_the_proxy_is_one_thread(setup) -> None:  # type: ignore[no-untyped-def]
    """Each exchange is imported as it completes, yet a conversation — a tool loop and a
    follow-up question, each request repeating the history — is one thread with every
    message stored once, and each run's history points at those stored messages."""
    fp, server, recorder, db = setup
    client = _client(server)
    tool = {"type": "function", "function": {"name": "lookup", "description": "look up",
                                             "parameters": {"type": "object", "properties": {
                                                 "q": {"type": "string"}}}}}
    fp.reply_next(ModelResponse(text=None, tool_calls=[
        ToolCallPart(id="call_1", name="lookup", args={"q": "locker"})]))
    msgs: list[dict] = list(USER)  # type: ignore[type-arg]
    first = client.chat.completions.create(model="fake-model", messages=msgs,  # type: ignore[arg-type]
                                           tools=[tool])  # type: ignore[list-item]
    call = first.choices[0].message.tool_calls[0]  # type: ignore[index]
    msgs += [first.choices[0].message.model_dump(exclude_none=True),
             {"role": "tool", "tool_call_id": call.id, "content": "4417"}]
    second = client.chat.completions.create(model="fake-model", messages=msgs,  # type: ignore[arg-type]
                                            tools=[tool])  # type: ignore[list-item]
    msgs += [{"role": "assistant", "content": second.choices[0].message.content},
             {"role": "user", "content": "And which floor is the locker on?"}]
    third = "".join(c.choices[0].delta.content or "" for c in client.chat.completions.create(
        model="fake-model", messages=msgs, tools=[tool], stream=True)  # type: ignore[arg-type,list-item]
        if c.choices)
    recorder.drain()
    assert not recorder.failures
    s, run_ids = _runs(db)
    try:
        threads = thread_summaries(s, None)
        assert len(threads) == 1 and threads[0].run_count == 3
        tid = threads[0].thread_id
        stored = s.memory.get_messages(tid)
        assert [m.role for m in stored] == ["user", "assistant", "tool", "assistant", "user",
                                            "assistant"]
        assert stored[-1].text() == third
        for rid in recorder.runs:
            view = run_view(s, rid)
            for item in view.lane("recent").items:
                assert item.thread_id == tid
                assert item.seq is not None and stored[item.seq].role == item.role
                if stored[item.seq].text() is not None:  # the stored message itself
                    assert stored[item.seq].text() == item.text
        # the messages each run added carry its run id
        assert [m.run_id for m in stored] == [recorder.runs[0], recorder.runs[0],
                                              recorder.runs[1], recorder.runs[1],
                                              recorder.runs[2], recorder.runs[2]]
    finally:
        s.close()


def test_streamed_tool_calls_are_reassembled(setup) -> None:  # type: ignore[no-untyped-def]
    fp, server, recorder, db = setup
    fp.reply_next(ModelResponse(text=None, tool_calls=[
        ToolCallPart(id="call_a", name="lookup", args={"q": "locker"}),
        ToolCallPart(id="call_b", name="lookup", args={"q": "code"})]))
    tool = {"type": "function", "function": {"name": "lookup", "description": "look up",
                                             "parameters": {"type": "object", "properties": {
                                                 "q": {"type": "string"}}}}}
    stream = _client(server).chat.completions.create(
        model="fake-model", messages=USER, tools=[tool], stream=True)  # type: ignore[arg-type,list-item]
    assert sum(1 for _ in stream) > 1
    recorder.drain()
    s, run_ids = _runs(db)
    try:
        step = load_run(s, run_ids[0]).steps[0]
        calls = step.response.tool_calls
        assert [(c.id, c.name, c.args) for c in calls] == [
            ("call_a", "lookup", {"q": "locker"}), ("call_b", "lookup", {"q": "code"})]
        assert load_run(s, run_ids[0]).output is not None
    finally:
        s.close()


def test_upstream_errors_pass_back_as_they_are_and_are_recorded_as_failed(setup) -> None:  # type: ignore[no-untyped-def]
    fp, server, recorder, db = setup
    client = _client(server)
    with pytest.raises(openai.InternalServerError):
        client.chat.completions.create(model="fake-model", messages=USER,  # type: ignore[arg-type]
                                       extra_headers={FAULT_HEADER: "server_error"})
    with pytest.raises(openai.RateLimitError) as rl:
        client.chat.completions.create(model="fake-model", messages=USER,  # type: ignore[arg-type]
                                       extra_headers={FAULT_HEADER: "rate_limit:3"})
    assert rl.value.response.headers["retry-after"] == "3"
    bad = openai.OpenAI(base_url=server.url + "/v1", api_key="sk-wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        bad.chat.completions.create(model="fake-model", messages=USER)  # type: ignore[arg-type]
    assert [m.id for m in client.models.list()] == ["fake-model"]
    recorder.drain()
    s, run_ids = _runs(db)
    try:
        runs = [s.runs.require_run(r) for r in run_ids]
        assert len(runs) == 3 and all(r.status == "failed" for r in runs)
        errors = sorted(r.error or "" for r in runs)
        assert errors[0].startswith("HTTP 401") and errors[1].startswith("HTTP 429")
        assert errors[2].startswith("HTTP 500")
        assert all("sk-wrong" not in e and KEY not in e for e in errors)
    finally:
        s.close()


def test_an_unreachable_upstream_is_a_502_and_a_failed_run(tmp_path: Path) -> None:
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        dead = sock.getsockname()[1]
    storage = DuckDBStorage(str(tmp_path / "x.duckdb"))
    recorder = Recorder(storage)
    with LoopbackServer(proxy_app(recorder, f"http://127.0.0.1:{dead}/v1")) as server:
        with pytest.raises(openai.InternalServerError) as e:
            _client(server).chat.completions.create(model="m", messages=USER)  # type: ignore[arg-type]
        assert e.value.status_code == 502 and "unreachable" in str(e.value)
    recorder.close()
    [run] = storage.runs.list_runs()
    assert run.status == "failed" and "unreachable" in (run.error or "")
    storage.close()


def test_reassemble_sse_names_an_incomplete_stream() -> None:
    head = b'data: {"id":"c1","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}\n\n'
    resp, problem = reassemble_sse(head)
    assert problem == "the stream ended before its last chunk"
    full = head + (b'data: {"choices":[{"index":0,"delta":{"content":"lo"},'
                   b'"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n')
    resp, problem = reassemble_sse(full)
    assert problem is None and resp is not None
    assert resp["choices"][0]["message"] == {"role": "assistant", "content": "Hello"}
    assert reassemble_sse(b"data: {oops\n\n")[1] is not None


@pytest.mark.parametrize("url", ["", "ftp://x/v1", "http://", "http://u:p@h/v1",
                                 "http://h/v1?x=1", "http://h:99999/v1"])
def test_bad_upstreams_are_refused(url: str) -> None:
    with pytest.raises(InvalidInputError, match="upstream|port|credentials|query"):
        proxy_app(Recorder.__new__(Recorder), url)


def test_a_stream_is_passed_on_as_it_arrives(tmp_path: Path) -> None:
    """The upstream holds its second chunk until the client has the first: a proxy that
    buffered the stream would never let the client see it in time."""
    import threading

    from starlette.applications import Starlette
    from starlette.responses import StreamingResponse
    from starlette.routing import Route

    got_first = threading.Event()
    waited: list[bool] = []

    def chunk(delta: dict[str, str], finish: str | None = None) -> bytes:
        return ("data: " + json.dumps({"id": "c1", "model": "slow", "object":
                "chat.completion.chunk", "choices": [{"index": 0, "delta": delta,
                                                      "finish_reason": finish}]})
                + "\n\n").encode()

    async def chat(request):  # type: ignore[no-untyped-def]
        import asyncio

        async def gen():  # type: ignore[no-untyped-def]
            yield chunk({"role": "assistant", "content": "first "})
            waited.append(await asyncio.to_thread(got_first.wait, 10))
            yield chunk({"content": "second"}, "stop")
            yield b"data: [DONE]\n\n"
        return StreamingResponse(gen(), media_type="text/event-stream")

    upstream = LoopbackServer(Starlette(routes=[Route("/v1/chat/completions", chat,
                                                      methods=["POST"])]), name="slow")
    storage = DuckDBStorage(str(tmp_path / "s.duckdb"))
    recorder = Recorder(storage)
    with upstream, LoopbackServer(proxy_app(recorder, upstream.url + "/v1")) as server:
        seen = []
        for c in _client(server).chat.completions.create(model="slow", messages=USER,  # type: ignore[arg-type]
                                                          stream=True):
            seen.append(c.choices[0].delta.content)
            got_first.set()
    recorder.close()
    assert waited == [True] and "".join(s or "" for s in seen) == "first second"
    [run] = storage.runs.list_runs()
    assert load_run(storage, run.run_id).answer == "first second"
    storage.close()


def test_concurrent_exchanges_are_all_recorded_by_the_one_writer(setup) -> None:  # type: ignore[no-untyped-def]
    from concurrent.futures import ThreadPoolExecutor

    fp, server, recorder, db = setup
    client = _client(server)

    def ask(i: int) -> str:
        msgs = [{"role": "user", "content": f"Note {i}: the code is {1000 + i}. Code?"}]
        if i % 2:
            return "".join(c.choices[0].delta.content or "" for c in
                           client.chat.completions.create(model="fake-model", messages=msgs,  # type: ignore[arg-type]
                                                          temperature=0, stream=True)
                           if c.choices)
        return client.chat.completions.create(model="fake-model", messages=msgs,  # type: ignore[arg-type]
                                              temperature=0).choices[0].message.content or ""

    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(ask, range(8)))
    recorder.drain()
    assert not recorder.failures
    s, run_ids = _runs(db)
    try:
        assert len(run_ids) == 8
        recorded = {load_run(s, r).answer for r in run_ids}
        assert recorded == set(answers)
    finally:
        s.close()


def test_runs_keep_the_proxy_s_times_in_arrival_order_and_where_they_were_sent(setup  # type: ignore[no-untyped-def]
                                                                            ) -> None:
    """A chat completion's ``created`` counts whole seconds on the upstream's clock:
    three turns of a tool loop within one second were listed out of order, and a failed
    call (no answer) had no time at all (1970). The proxy's own times of each exchange
    are the run's; where it was sent is recorded too."""
    fp, server, recorder, db = setup
    client = _client(server)
    for n in range(3):
        client.chat.completions.create(model="fake-model", messages=[  # type: ignore[list-item]
            {"role": "user", "content": f"Question {n}?"}])
    bad = openai.OpenAI(base_url=server.url + "/v1", api_key="sk-wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        bad.chat.completions.create(model="fake-model", messages=USER)  # type: ignore[arg-type]
    recorder.drain()
    s, run_ids = _runs(db)
    try:
        assert run_ids == recorder.runs  # listed as they arrived
        runs = [s.runs.require_run(r) for r in run_ids]
        assert [r.status for r in runs] == ["completed"] * 3 + ["failed"]
        starts = [r.started_at for r in runs]
        assert starts == sorted(starts) and len(set(starts)) == 4 and starts[0].year >= 2026
        origin = fp.base_url.rsplit("/v1", 1)[0]
        assert all(s.runs.get(f"{r}:import")["extra"]["endpoint"] == origin
                   for r in run_ids)
    finally:
        s.close()
