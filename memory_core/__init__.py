"""memory_core: conversation memory whose every decision is recorded and replayable.

Public names are imported lazily so that ``import memory_core`` stays cheap (the
workbench and CLI import it at start-up) and optional parts load only when used.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS: dict[str, str] = {
    # types
    "Message": "memory_core.types", "TextPart": "memory_core.types",
    "ToolCallPart": "memory_core.types", "ToolResultPart": "memory_core.types",
    "StoredMessage": "memory_core.types", "AppendRow": "memory_core.types",
    "Thread": "memory_core.types", "Observation": "memory_core.types",
    "RunRecord": "memory_core.types", "ErasureReport": "memory_core.types",
    "SubjectErasureReport": "memory_core.types",
    "erase_subject": "memory_core.lifecycle.erasure",
    "erase_thread": "memory_core.lifecycle.erasure",
    "erase_resource": "memory_core.lifecycle.erasure",
    "truncate_messages_after": "memory_core.lifecycle.truncation",
    # errors
    "MemoryCoreError": "memory_core.errors", "InvalidInputError": "memory_core.errors",
    "NotFoundError": "memory_core.errors", "StorageError": "memory_core.errors",
    "StorageBusyError": "memory_core.errors", "ReplayMismatch": "memory_core.errors",
    "ModelError": "memory_core.errors", "ImportFormatError": "memory_core.errors",
    # storage
    "Storage": "memory_core.storage.base", "MemoryStore": "memory_core.storage.base",
    "RunJournal": "memory_core.storage.base",
    "InMemoryStorage": "memory_core.storage.inmemory",
    "DuckDBStorage": "memory_core.storage.duckdb",
    "SQLiteStorage": "memory_core.storage.sqlite",
    "PostgresStorage": "memory_core.storage.postgres",
    "open_storage": "memory_core.storage.url",
    # composition
    "AgentMemory": "memory_core.composition.memory", "RecallConfig": "memory_core.recall.config",
    "RecallHit": "memory_core.recall.results",
    "WorkingMemoryConfig": "memory_core.composition.working_memory",
    "ObservationalConfig": "memory_core.composition.observational",
    "ModelByTokens": "memory_core.composition.observational",
    "Composition": "memory_core.provenance.prompt", "FrozenPrompt": "memory_core.provenance.prompt",
    "PromptItem": "memory_core.provenance.prompt", "Memctx": "memory_core.provenance.record",
    "HashingEmbedder": "memory_core.embedding.hashing", "MiniLMEmbedder": "memory_core.embedding.minilm",
    # runs and models
    "Agent": "memory_core.runs.runner", "Runner": "memory_core.runs.runner",
    "RunResult": "memory_core.runs.runner", "replay": "memory_core.runs.replay",
    "ModelResponse": "memory_core.models.base", "Tool": "memory_core.models.base",
    "ToolSpec": "memory_core.models.base",
    "ReaderModel": "memory_core.models.reader", "ScriptedModel": "memory_core.models.scripted",
    "OpenAIChatModel": "memory_core.models.openai_chat",
    # analysis
    "counterfactual": "memory_core.analysis.counterfactual",
    "attribution": "memory_core.analysis.counterfactual",
    "why_forgotten": "memory_core.analysis.forgotten",
    "diff_runs": "memory_core.analysis.diff",
    "lifeline": "memory_core.analysis.forgotten",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'memory_core' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
