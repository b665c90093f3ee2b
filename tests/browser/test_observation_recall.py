"""In Chromium: the Run inspector's Observations lane lists the observations the
``recall_observations`` tool returned during a run, each with a link to its source
range (SPEC §8.9–8.10)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_core.storage.duckdb import DuckDBStorage
from tests.app.test_observation_recall_page import FACT, make_run
from tests.browser.server import PAGE_TIMEOUT_MS, chromium, serve

pytestmark = pytest.mark.browser


def test_spec_8_9_recalled_observations_in_the_inspector_in_chromium(tmp_path: Path) -> None:
    db = tmp_path / "om.duckdb"
    s = DuckDBStorage(str(db))
    make_run(s)
    s.close()
    with serve(["--db", str(db)], tmp_path) as base, chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 2400})
        page.goto(f"{base}/run?run=run-om", timeout=PAGE_TIMEOUT_MS)
        page.get_by_role("tab", name="Observations").click(timeout=PAGE_TIMEOUT_MS)
        page.get_by_text("Recalled during the run by the recall_observations tool").wait_for(
            timeout=PAGE_TIMEOUT_MS)
        # stored text literally, markup characters and all (the lane's elements arrive
        # in several deltas: wait for it rather than counting at once)
        page.get_by_text(FACT, exact=True).first.wait_for(timeout=PAGE_TIMEOUT_MS)
        link = page.get_by_role("link", name="source t1 #0–2", exact=True)
        # the lane's elements arrive over the websocket one delta at a time
        link.wait_for(timeout=PAGE_TIMEOUT_MS)
        assert link.count() == 1
        page.screenshot(path=str(tmp_path / "observations-lane.png"), full_page=True)
        link.click()
        # the Threads page, focused on the observation's source range
        page.wait_for_url("**thread=t1&seq=0&to=2**", timeout=PAGE_TIMEOUT_MS)
