"""Conformance: every adapter accepts the same values as JSON and as times, refuses
the rest with the same InvalidInputError naming the value, and writes nothing then."""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memory_core.errors import InvalidInputError
from memory_core.storage.base import Storage
from memory_core.testing.factory import AdapterFactory
from memory_core.testing.support import T0, row
from memory_core.types import AppendRow, Message, Observation, RunRecord, ToolCallPart

NAIVE = datetime(2024, 1, 1, 12, 30)

# value, and a fragment the error must contain (the offending part, named)
NOT_JSON: list[tuple[Any, str]] = [
    (math.nan, "nan"),
    (math.inf, "inf"),
    ({"x": [1, -math.inf]}, "['x'][1]"),
    ({1, 2}, "{1, 2} (set)"),
    (b"raw", "b'raw' (bytes)"),
    (datetime(2024, 1, 1, tzinfo=UTC), "(datetime)"),
    ({1: "int key"}, "the key 1 (int)"),
    ({"deep": {("t",): 1}}, "['deep'] has the key ('t',) (tuple)"),
]
IDS = ["nan", "inf", "nested-inf", "set", "bytes", "datetime", "int-key", "tuple-key"]


@pytest.mark.parametrize(("value", "named"), NOT_JSON, ids=IDS)
def test_non_json_metadata_and_values_are_refused_alike(storage: Storage, value: Any,
                                                        named: str) -> None:
    m, r = storage.memory, storage.runs
    m.create_thread("t", metadata={"kept": 1})
    attempts: list[tuple[str, Callable[[], object]]] = [
        ("metadata of thread 'new'", lambda: m.create_thread("new", metadata={"v": value})),
        ("metadata of thread 't'", lambda: m.update_thread("t", metadata={"v": value})),
        ("row 0 of the batch for thread 't'",
         lambda: m.append_messages("t", [row("x", v=value)])),
        ("row 1 of the batch for thread 't'", lambda: m.append_messages("t", [
            row("ok"), AppendRow(message=Message(role="assistant", content=[
                ToolCallPart(id="c", name="f", args={"v": value})]))])),
        ("'thread:t'", lambda: m.put_working_memory("thread:t", {"v": value})),
        ("'r1:step:0'", lambda: r.put_if_absent("r1:step:0", [value])),
    ]
    for what, attempt in attempts:
        with pytest.raises(InvalidInputError, match="is not JSON") as info:
            attempt()
        assert what in str(info.value) and named in str(info.value), str(info.value)
    # nothing of any refused write is there
    assert [t.id for t in m.list_threads()] == ["t"]
    assert m.require_thread("t").metadata == {"kept": 1}
    assert m.count_messages("t") == 0 and m.get_messages("t") == []
    assert m.list_working_memory_keys() == [] and r.list("") == []


def test_json_values_read_back_the_same_on_every_adapter(storage: Storage) -> None:
    """Tuples are JSON arrays: every adapter gives them back as lists (the in-memory
    one included), and large and unicode values keep their exact value."""
    m = storage.memory
    value = {"t": (1, (2, "x")), "big": 2**62, "f": 0.1, "ü": "✓", "none": None}
    want = {"t": [1, [2, "x"]], "big": 2**62, "f": 0.1, "ü": "✓", "none": None}
    assert m.create_thread("t", metadata=value).metadata == want
    assert m.update_thread("t", metadata={"u": (3,)}).metadata == {**want, "u": [3]}
    m.append_messages("t", [row("hi", v=(1, 2))])
    assert m.get_messages("t")[0].metadata == {"v": [1, 2]}
    m.put_working_memory("thread:t", value)
    assert m.get_working_memory("thread:t") == want
    storage.runs.put_if_absent("k", value)
    assert storage.runs.get("k") == want
    assert m.require_thread("t").metadata == {**want, "u": [3]}


def test_naive_times_are_refused_by_every_port(storage: Storage) -> None:
    m, r = storage.memory, storage.runs
    m.create_thread("t")
    m.append_messages("t", [row("aware", created_at=T0)])
    attempts: list[tuple[str, Callable[[], object]]] = [
        ("row 1 of the batch for thread 't': created_at",
         lambda: m.append_messages("t", [row("a", created_at=T0),
                                         row("b", created_at=NAIVE)])),
        ("created_at of observation 'o1'", lambda: m.put_observation(
            Observation(id="o1", thread_id="t", text="x", created_at=NAIVE))),
        ("started_at of run 'r1'", lambda: r.start_run(
            RunRecord(run_id="r1", agent="a", started_at=NAIVE))),
        ("finished_at of run 'r2'", lambda: r.start_run(
            RunRecord(run_id="r2", agent="a", started_at=T0, finished_at=NAIVE))),
    ]
    for what, attempt in attempts:
        with pytest.raises(InvalidInputError, match="must be timezone-aware") as info:
            attempt()
        assert what in str(info.value) and "2024-01-01T12:30:00" in str(info.value)
    r.start_run(RunRecord(run_id="ok", agent="a", started_at=T0))
    with pytest.raises(InvalidInputError, match="finished_at of run 'ok'.*2024-01-01T12:30"):
        r.set_run_status("ok", "completed", finished_at=NAIVE)
    # nothing half-written, and every later read that compares times still works
    assert [x.text() for x in m.get_messages("t")] == ["aware"]
    assert m.list_observations("t") == [] and [x.run_id for x in r.list_runs()] == ["ok"]
    assert r.require_run("ok").status == "running"
    assert [x.text() for x in m.search_messages("aware")] == ["aware"]
    m.create_thread("later")
    assert [t.id for t in m.list_threads()] == ["later", "t"]


def test_a_naive_clock_is_refused_before_anything_is_stored(adapter: AdapterFactory,
                                                            tmp_path: Path) -> None:
    s = adapter.open(tmp_path, clock=lambda: NAIVE)
    try:
        with pytest.raises(InvalidInputError, match="storage clock's time.*2024-01-01T12:30"):
            s.memory.create_thread("t")
        assert s.memory.list_threads() == []
    finally:
        s.close()
