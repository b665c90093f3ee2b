"""AppTest tests of the workbench: the Threads and Run inspector pages on a populated
and an empty database, their interactions, shareable URLs, errors and literal text."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from app import services
from app.components import MISSING, RUN_PAGE, THREADS_PAGE, counted, fmt_score, used_by_key
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import RunRecord
from tests.app.fixture_db import (
    ANSWER_1,
    FAILED_RUN,
    FAILURE,
    FAQ_RUNS,
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
from tests.app.markdown import each_lane, raw_html, tables

Populated = tuple[InMemoryStorage, FixtureInfo]
MakeApp = Callable[..., AppTest]


def _select(at: AppTest, label: str) -> Any:
    return next(w for w in at.selectbox if w.label == label)


def _texts(at: AppTest) -> list[str]:
    return [t.value for t in at.text]


def _links(at: AppTest) -> list[str]:
    """Each link's query string without the leading ``db=<name>`` every link carries."""
    out = []
    for el in at.main.get("page_link"):
        qs = el.proto.query_string
        assert qs.startswith(f"db={_served_name()}&"), qs
        out.append(qs.partition("&")[2])
    return out


def _used_by_links(at: AppTest) -> list[str]:
    """The query strings (without ``db``) of the cards' "used by run" links."""
    return [el.proto.query_string.partition("&")[2] for el in at.main.get("page_link")
            if shown(el.proto.label).startswith("used by run ")]


def _used_by(storage: InMemoryStorage, seq: int) -> list[str]:
    """The runs whose prompt carried THREAD #seq."""
    return [r.run_id for r in storage.runs.list_runs()
            if any(i.thread_id == THREAD and i.seq == seq
                   for i in records(storage, r.run_id).prompt.items)]


def _served_name() -> str:
    """The name the workbench serves the test's database under."""
    return next(iter(services.served().databases))


def shown(value: str) -> str:
    """What a Markdown element displays: its source with the backslash escapes the
    pages put on stored text and URL parameters removed."""
    unfenced = re.sub(r"(?<!\\)`+", "", value)  # code spans hold URL-like runs
    return re.sub(r"\\(.)", r"\1", unfenced)


def _no_raw_html(at: AppTest) -> None:
    """Stored text must never reach a Markdown or HTML element unescaped."""
    assert not raw_html(at)
    for md in (*at.markdown, *at.caption):
        assert "<script>" not in md.value


# -- smoke: every page on a populated and on an empty database --------------------------
@pytest.mark.parametrize("page", [None, THREADS_PAGE, RUN_PAGE])
def test_pages_render_on_populated_db(populated: Populated, app: MakeApp,
                                      page: str | None) -> None:
    at = app(page)
    assert not at.exception
    assert not at.error
    assert at.title[0].value == {None: "Memory Workbench", THREADS_PAGE: "Threads",
                                 RUN_PAGE: "Run inspector"}[page]


def test_threads_on_empty_db(empty_db: InMemoryStorage, app: MakeApp) -> None:
    at = app(THREADS_PAGE)
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
    assert len(at.get("plotly_chart")) == 1  # the score chart; the lanes are bars
    # a bar for each lane, in prompt order, its tokens in words
    bars = [el.proto.text for el in at.get("progress")]
    assert [b.split(":")[0] for b in bars][:2] == ["Instructions", "Working memory"]
    assert len(bars) == len(at.tabs) and all(re.search(r": [\d,]+ tokens? \(\d+%\)$", b)
                                             for b in bars)
    texts = _texts(at)
    assert ANSWER_1 in texts  # the answer
    # a tool call of step 0, in monospace (st.text): a block of its own
    assert '→ lookup_order({"order":"A-17"})' in texts
    # each recalled/recent item links to its source message
    memctx = records(storage, RUN_1).memctx
    assert memctx is not None
    links = [q for drawn in each_lane(at, RUN_1) for q in _links(drawn)]
    for ref in (*memctx.recalled, *memctx.recent):
        assert f"thread={ref.thread_id}&seq={ref.seq}" in links


