"""The DuckDB write path of a live agent, with a reader process on the same file.

Three measurements, each beside its limit measured in the same run:

- **single-message appends/s**: ``append_messages`` of one row (384-d vector) at a time
  into a DuckDB file, until every append is committed (the storage closed), while a
  reader process opens the file read-only every second; limit: the same appends on
  ``InMemoryStorage`` (no I/O, same checks), and the rate at which DuckDB itself
  stores such rows (the bare insert below). Target ≥ 5,000/s.
- **reader**: while the writer appends and starts a run every 0.25 s, the reader polls
  ``list_runs`` (open, read, close, then 1 s of sleep): how long it waited for the
  file (open + read), and how long after ``start_run`` returned it first saw each run.
  Targets: wait ≤ 1 s, seen ≤ 2 s. "Seen" includes up to one poll interval (a run
  started just after a read began is seen by the next read), so it is at most about
  1 s + two waits; the line after it counts the runs the first read begun after
  ``start_run`` returned already saw (all of them: the run was committed at once).
- **batch ingest**: ``append_messages`` in batches of ``--batch`` rows with precomputed
  vectors (rows built outside the timed part); limit: bare DuckDB ``INSERT … SELECT``
  from a registered Arrow table of the same rows and columns, one commit a batch, into
  a fresh file of the same schema; and the same ``INSERT``s all in one transaction
  (DuckDB's cheapest way: no WAL copy, each row group checkpointed once). Target
  ≥ 50,000 rows/s.

Run: ``.venv/bin/python -m bench.bench_duckdb_writes [--quick] [--write]``.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import textwrap
import time
from datetime import UTC, datetime
from pathlib import Path
from statistics import median

import duckdb
import numpy as np
import pyarrow as pa

from bench.results import replace_section
from memory_core.storage.base import Storage
from memory_core.storage.duckdb import _CONFIG, DuckDBStorage
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import AppendRow, Message, RunRecord

DIM = 384
ROOT = Path(__file__).resolve().parents[1]
TITLE = "DuckDB write path: a live agent with the workbench reading the same file"

READER = """
import sys, time
from memory_core.storage.duckdb import DuckDBStorage
stop, seen = sys.argv[2], {}
while True:
    t0 = time.time()
    s = DuckDBStorage(sys.argv[1], read_only=True, lock_timeout=60)
    runs = [r.run_id for r in s.runs.list_runs()]
    s.close()
    t1 = time.time()
    for r in runs:
        seen.setdefault(r, t1)
    print("wait", t1 - t0, t0, flush=True)
    try:
        open(stop).read()
        break
    except FileNotFoundError:
        time.sleep(1.0)
for r, t in seen.items():
    print("seen", r, t)
