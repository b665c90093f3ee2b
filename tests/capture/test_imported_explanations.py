"""Never invent an explanation (issue 13.4): on imported runs, why-forgotten, compare,
the composition timeline and the inspector's settings state nothing the recording
lacks (the fields in ``memctx.unknown_fields``)."""

from __future__ import annotations

import json
import re
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from memory_core.analysis.diff import diff_runs
from memory_core.analysis.fates import GIVEN_FATES
from memory_core.analysis.forgotten import find_by_phrase, lifeline, why_forgotten
from memory_core.analysis.timeline import composition_timeline
from memory_core.analysis.views import UNKNOWN_SETTING, run_view
from memory_core.embedding.hashing import HashingEmbedder
from memory_core.importers import import_file, import_text
from memory_core.journal import load_run
from memory_core.storage.duckdb import DuckDBStorage
from memory_core.storage.inmemory import InMemoryStorage

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "imports"
GOOD = ["openai_support.jsonl", "openai_batch.jsonl", "openai_keyed.jsonl",
        "otel_genai.json", "otel_events.json", "otel_openinference.json"]
# phrases that state a memory setting or decision as a fact
INVENTED = re.compile(
    r"recall was off|recall is off|recall was limited|recall (ranked|scored|found|did not)"
    r"|top_k|\btop \d+|threshold|the bar\b|recent window|most recent messages"
    r"|not recalled|no longer recalled|always sees|always included|filter excluded",
    re.IGNORECASE)
IMPORTED_FATES = {"sent-by-client", "not-sent-by-client", "written-after", "unknown"}


def _imported(name: str) -> InMemoryStorage:
    s = InMemoryStorage()
    import_file(s, FIX / name, embed=HashingEmbedder(32))
    return s


def _check(sentence: str, where: str) -> None:
    bad = INVENTED.search(sentence)
    assert bad is None, f"{where} states {bad.group(0)!r} as a fact: {sentence}"


@pytest.mark.parametrize("name", GOOD)
def test_no_sentence_states_an_unknown_field(name: str) -> None:
    s = _imported(name)
    runs = s.runs.list_runs()
    assert runs
    messages = [m for t in s.memory.list_threads() for m in s.memory.get_messages(t.id)]
    assert messages
    fates: set[str] = set()
    for run in runs:
        data = load_run(s, run.run_id)
        assert data.memctx is not None and data.memctx.imported
        sent = {(it.thread_id, it.seq) for it in data.prompt.items if it.seq is not None}
        # the request's new messages too (its input lane holds them without a seq): they
        # were explained as "the answer recorded for this request … written after"
        assert data.persist_input is not None
        sent |= {(run.thread_id, q) for q in data.persist_input.seqs}
        for m in messages:
            e = why_forgotten(s, run.run_id, (m.thread_id, m.seq))
            _check(e.sentence, f"why_forgotten({run.run_id}, {m.thread_id}#{m.seq})")
            assert e.fate in IMPORTED_FATES, e
            assert e.reached_model == ((m.thread_id, m.seq) in sent)
            assert e.reached_model == (e.fate in GIVEN_FATES)
            fates.add(e.fate)
        view = run_view(s, run.run_id)
        for note in view.notes:
            _check(note, f"run_view({run.run_id}).notes")
        assert any("does not say whether memory recalled anything" in n for n in view.notes)
        for key, value in view.settings.items():
            if key != "embedder":
                assert value == UNKNOWN_SETTING, (key, value)
        assert view.top_k is None and view.threshold is None
    assert "sent-by-client" in fates
    for t in s.memory.list_threads():
        tl = composition_timeline(s, t.id)
        for p in tl.points:
            assert p.source == "imported"
            assert p.recalled_count is None and p.dropped_count is None
            assert p.observation_count is None and not p.compacted
        for m in s.memory.get_messages(t.id):
            for pt in lifeline(s, t.id, m.seq):
                _check(pt.sentence, f"lifeline({t.id}#{m.seq})")
    ordered = [r.run_id for r in runs]
    for a, b in [*pairwise(ordered), *zip(ordered, ordered, strict=True)]:
        d = diff_runs(s, a, b)
        assert not d.settings_changed
        for entry in d.changed():
            _check(entry.reason, f"diff_runs({a}, {b}) {entry.thread_id}#{entry.seq}")
            assert "does not say whether memory recalled anything" in entry.reason