def test_the_inspector_draws_only_the_open_lane(populated: Populated, app: MakeApp) -> None:
    """Every lane's cards at once cost a cold browser tab ~0.45 CPU-s (issue 36.7): one
    lane is drawn, the one open, and opening another draws that one instead."""
    at = app(RUN_PAGE, run=RUN_1)
    assert not at.exception
    drawn = []
    for state in each_lane(at, RUN_1):
        heads = [c.value for c in state.caption if re.match(r"^[\d,]+ items? · ", c.value)]
        assert len(heads) == 1, heads  # one lane's "N items · M tokens"
        drawn.append(heads[0])
    assert len(drawn) == len(at.tabs) > 3


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
    assert at.subheader[0].value == f"Run `{RUN_2}`"  # the id in the code font


def test_unknown_run_in_url_is_a_clear_error(populated: Populated, app: MakeApp) -> None:
    at = app(RUN_PAGE, run="ghost-run")
    assert not at.exception
    assert [shown(e.value) for e in at.error] == [
        f"Run 'ghost-run' not found in database '{_served_name()}'."]
    # never another run in its place, and the URL still names the run asked for
    assert all(w.label != "Run" for w in at.selectbox)
    assert not at.subheader and not at.tabs and not at.text
    assert at.query_params["run"] == "ghost-run"


def test_refresh_shows_new_runs(populated: Populated, app: MakeApp) -> None:
    storage, _ = populated
    at = app(RUN_PAGE)
    _select(at, "Thread").set_value(THREAD).run()
    done = [RUN_1, RUN_2, LOWER_RUN]
    # a run is labelled "<time> · “<question>” · <id>", and its status unless completed
    assert _ids(_select(at, "Run").options) == done
    storage.runs.start_run(RunRecord(run_id="run-3", agent="support", thread_id=THREAD,
                                     resource_id=RESOURCE, started_at=T0 + timedelta(hours=5)))
    at.run()
    assert _ids(_select(at, "Run").options) == done  # still cached
    next(b for b in at.sidebar.button if b.label == "Refresh").click().run()
    assert _ids(_select(at, "Run").options) == [*done, "run-3 (running)"]


def _ids(labels: list[str]) -> list[str]:
    """The run ids of a run picker's labels (what follows the last " · ")."""
    return [label.rsplit(" · ", 1)[1] for label in labels]


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
    # a card says how many runs used its message; their links are built only once
    # its expander is opened (a card of the largest thread carried ~24 of them)
    expanders = {e.label: e for e in at.expander}
    assert not _used_by_links(at)
    for seq in range(len(texts)):
        at.session_state[used_by_key(THREAD, seq)] = True
    at.run()
    # one link per message of the thread that was in the run's prompt (recalled/recent)
    for run_id in (RUN_1, RUN_2):
        used = {i.seq for i in records(storage, run_id).prompt.items if i.thread_id == THREAD}
        assert len(used) >= 4
        assert _used_by_links(at).count(f"run={run_id}") == len(used)
    every = [rid for m in storage.memory.get_messages(THREAD)
             for rid in _used_by(storage, m.seq)]
    assert len(_used_by_links(at)) == len(every)
    assert any(label.startswith("Used by ") and label.endswith(" runs") for label in expanders)
    # the thread names its resource: the URL carries the thread alone
    assert at.query_params["thread"] == THREAD and "resource" not in at.query_params


def test_search_finds_a_message(populated: Populated, app: MakeApp) -> None:
    at = app(THREADS_PAGE)
    assert not [t for t in at.text_input if t.key == "search"]  # built once opened
    at.session_state["search-open"] = True  # a click opens the search
    at.run()
    at.text_input(key="search").set_value("parcel never").run()
    assert not at.exception
    hits = tables(at)[-1]
    # the open column links to the message on this page (the database named); the
    # thread column keeps the id as stored
    assert hits["seq"] == ["0"] and hits["thread"] == [THREAD]
    assert [v["open"].rsplit("&thread=", 1)[1] for v in hits.links] == [THREAD]
    assert f"thread={THREAD}&seq=0" in _links(at)
    assert at.query_params["q"] == "parcel never"  # the search is shareable too
    shared = app(q="parcel never")
    assert tables(shared)[-1]["seq"] == ["0"]
    at.text_input(key="search").set_value("no such words anywhere").run()
    assert any(c.value == "0 messages found" for c in at.caption)
    # its words in another order: found, and said to hold each word, not the text
    at.text_input(key="search").set_value("never parcel").run()
    assert tables(at)[-1]["seq"] == ["0"]
    assert any(c.value == "1 message found holding each of its words (none holds it as "
               "written)" for c in at.caption)


