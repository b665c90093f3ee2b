"""Conformance: a file database reopened by a new handle shows everything written
(adapters with the ``persists`` capability)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_core.storage.base import Storage
from memory_core.testing.factory import AdapterFactory
from memory_core.testing.support import T0, row, vec
from memory_core.types import Observation, RunRecord


def test_reopened_database_shows_everything(storage: Storage, adapter: AdapterFactory,
                                            tmp_path: Path) -> None:
    m = storage.memory
    m.create_thread("t1", resource_id="u1", title="kept", metadata={"k": [1]})
    m.append_messages("t1", [row("a", embedding=vec(0.25, -1.5), run_id="r1"), row("b")])
    m.put_working_memory("resource:u1", {"x": 1})
    m.put_observation(Observation(id="o1", thread_id="t1", text="seen", created_at=T0))
    m.mark_condensed(["o1"])
    storage.runs.start_run(RunRecord(run_id="r1", agent="a", thread_id="t1", started_at=T0))
    storage.runs.set_run_status("r1", "completed", finished_at=T0)
    storage.runs.put_if_absent("r1:b", 2)
    storage.runs.put_if_absent("r1:a", 1)
    storage.close()

    again = adapter.open_again(tmp_path)
    if again is None:
        pytest.skip(f"{adapter.name} keeps nothing after close")
    try:
        (t,) = again.memory.list_threads()
        assert (t.id, t.title, t.metadata, t.resource_id) == ("t1", "kept", {"k": [1]}, "u1")
        assert [x.text() for x in again.memory.get_messages("t1")] == ["a", "b"]
        block = again.memory.get_embeddings(["t1"])
        assert again.memory.embedding_dim() == 2 and block.matrix.tolist() == [[0.25, -1.5]]
        assert again.memory.get_working_memory("resource:u1") == {"x": 1}
        assert [(o.id, o.condensed) for o in again.memory.list_observations("t1")] == \
            [("o1", True)]
        assert again.runs.require_run("r1").status == "completed"
        assert again.runs.list("r1:") == [("r1:b", 2), ("r1:a", 1)]
        # the seq counter carries on where it stopped
        assert again.memory.append_messages("t1", [row("c")]) == [2]
    finally:
        again.close()

