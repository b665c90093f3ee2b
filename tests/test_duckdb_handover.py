"""The DuckDB write path for live agents: a writer keeps its connection and defers its
appends, and hands the file over when another process asks for it (the request flag
next to the file). A reader process gets the file again and again while a writer
process never stops appending, and every append lands once, in order."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest

from memory_core.errors import NotFoundError, StorageBusyError, StorageError
from memory_core.storage.duckdb import _CONFIG, DuckDBStorage
from memory_core.types import AppendRow, Message, RunRecord
from tests.test_duckdb_processes import spawn

# Appends single messages for argv[2] seconds to two threads, writing the time span it
# was appending to argv[3]; prints how many it appended to each thread.
WRITER = """
import sys, time
from memory_core.storage.duckdb import _CONFIG, DuckDBStorage
from memory_core.types import AppendRow, Message
s = DuckDBStorage(sys.argv[1])
counts = {"t1": 0, "t2": 0}
start = time.time()
end = time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    tid = "t1" if sum(counts.values()) % 3 else "t2"
    seqs = s.memory.append_messages(tid, [AppendRow(message=Message(content=f"{tid} {counts[tid]}"))])
    assert seqs == [counts[tid]], (tid, seqs, counts)
    counts[tid] += 1
stop = time.time()
s.close()
open(sys.argv[3], "w").write(f"{start} {stop}")
print(counts["t1"], counts["t2"])
"""

# Opens the file read-only again and again until the writer is done; prints, per read,
# when it got the file and what it saw.
READER = """
import sys, time
from memory_core.storage.duckdb import _CONFIG, DuckDBStorage
done = sys.argv[2]
deadline = time.monotonic() + 120
while time.monotonic() < deadline:
    s = DuckDBStorage(sys.argv[1], read_only=True, lock_timeout=30)
    n = s.memory.count_messages("t1")
    s.close()
    print(time.time(), n, flush=True)
    try:
        open(done).read()
        break
    except FileNotFoundError:
        time.sleep(0.05)
