"""An embedder that answers a run's question with the vector the store already holds.

A run's question is stored after the run (its input), embedded by the memory's embedder
— the one the run's recall searched with. Re-composing the run (``whatif``, ``regress``)
asks that embedder for the question's vector again; for all-MiniLM-L6-v2 that meant
loading the model, 8 of the 11 seconds a what-if over one demo thread took. The stored
vector is the same vector (one embedder, one text), so it is used; a text the store holds
no vector of is embedded as before."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memory_core.embedding.hashing import Embedder, embedder_name
from memory_core.storage.base import Storage


class StoredVectors:
    """``embed``, answering the texts ``learn`` was given a stored vector of with it."""

    def __init__(self, embed: Embedder, storage: Storage) -> None:
        self.embed, self.storage = embed, storage
        self.name = embedder_name(embed)
        self._known: dict[str, np.ndarray] = {}

    def learn(self, thread_id: str, seqs: Sequence[int], text: str) -> None:
        """Take the stored vector of the message among ``seqs`` of the thread whose text
        is ``text`` (a run's stored input) as the vector of ``text``."""
        if text in self._known or not seqs:
            return
        store = self.storage.memory
        lo = min(seqs)
        block = store.get_embeddings([thread_id], after_seq={thread_id: lo - 1})
        rows = {int(s): i for i, s in enumerate(block.seqs.tolist()) if int(s) in set(seqs)}
        if not rows:
            return
        for m in store.get_messages_by_refs([(thread_id, s) for s in sorted(rows)]):
            if m.text() == text:
                self._known[text] = np.asarray(block.matrix[rows[m.seq]], dtype=np.float32)
                return

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if not texts or any(t not in self._known for t in texts):
            return np.asarray(self.embed(texts))  # (checked by its caller, as ever)
        return np.stack([self._known[t] for t in texts])
