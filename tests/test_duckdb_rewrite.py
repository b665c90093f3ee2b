"""An erasure on a DuckDB file rewrites the file (DuckDB does not zero freed blocks) and
puts the copy in place of the old one. Between letting the old file go and putting the
copy in place, another process that opened the file would use the old one: an agent's
append would go into a file that is then replaced (lost), a reader would read the old
bytes. A process stays out until the copy is in place (``<file>.rewriting`` names the
rewriting process; duckdb_file.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from memory_core.errors import StorageBusyError
from memory_core.lifecycle.erasure import erase_thread
from memory_core.storage.duckdb import DuckDBStorage
from memory_core.types import AppendRow, Message

ROOT = Path(__file__).resolve().parents[1]

# appends to "kept" one row at a time (each append opens the file, commits and lets it
# go) until the stop file exists, then three more; prints how many
AGENT = """
import sys
from pathlib import Path
from memory_core.storage.duckdb import DuckDBStorage
from memory_core.types import AppendRow, Message
s = DuckDBStorage(sys.argv[1], lock_timeout=120)
stop, n, after = Path(sys.argv[2]), 0, 0
while after < 3:
    if stop.exists():
        after += 1
    s.memory.append_messages("kept", [AppendRow(message=Message(content=f"agent-{n}"))])
    n += 1
    if n == 1:
        print("appending", flush=True)
s.close()
print(n, flush=True)
"""

GONE = ["gone-0", "gone-1", "gone-2"]


def _erased_text(tid: str, i: int) -> str:
    return f"erase me {tid} {i:04d} " + "secret " * 20


# An opener checks the marker after it connects; a rewriter that put its copy in place
# and removed the marker in between would leave it writing into the replaced file (its
# append lost, its WAL beside the new file), unless it sees the inode changed.
@pytest.mark.slow
def test_appends_of_another_process_during_and_after_rewrites_land_in_the_new_file(
        tmp_path: Path) -> None:
    """An agent process appends without pause while this process erases three threads
    (three rewrites, each with its moment between letting the old file go and putting
    the copy in place): every append the agent was told succeeded is in the file
    afterwards, in order, and no byte of the erased text is left."""
    path = tmp_path / "agent.duckdb"
    stop = tmp_path / "stop"
    s = DuckDBStorage(path)
    s.memory.create_thread("kept", resource_id="u")
    s.memory.append_messages("kept", [AppendRow(message=Message(content="before"))])
    for tid in GONE:  # enough rows that each rewrite takes a while
        s.memory.create_thread(tid, resource_id="u")
        s.memory.append_messages(tid, [AppendRow(message=Message(content=_erased_text(tid, i)))
                                       for i in range(2000)])
    agent = subprocess.Popen([sys.executable, "-c", AGENT, str(path), str(stop)], cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert agent.stdout is not None
        assert agent.stdout.readline().strip() == "appending", agent.stderr.read() \
            if agent.stderr else ""
        for tid in GONE:
            report = erase_thread(s, tid)
            assert report.messages == 2000
        stop.touch()
        out, err = agent.communicate(timeout=180)
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.communicate()
    assert agent.returncode == 0, err[-3000:]
    n = int(out.strip())
    kept = s.memory.get_messages("kept")
    assert [m.text() for m in kept] == ["before"] + [f"agent-{i}" for i in range(n)]
    assert [m.seq for m in kept] == list(range(n + 1))
    assert all(s.memory.get_thread(tid) is None for tid in GONE)
    assert not (tmp_path / "agent.duckdb.rewriting").exists()
    s.close()
    print(f"the agent appended {n} rows across the three rewrites")
    for f in (path, Path(f"{path}.wal")):
        if f.exists():
            assert b"erase me" not in f.read_bytes() and b"secret" not in f.read_bytes()


def test_an_append_after_the_rewrite_lands_in_the_new_file(tmp_path: Path) -> None:
    path = tmp_path / "agent.duckdb"
    stop = tmp_path / "stop"
    stop.touch()  # three appends, then done
    s = DuckDBStorage(path)
    s.memory.create_thread("gone", resource_id="u")
    s.memory.create_thread("kept", resource_id="u")
    s.memory.append_messages("gone", [AppendRow(message=Message(content="erase me"))])
    s.memory.append_messages("kept", [AppendRow(message=Message(content="before"))])
    erase_thread(s, "gone")
    s.close()
    agent = subprocess.run([sys.executable, "-c", AGENT, str(path), str(stop)], cwd=ROOT,
                           capture_output=True, text=True, timeout=120)
    assert agent.returncode == 0, agent.stderr[-3000:]
    assert agent.stdout.split() == ["appending", "3"]
    r = DuckDBStorage(path, read_only=True)
    assert [m.text() for m in r.memory.get_messages("kept")] == \
        ["before", "agent-0", "agent-1", "agent-2"]
    assert r.memory.get_thread("gone") is None
    r.close()
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


def test_a_live_rewriters_flag_keeps_openers_out_until_it_is_gone(tmp_path: Path) -> None:
    """While a live process's pid is in ``<file>.rewriting`` (it is putting a copy in
    place), an opener waits for it, and says so when its lock_timeout runs out."""
    path = tmp_path / "agent.duckdb"
    s = DuckDBStorage(path)
    s.memory.create_thread("t")
    s.close()
    rewriter = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                                stdin=subprocess.PIPE, text=True)
    flag = tmp_path / "agent.duckdb.rewriting"
    try:
        flag.write_text(str(rewriter.pid))
        with pytest.raises(StorageBusyError, match=rf"agent.duckdb.*process {rewriter.pid} "
                                                   "is putting a rewritten copy"):
            DuckDBStorage(path, read_only=True, lock_timeout=0.3)
    finally:
        rewriter.communicate("")
    os.remove(flag)
    r = DuckDBStorage(path, read_only=True, lock_timeout=5)
    assert r.memory.get_thread("t") is not None
    r.close()


SECRET = "gate code QX-4471-OSPREY"
KILLED_BEFORE_REWRITE = """
import os, signal, sys
from memory_core.storage import duckdb_file
from memory_core.storage.duckdb import DuckDBStorage
from memory_core.lifecycle.erasure import erase_thread

