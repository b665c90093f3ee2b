"""DuckDB writes as the plain driver makes them: every write committed when it returns.

Three measurements, each beside its limit measured in the same run:

- **single-message appends/s**: ``append_messages`` of one row (384-d vector) at a time
  into a DuckDB file, each committed (durable) before the call returns: inside one
  ``session()`` (the file held, as during a Runner's run), and without one (the file
  opened and closed by every append, as by a process between runs). Limits: the same
  rows as bare one-row ``INSERT``s, each its own transaction, on a plain
  ``duckdb.connect`` of the same schema — kept open, and connected and closed per
  row. Beside them, the same appends on SQLite (WAL, ``synchronous=NORMAL``).
- **reader beside a writer**: a writer process runs as a live agent with no model
  time — a run after another, each in one ``session()``: ``start_run``, four
  single-message appends, ``set_run_status`` — while a reader process polls
  ``list_runs`` (a read-only storage opened, read, closed, then 1 s of sleep). Measured:
  the reader's wait for the file (open + read), how long after ``start_run`` returned
  it first saw each run (up to one poll interval of that is the reader's sleep: the
  line after it counts the runs the first read begun after ``start_run`` returned
  already saw), and the writer's runs a second against the same runs with no reader.
- **batch ingest**: ``append_messages`` in batches of ``--batch`` rows with precomputed
  vectors (rows built outside the timed part) into a fresh file, in one ``session()``
  as an import holds the file (and, in the last line, without one); limit: a bare DuckDB
  ``INSERT … SELECT`` from a registered Arrow table of the same rows and columns, one
  commit a batch, on a plain connection to a fresh file of the same schema; beside it
  the same ``INSERT``s all in one transaction (DuckDB's cheapest way). Target
  (issue 31): ≥ 0.8× the bare per-batch ``INSERT``.

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
from collections.abc import Sequence
from contextlib import nullcontext
from datetime import UTC, datetime
from pathlib import Path
from statistics import median

import duckdb
import numpy as np
import pyarrow as pa

from bench.results import replace_section
from memory_core.storage.base import Storage
from memory_core.storage.duckdb import DuckDBStorage
from memory_core.storage.duckdb_file import CONFIG
from memory_core.storage.sqlite import SQLiteStorage
from memory_core.types import AppendRow, Message

DIM = 384
ROOT = Path(__file__).resolve().parents[1]
TITLE = "DuckDB writes: durable appends, a reader beside a writer, batch ingest"
COLUMNS = ("thread_id", "seq", "resource_id", "body", "text_lower", "created_at",
           "created_us", "run_id", "embedding")

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

WRITER = """
import sys, time
from datetime import UTC, datetime
import numpy as np
from memory_core.storage.duckdb import DuckDBStorage
from memory_core.types import AppendRow, Message, RunRecord
path, seconds, tag = sys.argv[1], float(sys.argv[2]), sys.argv[3]
vec = np.ones({dim}, np.float32)
s = DuckDBStorage(path, lock_timeout=60)
s.memory.create_thread(tag, resource_id="r")
end, n = time.monotonic() + seconds, 0
t0 = time.perf_counter()
while time.monotonic() < end:
    rid = f"{{tag}}-{{n}}"
    with s.session():
        s.runs.start_run(RunRecord(run_id=rid, agent="a", thread_id=tag,
                                   started_at=datetime.now(UTC)))
        print("started", rid, time.time(), flush=True)
        for i in range(4):
            s.memory.append_messages(tag, [AppendRow(
                message=Message(content=f"turn {{n}} part {{i}}"), embedding=vec)])
        s.runs.set_run_status(rid, "completed", finished_at=datetime.now(UTC))
    n += 1
print("rate", n / (time.perf_counter() - t0), n, flush=True)
s.close()
"""


def rows(n: int, seed: int = 3) -> list[AppendRow]:
    x = np.random.default_rng(seed).standard_normal((n, DIM), dtype=np.float32)
    return [AppendRow(message=Message(role="user" if i % 2 == 0 else "assistant",
                                      content=f"message {i} about topic {i % 97}"),
                      embedding=x[i]) for i in range(n)]


# -- single appends -------------------------------------------------------------------
def single_appends(storage: Storage, batch: Sequence[AppendRow], *, session: bool) -> float:
    """Appends/s of one row at a time, each committed when the call returns."""
    storage.memory.create_thread("t1", resource_id="r")
    t0 = time.perf_counter()
    if session:
        with storage.session():
            for row in batch:
                storage.memory.append_messages("t1", [row])
    else:
        for row in batch:
            storage.memory.append_messages("t1", [row])
    rate = len(batch) / (time.perf_counter() - t0)
    storage.close()
    return rate


def _columns(batch: Sequence[AppendRow]) -> dict[str, pa.Array]:
    """The rows as the messages table's columns (what ``append_messages`` stores)."""
    n = len(batch)
    now = datetime.now(UTC)
    matrix = np.stack([r.embedding for r in batch if r.embedding is not None])
    return {"thread_id": pa.array(["t1"] * n), "seq": pa.array(np.arange(n)),
            "resource_id": pa.array(["r"] * n),
            "body": pa.array([r.message.canonical_json() for r in batch]),
            "text_lower": pa.array([(r.message.text() or "").lower() for r in batch]),
            "created_at": pa.array([now.isoformat()] * n),
            "created_us": pa.array(np.arange(n)), "run_id": pa.nulls(n, pa.string()),
            "embedding": pa.FixedSizeListArray.from_arrays(pa.array(matrix.ravel()), DIM)}


