"""Session-wide fixtures: the demo database built once with the real embedding model."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# the local fake OpenAI-compatible provider, as the ``fake_provider`` fixture
from tests.fake_provider.server import fake_provider  # noqa: F401

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


_FULL_ONLY_ADAPTERS = {"duckdb-memory", "duckdb-file", "postgres"}
# whole modules left to the full suite (``slow``): each takes seconds in all on these
# machines (make test-fast --durations): a demo built against a fake model server, the
# hostile corpora, the seal's tamper matrix, processes contending for one file
_SLOW_MODULES = {"tests/test_cli_models.py", "tests/hostile/test_import_corpus.py",
                 "tests/hostile/test_servers_corpus.py", "tests/capture/test_input_limits.py",
                 "tests/test_seal_matrix.py", "tests/test_duckdb_processes.py"}


def pytest_configure(config: pytest.Config) -> None:
    """Every new ``AppTest`` has Streamlit scan the metadata of every installed
    distribution for v2 components (``scan_component_manifests``: ~100 packages,
    0.5 s a page test on these machines, half of the quick tier's time). What is
    installed does not change while the tests run: scan once a process."""
    from streamlit.components.v2 import manifest_scanner

    manifest_scanner.scan_component_manifests = functools.cache(
        manifest_scanner.scan_component_manifests)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """With ``--dist loadgroup`` (``make test``): the Chromium walks (tests/browser) are one
    unit of work, run one at a time by one worker while the other runs the rest; every
    other test is a unit of its own. (xdist's own ``xdist_group`` marks do not group
    under pytest 9: the node-id suffix they rely on is lost.)"""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class _WalksOnOneWorker(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return "browser" if nodeid.startswith("tests/browser/") else nodeid

    return _WalksOnOneWorker(config, log)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Markers the quick tier (``make test-fast``) leaves out, set from where a test
    lives and what it runs on rather than by hand: ``browser`` (tests/browser),
    ``model`` (the real MiniLM demo database), ``postgres`` (a PostgreSQL parameter),
    ``full`` — the conformance suite on DuckDB and PostgreSQL (the quick tier runs
    it on in-memory and SQLite) — and ``slow`` for ``_SLOW_MODULES``."""
    for item in items:
        path = Path(str(item.path))
        if item.nodeid.partition("::")[0] in _SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
        if "browser" in path.parts:
            item.add_marker(pytest.mark.browser)
        if "minilm_demo_db" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.model)
        named = item.name.partition("[")[2]  # the parameters' ids
        if "postgres" in item.name:
            item.add_marker(pytest.mark.postgres)
        if "conformance" in path.parts and any(a in named for a in _FULL_ONLY_ADAPTERS):
            item.add_marker(pytest.mark.full)


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
