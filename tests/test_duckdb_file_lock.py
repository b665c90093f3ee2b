"""While this process has a DuckDB file open (inside a ``storage.session()``), nothing
of ours opens the file another way and closes it again: DuckDB's lock on the file is a
POSIX record lock, which belongs to the process and is dropped by the close of *any*
descriptor of that file. A sniff of the file's first bytes (``file_kind``), a probe of
its tables through a second connection, or a second storage of this process on the
file, made while a storage holds it, would let another process open it for writing
beside this one (two writers: a torn read, a lost write, a broken file)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memory_core.storage.duckdb import DuckDBStorage
from memory_core.storage.url import databases_in, file_kind, open_ours, resolve_existing
from memory_core.types import AppendRow, Message

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


def other_process_gets_it(path: Path) -> bool:
    """Whether another process opens the file for writing at its first try (nothing
    holds it, not even for reading); also used by test_duckdb_processes."""
    out = subprocess.run([sys.executable, "-c", PROBE, str(path)], capture_output=True,
                         text=True, timeout=120, cwd=ROOT)
    assert out.stdout.strip() in ("locked", "opened"), out.stdout + out.stderr[-2000:]
    return out.stdout.strip() == "opened"


@pytest.fixture
def held(tmp_path: Path) -> Iterator[tuple[Path, DuckDBStorage]]:
    """A file this process holds read-write: inside a session, after an operation."""
    path = tmp_path / "agent.duckdb"
    storage = DuckDBStorage(path)
    try:
        with storage.session():
            storage.memory.create_thread("t")
            assert not other_process_gets_it(path)  # the lock holds
            yield path, storage
    finally:
        storage.close()


LOOKS: dict[str, Callable[[Path], object]] = {
    "file_kind": file_kind,
    "databases_in": lambda p: databases_in(p.parent),
    "resolve_existing": lambda p: resolve_existing(str(p)),
    "open_ours": lambda p: open_ours(str(p)),  # the workbench opening it again
    "DuckDBStorage": lambda p: DuckDBStorage(p),  # another writer of this process
    "read-only DuckDBStorage": lambda p: DuckDBStorage(p, read_only=True),
}


@pytest.mark.parametrize("look", list(LOOKS))
def test_looking_at_a_held_file_keeps_its_lock(held: tuple[Path, DuckDBStorage],
                                               look: str) -> None:
    path, storage = held
    seen = LOOKS[look](path)
    try:
        assert not other_process_gets_it(path)
        if isinstance(seen, DuckDBStorage):  # the second storage reads through it
            assert [t.id for t in seen.memory.list_threads()] == ["t"]
            seen.close()
            assert not other_process_gets_it(path)  # its close kept the lock too
        # and the holder still works, still holding the file
        assert storage.memory.append_messages("t", [AppendRow(message=Message(content="x"))]) \
            == [0]
        assert not other_process_gets_it(path)
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
    reader = DuckDBStorage(path, read_only=True)  # the workbench's handle
    try:
        with reader.session():  # one page's look
            reader.memory.list_threads()
            assert resolve_existing(str(path)) == f"duckdb://{path}"
            assert not other_process_gets_it(path)
        assert other_process_gets_it(path)  # the look ended: anyone may have it
    finally:
        reader.close()
    assert other_process_gets_it(path)
