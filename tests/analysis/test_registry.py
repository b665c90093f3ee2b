"""The registry rebuilds what a stored run was composed with from its provenance:
the recall settings, the embedder and the model (from the recorded identity, old
records included, with the environment and the caller's override)."""

from __future__ import annotations

from typing import Any

import pytest

from memory_core.composition.memory import AgentMemory
from memory_core.embedding.hashing import HashingEmbedder
from memory_core.errors import InvalidInputError
from memory_core.models.base import ModelIdentity, model_identity
from memory_core.models.openai_chat import OpenAIChatModel
from memory_core.models.reader import ReaderModel
from memory_core.models.scripted import ScriptedModel
from memory_core.recall.config import RecallConfig
from memory_core.runs.registry import (
    RecordedServerError,
    describe_model,
    embedder_from_name,
    model_for_run,
    model_from_info,
    plan_model_for_run,
    recall_config_from_settings,
    recorded_identity,
    resolve_embedder,
)
from memory_core.storage.inmemory import InMemoryStorage

SERVER = "http://127.0.0.1:8000/v1"
NO_ENV: dict[str, str] = {}
ENV = {"MEMWB_OPENAI_BASE_URL": "http://u:p4ss@127.0.0.1:9999/v1", "MEMWB_OPENAI_API_KEY": "k"}
RECORDED = ModelIdentity(kind="openai", name="llama3.1", base_url=SERVER, temperature=0.7,
                         top_p=0.9, seed=5, max_tokens=64)


@pytest.mark.parametrize("config", [
    RecallConfig(top_k=5, threshold=0.25, message_range={"before": 1, "after": 2},
                 scope="resource", filter={"lang": "de"}, mode="hybrid"),
    RecallConfig(top_k=1, message_range=3, mode="lexical"),
    RecallConfig(),
])
def test_recorded_settings_give_back_the_recall_config(config: RecallConfig) -> None:
    memory = AgentMemory(InMemoryStorage(), embed=HashingEmbedder(32), recall=config)
    assert recall_config_from_settings(memory.settings()) == config


def test_embedder_is_rebuilt_from_its_recorded_name_and_shared() -> None:
    memory = AgentMemory(InMemoryStorage(), embed=HashingEmbedder(32), recall=RecallConfig())
    settings = memory.settings()
    rebuilt = resolve_embedder(settings, None)
    assert isinstance(rebuilt, HashingEmbedder) and rebuilt.dim == 32
    assert resolve_embedder(settings, None) is rebuilt
    passed = HashingEmbedder(8)
    assert resolve_embedder(settings, passed) is passed
    assert embedder_from_name(None) is None
    with pytest.raises(InvalidInputError, match="'word2vec'"):
        embedder_from_name("word2vec")


@pytest.mark.parametrize("info", [
    {"kind": "reader", "name": "offline-reader", "temperature": 0.0},
    {"name": "offline-reader", "temperature": 0.0, "seed": None},  # an old record
])
def test_the_reader_is_rebuilt_with_the_runs_embedder(info: dict[str, Any]) -> None:
    model = model_for_run(info, embed_name="hashing-16", environ=NO_ENV)
    assert isinstance(model, ReaderModel) and isinstance(model.embed, HashingEmbedder)
    assert model.embed.dim == 16
    assert isinstance(model_from_info(info, "hashing-16"), ReaderModel)


