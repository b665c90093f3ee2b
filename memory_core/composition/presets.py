"""Named starting configurations of ``AgentMemory`` (SPEC §3.1), so a user coming from
the reference starts from the defaults they know: ``AgentMemory.from_preset(name, ...)``.

| preset | what it sets |
|---|---|
| ``chat`` | ``recent_n=10``, no recall: a plain chat window |
| ``recall`` | ``recent_n=8``, the built-in 64-dimension hashing embedder (unless ``embed`` is given), ``RecallConfig(top_k=3, scope="resource", threshold=0.1)`` |

The reference's old name ``assistant`` is refused with a pointer to ``recall``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from memory_core.embedding.hashing import Embedder, HashingEmbedder
from memory_core.errors import InvalidInputError
from memory_core.recall.config import RecallConfig

__all__ = ["PRESETS", "RENAMED", "Preset", "preset_kwargs"]


@dataclass(frozen=True)
class Preset:
    """A named configuration: its documentation and the ``AgentMemory`` keyword
    arguments it stands for (``embed`` made on demand, so each memory gets its own)."""

    name: str
    doc: str
    recent_n: int
    recall: RecallConfig | None = None
    default_embed: Callable[[], Embedder] | None = None

    def kwargs(self, embed: Embedder | None) -> dict[str, Any]:
        if embed is None and self.default_embed is not None:
            embed = self.default_embed()
        return {"recent_n": self.recent_n, "recall": self.recall, "embed": embed}


PRESETS: dict[str, Preset] = {p.name: p for p in (
    Preset("chat", "the last 10 messages, no recall", recent_n=10),
    Preset("recall", "the last 8 messages and recall across the user's threads: top 3 above "
           "0.1 similarity, with the built-in 64-dimension hashing embedder unless one is "
           "given", recent_n=8,
           recall=RecallConfig(top_k=3, scope="resource", threshold=0.1),
           default_embed=lambda: HashingEmbedder(64)),
)}

#: names the reference retired, and what replaced them
RENAMED = {"assistant": "recall"}


def preset_kwargs(name: str, embed: Embedder | None = None) -> dict[str, Any]:
    """The ``AgentMemory`` keyword arguments preset ``name`` stands for
    (``AgentMemory.from_preset`` builds the memory from them)."""
    if name in RENAMED:
        raise InvalidInputError(
            f"preset '{name}' was renamed to '{RENAMED[name]}'; use "
            f"from_preset('{RENAMED[name]}', ...)")
    preset = PRESETS.get(name) if isinstance(name, str) else None
    if preset is None:
        raise InvalidInputError(f"unknown preset {name!r}; known: {sorted(PRESETS)}")
    return preset.kwargs(embed)
