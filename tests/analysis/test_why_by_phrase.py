"""Why forgotten by phrase: words and meaning (recall's BM25 terms plus the run's
embedder), the closest messages each with its fate, and "no message contains" only when
neither the exact text, nor the words, nor the meaning found anything."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from memory_core.analysis.forgotten import find_by_phrase, why_forgotten
from memory_core.embedding.hashing import HashingEmbedder
from memory_core.errors import InvalidInputError, NotFoundError
from memory_core.types import Message, TextPart, ToolCallPart, ToolResultPart
from tests.analysis.conftest import QUESTION, KeywordEmbedder, World, assistant, recall, user
from tests.analysis.test_why_forgotten import story as story  # noqa: F401 - fixture

FACT = ("old", 0)  # "The refund for the blender was approved: 240 euros."


class SynonymEmbedder(KeywordEmbedder):
    """The keyword space, but it knows that a reimbursement is a refund and a mixer a
    blender: a model that matches meaning where the words differ."""

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        return super().__call__([t.lower().replace("reimbursement", "refund")
                                 .replace("mixer", "blender") for t in texts])


def test_partial_words_find_the_stored_message_with_its_fate(story: World) -> None:
    # not a substring of the message, so an exact search finds nothing
    assert not story.storage.memory.search_messages("approved 240")
    found = find_by_phrase(story.storage, "r-main", "approved 240", embed=story.embed)
    best = found.best
    assert best is not None and (best.thread_id, best.seq) == FACT
    assert not best.contains and best.shared_terms == ["approved", "240"]
    by_ref = why_forgotten(story.storage, "r-main", FACT, embed=story.embed)
    assert best.explanation.fate == by_ref.fate
    assert found.exact == []
    assert "No stored message contains “approved 240” word for word" in found.sentence
    # the one-message answer is that message, not a false "not-stored"
    e = why_forgotten(story.storage, "r-main", "approved 240", embed=story.embed)
    assert (e.thread_id, e.seq, e.fate) == (*FACT, by_ref.fate)
    assert "the closest is old #0" in e.sentence and "never said" not in e.sentence
    assert e.evidence["shared_terms"] == ["approved", "240"]


def test_inflected_words_meet(story: World) -> None:
    found = find_by_phrase(story.storage, "r-main", "refunds approving", embed=story.embed)
    assert found.best is not None and (found.best.thread_id, found.best.seq) == FACT


def test_a_paraphrase_is_found_by_meaning(story: World) -> None:
    found = find_by_phrase(story.storage, "r-main", "reimbursement for the mixer",
                           embed=SynonymEmbedder())
    assert found.exact == []
    hit = next(m for m in found.matches if (m.thread_id, m.seq) == FACT)
    assert hit.shared_terms == [] and hit.similarity is not None and hit.similarity > 0.9
    assert hit.explanation.fate == why_forgotten(story.storage, "r-main", FACT,
                                                 embed=story.embed).fate
    # the keyword model alone does not know the words: nothing close
    assert find_by_phrase(story.storage, "r-main", "reimbursement for the mixer cash",
                          embed=story.embed).matches == []


def test_a_phrase_with_no_similar_message_says_so(story: World) -> None:
    found = find_by_phrase(story.storage, "r-main", "zebra crossing for cash",
                           embed=story.embed)
    assert found.matches == [] and found.exact == [] and found.scope_size > 0
    assert found.sentence.startswith("No stored message contains “zebra crossing for cash”,")
    assert "shares its words or comes close in meaning" in found.sentence
    assert "keyword-test" in found.searched


def test_word_for_word_hits_come_first(story: World) -> None:
    found = find_by_phrase(story.storage, "r-main", "lamp refund", embed=story.embed)
    assert found.exact == [("old", 3)]
    assert [(m.thread_id, m.seq, m.contains) for m in found.matches][0] == ("old", 3, True)
    assert all(not m.contains for m in found.matches[1:])
    assert len(found.matches) <= 5
    assert "appears word for word in 1 stored message" in found.sentence
    assert found.best is not None and found.best.explanation.fate == "beyond-top-k"


def test_bad_input_is_one_clear_error(story: World) -> None:
    with pytest.raises(InvalidInputError, match="empty"):
        find_by_phrase(story.storage, "r-main", "   ", embed=story.embed)
    with pytest.raises(InvalidInputError, match="limit must be a positive int, got 0"):
        find_by_phrase(story.storage, "r-main", "refund", embed=story.embed, limit=0)
    with pytest.raises(NotFoundError, match="nope"):
        find_by_phrase(story.storage, "nope", "refund", embed=story.embed)



def test_one_shared_word_of_three_by_words_alone_is_not_the_message() -> None:
    # with an embedder that compares words (hashing), sharing "blender" alone does not
    # make "blender dragons purple" the message about the blender refund
    w = World()
    w.embed = HashingEmbedder(64)
    w.say("old", "r1", user("The refund for the blender was approved: 240 euros."),
          assistant("Noted."), user("Nice weather today."))
    w.say("cur", "r1", user("Hello"), assistant("Hi!"))
    w.run("r-main", "cur", "r1", QUESTION, memory=w.memory(recall=recall(top_k=3)))
    found = find_by_phrase(w.storage, "r-main", "blender dragons purple")
    assert not found.by_meaning and found.best is not None
    assert found.best.shared_terms == ["blender"] and not found.best.contains
    assert "none shares most of its words" in found.sentence
    assert "the nearest shares only “blender”" in found.sentence
    e = why_forgotten(w.storage, "r-main", "blender dragons purple")
    assert e.fate == "not-stored" and not e.reached_model
    assert e.evidence["shared_terms"] == ["blender"]
    assert e.other_matches[0] == (found.best.thread_id, found.best.seq)
    # two of three words shared: that message is the one the phrase speaks of
    near = why_forgotten(w.storage, "r-main", "blender refund dragons")
    assert (near.thread_id, near.seq) == ("old", 0) and near.fate != "not-stored"
    assert "the closest is old #0" in near.sentence
    # an embedder that compares meaning judges closeness itself: one shared word with a
    # close meaning is still that message
    meant = find_by_phrase(w.storage, "r-main", "blender dragons purple",
                           embed=KeywordEmbedder())
    assert meant.by_meaning


def test_other_matches_of_a_phrase_found_word_for_word_hold_it_too() -> None:
    # "Hello from the shop!" is close to "Hello!" but does not hold it: it is no other
    # match of a phrase that a message holds word for word
    w = World()
    w.embed = HashingEmbedder(64)
    w.say("old", "r1", user("Hello from the shop!"), assistant("Hello!"),
          user("Hello! Again."))
    w.say("cur", "r1", user("Hi"), assistant("Hi!"))
    w.run("r-main", "cur", "r1", QUESTION, memory=w.memory(recall=recall(top_k=3)))
    found = find_by_phrase(w.storage, "r-main", "Hello!")
    holding = {(m.thread_id, m.seq) for m in found.matches if m.contains}
    assert holding == {("old", 1), ("old", 2)}
    assert any(not m.contains for m in found.matches)  # the near one was found
    e = why_forgotten(w.storage, "r-main", "Hello!")
    assert set(e.other_matches) | {(e.thread_id, e.seq)} == holding


def test_a_closer_message_the_model_never_saw_comes_before_a_farther_one_it_did() -> None:
    """A phrase no message holds whole: the message sharing two of its words and close
    in meaning comes first, though the model never saw it, before a recent one sharing
    one word (the demo's compacted staging range was listed 5th, after four recent
    messages sharing only "staging"); the question itself comes after both."""
    w = World()
    w.say("old", "r1", user("The lamp refund is pending."), assistant("Noted."),
          user("Nice weather today."))
    w.say("cur", "r1", user("Hello"), assistant("Hi!"), user("Do I still have a voucher?"))
    w.run("r-main", "cur", "r1", "Any news on the lamp?",
          memory=w.memory(recall=recall(top_k=3, threshold=0.99)))
    found = find_by_phrase(w.storage, "r-main", "lamp refund voucher", embed=w.embed)
    order = [(m.thread_id, m.seq, m.explanation.fate) for m in found.matches]
    assert order[:2] == [("old", 0, "below-threshold"), ("cur", 2, "recent")], order
    assert order[2][2] == "input", order  # the question: after them


def test_what_was_searched_names_only_the_parts_there_were() -> None:
    """"every part of the 5 messages … (text, tool calls and results, attachments,
    instructions, working memory, observations)" overstated a run given plain text:
    the sentence names the kinds of part the run's messages held."""
    w = World()
    w.say("old", "r1", user("The lamp refund is pending."))
    w.say("cur", "r1", user("Hello"), assistant("Hi!"))
    w.run("r-plain", "cur", "r1", "Any news on the lamp?",
          memory=w.memory(recall=recall(top_k=3)))
    plain = find_by_phrase(w.storage, "r-plain", "lamp", embed=w.embed).searched
    assert "model was given in this run (instructions, text)" in plain, plain
    # a run whose recent window holds a tool call and its result
    w.say("cur", "r1", Message(role="assistant", content=[
        TextPart(text="Checking."), ToolCallPart(id="c1", name="lookup", args={"q": "lamp"})]),
        Message(role="tool", content=[ToolResultPart(call_id="c1", name="lookup",
                                                     result={"status": "pending"})]))
    w.run("r-tools", "cur", "r1", "And now?", memory=w.memory(recall=recall(top_k=3)))
    told = find_by_phrase(w.storage, "r-tools", "lamp", embed=w.embed).searched
    assert "in this run (instructions, text, tool calls, tool results)" in told, told


def test_a_word_shared_in_another_form_names_the_form() -> None:
    """"shares staging" beside "…the old Dockerfile stage…": recall's terms meet, so
    the word counts as shared, but the message holds "stage": the match says so."""
    w = World()
    w.embed = HashingEmbedder(64)
    w.say("old", "r1", user("Remove the old Dockerfile stage."), user("Staging is ready."))
    w.say("cur", "r1", user("Hello"))
    w.run("r-main", "cur", "r1", "Anything else?", memory=w.memory(recall=recall(top_k=3)))
    found = find_by_phrase(w.storage, "r-main", "staging dockerfile")
    by_seq = {m.seq: m for m in found.matches if m.thread_id == "old"}
    assert by_seq[0].shared_terms == ["staging", "dockerfile"]
    assert by_seq[0].shared_as == {"staging": "stage"}
    assert by_seq[1].shared_as == {}  # "Staging" is the word itself
