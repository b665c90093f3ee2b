"""DuckDB's optional speed-ups, a mixin of its driver: large inserts as one Arrow table,
a scope's rows scanned as Arrow record batches, messages read back by rowid. Without
it the driver works through the shared SQL (sql_common.Driver's defaults)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import replace
from datetime import datetime
from typing import Any

import numpy as np
import pyarrow as pa

from memory_core.storage.base import MessageColumns, ScopeRows
from memory_core.storage.duckdb_file import Conn, HeldFile
from memory_core.storage.sql_common import (
    MESSAGE_COLUMNS,
    Driver,
    RowsBuilder,
    ScopeScan,
    insert_sql,
)
from memory_core.storage.staging import StagedMessages, vector_column
from memory_core.vectors import arrow_numpy

_BATCH_VIEW = "_mc_insert_batch"  # name of the Arrow batch registered for one insert
_SMALL_BATCH = 8  # rows inserted as bound parameters; more go in as one Arrow table
_SCAN_BATCH = 65536  # rows per Arrow record batch of a scope scan
# a row's created_at offset for ScopeRows.zones: null for UTC (the time is then exactly
# created_us), else what follows the seconds and their fraction ("" when none)
_ZONE_SCAN = ("CASE WHEN suffix(m.created_at, '+00:00') THEN NULL"
              " ELSE ltrim(m.created_at[20:], '.0123456789') END")
# ScopeRows.messages; a body longer than {cap} bytes comes as null (read when needed)
_MESSAGE_SCAN = (", CASE WHEN strlen(m.body) <= {cap} THEN m.body END AS body_json,"
                 " m.resource_id, m.run_id")
_BODY_CAP = 4096
_SCAN_MEMORY = "512MB"  # DuckDB's memory limit while a large scope is scanned


def _insert_table(conn: Conn, table: str, data: pa.Table) -> None:
    """One ``INSERT … SELECT`` of a registered Arrow table (vector columns cast)."""
    select = [f"{c}::FLOAT[]" if pa.types.is_fixed_size_list(data.schema.field(c).type)
              or pa.types.is_list(data.schema.field(c).type) else c
              for c in data.column_names]
    conn.register(_BATCH_VIEW, data)
    try:
        conn.execute(f"INSERT INTO {table} ({', '.join(data.column_names)})"
                     f" SELECT {', '.join(select)} FROM {_BATCH_VIEW}")
    finally:
        conn.unregister(_BATCH_VIEW)


def _copied(column: pa.Array) -> pa.Array:
    """An Arrow column in buffers of its own (not a slice of its record batch's)."""
    return pa.concat_arrays([column, pa.nulls(0, column.type)])  # (pa.array imports pandas)


@contextmanager
def _cache_capped(conn: Conn) -> Iterator[None]:
    """DuckDB's memory limit lowered for a whole-scope scan, so the blocks it reads
    are dropped as it goes instead of staying cached beside the matrix they fill; and
    every core for it (a connection works with one)."""
    was = conn.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
    conn.execute(f"SET memory_limit = '{_SCAN_MEMORY}'")
    conn.execute("SET enable_progress_bar = false")
    conn.execute(f"SET threads = {os.cpu_count() or 1}")
    try:
        yield
    finally:
        conn.execute(f"SET memory_limit = '{was}'")
        conn.execute("SET threads = 1")

class ArrowSpeedups(Driver):
    """sql_common.Driver's defaults overridden for a driver on a DuckDB connection
    (``held``: the file's hold, whose ``path`` is None for ``:memory:``)."""

    held: HeldFile

    def insert_rows(self, tx: Any, table: str, columns: Sequence[str],
                    rows: Sequence[Sequence[Any]]) -> None:
        """Few rows as one ``INSERT … VALUES`` of bound parameters, more as one Arrow
        table (not ``executemany``: DuckDB runs the statement once a row)."""
        if len(rows) <= _SMALL_BATCH:
            tx.execute(insert_sql(table, columns, len(rows)),
                       [v.tolist() if isinstance(v, np.ndarray) else v
                        for r in rows for v in r])
            return
        cols = [[r[i] for r in rows] for i in range(len(columns))]
        _insert_table(tx.conn, table, pa.table({c: vector_column(col) if any(
            isinstance(v, np.ndarray) for v in col) else pa.array(col)
            for c, col in zip(columns, cols, strict=True)}))

    def present(self, tx: Any, table: str, column: str, values: Sequence[Any]) -> list[Any]:
        """One query for all of ``values`` (texts) as a list parameter: an import's
        check of a batch's 2,000 run ids took 4 queries of 500 bound values, each
        slower as the table grew."""
        if not all(type(v) is str for v in values):
            return super().present(tx, table, column, values)
        if not values:
            return []
        return [r[0] for r in tx.query(f"SELECT DISTINCT {column} FROM {table} WHERE"
                                       f" {column} IN (SELECT unnest(?::VARCHAR[]))",
                                       [list(values)])]

    def insert_messages(self, tx: Any, staged: Sequence[StagedMessages]) -> None:
        """A large append as one Arrow table built from its columns."""
        if sum(len(s) for s in staged) <= _SMALL_BATCH:
            super().insert_messages(tx, staged)
        else:
            _insert_table(tx.conn, "messages", pa.concat_tables([s.arrow() for s in staged]))

    def scan_scope(self, tx: Any, scan: ScopeScan) -> ScopeRows | None:
        """One Arrow scan streamed in record batches into arrays allocated once from a
        count (the vectors are never held twice, nor as Python objects). With a message
        budget the message columns come too, unless the first batch says they will
        not fit: then the scan starts again without them."""
        conn: Conn = tx.conn
        src = ("FROM messages m JOIN (SELECT unnest(?::VARCHAR[]) AS tid, "
               "unnest(?::BIGINT[]) AS lo, unnest(?::INTEGER[]) AS pos) f "
               "ON m.thread_id = f.tid AND m.seq > f.lo")
        params = [list(scan.threads), list(scan.after), list(range(len(scan.threads)))]
        counted = conn.execute(f"SELECT count(*) {src}", params).fetchall()[0]
        planned = int(counted[0]) if counted else 0
        # (a file's blocks can be read again; ``:memory:`` data cannot be dropped)
        big = planned > _SCAN_BATCH and self.held.path is not None
        with _cache_capped(conn) if big else nullcontext():
            while True:
                out = RowsBuilder(scan, planned)
                rel = conn.sql(self._select(scan, out, planned, src), params=params)
                if self._fill(rel.to_arrow_reader(_SCAN_BATCH), scan, out,
                              out.message_budget > 0):
                    return out.done()
                scan = replace(scan, message_share=0.0)

    @staticmethod
    def _select(scan: ScopeScan, out: RowsBuilder, planned: int, src: str) -> str:
        extra = ""
        if out.message_budget:
            cap = max(_BODY_CAP, 4 * out.message_budget // max(1, planned))
            extra = _MESSAGE_SCAN.format(cap=cap)
        return (f"SELECT f.pos, m.rowid AS locator, {_ZONE_SCAN} AS zone,"
                f" {scan.columns()}{extra} {src}")

    @staticmethod
    def _fill(reader: Any, scan: ScopeScan, out: RowsBuilder, extra: bool) -> bool:
        """Fill ``out`` from the scan's batches; False (and nothing more read) when the
        first batch shows the message columns will not fit in their budget."""
        for batch in reader:
            vectors = has_vec = None
            if scan.vectors and scan.dim:
                col = batch.column("embedding")
                has_vec = arrow_numpy(col.is_valid())
                flat = arrow_numpy(col.flatten())
                vectors = flat.astype(np.float32, copy=False).reshape(-1, scan.dim)
            a = out.n
            out.locate(a, arrow_numpy(batch.column("locator")))
            # a column kept past its batch is copied: a slice keeps the whole batch
            # (its vectors too) alive
            out.add(arrow_numpy(batch.column("pos")), arrow_numpy(batch.column("seq")),
                    arrow_numpy(batch.column("created_us")), vectors, has_vec,
                    _copied(batch.column("text_lower")) if scan.texts else None,
                    batch.column("body").to_pylist() if scan.metadata else None)
            out.zone(a, batch.column("zone"))
            if extra:
                import pyarrow.compute as pc  # (~30 ms an import; only a scan needs it)

                out.keep_messages(MessageColumns(
                    _copied(batch.column("body_json")),
                    pc.dictionary_encode(batch.column("resource_id")),
                    pc.dictionary_encode(batch.column("run_id"))))
                if a == 0 and out.over_budget():
                    reader.close()
                    return False
        return True

    def fetch_located(self, tx: Any, refs: Sequence[tuple[str, int]],
                      locators: Sequence[int],
                      created: Sequence[datetime | None] | None = None,
                      ) -> list[tuple[Any, ...]]:
        """Reads by rowid in one query (DuckDB then fetches just those rows where a
        join on (thread_id, seq) scans row groups), each row kept only if it is still
        its ref's; ``created_at`` is not read when every time is given."""
        times = list(created) if created is not None else [None] * len(refs)
        want = {int(loc): ((str(t), int(s)), at) for (t, s), loc, at
                in zip(refs, locators, times, strict=True) if loc >= 0}
        if not want:
            return []
        known = all(at is not None for _, at in want.values())
        cols = MESSAGE_COLUMNS.replace("created_at", "NULL") if known else MESSAGE_COLUMNS
        rows = tx.query(f"SELECT rowid, {cols} FROM messages WHERE rowid IN"
                        " (SELECT unnest(?::BIGINT[]))", [sorted(want)])
        out = []
        for r in rows:
            ref, at = want.get(int(r[0]), (None, None))
            if ref == (r[1], int(r[2])):
                out.append((*r[1:5], at, r[6]) if known else r[1:])
        return out
