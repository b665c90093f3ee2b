"""The demo build as ``memwb demo`` runs it (issue 36.8): ``python -m sample_data.build``
with all-MiniLM-L6-v2 and the offline reader into a new DuckDB file, with an empty
embedding cache, as a whole process — beside, in turn in the same rounds:

- the build of an earlier commit (``--before COMMIT``, default the commit before the
  speed-up), checked out with ``git archive`` into a temporary folder and run with this
  interpreter;
- for reference, the model's floor: a process that imports the model's libraries, loads
  the model and embeds one text. A build before the demo's vectors were shipped paid it
  before its first run; the build now pays it only if a text misses the shipped vectors
  (the column "model texts" counts the texts the build had the model embed).

Per process: wall seconds, CPU seconds (user + system, of that child) and its peak RSS;
medians over the rounds, the ratios before/now taken round by round (so a comparison
holds while the machine's load drifts), the load average noted. Target (issue 36.8): the
build at least twice as fast as before, in wall and CPU time.

Run: ``.venv/bin/python -m bench.bench_demo [--rounds N] [--before COMMIT] [--write]``.
"""

from __future__ import annotations

import argparse
import io
import os
import platform
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from statistics import median

from bench.results import replace_section

ROOT = Path(__file__).resolve().parents[1]
TITLE = "Demo build"
BEFORE = "046d67f"  # the last commit before the demo build was sped up
EARLIER = ("Earlier figures (before issue 36.8, `time memwb demo`): four scenarios (169 "
           "runs) 27 s idle, 141–210 s with 8 other jobs on the 2 cores; five scenarios "
           "(211 runs) 943 s overloaded (load 17–27), 22 s wall and 25.9 s user CPU "
           "quiet (issue 36.8's own measure).")
WHERE = ("Where the time went (cProfile of the build, load ~10 on 2 cores): before, 456 s "
         "of 528 s in 416 MiniLM calls of 1–3 texts each (each stored message, each "
         "recall query, a miss every time), every torch operation split over two "
         "threads that wait for a core on a busy machine (layer norm 15 ms a call), and "
         "a durable SQLite commit of the embedding cache after each call (15 s). Then "
         "(decision 010): the scenarios' 392 texts embedded up front in batches of 64 on "
         "one torch thread, 25 model calls in all — but still the model's floor (imports "
         "of torch and sentence-transformers ~6 s, loading, encoding ~5 s) on every "
         "build. Now: the vector of every text the build embeds (392 up front, 33 the "
         "reader and an observation embed as the runs go) ships with the demo "
         "(sample_data/demo_vectors.npz, recorded from a build with the model); the "
         "build primes the embedder with them and never imports torch. What is left: "
         "the runs' composition and DuckDB statements (~6,000, 930 transactions). The "
         "database holds the same runs, messages, vectors, answers, recall sets, fates "
         "and seals as the build with the model (docs/decisions/010-demo-build-speed.md).")
FLOOR = ("from memory_core.embedding.minilm import MiniLMEmbedder; "
         "MiniLMEmbedder(threads=1)(['the floor: one text'])")


MODEL_TEXTS = re.compile(r"(\d+) embedded by the model|the model embedded (\d+) texts")


@dataclass(frozen=True)
class Run:
    wall: float
    cpu: float
    rss_mb: float
    model_texts: int | None  # texts the build had the model embed, when its progress says


def timed(cmd: Sequence[str], cwd: Path) -> Run:
    """One run of ``cmd`` from ``cwd`` (importing from there first), offline."""
    env = {**os.environ, "PYTHONPATH": str(cwd), "HF_HUB_OFFLINE": "1"}
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                                stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            raise SystemExit(f"{' '.join(cmd)} (in {cwd}) failed: "
                             f"{err.read().decode(errors='replace')[-800:]}")
        err.seek(0)
        said = [int(a or b) for a, b in MODEL_TEXTS.findall(err.read().decode(errors="replace"))]
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024,
               max(said) if said else None)


def build_cmd(db: Path) -> list[str]:
    return [sys.executable, "-m", "sample_data.build", "--db", str(db),
            "--embedder", "minilm", "--model", "reader"]


