"""One place that knows how to build every storage adapter for tests. The conformance
suite (tests/conformance) is parametrized over ADAPTERS and runs unchanged on each."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memory_core.storage.base import Storage

ADAPTERS = ["inmemory", "duckdb-memory", "duckdb-file", "sqlite", "postgres"]


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


def reopen_storage(name: str, tmp_path: Path, **kwargs: Any) -> Storage | None:
    """A second handle on the same database, or None for adapters with no file."""
    if name in ("inmemory", "duckdb-memory"):
        return None
    return make_storage(name, tmp_path, **kwargs)


# -- SQL adapters (owned by the SQLite/PostgreSQL work) --------------------------------
def _make_sqlite(tmp_path: Path, **kwargs: Any) -> Storage:
    from memory_core.storage.sqlite import SQLiteStorage

    return SQLiteStorage(str(tmp_path / "conformance.sqlite"), **kwargs)


def _make_postgres(tmp_path: Path, **kwargs: Any) -> Storage:
    # One schema per test (keyed by tmp_path, so reopen_storage finds the same one) on
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
