"""Agents and the durable runner: one turn composes its prompt, freezes it, journals
every model step and tool call, and persists its messages exactly once, so a crashed
run resumed under the same run_id loses nothing and repeats nothing."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from memory_core.embedding.hashing import embedder_name
from memory_core.errors import (
    InvalidInputError,
    ModelError,
    NotFoundError,
    ReplayMismatch,
    RunInProgress,
    ToolExecutionError,
)
from memory_core.journal.hashes import input_signature, verify_step_input
from memory_core.journal.keys import RunKeys, check_run_id
from memory_core.journal.lease import DEFAULT_TTL, Lease
from memory_core.journal.reader import RunReader
from memory_core.journal.records import (
    InputRecord,
    OutputRecord,
    StepRecord,
    ToolRecord,
    ToolSpecRecord,
)
from memory_core.journal.seal import seal_run, seal_written
from memory_core.journal.writer import JournalWriter, write_deferred
from memory_core.models.base import (
    ModelResponse,
    Tool,
    ToolSpec,
    complete_checked,
    journaled_call,
    model_identity,
)
from memory_core.provenance.prompt import FrozenPrompt, PromptItem
from memory_core.provenance.record import Memctx
from memory_core.storage.base import Storage
from memory_core.storage.common import Clock, json_or_invalid, utc_now
from memory_core.types import (
    AppendRow,
    Message,
    RunRecord,
    ToolCallPart,
    ToolResultPart,
)

if TYPE_CHECKING:
    from memory_core.composition.memory import AgentMemory
    from memory_core.composition.other_memory import MessagesMemory

BoundaryHook = Callable[[str], None]

@dataclass(frozen=True)
class Agent:
    """A named agent: its system instructions, its model and the tools it may call."""

    name: str
    instructions: str
    model: Any  # anything with complete(messages, tools) -> ModelResponse
    tools: list[Tool] = field(default_factory=list)
    max_steps: int = 8

    def __post_init__(self) -> None:
        if not self.name:
            raise InvalidInputError("agent name must be a non-empty string")
        if self.max_steps < 1:
            raise InvalidInputError(f"max_steps must be >= 1, got {self.max_steps}")
        names = [t.name for t in self.tools]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise InvalidInputError(f"agent '{self.name}' has duplicate tool names {dupes}")


class RunResult(BaseModel):
    """What ``Runner.run`` returns: the final text and what the run did."""

    model_config = ConfigDict(extra="forbid")
    run_id: str
    agent: str
    thread_id: str | None = None
    text: str
    steps: int
    tool_calls: int
    stop_reason: str = "final"  # "final" | "max_steps"
    memctx: Memctx | None = None
    prompt: FrozenPrompt
    messages: list[Message] = Field(default_factory=list)  # assistant/tool messages
    input_seqs: list[int] = Field(default_factory=list)
    output_seqs: list[int] = Field(default_factory=list)
    resumed: bool = False


# -- record helpers -----------------------------------------------------------------
def assistant_message(resp: ModelResponse) -> Message:
    """The assistant message a model step adds to the conversation."""
    return resp.as_message()


def tool_message(call: ToolCallPart, record: ToolRecord | Mapping[str, Any]) -> Message:
    """The tool message a recorded call result adds to the conversation."""
    if not isinstance(record, ToolRecord):
        record = ToolRecord(name=str(record.get("name", call.name)), args=record.get("args"),
                            status="ok" if record.get("status") == "ok" else "error",
                            result=record.get("result"), error=record.get("error"))
    result = record.result if record.status == "ok" else {"error": record.error}
    return Message(role="tool", content=[ToolResultPart(call_id=call.id, name=call.name,
                                                        result=result)])


def _normalise_prompt(prompt: str | Message | Sequence[Message]) -> list[Message]:
    if isinstance(prompt, str):
        if not prompt.strip():
            raise InvalidInputError("prompt must be a non-empty string or list of messages")
        return [Message(role="user", content=prompt)]
    if isinstance(prompt, Message):
        return [prompt]
    msgs = list(prompt)
    for i, m in enumerate(msgs):
        if not isinstance(m, Message):
            raise InvalidInputError(f"prompt[{i}] must be a Message, got {type(m).__name__}")
    return [Message.model_validate(m.model_dump()) for m in msgs]


def _groups_writes(storage: Storage) -> bool:
    """Whether the adapter's ``write_batch`` is a transaction (every SQL adapter); the
    reference adapter commits each write on its own."""
    return type(storage).write_batch is not Storage.write_batch


class _ClaimLost(RunInProgress):
    """Another starter claimed the run between this one's look and its first group."""


