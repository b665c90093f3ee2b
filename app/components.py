"""Display pieces shared by the workbench pages: plotly figures built from read
models, literal message text, and links between pages that keep shareable URLs.

Nothing here computes from storage; it only turns view objects into widgets.
"""

from __future__ import annotations

import html
import re
import string
from collections.abc import Mapping

import plotly.graph_objects as go
import streamlit as st

from memory_core import views

START_PAGE = "app_pages/start.py"
THREADS_PAGE = "app_pages/threads.py"
RUN_PAGE = "app_pages/run_inspector.py"
COMPARE_PAGE = "app_pages/compare.py"
COUNTERFACTUAL_PAGE = "app_pages/counterfactual.py"
WHY_PAGE = "app_pages/why.py"
TIMELINE_PAGE = "app_pages/timeline.py"
STORY_PAGE = "app_pages/story.py"

LANE_COLOURS: dict[str, str] = {
    "instructions": "#8c8c8c", "working_memory": "#6a51a3", "observations": "#31a354",
    "recalled": "#3182bd", "recent": "#fd8d3c", "input": "#e6550d", "dropped": "#bdbdbd",
}
STATUS_COLOURS: dict[str, str] = {
    "hit": "#3182bd", "below-threshold": "#fd8d3c", "beyond-top-k": "#fdae6b",
    "filtered-out": "#969696", "already-in-window": "#74c476",
    "duplicate-of-query": "#c7c7c7",
}
# why-forgotten fates: blue/green reached the model, warm colours did not
FATE_COLOURS: dict[str, str] = {
    "recalled": "#3182bd", "recent": "#31a354", "input": "#e6550d",
    "below-threshold": "#fd8d3c", "beyond-top-k": "#fdae6b", "filtered-out": "#969696",
    "out-of-scope": "#756bb1", "recall-off": "#636363", "recall-skipped": "#636363",
    "dropped": "#d62728", "compacted": "#74c476", "written-after": "#d9d9d9",
    "no-text": "#bdbdbd", "not-stored": "#252525", "unexplained": "#e377c2",
    # imported runs: what the recorded request shows
    "sent-by-client": "#31a354", "not-sent-by-client": "#fd8d3c", "unknown": "#bdbdbd",
}
LANE_TITLES: dict[str, str] = {
    "instructions": "Instructions", "working_memory": "Working memory",
    "observations": "Observations", "recalled": "Recalled", "recent": "Recent",
    "input": "Input", "dropped": "Dropped",
}

# every ASCII punctuation character: CommonMark lets each be backslash-escaped, and
# escaping all of them leaves no link, image, HTML tag, entity, emphasis, heading, list,
# math ($) or Streamlit directive (:red[…], :material/…:) to parse
_MD_SPECIAL = re.compile("([" + re.escape(string.punctuation) + "])")
# GFM autolinks are found in the parsed text, after escapes are resolved, so escaping
# cannot stop them: URL- and address-like runs are put in code spans instead
_AUTOLINK = re.compile(r"(?i)(?:https?://|ftp://|mailto:|www\.)\S*|[\w.+-]+@[\w-]+\.[\w.-]+")


def _code_span(text: str) -> str:
    """``text`` as a Markdown code span (shown as is, whatever it holds)."""
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith(("`", " ")) or text.endswith(("`", " ")) else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def escape_md(text: str) -> str:
    """Stored text or a URL parameter made literal for any Streamlit element that renders
    Markdown (errors, captions, metric and expander labels, page links, tooltips): every
    Markdown and HTML special character is backslash-escaped, and anything a GFM
    autolink would catch is a code span. The one shared helper for this; st.text and
    st.code need none."""
    text = str(text)
    out: list[str] = []
    pos = 0
    for m in _AUTOLINK.finditer(text):
        out.append(_MD_SPECIAL.sub(r"\\\1", text[pos:m.start()]))
        out.append(_code_span(m.group()))
        pos = m.end()
    out.append(_MD_SPECIAL.sub(r"\\\1", text[pos:]))
    return "".join(out)


def plot_text(text: object) -> str:
    """Stored text for a plotly label, tick or hover: plotly renders a subset of HTML
    (<a href>, <b>, <br>) in those, so it is escaped."""
    return html.escape(str(text), quote=True)


def literal(text: str) -> None:
    """Message text exactly as stored: never Markdown, never HTML."""
    st.text(text if text else "(empty)")


def link_to_message(thread_id: str, seq: int | None, *, label: str | None = None,
                    to_seq: int | None = None) -> None:
    """A link to the Threads page focused on one message (or a seq range, or just the
    thread when seq is None)."""
    params: dict[str, str] = {"thread": thread_id}
    if seq is not None:
        params["seq"] = str(seq)
        if to_seq is not None and to_seq != seq:
            params["to"] = str(to_seq)
    text = label or (f"{thread_id} #{seq}" if seq is not None else thread_id)
    st.page_link(THREADS_PAGE, label=escape_md(text), icon=":material/chat:",
                 query_params=with_db(params))


def link_to_run(run_id: str, *, label: str | None = None) -> None:
    st.page_link(RUN_PAGE, label=escape_md(label or f"run {run_id}"),
                 icon=":material/manage_search:", query_params=with_db({"run": run_id}))


