"""Cold start: the lexical index is built only when a lexical or hybrid query needs it,
then kept current incrementally; vector recall never tokenises a message."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import numpy as np
import pytest

from memory_core.embedding.hashing import HashingEmbedder
from memory_core.recall.config import RecallConfig
from memory_core.recall.engine import RecallEngine
from memory_core.storage.base import MemoryStore, ScopeRows
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.testing.support import T0
from memory_core.types import StoredMessage
from tests.test_recall import add, make_store

TEXTS = ["the boiler code is 4471", "lunch at the harbour", "my dentist is Dr Okafor",
         "the flight leaves at seven", "boiler service booked for May", "rain again"]


class Counting:
    """Wraps a store's reads so a test can see which round trips recall made."""

    def __init__(self, store: MemoryStore) -> None:
        self.by_ref: list[int] = []  # get_messages_by_refs: refs asked for
        self.scans: list[tuple[str, int]] = []  # scope_rows: columns asked, rows got
        self.per_thread = 0  # get_messages / get_embeddings calls
        refs, scan = store.get_messages_by_refs, store.scope_rows
        get_messages, get_embeddings = store.get_messages, store.get_embeddings

        def counting_refs(r: Sequence[tuple[str, int]]) -> list[StoredMessage]:
            self.by_ref.append(len(r))
            return refs(r)

        def counting_scan(threads: Sequence[str], **kw: Any) -> ScopeRows:
            got = scan(threads, **kw)
            cols = "".join(c[0] for c in ("vectors", "texts", "metadata")
                           if kw.get(c, c == "vectors"))
            self.scans.append((cols, len(got)))
            return got

        def per_thread(fn: Any) -> Any:
            def wrapped(*a: Any, **kw: Any) -> Any:
                self.per_thread += 1
                return fn(*a, **kw)
            return wrapped

        store.get_messages_by_refs = counting_refs  # type: ignore[method-assign]
        store.scope_rows = counting_scan  # type: ignore[method-assign]
        store.get_messages = per_thread(get_messages)  # type: ignore[method-assign]
        store.get_embeddings = per_thread(get_embeddings)  # type: ignore[method-assign]


def _engine() -> tuple[RecallEngine, list[int], Counting]:
    store = make_store()
    store.create_thread("t")
    embed = HashingEmbedder(64)
    add(store, "t", [(t, embed([t])[0]) for t in TEXTS])
    counts = Counting(store)
    return RecallEngine(store, embed), counts.by_ref, counts


def test_vector_recall_builds_no_lexical_index(monkeypatch: pytest.MonkeyPatch) -> None:
    engine, _, _ = _engine()
    import memory_core.recall.engine as recall_mod

    def refuse(text: str) -> list[str]:
        raise AssertionError(f"vector recall tokenised {text!r}")

    monkeypatch.setattr(recall_mod, "lexical_terms", refuse)
    out = engine.run("boiler code", thread_id="t", resource_id=None,
                     config=RecallConfig(top_k=2, skip_query_duplicates=False))
    assert out.hits
    idx = engine._scopes[("thread", "t")]
    assert idx.postings == {} and idx.lex_n == 0 and not idx.lexical


@pytest.mark.parametrize("mode", ["lexical", "hybrid"])
def test_lexical_index_is_built_on_first_use_then_incrementally(mode: str) -> None:
    engine, fetched, counts = _engine()
    cfg = RecallConfig(top_k=3, mode=mode)
    engine.run("boiler", thread_id="t", resource_id=None, config=cfg.replace(mode="vector"))
    assert counts.scans == [("v", len(TEXTS))]  # vectors only
    fetched.clear()
    first = engine.run("boiler code", thread_id="t", resource_id=None, config=cfg)
    # every loaded row's text, once, in one scan of the scope (no message objects)
    assert counts.scans[1:] == [("t", len(TEXTS))] and counts.per_thread == 0
    idx = engine._scopes[("thread", "t")]
    assert idx.lex_n == len(TEXTS) and "boiler" in idx.postings
    embed = HashingEmbedder(64)
    add(engine.store, "t", [("boiler pressure dropped overnight",
                             embed(["boiler pressure dropped overnight"])[0])])
    fetched.clear()
    counts.scans.clear()
    cfg = cfg.replace(top_k=1, near_misses=0)  # hits fetch at most 2 refs
    again = engine.run("boiler pressure", thread_id="t", resource_id=None, config=cfg)
    # the new row was indexed as it was loaded (its text came with its vector): no
    # rescan of indexed rows
    assert counts.scans == [("vt", 1)] and all(n <= 2 for n in fetched)
    assert idx.lex_n == len(TEXTS) + 1
    fresh = RecallEngine(engine.store, embed).run("boiler pressure", thread_id="t",
                                                  resource_id=None, config=cfg)
    key = [(h.seq, h.score) for h in again.hits]
    assert key == [(h.seq, h.score) for h in fresh.hits]
    assert 6 in [h.seq for h in again.hits] and first.hits


