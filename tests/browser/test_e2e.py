"""End to end: the real workbench under ``streamlit run`` on a free loopback port,
driven by Debian's headless Chromium through playwright.

Opens the run inspector from a shared URL and checks the lanes, a plotly chart and a
stored ``<script>`` message shown as literal text. Fails (never skips) without chromium.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_core.storage.duckdb import DuckDBStorage
from tests.app.fixture_db import RUN_1, SCRIPT_TEXT, THREAD, build_duckdb_file, seq_of, tab_labels
from tests.browser.server import PAGE_TIMEOUT_MS, chromium, serve

pytestmark = pytest.mark.browser


@pytest.fixture()
def workbench(tmp_path: Path) -> Iterator[tuple[str, list[str], int]]:
    """The app serving a fixture DuckDB file; yields its base URL, RUN_1's tab labels
    and the seq of the stored <script> message, as the file's records say."""
    db = tmp_path / "e2e.duckdb"
    build_duckdb_file(str(db))
    reader = DuckDBStorage(str(db), read_only=True)
    try:
        labels, script_seq = tab_labels(reader, RUN_1), seq_of(reader, THREAD, SCRIPT_TEXT)
    finally:
        reader.close()
    with serve(["--db", str(db)], tmp_path) as base:
        yield base, labels, script_seq


def test_run_inspector_from_url_in_chromium(workbench: tuple[str, list[str], int],
                                            tmp_path: Path) -> None:
    from playwright.sync_api import Dialog

    base, expected_tabs, script_seq = workbench

    dialogs: list[str] = []
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 2200})

        def on_dialog(d: Dialog) -> None:  # an alert() would mean script ran
            dialogs.append(d.message)
            d.dismiss()

        page.on("dialog", on_dialog)
        page.goto(f"{base}/run?run={RUN_1}", timeout=PAGE_TIMEOUT_MS)
        page.get_by_role("heading", name="Run inspector").wait_for(timeout=PAGE_TIMEOUT_MS)
        # the lanes, with their item counts, as tabs
        tabs = page.get_by_role("tab")
        tabs.filter(has_text=expected_tabs[-1]).wait_for(timeout=PAGE_TIMEOUT_MS)
        labels = [t.strip() for t in tabs.all_inner_texts()]
        assert labels == expected_tabs
        # plotly rendered the score chart; the lanes are bars, one a lane, no chart
        page.locator(".js-plotly-plot").first.wait_for(timeout=PAGE_TIMEOUT_MS)
        assert page.locator(".js-plotly-plot").count() == 1
        assert page.get_by_test_id("stProgress").count() == len(expected_tabs)
        # the stored <script> message is literal text in the Recent lane
        tabs.filter(has_text=next(t for t in expected_tabs if t.startswith("Recent"))).click()
        shown = page.get_by_text(SCRIPT_TEXT, exact=True)
        shown.wait_for(timeout=PAGE_TIMEOUT_MS)
        assert shown.is_visible()
        assert page.locator("strong", has_text="bold").count() == 0
        assert dialogs == []
        # a source link leads to the Threads page focused on the message
        link = page.get_by_role("link", name=f"source: {THREAD} #{script_seq}")
        link.wait_for(timeout=PAGE_TIMEOUT_MS)
        assert link.count() == 1
        shot = tmp_path / "run_inspector.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 10_000
        link.click()
        page.get_by_role("heading", name="Threads", exact=True).wait_for(timeout=PAGE_TIMEOUT_MS)
        page.get_by_text(SCRIPT_TEXT, exact=True).wait_for(timeout=PAGE_TIMEOUT_MS)
        assert "thread=" + THREAD in page.url and f"seq={script_seq}" in page.url
        page.screenshot(path=str(tmp_path / "threads.png"), full_page=True)
        assert dialogs == []
