"""Working memory (SPEC §7): keys, rendering, the deep merge (with property tests),
schema validation of patches, per-key locking and the update tool."""

from __future__ import annotations

import copy
import threading
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from memory_core.composition.working_memory import (
    TOOL_NAME,
    KeyLocks,
    WorkingMemory,
    WorkingMemoryConfig,
    deep_merge,
    render_block,
    working_memory_key,
)
from memory_core.errors import InvalidInputError
from memory_core.storage.inmemory import InMemoryStorage


class Plan(BaseModel):
    goal: str | None = None
    steps: list[str] = []
    budget: int | None = None


# -- config and keys ------------------------------------------------------------------
def test_schema_and_template_together_are_refused() -> None:
    with pytest.raises(InvalidInputError, match="schema or a template"):
        WorkingMemoryConfig(schema=Plan, template="# Plan")


def test_bad_scope_is_refused_naming_it() -> None:
    with pytest.raises(InvalidInputError, match="'person'"):
        WorkingMemoryConfig(scope="person")  # type: ignore[arg-type]


def test_schema_must_be_a_pydantic_model() -> None:
    with pytest.raises(InvalidInputError, match="pydantic model"):
        WorkingMemoryConfig(schema=dict)  # type: ignore[arg-type]


def test_keys_follow_scope_and_fall_back_to_thread() -> None:
    thread = WorkingMemoryConfig()
    res = WorkingMemoryConfig(scope="resource")
    assert working_memory_key(thread, "t1", "u1") == "thread:t1"
    assert working_memory_key(res, "t1", "u1") == "resource:u1"
    assert working_memory_key(res, "t1", None) == "thread:t1"


def test_a_stored_non_object_reads_as_empty() -> None:
    s = InMemoryStorage()
    s.memory.put_working_memory("thread:t1", [1, 2])
    assert WorkingMemory(s.memory, WorkingMemoryConfig()).get("t1") == {}


# -- rendering (SPEC §7.4) -------------------------------------------------------------
def test_render_free_form_values_as_two_space_json() -> None:
    text = render_block(WorkingMemoryConfig(), {"a": 1})
    assert text == ("# Working Memory\n<working_memory>\n{\n  \"a\": 1\n}\n</working_memory>"
                    f"\nUpdate it by calling {TOOL_NAME} with only the fields that changed "
                    "(null deletes a field).")


def test_render_schema_lists_fields_and_read_only_has_no_hint() -> None:
    text = render_block(WorkingMemoryConfig(schema=Plan, read_only=True), {})
    assert text == ("# Working Memory\n<working_memory>\n{}\n</working_memory>"
                    "\nFields: goal, steps, budget")
    assert TOOL_NAME not in text


def test_spec_7_4_render_template_verbatim_values_not_appended() -> None:
    cfg = WorkingMemoryConfig(template="## Person\n- name:\n- city:")
    block = "# Working Memory\n<working_memory>\n## Person\n- name:\n- city:\n</working_memory>"
    assert render_block(cfg, {}).startswith(block)
    # object values are hidden, as the reference renders them: never appended as JSON
    filled = render_block(cfg, {"name": "Ayse"})
    assert filled.startswith(block) and "Ayse" not in filled and "{" not in filled


def test_spec_7_4_free_form_template_filled_in_is_the_body() -> None:
    cfg = WorkingMemoryConfig(template="## Person\n- name:\n- city:")
    s = InMemoryStorage()
    wm = WorkingMemory(s.memory, cfg)
    out = wm.tool("t1", None).fn({"memory": "## Person\n- name: Ayse\n- city: Izmir"})
    assert out["ok"] and s.memory.get_working_memory("thread:t1") == {
        "text": "## Person\n- name: Ayse\n- city: Izmir"}
    text = wm.render("t1")
    assert text.startswith("# Working Memory\n<working_memory>\n## Person\n- name: Ayse\n"
                           "- city: Izmir\n</working_memory>")
    assert "whole template filled in" in text
    params = wm.tool("t1", None).spec.parameters
    assert params["properties"]["memory"]["type"] == ["string", "object"]


# -- deep merge (SPEC §7.6) ------------------------------------------------------------
def test_merge_spec_example() -> None:
    assert deep_merge({"a": 1, "b": {"c": 2, "d": 3}}, {"b": {"c": 9, "d": None}, "e": 5}) \
        == {"a": 1, "b": {"c": 9}, "e": 5}