def test_a_first_hybrid_query_indexes_the_rows_it_loads_without_refetching() -> None:
    engine, fetched, counts = _engine()
    cfg = RecallConfig(top_k=1, near_misses=0, mode="hybrid", skip_query_duplicates=False)
    out = engine.run("boiler code", thread_id="t", resource_id=None, config=cfg)
    assert [h.seq for h in out.hits] == [0]
    assert fetched == [1]  # the hit only: texts were indexed as the rows were loaded
    assert counts.scans == [("vt", len(TEXTS))]  # one scan: vectors and texts
    assert engine._scopes[("thread", "t")].lex_n == len(TEXTS)


def test_duplicate_checks_and_near_misses_share_one_message_fetch() -> None:
    engine, fetched, _ = _engine()
    out = engine.run("boiler code", thread_id="t", resource_id=None,
                     config=RecallConfig(top_k=2, near_misses=3))
    assert len(out.hits) == 2 and len(out.near_misses) == 3
    assert len(fetched) == 1  # one round trip to the store per recall


class CallLog:
    """Every port method a recall calls, by name, in order."""

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


@pytest.mark.parametrize("mode", ["vector", "lexical", "hybrid"])
def test_cold_recall_is_one_scan_and_warm_recall_one_check_and_one_fetch(mode: str) -> None:
    store = make_store()
    embed = HashingEmbedder(64)
    for t in ("a", "b", "c"):
        store.create_thread(t, resource_id="u")
        add(store, t, [(f"{x} in {t}", embed([f"{x} in {t}"])[0]) for x in TEXTS])
    log = CallLog(store)
    engine = RecallEngine(store, embed)
    cfg = RecallConfig(top_k=3, near_misses=3, scope="resource", mode=mode,
                       message_range=1)
    engine.run("boiler code", thread_id="a", resource_id="u", config=cfg)
    # the scope's counts, one scan of every row (vectors, and texts for BM25), the hits
    # (the in-memory store gives no change token: its counts are read every time)
    assert log.calls == ["change_token", "scope_counts", "scope_rows",
                         "get_messages_by_refs"]
    log.calls.clear()
    engine.run("dentist", thread_id="a", resource_id="u", config=cfg)
    assert log.calls == ["change_token", "scope_counts", "get_messages_by_refs"]
    log.calls.clear()
    add(store, "b", [("boiler pressure", embed(["boiler pressure"])[0])])
    log.calls.clear()
    engine.run("boiler", thread_id="a", resource_id="u", config=cfg)
    assert log.calls == ["change_token", "scope_counts", "scope_rows",
                         "get_messages_by_refs"]


def test_metadata_is_read_only_for_a_filter_then_kept_current() -> None:
    engine, _, counts = _engine()
    store = engine.store
    embed = HashingEmbedder(64)
    cfg = RecallConfig(top_k=3, near_misses=2)
    engine.run("boiler", thread_id="t", resource_id=None, config=cfg)
    assert counts.scans == [("v", len(TEXTS))]
    idx = engine._scopes[("thread", "t")]
    assert not idx.keep_meta and idx.metadata == []
    add(store, "t", [("boiler tagged", embed(["boiler tagged"])[0])], [{"tag": "x"}])
    counts.scans.clear()
    flt = cfg.replace(filter={"tag": "x"})
    out = engine.run("boiler", thread_id="t", resource_id=None, config=flt)
    # the new row's vector, then every row's metadata in one scan
    assert counts.scans == [("v", 1), ("m", len(TEXTS) + 1)]
    assert [h.seq for h in out.hits] == [len(TEXTS)]
    add(store, "t", [("boiler tagged again", embed(["boiler tagged again"])[0])],
        [{"tag": "x"}])
    counts.scans.clear()
    out = engine.run("boiler", thread_id="t", resource_id=None, config=flt)
    assert counts.scans == [("vm", 1)]  # appends bring their metadata along
    assert sorted(h.seq for h in out.hits) == [len(TEXTS), len(TEXTS) + 1]
    assert any(n.reason == "filtered-out" and n.filter_clause for n in out.near_misses)


