"""The product manager's task in Chromium, on the real demo database (MiniLM + the
offline reader): start page → the refund story's card → the proof (the refund decision
put back into the very answer that forgot it) → the answer changes → the fix shown →
the sidebar's inspector link opens the story's run.
No request may leave loopback meanwhile."""

from __future__ import annotations

import shutil
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.browser.server import PAGE_TIMEOUT_MS, chromium, serve
from tests.browser.test_follow import _selected

pytestmark = [pytest.mark.browser, pytest.mark.model]
LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}
REPLAY_TIMEOUT_MS = 180_000  # the first replay loads the embedding model on 2 busy cores


def _off_loopback(urls: list[str]) -> list[str]:
    return [u for u in urls if urlsplit(u).scheme in ("http", "https", "ws", "wss")
            and urlsplit(u).hostname not in LOOPBACK]


def test_story_card_to_proof_to_fix(minilm_demo_db: Path, tmp_path: Path) -> None:
    db = tmp_path / "demo.duckdb"
    shutil.copyfile(minilm_demo_db, db)  # the proof writes its record
    requests: list[str] = []
    with serve(["--db", str(db)], tmp_path) as base, chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 5200})
        page.on("request", lambda r: requests.append(r.url))
        page.goto(base, timeout=PAGE_TIMEOUT_MS)
        page.get_by_role("heading", name="Memory Workbench").wait_for(timeout=PAGE_TIMEOUT_MS)
        page.get_by_text("Why did the assistant forget Anna's refund?").wait_for(
            timeout=PAGE_TIMEOUT_MS)
        page.get_by_role("link", name="Damaged blender", exact=False).wait_for(
            timeout=PAGE_TIMEOUT_MS)
        page.screenshot(path=str(tmp_path / "start.png"))
        page.get_by_role("button", name="Open the story").first.click()

        page.get_by_role("heading", name="The assistant forgot the refund").wait_for(
            timeout=PAGE_TIMEOUT_MS)
        assert "story=support" in page.url
        # the chart names the refund decision's bar and marks the cut
        chart = page.locator(".js-plotly-plot").nth(1)
        chart.get_by_text("the refund decision").wait_for(timeout=PAGE_TIMEOUT_MS)
        assert chart.get_by_text("only the 3 closest are handed over").count() == 1
        page.get_by_text("I don't know", exact=False).first.wait_for(timeout=PAGE_TIMEOUT_MS)
        page.screenshot(path=str(tmp_path / "story.png"))

        page.get_by_role("button", name="Put the refund decision back and ask again").click()
        page.get_by_text("The answer changed").wait_for(timeout=REPLAY_TIMEOUT_MS)
        page.get_by_text("After: asked again with the refund decision put back").wait_for(
            timeout=PAGE_TIMEOUT_MS)
        # the very answer that forgot it now carries the refund
        assert page.get_by_text("The refund of €240 for order A-1042 was approved",
                                exact=False).count() >= 2
        page.get_by_role("button", name="Run again").wait_for(timeout=PAGE_TIMEOUT_MS)
        # the proof's own button goes once the result is shown (Streamlit keeps the last
        # run's elements, greyed, until the rerun finishes: wait for it to go, or fail)
        page.get_by_role("button", name="Put the refund decision back and ask again"
                         ).wait_for(state="detached", timeout=PAGE_TIMEOUT_MS)
        page.get_by_role("heading", name="6. The fix").wait_for(timeout=PAGE_TIMEOUT_MS)
        page.get_by_text("What the change let in:").wait_for(timeout=PAGE_TIMEOUT_MS)
        page.screenshot(path=str(tmp_path / "proof.png"))
        # the story's run is the current run: the sidebar opens the inspector on it
        page.get_by_test_id("stSidebar").get_by_role("link", name="Run inspector",
                                                     exact=True).click()
        page.get_by_role("heading", name="Run inspector").wait_for(timeout=PAGE_TIMEOUT_MS)
        _selected(page, "Run", "support-3-forgot")
    assert requests, "no request seen"
    assert _off_loopback(requests) == []