def test_large_thread_is_paginated_and_url_seq_opens_its_page(populated: Populated,
                                                              app: MakeApp) -> None:
    at = app(thread=LONG_THREAD, seq="77")
    assert not at.exception
    texts = _texts(at)
    assert len(texts) == 20
    assert texts[0] == "long message number 60" and "long message number 77" in texts
    assert at.number_input[0].value == 4
    at.number_input[0].set_value(6).run()
    texts = _texts(at)
    assert texts[0] == "long message number 100" and len(texts) == 20
    assert any(c.value == "120 messages · page 6 of 6 · 20 per page" for c in at.caption)


def test_unknown_thread_in_url_is_a_clear_error(populated: Populated, app: MakeApp) -> None:
    at = app(resource=RESOURCE, thread="no-such-thread")
    assert not at.exception
    assert [shown(e.value) for e in at.error] == [
        f"Thread 'no-such-thread' not found in database '{_served_name()}'."]
    assert not at.text and all(w.label != "Thread" for w in at.selectbox)  # no other thread
    assert at.query_params["thread"] == "no-such-thread"


# -- literal text -----------------------------------------------------------------------
def test_script_message_is_shown_literally_on_both_pages(populated: Populated,
                                                         app: MakeApp) -> None:
    at = app(thread=THREAD)
    assert SCRIPT_TEXT in _texts(at)
    _no_raw_html(at)
    assert seq_of(populated[0], THREAD, SCRIPT_TEXT) in {
        r.seq for r in records(populated[0], RUN_1).memctx.recent}  # type: ignore[union-attr]
    at = app(RUN_PAGE, run=RUN_1)
    shown_in = [drawn for drawn in each_lane(at, RUN_1) if SCRIPT_TEXT in _texts(drawn)]
    assert shown_in  # (in the recent lane)
    _no_raw_html(at)


# -- choosing the database --------------------------------------------------------------
def test_missing_database_file_says_how_to_build_the_demo(monkeypatch: pytest.MonkeyPatch,
                                                          app: MakeApp) -> None:
    monkeypatch.delenv(services.ENV_VAR, raising=False)
    monkeypatch.chdir("/tmp")
    monkeypatch.setattr(services, "PROJECT_ROOT", Path("/nonexistent-root"))
    at = app()
    assert not at.exception
    assert "make demo" in shown(at.error[0].value)
    assert services.DEMO_DB in shown(at.error[0].value)


def test_the_sidebar_offers_only_the_served_databases(populated: Populated,
                                                     app: MakeApp) -> None:
    at = app()
    assert not at.sidebar.text_input  # nothing to type a path or URL into
    # one database: named, with no picker of one (a selectbox costs a cold tab ~0.3 CPU-s)
    assert not [s for s in at.sidebar.selectbox if s.label == "Database"]
    name = _served_name()
    assert any(f"In use: **{name}**" in c.value.replace("\\", "") for c in at.sidebar.caption)
    assert at.query_params["db"] == name  # the database in use is part of the URL


@pytest.mark.parametrize("wanted", ["/tmp/x.duckdb", "ftp://host/x", "memory://other",
                                    "nope", "postgresql://127.0.0.1:1/x"])
def test_an_unknown_db_in_the_url_is_an_error_not_another_database(
        populated: Populated, app: MakeApp, wanted: str) -> None:
    for page in (None, RUN_PAGE):
        at = app(page, db=wanted, run=RUN_1)
        assert not at.exception
        assert [shown(e.value) for e in at.error] == [
            f"Database {wanted!r} is not served here; choose one of "
            f"{_served_name()} below."]
        assert not at.tabs and not tables(at) and not at.text  # nothing of any database
        assert [el.proto.query_string for el in at.main.get("page_link")] == [
            f"db={_served_name()}"]  # a way back to what is served


