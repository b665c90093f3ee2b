"""Responses API requests that send ``previous_response_id`` instead of their history
(the server holds the earlier turns): the history is reconstructed from the referenced
response when the file has it, and the run says which prompt messages were not sent;
when it does not, the request imports as far as it was recorded, nothing invented."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memory_core.errors import ImportFormatError
from memory_core.importers import import_text
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import Message, ToolCallPart, ToolResultPart

WEATHER = {"type": "function", "name": "get_weather", "description": "Weather of a city",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}


def said(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "assistant",
            "content": [{"type": "output_text", "text": text}]}


# A asks and gets a tool call; B sends only the tool's result; C only a new question
# (and no instructions: the API does not carry them over, so C's prompt has none)
A = {"request": {"model": "gpt-4.1", "instructions": "Be brief", "input": "Weather in Oslo?",
                 "tools": [WEATHER], "store": True, "temperature": 0.2},
     "response": {"id": "resp_a", "object": "response", "created_at": 1767600000,
                  "model": "gpt-4.1-x", "output": [
                      {"type": "function_call", "call_id": "call_1", "name": "get_weather",
                       "arguments": "{\"city\": \"Oslo\"}"}],
                  "usage": {"input_tokens": 30, "output_tokens": 9}}}
B = {"request": {"model": "gpt-4.1", "instructions": "Be brief", "tools": [WEATHER],
                 "previous_response_id": "resp_a", "input": [
                     {"type": "function_call_output", "call_id": "call_1", "output": "Snow"}]},
     "response": {"id": "resp_b", "object": "response", "created_at": 1767600002,
                  "output": [said("Snowing in Oslo.")]}}
C = {"request": {"model": "gpt-4.1", "previous_response_id": "resp_b",
                 "input": "And tomorrow?"},
     "response": {"id": "resp_c", "object": "response", "created_at": 1767600010,
                  "output": [said("Sunny.")]}}


def jsonl(*records: dict[str, Any]) -> str:
    return "\n".join(json.dumps(r) for r in records) + "\n"


def render(m: Message) -> str:
    bits = []
    for p in m.parts:
        if isinstance(p, ToolCallPart):
            bits.append(f"{p.name}#{p.id}")
        elif isinstance(p, ToolResultPart):
            bits.append(f"{p.name}#{p.call_id}={p.result}")
        else:
            bits.append(p.text)
    return f"{m.role}:" + " ".join(bits)


def lanes(st: InMemoryStorage, rid: str) -> list[tuple[str, str, int | None]]:
    return [(i["lane"], i["message"]["role"], i.get("seq"))
            for i in st.runs.get(f"{rid}:prompt")["items"]]


def test_a_chain_of_three_is_one_thread_each_prompt_its_whole_history() -> None:
    st = InMemoryStorage()
    report = import_text(st, jsonl(A, B, C))
    assert len(report.threads_created) == 1
    tid = report.threads_created[0]
    assert [render(m) for m in st.memory.get_messages(tid)] == [
        "user:Weather in Oslo?", "assistant:get_weather#call_1",
        "tool:get_weather#call_1=Snow", "assistant:Snowing in Oslo.",
        "user:And tomorrow?", "assistant:Sunny."]
    assert report.messages_stored == 6  # each message once
    ra, rb, rc = report.runs_created
    assert lanes(st, ra) == [("instructions", "system", None), ("input", "user", None)]
    # B: its own instructions, then what the server held (A's question and call), then
    # the tool result it sent
    assert lanes(st, rb) == [("instructions", "system", None), ("recent", "user", 0),
                             ("recent", "assistant", 1), ("input", "tool", None)]
    # C: no instructions of its own (not inherited), the held history, its question
    assert lanes(st, rc) == [("recent", "user", 0), ("recent", "assistant", 1),
                             ("recent", "tool", 2), ("recent", "assistant", 3),
                             ("input", "user", None)]
    assert [m["content"] for m in st.runs.get(f"{rc}:input")["messages"]] == ["And tomorrow?"]
    held = {rid: st.runs.get(f"{rid}:import")["extra"].get("server_held_history")
            for rid in (ra, rb, rc)}
    assert held == {
        ra: None,
        rb: {"reference": "previous_response_id 'resp_a'", "reconstructed_from": "line 1",
             "prompt_messages": [1, 3], "unrecorded": None},
        rc: {"reference": "previous_response_id 'resp_b'", "reconstructed_from": "line 2",
             "prompt_messages": [0, 4], "unrecorded": None}}
    notes = st.runs.get(f"{rc}:import")["notes"]
    assert notes == ["line 3: history held server-side (previous_response_id 'resp_b') "
                     "reconstructed from line 2: prompt messages 1–4 were not sent with "
                     "this request"]
    # where the history is held is not a sampling parameter; it is kept as sent
    first = st.runs.get(f"{ra}:import")
    assert first["request_params"] == {"temperature": 0.2}
    assert first["extra"]["request_fields"] == {"store": True}
    assert st.runs.get(f"{rc}:import")["extra"]["request_fields"] == {
        "previous_response_id": "resp_b"}
    for rid in (ra, rb, rc):
        assert "history" not in st.runs.get(f"{rid}:memctx")["unknown_fields"]
    # the messages each run first sent or received carry its id
    assert [m.run_id for m in st.memory.get_messages(tid)] == [ra, ra, rb, rb, rc, rc]


def test_a_chain_whose_first_response_is_not_in_the_file() -> None:
    st = InMemoryStorage()
    report = import_text(st, jsonl(B, C))  # A (resp_a) was not recorded
    assert len(report.threads_created) == 1
    tid = report.threads_created[0]
    # what was sent and answered, nothing invented: the tool result's call (and so its
    # tool name) is in the history the server held
    assert [render(m) for m in st.memory.get_messages(tid)] == [
        "tool:#call_1=Snow", "assistant:Snowing in Oslo.", "user:And tomorrow?",
        "assistant:Sunny."]
    rb, rc = report.runs_created
    assert lanes(st, rb) == [("instructions", "system", None), ("input", "tool", None)]
    assert lanes(st, rc) == [("recent", "tool", 0), ("recent", "assistant", 1),
                             ("input", "user", None)]
    b, c = (st.runs.get(f"{rid}:import") for rid in (rb, rc))
    assert b["extra"]["server_held_history"] == {
        "reference": "previous_response_id 'resp_a'", "reconstructed_from": None,
        "prompt_messages": [0, 0], "unrecorded": "previous_response_id 'resp_a'"}
    assert c["extra"]["server_held_history"] == {
        "reference": "previous_response_id 'resp_b'", "reconstructed_from": "line 1",
        "prompt_messages": [0, 2], "unrecorded": "previous_response_id 'resp_a'"}
    assert b["notes"][0] == ("line 1: history held server-side (previous_response_id "
                             "'resp_a') is not in the file: the prompt holds only what "
                             "this request sent")
    assert any("answers tool call 'call_1', made in the history held server-side "
               "(previous_response_id 'resp_a') that is not in the file" in n
               for n in b["notes"])
    assert c["notes"][0].endswith("the history before previous_response_id 'resp_a' is "
                                  "not in the file")
    for rid in (rb, rc):
        assert "history" in st.runs.get(f"{rid}:memctx")["unknown_fields"]
    assert any("is not in the file" in k.reason for k in report.skipped)
    # a request that sent its history has no held history to blame: a result answering
    # no call in it is kept as sent all the same, said so
    sent = {**B, "request": {k: v for k, v in B["request"].items()
                             if k != "previous_response_id"}}
    alone = import_text(InMemoryStorage(), jsonl(sent))
    assert len(alone.runs_created) == 1
    assert any("answers tool call 'call_1', but no earlier assistant message made that "
               "call; the model answered the request all the same" in k.reason
               for k in alone.skipped)


def test_a_conversation_object_is_history_not_in_the_file() -> None:
    # the Conversations API holds the history under a conversation id: not reconstructed
    rec = {"request": {"model": "gpt-4.1", "conversation": {"id": "conv_9"}, "input": [
        {"type": "function_call_output", "call_id": "call_7", "output": "42"}]},
        "response": {"id": "resp_9", "object": "response", "output": [said("It is 42.")]}}
    st = InMemoryStorage()
    report = import_text(st, jsonl(rec))
    assert [render(m) for m in st.memory.get_messages(report.threads_created[0])] == [
        "tool:#call_7=42", "assistant:It is 42."]
    record = st.runs.get(f"{report.runs_created[0]}:import")
    assert record["extra"]["server_held_history"]["unrecorded"] == "conversation 'conv_9'"
    assert record["extra"]["request_fields"] == {"conversation": {"id": "conv_9"}}
    assert record["request_params"] == {}
    assert "history" in st.runs.get(f"{report.runs_created[0]}:memctx")["unknown_fields"]


def test_a_conversation_whose_items_the_file_holds_is_reconstructed() -> None:
    """Azure AI Foundry's agents (and the OpenAI Agents SDK with a conversation id):
    the client creates a conversation with the question, asks for a response naming it
    and an agent (no input, no instructions), adds the next question as an item, asks
    again. Each request was refused ("sends no input … not in the recording"); the
    items the file's Conversations API calls added, and each response's output, are the
    history — one thread — and the agent's instructions the response echoes are said."""
    base = "https://x.services.ai.azure.com/api/projects/p/openai"
    agent = {"name": "MyAgent", "type": "agent_reference"}

    def response(rid: str, text: str) -> dict[str, Any]:
        return {"id": rid, "object": "response", "status": "completed", "model": "gpt-4o",
                "instructions": "Answer general questions.", "output": [said(text)],
                "usage": {"input_tokens": 30, "output_tokens": 9},
                "conversation": {"id": "conv_1"}}

    def user(text: str) -> dict[str, Any]:
        return {"type": "message", "role": "user", "content": text}
    records = [
        {"url": f"{base}/conversations", "request": {"items": [user("Size of France?")]},
         "response": {"id": "conv_1", "object": "conversation"}},
        {"url": f"{base}/responses", "request": {"agent": agent, "conversation": "conv_1"},
         "response": response("resp_1", "About 248,573 square miles.")},
        {"url": f"{base}/conversations/conv_1/items",
         "request": {"items": [user("And its capital?")]},
         "response": {"object": "list", "data": []}},
        {"url": f"{base}/responses", "request": {"agent": agent, "conversation": "conv_1"},
         "response": response("resp_2", "Paris.")}]
    st = InMemoryStorage()
    report = import_text(st, jsonl(*records))
    [tid] = report.threads_created
    assert [render(m) for m in st.memory.get_messages(tid)] == [
        "user:Size of France?", "assistant:About 248,573 square miles.",
        "user:And its capital?", "assistant:Paris."]
    assert len(report.runs_created) == 2
    second = report.runs_created[1]
    prompt = st.runs.get(f"{second}:prompt")["items"]
    assert [(i["lane"], i["message"]["content"]) for i in prompt] == [
        ("instructions", "Answer general questions."), ("recent", "Size of France?"),
        ("recent", "About 248,573 square miles."), ("input", "And its capital?")]
    held = st.runs.get(f"{second}:import")["extra"]["server_held_history"]
    assert held["reconstructed_from"] == "line 1, line 2, line 3" and held["unrecorded"] is None
    notes = st.runs.get(f"{second}:import")["notes"]
    assert "line 4: the instructions were not sent but applied server-side (agent " \
           "'MyAgent'): taken from the response's 'instructions'" in notes
    # and why says so of a phrase of them: not "the client sent this text" (azure-sdk's
    # agent recording, an outside trial)
    from memory_core.analysis.forgotten import why_forgotten

    e = why_forgotten(st, second, "general questions")
    assert (e.fate, e.reached_model) == ("instructions", True)
    assert "The server applied this text as the instructions of this request (those of " \
           "agent 'MyAgent', echoed in its response): the client did not send it" \
           in e.sentence, e.sentence
    # a conversation the file did not create is history not in the file, as before
    report = import_text(InMemoryStorage(), jsonl(records[3]))
    assert report.runs_created and any("is not in the file" in n.reason
                                       for n in report.skipped)
    # items added to a conversation the file did not make, then two responses: each
    # gets what the file holds of it, and its history before that is marked unknown
    # (it read as the whole history)
    st = InMemoryStorage()
    report = import_text(st, jsonl(records[2], records[3], records[3]))
    for rid in report.runs_created:
        held = st.runs.get(f"{rid}:import")["extra"]["server_held_history"]
        assert held["unrecorded"] == "conversation 'conv_1'", held
        assert "history" in st.runs.get(f"{rid}:memctx")["unknown_fields"]
    last = st.runs.get(f"{report.runs_created[1]}:prompt")["items"]
    assert [i["message"]["content"] for i in last if i["lane"] != "instructions"] == [
        "And its capital?", "Paris."]


