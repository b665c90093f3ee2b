"""AppTest tests of the start page and the demo stories: cards that open each story,
threads grouped by resource (and "(no resource)"), an empty database; every story in
plain words (a scan of everything shown), the engineer details, the match table's named row,
cut and true caption, and the proof — stored, shown with "Run again" to the next
visitor, and read-only."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from app import services
from app.components import STORY_PAGE
from app.stories import STORIES, story_by_key
from app.story_parts import GLOSSARY_HEAD, Bar, match_caption, match_table
from memory_core.analysis import views
from memory_core.importers import import_text
from memory_core.storage.inmemory import InMemoryStorage
from sample_data.build import DemoClock, build_into
from tests.app.conftest import register
from tests.app.fixture_db import FixtureInfo
from tests.helpers import cf_records
from tests.plain_words import code_words, database_ids

MakeApp = Callable[..., AppTest]
# the words people who do not write code should not meet in a story's main text
BANNED = re.compile(r"(?i)\b(tokens?|lanes?|recall\w*|top[-_ ]?k|thresholds?|rank\w*|"
                    r"scor\w*|seqs?|run[-_ ]?ids?|near[- ]miss\w*)\b")
RAW = re.compile(r'#\d|\{"|\brun [AB]\b|[a-z]+-\d+ #\d+')


@pytest.fixture()
def fresh_demo(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemoryStorage]:
    """A demo database of its own (tests that journal proofs)."""
    clock = DemoClock()
    storage = InMemoryStorage(clock=clock)
    build_into(storage, clock, embedder="hashing", progress=lambda _m: None,
               only=["home", "trip", "move", "tech"])
    url = register(storage)
    monkeypatch.setenv(services.ENV_VAR, url)
    yield storage
    services.unregister_storage(url.removeprefix(services.MEMORY_SCHEME))


@pytest.fixture(autouse=True)
def no_demo_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "out" / "demo.duckdb"
    monkeypatch.setattr(services, "DEMO_DB", str(path))
    return path


def _ok(at: AppTest) -> None:
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]


def _button(at: AppTest, label: str) -> Any:
    return next(b for b in at.button if b.label == label)


def _story(app: MakeApp, key: str) -> AppTest:
    at = app(STORY_PAGE, story=key)
    _ok(at)
    return at


def _chart_texts(at: AppTest) -> list[str]:
    """The words a chart shows: title, axis titles, legend names, annotations, hovers."""
    out: list[str] = []
    for el in at.get("plotly_chart"):
        spec = json.loads(el.proto.spec)
        layout = spec.get("layout", {})
        for axis in ("xaxis", "yaxis"):
            out.append(str(layout.get(axis, {}).get("title", {}).get("text", "")))
        out.append(str(layout.get("title", {}).get("text", "")))
        out += [str(a.get("text", "")) for a in layout.get("annotations", [])]
        for trace in spec.get("data", []):
            out += [str(trace.get("name", "")), str(trace.get("hovertemplate", ""))]
    return out


def shown_texts(at: AppTest) -> list[str]:
    """Everything the page shows in words, except the glossary table (the one place
    that pairs plain words with the engineer's) and the sidebar."""
    out = [e.value for kind in ("title", "header", "subheader", "markdown", "text",
                                "caption", "info", "success", "warning")
           for e in getattr(at.main, kind)
           if not str(e.value).startswith(GLOSSARY_HEAD)]
    out += [b.label for b in at.main.button] + [t.label for t in at.main.toggle]
    out += [e.label for e in at.main.expander]
    return out + _chart_texts(at)


# -- the start page -------------------------------------------------------------------
def test_start_page_cards_open_each_story(demo: InMemoryStorage, app: MakeApp) -> None:
    for story in STORIES:
        at = app()
        _ok(at)
        assert at.title[0].value == "Memory Workbench"
        assert any(story.question in m.value.replace("\\", "") for m in at.markdown)
        at.button(key=f"open-story:{story.key}").click().run()
        _ok(at)
        assert at.title[0].value == story.title
        assert at.query_params["story"] == story.key


def test_start_page_groups_threads_by_resource_and_none(populated: tuple[Any, FixtureInfo],
                                                        app: MakeApp) -> None:
    storage, info = populated
    storage.memory.create_thread("loose-1", resource_id=None, title="An imported chat")
    at = app()
    _ok(at)
    labels = [e.label.replace("\\", "") for e in at.expander]
    own = len(storage.memory.list_threads(info.resource))
    assert f"{info.resource} · {own} threads" in labels
    assert "(no resource) · 1 thread" in labels
    links = [el.proto.query_string for el in at.main.get("page_link")]
    assert any("thread=loose-1" in q for q in links)
    assert any(f"thread={info.thread}" in q for q in links)


def test_start_page_on_an_imported_database(empty_db: InMemoryStorage, app: MakeApp) -> None:
    line = json.dumps({"messages": [{"role": "user", "content": "hello there"},
                                    {"role": "assistant", "content": "hi"}]})
    import_text(empty_db, line + "\n", format="openai")
    at = app()
    _ok(at)
    assert [e.label.replace("\\", "") for e in at.expander] == ["(no resource) · 1 thread"]


def test_start_page_on_an_empty_database(empty_db: InMemoryStorage, app: MakeApp) -> None:
    at = app()
    _ok(at)
    assert "no threads yet" in at.info[0].value
    assert [b.label for b in at.main.button].count("Open the story") == len(STORIES)
    assert any("memwb ui --db your.duckdb" in t.value for t in at.text)  # monospace


def test_old_thread_links_to_the_root_still_open_the_thread(populated: tuple[Any, FixtureInfo],
                                                           app: MakeApp) -> None:
    _, info = populated
    at = app(thread=info.thread)
    _ok(at)
    assert at.title[0].value == "Threads"


# -- plain words ----------------------------------------------------------------------
@pytest.mark.parametrize("key", [s.key for s in STORIES])
def test_every_story_speaks_plainly(demo: InMemoryStorage, app: MakeApp, key: str) -> None:
    at = _story(app, key)
    story = story_by_key(key)
    assert at.title[0].value == story.title
    assert len(at.header) >= 5
    runs = {story.run, story.proof.run, *([story.fix.run] if story.fix else [])}
    # after the proof too (its result is part of the main text)
    button = next((b for b in at.main.button if b.label == story.proof.button), None)
    if button is not None:
        button.click().run()
        _ok(at)
    texts = _plain_view(at)
    assert len(texts) > 20
    for text in texts:
        assert not BANNED.search(text), (BANNED.search(text), text)
        assert not RAW.search(text), (RAW.search(text), text)
        assert not any(r in text for r in runs), text


def _plain_view(at: AppTest) -> list[str]:
    """What a plain page says, less the glossary notes (they pair the plain words with
    the engineer's on purpose)."""
    from app.story_parts import GLOSSARY_ICON

    return [t for t in shown_texts(at) if not t.startswith(GLOSSARY_ICON)]


def _after_the_proof(at: AppTest, story_key: str) -> AppTest:
    button = next((b for b in at.main.button
                   if b.label == story_by_key(story_key).proof.button), None)
    if button is not None:
        button.click().run()
        _ok(at)
    return at


@pytest.mark.parametrize("key", ["start", *(s.key for s in STORIES)])
def test_no_plain_page_shows_codes_keys_or_ids(demo: InMemoryStorage, app: MakeApp,
                                               key: str) -> None:
    """Fate codes, setting keys (snake or hyphen case, or as `key: value`), field syntax
    and run or message ids appear only in the engineer details and the glossary."""
    if key == "start":
        at = app()
        _ok(at)
    else:
        at = _after_the_proof(_story(app, key), key)
    ids = database_ids(demo)
    texts = _plain_view(at)
    assert len(texts) > 10
    bad = {t: code_words(t, ids) for t in texts if code_words(t, ids)}
    assert not bad


def _answers(at: AppTest) -> list[str]:
    return [t.value for t in at.text]


@pytest.mark.parametrize("key", [s.key for s in STORIES])
def test_each_answer_is_marked_right_or_wrong(demo: InMemoryStorage, app: MakeApp,
                                              key: str) -> None:
    """The story's answer carries a badge from the record: wrong when it lacks the
    fact, right when it has it; a right answer is never badged as a failure."""
    story = story_by_key(key)
    at = _story(app, key)
    answer = services.cached_run_view(services.current_url(), story.run).answer or ""
    # in page order: the answer's own mark first (the proof's and the fix's follow)
    mark = next(m.value for m in at.markdown if re.search("(Right|Wrong) answer", m.value))
    fate = next(m.value for m in at.markdown if "anded over" in m.value)
    if story.fact in answer:
        assert "Right answer" in mark and ":green-badge" in mark
        assert ":red-badge" not in fate, fate  # kept out, but no failure
    else:
        assert "Wrong answer" in mark and ":red-badge" in mark


@pytest.mark.parametrize("key", [s.key for s in STORIES])
def test_each_proof_asks_the_same_question_again(demo: InMemoryStorage, app: MakeApp,
                                                 key: str) -> None:
    story = story_by_key(key)
    url = services.current_url()
    asked = services.cached_run_view(url, story.run).query
    assert services.cached_run_view(url, story.proof.run).query == asked
    at = _story(app, key)
    assert any("The same question, asked again" in m.value for m in at.markdown)


def test_the_gate_code_story_names_the_length_limit_not_a_rule(
        fresh_demo: InMemoryStorage, app: MakeApp) -> None:
    at = _story(app, "move")
    texts = " ".join(_plain_view(at))
    assert "of a rule" not in texts
    assert "were left out, each because it did not fit" in texts.replace("\\", "")


def test_a_glossary_entry_is_shown_where_its_term_first_appears(demo: InMemoryStorage,
                                                                app: MakeApp) -> None:
    from app.story_parts import GLOSSARY_ICON

    at = _story(app, "trip")
    notes = [c.value for c in at.main.caption if c.value.startswith(GLOSSARY_ICON)]
    assert any("working memory" in n for n in notes), notes
    assert len(notes) == len(set(notes))  # each term once


def test_engineer_details_show_the_terms(demo: InMemoryStorage, app: MakeApp) -> None:
    at = _story(app, "support")
    at.toggle(key="story-engineer").set_value(True).run()
    _ok(at)
    texts = "\n".join(shown_texts(at)).replace("\\", "")
    assert "run support-3-forgot" in texts and "support-3-fixed" in texts
    assert "threshold: 0.45 → 0.4" in texts and "top_k: 3 → 8" in texts
    assert re.search(r"support-1 #\d+", texts)
    assert not re.search(r"score -?\d\.\d{4,}", texts)  # scores as every score reads
    assert "rank" in " ".join(_chart_texts(at))  # the engineer's score chart
    assert BANNED.search(texts)
    # a recalled message whose plain words are its text is shown once, not twice
    at = _story(app, "home")
    at.toggle(key="story-engineer").set_value(True).run()
    _ok(at)
    recalled = [i.text for i in views.run_view(demo, "home-tiles").lane("recalled").items]
    shown = [t.value for t in at.text]
    assert recalled and all(shown.count(t) == 1 for t in recalled), (recalled, shown)


def test_glossary_pairs_plain_and_engineer_words(demo: InMemoryStorage, app: MakeApp) -> None:
    at = _story(app, "support")
    glossary = next(m.value for m in at.main.markdown if m.value.startswith(GLOSSARY_HEAD))
    rows = [[c.strip().replace("\\", "") for c in ln.strip("|").split(" | ")]
            for ln in glossary.splitlines()[2:]]
    assert all(len(r) == 3 for r in rows), rows
    assert {"threshold", "top-k", "tokens", "lane"} <= {r[1] for r in rows}
    assert not at.main.dataframe  # a Markdown table, no canvas grid


def test_story_picker_switches_stories(demo: InMemoryStorage, app: MakeApp) -> None:
    at = _story(app, "support")
    at.get("segmented_control")[0].set_value("trip").run()
    _ok(at)
    assert at.title[0].value == story_by_key("trip").title


def test_the_story_run_is_the_run_the_other_pages_open_on(demo: InMemoryStorage,
                                                          app: MakeApp) -> None:
    """From a story, Counterfactual and the inspector open on the story's run."""
    from app.components import COUNTERFACTUAL_PAGE, RUN_PAGE

    at = _story(app, "trip")
    for page in (COUNTERFACTUAL_PAGE, RUN_PAGE):
        for key in [k for k in at.query_params if k != "db"]:  # as the sidebar does
            del at.query_params[key]
        at.switch_page(page)
        at.run()
        _ok(at)
        run = next(w for w in at.selectbox if w.label == "Run")
        assert run.value == story_by_key("trip").run, page


# -- the table ------------------------------------------------------------------------
# the forgotten-refund run as the real demo records it: a left-out note first, two
# handed over, two above the line past the cut, the refund under the line
BARS = [Bar(1, 0.78, "dropped", ("support-2", 8), "note", "unanswered-tool-call"),
        Bar(2, 0.62, "hit", ("support-1", 18), "a"), Bar(3, 0.51, "hit", ("support-1", 10), "b"),
        Bar(4, 0.49, "beyond-top-k", ("support-1", 12), "c"),
        Bar(5, 0.47, "beyond-top-k", ("support-1", 15), "d"),
        Bar(6, 0.43, "below-threshold", ("support-1", 17), "refund")]


def test_the_table_names_the_key_row_and_marks_the_cut_and_the_line() -> None:
    text = match_table(BARS, 0.45, 3, ("support-1", 17), "the refund decision")
    rows = [ln for ln in text.splitlines() if ln.startswith("| ")][1:]  # past the header
    # closest first; the cut after the 3 closest and the minimum match as rows of their own
    assert [r.split(" | ")[0] for r in rows] == ["| 1", "| 2", "| 3", "|", "| 4", "| 5",
                                                 "|", "| **6**"]
    assert "only the 3 closest are handed over" in rows[3]
    assert "the minimum match, 45 %" in rows[6]
    key_row = rows[-1]
    assert "**← the refund decision**" in key_row and "43 %" in key_row
    assert "under the minimum match" in key_row
    assert "found but left out" in rows[0] and "78 %" in rows[0]
    assert key_row.count("█") == 5 and rows[0].count("█") == 9  # as long as the match


def test_the_table_names_a_tool_call_in_words() -> None:
    bar = Bar(1, 0.7, "dropped", ("support-2", 8),
              'Starting the refund. → refund({"amount": 240, "ord', "unanswered-tool-call")
    text = match_table([bar], 0.45, 3, None, "x").replace("\\", "")
    assert "(asks the refund system)" in text and "amount" not in text


def test_a_preview_cut_at_its_length_says_so() -> None:
    """The plain table showed "…will reach your Visa card ending 4411 within 5" as if
    the message ended there: the recorded preview was cut at its length."""
    from memory_core.text import PREVIEW_CHARS

    cut = ("The refund of €240 for order A-1042 was approved today and will reach your "
           "Visa card ending 4411 within 5 business days.")[:PREVIEW_CHARS]
    assert len(cut) == PREVIEW_CHARS
    text = match_table([Bar(1, 0.5, "hit", ("support-1", 17), cut)], 0.45, 3, None, "x")
    shown = text.replace("\\", "")
    assert "|" not in shown.split("ending 4411 ")[1].split("…")[0], shown  # cut, said
    assert re.search(r"ending 4411 (\w+ )*\w+… \|", shown), shown  # at a word
    whole = match_table([Bar(1, 0.5, "hit", ("support-1", 17), "Short.")], 0.45, 3, None, "x")
    assert "| Short\\. |" in whole  # a preview shorter than the cut: as it is


def test_the_caption_states_the_real_rule() -> None:
    caption = match_caption(BARS, 0.45, 3, ("support-1", 17), "the refund decision")
    assert "matches at least 45 % and is among the 3 closest" in caption
    assert "2 messages passed the minimum but came after the 3 closest" in caption
    assert "position 1 was found but left out" in caption  # why the table starts there
    assert "“the refund decision” is at position 6" in caption
    later = match_caption(BARS[1:], 0.45, 3, None, "x")
    assert "The table starts at position 2" in later


# -- the proof ------------------------------------------------------------------------
def test_the_proof_is_stored_and_the_next_visitor_sees_it_with_run_again(
        fresh_demo: InMemoryStorage, app: MakeApp) -> None:
    story = story_by_key("home")
    at = _story(app, "home")
    assert not [b for b in at.main.button if b.label == "Run again"]
    _button(at, story.proof.button).click().run()
    _ok(at)
    assert any("The answer changed" in m.value for m in at.markdown)
    assert any("zellige" in t.value for t in at.text)  # the very run now has the answer
    labels = [b.label for b in at.main.button]
    assert "Run again" in labels and story.proof.button not in labels
    records = cf_records(fresh_demo, story.proof.run)
    assert records
    # a new session reads it back from the journal
    again = _story(app, "home")
    assert any("The answer changed" in m.value for m in again.markdown)
    _button(again, "Run again").click().run()
    _ok(again)
    assert any("Asked again just now: the same answer as before." in s.value
               for s in again.success)
    assert cf_records(fresh_demo, story.proof.run) == records  # first write kept


def _proved(app: MakeApp, key: str) -> AppTest:
    """The story ``key`` after its proof ran: the answer changed."""
    at = _story(app, key)
    _button(at, story_by_key(key).proof.button).click().run()
    _ok(at)
    assert any("The answer changed" in m.value for m in at.markdown)
    return at


def test_taking_the_plan_away_proves_it_carried_the_answer(fresh_demo: InMemoryStorage,
                                                           app: MakeApp) -> None:
    at = _proved(app, "trip")
    assert any("After: asked again without the plan it keeps" in m.value for m in at.markdown)


def test_read_only_shows_the_stored_proof_and_says_replay_is_off(
        fresh_demo: InMemoryStorage, app: MakeApp, monkeypatch: pytest.MonkeyPatch) -> None:
    story = story_by_key("home")
    monkeypatch.setenv(services.READ_ONLY_VAR, "1")
    at = _story(app, "home")
    assert any("Replays are off" in i.value for i in at.info)
    assert _button(at, story.proof.button).disabled
    before = cf_records(fresh_demo, story.proof.run)
    monkeypatch.delenv(services.READ_ONLY_VAR)
    _button(_story(app, "home"), story.proof.button).click().run()
    monkeypatch.setenv(services.READ_ONLY_VAR, "1")
    at = _story(app, "home")
    assert any("The answer changed" in m.value for m in at.markdown)
    assert any("recorded earlier" in i.value for i in at.info)
    assert _button(at, "Run again").disabled
    assert before == []


def test_a_key_message_memory_never_found_cannot_be_put_back(demo: InMemoryStorage,
                                                            app: MakeApp) -> None:
    # the hashing-built demo does not find the refund at all: say so, offer nothing
    at = _story(app, "support")
    assert any("cannot be put back here" in i.value.replace("\\", "") for i in at.info)
    assert not [b for b in at.main.button if b.label == story_by_key("support").proof.button]


def test_a_message_the_length_limit_cut_out_is_named_plainly() -> None:
    """The fate comes from analysis (a processor's removal in the record), the words
    from the story page."""
    from datetime import UTC, datetime

    from app.story_parts import key_fate
    from memory_core.analysis.forgotten import explain_message
    from memory_core.journal import RunData
    from memory_core.provenance.prompt import FrozenPrompt
    from memory_core.provenance.record import CompositionSettings, Memctx, Processed
    from memory_core.types import RunRecord, StoredMessage

    storage = InMemoryStorage()
    memctx = Memctx(thread_id="t", settings=CompositionSettings(recent_n=4,
                                                                 recall_enabled=False),
                    processed=[Processed(processor="token-limiter", lane="recent",
                                         thread_id="t", seq=3, action="removed",
                                         tokens_before=10, tokens_after=0, reason="budget")])
    run = RunRecord(run_id="r", agent="a", thread_id="t", resource_id=None,
                    status="completed", started_at=datetime(2027, 1, 2, tzinfo=UTC),
                    finished_at=None)
    msg = StoredMessage(thread_id="t", seq=3, role="user", content="a budget of 300",
                        created_at=datetime(2027, 1, 1, tzinfo=UTC))
    data = RunData(run=run, prompt=FrozenPrompt(items=[]), memctx=memctx)
    fate = explain_message(storage, data, msg, rescore=False)
    assert fate.fate == "trimmed-by-token-limit"
    given, sentence = key_fate(fate, "the budget")
    assert given is False
    assert sentence == ("The budget was cut out to keep what the assistant is given under "
                        "its length limit.")
    assert not BANNED.search(sentence)
    assert key_fate(None, "the budget") == (None, "The budget is not in this database.")


def test_the_token_budget_story_puts_the_trimmed_gate_code_back(
        fresh_demo: InMemoryStorage, app: MakeApp) -> None:
    """The fifth story: the message the token limiter trimmed is put back into the very
    run that forgot it, and the answer comes back."""
    at = _proved(app, "move")
    assert any("4417" in t.value for t in at.text)


def test_the_summary_story_puts_the_summarised_range_back(fresh_demo: InMemoryStorage,
                                                          app: MakeApp) -> None:
    """The summary story's proof asks its own question again with the message the
    summary lost put back word for word, and the answer comes right."""
    at = _proved(app, "tech")
    assert any("Right answer" in m.value for m in at.markdown)
    assert any("From our conversation: The staging database only accepts connections "
               "from the 10.8.0.0/16" in t.value for t in at.text)


def test_the_engineer_view_is_in_the_link(demo: InMemoryStorage, app: MakeApp) -> None:
    """The Engineer details toggle was not kept in the URL: that view could not be
    shared as a link."""
    at = _story(app, "support")
    assert at.toggle(key="story-engineer").value is False
    assert "engineer" not in at.query_params
    at.toggle(key="story-engineer").set_value(True).run()
    _ok(at)
    assert at.query_params["engineer"] == "on"
    opened = app(STORY_PAGE, story="support", engineer="on")  # the link, in a new session
    _ok(opened)
    assert opened.toggle(key="story-engineer").value is True
    assert "run support-3-forgot" in "\n".join(shown_texts(opened)).replace("\\", "")
    opened.toggle(key="story-engineer").set_value(False).run()
    assert "engineer" not in opened.query_params
