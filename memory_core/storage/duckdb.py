"""DuckDBStorage: a plain driver of the shared SQL store (sql_common.py), every write
committed when the call returns; sharing the file is duckdb_file.py's job. Arrow
inserts and scans and reads by rowid are optional speed-ups."""

from __future__ import annotations

import os
from collections.abc import Hashable, Iterator, Sequence
from contextlib import contextmanager, nullcontext, suppress
from dataclasses import replace
from datetime import datetime
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from memory_core.errors import InvalidInputError, StorageError
from memory_core.storage.base import MessageColumns, ScopeRows, Storage
from memory_core.storage.common import Clock, ThreadIdFactory, utc_now
from memory_core.storage.duckdb_file import (
    ERASED,
    MEMORY,
    Conn,
    HeldFile,
    hold_for,
    let_go,
)
from memory_core.storage.filekind import refuse_foreign_file
from memory_core.storage.schema import (
    Dialect,
    Migration,
    apply_migrations,
    check_current,
)
from memory_core.storage.sql_common import (
    MESSAGE_COLUMNS,
    Driver,
    RowsBuilder,
    ScopeScan,
    insert_sql,
)
from memory_core.storage.sql_store import SqlStorage
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
_BULK_MEMORY = "512MB"  # … and inside a bulk_session (an import's write)
# (FLOAT[] uncompressed: compressing noisy floats took half an insert, saved ~4%)
_DIALECT = Dialect(text="VARCHAR", vector="FLOAT[] USING COMPRESSION uncompressed",
                   serial_pk="BIGINT PRIMARY KEY DEFAULT nextval('journal_pos')",
                   serial_setup=("CREATE SEQUENCE IF NOT EXISTS journal_pos",), indexes=False)


class _DuckTx:
    """The shared SQL on one DuckDB connection, every result read to the end."""

    def __init__(self, conn: Conn) -> None:
        self.conn = conn

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.conn.execute(sql, list(params)).fetchall()

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        rows = self.conn.execute(sql, list(params)).fetchall()
        # DML answers with one row holding the number of rows it changed
        return int(rows[0][0]) if rows and isinstance(rows[0][0], int) else 0

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self.conn.executemany(sql, [list(r) for r in rows])


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


