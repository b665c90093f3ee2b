"""memwb: the command-line face of memory_core. Each command opens the storage, calls
one library function and prints its result; errors become one `error:` line and exit 1."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

# typer (0.29) vendors click; its exception classes live here
from typer._click.exceptions import ClickException, NoArgsIsHelpError
from typer.core import TyperGroup

from memory_core.errors import MemoryCoreError
from memory_core.storage.base import Storage

DEFAULT_DB = "sample_data/out/demo.duckdb"
EMBEDDERS = {"hashing": "hashing-64", "minilm": "all-MiniLM-L6-v2"}
DEMO_MODELS = ("reader", "openai")
MAX_REPEATS = 20
# the runs every demo database holds: what `demo` checks before replacing a file
DEMO_RUNS = ("support-3-forgot", "support-3-fixed")

# C0 controls except newline and tab, DEL, C1 controls (8-bit CSI and friends) and the
# bidirectional overrides that reorder what a terminal shows
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def terminal_safe(text: str, *, one_line: bool = False) -> str:
    """Stored text made harmless for a terminal: every control character (ESC, CSI,
    BEL, carriage return, …) shown as its escape (``\\x1b``); with ``one_line`` also
    newlines and tabs, so an error stays one line."""
    pattern = _CONTROL if not one_line else re.compile(f"{_CONTROL.pattern}|[\n\t]")

    def esc(m: re.Match[str]) -> str:
        c = ord(m.group())
        return f"\\x{c:02x}" if c <= 0xFF else f"\\u{c:04x}"

    return pattern.sub(esc, text)


def say(text: str, *, err: bool = False) -> None:
    """Every line the CLI prints goes through here (control characters escaped)."""
    typer.echo(terminal_safe(text), err=err)


class _OneLineErrors(TyperGroup):
    """Usage errors (unknown option, bad or out-of-range value) become one ``error:``
    line and exit 1, like every other error, instead of click's usage block."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             windows_expand_args: bool = True, **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode,
                                windows_expand_args, **extra)
        try:
            rv = super().main(args, prog_name, complete_var, False, windows_expand_args,
                              **extra)
        except NoArgsIsHelpError as e:
            typer.echo(e.ctx.get_help() if e.ctx else str(e))
            sys.exit(0)
        except ClickException as e:
            typer.echo(f"error: {terminal_safe(e.format_message(), one_line=True)}",
                       err=True)
            sys.exit(1)
        except typer.Abort:
            typer.echo("error: aborted", err=True)
            sys.exit(1)
        sys.exit(rv if isinstance(rv, int) else 0)


app = typer.Typer(cls=_OneLineErrors, add_completion=False, no_args_is_help=True,
                  rich_markup_mode=None, pretty_exceptions_enable=False,
                  help="Memory Workbench: inspect, replay and explain what an agent's "
                       "memory gave the model.")

DbOpt = Annotated[str | None, typer.Option(
    "--db", help="Storage URL or DuckDB path (duckdb:///p, sqlite:///p, postgresql://…). "
                 "Default: $MEMWB_DB or the demo database.")]
T = TypeVar("T")


def default_db() -> str:
    return os.environ.get("MEMWB_DB") or DEFAULT_DB


def fail(message: str) -> typer.Exit:
    """Print the one error line; the caller raises what this returns."""
    typer.echo(f"error: {terminal_safe(message, one_line=True)}", err=True)
    return typer.Exit(code=1)


def resolve_db(db: str | None) -> str:
    """The database a command names: ``--db`` when given (an empty one is an error,
    never a fall-back to $MEMWB_DB), else $MEMWB_DB, else the demo database; ``~``
    expanded."""
    from memory_core.storage.url import expand_url

    if db is not None and not db.strip():
        raise fail("--db is empty; give a database path or storage URL")
    try:
        return expand_url(db if db is not None else default_db())
    except MemoryCoreError as e:  # ~nosuchuser/…
        raise fail(str(e)) from None


