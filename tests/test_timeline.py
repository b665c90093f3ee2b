"""composition_timeline: tokens per lane across a thread's runs in run order, the runs
where observations were compacted, runs without provenance skipped, bad input named."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memory_core.analysis.timeline import composition_timeline
from memory_core.errors import InvalidInputError, NotFoundError
from memory_core.provenance.record import (
    LANES,
    CompositionSettings,
    LaneTokens,
    Memctx,
    ObservationRef,
)
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import RunRecord

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
THREAD = "t-1"


def _run(storage: InMemoryStorage, run_id: str, minutes: int, *, thread: str = THREAD,
         obs: int = 0, recent: int = 10, recalled: int = 0,
         memctx: bool = True) -> None:
    storage.runs.start_run(RunRecord(run_id=run_id, agent="a", thread_id=thread,
                                     resource_id="u", started_at=T0 + timedelta(minutes=minutes)))
    storage.runs.set_run_status(run_id, "completed")
    if not memctx:
        return
    record = Memctx(
        thread_id=thread, resource_id="u", recent_count=4, observation_count=obs,
        observations=[ObservationRef(id=f"obs-{i}", thread_id=thread, level=0, from_seq=0,
                                     to_seq=3, preview="…") for i in range(obs)],
        tokens=LaneTokens(instructions=5, observations=7 * obs, recalled=recalled,
                          recent=recent, input=3),
        settings=CompositionSettings(recent_n=4, recall_enabled=True, observational=True))
    storage.runs.put_if_absent(f"{run_id}:memctx", record.model_dump(mode="json"))


@pytest.fixture()
def storage() -> InMemoryStorage:
    s = InMemoryStorage()
    s.memory.create_thread(THREAD, resource_id="u")
    s.memory.create_thread("other", resource_id="u")
    # inserted out of order: the timeline follows started_at
    _run(s, "r3", 30, obs=1, recent=12)
    _run(s, "r1", 10, recent=20, recalled=4)
    _run(s, "r2", 20, recent=40)
    _run(s, "r4", 40, obs=1, recent=15)
    _run(s, "r5", 50, obs=2, recent=9)
    _run(s, "crashed", 35, memctx=False)
    _run(s, "elsewhere", 5, thread="other", recent=99)
    return s


def test_points_follow_run_order_with_tokens_per_lane(storage: InMemoryStorage) -> None:
    tl = composition_timeline(storage, THREAD)
    assert [p.run_id for p in tl.points] == ["r1", "r2", "r3", "r4", "r5"]
    assert [p.index for p in tl.points] == [0, 1, 2, 3, 4]
    first = tl.points[0]
    assert set(first.tokens) == set(LANES)
    assert first.tokens["recent"] == 20 and first.tokens["recalled"] == 4
    assert first.total_tokens == 5 + 4 + 20 + 3
    assert [p.tokens["observations"] for p in tl.points] == [0, 0, 7, 7, 14]
    assert "elsewhere" not in [p.run_id for p in tl.points]


def test_compactions_are_the_runs_where_observations_rose(storage: InMemoryStorage) -> None:
    tl = composition_timeline(storage, THREAD)
    assert [p.run_id for p in tl.compactions] == ["r3", "r5"]
    r3, r4, r5 = tl.points[2:]
    assert r3.new_observations == ["obs-0"]
    assert r4.new_observations == [] and not r4.compacted
    assert r5.new_observations == ["obs-1"] and r5.observation_count == 2


def test_runs_without_provenance_are_listed_not_plotted(storage: InMemoryStorage) -> None:
    tl = composition_timeline(storage, THREAD)
    assert tl.skipped == ["crashed"]
    # the skipped run does not break the comparison with the previous plotted run
    assert tl.points[3].run_id == "r4" and not tl.points[3].compacted


def test_first_run_already_carrying_observations_counts_as_compacted() -> None:
    s = InMemoryStorage()
    s.memory.create_thread(THREAD)
    _run(s, "late", 1, obs=1)
    assert [p.run_id for p in composition_timeline(s, THREAD).compactions] == ["late"]


def test_thread_without_runs_is_empty(storage: InMemoryStorage) -> None:
    storage.memory.create_thread("quiet")
    tl = composition_timeline(storage, "quiet")
    assert tl.points == [] and tl.skipped == [] and tl.compactions == []


def test_unknown_thread_and_bad_ids_are_named(storage: InMemoryStorage) -> None:
    with pytest.raises(NotFoundError, match="'ghost'"):
        composition_timeline(storage, "ghost")
    with pytest.raises(InvalidInputError, match="non-empty"):
        composition_timeline(storage, "")


def test_malformed_record_is_an_invalid_input_naming_the_run(storage: InMemoryStorage) -> None:
    storage.runs.start_run(RunRecord(run_id="bad", agent="a", thread_id=THREAD,
                                     started_at=T0 + timedelta(hours=2)))
    storage.runs.put_if_absent("bad:memctx", {"v": 1, "thread_id": THREAD, "settings": 3})
    with pytest.raises(InvalidInputError, match="bad:memctx"):
        composition_timeline(storage, THREAD)
