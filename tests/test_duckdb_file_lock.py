"""While this process has a DuckDB file open, nothing of ours opens the file another
way and closes it again: DuckDB's lock on the file is a POSIX record lock, which belongs
to the process and is dropped by the close of *any* descriptor of that file. A sniff of
the file's first bytes (``file_kind``), or a probe of its tables through a second
connection, made while a storage holds it let another process open it for writing
beside this one (two writers: a torn read, a lost write, a broken file)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memory_core.storage.duckdb import DuckDBStorage
from memory_core.storage.url import databases_in, file_kind, open_ours, resolve_existing

ROOT = Path(__file__).resolve().parents[1]

# another process opening the file for writing at once, without waiting or asking
PROBE = """
import sys, duckdb
try:
    duckdb.connect(sys.argv[1]).close()
except duckdb.IOException as e:
    print("locked" if "lock" in str(e).lower() else f"error: {e}")
else:
    print("opened")
"""


def _other_process_gets_it(path: Path) -> bool:
    out = subprocess.run([sys.executable, "-c", PROBE, str(path)], capture_output=True,
                         text=True, timeout=120, cwd=ROOT)
    assert out.stdout.strip() in ("locked", "opened"), out.stdout + out.stderr[-2000:]
    return out.stdout.strip() == "opened"


@pytest.fixture
def held(tmp_path: Path) -> Iterator[tuple[Path, DuckDBStorage]]:
    """A file this process holds read-write (its connection lingers after a write)."""
    path = tmp_path / "agent.duckdb"
    storage = DuckDBStorage(path, linger=60)
    storage.memory.create_thread("t")
    assert not _other_process_gets_it(path)  # the lock holds
    try:
        yield path, storage
    finally:
        storage.close()


LOOKS: dict[str, Callable[[Path], object]] = {
    "file_kind": file_kind,
    "databases_in": lambda p: databases_in(p.parent),
    "resolve_existing": lambda p: resolve_existing(str(p)),
    "open_ours": lambda p: open_ours(str(p)),  # the workbench opening it again
}


@pytest.mark.parametrize("look", list(LOOKS))
def test_looking_at_a_held_file_keeps_its_lock(held: tuple[Path, DuckDBStorage],
                                               look: str) -> None:
    path, storage = held
    seen = LOOKS[look](path)
    try:
        assert not _other_process_gets_it(path)
        storage.memory.append_messages("t", [])  # and the holder still works
    finally:
        if isinstance(seen, DuckDBStorage):
            seen.close()


def test_what_the_looks_say_of_a_held_file(held: tuple[Path, DuckDBStorage]) -> None:
    path, _ = held
    assert file_kind(path) == "duckdb"
    assert databases_in(path.parent) == [path]
    assert resolve_existing(str(path)) == f"duckdb://{path}"


def test_a_file_held_read_only_keeps_its_lock(tmp_path: Path) -> None:
    path = tmp_path / "agent.duckdb"
    DuckDBStorage(path).close()
    reader = DuckDBStorage(path, read_only=True, linger=60)  # the workbench's handle
    try:
        reader.memory.list_threads()
        assert resolve_existing(str(path)) == f"duckdb://{path}"
        assert not _other_process_gets_it(path)
    finally:
        reader.close()
    assert _other_process_gets_it(path)  # let go: anyone may have it


def test_a_file_is_looked_at_once_however_often_it_is_reopened(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading its first bytes (to refuse a foreign file) opens and closes the file: done
    once, on the first open, not again on each reopen."""
    import builtins

    from memory_core.storage import duckdb as duck

    path = tmp_path / "agent.duckdb"
    opened: list[str] = []
    real_open = builtins.open

    def counting(file: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(duck, "open", counting, raising=False)
    s = DuckDBStorage(path, linger=0)  # lets the file go after every operation
    for i in range(4):
        s.memory.create_thread(f"t{i}")
    s.close()
    assert opened.count(str(path)) <= 1
