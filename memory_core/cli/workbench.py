"""memwb demo and memwb ui: build the demo database, start the workbench on it (the
workbench and the demo stories ship inside the package)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

# typer (0.29) vendors click; its exception classes live here
from memory_core.cli.common import (
    DEFAULT_DB,
    DEMO_MODELS,
    DEMO_RUNS,
    EMBEDDERS,
    DbOpt,
    app,
    fail,
    local_path,
    resolve_db,
    say,
    terminal_safe,
)
from memory_core.errors import MemoryCoreError


@app.command()
def demo(db: DbOpt = None,
         if_absent: Annotated[bool, typer.Option(
             "--if-absent", help="Do nothing when the database already exists.")] = False,
         embedder: Annotated[str, typer.Option(
             help="minilm (the real model) or hashing (no model needed).")] = "minilm",
         model: Annotated[str, typer.Option(
             "--model", help="What answers the stories' questions: reader (the offline "
                             "reader) or openai (the OpenAI-compatible server set by "
                             "MEMWB_OPENAI_BASE_URL and MEMWB_OPENAI_MODEL).")] = "reader",
         ) -> None:
    """Build the demo database by running the real Runner over the demo scenarios.

    Example: memwb demo --db sample_data/out/demo.duckdb --if-absent
    Example: MEMWB_OPENAI_MODEL=llama3.1 memwb demo --model openai --db /tmp/real.duckdb
    """
    url = resolve_db(db)
    from memory_core.storage.url import file_of

    target = file_of(url)
    if target is None or target[0] != "duckdb":
        raise fail(f"the demo is a DuckDB file; give a path or duckdb:///path, not {url!r}")
    if embedder not in EMBEDDERS:
        raise fail(f"unknown embedder {embedder!r}; choose {', '.join(EMBEDDERS)}")
    if model not in DEMO_MODELS:
        raise fail(f"unknown demo model {model!r}; choose {', '.join(DEMO_MODELS)}")
    path = target[1]
    if Path(path).exists() or Path(path).is_symlink():
        refusal = demo_refusal(path, on_migrated=lambda v: say(
            f"{path}: made by older code, its schema brought up to version {v}"))
        if refusal is not None:
            raise fail(f"refusing to overwrite {path!r}: {refusal}")
        if if_absent:
            say(f"demo database already at {path}")
            return
    code = _run_bundled("sample_data", ["-m", "sample_data.build", "--db", str(path),
                                        "--embedder", embedder, "--model", model])
    if code != 0:
        raise typer.Exit(1)
    say(f"demo database written to {path}")


def bundle_dir(name: str) -> Path:
    """Where the workbench (``app``) or the demo stories (``sample_data``) live, found
    without importing them: in an install they are ``memwb_bundle.<name>`` (never a
    top-level ``app``/``sample_data`` in site-packages), in a checkout the folder beside
    ``memory_core``."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(f"memwb_bundle.{name}")
    except ModuleNotFoundError:
        spec = None
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    beside = Path(__file__).resolve().parents[2] / name
    if (beside / "__init__.py").is_file():
        return beside
    raise fail(f"cannot find the {name!r} folder of this installation (reinstall memwb)")


def _run_bundled(name: str, args: list[str]) -> int:
    """Run ``python <args>`` with the bundled folder ``name`` importable, passing its
    output through line by line (progress on stderr stays live)."""
    root = str(bundle_dir(name).parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [root, *filter(None, [os.environ.get("PYTHONPATH")])])}
    proc = subprocess.Popen([sys.executable, *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, encoding="utf-8",
                            errors="replace")
    assert proc.stdout is not None
    for line in proc.stdout:
        line = line.rstrip("\n")
        if line.startswith("error: "):
            typer.echo(f"error: {terminal_safe(line[len('error: '):], one_line=True)}",
                       err=True)
        else:
            say(line, err=True)
    return proc.wait()


def demo_refusal(path: str, *,
                 on_migrated: Callable[[int], None] | None = None) -> str | None:
    """Why the file at ``path`` must not be replaced by a demo build (None when it is a
    demo database: ours, holding the demo's runs). A file of ours made by older code is
    given the migrations it lacks first (the workbench opens the demo read-only, which
    refuses it otherwise); ``on_migrated`` is told the version it is brought to."""
    from memory_core.errors import SchemaOutdatedError
    from memory_core.storage.schema import MIGRATIONS
    from memory_core.storage.url import open_ours

    try:
        try:
            storage = open_ours(path, read_only=True)
        except SchemaOutdatedError:
            open_ours(path, read_only=False).close()  # applies the migrations it lacks
            if on_migrated is not None:
                on_migrated(max(m.version for m in MIGRATIONS))
            storage = open_ours(path, read_only=True)
    except MemoryCoreError as e:
        return f"it is not a demo database ({e})"
    try:
        missing = [r for r in DEMO_RUNS if storage.runs.get_run(r) is None]
    except MemoryCoreError as e:
        return f"it cannot be read as a demo database ({e})"
    finally:
        storage.close()
    if missing:
        return f"it is not a demo database (it lacks the demo runs {', '.join(missing)})"
    return None


DbsOpt = Annotated[list[str] | None, typer.Option(
    "--db", help="A database to serve (repeatable): a DuckDB/SQLite path, a storage URL, "
                 "or a directory whose databases are all served. Default: $MEMWB_DB or "
                 "the demo database.")]


@app.command()
def ui(db: DbsOpt = None,
       port: Annotated[int, typer.Option(help="Port on 127.0.0.1.", min=1, max=65535)] = 8501,
       read_only: Annotated[bool, typer.Option(
           "--read-only", help="Serve without counterfactual writes.")] = False) -> None:
    """Start the Streamlit workbench on the databases given here (and no others).

    Example: memwb ui --db sample_data/out/demo.duckdb --db other.duckdb --port 8501
    """
    from memory_core.storage.url import catalog, databases_in, resolve_existing

    urls = [resolve_db(d) for d in db] if db else [resolve_db(None)]
    for url in urls:
        path = local_path(url)
        if path is not None and Path(path).is_dir():
            if not databases_in(path):
                raise fail(f"directory {path!r} holds no DuckDB or SQLite database")
            continue
        try:
            resolve_existing(url)
        except MemoryCoreError as e:
            hint = " (build the demo with `memwb demo`)" if url == DEFAULT_DB else ""
            raise fail(f"database {url!r}: {e}{hint}") from None
    served = catalog(urls)
    script = bundle_dir("app") / "streamlit_app.py"
    cmd = [sys.executable, "-m", "streamlit", "run", str(script), "--server.address",
           "127.0.0.1", "--server.port", str(port), "--browser.gatherUsageStats", "false",
           "--client.toolbarMode", "viewer", "--",
           *[arg for url in urls for arg in ("--db", url)],
           *(["--read-only"] if read_only else [])]
    say(f"serving {', '.join(served)} on http://127.0.0.1:{port}"
        + (" (read-only)" if read_only else ""), err=True)
    # the app serves exactly the --db given here: no $MEMWB_DB left to disagree
    env = {k: v for k, v in os.environ.items() if k != "MEMWB_DB"}
    raise typer.Exit(subprocess.call(cmd, env=env, preexec_fn=_dies_with_parent()))


def _dies_with_parent() -> Callable[[], None] | None:
    """What the Streamlit server runs before it starts, on Linux: ask the kernel to
    send it SIGTERM when ``memwb ui`` ends. Stopped with SIGTERM (a service manager, a
    script's kill), ``memwb ui`` left the server running, still serving on the port."""
    if not sys.platform.startswith("linux"):
        return None

    def ask() -> None:
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG

    return ask
