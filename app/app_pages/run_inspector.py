"""Run inspector page: one run's question and answer first, then what its prompt held
(a sentence) and what was left out (the Dropped lane and the near misses, side by side,
without a click), the lanes as tabs under the token bar (opening on what memory chose),
the recall score chart from rank 1 (dropped hits included, its caption saying what the
first bar is), the settings in words (the record folded), steps, and "Keep this answer"
(the run pinned to a regression suite, ``analysis.regress``). An imported run says once
what its recording does not hold and leaves out the sections it would leave empty (what
was left out, recall's scores, the settings); its token counts say which are recorded
and which are our estimate.

URL: ``run?run=<id>`` opens the same run. The action bar under its title opens the
analysis pages on it.
"""

from __future__ import annotations

import streamlit as st

from app import services
from app.charts import score_chart
from app.components import (
    LANE_TITLES,
    Id,
    answer_text,
    counted,
    escape_md,
    fmt_score,
    fmt_time,
    json_view,
    link_to_message,
    literal,
    md,
    monospace,
    opened_fold,
    pick_run,
    preview_text,
    recalled_observations,
    ref,
    run_action_bar,
    speaker,
    tool_call_cards,
)
from app.light_table import Link, light_table, message_url
from app.run_words import candidate_fate, first_bar_text, scored, settings_text
from memory_core.analysis import views
from memory_core.analysis.views import LaneItem
from memory_core.errors import NotFoundError
from memory_core.provenance.record import LANES

DEFAULT_SUITE = "kept answers"  # where "Keep this answer" pins a run unless told
KEPT_KEY = "kept-answer"  # session: what the last "Keep this answer" did, said once
ALL_SETTINGS_KEY = "all-settings"  # session: whether "All settings, as recorded" is open
# how a hybrid run's candidates are ranked, under their table
HYBRID_RANKS = ("Hybrid recall takes a message whose similarity reaches the threshold or "
                "that shares a word with the question (a word score above 0), and ranks "
                "those by the fused score, which has no fixed scale and can be under 0; a "
                "message it cannot take ranks after them all.")
# an imported run's token counts are ours (chars/4), beside the recording's own
ESTIMATED = " (our estimate, chars/4)"

st.title("Run inspector")
url = services.current_url()

run_id, thread_runs = pick_run(url)

try:
    view = services.cached_run_view(url, run_id)
except NotFoundError as e:
    st.error(escape_md(services.friendly_error(e)))
    st.stop()
except Exception as e:  # noqa: BLE001
    st.error(escape_md(f"Cannot read run '{run_id}': {services.friendly_error(e)}"))
    st.stop()

run = view.run
hybrid = view.recall_mode == "hybrid"  # recall also took messages sharing a word
st.subheader(md("Run ", Id(run.run_id)))
summary = next(r for r in thread_runs if r.run_id == run_id)
run_action_bar(summary, services.previous_run(thread_runs, run_id))
# the seal: what this page shows is what the run recorded, or it says it is not
check = services.cached_verification(url, run_id)
BADGES = {"ok": ("green", ":material/verified:", "verified: every record matches its seal"),
          "redacted": ("orange", ":material/ink_eraser:",
                       "redacted: an erasure rewrote records; the rest matches its seal"),
          "unsealed": ("gray", ":material/help:",
                       "unsealed: recorded before sealing existed, or failed before it ended"),
          "interrupted": ("gray", ":material/pending:",
                          "interrupted: never finished (a crash, or still running)"),
          "tampered": ("red", ":material/gpp_bad:", "tampered")}
colour, icon, label = BADGES[check.status]
st.markdown(f":{colour}-badge[{icon} {label}]")
if check.status == "tampered":
    st.error(escape_md(f"This run's journal no longer matches its seal at "
                       f"{check.first_mismatch or 'an unreadable record'}: {check.detail}. "
                       "What this page shows may not be what the run recorded."))
# one line, so what the model was given and what was left out fit the first screen
# (an agent's name can be long: shown whole, as an id)
st.caption(md(f"{run.status} · agent ", Id(run.agent), f" · started {fmt_time(run.started_at)}"))
if run.thread_id:
    link_to_message(run.thread_id, None, label=("thread ", Id(run.thread_id)))
if view.error:
    # an imported call "failed" where its recording holds no answer: an error the API
    # sent, or a body the recorder did not keep
    st.error(escape_md(f"No answer was recorded: {view.error}" if view.imported
                       else f"The run failed: {view.error}"))
for note in view.notes:
    # an imported run's note is what its recording holds, said once: not a warning
    (st.info if view.imported else st.warning)(escape_md(note))
