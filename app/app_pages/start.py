"""Start page: what the workbench shows, the demo stories as cards, how to open your own
database (and which ones are served), and the threads of the database in use grouped
by resource — threads without one under "(no resource)"."""

from __future__ import annotations

import streamlit as st

from app import services
from app.components import STORY_PAGE, counted, escape_md, link_to_message, monospace
from app.stories import STORIES
from memory_core.analysis import views

THREADS_SHOWN = 12  # per group; the Threads page lists them all

st.title("Memory Workbench")
st.markdown(
    "An AI assistant answers from what is put in front of it: its instructions, the "
    "latest messages, and whatever its memory adds from earlier conversations. That "
    "prompt is a **composition**, and this workbench shows it for every answer: which "
    "parts it was made of, which part carried the answer, and what was left out and why. "
    "You can **take parts away, or put a missing message back, and ask again**, to prove "
    "what an answer depended on.")

st.subheader("Stories")
st.caption(f"{len(STORIES)} short walkthroughs on the demo database, in plain words.")
if not services.holds_runs(services.current_url(), [STORIES[0].run]):
    # (said here, not first on the story's page after a click)
    st.caption("The database in use is not the demo one: a story opens on the demo "
               "database when this workbench serves it, and otherwise says how to build it.")
columns = st.columns(2)
for n, story in enumerate(STORIES):
    with columns[n % 2], st.container(border=True):
        st.markdown(f"**{escape_md(story.title)}**")
        st.markdown(escape_md(story.question))
        if st.button("Open the story", key=f"open-story:{story.key}",
                     icon=":material/auto_stories:"):
            st.switch_page(STORY_PAGE, query_params={"db": services.current_name(),
                                                     "story": story.key})

st.subheader("Open your own database")
served = services.served()
st.markdown("This workbench serves these databases" + (
    " (choose one in the sidebar):" if len(served.databases) > 1 else ":"))
for name, url in served.databases.items():
    mark = " (in use)" if name == services.current_name() else ""
    st.markdown(f"- **{escape_md(name)}**{mark}: {escape_md(url)}")
st.markdown("To look at your own agent's memory, start the workbench on its database, "
            "or bring in conversations recorded elsewhere (OpenAI logs, OpenTelemetry "
            "traces) first:")
monospace("memwb ui --db your.duckdb                        # serve it (repeat --db for more)\n"
          "memwb import traces.jsonl --db your.duckdb       # import recorded conversations",
          key="commands")
if served.read_only:
    st.caption(":material/lock: Started read-only: nothing is written to these databases.")

st.subheader("Threads")
try:
    every_thread = services.cached_thread_summaries(services.current_url(), None)
except Exception as e:  # noqa: BLE001 - shown, never raised
    st.error(escape_md(services.friendly_error(e)))
    st.stop()
if not every_thread:
    st.info("This database has no threads yet. Run an agent against it, import recorded "
            "conversations (`memwb import`), or build the demo database with `make demo`.")
    st.stop()
groups = views.resource_groups(every_thread)
for group in groups:
    threads = views.threads_in_group(every_thread, group)
    with st.expander(escape_md(f"{views.group_label(group)} · {counted(len(threads), 'thread')}"),
                     expanded=len(groups) <= 6):
        for t in threads[:THREADS_SHOWN]:
            link_to_message(t.thread_id, None, label=(
                f"{t.title or t.thread_id} · {counted(t.message_count, 'message')} · "
                f"{counted(t.run_count, 'run')}"))
        if len(threads) > THREADS_SHOWN:
            st.caption(f"… and {len(threads) - THREADS_SHOWN} more on the Threads page.")
