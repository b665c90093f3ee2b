"""Workbench page speed in headless Chromium: the seconds each page takes to settle
(the page's title shown and Streamlit's script state ``notRunning``, with no rerun
following), on a many-run database built by the Runner (bench/runs_db.py) and on the demo
database, beside Streamlit's own floor (a page showing one title) and the empty Threads
page measured the same way (the baseline the ratios are against).

- **start-up**: a fresh ``streamlit run`` server until its first visitor's Start page
  settles (Streamlit's import, ours, opening the database, the first script run); its
  own row, once per database.
- **cold**: a new visitor — a fresh browser context — opening the page on that running
  server, once every cached read of the pages before it has expired
  (services.CACHE_TTL_SECONDS): the page's own imports and every read it makes.
- **warm**: the same context opening the page again (median of ``--warm``).

Run: ``.venv/bin/python -m bench.bench_pages --db5k /tmp/runs5k.duckdb
--demo sample_data/out/demo.duckdb --write`` (``--build`` builds the 5,000-run file when
it is missing; ``--notes FILE`` appends that text to the section). Targets (issue 15
point 8): warm ≤ 1 s, cold ≤ 3 s.
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
        text = page.locator('[data-testid="stException"]').first.inner_text()[:400]
        raise SystemExit(f"{case.name} raised: {text}")


def open_timed(context: Any, base: str, case: PageCase, db_name: str | None, *,
               since: float | None = None) -> tuple[float, Any]:
    """Seconds until the page settles, from ``goto`` (or from ``since``)."""
    page = context.new_page()
    query = {**case.query, **({"db": db_name} if db_name else {})}
    url = f"{base}/{case.path}" + (f"?{urlencode(query)}" if query else "")
    start = time.perf_counter() if since is None else since
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


START = PageCase("Start page (server start-up)", "", "Memory Workbench", {})
EMPTY_PAGE = "import streamlit as st\n\nst.title(\"Empty\")\n"


def _expire_caches(last_open: float) -> None:
    """Wait until every read cached by the pages opened before has expired, so the next
    page's cold open reads everything it shows."""
    import logging

    logging.getLogger("streamlit").setLevel(logging.ERROR)  # no runtime here: quiet
    from app.services import CACHE_TTL_SECONDS

    wait = last_open + CACHE_TTL_SECONDS + 1.0 - time.perf_counter()
    if wait > 0:
        time.sleep(wait)


def _warm(context: Any, base: str, case: PageCase, db_name: str | None,
          repeat: int) -> list[float]:
    warm = []
    for _ in range(repeat):
        seconds, page = open_timed(context, base, case, db_name)
        warm.append(seconds)
        page.close()
    return warm


def measure_db(db: Path | None, case_list: list[PageCase], browser: Any, workdir: Path,
               warm_repeat: int, *, script: Path | None = None) -> dict[str, Measure]:
    """One fresh server for ``db``: its start-up (the first visitor's Start page, or
    ``script``'s page), then each page cold (a new context, once the reads cached before
    have expired) and warm (reopened in that context, ``warm_repeat`` times)."""
    from tests.browser.server import serve

    out: dict[str, Measure] = {}
    name = db.stem if db is not None else None
    first = START if script is None else PageCase("Streamlit floor (one st.title)", "",
                                                   "Empty", {})
    spawned = time.perf_counter()
    with serve(["--db", str(db)] if db is not None else [], workdir, script=script) as base:
        context = browser.new_context(viewport=VIEWPORT)
        try:
            start_up, page = open_timed(context, base, first, name, since=spawned)
            page.close()
            out[first.name] = Measure([start_up], _warm(context, base, first, name,
                                                        warm_repeat))
        finally:
            context.close()
        last = time.perf_counter()
        for case in case_list:
            _expire_caches(last)
            context = browser.new_context(viewport=VIEWPORT)
            try:
                cold, page = open_timed(context, base, case, name)
                _screenshot(page, workdir / f"{name}-{case.path}.png")
                page.close()
                warm = _warm(context, base, case, name, warm_repeat)
            finally:
                context.close()
            last = time.perf_counter()  # the warm opens read (and cached) too
            out[case.name] = Measure([cold], warm)
    for label, m in out.items():
        print(f"[bench_pages] {name or 'empty page'} {label}: cold {m.cold[0]:.2f} s, "
              f"warm {statistics.median(m.warm):.2f} s", flush=True)
    return out


def _empty_db(workdir: Path) -> Path:
    from memory_core.storage.duckdb import DuckDBStorage

    path = workdir / "empty.duckdb"
    DuckDBStorage(str(path)).close()
    return path


BASELINE = "Threads (empty database)"


