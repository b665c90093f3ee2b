"""memwb proxy (issue 34.1): an upstream that repeats a tool call's whole name in every
streamed chunk (OpenRouter, for one) is relayed as it is and recorded with the name
once, so the client's next request continues the same thread; a name no tool offered
is recorded as sent, with an import note. The upstream replays the hand-written
OpenRouter-style cassettes of the import corpus (tests/fixtures/imports/real/README.md)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
import yaml

from memory_core.capture import LoopbackServer, Recorder, proxy_app
from memory_core.storage.inmemory import InMemoryStorage
from tests.capture.test_proxy_hardening import Upstream

REAL = Path(__file__).parents[1] / "fixtures" / "imports" / "real"
KEY = "sk-or-v1-0123456789abcdef0123456789abcdef"


@pytest.fixture
def proxy() -> Iterator[tuple[Upstream, str, Recorder, InMemoryStorage]]:
    up = Upstream()
    storage = InMemoryStorage()
    recorder = Recorder(storage)
    with up.server, LoopbackServer(proxy_app(recorder, up.server.url + "/v1")) as server:
        yield up, server.url, recorder, storage
    recorder.close()


def _replay(name: str, up: Upstream, url: str, recorder: Recorder) -> None:
    """Each interaction of the cassette: its request sent through the proxy, its
    recorded stream the upstream's answer, relayed byte for byte."""
    cassette: dict[str, Any] = yaml.safe_load((REAL / name).read_text(encoding="utf-8"))
    for interaction in cassette["interactions"]:
        body = interaction["response"]["body"]["string"].encode()
        up.replies.append((200, "text/event-stream", body))
        resp = httpx2.post(url + "/v1/chat/completions", timeout=30,
                           content=interaction["request"]["body"].encode(),
                           headers={"Authorization": f"Bearer {KEY}",
                                    "Content-Type": "application/json"})
        assert resp.status_code == 200 and resp.content == body
    recorder.drain()
    assert not recorder.failures


def _calls(storage: InMemoryStorage) -> list[tuple[str, str]]:
    [thread] = storage.memory.list_threads()  # the second exchange continued the first
    return [(p.id, p.name) for m in storage.memory.get_messages(thread.id)
            for p in m.tool_calls()]


def test_a_name_repeated_in_every_chunk_is_recorded_once(proxy, caplog) -> None:  # type: ignore[no-untyped-def]
    up, url, recorder, storage = proxy
    with caplog.at_level(logging.INFO, logger="memory_core.capture"):
        _replay("openrouter-imitation-tool_name_repeated_streaming.yaml", up, url, recorder)
    assert _calls(storage) == [("functions.get_weather:0", "get_weather"),
                               ("functions.get_time:1", "get_time")]
    assert len(recorder.runs) == 2
    step = storage.runs.get(f"{recorder.runs[0]}:step:0")
    assert [c["name"] for c in step["response"]["tool_calls"]] == ["get_weather", "get_time"]
    # the repair is said where the proxy says what it noticed in a stream
    said = " ".join(r.getMessage() for r in caplog.records)
    assert "sent its whole name 'get_weather' in 3 chunks: kept once" in said


def test_a_name_no_tool_offered_is_recorded_as_sent_and_noted(proxy) -> None:  # type: ignore[no-untyped-def]
    up, url, recorder, storage = proxy
    _replay("openrouter-imitation-tool_name_not_offered_streaming.yaml", up, url, recorder)
    assert _calls(storage) == [("functions.get_wether:0", "get_wether")]
    notes = storage.runs.get(f"{recorder.runs[0]}:import")["notes"]
    assert any("names 'get_wether', a tool the request did not offer (offered: "
               "get_weather); kept as recorded" in n for n in notes), notes
