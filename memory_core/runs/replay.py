"""Byte-identical replay: re-execute a recorded run from its journal alone, with a model
that raises if called, and check prompt, step inputs and output against the record.

Like Temporal's replayer, it runs the real runner code over a scratch copy of the run's
journal, so a change in how the runner derives model inputs or outputs is caught; old
record versions are upgraded by the journal reader before they are used.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from memory_core.errors import InvalidInputError, ModelError, NotFoundError, ReplayMismatch
from memory_core.journal.keys import RunKeys
from memory_core.journal.reader import ObserverReader, RunReader
from memory_core.journal.records import InputRecord, OutputRecord
from memory_core.journal.seal import read_seal, require_intact
from memory_core.models.base import Tool
from memory_core.models.scripted import RaisingModel
from memory_core.provenance.prompt import FrozenPrompt
from memory_core.provenance.record import LANES, Memctx
from memory_core.runs.runner import (
    Agent,
    Runner,
    RunResult,
    assistant_message,
    tool_message,
)
from memory_core.storage.base import Storage
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import AppendRow, Message, RunRecord, ToolCallPart, canonical_json

if TYPE_CHECKING:
    from memory_core.composition.memory import AgentMemory

# Working memory and observations are mutable state with no history: a later run may
# have changed them, so by default the re-composition is compared on the lanes that
# are reproducible from the append-only message log.
DEFAULT_COMPARED_LANES: tuple[str, ...] = ("instructions", "recalled", "recent", "input")


class ReplayReport(BaseModel):
    """What a replay checked. Every check that ran passed (a failure raises)."""

    model_config = ConfigDict(extra="forbid")
    run_id: str
    agent: str
    thread_id: str | None = None
    steps: int
    tool_calls: int
    output: dict[str, Any]
    verified_steps: int  # steps whose recorded input hashes matched the re-derived input
    unverified_steps: int  # old-format steps with no input hashes to check
    upgraded: list[str] = Field(default_factory=list)  # keys read through an upgrade
    prompt_checked: bool = False
    compared_lanes: list[str] = Field(default_factory=list)
    messages_checked: int = 0  # stored output messages compared with the replayed ones
    # the seal check (journal/seal.py): "ok", "unsealed" (recorded before sealing) or
    # "redacted" (an erasure rewrote records, so byte-identity is not checked)
    integrity: str = "ok"
    redacted_by: list[str] = Field(default_factory=list)  # erased threads
    # an imported run whose recorded response is a tool call: replay stops at that call
    ended_on_tool_call: bool = False
    pending_tool_calls: list[str] = Field(default_factory=list)  # names of those calls
    notes: list[str] = Field(default_factory=list)


def _diff_at(a: str, b: str) -> int:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return min(len(a), len(b))


def _excerpt(s: str, at: int, width: int = 40) -> str:
    return s[max(0, at - width // 2): at + width // 2]


def _mismatch(key: str, recorded: str, replayed: str) -> ReplayMismatch:
    at = _diff_at(recorded, replayed)
    return ReplayMismatch(
        f"'{key}' differs at character {at}: recorded …{_excerpt(recorded, at)!r}… "
        f"replayed …{_excerpt(replayed, at)!r}…")


def _raising_tool(tool: Tool) -> Tool:
    def fn(args: dict[str, Any]) -> Any:
        raise ModelError(f"tool '{tool.name}' was called during replay; every tool result "
                         "must come from the journal")
    return Tool(tool.spec, fn)


class _RecordingEnds(Exception):
    """The replay reached the tool call an imported run's recording ends on."""


class _Boundaries:
    """Fails the replay on any step or tool write: those must all be recorded. A write
    of a tool call the recording ends on (``ends_on``) stops the replay there instead."""

    def __init__(self, run_id: str, ends_on: Sequence[str] = ()) -> None:
        self.run_id = run_id
        self.ends_on = set(ends_on)

    def __call__(self, name: str) -> None:
        if name.startswith("tool:") and name[len("tool:"):] in self.ends_on:
            raise _RecordingEnds(name[len("tool:"):])
        if name.startswith(("step:", "tool:")):
            raise ReplayMismatch(f"'{RunKeys(self.run_id).prefix}{name}' is not in the "
                                 "journal but the replayed run needed it")


def recording_end_calls(reader: RunReader) -> list[ToolCallPart]:
    """The tool calls an imported run's recording ends on: calls of its last step with no
    tool record (an import records the model's request, never a tool's result). Empty
    for runs made here, where a missing tool record is a divergence."""
    memctx = reader.memctx()
    if memctx is None or memctx.source != "imported":
        return []
    steps = reader.steps()
    if not steps:
        return []
    tools = reader.tools()
    return [c for c in steps[-1].response.tool_calls if c.id not in tools]


