"""Conformance: threads — create, get, list order (SPEC §2.2), update (§2.3), clone (§2.4)."""

from __future__ import annotations

import pytest

from memory_core.errors import InvalidInputError, NotFoundError
from memory_core.storage.base import NewThread, Storage
from memory_core.testing.support import T0, StepClock, row, vec
from memory_core.types import Observation


def test_create_thread_with_given_id(storage: Storage) -> None:
    t = storage.memory.create_thread("t1", resource_id="u1", title="Hi", metadata={"a": 1})
    assert (t.id, t.resource_id, t.title, t.metadata) == ("t1", "u1", "Hi", {"a": 1})
    assert storage.memory.get_thread("t1") == t


def test_create_thread_generates_distinct_ids(storage: Storage) -> None:
    a = storage.memory.create_thread(resource_id="u1")
    b = storage.memory.create_thread(resource_id="u1")
    assert a.id.startswith("th-") and b.id.startswith("th-") and a.id != b.id
    assert storage.memory.get_thread(a.id) == a


def test_create_duplicate_id_is_refused(storage: Storage) -> None:
    storage.memory.create_thread("t1")
    with pytest.raises(InvalidInputError, match="thread 't1' already exists"):
        storage.memory.create_thread("t1")


def test_get_unknown_thread_is_none(storage: Storage) -> None:
    assert storage.memory.get_thread("nope") is None


def test_list_by_resource_orders_created_desc_ignoring_updated(clocked: Storage,
                                                               clock: StepClock) -> None:
    # SPEC §2.2: created 1000/2000/3000, the oldest updated last -> new, mid, old
    for t, name in ((1000, "old"), (2000, "mid"), (3000, "new")):
        clock.set(t)
        clocked.memory.create_thread(name, resource_id="u1")
    clock.set(9000)
    clocked.memory.update_thread("old", title="touched")
    clocked.memory.create_thread("other", resource_id="u2")
    assert [t.id for t in clocked.memory.list_threads("u1")] == ["new", "mid", "old"]


def test_list_ties_on_created_at_break_by_id_ascending(clocked: Storage,
                                                       clock: StepClock) -> None:
    for name in ("b", "c", "a"):
        clock.set(100)
        clocked.memory.create_thread(name, resource_id="u1")
    assert [t.id for t in clocked.memory.list_threads("u1")] == ["a", "b", "c"]


def test_list_all_threads(clocked: Storage, clock: StepClock) -> None:
    clocked.memory.create_thread("x", resource_id="u1")
    clocked.memory.create_thread("y", resource_id="u2")
    clocked.memory.create_thread("z")
    assert [t.id for t in clocked.memory.list_threads()] == ["z", "y", "x"]
    assert clocked.memory.list_threads("nobody") == []


def test_list_resources_distinct_sorted(storage: Storage) -> None:
    for tid, rid in (("a", "u2"), ("b", "u1"), ("c", "u2"), ("d", None)):
        storage.memory.create_thread(tid, resource_id=rid)
    assert storage.memory.list_resources() == ["u1", "u2"]


def test_update_merges_metadata_and_bumps_updated_at(clocked: Storage,
                                                     clock: StepClock) -> None:
    clock.set(10)
    t = clocked.memory.create_thread("t1", title="a", metadata={"x": 1, "y": 2})
    clock.set(20)
    u = clocked.memory.update_thread("t1", metadata={"y": 3, "z": 4})
    assert u.metadata == {"x": 1, "y": 3, "z": 4}
    assert u.title == "a"
    assert u.created_at == t.created_at and u.updated_at > t.updated_at
    assert clocked.memory.get_thread("t1") == u


def test_update_resource_moves_its_messages(storage: Storage) -> None:
    storage.memory.create_thread("t1", resource_id="u1")
    storage.memory.append_messages("t1", [row("a"), row("b")])
    storage.memory.update_thread("t1", resource_id="u2")
    assert {m.resource_id for m in storage.memory.get_messages("t1")} == {"u2"}
    assert [t.id for t in storage.memory.list_threads("u2")] == ["t1"]


def test_update_unknown_thread_names_it(storage: Storage) -> None:
    with pytest.raises(NotFoundError, match="^thread 'ghost' does not exist$"):
        storage.memory.update_thread("ghost", title="x")


