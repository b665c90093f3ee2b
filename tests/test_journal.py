"""The journal package owns keys, records, the writer and the reader."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memory_core.composition.memory import AgentMemory
from memory_core.composition.observational import ObservationalConfig
from memory_core.embedding.hashing import HashingEmbedder
from memory_core.errors import InvalidInputError
from memory_core.journal import (
    RECORDS,
    JournalWriter,
    ObserverKeys,
    ObserverReader,
    RunKeys,
    RunReader,
    StepRecord,
    load_run,
    prefetched_readers,
)
from memory_core.journal.records import identity_from_v1
from memory_core.lifecycle.erasure import erase_thread
from memory_core.models.base import ModelIdentity, ModelResponse
from memory_core.models.scripted import ScriptedModel
from memory_core.models.summarizer import ExtractiveSummarizer
from memory_core.runs.runner import Agent, Runner
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import Message, RunRecord

ROOT = Path(__file__).resolve().parents[1]
T0 = datetime(2027, 1, 1, tzinfo=UTC)
KEY_SHAPES = re.compile(r"""["'`]?\{?[a-z_.()]*\}?:(input|prompt|memctx|output|step:|tool:|"""
                        r"""persist:|cf:|import)\b|["']om:""")


def test_no_journal_key_is_spelled_outside_the_journal_package() -> None:
    offenders = []
    for path in sorted((ROOT / "memory_core").rglob("*.py")) + sorted((ROOT / "app").rglob(
            "*.py")):
        if {"journal", "testing"} & set(path.relative_to(ROOT).parts):
            continue  # (the conformance suite writes keys of its own as test data)
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"""f["'][^"']*\{[^}]*\}:(input|prompt|memctx|output|step|tool|"""
                         r"""persist|cf|import)\b""", line) or re.search(r"""["']om:""", line):
                offenders.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert offenders == []


def test_run_keys_name_every_record_and_parse_back() -> None:
    k = RunKeys("r1")
    assert [k.input, k.prompt, k.memctx, k.output, k.step(3), k.tool("c"), k.cf("ab")] == [
        "r1:input", "r1:prompt", "r1:memctx", "r1:output", "r1:step:3", "r1:tool:c",
        "r1:cf:ab"]
    assert k.kind_of("r1:step:3") == ("step", "3")
    assert k.kind_of("r1:persist:output") == ("persist:output", None)
    assert k.kind_of("r10:step:3") is None and k.kind_of("r1:nonsense") is None
    with pytest.raises(InvalidInputError, match="'a:b'"):
        JournalWriter(InMemoryStorage().runs, "a:b")


def test_an_observer_prefix_never_reaches_a_thread_whose_id_extends_it() -> None:
    a, b = ObserverKeys("proj"), ObserverKeys("proj:archive")
    assert not b.observe(0).startswith(a.prefix)
    assert ObserverKeys("x%3Ay").prefix != ObserverKeys("x:y").prefix


def _om_runner(s: InMemoryStorage, thread: str) -> Runner:
    embed = HashingEmbedder(64)
    om = ObservationalConfig(model=ExtractiveSummarizer(), message_threshold=4)
    mem = AgentMemory(s, embed=embed, recent_n=2, observational_memory=om)
    agent = Agent("a", "Be brief.", ScriptedModel(["ok"] * 20))
    return Runner(s, {"a": agent}, memory=mem)


def test_erasing_a_thread_keeps_the_observer_journal_of_a_thread_it_prefixes() -> None:
    s = InMemoryStorage()
    for thread in ("proj", "proj:archive"):
        runner = _om_runner(s, thread)
        for i in range(6):
            # (no text of "proj" inside one of "proj:archive": the same person's other
            # thread is exposed, and an erased text found in its journal is redacted)
            runner.run("a", run_id=f"{thread.replace(':', '-')}-{i}", thread_id=thread,
                       resource_id="u", prompt=f"{thread} says message number {i}")
    assert ObserverReader(s.runs, "proj:archive").entries()
    kept = ObserverReader(s.runs, "proj:archive").entries()
    erase_thread(s, "proj")
    assert ObserverReader(s.runs, "proj").entries() == []
    assert ObserverReader(s.runs, "proj:archive").entries() == kept


def test_legacy_observer_keys_of_a_thread_with_a_colon_are_still_read_and_erased() -> None:
    s = InMemoryStorage()
    rec = {"v": 1, "text": "t", "from_seq": 0, "to_seq": 1, "kept_seqs": [0]}
    s.runs.put_if_absent("om:a:b:proc:observe:0", rec)
    s.runs.put_if_absent("om:a:b:c:proc:observe:0", rec)  # thread "a:b:c", not ours
    reader = ObserverReader(s.runs, "a:b")
    obs = reader.observe(0)
    assert obs is not None and obs.to_seq == 1
    assert [k for k, _ in reader.entries()] == ["om:a:b:proc:observe:0"]
    assert reader.erase() == 1
    assert s.runs.get("om:a:b:c:proc:observe:0") == rec


def test_every_record_kind_has_a_type_and_an_upgrade_for_each_old_version() -> None:
    for spec in RECORDS.values():
        assert set(spec.upgrades) == set(range(min(spec.upgrades, default=spec.version),
                                               spec.version)), spec.kind


