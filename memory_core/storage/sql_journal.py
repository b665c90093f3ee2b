"""``SqlRunJournal``: the RunJournal port written once in portable SQL (journal records
by key and prefix, the runs table) over a ``Driver`` (sql_common.py)."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from memory_core.errors import NotFoundError
from memory_core.storage.base import RunJournal, RunRow, ThreadRuns, tally_thread_runs
from memory_core.storage.common import (
    decode_json,
    journal_texts,
    key_group,
    many_objects,
    require_aware,
    ts_micros,
)
from memory_core.storage.schema import Tx
from memory_core.storage.sql_common import (
    _RUN_COLS,
    Driver,
    _chunks,
    _marks,
    row_to_run,
    ts_parse,
    ts_parse_opt,
    ts_text,
)
from memory_core.types import RunRecord, RunStatus

_PREFIX = "substr(key, 1, length(?)) = ?"
JOURNAL_COLS = ("key", "value", "grp")
RUN_INSERT = (*_RUN_COLS.split(", "), "started_us")
# put_many_if_absent of at most this many records is one INSERT … ON CONFLICT statement
_FEW_RECORDS = 64


def run_values(run: RunRecord) -> list[Any]:
    """A run's row as ``RUN_INSERT`` values (times checked to be aware)."""
    require_aware(f"started_at of run '{run.run_id}'", run.started_at)
    require_aware(f"finished_at of run '{run.run_id}'", run.finished_at)
    return [run.run_id, run.agent, run.thread_id, run.resource_id, run.status,
            ts_text(run.started_at),
            None if run.finished_at is None else ts_text(run.finished_at), run.error,
            ts_micros(run.started_at)]


def _by_prefix(prefix: str) -> tuple[str, list[str]]:
    """The journal's records whose key starts with ``prefix``: a prefix that is a whole
    group (a run's, ``<run_id>:``, listed before every run) is one look-up of the group
    index; any other is a scan of the keys (an index look-up takes no other condition
    on DuckDB, and a group can be large: every observer record is in ``om:``)."""
    if prefix.endswith(":") and key_group(prefix) == prefix:
        return "grp = ?", [prefix]
    return _PREFIX, [prefix, prefix]