def test_an_openai_model_is_rebuilt_at_its_recorded_server_only_when_confirmed() -> None:
    # a database is data from elsewhere: its recorded server is named, never called
    with pytest.raises(RecordedServerError) as err:
        model_for_run(RECORDED.model_dump(), environ=NO_ENV)
    assert str(err.value) == (
        "the run's model 'llama3.1' was asked at http://127.0.0.1:8000/v1, a server named "
        "by this database: pass --base-url http://127.0.0.1:8000/v1 (or set "
        "MEMWB_OPENAI_BASE_URL) to ask it again; a database's recorded server is never "
        "called unless you name it")
    assert (err.value.server, err.value.host) == (SERVER, "127.0.0.1:8000")
    assert isinstance(err.value, InvalidInputError)
    with pytest.raises(RecordedServerError, match="no server is configured for the model "
                                                  "'mistral'; the run was asked at http"):
        plan_model_for_run(RECORDED, override="mistral", environ=NO_ENV)
    # a credential a hostile record carries is not repeated
    with pytest.raises(RecordedServerError) as err:
        plan_model_for_run({"kind": "openai", "name": "m",
                            "base_url": "http://u:pw@evil.test/v1?api-key=s3"}, environ=NO_ENV)
    assert "pw" not in str(err.value) and "s3" not in str(err.value)
    assert err.value.host == "evil.test"
    # confirmed: the recorded server, its name and sampling — and no API key
    keyed = {"MEMWB_OPENAI_API_KEY": "sk-mine", "OPENAI_API_KEY": "sk-other"}
    model = model_for_run(RECORDED.model_dump(), use_recorded_server=True, environ=keyed)
    assert isinstance(model, OpenAIChatModel)
    assert model_identity(model) == RECORDED
    assert model.url == SERVER + "/chat/completions"
    assert model._api_key is None
    assert plan_model_for_run(RECORDED, use_recorded_server=True, environ=keyed).send_key \
        is False


def test_the_key_goes_only_to_the_host_it_was_configured_for() -> None:
    def plan(env: dict[str, str], **kw: Any) -> tuple[str | None, bool]:
        p = plan_model_for_run(RECORDED, environ={"MEMWB_OPENAI_API_KEY": "k", **env}, **kw)
        return p.base_url, p.send_key

    other = {"MEMWB_OPENAI_BASE_URL": "https://api.example.com/v1"}
    same = {"MEMWB_OPENAI_BASE_URL": "http://127.0.0.1:8000/v1?api-version=1"}
    assert plan(other) == ("https://api.example.com/v1", True)  # configured: keyed
    assert plan(other, use_recorded_server=True) == (SERVER, False)
    assert plan(same, use_recorded_server=True) == (SERVER, True)
    assert plan({"MEMWB_OPENAI_BASE_URL": "https://127.0.0.1:8000/v1"},
                use_recorded_server=True) == (SERVER, False)  # another scheme
    assert plan({}, base_url="http://10.1.1.1/v1") == ("http://10.1.1.1/v1", True)
    assert plan({}, base_url="http://10.1.1.1/v1", use_recorded_server=True) == \
        ("http://10.1.1.1/v1", True)  # a named base URL wins
    built = model_for_run(RECORDED, use_recorded_server=True,
                          environ={"MEMWB_OPENAI_API_KEY": "k", **same})
    assert isinstance(built, OpenAIChatModel) and built._api_key == "k"
    explicit = OpenAIChatModel(base_url=SERVER, model="m", api_key="given",
                               key_from_env=False, environ={"MEMWB_OPENAI_API_KEY": "k"})
    assert explicit._api_key == "given"


def test_the_configured_server_wins_and_its_credentials_stay_out_of_the_identity() -> None:
    model = model_for_run(RECORDED, environ=ENV)
    assert isinstance(model, OpenAIChatModel)
    ident = model_identity(model)
    assert ident.base_url == "http://127.0.0.1:9999/v1" and ident.name == "llama3.1"
    assert (ident.temperature, ident.top_p, ident.seed, ident.max_tokens) == (0.7, 0.9, 5, 64)
    assert "p4ss" not in repr(model) and model.base_url == "http://u:p4ss@127.0.0.1:9999/v1"
    assert plan_model_for_run(RECORDED, environ=ENV).identity == ident


@pytest.mark.parametrize("info, name", [
    ({"name": "openai:qwen2.5", "temperature": 0.2, "seed": 1}, "qwen2.5"),
    ({"name": "llama3.1", "temperature": None, "seed": None}, "llama3.1"),  # old bare name
    ({"kind": "imported", "name": "gpt-4o-mini-2024-07-18"}, "gpt-4o-mini-2024-07-18"),
])
def test_old_and_imported_records_go_to_the_configured_server(info: dict[str, Any],
                                                              name: str) -> None:
    model = model_for_run(info, environ=ENV)
    assert isinstance(model, OpenAIChatModel) and model.model == name
    assert model.base_url == ENV["MEMWB_OPENAI_BASE_URL"]
    with pytest.raises(InvalidInputError) as info_:
        model_for_run(info, environ=NO_ENV)
    msg = str(info_.value)
    assert f"'{name}'" in msg and "set MEMWB_OPENAI_BASE_URL to the server's base URL" in msg
    assert "model=" not in msg and "pass" not in msg