"""


def rows(n: int, seed: int = 3) -> list[AppendRow]:
    x = np.random.default_rng(seed).standard_normal((n, DIM), dtype=np.float32)
    return [AppendRow(message=Message(role="user" if i % 2 == 0 else "assistant",
                                      content=f"message {i} about topic {i % 97}"),
                      embedding=x[i]) for i in range(n)]


def single_appends(storage: Storage, batch: list[AppendRow], *,
                   runs_every: float = 0.0) -> tuple[float, dict[str, float]]:
    """Appends/s of one row at a time (closing the storage included: everything is
    committed), and when each run started every ``runs_every`` seconds was started."""
    storage.memory.create_thread("t1", resource_id="r")
    started: dict[str, float] = {}
    next_run = time.monotonic()
    t0 = time.perf_counter()
    for i, row in enumerate(batch):
        storage.memory.append_messages("t1", [row])
        if runs_every and time.monotonic() >= next_run:
            rid = f"run-{i}"
            storage.runs.start_run(RunRecord(run_id=rid, agent="a", thread_id="t1",
                                             status="running", started_at=datetime.now(UTC)))
            started[rid] = time.time()
            next_run = time.monotonic() + runs_every
    storage.close()
    return len(batch) / (time.perf_counter() - t0), started


def with_reader(path: Path, batch: list[AppendRow]) -> dict[str, float]:
    stop = path.with_suffix(".stop")
    DuckDBStorage(path).close()
    reader = subprocess.Popen([sys.executable, "-c", textwrap.dedent(READER), str(path),
                               str(stop)], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    time.sleep(1.0)  # the reader is polling before the writer starts
    rate, started = single_appends(DuckDBStorage(path), batch, runs_every=0.25)
    stop.write_text("done")
    out, _ = reader.communicate(timeout=300)
    lines = [line.split() for line in out.splitlines()]
    waits = [float(p[1]) for p in lines if p[0] == "wait"]
    reads = sorted((float(p[2]), float(p[2]) + float(p[1])) for p in lines if p[0] == "wait")
    seen = {p[1]: float(p[2]) for p in lines if p[0] == "seen"}
    lags = [seen[r] - t for r, t in started.items() if r in seen]
    # the poll interval's part: a run started just after a read began is seen only by
    # the next read; did the first read that began after start_run returned see it?
    nexts = [next((end for begin, end in reads if begin >= t), None)
             for t in started.values()]
    next_saw = sum(1 for r, end in zip(started, nexts, strict=True)
                   if end is not None and r in seen and seen[r] <= end + 1e-3)
    return {"rate": rate, "wait_p50": median(waits), "wait_max": max(waits),
            "reads": len(waits), "lag_p50": median(lags) if lags else float("nan"),
            "lag_max": max(lags) if lags else float("nan"), "runs": len(started),
            "runs_seen": len(lags), "next_read": sum(b is not None for b in nexts),
            "next_saw": next_saw}


def batch_ingest(path: Path, batch: list[AppendRow], size: int) -> float:
    s = DuckDBStorage(path)
    s.memory.create_thread("t1", resource_id="r")
    t0 = time.perf_counter()
    for lo in range(0, len(batch), size):
        s.memory.append_messages("t1", batch[lo:lo + size])
    s.close()
    return len(batch) / (time.perf_counter() - t0)


def bare_arrow(path: Path, batch: list[AppendRow], size: int, *,
               one_transaction: bool = False) -> float:
    """The same rows and columns as one Arrow table a batch, inserted by DuckDB, one
    commit a batch (or all batches in one transaction: DuckDB's cheapest way, each
    full row group written once, straight to the file)."""
    DuckDBStorage(path).close()  # the same schema
    n = len(batch)
    matrix = np.stack([r.embedding for r in batch if r.embedding is not None])
    bodies = [r.message.canonical_json() for r in batch]
    texts = [(r.message.text() or "").lower() for r in batch]
    cols = {"thread_id": pa.array(["t1"] * n), "seq": pa.array(np.arange(n)),
            "resource_id": pa.array(["r"] * n), "body": pa.array(bodies),
            "text_lower": pa.array(texts),
            "created_at": pa.array([datetime.now(UTC).isoformat()] * n),
            "created_us": pa.array(np.arange(n)), "run_id": pa.nulls(n, pa.string()),
            "embedding": pa.FixedSizeListArray.from_arrays(pa.array(matrix.ravel()), DIM)}
    names = ", ".join(cols)
    select = names.replace("embedding", "embedding::FLOAT[]")
    conn = duckdb.connect(str(path), config=_CONFIG)
    t0 = time.perf_counter()
    for lo in range(0, n, size):
        if not one_transaction or lo == 0:
            conn.begin()
        conn.register("_bench_batch", pa.table({k: v.slice(lo, size) for k, v in cols.items()}))
        conn.execute(f"INSERT INTO messages ({names}) SELECT {select} FROM _bench_batch")
        conn.unregister("_bench_batch")
        if not one_transaction or lo + size >= n:
            conn.commit()
    conn.close()
    return n / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer rows")
    ap.add_argument("--batch", type=int, default=5000)
    ap.add_argument("--write", action="store_true", help="replace the RESULTS.md section")
    args = ap.parse_args()
    n_single, n_batch = (5_000, 20_000) if args.quick else (20_000, 100_000)
    single, big = rows(n_single), rows(n_batch, seed=5)
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as d:
        work = Path(d)
        mem_rate, _ = single_appends(InMemoryStorage(), single)
        live = with_reader(work / "live.duckdb", single)
        ingest = batch_ingest(work / "batch.duckdb", big, args.batch)
        limit = bare_arrow(work / "bare.duckdb", big, args.batch)
        floor = bare_arrow(work / "bare1.duckdb", big, args.batch, one_transaction=True)
    load = max(load0, os.getloadavg()[0])
    cmd = ".venv/bin/python -m bench.bench_duckdb_writes" + (" --quick" if args.quick else "")
    body = render(n_single, n_batch, args.batch, mem_rate, live, (ingest, limit, floor), load,
                  cmd)
    print(body)
    if args.write:
        replace_section(TITLE, body)


def render(n_single: int, n_batch: int, size: int, mem_rate: float, live: dict[str, float],
           batch: tuple[float, float, float], load: float, cmd: str) -> str:
    ingest, limit, floor = batch
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    intro = (__doc__ or "").split("\n\n", 1)[1].split("Run:")[0].strip()
    lines = [
        intro, "",
        f"Rerun: `{cmd} --write` · machine: {os.cpu_count()} cores, {platform.machine()}, "
        f"duckdb {duckdb.__version__}, pyarrow {pa.__version__} · {when} · 1-minute load "
        f"average {load:.1f} (the machine is shared with other jobs: compare the ratios)", "",
        "| measure | DuckDB | limit (same run) | ratio | target |",
        "|---|---:|---:|---:|---|",
        f"| single-message appends/s ({n_single:,}, reader polling) | {live['rate']:,.0f} | "
        f"{mem_rate:,.0f} in-memory | {live['rate'] / mem_rate:.2f}× | ≥ 5,000/s |",
        f"| the same, against what DuckDB stores a second here (bare Arrow `INSERT`, "
        f"below) | {live['rate']:,.0f} | {limit:,.0f} | {live['rate'] / limit:.2f}× | |",
        f"| reader's wait for the file, p50 / max s ({live['reads']:.0f} reads) | "
        f"{live['wait_p50']:.2f} / {live['wait_max']:.2f} | | | ≤ 1 s |",
        f"| a new run seen by the reader after, p50 / max s ({live['runs_seen']:.0f} of "
        f"{live['runs']:.0f} runs) | {live['lag_p50']:.2f} / {live['lag_max']:.2f} | | | ≤ 2 s |",
        f"| runs seen by the first read begun after `start_run` returned (the rest of "
        f"\"seen\" is the reader's poll interval, 1 s) | {live['next_saw']:.0f} of "
        f"{live['next_read']:.0f} | | | all |",
        f"| batch ingest rows/s ({n_batch:,}, batches of {size:,}, 384-d vectors) | "
        f"{ingest:,.0f} | {limit:,.0f} bare Arrow `INSERT` | {ingest / limit:.2f}× | "
        "≥ 50,000/s |",
        f"| the same, against the bare `INSERT`s of every batch in one transaction | "
        f"{ingest:,.0f} | {floor:,.0f} | {ingest / floor:.2f}× | |",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
