"""Why forgotten page: the fate of one message in one run (given to the model, or left
out and why), its evidence, and its lifeline across the runs of the run's thread.

URL: ``why?run=<id>&thread=<id>&seq=<n>`` or ``why?run=<id>&q=<phrase>``. A phrase is
matched by words and meaning (memory_core.analysis.forgotten.find_by_phrase) in every
part the model was given — message text, tool calls and results, the instructions … —
and in stored messages: the page lists the closest places, each with the part that
matched and its fate, and explains the one picked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import streamlit as st

from app import services
from app.components import (
    WHY_PAGE,
    Id,
    ThreadPicker,
    escape_md,
    fate_badge,
    fmt_score,
    fmt_time,
    json_view,
    link_to_message,
    link_to_run,
    literal,
    md,
    pick_run,
    pick_thread,
    preview_text,
    ref,
    set_query_params,
    thread_label,
    truncate,
)
from app.kept_select import kept_select
from app.light_table import light_table, run_link

if TYPE_CHECKING:
    from memory_core.analysis.fate_rules import Rule
    from memory_core.analysis.fates import Explanation
    from memory_core.analysis.forgotten import LifelinePoint, PhraseMatch, PhraseSearch

PICK, PHRASE = "Pick a message", "Type a phrase"

st.title("Why forgotten")
st.caption("Was a message given to the model in a run? If not, why not?")
url = services.current_url()

run_id, thread_runs = pick_run(url, page=WHY_PAGE)

url_phrase = services.query_param("q")
how = st.radio("Which message", [PICK, PHRASE], index=1 if url_phrase else 0,
               horizontal=True)
msg_thread: str | None = None
msg_seq: int | None = None
phrase: str | None = None
if how == PICK:
    try:
        scope = services.cached_scope_threads(url, run_id)
    except Exception as e:  # noqa: BLE001
        st.error(escape_md(services.friendly_error(e)))
        st.stop()
    seq_param = services.query_param("seq")
    url_ref = (services.query_param("thread") or "",
               int(seq_param) if seq_param and seq_param.isdigit() else -1)
    # thread first, then one of its messages: a resource can hold thousands of messages,
    # and a picker offering them all is sent whole on every script run
    scope_ids = [tid for tid, _ in scope]
    scope_titles = dict(scope)
    col_thread, col_msg = st.columns([1, 2], vertical_alignment="bottom")

    def titled(t: str) -> str:
        return thread_label(t, scope_titles[t])

    # the run's thread, then its owner's others newest first (scope order); an owner of
    # thousands of threads: the newest THREADS_LISTED, and a box to find the others
    rank = {tid: len(scope_ids) - i for i, tid in enumerate(scope_ids)}
    msg_thread = pick_thread(
        url, rank, wanted=url_ref[0] if url_ref[0] in rank else scope_ids[0],
        where=col_thread, titles=scope_titles, also=scope_ids[:1],
        picker=ThreadPicker(label="Message thread", find_key="find-message-thread",
                            find_param="find_message_thread",
                            what="threads the run could have been given", newest_first=True),
        format_func=titled,
        help="The run's thread, then its owner's other threads.") if scope_ids else None
    try:
        msgs = services.cached_thread_scope_messages(url, msg_thread) if msg_thread else []
    except Exception as e:  # noqa: BLE001
        st.error(escape_md(services.friendly_error(e)))
        st.stop()
    if not msgs:
        st.info("The run's thread and resource hold no messages." if len(scope_ids) < 2
                else "This thread holds no messages.")
        st.stop()
    refs = [(m.thread_id, m.seq) for m in msgs]
    texts = {(m.thread_id, m.seq): f"{m.role}: {truncate(m.text, 100)}" for m in msgs}
    picked = kept_select(col_msg, "Message", refs, url_ref if url_ref in refs else refs[0],
                         key="pick:why-message", format_func=lambda r: f"#{r[1]} · {texts[r]}",
                         help="The messages of the thread picked beside it.")
    msg_thread, msg_seq = picked
    # the run's thread's first message, shown by default, stays out of the URL: a link
    # that opened this page on a run is then one browser history entry, not two
    named = url_ref in refs or picked != (scope_ids[0], msgs[0].seq)
    set_query_params({"thread": msg_thread if named else None,
                      "seq": str(msg_seq) if named else None, "q": None})
else:
    phrase = st.text_input("Phrase the model should have known", value=url_phrase or "",
                           placeholder="e.g. refund of €240").strip() or None
    set_query_params({"q": phrase, "thread": None, "seq": None})
    if phrase is None:
        st.info("Type a phrase to look for in the stored messages.")
        st.stop()


def _part_label(m: PhraseMatch) -> tuple[str | Id, ...]:
    """The part of a place that matched, for a caption: tool names and call ids as
    stored (code font)."""
    call = (" (call ", Id(m.call_id or "?"), ")")
    if m.part == "tool-call-name":
        return ("name of tool call ", Id(m.call_id or "?"))
    if m.part == "tool-call-arguments":
        return ("arguments of the call to ", Id(m.tool or "?"), *call)
    if m.part == "tool-result":
        return ("result of ", Id(m.tool or "?"), *call)
    if m.part == "tool-definition":
        return ("definition of tool ", Id(m.tool or "?"), " (name, description, parameters)")
    if m.part == "request-parameters":
        return ("response format the request asked for",)
    return (m.part.replace("-", " "),)


def _where(m: PhraseMatch) -> tuple[str | Id, ...]:
    """A place as caption parts: the stored message, or where in the run's prompt."""
    if m.thread_id is not None:
        return ref(m.thread_id, m.seq)
    if m.part == "tool-definition":
        return ("(not a stored message: a tool offered to the model in this run)",)
    if m.part == "request-parameters":
        return ("(not a stored message: sent with this run's request)",)
    return (f"(not a stored message: {m.lane or '?'} of this run)",)


