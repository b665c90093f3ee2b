"""Conformance: observation vectors (SPEC §8.9) — stored through the port on every
adapter, first write wins, listed by id, queried by cosine, erased with their thread."""

from __future__ import annotations

import numpy as np
import pytest

from memory_core.errors import InvalidInputError
from memory_core.storage.base import ObservationVector, Storage


def vec(vid: str, thread: str, values: list[float], **meta: object) -> ObservationVector:
    return ObservationVector(vid, thread, np.asarray(values, dtype=np.float32),
                             {"thread_id": thread, "obs_id": vid, **meta})


def test_spec_8_9_vectors_round_trip_first_write_wins(storage: Storage) -> None:
    m = storage.memory
    third = float(np.float32(1 / 3))
    m.put_observation_vectors([vec("om:t1:0:0", "t1", [third, 0.5, -2.0], level=0),
                               vec("om:t2:0:0", "t2", [0.0, 1.0, 0.0], level=0)])
    m.put_observation_vectors([vec("om:t1:0:0", "t1", [9.0, 9.0, 9.0], level=7)])
    (v,) = m.list_observation_vectors("t1")
    assert v.id == "om:t1:0:0" and v.metadata == {"thread_id": "t1", "obs_id": "om:t1:0:0",
                                                  "level": 0}
    assert v.vector.dtype == np.float32 and v.vector.tolist() == [third, 0.5, -2.0]
    assert [x.id for x in m.list_observation_vectors()] == ["om:t1:0:0", "om:t2:0:0"]


def test_spec_8_9_query_ranks_every_thread_by_cosine(storage: Storage) -> None:
    m = storage.memory
    m.put_observation_vectors([vec("b", "t1", [1.0, 0.0]), vec("a", "t2", [1.0, 0.0]),
                               vec("c", "t1", [0.0, 1.0]), vec("d", "t1", [1.0, 1.0])])
    got = m.query_observation_vectors(np.asarray([2.0, 0.0], dtype=np.float32), 3)
    assert [(v.id, v.score) for v in got] == [("a", 1.0), ("b", 1.0), ("d", 0.707107)]


def test_spec_8_9_bad_vector_is_refused_and_nothing_written(storage: Storage) -> None:
    m = storage.memory
    with pytest.raises(InvalidInputError, match="om:t1:0:1"):
        m.put_observation_vectors([vec("om:t1:0:0", "t1", [1.0]),
                                   vec("om:t1:0:1", "t1", [float("nan")])])
    with pytest.raises(InvalidInputError, match="metadata of observation vector 'x'"):
        m.put_observation_vectors([ObservationVector("x", "t1", np.ones(2, np.float32),
                                                     {"bad": {1, 2}})])
    assert m.list_observation_vectors() == []


def test_spec_8_9_erasing_a_thread_erases_its_observation_vectors(storage: Storage) -> None:
    m = storage.memory
    m.create_thread("t1")
    m.create_thread("t2")
    m.put_observation_vectors([vec("om:t1:0:0", "t1", [1.0]), vec("om:t2:0:0", "t2", [1.0])])
    m.delete_thread("t1")
    assert [v.id for v in m.list_observation_vectors()] == ["om:t2:0:0"]
