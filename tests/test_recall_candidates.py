"""Which rows may become recall hits: the recent window (and input already in the
prompt) never uses up a recall slot, and turns that merely repeat the question do not
crowd out the turn that answers it."""

from __future__ import annotations

import pytest

from memory_core.composition.memory import AgentMemory
from memory_core.embedding.hashing import HashingEmbedder
from memory_core.recall.config import RecallConfig
from memory_core.recall.engine import RecallEngine
from memory_core.recall.lexical import is_query_duplicate, lexical_terms
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import Message
from tests.test_recall import add, make_store, query_to, seqs, unit

MODES = ["vector", "lexical", "hybrid"]


def _hits(out: object) -> list[int]:
    return sorted(h.seq for h in out.hits if h.origin == "hit")  # type: ignore[attr-defined]


@pytest.mark.parametrize("mode", MODES)
def test_window_rows_do_not_use_up_recall_slots(mode: str) -> None:
    store = make_store()
    store.create_thread("t")
    # the two best rows (3, 4) are in the window; the next two (0, 1) fill top_k=2
    add(store, "t", [("parcel refund", unit(10)), ("parcel refund delay", unit(12)),
                     ("tile paint", unit(80)), ("parcel refund delay lisbon", unit(1)),
                     ("parcel refund delay lisbon", unit(2))])
    engine = RecallEngine(store, query_to(unit(0)))
    window = frozenset({("t", 3), ("t", 4)})
    out = engine.run("parcel refund delay lisbon", thread_id="t", resource_id=None,
                     config=RecallConfig(top_k=2, mode=mode, skip_query_duplicates=False),
                     window=window)
    assert _hits(out) == [0, 1]
    assert {(m.seq, m.reason) for m in out.near_misses} >= {(3, "already-in-window"),
                                                            (4, "already-in-window")}


def test_a_window_longer_than_the_ranked_head_still_leaves_top_k_hits() -> None:
    store = make_store()
    store.create_thread("t")
    # 40 rows, best last; the last 30 are the window: the fast path must widen its head
    add(store, "t", [(f"m{i}", unit(60 - i)) for i in range(40)])
    engine = RecallEngine(store, query_to(unit(0)))
    window = frozenset(("t", s) for s in range(10, 40))
    cfg = RecallConfig(top_k=3, near_misses=0)
    out = engine.run("q", thread_id="t", resource_id=None, config=cfg, window=window)
    assert _hits(out) == [7, 8, 9]
    lexical = engine.run("m1 m2 m3 m4 m5 m6 m7 m8 m9", thread_id="t", resource_id=None,
                         config=cfg.replace(mode="hybrid"), window=window)
    assert len(_hits(lexical)) == 3 and all(s < 10 for s in _hits(lexical))


def _dentist_store() -> tuple[InMemoryStorage, HashingEmbedder]:
    embed = HashingEmbedder(64)
    storage = InMemoryStorage()
    storage.memory.create_thread("t")
    texts = ["My new dentist is Dr Okafor, her practice is on Elm Street.",
             "Noted: Dr Okafor on Elm Street.",
             "what is the name of my dentist?",
             "I don't have that written down.",
             "Any plans for the weekend?",
             "We're going hiking near the lake."]
    add(storage.memory, "t", [(t, embed([t])[0]) for t in texts])
    return storage, embed


@pytest.mark.parametrize("mode", MODES)
def test_an_earlier_copy_of_the_question_does_not_crowd_out_the_answer(mode: str) -> None:
    storage, embed = _dentist_store()
    engine = RecallEngine(storage.memory, embed)
    query = "What is the name of my dentist?"
    out = engine.run(query, thread_id="t", resource_id=None,
                     config=RecallConfig(top_k=1, mode=mode))
    assert seqs(out) == [0]
    assert (2, "duplicate-of-query") in {(m.seq, m.reason) for m in out.near_misses}
    # without the rule the copy of the question wins the only slot
    kept = engine.run(query, thread_id="t", resource_id=None,
                      config=RecallConfig(top_k=1, mode=mode, skip_query_duplicates=False))
    assert seqs(kept) == [2]


def test_the_current_input_already_stored_is_not_recalled_as_its_own_answer() -> None:
    storage, embed = _dentist_store()
    memory = AgentMemory(storage, embed, recent_n=0,
                         recall=RecallConfig(top_k=1, mode="hybrid"))
    memory.append(thread_id="t", messages=[Message(role="user",
                                                   content="what is my dentist's name?")])
    hits = memory.recall("What is my dentist's name?", thread_id="t")
    assert [h.seq for h in hits] == [0]


def test_duplicates_are_questions_whose_terms_overlap_the_query() -> None:
    q = frozenset(lexical_terms("Where does my sister live now?"))
    assert is_query_duplicate("where does my sister live now??", q, 0.6)
    assert is_query_duplicate("Remind me: where does my sister live now?", q, 0.6)
    # a statement sharing most of the words carries the answer: never a duplicate
    assert not is_query_duplicate("My sister lives in Lisbon now.", q, 0.6)
    assert not is_query_duplicate("Is my sister coming to the wedding?", q, 0.6)
    assert not is_query_duplicate("My sister lives now.", q, 0.6)
    assert not is_query_duplicate("", q, 0.6)


def test_composition_fills_recall_slots_past_the_recent_window() -> None:
    embed = HashingEmbedder(64)
    storage = InMemoryStorage()
    memory = AgentMemory(storage, embed, recent_n=2,
                         recall=RecallConfig(top_k=2, mode="lexical"))
    texts = ["the boiler code is 4471", "the boiler service is in May", "lunch was nice",
             "weather is grey", "the boiler code changed to 9902", "boiler code noted"]
    for i, text in enumerate(texts):
        memory.append(thread_id="t", messages=[
            Message(role="user" if i % 2 == 0 else "assistant", content=text)])
    comp = memory.load_context(thread_id="t", input=[Message(role="user",
                                                             content="boiler code please")])
    recalled = [item.seq for item in comp.prompt.items if item.lane == "recalled"]
    recent = [item.seq for item in comp.prompt.items if item.lane == "recent"]
    assert recent == [4, 5]
    assert sorted(recalled) == [0, 1]


@pytest.mark.parametrize("bad", [0, -0.1, 1.5, "high", True, float("nan")])
def test_duplicate_overlap_is_validated(bad: object) -> None:
    from memory_core.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match="duplicate_overlap"):
        RecallConfig(duplicate_overlap=bad)