def _fates(e: Explanation | LifelinePoint) -> str:
    """A message's fate as one text: every rule that kept it out, in order."""
    return " + ".join(r.rule for r in e.rules) if len(e.rules) > 1 else e.fate


def _stretches(points: list[LifelinePoint]) -> list[list[tuple[int, LifelinePoint]]]:
    """The runs, oldest first, cut where the fate (or whether the model was given the
    message) changes: (run number from 1, point) each."""
    out: list[list[tuple[int, LifelinePoint]]] = []
    for n, p in enumerate(points, 1):
        last = out[-1][-1][1] if out else None
        if last is not None and (_fates(last), last.reached_model) == (_fates(p),
                                                                      p.reached_model):
            out[-1].append((n, p))
        else:
            out.append([(n, p)])
    return out


def _stretch_line(stretch: list[tuple[int, LifelinePoint]], current: str) -> str:
    """One Markdown list item: "runs 3–7 (5): below-threshold — not given · a → b",
    the fate a green or red badge (a fixed vocabulary), run ids escaped."""
    (first, p), (last, q) = stretch[0], stretch[-1]
    colour = "green" if p.reached_model else "red"
    given = "given to the model" if p.reached_model else "not given to the model"
    where = f"run {first}" if first == last else f"runs {first}–{last} ({last - first + 1})"
    ids = (md(Id(p.run_id)) if first == last
           else md(Id(p.run_id), " → ", Id(q.run_id)))
    mark = [n for n, x in stretch if x.run_id == current]
    this = f" · **this run is run {mark[0]}** ({md(Id(current))})" if mark else ""
    return f"- {where}: :{colour}-badge[{_fates(p)}] {given} · {ids}{this}"


def _badges(e: Explanation, size: str = "") -> None:
    """The fate as badges, one per rule that kept the message out (green when the
    model was given it). Fates are a fixed vocabulary, never stored text."""
    icon = ":material/check_circle:" if e.reached_model else ":material/block:"
    colour = "green" if e.reached_model else "red"
    names = [r.rule for r in e.rules] if len(e.rules) > 1 else [e.fate]
    st.markdown(size + " ".join(f":{colour}-badge[{icon} {n}]" for n in names))


def _rules(rules: list[Rule], let_in: str | None) -> None:
    """Every rule that kept the message out, in the order composition applied them,
    each with what would have let it past (the sentence above tells one rule whole);
    then how to check that those settings let it in."""
    from memory_core.analysis.wording import value_text

    if len(rules) > 1:
        st.markdown("#### Kept out by")
        st.caption("In the order composition applied them; each is checked with the ones "
                   "before it lifted.")
        st.markdown("\n".join(
            f"{i}. **{r.rule}** — {escape_md(r.said)}. " + (
                f"It would have passed with {escape_md(r.admits)}." if r.admits else
                "No setting lets it past.") for i, r in enumerate(rules, 1)))
    changes = [f"{r.setting}={value_text(r.needed)}" for r in rules
               if r.setting is not None and r.needed is not None]
    if let_in and changes:
        st.caption(md("To check it, compose the run again with "
                      + ("these settings" if len(changes) > 1 else "this setting")
                      + " (the What if page, or ", Id(f"memwb whatif --run {run_id} "
                                                     + " ".join(f"--set {c}" for c in changes)),
                      ")."))


