"""Counterfactual replay, leave-one-out attribution and run diffs on real runs."""

from __future__ import annotations

import pytest

from memory_core.analysis.counterfactual import attribution, counterfactual, list_counterfactuals
from memory_core.analysis.diff import diff_runs
from memory_core.errors import InvalidInputError, NotFoundError
from memory_core.models.reader import ReaderModel
from memory_core.models.scripted import ScriptedModel
from tests.analysis.conftest import QUESTION, World, recall


def reader(w: World) -> ReaderModel:
    return ReaderModel(embed=w.embed)


def test_subtracting_recalled_changes_the_answer(story: World) -> None:
    memctx = story.storage.runs.get("r1:memctx")
    recalled = {(r["thread_id"], r["seq"]) for r in memctx["recalled"]}
    assert ("old", 0) in recalled
    res = counterfactual(story.storage, "r1", subtract="all", model=reader(story))
    assert "240" in (res.original_answer or "")
    assert "240" not in res.new_answer
    assert res.changed and res.verdict == "changed"
    # exactly the recalled list was removed, nothing else
    assert set(map(tuple, res.removed)) == recalled
    assert story.storage.runs.get(res.key) is not None


def test_subtracting_an_irrelevant_message_does_not(story: World) -> None:
    res = counterfactual(story.storage, "r1", subtract=[("old", 2)], model=reader(story))
    assert not res.changed and res.verdict == "unchanged"
    assert res.removed == [("old", 2)]


def test_only_messages_the_run_was_given_can_be_subtracted(story: World) -> None:
    with pytest.raises(InvalidInputError, match="old#3 is not a stored message run 'r1' was given"):
        counterfactual(story.storage, "r1", subtract=[("old", 3)], model=reader(story))
    with pytest.raises(InvalidInputError, match="unknown lane 'bogus'"):
        counterfactual(story.storage, "r1", lanes=["bogus"], model=reader(story))
    with pytest.raises(NotFoundError, match="nope"):
        counterfactual(story.storage, "nope", subtract="all", model=reader(story))


def test_put_back_a_dropped_message(story: World) -> None:
    memctx = story.storage.runs.get("r1:memctx")
    assert [(d["thread_id"], d["seq"]) for d in memctx["dropped"]] == [("old", 4)]
    res = counterfactual(story.storage, "r1", put_back=[("old", 4)], model=reader(story))
    assert res.added == [("old", 4)]
    with pytest.raises(InvalidInputError, match="neither dropped nor a near miss"):
        counterfactual(story.storage, "r1", put_back=[("cur", 99)], model=reader(story))


def test_results_are_journaled_and_reused(story: World) -> None:
    counting = ScriptedModel(["base", "variant"])
    counting.name = "offline-reader-copy"
    first = counterfactual(story.storage, "r1", subtract="all", model=counting, repeats=1)
    again = counterfactual(story.storage, "r1", subtract="all", model=counting, repeats=1)
    assert counting.calls == 1 + 1  # baseline + variant, once
    assert again == first
    assert [c.key for c in list_counterfactuals(story.storage, "r1")] == [first.key]


def test_asked_again_without_reuse_the_model_answers_anew_and_the_first_record_stays(
        story: World) -> None:
    counting = ScriptedModel(["base", "variant", "base again", "variant again"])
    counting.name = "offline-reader-copy"
    first = counterfactual(story.storage, "r1", subtract="all", model=counting, repeats=1)
    fresh = counterfactual(story.storage, "r1", subtract="all", model=counting, repeats=1,
                           reuse=False)
    assert counting.calls == 4  # really asked again
    assert fresh.key == first.key and fresh.new_answer == "variant again"
    stored = list_counterfactuals(story.storage, "r1")
    assert [c.new_answer for c in stored] == [first.new_answer]  # first write wins


def test_a_baseline_that_disagrees_with_itself_gives_no_verdict(story: World) -> None:
    # the unchanged prompt already answers two unrelated ways: nothing can be told apart
    noisy = ScriptedModel(["A", "B", "B", "A"])
    noisy.name = "noisy"
    res = counterfactual(story.storage, "r1", subtract=[("old", 2)], model=noisy, repeats=2)
    assert res.baseline_answers == ["A", "B"] and res.new_answers == ["B", "A"]
    assert res.verdict == "inconclusive" and not res.changed
    assert any("disagree with each other ('A' | 'B')" in n for n in res.notes)


def test_attribution_ranks_the_carrying_message_first(story: World) -> None:
    ranked = attribution(story.storage, "r1", model=reader(story))
    assert (ranked[0].thread_id, ranked[0].seq) == ("old", 0) and ranked[0].changed
    assert all(not a.changed for a in ranked[1:])