def _check_recording_end(storage: Storage, reader: RunReader, thread_id: str | None,
                         output: OutputRecord) -> tuple[int, int, int]:
    """After a replay stopped on the call a recording ends on: the recorded output and
    stored messages must be what the recorded steps say. Returns (steps, tool results,
    stored messages checked)."""
    steps = [s.response for s in reader.steps()]
    tools = reader.tools()
    convo: list[Message] = []
    results = 0
    for resp in steps:
        convo.append(assistant_message(resp))
        for call in resp.tool_calls:
            rec = tools.get(call.id)
            if rec is not None:
                convo.append(tool_message(call, rec))
                results += 1
    recorded = {"text": output.text or "", "steps": output.steps,
                "tool_calls": output.tool_calls}
    derived = {"text": steps[-1].text or "", "steps": len(steps),
               "tool_calls": sum(len(r.tool_calls) for r in steps)}
    if canonical_json(recorded) != canonical_json(derived):
        raise _mismatch(reader.keys.output, canonical_json(recorded), canonical_json(derived))
    return (len(steps), results,
            _check_stored_messages(storage, reader.keys.run_id, thread_id, convo))


def _recorded(reader: RunReader, storage: Storage
              ) -> tuple[InputRecord, OutputRecord, FrozenPrompt, RunRecord]:
    """What replay needs from the journal; a clear error naming what is missing."""
    keys, run_id = reader.keys, reader.keys.run_id
    rec_input = reader.input()
    if rec_input is None:
        raise NotFoundError(f"run '{run_id}' has no recorded input ('{keys.input}')")
    rec_output = reader.output()
    record = storage.runs.get_run(run_id)
    if rec_output is None:
        if record is not None and record.status == "failed":
            # (an imported call the API refused, or a run that raised: no answer exists)
            error = " ".join((record.error or "").split())
            said = f": {error if len(error) <= 200 else error[:199] + '…'}" if error else ""
            raise InvalidInputError(f"run '{run_id}' has no recorded output: it failed"
                                    f"{said}; there is nothing to replay")
        status = record.status if record else "no runs-table record"
        raise InvalidInputError(f"run '{run_id}' has no recorded output (status {status}): "
                                "it never finished; Runner.run with this run_id resumes it, "
                                "then it can be replayed")
    prompt = reader.prompt()
    if prompt is None:
        raise NotFoundError(f"run '{run_id}' has no frozen prompt ('{keys.prompt}')")
    if record is None:
        raise NotFoundError(f"run '{run_id}' has no runs-table record; its agent is unknown")
    return rec_input, rec_output, prompt, record


def _redacted(storage: Storage, reader: RunReader, record: RunRecord,
              output: OutputRecord) -> ReplayReport:
    """An erasure rewrote the run's records: report that, never a mismatch."""
    sealed = read_seal(storage, record.run_id)
    erased = sorted({t for r in (sealed.redactions if sealed else []) for t in r.threads})
    steps = reader.steps()
    return ReplayReport(run_id=record.run_id, agent=record.agent, thread_id=record.thread_id,
                        steps=len(steps), tool_calls=len(reader.tools()),
                        output=output.model_dump(mode="json"), verified_steps=0,
                        unverified_steps=len(steps), integrity="redacted",
                        redacted_by=erased)


def _replay_agent(name: str, prompt: FrozenPrompt, given: Agent | None, n_steps: int,
                  ends_on_call: bool) -> Agent:
    """The agent the replay runs: the caller's (model and tools raising if called), or
    one standing in from the recorded prompt and step count. A run whose recording ends
    on a tool call gets no tools, so reaching that call writes (and stops) rather than
    calling anything."""
    if given is not None:
        return Agent(name=name, instructions=given.instructions, model=RaisingModel(),
                     tools=[] if ends_on_call else [_raising_tool(t) for t in given.tools],
                     max_steps=given.max_steps)
    instructions = next((str(i.message.content) for i in prompt.items
                         if i.lane == "instructions"), "")
    return Agent(name=name, instructions=instructions, model=RaisingModel(),
                 max_steps=max(1, n_steps))


