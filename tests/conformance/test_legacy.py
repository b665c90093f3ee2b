"""Conformance: databases written by the storage code before the shared SQL schema
(tests/conformance/legacy) open with today's code and show exactly what they held,
then take new writes."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from memory_core.storage.base import Storage
from memory_core.testing.support import row
from tests.conformance.legacy import EXPECTED, FILES, dump


def _open(name: str, path: Path) -> Storage:
    if name == "duckdb":
        from memory_core.storage.duckdb import DuckDBStorage

        return DuckDBStorage(path)
    from memory_core.storage.sqlite import SQLiteStorage

    return SQLiteStorage(path)


@pytest.mark.parametrize("name", sorted(FILES))
def test_legacy_database_opens_with_everything_it_held(name: str, tmp_path: Path) -> None:
    path = tmp_path / f"old.{name}"
    with gzip.open(FILES[name]) as src, path.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    s = _open(name, path)
    try:
        assert dump(s) == json.loads(EXPECTED.read_text())[name]
        assert s.memory.append_messages("t1", [row("next")]) == [3]
        assert s.memory.thread_stats(["t1"]) == {"t1": (4, 3)}
    finally:
        s.close()
    again = _open(name, path)  # a second open finds nothing left to migrate
    try:
        assert [m.text() for m in again.memory.get_messages("t1")][-1] == "next"
    finally:
        again.close()
