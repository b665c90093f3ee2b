"""Conformance: scope_rows — every message of some threads as columns, in one call
(recall's cache loads a scope from it)."""

from __future__ import annotations

from typing import Any

import numpy as np

from memory_core.lifecycle.erasure import erase_thread
from memory_core.storage.base import ScopeRows, Storage
from memory_core.storage.common import ts_micros
from memory_core.testing.support import StepClock, row, vec
from memory_core.types import AppendRow, Message


def _by_ref(rows: ScopeRows) -> dict[tuple[str, int], dict[str, Any]]:
    """The scan keyed by (thread, seq), each row once (the order is not promised)."""
    out: dict[tuple[str, int], dict[str, Any]] = {}
    texts = rows.text_list()  # (DuckDB gives an Arrow column)
    for i in range(len(rows)):
        key = (rows.threads[int(rows.tidx[i])], int(rows.seqs[i]))
        assert key not in out
        out[key] = {
            "created": int(rows.created_us[i]),
            "vec": rows.matrix[i].tolist() if rows.matrix is not None and rows.has_vec[i]
            else None,
            "text": texts[i] if rows.texts is not None else "-",
            "meta": rows.metadata[i] if rows.metadata is not None else "-",
        }
    return out


def _fill(storage: Storage) -> None:
    m = storage.memory
    m.create_thread("a", resource_id="u")
    m.create_thread("b", resource_id="u")
    m.create_thread("empty", resource_id="u")
    m.append_messages("a", [row("Hello THERE", embedding=vec(1, 0, 0), topic="x"),
                            row("no vector here"),
                            AppendRow(message=Message(role="assistant", content=[]))])
    m.append_messages("b", [row("Ünïcode Σ ok?", embedding=vec(0, 2, 0), seq=4),
                            row("seven", embedding=vec(0, 0, 3), seq=9, n=1)])


def test_every_column_matches_the_stored_messages(clocked: Storage,
                                                  clock: StepClock) -> None:
    _fill(clocked)
    m = clocked.memory
    got = m.scope_rows(["b", "a", "empty", "nobody"], texts=True, metadata=True)
    assert got.threads == ("b", "a", "empty", "nobody")
    assert len(got) == 5 and got.matrix is not None and got.matrix.dtype == np.float32
    assert got.matrix.shape == (5, 3)
    rows = _by_ref(got)
    stored = {(t, s.seq): s for t in ("a", "b") for s in m.get_messages(t)}
    assert set(rows) == set(stored)
    for key, s in stored.items():
        r = rows[key]
        assert r["created"] == ts_micros(s.created_at)
        text = s.text()
        assert r["text"] == (None if text is None else text.lower())
        assert r["meta"] == (s.metadata or None)
    assert rows[("a", 0)]["vec"] == [1, 0, 0] and rows[("b", 4)]["vec"] == [0, 2, 0]
    assert rows[("a", 1)]["vec"] is None and rows[("a", 2)]["vec"] is None
    assert rows[("b", 9)]["meta"] == {"n": 1} and rows[("a", 1)]["meta"] is None
    assert rows[("b", 4)]["text"] == "ünïcode σ ok?"
    # a row without a vector is a zero row of the matrix
    i = [j for j in range(len(got)) if not got.has_vec[j]]
    assert len(i) == 2 and not got.matrix[i].any()


def test_after_seq_and_optional_columns(storage: Storage) -> None:
    _fill(storage)
    m = storage.memory
    got = m.scope_rows(["a", "b"], after_seq={"a": 0, "b": 4}, vectors=False)
    assert set(_by_ref(got)) == {("a", 1), ("a", 2), ("b", 9)}
    assert got.matrix is None and got.texts is None and got.metadata is None
    assert not got.has_vec.any()
    assert len(m.scope_rows(["a"], after_seq={"a": 2})) == 0
    nothing = m.scope_rows([])
    assert len(nothing) == 0 and nothing.threads == ()


def test_no_vectors_stored_yet_gives_an_empty_matrix(storage: Storage) -> None:
    m = storage.memory
    m.create_thread("t")
    m.append_messages("t", [row("a"), row("b")])
    got = m.scope_rows(["t"])
    assert len(got) == 2 and got.matrix is not None and not got.has_vec.any()
    assert got.matrix.shape[0] == 2 and not got.matrix.any()


def test_agrees_with_get_embeddings_and_sees_redactions(storage: Storage) -> None:
    _fill(storage)
    m = storage.memory
    block = m.get_embeddings(["a", "b"])
    got = _by_ref(m.scope_rows(["a", "b"]))
    for t, s, v in zip(block.thread_ids, block.seqs, block.matrix, strict=True):
        assert got[(str(t), int(s))]["vec"] == v.tolist()
    m.redact_message("a", 0, Message(role="user", content="[erased]"))
    after = _by_ref(m.scope_rows(["a"], texts=True, metadata=True))
    assert after[("a", 0)] == {"created": after[("a", 0)]["created"], "vec": None,
                               "text": "[erased]", "meta": None}


def test_many_threads_and_rows(storage: Storage) -> None:
    """More threads than one statement's parameters, rows streamed in batches."""
    m = storage.memory
    rng = np.random.default_rng(1)
    mats = {}
    for t in range(260):
        m.create_thread(f"t{t:03}", resource_id="u")
    for t in (0, 7, 259):
        mats[t] = rng.standard_normal((60, 4)).astype(np.float32)
        m.append_messages(f"t{t:03}", [row(f"m{i}", embedding=mats[t][i]) for i in range(60)])
    got = m.scope_rows([f"t{t:03}" for t in range(260)], texts=True)
    assert len(got) == 180 and got.matrix is not None
    for i in range(len(got)):
        t = int(got.threads[int(got.tidx[i])][1:])
        s = int(got.seqs[i])
        assert np.array_equal(got.matrix[i], mats[t][s]) and got.texts is not None
        assert got.text_list()[i] == f"m{s}"


def test_located_reads_agree_with_reads_by_ref_even_when_stale(storage: Storage) -> None:
    _fill(storage)
    m = storage.memory
    got = m.scope_rows(["a", "b"])
    refs = [(got.threads[int(t)], int(s)) for t, s in zip(got.tidx, got.seqs, strict=True)]
    locs = got.locators.tolist() if got.locators is not None else [-1] * len(refs)
    want = m.get_messages_by_refs(refs)
    assert len(want) == 5
    assert m.get_messages_located(refs, locs) == want
    # locators that point at other rows, or at nothing, never give a wrong message
    shuffled = locs[1:] + locs[:1]
    assert m.get_messages_located(refs, shuffled) == want
    assert m.get_messages_located(refs, [10**9] * len(refs)) == want
    assert m.get_messages_located(refs[:2], [-1, -1]) == m.get_messages_by_refs(refs[:2])
    assert m.get_messages_located([("a", 99), ("nobody", 0)], [locs[0], 3]) == []
    # after an erasure (DuckDB rewrites its file: rows move) and a new thread
    erase_thread(storage, "a")
    m.create_thread("a", resource_id="u")
    m.append_messages("a", [row("fresh")])
    again = m.get_messages_located(refs, locs)
    assert again == m.get_messages_by_refs(refs)
    assert [(x.thread_id, x.seq, x.text()) for x in again if x.thread_id == "a"] == [
        ("a", 0, "fresh")]