def replay(storage: Storage, run_id: str, *, memory: AgentMemory | None = None,
           agents: Mapping[str, Agent] | None = None,
           lanes: Sequence[str] | None = None) -> ReplayReport:
    """Replay ``run_id`` from its journal and check it is byte-identical.

    The model is never called. When ``agents`` holds the run's agent, its instructions,
    tool specs and ``max_steps`` are used (a changed agent is a divergence); otherwise
    the recorded prompt and the number of recorded steps stand in for them. When
    ``memory`` is given, the prompt is also re-composed with ``load_context`` over a
    copy of the store truncated to what existed when the run composed, and compared
    item by item on ``lanes`` (default: instructions, recalled, recent, input).
    An imported run whose recorded response is a tool call is replayed up to that call
    (the recording holds no tool result) and reported with ``ended_on_tool_call``.
    A run that fails its seal raises ReplayMismatch naming the first record that no
    longer matches; one an erasure redacted is reported ``integrity="redacted"``.
    Divergence raises ReplayMismatch naming the key and the first differing position.
    """
    with storage.session():  # one open of a DuckDB file for the replay's ~30 reads
        return _replay(storage, run_id, memory=memory, agents=agents, lanes=lanes)


def _replay(storage: Storage, run_id: str, *, memory: AgentMemory | None,
            agents: Mapping[str, Agent] | None, lanes: Sequence[str] | None
            ) -> ReplayReport:
    reader = RunReader(storage.runs, run_id)
    keys = reader.keys
    seal = require_intact(storage, run_id)  # tampering is named before anything runs
    rec_input, rec_output, prompt, record = _recorded(reader, storage)
    steps = reader.steps()
    agent_name = record.agent
    thread_id, resource_id = record.thread_id, record.resource_id
    if seal.status == "redacted":
        return _redacted(storage, reader, record, rec_output)
    verified = sum(1 for s in steps if s.record.input_hashes is not None
                   or s.record.input_hash is not None)
    unverified = len(steps) - verified
    upgraded = reader.upgraded_keys()

    # scratch journal: every record of the run except its output, which is recomputed
    scratch = InMemoryStorage()
    for k, v in reader.entries():
        if k != keys.output:
            scratch.runs.put_if_absent(k, v)

    ends_on = recording_end_calls(reader)
    given = (agents or {}).get(agent_name)
    agent = _replay_agent(agent_name, prompt, given, len(steps), bool(ends_on))
    runner = Runner(scratch, {agent_name: agent}, memory=None,
                    clock=lambda: record.started_at,
                    on_boundary=_Boundaries(run_id, [c.id for c in ends_on]))
    incoming = list(rec_input.messages)
    report = ReplayReport(run_id=run_id, agent=agent_name, thread_id=thread_id, steps=0,
                          tool_calls=0, output=rec_output.model_dump(mode="json"),
                          verified_steps=verified, unverified_steps=unverified,
                          upgraded=upgraded, integrity=seal.status)
    try:
        result = runner.run(agent_name, run_id=run_id, thread_id=thread_id,
                            resource_id=resource_id, prompt=incoming)
    except ModelError as e:
        raise ReplayMismatch(f"replay of run '{run_id}' needed a model or tool call that is "
                             f"not in the journal: {e}") from e
    except _RecordingEnds:
        report.steps, report.tool_calls, report.messages_checked = _check_recording_end(
            storage, reader, thread_id, rec_output)
        report.ended_on_tool_call = True
        report.pending_tool_calls = [c.name for c in ends_on]
        report.notes.append(
            f"the recording ends on the model's call to {', '.join(report.pending_tool_calls)}"
            "; an imported run holds no tool results, so replay stopped there")
    else:
        replayed = RunReader(scratch.runs, run_id).output()
        recorded_out = canonical_json(rec_output.model_dump(mode="json"))
        replayed_out = canonical_json(replayed.model_dump(mode="json") if replayed else None)
        if recorded_out != replayed_out:
            raise _mismatch(keys.output, recorded_out, replayed_out)
        report.messages_checked = _check_stored_messages(storage, run_id, thread_id,
                                                         result.messages, seal.truncated)
        report.steps, report.tool_calls = result.steps, result.tool_calls

    if memory is not None and thread_id is not None:
        compared = list(lanes) if lanes is not None else list(DEFAULT_COMPARED_LANES)
        bad = [lane for lane in compared if lane not in LANES]
        if bad:
            raise InvalidInputError(f"unknown lanes {bad}; lanes are {list(LANES)}")
        instructions = given.instructions if given is not None else agent.instructions
        _check_prompt(storage, run_id, memory, prompt, incoming, instructions, thread_id,
                      resource_id, compared)
        report.prompt_checked = True
        report.compared_lanes = compared
    return report


