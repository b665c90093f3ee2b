"""The plotly figures of the engineer views (the run inspector's and the story's
score chart, the story's token bar): drawn only where words and tables cannot say the
same (decision 011), so a page without them never loads the chart library."""

from __future__ import annotations

import plotly.graph_objects as go

from app.components import (
    LANE_COLOURS,
    LANE_TITLES,
    STATUS_COLOURS,
    fmt_score,
    plot_text,
    truncate,
)
from memory_core.analysis import views


def token_bar(lanes: list[views.LaneView], *, height: int = 170) -> go.Figure:
    """One stacked horizontal bar: the prompt's tokens split by lane."""
    fig = go.Figure()
    for lv in lanes:
        if lv.lane == "dropped":
            continue
        fig.add_trace(go.Bar(
            name=LANE_TITLES[lv.lane], x=[lv.tokens], y=["prompt"], orientation="h",
            marker_color=LANE_COLOURS[lv.lane],
            hovertemplate=f"{LANE_TITLES[lv.lane]}: %{{x}} tokens<extra></extra>"))
    fig.update_layout(barmode="stack", height=height,
                      margin={"l": 10, "r": 10, "t": 30, "b": 10},
                      # the legend in prompt order, as the bar reads (plotly reverses
                      # a stacked bar's legend by default)
                      xaxis_title="tokens", legend={"orientation": "h", "y": 1.35,
                                                    "traceorder": "normal"},
                      yaxis={"showticklabels": False})
    return fig


def score_chart(candidates: list[views.ScoreCandidate], threshold: float | None,
                top_k: int | None) -> go.Figure:
    """Recall candidates in rank order, one bar each: hits and near misses as bars
    (the axis names each bar's rank), the threshold as a horizontal line and the top-k
    cut as a vertical one. Rows that did not pass the filter carry the rank they would
    have had, which others may share: each still gets a bar of its own (drawn at their
    rank they hid one another). Hybrid recall's candidates (a fused score beside a
    similarity) are drawn by their similarity, which the threshold bounds."""
    fig = go.Figure()
    ordered = sorted(candidates, key=lambda c: (c.rank, -c.score, c.thread_id, c.seq))
    slot = {id(c): i + 1 for i, c in enumerate(ordered)}
    # hybrid recall ranks by a fused score, while its threshold bounds the similarity:
    # the bars are then the similarities (the line's measure), in the fused order
    fused = any(c.similarity is not None for c in ordered)
    by_status: dict[str, list[views.ScoreCandidate]] = {}
    for c in ordered:
        by_status.setdefault(c.status, []).append(c)
    for status, cs in by_status.items():
        rank = "rank %{customdata[0]}" + (" without the filter" if status == "filtered-out"
                                          else "")
        measure = (f"{rank} · similarity %{{y:.3f}} · fused score %{{customdata[4]}}" if fused
                   else f"{rank} · score %{{y:.3f}}")
        fig.add_trace(go.Bar(
            # one width for every bar: plotly sizes a trace's bars by the gaps between
            # its own slots, so a status with bars two slots apart covered its neighbours
            name=status, x=[slot[id(c)] for c in cs], width=0.8,
            y=[c.similarity if fused and c.similarity is not None else c.score for c in cs],
            marker_color=STATUS_COLOURS.get(status, "#636363"),
            # plotly hover labels understand some HTML: escape stored text
            customdata=[[c.rank, plot_text(f"{c.thread_id} #{c.seq}"),
                         plot_text(truncate(c.preview, 80)), plot_text(c.filter_clause or ""),
                         fmt_score(c.score)]
                        for c in cs],
            hovertemplate=(f"{measure}<br>"
                           "%{customdata[1]}<br>%{customdata[2]}<br>%{customdata[3]}"
                           f"<extra>{status}</extra>")))
    if threshold is not None:
        fig.add_hline(y=threshold, line_dash="dash", line_color="#d62728",
                      annotation_text=f"threshold {fmt_score(threshold)}",
                      annotation_position="top right")
    if top_k is not None:
        # after the top_k-th hit: recall passes over the rows already in the window or
        # copying the question without counting them, so rank 5 may be the 4th hit
        hits = [slot[id(c)] for c in ordered if c.status in ("hit", "dropped")]
        # fewer hits than top_k: recall walked every candidate that could be one, so
        # the cut falls after the last it walked (a hit, or a row it passed over)
        walked = [slot[id(c)] for c in ordered if c.status in (
            "hit", "dropped", "already-in-window", "duplicate-of-query")]
        inside = hits[top_k - 1] if len(hits) >= top_k else max(
            walked, default=sum(1 for c in ordered if c.rank <= top_k))
        fig.add_vline(x=inside + 0.5, line_dash="dot", line_color="#333333",
                      annotation_text=f"top-k = {top_k}", annotation_position="top left")
    fig.update_layout(height=320, margin={"l": 10, "r": 10, "t": 30, "b": 10},
                      xaxis_title="rank by fused score" if fused else "rank",
                      yaxis_title="similarity" if fused else "score", barmode="overlay",
                      xaxis={"tickmode": "array", "tickvals": list(range(1, len(ordered) + 1)),
                             "ticktext": [str(c.rank) for c in ordered]})
    return fig
