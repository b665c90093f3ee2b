"""HTTP-interaction JSON documents that list their calls (Mastra's ``recordings``,
``interactions``, …): the list told by any one of its calls, an item that is none a note."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memory_core.importers import import_text
from memory_core.storage.inmemory import InMemoryStorage

REAL = Path(__file__).parent / "fixtures" / "imports" / "real"


def _load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _imported(doc: Any) -> tuple[InMemoryStorage, Any]:
    s = InMemoryStorage()
    return s, import_text(s, json.dumps(doc, indent=2), name="x.cassette.json")


def test_any_listed_call_tells_the_list_and_one_that_is_none_is_a_note() -> None:
    """The same for the other documents that list their calls (Mastra's
    ``recordings``): a first one edited past reading was the refusal of the file."""
    doc = _load(REAL / "mastra-provider-acceptance-anthropic.json")
    calls = len(doc["recordings"])
    doc["recordings"][0]["request"].pop("url")
    s, report = _imported(doc)
    assert len(report.runs_created) == calls - 1
    assert ("file: recording 0", "not imported: its request has no URL (no 'url', 'uri', "
            "'urlPath', 'urlPattern', 'urlPathPattern', 'path')") in {
        (k.where, k.reason) for k in report.skipped}