class Shuffled(InMemoryStorage):
    """A store whose scans come in a scrambled order (as a database's may)."""

    def __init__(self, seed: int, **kw: Any) -> None:
        super().__init__(**kw)
        rng = np.random.default_rng(seed)
        scan = self.memory.scope_rows

        def shuffled(threads: Sequence[str], **k: Any) -> ScopeRows:
            got = scan(threads, **k)
            p = rng.permutation(len(got))
            return ScopeRows(
                got.threads, got.tidx[p], got.seqs[p], got.created_us[p], got.has_vec[p],
                None if got.matrix is None else got.matrix[p],
                None if got.texts is None else [got.texts[i] for i in p],
                None if got.metadata is None else [got.metadata[i] for i in p])

        self.memory.scope_rows = shuffled  # type: ignore[method-assign]


def _r(x: float | None) -> float | None:
    # a matrix product's last bits depend on where a row sits in the matrix
    return None if x is None else round(x, 5)


def _outcome(out: Any) -> Any:
    return ([(h.thread_id, h.seq, h.origin, h.rank, _r(h.score), _r(h.vector_score),
              _r(h.lexical_score)) for h in out.hits],
            [(n.thread_id, n.seq, n.reason, n.rank, _r(n.score), n.filter_clause)
             for n in out.near_misses], out.scope_snapshot)


@pytest.mark.parametrize("seed", range(8))
def test_rows_loaded_in_any_order_recall_the_same(seed: int) -> None:
    """Ties in score are broken by creation order whatever order rows arrive in:
    duplicate texts and vectors, several rows per instant, rows created out of order."""
    rng = np.random.default_rng(seed)
    stamps = iter(rng.integers(0, 40, 10_000).tolist())
    stores = []
    for store_cls in (InMemoryStorage, Shuffled):
        stamps = iter(np.random.default_rng(seed).integers(0, 40, 10_000).tolist())
        kw: dict[str, Any] = {"clock": lambda s=stamps: T0 + timedelta(seconds=next(s))}
        stores.append((store_cls(seed, **kw) if store_cls is Shuffled
                       else store_cls(**kw)).memory)
    embed = HashingEmbedder(16)
    words = ["boiler", "code", "dentist", "rain", "rain?", "tiles", "the"]
    engines = [RecallEngine(s, embed) for s in stores]
    for step in range(3):
        batch = {t: [" ".join(rng.choice(words, int(rng.integers(0, 4))))
                     for _ in range(int(rng.integers(1, 12)))] for t in ("x", "y", "z")}
        for s in stores:
            for t, texts in batch.items():
                if step == 0:
                    s.create_thread(t, resource_id="u")
                add(s, t, [(x, embed([x])[0] if x else None) for x in texts],
                    [{"k": len(x) % 3} for x in texts])
        for mode, flt, rng_m in itertools.product(("vector", "lexical", "hybrid"),
                                                  (None, {"k": 1}), (0, 1)):
            cfg = RecallConfig(top_k=4, near_misses=4, mode=mode, filter=flt,
                               message_range=rng_m, scope="resource")
            a, b = (_outcome(e.run("boiler rain", thread_id="x", resource_id="u",
                                   config=cfg)) for e in engines)
            assert a == b
            sa, sb = ([(c.thread_id, c.seq, c.rank, c.eligible, c.filter_clause)
                       for c in e.score_all("boiler rain", thread_id="x", resource_id="u",
                                            config=cfg)] for e in engines)
            assert sa == sb


