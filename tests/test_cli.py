"""Every memwb command through typer's CliRunner on a small demo database (support and
home stories, hashing embedder): the happy path and its error paths (one `error:` line)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner, Result

import sample_data.build as build
from memory_core.cli import app
from memory_core.provenance.record import Memctx
from memory_core.storage.duckdb import DuckDBStorage
from sample_data.scenarios.home import HOME
from sample_data.scenarios.support import SUPPORT
from tests.helpers import build_demo_file, cf_records

IMPORTS = Path(__file__).parent / "fixtures" / "imports"
runner = CliRunner()


def memwb(*args: str) -> Result:
    return runner.invoke(app, list(args))


def ok(result: Result) -> str:
    assert result.exit_code == 0, (result.output, result.stderr, result.exception)
    return result.stdout


def error_line(result: Result) -> str:
    """The command failed with exactly one `error:` line on stderr and no traceback."""
    assert result.exit_code != 0, result.stdout
    assert result.exception is None or isinstance(result.exception, SystemExit), \
        repr(result.exception)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: "), lines[0]
    assert "Traceback" not in result.output
    return lines[0]


def command_names() -> list[str]:
    return sorted(typer.main.get_command(app).commands)  # type: ignore[attr-defined]


@pytest.fixture(autouse=True)
def _no_env_db(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMWB_DB", raising=False)


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield build_demo_file(str(tmp_path_factory.mktemp("cli") / "demo.duckdb"),
                          [SUPPORT, HOME])


@pytest.fixture
def db_copy(demo_db: str, tmp_path: Path) -> str:
    """A private copy for commands that write (counterfactual, erase, import)."""
    dst = tmp_path / "copy.duckdb"
    shutil.copy(demo_db, dst)
    return str(dst)


# -- help ---------------------------------------------------------------------------------
def test_every_command_is_listed_and_has_an_example() -> None:
    assert command_names() == sorted(["demo", "ui", "import", "threads", "runs", "inspect",
                                      "attribute",
                                      "replay", "verify", "counterfactual", "why", "diff",
                                      "whatif", "pin", "regress", "erase", "proxy",
                                      "collect"])
    top = ok(memwb("--help"))
    for name in command_names():
        assert name in top
        out = ok(memwb(name, "--help"))
        examples = [ln.strip() for ln in out.splitlines() if ln.strip().startswith("Example:")]
        assert examples == [examples[0]] and examples[0].startswith(f"Example: memwb {name}")


# -- demo ---------------------------------------------------------------------------------
@pytest.mark.slow
def test_demo_builds_a_database(tmp_path: Path) -> None:
    # in its own process (python -m sample_data.build), its progress passed through
    path = tmp_path / "out" / "demo.duckdb"
    res = memwb("demo", "--db", str(path), "--embedder", "hashing")
    assert f"demo database written to {path}" in ok(res)
    assert "[1/5] " in res.stderr and "[5/5] " in res.stderr  # progress goes to stderr
    total = sum(build.run_count(s) for s in build.SCENARIOS)
    assert f"runs {total}/{total}, " in res.stderr and " s left" in res.stderr
    storage = DuckDBStorage(str(path), read_only=True)
    try:
        assert storage.runs.get_run("support-3-forgot") is not None
        assert {t.id for t in storage.memory.list_threads("cust-anna")} >= {"support-1",
                                                                             "support-3"}
    finally:
        storage.close()


def test_demo_if_absent_leaves_an_existing_file_alone(demo_db: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*a: Any, **k: Any) -> None:
        raise AssertionError("build_demo must not run")

    monkeypatch.setattr(build, "build_demo", boom)
    before = Path(demo_db).stat().st_mtime_ns
    out = ok(memwb("demo", "--db", demo_db, "--if-absent", "--embedder", "hashing"))
    assert f"demo database already at {demo_db}" in out
    assert Path(demo_db).stat().st_mtime_ns == before


def test_demo_if_absent_migrates_a_demo_database_made_by_older_code(
        demo_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The workbench opens the demo read-only, which refuses a file made before a
    migration: `make demo` (demo --if-absent) brings such a file up to date instead of
    leaving it for the workbench to refuse. The journal's records come through."""
    import duckdb

    from memory_core.errors import SchemaOutdatedError
    from memory_core.storage.schema import MIGRATIONS

    monkeypatch.setattr(build, "build_demo", lambda *a, **k: pytest.fail("no build"))
    old = str(tmp_path / "old-demo.duckdb")
    shutil.copyfile(demo_db, old)
    raw = duckdb.connect(old)  # as the code before migration 4 left it
    keys = raw.execute("SELECT key FROM journal ORDER BY pos").fetchall()
    raw.execute("DROP INDEX journal_by_group")
    raw.execute(f"DELETE FROM schema_migrations WHERE version = {MIGRATIONS[-1].version}")
    raw.close()
    with pytest.raises(SchemaOutdatedError, match="open it once without read_only"):
        DuckDBStorage(old, read_only=True)
    out = ok(memwb("demo", "--db", old, "--if-absent", "--embedder", "hashing"))
    assert f"{old}: made by older code, its schema brought up to version " \
           f"{MIGRATIONS[-1].version}" in out and f"demo database already at {old}" in out
    reader = DuckDBStorage(old, read_only=True)
    try:
        assert [k for k, _ in reader.runs.list("")] == [k for (k,) in keys]
        assert reader.runs.list("support-3-forgot:")
    finally:
        reader.close()


def test_demo_errors(tmp_path: Path) -> None:
    assert "unknown embedder 'bert'" in error_line(
        memwb("demo", "--db", str(tmp_path / "d.duckdb"), "--embedder", "bert"))
    assert "DuckDB file" in error_line(memwb("demo", "--db", "sqlite:///x.db"))
    assert not (tmp_path / "d.duckdb").exists()


# -- ui -----------------------------------------------------------------------------------
def test_ui_runs_streamlit_on_the_database(demo_db: str,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[list[str], dict[str, str]]] = []

    def fake_call(cmd: list[str], env: dict[str, str], **_: object) -> int:
        calls.append((cmd, env))
        return 0

    monkeypatch.setattr(subprocess, "call", fake_call)
    monkeypatch.setenv("MEMWB_DB", "/somewhere/else.duckdb")
    ok(memwb("ui", "--db", demo_db, "--port", "8765"))
    [(cmd, env)] = calls
    assert cmd[1:4] == ["-m", "streamlit", "run"]
    assert cmd[4].endswith("app/streamlit_app.py") and Path(cmd[4]).is_file()
    flags = dict(zip(cmd[5:-3:2], cmd[6:-3:2], strict=True))
    assert flags == {"--server.address": "127.0.0.1", "--server.port": "8765",
                     "--browser.gatherUsageStats": "false", "--client.toolbarMode": "viewer"}
    assert cmd[-3:] == ["--", "--db", demo_db]
    assert "MEMWB_DB" not in env  # the app serves exactly the --db given, nothing else


