"""The recall engine (SPEC §3–§4): exact cosine with filters, thresholds, scope and
neighbour expansion; BM25 and hybrid fusion; near misses; as_of snapshots; the cache."""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from memory_core.embedding.hashing import HashingEmbedder
from memory_core.errors import InvalidInputError, NotFoundError
from memory_core.lifecycle.erasure import erase_thread
from memory_core.recall.config import MessageRange, RecallConfig
from memory_core.recall.engine import RecallEngine
from memory_core.recall.lexical import lexical_terms
from memory_core.storage.base import MemoryStore
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import AppendRow, Message

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def make_store() -> MemoryStore:
    ticks = itertools.count()
    return InMemoryStorage(clock=lambda: T0 + timedelta(seconds=next(ticks))).memory


class TableEmbed:
    """Maps known texts to fixed vectors; anything else to ``default``."""

    def __init__(self, table: dict[str, Sequence[float]], default: Sequence[float]) -> None:
        self.table = table
        self.default = default

    def __call__(self, texts: list[str]) -> np.ndarray:
        return np.array([self.table.get(t, self.default) for t in texts], np.float32)


def add(store: MemoryStore, thread: str, items: Sequence[tuple[str, Sequence[float] | None]],
        metadata: Sequence[dict[str, Any]] | None = None) -> list[int]:
    rows = [AppendRow(message=Message(role="user" if i % 2 == 0 else "assistant", content=text,
                                      metadata=(metadata[i] if metadata else {})),
                      embedding=vec)
            for i, (text, vec) in enumerate(items)]
    return store.append_messages(thread, rows)


def query_to(vec: Sequence[float]) -> Callable[[list[str]], np.ndarray]:
    return lambda texts: np.array([vec] * len(texts), np.float32)


def unit(angle_deg: float) -> list[float]:
    a = np.deg2rad(angle_deg)
    return [float(np.cos(a)), float(np.sin(a)), 0.0]


def seqs(out: Any) -> list[int]:
    return [h.seq for h in out.hits]


# -- SPEC §4 G/W/T -------------------------------------------------------------------------
def test_filter_runs_before_top_k() -> None:
    store = make_store()
    store.create_thread("t")
    add(store, "t", [("A", [1.0, 0, 0]), ("B", [0.8, 0.6, 0]), ("C", [0.6, 0.8, 0])],
        [{"lang": "en"}, {"lang": "tr"}, {"lang": "tr"}])
    engine = RecallEngine(store, query_to([1, 0, 0]))
    out = engine.run("q", thread_id="t", resource_id=None,
                     config=RecallConfig(top_k=1, filter={"lang": "tr"}))
    assert [(h.message.text(), h.origin, h.rank) for h in out.hits] == [("B", "hit", 1)]
    assert out.hits[0].score == pytest.approx(0.8)
    # without the filter A wins
    out = engine.run("q", thread_id="t", resource_id=None, config=RecallConfig(top_k=1))
    assert [h.message.text() for h in out.hits] == ["A"]


def test_message_range_before_1_after_2_around_hits_2_and_5_gives_1_to_7() -> None:
    store = make_store()
    store.create_thread("t")
    vecs = [[0.0, 1.0, 0.0]] * 10
    vecs[2] = [1.0, 0.0, 0.0]
    vecs[5] = [0.9, 0.1, 0.0]
    add(store, "t", [(f"m{i}", v) for i, v in enumerate(vecs)])
    engine = RecallEngine(store, query_to([1, 0, 0]))
    out = engine.run("q", thread_id="t", resource_id=None,
                     config=RecallConfig(top_k=2, message_range={"before": 1, "after": 2}))
    assert seqs(out) == [1, 2, 3, 4, 5, 6, 7]
    by_seq = {h.seq: h for h in out.hits}
    assert by_seq[2].origin == "hit" and by_seq[2].score == pytest.approx(1.0)
    assert by_seq[5].origin == "hit" and by_seq[5].rank == 2
    assert all(by_seq[s].origin == "neighbour" and by_seq[s].score is None
               for s in (1, 3, 4, 6, 7))


