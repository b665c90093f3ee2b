"""Imported runs without noise (issue 36 point 6), and thread ids as links on the Threads
page (point 4): on a database of imported recordings — a tool loop (OpenLLMetry's
cassette), a Cohere cassette and an OTLP export — every page says once what a
recording does not hold instead of a row of "unknown (not in the record)" per setting,
its banners are words (no field names), its run pickers name runs by time and the first
words of their question, and the recorded token counts and ours say which is which."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from app.components import (
    COMPARE_PAGE,
    COUNTERFACTUAL_PAGE,
    RUN_PAGE,
    START_PAGE,
    THREADS_PAGE,
    TIMELINE_PAGE,
    WHATIF_PAGE,
    WHY_PAGE,
)
from memory_core.analysis import views
from memory_core.analysis.views import UNKNOWN_SETTING
from memory_core.importers import import_file
from memory_core.storage.inmemory import InMemoryStorage
from tests.app.markdown import Table, tables

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "imports"
RECORDINGS = [FIXTURES / "real" / "openllmetry-test_chat_tool_calls.yaml",
              FIXTURES / "real" / "langchain-cohere-v1-test_connectors.yaml",
              FIXTURES / "otel_genai.json"]
WEATHER = "conv-weather-1"  # the OTLP export's thread: a tool call, then the answer
WEATHER_ANSWER_RUN = "imp-74a27e630fd4"
QUESTION_WORDS = "What is the weather in Paris tomorrow?"
NOT_HELD = "holds what the client sent the model and what came back"
# an identifier as code writes it (recall_skipped, near_misses, settings.recall)
FIELD_NAME = re.compile(r"\b[a-z]+(?:_[a-z]+)+\b|\bsettings\.[a-z_]+")
TIME = re.compile(r"(?:\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d|time not recorded")


@pytest.fixture()
def imported(empty_db: InMemoryStorage) -> Iterator[InMemoryStorage]:
    for path in RECORDINGS:
        import_file(empty_db, path)
    yield empty_db


def _texts(at: AppTest) -> list[str]:
    """Every text the page shows in Markdown, captions, banners and plain text."""
    return [str(e.value) for kind in ("markdown", "caption", "text", "warning", "info",
                                      "error", "success")
            for e in getattr(at, kind)]


def _banners(at: AppTest) -> list[str]:
    return [str(e.value) for kind in ("warning", "info", "error", "success")
            for e in getattr(at, kind)]


def _picker(at: AppTest, label: str) -> Any:
    return next(s for s in at.selectbox if s.label == label)


def _ok(at: AppTest) -> None:
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]


def test_the_inspector_says_once_what_a_recording_does_not_hold(
        imported: InMemoryStorage, app: Callable[..., AppTest]) -> None:
    at = app(RUN_PAGE, run=WEATHER_ANSWER_RUN)
    _ok(at)
    shown = "\n".join(_texts(at)).replace("\\", "")
    assert shown.count(UNKNOWN_SETTING) <= 1
    assert shown.count(NOT_HELD) == 1
    # the sections an imported record would leave empty are not drawn
    headings = [m.value for m in at.markdown if str(m.value).startswith("####")]
    assert "#### Settings" not in headings and "#### Recall scores" not in headings
    assert "#### Left out of the prompt" not in headings
    assert not [e for e in at.expander if e.label == "All settings, as recorded"]


def test_the_inspector_opens_on_a_lane_that_holds_something(
        imported: InMemoryStorage, app: Callable[..., AppTest]) -> None:
    """A conversation's first call holds only its input (no instructions, nothing before
    it): the lanes open on the input, not on an empty first tab."""
    only_input = [r.run_id for r in imported.runs.list_runs()
                  if [(lv.lane, lv.total_count) for lv in
                      views.run_view(imported, r.run_id).lanes if lv.total_count]
                  == [("input", 1)]]
    assert only_input
    at = app(RUN_PAGE, run=only_input[0])
    _ok(at)
    assert [t.label for t in at.tabs][0] == "Instructions (0)"
    assert "(nothing in this lane)" not in [t.value for t in at.text]
    assert any(str(c.value).startswith("1 item · ") for c in at.caption)


@pytest.mark.slow
def test_banners_are_words_not_field_names(imported: InMemoryStorage,
                                           app: Callable[..., AppTest]) -> None:
    opened = [(RUN_PAGE, r.run_id) for r in imported.runs.list_runs()]
    opened += [(page, WEATHER_ANSWER_RUN) for page in (
        START_PAGE, THREADS_PAGE, COMPARE_PAGE, COUNTERFACTUAL_PAGE, WHY_PAGE, TIMELINE_PAGE,
        WHATIF_PAGE)]
    for page, rid in opened:
        at = app(page, run=rid, b=rid, thread=WEATHER)
        assert not at.exception, (page, at.exception)
        for banner in _banners(at):
            assert not FIELD_NAME.findall(banner.replace("\\", "")), (page, rid, banner)
        # said once at most, never a row each
        assert "\n".join(_texts(at)).replace("\\", "").count(UNKNOWN_SETTING) <= 1, page


def test_token_counts_say_which_is_recorded_and_which_is_ours(
        imported: InMemoryStorage, app: Callable[..., AppTest]) -> None:
    at = app(RUN_PAGE, run=WEATHER_ANSWER_RUN)
    _ok(at)
    captions = [str(c.value).replace("\\", "") for c in at.caption]
    prompt_line = next(c for c in captions if c.startswith("4 messages, "))
    assert "(our estimate, chars/4)" in prompt_line
    steps = [e.label.replace("\\", "") for e in at.expander if e.label.startswith("Step 0")]
    assert steps == ["Step 0 · gpt-4o · 88 in / 24 out tokens (recorded)"]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Input tokens (recorded)"] == "88"


@pytest.mark.parametrize(("page", "label"), [(RUN_PAGE, "Run"), (COUNTERFACTUAL_PAGE, "Run"),
                                             (WHY_PAGE, "Run"), (TIMELINE_PAGE, "Marked run"),
                                             (COMPARE_PAGE, "Run B")])
def test_run_pickers_name_runs_by_time_and_question(
        imported: InMemoryStorage, app: Callable[..., AppTest], page: str, label: str) -> None:
    at = app(page, run=WEATHER_ANSWER_RUN, b=WEATHER_ANSWER_RUN, thread=WEATHER)
    _ok(at)
    picker = _picker(at, label)
    assert picker.value == WEATHER_ANSWER_RUN
    options = list(picker.options)
    assert options, page
    for option in options:
        assert TIME.search(option), option
    picked = picker.format_func(WEATHER_ANSWER_RUN)
    # (the runs offered are of one day: told apart by their time, the id kept whole)
    assert picked.startswith("08:00:02 · ") and picked.endswith(f" · {WEATHER_ANSWER_RUN}")
    # the step after the tool call: its question (cut at a word where the id needs room)
    assert f"“{QUESTION_WORDS[:28]}…”" in picked


def _table_with(at: AppTest, column: str) -> Table:
    """The Threads page's table with ``column`` (and a title column)."""
    for table in tables(at):
        if column in table.columns and "title" in table.columns:
            return table
    raise AssertionError(f"no table with a {column!r} column")


