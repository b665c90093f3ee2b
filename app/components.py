"""Display pieces shared by the workbench pages: literal message text, and links
between pages that keep shareable URLs (the plotly figures are in app/charts.py).

Nothing here computes from storage; it only turns view objects into widgets.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
import string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

import streamlit as st

from app.kept_select import kept_select
from memory_core.analysis import views
from memory_core.analysis.wording import counted as counted  # (the pages say counts so)
from memory_core.types import is_undated

START_PAGE = "app_pages/start.py"
THREADS_PAGE = "app_pages/threads.py"
RUN_PAGE = "app_pages/run_inspector.py"
COMPARE_PAGE = "app_pages/compare.py"
COUNTERFACTUAL_PAGE = "app_pages/counterfactual.py"
WHY_PAGE = "app_pages/why.py"
TIMELINE_PAGE = "app_pages/timeline.py"
WHATIF_PAGE = "app_pages/whatif.py"
STORY_PAGE = "app_pages/story.py"

LANE_COLOURS: dict[str, str] = {
    "instructions": "#8c8c8c", "working_memory": "#6a51a3", "observations": "#31a354",
    "recalled": "#3182bd", "recent": "#fd8d3c", "input": "#e6550d", "dropped": "#bdbdbd",
}
STATUS_COLOURS: dict[str, str] = {
    "hit": "#3182bd", "dropped": "#d62728", "below-threshold": "#fd8d3c", "beyond-top-k": "#fdae6b",
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
    "sent-by-client": "#31a354", "held-by-server": "#a1d99b", "not-sent-by-client": "#fd8d3c",
    "unknown": "#bdbdbd",
    # given during the run (a tool call and its result), or a part of the prompt that is
    # no stored message (a phrase found there)
    "earlier-step": "#6baed6", "instructions": "#9ecae1", "working-memory": "#9ecae1",
    "observations": "#74c476", "tool-definition": "#9ecae1",
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


@dataclass(frozen=True, slots=True)
class Id:
    """An identifier (a thread, run, observation or call id) in a label: shown in the
    code font, exactly as stored."""

    text: str


#: a label in our words with ids in it: plain text, or parts of text and ``Id``
Label = str | tuple[str | Id, ...]


def md(*parts: str | Id) -> str:
    """Markdown for a label made of our words and stored values: text parts escaped
    (``escape_md``), ``Id`` parts as code spans — monospace, shown as they are."""
    return "".join(_code_span(p.text) if isinstance(p, Id) else escape_md(p) for p in parts)


def _label(label: Label) -> str:
    return escape_md(label) if isinstance(label, str) else md(*label)


def ref(thread_id: str | None, seq: int | None, *,
        to_seq: int | None = None) -> tuple[str | Id, ...]:
    """A message (or thread, or seq range) as label parts: ``thread #seq``."""
    if thread_id is None:
        return ("(not a stored message)",)
    if seq is None:
        return (Id(thread_id),)
    tail = f" #{seq}" if to_seq is None or to_seq == seq else f" #{seq}–{to_seq}"
    return (Id(thread_id), tail)


def plot_text(text: object) -> str:
    """Stored text for a plotly label, tick or hover: plotly renders a subset of HTML
    (<a href>, <b>, <br>) in those, so it is escaped."""
    # (quotes are left: plotly shows "&quot;" as it is, and a quote opens no tag)
    return html.escape(str(text), quote=False)


def literal(text: str) -> None:
    """Message text exactly as stored: never Markdown, never HTML."""
    st.text(text if text else "(empty)")


MONO_STYLE = ("<style>[class*='st-key-mono-'] [data-testid='stText'], "
              "[class*='st-key-mono-'] [data-testid='stText'] * { font-family: "
              "'Source Code Pro', 'SFMono-Regular', Menlo, Consolas, monospace; "
              "font-size: 0.875rem; }</style>")


def monospace(text: str, *, key: str) -> None:
    """Code, JSON or a command exactly as stored (``literal``), in the code font: an
    ``st.code`` block would cost a cold tab ~0.4 CPU-s, even in a closed expander, as
    its highlighter loads (decision 011). ``key`` is unique on the page."""
    with st.container(key=f"mono-{key}"):
        st.html(MONO_STYLE)  # a style alone: no element drawn
        literal(text)


