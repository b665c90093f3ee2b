"""AppTest tests of the analysis pages — Compare runs, Counterfactual replay, Why
forgotten, Composition timeline, Demo story — on the demo scenarios (built with the
hashing embedder), the hand-made fixture and an empty database, with interactions."""

from __future__ import annotations

import base64
import itertools
import json
import re
import threading
import xml.etree.ElementTree as ET
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from app import services
from app.components import (
    COMPARE_PAGE,
    COUNTERFACTUAL_PAGE,
    STORY_PAGE,
    TIMELINE_PAGE,
    WHY_PAGE,
    counted,
)
from memory_core.analysis.timeline import composition_timeline
from memory_core.embedding.hashing import HashingEmbedder
from memory_core.errors import InvalidInputError
from memory_core.models.openai_chat import OpenAIChatModel
from memory_core.runs.runner import Agent, Runner
from memory_core.storage.duckdb import DuckDBStorage
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import AppendRow, Message, RunRecord
from sample_data import build as sample_build
from sample_data.build import EPOCH, DemoClock, play_scenario
from sample_data.scenarios.home import HOME
from sample_data.scenarios.support import SUPPORT
from tests.app.fixture_db import (
    FAILED_RUN,
    FAQ_RUNS,
    LOWER_RUN,
    LOWER_THRESHOLD,
    RUN_1,
    RUN_2,
    SCRIPT_TEXT,
    SIBLING,
    T0,
    THREAD,
    THRESHOLD,
    FixtureInfo,
    fixed_clock,
    make_memory,
    records,
    seq_of,
)
from tests.app.markdown import raw_html, shown_text, tables
from tests.app.test_pages import json_blocks
from tests.helpers import cf_records

MakeApp = Callable[..., AppTest]
Populated = tuple[InMemoryStorage, FixtureInfo]
PAGES = [COMPARE_PAGE, COUNTERFACTUAL_PAGE, WHY_PAGE, TIMELINE_PAGE, STORY_PAGE]
TITLES = {COMPARE_PAGE: "Compare runs", COUNTERFACTUAL_PAGE: "Counterfactual replay",
          WHY_PAGE: "Why forgotten", TIMELINE_PAGE: "Composition timeline",
          STORY_PAGE: "The assistant forgot the refund"}
# runs of the hashing-built demo whose behaviour the tests rely on
REPLAYABLE = "home-worktops"  # offline reader, 3 recalled messages it answers from
PLAYBACK = "support-1-t05"  # a history turn said by the scripted playback model
_names = itertools.count()
# the support story's settings, as the scenario (still being calibrated) defines them
BAR = SUPPORT.memory["recall"]["threshold"]
FIX = SUPPORT.profiles["lower-threshold"]["recall"]
CHANGED_SETTINGS = {k: (v, FIX[k]) for k, v in SUPPORT.memory["recall"].items()
                    if FIX.get(k) != v}


@pytest.fixture(autouse=True)
def no_demo_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the demo database at a file that does not exist (yet), so a real demo
    database in the checkout never leaks into a test."""
    path = tmp_path / "out" / "demo.duckdb"
    monkeypatch.setattr(services, "DEMO_DB", str(path))
    monkeypatch.setenv(services.DEMO_EMBEDDER_VAR, "hashing")
    return path


def _select(at: AppTest, label: str) -> Any:
    return next(w for w in at.selectbox if w.label == label)


def _button(at: AppTest, label: str) -> Any:
    return next(b for b in at.button if b.label == label)


def _multiselect(at: AppTest, label: str) -> Any:
    return next(w for w in at.multiselect if w.label.startswith(label))


def shown(value: str) -> str:
    """What a Markdown element displays: its source without the backslash escapes the
    pages put on stored text and URL parameters."""
    unfenced = re.sub(r"(?<!\\)`+", "", value)  # code spans hold URL-like runs
    return re.sub(r"\\(.)", r"\1", unfenced)


def _md(at: AppTest) -> list[str]:
    return [m.value for m in at.markdown]


def _texts(at: AppTest) -> list[str]:
    return [t.value for t in at.text]


def _captions(at: AppTest) -> str:
    # captions are Markdown: compare their shown text (escapes and code fences dropped)
    return "\n".join(shown_text(c.value) for c in at.caption)


def timeline_picture(at: AppTest) -> ET.Element | None:
    """The timeline page's picture (an SVG image, not a chart library), parsed."""
    for el in at.get("image"):
        url = el.proto.imgs[0].url
        if url.startswith("data:image/svg+xml;base64,"):
            return ET.fromstring(base64.b64decode(url.split(",", 1)[1]))
    return None


