"""A message's fate lists every rule that kept it out, in the order composition applied
them, each with what would have let it past — and composing the run again (what-if)
with exactly those settings lets it in, while any one of them alone does not."""

from __future__ import annotations

from typing import Any

import pytest

from memory_core.analysis.diff import diff_runs
from memory_core.analysis.forgotten import explain_message, lifeline, why_forgotten
from memory_core.analysis.whatif import what_if
from memory_core.journal import load_run
from memory_core.models.scripted import ScriptedModel
from tests.analysis.conftest import QUESTION, World, assistant, recall, user

BOTH = ("old", 4)  # under the bar and, with the bar lowered, beyond top-k
INSTRUCTIONS = "Answer from memory."  # the conftest agent's


@pytest.fixture
def rules_world(world: World) -> World:
    """Run r-main recalls the top 2 above 0.5. Cosines with the question (keyword
    axes): old#0 and #1 1.000, #2 0.722, #3 0.522 (beyond top-k), #4 0.429 (under the
    bar, and ranked 5th)."""
    w = world
    w.say("old", "r1",
          user("The refund for the blender was approved.", lang="en"),       # 0: 1.000
          user("Blender refund: approved, 240 euros.", lang="en"),           # 1: 1.000
          user("Refund ok?", lang="en"),                                     # 2: 0.722
          user("The lamp refund is pending.", lang="en"),                    # 3: 0.522
          user("The refund, the lamp and the voucher.", lang="de"),          # 4: 0.429
          assistant("Noted."),                                               # 5: 0.208
          user("Nice weather today.", lang="en"))                            # 6: 0.060
    w.say("cur", "r1", user("Hello"), assistant("Hi!"), user("Quick thing first."))
    w.run("r-main", "cur", "r1", QUESTION, model=ScriptedModel(["OK."]),
          memory=w.memory(recall=recall(top_k=2, threshold=0.5)))
    return w


def _entered(w: World, run_id: str, changes: dict[str, Any], ref: tuple[str, int]) -> bool:
    """Whether composing ``run_id`` again with ``changes`` recalls ``ref``."""
    run = what_if(w.storage, changes, run_ids=[run_id], embed=w.embed).runs[0]
    assert run.status != "cannot", run.reason
    return ref in {(k.thread_id, k.seq) for c in run.lanes if c.lane == "recalled"
                   for k in c.entered}


def test_below_the_threshold_and_beyond_top_k_are_both_named(rules_world: World) -> None:
    w = rules_world
    e = why_forgotten(w.storage, "r-main", BOTH, embed=w.embed)
    assert e.fate == "below-threshold" and not e.reached_model  # the first rule
    assert [(r.rule, r.setting, r.value, r.needed) for r in e.rules] == [
        ("below-threshold", "recall.threshold", 0.5, 0.4289),
        ("beyond-top-k", "recall.top_k", 2, 5)]
    assert [r.said for r in e.rules] == ["below the threshold (0.429 < 0.500)",
                                         "beyond top-k (rank 5, top-k 2)"]
    assert e.let_in == "a threshold of 0.4289 or lower and a top-k of 5 or more"
    assert "below the bar of 0.500" in e.sentence
    assert "even with a lower bar it ranked #5, while only the top 2" in e.sentence
    assert e.sentence.endswith("It would have been recalled only with a threshold of 0.4289 "
                               "or lower and a top-k of 5 or more, together: either alone "
                               "still leaves it out.")
    # composed again as of its time: both changes let it in, neither alone does, and a
    # top-k one short of what the rule names does not either
    needed = {r.setting: r.needed for r in e.rules}
    assert _entered(w, "r-main", needed, BOTH)
    for setting in needed:
        assert not _entered(w, "r-main", {setting: needed[setting]}, BOTH)
    assert not _entered(w, "r-main", {**needed, "recall.top_k": 4}, BOTH)


def test_one_rule_is_one_rule(rules_world: World) -> None:
    w = rules_world
    e = why_forgotten(w.storage, "r-main", ("old", 3), embed=w.embed)
    assert e.fate == "beyond-top-k" and [r.rule for r in e.rules] == ["beyond-top-k"]
    assert e.let_in == "a top-k of 4 or more"
    assert e.sentence.endswith("It would have been recalled with a top-k of 4 or more.")
    assert _entered(w, "r-main", {"recall.top_k": 4}, ("old", 3))
    given = why_forgotten(w.storage, "r-main", ("old", 0), embed=w.embed)
    assert given.reached_model and given.rules == [] and given.let_in is None


