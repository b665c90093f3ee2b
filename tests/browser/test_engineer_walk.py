"""The engineer's walkthrough of issue 15 in Chromium, on the real demo database (the
Runner with all-MiniLM-L6-v2 and the offline reader, as `make demo` builds it):

1. a shared inspector URL, and every link on the run inspector (its action bar, the
   thread link, each source link) opened and checked to land where it says;
2. the working-memory counterfactual on the trip story: take the plan away from the
   budget answer, re-ask, see the answer change;
3. why the refund was forgotten, asked by a phrase that is no substring of it, then the
   page's URL opened in a fresh browser context lands on the same run and phrase;
4. compare the forgetting run with the fixed one: the reasons name the settings changed;
5. leave-one-out attribution on the fixed run: the refund decision carried the answer;
6. the timeline of the long technical thread: its compaction marked and listed, and the
   compaction's run opened from there with its summary in the prompt.

Every page and context goes through tests/browser/server.py's network guard."""

from __future__ import annotations

import base64
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import expect

from memory_core.storage.duckdb import DuckDBStorage
from tests.browser.server import PAGE_TIMEOUT_MS, chromium, serve
from tests.browser.test_follow import _in_view, _selected, _settled, _wait_focused

pytestmark = [pytest.mark.browser, pytest.mark.model]
REPLAY_TIMEOUT_MS = 240_000  # replays load the embedding model on 2 busy cores
REFUND = "The refund of €240 for order A-1042 was approved"
TRIP_RUN, FORGOT, FIXED, TECH_RUN = ("trip-3-budget", "support-3-forgot", "support-3-fixed",
                                     "tech-staging-range")
PHRASE = "240 refund"  # the example: no stored message holds it word for word


@dataclass(frozen=True)
class Walk:
    base: str
    refund_seq: int  # the refund decision's seq in support-1
    compaction_run: str  # the run of py311-migration where the summary was written
    shots: Path
    fixed_given: int  # distinct stored messages the fixed run was given


@pytest.fixture(scope="module")
def walk(minilm_demo_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Walk]:
    tmp = tmp_path_factory.mktemp("engineer")
    db = tmp / "demo.duckdb"
    shutil.copyfile(minilm_demo_db, db)  # replays journal their results
    from memory_core.analysis.timeline import composition_timeline

    reader = DuckDBStorage(str(db), read_only=True)
    try:
        refund = next(m.seq for m in reader.memory.get_messages("support-1")
                      if REFUND in str(m.content))
        compactions = composition_timeline(reader, "py311-migration").compactions
        items = (reader.runs.get(f"{FIXED}:prompt") or {}).get("items", [])
        given = len({(i["thread_id"], i["seq"]) for i in items
                     if i["lane"] != "input" and i.get("thread_id") is not None})
    finally:
        reader.close()
    assert len(compactions) == 1
    with serve(["--db", str(db)], tmp) as base:
        yield Walk(base, refund, compactions[0].run_id, tmp, given)


def _query(page: Any) -> dict[str, str]:
    return {k: v[-1] for k, v in parse_qs(urlparse(page.url).query).items()}


def _main_links(page: Any) -> list[tuple[str, str]]:
    """(label, href) of every page link in the page's main area, hidden tabs included."""
    links: list[list[str]] = page.evaluate("""() => [...document.querySelectorAll(
        '[data-testid="stMainBlockContainer"] a[data-testid="stPageLink-NavLink"]')]
        .map(a => [(a.querySelector('[data-testid="stMarkdownContainer"]') || a)
                   .textContent.trim(), a.getAttribute('href')])""")
    return list(dict.fromkeys((label, href) for label, href in links))  # each once


def _lane_links(page: Any) -> list[tuple[str, str]]:
    """``_main_links`` with each lane tab opened in turn (the inspector draws only the
    open lane), the first one left open."""
    tabs = page.get_by_test_id("stMainBlockContainer").get_by_role("tab")
    found = _main_links(page)
    for i in range(tabs.count()):
        tabs.nth(i).click()
        _settled(page)
        found += _main_links(page)
    if tabs.count():
        tabs.nth(0).click()
        _settled(page)
    return list(dict.fromkeys(found))


