"""Writes one named section of bench/RESULTS.md, leaving the others untouched, so
several benchmarks (owned by different people) can share the file."""

from __future__ import annotations

from pathlib import Path

RESULTS = Path(__file__).with_name("RESULTS.md")
HEADER = ("# Benchmark results\n\n"
          "Each section is written by its benchmark script (the rerun command is in the "
          "section); numbers are from the 2-core CI-class machine unless said otherwise.\n")


def replace_section(title: str, body: str, path: Path = RESULTS) -> None:
    """Replace (or append) the ``## title`` section with ``body``."""
    text = path.read_text(encoding="utf-8") if path.exists() else HEADER
    marker = f"## {title}\n"
    block = f"{marker}\n{body.rstrip()}\n"
    start = text.find(marker)
    if start < 0:
        text = text.rstrip() + "\n\n" + block
    else:
        end = text.find("\n## ", start + len(marker))
        text = text[:start] + block + (text[end:] if end >= 0 else "")
    path.write_text(text, encoding="utf-8")