def _svg(at: AppTest, tag: str, attr: str) -> list[ET.Element]:
    picture = timeline_picture(at)
    assert picture is not None, "no timeline picture"
    return [e for e in picture.iter(f"{{http://www.w3.org/2000/svg}}{tag}") if attr in e.attrib]


def _charts(at: AppTest) -> list[dict[str, Any]]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def _lifeline_table(at: AppTest) -> Any:
    return next(t.frame() for t in tables(at) if "fate" in t.columns)


STRETCH = re.compile(r"- runs? (\d+)(?:–(\d+) \(\d+\))?: :(?:green|red)-badge\[([^\]]+)\]"
                     r"(.*)")


def _lifeline_stretches(at: AppTest) -> list[tuple[int, int, str, bool]]:
    """The Why page's lifeline, as text: (first run, last run, fate, holds this run)
    for each stretch of runs of one fate."""
    out = []
    for m in _md(at):
        for line in m.splitlines():
            if found := STRETCH.fullmatch(line):
                first, last, fate, rest = found.groups()
                out.append((int(first), int(last or first), fate, "this run is run" in rest))
    return out


def _no_raw_html(at: AppTest) -> None:
    assert not raw_html(at)
    for md in (*at.markdown, *at.caption, *at.info):
        assert "<script>" not in md.value


def _ok(at: AppTest) -> None:
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]


# -- smoke: every page on the fixture, the demo scenarios and an empty database --------
@pytest.mark.parametrize("page", PAGES)
def test_page_renders_on_the_fixture(populated: Populated, app: MakeApp, page: str) -> None:
    at = app(page)
    _ok(at)
    assert at.title[0].value == TITLES[page]
    _no_raw_html(at)


@pytest.mark.parametrize("page", PAGES)
def test_page_renders_on_the_demo(demo: InMemoryStorage, app: MakeApp, page: str) -> None:
    at = app(page)
    _ok(at)
    assert at.title[0].value == TITLES[page]


@pytest.mark.parametrize(("page", "message"), [
    (COMPARE_PAGE, "Comparing needs at least two runs; this database has 0."),
    (COUNTERFACTUAL_PAGE, "No runs in this database yet."),
    (WHY_PAGE, "No runs in this database yet."),
    (TIMELINE_PAGE, "No thread has runs in this database yet."),
    (STORY_PAGE, "The story needs the demo database"),
])
def test_page_on_an_empty_database(empty_db: InMemoryStorage, app: MakeApp, page: str,
                                   message: str) -> None:
    at = app(page)
    _ok(at)
    assert shown(at.info[0].value).startswith(message)


# -- compare runs ----------------------------------------------------------------------
def test_picking_two_runs_shows_what_entered_and_left_with_reasons(demo: InMemoryStorage,
                                                                  app: MakeApp) -> None:
    at = app(COMPARE_PAGE)
    _select(at, "Thread").set_value("budget-review").run()
    _select(at, "Run A").set_value("home-cabinets").run()
    _select(at, "Run B").set_value("home-tiles-nofilter").run()
    _ok(at)
    assert at.query_params["a"] == "home-cabinets"
    assert at.query_params["b"] == "home-tiles-nofilter"
    badges = " ".join(_md(at))
    assert "green-badge[:material/add_circle: entered]" in badges
    assert "red-badge[:material/remove_circle: left]" in badges
    caps = _captions(at)
    # a recalled message fell under the bar; a new one came in above it
    assert "score moved across the threshold: 0.311 → 0.169 (bar 0.300)" in caps
    assert "new message, written after run A" in caps
    metrics = {m.label: m.value for m in at.metric}
    assert int(metrics["Entered"]) >= 1 and int(metrics["Left"]) >= 1
    changes = next(t.frame() for t in tables(at) if "change" in t.columns)
    assert set(changes["change"]) <= {"entered", "left", "moved"}
    assert "score moved across the threshold" in " ".join(changes["reason"])
    assert len(_charts(at)) == 0  # token deltas: the table only, no chart


def test_compare_from_url_shows_changed_settings_and_answers(demo: InMemoryStorage,
                                                              app: MakeApp) -> None:
    at = app(COMPARE_PAGE, a="support-3-forgot", b="support-3-fixed")
    _ok(at)
    assert _select(at, "Run A").value == "support-3-forgot"
    assert _select(at, "Run B").value == "support-3-fixed"
    settings = json_blocks(at)[0]  # JSON, shown as JSON
    assert settings == {k: {"run A": a, "run B": b} for k, (a, b) in CHANGED_SETTINGS.items()}
    tokens = next(t.frame() for t in tables(at) if "delta" in t.columns)
    assert list(tokens["lane"])[:2] == ["Instructions", "Working memory"]


