"""What-if speed: past runs of the 5,000-run benchmark database re-composed as of their
time under a changed recall setting, without a model, timed side by side with the limit
— the same runs composed once with their own settings (what a what-if must at least do).

Rerun: .venv/bin/python -m bench.bench_whatif [--db URL] [--runs 1000] [--write]
(without --db a 5,000-run SQLite database is built in a temporary folder first, ~25 s)
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from bench.results import replace_section
from bench.runs_db import build_runs_db
from memory_core.analysis.whatif import _Composer, parse_changes, runs_in_scope, what_if
from memory_core.journal import load_run
from memory_core.storage.url import open_storage

SECTION = "What if: re-composing past runs"
CHANGE = ["recall.threshold=0.05", "recall.top_k=5"]


def measure(url: str, n_runs: int) -> dict[str, float | int]:
    storage = open_storage(url)
    try:
        ids = runs_in_scope(storage)[:n_runs]
        # the limit: each run composed once with its own settings (its record read too)
        composer = _Composer(storage, None)
        start = time.perf_counter()
        with storage.session():
            for run_id in ids:
                data = load_run(storage, run_id)
                if data.memctx is not None and data.memctx.source == "composed":
                    composer.compose(data, data.memctx.settings)
        limit = time.perf_counter() - start
        start = time.perf_counter()
        report = what_if(storage, parse_changes(CHANGE), run_ids=ids)
        took = time.perf_counter() - start
    finally:
        storage.close()
    return {"runs": len(ids), "seconds": took, "limit": limit,
            "changed": report.count("changed"), "cannot": report.count("cannot")}


def render(m: dict[str, float | int], url: str, load: float) -> str:
    verdict = "met" if m["runs"] >= 1000 and m["seconds"] <= 10 else "not met"
    return (
        f"`what_if` over the first {m['runs']:,} runs (oldest first) of the benchmark "
        f"database (bench/runs_db.py: 5,000 Runner runs, hashing embedder, hybrid recall), "
        f"changing {', '.join(CHANGE)}; no model. Each run is composed twice (its own "
        "settings, checked against its record, then the changed ones). The limit beside "
        "it: the same runs composed once with their own settings, records read.\n\n"
        f"Rerun: `.venv/bin/python -m bench.bench_whatif --write` · {url.split('://')[0]} · "
        f"2 cores, 1-minute load {load:.1f} · "
        f"{datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}\n\n"
        "| runs | what-if s | per run ms | limit s | ratio | changed | cannot | target "
        "(≥ 1,000 runs in ≤ 10 s) |\n|---:|---:|---:|---:|---:|---:|---:|---|\n"
        f"| {m['runs']:,} | {m['seconds']:.2f} | {1000 * m['seconds'] / max(1, m['runs']):.2f}"
        f" | {m['limit']:.2f} | {m['seconds'] / max(m['limit'], 1e-9):.2f}× | {m['changed']}"
        f" | {m['cannot']} | {verdict} |\n")


def cli(argv: Sequence[str] | None = None) -> dict[str, float | int]:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", help="an existing benchmark database (storage URL or path)")
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--write", action="store_true", help="update bench/RESULTS.md")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        url = args.db
        if url is None:
            url = f"sqlite:///{Path(tmp) / 'runs5k.sqlite'}"
            build_runs_db(url, 5000)
        m = measure(url, args.runs)
        text = render(m, url, os.getloadavg()[0])
    print(text)
    if args.write:
        replace_section(SECTION, text)
    return m


if __name__ == "__main__":
    cli()
