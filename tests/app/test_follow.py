"""AppTest tests of navigation (issue 15): the current run follows the user from page to
page, the inspector's action bar opens each analysis page on its run, ids that do not
exist are "not found" (never another run or thread), message links land on their card,
and the database in use is named and Refresh says what it reloaded."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from app import services
from app.components import (
    COMPARE_PAGE,
    COUNTERFACTUAL_PAGE,
    RUN_PAGE,
    START_PAGE,
    STORY_PAGE,
    THREADS_PAGE,
    TIMELINE_PAGE,
    WHATIF_PAGE,
    WHY_PAGE,
)
from memory_core.analysis import views
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import RunRecord
from tests.app.fixture_db import (
    FAQ_RUNS,
    LONG_THREAD,
    LOWER_RUN,
    RESOURCE,
    RUN_1,
    RUN_2,
    T0,
    THREAD,
    FixtureInfo,
)
from tests.app.markdown import raw_html, tables
from tests.app.test_analysis_pages import timeline_picture
from tests.app.test_pages import shown, two_served  # noqa: F401 - a fixture

Populated = tuple[InMemoryStorage, FixtureInfo]
MakeApp = Callable[..., AppTest]
# RUN_2 is neither the first nor the newest run of its thread, nor on the thread any
# page picks by itself: a page showing it shows it because it followed the user
FOLLOWED = RUN_2


def _select(at: AppTest, label: str) -> Any:
    return next(w for w in at.selectbox if w.label == label)


def _name() -> str:
    return next(iter(services.served().databases))


def _go(at: AppTest, page: str) -> AppTest:
    """Switch page as the sidebar does: the URL keeps only the database."""
    for key in [k for k in at.query_params if k != "db"]:
        del at.query_params[key]
    at.switch_page(page)
    at.run()
    assert not at.exception, at.exception
    return at


def _links(at: AppTest) -> dict[str, Any]:
    return {el.proto.label: el.proto for el in at.main.get("page_link")}


def _page_of(proto: Any) -> str:
    return str(proto.page)


def test_the_run_defaults_differ_without_a_current_run(populated: Populated,
                                                       app: MakeApp) -> None:
    """The premise of the tests below: opened fresh, no page lands on FOLLOWED."""
    at = app(COUNTERFACTUAL_PAGE)
    assert _select(at, "Run").value != FOLLOWED
    at = app(TIMELINE_PAGE)
    assert _select(at, "Thread").value != THREAD


@pytest.mark.parametrize("page", [COUNTERFACTUAL_PAGE, WHY_PAGE])
def test_run_pages_open_on_the_current_run(populated: Populated, app: MakeApp,
                                           page: str) -> None:
    at = app(RUN_PAGE, run=FOLLOWED)
    assert _select(at, "Run").value == FOLLOWED
    _go(at, page)
    assert _select(at, "Thread").value == THREAD
    assert _select(at, "Run").value == FOLLOWED
    assert at.query_params["run"] == FOLLOWED  # and it is in the URL again


def test_compare_opens_on_the_current_run_and_the_one_before(populated: Populated,
                                                             app: MakeApp) -> None:
    at = _go(app(RUN_PAGE, run=FOLLOWED), COMPARE_PAGE)
    assert _select(at, "Run B").value == FOLLOWED
    assert _select(at, "Run A").value == RUN_1  # the run before it on its thread
    assert (at.query_params["a"], at.query_params["b"]) == (RUN_1, FOLLOWED)
    # run B becomes the current run: back on the inspector, it is shown
    _select(at, "Run B").set_value(LOWER_RUN).run()
    _go(at, RUN_PAGE)
    assert _select(at, "Run").value == LOWER_RUN


def test_timeline_opens_on_the_current_runs_thread_with_it_marked(populated: Populated,
                                                                  app: MakeApp) -> None:
    at = _go(app(RUN_PAGE, run=FOLLOWED), TIMELINE_PAGE)
    assert _select(at, "Thread").value == THREAD
    assert _select(at, "Marked run").value == FOLLOWED
    picture = timeline_picture(at)
    assert picture is not None
    index = [r.run_id for r in populated[0].runs.list_runs(thread_id=THREAD)].index(FOLLOWED)
    assert [e.get("data-mark") for e in picture.iter() if e.get("data-mark")] == [
        str(index), "label"]
    assert any(e.text == f"this run: {FOLLOWED}" for e in picture.iter())
    # marking another run makes it the current run
    _select(at, "Marked run").set_value(RUN_1).run()
    _go(at, COUNTERFACTUAL_PAGE)
    assert _select(at, "Run").value == RUN_1


def test_the_current_run_is_per_database_session(populated: Populated,
                                                 app: MakeApp) -> None:
    at = app(RUN_PAGE, run=FOLLOWED)
    assert at.session_state[f"current-run:{_name()}"] == FOLLOWED
    fresh = app(COUNTERFACTUAL_PAGE)  # another browser session starts without one
    assert _select(fresh, "Run").value != FOLLOWED


def test_action_bar_links_open_each_page_on_the_run(populated: Populated,
                                                    app: MakeApp) -> None:
    at = app(RUN_PAGE, run=FOLLOWED)
    links = _links(at)
    db = _name()
    assert links["Counterfactual"].query_string == f"db={db}&run={FOLLOWED}"
    assert _page_of(links["Counterfactual"]) == "counterfactual"
    assert links["Why forgotten"].query_string == f"db={db}&run={FOLLOWED}"
    assert _page_of(links["Why forgotten"]) == "why"
    compare = links["Compare with previous run"]
    assert compare.query_string == f"db={db}&a={RUN_1}&b={FOLLOWED}" and not compare.disabled
    assert _page_of(compare) == "compare"
    timeline = links["Timeline"]
    assert timeline.query_string == f"db={db}&thread={THREAD}&run={FOLLOWED}"
    assert _page_of(timeline) == "timeline" and not timeline.disabled
    # each lands on the run: open the link's own query on its page
    for label, page, widget in (("Counterfactual", COUNTERFACTUAL_PAGE, "Run"),
                                ("Why forgotten", WHY_PAGE, "Run"),
                                ("Compare with previous run", COMPARE_PAGE, "Run B"),
                                ("Timeline", TIMELINE_PAGE, "Marked run")):
        query = dict(p.split("=", 1) for p in links[label].query_string.split("&"))
        landed = app(page, **query)
        assert not landed.exception and not landed.error
        assert _select(landed, widget).value == FOLLOWED, label


def test_compare_link_is_disabled_on_a_threads_first_run(populated: Populated,
                                                         app: MakeApp) -> None:
    at = app(RUN_PAGE, run=RUN_1)
    compare = _links(at)["Compare with previous run"]
    assert compare.disabled
    assert "first run of its thread" in compare.help


@pytest.mark.parametrize("page", [RUN_PAGE, COUNTERFACTUAL_PAGE, WHY_PAGE, TIMELINE_PAGE])
def test_an_unknown_run_is_not_found_never_another(populated: Populated, app: MakeApp,
                                                   page: str) -> None:
    at = app(RUN_PAGE, run=FOLLOWED)  # a current run exists: it must not stand in
    for key in list(at.query_params):
        del at.query_params[key]
    at.query_params.update({"db": _name(), "run": "ghost"})
    at.switch_page(page)
    at.run()
    assert not at.exception
    assert [shown(e.value) for e in at.error] == [
        f"Run 'ghost' not found in database '{_name()}'."]
    assert all(w.label not in ("Run", "Marked run") for w in at.selectbox)
    assert timeline_picture(at) is None and not at.text
    assert at.query_params["run"] == "ghost"  # the URL is not rewritten
    # the search narrows the runs offered, by run id or thread
    at.text_input[0].set_value("faq").run()
    offered = [shown(el.proto.label) for el in at.main.get("page_link")]
    assert offered and all("faq" in o for o in offered)
    assert {o.split(" · ")[0] for o in offered} == set(FAQ_RUNS)
    assert at.query_params["run"] == "ghost"


def test_an_unknown_thread_is_not_found_with_a_search(populated: Populated,
                                                      app: MakeApp) -> None:
    at = app(thread="ghost-thread")
    assert [shown(e.value) for e in at.error] == [
        f"Thread 'ghost-thread' not found in database '{_name()}'."]
    assert at.query_params["thread"] == "ghost-thread" and not at.text
    at.text_input[0].set_value("long").run()
    assert [el.proto.query_string for el in at.main.get("page_link")] == [
        f"db={_name()}&thread={LONG_THREAD}"]
    timeline = app(TIMELINE_PAGE, thread="ghost-thread")
    assert timeline.error and timeline_picture(timeline) is None
    assert timeline.query_params["thread"] == "ghost-thread"


def test_a_message_link_lands_on_its_card(populated: Populated, app: MakeApp) -> None:
    at = app(thread=LONG_THREAD, seq="77")
    scripts = [el.proto.body for el in raw_html(at)]
    assert len(scripts) == 1
    assert ".st-key-msg-77" in scripts[0] and "scrollIntoView" in scripts[0]
    assert "msg-78" not in scripts[0]
    ranged = app(thread=LONG_THREAD, seq="10", to="12")
    body = raw_html(ranged)[0].proto.body
    assert all(f".st-key-msg-{n}" in body for n in (10, 11, 12))
    assert raw_html(app(thread=LONG_THREAD)) == []  # no link, no scrolling
    # a range past its first page's end (a summary's source, say) is shown whole
    crossing = app(thread=LONG_THREAD, seq="15", to="44")
    body = raw_html(crossing)[0].proto.body
    assert all(f".st-key-msg-{n}" in body for n in range(15, 45))
    assert "(the linked range)" in " ".join(c.value for c in crossing.main.caption)


def test_the_database_is_named_and_kept_in_the_url(populated: Populated,
                                                   app: MakeApp) -> None:
    for page in (None, RUN_PAGE, COMPARE_PAGE, TIMELINE_PAGE):
        at = app(page)
        assert any(_name() in c.value and "In use" in c.value for c in at.sidebar.caption)
        assert at.query_params["db"] == _name()
        assert all(el.proto.query_string.startswith(f"db={_name()}")
                   for el in at.get("page_link"))


def _counts(at: AppTest) -> str:
    return shown(at.toast[0].value) if at.toast else ""


def test_refresh_says_what_it_reloaded(populated: Populated, app: MakeApp) -> None:
    storage, _ = populated
    at = app(RUN_PAGE)
    refresh = next(b for b in at.sidebar.button if b.label == "Refresh")
    refresh.click().run()
    assert _counts(at).startswith(f"Reloaded {_name()}: nothing new")
    storage.memory.create_thread("brand-new", resource_id=RESOURCE)
    for n in (1, 2):
        storage.runs.start_run(RunRecord(run_id=f"run-new-{n}", agent="support",
                                         thread_id="brand-new", resource_id=RESOURCE,
                                         started_at=T0 + timedelta(hours=5 + n)))
    next(b for b in at.sidebar.button if b.label == "Refresh").click().run()
    assert not at.exception
    assert _counts(at) == f"Reloaded {_name()}: 2 new runs, 1 new thread"
    at.run()
    assert not at.toast  # said once


def test_reload_message_counts() -> None:
    c = services.DatabaseCounts
    assert services.reload_message("d", c(5, 2, 1), c(8, 3, 1)) == (
        "Reloaded d: 3 new runs, 1 new thread")
    assert services.reload_message("d", c(5, 2, 1), c(4, 2, 2)) == (
        "Reloaded d: 1 run fewer, 1 new database")
    assert services.reload_message("d", None, c(4, 2, 1)) == "Reloaded d: 4 runs, 2 threads."
    assert "cannot be read" in services.reload_message("d", c(1, 1, 1), None)


def test_previous_run_is_the_one_before_on_its_thread(populated: Populated) -> None:
    runs = views.list_runs(populated[0])
    assert services.previous_run(runs, RUN_2) == RUN_1
    assert services.previous_run(runs, LOWER_RUN) == RUN_2
    assert services.previous_run(runs, RUN_1) is None
    assert services.previous_run(runs, "ghost") is None


def test_threads_page_is_reachable_by_its_path(populated: Populated, app: MakeApp) -> None:
    at = app(THREADS_PAGE, thread=THREAD)
    assert not at.exception and at.title[0].value == "Threads"


def test_the_database_choice_is_named_kept_and_has_its_own_current_run(
        two_served: list[str], app: MakeApp) -> None:  # noqa: F811 - the imported fixture
    one, two = two_served
    at = app(RUN_PAGE, db=one, run=FOLLOWED)
    box = next(s for s in at.sidebar.selectbox if s.label == "Database")
    box.set_value(two).run()
    assert not at.exception
    assert any(f"In use: **{two}**" in c.value.replace("\\", "") for c in at.sidebar.caption)
    assert at.query_params["db"] == two and "run" not in at.query_params
    assert any("No runs in this database yet." in i.value for i in at.info)
    # back on the first database, its current run is still the one followed
    next(s for s in at.sidebar.selectbox if s.label == "Database").set_value(one).run()
    _go(at, COUNTERFACTUAL_PAGE)
    assert _select(at, "Run").value == FOLLOWED and at.query_params["db"] == one
    # a reload (a new session on the same URL) keeps the database the URL names
    again = app(COUNTERFACTUAL_PAGE, **{k: at.query_params[k] for k in at.query_params})
    assert next(s for s in again.sidebar.selectbox if s.label == "Database").value == one
    assert _select(again, "Run").value == FOLLOWED


def _thread_of(populated: Populated, run_id: str) -> str | None:
    return populated[0].runs.require_run(run_id).thread_id


def _sidebar_links(at: AppTest) -> dict[str, dict[str, str]]:
    """The sidebar's page links: page url path -> the query parameters they carry."""
    out = {}
    for el in at.sidebar.get("page_link"):
        q = el.proto.query_string
        out[_page_of(el.proto)] = dict(p.split("=", 1) for p in q.split("&")) if q else {}
    return out


