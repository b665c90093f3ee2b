"""The docs keep up with the code. README: every provenance field and every CLI command
is documented, the command examples use real options, and the Python example runs.
docs/modules.md names every module under memory_core/, docs/contracts.md every journal record
type, and docs/architecture.md fits one screen with a "to change X, open Y" table."""

from __future__ import annotations

import contextlib
import importlib
import inspect
import io
import re
import shlex
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from memory_core.cli import app
from memory_core.provenance.record import Memctx

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
ARCHITECTURE = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
MODULES = (ROOT / "docs" / "modules.md").read_text(encoding="utf-8")
CONTRACTS = (ROOT / "docs" / "contracts.md").read_text(encoding="utf-8")


def section(title: str, text: str = README, doc: str = "README") -> str:
    m = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert m, f"{doc} has no '## {title}' section"
    return m.group(1)


def backticked(text: str) -> set[str]:
    return set(re.findall(r"`([^`\n]+)`", text))


def code_blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, re.S)


def commands() -> dict[str, object]:
    return dict(typer.main.get_command(app).commands)  # type: ignore[attr-defined]


def test_every_memctx_field_has_a_row() -> None:
    rows = set(re.findall(r"^\| `(\w+)` \|", section("The provenance record"), re.M))
    missing = sorted(set(Memctx.model_fields) - rows)
    assert not missing, f"README 'The provenance record' lacks rows for {missing}"
    stale = sorted(rows - set(Memctx.model_fields))
    assert not stale, f"README documents fields Memctx no longer has: {stale}"


def test_every_cli_command_has_an_example() -> None:
    cli = section("Command line")
    missing = [name for name in commands() if f"memwb {name} " not in cli]
    assert not missing, f"README 'Command line' lacks examples for {missing}"


def test_readme_command_examples_use_real_options() -> None:
    runner = CliRunner()
    lines = [ln.split("  #")[0].strip() for block in code_blocks(README, "bash")
             for ln in block.splitlines() if ln.strip().startswith("memwb ")]
    assert len(lines) >= len(commands())
    for line in lines:
        argv = shlex.split(line)[1:]
        assert argv[0] in commands(), line
        help_text = runner.invoke(app, [argv[0], "--help"]).stdout
        for opt in (a for a in argv[1:] if a.startswith("--")):
            assert opt in help_text, f"{line!r}: {argv[0]} has no option {opt}"


def test_readme_python_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    [code] = code_blocks(section("Using memory_core"), "python")
    monkeypatch.chdir(tmp_path)  # the example writes app.duckdb in the working directory
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})  # noqa: S102
    # the second run recalled the first thread's message and answered from it
    assert "From our conversation: My blender order A-1042" in out.getvalue()
    assert "('anna-1', 0, " in out.getvalue()


# -- docs/modules.md, docs/contracts.md, docs/architecture.md -------------------------
def memory_core_modules() -> list[str]:
    """Every module of memory_core as the table names it: ``runs/runner.py``,
    ``storage/duckdb.py``; a package as ``storage/``; the top package as ``__init__.py``."""
    pkg = ROOT / "memory_core"
    out = []
    for path in sorted(pkg.rglob("*.py")):
        rel = path.relative_to(pkg)
        if "__pycache__" in rel.parts:
            continue
        if rel.name == "__init__.py" and rel.parent != Path("."):
            out.append(f"{rel.parent.as_posix()}/")
        else:
            out.append(rel.as_posix())
    return out


def record_types() -> dict[str, str]:
    """Every journal record type -> the name docs/contracts.md must show for it.

    Read from ``memory_core.journal.RECORDS`` (kind -> spec with the record's ``model``
    class) once that package exists; until then from the functions that spell journal
    keys (``runner.key_*``, ``observational.*_key``), called with ``<param>``
    placeholders so each yields the key pattern the doc's table shows."""
    # looked up as a folder of this checkout: an editable install elsewhere could
    # otherwise lend its own memory_core.journal to the import
    if (ROOT / "memory_core" / "journal" / "__init__.py").is_file():
        journal = importlib.import_module("memory_core.journal")
        return {kind: spec.model.__name__ for kind, spec in journal.RECORDS.items()}
    from memory_core.composition import observational
    from memory_core.runs import runner

    out = {}
    for mod in (runner, observational):
        for name, fn in inspect.getmembers(mod, inspect.isfunction):
            if fn.__module__ == mod.__name__ and (name.startswith("key_")
                                                   or name.endswith("_key")):
                params = inspect.signature(fn).parameters
                out[name] = fn(*(f"<{p}>" for p in params))
    return out


def test_modules_names_every_module() -> None:
    modules = memory_core_modules()
    assert "runs/runner.py" in modules and "storage/" in modules  # the walk found the tree
    named = backticked(MODULES)
    missing = [m for m in modules if m not in named]
    assert not missing, (f"docs/modules.md has no row naming {missing}"
                         " (write the path relative to memory_core/, in backticks)")
    stale = sorted(n for n in named if n.endswith((".py", "/")) and "/" in n.rstrip("/")
                   and n not in modules and not (ROOT / "memory_core" / n).exists())
    assert not stale, f"docs/modules.md names modules that do not exist: {stale}"


def test_the_architecture_fits_one_screen_and_names_a_package_sentence_each() -> None:
    lines = ARCHITECTURE.splitlines()
    assert len(lines) <= 70, f"docs/architecture.md has {len(lines)} lines; keep it one screen"
    block = ARCHITECTURE.split("```layers\n", 1)[1].split("```", 1)[0]
    packages = {p for line in block.splitlines() for p in line.split(":", 1)[0].split()}
    described = set(re.findall(r"\*\*(\w+)\*\*", section("Packages", ARCHITECTURE)))
    assert packages - {"foundation"} <= described | {"app"} and "foundation" in described, (
        f"packages without their sentence: {sorted(packages - described)}")


WANTED_CHANGES = ("add an import format", "add a recall mode",
                  "add a field to the provenance record", "add a workbench page",
                  "add a storage adapter")


def test_to_change_x_open_y_names_at_most_three_files_that_exist() -> None:
    table = section("To change X, open Y", ARCHITECTURE, "docs/architecture.md")
    rows = dict(re.findall(r"^\| ([^|`]+?) \| (.+?) \|$", table, re.M))
    rows.pop("to change", None)
    assert set(WANTED_CHANGES) <= set(rows), sorted(set(WANTED_CHANGES) - set(rows))
    for change, cell in rows.items():
        paths = re.findall(r"`([^`]+)`", cell)
        assert 1 <= len(paths) <= 3, f"'{change}' names {len(paths)} files"
        missing = [p for p in paths if not (ROOT / p).exists()]
        assert not missing, f"'{change}' names files that do not exist: {missing}"


def test_contracts_describe_every_journal_record() -> None:
    types = record_types()
    assert len(types) >= 8, types  # input, prompt, memctx, persist, step, tool, output, …
    named = backticked(CONTRACTS)
    missing = {kind: name for kind, name in types.items() if name not in named}
    assert not missing, f"docs/contracts.md does not describe the records {missing}"
