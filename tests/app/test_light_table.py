"""app.light_table: the workbench's tables as Markdown. Stored text is shown literally
(Markdown, HTML, pipes, line breaks, backticks, autolinks), links keep their targets,
numbers are right-aligned, and a long table is paged (AppTest for the pages)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from streamlit.testing.v1 import AppTest

from app.components import THREADS_PAGE
from app.light_table import NEWLINE, Link, markdown_table
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import AppendRow, Message
from tests.app.conftest import ENTRY, TIMEOUT, served
from tests.app.markdown import Table, is_table, raw_html, shown_text, tables

HOSTILE = ("a | b *bold* _it_ `tick` ``two`` <script>alert(1)</script> [x](http://e/x) "
           "![i](http://e/i.png) $$m$$ :red[r] # h \\| \\ https://e.example/a|b x@y.org |")


def test_hostile_text_is_shown_literally_in_its_cell() -> None:
    t = Table(markdown_table([{"text": HOSTILE, "n": 1}]))
    assert t.columns == ["text", "n"]
    assert t["text"] == [HOSTILE]


def test_a_line_break_is_shown_as_a_mark_and_keeps_the_row_whole() -> None:
    md = markdown_table([{"text": "one\ntwo\r\nthree", "n": 2}])
    assert len(md.splitlines()) == 3
    t = Table(md)
    assert t["text"] == [f"one {NEWLINE} two {NEWLINE} three"]
    assert t["n"] == ["2"]


def test_ids_and_links_keep_their_text_and_targets() -> None:
    url = "threads?thread=t+%7C+x&db=demo"
    t = Table(markdown_table([{"open": Link("open", url, code=False),
                               "run": Link("run | `1`", "whatif?run=r%7C1"),
                               "thread": "t | x"}]))
    assert t.rows == [{"open": "open", "run": "run | `1`", "thread": "t | x"}]
    assert t.links == [{"open": url, "run": "whatif?run=r%7C1"}]


def test_a_link_target_cannot_end_early_or_split_the_row() -> None:
    t = Table(markdown_table([{"open": Link("x", "page?a=(1)|b c")}]))
    target = t.links[0]["open"]
    assert not set("()| ") & set(target)


def test_numbers_are_right_aligned_and_text_is_not() -> None:
    t = Table(markdown_table([
        {"n": 1234, "score": "0.412", "delta": "+3", "none": None, "word": "7 runs",
         "yes": True, "when": datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)},
        {"n": 5, "score": "—", "delta": "-12", "none": None, "word": "x", "yes": False,
         "when": None}]))
    assert t.right == {"n", "score", "delta"}
    assert t["n"] == ["1,234", "5"]
    assert t["none"] == ["—", "—"]
    assert t["yes"] == ["yes", "no"]
    assert t["when"] == ["2026-01-02 03:04:05", "—"]


def test_columns_follow_the_order_given_and_rows_keep_theirs() -> None:
    rows = [{"b": 2, "a": "z"}, {"a": "y", "b": 1}]
    assert Table(markdown_table(rows)).columns == ["b", "a"]
    t = Table(markdown_table(rows, ["a", "b"]))
    assert t.columns == ["a", "b"]
    assert t["a"] == ["z", "y"]


def _paged_app() -> None:
    from app.light_table import light_table

    light_table([{"run": f"r{i}", "n": i} for i in range(212)], key="demo", size=50)


def test_a_long_table_shows_one_page_and_a_picker_of_pages() -> None:
    at = AppTest.from_function(_paged_app)
    at.run()
    assert not at.exception
    [t] = tables(at)
    assert t["run"] == [f"r{i}" for i in range(50)]
    picker = at.selectbox(key="page-demo")
    assert picker.options == ["rows 1–50 of 212", "rows 51–100 of 212",
                              "rows 101–150 of 212", "rows 151–200 of 212",
                              "rows 201–212 of 212"]
    picker.select_index(4).run()
    [t] = tables(at)
    assert t["run"] == [f"r{i}" for i in range(200, 212)]


# -- stored hostile text on a page (AppTest) ------------------------------------------------
HOSTILE_ID = "t|1 *x* <b>b</b> `c`"
HOSTILE_TITLE = "title | with *stars* <script>alert(1)</script> [l](http://127.0.0.2/l)"
HOSTILE_TEXT = "parcel | lost\nsecond *line* <img src=x onerror=alert(2)> _u_ `tick`"


@pytest.fixture()
def hostile(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemoryStorage]:
    storage = InMemoryStorage()
    storage.memory.create_thread(HOSTILE_ID, resource_id="res", title=HOSTILE_TITLE)
    storage.memory.append_messages(HOSTILE_ID, [AppendRow(
        message=Message(role="user", content=HOSTILE_TEXT))])
    yield from served(storage, monkeypatch)


def test_stored_text_shows_literally_in_the_threads_tables(hostile: InMemoryStorage) -> None:
    at = AppTest.from_file(str(ENTRY), default_timeout=TIMEOUT)
    at.run()
    at.switch_page(THREADS_PAGE)
    at.query_params.update({"q": "parcel"})
    at.run()
    assert not at.exception and not at.error
    listed, hits = tables(at)
    assert listed.rows[0]["thread"] == HOSTILE_ID and listed.rows[0]["title"] == HOSTILE_TITLE
    assert hits["thread"] == [HOSTILE_ID]
    # the message's line break is shown as a mark, its row kept whole
    assert hits["text"] == [HOSTILE_TEXT.replace("\n", f" {NEWLINE} ")]
    # no HTML and no Markdown of the stored text reaches the page: every special
    # character is escaped or in a code span
    source = next(m.value for m in at.markdown if is_table(m.value) and "title" in m.value)
    assert "<script>" not in source and "[l](" not in source and "*stars*" not in source
    assert [row["open"] for row in listed.links][0].startswith("threads?")


def _dropping_app() -> None:
    from app.light_table import light_table

    light_table([{"a": "x", "b": None, "c": "—"}, {"a": "y", "b": "", "c": "—"}], key="d",
                drop_empty=True)


def test_a_column_without_values_is_left_out_and_named() -> None:
    at = AppTest.from_function(_dropping_app)
    at.run()
    [t] = tables(at)
    assert t.columns == ["a"]
    assert [shown_text(c.value) for c in at.caption] == [
        "Not shown, as no row has a value for them: b, c."]


def test_a_key_that_cannot_name_a_table_is_refused() -> None:
    from app.light_table import light_table

    with pytest.raises(ValueError, match="not 'a b'"):
        light_table([{"a": 1}], key="a b")


def test_a_tables_style_keeps_ids_and_short_columns_whole() -> None:
    from app.light_table import table_style

    style = table_style("runs", ["run", "started", "why"], [
        {"run": Link("run-1", "run?run=run-1"), "started": "2027-03-19 09:00:02",
         "why": "a sentence " * 10}])
    assert style == ("<style>.st-key-table-runs td code, .st-key-table-runs td a, "
                     ".st-key-table-runs td:nth-child(1), .st-key-table-runs td:nth-child(2) "
                     "{ white-space: nowrap; } .st-key-table-runs "
                     "[data-testid='stMarkdownContainer'] { overflow-x: auto; }</style>")
    # of two columns of long text, the one holding more keeps room to be read
    two = table_style("changes", ["reason", "preview"], [
        {"reason": "a sentence " * 10, "preview": "a preview longer than a short cell is"},
        {"reason": "another sentence " * 8, "preview": "Noted."}])
    assert ".st-key-table-changes td:nth-child(1) { min-width: 13em; }" in two
    assert "nth-child(2) { min-width" not in two
    # a page's tables bring their styles and no other HTML
    at = AppTest.from_function(_paged_app)
    at.run()
    assert at.get("html") and not raw_html(at)


def _opening_app() -> None:
    from app.light_table import light_table

    light_table([{"run": f"r{i}"} for i in range(60)], key="o", opens_at=57)


def test_a_long_table_opens_on_the_page_of_the_row_it_is_about() -> None:
    at = AppTest.from_function(_opening_app)
    at.run()
    assert at.selectbox(key="page-o").value == 2
    [t] = tables(at)
    assert t["run"] == [f"r{i}" for i in range(50, 60)]
