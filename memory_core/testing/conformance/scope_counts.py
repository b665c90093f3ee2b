"""Conformance: scope_counts — a recall scope's threads with their counts in one call."""

from __future__ import annotations

import pytest

from memory_core.errors import NotFoundError
from memory_core.lifecycle.erasure import erase_thread
from memory_core.storage.base import Storage, ThreadCounts
from memory_core.testing.support import T0, StepClock, row


def test_resource_scope_lists_its_threads_then_the_own_thread(clocked: Storage,
                                                              clock: StepClock) -> None:
    m = clocked.memory
    clock.set(10)
    m.create_thread("b", resource_id="u1")
    clock.set(10)
    m.create_thread("a", resource_id="u1")  # same instant: ties by id
    clock.set(20)
    m.create_thread("newest", resource_id="u1")
    clock.set(30)
    m.create_thread("own", resource_id="other")
    m.create_thread("stranger", resource_id="u2")
    m.append_messages("a", [row("x"), row("y")])
    m.append_messages("newest", [row("z", seq=7)])
    m.append_messages("own", [row("o")])

    got = m.scope_counts("own", "u1")
    assert list(got) == ["newest", "a", "b", "own"]
    assert got["a"] == (2, 1, got["a"].created_at, 0) and got["newest"][:2] == (1, 7)
    assert got["b"][:2] == (0, -1) and got["own"][:2] == (1, 0)
    assert isinstance(got["a"], ThreadCounts)
    assert got["a"].created_at == T0.replace(second=10)
    # the own thread inside the resource keeps its place; no resource: the thread alone
    assert list(m.scope_counts("a", "u1")) == ["newest", "a", "b"]
    assert list(m.scope_counts("a")) == ["a"]
    assert m.scope_counts("own")["own"].message_count == 1
    # the counts agree with thread_stats
    stats = m.thread_stats(list(got))
    assert {t: c[:2] for t, c in got.items()} == stats


def test_unknown_thread_is_not_found(storage: Storage) -> None:
    storage.memory.create_thread("t", resource_id="u")
    with pytest.raises(NotFoundError, match="thread 'ghost' does not exist"):
        storage.memory.scope_counts("ghost", "u")


def test_a_thread_made_again_shows_its_new_creation_time(clocked: Storage,
                                                          clock: StepClock) -> None:
    m = clocked.memory
    clock.set(5)
    m.create_thread("t", resource_id="u")
    m.append_messages("t", [row("a")])
    first = m.scope_counts("t", "u")["t"]
    erase_thread(clocked, "t")
    clock.set(50)
    m.create_thread("t", resource_id="u")
    again = m.scope_counts("t", "u")["t"]
    assert first[:2] == (1, 0) and again[:2] == (0, -1)
    assert again.created_at > first.created_at
