"""DuckDB file shared by real processes: a writer appends while a reader keeps opening
the file read-only; and a holder that outstays lock_timeout yields StorageBusyError."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from memory_core.errors import StorageBusyError
from memory_core.storage.duckdb import DuckDBStorage

ROOT = Path(__file__).resolve().parents[1]

WRITER = """
import sys, time
from memory_core.storage.duckdb import DuckDBStorage
from memory_core.types import AppendRow, Message
s = DuckDBStorage(sys.argv[1])
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

    writer = spawn(WRITER, str(db), "3")
    reader = spawn(READER, str(db), str(done))
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


def test_lingering_connection_is_released_for_other_processes(tmp_path: Path) -> None:
    db = tmp_path / "linger.duckdb"
    s = DuckDBStorage(db, linger=0.05)
    s.memory.create_thread("t1")  # leaves a lingering connection behind
    probe = spawn("""
import sys
from memory_core.storage.duckdb import DuckDBStorage
r = DuckDBStorage(sys.argv[1], read_only=True, lock_timeout=20)
print(r.memory.get_thread("t1").id)
""", str(db))
    out, err = probe.communicate(timeout=60)
    assert probe.returncode == 0, err
    assert out.strip() == "t1"
    s.close()


def test_session_holds_the_file_against_other_processes(tmp_path: Path) -> None:
    db = tmp_path / "sess.duckdb"
    s = DuckDBStorage(db)
    s.memory.create_thread("t1")
    with s.session():
        other = spawn("""
import sys
from memory_core.errors import StorageBusyError
from memory_core.storage.duckdb import DuckDBStorage
try:
    DuckDBStorage(sys.argv[1], read_only=True, lock_timeout=0.2)
except StorageBusyError as e:
    print("busy", "sess.duckdb" in str(e))
""", str(db))
        out, err = other.communicate(timeout=60)
    assert other.returncode == 0, err
    assert out.split() == ["busy", "True"]
    s.close()