def test_int_message_range_is_symmetric_and_clamped_to_thread_ends() -> None:
    store = make_store()
    store.create_thread("t")
    vecs = [[0.0, 1.0, 0.0]] * 5
    vecs[0] = [1.0, 0.0, 0.0]
    add(store, "t", [(f"m{i}", v) for i, v in enumerate(vecs)])
    engine = RecallEngine(store, query_to([1, 0, 0]))
    out = engine.run("q", thread_id="t", resource_id=None,
                     config=RecallConfig(top_k=1, message_range=2))
    assert seqs(out) == [0, 1, 2]


def test_neighbours_follow_position_not_seq_arithmetic() -> None:
    store = make_store()
    store.create_thread("t")
    rows = [AppendRow(message=Message(content=f"m{s}"), seq=s,
                      embedding=[1.0, 0, 0] if s == 10 else [0, 1.0, 0]) for s in (0, 5, 10, 20)]
    store.append_messages("t", rows)
    engine = RecallEngine(store, query_to([1, 0, 0]))
    out = engine.run("q", thread_id="t", resource_id=None,
                     config=RecallConfig(top_k=1, message_range=1))
    assert seqs(out) == [5, 10, 20]


def test_threshold_keeps_scores_at_or_above_it_and_never_non_positive() -> None:
    store = make_store()
    store.create_thread("t")
    add(store, "t", [("hi", unit(10)), ("mid", unit(60)), ("lo", unit(80)),
                     ("neg", unit(120))])
    engine = RecallEngine(store, query_to(unit(0)))
    mid = float(np.cos(np.deg2rad(60)))
    out = engine.run("q", thread_id="t", resource_id=None,
                     config=RecallConfig(top_k=10, threshold=mid - 1e-6))
    assert seqs(out) == [0, 1]
    assert [(m.seq, m.reason) for m in out.near_misses] == [(2, "below-threshold"),
                                                           (3, "below-threshold")]
    out = engine.run("q", thread_id="t", resource_id=None,
                     config=RecallConfig(top_k=10, threshold=-1.0))
    assert seqs(out) == [0, 1, 2]  # score > 0 still required


def test_ties_are_broken_by_creation_time() -> None:
    store = make_store()
    store.create_thread("t")
    add(store, "t", [("x", [1.0, 0, 0]), ("y", [1.0, 0, 0]), ("z", [1.0, 0, 0])])
    engine = RecallEngine(store, query_to([1, 0, 0]))
    out = engine.run("q", thread_id="t", resource_id=None, config=RecallConfig(top_k=2))
    assert [(h.seq, h.rank) for h in out.hits] == [(0, 1), (1, 2)]
    assert [(m.seq, m.rank, m.reason) for m in out.near_misses] == [(2, 3, "beyond-top-k")]


def test_vectors_need_not_be_normalised() -> None:
    store = make_store()
    store.create_thread("t")
    add(store, "t", [("long", [10.0, 10.0, 0]), ("short", [0.1, 0, 0])])
    engine = RecallEngine(store, query_to([5.0, 0, 0]))
    out = engine.run("q", thread_id="t", resource_id=None, config=RecallConfig(top_k=1))
    assert seqs(out) == [1] and out.hits[0].score == pytest.approx(1.0)


# -- skipping ------------------------------------------------------------------------------
def test_all_zero_query_returns_nothing() -> None:
    store = make_store()
    store.create_thread("t")
    add(store, "t", [("a", [1.0, 0, 0])])
    out = RecallEngine(store, query_to([0, 0, 0])).run(
        "q", thread_id="t", resource_id=None, config=RecallConfig())
    assert out.hits == [] and out.skipped == "all-zero query"


def test_no_query_or_no_embedder_skips_but_lexical_needs_no_embedder() -> None:
    store = make_store()
    store.create_thread("t")
    add(store, "t", [("the invoice number", None)])
    engine = RecallEngine(store, None)
    assert engine.run(None, thread_id="t", resource_id=None,
                      config=RecallConfig()).skipped == "no query"
    assert engine.run("  ", thread_id="t", resource_id=None,
                      config=RecallConfig()).skipped == "no query"
    assert engine.run("invoice", thread_id="t", resource_id=None,
                      config=RecallConfig()).skipped == "no embedder"
    out = engine.run("invoice", thread_id="t", resource_id=None,
                     config=RecallConfig(mode="lexical"))
    assert out.skipped is None and seqs(out) == [0]
    assert out.hits[0].vector_score is None and out.hits[0].lexical_score is not None