def test_served_databases_from_the_command_line(tmp_path: Path) -> None:
    from memory_core.storage.duckdb import DuckDBStorage
    from memory_core.storage.sqlite import SQLiteStorage
    from memory_core.storage.url import catalog

    env = {services.ENV_VAR: "/env.duckdb"}
    # --db wins over $MEMWB_DB; repeated --db are all served, by file stem
    got = services.served_from(["--db", "/a/one.duckdb", "--db", "/b/one.duckdb",
                                "--db", "sqlite:///c/two.db"], env)
    assert got.databases == {"one": "/a/one.duckdb", "one-2": "/b/one.duckdb",
                             "two": "sqlite:///c/two.db"}
    assert not got.read_only
    assert services.served_from([], env).databases == {"env": "/env.duckdb"}
    assert services.served_from(["--read-only"], env).read_only
    assert services.served_from([], {**env, services.READ_ONLY_VAR: "1"}).read_only
    assert not services.served_from(["--re"], env).read_only  # no abbreviations
    demo = services.served_from([], {}).databases
    assert list(demo) == ["demo"] and demo["demo"].endswith(services.DEMO_DB)
    # a directory serves the database files in it, recognised by content, not name
    DuckDBStorage(str(tmp_path / "b.duckdb")).close()
    SQLiteStorage(str(tmp_path / "a.sqlite")).close()
    (tmp_path / "notes.txt").write_text("hello")
    (tmp_path / "sub").mkdir()
    assert catalog([str(tmp_path)]) == {"a": str(tmp_path / "a.sqlite"),
                                        "b": str(tmp_path / "b.duckdb")}
    assert services.served_from(["--db", str(tmp_path)], {}).databases == catalog(
        [str(tmp_path)])


def test_changing_resource_moves_to_its_threads(populated: Populated, app: MakeApp) -> None:
    at = app(thread=THREAD)
    _select(at, "Resource").set_value("user-7").run()
    assert not at.exception and not at.error
    assert _select(at, "Thread").value == "other-1"
    assert _texts(at) == ["hello"]
    assert at.query_params["thread"] == "other-1" and "resource" not in at.query_params


def json_blocks(at: AppTest) -> list[Any]:
    """What each st.json element of the page shows, parsed."""
    import json

    return [json.loads(j.value) for j in at.json]


def test_run_inspector_shows_settings_and_candidates(populated: Populated,
                                                     app: MakeApp) -> None:
    storage, _ = populated
    memctx = records(storage, RUN_1).memctx
    assert memctx is not None
    at = app(RUN_PAGE, run=RUN_1)
    at.session_state["all-settings"] = True  # their fold opened
    at.run()
    # settings are JSON, shown as JSON (monospace), never in a table
    values = json_blocks(at)[0]
    top_k = memctx.settings.recall.top_k  # type: ignore[union-attr]
    assert values["threshold"] == THRESHOLD and values["top_k"] == top_k
    assert values["filter"] == {"topic": {"$eq": "billing"}}
    # a run without recall: its recall settings are named once as unset, not listed
    faq = app(RUN_PAGE, run=FAQ_RUNS[0])
    faq.session_state["all-settings"] = True
    faq.run()
    shown_settings = json_blocks(faq)[0]
    assert "top_k" not in shown_settings and MISSING not in shown_settings.values()
    assert any(shown(c.value).startswith("Not set in this run: ") and "top_k" in shown(c.value)
               for c in faq.caption)
    assert not [t for t in tables(at) if {"value", "args"} & set(t.columns)]
    # tool calls: their arguments and results in monospace blocks
    from memory_core.analysis import views

    calls = views.run_view(storage, RUN_1).tool_calls
    assert calls and {c.args for c in calls} <= set(_texts(at))
    candidates = next(t for t in tables(at) if "what became of it" in t.columns)
    hits = [r for r in memctx.recalled if r.origin == "hit"]
    dropped_hits = [d for d in memctx.dropped if d.rank is not None and d.origin == "hit"]
    assert dropped_hits  # the fixture's run recalled a call whose result was never stored
    assert sorted(candidates["status"]) == sorted(
        ["hit"] * len(hits) + [n.reason for n in memctx.near_misses]
        + ["dropped"] * len(dropped_hits))
    chart = at.get("plotly_chart")[0].proto.spec
    assert f'"threshold {fmt_score(THRESHOLD)}"' in chart and f'"top-k = {top_k}"' in chart
    # in the order recall ranked them: by rank, a shared (would-be) rank by score
    order = list(zip([int(r) for r in candidates["rank"]],
                     [-float(s) for s in candidates["score"]], strict=True))
    assert order == sorted(order)
    assert "filtered-out" in set(candidates["status"])
    assert any("rank is the one it would have had" in c.value for c in at.caption)


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
    assert "is held by another process" in shown(at.error[0].value)