def _check_stored_messages(storage: Storage, run_id: str, thread_id: str | None,
                           replayed: list[Message],
                           truncated: Sequence[tuple[str, int]] = ()) -> int:
    """The assistant/tool messages still stored for the run must be the replayed ones
    (those a truncation removed are compared no more: their seqs are in the seal)."""
    rec = RunReader(storage.runs, run_id).persist_output()
    if rec is None or thread_id is None or storage.memory.get_thread(thread_id) is None:
        return 0
    gone = {s for t, s in truncated if t == thread_id}
    if gone and len(rec.seqs) == len(replayed):
        kept = [(s, m) for s, m in zip(rec.seqs, replayed, strict=True) if s not in gone]
        rec = rec.model_copy(update={"seqs": [s for s, _ in kept]})
        replayed = [m for _, m in kept]
    stored = storage.memory.get_messages(thread_id, seqs=rec.seqs)
    if not stored:
        return 0  # erased since: nothing left to compare
    got = [m.as_message().canonical_json() for m in stored]
    want = [m.canonical_json() for m in replayed]
    if got != want:
        i = next((i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b),
                 min(len(got), len(want)))
        raise ReplayMismatch(
            f"'{RunKeys(run_id).persist_output}': stored message {i} (seq "
            f"{rec.seqs[i] if i < len(rec.seqs) else '?'}) differs from the replayed "
            f"one ({len(got)} stored, {len(want)} replayed)")
    return len(got)


def snapshot_store(storage: Storage, run_id: str, thread_id: str,
                   memctx: Memctx | None) -> InMemoryStorage:
    """A scratch copy of what the run's composition could see: each thread in its recall
    scope truncated to the seq it had then, with vectors and working memory; its
    observations are re-derived from the thread's observer journal when there is one,
    else copied as they existed when the run started."""
    src = storage.memory
    limits: dict[str, int] = dict(memctx.scope_snapshot) if memctx else {}
    if thread_id not in limits:
        pin = RunReader(storage.runs, run_id).persist_input()
        own = [m.seq for m in src.get_messages_by_run(thread_id, run_id)] \
            if src.get_thread(thread_id) else []
        seqs = (pin.seqs if pin else None) or own
        limits[thread_id] = (min(seqs) - 1) if seqs else src.max_seq(thread_id)
    record = storage.runs.get_run(run_id)
    started = record.started_at if record else None
    current: list[datetime] = []
    snap = InMemoryStorage(clock=lambda: current[-1])
    for tid, limit in sorted(limits.items()):
        t = src.get_thread(tid)
        if t is None:
            continue
        current.append(t.created_at)
        snap.memory.create_thread(tid, resource_id=t.resource_id, title=t.title,
                                  metadata=t.metadata, parent_thread_id=t.parent_thread_id)
        msgs = src.get_messages(tid, to_seq=limit)
        block = src.get_embeddings([tid])
        vec = {int(s): block.matrix[i] for i, s in enumerate(block.seqs)
               if block.thread_ids[i] == tid}
        if msgs:
            snap.memory.append_messages(tid, [
                AppendRow(message=m.as_message(), seq=m.seq, created_at=m.created_at,
                          run_id=m.run_id, embedding=vec.get(m.seq)) for m in msgs])
        for key in (f"thread:{tid}",) + ((f"resource:{t.resource_id}",)
                                          if t.resource_id else ()):
            value = src.get_working_memory(key)
            if value is not None and snap.memory.get_working_memory(key) is None:
                snap.memory.put_working_memory(key, value)
        om_journal = ObserverReader(storage.runs, tid).entries()
        if om_journal:
            # observations are re-derived: compaction re-enters the recorded observer and
            # reflector steps (never the model), so the journal itself is checked
            for k, v in om_journal:
                snap.runs.put_if_absent(k, v)
        else:
            for o in src.list_observations(tid):
                if started is None or o.created_at <= started:
                    snap.memory.put_observation(o)
    return snap


def _rebind(memory: AgentMemory, storage: Storage) -> AgentMemory:
    from memory_core.composition.memory import AgentMemory as _AgentMemory

    om = memory.observational_config
    if om is not None:
        # buffered: re-composing uses what the snapshot holds and hands nothing off
        om = om.model_copy(update={"model": RaisingModel(),
                                   "on_compact": _no_hand_off if om.buffering else None})
    return _AgentMemory(storage, embed=memory.embed, recent_n=memory.recent_n,
                        recall=memory.recall_config, working_memory=memory.working_memory_config,
                        observational_memory=om, token_counter=memory.token_counter,
                        clock=memory.clock, processors=memory.processors)


def _no_hand_off(thread_id: str) -> None:
    """``on_compact`` of a re-composition: replay never starts an observer."""


