"""memwb: the command-line face of memory_core. Each command opens the storage, calls
one library function and prints its result; errors become one `error:` line and exit 1."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

# typer (0.29) vendors click; its exception classes live here
from typer._click.exceptions import ClickException, NoArgsIsHelpError
from typer.core import TyperGroup

from memory_core.errors import MemoryCoreError

if TYPE_CHECKING:
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


MAX_ERROR = 1000  # characters of an error line: a 5,000-digit value is not echoed whole


def fail(message: str) -> typer.Exit:
    """Print the one error line (at most ``MAX_ERROR`` characters of ``message``); the
    caller raises what this returns."""
    if len(message) > MAX_ERROR:
        message = f"{message[:MAX_ERROR]}… ({len(message)} characters)"
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
        url = expand_url(db if db is not None else default_db())
    except MemoryCoreError as e:  # ~nosuchuser/…
        raise fail(str(e)) from None
    path = local_path(url)
    if path is not None:
        try:
            Path(path).exists()
        except OSError as e:  # a name or path too long for the system, …
            raise fail(f"database path {path[:120]!r}…: {e.strerror}" if len(path) > 120
                       else f"database path {path!r}: {e.strerror}") from None
    return url


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


def cell(value: Any, whole: bool = False) -> str:
    """A value as one table cell: one line, escaped for the terminal, cut at ``CELL``
    characters with an ellipsis unless ``whole``."""
    if isinstance(value, datetime):
        from memory_core.types import is_undated

        if is_undated(value):  # an imported call its recording did not date
            return "not recorded"
    text = terminal_safe(" ".join(("" if value is None else str(value)).split()))
    return text if whole or len(text) <= CELL else text[:CELL - 1] + "…"


CELL = 60  # a cell's characters, but for the columns a table shows whole


def table(rows: list[dict[str, Any]], columns: list[str], whole: Sequence[str] = ()) -> None:
    """Rows as aligned columns, each cell cut at ``CELL`` characters with an ellipsis
    but in the ``whole`` columns (the last: an explanation cut short says nothing)."""
    if not rows:
        say("(none)")
        return
    cells = [[cell(r.get(c), c in whole) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    say("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip())
    for row in cells:
        say("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())


def parse_ref(text: str) -> tuple[str, int]:
    """``THREAD:SEQ`` → (thread, seq); the thread id may itself contain colons."""
    head, _, tail = text.rpartition(":")
    if not head or not tail.isdigit() or len(tail) > 18:  # (a seq fits 64 bits)
        shown = text if len(text) < 80 else f"{text[:60]}… ({len(text)} characters)"
        raise fail(f"bad message ref {shown!r}; expected THREAD:SEQ, e.g. support-1:12")
    return head, int(tail)


def _embedder(name: str, *, allow_none: bool) -> Any:
    from memory_core.runs.registry import embedder_from_name

    choices = [*EMBEDDERS, *(["none"] if allow_none else [])]
    if name not in choices:
        raise fail(f"unknown embedder {name!r}; choose {', '.join(choices)}")
    return None if name == "none" else guarded(lambda: embedder_from_name(EMBEDDERS[name]))
