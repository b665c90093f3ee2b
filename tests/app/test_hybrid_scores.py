"""A hybrid recall's run on the run inspector: its hits and near misses rank by a fused
score while its threshold bounds their similarity, so the cards and the candidates'
table say both, and the score chart draws the similarities against the threshold line
(a vector-mode run's page is unchanged: one score)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator

import pytest
from streamlit.testing.v1 import AppTest

from app.charts import score_chart
from app.components import RUN_PAGE, fmt_score
from memory_core.analysis import views
from memory_core.analysis.views import ScoreCandidate
from tests.analysis.conftest import QUESTION, World, assistant, hybrid_pair, recall, user
from tests.app.conftest import served
from tests.app.markdown import tables

MakeApp = Callable[..., AppTest]


@pytest.fixture
def hybrid(monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    w = World()
    w.say("old", "r1", user("The refund for the blender was approved: 240 euros."),
          assistant("Noted."), user("The kettle voucher expired."),
          user("Nice weather for a lamp."))
    w.say("cur", "r1", user("Hello"), assistant("Hi!"), user("Quick thing first."))
    w.run("r-hyb", "cur", "r1", QUESTION,
          memory=w.memory(recall=recall(top_k=1, threshold=0.2, mode="hybrid")))
    w.run("r-vec", "cur", "r1", QUESTION,
          memory=w.memory(recall=recall(top_k=1, threshold=0.2)))
    yield from (w for _ in served(w.storage, monkeypatch))


def _captions(at: AppTest) -> list[str]:
    return [re.sub(r"\\(.)", r"\1", c.value) for c in at.caption]


def test_hybrid_cards_and_table_say_the_fused_score_and_the_similarity(
        hybrid: World, app: MakeApp) -> None:
    view = views.run_view(hybrid.storage, "r-hyb")
    [hit] = [i for i in view.lane("recalled").items if i.rank == 1]
    assert hit.similarity is not None and hit.score is not None
    at = app(RUN_PAGE, run="r-hyb")
    assert not at.exception and not at.error
    captions = _captions(at)
    said = f"fused score {fmt_score(hit.score)} · similarity {fmt_score(hit.similarity)}"
    assert any(said in c for c in captions), captions  # (the Recalled tab opens first)
    ranked = view.ranked()
    misses = [c for c in ranked if c.status != "hit" and c.similarity is not None]
    assert misses  # the near misses' cards say both too
    assert any(f"fused score {fmt_score(misses[0].score)} · similarity "
               f"{fmt_score(misses[0].similarity)}" in c for c in captions)
    [table] = [t for t in tables(at) if "what became of it" in t.columns]
    assert table.columns[:4] == ["rank", "fused score", "similarity", "word score"]
    # the word score says why a message under the bar was taken: it shares a word
    words = {(c.thread_id, c.seq): c.lexical for c in ranked}
    assert all(w is not None for w in words.values())
    assert any(w and c.status == "hit" for c in ranked
               if (w := words[(c.thread_id, c.seq)]) is not None)
    assert any("ranks those by the fused score, which has no fixed scale" in c
               for c in captions)
    assert table.rows[0]["similarity"] == fmt_score(ranked[0].similarity or ranked[0].score)
    chart = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert chart["layout"]["yaxis"]["title"]["text"] == "similarity"
    # the settings say what the threshold bounds
    assert any("counting a similarity from 0.200 (below it, only shared words count)" in c
               for c in captions)


def test_a_vector_run_says_one_score(hybrid: World, app: MakeApp) -> None:
    view = views.run_view(hybrid.storage, "r-vec")
    [hit] = [i for i in view.lane("recalled").items if i.rank == 1]
    assert hit.similarity is None and hit.score is not None
    at = app(RUN_PAGE, run="r-vec")
    captions = _captions(at)
    assert any(f"score {fmt_score(hit.score)}" in c for c in captions)
    assert not any("similarity" in c for c in captions)
    [table] = [t for t in tables(at) if "what became of it" in t.columns]
    assert table.columns[:2] == ["rank", "score"] and "similarity" not in table.columns


def test_the_chart_draws_a_hybrid_candidate_by_its_similarity() -> None:
    cands = [ScoreCandidate(thread_id="t", seq=1, rank=1, score=1.35, similarity=0.61,
                            status="hit", preview="a"),
             ScoreCandidate(thread_id="t", seq=2, rank=2, score=0.9, similarity=0.12,
                            status="beyond-top-k", preview="b")]
    fig = score_chart(cands, threshold=0.2, top_k=1)
    assert [(b.name, list(b.y)) for b in fig.data] == [("hit", [0.61]),
                                                       ("beyond-top-k", [0.12])]
    assert "fused score" in fig.data[0].hovertemplate
    assert fig.layout.yaxis.title.text == "similarity"
    assert fig.layout.xaxis.title.text == "rank by fused score"


def test_a_hybrid_miss_below_the_bar_says_it_shared_no_word(
        hybrid: World, app: MakeApp) -> None:
    """Hybrid recall also takes a message that shares a word with the question, so one
    kept out by the threshold shared none, and says so; it ranks after every message
    recall could take, whose fused score may be under 0 (z-scored), while its own is 0."""
    view = views.run_view(hybrid.storage, "r-hyb")
    ranked = view.ranked()
    below = [c for c in ranked if c.status == "below-threshold"]
    assert below and all(c.similarity is not None and c.similarity < 0.2 for c in below)
    assert max(ranked.index(c) for c in ranked if c.status != "below-threshold") < \
        min(ranked.index(c) for c in below)
    assert any(c.score < 0 for c in ranked if c.status != "below-threshold")
    at = app(RUN_PAGE, run="r-hyb")
    said = (f"no word shared with the question, and a similarity below the threshold "
            f"{fmt_score(0.2)}: not recalled")
    assert any(said in c for c in _captions(at))
    [table] = [t for t in tables(at) if "what became of it" in t.columns]
    assert said in [r["what became of it"] for r in table.rows]


def test_a_candidate_in_the_recent_window_is_not_left_out(hybrid: World,
                                                         app: MakeApp) -> None:
    """"Hi!" and "Quick thing first." are recall candidates in the recent window: the
    prompt holds them, so "Left out of the prompt" does not list them as near misses."""
    view = views.run_view(hybrid.storage, "r-hyb")
    in_window = [c for c in view.candidates if c.status == "already-in-window"]
    assert in_window
    recent = {(i.thread_id, i.seq) for i in view.lane("recent").items}
    assert all((c.thread_id, c.seq) in recent for c in in_window)
    at = app(RUN_PAGE, run="r-hyb")
    left = sum(c.status not in ("hit", "already-in-window") for c in view.candidates)
    assert any(m.value == f"##### Near misses ({left})" for m in at.markdown)
    # no near miss's card says it (the candidates' table below still does)
    assert not any("already in the prompt's recent window" in c for c in _captions(at))


def test_compare_names_the_fused_score_of_a_hybrid_run(
        monkeypatch: pytest.MonkeyPatch, app: MakeApp) -> None:
    """Compare's score column beside a reason about the similarity read as two numbers
    for one thing ("7.127 → 0.000" beside "1.000 → -0.196"): with a hybrid run on either
    side it says it holds the fused score."""
    from app.components import COMPARE_PAGE

    w = hybrid_pair(World())
    for _ in served(w.storage, monkeypatch):
        at = app(COMPARE_PAGE, a="ra", b="rb")
        assert not at.exception and not at.error, [e.value for e in at.error]
        (changes,) = [t for t in tables(at) if "change" in t.columns]
        assert "fused score (A → B)" in changes.columns, changes.columns
        assert "score (A → B)" not in changes.columns
        assert any(" · fused score " in c for c in _captions(at)), _captions(at)
        reasons = " ".join(changes["reason"])
        assert "similarity moved across the threshold" in reasons, reasons
