"""The hostile-input corpus through every CLI command (issue 33, point 8 and "Done
when"): a ``--db`` naming a FIFO, a path too long, ``~nosuchuser/…``; ``http://[::1``
as ``--base-url`` or ``--upstream``; and a database whose journal values or
timestamps were edited behind our back, for every command that reads one. Each ends
in one ``error:`` line and exit 1 (``verify`` may instead report the tampering), never
a traceback or a hang."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from memory_core.cli import app
from tests.hostile.harness import memwb, no_traceback, refused, two_runs, two_runs_sqlite

#: arguments that make each command reach its database (runs r1 and r2 of thread t)
ARGS: dict[str, list[str]] = {
    "threads": [], "runs": [], "inspect": ["r2"], "replay": ["r2"], "verify": ["--all"],
    "counterfactual": ["r2", "--subtract", "all", "--model", "reader"],
    "attribute": ["r2", "--model", "reader"], "why": ["r2", "--text", "code"],
    "diff": ["r1", "r2"], "whatif": ["--set", "recent_n=1", "--run", "r2"],
    "pin": ["r2", "--suite", "s", "--contains", "code"], "regress": [],
    "erase": ["--thread", "t"], "import": ["{fixture}"], "demo": ["--embedder", "hashing"],
    "ui": [], "proxy": ["--upstream", "http://127.0.0.1:9/v1", "--port", "{port}"],
    "collect": ["--port", "{port}"],
}
READERS = ["inspect", "replay", "verify", "counterfactual", "attribute", "why", "diff",
           "whatif", "runs", "threads", "pin", "regress"]
#: commands whose exit 1 may be a report on stdout (tampering named, a pin broken)
REPORTERS = ("verify", "regress")
BASE_URL_COMMANDS = ["counterfactual", "attribute", "whatif", "regress"]
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "imports" / "openai_support.jsonl"


def test_every_command_is_in_the_corpus() -> None:
    commands = sorted(typer.main.get_command(app).commands)  # type: ignore[attr-defined]
    assert sorted(ARGS) == commands, "a command is missing from the hostile corpus"


def _args(command: str, port: int = 1) -> list[str]:
    return [command, *(a.format(fixture=FIXTURE, port=port) for a in ARGS[command])]


@pytest.mark.parametrize("command", [
    pytest.param(c, marks=(pytest.mark.slow,)) for c in sorted(ARGS)])
def test_a_db_path_the_system_refuses_is_one_error_line_in_every_command(
        command: str, tmp_path: Path) -> None:
    """A FIFO would hang a command that opened it; a path too long and ``~nosuchuser``
    gave tracebacks."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for db in (str(fifo), str(tmp_path / ("a" * 300) / "x.db"),
               "~memwb-no-such-user-here/x.duckdb"):
        line = refused(memwb(*_args(command), "--db", db, timeout=60))
        assert db.split("/")[-1][:40] in line or "~memwb" in line or "long" in line, line


@pytest.mark.parametrize("url", ["http://[::1", "http://[::1/v1"])
@pytest.mark.parametrize("command", [
    pytest.param(c, marks=() if c == "counterfactual" else (pytest.mark.slow,))
    for c in [*BASE_URL_COMMANDS, "proxy"]])
def test_a_malformed_url_is_one_error_line(command: str, url: str,
                                           damaged: Path) -> None:
    db = f"sqlite:///{damaged}"
    if command == "proxy":
        args = ["proxy", "--upstream", url, "--port", "1", "--db", db]
    else:
        args = [*_args(command), "--model", "openai", "--base-url", url, "--db", db]
        if command == "whatif":
            args.append("--ask")
    line = refused(memwb(*args, timeout=60))
    assert "[::1" in line, line


# -- a damaged database ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def damaged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite database of two Runner runs, which each case copies and damages."""
    path = tmp_path_factory.mktemp("damaged") / "base.db"
    two_runs_sqlite(path)
    return path


JOURNAL_VALUES = {"not-json": "{not json", "array": "[]", "null": "null",
                  "1e999": '{"x": 1e999}', "huge-int": "9" * 5000, "string": '"x"',
                  "empty-object": "{}"}
JOURNAL_KEYS = ["input", "memctx", "prompt", "persist:input", "step:0", "persist:output",
                "output", "seal", "lease:000000"]
TIMES = {"words": "yesterday", "empty": "", "out-of-range": "9999-99-99T99:99:99",
         "number": "1e999"}
TIME_COLUMNS = [("runs", "started_at"), ("runs", "finished_at"), ("messages", "created_at"),
                ("threads", "created_at"), ("threads", "updated_at")]