def opened_fold(label: str, *, key: str, expanded: bool = False,
                icon: str | None = None) -> Any | None:
    """A fold (expander) whose content the page builds only once it is open: the
    expander when open, else None. Folded content still costs a cold tab (a JSON view
    ~0.1 CPU-s, decision 011); opening it reruns the page. ``key`` keeps its state."""
    fold = st.expander(label, expanded=expanded, icon=icon, on_change="rerun", key=key)
    return fold if fold.open else None


NO_ANSWER = "(no answer recorded)"


def answer_text(answer: str | None) -> str:
    """A run's answer (``views.run_answer``: its text, then any tool call it answered
    with) for ``literal``: ``NO_ANSWER`` only when the run recorded none."""
    return NO_ANSWER if answer is None else answer


def link_to_message(thread_id: str, seq: int | None, *, label: Label | None = None,
                    to_seq: int | None = None) -> None:
    """A link to the Threads page focused on one message (or a seq range, or just the
    thread when seq is None); by default labelled ``thread #seq``."""
    params: dict[str, str] = {"thread": thread_id}
    if seq is not None:
        params["seq"] = str(seq)
        if to_seq is not None and to_seq != seq:
            params["to"] = str(to_seq)
    st.page_link(THREADS_PAGE, label=_label(label or ref(thread_id, seq)),
                 icon=":material/chat:", query_params=with_db(params))


def link_to_run(run_id: str, *, label: Label | None = None) -> None:
    st.page_link(RUN_PAGE, label=_label(label or ("run ", Id(run_id))),
                 icon=":material/manage_search:", query_params=with_db({"run": run_id}))


def with_db(params: Mapping[str, str]) -> dict[str, str]:
    """A link's query parameters plus ``db=<name>`` of the database in use, so the
    link opens the same database in a new tab too."""
    from app import services

    return {"db": services.current_name(), **params}


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


NO_THREAD = views.NO_THREAD
FIND_THREAD_KEY = "find-thread"


@dataclass(frozen=True)
class ThreadPicker:
    """How a thread picker speaks: its label, the find box's widget key and URL
    parameter, what its threads are (in the caption: "<total> <what>"), and whether it
    lists them newest first (else in ascending order)."""

    label: str = "Thread"
    find_key: str = FIND_THREAD_KEY
    find_param: str = "find"
    what: str = "threads with runs"
    newest_first: bool = False


def pick_thread(url: str, threads: Mapping[str, int], *, wanted: str | None,
                where: Any = None, format_func: Callable[[str], str] | None = None,
                help: str | None = None, picker: ThreadPicker = ThreadPicker(),
                titles: Mapping[str, str | None] | None = None,
                also: Sequence[str] = ()) -> str:
    """The thread picker of the run pages (run inspector, counterfactual, why-forgotten,
    timeline, compare): of ``threads`` (``views.threads_with_runs``: each with its rank,
    larger = newer), the newest ``views.THREADS_LISTED``, ``wanted`` (the thread the
    page opens on, preselected; else the first) and ``also``. With more threads than
    that, a "Find a thread" box (its text in the URL as ``picker.find_param``) narrows
    them by id or title (``titles``, else every thread's), and a caption says what is
    offered, as on the Threads page. All of it goes into ``where`` (a column) when
    given. ``picker`` names another such picker on the same page (why-forgotten's
    message thread) or another URL parameter (compare's). Returns the thread picked."""
    from app import services

    box = st if where is None else where
    finding = ""
    if len(threads) > views.THREADS_LISTED:
        finding = box.text_input(f"Find a {picker.label.lower()}",
                                 value=services.query_param(picker.find_param) or "",
                                 key=picker.find_key, placeholder="part of a thread id or title")
        set_query_params({picker.find_param: finding.strip() or None})
    if titles is None:
        titles = {}
        if finding.strip():  # titles are read only to find by them
            try:
                titles = {t.thread_id: t.title
                          for t in services.cached_thread_summaries(url, None)}
            except Exception:  # noqa: BLE001 - found by id only
                titles = {}
    choice = views.offered_threads(threads, titles, finding, keep=[wanted, *also],
                                   newest_first=picker.newest_first)
    if choice.total > views.THREADS_LISTED:
        box.caption(escape_md(offered_caption(choice, finding, picker.what)))
    offered = choice.offered
    if format_func is None:  # each thread by its id and its first run's question
        from app.run_labels import thread_labeller

        format_func = thread_labeller(url, offered)
    return str(kept_select(box, picker.label, offered, wanted, key=f"pick:{picker.label}",
                           format_func=format_func, help=help))


