"""The run inspector's "Recorded call" on imported runs (issue 34 point 4): the model,
the recorded usage beside our estimate, the finish reason and the tools offered."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from streamlit.testing.v1 import AppTest

from app.components import RUN_PAGE
from memory_core.importers import import_file
from memory_core.storage.inmemory import InMemoryStorage

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "imports" / "real"
COHERE_CONNECTORS = "langchain-cohere-v1-test_connectors.yaml"


def test_the_run_inspector_shows_the_recorded_call(empty_db: InMemoryStorage,
                                                   app: Callable[..., AppTest]) -> None:
    rid = import_file(empty_db, REAL / COHERE_CONNECTORS).runs_created[0]
    # (imported before the first page run: the pages cache what they read)
    bare = import_file(empty_db, REAL / "langchain-cohere-v1-test_streaming_tool_call.yaml")
    at = app(RUN_PAGE, run=rid)
    assert not at.exception and not at.error
    assert any(m.value == "#### Recorded call" for m in at.markdown)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Input tokens (recorded)"] == "19783"
    assert metrics["Output tokens (recorded)"] == "7"
    captions = [c.value.replace("\\", "") for c in at.caption]  # (escaped Markdown)
    assert "our estimate: 12 tokens (chars/4)" in captions
    assert "Finish reason: COMPLETE · tools offered: none" in captions
    at = app(RUN_PAGE, run=bare.runs_created[0])
    assert not at.exception
    assert "Finish reason: COMPLETE · tools offered: Person" in [
        c.value.replace("\\", "") for c in at.caption]
