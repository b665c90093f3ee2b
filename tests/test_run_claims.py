"""A run runs once: four real processes starting the same run ids at once make exactly
one model call per step and apply each tool once, on every adapter that processes
share."""

from __future__ import annotations

import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from memory_core.errors import RunInProgress
from memory_core.journal.lease import Lease
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.storage.url import open_storage
from tests.storage_factories import shared_url

ROOT = Path(__file__).resolve().parents[1]
RUNS = 20




@pytest.mark.slow
@pytest.mark.parametrize("kind", ["sqlite", "duckdb",
                                  pytest.param("postgres", marks=pytest.mark.postgres)])
def test_four_processes_starting_the_same_runs_call_the_model_once_per_step(
        kind: str, tmp_path: Path) -> None:
    url = shared_url(kind, tmp_path, "claims")
    open_storage(url).close()  # schema created once, before the race
    log = tmp_path / "calls.log"
    start = time.time() + 3.0
    procs = [subprocess.Popen([sys.executable, str(ROOT / "tests" / "claim_worker.py"), url,
                               str(log), str(start), str(RUNS)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(4)]
    outs = [p.communicate(timeout=240) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-2000:] for o in outs]
    busy = sum(int(o[0].strip().splitlines()[-1]) for o in outs)
    lines = log.read_text().splitlines()
    calls = Counter(tuple(line.split()[:2]) for line in lines)
    for i in range(RUNS):
        assert calls[("model", f"claim-{i}")] == 2, (i, calls)
        assert calls[("tool", f"claim-{i}")] == 1, (i, calls)
    s = open_storage(url)
    try:
        for i in range(RUNS):
            msgs = s.memory.get_messages(f"t-{i}")
            assert [m.role for m in msgs] == ["user", "assistant", "tool", "assistant"]
            assert s.runs.require_run(f"claim-{i}").status == "completed"
    finally:
        s.close()
    assert busy + RUNS >= RUNS  # the losers were told, not silently re-run


def test_a_second_starter_is_refused_while_the_first_holds_the_run() -> None:
    s = InMemoryStorage()
    first = Lease(s.runs, "r", ttl=30).acquire()
    with pytest.raises(RunInProgress, match="'r' is being run by"):
        Lease(s.runs, "r", ttl=30).acquire()
    first.release()
    Lease(s.runs, "r", ttl=30).acquire()  # free again once released


def test_an_expired_claim_can_be_taken_over_and_the_old_holder_notices() -> None:
    s = InMemoryStorage()
    old = Lease(s.runs, "r", ttl=0.05).acquire()
    time.sleep(0.1)
    new = Lease(s.runs, "r", ttl=30).acquire()
    with pytest.raises(RunInProgress, match="taken over"):
        old.check()
    new.check()


def test_a_claim_of_a_dead_process_on_this_machine_is_taken_over_at_once() -> None:
    s = InMemoryStorage()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    lease = Lease(s.runs, "r", ttl=3600)
    lease._write(0)
    raw = s.runs.get("r:lease:000000")
    s.runs.delete("r:lease:000000")
    s.runs.put_if_absent("r:lease:000000", {**raw, "pid": int(dead.stdout), "owner": "x"})
    Lease(s.runs, "r", ttl=30).acquire()