if view.query:
    st.caption("Recall query")
    literal(view.query)
# the answer first: what the rest of the page explains
st.caption("Answer")
literal(answer_text(view.answer))

def lane_bars(lanes: list[views.LaneView]) -> None:
    """The prompt's tokens by lane in prompt order, in one row: each lane's tokens and its
    share of the prompt as a bar. Not a chart: a chart library costs a cold browser tab
    more CPU than the rest of the page (issue 36 point 7)."""
    total = sum(lv.tokens for lv in lanes)
    for col, lv in zip(st.columns(len(lanes)), lanes, strict=True):
        share = lv.tokens / total if total else 0.0
        col.progress(share, text=f"{LANE_TITLES[lv.lane]}: {counted(lv.tokens, 'token')} "
                                 f"({share:.0%})")


def item_card(item: LaneItem, key: str) -> None:
    """One message of a lane (or one left out): what it is, its text, its source."""
    with st.container(border=True, key=key):
        # a dropped message leads with why
        bits = [f"dropped: {views.drop_reason_text(item.reason)}"] if item.reason else []
        bits.append(speaker(item.role, item.name))
        if item.error:  # (the tool reported an error, and the model was told so)
            bits.append("an error result")
        if item.rank is not None:
            bits.append(f"rank {item.rank}")
        if item.score is not None:
            bits.append(scored(item.score, item.similarity, hybrid=hybrid))
        if item.origin and not (item.reason and item.origin == "hit"):
            bits.append(f"origin {item.origin}")
        bits.append(f"{item.tokens} tokens")
        st.caption(escape_md(" · ".join(bits)))
        literal(item.text)
        if item.thread_id is not None and item.seq is not None:
            link_to_message(item.thread_id, item.seq,
                            label=("source: ", *ref(item.thread_id, item.seq)))
        for src in item.sources:
            if src.from_seq is not None:
                link_to_message(src.thread_id, src.from_seq, to_seq=src.to_seq,
                                label=("observation ", Id(src.observation_id),
                                       ": source ", *ref(src.thread_id, src.from_seq,
                                                         to_seq=src.to_seq)))


# -- what the model was given, and what was left out: first, without a click ------------
given = [lv for lv in view.lanes if lv.lane != "dropped"]
dropped = view.lane("dropped")
# (a candidate already in the recent window is in the prompt: not left out of it)
misses = [c for c in view.candidates if c.status not in ("hit", "already-in-window")]
st.markdown("#### In the prompt")
st.caption(escape_md(
    f"{counted(sum(len(lv.items) for lv in given), 'message')}, "
    f"{counted(view.total_tokens, 'token')}{ESTIMATED if view.imported else ''}: "
    + (", ".join(f"{LANE_TITLES[lv.lane].lower()} {lv.total_count}" for lv in given
                 if lv.total_count) or "nothing") + "."))

# an imported recording holds none of what was left out, recall's scores or the
# settings (the note above says so, once): those sections are not drawn
if not view.imported:
    st.markdown("#### Left out of the prompt")
    missed = "1 near miss" if len(misses) == 1 else f"{len(misses):,} near misses"
    left = [f"{counted(dropped.total_count, 'message')} dropped",
            f"{missed} (found by recall, not given to the model)"]
    st.caption(escape_md("; ".join(left) + "."))
    lost_cols = st.columns(2)
    with lost_cols[0]:
        st.markdown(f"##### Dropped ({dropped.total_count})")
        if dropped.total_count > len(dropped.items):
            st.caption(f"showing the first {len(dropped.items)} of {dropped.total_count} dropped")
        if not dropped.items:
            st.caption("Nothing was dropped: every message composition picked reached the "
                       "prompt.")
        for i, item in enumerate(dropped.items):
            item_card(item, f"lane-dropped-{i}")
    with lost_cols[1]:
        st.markdown(f"##### Near misses ({len(misses)})")
        if view.recall_skipped:
            st.caption(escape_md(f"Recall did not run: {view.recall_skipped}"))
        elif not misses:
            st.caption("No near misses recorded." if view.candidates or view.threshold is None
                       else "Recall found nothing near the question.")
        for i, c in enumerate(misses):
            with st.container(border=True, key=f"near-miss-{i}"):
                rank = f"rank {c.rank}" + (" without the filter" if c.status == "filtered-out"
                                           else "")
                fate = candidate_fate(c, view.threshold, view.top_k, hybrid=hybrid)
                st.caption(escape_md(f"{rank} · {scored(c.score, c.similarity, hybrid=hybrid)} · "
                                     f"{fate}"))
                literal(preview_text(c.preview))
                link_to_message(c.thread_id, c.seq, label=("source: ", *ref(c.thread_id, c.seq)))

