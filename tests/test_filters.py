"""Metadata filters (SPEC §4.6): strict equality, typed comparisons, membership,
fail-closed evaluation and config-time rejection of unknown or malformed clauses."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory_core.errors import InvalidInputError
from memory_core.recall.filters import first_failing_clause, match_filter, validate_filter

scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5),
                    st.floats(-5, 5, allow_nan=False), st.sampled_from(["a", "b", "tr", ""]))
values = st.one_of(scalars, st.lists(scalars, max_size=3))


# -- bare values and AND ------------------------------------------------------------------
def test_bare_value_is_strict_equality_and_fields_are_anded() -> None:
    f = {"lang": "tr", "stars": 3}
    assert match_filter(f, {"lang": "tr", "stars": 3, "x": 1})
    assert not match_filter(f, {"lang": "tr", "stars": 4})
    assert not match_filter(f, {"lang": "tr"})


def test_bare_arrays_and_dicts_never_match() -> None:
    assert not match_filter({"tags": ["a"]}, {"tags": ["a"]})
    assert not match_filter({"who": {"name": "x"}}, {"who": {"name": "x"}})
    assert validate_filter({"tags": ["a"]}) == {"tags": ["a"]}


def test_strict_equality_separates_bool_from_number_but_not_int_from_float() -> None:
    assert not match_filter({"n": 1}, {"n": True})
    assert not match_filter({"n": True}, {"n": 1})
    assert match_filter({"n": 1}, {"n": 1.0})
    assert not match_filter({"n": "1"}, {"n": 1})
    assert match_filter({"n": None}, {"n": None})
    assert not match_filter({"n": None}, {"n": 0})


# -- operators -----------------------------------------------------------------------------
@pytest.mark.parametrize(("op", "operand", "value", "expected"), [
    ("$gt", 2, 3, True), ("$gt", 3, 3, False), ("$gte", 3, 3, True),
    ("$lt", 3, 2.5, True), ("$lte", 2, 2, True), ("$lte", 2, 3, False),
    ("$gt", "b", "c", True), ("$lt", "b", "a", True),
    ("$gt", 2, "3", False), ("$lt", "3", 2, False),  # mixed types never match
    ("$gt", 0, True, False),  # booleans are not numbers
    ("$in", ["a", "b"], "a", True), ("$in", ["a"], "c", False),
    ("$in", [1], True, False), ("$in", [1.0], 1, True),
    ("$nin", ["a"], "c", True), ("$nin", ["a"], "a", False),
    ("$eq", "tr", "tr", True), ("$ne", "tr", "en", True), ("$ne", "tr", "tr", False),
    ("$in", [["a"]], ["a"], False),  # arrays compare by reference in the reference
])
def test_operator_semantics(op: str, operand: Any, value: Any, expected: bool) -> None:
    assert match_filter({"f": {op: operand}}, {"f": value}) is expected


def test_all_operators_of_one_field_must_hold() -> None:
    f = {"stars": {"$gte": 2, "$lt": 4}}
    assert match_filter(f, {"stars": 3})
    assert not match_filter(f, {"stars": 4})


def test_missing_metadata_or_field_fails_every_clause_including_negations() -> None:
    for clause in ({"$ne": "x"}, {"$nin": ["x"]}, {"$eq": None}, "x"):
        assert not match_filter({"f": clause}, None)
        assert not match_filter({"f": clause}, {})
        assert not match_filter({"f": clause}, {"other": 1})


def test_match_filter_fails_closed_on_what_validation_would_reject() -> None:
    assert not match_filter({"f": {"$regex": "a"}}, {"f": "a"})
    assert not match_filter({"f": {"$in": "abc"}}, {"f": "a"})
    assert not match_filter({"f": {"$nin": "abc"}}, {"f": "z"})


def test_empty_filter_matches_and_normalises_to_none() -> None:
    assert match_filter({}, None)
    assert validate_filter({}) is None
    assert validate_filter(None) is None


# -- validation ----------------------------------------------------------------------------
@pytest.mark.parametrize(("bad", "named"), [
    ({"lang": {"$regex": "t.*"}}, "$regex"),
    ({"lang": {"$eq": "tr", "name": "x"}}, "name"),
    ({"lang": {"$in": "tr"}}, "$in"),
    ({"lang": {"$nin": 3}}, "$nin"),
    ({"n": {"$gt": None}}, "$gt"),
    ({"n": {"$lte": [1]}}, "$lte"),
    ({"n": {"$gte": True}}, "$gte"),
    ({"$or": [{"a": 1}]}, "$or"),
    ({"lang": {}}, "lang"),
    (["lang"], "lang"),
])
def test_validate_rejects_unknown_or_malformed_clauses_naming_them(bad: Any, named: str) -> None:
    with pytest.raises(InvalidInputError, match=named.replace("$", r"\$")):
        validate_filter(bad)


def test_validate_accepts_every_known_operator() -> None:
    f = {"a": {"$eq": 1, "$ne": 2, "$gt": 0, "$gte": 0, "$lt": 9, "$lte": 9},
         "b": {"$in": ["x"], "$nin": ["y"]}, "c": "bare"}
    assert validate_filter(f) == f


def test_first_failing_clause_names_the_clause() -> None:
    f = {"lang": "tr", "stars": {"$gte": 3}}
    assert first_failing_clause(f, {"lang": "en", "stars": 5}) == 'lang $eq "tr"'
    assert first_failing_clause(f, {"lang": "tr", "stars": 1}) == "stars $gte 3"
    assert first_failing_clause(f, None) == 'lang $eq "tr"'
    assert first_failing_clause(f, {"lang": "tr", "stars": 3}) is None


# -- properties ----------------------------------------------------------------------------
@given(value=values, operand=st.lists(scalars, max_size=4))
def test_nin_is_the_negation_of_in_when_the_field_exists(value: Any, operand: list[Any]) -> None:
    md = {"f": value}
    assert match_filter({"f": {"$nin": operand}}, md) is not match_filter(
        {"f": {"$in": operand}}, md)


@given(value=values, operand=values)
def test_ne_is_the_negation_of_eq_when_the_field_exists(value: Any, operand: Any) -> None:
    md = {"f": value}
    assert match_filter({"f": {"$ne": operand}}, md) is not match_filter(
        {"f": {"$eq": operand}}, md)


@given(value=values, operand=values)
def test_bare_value_equals_eq(value: Any, operand: Any) -> None:
    if isinstance(operand, dict):
        return
    md = {"f": value}
    assert match_filter({"f": operand}, md) is match_filter({"f": {"$eq": operand}}, md)


@given(md=st.dictionaries(st.sampled_from(["a", "b", "c"]), scalars, max_size=3),
       fa=scalars, fb=scalars)
def test_and_is_all_clauses(md: dict[str, Any], fa: Any, fb: Any) -> None:
    both = match_filter({"a": fa, "b": {"$ne": fb}}, md)
    assert both is (match_filter({"a": fa}, md) and match_filter({"b": {"$ne": fb}}, md))
    assert (first_failing_clause({"a": fa, "b": {"$ne": fb}}, md) is None) is both


@given(op=st.sampled_from(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"]),
       operand=st.one_of(st.integers(), st.text(max_size=3)))
def test_a_missing_field_fails_every_operator(op: str, operand: Any) -> None:
    assert not match_filter({"f": {op: operand}}, {"g": operand})