class SqlRunJournal(RunJournal):
    def __init__(self, db: Driver) -> None:
        self._db = db

    def put_if_absent(self, key: str, value: Any) -> bool:
        text = journal_texts([(key, value)])[key]
        with self._db.write("journal put_if_absent") as tx:
            return self._db.insert_absent(tx, "journal", "key", JOURNAL_COLS,
                                          [(key, text, key_group(key))]) > 0

    def put_many_if_absent(self, items: Sequence[tuple[str, Any]]) -> int:
        """Many records in one transaction and one batch insert (an import's); keys
        already stored, or repeated in ``items``, keep their first value."""
        fresh = journal_texts(items)
        if not fresh:
            return 0
        if len(fresh) <= _FEW_RECORDS:
            # a run's group of records: one statement (DuckDB pays per statement)
            with self._db.write("journal put_many_if_absent") as tx:
                return self._db.insert_absent(tx, "journal", "key", JOURNAL_COLS, [
                    (k, v, key_group(k)) for k, v in fresh.items()])
        with self._db.write("journal put_many_if_absent") as tx:
            have = self._stored_keys(tx, [key_group(k) for k in fresh])
            rows = [[k, v, key_group(k)] for k, v in fresh.items() if k not in have]
            if rows:
                self._db.insert_rows(tx, "journal", JOURNAL_COLS, rows)
            return len(rows)

    def _stored_keys(self, tx: Tx, groups: Sequence[str]) -> set[str]:
        """The stored keys of those of ``groups`` that have any: asked by group (a run's
        ~9 records are one), the check before an import's batch of 500 runs' records
        is one query, not one per 500 keys (each ~10 ms on DuckDB, a scan)."""
        found = self._db.present(tx, "journal", "grp", list(dict.fromkeys(groups)))
        have: set[str] = set()
        for part in _chunks(found):  # (none, unless an import is resumed)
            have.update(r[0] for r in tx.query(
                f"SELECT key FROM journal WHERE grp IN ({_marks(len(part))})", part))
        return have

    def get(self, key: str) -> Any | None:
        with self._db.read("journal get") as tx:
            rows = self.record_rows(tx, [key])
        return decode_json(rows[0][1], f"journal entry '{key}'") if rows else None

    def get_many(self, keys: Sequence[str]) -> dict[str, Any]:
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return {}
        with self._db.read("journal get_many") as tx:
            return {k: decode_json(v, f"journal entry '{k}'")
                    for k, v in self.record_rows(tx, wanted)}

    @staticmethod
    def record_rows(tx: Tx, keys: Sequence[str]) -> builtins.list[tuple[str, str]]:
        """(key, stored JSON) of those of ``keys`` that are stored."""
        out: builtins.list[tuple[str, str]] = []
        for part in _chunks(keys):
            out.extend((r[0], r[1]) for r in tx.query(
                f"SELECT key, value FROM journal WHERE key IN ({_marks(len(part))})", part))
        return out

    def list(self, prefix: str) -> list[tuple[str, Any]]:
        with self._db.read("journal list") as tx:
            rows = self.listed_rows(tx, prefix)
            self._db.noted_listing(prefix, [r[0] for r in rows])
        return [(r[0], decode_json(r[1], f"journal entry '{r[0]}'")) for r in rows]

    @staticmethod
    def listed_rows(tx: Tx, prefix: str) -> builtins.list[tuple[str, str]]:
        """(key, stored JSON) of every record under ``prefix``, in the order written."""
        where, params = _by_prefix(prefix)
        return [(r[0], r[1]) for r in tx.query(
            f"SELECT key, value FROM journal WHERE {where} ORDER BY pos", params)]

    def delete(self, prefix: str) -> int:
        where, params = _by_prefix(prefix)
        with self._db.write("journal delete") as tx:
            return tx.execute(f"DELETE FROM journal WHERE {where}", params)

    def delete_keys(self, keys: Sequence[str]) -> int:
        with self._db.write("journal delete") as tx:
            return sum(tx.execute(f"DELETE FROM journal WHERE key IN ({_marks(len(part))})",
                                  list(part)) for part in _chunks(list(dict.fromkeys(keys))))

    def rewrite(self, key: str, value: Any) -> None:
        with self._db.batch():  # one transaction: the old value or the new one
            super().rewrite(key, value)

    # -- runs ------------------------------------------------------------------------
    def start_run(self, run: RunRecord) -> bool:
        values = run_values(run)
        with self._db.write("start_run") as tx:
            return self._db.insert_absent(tx, "runs", "run_id", RUN_INSERT, [values]) > 0

    def start_runs(self, runs: Sequence[RunRecord]) -> builtins.list[str]:
        """The runs not stored yet, in one transaction and one batch insert (the first
        of repeated ids); returns the ids started here."""
        first: dict[str, list[Any]] = {}
        for r in runs:
            first.setdefault(r.run_id, run_values(r))
        if not first:
            return []
        with self._db.write("start_runs") as tx:
            have = set(self._db.present(tx, "runs", "run_id", list(first)))
            new = [v for k, v in first.items() if k not in have]
            if new:
                self._db.insert_rows(tx, "runs", RUN_INSERT, new)
            return [v[0] for v in new]

    def set_run_status(self, run_id: str, status: RunStatus, *,
                       finished_at: datetime | None = None, error: str | None = None) -> None:
        require_aware(f"finished_at of run '{run_id}'", finished_at)
        with self._db.write("set_run_status") as tx:
            n = tx.execute("UPDATE runs SET status = ?, finished_at = ?, error = ?"
                           " WHERE run_id = ?",
                           (status, None if finished_at is None else ts_text(finished_at),
                            error, run_id))
            if n == 0:
                raise NotFoundError(f"run '{run_id}' does not exist")

    def get_run(self, run_id: str) -> RunRecord | None:
        with self._db.read("get_run") as tx:
            row = self.run_row(tx, run_id)
            if row is None:
                self._db.noted_missing_run(run_id)
        return None if row is None else row_to_run(row)

    @staticmethod
    def run_row(tx: Tx, run_id: str) -> tuple[Any, ...] | None:
        """The run's row (``_RUN_COLS``), or None."""
        rows = tx.query(f"SELECT {_RUN_COLS} FROM runs WHERE run_id = ?", (run_id,))
        return tuple(rows[0]) if rows else None

    def list_runs(self, *, thread_id: str | None = None,
                  resource_id: str | None = None) -> builtins.list[RunRecord]:
        with many_objects():
            return [row_to_run(r) for r in self._run_rows(thread_id, resource_id)]

    def run_rows(self, *, thread_id: str | None = None) -> builtins.list[RunRow]:
        with many_objects():
            return [RunRow(r[0], r[1], r[2], r[3], r[4], ts_parse(r[5]), ts_parse_opt(r[6]),
                           r[7]) for r in self._run_rows(thread_id, None)]

    def _run_rows(self, thread_id: str | None, resource_id: str | None
                  ) -> builtins.list[tuple[Any, ...]]:
        sql = f"SELECT {_RUN_COLS} FROM runs WHERE 1 = 1"
        params: builtins.list[Any] = []
        if thread_id is not None:
            sql += " AND thread_id = ?"
            params.append(thread_id)
        if resource_id is not None:
            sql += " AND resource_id = ?"
            params.append(resource_id)
        with self._db.read("list_runs") as tx:
            return tx.query(sql + " ORDER BY started_us, run_id", params)

    def thread_runs(self) -> dict[str, ThreadRuns]:
        sql = "SELECT thread_id, started_at, finished_at FROM runs WHERE thread_id IS NOT NULL"
        with self._db.read("thread_runs") as tx, many_objects():
            rows = (r for part in self._db.stream(tx, sql, (), 20_000) for r in part)
            return tally_thread_runs((r[0], ts_parse(r[1]), ts_parse_opt(r[2])) for r in rows)

    def delete_runs(self, run_ids: Sequence[str]) -> int:
        ids = list(dict.fromkeys(run_ids))
        n = 0
        with self._db.write("delete_runs") as tx:
            for part in _chunks(ids):
                n += tx.execute(f"DELETE FROM runs WHERE run_id IN ({_marks(len(part))})",
                                part)
        return n