def _open(page: Any, url: str, heading: str) -> None:
    page.goto(url, timeout=PAGE_TIMEOUT_MS)
    page.get_by_role("heading", name=heading, exact=True).wait_for(timeout=PAGE_TIMEOUT_MS)


def _action(page: Any, label: str, heading: str) -> None:
    """Click one of the inspector's action-bar links and wait for its page."""
    page.get_by_test_id("stMainBlockContainer").get_by_role(
        "link", name=label, exact=True).click()
    page.get_by_role("heading", name=heading, exact=True).wait_for(timeout=PAGE_TIMEOUT_MS)


def _inspector(page: Any, base: str, run: str) -> None:
    _open(page, f"{base}/run?run={run}", "Run inspector")
    _selected(page, "Run", run)
    _settled(page)


def _from_inspector(page: Any, base: str, run: str, label: str, heading: str) -> None:
    """Open ``run`` in the inspector, follow its action-bar link ``label`` and wait for
    that page on the same run."""
    _inspector(page, base, run)
    _action(page, label, heading)
    _selected(page, {"Compare runs": "Run B", "Composition timeline": "Marked run"}.get(
        heading, "Run"), run)
    _settled(page)


def _check_lands(tab: Any, base: str, run: str, label: str, href: str) -> None:
    """Open one inspector link in ``tab`` (a fresh session) and check it lands on what
    its label says."""
    tab.goto(base + "/" + href.lstrip("/"), timeout=PAGE_TIMEOUT_MS)
    query = _query(tab)
    if m := re.fullmatch(r"source: (\S+) #(\d+)", label):
        tab.get_by_role("heading", name="Threads", exact=True).wait_for(
            timeout=PAGE_TIMEOUT_MS)
        card = _wait_focused(tab)
        assert f"st-key-msg-{m[2]}" in card["cls"].split() and _in_view(card), label
        assert (query["thread"], query["seq"]) == (m[1], m[2])
    elif m := re.fullmatch(r"observation \S+: source (\S+) #(\d+)–(\d+)", label):
        # an observation's source range: every message of it highlighted, the first
        # scrolled to
        tab.get_by_role("heading", name="Threads", exact=True).wait_for(
            timeout=PAGE_TIMEOUT_MS)
        card = _wait_focused(tab, count=int(m[3]) - int(m[2]) + 1)
        assert card["count"] == int(m[3]) - int(m[2]) + 1 and _in_view(card), label
        assert f"st-key-msg-{m[2]}" in card["cls"].split(), label
        assert (query["thread"], query["seq"], query["to"]) == (m[1], m[2], m[3])
    elif m := re.fullmatch(r"thread (\S+)", label):
        tab.get_by_role("heading", name="Threads", exact=True).wait_for(
            timeout=PAGE_TIMEOUT_MS)
        box = tab.locator('input[role="combobox"][aria-label="Thread"]')
        tab.wait_for_function("([el, t]) => el.value.startsWith(t + ' · ')",
                              arg=[box.element_handle(), m[1]], timeout=PAGE_TIMEOUT_MS)
    else:
        heading, widget = {"Counterfactual": ("Counterfactual replay", "Run"),
                           "Why forgotten": ("Why forgotten", "Run"),
                           "Compare with previous run": ("Compare runs", "Run B"),
                           "Timeline": ("Composition timeline", "Marked run")}[label]
        tab.get_by_role("heading", name=heading, exact=True).wait_for(
            timeout=PAGE_TIMEOUT_MS)
        _selected(tab, widget, run)
    _settled(tab)
    assert query["db"] == "demo", (label, tab.url)