def test_the_run_inspector_says_which_messages_the_server_held() -> None:
    from pathlib import Path

    from memory_core.analysis import views
    from memory_core.importers import import_file

    st = InMemoryStorage()
    path = (Path(__file__).parent / "fixtures" / "imports" / "real"
            / "msagentframework-test_agent_with_tool_calls.yaml")
    first, second = import_file(st, path).runs_created
    # interaction 1 sent its instructions and question: all of its prompt
    assert views.run_view(st, first).notes[0].endswith(
        "the client sent this one message beside its instructions")
    # interaction 2 sent one tool result; the rest came from interaction 1's record (it
    # read "the client sent these 4 messages")
    note = views.run_view(st, second).notes[0]
    assert "the client sent 1 of these 4 messages; messages 1–3 were held by the server " \
           "(previous_response_id 'resp_0b7fb495" in note
    # (then what the import noted of the call: how its held messages were found)
    assert "reconstructed from interaction 1 of the recording. The import noted: " \
           "interaction 2: history held server-side" in note, note


def test_why_forgotten_tells_held_history_from_what_the_client_sent() -> None:
    from pathlib import Path

    from memory_core.analysis.forgotten import why_forgotten
    from memory_core.importers import import_file

    st = InMemoryStorage()
    path = (Path(__file__).parent / "fixtures" / "imports" / "real"
            / "msagentframework-test_agent_with_tool_calls.yaml")
    first, second = import_file(st, path).runs_created
    thread = st.runs.require_run(second).thread_id
    assert thread is not None
    fates = {m.seq: why_forgotten(st, second, (thread, m.seq))
             for m in st.memory.get_messages(thread)}
    # seq 0: the question interaction 1 sent; seq 1: its tool call; seq 2: the tool
    # result interaction 2 sent itself; seq 3: interaction 2's answer
    held = [q for q, e in fates.items() if e.fate == "held-by-server"]
    assert held == [0, 1] and all(fates[q].reached_model for q in held)
    assert "previous_response_id 'resp_0b7fb495" in fates[0].sentence
    assert "reconstructed from interaction 1" in fates[0].sentence
    assert fates[2].fate == "sent-by-client" and fates[3].fate == "written-after"
    # the request carried the tool result alone: the held messages are not counted as sent
    assert "it is the one message the recorded request carried" in fates[2].sentence
    assert fates[2].evidence["sent"] == 1
    # in the run that sent them, the same messages were the client's
    assert why_forgotten(st, first, (thread, 0)).fate == "sent-by-client"


