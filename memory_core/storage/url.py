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
import stat
import sys
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from memory_core.errors import InvalidInputError, NotFoundError, StorageError
from memory_core.storage.base import Storage
from memory_core.storage.common import describe_url
from memory_core.storage.filekind import head_kind

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
        existing_file(path)
        if read_only and adapter == "duckdb":
            kwargs["read_only"] = True
    return open_storage(url, **kwargs)





# -- opening policy for the workbench and the CLI ---------------------------------------
# What a reader (a read-only command, the workbench) may open: an existing database that
# already holds our schema. Everything is checked over a read-only connection before the
# adapter (whose setup migrates) ever sees the database, so a foreign SQLite file,
# DuckDB file or PostgreSQL schema is refused untouched, and a SQLite file named by a
# bare path is opened as SQLite (DuckDB would try to download its sqlite extension).
OUR_TABLES = ("schema_migrations", "meta", "threads", "messages", "journal", "runs")
PROBE_TIMEOUT_SECONDS = 5.0


def expand_url(url: str) -> str:
    """The URL with ``~`` expanded in a file path (bare, ``duckdb://`` or ``sqlite://``);
    other URLs unchanged."""
    url = url.strip()
    target = file_of(url)
    if target is None or not target[1].startswith("~"):
        return url
    try:
        expanded = str(Path(target[1]).expanduser())
    except RuntimeError:  # ~nosuchuser
        raise InvalidInputError(f"cannot expand '{target[1]}': no such user's home "
                                "directory") from None
    m = _SCHEME_RE.match(url)
    return expanded if m is None else f"{m.group(1)}://{expanded}"


def existing_file(path: str) -> Path:
    """``path`` (``~`` expanded) when it names an existing regular file; NotFoundError
    when it is missing, InvalidInputError naming it for a directory, a FIFO, a device
    or a socket (reading one would hang or mislead) and for a path the system refuses
    (too long, a file where a folder should be)."""
    try:
        p = Path(path).expanduser()
        st = p.stat()
    except RuntimeError:
        raise InvalidInputError(f"cannot expand '{path}': no such user's home "
                                "directory") from None
    except FileNotFoundError:
        raise NotFoundError(f"database file '{path}' does not exist") from None
    except OSError as e:
        raise InvalidInputError(f"cannot use '{path}' as a database file: "
                                f"{e.strerror or e}") from None
    if stat.S_ISDIR(st.st_mode):
        raise InvalidInputError(f"'{path}' is a directory, not a database file")
    if not stat.S_ISREG(st.st_mode):
        raise InvalidInputError(f"'{path}' is not a regular file (a FIFO, device or "
                                "socket), not a database file")
    return p


def file_kind(path: str | Path) -> str | None:
    """``"duckdb"`` or ``"sqlite"`` from a file's first bytes; None for anything else
    (an empty file, a text file, a directory)."""
    if _held_here(path):
        return "duckdb"  # opening it to look would drop this process's lock on it
    try:
        return head_kind(path)
    except (IsADirectoryError, PermissionError, FileNotFoundError):
        return None


def _foreign(where: str, tables: set[str]) -> InvalidInputError:
    missing = [t for t in OUR_TABLES if t not in tables]
    return InvalidInputError(
        f"{where} is not a Memory Workbench database (it lacks our tables: "
        f"{', '.join(missing)}); refusing to open it")


def _held_here(path: str | Path) -> bool:
    """Whether a DuckDB storage of this process holds the file (``holds_file``); no
    storage can before the DuckDB adapter is imported, and this does not import it."""
    duck = sys.modules.get("memory_core.storage.duckdb_file")
    return duck is not None and bool(duck.holds_file(str(path)))


def _duckdb_tables(path: str) -> set[str]:
    from memory_core.errors import StorageBusyError
    from memory_core.storage.duckdb_file import table_names

    try:  # through this process's hold on the file, so a probe never drops its lock
        return table_names(path, PROBE_TIMEOUT_SECONDS)
    except StorageBusyError:
        raise
    except StorageError as e:
        raise InvalidInputError(f"'{path}' is not a valid DuckDB database: {e}") from e


def _sqlite_tables(path: str) -> set[str]:
    import sqlite3

    uri = Path(path).resolve().as_uri() + "?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=PROBE_TIMEOUT_SECONDS)
        try:
            rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
        finally:
            conn.close()
    except sqlite3.Error as e:
        raise InvalidInputError(f"'{path}' is not a readable SQLite database: {e}") from e
    return {str(r[0]) for r in rows}


