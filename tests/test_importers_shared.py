"""A recorded request repeats its history: while a file is parsed, identical raw
messages are parsed once and shared between exchanges (``SharedMessages``). Sharing
must change nothing that is stored: tool names resolve per request, and ids a later
request spells out reach only the thread (and the run) that stored the message."""

from __future__ import annotations

import json
from typing import Any

from memory_core.importers import import_text
from memory_core.importers.containers import parse_openai
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import ToolCallPart, ToolResultPart


def rec(messages: list[dict[str, Any]], reply: dict[str, Any], **meta: str
        ) -> dict[str, Any]:
    out: dict[str, Any] = {"request": {"model": "m", "messages": messages},
                           "response": {"choices": [{"message": reply}]}}
    if meta:
        out["metadata"] = meta
    return out


def jsonl(records: list[dict[str, Any]]) -> str:
    return "\n".join(json.dumps(r) for r in records)


SYSTEM = {"role": "system", "content": "You help."}


def test_repeated_history_is_parsed_once() -> None:
    user = {"role": "user", "content": "hello"}
    first = {"role": "assistant", "content": "hi"}
    again = {"role": "user", "content": "and?"}
    parsed = parse_openai(jsonl([rec([SYSTEM, user], first),
                                 rec([SYSTEM, user, first, again], {"role": "assistant",
                                                                    "content": "so"})]))
    a, b = parsed.exchanges
    assert a.instructions[0] is b.instructions[0]
    assert a.history[0] is b.history[0]
    # the response is parsed from the response body, the history copy from the request
    assert b.history[1].text() == "hi" and b.history[2].text() == "and?"


def test_a_shared_tool_result_is_named_by_each_request_s_own_call() -> None:
    """The same raw tool message answers a call named differently in two conversations:
    each stored result carries the name of its own call."""
    result = {"role": "tool", "tool_call_id": "call_1", "content": "ok"}
    done = {"role": "assistant", "content": "done"}

    def conv(question: str, tool: str) -> dict[str, Any]:
        call = {"role": "assistant", "content": None, "tool_calls": [{
            "id": "call_1", "type": "function", "function": {"name": tool,
                                                             "arguments": "{}"}}]}
        return rec([SYSTEM, {"role": "user", "content": question}, call, result], done)

    st = InMemoryStorage()
    report = import_text(st, jsonl([conv("find it", "lookup"), conv("search it", "search")]))
    names = []
    for tid in report.threads_created:
        parts = [p for m in st.memory.get_messages(tid) if isinstance(m.content, list)
                 for p in m.content if isinstance(p, ToolResultPart)]
        names += [p.name for p in parts]
    assert sorted(names) == ["lookup", "search"]


def test_ids_a_later_request_spells_out_reach_only_their_own_thread() -> None:
    """Two conversations get the same answer (a tool call recorded without an id, so
    its id is derived from its content) and send it back with ids of their own: each
    thread adopts its own id, and each run's recorded answer shows it. (Such a message
    carries a note naming its record, so it is parsed per request, not shared.)"""
    call = {"role": "assistant", "content": None, "tool_calls": [{
        "type": "function", "function": {"name": "weather",
                                         "arguments": '{"city": "Paris"}'}}]}

    def conv(question: str, cid: str, result: str) -> list[dict[str, Any]]:
        user = {"role": "user", "content": question}
        sent = {**call, "tool_calls": [{**call["tool_calls"][0], "id": cid}]}
        return [rec([SYSTEM, user], call),
                rec([SYSTEM, user, sent, {"role": "tool", "tool_call_id": cid,
                                          "content": result}],
                    {"role": "assistant", "content": f"It is {result}."})]

    st = InMemoryStorage()
    report = import_text(st, jsonl(conv("Weather in Paris?", "call_X", "sunny")
                                   + conv("Paris weather, please", "call_Y", "rainy")))
    assert len(report.threads_created) == 2
    ids = {}
    for tid in report.threads_created:
        msgs = st.memory.get_messages(tid)
        calls = [p.id for m in msgs if isinstance(m.content, list) for p in m.content
                 if isinstance(p, ToolCallPart)]
        results = [p.call_id for m in msgs if isinstance(m.content, list)
                   for p in m.content if isinstance(p, ToolResultPart)]
        assert calls == results and len(calls) == 1
        ids[msgs[0].text()] = calls[0]
    assert ids == {"Weather in Paris?": "call_X", "Paris weather, please": "call_Y"}
    # the first run of each conversation answered with the call its thread stores
    answered = [st.runs.get(f"{rid}:step:0")["response"]["tool_calls"]
                for rid in report.runs_created]
    assert [c[0]["id"] for c in answered if c] == ["call_X", "call_Y"]


def test_a_name_a_later_request_gives_reaches_only_its_own_thread() -> None:
    """Two conversations open with the same message (one shared object while parsing);
    a later request of one of them sends it with the speaker's ``name``: that thread's
    message takes the name, the other's stays as recorded."""
    hello = {"role": "user", "content": "hello"}

    def conv(answer: str, name: str | None) -> list[dict[str, Any]]:
        reply = {"role": "assistant", "content": answer}
        sent = {**hello, "name": name} if name else hello
        return [rec([SYSTEM, hello], reply),
                rec([SYSTEM, sent, reply, {"role": "user", "content": "more"}],
                    {"role": "assistant", "content": answer + " again"})]

    st = InMemoryStorage()
    report = import_text(st, jsonl(conv("hi Ann", "ann") + conv("hi there", None)))
    assert len(report.threads_created) == 2
    first = {st.memory.get_messages(t)[1].text(): st.memory.get_messages(t)[0].metadata
             for t in report.threads_created}
    assert first == {"hi Ann": {"name": "ann"}, "hi there": {}}
