"""Counterfactual replay page: take recalled messages or whole lanes out of a run's
frozen prompt (or put dropped messages and near misses back), re-run the model and
show whether the answer changed; leave-one-out attribution; the run's past replays.

URL: ``counterfactual?run=<id>`` opens the same run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import plotly.graph_objects as go
import streamlit as st

from app import services
from app.components import (
    COUNTERFACTUAL_PAGE,
    LANE_TITLES,
    Id,
    answer_text,
    escape_md,
    fmt_score,
    link_to_run,
    literal,
    md,
    pick_run,
    plot_text,
    preview_text,
    truncate,
)
from app.light_table import Link, light_table, message_url
from memory_core.errors import InvalidInputError
from memory_core.runs.registry import (
    RecordedServerError,
    describe_model,
    model_for_run,
    plan_model_for_run,
    recorded_identity,
)

if TYPE_CHECKING:
    from memory_core.analysis.counterfactual import AttributionItem, CounterfactualResult
    from memory_core.models.base import Model

VERDICT_BADGES = {"changed": ("orange", ":material/published_with_changes:"),
                  "unchanged": ("green", ":material/check_circle:"),
                  "inconclusive": ("gray", ":material/help:")}
REPLAY_HINT = ("A replay re-asks the model chosen above: the one the run recorded (the "
               "offline reader, or its OpenAI-compatible server: MEMWB\\_OPENAI\\_BASE\\_URL "
               "when set, else the server the run recorded once you confirm it), or the "
               "offline reader.")
MODEL_CHOICES = ("recorded", "reader")

st.title("Counterfactual replay")
st.caption("Take parts out of what the model was given (or put back what was left out), "
           "run the same model again on the edited prompt, and see whether the answer "
           "changes. Results are kept in the run's journal.")
url = services.current_url()

run_id, _ = pick_run(url, page=COUNTERFACTUAL_PAGE)
link_to_run(run_id, label=("inspect run ", Id(run_id)))

try:
    view = services.cached_run_view(url, run_id)
except Exception as e:  # noqa: BLE001
    st.error(escape_md(f"Cannot read run '{run_id}': {services.friendly_error(e)}"))
    st.stop()
if view.error or not any(lv.items for lv in view.lanes):
    st.warning(escape_md(f"Run '{run_id}' has no frozen prompt to replay"
                         + (f" (it failed: {view.error})" if view.error else "") + "."))
    st.stop()

Ref = tuple[str, int]
options = services.cached_variant_options(url, run_id)
recalled: dict[Ref, str] = {(c.thread_id, c.seq): c.label for c in options.recalled}
given: dict[Ref, str] = {(c.thread_id, c.seq): c.label for c in options.given}
putbackable: dict[Ref, str] = {(c.thread_id, c.seq): c.label for c in options.put_back}
present_lanes = options.lanes


def _ref_label(ref: Ref, texts: dict[Ref, str]) -> str:
    text = " ".join(texts[ref].split())
    return f"{ref[0]} #{ref[1]} · {truncate(text, 90)}"


st.markdown("#### What to change")
mode = st.radio("Recalled messages", ["Keep them", "Subtract all recalled",
                                      "Subtract chosen recalled"],
                horizontal=True, key=f"mode:{run_id}",
                disabled=not recalled,
                help=None if recalled else "This run recalled nothing.")
chosen: list[Ref] = []
if mode == "Subtract chosen recalled":
    chosen = st.multiselect("Recalled messages to subtract", list(recalled),
                            format_func=lambda r: _ref_label(r, recalled),
                            key=f"chosen:{run_id}")
others: list[Ref] = st.multiselect(
    "Other messages it was given to subtract (the recent window; an imported run's "
    "whole history)", list(given), format_func=lambda r: _ref_label(r, given),
    key=f"others:{run_id}", disabled=not given)
lanes_out = st.multiselect("Whole lanes to subtract", present_lanes,
                           format_func=lambda ln: LANE_TITLES.get(ln, ln),
                           key=f"lanes:{run_id}")
put_back: list[Ref] = st.multiselect(
    "Put back (dropped messages and near misses)", list(putbackable),
    format_func=lambda r: _ref_label(r, putbackable), key=f"putback:{run_id}",
    disabled=not putbackable)
subtract: Literal["all"] | list[Ref] = (
    "all" if mode == "Subtract all recalled" and not others else
    [*recalled, *others] if mode == "Subtract all recalled" else [*chosen, *others])


def _model_choice() -> tuple[str | None, bool, str | None]:
    """The model picker: the model this run used (default) or the offline reader.
    Returns the override for the library (None: the recorded model), whether the server
    the run recorded is to be asked (only once the visitor ticks the confirmation that
    shows its host: a database is data from elsewhere) and, when the model cannot be
    asked, why (the page then disables the buttons and says so)."""
    try:
        used = describe_model(recorded_identity(recorded))
    except InvalidInputError:
        used = "unknown"
    labels = {"recorded": escape_md(f"The model this run used: {used}"),
              "reader": "The offline reader (runs here, no server)"}
    pick = st.radio("Model to re-ask", MODEL_CHOICES, format_func=labels.__getitem__,
                    key=f"model:{run_id}")
    override = None if pick == "recorded" else "reader"
    try:
        plan_model_for_run(recorded, override=override)
    except RecordedServerError as e:
        confirmed = st.checkbox(md("Ask ", Id(e.host), " again — this database names it"),
                                key=f"recorded-server:{run_id}", help=escape_md(
                                    f"The run was answered by {e.server}. A server named by "
                                    "a database is asked only when you confirm it here (or "
                                    "set MEMWB_OPENAI_BASE_URL); your API key is not sent "
                                    "to it unless MEMWB_OPENAI_BASE_URL names this host."))
        if not confirmed:
            # no stored text here: a button's help renders Markdown unescaped
            return override, False, ("This run's model was asked at a server named by this "
                                     "database (shown above): tick the box to ask it again, "
                                     "or set MEMWB_OPENAI_BASE_URL, or choose the offline "
                                     "reader.")
        try:
            plan = plan_model_for_run(recorded, use_recorded_server=True)
        except InvalidInputError as bad:
            return override, False, str(bad)
        if not plan.send_key:
            st.caption("Asked without your API key: it is sent only to the host "
                       "MEMWB\\_OPENAI\\_BASE\\_URL names.")
        return override, True, None
    except InvalidInputError as e:
        return override, False, str(e)
    return override, False, None


recorded = view.steps[0].model if view.steps else {}
override, use_recorded_server, model_problem = _model_choice()
if model_problem:
    st.warning(escape_md(model_problem), icon=":material/block:")


def _chosen_model() -> Model | None:
    """The model object to pass (None: the library rebuilds the recorded one, which
    never calls the server the run recorded)."""
    if override is None and not use_recorded_server:
        return None
    return model_for_run(recorded or None, override=override,
                         use_recorded_server=use_recorded_server,
                         embed_name=view.settings.get("embedder"))


read_only = services.read_only()
if read_only:
    st.info(services.READ_ONLY_REASON, icon=":material/lock:")
if st.button("Run counterfactual", type="primary", icon=":material/play_arrow:",
             disabled=read_only or model_problem is not None,
             help=services.READ_ONLY_REASON if read_only else model_problem):
    if not (subtract or lanes_out or put_back):
        st.warning("Choose something to subtract or put back first.")
    else:
        with st.spinner("Re-running the model on the edited prompt…"):
            try:
                st.session_state[f"cf-result:{run_id}"] = services.run_counterfactual(
                    url, run_id, subtract=subtract, lanes=lanes_out, put_back=put_back,
                    model=_chosen_model())
            except Exception as e:  # noqa: BLE001 - no traceback in the page
                st.session_state.pop(f"cf-result:{run_id}", None)
                st.error(escape_md(f"The counterfactual could not run: {services.friendly_error(e)}"),
                         icon=":material/error:")
                st.caption(REPLAY_HINT)



def _answers(result: CounterfactualResult) -> None:
    """The answers the verdict weighed, side by side: the unchanged prompt's (the
    run's recorded answer, and the baseline re-asks) beside the edited prompt's, each
    with the model that gave it; the recorded answer of another model is shown but not
    compared."""
    asked = str(result.model.get("name", "?"))
    recorded = str((result.recorded_model or {}).get("name") or "the run's model")
    other = result.same_model is False
    against = ("the baseline only" if other else
               "the recorded answer and the baseline" if result.baseline_answers
               else "the recorded answer")
    st.caption(md(f"{result.description} · the new answer is judged against {against} · "
                  f"similarity {fmt_score(result.similarity)} to the "
                  + ("recorded answer" if result.similarity_to != "baseline" else
                     "baseline answer" if len(result.baseline_answers) == 1 else
                     "first baseline answer")))
    if other:
        st.info(md("The recorded answer came from ", Id(recorded), "; the baseline and the "
                   "new answer came from ", Id(asked), ", re-asked. Two models answer "
                   "differently whatever the prompt, so the verdict compares ", Id(asked),
                   "'s answers only: its answer to the unchanged prompt (the baseline) "
                   "against its answer to the edited one."),
                icon=":material/compare_arrows:")
    unchanged, edited = st.columns(2)
    with unchanged:
        st.markdown("**Unchanged prompt**")
        if not other:
            _recorded(result, recorded, compared=True)
        for i, ans in enumerate(result.baseline_answers, 1):
            with st.container(border=True, key=f"cf-baseline-{i}"):
                n = f" {i}" if len(result.baseline_answers) > 1 else ""
                st.caption(md(f"Baseline{n} · ", Id(asked), " · re-asked"))
                literal(ans)
        if other:  # beside the new answer are the answers it is judged against
            _recorded(result, recorded, compared=False)
    with edited:
        st.markdown("**Edited prompt**")
        for i, ans in enumerate(result.new_answers, 1):
            with st.container(border=True, key=f"cf-new-{i}"):
                st.caption(md(f"New answer {i} · " if len(result.new_answers) > 1
                              else "New answer · ", Id(asked)))
                literal(ans)


def _recorded(result: CounterfactualResult, recorded: str, *, compared: bool) -> None:
    """The run's recorded answer, with the model that gave it."""
    with st.container(border=True, key="cf-recorded"):
        st.caption(md("Recorded answer · ", Id(recorded),
                      "" if compared else " · not compared: another model"))
        literal(answer_text(result.original_answer))

