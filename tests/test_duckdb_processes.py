"""DuckDB file shared by real processes (the protocol of duckdb_file.py): a writer
appends while a reader keeps opening the file read-only; writers appending to one thread
get dense seqs; a process holds the file only inside an operation or a session; a
session holds it against another process until that process asks, and lets it go at its
next operation; a holder that outstays lock_timeout yields StorageBusyError naming the
file."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from memory_core.errors import StorageBusyError
from memory_core.storage.duckdb import DuckDBStorage
from memory_core.types import AppendRow, Message
from tests.test_duckdb_file_lock import other_process_gets_it

ROOT = Path(__file__).resolve().parents[1]

WRITER = """
import os, sys, time
from memory_core.storage.duckdb import DuckDBStorage
from memory_core.types import AppendRow, Message
s = DuckDBStorage(sys.argv[1])
ready = time.monotonic() + 60  # the reader's first read: it reads while this appends
while time.monotonic() < ready and not os.path.exists(sys.argv[3]):
    time.sleep(0.01)
n, end = 0, time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    s.memory.append_messages("t1", [AppendRow(message=Message(content=f"m{n}"))])
    n += 1
s.close()
print(n)
"""

READER = """
import sys, time
from memory_core.storage.duckdb import DuckDBStorage
want_done = sys.argv[2]
reads, last = 0, -1
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    s = DuckDBStorage(sys.argv[1], read_only=True, lock_timeout=20)
    last = s.memory.count_messages("t1")
    s.close()
    reads += 1
    open(sys.argv[3], "a").close()  # the writer starts once the reader has read
    try:
        target = int(open(want_done).read())
    except (FileNotFoundError, ValueError):
        continue
    if last >= target:
        break
print(reads, last)
"""

HOLDER = """
import sys, time
from memory_core.storage.duckdb import DuckDBStorage
s = DuckDBStorage(sys.argv[1])
with s.session():
    s.memory.count_messages("t1")
    print("holding", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def spawn(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), *args], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.slow
def test_reader_process_reads_while_writer_process_appends(tmp_path: Path) -> None:
    db = tmp_path / "shared.duckdb"
    done = tmp_path / "writer-count"
    s = DuckDBStorage(db)
    s.memory.create_thread("t1")
    s.close()

    ready = tmp_path / "reader-ready"
    writer = spawn(WRITER, str(db), "3", str(ready))
    reader = spawn(READER, str(db), str(done), str(ready))
    w_out, w_err = writer.communicate(timeout=120)
    assert writer.returncode == 0, w_err
    written = int(w_out.strip())
    done.write_text(str(written))
    r_out, r_err = reader.communicate(timeout=120)
    assert reader.returncode == 0, r_err
    reads, seen = map(int, r_out.split())
    assert written > 0 and reads >= 2
    assert seen == written  # the reader eventually saw every message

    final = DuckDBStorage(db, read_only=True)
    assert [m.seq for m in final.memory.get_messages("t1")] == list(range(written))
    final.close()


def test_busy_file_raises_instead_of_hanging(tmp_path: Path) -> None:
    db = tmp_path / "held.duckdb"
    s = DuckDBStorage(db)
    s.memory.create_thread("t1")
    s.close()
    holder = spawn(HOLDER, str(db), "30")
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        with pytest.raises(StorageBusyError, match="held.duckdb"):
            DuckDBStorage(db, read_only=True, lock_timeout=0.3)
    finally:
        holder.kill()
        holder.communicate()
    # once the holder is gone the file opens again
    again = DuckDBStorage(db, read_only=True, lock_timeout=10)
    assert again.memory.count_messages("t1") == 0
    again.close()


def test_session_holds_the_file_against_other_processes(tmp_path: Path) -> None:
    db = tmp_path / "sess.duckdb"
    s = DuckDBStorage(db)
    s.memory.create_thread("t1")
    with s.session():
        s.memory.count_messages("t1")  # the session's first operation opens the file
        other = spawn("""
import sys
from memory_core.errors import StorageBusyError
from memory_core.storage.duckdb import DuckDBStorage
from memory_core.types import AppendRow, Message
try:
    DuckDBStorage(sys.argv[1], read_only=True, lock_timeout=0.2)
except StorageBusyError as e:
    print("busy", "sess.duckdb" in str(e))
""", str(db))
        out, err = other.communicate(timeout=60)
    assert other.returncode == 0, err
    assert out.split() == ["busy", "True"]
    s.close()


def test_a_storage_holds_the_file_only_inside_an_operation_or_a_session(
        tmp_path: Path) -> None:
    db = tmp_path / "idle.duckdb"
    s = DuckDBStorage(db)
    s.memory.create_thread("t1")
    s.memory.append_messages("t1", [AppendRow(message=Message(content="a"))])
    assert other_process_gets_it(db)  # after its writes: nothing held, no one asked
    with s.session():
        assert s.memory.count_messages("t1") == 1
        assert not other_process_gets_it(db)
    assert other_process_gets_it(db)
    s.memory.append_messages("t1", [AppendRow(message=Message(content="b"))])
    assert [m.text() for m in s.memory.get_messages("t1")] == ["a", "b"]
    s.close()