def test_thread_ids_in_the_threads_tables_are_links(imported: InMemoryStorage,
                                                    app: Callable[..., AppTest]) -> None:
    at = app(THREADS_PAGE, thread=WEATHER)
    _ok(at)
    table = _table_with(at, "open")
    links = [row["open"] for row in table.links]
    assert len(links) == len(table) and set(table["open"]) == {"open"}
    assert any(v.startswith("threads?") and v.endswith(f"&thread={WEATHER}") for v in links)
    assert all("db=" in v for v in links)
    # beside each link, the thread's id as stored
    assert WEATHER in table["thread"]


def test_compare_says_once_what_the_recordings_do_not_hold(
        imported: InMemoryStorage, app: Callable[..., AppTest]) -> None:
    at = app(COMPARE_PAGE, b=WEATHER_ANSWER_RUN)
    _ok(at)
    shown = "\n".join(_texts(at)).replace("\\", "")
    assert shown.count(NOT_HELD) == 1
    assert "does not say whether memory recalled anything" not in shown  # not per card
    assert "run A: not sent by the client; run B: sent by the client" in shown
    assert "(same settings)" not in shown  # neither recording holds settings to compare


def test_the_timeline_leaves_out_what_no_recording_holds(
        imported: InMemoryStorage, app: Callable[..., AppTest]) -> None:
    at = app(TIMELINE_PAGE, thread=WEATHER)
    _ok(at)
    table = tables(at)[0]
    assert "unknown" not in {v for c in table.columns for v in table[c]}
    assert table["total (our estimate)"] == ["17", "37"]
    assert {m.label: m.value for m in at.metric}["Largest prompt (our estimate)"] == "37"


