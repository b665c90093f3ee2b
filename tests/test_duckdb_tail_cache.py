"""A DuckDB writer's knowledge of each thread's count and last messages (``_Tail``):
a composition reads both every run, and while this process writes the file its own
appends are the only change, so after one read they come from memory. What it
answers must be what the file holds — checked against the shared SQL store's reads
after every kind of write — and a run's composition reads nothing."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from memory_core.storage.duckdb import DuckDBStorage
from memory_core.storage.sql_common import SqlMemoryStore
from memory_core.types import AppendRow, Message
from tests.test_duckdb_writer_cache import Reads

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)


@pytest.fixture(params=[30.0, 0.0], ids=["deferred", "immediate"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[DuckDBStorage]:
    s = DuckDBStorage(tmp_path / "tails.duckdb", commit_delay=request.param)
    try:
        yield s
    finally:
        s.close()


def _row(text: str, i: int, **kw: object) -> AppendRow:
    return AppendRow(message=Message(role="user" if i % 2 else "assistant", content=text,
                                     metadata={"i": i}),
                     embedding=np.full(4, i, np.float32), run_id=f"run-{i % 3}",
                     created_at=T0 + timedelta(seconds=i), **kw)  # type: ignore[arg-type]


def _ranges(top: int, n: int) -> list[dict[str, object]]:
    """get_messages' forms around the last ``n`` seqs (a recalled call's later rows,
    the rows before a window, given seqs)."""
    return [{}, {"from_seq": top - n + 1}, {"from_seq": top - n, "to_seq": top - 1},
            {"from_seq": top + 1}, {"seqs": [top - n + 1, top - 1, top, top + 5]},
            {"seqs": []}]


def _as_read(store: DuckDBStorage, tid: str, n: int) -> object:
    """What the shared SQL store reads from the file (flushing waiting appends)."""
    m = store.memory
    top = SqlMemoryStore.max_seq(m, tid)
    return (SqlMemoryStore.count_messages(m, tid), top, SqlMemoryStore.get_tail(m, tid, n),
            [SqlMemoryStore.get_messages(m, tid, **r) for r in _ranges(top, n)])  # type: ignore[arg-type]


def _known(store: DuckDBStorage, tid: str, n: int) -> object:
    m = store.memory
    top = m.max_seq(tid)
    return (m.count_messages(tid), top, m.get_tail(tid, n),
            [m.get_messages(tid, **r) for r in _ranges(top, n)])  # type: ignore[arg-type]


def test_count_and_tail_agree_with_the_file_through_every_kind_of_write(
        store: DuckDBStorage) -> None:
    rng = random.Random(16)
    m = store.memory
    m.create_thread("t", resource_id="u")
    m.create_thread("other", resource_id="u")
    i = 0
    for step in range(120):
        op = rng.choice(["joined", "joined", "plain", "plain", "explicit", "truncate",
                         "title", "wm", "other", "read"])
        if op == "joined":  # a Runner's write group
            with store.write_batch():
                m.append_messages("t", [_row(f"j{i}", i), _row(f"j{i + 1}", i + 1)])
            i += 2
        elif op == "plain":  # waits in memory (deferred) or commits alone
            m.append_messages("t", [_row(f"p{i}", i)])
            i += 1
        elif op == "explicit":  # explicit seqs: the shared store's append
            top = SqlMemoryStore.max_seq(m, "t")
            m.append_messages("t", [_row(f"e{i}", i, seq=top + 3)])
            i += 1
        elif op == "truncate" and step % 3 == 0:
            top = SqlMemoryStore.max_seq(m, "t")
            if top > 4:
                m.delete_messages_after("t", top - 3)
        elif op == "title":
            m.update_thread("t", title=f"title {step}")
        elif op == "wm":
            m.put_working_memory("thread:t", {"step": step})
        elif op == "other":
            with store.write_batch():
                m.append_messages("other", [_row(f"o{i}", i)])
            i += 1
        for n in (1, 4, 9, 70, 200, 1500):
            # the answer from what this process knows first, then the file's
            assert _known(store, "t", n) == _as_read(store, "t", n), (step, op, n)
    assert m.count_messages("t") > 50
    assert _known(store, "ghost", 5) == (0, -1, [], [[]] * 6)


def test_a_live_agents_composition_reads_neither_count_nor_tail(
        store: DuckDBStorage, monkeypatch: pytest.MonkeyPatch) -> None:
    m = store.memory
    m.create_thread("t", resource_id="u")
    with store.write_batch():
        m.append_messages("t", [_row("hello", 0)])
    assert m.count_messages("t") == 1 and len(m.get_tail("t", 12)) == 1  # read once
    reads = Reads(monkeypatch)
    for turn in range(1, 6):
        count, tail = m.count_messages("t"), m.get_tail("t", 12)  # compose
        assert count == 2 * turn - 1 and tail[-1].seq == 2 * turn - 2
        with store.write_batch():  # the run's input, then its output
            m.append_messages("t", [_row(f"q{turn}", 2 * turn - 1)])
        with store.write_batch():
            m.append_messages("t", [_row(f"a{turn}", 2 * turn)])
    assert reads.of("messages") == [] and reads.of("threads") == []
    # each caller gets messages of its own: changing one changes nothing kept
    got = m.get_tail("t", 3)
    got[0].metadata["changed"] = True
    assert "changed" not in m.get_tail("t", 3)[0].metadata
    assert _known(store, "t", 11) == _as_read(store, "t", 11)


def test_rows_the_tail_holds_are_not_read_again(
        store: DuckDBStorage, monkeypatch: pytest.MonkeyPatch) -> None:
    """A recalled tool call's later rows, and the rows just before a recent window,
    come from what this process knows of the thread when it holds all of them."""
    m = store.memory
    m.create_thread("t")
    m.append_messages("t", [_row(f"m{i}", i) for i in range(30)])
    m.list_threads()  # committed
    # as rows another process wrote (of a thread made here, every row committed since
    # is known: test_duckdb_small_scan)
    store._duck.handle.forget()
    assert len(m.get_tail("t", 20)) == 20  # read once: seqs 10..29 kept
    reads = Reads(monkeypatch)
    assert [x.seq for x in m.get_messages("t", from_seq=25)] == [25, 26, 27, 28, 29]
    assert [x.seq for x in m.get_messages("t", from_seq=12, to_seq=14)] == [12, 13, 14]
    assert [x.seq for x in m.get_messages("t", seqs=[29, 10, 40])] == [10, 29]
    assert reads.of("messages") == []
    assert [x.seq for x in m.get_messages("t", from_seq=8, to_seq=10)] == [8, 9, 10]
    assert len(reads.of("messages")) == 1  # seqs 8 and 9 are not kept: read


def test_a_rolled_back_append_is_not_in_the_tail(store: DuckDBStorage) -> None:
    m = store.memory
    m.create_thread("t")
    m.append_messages("t", [_row("kept", 0)])
    assert [x.text() for x in m.get_tail("t", 5)] == ["kept"]
    with pytest.raises(RuntimeError), store.write_batch():
        m.append_messages("t", [_row("lost", 1)])
        assert [x.text() for x in m.get_tail("t", 5)] == ["kept", "lost"]
        raise RuntimeError("the group fails")
    assert _known(store, "t", 5) == _as_read(store, "t", 5)
    assert [x.text() for x in m.get_tail("t", 5)] == ["kept"]


def test_a_reader_reads_count_and_tail_once_a_call(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A read-only storage (the workbench) knows nothing between calls (another
    process may write): one read a call, as the shared store makes."""
    path = tmp_path / "read.duckdb"
    w = DuckDBStorage(path)
    w.memory.create_thread("t")
    w.memory.append_messages("t", [_row(f"m{i}", i) for i in range(5)])
    w.close()
    r = DuckDBStorage(path, read_only=True)
    try:
        reads = Reads(monkeypatch)
        assert r.memory.count_messages("t") == 5 and r.memory.max_seq("t") == 4
        assert [m.seq for m in r.memory.get_tail("t", 3)] == [2, 3, 4]
        assert len(reads.seen) == 3, reads.seen
        assert (r.memory.count_messages("ghost"), r.memory.get_tail("ghost", 3)) == (0, [])
    finally:
        r.close()
