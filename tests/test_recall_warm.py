"""Warm recall's fixed cost: a recall with nothing written since the last one asks the
store for its change token and fetches its hits (one query), nothing else; any write,
by this process or another, makes the next recall check the scope's counts again."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory_core.recall import RecallConfig, RecallEngine
from memory_core.storage.base import MemoryStore, Storage
from memory_core.types import AppendRow, Message
from tests.storage_factories import make_storage

ROOT = Path(__file__).resolve().parents[1]
DIM = 8
CFG = RecallConfig(top_k=2, near_misses=2, scope="resource", message_range=1)


def _vec(i: int) -> np.ndarray:
    return np.random.default_rng(i).standard_normal(DIM).astype(np.float32)


def _fill(storage: Storage) -> None:
    for t in ("a", "b"):
        storage.memory.create_thread(t, resource_id="u")
        storage.memory.append_messages(t, [
            AppendRow(message=Message(content=f"note {i} in {t}"), embedding=_vec(i))
            for i in range(6)])
    # a read of the file: DuckDB's waiting appends are committed, and taken as rows
    # another process wrote (the recalls below read the file; rows a writer keeps —
    # waiting, or of a thread it made — are built from memory, test_duckdb_small_scan)
    storage.memory.list_threads()
    duck = getattr(storage, "_duck", None)
    if duck is not None:
        duck.handle.forget()


class Ports:
    """Every port method called and every query run by the SQL adapters' reads."""

    def __init__(self, store: MemoryStore) -> None:
        self.calls: list[str] = []
        self.queries = 0
        for name in dir(MemoryStore):
            if not name.startswith("_") and callable(getattr(store, name)):
                setattr(store, name, self._logged(name, getattr(store, name)))
        db = getattr(store, "_db", None)
        for name in ("read", "read_single") if db is not None else ():
            setattr(db, name, self._counted(getattr(db, name)))

    def _counted(self, read: Any) -> Any:
        @contextmanager
        def counted(op: str) -> Iterator[Any]:
            with read(op) as tx:
                query = tx.query
                if getattr(query, "counted", False):  # read_single by way of read
                    yield tx
                    return

                def counting(sql: str, params: Any = ()) -> Any:
                    self.queries += 1
                    return query(sql, params)

                counting.counted = True  # type: ignore[attr-defined]
                tx.query = counting  # the adapter's own Tx, its queries counted
                yield tx
        return counted

    def _logged(self, name: str, fn: Any) -> Any:
        def wrapped(*a: Any, **kw: Any) -> Any:
            self.calls.append(name)
            return fn(*a, **kw)
        return wrapped

    def clear(self) -> None:
        self.calls.clear()
        self.queries = 0


def _recall(engine: RecallEngine, vec: np.ndarray) -> list[tuple[str, int]]:
    engine.embed = lambda texts: np.asarray([vec])
    out = engine.run("note", thread_id="a", resource_id="u", config=CFG)
    return [(h.thread_id, h.seq) for h in out.hits if h.origin == "hit"]


@pytest.mark.parametrize(("adapter", "share"), [
    ("duckdb-file", 0.25), ("duckdb-file", 0.0), ("duckdb-memory", 0.25),
    ("duckdb-memory", 0.0), ("sqlite", 0.25), ("postgres", 0.25)])
def test_a_warm_recall_with_nothing_written_is_a_token_and_at_most_one_query(
        adapter: str, share: float, tmp_path: Path) -> None:
    """DuckDB keeps the scope's messages beside its vectors (a single read of a row
    costs it milliseconds): its warm recall reads nothing at all; with no room for
    them (``message_share=0``) the hits are read in one query by the rowids its scan
    gave; SQLite and PostgreSQL read them by (thread, seq)."""
    storage = make_storage(adapter, tmp_path)
    _fill(storage)
    engine = RecallEngine(storage.memory, None, message_share=share)
    ports = Ports(storage.memory)
    duck, kept = adapter.startswith("duckdb"), adapter.startswith("duckdb") and share > 0
    fetch = [] if kept else ["get_messages_located" if duck else "get_messages_by_refs"]
    with storage.session():
        _recall(engine, _vec(1))
        assert ports.calls[:3] == ["change_token", "scope_counts", "scope_rows"]
        ports.clear()
        hits = _recall(engine, _vec(2))
        # nothing written since: no counts read, the hits built or fetched in one query
        assert ports.calls == ["change_token", *fetch]
        # (PostgreSQL's token is a query of its own: the server's snapshot)
        assert ports.queries == len(fetch) + (adapter == "postgres") and ("a", 2) in hits
        storage.memory.append_messages("b", [AppendRow(
            message=Message(content="new note"), embedding=_vec(7))])
        ports.clear()
        assert ("b", 6) in _recall(engine, _vec(7))  # the append is seen
        assert ports.calls == ["change_token", "scope_counts", "scope_rows", *fetch]
        storage.memory.put_working_memory("k", 1)  # any write: the counts are read again
        ports.clear()
        _recall(engine, _vec(7))
        assert ports.calls == ["change_token", "scope_counts", *fetch]
    storage.close()