SIDEBAR_PAGES = {"": START_PAGE, "story": STORY_PAGE, "threads": THREADS_PAGE, "run": RUN_PAGE,
                 "compare": COMPARE_PAGE, "counterfactual": COUNTERFACTUAL_PAGE,
                 "why": WHY_PAGE, "timeline": TIMELINE_PAGE, "whatif": WHATIF_PAGE}


def test_sidebar_links_carry_the_current_run(populated: Populated, app: MakeApp) -> None:
    db = _name()
    fresh = _sidebar_links(app(None))
    assert set(fresh) == set(SIDEBAR_PAGES)
    assert all(q == {"db": db} for q in fresh.values())  # no run followed yet
    at = app(RUN_PAGE, run=FOLLOWED)
    links = _sidebar_links(at)
    for path in ("run", "counterfactual", "why", "timeline"):
        assert links[path] == {"db": db, "run": FOLLOWED}, path
    assert links["compare"] == {"db": db, "b": FOLLOWED}
    assert links[""] == links["story"] == links["threads"] == {"db": db}
    # What if opens on the current run's thread
    assert links["whatif"] == {"db": db, "thread": _thread_of(populated, FOLLOWED)}
    # picking another run redraws them in the same script run
    _select(at, "Run").set_value(RUN_1).run()
    assert _sidebar_links(at)["counterfactual"] == {"db": db, "run": RUN_1}


