"""The LongMemEval recall benchmark: the committed copy is whole, the loader deals the
questions into threads by its rule and maps every ``has_answer`` label to the stored
message that carries it (an off-by-one would put a neighbour there), and the benchmark
path finds a labelled turn at the position the loader gave it."""

from __future__ import annotations

from collections import Counter
from typing import Any

from bench.recall_quality.longconv.run import Prepared, base
from bench.recall_quality.longmemeval.build import compact
from bench.recall_quality.longmemeval.data import conversations, read, scorable
from bench.recall_quality.longmemeval.run import outside_window
from memory_core.embedding.hashing import HashingEmbedder

DATA = read()


def _labelled(q_id: str) -> list[tuple[str, str]]:
    """(role, content) of the labelled turns of one question, from the copy itself."""
    q = next(q for q in DATA["questions"] if q["question_id"] == q_id)
    return [(t["role"], t["content"]) for sid in q["session_ids"]
            for t in DATA["sessions"][sid]["turns"] if t.get("has_answer")]


def test_committed_copy_holds_all_longmemeval_questions() -> None:
    questions = DATA["questions"]
    assert len(questions) == 500 and len({q["question_id"] for q in questions}) == 500
    assert len(scorable(questions, DATA["sessions"])) == 470
    convs = conversations(DATA)
    assert len(convs) == 16 and sum(len(c["questions"]) for c in convs) == 470
    assert all(500 <= len(c["turns"]) <= 800 for c in convs)
    # question i (by id) in thread i mod 16
    ids = sorted(q["question_id"] for q in scorable(questions, DATA["sessions"]))
    assert [q["id"] for q in convs[3]["questions"]] == ids[3::16]


def test_evidence_positions_are_the_stored_labelled_messages() -> None:
    embed = HashingEmbedder(32)
    for conv in conversations(DATA)[:2]:
        prepared = Prepared(conv, embed)
        stored = {m.seq: m for m in prepared.storage.memory.get_messages(conv["id"])}
        assert sorted(stored) == list(range(len(conv["turns"])))
        for q in conv["questions"]:
            got = Counter((stored[i].role, stored[i].content) for i in q["evidence"])
            assert got == Counter(_labelled(q["id"])), q["id"]
            # its neighbours hold other text, so a mapping shifted by one could not pass
            assert all(stored[j].content != stored[i].content for i in q["evidence"]
                       for j in (i - 1, i + 1) if j in stored)


def _entry(qid: str, sessions: list[tuple[str, str, list[tuple[str, bool]]]]) -> dict[str, Any]:
    return {"question_id": qid, "question_type": "single-session-user",
            "question": f"question {qid}?", "answer": "a", "question_date": "2023/06/01 (Thu) 10:00",
            "haystack_session_ids": [s[0] for s in sessions],
            "haystack_dates": [s[1] for s in sessions],
            "haystack_sessions": [[{"role": "user" if i % 2 == 0 else "assistant", "content": c,
                                    "has_answer": h} for i, (c, h) in enumerate(turns)]
                                  for _, _, turns in sessions]}


def test_threads_order_sessions_by_date_and_place_labels_exactly() -> None:
    later = ("s-late", "2023/05/02 (Tue) 09:00", [("l0", False), ("l1", False), ("l2", True)])
    earlier = ("s-early", "2023/05/01 (Mon) 09:00", [("e0", True), ("e1", False)])
    shared = ("s-mid", "2023/05/01 (Mon) 18:00", [("m0", False), ("m1", True)])
    data = compact([_entry("b", [later, shared]), _entry("a", [earlier]),
                    _entry("c_abs", [("s-x", "2023/05/03 (Wed) 09:00", [("x0", True)])])])
    (conv,) = conversations(data, threads=1)
    assert [t["text"] for t in conv["turns"]] == ["e0", "e1", "m0", "m1", "l0", "l1", "l2"]
    assert {q["id"]: q["evidence"] for q in conv["questions"]} == {"a": [0], "b": [3, 6]}


def test_the_benchmark_path_scores_a_labelled_turn_at_its_position() -> None:
    conv, _ = outside_window(conversations(DATA)[:1])
    prepared = Prepared(conv[0], HashingEmbedder(32))
    q = next(q for q in conv[0]["questions"]
             if all("?" not in conv[0]["turns"][i]["text"] for i in q["evidence"]))
    seq = q["evidence"][0]
    exact = {"question": conv[0]["turns"][seq]["text"], "evidence": [seq]}
    assert prepared.first_evidence(exact, base("lexical")) == 1
    assert prepared.first_evidence({**exact, "evidence": [seq + 1]}, base("lexical")) != 1