def test_the_in_memory_store_reads_its_counts_every_time(tmp_path: Path) -> None:
    storage = make_storage("inmemory", tmp_path)
    _fill(storage)
    engine = RecallEngine(storage.memory, None)
    _recall(engine, _vec(1))
    ports = Ports(storage.memory)
    _recall(engine, _vec(2))
    assert ports.calls == ["change_token", "scope_counts", "get_messages_by_refs"]


APPEND = """
import sys
import numpy as np
from memory_core.storage.url import open_storage
from memory_core.types import AppendRow, Message
s = open_storage(sys.argv[1])
vec = np.random.default_rng(int(sys.argv[2])).standard_normal({dim}).astype(np.float32)
s.memory.append_messages("b", [AppendRow(message=Message(content="from afar"),
                                         embedding=vec)])
s.close()
"""


@pytest.mark.parametrize("kind", ["sqlite", "duckdb", "postgres"])
def test_another_process_append_is_seen_by_the_next_warm_recall(
        kind: str, tmp_path: Path) -> None:
    from memory_core.storage.url import open_storage
    from tests.storage_factories import shared_url

    url = shared_url(kind, tmp_path)
    storage = open_storage(url)
    _fill(storage)
    engine = RecallEngine(storage.memory, None)
    _recall(engine, _vec(1))
    _recall(engine, _vec(2))  # warm: the token is held now
    script = textwrap.dedent(APPEND.format(dim=DIM))
    proc = subprocess.run([sys.executable, "-c", script, url, "42"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    # another read first: DuckDB opens the file again (a connection this process holds
    # now, but the other process wrote while the file was free)
    assert storage.memory.get_thread("a") is not None
    # the other process's message is the best match of this query: it must be loaded
    assert ("b", 6) in _recall(engine, _vec(42))
    storage.close()


def test_postgres_answers_the_check_and_the_fetch_in_one_round_trip_each(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No BEGIN/COMMIT around recall's single-statement reads (autocommit), and every
    pooled connection goes back transactional (writes still commit whole)."""
    import psycopg

    storage = make_storage("postgres", tmp_path)
    _fill(storage)
    engine = RecallEngine(storage.memory, None)
    _recall(engine, _vec(1))
    seen: list[tuple[str, bool]] = []
    execute = psycopg.Connection.execute

    def spy(self: Any, query: Any, *a: Any, **kw: Any) -> Any:
        seen.append((str(query)[:30], self.autocommit))
        return execute(self, query, *a, **kw)

    monkeypatch.setattr(psycopg.Connection, "execute", spy)
    _recall(engine, _vec(2))
    assert len(seen) == 2 and all(auto for _, auto in seen)  # the token, the hits
    monkeypatch.setattr(psycopg.Connection, "execute", execute)
    pool = storage._pg._pool  # type: ignore[attr-defined]
    conns = [pool.getconn() for _ in range(pool.get_stats()["pool_size"])]
    assert conns and not any(c.autocommit for c in conns)
    for c in conns:
        pool.putconn(c)
    storage.close()


def test_duckdb_keeps_its_cache_for_an_incremental_scan(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A whole-scope scan lowers DuckDB's memory limit (the blocks read are not kept
    beside the matrix), but the few rows a warm recall loads after a write do not:
    lowering the limit would evict the whole buffer cache every turn."""
    import memory_core.storage.duckdb as duck_mod

    storage = make_storage("duckdb-file", tmp_path)
    _fill(storage)
    capped: list[int] = []
    real = duck_mod._cache_capped

    def spy(conn: Any) -> Any:
        capped.append(1)
        return real(conn)

    monkeypatch.setattr(duck_mod, "_cache_capped", spy)
    monkeypatch.setattr(duck_mod, "_SCAN_BATCH", 5)  # 12 rows: a "big" scan
    engine = RecallEngine(storage.memory, None)
    _recall(engine, _vec(1))
    assert capped == [1]
    storage.memory.append_messages("b", [AppendRow(
        message=Message(content="new note"), embedding=_vec(7))])
    assert ("b", 6) in _recall(engine, _vec(7))
    assert capped == [1]  # the one new row: no eviction
    storage.close()


def test_a_waiting_duckdb_append_of_a_known_thread_is_seen_by_the_next_warm_recall(
        tmp_path: Path) -> None:
    """A deferred append of a thread whose seqs this process already knows waits in
    memory without touching the file; it must still change the store's token, or a warm
    recall would skip its check and miss the message."""
    storage = make_storage("duckdb-file", tmp_path)
    _fill(storage)
    engine = RecallEngine(storage.memory, None)
    try:
        for i, vec in enumerate((_vec(21), _vec(22), _vec(23))):
            # the first append teaches the handle thread b's seqs; the next are "known"
            storage.memory.append_messages("b", [AppendRow(
                message=Message(content=f"late note {i}"), embedding=vec)])
            assert ("b", 6 + i) in _recall(engine, vec)
    finally:
        storage.close()


def test_duckdb_reads_no_creation_time_its_scan_gave(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With no room for the scope's messages, a warm recall reads its hits by rowid,
    but not their ``created_at``: the scan gave each row's time (``created_us``) and
    offset, and a random read of that nearly unique text costs DuckDB more than all
    the other columns together. The messages are the stored ones all the same."""
    import memory_core.storage.duckdb as duck_mod

    storage = make_storage("duckdb-file", tmp_path)
    _fill(storage)
    engine = RecallEngine(storage.memory, None, message_share=0.0)
    sql: list[str] = []
    query = duck_mod._DuckTx.query

    def spy(self: Any, text: str, params: Any = ()) -> Any:
        sql.append(text)
        return query(self, text, params)

    monkeypatch.setattr(duck_mod._DuckTx, "query", spy)
    with storage.session():
        _recall(engine, _vec(1))
        sql.clear()
        engine.embed = lambda texts: np.asarray([_vec(2)])
        out = engine.run("note", thread_id="a", resource_id="u", config=CFG)
    assert len(sql) == 1 and "rowid" in sql[0] and "created_at" not in sql[0]
    msgs = sorted((h.message for h in out.hits), key=lambda m: m.ref)
    assert msgs and msgs == storage.memory.get_messages_by_refs([m.ref for m in msgs])
    storage.close()


def test_duckdb_keeps_a_scope_s_messages_only_within_their_budget(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The message columns come with the scan only while they take at most their share
    of the vectors' bytes: when the first batch shows they will not fit, the scan starts
    again without them (long bodies are not read whole for nothing), and recall reads
    its hits instead."""
    import memory_core.storage.base as base_mod
    import memory_core.storage.duckdb as duck_mod

    monkeypatch.setattr(base_mod, "MESSAGE_FLOOR", 0)
    monkeypatch.setattr(duck_mod, "_SCAN_BATCH", 4)  # 12 rows: three batches
    storage = make_storage("duckdb-file", tmp_path)
    _fill(storage)
    fills: list[bool] = []
    fill = duck_mod._DuckDriver._fill

    def spy(reader: Any, scan: Any, out: Any, extra: bool) -> bool:
        fills.append(extra)
        return fill(reader, scan, out, extra)

    monkeypatch.setattr(duck_mod._DuckDriver, "_fill", staticmethod(spy))
    # a body of ~60 bytes a row beside 8 float32s (32 bytes): a share of 4 fits
    fits = storage.memory.scope_rows(["a", "b"], message_share=4.0)
    assert fits.messages is not None and len(fits.messages) == len(fits) == 12
    assert fills == [True]
    fills.clear()
    over = storage.memory.scope_rows(["a", "b"], message_share=0.5)
    assert over.messages is None and len(over) == 12 and fills == [True, False]
    assert over.zones is not None and set(over.zones.tolist()) == {-1}  # all UTC
    engine = RecallEngine(storage.memory, None, message_share=0.5)
    ports = Ports(storage.memory)
    with storage.session():
        _recall(engine, _vec(1))
        ports.clear()
        _recall(engine, _vec(2))
    assert ports.calls == ["change_token", "get_messages_located"]
    storage.close()


def test_duckdb_reads_only_the_bodies_too_long_to_keep(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A body longer than the scan's cap (4x a row's share of the budget, at least
    ``_BODY_CAP``) is left out of the message columns (a batch of long tool outputs is
    never held whole): recall reads just that message, and builds the others."""
    import memory_core.storage.base as base_mod
    import memory_core.storage.duckdb as duck_mod

    monkeypatch.setattr(base_mod, "MESSAGE_FLOOR", 0)
    monkeypatch.setattr(duck_mod, "_BODY_CAP", 200)
    storage = make_storage("duckdb-file", tmp_path)
    _fill(storage)
    long_text = "a long tool output " * 40  # ~800 bytes
    storage.memory.append_messages("a", [AppendRow(message=Message(content=long_text),
                                                   embedding=_vec(99))])  # ("a", 6)
    got = storage.memory.scope_rows(["a", "b"], message_share=2.0)
    assert got.messages is not None
    bodies = dict(zip(zip(got.tidx.tolist(), got.seqs.tolist(), strict=True),
                      got.messages.bodies.to_pylist(), strict=True))  # type: ignore[attr-defined]
    assert bodies[(got.threads.index("a"), 6)] is None
    assert sum(b is None for b in bodies.values()) == 1
    engine = RecallEngine(storage.memory, None, message_share=2.0)
    read: list[list[tuple[str, int]]] = []
    located = storage.memory.get_messages_located

    def spy(refs: Any, *a: Any) -> Any:
        read.append(list(refs))
        return located(refs, *a)

    storage.memory.get_messages_located = spy  # type: ignore[method-assign]
    engine.embed = lambda texts: np.asarray([_vec(99)])
    out = engine.run("note", thread_id="a", resource_id="u", config=CFG)
    assert read == [[("a", 6)]]
    msgs = {h.message.ref: h.message for h in out.hits}
    assert msgs[("a", 6)].text() == long_text and ("a", 5) in msgs
    assert sorted(msgs.values(), key=lambda m: m.ref) == \
        storage.memory.get_messages_by_refs(sorted(msgs))
    storage.close()


@pytest.mark.parametrize("adapter", ["duckdb-file", "sqlite", "inmemory"])
def test_a_scope_grows_into_the_spare_rows_of_its_first_scan(
        tmp_path: Path, adapter: str) -> None:
    """The first scan's matrix becomes the cache's own with spare rows behind it: a
    live agent's next rows go into them instead of copying the whole matrix (5.6 s
    and a 2.3 GB copy at a million rows); past them it is copied once, and recall
    finds the new rows either way."""
    storage = make_storage(adapter, tmp_path)
    storage.memory.create_thread("a", resource_id="u")
    storage.memory.append_messages("a", [
        AppendRow(message=Message(content=f"note {i}"), embedding=_vec(i))
        for i in range(1200)])
    engine = RecallEngine(storage.memory, None)
    assert ("a", 3) in _recall(engine, _vec(3))  # (hits come in thread order)
    idx = engine._scopes[("resource", "u")]
    mat, cap = idx.mat.ctypes.data, idx.has_vec.shape[0]
    assert cap == 1200 + 1200 // 8 and idx.mat.shape[0] == cap
    for i in range(3):
        storage.memory.append_messages("a", [AppendRow(
            message=Message(content="new"), embedding=_vec(5000 + i))])
        assert ("a", 1200 + i) in _recall(engine, _vec(5000 + i))
    assert idx is engine._scopes[("resource", "u")]
    assert idx.mat.ctypes.data == mat and idx.has_vec.shape[0] == cap  # nothing copied
    storage.memory.append_messages("a", [
        AppendRow(message=Message(content="more"), embedding=_vec(6000 + i))
        for i in range(200)])  # past the spare rows: copied, and still right
    assert ("a", 1401) in _recall(engine, _vec(6198))
    assert ("a", 3) in _recall(engine, _vec(3))
    assert idx.mat.ctypes.data != mat and idx.n == 1403
    storage.close()