@pytest.mark.parametrize("current", [None, FOLLOWED])
def test_a_sidebar_link_is_the_whole_url_its_page_keeps(populated: Populated, app: MakeApp,
                                                        current: str | None) -> None:
    """One browser history entry per navigation: the page opened by a sidebar link writes
    nothing more into its URL (every write would push another entry), with or without a
    current run, and shows that run."""
    start = app(RUN_PAGE, run=current) if current else app(None)
    links = _sidebar_links(start)
    assert set(links) == set(SIDEBAR_PAGES)
    for path, query in links.items():
        page = SIDEBAR_PAGES[path]
        landed = app(page, **query)
        assert not landed.exception and not landed.error, path
        assert {k: landed.query_params[k] for k in landed.query_params} == query, path
        if current is not None and path == "whatif":
            assert _select(landed, "Thread").value == _thread_of(populated, current)
        elif current is not None and path not in ("", "story", "threads"):
            widget = {"compare": "Run B", "timeline": "Marked run"}.get(path, "Run")
            assert _select(landed, widget).value == current, path


def test_times_read_to_the_second_and_the_run_mark_fits(populated: Populated,
                                                         app: MakeApp) -> None:
    import re

    at = app(THREADS_PAGE, thread=THREAD)
    table = tables(at)[0]
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", t)
               for t in table["last activity"])
    # the newest run of a thread is marked at the chart's right edge: its label is
    # written to the left of the line, inside the chart
    at = app(TIMELINE_PAGE, thread=THREAD)
    picture = timeline_picture(at)
    assert picture is not None
    mark = next(e for e in picture.iter() if (e.text or "").startswith("this run"))
    assert mark.get("text-anchor") == "end", mark.attrib