class _Marks:
    """A run's write groups, and its boundary names (``Runner.on_boundary``), each passed
    on once the write it names is durable: at once outside a group, when the group
    commits inside one."""

    def __init__(self, hook: BoundaryHook | None) -> None:
        self.hook = hook
        self.held: list[str] | None = None
        #: inside a deferring group: the journal records its writers collected
        self.deferred: list[tuple[str, Any]] | None = None

    def __call__(self, name: str) -> None:
        if self.held is not None:
            self.held.append(name)
        elif self.hook is not None:
            self.hook(name)

    @contextmanager
    def group(self, storage: Storage, *, defer: bool) -> Iterator[None]:
        """One phase's writes in one transaction (``Storage.write_batch``). With
        ``defer`` its journal records are written together as it ends, in one
        statement: only for a fresh run (none of them can be stored yet) on an adapter
        whose batches are transactions (a failure keeps none of the group)."""
        assert self.held is None, "write groups do not nest"
        self.held = []
        self.deferred = [] if defer and _groups_writes(storage) else None
        try:
            # durable when the block ends, hook or no hook (the hook only observes)
            with storage.write_batch():
                yield
                if self.deferred:
                    write_deferred(storage.runs, self.deferred)
            done = self.held
        finally:
            self.held = self.deferred = None
        for name in done:
            self(name)


@dataclass
class _Persist:
    """What persisting one side of a run (input or output) still has to do: ``seqs``
    when they are known (recorded, or found stored), else ``rows`` to append; and
    whether the persist record is still to be written."""

    seqs: list[int] | None
    rows: list[AppendRow] = field(default_factory=list)
    record: bool = True


@dataclass
class _RunState:
    run_id: str
    prompt: FrozenPrompt
    memctx: Memctx | None
    incoming: list[Message]
    resumed: bool
    marks: _Marks
    #: the run's records as they were when this attempt claimed it (read once)
    reader: RunReader
    #: the input record still to be written (a composition this attempt made)
    unwritten: InputRecord | None = None
    convo: list[Message] = field(default_factory=list)
    steps: int = 0
    tool_calls: int = 0
    text: str = ""
    stop_reason: str = "final"
    input_seqs: list[int] = field(default_factory=list)
    output_seqs: list[int] = field(default_factory=list)
    lease: Lease | None = None
    #: the run's records as this attempt wrote (or found) them, and its runs row when
    #: this attempt started it: a fresh run is sealed from these without reading back
    log: dict[str, Any] = field(default_factory=dict)
    run: RunRecord | None = None
    titled: bool = False
    #: no earlier attempt wrote anything of this run (no row, no input record): there
    #: is nothing to read back, and nothing stored to find
    fresh: bool = False
    #: the last model step, written with the run's output (it called no tool)
    final_step: tuple[int, StepRecord] | None = None
    #: the number of the claim made with the first group, until that group commits:
    #: meanwhile this attempt holds no claim, and the run is not its to mark failed
    unclaimed: int | None = None


def _memories(memory: object) -> tuple[AgentMemory | None, MessagesMemory | None]:
    """``memory=`` sorted: an AgentMemory, or another memory that only offers
    ``get_messages`` (SPEC §6.8, ``memory_core.composition.other_memory``)."""
    from memory_core.composition.memory import AgentMemory
    from memory_core.composition.other_memory import is_messages_memory

    if memory is None or isinstance(memory, AgentMemory):
        return memory, None
    if is_messages_memory(memory):
        return None, memory  # type: ignore[return-value]
    raise InvalidInputError(
        f"memory must be an AgentMemory or offer get_messages(thread_id), got "
        f"{type(memory).__name__}")


