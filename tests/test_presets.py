"""Presets (SPEC §3.1): the reference's named configurations."""

from __future__ import annotations

import pytest

from memory_core.composition.memory import AgentMemory
from memory_core.composition.presets import PRESETS
from memory_core.embedding.hashing import HashingEmbedder
from memory_core.errors import InvalidInputError
from memory_core.recall.config import RecallConfig
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import Message
from tests.helpers import Tick


def test_spec_3_1_chat_preset_is_ten_recent_and_no_recall() -> None:
    mem = AgentMemory.from_preset("chat", storage=InMemoryStorage())
    assert mem.recent_n == 10 and mem.recall_config is None and mem.embed is None


def test_spec_3_1_recall_preset_matches_the_reference() -> None:
    mem = AgentMemory.from_preset("recall", storage=InMemoryStorage())
    assert mem.recent_n == 8
    assert mem.recall_config == RecallConfig(top_k=3, scope="resource", threshold=0.1)
    assert isinstance(mem.embed, HashingEmbedder) and mem.embed.dim == 64


def test_spec_3_1_recall_preset_recalls_across_the_users_threads() -> None:
    s = InMemoryStorage(clock=Tick())
    mem = AgentMemory.from_preset("recall", storage=s)
    mem.append("old", [Message(content="my blender order is A-1042")], resource_id="u")
    comp = mem.load_context(thread_id="new", resource_id="u",
                            input=[Message(content="what is my blender order?")])
    assert [(r.thread_id, r.seq) for r in comp.memctx.recalled] == [("old", 0)]


def test_spec_3_1_overrides_and_a_given_embedder_win() -> None:
    emb = HashingEmbedder(32)
    mem = AgentMemory.from_preset("recall", storage=InMemoryStorage(), embed=emb,
                                  recent_n=4, token_budget=100)
    assert mem.embed is emb and mem.recent_n == 4 and mem.processors[0].settings()["limit"] == 100


def test_spec_3_1_assistant_is_refused_as_renamed_and_unknown_names_listed() -> None:
    with pytest.raises(InvalidInputError, match="renamed to 'recall'"):
        AgentMemory.from_preset("assistant", storage=InMemoryStorage())
    with pytest.raises(InvalidInputError, match=r"unknown preset 'big'.*\['chat', 'recall'\]"):
        AgentMemory.from_preset("big", storage=InMemoryStorage())


def test_spec_3_1_every_preset_is_documented() -> None:
    import memory_core.composition.presets as presets

    for name, p in PRESETS.items():
        assert p.doc and f"``{name}``" in (presets.__doc__ or "")
