"""Erasure reaches every copy: a thread's text is gone from every table, every other
run's records and the database file's bytes, and the other runs still replay."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_core.analysis.counterfactual import counterfactual
from memory_core.embedders import HashingEmbedder
from memory_core.errors import NotFoundError
from memory_core.journal.seal import verify_run
from memory_core.memory import AgentMemory
from memory_core.models.reader import ReaderModel
from memory_core.recall import RecallConfig
from memory_core.replay import replay
from memory_core.runner import Agent, Runner
from memory_core.storage.base import Storage
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.storage.sqlite import SQLiteStorage

MARKER = "ZQX-4471-KESTREL"


def play(s: Storage) -> None:
    embed = HashingEmbedder(256)
    mem = AgentMemory(s, embed=embed, recent_n=2,
                      recall=RecallConfig(top_k=3, threshold=0.0, scope="resource"))
    runner = Runner(s, {"a": Agent("a", "Answer from the conversation.",
                                   ReaderModel(embed=embed))}, memory=mem)
    runner.run("a", run_id="s1", thread_id="secret", resource_id="u",
               prompt=f"My locker code is {MARKER}. Please remember the locker code.")
    runner.run("a", run_id="s2", thread_id="secret", resource_id="u",
               prompt="Thanks, that is all about the locker for now.")
    for i in range(3):
        runner.run("a", run_id=f"o{i}", thread_id="other", resource_id="u",
                   prompt=f"What is my locker code? (asking again, {i})")
    counterfactual(s, "o0", subtract="all")
    counterfactual(s, "o1", lanes=["recent"])


def all_text(s: Storage) -> str:
    parts = [repr(s.runs.list(""))]
    for t in s.memory.list_threads():
        parts.append(repr(s.memory.get_messages(t.id)))
        parts.append(repr(s.memory.list_observations(t.id)))
    for key in s.memory.list_working_memory_keys():
        parts.append(repr(s.memory.get_working_memory(key)))
    parts.append(repr(s.runs.list_runs()))
    return "\n".join(parts)


def check_erased(s: Storage) -> None:
    assert MARKER in all_text(s)  # planted, recalled and quoted before
    assert any(MARKER in repr(v) for k, v in s.runs.list("o0:"))
    report = s.erase_thread("secret")
    assert MARKER not in all_text(s)
    assert set(report.redacted_runs) >= {"o0", "o1", "o2"}
    assert report.answered_with == ["other"]
    assert s.memory.get_thread("secret") is None
    for rid in ("o0", "o1", "o2"):
        assert verify_run(s, rid).status == "redacted"
        assert replay(s, rid).integrity == "redacted"
    with pytest.raises(NotFoundError):
        s.erase_thread("secret")


def test_erasing_a_thread_redacts_every_other_runs_records_in_memory() -> None:
    s = InMemoryStorage()
    play(s)
    check_erased(s)


def test_no_byte_of_the_erased_text_remains_in_the_sqlite_file(tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    s = SQLiteStorage(str(path))
    play(s)
    check_erased(s)
    s.close()
    for f in tmp_path.iterdir():
        assert MARKER.encode() not in f.read_bytes(), f.name


def test_erase_finishes_what_a_crash_left() -> None:
    s = InMemoryStorage()
    play(s)
    # a crash after the thread's data was deleted, before its runs and journals were
    s.memory.delete_thread("secret")
    assert s.runs.get_run("s1") is not None
    report = s.erase_thread("secret")
    assert report.runs == 2 and s.runs.get_run("s1") is None
    assert s.runs.list("s1:") == []
