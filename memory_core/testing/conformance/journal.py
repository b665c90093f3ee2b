"""Conformance: the run journal — first write wins, JSON values, prefix list/delete."""

from __future__ import annotations

import math

import pytest

from memory_core.errors import InvalidInputError
from memory_core.storage.base import Storage


def test_put_if_absent_first_write_wins(storage: Storage) -> None:
    assert storage.runs.put_if_absent("r1:step:0", {"v": 1, "text": "first"}) is True
    assert storage.runs.put_if_absent("r1:step:0", {"v": 1, "text": "second"}) is False
    assert storage.runs.get("r1:step:0") == {"v": 1, "text": "first"}
    assert storage.runs.has("r1:step:0") and not storage.runs.has("r1:step:1")


def test_has_counts_a_stored_null_and_only_the_exact_key(storage: Storage) -> None:
    assert storage.runs.put_if_absent("r1:step:1", None) is True
    storage.runs.put_if_absent("r1:step:10", 1)
    assert storage.runs.get("r1:step:1") is None
    assert storage.runs.has("r1:step:1")
    assert storage.runs.put_if_absent("r1:step:1", 2) is False
    assert not storage.runs.has("r1:step:")


def test_get_missing_is_none(storage: Storage) -> None:
    assert storage.runs.get("nope") is None


def test_values_round_trip_as_json(storage: Storage) -> None:
    value = {"a": [1, 2.5, None, True], "ü": "✓", "n": {"deep": []}}
    storage.runs.put_if_absent("k", value)
    storage.runs.put_if_absent("s", "just a string")
    assert storage.runs.get("k") == value and storage.runs.get("s") == "just a string"


def test_list_by_prefix_in_write_order(storage: Storage) -> None:
    for key in ("r1:step:10", "r1:step:2", "r2:input", "r1:input", "r10:x"):
        storage.runs.put_if_absent(key, key)
    storage.runs.put_if_absent("r1:step:2", "ignored")
    assert storage.runs.list("r1:") == [("r1:step:10", "r1:step:10"),
                                        ("r1:step:2", "r1:step:2"), ("r1:input", "r1:input")]
    assert [k for k, _ in storage.runs.list("")] == [
        "r1:step:10", "r1:step:2", "r2:input", "r1:input", "r10:x"]


def test_delete_by_prefix_returns_count(storage: Storage) -> None:
    for key in ("r1:a", "r1:b", "r10:a", "r2:a"):
        storage.runs.put_if_absent(key, 1)
    assert storage.runs.delete("r1:") == 2
    assert [k for k, _ in storage.runs.list("")] == ["r10:a", "r2:a"]
    assert storage.runs.delete("r1:") == 0


def test_delete_keys_and_rewrite_touch_exactly_their_keys(storage: Storage) -> None:
    """Erasure rewrites single records: ``r1:step:1`` must leave ``r1:step:10`` and
    ``r1:step:11`` (a prefix delete would take them)."""
    for key in ("r1:step:1", "r1:step:10", "r1:step:11", "r1:tool:c1", "r1:tool:c10"):
        storage.runs.put_if_absent(key, key)
    assert storage.runs.delete_keys(["r1:step:1", "r1:tool:c1", "r1:nope"]) == 2
    assert [k for k, _ in storage.runs.list("r1:")] == [
        "r1:step:10", "r1:step:11", "r1:tool:c10"]
    storage.runs.rewrite("r1:step:10", {"new": True})
    assert storage.runs.get("r1:step:10") == {"new": True}
    assert storage.runs.get("r1:step:11") == "r1:step:11"
    assert storage.runs.get("r1:tool:c10") == "r1:tool:c10"


def test_deleted_key_can_be_written_again(storage: Storage) -> None:
    storage.runs.put_if_absent("k", 1)
    storage.runs.delete("k")
    assert storage.runs.put_if_absent("k", 2) is True and storage.runs.get("k") == 2


def test_non_json_value_is_refused_naming_key(storage: Storage) -> None:
    with pytest.raises(InvalidInputError, match="key 'r1:tool:c1'"):
        storage.runs.put_if_absent("r1:tool:c1", {"result": {1, 2}})
    assert storage.runs.get("r1:tool:c1") is None


def test_nan_is_refused(storage: Storage) -> None:
    with pytest.raises(InvalidInputError, match="key 'r1:x'"):
        storage.runs.put_if_absent("r1:x", {"score": math.nan})
    assert storage.runs.list("") == []


def test_empty_key_is_refused(storage: Storage) -> None:
    with pytest.raises(InvalidInputError, match="non-empty string"):
        storage.runs.put_if_absent("", 1)


def test_get_many_reads_the_written_keys_only(storage: Storage) -> None:
    for key, value in (("r1:prompt", {"p": 1}), ("r1:memctx", None), ("r2:prompt", "x")):
        storage.runs.put_if_absent(key, value)
    got = storage.runs.get_many(["r1:prompt", "r1:memctx", "r2:prompt", "r3:prompt",
                                 "r1:prompt", "r1:"])
    assert got == {"r1:prompt": {"p": 1}, "r1:memctx": None, "r2:prompt": "x"}
    assert storage.runs.get_many([]) == {}


def test_get_many_beyond_one_statement_of_bound_values(storage: Storage) -> None:
    keys = [f"r{i}:prompt" for i in range(1203)]
    storage.runs.put_many_if_absent([(k, i) for i, k in enumerate(keys)])
    got = storage.runs.get_many([*keys, "missing"])
    assert got == {k: i for i, k in enumerate(keys)}
