"""Imported databases on the workbench: threads without a resource are listed under
"(no resource)" on the Threads page, and a link to a thread opens it whatever resource
the link names (AppTest)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from app import services
from app.components import THREADS_PAGE, fmt_time
from memory_core.analysis import views
from memory_core.importers import import_file
from memory_core.storage.inmemory import InMemoryStorage
from tests.app.conftest import ENTRY, TIMEOUT, register
from tests.app.markdown import tables

REAL = Path(__file__).parent / "fixtures" / "imports" / "real"
FIX = Path(__file__).parent / "fixtures" / "imports"


@pytest.fixture()
def imported(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[InMemoryStorage, list[str]]]:
    storage = InMemoryStorage()
    loose = import_file(storage, REAL / "fastchat-dummy_conversation.json").threads_created
    import_file(storage, FIX / "openai_support.jsonl")  # threads of cust-7 and cust-9
    url = register(storage)
    monkeypatch.setenv(services.ENV_VAR, url)
    yield storage, loose
    services.unregister_storage(url.removeprefix(services.MEMORY_SCHEME))


def _open(**query: str) -> AppTest:
    """The Threads page (the start page is the default) with ``query`` in its URL."""
    at = AppTest.from_file(str(ENTRY), default_timeout=TIMEOUT)
    at.run()
    at.switch_page(THREADS_PAGE)
    at.query_params.update(query)
    at.run()
    return at


def _select(at: AppTest, label: str) -> Any:
    return next(w for w in at.selectbox if w.label == label)


def test_resource_less_threads_are_listed_under_no_resource(
        imported: tuple[InMemoryStorage, list[str]]) -> None:
    _, loose = imported
    at = _open(resource="")  # no resource chosen: the first group
    assert not at.exception and not at.error
    groups = _select(at, "Resource")
    assert groups.options == ["cust-7", "cust-9", views.NO_RESOURCE_LABEL]
    groups.select_index(2).run()
    assert not at.exception and not at.error
    assert at.subheader[0].value == r"Threads of \(no resource\)"  # escaped markdown
    assert sorted(tables(at)[0]["thread"]) == sorted(loose)
    assert "resource" not in at.query_params


@pytest.mark.parametrize("named", ["", "cust-7", "nobody"])
def test_a_link_to_a_thread_finds_it_whatever_resource_it_names(
        imported: tuple[InMemoryStorage, list[str]], named: str) -> None:
    _, loose = imported
    query = {"thread": "identity_2"} | ({"resource": named} if named else {})
    at = _open(**query)
    assert not at.exception and not at.error
    # the group of no resource, shown picked (a stand-in for None)
    groups = _select(at, "Resource")
    assert groups.format_func(groups.value) == "(no resource)"
    assert _select(at, "Thread").value == "identity_2"
    assert [t.value for t in at.text][:2] == ["What is up?", "Hello! How can I help you today?"]


def test_a_database_of_imports_alone_is_not_called_empty(
        monkeypatch: pytest.MonkeyPatch) -> None:
    storage = InMemoryStorage()
    import_file(storage, REAL / "otelv2-test_chat_completion_tool_calls_with_content.yaml")
    url = register(storage)
    monkeypatch.setenv(services.ENV_VAR, url)
    try:
        at = _open()
        assert not at.exception and not at.error
        assert not any("no threads yet" in i.value for i in at.info)
        assert _select(at, "Resource").options == [views.NO_RESOURCE_LABEL]
        assert len(tables(at)[0]) == 1
    finally:
        services.unregister_storage(url.removeprefix(services.MEMORY_SCHEME))


def test_groups_of_a_listing() -> None:
    from datetime import UTC, datetime

    def row(tid: str, res: str | None) -> views.ThreadSummary:
        return views.ThreadSummary(thread_id=tid, resource_id=res, title=None,
                                   message_count=0, run_count=0, run_ids=[],
                                   last_activity=datetime(2026, 1, 1, tzinfo=UTC))

    rows = [row("a", "u2"), row("b", None), row("c", "u1")]
    assert views.resource_groups(rows) == ["u1", "u2", None]
    assert views.threads_in_group(rows, None) == [rows[1]]
    assert views.resource_groups(rows[:1]) == ["u2"]
    assert views.group_label(None) == "(no resource)"


def test_last_activity_of_imported_threads_is_their_recorded_time(
        imported: tuple[InMemoryStorage, list[str]]) -> None:
    """An import writes its threads when it runs; their last activity is the recorded
    time of their last message or run, as the Threads page shows it."""
    storage, _ = imported
    summaries = {t.thread_id: t for t in views.thread_summaries(storage, "cust-7")}
    assert summaries
    for tid, summary in summaries.items():
        recorded = [m.created_at for m in storage.memory.get_messages(tid)]
        recorded += [r.finished_at or r.started_at
                     for r in storage.runs.list_runs(thread_id=tid)]
        thread = storage.memory.get_thread(tid)
        assert thread is not None and max(recorded) < thread.updated_at  # written later
        assert summary.last_activity == max(recorded)
    at = _open(resource="cust-7")
    assert not at.exception and not at.error
    table = tables(at)[0]
    shown = dict(zip(table["thread"], table["last activity"], strict=True))
    assert shown == {tid: fmt_time(t.last_activity) for tid, t in summaries.items()}


def test_a_record_with_no_time_says_so_instead_of_1970(
        imported: tuple[InMemoryStorage, list[str]]) -> None:
    """A file with no times (a ShareGPT dataset) is dated 1970 plus each record's index,
    so that imports are deterministic; the pages showed "1970-01-01 00:00:03"."""
    storage, loose = imported
    at = _open(resource="")
    groups = _select(at, "Resource")
    groups.select_index(2).run()
    table = tables(at)[0]
    shown = dict(zip(table["thread"], table["last activity"], strict=True))
    assert all(shown[t] == "not recorded" for t in loose), shown
    assert not any("1970" in str(v) for v in shown.values())
    from datetime import UTC, datetime, timedelta

    assert fmt_time(datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=2)) == \
        "not recorded"
    assert fmt_time("1970-01-01T00:00:00+00:00") == "not recorded"
    assert fmt_time(datetime(2026, 1, 5, 9, 0, tzinfo=UTC)) == "2026-01-05 09:00:00"


@pytest.fixture()
def many_threads(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemoryStorage]:
    """Eight threads of no resource, t0 oldest, while the page lists three."""
    from datetime import UTC, datetime, timedelta

    from memory_core.types import AppendRow, Message

    monkeypatch.setattr(views, "THREADS_LISTED", 3)
    storage = InMemoryStorage()
    start = datetime(2026, 1, 1, tzinfo=UTC)
    for i in range(8):
        storage.memory.create_thread(f"t{i}", title=f"topic {'odd' if i % 2 else 'even'} {i}")
        storage.memory.append_messages(f"t{i}", [AppendRow(
            message=Message(role="user", content=f"message {i}"),
            created_at=start + timedelta(minutes=i))])
    url = register(storage)
    monkeypatch.setenv(services.ENV_VAR, url)
    yield storage
    services.unregister_storage(url.removeprefix(services.MEMORY_SCHEME))


def test_a_large_group_lists_its_newest_threads_and_finds_the_rest(
        many_threads: InMemoryStorage) -> None:
    """An import of a big log holds tens of thousands of threads: the page lists the
    newest few (table and picker) and finds any other by id or title."""
    at = _open()
    assert not at.exception and not at.error
    assert list(tables(at)[0]["thread"]) == ["t7", "t6", "t5"]
    assert _select(at, "Thread").options == ["t7 · “topic odd 7”", "t6 · “topic even 6”",
                                              "t5 · “topic odd 5”"]
    assert "8 threads; the newest 3 are listed here" in at.caption[0].value
    def find(text: str) -> None:
        next(w for w in at.text_input if w.label == "Find a thread").set_value(text).run()

    find("EVEN")  # id or title, any case
    assert not at.exception and not at.error
    assert list(tables(at)[0]["thread"]) == ["t6", "t4", "t2"]
    assert "4 of the 8 threads have 'EVEN' in their id or title" in at.caption[0].value
    assert at.query_params["find"] == "EVEN"
    find("t1")
    assert list(tables(at)[0]["thread"]) == ["t1"]
    assert _select(at, "Thread").value == "t1"
    assert [t.value for t in at.text][:1] == ["message 1"]
    find("nothing like it")
    assert not at.exception and not at.error
    assert any("No thread of this resource has that text in its id or title" in i.value for i in at.info)


def test_a_link_opens_its_thread_beyond_the_newest(many_threads: InMemoryStorage) -> None:
    at = _open(thread="t0")
    assert not at.exception and not at.error
    assert list(tables(at)[0]["thread"]) == ["t7", "t6", "t5"]
    assert _select(at, "Thread").value == "t0"  # offered, though not listed
    assert [t.value for t in at.text][:1] == ["message 0"]


def test_the_timeline_says_once_what_imported_runs_cannot_know(
        imported: tuple[InMemoryStorage, list[str]]) -> None:
    """An imported run does not say what memory recalled, dropped or observed: on a
    thread of imported runs those columns are left out (not 0, nor a column of
    "unknown") and one caption names them; the tokens are said to be our estimate."""
    from app.components import LANE_TITLES, TIMELINE_PAGE

    storage, _ = imported
    thread = storage.runs.list_runs(resource_id="cust-7")[0].thread_id
    at = AppTest.from_file(str(ENTRY), default_timeout=TIMEOUT)
    at.run()
    at.switch_page(TIMELINE_PAGE)
    at.query_params.update({"thread": thread})
    at.run()
    assert not at.exception and not at.error
    rows = tables(at)[0]
    for column in (LANE_TITLES["recalled"], LANE_TITLES["working_memory"],
                   LANE_TITLES["observations"], "recalled msgs", "dropped", "observations made"):
        assert column not in rows.columns, column
    assert all(int(v.replace(",", "")) > 0 for v in rows[LANE_TITLES["input"]])  # what the recording knows
    assert all(int(v.replace(",", "")) > 0 for v in rows["total (our estimate)"])
    (said,) = [c.value for c in at.caption if "as no run's record holds them" in c.value]
    assert said.endswith(": working memory tokens, observations tokens, recalled tokens, "
                         "messages recalled, messages dropped, observations made.")
