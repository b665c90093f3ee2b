"""Embedders: any ``Callable[[list[str]], np.ndarray]`` returning float32 (n, d).

``HashingEmbedder`` is deterministic and needs no model (tests, machines without
torch). The real model lives in ``memory_core.embedding.minilm`` (imported lazily)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

import numpy as np

from memory_core.text import tokenize as tokenize  # re-exported: where it always was

Embedder = Callable[[list[str]], np.ndarray]


class HashingEmbedder:
    """Feature hashing of word unigrams and bigrams into ``dim`` buckets with signed
    hashes, L2-normalised. Same text, same vector, on every machine."""

    def __init__(self, dim: int = 64) -> None:
        if dim <= 0:
            raise ValueError(f"dim must be positive, got {dim}")
        self.dim = dim
        self.name = f"hashing-{dim}"

    def _features(self, text: str) -> list[str]:
        toks = tokenize(text)
        return toks + [f"{a} {b}" for a, b in zip(toks, toks[1:], strict=False)]

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for feat in self._features(text):
                h = hashlib.blake2b(feat.encode("utf-8"), digest_size=8).digest()
                v = int.from_bytes(h, "little")
                out[i, v % self.dim] += 1.0 if (v >> 63) & 1 else -1.0
            n = float(np.linalg.norm(out[i]))
            if n > 0:
                out[i] /= n
        return out


def embedder_name(embed: object) -> str:
    return str(getattr(embed, "name", getattr(embed, "__name__", type(embed).__name__)))
