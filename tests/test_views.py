"""Tests of the workbench read models (memory_core.analysis.views) over the in-memory adapter:
thread summaries, paging, message usage, search and the lane view of a run."""

from __future__ import annotations

import pytest

from memory_core.analysis import views
from memory_core.analysis.counterfactual import list_counterfactuals
from memory_core.composition.observational import observe_key
from memory_core.errors import InvalidInputError, NotFoundError
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.tokens import estimate_tokens
from memory_core.types import Message, RunRecord
from tests.app.fixture_db import (
    ANSWER_1,
    FAILED_RUN,
    FAILURE,
    FAQ_THREAD,
    INSTRUCTIONS,
    LONG_THREAD,
    LOWER_RUN,
    NOTES_THREAD,
    OBS_RUN,
    QUESTION,
    RESOURCE,
    RUN_1,
    RUN_2,
    SCRIPT_TEXT,
    SIBLING,
    T0,
    THREAD,
    THRESHOLD,
    lane_counts,
    new_storage,
    records,
    seq_of,
)

THREAD_RUNS = [RUN_1, RUN_2, LOWER_RUN]


@pytest.fixture(scope="module")
def storage() -> InMemoryStorage:
    """Built once: these tests only read it."""
    return new_storage()


def test_the_fixture_covers_every_lane_and_fate(storage: InMemoryStorage) -> None:
    """What the page tests rely on, as the real Runner wrote it."""
    runs = [r.run_id for r in storage.runs.list_runs()]
    filled = {lane for rid in runs for lane, n in lane_counts(storage, rid).items() if n}
    assert filled == {"instructions", "working_memory", "observations", "recalled",
                      "recent", "input", "dropped"}
    ctxs = [c for c in (records(storage, rid).memctx for rid in runs) if c is not None]
    assert {r.origin for c in ctxs for r in c.recalled} == {"hit", "repair"}
    assert {n.reason for c in ctxs for n in c.near_misses} >= {"below-threshold",
                                                               "filtered-out"}
    assert {d.reason for c in ctxs for d in c.dropped} == {"unanswered-tool-call"}
    assert {r.status for r in storage.runs.list_runs()} == {"completed", "failed"}
    assert list_counterfactuals(storage, RUN_2)
    assert storage.runs.get(observe_key(NOTES_THREAD, 0)) is not None
    assert any(t.name == "update_working_memory" for t in records(storage, RUN_1).tools.values())


def test_render_text_shows_calls_and_results_literally() -> None:
    from memory_core.types import ToolCallPart, ToolResultPart

    m = Message(role="assistant", content=[ToolCallPart(id="1", name="f", args={"a": 1})])
    assert views.render_text(m) == '→ f({"a":1})'
    r = Message(role="tool", content=[ToolResultPart(call_id="1", name="f", result="ok")])
    assert views.render_text(r) == "f → ok"
    assert views.render_text(Message(content=SCRIPT_TEXT)) == SCRIPT_TEXT


def test_an_attachment_is_shown_where_it_stood_and_not_counted() -> None:
    """An outside trial (Braintrust's Gemini cassette): the run view showed "First,
    look at this image: What color is this image?" — the image between the two texts,
    which `why` searches, not shown. A placeholder is shown where it stood, by its
    type, media type and size; the row's token estimate is still the lane's (the
    attachment's tokens are not known)."""
    import json

    from memory_core.analysis.run_view import run_view
    from memory_core.importers import import_text

    png = "data:image/png;base64,AAAA"
    record = {"request": {"model": "m", "messages": [{"role": "user", "content": [
        {"type": "text", "text": "First, look at this image:"},
        {"type": "image_url", "image_url": {"url": png}},
        {"type": "text", "text": "What color is it?"},
        {"type": "input_audio", "input_audio": {"data": "AAAAAA==", "format": "wav"}}]}]},
        "response": {"choices": [{"message": {"role": "assistant", "content": "Blue."}}]}}
    s = InMemoryStorage()
    (rid,) = import_text(s, json.dumps(record)).runs_created
    (row,) = [i for lane in run_view(s, rid).lanes for i in lane.items]
    assert row.text == ("First, look at this image:\n[image_url: image/png, 3 bytes]\n"
                        "What color is it?\n[input_audio: wav, 4 bytes]")
    assert row.tokens == estimate_tokens("First, look at this image:\nWhat color is it?")
    assert views.render_text(Message(content="Hi.", metadata={"attachments": [
        {"type": "image"}, {"type": "document", "index": 9}]})) == "Hi.\n[image]\n[document]"