def test_rows_without_embeddings_are_not_vector_candidates() -> None:
    store = make_store()
    store.create_thread("t")
    add(store, "t", [("no vector", None), ("zero", [0, 0, 0]), ("v", [1.0, 0, 0])])
    engine = RecallEngine(store, query_to([1, 0, 0]))
    out = engine.run("q", thread_id="t", resource_id=None, config=RecallConfig(top_k=5))
    assert seqs(out) == [2] and out.near_misses == []


# -- scope (SPEC §3 G/W/T) -----------------------------------------------------------------
def _two_threads() -> MemoryStore:
    store = make_store()
    store.create_thread("old", resource_id="u")
    add(store, "old", [("my dog is called Pixel", [1.0, 0, 0]), ("nice", [0, 1.0, 0])])
    store.create_thread("new", resource_id="u")
    add(store, "new", [("what is my dog called?", [0.1, 1.0, 0])])
    store.create_thread("other", resource_id="someone-else")
    add(store, "other", [("a dog named Rex", [1.0, 0, 0])])
    return store


def test_resource_scope_recalls_from_the_users_other_threads() -> None:
    engine = RecallEngine(_two_threads(), query_to([1, 0, 0]))
    out = engine.run("dog", thread_id="new", resource_id="u",
                     config=RecallConfig(top_k=1, scope="resource"))
    assert [(h.thread_id, h.seq) for h in out.hits] == [("old", 0)]
    assert out.scope_snapshot == {"old": 1, "new": 0}
    assert engine.scope_threads("new", "u", RecallConfig(scope="resource")) == ["new", "old"]


def test_thread_scope_adds_nothing_from_other_threads() -> None:
    engine = RecallEngine(_two_threads(), query_to([1, 0, 0]))
    out = engine.run("dog", thread_id="new", resource_id="u",
                     config=RecallConfig(top_k=8, scope="thread"))
    assert {h.thread_id for h in out.hits} <= {"new"}
    assert out.scope_snapshot == {"new": 0}


def test_resource_scope_without_resource_id_acts_as_thread_scope() -> None:
    engine = RecallEngine(_two_threads(), query_to([1, 0, 0]))
    out = engine.run("dog", thread_id="new", resource_id=None,
                     config=RecallConfig(top_k=3, scope="resource"))
    assert {h.thread_id for h in out.hits} == {"new"}


def test_unknown_thread_is_an_error() -> None:
    engine = RecallEngine(make_store(), query_to([1, 0, 0]))
    with pytest.raises(NotFoundError, match="nope"):
        engine.run("q", thread_id="nope", resource_id=None, config=RecallConfig())


# -- window and near misses ----------------------------------------------------------------
def test_window_rows_are_passed_over_and_their_neighbours_not_injected() -> None:
    store = make_store()
    store.create_thread("t")
    vecs = [[0.0, 1.0, 0.0]] * 6
    vecs[4] = [1.0, 0, 0]
    vecs[1] = [0.9, 0.3, 0]
    add(store, "t", [(f"m{i}", v) for i, v in enumerate(vecs)])
    engine = RecallEngine(store, query_to([1, 0, 0]))
    window = frozenset({("t", 4), ("t", 5)})
    out = engine.run("q", thread_id="t", resource_id=None,
                     config=RecallConfig(top_k=2, message_range=1), window=window)
    # 4 is in the window: it is no hit, so 3 (its neighbour) is not injected either
    assert seqs(out) == [0, 1, 2]
    assert out.near_misses[0].seq == 4 and out.near_misses[0].reason == "already-in-window"
    assert out.near_misses[0].rank == 1