def test_a_message_left_out_says_the_client_did_not_send_it(tmp_path: Path) -> None:
    """The issue's own example: a later request that no longer carries an early message."""
    s = DuckDBStorage(str(tmp_path / "x.duckdb"))
    text = "\n".join([
        '{"request": {"model": "m", "messages": [{"role": "user", "content": "my code is 4417"}]},'
        ' "response": {"choices": [{"message": {"role": "assistant", "content": "noted"}}]}}',
        '{"request": {"model": "m", "messages": [{"role": "user", "content": "my code is 4417"},'
        ' {"role": "assistant", "content": "noted"}, {"role": "user", "content": "hi"}]},'
        ' "response": {"choices": [{"message": {"role": "assistant", "content": "hello"}}]}}',
    ])
    p = tmp_path / "two.jsonl"
    p.write_text(text + "\n", encoding="utf-8")
    import_file(s, p)
    runs = s.runs.list_runs()
    assert len(runs) == 2
    last = runs[-1].run_id
    e = why_forgotten(s, last, "my code is 4417")
    assert e.fate == "sent-by-client" and "one of the 3 messages" in e.sentence
    first = runs[0].run_id
    later = why_forgotten(s, first, "hello")
    assert later.fate == "not-sent-by-client"
    _check(later.sentence, "why_forgotten")
    s.close()


def test_a_request_of_one_message_is_said_in_the_singular() -> None:
    s = InMemoryStorage()
    import_text(s, "\n".join(
        json.dumps({"request": {"model": "m", "messages": [
            {"role": "user", "content": question}]}, "response": {"choices": [
                {"message": {"role": "assistant", "content": answer}}]}})
        for question, answer in (("my code is 4417", "noted"), ("lilac door?", "blue"))),
        name="two.jsonl")
    first, second = (r.run_id for r in s.runs.list_runs())
    alone = why_forgotten(s, first, "my code is 4417")
    assert "it is the one message the recorded request carried" in alone.sentence
    other = why_forgotten(s, first, "lilac door?")
    assert other.fate == "not-sent-by-client"
    assert "the client sent one message, and this was not it" in other.sentence
    assert run_view(s, second).notes[0].endswith("the client sent this one message")


def test_a_request_s_instructions_are_not_counted_among_its_messages() -> None:
    """An Anthropic request of three messages and a ``system`` prompt: the question was
    "one of the 4 messages the recorded request carried" — the instructions are no
    message of it. So for a chat request whose system prompt is one: the same count."""
    for name, record in (
            ("a.jsonl", {"request": {"model": "claude-x", "max_tokens": 64,
                                     "system": "Answer tersely.", "messages": [
                                         {"role": "user", "content": "My code is 4417."},
                                         {"role": "assistant", "content": "Noted."},
                                         {"role": "user", "content": "Which gate code?"}]},
                         "response": {"type": "message", "role": "assistant",
                                      "model": "claude-x", "stop_reason": "end_turn",
                                      "content": [{"type": "text", "text": "4417."}],
                                      "usage": {"input_tokens": 9, "output_tokens": 2}}}),
            ("c.jsonl", {"request": {"model": "m", "messages": [
                {"role": "system", "content": "Answer tersely."},
                {"role": "user", "content": "My code is 4417."},
                {"role": "assistant", "content": "Noted."},
                {"role": "user", "content": "Which gate code?"}]},
                "response": {"choices": [{"message": {"role": "assistant",
                                                      "content": "4417."}}]}})):
        s = InMemoryStorage()
        [run] = import_text(s, json.dumps(record), name=name).runs_created
        e = why_forgotten(s, run, "Which gate code?")
        assert "it is one of the 3 messages the recorded request carried beside its " \
               "instructions" in e.sentence, (name, e.sentence)
        assert e.evidence["sent"] == 3
        # the run inspector's note counts them alike
        assert run_view(s, run).notes[0].endswith(
            "the client sent these 3 messages beside its instructions")