class Runner:
    """Runs agents durably over a storage (SPEC §6.6 order).

    ``on_boundary`` is a test hook called with a boundary name once each write is
    durable (``input``, ``memctx``, ``prompt``, ``run:start``, ``persist:input:stored``,
    ``persist:input``, ``step:<n>``, ``tool:<call_id>``, ``persist:output:stored``,
    ``persist:output``, ``output``, ``run:completed``), in that order; the crash matrix
    kills the process there. The hook only observes: the writes, their grouping and
    their durability are the same with it and without it. Writes are grouped into a
    transaction per phase (see ``_run``), durable when the group ends
    (``Storage.write_batch``), so the names of one group are called together after its
    commit; a ``kill -9`` inside a group loses the whole group, which a resume makes
    again. A model step that called tools is durable before any tool runs, and each
    tool result on its own before the next tool or model call.

    Tools run at least once: a crash after a tool ran but before its result was
    written runs it again on resume (a recorded result is replayed, never re-run). That
    window is the only one, whatever ``Tool.idempotent`` says (the Runner does not read
    it). Each tool runs inside ``journaled_call(run_id, call_id)``, so a tool whose
    second run would differ from its first can make its effect once per call: the
    working-memory tool commits its merge together with the mark ``<run>:wm:<call>``
    and, run again for a marked call, returns the recorded result without merging (a
    new nested object keeps its nulls, which a second merge would delete). A tool
    raising InvalidInputError/TypeError/ValueError is recorded as an error result the
    model sees; any other exception fails the run (ToolExecutionError) without
    recording, so a resume retries it.
    """

    def __init__(self, storage: Storage, agents: dict[str, Agent],
                 memory: AgentMemory | MessagesMemory | None = None,
                 clock: Clock = utc_now, *,
                 on_boundary: BoundaryHook | None = None,
                 lease_ttl: float = DEFAULT_TTL) -> None:
        for key, agent in agents.items():
            if key != agent.name:
                raise InvalidInputError(
                    f"agents key '{key}' does not match the agent's name '{agent.name}'")
        self.storage = storage
        self.agents = dict(agents)
        self.memory, self.messages_memory = _memories(memory)
        self.clock = clock
        self.on_boundary = on_boundary
        if not lease_ttl > 0:
            raise InvalidInputError(f"lease_ttl must be > 0 seconds, got {lease_ttl!r}")
        self.lease_ttl = float(lease_ttl)

    # -- public ----------------------------------------------------------------------
    def run(self, agent_name: str, *, run_id: str, thread_id: str | None = None,
            resource_id: str | None = None,
            prompt: str | Message | Sequence[Message], wait: float = 0.0) -> RunResult:
        """Run (or resume) one turn. A run_id seen before resumes from its journal:
        the frozen prompt is read back, recorded model steps and tool results are
        reused, and nothing is stored twice (``prompt`` may then be empty: the recorded
        input is the one used). Only one process runs a run id at a time:
        another starter gets RunInProgress (after waiting up to ``wait`` seconds)."""
        agent = self.agents.get(agent_name)
        if agent is None:
            raise NotFoundError(f"agent '{agent_name}' is not registered "
                                f"(known: {sorted(self.agents)})")
        check_run_id(run_id)
        incoming = _normalise_prompt(prompt)
        # one open of a DuckDB file for the whole run; another process that asks for
        # the file gets it between two of the run's operations (storage/duckdb_file.py)
        with self.storage.session():
            return self._run_held(agent, run_id, thread_id, resource_id, incoming, wait)

    def _run_held(self, agent: Agent, run_id: str, thread_id: str | None,
                  resource_id: str | None, incoming: list[Message],
                  wait: float) -> RunResult:
        if not incoming and self.storage.runs.get(RunKeys(run_id).input) is None:
            # a resume reads its recorded input back, which an imported request may
            # have left empty (nothing sent after its instructions): only then
            raise InvalidInputError("prompt must not be an empty list of messages")
        deadline = time.monotonic() + max(0.0, wait)
        while True:
            left = max(0.0, deadline - time.monotonic())
            lease = Lease(self.storage.runs, run_id, ttl=self.lease_ttl)
            claim, entries = lease.look(left)
            try:
                return self._run(agent, run_id, thread_id, resource_id, incoming, lease,
                                 (claim, entries, left))
            except _ClaimLost:
                if time.monotonic() >= deadline:
                    raise
                # another starter claimed it as this one composed: wait for it, then
                # resume what it recorded (or run it, if it recorded nothing)
            finally:
                if lease.n >= 0 and not lease.released:  # the last group released it
                    lease.release()

    def _claim(self, agent: Agent, run_id: str, thread_id: str | None, lease: Lease,
               look: tuple[int, list[tuple[str, Any]], float],
               ) -> tuple[RunRecord | None, RunReader, bool]:
        """The run's row, a reader of its records, and whether the claim is made lazily
        — in the first write group, with the run's first records (a run nothing was
        recorded of, on an adapter whose groups are transactions) — or was made now."""
        existing = self.storage.runs.get_run(run_id)
        if existing is not None and (existing.agent != agent.name
                                     or existing.thread_id != thread_id):
            raise InvalidInputError(
                f"run '{run_id}' was started by agent '{existing.agent}' on thread "
                f"{existing.thread_id!r}; it cannot be resumed by agent '{agent.name}' "
                f"on thread {thread_id!r}")
        claim, entries, wait = look
        keys = RunKeys(run_id)
        if existing is None and _groups_writes(self.storage) and all(
                k.startswith(keys.lease_prefix) for k, _ in entries):
            return existing, RunReader.of_entries(run_id, entries), True
        lease.claim(claim, wait)
        # read after the claim: nobody else writes the run now
        return existing, RunReader.snapshot(self.storage.runs, run_id), False

    def _run(self, agent: Agent, run_id: str, thread_id: str | None,
             resource_id: str | None, incoming: list[Message], lease: Lease,
             look: tuple[int, list[tuple[str, Any]], float]) -> RunResult:
        existing, reader, lazy = self._claim(agent, run_id, thread_id, lease, look)
        state = self._freeze(agent, run_id, thread_id, resource_id, incoming, reader)
        state.lease = lease
        state.unclaimed = look[0] if lazy else None
        state.fresh = existing is None and not state.resumed
        row = None if existing is not None else RunRecord(
            run_id=run_id, agent=agent.name, thread_id=thread_id, resource_id=resource_id,
            status="running", started_at=self.clock())
        # Writes are grouped into one transaction per phase: before the model is called
        # (the frozen prompt, the run's row, its stored input) and after it answered
        # for the last time (its step, the stored output, the output, the seal, the
        # status, the release). A step that calls tools and each tool result commit on
        # their own, before the tool or the next model call runs: whatever a crash
        # loses is redone on resume, and nothing done outside the store is done twice
        # once its record exists.
        try:
            plan = self._plan_persist(state, thread_id, state.incoming, "input")
            try:
                with state.marks.group(self.storage, defer=state.fresh):
                    if lazy and state.marks.deferred is not None:
                        lease.claim_into(look[0], state.marks.deferred)
                    self._write_frozen(state)
                    self._start(state, existing, row)
                    state.input_seqs = self._write_persist(state, plan, "input", thread_id,
                                                           resource_id)
            except Exception as e:
                if not lazy:
                    raise
                lease.unclaim()  # the claim went with the group
                if isinstance(e, ReplayMismatch):
                    raise _ClaimLost(f"run '{run_id}' was claimed by another starter while "
                                     "this one composed it; nothing of this attempt was "
                                     "kept") from e
                raise
            state.unclaimed = None
            if self.memory is not None and thread_id is not None and state.input_seqs[:1] == [0]:
                # the run that wrote the thread's first message titles it (SPEC §2.5)
                self.memory.title_thread(thread_id, state.incoming, run_id=run_id)
                state.titled = self.memory.generate_title is not None
            self._loop(agent, state, thread_id, resource_id)
            plan = self._plan_persist(state, thread_id, state.convo, "output")
            with state.marks.group(self.storage, defer=state.fresh):
                self._finish(state, thread_id, resource_id, plan)
            lease.released = True
        except _ClaimLost:
            raise  # the run is another starter's: nothing of it is this attempt's to mark
        except Exception as e:
            self._fail(state, e)
            raise
        return RunResult(run_id=run_id, agent=agent.name, thread_id=thread_id,
                         text=state.text, steps=state.steps, tool_calls=state.tool_calls,
                         stop_reason=state.stop_reason, memctx=state.memctx,
                         prompt=state.prompt, messages=state.convo,
                         input_seqs=state.input_seqs, output_seqs=state.output_seqs,
                         resumed=state.resumed)

    def _start(self, state: _RunState, existing: RunRecord | None,
               row: RunRecord | None) -> None:
        """Insert the run's row (``row``, made when there was none), or mark the
        existing run resumed (and running again if it had failed)."""
        if row is not None:
            if self.storage.runs.start_run(row):
                state.run = row
                state.marks("run:start")
            return
        state.resumed = True
        if existing is not None and existing.status == "failed":
            self.storage.runs.set_run_status(state.run_id, "running")

    def _finish(self, state: _RunState, thread_id: str | None, resource_id: str | None,
                plan: _Persist | None) -> None:
        """The last phase, in one group: the last model step, the stored output, the
        output record, the seal (before the run is marked completed: a completed run
        always has its seal), the status and the release of the claim."""
        writer = self._writer(state)
        if state.final_step is not None:
            n, rec = state.final_step
            if writer.step(n, rec) != rec:
                raise ReplayMismatch(f"'{writer.keys.step(n)}' was written by another "
                                     "process while this one held the run")
        state.output_seqs = self._write_persist(state, plan, "output", thread_id, resource_id)
        self._write_output(state)
        self._seal(state, thread_id)
        record = None if state.run is not None else self.storage.runs.get_run(state.run_id)
        if record is None or record.status != "completed":
            self.storage.runs.set_run_status(state.run_id, "completed",
                                             finished_at=self.clock())
            state.marks("run:completed")
        if state.lease is not None:
            state.lease.release_held(into=state.marks.deferred)

    def _fail(self, state: _RunState, e: Exception) -> None:
        """Mark the run failed. A model step the failed group did not make durable is
        written on its own first, so a resume does not ask the model again."""
        if state.final_step is not None:
            with suppress(Exception):
                self._writer(state).step(*state.final_step)
        error, now = f"{type(e).__name__}: {e}", self.clock()
        failed = None if state.run is None else state.run.model_copy(update={
            "status": "failed", "finished_at": now, "error": error})
        if state.unclaimed is not None:
            # the first group, and the claim made with it, were rolled back: another
            # starter may have claimed (even completed) the run since
            if failed is not None:
                self._start_failed(state, state.unclaimed, failed)
            return
        try:
            self.storage.runs.set_run_status(state.run_id, "failed", finished_at=now,
                                             error=error)
        except NotFoundError:
            if failed is not None:  # its start was rolled back with the failed group
                self.storage.runs.start_run(failed)

    def _start_failed(self, state: _RunState, claim: int, failed: RunRecord) -> None:
        """Insert the failed row of a run whose first group was rolled back with its
        claim, together with that claim written again (released: nobody holds a failed
        run), in one transaction: if another starter claimed the run meanwhile, the run
        is its own and nothing is written. So a run's row is only ever written by the
        holder of its claim, and a starter that looked before this one (it claims with
        its first group) loses its claim instead of running under this failure."""
        assert state.lease is not None
        claims: list[tuple[str, Any]] = []
        state.lease.claim_into(claim, claims, released=True)
        with suppress(ReplayMismatch), self.storage.write_batch():
            write_deferred(self.storage.runs, claims)
            self.storage.runs.start_run(failed)

    # -- phases ----------------------------------------------------------------------
    def _writer(self, state: _RunState) -> JournalWriter:
        return JournalWriter(self.storage.runs, state.run_id, on_written=state.marks,
                             log=state.log, deferred=state.marks.deferred)

    def _seal(self, state: _RunState, thread_id: str | None) -> None:
        """Seal the run. A run this attempt started and wrote whole (not resumed, not
        titled by the memory's own writer) is sealed from what it wrote; any other is
        sealed from what the journal and the store hold."""
        persisted = self._persists(thread_id)
        whole = not persisted or (len(state.input_seqs) == len(state.incoming)
                                  and len(state.output_seqs) == len(state.convo))
        if state.run is None or state.resumed or state.titled or not whole:
            seal_run(self.storage, state.run_id)
            return
        messages: list[tuple[int, Message]] = []
        if persisted:
            messages = [*zip(state.input_seqs, state.incoming, strict=True),
                        *zip(state.output_seqs, state.convo, strict=True)]
        seal_written(self.storage, state.run, list(state.log.items()), messages,
                     into=state.marks.deferred)

    def _freeze(self, agent: Agent, run_id: str, thread_id: str | None,
                resource_id: str | None, incoming: list[Message],
                reader: RunReader) -> _RunState:
        """The run's frozen prompt: read back when an earlier attempt froze it, else
        composed now (``_write_frozen`` records it)."""
        marks = _Marks(self.on_boundary)
        frozen = reader.prompt()
        if frozen is not None:
            # resumed: read back, never re-compose (recall is frozen by the first try)
            rec_input = reader.input()
            if rec_input is None:
                raise ReplayMismatch(f"run '{run_id}' has a frozen prompt but no "
                                     f"'{reader.keys.input}' record")
            recorded = reader.memctx()
            self._check_embedder(run_id, recorded)
            return _RunState(run_id=run_id, prompt=frozen, memctx=recorded,
                             incoming=list(rec_input.incoming), resumed=True, marks=marks,
                             reader=reader)
        # a crash after :input but before :prompt re-composes: nothing was persisted
        # yet, so the store (and the composition) is as the first attempt saw it
        earlier = reader.input()
        memctx: Memctx | None = None
        if self.memory is not None and thread_id is not None:
            comp = self.memory.load_context(thread_id=thread_id, resource_id=resource_id,
                                            input=incoming, instructions=agent.instructions)
            prompt, memctx = comp.prompt, comp.memctx
            to_persist = list(getattr(comp, "incoming", incoming))
        elif self.messages_memory is not None and thread_id is not None:
            from memory_core.composition.other_memory import compose_from_messages

            prompt, memctx, to_persist = compose_from_messages(
                self.messages_memory, thread_id=thread_id, resource_id=resource_id,
                incoming=incoming, instructions=agent.instructions)
        else:
            items = [PromptItem(lane="instructions",
                                message=Message(role="system", content=agent.instructions))]
            items += [PromptItem(lane="input", message=m) for m in incoming]
            prompt, to_persist = FrozenPrompt(items=items), incoming
        # the input an earlier attempt recorded is the one that stays (first write wins)
        return _RunState(run_id=run_id, prompt=prompt, memctx=memctx,
                         incoming=list(earlier.incoming if earlier else to_persist),
                         resumed=earlier is not None, marks=marks, reader=reader,
                         unwritten=InputRecord(messages=incoming, incoming=to_persist,
                                               sealed=True))

    def _check_embedder(self, run_id: str, memctx: Memctx | None) -> None:
        """A resumed run stores its answers' vectors with the embedder it was composed
        with: another one (the same dimension or not) would mix two models' vectors in
        one run, and its seal's check of them would call the run tampered."""
        if self.memory is None or memctx is None or memctx.source != "composed":
            return
        was = memctx.settings.embedder
        now = embedder_name(self.memory.embed) if self.memory.embed is not None else None
        if was != now:
            raise InvalidInputError(
                f"run '{run_id}' was composed with embedder {was or 'none'!r}; resuming "
                f"it with embedder {now or 'none'!r} would store its answers' vectors "
                f"from another model: resume it with the memory it started with")

    def _write_frozen(self, state: _RunState) -> None:
        """Record what ``_freeze`` composed: input, memctx, prompt — memctx before
        prompt, so a frozen prompt implies its memctx exists and a resume that finds
        the prompt never needs to compose. Each record that was already there (an
        earlier attempt's) is the one kept."""
        if state.unwritten is None:
            return
        writer = self._writer(state)
        state.incoming = list(writer.input(state.unwritten).incoming)
        if state.memctx is not None:
            state.memctx = writer.memctx(state.memctx)
        state.prompt = writer.prompt(state.prompt)

    def _persists(self, thread_id: str | None) -> bool:
        return self.memory is not None and thread_id is not None

    def _stored_by_run(self, thread_id: str, run_id: str) -> list[int]:
        if self.storage.memory.get_thread(thread_id) is None:
            return []
        return [m.seq for m in self.storage.memory.get_messages_by_run(thread_id, run_id)]

    def _plan_persist(self, state: _RunState, thread_id: str | None,
                      messages: list[Message], side: str) -> _Persist | None:
        """What persisting ``messages`` (the run's ``input`` or ``output``) needs, found
        before the write group opens (their embedding happens here, outside it)."""
        if not self._persists(thread_id):
            return None
        assert thread_id is not None and self.memory is not None
        rec = None if state.fresh else (state.reader.persist_input() if side == "input"
                                        else state.reader.persist_output())
        if rec is not None:
            return _Persist(seqs=list(rec.seqs), record=False)
        # the store is the marker: an append is atomic, and input is stored before
        # any output, so the run's first len(incoming) messages are its input
        already = [] if state.fresh else self._stored_by_run(thread_id, state.run_id)
        if side == "input":
            already = already[:len(state.incoming)]
        else:
            inputs = set(state.input_seqs)
            already = [s for s in already if s not in inputs]
        if already or not messages:
            return _Persist(seqs=already)
        return _Persist(seqs=None, rows=self.memory.prepare_append(
            messages, run_id=state.run_id, created_at=self.clock()))

    def _write_persist(self, state: _RunState, plan: _Persist | None, side: str,
                       thread_id: str | None, resource_id: str | None) -> list[int]:
        if plan is None:
            return []
        assert thread_id is not None and self.memory is not None
        seqs = plan.seqs
        if seqs is None:
            seqs = list(self.memory.append_rows(thread_id, plan.rows, resource_id))
            state.marks(f"persist:{side}:stored")
        if plan.record:
            writer = self._writer(state)
            rec = (writer.persist_input(seqs) if side == "input"
                   else writer.persist_output(seqs))
            seqs = list(rec.seqs)
        return seqs

    def _loop(self, agent: Agent, state: _RunState, thread_id: str | None,
              resource_id: str | None) -> None:
        tools = list(agent.tools)
        if self.memory is not None and thread_id is not None:
            tools += list(self.memory.tools(thread_id=thread_id, resource_id=resource_id))
        by_name = {t.name: t for t in tools}
        specs: list[ToolSpec] = [t.spec for t in tools]
        base = state.prompt.messages()
        reader = state.reader
        last: ModelResponse | None = None
        for n in range(agent.max_steps):
            model_input = base + state.convo
            hashes, digest = input_signature(model_input)
            key = reader.keys.step(n)
            rec = None if state.fresh else reader.step(n)
            if rec is not None:
                # a recorded step: the input re-derived now must be the one it answered
                verify_step_input(key, rec.input_hashes, rec.input_hash, model_input,
                                  hashes, digest)
            else:
                if state.lease is not None:
                    state.lease.check()
                resp = self._call_model(agent, model_input, specs, key)
                # what the model was offered is recorded, so a counterfactual can offer
                # the same tools; who answered, so analysis can ask it again
                rec = StepRecord(
                    response=resp, model=model_identity(agent.model),
                    tools=[ToolSpecRecord.of(t) for t in specs],
                    input_hash=digest, input_hashes=hashes)
                if resp.tool_calls:
                    # durable (on its own) before any tool runs on its word
                    stored = self._writer(state).step(n, rec)
                    if stored is not rec:  # an earlier attempt's: it answered this input?
                        verify_step_input(key, stored.input_hashes, stored.input_hash,
                                          model_input, hashes, digest)
                    rec = stored
                else:
                    state.final_step = (n, rec)  # written with the run's output
            resp = rec.response
            last = resp
            state.steps += 1
            state.convo.append(assistant_message(resp))
            if not resp.tool_calls:
                state.text = resp.text or ""
                state.stop_reason = "final"
                return
            for call in resp.tool_calls:
                trec = self._tool(state, call, by_name)
                state.convo.append(tool_message(call, trec))
                state.tool_calls += 1
        state.text = (last.text if last is not None else None) or ""
        state.stop_reason = "max_steps"

    def _call_model(self, agent: Agent, messages: list[Message], specs: list[ToolSpec],
                    key: str) -> ModelResponse:
        resp = complete_checked(agent.model, messages, specs,
                                label=f"model '{model_identity(agent.model).name}'", key=key)
        ids = [c.id for c in resp.tool_calls]
        if len(set(ids)) != len(ids) or any(not i for i in ids):
            raise ModelError(f"model returned empty or repeated tool-call ids {ids} at '{key}'")
        return resp

    def _tool(self, state: _RunState, call: ToolCallPart,
              by_name: dict[str, Tool]) -> ToolRecord:
        recorded = None if state.fresh else state.reader.tool(call.id)
        if recorded is not None:
            return recorded  # the tool (and any WM patch) is not applied again
        if state.lease is not None:
            state.lease.check()
        tool = by_name.get(call.name)
        # the tool knows which call it runs for: one whose effect is not idempotent
        # (the working-memory merge) commits it with a mark of the call, and run
        # again for it (a crash came before the write below) returns what it did
        with journaled_call(state.run_id, call.id):
            done = execute_tool(call, tool, list(by_name))
        # durable (on its own) before the next tool or model call
        return self._writer(state).tool(call.id, done)

    def _write_output(self, state: _RunState) -> None:
        self._writer(state).output(OutputRecord(
            text=state.text, steps=state.steps, tool_calls=state.tool_calls,
            stop_reason=state.stop_reason))  # type: ignore[arg-type]