def test_near_misses_report_each_reason_with_rank_and_clause() -> None:
    store = make_store()
    store.create_thread("t")
    add(store, "t", [
        ("hit", unit(0)),          # rank 1, hit
        ("in window", unit(5)),    # rank 2, hit but in the window
        ("filtered", unit(10)),    # would rank 3, fails the filter
        ("second", unit(20)),      # rank 3 among passing: a hit, the window row
                                   # does not use up a slot
        ("beyond", unit(25)),      # rank 4, beyond top-k
        ("below", unit(80)),       # rank 5, below threshold
    ], [{"ok": True}, {"ok": True}, {"ok": False}, {"ok": True}, {"ok": True},
        {"ok": True}])
    engine = RecallEngine(store, query_to(unit(0)))
    cfg = RecallConfig(top_k=2, threshold=0.5, filter={"ok": True}, near_misses=10)
    out = engine.run("q", thread_id="t", resource_id=None, config=cfg,
                     window=frozenset({("t", 1)}))
    assert seqs(out) == [0, 3]
    got = [(m.preview, m.rank, m.reason, m.filter_clause) for m in out.near_misses]
    assert got == [("in window", 2, "already-in-window", None),
                   ("filtered", 3, "filtered-out", "ok $eq true"),
                   ("beyond", 4, "beyond-top-k", None),
                   ("below", 5, "below-threshold", None)]
    scores = [m.score for m in out.near_misses]
    assert scores == sorted(scores, reverse=True)
    assert out.near_misses[1].vector_score == pytest.approx(np.cos(np.deg2rad(10)))
    limited = engine.run("q", thread_id="t", resource_id=None,
                         config=cfg.replace(near_misses=1))
    assert len(limited.near_misses) == 1
    assert engine.run("q", thread_id="t", resource_id=None,
                      config=cfg.replace(near_misses=0)).near_misses == []


def test_injected_neighbours_are_not_near_misses() -> None:
    store = make_store()
    store.create_thread("t")
    add(store, "t", [("a", unit(0)), ("b", unit(10)), ("c", unit(30))])
    engine = RecallEngine(store, query_to(unit(0)))
    out = engine.run("q", thread_id="t", resource_id=None,
                     config=RecallConfig(top_k=1, message_range={"before": 0, "after": 1}))
    assert seqs(out) == [0, 1]
    assert [(m.seq, m.rank) for m in out.near_misses] == [(2, 3)]


# -- as_of and the cache -------------------------------------------------------------------
def test_as_of_excludes_later_messages_and_threads() -> None:
    store = make_store()
    store.create_thread("t", resource_id="u")
    add(store, "t", [("early", unit(30)), ("filler", unit(90))])
    snapshot_engine = RecallEngine(store, query_to(unit(0)))
    cfg = RecallConfig(top_k=1, scope="resource", message_range=3)
    first = snapshot_engine.run("q", thread_id="t", resource_id="u", config=cfg)
    add(store, "t", [("later and better", unit(0))])
    store.create_thread("t2", resource_id="u")
    add(store, "t2", [("other thread", unit(0))])
    now = snapshot_engine.run("q", thread_id="t", resource_id="u", config=cfg)
    assert now.hits[-1].seq == 2 or now.hits[0].thread_id == "t2"
    replay = snapshot_engine.run("q", thread_id="t", resource_id="u", config=cfg,
                                 as_of=first.scope_snapshot)
    assert [(h.thread_id, h.seq, h.origin) for h in replay.hits] == [
        ("t", 0, "hit"), ("t", 1, "neighbour")]
    assert replay.scope_snapshot == {"t": 1, "t2": -1}
    assert all(m.seq < 2 and m.thread_id == "t" for m in replay.near_misses)


def test_as_of_restricts_lexical_corpus_statistics() -> None:
    early = [("the parcel tracking code", None), ("weather chat", None)]
    store = make_store()
    store.create_thread("t")
    add(store, "t", early)
    engine = RecallEngine(store, None)
    cfg = RecallConfig(mode="lexical", top_k=1)
    before = engine.run("parcel code", thread_id="t", resource_id=None, config=cfg)
    add(store, "t", [("parcel parcel parcel", None)] * 5)
    replay = engine.run("parcel code", thread_id="t", resource_id=None, config=cfg,
                        as_of=before.scope_snapshot)
    assert replay.hits[0].lexical_score == pytest.approx(before.hits[0].lexical_score)
    now = engine.run("parcel code", thread_id="t", resource_id=None, config=cfg)
    assert now.hits[0].seq == 0
    assert now.hits[0].lexical_score != pytest.approx(before.hits[0].lexical_score)