"""


@pytest.mark.slow
def test_a_reader_gets_the_file_while_a_writer_process_keeps_appending(tmp_path: Path) -> None:
    db = tmp_path / "live.duckdb"
    span = tmp_path / "writer-span"
    s = DuckDBStorage(db)
    s.memory.create_thread("t1")
    s.memory.create_thread("t2")
    s.close()

    writer = spawn(WRITER, str(db), "6", str(span))
    reader = spawn(READER, str(db), str(span))
    w_out, w_err = writer.communicate(timeout=180)
    assert writer.returncode == 0, w_err
    r_out, r_err = reader.communicate(timeout=180)
    assert reader.returncode == 0, r_err
    n1, n2 = map(int, w_out.split())
    start, stop = map(float, span.read_text().split())
    reads = [(float(t), int(n)) for t, n in (line.split() for line in r_out.splitlines())]
    during = [n for t, n in reads if start < t < stop]
    # the writer never paused, yet the reader got in several times, seeing it progress
    assert len(during) >= 3, reads
    assert during == sorted(during) and during[-1] > during[0] > 0, during

    final = DuckDBStorage(db, read_only=True)
    for tid, n in (("t1", n1), ("t2", n2)):
        msgs = final.memory.get_messages(tid)
        # every append landed once, seqs dense, in the order made
        assert [m.seq for m in msgs] == list(range(n))
        assert [m.text() for m in msgs] == [f"{tid} {i}" for i in range(n)]
        assert final.memory.count_messages(tid) == n
        assert final.memory.max_seq(tid) == n - 1
    final.close()


def test_appends_wait_in_memory_and_commit_together(tmp_path: Path) -> None:
    db = tmp_path / "deferred.duckdb"
    s = DuckDBStorage(db, commit_delay=30)
    s.memory.create_thread("t1", resource_id="r")
    got = [s.memory.append_messages("t1", [AppendRow(message=Message(content=f"m{i}"))])
           for i in range(5)]
    assert got == [[0], [1], [2], [3], [4]]
    # another connection to the same database sees nothing committed yet...
    peek = duckdb.connect(str(db), config=_CONFIG)
    assert peek.execute("SELECT count(*) FROM messages").fetchone() == (0,)
    # ...while this storage's own reads see every append (added to the file's rows)
    assert [m.seq for m in s.memory.get_messages("t1")] == [0, 1, 2, 3, 4]
    assert peek.execute("SELECT count(*) FROM messages").fetchone() == (0,)
    s.memory.list_threads()  # a read of the file: the appends are committed first
    assert peek.execute("SELECT count(*), max(seq) FROM messages").fetchone() == (5, 4)
    assert peek.execute("SELECT message_count, max_seq, resource_id FROM threads"
                        " WHERE id = 't1'").fetchone() == (5, 4, "r")
    peek.close()
    s.close()


def test_deferred_appends_are_committed_after_commit_delay(tmp_path: Path) -> None:
    db = tmp_path / "delay.duckdb"
    s = DuckDBStorage(db, commit_delay=0.05)
    s.memory.create_thread("t1")
    s.memory.append_messages("t1", [AppendRow(message=Message(content="hello"))])
    peek = duckdb.connect(str(db), config=_CONFIG)
    deadline = time.monotonic() + 30
    while peek.execute("SELECT count(*) FROM messages").fetchone() != (1,):
        assert time.monotonic() < deadline, "the append was never committed"
        time.sleep(0.02)
    peek.close()
    s.close()


def test_a_deferred_append_checks_the_thread_and_follows_other_writes(tmp_path: Path) -> None:
    s = DuckDBStorage(tmp_path / "checks.duckdb", commit_delay=30)
    with pytest.raises(NotFoundError, match="thread 'nope' does not exist"):
        s.memory.append_messages("nope", [AppendRow(message=Message(content="x"))])
    s.memory.create_thread("t1", resource_id="a")
    s.memory.append_messages("t1", [AppendRow(message=Message(content="x"))])
    # a write of this process between appends (the thread moves resource) is seen
    s.memory.update_thread("t1", resource_id="b")
    assert s.memory.append_messages("t1", [AppendRow(message=Message(content="y"))]) == [1]
    assert {m.resource_id for m in s.memory.get_messages("t1")} == {"b"}
    # the thread erased and made again starts at seq 0
    s.memory.delete_thread("t1")
    s.memory.create_thread("t1")
    assert s.memory.append_messages("t1", [AppendRow(message=Message(content="z"))]) == [0]
    s.close()


@pytest.mark.slow
def test_the_workbench_open_gets_the_file_from_a_busy_writer(tmp_path: Path) -> None:
    """``open_ours`` (the workbench and read-only commands) first probes the file over
    a raw read-only connection; it asks for the file like the adapter does, so a
    writer that never pauses still hands it over."""
    from memory_core.storage.url import open_ours

    db = tmp_path / "busy.duckdb"
    span = tmp_path / "writer-span"
    s = DuckDBStorage(db)
    s.memory.create_thread("t1")
    s.memory.create_thread("t2")
    s.close()
    writer = spawn(WRITER, str(db), "12", str(span))
    try:
        deadline = time.monotonic() + 60
        while DuckDBStorage(db, read_only=True, lock_timeout=30).memory.count_messages(
                "t1") == 0:  # the writer has started appending
            assert time.monotonic() < deadline
        for _ in range(3):
            r = open_ours(str(db))
            assert r.memory.get_thread("t1") is not None
            r.close()
        assert not span.exists()  # all of it while the writer kept appending
    finally:
        out, err = writer.communicate(timeout=180)
    assert writer.returncode == 0, err


def test_the_probe_tries_again_while_a_lent_file_is_free(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A writer that was asked keeps off the file for _COURTESY_GAP and then takes it
    back: the probe asks on every failed try and waits less than that gap between
    tries, so it always gets a try while the file is free (a try every 50 ms missed
    the gap under load and gave up after PROBE_TIMEOUT_SECONDS)."""
    from memory_core.storage import duckdb as duck
    from memory_core.storage import url as url_mod

    db = tmp_path / "held.duckdb"
    DuckDBStorage(db).close()
    real_connect = duckdb.connect
    tries: list[str] = []
    waits: list[float] = []

    def connect(path: str, **kw: Any) -> Any:
        tries.append(path)
        if len(tries) < 40:  # held: DuckDB's own message for a locked file
            raise duckdb.IOException(f'Could not set lock on file "{path}": Conflicting lock')
        return real_connect(path, **kw)

    monkeypatch.setattr(duckdb, "connect", connect)
    monkeypatch.setattr(time, "sleep", waits.append)
    asked: list[str] = []
    monkeypatch.setattr(duck, "ask_for_file", asked.append)
    assert "messages" in url_mod._duckdb_tables(str(db))
    assert len(tries) == 40 and len(asked) == 39 and len(waits) == 39
    assert max(waits) < duck._COURTESY_GAP


