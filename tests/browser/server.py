"""The real workbench under ``streamlit run`` on a free loopback port, for the browser
tests, and Debian's chromium launched through playwright."""

from __future__ import annotations

import os
import socket
import socketserver
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 90.0
PAGE_TIMEOUT_MS = 60_000


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_healthy(base: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"streamlit exited with {proc.returncode}:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(f"{base}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.3)
    pytest.fail(f"streamlit did not become healthy within {START_TIMEOUT:g}s:\n"
                f"{log.read_text()}")


@contextmanager
def serve(app_args: list[str], workdir: Path, *, script: Path | None = None,
          bare: bool = False) -> Iterator[str]:
    """Run the workbench with ``app_args`` (``--db …``, ``--read-only``); yields its base
    URL and stops it afterwards. ``script`` serves another Streamlit script instead (the
    page benchmark's empty page). ``bare``: as a plain ``streamlit run`` from the project
    root, with none of our settings on the command line or in the environment (the
    project's .streamlit/config.toml must then give them)."""
    port = free_port()
    env = {k: v for k, v in os.environ.items()
           if k != "MEMWB_DB" and not k.startswith("STREAMLIT_")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    ours = [] if bare else ["--server.address", "127.0.0.1", "--client.toolbarMode", "viewer",
                            "--browser.gatherUsageStats", "false"]
    log = workdir / f"streamlit-{port}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run",
             str(script or ROOT / "app" / "streamlit_app.py"),
             "--server.port", str(port), "--server.headless", "true",
             "--server.fileWatcherType", "none", *ours, "--", *app_args],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(base, proc, log)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class _RefusingProxy(socketserver.ThreadingTCPServer):
    """A loopback HTTP proxy that forwards nothing: it records the request line of
    every request sent to it (``GET http://host/…``, ``CONNECT host:443``) and answers
    403. Chromium sends it every request that is not for loopback (loopback bypasses a
    proxy by default), so what it records is exactly what would have left the machine."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        self.requests: list[str] = []
        self._lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _RefuseHandler)

    @property
    def address(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def record(self, line: str) -> None:
        with self._lock:
            self.requests.append(line)


class _RefuseHandler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        line = self.rfile.readline(8192).decode("latin-1").strip()
        while self.rfile.readline(8192).strip():  # the headers, unread otherwise
            pass
        assert isinstance(self.server, _RefusingProxy)
        self.server.record(line or EMPTY_CONNECTION)
        self.wfile.write(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n"
                         b"Connection: close\r\n\r\n")


@contextmanager
def network_guard() -> Iterator[_RefusingProxy]:
    """The refusing proxy, running until the block ends."""
    proxy = _RefusingProxy()
    thread = threading.Thread(target=proxy.serve_forever, daemon=True)
    thread.start()
    try:
        yield proxy
    finally:
        proxy.shutdown()
        proxy.server_close()
        thread.join(timeout=5)


# Chromium's own services (component updater, account sign-in, autofill's form
# signatures) call these whatever the flags (a --disable-features of ours would replace
# playwright's own list, so none is passed); the proxy refuses them like everything else, so they never leave the machine,
# but they are the browser's, not a page's, and do not fail a test. Any other host does,
# and so does every request a page makes for a non-loopback address, whatever its host.
# A connection to the proxy that sent no request line: Chromium opens spare sockets to
# its proxy ahead of need and closes them unused (CI saw one in a plain `streamlit run`
# test). It names no address and carried nothing, so it is recorded but is no violation;
# a request that goes on to leave is logged with its line, and pages' requests are
# watched on their own.
EMPTY_CONNECTION = "<connection closed before any request>"
BROWSER_SERVICE_HOSTS = frozenset({"update.googleapis.com", "accounts.google.com",
                                   "clients2.google.com", "content-autofill.googleapis.com"})
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})


def _proxied_host(line: str) -> str:
    """The host of a proxied request line: ``CONNECT h:443 …`` or ``GET http://h/… …``."""
    parts = line.split()
    target = parts[1] if len(parts) > 1 else ""
    if "://" in target:
        target = target.split("://", 1)[1].split("/", 1)[0]
    return target.rsplit(":", 1)[0] if target.count(":") == 1 else target


def is_external_url(url: str) -> bool:
    """A URL the page would fetch over the network from a non-loopback host (data:,
    blob:, about: and the like are local)."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return parts.scheme in ("http", "https", "ws", "wss") and (
        parts.hostname or "") not in LOOPBACK_HOSTS


@dataclass
class NetworkLog:
    """What the guard saw: requests refused by the proxy and pages' non-loopback
    requests."""

    proxied: list[str]
    page_requests: list[str] = field(default_factory=list)

    def violations(self) -> list[str]:
        from_pages = [f"page requested {u}" for u in self.page_requests]
        from_proxy = [line for line in self.proxied if line != EMPTY_CONNECTION
                      and _proxied_host(line) not in BROWSER_SERVICE_HOSTS]
        return from_pages + from_proxy


def external_requests_message(requests: list[str]) -> str:
    shown = "\n  ".join(requests[:20])
    return (f"{len(requests)} request(s) tried to leave loopback (refused by the test "
            f"proxy):\n  {shown}")


def _watch_pages(browser: Any, log: NetworkLog) -> None:
    """Record every non-loopback request of every context the test opens."""
    def watch(context: Any) -> Any:
        context.on("request", lambda r: log.page_requests.append(r.url)
                   if is_external_url(r.url) else None)
        return context

    new_context = browser.new_context

    def watched_context(*args: Any, **kwargs: Any) -> Any:
        return watch(new_context(*args, **kwargs))

    def watched_page(*args: Any, **kwargs: Any) -> Any:
        # a page of its own context: open the context first, so its first request is seen
        # (closed with the browser at the end of the block)
        return watched_context(*args, **kwargs).new_page()

    browser.new_context, browser.new_page = watched_context, watched_page


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless Debian chromium (fails, never skips, when it is missing).

    No request leaves loopback: every non-loopback request goes to a refusing proxy
    (loopback bypasses it), and every page request is watched. The block fails when a
    page asked for a non-loopback address, or anything but Chromium's own services
    reached the proxy (``browser.network`` is the log), so no browser test passes while
    a page reaches for the internet (a favicon, a font, telemetry)."""
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium "
                    "(`make system-deps`, or apt-get install -y chromium) to run this test")
    from playwright.sync_api import sync_playwright

    with network_guard() as proxy, sync_playwright() as p:
        # playwright gives every launch a fresh temporary profile (it refuses an explicit
        # --user-data-dir here), which is the fresh profile NOTES.md asks for. The proxy
        # is a plain flag, not playwright's proxy option, which would add <-loopback> and
        # send the workbench's own traffic through it too.
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            *CHROMIUM_ARGS, f"--proxy-server={proxy.address}"])
        log = NetworkLog(proxied=proxy.requests)
        browser.network = log  # type: ignore[attr-defined]
        _watch_pages(browser, log)
        try:
            yield browser
        finally:
            browser.close()
        if violations := log.violations():
            pytest.fail(external_requests_message(violations))
