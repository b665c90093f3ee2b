"""The README's test command also lints: ruff over every Python folder and mypy as
configured in pyproject.toml ([tool.mypy], strict), each run from the venv that runs the
tests, failing with the tool's own output."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
RUFF_PATHS = ["memory_core", "app", "sample_data", "tests", "bench"]


def _tool(name: str) -> str:
    path = BIN / name
    if not os.access(path, os.X_OK):
        pytest.fail(f"{path} is missing: install the dev extras (`pip install -e '.[dev]'`)")
    return str(path)


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_ruff_is_clean() -> None:
    done = _run([_tool("ruff"), "check", "--no-cache", *RUFF_PATHS])
    assert done.returncode == 0, f"ruff found problems:\n{done.stdout}{done.stderr}"


@pytest.mark.slow  # ~2 min without mypy's cache (a fresh clone): make test runs it
def test_mypy_is_clean() -> None:
    # the packages and strictness come from pyproject.toml's [tool.mypy]
    done = _run([_tool("mypy")])
    assert done.returncode == 0, f"mypy found problems:\n{done.stdout}{done.stderr}"
    assert "Success" in done.stdout, done.stdout