# Asks for the file like the workbench does, holds it read-only until argv[2] exists,
# then prints what it saw and lets go.
HOLDER = """
import sys, time, os, duckdb
from memory_core.storage.duckdb import _CONFIG, ask_for_file
while True:
    try:
        conn = duckdb.connect(sys.argv[1], read_only=True, config=_CONFIG)
        break
    except duckdb.IOException:
        ask_for_file(sys.argv[1])
        time.sleep(0.01)
print("got", conn.execute("SELECT count(*) FROM messages").fetchone()[0], flush=True)
while not os.path.exists(sys.argv[2]):
    time.sleep(0.01)
conn.close()
"""


def test_appends_go_on_while_a_reader_holds_the_file(tmp_path: Path) -> None:
    """A reader that asked gets the file lent: the writer keeps giving seqs and keeping
    its appends in memory while the reader holds the file (here until the appends are
    done: had they waited for the file, they would have failed with StorageBusyError),
    then takes the file back and commits them, in order (a long linger: an idle
    lender gives up its claim and what it knows after linger)."""
    db = tmp_path / "lent.duckdb"
    release = tmp_path / "release"
    s = DuckDBStorage(db, lock_timeout=10, max_hold=0, linger=120)
    s.memory.create_thread("t1")
    assert s.memory.append_messages("t1", [AppendRow(message=Message(content="m0"))]) == [0]
    holder = spawn(HOLDER, str(db), str(release))
    try:
        assert holder.stdout is not None
        line = holder.stdout.readline()  # the writer lent it (the keeper saw the ask)
        assert line == "got 1\n", holder.stderr.read() if holder.stderr else line
        assert Path(f"{db}.lease").read_text() == str(os.getpid())
        for i in range(1, 301):  # none of these needs the file
            assert s.memory.append_messages(
                "t1", [AppendRow(message=Message(content=f"m{i}"))]) == [i]
    finally:
        release.write_text("done")
        holder.communicate(timeout=60)
    assert [m.text() for m in s.memory.get_messages("t1")] == [f"m{i}" for i in range(301)]
    s.close()
    assert not Path(f"{db}.lease").exists()
    r = DuckDBStorage(db, read_only=True)
    assert r.memory.count_messages("t1") == 301 and r.memory.max_seq("t1") == 300
    r.close()


def test_a_writer_waits_while_another_has_lent_the_file(tmp_path: Path) -> None:
    """The claim next to the file keeps other writers out while the lender's appends
    wait (they hold seqs no one else may give); readers still get in, and a claim
    whose process is gone is ignored."""
    db = tmp_path / "claimed.duckdb"
    s = DuckDBStorage(db)
    s.memory.create_thread("t1")
    s.close()
    sleeper = spawn("import time; time.sleep(60)")
    try:
        Path(f"{db}.lease").write_text(str(sleeper.pid))
        with pytest.raises(StorageBusyError, match=f"process {sleeper.pid} lent it"):
            DuckDBStorage(db, lock_timeout=0.3)  # its setup opens the file to write
        r = DuckDBStorage(db, read_only=True)
        assert r.memory.count_messages("t1") == 0
        r.close()
    finally:
        sleeper.kill()
        sleeper.communicate(timeout=30)
    w = DuckDBStorage(db, lock_timeout=5)  # the lender is gone: its claim means nothing
    assert w.memory.append_messages("t1", [AppendRow(message=Message(content="x"))]) == [0]
    w.close()