def test_compare_says_a_message_was_held_by_the_server() -> None:
    from pathlib import Path

    from memory_core.analysis.diff import diff_runs
    from memory_core.importers import import_file

    st = InMemoryStorage()
    path = (Path(__file__).parent / "fixtures" / "imports" / "real"
            / "msagentframework-test_agent_with_tool_calls.yaml")
    first, second = import_file(st, path).runs_created
    d = diff_runs(st, first, second)
    question = next(e for e in d.entries if e.seq == 0)
    # run A sent the question itself; run B referred to it by previous_response_id
    assert question.reason.startswith(
        "run A: sent by the client; run B: held by the server (previous_response_id "
        "'resp_0b7fb495"), question.reason
    result = next(e for e in d.entries if e.seq == 2)
    assert "run B: sent by the client" in result.reason


def test_the_lifeline_agrees_with_why_forgotten_on_imported_runs() -> None:
    from pathlib import Path

    from memory_core.analysis.forgotten import lifeline, why_forgotten
    from memory_core.importers import import_file

    st = InMemoryStorage()
    path = (Path(__file__).parent / "fixtures" / "imports" / "real"
            / "msagentframework-test_agent_with_tool_calls.yaml")
    runs = import_file(st, path).runs_created
    thread = st.runs.require_run(runs[0]).thread_id
    assert thread is not None
    for m in st.memory.get_messages(thread):
        # the lifeline read each run's prompt and provenance only, and so called the
        # question of run 1 "written after" and run 2's held history "sent by the client"
        points = {p.run_id: p.fate for p in lifeline(st, thread, m.seq)}
        assert points == {r: why_forgotten(st, r, (thread, m.seq)).fate for r in runs}
    assert [p.fate for p in lifeline(st, thread, 0)] == ["sent-by-client", "held-by-server"]


