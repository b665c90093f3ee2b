"""Tests of the workbench read models (memory_core.views) over the in-memory adapter:
thread summaries, paging, message usage, search and the lane view of a run."""

from __future__ import annotations

import pytest

from memory_core import views
from memory_core.errors import InvalidInputError, NotFoundError
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import Message, RunRecord
from tests.app.fixture_db import (
    FAILED_RUN,
    LONG_THREAD,
    RESOURCE,
    RUN_1,
    RUN_2,
    SCRIPT_TEXT,
    SIBLING,
    T0,
    THREAD,
    build_fixture,
    fixed_clock,
)


@pytest.fixture()
def storage() -> InMemoryStorage:
    s = InMemoryStorage(clock=fixed_clock())
    build_fixture(s, long_count=120)
    return s


def test_render_text_shows_calls_and_results_literally() -> None:
    from memory_core.types import ToolCallPart, ToolResultPart

    m = Message(role="assistant", content=[ToolCallPart(id="1", name="f", args={"a": 1})])
    assert views.render_text(m) == '→ f({"a":1})'
    r = Message(role="tool", content=[ToolResultPart(call_id="1", name="f", result="ok")])
    assert views.render_text(r) == "f → ok"
    assert views.render_text(Message(content=SCRIPT_TEXT)) == SCRIPT_TEXT


def test_resources_and_thread_summaries(storage: InMemoryStorage) -> None:
    assert views.list_resources(storage) == ["user-42", "user-7"]
    rows = {t.thread_id: t for t in views.thread_summaries(storage, RESOURCE)}
    assert set(rows) == {THREAD, SIBLING, LONG_THREAD}
    assert rows[THREAD].message_count == 8
    assert rows[THREAD].run_ids == [RUN_1, RUN_2]
    assert rows[THREAD].title == "Refund for order A-17"
    assert rows[SIBLING].run_ids == [FAILED_RUN]
    assert rows[LONG_THREAD].message_count == 120
    # RUN_2 finished at T0 + 2h + 3s: the latest thing that happened on the thread
    assert rows[THREAD].last_activity >= T0.replace(hour=11)


def test_thread_messages_pages_and_usage(storage: InMemoryStorage) -> None:
    page = views.thread_messages(storage, THREAD)
    assert [m.seq for m in page.messages] == list(range(8))
    assert page.page_count == 1 and page.total == 8
    by_seq = {m.seq: m for m in page.messages}
    assert by_seq[2].tool_calls == ['→ lookup_order({"order":"A-17"})']
    assert by_seq[4].tool_results == ['lookup_order → {"status":"lost"}']
    assert by_seq[3].text == SCRIPT_TEXT
    assert by_seq[0].metadata == {"topic": "billing"}
    assert by_seq[0].used_by_runs == [RUN_1, RUN_2]  # recalled
    assert by_seq[5].used_by_runs == [RUN_1, RUN_2]  # recent
    assert by_seq[1].used_by_runs == []  # a near miss is not a use
    assert by_seq[6].used_by_runs == []  # dropped
    # a recalled message of a sibling thread knows the runs of the other thread
    sib = views.thread_messages(storage, SIBLING)
    assert sib.messages[0].used_by_runs == [RUN_1, RUN_2]

    p3 = views.thread_messages(storage, LONG_THREAD, page=3, page_size=50)
    assert p3.page_count == 3
    assert [m.seq for m in p3.messages] == list(range(100, 120))
    assert views.page_of_seq(100) == 3 and views.page_of_seq(49) == 1


def test_thread_messages_errors(storage: InMemoryStorage) -> None:
    with pytest.raises(NotFoundError, match="nope"):
        views.thread_messages(storage, "nope")
    with pytest.raises(InvalidInputError, match="page 9"):
        views.thread_messages(storage, THREAD, page=9)
    with pytest.raises(InvalidInputError, match="page_size"):
        views.thread_messages(storage, THREAD, page_size=0)


def test_search_within_resource(storage: InMemoryStorage) -> None:
    hits = views.search(storage, RESOURCE, "REFUND")
    assert {(h.thread_id, h.seq) for h in hits} >= {(THREAD, 0), (SIBLING, 0)}
    assert all(h.thread_id != "other-1" for h in hits)
    assert views.search(storage, "user-7", "refund") == []
    assert views.search(storage, RESOURCE, "   ") == []
    long_hit = views.search(storage, RESOURCE, "long message number 77")
    assert [(h.seq, h.page) for h in long_hit] == [(77, 2)]


