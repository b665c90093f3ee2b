"""How every run picker names a run (the run inspector's, counterfactual's, why's,
timeline's, compare's, what-if's): when it started and the first words of what it was
asked, then its id — an imported run's id is a hash, which tells nobody which run it
is. Where runs of several threads are offered, the label names the thread too."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import streamlit as st

from app import services
from app.components import fmt_time, thread_label
from memory_core.analysis import views
from memory_core.errors import MemoryCoreError

QUESTIONS_READ = 500  # a picker's runs whose questions are read (the newest ones)
NO_QUESTION = "(no question recorded)"


@st.cache_data(ttl=services.CACHE_TTL_SECONDS, show_spinner=False)
def cached_run_questions(url: str, run_ids: tuple[str, ...]) -> dict[str, str]:
    """``views.run_questions`` of ``run_ids``, cached like the other reads."""
    return views.run_questions(services.get_services(url).storage, run_ids)


LABEL_CHARS = 64  # what a closed run picker shows of a label on a half-width page


def run_words(run: views.RunSummary, question: str | None, *, day: bool = True) -> str:
    """``<time> · “<first words>”``: a run as a person tells it from the others (the
    time without its date when not ``day``)."""
    when = fmt_time(run.started_at)
    if not day and when != "not recorded":
        when = when.split(" ", 1)[-1]
    return " · ".join([f"time {when}" if when == "not recorded" else when,
                       f"“{question}”" if question else NO_QUESTION])


def run_label(run: views.RunSummary, question: str | None, *,
              thread: str | None = None, day: bool = True) -> str:
    """``<time> · “<first words>” [· in <thread>] · <id>``, and the status when the run
    did not complete. Labels are plain text (a select box does not render Markdown).
    The question is cut shorter (at a word, "…") so that the label fits
    ``LABEL_CHARS``: a closed picker cuts its label's end, where the id is, which tells
    ``support-3-forgot`` from ``support-3-fixed``."""
    tail = [f"in {thread}"] if thread else []
    tail.append(run.run_id if run.status == "completed"
                else f"{run.run_id} ({run.status})")
    # the room the question has beside the time, the tail and their separators
    room = LABEL_CHARS - len(run_words(run, "?", day=day)) + 3 - len(" · ".join(["", *tail]))
    if question and len(question) + 2 > room:
        question = _cut(question, room - 2)
    return " · ".join([run_words(run, question, day=day), *tail])


def _cut(text: str, chars: int) -> str:
    """``text`` cut to at most ``chars`` characters at a word, with "…" (its first word
    alone, cut, when even that does not fit; a few characters at least)."""
    chars = max(chars, 16)
    if len(text) <= chars:
        return text
    head = text[:chars - 1].rstrip("…")
    if " " in head:
        head = head.rsplit(" ", 1)[0]
    return head.rstrip(" ,.;:") + "…"


def questions_of(url: str, run_ids: Sequence[str]) -> dict[str, str]:
    """The questions of ``run_ids`` (the newest ``QUESTIONS_READ``); none when they
    cannot be read (a label then keeps the time and the id)."""
    try:
        return cached_run_questions(url, tuple(list(run_ids)[-QUESTIONS_READ:]))
    except MemoryCoreError:  # (a damaged record, a store gone): labels without them
        return {}


def run_labeller(url: str, runs: Sequence[views.RunSummary], *,
                 threads: bool = False) -> Callable[[str], str]:
    """A ``format_func`` for a picker of ``runs`` (by id): ``run_label`` of each, its
    question read once for the picker. ``threads``: name each run's thread (its title's
    first words, else its id) — for pickers offering runs of several threads."""
    by_id = {r.run_id: r for r in runs}
    questions = questions_of(url, list(by_id))
    # runs of one day are told apart by their time alone: the id keeps its room
    days = {str(r.started_at)[:10] for r in runs if fmt_time(r.started_at) != "not recorded"}
    day = len(days) > 1
    titles: dict[str, str] = {}
    read: list[bool] = []  # the titles are read once, when a label first needs them

    def thread_of(run: views.RunSummary) -> str:
        if not read:
            read.append(True)
            try:
                titles.update({t.thread_id: views.first_words(t.title, 5)
                               for t in services.cached_thread_summaries(url, None)
                               if t.title})
            except Exception:  # noqa: BLE001 - named by id
                pass
        return titles.get(run.thread_id or "") or run.thread_id or "no thread"

    def label(run_id: str) -> str:
        run = by_id.get(run_id)
        if run is None:
            return run_id
        return run_label(run, questions.get(run_id),
                         thread=thread_of(run) if threads else None, day=day)

    return label


def thread_labeller(url: str, thread_ids: Sequence[str]) -> Callable[[str], str]:
    """A ``format_func`` for a thread picker: ``<id> · “<first words>”``, the question
    of the thread's first run (an imported thread's id is a hash; its title is not read
    here, as a run page does not read every thread's summary); the id alone without."""
    try:
        runs = services.cached_runs(url)
    except Exception:  # noqa: BLE001 - by id
        return str
    # (the runs on no thread share nothing: no question speaks for them)
    first = {t: at[0] for t in thread_ids
             if t != views.NO_THREAD and (at := runs.positions(t))}
    questions = questions_of(url, [runs[i].run_id for i in first.values()])

    def label(thread_id: str) -> str:
        at = first.get(thread_id)
        question = questions.get(runs[at].run_id) if at is not None else None
        return thread_label(thread_id, question) if question else thread_id

    return label
