"""load_run reads a run's journal with one query (the workbench's pages load many runs
on a file database, where each query costs a round trip), and gives the same records
as reading them one at a time."""

from __future__ import annotations

from typing import Any

import pytest

from memory_core.errors import InvalidInputError, NotFoundError
from memory_core.journal import RunReader, load_run
from memory_core.storage.inmemory import InMemoryStorage
from tests.app.fixture_db import FAILED_RUN, OBS_RUN, RUN_1, RUN_2, new_storage


class CountingJournal:
    """The storage's journal, counting the reads made through it."""

    def __init__(self, runs: Any) -> None:
        self._runs = runs
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._runs, name)
        if callable(attr) and name in ("get", "has", "list"):
            def counted(*args: Any, **kwargs: Any) -> Any:
                self.calls.append(name)
                return attr(*args, **kwargs)
            return counted
        return attr


@pytest.fixture()
def storage() -> InMemoryStorage:
    return new_storage()


@pytest.mark.parametrize("run_id", [RUN_1, RUN_2, OBS_RUN])
def test_one_journal_query_gives_every_record_as_one_at_a_time_reading_does(
        storage: InMemoryStorage, run_id: str) -> None:
    one_by_one = RunReader(storage.runs, run_id)
    counting = CountingJournal(storage.runs)
    storage.runs = counting  # type: ignore[assignment]
    data = load_run(storage, run_id)
    assert counting.calls == ["list"]
    assert data.prompt == one_by_one.prompt()
    assert data.memctx == one_by_one.memctx()
    assert [s.record for s in data.steps] == [s.record for s in one_by_one.steps()]
    assert data.tools == one_by_one.tools()
    assert (data.output, data.input) == (one_by_one.output(), one_by_one.input())
    assert (data.persist_input, data.persist_output) == (one_by_one.persist_input(),
                                                         one_by_one.persist_output())


def test_a_listed_run_record_saves_the_run_query(storage: InMemoryStorage) -> None:
    record = storage.runs.get_run(RUN_2)
    assert record is not None
    counting = CountingJournal(storage.runs)
    storage.runs = counting  # type: ignore[assignment]
    assert load_run(storage, RUN_2, record=record).run == record
    with pytest.raises(InvalidInputError, match=RUN_1):
        load_run(storage, RUN_2, record=storage.runs.get_run(RUN_1))


def test_unknown_and_unfrozen_runs_are_still_not_found(storage: InMemoryStorage) -> None:
    with pytest.raises(NotFoundError, match="no-such-run"):
        load_run(storage, "no-such-run")
    # a run whose model failed froze its prompt first: it reads, with no output
    data = load_run(storage, FAILED_RUN)
    assert data.run.status == "failed" and data.output is None


def test_a_lifeline_reads_each_run_by_point_reads_and_agrees_with_whole_runs(
        storage: InMemoryStorage) -> None:
    from memory_core.analysis.forgotten import explain_message, lifeline
    from tests.app.fixture_db import REFUND_TEXT, THREAD, seq_of

    seq = seq_of(storage, THREAD, REFUND_TEXT)
    msg = storage.memory.get_messages(THREAD, seqs=[seq])[0]
    expected = [explain_message(storage, load_run(storage, r.run_id), msg)
                for r in storage.runs.list_runs(thread_id=THREAD)]
    counting = CountingJournal(storage.runs)
    storage.runs = counting  # type: ignore[assignment]
    points = lifeline(storage, THREAD, seq)
    assert "list" not in counting.calls
    assert [(p.run_id, p.fate, p.sentence) for p in points] == [
        (e.run_id, e.fate, e.sentence) for e in expected]
    assert len(points) >= 3
