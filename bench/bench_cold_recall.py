"""Cold start and warm recall over one scope, per adapter, each beside its limit.

A scope of N messages (12-word texts from a 5,000-word vocabulary, random 384-d
float32 vectors, 1,000 messages a thread, one resource) is written once through the
adapter's batch path (DuckDB and SQLite files are kept under bench/out/, git-ignored;
PostgreSQL gets a fresh schema on the loopback server of tests/pg_server.py; the
in-memory store is filled inside each measuring process, outside the timed part).

Every measurement runs in its own Python process, so each first recall is really cold
and its peak RSS (``resource.getrusage``) is its own:

- **limit**: the bare vector load — DuckDB's Arrow path (``SELECT thread_id, seq,
  embedding FROM messages`` → ``fetch_arrow_table`` → a float32 numpy matrix); on
  SQLite/PostgreSQL the same SELECT with the blobs joined into one numpy matrix; on
  the in-memory store a ``np.vstack`` of its vectors.
- **first recall, vector / hybrid**: a fresh ``RecallEngine`` answering one query over
  the resource (top-5, 5 near misses), the scope's cache built from the store.
- **warm recall**: the same engine answering more queries (no writes in between),
  interleaved with the numpy scan over the very matrix it holds (``X @ q``,
  ``argpartition``, sort of the top 5). BLAS limited to one thread.

Run: ``.venv/bin/python -m bench.bench_cold_recall [--sizes duckdb=1000000,sqlite=100000]
[--write]``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench.results import replace_section
from memory_core.storage.base import Storage
from memory_core.types import AppendRow, Message

OUT = Path(__file__).with_name("out")
DIM = 384
PER_THREAD = 1000
RESOURCE = "u"
DEFAULT_SIZES = {"duckdb": 1_000_000, "sqlite": 100_000, "postgres": 100_000,
                 "inmemory": 100_000}
WARM_QUERIES = 15


# -- the data set -------------------------------------------------------------------------
def thread_rows(t: int) -> list[AppendRow]:
    """Thread t's messages (the same for every adapter and run)."""
    rng = random.Random(1000 + t)
    vocab = [f"w{i}" for i in range(5000)]
    vecs = np.random.default_rng(t).standard_normal((PER_THREAD, DIM)).astype(np.float32)
    return [AppendRow(message=Message(role="user" if i % 2 == 0 else "assistant",
                                      content=" ".join(rng.choices(vocab, k=12))),
                      embedding=vecs[i]) for i in range(PER_THREAD)]


