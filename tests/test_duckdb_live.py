"""A live agent and a reader on one DuckDB file, in two processes (issue 31): the agent
process runs turn after turn (a Runner with the offline ReaderModel, AgentMemory,
HashingEmbedder), announcing each run once ``runner.run`` has returned; this process
reads the file as the workbench does, read-only, each look inside ``with
storage.session():``, as often as it can. Outcomes only: every announced run is in the
file and verifies against its seal, neither process failed or got StorageBusyError,
the reader's first look that starts after an announcement sees that run, and an idle
agent holds nothing (another process opens the file at once, asking no one)."""

from __future__ import annotations

import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import pytest

from memory_core.errors import StorageBusyError
from memory_core.journal.seal import verify_run
from memory_core.storage.duckdb import DuckDBStorage

ROOT = Path(__file__).resolve().parents[1]
SEEN_WITHIN = 2.0  # seconds from an announcement to the end of the look that sees the run

# Runs argv[2] turns, printing "ran <run id>" after each, then "idle"; then, for each
# line on stdin, "run" makes one more turn (and "idle" again), anything else (or the
# end of stdin) closes the storage and ends.
AGENT = """
import sys
from memory_core.embedding.hashing import HashingEmbedder
from memory_core.composition.memory import AgentMemory
from memory_core.models.reader import ReaderModel
from memory_core.runs.runner import Agent, Runner
from memory_core.storage.duckdb import DuckDBStorage

storage = DuckDBStorage(sys.argv[1], lock_timeout=60)
embed = HashingEmbedder(64)
memory = AgentMemory(storage, embed=embed, recent_n=4)
runner = Runner(storage, {"support": Agent("support", "Answer from the conversation.",
                                           ReaderModel(embed=embed))}, memory=memory)
n = 0

def turn():
    global n
    prompt = (f"My locker code number {n} is K-{n * 7:04d}. Please keep it in mind."
              if n % 2 == 0 else f"What is my locker code number {n - 1}?")
    result = runner.run("support", run_id=f"live-{n:02d}", thread_id="t-live",
                        resource_id="u-live", prompt=prompt)
    print("ran", result.run_id, flush=True)
    n += 1

for _ in range(int(sys.argv[2])):
    turn()
print("idle", flush=True)
for line in sys.stdin:
    if line.strip() != "run":
        break
    turn()
    print("idle", flush=True)
storage.close()
print("closed", flush=True)
"""


class LiveAgent:
    """The agent process, and when (this process's monotonic clock) each of its lines
    arrived."""

    def __init__(self, db: Path, runs: int) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", AGENT, str(db), str(runs)],
                                     cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.lines: list[tuple[float, str]] = []
        self.changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        try:
            for line in self.proc.stdout:
                with self.changed:
                    self.lines.append((time.monotonic(), line.strip()))
                    self.changed.notify_all()
        except ValueError:  # finish()'s communicate() read the rest and closed the pipe
            pass
        with self.changed:
            self.lines.append((time.monotonic(), "<eof>"))
            self.changed.notify_all()

    def announced(self) -> list[tuple[float, str]]:
        with self.changed:
            return [(t, line.split()[1]) for t, line in self.lines if line.startswith("ran ")]

    def count(self, word: str) -> int:
        with self.changed:
            return sum(line == word for _, line in self.lines)

    def wait_for(self, word: str, count: int, timeout: float = 300) -> None:
        with self.changed:
            ok = self.changed.wait_for(
                lambda: sum(line == word for _, line in self.lines) >= count
                or any(line == "<eof>" for _, line in self.lines), timeout)
            assert ok and sum(line == word for _, line in self.lines) >= count, \
                f"the agent did not say {word!r}: {self.lines[-3:]} {self.stderr_so_far()}"

    def stderr_so_far(self) -> str:
        return "" if self.proc.poll() is None else (self.proc.stderr.read()[-3000:]
                                                    if self.proc.stderr else "")

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def finish(self) -> str:
        """Close its storage and end; its stderr."""
        try:
            _, err = self.proc.communicate("end\n", timeout=120)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.communicate()
        self._reader.join(10)
        return err