def test_cache_sees_appends_and_rebuilds_after_erasure() -> None:
    ticks = itertools.count()
    storage = InMemoryStorage(clock=lambda: T0 + timedelta(seconds=next(ticks)))
    store = storage.memory
    store.create_thread("a", resource_id="u")
    store.create_thread("b", resource_id="u")
    add(store, "a", [("x", unit(60))])
    add(store, "b", [("y", unit(45))])
    engine = RecallEngine(store, query_to(unit(0)))
    cfg = RecallConfig(top_k=1, scope="resource")
    assert [(h.thread_id, h.seq) for h in engine.run(
        "q", thread_id="a", resource_id="u", config=cfg).hits] == [("b", 0)]
    add(store, "a", [("z", unit(1))])
    assert [(h.thread_id, h.seq) for h in engine.run(
        "q", thread_id="a", resource_id="u", config=cfg).hits] == [("a", 1)]
    erase_thread(storage, "a")
    store.create_thread("a", resource_id="u")
    add(store, "a", [("w", unit(80)), ("v", unit(85))])  # same count as before erasure
    out = engine.run("q", thread_id="a", resource_id="u", config=cfg)
    assert [(h.thread_id, h.seq, h.message.text()) for h in out.hits] == [("b", 0, "y")]
    thread_cfg = RecallConfig(top_k=1)
    assert engine.run("q", thread_id="a", resource_id="u",
                      config=thread_cfg).hits[0].message.text() == "w"
    erase_thread(storage, "a")
    store.create_thread("a", resource_id="u")
    add(store, "a", [("s", unit(50)), ("r", unit(85))])
    assert engine.run("q", thread_id="a", resource_id="u",
                      config=thread_cfg).hits[0].message.text() == "s"


def test_cache_rebuilds_when_a_gap_below_the_max_is_filled() -> None:
    store = make_store()
    store.create_thread("t")
    store.append_messages("t", [AppendRow(message=Message(content="far"), seq=3,
                                          embedding=unit(80))])
    engine = RecallEngine(store, query_to(unit(0)))
    cfg = RecallConfig(top_k=1)
    assert seqs(engine.run("q", thread_id="t", resource_id=None, config=cfg)) == [3]
    store.append_messages("t", [AppendRow(message=Message(content="near"), seq=1,
                                          embedding=unit(0))])
    assert seqs(engine.run("q", thread_id="t", resource_id=None, config=cfg)) == [1]


def test_filter_masks_follow_appends() -> None:
    store = make_store()
    store.create_thread("t")
    add(store, "t", [("a", unit(10))], [{"k": 1}])
    engine = RecallEngine(store, query_to(unit(0)))
    cfg = RecallConfig(top_k=5, filter={"k": {"$gte": 1}})
    assert seqs(engine.run("q", thread_id="t", resource_id=None, config=cfg)) == [0]
    add(store, "t", [("b", unit(5)), ("c", unit(0))], [{"k": 0}, {"k": 2}])
    assert seqs(engine.run("q", thread_id="t", resource_id=None, config=cfg)) == [0, 2]


# -- lexical and hybrid --------------------------------------------------------------------
_RARE = "the replacement part number is QX-7731, it ships friday"


def _lexical_store() -> tuple[MemoryStore, TableEmbed]:
    texts = [
        "let's talk about the kitchen renovation budget",
        _RARE,
        "the cabinets should be oak, not pine",
        "what colour should the kitchen walls be",
        "we can order parts later this month",
    ]
    embed = TableEmbed({
        texts[0]: unit(20), _RARE: unit(85), texts[2]: unit(30), texts[3]: unit(25),
        texts[4]: unit(40), "which part number was it? QX-7731?": unit(15),
    }, unit(0))
    store = make_store()
    store.create_thread("t")
    add(store, "t", [(t, embed([t])[0]) for t in texts])
    return store, embed


