"""Threads page: resources → threads → messages in seq order (paged), with search
across a resource, the thread's runs (links to the inspector; the newest becomes the
current run unless it already is one of them) and links from each message to the run
that wrote it and the runs that used it.

URL: ``?thread=<id>&seq=<n>[&to=<n>]`` selects the same view, scrolled to the message
(or range), highlighted; the thread names its resource, so ``?resource=<id>`` is only
read (a link naming a thread opens it whatever resource the link says). Threads with no
resource are listed under "(no resource)". A thread that does not exist is "not found",
with a search. A resource (or "(no resource)", where imports go) with more threads than
``views.THREADS_LISTED`` lists its newest ones, in the table and the picker, and finds the
others by id or title (``?find=<text>``); a link to any thread still opens it.
"""

from __future__ import annotations

import json
from urllib.parse import urlencode

import streamlit as st

from app import services
from app.components import (
    Id,
    counted,
    escape_md,
    fmt_time,
    focus_cards,
    follow_run,
    link_to_message,
    link_to_run,
    literal,
    md,
    opened_fold,
    ref,
    set_query_params,
    speaker,
    thread_label,
    thread_not_found,
    title_text,
    used_by_key,
    with_db,
)
from app.kept_select import kept_select
from app.light_table import Link, light_table
from app.run_labels import questions_of, run_words
from memory_core.analysis import views
from memory_core.analysis.views import DEFAULT_PAGE_SIZE, page_of_seq

RUNS_LISTED = 20  # a thread's runs linked on the page, newest first


def thread_link(thread_id: str, seq: int | None = None) -> Link:
    """A table's "open" cell: a link to the thread on this page (a message of it, with
    ``seq``; the database named). The thread column beside it keeps the id as stored."""
    params = {"thread": thread_id} if seq is None else {"seq": str(seq), "thread": thread_id}
    return Link("open", "threads?" + urlencode(with_db(params)), code=False)


st.title("Threads")
url = services.current_url()

try:
    every_thread = services.cached_thread_summaries(url, None)
except Exception as e:  # noqa: BLE001
    st.error(escape_md(services.friendly_error(e)))
    st.stop()

if not every_thread:
    st.info("This database has no threads yet. Run an agent against it, or build the demo "
            "database with `make demo`.")
    st.stop()

# every resource, then the threads that belong to none (imports, single-user agents)
groups = views.resource_groups(every_thread)
wanted_thread = services.query_param("thread")
wanted_resource = services.query_param("resource")
linked = next((t for t in every_thread if t.thread_id == wanted_thread), None)
if wanted_thread and linked is None:
    # a URL naming a thread that is nowhere here: never another thread in its place
    thread_not_found(wanted_thread, every_thread)
if linked is not None:
    # a link to a thread finds it whatever resource it names (or none)
    wanted_group: str | None = linked.resource_id
elif wanted_resource and wanted_resource not in groups:
    st.error(escape_md(f"resource '{wanted_resource}' does not exist in this database"))
    wanted_group = groups[0]
else:
    wanted_group = wanted_resource if wanted_resource else groups[0]

resource = kept_select(st, "Resource", groups, wanted_group, key="pick:threads-resource",
                       format_func=views.group_label)
summaries = views.threads_in_group(every_thread, resource)

st.subheader(f"Threads of {escape_md(views.group_label(resource))}")
if wanted_thread and all(t.thread_id != wanted_thread for t in summaries):
    wanted_thread = None  # the user picked another resource
finding = ""
if len(summaries) > views.THREADS_LISTED:
    finding = st.text_input("Find a thread", value=services.query_param("find") or "",
                            key="find-thread", placeholder="part of a thread id or title")
    set_query_params({"find": finding.strip() or None})
listing = views.list_threads_of(summaries, finding)
if listing.total > views.THREADS_LISTED:
    found = (f"{listing.matched:,} of the {listing.total:,} threads "
             f"{'has' if listing.matched == 1 else 'have'} '{escape_md(finding.strip())}' "
             f"in {'its' if listing.matched == 1 else 'their'} id or title"
             if finding.strip() else f"{listing.total:,} threads")
    st.caption(f"{found}; the newest {views.THREADS_LISTED} are listed here and offered "
               "below" if listing.matched > views.THREADS_LISTED
               else f"{found}; listed here and offered below")
