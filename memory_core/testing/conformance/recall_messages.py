"""Conformance: the messages a warm recall returns are the stored ones, as a read of
the store gives them now — also where the recall cache keeps a scope's messages beside
its vectors (DuckDB): every in-place change of a stored message (a redaction, a thread
moved to another resource), an erasure and a truncation show at the next recall, and
creation times keep the offset they were written with."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta, timezone

import numpy as np
import pytest

from memory_core.lifecycle.erasure import erase_thread
from memory_core.recall.config import RecallConfig
from memory_core.recall.engine import RecallEngine
from memory_core.recall.results import RecallOutcome
from memory_core.storage.base import Storage
from memory_core.testing.support import row, vec
from memory_core.types import Message, StoredMessage

CFG = RecallConfig(top_k=1, near_misses=1, message_range=1, scope="resource",
                   threshold=0.5, skip_query_duplicates=False)


class Toward:
    """Embeds every query as the "needle" direction."""

    def __call__(self, texts: list[str]) -> np.ndarray:
        return np.tile(vec(0, 1), (len(texts), 1))


def _fill(storage: Storage) -> None:
    """Thread "a" of resource "u": a needle (the hit) between two neighbours."""
    m = storage.memory
    m.create_thread("a", resource_id="u")
    m.append_messages("a", [row("before", embedding=vec(1, 0), run_id="r1", k=1),
                            row("needle", role="assistant", embedding=vec(0, 1)),
                            row("after", embedding=vec(1, 0), k=3)])


def _recall(engine: RecallEngine, thread: str = "a", cfg: RecallConfig = CFG,
            ) -> RecallOutcome:
    return engine.run("needle", thread_id=thread, resource_id="u", config=cfg)


def _messages(out: RecallOutcome) -> list[StoredMessage]:
    return sorted((h.message for h in out.hits), key=lambda m: m.ref)


def _same_as_stored(storage: Storage, out: RecallOutcome) -> list[StoredMessage]:
    """The recalled messages, checked to be exactly what the store holds now (times
    with their offsets included)."""
    got = _messages(out)
    assert got, out
    stored = storage.memory.get_messages_by_refs([m.ref for m in got])
    assert got == stored
    assert [m.created_at.isoformat() for m in got] == [m.created_at.isoformat()
                                                       for m in stored]
    return got


@contextmanager
def _warm(storage: Storage) -> Iterator[RecallEngine]:
    """An engine whose cache holds the scope, inside a session (DuckDB then vouches by
    its change token alone that nothing else was written)."""
    engine = RecallEngine(storage.memory, Toward())
    with storage.session():
        _same_as_stored(storage, _recall(engine))
        yield engine


def test_warm_recall_builds_the_stored_messages_times_offsets_and_runs_included(
        storage: Storage) -> None:
    m = storage.memory
    m.create_thread("a", resource_id="u")
    plus2 = datetime(2024, 5, 1, 12, 0, 0, 250000, tzinfo=timezone(timedelta(hours=2)))
    odd = datetime(2024, 5, 1, 9, 0, 0, tzinfo=timezone(timedelta(hours=-5, minutes=-30,
                                                                  seconds=-15)))
    m.append_messages("a", [
        row("before", embedding=vec(1, 0), created_at=plus2, run_id="r1", k=1),
        row("needle ünïcode", role="assistant", embedding=vec(0, 1), created_at=odd,
            nested={"x": [1, 2]}),
        row("after", embedding=vec(1, 0), created_at=datetime(2024, 5, 1, tzinfo=UTC))])
    m.append_messages("a", [row("no time given", embedding=vec(1, 0))])
    engine = RecallEngine(m, Toward())
    with storage.session():
        for _ in range(2):  # cold, then warm
            got = _same_as_stored(storage, _recall(engine))
            assert [x.text() for x in got] == ["before", "needle ünïcode", "after"]
            assert got[0].created_at.utcoffset() == timedelta(hours=2)
            assert got[0].run_id == "r1" and got[0].metadata == {"k": 1}
            assert got[1].metadata == {"nested": {"x": [1, 2]}} and got[1].role == "assistant"
        # rows appended since (an incremental load) come out right too
        m.append_messages("a", [row("needle again", embedding=vec(0, 1), created_at=odd,
                                    run_id="r2")])
        cfg = RecallConfig(top_k=2, message_range=0, scope="resource", threshold=0.5)
        got = _same_as_stored(storage, _recall(engine, cfg=cfg))
        assert [x.text() for x in got] == ["needle ünïcode", "needle again"]


def test_a_warm_recall_shows_a_redacted_neighbour_as_redacted(storage: Storage) -> None:
    _fill(storage)
    with _warm(storage) as engine:
        assert storage.memory.redact_message("a", 0, Message(role="user",
                                                              content="[redacted]"))
        got = _same_as_stored(storage, _recall(engine))
        assert [x.text() for x in got] == ["[redacted]", "needle", "after"]
        assert got[0].metadata == {}


def test_a_warm_recall_gives_a_moved_thread_s_messages_their_new_resource(
        storage: Storage) -> None:
    _fill(storage)
    cfg = CFG.model_copy(update={"scope": "thread"})
    engine = RecallEngine(storage.memory, Toward())
    with storage.session():
        assert {x.resource_id for x in _messages(_recall(engine, cfg=cfg))} == {"u"}
        before = storage.memory.scope_counts("a")["a"].edits
        storage.memory.update_thread("a", resource_id="elsewhere")
        assert storage.memory.scope_counts("a")["a"].edits == before + 1
        got = _same_as_stored(storage, _recall(engine, cfg=cfg))
        assert {x.resource_id for x in got} == {"elsewhere"}


def test_a_warm_recall_returns_nothing_of_an_erased_thread_nor_its_old_messages(
        storage: Storage) -> None:
    _fill(storage)
    m = storage.memory
    m.create_thread("b", resource_id="u")
    m.append_messages("b", [row("b0", embedding=vec(1, 0)), row("b1", embedding=vec(1, 0))])
    with _warm(storage) as engine:
        erase_thread(storage, "a")
        m.create_thread("a", resource_id="u")  # the same id, the same seqs, new words
        m.append_messages("a", [row("fresh 0", embedding=vec(1, 0)),
                                row("fresh needle", embedding=vec(0, 1)),
                                row("fresh 2", embedding=vec(1, 0))])
        got = _same_as_stored(storage, _recall(engine, thread="b"))
        assert [x.text() for x in got] == ["fresh 0", "fresh needle", "fresh 2"]


def test_a_warm_recall_returns_no_truncated_message(storage: Storage) -> None:
    _fill(storage)
    m = storage.memory
    with _warm(storage) as engine:
        assert m.delete_messages_after("a", 1) == [2]
        got = _same_as_stored(storage, _recall(engine))
        assert [(x.seq, x.text()) for x in got] == [(0, "before"), (1, "needle")]
        m.append_messages("a", [row("later", embedding=vec(1, 0))])
        got = _same_as_stored(storage, _recall(engine))
        assert [(x.seq, x.text()) for x in got] == [(0, "before"), (1, "needle"),
                                                    (3, "later")]


@pytest.mark.parametrize("share", [0.25, 0.0])
def test_cached_or_read_the_warm_messages_agree(storage: Storage, share: float) -> None:
    """With room for the scope's messages (``message_share``) or none."""
    _fill(storage)
    engine = RecallEngine(storage.memory, Toward(), message_share=share)
    with storage.session():
        first = _same_as_stored(storage, _recall(engine))
        assert _same_as_stored(storage, _recall(engine)) == first
