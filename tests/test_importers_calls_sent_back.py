"""A request that sends back an earlier answer's tool call (by its id) as another
message — langchaingo's agent rewrites the arguments the model gave — no longer matches
the stored history: its conversation is a thread of its own, and the report says why."""

from __future__ import annotations

import json
from typing import Any

from memory_core.importers import import_text
from memory_core.storage.inmemory import InMemoryStorage

QUESTION = {"role": "user", "content": "When was Go 1.0 released?"}


def _call(arguments: str) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": [{
        "id": "call_xBZmyTROTl3UDnkHo7ViHPJ6", "type": "function",
        "function": {"name": "GoogleSearch", "arguments": arguments}}]}


def _line(messages: list[dict[str, Any]], answer: dict[str, Any]) -> str:
    return json.dumps({"request": {"model": "gpt-4", "messages": messages, "tools": [
        {"type": "function", "function": {"name": "GoogleSearch", "parameters": {}}}]},
                       "response": {"choices": [{"message": answer}]}})


ASKED = '{"__arg1": "Go 1.0 release date"}'
RESULT = {"role": "tool", "tool_call_id": "call_xBZmyTROTl3UDnkHo7ViHPJ6",
          "content": "March 28, 2012"}
DONE = {"role": "assistant", "content": "Go 1.0 was released on March 28, 2012."}


def test_a_call_sent_back_rewritten_starts_a_thread_and_says_why() -> None:
    text = "\n".join([_line([QUESTION], _call(ASKED)),
                      _line([QUESTION, _call("Go 1.0 release date"), RESULT], DONE)])
    report = import_text(InMemoryStorage(), text, name="agent.jsonl")
    assert len(report.threads_created) == 2
    assert [(n.where, n.reason) for n in report.skipped] == [(
        "line 2", "sends back tool call 'call_xBZmyTROTl3UDnkHo7ViHPJ6', recorded at line 1, "
                  "as another message (its arguments differ: recorded "
                  '{"__arg1":"Go 1.0 release date"}, sent "Go 1.0 release date"), so its '
                  "conversation is stored as a new thread")]


def test_a_call_sent_back_as_recorded_continues_its_thread_without_a_note() -> None:
    text = "\n".join([_line([QUESTION], _call(ASKED)),
                      _line([QUESTION, _call(ASKED), RESULT], DONE)])
    report = import_text(InMemoryStorage(), text, name="agent.jsonl")
    assert len(report.threads_created) == 1 and not report.skipped


def test_a_call_written_out_as_text_starts_a_thread_and_says_why() -> None:
    # smolagents sends the model's call back as the assistant's text ("Calling tools:
    # [{'id': 'call_…', …}]") and its result as a user message ("Observation: …")
    written = {"role": "assistant", "content": [{"type": "text", "text": (
        "Calling tools:\n[{'id': 'call_xBZmyTROTl3UDnkHo7ViHPJ6', 'type': 'function', "
        "'function': {'name': 'GoogleSearch', 'arguments': {'query': 'Go 1.0'}}}]")}]}
    observed = {"role": "user", "content": "Observation:\nMarch 28, 2012"}
    text = "\n".join([_line([QUESTION], _call('{"query": "Go 1.0"}')),
                      _line([QUESTION, written, observed], DONE)])
    report = import_text(InMemoryStorage(), text, name="agent.jsonl")
    assert len(report.threads_created) == 2
    assert [(n.where, n.reason) for n in report.skipped] == [(
        "line 2", "sends back tool call 'call_xBZmyTROTl3UDnkHo7ViHPJ6', recorded at line 1, "
                  "written out as an assistant's text instead of the call, so its "
                  "conversation is stored as a new thread")]
    # an assistant text that names no recorded call says nothing of the kind (the
    # branch it is is said as one)
    plain = {"role": "assistant", "content": "I searched for call_unknown_0123456789."}
    report = import_text(InMemoryStorage(), "\n".join([
        _line([QUESTION], _call('{"query": "Go 1.0"}')),
        _line([QUESTION, plain, observed], DONE)]), name="agent.jsonl")
    assert len(report.threads_created) == 2
    assert [n.reason.split(" (recorded")[0] for n in report.skipped] == [
        f"shares its first 1 message(s) with thread {report.threads_created[0]} (the "
        "conversation line 1 began), then message 1 differs"]


