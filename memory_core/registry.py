"""Rebuilds embedders, models and recall settings from what provenance recorded, so
analysis of a stored run can re-score and re-run without the caller wiring them up again."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memory_core.embedders import Embedder, HashingEmbedder
from memory_core.errors import InvalidInputError

if TYPE_CHECKING:
    from memory_core.models.base import Model
    from memory_core.provenance import CompositionSettings
    from memory_core.recall import RecallConfig

_EMBEDDERS: dict[str, Embedder] = {}


def embedder_from_name(name: str | None) -> Embedder | None:
    """``hashing-<dim>`` or ``all-MiniLM-L6-v2``; None for a run composed without one.
    Instances are shared so the MiniLM cache is reused across analyses."""
    if name is None:
        return None
    if name in _EMBEDDERS:
        return _EMBEDDERS[name]
    emb: Embedder
    if name.startswith("hashing-") and name[len("hashing-"):].isdigit():
        emb = HashingEmbedder(int(name[len("hashing-"):]))
    elif name == "all-MiniLM-L6-v2":
        from memory_core.minilm import MiniLMEmbedder

        emb = MiniLMEmbedder()
    else:
        raise InvalidInputError(
            f"cannot rebuild the embedder {name!r} recorded for this run; pass embed=...")
    _EMBEDDERS[name] = emb
    return emb


def resolve_embedder(settings: CompositionSettings, embed: Embedder | None) -> Embedder | None:
    """``embed`` when the caller passed one, else the embedder the run recorded."""
    return embed if embed is not None else embedder_from_name(settings.embedder)


def model_from_info(info: dict[str, Any], embed_name: str | None) -> Model:
    """The model a run recorded (``{"name": ...}``), rebuilt when it is one of ours."""
    name, kind = info.get("name"), info.get("kind")
    if kind == "reader" or name == "offline-reader":
        from memory_core.models.reader import ReaderModel

        return ReaderModel(embed=embedder_from_name(embed_name))
    if kind == "openai" or (isinstance(name, str) and name.startswith("openai:")):
        from memory_core.models.openai_http import OpenAIChatModel

        return OpenAIChatModel.from_env()
    raise InvalidInputError(
        f"cannot rebuild the model {name!r} recorded for this run; pass model=...")


def recall_config_from_settings(settings: CompositionSettings) -> RecallConfig:
    """The RecallConfig a run composed with: the one its settings recorded (every
    field, since memctx v2), or RecallConfig's defaults when none was recorded."""
    from memory_core.recall import RecallConfig

    return settings.recall if settings.recall is not None else RecallConfig()
