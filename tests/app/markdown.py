"""What a reader sees of the Markdown our labels and captions are made of: backslash
escapes resolved, code spans shown as their content (the tests compare shown text)."""

from __future__ import annotations

import re
import string
from typing import Any

_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)", re.S)


def shown_text(markdown: str) -> str:
    out: list[str] = []
    pos = 0
    while pos < len(markdown):
        ch = markdown[pos]
        if ch == "\\" and pos + 1 < len(markdown) and markdown[pos + 1] in string.punctuation:
            out.append(markdown[pos + 1])  # an escape: the character itself, never a span
            pos += 2
            continue
        m = _SPAN.match(markdown, pos) if ch == "`" else None
        if m is None:
            run = re.match(r"`+", markdown[pos:])  # a backtick run that opens no span
            out.append(run.group() if run else ch)
            pos += len(run.group()) if run else 1
            continue
        body = m.group(2)
        if len(body) > 2 and body.startswith(" ") and body.endswith(" "):
            body = body[1:-1]  # CommonMark strips one padding space each side
        out.append(body)
        pos = m.end()
    return "".join(out)


_TABLE_STYLE = re.compile(r"<style>\.st-key-table-[^<{}]*\{ white-space: nowrap; \} "
                          r"(\.st-key-table-[^<{}]*\{ min-width: \d+em; \} )?"
                          r"\.st-key-table-[^<{}]*\{ overflow-x: auto; \}</style>")
_CELL_SPLIT = re.compile(r"(?<!\\)\|")
_LINK = re.compile(r"^\[(.*)\]\(([^)]*)\)$", re.S)


class Table:
    """A Markdown table a page showed, as a reader sees it: ``columns``, ``rows`` of
    shown text by column (a link's text), ``links`` (a link cell's URL by column) and
    ``right`` (the right-aligned columns)."""

    def __init__(self, markdown: str) -> None:
        lines = markdown.strip().splitlines()
        head, rule, *body = (self._cells(line) for line in lines)
        self.columns = [shown_text(c) for c in head]
        self.right = {c for c, r in zip(self.columns, rule, strict=True) if r.endswith(":")}
        self.rows: list[dict[str, str]] = []
        self.links: list[dict[str, str]] = []
        for cells in body:
            row, links = {}, {}
            for name, cell in zip(self.columns, cells, strict=True):
                m = _LINK.match(cell)
                if m:
                    links[name] = m.group(2)
                    cell = m.group(1)
                row[name] = shown_text(cell)
            self.rows.append(row)
            self.links.append(links)

    @staticmethod
    def _cells(line: str) -> list[str]:
        # a GFM row: split at every unescaped "|"; "\|" is a pipe inside a cell
        parts = _CELL_SPLIT.split(line.strip())[1:-1]
        return [p.strip() for p in parts]

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, column: str) -> list[str]:
        return [r[column] for r in self.rows]

    def frame(self) -> Any:
        """The shown text as a pandas DataFrame (one text column per column)."""
        import pandas as pd

        return pd.DataFrame(self.rows, columns=self.columns, dtype=str)


def is_table(markdown: str) -> bool:
    lines = markdown.strip().splitlines()
    return len(lines) >= 2 and lines[0].startswith("|") and set(lines[1]) <= set("|-: ")


def tables(at: Any) -> list[Table]:
    """Every Markdown table on the page ``at`` (an AppTest, or an element of one)
    shows, in page order."""
    return [Table(m.value) for m in at.markdown if is_table(m.value)]


def raw_html(at: Any) -> list[Any]:
    """The page's HTML elements other than the tables' own styles (app.light_table's
    ``table_style``: a <style> for a table's container and nothing else) and the
    monospace blocks' one fixed style (app.components.MONO_STYLE)."""
    from app.components import MONO_STYLE

    return [h for h in at.get("html")
            if not _TABLE_STYLE.fullmatch(h.proto.body) and h.proto.body != MONO_STYLE]


def each_lane(at: Any, run_id: str) -> Any:
    """Open each lane tab of the run inspector in turn (only the open one is drawn) and
    yield the app as drawn with it; the first lane stays open after."""
    labels = [t.label for t in at.tabs]
    for label in labels:
        at.session_state[f"lanes-{run_id}"] = label
        at.run()
        yield at
    if labels:
        at.session_state[f"lanes-{run_id}"] = labels[0]
        at.run()
