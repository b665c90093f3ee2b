"""Every file of the import corpus (tests/fixtures/imports, with real/ and tracers/)
imports exactly as it did when tests/golden/imports.json was written: the same run ids,
threads, resources and statuses, the same messages, the same journal records — or, for
a file the importer refuses, the same error. A change to how a format is recognised or
read that changes any of it fails here, naming the file and what differs.

The golden file is written by running this module (after checking that the change to
the import is meant): ``.venv/bin/python -m tests.test_importers_golden --write``;
``--show FILE`` prints one file's whole snapshot with the journal values in full."""

from __future__ import annotations

import hashlib
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memory_core.errors import ImportFormatError, InvalidInputError
from memory_core.importers import import_file
from memory_core.storage.inmemory import InMemoryStorage

CORPUS = Path(__file__).parent / "fixtures" / "imports"
GOLDEN = Path(__file__).parent / "golden" / "imports.json"
T0 = datetime(2026, 1, 1, tzinfo=UTC)  # the store's clock: what the file does not date
NOT_RECORDINGS = (".md", ".py")  # the corpus's READMEs and the script that made some


def corpus() -> list[str]:
    """The corpus's files, relative to it, in a stable order."""
    return sorted(p.relative_to(CORPUS).as_posix() for p in CORPUS.rglob("*")
                  if p.is_file() and p.suffix not in NOT_RECORDINGS)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _digest(value: Any) -> str:
    return hashlib.sha256(_canonical(value).encode()).hexdigest()[:16]


def snapshot(name: str, *, full_journal: bool = False) -> dict[str, Any]:
    """What importing ``name`` into a fresh store gives: the report, every run, every
    thread with its messages, and every journal record (its key and its value's
    SHA-256, or with ``full_journal`` the value itself); or the error that refused it."""
    storage = InMemoryStorage(clock=lambda: T0)
    try:
        report = import_file(storage, CORPUS / name)
    except (ImportFormatError, InvalidInputError) as e:
        return {"error": f"{type(e).__name__}: {str(e).replace(str(CORPUS), '<corpus>')}"}
    threads = storage.memory.list_threads()
    return {
        "report": report.model_dump(mode="json"),
        "runs": [r.model_dump(mode="json") for r in storage.runs.list_runs()],
        "threads": [{
            "id": t.id, "resource_id": t.resource_id, "title": t.title,
            "metadata": t.metadata, "parent_thread_id": t.parent_thread_id,
            "messages": [{"seq": m.seq, "run_id": m.run_id,
                          "created_at": m.created_at.isoformat(), "role": m.role,
                          "content": _canonical(m.model_dump(mode="json")["content"]),
                          "metadata": m.metadata}
                         for m in storage.memory.get_messages(t.id)],
        } for t in threads],
        "journal": [[key, value] if full_journal else f"{key} {_digest(value)}"
                    for key, value in storage.runs.list("")],
    }


def _golden() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(GOLDEN.read_text(encoding="utf-8"))
    return data


def _first_difference(got: Any, want: Any, at: str = "") -> str | None:
    """Where ``got`` and ``want`` first differ, as a path, and the two values there."""
    if isinstance(got, dict) and isinstance(want, dict):
        for key in sorted(set(got) | set(want)):
            found = _first_difference(got.get(key), want.get(key), f"{at}.{key}")
            if found:
                return found
        return None
    if isinstance(got, list) and isinstance(want, list):
        for i, (g, w) in enumerate(zip(got, want, strict=False)):
            found = _first_difference(g, w, f"{at}[{i}]")
            if found:
                return found
        if len(got) != len(want):
            return f"{at or 'the whole'}: {len(got)} items, the golden file has {len(want)}"
        return None
    return None if got == want else f"{at}: got {got!r}, the golden file has {want!r}"[:2000]


def test_the_golden_file_covers_the_whole_corpus() -> None:
    assert sorted(_golden()) == corpus(), (
        "the corpus and tests/golden/imports.json name different files: after adding or "
        "removing a fixture, run `.venv/bin/python -m tests.test_importers_golden --write`")


@pytest.mark.parametrize("name", corpus())
def test_the_file_imports_as_the_golden_file_says(name: str) -> None:
    want = _golden().get(name)
    if want is None:
        pytest.fail(f"{name} is not in tests/golden/imports.json (see its module's docstring)")
    got = json.loads(_canonical(snapshot(name)))
    assert got == want, f"{name} imports otherwise: {_first_difference(got, want)}"


def main(argv: list[str]) -> int:
    if argv[:1] == ["--write"]:
        golden = {name: snapshot(name) for name in corpus()}
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(golden, sort_keys=True, indent=1, ensure_ascii=False)
                          + "\n", encoding="utf-8")
        print(f"wrote {GOLDEN} ({len(golden)} files)")
        return 0
    if argv[:1] == ["--show"] and len(argv) == 2:
        print(json.dumps(snapshot(argv[1], full_journal=True), sort_keys=True, indent=1,
                         ensure_ascii=False))
        return 0
    print("usage: python -m tests.test_importers_golden --write | --show FILE",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