def test_a_record_newer_than_the_code_or_not_an_object_is_a_clear_error() -> None:
    s = InMemoryStorage()
    s.runs.put_if_absent("r:output", {"v": 99, "text": "x", "steps": 1, "tool_calls": 0})
    s.runs.put_if_absent("r:input", [1, 2])
    with pytest.raises(InvalidInputError, match="'r:output'.*newer than this code"):
        RunReader(s.runs, "r").output()
    with pytest.raises(InvalidInputError, match="'r:input' must be a JSON object"):
        RunReader(s.runs, "r").input()


@pytest.mark.parametrize(("info", "model", "want"), [
    ({"name": "offline-reader", "temperature": 0.0}, None, ("reader", "offline-reader", 0.0)),
    ({"name": "openai:llama3.1", "seed": 7}, None, ("openai", "llama3.1", None)),
    ({"name": "llama3.1", "temperature": 0.7}, None, ("custom", "llama3.1", 0.7)),
    ({}, "gpt-4o-mini", ("custom", "gpt-4o-mini", None)),
])
def test_v1_model_names_become_typed_identities(info: dict, model: str | None,
                                                want: tuple) -> None:
    ident = ModelIdentity.model_validate(identity_from_v1(info, model))
    assert (ident.kind, ident.name, ident.temperature) == want


def test_the_writer_is_first_write_wins_and_returns_what_is_recorded() -> None:
    s = InMemoryStorage()
    seen: list[str] = []
    w = JournalWriter(s.runs, "r", on_written=seen.append)
    first = StepRecord(response=ModelResponse(text="one"),
                       model=ModelIdentity(kind="scripted", name="m"))
    second = StepRecord(response=ModelResponse(text="two"),
                        model=ModelIdentity(kind="scripted", name="m"))
    assert w.step(0, first).response.text == "one"
    assert w.step(0, second).response.text == "one"
    assert seen == ["step:0"]


def test_a_run_made_by_the_runner_reads_back_whole() -> None:
    s = InMemoryStorage()
    mem = AgentMemory(s, embed=HashingEmbedder(64), recent_n=4)
    model = ScriptedModel(["hi"])
    model.temperature = 0.3  # type: ignore[attr-defined]
    runner = Runner(s, {"a": Agent("a", "Be brief.", model)}, memory=mem)
    runner.run("a", run_id="r1", thread_id="t", resource_id="u", prompt="hello")
    data = load_run(s, "r1")
    assert data.input is not None and data.input.messages == [
        Message(role="user", content="hello")]
    assert data.output is not None and data.output.text == "hi"
    assert data.steps[0].model == ModelIdentity(kind="scripted", name="scripted")
    assert data.persist_input is not None and data.persist_output is not None
    assert RunReader(s.runs, "r1").upgraded_keys() == []
    s.runs.start_run(RunRecord(run_id="r2", agent="a", started_at=T0))
    with pytest.raises(Exception, match="r2"):
        load_run(s, "r2")


def test_prefetched_readers_read_the_named_records_of_many_runs_in_one_query() -> None:
    s = InMemoryStorage()
    mem = AgentMemory(s, embed=HashingEmbedder(64), recent_n=4)
    runner = Runner(s, {"a": Agent("a", "Be brief.", ScriptedModel(["x", "y"]))}, memory=mem)
    for rid in ("r1", "r2"):
        runner.run("a", run_id=rid, thread_id="t", resource_id="u", prompt=f"hello {rid}")
    asked: list[list[str]] = []
    get_many = s.runs.get_many

    def counted(keys: Sequence[str]) -> dict[str, Any]:
        asked.append(list(keys))
        return get_many(keys)

    s.runs.get_many = counted  # type: ignore[method-assign]
    readers = prefetched_readers(s.runs, ["r1", "r2", "r3"], ("prompt", "memctx"))
    assert len(asked) == 1  # one read for every record of every run
    for rid in ("r1", "r2"):
        assert readers[rid].prompt() == RunReader(s.runs, rid).prompt()
        assert readers[rid].memctx() == RunReader(s.runs, rid).memctx()
    assert readers["r3"].prompt() is None  # a run without the record
    with pytest.raises(ValueError, match="not read ahead"):
        readers["r1"].output()  # a record nobody asked for is a bug, never a silent None
    with pytest.raises(InvalidInputError, match="steps"):
        prefetched_readers(s.runs, ["r1"], ("steps",))


def test_inspect_json_prints_an_old_record_upgraded(tmp_path: Path) -> None:
    import json

    from typer.testing import CliRunner

    from memory_core.cli import app
    from memory_core.storage.sqlite import SQLiteStorage

    db = tmp_path / "old.db"
    s = SQLiteStorage(str(db))
    s.memory.create_thread("t", resource_id="u")
    s.runs.start_run(RunRecord(run_id="r", agent="a", thread_id="t", started_at=T0))
    s.runs.put_if_absent("r:prompt", {"v": 1, "items": []})
    s.runs.put_if_absent("r:memctx", {"threadId": "t", "recentCount": 2, "recalled": []})
    s.close()
    result = CliRunner().invoke(app, ["inspect", "r", "--json", "--db", f"sqlite:///{db}"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["v"] >= 1 and out["thread_id"] == "t" and out["recent_count"] == 2
    assert "threadId" not in out
