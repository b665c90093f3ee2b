"""A counterfactual re-asked with another model than the run recorded: the verdict
compares that model's answers only (the unchanged prompt re-asked, the baseline, against
the edited one), the result says which model gave each answer, and the similarity shown
beside the verdict is to the answer it was judged against."""

from __future__ import annotations

from collections.abc import Sequence

from memory_core.analysis.counterfactual import attribution, counterfactual
from memory_core.models.base import ModelIdentity
from memory_core.models.reader import ReaderModel
from memory_core.models.scripted import ScriptedModel
from tests.analysis.conftest import World


class Steady(ScriptedModel):
    """A scripted second model at temperature 0: one answer per prompt, no sampling."""

    def __init__(self, answers: Sequence[str], name: str = "steady-llm") -> None:
        super().__init__(list(answers), name=name)

    def identity(self) -> ModelIdentity:
        return ModelIdentity(kind="scripted", name=self.name, temperature=0.0)


def test_another_model_is_judged_against_its_own_baseline(story: World) -> None:
    """The issue's page: "unchanged" beside similarity 0.000 and two different answers —
    the answers the verdict compared are the other model's, and now they are shown."""
    other = Steady(["Ask the shop.", "Ask the shop."])
    res = counterfactual(story.storage, "r1", subtract=[("old", 2)], model=other)
    assert "240" in (res.original_answer or "")  # the reader's recorded answer
    assert other.calls == 2  # the unchanged prompt first, then the edited one
    assert res.baseline_answers == ["Ask the shop."] and res.new_answers == ["Ask the shop."]
    assert res.verdict == "unchanged"
    assert res.same_model is False and res.similarity_to == "baseline"
    assert res.similarity == 1.0  # to the baseline, not to the other model's answer
    assert res.model["name"] == "steady-llm"
    assert res.recorded_model is not None and res.recorded_model["name"] == "offline-reader"
    assert res.recorded_model["kind"] == "reader"


def test_the_recorded_answer_of_another_model_never_counts(story: World) -> None:
    """The other model answers the edited prompt exactly as the recorded run did: that
    is no "unchanged", since its own answer to the unchanged prompt differs."""
    original = counterfactual(story.storage, "r1", subtract=[("old", 2)],
                              model=ReaderModel(embed=story.embed)).original_answer
    assert original
    other = Steady(["I do not know.", original])
    res = counterfactual(story.storage, "r1", subtract=[("old", 2)], model=other)
    assert res.new_answer == original and res.verdict == "changed"
    assert res.similarity < 0.5  # to the baseline "I do not know."


def test_the_recorded_model_counts_its_recorded_answer(story: World) -> None:
    res = counterfactual(story.storage, "r1", subtract="all",
                         model=ReaderModel(embed=story.embed))
    assert res.same_model is True and res.similarity_to == "original"
    assert res.recorded_model is not None and res.model["name"] == res.recorded_model["name"]
    # the same name re-asked: its baseline and the recorded answer are both references
    assert res.baseline_answers and res.verdict == "changed"


def test_attribution_with_another_model_measures_against_its_baseline(story: World) -> None:
    """Every item's effect is 1 - similarity to the other model's baseline: an answer
    that never moves has no effect, however unlike the recorded one it is."""
    recalled = story.storage.runs.get("r1:memctx")["recalled"]
    other = Steady(["Ask the shop."] * (1 + len(recalled) + 2))
    items = attribution(story.storage, "r1", model=other)
    assert items and all(a.effect == 0.0 and a.verdict == "unchanged" for a in items)
