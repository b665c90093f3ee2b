"""Chromium walk of the run inspector on a run made with another memory (SPEC §6.8: it
says the memory gives no provenance record) and on a run whose stored messages were
truncated away (SPEC §2.7: shown, verified, no seal alarm)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from memory_core.composition.memory import AgentMemory
from memory_core.models.scripted import ScriptedModel
from memory_core.runs.runner import Agent, Runner
from memory_core.storage.duckdb import DuckDBStorage
from memory_core.types import Message
from tests.app.fixture_db import T0, build_duckdb_file
from tests.browser.server import PAGE_TIMEOUT_MS, chromium, serve

pytestmark = pytest.mark.browser


class Elsewhere:
    def get_messages(self, thread_id: str) -> list[Message]:
        return [Message(role="user", content="**kept elsewhere**"),
                Message(role="assistant", content="noted")]


@pytest.fixture()
def base(tmp_path: Path) -> Iterator[str]:
    db = tmp_path / "other.duckdb"
    build_duckdb_file(str(db))
    s = DuckDBStorage(str(db))
    try:
        clock = lambda: T0 + timedelta(days=30)  # noqa: E731
        Runner(s, {"other": Agent(name="other", instructions="x",
                                  model=ScriptedModel(["fine"]))},
               memory=Elsewhere(), clock=clock).run(
            "other", run_id="mo-1", thread_id="far-away", prompt="hello")
        mem = AgentMemory(s, recent_n=4)
        runner = Runner(s, {"short": Agent(name="short", instructions="x",
                                           model=ScriptedModel(["one", "two"]))},
                        memory=mem, clock=clock)
        runner.run("short", run_id="tr-1", thread_id="rewound", prompt="first")
        runner.run("short", run_id="tr-2", thread_id="rewound", prompt="second")
        assert mem.truncate_messages_after("rewound", 0) == 3
    finally:
        s.close()
    with serve(["--db", str(db)], tmp_path) as url:
        yield url


def test_inspector_on_other_memory_and_truncated_runs_in_chromium(base: str,
                                                                  tmp_path: Path) -> None:
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 2200})
        page.goto(f"{base}/run?run=mo-1", timeout=PAGE_TIMEOUT_MS)
        note = page.get_by_text("this memory gives no provenance record", exact=False)
        note.wait_for(timeout=PAGE_TIMEOUT_MS)
        assert note.is_visible()
        page.get_by_role("tab").filter(has_text="Recent (2)").click()
        page.get_by_text("**kept elsewhere**", exact=True).wait_for(timeout=PAGE_TIMEOUT_MS)
        page.get_by_test_id("stProgress").first.wait_for(timeout=PAGE_TIMEOUT_MS)  # the lanes
        page.screenshot(path=str(tmp_path / "other_memory.png"), full_page=True)

        page.goto(f"{base}/run?run=tr-2", timeout=PAGE_TIMEOUT_MS)
        page.get_by_role("heading", name="Run inspector").wait_for(timeout=PAGE_TIMEOUT_MS)
        page.get_by_text("two", exact=True).first.wait_for(timeout=PAGE_TIMEOUT_MS)
        page.get_by_text("removed since by a truncation", exact=False).wait_for(
            timeout=PAGE_TIMEOUT_MS)
        page.get_by_test_id("stProgress").first.wait_for(timeout=PAGE_TIMEOUT_MS)  # the lanes
        assert page.get_by_text("no longer matches its seal", exact=False).count() == 0
        page.screenshot(path=str(tmp_path / "truncated.png"), full_page=True)
