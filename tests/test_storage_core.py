"""The storage core (memory_core/storage/core.py): an adapter written only against it, a
dozen methods over sqlite3, passes the public conformance suite, and so does the dict
core with its batches as transactions; no adapter implements more than 15 methods."""

from __future__ import annotations

import importlib
import inspect
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory_core.storage.core import CoreStorage, LogRow, StorageCore
from memory_core.testing import ATOMIC_BATCHES, PERSISTS, AdapterFactory, conformance_tests

_SCHEMA = """
CREATE TABLE IF NOT EXISTS docs (pos INTEGER PRIMARY KEY AUTOINCREMENT, coll TEXT NOT NULL,
    key TEXT NOT NULL, value TEXT NOT NULL, UNIQUE (coll, key));
CREATE TABLE IF NOT EXISTS log (thread_id TEXT NOT NULL, seq INTEGER NOT NULL,
    body TEXT NOT NULL, text TEXT, created_at TEXT NOT NULL, run_id TEXT, resource_id TEXT,
    vector BLOB, PRIMARY KEY (thread_id, seq));
"""
_LOG = "seq, body, text, created_at, run_id, resource_id"


class SqliteCore(StorageCore):
    """A core in one sqlite3 file: documents in one table (``pos`` is the write order),
    the log in another; one connection behind a lock, savepoints for inner blocks."""

    def __init__(self, path: Path) -> None:
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.executescript(_SCHEMA)
        self._lock = threading.RLock()
        self._depth = 0

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self._lock:
            point = f"p{self._depth}"
            self._db.execute(f"SAVEPOINT {point}" if self._depth else "BEGIN IMMEDIATE")
            self._depth += 1
            try:
                yield
            except BaseException:
                self._depth -= 1
                if self._depth:
                    self._db.execute(f"ROLLBACK TO {point}")
                    self._db.execute(f"RELEASE {point}")
                else:
                    self._db.execute("ROLLBACK")
                raise
            self._depth -= 1
            self._db.execute(f"RELEASE {point}" if self._depth else "COMMIT")

    def put(self, collection: str, items: Sequence[tuple[str, str]], *,
            if_absent: bool = False) -> list[str]:
        then = "NOTHING" if if_absent else "UPDATE SET value = excluded.value"
        with self.transaction():
            return [k for k, v in items if self._db.execute(
                f"INSERT INTO docs (coll, key, value) VALUES (?, ?, ?)"
                f" ON CONFLICT (coll, key) DO {then}", (collection, k, v)).rowcount]

    def get(self, collection: str, keys: Sequence[str]) -> dict[str, str]:
        with self.transaction():
            return {k: r[0] for k in keys for r in self._db.execute(
                "SELECT value FROM docs WHERE coll = ? AND key = ?", (collection, k))}

    def scan(self, collection: str, prefix: str = "") -> list[tuple[str, str]]:
        with self.transaction():
            return list(self._db.execute(
                "SELECT key, value FROM docs WHERE coll = ? AND substr(key, 1, length(?)) = ?"
                " ORDER BY pos", (collection, prefix, prefix)))

    def delete(self, collection: str, keys: Sequence[str]) -> int:
        with self.transaction():
            return sum(self._db.execute("DELETE FROM docs WHERE coll = ? AND key = ?",
                                        (collection, k)).rowcount for k in keys)

    def put_rows(self, thread_id: str, rows: Sequence[LogRow]) -> None:
        with self.transaction():
            self._db.executemany(
                f"INSERT OR REPLACE INTO log (thread_id, {_LOG}, vector)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(thread_id, r.seq, r.body, r.text, r.created_at.isoformat(), r.run_id,
                  r.resource_id, None if r.vector is None else r.vector.tobytes())
                 for r in rows])

    def read_rows(self, thread_id: str, *, from_seq: int | None = None,
                  to_seq: int | None = None, seqs: Sequence[int] | None = None,
                  vectors: bool = True) -> list[LogRow]:
        lo, hi = -1 if from_seq is None else from_seq, 2**62 if to_seq is None else to_seq
        wanted = None if seqs is None else set(seqs)
        return [r for _, r in self.scan_rows([thread_id], [lo - 1], vectors=vectors)
                if r.seq <= hi and (wanted is None or r.seq in wanted)]

    def delete_rows(self, thread_id: str, seqs: Sequence[int] | None = None) -> int:
        with self.transaction():
            if seqs is None:
                return self._db.execute("DELETE FROM log WHERE thread_id = ?",
                                        (thread_id,)).rowcount
            return sum(self._db.execute("DELETE FROM log WHERE thread_id = ? AND seq = ?",
                                        (thread_id, s)).rowcount for s in seqs)

    def row_stats(self, thread_ids: Sequence[str]) -> dict[str, tuple[int, int]]:
        with self.transaction():
            return {t: tuple(self._db.execute(
                "SELECT COUNT(*), COALESCE(MAX(seq), -1) FROM log WHERE thread_id = ?",
                (t,)).fetchone()) for t in thread_ids}

    def scan_rows(self, thread_ids: Sequence[str], after: Sequence[int], *,
                  vectors: bool = True) -> list[tuple[int, LogRow]]:
        vector = "vector" if vectors else "NULL"
        out: list[tuple[int, LogRow]] = []
        with self.transaction():
            for i, (t, lo) in enumerate(zip(thread_ids, after, strict=True)):
                out.extend((i, LogRow(r[0], r[1], r[2], datetime.fromisoformat(r[3]), r[4],
                                      r[5], None if r[6] is None else
                                      np.frombuffer(r[6], np.float32).copy()))
                           for r in self._db.execute(
                               f"SELECT {_LOG}, {vector} FROM log WHERE thread_id = ?"
                               " AND seq > ? ORDER BY seq", (t, lo)))
        return out

    def close(self) -> None:
        self._db.close()