def test_calls_sent_back_under_ids_of_the_client_s_own_take_their_answers_ids() -> None:
    """Ruby's raix sends the model's calls back under new UUIDs: the history no longer
    matched the answer and the loop was split in two threads, the question stored
    twice. A call no answer in the file made takes the id of the answer's call of the
    same name and arguments (its result too), noted."""
    asked = {"role": "user", "content": "Weather in Zipolite?"}
    call = {"role": "assistant", "content": None, "tool_calls": [{
        "id": "call_cTCMx", "type": "function",
        "function": {"name": "check_weather", "arguments": '{"location":"Zipolite"}'}}]}
    again = {**call, "tool_calls": [{**call["tool_calls"][0], "id": "5dbfeb20-15d7"}]}
    result = {"role": "tool", "tool_call_id": "5dbfeb20-15d7", "content": "hot and sunny"}

    def line(messages: list[Any], reply: dict[str, Any]) -> str:
        return json.dumps({"request": {"model": "m", "messages": messages},
                           "response": {"choices": [{"message": reply}]}})
    text = "\n".join([line([asked], call), line([asked, again, result], {
        "role": "assistant", "content": "Hot and sunny."})])
    s = InMemoryStorage()
    report = import_text(s, text, name="raix.jsonl")
    [tid] = report.threads_created
    msgs = s.memory.get_messages(tid)
    assert [m.role for m in msgs] == ["user", "assistant", "tool", "assistant"]
    assert msgs[1].tool_calls()[0].id == msgs[2].tool_results()[0].call_id == "call_cTCMx"
    assert [(n.where, n.reason) for n in report.skipped if n.where == "line 2"] == [(
        "line 2", "tool call(s) sent back under ids of the client's own, which no answer "
                  "made, take the ids their answers recorded: 5dbfeb20-15d7 as call_cTCMx")]


def _two_calls(second_args: str = '{"q": "b"}', name: str = "GoogleSearch",
               text: str | None = None) -> dict[str, Any]:
    return {"role": "assistant", "content": text, "tool_calls": [
        {"id": "call_aaaaaaaaaaaa", "type": "function",
         "function": {"name": name, "arguments": '{"q": "a"}'}},
        {"id": "call_bbbbbbbbbbbb", "type": "function",
         "function": {"name": "GoogleSearch", "arguments": second_args}}]}


def test_the_note_says_what_the_client_changed() -> None:
    """Which of the answer's parts the client sent back otherwise: the calls beside the
    one sent back, a tool's name, another call's arguments, or the text."""
    one = dict(_two_calls())
    one["tool_calls"] = one["tool_calls"][:1]
    cases = [(one, "the calls beside it differ: recorded 'call_aaaaaaaaaaaa', "
                   "'call_bbbbbbbbbbbb'; sent 'call_aaaaaaaaaaaa'"),
             (_two_calls(name="Search"), "its tool's name differs: recorded "
                                         "'GoogleSearch', sent 'Search'"),
             (_two_calls('{"q": "c"}'), "the arguments of 'call_bbbbbbbbbbbb' differ: "
                                        'recorded {"q":"b"}, sent {"q":"c"}')]
    for sent, said in cases:
        text = "\n".join([_line([QUESTION], _two_calls()),
                          _line([QUESTION, sent], DONE)])
        report = import_text(InMemoryStorage(), text, name="agent.jsonl")
        assert len(report.threads_created) == 2
        assert [n.reason for n in report.skipped] == [
            "sends back tool call 'call_aaaaaaaaaaaa', recorded at line 1, as another "
            f"message ({said}), so its conversation is stored as a new thread"], said