# -- several served databases -----------------------------------------------------------
@pytest.fixture()
def two_served(monkeypatch: pytest.MonkeyPatch) -> Any:
    from tests.app.fixture_db import build_fixture, fixed_clock

    first = InMemoryStorage(clock=fixed_clock())
    build_fixture(first)
    second = InMemoryStorage()
    second.memory.create_thread("only-in-second", resource_id="res-second")
    names = ["served-one", "served-two"]
    urls = [services.register_storage(n, s) for n, s in zip(names, (first, second),
                                                             strict=True)]
    monkeypatch.setattr("sys.argv", ["streamlit_app.py", "--db", urls[0], "--db", urls[1]])
    monkeypatch.delenv(services.ENV_VAR, raising=False)
    yield names
    for n in names:
        services.unregister_storage(n)


def test_the_sidebar_switches_between_served_databases(two_served: list[str],
                                                       app: MakeApp) -> None:
    at = app(THREADS_PAGE)
    box = next(s for s in at.sidebar.selectbox if s.label == "Database")
    assert box.options == two_served and box.value == "served-one"
    assert _select(at, "Resource").value == RESOURCE
    box.set_value("served-two").run()
    assert not at.exception and not at.error
    assert at.query_params["db"] == "served-two"
    assert _select(at, "Resource").value == "res-second"
    # a shared link names its database
    at = app(THREADS_PAGE, db="served-two")
    assert _select(at, "Resource").value == "res-second"
    at = app(RUN_PAGE, db="served-one", run=RUN_1)
    assert _select(at, "Run").value == RUN_1


def test_a_served_foreign_database_is_refused_untouched(tmp_path: Path, app: MakeApp,
                                                        monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    import sqlite3

    foreign = tmp_path / "app.db"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE notes (body TEXT)")
    conn.commit()
    conn.close()
    before = foreign.read_bytes()
    monkeypatch.setenv(services.ENV_VAR, str(foreign))
    at = app()
    assert not at.exception
    assert "is not a Memory Workbench database" in shown(at.error[0].value)
    assert foreign.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db"]


def test_a_served_directory_is_rescanned_on_refresh(tmp_path: Path, app: MakeApp,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from memory_core.storage.duckdb import DuckDBStorage
    from tests.app.fixture_db import build_duckdb_file

    build_duckdb_file(str(tmp_path / "first.duckdb"))
    monkeypatch.setenv(services.ENV_VAR, str(tmp_path))
    at = app()
    assert not at.exception and not at.error
    assert not [s for s in at.sidebar.selectbox if s.label == "Database"]  # one: named only
    assert any("In use: **first**" in c.value.replace("\\", "") for c in at.sidebar.caption)
    DuckDBStorage(str(tmp_path / "second.duckdb")).close()
    next(b for b in at.sidebar.button if b.label == "Refresh").click().run()
    box = next(s for s in at.sidebar.selectbox if s.label == "Database")
    assert box.options == ["first", "second"]


def test_the_inspector_shows_whether_the_run_matches_its_seal(populated: Populated,
                                                              app: MakeApp) -> None:
    from memory_core.journal import RunKeys

    storage, _ = populated
    at = app(RUN_PAGE, run=RUN_1)
    assert not at.exception
    assert any("verified: every record matches its seal" in m.value for m in at.markdown)
    assert not at.error
    # a changed record: the badge says so and names it, the page still renders
    key = RunKeys(RUN_1).output
    value = dict(storage.runs.get(key))
    value["text"] = "something the model never said"
    storage.runs.delete(key)
    storage.runs.put_if_absent(key, value)
    services.after_write()
    at = app(RUN_PAGE, run=RUN_1)
    assert not at.exception
    assert any("tampered" in m.value for m in at.markdown)
    assert any(key in e.value.replace("\\", "") for e in at.error)


def test_counts_take_the_number_of_their_noun() -> None:
    # no "thread(s)": one of a thing is singular, any other count plural
    assert counted(1, "thread") == "1 thread"
    assert counted(0, "message") == "0 messages"
    assert counted(3, "run") == "3 runs"
    assert counted(12_500, "token") == "12,500 tokens"
