"""Workbench page speed in headless Chromium: the seconds each page takes to settle
(the page's title shown and Streamlit's script state ``notRunning``, with no rerun
following), cold (a fresh ``streamlit run`` server and a fresh browser context) and warm
(the same context opening the page again), on a many-run database built by the Runner
(bench/runs_db.py) and on the demo database, beside the empty Threads page measured the
same way (the baseline the ratios are against).

Run: ``.venv/bin/python -m bench.bench_pages --db5k /tmp/runs5k.duckdb
--demo sample_data/out/demo.duckdb --write`` (``--build`` builds the 5,000-run file when
it is missing). Targets (issue 15 point 8): warm ≤ 1 s, cold ≤ 3 s.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from bench.results import replace_section

SETTLE_TIMEOUT_S = 120.0
QUIET_S = 0.5  # no rerun may start within this long after the page settled
VIEWPORT = {"width": 1400, "height": 2400}
SECTION = "Workbench: page speed in Chromium"
WARM_TARGET, COLD_TARGET = 1.0, 3.0


@dataclass(frozen=True)
class PageCase:
    name: str
    path: str  # url path
    title: str  # the page's st.title
    query: dict[str, str]


def cases(db: Path, *, story: bool) -> list[PageCase]:
    """The pages, opened on the thread with the most runs and its last run (the one
    before it for Compare), as the database's records say."""
    from memory_core.storage.duckdb import DuckDBStorage

    storage = DuckDBStorage(str(db), read_only=True)
    try:
        runs = [r for r in storage.runs.list_runs() if r.thread_id]
    finally:
        storage.close()
    by_thread: dict[str, list[str]] = {}
    for r in runs:
        by_thread.setdefault(str(r.thread_id), []).append(r.run_id)
    thread = max(by_thread, key=lambda t: len(by_thread[t]))
    last, prev = by_thread[thread][-1], by_thread[thread][-2]
    out = [PageCase("Threads", "threads", "Threads", {"thread": thread}),
           PageCase("Run inspector", "run", "Run inspector", {"run": last}),
           PageCase("Compare", "compare", "Compare runs", {"a": prev, "b": last}),
           PageCase("Counterfactual", "counterfactual", "Counterfactual replay",
                    {"run": last}),
           PageCase("Why forgotten", "why", "Why forgotten", {"run": last}),
           PageCase("Timeline", "timeline", "Composition timeline", {"thread": thread})]
    if story:
        out.append(PageCase("Story", "story", "", {}))
    return out


def _script_state(page: Any) -> str | None:
    value = page.get_attribute('[data-testid="stApp"]', "data-test-script-state")
    return str(value) if value is not None else None


def settle(page: Any, title: str, start: float) -> float:
    """Seconds from ``start`` until the page shows its title (any h1 when ``title`` is
    empty) and Streamlit is not running, with no rerun within QUIET_S after."""
    heading = page.locator("h1", has_text=title) if title else page.locator("h1")
    deadline = start + SETTLE_TIMEOUT_S
    settled: float | None = None
    while time.perf_counter() < deadline:
        state = _script_state(page)
        if state == "notRunning" and heading.count() > 0:
            if settled is None:
                settled = time.perf_counter()
            elif time.perf_counter() - settled >= QUIET_S:
                return settled - start
        else:
            settled = None
        page.wait_for_timeout(25)
    raise SystemExit(f"page {page.url} did not settle within {SETTLE_TIMEOUT_S:g} s")


def _check(page: Any, case: PageCase) -> None:
    # a fast error page would be a meaningless number
    if page.locator('[data-testid="stException"]').count():
        raise SystemExit(f"{case.name} raised: {page.locator('[data-testid=stException]').first.inner_text()[:400]}")


def open_timed(context: Any, base: str, case: PageCase, db_name: str) -> tuple[float, Any]:
    page = context.new_page()
    url = f"{base}/{case.path}?{urlencode({**case.query, 'db': db_name})}"
    start = time.perf_counter()
    page.goto(url, wait_until="commit")
    seconds = settle(page, case.title, start)
    _check(page, case)
    return seconds, page


def _screenshot(page: Any, path: Path) -> None:
    """A screenshot to look at afterwards; a slow one under load is skipped, it is no
    part of the measure."""
    try:
        page.screenshot(path=str(path), timeout=60_000)
    except Exception as e:  # noqa: BLE001
        print(f"[bench_pages] no screenshot {path.name}: {e}", flush=True)


@dataclass
class Measure:
    cold: list[float]
    warm: list[float]


def measure_db(db: Path, case_list: list[PageCase], browser: Any, workdir: Path,
               warm_repeat: int) -> dict[str, Measure]:
    """Each page cold (its own fresh server, fresh context) then warm (reopened in the
    same context, ``warm_repeat`` times)."""
    from tests.browser.server import serve

    out: dict[str, Measure] = {}
    for case in case_list:
        with serve(["--db", str(db)], workdir) as base:
            context = browser.new_context(viewport=VIEWPORT)
            try:
                cold, page = open_timed(context, base, case, db.stem)
                _screenshot(page, workdir / f"{db.stem}-{case.path}.png")
                page.close()
                warm = []
                for _ in range(warm_repeat):
                    seconds, page = open_timed(context, base, case, db.stem)
                    warm.append(seconds)
                    page.close()
            finally:
                context.close()
        out[case.name] = Measure([cold], warm)
        print(f"[bench_pages] {db.name} {case.name}: cold {cold:.2f} s, warm "
              f"{statistics.median(warm):.2f} s", flush=True)
    return out