def test_an_imported_run_never_calls_back_its_original_provider() -> None:
    imported = {"kind": "imported", "name": "gpt-4o", "base_url": "https://api.openai.com/v1"}
    with pytest.raises(InvalidInputError, match="recorded from an imported trace.*set "
                                                "MEMWB_OPENAI_BASE_URL"):
        model_for_run(imported, environ=NO_ENV)
    assert recorded_identity({"name": "openai:m"}).kind == "openai"


def test_scripted_and_custom_models_cannot_be_rebuilt_but_can_be_replaced() -> None:
    for info in ({"name": "scripted-playback", "temperature": None, "seed": None},
                 model_identity(ScriptedModel(["x"])).model_dump(),
                 {"kind": "custom", "name": "MyAgentModel"}):
        with pytest.raises(InvalidInputError, match="cannot be rebuilt from the journal; "
                                                    "choose the offline reader"):
            model_for_run(info, environ=ENV)
        assert isinstance(model_for_run(info, override="reader", environ=NO_ENV), ReaderModel)
        other = model_for_run(info, override="mistral", base_url=SERVER, environ=NO_ENV)
        assert isinstance(other, OpenAIChatModel) and other.model == "mistral"
        # a scripted run's sampling is not carried over to a server model
        assert model_identity(other).temperature is None


def test_overrides() -> None:
    mine = ScriptedModel(["x"])
    assert model_for_run(RECORDED, override=mine) is mine
    reader = model_for_run(RECORDED, override="reader", embed_name="hashing-8")
    assert isinstance(reader, ReaderModel)
    other = model_for_run(RECORDED, override="qwen2.5", use_recorded_server=True,
                          environ=NO_ENV)
    assert isinstance(other, OpenAIChatModel)
    # the same server as recorded (confirmed), another model, the run's sampling
    assert model_identity(other) == RECORDED.model_copy(update={"name": "qwen2.5"})
    moved = model_for_run(RECORDED, base_url="http://127.0.0.1:7777/v1", environ=ENV)
    assert isinstance(moved, OpenAIChatModel) and moved.model == "llama3.1"
    assert moved.base_url == "http://127.0.0.1:7777/v1"
    with pytest.raises(InvalidInputError, match="takes no base URL"):
        model_for_run(RECORDED, override="reader", base_url=SERVER)
    with pytest.raises(InvalidInputError, match="name the model to ask at"):
        model_for_run({"kind": "scripted", "name": "s"}, base_url=SERVER)
    with pytest.raises(InvalidInputError, match="got 42"):
        model_for_run(RECORDED, override=42)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="'ftp://x'"):
        model_for_run(RECORDED, override="m", base_url="ftp://x")
    with pytest.raises(InvalidInputError, match=r"'localhost:1' \(MEMWB_OPENAI_BASE_URL\) is "
                                                "not an http"):
        plan_model_for_run(RECORDED, environ={"MEMWB_OPENAI_BASE_URL": "localhost:1"})


def test_bad_records_are_named() -> None:
    with pytest.raises(InvalidInputError, match="no model"):
        model_for_run({}, environ=ENV)
    with pytest.raises(InvalidInputError, match="malformed: temperature"):
        model_for_run({"kind": "openai", "name": "m", "temperature": "hot"}, environ=ENV)


def test_labels() -> None:
    assert describe_model(RECORDED) == (
        "llama3.1 (an OpenAI-compatible model, http://127.0.0.1:8000/v1, temperature 0.7, "
        "top p 0.9, seed 5, max tokens 64)")
    assert describe_model(recorded_identity({"name": "offline-reader"})) == \
        "offline-reader (the offline reader)"
