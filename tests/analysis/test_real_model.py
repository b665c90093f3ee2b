"""Analysis of a run made with the OpenAI-compatible client, through the fake provider:
the step records say who answered (a ModelIdentity), and counterfactual, attribution and
replay rebuild that model from the journal — at the server the run recorded only when
the caller names or confirms it."""

from __future__ import annotations

import pytest

from memory_core.analysis.counterfactual import attribution, counterfactual
from memory_core.analysis.diff import diff_runs
from memory_core.analysis.forgotten import why_forgotten
from memory_core.errors import InvalidInputError, ModelError
from memory_core.journal import load_run
from memory_core.models.base import ModelIdentity, model_identity
from memory_core.models.openai_chat import OpenAIChatModel
from memory_core.runs.registry import RecordedServerError, model_for_run
from memory_core.runs.replay import replay
from tests.analysis.conftest import World, assistant, recall, user
from tests.fake_provider.server import FakeProvider
from tests.fake_provider.validation import validate_request

QUESTION = "What did we decide about the refund for my blender?"


@pytest.fixture
def no_server_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("MEMWB_OPENAI_BASE_URL", "MEMWB_OPENAI_MODEL", "MEMWB_OPENAI_API_KEY",
                "OPENAI_API_KEY", "MEMWB_OPENAI_MAX_RETRIES"):
        monkeypatch.delenv(var, raising=False)


def made_with(fp: FakeProvider, world: World) -> OpenAIChatModel:
    model = OpenAIChatModel(base_url=fp.base_url, model="fake-model", temperature=0.0,
                            seed=11, max_retries=0)
    world.say("old", "r1", user("The refund for the blender was approved: 240 euros."),
              assistant("Noted."), user("Nice weather today."))
    world.say("cur", "r1", user("Hello"), assistant("Hi!"), user("Quick thing first."))
    world.run("r1", "cur", "r1", QUESTION, model=model,
              memory=world.memory(recall=recall(top_k=3, threshold=0.5)))
    return model


def test_the_step_record_holds_the_model_identity(fake_provider: FakeProvider, world: World,
                                                  no_server_env: None) -> None:
    model = made_with(fake_provider, world)
    step = world.storage.runs.get("r1:step:0")
    assert step is not None
    assert ModelIdentity.model_validate(step["model"]) == model_identity(model) == \
        ModelIdentity(kind="openai", name="fake-model", base_url=fake_provider.base_url,
                      temperature=0.0, seed=11)


def recorded_server_model(world: World) -> object:
    """The run's model at its recorded server, confirmed by the caller."""
    return model_for_run(load_run(world.storage, "r1").model_info, use_recorded_server=True)


def test_counterfactual_re_asks_the_recorded_server_only_when_confirmed(
        fake_provider: FakeProvider, world: World, no_server_env: None) -> None:
    made_with(fake_provider, world)
    asked = len(fake_provider.chat_bodies)
    with pytest.raises(RecordedServerError, match="never called unless you name it"):
        counterfactual(world.storage, "r1", subtract="all")
    with pytest.raises(InvalidInputError, match="pass --base-url http://127"):
        attribution(world.storage, "r1")
    assert len(fake_provider.chat_bodies) == asked
    model = recorded_server_model(world)
    res = counterfactual(world.storage, "r1", subtract="all", model=model)  # type: ignore[arg-type]
    assert "240" in (res.original_answer or "") and "240" not in res.new_answer
    assert res.verdict == "changed"
    new_bodies = fake_provider.chat_bodies[asked:]
    assert new_bodies, "the recorded server was not asked"
    for body in new_bodies:  # the recorded name and sampling, and valid requests
        assert (body["model"], body["temperature"], body["seed"]) == ("fake-model", 0.0, 11)
        validate_request(body)
    items = attribution(world.storage, "r1", model=model)  # type: ignore[arg-type]
    assert any(a.changed for a in items)
    assert replay(world.storage, "r1").steps == 1  # replay never calls the model
    # why-forgotten and diff read the same record: the refund fact was recalled
    memctx = load_run(world.storage, "r1").memctx
    assert memctx is not None and memctx.recalled
    hit = memctx.recalled[0]
    assert why_forgotten(world.storage, "r1", (hit.thread_id, hit.seq)).fate == "recalled"
    assert {e.change for e in diff_runs(world.storage, "r1", "r1").entries} == {"same"}


def test_the_configured_server_wins_over_the_recorded_one(
        fake_provider: FakeProvider, world: World, monkeypatch: pytest.MonkeyPatch,
        no_server_env: None) -> None:
    made_with(fake_provider, world)
    asked = len(fake_provider.chat_bodies)
    with FakeProvider() as elsewhere:
        monkeypatch.setenv("MEMWB_OPENAI_BASE_URL", elsewhere.base_url)
        res = counterfactual(world.storage, "r1", subtract="all")
        assert elsewhere.chat_bodies and elsewhere.chat_bodies[0]["model"] == "fake-model"
    assert len(fake_provider.chat_bodies) == asked
    assert res.verdict == "changed"


def test_a_server_that_is_gone_is_a_clear_error(world: World, no_server_env: None) -> None:
    with FakeProvider() as fp:
        made_with(fp, world)
    with pytest.raises(ModelError, match=r"connection refused by http://127\.0\.0\.1"):
        counterfactual(world.storage, "r1", subtract="all",
                       model=recorded_server_model(world))  # type: ignore[arg-type]
