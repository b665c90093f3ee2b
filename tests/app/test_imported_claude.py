"""The run inspector and threads page on imported Claude (Anthropic Messages API) runs:
every run of the real recordings renders with its lanes, its answer or tool calls and
a seal badge that verifies."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from app.components import RUN_PAGE, THREADS_PAGE
from memory_core.importers import import_file
from memory_core.storage.inmemory import InMemoryStorage

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "imports" / "real"


@pytest.mark.parametrize("name", ["pydanticai-test_anthropic_tool_output.yaml",
                                  "openllmetry-test_anthropic_tools_streaming_legacy.yaml"])
def test_imported_claude_runs_render_and_verify(empty_db: InMemoryStorage,
                                                app: Callable[..., AppTest], name: str) -> None:
    report = import_file(empty_db, REAL / name)
    for rid in report.runs_created:
        at = app(RUN_PAGE, run=rid)
        assert not at.exception and not at.error
        assert any("verified: every record matches its seal" in m.value for m in at.markdown)
        assert any("→ get_" in t.value or "→ final_result" in t.value for t in at.text)
    at = app(THREADS_PAGE, thread=report.threads_created[0])
    assert not at.exception and not at.error
