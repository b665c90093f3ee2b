"""Chromium walks Why forgotten by phrase and Compare on the real workbench: a phrase
that is no substring of the stored refund request still finds it (with its fate), and
Compare names the top_k change that let a message in, with lanes that carry their
tokens and nothing shown as "None". Fails (never skips) without chromium."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memory_core.storage.duckdb import DuckDBStorage
from tests.app.fixture_db import RUN_1, THREAD, build_duckdb_file, fixed_clock
from tests.app.test_why_compare import TOP_K_RUNS, _top_k_pair
from tests.browser.server import PAGE_TIMEOUT_MS, chromium, serve

pytestmark = pytest.mark.browser
PHRASE = "parcel refund"  # REFUND_TEXT holds both words, not this text


@pytest.fixture()
def workbench(tmp_path: Path) -> Iterator[str]:
    """The fixture DuckDB file plus the top_k pair of runs, served."""
    db = tmp_path / "whycmp.duckdb"
    build_duckdb_file(str(db))
    writer = DuckDBStorage(str(db), clock=fixed_clock())
    try:
        assert not writer.memory.search_messages(PHRASE)
        _top_k_pair(writer)  # type: ignore[arg-type]
    finally:
        writer.close()
    with serve(["--db", str(db)], tmp_path) as base:
        yield base


def _settled(page: Any, *extra: str) -> None:
    """Wait until the tables (and ``extra``) are drawn, not their placeholders, and the
    app has stopped running; no table is a canvas grid."""
    for sel in ("[data-testid='stMarkdownContainer'] table", *extra):
        page.locator(sel).last.wait_for(timeout=PAGE_TIMEOUT_MS)
    page.locator("[data-testid='stStatusWidget']").wait_for(state="hidden",
                                                            timeout=PAGE_TIMEOUT_MS)
    page.wait_for_load_state("networkidle")


def test_why_by_phrase_then_compare_in_chromium(workbench: str, tmp_path: Path) -> None:
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 3200})
        page.goto(f"{workbench}/why?run={RUN_1}", timeout=PAGE_TIMEOUT_MS)
        page.get_by_role("heading", name="Why forgotten").wait_for(timeout=PAGE_TIMEOUT_MS)
        page.get_by_text("Type a phrase", exact=True).click()
        box = page.get_by_label("Phrase the model should have known")
        box.wait_for(timeout=PAGE_TIMEOUT_MS)
        box.fill(PHRASE)
        box.press("Enter")
        page.get_by_role("heading", name="Closest messages").wait_for(timeout=PAGE_TIMEOUT_MS)
        # the list under the heading can draw after it, one card at a time: wait for
        # the card looked for below, not the first (a loaded CI read the body between)
        page.get_by_text(re.compile(rf"{THREAD} #0 · user · shares parcel, refund")).first \
            .wait_for(timeout=PAGE_TIMEOUT_MS)
        body = page.locator("body").inner_text()
        assert f"No stored message contains “{PHRASE}” word for word" in body
        assert "it was never said" not in body
        # the refund request, both words shared, among the closest, with its fate
        assert re.search(rf"{THREAD} #0 · user · shares parcel, refund · similarity to the phrase "
                         r"(\d\.\d{3}|—)", body), body
        page.get_by_role("heading", name=re.compile("Lifeline of")).wait_for(
            timeout=PAGE_TIMEOUT_MS)
        _settled(page)  # the lifeline is text (a list of stretches of runs), no chart
        assert page.get_by_text(re.compile(r"^runs? \d+")).count() > 0
        assert f"q={PHRASE.replace(' ', '+')}" in page.url or "q=parcel%20refund" in page.url
        page.screenshot(path=str(tmp_path / "why_by_phrase.png"), full_page=True)

        a, b = TOP_K_RUNS
        page.goto(f"{workbench}/compare?a={a}&b={b}", timeout=PAGE_TIMEOUT_MS)
        page.get_by_role("heading", name="What changed").wait_for(timeout=PAGE_TIMEOUT_MS)
        reason = page.get_by_text(re.compile(r"^recall top_k 1 → 4 let it in \(rank \d+\)$"))
        reason.first.wait_for(timeout=PAGE_TIMEOUT_MS)
        page.get_by_role("heading", name="Tokens by lane").wait_for(timeout=PAGE_TIMEOUT_MS)
        _settled(page, "[data-testid='stMetricValue']")
        assert page.locator(".js-plotly-plot").count() == 0  # the tokens: a table
        assert page.locator("[data-testid='stDataFrame']").count() == 0  # of text
        # the reason is a cell of the "what changed" table, whole (led by the rule that
        # kept the message out of run A), beside its message link
        cell = page.locator("td").filter(has_text=re.compile(
            r"^kept out of run A by beyond-top-k: recall top_k 1 → 4 let it in \(rank \d+\)$"))
        row = page.locator(".st-key-table-changes tr").filter(has=cell)
        assert row.count() >= 1
        assert row.first.locator("a[href*='threads?']").count() == 1
        body = page.locator("body").inner_text()
        assert re.search(r"Input \(1 · [1-9]\d* tokens\)", body), body
        assert not re.search(r"\b(None|nan|null)\b", body)
        page.screenshot(path=str(tmp_path / "compare.png"), full_page=True)