st.markdown("#### Lanes")
lane_bars(given)
labels = [f"{LANE_TITLES[lv.lane]} ({lv.total_count})" for lv in given]
# open on what memory chose (recalled, else the window), not on the instructions; else
# on the first lane that holds something (a conversation's first call: only its input)
opening = next((label for lane in ("recalled", "observations", "working_memory", "recent",
                                   *LANES)
                for label, lv in zip(labels, given, strict=True)
                if lv.lane == lane and lv.total_count), None)
# only the open lane is drawn (a click draws another): every lane's cards at once cost a
# cold browser tab ~0.45 CPU-seconds on the demo (issue 36 point 7)
tabs = st.tabs(labels, default=opening, key=f"lanes-{run_id}", on_change="rerun")
for tab, lv in zip(tabs, given, strict=True):
    if not tab.open:
        continue
    with tab:
        st.caption(f"{counted(len(lv.items), 'item')} · {counted(lv.tokens, 'token')}"
                   + (ESTIMATED if view.imported else ""))
        if not lv.items:
            st.text("(nothing in this lane)")
        for i, item in enumerate(lv.items):
            item_card(item, f"lane-{lv.lane}-{i}")
        if lv.lane == "observations":
            for j, ro in enumerate(recalled_observations(view.tool_calls)):
                if j == 0:
                    st.caption("Recalled during the run by the recall_observations tool")
                with st.container(border=True, key=f"recalled-obs-{j}"):
                    score = f" · score {ro.score:.3f}" if ro.score is not None else ""
                    st.caption(md("observation ", Id(ro.id), " · call ", Id(ro.call_id), score))
                    literal(ro.text)
                    if ro.from_seq is not None:
                        link_to_message(ro.thread_id, ro.from_seq, to_seq=ro.to_seq,
                                        label=("source ", *ref(ro.thread_id, ro.from_seq,
                                                               to_seq=ro.to_seq)))

if not view.imported:  # (see "Left out of the prompt")
    st.markdown("#### Recall scores")
    ranked = view.ranked()
    if view.recall_skipped:
        st.info(escape_md(f"Recall did not run: {view.recall_skipped}"))
    if ranked:
        st.caption(escape_md(first_bar_text(ranked, view.threshold, view.top_k,
                                                hybrid=hybrid)))
        st.plotly_chart(score_chart(ranked, view.threshold, view.top_k), key="scores")
        if any(c.status == "filtered-out" for c in ranked):
            st.caption("A filtered-out candidate's rank is the one it would have had, had it "
                       "passed the filter.")
        filtered = any(c.filter_clause for c in ranked)  # else no column of blanks

        light_table([{"rank": c.rank,
                      **({"fused score": fmt_score(c.score), "similarity": (
                          "" if c.similarity is None else fmt_score(c.similarity)),
                          # above 0: a word shared with the question, which lets it in
                          "word score": "" if c.lexical is None else fmt_score(c.lexical)}
                         if hybrid else {"score": fmt_score(c.score)}),
                      "status": c.status,
                      "what became of it": candidate_fate(c, view.threshold, view.top_k,
                                                          hybrid=hybrid),
                      # the thread's id opens the message on the Threads page
                      "thread": Link(c.thread_id, message_url(c.thread_id, c.seq)),
                      "seq": c.seq,
                      **({"filter clause": c.filter_clause or ""} if filtered else {}),
                      "preview": preview_text(c.preview)}
                     for c in ranked], key="candidates")
        if hybrid:
            st.caption(HYBRID_RANKS)
    else:
        st.text("(no recall candidates recorded)")

    st.markdown("#### Settings")
    if view.settings:
        st.caption(escape_md(" ".join(settings_text(view.settings))))
        folded = opened_fold("All settings, as recorded", icon=":material/tune:",
                             key=ALL_SETTINGS_KEY)
        if folded is not None:
            with folded:
                # settings a run leaves unset (recall's, when recall is off) are named
                # once, not listed as a column of "—"
                json_view({k: v for k, v in view.settings.items()
                           if v is not None and v != views.UNKNOWN_SETTING})
                unset = [k for k, v in view.settings.items() if v is None]
                if unset:
                    st.caption(escape_md(f"Not set in this run: {', '.join(unset)}."))
                unknown = [k for k, v in view.settings.items()
                           if v == views.UNKNOWN_SETTING]
                if unknown:  # named once, not a row of "unknown" each
                    st.caption(escape_md(f"Not in this run's record: {', '.join(unknown)}."))
    else:
        st.text("(no settings recorded)")


