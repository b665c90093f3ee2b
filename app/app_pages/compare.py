"""Compare runs page: two runs' compositions side by side, lane by lane, with what
entered, left or moved and why, the token deltas, changed settings and step alignment.

URL: ``compare?a=<run>&b=<run>`` opens the same comparison; without them it opens on
the current run (as B) and the run before it on its thread (as A). ``?find=<text>`` finds
a run of another thread. The thread picker offers the newest ``views.THREADS_LISTED``
threads with runs and the one open; with more, ``?find_thread=<text>`` finds the others
by id or title (``components.pick_thread``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import streamlit as st

from app import services
from app.components import (
    COMPARE_PAGE,
    LANE_TITLES,
    MISSING,
    SEARCH_LIMIT,
    Id,
    ThreadPicker,
    answer_text,
    counted,
    escape_md,
    fmt_cell,
    fmt_score,
    follow_run,
    json_view,
    link_to_message,
    link_to_run,
    literal,
    md,
    pick_thread,
    preview_text,
    ref,
    run_not_found,
    set_query_params,
    truncate,
)
from app.kept_select import kept_select
from app.light_table import Link, light_table, message_url
from app.run_labels import run_labeller
from memory_core.analysis import views
from memory_core.analysis.diff import imported_caveat

if TYPE_CHECKING:
    from memory_core.analysis.diff import DiffEntry

BadgeColour = Literal["green", "red", "orange", "gray"]
CHANGE_BADGES: dict[str, tuple[BadgeColour, str]] = {"entered": ("green", ":material/add_circle:"),
                 "left": ("red", ":material/remove_circle:"),
                 "moved": ("orange", ":material/swap_horiz:"),
                 "same": ("gray", ":material/drag_handle:")}
# lanes a diff entry can sit in, in prompt order; "compacted" = inside an observation
DIFF_LANES = ("recalled", "recent", "input", "dropped", "compacted")
DIFF_TITLES = {**LANE_TITLES, "compacted": "Compacted into an observation"}
FIND_THREAD_PARAM = "find_thread"  # ``find`` finds a run of another thread

st.title("Compare runs")
url = services.current_url()

try:
    runs = services.cached_runs(url)
except Exception as e:  # noqa: BLE001
    st.error(escape_md(services.friendly_error(e)))
    st.stop()
if len(runs) < 2:
    st.info(escape_md(f"Comparing needs at least two runs; this database has {len(runs)}."))
    st.stop()

wanted_a, wanted_b = services.query_param("a"), services.query_param("b")
for wanted in (wanted_a, wanted_b):
    if wanted and runs.get(wanted) is None:
        # never another run in its place: "not found", a search, the URL left as is
        run_not_found(url, wanted, runs, page=COMPARE_PAGE)
url_b = wanted_b  # run B as the URL names it (the sidebar's link names only B)
if wanted_a is None and wanted_b is None and runs.get(services.current_run()) is not None:
    wanted_b = services.current_run()  # opened without a pair: the current run
if wanted_a is None and wanted_b is not None:
    wanted_a = services.previous_run(runs, wanted_b)  # against the run before it

threads = views.threads_with_runs(runs)
first = min(threads)  # opened when no run is asked for and no thread has two runs
start_thread = views.comparison_thread(runs, [wanted_b, wanted_a])
thread = pick_thread(url, threads, wanted=start_thread or first,
                     picker=ThreadPicker(find_param=FIND_THREAD_PARAM),
                     help="Run A and Run B offer this thread's runs; a run of another "
                          "thread can be added below.")
# runs asked for in the URL count only on the thread they opened
asked = thread == start_thread
with st.expander("Compare with a run of another thread",
                 expanded=bool(services.query_param("find"))):
    found = st.text_input("Find a run", value=services.query_param("find") or "",
                          key="find-run", placeholder="part of a run id or a thread id")
    hits = views.run_search(runs, found)
    if found.strip():
        st.caption(f"{counted(len(hits), 'run')} found" + (
            f"; the newest {SEARCH_LIMIT} are offered in Run A and Run B"
            if len(hits) > SEARCH_LIMIT else "; offered in Run A and Run B"))
offered = views.offered_runs(runs, thread, [*((wanted_a, wanted_b) if asked else ()),
                                      *hits[:SEARCH_LIMIT]])
pair = views.comparison_pair(offered, thread, wanted_a=wanted_a if asked else None,
                             wanted_b=wanted_b if asked else None)
options, default_a, default_b = pair.options, pair.default_a, pair.default_b


_on_thread = run_labeller(url, [r for r in map(runs.get, options) if r is not None])
_anywhere = run_labeller(url, [r for r in map(runs.get, options) if r is not None],
                         threads=True)


def _label(rid: str) -> str:
    # a run of another thread (found by a search) names its thread
    r = runs.get(rid)
    return _on_thread(rid) if r is not None and views.thread_key(r) == thread else _anywhere(rid)


col_a, col_b = st.columns(2)
run_a = kept_select(col_a, "Run A", options, default_a, key="pick:run-a", format_func=_label)
run_b = kept_select(col_b, "Run B", options, default_b, key="pick:run-b", format_func=_label)
# a run the URL leaves out is written only when it is not what that URL opens in a
# fresh session: a sidebar link (``?b=``) is then one history entry
url_a = services.query_param("a")
fresh_start = views.comparison_thread(runs, [url_b, url_a])
fresh_thread = fresh_start or first
fresh_a = url_a or (services.previous_run(runs, url_b) if url_b else None)
fresh = views.comparison_pair(views.offered_runs(runs, fresh_thread, [fresh_a, url_b]),
                              fresh_thread, wanted_b=url_b, wanted_a=fresh_a)
set_query_params({"a": run_a if url_a or run_a != fresh.default_a else None,
                  "b": run_b if url_b or run_b != fresh.default_b else None,
                  "find": found.strip() or None})
follow_run(run_b, in_url=False)  # run B is the run the user follows
with col_a:
    link_to_run(run_a, label=("inspect run ", Id(run_a)))
with col_b:
    link_to_run(run_b, label=("inspect run ", Id(run_b)))
if run_a == run_b:
    st.info("Pick two different runs to compare.")
    st.stop()

try:
    diff = services.cached_diff(url, run_a, run_b)
except Exception as e:  # noqa: BLE001
    st.error(escape_md(f"Cannot compare '{run_a}' with '{run_b}': {services.friendly_error(e)}"))
    st.stop()

# an imported run's recording holds no memory decision: said once here, not on each card
imported = [side for side, rid in (("A", run_a), ("B", run_b))
            if (memctx := services.cached_memctx(url, rid)) is not None and memctx.imported]
# hybrid recall ranks by a fused score, which has no fixed scale: the score column says so
SCORE = "fused score" if diff.fused_scores else "score"
caveat = imported_caveat(imported) if imported else ""
if imported:
    st.info(("Run A was imported from a recording: it holds" if imported == ["A"] else
             "Run B was imported from a recording: it holds" if imported == ["B"] else
             "Runs A and B were imported from recordings: each holds")
            + " what the client sent the model and what came back, not memory settings, "
            "recall scores or what was left out. The messages below are compared by what "
            "the client sent.")


def _reason(entry: DiffEntry) -> str:
    return entry.reason.removesuffix(caveat) if caveat else entry.reason


changed = diff.changed()
counts = {c: sum(1 for e in diff.entries if e.change == c) for c in ("entered", "left", "moved")}
m = st.columns(4)
m[0].metric("Entered", counts["entered"])
m[1].metric("Left", counts["left"])
m[2].metric("Moved", counts["moved"])
m[3].metric("First divergent step", "none" if diff.divergent_at is None
            else str(diff.divergent_at))

st.markdown("#### Answers")
ans_a, ans_b = st.columns(2)
with ans_a:
    st.caption(md("Run A · ", Id(run_a)))
    literal(answer_text(diff.answer_a))
with ans_b:
    st.caption(md("Run B · ", Id(run_b)))
    literal(answer_text(diff.answer_b))

def _pair(a: str | None, b: str | None) -> str:
    """Run A's value and run B's as one cell ("4 → 6"), ``MISSING`` when neither has one."""
    a, b = a or MISSING, b or MISSING
    return MISSING if a == b == MISSING else f"{a} → {b}"


st.markdown("#### What changed")
if changed:
    light_table([{
        "change": e.change,
        "message": Link(f"{e.thread_id} #{e.seq}", message_url(e.thread_id, e.seq), code=False),
        # run A's and run B's side by side in one cell: the reason and preview keep room
        "lane (A → B)": _pair(e.lane_a, e.lane_b),
        # every rule recall kept it out by, in the run it was out of, leads the reason:
        # one column fewer, so the table fits the page
        "reason": (f"kept out of run {'A' if e.change == 'entered' else 'B'} by "
                   f"{' + '.join(e.kept_out_by)}: " if e.kept_out_by else "") + _reason(e),
        f"{SCORE} (A → B)": _pair(fmt_score(e.score_a), fmt_score(e.score_b)),
        "rank (A → B)": _pair(fmt_cell(e.rank_a), fmt_cell(e.rank_b)),
        "preview": truncate(preview_text(e.preview), 40)}
        for e in changed], key="changes", drop_empty=True)
else:
    st.text("The two prompts carried the same messages in the same lanes.")


def _card(side: str, lane: str, i: int, entry: DiffEntry) -> None:
    """One message of a lane of run ``side``: its change, ids, score, text, reason."""
    colour, icon = CHANGE_BADGES[entry.change]
    with st.container(border=True, key=f"{side}-{lane}-{i}"):
        st.badge(entry.change, icon=icon, color=colour)
        bits = [f"{entry.thread_id} #{entry.seq}", entry.role or "?"]
        score = entry.score_a if side == "A" else entry.score_b
        if score is not None:
            bits.append(f"{SCORE} {fmt_score(score)}")
        st.caption(escape_md(" · ".join(bits)))
        literal(preview_text(entry.preview))
        if entry.reason:
            st.caption(escape_md(_reason(entry)))
        link_to_message(entry.thread_id, entry.seq,
                        label=("source: ", *ref(entry.thread_id, entry.seq)))


st.markdown("#### Lanes side by side")
side_a, side_b = st.columns(2)
for side, col, attr in (("A", side_a, "lane_a"), ("B", side_b, "lane_b")):
    with col:
        st.markdown(f"**Run {side}**")
        for lane in DIFF_LANES:
            items = [x for x in diff.entries if getattr(x, attr) == lane]
            if not items and lane in ("compacted",):
                continue
            # the same count and tokens as the token table below (one record: the diff)
            tokens = diff.token_deltas.get(lane)
            size = f"{len(items)} · {tokens[0 if side == 'A' else 1]} tokens" if tokens \
                else str(len(items))
            st.markdown(f"**{DIFF_TITLES[lane]}** ({size})")
            if not items:
                st.text("(nothing in this lane)")
            for i, entry in enumerate(items):
                if entry.change != "same":
                    _card(side, lane, i, entry)
            same = [(i, e) for i, e in enumerate(items) if e.change == "same"]
            if same:
                # what did not change is built only when opened: a long thread's
                # dropped lane alone held hundreds of elements
                box = st.expander(f"{len(same)} unchanged (this lane in both runs)",
                                  icon=":material/drag_handle:", on_change="rerun",
                                  key=f"same-{side}-{lane}")
                if box.open:
                    with box:
                        for i, entry in same:
                            _card(side, lane, i, entry)

st.markdown("#### Tokens by lane")
# the table only: a bar chart of the same numbers told nothing more, and its chart
# library cost a cold browser tab more CPU than the rest of the page (issue 36 point 7)
light_table([{"lane": LANE_TITLES.get(ln, ln), "run A": a, "run B": b, "delta": f"{d:+d}"}
             for ln, (a, b, d) in diff.token_deltas.items()], key="tokens")

st.markdown("#### Settings that changed")
if imported:
    st.text("(not compared: see the note above)")
elif diff.settings_changed:
    json_view({k: {"run A": a, "run B": b} for k, (a, b) in diff.settings_changed.items()})
else:
    st.text("(same settings)")

st.markdown("#### Model steps")
if diff.divergent_at is not None:
    st.caption(f"The runs first diverge at step {diff.divergent_at}.")
if diff.steps:
    light_table([{"#": p.index, "kind": p.kind, "status": p.status,
                  "run A": p.a or MISSING, "run B": p.b or MISSING} for p in diff.steps],
                key="steps")
else:
    st.text("(no model steps recorded in either run)")
