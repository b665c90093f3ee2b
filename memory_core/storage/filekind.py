"""What kind of database a file is, from its first bytes: the URL router probes with
it, and the DuckDB adapter refuses a file that is not DuckDB's before DuckDB sees it."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from memory_core.errors import StorageError

SQLITE_MAGIC = b"SQLite format 3\x00"
DUCKDB_MAGIC = b"DUCK"  # bytes 8..12 of a DuckDB file


def head_kind(path: str | Path) -> str | None:
    """``"duckdb"`` or ``"sqlite"`` from the first bytes of a file that may be held
    (reading it opens a descriptor: see ``url.file_kind``); None for an empty file or any
    other; OSError as raised."""
    with open(path, "rb") as f:
        head = f.read(16)
    if head.startswith(SQLITE_MAGIC):
        return "sqlite"
    if head[8:12] == DUCKDB_MAGIC:
        return "duckdb"
    return None


def refuse_foreign_file(op: str, path: str) -> None:
    """A file that is not DuckDB's is refused before DuckDB sees it: DuckDB would
    otherwise look for an extension to read it (SQLite), or write into it."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise StorageError(f"{op} failed: '{path}' is not a regular file")
        kind = head_kind(path)
        if kind is None and os.path.getsize(path) == 0:
            return  # an empty file: DuckDB makes it a new database
    except FileNotFoundError:
        return  # a new database
    except OSError as e:
        raise StorageError(f"{op} failed: cannot read '{path}': {e}") from e
    if kind == "duckdb":
        return
    what = " (it is a SQLite database)" if kind == "sqlite" else ""
    raise StorageError(f"{op} failed: '{path}' is not a valid DuckDB database{what}; give "
                       "a DuckDB file (or a new path), or open it with the adapter it "
                       "belongs to")