def test_resources_and_thread_summaries(storage: InMemoryStorage) -> None:
    assert views.list_resources(storage) == ["user-42", "user-7"]
    rows = {t.thread_id: t for t in views.thread_summaries(storage, RESOURCE)}
    assert set(rows) == {THREAD, SIBLING, LONG_THREAD, NOTES_THREAD, FAQ_THREAD}
    # the thread's history plus what its runs stored (their persist records)
    persisted = sum(len(storage.runs.get(f"{r}:persist:{k}")["seqs"])  # type: ignore[index]
                    for r in THREAD_RUNS for k in ("input", "output"))
    assert rows[THREAD].message_count == 7 + persisted
    assert rows[THREAD].run_count == len(THREAD_RUNS)
    assert rows[THREAD].title == "Refund for order A-17"
    assert rows[SIBLING].run_count == 1  # its one run failed: still a run on it
    assert rows[LONG_THREAD].message_count == 120
    # the last run on the thread finished last: the latest thing that happened on it
    last = storage.runs.get_run(LOWER_RUN)
    assert last is not None and last.finished_at is not None
    assert rows[THREAD].last_activity == last.finished_at > T0


def test_thread_messages_pages_and_usage(storage: InMemoryStorage) -> None:
    page = views.thread_messages(storage, THREAD)
    count = storage.memory.count_messages(THREAD)
    assert [m.seq for m in page.messages] == list(range(count))
    assert page.page_count == 1 and page.total == count
    by_seq = {m.seq: m for m in page.messages}
    lookup = seq_of(storage, THREAD, "Checking order")
    assert by_seq[lookup].tool_calls == ['→ lookup_order({"order":"A-17"})']
    assert by_seq[lookup + 1].tool_results == ['lookup_order → {"status":"lost"}']
    assert by_seq[seq_of(storage, THREAD, "<script>")].text == SCRIPT_TEXT
    assert by_seq[0].metadata == {"topic": "billing"}
    run1, run2 = records(storage, RUN_1).memctx, records(storage, RUN_2).memctx
    assert run1 is not None and run2 is not None
    hit = next(r.seq for r in run1.recalled if r.origin == "hit")
    assert by_seq[hit].used_by_runs == THREAD_RUNS  # recalled by every run of the thread
    # in RUN_1's recent window, only a near miss of RUN_2: a near miss is not a use
    near2 = {(n.thread_id, n.seq) for n in run2.near_misses}
    recent_then_near = next(r.seq for r in run1.recent if (THREAD, r.seq) in near2)
    assert by_seq[recent_then_near].used_by_runs == [RUN_1]
    [dropped] = run1.dropped
    assert by_seq[dropped.seq].used_by_runs == []  # dropped from every prompt
    # a message of a sibling thread recalled by a run of this thread knows that run
    entered = records(storage, LOWER_RUN).memctx
    assert entered is not None
    sib_seq = next(r.seq for r in entered.recalled if r.thread_id == SIBLING)
    sib = views.thread_messages(storage, SIBLING)
    assert LOWER_RUN in sib.messages[sib_seq].used_by_runs

    p3 = views.thread_messages(storage, LONG_THREAD, page=3, page_size=50)
    assert p3.page_count == 3
    assert [m.seq for m in p3.messages] == list(range(100, 120))
    assert views.page_of_seq(100, 50) == 3 and views.page_of_seq(49, 50) == 1
    assert views.page_of_seq(100) == 6 and views.page_of_seq(19) == 1  # 20 a page
    # a linked range past the page's end: the page goes on to it, one read, bounded
    ranged = views.thread_messages(storage, LONG_THREAD, page=1, page_size=10, through_seq=24)
    assert [m.seq for m in ranged.messages] == list(range(25)) and ranged.page == 1
    capped = views.thread_messages(storage, LONG_THREAD, page=1, page_size=5, through_seq=119)
    assert len(capped.messages) == 5 * views.MAX_RANGE_PAGES


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
    assert [(h.seq, h.page) for h in long_hit] == [(77, 4)]
    # no message holds the words as written: those holding every word, in any order
    assert [h.seq for h in views.search(storage, RESOURCE, "77 number LONG")] == [77]
    assert views.search(storage, RESOURCE, "77 number kettle") == []


