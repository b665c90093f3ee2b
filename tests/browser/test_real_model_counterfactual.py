"""In Chromium: a run made with the OpenAI-compatible client (against the local fake
provider) opened on the Counterfactual page, its recalled messages subtracted and the
recorded model re-asked once the visitor confirms the server the database names — no
model configured by hand, every request a valid one."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_core.composition.memory import AgentMemory
from memory_core.embedding.hashing import HashingEmbedder
from memory_core.models.openai_chat import OpenAIChatModel
from memory_core.recall.config import RecallConfig
from memory_core.runs.runner import Agent, Runner
from memory_core.storage.duckdb import DuckDBStorage
from memory_core.types import Message
from tests.browser.server import PAGE_TIMEOUT_MS, chromium, serve
from tests.fake_provider.server import FakeProvider
from tests.fake_provider.validation import validate_request

pytestmark = pytest.mark.browser


def _real_model_run(path: Path, fp: FakeProvider) -> None:
    s = DuckDBStorage(str(path))
    embed = HashingEmbedder(256)
    mem = AgentMemory(s, embed=embed, recent_n=2,
                      recall=RecallConfig(top_k=3, threshold=0.1, scope="resource"))
    mem.append("old", [Message(role="user", content="The refund for the blender was "
                                                     "approved: 240 euros."),
                       Message(role="assistant", content="Noted.")], "anna")
    model = OpenAIChatModel(base_url=fp.base_url, model="fake-model", temperature=0.0,
                            seed=3, max_retries=0)
    Runner(s, {"a": Agent("a", "Answer from the conversation.", model)}, memory=mem).run(
        "a", run_id="r1", thread_id="cur", resource_id="anna",
        prompt="What did we decide about the refund for my blender?")
    s.close()


def test_counterfactual_of_a_real_model_run_in_chromium(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("MEMWB_OPENAI_BASE_URL", "MEMWB_OPENAI_MODEL", "MEMWB_OPENAI_API_KEY",
                "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    db = tmp_path / "real.duckdb"
    with FakeProvider() as fp:
        _real_model_run(db, fp)
        asked = len(fp.chat_bodies)
        with serve(["--db", str(db)], tmp_path) as base, chromium() as browser:
            page = browser.new_page(viewport={"width": 1400, "height": 2400})
            page.goto(f"{base}/counterfactual?run=r1", timeout=PAGE_TIMEOUT_MS)
            page.get_by_text("The model this run used").first.wait_for(timeout=PAGE_TIMEOUT_MS)
            assert page.get_by_text("fake-model").count() >= 1
            page.get_by_text("Subtract all recalled").click()
            assert fp.chat_bodies[asked:] == []  # not asked before it is confirmed
            page.get_by_text("this database names it").click()
            page.get_by_text("without your API key").first.wait_for(timeout=PAGE_TIMEOUT_MS)
            page.get_by_role("button", name="Run counterfactual").click()
            page.get_by_text("Verdict").first.wait_for(timeout=PAGE_TIMEOUT_MS)
            shot = tmp_path / "counterfactual.png"
            page.screenshot(path=str(shot), full_page=True)
            assert page.get_by_text("changed", exact=False).count() >= 1
        new = fp.chat_bodies[asked:]
    assert new, "the recorded server was not re-asked"
    for body in new:
        assert body["model"] == "fake-model"
        validate_request(body)