def offered_caption(choice: views.OfferedThreads, finding: str,
                    what: str = "threads with runs") -> str:
    """What a cut thread picker offers, in words (shown escaped); ``what`` its threads
    are ("threads with runs")."""
    text = finding.strip()
    if not text:
        return f"{choice.total:,} {what}; the newest {choice.listed:,} are offered below"
    if not choice.matched:
        return f"None of the {choice.total:,} {what} has '{text}' in its id or title"
    found = (f"{choice.matched:,} of the {choice.total:,} {what} "
             f"{'has' if choice.matched == 1 else 'have'} '{text}' in "
             f"{'its' if choice.matched == 1 else 'their'} id or title")
    return (f"{found}; the newest {choice.listed:,} are offered below"
            if choice.matched > choice.listed else f"{found}; offered below")


def pick_run(url: str, *, page: str = RUN_PAGE) -> tuple[str, list[views.RunSummary]]:
    """The run picker of the run pages (``page`` is the calling page): a thread
    (``pick_thread``: the newest threads, found by id or title, and the current run's),
    then one of its runs, preselected from the current run (``?run=``, else the run the
    user last looked at; else the newest); the choice becomes the current run and goes
    into the URL (unless it is the one a URL without ``run`` opens). Returns the run id
    and the runs of its thread. A ``?run=`` that does not exist stops the page with "not
    found" and a search (never another run). Stops the page with a message when the
    database cannot be read or holds no runs."""
    from app import services
    from app.run_labels import run_labeller

    try:
        runs = services.cached_runs(url)
    except Exception as e:  # noqa: BLE001 - shown in the page, never raised
        st.error(escape_md(services.friendly_error(e)))
        st.stop()
    asked = services.query_param("run")
    wanted = services.current_run()
    wanted_run = services.run_of(url, wanted)
    if asked is not None and wanted_run is None:
        services.forget_current_run()
        run_not_found(url, asked, runs, page=page)
    # (a run remembered from before a Refresh that removed it is not wanted)
    if not runs:
        st.info("No runs in this database yet.")
        st.stop()
    threads = views.threads_with_runs(runs)
    first = min(threads)  # a URL without ``run`` opens on it in a fresh session
    col_thread, col_run = st.columns(2, vertical_alignment="bottom")
    thread = pick_thread(url, threads, where=col_thread,
                         wanted=views.thread_key(wanted_run) if wanted_run else first)
    thread_runs = runs.on_thread(thread)
    run_ids = [r.run_id for r in thread_runs]
    wanted_id = wanted_run.run_id if wanted_run else None
    run_id = kept_select(col_run, "Run", run_ids,
                         wanted_id if wanted_id in run_ids else run_ids[-1], key="pick:run",
                         format_func=run_labeller(url, thread_runs))
    # what the page shows for a URL without ``run`` in a fresh session: that run stays
    # out of the URL (a sidebar link then pushes one history entry, not two), any other
    # goes in, so the URL always opens what is shown
    fresh_default = runs.on_thread(first)[-1].run_id
    follow_run(str(run_id), in_url=asked is not None or run_id != fresh_default)
    return str(run_id), thread_runs


@dataclass(frozen=True)
class RecalledObservation:
    """An observation the ``recall_observations`` tool returned during a run."""

    call_id: str
    id: str
    thread_id: str
    text: str
    from_seq: int | None
    to_seq: int | None
    score: float | None


def recalled_observations(tool_calls: Sequence[Any]) -> list[RecalledObservation]:
    """The observations a run's ``recall_observations`` tool calls returned, in call
    order, with their source ranges (SPEC §8.9–8.10); failed calls return none."""
    from memory_core.composition.observational import RECALL_TOOL_NAME

    out: list[RecalledObservation] = []
    for t in tool_calls:
        if t.name != RECALL_TOOL_NAME or t.status != "ok":
            continue
        try:
            matches = json.loads(t.result).get("matches", [])
        except (ValueError, AttributeError):
            continue
        for m in matches if isinstance(matches, list) else []:
            if not isinstance(m, dict):
                continue
            rng = m.get("range")
            lo, hi = (rng if isinstance(rng, list) and len(rng) == 2 else (None, None))
            out.append(RecalledObservation(t.call_id, str(m.get("id")), str(m.get("thread_id")),
                                           str(m.get("text", "")), lo, hi, m.get("score")))
    return out


