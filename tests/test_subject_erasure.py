"""SPEC §9.3–9.5: erasing a person (``erase_subject``): threads, working memory, the
observer journal under both key generations and observations go; the report names the
threads erased and those no store given could reach; refusals come before any write."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memory_core.composition.memory import AgentMemory
from memory_core.composition.working_memory import WorkingMemoryConfig
from memory_core.embedding.hashing import HashingEmbedder
from memory_core.errors import InvalidInputError
from memory_core.journal import ObserverKeys
from memory_core.journal.seal import verify_run
from memory_core.lifecycle.erasure import erase_subject
from memory_core.models.scripted import ScriptedModel
from memory_core.runs.runner import Agent, Runner
from memory_core.storage.base import Storage
from memory_core.storage.duckdb import DuckDBStorage
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.storage.sqlite import SQLiteStorage
from memory_core.types import AppendRow, Message, Observation, RunRecord
from tests.helpers import T0, Tick

SECRET = "my locker code is LK-48213"


def everything(s: Storage) -> str:
    parts = [repr(s.runs.list("")), repr(s.runs.list_runs())]
    for t in s.memory.list_threads():
        parts += [repr(s.memory.get_messages(t.id)), repr(s.memory.list_observations(t.id))]
    parts += [repr(s.memory.get_working_memory(k)) for k in s.memory.list_working_memory_keys()]
    return "\n".join(parts)


def observe(s: Storage, tid: str, oid: str, text: str) -> None:
    s.memory.put_observation(Observation(id=oid, thread_id=tid, from_seq=0, to_seq=0,
                                         text=text, created_at=T0))
    s.runs.put_if_absent(ObserverKeys(tid).observe(0), {"v": 1, "text": text})


def ayse_and_staff(s: Storage | None = None) -> tuple[Storage, AgentMemory]:
    s = s if s is not None else InMemoryStorage(clock=Tick())
    mem = AgentMemory(s, HashingEmbedder(), recent_n=4,
                      working_memory=WorkingMemoryConfig(scope="resource"))
    model = ScriptedModel(["noted", "noted again", "staff note"])
    runner = Runner(s, {"a": Agent(name="a", instructions="help", model=model)},
                    memory=mem, clock=Tick())
    runner.run("a", run_id="r1", thread_id="ayse:1", resource_id="ayse", prompt=SECRET)
    runner.run("a", run_id="r2", thread_id="ayse-2", resource_id="ayse",
               prompt="second visit")
    mem.update_working_memory(thread_id="ayse:1", resource_id="ayse", patch={"name": "Ayse"})
    s.memory.put_working_memory("thread:ayse-2", {"mood": "fine"})
    observe(s, "ayse:1", "obs-a", "Ayse keeps her locker code LK-48213")
    # a staff thread: its run quotes her code, its observations are its own
    runner.run("a", run_id="r3", thread_id="staff", resource_id="staff",
               prompt=f"a customer said: {SECRET}")
    observe(s, "staff", "obs-s", "the staff member restocked the lockers")
    return s, mem


def test_spec_9_3_erase_subject_removes_threads_wm_journal_and_observations() -> None:
    s, _ = ayse_and_staff()
    legacy = ObserverKeys("ayse:1")
    assert legacy.has_legacy  # a thread id with ':' has two observer-key generations
    s.runs.put_if_absent(f"{legacy.legacy_prefix}observe:1", {"v": 1, "text": SECRET})
    staff_run = s.runs.list("r3:")
    report = erase_subject(s, "ayse")
    assert report.memory_threads == ["ayse-2", "ayse:1"] == sorted(report.threads)
    assert set(report.working_memory) == {"resource:ayse", "thread:ayse-2"}
    assert report.unreached_threads == [] and report.observations == 1
    assert {r.run_id for r in s.runs.list_runs()} == {"r3"}
    assert s.memory.list_threads("ayse") == [] and s.runs.list("om:ayse") == []
    assert "Ayse" not in everything(s)
    assert [k for k, _ in s.runs.list("") if k.startswith(("r1:", "r2:"))] == []
    # what the staff member typed is theirs: kept, and so is their run, which was never
    # given Ayse's messages (equal text is not a copy: issue 33)
    assert s.memory.get_messages("staff")[0].text() == f"a customer said: {SECRET}"
    assert [o.id for o in s.memory.list_observations("staff")] == ["obs-s"]
    assert s.runs.list(ObserverKeys("staff").prefix) != []
    assert report.redacted_runs == [] and s.runs.list("r3:") == staff_run
    assert verify_run(s, "r3").status == verify_run(ayse_and_staff()[0], "r3").status


def test_spec_9_3_an_anonymous_thread_claimed_later_takes_its_observations() -> None:
    s, _ = ayse_and_staff()
    s.memory.create_thread("anon")  # no owner when the observer ran
    s.memory.append_messages("anon", [AppendRow(message=Message(role="user",
                                                                content="hi, it's me"))])
    observe(s, "anon", "obs-anon", "someone said hi")
    s.memory.update_thread("anon", resource_id="ayse")  # claimed on sign-in
    report = erase_subject(s, "ayse")
    assert "anon" in report.memory_threads and report.observations == 2
    assert s.memory.list_observations("anon") == [] and s.runs.list("om:anon") == []
    assert [o.id for o in s.memory.list_observations("staff")] == ["obs-s"]


def split_storages() -> tuple[Storage, Storage]:
    """Runs kept in ``journal``, the thread's memory on ``kept``."""
    journal, kept = InMemoryStorage(), InMemoryStorage()
    kept.memory.create_thread("far", resource_id="ayse")
    kept.memory.append_messages("far", [AppendRow(message=Message(role="user",
                                                                  content=SECRET))])
    kept.memory.put_working_memory("resource:ayse", {"code": "LK-48213"})
    for rid, tid, who in (("j1", "far", "ayse"), ("j2", "desk", "staff")):
        journal.runs.start_run(RunRecord(run_id=rid, agent="a", thread_id=tid,
                                         resource_id=who, started_at=T0))
        journal.runs.put_if_absent(f"{rid}:input", {"messages": [
            {"role": "user", "content": f"copy: {SECRET}"}]})
    return journal, kept


