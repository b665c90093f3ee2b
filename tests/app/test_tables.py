"""app.tables.table: rows to an Arrow table for st.dataframe without pandas, every value
kept (text literally, times exact, mixed columns as text)."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pyarrow as pa
import pytest

from app.components import MISSING
from app.tables import table

ROOT = Path(__file__).resolve().parents[2]


def test_types_follow_the_values_and_nothing_is_lost() -> None:
    t0 = datetime(2026, 3, 2, 8, 0, 0, 123456, tzinfo=UTC)
    rows = [{"id": "t1", "n": 3, "score": 0.5, "ok": True, "at": t0, "note": None},
            {"id": '*x* <b>"y"</b>\n\\', "n": 4, "score": None, "ok": False,
             "at": t0.astimezone(timezone(timedelta(hours=2))), "note": None}]
    t = table(rows)
    assert t.column_names == ["id", "n", "score", "ok", "at", "note"]
    assert t.schema.field("n").type == pa.int64()
    assert t.schema.field("score").type == pa.float64()
    assert t.schema.field("ok").type == pa.bool_()
    assert t.schema.field("at").type == pa.timestamp("us", tz="UTC")
    out = t.to_pylist()
    assert [r["id"] for r in out] == ["t1", '*x* <b>"y"</b>\n\\']  # stored text as is
    assert [r["at"] for r in out] == [t0, t0]  # to the microsecond, whatever the offset
    assert [r["score"] for r in out] == [0.5, None]
    assert [r["note"] for r in out] == [None, None]


def test_mixed_and_nested_values_are_shown_as_text() -> None:
    rows: list[dict[str, object]] = [{"v": 1, "w": {"b": [1, 2]}, "x": 1},
                                     {"v": "a", "w": None, "x": 2.5},
                                     {"v": 2 ** 70, "w": [1], "x": float("nan")}]
    t = table(rows)
    assert t.to_pylist() == [
        {"v": "1", "w": '{"b": [1, 2]}', "x": "1"},
        {"v": "a", "w": None, "x": "2.500"},
        {"v": str(2 ** 70), "w": "[1]", "x": MISSING}]
    assert MISSING not in t.column("w").to_pylist()  # a null stays empty, not "—"


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_floats_are_shown_as_missing_not_empty(bad: float) -> None:
    t = table([{"score": 0.25, "id": "a"}, {"score": bad, "id": "b"},
               {"score": None, "id": "c"}])
    assert t.schema.field("score").type == pa.string()
    assert t.column("score").to_pylist() == ["0.250", MISSING, None]
    assert table([{"score": 0.25}, {"score": 1.5}]).schema.field("score").type == pa.float64()


def test_tuples_with_column_names_and_odd_names() -> None:
    t = table([("a", 1), ("b", 2)], columns=["in this story", "c0"])
    assert t.column_names == ["in this story", "c0"]
    assert t.to_pylist()[1] == {"in this story": "b", "c0": 2}
    with pytest.raises(ValueError, match="3 values for 2 columns"):
        table([("a", 1, 2)], columns=["x", "y"])
    assert table([], columns=["x"]).num_rows == 0
    assert table([{"t": "x" * 3_000_000}]).column("t")[0].as_py() == "x" * 3_000_000


def test_no_pandas_is_imported() -> None:
    code = ("import sys\nfrom datetime import UTC, datetime\nfrom app.tables import table\n"
            "table([{'a': 'x', 'b': 1, 'c': 0.5, 'd': datetime.now(UTC), 'e': {'k': 1}}])\n"
            "print('pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=120, env={"PYTHONPATH": str(ROOT),
                                                      "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "False"
