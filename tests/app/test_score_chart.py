"""The recall score chart of the run inspector and the story page: one bar a candidate,
in the order recall ranked them, even where candidates share a rank."""

from __future__ import annotations

import pytest

from app.charts import score_chart
from memory_core.analysis.views import ScoreCandidate


def _c(rank: int, score: float, status: str, seq: int) -> ScoreCandidate:
    return ScoreCandidate(thread_id="t", seq=seq, rank=rank, score=score,
                          status=status, preview=f"row {seq}")  # type: ignore[arg-type]


def test_candidates_sharing_a_rank_each_get_a_bar() -> None:
    # nothing passed the filter: every filtered-out row would have been rank 1 (the demo's
    # bathroom run showed one bar for five candidates, the others drawn behind it)
    cands = [_c(1, 0.29, "filtered-out", 21), _c(1, 0.34, "filtered-out", 24),
             _c(1, 0.28, "filtered-out", 25)]
    fig = score_chart(cands, threshold=0.3, top_k=3)
    (bars,) = fig.data
    assert sorted(bars.x) == [1, 2, 3]
    # highest score first, as recall ranked them; the axis names their shared rank
    assert list(zip(bars.x, bars.y, strict=True)) == [(1, 0.34), (2, 0.29), (3, 0.28)]
    assert list(fig.layout.xaxis.ticktext) == ["1", "1", "1"]
    assert "rank %{customdata[0]} without the filter" in bars.hovertemplate
    # every bar one width: plotly sized a trace's bars by the gaps between its own
    # slots, so hits two slots apart were drawn twice as wide, over their neighbours
    mixed = score_chart([_c(1, 0.9, "hit", 1), _c(1, 0.8, "filtered-out", 7),
                         _c(2, 0.7, "hit", 2)], threshold=0.3, top_k=3)
    assert {t.width for t in mixed.data} == {0.8}
    # all three are within the top-k cut: the line is drawn after them
    (cut,) = [s for s in fig.layout.shapes if s.line.dash == "dot"]
    assert cut.x0 == 3.5


def test_the_top_k_cut_falls_between_the_ranks_around_it() -> None:
    cands = [_c(1, 0.9, "hit", 1), _c(2, 0.8, "hit", 2), _c(2, 0.85, "filtered-out", 7),
             _c(3, 0.7, "beyond-top-k", 3), _c(4, 0.2, "below-threshold", 4)]
    fig = score_chart(cands, threshold=0.5, top_k=2)
    slots = {(x, y) for bars in fig.data for x, y in zip(bars.x, bars.y, strict=True)}
    assert slots == {(1, 0.9), (2, 0.85), (3, 0.8), (4, 0.7), (5, 0.2)}
    assert list(fig.layout.xaxis.ticktext) == ["1", "2", "2", "3", "4"]
    (cut,) = [s for s in fig.layout.shapes if s.line.dash == "dot"]
    assert cut.x0 == 3.5
    hit_bars = next(b for b in fig.data if b.name == "hit")
    assert hit_bars.hovertemplate.startswith("rank ")


@pytest.mark.parametrize(("statuses", "top_k"), [
    # rank 1 was already in the prompt's window: recall passed over it, so with top-k 2
    # ranks 2 and 3 are the hits and the cut falls after rank 3, not after rank 2
    (("already-in-window", "hit", "hit", "beyond-top-k"), 2),
    # top-k 4 but recall ran out after two hits: the window row it passed over (rank 3)
    # was walked too, the row below the threshold (rank 4) was not
    (("hit", "hit", "already-in-window", "below-threshold"), 4),
])
def test_the_top_k_cut_follows_the_rows_recall_walked(statuses: tuple[str, ...],
                                                      top_k: int) -> None:
    cands = [_c(i + 1, 0.9 - i / 10, status, i + 1) for i, status in enumerate(statuses)]
    fig = score_chart(cands, threshold=0.1, top_k=top_k)
    (cut,) = [s for s in fig.layout.shapes if s.line.dash == "dot"]
    assert cut.x0 == 3.5


def test_hover_text_keeps_quotes_and_escapes_tags() -> None:
    # plotly showed a tool call's quotes as "&quot;" in the chart's hover
    from app.components import plot_text

    assert plot_text('lookup({"id": "A-1"}) <b>x</b>') == \
        'lookup({"id": "A-1"}) &lt;b&gt;x&lt;/b&gt;'


def test_one_neighbouring_message_is_said_in_the_singular() -> None:
    from app.run_words import settings_text

    said = " ".join(settings_text({"recall_enabled": True, "top_k": 3, "message_range": 1}))
    assert "with 1 neighbouring message each side" in said
    said = " ".join(settings_text({"recall_enabled": True, "top_k": 3, "message_range": 2}))
    assert "with 2 neighbouring messages each side" in said
