"""Conformance: redact_message rewrites one stored message in place and drops its
vector; nothing else changes (erasure uses it on answers that quoted erased text)."""

from __future__ import annotations

from memory_core.storage.base import Storage
from memory_core.types import Message
from tests.conformance.support import row, vec


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
