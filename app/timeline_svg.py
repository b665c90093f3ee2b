"""The composition timeline's stacked area as an SVG picture drawn here: tokens per lane
per run, oldest run first, the marked run as a red line and compactions as dashed green
lines. A picture, not a chart library: plotly costs a cold browser tab ~1 CPU-s before it
draws anything (issue 36 point 7); the page's table holds the numbers."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from app.components import LANE_COLOURS, LANE_TITLES
from memory_core.analysis.timeline import TimelinePoint

WIDTH, HEIGHT = 1100, 380
LEFT, RIGHT, TOP, BOTTOM = 70, 20, 50, 70  # room for the axes, the legend, the labels
MAX_LABELS = 12  # run labels under the axis; the others are in the table


def _text(x: float, y: float, text: str, **attrs: str) -> str:
    attrs = {"font_size": "12", **attrs}
    extra = " ".join(f'{k.replace("_", "-")}="{v}"' for k, v in attrs.items())
    return f'<text x="{x:.1f}" y="{y:.1f}" {extra}>{escape(text)}</text>'


def _ticks(top: int) -> list[int]:
    """Round values (1, 2, 5 × 10ⁿ apart) from 0 to ``top``, at most six."""
    step, factors = 1, [2, 2.5, 2]  # 1 → 2 → 5 → 10 → 20 → 50 …
    while top / step > 5:
        step = round(step * factors[0])
        factors = factors[1:] + factors[:1]
    return list(range(0, top + 1, step))


def timeline_svg(points: list[TimelinePoint], lanes: Sequence[str], marked: str | None,
                 compactions: list[TimelinePoint], y_title: str) -> str:
    """The picture as SVG markup: run ids and every text escaped, shown literally."""
    shown = [ln for ln in lanes if any(p.tokens[ln] for p in points)]
    top = max((sum(p.tokens[ln] for ln in shown) for p in points), default=0) or 1
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    n = len(points)

    def x(i: int) -> float:
        return LEFT + (plot_w / 2 if n == 1 else plot_w * i / (n - 1))

    def y(v: float) -> float:
        return TOP + plot_h * (1 - v / top)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
           f'width="{WIDTH}" height="{HEIGHT}" font-family="sans-serif">',
           f'<rect width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>']
    for v in _ticks(top):
        out += [f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(v):.1f}" y2="{y(v):.1f}" '
                'stroke="#e5e5e5"/>',
                _text(LEFT - 6, y(v) + 4, f"{v:,}", text_anchor="end", fill="#555555")]
    below = [0] * n
    for lane in shown:
        above = [b + p.tokens[lane] for b, p in zip(below, points, strict=True)]
        colour = LANE_COLOURS[lane]
        if n == 1:  # one run has no area: its lanes are a stacked column
            out.append(f'<rect data-lane="{lane}" x="{x(0) - 20:.1f}" y="{y(above[0]):.1f}" '
                       f'width="40" height="{y(below[0]) - y(above[0]):.1f}" '
                       f'fill="{colour}"/>')
        else:
            edge = [f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(above)]
            back = [f"{x(i):.1f},{y(v):.1f}" for i, v in reversed(list(enumerate(below)))]
            out.append(f'<polygon data-lane="{lane}" points="{" ".join(edge + back)}" '
                       f'fill="{colour}" fill-opacity="0.85" stroke="#ffffff" '
                       'stroke-width="0.5"/>')
        below = above
    for p in compactions:
        out += [f'<line data-compaction="{p.index}" x1="{x(p.index):.1f}" '
                f'x2="{x(p.index):.1f}" y1="{TOP}" y2="{TOP + plot_h}" stroke="#31a354" '
                'stroke-width="2" '
                'stroke-dasharray="6 4"/>',
                _text(x(p.index) - 4, TOP + 14, f"compaction: {p.observation_count} obs.",
                      text_anchor="end", fill="#31a354")]
    mark = next((p for p in points if p.run_id == marked), None)
    if mark is not None:
        right_half = n > 1 and mark.index > (n - 1) / 2
        out += [f'<line data-mark="{mark.index}" x1="{x(mark.index):.1f}" '
                f'x2="{x(mark.index):.1f}" y1="{TOP - 8}" y2="{TOP + plot_h}" '
                'stroke="#d62728" stroke-width="3"/>',
                _text(x(mark.index) + (-6 if right_half else 6), TOP - 12,
                      f"this run: {mark.run_id}", fill="#d62728", font_weight="bold",
                      data_mark="label",
                      text_anchor="end" if right_half else "start")]
    # as many run labels as fit side by side (about 6.5 px a character at 11 px)
    widest = max(len(p.run_id[-24:]) for p in points) * 6.5 + 16
    every = max(1, -(-n // max(1, min(MAX_LABELS, int(plot_w // widest)))))
    for p in points[::every]:
        # a label centred on the first or last run would run past the picture's edge
        # (the last id read "imp-3c4838b"): it is drawn from, or up to, its run instead
        label = p.run_id[-24:]
        half = len(label) * 6.5 / 2
        anchor = ("start" if x(p.index) - half < 0 else
                  "end" if x(p.index) + half > WIDTH else "middle")
        out.append(_text(x(p.index), TOP + plot_h + 16, label, text_anchor=anchor,
                         fill="#333333", font_size="11"))
    out += [_text(LEFT + plot_w / 2, HEIGHT - 30, "run (oldest first)", text_anchor="middle"),
            _text(16, TOP + plot_h / 2, y_title, text_anchor="middle",
                  transform=f"rotate(-90 16 {TOP + plot_h / 2:.1f})")]
    lx = LEFT
    for lane in shown:  # the legend, in stacking order
        out += [f'<rect x="{lx}" y="{HEIGHT - 16}" width="12" height="12" '
                f'fill="{LANE_COLOURS[lane]}"/>', _text(lx + 16, HEIGHT - 6, LANE_TITLES[lane])]
        lx += 28 + 7 * len(LANE_TITLES[lane])
    out.append("</svg>")
    return "\n".join(out)