def _sqlite_core(tmp_path: Path, **kwargs: Any) -> CoreStorage:
    return CoreStorage(SqliteCore(tmp_path / "core.sqlite"), **kwargs)


def _dict_core(tmp_path: Path, **kwargs: Any) -> CoreStorage:
    from memory_core.storage.inmemory import DictCore

    return CoreStorage(DictCore(), **kwargs)


globals().update(conformance_tests(
    AdapterFactory("sqlite-core", make=_sqlite_core, capabilities={PERSISTS, ATOMIC_BATCHES}),
    AdapterFactory("dict-core", make=_dict_core, capabilities={ATOMIC_BATCHES})))


def _implemented(cls: type, port: type) -> set[str]:
    """The methods of ``port`` an adapter class defines (itself or a base below the
    port): what an adapter author writes. Private helpers are not counted."""
    own = {name for k in cls.__mro__ if k is not port and issubclass(k, port)
           for name, v in vars(k).items() if not name.startswith("_")
           and (inspect.isfunction(v) or isinstance(v, staticmethod | classmethod))}
    assert own <= set(dir(port)), f"{cls.__name__} adds {sorted(own - set(dir(port)))}"
    return own


def _subclasses(cls: type) -> Iterator[type]:
    sub: type
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


@pytest.mark.parametrize("port", ["core", "driver"])
def test_no_adapter_implements_more_than_15_methods(port: str) -> None:
    for module in ("inmemory", "sqlite", "postgres", "duckdb"):
        importlib.import_module(f"memory_core.storage.{module}")
    from memory_core.storage.sql_common import Driver

    base: type = StorageCore if port == "core" else Driver
    counts = {c.__name__: len(_implemented(c, base)) for c in _subclasses(base)}
    if port == "core":
        assert {"DictCore", "SqliteCore"} <= set(counts), counts
        required = {n for n, f in vars(StorageCore).items()
                    if callable(f) and not n.startswith("_")} - {
            "close", "change_token", "scan_scope"}
        assert len(required) <= 12, sorted(required)
        # the dict core and the test core implement every required method, no more
        for c in _subclasses(StorageCore):
            assert required <= _implemented(c, StorageCore), c.__name__
    else:
        assert {"_SqliteDriver", "_PgDriver", "_DuckDriver"} <= set(counts), counts
    assert max(counts.values()) <= 15, counts
