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
  (services.CACHE_TTL_SECONDS): the page's own imports and every read it makes, except
  the two shared reads of every run and every thread, which live while the database is
  unchanged (``services.data_version``) as they do for a real new visitor;
  ``bench.page_script_times`` measures a first visit with every read cleared.
- **warm (reload)**: the same context opening the page's URL again (median of
  ``--warm``): Streamlit's whole front end and websocket load again.
- **warm (in-app)**: in the app already open in that context, a click on our link to the
  page (the sidebar's, or the run inspector's action bar and thread link for the pages
  that open on a run's pair or thread), timed until the page settles (median of
  ``--warm``). The click is a client-side navigation in Streamlit's multipage app: a
  marker set on the window before the click must still be there after (no reload).

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
from urllib.parse import urlencode, urlparse

from bench.results import replace_section

SETTLE_TIMEOUT_S = 120.0
QUIET_S = 0.5  # no rerun may start within this long after the page settled
LINK_WAIT_S = 20.0
VIEWPORT = {"width": 1400, "height": 2400}
SECTION = "Workbench: page speed in Chromium"
WARM_TARGET, COLD_TARGET = 1.0, 3.0


@dataclass(frozen=True)
class PageCase:
    name: str
    path: str  # url path
    title: str  # the page's st.title
    query: dict[str, str]
    # in-app: the page the click starts from (its path and query), and the query the
    # link clicked there must carry (a subset of ``query``: the sidebar's links carry
    # the current run, not every parameter)
    via: tuple[str, str, dict[str, str]] = ("", "Memory Workbench", {})  # path, title, query
    link: dict[str, str] | None = None


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
    # in-app, the run pages are reached from the run inspector of that run (its action
    # bar, its thread link); the inspector itself from Why forgotten on that run (the
    # sidebar's link carries the current run)
    inspector = ("run", "Run inspector", {"run": last})
    out = [PageCase("Threads", "threads", "Threads", {"thread": thread}, inspector),
           PageCase("Run inspector", "run", "Run inspector", {"run": last},
                    ("why", "Why forgotten", {"run": last})),
           PageCase("Compare", "compare", "Compare runs", {"a": prev, "b": last}, inspector),
           PageCase("Counterfactual", "counterfactual", "Counterfactual replay",
                    {"run": last}, inspector),
           PageCase("Why forgotten", "why", "Why forgotten", {"run": last}, inspector),
           PageCase("Timeline", "timeline", "Composition timeline", {"thread": thread},
                    inspector)]
    if story:
        out.append(PageCase("Story", "story", "", {}))
    return out


def _script_state(page: Any) -> str | None:
    value = page.get_attribute('[data-testid="stApp"]', "data-test-script-state")
    return str(value) if value is not None else None


def settle(page: Any, title: str, start: float, path: str | None = None) -> float:
    """Seconds from ``start`` until the page shows its title (any h1 when ``title`` is
    empty) and Streamlit is not running, with no rerun within QUIET_S after; with
    ``path``, also on that url path (an in-app click: the page it left had an h1 too)."""
    heading = page.locator("h1", has_text=title) if title else page.locator("h1")
    deadline = start + SETTLE_TIMEOUT_S
    settled: float | None = None
    while time.perf_counter() < deadline:
        state = _script_state(page)
        there = path is None or urlparse(page.url).path.strip("/") == path
        if state == "notRunning" and there and heading.count() > 0:
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
    warm: list[float]  # reopening the URL (reload)
    inapp: list[float]  # a click on our link in the open app


# our links (st.page_link); the index of the first to ``path`` whose query holds
# ``params``. The default page's link (the Start page, path "") carries the current
# page's address in its href, so it is found by its label, "Start".
LINKS = 'a[data-testid="stPageLink-NavLink"]'
_FIND_LINK = """([path, params]) => [...document.querySelectorAll('LINKS')].findIndex(a => {
  if (path === '') return a.innerText.trim().endsWith('Start');
  const u = new URL(a.href, location.href);
  const there = u.pathname.split('/').filter(Boolean).join('/') === path;
  return u.origin === location.origin && there
    && Object.entries(params).every(([k, v]) => u.searchParams.get(k) === v);
})""".replace("LINKS", LINKS)
_MARK = "window.__benchNoReload"


