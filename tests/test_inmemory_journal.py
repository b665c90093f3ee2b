"""The in-memory journal lists a run's records without reading the whole journal: every
run's claim lists its own prefix, and a scan of every key made each run cost more than
the one before (3 ms a run after 350 runs, in the runner benchmark). The dict core
(memory_core/storage/inmemory.py) scans a prefix holding ':' through its group index."""

from __future__ import annotations

from typing import Any

import pytest

from memory_core.storage.core import JOURNAL
from memory_core.storage.inmemory import InMemoryStorage


class NoWholeScan(dict):  # type: ignore[type-arg]
    """The journal's entries, refusing to be walked whole."""

    def __iter__(self) -> Any:
        raise AssertionError("the whole journal was scanned")

    def items(self) -> Any:
        raise AssertionError("the whole journal was scanned")


@pytest.fixture
def storage() -> InMemoryStorage:
    return InMemoryStorage()


@pytest.fixture
def journal(storage: InMemoryStorage) -> Any:
    runs = storage.runs
    for r in ("r1", "r10", "r2"):
        for kind in ("input", "prompt", "step:0", "step:1", "output"):
            runs.put_if_absent(f"{r}:{kind}", {"run": r, "kind": kind})
    runs.put_if_absent("om:t:proc:observe:0", 1)
    runs.put_if_absent("plain", 2)
    return runs


def test_a_prefix_with_a_colon_reads_only_its_group(storage: InMemoryStorage,
                                                    journal: Any) -> None:
    core: Any = storage.core
    core._docs[JOURNAL] = NoWholeScan(core._docs[JOURNAL])
    assert [k for k, _ in journal.list("r1:")] == [
        "r1:input", "r1:prompt", "r1:step:0", "r1:step:1", "r1:output"]
    assert [k for k, _ in journal.list("r1:step:")] == ["r1:step:0", "r1:step:1"]
    assert journal.list("r3:") == [] and journal.list("om:t:") == [("om:t:proc:observe:0", 1)]
    assert journal.delete("r1:step:") == 2
    assert journal.put_if_absent("r1:step:0", "again") is True
    assert [k for k, _ in journal.list("r1:")] == [
        "r1:input", "r1:prompt", "r1:output", "r1:step:0"]


def test_any_other_prefix_still_finds_every_key_in_order(storage: InMemoryStorage,
                                                         journal: Any) -> None:
    assert [k for k, _ in journal.list("r1")][:6] == [
        "r1:input", "r1:prompt", "r1:step:0", "r1:step:1", "r1:output", "r10:input"]
    assert len(journal.list("")) == 17 and journal.list("pl") == [("plain", 2)]
    assert journal.delete("r") == 15
    assert journal.list("r1:") == [] and journal.put_if_absent("r1:input", 3) is True
    assert journal.delete("") == 3 and journal.list("") == []
    assert storage.core._groups[JOURNAL] == {}  # type: ignore[attr-defined]