result: CounterfactualResult | None = st.session_state.get(f"cf-result:{run_id}")
if result is not None:
    colour, icon = VERDICT_BADGES[result.verdict]
    st.markdown(f"## Verdict: :{colour}-badge[{icon} {result.verdict}]")
    _answers(result)
    for note in result.notes:
        st.warning(escape_md(note))

st.markdown("#### Leave-one-out attribution")
st.caption("Replays the run once without each stored message it was given (recalled and "
           "recent), to show which ones the answer depended on.")
if st.button("Run attribution", icon=":material/bar_chart:",
             disabled=read_only or not (recalled or given) or model_problem is not None,
             help=(services.READ_ONLY_REASON if read_only else model_problem
                   or (None if recalled or given else
                       "This run was given no stored message to take away."))):
    bar = st.progress(0.0, text="Replaying without each message it was given…")

    def _progress(done: int, total: int) -> None:
        bar.progress(done / max(total, 1), text=f"{done} of {total} replays done")

    try:
        st.session_state[f"attribution:{run_id}"] = services.run_attribution(
            url, run_id, progress=_progress, model=_chosen_model())
    except Exception as e:  # noqa: BLE001
        st.session_state.pop(f"attribution:{run_id}", None)
        st.error(escape_md(f"Attribution could not run: {services.friendly_error(e)}"),
                 icon=":material/error:")
        st.caption(REPLAY_HINT)
    bar.empty()
