"""Aider's LLM history (``aider --llm-history-file FILE``): each call a ``TO LLM <time>``
block of its messages (``-------``, then each line after its role in capitals) and an
``LLM RESPONSE <time>`` block of the answer. The real file is in the corpus
(tests/test_importers_real.py); here small ones, written as Aider writes them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memory_core.cli import app
from memory_core.errors import ImportFormatError
from memory_core.importers import detect_format, import_text
from memory_core.storage.inmemory import InMemoryStorage

# (an empty line of a message is its role and a space: "\x20", the space)
SENT = """-------
SYSTEM Act as an expert code analyst.
SYSTEM\x20
SYSTEM Answer questions about the supplied code.
-------
USER Here are summaries of some files present in my git repo.
USER\x20
USER src/app.py
-------
ASSISTANT Ok, I won't try and edit those files without asking first.
-------
USER What does the zebra function do?
"""
ANSWER = "ASSISTANT It paints stripes.\nASSISTANT\x20\nASSISTANT Nothing else.\n"
CALL_1 = f"TO LLM 2025-01-31T11:21:36\n{SENT}LLM RESPONSE 2025-01-31T11:21:41\n{ANSWER}"
# the next call sends the whole chat again, the answer and the next question after it
CALL_2 = (f"TO LLM 2025-01-31T11:23:00\n{SENT}-------\n{ANSWER}-------\nUSER And the lion?\n"
          "LLM RESPONSE 2025-01-31T11:23:07\nASSISTANT It roars.\n")


def _import(text: str) -> tuple[InMemoryStorage, Any]:
    s = InMemoryStorage()
    return s, import_text(s, text, name="x.aider.llm.history")


def _reasons(report: Any) -> list[str]:
    return [f"{k.where}: {k.reason}" for k in report.skipped]


def test_a_history_is_told_by_its_first_non_blank_line() -> None:
    assert detect_format("\n\n" + CALL_1) == "openai"
    s, report = _import("\n\n" + CALL_1)
    assert len(report.runs_created) == 1
    # the same lines after another first line are no Aider history
    with pytest.raises(ImportFormatError, match="plain text, not JSON"):
        _import("my notes\n" + CALL_1)
    with pytest.raises(ImportFormatError, match="plain text, not JSON"):
        _import(CALL_1.replace("2025-01-31T11:21:36", "yesterday", 1))


def test_each_call_is_a_run_of_its_messages_and_answer() -> None:
    s, report = _import(CALL_1)
    (rid,) = report.runs_created
    (thread,) = report.threads_created
    assert [(m.role, m.content) for m in s.memory.get_messages(thread)] == [
        ("user", "Here are summaries of some files present in my git repo.\n\nsrc/app.py"),
        ("assistant", "Ok, I won't try and edit those files without asking first."),
        ("user", "What does the zebra function do?"),
        ("assistant", "It paints stripes.\n\nNothing else.")]
    prompt = s.runs.get(f"{rid}:prompt")["items"]
    assert prompt[0]["lane"] == "instructions"
    assert prompt[0]["message"]["content"] == ("Act as an expert code analyst.\n\n"
                                               "Answer questions about the supplied code.")
    run = s.runs.require_run(rid)
    assert run.agent == "imported" and run.status == "completed"
    assert run.started_at.isoformat() == "2025-01-31T11:21:36+00:00"
    assert run.finished_at is not None
    assert run.finished_at.isoformat() == "2025-01-31T11:21:41+00:00"
    step = s.runs.get(f"{rid}:step:0")
    assert step["model"]["name"] == "imported"
    assert {"model", "tools"} <= set(s.runs.get(f"{rid}:memctx")["unknown_fields"])
    assert _reasons(report) == [
        "file: Aider's LLM history names neither the model nor the tools offered: each "
        "run's are unknown",
        "file: its times have no time zone (Aider writes the local time): read as UTC"]


def test_the_next_call_resending_the_chat_continues_its_thread() -> None:
    s, report = _import(CALL_1 + CALL_2)
    assert len(report.runs_created) == 2
    (thread,) = report.threads_created
    assert [m.content for m in s.memory.get_messages(thread)][-2:] == ["And the lion?",
                                                                       "It roars."]


def test_a_file_written_on_windows_or_stripped_of_trailing_spaces_reads_the_same() -> None:
    for text in ((CALL_1 + CALL_2).replace("\n", "\r\n"),
                 (CALL_1 + CALL_2).replace(" \n", "\n")):
        s, report = _import(text)
        (thread,) = report.threads_created
        assert [m.content for m in s.memory.get_messages(thread)][-3:] == [
            "It paints stripes.\n\nNothing else.", "And the lion?", "It roars."]


def test_a_request_without_its_answer_is_a_failed_run_noted() -> None:
    s, report = _import(CALL_1 + CALL_2.split("LLM RESPONSE")[0])
    first, second = report.runs_created
    assert s.runs.require_run(first).status == "completed"
    run = s.runs.require_run(second)
    assert run.status == "failed" and "no LLM RESPONSE block follows" in (run.error or "")
    assert any(r.startswith("line 18: no answer: no LLM RESPONSE block follows")
               for r in _reasons(report)), _reasons(report)


def test_an_empty_answer_is_a_failed_run() -> None:
    # Aider writes the response block in a ``finally``: a call that failed writes it empty
    text = CALL_1.split("LLM RESPONSE")[0] + "LLM RESPONSE 2025-01-31T11:21:41\n\n"
    s, report = _import(text)
    run = s.runs.require_run(report.runs_created[0])
    assert run.status == "failed" and "(line 14) is empty" in (run.error or "")


def test_a_block_that_cannot_be_read_is_noted_by_its_line_and_the_rest_imported() -> None:
    bad = CALL_2.replace("USER And the lion?", "USR And the lion?")
    s, report = _import(CALL_1 + bad + "LLM RESPONSE 2025-01-31T11:24:00\nASSISTANT late\n")
    assert len(report.runs_created) == 1
    reasons = _reasons(report)
    assert "line 18: not imported: line 36: expected a message's line: its role in " \
           "capitals (SYSTEM, USER, ASSISTANT) and a space, then its text, got " \
           "'USR And the lion?'" in reasons, reasons
    assert "line 39: not imported: an LLM RESPONSE block with no TO LLM block before " \
           "it" in reasons, reasons


def test_a_history_of_nothing_readable_is_refused_in_one_sentence() -> None:
    with pytest.raises(ImportFormatError) as e:
        _import("TO LLM 2025-01-31T11:21:36\nhello\n")
    assert str(e.value) == ("file: an Aider LLM history none of whose 1 block(s) can be "
                            "read; the first: line 2: expected '-------' before the first "
                            "message, got 'hello'")


def test_content_parts_are_read_as_parts() -> None:
    # Aider sends an image as a list of parts, and marks messages for prompt caching so;
    # a text part's later lines are written without the role
    text = """TO LLM 2025-01-31T11:21:36
