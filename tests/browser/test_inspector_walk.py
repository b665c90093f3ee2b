"""Issue 36 (points 1 and 4) in Chromium, on the real demo database (MiniLM + the
offline reader): from the Threads page of support-3, its run list opens the inspector
on support-3-forgot, which leads with what was in the prompt and what was left out —
the refund call recall ranked first, dropped, in sight without a click, and the score
chart saying what its first bar is; a message's "written by run" link opens its run;
the sidebar's inspector link from another thread opens on that thread's run.
Screenshots (threads-support-3.png; inspector-forgot.png, the first screen;
inspector-forgot-full.png) are
left in the test's tmp directory. No request may leave loopback meanwhile."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.browser.server import PAGE_TIMEOUT_MS, chromium, serve
from tests.browser.test_follow import _selected, _settled

pytestmark = [pytest.mark.browser, pytest.mark.model]
FORGOT = "support-3-forgot"
REFUND_CALL = "Starting the refund for your blender in our old ticket system."


def test_threads_to_the_inspector_on_the_forgetting_run(minilm_demo_db: Path,
                                                        tmp_path: Path) -> None:
    db = tmp_path / "demo.duckdb"
    shutil.copyfile(minilm_demo_db, db)
    with serve(["--db", str(db), "--read-only"], tmp_path) as base, chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{base}/threads?db=demo&thread=support-3", timeout=PAGE_TIMEOUT_MS)
        page.get_by_role("heading", name="Threads", exact=True).wait_for(
            timeout=PAGE_TIMEOUT_MS)
        _settled(page)
        main = page.get_by_test_id("stMainBlockContainer")
        # the thread lists its runs, each a link to the inspector
        main.get_by_text("Runs of this thread", exact=False).wait_for(timeout=PAGE_TIMEOUT_MS)
        page.screenshot(path=str(tmp_path / "threads-support-3.png"))
        main.get_by_role("link", name=f"run {FORGOT}", exact=False).first.click()

        page.get_by_role("heading", name="Run inspector", exact=True).wait_for(
            timeout=PAGE_TIMEOUT_MS)
        _selected(page, "Thread", "support-3")
        _selected(page, "Run", FORGOT)
        _settled(page)
        assert f"run={FORGOT}" in page.url
        # on the first screen: what was given, then what was left out
        left = main.get_by_role("heading", name="Left out of the prompt")
        left.scroll_into_view_if_needed()
        dropped = main.get_by_role("heading", name="Dropped (1)")
        near = main.get_by_role("heading", name="Near misses", exact=False)
        for el in (dropped, near):
            el.wait_for(timeout=PAGE_TIMEOUT_MS)
        refund = main.get_by_text(REFUND_CALL, exact=False).first
        assert refund.is_visible()  # no tab to click
        main.get_by_text("dropped: a tool call without its result", exact=False).first.wait_for(
            timeout=PAGE_TIMEOUT_MS)
        page.screenshot(path=str(tmp_path / "inspector-forgot.png"))
        # the lanes open on what recall chose, not on the instructions
        recalled = main.get_by_role("tab", name="Recalled", exact=False)
        assert recalled.get_attribute("aria-selected") == "true"
        # the answer is read before what explains it
        assert main.get_by_text("I don't know", exact=False).first.is_visible()
        # the score chart starts at rank 1, the dropped call, and says so
        said = main.get_by_text("The first bar is rank 1, support-2 #", exact=False)
        said.wait_for(timeout=PAGE_TIMEOUT_MS)
        assert "recalled, then dropped: a tool call without its result" in said.inner_text()
        # the settings are words; the raw record is folded
        main.get_by_text("Recent window: the last", exact=False).wait_for(
            timeout=PAGE_TIMEOUT_MS)
        assert not main.get_by_text('"recent_n"', exact=False).first.is_visible()
        # the app scrolls inside its own container: the whole page is a tall window
        page.set_viewport_size({"width": 1400, "height": 5200})
        _settled(page)
        page.screenshot(path=str(tmp_path / "inspector-forgot-full.png"))
        page.set_viewport_size({"width": 1400, "height": 1000})

        # a message's writing run is a link to it
        page.goto(f"{base}/threads?db=demo&thread=support-3", timeout=PAGE_TIMEOUT_MS)
        page.get_by_role("heading", name="Threads", exact=True).wait_for(
            timeout=PAGE_TIMEOUT_MS)
        _settled(page)
        written = main.get_by_role("link", name="written by run", exact=False).last
        name = written.inner_text().split("written by run", 1)[1].strip()
        written.click()
        page.get_by_role("heading", name="Run inspector", exact=True).wait_for(
            timeout=PAGE_TIMEOUT_MS)
        _selected(page, "Run", name)
        _settled(page)

        # another thread's page: the sidebar's inspector opens on that thread's run
        page.goto(f"{base}/threads?db=demo&thread=support-2", timeout=PAGE_TIMEOUT_MS)
        page.get_by_role("heading", name="Threads", exact=True).wait_for(
            timeout=PAGE_TIMEOUT_MS)
        _settled(page)
        page.get_by_test_id("stSidebar").get_by_role("link", name="Run inspector").click()
        page.get_by_role("heading", name="Run inspector", exact=True).wait_for(
            timeout=PAGE_TIMEOUT_MS)
        _selected(page, "Thread", "support-2")
        _settled(page)