def checkout(commit: str, into: Path) -> Path:
    """The tree of ``commit`` written into ``into`` (no worktree left behind)."""
    tar = subprocess.run(["git", "archive", "--format=tar", commit], cwd=ROOT,
                         capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        t.extractall(into, filter="data")
    return into


def measure(rounds: int, before: str | None) -> tuple[dict[str, list[Run]], list[float]]:
    """The runs of each process, and the load average (1 min) after each round."""
    out: dict[str, list[Run]] = {"after": [], "before": [], "floor": []}
    loads: list[float] = []
    with tempfile.TemporaryDirectory(prefix="bench-demo-") as tmp:
        old = checkout(before, Path(tmp) / "before") if before else None
        for r in range(rounds):
            # a new folder each build: a new file and an empty embedding cache
            out["after"].append(timed(build_cmd(Path(tmp) / f"after{r}" / "demo.duckdb"),
                                      ROOT))
            if old is not None:
                out["before"].append(timed(build_cmd(Path(tmp) / f"before{r}" / "demo.duckdb"),
                                           old))
            out["floor"].append(timed([sys.executable, "-c", FLOOR], ROOT))
            loads.append(os.getloadavg()[0])
            print(f"round {r + 1}: " + ", ".join(
                f"{k} {v[-1].wall:.1f} s wall {v[-1].cpu:.1f} s cpu" for k, v in out.items()
                if v) + f", load {loads[-1]:.1f}", flush=True)
    return out, loads


def report(runs: dict[str, list[Run]], before: str | None, loads: list[float]) -> str:
    def row(name: str, what: str) -> str:
        rs = runs[name]
        texts = {r.model_texts for r in rs}
        said = "–" if texts == {None} else "/".join(str(t) for t in sorted(texts, key=str))
        return (f"| {what} | {median(r.wall for r in rs):.1f} | "
                f"{median(r.cpu for r in rs):.1f} | {max(r.rss_mb for r in rs):.0f} | "
                f"{said} |")

    lines = ["| process (median) | wall s | cpu s | peak RSS MB | model texts |",
             "|---|---:|---:|---:|---:|", row("after", "the build (now)")]
    if runs["before"]:
        lines.append(row("before", f"the build at `{before}` (before)"))
    lines.append(row("floor", "for reference, the model's floor: import, load, embed one "
                              "text (the build now pays it only on a miss)"))
    if runs["before"]:
        lines += ["", "| round | load after | wall before/now | CPU before/now |",
                  "|---:|---:|---:|---:|"]
        for i, (b, a) in enumerate(zip(runs["before"], runs["after"], strict=True)):
            lines.append(f"| {i + 1} | {loads[i]:.1f} | {b.wall / a.wall:.1f}× | "
                         f"{b.cpu / a.cpu:.1f}× |")
        pairs = list(zip(runs["before"], runs["after"], strict=True))
        wall = median(b.wall / a.wall for b, a in pairs)
        cpu = median(b.cpu / a.cpu for b, a in pairs)
        verdict = "met" if min(wall, cpu) >= 2 else "**not met**"
        lines += ["", f"Before/now, round by round (median): **{wall:.1f}× wall, "
                      f"{cpu:.1f}× CPU** — target ≥ 2× in both: {verdict} at this load."]
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    head = (f"Rerun: `.venv/bin/python -m bench.bench_demo --rounds {len(loads)} --before "
            f"{before or BEFORE} --write` · machine: {os.cpu_count()} cores, "
            f"{platform.machine()}, Python {platform.python_version()} · {when} · "
            f"load average (1 min) {min(loads):.1f}–{max(loads):.1f} · each round: build "
            "now, build before, the model's floor")
    return "\n".join([__doc__.split("\n\nRun:")[0].strip(), "", head, "", *lines, "",
                      WHERE, "", EARLIER])


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3, help="rounds (default 3)")
    ap.add_argument("--before", default=BEFORE,
                    help=f"the commit to compare with (default {BEFORE}); '' for none")
    ap.add_argument("--write", action="store_true", help="update bench/RESULTS.md")
    args = ap.parse_args(argv)
    if args.rounds < 1:
        ap.error(f"--rounds must be at least 1, got {args.rounds}")
    runs, loads = measure(args.rounds, args.before or None)
    body = report(runs, args.before or None, loads)
    print(body)
    if args.write:
        replace_section(TITLE, body)


if __name__ == "__main__":
    main()
