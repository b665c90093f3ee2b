"""Conformance: seq assignment under concurrent appends from many Python threads —
dense, no gap or duplicate, and each batch gets one contiguous block."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_core.storage.base import Storage
from memory_core.testing.support import row

_names = itertools.count()


def run_threads(workers: list[Callable[[], None]]) -> None:
    errors: list[BaseException] = []
    start = threading.Barrier(len(workers))

    def wrap(fn: Callable[[], None]) -> None:
        try:
            start.wait()
            fn()
        except BaseException as e:  # noqa: B036 - reported to the main thread below
            errors.append(e)

    threads = [threading.Thread(target=wrap, args=(w,)) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_eight_threads_of_single_appends_give_dense_seqs(storage: Storage) -> None:
    storage.memory.create_thread("t1")
    got: list[list[int]] = [[] for _ in range(8)]

    def worker(k: int) -> Callable[[], None]:
        def go() -> None:
            for i in range(200):
                got[k].extend(storage.memory.append_messages("t1", [row(f"{k}:{i}")]))
        return go

    with storage.session():
        run_threads([worker(k) for k in range(8)])
    assert sorted(itertools.chain(*got)) == list(range(1600))
    stored = storage.memory.get_messages("t1")
    assert [m.seq for m in stored] == list(range(1600))
    # each worker's own appends come back in the order it made them
    for k in range(8):
        mine = [m.seq for m in stored if m.text().startswith(f"{k}:")]  # type: ignore[union-attr]
        assert mine == got[k]


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=st.lists(st.lists(st.integers(min_value=1, max_value=5), min_size=1, max_size=4),
                     min_size=2, max_size=4))
def test_concurrent_batches_get_contiguous_blocks(storage: Storage,
                                                  plan: list[list[int]]) -> None:
    tid = f"prop-{next(_names)}"  # one fresh thread per example, the storage is shared
    storage.memory.create_thread(tid)
    blocks: list[tuple[str, list[int]]] = []
    lock = threading.Lock()

    def worker(w: int, sizes: list[int]) -> Callable[[], None]:
        def go() -> None:
            for b, n in enumerate(sizes):
                label = f"{w}.{b}"
                seqs = storage.memory.append_messages(tid, [row(label) for _ in range(n)])
                with lock:
                    blocks.append((label, seqs))
        return go

    with storage.session():
        run_threads([worker(w, sizes) for w, sizes in enumerate(plan)])
    total = sum(map(sum, plan))
    assert sorted(s for _, seqs in blocks for s in seqs) == list(range(total))
    stored = {m.seq: m.text() for m in storage.memory.get_messages(tid)}
    for label, seqs in blocks:
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))  # one contiguous block
        assert {stored[s] for s in seqs} == {label}