def test_bm25_finds_a_rare_exact_term_that_cosine_misses() -> None:
    store, embed = _lexical_store()
    engine = RecallEngine(store, embed)
    q = "which part number was it? QX-7731?"
    vector = engine.run(q, thread_id="t", resource_id=None, config=RecallConfig(top_k=1))
    assert seqs(vector) == [0]
    lexical = engine.run(q, thread_id="t", resource_id=None,
                         config=RecallConfig(top_k=1, mode="lexical"))
    assert seqs(lexical) == [1]
    hybrid = engine.run(q, thread_id="t", resource_id=None,
                        config=RecallConfig(top_k=2, mode="hybrid", fusion="rrf"))
    assert 1 in seqs(hybrid)
    hit = next(h for h in hybrid.hits if h.seq == 1)
    assert hit.vector_score == pytest.approx(np.cos(np.deg2rad(70)), abs=1e-6)
    assert hit.lexical_score is not None and hit.lexical_score > 0
    assert hit.score == pytest.approx(1 / 61 + 1 / (60 + 5))


def test_hybrid_threshold_gates_only_the_cosine_evidence() -> None:
    store, embed = _lexical_store()
    engine = RecallEngine(store, embed)
    q = "which part number was it? QX-7731?"
    out = engine.run(q, thread_id="t", resource_id=None,
                     config=RecallConfig(top_k=5, mode="hybrid", threshold=0.97,
                                         near_misses=10, fusion="rrf"))
    # only seq 0 (cos 0.996) and seq 3 (0.985) pass the cosine gate; seq 1 (0.34) enters
    # by BM25 (it shares "part", "number", "qx", "7731"), seq 4 (0.906) by "part"
    # ("parts" folded); seq 2 (0.966) shares no term and stays out
    hits = {h.seq: h for h in out.hits}
    assert set(hits) == {0, 1, 3, 4}
    assert hits[1].score == pytest.approx(1 / 61)
    below = [(m.seq, m.reason) for m in out.near_misses]
    assert below == [(2, "below-threshold")]
    assert out.near_misses[0].score == 0.0
    assert out.near_misses[0].vector_score == pytest.approx(np.cos(np.deg2rad(15)), abs=1e-6)


def test_bm25_scores_follow_the_formula() -> None:
    store = make_store()
    store.create_thread("t")
    docs = ["apple banana", "apple apple cherry", "durian"]
    add(store, "t", [(d, None) for d in docs])
    out = RecallEngine(store, None).run("apple", thread_id="t", resource_id=None,
                                        config=RecallConfig(mode="lexical", top_k=3))
    n, df, avgdl = 3, 2, (2 + 3 + 1) / 3
    idf = np.log(1 + (n - df + 0.5) / (df + 0.5))

    def bm(tf: int, dl: int) -> float:
        return float(idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * dl / avgdl)))

    by_seq = {h.seq: h.score for h in out.hits}
    assert by_seq == pytest.approx({0: bm(1, 2), 1: bm(2, 3)})
    assert [h.rank for h in sorted(out.hits, key=lambda h: h.rank or 0)] == [1, 2]


def test_lexical_terms_drop_stop_words_and_fold_plurals() -> None:
    assert lexical_terms("What are the Refunds for policies?") == ["refund", "policy"]


def test_lexical_query_without_terms_is_skipped() -> None:
    store = make_store()
    store.create_thread("t")
    add(store, "t", [("hello", None)])
    out = RecallEngine(store, None).run("what is it", thread_id="t", resource_id=None,
                                        config=RecallConfig(mode="lexical"))
    assert out.skipped == "no query terms"


def test_hybrid_with_hashing_embedder_runs_end_to_end() -> None:
    embed = HashingEmbedder(64)
    store = make_store()
    store.create_thread("t")
    texts = ["my flight to Lisbon leaves at 7am", "the hotel has a rooftop pool",
             "I booked seat 14C", "dinner reservation at 8"]
    add(store, "t", [(t, embed([t])[0]) for t in texts])
    out = RecallEngine(store, embed).run("when does the Lisbon flight leave", thread_id="t",
                                         resource_id=None,
                                         config=RecallConfig(mode="hybrid", top_k=1,
                                                             vector_weight=0.5))
    assert seqs(out) == [0]


# -- fast path == full path ----------------------------------------------------------------
_WORDS = ["parcel", "refund", "invoice", "delay", "lisbon", "seat", "paint", "tile"]