def _closest(search: PhraseSearch) -> Explanation:
    """The search's verdict and its closest messages, each with its fate; returns the
    explanation of the one picked (the best by default), or the not-stored one — also
    first, and picked by default, when even the closest is too far to be what the
    phrase speaks of (``too_far``: it shares only a word or two of it)."""
    from memory_core.analysis.fates import GIVEN_FATES

    st.info(escape_md(search.sentence))
    st.caption(escape_md(f"Searched {search.searched}."))
    if not search.matches:
        return search.verdict()
    far = search.far
    st.markdown("#### Nearest messages, none of them the phrase" if far
                else "#### Closest messages")
    for i, m in enumerate(search.matches):
        e = m.explanation
        given = e.fate in GIVEN_FATES
        with st.container(border=True, key=f"match-{i}"):
            if len(e.rules) > 1:
                _badges(e)
            else:
                st.badge(e.fate, color="green" if given else "red",
                         icon=":material/check_circle:" if given else ":material/block:")
            how = ("contains the phrase" if m.contains else
                   "shares " + ", ".join(f"{w} (as “{m.shared_as[w]}”)" if w in m.shared_as
                                         else w for w in m.shared_terms) if m.shared_terms
                   else "close in meaning")
            # a message's text is the usual place: only another part is named
            part = () if m.part == "text" else (" · in the ", *_part_label(m))
            # (the phrase's similarity: the sentence under it may name the message's
            # similarity to the run's question, which recall compared)
            st.caption(md(*_where(m), f" · {e.role or '?'}", *part, f" · {how} · "
                          f"similarity to the phrase {fmt_score(m.similarity)}"))
            literal(preview_text(e.preview or "") if m.part == "text" else m.excerpt)
            st.caption(escape_md(e.sentence))
    # radio options render Markdown: ids are stored text
    labels = [escape_md(f"{m.thread_id} #{m.seq}" if m.thread_id is not None else
                        f"the definition of tool {m.tool}" if m.part == "tool-definition" else
                        "the response format" if m.part == "request-parameters" else
                        m.part.replace("-", " ") if m.part.replace("-", "_") == m.lane else
                        f"{m.part.replace('-', ' ')} ({(m.lane or '?').replace('_', ' ')})")
              for m in search.matches]
    if far:  # the phrase's own verdict first
        labels = ["the phrase (not stored)", *labels]
    picked = st.radio("Explain in detail", range(len(labels)), format_func=labels.__getitem__,
                      horizontal=True, key="match")
    if far:
        return search.matches[picked - 1].explanation if picked else search.verdict()
    return search.matches[picked or 0].explanation


try:
    if phrase is not None:
        # the phrase is embedded with the run's embedder: a model loads on first use
        services.load_run_embedder(url, run_id)
        exp = _closest(services.cached_phrase_search(url, run_id, phrase))
    else:
        # a message recall did not rank is scored again with the run's embedder
        with services.embedding_status(url, run_id):
            exp = services.cached_why(url, run_id, msg_thread, msg_seq, None)
except Exception as e:  # noqa: BLE001
    st.error(escape_md(services.friendly_error(e)))
    st.stop()

if len(exp.rules) > 1:
    _badges(exp, "## ")  # every rule that kept it out
else:
    fate_badge(exp.fate, exp.reached_model)
if phrase is None or exp.fate != "not-stored":  # else the search's verdict said it
    st.info(escape_md(exp.sentence))
if exp.thread_id is not None and exp.seq is not None:
    st.caption(md(*ref(exp.thread_id, exp.seq), f" · {exp.role or '?'}"))
    literal(preview_text(exp.preview or ""))
    link_to_message(exp.thread_id, exp.seq, label=("open ", *ref(exp.thread_id, exp.seq)))
elif exp.preview:  # a part of the run's prompt that is no stored message
    st.caption(escape_md(f"{exp.evidence.get('lane', '?')} of this run's prompt · "
                         f"{exp.role or '?'}"))
    literal(preview_text(exp.preview))
link_to_run(run_id, label=("inspect run ", Id(run_id)))
if exp.rules:
    _rules(exp.rules, exp.let_in)

st.markdown("#### Evidence")
if exp.evidence:
    json_view(exp.evidence)
else:
    st.text("(no further evidence recorded)")

if exp.thread_id is None or exp.seq is None:
    st.stop()
# follow the conversation being analysed: for a message recalled from another thread
# that is where its fate changes
runs_of = next((r.thread_id for r in thread_runs if r.run_id == run_id), None) or exp.thread_id
st.markdown(f"#### Lifeline of {escape_md(f'{exp.thread_id} #{exp.seq}')} across the runs "
            f"of {escape_md(runs_of)}")
try:
    points = services.cached_lifeline(url, exp.thread_id, exp.seq, runs_of)
except Exception as e:  # noqa: BLE001
    st.error(escape_md(services.friendly_error(e)))
    st.stop()
if not points:
    st.text("(the message's thread has no replayable runs)")
    st.stop()
# the lifeline as text: the runs, oldest first, in stretches of one fate (a fate of
# several rules is one fate), this run marked; each run's row is in the table below. No
# chart: a chart library costs a cold browser tab more CPU than the rest of the page
st.markdown("\n".join(_stretch_line(s, run_id) for s in _stretches(points)))
light_table([{"run": run_link(p.run_id), "started": fmt_time(p.started_at), "fate": _fates(p),
              "given to the model": p.reached_model, "why": p.sentence} for p in points],
            key="lifeline", opens_at=next(
                (i for i, p in enumerate(points) if p.run_id == run_id), None))