def test_merge_non_object_existing_returns_update_as_is() -> None:
    assert deep_merge([1], {"a": None, "b": 2}) == {"a": None, "b": 2}
    assert deep_merge(None, {"a": 1}) == {"a": 1}


def test_merge_non_object_update_gives_empty() -> None:
    assert deep_merge({"a": 1}, [1, 2]) == {}
    assert deep_merge({"a": 1}, None) == {}


def test_spec_7_6_new_nested_object_is_stored_with_its_nulls() -> None:
    # as the reference stores it: a non-object existing value takes the update as-is
    assert deep_merge({}, {"a": {"b": None, "c": 1}}) == {"a": {"b": None, "c": 1}}
    assert deep_merge({"a": 3}, {"a": {"b": None}}) == {"a": {"b": None}}
    # an existing object merges: its nulls delete
    assert deep_merge({"a": {"b": 1, "c": 1}}, {"a": {"b": None}}) == {"a": {"c": 1}}


def test_merge_does_not_mutate_inputs() -> None:
    existing = {"a": {"b": 1}}
    update = {"a": {"c": 2}}
    deep_merge(existing, update)
    assert existing == {"a": {"b": 1}} and update == {"a": {"c": 2}}


json_scalar = st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=3)
json_value = st.recursive(
    json_scalar,
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.sampled_from("abcd"), inner, max_size=3),
    max_leaves=10)
json_object = st.dictionaries(st.sampled_from("abcd"), json_value, max_size=4)
# a loaded 2-core CI machine trips hypothesis' generation-speed check; the data is small
prop = settings(max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.too_slow])


def _no_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _no_nulls(v) for k, v in value.items() if v is not None}
    return value


@prop
@given(json_object)
def test_merging_empty_patch_is_identity(obj: dict[str, Any]) -> None:
    assert deep_merge(obj, {}) == obj


@prop
@given(json_object, json_object)
def test_applying_the_same_patch_twice_is_idempotent(obj: dict[str, Any],
                                                     patch: dict[str, Any]) -> None:
    # a new nested object keeps its nulls (SPEC §7.6), so a patch whose nested objects
    # hold nulls is not idempotent, as in the reference; top-level nulls always delete
    patch = {k: _no_nulls(v) for k, v in patch.items()}
    once = deep_merge(obj, patch)
    assert deep_merge(once, patch) == once


@prop
@given(json_object, st.sampled_from("abcd"))
def test_null_deletes_the_key(obj: dict[str, Any], key: str) -> None:
    assert key not in deep_merge(obj, {key: None})


@prop
@given(json_object, json_object)
def test_patch_keys_win_and_other_keys_survive(obj: dict[str, Any],
                                               patch: dict[str, Any]) -> None:
    merged = deep_merge(obj, patch)
    for k, v in obj.items():
        if k not in patch:
            assert merged[k] == v
    for k, v in patch.items():
        if v is None:
            assert k not in merged
        elif isinstance(v, dict):
            assert merged[k] == deep_merge(obj.get(k), v)
        else:
            assert merged[k] == v  # arrays and scalars replace


@prop
@given(json_object, json_object)
def test_nested_objects_merge(obj: dict[str, Any], inner: dict[str, Any]) -> None:
    existing = {"n": copy.deepcopy(obj)}
    merged = deep_merge(existing, {"n": inner})
    assert merged["n"] == deep_merge(obj, inner)


@prop
@given(json_object, json_object)
def test_merge_of_null_free_objects_has_no_top_level_nulls(obj: dict[str, Any],
                                                           patch: dict[str, Any]) -> None:
    merged = deep_merge(_no_nulls(obj), patch)
    assert None not in merged.values()


# -- updates ---------------------------------------------------------------------------
def test_update_merges_and_stores() -> None:
    s = InMemoryStorage()
    wm = WorkingMemory(s.memory, WorkingMemoryConfig())
    wm.update("t1", None, {"a": 1, "b": {"c": 2, "d": 3}})
    out = wm.update("t1", None, {"b": {"c": 9, "d": None}, "e": 5})
    assert out == {"ok": True, "memory": {"a": 1, "b": {"c": 9}, "e": 5}}
    assert s.memory.get_working_memory("thread:t1") == {"a": 1, "b": {"c": 9}, "e": 5}


def test_resource_scope_shares_memory_across_threads() -> None:
    s = InMemoryStorage()
    wm = WorkingMemory(s.memory, WorkingMemoryConfig(scope="resource"))
    wm.update("t1", "u1", {"name": "Ayse"})
    assert wm.get("t2", "u1") == {"name": "Ayse"}
    assert wm.get("t2", "u2") == {}


