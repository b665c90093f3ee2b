"""The What-if page walked in Chromium on the real demo database (all-MiniLM-L6-v2 and
the offline reader, as `make demo` builds it), issue 35:

1. from the run that forgot the refund, the sidebar opens What if on its thread; the
   story's fix — a lower bar for "similar enough" and room for more recalled messages —
   is tried in the form: the runs that change are counted in plain words, and the run
   that forgot, side by side, is given the refund decision;
2. a link with a larger token budget: the gate code enters the small-budget run's
   prompt; its answer asked again (the offline reader) changes;
3. a setting that changes nothing says so;
4. the run inspector keeps an answer (pins it to a suite).

Screenshots are left in the test's temporary directory (``MEMWB_SHOTS`` names another).
Every page goes through tests/browser/server.py's network guard."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.browser.server import PAGE_TIMEOUT_MS, chromium, serve
from tests.browser.test_follow import _selected, _settled

pytestmark = [pytest.mark.browser, pytest.mark.model]
COMPOSE_TIMEOUT_MS = 240_000  # the first what-if loads the embedding model on 2 busy cores
FORGOT, GATE = "support-3-forgot", "move-gate-small-budget"
REFUND = "The refund of €240 for order A-1042 was approved"
GATE_CODE = "The caretaker says the building's gate code is 4417."


def _shots(tmp_path: Path) -> Path:
    shots = Path(os.environ.get("MEMWB_SHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    return shots


def _outcome(page: Any) -> str:
    """Wait for the outcome of a what-if and return the page's text."""
    page.get_by_role("heading", name="What would change").wait_for(timeout=COMPOSE_TIMEOUT_MS)
    _settled(page)
    return str(page.locator("body").inner_text())


def _pick(page: Any, label: str, value: str) -> None:
    page.get_by_role("combobox", name=label).click()
    # a thread's label starts with its id, a run's ends with it
    page.get_by_role("option", name=re.compile(
        f"^{re.escape(value)}|· {re.escape(value)}$")).first.click()
    _selected(page, label, value)
    _settled(page)


def test_what_if_on_the_demo(minilm_demo_db: Path, tmp_path: Path) -> None:
    db = tmp_path / "demo.duckdb"
    shutil.copyfile(minilm_demo_db, db)  # asking again and pinning write their records
    shots = _shots(tmp_path)
    with serve(["--db", str(db)], tmp_path) as base, chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 4400})
        # 1. from the run that forgot, the sidebar's link opens its thread
        page.goto(f"{base}/run?run={FORGOT}", timeout=PAGE_TIMEOUT_MS)
        page.get_by_role("heading", name="Run inspector").wait_for(timeout=PAGE_TIMEOUT_MS)
        _selected(page, "Run", FORGOT)
        page.get_by_test_id("stSidebar").get_by_role("link", name="What if",
                                                     exact=True).click()
        page.get_by_role("heading", name="What if", exact=True).wait_for(
            timeout=PAGE_TIMEOUT_MS)
        _selected(page, "Thread", "support-3")
        _settled(page)
        assert "thread=support-3" in page.url
        page.get_by_role("spinbutton", name="Recall threshold").fill("0.40")
        page.get_by_role("spinbutton", name="Recall top-k").fill("8")
        page.screenshot(path=str(shots / "whatif-form.png"))
        page.get_by_role("button", name="Try these settings").click()
        body = _outcome(page)
        assert re.search(r"With a lower bar for “similar enough” and room for up to 8 "
                         r"remembered messages, \d+ of 14 past runs would have been given a "
                         r"different prompt\.", body), body[:3000]
        assert "recall.threshold" not in body.split("Engineer details", 1)[0]
        assert "recall.threshold=0.4" in page.url and "recall.top_k=8" in page.url
        page.screenshot(path=str(shots / "whatif-outcome.png"), full_page=True)
        _pick(page, "Run", FORGOT)
        side = page.locator("body").inner_text().split("One run side by side", 1)[1]
        assert REFUND in side.split("What if", 1)[1]  # entered, on the what-if side
        assert f"run={FORGOT}" in page.url
        page.get_by_text("One run side by side").scroll_into_view_if_needed()
        page.screenshot(path=str(shots / "whatif-side-by-side.png"), full_page=True)

        # 2. a larger token budget, from a link: the gate code enters; asked again
        page.goto(f"{base}/whatif?thread=new-flat&token_budget=4000&run={GATE}",
                  timeout=PAGE_TIMEOUT_MS)
        body = _outcome(page)
        assert "With more room in the prompt (4000 tokens)" in body
        assert GATE_CODE in body.split("One run side by side", 1)[1]
        # the outcome leads; the form waits in a fold naming what the link tried
        fold = page.get_by_text("Settings tried: more room in the prompt (4000 tokens) — "
                                "open to change them")
        assert fold.is_visible()
        assert page.get_by_role("button", name="Try these settings").count() == 0
        page.get_by_role("button", name="Ask again (1 run)").click()
        page.get_by_text("Asked again, 1 of 1 answers changed.").wait_for(
            timeout=COMPOSE_TIMEOUT_MS)
        _settled(page)
        assert "4417" in page.locator("body").inner_text().split(
            "Answer to the what-if prompt", 1)[1]
        page.screenshot(path=str(shots / "whatif-asked.png"), full_page=True)
        fold.click()  # one click away: the form, holding what the link tried
        budget = page.get_by_role("spinbutton", name="Token budget")
        budget.wait_for(timeout=PAGE_TIMEOUT_MS)
        assert budget.input_value() == "4000"

        # 3. a setting that changes nothing says so
        page.goto(f"{base}/whatif?thread=support-3&token_budget=5000", timeout=PAGE_TIMEOUT_MS)
        body = _outcome(page)
        assert ("none of the 14 past runs would have been given anything different" in body)

        # 4. keep this answer
        page.goto(f"{base}/run?run=move-gate-large-budget", timeout=PAGE_TIMEOUT_MS)
        page.get_by_role("heading", name="Keep this answer").wait_for(timeout=PAGE_TIMEOUT_MS)
        _settled(page)
        page.get_by_role("button", name="Keep this answer").click()
        page.get_by_text("Pinned to suite kept answers: answer unchanged.").wait_for(
            timeout=PAGE_TIMEOUT_MS)
        _settled(page)  # (a pick made while the pin's rerun runs can be lost on a busy box)
        # a suite of a new name, typed into the picker
        suite = page.locator('[data-testid="stSelectbox"]').filter(has_text="Suite")
        suite.click()
        page.keyboard.type("release 2.0")
        page.keyboard.press("Enter")
        box = page.locator('input[role="combobox"][aria-label="Suite"]')
        page.wait_for_function("el => el.value === 'release 2.0'", arg=box.element_handle(),
                               timeout=PAGE_TIMEOUT_MS)
        _settled(page)
        page.get_by_role("button", name="Keep this answer").click()
        page.get_by_text("Pinned to suite release 2.0: answer unchanged.").wait_for(
            timeout=PAGE_TIMEOUT_MS)
        page.get_by_role("heading", name="Keep this answer").scroll_into_view_if_needed()
        page.screenshot(path=str(shots / "keep-this-answer.png"))