def run(db5k: Path, demo: Path | None, *, warm_repeat: int = 3, write: bool = False,
        shots: Path | None = None, only: Sequence[str] = (), notes: str = "") -> str:
    from tests.browser.server import chromium

    workdir = shots or Path(tempfile.mkdtemp(prefix="memwb-bench-pages-"))
    workdir.mkdir(parents=True, exist_ok=True)
    empty = _empty_db(workdir)
    floor_script = workdir / "empty_page.py"
    floor_script.write_text(EMPTY_PAGE, encoding="utf-8")
    results: dict[str, dict[str, Measure]] = {}

    def cases_of(db: Path, story: bool) -> list[PageCase]:
        return [c for c in cases(db, story=story) if not only or c.name in only]

    loads = [os.getloadavg()[0]]
    base_case = [PageCase(BASELINE, "threads", "Threads", {})]
    with chromium() as browser:
        results["floor"] = measure_db(None, [], browser, workdir, warm_repeat,
                                      script=floor_script)
        results["baseline"] = measure_db(empty, base_case, browser, workdir, warm_repeat)
        loads.append(os.getloadavg()[0])
        results[db5k.name] = measure_db(db5k, cases_of(db5k, False), browser, workdir,
                                        warm_repeat)
        loads.append(os.getloadavg()[0])
        if demo is not None:
            results[demo.name] = measure_db(demo, cases_of(demo, True), browser,
                                            workdir, warm_repeat)
            loads.append(os.getloadavg()[0])
        again = measure_db(empty, base_case, browser, workdir, warm_repeat)
    loads.append(os.getloadavg()[0])
    for label in again:
        results["baseline"][label].cold += again[label].cold
        results["baseline"][label].warm += again[label].warm
    text = render(results, db5k, demo, warm_repeat, (min(loads), max(loads)), notes)
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


def _verdict(cold: float, warm: float) -> str:
    return ("met" if cold <= COLD_TARGET and warm <= WARM_TARGET else
            "cold over" if warm <= WARM_TARGET else
            "warm over" if cold <= COLD_TARGET else "both over")


def _intro(b_cold: float, b_warm: float, warm_repeat: int) -> str:
    return (
        "Each page opened in headless Debian Chromium (tests/browser/server.py) on a "
        "`streamlit run` server over loopback, timed from `goto` until the page's title "
        f"is shown and Streamlit's script state is `notRunning` with no rerun within "
        f"{QUIET_S:g} s. **start-up** = a fresh server until its first visitor's Start "
        "page settles (Streamlit's import, ours, opening the database, the first script "
        "run), its own row per database and not part of any page's cold figure; "
        "**cold** = a new visitor (a fresh browser context) opening the page on that "
        "running server once every read cached by the pages before it has expired (the "
        "page's own imports and all its reads; the read-only connection may still be "
        f"open); **warm** = the same context opening the page again (median of "
        f"{warm_repeat}). The floor is Streamlit itself: a page that shows one title. "
        "Baseline: the Threads page of an empty DuckDB file measured the same way, before "
        f"and after (cold {b_cold:.2f} s, warm {b_warm:.2f} s). Targets (issue 15 point "
        f"8): warm ≤ {WARM_TARGET:g} s, cold ≤ {COLD_TARGET:g} s; the start-up rows' "
        "cold column is the start-up time, which has no target of its own.")


def render(results: dict[str, dict[str, Measure]], db5k: Path, demo: Path | None,
           warm_repeat: int, load: tuple[float, float], notes: str = "") -> str:
    base = results["baseline"][BASELINE]
    b_cold, b_warm = statistics.median(base.cold), statistics.median(base.warm)
    lines = [
        _intro(b_cold, b_warm, warm_repeat),
        "",
        f"Rerun: `.venv/bin/python -m bench.bench_pages --db5k {db5k} "
        f"{'--demo ' + str(demo) + ' ' if demo else ''}--write` (build the many-run "
        "file first with `.venv/bin/python -m bench.runs_db --out <file> --runs 5000`, "
        "the demo with `make demo`) · machine: "
        f"{os.cpu_count()} cores, {platform.processor() or platform.machine()}, "
        f"1-minute load {load[0]:.1f}–{load[1]:.1f} during the run (shared with other "
        f"jobs) · {datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        "",
        "| database | page | cold s | ×baseline | warm s | ×baseline | targets |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for db_name, pages in results.items():
        label = {"floor": "(none)", "baseline": "empty.duckdb"}.get(db_name, db_name)
        if db_name == db5k.name:
            label = f"{db_name} ({_runs_in(db5k):,} runs)"
        for page, m in pages.items():
            cold, warm = statistics.median(m.cold), statistics.median(m.warm)
            verdict = ("start-up" if page == START.name else
                       "floor" if db_name == "floor" else _verdict(cold, warm))
            lines.append(f"| {label} | {page} | {cold:.2f} | {cold / b_cold:.2f}× | "
                         f"{warm:.2f} | {warm / b_warm:.2f}× | {verdict} |")
    if notes.strip():
        lines += ["", notes.strip()]
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
    ap.add_argument("--notes", type=Path, default=None,
                    help="a Markdown file whose text ends the section (what was slow, why)")
    args = ap.parse_args(argv)
    if args.pages and args.write:
        ap.error("--pages measures a subset: it does not replace the RESULTS.md section")
    if not args.db5k.exists():
        if not args.build:
            raise SystemExit(f"{args.db5k} does not exist (pass --build to build it)")
        from bench.runs_db import cli as build

        build(["--out", str(args.db5k), "--runs", "5000"])
    notes = args.notes.read_text(encoding="utf-8") if args.notes else ""
    run(args.db5k, args.demo, warm_repeat=args.warm, write=args.write, shots=args.shots,
        only=args.pages, notes=notes)


if __name__ == "__main__":
    cli()