def test_an_answer_s_call_without_an_id_takes_the_one_it_is_sent_back_under() -> None:
    """A server that gives its calls no id (Gemini): the call is given ours, noted; when
    a later request sends it back under an id of the client's own, that id is the one
    stored, and the note says so (it named ours, which nothing then held)."""
    made = {"role": "assistant", "content": None, "tool_calls": [{
        "type": "function", "function": {"name": "GoogleSearch", "arguments": '{"q": "a"}'}}]}
    sent = {"role": "assistant", "content": None, "tool_calls": [{
        "id": "call_client_0001", "type": "function",
        "function": {"name": "GoogleSearch", "arguments": '{"q": "a"}'}}]}
    result = {"role": "tool", "tool_call_id": "call_client_0001", "content": "found"}
    s = InMemoryStorage()
    report = import_text(s, "\n".join([_line([QUESTION], made),
                                       _line([QUESTION, sent, result], DONE)]))
    assert len(report.threads_created) == 1
    calls = [p.id for m in s.memory.get_messages(report.threads_created[0])
             for p in m.tool_calls()]
    assert calls == ["call_client_0001"]
    assert [(n.where, n.reason) for n in report.skipped] == [(
        "line 1", "response: tool call 0 (GoogleSearch) had no id; line 2 sends it back as "
                  "'call_client_0001', the id it is stored with")]
    note = s.runs.get(f"{report.runs_created[0]}:import")["notes"]
    assert note == ["line 1: response: tool call 0 (GoogleSearch) had no id; line 2 sends it "
                    "back as 'call_client_0001', the id it is stored with"]


def test_every_note_on_an_id_we_gave_names_the_one_the_call_is_stored_with() -> None:
    """Review: an id-less answer recorded twice (a retry) kept "given 'call-…'" on the
    second record; a call first seen in a request's history without its id was never
    renamed in its note."""
    made = {"role": "assistant", "content": None, "tool_calls": [{
        "type": "function", "function": {"name": "GoogleSearch", "arguments": '{"q": "a"}'}}]}
    sent = {**made, "tool_calls": [{**made["tool_calls"][0], "id": "call_client_0001"}]}
    result = {"role": "tool", "tool_call_id": "call_client_0001", "content": "found"}
    said = "had no id; line 3 sends it back as 'call_client_0001', the id it is stored with"
    report = import_text(InMemoryStorage(), "\n".join([
        _line([QUESTION], made), _line([QUESTION], made),
        _line([QUESTION, sent, result], DONE)]))
    assert [n.where for n in report.skipped if n.reason.endswith(said)] == ["line 1", "line 2"]
    # first seen in a request's history, without its id; a later request names it
    more = {"role": "user", "content": "Go on."}
    report = import_text(InMemoryStorage(), "\n".join([
        _line([QUESTION, made, more], DONE),
        _line([QUESTION, sent, more, DONE, {"role": "user", "content": "Thanks."}], DONE)]))
    assert any(n.where == "line 1" and n.reason.endswith(
        "had no id; line 2 sends it back as 'call_client_0001', the id it is stored with")
        for n in report.skipped), report.skipped
    # text recorded in two parts and sent back as one, its calls alike: that answer,
    # sent back as its client rewrites it (one thread), the note showing the split (the
    # same text read alike made the note's search for where they part fail)
    parts = {**sent, "content": [{"type": "text", "text": "Let me"},
                                 {"type": "text", "text": "check."}]}
    report = import_text(InMemoryStorage(), "\n".join([
        _line([QUESTION], parts), _line([QUESTION, {**sent, "content": "Let me check."},
                                         result], DONE)]))
    assert len(report.threads_created) == 1
    assert ["sent back as its client rewrites it (its text in 2 part(s) recorded, 1 sent)"
            in n.reason for n in report.skipped] == [True], report.skipped


