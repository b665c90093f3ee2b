"""Storage ports and adapters."""

from memory_core.storage.base import EmbeddingBlock, MemoryStore, RunJournal, Storage
from memory_core.storage.core import CoreStorage, LogRow, StorageCore
from memory_core.storage.inmemory import InMemoryStorage

__all__ = ["CoreStorage", "EmbeddingBlock", "InMemoryStorage", "LogRow", "MemoryStore",
           "RunJournal", "Storage", "StorageCore"]