def test_unknown_paths_cover_the_fields_below_them() -> None:
    from memory_core.provenance.record import CompositionSettings, Memctx

    m = Memctx(thread_id="t", settings=CompositionSettings(recent_n=2, recall_enabled=False),
               unknown_fields=["settings.recall", "observations"])
    assert m.is_unknown("settings.recall.top_k") and m.is_unknown("observations")
    assert m.is_unknown_setting("top_k") and m.is_unknown_setting("rrf_k")
    assert not m.is_unknown_setting("recent_n") and not m.is_unknown("settings")
    assert not m.is_unknown("settings.recall_enabled")  # a sibling, not a child
    whole = m.model_copy(update={"unknown_fields": ["settings"]})
    assert whole.is_unknown_setting("recent_n") and whole.is_unknown_setting("threshold")


def test_a_phrase_only_in_what_the_import_left_out_is_not_said_never_said() -> None:
    # the model's thinking is not imported (noted): a phrase only in it is in no stored
    # part, but "it was never said" would be false — the recording held it
    s = InMemoryStorage()
    record = {"request": {"model": "claude-x", "max_tokens": 64, "messages": [
        {"role": "user", "content": "Which gate code?"}]},
        "response": {"type": "message", "role": "assistant", "model": "claude-x",
                     "content": [{"type": "thinking", "thinking": "The caretaker's note "
                                  "mentions the lilac door.", "signature": "s"},
                                 {"type": "text", "text": "It is 4417."}],
                     "stop_reason": "end_turn",
                     "usage": {"input_tokens": 9, "output_tokens": 5}}}
    report = import_text(s, json.dumps(record), name="a.jsonl", embed=HashingEmbedder(32))
    run = report.runs_created[0]
    assert any("not imported" in k.reason for k in report.skipped)
    e = why_forgotten(s, run, "lilac door")
    assert e.fate == "not-stored" and not e.reached_model
    assert "never said" not in e.sentence
    # (the answer's thinking: written by the model, not given to it)
    assert "the answer recorded for this run held parts that were not imported" in e.sentence
    assert e.sentence.endswith("written by the model after it was sent this request, not "
                               "given to it.")
    assert e.evidence["not_imported"] and all("not imported" in n
                                              for n in e.evidence["not_imported"])
    # a run whose conversation's recordings left nothing out still says it was never
    # said (another conversation: the same one would hold the first run's thinking)
    plain = {"request": {**record["request"], "messages": [
        {"role": "user", "content": "Which code opens it?"}]},
        "response": {**record["response"], "content": [{"type": "text", "text": "4417."}]}}
    again = import_text(s, json.dumps(plain), name="b.jsonl", embed=HashingEmbedder(32))
    e = why_forgotten(s, again.runs_created[0], "lilac door")
    assert e.fate == "not-stored" and "never said" in e.sentence
    assert "not_imported" not in e.evidence


def test_a_phrase_only_in_an_earlier_run_s_unimported_thinking_is_said_to_be_there(
        tmp_path: Path) -> None:
    """An outside trial (simonw/llm-gemini's cassette): the phrase was in the first
    call's thought, which the import left out, and was searched from the last run: its
    own recording left nothing out, so the answer named only the closest message, and
    the CLI headed it with that message's fate as if found."""
    from typer.testing import CliRunner

    from memory_core.cli import app

    think = {"type": "thinking", "thinking": "Generating pelican names, maybe Charles.",
             "signature": "s"}
    first = {"request": {"model": "claude-x", "max_tokens": 64, "messages": [
        {"role": "user", "content": "Two names for a pet pelican"}]},
        "response": {"type": "message", "role": "assistant", "model": "claude-x",
                     "content": [think, {"type": "text", "text": "Charles."}],
                     "stop_reason": "end_turn", "usage": {"input_tokens": 9, "output_tokens": 5}}}
    second = {"request": {**first["request"], "messages": [
        *first["request"]["messages"], {"role": "assistant", "content": "Charles."},
        {"role": "user", "content": "And a second name?"}]},
        "response": {**first["response"], "content": [{"type": "text", "text": "Sammy."}]}}
    db = tmp_path / "p.duckdb"
    with DuckDBStorage(db) as s:
        report = import_text(s, "\n".join(json.dumps(r) for r in (first, second)),
                             name="p.jsonl", embed=HashingEmbedder(32))
        one, two = report.runs_created
        # nothing holds it word for word; the closest shares most of its words
        e = why_forgotten(s, two, "Generating Pelican Names")
        assert e.fate != "not-stored" and "matched" in e.evidence
        assert "the recordings of this conversation's runs held parts that were not " \
               f"imported (“run {one}: " in e.sentence
        # searched from the run whose own recording left it out: its own notes alone
        mine = why_forgotten(s, one, "lilac door")
        assert "the answer recorded for this run held parts" in mine.sentence
        assert f"run {one}:" not in mine.sentence
        # a phrase some message holds: no word of what was left out
        held = why_forgotten(s, two, "a second name")
        assert "not imported" not in held.sentence
    out = CliRunner().invoke(app, ["why", two, "--db", str(db), "--text",
                                   "Generating Pelican Names"])
    assert out.exit_code == 0, out.output
    assert out.output.startswith("closest match "), out.output
    out = CliRunner().invoke(app, ["why", two, "--db", str(db), "--text", "a second name"])
    assert not out.output.startswith("closest match "), out.output


