"""AppTest tests of the What-if page (issue 35) on the demo scenarios (hashing embedder)
and the hand-made fixture, its numbers checked against the library's
``memory_core.analysis.whatif.what_if`` on the same database; and of the run
inspector's "Keep this answer" (``memory_core.analysis.regress``)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from app import services
from app.components import RUN_PAGE, WHATIF_PAGE
from app.whatif_parts import (
    Recorded,
    changes_from_form,
    most_moved,
    plain_summary,
    setting_words,
)
from memory_core.analysis.regress import pin_run, pins_of
from memory_core.analysis.whatif import WhatIfReport, what_if
from memory_core.errors import InvalidInputError
from memory_core.importers import import_file
from memory_core.storage.inmemory import InMemoryStorage
from tests.app.conftest import served
from tests.app.fixture_db import RUN_1, FixtureInfo
from tests.app.markdown import Table, is_table, shown_text, tables
from tests.app.test_analysis_pages import _ok
from tests.helpers import cf_records

MakeApp = Callable[..., AppTest]
Populated = tuple[InMemoryStorage, FixtureInfo]
FORGOT, GATE = "support-3-forgot", "move-gate-small-budget"
THRESHOLD = "Recall threshold (minimum similarity)"
TOP_K = "Recall top-k (older messages at most)"
RECENT = "Recent window (latest messages kept)"
BUDGET = "Token budget (prompt length at most)"
TRY = "Try these settings"
IMPORTED = Path(__file__).resolve().parents[1] / "fixtures" / "imports" / "openai_support.jsonl"


def _widget(at: AppTest, kind: str, label: str) -> Any:
    """The ``kind`` widget (``number_input``, ``selectbox``, ``radio``, ``button``) labelled
    ``label`` (a button's label starts with it: "Ask again (1 run)")."""
    return next(w for w in getattr(at, kind)
                if w.label == label or (kind == "button" and w.label.startswith(label)))


COUNTS = re.compile(r"\*\*([\d,]+)\*\* runs? changes? · \*\*([\d,]+)\*\* unchanged · "
                    r"\*\*([\d,]+)\*\* cannot be tried")


def _metrics(at: AppTest) -> dict[str, int]:
    """The outcome's counts, as the line of text above its summary says them ({} when
    nothing was tried)."""
    found = [m for m in (COUNTS.fullmatch(md.value) for md in at.markdown) if m]
    if not found:
        return {}
    (counts,) = found
    return dict(zip(("Runs that change", "Runs unchanged", "Runs that cannot be tried"),
                    (int(n.replace(",", "")) for n in counts.groups()), strict=True))


def _shown(at: AppTest) -> str:
    """Every Markdown and caption element as a reader sees it, and the literal texts."""
    return "\n".join([*(shown_text(m.value) for m in (*at.markdown, *at.caption)),
                      *(t.value for t in at.text)])


def _counts(report: WhatIfReport) -> dict[str, int]:
    return {"Runs that change": report.count("changed"),
            "Runs unchanged": report.count("unchanged"),
            "Runs that cannot be tried": report.count("cannot")}


def _open_settings(at: AppTest) -> None:
    """Open the fold holding the settings form, as a click does (the page reruns and
    builds the form)."""
    assert [e for e in at.expander if e.label.replace("\\", "").startswith("Settings tried:")]
    at.session_state["whatif-settings"] = True
    at.run()
    _ok(at)


def _try(at: AppTest, **numbers: Any) -> AppTest:
    for label, value in numbers.items():
        _widget(at, "number_input", label).set_value(value)
    _widget(at, "button", TRY).click().run()
    _ok(at)
    return at


TABLES = {"whatif-runs": "prompt tokens", "whatif-cannot": "why"}


def _table(at: AppTest, key: str) -> Table:
    """The page's table ``key``, told by a column only it has."""
    return next(t for t in tables(at) if TABLES[key] in t.columns)


# -- the form ------------------------------------------------------------------------------
def test_the_form_is_prefilled_with_what_the_scope_recorded(demo: InMemoryStorage,
                                                             app: MakeApp) -> None:
    at = app(WHATIF_PAGE, thread="support-3")
    _ok(at)
    assert at.title[0].value == "What if"
    assert _widget(at, "selectbox", "Thread").value == "support-3"
    assert _widget(at, "number_input", RECENT).value == 6  # every run of the thread kept 6
    # the story's fix ran with another bar and top-k: the runs differ, the box is empty
    assert _widget(at, "number_input", THRESHOLD).value is None and _widget(at, "number_input", TOP_K).value is None
    assert _widget(at, "radio", "Recall of older messages").value == "on"
    assert _widget(at, "selectbox", "Recall mode").value == "vector"
    assert _widget(at, "number_input", BUDGET).value is None and not at.checkbox  # no run had a budget
    assert not _metrics(at)  # nothing tried yet: nothing composed
    moving = app(WHATIF_PAGE, thread="moving-day")
    assert _widget(moving, "number_input", BUDGET).value == 160 and _widget(moving, "number_input", RECENT).value == 18
    assert [c.label for c in moving.checkbox] == ["No limit"]
    # the story's two budgets: the box names both
    flat = app(WHATIF_PAGE, thread="new-flat")
    assert _widget(flat, "number_input", BUDGET).value is None
    assert _widget(flat, "number_input", BUDGET).proto.placeholder == "each run's own: 160, 1000"
    assert _widget(flat, "number_input", THRESHOLD).proto.placeholder == "not set in these runs"


def test_one_message_kept_in_view_is_said_in_the_singular() -> None:
    assert setting_words("recent_n", 1, Recorded()) == "the latest 1 message kept in view"
    assert setting_words("recent_n", 3, Recorded(values={"recent_n": (6,)})) \
        == "the latest 3 messages kept in view instead of 6"


def test_a_threshold_is_said_as_set() -> None:
    """Why forgotten suggests "a threshold of 0.434"; What if said it back as 0.43."""
    assert setting_words("recall.threshold", 0.434, Recorded(values={
        "recall.threshold": (0.3, 0.45)})) == "a bar for “similar enough” of 0.434"


def test_only_what_differs_from_every_run_is_a_change() -> None:
    recorded = Recorded(values={"recent_n": (6,), "recall.threshold": (0.4, 0.45),
                                "token_budget": (None,)}, read=3, total=3)
    form = {"recent_n": 6, "recall.threshold": 0.45, "recall.top_k": None,
            "token_budget": None, "recall": None}
    assert changes_from_form(form, recorded) == {"recall.threshold": 0.45}
    assert changes_from_form({**form, "recall.threshold": None}, recorded) == {}
    assert changes_from_form({**form, "token_budget": 500}, recorded)["token_budget"] == 500


# -- the outcome on the demo -----------------------------------------------------------------
def test_lowering_the_recall_bar_brings_older_messages_into_support_3_forgot(
        demo: InMemoryStorage, app: MakeApp) -> None:
    expected = what_if(demo, ["recall.threshold=0.2", "recall.top_k=8"],
                       thread_id="support-3")
    forgot = next(r for r in expected.runs if r.run_id == FORGOT)
    entered = next(c for c in forgot.lanes if c.lane == "recalled").entered
    assert forgot.status == "changed" and entered
    at = _try(app(WHATIF_PAGE, thread="support-3"), **{THRESHOLD: 0.2, TOP_K: 8})
    assert _metrics(at) == _counts(expected)
    assert {k: at.query_params[k] for k in ("thread", "recall.threshold", "recall.top_k")} == {
        "thread": "support-3", "recall.threshold": "0.2", "recall.top_k": "8"}
    shown = _shown(at)
    # plain words: what was tried and what it does, no setting keys
    assert (f"With a lower bar for “similar enough” and room for up to 8 remembered "
            f"messages, {expected.count('changed')} of {len(expected.runs)} past runs would "
            "have been given a different prompt.") in shown
    # what a reader sees: text and table cells (a link's URL may name the setting)
    plain = "\n".join([shown_text(m.value) for m in at.markdown if not is_table(m.value)]
                      + [v for t in tables(at) for row in t.rows for v in row.values()])
    assert "recall.threshold" not in plain and "top_k" not in plain
    # the three that matter most, and how many more there are (not hidden)
    total = len({(k.thread_id, k.seq) for r in expected.runs for c in r.lanes
                 for k in c.entered})
    assert total > 3
    assert (f"and {total - 3} more messages: pick a run below to see the messages each run "
            "gains and loses.") in [c.value for c in at.caption]
    # the runs that change, each a link to it side by side
    links = [row["run"] for row in _table(at, "whatif-runs").links]
    assert len(links) == expected.count("changed")
    assert any(link.endswith(f"&run={FORGOT}") and "recall.threshold=0.2" in link
               for link in links)
    # tokens per part over the runs that change: a small table, no chart
    assert not at.get("plotly_chart")
    parts = next(m.value for m in at.markdown if "Prompt tokens by part" in m.value)
    assert f"over the {expected.count('changed')} runs that change" in parts
    assert "| part | as recorded | what if | change |" in parts
    assert re.search(r"\| Recalled \| [\d,]+ \| [\d,]+ \| [+−][\d,]+ \|", parts), parts
    _widget(at, "selectbox", "Run").set_value(FORGOT).run()
    _ok(at)
    assert at.query_params["run"] == FORGOT
    # tried here: the form stays in view with what was tried, not folded away
    assert _widget(at, "number_input", THRESHOLD).value == 0.2
    texts = [t.value for t in at.text]
    assert all(any(t.startswith(k.preview[:40]) for t in texts) for k in entered)
    # each message that enters says the rank and score recall gave it in the what-if
    captions = [shown_text(c.value) for c in at.caption]
    for k in entered:
        assert k.score is not None and k.rank is not None
        assert any(c.endswith(f" · rank {k.rank}, score {k.score:.3f}") for c in captions), \
            captions


def test_a_larger_token_budget_keeps_the_gate_code(demo: InMemoryStorage,
                                                   app: MakeApp) -> None:
    """Opened from a link: the link names the scope, the setting tried and the run."""
    expected = what_if(demo, ["token_budget=4000"], thread_id="new-flat")
    at = app(WHATIF_PAGE, thread="new-flat", token_budget="4000", run=GATE)
    _ok(at)
    assert _metrics(at) == _counts(expected)
    # the outcome leads: the form waits in a fold naming what the link tried, unbuilt
    (fold,) = [e for e in at.expander if e.label.replace("\\", "").startswith("Settings tried:")]
    assert fold.label.replace("\\", "") == ("Settings tried: more room in the prompt (4000 "
                                            "tokens) — open to change them")
    assert fold.proto.expanded is False and not at.number_input
    _open_settings(at)
    assert _widget(at, "number_input", BUDGET).value == 4000  # the form shows what the link tried
    assert _metrics(at) == _counts(expected)
    assert GATE in [r.run_id for r in expected.runs if r.status == "changed"]
    assert "With more room in the prompt (4000 tokens), " in _shown(at)
    # what they would have remembered: first what a run asked about (the gate code)
    first = most_moved(expected, entered=True)[0]
    assert "4417" in first.preview
    texts = [t.value for t in at.text]
    assert texts.index(first.preview) < texts.index("The window is 140 centimetres wide.")
    # nothing lost: said beside what they would have remembered, not a blank column
    assert not most_moved(expected, entered=False)
    shown = _shown(at)
    assert "What they would have lost" in shown
    assert "Nothing: every message these runs were given would still be in their " \
        "prompts." in shown
    assert _widget(at, "selectbox", "Run").value == GATE
    texts = [t.value for t in at.text]
    assert "The caretaker says the building's gate code is 4417." in texts
    assert dict(at.query_params)["run"] == GATE


def test_a_setting_that_changes_nothing_says_0_runs_change(demo: InMemoryStorage,
                                                          app: MakeApp) -> None:
    expected = what_if(demo, ["token_budget=5000"], thread_id="support-3")
    assert expected.count("changed") == 0
    at = _try(app(WHATIF_PAGE, thread="support-3"), **{BUDGET: 5000})
    assert _metrics(at)["Runs that change"] == 0
    assert (f"With a limit of 5000 tokens on the prompt's length, none of the "
            f"{len(expected.runs)} past runs would have been given anything different."
            ) in _shown(at)
    assert "(none)" in [t.value for t in at.text] and not at.get("plotly_chart")
    # pressed with nothing changed: the same, and the URL tries nothing
    again = _try(app(WHATIF_PAGE, thread="support-3"))
    assert _metrics(again)["Runs that change"] == 0
    assert "With every setting as it was, none of the" in _shown(again)
    assert not any("." in k or k in ("recent_n", "token_budget") for k in again.query_params)


def test_every_run_and_a_user(demo: InMemoryStorage, app: MakeApp) -> None:
    at = app(WHATIF_PAGE)
    _widget(at, "radio", "Which past runs").set_value("resource").run()
    _ok(at)
    # the first user is what a link naming none opens on: left out of the URL
    assert _widget(at, "selectbox", "User (resource)").value == "cust-anna"
    assert at.query_params["scope"] == "resource" and "resource" not in at.query_params
    _widget(at, "selectbox", "User (resource)").set_value("home-eva").run()
    assert at.query_params["resource"] == "home-eva"
    _try(at, **{RECENT: 2})
    assert _metrics(at) == _counts(what_if(demo, ["recent_n=2"], resource_id="home-eva"))
    # another scope: what was tried on other runs goes, with its outcome
    _widget(at, "radio", "Which past runs").set_value("all").run()
    _ok(at)
    assert "recent_n" not in at.query_params and not _metrics(at)
    _widget(at, "radio", "Recall of older messages").set_value("off")
    _widget(at, "button", TRY).click().run()
    _ok(at)
    expected = what_if(demo, ["recall=off"])
    assert _metrics(at) == _counts(expected) and at.query_params["recall"] == "off"
    assert "memory of older messages switched off" in _shown(at)
    assert "something their answer relied on" in _shown(at)  # the quoted ones it loses


def test_runs_that_cannot_be_tried_say_why(app: MakeApp,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    storage = InMemoryStorage()
    import_file(storage, IMPORTED)
    for _ in served(storage, monkeypatch):
        expected = what_if(storage, ["recent_n=2"])
        assert expected.runs and expected.count("cannot") == len(expected.runs)
        at = app(WHATIF_PAGE, scope="all", recent_n="2")
        _ok(at)
        assert _metrics(at) == _counts(expected)
        table = _table(at, "whatif-cannot")
        assert list(table["run"]) == [r.run_id for r in expected.runs]
        assert all("imported" in why for why in table["why"])
        assert (f"{len(expected.runs)} past runs could not be tried again" in _shown(at))
        # not "none would have been given anything different": none could be tried
        assert (f"With the latest 2 messages kept in view, none of the "
                f"{len(expected.runs)} past runs could be tried again.") in _shown(at)
        assert "anything different" not in _shown(at)
        # said before any setting is tried (an outside walk met the whole form first)
        at = app(WHATIF_PAGE, scope="all")
        _ok(at)
        assert "None of these runs was composed here: they were imported or captured" \
            in " ".join(i.value for i in at.info)


# -- asking again --------------------------------------------------------------------------
def test_read_only_only_composes(demo: InMemoryStorage, app: MakeApp,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(services.READ_ONLY_VAR, "1")
    before = cf_records(demo, GATE)
    at = app(WHATIF_PAGE, thread="new-flat", token_budget="1000")
    _ok(at)
    assert _metrics(at)["Runs that change"] > 0  # composing is reading
    reason = next(i.value for i in at.info if "read-only" in i.value)
    assert "only puts the prompts together again" in reason
    button = _widget(at, "button", "Ask again")
    assert button.disabled and button.help == reason
    assert cf_records(demo, GATE) == before


def test_asking_again_says_which_answers_changed(demo: InMemoryStorage,
                                                app: MakeApp) -> None:
    at = app(WHATIF_PAGE, thread="new-flat", token_budget="1000")
    _ok(at)
    changed = what_if(demo, ["token_budget=1000"], thread_id="new-flat").count("changed")
    # the demo's history turns were said by a scripted playback: only the story's run
    # (the offline reader) can be asked again with its own model
    assert (f"{changed - 1} of these {changed} runs were answered by a model that cannot "
            "be asked again here, so only the others are asked") in _shown(at)
    button = _widget(at, "button", "Ask again")
    assert button.label == "Ask again (1 run)" and not button.disabled
    button.click().run()
    _ok(at)
    answers = _table(at, "whatif-runs")
    verdicts = dict(zip(answers["run"], answers["answer asked again"], strict=True))
    assert verdicts[GATE] == "changed"
    assert all(v == "not asked" for r, v in verdicts.items() if r != GATE)
    assert "Asked again, 1 of 1 answers changed." in _shown(at)
    assert f"{changed - 1} past runs could not be asked again" in _shown(at)
    assert any("4417" in t.value for t in at.text)  # the new answer, as text
    assert cf_records(demo, GATE)  # journaled under the what-if's key


def test_plain_summary_of_an_asked_report(demo: InMemoryStorage) -> None:
    report = what_if(demo, ["token_budget=1000"], run_ids=[GATE], ask=True)
    lines = plain_summary(report, Recorded(values={"token_budget": (160,)}))
    assert lines[0] == ("With more room in the prompt (1000 tokens instead of 160), 1 of 1 "
                        "past runs would have been given a different prompt.")
    assert "Asked again, 1 of 1 answer changed." in lines


def test_runs_that_lose_messages_say_whether_their_answers_quoted_them(
        demo: InMemoryStorage) -> None:
    """"12 past runs would have lost something they were given" above a table whose
    "quoted lost" column was 0 in every row read as a contradiction: the line says it."""
    for changes, quoted in ((["recent_n=5"], False), (["recent_n=2"], True)):
        report = what_if(demo, changes, thread_id="support-3")
        moved = [r for r in report.runs if r.status == "changed"]
        lost = sum(1 for r in moved if r.left)
        relied = sum(1 for r in moved if r.key_lost)
        assert lost and bool(relied) == quoted
        lines = plain_summary(report, Recorded(values={"recent_n": (6,)}))
        said = next(ln for ln in lines if "would have lost something" in ln)
        assert said.endswith(f" — {relied:,} of them something their answer relied on."
                             if quoted else ", none of it quoted in their answer."), said


# -- keep this answer (run inspector) ----------------------------------------------------------
def test_keep_this_answer_pins_the_run(populated: Populated, app: MakeApp) -> None:
    storage, _ = populated
    pin_run(storage, "gate", RUN_1, [{"kind": "contains", "text": "A-17"}])
    at = app(RUN_PAGE, run=RUN_1)
    _ok(at)
    assert "Pinned to suite gate: answer contains “A-17” (any case)." in _shown(at)
    box = _widget(at, "selectbox", "Suite")
    assert box.value == "kept answers" and box.options == ["kept answers", "gate"]
    _widget(at, "button", "Keep this answer").click().run()
    _ok(at)
    assert [(p.run_id, [e.kind for e in p.expectations])
            for p in pins_of(storage, "kept answers")] == [(RUN_1, ["unchanged"])]
    assert any(f"Kept: run {RUN_1} is pinned to suite kept answers." == shown_text(s.value)
               for s in at.success)
    assert "Pinned to suite kept answers: answer unchanged." in _shown(at)
    # another suite, picked: what it expected of the run is kept beside the answer
    _widget(at, "selectbox", "Suite").set_value("gate")
    _widget(at, "button", "Keep this answer").click().run()
    _ok(at)
    assert [e.kind for e in pins_of(storage, "gate")[0].expectations] == [
        "contains", "unchanged"]
    _widget(at, "button", "Keep this answer").click().run()
    assert any("(it already was)" in shown_text(s.value) for s in at.success)
    # (a new name typed into the picker: tests/browser/test_whatif_walk.py)


def test_keep_this_answer_is_off_on_a_read_only_workbench(
        populated: Populated, app: MakeApp, monkeypatch: pytest.MonkeyPatch) -> None:
    storage, _ = populated
    monkeypatch.setenv(services.READ_ONLY_VAR, "1")
    at = app(RUN_PAGE, run=RUN_1)
    _ok(at)
    button = _widget(at, "button", "Keep this answer")
    assert button.disabled and button.help == services.READ_ONLY_PIN_REASON
    assert services.READ_ONLY_PIN_REASON in [i.value for i in at.info]
    with pytest.raises(InvalidInputError, match="read-only"):
        services.keep_answer(next(iter(services.served().databases.values())), "x", RUN_1)
    assert not pins_of(storage, "x")


def test_runs_with_recall_off_are_told_to_turn_it_on(demo: InMemoryStorage,
                                                      app: MakeApp) -> None:
    """The form said "Changing a recall setting turns recall on for runs that had it off"
    and the result then said those runs could not be tried because "how they were put
    together … is not recorded"; each run's line said "recall was off in this run"."""
    expected = what_if(demo, ["recall.threshold=0.2"])
    off = [r for r in expected.runs if r.status == "cannot"
           and "recall was off in this run" in (r.reason or "")]
    assert off
    at = app(WHATIF_PAGE, scope="all", **{"recall.threshold": "0.2"})
    _ok(at)
    shown = _shown(at)
    assert (f"{len(off)} past runs had recall off, so a recall setting changes nothing "
            "there: set Recall to On as well to try it on them") in shown, shown
    if len(off) == expected.count("cannot"):
        assert "is not recorded" not in shown
