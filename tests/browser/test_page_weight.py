"""Issue 36 point 7: every workbench page light on a cold browser tab. Each page of the
demo database is opened on a fresh browser context and what costs a cold tab most is
counted: plotly charts (the first one loads and parses the chart library, ~1 CPU-s on
its own) and canvas grids (st.dataframe). The counts are asserted against each page's
budget, not the CPU seconds: those swing with the load of a shared machine (a cold tab
of one page measured 2.5–4.0 CPU-s at a 1-minute load of 12 on 2 cores), so a bound on
them would be flaky in CI; the CPU figures per page are bench/bench_browser_cpu.py's,
in bench/RESULTS.md, and are printed here."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bench.bench_browser_cpu import GOAL_CPU_S, open_cold, page_cases
from tests.browser.server import chromium, serve

pytestmark = pytest.mark.slow

# per page: (plotly charts, canvas grids) at most. A page without a chart pays no chart
# library; the Why page's lifeline is text, its runs a table; the Timeline's stacked area
# is an SVG picture. No page draws a canvas grid: every table is Markdown
# (app/light_table.py).
# (Counterfactual draws its chart and tables once a replay has run; the Run inspector's
# lanes are bars, and its score chart and table are drawn only for a run whose recall
# ran: the page opens on one whose did not)
BUDGET = {"Start": (0, 0), "Threads": (0, 0), "Run inspector": (0, 0), "Compare": (0, 0),
          "Counterfactual": (0, 0), "Why forgotten": (0, 0), "Timeline": (0, 0),
          "Story": (0, 0), "What if": (0, 0)}


def test_each_page_stays_within_its_budget_of_heavy_elements(minilm_demo_db: Path,
                                                              tmp_path: Path) -> None:
    demo = tmp_path / "demo.duckdb"
    shutil.copyfile(minilm_demo_db, demo)
    listed = page_cases(demo, story=True)
    assert [c.name for c in listed] == list(BUDGET)
    over = []
    with chromium() as browser, serve(["--db", str(demo)], tmp_path) as base:
        for case in listed:
            s = open_cold(browser, base, case, demo.stem)
            charts, grids = s.heavy["plotly charts"], s.heavy["canvas grids"]
            print(f"{case.name}: {charts} plotly, {grids} grids, browser {s.browser:.2f} "
                  f"CPU-s (goal {GOAL_CPU_S:g})")
            assert s.browser > 0 and s.heavy["vega charts"] == 0
            if charts > BUDGET[case.name][0] or grids > BUDGET[case.name][1]:
                over.append(f"{case.name}: {charts} plotly charts, {grids} canvas grids "
                            f"(budget {BUDGET[case.name]})")
    assert not over, over