def test_the_filter_comes_first_then_the_bar_then_top_k(rules_world: World) -> None:
    w = rules_world
    w.run("r-filter", "cur", "r1", QUESTION, model=ScriptedModel(["OK."]),
          memory=w.memory(recall=recall(top_k=2, threshold=0.5,
                                        filter={"lang": {"$eq": "en"}})))
    e = why_forgotten(w.storage, "r-filter", BOTH, embed=w.embed)
    assert [r.rule for r in e.rules] == ["filtered-out", "below-threshold", "beyond-top-k"]
    assert e.fate == "filtered-out" and "lang" in e.evidence["filter_clause"]
    assert e.let_in == ("no recall filter, a threshold of 0.4289 or lower and a top-k of 5 "
                        "or more")
    # r-main's question ranks ahead too, but sits in the recent window: it takes no slot
    assert e.rules[2].said == "beyond top-k (rank 6, top-k 2, 4 taken before it)"
    assert ("even without the filter and with a lower bar, 4 messages would have been "
            "recalled before it, while only the top 2 are passed on") in e.sentence
    assert _entered(w, "r-filter", {r.setting: r.needed for r in e.rules}, BOTH)
    assert not _entered(w, "r-filter", {"recall.threshold": 0.4289, "recall.top_k": 5}, BOTH)


def test_the_run_record_alone_tells_the_same_rules(rules_world: World) -> None:
    """Without re-scoring (the story page), the recorded near misses give the rules."""
    w = rules_world
    msg = w.storage.memory.get_messages("old", seqs=[4])[0]
    recorded = explain_message(w.storage, load_run(w.storage, "r-main"), msg, rescore=False)
    scored = why_forgotten(w.storage, "r-main", BOTH, embed=w.embed)
    assert recorded.evidence["recorded"] is True
    assert recorded.rules == scored.rules and recorded.sentence == scored.sentence
    (point,) = lifeline(w.storage, "old", 4, embed=w.embed, runs_of="cur")
    assert [r.rule for r in point.rules] == ["below-threshold", "beyond-top-k"]


def test_a_tool_call_dropped_after_recall_found_it(story: World) -> None:
    """conftest's story: old#4 is a call whose result was never stored; recall ranked
    it, pairing dropped it, and no setting would have let it in."""
    e = why_forgotten(story.storage, "r1", ("old", 4), embed=story.embed)
    assert e.fate == "dropped" and e.evidence["reason"] == "unanswered-tool-call"
    (rule,) = e.rules
    assert rule.rule == "dropped" and rule.admits is None and e.let_in is None
    assert e.sentence.startswith("Recall found this message (rank ")
    assert e.sentence.endswith("No setting would have let it in.")
    assert not _entered(story, "r1", {"recall.top_k": 10, "recall.threshold": 0.0},
                        ("old", 4))


def test_a_message_the_token_limit_removed_after_recall_found_it(world: World) -> None:
    w = world
    w.say("old", "r1", user("The refund for the blender was approved."),
          user("Refund ok?"), user("The lamp refund is pending."))
    w.say("cur", "r1", user("Hello"), assistant("Hi!"))
    free = w.memory(recall=recall(top_k=3, threshold=0.5)).load_context(
        thread_id="cur", resource_id="r1", input=[user(QUESTION)], instructions=INSTRUCTIONS)
    full = free.memctx.tokens.total
    # one token short: the limiter gives way with the lowest-scoring recalled message
    w.run("r-tight", "cur", "r1", QUESTION, model=ScriptedModel(["OK."]),
          memory=w.memory(recall=recall(top_k=3, threshold=0.5), token_budget=full - 1))
    trimmed = [(d.thread_id, d.seq) for d in load_run(w.storage, "r-tight").memctx.dropped]
    assert trimmed == [("old", 2)]  # the lamp refund: 0.522, below the others
    e = why_forgotten(w.storage, "r-tight", ("old", 2), embed=w.embed)
    assert e.fate == "trimmed-by-token-limit"
    (rule,) = e.rules
    assert (rule.setting, rule.value, rule.needed) == ("token_budget", full - 1, full)
    assert e.sentence.startswith("Recall found this message (rank 3, score 0.522)")
    assert e.sentence.endswith(f"It would have been given to the model with a token budget "
                               f"of {full} or more.")
    assert _entered(w, "r-tight", {"token_budget": full}, ("old", 2))
    assert not _entered(w, "r-tight", {"token_budget": full - 1}, ("old", 2))