@pytest.mark.parametrize("name", ["msagentframework-test_agent_with_tool_calls.yaml",
                                  "logfire-test_responses_api.yaml"])
def test_an_imported_responses_run_replays_identically(name: str) -> None:
    from pathlib import Path

    from memory_core.importers import import_file
    from memory_core.runs.replay import replay

    st = InMemoryStorage()
    runs = import_file(st, Path(__file__).parent / "fixtures" / "imports" / "real" / name
                       ).runs_created
    answered = [r for r in runs if not replay(st, r).ended_on_tool_call]
    # the text answer was stored as a list of one text part, the replay's as text:
    # "stored message 0 … differs from the replayed one"
    assert answered and all(replay(st, r).messages_checked == 1 for r in answered)


# -- a request that sends back an earlier response's output items (by their ids) --------
def _answer(rid: str, text: str, item: str, at: int) -> dict[str, Any]:
    return {"id": rid, "object": "response", "created_at": at, "model": "gpt-5-mini",
            "output": [{"id": f"rs_{item}", "type": "reasoning", "summary": []},
                       {**said(text), "id": f"msg_{item}"}]}


Q1 = {"request": {"model": "gpt-5-mini", "input": "What is 2 + 2?"},
      "response": _answer("resp_1", "4", "one", 1767600000)}


