"""The README keeps up with the code: every provenance field and every CLI command is
documented, the command examples use real options, and the Python example runs."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from memory_core.cli import app
from memory_core.provenance import Memctx

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")


def section(title: str) -> str:
    m = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", README, re.M | re.S)
    assert m, f"README has no '## {title}' section"
    return m.group(1)


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