def test_run_view_lanes_and_provenance(storage: InMemoryStorage) -> None:
    rv = views.run_view(storage, RUN_1)
    counts = {lv.lane: len(lv.items) for lv in rv.lanes}
    assert counts == {"instructions": 1, "working_memory": 1, "observations": 1,
                      "recalled": 2, "recent": 3, "input": 1, "dropped": 1}
    hit, repair = rv.lane("recalled").items
    assert (hit.seq, hit.score, hit.rank, hit.origin) == (0, 0.91, 1, "hit")
    assert (repair.thread_id, repair.origin, repair.score) == (SIBLING, "repair", None)
    obs = rv.lane("observations").items[0]
    assert [(s.from_seq, s.to_seq) for s in obs.sources] == [(0, 2)]
    dropped = rv.lane("dropped").items[0]
    assert dropped.reason == "unanswered-tool-call"
    assert dropped.text == '→ issue_refund({"order":"A-17"})'  # full text, not preview
    assert rv.lane("recent").items[0].text == SCRIPT_TEXT
    assert rv.threshold == 0.7 and rv.top_k == 2
    assert rv.settings["scope"] == "resource"
    assert [(c.rank, c.status) for c in rv.candidates] == [
        (1, "hit"), (2, "below-threshold"), (3, "below-threshold"), (4, "filtered-out")]
    assert rv.candidates[3].filter_clause == "topic $eq billing"
    assert rv.total_tokens == sum(lv.tokens for lv in rv.lanes if lv.lane != "dropped")
    assert rv.lane("instructions").tokens == 6  # ceil(24 / 4)
    assert [s.n for s in rv.steps] == [0, 1]
    assert rv.steps[0].tool_calls == ['→ lookup_order({"order":"A-17"})']
    assert rv.steps[0].model["seed"] == 7
    assert [(t.call_id, t.name, t.status) for t in rv.tool_calls] == [
        ("call-1", "lookup_order", "ok")]
    assert rv.answer == "We agreed to refund order A-17."
    assert rv.query == "What did we decide about the refund?"
    assert rv.run.status == "completed" and rv.notes == []
    assert views.run_view(storage, RUN_2).run.run_id == RUN_2


def test_run_view_of_failed_run_without_journal(storage: InMemoryStorage) -> None:
    rv = views.run_view(storage, FAILED_RUN)
    assert rv.run.status == "failed" and rv.error and "refused" in rv.error
    assert all(not lv.items for lv in rv.lanes)
    assert rv.answer is None and rv.candidates == [] and rv.steps == []
    assert any("no frozen prompt" in n for n in rv.notes)


def test_run_view_unknown_run_and_bad_journal(storage: InMemoryStorage) -> None:
    with pytest.raises(NotFoundError, match="ghost"):
        views.run_view(storage, "ghost")
    storage.runs.start_run(RunRecord(run_id="bad", agent="a", thread_id=THREAD,
                                     started_at=T0))
    storage.runs.put_if_absent("bad:prompt", {"items": [{"lane": "nowhere"}]})
    with pytest.raises(InvalidInputError, match="bad:prompt"):
        views.run_view(storage, "bad")


def test_list_runs_of_thread(storage: InMemoryStorage) -> None:
    assert [r.run_id for r in views.list_runs(storage, thread_id=THREAD)] == [RUN_1, RUN_2]
    assert [r.run_id for r in views.list_runs(storage)] == [RUN_1, RUN_2, FAILED_RUN]


def test_empty_storage() -> None:
    s = InMemoryStorage()
    assert views.list_resources(s) == []
    assert views.thread_summaries(s, None) == []
    assert views.list_runs(s) == []


def _runs(*spec: tuple[str, str | None]) -> list[views.RunSummary]:
    from datetime import UTC, datetime, timedelta

    t0 = datetime(2027, 1, 1, tzinfo=UTC)
    return [views.RunSummary(run_id=rid, agent="a", thread_id=tid, resource_id=None,
                             status="completed", started_at=t0 + timedelta(minutes=i),
                             finished_at=None) for i, (rid, tid) in enumerate(spec)]


def test_comparison_defaults_to_consecutive_runs_of_a_thread() -> None:
    runs = _runs(("a1", "A"), ("b1", "B"), ("a2", "A"), ("c1", "C"))
    # C has one run only: the newest run with a predecessor on its thread is a2
    assert views.comparison_thread(runs, [None, None]) == "A"
    pair = views.comparison_pair(runs, "A")
    assert (pair.default_a, pair.default_b) == ("a1", "a2")
    assert pair.options == ["a1", "a2", "b1", "c1"]
    # asked-for runs win; a thread with one run pairs it with its neighbour in the list
    assert views.comparison_thread(runs, ["c1", "a1"]) == "C"
    assert views.comparison_pair(runs, "A", wanted_b="b1").default_b == "b1"
    lone = views.comparison_pair(runs, "C")
    assert lone.default_b == "c1" and lone.default_a != "c1"
    with pytest.raises(InvalidInputError, match="at least two runs"):
        views.comparison_pair(runs[:1], "A")
