"""Warm recall: with nothing written since the last recall it asks the store only for
its change token (and fetches the hits its cache does not hold); after any write — an
append, a redaction or an erasure, by this process or another — it returns what a cold
recall returns, and what the in-memory store returns for the same writes. Checked
through the ports only."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory_core.lifecycle.erasure import erase_thread
from memory_core.recall.config import RecallConfig
from memory_core.recall.engine import RecallEngine
from memory_core.recall.results import RecallOutcome
from memory_core.storage.base import MemoryStore, Storage
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import AppendRow, Message
from tests.storage_factories import make_storage

ROOT = Path(__file__).resolve().parents[1]
DIM = 8
CFG = RecallConfig(top_k=2, near_misses=2, scope="resource", message_range=1)
# creation times with offsets and fractions of every shape, so that a hit built from
# the scan's columns must give back the stored time exactly
ZONES = [UTC, timezone(timedelta(hours=5, minutes=30)), timezone(timedelta(hours=-8))]
T0 = datetime(2024, 3, 1, 9, 30, tzinfo=UTC)


def _vec(i: int) -> np.ndarray:
    return np.random.default_rng(i).standard_normal(DIM).astype(np.float32)


def _row(text: str, seed: int, k: int) -> AppendRow:
    at = (T0 + timedelta(seconds=k, microseconds=(k % 2) * 120_500)).astimezone(
        ZONES[k % len(ZONES)])
    return AppendRow(message=Message(content=text), embedding=_vec(seed), created_at=at)


def _fill(storage: Storage) -> None:
    """Threads a (vectors 0–5) and b (vectors 100–105) of resource u."""
    for t, base in (("a", 0), ("b", 100)):
        storage.memory.create_thread(t, resource_id="u")
        storage.memory.append_messages(t, [_row(f"note {i} in {t}", base + i, base + i)
                                           for i in range(6)])


class Ports:
    """The public port methods called on one store object, in order."""

    def __init__(self, store: MemoryStore) -> None:
        self.calls: list[str] = []
        for name in dir(MemoryStore):
            if not name.startswith("_") and callable(getattr(store, name)):
                setattr(store, name, self._logged(name, getattr(store, name)))

    def _logged(self, name: str, fn: Any) -> Any:
        def wrapped(*a: Any, **kw: Any) -> Any:
            self.calls.append(name)
            return fn(*a, **kw)
        return wrapped

    def clear(self) -> None:
        self.calls.clear()


def _run(engine: RecallEngine, vec: np.ndarray) -> RecallOutcome:
    engine.embed = lambda texts: np.asarray([vec])
    return engine.run("note", thread_id="a", resource_id="u", config=CFG)


def _recall(engine: RecallEngine, vec: np.ndarray) -> list[tuple[str, int]]:
    return [(h.thread_id, h.seq) for h in _run(engine, vec).hits if h.origin == "hit"]


def _outcome(out: RecallOutcome) -> tuple[list[Any], list[Any]]:
    """What a caller sees of a recall (scores aside: a matrix built in steps may round
    them differently in the last bit), creation times to the offset."""
    return ([(h.thread_id, h.seq, h.origin, h.rank, h.message,
              h.message.created_at.isoformat()) for h in out.hits],
            [(m.thread_id, m.seq, m.rank, m.reason, m.preview) for m in out.near_misses])


def _cold(storage: Storage, vec: np.ndarray, share: float = 0.25) -> Any:
    """A first recall by a new engine: the whole scope read from the store."""
    return _outcome(_run(RecallEngine(storage.memory, None, message_share=share), vec))


def _texts(out: RecallOutcome) -> set[str | None]:
    return {h.message.text() for h in out.hits} | {m.preview for m in out.near_misses}


@pytest.mark.parametrize(("adapter", "share"), [
    ("duckdb-file", 0.25), ("duckdb-file", 0.0), ("duckdb-memory", 0.25),
    ("duckdb-memory", 0.0), ("sqlite", 0.25), ("postgres", 0.25)])
def test_a_warm_recall_with_nothing_written_asks_only_for_the_change_token(
        adapter: str, share: float, tmp_path: Path) -> None:
    """A warm recall reads no counts and no scope; DuckDB's cache holds the scope's
    messages beside its vectors (a single read costs it milliseconds) and builds the
    hits without a read, unless it has no room for them (``message_share=0``): then it
    reads them by the locators its scan gave. The answers are a cold recall's."""
    storage = make_storage(adapter, tmp_path)
    _fill(storage)
    engine = RecallEngine(storage.memory, None, message_share=share)
    ports = Ports(storage.memory)
    duck, kept = adapter.startswith("duckdb"), adapter.startswith("duckdb") and share > 0
    fetch = [] if kept else ["get_messages_located" if duck else "get_messages_by_refs"]
    with storage.session():
        _run(engine, _vec(1))
        assert ports.calls[:3] == ["change_token", "scope_counts", "scope_rows"]
        ports.clear()
        warm = _run(engine, _vec(2))
        assert ports.calls == ["change_token", *fetch]  # nothing written since
        assert ("a", 2) in [(h.thread_id, h.seq) for h in warm.hits]
        assert _outcome(warm) == _cold(storage, _vec(2), share)
        storage.memory.append_messages("b", [_row("new note", 7, 7)])
        ports.clear()
        warm = _run(engine, _vec(7))
        assert ports.calls == ["change_token", "scope_counts", "scope_rows", *fetch]
        assert ("b", 6) in [(h.thread_id, h.seq) for h in warm.hits]
        assert _outcome(warm) == _cold(storage, _vec(7), share)
        storage.memory.put_working_memory("k", 1)  # any write: the counts are read again
        ports.clear()
        _run(engine, _vec(7))
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


