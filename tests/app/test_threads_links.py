"""No dead ends between the Threads page and the run inspector (issue 36.4): every run
id a message card names is a link to the inspector, a thread lists its runs (links to
the inspector), and the inspector opened from a thread opens on that thread's run."""

from __future__ import annotations

import re
from collections.abc import Callable

from streamlit.testing.v1 import AppTest

from app import services
from app.components import RUN_PAGE, THREADS_PAGE
from memory_core.analysis import views
from memory_core.storage.inmemory import InMemoryStorage
from tests.app.fixture_db import NOTES_THREAD, OBS_RUN, RUN_1, THREAD, FixtureInfo
from tests.app.markdown import tables

Populated = tuple[InMemoryStorage, FixtureInfo]
MakeApp = Callable[..., AppTest]


def _shown(label: str) -> str:
    return re.sub(r"\\(.)", r"\1", label.replace("`", ""))


def _links(at: AppTest) -> list[tuple[str, str, str]]:
    """(label as shown, target page, query without ``db``) of each link in the page."""
    return [(_shown(el.proto.label), str(el.proto.page),
             el.proto.query_string.partition("&")[2]) for el in at.main.get("page_link")]


def _sidebar_query(at: AppTest, page: str) -> dict[str, str]:
    for el in at.sidebar.get("page_link"):
        if str(el.proto.page) == page:
            q = el.proto.query_string
            return dict(p.split("=", 1) for p in q.split("&")) if q else {}
    raise AssertionError(f"no sidebar link to {page}")


def _go(at: AppTest, page: str, **query: str) -> AppTest:
    """Open ``page`` in the same session with only ``db`` and ``query`` in its URL."""
    for key in [k for k in at.query_params if k != "db"]:
        del at.query_params[key]
    at.switch_page(page)
    at.query_params.update(query)
    at.run()
    assert not at.exception, at.exception
    return at


def _run_page_path(at: AppTest) -> str:
    """The page attribute the inspector's links carry (as the app names it)."""
    return next(str(el.proto.page) for el in at.sidebar.get("page_link")
                if "run_inspector" in str(el.proto.page) or str(el.proto.page) == "run")


def test_written_by_run_is_a_link_to_that_run(populated: Populated, app: MakeApp) -> None:
    storage, _ = populated
    at = app(THREADS_PAGE, thread=THREAD)
    assert not at.exception and not at.error
    written = {m.written_by_run for m in views.thread_messages(storage, THREAD).messages
               if m.written_by_run}
    assert RUN_1 in written
    links = _links(at)
    for run_id in written:
        assert any(label == f"written by run {run_id}" and query == f"run={run_id}"
                   for label, _, query in links), (run_id, links)
    # no run id left as bare text in a card's caption
    assert not [c for c in at.caption if "written by run" in c.value]


def test_a_thread_lists_its_runs_newest_first(populated: Populated, app: MakeApp) -> None:
    storage, _ = populated
    at = app(THREADS_PAGE, thread=THREAD)
    runs = [r for r in storage.runs.list_runs() if r.thread_id == THREAD]
    assert len(runs) >= 2
    (box,) = [e for e in at.expander if e.label == f"Runs of this thread ({len(runs)})"]
    listed = list(box.get("page_link"))
    assert [el.proto.query_string.partition("&")[2] for el in listed] == [
        f"run={r.run_id}" for r in sorted(runs, key=lambda r: r.started_at, reverse=True)]
    assert all(_shown(el.proto.label) == f"run {r.run_id}" + (
        "" if r.status == "completed" else f" · {r.status}")
               for el, r in zip(listed, sorted(runs, key=lambda r: r.started_at, reverse=True),
                                strict=True))


def test_the_inspector_opened_from_a_thread_opens_on_its_run(populated: Populated,
                                                            app: MakeApp) -> None:
    # the session looked at RUN_1 (on THREAD) before, then at another thread
    at = _go(app(RUN_PAGE, run=RUN_1), THREADS_PAGE, thread=NOTES_THREAD)
    # the sidebar's inspector link now carries that thread's run, not RUN_1
    assert _sidebar_query(at, _run_page_path(at))["run"] == OBS_RUN
    # and so does the inspector opened as the sidebar opens it
    _go(at, RUN_PAGE, run=OBS_RUN)
    assert next(s for s in at.selectbox if s.label == "Thread").value == NOTES_THREAD
    assert next(s for s in at.selectbox if s.label == "Run").value == OBS_RUN


def test_a_thread_of_the_current_run_keeps_it(populated: Populated, app: MakeApp) -> None:
    storage, _ = populated
    older = [r.run_id for r in storage.runs.list_runs() if r.thread_id == THREAD][0]
    at = _go(app(RUN_PAGE, run=older), THREADS_PAGE, thread=THREAD)
    assert _sidebar_query(at, _run_page_path(at))["run"] == older


def test_a_branch_links_the_thread_it_came_from(empty_db: InMemoryStorage,
                                                 app: MakeApp) -> None:
    """An imported conversation that parts from another (asked again, then otherwise)
    names on its page the thread it branched from, as a link; a clone whose source is
    erased says so instead of a link to nothing."""
    import json

    from memory_core.importers import import_text
    from memory_core.lifecycle.erasure import erase_thread

    def line(messages: list[str], answer: str) -> str:
        return json.dumps({"request": {"model": "m", "messages": [
            {"role": "user" if i % 2 == 0 else "assistant", "content": t}
            for i, t in enumerate(messages)]},
            "response": {"choices": [{"message": {"role": "assistant", "content": answer}}]}})
    report = import_text(empty_db, "\n".join([
        line(["When was Go released?"], "2009."),
        line(["When was Go released?", "2009.", "And Go 1.0?"], "2012."),
        line(["When was Go released?", "2009.", "Who designed Go?"], "Three people.")]))
    trunk, branch = report.threads_created
    at = _go(app(THREADS_PAGE), THREADS_PAGE, thread=branch)
    assert (f"branched from thread {trunk}", "threads", f"thread={trunk}") in _links(at)
    # the listing tells the branch from its trunk (both titled by the first question)
    [listed] = [t for t in tables(at) if "branched from" in t.columns]
    by_thread = {row["thread"]: row for row in listed.rows}
    assert by_thread[branch]["title"] == by_thread[trunk]["title"]
    assert (by_thread[branch]["branched from"], by_thread[trunk]["branched from"]) == (
        trunk, "")
    at = _go(at, THREADS_PAGE, thread=trunk)
    assert not [link for link in _links(at) if link[0].startswith("branched from")]

    empty_db.memory.clone_thread(trunk, "copy")
    erase_thread(empty_db, trunk)
    services.forget_reads()  # (the page's reads are cached a while)
    at = _go(at, THREADS_PAGE, thread="copy")
    assert not [link for link in _links(at) if link[0].startswith("branched from")]
    assert f"Branched from thread {trunk}, which is no longer stored." in [
        _shown(str(c.value)) for c in at.caption]
