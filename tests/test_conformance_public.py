"""The public conformance suite (memory_core.testing) runs on an adapter written outside
memory_core, from its public classes only, in a pytest of its own, and passes it; an
adapter with one broken behaviour fails it, by the test of that behaviour. Importing
memory_core does not import pytest."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from memory_core.storage.inmemory import InMemoryStorage
from memory_core.testing import PERSISTS, AdapterFactory

ROOT = Path(__file__).resolve().parents[1]

# A third party's adapter: its own Storage class over ports it builds from public
# memory_core classes, keeping each directory's data for the process (so it persists
# from one handle to the next).
USER_ADAPTER = '''
from pathlib import Path
from typing import Any

from memory_core import InMemoryStorage, Storage
from memory_core.testing import PERSISTS, AdapterFactory, conformance_tests

_DATA: dict[Path, InMemoryStorage] = {}


class DictStorage(Storage):
    def __init__(self, where: Path, **kwargs: Any) -> None:
        if where not in _DATA:
            _DATA[where] = InMemoryStorage(**kwargs)
        self.memory = _DATA[where].memory
        self.runs = _DATA[where].runs
'''

GOOD = USER_ADAPTER + '''
globals().update(conformance_tests(
    AdapterFactory("mine", make=lambda tmp, **kw: DictStorage(tmp, **kw),
                   capabilities={PERSISTS})))
'''

BROKEN = USER_ADAPTER + '''

class WrongSeqs(DictStorage):
    """append_messages stores the rows but answers each seq one too high."""

    def __init__(self, where: Path, **kwargs: Any) -> None:
        super().__init__(where, **kwargs)
        real = self.memory.append_messages
        self.memory.append_messages = lambda tid, rows: [s + 1 for s in real(tid, rows)]


class Overwrites(DictStorage):
    """put_if_absent lets a later write replace the first."""

    def __init__(self, where: Path, **kwargs: Any) -> None:
        super().__init__(where, **kwargs)
        runs, real = self.runs, self.runs.put_if_absent

        def put(key: str, value: Any) -> bool:
            if runs.has(key):
                runs.delete(key)
            return real(key, value)

        runs.put_if_absent = put


globals().update(conformance_tests(
    AdapterFactory("wrong-seqs", make=lambda tmp, **kw: WrongSeqs(tmp, **kw)),
    AdapterFactory("overwrites", make=lambda tmp, **kw: Overwrites(tmp, **kw))))
'''


def _pytest(tmp_path: Path, name: str, source: str) -> tuple[int, str]:
    """Run pytest on ``source`` as a user's test file, in a directory of its own."""
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / name).write_text(source)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-rfs", name],
        cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    return done.returncode, done.stdout + done.stderr


def _tally(out: str) -> dict[str, int]:
    summary = out.strip().splitlines()[-1]
    return {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|skipped|errors?)",
                                             summary)}


@pytest.mark.slow
def test_the_suite_passes_an_adapter_written_outside_memory_core(tmp_path: Path) -> None:
    code, out = _pytest(tmp_path, "test_mine.py", GOOD)
    assert code == 0, out
    tally = _tally(out)
    assert tally.get("passed", 0) > 100 and set(tally) == {"passed", "skipped"}, out
    # only the one behaviour it does not promise is skipped
    assert tally["skipped"] == 1, out
    assert "mine: no separate_connections" in out, out
    assert "test_mine.py::TestJournal::test_put_if_absent_first_write_wins[mine] PASSED" \
        in out, out


@pytest.mark.slow
def test_the_suite_fails_an_adapter_with_one_broken_behaviour(tmp_path: Path) -> None:
    code, out = _pytest(tmp_path, "test_broken.py", BROKEN)
    assert code == 1, out
    failed = set(re.findall(r"^FAILED test_broken\.py::(\S+)", out, re.M))
    # each broken behaviour is caught by the test of it, named with the adapter
    assert "TestMessages::test_seqs_are_dense_from_zero_per_thread[wrong-seqs]" in failed
    assert "TestJournal::test_put_if_absent_first_write_wins[overwrites]" in failed
    # and the report shows the values compared (pytest rewrote the suite's asserts)
    assert "assert [1, 2] == [0, 1]" in out, out
    # the other tests still pass on both
    assert _tally(out).get("passed", 0) > 100, out


def test_importing_memory_core_does_not_import_pytest() -> None:
    code = ("import sys, memory_core; from memory_core import InMemoryStorage, Storage; "
            "InMemoryStorage(); assert 'pytest' not in sys.modules, 'pytest imported'; "
            "import memory_core.testing; assert 'pytest' in sys.modules")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr


def test_a_factory_names_only_known_capabilities() -> None:
    def make(tmp: Path) -> InMemoryStorage:
        return InMemoryStorage()

    with pytest.raises(ValueError, match=r"unknown capabilities \['persist'\]"):
        AdapterFactory("x", make=make, capabilities=frozenset({"persist"}))
    with pytest.raises(ValueError, match="reopen given without 'persists'"):
        AdapterFactory("x", make=make, reopen=make)
    with pytest.raises(ValueError, match="'separate_connections' needs"):
        AdapterFactory("x", make=make, capabilities=frozenset({"separate_connections"}))
    ok = AdapterFactory("x", make=make, capabilities={PERSISTS})
    assert ok.capabilities == frozenset({PERSISTS}) and ok.has(PERSISTS)


def test_the_suite_knows_no_adapter() -> None:
    """The suite's code imports no adapter module (nor tests/): it speaks the ports."""
    allowed = {"memory_core.storage.base", "memory_core.storage.common"}
    found = {}
    for path in (ROOT / "memory_core" / "testing").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        mods = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        mods |= {n.module for n in ast.walk(tree)
                 if isinstance(n, ast.ImportFrom) and n.module}
        bad = sorted(m for m in mods if m.split(".")[0] == "tests" or
                     (m.startswith("memory_core.storage") and m not in allowed))
        if bad:
            found[str(path.relative_to(ROOT))] = bad
    assert found == {}