def bare_single(path: Path, batch: Sequence[AppendRow], *, reconnect: bool) -> float:
    """The same rows as one-row ``INSERT``s, each its own transaction, on a plain
    connection to a fresh file of the same schema (kept open, or opened and closed
    around every row as the storage does without a session)."""
    DuckDBStorage(path).close()  # the schema; no storage holds the file after
    cols = _columns(batch)
    values = [[c[i].as_py() for c in cols.values()] for i in range(len(batch))]
    sql = (f"INSERT INTO messages ({', '.join(COLUMNS)}) VALUES "
           f"({', '.join(['?'] * (len(COLUMNS) - 1))}, ?::FLOAT[])")
    conn = None if reconnect else duckdb.connect(str(path), config=CONFIG)
    t0 = time.perf_counter()
    for v in values:
        c = duckdb.connect(str(path), config=CONFIG) if conn is None else conn
        c.begin()
        c.execute(sql, v)
        c.commit()
        if conn is None:
            c.close()
    rate = len(values) / (time.perf_counter() - t0)
    if conn is not None:
        conn.close()
    return rate


# -- a reader beside a writer -----------------------------------------------------------
def _writer(path: Path, seconds: float, tag: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(WRITER.format(dim=DIM)),
                             str(path), str(seconds), tag], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})


def _rate(out: str) -> float:
    rate = [float(p[1]) for p in (line.split() for line in out.splitlines())
            if p and p[0] == "rate"]
    if not rate:
        raise RuntimeError(f"the writer process failed (its output: {out[-500:]!r})")
    return rate[0]