def test_clone_copies_everything_and_sets_parent(clocked: Storage) -> None:
    m = clocked.memory
    m.create_thread("src", resource_id="u1", title="T", metadata={"k": "v"})
    m.append_messages("src", [row("a", embedding=vec(1, 0)), row("b"),
                              row("c", embedding=vec(0, 1))])
    m.put_working_memory("thread:src", {"name": "Ada"})
    m.put_observation(Observation(id="o1", thread_id="src", from_seq=0, to_seq=1,
                                  text="saw a", created_at=T0))
    c = m.clone_thread("src", "dst")
    assert (c.parent_thread_id, c.resource_id, c.title, c.metadata) == ("src", "u1", "T",
                                                                         {"k": "v"})
    src_msgs, dst_msgs = m.get_messages("src"), m.get_messages("dst")
    assert [(x.seq, x.text(), x.created_at) for x in dst_msgs] == \
        [(x.seq, x.text(), x.created_at) for x in src_msgs]
    assert {x.thread_id for x in dst_msgs} == {"dst"}
    block = m.get_embeddings(["dst"])
    assert list(block.seqs) == [0, 2]
    assert block.matrix.tolist() == [[1.0, 0.0], [0.0, 1.0]]
    assert m.get_working_memory("thread:dst") == {"name": "Ada"}
    obs = m.list_observations("dst")
    assert [(o.text, o.from_seq, o.to_seq) for o in obs] == [("saw a", 0, 1)]
    assert obs[0].id != "o1"
    # the source is untouched
    assert [o.id for o in m.list_observations("src")] == ["o1"]
    assert m.count_messages("src") == 3


def test_clone_resource_is_option_else_source_else_default(storage: Storage) -> None:
    m = storage.memory
    m.create_thread("with", resource_id="u1")
    m.create_thread("without")
    assert m.clone_thread("with", "c1", resource_id="u9").resource_id == "u9"
    assert m.clone_thread("with", "c2").resource_id == "u1"
    assert m.clone_thread("without", "c3").resource_id == "default"


def test_clone_unknown_source_raises(storage: Storage) -> None:
    with pytest.raises(NotFoundError, match="thread 'ghost' does not exist"):
        storage.memory.clone_thread("ghost", "x")
    assert storage.memory.get_thread("x") is None


def test_clone_onto_existing_id_is_refused_and_writes_nothing(storage: Storage) -> None:
    m = storage.memory
    m.create_thread("src")
    m.append_messages("src", [row("a")])
    m.create_thread("dst")
    with pytest.raises(InvalidInputError, match="thread 'dst' already exists"):
        m.clone_thread("src", "dst")
    assert m.count_messages("dst") == 0


def _new_threads(n: int) -> list[NewThread]:
    """``n`` new threads (more than a driver's few-row batch), each with ``i % 3 + 1``
    messages at explicit seqs, every other one with vectors."""
    return [NewThread(f"n{i}", [row(f"m{i}.{k}", seq=k, run_id=f"r{i}",
                                    embedding=vec(1, i, k) if i % 2 else None)
                                for k in range(i % 3 + 1)],
                      resource_id=f"u{i % 2}", title=f"T{i}", metadata={"i": i},
                      parent_thread_id=f"n{i - 1}" if i % 4 == 1 else None)
            for i in range(n)]


def test_add_threads_is_create_then_append_for_each(storage: Storage) -> None:
    storage.memory.add_threads(_new_threads(12))
    assert storage.memory.embedding_dim() == 3
    for i in range(12):
        t = storage.memory.require_thread(f"n{i}")
        assert (t.resource_id, t.title, t.metadata) == (f"u{i % 2}", f"T{i}", {"i": i})
        assert t.parent_thread_id == (f"n{i - 1}" if i % 4 == 1 else None)
        msgs = storage.memory.get_messages(f"n{i}")
        assert [(m.seq, m.content, m.run_id) for m in msgs] == [
            (k, f"m{i}.{k}", f"r{i}") for k in range(i % 3 + 1)]
    assert storage.memory.thread_stats(["n0", "n5"]) == {"n0": (1, 0), "n5": (3, 2)}
    # the counters go on from there, and seqs without a given one follow
    assert storage.memory.append_messages("n5", [row("next")]) == [3]
    storage.memory.add_threads([NewThread("plain", [row("a"), row("b")]),
                                NewThread("empty")])
    assert [m.seq for m in storage.memory.get_messages("plain")] == [0, 1]
    assert storage.memory.thread_stats(["empty"]) == {"empty": (0, -1)}


def test_add_threads_refuses_a_stored_or_repeated_id_writing_nothing(storage: Storage) -> None:
    storage.memory.create_thread("n3")
    with pytest.raises(InvalidInputError, match="thread 'n3' already exists"):
        with storage.write_batch():
            storage.memory.add_threads(_new_threads(12))
    with pytest.raises(InvalidInputError, match="thread 'x' already exists"):
        with storage.write_batch():
            storage.memory.add_threads([NewThread("x", [row()]), NewThread("x")])
    grouped = type(storage).write_batch is not Storage.write_batch
    if grouped:  # all-or-nothing where the adapter groups a batch's writes
        assert storage.memory.get_thread("n0") is None
        assert storage.memory.get_thread("x") is None


def test_add_threads_checks_vectors_against_the_store(storage: Storage) -> None:
    storage.memory.create_thread("t")
    storage.memory.append_messages("t", [row(embedding=vec(1, 2))])
    with pytest.raises(InvalidInputError, match="dimension 3"):
        storage.memory.add_threads([NewThread("n", [row(embedding=vec(1, 2, 3))])])
