"""Cold start: the first recall of a scope (a fresh engine) against the bare vector load
of the same store (``get_embeddings`` over every thread), in vector and hybrid mode.

100,000 messages (12-word texts from a 5,000-word vocabulary, random 384-d vectors) in
100 threads of one resource, written once to a SQLite file (the data set is rebuilt
when missing, under bench/out/, git-ignored). Each measurement opens a fresh
``RecallEngine``, so the scope's cache is built from the store; BLAS limited to one
thread.

Run: ``.venv/bin/python -m bench.bench_cold_recall [--n 100000] [--write]``
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.bench_storage import blas_threads
from bench.results import replace_section
from memory_core.recall import RecallConfig, RecallEngine
from memory_core.storage.sqlite import SQLiteStorage
from memory_core.types import AppendRow, Message

OUT = Path(__file__).with_name("out")
DIM = 384
THREADS = 100


def build(path: Path, n: int) -> None:
    rng = random.Random(3)
    vocab = [f"w{i}" for i in range(5000)]
    vecs = np.random.default_rng(3).standard_normal((n, DIM)).astype(np.float32)
    storage = SQLiteStorage(str(path))
    per = n // THREADS
    for t in range(THREADS):
        tid = f"t{t}"
        storage.memory.create_thread(tid, resource_id="u")
        rows = [AppendRow(message=Message(role="user" if i % 2 == 0 else "assistant",
                                          content=" ".join(rng.choices(vocab, k=12))),
                          embedding=vecs[t * per + i]) for i in range(per)]
        for a in range(0, per, 1000):
            storage.memory.append_messages(tid, rows[a:a + 1000])
    storage.close()


def _time(fn: Callable[[], Any]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def engine_from(path: str) -> Any:
    """``RecallEngine`` of another version of recall.py (e.g. ``git show
    <commit>:memory_core/recall.py > /tmp/before.py``), to compare in the same run."""
    spec = importlib.util.spec_from_file_location("recall_before", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["recall_before"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module.RecallEngine


def measure(path: Path, repeat: int, before: str | None) -> dict[str, float]:
    storage = SQLiteStorage(str(path))
    store = storage.memory
    threads = [t.id for t in store.list_threads("u")]
    q = np.random.default_rng(5).standard_normal((1, DIM)).astype(np.float32)
    engines: dict[str, Any] = {"": RecallEngine}
    if before:
        engines["before "] = engine_from(before)
    times: dict[str, list[float]] = {}
    for _ in range(repeat):
        times.setdefault("vector load", []).append(
            _time(lambda: store.get_embeddings(threads)))
        for (label, cls), mode in itertools.product(engines.items(), ("vector", "hybrid")):
            engine = cls(store, lambda texts: np.repeat(q, len(texts), 0))
            cfg = RecallConfig(top_k=5, scope="resource", mode=mode)
            times.setdefault(label + mode, []).append(_time(lambda e=engine, c=cfg: e.run(
                "w17 w230 w4410", thread_id="t0", resource_id="u", config=c)))
    storage.close()
    return {k: statistics.median(v) for k, v in times.items()}


READING = ('Reading: vector mode no longer tokenises and stems every message into BM25 postings (the lexical index is built only for lexical/hybrid queries, from the rows being loaded, then incrementally), which roughly halves its first recall. What remains above the vector load, in both modes, is the per-thread load of every message (`get_messages`, for creation times, metadata and texts); only the hits and near misses are fetched by ref afterwards. Loading the scope from `get_embeddings` alone (creation order and metadata fetched only when a filter or a tie needs them) is left to do.')


def render(n: int, r: dict[str, float], repeat: int, before: str | None) -> str:
    load = r["vector load"]
    rows = [f"| first recall, {mode} mode{' (before)' if label else ''} | {r[label + mode]:.2f} "
            f"| {r[label + mode] / load:.2f}× |"
            for label in ("before ", "") if label + "vector" in r
            for mode in ("vector", "hybrid")]
    return "\n".join([
        f"First recall of a scope of {n:,} messages in {THREADS} threads (SQLite file, "
        "12-word texts, random 384-d vectors, resource scope, top-5), a fresh engine "
        f"each time, against the bare vector load (`get_embeddings` of every thread) of "
        f"the same store. Medians of {repeat}; BLAS 1 thread.",
        "",
        "Rerun: `git show 9202a3e:memory_core/recall.py > /tmp/recall_before.py && "
        ".venv/bin/python -m bench.bench_cold_recall --before /tmp/recall_before.py --write` "
        "(`before` = recall.py before the lazy lexical index, measured interleaved in the "
        "same run)" if before else "Rerun: `.venv/bin/python -m bench.bench_cold_recall "
        "--write`",
        "",
        "| | seconds | ÷ vector load |",
        "|---|---:|---:|",
        f"| bare vector load | {load:.2f} | 1.00× |",
        *rows,
        "",
        READING,
    ])


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--before", help="another recall.py to measure beside this one")
    args = ap.parse_args(argv)
    OUT.mkdir(exist_ok=True)
    path = OUT / f"cold-{args.n}.sqlite"
    if not path.exists():
        t = time.perf_counter()
        build(path, args.n)
        print(f"built {path} in {time.perf_counter() - t:.1f}s", flush=True)
    limit, _ = blas_threads(1)
    with limit:
        r = measure(path, args.repeat, args.before)
    text = render(args.n, r, args.repeat, args.before)
    print(text)
    if args.write:
        replace_section("Recall cold start", text)


if __name__ == "__main__":
    main()