def _empty_db(workdir: Path) -> Path:
    from memory_core.storage.duckdb import DuckDBStorage

    path = workdir / "empty.duckdb"
    DuckDBStorage(str(path)).close()
    return path


def run(db5k: Path, demo: Path | None, *, warm_repeat: int = 3, write: bool = False,
        shots: Path | None = None, only: Sequence[str] = ()) -> str:
    from tests.browser.server import chromium

    workdir = shots or Path(tempfile.mkdtemp(prefix="memwb-bench-pages-"))
    workdir.mkdir(parents=True, exist_ok=True)
    empty = _empty_db(workdir)
    results: dict[str, dict[str, Measure]] = {}

    def cases_of(db: Path, story: bool) -> list[PageCase]:
        return [c for c in cases(db, story=story) if not only or c.name in only]

    load0 = os.getloadavg()[0]
    with chromium() as browser:
        base_case = [PageCase("Threads (empty database)", "threads", "Threads", {})]
        results["baseline"] = measure_db(empty, base_case, browser, workdir, warm_repeat)
        results[db5k.name] = measure_db(db5k, cases_of(db5k, False), browser, workdir,
                                        warm_repeat)
        if demo is not None:
            results[demo.name] = measure_db(demo, cases_of(demo, True), browser,
                                            workdir, warm_repeat)
        again = measure_db(empty, base_case, browser, workdir, warm_repeat)
    base = results["baseline"]["Threads (empty database)"]
    base.cold += again["Threads (empty database)"].cold
    base.warm += again["Threads (empty database)"].warm
    load = max(load0, os.getloadavg()[0])
    text = render(results, db5k, demo, warm_repeat, load)
    print(text)
    if write:
        replace_section(SECTION, text)
    return text


def _runs_in(db: Path) -> int:
    from memory_core.storage.duckdb import DuckDBStorage

    storage = DuckDBStorage(str(db), read_only=True)
    try:
        return len(storage.runs.list_runs())
    finally:
        storage.close()


def render(results: dict[str, dict[str, Measure]], db5k: Path, demo: Path | None,
           warm_repeat: int, load: float) -> str:
    base = results.pop("baseline")["Threads (empty database)"]
    b_cold, b_warm = statistics.median(base.cold), statistics.median(base.warm)
    lines = [
        "Each page opened in headless Debian Chromium (tests/browser/server.py) on a "
        "`streamlit run` server over loopback, timed from `goto` until the page's title "
        f"is shown and Streamlit's script state is `notRunning` with no rerun within "
        f"{QUIET_S:g} s. **cold** = a fresh server and a fresh browser context (first "
        f"script run: imports, opening the file, every read); **warm** = the same "
        f"context opening the page again (median of {warm_repeat}). Baseline: the "
        "Threads page of an empty DuckDB file measured the same way, before and after "
        f"(cold {b_cold:.2f} s, warm {b_warm:.2f} s). Targets (issue 15 point 8): warm "
        f"≤ {WARM_TARGET:g} s, cold ≤ {COLD_TARGET:g} s.",
        "",
        f"Rerun: `.venv/bin/python -m bench.bench_pages --db5k {db5k} "
        f"{'--demo ' + str(demo) + ' ' if demo else ''}--write` (build the many-run "
        "file first with `.venv/bin/python -m bench.runs_db --out <file> --runs 5000`, "
        "the demo with `make demo`) · machine: "
        f"{os.cpu_count()} cores, {platform.processor() or platform.machine()}, "
        f"1-minute load {load:.1f} (shared with other jobs) · "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        "",
        "| database | page | cold s | ×baseline | warm s | ×baseline | targets |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for db_name, pages in results.items():
        label = db_name
        if db_name == db5k.name:
            label = f"{db_name} ({_runs_in(db5k):,} runs)"
        for page, m in pages.items():
            cold, warm = statistics.median(m.cold), statistics.median(m.warm)
            ok = ("met" if cold <= COLD_TARGET and warm <= WARM_TARGET else
                  "cold over" if warm <= WARM_TARGET else
                  "warm over" if cold <= COLD_TARGET else "both over")
            lines.append(f"| {label} | {page} | {cold:.2f} | {cold / b_cold:.2f}× | "
                         f"{warm:.2f} | {warm / b_warm:.2f}× | {ok} |")
    return "\n".join(lines)


def cli(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db5k", required=True, type=Path, help="the many-run DuckDB file")
    ap.add_argument("--build", action="store_true",
                    help="build --db5k with bench.runs_db (5,000 runs) when missing")
    ap.add_argument("--demo", type=Path, default=None, help="the demo database")
    ap.add_argument("--warm", type=int, default=3, help="warm opens per page")
    ap.add_argument("--shots", type=Path, default=None, help="keep screenshots here")
    ap.add_argument("--pages", nargs="*", default=[],
                    help="only these pages (e.g. Threads 'Why forgotten'); never with --write")
    ap.add_argument("--write", action="store_true", help="update bench/RESULTS.md")
    args = ap.parse_args(argv)
    if args.pages and args.write:
        ap.error("--pages measures a subset: it does not replace the RESULTS.md section")
    if not args.db5k.exists():
        if not args.build:
            raise SystemExit(f"{args.db5k} does not exist (pass --build to build it)")
        from bench.runs_db import cli as build

        build(["--out", str(args.db5k), "--runs", "5000"])
    run(args.db5k, args.demo, warm_repeat=args.warm, write=args.write, shots=args.shots,
        only=args.pages)


if __name__ == "__main__":
    cli()
