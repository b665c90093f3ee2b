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


def layers() -> list[set[str]]:
    """docs/architecture.md's layer picture, top row first: the packages of each row."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = text.split("```layers\n", 1)[1].split("```", 1)[0]
    return [set(line.split(":", 1)[0].split()) for line in block.splitlines() if line]


def package_of(path: Path) -> str:
    """The package a file of memory_core or app belongs to: ``foundation`` for the
    modules at memory_core's top, ``cli`` for cli.py, ``api`` for its __init__."""
    rel = path.relative_to(ROOT)
    if rel.parts[0] == "app":
        return "app"
    parts = rel.parts[1:]
    if len(parts) > 1:
        return parts[0]
    return {"__init__.py": "api", "cli.py": "cli"}.get(parts[0], "foundation")


def package_imports() -> dict[str, dict[str, set[str]]]:
    """package -> imported package -> the files importing it (every import, lazy ones
    in functions included)."""
    core = ROOT / "memory_core"
    out: dict[str, dict[str, set[str]]] = {}
    for path in [*core.rglob("*.py"), *(ROOT / "app").rglob("*.py")]:
        src = package_of(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for name in names:
                parts = name.split(".")
                if parts[0] != "memory_core" or len(parts) < 2:
                    continue
                if (core / parts[1]).is_dir():
                    dst = parts[1]
                elif (core / f"{parts[1]}.py").is_file():
                    dst = package_of(core / f"{parts[1]}.py")
                else:
                    continue
                if dst != src:
                    out.setdefault(src, {}).setdefault(dst, set()).add(
                        str(path.relative_to(ROOT)))
    return out


def test_the_package_graph_follows_the_layer_picture() -> None:
    """Every package is in docs/architecture.md's picture, once, and imports only
    packages on lower rows: no circles between packages, and the map is the code."""
    rows = layers()
    row_of = {p: i for i, row in enumerate(rows) for p in row}
    assert sum(len(r) for r in rows) == len(row_of), "a package is on two rows"
    folders = {p.name for p in (ROOT / "memory_core").iterdir()
               if (p / "__init__.py").is_file()}
    assert folders | {"foundation", "cli", "app"} == set(row_of), \
        "docs/architecture.md's layer picture and memory_core's packages differ"
    graph = package_imports()
    assert graph["composition"] and graph["runs"]  # the walk found the imports
    upward = {f"{a} -> {b}": sorted(files) for a, deps in graph.items() if a != "api"
              for b, files in deps.items() if row_of[b] <= row_of[a]}
    assert upward == {}


def test_no_module_imports_itself_in_a_circle() -> None:
    """Within packages too: no two modules import each other, however lazily."""
    core = ROOT / "memory_core"

    def name(p: Path) -> str:
        parts = p.relative_to(ROOT).with_suffix("").parts
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)

    mods = {name(p): p for p in core.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for mod, path in mods.items():
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in mods:
                deps.add(node.module)
                deps |= {f"{node.module}.{a.name}" for a in node.names} & mods.keys()
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names} & mods.keys()
        graph[mod] = deps - {mod}
    circles = []
    for start in graph:  # a path from a module back to itself
        seen, todo = set(), list(graph[start])
        while todo:
            cur = todo.pop()
            if cur == start:
                circles.append(start)
                break
            if cur not in seen:
                seen.add(cur)
                todo.extend(graph[cur])
    assert circles == []


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
