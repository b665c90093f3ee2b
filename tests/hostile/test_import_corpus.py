"""The hostile-input corpus through every importer entry point (issue 33, points 6 and 8
and "Done when"): each file ``memwb import`` is given, alone and as one of several OTLP
exports, with ``--format`` and without, ends in one ``error:`` line and exit 1 under a
3 GB address-space cap, and the database it was imported into is unchanged; the
wrong-type sweeps run every record format of the registry, and OTLP exports at every
depth, through the library's entry points (``import_text``), where the only error
allowed is one line naming the record."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from memory_core.errors import MemoryCoreError
from memory_core.importers import import_otel_files, import_text
from memory_core.importers.registry import FORMATS
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.storage.sqlite import SQLiteStorage
from tests.hostile.corpus import FIX, import_files, record_samples, wrong_types
from tests.hostile.harness import content_hash, memwb, no_traceback, refused

#: the cases the quick tier runs (each a ~1 s subprocess); the rest are marked slow
QUICK = {"json-deep-array", "jsonl-huge-int", "yaml-alias-bomb", "top-level-null",
         "invalid-utf8", "cassette-br-body", "otlp-1e999", "empty"}
BOMBS = ("bomb-gzip", "bomb-bzip2", "bomb-xz", "cassette-gzip-bomb-body",
         "cassette-deflate-bomb-body")
CASES = ["bomb-gzip", "bomb-bzip2", "bomb-xz", "bomb-zstd-file", "yaml-alias-bomb",
         "yaml-deep-block", "yaml-deep-flow", "yaml-deep-mapping", "json-deep-array",
         "json-deep-object", "jsonl-deep-line", "cassette-deep-body", "otlp-deep-value",
         "nul-byte", "nul-escape", "lone-surrogate", "invalid-utf8", "empty", "whitespace",
         "bom-only", "binary-noise", "cassette-br-body", "cassette-zstd-body",
         "cassette-gzip-bomb-body", "cassette-deflate-bomb-body", "cassette-not-yaml",
         "aider-no-role", "aider-impossible-time",
         *(f"{c}-{n}" for c in ("jsonl", "otlp", "cassette", "har")
           for n in ("1e999", "minus-1e999", "huge-int")),
         *(f"top-level-{n}" for n in ("number", "string", "null", "true",
                                      "list-of-numbers", "list-of-lists")),
         "truncated-otel_genai",
         "truncated-langsmithsdk-langsmith_py_wrap_openai_",
         "truncated-mirascope-ts-handles-refusal-for-stream",
         "truncated-openllmetry-test_chat_tool_calls"]


# a JSON-lines log cut off while a line was written: its whole lines are imported, the
# cut one noted (one bad element of a file is a note, not the refusal of the file)
CUT_LOGS = ["truncated-openai_support"]


def _marked(name: str) -> object:
    return pytest.param(name, id=name,
                        marks=() if name in QUICK else (pytest.mark.slow,))


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    made = import_files(tmp_path_factory.mktemp("hostile"))
    assert sorted(made) == sorted(CASES + CUT_LOGS), "the corpus and the cases differ"
    return made


def _holding_one_import(path: Path) -> Path:
    """A database (SQLite, or DuckDB for ``*.duckdb``) holding one good import, which
    no refused import may change."""
    from memory_core.storage.duckdb import DuckDBStorage

    s = DuckDBStorage(str(path)) if path.suffix == ".duckdb" else SQLiteStorage(str(path))
    try:
        import_text(s, (FIX / "openai_support.jsonl").read_text(encoding="utf-8"))
    finally:
        s.close()
    return path


@pytest.fixture(scope="module")
def base_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _holding_one_import(tmp_path_factory.mktemp("base") / "base.db")


@pytest.fixture
def db(base_db: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "db.db"
    shutil.copy(base_db, copy)
    return copy


@pytest.mark.parametrize("case", [_marked(c) for c in CASES])
def test_each_hostile_file_is_one_error_line_and_changes_nothing(
        case: str, files: dict[str, Path], db: Path) -> None:
    before = content_hash(db)
    line = refused(memwb("import", str(files[case]), "--db", f"sqlite:///{db}"))
    assert str(files[case]) in line
    assert content_hash(db) == before


@pytest.mark.parametrize("case", CUT_LOGS)
def test_a_log_cut_off_mid_line_imports_its_whole_lines(case: str, files: dict[str, Path],
                                                         tmp_path: Path) -> None:
    data = files[case].read_text(encoding="utf-8")
    whole, cut = data.count("\n"), len(data.splitlines())
    assert cut == whole + 1  # (the last line is cut)
    done = memwb("import", str(files[case]), "--db", f"sqlite:///{tmp_path / 'x.db'}")
    no_traceback(done.stdout, done.stderr)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"  line {cut}: not imported: invalid JSON" in done.stdout
    assert f", {whole} run{'' if whole == 1 else 's'}\n" in done.stdout


@pytest.fixture(scope="module")
def base_duckdb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _holding_one_import(tmp_path_factory.mktemp("base-duckdb") / "base.duckdb")


@pytest.mark.slow
@pytest.mark.parametrize("case", ["bomb-gzip", "yaml-alias-bomb", "json-deep-array",
                                  "otlp-1e999", "jsonl-huge-int", "truncated-otel_genai"])
def test_a_hostile_file_leaves_a_duckdb_database_unchanged(
        case: str, files: dict[str, Path], base_duckdb: Path, tmp_path: Path) -> None:
    db = tmp_path / "db.duckdb"
    shutil.copy(base_duckdb, db)
    before = content_hash(db)
    refused(memwb("import", str(files[case]), "--db", str(db)))
    assert content_hash(db) == before


@pytest.mark.slow
@pytest.mark.parametrize("case", ["otlp-1e999", "otlp-huge-int", "otlp-deep-value",
                                  "bomb-gzip", "truncated-otel_genai"])
def test_a_hostile_file_among_otlp_exports_is_one_error_line(
        case: str, files: dict[str, Path], db: Path) -> None:
    """Files that all look like OTLP exports are imported as one (``import_otel_files``):
    a bad one refuses them all. (Other files are imported one by one, each import its
    own: the CLI says which were imported before the one refused.)"""
    before = content_hash(db)
    refused(memwb("import", str(FIX / "otel_genai.json"), str(files[case]),
                  "--db", f"sqlite:///{db}"))
    assert content_hash(db) == before


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["openai", "otel"])
@pytest.mark.parametrize("case", ["json-deep-object", "jsonl-huge-int", "otlp-minus-1e999",
                                  "binary-noise", "top-level-string", "yaml-deep-flow"])
def test_a_hostile_file_with_a_format_named_is_one_error_line(
        case: str, fmt: str, files: dict[str, Path], db: Path) -> None:
    before = content_hash(db)
    refused(memwb("import", str(files[case]), "--format", fmt, "--db", f"sqlite:///{db}"))
    assert content_hash(db) == before


@pytest.mark.parametrize("what", ["fifo", "too long", "no such user", "folder"])
def test_an_import_file_the_system_refuses_is_one_error_line(what: str, db: Path,
                                                             tmp_path: Path) -> None:
    import os

    if what == "fifo":
        target = str(tmp_path / "pipe.jsonl")
        os.mkfifo(target)
    elif what == "too long":
        target = str(tmp_path / ("a" * 300) / "x.jsonl")
    elif what == "no such user":
        target = "~memwb-no-such-user-here/x.jsonl"
    else:
        target = str(tmp_path)
    before = content_hash(db)
    line = refused(memwb("import", target, "--db", f"sqlite:///{db}", timeout=60))
    if what in ("fifo", "folder"):
        assert line.endswith("is not a regular file"), line
    assert content_hash(db) == before


# -- wrong types at every depth, in-process ---------------------------------------------
def _one_line_or_imported(text: str, *, format: str | None = None) -> None:
    """The import either succeeds or refuses in one line naming where; nothing else."""
    try:
        import_text(InMemoryStorage(), text, format=format)  # type: ignore[arg-type]
    except MemoryCoreError as e:
        assert "\n" not in str(e) and str(e).strip(), repr(e)


@pytest.mark.slow
@pytest.mark.parametrize("fmt", [f.name for f in FORMATS])
def test_every_record_format_survives_wrong_types_at_every_depth(fmt: str) -> None:
    sample = record_samples()[fmt]
    for where, doc in wrong_types(sample, limit=400):
        try:
            _one_line_or_imported(json.dumps(doc) + "\n", format="openai")
        except AssertionError:
            raise
        except Exception as e:  # noqa: BLE001 - the point: name the case that broke
            raise AssertionError(f"{fmt} {where}: {type(e).__name__}: {e}") from e
    for value in ("1", '"s"', "null", "[]", "true"):
        _one_line_or_imported(value + "\n", format="openai")


@pytest.mark.slow
@pytest.mark.parametrize("fixture", ["otel_genai.json", "otel_events.json",
                                     "otel_openinference.json"])
def test_an_otlp_export_survives_wrong_types_at_every_depth(fixture: str) -> None:
    doc = json.loads((FIX / fixture).read_text(encoding="utf-8"))
    for where, bad in wrong_types(doc):
        try:
            _one_line_or_imported(json.dumps(bad), format="otel")
        except AssertionError:
            raise
        except Exception as e:  # noqa: BLE001
            raise AssertionError(f"{fixture} {where}: {type(e).__name__}: {e}") from e


@pytest.mark.parametrize("raw", ["1e999", "-1e999", "9" * 5000, "[" * 5000 + "]" * 5000])
def test_numbers_and_nesting_inside_otlp_attribute_strings_are_one_line(raw: str) -> None:
    """An attribute whose string value is JSON (``gen_ai.input.messages``) holding a
    number no float or int holds, or nesting deeper than Python's parser goes."""
    doc = json.loads((FIX / "otel_genai.json").read_text(encoding="utf-8"))
    attrs = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"]
    for attr in attrs:
        if attr["key"] in ("gen_ai.input.messages", "gen_ai.output.messages"):
            messages = json.loads(attr["value"]["stringValue"])
            text = json.dumps(messages).replace('"parts"', f'"x": {raw}, "parts"', 1)
            bad = json.loads(json.dumps(doc))
            for a in bad["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"]:
                if a["key"] == attr["key"]:
                    a["value"]["stringValue"] = text
            _one_line_or_imported(json.dumps(bad), format="otel")


def test_several_otlp_exports_with_wrong_types_are_one_line(tmp_path: Path) -> None:
    good = FIX / "otel_genai.json"
    doc = json.loads(good.read_text(encoding="utf-8"))
    for i, (_, bad) in enumerate(wrong_types(doc, limit=60)):
        other = tmp_path / f"bad{i}.json"
        other.write_text(json.dumps(bad), encoding="utf-8")
        try:
            import_otel_files(InMemoryStorage(), [good, other])
        except MemoryCoreError as e:
            assert "\n" not in str(e)
