"""What if page: past runs put together again, as of the time each ran, under other
memory settings — which would have been given a different prompt, in plain words and
run by run, one run's prompt beside the one it was given, and (on a writable workbench)
their answers asked again.

URL: ``whatif?thread=<id>`` (or ``?scope=resource&resource=<id>``, ``?scope=all``) with
the settings tried as the library names them (``recall.threshold=0.2``,
``token_budget=1000`` …) opens the same outcome; ``&run=<id>`` the run shown side by
side. Without a thread, the current run's thread (the sidebar's link names it).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

import streamlit as st

from app import services
from app.components import (
    LANE_TITLES,
    WHATIF_PAGE,
    Id,
    answer_text,
    asked_thread,
    counted,
    escape_md,
    follow_run,
    json_view,
    link_to_message,
    link_to_run,
    literal,
    md,
    opened_fold,
    pick_thread,
    preview_text,
    ref,
    set_query_params,
    with_db,
)
from app.kept_select import kept_select
from app.light_table import Link, light_table, page_of, run_link
from app.run_labels import run_labeller
from app.whatif_parts import (
    MODE_WORDS,
    MODES,
    SETTING_KEYS,
    Scope,
    ScopeKind,
    ask,
    cached_ask_problems,
    cached_recorded,
    changes_from_form,
    changes_from_url,
    compose,
    most_moved,
    plain_summary,
    scope_run_ids,
    setting_words,
    signed,
    token_totals,
    url_value,
)
from memory_core.analysis import views

if TYPE_CHECKING:
    from memory_core.analysis.whatif import RunWhatIf, WhatIfReport

SCOPES: dict[ScopeKind, str] = {"thread": "One thread", "resource": "One user (resource)",
                                "all": "Every run"}
KEEP = "as each run had it"
ANSWERS_PAGE = 5  # answers asked again, shown as text
REPORT_KEY = "whatif-report"  # session: the last outcome shown, with what it was for
ASKED_KEY = "whatif-asked"  # session: the scope and changes last tried with the button
ANSWERS_KEY = "whatif-answers"  # session: the answers asked again for what was tried
TOKEN_LANES = ("instructions", "working_memory", "observations", "recalled", "recent", "input")
VERDICTS = {"changed": ("orange", ":material/published_with_changes:"),
            "unchanged": ("green", ":material/check_circle:"),
            "inconclusive": ("gray", ":material/help:")}
NOT_ASKABLE = "its model cannot be asked again here"
READ_ONLY_ASK = ("This workbench is read-only, so this page only puts the prompts together "
                 "again: asking the model again, which writes to the runs' journals, is off.")



def _change(n: int) -> str:
    """A signed count as the page writes them: +12, −3 (a minus sign), +0."""
    return f"+{n:,}" if n >= 0 else f"−{-n:,}"


st.title("What if")
st.caption("Try other memory settings on past runs. Each run's prompt is put together "
           "again as of the time it ran — from only what was stored before it — and "
           "compared with the prompt it was given. Nothing in the database changes, and "
           "no model is asked unless you ask below.")
url = services.current_url()
try:
    runs = services.cached_runs(url)
except Exception as e:  # noqa: BLE001 - shown in the page, never raised
    st.error(escape_md(services.friendly_error(e)))
    st.stop()
if not runs:
    st.info("No runs in this database yet.")
    st.stop()

# -- which past runs ------------------------------------------------------------------------
asked_kind = services.query_param("scope")
kind_opened: ScopeKind = "all" if asked_kind == "all" else (
    "resource" if asked_kind == "resource" else "thread")
current = services.run_of(url, services.remembered_run())
threads = views.threads_with_runs(runs, unthreaded=False)
resources = sorted({r.resource_id for r in runs if r.resource_id})


def _opened(kind: ScopeKind, wanted: str | None) -> str | None:
    """The thread or user (resource) the picker opens on: ``wanted`` (the URL's) when it
    has runs, else the current run's, else the first."""
    if kind == "all":
        return None
    have = threads if kind == "thread" else resources
    mine = None if current is None else (
        current.thread_id if kind == "thread" else current.resource_id)
    return next((x for x in (wanted, mine) if x is not None and x in have),
                min(have) if have else None)


def _version() -> Any:
    try:
        return services.data_version(url)
    except Exception:  # noqa: BLE001 - unknown: read again
        return object()


# each move of a progress bar redraws the page in the browser: 40 moves in 0.6 s cost a
# cold tab ~0.5 CPU-s (decision 011), so a bar only for work that lasts, moved 4 times a
# second; a thread of the demo composes in 0.5-1 s (over 1 s on a busy machine), every
# run of 5,000 runs in minutes
PROGRESS_AFTER_S = 2.0
PROGRESS_EVERY_S = 0.25


def _progress_bar(what: str) -> tuple[Callable[[], None], Callable[[int, int], None]]:
    """A callback that shows a progress bar saying ``what`` once the work has lasted
    PROGRESS_AFTER_S (nothing is drawn before: most work here is done sooner), moved at
    most every PROGRESS_EVERY_S; and one that takes the bar away."""
    slot: list[Any] = []
    started = time.monotonic()
    last_move = [started]

    def moved(done: int, total: int) -> None:
        now = time.monotonic()
        if now - started < PROGRESS_AFTER_S or now - last_move[0] < PROGRESS_EVERY_S:
            return
        last_move[0] = now
        if not slot:
            slot.append(st.empty())
        slot[0].progress(done / max(total, 1), text=f"{what} {done:,} of {total:,}")

    def clear() -> None:
        if slot:
            slot[0].empty()
    return clear, moved


Tried = tuple[str, Scope, tuple[tuple[str, Any], ...]]


def _tried(scope: Scope, changes: dict[str, Any]) -> Tried:
    """What an outcome is kept under: the database, the runs and the settings tried."""
    return url, scope, tuple(sorted(changes.items()))


def _outcome(tried: Tried, changes: dict[str, Any], scope: Scope) -> WhatIfReport:
    """What ``changes`` do to the runs of ``scope``: the outcome kept in the session when
    it was for the same and the database has not changed since, else composed (and
    kept). Raises what composing raised."""
    kept = st.session_state.get(REPORT_KEY)
    version = _version()
    if kept is not None and kept["tried"] == tried and kept["version"] == version:
        return kept["report"]  # type: ignore[no-any-return]
    clear, moved = _progress_bar("Putting the prompts together again (the first time "
                                 "also loads the embedding model):")
    try:
        report = compose(url, changes, scope, moved)
    finally:
        clear()
    st.session_state[REPORT_KEY] = {"tried": tried, "version": version, "report": report}
    return report


def _prefetch() -> None:
    """A link that names settings (a shared outcome, a fresh tab): its outcome and the
    reads drawn with it are done before the page draws on, so the browser gets the page
    in one piece — elements arriving over a second cost a cold tab ~0.5 CPU-s more than
    the same arriving at once (decision 011). The pickers open on the same scope, so the
    page finds all of it kept; what fails here fails again, and is said, where it is
    drawn."""
    changes, _ = changes_from_url({k: services.query_param(k) for k in SETTING_KEYS})
    scope = Scope(kind_opened, _opened(kind_opened, services.query_param(kind_opened)))
    if not changes or (scope.kind != "all" and scope.id is None):
        return
    try:
        cached_recorded(url, scope.kind, scope.id)
        report = _outcome(_tried(scope, changes), changes, scope)
        changed = tuple(r.run_id for r in report.runs if r.status == "changed")
        if changed:
            cached_ask_problems(url, changed)
    except Exception:  # noqa: BLE001 - said where the page draws it
        return


_prefetch()
kind: ScopeKind = st.radio("Which past runs", list(SCOPES), format_func=SCOPES.__getitem__,
                           index=list(SCOPES).index(kind_opened), horizontal=True)
scope_params: dict[str, str | None] = {"scope": None if kind == "thread" else kind,
                                       "thread": None, "resource": None}
changed_scope = kind != kind_opened
if kind == "thread":
    if not threads:
        st.info("No thread has runs in this database yet.")
        st.stop()
    wanted = asked_thread(url, threads, WHATIF_PAGE)
    first = min(threads)
    opened = _opened("thread", wanted) or first
    scope = Scope("thread", pick_thread(
        url, threads, wanted=opened,
        format_func=lambda t: f"{t} ({counted(len(runs.positions(t)), 'run')})"))
    changed_scope = changed_scope or scope.id != opened
    if services.query_param("thread") or scope.id != first:
        scope_params["thread"] = scope.id
elif kind == "resource":
    if not resources:
        st.info("No run in this database belongs to a user (resource).")
        st.stop()
    wanted = services.query_param("resource")
    opened = _opened("resource", wanted) or resources[0]
    if wanted and wanted not in resources:
        st.info(escape_md(f"no run belongs to user '{wanted}'; pick one that has runs"))
    scope = Scope("resource", str(st.selectbox("User (resource)", resources,
                                               index=resources.index(opened))))
    changed_scope = changed_scope or scope.id != opened
    if services.query_param("resource") or scope.id != resources[0]:
        scope_params["resource"] = scope.id
else:
    scope = Scope("all")
if changed_scope:  # what was tried was tried on other runs: the outcome goes
    set_query_params({**dict.fromkeys(SETTING_KEYS), "run": None})
set_query_params(scope_params)
in_scope = scope_run_ids(runs, scope)

# -- the settings to try --------------------------------------------------------------------
try:
    recorded = cached_recorded(url, scope.kind, scope.id)
except Exception as e:  # noqa: BLE001
    st.error(escape_md(f"Cannot read what these runs recorded: {services.friendly_error(e)}"))
    st.stop()
from_url, bad = ({}, None) if changed_scope else changes_from_url(
    {k: services.query_param(k) for k in SETTING_KEYS})
if bad:
    st.warning(escape_md(f"A setting in this link was left out: {bad}"), icon=":material/warning:")
if recorded.read and recorded.skipped == recorded.read:  # said before any form is filled
    st.info("None of these runs was composed here: they were imported or captured, so "
            "each holds the prompt its client sent, not how it was composed, and what if "
            "cannot re-compose them. Their prompts can still be changed and asked again "
            "on the Counterfactual page.", icon=":material/info:")


def _prefill(key: str) -> Any:
    """What the form shows: the setting the URL tried, else the one every run recorded."""
    if key in from_url:
        return from_url[key]
    single, value = recorded.one(key)
    return value if single else None


def _as_recorded(key: str) -> str:
    """A placeholder naming the values the runs recorded (several, or none)."""
    seen = recorded.values.get(key, ())
    shown = [("no limit" if v is None else f"{v:g}" if isinstance(v, float) else str(v))
             for v in seen]
    if len(shown) == 1:  # one value that no box shows: no limit
        return shown[0]
    return ("each run's own: " + ", ".join(shown[:4]) + (" …" if len(shown) > 4 else "")
            if shown else "not set in these runs")


def _options(key: str, values: tuple[str, ...]) -> tuple[list[str], int]:
    """A choice's options and the preselected one (``KEEP`` when the runs differ)."""
    value = _prefill(key)
    options = list(values) if value in values else [KEEP, *values]
    return options, options.index(value) if value in options else 0


budget_prefill = _prefill("token_budget")
prefill = tuple(_prefill(k) for k in SETTING_KEYS)
form_id = f"{scope.kind}:{scope.id}:{prefill}"  # new values when the scope or link changes


def _settings_fold() -> Any | None:
    """Where the form is drawn. Opened from a link that names settings, the outcome
    leads and the form waits in a fold naming what was tried, built only once opened
    (its eleven widgets cost a cold tab ~0.3 CPU-s, issue 36 point 7); open once the
    user has tried settings here, and whenever nothing was tried yet."""
    if not from_url:
        return st.container()
    tried_words = ", ".join(setting_words(k, v, recorded) for k, v in from_url.items())
    return opened_fold(escape_md(f"Settings tried: {tried_words} — open to change them"),
                       key="whatif-settings", icon=":material/tune:",
                       expanded=ASKED_KEY in st.session_state)


def _form() -> dict[str, Any] | None:
    """The settings form: what it holds once submitted, else None."""
    st.markdown("#### Settings to try")
    whose = {"thread": "The thread's", "resource": "The user's", "all": "All"}[scope.kind]
    st.caption(escape_md(
        f"{whose} {counted(len(in_scope), 'run')}. Prefilled with what they recorded; a box left "
        "empty keeps each run's own value. A recall setting reaches runs that had recall off "
        "only with Recall set to On.")
        + (escape_md(f" (The prefilled values are read from the newest {recorded.read:,} "
                     "runs; what if covers them all.)")
           if recorded.read < recorded.total else ""))
    with st.form(f"whatif-form:{form_id}", border=True):
        c1, c2, c3 = st.columns(3)
        recent_n = c1.number_input(
            "Recent window (latest messages kept)", min_value=0, max_value=10_000, step=1,
            value=_prefill("recent_n"), placeholder=_as_recorded("recent_n"),
            help="How many of the thread's latest messages each prompt holds (recent_n).")
        recall_options, recall_at = _options("recall", ("on", "off"))
        recall = c2.radio("Recall of older messages", recall_options, index=recall_at,
                          horizontal=True, format_func=lambda v: v if v == KEEP else v.title(),
                          help="Whether older messages similar to the question are looked up "
                               "and added to the prompt (recall on/off).")
        mode_options, mode_at = _options("recall.mode", MODES)
        mode = c3.selectbox("Recall mode", mode_options, index=mode_at,
                            format_func=lambda v: v if v == KEEP else f"{v} ({MODE_WORDS[v]})",
                            help="How older messages are found: vector (by meaning), lexical "
                                 "(by shared words) or hybrid (both).")
        c4, c5, c6 = st.columns(3)
        threshold = c4.number_input(
            "Recall threshold (minimum similarity)", min_value=0.0, max_value=1.0,
            step=0.05, format="%.2f", value=_prefill("recall.threshold"),
            placeholder=_as_recorded("recall.threshold"),
            help="An older message is recalled only when it is at least this similar to the "
                 "question (recall.threshold).")
        top_k = c5.number_input(
            "Recall top-k (older messages at most)", min_value=1, max_value=100, step=1,
            value=_prefill("recall.top_k"), placeholder=_as_recorded("recall.top_k"),
            help="How many older messages recall adds at most (recall.top_k).")
        budget = c6.number_input(
            "Token budget (prompt length at most)", min_value=1, max_value=1_000_000, step=50,
            value=budget_prefill if isinstance(budget_prefill, int) else None,
            placeholder=_as_recorded("token_budget"),
            help="The most tokens a prompt may hold; older recent messages are left out to fit "
                 "(token_budget). Empty: as each run had it.")
        had_limit = any(v is not None for v in recorded.values.get("token_budget", ()))
        no_limit = c6.checkbox("No limit", value=budget_prefill == "off",
                               help="Take the token budget away.") if had_limit else False
        submitted = st.form_submit_button("Try these settings", type="primary",
                                          icon=":material/play_arrow:")
    if not submitted:
        return None
    return {"recent_n": recent_n, "recall": None if recall == KEEP else recall,
            "recall.mode": None if mode == KEEP else mode, "recall.threshold": threshold,
            "recall.top_k": top_k, "token_budget": "off" if no_limit else budget}


settings_fold = _settings_fold()
form_values: dict[str, Any] | None = None
if settings_fold is not None:
    with settings_fold:
        form_values = _form()

changes: dict[str, Any] = from_url
if form_values is not None:
    changes = changes_from_form(form_values, recorded)
    set_query_params({**{k: url_value(changes[k]) if k in changes else None
                         for k in SETTING_KEYS}, "run": None})
    st.session_state[ASKED_KEY] = _tried(scope, changes)
tried = _tried(scope, changes)
if not changes and st.session_state.get(ASKED_KEY) != tried:
    st.stop()  # nothing tried yet


# -- the outcome ----------------------------------------------------------------------------
report: WhatIfReport
try:
    report = _outcome(tried, changes, scope)
except Exception as e:  # noqa: BLE001 - no traceback in the page
    st.error(escape_md(f"The what-if could not run: {services.friendly_error(e)}"),
             icon=":material/error:")
    st.stop()


def _with_answers(base: WhatIfReport) -> WhatIfReport:
    """The report with the answers asked again for what was tried (journaled, and kept
    in the session: the outcome is composed again when the database changed, by the
    asking too)."""
    kept_answers = st.session_state.get(ANSWERS_KEY)
    if not kept_answers or kept_answers["tried"] != tried:
        return base
    got = kept_answers["answers"]
    return base.model_copy(update={"runs": [
        r.model_copy(update=got[r.run_id]) if r.run_id in got and r.status == "changed"
        else r for r in base.runs]})


report = _with_answers(report)

moved_runs = [r for r in report.runs if r.status == "changed"]
cannot = [r for r in report.runs if r.status == "cannot"]
st.markdown("#### What would change")
# the counts as a line of text: three st.metric load a number-formatting library a cold
# tab pays ~0.1 CPU-s for (issue 36 point 7)
st.markdown(f"**{len(moved_runs):,}** {'run changes' if len(moved_runs) == 1 else 'runs change'}"
            f" · **{report.count('unchanged'):,}** unchanged · **{len(cannot):,}** cannot be "
            "tried")
summary = plain_summary(report, recorded)
st.markdown(escape_md(summary[0]))
if summary[1:]:
    st.markdown("\n".join(f"- {escape_md(line)}" for line in summary[1:]))


def _moved_cards(title: str, shown: list[Any], none: str, tag: str, total: int) -> None:
    st.markdown(f"**{title}**")
    if not shown:  # said, so the column beside the other one is not left blank
        st.caption(none)
    for i, mv in enumerate(shown):
        with st.container(border=True, key=f"moved-{tag}-{i}"):
            literal(preview_text(mv.preview))
            st.caption(escape_md(f"in {counted(mv.runs, 'run')}"
                                 + (" · an answer quoted it" if mv.quoted else "")))
            link_to_message(mv.thread_id, mv.seq, label=("said in ", *ref(mv.thread_id, mv.seq)))
    if total > len(shown):  # (the three that matter most: the rest are not hidden)
        more = total - len(shown)
        st.caption(f"and {more} more {'message' if more == 1 else 'messages'}: pick a run "
                   "below to see the messages each run gains and loses.")


def _moved_total(entered: bool) -> int:
    """How many messages the runs would gain (or lose) in all."""
    return len({(k.thread_id, k.seq) for r in report.runs for c in r.lanes
                for k in (c.entered if entered else c.left)})


gained, lost = most_moved(report, entered=True), most_moved(report, entered=False)
if gained or lost:
    left_col, right_col = st.columns(2)
    with left_col:
        _moved_cards("What they would have remembered", gained,
                     "Nothing: no past message would have entered a prompt it was not in.",
                     "1", _moved_total(entered=True))
    with right_col:
        _moved_cards("What they would have lost", lost,
                     "Nothing: every message these runs were given would still be in "
                     "their prompts.", "0", _moved_total(entered=False))

details = opened_fold("Engineer details", key="whatif-details")
if details is not None:
    with details:
        st.caption("The library's sentence (memwb whatif says the same):")
        st.text(report.sentence)
        json_view({"changes": report.changes,
                   "recorded by these runs": {k: list(v) for k, v in recorded.values.items()},
                   "runs": {s: report.count(s) for s in ("changed", "unchanged", "cannot")}})


def _asked_again(r: RunWhatIf, head: str) -> None:
    """A run's answer asked again: its verdict after ``head`` (Markdown), the recorded
    answer beside the new ones."""
    assert r.answer is not None
    colour, icon = VERDICTS[r.answer.verdict]
    st.markdown(f"{head}:{colour}-badge[{icon} answer {r.answer.verdict}]")
    before, after = st.columns(2)
    with before:
        st.caption("Recorded answer")
        literal(answer_text(r.answer.original_answer))
    with after:
        st.caption("Answer to the what-if prompt")
        for text in r.answer.new_answers:
            literal(text)


def _link(run_id: str) -> Link:
    """``run_id``, linking to this page's URL for the outcome shown with it side by side."""
    params = {k: v for k, v in scope_params.items() if v is not None}
    params.update({k: url_value(v) for k, v in report.changes.items()})
    return Link(run_id, "whatif?" + urlencode(with_db({**params, "run": run_id})))


def _total(tokens: Any) -> int:
    return 0 if tokens is None else sum(tokens.model_dump().values())


def _answer(r: RunWhatIf) -> str:
    if r.answer is not None:
        return r.answer.verdict
    if r.ask_error == NOT_ASKABLE:  # the caption above the button says why
        return "not asked"
    return f"not asked: {r.ask_error}" if r.ask_error else ""


st.markdown("#### Runs that change")
if not moved_runs:
    st.text("(none)")
else:
    st.caption("Each run's id opens it side by side (in a new tab); or pick it below.")
    asked_any = any(r.answer is not None or r.ask_error for r in moved_runs)
    rows = []
    for r in page_of(moved_runs, "changed"):
        lane = {c.lane: c for c in r.lanes}
        rec, rnt = lane.get("recalled"), lane.get("recent")
        rows.append({
            "run": _link(r.run_id),
            **({"answer asked again": _answer(r)} if asked_any else {}),
            **({} if scope.kind == "thread" else {"thread": r.thread_id or ""}),
            "recalled (in / out)": signed(len(rec.entered), len(rec.left)) if rec else "",
            "recent (in / out)": signed(len(rnt.entered), len(rnt.left)) if rnt else "",
            "other parts changed": ", ".join(LANE_TITLES.get(c.lane, c.lane)
                                             for c in r.lanes if c.block_changed),
            "prompt tokens": f"{_total(r.tokens_before)} → {_total(r.tokens_after)}",
            "quoted messages lost": len(r.key_lost)})
    empty = [k for k in rows[0] if all(row[k] == "" for row in rows)]  # nothing moved there
    rows = [{k: v for k, v in row.items() if k not in empty} for row in rows]
    light_table(rows, key="changed")
    totals = token_totals(moved_runs, TOKEN_LANES)
    lanes = [ln for ln in TOKEN_LANES if any(totals[ln])]
    # a small table of our words and numbers, not a chart: a chart library costs a cold
    # browser tab more CPU than the rest of the page (issue 36 point 7)
    st.markdown(f"**Prompt tokens by part, over the {counted(len(moved_runs), 'run')} that "
                "change**\n\n| part | as recorded | what if | change |\n|---|---:|---:|---:|\n"
                + "\n".join(f"| {LANE_TITLES[ln]} | {totals[ln][0]:,} | {totals[ln][1]:,} | "
                            f"{_change(totals[ln][1] - totals[ln][0])} |" for ln in lanes))

if moved_runs:
    st.markdown("#### Ask the model again")
    read_only = services.read_only()
    if read_only:
        st.info(READ_ONLY_ASK, icon=":material/lock:")
    choice = st.radio("Model to ask", ("recorded", "reader"), horizontal=True,
                      format_func={"recorded": "The model each run used",
                                   "reader": "The offline reader (runs here, no server)"
                                   }.__getitem__, disabled=read_only)
    ids = [r.run_id for r in moved_runs]
    problems = cached_ask_problems(url, tuple(ids)) if choice == "recorded" else {}
    askable = [i for i in ids if i not in problems]
    if problems:
        st.caption(escape_md(
            f"{len(problems):,} of these {counted(len(ids), 'run')} were answered by a model "
            f"that cannot be asked again here, so only the others are asked: "
            f"{next(iter(problems.values()))}."))
    reason = READ_ONLY_ASK if read_only else (
        None if askable else "None of these runs' models can be asked again here.")
    if st.button(f"Ask again ({counted(len(askable), 'run')})", icon=":material/replay:",
                 disabled=reason is not None, help=reason):
        model = None
        if choice == "reader":
            from memory_core.runs.registry import model_for_run

            embedder = next((r.memctx_after.settings.embedder for r in moved_runs
                             if r.memctx_after is not None), None)
            model = model_for_run(None, override="reader", embed_name=embedder)
        clear, moved = _progress_bar("Asking again:")
        try:
            asked = ask(url, report.changes, askable, model=model, progress=moved)
        except Exception as e:  # noqa: BLE001 - shown, never raised
            clear()
            st.error(escape_md(f"Could not ask again: {services.friendly_error(e)}"),
                     icon=":material/error:")
        else:
            clear()
            kept_answers = st.session_state.get(ANSWERS_KEY)
            answers = dict(kept_answers["answers"]) if kept_answers and \
                kept_answers["tried"] == tried else {}
            answers.update({rid: {"answer": None, "ask_error": NOT_ASKABLE}
                            for rid in problems})
            answers.update({r.run_id: {"answer": r.answer, "ask_error": r.ask_error}
                            for r in asked.runs})
            st.session_state[ANSWERS_KEY] = {"tried": tried, "answers": answers}
            st.rerun()
    answered = [r for r in report.runs if r.answer is not None]
    if answered:
        differ = [r for r in answered if r.answer is not None and r.answer.verdict != "unchanged"]
        unsure = sum(1 for r in differ if r.answer is not None
                     and r.answer.verdict == "inconclusive")
        st.markdown(escape_md(
            f"Asked again, {len(differ) - unsure} of {len(answered)} answers changed"
            + (f" and {unsure} could not be told apart from chance" if unsure else "") + "."))
        for i, r in enumerate(page_of(differ, "answers", size=ANSWERS_PAGE, noun="answers")):
            with st.container(border=True, key=f"answer-{i}"):
                _asked_again(r, md("Run ", Id(r.run_id), " · "))

if cannot:
    st.markdown("#### Runs that cannot be tried")
    st.caption("Their prompt cannot be put together again here; the reason is given for "
               "each.")
    light_table([{"run": run_link(r.run_id), "thread": Id(r.thread_id or ""),
                  "why": r.reason or ""} for r in cannot], key="cannot")


# -- one run side by side ----------------------------------------------------------------------
def _card(side: str, i: int, badge: tuple[str, str, str] | None, thread_id: str | None,
          seq: int | None, text: str, recall: str = "") -> None:
    with st.container(border=True, key=f"side-{side}-{i}"):
        if badge is not None:
            st.badge(badge[0], icon=badge[1], color=badge[2])  # type: ignore[arg-type]
        if thread_id is not None and seq is not None:
            st.caption(md(*ref(thread_id, seq), *((f" · {recall}",) if recall else ())))
        literal(preview_text(text))


def _side_by_side(r: RunWhatIf) -> None:
    view = services.cached_run_view(url, r.run_id)
    after = r.prompt_after.items if r.prompt_after is not None else []
    changes_of = {c.lane: c for c in r.lanes}
    before_col, after_col = st.columns(2)
    before_col.markdown("**As recorded**")
    after_col.markdown("**What if**")
    unchanged: list[tuple[str, views.LaneItem]] = []
    for lane in ("recalled", "recent"):
        ch = changes_of.get(lane)
        gone = {(k.thread_id, k.seq): k for k in ch.left} if ch else {}
        came = {(k.thread_id, k.seq): k for k in ch.entered} if ch else {}
        items = view.lane(lane).items
        tokens = (getattr(r.tokens_before, lane, 0), getattr(r.tokens_after, lane, 0))
        kept_items = [i for i in items if (i.thread_id, i.seq) not in gone]
        unchanged += [(lane, i) for i in kept_items]
        n_after = sum(1 for i in after if i.lane == lane)
        if not items and not n_after:
            continue  # nothing in it on either side
        with before_col:
            st.markdown(escape_md(f"{LANE_TITLES[lane]}: {counted(len(items), 'message')}, "
                                  f"{counted(tokens[0], 'token')}"))
            for j, (item, k) in enumerate((i, gone[(i.thread_id, i.seq)]) for i in items
                                          if i.thread_id is not None and i.seq is not None
                                          and (i.thread_id, i.seq) in gone):
                _card(f"b-{lane}", j, ("left", ":material/remove_circle:", "red"),
                      item.thread_id, item.seq, item.text, k.recall_text(entered=False))
            if kept_items:
                st.caption(f"and {counted(len(kept_items), 'message')} in both prompts")
        with after_col:
            st.markdown(escape_md(f"{LANE_TITLES[lane]}: {counted(n_after, 'message')}, "
                                  f"{counted(tokens[1], 'token')}"))
            for j, ((t, s), k) in enumerate(came.items()):
                _card(f"a-{lane}", j, ("entered", ":material/add_circle:", "green"), t, s,
                      k.preview, k.recall_text(entered=True))
            if kept_items:
                st.caption(f"and {counted(len(kept_items), 'message')} in both prompts")
    blocks = [LANE_TITLES.get(c.lane, c.lane) for c in r.lanes if c.block_changed]
    if blocks:
        st.caption(escape_md(f"Also different: {', '.join(blocks)}."))
    if unchanged:
        box = st.expander(f"{counted(len(unchanged), 'message')} in both prompts",
                          icon=":material/drag_handle:", on_change="rerun", key="side-same")
        if box.open:  # built only when opened
            with box:
                for j, (lane, item) in enumerate(unchanged):
                    _card(f"same-{lane}", j, None, item.thread_id, item.seq, item.text)
    if r.key_lost:
        st.warning(escape_md("Its answer quoted a message this prompt would no longer hold."),
                   icon=":material/warning:")
    light_table([{"part": LANE_TITLES[ln], "as recorded": getattr(r.tokens_before, ln, 0),
                  "what if": getattr(r.tokens_after, ln, 0)} for ln in TOKEN_LANES
                 if getattr(r.tokens_before, ln, 0) or getattr(r.tokens_after, ln, 0)],
                key="side-tokens")
    if r.answer is not None:
        _asked_again(r, "**Asked again:** ")
    elif r.ask_error:
        st.caption(escape_md(f"Not asked again: {r.ask_error}"))


if moved_runs:
    st.markdown("#### One run side by side")
    ids = [r.run_id for r in moved_runs]
    by_id = {r.run_id: r for r in moved_runs}
    asked_run = services.query_param("run")
    if asked_run is not None and asked_run not in by_id:
        st.info(escape_md(f"Run '{asked_run}' is not among the runs these settings change."))
    remembered = services.remembered_run()
    opened_run = asked_run if asked_run in by_id else (
        remembered if remembered in by_id else ids[0])  # the run the user came from
    summaries = services.cached_runs(url)
    focus = str(kept_select(st, "Run", ids, opened_run, key="pick:whatif-run",
                            format_func=run_labeller(url, [r for r in map(summaries.get, ids)
                                                           if r is not None],
                                                     threads=kind != "thread")))
    follow_run(focus, in_url=asked_run is not None or focus != ids[0])
    link_to_run(focus, label=("inspect run ", Id(focus)))
    try:
        _side_by_side(by_id[focus])
    except Exception as e:  # noqa: BLE001
        st.error(escape_md(f"Cannot show run '{focus}': {services.friendly_error(e)}"))


# -- asking again ---------------------------------------------------------------------------------
