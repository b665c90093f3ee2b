"""The one schema of every SQL adapter (SQLite, PostgreSQL, DuckDB) and its one
migration list.

A migration's statements are written once; the few words the engines spell
differently (the text and blob types, the journal's auto-increasing position) come
from the driver's ``Dialect``. ``MIGRATIONS`` is append-only: a database records the
versions it has in ``schema_migrations`` and ``apply_migrations`` runs the rest, in
order, inside the caller's write transaction.

Tables: ``meta`` (the store's fixed embedding dimension), ``threads`` (with each
thread's message count and highest seq, kept by every message write), ``messages``
(the message as canonical JSON in ``body``, its lowered text for search, the vector as
float32 bytes, or DuckDB's ``FLOAT[]``), ``working_memory``, ``observations``, ``observation_vectors``, ``journal`` (``pos`` gives the
write order) and ``runs``. Times are stored twice: ISO text with its offset (exact
round trip) and integer microseconds since the epoch (for ordering).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from memory_core.errors import StorageError

DIM_KEY = "embedding_dim"


class Tx(Protocol):
    """One open transaction (or autocommit read) on a driver connection."""

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int: ...

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None: ...


@dataclass(frozen=True)
class Dialect:
    """How one engine spells the types the schema needs."""

    #: a text column (keys compare in code-point order, like Python's sorted())
    text: str = "TEXT"
    #: the embedding column (float32 bytes, or an engine's array of floats)
    vector: str = "BLOB"
    #: the journal's ``pos`` column: an integer primary key that grows with each insert
    serial_pk: str = "INTEGER PRIMARY KEY"
    #: statements that must run before a table using ``serial_pk`` is created
    serial_setup: tuple[str, ...] = field(default=())
    #: whether secondary indexes help (DuckDB scans with zone maps instead, and cannot
    #: ALTER a table that has one)
    indexes: bool = True
    #: the function giving a substring's 1-based position in a text (0: not found)
    position: str = "instr"

    def index(self, statement: str) -> tuple[str, ...]:
        return (statement,) if self.indexes else ()


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    statements: Callable[[Dialect], tuple[str, ...]]


def _initial(d: Dialect) -> tuple[str, ...]:
    t, b = d.text, d.vector
    return (
        f"CREATE TABLE IF NOT EXISTS meta (key {t} PRIMARY KEY, value {t})",
        f"INSERT INTO meta (key, value) VALUES ('{DIM_KEY}', NULL) ON CONFLICT (key) DO NOTHING",
        f"CREATE TABLE IF NOT EXISTS threads (id {t} PRIMARY KEY, resource_id {t},"
        f" title {t}, metadata {t} NOT NULL, parent_thread_id {t},"
        f" created_at {t} NOT NULL, created_us BIGINT NOT NULL, updated_at {t} NOT NULL)",
        *d.index("CREATE INDEX IF NOT EXISTS threads_by_resource ON threads (resource_id)"),
        f"CREATE TABLE IF NOT EXISTS messages (thread_id {t} NOT NULL, seq BIGINT NOT NULL,"
        f" resource_id {t}, body {t} NOT NULL, text_lower {t},"
        f" created_at {t} NOT NULL, created_us BIGINT NOT NULL, run_id {t},"
        f" embedding {b}, PRIMARY KEY (thread_id, seq))",
        *d.index("CREATE INDEX IF NOT EXISTS messages_by_run ON messages (thread_id, run_id)"),
        f"CREATE TABLE IF NOT EXISTS working_memory (key {t} PRIMARY KEY,"
        f" value {t} NOT NULL)",
        f"CREATE TABLE IF NOT EXISTS observations (id {t} PRIMARY KEY,"
        f" thread_id {t} NOT NULL, from_seq BIGINT, to_seq BIGINT, level INTEGER NOT NULL,"
        f" text {t} NOT NULL, source_ids {t} NOT NULL, created_at {t} NOT NULL,"
        f" condensed INTEGER NOT NULL DEFAULT 0, created_us BIGINT NOT NULL)",
        *d.index("CREATE INDEX IF NOT EXISTS observations_by_thread ON observations (thread_id)"),
        *d.serial_setup,
        f"CREATE TABLE IF NOT EXISTS journal (pos {d.serial_pk}, key {t} NOT NULL UNIQUE,"
        f" value {t} NOT NULL)",
        f"CREATE TABLE IF NOT EXISTS runs (run_id {t} PRIMARY KEY, agent {t} NOT NULL,"
        f" thread_id {t}, resource_id {t}, status {t} NOT NULL,"
        f" started_at {t} NOT NULL, started_us BIGINT NOT NULL, finished_at {t},"
        f" error {t})",
        *d.index("CREATE INDEX IF NOT EXISTS runs_by_thread ON runs (thread_id)"),
        *d.index("CREATE INDEX IF NOT EXISTS runs_by_resource ON runs (resource_id)"),
    )


def _thread_counters(d: Dialect) -> tuple[str, ...]:
    """Each thread's message count and highest seq kept on its row (written in the
    transaction of every message insert), backfilled from the messages stored."""
    return (
        "ALTER TABLE threads ADD COLUMN message_count BIGINT NOT NULL DEFAULT 0",
        "ALTER TABLE threads ADD COLUMN max_seq BIGINT NOT NULL DEFAULT -1",
        "UPDATE threads SET message_count = (SELECT COUNT(*) FROM messages m"
        " WHERE m.thread_id = threads.id), max_seq = COALESCE((SELECT MAX(m.seq)"
        " FROM messages m WHERE m.thread_id = threads.id), -1)",
    )


def _observation_vectors(d: Dialect) -> tuple[str, ...]:
    """Observation vectors (SPEC §8.9), one row per vector id ``om:<tid>:<level>:<seq>``:
    the vector as JSON floats (float32 values round-trip exactly; observations are few,
    so no engine-specific column) and its metadata as JSON."""
    t = d.text
    return (
        f"CREATE TABLE IF NOT EXISTS observation_vectors (id {t} PRIMARY KEY,"
        f" thread_id {t} NOT NULL, metadata {t} NOT NULL, vector {t} NOT NULL)",
        *d.index("CREATE INDEX IF NOT EXISTS observation_vectors_by_thread"
                 " ON observation_vectors (thread_id)"),
    )


def key_group_sql(d: Dialect, column: str = "key") -> str:
    """``common.key_group`` in SQL: the key up to and including its first ':', or the
    whole key when it has none."""
    at = f"{d.position}({column}, ':')"
    return f"CASE WHEN {at} > 0 THEN substr({column}, 1, {at}) ELSE {column} END"


def _journal_groups(d: Dialect) -> tuple[str, ...]:
    """Each journal record's group (``common.key_group``: a run's records share one),
    backfilled and indexed, so a run's records are one index look-up: listing them by
    key prefix scanned the whole journal, a cost every run paid (the runner's first
    look) that grew with every run stored (5 ms at 56,000 records on DuckDB, whose
    index answers equality only). Indexed on every engine, DuckDB too: a later
    migration that ALTERs the journal there must drop this index first."""
    group, t = key_group_sql(d), d.text
    if d.indexes:
        return (
            f"ALTER TABLE journal ADD COLUMN grp {t}",
            f"UPDATE journal SET grp = {group}",
            "CREATE INDEX IF NOT EXISTS journal_by_group ON journal (grp)",
        )
    # DuckDB cannot index a table its transaction updated (nor rename an indexed one):
    # the records are copied, in order, into a new journal that is indexed after
    return (
        f"CREATE TABLE journal_grouped (pos {d.serial_pk}, key {t} NOT NULL UNIQUE,"
        f" value {t} NOT NULL, grp {t})",
        f"INSERT INTO journal_grouped (pos, key, value, grp) SELECT pos, key, value, {group}"
        " FROM journal",
        "DROP TABLE journal",
        "ALTER TABLE journal_grouped RENAME TO journal",
        "CREATE INDEX journal_by_group ON journal (grp)",
    )


# Append-only: add Migration(5, ...) at the end, never edit a shipped one.
MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "initial schema", _initial),
    Migration(2, "per-thread message count and max seq", _thread_counters),
    Migration(3, "observation vectors", _observation_vectors),
    Migration(4, "journal key groups", _journal_groups),
)

MIGRATIONS_TABLE = ("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY,"
                    " name TEXT NOT NULL, applied_at TEXT NOT NULL)")


def recorded_versions(tx: Tx) -> set[int]:
    return {int(r[0]) for r in tx.query("SELECT version FROM schema_migrations")}


def check_known(versions: set[int], migrations: Sequence[Migration], where: str) -> None:
    """A database migrated by newer code is refused rather than misread."""
    newer = sorted(versions - {m.version for m in migrations})
    if newer:
        raise StorageError(
            f"{where} has schema versions {newer} that this code does not know (newer "
            f"memory_core?); upgrade memory_core to open it")


def check_current(tx: Tx, migrations: Sequence[Migration], where: str, *,
                  legacy: bool = False) -> None:
    """What a read-only open checks instead of migrating: the database holds our schema
    at exactly this code's version (``legacy``: an older schema that only a writable
    open converts)."""
    from memory_core.errors import SchemaOutdatedError

    tables = {r[0] for r in tx.query("SELECT table_name FROM information_schema.tables")}
    if "schema_migrations" not in tables:
        raise StorageError(f"setup failed: {where} holds no memory_core schema; open it "
                           "once without read_only to create it")
    versions = set() if legacy else recorded_versions(tx)
    check_known(versions, migrations, where)
    if versions != {m.version for m in migrations}:
        raise SchemaOutdatedError(f"setup failed: {where} has an older memory_core schema; "
                                  "open it once without read_only to migrate it")


def apply_migrations(tx: Tx, dialect: Dialect, migrations: Sequence[Migration], now: datetime,
                     where: str) -> list[int]:
    """Run the migrations not yet recorded in schema_migrations, in order, inside the
    caller's write transaction; returns the versions applied."""
    tx.execute(MIGRATIONS_TABLE)
    done = recorded_versions(tx)
    check_known(done, migrations, where)
    applied: list[int] = []
    for m in sorted(migrations, key=lambda m: m.version):
        if m.version in done:
            continue
        for stmt in m.statements(dialect):
            tx.execute(stmt)
        tx.execute("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                   (m.version, m.name, now.isoformat()))
        applied.append(m.version)
    return applied
