"""One place that knows how to build every storage adapter for tests. The conformance
suite (memory_core.testing, run by tests/conformance/test_adapters.py) runs unchanged
on each of FACTORIES: ADAPTERS with what each promises."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memory_core.storage.base import Storage
from memory_core.testing.factory import (
    ATOMIC_BATCHES,
    PERSISTS,
    SEPARATE_CONNECTIONS,
    AdapterFactory,
)

ADAPTERS = ["inmemory", "duckdb-memory", "duckdb-file", "sqlite", "postgres"]

# Which optional behaviours of the conformance suite each adapter promises. In-memory
# commits each write on its own; DuckDB groups a batch, but a second DuckDB handle in
# this process shares the first one's connection; SQLite and PostgreSQL have it all.
CAPABILITIES: dict[str, frozenset[str]] = {
    "inmemory": frozenset(),
    "duckdb-memory": frozenset({ATOMIC_BATCHES}),
    "duckdb-file": frozenset({PERSISTS, ATOMIC_BATCHES}),
    "sqlite": frozenset({PERSISTS, ATOMIC_BATCHES, SEPARATE_CONNECTIONS}),
    "postgres": frozenset({PERSISTS, ATOMIC_BATCHES, SEPARATE_CONNECTIONS}),
}


def make_storage(name: str, tmp_path: Path, **kwargs: Any) -> Storage:
    if name == "inmemory":
        from memory_core.storage.inmemory import InMemoryStorage

        return InMemoryStorage(**kwargs)
    if name == "duckdb-memory":
        from memory_core.storage.duckdb import DuckDBStorage

        return DuckDBStorage(":memory:", **kwargs)
    if name == "duckdb-file":
        from memory_core.storage.duckdb import DuckDBStorage

        return DuckDBStorage(str(tmp_path / "conformance.duckdb"), **kwargs)
    if name == "sqlite":
        return _make_sqlite(tmp_path, **kwargs)
    if name == "postgres":
        return _make_postgres(tmp_path, **kwargs)
    raise ValueError(f"unknown adapter {name!r}")


def factory(name: str) -> AdapterFactory:
    """The adapter as the conformance suite takes it: with PERSISTS, make_storage on
    the same tmp_path opens the same database again (a file, or the PostgreSQL schema
    keyed by tmp_path)."""

    def make(tmp_path: Path, **kwargs: Any) -> Storage:
        return make_storage(name, tmp_path, **kwargs)

    return AdapterFactory(name, make=make, capabilities=CAPABILITIES[name])


FACTORIES = [factory(name) for name in ADAPTERS]


# -- SQL adapters (owned by the SQLite/PostgreSQL work) --------------------------------
def _make_sqlite(tmp_path: Path, **kwargs: Any) -> Storage:
    from memory_core.storage.sqlite import SQLiteStorage

    return SQLiteStorage(str(tmp_path / "conformance.sqlite"), **kwargs)


def _make_postgres(tmp_path: Path, **kwargs: Any) -> Storage:
    # One schema per test (keyed by tmp_path, so a second make finds the same one) on
    # the throwaway server; skips only when MEMWB_SKIP_POSTGRES=1, fails if unavailable.
    from memory_core.storage.postgres import PostgresStorage
    from tests.pg_server import require_postgres_dsn, schema_for

    dsn = require_postgres_dsn()
    return PostgresStorage(dsn, schema=schema_for(dsn, tmp_path), **kwargs)


def shared_url(kind: str, tmp_path: Path, stem: str = "db") -> str:
    """A storage URL several real processes can open at once: a SQLite or DuckDB file
    under ``tmp_path``, or a PostgreSQL schema private to ``tmp_path``."""
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / (stem + '.db')}"
    if kind == "duckdb":
        return f"duckdb:///{tmp_path / (stem + '.duckdb')}"
    from tests.pg_server import require_postgres_dsn, schema_for

    dsn = require_postgres_dsn()
    sep = "&" if "?" in dsn else "?"
    return f"{dsn}{sep}schema={schema_for(dsn, tmp_path)}"
