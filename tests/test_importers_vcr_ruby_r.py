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