class _DuckDriver(Driver):
    dialect = _DIALECT
    lock_row = ""  # one process holds the file read-write; the hold's lock serialises
    contains = "contains({col}, ?)"

    def __init__(self, held: HeldFile, path: str, read_only: bool) -> None:
        self.held = held
        self.path = path
        self.read_only = read_only
        self.closed = False
        self.where = f"DuckDB database '{path}'"

    def _check(self, op: str, write: bool) -> None:
        if self.closed:
            raise StorageError(f"{op} failed: the storage is closed")
        if write and self.read_only:
            raise StorageError(f"{op} refused: storage on '{self.path}' was opened read_only")

    @contextmanager
    def read(self, op: str) -> Iterator[_DuckTx]:
        self._check(op, write=False)
        with self.held.connection(op, write=not self.read_only) as conn:
            try:
                yield _DuckTx(conn)
            except duckdb.Error as e:
                raise StorageError(f"{op} on {self.where} failed: {e}") from e

    @contextmanager
    def write(self, op: str) -> Iterator[_DuckTx]:
        self._check(op, write=True)
        held = self.held
        # inside write_batch, a write joins its transaction
        with held.connection(op, write=True) as conn, \
                nullcontext() if held.in_tx else self._transaction(op, conn):
            try:
                yield _DuckTx(conn)
            except duckdb.Error as e:
                raise StorageError(f"{op} on {self.where} failed: {e}") from e
        held.writes += 1  # (change tokens: seen by this process's next read)

    @contextmanager
    def _transaction(self, op: str, conn: Conn) -> Iterator[None]:
        try:
            conn.execute("BEGIN TRANSACTION")
            try:
                yield
                conn.execute("COMMIT")
            except BaseException:
                with suppress(duckdb.Error):  # the original error is the one to report
                    conn.execute("ROLLBACK")
                raise
        except duckdb.Error as e:
            raise StorageError(f"{op} on {self.where} failed: {e}") from e

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Every write of the block in one transaction; other threads wait for it."""
        self._check("write batch", write=True)
        held = self.held
        with held.lock:
            if held.in_tx:
                yield
                return
            with held.connection("write batch", write=True) as conn, \
                    self._transaction("write batch", conn):
                held.in_tx = True
                try:
                    yield
                finally:
                    held.in_tx = False

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            let_go(self.held)

    def migrate(self, migrations: Sequence[Migration], now: datetime) -> None:
        from memory_core.storage import duckdb_legacy

        if self.read_only:
            with self.read("setup") as tx:
                check_current(tx, migrations, f"'{self.path}'",
                              legacy=duckdb_legacy.is_legacy(tx))
            return
        with self.write("setup") as tx:
            if duckdb_legacy.is_legacy(tx):
                duckdb_legacy.convert(tx, self, migrations, now)
            else:
                apply_migrations(tx, self.dialect, migrations, now, self.where)

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

    def insert_messages(self, tx: Any, staged: Sequence[StagedMessages]) -> None:
        """A large append as one Arrow table built from its columns."""
        if sum(len(s) for s in staged) <= _SMALL_BATCH:
            super().insert_messages(tx, staged)
        else:
            _insert_table(tx.conn, "messages", pa.concat_tables([s.arrow() for s in staged]))

    def vector_param(self, v: np.ndarray) -> Any:
        return np.ascontiguousarray(v, dtype=np.float32)

    def stream(self, tx: Any, sql: str, params: Sequence[Any],
               size: int) -> Iterator[Sequence[tuple[Any, ...]]]:
        cursor = tx.conn.execute(sql, list(params))
        yield from iter(lambda: cursor.fetchmany(size), [])

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

    def change_token(self) -> Hashable | None:
        return self.held.change_token()

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


class DuckDBStorage(SqlStorage):
    """Both ports on a DuckDB database file (or ``":memory:"``).

    Example:
        >>> s = DuckDBStorage(":memory:")
        >>> s.memory.create_thread("t1", resource_id="u1").id
        't1'

    Every write has committed when the call returns. The file is held only during an
    operation or a ``session()`` and waited for up to ``lock_timeout`` seconds while
    another process holds it (duckdb_file.py); ``read_only=True`` refuses writes.
    """

    def __init__(self, path: str | os.PathLike[str], *, clock: Clock = utc_now,
                 ids: ThreadIdFactory | None = None, lock_timeout: float = 30.0,
                 read_only: bool = False) -> None:
        if not lock_timeout >= 0:
            raise InvalidInputError(f"lock_timeout must be a number >= 0, got {lock_timeout!r}")
        path = os.fspath(path)
        if path == MEMORY:
            if read_only:
                raise InvalidInputError("read_only=True makes no sense for ':memory:'")
            held = HeldFile(None, lock_timeout)
        else:
            if not path:
                raise InvalidInputError("database path must be ':memory:' or a file path")
            path = os.path.realpath(path)
            held = hold_for(path, lock_timeout)
            try:
                if held.conn is None:  # (reading a held file's header drops its lock)
                    refuse_foreign_file("opening", path)
                if not read_only:
                    os.makedirs(os.path.dirname(path), exist_ok=True)
            except BaseException:
                let_go(held)
                raise
        self.path = path
        self.read_only = read_only
        self._duck = _DuckDriver(held, path, read_only)
        with held.session():  # one open for the set-up's reads and writes
            self._open(self._duck, clock, ids)
        if not read_only and os.path.exists(f"{path}{ERASED}"):  # a crash came before
            held.rewrite("finishing an interrupted erasure's rewrite")

    def __repr__(self) -> str:
        return f"DuckDBStorage({self.path!r})"

    def setup(self) -> int:
        """Apply the migrations this database lacks (a read-only storage only checks
        that it has them all); returns the schema version."""
        from memory_core.storage import schema

        self._db.migrate(schema.MIGRATIONS, utc_now())
        return self.schema_version()

    def schema_version(self) -> int:
        with self._db.read("schema_version") as tx:
            row = tx.query("SELECT max(version) FROM schema_migrations")
        return int(row[0][0]) if row and row[0][0] is not None else 0

    def session(self) -> Any:
        """Hold the file across the block's operations (one open instead of one per
        operation); another process that asks gets it between two of them."""
        return self._duck.held.session()

    @contextmanager
    def bulk_session(self) -> Iterator[None]:
        """``session`` with DuckDB's memory limit lowered to ``_BULK_MEMORY`` for the
        block (the instance's: it outlives the file's hold). With DuckDB's default (80%
        of the machine's memory) the blocks an import wrote stayed cached, and each
        checkpoint added to them: ~0.5 GB of an import's 2.1 GB peak at 100,000
        requests. Written blocks are in the file: dropping them loses nothing (not so in
        ``:memory:``, which is left as it is)."""
        held = self._duck.held
        if held.path is None:  # ``:memory:``: its data cannot be dropped
            with self.session():
                yield
            return
        with self.session():
            with held.connection("bulk session", write=not self.read_only) as conn:
                conn.execute(f"SET memory_limit = '{_BULK_MEMORY}'")
            try:
                yield
            finally:
                with held.lock:
                    if held.instance is not None:
                        with suppress(duckdb.Error):  # (CONFIG sets none: the default)
                            held.instance.execute("RESET memory_limit")

    @contextmanager
    def writer(self, *, lock_timeout: float = 30.0) -> Iterator[Storage]:
        if not self.read_only:
            yield self
            return
        with DuckDBStorage(self.path, lock_timeout=lock_timeout) as writable:
            yield writable

    def erasing(self, what: str) -> Any:
        """One erasure, then the file is rewritten so no byte of the erased text stays
        in it (DuckDB keeps freed blocks as they were)."""
        return self._duck.held.erasing(what)
