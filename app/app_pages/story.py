"""Demo story page: "the assistant forgot the refund" told step by step for someone
who never saw a prompt — the conversation, the run that went wrong, what the model was
given, the counterfactual that proves it, and the fix. Builds the demo database first
when it is missing."""

from __future__ import annotations

import streamlit as st

from app import services
from app.components import (
    COMPARE_PAGE,
    STORY_PAGE,
    escape_md,
    fate_badge,
    link_to_message,
    link_to_run,
    literal,
    score_chart,
    token_bar,
)
from sample_data.scenarios.support import SUPPORT

FORGOT, FIXED = services.STORY_RUNS
FIRST_THREAD = "support-1"
REFUND_PHRASE = "refund of €240"
ROLE_AVATARS = {"user": ":material/person:", "assistant": ":material/support_agent:",
                "tool": ":material/build:", "system": ":material/settings:"}

st.title("The assistant forgot the refund")
st.markdown(escape_md(SUPPORT.summary) + " Here is what happened, step by step.")


def _story_database() -> str | None:
    """The served database that holds the story: the open one when it does, else the
    first other served one (never a database the workbench was not started with)."""
    current = services.current_name()
    databases = services.served().databases
    if services.has_story(databases[current]):
        return current
    return next((name for name, u in databases.items()
                 if name != current and services.has_story(u)), None)


story_db = _story_database()
if story_db is None:
    target = services.demo_target()
    if target is None:
        st.info("The story needs the demo database, and none of the databases this "
                "workbench serves holds it. Build it with `memwb demo` and start the "
                "workbench on it (`memwb ui --db sample_data/out/demo.duckdb`).",
                icon=":material/info:")
        st.stop()
    st.info("The story needs the demo database, which is not built yet. Building it plays "
            "four scripted conversations through the real memory code (about two minutes).",
            icon=":material/info:")
    if st.button("Build the demo database", type="primary", icon=":material/build:"):
        with st.status("Building the demo database…", expanded=True) as status:
            try:
                path = services.build_demo_database(progress=lambda msg: status.write(
                    escape_md(str(msg))))
            except Exception as e:  # noqa: BLE001 - shown, never raised
                status.update(label="The build failed", state="error")
                st.error(escape_md(f"Building the demo database failed: "
                                   f"{services.friendly_error(e)}"))
                st.stop()
            status.update(label=escape_md(f"Demo database ready: {path}"), state="complete")
        st.rerun()
    st.stop()

url = services.served().databases[story_db]
if story_db != services.current_name():
    st.caption(escape_md(f"Reading the served database '{story_db}', which holds the demo."))
    st.page_link(STORY_PAGE, label=escape_md(f"switch to database '{story_db}'"),
                 icon=":material/database:", query_params={"db": story_db})

try:
    forgot = services.cached_run_view(url, FORGOT)
    fixed = services.cached_run_view(url, FIXED)
    why = services.cached_why(url, FORGOT, None, None, REFUND_PHRASE)
    diff = services.cached_diff(url, FORGOT, FIXED)
    conversation = services.cached_thread_messages(url, FIRST_THREAD, 1, 200)
except Exception as e:  # noqa: BLE001
    st.error(escape_md(f"The demo database cannot tell the story: {services.friendly_error(e)}"))
    st.stop()

# -- 1 -------------------------------------------------------------------------------
st.header("1. The refund was agreed", divider="gray")
st.markdown("In an earlier conversation Anna reported a cracked blender jug and the "
            "assistant approved a refund of €240. This is the message that matters:")
key_msg = next((m for m in conversation.messages
                if why.thread_id == FIRST_THREAD and m.seq == why.seq), None)
if key_msg is not None:
    with st.chat_message(key_msg.role, avatar=ROLE_AVATARS.get(key_msg.role)):
        literal(key_msg.text)
    link_to_message(FIRST_THREAD, key_msg.seq, label=f"see it in the conversation "
                                                     f"({FIRST_THREAD} #{key_msg.seq})")
with st.expander(f"The whole conversation ({conversation.total} messages)"):
    for m in conversation.messages:
        with st.chat_message(m.role, avatar=ROLE_AVATARS.get(m.role)):
            literal(m.text)

# -- 2 -------------------------------------------------------------------------------
st.header("2. Weeks later, the assistant did not know", divider="gray")
st.markdown("In a new conversation Anna asks about that refund. The assistant answers:")
with st.chat_message("user", avatar=ROLE_AVATARS["user"]):
    literal(forgot.query or "(question not recorded)")
