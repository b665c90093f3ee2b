"""Rows for ``st.dataframe`` as an Arrow table, built without importing pandas.

Streamlit sends a pyarrow table as it is, while a list of dicts or a DataFrame goes
through pandas, whose import alone costs a second or more on the first page that shows
a table (bench/RESULTS.md, "Workbench: page speed in Chromium"). pyarrow's own
conversion of Python objects (``pa.array``) imports pandas too, to ask whether a value
is a pandas one; its JSON reader does not. So the rows go to Arrow as JSON lines with an
explicit schema: each column's type is decided here from its values (booleans,
integers, floats, text, times; anything else, a column mixing types, or one holding NaN
or infinity, as text the way ``fmt_cell`` shows it: NaN and infinity as "—"). pyarrow is loaded already (the DuckDB adapter reads through it).
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

_INT64 = 2 ** 63


def _kind(values: Sequence[Any]) -> str:
    """The column's type by its non-null values: bool, int, float, aware or naive
    time, or text (also for a mix of these, nested values, huge integers and a column
    holding NaN or infinity)."""
    kinds: set[str] = set()
    for v in values:
        if v is None:
            continue
        if isinstance(v, bool):
            kinds.add("bool")
        elif isinstance(v, int):
            kinds.add("int" if -_INT64 <= v < _INT64 else "text")
        elif isinstance(v, float):
            # NaN or infinity has no cell of its own in a number column (it would show
            # empty): the column is shown as text, that value as MISSING
            kinds.add("float" if math.isfinite(v) else "text")
        elif isinstance(v, datetime):
            kinds.add("time" if v.tzinfo is not None else "naive")
        else:
            kinds.add("text")
    if kinds == {"int", "float"}:
        return "float"
    return kinds.pop() if len(kinds) == 1 else "text"


def _cell(kind: str, v: Any) -> Any:
    """A value as its JSON line carries it for the column's type."""
    from app.components import fmt_cell

    if v is None:
        return None
    if kind == "float":
        return float(v)
    if kind == "time":
        return v.astimezone(UTC).isoformat()
    if kind == "naive":
        return v.isoformat()
    if kind == "text" and not isinstance(v, str):
        return fmt_cell(v)
    return v


def _arrow_type(kind: str) -> pa.DataType:
    import pyarrow as pa

    return {"bool": pa.bool_(), "int": pa.int64(), "float": pa.float64(),
            "time": pa.timestamp("us", tz="UTC"), "naive": pa.timestamp("us"),
            "text": pa.string()}[kind]


def _by_column(rows: Sequence[Mapping[str, Any]] | Sequence[Sequence[Any]],
               names: list[str]) -> dict[str, list[Any]]:
    by_name: dict[str, list[Any]] = {n: [] for n in names}
    for r in rows:
        if isinstance(r, Mapping):
            for n in names:
                by_name[n].append(r.get(n))
            continue
        if len(r) != len(names):
            raise ValueError(f"a row of {len(r)} values for {len(names)} columns: {r!r}")
        for n, v in zip(names, r, strict=True):
            by_name[n].append(v)
    return by_name


def table(rows: Sequence[Mapping[str, Any]] | Sequence[Sequence[Any]],
          columns: Sequence[str] | None = None) -> pa.Table:
    """``rows`` (dicts, or sequences named by ``columns``) as an Arrow table, columns in
    the order given (else in the order the dicts first name them)."""
    import pyarrow as pa
    import pyarrow.json as pa_json

    if columns is None:
        names = list(dict.fromkeys(k for r in rows if isinstance(r, Mapping) for k in r))
    else:
        names = list(columns)
    by_name = _by_column(rows, names)
    kinds = {n: _kind(vs) for n, vs in by_name.items()}
    schema = pa.schema([(n, _arrow_type(kinds[n])) for n in names])
    if not rows or not names:
        return schema.empty_table()
    # positional keys: a column name may be any text, the JSON key stays simple
    lines = (json.dumps({f"c{i}": _cell(kinds[n], by_name[n][j])
                         for i, n in enumerate(names)}, allow_nan=False)
             for j in range(len(rows)))
    data = "\n".join(lines).encode("utf-8")
    keyed = pa.schema([(f"c{i}", schema.field(i).type) for i in range(len(names))])
    read = pa_json.read_json(
        io.BytesIO(data),
        # one block: a line may be any length (a long message), never split
        read_options=pa_json.ReadOptions(block_size=max(len(data) + 1, 1 << 20)),
        parse_options=pa_json.ParseOptions(explicit_schema=keyed))
    return read.rename_columns(names)
