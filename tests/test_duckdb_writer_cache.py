"""What a DuckDB writer knows while it holds the file: each thread's row and seqs and
the store's dimension are read once and kept, because no other process can write
then. Every way they can change drops them: any write of this process outside the
journal and runs (even inside a write batch), a rolled-back batch, and the file's
release (another writer may write before this process has it again)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from memory_core.errors import InvalidInputError
from memory_core.storage import duckdb as duck
from memory_core.storage.duckdb import DuckDBStorage
from memory_core.types import AppendRow, Message, RunRecord
from tests.test_duckdb_processes import spawn


class Reads:
    """The SELECTs every DuckDB transaction runs (reads and writes alike)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.seen: list[str] = []
        real = duck._DuckTx.query

        def query(tx: duck._DuckTx, sql: str, params: object = ()) -> object:
            self.seen.append(" ".join(sql.split()))
            return real(tx, sql, params)  # type: ignore[arg-type]

        monkeypatch.setattr(duck._DuckTx, "query", query)

    def of(self, table: str) -> list[str]:
        return [s for s in self.seen if f"FROM {table}" in s]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[DuckDBStorage]:
    s = DuckDBStorage(tmp_path / "cache.duckdb", commit_delay=30)
    try:
        yield s
    finally:
        s.close()


def _row(text: str, vec: np.ndarray | None = None) -> AppendRow:
    return AppendRow(message=Message(content=text), embedding=vec)


def test_an_append_in_a_batch_reads_nothing_this_writer_knows(
        store: DuckDBStorage, monkeypatch: pytest.MonkeyPatch) -> None:
    store.memory.create_thread("t", resource_id="u")
    vec = np.ones(4, np.float32)
    with store.write_batch():
        assert store.memory.append_messages("t", [_row("a", vec)]) == [0]
    reads = Reads(monkeypatch)
    for i in (1, 2):
        with store.write_batch():  # a Runner's write group
            assert store.memory.append_messages("t", [_row(f"m{i}", vec)]) == [i]
    # the thread's row, its seq floor and the dimension were not read again (they were
    # three to four reads an append)
    assert reads.of("threads") == [] and reads.of("meta") == []
    assert [m.seq for m in store.memory.get_messages("t")] == [0, 1, 2]
    assert store.memory.count_messages("t") == 3 and store.memory.max_seq("t") == 2
    # nor by a recall's scope scan
    assert store.memory.embedding_dim() == 4
    assert store.memory.scope_rows(["t"]).matrix.shape == (3, 4)  # type: ignore[union-attr]
    assert reads.of("meta") == []


def test_a_rolled_back_batch_drops_what_its_appends_taught(store: DuckDBStorage) -> None:
    store.memory.create_thread("t")
    with pytest.raises(RuntimeError), store.write_batch():
        assert store.memory.append_messages("t", [_row("lost", np.ones(4, np.float32))]) \
            == [0]
        raise RuntimeError("the group fails")
    # the seq and the dimension of the lost append are not kept
    assert store.memory.append_messages("t", [_row("kept", np.ones(8, np.float32))]) == [0]
    assert store.memory.embedding_dim() == 8
    assert [m.text() for m in store.memory.get_messages("t")] == ["kept"]


def test_a_batch_reads_again_what_it_changed(store: DuckDBStorage) -> None:
    store.memory.create_thread("t", resource_id="a", title="first")
    with store.write_batch():
        store.memory.append_messages("t", [_row("x"), _row("y"), _row("z")])
        assert store.memory.get_thread("t").title == "first"  # type: ignore[union-attr]
        store.memory.update_thread("t", title="second", resource_id="b")
        assert store.memory.get_thread("t").title == "second"  # type: ignore[union-attr]
        assert store.memory.append_messages("t", [_row("w")]) == [3]
        # a truncation inside the batch: its removed seqs are never given again
        assert store.memory.delete_messages_after("t", 0) == [1, 2, 3]
        assert store.memory.append_messages("t", [_row("v")]) == [4]
    got = store.memory.get_messages("t")
    assert [(m.seq, m.resource_id) for m in got] == [(0, "b"), (4, "b")]


def test_the_dimension_fixed_in_a_batch_is_checked_in_it(store: DuckDBStorage) -> None:
    store.memory.create_thread("t")
    with store.write_batch():
        store.memory.append_messages("t", [_row("a", np.ones(4, np.float32))])
        with pytest.raises(InvalidInputError, match="dimension"):
            store.memory.append_messages("t", [_row("b", np.ones(8, np.float32))])


