"""Workbench render time: the run inspector for a run in a 10,000-message thread, in
AppTest, against rendering the Threads page of an empty database in the same process.

Run: ``.venv/bin/python -m bench.bench_inspector`` (10,000 messages) or ``--quick``
(2,000); ``--write`` replaces this benchmark's section of bench/RESULTS.md. The target
(issue 6) is a render within 1 s on this machine.
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.results import replace_section
from memory_core.composition.memory import AgentMemory
from memory_core.embedding.hashing import HashingEmbedder
from memory_core.models.scripted import ScriptedModel
from memory_core.recall.config import RecallConfig
from memory_core.runs.runner import Agent, Runner
from memory_core.storage.duckdb import DuckDBStorage
from memory_core.types import Message

ENTRY = Path(__file__).resolve().parents[1] / "app" / "streamlit_app.py"
THREAD = "long-thread"
RESOURCE = "bench-user"
RUN_ID = "run-long"
T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
TOPICS = ("refund", "parcel", "invoice", "password", "shipping", "discount", "warranty",
          "address", "subscription", "delivery")
TIMEOUT = 120


class Tick:
    """A clock that advances one second per call (deterministic timestamps)."""

    def __init__(self) -> None:
        self.t = T0

    def __call__(self) -> datetime:
        self.t += timedelta(seconds=1)
        return self.t


def _text(i: int) -> str:
    topic = TOPICS[i % len(TOPICS)]
    if i % 2 == 0:
        return f"Question {i}: what is the status of my {topic} for order #{i % 313}?"
    return f"Answer {i}: the {topic} for order #{(i - 1) % 313} is being handled today."


def build_database(path: Path, n_messages: int) -> None:
    """One thread of ``n_messages`` messages written through AgentMemory, then one
    Runner run on it (ScriptedModel, HashingEmbedder, recall on the thread)."""
    clock = Tick()
    storage = DuckDBStorage(str(path), clock=clock)
    try:
        with storage.session():
            memory = AgentMemory(storage, embed=HashingEmbedder(dim=384), recent_n=6,
                                 recall=RecallConfig(top_k=5, message_range=1,
                                                     near_misses=5, mode="hybrid"),
                                 clock=clock)
            for lo in range(0, n_messages, 500):
                hi = min(n_messages, lo + 500)
                memory.append(THREAD, [Message(role="user" if i % 2 == 0 else "assistant",
                                               content=_text(i)) for i in range(lo, hi)],
                              RESOURCE)
            agent = Agent(name="support", instructions="Answer from the conversation.",
                          model=ScriptedModel(["Your refund for order #17 was approved."]))
            runner = Runner(storage, {"support": agent}, memory=memory, clock=clock)
            runner.run("support", run_id=RUN_ID, thread_id=THREAD, resource_id=RESOURCE,
                       prompt="What happened to the refund for order #17?")
    finally:
        storage.close()


def build_empty(path: Path) -> None:
    DuckDBStorage(str(path)).close()


# -- timing -------------------------------------------------------------------------------
def _quiet_streamlit() -> None:
    # clearing caches outside a script run logs a "no runtime" warning each time
    for name in list(logging.root.manager.loggerDict):
        if name.startswith("streamlit"):
            logging.getLogger(name).setLevel(logging.ERROR)


def _clear_caches() -> None:
    from app import services

    _quiet_streamlit()
    # what Refresh does: the next render reopens the database and re-reads everything
    services.refresh()


def _render(db: Path, query: dict[str, str]) -> tuple[float, float, object]:
    """A fresh session on ``db`` with the given URL query: seconds of the first
    render (caches cleared) and of a second, cached render of the same session."""
    from streamlit.testing.v1 import AppTest

    os.environ["MEMWB_DB"] = str(db)
    _clear_caches()
    at = AppTest.from_file(str(ENTRY), default_timeout=TIMEOUT)
    at.query_params.update(query)
    start = time.perf_counter()
    at.run()
    first = time.perf_counter() - start
    _check(at, query)
    start = time.perf_counter()
    at.run()
    cached = time.perf_counter() - start
    _check(at, query)
    return first, cached, at


def _check(at: object, query: dict[str, str]) -> None:
    # a fast render of an error page would be a meaningless number
    if at.exception or at.error:  # type: ignore[attr-defined]
        raise SystemExit(f"render failed: {[e.value for e in at.exception]} "  # type: ignore[attr-defined]
                         f"{[e.value for e in at.error]}")  # type: ignore[attr-defined]
    if "run" in query:
        labels = [t.label for t in at.tabs]  # type: ignore[attr-defined]
        if not any(label.startswith("Recalled (") for label in labels):
            raise SystemExit(f"the run inspector showed no lanes: tabs {labels}")


@dataclass
class Timing:
    first: list[float]
    cached: list[float]

    def p50(self, which: str) -> float:
        values: list[float] = getattr(self, which)
        return float(statistics.median(values))


def measure(db: Path, empty: Path, repeat: int) -> tuple[Timing, Timing, list[str]]:
    """Inspector and baseline renders, interleaved so load drift hits both alike."""
    _render(empty, {})  # warm imports (streamlit, plotly, pandas) before timing anything
    _render(db, {"run": RUN_ID})
    insp = Timing([], [])
    base = Timing([], [])
    tabs: list[str] = []
    for _ in range(repeat):
        f, c, _at = _render(empty, {})
        base.first.append(f)
        base.cached.append(c)
        f, c, at = _render(db, {"run": RUN_ID})
        insp.first.append(f)
        insp.cached.append(c)
        tabs = [t.label for t in at.tabs]  # type: ignore[attr-defined]
    return insp, base, tabs


def _timed(fn: Callable[[], None]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def run(quick: bool = False, *, write: bool = False, n: int | None = None,
        repeat: int | None = None) -> dict[str, float]:
    n = n or (2_000 if quick else 10_000)
    repeat = repeat or (3 if quick else 5)
    workdir = Path(tempfile.mkdtemp(prefix="memwb-bench-inspector-"))
    try:
        db = workdir / "long.duckdb"
        empty = workdir / "empty.duckdb"
        build_s = _timed(lambda: build_database(db, n))
        build_empty(empty)
        print(f"[bench_inspector] built {n:,}-message thread in {build_s:.1f} s", flush=True)
        load0 = os.getloadavg()[0]
        insp, base, tabs = measure(db, empty, repeat)
        load = max(load0, os.getloadavg()[0])
    finally:
        os.environ.pop("MEMWB_DB", None)
        shutil.rmtree(workdir, ignore_errors=True)
    row = {"n": float(n), "first": insp.p50("first"), "cached": insp.p50("cached"),
           "base_first": base.p50("first"), "base_cached": base.p50("cached"),
           "first_max": max(insp.first), "load": load}
    text = render(row, quick, repeat, tabs)
    print(text)
    if write:
        replace_section(section_title(n), text)
    return row


def section_title(n: int) -> str:
    return f"Workbench: run inspector on a {n:,}-message thread"


def render(r: dict[str, float], quick: bool, repeat: int, tabs: Sequence[str]) -> str:
    verdict = "within" if r["first"] <= 1.0 else "over"
    return "\n".join([
        f"`AppTest.from_file(\"app/streamlit_app.py\")` with `?run={RUN_ID}` on a DuckDB "
        f"file (opened read-only, as the workbench does) holding one thread of "
        f"{int(r['n']):,} messages written through `AgentMemory` (HashingEmbedder, 384-d) "
        "and one `Runner` run on it (ScriptedModel, hybrid recall top-5, ±1 neighbours). "
        "`first` = a new session after Refresh (caches cleared: the file is reopened, "
        "the run's journal and the thread's runs re-read); `cached` = the same session "
        "rendered again. Baseline: the Threads page of an empty DuckDB file, same "
        f"process, interleaved. Medians of {repeat}; `at.run()` only (script parse "
        f"excluded). Lanes shown: {', '.join(tabs)}.",
        "",
        f"Rerun: `.venv/bin/python -m bench.bench_inspector{' --quick' if quick else ''} "
        f"--write` · machine: {os.cpu_count()} cores, "
        f"{platform.processor() or platform.machine()} · "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        "",
        "| render | run inspector s | empty Threads page s | ratio |",
        "|---|---:|---:|---:|",
        f"| first (after Refresh) | {r['first']:.3f} | {r['base_first']:.3f} | "
        f"{r['first'] / r['base_first']:.2f}× |",
        f"| cached (same session) | {r['cached']:.3f} | {r['base_cached']:.3f} | "
        f"{r['cached'] / r['base_cached']:.2f}× |",
        "",
        f"Target (issue 6): within 1 s — the first render is {verdict} it "
        f"({r['first']:.2f} s median, {r['first_max']:.2f} s worst); 1-minute load "
        f"average {r['load']:.1f} on a machine shared with other jobs.",
    ])


def main(quick: bool = False, *, write: bool = False) -> None:
    """Entry point for bench.run_all."""
    run(quick, write=write)


def cli(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="2,000 messages instead of 10,000")
    ap.add_argument("--write", action="store_true", help="update bench/RESULTS.md")
    ap.add_argument("--messages", type=int, default=None, help="thread length")
    ap.add_argument("--repeat", type=int, default=None, help="renders per measurement")
    args = ap.parse_args(argv)
    run(args.quick, write=args.write, n=args.messages, repeat=args.repeat)


if __name__ == "__main__":
    cli()
