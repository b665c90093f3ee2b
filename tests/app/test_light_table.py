"""app.light_table: the workbench's tables as Markdown. Stored text is shown literally
(Markdown, HTML, pipes, line breaks, backticks, autolinks), links keep their targets,
numbers are right-aligned, and a long table is paged (AppTest for the pages)."""

from __future__ import annotations

from datetime import UTC, datetime

from streamlit.testing.v1 import AppTest

from app.light_table import NEWLINE, Link, markdown_table
from tests.app.markdown import Table, tables

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
