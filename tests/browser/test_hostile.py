"""A hostile database in Chromium: every stored string (ids, titles, message text, tool
names, metadata, model names, run errors) and every URL parameter carries Markdown links
and images, raw HTML, script tags, LaTeX and Streamlit directives. On every page the
strings must appear literally in the rendered DOM, no <img>/<a> may point at their
URLs, no script may run, and no request may go anywhere but the workbench itself.
A visitor cannot open a database the workbench was not started with."""

from __future__ import annotations

import base64
import xml.etree.ElementTree as ET  # noqa: N817 - our own picture, parsed to read it
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import pytest

from tests.browser import hostile_db as h
from tests.browser.server import PAGE_TIMEOUT_MS, chromium, serve

pytestmark = pytest.mark.browser

SECRET = "SECRET-MARKER-not-served"
EVIL_PARAM = (f"ghost ![g](http://{h.EVIL_HOST}/g.png) <img src=x onerror=alert(9)> "
              f"[l](http://{h.EVIL_HOST}/l) :red[g] $$g$$ <b>G</b>")
# tags the payloads would create if Markdown/HTML were rendered, with their text
RENDERED_TAGS = [("b", "B"), ("i", "i"), ("u", "u"), ("b", "m"), ("b", "G"), ("del", "s"),
                 ("strong", "bold"), ("em", "e"), ("b", "order")]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    tmp = tmp_path_factory.mktemp("hostile")
    db = tmp / "hostile.duckdb"
    h.build_hostile_file(str(db))
    secret = tmp / "secret.duckdb"
    h.build_secret_file(str(secret), SECRET)
    with serve(["--db", str(db)], tmp) as base:
        yield base, secret


def _url(base: str, page: str, **params: str) -> str:
    return f"{base}/{page}" + (f"?{urlencode(params)}" if params else "")


class Visit:
    """One browser page with its requests and dialogs recorded."""

    def __init__(self, browser: Any, base: str) -> None:
        self.base = base
        self.page = browser.new_page(viewport={"width": 1400, "height": 2400})
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("dialog", self._dialog)

    def _dialog(self, d: Any) -> None:  # an alert() would mean a script ran
        self.dialogs.append(d.message)
        d.dismiss()

    def open(self, url: str, *must_show: str) -> str:
        """Load ``url``, wait until every string in ``must_show`` is in the DOM's text,
        check that nothing was rendered from stored text, and return the text."""
        self.page.goto(url, timeout=PAGE_TIMEOUT_MS)
        self.page.locator("[data-testid='stAppViewContainer'] h1, "
                          "[data-testid='stAlert']").first.wait_for(timeout=PAGE_TIMEOUT_MS)
        for s in must_show:
            try:
                self.page.wait_for_function("s => document.body.textContent.includes(s)",
                                            arg=s, timeout=PAGE_TIMEOUT_MS)
            except Exception as e:  # noqa: BLE001 - fail with what was shown instead
                text = self.page.evaluate("document.body.textContent")
                pytest.fail(f"{s!r} is not shown literally on {url}: {e}\n{text[:3000]}")
        self.check_nothing_rendered(url)
        return str(self.page.evaluate("document.body.textContent"))

    def open_used_by(self, wanted: str) -> None:
        """Open the message cards' "Used by N runs" expanders (their links are built
        when opened) until ``wanted`` is shown, checking the page each time."""
        summaries = self.page.locator('[data-testid="stExpander"] summary', has_text="Used by")
        for i in range(summaries.count()):
            summaries.nth(i).click()
            try:
                self.page.wait_for_function("s => document.body.textContent.includes(s)",
                                            arg=wanted, timeout=15_000)
            except Exception:  # noqa: BLE001 - not in this card: the next one
                continue
            self.check_nothing_rendered("used-by expander")
            return
        pytest.fail(f"no 'Used by' expander shows {wanted!r}")

    def check_nothing_rendered(self, url: str) -> None:
        p = self.page
        srcs = p.eval_on_selector_all("img, image, source, iframe",
                                      "els => els.map(e => e.getAttribute('src') || "
                                      "e.getAttribute('href') || '')")
        assert not [s for s in srcs if "127.0.0." in s or s == "x"], (url, srcs)
        hrefs = p.eval_on_selector_all("a", "els => els.map(e => e.getAttribute('href') "
                                            "|| '')")
        # links to the workbench's own pages are relative (their query may quote ids)
        assert not [x for x in hrefs if x.startswith("//") or (
            urlsplit(x).netloc not in ("", urlsplit(self.base).netloc))], (url, hrefs)
        scripts = p.eval_on_selector_all("script", "els => els.map(e => e.textContent)")
        assert not [s for s in scripts if "alert(" in s], url
        assert p.locator(".katex").count() == 0, url
        for tag, text in RENDERED_TAGS:
            found = p.eval_on_selector_all(tag, "(els, t) => els.filter(e => "
                                                "e.textContent === t).length", text)
            assert found == 0, (url, tag, text)
        off = [r for r in self.requests
               if not r.startswith(("data:", "blob:")) and
               urlsplit(r).netloc != urlsplit(self.base).netloc]
        assert off == [], (url, off)
        assert self.dialogs == [], (url, self.dialogs)


    def hover(self, plot: int, wanted: str) -> str:
        """Move the mouse over chart ``plot`` until its hover label holds ``wanted``;
        returns that label's text (plotly renders hover labels from HTML)."""
        chart = self.page.locator(".js-plotly-plot").nth(plot)
        chart.wait_for(timeout=PAGE_TIMEOUT_MS)
        box = chart.bounding_box()
        assert box is not None
        seen = []
        for fx in (0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9):
            for fy in (0.3, 0.5, 0.7, 0.85):
                self.page.mouse.move(box["x"] + box["width"] * fx,
                                     box["y"] + box["height"] * fy)
                self.page.wait_for_timeout(100)
                text = chart.locator(".hoverlayer").text_content() or ""
                seen.append(text)
                if wanted in text:
                    self.check_nothing_rendered("hover")
                    return text
        pytest.fail(f"no hover label of chart {plot} shows {wanted!r}: {set(seen)}")


