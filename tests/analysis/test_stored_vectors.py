"""Re-composing a run (what-if, regression suites, the fate rules of ``why``) takes the
run's question's vector from the store, where the run's input was kept with it: a
what-if over one demo thread loaded all-MiniLM-L6-v2 for it, 8 of its 11 seconds. The
answers are those the model's own vectors give (the demo's shipped vectors, primed)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memory_core.analysis.stored_vectors import prime_with_stored
from tests.analysis.conftest import World, assistant, user

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import json, sys
from memory_core.analysis.forgotten import why_forgotten
from memory_core.analysis.whatif import what_if
from memory_core.storage.duckdb import DuckDBStorage

def whatif(storage, embed=None):
    report = what_if(storage, ["recall.threshold=0.3"], thread_id="support-3", embed=embed)
    return [r.model_dump(mode="json", exclude={"prompt_after", "memctx_after"})
            for r in report.runs]

def why(storage, embed=None):
    return why_forgotten(storage, "support-3-forgot", ("support-1", 4),
                         embed=embed).model_dump(mode="json")

with DuckDBStorage(sys.argv[1]) as storage:
    stored = {"whatif": whatif(storage), "why": why(storage)}
    heavy = sorted(m for m in ("torch", "sentence_transformers", "transformers")
                   if m in sys.modules)
    from memory_core.embedding.minilm import MiniLMEmbedder
    from sample_data import vectors
    shipped = vectors.load()
    model = MiniLMEmbedder(threads=1)
    model.prime(shipped.texts, shipped.vectors)  # the model's own vectors, no model
    modelled = {"whatif": whatif(storage, model), "why": why(storage, model)}
print(json.dumps({"heavy": heavy, "stored": stored, "modelled": modelled,
                  "model_calls": model.model_calls}))
"""


@pytest.mark.slow  # a process of its own, on a copy of the demo database
def test_re_composing_demo_runs_needs_no_model_and_gives_the_model_s_answers(
        minilm_demo_db: Path, tmp_path: Path) -> None:
    db = tmp_path / "demo.duckdb"
    shutil.copyfile(minilm_demo_db, db)
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(db)], cwd=ROOT,
                         capture_output=True, text=True, check=True,
                         env={"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1",
                              "PYTHONPATH": str(ROOT)})
    got = json.loads(out.stdout.splitlines()[-1])
    assert got["heavy"] == []  # the model was never loaded (nor torch imported)
    assert got["model_calls"] == 0
    changed = [r for r in got["stored"]["whatif"] if r["status"] == "changed"]
    assert len(changed) >= 5  # (recall ran in them, so their questions were searched)
    assert got["stored"] == got["modelled"]


def test_an_embedder_that_takes_known_vectors_is_given_the_stored_one() -> None:
    w = World()
    w.say("t", "r", user("Where is my parcel?"), assistant("On its way."))
    stored = w.storage.memory.get_embeddings(["t"]).matrix[0]

    class Primed:
        def __init__(self) -> None:
            self.given: list[tuple[list[str], np.ndarray]] = []

        def prime(self, texts: list[str], vectors: np.ndarray) -> None:
            self.given.append((texts, vectors))

    embed = Primed()
    assert prime_with_stored(embed, w.storage, "t", [0, 1], "Where is my parcel?")
    [(texts, vectors)] = embed.given
    assert texts == ["Where is my parcel?"] and np.array_equal(vectors[0], stored)
    # a text no stored message of those seqs holds is not given; nor to an embedder
    # without ``prime`` (its vectors cost no model: the hashing embedder)
    assert not prime_with_stored(embed, w.storage, "t", [1], "Where is my parcel?")
    assert not prime_with_stored(embed, w.storage, "t", [0, 1], "Something else")
    assert not prime_with_stored(w.embed, w.storage, "t", [0, 1], "Where is my parcel?")
    assert len(embed.given) == 1
