"""Conformance: ``Storage.write_batch`` — the writes of a block (journal records, a run's
row and status, thread and message appends) in one transaction where the adapter
groups writes (capability ``atomic_batches``: SQLite, PostgreSQL, DuckDB): read back
inside the block, seen by another handle only once it ends (``separate_connections``),
and nothing of them left when it fails. The Runner groups a
run's writes with it (memory_core/runs/runner.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory_core.storage.base import Storage
from memory_core.testing.factory import ATOMIC_BATCHES, SEPARATE_CONNECTIONS, AdapterFactory
from memory_core.types import AppendRow, Message, RunRecord

T0 = datetime(2026, 1, 1, tzinfo=UTC)


class Boom(Exception):
    pass


def _run(rid: str) -> RunRecord:
    return RunRecord(run_id=rid, agent="a", thread_id="t", resource_id="u",
                     status="running", started_at=T0)


def _rows(*texts: str) -> list[AppendRow]:
    return [AppendRow(message=Message(role="user", content=t), run_id="r1") for t in texts]


def _write_a_run(storage: Storage) -> list[int]:
    storage.runs.put_if_absent("r1:input", {"v": 1})
    assert storage.runs.start_run(_run("r1"))
    seqs = storage.memory.append_messages("t", _rows("hello", "world"))
    storage.runs.put_many_if_absent([("r1:persist:input", {"seqs": seqs}),
                                     ("r1:output", "done")])
    storage.runs.set_run_status("r1", "completed", finished_at=T0)
    return seqs


def test_a_batch_reads_back_its_own_writes(storage: Storage) -> None:
    storage.memory.create_thread("t", resource_id="u")
    with storage.write_batch():
        seqs = _write_a_run(storage)
        assert seqs == [0, 1]
        assert storage.runs.get("r1:input") == {"v": 1}
        assert [k for k, _ in storage.runs.list("r1:")] == [
            "r1:input", "r1:persist:input", "r1:output"]
        assert storage.runs.require_run("r1").status == "completed"
        assert [m.text() for m in storage.memory.get_messages("t")] == ["hello", "world"]
        assert storage.memory.append_messages("t", _rows("again")) == [2]
    assert storage.memory.max_seq("t") == 2
    assert storage.runs.require_run("r1").status == "completed"


def test_a_failed_batch_leaves_nothing_of_itself(adapter: AdapterFactory,
                                                  storage: Storage) -> None:
    storage.memory.create_thread("t", resource_id="u")
    storage.runs.put_if_absent("before", 0)
    with pytest.raises(Boom):
        with storage.write_batch():
            _write_a_run(storage)
            storage.memory.create_thread("t2")
            raise Boom
    if not adapter.has(ATOMIC_BATCHES):
        return  # no atomic_batches: each write committed on its own
    assert storage.runs.list("") == [("before", 0)]
    assert storage.runs.get_run("r1") is None
    assert storage.memory.get_messages("t") == [] and storage.memory.max_seq("t") == -1
    assert storage.memory.get_thread("t2") is None
    # the seqs a rolled-back append took are given again
    assert storage.memory.append_messages("t", _rows("after")) == [0]


def test_a_batch_is_one_commit_another_handle_sees_whole(
        adapter: AdapterFactory, storage: Storage, tmp_path: Path) -> None:
    if not adapter.has(SEPARATE_CONNECTIONS):
        pytest.skip(f"{adapter.name}: no {SEPARATE_CONNECTIONS} (a second handle with a "
                    "connection of its own)")
    other = adapter.open_again(tmp_path)
    assert other is not None
    try:
        storage.memory.create_thread("t", resource_id="u")
        with storage.write_batch():
            _write_a_run(storage)
            assert other.runs.get("r1:input") is None and other.runs.get_run("r1") is None
            assert other.memory.get_messages("t") == []
        assert other.runs.require_run("r1").status == "completed"
        assert len(other.runs.list("r1:")) == 3 and other.memory.max_seq("t") == 1
    finally:
        other.close()


def test_batches_nest_into_the_outermost(adapter: AdapterFactory, storage: Storage) -> None:
    storage.memory.create_thread("t", resource_id="u")
    with pytest.raises(Boom):
        with storage.write_batch():
            with storage.write_batch():
                storage.runs.put_if_absent("inner", 1)
            storage.runs.put_if_absent("outer", 2)
            raise Boom
    expected = [] if adapter.has(ATOMIC_BATCHES) else [("inner", 1), ("outer", 2)]
    assert storage.runs.list("") == expected


def test_put_many_if_absent_is_put_if_absent_in_order(storage: Storage) -> None:
    """A few records (one multi-row statement on SQL adapters) or many (a batch
    insert): stored keys and repeats keep their first value, order is write order."""
    assert storage.runs.put_if_absent("k:1", {"first": True})
    assert storage.runs.put_many_if_absent([("k:1", "ignored"), ("k:2", [1, 2]),
                                            ("k:3", None), ("k:2", "repeat ignored")]) == 2
    assert storage.runs.list("k:") == [("k:1", {"first": True}), ("k:2", [1, 2]),
                                       ("k:3", None)]
    many = [(f"m:{i:03d}", {"i": i}) for i in range(150)]
    assert storage.runs.put_many_if_absent([("k:3", 0), *many]) == 150
    assert storage.runs.list("m:") == many
    assert storage.runs.put_many_if_absent(many[:5]) == 0


def test_recall_reads_inside_a_batch_see_its_writes(storage: Storage) -> None:
    """Recall's single-statement reads (the scope's counts, the change token) inside a
    batch see what the batch wrote: on PostgreSQL they must use the batch's connection,
    not another pooled one in autocommit."""
    storage.memory.create_thread("t", resource_id="u")
    before = storage.memory.change_token()
    with storage.write_batch():
        storage.memory.append_messages("t", _rows("hello", "world"))
        assert storage.memory.scope_counts("t", "u")["t"].max_seq == 1
        token = storage.memory.change_token()
        assert token is None or token != before