items: list[AttributionItem] | None = st.session_state.get(f"attribution:{run_id}")
if items:
    labels = [f"{a.thread_id} #{a.seq}" if a.kind == "message" else f"lane {a.lane}"
              for a in items]
    fig = go.Figure(go.Bar(
        x=[a.effect for a in items], y=[plot_text(lab) for lab in labels], orientation="h",
        marker_color=["#e6550d" if a.changed else "#9ecae1" for a in items],
        hovertemplate="%{y}: effect %{x:.3f}<extra></extra>"))
    fig.update_layout(height=80 + 40 * len(items), margin={"l": 10, "r": 10, "t": 30, "b": 10},
                      xaxis_title="effect on the answer (1 − similarity)",
                      yaxis={"autorange": "reversed"}, xaxis={"range": [0, 1]})
    st.plotly_chart(fig, key="attribution")
    light_table([{"item": Link(lab, message_url(a.thread_id, a.seq), code=False)
                  if a.kind == "message" and a.thread_id is not None else lab,
                  "changed": a.changed, "effect": fmt_score(a.effect),
                  "preview": preview_text(a.preview), "answer without it": a.answer_without}
                 for lab, a in zip(labels, items, strict=True)], key="attribution")
elif items is not None:
    st.text("(this run was given no stored message to attribute)")

st.markdown("#### Past counterfactuals of this run")
try:
    past = services.cached_counterfactuals(url, run_id)
except Exception as e:  # noqa: BLE001
    st.error(escape_md(services.friendly_error(e)))
    past = []
if past:
    # five columns, so the answers have room: how a verdict was reached is one cell
    # (what it was judged against, the similarity, the model that answered)
    light_table([{"change": p.description, "verdict": p.verdict,
                  "new answer": p.new_answer,
                  "judged against": ("baseline" if p.same_model is False
                                     else "recorded answer + baseline" if p.baseline_answers
                                     else "recorded answer")
                  + f" · similarity {fmt_score(p.similarity)} · by {p.model.get('name', '?')}",
                  "key": Id(p.key)}
                 for p in past], key="past")
else:
    st.text("(none yet)")