def _postgres_tables(url: str) -> tuple[str, set[str]]:
    import psycopg

    from memory_core.errors import StorageError

    dsn, schema = _split_schema(url)
    where = describe_url(dsn) + (f" (schema {schema})" if schema else "")
    try:
        with psycopg.connect(dsn, connect_timeout=int(PROBE_TIMEOUT_SECONDS)) as conn:
            conn.read_only = True
            rows = conn.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = coalesce(%s, current_schema())", (schema,)).fetchall()
    except psycopg.Error as e:
        raise StorageError(f"connecting to PostgreSQL at {where} failed: {e}") from e
    return f"PostgreSQL {where}", {str(r[0]) for r in rows}


def resolve_existing(url: str) -> str:
    """The URL of an existing Memory Workbench database, checked without writing a byte:
    ``~`` expanded, a bare path to a SQLite file turned into ``sqlite://``; raises
    NotFoundError for a missing file and InvalidInputError naming the value for a
    directory, a file of the other engine, a file that is no database, or a database
    (file or PostgreSQL schema) that does not hold our tables."""
    if not isinstance(url, str) or not url.strip():
        raise InvalidInputError(f"storage URL must be a non-empty string, got {url!r}")
    url = expand_url(url)
    m = _SCHEME_RE.match(url)
    scheme = m.group(1).lower() if m else None
    if scheme in ("postgresql", "postgres"):
        where, tables = _postgres_tables(url)
        if not set(OUR_TABLES) <= tables:
            raise _foreign(where, tables)
        return url
    target = file_of(url)
    if target is None:  # memory:// and :memory: are new, empty databases
        if scheme not in SCHEMES and scheme is not None:
            open_storage(url)  # raises the unknown-scheme error
        return url
    adapter, path = target
    p = existing_file(path)
    kind = file_kind(p)
    if kind is None:
        raise InvalidInputError(f"'{path}' is not a valid DuckDB or SQLite database file")
    if scheme is not None and kind != adapter:
        raise InvalidInputError(f"'{path}' is a {kind} file, not {adapter}; "
                                f"open it as {kind}:///{p.resolve().as_posix().lstrip('/')}")
    tables = _duckdb_tables(path) if kind == "duckdb" else _sqlite_tables(path)
    if not set(OUR_TABLES) <= tables:
        raise _foreign(f"'{path}'", tables)
    return url if scheme is not None else f"{kind}://{path}"


def open_ours(url: str, *, read_only: bool = True, **kwargs: Any) -> Storage:
    """Open an existing Memory Workbench database (see resolve_existing); DuckDB files
    open read-only when ``read_only``, so an agent process can keep writing."""
    resolved = resolve_existing(url)
    return open_existing(resolved, read_only=read_only, **kwargs)


def databases_in(directory: str | Path) -> list[Path]:
    """The DuckDB and SQLite files directly inside ``directory`` (by their first bytes,
    not their names), sorted by name."""
    return sorted(p for p in Path(directory).iterdir()
                  if p.is_file() and file_kind(p) is not None)


def database_name(url: str) -> str:
    """A short display name for a database: the file's stem, the PostgreSQL schema (or
    database), or the name of a ``memory://`` database."""
    target = file_of(url)
    if target is not None:
        return Path(target[1]).stem or target[1]
    m = _SCHEME_RE.match(url.strip())
    scheme = m.group(1).lower() if m else ""
    if scheme in ("postgresql", "postgres"):
        dsn, schema = _split_schema(url)
        return schema or urlsplit(dsn).path.strip("/") or "postgres"
    return url.strip()[len(scheme) + 3:] or scheme or url


def catalog(specs: list[str]) -> dict[str, str]:
    """The databases a workbench serves, by unique name: each spec is a database URL or
    path, or a directory whose database files are all served. Names repeat with a
    ``-2``, ``-3`` … suffix."""
    urls: list[str] = []
    for spec in specs:
        spec = expand_url(spec)
        target = file_of(spec)
        if target is not None and Path(target[1]).is_dir():
            urls += [str(p) for p in databases_in(target[1])]
        else:
            urls.append(spec)
    out: dict[str, str] = {}
    for url in urls:
        base = name = database_name(url)
        n = 1
        while name in out:
            n += 1
            name = f"{base}-{n}"
        out[name] = url
    return out