def local_path(url: str) -> str | None:
    """The database file a URL names, None for in-process databases and servers."""
    from memory_core.storage.url import file_of

    target = file_of(url)
    return target[1] if target else None


@contextmanager
def opened(db: str | None, *, read_only: bool = True,
           must_exist: bool = True) -> Iterator[Storage]:
    """The storage a command works on; DuckDB is opened read-only unless the command
    writes, so the workbench and an agent can keep using the file."""
    from memory_core.errors import NotFoundError
    from memory_core.storage.url import open_ours, open_storage

    url = resolve_db(db)
    path = local_path(url)
    try:
        # an existing database must already be ours: nothing is created or migrated
        # in a foreign file or schema; only a missing file may be created, on request
        if must_exist or path is None or Path(path).exists():
            storage = open_ours(url, read_only=read_only)
        else:
            storage = open_storage(url)
    except NotFoundError:
        hint = " (build it with `memwb demo`)" if url == DEFAULT_DB else ""
        raise fail(f"database {url!r} does not exist{hint}") from None
    except MemoryCoreError as e:
        raise fail(str(e)) from None
    try:
        yield storage
    finally:
        storage.close()


def guarded(fn: Callable[[], T]) -> T:
    try:
        return fn()
    except MemoryCoreError as e:
        raise fail(str(e)) from None
    except OSError as e:
        raise fail(f"{e.strerror or e}: {e.filename}" if e.filename else str(e)) from None