def test_diff_reports_a_message_crossing_the_threshold(story: World) -> None:
    story.run("r2", "cur", "r1", QUESTION,
              memory=story.memory(recall=recall(top_k=3, threshold=0.8)), model=reader(story))
    d = diff_runs(story.storage, "r1", "r2", embed=story.embed)
    e = next(x for x in d.entries if (x.thread_id, x.seq) == ("old", 2))
    assert (e.lane_a, e.lane_b, e.change) == ("recalled", None, "left")
    assert e.score_a == pytest.approx(0.722, abs=1e-3)
    assert e.score_b == pytest.approx(0.722, abs=1e-3)
    assert "across the threshold" in e.reason and "0.80" in e.reason
    assert d.settings_changed["threshold"] == (0.5, 0.8)
    assert set(d.token_deltas) >= {"recalled", "recent", "input"}
    assert d.token_deltas["recalled"][2] < 0
    assert d.steps and d.divergent_at is None or isinstance(d.divergent_at, int)


def test_diff_rejects_unknown_runs(story: World) -> None:
    with pytest.raises(NotFoundError, match="ghost"):
        diff_runs(story.storage, "r1", "ghost")


def test_unknown_runs_are_named(story: World) -> None:
    with pytest.raises(NotFoundError, match="'ghost'"):
        counterfactual(story.storage, "ghost", subtract="all", model=reader(story))
    with pytest.raises(NotFoundError, match="'ghost'"):
        attribution(story.storage, "ghost", model=reader(story))
    with pytest.raises(NotFoundError, match="'ghost'"):
        list_counterfactuals(story.storage, "ghost")
    with pytest.raises(NotFoundError, match="''"):
        counterfactual(story.storage, "", model=reader(story))


def test_put_back_rejects_a_ref_that_was_never_left_out(story: World) -> None:
    with pytest.raises(InvalidInputError, match="ghost#7 was neither dropped nor a near miss"):
        counterfactual(story.storage, "r1", put_back=[("ghost", 7)], model=reader(story))


def test_variant_options_are_exactly_what_counterfactual_accepts(story: World) -> None:
    from memory_core.analysis.counterfactual import variant_options

    opts = variant_options(story.storage, "r1")
    memctx = story.storage.runs.get("r1:memctx")
    assert [(c.thread_id, c.seq) for c in opts.recalled] == [
        (r["thread_id"], r["seq"]) for r in memctx["recalled"]]
    assert ("old", 4) in {(c.thread_id, c.seq) for c in opts.put_back}
    assert opts.put_back[0].label.startswith("dropped (unanswered-tool-call)")
    assert "recalled" in opts.lanes and "recent" in opts.lanes
    in_prompt = {(i["thread_id"], i["seq"]) for i in story.storage.runs.get("r1:prompt")["items"]}
    for c in opts.put_back:  # each one is accepted, and none is already in the prompt
        assert (c.thread_id, c.seq) not in in_prompt
        counterfactual(story.storage, "r1", put_back=[(c.thread_id, c.seq)],
                       model=reader(story))
    with pytest.raises(NotFoundError):
        variant_options(story.storage, "ghost")


def test_put_back_a_message_the_run_had_only_as_a_summary() -> None:
    """The demo's summary story: the address range was condensed into observations
    before the run; put back word for word, the same question gets it right."""
    from memory_core.analysis.counterfactual import variant_options
    from memory_core.storage.inmemory import InMemoryStorage
    from sample_data.build import DemoClock, build_into

    clock = DemoClock()
    storage = InMemoryStorage(clock=clock)
    build_into(storage, clock, embedder="hashing", progress=lambda _m: None, only=["tech"])
    run = "tech-staging-range"
    choices = {(c.thread_id, c.seq): c.label for c in variant_options(storage, run).put_back}
    key = next(ref for ref, label in choices.items() if "10.8.0.0/16" in label)
    assert choices[key].startswith("summarised (")
    res = counterfactual(storage, run, put_back=[key])
    assert res.added == [key]
    assert "10.8.0.0/16" not in (res.original_answer or "")
    assert "10.8.0.0/16" in res.new_answer and res.verdict == "changed"
    recent = next(it for it in storage.runs.get(f"{run}:prompt")["items"]
                  if it["lane"] == "recent")
    assert (recent["thread_id"], recent["seq"]) not in choices  # given already
    with pytest.raises(InvalidInputError, match="nor given to it only as a summary"):
        counterfactual(storage, run, put_back=[("py311-migration", 10_000)])
