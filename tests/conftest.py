"""Session-wide fixtures: the demo database built once with the real embedding model."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# the local fake OpenAI-compatible provider, as the ``fake_provider`` fixture
from tests.fake_provider.server import fake_provider  # noqa: F401

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(autouse=True)
def _keep_main_module() -> Iterator[None]:
    """Streamlit's AppTest runs a page as ``__main__`` and leaves it there; a process
    that the next test starts with multiprocessing's "spawn" would then import (and
    run) that page before its target. Put the real ``__main__`` back after each test."""
    main = sys.modules["__main__"]
    yield
    sys.modules["__main__"] = main


@pytest.fixture(scope="session")
def minilm_demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real demo database (all-MiniLM-L6-v2 + the offline reader), built once per
    test session exactly as `make demo` builds it."""
    from sample_data.build import build_demo

    path = tmp_path_factory.mktemp("demo") / "demo.duckdb"
    build_demo(path, embedder="minilm", progress=lambda _m: None)
    return path