def new_db(tmp_path: Path) -> Path:
    db = tmp_path / "live.duckdb"
    DuckDBStorage(db).close()  # the schema, so a read-only reader can open it at once
    return db


def completed_runs(reader: DuckDBStorage) -> set[str]:
    """One look, as a workbench page makes it: several reads in one session."""
    with reader.session():
        runs = reader.runs.list_runs()
        reader.memory.list_threads()
        if runs:
            reader.memory.get_messages(runs[-1].thread_id or "t-live")
    return {r.run_id for r in runs if r.status == "completed"}


def check_file(db: Path, run_ids: list[str]) -> None:
    """Every run is in the file, completed, and verifies against its seal (what
    ``memwb verify --all`` checks)."""
    s = DuckDBStorage(db, read_only=True, lock_timeout=10)
    try:
        runs = {r.run_id: r.status for r in s.runs.list_runs()}
        assert runs == {rid: "completed" for rid in run_ids}
        reports = {rid: verify_run(s, rid) for rid in run_ids}
        assert {rid: r.status for rid, r in reports.items()} == {rid: "ok" for rid in run_ids}, \
            [r for r in reports.values() if r.status != "ok"]
        assert s.memory.count_messages("t-live") >= 2 * len(run_ids)
    finally:
        s.close()


@pytest.mark.slow
def test_a_reader_looking_continuously_sees_each_run_of_a_live_agent(tmp_path: Path) -> None:
    runs = 30
    db = new_db(tmp_path)
    reader = DuckDBStorage(db, read_only=True, lock_timeout=30)
    agent = LiveAgent(db, runs)
    looks: list[tuple[float, float, set[str]]] = []  # (start, end, completed runs seen)
    busy: list[StorageBusyError] = []
    try:
        deadline = time.monotonic() + 600
        while agent.count("idle") < 1 and agent.count("<eof>") == 0 \
                and time.monotonic() < deadline:
            start = time.monotonic()
            try:
                done = completed_runs(reader)
            except StorageBusyError as e:
                busy.append(e)
                continue
            looks.append((start, time.monotonic(), done))
        start = time.monotonic()  # and one look after the last announcement
        done = completed_runs(reader)
        looks.append((start, time.monotonic(), done))
    finally:
        reader.close()
        err = agent.finish()
    assert agent.proc.returncode == 0, err
    assert "StorageBusyError" not in err and "Traceback" not in err, err
    assert busy == []
    announced = agent.announced()
    assert [rid for _, rid in announced] == [f"live-{i:02d}" for i in range(runs)]

    latencies = []
    for at, rid in announced:
        # the first look that started after the announcement sees the run
        first = next((look for look in looks if look[0] > at), None)
        assert first is not None, f"no look started after {rid} was announced"
        assert rid in first[2], f"{rid}: the first look after its announcement missed it"
        latencies.append(first[1] - at)
    print(f"\n{len(looks)} looks over {runs} runs; announcement to seen: median "
          f"{statistics.median(latencies) * 1000:.0f} ms, max {max(latencies) * 1000:.0f} ms")
    assert max(latencies) <= SEEN_WITHIN, latencies
    check_file(db, [rid for _, rid in announced])


def test_an_idle_agent_holds_nothing(tmp_path: Path) -> None:
    """After its run returned, an agent sitting idle (its storage open) holds no lock on
    the file: another process opens it for writing at once, without asking or waiting,
    and a reader with a 1 s lock_timeout opens it too; the agent goes on afterwards."""
    db = new_db(tmp_path)
    agent = LiveAgent(db, 1)
    try:
        agent.wait_for("idle", 1)
        raw = duckdb.connect(str(db))  # one try, no retry, no asking: nothing holds it
        raw.close()
        reader = DuckDBStorage(db, read_only=True, lock_timeout=1)
        try:
            assert completed_runs(reader) == {"live-00"}
        finally:
            reader.close()
        agent.send("run")  # and the agent runs again afterwards
        agent.wait_for("idle", 2)
        raw = duckdb.connect(str(db))
        raw.close()
    finally:
        err = agent.finish()
    assert agent.proc.returncode == 0, err
    assert [rid for _, rid in agent.announced()] == ["live-00", "live-01"]
    check_file(db, ["live-00", "live-01"])
