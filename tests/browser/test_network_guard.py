"""The browser tests' network guard (tests/browser/server.py ``chromium()``): a request
for any address but loopback is refused and recorded, and fails the test that made it;
loopback traffic (the workbench itself) passes untouched."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.browser.server import PAGE_TIMEOUT_MS, chromium

pytestmark = pytest.mark.browser

EXTERNAL_PAGE = """<!doctype html><title>leaky</title>
<link rel="icon" href="https://favicon.example.org/favicon.ico">
<img id="px" src="http://pixels.example.com/track.png">
<p id="done">page</p>"""


class _Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        body = b"<!doctype html><title>local</title><p id='done'>local page</p>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@contextmanager
def _local_site() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_a_page_requesting_an_external_url_fails_the_test() -> None:
    with pytest.raises(pytest.fail.Exception) as failed:
        with chromium() as browser:
            page = browser.new_page()
            page.set_content(EXTERNAL_PAGE, timeout=PAGE_TIMEOUT_MS)
            page.wait_for_load_state("load", timeout=PAGE_TIMEOUT_MS)
            # refused, not fetched: the image never loaded
            assert page.evaluate("document.getElementById('px').naturalWidth") == 0
            log = browser.network
    message = str(failed.value)
    assert "leave loopback" in message
    assert "page requested http://pixels.example.com/track.png" in message
    # the proxy refused it: nothing left the machine
    assert any(r.startswith("GET http://pixels.example.com/track.png") for r in log.proxied)


def test_an_https_request_is_caught_before_any_connection() -> None:
    with pytest.raises(pytest.fail.Exception, match=r"CONNECT fonts\.example\.net:443"):
        with chromium() as browser:
            page = browser.new_page()
            page.set_content('<link rel="stylesheet" href="https://fonts.example.net/a.css">'
                             "<p>x</p>", timeout=PAGE_TIMEOUT_MS)
            page.wait_for_load_state("load", timeout=PAGE_TIMEOUT_MS)


def test_loopback_pages_pass_the_guard() -> None:
    with _local_site() as url, chromium() as browser:
        page = browser.new_page()
        page.goto(url, timeout=PAGE_TIMEOUT_MS)
        assert page.locator("#done").inner_text() == "local page"
        assert browser.network.page_requests == []
        assert browser.network.violations() == []


def test_a_failing_test_body_is_reported_as_itself_not_as_the_guard() -> None:
    with pytest.raises(ValueError, match="the test's own error"):
        with chromium() as browser:
            page = browser.new_page()
            page.set_content('<img src="http://pixels.example.com/x.png">',
                             timeout=PAGE_TIMEOUT_MS)
            raise ValueError("the test's own error")


def test_only_chromium_services_are_excused_and_pages_never_are() -> None:
    from tests.browser.server import EMPTY_CONNECTION, NetworkLog

    log = NetworkLog(proxied=["CONNECT update.googleapis.com:443 HTTP/1.1",
                              EMPTY_CONNECTION,  # a spare socket closed unused
                              "CONNECT accounts.google.com:443 HTTP/1.1",
                              "GET http://cdn.example.com/x.js HTTP/1.1",
                              "CONNECT fonts.gstatic.com:443 HTTP/1.1"],
                     page_requests=["https://accounts.google.com/o"])
    assert log.violations() == ["page requested https://accounts.google.com/o",
                                "GET http://cdn.example.com/x.js HTTP/1.1",
                                "CONNECT fonts.gstatic.com:443 HTTP/1.1"]


def test_every_browser_test_goes_through_the_guard() -> None:
    """Each test module here that drives a browser gets it from ``chromium()`` (so every
    context and page it opens is watched and every request off loopback is refused and
    fails it); none launches a browser, or opens a persistent context, of its own."""
    import ast
    from pathlib import Path

    here = Path(__file__).parent
    for path in sorted(here.glob("*.py")):
        if path.name == "server.py":
            continue
        source = path.read_text()
        tree = ast.parse(source)
        names = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)} | {
            n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                    and n.module == "playwright.sync_api" for a in n.names}
        assert not {"sync_playwright", "async_playwright", "launch",
                    "launch_persistent_context", "connect_over_cdp"} & (names | imported), (
            f"{path.name} starts a browser outside tests/browser/server.py chromium()")
        if {"new_page", "new_context"} & names:
            assert "chromium" in names, f"{path.name} opens pages without chromium()"


def test_pages_of_a_second_context_are_watched_too() -> None:
    """A page of a context the test opens itself (a fresh browser profile for a shared
    URL) is guarded like the first."""
    with pytest.raises(pytest.fail.Exception, match=r"pixels\.example\.com"):
        with chromium() as browser:
            browser.new_page().set_content("<p>first</p>", timeout=PAGE_TIMEOUT_MS)
            other = browser.new_context().new_page()
            other.set_content('<img src="http://pixels.example.com/second.png">',
                              timeout=PAGE_TIMEOUT_MS)
            other.wait_for_load_state("load", timeout=PAGE_TIMEOUT_MS)


def test_a_plain_streamlit_run_shows_no_deploy_button_and_stays_local(tmp_path: Path) -> None:
    """`streamlit run app/streamlit_app.py` from the project root, with none of our
    flags: the project's .streamlit/config.toml turns off the Deploy button and usage
    statistics, so the page is ours alone and requests nothing off loopback."""
    from tests.app.fixture_db import build_duckdb_file
    from tests.browser.server import serve

    db = tmp_path / "plain.duckdb"
    build_duckdb_file(str(db))
    with serve(["--db", str(db)], tmp_path, bare=True) as base, chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1400})
        page.goto(base, timeout=PAGE_TIMEOUT_MS)
        page.get_by_role("heading", name="Memory Workbench").wait_for(timeout=PAGE_TIMEOUT_MS)
        page.locator("[data-testid='stStatusWidget']").wait_for(state="detached",
                                                                timeout=PAGE_TIMEOUT_MS)
        page.wait_for_load_state("networkidle")
        assert page.get_by_role("button", name="Deploy").count() == 0
        assert page.get_by_test_id("stAppDeployButton").count() == 0
