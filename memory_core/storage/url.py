"""Storage URLs: open_storage(url) picks and opens the adapter a URL names, and
describe_url(url) renders one for display with any password hidden.

Accepted forms (the text after ``scheme://`` is taken literally as the path):

- ``duckdb:///abs/path.duckdb`` (absolute), ``duckdb://rel/path.duckdb`` (relative to
  the working directory), ``duckdb://:memory:`` or ``duckdb:///:memory:`` (in-process);
- a bare path with no ``scheme://`` (``data/memory.duckdb``, ``/tmp/x.duckdb``) means
  DuckDB;
- ``sqlite:///abs/path.db``, ``sqlite://rel/path.db``, ``sqlite://:memory:``;
- ``postgresql://user:pw@host:port/db`` or ``postgres://…``, handed to libpq as is,
  except a ``schema=<name>`` query parameter, which becomes PostgresStorage(schema=);
- ``memory://`` for InMemoryStorage (nothing survives the process).

Keyword arguments (clock, ids, …) are passed to the adapter's constructor.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from memory_core.errors import InvalidInputError, NotFoundError
from memory_core.storage.base import Storage

SCHEMES = ("duckdb", "sqlite", "postgresql", "postgres", "memory")
_SCHEME_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def _path_of(url: str, scheme: str) -> str:
    path = url[len(scheme) + 3:]
    if path == "/:memory:":
        return ":memory:"
    if not path:
        raise InvalidInputError(f"storage URL {url!r} names no path; write {scheme}:///abs/path")
    return path


def _split_schema(url: str) -> tuple[str, str | None]:
    """Remove a ``schema=`` query parameter (ours, not libpq's) from a PostgreSQL URL."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    schemas = [v for k, v in query if k == "schema"]
    if not schemas:
        return url, None
    rest = urlencode([(k, v) for k, v in query if k != "schema"])
    return urlunsplit(parts._replace(query=rest)), schemas[-1]


def open_storage(url: str, **kwargs: Any) -> Storage:
    """Open the adapter the URL names (see the module docstring for the forms)."""
    if not isinstance(url, str) or not url.strip():
        raise InvalidInputError(f"storage URL must be a non-empty string, got {url!r}")
    url = url.strip()
    m = _SCHEME_RE.match(url)
    if m is None:
        from memory_core.storage.duckdb import DuckDBStorage

        return DuckDBStorage(url, **kwargs)
    scheme = m.group(1).lower()
    if scheme == "memory":
        from memory_core.storage.inmemory import InMemoryStorage

        return InMemoryStorage(**kwargs)
    if scheme == "duckdb":
        from memory_core.storage.duckdb import DuckDBStorage

        return DuckDBStorage(_path_of(url, m.group(1)), **kwargs)
    if scheme == "sqlite":
        from memory_core.storage.sqlite import SQLiteStorage

        return SQLiteStorage(_path_of(url, m.group(1)), **kwargs)
    if scheme in ("postgresql", "postgres"):
        from memory_core.storage.postgres import PostgresStorage

        dsn, schema = _split_schema(url)
        if schema is not None:
            kwargs.setdefault("schema", schema)
        return PostgresStorage(dsn, **kwargs)
    raise InvalidInputError(
        f"unknown storage URL scheme {m.group(1)!r} in {describe_url(url)!r}; "
        f"use one of {', '.join(s + '://' for s in SCHEMES)} or a bare DuckDB path")


def file_of(url: str) -> tuple[str, str] | None:
    """``(adapter, path)`` for a URL naming a database file (``"duckdb"`` for bare paths
    and ``duckdb://``, ``"sqlite"`` for ``sqlite://``); None for in-process databases
    and servers, which have nothing on disk to check."""
    url = url.strip()
    m = _SCHEME_RE.match(url)
    if m is None:
        adapter, path = "duckdb", url
    elif m.group(1).lower() in ("duckdb", "sqlite"):
        adapter, path = m.group(1).lower(), url[len(m.group(1)) + 3:]
    else:
        return None
    if path in ("", ":memory:", "/:memory:"):
        return None
    return adapter, path


def open_existing(url: str, *, read_only: bool = False, **kwargs: Any) -> Storage:
    """Open a database that must already exist: opening a missing file would silently
    create an empty database, so a missing file raises NotFoundError naming it (and a
    directory InvalidInputError). ``read_only`` applies to DuckDB, whose read-only
    handles let another process keep writing."""
    target = file_of(url)
    if target is not None:
        adapter, path = target
        p = Path(path).expanduser()
        if not p.exists():
            raise NotFoundError(f"database file '{path}' does not exist")
        if p.is_dir():
            raise InvalidInputError(f"'{path}' is a directory, not a database file")
        if read_only and adapter == "duckdb":
            kwargs["read_only"] = True
    return open_storage(url, **kwargs)


_KV_PASSWORD = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]*)", re.IGNORECASE)
_URL_PASSWORD = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://[^/@:]*):[^/]*@")


def describe_url(url: str) -> str:
    """The URL or libpq DSN with any password replaced by ``***``."""
    out = _URL_PASSWORD.sub(r"\1:***@", url)
    return _KV_PASSWORD.sub(r"\1***", out)
