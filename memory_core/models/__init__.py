"""Models: the ``Model`` port and the shipped models (offline reader, extractive
summariser, scripted/raising test models, OpenAI-compatible client on the openai SDK).

Names load lazily so importing one model does not import the others."""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS: dict[str, str] = {
    "Model": "memory_core.models.base", "ModelResponse": "memory_core.models.base",
    "Tool": "memory_core.models.base", "ToolSpec": "memory_core.models.base",
    "Usage": "memory_core.models.base",
    "ScriptedModel": "memory_core.models.scripted",
    "RaisingModel": "memory_core.models.scripted",
    "ReaderModel": "memory_core.models.reader",
    "ExtractiveSummarizer": "memory_core.models.summarizer",
    "SummaryParts": "memory_core.models.summarizer",
    "parse_summary": "memory_core.models.summarizer",
    "format_block": "memory_core.models.summarizer",
    "OpenAIChatModel": "memory_core.models.openai_chat",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'memory_core.models' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
