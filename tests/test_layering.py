"""Layering: the library imports neither the workbench nor the demo data, and the
packaging installs no generic top-level ``app``/``sample_data``."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module.split(".")[0])
    return out


def test_memory_core_imports_neither_app_nor_sample_data() -> None:
    bad = {str(p.relative_to(ROOT)): sorted(_imports(p) & {"app", "sample_data", "tests"})
           for p in (ROOT / "memory_core").rglob("*.py")}
    assert {k: v for k, v in bad.items() if v} == {}


def test_observational_memory_does_not_import_the_runner() -> None:
    tree = ast.parse((ROOT / "memory_core" / "observational.py").read_text(encoding="utf-8"))
    mods = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "memory_core.runner" not in mods


def test_every_package_folder_is_packaged_and_none_is_generic() -> None:
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    st = conf["tool"]["setuptools"]
    listed = set(st["packages"])
    dirs = st["package-dir"]
    def packages(folder: Path) -> set[tuple[str, ...]]:
        return {p.parent.relative_to(folder).parts for p in folder.rglob("*.py")
                if "__pycache__" not in p.parts and "out" not in p.parts}

    want = {".".join(("memory_core", *parts)) for parts in packages(ROOT / "memory_core")}
    for bundled, folder in dirs.items():
        want |= {".".join((bundled, *parts)) for parts in packages(ROOT / folder)}
    assert listed == want
    assert not {p.split(".")[0] for p in listed} & {"app", "sample_data", "tests"}


def test_the_cli_finds_the_bundled_folders() -> None:
    from memory_core.cli import bundle_dir

    assert (bundle_dir("app") / "streamlit_app.py").is_file()
    assert (bundle_dir("sample_data") / "build.py").is_file()


def test_the_storage_layer_starts_no_background_work() -> None:
    """Storage is a plain driver, durable when a call returns (docs/decisions/001): no
    thread, timer or executor anywhere under memory_core/storage."""
    started: dict[str, set[str]] = {}
    background = {"Thread", "Timer", "ThreadPoolExecutor", "ProcessPoolExecutor"}
    for path in (ROOT / "memory_core" / "storage").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in background and \
                    isinstance(node.value, ast.Name) and node.value.id in {
                        "threading", "futures", "concurrent"}:
                started.setdefault(str(path.relative_to(ROOT)), set()).add(node.attr)
            elif isinstance(node, ast.ImportFrom) and node.module in {
                    "threading", "concurrent.futures", "multiprocessing"}:
                names = {a.name for a in node.names} & (background | {"Process", "Pool"})
                if names:
                    started.setdefault(str(path.relative_to(ROOT)), set()).update(names)
    assert started == {}
