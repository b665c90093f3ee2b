"""Issue 34.1: a streamed tool call is not corrupted without a word. Some
OpenAI-compatible servers (OpenRouter, for one) repeat a call's whole name in every
chunk of a stream; joined by concatenation it named ``get_weatherget_weather``, a tool
nobody offered, and the conversation split in two. Streams are reassembled as the
OpenAI SDK's accumulator does, but a name repeated whole is kept once (a name split
over chunks is still joined), and every answer's tool call is checked against the
tools its request offered: a call naming none is kept as recorded and noted, and only a
name that is k copies of an offered one is repaired (noted too)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memory_core.errors import ImportFormatError, InvalidInputError
from memory_core.importers import import_file, import_text
from memory_core.storage.inmemory import InMemoryStorage
from tests.test_importers_golden import CORPUS, corpus

REAL = Path(__file__).parent / "fixtures" / "imports" / "real"
REPEATED = REAL / "openrouter-imitation-tool_name_repeated_streaming.yaml"
NOT_OFFERED = REAL / "openrouter-imitation-tool_name_not_offered_streaming.yaml"
WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}}}}
ASK = {"role": "user", "content": "Weather in Oslo?"}


def _calls(s: InMemoryStorage, thread: str) -> list[tuple[str, str]]:
    return [(p.id, p.name) for m in s.memory.get_messages(thread) for p in m.tool_calls()]


def _journal(s: InMemoryStorage, key: str) -> dict[str, Any]:
    value = s.runs.get(key)
    assert isinstance(value, dict), key
    return value


def _notes(s: InMemoryStorage, run_id: str) -> list[str]:
    notes: list[str] = _journal(s, f"{run_id}:import")["notes"]
    return notes


def _sse(*deltas: dict[str, Any], finish: str = "tool_calls") -> str:
    """A chat-completions stream whose chunks carry these tool-call deltas."""
    chunks = [{"id": "c1", "model": "m", "object": "chat.completion.chunk", "created": 1767268800,
               "choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [d]},
                            "finish_reason": None}]} for d in deltas]
    chunks.append({"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"


def _record(messages: list[dict[str, Any]], response: Any,
            tools: list[dict[str, Any]] | None = None) -> str:
    return json.dumps({"request": {"model": "m", "messages": messages,
                                   "tools": [WEATHER] if tools is None else tools},
                       "response": response})


def _call(name: str, cid: str = "call_1") -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": [{
        "id": cid, "type": "function",
        "function": {"name": name, "arguments": "{\"city\": \"Oslo\"}"}}]}


def test_a_name_repeated_in_every_chunk_is_kept_once_and_the_thread_goes_on() -> None:
    s = InMemoryStorage()
    report = import_file(s, REPEATED)
    [thread] = report.threads_created  # the next request, naming the tools once, continues it
    assert _calls(s, thread) == [("functions.get_weather:0", "get_weather"),
                                 ("functions.get_time:1", "get_time")]
    notes = _notes(s, report.runs_created[0])
    assert any("whole name 'get_weather' in 3 chunks: kept once" in n for n in notes), notes
    assert not any("did not offer" in n for n in notes)


@pytest.mark.parametrize("deltas", [
    # split over chunks, as OpenAI sends long names: joined
    [{"index": 0, "id": "call_1", "type": "function",
      "function": {"name": "get_", "arguments": ""}},
     {"index": 0, "function": {"name": "weather", "arguments": "{\"city\": "}},
     {"index": 0, "function": {"arguments": "\"Oslo\"}"}}],
    # the name in the first chunk only (OpenAI's usual stream)
    [{"index": 0, "id": "call_1", "type": "function",
      "function": {"name": "get_weather", "arguments": ""}},
     {"index": 0, "function": {"arguments": "{\"city\": \"Oslo\"}"}}],
    # no index: one whole call a chunk (the id says which call a delta adds to)
    [{"id": "call_1", "type": "function",
      "function": {"name": "get_weather", "arguments": "{\"city\": "}},
     {"id": "call_1", "function": {"name": "get_weather", "arguments": "\"Oslo\"}"}}],
])
def test_other_ways_of_streaming_a_name_still_give_it_whole(deltas: list[Any]) -> None:
    s = InMemoryStorage()
    report = import_text(s, _record([ASK], _sse(*deltas)))
    [thread] = report.threads_created
    [msg] = [m for m in s.memory.get_messages(thread) if m.tool_calls()]
    assert [(c.id, c.name, c.args) for c in msg.tool_calls()] == [
        ("call_1", "get_weather", {"city": "Oslo"})]
    assert not any("did not offer" in k.reason or "copies" in k.reason
                   for k in report.skipped), report.skipped


def test_a_client_that_joined_the_repeated_names_still_continues_the_thread() -> None:
    """The OpenAI SDK's own accumulator concatenates names too: a client using it sends
    the joined name back. Both the answer (kept once) and that history (k copies of an
    offered tool: repaired, noted) name ``get_weather``, so it is one thread."""
    repeated = {"index": 0, "id": "call_1", "type": "function",
                "function": {"name": "get_weather", "arguments": ""}}
    first = _record([ASK], _sse(repeated, {**repeated, "function": {
        "name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}))
    second = _record([ASK, _call("get_weatherget_weather"),
                      {"role": "tool", "tool_call_id": "call_1", "content": "2 °C"}],
                     {"choices": [{"message": {"role": "assistant", "content": "2 °C."}}]})
    s = InMemoryStorage()
    report = import_text(s, first + "\n" + second + "\n")
    [thread] = report.threads_created
    assert _calls(s, thread) == [("call_1", "get_weather")]
    assert [m.tool_results()[0].name for m in s.memory.get_messages(thread)
            if m.tool_results()] == ["get_weather"]
    assert any("'get_weatherget_weather', 2 copies of the offered tool 'get_weather'" in n
               and "message 1" in n for n in _notes(s, report.runs_created[1]))


@pytest.mark.parametrize("name, repaired", [
    ("get_weatherget_weatherget_weather", "get_weather"),  # recorded already joined
    ("get_wether", None),  # a typo: no tool offered
    ("get_weatherget_wether", None),  # not k copies of an offered name
    ("get_weather_get_weather", None),
])
def test_an_answer_naming_no_offered_tool_is_noted_and_only_repeats_repaired(
        name: str, repaired: str | None) -> None:
    s = InMemoryStorage()
    report = import_text(s, _record([ASK], {"choices": [{"message": _call(name)}]}))
    [thread] = report.threads_created
    assert _calls(s, thread) == [("call_1", repaired or name)]
    [note] = [n for n in _notes(s, report.runs_created[0]) if "call_1" in n]
    assert name in note
    if repaired:
        assert f"stored as {repaired!r}" in note
    else:
        assert "did not offer (offered: get_weather); kept as recorded" in note


def test_a_name_repeated_in_every_chunk_that_no_tool_has_is_kept_noted_and_one_thread(
        ) -> None:
    s = InMemoryStorage()
    report = import_file(s, NOT_OFFERED)
    [thread] = report.threads_created  # not split: the client sent back what it got
    assert _calls(s, thread) == [("functions.get_wether:0", "get_wether")]
    notes = _notes(s, report.runs_created[0])
    assert ("interaction 1: response: tool call 'functions.get_wether:0' names "
            "'get_wether', a tool the request did not offer (offered: get_weather); kept "
            "as recorded") in notes
    assert any("whole name 'get_wether' in 3 chunks" in n for n in notes)


def test_an_answer_calling_a_tool_of_a_request_that_offered_none_is_noted() -> None:
    s = InMemoryStorage()
    report = import_text(s, _record([ASK], {"choices": [{"message": _call("x")}]}, tools=[]))
    assert any("names 'x', a tool the request did not offer (offered: none)" in k.reason
               for k in report.skipped), report.skipped


# -- the whole corpus ---------------------------------------------------------------------
def _unoffered_calls(name: str) -> list[tuple[str, bool]]:
    """The answers' tool calls of corpus file ``name`` that name a tool their request
    did not offer, each with whether its run's import notes name the call and that
    name (a file the importer refuses, and a run whose offered tools were not recorded,
    have none)."""
    s = InMemoryStorage()
    try:
        report = import_file(s, CORPUS / name)
    except (ImportFormatError, InvalidInputError):
        return []
    out = []
    for rid in report.runs_created:
        step = s.runs.get(f"{rid}:step:0")
        if step is None or "tools" in _journal(s, f"{rid}:memctx")["unknown_fields"]:
            continue
        offered = {t["name"] for t in step["tools"]}
        for call in step["response"]["tool_calls"]:
            if call["name"] not in offered:
                noted = any(f"'{call['id']}'" in n and repr(call["name"]) in n
                            and "did not offer" in n for n in _notes(s, rid))
                out.append((f"run {rid}: call {call['id']!r} names {call['name']!r}, not "
                            f"offered ({sorted(offered)})", noted))
    return out


@pytest.mark.parametrize("name", corpus())
def test_no_imported_call_names_a_tool_its_request_did_not_offer_without_a_note(
        name: str) -> None:
    silent = [what for what, noted in _unoffered_calls(name) if not noted]
    assert not silent, f"{name}: no note says so: {silent}"


def test_the_corpus_walk_meets_a_call_naming_no_offered_tool() -> None:
    """The walk above has a case to check: the corpus holds such a call, noted."""
    found = _unoffered_calls(f"real/{NOT_OFFERED.name}")
    assert [noted for _, noted in found] == [True], found