def test_the_same_id_less_call_made_twice_names_each_its_own_client_id() -> None:
    """Gemini asked for the same call (no id, same arguments) in two answers, both given
    the same derived id; the client sent them back as two ids of its own. Each answer's
    note listed both ids; it names the one its own call is stored with."""
    made = {"role": "assistant", "content": None, "tool_calls": [{
        "type": "function", "function": {"name": "GoogleSearch", "arguments": "{}"}}]}

    def sent(cid: str) -> list[dict[str, Any]]:
        return [{**made, "tool_calls": [{**made["tool_calls"][0], "id": cid}]},
                {"role": "tool", "tool_call_id": cid, "content": "found"}]
    report = import_text(InMemoryStorage(), "\n".join([
        _line([QUESTION], made), _line([QUESTION, *sent("call_a")], made),
        _line([QUESTION, *sent("call_a"), *sent("call_b")], DONE)]))
    notes = {n.where: n.reason for n in report.skipped if "had no id" in n.reason}
    assert notes["line 1"].endswith("line 2 sends it back as 'call_a', the id it is stored "
                                    "with"), notes
    assert notes["line 2"].endswith("line 3 sends it back as 'call_b', the id it is stored "
                                    "with"), notes


def test_an_answer_sent_back_rewritten_says_where_the_conversations_part() -> None:
    """LlamaIndex's ReAct agent sends the model's JSON action back as "Action Input: {…}":
    the history no longer matches the recorded answer, so the conversation is a new
    thread (as a branch is) — it was split without a word; the note says why and where
    the two texts part."""
    first = {"role": "assistant", "content": 'Thought: go.\nAction Input: {"q": "go"}'}
    sent = {"role": "assistant", "content": "Thought: go.\nAction Input: {'q': 'go'}"}
    observation = {"role": "user", "content": "Observation: 2012"}
    s = InMemoryStorage()
    report = import_text(s, "\n".join([
        _line([QUESTION], first), _line([QUESTION, sent, observation], DONE)]))
    assert len(report.threads_created) == 2
    [note] = [k.reason for k in report.skipped if "sends back the answer" in k.reason]
    assert note == ("sends back the answer line 1 recorded as another message (recorded "
                    "'Thought: go.\\nAction Input: {\"q\": \"go\"}', sent "
                    "\"Thought: go.\\nAction Input: {'q': 'go'}\"), so its "
                    "conversation is stored as a new thread"), note
    _branched(s, report)


def test_a_prefill_sent_back_merged_and_an_answer_sent_back_padded_are_said_right(
        ) -> None:
    """Two notes of an outside trial on boxcars' cassettes: a request ending in the
    client's prefill ("Thought: ") whose answer the client merges into it was said to
    send back "the answer line 1 recorded" — the prefill was sent, not recorded; and an
    answer sent back with a space before it and an observation after quoted both texts
    from their start (they looked the same): they are quoted from where they part."""
    prefill = {"role": "assistant", "content": "Thought: "}
    answer = {"role": "assistant", "content": "This is general knowledge."}
    merged = {"role": "assistant", "content": "Thought:  This is general knowledge."}
    observation = {"role": "user", "content": "Observation: 2012"}
    report = import_text(InMemoryStorage(), "\n".join([
        _line([QUESTION, prefill], answer), _line([QUESTION, merged, observation], DONE)]))
    [note] = [k.reason for k in report.skipped if "sends back" in k.reason]
    assert note.startswith("sends back message 1 (assistant), which line 1 sent, as another "
                           "message (recorded 'Thought:', sent 'Thought:  This is"), note
    said = "<thought>" + "Pi squared is needed here, so compute it. " * 8 + "</thought>"
    recorded = {"role": "assistant", "content": said}
    padded = {"role": "assistant",
              "content": f" {said}\n\n<observation>9.8696044</observation>"}
    report = import_text(InMemoryStorage(), "\n".join([
        _line([QUESTION], recorded), _line([QUESTION, padded, observation], DONE)]))
    [note] = [k.reason for k in report.skipped if "sends back" in k.reason]
    assert "(recorded …'ere, so compute it. </thought>', sent …'ere, so compute it. " \
           "</thought>\\n\\n<observation>9.8696044</observation>')" in note, note