def test_run_view_lanes_and_provenance(storage: InMemoryStorage) -> None:
    rv = views.run_view(storage, RUN_1)
    data = records(storage, RUN_1)
    memctx = data.memctx
    assert memctx is not None
    counts = {lv.lane: len(lv.items) for lv in rv.lanes}
    assert counts == lane_counts(storage, RUN_1)
    # the fixture covers every kind of recalled item and a dropped one
    assert counts["recalled"] >= 3 and counts["dropped"] == 1
    recalled = rv.lane("recalled").items
    assert [(i.thread_id, i.seq) for i in recalled] == [
        (i.thread_id, i.seq) for i in data.prompt.items if i.lane == "recalled"]
    refs = {(r.thread_id, r.seq): r for r in memctx.recalled}
    for item in recalled:
        ref = refs[(item.thread_id, item.seq)]  # type: ignore[index]
        assert (item.score, item.rank, item.origin) == (ref.score, ref.rank, ref.origin)
    assert {i.origin for i in recalled} == {"hit", "repair"}
    assert all(i.score is None for i in recalled if i.origin == "repair")
    dropped = rv.lane("dropped").items[0]
    assert dropped.reason == "unanswered-tool-call"
    stored = storage.memory.get_messages(THREAD, seqs=[memctx.dropped[0].seq])[0]
    assert dropped.text == views.render_text(stored.as_message())  # full text, not preview
    assert '→ issue_refund({"order":"A-17"})' in dropped.text
    assert rv.lane("recent").items[0].text == SCRIPT_TEXT
    assert rv.threshold == THRESHOLD and rv.top_k == memctx.settings.recall.top_k  # type: ignore[union-attr]
    assert rv.settings["scope"] == "resource"
    # (a filtered-out near miss is ranked with the filter lifted: the rank the record
    # gives it is where it would have gone among the rows the filter passed)
    expected = sorted([(r.rank, "hit") for r in memctx.recalled if r.origin == "hit"]
                      + [(n.rank, n.reason) for n in memctx.near_misses
                         if n.reason != "filtered-out"])
    assert sorted((c.rank, c.status) for c in rv.candidates
                  if c.status != "filtered-out") == expected
    lifted = {(c.thread_id, c.seq): c.rank for c in rv.candidates if c.status == "filtered-out"}
    assert all(lifted[(n.thread_id, n.seq)] >= n.rank for n in memctx.near_misses
               if n.reason == "filtered-out")
    assert {"hit", "below-threshold", "filtered-out"} <= {c.status for c in rv.candidates}
    clauses = {c.filter_clause for c in rv.candidates if c.status == "filtered-out"}
    assert clauses == {n.filter_clause for n in memctx.near_misses
                       if n.reason == "filtered-out"} and None not in clauses
    assert rv.total_tokens == sum(lv.tokens for lv in rv.lanes if lv.lane != "dropped")
    assert rv.lane("instructions").tokens == estimate_tokens(INSTRUCTIONS)
    assert [s.n for s in rv.steps] == [0, 1]
    assert '→ lookup_order({"order":"A-17"})' in rv.steps[0].tool_calls
    assert rv.steps[0].model == data.steps[0].model.model_dump(mode="json")
    assert rv.steps[0].model["name"]
    assert [(t.call_id, t.name, t.status) for t in rv.tool_calls] == [
        ("call-1", "lookup_order", "ok"), ("call-2", "update_working_memory", "ok")]
    assert rv.answer == ANSWER_1
    assert rv.query == QUESTION
    assert rv.run.status == "completed" and rv.notes == []
    assert views.run_view(storage, RUN_2).run.run_id == RUN_2


def test_run_view_of_observational_run(storage: InMemoryStorage) -> None:
    rv = views.run_view(storage, OBS_RUN)
    memctx = records(storage, OBS_RUN).memctx
    assert memctx is not None and memctx.observations
    [obs] = rv.lane("observations").items
    assert [(s.from_seq, s.to_seq) for s in obs.sources] == [
        (o.from_seq, o.to_seq) for o in memctx.observations]
    assert obs.text.startswith("# Observations\n")
    assert rv.lane("recalled").items == [] and rv.recall_skipped


def test_run_view_of_a_failed_run(storage: InMemoryStorage) -> None:
    rv = views.run_view(storage, FAILED_RUN)
    assert rv.run.status == "failed" and rv.error and FAILURE in rv.error
    # it failed at the model: composition was frozen, nothing after it
    assert {lv.lane: len(lv.items) for lv in rv.lanes} == lane_counts(storage, FAILED_RUN)
    assert rv.answer is None and rv.steps == [] and rv.notes == []