def execute_tool(call: ToolCallPart, tool: Tool | None, offered: Sequence[str]) -> ToolRecord:
    """Run one tool call (the runner's and the counterfactuals' one way): its result, or
    an error result the model sees when the tool is unknown or rejects its arguments.
    Any other exception fails the run (ToolExecutionError) without a record, so a
    resume retries it."""
    if tool is None:
        return ToolRecord(name=call.name, args=call.args, status="error",
                          error=f"unknown tool '{call.name}' (offered: {sorted(offered)})")
    args = call.args if isinstance(call.args, dict) else {"input": call.args}
    try:
        result = tool.fn(dict(args))
        # the same check every adapter applies: a result storage would refuse (NaN,
        # sets, non-string keys…) is an error the model sees, not a failed run
        json_or_invalid(f"result of tool '{call.name}'", result)
        return ToolRecord(name=call.name, args=call.args, status="ok", result=result)
    except (InvalidInputError, TypeError, ValueError) as e:
        # the model's arguments were wrong: tell it, as a recorded result
        return ToolRecord(name=call.name, args=call.args, status="error",
                          error=f"{type(e).__name__}: {e}")
    except Exception as e:
        raise ToolExecutionError(f"tool '{call.name}' (call '{call.id}') raised "
                                 f"{type(e).__name__}: {e}") from e