def _code_texts(page: Any) -> set[str]:
    return set(page.eval_on_selector_all("code", "els => els.map(e => e.textContent)"))


def test_stored_strings_are_literal_on_every_page(served: tuple[str, Path]) -> None:
    base, _ = served
    with chromium() as browser:
        v = Visit(browser, base)
        v.open(_url(base, "threads", thread=h.THREAD), h.THREAD, h.RESOURCE, h.PAYLOAD)
        v.open_used_by(f"used by run {h.RUN_A}")
        # ids are shown whole in the code font (a code span each)
        assert h.RUN_A in _code_texts(v.page)
        v.open(_url(base, "run", run=h.RUN_A), f"Run {h.RUN_A}", h.AGENT, h.MODEL,
               f"answer {h.PAYLOAD}", f"thread {h.THREAD}")
        assert {h.THREAD, h.RUN_A} <= _code_texts(v.page)  # backticks and all
        # the near-miss chart's hover labels name the candidates' threads
        assert f"{h.THREAD} #" in v.hover(0, h.THREAD)  # (the lanes are no chart)
        v.open(_url(base, "run", run=h.RUN_FAILED), f"Run {h.RUN_FAILED}", h.MODEL)
        v.open(_url(base, "compare", a=h.RUN_A, b=h.RUN_B), f"Run A · {h.RUN_A}",
               f"Run B · {h.RUN_B}", f"second answer {h.PAYLOAD}")
        v.open(_url(base, "counterfactual", run=h.RUN_A), f"inspect run {h.RUN_A}")
        v.open(_url(base, "why", run=h.RUN_A, q="refund code"), f"inspect run {h.RUN_A}",
               f"{h.THREAD} #0")
        v.open(_url(base, "why", run=h.RUN_A), f"inspect run {h.RUN_A}")
        text = v.open(_url(base, "timeline", thread=h.THREAD), f"open thread {h.THREAD}")
        # the picture's run labels are run ids: text in the SVG, never its markup
        img = v.page.get_by_test_id("stMain").locator("img[src^='data:image/svg+xml']")
        svg = ET.fromstring(base64.b64decode(
            (img.first.get_attribute("src") or ",").split(",", 1)[1]))
        labels = ["".join(e.itertext()) for e in svg.iter() if e.tag.endswith("text")]
        # the marked run (the newest) whole; the axis labels keep the ends of the ids
        assert f"this run: {h.RUN_FAILED}" in labels, labels
        assert any(len(label) > 12 and h.RUN_A.endswith(label) for label in labels), labels
        assert not [e.tag for e in svg.iter()
                    if e.tag.rpartition("}")[2] in ("image", "a", "script", "foreignObject")]
        assert "&lt;" not in text
        v.open(_url(base, "story"), "none of the databases")
        v.open(base + "/", "Memory Workbench", h.RESOURCE)  # the start page's threads


def test_url_parameters_are_literal_in_errors(served: tuple[str, Path]) -> None:
    base, _ = served
    with chromium() as browser:
        v = Visit(browser, base)
        for page, key in (("run", "run"), ("counterfactual", "run"), ("why", "run"),
                          ("compare", "a"), ("threads", "resource")):
            v.open(_url(base, page, **{key: EVIL_PARAM}), EVIL_PARAM)
        v.open(_url(base, "timeline", thread=EVIL_PARAM), EVIL_PARAM)
        v.open(_url(base, "threads", thread=h.THREAD, q=EVIL_PARAM), "0 messages found")
        v.open(_url(base, "why", run=h.RUN_A, q=EVIL_PARAM), EVIL_PARAM)
        v.open(_url(base, "run", db=EVIL_PARAM), f"Database {EVIL_PARAM!r} is not served")


def test_a_visitor_cannot_open_a_database_not_given_at_start(
        served: tuple[str, Path]) -> None:
    base, secret = served
    with chromium() as browser:
        v = Visit(browser, base)
        for wanted in (str(secret), f"duckdb://{secret}", "secret", "/etc/passwd",
                       "postgresql://127.0.0.1:1/x"):
            text = v.open(_url(base, "threads", db=wanted),
                          f"Database {wanted!r} is not served here")
            assert SECRET not in text and "secret-thread" not in text
        # the sidebar names the served database (the only one: no picker), and the URL
        # names it too
        text = v.open(_url(base, "threads"), h.PAYLOAD)
        assert "db=hostile" in v.page.url
        sidebar = v.page.locator("[data-testid='stSidebar']")
        assert "In use: hostile" in sidebar.inner_text()
        # nothing to type a path or URL into, nor to pick from (AppTest checks that a
        # picker, with several served, offers exactly the served names)
        assert sidebar.locator("[data-testid='stSelectbox']").count() == 0
        assert sidebar.locator("input").count() == 0
