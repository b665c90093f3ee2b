"""Replay: golden journals (today's, recorded by tests/fixtures/golden/record.py, and
older formats kept as recorded) replay byte-identically with a model that is never
called; every kind of divergence raises ReplayMismatch saying where."""

from __future__ import annotations

import dataclasses
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memory_core.composition.memory import AgentMemory
from memory_core.composition.observational import observe_key
from memory_core.embedding.hashing import HashingEmbedder
from memory_core.errors import InvalidInputError, NotFoundError, ReplayMismatch
from memory_core.models.base import ModelResponse
from memory_core.models.scripted import ScriptedModel
from memory_core.provenance.record import LANES
from memory_core.runs.replay import replay
from memory_core.runs.runner import Agent, Runner
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import AppendRow, Message, RunRecord, StoredMessage, Thread, ToolCallPart
from tests.fixtures.golden import record as golden_record
from tests.fixtures.golden.record import make_memory
from tests.helpers import Tick, jget

GOLDEN = Path(__file__).parent / "fixtures" / "golden"
GOLDEN_FILES = sorted(p.name for p in GOLDEN.glob("*.json"))


class SettableClock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def load_golden(name: str) -> tuple[InMemoryStorage, AgentMemory, dict[str, Any]]:
    data = json.loads((GOLDEN / name).read_text(encoding="utf-8"))
    assert data["format"] == "memwb-golden" and data["v"] == 1
    clock = SettableClock()
    s = InMemoryStorage(clock=clock)
    embed = HashingEmbedder(data["memory"]["embed_dim"])
    for raw in data["threads"]:
        t = Thread.model_validate(raw)
        clock.now = t.created_at
        s.memory.create_thread(t.id, resource_id=t.resource_id, title=t.title,
                               metadata=t.metadata, parent_thread_id=t.parent_thread_id)
    by_thread: dict[str, list[StoredMessage]] = {}
    for raw in data["messages"]:
        m = StoredMessage.model_validate(raw)
        by_thread.setdefault(m.thread_id, []).append(m)
    for tid, msgs in by_thread.items():
        s.memory.append_messages(tid, [AppendRow(
            message=m.as_message(), seq=m.seq, created_at=m.created_at, run_id=m.run_id,
            embedding=embed([m.text() or ""])[0] if m.text() else None) for m in msgs])
    for key, value in data["working_memory"].items():
        s.memory.put_working_memory(key, value)
    for raw in data["runs"]:
        r = RunRecord.model_validate(raw)
        s.runs.start_run(r)
        s.runs.set_run_status(r.run_id, r.status, finished_at=r.finished_at, error=r.error)
    for key, value in data["journal"]:
        assert s.runs.put_if_absent(key, value)
    return s, make_memory(s, data["memory"], clock), data


def golden_runs() -> list[tuple[str, str]]:
    out = []
    for name in GOLDEN_FILES:
        data = json.loads((GOLDEN / name).read_text(encoding="utf-8"))
        out += [(name, r["run_id"]) for r in data["runs"]]
    return out


def test_there_are_golden_files_including_older_formats() -> None:
    assert set(golden_record.CURRENT) < set(GOLDEN_FILES)
    assert {"v0_old_format.json", "v1_no_step_tools_basic.json",
            "v1_no_step_tools_tools_wm.json",
            "v1_no_wm_marks_tools_wm.json"} <= set(GOLDEN_FILES)


@pytest.mark.parametrize("name", sorted(golden_record.CURRENT))
def test_current_goldens_are_what_the_code_records_now(name: str) -> None:
    recorded = golden_record.render(golden_record.CURRENT[name]())
    on_disk = (GOLDEN / name).read_text(encoding="utf-8")
    if recorded != on_disk:
        at = len(os.path.commonprefix([recorded, on_disk]))
        pytest.fail(
            f"tests/fixtures/golden/{name} is not what today's code records (first "
            f"difference at character {at}: {on_disk[at - 40:at + 40]!r} on disk vs "
            f"{recorded[at - 40:at + 40]!r} now). If the record format changed on purpose, "
            f"keep the old file as an older-format golden (git mv it to a name saying "
            f"which format it holds) and re-record with "
            f"`python -m tests.fixtures.golden.record`.")


