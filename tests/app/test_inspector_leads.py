"""The run inspector leads with what the model was given and what was left out (issue
36.1): the Dropped lane and the near misses on first paint, without a click; the score
chart says what its first bar is and includes the hits composition then dropped; the
settings folded, in words."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streamlit.testing.v1 import AppTest

from app.components import RUN_PAGE
from app.run_words import first_bar_text, settings_text
from memory_core.analysis import views
from memory_core.analysis.views import ScoreCandidate
from memory_core.storage.inmemory import InMemoryStorage
from tests.app.fixture_db import RUN_1, FixtureInfo, records
from tests.app.markdown import tables

Populated = tuple[InMemoryStorage, FixtureInfo]
MakeApp = Callable[..., AppTest]


def _in_tabs(at: AppTest) -> list[str]:
    """The text of every element inside the lane tabs (what needs a click to see)."""
    out: list[str] = []

    def walk(node: Any) -> None:
        for child in getattr(node, "children", {}).values():
            value = getattr(child, "value", None)
            if isinstance(value, str):
                out.append(value)
            walk(child)

    for tab in at.tabs:
        walk(tab)
    return out


def _unescaped(text: str) -> str:
    import re

    return re.sub(r"\\(.)", r"\1", text.replace("`", ""))


def test_first_paint_shows_the_dropped_lane_and_near_misses(populated: Populated,
                                                            app: MakeApp) -> None:
    storage, _ = populated
    memctx = records(storage, RUN_1).memctx
    assert memctx is not None and memctx.dropped and memctx.near_misses
    at = app(RUN_PAGE, run=RUN_1)
    assert not at.exception and not at.error
    headings = [m.value for m in at.markdown]
    # what was given comes first (a sentence), then what was left out, then the lanes
    order = [h for h in headings if h.startswith("#### ")]
    assert order[:3] == ["#### In the prompt", "#### Left out of the prompt", "#### Lanes"]
    assert f"##### Dropped ({memctx.dropped_count})" in headings
    # (a candidate in the recent window is in the prompt: not among them)
    left = [nm for nm in memctx.near_misses if nm.reason != "already-in-window"]
    assert len(left) < len(memctx.near_misses)
    assert f"##### Near misses ({len(left)})" in headings
    # no tab for the dropped: they are shown outside the tabs, as are the near misses
    assert not [t for t in at.tabs if t.label.startswith("Dropped")]
    tabbed = _in_tabs(at)
    view = views.run_view(storage, RUN_1)
    dropped_text = view.lane("dropped").items[0].text
    texts = [t.value for t in at.text]
    assert dropped_text in texts and dropped_text not in tabbed
    # the answer leads: shown above everything that explains it
    assert view.answer is not None and texts.index(view.answer) < texts.index(dropped_text)
    captions = [_unescaped(c.value) for c in at.caption]
    assert any(c.startswith("dropped: a tool call without its result · assistant · rank ")
               for c in captions)
    # (a filtered-out one by its rank with the filter lifted: the record's is shared)
    for c in view.candidates:
        if c.status not in ("hit", "already-in-window"):
            rank = f"rank {c.rank}" + (" without the filter" if c.status == "filtered-out"
                                       else "")
            assert any(x.startswith(f"{rank} · ") for x in captions), (rank, captions)
    # the near misses link to their messages
    links = [el.proto.query_string for el in at.main.get("page_link")]
    for nm in left:
        assert any(q.endswith(f"thread={nm.thread_id}&seq={nm.seq}") for q in links)


def test_the_score_chart_says_what_its_first_bar_is(populated: Populated,
                                                    app: MakeApp) -> None:
    storage, _ = populated
    at = app(RUN_PAGE, run=RUN_1)
    view = views.run_view(storage, RUN_1)
    ranked = view.ranked()
    assert ranked[0].rank == 1
    said = first_bar_text(ranked, view.threshold, view.top_k)
    assert said.startswith(f"The first bar is rank 1, {ranked[0].thread_id} #{ranked[0].seq}: ")
    assert said in [_unescaped(c.value) for c in at.caption]
    import json

    chart = json.loads(at.get("plotly_chart")[0].proto.spec)  # the lanes are no chart
    # the dropped hit has a bar of its own, named as dropped
    assert "dropped" in {t["name"] for t in chart["data"]}
    assert any("what became of it" in t.columns for t in tables(at))


def test_rank_one_dropped_is_said_and_a_missing_rank_one_too() -> None:
    dropped = ScoreCandidate(thread_id="support-2", seq=8, rank=1, score=0.61, status="dropped",
                             preview="refund", reason="unanswered-tool-call")
    nxt = ScoreCandidate(thread_id="support-1", seq=4, rank=2, score=0.5, status="hit",
                         preview="blender")
    assert first_bar_text([dropped, nxt], 0.45, 3) == (
        "The first bar is rank 1, support-2 #8: recalled, then dropped: a tool call "
        "without its result.")
    # an older record that kept no dropped hit: the chart does not start at 2 silently
    assert first_bar_text([nxt], 0.45, 3).startswith(
        "Rank 1 is not in this run's record; the chart starts at rank 2. ")


def test_settings_are_folded_and_said_in_words(populated: Populated, app: MakeApp) -> None:
    storage, _ = populated
    at = app(RUN_PAGE, run=RUN_1)
    view = views.run_view(storage, RUN_1)
    words = " ".join(settings_text(view.settings))
    assert words.startswith(f"Recent window: the last {view.settings['recent_n']} messages")
    assert f"keeping the top {view.top_k}" in words and "Recall: " in words
    assert words in [_unescaped(c.value) for c in at.caption]
    (folded,) = [e for e in at.expander if e.label == "All settings, as recorded"]
    assert folded.proto.expanded is False
    # with observational memory the window is what no observation condensed yet (a walk
    # read "the last 8 messages" above a recent lane of 51)
    observed = " ".join(settings_text({"recent_n": 8, "observational": True}))
    assert observed.startswith("Recent window: every message of the thread not yet "
                               "condensed into an observation (the last 8 until the first")
    at.session_state["all-settings"] = True  # a click opens it
    at.run()
    (folded,) = [e for e in at.expander if e.label == "All settings, as recorded"]
    assert len(folded.json) == 1  # the raw settings, one click away
