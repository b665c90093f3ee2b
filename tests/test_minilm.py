"""The real MiniLM embedder (loads the packaged model): shape, normalisation,
semantic sense, and the content-hash cache in memory and on disk."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memory_core.embedding.minilm import MiniLMEmbedder, MiniLMTokenCounter
from memory_core.errors import InvalidInputError

pytestmark = [pytest.mark.model, pytest.mark.slow]


@pytest.fixture(scope="module")
def shared() -> MiniLMEmbedder:
    return MiniLMEmbedder(batch_size=2)


def test_vectors_are_normalised_384_float32_and_semantic(shared: MiniLMEmbedder) -> None:
    v = shared(["I want a refund for my order", "Please give my money back",
                "The cat sleeps on the sofa"])
    assert v.shape == (3, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert float(v[0] @ v[1]) > float(v[0] @ v[2])
    assert shared.name == "all-MiniLM-L6-v2" and shared.dim == 384


def test_batches_respect_batch_size(shared: MiniLMEmbedder) -> None:
    before = shared.model_calls
    shared(["one batch a", "one batch b", "second batch c"])
    assert shared.model_calls - before == 2


def test_cache_avoids_a_second_model_call(shared: MiniLMEmbedder) -> None:
    first = shared(["cached text here"])
    calls, embedded = shared.model_calls, shared.texts_embedded
    again = shared(["cached text here", "cached text here"])
    assert shared.model_calls == calls and shared.texts_embedded == embedded
    assert np.array_equal(again[0], first[0]) and np.array_equal(again[1], first[0])


def test_duplicates_in_one_call_are_embedded_once(shared: MiniLMEmbedder) -> None:
    embedded = shared.texts_embedded
    shared(["twice in a call", "twice in a call"])
    assert shared.texts_embedded - embedded == 1


def test_disk_cache_survives_a_new_embedder(tmp_path: Path, shared: MiniLMEmbedder) -> None:
    a = MiniLMEmbedder(cache_dir=str(tmp_path))
    a._model = shared._load()  # reuse the loaded weights; loading twice only costs time
    va = a(["persisted across processes"])
    a.close()
    b = MiniLMEmbedder(cache_dir=str(tmp_path))
    vb = b(["persisted across processes"])
    assert b.model_calls == 0 and b._model is None  # never even loaded
    assert np.array_equal(va, vb)
    b.close()


def test_bad_input_is_refused(shared: MiniLMEmbedder) -> None:
    with pytest.raises(InvalidInputError, match="list of texts"):
        shared("one string")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match=r"texts\[1\]"):
        shared(["ok", 3])  # type: ignore[list-item]
    with pytest.raises(InvalidInputError, match="batch_size"):
        MiniLMEmbedder(batch_size=0)
    with pytest.raises(InvalidInputError, match="threads must be .* got 0"):
        MiniLMEmbedder(threads=0)


def test_a_thread_count_holds_while_it_encodes_only(shared: MiniLMEmbedder) -> None:
    """``threads`` is torch's thread count for the embedder's own encoding (the demo
    build's one thread): put back after, and the vectors the same meaning."""
    import torch

    one = MiniLMEmbedder(threads=1)
    one._model = shared._load()
    was = torch.get_num_threads()
    v = one(["a thread count of its own"])
    assert one.texts_embedded == 1 and torch.get_num_threads() == was
    assert np.allclose(v, shared(["a thread count of its own"]), atol=1e-5)


def test_token_counter_uses_the_wordpiece_tokenizer() -> None:
    count = MiniLMTokenCounter()
    assert count("") == 0
    assert count("the") == 1
    assert count("refunds") > 1  # wordpieces, not words
    long_text = "the " * 1000  # beyond the model's 512 limit: no truncation
    assert count(long_text) == 1000
    assert count.label == "minilm-wordpiece"


def test_memory_cache_is_bounded(shared: MiniLMEmbedder) -> None:
    small = MiniLMEmbedder(memory_cache_size=2)
    small._model = shared._load()
    small(["one", "two", "three"])
    assert len(small._memory) == 2
    embedded = small.texts_embedded
    small(["three"])  # still cached
    assert small.texts_embedded == embedded
    small(["one"])  # evicted: embedded again
    assert small.texts_embedded == embedded + 1
