"""A run's question's vector, from the store, for an embedder whose vectors cost a model.

A run's question is stored after the run (its input), embedded by the memory's embedder
— the one the run's recall searched with. Re-composing the run (``whatif``, ``regress``,
the fate rules of ``why``) asks that embedder for the question's vector again; for
all-MiniLM-L6-v2 that meant loading the model, 8 of the 11 seconds a what-if over one
demo thread took. The stored vector is the same vector (one embedder, one text), so an
embedder that takes vectors known without its model (``prime``, as MiniLMEmbedder does)
is given it; one that computes vectors cheaply (the hashing embedder) is left to."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memory_core.errors import InvalidInputError
from memory_core.storage.base import Storage


def prime_with_stored(embed: object, storage: Storage, thread_id: str, seqs: Sequence[int],
                      text: str) -> bool:
    """Give ``embed`` (when it has ``prime``) the stored vector of the message among
    ``seqs`` of the thread whose text is ``text`` — a run's stored input — as the vector
    of ``text``. Whether it was given one."""
    prime = getattr(embed, "prime", None)
    if prime is None or not seqs:
        return False
    store, wanted = storage.memory, set(seqs)
    block = store.get_embeddings([thread_id], after_seq={thread_id: min(wanted) - 1})
    rows = {s: i for i, s in enumerate(block.seqs.tolist()) if s in wanted}
    for m in store.get_messages_by_refs([(thread_id, s) for s in sorted(rows)]):
        if m.text() == text:
            try:  # (a vector of another size is another embedder's: not given)
                prime([text], np.asarray(block.matrix[rows[m.seq]:rows[m.seq] + 1],
                                         dtype=np.float32))
            except InvalidInputError:
                return False
            return True
    return False
