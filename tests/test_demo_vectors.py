"""The demo's vectors shipped with it (sample_data/vectors.py): every text the build
embeds is there, so the build never loads the model nor imports torch; the vectors are
the model's own. When a test here fails after a scenario or the reader changed, run
``python -m sample_data.vectors --write``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memory_core.embedding.minilm import MODEL_DIM, MODEL_NAME, MiniLMEmbedder
from memory_core.errors import InvalidInputError
from sample_data import vectors
from sample_data.build import SCENARIOS, scenario_texts

ROOT = Path(__file__).resolve().parents[1]


def test_the_file_holds_a_unit_vector_of_minilm_for_every_scenario_text() -> None:
    shipped = vectors.load()
    assert shipped.model == MODEL_NAME
    assert shipped.vectors.shape == (len(shipped.texts), MODEL_DIM)
    assert len(set(shipped.texts)) == len(shipped.texts)
    missing = set(scenario_texts(SCENARIOS)) - set(shipped.texts)
    assert not missing, f"not in {vectors.VECTORS.name}: {sorted(missing)[:3]}"
    assert np.allclose(np.linalg.norm(shipped.vectors, axis=1), 1.0, atol=1e-5)


def test_a_primed_embedder_gives_the_primed_vectors_without_the_model() -> None:
    shipped = vectors.load()
    embed = MiniLMEmbedder(threads=1)
    embed.prime(shipped.texts, shipped.vectors)
    got = embed(shipped.texts[::-1][:5])
    assert np.array_equal(got, shipped.vectors[::-1][:5])
    assert (embed.model_calls, embed.texts_embedded) == (0, 0)


def test_priming_with_vectors_of_another_shape_is_refused() -> None:
    with pytest.raises(InvalidInputError, match=r"2 texts, vectors of shape \(2, 8\)"):
        MiniLMEmbedder().prime(["a", "b"], np.zeros((2, 8), dtype=np.float32))


def test_a_file_of_another_model_is_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "v.npz"
    vectors.save(vectors.ShippedVectors("hashing-64", ["a"], np.zeros((1, MODEL_DIM),
                                                                         np.float32)), path)
    with pytest.raises(InvalidInputError, match=r"v\.npz holds vectors of 'hashing-64'"):
        vectors.load(path)


BUILD = """
import json, sys
from sample_data.build import build_demo
lines = []
build_demo(sys.argv[1], embedder="minilm", progress=lines.append)
heavy = sorted(m for m in ("torch", "sentence_transformers", "transformers")
               if m in sys.modules)
print(json.dumps({"lines": lines, "heavy": heavy}))
"""


@pytest.mark.slow  # the whole demo build, in a process of its own: ~8 s
def test_the_demo_build_embeds_nothing_and_never_imports_torch(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-c", BUILD, str(tmp_path / "demo.duckdb")],
                         cwd=ROOT, capture_output=True, text=True, check=True,
                         env={"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1",
                              "PYTHONPATH": str(ROOT)})
    got = json.loads(out.stdout.splitlines()[-1])
    n = len(scenario_texts(SCENARIOS))
    assert any(line.startswith(f"  {n} from the shipped vectors, 0 embedded by the model")
               for line in got["lines"]), got["lines"][:3]
    assert not [line for line in got["lines"] if "the model embedded" in line]
    assert got["heavy"] == []


@pytest.mark.slow  # loads the model and embeds every shipped text: ~10 s
@pytest.mark.model
def test_the_shipped_vectors_are_the_models_own() -> None:
    shipped = vectors.load()
    fresh = MiniLMEmbedder(threads=1)(shipped.texts)
    assert float(np.abs(fresh - shipped.vectors).max()) <= 1e-5
