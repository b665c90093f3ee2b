"""How the costs agents feel grow with the store: recall (warm, cold), load_context,
appends (batch, single), import and runner overhead at 10k, 100k and 1M messages, on a
DuckDB file (the default adapter), each beside its limit measured in the same run.

The data sets are bench/bench_cold_recall.py's (1,000 messages a thread, random 384-d
vectors, written once through the batch path; their build is the batch-append
measurement). Each measurement runs in its own process. Results of every size are kept
in bench/out/scaling.json, so sizes can be measured in separate runs and the table is
written from all of them.

- recall, cold: first recall (vector mode) beside the bare Arrow vector load; hybrid
  beside the 15 s target. Warm: recall beside the numpy scan over the same matrix.
- load_context: warm, resource-scope recall, beside the numpy scan.
- batch append: ``append_messages`` of 1,000 rows a thread (rows made before the
  clock starts; each thread created first; one ``session()``) into a fresh file,
  beside a bare DuckDB ``INSERT`` from Arrow of the same rows into the same schema,
  one commit a batch, and all in one transaction (DuckDB's cheapest way).
- single append: 200 one-row ``append_messages`` (no session, as a live agent) to a new
  thread of another resource, beside 200 bare one-row ``INSERT`` transactions on the
  same file (into a scratch table, dropped after).
- import: ``import_file`` of a chat-completions log of about N/2.3 requests (N messages
  stored) beside the same writes issued through the storage port (bench_import).
- runner overhead: ``Runner.run`` with a scripted model and a constant embedder (so
  model and embedding cost nothing), 30 runs on a new thread of the scope, recall over
  the whole resource; beside the 5 ms target (issue 16), and beside the target plus
  what each run's recall must do at the least — the numpy scan of the scope's vectors
  (the recall cache's matrix), measured in the same process.

Run: ``.venv/bin/python -m bench.bench_scaling [--sizes 10000,100000,1000000]
[--skip import] [--write]``
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench import bench_cold_recall as cold
from bench.results import replace_section

STORE = cold.OUT / "scaling.json"
PIECES = ("recall", "compose", "batch", "single", "import", "runner")
SINGLE_N = 200
RUNS = 30


# -- the extra measuring processes ---------------------------------------------------------
def _rows_table(n: int) -> Any:
    """Every row of the data set as the messages table's columns (pyarrow)."""
    import pyarrow as pa

    from memory_core.storage.common import message_body, ts_micros

    cols: dict[str, list[Any]] = {c: [] for c in (
        "thread_id", "seq", "resource_id", "body", "text_lower", "created_at",
        "created_us", "run_id")}
    vecs = []
    now = datetime.now(UTC)
    for t in range(n // cold.PER_THREAD):
        for i, r in enumerate(cold.thread_rows(t)):
            for c, v in zip(cols, (f"t{t:05}", i, cold.RESOURCE, message_body("t", i, r),
                                   (r.message.text() or "").lower(), now.isoformat(),
                                   ts_micros(now), None), strict=True):
                cols[c].append(v)
            vecs.append(r.embedding)
    flat = pa.array(np.concatenate(vecs))
    arrays = {c: pa.array(v, type=pa.string() if c == "run_id" else None)
              for c, v in cols.items()}
    arrays["embedding"] = pa.FixedSizeListArray.from_arrays(flat, cold.DIM)
    return pa.table(arrays)


BATCH_POOL = 100  # threads whose rows are made up front; larger sizes reuse them


def batch_worker(adapter: str, where: str, n: int) -> dict[str, float]:
    """``append_messages`` of 1,000 rows a thread (each thread created first, all in
    one ``session()``, the storage closed: everything committed) into a fresh file,
    the rows made before the clock starts (at 1M, 100 threads' rows reused), beside a
    bare DuckDB ``INSERT`` from Arrow of the same rows into the same schema, one commit
    a batch and all in one transaction, each on a fresh file."""
    from memory_core.storage.duckdb import DuckDBStorage

    threads = n // cold.PER_THREAD
    pool = [cold.thread_rows(t) for t in range(min(threads, BATCH_POOL))]
    with tempfile.TemporaryDirectory() as tmp:
        storage = DuckDBStorage(str(Path(tmp) / "ours.duckdb"))
        time.sleep(2.0)  # DuckDB's Arrow scan imports pandas in the background first
        t = time.perf_counter()
        with storage.session():
            for i in range(threads):
                storage.memory.create_thread(f"t{i:05}", resource_id=cold.RESOURCE)
                storage.memory.append_messages(f"t{i:05}", pool[i % len(pool)])
        storage.close()
        ours = time.perf_counter() - t
    del pool
    per_batch = _bare_insert(n, one_transaction=False)
    one_tx = _bare_insert(n, one_transaction=True)
    return {"build_s": ours, "limit": per_batch, "limit_one_tx": one_tx}


def _bare_insert(n: int, *, one_transaction: bool) -> float:
    """Seconds of a bare DuckDB ``INSERT … SELECT`` from Arrow of the data set's rows
    (1,000 a thread, as ``batch_worker`` appends them) into a fresh file's schema."""
    import duckdb

    from memory_core.storage.duckdb import DuckDBStorage

    threads = n // cold.PER_THREAD
    table = _rows_table(min(threads, BATCH_POOL) * cold.PER_THREAD)
    cols = ", ".join(table.column_names)
    select = cols.replace("embedding", "embedding::FLOAT[]")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "limit.duckdb"
        DuckDBStorage(str(path)).close()  # the schema, nothing else
        conn = duckdb.connect(str(path))
        t = time.perf_counter()
        conn.execute("BEGIN")
        for i in range(threads):
            part = table.slice((i % BATCH_POOL) * cold.PER_THREAD, cold.PER_THREAD)
            if i >= BATCH_POOL:  # the same rows under the thread's own id
                part = part.set_column(0, "thread_id", pa_strings(f"t{i:05}", part.num_rows))
            conn.register("rows_in", part)
            conn.execute(f"INSERT INTO messages ({cols}) SELECT {select} FROM rows_in")
            conn.unregister("rows_in")
            if not one_transaction:
                conn.execute("COMMIT")
                conn.execute("BEGIN")
        conn.execute("COMMIT")
        conn.close()
        return time.perf_counter() - t


def pa_strings(value: str, n: int) -> Any:
    import pyarrow as pa

    return pa.array([value] * n, pa.string())


def batch_limit_worker(adapter: str, where: str, n: int) -> dict[str, float]:
    """A bare DuckDB INSERT from Arrow of the data set into a fresh file's schema."""
    from memory_core.storage.duckdb import DuckDBStorage

    table = _rows_table(n)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "limit.duckdb"
        DuckDBStorage(str(path)).close()  # the schema, nothing else
        import duckdb

        conn = duckdb.connect(str(path))
        conn.register("rows_in", table)
        t = time.perf_counter()
        conn.execute("BEGIN")
        conn.execute("INSERT INTO messages (thread_id, seq, resource_id, body, text_lower,"
                     " created_at, created_us, run_id, embedding) SELECT thread_id, seq,"
                     " resource_id, body, text_lower, created_at, created_us, run_id,"
                     " embedding::FLOAT[] FROM rows_in")
        conn.execute("COMMIT")
        spent = time.perf_counter() - t
        conn.close()
    return {"seconds": spent}


def single_worker(adapter: str, where: str, n: int) -> dict[str, float]:
    from memory_core.types import AppendRow, Message

    storage = cold.open_storage(adapter, where)
    tid = f"single-{os.getpid()}-{time.time_ns()}"
    storage.memory.create_thread(tid, resource_id="bench-writes")
    vec = np.ones(cold.DIM, np.float32)
    rows = [AppendRow(message=Message(role="user", content=f"single {i}"), embedding=vec)
            for i in range(SINGLE_N)]
    t = time.perf_counter()
    for r in rows:
        storage.memory.append_messages(tid, [r])
    ours = time.perf_counter() - t
    storage.close()
    import duckdb

    time.sleep(0.2)  # the adapter's lingering connection lets go of the file
    conn = duckdb.connect(where)
    conn.execute("CREATE TABLE IF NOT EXISTS bench_scratch AS SELECT thread_id, seq, body,"
                 " created_us, embedding FROM messages LIMIT 0")
    body = json.dumps({"content": "single", "metadata": {}, "role": "user"})
    t = time.perf_counter()
    for i in range(SINGLE_N):
        conn.execute("BEGIN")
        conn.execute("INSERT INTO bench_scratch VALUES (?, ?, ?, ?, ?)",
                     [tid, i, body, i, vec.tolist()])
        conn.execute("COMMIT")
    bare = time.perf_counter() - t
    conn.execute("DROP TABLE bench_scratch")
    conn.close()
    return {"ours_per_s": SINGLE_N / ours, "bare_per_s": SINGLE_N / bare}


def runner_worker(adapter: str, where: str, n: int) -> dict[str, float]:
    from memory_core.composition.memory import AgentMemory
    from memory_core.models.scripted import ScriptedModel
    from memory_core.recall.config import RecallConfig
    from memory_core.runs.runner import Agent, Runner

    storage = cold.open_storage(adapter, where)
    q = np.random.default_rng(8).standard_normal((1, cold.DIM)).astype(np.float32)
    memory = AgentMemory(storage, embed=lambda texts: np.repeat(q, len(texts), 0),
                         recent_n=10, recall=RecallConfig(top_k=5, scope="resource"))
    agent = Agent("a", "Be brief.", ScriptedModel([f"answer {i}" for i in range(RUNS + 1)]))
    runner = Runner(storage, {"a": agent}, memory=memory)
    tid = f"runner-{os.getpid()}-{time.time_ns()}"
    storage.memory.create_thread(tid, resource_id=cold.RESOURCE)
    runner.run("a", run_id=f"{tid}-warm", thread_id=tid, resource_id=cold.RESOURCE,
               prompt="hello")  # loads the recall cache
    t = time.perf_counter()
    for i in range(RUNS):
        runner.run("a", run_id=f"{tid}-{i}", thread_id=tid, resource_id=cold.RESOURCE,
                   prompt=f"question {i}")
    spent = time.perf_counter() - t
    # what each run's recall must do at the least: the numpy scan of the scope's
    # vectors (the recall cache's own matrix), as many times, in the same process
    idx = next(iter(memory._recall_engine()._scopes.values()))
    x, unit = idx.mat[: idx.n], q[0] / np.linalg.norm(q[0])
    scans = []
    for _ in range(RUNS):
        s = time.perf_counter()
        cold.numpy_scan(x, unit)
        scans.append(time.perf_counter() - s)
    storage.close()
    return {"ms_per_run": 1000 * spent / RUNS, "numpy_ms": 1000 * float(np.median(scans))}


cold.EXTRA_WORKERS.update({"batch_limit": batch_limit_worker, "batch": batch_worker,
                           "single": single_worker,
                           "runner": runner_worker})


def import_piece(n: int) -> dict[str, float]:
    """bench_import at the request count that stores about n messages."""
    from threadpoolctl import threadpool_limits

    from bench import bench_import

    requests = max(10, round(n / 2.3 / 10) * 10)
    with tempfile.TemporaryDirectory() as tmp, threadpool_limits(1):
        d = Path(tmp)
        src = d / "log.jsonl"
        bench_import.write_log(src, requests)
        seconds, report = bench_import.timed_import(src, d / "imported.duckdb")
        limit = bench_import.limit_writes(d / "limit.duckdb", report, d / "imported.duckdb")
    return {"seconds": seconds, "limit": limit, "messages": report.messages_stored,
            "requests": requests}


# -- one size --------------------------------------------------------------------------------
def measure(n: int, skip: set[str]) -> dict[str, Any]:
    where = cold.location("duckdb", n, None)
    run = lambda what: cold.run_worker("duckdb", where, n, what,  # noqa: E731
                                       "bench.bench_scaling")
    out: dict[str, Any] = {"load": os.getloadavg()[0]}
    steps: dict[str, Callable[[], Any]] = {
        "recall": lambda: {"limit": run("limit"), "vector": run("vector"),
                           "hybrid": run("hybrid")},
        "compose": lambda: run("compose"),
        "batch": lambda: run("batch"),
        "single": lambda: run("single"),
        "import": lambda: import_piece(n),
        "runner": lambda: run("runner"),
    }
    for piece in PIECES:
        if piece in skip:
            continue
        t = time.perf_counter()
        out[piece] = steps[piece]()
        print(f"{n:,} {piece}: {out[piece]} ({time.perf_counter() - t:.0f}s)",
              file=sys.stderr, flush=True)
    return out


# -- the table -------------------------------------------------------------------------------
def _cells(r: dict[str, Any], n: int) -> dict[str, tuple[float, float, str]]:
    """Per piece: (our cost, its limit, unit) — both as costs, so ratio = ours / limit."""
    c: dict[str, tuple[float, float, str]] = {}
    if "recall" in r:
        lim, v, h = r["recall"]["limit"], r["recall"]["vector"], r["recall"]["hybrid"]
        c["recall, warm (ms)"] = (v["warm_ms"], v["numpy_ms"], "numpy scan")
        c["recall, cold vector (s)"] = (v["seconds"], lim["seconds"], "Arrow vector load")
        c["recall, cold hybrid (s)"] = (h["seconds"], 15.0, "15 s target")
        matrix = n * cold.DIM * 4 / 2**30
        c["recall, cold peak RSS (GB)"] = (v["peak_rss"] / 2**30, matrix, "vector matrix")
        c["recall, cold hybrid peak RSS (GB)"] = (h["peak_rss"] / 2**30, matrix,
                                                  "vector matrix")
    if "compose" in r:
        c["load_context, warm (ms)"] = (r["compose"]["compose_ms"], r["compose"]["numpy_ms"],
                                        "numpy scan")
    if "batch" in r:
        c["batch append (µs/message)"] = (1e6 * r["batch"]["build_s"] / n,
                                          1e6 * r["batch"]["limit"] / n,
                                          "bare Arrow INSERT, a commit a batch")
        if "limit_one_tx" in r["batch"]:
            c["batch append, against one transaction"] = (
                1e6 * r["batch"]["build_s"] / n, 1e6 * r["batch"]["limit_one_tx"] / n,
                "bare Arrow INSERT, one transaction")
    if "single" in r:
        c["single append (ms)"] = (1000 / r["single"]["ours_per_s"],
                                   1000 / r["single"]["bare_per_s"], "bare INSERT + commit")
    if "import" in r:
        im = r["import"]
        c["import (µs/message)"] = (1e6 * im["seconds"] / im["messages"],
                                    1e6 * im["limit"] / im["messages"], "same writes, bare")
    if "runner" in r:
        c["runner overhead (ms/run)"] = (r["runner"]["ms_per_run"], 5.0, "5 ms target")
        if "numpy_ms" in r["runner"]:
            c["runner overhead, against the target plus the scope's scan"] = (
                r["runner"]["ms_per_run"], 5.0 + r["runner"]["numpy_ms"],
                "5 ms target + numpy scan of the scope's vectors")
    return c


def render(results: dict[str, dict[str, Any]], command: str) -> str:
    sizes = sorted(int(k) for k in results)
    cells = {n: _cells(results[str(n)], n) for n in sizes}
    names = list(dict.fromkeys(k for n in sizes for k in cells[n]))
    head = " | ".join(f"{n:,}: ours / limit = ratio" for n in sizes)
    lines = [
        __doc__.split("\n\n")[0].replace("\n", " "), "",
        f"Rerun: `{command}` · machine: {os.cpu_count()} cores, {platform.machine()} · "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC · load (1 min) at each size: "
        + ", ".join(f"{n:,}: {results[str(n)]['load']:.1f}" for n in sizes), "",
        f"| cost | limit | {head} | growth per 10× messages |",
        "|---|---|" + "---:|" * len(sizes) + "---:|"]
    for name in names:
        row = [name, next(cells[n][name][2] for n in sizes if name in cells[n])]
        for n in sizes:
            if name in cells[n]:
                ours, lim, _ = cells[n][name]
                row.append(f"{ours:.3g} / {lim:.3g} = {ours / lim:.2f}×")
            else:
                row.append("not run")
        have = [n for n in sizes if name in cells[n] and cells[n][name][0] > 0]
        if len(have) >= 2:
            a, b = have[0], have[-1]
            growth = (cells[b][name][0] / cells[a][name][0]) ** (1 / math.log10(b / a))
            row.append(f"×{growth:.2f}")
        else:
            row.append("—")
        lines.append("| " + " | ".join(row) + " |")
    for n in sizes:
        if "carried_over" in results[str(n)]:
            lines += ["", f"The {n:,} column is carried over from the "
                      f"{results[str(n)]['carried_over']}."]
    lines += ["", "Growth = how much the cost itself is multiplied per 10× more messages "
              "(×10 = linear in the store, ×1 = flat); for per-message costs (batch append, "
              "import) ×1 means linear overall. The machine is shared (2 cores, several "
              "agents): compare ratios within a column, not single figures across runs. "
              "Sizes and pieces can be measured in separate runs (`--sizes 1000000 --skip "
              "import`); the table shows the latest measurement of each."]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    if cold.worker_main(list(sys.argv[1:] if argv is None else argv)):
        return
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--skip", default="", help=f"pieces to leave out: {','.join(PIECES)}")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args(argv)
    skip = {s for s in args.skip.split(",") if s}
    results: dict[str, dict[str, Any]] = json.loads(STORE.read_text()) if STORE.exists() \
        else {}
    for n in (int(x) for x in args.sizes.split(",")):
        fresh = measure(n, skip)
        results[str(n)] = {**results.get(str(n), {}), **fresh}
        cold.OUT.mkdir(exist_ok=True)
        STORE.write_text(json.dumps(results, indent=1))
    text = render(results, ".venv/bin/python -m bench.bench_scaling --write")
    print(text)
    if args.write:
        replace_section("Scaling", text)


if __name__ == "__main__":
    main()
