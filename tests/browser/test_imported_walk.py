"""Issue 36 point 6 in Chromium, on a database of imported recordings (a tool loop from
OpenLLMetry's cassette, a Cohere cassette, an OTLP export): the run inspector says once
what a recording does not hold — no "unknown (not in the record)" rows, no field names
in its banners — labels its token counts recorded or estimated, and its run picker
names runs by time and question; on the Threads page a thread id in the table opens
that thread (point 4), and a branch links the thread it parted from. Screenshots (imported-run.png, imported-threads.png) are left in
the test's tmp directory. No request may leave loopback meanwhile."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from memory_core.importers import import_file
from memory_core.storage.duckdb import DuckDBStorage
from tests.app.test_imported_noise import (
    FIELD_NAME,
    NOT_HELD,
    QUESTION_WORDS,
    RECORDINGS,
    WEATHER,
    WEATHER_ANSWER_RUN,
)
from tests.browser.server import PAGE_TIMEOUT_MS, chromium, serve
from tests.browser.test_follow import _selected, _settled

pytestmark = pytest.mark.browser


def _line(messages: list[str], answer: str) -> str:
    return json.dumps({"request": {"model": "m", "messages": [
        {"role": "user" if i % 2 == 0 else "assistant", "content": t}
        for i, t in enumerate(messages)]},
        "response": {"choices": [{"message": {"role": "assistant", "content": answer}}]}})


# a conversation asked on twice from its first answer: the second is a branch of it
BRANCHED = [_line(["When was Go released?"], "2009."),
            _line(["When was Go released?", "2009.", "And Go 1.0?"], "2012."),
            _line(["When was Go released?", "2009.", "Who designed Go?"], "Three people.")]


def _imported_db(tmp_path: Path) -> tuple[Path, list[str]]:
    """The recordings' database, and the threads of the branched conversation (its
    trunk, then the branch)."""
    db = tmp_path / "imported.duckdb"
    (tmp_path / "branched.jsonl").write_text("\n".join(BRANCHED) + "\n")
    s = DuckDBStorage(str(db))
    try:
        for path in RECORDINGS:
            import_file(s, path)
        branched = import_file(s, tmp_path / "branched.jsonl").threads_created
    finally:
        s.close()
    return db, branched


def test_imported_runs_without_noise_in_chromium(tmp_path: Path) -> None:
    db, (trunk, branch) = _imported_db(tmp_path)
    with serve(["--db", str(db), "--read-only"], tmp_path) as base, chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 2400})
        page.goto(f"{base}/run?db=imported&run={WEATHER_ANSWER_RUN}", timeout=PAGE_TIMEOUT_MS)
        page.get_by_role("heading", name="Run inspector", exact=True).wait_for(
            timeout=PAGE_TIMEOUT_MS)
        _selected(page, "Run", WEATHER_ANSWER_RUN)
        main = page.get_by_test_id("stMainBlockContainer")
        main.get_by_text("Recorded call", exact=True).wait_for(timeout=PAGE_TIMEOUT_MS)
        _settled(page)
        page.screenshot(path=str(tmp_path / "imported-run.png"))
        text = main.inner_text()
        assert text.count(NOT_HELD) == 1
        assert "unknown (not in the record)" not in text
        for heading in ("Left out of the prompt", "Recall scores", "Settings"):
            assert main.get_by_role("heading", name=heading, exact=True).count() == 0
        banners = [b.inner_text() for b in main.get_by_test_id("stAlert").all()]
        assert banners and not [FIELD_NAME.findall(b) for b in banners if FIELD_NAME.findall(b)]
        # the two token counts say which is which
        assert "37 tokens (our estimate, chars/4)" in text
        assert "88 in / 24 out tokens (recorded)" in text
        # the picker names the run by its time and its question, not its hash alone
        thread_box = page.locator('input[role="combobox"][aria-label="Thread"]')
        assert thread_box.input_value() == f"{WEATHER} · “{QUESTION_WORDS}”"
        box = page.locator('input[role="combobox"][aria-label="Run"]')
        shown = box.input_value()
        # (runs of one day, told by their time; the question cut at a word so that the
        # run id at the end fits)
        assert shown.startswith("08:00:02 · ") and QUESTION_WORDS[:28] in shown
        box.click()
        options = [o.inner_text() for o in page.get_by_role("option").all()]
        assert len(options) == 2
        assert all(re.match(r"\d\d:\d\d:\d\d · “", o) for o in options)
        page.keyboard.press("Escape")

        # Threads: a thread id in the table is a link to that thread
        page.goto(f"{base}/threads?db=imported", timeout=PAGE_TIMEOUT_MS)
        page.get_by_role("heading", name="Threads", exact=True).wait_for(
            timeout=PAGE_TIMEOUT_MS)
        _settled(page)
        page.screenshot(path=str(tmp_path / "imported-threads.png"))
        # the table is Markdown: the "open" column's links go to the thread's URL here
        link = main.locator(f'.st-key-table-threads table a[href*="thread={WEATHER}"]').first
        link.wait_for(timeout=PAGE_TIMEOUT_MS)
        assert link.inner_text() == "open"
        assert (link.get_attribute("href") or "").startswith("threads?db=imported")
        with page.context.expect_page(timeout=PAGE_TIMEOUT_MS) as opened:
            link.click()
        other = opened.value
        other.wait_for_load_state()
        assert "db=imported" in other.url and f"thread={WEATHER}" in other.url
        other.get_by_role("heading", name="Threads", exact=True).wait_for(
            timeout=PAGE_TIMEOUT_MS)

        # a branch names the thread it parts from, a link that opens it
        page.goto(f"{base}/threads?db=imported&thread={branch}", timeout=PAGE_TIMEOUT_MS)
        _selected(page, "Thread", branch)
        came = main.get_by_role("link", name=f"branched from thread {trunk}")
        came.wait_for(timeout=PAGE_TIMEOUT_MS)
        came.click()
        _selected(page, "Thread", trunk)
        _settled(page)
        assert main.get_by_role("link", name=re.compile("^branched from")).count() == 0
