"""Runner overhead: everything a run costs except the model and the embedder.

``Runner.run`` with a ScriptedModel (one answer a run) and AgentMemory (HashingEmbedder,
384-d, hybrid recall top-5, recent window 6) over 10 threads of one resource, on each
adapter. The time inside the model's ``complete`` and the embedder is measured and
taken out; what is left is the overhead (composition, recall, journal, seal, claims,
storage). Breakdown: the time in storage — inside its port calls (and how many a run
makes), and entering and leaving its ``write_batch()`` and ``session()`` blocks (the
begin and the durable commit of the Runner's write groups; on DuckDB the file's open
and its close, once a run) — against the rest (our Python). Limit, measured in the
same run on the same adapter: the storage writes one run needs, issued directly
through the ports (start_run, the run's journal records one by one, two
single-message appends, the status update), in one ``session()`` a run as the Runner
holds the store; beside it the same writes grouped as the Runner groups them (two
``write_batch`` transactions, the journal records of each in one
``put_many_if_absent``).
Target (issue 31): a run's time in storage at the median, every write durable when it
returns, ≤ 30 ms on a DuckDB file and ≤ 5 ms on SQLite.

Run: ``.venv/bin/python -m bench.bench_runner [--runs N] [--profile ADAPTER] [--write]``.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import platform
import pstats
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from datetime import UTC, datetime
from pathlib import Path
from statistics import median
from typing import Any

import numpy as np

from bench.results import replace_section
from memory_core.composition.memory import AgentMemory
from memory_core.embedding.hashing import HashingEmbedder
from memory_core.models.base import ModelResponse, ToolSpec
from memory_core.models.scripted import ScriptedModel
from memory_core.recall.config import RecallConfig
from memory_core.runs.runner import Agent, Runner
from memory_core.storage.base import Storage
from memory_core.types import AppendRow, Message, RunRecord

TITLE = "Runner overhead per run (scripted model)"
ADAPTERS = ("inmemory", "sqlite", "duckdb")
THREADS = 10
TARGET_MS = {"sqlite": 5.0, "duckdb": 30.0}  # storage a run, p50 (issue 31)


class Timer:
    def __init__(self) -> None:
        self.s = 0.0
        self.calls = 0


class TimedModel(ScriptedModel):
    def __init__(self, n: int, timer: Timer) -> None:
        super().__init__(["Noted: the order ships on Monday."] * n)
        self.timer = timer

    def complete(self, messages: Sequence[Message],
                 tools: Sequence[ToolSpec]) -> ModelResponse:
        t = time.perf_counter()
        try:
            return super().complete(messages, tools)
        finally:
            self.timer.s += time.perf_counter() - t


def timed_embed(timer: Timer) -> Callable[[list[str]], np.ndarray]:
    inner = HashingEmbedder(dim=384)

    def embed(texts: list[str]) -> np.ndarray:
        t = time.perf_counter()
        try:
            return np.asarray(inner(texts))
        finally:
            timer.s += time.perf_counter() - t
    embed.name = inner.name  # type: ignore[attr-defined]
    return embed


def time_ports(storage: Storage, timer: Timer) -> None:
    """Count and time every public call on the two ports (outermost calls only), and
    time entering and leaving the storage's ``write_batch()`` and ``session()`` blocks
    outside a port call (their begin, commit, open and close)."""
    depth = [0]
    for port in (storage.memory, storage.runs):
        for name in dir(type(port)):
            fn = getattr(port, name)
            if name.startswith("_") or not callable(fn):
                continue

            def wrap(f: Callable[..., Any]) -> Callable[..., Any]:
                def call(*a: Any, **k: Any) -> Any:
                    if depth[0]:
                        return f(*a, **k)
                    depth[0] += 1
                    t = time.perf_counter()
                    try:
                        return f(*a, **k)
                    finally:
                        depth[0] -= 1
                        timer.s += time.perf_counter() - t
                        timer.calls += 1
                return call
            setattr(port, name, wrap(fn))

    def block(opener: Callable[[], Any]) -> Callable[[], Any]:
        @contextmanager
        def timed() -> Iterator[None]:
            cm = opener()
            t = time.perf_counter()
            cm.__enter__()
            timer.s += time.perf_counter() - t
            try:
                yield
            except BaseException:
                if not cm.__exit__(*sys.exc_info()):
                    raise
            else:
                t = time.perf_counter()
                cm.__exit__(None, None, None)
                timer.s += time.perf_counter() - t
        return timed

    for name in ("write_batch", "session"):
        setattr(storage, name, block(getattr(storage, name)))


def open_storage(kind: str, work: Path, tag: str) -> Storage:
    if kind == "inmemory":
        from memory_core.storage.inmemory import InMemoryStorage
        return InMemoryStorage()
    if kind == "sqlite":
        from memory_core.storage.sqlite import SQLiteStorage
        return SQLiteStorage(str(work / f"{tag}.sqlite"))
    from memory_core.storage.duckdb import DuckDBStorage
    return DuckDBStorage(work / f"{tag}.duckdb")


def measure(kind: str, work: Path, runs: int, warm: int = 20,
            profile: bool = False, limits: bool = True) -> dict[str, float]:
    storage = open_storage(kind, work, f"runner-{warm}")
    model_t, embed_t, port_t = Timer(), Timer(), Timer()
    memory = AgentMemory(storage, embed=timed_embed(embed_t), recent_n=6,
                         recall=RecallConfig(top_k=5, mode="hybrid"))
    agent = Agent(name="a", instructions="Answer from the conversation.",
                  model=TimedModel(runs + warm, model_t))
    runner = Runner(storage, {"a": agent}, memory=memory)

    def go(lo: int, hi: int) -> list[tuple[float, float, float]]:
        """(seconds, of which model and embedder, of which storage) of each run."""
        out = []
        for i in range(lo, hi):
            t, inside, stored = time.perf_counter(), model_t.s + embed_t.s, port_t.s
            runner.run("a", run_id=f"run-{i}", thread_id=f"t{i % THREADS}",
                       resource_id="u", prompt=f"When does order {i % 31} ship? ({i})")
            out.append((time.perf_counter() - t, model_t.s + embed_t.s - inside,
                         port_t.s - stored))
        return out

    go(0, warm)
    model_t.s = embed_t.s = 0.0
    time_ports(storage, port_t)
    prof = cProfile.Profile() if profile else None
    if prof:
        prof.enable()
    per_run = go(warm, warm + runs)
    if prof:
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(30)
    storage.close()
    total = sum(t for t, _, _ in per_run)
    overhead = total - model_t.s - embed_t.s
    return {"run_ms": 1e3 * median(t for t, _, _ in per_run),
            "overhead_p50_ms": 1e3 * median(t - m for t, m, _ in per_run),
            "storage_p50_ms": 1e3 * median(st for _, _, st in per_run),
            "overhead_ms": 1e3 * overhead / runs,
            "model_embed_ms": 1e3 * (model_t.s + embed_t.s) / runs,
            "port_ms": 1e3 * port_t.s / runs, "port_calls": port_t.calls / runs,
            "limit_ms": port_limit(kind, work, runs) if limits else float("nan"),
            "grouped_ms": port_limit(kind, work, runs, grouped=True) if limits else float("nan")}


def port_limit(kind: str, work: Path, runs: int, *, grouped: bool = False) -> float:
    """ms a run for the writes a run makes, straight through the ports, in one
    ``session()`` a run as the Runner holds it: one at a time (each its own commit), or
    ``grouped`` as the Runner groups them (two write batches, each with its journal
    records in one ``put_many_if_absent``)."""
    storage = open_storage(kind, work, "limit-grouped" if grouped else "limit")
    for t in range(THREADS):
        storage.memory.create_thread(f"t{t}", resource_id="u")
    vec = np.ones(384, np.float32) / np.sqrt(384)
    record = {"v": 1, "text": "x" * 400}
    first = ("lease:000000", "input", "memctx", "prompt", "persist:input")
    last = ("step:0", "persist:output", "output", "seal", "lease:000001")
    t0 = time.perf_counter()
    for i in range(runs):
        with storage.session():
            rid, tid = f"run-{i}", f"t{i % THREADS}"
            row = RunRecord(run_id=rid, agent="a", thread_id=tid, resource_id="u",
                            status="running", started_at=datetime.now(UTC))
            for keys, role in ((first, "user"), (last, "assistant")):
                with storage.write_batch() if grouped else nullcontext():
                    if role == "user":
                        storage.runs.start_run(row)
                    storage.memory.append_messages(tid, [AppendRow(
                        message=Message(role=role, content=f"{role} {i}"), run_id=rid,
                        embedding=vec)])
                    if grouped:
                        storage.runs.put_many_if_absent([(f"{rid}:{k}", record) for k in keys])
                    else:
                        for key in keys:
                            storage.runs.put_if_absent(f"{rid}:{key}", record)
                    if role == "assistant":
                        storage.runs.set_run_status(rid, "completed",
                                                    finished_at=datetime.now(UTC))
    elapsed = time.perf_counter() - t0
    storage.close()
    return 1e3 * elapsed / runs


def render(results: dict[str, dict[str, float]], runs: int, load: float, cmd: str,
           aged: Sequence[int] = (),
           aged_results: dict[tuple[str, int], dict[str, float]] | None = None) -> str:
    aged_results = aged_results or {}
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    intro = (__doc__ or "").split("\n\n", 1)[1].split("Run:")[0].strip()
    lines = [intro, "",
             f"Rerun: `{cmd} --write` · machine: {os.cpu_count()} cores, "
             f"{platform.machine()} · {when} · {runs} runs an adapter after 20 warm-up runs "
             f"· 1-minute load average {load:.1f} (shared machine: compare within a row)", "",
             "| adapter | run p50 ms | model + embedder ms | overhead p50 ms | overhead mean"
             " ms | storage p50 ms | storage mean ms (port calls) | rest mean ms |"
             " port writes alone ms (limit) | overhead p50 ÷ limit |"
             " the same writes grouped ms | storage p50 ÷ target |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for name, r in results.items():
        target = "—"
        if name in TARGET_MS:
            cap = TARGET_MS[name]
            met = r["storage_p50_ms"] <= cap
            target = (f"{r['storage_p50_ms'] / cap:.2f}× of ≤ {cap:g} ms: "
                      f"{'met' if met else '**not met**'}")
        lines.append(
            f"| {name} | {r['run_ms']:.1f} | {r['model_embed_ms']:.2f} | "
            f"{r['overhead_p50_ms']:.1f} | {r['overhead_ms']:.1f} | "
            f"{r['storage_p50_ms']:.1f} | {r['port_ms']:.1f} ({r['port_calls']:.0f}) | "
            f"{r['overhead_ms'] - r['port_ms']:.1f} | {r['limit_ms']:.1f} | "
            f"{r['overhead_p50_ms'] / r['limit_ms']:.2f}× | {r['grouped_ms']:.1f} | "
            f"{target} |")
    if aged:
        lines += ["", "As the file grows (`--aged`): the same runs, measured after that many runs "
                  "on the same file (a live agent's file grows by small appends, one run at a "
                  "time), storage p50 ms:", "",
                  "| adapter | " + " | ".join(f"after {n:,} runs" for n in aged) + " |",
                  "|---|" + "---:|" * len(aged)]
        for name in results:
            if all((name, n) in aged_results for n in aged):
                lines.append(f"| {name} | " + " | ".join(
                    f"{aged_results[name, n]['storage_p50_ms']:.1f}" for n in aged) + " |")
    if "duckdb" in results:
        r = results["duckdb"]
        lines += ["", f"What a live agent on a DuckDB file pays a run, beyond its model and "
                  f"embedder: {r['overhead_p50_ms']:.0f} ms at the median "
                  f"({r['overhead_ms']:.0f} ms mean), of which {r['storage_p50_ms']:.0f} ms "
                  "in storage — the file attached at the run's start (its WAL replayed) and "
                  "detached at its end (checkpointed once the WAL passes 64 KB), the "
                  "statements, and each write group's durable commit."]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--adapters", nargs="*", default=list(ADAPTERS))
    ap.add_argument("--profile", default="", help="print a cProfile of this adapter's runs")
    ap.add_argument("--aged", nargs="*", type=int, default=[], metavar="N",
                    help="also measure after N runs on the same file (sqlite and duckdb)")
    ap.add_argument("--write", action="store_true", help="replace the RESULTS.md section")
    args = ap.parse_args(argv)
    load0 = os.getloadavg()[0]
    results = {}
    with tempfile.TemporaryDirectory() as d:
        for kind in args.adapters:
            results[kind] = measure(kind, Path(d), args.runs,
                                    profile=kind == args.profile)
            print(kind, results[kind], flush=True)
        aged: dict[tuple[str, int], dict[str, float]] = {}
        for kind in [k for k in args.adapters if k != "inmemory"]:
            for n in args.aged:
                aged[kind, n] = measure(kind, Path(d), 100, warm=n, limits=False)
                print(kind, "after", n, aged[kind, n]["storage_p50_ms"], flush=True)
    load = max(load0, os.getloadavg()[0])
    body = render(results, args.runs, load,
                  ".venv/bin/python -m bench.bench_runner" +
                  (f" --runs {args.runs}" if args.runs != 200 else "") +
                  (f" --aged {' '.join(map(str, args.aged))}" if args.aged else ""),
                  args.aged, aged)
    print(body)
    if args.write:
        replace_section(TITLE, body)


if __name__ == "__main__":
    main()