def die(self, op):  # the erasure has committed; the process dies before the rewrite
    os.kill(os.getpid(), signal.SIGKILL)

duckdb_file.HeldFile.rewrite = die
erase_thread(DuckDBStorage(sys.argv[1]), "secret")
"""


def test_a_crash_between_the_erasure_and_the_rewrite_is_finished_at_the_next_open(
        tmp_path: Path) -> None:
    """DuckDB keeps freed blocks: the erased text stays in the file's bytes until the
    file is rewritten. A process killed after the erasure committed, before the rewrite,
    left it there, and erasing again said the thread does not exist. The next writable
    storage on the file now finishes the rewrite."""
    path = tmp_path / "e.duckdb"
    s = DuckDBStorage(path)
    s.memory.create_thread("secret")
    s.memory.append_messages("secret", [AppendRow(message=Message(content=SECRET))])
    s.memory.create_thread("kept")
    s.memory.append_messages("kept", [AppendRow(message=Message(content="kept text"))])
    s.close()
    done = subprocess.run([sys.executable, "-c", KILLED_BEFORE_REWRITE, str(path)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == -9, done.stderr[-2000:]
    assert SECRET.encode() in path.read_bytes() + _wal(path)  # committed, not rewritten
    s = DuckDBStorage(path)
    assert s.memory.get_thread("secret") is None
    assert s.memory.get_messages("kept")[0].text() == "kept text"
    s.close()
    assert SECRET.encode() not in path.read_bytes() + _wal(path)
    assert not (tmp_path / "e.duckdb.erased").exists()


def _wal(path: Path) -> bytes:
    wal = Path(f"{path}.wal")
    return wal.read_bytes() if wal.exists() else b""
