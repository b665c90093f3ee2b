"""Storage adapters side by side: append throughput (batched and single-row) and recall
latency over a resource scope, each against a baseline run in the same process.

Run: ``.venv/bin/python -m bench.bench_storage`` (100k messages) or ``--quick`` (10k);
``--write`` replaces this benchmark's section of bench/RESULTS.md. PostgreSQL uses
``MEMWB_PG_DSN`` or a throwaway server from tests/pg_server.py, and is skipped with the
reason printed when neither is available (or with ``--no-postgres``).

Baselines: appends are reported as a ratio to InMemoryStorage (the reference adapter:
no I/O, same validation); recall is reported as a ratio to bare numpy ``X @ q`` +
``argpartition`` + sort of the top 5 over the same float32 matrix.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from bench.results import replace_section
from memory_core.composition.memory import AgentMemory
from memory_core.recall.config import RecallConfig
from memory_core.storage.base import Storage
from memory_core.types import AppendRow, Message

DIM = 384
BATCH = 500
PER_THREAD = 1000  # 100 threads at 100k, 10 at 10k; always two batches of 500 a thread
RESOURCE = "bench"
SINGLE_RESOURCE = "bench-single"
TOP_K = 5
T0 = datetime(2026, 1, 1, tzinfo=UTC)
ADAPTERS = ("inmemory", "duckdb", "sqlite", "postgres")


class FixedClock:
    """Deterministic timestamps: one microsecond per call."""

    def __init__(self) -> None:
        self.t = T0

    def __call__(self) -> datetime:
        self.t += timedelta(microseconds=1)
        return self.t


class FixedQuery:
    """An embed callable that returns a precomputed query vector, so recall latency
    excludes computing the query embedding; ``i`` picks the vector."""

    name = "fixed-query"

    def __init__(self, queries: np.ndarray) -> None:
        self.queries = queries
        self.i = 0

    def __call__(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self.queries[self.i % len(self.queries)][None, :])


@dataclass
class AdapterResult:
    name: str
    status: str = "ok"
    note: str = ""
    rows: int = 0
    batch_rows_per_s: float = float("nan")
    single_n: int = 0
    single_rows_per_s: float = float("nan")
    first_recall_s: float = float("nan")
    recall_p50_ms: float = float("nan")
    recall_p95_ms: float = float("nan")
    numpy_p50_ms: float = float("nan")
    numpy_p95_ms: float = float("nan")
    load: tuple[float, float, float] = (0.0, 0.0, 0.0)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def recall_ratio(self) -> float:
        return self.recall_p50_ms / self.numpy_p50_ms


@dataclass
class Dataset:
    """The messages every adapter stores: the same vectors and texts for all."""

    matrix: np.ndarray  # (n, DIM) float32, L2-normalised
    n_threads: int
    queries: np.ndarray  # (repeat, DIM) float32

    @property
    def n(self) -> int:
        return int(self.matrix.shape[0])


def make_dataset(n: int, repeat: int, seed: int = 7) -> Dataset:
    if n % PER_THREAD:
        raise SystemExit(f"message count must be a multiple of {PER_THREAD}, got {n}")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, DIM), dtype=np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    # queries near stored rows, so the top hits have clearly positive cosines
    picks = rng.choice(n, size=repeat, replace=False)
    q = x[picks] + 0.5 * rng.standard_normal((repeat, DIM), dtype=np.float32) / np.sqrt(DIM)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    return Dataset(matrix=x, n_threads=n // PER_THREAD, queries=q.astype(np.float32))


def thread_id(t: int) -> str:
    return f"t{t:03d}"


def batch_rows(ds: Dataset, t: int, lo: int, hi: int) -> list[AppendRow]:
    """Rows lo..hi-1 of thread t (rows of thread t are matrix rows t*PER_THREAD + i)."""
    base = t * PER_THREAD
    return [AppendRow(message=Message(role="user" if i % 2 == 0 else "assistant",
                                      content=f"message {base + i} about topic {(base + i) % 997}"),
                      embedding=ds.matrix[base + i]) for i in range(lo, hi)]


# -- adapters -----------------------------------------------------------------------------
@dataclass
class Opened:
    storage: Storage
    session: Callable[[], AbstractContextManager[None]]
    cleanup: Callable[[], None]
    note: str = ""


def open_adapter(name: str, workdir: Path, pg_dsn: str | None) -> Opened:
    clock = FixedClock()
    if name == "inmemory":
        from memory_core.storage.inmemory import InMemoryStorage

        s: Storage = InMemoryStorage(clock=clock)
        return Opened(s, nullcontext, s.close)
    if name == "duckdb":
        from memory_core.storage.duckdb import DuckDBStorage

        path = workdir / "bench.duckdb"
        d = DuckDBStorage(str(path), clock=clock)
        # the adapter opens the file per operation outside a session; a batch job holds it
        return Opened(d, d.session, d.close, "file, inside storage.session()")
    if name == "sqlite":
        from memory_core.storage.sqlite import SQLiteStorage

        sq = SQLiteStorage(str(workdir / "bench.sqlite"), clock=clock)
        return Opened(sq, nullcontext, sq.close, "file, WAL")
    if name == "postgres":
        from memory_core.storage.postgres import PostgresStorage

        assert pg_dsn is not None
        schema = f"bench_{os.getpid()}"
        p = PostgresStorage(pg_dsn, schema=schema, clock=clock)

        def cleanup() -> None:
            p.close()
            from tests.pg_server import drop_schema

            drop_schema(pg_dsn, schema)

        return Opened(p, nullcontext, cleanup, "loopback server, fsync=off")
    raise SystemExit(f"unknown adapter {name!r}; choose from {', '.join(ADAPTERS)}")


def postgres_dsn() -> tuple[str | None, str]:
    """A DSN, or None and the reason PostgreSQL is skipped."""
    try:
        from tests.pg_server import PostgresSkipped, PostgresUnavailable
        from tests.pg_server import postgres_dsn as start
    except ImportError as e:
        return None, f"tests/pg_server.py could not be imported ({e})"
    try:
        return start(), ""
    except (PostgresSkipped, PostgresUnavailable) as e:
        return None, str(e)


# -- measurements -------------------------------------------------------------------------
def _pct(xs: Sequence[float], p: float) -> float:
    return float(np.percentile(np.asarray(xs), p))


def bulk_append(storage: Storage, ds: Dataset) -> float:
    """Seconds spent inside append_messages for every batch (rows are built outside
    the timed part: it measures the adapter, not pydantic)."""
    mem = storage.memory
    for t in range(ds.n_threads):
        mem.create_thread(thread_id(t), resource_id=RESOURCE)
    spent = 0.0
    for lo in range(0, PER_THREAD, BATCH):
        for t in range(ds.n_threads):
            rows = batch_rows(ds, t, lo, lo + BATCH)
            start = time.perf_counter()
            mem.append_messages(thread_id(t), rows)
            spent += time.perf_counter() - start
    return spent


def single_appends(storage: Storage, ds: Dataset, count: int) -> float:
    """Seconds for ``count`` one-row appends to a thread of another resource."""
    mem = storage.memory
    tid = "single"
    mem.create_thread(tid, resource_id=SINGLE_RESOURCE)
    rows = [AppendRow(message=Message(role="user", content=f"single {i}"),
                      embedding=ds.matrix[i % ds.n]) for i in range(count)]
    start = time.perf_counter()
    for r in rows:
        mem.append_messages(tid, [r])
    return time.perf_counter() - start


def recall_latency(storage: Storage, ds: Dataset, res: AdapterResult) -> None:
    """p50/p95 of AgentMemory.recall over the resource scope, interleaved with the
    numpy baseline so load drift hits both alike."""
    embed = FixedQuery(ds.queries)
    mem = AgentMemory(storage, embed=embed,
                      recall=RecallConfig(top_k=TOP_K, scope="resource", near_misses=5))
    x = ds.matrix
    n = ds.n

    def engine() -> Any:
        return mem.recall("q", thread_id=thread_id(0), resource_id=RESOURCE)

    def baseline() -> np.ndarray:
        s = x @ ds.queries[embed.i % len(ds.queries)]
        top = np.argpartition(s, n - TOP_K)[n - TOP_K:]
        return top[np.argsort(-s[top])]

    start = time.perf_counter()
    hits = engine()  # loads the scope's cache (every message and vector, once)
    res.first_recall_s = time.perf_counter() - start
    # the engine must find what numpy finds, or the comparison means nothing
    want = [(thread_id(int(i) // PER_THREAD), int(i) % PER_THREAD) for i in baseline()]
    got = [(h.thread_id, h.seq) for h in sorted((h for h in hits if h.origin == "hit"),
                                                key=lambda h: h.rank or 0)]
    if got != want:
        raise SystemExit(f"{res.name}: recall returned {got}, numpy {want}")
    baseline()
    eng_ms: list[float] = []
    base_ms: list[float] = []
    for i in range(len(ds.queries)):
        embed.i = i
        t = time.perf_counter()
        baseline()
        base_ms.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        engine()
        eng_ms.append((time.perf_counter() - t) * 1000)
    res.recall_p50_ms, res.recall_p95_ms = _pct(eng_ms, 50), _pct(eng_ms, 95)
    res.numpy_p50_ms, res.numpy_p95_ms = _pct(base_ms, 50), _pct(base_ms, 95)


def blas_threads(threads: int) -> tuple[AbstractContextManager[Any], str]:
    """Limit BLAS threads (0 = the library's default) and say what was done.

    Why: on a loaded 2-core machine OpenBLAS's sleeping worker threads take a scheduler
    tick (~10 ms) to wake for each ``X @ q``, which swamps both sides of the ratio."""
    if threads <= 0:
        return nullcontext(), "BLAS threads: library default"
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return nullcontext(), "BLAS threads: library default (threadpoolctl not installed)"
    return threadpool_limits(limits=threads, user_api="blas"), f"BLAS threads: {threads}"


def bench_adapter(name: str, ds: Dataset, *, single_n: int, pg_dsn: str | None,
                  pg_reason: str) -> AdapterResult:
    res = AdapterResult(name=name, rows=ds.n)
    if name == "postgres" and pg_dsn is None:
        res.status, res.note = "skipped", pg_reason
        return res
    workdir = Path(tempfile.mkdtemp(prefix=f"memwb-bench-{name}-"))
    opened = open_adapter(name, workdir, pg_dsn)
    res.note = opened.note
    try:
        with opened.session():
            load0 = os.getloadavg()
            res.batch_rows_per_s = ds.n / bulk_append(opened.storage, ds)
            recall_latency(opened.storage, ds, res)
            res.single_n = single_n
            res.single_rows_per_s = single_n / single_appends(opened.storage, ds, single_n)
            load1 = os.getloadavg()
            res.load = (max(load0[0], load1[0]), load1[1], load1[2])
    finally:
        opened.cleanup()
        shutil.rmtree(workdir, ignore_errors=True)
        gc.collect()
    return res


# -- report -------------------------------------------------------------------------------
def _fmt(v: float, spec: str) -> str:
    return "–" if v != v else format(v, spec)


def render(results: list[AdapterResult], ds: Dataset, quick: bool, single_n: int,
           blas: str) -> str:
    coretype = os.environ.get("OPENBLAS_CORETYPE", "(unset)")
    ref = next((r for r in results if r.name == "inmemory" and r.status == "ok"), None)
    lines = [
        f"{ds.n:,} messages with 384-d float32 vectors in {ds.n_threads} threads of one "
        f"resource, appended in batches of {BATCH} (rows built outside the timed part); "
        f"then {single_n:,} single-row appends to another resource. Recall: "
        f"`AgentMemory.recall` (vector mode, resource scope over all {ds.n:,} rows, top-"
        f"{TOP_K}, 5 near misses; the embed callable returns a precomputed query vector, "
        "so embedding is excluded) against numpy `X @ q` + `argpartition` + sort over "
        f"the same matrix, interleaved, {len(ds.queries)} queries. `first recall` loads "
        "the engine's cache of the scope; later recalls only check each thread's count. "
        "Load = 1-minute load average (max of start/end of the adapter's run) on a "
        "machine shared with other jobs.",
        "",
        f"Rerun: `.venv/bin/python -m bench.bench_storage{' --quick' if quick else ''} "
        f"--write` · machine: {os.cpu_count()} cores, "
        f"{platform.processor() or platform.machine()}, numpy {np.__version__}, "
        f"OPENBLAS_CORETYPE={coretype}, {blas} · {datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        "",
        "| adapter | batch append rows/s | × in-memory | single-row appends/s "
        "| first recall s | recall p50 ms | p95 ms | numpy p50 ms | recall ÷ numpy (p50) "
        "| load 1m |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    skipped = []
    for r in results:
        if r.status != "ok":
            skipped.append(f"- {r.name}: skipped — {r.note}")
            continue
        rel = r.batch_rows_per_s / ref.batch_rows_per_s if ref else float("nan")
        label = f"{r.name} ({r.note})" if r.note else r.name
        lines.append(
            f"| {label} | {_fmt(r.batch_rows_per_s, ',.0f')} | {_fmt(rel, '.2f')}× | "
            f"{_fmt(r.single_rows_per_s, ',.0f')} | {_fmt(r.first_recall_s, '.2f')} | "
            f"{_fmt(r.recall_p50_ms, '.1f')} | {_fmt(r.recall_p95_ms, '.1f')} | "
            f"{_fmt(r.numpy_p50_ms, '.2f')} | {_fmt(r.recall_ratio, '.2f')}× | "
            f"{r.load[0]:.1f} |")
    if skipped:
        lines += ["", *skipped]
    return "\n".join(lines)


def section_title(n: int) -> str:
    return f"Storage adapters: appends and recall at {n:,} messages"


def run(quick: bool = False, *, write: bool = False,
        adapters: Sequence[str] = ADAPTERS, n: int | None = None,
        blas: int = 1) -> list[AdapterResult]:
    """Benchmark each adapter in turn; print the table and optionally write it."""
    n = n or (10_000 if quick else 100_000)
    repeat = 20 if quick else 30
    single_n = 300 if quick else 1000
    ds = make_dataset(n, repeat)
    pg_dsn, pg_reason = (None, "--no-postgres given")
    if "postgres" in adapters:
        pg_dsn, pg_reason = postgres_dsn()
        if pg_dsn is None:
            print(f"PostgreSQL skipped: {pg_reason}", flush=True)
    results = []
    limit, blas_note = blas_threads(blas)
    with limit:
        results = _each(adapters, ds, single_n, pg_dsn, pg_reason)
    text = render(results, ds, quick, single_n, blas_note)
    print(text)
    if write:
        replace_section(section_title(n), text)
    return results


def _each(adapters: Sequence[str], ds: Dataset, single_n: int, pg_dsn: str | None,
          pg_reason: str) -> list[AdapterResult]:
    results = []
    for name in adapters:
        print(f"[bench_storage] {name}: {ds.n:,} messages …", flush=True)
        r = bench_adapter(name, ds, single_n=single_n, pg_dsn=pg_dsn, pg_reason=pg_reason)
        print(f"[bench_storage] {name}: {r.status} batch {r.batch_rows_per_s:,.0f} rows/s, "
              f"single {r.single_rows_per_s:,.0f}/s, recall p50 {r.recall_p50_ms:.1f} ms "
              f"(numpy {r.numpy_p50_ms:.2f} ms), first {r.first_recall_s:.2f} s, "
              f"load {r.load[0]:.1f}", flush=True)
        results.append(r)
    return results


def main(quick: bool = False, *, write: bool = False) -> None:
    """Entry point for bench.run_all."""
    run(quick, write=write)


def cli(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="10k messages instead of 100k")
    ap.add_argument("--write", action="store_true", help="update bench/RESULTS.md")
    ap.add_argument("--no-postgres", action="store_true", help="leave PostgreSQL out")
    ap.add_argument("--blas-threads", type=int, default=1,
                    help="BLAS threads during the run (0: library default)")
    ap.add_argument("--adapters", default=",".join(ADAPTERS),
                    help=f"comma-separated subset of {','.join(ADAPTERS)}")
    args = ap.parse_args(argv)
    names = [a.strip() for a in args.adapters.split(",") if a.strip()]
    if args.no_postgres:
        names = [a for a in names if a != "postgres"]
    run(args.quick, write=args.write, adapters=names, blas=args.blas_threads)


if __name__ == "__main__":
    cli()