def with_db(params: Mapping[str, str]) -> dict[str, str]:
    """A link's query parameters plus ``db=<name>`` of the database in use, so the
    link opens the same database in a new tab too."""
    from app import services

    return {"db": services.current_name(), **params}


def token_bar(lanes: list[views.LaneView]) -> go.Figure:
    """One stacked horizontal bar: the prompt's tokens split by lane."""
    fig = go.Figure()
    for lv in lanes:
        if lv.lane == "dropped":
            continue
        fig.add_trace(go.Bar(
            name=LANE_TITLES[lv.lane], x=[lv.tokens], y=["prompt"], orientation="h",
            marker_color=LANE_COLOURS[lv.lane],
            hovertemplate=f"{LANE_TITLES[lv.lane]}: %{{x}} tokens<extra></extra>"))
    fig.update_layout(barmode="stack", height=170, margin={"l": 10, "r": 10, "t": 30, "b": 10},
                      xaxis_title="tokens", legend={"orientation": "h", "y": 1.35},
                      yaxis={"showticklabels": False})
    return fig


def score_chart(candidates: list[views.ScoreCandidate], threshold: float | None,
                top_k: int | None) -> go.Figure:
    """Recall candidates by rank: hits and near misses as bars, the threshold as a
    horizontal line and the top-k cut as a vertical one."""
    fig = go.Figure()
    by_status: dict[str, list[views.ScoreCandidate]] = {}
    for c in candidates:
        by_status.setdefault(c.status, []).append(c)
    for status, cs in by_status.items():
        fig.add_trace(go.Bar(
            name=status, x=[c.rank for c in cs], y=[c.score for c in cs],
            marker_color=STATUS_COLOURS.get(status, "#636363"),
            # plotly hover labels understand some HTML: escape stored text
            customdata=[[plot_text(f"{c.thread_id} #{c.seq}"), plot_text(c.preview[:80]),
                         plot_text(c.filter_clause or "")] for c in cs],
            hovertemplate=("rank %{x} · score %{y:.3f}<br>%{customdata[0]}<br>"
                           "%{customdata[1]}<br>%{customdata[2]}<extra>" + status
                           + "</extra>")))
    if threshold is not None:
        fig.add_hline(y=threshold, line_dash="dash", line_color="#d62728",
                      annotation_text=f"threshold {threshold:g}",
                      annotation_position="top right")
    if top_k is not None:
        fig.add_vline(x=top_k + 0.5, line_dash="dot", line_color="#333333",
                      annotation_text=f"top-k = {top_k}", annotation_position="top left")
    fig.update_layout(height=320, margin={"l": 10, "r": 10, "t": 30, "b": 10},
                      xaxis_title="rank", yaxis_title="score", barmode="overlay",
                      xaxis={"dtick": 1})
    return fig


def set_query_params(params: Mapping[str, str | None]) -> None:
    """Write the view's ids into the URL (dropping empty ones) so it can be shared."""
    for key, value in params.items():
        if value is None or value == "":
            if key in st.query_params:
                del st.query_params[key]
        elif st.query_params.get(key) != value:
            st.query_params[key] = value


def fate_badge(fate: str, reached_model: bool) -> None:
    """The fate of a message as one big badge: green when the model was given it."""
    # fates are a fixed vocabulary (never stored text), so Markdown is safe here
    icon = ":material/check_circle:" if reached_model else ":material/block:"
    colour = "green" if reached_model else "red"
    st.markdown(f"## :{colour}-badge[{icon} {fate}]")


NO_THREAD = "(no thread)"


def pick_run(url: str) -> tuple[str, list[views.RunSummary]]:
    """The run picker of the run pages: a thread, then one of its runs (newest by
    default), preselected from ``?run=``; writes the choice back into the URL. Returns
    the run id and the runs of its thread. Stops the page with a message when the
    database cannot be read or holds no runs."""
    from app import services

    try:
        runs = services.cached_runs(url)
    except Exception as e:  # noqa: BLE001 - shown in the page, never raised
        st.error(escape_md(services.friendly_error(e)))
        st.stop()
    wanted = services.query_param("run")
    if wanted and wanted not in {r.run_id for r in runs}:
        st.error(escape_md(f"run '{wanted}' does not exist in this database"))
        wanted = None
    if not runs:
        st.info("No runs in this database yet.")
        st.stop()
    threads = sorted({r.thread_id or NO_THREAD for r in runs})
    wanted_thread = next((r.thread_id or NO_THREAD for r in runs if r.run_id == wanted), None)
    col_thread, col_run = st.columns(2)
    thread = col_thread.selectbox("Thread", threads,
                                  index=threads.index(wanted_thread) if wanted_thread else 0)
    thread_runs = [r for r in runs if (r.thread_id or NO_THREAD) == thread]
    run_ids = [r.run_id for r in thread_runs]
    status = {r.run_id: r.status for r in thread_runs}
    run_id = col_run.selectbox(
        "Run", run_ids, index=run_ids.index(wanted) if wanted in run_ids else len(run_ids) - 1,
        format_func=lambda rid: f"{rid} ({status[rid]})")
    set_query_params({"run": run_id})
    return str(run_id), thread_runs
