"""Running one hostile case: ``memwb`` in a subprocess with its address space capped
and a timeout, and the checks every refusal must pass — exit 1, one ``error:`` line on
stderr, no traceback anywhere, and (for a database) its content unchanged."""

from __future__ import annotations

import hashlib
import os
import resource
import sqlite3
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: the address-space cap of every case: a bomb that expanded would hit it
MEMORY_CAP = 3 << 30
TIMEOUT = 120


def _cap_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def memwb(*args: str, env: dict[str, str] | None = None,
          timeout: float = TIMEOUT) -> subprocess.CompletedProcess[str]:
    """``python -m memory_core.cli ARGS`` under the memory cap; a hang past ``timeout``
    fails the test (TimeoutExpired)."""
    full_env = {k: v for k, v in os.environ.items() if k != "MEMWB_DB"}
    full_env.update({"HF_HUB_OFFLINE": "1", "OPENAI_API_KEY": "", **(env or {})})
    return subprocess.run([sys.executable, "-m", "memory_core.cli", *args],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                          env=full_env, preexec_fn=_cap_memory)


def no_traceback(*texts: str) -> None:
    for text in texts:
        assert "Traceback" not in text, text[-3000:]


def refused(done: subprocess.CompletedProcess[str]) -> str:
    """The case ended in exit 1 with exactly one ``error:`` line, the last on stderr
    (an import's progress lines may come before it), and no traceback anywhere."""
    no_traceback(done.stdout, done.stderr)
    assert done.returncode == 1, (done.returncode, done.stdout[-500:], done.stderr[-2000:])
    lines = done.stderr.strip().splitlines()
    errors = [ln for ln in lines if ln.startswith("error:")]
    assert len(errors) == 1 and lines[-1] == errors[0], done.stderr[-2000:]
    assert len(errors[0]) < 2000, errors[0][:300]
    return errors[0]


def content_hash(path: Path) -> str:
    """A SQLite (or, named ``*.duckdb``, DuckDB) database's content: every table's rows,
    in order."""
    if path.suffix == ".duckdb":
        return _duckdb_hash(path)
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        digest = hashlib.sha256()
        tables = [r[0] for r in con.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        for table in tables:
            digest.update(f"\0table {table}\0".encode())
            for row in con.execute(f'SELECT * FROM "{table}" ORDER BY 1, 2'):
                digest.update(repr(row).encode())
        return digest.hexdigest()
    finally:
        con.close()


def _duckdb_hash(path: Path) -> str:
    import duckdb

    con = duckdb.connect(str(path), read_only=True)
    try:
        digest = hashlib.sha256()
        tables = [r[0] for r in con.execute(
            "SELECT table_name FROM information_schema.tables ORDER BY table_name"
        ).fetchall()]
        for table in tables:
            digest.update(f"\0table {table}\0".encode())
            for row in con.execute(f'SELECT * FROM "{table}" ORDER BY ALL').fetchall():
                digest.update(repr(row).encode())
        return digest.hexdigest()
    finally:
        con.close()


def two_runs(path: Path, engine: str = "sqlite") -> None:
    """A database (SQLite or DuckDB) of two Runner runs, r1 and r2 of thread t (user u,
    the offline reader): what a damaged-database case edits behind our back."""
    from memory_core.composition.memory import AgentMemory
    from memory_core.embedding.hashing import HashingEmbedder
    from memory_core.models.reader import ReaderModel
    from memory_core.runs.runner import Agent, Runner
    from memory_core.storage.duckdb import DuckDBStorage
    from memory_core.storage.sqlite import SQLiteStorage

    s = SQLiteStorage(str(path)) if engine == "sqlite" else DuckDBStorage(str(path))
    embed = HashingEmbedder(64)
    runner = Runner(s, {"a": Agent("a", "Answer.", ReaderModel(embed=embed))},
                    memory=AgentMemory(s, embed=embed, recent_n=2))
    runner.run("a", run_id="r1", thread_id="t", resource_id="u", prompt="My code is 4471.")
    runner.run("a", run_id="r2", thread_id="t", resource_id="u", prompt="What is my code?")
    s.close()


def two_runs_sqlite(path: Path) -> None:
    two_runs(path, "sqlite")