def _followup(sent: list[dict[str, Any]], question: str, rid: str, text: str,
              ) -> dict[str, Any]:
    return {"request": {"model": "gpt-5-mini",
                        "input": [*sent, {"role": "user", "content": question}]},
            "response": _answer(rid, text, rid, 1767600005)}


def test_a_request_sending_back_an_output_item_without_the_first_turn_continues_it() -> None:
    """LiteLLM replays the reasoning item and the answer (with their ids) but not the
    question before them: the request continues that response's thread, its window
    aligned on the answer it sent back (it read as a second thread starting with the
    answer); its prompt is what it sent, nothing of the question added."""
    sent = [{"id": "rs_one", "type": "reasoning", "summary": []},
            {**said("4"), "id": "msg_one"}]
    st = InMemoryStorage()
    report = import_text(st, jsonl(Q1, _followup(sent, "Times 10?", "resp_2", "40")))
    assert len(report.threads_created) == 1
    assert [render(m) for m in st.memory.get_messages(report.threads_created[0])] == [
        "user:What is 2 + 2?", "assistant:4", "user:Times 10?", "assistant:40"]
    assert report.messages_stored == 4
    assert lanes(st, report.runs_created[1]) == [("recent", "assistant", 1),
                                                ("input", "user", None)]


def test_items_sent_back_without_ids_or_after_the_thread_went_on_are_as_before() -> None:
    """The same window without the items' ids is not linked (another thread, as the
    prefix rule has it); a request sending back an answer the thread has since gone on
    from, another way, is a branch: a thread of its own."""
    st = InMemoryStorage()
    bare = _followup([said("4")], "Times 10?", "resp_2", "40")
    assert len(import_text(st, jsonl(Q1, bare)).threads_created) == 2
    st = InMemoryStorage()
    sent = [{"role": "user", "content": "What is 2 + 2?"}, {**said("4"), "id": "msg_one"}]
    first = _followup(sent, "Times 10?", "resp_2", "40")
    # the same answer sent back again with another question, only it in the window
    other = _followup([{**said("4"), "id": "msg_one"}], "Minus 1?", "resp_3", "3")
    report = import_text(st, jsonl(Q1, first, other))
    assert [[render(m) for m in st.memory.get_messages(t)]
            for t in report.threads_created] == [
        ["user:What is 2 + 2?", "assistant:4", "user:Times 10?", "assistant:40"],
        ["assistant:4", "user:Minus 1?", "assistant:3"]]