def fill(storage: Storage, n: int) -> None:
    """Write n messages through the batch path (one append of 1,000 rows a thread)."""
    with storage.session():
        for t in range(n // PER_THREAD):
            storage.memory.create_thread(f"t{t:05}", resource_id=RESOURCE)
            storage.memory.append_messages(f"t{t:05}", thread_rows(t))


def location(adapter: str, n: int, pg_dsn: str | None) -> str:
    """Where the adapter's data set lives (built when missing)."""
    if adapter == "inmemory":
        return ""
    if adapter == "postgres":
        assert pg_dsn is not None
        schema = f"bench_cold_{n}_{os.getpid()}"
        storage = open_storage(adapter, f"{pg_dsn}|{schema}")
        try:
            fill(storage, n)
        finally:
            storage.close()
        return f"{pg_dsn}|{schema}"
    OUT.mkdir(exist_ok=True)
    path = OUT / f"cold-{n}.{adapter}"
    if not path.exists():
        t = time.perf_counter()
        part = path.with_suffix(".part")
        for leftover in (part, Path(f"{part}.wal")):
            leftover.unlink(missing_ok=True)
        storage = open_storage(adapter, str(part))
        try:
            fill(storage, n)
        finally:
            storage.close()
        part.rename(path)
        spent = time.perf_counter() - t
        # the build is the batch-append measurement of bench/bench_scaling.py
        Path(f"{path}.json").write_text(json.dumps({"build_s": spent}))
        print(f"built {path} in {spent:.0f}s", file=sys.stderr, flush=True)
    return str(path)


def open_storage(adapter: str, where: str) -> Storage:
    if adapter == "duckdb":
        from memory_core.storage.duckdb import DuckDBStorage

        return DuckDBStorage(where)
    if adapter == "sqlite":
        from memory_core.storage.sqlite import SQLiteStorage

        return SQLiteStorage(where)
    if adapter == "postgres":
        from memory_core.storage.postgres import PostgresStorage

        dsn, schema = where.split("|")
        return PostgresStorage(dsn, schema=schema)
    from memory_core.storage.inmemory import InMemoryStorage

    return InMemoryStorage()


# -- one measuring process -----------------------------------------------------------------
def _peak_rss() -> int:
    """This process's peak RSS in bytes: VmHWM, which starts afresh at exec (getrusage's
    ru_maxrss carries the parent's peak over a fork + exec)."""
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def bare_load(adapter: str, where: str, storage: Storage | None) -> np.ndarray:
    """The limit: every stored vector into one float32 matrix, the fastest way the
    engine offers, with nothing else read, on a plain connection of the engine's own
    client (no storage holds the database meanwhile); the in-memory store's
    ``storage`` stacks its vectors."""
    sql = "SELECT thread_id, seq, embedding FROM messages WHERE embedding IS NOT NULL"
    if adapter == "duckdb":
        import duckdb

        from memory_core.storage.duckdb_file import CONFIG

        conn = duckdb.connect(where, read_only=True, config=CONFIG)
        try:
            table = conn.sql(sql).fetch_arrow_table()
        finally:
            conn.close()
        flat = table.column("embedding").combine_chunks().flatten()
        return np.asarray(flat.to_numpy(zero_copy_only=False), np.float32).reshape(-1, DIM)
    if adapter == "sqlite":
        import sqlite3

        lite = sqlite3.connect(where)
        try:
            rows = lite.execute(sql).fetchall()
        finally:
            lite.close()
    elif adapter == "postgres":
        import psycopg

        dsn, schema = where.split("|")
        with psycopg.connect(dsn) as pg:
            pg.execute(psycopg.sql.SQL("SET search_path TO {}").format(
                psycopg.sql.Identifier(schema)))
            rows = pg.execute(sql).fetchall()
    else:
        assert storage is not None
        mem = storage.memory
        return mem.get_embeddings([t.id for t in mem.list_threads(RESOURCE)]).matrix
    return np.frombuffer(b"".join(bytes(r[2]) for r in rows), np.float32).reshape(-1, DIM)


def numpy_scan(x: np.ndarray, q: np.ndarray) -> np.ndarray:
    s = x @ q
    top = np.argpartition(s, -5)[-5:]
    out: np.ndarray = top[np.argsort(-s[top])]
    return out


def worker(adapter: str, where: str, n: int, what: str) -> dict[str, float]:
    """One measurement in this (fresh) process: ``limit``, ``vector`` or ``hybrid``."""
    from threadpoolctl import threadpool_limits

    from memory_core.recall.config import RecallConfig
    from memory_core.recall.engine import RecallEngine

    if what in EXTRA_WORKERS:
        return EXTRA_WORKERS[what](adapter, where, n)
    # the limit reads the file on a plain connection: no storage holds it meanwhile
    bare = what == "limit" and adapter != "inmemory"
    storage = None if bare else open_storage(adapter, where)
    if storage is not None and adapter == "inmemory":
        fill(storage, n)
    queries = np.random.default_rng(5).standard_normal((WARM_QUERIES + 1, DIM)).astype(
        np.float32)
    current = [queries[0]]
    out: dict[str, float] = {}
    with threadpool_limits(limits=1, user_api="blas"):
        rss_before = _peak_rss()
        t = time.perf_counter()
        if what == "limit":
            matrix = bare_load(adapter, where, storage)
            out["seconds"] = time.perf_counter() - t
            out["rows"] = matrix.shape[0]
        else:
            assert storage is not None
            engine = RecallEngine(storage.memory, lambda texts: np.asarray([current[0]]))
            cfg = RecallConfig(top_k=5, scope="resource", mode=what)  # type: ignore[arg-type]
            engine.run("w17 w230 w4410", thread_id="t00000", resource_id=RESOURCE, config=cfg)
            out["seconds"] = time.perf_counter() - t
            out["peak_rss"] = _peak_rss()
            if what == "vector":
                # DuckDB: the file held for the loop, as a live agent's session would
                # (its connection policy between operations is not what is measured)
                with storage.session():
                    out.update(warm(engine, cfg, queries, current))
        out["peak_rss"] = _peak_rss()
        out["rss_before"] = rss_before
    if storage is not None:
        storage.close()
    return out


def interleaved(engine: Any, queries: np.ndarray, current: list[np.ndarray],
                call: Any) -> dict[str, float]:
    """``call()`` per query (``current[0]`` is the query vector the embedder returns)
    interleaved with the numpy scan over the engine's own matrix; medians and bests."""
    idx = next(iter(engine._scopes.values()))
    x = idx.mat[: idx.n]
    rec: list[float] = []
    base: list[float] = []
    for q in queries[1:]:
        current[0] = q
        t = time.perf_counter()
        numpy_scan(x, q / np.linalg.norm(q))
        base.append(time.perf_counter() - t)
        t = time.perf_counter()
        call()
        rec.append(time.perf_counter() - t)
    return {"warm_ms": 1000 * statistics.median(rec), "numpy_ms": 1000 * statistics.median(base),
            "warm_best_ms": 1000 * min(rec), "numpy_best_ms": 1000 * min(base)}


def warm(engine: Any, cfg: Any, queries: np.ndarray, current: list[np.ndarray],
         ) -> dict[str, float]:
    """Warm recalls interleaved with the numpy scan over the engine's own matrix."""
    return interleaved(engine, queries, current, lambda: engine.run(
        "w17 w230", thread_id="t00000", resource_id=RESOURCE, config=cfg))


def compose_worker(adapter: str, where: str, n: int) -> dict[str, float]:
    """``AgentMemory.load_context`` (resource-scope recall, recent window of 10) on a
    thread of the scope, warm, interleaved with the numpy scan of the engine's matrix."""
    from threadpoolctl import threadpool_limits

    from memory_core.composition.memory import AgentMemory
    from memory_core.recall.config import RecallConfig

    storage = open_storage(adapter, where)
    queries = np.random.default_rng(6).standard_normal((WARM_QUERIES + 1, DIM)).astype(
        np.float32)
    current = [queries[0]]
    memory = AgentMemory(storage, embed=lambda texts: np.repeat(current[:1], len(texts), 0),
                         recent_n=10, recall=RecallConfig(top_k=5, scope="resource"))
    inp = [Message(role="user", content="where did we leave the budget?")]
    with threadpool_limits(limits=1, user_api="blas"), storage.session():
        memory.load_context(thread_id="t00000", resource_id=RESOURCE, input=inp)
        got = interleaved(memory._recall_engine(), queries, current, lambda: memory.load_context(
            thread_id="t00000", resource_id=RESOURCE, input=inp))
    storage.close()
    return {"compose_ms": got["warm_ms"], "numpy_ms": got["numpy_ms"]}


EXTRA_WORKERS = {"compose": compose_worker}


def run_worker(adapter: str, where: str, n: int, what: str,
               module: str = "bench.bench_cold_recall") -> dict[str, float]:
    """One measurement in a fresh process (``module`` registers the worker)."""
    proc = subprocess.run(
        [sys.executable, "-m", module, "--worker", adapter, where, str(n), what],
        capture_output=True, text=True, check=False,
        cwd=Path(__file__).resolve().parent.parent)
    if proc.returncode != 0:
        raise RuntimeError(f"{adapter} {what} at {n:,} failed:\n{proc.stderr[-3000:]}")
    result: dict[str, float] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


# -- the table ------------------------------------------------------------------------------
@dataclass
class Row:
    adapter: str
    n: int
    limit: dict[str, float]
    vector: dict[str, float]
    hybrid: dict[str, float] | None


@contextmanager
def postgres(adapters: Sequence[str]) -> Iterator[str | None]:
    if "postgres" not in adapters:
        yield None
        return
    from bench.bench_storage import postgres_dsn

    dsn, reason = postgres_dsn()
    if dsn is None:
        print(f"postgres skipped: {reason}", file=sys.stderr)
    yield dsn


def measure(adapter: str, n: int, pg_dsn: str | None, hybrid: bool = True) -> Row:
    where = location(adapter, n, pg_dsn)
    try:
        limit = run_worker(adapter, where, n, "limit")
        vector = run_worker(adapter, where, n, "vector")
        hyb = run_worker(adapter, where, n, "hybrid") if hybrid else None
    finally:
        if adapter == "postgres":
            from tests.pg_server import drop_schema

            dsn, schema = where.split("|")
            drop_schema(dsn, schema)
    return Row(adapter, n, limit, vector, hyb)


def _gb(b: float) -> str:
    return f"{b / 2**30:.2f}"


def render(rows: Sequence[Row], command: str) -> str:
    lines = [
        "First recall of a resource scope (a fresh process and engine), and warm recall, "
        "each beside its limit measured in the same run: the bare vector load (DuckDB: "
        "one Arrow query into a numpy matrix; SQLite/PostgreSQL: one SELECT of the blobs; "
        "in-memory: stacking its vectors) and the numpy scan over the engine's own matrix "
        "(`X @ q`, argpartition, sort of the top 5). 12-word texts, random 384-d float32 "
        "vectors, 1,000 messages a thread; top-5, 5 near misses; BLAS 1 thread; one "
        "process per measurement, peak RSS from `/proc/self/status` VmHWM (the matrix = n × 384 × 4 "
        "bytes). Warm: medians of "
        f"{WARM_QUERIES} queries, interleaved with the scan, inside `storage.session()` "
        "(DuckDB then holds its file for the loop, as a Runner's run does). The limit "
        "reads the file on a plain connection of the engine's own client while no "
        "storage holds it.",
        "",
        f"Rerun: `{command}` · machine: {os.cpu_count()} cores, {platform.machine()}, "
        f"numpy {np.__version__} · {datetime.now(UTC):%Y-%m-%d %H:%M} UTC · load "
        f"{os.getloadavg()[0]:.1f}",
        "",
        "| adapter | messages | vector load s (limit) | first recall, vector s | ÷ load "
        "| first recall, hybrid s | peak RSS GB (vector) | matrix GB | RSS ÷ matrix "
        "| warm ms | numpy ms | warm ÷ numpy |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        load, v = r.limit["seconds"], r.vector
        matrix = r.n * DIM * 4
        hyb = f"{r.hybrid['seconds']:.2f}" if r.hybrid else "—"
        lines.append(
            f"| {r.adapter} | {r.n:,} | {load:.2f} | {v['seconds']:.2f} | "
            f"{v['seconds'] / load:.2f}× | {hyb} | {_gb(v['peak_rss'])} | {_gb(matrix)} | "
            f"{v['peak_rss'] / matrix:.2f}× | {v['warm_ms']:.1f} | {v['numpy_ms']:.1f} | "
            f"{v['warm_ms'] / v['numpy_ms']:.2f}× |")
    lines += ["", "Targets (issue 31, as issue 16): first recall at 1M messages in a DuckDB "
              "file ≤ 2× the Arrow vector load in vector mode and ≤ 15 s in hybrid; peak "
              "RSS ≤ 2× the vector matrix; warm recall ≤ 1.25× the numpy scan at 100k and "
              "1M.", "", *verdicts(rows), *([""] if verdicts(rows) else []), READING]
    return "\n".join(lines)


def verdicts(rows: Sequence[Row]) -> list[str]:
    """Each target beside what this run measured: met or not met."""
    out = []

    def said(ok: bool) -> str:
        return "met" if ok else "**not met**"

    for r in rows:
        if r.n not in (100_000, 1_000_000):
            continue
        v = r.vector
        warm = v["warm_ms"] / v["numpy_ms"]
        out.append(f"- {r.adapter} at {r.n:,}: warm recall {v['warm_ms']:.1f} ms = "
                   f"{warm:.2f}× the numpy scan ({v['numpy_ms']:.1f} ms; ≤ 1.25×): "
                   f"{said(warm <= 1.25)}.")
        if r.adapter == "duckdb" and r.n == 1_000_000:
            cold = v["seconds"] / r.limit["seconds"]
            out.append(f"- duckdb at 1,000,000: first recall {v['seconds']:.2f} s = "
                       f"{cold:.2f}× the Arrow load ({r.limit['seconds']:.2f} s; ≤ 2×): "
                       f"{said(cold <= 2)}; peak RSS {v['peak_rss'] / (r.n * DIM * 4):.2f}× "
                       f"the matrix (≤ 2×): {said(v['peak_rss'] <= 2 * r.n * DIM * 4)}"
                       + (f"; hybrid {r.hybrid['seconds']:.1f} s (≤ 15 s): "
                          f"{said(r.hybrid['seconds'] <= 15)}" if r.hybrid else "") + ".")
    return out


READING = (
    "How the first recall works now: one `scope_rows` scan per scope (DuckDB: one Arrow "
    "query streamed in record batches into a matrix allocated once from a count, its "
    "memory limit lowered during the scan so the blocks read are not also kept cached; "
    "SQLite/PostgreSQL: one query, blobs joined per batch) gives refs, creation times "
    "and the vectors; the matrix becomes the cache's own (normalised in place, never "
    "copied). No message object is built per row: texts are read only for "
    "lexical/hybrid queries, and DuckDB hands them over as the Arrow column it read; "
    "ASCII texts are then tokenised as array work (bytes mapped to token characters or "
    "spaces, Arrow splits and encodes them, postings by one stable radix sort), other "
    "texts by the per-text tokenizer, each distinct token folded once; metadata is read "
    "only for a filtered query, creation order sorted only when a tie or a full ranking "
    "needs it. The previous code took 75 s and 7.9 GB for the first recall at 1M on "
    "DuckDB (issue 16). A warm recall asks the store for its change token (DuckDB: the "
    "stamps of the file and its WAL, which any process's commit changes, and this "
    "process's own writes; SQLite: `PRAGMA data_version` and its own commits; "
    "PostgreSQL: the server's current snapshot; the in-memory store gives none) and "
    "reads the scope's counts only when it changed, ranks only the head of the scores, "
    "and gets its hits, neighbours and near misses. DuckDB's scan also gave each row's "
    "body, resource and run id and its created_at offset (a random read of a row costs "
    "DuckDB a 2,048-row vector decompressed per string column, ~3 ms for 15 rows), "
    "kept while they take at most a quarter of the vectors' bytes (here 0.12 GB at 1M): "
    "its warm recall builds the messages without a read. Where they do not fit, and on "
    "SQLite/PostgreSQL, they are read in one query (DuckDB: by a list of rowids, one "
    "parameter, without the created_at text; PostgreSQL: in autocommit, one round "
    "trip). What is left above the numpy scan is ranking the head and building ~15 "
    "messages; the machine is shared, so compare ratios in a row, not figures across "
    "rows.")


def parse_sizes(text: str) -> list[tuple[str, int]]:
    out = []
    for part in text.split(","):
        name, _, n = part.partition("=")
        out.append((name.strip(), int(n) if n else DEFAULT_SIZES[name.strip()]))
    return out


def worker_main(args: Sequence[str]) -> bool:
    """Run a worker when the command line asks for one (``--worker adapter where n
    what``); False otherwise."""
    if list(args[:1]) != ["--worker"]:
        return False
    adapter, where, n, what = args[1:5]
    print(json.dumps(worker(adapter, where, int(n), what)))
    return True


def main(argv: Sequence[str] | None = None) -> None:
    args_in = list(sys.argv[1:] if argv is None else argv)
    if worker_main(args_in):
        return
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", default="duckdb=1000000,sqlite=100000,postgres=100000,"
                    "inmemory=100000", help="adapter=messages, comma-separated")
    ap.add_argument("--no-hybrid", action="store_true")
    ap.add_argument("--duckdb-from-scaling", type=int, metavar="N",
                    help="take the DuckDB row at N messages from bench/out/scaling.json "
                    "(the same measurements, made by bench_scaling) instead of measuring")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args(args_in)
    sizes = parse_sizes(args.sizes)
    rows = []
    if args.duckdb_from_scaling:
        got = json.loads((OUT / "scaling.json").read_text())[str(args.duckdb_from_scaling)]
        rec = got["recall"]
        rows.append(Row("duckdb", args.duckdb_from_scaling, rec["limit"], rec["vector"],
                        rec["hybrid"]))
        sizes = [(a, n) for a, n in sizes if a != "duckdb"]
    with postgres([a for a, _ in sizes]) as pg_dsn:
        for adapter, n in sizes:
            if adapter == "postgres" and pg_dsn is None:
                continue
            rows.append(measure(adapter, n, pg_dsn, not args.no_hybrid))
            print(rows[-1], file=sys.stderr, flush=True)
    command = ".venv/bin/python -m bench.bench_cold_recall" + (
        f" --sizes {args.sizes}" if args.sizes != ap.get_default("sizes") else "") + (
        f" --duckdb-from-scaling {args.duckdb_from_scaling}" if args.duckdb_from_scaling
        else "") + (
        " --write" if args.write else "")
    text = render(rows, command)
    print(text)
    if args.write:
        replace_section("Recall cold start", text)


if __name__ == "__main__":
    main()