# a branch's title is its trunk's (their first question): the column tells them apart
branched = any(t.parent_thread_id for t in listing.listed)
light_table([{
    "open": thread_link(t.thread_id), "thread": Id(t.thread_id), "title": title_text(t.title or ""),
    **({"branched from": Id(t.parent_thread_id) if t.parent_thread_id else ""}
       if branched else {}),
    "messages": t.message_count,
    "runs": t.run_count, "last activity": fmt_time(t.last_activity)}
    for t in listing.listed], key="threads")

# (a link with ?q= opens it)
searching = opened_fold("Search messages in this resource",
                        expanded=bool(services.query_param("q")), key="search-open")
if searching is not None:
    with searching:
        query = st.text_input("Text to find", value=services.query_param("q") or "",
                              key="search")
        set_query_params({"q": query.strip() or None})
        if query.strip():
            hits = services.cached_search(url, resource, query)
            if resource is None:  # all resources: keep the resource-less threads
                mine = {t.thread_id for t in summaries}
                hits = [h for h in hits if h.thread_id in mine]
            said = query.strip().lower()
            exact = not hits or any(said in h.text.lower() for h in hits)
            st.caption(f"{counted(len(hits), 'message')} found" + (
                "" if exact else " holding each of its words (none holds it as written)"))
            if hits:
                light_table([{"open": thread_link(h.thread_id, h.seq),
                              "thread": Id(h.thread_id), "seq": h.seq, "role": h.role,
                              "text": h.text} for h in hits], key="hits")
                for h in hits[:20]:
                    link_to_message(h.thread_id, h.seq, label=(
                        "open ", *ref(h.thread_id, h.seq), f" ({h.role})"))

# the picker offers the threads listed, and the thread a link opened wherever it is
offered = [*listing.listed, *(t for t in summaries if t.thread_id == wanted_thread
                              and t not in listing.listed)]
thread_ids = [t.thread_id for t in offered]
if not thread_ids:
    st.info("No thread of this resource has that text in its id or title (the search "
            "below finds messages)." if finding.strip()
            else "This resource has no threads.")
    st.stop()
titles = {t.thread_id: t.title for t in offered}
thread = kept_select(st, "Thread", thread_ids,
                     wanted_thread if wanted_thread in thread_ids else thread_ids[0],
                     key="pick:threads-thread",
                     format_func=lambda tid: thread_label(tid, titles[tid]))

first = services.cached_thread_messages(url, thread, 1, DEFAULT_PAGE_SIZE)
if (parent := first.parent_thread_id) is not None:
    # a clone, or an imported conversation that parts from another (its first run's
    # note says where)
    if any(t.thread_id == parent for t in every_thread):
        link_to_message(parent, None, label=("branched from thread ", Id(parent)))
    else:
        st.caption(md("Branched from thread ", Id(parent), ", which is no longer stored."))
# the thread's runs, newest first, each a link to the inspector; the sidebar's run pages
# open on this thread's run (its newest, unless the current run is already one of them)
try:
    runs_here = services.cached_runs(url).on_thread(thread)
except Exception as e:  # noqa: BLE001 - the messages are still shown
    runs_here = []
    st.caption(escape_md(f"This thread's runs cannot be read: {services.friendly_error(e)}"))
