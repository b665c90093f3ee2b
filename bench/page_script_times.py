"""The server's share of each workbench page: seconds its script runs in Streamlit's
AppTest (no browser), after the Start page ran (imports done) and with every cached read
cleared (``cold``), then again with them cached (``warm``, best of two). Steadier than
the Chromium figures of bench/bench_pages.py on a loaded machine, since the browser's
rendering and page load are left out; compare code versions side by side with it.

Each page's payload too: the elements its script run sends and their protobuf size
(kB), what the browser has to apply one delta at a time — load-independent, so the
measure of a lighter page.

Run: ``.venv/bin/python -m bench.page_script_times <file.duckdb> [--story]`` from the
checkout to measure (it prints one JSON line: page → [cold s, warm s, elements, kB]).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ENTRY = Path(__file__).resolve().parents[1] / "app" / "streamlit_app.py"


def _pages(db: str, story: bool) -> list[tuple[str, str, dict[str, str]]]:
    from memory_core.storage.duckdb import DuckDBStorage

    storage = DuckDBStorage(db, read_only=True)
    try:
        by_thread: dict[str, list[str]] = {}
        for r in storage.runs.list_runs():
            if r.thread_id:
                by_thread.setdefault(r.thread_id, []).append(r.run_id)
    finally:
        storage.close()
    thread = max(by_thread, key=lambda t: len(by_thread[t]))
    last, prev = by_thread[thread][-1], by_thread[thread][-2]
    pages = [("Threads", "app_pages/threads.py", {"thread": thread}),
             ("Run inspector", "app_pages/run_inspector.py", {"run": last}),
             ("Compare", "app_pages/compare.py", {"a": prev, "b": last}),
             ("Counterfactual", "app_pages/counterfactual.py", {"run": last}),
             ("Why forgotten", "app_pages/why.py", {"run": last}),
             ("Timeline", "app_pages/timeline.py", {"thread": thread})]
    return pages + ([("Story", "app_pages/story.py", {})] if story else [])


def _timed_runner() -> Callable[[str | None, dict[str, str]], tuple[float, int, int]]:
    """A function opening a page in a new AppTest session and returning the seconds its
    script ran (Streamlit's exec wrapped with a clock) and its payload (elements, bytes)."""
    import streamlit.runtime.scriptrunner.script_runner as sr
    from streamlit.testing.v1 import AppTest

    spent = [0.0]
    # the function ScriptRunner runs every page's code through (not exported: patched by name)
    exec_page = getattr(sr, "exec_func_with_error_handling")  # noqa: B009

    def clocked(func: Any, ctx: Any) -> Any:
        start = time.perf_counter()
        try:
            return exec_page(func, ctx)
        finally:
            spent[0] += time.perf_counter() - start

    setattr(sr, "exec_func_with_error_handling", clocked)  # noqa: B010

    def run(page: str | None, query: dict[str, str]) -> tuple[float, int, int]:
        at = AppTest.from_file(str(ENTRY), default_timeout=300)
        if page:
            at.switch_page(page)
        at.query_params.update(query)
        spent[0] = 0.0
        at.run()
        if at.exception:
            raise SystemExit(f"{page} raised: {at.exception[0].message[:400]}")
        return (spent[0], *payload(at))

    return run


def payload(at: Any) -> tuple[int, int]:
    """The elements and blocks of the page's tree and their protobuf bytes (the sidebar
    included: it is sent on every script run too)."""
    count, size = 0, 0
    stack: list[Any] = [at._tree]  # noqa: SLF001 - AppTest has no public walk
    while stack:
        node = stack.pop()
        proto = getattr(node, "proto", None)
        if proto is not None and hasattr(proto, "ByteSize"):
            count += 1
            size += proto.ByteSize()
        children = getattr(node, "children", None)
        if isinstance(children, dict):
            stack.extend(children.values())
    return count, size


def measure(db: str, *, story: bool = False) -> dict[str, tuple[float, float, int, float]]:
    os.environ["MEMWB_DB"] = db
    logging.getLogger("streamlit").setLevel(logging.ERROR)  # bare-mode warnings
    from app import services

    run = _timed_runner()
    run(None, {})  # the Start page: Streamlit's and our imports
    out: dict[str, tuple[float, float, int, float]] = {}
    for name, page, query in _pages(db, story):
        services.forget_reads()
        cold, elements, size = run(page, query)
        warm = min(run(page, query)[0] for _ in range(2))
        out[name] = (round(cold, 2), round(warm, 2), elements, round(size / 1000, 1))
    return out


def cli(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("db", help="a workbench DuckDB file")
    ap.add_argument("--story", action="store_true", help="also the story page (demo)")
    args = ap.parse_args(argv)
    print(json.dumps(measure(args.db, story=args.story)))


if __name__ == "__main__":
    cli()
