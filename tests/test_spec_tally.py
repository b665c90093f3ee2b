"""docs/spec_tally.md names only tests that exist: every ``file::test`` (and ``::test``
continuing the last file named in the same cell) resolves to a test function; a file is
under tests/ or, for the public conformance suite, memory_core/testing/conformance."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TALLY = (ROOT / "docs" / "spec_tally.md").read_text(encoding="utf-8")


def test_every_test_the_tally_names_exists() -> None:
    missing = []
    named = 0
    for line in TALLY.splitlines():
        current: str | None = None
        for path, name in re.findall(r"`((?:tests|memory_core)/[\w/]+\.py)?::(\w+)`",
                                     line):
            current = path or current
            assert current, f"'::{name}' has no file before it: {line}"
            source = (ROOT / current).read_text(encoding="utf-8")
            named += 1
            if not re.search(rf"^def {name}\(", source, re.M):
                missing.append(f"{current}::{name}")
    assert named > 50 and not missing, missing
