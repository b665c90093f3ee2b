"""Erasure reaches the memory of the scopes exposed to the erased messages (issue 33
point 2): other threads' working memory, observations (and their vectors) and the
observer's journal keep no erased text — on every adapter, in the erasure's one
transaction — while an unexposed person's memory that says the same is left as it is."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from memory_core.errors import NotFoundError
from memory_core.journal.keys import ObserverKeys, RunKeys
from memory_core.journal.records import ObserveRecord
from memory_core.lifecycle.erasure import REDACTED, erase_thread
from memory_core.storage.base import (
    RESOURCE_WM_PREFIX,
    THREAD_WM_PREFIX,
    ObservationVector,
    Storage,
)
from memory_core.types import AppendRow, Message, Observation, RunRecord
from tests.storage_factories import ADAPTERS, make_storage

CODE = "4471"  # short: the gate code of issue 33
SAID = f"The gate code for the depot is {CODE}, keep it safe."


def _plant(s: Storage, thread_id: str, resource_id: str) -> None:
    """A thread whose memory kept the sentence, as the working-memory tool, the
    observer and the reflector write it."""
    s.memory.create_thread(thread_id, resource_id=resource_id)
    s.memory.append_messages(thread_id, [AppendRow(message=Message(content="noted"))])
    s.memory.put_working_memory(f"{THREAD_WM_PREFIX}{thread_id}",
                                {"depot": {"gate": CODE, "note": SAID}})
    obs = Observation(id=f"{thread_id}-obs", thread_id=thread_id, from_seq=0, to_seq=0,
                      text=f"[seq 0] User said: {SAID}",
                      created_at=datetime(2026, 1, 2, tzinfo=UTC))
    s.memory.put_observation(obs)
    s.memory.put_observation_vectors([ObservationVector(
        ObserverKeys(thread_id).vector(0, 0), thread_id, np.ones(4, np.float32),
        {"obs_id": obs.id, "thread_id": thread_id})])
    s.runs.put_if_absent(ObserverKeys(thread_id).observe(0), ObserveRecord(
        text=obs.text, from_seq=0, to_seq=0, kept_seqs=[0]).model_dump(mode="json"))


def _memory(s: Storage, thread_id: str, resource_id: str) -> str:
    return repr([s.memory.get_working_memory(f"{THREAD_WM_PREFIX}{thread_id}"),
                 s.memory.get_working_memory(f"{RESOURCE_WM_PREFIX}{resource_id}"),
                 s.memory.list_observations(thread_id),
                 s.runs.list(ObserverKeys(thread_id).prefix)])


@pytest.mark.parametrize("kind", ADAPTERS)
def test_the_memory_of_exposed_scopes_keeps_no_erased_text(kind: str,
                                                           tmp_path: Path) -> None:
    s = make_storage(kind, tmp_path)
    s.memory.create_thread("secret", resource_id="ann")
    s.memory.append_messages("secret", [AppendRow(message=Message(content=SAID)),
                                        AppendRow(message=Message(content=CODE))])
    _plant(s, "ann-later", "ann")  # the same person's other thread: exposed
    s.memory.put_working_memory(f"{RESOURCE_WM_PREFIX}ann", {"gate": CODE})
    _plant(s, "bob", "bob")  # another person who said the same: never given it
    # a staff member's run that was given the erased message: its scopes are exposed
    s.runs.start_run(RunRecord(run_id="x1", agent="a", thread_id="staff",
                               resource_id="staff", started_at=datetime(2026, 1, 3, tzinfo=UTC)))
    s.runs.put_if_absent(RunKeys("x1").prompt, {"items": [{
        "lane": "recalled", "thread_id": "secret", "seq": 0,
        "message": {"role": "user", "content": SAID}}]})
    _plant(s, "staff", "staff")
    s.memory.put_working_memory(f"{RESOURCE_WM_PREFIX}staff", {"heard": SAID})
    bob_before = _memory(s, "bob", "bob")
    assert CODE in _memory(s, "ann-later", "ann")

    erase_thread(s, "secret")

    after = _memory(s, "ann-later", "ann")
    assert CODE not in after and REDACTED in after
    staff = _memory(s, "staff", "staff")
    assert CODE not in staff and REDACTED in staff
    assert s.memory.get_working_memory(f"{THREAD_WM_PREFIX}ann-later") == {
        "depot": {"gate": REDACTED, "note": REDACTED}}
    assert [o.text for o in s.memory.list_observations("ann-later")] == [
        f"[seq 0] User said: {REDACTED}"]
    # the vector embedded the old text: dropped (index_missing makes one again)
    assert s.memory.list_observation_vectors("ann-later") == []
    assert _memory(s, "bob", "bob") == bob_before
    assert len(s.memory.list_observation_vectors("bob")) == 1
    with pytest.raises(NotFoundError):
        erase_thread(s, "secret")
    s.close()


@pytest.mark.parametrize("kind", ["sqlite", "duckdb-file"])
def test_no_byte_of_it_remains_in_the_file(kind: str, tmp_path: Path) -> None:
    """The redacted working memory, observation and observer record leave no byte of
    the erased sentence in the database's files (the erasure's file rewrite)."""
    s = make_storage(kind, tmp_path)
    s.memory.create_thread("secret", resource_id="ann")
    s.memory.append_messages("secret", [AppendRow(message=Message(content=SAID))])
    _plant(s, "ann-later", "ann")
    erase_thread(s, "secret")
    assert [o.text for o in s.memory.list_observations("ann-later")] == [
        f"[seq 0] User said: {REDACTED}"]
    s.close()
    for f in tmp_path.iterdir():
        if f.is_file():
            assert b"keep it safe" not in f.read_bytes(), f.name