def test_compare_names_every_setting_change_that_let_it_in(rules_world: World) -> None:
    w = rules_world
    w.run("r-wide", "cur", "r1", QUESTION, model=ScriptedModel(["OK."]),
          memory=w.memory(recall=recall(top_k=5, threshold=0.4)))
    d = diff_runs(w.storage, "r-main", "r-wide", embed=w.embed)
    e = next(x for x in d.entries if (x.thread_id, x.seq) == BOTH)
    assert (e.change, e.lane_a, e.lane_b) == ("entered", None, "recalled")
    assert e.reason == ("recall threshold 0.500 → 0.400 and recall top_k 2 → 5 let it in: "
                        "in run A it was below the threshold (0.429 < 0.500) and beyond "
                        "top-k (rank 5, top-k 2)")
    one = next(x for x in d.entries if (x.thread_id, x.seq) == ("old", 3))
    assert one.reason == f"recall top_k 2 → 5 let it in (rank {one.rank_b})"
    back = diff_runs(w.storage, "r-wide", "r-main", embed=w.embed)
    e = next(x for x in back.entries if (x.thread_id, x.seq) == BOTH)
    assert e.reason == ("recall threshold 0.400 → 0.500 and recall top_k 5 → 2 left it out: "
                        "in run B it was below the threshold (0.429 < 0.500) and beyond "
                        "top-k (rank 5, top-k 2)")



def test_a_hybrid_run_says_the_message_shared_no_word(world: World) -> None:
    """In hybrid recall shared words alone let a message in, so the threshold kept one
    out only if it shared none: the rule says both, and what-if's "now" does too."""
    w = world
    w.say("old", "r1", user("The refund for the blender was approved.", lang="en"),
          assistant("Noted."), user("Nice weather today.", lang="en"))
    w.say("cur", "r1", user("Hello"), assistant("Hi!"))
    w.run("r-hyb", "cur", "r1", QUESTION, model=ScriptedModel(["OK."]),
          memory=w.memory(recall=recall(top_k=2, threshold=0.5, mode="hybrid")))
    e = why_forgotten(w.storage, "r-hyb", ("old", 2), embed=w.embed)
    assert [r.said for r in e.rules] == [
        "it shares no word with the question and is below the threshold (0.060 < 0.500)",
        "beyond top-k (rank 5, top-k 2, 2 taken before it)"]
    assert e.let_in == "a threshold of 0.0596 or lower and a top-k of 3 or more"
    # recalled with a low bar, then left out by a what-if that raises it
    w.run("r-low", "cur", "r1", QUESTION, model=ScriptedModel(["OK."]),
          memory=w.memory(recall=recall(top_k=5, threshold=0.05, mode="hybrid")))
    run = what_if(w.storage, {"recall.threshold": 0.5}, run_ids=["r-low"],
                  embed=w.embed).runs[0]
    [left] = [k for c in run.lanes if c.lane == "recalled" for k in c.left
              if (k.thread_id, k.seq) == ("old", 2)]
    assert left.now == "below the threshold 0.500 (it shares no word with the question)"


def test_a_hybrid_fate_says_how_the_message_qualified_or_did_not(world: World) -> None:
    """Hybrid recall takes a message at the bar or sharing a word with the question and
    ranks by a fused score: "it scored -0.794, enough to qualify" and "a message must
    score above 0" (beside a message recalled on words with a similarity of 0) read
    false; the sentence says which way it qualified, or that it shared no word."""
    w = world
    w.say("old", "r1", user("The refund for the blender was approved.", lang="en"),
          assistant("Noted."), user("Nice weather today.", lang="en"),
          user("The blender refund, once more.", lang="en"))
    w.say("cur", "r1", user("Hello"), assistant("Hi!"))
    w.run("r-one", "cur", "r1", QUESTION, model=ScriptedModel(["OK."]),
          memory=w.memory(recall=recall(top_k=1, threshold=0.5, mode="hybrid")))
    beyond = why_forgotten(w.storage, "r-one", ("old", 0), embed=w.embed)
    assert beyond.sentence.startswith(
        "The assistant never saw this message: it qualified (it shares a word with the "
        "question), but ranked #"), beyond.sentence
    assert "by its fused score" in beyond.sentence and "enough to qualify" not in \
        beyond.sentence
    below = why_forgotten(w.storage, "r-one", ("old", 2), embed=w.embed)
    assert below.sentence.startswith(
        "The assistant never saw this message: it shares no word with the question, and "
        "its similarity 0.060 is below the bar of 0.500"), below.sentence


