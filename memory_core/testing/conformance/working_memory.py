"""Conformance: working memory — JSON values under thread:/resource: keys."""

from __future__ import annotations

import pytest

from memory_core.errors import InvalidInputError
from memory_core.lifecycle.erasure import erase_resource, erase_thread
from memory_core.storage.base import Storage


def test_put_get_and_overwrite(storage: Storage) -> None:
    storage.memory.put_working_memory("thread:t1", {"name": "Ada", "tags": [1, 2]})
    assert storage.memory.get_working_memory("thread:t1") == {"name": "Ada", "tags": [1, 2]}
    storage.memory.put_working_memory("thread:t1", "plain text")
    assert storage.memory.get_working_memory("thread:t1") == "plain text"


def test_missing_key_is_none(storage: Storage) -> None:
    assert storage.memory.get_working_memory("resource:nobody") is None


def test_keys_listed_sorted(storage: Storage) -> None:
    for k in ("thread:b", "resource:u1", "thread:a"):
        storage.memory.put_working_memory(k, 1)
    assert storage.memory.list_working_memory_keys() == ["resource:u1", "thread:a", "thread:b"]


def test_delete_says_whether_it_existed(storage: Storage) -> None:
    storage.memory.put_working_memory("thread:a", {"x": 1})
    assert storage.memory.delete_working_memory("thread:a") is True
    assert storage.memory.delete_working_memory("thread:a") is False
    assert storage.memory.get_working_memory("thread:a") is None


def test_non_json_value_is_refused_naming_key(storage: Storage) -> None:
    with pytest.raises(InvalidInputError, match="thread:a"):
        storage.memory.put_working_memory("thread:a", {"bad": object()})
    assert storage.memory.list_working_memory_keys() == []


def test_stored_json_null_is_a_value_that_exists(storage: Storage) -> None:
    # get cannot tell null from absent, but listing, deleting, cloning and erasing can:
    # every adapter must treat the stored null as a key that exists
    m = storage.memory
    m.create_thread("src", resource_id="u1")
    m.put_working_memory("thread:src", None)
    m.put_working_memory("resource:u1", None)
    assert m.get_working_memory("thread:src") is None
    assert m.list_working_memory_keys() == ["resource:u1", "thread:src"]
    m.clone_thread("src", "dst")
    assert "thread:dst" in m.list_working_memory_keys()
    assert m.delete_working_memory("thread:dst") is True
    assert m.delete_working_memory("thread:dst") is False
    assert erase_thread(storage, "src").working_memory == ["thread:src"]
    assert erase_resource(storage, "u1").working_memory == ["resource:u1"]
    assert m.list_working_memory_keys() == []