def test_a_phrase_in_a_tool_result_of_another_conversation_is_found_there() -> None:
    """The store's text search reads messages' text only: a phrase that is only in a
    tool result of another conversation was "not-stored", said nowhere."""
    call = {"id": "call_1", "type": "function",
            "function": {"name": "ask_joe", "arguments": "{}"}}
    tools = [{"type": "function", "function": {"name": "ask_joe", "parameters": {}}}]
    first = [{"role": "user", "content": "Ask Joe for access."},
             {"role": "assistant", "content": None, "tool_calls": [call]},
             {"role": "tool", "tool_call_id": "call_1", "content": "Joe denied the request"}]
    lines = [json.dumps({"request": {"model": "m", "messages": first, "tools": tools},
                         "response": {"choices": [{"message": {
                             "role": "assistant", "content": "He said no."}}]}}),
             json.dumps({"request": {"model": "m", "messages": [
                 {"role": "user", "content": "What's the weather?"}]},
                 "response": {"choices": [{"message": {
                     "role": "assistant", "content": "Sunny."}}]}})]
    s = InMemoryStorage()
    report = import_text(s, "\n".join(lines), name="two.jsonl")
    assert len(report.threads_created) == 2
    e = why_forgotten(s, report.runs_created[1], "Joe denied the request")
    assert e.fate == "not-sent-by-client" and e.evidence["part"] == "tool-result"
    # what was searched counts the messages holding parts, and the conversations read
    # ("every part of the 2 messages of the 1 newest other conversations" before)
    found = find_by_phrase(s, report.runs_created[1], "Joe denied everything")
    assert found.searched.endswith("; the tool calls, tool results and attachments of the 2 "
                                   "messages holding any in the 1 other conversation"), \
        found.searched
    assert e.thread_id == report.threads_created[0]


def test_what_the_import_noted_of_a_call_is_said_with_its_run() -> None:
    """A run's import notes (a thinking block not imported, an id given) were only in
    the import's report: the run inspector and ``memwb inspect`` say them with the run,
    the first five and how many more."""
    s = InMemoryStorage()
    real = Path(__file__).resolve().parents[1] / "fixtures" / "imports" / "real"
    rid = import_file(s, real / "genai-cohere-reasoning-GenSync-Text.yaml").runs_created[0]
    assert run_view(s, rid).notes[0].endswith(
        "the client sent this one message. The import noted: interaction 1: response: "
        "content part 0 (thinking) not imported")
    calls = [{"type": "function", "function": {"name": f"f{i}", "arguments": "{}"}}
             for i in range(7)]  # (no ids: each given one, and noted)
    report = import_text(s, json.dumps({
        "request": {"model": "m", "messages": [{"role": "user", "content": "go"}]},
        "response": {"choices": [{"message": {"role": "assistant", "tool_calls": calls}}]}}),
        name="calls.json")
    note = run_view(s, report.runs_created[0]).notes[0]
    assert note.count("had no id") == 5 and re.search(r"; and \d+ more$", note), note


