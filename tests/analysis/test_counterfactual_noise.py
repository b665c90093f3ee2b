"""Noise first: a model that samples (temperature > 0 or unknown) is re-asked the
unchanged prompt before any verdict, and a variant counts as changed only beyond the
spread of those answers; attribution the same."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pytest

from memory_core.analysis import counterfactual as cf_module
from memory_core.analysis.counterfactual import attribution, counterfactual
from memory_core.analysis.noise import MIN_NOISE_REPEATS
from memory_core.models.base import ModelIdentity, ModelResponse, ToolSpec
from memory_core.models.reader import ReaderModel
from memory_core.types import Message
from tests.analysis.conftest import QUESTION, World, recall

KNOWS = ["The refund for your blender was approved: 240 euros.",
         "You were refunded 240 euros for the blender.",
         "We approved a 240 euro refund for your blender.",
         "Good news: your blender refund of 240 euros was approved.",
         "240 euros — that is the refund we approved for the blender."]
UNSURE = ["I have no record of a decision about your blender refund.",
          "I can't find what we decided about the blender refund.",
          "Nothing about a blender refund decision is in my notes."]
SEEDS = range(30)


class SamplingModel:
    """A seeded model at temperature 0.8: each call draws one of several paraphrases,
    of the fact when the prompt holds it (240), else of not knowing."""

    def __init__(self, seed: int, temperature: float | None = 0.8, name: str = "sampler",
                 pools: tuple[Sequence[str], Sequence[str]] = (KNOWS, UNSURE)) -> None:
        self.rng = random.Random(seed)
        self.seed, self.temperature, self.name = seed, temperature, name
        self.pools = pools
        self.calls = 0

    def identity(self) -> ModelIdentity:
        return ModelIdentity(kind="custom", name=self.name, temperature=self.temperature,
                             seed=self.seed)

    def complete(self, messages: Sequence[Message],
                 tools: Sequence[ToolSpec]) -> ModelResponse:
        self.calls += 1
        knows = any("240" in (m.text() or "") for m in messages)
        return ModelResponse(text=self.rng.choice(self.pools[0] if knows else self.pools[1]))


def test_an_irrelevant_subtraction_is_never_changed_on_a_sampling_model(
        story: World) -> None:
    verdicts = []
    for seed in SEEDS:
        model = SamplingModel(seed, name=f"sampler-{seed}")
        res = counterfactual(story.storage, "r1", subtract=[("old", 2)], model=model)
        assert res.repeats == MIN_NOISE_REPEATS and res.sampling and res.temperature == 0.8
        assert len(res.baseline_answers) == 3 and len(res.new_answers) == 3
        assert model.calls == 6
        verdicts.append(res.verdict)
    assert "changed" not in verdicts
    # mostly within the spread; a paraphrase the baseline never produced may leave some
    # re-asks of the variant outside it, which is "inconclusive", never "changed"
    assert verdicts.count("unchanged") >= 2 * len(verdicts) // 3


def test_a_single_reask_of_a_sampling_model_reports_changed_on_noise_no_more(
        story: World) -> None:
    # with one baseline answer and one new answer, paraphrases alone used to be "changed"
    pools: tuple[list[str], list[str]] = (
        ["240 euros.", "The refund of 240 euros for the blender was approved."], [])
    seen = set()
    for seed in SEEDS:
        res = counterfactual(story.storage, "r1", subtract=[("old", 2)], repeats=1,
                             model=SamplingModel(seed, name=f"one-{seed}", pools=pools))
        seen.add(res.verdict)
        if res.baseline_answers != res.new_answers:
            assert res.verdict == "inconclusive"
    assert "changed" not in seen and "inconclusive" in seen


def test_a_relevant_subtraction_is_changed_with_a_deterministic_model(story: World) -> None:
    res = counterfactual(story.storage, "r1", subtract="all", model=ReaderModel(embed=story.embed))
    assert res.verdict == "changed" and not res.sampling and res.repeats == 1


def test_a_relevant_subtraction_is_changed_beyond_a_sampling_models_spread(
        story: World) -> None:
    for seed in SEEDS:
        res = counterfactual(story.storage, "r1", subtract="all",
                             model=SamplingModel(seed, name=f"sampler-{seed}"))
        assert res.verdict == "changed", (seed, res.baseline_answers, res.new_answers)
        assert res.spread is not None and res.spread < 0.5


def test_a_baseline_that_disagrees_is_inconclusive_and_says_so(story: World) -> None:
    pools = (["240 euros.", "I am not sure.", "Ask the shop."], ["I am not sure."])
    res = counterfactual(story.storage, "r1", subtract="all",
                         model=SamplingModel(3, name="erratic", pools=pools))
    assert len(set(res.baseline_answers)) > 1
    assert res.verdict == "inconclusive" and not res.changed
    note = next(n for n in res.notes if "disagree with each other" in n)
    for answer in set(res.baseline_answers):
        assert repr(answer) in note


def test_the_recorded_temperature_decides_when_the_model_does_not_say(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    class Hot:
        name, temperature = "hot-model", 0.7

        def complete(self, messages: Sequence[Message],
                     tools: Sequence[ToolSpec]) -> ModelResponse:
            return ModelResponse(text="240 euros.")

    world.say("old", "r1", Message(role="user", content="The refund was 240 euros."))
    world.run("h1", "cur", "r1", QUESTION, memory=world.memory(recall=recall(top_k=2)),
              model=Hot())

    class Rebuilt:  # states no temperature: the recorded 0.7 counts
        name = "hot-model"
        calls = 0

        def complete(self, messages: Sequence[Message],
                     tools: Sequence[ToolSpec]) -> ModelResponse:
            Rebuilt.calls += 1
            return ModelResponse(text="240 euros.")

    def rebuild(info: dict[str, Any], embed: str | None) -> Any:
        assert info["name"] == "hot-model" and info["temperature"] == 0.7
        return Rebuilt()

    monkeypatch.setattr(cf_module, "model_from_info", rebuild)
    res = counterfactual(world.storage, "h1", lanes=["recalled"])
    assert res.temperature == 0.7 and res.repeats == 3 and Rebuilt.calls == 6
    assert res.verdict == "unchanged"


def test_attribution_on_a_sampling_model_blames_only_the_carrying_message(
        story: World) -> None:
    model = SamplingModel(7)
    ranked = attribution(story.storage, "r1", model=model)
    n = len(ranked)
    assert model.calls == 3 + 3 * n  # one shared baseline, three re-asks per item
    assert (ranked[0].thread_id, ranked[0].seq) == ("old", 0)
    assert ranked[0].verdict == "changed" and ranked[0].changed
    assert all(a.verdict != "changed" for a in ranked[1:])