@pytest.mark.parametrize("share", [0.25, 0.0])
def test_a_store_with_locators_serves_hits_by_them(share: float) -> None:
    """DuckDB's scan gives each row's rowid and, within the engine's message share,
    the rest of each message: recall builds its hits from them without a read, or
    (no room) reads them in one fetch by rowid (a join on (thread, seq) would scan the
    table); the hits and their messages are the same either way, and the same as the
    store's own reads of them."""
    from memory_core.storage.duckdb import DuckDBStorage

    embed = HashingEmbedder(64)
    duck = DuckDBStorage(":memory:").memory
    plain = make_store()
    for store in (duck, plain):
        for t in ("a", "b"):
            store.create_thread(t, resource_id="u")
            add(store, t, [(f"{x} in {t}", embed([f"{x} in {t}"])[0]) for x in TEXTS],
                [{"k": i % 3} for i in range(len(TEXTS))])
    log = CallLog(duck)
    cfg = RecallConfig(top_k=3, near_misses=3, scope="resource", message_range=1)
    outs = [RecallEngine(s, embed, message_share=share).run(
        "boiler code", thread_id="a", resource_id="u", config=cfg) for s in (duck, plain)]
    assert log.calls == ["change_token", "scope_counts", "scope_rows",
                         *([] if share else ["get_messages_located"])]
    assert [(h.thread_id, h.seq, h.origin) for h in outs[0].hits] == [
        (h.thread_id, h.seq, h.origin) for h in outs[1].hits]
    assert [h.message.text() for h in outs[0].hits] == [h.message.text() for h in outs[1].hits]
    refs = [(h.thread_id, h.seq) for h in outs[0].hits]
    assert sorted([h.message for h in outs[0].hits], key=lambda m: m.ref) == \
        duck.get_messages_by_refs(refs)
    assert [n.preview for n in outs[0].near_misses] == [n.preview for n in outs[1].near_misses]


def _index_of(texts: list[str | None]) -> tuple[Any, ...]:
    from memory_core.recall.index import ScopeIndex

    idx = ScopeIndex()
    idx._grow(len(texts), None)
    idx.n = len(texts)
    idx._index_texts(0, texts)
    return ({t: (list(r), list(f)) for t, (r, f) in idx.postings.items()},
            idx.doclen[:idx.n].tolist(), idx.asks[:idx.n].tolist())


