"""The registry rebuilds what a stored run was composed with from its provenance:
the recall settings, the embedder and the model."""

from __future__ import annotations

import pytest

from memory_core.embedders import HashingEmbedder
from memory_core.errors import InvalidInputError
from memory_core.memory import AgentMemory
from memory_core.models.reader import ReaderModel
from memory_core.recall import RecallConfig
from memory_core.registry import (
    embedder_from_name,
    model_from_info,
    recall_config_from_settings,
    resolve_embedder,
)
from memory_core.storage.inmemory import InMemoryStorage


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


def test_model_is_rebuilt_only_when_it_is_ours() -> None:
    assert isinstance(model_from_info({"name": "offline-reader"}, "hashing-16"), ReaderModel)
    with pytest.raises(InvalidInputError, match="'gpt-4o'"):
        model_from_info({"name": "gpt-4o"}, None)
