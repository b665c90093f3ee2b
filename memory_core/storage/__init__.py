"""Storage ports and adapters."""

from memory_core.storage.base import EmbeddingBlock, MemoryStore, RunJournal, Storage
from memory_core.storage.inmemory import InMemoryStorage

__all__ = ["EmbeddingBlock", "InMemoryStorage", "MemoryStore", "RunJournal", "Storage"]
