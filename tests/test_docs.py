"""The docs keep up with the code. README: every provenance field and every CLI command
is documented, the command examples use real options, and the Python example runs.
docs/architecture.md: every module under memory_core/ and every journal record type."""

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
from memory_core.provenance import Memctx

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
ARCHITECTURE = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")


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


# -- docs/architecture.md --------------------------------------------------------------
def memory_core_modules() -> list[str]:
    """Every module of memory_core as the table names it: ``runner.py``,
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
    """Every journal record type -> the name docs/architecture.md must show for it.

    Read from ``memory_core.journal.RECORDS`` (kind -> spec with the record's ``model``
    class) once that package exists; until then from the functions that spell journal
    keys (``runner.key_*``, ``observational.*_key``), called with ``<param>``
    placeholders so each yields the key pattern the doc's table shows."""
    # looked up as a folder of this checkout: an editable install elsewhere could
    # otherwise lend its own memory_core.journal to the import
    if (ROOT / "memory_core" / "journal" / "__init__.py").is_file():
        journal = importlib.import_module("memory_core.journal")
        return {kind: spec.model.__name__ for kind, spec in journal.RECORDS.items()}
    from memory_core import observational, runner

    out = {}
    for mod in (runner, observational):
        for name, fn in inspect.getmembers(mod, inspect.isfunction):
            if fn.__module__ == mod.__name__ and (name.startswith("key_")
                                                   or name.endswith("_key")):
                params = inspect.signature(fn).parameters
                out[name] = fn(*(f"<{p}>" for p in params))
    return out


def test_architecture_names_every_module() -> None:
    modules = memory_core_modules()
    assert "runner.py" in modules and "storage/" in modules  # the walk found the tree
    named = backticked(section("Modules", ARCHITECTURE, "docs/architecture.md"))
    missing = [m for m in modules if m not in named]
    assert not missing, (f"docs/architecture.md's Modules table has no row naming {missing}"
                         " (write the path relative to memory_core/, in backticks)")


def test_architecture_describes_every_journal_record() -> None:
    types = record_types()
    assert len(types) >= 8, types  # input, prompt, memctx, persist, step, tool, output, …
    named = backticked(ARCHITECTURE)
    missing = {kind: name for kind, name in types.items() if name not in named}
    assert not missing, f"docs/architecture.md does not describe the records {missing}"