def test_a_phrase_a_left_out_part_names_is_said_to_be_in_it() -> None:
    """Weave's Gemini cassette: the answer cites two repositories (not imported, noted
    with their URLs). A cited repository's name is in that note: not "it may have been
    in one of them" but that one of them holds it."""
    s = InMemoryStorage()
    report = import_file(s, FIX / "real" / "weave-google_genai-test_chat_session_sync.yaml")
    e = why_forgotten(s, report.runs_created[0], "codeWarsTwo")
    assert e.fate == "not-stored" and not e.reached_model
    assert "held parts that were not imported, and one of them holds it (“" in e.sentence
    assert "https://github.com/bownejp20/codeWarsTwo" in e.sentence
    assert e.sentence.endswith("it was recorded but not kept here.")
    # the note's own words are no part of the recording: "citation" is in no quote
    e = why_forgotten(s, report.runs_created[0], "citation")
    assert "one of them holds it" not in e.sentence
    assert "it may have been in one of them" in e.sentence


def test_a_phrase_only_the_answer_s_left_out_parts_may_hold_was_not_given() -> None:
    """paper-qa's DeepSeek cassette: the answer's reasoning is not imported. A phrase no
    part holds may have been in that reasoning — which the model wrote after it was
    sent the request: `why` said "it may have been in one of them" as if it could have
    been given to the model."""
    s = InMemoryStorage()
    real = Path(__file__).resolve().parents[1] / "fixtures" / "imports" / "real"
    rid = import_file(s, real / "genai-cohere-reasoning-GenSync-Text.yaml").runs_created[0]
    e = why_forgotten(s, rid, "quantum chromodynamics")
    assert e.fate == "not-stored" and not e.reached_model
    assert e.sentence.endswith(
        "But the answer recorded for this run held parts that were not imported "
        "(“interaction 1: response: content part 0 (thinking) not imported”): it may have "
        "been in one of them, written by the model after it was sent this request, not "
        "given to it."), e.sentence


def test_the_answer_s_left_out_parts_are_told_by_their_note_wherever_it_is() -> None:
    """mini-swe-agent's notes name their place inside the file ("line 1: messages[2]:
    response: its reasoning … not imported"): the answer's reasoning was told apart only
    when the note began "<where>: response"."""
    real = Path(__file__).resolve().parents[1] / "fixtures" / "imports" / "real"
    traj = json.loads((real / "minisweagent-pvlib__pvlib-python-1606.traj.json")
                      .read_text(encoding="utf-8"))
    traj["messages"] = traj["messages"][:3]  # (its first call alone)
    s = InMemoryStorage()
    (rid,) = import_text(s, json.dumps(traj), name="one.traj.json").runs_created
    e = why_forgotten(s, rid, "quantum chromodynamics")
    assert ": messages[2]: response: its reasoning" in e.sentence, e.sentence
    assert e.sentence.endswith("written by the model after it was sent this request, not "
                               "given to it."), e.sentence


def test_a_phrase_a_server_run_tool_s_result_may_hold_was_given_not_written() -> None:
    """activeagent's MCP cassette: Claude called a GitHub MCP server and read its
    results within the one call; the results are not imported. A phrase of them was
    "written by the model after it was sent this request, not given to it" — the
    model read it."""
    use = {"type": "mcp_tool_use", "id": "mcptoolu_1", "name": "search_repositories",
           "server_name": "github", "input": {"query": "ai"}}
    result = {"type": "mcp_tool_result", "tool_use_id": "mcptoolu_1", "is_error": False,
              "content": [{"type": "text", "text": '{"full_name":"lutzroeder/netron"}'}]}
    record = {"request": {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": [
        {"role": "user", "content": "Which AI repositories are popular?"}],
        "mcp_servers": [{"type": "url", "url": "https://example.com/mcp", "name": "github"}]},
        "response": {"type": "message", "id": "msg_1", "role": "assistant",
                     "model": "claude-sonnet-4-5", "stop_reason": "end_turn",
                     "content": [use, result, {"type": "text", "text": "Netron leads."}],
                     "usage": {"input_tokens": 900, "output_tokens": 8}}}
    s = InMemoryStorage()
    (rid,) = import_text(s, json.dumps(record) + "\n").runs_created
    e = why_forgotten(s, rid, "lutzroeder/netron")
    assert "written by the model" not in e.sentence, e.sentence
    assert e.sentence.endswith(
        "among them a result of a tool the provider's server ran during this call "
        "(“line 1: response: content block 1 (mcp_tool_result) not imported”): it may "
        "have been in one, given to the model while it answered, recorded but not kept "
        "here."), \
        e.sentence