COMPOSED_BEFORE_THE_WINDOW_FIX = {("v1_no_step_tools_tools_wm.json", "golden-tools-2")}


@pytest.mark.parametrize(("name", "run_id"), golden_runs())
def test_golden_runs_replay_byte_identically(name: str, run_id: str) -> None:
    s, memory, data = load_golden(name)
    journal_before = s.runs.list("")
    if (name, run_id) in COMPOSED_BEFORE_THE_WINDOW_FIX:
        # its recent window opened on a tool result whose call was cut off, a prompt
        # providers reject; today's composition extends the window to the call, so the
        # re-composition differs — the journal itself still replays byte-identically
        with pytest.raises(ReplayMismatch, match="re-composed prompt differs"):
            replay(s, run_id, memory=memory)
        memory = None  # type: ignore[assignment]
    report = replay(s, run_id, memory=memory)
    recorded = dict(data["journal"])[f"{run_id}:output"]
    assert report.output["text"] == recorded["text"]
    assert memory is None or (report.prompt_checked and report.compared_lanes == [
        "instructions", "recalled", "recent", "input"])
    assert report.messages_checked == recorded["steps"] + recorded["tool_calls"]
    assert s.runs.list("") == journal_before  # replay never writes to the real journal


def test_observational_golden_replays_its_observations_lane() -> None:
    s, memory, _ = load_golden("observational.json")
    every_lane_but_wm = [lane for lane in LANES if lane != "working_memory"]
    for run_id in ("golden-om-1", "golden-om-2"):
        report = replay(s, run_id, memory=memory, lanes=every_lane_but_wm)
        assert "observations" in report.compared_lanes and report.prompt_checked
    # the observer is never re-run: a changed observer record changes the lane
    _tamper(s, observe_key("t-golden", 1), lambda v: v.update(text="something else"))
    with pytest.raises(ReplayMismatch, match="observations"):
        replay(s, "golden-om-2", memory=memory, lanes=every_lane_but_wm)


def test_old_format_is_upgraded_explicitly() -> None:
    s, memory, _ = load_golden("v0_old_format.json")
    report = replay(s, "golden-basic", memory=memory)
    assert (report.verified_steps, report.unverified_steps) == (0, 1)
    assert sorted(report.upgraded) == ["golden-basic:input", "golden-basic:memctx",
                                       "golden-basic:output", "golden-basic:step:0"]
    assert report.output["stop_reason"] == "final"
    current, _, _ = load_golden("basic.json")
    new = replay(current, "golden-basic")
    assert (new.verified_steps, new.unverified_steps, new.upgraded) == (1, 0, [])


def test_analysis_reads_old_records_through_the_same_upgrades() -> None:
    from memory_core.journal import load_run

    s, _, _ = load_golden("v0_old_format.json")
    assert "stop_reason" not in jget(s, "golden-basic:output")
    data = load_run(s, "golden-basic")
    assert data.output is not None and data.output.stop_reason == "final"
    # v0 steps carried no model info: the identity comes from the response's model name
    assert (data.steps[0].model.kind, data.steps[0].model.name) == ("scripted", "scripted")


def test_v1_goldens_replay_and_their_model_names_become_identities() -> None:
    from memory_core.journal import load_run

    for name in ("v1_no_step_tools_basic.json", "v1_no_step_tools_tools_wm.json"):
        s, memory, data = load_golden(name)
        for run_id in [r["run_id"] for r in data["runs"]]:
            composed = (name, run_id) not in COMPOSED_BEFORE_THE_WINDOW_FIX
            report = replay(s, run_id, memory=memory if composed else None)
            assert any(":step:" in k for k in report.upgraded)  # step v1 -> v2
            step = load_run(s, run_id).steps[0]
            assert step.model.kind == "scripted" and step.model.name == "scripted"


def test_tool_run_replays_tools_from_the_journal() -> None:
    s, memory, _ = load_golden("tools_wm.json")
    report = replay(s, "golden-tools-1", memory=memory)
    assert (report.steps, report.tool_calls) == (2, 2)


def test_changed_composition_raises_replay_mismatch() -> None:
    s, _, data = load_golden("basic.json")
    settings = {**data["memory"], "recent_n": 3}
    changed = make_memory(s, settings, SettableClock())
    with pytest.raises(ReplayMismatch, match=r"golden-basic:prompt.*differs at item \d"):
        replay(s, "golden-basic", memory=changed)


