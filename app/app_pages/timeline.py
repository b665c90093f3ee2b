"""Composition timeline page: how a thread's prompts were made up over its runs —
tokens per lane as a stacked area — with observation compactions marked.

URL: ``timeline?thread=<id>&run=<id>`` opens the same thread with that run marked;
without them, the current run's thread. The thread picker offers the newest
``views.THREADS_LISTED`` threads with runs and the one open; with more, ``?find=<text>``
finds the others by id or title (``components.pick_thread``).
"""

from __future__ import annotations

import re

import streamlit as st

from app import services
from app.components import (
    LANE_TITLES,
    TIMELINE_PAGE,
    Id,
    asked_thread,
    counted,
    escape_md,
    fmt_time,
    follow_run,
    link_to_message,
    link_to_run,
    pick_thread,
    run_not_found,
    set_query_params,
)
from app.kept_select import kept_select
from app.light_table import light_table, run_link
from app.run_labels import run_labeller
from app.timeline_svg import timeline_svg
from memory_core.analysis import views
from memory_core.analysis.timeline import TimelinePoint

UNKNOWN = "unknown"

st.title("Composition timeline")
st.caption("Tokens per lane in every run of a thread, oldest run first. Dashed lines mark "
           "runs where observational memory had condensed older messages into new "
           "observations.")
url = services.current_url()

try:
    runs = services.cached_runs(url)
except Exception as e:  # noqa: BLE001
    st.error(escape_md(services.friendly_error(e)))
    st.stop()
threads = views.threads_with_runs(runs, unthreaded=False)
if not threads:
    st.info("No thread has runs in this database yet.")
    st.stop()

wanted = asked_thread(url, threads, TIMELINE_PAGE)
asked_run = services.query_param("run")
if asked_run is not None and services.run_of(url, asked_run) is None:
    services.forget_current_run()
    run_not_found(url, asked_run, runs, page=TIMELINE_PAGE)
current = services.run_of(url, services.current_run())
if wanted is None and current is not None:
    wanted = current.thread_id  # opened from a run: that run's thread
first = min(threads)  # what a URL naming no thread or run opens on
thread = pick_thread(url, threads, wanted=wanted or first,
                     format_func=lambda t: f"{t} ({counted(len(runs.positions(t)), 'run')})")
# the run marked on the chart: the current run when it is on this thread, else the newest
thread_run_ids = [r.run_id for r in runs.on_thread(thread)]
marked: str = kept_select(
    st, "Marked run", thread_run_ids,
    current.run_id if current is not None and current.run_id in thread_run_ids
    else thread_run_ids[-1], key="pick:timeline-run",
    format_func=run_labeller(url, runs.on_thread(thread)),
    help="The run marked on the chart; it is also the run the other pages open on.")
# what a fresh session shows for this URL stays out of it (a sidebar link is then one
# history entry); anything else goes in, so the URL opens what is shown
from_url = services.run_of(url, asked_run)
fresh_thread = (services.query_param("thread") or (from_url.thread_id if from_url else None)
                or first)
fresh_marked = (asked_run if asked_run in thread_run_ids else thread_run_ids[-1])
if services.query_param("thread") or thread != fresh_thread:
    set_query_params({"thread": thread})
follow_run(marked, in_url=asked_run is not None or marked != fresh_marked)
link_to_message(thread, None, label=("open thread ", Id(thread)))
link_to_run(marked, label=("inspect run ", Id(marked)))

try:
    tl = services.cached_timeline(url, thread)
except Exception as e:  # noqa: BLE001
    st.error(escape_md(services.friendly_error(e)))
    st.stop()
if tl.skipped:
    st.caption(escape_md(f"Not plotted, having no provenance record: "
                         f"{counted(len(tl.skipped), 'run')} ({', '.join(tl.skipped[:8])}"
                         f"{', …' if len(tl.skipped) > 8 else ''})"))
if not tl.points:
    st.info(escape_md(f"None of the runs of '{thread}' recorded how its prompt was composed."))
    st.stop()

