"""How a run picker names a run: a closed picker shows a label's start, so the id at
its end must fit — the question is what gives way."""

from __future__ import annotations

from datetime import UTC, datetime

from app.run_labels import LABEL_CHARS, run_label
from memory_core.analysis.views import RunSummary

AT = datetime(2027, 7, 17, 9, 0, 42, tzinfo=UTC)
QUESTION = "Which tiles did we pick for the bathroom walls?"


def _run(run_id: str, status: str = "completed") -> RunSummary:
    return RunSummary(run_id=run_id, agent="a", thread_id="t", resource_id=None,
                      status=status, started_at=AT)


def test_a_long_question_gives_way_to_the_id() -> None:
    label = run_label(_run("home-tiles-nofilter"), QUESTION)
    assert len(label) <= LABEL_CHARS
    assert label.endswith(" · home-tiles-nofilter")
    # cut at a word, said to be cut
    assert label.startswith("2027-07-17 09:00:42 · “Which tiles did…” · ")


def test_a_short_question_is_whole_and_the_day_can_be_left_out() -> None:
    assert run_label(_run("r1"), "Hi there?") == "2027-07-17 09:00:42 · “Hi there?” · r1"
    told = run_label(_run("home-tiles"), QUESTION, day=False)
    assert told == "09:00:42 · “Which tiles did we pick for the…” · home-tiles"
    assert len(told) <= LABEL_CHARS


def test_the_thread_and_status_stay_whole_too() -> None:
    label = run_label(_run("run-7", "failed"), QUESTION, thread="budget-review")
    assert label.endswith(" · in budget-review · run-7 (failed)")
    assert "“Which tiles…”" in label  # a few words of the question at least


def test_an_id_too_long_to_fit_keeps_a_few_words_of_the_question() -> None:
    long_id = "imp-" + "d7cbcd279f5e" * 5
    label = run_label(_run(long_id), QUESTION)
    assert label.endswith(" · " + long_id)
    assert "“Which tiles…”" in label