@pytest.mark.parametrize("mode", ["vector", "lexical", "hybrid"])
@pytest.mark.parametrize("seed", range(5))
def test_run_agrees_with_full_scoring(seed: int, mode: str) -> None:
    rng = random.Random(seed)
    store = make_store()
    store.create_thread("a", resource_id="u")
    store.create_thread("b", resource_id="u")
    for _ in range(60):
        t = rng.choice("ab")
        vec = [rng.choice([-1.0, 0.0, 0.5, 1.0]) for _ in range(4)]  # many exact ties
        text = " ".join(rng.choices(_WORDS, k=rng.randint(1, 4)))
        add(store, t, [(text, vec)], [{"g": rng.randint(0, 2)}])
    cfg = RecallConfig(top_k=rng.randint(1, 4), threshold=rng.choice([0.0, 0.3]),
                       scope="resource", filter=rng.choice([None, {"g": {"$ne": 1}}]),
                       message_range=rng.randint(0, 1), near_misses=6, mode=mode,
                       skip_query_duplicates=False)  # score_all ranks every row
    engine = RecallEngine(store, query_to([1.0, 0.5, 0.0, -0.5]))
    query = "refund for the parcel delay"
    out = engine.run(query, thread_id="a", resource_id="u", config=cfg)
    scored = engine.score_all(query, thread_id="a", resource_id="u", config=cfg)
    expected_hits = [(c.thread_id, c.seq) for c in scored if c.eligible][: cfg.top_k]
    got_hits = [(h.thread_id, h.seq) for h in sorted(
        (h for h in out.hits if h.origin == "hit"), key=lambda h: h.rank or 0)]
    assert got_hits == expected_hits
    by_key = {(c.thread_id, c.seq): c for c in scored}
    for h in out.hits:
        if h.origin == "hit":
            assert by_key[(h.thread_id, h.seq)].rank == h.rank
            assert by_key[(h.thread_id, h.seq)].score == pytest.approx(h.score)
    for m in out.near_misses:
        c = by_key[(m.thread_id, m.seq)]
        assert (c.score or 0.0) == pytest.approx(m.score)
        if m.reason == "filtered-out":
            assert c.filter_clause == m.filter_clause is not None
        elif c.rank is not None:
            assert c.rank == m.rank
    # the head the fast paths order is exactly the head of the full ordering
    idx = engine._scopes[("resource", "u")]
    q = np.array([1.0, 0.5, 0.0, -0.5], np.float32)
    full = engine._rank_full(idx, cfg, q, query, None)
    pool = 5
    head = (engine._rank_fast(idx, cfg, q, None) if mode == "vector"
            else engine._rank_full(idx, cfg, q, query, None, pool))
    assert head.order[:pool] == full.order[:pool]
    assert all(head.pos[r] == full.pos[r] for r in head.order)


# -- score_all -----------------------------------------------------------------------------
def test_score_all_lists_every_message_with_why() -> None:
    store = make_store()
    store.create_thread("t")
    add(store, "t", [("A", [1.0, 0, 0]), ("B", [0.8, 0.6, 0]), ("tool", None)],
        [{"lang": "en"}, {"lang": "tr"}, {}])
    engine = RecallEngine(store, query_to([1, 0, 0]))
    cfg = RecallConfig(top_k=1, filter={"lang": "tr"})
    snap = engine.run("q", thread_id="t", resource_id=None, config=cfg).scope_snapshot
    add(store, "t", [("late", [1.0, 0, 0])], [{"lang": "tr"}])
    rows = engine.score_all("q", thread_id="t", resource_id=None, config=cfg, as_of=snap)
    got = {c.seq: (c.rank, c.eligible, c.filter_clause, c.in_scope) for c in rows}
    assert got == {1: (1, True, None, True), 0: (None, False, 'lang $eq "tr"', True),
                   2: (None, False, 'lang $eq "tr"', True), 3: (None, False, None, False)}
    assert [c.seq for c in rows][0] == 1
    assert next(c for c in rows if c.seq == 2).score is None
    assert next(c for c in rows if c.seq == 3).score == pytest.approx(1.0)