# -- number, time and text formats: every page shows them the same way -----------------
MISSING = "—"  # a value that is not there (never "None" or "nan")


def fmt_score(x: object) -> str:
    """Every score the workbench shows (cosine, BM25, fused, threshold, similarity):
    3 decimals, ``MISSING`` when there is none; the same as the library's sentences."""
    from memory_core.analysis.wording import score_text

    return score_text(x)


def fmt_cell(value: object) -> str:
    """A table cell: ``MISSING`` for None or NaN, floats as scores, text as stored, other
    JSON values as compact JSON (a dataframe column of mixed types stays readable)."""
    import json
    import math

    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return MISSING
    if isinstance(value, float):
        return fmt_score(value)
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def fmt_time(value: object) -> str:
    """A run's or message's time, to the second (runs a minute apart stay apart); ISO
    strings as the library writes them are accepted too. An imported record that had no
    time (dated 1970 plus its index in its file, so imports are deterministic) says so;
    the index is not shown, as every file's count starts again."""
    from datetime import datetime

    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return str(value)
    if isinstance(value, datetime):
        if is_undated(value):
            return "not recorded"
        return value.strftime("%Y-%m-%d %H:%M:%S")
    return MISSING if value is None else str(value)


def preview_text(preview: str) -> str:
    """A recorded preview (the library keeps a message's first
    ``provenance.PREVIEW_CHARS`` characters) with an ellipsis when it was cut there."""
    from memory_core.text import PREVIEW_CHARS

    return preview + "…" if len(preview) >= PREVIEW_CHARS else preview