WARM_CASES = [("duckdb-file", 0.25), ("duckdb-file", 0.0), ("duckdb-memory", 0.25),
              ("sqlite", 0.25), ("postgres", 0.25)]


@pytest.mark.parametrize(("adapter", "share"), WARM_CASES)
def test_warm_recall_after_each_append_returns_what_the_in_memory_store_does(
        adapter: str, share: float, tmp_path: Path) -> None:
    """A live agent's appends one by one, a batch, a new thread of the resource: after
    each, one warm engine answers as a cold one on the same store and as the in-memory
    store given the same writes (messages and creation times to the offset)."""
    storage = make_storage(adapter, tmp_path)
    mirror = InMemoryStorage()
    stores = (storage, mirror)
    for s in stores:
        _fill(s)
    warm = RecallEngine(storage.memory, None, message_share=share)
    assert _outcome(_run(warm, _vec(1))) == _cold(mirror, _vec(1))
    steps: list[tuple[str, list[int]]] = [
        ("b", [200]), ("b", [201]), ("a", [202]), ("a", list(range(203, 215))),
        ("c", [215, 216])]
    for thread, seeds in steps:
        for s in stores:
            if s.memory.get_thread(thread) is None:
                s.memory.create_thread(thread, resource_id="u")
            s.memory.append_messages(thread, [_row(f"note {k}", k, k) for k in seeds])
        for vec in (_vec(seeds[-1]), _vec(seeds[0]), _vec(1)):
            got = _outcome(_run(warm, vec))
            assert got == _cold(mirror, vec), (thread, seeds)
            assert got == _cold(storage, vec, share), (thread, seeds)
    storage.close()


@pytest.mark.parametrize(("adapter", "share"), [*WARM_CASES, ("inmemory", 0.25)])
def test_a_redacted_or_erased_message_is_never_returned_from_the_cache(
        adapter: str, share: float, tmp_path: Path) -> None:
    """A message redacted in place, or a thread erased (and made again under the same
    id), after the cache loaded them: the next warm recall never shows the old text —
    not as a hit, a neighbour or a near miss."""
    storage = make_storage(adapter, tmp_path)
    _fill(storage)
    engine = RecallEngine(storage.memory, None, message_share=share)
    # ("a", 1) is the best hit; ("a", 2) comes as its neighbour
    first = _run(engine, _vec(1))
    assert "note 2 in a" in _texts(first)
    assert storage.memory.redact_message("a", 2, Message(content="[redacted]"))
    out = _run(engine, _vec(1))
    assert "note 2 in a" not in _texts(out) and "[redacted]" in _texts(out)
    assert _outcome(out) == _cold(storage, _vec(1), share)
    # thread b's best match, then b erased and made again with other words
    assert "note 3 in b" in _texts(_run(engine, _vec(103)))
    erase_thread(storage, "b")
    out = _run(engine, _vec(103))
    assert not any(h.thread_id == "b" for h in out.hits)
    assert not any("in b" in (t or "") for t in _texts(out))
    assert _outcome(out) == _cold(storage, _vec(103), share)
    storage.memory.create_thread("b", resource_id="u")
    storage.memory.append_messages("b", [_row(f"fresh {i}", 100 + i, i) for i in range(6)])
    out = _run(engine, _vec(103))
    assert ("b", 3, "fresh 3") in [(h.thread_id, h.seq, h.message.text()) for h in out.hits]
    assert not any("in b" in (t or "") for t in _texts(out))
    assert _outcome(out) == _cold(storage, _vec(103), share)
    storage.close()