def test_filtered_out_rows_are_ranked_as_if_the_filter_were_lifted(rules_world: World) -> None:
    """The record keeps where a filtered-out row would have gone among the rows the filter
    passed, which every such row above the first of them shares ("rank 1" four times):
    the run view ranks them with the filter lifted, as why-forgotten counts them."""
    from memory_core.analysis import views

    w = rules_world
    w.run("r-de", "cur", "r1", QUESTION, model=ScriptedModel(["OK."]),
          memory=w.memory(recall=recall(top_k=2, threshold=0.3,
                                        filter={"lang": {"$eq": "de"}})))
    memctx = load_run(w.storage, "r-de").memctx
    assert memctx is not None
    recorded = [n.rank for n in memctx.near_misses if n.reason == "filtered-out"]
    assert len(recorded) > len(set(recorded))  # shared in the record
    out = [c for c in views.run_view(w.storage, "r-de").ranked() if c.status == "filtered-out"]
    by_score = sorted(out, key=lambda c: -c.score)
    assert [c.rank for c in by_score] == sorted({c.rank for c in out})  # one each, in order
    beyond = 0
    for c in out:
        e = why_forgotten(w.storage, "r-de", (c.thread_id, c.seq), embed=w.embed)
        for rule in e.rules:
            if rule.rule == "beyond-top-k":
                beyond += 1
                assert rule.said.startswith(f"beyond top-k (rank {c.rank},"), (rule.said, c)
    assert beyond


def test_a_rank_past_messages_already_in_the_prompt_says_why_its_top_k_is_lower(
        rules_world: World) -> None:
    """A walk read "ranked #52 … would have been recalled with a top-k of 49": three
    messages ranked ahead were in the prompt already and took no place. Said."""
    w = rules_world
    # r-main's question, stored in "cur", ranks first and sits in this run's window
    w.run("r-again", "cur", "r1", QUESTION, model=ScriptedModel(["OK."]),
          memory=w.memory(recall=recall(top_k=2, threshold=0.5)))
    e = why_forgotten(w.storage, "r-again", ("old", 3), embed=w.embed)
    assert [r.rule for r in e.rules] == ["beyond-top-k"]
    (rule,) = e.rules
    rank = e.evidence["rank"]
    assert isinstance(rule.needed, int) and rule.needed < rank
    ahead = rank - rule.needed
    assert (f"ranked #{rank} and only the top 2 are passed on ({ahead} of the messages "
            "ranked ahead of it ") in e.sentence, e.sentence
    assert "already in the prompt and took no place)" in e.sentence
    assert e.sentence.endswith(f"It would have been recalled with a top-k of {rule.needed} "
                               "or more.")


def test_a_hybrid_recall_trimmed_names_its_fused_score(world: World) -> None:
    """A recalled message the limiter removed is said with its score: in hybrid
    recall a fused score (reciprocal ranks summed), not a similarity."""
    w = world
    w.say("old", "r1", user("The refund for the blender was approved."),
          user("Refund ok?"), user("The lamp refund is pending."))
    w.say("cur", "r1", user("Hello"), assistant("Hi!"))
    hybrid = recall(top_k=3, threshold=0.5, mode="hybrid")
    free = w.memory(recall=hybrid).load_context(
        thread_id="cur", resource_id="r1", input=[user(QUESTION)], instructions=INSTRUCTIONS)
    w.run("r-tight", "cur", "r1", QUESTION, model=ScriptedModel(["OK."]),
          memory=w.memory(recall=hybrid, token_budget=free.memctx.tokens.total - 1))
    (d,) = load_run(w.storage, "r-tight").memctx.dropped
    e = why_forgotten(w.storage, "r-tight", (d.thread_id, d.seq), embed=w.embed)
    assert e.fate == "trimmed-by-token-limit"
    assert e.sentence.startswith(f"Recall found this message (rank {d.rank}, fused score "), \
        e.sentence
