"""Ruby's VCR and R's vcr cassettes (``http_interactions``, the format vcrpy took its
shape from): a body that is not UTF-8 as Psych's ``!binary`` (base64), ``recorded_at``
as an HTTP date (Ruby) or a YAML time (R), ``status: 200`` and headers as strings (R).
The real files are in the corpus (tests/test_importers_real.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory_core.errors import ImportFormatError
from memory_core.importers import detect_format, import_file, import_text
from memory_core.storage.inmemory import InMemoryStorage

REAL = Path(__file__).parent / "fixtures" / "imports" / "real"
RUBY = REAL / "rubyllm-anthropic_tools_multi-turn_streaming.yml"
R = REAL / "ellmer-anthropic-tool.yml"


@pytest.mark.parametrize(("path", "first"), [
    (RUBY, datetime(2026, 8, 19, 14, 34, 53, tzinfo=UTC)),  # "Wed, 19 Aug 2026 …"
    (R, datetime(2026, 8, 2, 17, 44, 4, tzinfo=UTC)),  # recorded_at: 2026-08-02 17:44:04
])
def test_the_runs_are_dated_by_recorded_at(path: Path, first: datetime) -> None:
    s = InMemoryStorage()
    report = import_file(s, path)
    assert s.runs.require_run(report.runs_created[0]).started_at == first
    assert not report.undated


def test_a_binary_body_is_read_as_its_bytes() -> None:
    text = RUBY.read_text(encoding="utf-8")
    assert "!binary" in text and detect_format(text) == "openai"
    # the streamed answer of the 2nd call is the "!binary" one: its text is stored
    s = InMemoryStorage()
    report = import_text(s, text, name="c.yml")
    said = [m.text() for m in s.memory.get_messages(report.threads_created[0])]
    assert "The weather in Berlin is currently:\n- **Temperature:** 15°C" in said[3]


def test_a_binary_body_that_is_no_base64_is_one_clear_error() -> None:
    text = RUBY.read_text(encoding="utf-8")
    start = text.index("!binary |-")
    end = text.index("\n", text.index("\n", start) + 1)
    broken = text[:start] + "!binary |-\n        ***not base64***" + text[end:]
    with pytest.raises(ImportFormatError, match="invalid YAML cassette"):
        import_text(InMemoryStorage(), broken, name="c.yml")


def test_r_vcr_before_2_0_dates_by_its_gmt_text_and_a_bad_time_is_a_note() -> None:
    """lemur's cassettes (R's vcr 1.x) write ``recorded_at: 2024-10-08 05:33:27 GMT``:
    refused as "not an ISO 8601 time". It is the call's time when the body has none; a
    time nothing reads leaves the call undated, noted, rather than refusing it."""
    text = (REAL / "lemur-openaichat.yml").read_text(encoding="utf-8")
    assert "recorded_at: 2024-10-08 05:33:27 GMT" in text
    bodiless = text.replace('"created": 1728365607,', "")  # (no time in the body)
    s = InMemoryStorage()
    report = import_text(s, bodiless, name="c.yml")
    assert s.runs.require_run(report.runs_created[0]).started_at == datetime(
        2024, 10, 8, 5, 33, 27, tzinfo=UTC)
    s = InMemoryStorage()
    report = import_text(s, bodiless.replace("2024-10-08 05:33:27 GMT", "last Tuesday"),
                         name="c.yml")
    assert len(report.runs_created) == 1 and report.undated
    notes = s.runs.get(f"{report.runs_created[0]}:import")["notes"]
    assert any("its recorded time 'last Tuesday' is no time the importer reads: the call "
               "is undated" in n for n in notes), notes


def test_ollama_s_load_and_unload_requests_are_no_call() -> None:
    text = (REAL / "lemur-ollama.yml").read_text(encoding="utf-8")
    unload = text.replace('''string: '{"model":"llama3.2"}\'''',
                          '''string: '{"model":"llama3.2","keep_alive":0}\'''')
    assert unload != text
    for doc, verb in ((text, "load"), (unload, "unload")):
        report = import_text(InMemoryStorage(), doc, name="o.yml")
        assert len(report.runs_created) == 1
        assert [k.reason for k in report.skipped] == [
            f"Ollama's request to {verb} the model (http://localhost/api/generate naming "
            "no prompt or messages): no model call"]