def emit_json(value: Any) -> None:
    # json escapes C0 controls itself; C1 and bidi ones get JSON escapes here
    text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    typer.echo(_CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", text))


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    return terminal_safe(" ".join(text.split()))[:60]


def table(rows: list[dict[str, Any]], columns: list[str]) -> None:
    if not rows:
        say("(none)")
        return
    cells = [[_cell(r.get(c)) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    say("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip())
    for row in cells:
        say("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())


def parse_ref(text: str) -> tuple[str, int]:
    """``THREAD:SEQ`` → (thread, seq); the thread id may itself contain colons."""
    head, _, tail = text.rpartition(":")
    if not head or not tail.isdigit():
        raise fail(f"bad message ref {text!r}; expected THREAD:SEQ, e.g. support-1:12")
    return head, int(tail)


def _embedder(name: str, *, allow_none: bool) -> Any:
    from memory_core.runs.registry import embedder_from_name

    choices = [*EMBEDDERS, *(["none"] if allow_none else [])]
    if name not in choices:
        raise fail(f"unknown embedder {name!r}; choose {', '.join(choices)}")
    return None if name == "none" else guarded(lambda: embedder_from_name(EMBEDDERS[name]))


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
    beside = Path(__file__).resolve().parent.parent / name
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
    raise typer.Exit(subprocess.call(cmd, env=env))


@app.command("import")
def import_(files: Annotated[list[Path], typer.Argument(
                help="Model traffic (OpenAI and compatible servers, Anthropic Messages, "
                     "Gemini, Cohere, Ollama, Bedrock) as JSONL/JSON logs, VCR cassettes "
                     "or HAR files; ShareGPT, fine-tuning and batch files; LangSmith runs; "
                     "or spans: OTLP "
                     "traces/logs (JSON, JSON lines, protobuf), SDK span objects, Jaeger or "
                     "Zipkin JSON. gzip/bzip2/xz read through. Several OTLP "
                     "exports (say traces.json logs.json) are imported as one, so a "
                     "call's span and its log records join; other files one by one.")],
            db: DbOpt = None,
            format: Annotated[str | None, typer.Option(
                help="openai or otel; detected when omitted.")] = None,
            resource: Annotated[str | None, typer.Option(
                help="Resource id for every imported thread.")] = None,
            embedder: Annotated[str, typer.Option(
                help="hashing, minilm or none; must match the vectors already in the "
                     "database (the demo uses minilm).")] = "hashing") -> None:
    """Import conversations recorded elsewhere as threads, messages and runs.

    Example: memwb import traces.jsonl --db mine.duckdb --format openai
    """
    from functools import partial

    from memory_core.importers import file_format, import_file, import_otel_files

    files = [f.expanduser() for f in files]
    for f in files:
        if not f.is_file():
            raise fail(f"import file {str(f)!r} does not exist")
    embed = _embedder(embedder, allow_none=True)
    url = resolve_db(db)
    path = local_path(url)
    created = path is not None and not Path(path).exists()

    progress = _ImportProgress()

    def detected(f: Path) -> str:
        return guarded(lambda: file_format(f))

    together = len(files) > 1 and format != "openai" and all(
        detected(f) == "otel" for f in files)
    done: list[str] = []
    try:
        with opened(url, read_only=False, must_exist=False) as storage:
            if together:
                label = " + ".join(str(f) for f in files)
                _say_imported(label, url, guarded(lambda: import_otel_files(
                    storage, files, embed=embed, resource_id=resource, stages=progress)))
                done.append(label)
            for f in [] if together else files:
                _say_imported(str(f), url, guarded(partial(
                    import_file, storage, f, format=format, embed=embed,  # type: ignore[arg-type]
                    resource_id=resource, stages=progress)))
                done.append(str(f))
    except typer.Exit:
        if done:
            say(f"stopped after importing {', '.join(done)}; the files after it were not "
                "imported", err=True)
        elif created and path is not None:
            # a rejected file leaves no trace, not even an empty database
            for leftover in (Path(path), Path(path + ".wal")):
                leftover.unlink(missing_ok=True)
        raise


class _ImportProgress:
    """An import's stages on stderr: a line when a stage starts and ends, and at most
    one every ``every`` seconds between (a million-message log reads for minutes)."""

    WHAT = {"read": ("read", "records"), "planned": ("planned", "requests"),
            "embedded": ("embedded", "messages"), "stored": ("stored", "threads"),
            "recorded": ("recorded", "runs")}

    def __init__(self, every: float = 2.0) -> None:
        self.every, self.stage, self.last = every, "", 0.0

    def __call__(self, stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        if stage == self.stage and done != total and now - self.last < self.every:
            return
        self.stage, self.last = stage, now
        verb, unit = self.WHAT.get(stage, (stage, "items"))
        of = f" of {total:,}" if total and done != total else ""
        say(f"{verb} {done:,}{of} {unit}", err=True)


def _say_imported(label: str, url: str, report: Any) -> None:
    if report.already_imported:
        say(f"{label} was already imported into {url}; nothing written")
        return
    if report.resumed:
        say(f"an earlier import of {label} stopped part way; completing it")
    extended = (f" (continuing {len(report.threads_extended)} earlier thread(s))"
                if report.threads_extended else "")
    say(f"imported {label} ({', '.join(report.apis) or report.format}) into {url}: "
        f"{len(report.threads_created)} threads{extended}, {report.messages_stored} messages, "
        f"{report.embeddings_stored} embeddings, {len(report.runs_created)} runs")
    for s in report.skipped:  # what was not imported, and what was kept differently
        say(f"  {s.where}: {s.reason}")


@app.command()
def threads(db: DbOpt = None,
            resource: Annotated[str | None, typer.Option(help="Only this resource.")] = None
            ) -> None:
    """List threads (newest first) with their message and run counts.

    Example: memwb threads --resource cust-anna
    """
    from memory_core.analysis import views

    with opened(db) as s:
        if resource is not None:
            known = guarded(lambda: views.list_resources(s))
            if resource not in known:
                raise fail(f"resource {resource!r} does not exist; resources are "
                           f"{', '.join(known) or '(none)'}")
        rows = guarded(lambda: views.thread_summaries(s, resource))
    table([r.model_dump() for r in rows],
          ["thread_id", "resource_id", "title", "message_count", "run_count",
           "last_activity"])


@app.command()
def runs(db: DbOpt = None,
         thread: Annotated[str | None, typer.Option(help="Only runs of this thread.")] = None
         ) -> None:
    """List runs (oldest first) with their agent, thread and status.

    Example: memwb runs --thread support-3
    """
    from memory_core.analysis import views

    with opened(db) as s:
        if thread is not None:
            guarded(lambda: s.memory.require_thread(thread))
        rows = guarded(lambda: views.list_runs(s, thread_id=thread))
    table([r._asdict() for r in rows],
          ["run_id", "agent", "thread_id", "status", "started_at"])


@app.command()
def inspect(run: Annotated[str, typer.Argument(help="Run id.")], db: DbOpt = None,
            as_json: Annotated[bool, typer.Option(
                "--json", help="Print the provenance record (:memctx) as JSON.")] = False
            ) -> None:
    """Show what a run's prompt held, lane by lane (or its provenance record as JSON).

    Example: memwb inspect support-3-forgot --json
    """
    from memory_core.analysis import views

    with opened(db) as s:
        if as_json:
            from memory_core.journal import RunReader

            guarded(lambda: s.runs.require_run(run))
            reader = RunReader(s.runs, run)
            memctx = guarded(reader.memctx)  # upgraded to the current record version
            if memctx is None:
                raise fail(f"run {run!r} has no provenance record ({reader.keys.memctx})")
            emit_json(memctx.model_dump(mode="json"))
            return
        v = guarded(lambda: views.run_view(s, run))
    rows = [it.model_dump() for lane in v.lanes for it in lane.items]
    table(rows, ["lane", "thread_id", "seq", "role", "score", "rank", "origin", "reason",
                 "tokens", "text"])
    say("")
    say("tokens: " + ", ".join(f"{lv.lane} {lv.tokens}" for lv in v.lanes
                                      if lv.lane != "dropped") + f" (total {v.total_tokens})")
    for tc in v.tool_calls:
        outcome = tc.error if tc.error is not None else tc.result
        say(f"tool: {tc.name}({tc.args}) → {outcome} [{tc.status}]")
    for note in v.notes:
        say(f"note: {note}")
    say(f"answer: {v.answer}")


@app.command()
def replay(run: Annotated[str, typer.Argument(help="Run id.")], db: DbOpt = None) -> None:
    """Re-execute a run from its journal alone (the model is never called) and check
    that prompt, step inputs and output are byte-identical.

    Example: memwb replay support-3-forgot
    """
    from memory_core.runs.replay import replay as do_replay

    with opened(db) as s:
        r = guarded(lambda: do_replay(s, run))
    if r.integrity == "redacted":
        say(f"replay of {run}: redacted by the erasure of {', '.join(r.redacted_by)}; "
                   "its records were rewritten, so byte-identity is not checked")
        return
    sealed = "" if r.integrity == "ok" else " (unsealed: recorded before sealing existed)"
    say(f"replay of {run}: identical ({r.steps} steps, {r.verified_steps} verified; "
               f"{r.tool_calls} tool calls; {r.messages_checked} stored messages checked)"
               f"{sealed}")
    for note in r.notes:
        say(f"note: {note}")


@app.command()
def verify(run: Annotated[str | None, typer.Argument(help="Run id (or --all).")] = None,
           db: DbOpt = None,
           all_runs: Annotated[bool, typer.Option(
               "--all", help="Verify every run in the database.")] = False) -> None:
    """Check runs against their seals: report the first record that no longer matches.
    Exit code 1 when any run was tampered with.

    Example: memwb verify --all
    """
    from memory_core.journal.seal import verify_run

    if (run is None) == (not all_runs):
        raise fail("give one run id or --all")
    with opened(db) as s:
        ids = ([r.run_id for r in guarded(lambda: s.runs.list_runs())] if all_runs
               else [guarded(lambda: s.runs.require_run(run or "")).run_id])
        reports = [verify_run(s, rid) for rid in ids]
    bad = 0
    for rep in reports:
        if rep.status == "tampered":
            bad += 1
            say(f"{rep.run_id}: TAMPERED at {rep.first_mismatch or 'a record'}: "
                       f"{rep.detail}")
        else:
            extra = f" — {rep.detail}" if rep.detail and rep.status != "ok" else ""
            chain = f" chain {rep.chain[:16]}" if rep.chain else ""
            say(f"{rep.run_id}: {rep.status}{chain}{extra}")
    say(f"{len(reports)} runs checked, {bad} tampered")
    if bad:
        raise typer.Exit(1)


ModelOpt = Annotated[str | None, typer.Option(
    "--model", help="The model to re-ask: 'reader' (the offline reader) or a model name "
                    "served by an OpenAI-compatible server. Default: the model the run "
                    "recorded.")]
BaseUrlOpt = Annotated[str | None, typer.Option(
    "--base-url", help="The OpenAI-compatible server's base URL, e.g. "
                       "http://127.0.0.1:11434/v1. Default: $MEMWB_OPENAI_BASE_URL. The "
                       "server a run recorded is asked only when named here or there.")]


def _chosen_model(storage: Storage, run: str, model: str | None,
                  base_url: str | None) -> Any:
    """The model --model/--base-url choose for re-asking ``run`` (None: the library
    rebuilds the recorded one)."""
    if model is None and base_url is None:
        return None
    from memory_core.journal import load_run
    from memory_core.runs.registry import model_for_run

    data = guarded(lambda: load_run(storage, run))
    embed_name = data.memctx.settings.embedder if data.memctx else None
    return guarded(lambda: model_for_run(data.model_info or None, override=model,
                                         base_url=base_url, embed_name=embed_name))


@app.command()
def counterfactual(run: Annotated[str, typer.Argument(help="Run id.")], db: DbOpt = None,
                   subtract: Annotated[list[str] | None, typer.Option(
                       help="'all' or THREAD:SEQ of a recalled message (repeatable).")] = None,
                   lane: Annotated[list[str] | None, typer.Option(
                       help="A whole lane to remove: recalled, recent, observations, "
                            "working_memory (repeatable).")] = None,
                   put_back: Annotated[list[str] | None, typer.Option(
                       help="THREAD:SEQ of a dropped message or near miss (repeatable).")
                   ] = None,
                   repeats: Annotated[int | None, typer.Option(
                       help="Ask each prompt this many times (default: 1 for a model at "
                            f"temperature 0, else 3 to measure its noise first); 1 to "
                            f"{MAX_REPEATS}.", min=1, max=MAX_REPEATS)] = None,
                   model: ModelOpt = None, base_url: BaseUrlOpt = None) -> None:
    """Re-run a run's frozen prompt with parts removed (or put back) and say whether the
    answer changed. The result is journaled with the run. The model is the one the run
    recorded unless --model/--base-url choose another; a server the database recorded is
    asked again only when --base-url or MEMWB_OPENAI_BASE_URL names it.

    Example: memwb counterfactual support-3-card --subtract all
    Example: memwb counterfactual my-run --subtract all --model llama3.1 --base-url http://127.0.0.1:11434/v1
    """
    from memory_core.analysis.counterfactual import counterfactual as cf

    subs = subtract or []
    if "all" in subs and len(subs) > 1:
        raise fail("--subtract all cannot be combined with THREAD:SEQ refs")
    sub: Any = "all" if subs == ["all"] else [parse_ref(x) for x in subs]
    backs = [parse_ref(x) for x in put_back or []]
    if not sub and not lane and not backs:
        raise fail("nothing to change; give --subtract, --lane or --put-back")
    with opened(db, read_only=False) as s:
        chosen = _chosen_model(s, run, model, base_url)
        res = guarded(lambda: cf(s, run, subtract=sub, lanes=lane or [], put_back=backs,
                                 repeats=repeats, model=chosen))
    say(f"variant:  {res.description}")
    say(f"original: {res.original_answer}")
    for ans in res.baseline_answers:
        say(f"baseline: {ans}")
    for ans in res.new_answers:
        say(f"new:      {ans}")
    for note in res.notes:
        say(f"note:     {note}")
    say(f"verdict:  {res.verdict}")


@app.command()
def why(run: Annotated[str, typer.Argument(help="Run id.")], db: DbOpt = None,
        seq: Annotated[int | None, typer.Option(help="Seq of the message.")] = None,
        thread: Annotated[str | None, typer.Option(
            help="Thread of the --seq message (default: the run's thread).")] = None,
        text: Annotated[str | None, typer.Option(help="A phrase to look for.")] = None) -> None:
    """Explain why a message did (or did not) reach the model in a run.

    Example: memwb why support-3-forgot --text "refund of €240"
    """
    from memory_core.analysis.forgotten import why_forgotten

    if (seq is None) == (text is None):
        raise fail("give exactly one of --seq or --text")
    if thread is not None and seq is None:
        raise fail("--thread goes with --seq, not --text")
    with opened(db) as s:
        target: Any = text
        if seq is not None:
            tid = thread or guarded(lambda: s.runs.require_run(run)).thread_id
            if tid is None:
                raise fail(f"run {run!r} has no thread; pass --thread")
            target = (tid, seq)
        exp = guarded(lambda: why_forgotten(s, run, target))
    where = f" ({exp.thread_id}:{exp.seq})" if exp.thread_id is not None else ""
    say(f"{exp.fate}{where}: {exp.sentence}")
    for k, v in exp.evidence.items():
        say(f"  {k}: {v}")
    if exp.other_matches:
        say("  other matches: " + ", ".join(f"{t}:{q}" for t, q in exp.other_matches))


@app.command()
def diff(run_a: Annotated[str, typer.Argument(help="First run id.")],
         run_b: Annotated[str, typer.Argument(help="Second run id.")],
         db: DbOpt = None) -> None:
    """Compare two runs' compositions: what entered, left or moved lane, and why.

    Example: memwb diff support-3-forgot support-3-fixed
    """
    from memory_core.analysis.diff import diff_runs

    with opened(db) as s:
        d = guarded(lambda: diff_runs(s, run_a, run_b))
    table([e.model_dump() for e in d.changed()],
          ["thread_id", "seq", "change", "lane_a", "lane_b", "reason"])
    say("")
    say("tokens per lane (a → b):")
    for lane_name, (a, b, delta) in d.token_deltas.items():
        say(f"  {lane_name}: {a} → {b} ({delta:+d})")
    for key, (a, b) in d.settings_changed.items():
        say(f"setting {key}: {a} → {b}")
    say("first divergent step: "
               + ("none" if d.divergent_at is None else str(d.divergent_at)))
    say(f"answer a: {d.answer_a}")
    say(f"answer b: {d.answer_b}")


@app.command()
def erase(db: DbOpt = None,
          thread: Annotated[str | None, typer.Option(help="Erase this thread.")] = None,
          resource: Annotated[str | None, typer.Option(
              help="Erase every thread of this resource.")] = None) -> None:
    """Erase a thread or a whole resource: messages, vectors, memory, journal records.
    Prints what was removed, as JSON.

    Example: memwb erase --thread support-1
    """
    from memory_core.lifecycle.erasure import erase_resource, erase_thread

    if (thread is None) == (resource is None):
        raise fail("give exactly one of --thread or --resource")
    with opened(db, read_only=False) as s:
        if thread is not None:
            report = guarded(lambda: erase_thread(s, thread))
        else:
            assert resource is not None
            known = guarded(lambda: s.memory.list_resources())
            if resource not in known and not guarded(
                    lambda: s.runs.list_runs(resource_id=resource)):
                raise fail(f"resource {resource!r} does not exist; resources are "
                           f"{', '.join(known) or '(none)'}")
            report = guarded(lambda: erase_resource(s, resource))
    emit_json(report.model_dump())


# -- live capture (memory_core/capture, docs/capture.md) ---------------------------------
def _port(value: int) -> int:
    from memory_core.capture import validate_port

    return guarded(lambda: validate_port(value))


def _capture(db: str | None, port: int, embedder: str, resource: str | None,
             make_app: Callable[[Any], Any], what: str) -> None:
    """Serve a capture app on 127.0.0.1:port, writing to ``db`` until interrupted."""
    import logging

    from memory_core.capture import LoopbackServer, Recorder

    embed = _embedder(embedder, allow_none=True)
    server = LoopbackServer(None, _port(port), name=what)
    guarded(server.bind)  # a taken port is refused before the database is touched
    log = logging.getLogger("memory_core.capture")  # what was recorded, never headers
    if not log.handlers:
        log.addHandler(logging.StreamHandler(sys.stderr))
    log.setLevel(logging.INFO)
    url = db or default_db()
    with opened(url, read_only=False, must_exist=False) as storage:
        recorder = Recorder(storage, embed=embed, resource_id=resource)
        server.app = guarded(lambda: make_app(recorder))
        typer.echo(f"{what} on {server.url} writing to {url} (Ctrl-C to stop)", err=True)
        try:
            server.serve()
        except KeyboardInterrupt:
            pass  # uvicorn shut down on Ctrl-C and passes the signal on: a normal stop
        finally:
            recorder.close()
    typer.echo(f"recorded {len(recorder.runs)} run(s); {len(recorder.failures)} record(s) "
               "not recorded", err=True)


CapturePort = Annotated[int, typer.Option(help="Port on 127.0.0.1 (1-65535).")]
CaptureEmbedder = Annotated[str, typer.Option(
    help="hashing, minilm or none; must match the vectors already in the database.")]
CaptureResource = Annotated[str | None, typer.Option(
    help="Resource id for every recorded thread.")]


@app.command()
def proxy(upstream: Annotated[str, typer.Option(
              help="The model server's base URL as an OpenAI client takes it, e.g. "
                   "https://api.openai.com/v1.")],
          db: DbOpt = None, port: CapturePort = 8788, embedder: CaptureEmbedder = "hashing",
          resource: CaptureResource = None) -> None:
    """Record an agent's OpenAI-compatible traffic: a proxy on 127.0.0.1 that forwards
    every chat completion to --upstream and writes each exchange as an imported run.

    Example: memwb proxy --db mine.duckdb --upstream https://api.openai.com/v1, then run
    the agent with OPENAI_BASE_URL=http://127.0.0.1:8788/v1
    """
    from memory_core.capture import proxy_app, validate_upstream

    base = guarded(lambda: validate_upstream(upstream))
    _capture(db, port, embedder, resource, lambda rec: proxy_app(rec, base), "proxy")


@app.command()
def collect(db: DbOpt = None, port: CapturePort = 4318,
            embedder: CaptureEmbedder = "hashing", resource: CaptureResource = None,
            settle: Annotated[float, typer.Option(
                help="Seconds a trace must be quiet before it is imported (its spans and "
                     "log records arrive in separate exports).")] = 2.0) -> None:
    """Receive OpenTelemetry GenAI spans and logs (OTLP/HTTP, JSON or protobuf) on
    127.0.0.1 and import them as runs as they arrive.

    Example: memwb collect --db mine.duckdb, then run the agent with
    OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318
    """
    from memory_core.capture import collector_app

    if not 0 <= settle <= 600:
        raise fail(f"--settle must be between 0 and 600 seconds, got {settle}")
    _capture(db, port, embedder, resource,
             lambda recorder: collector_app(recorder, settle=settle), "collector")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
