"""Demo stories, told for someone who never saw a prompt: what was said, what the
assistant answered, what it was given, why, the proof (the very answer replayed with
one change) and the fix. Plain words by default; "Engineer details" adds the ids,
settings and scores. The stories are the table in app/stories.py; ``?story=<key>``
picks one. Builds the demo database first when it is missing."""

from __future__ import annotations

import streamlit as st

from app import services
from app import story_parts as parts
from app.charts import score_chart
from app.components import (
    STORY_PAGE,
    Id,
    escape_md,
    follow_run,
    link_to_message,
    link_to_run,
    set_query_params,
)
from app.stories import GLOSSARY, STORIES, Story, story_by_key

story = story_by_key(services.query_param("story"))
st.title(story.title)


def _picked() -> None:
    # runs before the page: the URL then names the story picked
    if (key := st.session_state.get("story-pick")) is not None:
        st.query_params["story"] = key


st.session_state["story-pick"] = story.key  # the URL decides which story is shown
st.segmented_control("Stories", [s.key for s in STORIES], key="story-pick",
                     on_change=_picked, format_func=lambda k: story_by_key(k).title,
                     label_visibility="collapsed")
if services.query_param("story") not in (None, story.key):
    set_query_params({"story": story.key})  # an unknown story: the URL names the one shown
parts.glossary_start()
parts.say(story.intro)
if "story-engineer" not in st.session_state:  # a link can open the engineer's view
    st.session_state["story-engineer"] = services.query_param("engineer") == "on"
engineer = st.toggle("Engineer details", key="story-engineer",
                     help="Show the ids, settings and numbers behind each step.")
set_query_params({"engineer": "on" if engineer else None})
with st.expander("Glossary: the words engineers use for these things"):
    # a small Markdown table, not a canvas grid: fourteen rows of words (issue 36 point 7)
    st.markdown(parts.GLOSSARY_HEAD + "\n".join(
        "| " + " | ".join(escape_md(cell) for cell in row) + " |" for row in GLOSSARY))


def _runs(s: Story) -> list[str]:
    return [s.run, s.proof.run, *([s.fix.run] if s.fix else [])]


def _story_database() -> str | None:
    """The served database that holds the story: the open one when it does, else the
    first other served one (never a database the workbench was not started with)."""
    current = services.current_name()
    databases = services.served().databases
    if services.holds_runs(databases[current], _runs(story)):
        return current
    return next((name for name, u in databases.items()
                 if name != current and services.holds_runs(u, _runs(story))), None)


def _offer_demo_build() -> None:
    target = services.demo_target()
    if target is None:
        st.info("The story needs the demo database, and none of the databases this "
                "workbench serves holds it. Build it with `memwb demo` and start the "
                "workbench on it (`memwb ui --db sample_data/out/demo.duckdb`).",
                icon=":material/info:")
        st.stop()
    st.info("The story needs the demo database, which is not built yet. Building it plays "
            "five scripted conversations through the real memory code, showing the runs "
            "done and an estimate of the time left as it goes.",
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


story_db = _story_database()
if story_db is None:
    _offer_demo_build()
assert story_db is not None
url = services.served().databases[story_db]
if story_db != services.current_name():
    st.caption(escape_md(f"Reading the served database '{story_db}', which holds the demo."))
    st.page_link(STORY_PAGE, label=escape_md(f"switch to database '{story_db}'"),
                 icon=":material/database:", query_params={"db": story_db,
                                                           "story": story.key})

try:
    view = services.cached_run_view(url, story.run)
    memctx = services.cached_memctx(url, story.run)
    conversation = services.cached_thread_messages(url, story.thread, 1, 500)
    fixed = services.cached_run_view(url, story.fix.run) if story.fix else None
except Exception as e:  # noqa: BLE001
    st.error(escape_md(f"The demo database cannot tell the story: {services.friendly_error(e)}"))
    st.stop()
if story_db == services.current_name():
    # the story's run is the run the other pages open on (Counterfactual, Why, …)
    follow_run(story.run, in_url=False)
key_msg = parts.find_key(conversation, story.key_phrase)
key = (key_msg.thread_id, key_msg.seq) if key_msg is not None else None

# -- 1 -------------------------------------------------------------------------------
st.header("1. What was said", divider="gray")
parts.say(story.said)
if key_msg is not None:
    parts.message_bubble(key_msg, engineer=engineer)
    link_to_message(story.thread, key_msg.seq, label="see it in the conversation")
with st.expander(escape_md(f"The whole conversation ({conversation.total} messages)")):
    for m in conversation.messages:
        parts.message_bubble(m, engineer=engineer)

# -- 2 -------------------------------------------------------------------------------
st.header("2. What the assistant answered", divider="gray")
parts.say(story.answered)
parts.bubble("user", view.query or "(question not recorded)", engineer=False)
parts.answer_bubble(view.answer, story, engineer=engineer)
if engineer:
    link_to_run(story.run, label=("open run ", Id(story.run), " in the run inspector"))

# -- 3 -------------------------------------------------------------------------------
st.header("3. What the assistant was given", divider="gray")
parts.gloss("what the assistant was given")
parts.say("A language model only knows what is put in front of it for each answer. "
          "This is how that was made up: its instructions, the latest messages of the "
          "conversation, the question, and whatever memory added from before.")
parts.composition_bars(view.lanes)
parts.gloss(parts.COMPOSITION_TITLE)
parts.given_parts(view, engineer=engineer)
if engineer:
    parts.engineer_prompt(view)

# -- 4 -------------------------------------------------------------------------------
st.header("4. Why", divider="gray")
parts.say(story.why)
bars = parts.match_bars(view, memctx)
if story.chart and view.threshold is not None and bars:
    with st.container(key="story-matches"):
        st.markdown(parts.match_table(bars, view.threshold, view.top_k, key, story.key_name))
    caption = parts.match_caption(bars, view.threshold, view.top_k, key, story.key_name)
    st.caption(escape_md(caption))
    parts.gloss(caption)
fate = services.cached_fate(url, story.run, *key) if key is not None else None
given, sentence = parts.key_fate(fate, story.key_name)
right = parts.is_right(view.answer, story)
st.markdown(f"#### {parts.fate_badge(given, right)}")
if right and not given:
    source = parts.answer_source(view, story.fact)
    sentence += (" The answer was right all the same" + (f": it came from “{source}”."
                                                         if source else "."))
st.info(escape_md(sentence))
parts.gloss(sentence)
if engineer and key is not None:
    with st.spinner("Asking why-forgotten (the first time loads the embedding model)…"):
        try:
            why = services.cached_why(url, story.run, key[0], key[1], None)
            st.caption(escape_md(f"why_forgotten({story.run}, {key[0]} #{key[1]}): "
                                 f"{why.named} — {why.sentence}"))
        except Exception as e:  # noqa: BLE001
            st.caption(escape_md(services.friendly_error(e)))
    if ranked := view.ranked():  # from rank 1: the hits composition dropped too
        st.plotly_chart(score_chart(ranked, view.threshold, view.top_k),
                        key="story-scores")

# -- 5 -------------------------------------------------------------------------------
st.header("5. The proof", divider="gray")
parts.proof_section(url, story, key, engineer=engineer)

# -- 6 -------------------------------------------------------------------------------
if story.fix is not None and fixed is not None:
    st.header("6. The fix", divider="gray")
    parts.fix_section(url, story, view, fixed, key, engineer=engineer)
elif story.next_step:
    st.header("6. What next", divider="gray")
    parts.say(story.next_step)