# Appends argv[3] single messages to the thread "shared"; prints the seqs it was given.
SHARED_WRITER = """
import sys
from memory_core.storage.duckdb import DuckDBStorage
from memory_core.types import AppendRow, Message
s = DuckDBStorage(sys.argv[1], lock_timeout=60)
seqs = []
for i in range(int(sys.argv[3])):
    seqs += s.memory.append_messages("shared", [AppendRow(message=Message(content=f"{sys.argv[2]} {i}"))])
s.close()
print(" ".join(map(str, seqs)))
"""


@pytest.mark.slow
def test_two_writers_and_a_reader_never_give_a_seq_twice(tmp_path: Path) -> None:
    """Two writer processes append to one thread while a reader keeps asking for the
    file: a writer lends the file to the reader, never to the other writer while its
    appends wait, so every seq is given once and every append is stored."""
    db = tmp_path / "two.duckdb"
    done = tmp_path / "done"
    s = DuckDBStorage(db)
    s.memory.create_thread("shared")
    s.close()
    reader = spawn(READER.replace('"t1"', '"shared"'), str(db), str(done))
    writers = {name: spawn(SHARED_WRITER, str(db), name, "400") for name in ("a", "b")}
    got = {}
    for name, w in writers.items():
        out, err = w.communicate(timeout=300)
        assert w.returncode == 0, err
        got[name] = [int(x) for x in out.split()]
    done.write_text("done")
    _, r_err = reader.communicate(timeout=120)
    assert reader.returncode == 0, r_err
    assert sorted(got["a"] + got["b"]) == list(range(800))
    final = DuckDBStorage(db, read_only=True)
    by_seq = {m.seq: m.text() for m in final.memory.get_messages("shared")}
    final.close()
    for name, seqs in got.items():
        assert [by_seq[q] for q in seqs] == [f"{name} {i}" for i in range(400)]


