"""Conformance: ``delete_messages_after`` (SPEC §2.7) — a thread's tail goes, with its
vectors and counters, in one write; its seqs are never given again, even after reopen."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_core.errors import InvalidInputError, NotFoundError
from memory_core.storage.base import Storage
from memory_core.testing.factory import AdapterFactory
from memory_core.testing.support import row, vec


def four(s: Storage, tid: str = "t") -> None:
    s.memory.create_thread(tid)
    s.memory.append_messages(tid, [row(f"m{i}", embedding=vec(1, i)) for i in range(4)])


def test_spec_2_7_delete_after_keeps_the_head_and_drops_tail_vectors(storage: Storage) -> None:
    four(storage)
    four(storage, "other")
    assert storage.memory.delete_messages_after("t", 1) == [2, 3]
    assert [m.text() for m in storage.memory.get_messages("t")] == ["m0", "m1"]
    assert storage.memory.count_messages("t") == 2 and storage.memory.max_seq("t") == 1
    assert storage.memory.thread_stats(["t"]) == {"t": (2, 1)}
    assert [int(s) for s in storage.memory.get_embeddings(["t"]).seqs] == [0, 1]
    assert [m.seq for m in storage.memory.get_tail("t", 6)] == [0, 1]
    assert storage.memory.count_messages("other") == 4  # nothing else touched
    assert storage.memory.delete_messages_after("t", 5) == []  # nothing after: no-op
    assert storage.memory.delete_messages_after("t", -1) == [0, 1]
    assert storage.memory.get_messages("t") == [] and storage.memory.max_seq("t") == -1


def test_spec_2_7_truncated_seqs_are_never_given_again(storage: Storage,
                                                       adapter: AdapterFactory,
                                                       tmp_path: Path) -> None:
    four(storage)
    storage.memory.delete_messages_after("t", 0)
    assert storage.memory.append_messages("t", [row("n1"), row("n2")]) == [4, 5]
    storage.memory.delete_messages_after("t", 4)
    storage.memory.delete_messages_after("t", -1)
    assert storage.memory.append_messages("t", [row("n3")]) == [6]
    # explicit seqs still land where asked (imports, clones)
    assert storage.memory.append_messages("t", [row("x", seq=2)]) == [2]
    assert storage.memory.thread_stats(["t"]) == {"t": (2, 6)}
    storage.close()
    again = adapter.open_again(tmp_path)
    if again is not None:  # it persists (a file or server database): the floor is stored
        try:
            assert again.memory.append_messages("t", [row("n4")]) == [7]
        finally:
            again.close()


def test_spec_2_7_an_erased_and_recreated_thread_starts_at_zero(storage: Storage) -> None:
    four(storage)
    storage.memory.delete_messages_after("t", 0)
    storage.memory.delete_thread("t")
    storage.memory.create_thread("t")
    assert storage.memory.append_messages("t", [row("again")]) == [0]


def test_spec_2_7_delete_after_refuses_bad_bounds_and_unknown_threads(
        storage: Storage) -> None:
    four(storage)
    for bad in (-2, 1.0, True, "1", None):
        with pytest.raises(InvalidInputError, match="seq must be an integer"):
            storage.memory.delete_messages_after("t", bad)  # type: ignore[arg-type]
    with pytest.raises(NotFoundError, match="thread 'nope' does not exist"):
        storage.memory.delete_messages_after("nope", 0)
    assert storage.memory.count_messages("t") == 4