def test_spec_9_4_threads_on_another_storage_are_unreached_unless_given() -> None:
    journal, kept = split_storages()
    report = erase_subject(journal, "ayse")
    assert report.unreached_threads == ["far"] and report.memory_threads == []
    assert kept.memory.count_messages("far") == 1  # untouched
    assert journal.runs.get_run("j1") is None  # its run here is the person's: erased

    journal, kept = split_storages()
    mem = AgentMemory(kept)
    report = erase_subject(journal, "ayse", memory=mem)
    assert report.memory_threads == ["far"] and report.unreached_threads == []
    assert report.working_memory == ["resource:ayse"]
    assert kept.memory.get_thread("far") is None and kept.memory.list_working_memory_keys() == []
    # j2 (the desk's) holds the same text but was never given Ayse's messages: kept
    assert journal.runs.get_run("j1") is None and report.redacted_runs == []
    assert "LK-48213" not in everything(kept)
    assert [k for k, _ in journal.runs.list("") if k.startswith("j1:")] == []
    assert erase_subject(journal, "ayse", memory=kept).memory_threads == []  # again: no-op


class MessagesOnly:
    def get_messages(self, thread_id: str) -> list[Message]:
        return []


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"org_id": "acme"}, "org_id 'acme': this storage keeps no organisations"),
    ({"memory": MessagesOnly()}, "a MessagesOnly has none"),
    ({"memory": "duckdb:///x.db"}, "a str has none"),
])
def test_spec_9_5_refusals_come_before_anything_is_written(kwargs: dict[str, Any],
                                                           match: str) -> None:
    s, _ = ayse_and_staff()
    before = everything(s)
    with pytest.raises(InvalidInputError, match=match):
        erase_subject(s, "ayse", **kwargs)
    assert everything(s) == before
    for bad in ("", None, 3):
        with pytest.raises(InvalidInputError, match="user must be a non-empty resource id"):
            erase_subject(s, bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="storage must be a memory_core Storage"):
        erase_subject(AgentMemory(s), "ayse")  # type: ignore[arg-type]
    assert everything(s) == before


def test_spec_9_5_acme_ayse_and_globex_ayse() -> None:
    """One storage per organisation: erasing acme's Ayse leaves globex's."""
    acme, _ = ayse_and_staff()
    globex, _ = ayse_and_staff()
    before = everything(globex)
    report = erase_subject(acme, "ayse")
    assert report.memory_threads == ["ayse-2", "ayse:1"]
    assert everything(globex) == before and "LK-48213" in before
    assert acme.memory.list_threads("ayse") == [] and globex.memory.list_threads("ayse")
    assert [k for k, _ in acme.runs.list("") if k.startswith(("r1:", "r2:"))] == []


def test_spec_9_3_no_byte_of_the_person_stays_in_duckdb_or_sqlite_files(
        tmp_path: Path) -> None:
    for name, make in (("d.duckdb", DuckDBStorage), ("s.sqlite", SQLiteStorage)):
        path = tmp_path / name
        s = make(str(path), clock=Tick())
        try:
            ayse_and_staff(s)
            report = erase_subject(s, "ayse", memory=AgentMemory(s))  # the same storage
            assert report.memory_threads == ["ayse-2", "ayse:1"]
            assert report.unreached_threads == []
        finally:
            s.close()
        data = b"".join(p.read_bytes() for p in tmp_path.glob(f"{name}*"))
        assert b"LK-48213" in data  # the staff member's own message keeps it
        assert b"my locker code is LK-48213" not in data.replace(
            b"a customer said: my locker code is LK-48213", b"")
        assert b"second visit" not in data and b"Ayse keeps" not in data