def test_inspector_links_then_the_working_memory_counterfactual(walk: Walk) -> None:
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 3000})
        _inspector(page, walk.base, TRIP_RUN)
        page.screenshot(path=str(walk.shots / "inspector-trip.png"))
        links = _lane_links(page)
        labels = [label for label, _ in links]
        assert labels[:4] == ["Counterfactual", "Why forgotten", "Compare with previous run",
                              "Timeline"]
        assert "thread trip-3" in labels
        sources = [x for x in labels if x.startswith("source: ")]
        assert len(sources) == 4  # the recent messages of the trip's third conversation
        tab = browser.new_page(viewport={"width": 1400, "height": 1600})
        for label, href in links:
            _check_lands(tab, walk.base, TRIP_RUN, label, href)
        tab.close()

        # the plan (working memory) carried the budget: take it away and ask again
        _action(page, "Counterfactual", "Counterfactual replay")
        _selected(page, "Run", TRIP_RUN)
        _settled(page)
        page.get_by_role("combobox", name=re.compile("Whole lanes to subtract")).click()
        page.get_by_role("option", name="Working memory", exact=True).click()
        page.keyboard.press("Escape")
        page.get_by_role("button", name="Run counterfactual").click()
        page.get_by_text("Verdict:").wait_for(timeout=REPLAY_TIMEOUT_MS)
        _settled(page)
        body = page.locator("body").inner_text()
        assert re.search(r"Verdict:\W+\w+\s+changed", body), body[:3000]  # icon, verdict
        assert "without the working_memory lane(s)" in body
        new = body.split("New answer", 1)[1]
        assert "2000" not in new.split("Leave-one-out", 1)[0]  # the budget went with it
        page.screenshot(path=str(walk.shots / "counterfactual-trip.png"))


def test_why_by_phrase_shared_in_a_fresh_context_then_compare(walk: Walk) -> None:
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 3000})
        _from_inspector(page, walk.base, FORGOT, "Why forgotten", "Why forgotten")
        page.get_by_text("Type a phrase", exact=True).click()
        box = page.get_by_label("Phrase the model should have known")
        box.fill(PHRASE)
        box.press("Enter")
        page.get_by_role("heading", name="Closest messages").wait_for(
            timeout=REPLAY_TIMEOUT_MS)
        page.get_by_role("heading", name=re.compile("Lifeline of")).wait_for(
            timeout=PAGE_TIMEOUT_MS)
        _settled(page)
        body = page.locator("body").inner_text()
        assert "it was never said" not in body
        refund = f"support-1 #{walk.refund_seq} · assistant"
        assert refund in body, body[:4000]
        page.screenshot(path=str(walk.shots / "why-phrase.png"))
        shared = page.url
        assert _query(page)["run"] == FORGOT and _query(page)["q"] == PHRASE

        # the URL, opened by someone else (a fresh context): same page, run and phrase
        other = browser.new_context(viewport={"width": 1400, "height": 3000}).new_page()
        other.goto(shared, timeout=PAGE_TIMEOUT_MS)
        other.get_by_role("heading", name="Closest messages").wait_for(
            timeout=REPLAY_TIMEOUT_MS)
        _selected(other, "Run", FORGOT)
        _settled(other)
        # (the input may be drawn a moment after the heading: wait for its value)
        expect(other.get_by_label("Phrase the model should have known")).to_have_value(
            PHRASE, timeout=PAGE_TIMEOUT_MS)
        assert refund in other.locator("body").inner_text()
        assert _query(other) == _query(page)
        other.screenshot(path=str(walk.shots / "why-phrase-shared.png"))

        # the fixed run against the one that forgot: each entered message names the
        # setting changes that let it in (the refund: both, as it was kept out by both),
        # lanes carry their tokens, nothing reads None
        _from_inspector(page, walk.base, FIXED, "Compare with previous run", "Compare runs")
        _selected(page, "Run A", FORGOT)
        page.get_by_role("heading", name="Tokens by lane").wait_for(timeout=PAGE_TIMEOUT_MS)
        _settled(page)
        body = page.locator("body").inner_text()
        assert re.search(r"recall top_k 3 → 8 let it in \(rank \d+\)", body), body[:4000]
        assert re.search(r"recall threshold 0\.450 → 0\.400 and recall top_k 3 → 8 let it "
                         r"in: in run A it was below the threshold \(0\.434 < 0\.450\) and "
                         r"beyond top-k \(rank 6, top-k 3\)", body), body[:4000]
        assert re.search(r"Recalled \(5 · [1-9]\d* tokens\)", body)
        assert not re.search(r"\b(None|nan|null)\b", body)
        page.screenshot(path=str(walk.shots / "compare.png"), full_page=True)


