"""The real workbench under ``streamlit run`` on a free loopback port, for the browser
tests, and Debian's chromium launched through playwright."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
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
def serve(app_args: list[str], workdir: Path) -> Iterator[str]:
    """Run the workbench with ``app_args`` (``--db …``, ``--read-only``); yields its base
    URL and stops it afterwards."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "MEMWB_DB"}
    env.update({"STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false", "PYTHONDONTWRITEBYTECODE": "1"})
    log = workdir / f"streamlit-{port}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", str(ROOT / "app" / "streamlit_app.py"),
             "--server.port", str(port), "--server.address", "127.0.0.1",
             "--server.headless", "true", "--server.fileWatcherType", "none",
             "--client.toolbarMode", "viewer", "--", *app_args],
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


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless Debian chromium (fails, never skips, when it is missing)."""
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium "
                    "(`make system-deps`, or apt-get install -y chromium) to run this test")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        # playwright gives every launch a fresh temporary profile (it refuses an explicit
        # --user-data-dir here), which is the fresh profile NOTES.md asks for
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
