"""Tables as Markdown, a page of rows at a time: the workbench's tables without a canvas
grid (issue 36 point 7).

A ``st.dataframe`` draws on a canvas with its own grid library, which cost a cold
browser tab about 0.3 CPU-seconds per grid (the first one most); a Markdown table is
plain HTML. Every stored value is shown literally: Markdown and HTML escaped
(``escape_md``), a ``|`` kept inside its cell, a line break shown as ``↵``. Ids the user
may follow are ``Link`` cells (our URL, the id as its text); a column of numbers is
right-aligned; more rows than a page hold get a page picker, so a table over thousands
of runs sends one page of them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import quote, urlencode

import streamlit as st

from app.components import MISSING, escape_md, fmt_cell, fmt_time, md, with_db
from app.components import Id as _Id

PAGE_ROWS = 25
SHORT_CHARS = 28  # a column whose cells are all this short is never wrapped
CELL_CHARS = 400  # a longer value is cut with "…" (a table cell is no reading place)
NEWLINE = "↵"  # a line break in a stored value, shown where it was
_BREAK = re.compile(r"\r\n|\r|\n")
_KEY = re.compile(r"[a-z0-9-]+")  # a table's key: part of its container's CSS class
_NUMBER = re.compile(r"[+−-]?\d[\d,]*(\.\d+)?")


@dataclass(frozen=True, slots=True)
class Link:
    """A cell that opens ``url`` (a workbench page's relative URL); ``text`` is shown,
    in the code font when ``code`` (an id, exactly as stored)."""

    text: str
    url: str
    code: bool = True


def run_link(run_id: str) -> Link:
    """A run id that opens the run inspector on it (in the database in use)."""
    return Link(run_id, "run?" + urlencode(with_db({"run": run_id})))


def message_url(thread_id: str, seq: int | None = None) -> str:
    """The Threads page on a thread (focused on message ``seq``), in the database in use."""
    params = {"thread": thread_id} if seq is None else {"thread": thread_id, "seq": str(seq)}
    return "threads?" + urlencode(with_db(params))


def _one_line(text: str) -> str:
    one = _BREAK.sub(f" {NEWLINE} ", text)
    return one if len(one) <= CELL_CHARS else one[:CELL_CHARS - 1] + "…"


def cell_text(value: object) -> str:
    """A stored value as the Markdown of one table cell, shown exactly as stored: every
    Markdown and HTML character escaped, its ``|`` escaped outside any code span (a row is
    split at ``|`` before code spans are parsed), a line break shown as ``↵``."""
    return r"\|".join(escape_md(p) for p in _one_line(str(value)).split("|"))


def code_text(value: str) -> str:
    """An id as the Markdown of one table cell: in code spans, split where it holds a
    ``|`` (the pipe between them escaped)."""
    return r"\|".join(md(_Id(p)) if p else "" for p in _one_line(value).split("|"))


def _url(url: str) -> str:
    # a link's destination: anything that could end it, or split the row, percent-quoted
    return quote(url, safe="/?&=%#+,;:@.-_~")


def _shown(value: object) -> str:
    """A cell's Markdown by its value's type."""
    if isinstance(value, Link):
        text = code_text(value.text) if value.code else cell_text(value.text)
        return f"[{text or MISSING}]({_url(value.url)})"
    if isinstance(value, _Id):
        return code_text(value.text)
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, datetime):
        return fmt_time(value)
    return cell_text(value if isinstance(value, str) else fmt_cell(value))


def _empty(value: object) -> bool:
    return value is None or value == "" or value == MISSING


def _names(rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None) -> list[str]:
    """The columns given, else those the rows name, in the order first named."""
    return list(columns) if columns is not None else list(
        dict.fromkeys(k for r in rows for k in r))


def _numeric(values: Sequence[object]) -> bool:
    """A column to right-align: every value a number, or text that reads as one (a
    score, a signed change), with ``MISSING`` or empty cells among them."""
    seen = False
    for v in values:
        if _empty(v):
            continue
        if isinstance(v, bool) or not (isinstance(v, int | float) or (
                isinstance(v, str) and _NUMBER.fullmatch(v.strip()))):
            return False
        seen = True
    return seen


def markdown_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None) -> str:
    """``rows`` (dicts by column name) as a GFM table, columns in the order given (else
    in the order the rows first name them), numbers right-aligned."""
    names = _names(rows, columns)
    if not names:
        return ""
    by_col = {n: [r.get(n) for r in rows] for n in names}
    head = "| " + " | ".join(cell_text(n) for n in names) + " |"
    rule = "|" + "|".join("---:" if _numeric(by_col[n]) else "---" for n in names) + "|"
    body = ["| " + " | ".join(_shown(r.get(n)) for n in names) + " |" for r in rows]
    return "\n".join([head, rule, *body])


def page_of(rows: Sequence[Any], key: str, *, size: int = PAGE_ROWS,
            noun: str = "rows", opens_at: int | None = None) -> list[Any]:
    """One page of ``rows``: all of them when they fit one page, else the page picked in
    a small picker (its options say which: "rows 26–50 of 212"; ``noun`` for the
    things paged when they are no table's rows). The picker opens on the page holding
    row ``opens_at`` (the run the page is about), else on the first."""
    if size < 1:
        raise ValueError(f"a page of {size} rows")
    rows = list(rows)
    pages = max(1, math.ceil(len(rows) / size))
    if pages == 1:
        return rows

    def label(i: int) -> str:
        lo = i * size
        return f"{noun} {lo + 1:,}–{min(lo + size, len(rows)):,} of {len(rows):,}"

    first = opens_at // size if opens_at is not None and 0 <= opens_at < len(rows) else 0
    page = st.selectbox(f"{noun.capitalize()} shown", range(pages), index=first,
                        format_func=label, key=f"page-{key}", width=260)
    lo = int(page or 0) * size
    return rows[lo:lo + size]


def _length(value: object) -> int:
    """About how many characters a cell shows."""
    if isinstance(value, Link | _Id):
        return len(value.text)
    return len(value) if isinstance(value, str) else len(_shown(value))


def table_style(key: str, names: Sequence[str], rows: Sequence[Mapping[str, Any]]) -> str:
    """Our style for the table ``key``: an id or a link is never broken across lines at
    its hyphens, nor a cell of a column of short cells (times, numbers, codes); the long
    text beside them takes the wrapping, and a table wider than the page scrolls."""
    scope = f".st-key-table-{key}"
    short = [f"{scope} td:nth-child({i})" for i, n in enumerate(names, 1)
             if all(_length(r.get(n)) <= SHORT_CHARS for r in rows)]
    cells = ", ".join([f"{scope} td code", f"{scope} td a", *short])
    # of several columns of long text, the one holding the most keeps room enough to be
    # read (Compare's reasons were squeezed to a word a line beside their previews)
    long = {i: sum(_length(r.get(n)) for r in rows) for i, n in enumerate(names, 1)
            if any(_length(r.get(n)) > SHORT_CHARS for r in rows)}
    widest = (f"{scope} td:nth-child({max(long, key=lambda i: long[i])}) "
              "{ min-width: 13em; } ") if len(long) > 1 else ""
    # headers may wrap; a table wider than the page scrolls inside its own box
    return (f"<style>{cells} {{ white-space: nowrap; }} {widest}"
            f"{scope} [data-testid='stMarkdownContainer'] {{ overflow-x: auto; }}</style>")


def light_table(rows: Sequence[Mapping[str, Any]], *, key: str,
                columns: Sequence[str] | None = None, size: int = PAGE_ROWS,
                drop_empty: bool = False, opens_at: int | None = None) -> None:
    """``rows`` shown as a Markdown table in a container keyed ``table-<key>`` (a page
    at a time, see ``page_of``; ``opens_at`` a row whose page is shown first), in the
    order given. ``drop_empty``: a column no row
    holds a value in is left out (a narrow table stays readable) and named once below."""
    if not _KEY.fullmatch(key):
        raise ValueError(f"a table key of lowercase letters, digits and '-', not {key!r}")
    names = _names(rows, columns)
    dropped = [n for n in names if all(_empty(r.get(n)) for r in rows)] if drop_empty and rows \
        else []
    with st.container(key=f"table-{key}"):
        shown = page_of(rows, key, size=size, opens_at=opens_at)
        if shown:
            kept = [n for n in names if n not in dropped]
            st.html(table_style(key, kept, shown))  # a style alone: no element drawn
            st.markdown(markdown_table(shown, kept))
        if dropped:
            st.caption(escape_md(f"Not shown, as no row has a value for them: "
                                 f"{', '.join(dropped)}."))
