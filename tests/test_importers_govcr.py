"""Go's go-vcr cassettes (charmbracelet/fantasy's, Apache-2.0): the request's URL under
``url`` (vcrpy writes ``uri``), the response's status as ``code: 200`` beside ``status:
"200 OK"``, the body a plain string. The real file is in the corpus
(tests/test_importers_real.py); here it is changed the hostile way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from memory_core.errors import ImportFormatError
from memory_core.importers import import_text
from memory_core.storage.inmemory import InMemoryStorage

REAL = Path(__file__).parent / "fixtures" / "imports" / "real"
GEMINI = REAL / "fantasy-TestGoogleCommon-gemini-2.5-flash-multi_tool.yaml"


def _cassette(change: Any) -> str:
    doc = yaml.safe_load(GEMINI.read_text(encoding="utf-8"))
    change(doc["interactions"])
    return yaml.safe_dump(doc)


def test_a_failed_call_s_code_is_read_and_its_run_failed() -> None:
    def fail(items: list[dict[str, Any]]) -> None:
        items[1]["response"].update(code=503, status="503 Service Unavailable",
                                    body='{"error": {"message": "overloaded"}}')
    s = InMemoryStorage()
    report = import_text(s, _cassette(fail), name="c.yaml")
    first, second = (s.runs.require_run(r) for r in report.runs_created)
    assert first.status == "completed"
    assert second.status == "failed" and "overloaded" in (second.error or "")


def test_a_status_given_only_as_its_line_is_read() -> None:
    def line_only(items: list[dict[str, Any]]) -> None:
        del items[1]["response"]["code"]
        items[1]["response"]["status"] = "429 Too Many Requests"
    s = InMemoryStorage()
    report = import_text(s, _cassette(line_only), name="c.yaml")
    assert s.runs.require_run(report.runs_created[1]).status == "failed"


def test_a_status_that_is_no_code_is_refused_naming_it() -> None:
    """A failed call must not be read as an answer: that interaction is left out,
    noted, and the others imported; a cassette of only such calls is refused."""
    said = "the response's status must be an HTTP status code, got 'fine'"

    def garbled(items: list[dict[str, Any]]) -> None:
        del items[0]["response"]["code"]
        items[0]["response"]["status"] = "fine"
    report = import_text(InMemoryStorage(), _cassette(garbled), name="c.yaml")
    assert len(report.runs_created) == 1
    assert ("interaction 1", f"not imported: {said}") in [
        (k.where, k.reason) for k in report.skipped]

    def only_it(items: list[dict[str, Any]]) -> None:
        garbled(items)
        del items[1:]
    with pytest.raises(ImportFormatError, match=f"interaction 1: {said}"):
        import_text(InMemoryStorage(), _cassette(only_it), name="c.yaml")


def test_a_request_without_a_url_is_skipped_saying_so() -> None:
    def no_url(items: list[dict[str, Any]]) -> None:
        del items[0]["request"]["url"]
    report = import_text(InMemoryStorage(), _cassette(no_url), name="c.yaml")
    assert [(n.where, n.reason) for n in report.skipped][:1] == [
        ("interaction 1", "its request (POST) records no URL (no 'uri' or 'url')")]
