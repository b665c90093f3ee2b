"""Conformance: observations — first write wins, creation order, condensing."""

from __future__ import annotations

from datetime import timedelta

from memory_core.storage.base import Storage
from memory_core.testing.support import T0
from memory_core.types import Observation


def obs(oid: str, at: int, *, thread: str = "t1", level: int = 0,
        text: str = "noted") -> Observation:
    return Observation(id=oid, thread_id=thread, from_seq=0, to_seq=3, level=level, text=text,
                       source_ids=["s1"] if level else [], created_at=T0 + timedelta(seconds=at))


def test_put_is_idempotent_first_write_wins(storage: Storage) -> None:
    storage.memory.put_observation(obs("o1", 0, text="first"))
    storage.memory.put_observation(obs("o1", 5, text="second"))
    (o,) = storage.memory.list_observations("t1")
    assert o == obs("o1", 0, text="first")


def test_listed_by_created_at_then_id(storage: Storage) -> None:
    for oid, at in (("c", 1), ("b", 2), ("a", 2), ("z", 0)):
        storage.memory.put_observation(obs(oid, at))
    storage.memory.put_observation(obs("other", 0, thread="t2"))
    assert [o.id for o in storage.memory.list_observations("t1")] == ["z", "c", "a", "b"]


def test_mark_condensed_and_include_condensed(storage: Storage) -> None:
    storage.memory.put_observation(obs("o1", 0))
    storage.memory.put_observation(obs("o2", 1))
    storage.memory.put_observation(obs("r1", 2, level=1))
    storage.memory.mark_condensed(["o1", "o2", "ghost"])
    assert [(o.id, o.condensed) for o in storage.memory.list_observations("t1")] == \
        [("o1", True), ("o2", True), ("r1", False)]
    assert [o.id for o in storage.memory.list_observations("t1", include_condensed=False)] == \
        ["r1"]


def test_round_trip_keeps_fields(storage: Storage) -> None:
    o = Observation(id="r", thread_id="t1", from_seq=None, to_seq=None, level=2,
                    text="ünïcode ✓", source_ids=["a", "b"], created_at=T0)
    storage.memory.put_observation(o)
    assert storage.memory.list_observations("t1") == [o]