def _check_prompt(storage: Storage, run_id: str, memory: AgentMemory, prompt: FrozenPrompt,
                  incoming: list[Message], instructions: str, thread_id: str,
                  resource_id: str | None, lanes: list[str]) -> None:
    memctx = RunReader(storage.runs, run_id).memctx()
    snap = snapshot_store(storage, run_id, thread_id, memctx)
    try:
        comp = _rebind(memory, snap).load_context(thread_id=thread_id,
                                                  resource_id=resource_id, input=incoming,
                                                  instructions=instructions or None)
    except ModelError as e:
        raise ReplayMismatch(f"re-composing '{RunKeys(run_id).prompt}' needed an observer or "
                             f"reflector call that is not in the journal: {e}") from e
    want = [canonical_json(i.model_dump(mode="json")) for i in prompt.items
            if i.lane in lanes]
    got = [canonical_json(i.model_dump(mode="json")) for i in comp.prompt.items
           if i.lane in lanes]
    if want == got:
        return
    at = next((i for i, (a, b) in enumerate(zip(want, got, strict=False)) if a != b),
              min(len(want), len(got)))
    rec_items = [i for i in prompt.items if i.lane in lanes]
    new_items = [i for i in comp.prompt.items if i.lane in lanes]

    def describe(items: list[Any], i: int) -> str:
        if i >= len(items):
            return "(nothing)"
        it = items[i]
        where = f" {it.thread_id}#{it.seq}" if it.seq is not None else ""
        return f"{it.lane}{where} {canonical_json(it.message.model_dump(mode='json'))[:80]}"

    raise ReplayMismatch(
        f"'{RunKeys(run_id).prompt}': the re-composed prompt differs at item {at} "
        f"(compared lanes {lanes}): recorded {describe(rec_items, at)} vs composed "
        f"{describe(new_items, at)} ({len(want)} recorded items, {len(got)} composed)")


# -- replay with another model (SPEC §10.1) ------------------------------------------------
def replay_with(storage: Storage, run_id: str, *, model: Any, tools: Sequence[Tool] = (),
                new_run_id: str, instructions: str | None = None) -> RunResult:
    """A fresh run under ``new_run_id`` that starts from ``run_id``'s frozen prompt and
    answers with the caller's ``model`` and ``tools`` (none by default): tools really
    run again, everything is journaled like any run (``Runner``: steps, tools, output,
    seal), and the original run is untouched. Unlike ``replay`` (byte-identical, model
    never called) the answer is new. The recorded input and provenance are copied, so
    the new run shows the same lanes; ``instructions`` replaces the frozen system prompt.
    Nothing is written to the thread's messages. Calling again with the same ids
    resumes the same run.

    Example: ``replay_with(storage, "ticket-9", model=other, new_run_id="ticket-9-b")``
    """
    from memory_core.journal.keys import check_run_id
    from memory_core.journal.writer import JournalWriter

    check_run_id(new_run_id)
    if new_run_id == run_id:
        raise InvalidInputError(f"new_run_id must differ from the recorded run '{run_id}'")
    if instructions is not None and not isinstance(instructions, str):
        raise InvalidInputError(f"instructions must be a string, got {instructions!r}")
    reader = RunReader(storage.runs, run_id)
    record, rec_input, prompt = storage.runs.get_run(run_id), reader.input(), reader.prompt()
    if record is None or rec_input is None or prompt is None:
        raise NotFoundError(f"run '{run_id}' has no recorded input ('{reader.keys.input}' "
                            "and a frozen prompt); nothing to replay")
    if instructions is not None:
        prompt = FrozenPrompt(items=[
            i.model_copy(update={"message": Message(role="system", content=instructions)})
            if i.lane == "instructions" else i for i in prompt.items])
    existing = RunReader(storage.runs, new_run_id).prompt()
    if existing is not None and existing.canonical() != prompt.canonical():
        raise InvalidInputError(f"run '{new_run_id}' already exists with another prompt; "
                                "choose a new run id")
    writer = JournalWriter(storage.runs, new_run_id)
    writer.input(rec_input.model_copy(update={"sealed": True}))
    memctx = reader.memctx()
    if memctx is not None:
        writer.memctx(memctx)
    writer.prompt(prompt)
    agent = Agent(name=record.agent, model=model, tools=list(tools),
                  instructions=next((i.message.text() or "" for i in prompt.items
                                     if i.lane == "instructions"), ""))
    # no memory: the new run reads its frozen prompt and writes nothing to the thread
    return Runner(storage, {agent.name: agent}).run(
        agent.name, run_id=new_run_id, thread_id=record.thread_id,
        resource_id=record.resource_id, prompt=rec_input.messages)
