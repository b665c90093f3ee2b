"""Why forgotten by phrase looks in every part the model was given (issue 34 point 2):
tool results, tool calls' arguments, the instructions and working memory, not only
message text, and says which part matched. A number the model read in a tool result is
found there (not "never said"), the system prompt's text is the instructions (not an
unrelated message), and a tool result's text the model then repeated is the tool
result's fate (not the answer's "written-after"). Last, every imported run of the import
corpus: each part it was given is found where it was."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memory_core.analysis.fates import GIVEN_FATES
from memory_core.analysis.forgotten import find_by_phrase, lifeline, why_forgotten
from memory_core.analysis.parts import (
    MessagePart,
    conversation,
    given_messages,
    message_parts,
    normalise,
    offered_tools,
    request_parameters,
)
from memory_core.composition.memory import AgentMemory
from memory_core.composition.working_memory import WorkingMemoryConfig
from memory_core.embedding.hashing import HashingEmbedder
from memory_core.errors import ImportFormatError, InvalidInputError
from memory_core.importers import import_file, import_text
from memory_core.journal import load_run
from memory_core.models.base import ModelResponse, Tool, ToolSpec
from memory_core.models.scripted import ScriptedModel
from memory_core.runs.runner import Agent, Runner
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import Message, ToolCallPart
from tests.analysis.conftest import Clock
from tests.test_importers_golden import CORPUS, corpus

EMBED = HashingEmbedder()
INSTRUCTIONS = ("You are Acme's support agent. Refunds above 500 euros need a manager's "
                "sign-off before you promise them.")
RESULT = {"status": "delivered", "total_eur": 89.47, "weight_kg": 3.25,
          "carrier": "Parcelnet", "note": "**left at door** <b>x</b> [track](javascript:x)"}
ANSWER = "Order A-7731 was delivered; its total was 89.47 euros."
RUN = "r-tool"


def support_run() -> InMemoryStorage:
    """Thread t of customer c: two earlier messages (one shares words with the system
    prompt), then run r-tool: the model looks the order up (with the arguments
    ``order_id``, ``include: "shipping history"``), reads the result and answers with
    its total (89.47); the weight (3.25) it read but did not repeat."""
    clock = Clock()
    storage = InMemoryStorage(clock=clock)
    memory = AgentMemory(storage, embed=EMBED, clock=clock, recent_n=4,
                         working_memory=WorkingMemoryConfig(read_only=True))
    storage.memory.create_thread("t", resource_id="c")
    storage.memory.put_working_memory("thread:t", {"preferred_contact": "Signal at noon"})
    memory.append("t", [Message(role="user", content="My manager wants a sign-off on "
                                "refunds, is that a problem?"),
                        Message(role="assistant", content="Not at all.")], "c",
                  created_at=clock())
    model = ScriptedModel([
        ModelResponse(tool_calls=[ToolCallPart(
            id="call-1", name="lookup_order",
            args={"order_id": "A-7731", "include": "shipping history"})]),
        ANSWER])
    lookup = Tool(ToolSpec("lookup_order", "Look an order up.", {
        "type": "object", "properties": {"order_id": {
            "type": "string", "description": "The number printed on the receipt"}}}),
        fn=lambda _args: RESULT)
    agent = Agent(name="support", instructions=INSTRUCTIONS, model=model, tools=[lookup])
    Runner(storage, {"support": agent}, memory=memory, clock=clock).run(
        "support", run_id=RUN, thread_id="t", resource_id="c",
        prompt="Where is my order A-7731?")
    return storage


def _seq(storage: InMemoryStorage, **where: Any) -> int:
    """The seq of the run's stored message with a tool result (``result=True``), a tool
    call (``call=True``) or its answer (``answer=True``)."""
    for m in storage.memory.get_messages("t"):
        if m.run_id != RUN:
            continue
        if (where.get("result") and m.tool_results() or where.get("call") and m.tool_calls()
                or where.get("answer") and m.text() == ANSWER):
            return m.seq
    raise AssertionError(f"no message of {RUN} with {where}")


@pytest.fixture
def support() -> InMemoryStorage:
    return support_run()


def test_a_number_read_in_a_tool_result_reached_the_model(support: InMemoryStorage) -> None:
    # before: "no stored message contains it … it was never said, or it was erased"
    e = why_forgotten(support, RUN, "3.25", embed=EMBED)
    assert e.fate == "earlier-step" and e.reached_model
    assert (e.thread_id, e.seq) == ("t", _seq(support, result=True))
    assert e.evidence["part"] == "tool-result"
    assert e.evidence["tool"] == "lookup_order" and e.evidence["call_id"] == "call-1"
    assert e.sentence.startswith("“3.25” is in the result of tool lookup_order (call call-1)")
    assert "passed back to the model at step 1" in e.sentence
    assert "never said" not in e.sentence
    found = find_by_phrase(support, RUN, "3.25", embed=EMBED)
    assert found.sentence.startswith("“3.25” appears word for word in 1 tool result")
    best = found.best
    assert best is not None and best.part == "tool-result" and best.lane == "step"
    assert '"weight_kg": 3.25' in best.excerpt
    # what was searched counts the prompt's messages apart from those the tool steps
    # added (the run inspector counts the prompt's alone), and names the parts held
    # (its instructions said apart: they are no message of the conversation)
    assert re.search(r"every part of the \d+ messages and the instructions the model was "
                     r"given in this run \(\d+ in its prompt, \d+ added by its tool steps\) "
                     r"\(instructions, "
                     r"text, tool calls, tool results, working memory\)", found.searched), found.searched
    # the words of a JSON result, in any order, find it too
    words = why_forgotten(support, RUN, "Parcelnet delivered", embed=EMBED)
    assert words.evidence["part"] == "tool-result" and words.reached_model
    assert "the closest is the tool result part of t #" in words.sentence


def test_the_tool_message_by_its_ref_reached_the_model(support: InMemoryStorage) -> None:
    # by ref too: the run wrote it, and a later step of the run was given it
    seq = _seq(support, result=True)
    e = why_forgotten(support, RUN, ("t", seq), embed=EMBED)
    assert e.fate == "earlier-step" and e.reached_model and e.evidence["step"] == 1
    assert e.fate in GIVEN_FATES
    (point,) = lifeline(support, "t", seq, embed=EMBED)
    assert point.fate == "earlier-step"
    answer = why_forgotten(support, RUN, ("t", _seq(support, answer=True)), embed=EMBED)
    assert answer.fate == "written-after" and not answer.reached_model


def test_a_tool_result_the_model_repeated_is_not_written_after(
        support: InMemoryStorage) -> None:
    # 89.47 is in the tool result and in the answer, which was written after
    found = find_by_phrase(support, RUN, "89.47", embed=EMBED)
    assert [(m.seq, m.part, m.explanation.fate) for m in found.matches if m.contains] == [
        (_seq(support, result=True), "tool-result", "earlier-step"),
        (_seq(support, answer=True), "text", "written-after")]
    assert found.exact == [("t", _seq(support, result=True)), ("t", _seq(support, answer=True))]
    assert "1 tool result and 1 stored message" in found.sentence
    e = why_forgotten(support, RUN, "89.47", embed=EMBED)
    assert e.fate == "earlier-step" and e.reached_model
    # the answer is named as the run's own, written after: no other place it read it
    answer = f"t:{_seq(support, answer=True)}"
    assert ("t", _seq(support, answer=True)) not in e.other_matches
    assert e.evidence["also_in_this_runs_answer"] == answer
    assert found.answer == [("t", _seq(support, answer=True))]


def test_the_system_prompt_is_the_instructions(support: InMemoryStorage) -> None:
    # before: the earlier user message sharing "manager" and "sign-off" was the answer
    e = why_forgotten(support, RUN, "need a manager's sign-off", embed=EMBED)
    assert e.fate == "instructions" and e.reached_model
    assert e.thread_id is None and e.seq is None
    assert e.evidence["part"] == "instructions" and e.evidence["lane"] == "instructions"
    assert "the instructions (the system prompt)" in e.sentence
    found = find_by_phrase(support, RUN, "need a manager's sign-off", embed=EMBED)
    assert found.exact == []  # no stored message holds it
    assert found.sentence.startswith("“need a manager's sign-off” appears word for word in "
                                     "the instructions")
    # the user message sharing its words is still listed, after it, with its own fate
    assert [(m.thread_id, m.seq) for m in found.matches][:2] == [(None, None), ("t", 0)]


def test_tool_call_arguments_and_working_memory(support: InMemoryStorage) -> None:
    e = why_forgotten(support, RUN, "shipping history", embed=EMBED)
    assert e.evidence["part"] == "tool-call-arguments" and e.evidence["tool"] == "lookup_order"
    assert (e.thread_id, e.seq, e.fate) == ("t", _seq(support, call=True), "earlier-step")
    assert "the arguments of the call to tool lookup_order (call call-1)" in e.sentence
    assert "its own call to tool lookup_order" in e.sentence
    wm = why_forgotten(support, RUN, "signal at noon", embed=EMBED)
    assert (wm.fate, wm.evidence["part"], wm.reached_model) == (
        "working-memory", "working-memory", True)


def test_arguments_are_found_by_their_members_in_the_order_recorded() -> None:
    """An outside trial (openllmetry-js's AI SDK recording): the request sent
    ``{"operation":"add","a":5,"b":3}``; the store keeps the members sorted, so the
    phrase as recorded was "in no stored message word for word"."""
    call = Message(role="assistant", content=[ToolCallPart(
        id="c1", name="calculate", args={"a": 5, "b": 3, "operation": "add",
                                         "opts": {"Round": True, "to": "Int"}})])
    args = next(p for p in message_parts(call) if p.part == "tool-call-arguments")
    for phrase in ('"operation":"add","a":5', '{"b": 3, "operation": "ADD"}',
                   '"to": "int", "round": true'):  # (a member of an object inside)
        assert args.holds(normalise(phrase)), phrase
    for phrase in ('"operation":"add","a":6', '"operation":"add","c":5', 'operation add',
                   '"a":"5"', '[1, 2]'):
        assert not args.holds(normalise(phrase)), phrase
    s = InMemoryStorage()
    line = {"request": {"model": "gpt-4o", "messages": [
        {"role": "user", "content": "What is 5 + 3?"}], "tools": [{"type": "function",
            "function": {"name": "calculate", "parameters": {}}}]},
        "response": {"choices": [{"message": {"role": "assistant", "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {
                "name": "calculate",
                "arguments": '{"operation":"add","a":5,"b":3}'}}]}}]}}
    report = import_text(s, json.dumps(line), name="calc.jsonl")
    e = why_forgotten(s, report.runs_created[0], '"operation":"add","a":5')
    assert e.evidence["part"] == "tool-call-arguments" and "matched" not in e.evidence


def test_arguments_are_found_by_members_cut_short_mid_value() -> None:
    """Outside trials (magentic's Mistral cassette): a phrase copied out of recorded
    arguments ends mid-value — ``"quote":"It does not do to dwell`` — and was "in no
    stored message word for word"; its last member is now compared by the beginning of
    its text, the others whole."""
    call = Message(role="assistant", content=[ToolCallPart(
        id="c1", name="return_quote", args={"quote": "May the Force be with you.",
                                            "character": "Obi-Wan Kenobi", "n": 3})])
    args = next(p for p in message_parts(call) if p.part == "tool-call-arguments")
    for phrase in ('{"quote": "May the Force', '"character":"Obi-Wan Kenobi","quote":"may',
                   '"quote": "May the Force be with you."'):
        assert args.holds(normalise(phrase)), phrase
    for phrase in ('{"quote": "the Force', '"character":"Obi-Wan","quote":"May',
                   '"n": "3', '"nobody": "May'):
        assert not args.holds(normalise(phrase)), phrase


def test_arguments_are_found_from_inside_a_value_to_a_key_and_inside_lists() -> None:
    """A trial's phrases copied from recorded arguments, or from memwb's own display of
    them, crossing two members: starting inside one value (``Kenobi","quote":"May``),
    ending on a key (``"character":"Obi-Wan Kenobi","quote"``); and members of objects
    inside a list of arguments (nemotron's ``[[{"bbox": {"xmin": …, "ymin": …}}]]``).
    Each was "in no stored message word for word"."""
    call = Message(role="assistant", content=[
        ToolCallPart(id="c1", name="return_quote", args={
            "quote": "May the Force be with you.", "character": "Obi-Wan Kenobi"}),
        ToolCallPart(id="c2", name="markdown_bbox", args=[[{"bbox": {
            "xmin": 0.1558, "ymin": 0.08, "xmax": 0.84}, "text": "# PaSa"}]])])
    quote, bbox = (p for p in message_parts(call) if p.part == "tool-call-arguments")
    for phrase in ('"May the Force be with you.", "character": "Obi-Wan Kenobi"',
                   'Kenobi","quote":"May', '"character":"Obi-Wan Kenobi","quote"',
                   'Force be with you.", "character": "Obi-Wan Kenobi",'):
        assert quote.holds(normalise(phrase)), phrase
    for phrase in ('Vader","quote":"May', '"character":"Albus Dumbledore","quote"',
                   '"character":"Obi-Wan Kenobi","name"', 'Kenobi","character":"Obi'):
        assert not quote.holds(normalise(phrase)), phrase
    assert bbox.holds(normalise('"xmin": 0.1558, "ymin": 0.08'))
    assert not bbox.holds(normalise('"xmin": 0.1558, "ymin": 0.09'))


def test_a_tool_definition_the_model_was_offered_reached_it(support: InMemoryStorage
                                                            ) -> None:
    """Text of a tool's definition — its description, a parameter's description — is
    found there: the model was offered the tool, it was not "never said"."""
    for phrase in ("look an order up", "printed on the receipt"):
        e = why_forgotten(support, RUN, phrase, embed=EMBED)
        assert (e.fate, e.evidence["part"], e.evidence["tool"], e.reached_model) == (
            "tool-definition", "tool-definition", "lookup_order", True), phrase
        assert "is in the definition of tool lookup_order" in e.sentence
        assert "The assistant was offered tool lookup_order in this run" in e.sentence
    found = find_by_phrase(support, RUN, "printed on the receipt", embed=EMBED)
    assert "the definition of the 1 tool it was offered" in found.searched


def test_an_imported_tool_result_is_sent_by_the_client() -> None:
    """The issue's own case: a number read in a tool result of an imported request."""
    s = InMemoryStorage(clock=lambda: datetime(2026, 1, 1, tzinfo=UTC))
    import_file(s, CORPUS / "openai_support.jsonl", embed=EMBED)
    runs = [r.run_id for r in s.runs.list_runs(thread_id="imp-803a2567-0")]
    for run in runs[1:]:  # the result came in the 2nd request, and stayed in the 3rd
        found = find_by_phrase(s, run, "89.5", embed=EMBED)
        best = found.best
        assert best is not None and best.contains, run
        hit = next(m for m in found.matches if m.part == "tool-result")
        assert hit.tool == "lookup_order" and hit.call_id == "call_order"
        assert hit.explanation.fate == "sent-by-client" and hit.explanation.reached_model
        assert best.explanation.reached_model
    # the 2nd request's answer repeats it: the result (its input) comes first
    first = why_forgotten(s, runs[1], "89.5", embed=EMBED)
    assert (first.fate, first.evidence["part"]) == ("sent-by-client", "tool-result")
    # the system prompt was sent as the instructions
    e = why_forgotten(s, runs[0], "support agent for Acme", embed=EMBED)
    assert (e.fate, e.evidence["part"], e.reached_model) == ("instructions", "instructions",
                                                             True)
    assert e.sentence.endswith("The client sent this text as the instructions (the system "
                               "prompt) of this request, so the model was given it.")



def test_an_imported_question_asked_in_another_conversation_too_was_sent() -> None:
    """Two recorded conversations open with the same question: for the second run, its
    own question reached the model; the first conversation's copy (written before, but
    no memory of this run could reach it) comes after it, not as the answer."""
    from memory_core.importers import import_text

    def line(system: str, answer: str) -> str:
        return json.dumps({"request": {"model": "m", "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": "tell a joke about socks"}]}, "response": {
            "model": "m", "choices": [{"message": {"role": "assistant",
                                                   "content": answer}}]}})

    s = InMemoryStorage(clock=lambda: datetime(2026, 1, 1, tzinfo=UTC))
    report = import_text(s, line("Be funny.", "Two socks walk in.") + "\n"
                         + line("Be dry.", "Socks. Feet. Done.") + "\n", name="c.jsonl")
    assert len(report.threads_created) == 2
    found = find_by_phrase(s, report.runs_created[1], "tell a joke about socks", embed=EMBED)
    best = found.best
    assert best is not None and (best.thread_id, best.seq) == (report.threads_created[1], 0)
    assert best.explanation.fate == "sent-by-client" and best.explanation.reached_model
    assert [(m.thread_id, m.seq) for m in found.matches if m.contains] == [
        (report.threads_created[1], 0), (report.threads_created[0], 0)]


def _agent_line(system: str, question: str, answer: str, **request: Any) -> str:
    return json.dumps({"request": {"model": "m", "messages": [
        {"role": "system", "content": system}, {"role": "user", "content": question}],
        **request}, "response": {"model": "m", "choices": [
            {"message": {"role": "assistant", "content": answer}}]}})


def test_a_phrase_of_another_run_s_instructions_was_not_given() -> None:
    """Two agents' requests in one file (a tracer's concurrency test): agent A's
    instructions were never given to agent B's run. The phrase, searched in B's run,
    was called B's own instructions ("so the model was given it", sharing one word);
    with both absent from the store it was "never said". It is in another run's
    request, which this run was not given."""
    s = InMemoryStorage(clock=lambda: datetime(2026, 1, 1, tzinfo=UTC))
    report = import_text(s, "\n".join([
        _agent_line("You are agent A. Just respond with 'A' and nothing else.", "Go", "A"),
        _agent_line("You are agent B. Just respond with 'B' and nothing else.", "Go", "B")]),
        name="agents.jsonl")
    run_a, run_b = report.runs_created
    for run, phrase, other in ((run_b, "You are agent A", run_a),
                               (run_a, "respond with 'B' and nothing else", run_b)):
        e = why_forgotten(s, run, phrase, embed=EMBED)
        assert (e.fate, e.reached_model) == ("not-stored", False), e
        assert f"it is word for word in the instructions of run {other} " in e.sentence, \
            e.sentence
        assert e.evidence["in_other_runs"] == [
            f"the instructions of run {other} (conversation "
            f"{s.runs.require_run(other).thread_id})"]
        search = find_by_phrase(s, run, phrase, embed=EMBED)
        assert "what the requests of 1 other run held" in search.searched
    # its own instructions are still its own
    e = why_forgotten(s, run_b, "You are agent B", embed=EMBED)
    assert (e.fate, e.reached_model) == ("instructions", True)


def test_a_tool_offered_only_in_another_run_was_not_given() -> None:
    tool = {"type": "function", "function": {
        "name": "transfer_to_math_tutor", "description": "Handoff to the Math Tutor agent",
        "parameters": {"type": "object", "properties": {}}}}
    s = InMemoryStorage(clock=lambda: datetime(2026, 1, 1, tzinfo=UTC))
    report = import_text(s, "\n".join([
        _agent_line("Triage the question.", "Help with algebra", "Handing off.",
                    tools=[tool]),
        _agent_line("You tutor maths.", "Solve x + 1 = 2", "x = 1")]), name="handoff.jsonl")
    e = why_forgotten(s, report.runs_created[1], "Math Tutor", embed=EMBED)
    assert (e.fate, e.reached_model) == ("not-stored", False)
    assert ("it is word for word in the definition of tool transfer_to_math_tutor offered "
            f"in run {report.runs_created[0]}") in e.sentence


def test_a_response_format_s_schema_reached_the_model() -> None:
    """A structured-output request's schema (its names, titles, descriptions) is sent
    to the model with the request: "HomeworkOutput" was said "never said, or erased"."""
    fmt = {"format": {"type": "json_schema", "name": "final_output", "schema": {
        "title": "HomeworkOutput", "type": "object", "properties": {
            "is_homework": {"title": "Is Homework", "type": "boolean"}}}}}
    s = InMemoryStorage(clock=lambda: datetime(2026, 1, 1, tzinfo=UTC))
    report = import_text(s, _agent_line("Check if the user is asking about homework.",
                                        "Who was the first president?",
                                        '{"is_homework": false}', text=fmt,
                                        temperature=0.2, user="ann"), name="guard.jsonl")
    [run] = report.runs_created
    for phrase in ("HomeworkOutput", "Is Homework"):
        e = why_forgotten(s, run, phrase, embed=EMBED)
        assert (e.fate, e.reached_model, e.evidence["part"]) == (
            "sent-by-client", True, "request-parameters"), e
        assert e.sentence.startswith(f"“{phrase}” is in the response format this run's "
                                     "request asked for")
    # settings the model is never shown are no part of it
    assert why_forgotten(s, run, "ann", embed=EMBED).fate == "not-stored"
    assert find_by_phrase(s, run, "HomeworkOutput", embed=EMBED).sentence.startswith(
        "“HomeworkOutput” appears word for word in the response format the request asked "
        "for")  # (it read "in the request parameters")


def test_the_cli_names_the_part(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from memory_core.cli import app

    db = f"sqlite:///{tmp_path / 'support.db'}"

    def memwb(*args: str) -> str:
        result = CliRunner().invoke(app, [*args, "--db", db])
        assert result.exit_code == 0, result.output
        return result.output

    memwb("import", str(CORPUS / "openai_support.jsonl"))
    third = "imp-a7789ae7ee44"  # the 3rd request: the tool result is in its history
    out = memwb("why", third, "--text", "89.5").splitlines()
    assert out[0].startswith("sent-by-client (imp-803a2567-0:2, tool-result): “89.5” is in "
                             "the result of tool lookup_order (call call_order)")
    assert {"  part: tool-result", "  tool: lookup_order", "  call_id: call_order"} <= set(out)
    out = memwb("why", third, "--text", "support agent for Acme").splitlines()
    assert out[0].startswith("instructions: “support agent for Acme” is in the instructions")
    assert "  part: instructions" in out
    # a tool the client offered: its definition (here, a parameter's name) was sent
    # (the 1st request: its answer calls the tool with that argument, written after)
    out = memwb("why", "imp-3f26216f1805", "--text", "order_id").splitlines()
    assert out[0].startswith("tool-definition: “order_id” is in the definition of tool "
                             "lookup_order"), out[0]
    assert "The client offered the model tool lookup_order in this request" in out[0]


# -- every imported run of the corpus ---------------------------------------------------
def _phrase(text: str) -> str:
    """Up to eight words from the middle of ``text`` (all of a short one)."""
    words = text.split()
    if len(words) <= 8:
        return " ".join(words)
    at = len(words) // 3
    return " ".join(words[at:at + 8])


def _imported(name: str) -> InMemoryStorage | None:
    s = InMemoryStorage(clock=lambda: datetime(2026, 1, 1, tzinfo=UTC))
    try:
        import_file(s, CORPUS / name, embed=EMBED)
    except (ImportFormatError, InvalidInputError):
        return None  # a file the importer refuses (the golden test checks its error)
    return s


@pytest.mark.parametrize("name", corpus())
def test_every_part_of_every_imported_run_is_found(name: str) -> None:
    """Each part with text of each message a run was given, and of the answer it stored,
    is found by its own words, in that message and that part; what the model was given
    reached it."""
    s = _imported(name)
    if s is None:
        return
    for run in s.runs.list_runs():
        data = load_run(s, run.run_id)
        places: list[tuple[list[MessagePart], str | None, tuple[str, int] | None, bool,
                           bool]] = [
            (message_parts(g.message, g.lane), g.lane, g.ref, g.is_question, True)
            for g in given_messages(data)]
        places += [(message_parts(m), None, ref, False, False)
                   for m, step, ref in conversation(data)
                   if step is None and ref is not None]  # the answer, written after
        # the tools it was offered: their definitions were sent too
        places += [(list(g.parts), g.lane, None, False, True)
                   for g in [*offered_tools(data.steps),
                             *request_parameters(data.import_record)]]
        for parts, lane, ref, question, given in places:
            for p in parts:
                if not p.text.strip():
                    continue
                _check_found(s, run.run_id, parts, lane, ref, p, question=question,
                             given=given)


def _check_found(s: InMemoryStorage, run_id: str, parts: list[MessagePart],
                 lane: str | None, ref: tuple[str, int] | None, p: MessagePart, *,
                 question: bool, given: bool) -> None:
    phrase = _phrase(p.text if p.part != "tool-call-arguments" or not p.leaves
                     else next((v for v in p.leaves if v.strip()), p.text))
    needle = normalise(phrase)
    found = find_by_phrase(s, run_id, phrase, embed=EMBED, limit=60)
    if len(found.matches) == 60 and all(m.contains for m in found.matches):
        # a phrase in more places than one search lists (a key every message of a long
        # conversation holds, Letta's "message"): all of them, to find this one's
        found = find_by_phrase(s, run_id, phrase, embed=EMBED, limit=1000)
    where = f"{run_id} {p.part} {phrase!r}"
    # the first part of that message holding the phrase is the one named
    first = next(q for q in parts if q.holds(needle))
    hit = next((m for m in found.matches if m.contains and (
        (m.thread_id, m.seq) == ref if ref is not None
        else m.thread_id is None and m.lane == lane)), None)
    assert hit is not None, f"{where}: not found in {found.matches}"
    assert hit.part == first.part, where
    assert hit.explanation.reached_model == given, where
    assert hit.explanation.evidence["part"] == first.part, where
    assert found.best is not None and found.best.contains, where
    if given and not question:  # something the model was given comes first
        assert found.best.explanation.reached_model, where


@pytest.mark.parametrize(("system", "said"), [
    (False, "every part of the 1 message the model was given in this run (text)"),
    (True, "every part of the 1 message and the instructions the model was given in this "
           "run (instructions, text)")])
def test_what_was_searched_counts_messages_apart_from_instructions(
        system: bool, said: str) -> None:
    """"the 2 messages" was said of a request of one message and a system prompt, and
    "the 1 messages" of one without."""
    msgs = [{"role": "system", "content": "Be brief."}] * system + [
        {"role": "user", "content": "Name a colour."}]
    s = InMemoryStorage()
    report = import_text(s, json.dumps({"messages": msgs, "response": {"choices": [
        {"message": {"role": "assistant", "content": "Teal."}}]}}))
    found = find_by_phrase(s, report.runs_created[0], "zebra crossing")
    assert said in found.searched, found.searched