def test_compare_identical_compositions_and_same_run(populated: Populated,
                                                     app: MakeApp) -> None:
    storage, _ = populated
    first, second = FAQ_RUNS  # no recall and no window: the same prompt twice
    assert records(storage, first).prompt == records(storage, second).prompt
    at = app(COMPARE_PAGE, a=first, b=second)
    _ok(at)
    assert "The two prompts carried the same messages in the same lanes." in _texts(at)
    _select(at, "Run B").set_value(first).run()
    assert at.info[0].value == "Pick two different runs to compare."


def test_compare_unknown_run_in_url_is_a_clear_error(populated: Populated,
                                                     app: MakeApp) -> None:
    at = app(COMPARE_PAGE, a="ghost", b=RUN_2)
    assert not at.exception
    assert [shown(e.value) for e in at.error] == [
        f"Run 'ghost' not found in database '{next(iter(services.served().databases))}'."]
    assert all(w.label not in ("Run A", "Run B") for w in at.selectbox)  # no other run
    assert at.query_params["a"] == "ghost" and at.query_params["b"] == RUN_2


# -- counterfactual replay -------------------------------------------------------------
def test_subtracting_all_recalled_changes_the_answer(demo: InMemoryStorage,
                                                     app: MakeApp) -> None:
    at = app(COUNTERFACTUAL_PAGE, run=REPLAYABLE)
    _ok(at)
    assert at.title[0].value == "Counterfactual replay"  # not forwarded to the inspector
    at.radio[0].set_value("Subtract all recalled").run()
    _button(at, "Run counterfactual").click().run()
    _ok(at)
    assert "## Verdict: :orange-badge[:material/published_with_changes: changed]" in _md(at)
    texts = _texts(at)
    assert any(t.startswith("From our conversation:") for t in texts)  # original answer
    assert any(t.startswith("I don't know") for t in texts)  # the new one
    past = tables(at)[-1].frame()
    assert "without all recalled messages" in list(past["change"])
    assert cf_records(demo, REPLAYABLE)  # journaled


def test_read_only_workbench_writes_no_counterfactual(demo: InMemoryStorage, app: MakeApp,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(services.READ_ONLY_VAR, "1")
    before = cf_records(demo, REPLAYABLE)
    at = app(COUNTERFACTUAL_PAGE, run=REPLAYABLE)
    _ok(at)
    at.radio[0].set_value("Subtract all recalled").run()
    for label in ("Run counterfactual", "Run attribution"):
        button = _button(at, label)
        assert button.disabled and button.help == services.READ_ONLY_REASON
    assert services.READ_ONLY_REASON in [i.value for i in at.info]
    assert any("Read-only" in c.value for c in at.sidebar.caption)
    with pytest.raises(InvalidInputError, match="read-only"):
        services.run_counterfactual(next(iter(services.served().databases.values())), REPLAYABLE,
                                    subtract="all")
    assert cf_records(demo, REPLAYABLE) == before


def test_subtracting_chosen_items_and_putting_back(demo: InMemoryStorage,
                                                   app: MakeApp) -> None:
    at = app(COUNTERFACTUAL_PAGE, run=REPLAYABLE)
    at.radio[0].set_value("Subtract chosen recalled").run()
    chosen = _multiselect(at, "Recalled messages to subtract")
    first = chosen.options[0]
    chosen.select(first).run()
    put_back = _multiselect(at, "Put back")
    put_back.select(put_back.options[0]).run()
    _button(at, "Run counterfactual").click().run()
    _ok(at)
    verdict = next(m for m in _md(at) if m.startswith("## Verdict"))
    assert any(v in verdict for v in ("changed", "unchanged", "inconclusive"))
    caps = _captions(at)
    ref = first.split(" · ")[0].replace(" #", "#")
    assert f"without {ref}; with " in caps and "put back" in caps


def test_nothing_chosen_asks_for_a_choice(demo: InMemoryStorage, app: MakeApp) -> None:
    at = app(COUNTERFACTUAL_PAGE, run=REPLAYABLE)
    _button(at, "Run counterfactual").click().run()
    _ok(at)
    assert at.warning[0].value == "Choose something to subtract or put back first."


def test_attribution_shows_a_bar_per_message_the_run_was_given(demo: InMemoryStorage,
                                                               app: MakeApp) -> None:
    at = app(COUNTERFACTUAL_PAGE, run=REPLAYABLE)
    _button(at, "Run attribution").click().run()
    _ok(at)
    chart = next(c for c in _charts(at) if c["data"][0]["type"] == "bar")
    prompt = demo.runs.get(f"{REPLAYABLE}:prompt")
    assert prompt is not None
    given = {(i["thread_id"], i["seq"]) for i in prompt["items"]
             if i["lane"] != "input" and i.get("thread_id") is not None}
    assert len(chart["data"][0]["y"]) == len(given) == 7  # 3 recalled, 4 recent
    table = next(t.frame() for t in tables(at) if "effect" in t.columns)
    assert (table["changed"] == "yes").any()  # the answer depended on at least one of them
    # effects and similarities read as every score does: 3 decimals
    past = tables(at)[-1].frame()
    for cell in table["effect"]:
        assert re.fullmatch(r"\d\.\d{3}", cell), cell
    for cell in past["judged against"]:
        assert re.search(r" · similarity \d\.\d{3} · by ", cell), cell


def test_a_scripted_run_cannot_be_replayed_and_says_so(demo: InMemoryStorage,
                                                       app: MakeApp) -> None:
    at = app(COUNTERFACTUAL_PAGE, run=PLAYBACK)
    _multiselect(at, "Whole lanes").set_value(["recent"]).run()
    assert not at.exception
    assert "'scripted-playback' is a scripted model that cannot be rebuilt" in \
        shown(at.warning[0].value)
    assert _button(at, "Run counterfactual").disabled
    # the offline reader is the explicit alternative
    next(r for r in at.radio if r.label == "Model to re-ask").set_value("reader").run()
    assert not at.warning and not _button(at, "Run counterfactual").disabled
    _button(at, "Run counterfactual").click().run()
    _ok(at)
    assert any(m.startswith("## Verdict:") for m in _md(at))


def _openai_run(storage: InMemoryStorage, run_id: str) -> str:
    """A real run of RUN_1's question answered by OpenAIChatModel from a loopback server
    that is stopped again before returning; returns the server's (now dead) base URL."""
    body = json.dumps({"id": "x", "model": "test-model", "choices": [{
        "index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": "We agreed to refund order A-17."}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5}}).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    serving = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                               daemon=True)
    serving.start()
    try:
        clock = fixed_clock(T0 + timedelta(days=1))
        model = OpenAIChatModel(base_url=url, model="test-model", api_key="k", timeout=5.0)
        Runner(storage, {"support": Agent("support", "You are a support agent.", model)},
               memory=make_memory(storage, clock), clock=clock).run(
            "support", run_id=run_id, thread_id=THREAD, resource_id="user-42",
            prompt=records(storage, RUN_1).memctx.query)  # type: ignore[union-attr]
    finally:
        httpd.shutdown()
        httpd.server_close()
        serving.join()
    return url