-------
SYSTEM type: text
SYSTEM text: Act as an expert.
Be brief.
SYSTEM cache_control: {'type': 'ephemeral'}
-------
USER type: text
USER text: Image file: logo.png
USER type: image_url
USER Image_url URL: data:image/png;base64,iVBORw0KGgo=
-------
USER What is in the picture?
LLM RESPONSE 2025-01-31T11:21:41
ASSISTANT A zebra.
"""
    s, report = _import(text)
    (rid,) = report.runs_created
    prompt = s.runs.get(f"{rid}:prompt")["items"]
    assert prompt[0]["message"]["content"] == "Act as an expert.\nBe brief."
    (thread,) = report.threads_created
    image = s.memory.get_messages(thread)[0]
    assert [p.text for p in image.parts] == ["Image file: logo.png"]
    (attachment,) = image.metadata["attachments"]
    assert (attachment["type"], attachment["media_type"]) == ("image_url", "image/png")
    assert "file: 1 message(s) marked for prompt caching (cache_control): read as their " \
           "text, the mark not imported" in _reasons(report)


def test_what_aider_writes_without_a_role_or_as_a_python_value_is_noted() -> None:
    # an empty content is written as one empty line, no role; a function call as the
    # Python value of its dict
    text = CALL_1.replace("-------\nUSER What does", "-------\n\n-------\nUSER What does")
    text = text.replace("ASSISTANT Ok, I won't try and edit those files without asking "
                        "first.", "ASSISTANT Ok.\nASSISTANT Function Call: {'name': 'x'}")
    s, report = _import(text)
    (thread,) = report.threads_created
    assert [m.content for m in s.memory.get_messages(thread)][1:3] == [
        "Ok.", "What does the zebra function do?"]
    reasons = _reasons(report)
    assert "line 1: the message at line 13 is empty, its role not written: left " \
           "out" in reasons, reasons
    assert "line 1: the function call of the message at line 10 (written as a Python " \
           "value) not imported" in reasons, reasons


def test_the_cli_says_what_was_sent_and_what_was_written_after(tmp_path: Path) -> None:
    path = tmp_path / ".aider.llm.history"
    path.write_text(CALL_1 + CALL_2, encoding="utf-8")
    db = f"sqlite:///{tmp_path / 'x.db'}"
    cli = CliRunner()

    def run(*args: str) -> str:
        done = cli.invoke(app, [*args, "--db", db])
        assert done.exit_code == 0, (done.output, done.exception)
        return done.stdout

    assert ", 2 runs" in run("import", str(path), "--embedder", "none")
    rid = ""
    for line in run("runs").splitlines()[1:]:
        if line.split()[4:6] == ["2025-01-31", "11:23:00+00:00"]:
            rid = line.split()[0]
    assert rid, run("runs")
    s = run("why", rid, "--text", "the lion")
    assert s.startswith("sent-by-client"), s
    s = run("why", rid, "--text", "expert code analyst")
    assert s.startswith("instructions"), s
    s = run("why", rid, "--text", "It roars")
    assert s.startswith("written-after"), s
    assert "0 tampered" in run("verify", "--all")
    assert run("replay", rid).startswith(f"replay of {rid}: identical")

