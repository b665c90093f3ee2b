"""An erasure on a DuckDB file rewrites the file (DuckDB does not zero freed blocks) and
puts the copy in place of the old one. Between letting the old file go and putting the
copy in place, another process that opened the file used the old one: an agent's
append went into a file that was then replaced (lost), a reader read the old bytes. A
process now stays out until the copy is in place (``.rewriting`` beside the file, and
the file's inode checked after it opens)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from memory_core.storage import duckdb as duck
from memory_core.storage.duckdb import DuckDBStorage
from memory_core.types import AppendRow, Message

ROOT = Path(__file__).resolve().parents[1]

AGENT = """
import sys
from memory_core.storage.duckdb import DuckDBStorage
from memory_core.types import AppendRow, Message
s = DuckDBStorage(sys.argv[1], lock_timeout=60, commit_delay=0)
s.memory.append_messages("kept", [AppendRow(message=Message(content="from the agent"))])
s.close()
print("wrote", flush=True)
"""


def test_an_append_made_during_the_rewrite_lands_in_the_new_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "agent.duckdb"
    s = DuckDBStorage(path, linger=0)
    s.memory.create_thread("gone", resource_id="u")
    s.memory.create_thread("kept", resource_id="u")
    s.memory.append_messages("gone", [AppendRow(message=Message(content="erase me"))])
    s.memory.append_messages("kept", [AppendRow(message=Message(content="before"))])
    swap = duck._Database._swap_in
    agents: list[subprocess.Popen[str]] = []

    def swap_later(self: Any, fresh: str) -> None:
        # the old file is let go: another process asks for it now
        agent = subprocess.Popen([sys.executable, "-c", AGENT, str(path)], cwd=ROOT,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        agents.append(agent)
        deadline = time.monotonic() + 5
        while agent.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)  # it gets in now, or waits for the copy
        swap(self, fresh)

    monkeypatch.setattr(duck._Database, "_swap_in", swap_later)
    s.erase_thread("gone")
    out, err = agents[0].communicate(timeout=120)
    assert agents[0].returncode == 0 and out.strip() == "wrote", err[-3000:]
    assert [m.text() for m in s.memory.get_messages("kept")] == ["before", "from the agent"]
    assert s.memory.get_thread("gone") is None
    assert not (tmp_path / "agent.duckdb.rewriting").exists()
    s.close()
    assert b"erase me" not in path.read_bytes()


def test_a_stale_rewriting_flag_of_a_dead_process_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "agent.duckdb"
    DuckDBStorage(path).close()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (tmp_path / "agent.duckdb.rewriting").write_text(dead)
    s = DuckDBStorage(path, lock_timeout=5)
    s.memory.create_thread("t")
    assert s.memory.get_thread("t") is not None
    s.close()