def test_a_threads_runs_are_told_by_time_and_question(imported: InMemoryStorage,
                                                      app: Callable[..., AppTest]) -> None:
    at = app(THREADS_PAGE, thread=WEATHER)
    _ok(at)
    (box,) = [e for e in at.expander if e.label.startswith("Runs of this thread")]
    # under each run's link (one line, cut when longer), its time and question
    told = [str(c.value).replace("\\", "") for c in box.get("caption")]
    assert told == [f"2026-01-02 08:00:02 · “{QUESTION_WORDS}”",
                    f"2026-01-02 08:00:00 · “{QUESTION_WORDS}”"]


def test_a_run_pages_thread_picker_names_the_threads_question(
        imported: InMemoryStorage, app: Callable[..., AppTest]) -> None:
    at = app(RUN_PAGE, run=WEATHER_ANSWER_RUN)
    _ok(at)
    threads = _picker(at, "Thread")
    assert threads.value == WEATHER
    assert threads.format_func(WEATHER) == f"{WEATHER} · “{QUESTION_WORDS}”"
    # a thread whose recording holds no user message at all: its id alone
    assert "imp-6253ab18-1" in list(threads.options)


def test_first_words_are_short_whatever_the_text() -> None:
    from memory_core.analysis.views import QUESTION_CHARS, first_words

    assert first_words("  What is\nthe weather  ") == "What is the weather"
    assert first_words("one two three four five six seven eight nine") == (
        "one two three four five six seven eight…")
    blob = first_words("data:" + "A" * 5000)
    assert len(blob) == QUESTION_CHARS and blob.endswith("…")


def test_why_names_another_run_s_instructions_and_a_response_format(
        empty_db: InMemoryStorage, app: Callable[..., AppTest]) -> None:
    """The Why page on two agents' requests in one file: agent A's instructions, typed
    in agent B's run, are in another run's request (not stored, not given), and a
    structured-output schema's title reached the model with the request."""
    import json

    from memory_core.importers import import_text

    fmt = {"type": "json_schema", "json_schema": {"name": "verdict", "schema": {
        "title": "HomeworkOutput", "type": "object", "properties": {}}}}

    def line(system: str, **request: Any) -> str:
        return json.dumps({"request": {"model": "m", "messages": [
            {"role": "system", "content": system}, {"role": "user", "content": "Go"}],
            **request}, "response": {"model": "m", "choices": [
                {"message": {"role": "assistant", "content": "Done."}}]}})

    report = import_text(empty_db, line("You are agent A. Reply A.") + "\n"
                         + line("You are agent B. Reply B.", response_format=fmt),
                         name="agents.jsonl")
    run_a, run_b = report.runs_created
    at = app(WHY_PAGE, run=run_b, q="You are agent A")
    _ok(at)
    shown = "\n".join(_texts(at)).replace("\\", "")
    assert "not-stored" in shown
    assert f"it is word for word in the instructions of run {run_a}" in shown
    at = app(WHY_PAGE, run=run_b, q="HomeworkOutput")
    _ok(at)
    shown = "\n".join(_texts(at)).replace("\\", "")
    assert "sent-by-client" in shown
    assert "(not a stored message: sent with this run's request)" in shown
    assert "in the response format the request asked for" in shown


def test_an_imported_call_without_an_answer_is_not_said_to_have_failed(
        empty_db: InMemoryStorage, app: Callable[..., AppTest]) -> None:
    """A recorded 404 (the OpenTelemetry instrumentation's cassette): the inspector said
    "The run failed: …" as of a run this library ran; the recording holds no answer."""
    report = import_file(empty_db, FIXTURES / "real" / "otelv2-test_chat_completion_404.yaml")
    [rid] = report.runs_created
    at = app(RUN_PAGE, run=rid)
    assert not at.exception, at.exception
    [error] = [e.value.replace("\\", "") for e in at.error]
    assert error.startswith("No answer was recorded: ") and "model_not_found" in error, error
