"""Hybrid fusion settings: score-normalised weighted fusion, neighbour context,
question demotion and query rewrite; every setting reaches ``settings_dict``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from memory_core.errors import InvalidInputError
from memory_core.recall.config import LEGACY_HYBRID, RecallConfig
from memory_core.recall.engine import RecallEngine
from memory_core.recall.lexical import rewrite_query
from tests.test_recall import TableEmbed, add, make_store, unit

PLAIN = {"context_weight": 0.0, "question_weight": 1.0, "skip_query_duplicates": False}


def _store(items: list[tuple[str, list[float]]]) -> RecallEngine:
    store = make_store()
    store.create_thread("t")
    add(store, "t", items)
    return RecallEngine(store, TableEmbed({}, unit(0)))


def _ranked(engine: RecallEngine, query: str, **kw: Any) -> list[tuple[int, float]]:
    out = engine.run(query, thread_id="t", resource_id=None,
                     config=RecallConfig(mode="hybrid", top_k=10, near_misses=0, **kw))
    hits = sorted((h for h in out.hits if h.origin == "hit"), key=lambda h: h.rank or 0)
    return [(h.seq, float(h.score or 0.0)) for h in hits]


ITEMS = [("apple pie recipe", unit(10)), ("banana bread", unit(20)),
         ("apple apple cider", unit(60)), ("cherry jam", unit(30))]


@pytest.mark.parametrize("norm", ["zscore", "minmax"])
def test_weighted_fusion_follows_its_formula(norm: str) -> None:
    engine = _store(ITEMS)
    got = dict(_ranked(engine, "apple", fusion="weighted", score_norm=norm,
                       vector_weight=0.3, **PLAIN))
    cos = np.cos(np.deg2rad([10, 20, 60, 30]))
    # BM25 of "apple": rows 0 and 2 hold it (row 2 twice); the others score 0
    idx = engine._scopes[("thread", "t")]
    bm = engine._bm25(idx, "apple", np.ones(4, bool))
    assert bm[1] == bm[3] == 0 and bm[2] > bm[0] > 0

    def scale(x: np.ndarray) -> np.ndarray:
        if norm == "zscore":
            return (x - x.mean()) / x.std()
        return (x - x.min()) / (x.max() - x.min())

    expected = 0.3 * scale(cos) + 0.7 * np.where(bm > 0, scale(bm), 0.0)
    assert got == pytest.approx({i: float(v) for i, v in enumerate(expected)})


def test_weighted_fusion_weighs_margins_that_rank_fusion_ignores() -> None:
    # A leads on cosine by a hair, B on BM25 by far: rank fusion ties them (and the tie
    # goes to the higher cosine); score fusion sees the margins
    engine = _store([("apple", unit(25)), ("apple cider", unit(26)), ("banana", unit(60)),
                     ("cherry", unit(80))])
    rrf = _ranked(engine, "cider apple", fusion="rrf", **PLAIN)
    assert rrf[0][1] == pytest.approx(rrf[1][1]) and rrf[0][0] == 0
    weighted = _ranked(engine, "cider apple", vector_weight=0.5, **PLAIN)
    assert weighted[0][0] == 1


def test_context_weight_lifts_the_answer_to_a_matching_question() -> None:
    engine = _store([
        ("Which city did your sister move to?", unit(5)),   # the question: close
        ("Lisbon, since March.", unit(70)),                 # the answer: far
        ("Cities are expensive these days.", unit(40)),     # a distractor
        ("Chit chat", unit(80)),
    ])
    base = [s for s, _ in _ranked(engine, "sister", **PLAIN)]
    assert base.index(2) < base.index(1)
    ctx = [s for s, _ in _ranked(engine, "sister", **{**PLAIN, "context_weight": 1.0})]
    assert ctx.index(1) < ctx.index(2)


def test_question_weight_demotes_turns_that_ask() -> None:
    engine = _store([("Where is the spare key?", unit(5)), ("The spare key is under the pot.",
                                                             unit(8)), ("noise", unit(80))])
    assert [s for s, _ in _ranked(engine, "spare key", **PLAIN)][0] == 0
    demoted = _ranked(engine, "spare key", **{**PLAIN, "question_weight": 0.5})
    assert demoted[0][0] == 1


def test_query_rewrite_embeds_the_query_without_function_words() -> None:
    seen: list[str] = []

    def embed(texts: list[str]) -> np.ndarray:
        seen.extend(texts)
        return np.array([unit(0)] * len(texts), np.float32)

    store = make_store()
    store.create_thread("t")
    add(store, "t", [("the dentist is on Elm Street", unit(3))])
    engine = RecallEngine(store, embed)
    q = "What is the name of my dentist?"
    engine.run(q, thread_id="t", resource_id=None,
               config=RecallConfig(mode="hybrid", query_rewrite=True))
    engine.run(q, thread_id="t", resource_id=None, config=RecallConfig(mode="hybrid"))
    engine.run(q, thread_id="t", resource_id=None,
               config=RecallConfig(mode="vector", query_rewrite=True))
    assert seen == ["name dentist", q, q]  # hybrid only
    assert rewrite_query("what is it?") == "what is it?"


def test_every_setting_is_in_the_settings_dict() -> None:
    cfg = RecallConfig(mode="hybrid", fusion="rrf", vector_weight=0.2, context_weight=0.5,
                       question_weight=0.9, query_rewrite=True, score_norm="minmax")
    d = cfg.settings_dict()
    assert set(d) == set(RecallConfig.model_fields)
    assert RecallConfig(**d) == cfg
    assert RecallConfig(**{**d, **LEGACY_HYBRID}).fusion == "rrf"


@pytest.mark.parametrize("kwargs", [
    {"vector_weight": 1.5}, {"vector_weight": "x"}, {"question_weight": -0.1},
    {"context_weight": 5}, {"context_weight": float("inf")}, {"fusion": "max"},
    {"score_norm": "rank"}, {"query_rewrite": "yes"},
])
def test_bad_fusion_settings_name_the_value(kwargs: dict[str, Any]) -> None:
    with pytest.raises(InvalidInputError, match=next(iter(kwargs))):
        RecallConfig(**kwargs)


def test_a_later_message_never_lifts_an_older_one_in_an_as_of_recall() -> None:
    """Recall as of a past moment (a retried turn, a what-if of a past run) ranks as if
    later messages did not exist: their signal reaches no neighbour through
    ``context_weight``, so the ranking equals that of the store without them."""
    early = [("Chit chat", unit(80)), ("Nothing much.", unit(75)),
             ("Which city did your sister move to?", unit(5)), ("Cities are big.", unit(40))]
    later = [("Lisbon, since March: sister lives there now.", unit(1))]
    config = {**PLAIN, "context_weight": 1.0}
    then = _store(early)
    now = _store(early + later)
    out_then = then.run("sister", thread_id="t", resource_id=None,
                        config=RecallConfig(mode="hybrid", top_k=10, near_misses=0, **config))
    out_now = now.run("sister", thread_id="t", resource_id=None,
                      config=RecallConfig(mode="hybrid", top_k=10, near_misses=0, **config),
                      as_of={"t": 3})
    assert [(h.seq, h.score) for h in out_now.hits] == [(h.seq, h.score) for h in out_then.hits]
    assert 4 not in {h.seq for h in out_now.hits}


def test_a_row_in_neither_list_never_outranks_a_recalled_one() -> None:
    """z-scored weighted fusion gives a row below the mean a negative score, and a row
    that neither list holds 0: ranks, near misses and every candidate's rank still put
    the rows recall could take first (a near miss ranked above a hit it could not
    have displaced read as if recall had skipped it)."""
    engine = _store([("apple pie", unit(10)), ("cherry jam", unit(40)),
                     ("date loaf", unit(45)), ("banana bread", unit(75)),
                     ("elder syrup", unit(85))])
    config = RecallConfig(mode="hybrid", fusion="weighted", score_norm="zscore",
                          vector_weight=0.5, threshold=0.2, top_k=4, near_misses=3,
                          **PLAIN)
    out = engine.run("apple", thread_id="t", resource_id=None, config=config)
    hits = {h.seq: h for h in out.hits if h.origin == "hit"}
    assert set(hits) == {0, 1, 2, 3}
    assert hits[3].score is not None and hits[3].score < 0  # below the mean, still taken
    assert sorted(h.rank or 0 for h in hits.values()) == [1, 2, 3, 4]
    assert [(n.seq, n.rank, n.reason) for n in out.near_misses] == \
        [(4, 5, "below-threshold")]
    cands = {c.seq: c for c in engine.score_all("apple", thread_id="t", resource_id=None,
                                                 config=config)}
    assert [cands[s].rank for s in range(4)] == [hits[s].rank for s in range(4)]
    assert cands[4].rank is None and not cands[4].eligible
