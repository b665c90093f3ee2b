"""Conformance: redact_message rewrites one stored message in place and drops its
vector; nothing else changes (erasure uses it on answers that quoted erased text).
redact_observation does the same for an observation and its vectors."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np

from memory_core.storage.base import ObservationVector, Storage
from memory_core.testing.support import row, vec
from memory_core.types import Message, Observation


def test_redact_message_rewrites_one_message_and_drops_its_vector(storage: Storage) -> None:
    storage.memory.create_thread("t", resource_id="u")
    storage.memory.append_messages("t", [row("keep me", embedding=vec(1, 0)),
                                         row("secret 42", embedding=vec(0, 1))])
    assert storage.memory.redact_message("t", 1, Message(role="assistant",
                                                          content="[redacted]"))
    got = storage.memory.get_messages("t")
    assert [m.text() for m in got] == ["keep me", "[redacted]"]
    assert got[1].role == "assistant" and got[1].seq == 1
    block = storage.memory.get_embeddings(["t"])
    assert [int(s) for s in block.seqs] == [0]
    assert storage.memory.search_messages("secret") == []
    assert not storage.memory.redact_message("t", 7, Message(role="user", content="x"))
    assert not storage.memory.redact_message("nope", 0, Message(role="user", content="x"))
    # every redaction is counted where recall checks its cache; a miss counts nothing
    assert storage.memory.scope_counts("t")["t"].edits == 1
    storage.memory.create_thread("other", resource_id="u")
    assert storage.memory.redact_message("t", 0, Message(role="user", content="[x]"))
    assert {c.edits for c in storage.memory.scope_counts("other", "u").values()} == {2}


def test_redact_observation_rewrites_its_text_and_drops_its_vectors(storage: Storage) -> None:
    m = storage.memory
    m.create_thread("t", resource_id="u")
    at = datetime(2026, 1, 2, tzinfo=UTC)
    for oid, text in (("o1", "the code is 4471"), ("o2", "keep me")):
        m.put_observation(Observation(id=oid, thread_id="t", from_seq=0, to_seq=0,
                                      text=text, created_at=at))
        m.put_observation_vectors([ObservationVector(f"om:t:0:{oid}", "t", vec(1, 0),
                                                     {"obs_id": oid})])
    assert m.redact_observation("o1", "the code is [redacted]")
    assert [(o.id, o.text) for o in m.list_observations("t")] == [
        ("o1", "the code is [redacted]"), ("o2", "keep me")]
    assert [v.id for v in m.list_observation_vectors("t")] == ["om:t:0:o2"]
    assert not m.redact_observation("nope", "x")


def test_a_warm_recall_forgets_a_redacted_message(storage: Storage) -> None:
    """A recall engine that cached the message's vector and words before the redaction
    ranks it by neither afterwards: erased means gone, also from a process's warm index
    (an erasure redacts other threads' answers that quoted the erased text)."""
    from memory_core.recall.config import RecallConfig
    from memory_core.recall.engine import RecallEngine

    class Exact:  # the query "secret 42" embeds like the secret's own vector
        def __call__(self, texts: list[str]) -> np.ndarray:
            return np.stack([vec(0, 1) if "secret" in t else vec(1, 0) for t in texts])

    storage.memory.create_thread("t", resource_id="u")
    storage.memory.append_messages("t", [row("keep me", embedding=vec(1, 0)),
                                         row("secret 42", embedding=vec(0, 1)),
                                         row("more", embedding=vec(1, 0))])
    engine = RecallEngine(storage.memory, Exact())
    for mode in ("vector", "lexical", "hybrid"):
        cfg = RecallConfig(top_k=1, mode=mode, scope="resource", threshold=0.5,
                           skip_query_duplicates=False)
        before = engine.run("secret 42", thread_id="t", resource_id="u", config=cfg)
        assert [h.seq for h in before.hits] == [1], mode
    assert storage.memory.redact_message("t", 1, Message(role="assistant",
                                                          content="[redacted]"))
    for mode in ("vector", "lexical", "hybrid"):
        cfg = RecallConfig(top_k=1, mode=mode, scope="resource", threshold=0.5,
                           skip_query_duplicates=False)
        after = engine.run("secret 42", thread_id="t", resource_id="u", config=cfg)
        assert 1 not in [h.seq for h in after.hits], (mode, after.hits)
        assert 1 not in [n.seq for n in after.near_misses if n.score > 0], mode