def test_changed_instructions_raise_replay_mismatch() -> None:
    s, memory, _ = load_golden("basic.json")
    agents = {"support": Agent("support", "You are a pirate.", None)}
    with pytest.raises(ReplayMismatch, match="item 0"):
        replay(s, "golden-basic", memory=memory, agents=agents)


def test_working_memory_lane_is_only_comparable_while_unchanged() -> None:
    s, memory, _ = load_golden("basic.json")
    assert replay(s, "golden-basic", memory=memory, lanes=LANES).compared_lanes == list(LANES)
    s, memory, _ = load_golden("tools_wm.json")
    # run 1 updated working memory after composing: its frozen WM lane predates that
    with pytest.raises(ReplayMismatch, match="working_memory"):
        replay(s, "golden-tools-1", memory=memory, lanes=LANES)


def _tamper(s: InMemoryStorage, key: str, edit: Any) -> None:
    value = jget(s, key)
    s.runs.delete(key)
    edit(value)
    s.runs.put_if_absent(key, value)


def test_tampered_output_names_key_and_position() -> None:
    # an unsealed (older) journal, so replay's own checks are what catches it; on a
    # sealed one verification names the record first (tests/test_seal.py)
    s, _, _ = load_golden("v1_no_step_tools_basic.json")
    _tamper(s, "golden-basic:output", lambda v: v.update(text=v["text"] + "!"))
    with pytest.raises(ReplayMismatch, match=r"'golden-basic:output' differs at character \d+"):
        replay(s, "golden-basic")


def test_changed_step_input_names_the_step_and_message() -> None:
    # an unsealed (older) journal, so replay's own checks are what catches it; on a
    # sealed one verification names the record first (tests/test_seal.py)
    s, _, _ = load_golden("v1_no_step_tools_tools_wm.json")
    _tamper(s, "golden-tools-1:step:1", lambda v: v["input_hashes"].__setitem__(3, "x" * 16))
    with pytest.raises(ReplayMismatch, match=r"golden-tools-1:step:1.*message 3"):
        replay(s, "golden-tools-1")


def test_missing_tool_record_is_a_mismatch_not_a_tool_call() -> None:
    # an unsealed (older) journal, so replay's own checks are what catches it; on a
    # sealed one verification names the record first (tests/test_seal.py)
    s, _, _ = load_golden("v1_no_step_tools_tools_wm.json")
    s.runs.delete("golden-tools-1:tool:call-1")
    with pytest.raises(ReplayMismatch, match="golden-tools-1:tool:call-1"):
        replay(s, "golden-tools-1")


def test_missing_step_would_need_the_model() -> None:
    s, _, _ = load_golden("tools_wm.json")
    s.runs.delete("golden-tools-1:step:1")
    with pytest.raises(ReplayMismatch):
        replay(s, "golden-tools-1")


def test_stored_messages_must_match_the_replayed_ones() -> None:
    # an unsealed (older) journal, so replay's own checks are what catches it; on a
    # sealed one verification names the record first (tests/test_seal.py)
    s, _, _ = load_golden("v1_no_step_tools_basic.json")
    seqs = jget(s, "golden-basic:persist:output")["seqs"]
    # edited behind the port, in the core (no redaction mark, no edit counted)
    (row,) = s.core.read_rows("t-golden", seqs=[seqs[0]])
    body = json.dumps({**json.loads(row.body), "content": "edited"})
    s.core.put_rows("t-golden", [dataclasses.replace(row, body=body)])
    with pytest.raises(ReplayMismatch, match="persist:output"):
        replay(s, "golden-basic")


def test_fresh_run_replays_and_the_model_is_never_called() -> None:
    clock = Tick()
    s = InMemoryStorage(clock=clock)
    model = ScriptedModel([ModelResponse(tool_calls=[ToolCallPart(id="k", name="nope")]),
                           "done"])
    runner = Runner(s, {"a": Agent("a", "sys", model)}, memory=AgentMemory(s, clock=clock),
                    clock=clock)
    runner.run("a", run_id="r1", thread_id="t", prompt=[Message(content="hi")])
    report = replay(s, "r1", agents={"a": Agent("a", "sys", model)})
    assert model.calls == 2 and report.output["text"] == "done"
    # an agent whose max_steps would stop earlier diverges
    with pytest.raises(ReplayMismatch, match="r1:output"):
        replay(s, "r1", agents={"a": Agent("a", "sys", model, max_steps=1)})


