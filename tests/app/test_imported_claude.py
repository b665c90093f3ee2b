"""The run inspector and threads page on imported Claude (Anthropic Messages API) runs:
every run of the real recordings renders with its lanes, its answer or tool calls and
a seal badge that verifies; the Counterfactual page on an imported run."""

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


def test_an_imported_run_s_messages_can_be_taken_out_one_by_one(
        empty_db: InMemoryStorage, app: Callable[..., AppTest]) -> None:
    """An imported run recalls nothing: its whole history is what the client sent. The
    Counterfactual page offered only recalled messages to take out and disabled
    attribution ("This run recalled nothing"), though the library takes any stored
    message the run was given (the CLI's --subtract and attribute do)."""
    from app.components import COUNTERFACTUAL_PAGE
    from memory_core.analysis.counterfactual import variant_options

    report = import_file(
        empty_db, REAL / "langsmithsdk-test_google_adk_test_runner_run_sync_with_tool.yaml")
    rid = next(r for r in report.runs_created
               if variant_options(empty_db, r).given)  # (a run with history)
    given = variant_options(empty_db, rid).given
    at = app(COUNTERFACTUAL_PAGE, run=rid)
    assert not at.exception and not at.error
    others = next(m for m in at.multiselect if m.label.startswith("Other messages"))
    assert not others.disabled and len(others.options) == len(given)
    attribute = next(b for b in at.button if b.label == "Run attribution")
    assert not attribute.disabled or "model" in (attribute.help or "")  # (a model to ask)