# -- config --------------------------------------------------------------------------------
@pytest.mark.parametrize(("kwargs", "named"), [
    ({"top_k": 0}, "top_k"), ({"top_k": -2}, "top_k"), ({"top_k": True}, "top_k"),
    ({"threshold": 1.5}, "threshold"), ({"threshold": -1.01}, "threshold"),
    ({"threshold": float("nan")}, "threshold"), ({"threshold": "0.5"}, "threshold"),
    ({"message_range": -1}, "message_range"),
    ({"message_range": {"before": -1, "after": 0}}, "before"),
    ({"filter": {"lang": {"$regex": "t"}}}, r"\$regex"),
    ({"mode": "semantic"}, "mode"), ({"scope": "global"}, "scope"),
    ({"near_misses": -1}, "near_misses"), ({"topk": 3}, "topk"),
])
def test_bad_config_raises_invalid_input_naming_the_value(kwargs: dict[str, Any],
                                                          named: str) -> None:
    with pytest.raises(InvalidInputError, match=named):
        RecallConfig(**kwargs)


def test_config_accepts_range_dicts_and_serialises_to_json() -> None:
    cfg = RecallConfig(message_range={"before": 1, "after": 2}, filter={"lang": "tr"},
                       threshold=1)
    assert cfg.message_range == MessageRange(before=1, after=2)
    assert (cfg.before, cfg.after) == (1, 2)
    d = cfg.settings_dict()
    assert json.loads(json.dumps(d)) == d
    assert d["message_range"] == {"before": 1, "after": 2} and d["threshold"] == 1.0
    assert RecallConfig(message_range=2).settings_dict()["message_range"] == 2
    assert RecallConfig.model_validate(d) == cfg
    with pytest.raises(InvalidInputError, match="top_k"):
        cfg.replace(top_k=0)


def test_query_embedding_of_the_wrong_dimension_is_rejected() -> None:
    store = make_store()
    store.create_thread("t")
    add(store, "t", [("a", [1.0, 0, 0])])
    with pytest.raises(InvalidInputError, match="dimension 2"):
        RecallEngine(store, query_to([1.0, 0])).run("q", thread_id="t", resource_id=None,
                                                     config=RecallConfig())


def test_score_all_refuses_an_all_zero_query_in_vector_mode() -> None:
    store = make_store()
    store.create_thread("t")
    add(store, "t", [("a", [1.0, 0, 0])])
    with pytest.raises(InvalidInputError, match="all-zero"):
        RecallEngine(store, query_to([0, 0, 0])).score_all(
            "q", thread_id="t", resource_id=None, config=RecallConfig())


def test_least_recently_used_scopes_are_dropped_and_rebuilt_on_demand() -> None:
    store = make_store()
    for t in ("a", "b", "c"):
        store.create_thread(t)
        add(store, t, [(t, [1.0, 0, 0])])
    engine = RecallEngine(store, query_to([1, 0, 0]), max_scopes=2)
    for t in ("a", "b", "c"):
        engine.run("q", thread_id=t, resource_id=None, config=RecallConfig())
    assert list(engine._scopes) == [("thread", "b"), ("thread", "c")]
    out = engine.run("q", thread_id="a", resource_id=None, config=RecallConfig())
    assert [(h.thread_id, h.seq) for h in out.hits] == [("a", 0)]


def test_an_empty_scope_recalls_nothing_in_every_mode() -> None:
    store = make_store()
    store.create_thread("t")
    engine = RecallEngine(store, query_to([1, 0, 0]))
    for mode in ("vector", "lexical", "hybrid"):
        out = engine.run("anything at all", thread_id="t", resource_id=None,
                         config=RecallConfig(mode=mode))
        assert out.hits == [] and out.near_misses == [] and out.skipped is None
        assert out.scope_snapshot == {"t": -1}


def test_a_window_row_below_the_bar_is_said_to_be_in_the_window() -> None:
    """A message in the recent window is in the prompt whatever its score: a near miss
    of it said "below-threshold", and the run inspector listed it as left out of the
    prompt (132 such on the 5,000-run database)."""
    store = make_store()
    store.create_thread("t")
    add(store, "t", [("hit", unit(0)), ("below", unit(80)), ("below too", unit(85))])
    engine = RecallEngine(store, query_to(unit(0)))
    out = engine.run("q", thread_id="t", resource_id=None,
                     config=RecallConfig(top_k=1, threshold=0.5, near_misses=5),
                     window=frozenset({("t", 2)}))
    assert [(m.preview, m.reason) for m in out.near_misses] == [
        ("below", "below-threshold"), ("below too", "already-in-window")]