with st.chat_message("assistant", avatar=ROLE_AVATARS["assistant"]):
    literal(forgot.answer or "(no answer recorded)")
link_to_run(FORGOT, label=f"open this run ({FORGOT}) in the run inspector")

# -- 3 -------------------------------------------------------------------------------
st.header("3. What the assistant was given", divider="gray")
st.markdown("A language model only knows what is put in front of it. This bar shows how "
            "that run's prompt was made up: the instructions, the last few messages of "
            "the new conversation, the question — and what memory recalled from older ones.")
st.plotly_chart(token_bar(forgot.lanes), key="story-tokens")
recalled = forgot.lane("recalled")
dropped = forgot.lane("dropped")
col_r, col_d = st.columns(2)
with col_r:
    st.markdown(f"**Recalled from older conversations: {len(recalled.items)}**")
    if not recalled.items:
        st.text("(nothing)")
    for it in recalled.items:
        with st.container(border=True):
            literal(it.text)
with col_d:
    st.markdown(f"**Found but left out: {dropped.total_count}**")
    if not dropped.items:
        st.text("(nothing)")
    for it in dropped.items:
        with st.container(border=True):
            literal(it.text)
            st.caption(escape_md(f"left out because: {it.reason or 'unknown'}"))
    if dropped.items:
        st.caption("A refund call from the old ticket system was found, but its result was "
                   "never stored; a call without its result would make the model reject the "
                   "whole prompt, so it had to be left out.")
st.markdown("Memory scores every older message by how close it is to the question. Only "
            "messages above the red line are recalled:")
if forgot.candidates:
    st.plotly_chart(score_chart(forgot.candidates, forgot.threshold, forgot.top_k),
                    key="story-scores")
st.markdown("And the refund message itself?")
fate_badge(why.fate, why.reached_model)
st.info(escape_md(why.sentence))

# -- 4 -------------------------------------------------------------------------------
st.header("4. The proof", divider="gray")
st.markdown(f"With a lower bar (run {escape_md(FIXED)}) memory does recall the refund. To "
            "prove the answer depends on it, we replay that run with everything memory "
            "recalled taken away, keeping the rest exactly as it was.")
try:
    past = [c for c in services.cached_counterfactuals(url, FIXED)
            if c.variant.subtract_recalled == "all" and not c.variant.subtract_lanes
            and not c.variant.put_back]
except Exception as e:  # noqa: BLE001
    st.error(escape_md(services.friendly_error(e)))
    past = []
proof = past[0] if past else None
if proof is None and st.button("Replay without the recalled messages", type="primary",
                               icon=":material/science:", disabled=services.read_only(),
                               help=services.READ_ONLY_REASON if services.read_only()
                               else None):
    with st.spinner("Replaying…"):
        try:
            proof = services.run_counterfactual(url, FIXED, subtract="all")
        except Exception as e:  # noqa: BLE001
            st.error(escape_md(f"The replay could not run: {services.friendly_error(e)}"))
if proof is not None:
    colour = {"changed": "orange", "unchanged": "green"}.get(proof.verdict, "gray")
    st.markdown(f"### The answer :{colour}-badge[{proof.verdict}]")
    with_col, without_col = st.columns(2)
    with with_col:
        st.markdown("**With the recalled messages**")
        literal(proof.original_answer or "(no answer recorded)")
    with without_col:
        st.markdown("**Without them**")
        literal(proof.new_answer or "(empty answer)")

# -- 5 -------------------------------------------------------------------------------
st.header("5. The fix", divider="gray")
changed_settings = ", ".join(f"{k}: {a} → {b}" for k, (a, b) in diff.settings_changed.items())
st.markdown("The same question, asked with a different memory setting "
            f"({escape_md(changed_settings or 'no setting changed')}):")
with st.chat_message("user", avatar=ROLE_AVATARS["user"]):
    literal(fixed.query or "(question not recorded)")
with st.chat_message("assistant", avatar=ROLE_AVATARS["assistant"]):
    literal(fixed.answer or "(no answer recorded)")
entered = [x for x in diff.entries if x.change == "entered" and x.lane_b == "recalled"]
if entered:
    st.markdown("What the lower bar let in:")
    for entry in entered:
        with st.container(border=True):
            literal(entry.preview)
            st.caption(escape_md(entry.reason))
st.page_link(COMPARE_PAGE, label="compare the two runs in detail",
             icon=":material/compare_arrows:",
             query_params={"db": story_db, "a": FORGOT, "b": FIXED})
