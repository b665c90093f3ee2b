"""The demo's vectors, shipped with the demo: every text the demo build embeds with
all-MiniLM-L6-v2 (the scenarios' messages and questions, and what the offline reader
and the observations embed as the runs go), each with the vector the model gave it in a
build. The build primes its embedder with them (``MiniLMEmbedder.prime``), so a build
whose texts are all here never imports torch nor loads the model; a text that is not
here still goes to the model. The file (``demo_vectors.npz``) holds the model's name,
the texts and their float32 vectors, row by row; a text is looked up by the sha256 of
its content, as the embedder's cache does (docs/decisions/010-demo-build-speed.md).

``python -m sample_data.vectors --write`` builds the demo with the model (nothing
primed, an empty cache) and writes the file again from what the build embedded: run it
after changing a scenario or the reader (tests/test_demo_vectors.py says when)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from memory_core.embedding.minilm import MODEL_DIM, MODEL_NAME, MiniLMEmbedder
from memory_core.errors import InvalidInputError

VECTORS = Path(__file__).with_name("demo_vectors.npz")


@dataclass(frozen=True)
class ShippedVectors:
    model: str
    texts: list[str]
    vectors: np.ndarray  # float32 (len(texts), MODEL_DIM), row i the vector of texts[i]


def load(path: Path = VECTORS) -> ShippedVectors:
    """The vectors in ``path``; an error naming the file when they are not
    all-MiniLM-L6-v2's, one 384-float row a text."""
    with np.load(path, allow_pickle=False) as f:
        model, texts, vectors = str(f["model"]), [str(t) for t in f["texts"]], f["vectors"]
    if model != MODEL_NAME:
        raise InvalidInputError(f"{path} holds vectors of {model!r}, not {MODEL_NAME!r}")
    if vectors.dtype != np.float32 or vectors.shape != (len(texts), MODEL_DIM):
        raise InvalidInputError(f"{path}: vectors of {vectors.dtype} {vectors.shape} for "
                                f"{len(texts)} texts, not float32 ({len(texts)}, {MODEL_DIM})")
    return ShippedVectors(model, texts, vectors)


class RecordingEmbedder:
    """Passes every call to ``inner`` and keeps each text's vector as it came back (the
    first time: later calls find it in ``inner``'s cache)."""

    name, dim = MODEL_NAME, MODEL_DIM

    def __init__(self, inner: MiniLMEmbedder) -> None:
        self.inner = inner
        self.seen: dict[str, np.ndarray] = {}

    @property
    def texts_embedded(self) -> int:
        return self.inner.texts_embedded

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        vecs = self.inner(texts)
        for text, vec in zip(texts, vecs, strict=True):
            self.seen.setdefault(text, vec.copy())
        return vecs


def record(progress: Callable[[str], None] = lambda _m: None) -> ShippedVectors:
    """Build the demo with the model, nothing primed, and keep every text it embedded."""
    from memory_core.storage.inmemory import InMemoryStorage
    from sample_data.build import DemoClock, build_into, make_embedder

    inner = make_embedder("minilm", shipped=False)
    assert isinstance(inner, MiniLMEmbedder)
    recorder = RecordingEmbedder(inner)
    clock = DemoClock()
    build_into(InMemoryStorage(clock=clock), clock, embedder="minilm", embed=recorder,
               progress=progress)
    return ShippedVectors(MODEL_NAME, list(recorder.seen),
                          np.stack(list(recorder.seen.values())).astype(np.float32))


def save(shipped: ShippedVectors, path: Path = VECTORS) -> None:
    """Written to a temporary file beside ``path`` and moved over it."""
    with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".npz", delete=False) as f:
        np.savez_compressed(f, model=np.array(shipped.model), texts=np.array(shipped.texts),
                            vectors=shipped.vectors)
    Path(f.name).chmod(0o644)  # as any file of the tree, not the temporary file's 0600
    Path(f.name).replace(path)


def main(argv: list[str] | None = None) -> int:
    import argparse
    import sys

    parser = argparse.ArgumentParser(prog="python -m sample_data.vectors",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true",
                        help=f"build the demo with the model and write {VECTORS.name} again")
    args = parser.parse_args(argv)
    if not args.write:
        shipped = load()
        print(f"{VECTORS}: {len(shipped.texts)} texts, {shipped.model}")
        return 0
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # progress is ours
    shipped = record(lambda msg: print(msg, file=sys.stderr, flush=True))
    save(shipped)
    print(f"wrote {VECTORS}: {len(shipped.texts)} texts")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