def test_bulk_indexing_of_ascii_texts_is_array_work_with_the_same_index(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A large batch of ASCII texts is tokenised by Arrow (no Python string per token)
    and gives exactly the index the per-text tokenizer gives; a batch with any other
    character keeps the per-text (Unicode) tokenizer."""
    import random

    import memory_core.recall.index as recall_mod

    rng = random.Random(7)
    words = ["the", "Boiler", "tiles", "tiling", "what's", "'quoted'", "policies", "x2",
             "don't", "snake_case", "a-b", "?", "pressure?", "", "  "]
    texts: list[str | None] = [None, "", " lead and trail ", "''"] + [
        " ".join(rng.choice(words) for _ in range(rng.randint(0, 14)))
        for _ in range(recall_mod.ARROW_MIN + 100)]
    monkeypatch.setattr(recall_mod, "ARROW_MIN", 10 ** 9)
    expected = _index_of(texts)
    monkeypatch.setattr(recall_mod, "ARROW_MIN", 2048)

    def refuse(_: Any) -> Any:
        raise AssertionError("ASCII texts went through the per-text tokenizer")

    with monkeypatch.context() as m:
        m.setattr(recall_mod, "tokens_python", refuse)
        assert _index_of(texts) == expected
    assert "pressur" in expected[0] and any(expected[2])
    unicode_texts = [*texts, "café naïve ünïcode?"]
    with monkeypatch.context() as m:
        m.setattr(recall_mod, "ARROW_MIN", 10 ** 9)
        expected_u = _index_of(unicode_texts)
    assert _index_of(unicode_texts) == expected_u and "café" in expected_u[0]


def test_texts_are_indexed_in_chunks_with_the_same_index(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A million texts are tokenised a chunk at a time (their temporaries took ~0.9 GB
    at once): chunks of any size, Arrow's or Python's, give the same postings (rows
    in order), lengths and asks — also from an Arrow column, as DuckDB gives it."""
    import random

    import pyarrow as pa

    import memory_core.recall.index as recall_mod

    rng = random.Random(11)
    words = ["boiler", "Boiler", "tiles", "what's", "pressure?", "x2", "the", ""]
    texts: list[str | None] = [None, ""] + [
        " ".join(rng.choice(words) for _ in range(rng.randint(0, 9))) for _ in range(5000)]
    expected = _index_of(texts)
    for chunk in (1, 7, 2048, 4999):
        monkeypatch.setattr(recall_mod, "INDEX_CHUNK", chunk)
        assert _index_of(texts) == expected, chunk
    column = pa.chunked_array([pa.array(texts[:1234]), pa.array(texts[1234:])])
    assert _index_of(column) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize("text", ["the", "It is.", "", None, "?!"])
def test_new_rows_without_a_term_are_indexed_without_error(text: str | None) -> None:
    """A batch of new rows none of which holds a term — a reply of stop words, a tool
    call with no content — used to fail the next lexical or hybrid recall with an
    IndexError (no postings to add)."""
    from memory_core.composition.memory import AgentMemory
    from memory_core.types import Message, ToolCallPart

    storage = InMemoryStorage()
    memory = AgentMemory(storage, embed=HashingEmbedder(16), recent_n=1,
                         recall=RecallConfig(top_k=3, mode="hybrid"))
    memory.append("t", [Message(content="the boiler code is 4471"),
                        Message(role="assistant", content="noted"),
                        Message(content="anything else?")])
    question = [Message(content="what is the boiler code?")]
    memory.load_context(thread_id="t", input=question)
    memory.append("t", [Message(role="assistant", content=text if text is not None else [
        ToolCallPart(id="c1", name="lookup")])])
    got = memory.load_context(thread_id="t", input=question)
    assert "the boiler code is 4471" in [m.text() for m in got.messages]
    assert _index_of([text]) == ({}, [0], [text is not None and "?" in text])


def test_duckdb_texts_kept_from_a_scan_own_their_buffers() -> None:
    """A text column kept from a DuckDB scan is copied out of its record batch: as the
    scan gives it, it keeps the whole batch alive, vectors included (hybrid's first
    recall at a million rows peaked at 5.1 GB instead of 2.8)."""
    from memory_core.storage.duckdb import DuckDBStorage

    store = DuckDBStorage(":memory:").memory
    store.create_thread("t")
    embed = HashingEmbedder(32)
    texts = [f"note {i} about the boiler" for i in range(3000)]
    add(store, "t", list(zip(texts, embed(texts), strict=True)))
    got = store.scope_rows(["t"], texts=True)
    assert got.text_list() == [t.lower() for t in texts]
    chunks = getattr(got.texts, "chunks", None)
    assert chunks
    # Arrow's own allocations are mutable; a view of DuckDB's exported batch is not
    assert all(b.is_mutable for c in chunks for b in c.buffers() if b is not None)


@pytest.mark.parametrize("rows", [40, 2100])
@pytest.mark.parametrize("vector_first", [False, True])
def test_duckdb_texts_come_as_an_arrow_column_and_recall_the_same(
        rows: int, vector_first: bool) -> None:
    """DuckDB's scan hands its texts over as the Arrow column it read (indexed in bulk
    or, for a small batch, one by one); hybrid recall ranks exactly as on a store that
    gives Python strings, whether the index is built with the first load or later."""
    import random

    from memory_core.storage.duckdb import DuckDBStorage

    rng = random.Random(rows)
    words = ["boiler", "code", "dentist", "flight", "harbour", "rain", "Okafor", "May?"]
    texts = [" ".join(rng.choices(words, k=6)) for _ in range(rows)]
    if rows < 100:
        texts.append("café boiler")  # (a large batch stays ASCII: Arrow tokenises it)
    embed = HashingEmbedder(32)
    vecs = embed(texts)
    duck = DuckDBStorage(":memory:").memory
    plain = make_store()
    for store in (duck, plain):
        store.create_thread("t", resource_id="u")
        add(store, "t", list(zip(texts, vecs, strict=True)))
    cfg = RecallConfig(top_k=5, near_misses=3, mode="hybrid")
    got = []
    for store in (duck, plain):
        engine = RecallEngine(store, embed)
        if vector_first:
            engine.run("boiler code", thread_id="t", resource_id=None,
                       config=cfg.replace(mode="vector"))
        out = engine.run("boiler code harbour", thread_id="t", resource_id=None, config=cfg)
        got.append(([(h.seq, h.score, h.lexical_score) for h in out.hits],
                    [(n.seq, n.reason) for n in out.near_misses]))
    assert got[0] == got[1] and got[0][0]
