"""Calls recorded to the whole second keep the file's order wherever runs are listed
(issue 34.5): runs are listed by time, then run id — a hash — so a cassette's third
call, recorded in the same second as its second, was listed before it."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner

from memory_core.analysis import views
from memory_core.cli import app
from memory_core.importers import import_file, import_text
from memory_core.storage.duckdb import DuckDBStorage
from memory_core.storage.inmemory import InMemoryStorage

REAL = Path(__file__).parent / "fixtures" / "imports" / "real"
# three chat completions; the second and third were both created at 00:24:07
CREWAI = REAL / "crewai-test_tool_spans_nested_under_agent_span.yaml"
SECOND = datetime(2026, 3, 5, 0, 24, 7, tzinfo=UTC)


def test_a_real_cassettes_calls_of_one_second_are_listed_in_file_order(tmp_path: Path) -> None:
    db = tmp_path / "crewai.duckdb"
    with DuckDBStorage(db) as s:
        report = import_file(s, CREWAI)
        in_file = report.runs_created
        assert len(in_file) == 3
        started = [s.runs.require_run(r).started_at for r in in_file]
        assert [r.run_id for r in s.runs.list_runs()] == in_file
        assert [r.run_id for r in views.list_runs(s)] == in_file
        assert [r.run_id for r in views.Runs(views.list_runs(s))] == in_file
    # the times stay in the seconds recorded; only the third moves, a microsecond
    assert [t.replace(microsecond=0) for t in started[1:]] == [SECOND, SECOND]
    assert started[1] == SECOND and started[2] == SECOND + timedelta(microseconds=1)
    assert ("interaction 3", "recorded in the same second as interaction 2, which the file "
            "lists before it; placed 1 µs into that second, after it") in [
        (k.where, k.reason) for k in report.skipped]
    out = CliRunner().invoke(app, ["runs", "--db", str(db)])
    assert out.exit_code == 0, out.output
    listed = [line.split()[0] for line in out.output.splitlines()[1:]]
    assert listed == in_file


def _call(n: int, date: str | None) -> dict[str, Any]:
    """An Anthropic call (its body has no time: the Date header is the only one)."""
    request = {"model": "claude-sonnet-4-5", "max_tokens": 64,
               "messages": [{"role": "user", "content": f"question {n}"}]}
    answer = {"type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
              "content": [{"type": "text", "text": f"answer {n}"}],
              "stop_reason": "end_turn", "usage": {"input_tokens": 3, "output_tokens": 1}}
    headers = {"Content-Type": ["application/json"]}
    if date is not None:
        headers["Date"] = [date]
    return {"request": {"method": "POST", "uri": "https://api.anthropic.com/v1/messages",
                        "body": json.dumps(request), "headers": {}},
            "response": {"status": {"code": 200}, "headers": headers,
                         "body": {"string": json.dumps(answer)}}}


def _imported(text: str, name: str) -> tuple[list[str], list[datetime], list[str]]:
    s = InMemoryStorage()
    report = import_text(s, text, name=name)
    times = [s.runs.require_run(r).started_at for r in report.runs_created]
    return report.runs_created, times, [r.run_id for r in views.list_runs(s)]


def test_many_calls_of_one_second_and_an_undated_one_keep_their_order() -> None:
    date = "Tue, 03 Feb 2026 15:19:54 GMT"
    at = datetime(2026, 2, 3, 15, 19, 54, tzinfo=UTC)
    calls = [_call(0, date), _call(1, date), _call(2, None), _call(3, date),
             _call(4, "Tue, 03 Feb 2026 15:19:55 GMT"), _call(5, date)]
    in_file, times, listed = _imported(yaml.safe_dump({"interactions": calls}), "c.yaml")
    # 0 as recorded; 1 a µs into the second; the undated 2 just after it; 3 and 5 after
    # the latest call of 15:19:54 before them: inside the second each was recorded in
    us = timedelta(microseconds=1)
    assert times == [at, at + us, at + 2 * us, at + 3 * us, at + timedelta(seconds=1),
                     at + 4 * us]
    # 5 is listed before 4: the recording puts it in the second before 4's
    assert listed == [*in_file[:4], in_file[5], in_file[4]]


def test_a_time_with_a_finer_part_is_kept_as_recorded() -> None:
    def entry(n: int, started: str) -> dict[str, Any]:
        request = {"model": "claude-sonnet-4-5", "max_tokens": 64,
                   "messages": [{"role": "user", "content": f"question {n}"}]}
        answer = {"type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                  "content": [{"type": "text", "text": f"answer {n}"}],
                  "stop_reason": "end_turn", "usage": {"input_tokens": 3, "output_tokens": 1}}
        return {"startedDateTime": started,
                "request": {"method": "POST", "url": "https://api.anthropic.com/v1/messages",
                            "headers": [], "postData": {"mimeType": "application/json",
                                                        "text": json.dumps(request)}},
                "response": {"status": 200, "headers": [], "content": {
                    "mimeType": "application/json", "text": json.dumps(answer)}}}

    started = ["2026-02-03T15:19:54.123Z", "2026-02-03T15:19:54.123Z", "2026-02-03T15:19:54Z"]
    har = {"log": {"version": "1.2", "creator": {"name": "t", "version": "1"},
                   "entries": [entry(n, t) for n, t in enumerate(started)]}}
    _, times, _ = _imported(json.dumps(har), "c.har")
    ms = datetime(2026, 2, 3, 15, 19, 54, 123000, tzinfo=UTC)
    # two calls of one millisecond: the recording has a finer part, so they are as
    # recorded; a call to the second after them is placed after the latest
    assert times == [ms, ms, ms + timedelta(microseconds=1)]


def test_a_call_dated_before_one_the_file_lists_earlier_is_said_once_for_the_file() -> None:
    early, late = "Tue, 03 Feb 2026 15:19:50 GMT", "Tue, 03 Feb 2026 15:19:55 GMT"
    calls = [_call(0, late), _call(1, early), _call(2, early), _call(3, late)]
    s = InMemoryStorage()
    report = import_text(s, yaml.safe_dump({"interactions": calls}), name="c.yaml")
    said = [n.reason for n in report.skipped if n.where == "file"]
    assert said == ["interaction 2 (and 1 more call) is recorded before a call the file "
                    "lists earlier (2026-02-03T15:19:50+00:00, before interaction 1 at "
                    "2026-02-03T15:19:55+00:00): runs are listed by their recorded times, "
                    "not the file's order"]
    # listed by time, as the note says
    assert [r.run_id for r in views.list_runs(s)][:2] == report.runs_created[1:3]
    # in the file's order, or calls of one second: nothing to say
    for ordered in ([_call(0, early), _call(1, late)], [_call(0, late), _call(1, late)]):
        again = import_text(InMemoryStorage(), yaml.safe_dump({"interactions": ordered}),
                            name="c.yaml")
        assert not [n for n in again.skipped if n.where == "file"]


def test_a_file_that_dates_no_call_says_so_and_its_times_show_as_not_recorded(
        tmp_path: Path) -> None:
    calls = [_call(0, None), _call(1, None)]
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"interactions": calls}), encoding="utf-8")
    db = f"duckdb:///{tmp_path / 'x.duckdb'}"
    done = CliRunner().invoke(app, ["import", str(path), "--db", db])
    assert done.exit_code == 0, done.output
    assert "no call in the file is dated" in done.output
    listed = CliRunner().invoke(app, ["runs", "--db", db]).output.splitlines()
    assert len(listed) == 3 and all(line.endswith("not recorded") for line in listed[1:])
    assert "1970" not in "\n".join(listed)
    # one dated call is enough: the others are placed beside it, with a note each
    report = import_text(InMemoryStorage(), yaml.safe_dump({"interactions": [
        _call(0, "Tue, 03 Feb 2026 15:19:54 GMT"), _call(1, None)]}), name="c.yaml")
    assert not report.undated


def test_a_call_of_an_earlier_second_says_which_call_it_is_placed_after() -> None:
    """Calls of seconds t, t, t+1, t (paper-qa's cassette): the last is placed after the
    second — in its own second — and before the third; its note named no call and said
    "to keep the file's order" beside the file's note that the order is not kept: it
    names the call it follows, and the file's note says the times disagree."""
    def line(n: int, created: int) -> str:
        return json.dumps({"request": {"model": "m", "messages": [
            {"role": "user", "content": f"question {n}"}]}, "response": {
            "created": created, "choices": [{"message": {"role": "assistant",
                                                          "content": f"answer {n}"}}]}})
    t = 1_771_550_206
    s = InMemoryStorage()
    report = import_text(s, "\n".join(line(n, c) for n, c in
                                      enumerate((t, t, t + 1, t), start=1)))
    notes = [f"{k.where}: {k.reason}" for k in report.skipped]
    assert "line 4: recorded in the same second as line 2, which the file lists before it; " \
           "placed 2 µs into that second, after it" in notes
    assert any(n.startswith("file: line 4 is recorded before a call the file lists "
                            "earlier") for n in notes), notes
    listed = [r.run_id for r in s.runs.list_runs()]
    first, second, third, fourth = report.runs_created
    assert listed == [first, second, fourth, third]
