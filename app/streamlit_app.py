"""Entry point of the Memory Workbench: page setup, the database control in the
sidebar, and navigation over the pages in app/app_pages/.

Run with ``memwb ui --db A --db B`` (or ``streamlit run app/streamlit_app.py -- --db A
--db B [--read-only]``): the sidebar chooses among exactly those databases, by name, and
``?db=<name>`` names the one in use.
"""

from __future__ import annotations

import sys
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parents[1])
if _ROOT not in sys.path:  # streamlit puts app/ on the path, the package root is above it
    sys.path.insert(0, _ROOT)

import streamlit as st  # noqa: E402

from app import services  # noqa: E402
from app.components import (  # noqa: E402
    COMPARE_PAGE,
    COUNTERFACTUAL_PAGE,
    RUN_PAGE,
    START_PAGE,
    STORY_PAGE,
    THREADS_PAGE,
    TIMELINE_PAGE,
    WHATIF_PAGE,
    WHY_PAGE,
    escape_md,
    sidebar_nav,
)
from memory_core.errors import MemoryCoreError  # noqa: E402

# an emoji favicon is drawn in the page; a :material/…: one is fetched from fonts.gstatic.com
st.set_page_config(page_title="Memory Workbench", page_icon="🧠",
                   layout="wide")

served = services.served()
names = list(served.databases)
wanted_db = services.query_param("db")
if wanted_db in served.databases:
    st.session_state["db"] = wanted_db  # a shared link names its database
elif st.session_state.get("db") not in served.databases:
    st.session_state["db"] = names[0]


def _database_changed() -> None:
    # another database: the old page's ids mean nothing there
    st.query_params.clear()
    st.query_params["db"] = st.session_state["db"]


# the page links, first in the sidebar (drawn once the pages are known, below)
nav_slot = st.sidebar.empty()
with st.sidebar:
    if len(names) > 1:  # a picker of one costs a cold tab ~0.3 CPU-s (decision 011)
        st.selectbox("Database", names, key="db", on_change=_database_changed,
                     help="The databases this workbench was started with (memwb ui --db …).")
    if served.read_only:
        st.caption(":material/lock: Read-only: replays, asking again and pins are off.")
    # named even when it is the only one: the page always says whose data it shows
    st.caption(f":material/database: In use: **{escape_md(st.session_state['db'])}**")
    # a callback runs before the script, so the served list above is re-read too
    st.button("Refresh", icon=":material/refresh:", on_click=services.refresh_and_report,
              help="Reopen the database and re-read it, so new runs (and new databases "
                   "in a served directory) appear.")
note = st.session_state.pop(services.REFRESH_NOTE_KEY, None)
if note:  # what Refresh reloaded, said once
    st.toast(escape_md(note), icon=":material/refresh:")

# the start page is the default (served at /); Threads keeps its own /threads
start_page = st.Page(START_PAGE, title="Start", icon=":material/home:", default=True)
story_page = st.Page(STORY_PAGE, title="Demo stories", icon=":material/auto_stories:",
                     url_path="story")
threads_page = st.Page(THREADS_PAGE, title="Threads", icon=":material/forum:",
                       url_path="threads")
run_page = st.Page(RUN_PAGE, title="Run inspector", icon=":material/manage_search:",
                   url_path="run")
analysis_pages = [
    st.Page(COMPARE_PAGE, title="Compare runs", icon=":material/compare_arrows:",
            url_path="compare"),
    st.Page(COUNTERFACTUAL_PAGE, title="Counterfactual replay", icon=":material/science:",
            url_path="counterfactual"),
    st.Page(WHY_PAGE, title="Why forgotten", icon=":material/help:", url_path="why"),
    st.Page(TIMELINE_PAGE, title="Composition timeline", icon=":material/stacked_line_chart:",
            url_path="timeline"),
    st.Page(WHATIF_PAGE, title="What if", icon=":material/tune:", url_path="whatif"),
]
every_page = [start_page, story_page, threads_page, run_page, *analysis_pages]
# our own links replace Streamlit's menu: they carry the page's parameters (one history
# entry per navigation, app/components.py sidebar_nav)
nav = st.navigation(every_page, position="hidden")
sidebar_nav(nav_slot, every_page)

if wanted_db is not None and wanted_db not in served.databases:
    # never another database in its place: the page would show the wrong data
    st.error(f"Database {escape_md(repr(wanted_db))} is not served here; choose one of "
             f"{escape_md(', '.join(names))} below.", icon=":material/error:")
    for name in names:
        st.page_link(start_page, label=escape_md(f"open database {name}"),
                     icon=":material/database:", query_params={"db": name})
    st.stop()
# the database in use is part of every URL (sidebar links carry none); written only
# when it differs, since every write is a browser history entry when the URL changes
# and a message to the browser even when it does not
if st.query_params.get("db") != services.current_name():
    st.query_params["db"] = services.current_name()

# a shared link of the form /?run=<id> lands on the default page: send it on (the
# analysis pages read their own ?run=)
if (nav.url_path in ("", "threads") and services.query_param("run")
        and not services.query_param("thread")):
    st.switch_page(run_page, query_params={"run": services.query_param("run") or "",
                                           "db": services.current_name()})
# links made when Threads was the default page (/?thread=…, /?q=…) still open it
THREAD_PARAMS = ("thread", "seq", "to", "resource", "q")
if nav.url_path == "" and any(services.query_param(k) for k in THREAD_PARAMS):
    st.switch_page(threads_page, query_params={
        **{k: v for k in THREAD_PARAMS if (v := services.query_param(k))},
        "db": services.current_name()})

try:
    services.get_services(services.current_url())
except Exception as e:  # noqa: BLE001 - every failure to open is shown, never raised
    st.error(f"Cannot open the database: {escape_md(services.friendly_error(e))}",
             icon=":material/error:")
    if nav.url_path != "story":  # the story page offers to build the demo database
        st.stop()

try:
    with services.page_reads():  # one connection for the page's reads
        nav.run()
except MemoryCoreError as e:
    # a storage failure mid-page (busy file, malformed journal entry) is shown, not raised
    st.error(escape_md(services.friendly_error(e)), icon=":material/error:")