def test_a_number_given_to_a_repeated_id_is_one_no_call_has_yet() -> None:
    """Gemini's OpenAI-compatible API names every call by its tool ("read_file") and the
    client (Shopify's roast) sends each back under a UUID of its own. The second answer
    was numbered "read_file-2", which the third request sends back; the third answer,
    numbered again from the id alone, was "read_file-2" too: the fourth request's UUID
    then matched nothing and the conversation split in three, without a word. Each
    number is one no call of the conversation has: one thread, every call its own id."""
    def call(uid: str, path: str) -> dict[str, Any]:
        return {"role": "assistant", "content": None, "tool_calls": [{
            "id": uid, "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps({"path": path})}}]}

    def result(uid: str) -> dict[str, Any]:
        return {"role": "tool", "tool_call_id": uid, "content": f"contents of {uid}"}

    def line(messages: list[Any], reply: dict[str, Any]) -> str:
        return json.dumps({"request": {"model": "gemini-2.5-flash", "messages": messages,
                                       "tools": [{"type": "function", "function": {
                                           "name": "read_file", "parameters": {}}}]},
                           "response": {"choices": [{"message": reply}]}})
    paths = ["a.rb", "b.rb", "c.rb", "d.rb"]
    sent: list[Any] = [{"role": "user", "content": "Read the four files."}]
    lines = []
    for n, path in enumerate(paths):
        lines.append(line(list(sent), call("read_file", path)))
        uid = f"5d1c0de{n}-aaaa-4bbb-8ccc-{n:012d}"
        sent += [call(uid, path), result(uid)]
    lines.append(line(sent, {"role": "assistant", "content": "All four read."}))
    s = InMemoryStorage()
    report = import_text(s, "\n".join(lines), name="roast.jsonl")
    [tid] = report.threads_created
    msgs = s.memory.get_messages(tid)
    ids = [p.id for m in msgs for p in m.tool_calls()]
    assert ids == ["read_file", "read_file-2", "read_file-3", "read_file-4"]
    assert [p.call_id for m in msgs for p in m.tool_results()] == ids
    assert msgs[-1].text() == "All four read."
    assert ("line 3", "a call id given again in the conversation, stored numbered: "
            "'read_file' as 'read_file-3'") in [(n.where, n.reason) for n in report.skipped]


def _branched(storage: InMemoryStorage, report: Any) -> None:
    """The second thread the import created is stored as a branch of the first (the
    Threads page links it)."""
    first, second = report.threads_created
    assert storage.memory.require_thread(second).parent_thread_id == first
    assert storage.memory.require_thread(first).parent_thread_id is None


def test_a_branch_and_a_conversation_under_other_instructions_say_why() -> None:
    """A new thread whose reason no note gave (an outside trial): raix sends the
    question again with a system message instead of the answer it got (a branch);
    AutoGPT sends a whole conversation on under instructions cut short (its last system
    message moved after the history). Each says which conversation it shares, and
    where it parts."""
    asked = {"role": "system", "content": "Maximum tool calls (2) exceeded. Answer now."}
    s = InMemoryStorage()
    report = import_text(s, "\n".join([
        _line([QUESTION], _call(ASKED)), _line([QUESTION, asked], DONE)]))
    assert len(report.threads_created) == 2
    [note] = [(k.where, k.reason) for k in report.skipped]
    assert note == ("line 2", f"shares its first 1 message(s) with thread "
                              f"{report.threads_created[0]} (the conversation line 1 "
                              "began), then message 1 differs (recorded assistant "
                              "'→ GoogleSearch({\"__arg1\":\"Go 1.0 release date\"})', sent "
                              "system 'Maximum tool calls (2) exceeded. Answer now.'): a "
                              "branch of it, stored as a new thread")
    _branched(s, report)

    def line(instructions: list[str], messages: list[Any], answer: str) -> str:
        return json.dumps({"request": {"model": "m", "messages": [
            *({"role": "system", "content": t} for t in instructions), *messages]},
            "response": {"choices": [{"message": {"role": "assistant",
                                                  "content": answer}}]}})
    rules = ["You are Entrepreneur-GPT.", "Respond strictly with JSON."]
    said = {"role": "assistant", "content": '{"command": "write_to_file"}'}
    s = InMemoryStorage()
    report = import_text(s, "\n".join([
        line(rules, [QUESTION], said["content"]),
        line(rules[:1], [QUESTION, said], '{"command": "task_complete"}')]))
    assert len(report.threads_created) == 2
    [note] = [(k.where, k.reason) for k in report.skipped]
    assert note == ("line 2", f"sends the whole of thread {report.threads_created[0]} (the "
                              "conversation line 1 began), its 2 messages, under other "
                              "instructions (recorded 'You are "
                              "Entrepreneur-GPT.\\nRespond strictly with JSON.', sent 'You "
                              "are Entrepreneur-GPT.'), so its conversation is stored as a "
                              "new thread")
    _branched(s, report)


def test_a_branch_of_a_thread_an_earlier_import_stored_says_so() -> None:
    """A live capture imports each exchange on its own: a second session that opens
    alike, then asks something else, branched off the first session's thread without a
    word (an outside trial of `memwb proxy`). It names the thread it shares and where
    it parts."""
    s = InMemoryStorage()
    follow = {"role": "user", "content": "And when was Go 1.1 released?"}
    other = {"role": "user", "content": "Who designed Go?"}
    first = import_text(s, _line([QUESTION], DONE), name="proxy:1")
    import_text(s, _line([QUESTION, DONE, follow], DONE), name="proxy:2")
    report = import_text(s, _line([QUESTION, DONE, other], DONE), name="proxy:3")
    [tid] = first.threads_created
    assert report.threads_created and report.threads_created[0] != tid
    assert [n.reason for n in report.skipped] == [
        f"shares its first 2 message(s) with thread {tid} (an earlier import's), then "
        "message 2 differs (user: recorded 'And when was Go 1.1 released?', sent 'Who "
        "designed Go?'): a branch of it, stored as a new thread"]
    assert s.memory.require_thread(report.threads_created[0]).parent_thread_id == tid


def test_an_answer_of_whitespace_alone_is_quoted_as_recorded() -> None:
    """chatlas sends an answer of "\\n" back as "[empty string]": the note said
    "recorded ''" — the recorded text stripped of what it was made of."""
    s = InMemoryStorage()
    report = import_text(s, "\n".join([
        _line([QUESTION], {"role": "assistant", "content": "\n"}),
        _line([QUESTION, {"role": "assistant", "content": "[empty string]"},
               {"role": "user", "content": "And now?"}], DONE)]))
    [note] = [k.reason for k in report.skipped if "sends back the answer" in k.reason]
    assert "(recorded '\\n', sent '[empty string]')" in note, note


def test_arguments_encoded_twice_are_kept_as_sent() -> None:
    """An outside trial (Arize Phoenix's cassette): a request sent a call's arguments
    as a JSON string of a JSON object, ``"\\"{…}\\""``. Decoded once they were stored as
    the object's text, without the quotes the model was shown, and nothing said so."""
    from memory_core.models.openai_codec import to_openai_messages

    twice = json.dumps('{\n    "city": "San Francisco"\n}')
    s = InMemoryStorage()
    report = import_text(s, "\n".join([
        _line([QUESTION], _call(twice)),
        _line([QUESTION, _call(twice), RESULT], {"role": "assistant", "content": "2012."}),
        _line([QUESTION, _call(ASKED), RESULT], {"role": "assistant", "content": "2012."})]),
        name="twice.jsonl")
    first = s.memory.get_messages(report.threads_created[0])[1].as_message()
    assert first.tool_calls()[0].args == twice  # the text as sent, quotes and all
    assert to_openai_messages([first])[0]["tool_calls"][0]["function"]["arguments"] == twice
    # sent back alike, the call continues its thread
    assert len(s.memory.get_messages(report.threads_created[0])) == 4
    # arguments encoded once are read as the object they are
    other = s.memory.get_messages(report.threads_created[1])[1].as_message()
    assert other.tool_calls()[0].args == {"__arg1": "Go 1.0 release date"}


def _numbered(name: str, question: str) -> str:
    """A text-generation-inference answer: its call numbered 0, its arguments an
    object."""
    return json.dumps({"request": {"model": "tgi", "messages": [
        {"role": "user", "content": question}], "tools": [
        {"type": "function", "function": {"name": n, "parameters": {}}}
        for n in ("weather", "forecast")]},
        "response": {"choices": [{"message": {"role": "assistant", "content": None,
                                              "tool_calls": [{"id": 0, "type": "function",
                                                              "function": {
                                                                  "name": name,
                                                                  "arguments": {"days": 3}}}]}}]}})


def test_an_answer_reusing_an_earlier_answer_s_call_id_sends_nothing_back() -> None:
    """huggingface_hub's TGI cassette: each answer's call is numbered 0. The number was
    refused ("id must be a string, got 0", the whole file); as text, the second answer's
    call was said to be the first's "sent back as another message": its own answer sends
    nothing back."""
    report = import_text(InMemoryStorage(), "\n".join([
        _numbered("forecast", "Weather in Oslo?"),
        _numbered("weather", "Weather in Paris?")]), name="tgi.jsonl")
    assert len(report.runs_created) == 2
    reasons = [n.reason for n in report.skipped]
    assert reasons == ["response: tool call 0 (forecast) has the number 0 as its id; kept "
                       "as the text '0'",
                       "response: tool call 0 (weather) has the number 0 as its id; kept "
                       "as the text '0'"], reasons


def test_a_result_sent_back_under_a_numbered_id_answers_its_call() -> None:
    s = InMemoryStorage()
    call = {"role": "assistant", "content": None, "tool_calls": [
        {"id": 0, "type": "function", "function": {"name": "weather", "arguments": "{}"}}]}
    text = "\n".join([
        _line([QUESTION], {**call, "tool_calls": [{**call["tool_calls"][0], "function": {
            "name": "GoogleSearch", "arguments": "{}"}}]}),
        _line([QUESTION, {**call, "tool_calls": [{**call["tool_calls"][0], "function": {
            "name": "GoogleSearch", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": 0, "content": "March 28, 2012"}], DONE)])
    report = import_text(s, text, name="agent.jsonl")
    [thread] = report.threads_created
    msgs = [m.as_message() for m in s.memory.get_messages(thread)]
    assert [r.call_id for r in msgs[2].tool_results()] == [msgs[1].tool_calls()[0].id] == ["0"]
    assert any("tool_call_id is the number 0; kept as the text '0'" in n.reason
               for n in report.skipped)
    # a value that is no number nor text is still refused, naming it (that record
    # alone: the other is imported)
    bad = text.replace('"tool_call_id": 0', '"tool_call_id": true')
    report = import_text(InMemoryStorage(), bad, name="bad.jsonl")
    assert len(report.runs_created) == 1
    assert any("tool_call_id must be a string, got True" in n.reason
               for n in report.skipped), report.skipped


def test_calls_sent_back_alike_in_another_text_continue_their_thread() -> None:
    """crewAI sends Bedrock's answer back as its calls alone, the text before them
    dropped: the same calls under the ids the provider gave them are that answer, sent
    back as the client rewrites it — one thread (it was two), the answer stored as
    recorded, and the request's prompt holding what it sent. Text added works alike."""
    for recorded, sent in ((_two_calls(text="Searching both."), _two_calls()),
                           (_two_calls(), _two_calls(text="Searching."))):
        text = "\n".join([_line([QUESTION], recorded), _line([QUESTION, sent], DONE)])
        s = InMemoryStorage()
        report = import_text(s, text, name="agent.jsonl")
        (tid,) = report.threads_created
        stored = s.memory.get_messages(tid)
        assert [m.role for m in stored] == ["user", "assistant", "assistant"]
        assert (stored[1].text() or "") == (recorded["content"] or "")
        (note,) = [n.reason for n in report.skipped]
        assert note.startswith("message 1 (assistant) is the answer line 1 recorded, sent "
                               "back as its client rewrites it"), note
        second = report.runs_created[1]
        given = s.runs.get(f"{second}:prompt")["items"][1]["message"]
        assert (given["content"] if isinstance(given["content"], str) else "".join(
            p.get("text", "") for p in given["content"] if p.get("type") == "text")) \
            == (sent["content"] or "")


def test_calls_sent_back_with_other_arguments_or_numbered_ids_stay_apart() -> None:
    """Only the same calls under ids the provider gave are the answer: other arguments,
    or ids a reader numbered (which repeat across answers), leave the conversations
    apart, as before."""
    text = "\n".join([_line([QUESTION], _two_calls(text="Searching.")),
                      _line([QUESTION, _two_calls('{"q": "c"}')], DONE)])
    assert len(import_text(InMemoryStorage(), text, name="a.jsonl").threads_created) == 2
    idless = [_two_calls(text="Searching."), _two_calls()]
    for m in idless:
        for c in m["tool_calls"]:
            del c["id"]
    text = "\n".join([_line([QUESTION], idless[0]), _line([QUESTION, idless[1]], DONE)])
    assert len(import_text(InMemoryStorage(), text, name="b.jsonl").threads_created) == 2
    # an id two answers gave (a server numbering each answer's calls) names neither
    other = {"role": "user", "content": "And Go 1.1?"}
    text = "\n".join([_line([QUESTION], _two_calls(text="Searching.")),
                      _line([other], _two_calls(text="Looking.")),
                      _line([QUESTION, _two_calls()], DONE)])
    report = import_text(InMemoryStorage(), text, name="c.jsonl")
    assert not [n for n in report.skipped if "rewrites it" in n.reason], report.skipped


def test_a_call_sent_back_after_another_history_is_a_branch_and_says_so() -> None:
    """An outside trial (llm.rb's cassettes): the next request sends the answer's call
    back as it was, with its result, but its first two messages in another order. It
    was a thread of its own without a word, holding a call no run of it made; it is
    a branch of the conversation that made the call now, and says why it is apart."""
    bot = {"role": "user", "content": "You are a bot that can search."}
    cases = ((bot, QUESTION), "the messages before it in another order than that "
                              "conversation's"), \
        (({"role": "user", "content": "Hello."}, bot),
         "other messages before it than that conversation's, from the first on")
    for (first, second), said in cases:
        s = InMemoryStorage()
        report = import_text(s, "\n".join([
            _line([QUESTION, bot], _call(ASKED)),
            _line([first, second, _call(ASKED), RESULT], DONE)]), name="agent.jsonl")
        one, two = report.threads_created
        assert [(k.where, k.reason) for k in report.skipped] == [(
            "line 2", "sends back tool call 'call_xBZmyTROTl3UDnkHo7ViHPJ6', recorded at "
                      f"line 1 (thread {one}), after {said}, so its conversation is stored "
                      "as a new thread, a branch of that one")]
        _branched(s, report)
    # the same messages before it, or a beginning shared: a branch after the call or
    # before it (SWE-agent elides older results), said where it parts as before
    for first, sent in (([QUESTION], [QUESTION, _call(ASKED), {**RESULT, "content": "2012"}]),
                        ([QUESTION, bot], [QUESTION, {**bot, "content": "Be brief."},
                                           _call(ASKED), RESULT])):
        report = import_text(InMemoryStorage(), "\n".join([
            _line(first, _call(ASKED)), _line([*first, _call(ASKED), RESULT], DONE),
            _line(sent, DONE)]))
        assert [k.reason[:12] for k in report.skipped] == ["shares its f"], report.skipped