def test_a_thread_row_is_read_once_while_writing(
        store: DuckDBStorage, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store.memory.create_thread("t", title="first", metadata={"k": 1})
    store.memory.create_thread("gone")
    store.memory.get_thread("t")
    reads = Reads(monkeypatch)
    got = store.memory.get_thread("t")
    assert got is not None and got.title == "first" and reads.of("threads") == []
    got.metadata["k"] = 2  # the caller's copy: the kept row does not change
    assert store.memory.get_thread("t").metadata == {"k": 1}  # type: ignore[union-attr]
    # every write of a thread row drops it
    store.memory.update_thread("t", title="second")
    assert store.memory.get_thread("t").title == "second"  # type: ignore[union-attr]
    other = DuckDBStorage(tmp_path / "cache.duckdb", commit_delay=30)  # same process
    other.memory.update_thread("t", metadata={"k": 3})
    assert store.memory.get_thread("t").metadata == {"k": 3}  # type: ignore[union-attr]
    assert store.memory.get_thread("gone") is not None
    store.memory.delete_thread("gone")
    assert store.memory.get_thread("gone") is None
    store.memory.clone_thread("t", "copy")
    assert store.memory.get_thread("copy").parent_thread_id == "t"  # type: ignore[union-attr]
    store.erase_thread("t")
    assert store.memory.get_thread("t") is None


def test_working_memory_is_read_once_while_writing(
        store: DuckDBStorage, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A composition with working memory reads it every run: while this process
    writes the file, once; every write of working memory drops what is kept."""
    m = store.memory
    m.create_thread("t")
    m.put_working_memory("thread:t", {"plan": ["a"]})
    m.put_working_memory("nulled", None)
    assert m.get_working_memory("thread:t") == {"plan": ["a"]}
    assert m.get_working_memory("absent") is None and m.get_working_memory("nulled") is None
    reads = Reads(monkeypatch)
    got = m.get_working_memory("thread:t")
    assert got == {"plan": ["a"]} and m.get_working_memory("absent") is None
    assert reads.of("working_memory") == []
    got["plan"].append("changed")  # the caller's copy: what is kept does not change
    assert m.get_working_memory("thread:t") == {"plan": ["a"]}
    m.put_working_memory("thread:t", {"plan": ["b"]})
    assert m.get_working_memory("thread:t") == {"plan": ["b"]}
    m.put_working_memory("absent", 3)
    assert m.get_working_memory("absent") == 3
    other = DuckDBStorage(tmp_path / "cache.duckdb", commit_delay=30)  # same process
    other.memory.put_working_memory("thread:t", {"plan": ["c"]})
    assert m.get_working_memory("thread:t") == {"plan": ["c"]}
    with pytest.raises(RuntimeError), store.write_batch():
        m.put_working_memory("thread:t", {"plan": ["rolled back"]})
        assert m.get_working_memory("thread:t") == {"plan": ["rolled back"]}
        raise RuntimeError("the group fails")
    assert m.get_working_memory("thread:t") == {"plan": ["c"]}
    m.clone_thread("t", "copy")
    assert m.get_working_memory("thread:copy") == {"plan": ["c"]}
    assert m.delete_working_memory("thread:copy") is True
    assert m.get_working_memory("thread:copy") is None
    store.erase_thread("t")
    assert m.get_working_memory("thread:t") is None


RENAME = """
import sys
from memory_core.storage.duckdb import DuckDBStorage
s = DuckDBStorage(sys.argv[1], lock_timeout=60)
s.memory.update_thread("t", title="renamed elsewhere")
s.runs.put_if_absent("r:theirs", "theirs")
s.memory.append_messages("t", [__import__("memory_core.types").types.AppendRow(
    message=__import__("memory_core.types").types.Message(content="theirs"))])
s.close()
"""


@pytest.mark.slow
def test_what_a_writer_knew_goes_with_the_file(tmp_path: Path) -> None:
    """Another process that writes while this one has let go of the file: this one's
    next reads and appends see what it wrote."""
    db = tmp_path / "shared.duckdb"
    s = DuckDBStorage(db, commit_delay=30, max_hold=0.0)
    s.memory.create_thread("t", title="mine")
    assert s.memory.append_messages("t", [_row("a")]) == [0]
    assert s.memory.get_thread("t").title == "mine"  # type: ignore[union-attr]
    assert s.runs.list("r:") == []  # this writer knows run r has no records
    assert s.memory.count_messages("t") == 1  # ... and the thread's count and tail
    assert [m.text() for m in s.memory.get_tail("t", 5)] == ["a"]
    other = spawn(RENAME, str(db))  # asks for the file; this process's keeper lets go
    _, err = other.communicate(timeout=120)
    assert other.returncode == 0, err
    assert s.memory.get_thread("t").title == "renamed elsewhere"  # type: ignore[union-attr]
    assert s.memory.count_messages("t") == 2 and s.memory.max_seq("t") == 1
    assert [m.text() for m in s.memory.get_tail("t", 5)] == ["a", "theirs"]
    with s.write_batch():
        assert s.memory.append_messages("t", [_row("b")]) == [2]
    assert [m.text() for m in s.memory.get_messages("t")] == ["a", "theirs", "b"]
    # nor does it take the run's records for absent: the other process wrote one
    assert s.runs.put_if_absent("r:theirs", "mine") is False
    assert s.runs.get("r:theirs") == "theirs"
    s.close()


def test_first_write_wins_without_on_conflict(
        store: DuckDBStorage, monkeypatch: pytest.MonkeyPatch) -> None:
    """Journal records and run rows: the stored keys are looked up, the rest inserted
    plainly (DuckDB's ON CONFLICT costs milliseconds more a statement); the first
    write still wins, also for a key repeated in one call and inside a batch."""
    seen: list[str] = []
    real = duck._DuckTx.execute

    def execute(tx: duck._DuckTx, sql: str, params: object = (), **kw: bool) -> int:
        seen.append(sql)
        return real(tx, sql, params, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(duck._DuckTx, "execute", execute)
    assert store.runs.put_if_absent("k1", {"v": 1}) is True
    assert store.runs.put_if_absent("k1", {"v": 2}) is False
    with store.write_batch():
        assert store.runs.put_many_if_absent([("k1", 3), ("k2", 4), ("k2", 5), ("k3", 6)]) == 2
        assert store.runs.put_if_absent("k3", 7) is False
    run = RunRecord(run_id="r", agent="a", status="running", started_at=datetime.now(UTC))
    assert store.runs.start_run(run) is True
    assert store.runs.start_run(run.model_copy(update={"agent": "b"})) is False
    assert store.runs.get_many(["k1", "k2", "k3"]) == {"k1": {"v": 1}, "k2": 4, "k3": 6}
    assert store.runs.require_run("r").agent == "a"
    assert seen and not [s for s in seen if "ON CONFLICT" in s]


def _run(run_id: str = "r") -> RunRecord:
    return RunRecord(run_id=run_id, agent="a", status="running",
                     started_at=datetime.now(UTC))


def test_a_runs_first_writes_look_nothing_up_after_its_first_read(
        store: DuckDBStorage, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Runner reads a fresh run's records and row once (its lease, its row); while
    this process writes the file, the run's first-write-wins inserts then know which
    keys are stored without looking them up — and still keep the first value."""
    store.runs.put_if_absent("r:input", "first")
    assert [k for k, _ in store.runs.list("r:")] == ["r:input"]
    assert store.runs.get_run("r") is None
    reads = Reads(monkeypatch)
    with store.write_batch():
        assert store.runs.start_run(_run()) is True
        assert store.runs.put_many_if_absent([("r:input", "again"), ("r:prompt", "p"),
                                              ("r:lease:1", 1)]) == 2
    # writes of other tables between a run's groups (its thread's title, working
    # memory, another thread) leave what the writer knows of its keys
    store.memory.create_thread("t", title="untitled")
    store.memory.update_thread("t", title="titled")
    store.memory.put_working_memory("wm:t", {"note": 1})
    with store.write_batch():
        assert store.runs.put_many_if_absent([("r:output", "o"), ("r:seal", "s")]) == 2
    assert store.runs.put_if_absent("r:prompt", "again") is False
    assert reads.of("journal") == [] and reads.of("runs") == []
    # a key under a prefix never listed, and a run row now stored, are looked up
    assert store.runs.put_if_absent("s:input", "x") is True
    assert store.runs.start_run(_run()) is False
    assert len(reads.of("journal")) == 1 and len(reads.of("runs")) == 1
    assert store.runs.get_many(["r:input", "r:prompt", "r:lease:1"]) == {
        "r:input": "first", "r:prompt": "p", "r:lease:1": 1}


def test_what_a_writer_knows_of_a_runs_keys_goes_with_what_changes_them(
        store: DuckDBStorage) -> None:
    """Each way the run's stored keys can change without ``insert_absent`` telling the
    writer drops what it knew: a delete, a bulk insert, a rolled-back batch."""
    store.runs.list("r:")
    store.runs.put_if_absent("r:a", 1)
    assert store.runs.delete("r:") == 1
    assert store.runs.put_if_absent("r:a", 2) is True  # deleted: absent again
    assert store.runs.get("r:a") == 2
    store.runs.list("r:")
    many = [(f"r:k{i}", i) for i in range(100)]  # more than one statement's worth
    assert store.runs.put_many_if_absent(many) == 100
    assert store.runs.put_if_absent("r:k7", "late") is False
    assert store.runs.get("r:k7") == 7
    store.runs.list("q:")
    assert store.runs.get_run("q") is None
    with pytest.raises(RuntimeError), store.write_batch():
        assert store.runs.put_if_absent("q:input", "lost") is True
        assert store.runs.start_run(_run("q")) is True
        raise RuntimeError("the group fails")
    assert store.runs.get("q:input") is None
    assert store.runs.put_if_absent("q:input", "kept") is True
    assert store.runs.start_run(_run("q")) is True
    assert store.runs.get("q:input") == "kept"
    # an erasure deletes the records of the thread's runs: what was known of them goes
    store.memory.create_thread("gone")
    erased = _run("e").model_copy(update={"thread_id": "gone"})
    assert store.runs.list("e:") == [] and store.runs.get_run("e") is None
    assert store.runs.start_run(erased) is True
    assert store.runs.put_if_absent("e:input", "before") is True
    store.erase_thread("gone")
    assert store.runs.put_if_absent("e:input", "after") is True
    assert store.runs.start_run(erased) is True
    assert store.runs.get("e:input") == "after"
