"""What a memwb start imports (issue 34.6): ``memwb --help`` and every command's
``--help`` import none of the heavy libraries, whose import was most of a short
command's time (an import of a 35 KB cassette spent ~5 s importing modules on a loaded
machine). A test of what is imported, never of wall time: bench/RESULTS.md, "Start-up
and a small import", has the times."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("duckdb", "pyarrow", "numpy", "pandas", "streamlit", "openai", "httpx", "httpx2",
         "yaml", "torch", "sentence_transformers", "pydantic", "psycopg", "plotly",
         "google", "opentelemetry", "starlette", "uvicorn")

_RUN = """
import json, sys
args, heavy = json.loads(sys.argv[1]), set(json.loads(sys.argv[2]))
sys.argv = ["memwb", *args]
import memory_core.cli
if args:
    try:
        memory_core.cli.main()
    except SystemExit as e:
        assert e.code in (0, None), e.code
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in heavy)), file=sys.stderr)
"""


def _heavy_imported(*args: str, heavy: tuple[str, ...] = HEAVY) -> list[str]:
    done = subprocess.run([sys.executable, "-c", _RUN, json.dumps(args), json.dumps(heavy)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stderr.strip().splitlines()[-1]))


def test_importing_the_cli_and_its_help_import_no_heavy_library() -> None:
    assert _heavy_imported() == []
    assert _heavy_imported("--help") == []


@pytest.mark.parametrize("command", ["import", "runs", "inspect", "whatif", "ui", "proxy",
                                     "collect", "demo"])
def test_a_commands_help_imports_no_heavy_library(command: str) -> None:
    # typer (0.29) builds a pydantic adapter for each parameter of the command it runs
    assert _heavy_imported(command, "--help",
                           heavy=tuple(m for m in HEAVY if m != "pydantic")) == []


def test_cassettes_are_read_with_libyaml_when_it_is_installed() -> None:
    import yaml

    from memory_core.importers.cassette import _loader

    if not getattr(yaml, "__with_libyaml__", False):
        pytest.skip("PyYAML was built without libyaml")
    assert issubclass(_loader(), yaml.CSafeLoader)