rec = view.recorded
if rec is not None:  # an imported run: what its recording says of the call
    said = rec.said()
    st.markdown("#### Recorded call")
    cols = st.columns(3)
    with cols[0]:
        st.caption("Model asked for" if rec.asked_only else "Model")
        monospace(said["model"], key="recorded-model")
    usage = rec.usage
    for col, label, count, estimate, within in (
            (cols[1], "Input tokens", usage.input_tokens if usage else None, rec.estimated_in,
             said["input_within"]),
            (cols[2], "Output tokens", usage.output_tokens if usage else None,
             rec.estimated_out, said["output_within"])):
        col.metric(f"{label} (recorded)",
                   f"{count:,}" if count is not None else ("unknown" if rec.answered
                                                           else "none"))
        if within:  # what the recording says within the count
            col.caption(escape_md(within))
        if estimate is not None:
            col.caption(escape_md(f"our estimate: {counted(estimate, 'token')} (chars/4)"))
    st.caption(escape_md(f"Finish reason: {said['finish']} · tools offered: {said['tools']}"
                         f" · sent to: {said['endpoint']}"
                         + (f" · sent with: {said['sent_with']}" if rec.sent_with else "")))
    st.caption("Request parameters")
    if rec.params:
        json_view(rec.params)
    else:  # none sent, or none kept by a file that rebuilds its prompts
        st.text("(none recorded)" if rec.params is not None else "(not in the recording)")

st.markdown("#### Model steps")
if not view.steps:
    st.text("(no model steps recorded)")
for s in view.steps:
    tokens = f"{s.input_tokens} in / {s.output_tokens} out" if s.usage_known \
        else "usage not recorded"
    if s.usage_known and view.imported:
        tokens += " tokens (recorded)"  # beside our estimate above: which is which
    label = f"Step {s.n} · {s.model.get('name', '?')} · {tokens}"
    with st.expander(escape_md(label), expanded=True):
        if s.text:
            literal(s.text)
        for i, call in enumerate(s.tool_calls):  # a call and its JSON arguments, in monospace
            monospace(call, key=f"step-{s.n}-call-{i}")
if view.tool_calls:
    st.markdown("#### Tool calls")
    tool_call_cards(view.tool_calls)

st.markdown("#### Keep this answer")
st.caption("Pin this run to a regression suite stored in the database: `memwb regress` "
           "then checks that its answer stays the same — as recorded, or under changed "
           "memory settings (`--set`).")
try:
    suites, pinned = services.cached_suites(url, run_id)
except Exception as e:  # noqa: BLE001 - the action still works
    suites, pinned = [], []
    st.caption(escape_md(f"Which suites pin this run cannot be read: "
                         f"{services.friendly_error(e)}"))
for suite, expects in pinned:
    st.caption(md("Pinned to suite ", Id(suite), f": {'; '.join(expects)}."))
if not pinned:
    st.caption("No suite pins this run yet.")
kept_note = st.session_state.pop(f"{KEPT_KEY}:{run_id}", None)
if kept_note:
    st.success(kept_note, icon=":material/push_pin:")
read_only = services.read_only()
if read_only:
    st.info(services.READ_ONLY_PIN_REASON, icon=":material/lock:")
with st.form(f"keep:{run_id}", border=False):
    # the suites stored, to pick from without retyping a name; a new name is typed in
    suites = list(dict.fromkeys([DEFAULT_SUITE, *suites]))
    suite_name = str(st.columns(2)[0].selectbox(
        "Suite", suites, index=0, accept_new_options=True, disabled=read_only,
        help="The regression suite to pin it to: one stored, or type a new name.") or "")
    if st.form_submit_button("Keep this answer", icon=":material/push_pin:",
                             disabled=read_only,
                             help=services.READ_ONLY_PIN_REASON if read_only else None):
        try:
            added = services.keep_answer(url, suite_name.strip(), run_id)
        except Exception as e:  # noqa: BLE001 - no traceback in the page
            st.error(escape_md(f"Could not keep this answer: {services.friendly_error(e)}"),
                     icon=":material/error:")
        else:
            st.session_state[f"{KEPT_KEY}:{run_id}"] = md(
                "Kept: run ", Id(run_id), " is pinned to suite ", Id(suite_name.strip()),
                "." if added else " (it already was).")
            st.rerun()
