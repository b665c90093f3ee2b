"""`memwb proxy` and `memwb collect` as a user runs them: real processes on a free
loopback port, stopped with Ctrl-C (SIGINT) at the end; bad flags are one `error:` line
and leave no database behind."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import openai
import pytest
from typer.testing import CliRunner

from memory_core.analysis.views import thread_summaries
from memory_core.cli import app
from memory_core.journal import load_run
from memory_core.storage.duckdb import DuckDBStorage
from tests.fake_provider.server import FakeProvider

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "fixtures" / "imports"
runner = CliRunner()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def _memwb(*args: str, stop: signal.Signals = signal.SIGINT
           ) -> Iterator[subprocess.Popen[str]]:
    """Run memwb in its own process until the block ends, then Ctrl-C it (or send it
    ``stop``)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "memory_core.cli", *args], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        port = int(args[args.index("--port") + 1])
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"memwb did not start: {proc.communicate()}") from None
                time.sleep(0.05)
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(stop)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_proxy_records_what_the_openai_sdk_sends(tmp_path: Path) -> None:
    db, port = str(tmp_path / "p.duckdb"), _free_port()
    with FakeProvider(api_key="sk-cli-0002") as fp, _memwb(
            "proxy", "--db", db, "--upstream", fp.base_url, "--port", str(port)) as proc:
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1",
                               api_key="sk-cli-0002", max_retries=0)
        msgs = [{"role": "user", "content": "Note: the boat leaves at 9. When does it leave?"}]
        plain = client.chat.completions.create(model="fake-model", messages=msgs,  # type: ignore[arg-type]
                                               temperature=0)
        streamed = "".join(c.choices[0].delta.content or "" for c in
                           client.chat.completions.create(model="fake-model", messages=msgs,  # type: ignore[arg-type]
                                                          temperature=0, stream=True)
                           if c.choices)
    out, err = proc.communicate()
    assert proc.returncode == 0, err
    assert "recorded 2 run(s); 0 record(s) not recorded" in err
    assert "sk-cli-0002" not in err + out
    s = DuckDBStorage(db)
    try:
        answers = [load_run(s, r.run_id).answer for r in s.runs.list_runs()]
        assert answers == [plain.choices[0].message.content, streamed]
        # the same question twice, answered alike: one conversation with two runs
        assert [t.run_count for t in thread_summaries(s, None)] == [2]
    finally:
        s.close()


def test_proxy_stopped_by_sigterm_finishes_its_writes_and_says_so(tmp_path: Path) -> None:
    """``kill``, ``timeout``, ``docker stop`` and systemd send SIGTERM: the proxy ended at
    once (status -15), without its summary. It stops as on Ctrl-C now."""
    db, port = str(tmp_path / "t.duckdb"), _free_port()
    with FakeProvider(api_key="sk-cli-0003") as fp, _memwb(
            "proxy", "--db", db, "--upstream", fp.base_url, "--port", str(port),
            stop=signal.SIGTERM) as proc:
        openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="sk-cli-0003",
                      max_retries=0).chat.completions.create(
            model="fake-model", messages=[{"role": "user", "content": "Hi"}])  # type: ignore[list-item]
    _, err = proc.communicate()
    assert proc.returncode == 0, err
    assert "recorded 1 run(s); 0 record(s) not recorded" in err


def test_collect_imports_otlp_json_as_it_arrives(tmp_path: Path) -> None:
    db, port = str(tmp_path / "c.duckdb"), _free_port()
    with _memwb("collect", "--db", db, "--port", str(port), "--settle", "0.5") as proc:
        req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/traces",
                                     data=(FIX / "otel_genai.json").read_bytes(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            assert json.loads(resp.read()) == {}
        # the run is there while the collector still runs, once its trace has been quiet
        # for --settle seconds (the workbench sees it on refresh)
        deadline, runs = time.monotonic() + 20, []
        while not runs and time.monotonic() < deadline:
            time.sleep(0.2)
            s = DuckDBStorage(db)
            try:
                runs = s.runs.list_runs()
            finally:
                s.close()
        assert runs
    _, err = proc.communicate()
    assert proc.returncode == 0, err


@pytest.mark.parametrize(("args", "needle"), [
    (["proxy", "--upstream", "http://127.0.0.1:9/v1", "--port", "0"],
     "port must be an integer from 1 to 65535, got 0"),
    (["collect", "--port", "65536"], "port must be an integer from 1 to 65535, got 65536"),
    (["proxy", "--upstream", "localhost:8000"], "upstream must be an http(s) URL"),
    (["proxy", "--upstream", "http://k:secret@127.0.0.1/v1"], "must not carry credentials"),
    (["proxy", "--upstream", "http://127.0.0.1:9/v1 extra"], "must not contain spaces"),
    (["collect", "--embedder", "nope"], "unknown embedder 'nope'"),
])
def test_bad_flags_are_one_error_line_and_no_database(tmp_path: Path, args: list[str],
                                                      needle: str) -> None:
    db = tmp_path / "never.duckdb"
    result = runner.invoke(app, [*args, "--db", str(db)])
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], lines
    assert not db.exists()


def test_a_taken_port_is_named(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        db = tmp_path / "never.duckdb"
        result = runner.invoke(app, ["collect", "--db", str(db), "--port", str(port)])
    assert result.exit_code == 1
    assert result.stderr.strip() == (f"error: cannot listen on 127.0.0.1:{port}: "
                                     "Address already in use")
    assert not db.exists()
