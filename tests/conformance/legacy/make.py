"""Regenerate the legacy databases (only meaningful on the commit named in
__init__.py): ``python -m tests.conformance.legacy.make``."""

from __future__ import annotations

import gzip
import json
import shutil
import tempfile
from pathlib import Path

from memory_core.storage.duckdb import DuckDBStorage
from memory_core.storage.sqlite import SQLiteStorage
from tests.conformance.legacy import EXPECTED, FILES, dump, populate


def main() -> None:
    dumps = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, target in FILES.items():
            path = Path(tmp) / name
            s = DuckDBStorage(path) if name == "duckdb" else SQLiteStorage(path)
            populate(s)
            s.close()
            s = DuckDBStorage(path) if name == "duckdb" else SQLiteStorage(path)
            dumps[name] = dump(s)
            s.close()
            if name == "sqlite":
                import sqlite3

                c = sqlite3.connect(path)
                c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                c.execute("PRAGMA journal_mode = DELETE")
                c.close()
            with path.open("rb") as src, target.open("wb") as raw, \
                    gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as dst:
                shutil.copyfileobj(src, dst)
    EXPECTED.write_text(json.dumps(dumps, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