def truncate(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis when longer."""
    one = " ".join(str(text).split())
    return one if len(one) <= limit else one[:max(limit - 1, 0)].rstrip() + "…"


SEARCH_LIMIT = 20


def not_found(what: str, page: str, choices: list[tuple[str, str, dict[str, str]]]) -> NoReturn:
    """Stop the page on an id the URL named that does not exist: says so (``what``,
    e.g. "Run 'x'"), and offers a search over ``choices`` — (text searched, link label,
    query parameters of a link to ``page``) — instead of showing anything else. The
    URL is left as it is."""
    from app import services

    st.error(escape_md(f"{what} not found in database '{services.current_name()}'."),
             icon=":material/search_off:")
    text = st.text_input("Search", key=f"not-found-search:{what}",
                         placeholder="part of an id or a thread name")
    needle = text.strip().casefold()
    hits = [c for c in choices if needle in c[0].casefold()]
    st.caption(f"{len(hits)} match(es)" + (f", showing the first {SEARCH_LIMIT}"
                                           if len(hits) > SEARCH_LIMIT else ""))
    for _, label, params in hits[:SEARCH_LIMIT]:
        st.page_link(page, label=escape_md(label), query_params=with_db(params))
    st.stop()


def run_not_found(url: str, run_id: str, runs: Sequence[views.RunSummary], *,
                  page: str = RUN_PAGE) -> NoReturn:
    """"Run … not found" with a search over run ids and thread ids and titles."""
    from app import services

    try:
        titles = {t.thread_id: t.title or "" for t in services.cached_thread_summaries(url, None)}
    except Exception:  # noqa: BLE001 - the search then covers ids only
        titles = {}
    choices = []
    for r in reversed(runs):  # newest first
        thread = r.thread_id or NO_THREAD
        choices.append((f"{r.run_id} {thread} {titles.get(thread, '')}",
                        f"{r.run_id} · {thread} · {r.status}", {"run": r.run_id}))
    not_found(f"Run '{run_id}'", page, choices)


def asked_thread(url: str, threads: Mapping[str, int], page: str) -> str | None:
    """The thread ``?thread=`` names, when it has runs (in ``threads``): a thread that
    does not exist stops the page with "not found" and a search; one without runs (the
    Threads page shares its thread through the URL, and it may have none yet) is said
    to have none, and None returned."""
    from app import services

    wanted = services.query_param("thread")
    if wanted and wanted not in threads:
        every_thread = services.cached_thread_summaries(url, None)
        if wanted not in {t.thread_id for t in every_thread}:
            thread_not_found(wanted, [t for t in every_thread if t.thread_id in threads],
                             page=page)
        st.info(escape_md(f"thread '{wanted}' has no runs in this database; pick a thread "
                          "that has"))
        return None
    return wanted


def speaker(role: str, name: str | None) -> str:
    """A message's role and, where it names one, the agent or participant that wrote
    it: "assistant (planner)"; a name that only repeats the role ("User") is left out."""
    return f"{role} ({name})" if name and name.strip().lower() != role.lower() else role


def title_text(title: str) -> str:
    """A thread's title as stored, with "…" when it was cut there: a title is the first
    user text cut to ``TITLE_CHARS`` (SPEC §2.5), which read "should arrive on 14 M"."""
    from memory_core.composition.memory import TITLE_CHARS

    return title + "…" if len(title) >= TITLE_CHARS else title


def thread_label(thread_id: str, words: str | None) -> str:
    """How every thread picker names a thread: ``<id> · “<first words>”`` (its title,
    or its first run's question), ``<id> · (untitled)`` without."""
    return f"{thread_id} · “{title_text(words)}”" if words else f"{thread_id} · (untitled)"


def thread_not_found(thread_id: str, threads: Sequence[views.ThreadSummary], *,
                     page: str = THREADS_PAGE) -> NoReturn:
    """"Thread … not found" with a search over thread ids and titles."""
    not_found(f"Thread '{thread_id}'", page,
              [(f"{t.thread_id} {t.title or ''}", thread_label(t.thread_id, t.title),
                {"thread": t.thread_id}) for t in threads])


def run_action_bar(run: views.RunSummary, previous: str | None) -> None:
    """The run inspector's way to the analysis pages, each opening on ``run``:
    Counterfactual, Why forgotten, Compare with the previous run of its thread,
    Timeline of its thread (disabled, saying why, when there is none)."""
    cols = st.columns(4)
    with cols[0]:
        st.page_link(COUNTERFACTUAL_PAGE, label="Counterfactual", icon=":material/science:",
                     query_params=with_db({"run": run.run_id}),
                     help="Replay this run with parts of its prompt taken out or put back.")
    with cols[1]:
        st.page_link(WHY_PAGE, label="Why forgotten", icon=":material/help:",
                     query_params=with_db({"run": run.run_id}),
                     help="Was a message given to the model in this run? If not, why not?")
    with cols[2]:
        st.page_link(COMPARE_PAGE, label="Compare with previous run",
                     icon=":material/compare_arrows:",
                     query_params=with_db({"a": previous or "", "b": run.run_id}),
                     disabled=previous is None,
                     help=(escape_md(f"Compare with {previous}, the run before it on its "
                                     "thread.") if previous else
                           "This is the first run of its thread: there is no earlier run "
                           "to compare with." if run.thread_id else
                           "This run belongs to no thread, so it has no previous run."))
    with cols[3]:
        st.page_link(TIMELINE_PAGE, label="Timeline", icon=":material/stacked_line_chart:",
                     query_params=with_db({"thread": run.thread_id or "", "run": run.run_id}),
                     disabled=run.thread_id is None,
                     help=("Tokens per lane over every run of its thread, this one marked."
                           if run.thread_id else "This run belongs to no thread."))


def used_by_key(thread_id: str, seq: int) -> str:
    """The key of a message card's "Used by N runs" expander (its open state): ours,
    made of a digest of the thread id (stored text) and the seq."""
    return f"used-{hashlib.sha1(thread_id.encode()).hexdigest()[:12]}-{seq}"


def focus_cards(keys: list[str]) -> None:
    """Scroll to the first of the containers with these keys and highlight them all
    (a link that lands on a message). A small script in the page itself: no request
    leaves it. Keys are ours (``msg-<seq>``), never stored text."""
    classes = [f".st-key-{k}" for k in keys if re.fullmatch(r"[A-Za-z0-9_-]+", k)]
    if not classes:
        return
    selector = json.dumps(", ".join(classes))
    # the cards arrive one by one while the script draws the page (on a busy machine
    # over seconds): every card is marked as it arrives, the first scrolled to when it
    # does and again once the last one is there (the page grew above it meanwhile)
    st.html(f"""<script>
(() => {{
  const doc = window.parent === window ? document : window.parent.document;
  const want = {len(classes)};
  let tries = 0;
  let placed = false;
  const place = (card) => {{
    // centred; a message taller than the window from its first line instead
    const view = (doc.defaultView || window).innerHeight;
    card.scrollIntoView({{
      block: card.getBoundingClientRect().height > 0.8 * view ? "start" : "center"}});
  }};
  const land = () => {{
    const cards = doc.querySelectorAll({selector});
    cards.forEach((c) => {{
      if (c.dataset.focused === "true") return;
      c.dataset.focused = "true";
      c.style.outline = "3px solid #f59f00";
      c.style.outlineOffset = "2px";
      c.style.background = "rgba(245, 159, 0, 0.10)";
    }});
    if (cards.length > 0 && !placed) {{
      placed = true;
      place(cards[0]);
    }}
    if (cards.length < want && ++tries < 300) {{
      setTimeout(land, 100);
    }} else if (cards.length > 0) {{
      // the page may still grow above the card while it renders: settle once more
      setTimeout(() => place(cards[0]), 700);
    }}
  }};
  land();
}})();
</script>""", unsafe_allow_javascript=True)


def json_view(value: Mapping[str, object]) -> None:
    """Settings, evidence and other JSON shown as JSON: monospace, every value literal
    (a dataframe would draw them in the body font). Values that are no JSON type
    (times, sets) are shown as their text, missing ones (None, NaN) as ``MISSING``,
    fractions to 3 decimals like every score."""
    import math

    def shown(v: Any) -> Any:
        if v is None or (isinstance(v, float) and not math.isfinite(v)):
            return MISSING
        if isinstance(v, float):
            return round(v, 3)
        if isinstance(v, dict):
            return {str(k): shown(x) for k, x in v.items()}
        if isinstance(v, list | tuple):
            return [shown(x) for x in v]
        return v

    st.json(json.loads(json.dumps(shown(dict(value)), ensure_ascii=False, default=str)),
            expanded=True)


def tool_call_cards(calls: Sequence[Any]) -> None:
    """A run's tool calls, one card each: the call id, tool and status as a caption,
    its arguments and result (JSON) in a monospace block each."""
    for i, t in enumerate(calls):
        with st.container(border=True, key=f"tool-call-{i}"):
            st.caption(escape_md(f"call {t.call_id} · {t.name} · {t.status} · arguments"))
            monospace(t.args, key=f"tool-call-{i}-args")
            if t.status == "ok" or t.result:
                st.caption("result")
                monospace(t.result, key=f"tool-call-{i}-result")
            if t.error:
                st.error(escape_md(t.error))


# -- the sidebar's navigation: links that carry what the page would write ----------------
# Streamlit's own sidebar menu opens a page with an empty URL query; the page then wrote
# ``db`` (a history entry pushed while the browser still showed the old path) and the
# current run (another): three entries for one click. These links carry exactly the
# parameters the page keeps in its URL, so it writes none: one entry per navigation.
NAV_SLOT_KEY = "sidebar-nav-slot"
RUN_PARAM_PAGES = ("run", "counterfactual", "why", "timeline")  # open on ``?run=``


def nav_params(url_path: str) -> dict[str, str]:
    """The query parameters of the sidebar's link to the page at ``url_path``: the
    database in use, and the current run for the pages that open on a run (Compare as
    its run B; What if as its thread)."""
    from app import services

    params = {"db": services.current_name()}
    run = services.remembered_run()
    if run is not None and url_path in RUN_PARAM_PAGES:
        params["run"] = run
    elif run is not None and url_path == "compare":
        params["b"] = run
    elif run is not None and url_path == "whatif":  # opens on the current run's thread
        try:
            summary = services.run_of(services.current_url(), run)
        except Exception:  # noqa: BLE001 - an unreadable database: the link names none
            summary = None
        if summary is not None and summary.thread_id:
            params["thread"] = summary.thread_id
    return params


def sidebar_nav(slot: Any | None = None, pages: Sequence[Any] | None = None) -> None:
    """Draw (or redraw, after the current run changed) the sidebar's page links into
    ``slot``. Called with both by the entry script, which keeps them for the run; with
    none by ``follow_run``."""
    if slot is not None and pages is not None:
        st.session_state[NAV_SLOT_KEY] = (slot, list(pages))
    kept = st.session_state.get(NAV_SLOT_KEY)
    if kept is None:
        return
    slot, pages = kept
    with slot.container():
        for p in pages:
            st.page_link(p, query_params=nav_params(p.url_path))
        st.divider()


def follow_run(run_id: str, *, in_url: bool = True) -> None:
    """Make ``run_id`` the current run (services.set_current_run) and redraw the
    sidebar's links, so they carry it even when the page stops early."""
    from app import services

    before = services.remembered_run()
    services.set_current_run(run_id, in_url=in_url)
    if before != run_id:
        sidebar_nav()
