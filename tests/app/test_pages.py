"""AppTest tests of the workbench: the Threads and Run inspector pages on a populated
and an empty database, their interactions, shareable URLs, errors and literal text."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from app import services
from app.components import RUN_PAGE
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import RunRecord
from tests.app.fixture_db import (
    ANSWER_1,
    FAILED_RUN,
    FAILURE,
    LONG_THREAD,
    LOWER_RUN,
    REFUND_TEXT,
    RESOURCE,
    RUN_1,
    RUN_2,
    SCRIPT_TEXT,
    SIBLING,
    T0,
    THREAD,
    THRESHOLD,
    FixtureInfo,
    records,
    seq_of,
    tab_labels,
)

Populated = tuple[InMemoryStorage, FixtureInfo]
MakeApp = Callable[..., AppTest]


def _select(at: AppTest, label: str) -> Any:
    return next(w for w in at.selectbox if w.label == label)


def _texts(at: AppTest) -> list[str]:
    return [t.value for t in at.text]


def _links(at: AppTest) -> list[str]:
    return [el.proto.query_string for el in at.get("page_link")]


def _no_raw_html(at: AppTest) -> None:
    """Stored text must never reach a Markdown or HTML element unescaped."""
    assert len(at.get("html")) == 0
    for md in (*at.markdown, *at.caption):
        assert "<script>" not in md.value


# -- smoke: every page on a populated and on an empty database --------------------------
@pytest.mark.parametrize("page", [None, RUN_PAGE])
def test_pages_render_on_populated_db(populated: Populated, app: MakeApp,
                                      page: str | None) -> None:
    at = app(page)
    assert not at.exception
    assert not at.error
    assert at.title[0].value == ("Run inspector" if page else "Threads")


def test_threads_on_empty_db(empty_db: InMemoryStorage, app: MakeApp) -> None:
    at = app()
    assert not at.exception and not at.error
    assert "no threads yet" in at.info[0].value


def test_run_inspector_on_empty_db(empty_db: InMemoryStorage, app: MakeApp) -> None:
    at = app(RUN_PAGE)
    assert not at.exception and not at.error
    assert at.info[0].value == "No runs in this database yet."


# -- run inspector ----------------------------------------------------------------------
def test_selecting_a_run_shows_its_lanes_with_counts(populated: Populated,
                                                     app: MakeApp) -> None:
    storage, _ = populated
    at = app(RUN_PAGE)
    _select(at, "Thread").set_value(THREAD).run()
    _select(at, "Run").set_value(RUN_1).run()
    assert not at.exception
    assert [t.label for t in at.tabs] == tab_labels(storage, RUN_1)
    assert at.query_params["run"] == RUN_1  # the view is shareable
    assert len(at.get("plotly_chart")) == 2  # token bar and score chart
    texts = _texts(at)
    assert ANSWER_1 in texts  # the answer
    assert '→ lookup_order({"order":"A-17"})' in texts  # a tool call of step 0
    # each recalled/recent item links to its source message
    memctx = records(storage, RUN_1).memctx
    assert memctx is not None
    links = _links(at)
    for ref in (*memctx.recalled, *memctx.recent):
        assert f"thread={ref.thread_id}&seq={ref.seq}" in links


def test_observations_link_to_the_range_they_summarise(populated: Populated,
                                                       app: MakeApp) -> None:
    from tests.app.fixture_db import NOTES_THREAD, OBS_RUN

    storage, _ = populated
    at = app(RUN_PAGE, run=OBS_RUN)
    assert not at.exception and not at.error
    assert [t.label for t in at.tabs] == tab_labels(storage, OBS_RUN)
    memctx = records(storage, OBS_RUN).memctx
    assert memctx is not None
    [obs] = memctx.observations
    assert f"thread={NOTES_THREAD}&seq={obs.from_seq}&to={obs.to_seq}" in _links(at)


def test_switching_to_a_failed_run_shows_the_error(populated: Populated,
                                                   app: MakeApp) -> None:
    storage, _ = populated
    at = app(RUN_PAGE, run=RUN_1)  # the URL's run must not pin the thread choice
    _select(at, "Thread").set_value(SIBLING).run()
    assert _select(at, "Run").value == FAILED_RUN
    assert not at.exception
    assert any(FAILURE in e.value for e in at.error)
    # it failed at the model: what it was given is still shown
    assert [t.label for t in at.tabs] == tab_labels(storage, FAILED_RUN)
    assert at.query_params["run"] == FAILED_RUN


def test_a_run_without_a_journal_shows_notes(populated: Populated, app: MakeApp) -> None:
    storage, _ = populated
    # a run row another program started and never journaled
    storage.runs.start_run(RunRecord(run_id="bare", agent="support", thread_id=SIBLING,
                                     resource_id=RESOURCE, started_at=T0 + timedelta(days=1)))
    at = app(RUN_PAGE, run="bare")
    assert not at.exception
    assert any("no frozen prompt" in w.value for w in at.warning)
    assert [t.label for t in at.tabs][3] == "Recalled (0)"


@pytest.mark.parametrize("page", [None, RUN_PAGE])
def test_url_opens_the_named_run(populated: Populated, app: MakeApp, page: str | None) -> None:
    # /?run=… (forwarded from the default page) and /run?run=… both open it
    at = app(page, run=RUN_2)
    assert not at.exception
    assert at.title[0].value == "Run inspector"
    assert _select(at, "Run").value == RUN_2
    assert at.subheader[0].value == "Run " + RUN_2.replace("-", "\\-")


def test_unknown_run_in_url_is_a_clear_error(populated: Populated, app: MakeApp) -> None:
    at = app(RUN_PAGE, run="ghost-run")
    assert not at.exception
    assert any("run 'ghost-run' does not exist" in e.value for e in at.error)


def test_refresh_shows_new_runs(populated: Populated, app: MakeApp) -> None:
    storage, _ = populated
    at = app(RUN_PAGE)
    _select(at, "Thread").set_value(THREAD).run()
    done = [f"{r} (completed)" for r in (RUN_1, RUN_2, LOWER_RUN)]
    assert _select(at, "Run").options == done
    storage.runs.start_run(RunRecord(run_id="run-3", agent="support", thread_id=THREAD,
                                     resource_id=RESOURCE, started_at=T0 + timedelta(hours=5)))
    at.run()
    assert _select(at, "Run").options == done  # still cached
    next(b for b in at.sidebar.button if b.label == "Refresh").click().run()
    assert _select(at, "Run").options == [*done, "run-3 (running)"]


# -- threads ----------------------------------------------------------------------------
def test_threads_lists_messages_with_runs_that_used_them(populated: Populated,
                                                         app: MakeApp) -> None:
    storage, _ = populated
    at = app(thread=THREAD)
    assert not at.exception and not at.error
    assert _select(at, "Resource").value == RESOURCE  # found from the thread
    assert _select(at, "Thread").value == THREAD
    texts = _texts(at)
    assert texts[0] == REFUND_TEXT
    assert 'Checking order A-17 for the refund.\n→ lookup_order({"order":"A-17"})' in texts
    assert 'lookup_order → {"status":"lost"}' in texts
    assert 'metadata: {"topic": "billing"}' in texts
    # one link per message of the thread that was in the run's prompt (recalled/recent)
    for run_id in (RUN_1, RUN_2):
        used = {i.seq for i in records(storage, run_id).prompt.items if i.thread_id == THREAD}
        assert len(used) >= 4
        assert _links(at).count(f"run={run_id}") == len(used)
    assert at.query_params["thread"] == THREAD and at.query_params["resource"] == RESOURCE


def test_search_finds_a_message(populated: Populated, app: MakeApp) -> None:
    at = app()
    at.text_input(key="search").set_value("parcel never").run()
    assert not at.exception
    df = at.dataframe[-1].value
    assert list(df["seq"]) == [0] and list(df["thread"]) == [THREAD]
    assert f"thread={THREAD}&seq=0" in _links(at)
    assert at.query_params["q"] == "parcel never"  # the search is shareable too
    shared = app(q="parcel never")
    assert list(shared.dataframe[-1].value["seq"]) == [0]
    at.text_input(key="search").set_value("no such words anywhere").run()
    assert any(c.value == "0 message(s) found" for c in at.caption)


def test_large_thread_is_paginated_and_url_seq_opens_its_page(populated: Populated,
                                                              app: MakeApp) -> None:
    at = app(thread=LONG_THREAD, seq="77")
    assert not at.exception
    texts = _texts(at)
    assert len(texts) == 50
    assert texts[0] == "long message number 50" and "long message number 77" in texts
    assert at.number_input[0].value == 2
    at.number_input[0].set_value(3).run()
    texts = _texts(at)
    assert texts[0] == "long message number 100" and len(texts) == 20
    assert any(c.value == "120 messages · page 3 of 3 · 50 per page" for c in at.caption)


def test_unknown_thread_in_url_is_a_clear_error(populated: Populated, app: MakeApp) -> None:
    at = app(resource=RESOURCE, thread="no-such-thread")
    assert not at.exception
    assert any("thread 'no-such-thread' does not exist" in e.value for e in at.error)


# -- literal text -----------------------------------------------------------------------
def test_script_message_is_shown_literally_on_both_pages(populated: Populated,
                                                         app: MakeApp) -> None:
    at = app(thread=THREAD)
    assert SCRIPT_TEXT in _texts(at)
    _no_raw_html(at)
    assert seq_of(populated[0], THREAD, SCRIPT_TEXT) in {
        r.seq for r in records(populated[0], RUN_1).memctx.recent}  # type: ignore[union-attr]
    at = app(RUN_PAGE, run=RUN_1)
    assert SCRIPT_TEXT in _texts(at)
    _no_raw_html(at)


# -- choosing the database --------------------------------------------------------------
def test_missing_database_file_says_how_to_build_the_demo(monkeypatch: pytest.MonkeyPatch,
                                                          app: MakeApp) -> None:
    monkeypatch.delenv(services.ENV_VAR, raising=False)
    monkeypatch.chdir("/tmp")
    monkeypatch.setattr(services, "PROJECT_ROOT", Path("/nonexistent-root"))
    at = app()
    assert not at.exception
    assert "make demo" in at.error[0].value
    assert services.DEMO_DB in at.error[0].value


@pytest.mark.parametrize(("db", "expected"), [
    ("/tmp/definitely-missing.duckdb", "'/tmp/definitely-missing.duckdb' does not exist"),
    ("ftp://host/x", "unknown storage URL scheme 'ftp'"),
    ("memory://never-registered", "'memory://never-registered' is not registered"),
])
def test_bad_database_in_the_sidebar_is_a_clear_error(populated: Populated, app: MakeApp,
                                                      db: str, expected: str) -> None:
    at = app()
    at.sidebar.text_input[0].set_value(db).run()
    assert not at.exception
    assert expected in at.error[0].value


def test_default_database_order() -> None:
    env = {services.ENV_VAR: "/env.duckdb"}
    assert services.default_database(["--db", "/flag.duckdb"], env) == "/env.duckdb"
    assert services.default_database(["--db", "/flag.duckdb"], {}) == "/flag.duckdb"
    assert services.default_database(["--db=/f2.duckdb"], {}) == "/f2.duckdb"
    assert services.default_database([], {}) == services.DEMO_DB


def test_changing_resource_moves_to_its_threads(populated: Populated, app: MakeApp) -> None:
    at = app(thread=THREAD)
    _select(at, "Resource").set_value("user-7").run()
    assert not at.exception and not at.error
    assert _select(at, "Thread").value == "other-1"
    assert _texts(at) == ["hello"]
    assert at.query_params["resource"] == "user-7" and at.query_params["thread"] == "other-1"


def test_run_inspector_shows_settings_and_candidates(populated: Populated,
                                                     app: MakeApp) -> None:
    storage, _ = populated
    memctx = records(storage, RUN_1).memctx
    assert memctx is not None
    at = app(RUN_PAGE, run=RUN_1)
    settings = at.dataframe[0].value
    values = dict(zip(settings["setting"], settings["value"], strict=True))
    top_k = memctx.settings.recall.top_k  # type: ignore[union-attr]
    assert values["threshold"] == str(THRESHOLD) and values["top_k"] == str(top_k)
    assert values["filter"] == '{"topic": {"$eq": "billing"}}'
    candidates = at.dataframe[1].value
    hits = [r for r in memctx.recalled if r.origin == "hit"]
    assert sorted(candidates["status"]) == sorted(
        ["hit"] * len(hits) + [n.reason for n in memctx.near_misses])
    chart = at.get("plotly_chart")[1].proto.spec
    assert f'"threshold {THRESHOLD}"' in chart and f'"top-k = {top_k}"' in chart


def test_storage_failure_mid_page_is_shown_not_raised(populated: Populated, app: MakeApp,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from memory_core.errors import StorageBusyError

    storage, _ = populated

    def busy(*args: object, **kwargs: object) -> None:
        raise StorageBusyError("list_threads failed: database file 'x' is held by another "
                               "process")

    monkeypatch.setattr(storage.memory, "list_threads", busy)
    at = app()
    assert not at.exception
    assert "is held by another process" in at.error[0].value
