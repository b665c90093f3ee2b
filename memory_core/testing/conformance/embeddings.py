"""Conformance: embeddings — one fixed float32 dimension per store, exact round trip,
ordered block reads and incremental reads with after_seq."""

from __future__ import annotations

import numpy as np
import pytest

from memory_core.errors import InvalidInputError
from memory_core.storage.base import Storage
from memory_core.testing.support import row, vec


def test_dimension_is_unset_until_first_vector(two: Storage) -> None:
    assert two.memory.embedding_dim() is None
    two.memory.append_messages("a", [row("no vector")])
    assert two.memory.embedding_dim() is None
    two.memory.append_messages("a", [row("x", embedding=vec(1, 2, 3))])
    assert two.memory.embedding_dim() == 3


def test_wrong_dimension_is_refused_naming_both(two: Storage) -> None:
    two.memory.append_messages("a", [row("x", embedding=vec(1, 2, 3))])
    with pytest.raises(InvalidInputError, match="dimension 2, but this store holds 3-dim"):
        two.memory.append_messages("b", [row("y", embedding=vec(1, 2))])
    assert two.memory.count_messages("b") == 0


def test_float32_round_trip_is_exact(two: Storage) -> None:
    rng = np.random.default_rng(7)
    vs = rng.standard_normal((5, 16)).astype(np.float32) * np.float32(1e-3)
    vs[0, 0] = np.float32(np.finfo(np.float32).tiny)
    two.memory.append_messages("a", [row(str(i), embedding=v) for i, v in enumerate(vs)])
    block = two.memory.get_embeddings(["a"])
    assert block.matrix.dtype == np.float32 and block.matrix.shape == (5, 16)
    assert block.matrix.tobytes() == vs.tobytes()


def test_block_ordered_by_thread_then_seq_skipping_rows_without_vectors(two: Storage) -> None:
    two.memory.append_messages("b", [row("b0", embedding=vec(0, 1)), row("b1")])
    two.memory.append_messages("a", [row("a0", embedding=vec(1, 0)), row("a1", embedding=vec(1, 1))])
    block = two.memory.get_embeddings(["b", "a", "b"])
    assert list(block.thread_ids) == ["a", "a", "b"]
    assert block.seqs.dtype == np.int64 and list(block.seqs) == [0, 1, 0]
    assert block.matrix.tolist() == [[1, 0], [1, 1], [0, 1]]
    assert len(block) == 3


def test_after_seq_reads_only_newer_rows(two: Storage) -> None:
    two.memory.append_messages("a", [row(str(i), embedding=vec(i, 0)) for i in range(4)])
    two.memory.append_messages("b", [row("b", embedding=vec(9, 9))])
    block = two.memory.get_embeddings(["a", "b"], after_seq={"a": 1})
    assert [(t, int(s)) for t, s in zip(block.thread_ids, block.seqs, strict=True)] == \
        [("a", 2), ("a", 3), ("b", 0)]
    assert block.matrix[:, 0].tolist() == [2, 3, 9]


def test_empty_block_has_the_store_dimension(two: Storage) -> None:
    two.memory.append_messages("a", [row("x", embedding=vec(1, 2, 3))])
    block = two.memory.get_embeddings(["b", "ghost"])
    assert len(block) == 0 and block.matrix.shape == (0, 3)
    assert two.memory.get_embeddings(["a"], after_seq={"a": 0}).matrix.shape == (0, 3)
