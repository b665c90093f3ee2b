"""load_context latency: a 10k-message thread inside a resource of 100k messages,
resource-scope recall, the query embedding excluded (a precomputed vector), timed side
by side with a bare numpy X @ q + argpartition over the same vectors.

Rerun: .venv/bin/python -m bench.bench_compose [--quick] [--write]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Sequence

import numpy as np

from memory_core.composition.memory import AgentMemory
from memory_core.recall.config import RecallConfig
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import AppendRow, Message

DIM = 384


class FixedEmbedder:
    """Returns the vector registered for a text (the query), so timing excludes the
    model; unknown texts get a seeded random unit vector."""

    name = "bench-fixed"

    def __init__(self, query: str, vec: np.ndarray) -> None:
        self.query, self.vec = query, vec
        self.rng = np.random.default_rng(1)

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        out = self.rng.standard_normal((len(texts), DIM)).astype(np.float32)
        for i, t in enumerate(texts):
            if t == self.query:
                out[i] = self.vec
        return np.asarray(out / np.linalg.norm(out, axis=1, keepdims=True))


def build(n_threads: int, per_thread: int) -> tuple[InMemoryStorage, np.ndarray]:
    rng = np.random.default_rng(7)
    storage = InMemoryStorage()
    mats = []
    for t in range(n_threads):
        tid = f"t{t}"
        storage.memory.create_thread(tid, resource_id="r")
        vecs = rng.standard_normal((per_thread, DIM)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        mats.append(vecs)
        for lo in range(0, per_thread, 1000):
            rows = [AppendRow(message=Message(role="user" if i % 2 == 0 else "assistant",
                                              content=f"message {i} of thread {t}"),
                              embedding=vecs[i]) for i in range(lo, min(per_thread, lo + 1000))]
            storage.memory.append_messages(tid, rows)
    return storage, np.vstack(mats)


def measure(n_threads: int, per_thread: int, repeats: int = 30) -> dict[str, float]:
    storage, matrix = build(n_threads, per_thread)
    q = np.random.default_rng(3).standard_normal(DIM).astype(np.float32)
    q /= np.linalg.norm(q)
    query = "where did we leave the budget numbers?"
    memory = AgentMemory(storage, embed=FixedEmbedder(query, q), recent_n=10,
                         recall=RecallConfig(top_k=5, threshold=0.0, scope="resource"))
    inp = [Message(role="user", content=query)]
    memory.load_context(thread_id="t0", resource_id="r", input=inp)  # warm the cache
    compose, base = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        memory.load_context(thread_id="t0", resource_id="r", input=inp)
        compose.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        s = matrix @ q
        top = np.argpartition(-s, 5)[:5]
        top[np.argsort(-s[top])]
        base.append(time.perf_counter() - t0)
    p50c, p50b = statistics.median(compose) * 1e3, statistics.median(base) * 1e3
    return {"messages": n_threads * per_thread, "thread": per_thread,
            "load_context_p50_ms": p50c, "numpy_p50_ms": p50b, "ratio": p50c / p50b}


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="10k messages instead of 100k")
    ap.add_argument("--write", action="store_true", help="update bench/RESULTS.md")
    args = ap.parse_args(argv)
    r = measure(10, 1000) if args.quick else measure(10, 10_000)
    load = os.getloadavg()[0]
    line = (f"| {r['messages']:,} | {r['thread']:,} | {r['load_context_p50_ms']:.1f} | "
            f"{r['numpy_p50_ms']:.1f} | {r['ratio']:.2f}× | {load:.1f} |")
    print(line)
    if args.write:
        from bench.results import replace_section

        replace_section("load_context latency", "\n".join([
            "`AgentMemory.load_context` with resource-scope recall (top 5) over every "
            "message of the resource, the query embedding excluded, against a bare numpy "
            "`X @ q` + `argpartition` over the same vectors in the same process. Target: "
            "p50 ≤ 20 ms with a 10k-message thread and 100k messages in scope.", "",
            "| messages in scope | thread | load_context p50 (ms) | numpy p50 (ms) | ratio "
            "| load avg |", "|---:|---:|---:|---:|---:|---:|", line, "",
            "Rerun: `.venv/bin/python -m bench.bench_compose --write`"]))


if __name__ == "__main__":
    main()