def click_link(page: Any, path: str, params: dict[str, str]) -> None:
    """Click the page's own link (st.page_link) to ``path`` carrying ``params`` (waiting
    up to LINK_WAIT_S for it: the sidebar is drawn by the same script run)."""
    deadline = time.perf_counter() + LINK_WAIT_S
    while (index := page.evaluate(_FIND_LINK, [path, params])) < 0:
        if time.perf_counter() > deadline:
            raise SystemExit(f"no link to /{path} with {params} on {page.url}")
        page.wait_for_timeout(100)
    page.locator(LINKS).nth(index).click()


def in_app(page: Any, case: PageCase, repeat: int) -> list[float]:
    """``repeat`` times: go to the case's starting page by its link (not timed) unless
    there, then click the link to the case's page and time it until it settles. Each click must be
    a client-side navigation: the window keeps a marker set before it."""
    via_path, via_title, via_query = case.via
    out = []
    for _ in range(repeat):
        if urlparse(page.url).path.strip("/") != via_path:
            click_link(page, via_path, via_query)
            settle(page, via_title, time.perf_counter(), via_path)
        page.evaluate(f"{_MARK} = true")
        start = time.perf_counter()
        click_link(page, case.path, case.link if case.link is not None else case.query)
        seconds = settle(page, case.title, start, case.path)
        if not page.evaluate(f"{_MARK} === true"):
            raise SystemExit(f"{case.name}: the in-app click reloaded the page")
        _check(page, case)
        out.append(seconds)
    return out


START = PageCase("Start page (server start-up)", "", "Memory Workbench", {})
# Streamlit's floor: a page showing one title, and (for the in-app column) a second
# such page reached by a st.page_link, as ours are
EMPTY_PAGE = """import streamlit as st


def empty() -> None:
    st.title("Empty")
    st.page_link(other, label="other")


def other_page() -> None:
    st.title("Other")
    st.page_link(first, label="Start")


first = st.Page(empty, title="Empty", url_path="empty", default=True)
other = st.Page(other_page, title="Other", url_path="other")
st.navigation([first, other], position="hidden").run()
"""
FLOOR_CASE = PageCase("floor", "other", "Other", {}, ("", "Empty", {}))


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
            inapp = in_app(page, FLOOR_CASE, warm_repeat) if script is not None else []
            page.close()
            out[first.name] = Measure([start_up], _warm(context, base, first, name,
                                                        warm_repeat), inapp)
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
                via_path, via_title, via_query = case.via  # the app, open there
                via = PageCase("via", via_path, via_title, via_query)
                page = open_timed(context, base, via, name)[1]
                inapp = in_app(page, case, warm_repeat)
                page.close()
            finally:
                context.close()
            last = time.perf_counter()  # the warm opens read (and cached) too
            out[case.name] = Measure([cold], warm, inapp)
    for label, m in out.items():
        print(f"[bench_pages] {name or 'empty page'} {label}: cold {m.cold[0]:.2f} s, "
              f"warm (reload) {statistics.median(m.warm):.2f} s, warm (in-app) "
              f"{_median(m.inapp)} s", flush=True)
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
        results["baseline"][label].inapp += again[label].inapp
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


def _median(xs: list[float]) -> str:
    return f"{statistics.median(xs):.2f}" if xs else "—"