def test_items_sent_back_link_even_when_previous_response_id_is_not_in_the_file() -> None:
    """A request naming a previous response the file does not hold, but sending back
    items an earlier response of the file output, continues that response's thread
    (the unknown reference made the item link be ignored)."""
    sent = [{**said("4"), "id": "msg_one"}]
    later = _followup(sent, "Times 10?", "resp_2", "40")
    later["request"]["previous_response_id"] = "resp_elsewhere"
    st = InMemoryStorage()
    report = import_text(st, jsonl(Q1, later))
    assert len(report.threads_created) == 1
    assert [render(m) for m in st.memory.get_messages(report.threads_created[0])] == [
        "user:What is 2 + 2?", "assistant:4", "user:Times 10?", "assistant:40"]


def test_reasoning_items_sent_back_are_noted_once_a_request() -> None:
    """A tool loop sends every earlier reasoning item back: the report says each
    request's once, at all its places, not a line an item (lines growing with the
    square of the loop's length); each run's import record keeps them one by one."""
    q2 = _followup([{"role": "user", "content": "What is 2 + 2?"},
                    {"id": "rs_one", "type": "reasoning", "summary": []},
                    {**said("4"), "id": "msg_one"}], "Times 10?", "resp_2", "40")
    q3 = _followup([*q2["request"]["input"], {"id": "rs_resp_2", "type": "reasoning",
                                              "summary": []},
                    {**said("40"), "id": "msg_resp_2"}], "Minus 1?", "resp_3", "39")
    st = InMemoryStorage()
    report = import_text(st, jsonl(Q1, q2, q3))
    reasoning = [(s.where, s.reason) for s in report.skipped if "reasoning" in s.reason]
    assert reasoning == [
        ("line 1", "output[0]: item of type 'reasoning' not imported"),
        ("line 2", "input[1], output[0]: item of type 'reasoning' not imported"),
        ("line 3", "input[1], input[4], output[0]: item of type 'reasoning' not imported")]
    record = st.runs.get(f"{report.runs_created[2]}:import")
    assert isinstance(record, dict)
    assert sum("type 'reasoning' not imported" in n for n in record["notes"]) == 3


def test_a_call_sent_back_under_its_item_id_continues_its_thread() -> None:
    """chatlas and ellmer send a function call back with the call item's id
    (``fc_…``) as its ``call_id`` (the API takes it): read as the call's ``call_id``,
    noted, the tool loop is one thread (it was a new thread a request)."""
    question = {"role": "user", "content": "What's the date?"}
    call = {"id": "fc_1", "type": "function_call", "status": "completed",
            "arguments": "{}", "call_id": "call_9mDD", "name": "get_current_date"}
    tools = [{"type": "function", "name": "get_current_date", "parameters": {}}]
    first = {"request": {"model": "gpt-5.4", "input": [question], "tools": tools},
             "response": {"id": "resp_1", "object": "response", "created_at": 1767600000,
                          "model": "gpt-5.4", "output": [call]}}
    sent = [question, {"type": "function_call", "call_id": "fc_1",
                       "name": "get_current_date", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "fc_1", "output": "2024-01-01"}]
    second = {"request": {"model": "gpt-5.4", "input": sent, "tools": tools},
              "response": {**_answer("resp_2", "2024-01-01", "two", 1767600005),
                           "output": [{**said("2024-01-01"), "id": "msg_two"}]}}
    st = InMemoryStorage()
    report = import_text(st, jsonl(first, second))
    assert len(report.threads_created) == 1
    assert [render(m) for m in st.memory.get_messages(report.threads_created[0])][-1] == \
        "assistant:2024-01-01"
    notes = [n.reason for n in report.skipped if "item an earlier response" in n.reason]
    assert notes == ["input[1], input[2]: call_id 'fc_1' is the id of the call item an "
                     "earlier response output; read as its call_id 'call_9mDD'"]


def test_an_input_item_that_is_no_object_after_a_call_is_one_clear_error() -> None:
    call = {"id": "fc_1", "type": "function_call", "arguments": "{}",
            "call_id": "call_1", "name": "get_current_date"}
    tools = [{"type": "function", "name": "get_current_date", "parameters": {}}]
    first = {"request": {"model": "m", "input": "What's the date?", "tools": tools},
             "response": {"id": "resp_1", "object": "response", "created_at": 1767600000,
                          "model": "m", "output": [call]}}
    second = {"request": {"model": "m", "input": ["What's the date?", 7], "tools": tools},
              "response": _answer("resp_2", "Monday", "two", 1767600005)}
    report = import_text(InMemoryStorage(), jsonl(first, second))  # line 2 left out, noted
    assert [(k.where, k.reason[:50]) for k in report.skipped] == [
        ("line 2", "not imported: input[0]: an item must be an object,")]
    with pytest.raises(ImportFormatError, match="line 1: input\\[0\\]: an item must be an "
                                                "object, got \"What"):
        import_text(InMemoryStorage(), jsonl(second))