if runs_here:
    if services.remembered_run() not in {r.run_id for r in runs_here}:
        follow_run(runs_here[-1].run_id, in_url=False)
    with st.expander(f"Runs of this thread ({len(runs_here):,})", expanded=True,
                     icon=":material/manage_search:"):
        newest = runs_here[::-1][:RUNS_LISTED]
        if len(runs_here) > RUNS_LISTED:
            st.caption(f"The newest {RUNS_LISTED} of {len(runs_here):,}; the Run inspector's "
                       "picker offers them all.")
        # in three columns, newest first down each, so the messages stay near the top;
        # each run told by its time and question (an imported run's id is a hash)
        questions = questions_of(url, [r.run_id for r in newest])
        per_column = -(-len(newest) // 3)
        for col, start in zip(st.columns(3), range(0, len(newest), per_column), strict=False):
            with col:
                for r in newest[start:start + per_column]:
                    # a status only when it is not the usual "completed": a link is one
                    # line, cut when longer; its time and question go under it
                    link_to_run(r.run_id, label=("run ", Id(r.run_id),
                                                 "" if r.status == "completed"
                                                 else f" · {r.status}"))
                    st.caption(escape_md(run_words(r, questions.get(r.run_id))))
else:
    st.caption("No run has used this thread yet.")

wanted_seq = services.query_param("seq")
focus_seq = int(wanted_seq) if wanted_seq and wanted_seq.isdigit() else None
focus_to = services.query_param("to")
focus_end = int(focus_to) if focus_to and focus_to.isdigit() else focus_seq
if thread != wanted_thread:
    focus_seq = focus_end = None  # the user picked another thread: drop the old focus

start_page = min(page_of_seq(focus_seq), first.page_count) if focus_seq is not None else 1
page = int(st.number_input(f"Page (of {first.page_count})", min_value=1,
                           max_value=first.page_count, value=start_page, step=1,
                           key=f"page:{thread}:{focus_seq}"))
# the thread names its resource: ``resource`` stays out of the URL, so a link to a
# message is one browser history entry (the page adds nothing to the link's URL)
# and the thread a URL without one opens (the first resource's first thread) stays out
# too, so the sidebar's link is one entry as well
fresh_view = (not services.query_param("thread") and resource == groups[0]
              and thread == thread_ids[0])
set_query_params({"resource": None, "thread": None if fresh_view else thread,
                  "seq": str(focus_seq) if focus_seq is not None else None,
                  "to": str(focus_end) if focus_end not in (None, focus_seq) else None})

# a linked range longer than what is left of its first page (a summary's source, say)
# is shown whole on it
through = focus_end if focus_end is not None and page == start_page else None
msgs = first if page == 1 and (through is None or through < DEFAULT_PAGE_SIZE) else \
    services.cached_thread_messages(url, thread, page, DEFAULT_PAGE_SIZE, through)
shown = msgs.messages
last_page = page_of_seq(shown[-1].seq) if shown else msgs.page
pages_said = (f"page {msgs.page}" if last_page == msgs.page
              else f"pages {msgs.page}–{last_page} (the linked range)")
st.caption(f"{msgs.total} messages · {pages_said} of {msgs.page_count} · "
           f"{DEFAULT_PAGE_SIZE} per page")
if focus_seq is not None and focus_end is not None:
    # the link lands on its message: scrolled to and highlighted
    focus_cards([f"msg-{m.seq}" for m in shown if focus_seq <= m.seq <= focus_end])
for m in shown:
    focused = (focus_seq is not None and focus_end is not None
               and focus_seq <= m.seq <= focus_end)
    with st.container(border=True, key=f"msg-{m.seq}"):
        # the agent or participant that wrote it, where the message names one
        who = speaker(m.role, views.speaker_name(m.metadata))
        head: list[str | Id] = [f"#{m.seq} · {who} · {fmt_time(m.created_at)}"]
        if focused:
            head.insert(0, "▶ ")
        st.caption(md(*head))
        if m.written_by_run:  # the run that stored it: a link to the inspector
            link_to_run(m.written_by_run, label=("written by run ", Id(m.written_by_run)))
        literal(m.text)
        if m.metadata:
            st.text("metadata: " + json.dumps(m.metadata, ensure_ascii=False, sort_keys=True))
        if m.used_by_runs:
            # a message can be in dozens of prompts: the links are built only once
            # the expander is opened (a page of cards carried ~24 links each)
            count = len(m.used_by_runs)
            used = st.expander(f"Used by {count} run{'s' if count != 1 else ''}",
                               icon=":material/manage_search:", on_change="rerun",
                               key=used_by_key(thread, m.seq))
            if used.open:
                with used:
                    for rid in m.used_by_runs:
                        link_to_run(rid, label=("used by run ", Id(rid)))