def _run_every_reader(db: Path, what: str, engine: str = "sqlite") -> None:
    runner = CliRunner()
    for command in READERS:
        result = runner.invoke(app, [*_args(command), "--db", f"{engine}:///{db}"])
        where = f"{command} with {what}"
        assert result.exception is None or isinstance(result.exception, SystemExit), (
            where, repr(result.exception))
        no_traceback(result.output)
        assert result.exit_code in (0, 1), (where, result.exit_code, result.output)
        if result.exit_code == 1 and command not in REPORTERS:
            lines = result.stderr.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("error: "), (where, result.stderr)


def _damage(damaged: Path, tmp_path: Path, sql: str, params: tuple[str, ...]) -> Path:
    db = tmp_path / "db.db"
    shutil.copy(damaged, db)
    con = sqlite3.connect(db)
    with con:
        con.execute(sql, params)
    con.close()
    return db


@pytest.fixture(scope="module")
def damaged_duckdb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("damaged-duckdb") / "base.duckdb"
    two_runs(path, "duckdb")
    return path


@pytest.mark.slow
@pytest.mark.parametrize("key", ["memctx", "step:0", "output", "seal"])
def test_a_corrupted_journal_value_on_duckdb_is_one_error_line_in_every_reader(
        key: str, damaged_duckdb: Path, tmp_path: Path) -> None:
    import duckdb

    for name, value in JOURNAL_VALUES.items():
        db = tmp_path / "db.duckdb"
        shutil.copy(damaged_duckdb, db)
        con = duckdb.connect(str(db))
        try:
            con.execute("UPDATE journal SET value = ? WHERE key = ?", [value, f"r2:{key}"])
            con.execute("UPDATE runs SET started_at = 'yesterday' WHERE run_id = 'r1'")
        finally:
            con.close()
        _run_every_reader(db, f"r2:{key} = {name}, r1 started yesterday", "duckdb")


@pytest.mark.slow  # (each key: 7 values through 12 commands, seconds)
@pytest.mark.parametrize("key", JOURNAL_KEYS)
def test_a_corrupted_journal_value_is_one_error_line_in_every_reader(
        key: str, damaged: Path, tmp_path: Path) -> None:
    for name, value in JOURNAL_VALUES.items():
        db = _damage(damaged, tmp_path, "UPDATE journal SET value = ? WHERE key = ?",
                     (value, f"r2:{key}"))
        _run_every_reader(db, f"r2:{key} = {name}")


@pytest.mark.parametrize(("table", "column"), [
    pytest.param(t, c, marks=(pytest.mark.slow,)) for t, c in TIME_COLUMNS])
def test_a_bad_timestamp_is_one_error_line_in_every_reader(
        table: str, column: str, damaged: Path, tmp_path: Path) -> None:
    for name, value in TIMES.items():
        db = _damage(damaged, tmp_path, f"UPDATE {table} SET {column} = ?", (value,))  # noqa: S608
        _run_every_reader(db, f"{table}.{column} = {name}")


HUGE = "9" * 5000


@pytest.mark.parametrize("args", [
    ["whatif", "--set", "recent_n=1e999", "--run", "r2"],
    ["whatif", "--set", f"recent_n={HUGE}", "--run", "r2"],
    ["whatif", "--set", "recall.threshold=1e999", "--run", "r2"],
    ["whatif", "--set", "recall.threshold=nan", "--run", "r2"],
    ["why", "r2", "--seq", HUGE],
    ["counterfactual", "r2", "--subtract", f"t:{HUGE}", "--model", "reader"],
    ["counterfactual", "r2", "--put-back", f"t:{HUGE}", "--model", "reader"],
    ["pin", "r2", "--suite", "s", "--max-tokens", HUGE],
    ["pin", "r2", "--suite", "s", "--recalled", f"t:{HUGE}"],
    ["collect", "--settle", "1e999", "--port", "1"],
    ["ui", "--port", HUGE],
], ids=lambda a: " ".join(x[:12] for x in a))
def test_a_number_no_int_or_float_holds_is_one_short_error_line(args: list[str],
                                                                damaged: Path) -> None:
    """``t:99…9`` (5,000 digits) as a message ref gave Python's int-conversion
    traceback; every such value is one error line, never echoed whole."""
    result = CliRunner().invoke(app, [*args, "--db", f"sqlite:///{damaged}"])
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    no_traceback(result.output)
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 1 and len(lines) == 1, result.stderr[-500:]
    assert lines[0].startswith("error: ") and len(lines[0]) < 1200, lines[0][:200]