def _verdict(cold: float, warm: float) -> str:
    """Against the targets; ``warm`` is the in-app figure (what a user feels moving
    around the open app), the reload one when there is none."""
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
        "page's own imports and its reads, but not the shared reads of every run and "
        "thread, kept while the database is unchanged as for any new visitor; the "
        f"read-only connection may still be open); **warm (reload)** = the same context opening the page's URL again "
        f"(median of {warm_repeat}; Streamlit's front end and websocket load again); "
        "**warm (in-app)** = in the app already open in that context, a click on our "
        "own link to the page — the sidebar's (Run inspector, Story, from the Start "
        "page) or the run inspector's action bar and thread link (the pages opened on "
        "the run's pair or thread) — timed until the page settles by the same rule "
        f"(median of {warm_repeat}); each click is checked to be a client-side "
        "navigation (a marker set on the window before it survives). The floor is "
        "Streamlit itself: a page that shows one title (in-app: a second such page "
        "reached by a `st.page_link`); the ×floor column is against its in-app figure. "
        "Baseline: the Threads page of an empty DuckDB file measured the same way, before "
        f"and after (cold {b_cold:.2f} s, warm {b_warm:.2f} s). Targets (issue 15 point "
        f"8): warm ≤ {WARM_TARGET:g} s (judged on the in-app figure), cold ≤ "
        f"{COLD_TARGET:g} s; the start-up rows' cold column is the start-up time, which "
        "has no target of its own.")


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
        "| database | page | cold s | ×baseline | warm (reload) s | ×baseline "
        "| warm (in-app) s | ×floor | targets |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    floor = next(iter(results["floor"].values())).inapp
    f_inapp = statistics.median(floor) if floor else None
    for db_name, pages in results.items():
        label = {"floor": "(none)", "baseline": "empty.duckdb"}.get(db_name, db_name)
        if db_name == db5k.name:
            label = f"{db_name} ({_runs_in(db5k):,} runs)"
        for page, m in pages.items():
            cold, warm = statistics.median(m.cold), statistics.median(m.warm)
            inapp = statistics.median(m.inapp) if m.inapp else None
            verdict = ("start-up" if page == START.name else
                       "floor" if db_name == "floor" else
                       _verdict(cold, warm if inapp is None else inapp))
            ratio = (f"{inapp / f_inapp:.2f}×" if inapp is not None and f_inapp else "—")
            lines.append(f"| {label} | {page} | {cold:.2f} | {cold / b_cold:.2f}× | "
                         f"{warm:.2f} | {warm / b_warm:.2f}× | {_median(m.inapp)} | "
                         f"{ratio} | {verdict} |")
    if notes.strip():
        lines += ["", notes.strip()]
    return "\n".join(lines)


def page_bench_parser(doc: str | None) -> argparse.ArgumentParser:
    """The arguments the Chromium page benchmarks share: --demo, --shots, --pages,
    --write, --notes (``checked_notes`` reads them back)."""
    ap = argparse.ArgumentParser(description=doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--demo", type=Path, default=None, help="the demo database")
    ap.add_argument("--shots", type=Path, default=None, help="keep screenshots here")
    ap.add_argument("--pages", nargs="*", default=[],
                    help="only these pages (e.g. Threads 'Why forgotten'); never with --write")
    ap.add_argument("--write", action="store_true", help="update bench/RESULTS.md")
    ap.add_argument("--notes", type=Path, default=None,
                    help="a Markdown file whose text ends the section (what was slow, why)")
    return ap


def checked_notes(ap: argparse.ArgumentParser, args: argparse.Namespace) -> str:
    """The --notes text, once --pages and --write are known not to be given together."""
    if args.pages and args.write:
        ap.error("--pages measures a subset: it does not replace the RESULTS.md section")
    return str(args.notes.read_text(encoding="utf-8")) if args.notes else ""


def cli(argv: Sequence[str] | None = None) -> None:
    ap = page_bench_parser(__doc__)
    ap.add_argument("--db5k", required=True, type=Path, help="the many-run DuckDB file")
    ap.add_argument("--build", action="store_true",
                    help="build --db5k with bench.runs_db (5,000 runs) when missing")
    ap.add_argument("--warm", type=int, default=3, help="warm opens per page")
    args = ap.parse_args(argv)
    notes = checked_notes(ap, args)
    if not args.db5k.exists():
        if not args.build:
            raise SystemExit(f"{args.db5k} does not exist (pass --build to build it)")
        from bench.runs_db import cli as build

        build(["--out", str(args.db5k), "--runs", "5000"])
    run(args.db5k, args.demo, warm_repeat=args.warm, write=args.write, shots=args.shots,
        only=args.pages, notes=notes)


if __name__ == "__main__":
    cli()