def test_another_writer_waits_for_the_lenders_appends(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """While this process has lent the file and its appends wait with seqs given,
    another writer that asked gets the file only after this one took it back and
    committed them (this process looks for the file back slowly here, so without the
    claim the other writer would get in first and give seq 1 again). A long linger
    keeps this process from giving up its claim as idle while the reader starts."""
    import memory_core.storage.duckdb as duck

    monkeypatch.setattr(duck, "_ASK_POLL", 0.5)
    # this process does not ask (the holder below does not listen): the request flag
    # then changes only when the other writer asks
    monkeypatch.setattr(duck._Handle, "ask", lambda self, write: None)
    db = tmp_path / "race.duckdb"
    release = tmp_path / "release"
    s = DuckDBStorage(db, lock_timeout=60, max_hold=0, linger=120)
    s.memory.create_thread("t1")
    s.memory.append_messages("t1", [AppendRow(message=Message(content="m0"))])
    holder = spawn(HOLDER, str(db), str(release))
    other = None
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "got 1\n"
        for i in range(1, 11):
            s.memory.append_messages("t1", [AppendRow(message=Message(content=f"m{i}"))])
        asked = Path(f"{db}.wants-write")
        before = asked.stat().st_mtime_ns if asked.exists() else 0
        other = spawn(SHARED_WRITER.replace('"shared"', '"t1"'), str(db), "other", "1")
        deadline = time.monotonic() + 60
        while not asked.exists() or asked.stat().st_mtime_ns == before:
            assert time.monotonic() < deadline, "the other writer never asked"
            time.sleep(0.01)
    finally:
        release.write_text("done")
        holder.communicate(timeout=60)
    out, err = other.communicate(timeout=120)
    assert other.returncode == 0, err
    assert out.split() == ["11"]
    assert [m.text() for m in s.memory.get_messages("t1")] == \
        [f"m{i}" for i in range(11)] + ["other 0"]
    s.close()


def test_journal_writes_keep_what_appends_know(tmp_path: Path) -> None:
    """Runs and journal records leave threads alone, so the next append still gets its
    seq without reading the file (it may be lent to a reader); a write of a thread
    makes the next append read it again."""
    s = DuckDBStorage(tmp_path / "keep.duckdb", commit_delay=30)
    s.memory.create_thread("t1")
    s.memory.append_messages("t1", [AppendRow(message=Message(content="a"))])
    known = s._duck.handle.threads
    assert "t1" in known
    s.runs.start_run(RunRecord(run_id="r1", agent="a", thread_id="t1", status="running",
                               started_at=datetime.now(UTC)))
    s.runs.put_if_absent("run/r1/step/0", {"ok": True})
    s.runs.set_run_status("r1", "done", finished_at=datetime.now(UTC))
    assert "t1" in known
    s.memory.update_thread("t1", title="renamed")
    assert "t1" not in known
    assert s.memory.append_messages("t1", [AppendRow(message=Message(content="b"))]) == [1]
    s.close()


def _blocking_commit(monkeypatch: pytest.MonkeyPatch, fail: bool) -> tuple[Any, Any]:
    """The keeper's next commit of appends waits for ``go`` (``started`` is set when it
    is waiting), then fails if ``fail``; later commits run as usual."""
    import threading

    import memory_core.storage.duckdb as duck

    started, go = threading.Event(), threading.Event()
    real = duck._insert_messages

    def insert(tx: Any, staged: Any) -> None:
        if not started.is_set():
            started.set()
            assert go.wait(60)
            if fail:
                raise duckdb.IOException("disk went away")
        real(tx, staged)

    monkeypatch.setattr(duck, "_insert_messages", insert)
    return started, go


@pytest.mark.parametrize("fail", [False, True])
def test_appends_go_on_while_the_keeper_commits(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fail: bool) -> None:
    """The keeper commits waiting appends without the lock: appends of a known thread
    return meanwhile (here while the commit is held up), reads wait for it. A commit
    that fails loses the appends made during it too, and says how many."""
    import threading

    s = DuckDBStorage(tmp_path / "keeper.duckdb", commit_delay=0.01)
    s.memory.create_thread("t1")
    assert s.memory.append_messages("t1", [AppendRow(message=Message(content="m0"))]) == [0]
    s.memory.list_threads()  # a read of the file: m0 is committed first
    started, go = _blocking_commit(monkeypatch, fail)
    s.memory.append_messages("t1", [AppendRow(message=Message(content="m1"))])
    assert started.wait(60)  # the keeper is committing m1, without the lock
    done = []
    t = threading.Thread(target=lambda: done.append(s.memory.append_messages(
        "t1", [AppendRow(message=Message(content="m2"))])))
    t.start()
    t.join(60)
    assert done == [[2]]  # returned while the commit is still held up
    go.set()
    if fail:
        with pytest.raises(StorageError, match="committing 2 appended messages failed"):
            s.memory.count_messages("t1")
        assert s.memory.append_messages("t1", [AppendRow(message=Message(content="x"))]) == [1]
        assert [m.text() for m in s.memory.get_messages("t1")] == ["m0", "x"]
    else:
        assert [m.text() for m in s.memory.get_messages("t1")] == ["m0", "m1", "m2"]
    s.close()


def test_a_session_that_ends_during_the_keepers_commit_waits_for_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A session ending while the keeper commits waiting appends without the lock
    waits for that commit before it lets its connection go: appends made meanwhile
    never wait without a connection. (Letting it go first, then waiting, left such
    appends with no connection while the keeper, getting the lock first on a busy
    machine, came to commit them: its assertion stopped it for good, and appends
    made afterwards were no longer committed after commit_delay.)"""
    import threading

    import memory_core.storage.duckdb as duck

    errors: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda a: errors.append(a.exc_value))
    s = DuckDBStorage(tmp_path / "ending.duckdb", commit_delay=0.01, linger=30)
    s.memory.create_thread("t1")
    assert s.memory.append_messages("t1", [AppendRow(message=Message(content="m0"))]) == [0]
    s.memory.list_threads()  # a read of the file: m0 is committed first
    started, go = _blocking_commit(monkeypatch, False)
    # The ending session's thread, once the commit it waits for is done, gets the lock
    # back only after the keeper's next look (as on a machine too busy to run it).
    main, ending, looked = threading.current_thread(), threading.Event(), threading.Event()
    real_settle, real_step = duck._Handle.settle, duck._Handle._keep_step

    def settle(h: Any) -> None:
        waits = h.flushing and ending.is_set() and threading.current_thread() is main
        if waits:
            ending.clear()
            threading.Thread(target=lambda: (time.sleep(0.05), go.set())).start()
        real_settle(h)
        if waits:
            state = h.lock.rlock._release_save()
            assert looked.wait(60)
            h.lock.rlock._acquire_restore(state)

    def keep_step(h: Any, now: float) -> float | None:
        after = go.is_set()
        try:
            return real_step(h, now)
        finally:
            if after:
                looked.set()

    monkeypatch.setattr(duck._Handle, "settle", settle)
    monkeypatch.setattr(duck._Handle, "_keep_step", keep_step)
    with s.session():
        s.memory.append_messages("t1", [AppendRow(message=Message(content="m1"))])
        assert started.wait(60)  # the keeper is committing m1, without the lock
        assert s.memory.append_messages("t1", [AppendRow(message=Message(content="m2"))]) == [2]
        ending.set()
    assert looked.is_set()
    # the keeper still commits appends after commit_delay
    s.memory.append_messages("t1", [AppendRow(message=Message(content="m3"))])
    deadline = time.monotonic() + 10
    while s._duck.handle.pending:
        assert time.monotonic() < deadline, ("the append was never committed", errors)
        time.sleep(0.02)
    s.close()
    again = DuckDBStorage(tmp_path / "ending.duckdb")
    assert [m.text() for m in again.memory.get_messages("t1")] == ["m0", "m1", "m2", "m3"]
    again.close()
    assert errors == []


def test_a_keeper_stopped_by_an_unexpected_error_is_started_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An error the keeper does not expect ends its thread; the next append starts
    another, so waiting appends are still committed after commit_delay."""
    import threading

    import memory_core.storage.duckdb as duck

    errors: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda a: errors.append(a.exc_value))
    real_step = duck._Handle._keep_step
    failed = threading.Event()

    def keep_step(h: Any, now: float) -> float | None:
        if not failed.is_set():
            failed.set()
            raise RuntimeError("unexpected")
        return real_step(h, now)

    monkeypatch.setattr(duck._Handle, "_keep_step", keep_step)
    s = DuckDBStorage(tmp_path / "restart.duckdb", commit_delay=0.01, linger=30)
    s.memory.create_thread("t1")
    s.memory.append_messages("t1", [AppendRow(message=Message(content="m0"))])
    deadline = time.monotonic() + 10
    while not errors:
        assert time.monotonic() < deadline, "the keeper did not stop"
        time.sleep(0.01)
    s.memory.append_messages("t1", [AppendRow(message=Message(content="m1"))])
    while s._duck.handle.pending:
        assert time.monotonic() < deadline, "the appends were never committed"
        time.sleep(0.01)
    assert [type(e) for e in errors] == [RuntimeError]
    s.close()


def test_the_change_token_opens_the_file_a_read_would(tmp_path: Path) -> None:
    """With no connection held (idle, or handed over), ``change_token`` opens the one a
    read would open instead of saying it cannot tell (None sent every caller — recall's
    cache check, the workbench's shared reads — to read everything again); the open
    is a new token, since another process may have written while the file was free.
    A storage that does not linger (each operation opens the file) still says None."""
    db = tmp_path / "token.duckdb"
    s = DuckDBStorage(db, read_only=False)
    s.memory.create_thread("t1")
    first = s.memory.change_token()
    assert first is not None and s.memory.change_token() == first
    with s._duck.handle.lock:
        s._duck.handle.drop_idle()  # let go, as after linger or to a process that asked
    assert s._duck.handle.change_token() is None
    again = s.memory.change_token()
    assert again is not None and again != first
    assert s._duck.handle.change_token() == again  # it holds the connection it opened
    s.close()
    assert DuckDBStorage(db, linger=0).memory.change_token() is None