def test_a_phrase_an_attachment_may_hold_was_not_never_said() -> None:
    """crewAI's Responses cassette sends a PDF as base64 ``file_data``, kept as a
    placeholder: `why` on its bytes said "it was never said, or it was erased" though
    the model was given the file."""
    pdf = "data:application/pdf;base64,JVBERi0xLjQKJcfsj6IKNSAwIG9iago="
    record = {"request": {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": [
        {"type": "text", "text": "Summarise the file."},
        {"type": "file", "file": {"filename": "report.pdf", "file_data": pdf}}]}]},
        "response": {"object": "chat.completion", "model": "gpt-4o-mini", "choices": [
            {"index": 0, "finish_reason": "stop",
             "message": {"role": "assistant", "content": "A sales report."}}]}}
    s = InMemoryStorage()
    (rid,) = import_text(s, json.dumps(record) + "\n").runs_created
    e = why_forgotten(s, rid, "JVBERi0xLjQKJcfsj6IK")
    assert "never said" not in e.sentence, e.sentence
    assert "kept as a placeholder" in e.sentence and e.sentence.endswith(
        "recorded but not kept here."), e.sentence


def test_a_phrase_of_an_answer_sent_back_without_it_was_not_given_again() -> None:
    """crewAI's Bedrock cassette: the second request sends the first answer back as its
    calls alone. The stored answer keeps its text; `why` on that text for the second
    run said "The client sent this message in this request" — the request sent the
    message, not the text."""
    s = InMemoryStorage()
    real = Path(__file__).resolve().parents[1] / "fixtures" / "imports" / "real"
    first, second = import_file(
        s, real / "crewai-bedrock_parallel_native_tool_calling.yaml").runs_created
    e = why_forgotten(s, second, "parallel searches simultaneously")
    assert e.fate == "not-sent-by-client" and not e.reached_model, e.sentence
    assert e.sentence.endswith(
        "The client sent this message in this request, but not this text: the message is "
        f"stored as run {first} recorded it, and this request sent it back as its client "
        "rewrote it (its tool calls alone, without its text)."), e.sentence
    # a call it did send back is given
    e = why_forgotten(s, second, "latest Anthropic model release notes")
    assert e.reached_model, e.sentence


def test_a_phrase_of_a_failed_call_s_error_is_the_server_s_answer() -> None:
    """paper-qa's cassette of a call refused with a 400: `why` on the error's words said
    "No stored message contains it", pointing at the image placeholder, though the run
    keeps the error the server answered with."""
    record = {"request": {"model": "gpt-4o", "messages": [
        {"role": "user", "content": "Describe the figure."}]},
        "error": {"message": "You uploaded an unsupported image. Please make sure your "
                             "image is png or jpeg.", "code": "invalid_image_format"}}
    s = InMemoryStorage()
    (rid,) = import_text(s, json.dumps(record) + "\n").runs_created
    assert s.runs.require_run(rid).status == "failed"
    e = why_forgotten(s, rid, "You uploaded an unsupported image")
    assert e.fate == "written-after" and not e.reached_model, e.sentence
    assert e.evidence["part"] == "error" and "the error the run failed with" in \
        e.evidence["searched"]
    assert "it is in the error this run failed with" in e.sentence, e.sentence
    # a phrase the request holds is still the request's
    assert why_forgotten(s, rid, "Describe the figure").reached_model


def test_a_phrase_written_after_the_run_names_where_it_first_was() -> None:
    """llm-openrouter's tool loop: for the first run, `why` on a phrase of the tool's
    result cited the final answer that repeats it (#3), not the result (#2) where it
    first was; both are written after the run, the first written is named."""
    call = {"id": "call_v1", "type": "function",
            "function": {"name": "llm_version", "arguments": "{}"}}
    ask = {"role": "user", "content": "Which llm version is this?"}
    asked = {"role": "assistant", "content": None, "tool_calls": [call]}
    result = {"role": "tool", "tool_call_id": "call_v1", "content": "0.0+test"}

    def line(messages: list[dict[str, Any]], answer: dict[str, Any], at: int) -> str:
        return json.dumps({"request": {"model": "gpt-4o", "messages": messages},
                           "response": {"created": at, "choices": [{"message": answer}]}})

    s = InMemoryStorage()
    first, _ = import_text(s, "\n".join([
        line([ask], asked, 1767268800),
        line([ask, asked, result], {"role": "assistant",
                                    "content": "This is llm version 0.0+test."},
             1767268810)]) + "\n").runs_created
    e = why_forgotten(s, first, "0.0+test")
    assert not e.reached_model and e.seq == 2, (e.seq, e.sentence)