def with_reader(path: Path, seconds: float) -> dict[str, float]:
    """The writer's runs a second alone, then beside a polling reader; the reader's
    waits and how soon it saw each run."""
    DuckDBStorage(path).close()
    alone, _ = _writer(path, seconds, "alone").communicate(timeout=seconds + 120)
    stop = path.with_suffix(".stop")
    reader = subprocess.Popen([sys.executable, "-c", textwrap.dedent(READER), str(path),
                               str(stop)], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    time.sleep(1.0)  # the reader is polling before the writer starts
    written, _ = _writer(path, seconds, "live").communicate(timeout=seconds + 120)
    stop.write_text("done")
    out, _ = reader.communicate(timeout=300)
    started = {p[1]: float(p[2]) for p in (line.split() for line in written.splitlines())
               if p and p[0] == "started"}
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
    return {"alone": _rate(alone), "rate": _rate(written), "wait_p50": median(waits),
            "wait_max": max(waits), "reads": len(waits),
            "lag_p50": median(lags) if lags else float("nan"),
            "lag_max": max(lags) if lags else float("nan"), "runs": len(started),
            "runs_seen": len(lags), "next_read": sum(b is not None for b in nexts),
            "next_saw": next_saw}


# -- batch ingest -----------------------------------------------------------------------
def batch_ingest(path: Path, batch: list[AppendRow], size: int, *, session: bool) -> float:
    """Rows/s of ``append_messages`` in batches of ``size``, in one ``session()`` (as an
    import holds the file) or without (the file opened and closed by every batch)."""
    s = DuckDBStorage(path)
    s.memory.create_thread("t1", resource_id="r")
    t0 = time.perf_counter()
    with s.session() if session else nullcontext():
        for lo in range(0, len(batch), size):
            s.memory.append_messages("t1", batch[lo:lo + size])
    s.close()
    return len(batch) / (time.perf_counter() - t0)


def bare_arrow(path: Path, batch: list[AppendRow], size: int, *,
               one_transaction: bool = False) -> float:
    """The same rows and columns as one Arrow table a batch, inserted by DuckDB on a
    plain connection, one commit a batch (or all batches in one transaction: DuckDB's
    cheapest way, each full row group written once, straight to the file)."""
    DuckDBStorage(path).close()  # the same schema; no storage holds the file after
    n = len(batch)
    cols = _columns(batch)
    names = ", ".join(cols)
    select = names.replace("embedding", "embedding::FLOAT[]")
    conn = duckdb.connect(str(path), config=CONFIG)
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


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer rows, shorter runs")
    ap.add_argument("--batch", type=int, default=5000)
    ap.add_argument("--write", action="store_true", help="replace the RESULTS.md section")
    args = ap.parse_args(argv)
    n_session, n_open, n_batch, seconds = (500, 100, 20_000, 5.0) if args.quick \
        else (2_000, 300, 100_000, 20.0)
    single, big = rows(n_session), rows(n_batch, seed=5)
    loads = [os.getloadavg()[0]]
    warm = duckdb.connect(config=CONFIG)  # DuckDB's first Arrow scan imports pandas
    warm.register("_warm", pa.table({"a": [1]}))
    warm.close()
    with tempfile.TemporaryDirectory() as d:
        work = Path(d)
        single_rates = {
            "session": single_appends(DuckDBStorage(work / "s.duckdb"), single, session=True),
            "bare": bare_single(work / "sb.duckdb", single, reconnect=False),
            "open": single_appends(DuckDBStorage(work / "o.duckdb"), single[:n_open],
                                   session=False),
            "bare_open": bare_single(work / "ob.duckdb", single[:n_open], reconnect=True),
            "sqlite": single_appends(SQLiteStorage(str(work / "s.sqlite")), single,
                                     session=True)}
        loads.append(os.getloadavg()[0])
        live = with_reader(work / "live.duckdb", seconds)
        loads.append(os.getloadavg()[0])
        ingest = batch_ingest(work / "batch.duckdb", big, args.batch, session=True)
        limit = bare_arrow(work / "bare.duckdb", big, args.batch)
        floor = bare_arrow(work / "bare1.duckdb", big, args.batch, one_transaction=True)
        per_op = batch_ingest(work / "batch2.duckdb", big, args.batch, session=False)
        loads.append(os.getloadavg()[0])
    cmd = ".venv/bin/python -m bench.bench_duckdb_writes" + (" --quick" if args.quick else "")
    body = render((n_session, n_open, n_batch, args.batch, seconds), single_rates, live,
                  (ingest, limit, floor, per_op), loads, cmd)
    print(body)
    if args.write:
        replace_section(TITLE, body)


def render(sizes: tuple[int, int, int, int, float], single: dict[str, float],
           live: dict[str, float], batch: tuple[float, float, float, float],
           loads: Sequence[float], cmd: str) -> str:
    n_session, n_open, n_batch, size, seconds = sizes
    ingest, limit, floor, per_op = batch
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    intro = (__doc__ or "").split("\n\n", 1)[1].split("Run:")[0].strip()
    ratio = ingest / limit
    lines = [
        intro, "",
        f"Rerun: `{cmd} --write` · machine: {os.cpu_count()} cores, {platform.machine()}, "
        f"duckdb {duckdb.__version__}, pyarrow {pa.__version__} · {when} · 1-minute load "
        f"average {min(loads):.1f}–{max(loads):.1f} over the run (the machine is shared: "
        "compare the ratios)", "",
        "| measure | ours | limit (same run) | ours ÷ limit | target |",
        "|---|---:|---:|---:|---|",
        f"| single-message appends/s, in a `session()` ({n_session:,}) | "
        f"{single['session']:,.0f} | {single['bare']:,.0f} bare one-row `INSERT` + commit "
        f"| {single['session'] / single['bare']:.2f}× | |",
        f"| single-message appends/s, no session: the file opened per append "
        f"({n_open:,}) | {single['open']:,.0f} | {single['bare_open']:,.0f} bare connect "
        f"+ `INSERT` + commit + close | {single['open'] / single['bare_open']:.2f}× | |",
        f"| the same appends in a `session()` on SQLite ({n_session:,}) | "
        f"{single['sqlite']:,.0f} | | | |",
        f"| writer's runs/s (a session a run: `start_run`, 4 appends, status), reader "
        f"polling, {seconds:.0f} s | {live['rate']:,.1f} | {live['alone']:,.1f} with no "
        f"reader | {live['rate'] / live['alone']:.2f}× | |",
        f"| reader's wait for the file, p50 / max s ({live['reads']:.0f} reads) | "
        f"{live['wait_p50']:.2f} / {live['wait_max']:.2f} | | | ≤ 1 s |",
        f"| a new run seen by the reader after, p50 / max s ({live['runs_seen']:.0f} of "
        f"{live['runs']:.0f} runs) | {live['lag_p50']:.2f} / {live['lag_max']:.2f} | | | "
        "≤ 2 s |",
        f"| runs seen by the first read begun after `start_run` returned (the rest of "
        f"\"seen\" is the reader's poll interval, 1 s) | {live['next_saw']:.0f} of "
        f"{live['next_read']:.0f} | | | all |",
        f"| batch ingest rows/s ({n_batch:,}, batches of {size:,}, 384-d vectors, one "
        f"`session()`) | "
        f"{ingest:,.0f} | {limit:,.0f} bare Arrow `INSERT`, a commit a batch | "
        f"{ratio:.2f}× | ≥ 0.8×: {'met' if ratio >= 0.8 else '**not met**'} |",
        f"| the same, against the bare `INSERT`s of every batch in one transaction | "
        f"{ingest:,.0f} | {floor:,.0f} | {ingest / floor:.2f}× | |",
        f"| batch ingest without a session (the file opened and closed by every batch) | "
        f"{per_op:,.0f} | {limit:,.0f} | {per_op / limit:.2f}× | |",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
