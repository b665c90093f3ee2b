"""The Why-forgotten page names the part a phrase matched (issue 34 point 2): a tool
result the model read, the instructions it was given; stored text shown literally."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from streamlit.testing.v1 import AppTest

from app.components import WHY_PAGE
from memory_core.storage.inmemory import InMemoryStorage
from tests.analysis.test_why_parts import INSTRUCTIONS, RESULT, RUN, support_run
from tests.app.conftest import served
from tests.app.markdown import raw_html, shown_text
from tests.app.test_pages import json_blocks

MakeApp = Callable[..., AppTest]


@pytest.fixture()
def support(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemoryStorage]:
    yield from served(support_run(), monkeypatch)


def _ok(at: AppTest) -> None:
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    assert not raw_html(at)


def _captions(at: AppTest) -> list[str]:
    return [shown_text(c.value) for c in at.caption]


def test_a_number_in_a_tool_result_names_the_tool_result(support: InMemoryStorage,
                                                          app: MakeApp) -> None:
    at = app(WHY_PAGE, run=RUN, q="3.25")
    _ok(at)
    md = [m.value for m in at.markdown]
    assert "## :green-badge[:material/check_circle: earlier-step]" in md
    seq = next(m.seq for m in support.memory.get_messages("t") if m.tool_results())
    assert (f"t #{seq} · tool · in the result of lookup_order (call call-1) · contains "
            "the phrase · similarity to the phrase —") in _captions(at)
    # the matched part's text, as stored: never Markdown or HTML
    shown = [t.value for t in at.text]
    assert any(RESULT["note"] in t and '"weight_kg": 3.25' in t for t in shown), shown
    assert not any("left at door" in m and "**" not in m for m in md)
    info = shown_text(at.info[1].value)
    assert info.startswith("“3.25” is in the result of tool lookup_order (call call-1)")
    evidence = json_blocks(at)[0]
    assert (evidence["part"], evidence["tool"], evidence["call_id"]) == (
        "tool-result", "lookup_order", "call-1")


def test_a_phrase_of_the_system_prompt_is_the_instructions(support: InMemoryStorage,
                                                           app: MakeApp) -> None:
    at = app(WHY_PAGE, run=RUN, q="need a manager's sign-off")
    _ok(at)
    assert "## :green-badge[:material/check_circle: instructions]" in [
        m.value for m in at.markdown]
    caps = _captions(at)
    assert ("(not a stored message: instructions of this run) · system · in the "
            "instructions · contains the phrase · similarity to the phrase —") in caps
    assert "instructions of this run's prompt · system" in caps
    infos = [shown_text(i.value) for i in at.info]
    assert infos[0].startswith("“need a manager's sign-off” appears word for word in the "
                               "instructions")
    assert "it is part of the instructions (the agent's system prompt)" in infos[1]
    assert INSTRUCTIONS in [t.value for t in at.text]
    assert json_blocks(at)[0]["part"] == "instructions"
    assert len(at.get("plotly_chart")) == 0  # no stored message: no lifeline