def _attribution(page: Any) -> dict[str, str]:
    """The attribution chart's bars: label -> colour (orange: the answer changed)."""
    bars: dict[str, str] = page.evaluate("""() => {
        const plots = [...document.querySelectorAll('.js-plotly-plot')];
        const d = plots[plots.length - 1].data[0];
        return Object.fromEntries(d.y.map((y, i) => [y, d.marker.color[i]]));
    }""")
    return bars


def test_attribution_then_the_timeline_compaction(walk: Walk) -> None:
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 3000})
        _from_inspector(page, walk.base, FIXED, "Counterfactual", "Counterfactual replay")
        page.get_by_role("button", name="Run attribution").click()
        page.get_by_test_id("stMainBlockContainer").locator(".js-plotly-plot").first.wait_for(
            timeout=REPLAY_TIMEOUT_MS)
        _settled(page)
        bars = _attribution(page)
        # one replay without each stored message the run was given (recalled and recent)
        assert len(bars) == walk.fixed_given and len(bars) > 5
        # without the refund decision the answer changes; it carried the answer
        assert bars[f"support-1 #{walk.refund_seq}"] == "#e6550d", bars
        page.screenshot(path=str(walk.shots / "attribution.png"))

        # the long technical thread: the summary written at one run, marked and listed
        _from_inspector(page, walk.base, TECH_RUN, "Timeline", "Composition timeline")
        page.get_by_role("heading", name="Compactions").wait_for(timeout=PAGE_TIMEOUT_MS)
        _settled(page)
        # the picture is an SVG image (no chart library): its words are in its source
        src = page.get_by_test_id("stMain").locator("img[src^='data:image/svg+xml']").first
        src.wait_for(timeout=PAGE_TIMEOUT_MS)
        picture = base64.b64decode((src.get_attribute("src") or ",").split(",", 1)[1]).decode()
        assert picture.count(">compaction: 1 obs.<") == 1
        assert picture.count(f">this run: {TECH_RUN}<") == 1
        assert page.locator(".js-plotly-plot").count() == 0
        page.screenshot(path=str(walk.shots / "timeline.png"), full_page=True)
        page.get_by_role("link", name=re.compile(
            rf"^run {walk.compaction_run}: 1 observation,")).click()
        page.get_by_role("heading", name="Run inspector").wait_for(timeout=PAGE_TIMEOUT_MS)
        _selected(page, "Run", walk.compaction_run)
        _settled(page)
        page.get_by_role("tab").filter(has_text="Observations (1)").click()
        page.get_by_text("Observations", exact=False).first.wait_for(timeout=PAGE_TIMEOUT_MS)
        page.screenshot(path=str(walk.shots / "compaction-run.png"))
        # its links land too: the summary's source range, and (of its many recent
        # messages) the first and the last source
        links = _lane_links(page)
        observed = [x for x in links if x[0].startswith("observation ")]
        sources = [x for x in links if x[0].startswith("source: ")]
        assert len(observed) == 1 and len(sources) > 2
        tab = browser.new_page(viewport={"width": 1400, "height": 1600})
        for label, href in [*observed, sources[0], sources[-1]]:
            _check_lands(tab, walk.base, walk.compaction_run, label, href)
