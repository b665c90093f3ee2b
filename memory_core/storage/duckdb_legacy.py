"""Moving a DuckDB file written by the older DuckDB-only schema onto the shared one.

Until DuckDB became a driver of the shared SQL adapter it had its own tables: times as
integer microseconds, a message's role/content/metadata in separate columns, vectors
as ``FLOAT[]`` in an ``embeddings`` table, ``obs_text``, a journal ``ordinal`` and a
``schema_migrations`` table without names. Such a file is recognised by that last
table and converted in the opening transaction (all or nothing): its tables are
renamed ``legacy_*``, the shared schema is created, every row is copied across in the
shared encoding, the per-thread counters are recomputed and the legacy tables dropped.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from memory_core.storage.common import ts_from_micros
from memory_core.storage.schema import (
    Dialect,
    Migration,
    Tx,
    apply_migrations,
    check_known,
    key_group_sql,
)
from memory_core.storage.sql_common import Driver
from memory_core.types import canonical_json

_TABLES = ("meta", "threads", "messages", "embeddings", "working_memory", "observations",
           "journal", "runs", "schema_migrations")
_LEGACY_VERSIONS = {1, 2}  # what the DuckDB-only code ever recorded
_FETCH = 10_000


def is_legacy(tx: Tx) -> bool:
    """Whether the database was written by the DuckDB-only schema."""
    cols = {r[0] for r in tx.query(
        "SELECT column_name FROM information_schema.columns"
        " WHERE table_name = 'schema_migrations'")}
    return bool(cols) and "name" not in cols


def _iso(us: int | None) -> str | None:
    return None if us is None else ts_from_micros(int(us)).isoformat()


def _message_pages(tx: Tx) -> Iterator[list[tuple[Any, ...]]]:
    """The legacy messages with their vectors (float32 arrays), a page at a time in
    key order, so a large table is never all in Python (the connection's one open
    result must be read to the end before the next insert, hence keyset pages)."""
    last: tuple[str, int] = ("", -1)
    while True:
        table = tx.conn.sql(  # type: ignore[attr-defined]
            "SELECT m.thread_id, m.seq, m.resource_id, m.role, m.content, m.metadata,"
            " m.text_lower, m.created_at, m.run_id, e.vec FROM legacy_messages m"
            " LEFT JOIN legacy_embeddings e ON e.thread_id = m.thread_id AND e.seq = m.seq"
            " WHERE m.thread_id > ? OR (m.thread_id = ? AND m.seq > ?)"
            f" ORDER BY m.thread_id, m.seq LIMIT {_FETCH}",
            params=[last[0], last[0], last[1]]).arrow()
        if hasattr(table, "read_all"):
            table = table.read_all()
        if table.num_rows == 0:
            return
        cols = [table.column(i).to_pylist() for i in range(9)]
        vecs = table.column(9).combine_chunks()
        flat = vecs.flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
        offsets = vecs.offsets.to_numpy()
        valid = vecs.is_valid().to_numpy(zero_copy_only=False)
        rows = []
        for i, r in enumerate(zip(*cols, strict=True)):
            lo, hi = offsets[i] - offsets[0], offsets[i + 1] - offsets[0]
            vec = flat[lo:hi] if valid[i] else None
            rows.append((*r, vec))
        yield rows
        last = (rows[-1][0], int(rows[-1][1]))


def convert(tx: Tx, db: Driver, migrations: Sequence[Migration], now: datetime) -> None:
    """Convert in the caller's write transaction (see the module docstring)."""
    versions = {int(r[0]) for r in tx.query("SELECT version FROM schema_migrations")}
    check_known(versions, [Migration(v, "", lambda d: ()) for v in _LEGACY_VERSIONS],
                db.where)
    present = {r[0] for r in tx.query("SELECT table_name FROM information_schema.tables")}
    for t in _TABLES:
        if t in present:
            tx.execute(f"ALTER TABLE {t} RENAME TO legacy_{t}")
    # the journal keeps its order: positions continue after the legacy ordinals
    top = tx.query("SELECT coalesce(max(ordinal), 0) FROM legacy_journal")[0][0]
    tx.execute(f"CREATE SEQUENCE journal_pos START WITH {int(top) + 1}")
    apply_migrations(tx, db.dialect, migrations, now, db.where)
    _copy_simple(tx, db.dialect)
    _copy_messages(tx, db)
    _copy_threads(tx, db)
    _copy_observations(tx, db)
    _copy_runs(tx, db)
    for t in _TABLES:
        if t in present:
            tx.execute(f"DROP TABLE legacy_{t}")


def _copy_simple(tx: Tx, dialect: Dialect) -> None:
    tx.execute("UPDATE meta SET value = (SELECT value FROM legacy_meta"
               " WHERE key = 'embedding_dim') WHERE key = 'embedding_dim'")
    tx.execute("INSERT INTO working_memory (key, value)"
               " SELECT key, value FROM legacy_working_memory")
    tx.execute("INSERT INTO journal (pos, key, value, grp)"
               f" SELECT ordinal, key, value, {key_group_sql(dialect)} FROM legacy_journal")


def _copy_threads(tx: Tx, db: Driver) -> None:
    rows = tx.query("SELECT id, resource_id, title, metadata, parent_thread_id,"
                    " created_at, updated_at FROM legacy_threads")
    if rows:
        db.insert_rows(tx, "threads", ("id", "resource_id", "title", "metadata",
                                       "parent_thread_id", "created_at", "created_us",
                                       "updated_at"),
                       [(*r[:5], _iso(r[5]), int(r[5]), _iso(r[6])) for r in rows])
    # counters from the rows themselves (a version-1 file never had them)
    tx.execute("UPDATE threads SET message_count = (SELECT COUNT(*) FROM messages m"
               " WHERE m.thread_id = threads.id), max_seq = COALESCE((SELECT MAX(m.seq)"
               " FROM messages m WHERE m.thread_id = threads.id), -1)")


def _copy_messages(tx: Tx, db: Driver) -> None:
    cols = ("thread_id", "seq", "resource_id", "body", "text_lower", "created_at",
            "created_us", "run_id", "embedding")
    for rows in _message_pages(tx):
        out = []
        for (tid, seq, rid, role, content, meta, lower, us, run_id, vec) in rows:
            body = canonical_json({"role": role, "content": json.loads(content),
                                   "metadata": json.loads(meta)})
            out.append((tid, seq, rid, body, lower, _iso(us), int(us), run_id, vec))
        db.insert_rows(tx, "messages", cols, out)


def _copy_observations(tx: Tx, db: Driver) -> None:
    rows = tx.query("SELECT id, thread_id, from_seq, to_seq, level, obs_text,"
                    " source_ids, created_at, condensed FROM legacy_observations")
    if rows:
        db.insert_rows(tx, "observations", (
            "id", "thread_id", "from_seq", "to_seq", "level", "text", "source_ids",
            "created_at", "condensed", "created_us"),
            [(*r[:7], _iso(r[7]), int(bool(r[8])), int(r[7])) for r in rows])


def _copy_runs(tx: Tx, db: Driver) -> None:
    rows = tx.query("SELECT run_id, agent, thread_id, resource_id, status,"
                    " started_at, finished_at, error FROM legacy_runs")
    if rows:
        db.insert_rows(tx, "runs", (
            "run_id", "agent", "thread_id", "resource_id", "status", "started_at",
            "started_us", "finished_at", "error"),
            [(*r[:5], _iso(r[5]), int(r[5]), _iso(r[6]), r[7]) for r in rows])