def test_replay_refuses_what_it_cannot_replay() -> None:
    # an unsealed (older) journal, so replay's own checks are what catches it; on a
    # sealed one verification names the record first (tests/test_seal.py)
    s, _, _ = load_golden("v1_no_step_tools_basic.json")
    with pytest.raises(NotFoundError, match="no recorded input"):
        replay(s, "ghost")
    s.runs.delete("golden-basic:output")
    with pytest.raises(InvalidInputError, match="no recorded output"):
        replay(s, "golden-basic")
    s, memory, _ = load_golden("v1_no_step_tools_basic.json")
    with pytest.raises(InvalidInputError, match="unknown lanes"):
        replay(s, "golden-basic", memory=memory, lanes=["bogus"])
    _tamper(s, "golden-basic:step:0", lambda v: v.update(v=9))
    with pytest.raises(InvalidInputError, match="version 9"):
        replay(s, "golden-basic")


def test_observational_runs_replay_with_the_observer_journal() -> None:
    from memory_core.composition.observational import ObservationalConfig
    from memory_core.models.summarizer import ExtractiveSummarizer

    clock = Tick()
    s = InMemoryStorage(clock=clock)
    summarizer = ExtractiveSummarizer(max_sentences=2)
    config = ObservationalConfig(model=summarizer, message_threshold=4)
    memory = AgentMemory(s, observational_memory=config, clock=clock)
    memory.append("t", [Message(role="user" if i % 2 == 0 else "assistant",
                                content=f"Fact {i}: order {100 + i} shipped.")
                        for i in range(6)])
    runner = Runner(s, {"a": Agent("a", "sys", ScriptedModel(["one", "two"]))},
                    memory=memory, clock=clock)
    runner.run("a", run_id="r1", thread_id="t", prompt="first question")
    memory.append("t", [Message(content="Fact 9: order 109 shipped.")])
    runner.run("a", run_id="r2", thread_id="t", prompt="second question")
    lanes_of = [i["lane"] for i in jget(s, "r1:prompt")["items"]]
    assert "observations" in lanes_of
    assert len(s.runs.list("om:t:proc:observe:")) == 2
    every_lane_but_wm = [lane for lane in LANES if lane != "working_memory"]
    # the observer is never called again: the summariser is swapped for a raising model
    # inside replay, and the snapshot re-enters the recorded observer steps
    for run_id in ("r1", "r2"):
        report = replay(s, run_id, memory=memory, lanes=every_lane_but_wm)
        assert report.prompt_checked
    # a changed observer record changes the re-composed observations lane
    _tamper(s, "om:t:proc:observe:0", lambda v: v.update(text="something else"))
    with pytest.raises(ReplayMismatch, match="observations"):
        replay(s, "r1", memory=memory, lanes=every_lane_but_wm)


@pytest.mark.slow
def test_every_demo_run_replays_byte_identically_with_its_composition() -> None:
    from memory_core.journal import RunReader
    from sample_data import build

    clock = build.DemoClock()
    s = InMemoryStorage(clock=clock)
    run_ids = build.build_into(s, clock, embedder="hashing", progress=lambda m: None)
    assert len(run_ids) > 20
    embed = build.make_embedder("hashing")
    memories = [build.make_memory(s, embed, profile, clock) for sc in build.SCENARIOS
                for profile in [sc.memory, *sc.profiles.values()]]
    every_lane_but_wm = [lane for lane in LANES if lane != "working_memory"]
    composed = 0
    for run_id in run_ids:
        memctx = RunReader(s.runs, run_id).memctx()
        memory = None
        if memctx is not None:
            # the memory a run composed with is the one whose settings it recorded
            settings = memctx.settings
            memory = next(m for m in memories if m.settings() == settings)
        report = replay(s, run_id, memory=memory, lanes=every_lane_but_wm)
        composed += report.prompt_checked
    assert composed == len(run_ids)