# an imported run's tokens are our count (chars/4) of what the client sent, not the
# recording's usage (the run inspector shows both)
estimated = " (our estimate)" if any(p.source == "imported" for p in tl.points) else ""
marked_point = next((p for p in tl.points if p.run_id == marked), None)
if marked_point is None:
    st.caption(escape_md(f"Run {marked} recorded no composition, so it is not on the chart."))
# a picture drawn here, not a chart library (issue 36 point 7); the table has the numbers
st.image(timeline_svg(tl.points, tl.lanes, marked, tl.compactions,
                      f"prompt tokens{estimated}"))

m = st.columns(3)
m[0].metric("Runs plotted", len(tl.points))
m[1].metric("Compactions", len(tl.compactions))
m[2].metric(f"Largest prompt{estimated}", f"{max(p.total_tokens for p in tl.points):,}")

st.markdown("#### Runs")


def known(value: int | None, field: str, p: TimelinePoint) -> int | str:
    """A count, or "unknown" where the run's record cannot know it (an imported run
    does not say what memory recalled, dropped or observed: not zero)."""
    return UNKNOWN if value is None or field in p.unknown_fields else value


# runs of one day are told by their time, and a status is a column only where one
# differs from "completed": the columns that vary fit the page
days = {fmt_time(p.started_at)[:10] for p in tl.points}
one_day = len(days) == 1 and bool(re.fullmatch(r"\d{4}-\d\d-\d\d", next(iter(days))))
rows = [{
    "run": run_link(p.run_id),
    "started": fmt_time(p.started_at)[11:] if one_day else fmt_time(p.started_at),
    "status": p.status,
    f"total{estimated}": p.total_tokens,
    **{LANE_TITLES[ln]: known(p.tokens[ln], ln, p) for ln in tl.lanes},
    "recalled msgs": known(p.recalled_count, "recalled", p),
    "dropped": known(p.dropped_count, "dropped", p),
    "observations made": known(p.observation_count, "observations", p),
    "compaction": "yes" if p.compacted else ""} for p in tl.points]
# a column no run's record holds is left out and named once, not a column of "unknown";
# so is one where every run has none (0 tokens of a lane, no compaction): the columns
# that vary fit the page
unheld = [k for k in rows[0] if all(r[k] == UNKNOWN for r in rows)]
counts = {"recalled msgs": "messages recalled", "dropped": "messages dropped",
          "observations made": "observations made", "compaction": "compactions"}
lanes = {LANE_TITLES[ln] for ln in tl.lanes}
nothing = [k for k in rows[0] if (k in lanes or k in counts) and k not in unheld
           and all(r[k] in (0, "") for r in rows)]
if all(r["status"] == "completed" for r in rows):
    nothing.append("status")
# the table opens on the marked run's page (the runs are oldest first, as in the chart)
light_table([{k: v for k, v in r.items() if k not in unheld and k not in nothing}
             for r in rows],
            key="timeline", opens_at=next(
                (i for i, p in enumerate(tl.points) if p.run_id == marked), None))
said_once = ([f"Every run started on {next(iter(days))}."] if one_day else []) + (
    ["Every run completed."] if "status" in nothing else [])
if none := [k for k in nothing if k != "status"]:
    said_once.append("Not shown, as no run here has any: " + ", ".join(
        counts.get(k) or f"{k.lower()} tokens" for k in none) + ".")
if said_once:
    st.caption(" ".join(said_once))
if unheld:
    said = [counts.get(k) or f"{k.lower()} tokens" for k in unheld]
    st.caption("Not shown, as no run's record holds them (imported from recordings, which "
               f"hold what the model was sent, not what memory decided): {', '.join(said)}.")
if any(r[k] == UNKNOWN for r in rows for k in r if k not in unheld):
    st.caption(f"{UNKNOWN}: the run's record does not say (an imported run: the recording "
               "holds what the model was sent, not what memory decided), counted as 0 in "
               "the chart and the total.")
if tl.compactions:
    st.markdown("#### Compactions")
    for p in tl.compactions:
        new: list[str | Id] = []
        for oid in p.new_observations:
            new += [", ", Id(oid)] if new else [Id(oid)]
        link_to_run(p.run_id, label=("run ", Id(p.run_id),
                                     f": {counted(p.observation_count or 0, 'observation')}, new: ",
                                     *(new or ["—"])))
