"""Metadata filters for recall (SPEC §4.6): validation when a config is built, and
evaluation against one message's metadata, failing closed.

Semantics:

- A filter is a dict ``{field: condition}``; every field must match (AND). Fields are
  literal top-level metadata keys (no dotted paths).
- A bare condition means strict equality. Bare lists and bare dicts without ``$`` keys
  never match (JavaScript compares objects by reference), but they are accepted.
- A dict whose keys all start with ``$`` lists operators, and all of them must hold:
  ``$eq $ne $gt $gte $lt $lte $in $nin``.
- Strict equality follows JavaScript's ``===`` translated to JSON values: booleans are
  never equal to numbers (``True`` is not ``1``), ints and floats compare by value
  (``1`` equals ``1.0``), strings only equal strings, ``None`` only ``None``, and lists or
  dicts are never equal to anything.
- ``$gt/$gte/$lt/$lte`` hold only when both sides are numbers (booleans are not
  numbers) or both are strings (compared by code point); otherwise the clause fails.
- ``$in/$nin`` test strict-equality membership; ``$nin`` is the negation of ``$in``
  whenever the field exists.
- Missing metadata, or a missing field, fails every clause, including ``$ne``/``$nin``.

Unlike the reference (which silently fails an unknown operator), ``validate_filter``
rejects unknown operators, ``$`` keys mixed with plain keys, empty operator objects,
``$in``/``$nin`` without a list and range operators whose operand is not a number or
string, raising ``InvalidInputError`` that names the field and operator.
``match_filter`` still fails closed on anything it does not understand.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from memory_core.errors import InvalidInputError

OPERATORS: tuple[str, ...] = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin")
_RANGE_OPS = frozenset({"$gt", "$gte", "$lt", "$lte"})
_MISSING = object()


def _is_number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def strict_equal(a: Any, b: Any) -> bool:
    """JavaScript ``===`` over JSON values (see the module docstring)."""
    if isinstance(a, list | dict | tuple) or isinstance(b, list | dict | tuple):
        return False
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a is b
    if _is_number(a) or _is_number(b):
        return _is_number(a) and _is_number(b) and a == b
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    return type(a) is type(b) and bool(a == b)


def _compare(op: str, value: Any, operand: Any) -> bool:
    if _is_number(value) and _is_number(operand):
        if isinstance(value, float) and math.isnan(value):
            return False
    elif not (isinstance(value, str) and isinstance(operand, str)):
        return False
    if op == "$gt":
        return bool(value > operand)
    if op == "$gte":
        return bool(value >= operand)
    if op == "$lt":
        return bool(value < operand)
    return bool(value <= operand)


def _member(value: Any, operand: Any) -> bool:
    return any(strict_equal(value, o) for o in operand)


_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": strict_equal,
    "$ne": lambda v, o: not strict_equal(v, o),
    "$gt": lambda v, o: _compare("$gt", v, o),
    "$gte": lambda v, o: _compare("$gte", v, o),
    "$lt": lambda v, o: _compare("$lt", v, o),
    "$lte": lambda v, o: _compare("$lte", v, o),
    "$in": lambda v, o: isinstance(o, list | tuple) and _member(v, o),
    "$nin": lambda v, o: isinstance(o, list | tuple) and not _member(v, o),
}


def _is_operator_object(cond: Any) -> bool:
    return isinstance(cond, dict) and any(isinstance(k, str) and k.startswith("$") for k in cond)


def _show(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)


def validate_filter(f: dict[str, Any] | None) -> dict[str, Any] | None:
    """Check a filter and return it (``None`` and ``{}`` both mean "no filter" and
    return ``None``). Raises ``InvalidInputError`` naming the bad field/operator.

    Example: ``validate_filter({"lang": "tr", "stars": {"$gte": 3}})``
    """
    if f is None:
        return None
    if not isinstance(f, dict):
        raise InvalidInputError(f"filter must be a dict of field -> condition, got {_show(f)}")
    if not f:
        return None
    for field, cond in f.items():
        if not isinstance(field, str) or not field:
            raise InvalidInputError(f"filter field names must be non-empty strings, got {field!r}")
        if field.startswith("$"):
            raise InvalidInputError(
                f"unknown filter operator {field!r} at the top level: fields are ANDed "
                f"implicitly and logical operators are not supported; "
                f"supported operators (inside a field) are {', '.join(OPERATORS)}")
        if not isinstance(cond, dict):
            continue  # bare value: strict equality
        if not cond:
            raise InvalidInputError(
                f"filter field {field!r} has an empty operator object; use e.g. "
                f'{{"$eq": value}}')
        if not _is_operator_object(cond):
            continue  # a bare dict: accepted, never matches (strict equality)
        for op, operand in cond.items():
            if not isinstance(op, str) or not op.startswith("$"):
                raise InvalidInputError(
                    f"filter field {field!r} mixes operators with the plain key {op!r}; "
                    f"an operator object may only hold {', '.join(OPERATORS)}")
            if op not in _OPS:
                raise InvalidInputError(
                    f"unknown filter operator {op!r} on field {field!r}; supported: "
                    f"{', '.join(OPERATORS)}")
            if op in ("$in", "$nin") and not isinstance(operand, list):
                raise InvalidInputError(
                    f"filter operator {op!r} on field {field!r} needs a list, got "
                    f"{_show(operand)}")
            if op in _RANGE_OPS and not (_is_number(operand) or isinstance(operand, str)):
                raise InvalidInputError(
                    f"filter operator {op!r} on field {field!r} needs a number or a string, "
                    f"got {_show(operand)}")
            if isinstance(operand, float) and not math.isfinite(operand):
                raise InvalidInputError(
                    f"filter operator {op!r} on field {field!r} got a non-finite number "
                    f"{operand!r}")
    return f


def _clauses(f: dict[str, Any]) -> list[tuple[str, str, Any]]:
    out: list[tuple[str, str, Any]] = []
    for field, cond in f.items():
        if _is_operator_object(cond):
            out.extend((field, op, operand) for op, operand in cond.items())
        else:
            out.append((field, "$eq", cond))
    return out


def _clause_holds(metadata: dict[str, Any] | None, field: str, op: str, operand: Any) -> bool:
    if not metadata:
        return False
    value = metadata.get(field, _MISSING)
    if value is _MISSING:
        return False
    fn = _OPS.get(op)
    return fn is not None and fn(value, operand)


def match_filter(f: dict[str, Any], metadata: dict[str, Any] | None) -> bool:
    """True when every clause holds (an empty filter matches everything). Unknown
    operators fail closed here; ``validate_filter`` rejects them earlier."""
    return all(_clause_holds(metadata, fld, op, operand) for fld, op, operand in _clauses(f))


def first_failing_clause(f: dict[str, Any], metadata: dict[str, Any] | None) -> str | None:
    """The first clause that does not hold, as ``'lang $eq "tr"'`` (bare values are
    shown as ``$eq``), or ``None`` when the filter matches."""
    for field, op, operand in _clauses(f):
        if not _clause_holds(metadata, field, op, operand):
            return f"{field} {op} {_show(operand)}"
    return None
