"""Databases written by the storage code before DuckDB became a driver of the shared
SQL adapter (schema version 2 of each), kept to prove they still open.

``populate`` wrote them (``python -m tests.conformance.legacy.make``, run on commit
ae0a586) and ``dump`` read them back into ``expected.json`` with that same code; a
test opens each old file with today's code and compares its dump with that file."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np

from memory_core.storage.base import Storage
from memory_core.types import (
    AppendRow,
    Message,
    Observation,
    RunRecord,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)

HERE = Path(__file__).parent
FILES = {"duckdb": HERE / "v2.duckdb.gz", "sqlite": HERE / "v2.sqlite.gz"}
EXPECTED = HERE / "expected.json"
T0 = datetime(2024, 3, 1, 12, 0, tzinfo=UTC)


def _at(seconds: int) -> datetime:
    return T0 + timedelta(seconds=seconds)


def _vec(i: int) -> np.ndarray:
    return np.asarray([i / 4, -i / 8, 0.5, 1.0], dtype=np.float32)


def populate(s: Storage) -> None:
    m = s.memory
    m.create_thread("t1", resource_id="u1", title="first", metadata={"k": [1, "x"]})
    m.create_thread("t2", resource_id="u1")
    m.create_thread("lone")
    m.append_messages("t1", [
        AppendRow(message=Message(role="user", content="Hello Ünïcode", metadata={"a": 1}),
                  created_at=_at(1), run_id="r1", embedding=_vec(1)),
        AppendRow(message=Message(role="assistant", content=[
            TextPart(text="calling"), ToolCallPart(id="c1", name="f", args={"q": 2})]),
                  created_at=_at(2), run_id="r1", embedding=_vec(2)),
        AppendRow(message=Message(role="tool", content=[
            ToolResultPart(call_id="c1", name="f", result={"ok": True})]),
                  created_at=_at(3), run_id="r1"),
    ])
    m.append_messages("t2", [
        AppendRow(message=Message(content=f"m{s}"), seq=s, created_at=_at(10 + s),
                  embedding=_vec(s)) for s in (0, 4, 9)])
    m.update_thread("t2", title="second", metadata={"more": None})
    m.clone_thread("t1", "t1c")
    m.put_working_memory("thread:t1", {"block": "notes"})
    m.put_working_memory("resource:u1", [1, 2.5, None])
    m.put_observation(Observation(id="o1", thread_id="t1", from_seq=0, to_seq=1, level=0,
                                  text="saw hello", source_ids=["t1:0"], created_at=_at(5)))
    m.put_observation(Observation(id="o2", thread_id="t1", text="later", level=1,
                                  created_at=_at(6)))
    m.mark_condensed(["o1"])
    r = s.runs
    r.start_run(RunRecord(run_id="r1", agent="agent", thread_id="t1", resource_id="u1",
                          started_at=_at(1)))
    r.set_run_status("r1", "completed", finished_at=_at(4))
    r.start_run(RunRecord(run_id="r0", agent="agent", resource_id="u1",
                          started_at=_at(0).astimezone(timezone(timedelta(hours=2)))))
    for k, v in (("r1:input", {"text": "Hello"}), ("r1:step:0", [1, 2]),
                 ("om:t1:0", "x"), ("r1:output", None)):
        r.put_if_absent(k, v)


def _plain(x: Any) -> Any:
    if isinstance(x, datetime):
        return x.astimezone(UTC).isoformat()
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_plain(v) for v in x]
    return x


def dump(s: Storage) -> dict[str, Any]:
    """Everything the ports show, as JSON values (times as UTC instants)."""
    return _plain(_read(s))  # type: ignore[no-any-return]


def _read(s: Storage) -> dict[str, Any]:
    m = s.memory
    threads = m.list_threads()
    return {
        "threads": [t.model_dump() for t in threads],
        "resources": m.list_resources(),
        "messages": {t.id: [x.model_dump() for x in m.get_messages(t.id)] for t in threads},
        "stats": m.thread_stats([t.id for t in threads]),
        "vectors": {t.id: m.get_embeddings([t.id]).matrix.tolist() for t in threads},
        "dim": m.embedding_dim(),
        "wm": {k: m.get_working_memory(k) for k in m.list_working_memory_keys()},
        "obs": {t.id: [o.model_dump() for o in m.list_observations(t.id)] for t in threads},
        "journal": s.runs.list(""),
        "runs": [x.model_dump() for x in s.runs.list_runs()],
    }