def test_a_call_sending_only_its_conversation_is_a_responses_call() -> None:
    """An Azure AI agent's call sends ``{"agent", "conversation"}`` and no input (what
    it continues is held server-side). Four such calls answered 500 (azure-sdk's
    recording) were refused as "a ShareGPT conversation whose request sends no
    'messages'": they are failed Responses calls, and answered, a run."""
    import yaml

    from memory_core.importers import import_text

    def interaction(status: int, body: dict[str, Any]) -> dict[str, Any]:
        return {"request": {"method": "POST",
                            "uri": "https://x.services.ai.azure.com/api/projects/p/openai/"
                                   "responses",
                            "body": json.dumps({"agent": {"name": "helper",
                                                          "type": "agent_reference"},
                                                "conversation": {"id": "conv_1"}})},
                "response": {"status": {"code": status}, "body": {"string": json.dumps(body)}}}

    failed = yaml.safe_dump({"interactions": [
        interaction(500, {"error": {"code": "server_error", "message": "Internal"}})]})
    s = InMemoryStorage()
    [rid] = import_text(s, failed, name="crud.yaml").runs_created
    run = s.runs.require_run(rid)
    assert run.status == "failed" and "Internal" in (run.error or "")
    from memory_core.analysis.views import run_view

    # (it read "the client sent these 0 messages and referred to the rest …")
    assert "the client sent no message and referred to the rest of the conversation by " \
           "conversation 'conv_1'" in run_view(s, rid).notes[0], run_view(s, rid).notes[0]
    answered = yaml.safe_dump({"interactions": [interaction(200, {
        "id": "resp_1", "object": "response", "model": "gpt-4o", "status": "completed",
        "output": [{"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "Done."}]}],
        "usage": {"input_tokens": 30, "output_tokens": 2}})]})
    s = InMemoryStorage()
    report = import_text(s, answered, name="agent.yaml")
    [rid] = report.runs_created
    assert s.runs.get(f"{rid}:step:0")["response"]["text"] == "Done."
    assert any("history held server-side (conversation 'conv_1')" in k.reason
               for k in report.skipped)


def test_a_conversation_the_file_made_empty_holds_no_unknown_history() -> None:
    """azure-sdk's agent recording creates its conversation empty (``POST
    …/conversations``, body ``{}``), then asks: the first call's history was said "held
    server-side … not in the file", and marked unknown, though the file shows there was
    none."""
    from memory_core.importers import import_text

    base = "https://x.services.ai.azure.com/api/projects/p/openai"
    made = {"url": f"{base}/conversations", "request": {},
            "response": {"id": "conv_9", "object": "conversation"}}
    asked = {"url": f"{base}/responses",
             "request": {"conversation": "conv_9", "input": "Capital of France?",
                         "agent": {"name": "helper", "type": "agent_reference"}},
             "response": {"id": "resp_9", "object": "response", "model": "gpt-4o",
                          "instructions": "Answer briefly.",
                          "status": "completed", "output": [
                              {"type": "message", "role": "assistant", "content": [
                                  {"type": "output_text", "text": "Paris."}]}]}}
    st = InMemoryStorage()
    report = import_text(st, "\n".join(json.dumps(r) for r in (made, asked)) + "\n")
    [rid] = report.runs_created
    assert not any("held server-side" in k.reason for k in report.skipped), report.skipped
    assert "history" not in st.runs.get(f"{rid}:memctx")["unknown_fields"]
    # the inspector counts what the client sent apart from what the server applied
    from memory_core.analysis.views import run_view

    assert run_view(st, rid).notes[0].split(". The import noted")[0].endswith(
        "the client sent this one message beside the instructions the server applied "
        "(agent 'helper')"), run_view(st, rid).notes[0]