def test_schema_patch_with_bad_value_names_the_field_and_stores_nothing() -> None:
    s = InMemoryStorage()
    wm = WorkingMemory(s.memory, WorkingMemoryConfig(schema=Plan))
    wm.update("t1", None, {"goal": "refund"})
    with pytest.raises(InvalidInputError, match="budget"):
        wm.update("t1", None, {"budget": "lots"})
    with pytest.raises(InvalidInputError, match="colour"):
        wm.update("t1", None, {"colour": "red"})
    assert s.memory.get_working_memory("thread:t1") == {"goal": "refund"}


def test_schema_patch_coerces_and_null_deletes() -> None:
    s = InMemoryStorage()
    wm = WorkingMemory(s.memory, WorkingMemoryConfig(schema=Plan))
    assert wm.update("t1", None, {"budget": "12", "steps": ["a"]})["memory"] == \
        {"budget": 12, "steps": ["a"]}
    assert wm.update("t1", None, {"budget": None})["memory"] == {"steps": ["a"]}


def test_read_only_refuses_updates() -> None:
    wm = WorkingMemory(InMemoryStorage().memory, WorkingMemoryConfig(read_only=True))
    with pytest.raises(InvalidInputError, match="read-only"):
        wm.update("t1", None, {"a": 1})


def test_tool_without_schema_takes_memory_object() -> None:
    s = InMemoryStorage()
    tool = WorkingMemory(s.memory, WorkingMemoryConfig()).tool("t1", None)
    assert tool.name == TOOL_NAME
    assert tool.spec.parameters["properties"]["memory"]["type"] == "object"
    assert tool.fn({"memory": {"a": 1}}) == {"ok": True, "memory": {"a": 1}}
    # input.memory ?? input
    assert tool.fn({"b": 2}) == {"ok": True, "memory": {"a": 1, "b": 2}}


def test_tool_with_schema_exposes_partial_schema_and_reports_errors() -> None:
    s = InMemoryStorage()
    tool = WorkingMemory(s.memory, WorkingMemoryConfig(schema=Plan)).tool("t1", None)
    params = tool.spec.parameters
    assert set(params["properties"]) == {"goal", "steps", "budget"}
    assert not params.get("required")
    result = tool.fn({"budget": "lots"})
    assert result["ok"] is False and "budget" in result["error"]
    assert tool.fn({"goal": "ship"}) == {"ok": True, "memory": {"goal": "ship"}}


class RacingStore:
    """A store whose working-memory read holds every reader at a barrier until all of
    them have read: without the key lock, all updaters read the same (empty) record
    before any of them writes, and all but one update is lost. With the lock only one
    reader is ever inside, so the barrier times out, breaks, and lets each one through."""

    def __init__(self, store: Any, parties: int) -> None:
        self._store = store
        self.barrier = threading.Barrier(parties, timeout=0.5)

    def get_working_memory(self, key: str) -> Any:
        value = self._store.get_working_memory(key)
        try:
            self.barrier.wait()
        except threading.BrokenBarrierError:
            pass
        return value

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def test_updates_to_one_key_are_serialised() -> None:
    n = 8
    store = RacingStore(InMemoryStorage().memory, n)
    wm = WorkingMemory(store, WorkingMemoryConfig())  # type: ignore[arg-type]
    start = threading.Barrier(n)
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            start.wait(10)  # every updater starts at once
            wm.update("t1", None, {f"k{i}": i})
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors and not any(t.is_alive() for t in threads)
    assert wm.get("t1") == {f"k{i}": i for i in range(n)}  # no update was lost


def test_different_keys_never_wait_on_each_other() -> None:
    locks = KeyLocks()
    s = InMemoryStorage()
    wm = WorkingMemory(s.memory, WorkingMemoryConfig(), locks)
    held = locks.get("thread:t1")
    held.acquire()
    try:
        done = threading.Event()
        t = threading.Thread(target=lambda: (wm.update("t2", None, {"a": 1}), done.set()))
        t.start()
        assert done.wait(10), "an update of thread:t2 waited on thread:t1's lock"
        blocked = threading.Event()
        t1 = threading.Thread(target=lambda: (wm.update("t1", None, {"a": 1}), blocked.set()))
        t1.start()
        assert not blocked.wait(0.2)  # same key: it queues behind the holder
    finally:
        held.release()
    t1.join(10)
    assert blocked.is_set()
    t.join(10)
