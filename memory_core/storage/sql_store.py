"""``SqlStorage``: both SQL ports over one ``Driver``, the base of the SQLite, PostgreSQL
and DuckDB adapters (each builds its driver and calls ``_open``)."""

from __future__ import annotations

from contextlib import AbstractContextManager

from memory_core.storage import schema
from memory_core.storage.base import Storage
from memory_core.storage.common import Clock, ThreadIdFactory, checked_clock, utc_now
from memory_core.storage.sql_common import Driver
from memory_core.storage.sql_journal import SqlRunJournal
from memory_core.storage.sql_memory import SqlMemoryStore


class SqlStorage(Storage):
    """Both SQL ports over one Driver; an adapter builds its driver and calls _open."""

    _db: Driver

    def _open(self, db: Driver, clock: Clock, ids: ThreadIdFactory | None,
              memory: type[SqlMemoryStore] | None = None,
              runs: type[SqlRunJournal] | None = None) -> None:
        self._db = db
        try:
            # looked up here, not bound at import, so a test can pin an older list
            db.migrate(schema.MIGRATIONS, utc_now())
        except BaseException:
            db.close()
            raise
        clock = checked_clock(clock)
        self.memory = (memory or SqlMemoryStore)(db, clock, ids or ThreadIdFactory(clock))
        self.runs = (runs or SqlRunJournal)(db)

    def write_batch(self) -> AbstractContextManager[None]:
        """Every write in the block in one transaction (one commit), where the driver
        groups writes (SQLite, PostgreSQL, DuckDB); a failure leaves none of them."""
        return self._db.batch()

    def close(self) -> None:
        self._db.close()
