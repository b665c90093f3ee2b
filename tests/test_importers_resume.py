"""An import killed part way (SIGKILL in a subprocess, after a random number of store
writes) is completed by importing the same file again: the database then equals a
clean import, and a third import is a no-op."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memory_core.importers import import_file
from memory_core.storage.base import Storage

ROOT = Path(__file__).resolve().parent.parent
FIX = Path(__file__).parent / "fixtures" / "imports"
T0 = datetime(2026, 1, 1, tzinfo=UTC)

WORKER = r"""
import os, signal, sys
from datetime import UTC, datetime
from memory_core.importers import import_file

kind, db, path, kill_after = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
clock = lambda: datetime(2026, 1, 1, tzinfo=UTC)
if kind == "sqlite":
    from memory_core.storage.sqlite import SQLiteStorage
    st = SQLiteStorage(db, clock=clock)
else:
    from memory_core.storage.duckdb import DuckDBStorage
    st = DuckDBStorage(db, clock=clock)
count = [0]

def counted(obj, name):
    orig = getattr(obj, name)
    def write(*a, **k):
        out = orig(*a, **k)
        count[0] += 1
        if count[0] == kill_after:
            os.kill(os.getpid(), signal.SIGKILL)
        return out
    setattr(obj, name, write)

for name in ("create_thread", "append_messages", "add_threads"):
    counted(st.memory, name)
for name in ("start_run", "put_if_absent", "start_runs", "put_many_if_absent"):
    counted(st.runs, name)
import_file(st, path)
print(count[0])
"""


def open_store(kind: str, db: Path) -> Storage:
    if kind == "sqlite":
        from memory_core.storage.sqlite import SQLiteStorage

        return SQLiteStorage(str(db), clock=lambda: T0)
    from memory_core.storage.duckdb import DuckDBStorage

    return DuckDBStorage(str(db), clock=lambda: T0)


def run_worker(kind: str, db: Path, src: Path, kill_after: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", WORKER, kind, str(db), str(src),
                           str(kill_after)], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin"})


def snapshot(st: Storage) -> dict[str, Any]:
    threads = st.memory.list_threads()
    return {"threads": [t.model_dump() for t in threads],
            "messages": {t.id: [m.model_dump() for m in st.memory.get_messages(t.id)]
                         for t in threads},
            "journal": st.runs.list(""),
            "runs": [r.model_dump() for r in st.runs.list_runs()]}


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "name", "points"), [
    ("sqlite", "openai_support.jsonl", 4),
    ("sqlite", "real/otelv2-test_chat_completion_tool_calls_with_content.yaml", 3),
    ("duckdb", "openai_keyed.jsonl", 2),
])
def test_sigkill_at_random_points_then_import_again_equals_a_clean_import(
        kind: str, name: str, points: int, tmp_path: Path) -> None:
    src = FIX / name
    clean_db = tmp_path / f"clean.{kind}"
    total = run_worker(kind, clean_db, src, 0)
    assert total.returncode == 0, total.stderr
    writes = int(total.stdout.strip())
    with open_store(kind, clean_db) as st:
        clean = snapshot(st)
    rng = random.Random(f"{kind}:{name}")
    # (new threads are written a batch at a time: a file may make fewer writes)
    for i, kill_after in enumerate(sorted(rng.sample(range(1, writes),
                                                     min(points, writes - 1)))):
        db = tmp_path / f"killed{i}.{kind}"
        killed = run_worker(kind, db, src, kill_after)
        assert killed.returncode == -signal.SIGKILL, (kill_after, killed.stderr)
        with open_store(kind, db) as st:
            before = snapshot(st)
            assert before != clean  # really part way
            report = import_file(st, src)
            # a kill inside a write batch (one transaction) leaves nothing of it behind
            assert report.resumed == bool(before["threads"] or before["runs"])
            assert not report.already_imported
            assert snapshot(st) == clean, f"killed after write {kill_after} of {writes}"
            again = import_file(st, src)
            assert again.already_imported and snapshot(st) == clean


def test_a_clean_import_is_not_called_resumed(tmp_path: Path) -> None:
    with open_store("sqlite", tmp_path / "db.sqlite") as st:
        report = import_file(st, FIX / "openai_support.jsonl")
        assert not report.resumed and not report.already_imported