def test_a_model_server_that_is_down_is_a_clear_error(populated: Populated, app: MakeApp,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    storage, _ = populated
    rid = "run-openai"
    url = _openai_run(storage, rid)  # recorded by the real client, server gone since
    monkeypatch.setenv("MEMWB_OPENAI_BASE_URL", url)
    at = app(COUNTERFACTUAL_PAGE, run=rid)
    at.radio[0].set_value("Subtract all recalled").run()
    _button(at, "Run counterfactual").click().run()
    assert not at.exception
    error = shown(at.error[0].value)
    assert error.startswith("The counterfactual could not run:")
    assert f"connection refused by {url}" in error


def test_counterfactual_on_a_read_only_duckdb_file_writes_the_journal(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, app: MakeApp) -> None:
    path = tmp_path / "demo.duckdb"
    clock = DemoClock()
    storage = DuckDBStorage(str(path), clock=clock)
    with storage.session():  # only the scenario of the replayed run, to keep it quick
        play_scenario(storage, HOME, HashingEmbedder(64), clock, lambda _m: None, EPOCH)
    storage.close()
    monkeypatch.setenv(services.ENV_VAR, str(path))
    at = app(COUNTERFACTUAL_PAGE, run=REPLAYABLE)
    at.radio[0].set_value("Subtract all recalled").run()
    _button(at, "Run counterfactual").click().run()
    _ok(at)
    assert any(m.startswith("## Verdict: :orange-badge") for m in _md(at))
    # the page's own storage stays read-only; the write went through a writer handle
    assert services.get_services(str(path)).storage.read_only  # type: ignore[attr-defined]
    assert "without all recalled messages" in tables(at)[-1]["change"]
    reader = DuckDBStorage(str(path), read_only=True)
    try:
        assert len(cf_records(reader, REPLAYABLE)) == 1
    finally:
        reader.close()


# -- why forgotten ---------------------------------------------------------------------
def _fates(storage: InMemoryStorage) -> list[tuple[int, str, bool]]:
    """(seq, fate, given to the model) of one recalled, one dropped and one recent
    message of RUN_1, read from its provenance record."""
    memctx = records(storage, RUN_1).memctx
    assert memctx is not None
    hit = next(r.seq for r in memctx.recalled if r.origin == "hit")
    return [(hit, "recalled", True), (memctx.dropped[0].seq, "dropped", False),
            (memctx.recent[0].seq, "recent", True)]


@pytest.mark.parametrize("which", [0, 1, 2])
def test_picking_a_message_shows_its_fate(populated: Populated, app: MakeApp,
                                          which: int) -> None:
    storage, _ = populated
    seq, fate, given = _fates(storage)[which]
    at = app(WHY_PAGE, run=RUN_1)
    _select(at, "Message").set_value((THREAD, seq)).run()
    _ok(at)
    colour = "green" if given else "red"
    assert any(m.startswith(f"## :{colour}-badge[") and m.endswith(f" {fate}]")
               for m in _md(at))
    # the URL reproduces the pick (the page's first message needs no thread/seq in it)
    shared = app(WHY_PAGE, **{k: at.query_params[k] for k in at.query_params})
    assert _select(shared, "Message").value == (THREAD, seq)
    # one row per run of the thread; RUN_1's is this fate, and the lifeline's stretches
    # (text, oldest first) cover every run once, RUN_1 marked in its fate's stretch
    runs = storage.runs.list_runs(thread_id=THREAD)
    rows = _lifeline_table(at)
    assert list(rows["run"]) == [r.run_id for r in runs]
    assert rows[rows["run"] == RUN_1].iloc[0]["fate"] == fate
    stretches = _lifeline_stretches(at)
    assert sum(last - first + 1 for first, last, _, _ in stretches) == len(runs)
    assert [f for *_, f, this in stretches if this] == [fate]
    _no_raw_html(at)


def test_stored_script_is_shown_literally(populated: Populated, app: MakeApp) -> None:
    seq = seq_of(populated[0], THREAD, SCRIPT_TEXT)
    at = app(WHY_PAGE, run=RUN_1, thread=THREAD, seq=str(seq))
    _ok(at)
    assert _select(at, "Message").value == (THREAD, seq)
    assert SCRIPT_TEXT in _texts(at)
    _no_raw_html(at)


def test_typing_a_phrase_explains_the_forgotten_refund(demo: InMemoryStorage,
                                                       app: MakeApp) -> None:
    at = app(WHY_PAGE, run="support-3-forgot")
    at.radio[0].set_value("Type a phrase").run()
    at.text_input[0].input("refund of €240").run()
    _ok(at)
    # with the hashing embedder the refund scores far below the bar
    assert "## :red-badge[:material/block: below-threshold]" in _md(at)
    infos = [i.value.replace("\\", "") for i in at.info]
    assert infos[0].startswith("“refund of €240” appears word for word in 1 stored message")
    assert f"below the bar of {BAR:.3f}" in infos[1]
    assert at.query_params["q"] == "refund of €240"
    evidence = json_blocks(at)[0]
    assert {"score", "threshold", "query"} <= set(evidence)
    # the refund sits in support-1; its lifeline follows the runs of support-3
    assert "support-1 #17 · assistant" in _captions(at)
    ticks = list(_lifeline_table(at)["run"])
    assert len(ticks) == 14 and all(t.startswith("support-3") for t in ticks)
    assert "support-3-forgot" in ticks
    assert sum(last - first + 1 for first, last, *_ in _lifeline_stretches(at)) == 14


def test_a_phrase_nobody_said_is_not_stored(demo: InMemoryStorage, app: MakeApp) -> None:
    at = app(WHY_PAGE, run="support-3-forgot", q="a purple elephant")
    _ok(at)
    assert "## :red-badge[:material/block: not-stored]" in _md(at)
    # said only after the exact text, the words and the meaning were all checked
    verdict = at.info[0].value.replace("\\", "")
    assert verdict.startswith("No stored message contains “a purple elephant”, and none of")
    assert "shares its words or comes close in meaning" in verdict
    assert len(_charts(at)) == 0


def test_a_phrase_sharing_one_word_of_three_is_not_the_message_it_shares(
        demo: InMemoryStorage, app: MakeApp) -> None:
    # compared by words alone (the demo's hashing embedder), "refund" of "refund purple
    # elephants" does not make the refund message the phrase: the verdict is not-stored
    at = app(WHY_PAGE, run="support-3-forgot", q="refund purple elephants")
    _ok(at)
    verdict = at.info[0].value.replace("\\", "")
    assert "none shares most of its words" in verdict and "“refund”" in verdict
    assert "#### Nearest messages, none of them the phrase" in _md(at)
    assert "## :red-badge[:material/block: not-stored]" in _md(at)
    radio = next(r for r in at.radio if r.label == "Explain in detail")
    assert radio.value == 0 and shown(radio.options[0]) == "the phrase (not stored)"
    # the page's verdict is the one `memwb why --text` gives, evidence and all
    from memory_core.analysis.forgotten import why_forgotten

    cli = why_forgotten(demo, "support-3-forgot", "refund purple elephants",
                        embed=HashingEmbedder())
    evidence = json.loads(at.json[0].value)
    assert evidence["nearest"] == cli.evidence["nearest"] and "searched" in evidence
    # a nearest message can still be explained, on a pick
    radio.set_value(1).run()
    _ok(at)
    assert "## :red-badge[:material/block: not-stored]" not in _md(at)


def test_words_of_the_phrase_find_the_stored_refund_with_its_fate(
        demo: InMemoryStorage, app: MakeApp) -> None:
    # "240 refund" is no substring of the refund message: it used to be "not-stored"
    at = app(WHY_PAGE, run="support-3-forgot", q="240 refund")
    _ok(at)
    md = _md(at)
    assert not any("not-stored" in m for m in md)
    infos = [i.value.replace("\\", "") for i in at.info]
    assert infos[0].startswith("No stored message contains “240 refund” word for word")
    caps = _captions(at)
    # the closest messages, each with its fate; the refund (both words) first
    assert "support-1 #17 · assistant · shares 240, refund · similarity to the phrase " in caps
    # each listed message carries its fate as a badge
    assert sum(1 for m in md if m.startswith(":red-badge[") or m.startswith(":green-badge[")
               ) == len(next(r for r in at.radio if r.label == "Explain in detail").options)
    assert "## :red-badge[:material/block: below-threshold]" in md
    assert "support-1 #17 · assistant" in caps.splitlines()
    # the refund's recorded preview was cut: it says so with an ellipsis
    cut = [t for t in _texts(at) if t.startswith("The refund of €240 for order A-1042")]
    assert cut and all(t.endswith("…") for t in cut)
    # the evidence's scores have 3 decimals, like every score shown
    score = json_blocks(at)[0]["score"]
    assert score == round(score, 3)
    radio = next(r for r in at.radio if r.label == "Explain in detail")
    assert radio.value == 0 and len(radio.options) >= 2
    # explaining another of the closest messages follows it
    radio.set_value(1).run()
    _ok(at)
    other = [c for c in _captions(at).splitlines() if c.count(" · ") == 1]
    assert other and other[-1] != "support-1 #17 · assistant"


# -- composition timeline --------------------------------------------------------------
def test_timeline_shows_stacked_lanes_and_marks_the_compaction(demo: InMemoryStorage,
                                                              app: MakeApp) -> None:
    at = app(TIMELINE_PAGE, thread="py311-migration")
    _ok(at)
    assert not _charts(at)  # a picture, no chart library
    lanes = _svg(at, "polygon", "data-lane")  # one stacked area a lane
    assert "observations" in [p.get("data-lane") for p in lanes]
    assert all(len(p.get("points", "").split()) == 2 * 40 for p in lanes)  # one point a run
    assert [ln.get("data-compaction") for ln in _svg(at, "line", "data-compaction")] == ["25"]
    assert any((t.text or "").startswith("compaction: ") for t in _svg(at, "text", "x"))
    assert {m.label: m.value for m in at.metric}["Compactions"] == "1"
    # the observations lane's tokens and the count of observations, told apart
    (runs,) = [t for t in tables(at) if "run" in t.columns]
    assert {"Observations", "observations made"} <= set(runs.columns), runs.columns
    # the compaction's run and its new observations, each id in the code font
    (point,) = composition_timeline(demo, "py311-migration").compactions
    new = point.new_observations
    (label,) = [el.proto.label for el in at.main.get("page_link")
                if el.proto.label.startswith("run ")]
    assert new and shown(label) == (
        f"run {point.run_id}: {counted(point.observation_count or 0, 'observation')},"
        " new: " + ", ".join(new))
    assert all(f"`{i}`" in label for i in (point.run_id, *new)), label  # code font
    _select(at, "Thread").set_value("support-3").run()
    _ok(at)
    assert at.query_params["thread"] == "support-3"
    assert _svg(at, "line", "data-compaction") == []
    # no run of support-3 had working memory, observations or a compaction: the table
    # leaves those columns out (it fits the page) and names them once
    (table,) = [t for t in tables(at) if "run" in t.columns]
    assert "Recalled" in table.columns and "Recent" in table.columns
    for gone in ("Working memory", "Observations", "observations made", "compaction",
                 "status"):
        assert gone not in table.columns, table.columns
    # every run completed, on one day: said once, the times alone in the table
    assert all(re.fullmatch(r"\d\d:\d\d:\d\d", t) for t in table["started"])
    assert "Every run completed." in _captions(at)
    assert re.search(r"Every run started on \d{4}-\d\d-\d\d\.", _captions(at))
    said = _captions(at)
    assert "Not shown, as no run here has any: working memory tokens, observations " \
        "tokens, " in said and "observations made, compactions." in said


def test_timeline_names_the_runs_it_cannot_plot(empty_db: InMemoryStorage,
                                                app: MakeApp) -> None:
    """Runs with no provenance record (started elsewhere, never composed here) are
    counted and named, the first eight of them; the composed runs are plotted."""
    from memory_core.composition.memory import AgentMemory
    from memory_core.models.scripted import ScriptedModel

    memory = AgentMemory(empty_db, embed=HashingEmbedder(16), recent_n=4)
    runner = Runner(empty_db, {"a": Agent("a", "Be brief.",
                                          ScriptedModel(["ok", "ok", "ok"]))}, memory=memory)
    for i in range(2):
        runner.run("a", run_id=f"composed-{i}", thread_id="t", prompt=f"question {i}")
    runner.run("a", run_id="solo-0", thread_id="solo", prompt="one question")
    start = empty_db.runs.require_run("composed-1").started_at
    for i in range(9):
        empty_db.runs.start_run(RunRecord(run_id=f"bare-{i}", agent="a", thread_id="t",
                                          status="completed",
                                          started_at=start + timedelta(seconds=i + 1)))
    at = app(TIMELINE_PAGE, thread="t")
    _ok(at)
    assert all(len(p.get("points", "").split()) == 4 for p in _svg(at, "polygon", "data-lane"))
    assert sorted(_select(at, "Thread").options) == ["solo (1 run)", "t (11 runs)"]
    caption = [c for c in _captions(at).splitlines() if c.startswith("Not plotted")]
    assert caption == ["Not plotted, having no provenance record: 9 runs ("
                       + ", ".join(f"bare-{i}" for i in range(8)) + ", …)"]
    # a thread of one run has no area to draw: its lanes are a stacked column
    _select(at, "Thread").set_value("solo").run()
    _ok(at)
    assert _svg(at, "rect", "data-lane") and not _svg(at, "polygon", "data-lane")


# -- demo story (the story itself: tests/app/test_story.py) ----------------------------
STEPS = ["1. What was said", "2. What the assistant answered",
         "3. What the assistant was given", "4. Why", "5. The proof", "6. The fix"]


@pytest.mark.slow
def test_story_builds_the_missing_demo_database(no_demo_file: Path, app: MakeApp,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sample_build, "SCENARIOS", [SUPPORT])  # the story's only
    monkeypatch.setenv(services.ENV_VAR, str(no_demo_file))  # served, not built yet
    at = app(STORY_PAGE)
    _button(at, "Build the demo database").click().run()
    _ok(at)
    assert no_demo_file.exists()
    assert [h.value for h in at.header] == STEPS


def test_story_never_builds_or_reads_a_database_that_is_not_served(
        empty_db: InMemoryStorage, no_demo_file: Path, app: MakeApp,
        monkeypatch: pytest.MonkeyPatch) -> None:
    at = app(STORY_PAGE)
    _ok(at)
    assert "none of the databases this workbench serves holds it" in shown(at.info[0].value)
    assert not [b for b in at.button if b.label == "Build the demo database"]
    assert not no_demo_file.exists()
    # served but read-only: no build either
    monkeypatch.setenv(services.ENV_VAR, str(no_demo_file))
    monkeypatch.setenv(services.READ_ONLY_VAR, "1")
    at = app(STORY_PAGE)
    assert not [b for b in at.button if b.label == "Build the demo database"]


def test_story_refuses_to_overwrite_a_served_file_that_is_not_a_demo(
        no_demo_file: Path, app: MakeApp, monkeypatch: pytest.MonkeyPatch) -> None:
    from memory_core.storage.duckdb import DuckDBStorage

    no_demo_file.parent.mkdir(parents=True)
    DuckDBStorage(str(no_demo_file)).close()  # ours, but no story in it
    before = no_demo_file.read_bytes()
    monkeypatch.setenv(services.ENV_VAR, str(no_demo_file))
    at = app(STORY_PAGE)
    _button(at, "Build the demo database").click().run()
    assert not at.exception
    assert "lacks the demo runs" in shown(at.error[0].value)
    assert no_demo_file.read_bytes() == before


def test_a_later_echo_of_the_phrase_does_not_hide_the_original(populated: Populated,
                                                               app: MakeApp) -> None:
    storage, _ = populated
    phrase = storage.memory.get_messages(SIBLING)[1].text()
    assert phrase
    # written in the run's own thread hours after RUN_1: RUN_1 could not have seen it;
    # the sibling thread's earlier message is the one the question is about
    storage.memory.append_messages(THREAD, [AppendRow(
        message=Message(role="assistant", content=f"You asked: {phrase}"),
        created_at=T0 + timedelta(hours=5))])
    at = app(WHY_PAGE, run=RUN_1, q=phrase)
    _ok(at)
    assert f"{SIBLING} #1 · user" in _captions(at)
    # the message explained is the original; the echo is only listed after it
    assert not any(m.startswith("## ") and m.endswith(" written-after]") for m in _md(at))
    radio = next(r for r in at.radio if r.label == "Explain in detail")
    assert shown(radio.options[0]) == f"{SIBLING} #1"


def test_a_failed_run_is_explained_not_raised(populated: Populated, app: MakeApp) -> None:
    storage, _ = populated
    # a run row without any journal (started by another program) is named, not raised
    storage.runs.start_run(RunRecord(run_id="bare", agent="support", thread_id=SIBLING,
                                     resource_id="user-42", started_at=T0 + timedelta(days=1)))
    # it failed at the model: the frozen prompt is there, the answer is not
    at = app(COUNTERFACTUAL_PAGE, run=FAILED_RUN)
    assert not at.exception and not at.error
    at = app(WHY_PAGE, run=FAILED_RUN)
    assert not at.exception and not at.error
    at = app(COUNTERFACTUAL_PAGE, run="bare")
    assert not at.exception and not at.error
    assert shown(at.warning[0].value).startswith("Run 'bare' has no frozen prompt to replay")
    at = app(WHY_PAGE, run="bare")
    assert not at.exception
    assert "no frozen prompt" in shown(at.error[0].value)


def test_a_lowered_bar_is_named_as_the_reason_a_message_entered(populated: Populated,
                                                                app: MakeApp) -> None:
    storage, _ = populated
    # LOWER_RUN asked RUN_1's question with the bar lowered: a near miss of RUN_1 that
    # scored under the old bar and over the new one was recalled
    before, after = records(storage, RUN_1).memctx, records(storage, LOWER_RUN).memctx
    assert before is not None and after is not None
    entered = next(r for r in after.recalled
                   if (r.thread_id, r.seq) not in {(b.thread_id, b.seq) for b in before.recalled})
    near = next(n for n in before.near_misses
                if (n.thread_id, n.seq) == (entered.thread_id, entered.seq))
    assert near.reason == "below-threshold" and LOWER_THRESHOLD <= near.score < THRESHOLD
    at = app(COMPARE_PAGE, a=RUN_1, b=LOWER_RUN)
    _ok(at)
    # the reason names the setting change: the bar moved past an unchanged score
    assert (f"recall threshold {THRESHOLD:.3f} → {LOWER_THRESHOLD:.3f} let it in: its "
            f"unchanged score {near.score:.3f} ended up across the threshold") in _captions(at)
    assert list(json_blocks(at)[0]) == ["threshold"]


def test_the_timeline_picture_shows_run_ids_literally() -> None:
    """Stored text in the SVG picture is escaped: an id with markup in it is text."""
    from app.timeline_svg import timeline_svg
    from memory_core.analysis.timeline import TimelinePoint
    from memory_core.provenance.record import LANES

    odd = "<b>run</b> & 'x'"
    points = [TimelinePoint(index=i, run_id=rid, started_at=datetime(2026, 1, 1, tzinfo=UTC),
                            status="completed", tokens={ln: 10 for ln in LANES},
                            total_tokens=10 * len(LANES), recalled_count=0, recent_count=1,
                            dropped_count=0, observation_count=0)
              for i, rid in enumerate(["plain", odd])]
    picture = ET.fromstring(timeline_svg(points, list(LANES), odd, [], "prompt tokens"))
    texts = [e.text for e in picture.iter() if e.text]
    assert f"this run: {odd}" in texts and odd in texts
    assert not [e for e in picture.iter() if e.tag.endswith("}b")]


def test_the_timeline_picture_keeps_its_edge_labels_inside() -> None:
    """The run labels were centred on their runs: the last one ran past the picture's
    right edge ("imp-3c4838b" of a longer id). Each label stays inside the picture."""
    from app.timeline_svg import WIDTH, timeline_svg
    from memory_core.analysis.timeline import TimelinePoint
    from memory_core.provenance.record import LANES

    ids = [f"imp-3c4838b1e2-{i:02d}" for i in range(3)]
    points = [TimelinePoint(index=i, run_id=rid, started_at=datetime(2026, 1, 1, tzinfo=UTC),
                            status="completed", tokens={ln: 10 for ln in LANES},
                            total_tokens=10 * len(LANES), recalled_count=0, recent_count=1,
                            dropped_count=0, observation_count=0)
              for i, rid in enumerate(ids)]
    picture = ET.fromstring(timeline_svg(points, list(LANES), None, [], "prompt tokens"))
    labels = {e.text: e for e in picture.iter() if e.text in ids}
    assert set(labels) == set(ids)
    for rid, e in labels.items():
        x, half = float(e.get("x", "0")), len(rid) * 6.5
        anchor = e.get("text-anchor")
        left = x if anchor == "start" else x - half if anchor == "end" else x - half / 2
        assert 0 <= left and left + half <= WIDTH, (rid, anchor, x)
