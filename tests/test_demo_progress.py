"""The demo build's progress (issue 36.8): the scenario being played, the runs done of
the total, the time elapsed and an estimate of the time left from the rate so far."""

from __future__ import annotations

import re

import pytest

from memory_core.storage.inmemory import InMemoryStorage
from sample_data.build import SCENARIOS, BuildProgress, DemoClock, build_into, run_count

RUNS = re.compile(r"^  (\S+): runs (\d+)/(\d+), (\d+) s elapsed(?:, about (\d+) s left)?$")


@pytest.mark.slow  # plays a whole scenario: ~3 s
def test_the_build_counts_its_runs_up_to_the_total_with_an_estimate() -> None:
    clock = DemoClock()
    lines: list[str] = []
    ids = build_into(InMemoryStorage(clock=clock), clock, embedder="hashing",
                     progress=lines.append, only=["support"])
    support = next(s for s in SCENARIOS if s.key == "support")
    assert lines[0] == f"[1/{len(SCENARIOS)}] {support.title} ({run_count(support)} runs)"
    counts = [m.groups() for m in map(RUNS.match, lines[1:]) if m]
    assert len(counts) == len(lines) - 1, lines  # every other line is a runs line
    done = [int(c[1]) for c in counts]
    assert done == sorted(done) and len(set(done)) == len(done)
    assert done[-1] == len(ids) == run_count(support)
    assert {int(c[2]) for c in counts} == {len(ids)}
    # each thread played is named when it ends; the estimate is there until the last
    assert {c[0] for c in counts} == {t.thread_id for t in support.threads}
    assert all(c[4] is not None for c in counts[:-1]) and counts[-1][4] is None


def test_the_estimate_is_the_rate_so_far_times_the_runs_left() -> None:
    now = [100.0]
    lines: list[str] = []
    meter = BuildProgress(40, lines.append, timer=lambda: now[0])
    now[0] = 104.0  # the model loaded and the texts embedded: 4 s, not in the rate
    meter.start_runs()
    for _ in range(10):
        now[0] += 0.5
        meter.run_done("t-1")
    assert lines == ["  t-1: runs 10/40, 9 s elapsed, about 15 s left"]
    meter.thread_done("t-1")  # said already at this count: not again
    now[0] += 2.0
    meter.run_done("t-2")
    meter.thread_done("t-2")
    assert lines[-1] == "  t-2: runs 11/40, 11 s elapsed, about 18 s left"
