"""Session-wide fixtures: the demo database built once with the real embedding model."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# the local fake OpenAI-compatible provider, as the ``fake_provider`` fixture
from tests.fake_provider.server import fake_provider  # noqa: F401

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session")
def minilm_demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real demo database (all-MiniLM-L6-v2 + the offline reader), built once per
    test session exactly as `make demo` builds it."""
    from sample_data.build import build_demo

    path = tmp_path_factory.mktemp("demo") / "demo.duckdb"
    build_demo(path, embedder="minilm", progress=lambda _m: None)
    return path