ANOTHER = """
import sys
import numpy as np
from memory_core.storage.url import open_storage
from memory_core.types import AppendRow, Message
s = open_storage(sys.argv[1])
if sys.argv[2] == "redact":
    assert s.memory.redact_message("a", 2, Message(content="withdrawn"))
else:
    vec = np.random.default_rng(42).standard_normal({dim}).astype(np.float32)
    s.memory.append_messages("b", [AppendRow(message=Message(content="from afar"),
                                             embedding=vec)])
s.close()
"""


@pytest.mark.parametrize("action", ["append", "redact"])
@pytest.mark.parametrize("kind", ["sqlite", "duckdb", "postgres"])
def test_another_process_write_is_seen_by_the_next_warm_recall(
        kind: str, action: str, tmp_path: Path) -> None:
    from memory_core.storage.url import open_storage
    from tests.storage_factories import shared_url

    url = shared_url(kind, tmp_path)
    storage = open_storage(url)
    _fill(storage)
    engine = RecallEngine(storage.memory, None)
    _recall(engine, _vec(42))
    assert "note 2 in a" in _texts(_run(engine, _vec(1)))  # warm: the token is held
    script = textwrap.dedent(ANOTHER.format(dim=DIM))
    proc = subprocess.run([sys.executable, "-c", script, url, action], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    if action == "append":
        # the other process's message is the best match of this query: it must be loaded
        out = _run(engine, _vec(42))
        assert ("b", 6, "from afar") in [(h.thread_id, h.seq, h.message.text())
                                         for h in out.hits]
        assert _outcome(out) == _cold(storage, _vec(42))
    else:
        out = _run(engine, _vec(1))
        assert "note 2 in a" not in _texts(out) and "withdrawn" in _texts(out)
        assert _outcome(out) == _cold(storage, _vec(1))
    storage.close()


@pytest.mark.parametrize("share", [0.0, 0.5, 4.0])
@pytest.mark.parametrize("adapter", ["duckdb-file", "duckdb-memory"])
def test_duckdb_recall_gives_whole_messages_whatever_its_cache_keeps(
        adapter: str, share: float, tmp_path: Path) -> None:
    """DuckDB's cache keeps a scope's messages only within a share of its vectors'
    bytes, and leaves out a body too long to keep (here 6 MB, a tool's output): what it
    did not keep is read. Either way the hits and their neighbours are the stored
    messages, the long one whole, as the in-memory store gives them."""
    storage = make_storage(adapter, tmp_path)
    mirror = InMemoryStorage()
    long_text = "a long tool output " * 330_000
    engine = RecallEngine(storage.memory, None, message_share=share)
    for s in (storage, mirror):
        _fill(s)
        s.memory.append_messages("b", [AppendRow(
            message=Message(content="with metadata", metadata={"tool": "x", "n": [1, 2]}),
            embedding=_vec(300), created_at=T0)])
    assert _outcome(_run(engine, _vec(300))) == _cold(mirror, _vec(300))
    for s in (storage, mirror):
        s.memory.append_messages("a", [_row(long_text, 99, 99), _row("after", 98, 98)])
    out = _run(engine, _vec(99))
    assert ("a", 6, long_text) in [(h.thread_id, h.seq, h.message.text()) for h in out.hits]
    assert _outcome(out) == _cold(mirror, _vec(99))
    assert _outcome(out) == _cold(storage, _vec(99), share)
    storage.close()


@pytest.mark.slow
def test_a_scope_of_many_scan_batches_recalls_as_the_in_memory_store(
        tmp_path: Path) -> None:
    """A DuckDB scope larger than one batch of its streamed scan (70,000 rows), then a
    few rows more: recall answers as the in-memory store, cold and warm."""
    storage = make_storage("duckdb-file", tmp_path)
    mirror = InMemoryStorage()
    n = 70_000
    vecs = np.random.default_rng(7).standard_normal((n, DIM)).astype(np.float32)
    rows = [AppendRow(message=Message(content=f"row {i}"), embedding=vecs[i],
                      created_at=T0 + timedelta(microseconds=i)) for i in range(n)]
    for s in (storage, mirror):
        s.memory.create_thread("a", resource_id="u")
        s.memory.append_messages("a", rows)
    engine = RecallEngine(storage.memory, None)
    for i in (0, 40_000, n - 1):
        assert _outcome(_run(engine, vecs[i])) == _cold(mirror, vecs[i])
    for s in (storage, mirror):
        s.memory.append_messages("a", [_row("late", 500, 500)])
    assert _outcome(_run(engine, _vec(500))) == _cold(mirror, _vec(500))
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
