"""The verdict rule on its own: a change is a distance beyond the reference answers'
own spread; an answer among the reference answers is never a change."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memory_core.analysis.noise import (
    MIN_NOISE_REPEATS,
    NOISE_MARGIN,
    distance,
    judge,
    similarity,
    words,
)

ANSWER = st.text(alphabet=st.sampled_from(list("abc de240.")), min_size=1, max_size=24)


def test_paraphrases_share_their_content_words() -> None:
    assert words("You were refunded 240 euros.") == words("A 240 euro refund.") == {
        "refund", "240", "euro"}
    assert similarity("The refund was approved.", "Refund approved!") == 1.0
    assert "not" in words("It is not approved")  # negations are content
    assert distance("", "") == 0.0


def test_a_deterministic_model_changes_on_any_difference() -> None:
    j = judge(["240 euros."], ["240 euros!"], sampling=False, baseline_repeats=0)
    assert j.verdict == "changed" and j.spread is None
    assert judge(["240 euros."], [" 240  euros."], sampling=False,
                 baseline_repeats=0).verdict == "unchanged"


def test_a_sampling_model_needs_more_than_the_margin() -> None:
    ref = ["Your blender refund of 240 euros was approved."] * 3
    near = "Good news: your blender refund of 240 euros was approved."  # 2 of 7 words new
    assert distance(near, ref[0]) > NOISE_MARGIN
    assert judge(ref, [near], sampling=True, baseline_repeats=3).verdict == "changed"
    same = "Your blender refund was approved: 240 euros."
    assert judge(ref, [same], sampling=True, baseline_repeats=3).verdict == "unchanged"


def test_too_few_reasks_of_a_sampling_model_are_inconclusive() -> None:
    j = judge(["240 euros."], ["I do not know."], sampling=True,
              baseline_repeats=MIN_NOISE_REPEATS - 1)
    assert j.verdict == "inconclusive"
    assert f"at least {MIN_NOISE_REPEATS}" in j.notes[-1]


@settings(max_examples=200, deadline=None)
@given(st.lists(ANSWER, min_size=1, max_size=5), st.data(), st.booleans())
def test_an_answer_among_the_references_is_never_a_change(
        reference: list[str], data: st.DataObject, sampling: bool) -> None:
    new = data.draw(st.lists(st.sampled_from(reference), min_size=1, max_size=4))
    j = judge(reference, new, sampling=sampling, baseline_repeats=len(reference))
    assert j.verdict != "changed"
