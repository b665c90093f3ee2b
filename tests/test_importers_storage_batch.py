"""The batch calls imports write through (``write_batch``, ``start_runs``,
``put_many_if_absent``) mean exactly what the one-at-a-time calls mean, on every
adapter; on DuckDB a batch that fails leaves nothing of itself."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory_core.errors import InvalidInputError
from memory_core.storage.base import Storage
from memory_core.storage.common import encoded_json
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import RunRecord

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture(params=["memory", "sqlite", "duckdb"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Storage]:
    if request.param == "memory":
        yield InMemoryStorage(clock=lambda: T0)
        return
    if request.param == "sqlite":
        from memory_core.storage.sqlite import SQLiteStorage

        st: Storage = SQLiteStorage(str(tmp_path / "b.sqlite"), clock=lambda: T0)
    else:
        from memory_core.storage.duckdb import DuckDBStorage

        st = DuckDBStorage(str(tmp_path / "b.duckdb"), clock=lambda: T0)
    with st:
        yield st


def run(rid: str, agent: str = "a") -> RunRecord:
    return RunRecord(run_id=rid, agent=agent, thread_id=None, resource_id=None,
                     status="completed", started_at=T0, finished_at=T0)


def test_put_many_if_absent_is_put_if_absent_in_order(store: Storage) -> None:
    assert store.runs.put_if_absent("k:1", {"first": True})
    written = store.runs.put_many_if_absent([("k:1", "ignored"), ("k:2", [1, 2]),
                                             ("k:3", None), ("k:2", "repeat ignored")])
    assert written == 2
    assert store.runs.list("k:") == [("k:1", {"first": True}), ("k:2", [1, 2]), ("k:3", None)]
    assert store.runs.put_many_if_absent([]) == 0
    assert store.runs.put_if_absent("k:4", 4)
    assert [k for k, _ in store.runs.list("k:")] == ["k:1", "k:2", "k:3", "k:4"]


def test_a_value_given_encoded_is_stored_as_its_text(store: Storage) -> None:
    """An import hands its records over encoded once (``encoded_json``): each reads
    back as the value, first write wins as for any value, and one that was not JSON
    is refused naming it, as a value given whole is."""
    record = {"b": [1, 2.5, None], "a": "é \u2028", "n": {"x": True}}
    assert store.runs.put_if_absent("e:1", encoded_json("e:1", record))
    assert store.runs.put_many_if_absent([
        ("e:1", encoded_json("e:1", {"ignored": 1})), ("e:2", encoded_json("e:2", [3])),
        ("e:3", encoded_json("e:3", "text"))]) == 2
    assert store.runs.list("e:") == [("e:1", record), ("e:2", [3]), ("e:3", "text")]
    with pytest.raises(InvalidInputError, match=r"key 'e:4' is not JSON: \['x'\] is nan"):
        encoded_json("journal value for key 'e:4'", {"x": float("nan")})
    assert store.runs.list("e:4") == []


def test_start_runs_inserts_only_new_runs(store: Storage) -> None:
    assert store.runs.start_run(run("r1", "kept"))
    assert store.runs.start_runs([run("r1", "ignored"), run("r2"), run("r3"),
                                  run("r2", "repeat")]) == ["r2", "r3"]
    assert store.runs.require_run("r1").agent == "kept"
    assert store.runs.require_run("r2").agent == "a"
    assert store.runs.start_runs([]) == []


def test_a_failing_write_batch_leaves_nothing_of_itself(store: Storage) -> None:
    store.runs.put_if_absent("before", 0)

    class Boom(Exception):
        pass

    with pytest.raises(Boom):
        with store.write_batch():
            store.runs.put_many_if_absent([("in:1", 1)])
            store.runs.start_runs([run("in-run")])
            raise Boom
    if type(store).write_batch is Storage.write_batch:
        return  # no grouping here (each write commits): the importer compensates instead
    assert store.runs.list("") == [("before", 0)]
    assert store.runs.get_run("in-run") is None
