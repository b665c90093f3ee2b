"""The thread pickers of the run pages (run inspector, counterfactual, why-forgotten:
``components.pick_run``), the timeline and compare: an imported log holds tens of
thousands of threads with runs, and a picker of them all was ~1 MB sent to the browser
on every script run. Like the Threads page, each offers the newest
``views.THREADS_LISTED`` threads with runs and the thread it opens on, and finds the
others by id or title."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from app.components import (
    COMPARE_PAGE,
    COUNTERFACTUAL_PAGE,
    NO_THREAD,
    RUN_PAGE,
    THREADS_PAGE,
    TIMELINE_PAGE,
    WHY_PAGE,
    escape_md,
)
from memory_core.analysis import views
from memory_core.composition.memory import AgentMemory
from memory_core.embedding.hashing import HashingEmbedder
from memory_core.models.scripted import ScriptedModel
from memory_core.runs.runner import Agent, Runner
from memory_core.storage.inmemory import InMemoryStorage
from tests.app.conftest import served
from tests.app.fixture_db import fixed_clock

MakeApp = Callable[..., AppTest]
LISTED = 3
THREADS = [f"t{i}" for i in range(8)]  # t0 oldest, t7 newest
# t1 has two runs (the one thread compare opens on by itself), every other thread one
RUNS = {"t0": ["r0"], "t1": ["r1a", "r1b"], **{f"t{i}": [f"r{i}"] for i in range(2, 8)}}


def _title(i: int) -> str:
    return f"topic {'odd' if i % 2 else 'even'} {i}"


def _build(storage: InMemoryStorage, *, loose: bool = False) -> None:
    memory = AgentMemory(storage, embed=HashingEmbedder(16), recent_n=4)
    runner = Runner(storage, {"a": Agent("a", "Be brief.", ScriptedModel(["ok"] * 20))},
                    memory=memory)
    for i, thread in enumerate(THREADS):
        for n, run_id in enumerate(RUNS[thread]):
            # the first user text titles the thread: ids hold no "odd" or "even"
            runner.run("a", run_id=run_id, thread_id=thread,
                       prompt=_title(i) if n == 0 else f"and again {i}")
    if loose:  # the newest run, on no thread
        runner.run("a", run_id="loose", prompt="a question on no thread")


@pytest.fixture()
def many(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemoryStorage]:
    """Eight threads with runs while the pickers offer the newest three."""
    monkeypatch.setattr(views, "THREADS_LISTED", LISTED)
    storage = InMemoryStorage(clock=fixed_clock())
    _build(storage)
    yield from served(storage, monkeypatch)


@pytest.fixture()
def many_and_loose(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemoryStorage]:
    """``many`` and a run on no thread, the newest."""
    monkeypatch.setattr(views, "THREADS_LISTED", LISTED)
    storage = InMemoryStorage(clock=fixed_clock())
    _build(storage, loose=True)
    yield from served(storage, monkeypatch)


def _ok(at: AppTest) -> None:
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]


def _select(at: AppTest, label: str) -> Any:
    return next(w for w in at.selectbox if w.label == label)


def _threads(at: AppTest) -> list[str]:
    """The threads the Thread picker offers (its options, less any " (n runs)" or
    " · “<first run's question>”")."""
    return [o.split(" (")[0].split(" · ")[0] if not o.startswith("(") else o
            for o in _select(at, "Thread").options]


def _find(at: AppTest, text: str) -> None:
    at.text_input(key="find-thread").set_value(text).run()
    _ok(at)


def _captions(at: AppTest) -> list[str]:
    return [c.value for c in at.caption]


# -- the run pages: components.pick_run ----------------------------------------------------
@pytest.mark.parametrize("page", [RUN_PAGE, COUNTERFACTUAL_PAGE, WHY_PAGE])
def test_the_run_pages_offer_the_newest_threads_and_the_fresh_default(
        many: InMemoryStorage, app: MakeApp, page: str) -> None:
    """Opened fresh, a run page shows the newest run of the first thread (t0, the
    oldest: not among the newest) and offers it beside the newest three."""
    at = app(page)
    _ok(at)
    assert _threads(at) == ["t0", "t5", "t6", "t7"]
    assert _select(at, "Thread").value == "t0"
    assert _select(at, "Run").value == "r0"
    assert "run" not in at.query_params  # the fresh default stays out of the URL
    assert escape_md("8 threads with runs; the newest 3 are offered below") in _captions(at)


def test_the_run_inspector_finds_a_thread_by_id_or_title(many: InMemoryStorage,
                                                         app: MakeApp) -> None:
    at = app(RUN_PAGE, run="r7")
    _ok(at)
    assert _threads(at) == ["t5", "t6", "t7"]
    _find(at, "EVEN")  # in the titles only, any case
    assert _threads(at) == ["t2", "t4", "t6", "t7"]  # the newest three, and the open one
    assert _select(at, "Thread").value == "t7" and _select(at, "Run").value == "r7"
    assert at.query_params["find"] == "EVEN"
    assert escape_md("4 of the 8 threads with runs have 'EVEN' in their id or title; the "
                     "newest 3 are offered below") in _captions(at)
    _find(at, "t1")
    assert _threads(at) == ["t1", "t7"]
    _select(at, "Thread").set_value("t1").run()
    _ok(at)
    assert _select(at, "Run").value == "r1b"  # the thread's newest run
    assert at.query_params["run"] == "r1b"
    _find(at, "nothing like it")
    assert _threads(at) == ["t1"]  # the open thread stays
    assert escape_md("None of the 8 threads with runs has 'nothing like it' in its id or title") in _captions(at)


@pytest.mark.parametrize(("page", "run_label"), [(RUN_PAGE, "Run"),
                                                  (TIMELINE_PAGE, "Marked run")])
def test_a_run_of_an_old_thread_opens_with_its_thread(many: InMemoryStorage, app: MakeApp,
                                                      page: str, run_label: str) -> None:
    at = app(page, run="r1a")
    _ok(at)
    assert _threads(at) == ["t1", "t5", "t6", "t7"]
    assert (_select(at, "Thread").value, _select(at, run_label).value) == ("t1", "r1a")
    assert at.query_params["run"] == "r1a"
    assert "find" not in at.query_params


def test_runs_on_no_thread_are_still_offered(many_and_loose: InMemoryStorage,
                                             app: MakeApp) -> None:
    at = app(RUN_PAGE)
    _ok(at)
    # "(no thread)" is among the newest three here, and the first: the fresh default
    assert _threads(at) == [NO_THREAD, "t6", "t7"]
    assert (_select(at, "Thread").value, _select(at, "Run").value) == (NO_THREAD, "loose")
    compare = app(COMPARE_PAGE)
    _ok(compare)
    assert NO_THREAD in _threads(compare)
    assert len(_threads(compare)) <= LISTED + 1


# -- the timeline ------------------------------------------------------------------------
def test_the_timeline_offers_the_newest_threads_and_finds_the_rest(
        many: InMemoryStorage, app: MakeApp) -> None:
    at = app(TIMELINE_PAGE)
    _ok(at)
    assert _select(at, "Thread").options == ["t0 (1 run)", "t5 (1 run)", "t6 (1 run)",
                                             "t7 (1 run)"]
    assert _select(at, "Thread").value == "t0"  # the first thread, as before
    assert "thread" not in at.query_params
    assert escape_md("8 threads with runs; the newest 3 are offered below") in _captions(at)
    _find(at, "odd")
    assert _threads(at) == ["t0", "t3", "t5", "t7"]
    assert at.query_params["find"] == "odd"
    _select(at, "Thread").set_value("t3").run()
    _ok(at)
    assert _select(at, "Marked run").value == "r3"
    assert at.query_params["thread"] == "t3"


def test_the_timeline_opens_an_old_thread(many: InMemoryStorage, app: MakeApp) -> None:
    at = app(TIMELINE_PAGE, thread="t2")
    _ok(at)
    assert _threads(at) == ["t2", "t5", "t6", "t7"]
    assert (_select(at, "Thread").value, _select(at, "Marked run").value) == ("t2", "r2")


# -- compare -----------------------------------------------------------------------------
def test_compare_offers_the_newest_threads_and_finds_the_rest(many: InMemoryStorage,
                                                              app: MakeApp) -> None:
    at = app(COMPARE_PAGE)
    _ok(at)
    # on its own, compare opens on the newest thread with two runs: t1, not a newest one
    assert _threads(at) == ["t1", "t5", "t6", "t7"]
    assert _select(at, "Thread").value == "t1"
    assert (_select(at, "Run A").value, _select(at, "Run B").value) == ("r1a", "r1b")
    assert escape_md("8 threads with runs; the newest 3 are offered below") in _captions(at)
    _find(at, "EVEN")
    assert _threads(at) == ["t1", "t2", "t4", "t6"]
    assert at.query_params["find_thread"] == "EVEN"
    assert "find" not in at.query_params  # that one finds a run of another thread
    _select(at, "Thread").set_value("t4").run()
    _ok(at)
    assert _select(at, "Run B").value == "r4"


def test_compare_opens_an_old_threads_runs_with_their_thread(many: InMemoryStorage,
                                                             app: MakeApp) -> None:
    at = app(COMPARE_PAGE, b="r2")
    _ok(at)
    assert _threads(at) == ["t2", "t5", "t6", "t7"]
    assert (_select(at, "Thread").value, _select(at, "Run B").value) == ("t2", "r2")
    at = app(COMPARE_PAGE, a="r0", b="r2")
    _ok(at)
    assert _select(at, "Thread").value == "t2"
    assert (_select(at, "Run A").value, _select(at, "Run B").value) == ("r0", "r2")


# -- the listing ---------------------------------------------------------------------------
def test_offered_threads_are_the_newest_found_and_the_kept() -> None:
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    runs = views.Runs([
        views.RunSummary(run_id=f"r{i}", agent="a", thread_id=t, resource_id=None,
                         status="completed", started_at=t0 + timedelta(minutes=i),
                         finished_at=None)
        for i, t in enumerate(["b", None, "a", "c", "b", "d"])])
    threads = views.threads_with_runs(runs)
    assert threads == {"b": 4, NO_THREAD: 1, "a": 2, "c": 3, "d": 5}  # its newest run
    assert NO_THREAD not in views.threads_with_runs(runs, unthreaded=False)
    newest = views.offered_threads(threads, {}, "", limit=2)
    assert (newest.offered, newest.listed, newest.matched, newest.total) == (["b", "d"], 2, 5, 5)
    kept = views.offered_threads(threads, {}, "", keep=["a", None, "gone"], limit=2)
    assert kept.offered == ["a", "b", "d"]
    found = views.offered_threads(threads, {"a": "Blue sky", "c": "blue sea"}, " BLUE ",
                                  limit=1)
    assert (found.offered, found.matched) == (["c"], 2)
    by_rank = views.offered_threads(threads, {}, "", keep=["a"], limit=2, newest_first=True)
    assert by_rank.offered == ["d", "b", "a"]


# -- why-forgotten's message thread: the run's thread and its owner's ----------------------
@pytest.fixture()
def one_owner(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemoryStorage]:
    """Eight threads of one resource (a user of a support bot), one run each."""
    monkeypatch.setattr(views, "THREADS_LISTED", LISTED)
    storage = InMemoryStorage(clock=fixed_clock())
    memory = AgentMemory(storage, embed=HashingEmbedder(16), recent_n=4)
    runner = Runner(storage, {"a": Agent("a", "Be brief.", ScriptedModel(["ok"] * 20))},
                    memory=memory)
    for i, thread in enumerate(THREADS):
        runner.run("a", run_id=f"r{i}", thread_id=thread, resource_id="u", prompt=_title(i))
    yield from served(storage, monkeypatch)


def _message_threads(at: AppTest) -> list[str]:
    return [o.split(" · ")[0] for o in _select(at, "Message thread").options]


def test_why_offers_the_runs_thread_and_the_newest_of_its_owners(one_owner: InMemoryStorage,
                                                                app: MakeApp) -> None:
    at = app(WHY_PAGE, run="r0")  # the oldest thread's run
    _ok(at)
    assert _message_threads(at) == ["t0", "t7", "t6"]  # its own, then the newest others
    assert _select(at, "Message thread").value == "t0"
    assert escape_md("8 threads the run could have been given; the newest 3 are offered "
                     "below") in _captions(at)
    at.text_input(key="find-message-thread").set_value("odd").run()
    _ok(at)
    assert _message_threads(at) == ["t0", "t7", "t5", "t3"]
    assert escape_md("4 of the 8 threads the run could have been given have 'odd' in their "
                     "id or title; the newest 3 are offered below") in _captions(at)
    assert at.query_params["find_message_thread"] == "odd"
    assert "find" not in at.query_params  # the run picker's own find box is another
    _select(at, "Message thread").set_value("t3").run()
    _ok(at)
    assert [o.split(" · ")[0] for o in _select(at, "Message").options] == ["#0", "#1"]
    assert at.query_params["thread"] == "t3"


def test_every_thread_picker_names_a_thread_alike(many: InMemoryStorage,
                                                  app: MakeApp) -> None:
    """The Threads page, the run pages and Why forgotten's message thread name a thread
    the same way (``<id> · “<first words>”``): three labels for one thread read as
    three threads."""
    said = "t7 · “topic odd 7”"
    threads = app(THREADS_PAGE, thread="t7")
    _ok(threads)
    assert _select(threads, "Thread").format_func("t7") == said
    run = app(RUN_PAGE, run="r7")
    _ok(run)
    assert _select(run, "Thread").format_func("t7") == said
    why = app(WHY_PAGE, run="r7")
    _ok(why)
    assert _select(why, "Message thread").format_func("t7") == said