def test_a_phrase_another_run_s_attachment_may_hold_is_said_to_be_there() -> None:
    """A phrase searched from the first run of a tool loop, where only the next
    request's tool result held it — a PDF kept as a placeholder — was said "never
    said": another run's placeholder notes were not read, only its "not imported" ones."""
    pdf = "data:application/pdf;base64,JVBERi0xLjQKJcfsj6IKNSAwIG9iago="
    call = {"id": "call_1", "type": "function",
            "function": {"name": "fetch_report", "arguments": "{}"}}
    ask = {"role": "user", "content": "Summarise the latest report."}
    offered = [{"type": "function", "function": {"name": "fetch_report",
                                                 "parameters": {"type": "object"}}}]

    def answer(message: dict[str, Any]) -> dict[str, Any]:
        return {"object": "chat.completion", "model": "gpt-4o-mini", "choices": [
            {"index": 0, "finish_reason": "stop", "message": message}]}

    first = {"request": {"model": "gpt-4o-mini", "tools": offered, "messages": [ask]},
             "response": answer({"role": "assistant", "content": None,
                                 "tool_calls": [call]})}
    second = {"request": {"model": "gpt-4o-mini", "tools": offered, "messages": [
        ask, {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": [
            {"type": "text", "text": "The report:"},
            {"type": "file", "file": {"filename": "report.pdf", "file_data": pdf}}]}]},
        "response": answer({"role": "assistant", "content": "A sales report."})}
    s = InMemoryStorage()
    report = import_text(s, "\n".join(json.dumps(r) for r in (first, second)))
    one, two = report.runs_created
    e = why_forgotten(s, one, "JVBERi0xLjQKJcfsj6IK")
    assert "never said" not in e.sentence, e.sentence
    assert "the recordings of this conversation's runs held parts that were not " \
           f"imported (“run {two}: " in e.sentence and "placeholder" in e.sentence, e.sentence


def test_a_phrase_of_a_server_tool_s_call_is_said_to_be_in_it() -> None:
    """An outside trial (llm.rb's web search cassette): the phrase was the query the
    model wrote for Claude's web search, a block not imported; `why` said it "may have
    been in" a search result, "given to the model while it answered". The note of a
    server tool's call now quotes the call, so the phrase is found in it: written by
    the model, recorded but not kept here."""
    use = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
           "input": {"query": "lilac door opening hours 2026"}}
    result = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [
        {"type": "web_search_result", "url": "https://example.com/door", "title": "Doors",
         "encrypted_content": "EqQBCkYIBhgC"}]}
    record = {"request": {"model": "claude-sonnet-4-5", "max_tokens": 64,
                          "tools": [{"type": "web_search_20250305", "name": "web_search"}],
                          "messages": [{"role": "user", "content": "When does it open?"}]},
              "response": {"type": "message", "id": "msg_1", "role": "assistant",
                           "model": "claude-sonnet-4-5", "stop_reason": "end_turn",
                           "content": [use, result, {"type": "text", "text": "At nine."}],
                           "usage": {"input_tokens": 900, "output_tokens": 8}}}
    s = InMemoryStorage()
    report = import_text(s, json.dumps(record) + "\n")
    assert "line 1: response: content block 0 (server_tool_use: web_search {\"query\": " \
           "\"lilac door opening hours 2026\"}) not imported" in [
               k.reason if k.where == "file" else f"{k.where}: {k.reason}"
               for k in report.skipped], report.skipped
    e = why_forgotten(s, report.runs_created[0], "lilac door opening hours")
    assert "given to the model while it answered" not in e.sentence, e.sentence
    assert "one of them holds it" in e.sentence and "server_tool_use" in e.sentence, \
        e.sentence
