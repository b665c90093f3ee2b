"""Cold start: the lexical index is built only when a lexical or hybrid query needs it,
then kept current incrementally; vector recall never tokenises a message."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from memory_core.embedders import HashingEmbedder
from memory_core.recall import RecallConfig, RecallEngine
from memory_core.types import StoredMessage
from tests.test_recall import add, make_store

TEXTS = ["the boiler code is 4471", "lunch at the harbour", "my dentist is Dr Okafor",
         "the flight leaves at seven", "boiler service booked for May", "rain again"]


def _engine() -> tuple[RecallEngine, list[int]]:
    store = make_store()
    store.create_thread("t")
    embed = HashingEmbedder(64)
    add(store, "t", [(t, embed([t])[0]) for t in TEXTS])
    fetched: list[int] = []
    original = store.get_messages_by_refs

    def counting(refs: Sequence[tuple[str, int]]) -> list[StoredMessage]:
        fetched.append(len(refs))
        return original(refs)

    store.get_messages_by_refs = counting  # type: ignore[method-assign]
    return RecallEngine(store, embed), fetched


def test_vector_recall_builds_no_lexical_index(monkeypatch: pytest.MonkeyPatch) -> None:
    engine, _ = _engine()
    import memory_core.recall as recall_mod

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
    engine, fetched = _engine()
    cfg = RecallConfig(top_k=3, mode=mode)
    engine.run("boiler", thread_id="t", resource_id=None, config=cfg.replace(mode="vector"))
    fetched.clear()
    first = engine.run("boiler code", thread_id="t", resource_id=None, config=cfg)
    assert fetched[0] == len(TEXTS)  # every loaded row, once, by ref
    idx = engine._scopes[("thread", "t")]
    assert idx.lex_n == len(TEXTS) and "boiler" in idx.postings
    embed = HashingEmbedder(64)
    add(engine.store, "t", [("boiler pressure dropped overnight",
                             embed(["boiler pressure dropped overnight"])[0])])
    fetched.clear()
    cfg = cfg.replace(top_k=1, near_misses=0)  # hits fetch at most 2 refs
    again = engine.run("boiler pressure", thread_id="t", resource_id=None, config=cfg)
    # the new row was indexed as it was loaded: no refetch of indexed rows
    assert all(n <= 2 for n in fetched)
    assert idx.lex_n == len(TEXTS) + 1
    fresh = RecallEngine(engine.store, embed).run("boiler pressure", thread_id="t",
                                                  resource_id=None, config=cfg)
    key = [(h.seq, h.score) for h in again.hits]
    assert key == [(h.seq, h.score) for h in fresh.hits]
    assert 6 in [h.seq for h in again.hits] and first.hits


def test_a_first_hybrid_query_indexes_the_rows_it_loads_without_refetching() -> None:
    engine, fetched = _engine()
    cfg = RecallConfig(top_k=1, near_misses=0, mode="hybrid", skip_query_duplicates=False)
    out = engine.run("boiler code", thread_id="t", resource_id=None, config=cfg)
    assert [h.seq for h in out.hits] == [0]
    assert fetched == [1]  # the hit only: texts were indexed as the rows were loaded
    assert engine._scopes[("thread", "t")].lex_n == len(TEXTS)


def test_duplicate_checks_and_near_misses_share_one_message_fetch() -> None:
    engine, fetched = _engine()
    out = engine.run("boiler code", thread_id="t", resource_id=None,
                     config=RecallConfig(top_k=2, near_misses=3))
    assert len(out.hits) == 2 and len(out.near_misses) == 3
    assert len(fetched) == 1  # one round trip to the store per recall