def test_run_view_of_a_run_row_without_journal(storage: InMemoryStorage) -> None:
    # a run row whose records are gone (or were never written by the program that
    # started it) is shown with notes, not an exception
    s = InMemoryStorage()
    s.runs.start_run(RunRecord(run_id="bare", agent="a", thread_id="t", started_at=T0))
    s.runs.set_run_status("bare", "failed", error="killed")
    rv = views.run_view(s, "bare")
    assert all(not lv.items for lv in rv.lanes)
    assert rv.answer is None and rv.candidates == [] and rv.steps == []
    assert any("no frozen prompt" in n for n in rv.notes)


def test_run_view_unknown_run_and_bad_journal(storage: InMemoryStorage) -> None:
    with pytest.raises(NotFoundError, match="ghost"):
        views.run_view(storage, "ghost")
    storage = new_storage()  # written to below
    storage.runs.start_run(RunRecord(run_id="bad", agent="a", thread_id=THREAD,
                                     started_at=T0))
    storage.runs.put_if_absent("bad:prompt", {"items": [{"lane": "nowhere"}]})
    with pytest.raises(InvalidInputError, match="bad:prompt"):
        views.run_view(storage, "bad")


def test_list_runs_of_thread(storage: InMemoryStorage) -> None:
    assert [r.run_id for r in views.list_runs(storage, thread_id=THREAD)] == THREAD_RUNS
    everything = views.list_runs(storage)
    assert [r.run_id for r in everything] == sorted(
        (r.run_id for r in storage.runs.list_runs()),
        key=lambda rid: storage.runs.get_run(rid).started_at)  # type: ignore[union-attr]
    assert everything[-1].run_id == FAILED_RUN


def test_empty_storage() -> None:
    s = InMemoryStorage()
    assert views.list_resources(s) == []
    assert views.thread_summaries(s, None) == []
    assert views.list_runs(s) == []


def _runs(*spec: tuple[str, str | None]) -> views.Runs:
    from datetime import UTC, datetime, timedelta

    t0 = datetime(2027, 1, 1, tzinfo=UTC)
    return views.Runs([views.RunSummary(run_id=rid, agent="a", thread_id=tid,
                                        resource_id=None, status="completed",
                                        started_at=t0 + timedelta(minutes=i),
                                        finished_at=None) for i, (rid, tid) in enumerate(spec)])


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


def test_run_pickers_offer_the_threads_runs_plus_the_named_and_found_ones() -> None:
    runs = _runs(("a1", "A"), ("b1", "B"), ("a2", "A"), ("c1", "C"), ("b2", "B"))
    ids = lambda got: [r.run_id for r in got]  # noqa: E731
    assert ids(views.offered_runs(runs, "A", [])) == ["a1", "a2"]
    # runs named by the URL or found by a search join, in the runs' order
    assert ids(views.offered_runs(runs, "A", ["b2", None, "c1"])) == ["a1", "a2", "c1", "b2"]
    # one run on the thread: its neighbour joins, so a pair can be made
    assert ids(views.offered_runs(runs, "C", [])) == ["a2", "c1"]
    assert ids(views.offered_runs(runs[:2], "A", [])) == ["a1", "b1"]
    # search: run or thread ids, case-insensitive, newest first; empty text finds none
    assert views.run_search(runs, " b ") == ["b2", "b1"]
    assert views.run_search(runs, "A1") == ["a1"] and views.run_search(runs, "  ") == []


def test_runs_look_up_what_a_pass_over_every_run_finds() -> None:
    spec = [(f"r{i}", (None, "A", "B", "C", "")[i * 7 % 5]) for i in range(40)]
    runs = _runs(*spec)
    listed = list(runs)
    assert len(runs) == 40 and [r.run_id for r in runs] == [rid for rid, _ in spec]
    assert list(reversed(runs)) == listed[::-1] and runs[3] == listed[3]
    assert isinstance(runs[:5], views.Runs) and list(runs[:5]) == listed[:5]
    for r in listed:
        assert runs.get(r.run_id) is r and runs.position(r.run_id) == listed.index(r)
        key = views.thread_key(r)
        same = [x for x in listed if views.thread_key(x) == key]
        assert runs.on_thread(key) == same
        before = same[:same.index(r)]
        assert runs.previous(r.run_id) == (
            before[-1].run_id if before and r.thread_id else None)
    assert runs.get("ghost") is None and runs.get(None) is None
    assert runs.previous("ghost") is None and runs.on_thread("nowhere") == []
    # runs on no thread (None or "") are one thread, NO_THREAD, and have no previous
    assert {r.thread_id for r in runs.on_thread(views.NO_THREAD)} == {None, ""}