def test_ui_passes_streamlit_exit_code_and_checks_the_file(
        tmp_path: Path, demo_db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(subprocess, "call", lambda cmd, env, **_: 3)
    assert memwb("ui", "--db", demo_db).exit_code == 3
    assert "does not exist" in error_line(memwb("ui", "--db", str(tmp_path / "no.duckdb")))


# -- threads and runs ---------------------------------------------------------------------
def test_threads(demo_db: str) -> None:
    out = ok(memwb("threads", "--db", demo_db))
    header = out.splitlines()[0].split()
    assert header == ["thread_id", "resource_id", "title", "message_count", "run_count",
                      "last_activity"]
    assert {"support-1", "support-3", "bathroom-plans"} <= {ln.split()[0]
                                                            for ln in out.splitlines()[1:]}
    only = ok(memwb("threads", "--db", demo_db, "--resource", "cust-anna"))
    assert "support-3" in only and "bathroom-plans" not in only
    assert "resource 'nobody' does not exist" in error_line(
        memwb("threads", "--db", demo_db, "--resource", "nobody"))


def test_runs(demo_db: str) -> None:
    out = ok(memwb("runs", "--db", demo_db, "--thread", "support-3"))
    rows = {ln.split()[0]: ln.split() for ln in out.splitlines()[1:]}
    assert rows["support-3-forgot"][1:4] == ["support", "support-3", "completed"]
    assert "home-tiles" not in out
    assert "home-tiles" in ok(memwb("runs", "--db", demo_db))
    assert "thread 'nope' does not exist" in error_line(
        memwb("runs", "--db", demo_db, "--thread", "nope"))


# -- inspect ------------------------------------------------------------------------------
def test_inspect_table(demo_db: str) -> None:
    out = ok(memwb("inspect", "support-3-forgot", "--db", demo_db))
    lanes = [ln.split()[0] for ln in out.splitlines()[1:] if ln.strip()]
    assert lanes[0] == "instructions" and "recent" in lanes and "input" in lanes
    assert "What did we decide about the refund for my blender?" in out
    assert "answer: I don't know" in out
    assert "tokens: instructions" in out


def test_inspect_shows_tool_calls(demo_db: str) -> None:
    run_id = tool_run(demo_db, "support-1")
    out = ok(memwb("inspect", run_id, "--db", demo_db))
    assert any(ln.startswith("tool: ") and ln.endswith("[ok]") for ln in out.splitlines()), out


def test_inspect_json_is_the_provenance_record(demo_db: str) -> None:
    out = ok(memwb("inspect", "home-cabinets", "--db", demo_db, "--json"))
    rec = Memctx.model_validate(json.loads(out))
    assert rec.thread_id and rec.query == "When do the kitchen cabinets arrive?"
    assert rec.recalled  # this run recalls from the other home threads


def test_inspect_errors(demo_db: str, tmp_path: Path) -> None:
    assert "run 'nope' does not exist" in error_line(
        memwb("inspect", "nope", "--db", demo_db))
    assert "run 'nope' does not exist" in error_line(
        memwb("inspect", "nope", "--db", demo_db, "--json"))
    missing = str(tmp_path / "missing.duckdb")
    assert f"database '{missing}' does not exist" in error_line(
        memwb("inspect", "support-3-forgot", "--db", missing))


# -- replay -------------------------------------------------------------------------------
def tool_run(db: str, thread_id: str) -> str:
    """The first run of the thread that executed a tool call."""
    storage = DuckDBStorage(db, read_only=True)
    try:
        return next(r.run_id for r in storage.runs.list_runs(thread_id=thread_id)
                    if storage.runs.list(f"{r.run_id}:tool:"))
    finally:
        storage.close()


def test_replay_is_identical(demo_db: str) -> None:
    out = ok(memwb("replay", "support-3-forgot", "--db", demo_db))
    assert out.startswith("replay of support-3-forgot: identical (1 step, 1 verified; ")


def test_replay_checks_tool_calls(demo_db: str) -> None:
    run_id = tool_run(demo_db, "support-1")
    out = ok(memwb("replay", run_id, "--db", demo_db))
    assert out.startswith(f"replay of {run_id}: identical (2 steps, 2 verified; 1 tool call;")


def test_replay_unknown_run(demo_db: str) -> None:
    assert "'nope'" in error_line(memwb("replay", "nope", "--db", demo_db))


# -- counterfactual -----------------------------------------------------------------------
def journaled_cf(db: str, run_id: str) -> list[dict[str, Any]]:
    storage = DuckDBStorage(db, read_only=True)
    try:
        return [v for _, v in cf_records(storage, run_id)]
    finally:
        storage.close()


def test_counterfactual_subtract_all_changes_the_answer(db_copy: str) -> None:
    # home-cabinets answers from a recalled message: without recall it cannot
    out = ok(memwb("counterfactual", "home-cabinets", "--db", db_copy, "--subtract", "all"))
    lines = dict(ln.split(":", 1) for ln in out.splitlines())
    assert lines["variant"].strip() == "without all recalled messages"
    assert lines["original"].strip().startswith("From our conversation:")
    assert lines["new"].strip().startswith("I don't know")
    assert out.splitlines()[-1] == "verdict:  changed"
    [rec] = journaled_cf(db_copy, "home-cabinets")
    assert rec["verdict"] == "changed" and rec["new_answers"] == [lines["new"].strip()]
    # asking again reads the journaled result
    assert ok(memwb("counterfactual", "home-cabinets", "--db", db_copy,
                    "--subtract", "all")) == out
    assert len(journaled_cf(db_copy, "home-cabinets")) == 1


def test_counterfactual_prints_the_library_verdict(db_copy: str) -> None:
    out = ok(memwb("counterfactual", "support-3-card", "--db", db_copy, "--subtract", "all"))
    [rec] = journaled_cf(db_copy, "support-3-card")
    assert out.splitlines()[-1] == f"verdict:  {rec['verdict']}"
    assert f"original: {rec['original_answer']}" in out.splitlines()


def test_counterfactual_by_lane(db_copy: str) -> None:
    out = ok(memwb("counterfactual", "home-cabinets", "--db", db_copy, "--lane", "recalled",
                   "--lane", "recent"))
    assert "variant:  without the recalled, recent lane(s)" in out.splitlines()
    assert out.splitlines()[-1] == "verdict:  changed"


def test_counterfactual_errors(db_copy: str) -> None:
    def cf(*args: str) -> str:
        return error_line(memwb("counterfactual", *args, "--db", db_copy))

    assert "run 'nope' does not exist" in cf("nope", "--subtract", "all")
    assert "bad message ref 'support-3'" in cf("home-cabinets", "--subtract", "support-3")
    assert "bad message ref 'x:abc'" in cf("home-cabinets", "--subtract", "x:abc")
    assert "bad message ref ':4'" in cf("home-cabinets", "--put-back", ":4")
    assert "cannot be combined" in cf("home-cabinets", "--subtract", "all",
                                      "--subtract", "support-1:2")
    assert "nothing to change" in cf("home-cabinets")
    assert "support-1#2 is not a stored message run 'home-cabinets' was given" in cf(
        "home-cabinets", "--subtract", "support-1:2")
    assert "unknown lane 'tools'" in cf("home-cabinets", "--lane", "tools")


# -- why ----------------------------------------------------------------------------------
def memctx_of(db: str, run_id: str) -> Memctx:
    return Memctx.model_validate(json.loads(ok(memwb("inspect", run_id, "--db", db, "--json"))))


def test_why_by_seq(demo_db: str) -> None:
    rec = memctx_of(demo_db, "support-3-forgot")
    r = rec.recent[0]
    out = ok(memwb("why", "support-3-forgot", "--db", demo_db, "--seq", str(r.seq)))
    assert r.thread_id == "support-3"  # --thread defaults to the run's thread
    assert out.startswith(f"recent (support-3:{r.seq}): ")
    nm = rec.near_misses[0]
    out = ok(memwb("why", "support-3-forgot", "--db", demo_db, "--seq", str(nm.seq),
                   "--thread", nm.thread_id))
    assert out.startswith(f"{nm.reason} ({nm.thread_id}:{nm.seq}): ")
    assert rec.settings.recall is not None
    assert f"  threshold: {rec.settings.recall.threshold}" in out.splitlines()


def test_why_by_text(demo_db: str) -> None:
    # the refund decided in support-1 never reached the model in support-3-forgot
    out = ok(memwb("why", "support-3-forgot", "--db", demo_db, "--text", "refund of €240"))
    fate, _, rest = out.splitlines()[0].partition(" ")
    assert fate not in ("recalled", "recent", "input") and rest.startswith("(support-1:")
    # "240 refund" is held word for word by no message: the others listed are near ones
    out = ok(memwb("why", "support-3-forgot", "--db", demo_db, "--text", "240 refund"))
    assert any(ln.startswith("  other near matches: ") for ln in out.splitlines()), out
    out = ok(memwb("why", "support-3-forgot", "--db", demo_db, "--text", "refund"))
    assert any(ln.startswith("  other messages holding it: support-")
               for ln in out.splitlines()), out
    out = ok(memwb("why", "support-3-forgot", "--db", demo_db, "--text", "zebra crossing"))
    assert out.startswith("not-stored: No stored message contains")
    # copies later runs wrote are named apart: no place it could have read it (its own
    # question, support-3:20, is among the others; its answer, :21, named as such)
    out = ok(memwb("why", "support-3-forgot", "--db", demo_db, "--text", "refund"))
    lines = out.splitlines()
    later = next(ln for ln in lines if ln.startswith("  also_holding_it_written_after_the_"))
    others = next(ln for ln in lines if ln.startswith("  other messages holding it:"))
    answer = next(ln for ln in lines if ln.startswith("  also_in_this_runs_answer:"))
    assert "support-3:22" in later and "support-3:22" not in others, out
    assert "support-3:20" in others and "support-3:20" not in later, out
    assert answer == "  also_in_this_runs_answer: support-3:21", out
    assert "support-3:21" not in others + later, out


def test_why_errors(demo_db: str) -> None:
    def why(*args: str) -> str:
        return error_line(memwb("why", *args, "--db", demo_db))

    assert "exactly one of --seq or --text" in why("support-3-forgot")
    assert "exactly one of --seq or --text" in why("support-3-forgot", "--seq", "1",
                                                   "--text", "refund")
    assert "--thread goes with --seq" in why("support-3-forgot", "--thread", "support-1",
                                             "--text", "refund")
    assert "run 'nope' does not exist" in why("nope", "--seq", "1")
    assert "run 'nope' does not exist" in why("nope", "--text", "refund")
    assert "thread 'nope' does not exist" in why("support-3-forgot", "--seq", "1",
                                                 "--thread", "nope")
    assert "message support-3#999 does not exist" in why("support-3-forgot", "--seq", "999")


# -- diff ---------------------------------------------------------------------------------
def test_diff(demo_db: str) -> None:
    out = ok(memwb("diff", "support-3-forgot", "support-3-fixed", "--db", demo_db))
    lines = out.splitlines()
    assert lines[0].split() == ["thread_id", "seq", "change", "lane_a", "lane_b", "reason"]
    assert any(ln.startswith("setting threshold: ") for ln in lines)
    assert "tokens per lane (a → b):" in lines
    assert any(ln.startswith("  recent: ") for ln in lines)
    assert lines[-2].startswith("answer a: ") and lines[-1].startswith("answer b: ")
    same = ok(memwb("diff", "support-3-forgot", "support-3-forgot", "--db", demo_db))
    assert same.splitlines()[0] == "(none)" and "first divergent step: none" in same


def test_diff_unknown_run(demo_db: str) -> None:
    assert "run 'nope' does not exist" in error_line(
        memwb("diff", "support-3-forgot", "nope", "--db", demo_db))


# -- erase --------------------------------------------------------------------------------
def test_erase_thread(db_copy: str) -> None:
    report = json.loads(ok(memwb("erase", "--db", db_copy, "--thread", "support-1")))
    assert report["threads"] == ["support-1"]
    assert report["messages"] > 0 and report["runs"] > 0 and report["journal_entries"] > 0
    assert "support-1 " not in ok(memwb("threads", "--db", db_copy))
    assert "run 'support-1-t00' does not exist" in error_line(
        memwb("inspect", "support-1-t00", "--db", db_copy))
    assert "thread 'support-1' does not exist" in error_line(
        memwb("erase", "--db", db_copy, "--thread", "support-1"))


def test_erase_resource(db_copy: str) -> None:
    listed = ok(memwb("threads", "--db", db_copy, "--resource", "home-eva")).splitlines()[1:]
    report = json.loads(ok(memwb("erase", "--db", db_copy, "--resource", "home-eva")))
    assert sorted(report["threads"]) == sorted(ln.split()[0] for ln in listed)
    assert len(listed) >= 3
    out = ok(memwb("threads", "--db", db_copy))
    assert "home-eva" not in out and "cust-anna" in out
    assert "resource 'home-eva' does not exist" in error_line(
        memwb("erase", "--db", db_copy, "--resource", "home-eva"))


def test_erase_errors(db_copy: str, tmp_path: Path) -> None:
    assert "exactly one of --thread or --resource" in error_line(
        memwb("erase", "--db", db_copy))
    assert "exactly one of --thread or --resource" in error_line(
        memwb("erase", "--db", db_copy, "--thread", "support-1", "--resource", "cust-anna"))
    missing = tmp_path / "gone.duckdb"
    assert "does not exist" in error_line(memwb("erase", "--db", str(missing),
                                                "--thread", "support-1"))
    assert not missing.exists()  # a missing database is reported, never created


# -- import -------------------------------------------------------------------------------
def test_an_import_continuing_a_thread_says_no_new_thread(tmp_path: Path) -> None:
    """The stage line and the summary agree: a second file continuing the first's one
    conversation writes to 1 thread and stores no new one (it read "stored 1 threads"
    above "0 threads (continuing 1 earlier thread(s))")."""
    db = str(tmp_path / "mine.duckdb")
    turns = [("I fly to Lisbon on May 3.", "Noted."), ("My budget is 900 euros.", "Noted.")]

    def line(upto: int) -> str:
        msgs = [{"role": "system", "content": "You plan trips."}]
        for q, a in turns[:upto]:
            msgs += [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
        msgs.append({"role": "user", "content": turns[upto][0]})
        answer = {"role": "assistant", "content": turns[upto][1]}
        return json.dumps({"messages": msgs, "response": {"choices": [{"message": answer}]}})

    for name, upto in (("a.jsonl", 0), ("b.jsonl", 1)):
        (tmp_path / name).write_text(line(upto) + "\n")
    first = memwb("import", str(tmp_path / "a.jsonl"), "--db", db, "--embedder", "none")
    assert ": 1 thread, 2 messages, 0 embeddings, 1 run\n" in ok(first)
    assert "wrote the messages of 1 thread\n" in first.stderr
    assert "recorded 1 run\n" in first.stderr and "1 threads" not in first.stderr
    second = memwb("import", str(tmp_path / "b.jsonl"), "--db", db, "--embedder", "none")
    assert ": 0 new threads (continuing 1 earlier thread), 2 messages" in ok(second)
    assert "wrote the messages of 1 thread\n" in second.stderr


def test_import_into_a_new_database(tmp_path: Path) -> None:
    db = str(tmp_path / "mine.duckdb")
    src = str(IMPORTS / "openai_support.jsonl")
    res = memwb("import", src, "--db", db, "--resource", "acme")
    out = ok(res)
    assert out.startswith(f"imported {src} (openai) into {db}: ")
    counts = {c.split()[1]: c.split()[0]
              for c in out.splitlines()[0].split(": ")[1].split(", ")}
    assert int(counts["messages"]) > 0 and int(counts["embeddings"]) > 0
    # the stages on stderr, each ending with its count
    stages = [ln.split()[0] for ln in res.stderr.splitlines() if ln.split()[-1] in (
        "records", "requests", "messages", "threads", "runs")]
    assert list(dict.fromkeys(stages)) == ["read", "planned", "embedded", "wrote",
                                           "recorded"]
    assert f"recorded {counts['runs']} runs" in res.stderr
    threads = ok(memwb("threads", "--db", db, "--resource", "acme")).splitlines()[1:]
    assert len(threads) == int(counts["threads"]) > 0
    assert all(t.split()[1] == "acme" for t in threads)
    runs = [ln.split()[0] for ln in ok(memwb("runs", "--db", db)).splitlines()[1:]]
    assert len(runs) == int(counts["runs"]) and all(r.startswith("imp-") for r in runs)
    inspected = ok(memwb("inspect", runs[-1], "--db", db))
    assert ("note: imported run: this recording does not say whether memory recalled "
            "anything" in inspected and "note: not in the record" in inspected)
    again = ok(memwb("import", src, "--db", db))
    assert "was already imported" in again
    # an imported call's input was recorded as sent, not hashed: replay says so
    # rather than "0 verified"
    assert ok(memwb("replay", runs[-1], "--db", db)).startswith(
        f"replay of {runs[-1]}: identical (1 step, recorded without input hashes, so "
        "its input is not compared; 0 tool calls; 1 stored message checked)")


def test_import_into_the_demo_database(db_copy: str) -> None:
    ok(memwb("import", str(IMPORTS / "openai_keyed.jsonl"), "--db", db_copy,
             "--format", "openai"))
    assert "cust-anna" in ok(memwb("threads", "--db", db_copy))


@pytest.mark.parametrize(("fixture", "line", "needle"), [
    ("openai_bad_json.jsonl", 3, "invalid JSON"),
    ("openai_unknown_role.jsonl", 2, "unknown role 'robot'"),
])
def test_import_malformed_file_changes_nothing(db_copy: str, tmp_path: Path, fixture: str,
                                               line: int, needle: str) -> None:
    """The bad record alone is refused and writes nothing; in its file, beside good
    records, it is left out and said so."""
    bad = tmp_path / fixture
    bad.write_text((IMPORTS / fixture).read_text(encoding="utf-8").splitlines()[line - 1]
                   + "\n", encoding="utf-8")
    before = ok(memwb("threads", "--db", db_copy))
    assert needle in error_line(memwb("import", str(bad), "--db", db_copy))
    assert ok(memwb("threads", "--db", db_copy)) == before
    fresh = tmp_path / "fresh.duckdb"
    error_line(memwb("import", str(bad), "--db", str(fresh)))
    assert not fresh.exists() and not Path(f"{fresh}.wal").exists()
    said = ok(memwb("import", str(IMPORTS / fixture), "--db", str(fresh)))
    assert f"  line {line}: not imported: " in said and needle in said


def test_import_of_several_files_says_what_a_refusal_left_unimported(tmp_path: Path) -> None:
    """The first file refused: the files after it were not imported — said, as it is
    when a later file is refused; and nothing is written."""
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n", encoding="utf-8")
    good = str(IMPORTS / "openai_keyed.jsonl")
    db = tmp_path / "new.duckdb"
    r = memwb("import", str(bad), good, good, "--db", str(db))
    assert r.exit_code != 0
    first, *rest = r.stderr.strip().splitlines()
    assert first.startswith("error: ") and "bad.jsonl" in first
    assert rest == ["nothing imported: the 2 files after it were not imported either"]
    assert not db.exists()
    r = memwb("import", good, str(bad), "--db", str(db))
    assert r.stderr.strip().splitlines()[-1] == (
        f"stopped after importing {good}, the last file refused")
    r = memwb("import", good, str(bad), good, "--db", str(tmp_path / "other.duckdb"))
    assert r.stderr.strip().splitlines()[-1] == (
        f"stopped after importing {good}; the 1 file after the one refused was not "
        "imported")


def test_import_argument_errors(tmp_path: Path) -> None:
    db = str(tmp_path / "x.duckdb")
    src = str(IMPORTS / "openai_support.jsonl")
    assert "import file" in error_line(memwb("import", str(tmp_path / "no.jsonl"), "--db", db))
    assert "unknown embedder 'bert'" in error_line(
        memwb("import", src, "--db", db, "--embedder", "bert"))
    assert "unknown import format 'csv'" in error_line(
        memwb("import", src, "--db", db, "--format", "csv"))
    assert not Path(db).exists()


# -- a database that is not there or not a database ---------------------------------------
READ_COMMANDS = [
    ["threads"], ["runs"], ["inspect", "support-3-forgot"], ["replay", "support-3-forgot"],
    ["counterfactual", "support-3-forgot", "--subtract", "all"],
    ["why", "support-3-forgot", "--seq", "1"], ["diff", "support-3-forgot", "support-3-fixed"],
    ["erase", "--thread", "support-1"],
]


@pytest.mark.parametrize("args", READ_COMMANDS, ids=lambda a: a[0])
def test_missing_database(args: list[str], tmp_path: Path) -> None:
    missing = tmp_path / "nothing.duckdb"
    line = error_line(memwb(*args, "--db", str(missing)))
    assert f"database '{missing}' does not exist" in line
    assert not missing.exists()


def test_default_database_comes_from_env(demo_db: str, monkeypatch: pytest.MonkeyPatch,
                                         tmp_path: Path) -> None:
    monkeypatch.setenv("MEMWB_DB", demo_db)
    assert "support-3-forgot" in ok(memwb("runs", "--thread", "support-3"))
    monkeypatch.delenv("MEMWB_DB")
    monkeypatch.chdir(tmp_path)  # no demo database here
    assert "build it with `memwb demo`" in error_line(memwb("threads"))


def test_not_a_database_and_bad_url(tmp_path: Path) -> None:
    junk = tmp_path / "junk.duckdb"
    junk.write_text("not a database")
    assert "is not a valid DuckDB or SQLite database file" in error_line(
        memwb("threads", "--db", str(junk)))
    assert "unknown storage URL scheme 'foo'" in error_line(
        memwb("threads", "--db", "foo://bar"))


# -- a CLI that cannot hurt you (#14.6) ---------------------------------------------------
def _foreign_sqlite(path: Path) -> bytes:
    import sqlite3

    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    conn.execute("INSERT INTO notes (body) VALUES ('keep me')")
    conn.commit()
    conn.close()
    return path.read_bytes()


def test_demo_refuses_to_overwrite_what_is_not_a_demo_database(
        tmp_path: Path, db_copy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # the build runs in its own process (the library never imports the demo data):
    # a refusal must come before it starts, so nothing is ever replaced
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes")
    for flags in ([], ["--if-absent"]):
        line = error_line(memwb("demo", "--db", str(notes), "--embedder", "hashing", *flags))
        assert f"refusing to overwrite '{notes}'" in line and "not a demo database" in line
    assert notes.read_text() == "my notes"
    sqlite_file = tmp_path / "app.duckdb"  # a foreign SQLite file with a DuckDB name
    before = _foreign_sqlite(sqlite_file)
    assert "not a demo database" in error_line(memwb("demo", "--db", str(sqlite_file)))
    assert sqlite_file.read_bytes() == before
    # ours but not a demo: an imported database without the demo runs
    ours = tmp_path / "mine.duckdb"
    DuckDBStorage(str(ours)).close()
    assert "lacks the demo runs" in error_line(memwb("demo", "--db", str(ours)))
    # a demo database may be rebuilt: --if-absent leaves it, without is the build
    assert "already at" in ok(memwb("demo", "--db", db_copy, "--if-absent"))


@pytest.mark.parametrize("command", [["threads"], ["erase", "--thread", "support-1"],
                                     ["demo"], ["ui"]], ids=lambda c: c[0])
def test_empty_db_is_an_error_never_the_env_database(command: list[str], db_copy: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMWB_DB", db_copy)
    monkeypatch.setattr(subprocess, "call", lambda cmd, env, **_: pytest.fail("ui started"))
    before = Path(db_copy).read_bytes()
    for empty in ("", "  "):
        assert "--db is empty" in error_line(memwb(*command, "--db", empty))
    assert Path(db_copy).read_bytes() == before


def test_tilde_is_expanded_by_every_command(demo_db: str, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    shutil.copy(demo_db, tmp_path / "home.duckdb")
    for args in (["threads"], ["runs"], ["inspect", "support-3-forgot"],
                 ["replay", "support-3-forgot"], ["diff", "support-3-forgot", "support-3-fixed"],
                 ["why", "support-3-forgot", "--seq", "1"]):
        ok(memwb(*args, "--db", "~/home.duckdb"))
        ok(memwb(*args, "--db", "duckdb://~/home.duckdb"))
    monkeypatch.setenv("MEMWB_DB", "~/home.duckdb")
    assert "support-3-forgot" in ok(memwb("runs"))
    calls: list[list[str]] = []
    monkeypatch.setattr(subprocess, "call", lambda cmd, env, **_: calls.append(cmd) or 0)
    ok(memwb("ui", "--db", "~/home.duckdb"))
    assert calls[0][-2:] == ["--db", str(tmp_path / "home.duckdb")]
    assert not (Path.cwd() / "~").exists()


@pytest.mark.parametrize("port", ["70000", "0", "-1", "65536", "eighty"])
def test_ui_port_is_validated_in_one_line(port: str, demo_db: str,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(subprocess, "call", lambda cmd, env, **_: pytest.fail("ui started"))
    line = error_line(memwb("ui", "--db", demo_db, "--port", port))
    assert "--port" in line
    assert error_line(memwb("ui", "--db", demo_db, "--port", port)).startswith("error: ")


def test_usage_errors_are_one_error_line_with_exit_1(demo_db: str) -> None:
    for args in (["threads", "--nope"], ["no-such-command"], ["inspect"],
                 ["runs", "--db"], ["why", "r", "--seq", "x"]):
        res = memwb(*args)
        error_line(res)
        assert res.exit_code == 1, args
        assert "Usage:" not in res.output


def test_help_still_works() -> None:
    assert "Usage:" in ok(memwb("--help"))
    assert "--read-only" in ok(memwb("ui", "--help"))
    res = memwb()  # no arguments: the help, not an error
    assert "Commands" in res.stdout


@pytest.mark.parametrize("repeats", ["0", "21", "-3", "1000000"])
def test_counterfactual_repeats_is_bounded(repeats: str, db_copy: str) -> None:
    line = error_line(memwb("counterfactual", "support-3-forgot", "--db", db_copy,
                            "--subtract", "all", "--repeats", repeats))
    assert "--repeats" in line and ("less than or equal to 20" in line
                                    or "greater than or equal to 1" in line), line


HOSTILE = "\x1b]0;pwned\x07\x1b[2J\x1b[31mred\r\x9b31mc1\u202egnp.exe\x00"


def test_terminal_control_characters_are_escaped(db_copy: str) -> None:
    storage = DuckDBStorage(db_copy)
    try:
        from memory_core.types import AppendRow, Message

        t = storage.memory.create_thread(resource_id="cust-anna", thread_id="evil\x1b[2J")
        storage.memory.append_messages(t.id, [AppendRow(message=Message(content=HOSTILE))])
        t2 = storage.memory.create_thread(resource_id="cust-\x1b[31manna", title=HOSTILE)
    finally:
        storage.close()
    outputs = [ok(memwb("threads", "--db", db_copy)),
               ok(memwb("threads", "--db", db_copy, "--resource", "cust-\x1b[31manna")),
               error_line(memwb("runs", "--db", db_copy, "--thread", "nope\x1b[2J\nerror: x")),
               error_line(memwb("inspect", "ghost\x07\r", "--db", db_copy))]
    for out in outputs:
        for bad in ("\x1b", "\x07", "\r", "\x9b", "\u202e", "\x00"):
            assert bad not in out, (bad, out)
    assert "\\x1b[2J" in outputs[0] and "evil" in outputs[0]
    assert t2.id in outputs[1]
    assert "\\x1b[2J\\x0aerror: x" in outputs[2]  # still one line
    assert "ghost\\x07\\x0d" in outputs[3]


def test_json_output_escapes_c1_controls(demo_db: str) -> None:
    import io
    from contextlib import redirect_stdout

    from memory_core.cli import emit_json

    buf = io.StringIO()
    with redirect_stdout(buf):
        emit_json({"a": HOSTILE})
    text = buf.getvalue()
    assert json.loads(text) == {"a": HOSTILE}
    for bad in ("\x1b", "\x07", "\r", "\x9b", "\u202e", "\x00"):
        assert bad not in text


READ_ONLY_COMMANDS = [["threads"], ["runs"], ["inspect", "r1"], ["replay", "r1"],
                      ["why", "r1", "--text", "x"], ["diff", "r1", "r2"]]


@pytest.mark.parametrize("args", [*READ_ONLY_COMMANDS,
                                  ["counterfactual", "r1", "--subtract", "all"],
                                  ["erase", "--thread", "t"]], ids=lambda a: a[0])
def test_no_command_touches_a_foreign_sqlite_file(args: list[str], tmp_path: Path) -> None:
    foreign = tmp_path / "app.db"
    before = _foreign_sqlite(foreign)
    for url in (f"sqlite://{foreign}", str(foreign)):
        line = error_line(memwb(*args, "--db", url))
        assert "is not a Memory Workbench database" in line, line
    assert foreign.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db"]  # no -wal, no -shm


@pytest.mark.parametrize("args", READ_ONLY_COMMANDS, ids=lambda a: a[0])
def test_no_command_touches_a_foreign_duckdb_file(args: list[str], tmp_path: Path) -> None:
    import duckdb

    foreign = tmp_path / "app.duckdb"
    conn = duckdb.connect(str(foreign))
    conn.execute("CREATE TABLE notes (body VARCHAR)")
    conn.close()
    before = foreign.read_bytes()
    assert "is not a Memory Workbench database" in error_line(
        memwb(*args, "--db", str(foreign)))
    assert foreign.read_bytes() == before


def test_engine_mismatch_is_one_error(tmp_path: Path, demo_db: str) -> None:
    foreign = tmp_path / "app.db"
    _foreign_sqlite(foreign)
    assert "is a sqlite file, not duckdb" in error_line(
        memwb("threads", "--db", f"duckdb://{foreign}"))
    assert "is a duckdb file, not sqlite" in error_line(
        memwb("threads", "--db", f"sqlite://{demo_db}"))


def test_a_bare_path_to_our_sqlite_database_opens_as_sqlite(tmp_path: Path) -> None:
    from memory_core.storage.sqlite import SQLiteStorage

    path = tmp_path / "ours.db"
    s = SQLiteStorage(str(path))
    s.memory.create_thread(resource_id="r", thread_id="t-sqlite")
    s.close()
    assert "t-sqlite" in ok(memwb("threads", "--db", str(path)))


def test_ui_serves_every_db_given_and_read_only(demo_db: str, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []
    monkeypatch.setattr(subprocess, "call", lambda cmd, env, **_: calls.append(cmd) or 0)
    other = tmp_path / "other.duckdb"
    shutil.copy(demo_db, other)
    res = memwb("ui", "--db", demo_db, "--db", str(other), "--read-only")
    ok(res)
    assert calls[0][calls[0].index("--"):] == ["--", "--db", demo_db, "--db", str(other),
                                               "--read-only"]
    assert "serving demo, other" in res.stderr and "(read-only)" in res.stderr
    # a directory is served whole; an empty one (or one without databases) is an error
    ok(memwb("ui", "--db", str(tmp_path)))
    assert calls[1][-2:] == ["--db", str(tmp_path)]
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("x")
    assert "holds no DuckDB or SQLite database" in error_line(memwb("ui", "--db", str(empty)))


def test_ui_refuses_a_foreign_database(tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(subprocess, "call", lambda cmd, env, **_: pytest.fail("ui started"))
    foreign = tmp_path / "app.db"
    before = _foreign_sqlite(foreign)
    assert "is not a Memory Workbench database" in error_line(
        memwb("ui", "--db", str(foreign)))
    assert foreign.read_bytes() == before


@pytest.mark.postgres
def test_no_command_touches_a_foreign_postgres_schema(tmp_path: Path) -> None:
    import psycopg
    from psycopg import sql

    from tests.pg_server import drop_schema, require_postgres_dsn, schema_for

    dsn = require_postgres_dsn()
    foreign, missing = schema_for(dsn, tmp_path / "foreign"), schema_for(dsn, tmp_path / "m")
    drop_schema(dsn, missing)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(foreign)))
        conn.execute(sql.SQL("CREATE TABLE {}.notes (body text)").format(
            sql.Identifier(foreign)))

    def tables(schema: str) -> list[str]:
        with psycopg.connect(dsn) as conn:
            return [r[0] for r in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
                (schema,))]

    for schema in (foreign, missing):
        url = f"{dsn}?schema={schema}"
        for args in [*READ_ONLY_COMMANDS, ["erase", "--thread", "t"],
                     ["counterfactual", "r1", "--subtract", "all"]]:
            line = error_line(memwb(*args, "--db", url))
            assert "is not a Memory Workbench database" in line, line
    assert tables(foreign) == ["notes"]
    with psycopg.connect(dsn) as conn:  # not even an empty schema was created
        assert conn.execute("SELECT count(*) FROM information_schema.schemata "
                            "WHERE schema_name = %s", (missing,)).fetchone() == (0,)
    # and ours opens
    from memory_core.storage.postgres import PostgresStorage

    ours = schema_for(dsn, tmp_path / "ours")
    s = PostgresStorage(dsn, schema=ours)
    s.memory.create_thread("pg-thread", resource_id="r")
    s.close()
    assert "pg-thread" in ok(memwb("threads", "--db", f"{dsn}?schema={ours}"))


@pytest.mark.parametrize("what", ["fifo", "no such user", "too long", "file as folder"])
def test_a_db_path_the_system_refuses_is_one_error_line(what: str, tmp_path: Path) -> None:
    """A FIFO would hang every command that opened it; ``~nosuchuser`` and a path the
    system refuses gave tracebacks. Each is one ``error:`` line naming it, exit 1."""
    import os
    import sys

    if what == "fifo":
        db = str(tmp_path / "pipe")
        os.mkfifo(db)
    elif what == "no such user":
        db = "~memwb-no-such-user-here/x.duckdb"
    elif what == "too long":
        db = str(tmp_path / ("a" * 300) / "x.duckdb")
    else:
        (tmp_path / "plain").write_text("x")
        db = str(tmp_path / "plain" / "x.duckdb")
    for command in (["runs"], ["threads"], ["verify", "--all"]):
        done = subprocess.run([sys.executable, "-m", "memory_core.cli", *command, "--db", db],
                              capture_output=True, text=True, timeout=60,
                              cwd=Path(__file__).resolve().parents[1])
        assert done.returncode == 1, (command, done.stdout, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error:"), done.stderr
        assert "Traceback" not in done.stderr


@pytest.mark.parametrize("url", ["http://[::1", "http://[::1/v1"])
def test_a_malformed_base_url_or_upstream_is_refused_by_name(url: str) -> None:
    from memory_core.capture.server import validate_upstream
    from memory_core.errors import InvalidInputError
    from memory_core.models.openai_chat import OpenAIChatModel

    with pytest.raises(InvalidInputError, match=r"\[::1"):
        validate_upstream(url)
    with pytest.raises(InvalidInputError, match=r"\[::1"):
        OpenAIChatModel(base_url=url, model="m", environ={})


def _damaged_db(tmp_path: Path, how: str) -> str:
    """A SQLite database of two Runner runs with one value edited behind our back."""
    import sqlite3

    from tests.hostile.harness import two_runs_sqlite

    path = tmp_path / "damaged.db"
    two_runs_sqlite(path)
    con = sqlite3.connect(path)
    with con:
        if how == "journal value":
            con.execute("UPDATE journal SET value = '{not json' WHERE key = 'r2:memctx'")
        else:
            con.execute("UPDATE runs SET started_at = 'yesterday' WHERE run_id = 'r2'")
    con.close()
    return f"sqlite:///{path}"


@pytest.mark.parametrize("how", ["journal value", "timestamp"])
def test_a_damaged_database_is_one_error_line_in_every_command(how: str,
                                                               tmp_path: Path) -> None:
    """A journal value that is not JSON or a time that is not one gave tracebacks in
    inspect, why, diff, counterfactual, runs, threads and verify (issue 33 point 8)."""
    db = _damaged_db(tmp_path, how)
    for command in (["inspect", "r2"], ["why", "r2", "--text", "code"], ["diff", "r1", "r2"],
                    ["counterfactual", "r2", "--subtract", "all", "--model", "reader"],
                    ["runs"], ["threads"], ["verify", "--all"], ["replay", "r2"]):
        result = CliRunner().invoke(app, [*command, "--db", db])
        if how == "journal value" and command[0] in ("runs", "threads"):
            assert result.exit_code == 0, (command, result.output)  # they read no record
            continue
        assert result.exit_code == 1, (command, result.output)
        assert isinstance(result.exception, SystemExit), (command, result.exception)
        assert "Traceback" not in result.output
        assert "error:" in result.output or "tampered" in result.output, result.output


# -- whatif -------------------------------------------------------------------------------
def test_whatif_reports_the_runs_a_setting_would_change(demo_db: str) -> None:
    out = ok(memwb("whatif", "--db", demo_db, "--thread", "support-3",
                   "--set", "recall.threshold=0.0", "--set", "recall.top_k=10"))
    assert "support-3-forgot" in out and "changed" in out
    assert out.strip().splitlines()[-1].startswith("With recall.threshold = 0.0, recall.top_k = 10,")
    data = json.loads(ok(memwb("whatif", "--db", demo_db, "--run", "support-3-forgot",
                               "--set", "recall.threshold=0.0", "--set", "recall.top_k=10",
                               "--json")))
    run = data["runs"][0]
    assert run["status"] == "changed" and run["tokens_after"]["recalled"] > 0
    assert {c["lane"] for c in run["lanes"]} == {"recalled"}
    # each recalled message entering says its rank and score
    assert re.search(r"\n  \+ recalled +support-\d+:\d+  rank \d+, score \d\.\d{3} · ", out), out
    none = ok(memwb("whatif", "--db", demo_db, "--thread", "support-3", "--set", "recent_n=6"))
    assert " 0 of " in none and "changed" not in none.splitlines()[0]


def test_whatif_errors_are_one_line(demo_db: str) -> None:
    assert error_line(memwb("whatif", "--db", demo_db)) == "error: give at least one --set key=value"
    assert "treshold" in error_line(memwb("whatif", "--db", demo_db,
                                          "--set", "recall.treshold=0.5"))
    assert "no-such-run" in error_line(memwb("whatif", "--db", demo_db, "--run", "no-such-run",
                                             "--set", "recent_n=2"))


def test_whatif_ask_re_asks_the_changed_runs_once(db_copy: str) -> None:
    args = ["whatif", "--db", db_copy, "--run", "support-3-forgot", "--set",
            "recall.threshold=0.0", "--set", "recall.top_k=10", "--ask"]
    out = ok(memwb(*args))
    header = out.splitlines()[0]
    assert "answer" in header
    row = next(ln for ln in out.splitlines() if ln.startswith("support-3-forgot"))
    assert any(v in row for v in ("changed", "unchanged", "inconclusive"))
    assert "Re-asked, " in out.splitlines()[-1]
    # the answers themselves, not only the verdict (a trial: only --json held them)
    lines = out.splitlines()
    recorded = next(ln for ln in lines if ln.startswith("  answer, as recorded: "))
    assert recorded.split(": ", 1)[1].strip().startswith("I don't know")
    assert any(ln.startswith("  re-asked with the change: ") and len(ln) > 40 for ln in lines)
    assert any(ln.startswith("  verdict: ") for ln in lines)
    before = cf_records_of(db_copy, "support-3-forgot")
    assert len(before) == 1 and before[0]["variant"]["settings"] == {
        "recall.threshold": 0.0, "recall.top_k": 10}
    assert ok(memwb(*args)) == out  # journaled: asked again, the same record
    assert cf_records_of(db_copy, "support-3-forgot") == before


def test_whatif_ask_exits_1_when_a_run_could_not_be_re_asked(db_copy: str) -> None:
    """A re-ask that failed (the server unreachable) printed "not asked" and exited 0: a
    script took the what-if for done. The report is printed, then exit 1."""
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    args = ["whatif", "--db", db_copy, "--run", "support-3-forgot", "--set",
            "recall.threshold=0.0", "--set", "recall.top_k=10", "--model", "gpt-4o-mini",
            "--base-url", f"http://127.0.0.1:{port}/v1"]
    out = memwb(*args)
    assert out.exit_code == 1, out.output
    row = next(ln for ln in out.stdout.splitlines() if ln.startswith("support-3-forgot"))
    assert "not asked" in row
    assert "could not be re-asked" in out.stdout.splitlines()[-1]
    as_json = memwb(*args, "--json")
    assert as_json.exit_code == 1
    assert json.loads(as_json.stdout)["runs"][0]["ask_error"]


def cf_records_of(db: str, run_id: str) -> list[dict[str, Any]]:
    storage = DuckDBStorage(db, read_only=True)
    try:
        return [v for _, v in cf_records(storage, run_id)]
    finally:
        storage.close()


# -- pin, regress ---------------------------------------------------------------------------
def test_regress_passes_as_recorded_and_fails_when_a_setting_breaks_a_pin(
        db_copy: str) -> None:
    out = ok(memwb("pin", "home-cabinets", "--suite", "kitchen", "--db", db_copy,
                   "--contains", "12 April", "--max-tokens", "5000"))
    assert out.strip() == ("home-cabinets pinned to suite kitchen: answer contains “12 April” "
                           "(any case); prompt ≤ 5000 tokens")
    passed = memwb("regress", "--db", db_copy)
    assert passed.exit_code == 0, passed.output
    assert "kitchen  home-cabinets  answer contains “12 April” (any case)" in passed.output
    broken = memwb("regress", "kitchen", "--db", db_copy, "--set", "recall=off")
    assert broken.exit_code == 1
    assert "FAILED" in broken.output and "1 failed" in broken.output.splitlines()[-1]
    data = json.loads(memwb("regress", "--db", db_copy, "--set", "recall=off",
                            "--json").output)
    assert data["passed"] is False
    assert [c["outcome"] for c in data["checks"]] == ["failed", "passed"]
    assert ok(memwb("pin", "home-cabinets", "--suite", "kitchen", "--db", db_copy,
                    "--remove")).startswith("home-cabinets taken out")
    assert "no regression suite" in error_line(memwb("regress", "--db", db_copy))


def test_pin_errors_are_one_line(db_copy: str) -> None:
    assert "no-such-run" in error_line(memwb("pin", "no-such-run", "--suite", "s",
                                             "--db", db_copy))
    assert "THREAD:SEQ" in error_line(memwb("pin", "support-3-fixed", "--suite", "s",
                                            "--db", db_copy, "--recalled", "support-1"))
    # from a trial: --no-unchanged pinned "answer unchanged"; an empty text said only
    # pydantic's link to its docs; a message that is not stored was pinned
    assert "No such option: --no-unchanged" in memwb(
        "pin", "support-3-fixed", "--suite", "s", "--db", db_copy, "--no-unchanged").output
    assert error_line(memwb("pin", "support-3-fixed", "--suite", "s", "--db", db_copy,
                            "--contains", "")) == "error: a 'contains' expectation needs its text"
    assert error_line(memwb("pin", "support-3-fixed", "--suite", "s", "--db", db_copy,
                            "--recalled", "nosuch:5")) == "error: message nosuch:5 is not stored"
    assert "cannot both contain and not contain '240'" in error_line(memwb(
        "pin", "support-3-fixed", "--suite", "s", "--db", db_copy, "--contains", "240",
        "--not-contains", "240"))
    assert "no regression suite" in error_line(memwb("regress", "--db", db_copy))


def test_a_pin_that_fails_as_recorded_says_so(db_copy: str) -> None:
    result = memwb("pin", "home-cabinets", "--suite", "s", "--db", db_copy,
                   "--max-tokens", "1")
    assert result.exit_code == 0, result.output
    assert "as recorded, “prompt ≤ 1 tokens” does not hold (the prompt has " in result.stderr
    out = memwb("regress", "s", "s", "--db", db_copy)  # a suite named twice: checked once
    assert out.exit_code == 1 and "0 of 1 expectations held" in out.stdout


def test_whatif_lists_the_messages_and_refuses_a_muddled_choice(demo_db: str) -> None:
    out = ok(memwb("whatif", "--db", demo_db, "--run", "support-3-forgot",
                   "--set", "recall.threshold=0.0", "--set", "recall.top_k=10"))
    assert "support-3-forgot:" in out.splitlines()
    assert any(ln.startswith("  + recalled   support-1:") for ln in out.splitlines()), out
    assert "give runs, or a thread or resource, not both" in error_line(memwb(
        "whatif", "--db", demo_db, "--run", "support-3-forgot", "--thread", "support-1",
        "--set", "recent_n=2"))
    assert error_line(memwb("whatif", "--db", demo_db, "--thread", "nosuch", "--set",
                            "recent_n=2")) == "error: thread 'nosuch' does not exist"
    assert "ask too (--ask)" in error_line(memwb("whatif", "--db", demo_db, "--thread",
                                                "support-3", "--set", "recent_n=2",
                                                "--repeats", "3"))


def test_attribute_ranks_the_message_that_carried_the_answer(db_copy: str) -> None:
    out = ok(memwb("attribute", "home-cabinets", "--db", db_copy))
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["rank", "taken", "away"]
    top = lines[1]
    assert top.split()[1] == "kitchen-plans:20" and "changed" in top
    assert "12 April" in top
    assert lines[-1].startswith("1 of ") and "most: kitchen-plans:20" in lines[-1]
    data = json.loads(ok(memwb("attribute", "home-cabinets", "--db", db_copy, "--json",
                               "--lanes")))
    assert {a["kind"] for a in data} == {"message", "lane"}
    assert "nope" in error_line(memwb("attribute", "nope", "--db", db_copy))


def test_span_exports_that_are_no_otlp_are_imported_one_by_one(tmp_path: Path) -> None:
    """Several OTLP exports are joined into one import; two Langfuse exports (read as
    spans too) were sent to that join and refused as "not an OTLP export"."""
    real = IMPORTS / "real"
    files = [str(real / "langfuse-koog-2025-08-26.trace.json"),
             str(real / "langfuse-autogen-2025-06-06.trace.json")]
    out = ok(memwb("import", *files, "--db", str(tmp_path / "two.duckdb")))
    assert all(f"imported {f} (otel)" in out for f in files), out


def test_import_says_each_kind_of_note_a_few_times_then_how_many_more(tmp_path: Path) -> None:
    """A log of thousands of requests may say the same thing of each (here: an answer
    calling a tool its request did not offer): the import printed one line a request.
    Each kind of note is said three times, then how many more and where; every run's
    import record still holds its own."""
    lines = []
    for i in range(10):
        lines.append(json.dumps({"request": {"model": "m", "messages": [
            {"role": "user", "content": f"question {i}"}]}, "response": {"choices": [{
                "message": {"role": "assistant", "content": None, "tool_calls": [{
                    "id": f"call_{i}", "type": "function", "function": {
                        "name": "lookup", "arguments": "{}"}}]}}]}}))
    log = tmp_path / "calls.jsonl"
    log.write_text("\n".join(lines) + "\n")
    db = str(tmp_path / "n.duckdb")
    out = ok(memwb("import", str(log), "--db", db, "--embedder", "none")).splitlines()
    said = [ln for ln in out if "a tool the request did not offer" in ln]
    assert [ln.split(":", 1)[0].strip() for ln in said] == ["line 1", "line 2", "line 3"]
    assert "  … and 7 more like the last, line 4 to line 10" in out
    assert out[-1] == ("  (7 notes not shown: each run's own are in its import record, "
                       "memwb inspect RUN)")
    s = DuckDBStorage(db)
    try:
        last = [r.run_id for r in s.runs.list_runs()][-1]
        assert any("a tool the request did not offer" in n
                   for n in s.runs.get(f"{last}:import")["notes"])
    finally:
        s.close()
    # one more than three is said, not folded ("1 more like the last, line 4 to line 4")
    log.write_text("\n".join(lines[:4]) + "\n")
    out = ok(memwb("import", str(log), "--db", str(tmp_path / "four.duckdb"),
                   "--embedder", "none")).splitlines()
    said = [ln for ln in out if "a tool the request did not offer" in ln]
    assert [ln.split(":", 1)[0].strip() for ln in said] == ["line 1", "line 2", "line 3",
                                                            "line 4"]
    assert not [ln for ln in out if "more like the last" in ln or "not shown" in ln]


def test_a_command_that_writes_on_a_read_only_file_says_so(tmp_path: Path) -> None:
    """A file on a read-only file system (a mount; as root, permissions do not stop a
    write): a command that writes said "setup failed: cannot open …" (a trial of
    regress --set). It says the file cannot be written and that the command writes."""
    import sys

    fixtures = Path(__file__).parent / "fixtures" / "imports"
    folder = tmp_path / "ro"
    folder.mkdir()
    db = folder / "ro.duckdb"
    ok(memwb("import", str(fixtures / "openai_keyed.jsonl"), "--db", str(db),
             "--embedder", "none"))
    script = (f"mount --bind {folder} {folder} && mount -o remount,ro,bind {folder} && "
              f"{sys.executable} -m memory_core.cli import {fixtures / 'otel_genai.json'} "
              f"--db {db} --embedder none")
    done = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    if "unshare" in done.stderr or "mount:" in done.stderr:
        pytest.skip(f"no private read-only mount here: {done.stderr.strip()[:200]}")
    assert done.returncode != 0, done.stdout
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"error: '{db}' cannot be written (") and line.endswith(
        "this command writes to its database: give it a copy it may write to, or run what "
        "only reads"), line


def test_whatif_says_a_reason_shared_by_many_runs_once(demo_db: str) -> None:
    """Over many runs one reason (here: no token budget to reorder) was printed in full
    on every row (a trial: a 230-character reason 24 times); it is said on the first
    run's row, and the others point there."""
    out = ok(memwb("whatif", "--db", demo_db, "--thread", "support-3",
                   "--set", "token_priority=recent,recalled")).splitlines()
    rows = [ln for ln in out[1:] if ln.startswith("support-3")]
    assert len(rows) > 2 and all(" cannot " in ln for ln in rows)
    first = rows[0].split()[0]
    assert rows[0].rstrip().endswith("(give token_budget too)")
    assert all(ln.rstrip().endswith(f"as for {first}") for ln in rows[1:])


@pytest.mark.slow
@pytest.mark.skipif(not __import__("sys").platform.startswith("linux"),
                    reason="the kernel's parent-death signal is Linux's")
def test_ui_stopped_with_sigterm_stops_its_server(demo_db: str) -> None:
    """`memwb ui` runs Streamlit as a child: stopped with SIGTERM (a service manager, a
    script's kill), it left the server serving on the port, and the next `memwb ui` on
    that port said "serving …" and then failed for the port."""
    import signal
    import socket
    import sys
    import time

    from tests.browser.server import free_port

    def serving(port: int) -> bool:
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "memory_core.cli", "ui", "--db", demo_db,
                             "--port", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not serving(port) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert serving(port), "the workbench never served"
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 30
        while serving(port) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not serving(port), "the Streamlit server outlived memwb ui"
    finally:
        proc.kill()