# holds the file in a session; does one append for each "op" line read, and ends the
# session at "end"
SESSION_HOLDER = """
import sys
from memory_core.storage.duckdb import DuckDBStorage
from memory_core.types import AppendRow, Message
s = DuckDBStorage(sys.argv[1])
with s.session():
    s.memory.count_messages("t1")
    print("holding", flush=True)
    n = 0
    for line in sys.stdin:
        if line.strip() != "op":
            break
        s.memory.append_messages("t1", [AppendRow(message=Message(content=f"h{n}"))])
        n += 1
        print("done", n, flush=True)
s.close()
print("ended", n, flush=True)
"""


def test_a_session_lets_the_file_go_at_its_next_operation_once_asked(tmp_path: Path) -> None:
    db = tmp_path / "asked.duckdb"
    s = DuckDBStorage(db)
    s.memory.create_thread("t1")
    s.close()
    holder = subprocess.Popen([sys.executable, "-c", SESSION_HOLDER, str(db)], cwd=ROOT,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    assert holder.stdin is not None and holder.stdout is not None and holder.stderr is not None
    got: list[DuckDBStorage | BaseException] = []

    def ask() -> None:
        try:
            got.append(DuckDBStorage(db, read_only=True, lock_timeout=60))
        except BaseException as e:  # noqa: BLE001 - reported by the test
            got.append(e)

    asker = threading.Thread(target=ask)
    try:
        assert holder.stdout.readline().strip() == "holding", holder.stderr.read()
        # an idle session keeps the file, asked or not (this asks)
        with pytest.raises(StorageBusyError, match="asked.duckdb"):
            DuckDBStorage(db, read_only=True, lock_timeout=0.3)
        asker.start()
        ops = 0
        while asker.is_alive() and ops < 20:
            # the holder's next operation lets the file go to the asker; if the asker
            # missed the moment (a busy machine), it asks again and the holder's next
            # operation lets go again
            holder.stdin.write("op\n")
            holder.stdin.flush()
            ops += 1
            assert holder.stdout.readline().split() == ["done", str(ops)]
            asker.join(timeout=0.5)
        asker.join(timeout=60)
        assert len(got) == 1 and isinstance(got[0], DuckDBStorage), got
        print(f"the asker got the file after {ops} operation(s) of the holder")
        got[0].close()
        out, err = holder.communicate("end\n", timeout=60)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.communicate()
    assert holder.returncode == 0, err[-3000:]
    assert out.split() == ["ended", str(ops)]
    final = DuckDBStorage(db, read_only=True)
    assert [m.text() for m in final.memory.get_messages("t1")] == [f"h{i}" for i in range(ops)]
    final.close()


# appends single rows to one thread, inside one session or each on its own; prints the
# seqs it was given
APPENDER = """
import contextlib, json, sys
from memory_core.storage.duckdb import DuckDBStorage
from memory_core.types import AppendRow, Message
path, name, n, in_session = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
s = DuckDBStorage(path, lock_timeout=120)
print("ready", flush=True)
sys.stdin.readline()
seqs = []
with s.session() if in_session else contextlib.nullcontext():
    for i in range(n):
        seqs += s.memory.append_messages(
            "shared", [AppendRow(message=Message(content=f"{name}-{i}"))])
s.close()
print(json.dumps(seqs), flush=True)
"""


@pytest.mark.slow
def test_writer_processes_appending_to_one_thread_get_dense_seqs(tmp_path: Path) -> None:
    """Three processes append to one thread at once, one of them inside a session (it
    lets the file go when another asks): the seqs are 0..n-1 with no gap or repeat, and
    each process was told the seqs its rows are stored at."""
    db = tmp_path / "seqs.duckdb"
    s = DuckDBStorage(db)
    s.memory.create_thread("shared")
    s.close()
    n = 30
    names = {"w0": "1", "w1": "0", "w2": "0"}
    procs = {name: subprocess.Popen(
        [sys.executable, "-c", APPENDER, str(db), name, str(n), in_session], cwd=ROOT,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for name, in_session in names.items()}
    told: dict[str, list[int]] = {}
    try:
        for p in procs.values():
            assert p.stdout is not None and p.stdout.readline().strip() == "ready", \
                p.stderr.read() if p.stderr else ""
        for p in procs.values():  # go, all at once
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        for name, p in procs.items():
            out, err = p.communicate(timeout=300)
            assert p.returncode == 0, err[-3000:]
            told[name] = json.loads(out)
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.communicate()
    final = DuckDBStorage(db, read_only=True)
    stored = {m.seq: m.text() for m in final.memory.get_messages("shared")}
    final.close()
    assert sorted(stored) == list(range(3 * n))
    for name, seqs in told.items():
        assert seqs == sorted(seqs)
        assert [stored[q] for q in seqs] == [f"{name}-{i}" for i in range(n)]
