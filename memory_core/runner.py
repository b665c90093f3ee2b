"""Agents and the durable runner: one turn composes its prompt, freezes it, journals
every model step and tool call, and persists its messages exactly once, so a crashed
run resumed under the same run_id loses nothing and repeats nothing."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from memory_core.errors import (
    InvalidInputError,
    ModelError,
    NotFoundError,
    ReplayMismatch,
    ToolExecutionError,
)
from memory_core.journal.hashes import input_digest, input_hashes, verify_step_input
from memory_core.journal.keys import check_run_id
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
from memory_core.journal.writer import JournalWriter
from memory_core.models.base import (
    ModelResponse,
    Tool,
    ToolSpec,
    complete_checked,
    model_identity,
)
from memory_core.prompt import FrozenPrompt, PromptItem
from memory_core.provenance import Memctx
from memory_core.storage.base import Storage
from memory_core.storage.common import Clock, json_or_invalid, utc_now
from memory_core.types import (
    Message,
    Part,
    RunRecord,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)

if TYPE_CHECKING:
    from memory_core.memory import AgentMemory
    from memory_core.other_memory import MessagesMemory

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
    if not resp.tool_calls:
        return Message(role="assistant", content=resp.text or "")
    parts: list[Part] = []
    if resp.text:
        parts.append(TextPart(text=resp.text))
    parts.extend(resp.tool_calls)
    return Message(role="assistant", content=parts)


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
    if not msgs:
        raise InvalidInputError("prompt must not be an empty list of messages")
    for i, m in enumerate(msgs):
        if not isinstance(m, Message):
            raise InvalidInputError(f"prompt[{i}] must be a Message, got {type(m).__name__}")
    return [Message.model_validate(m.model_dump()) for m in msgs]


@dataclass
class _RunState:
    run_id: str
    prompt: FrozenPrompt
    memctx: Memctx | None
    incoming: list[Message]
    resumed: bool
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

    @property
    def fresh(self) -> bool:
        """This attempt inserted the run's row and found no earlier input: no attempt
        before it reached persisting or a model step, so there is nothing to read back."""
        return self.run is not None and not self.resumed


def _memories(memory: object) -> tuple[AgentMemory | None, MessagesMemory | None]:
    """``memory=`` sorted: an AgentMemory, or another memory that only offers
    ``get_messages`` (SPEC §6.8, ``memory_core.other_memory``)."""
    from memory_core.memory import AgentMemory
    from memory_core.other_memory import is_messages_memory

    if memory is None or isinstance(memory, AgentMemory):
        return memory, None
    if is_messages_memory(memory):
        return None, memory  # type: ignore[return-value]
    raise InvalidInputError(
        f"memory must be an AgentMemory or offer get_messages(thread_id), got "
        f"{type(memory).__name__}")


class Runner:
    """Runs agents durably over a storage (SPEC §6.6 order).

    ``on_boundary`` is a test hook called with a boundary name right after each durable
    write (``input``, ``memctx``, ``prompt``, ``run:start``, ``persist:input:stored``,
    ``persist:input``, ``step:<n>``, ``tool:<call_id>``, ``persist:output:stored``,
    ``persist:output``, ``output``, ``run:completed``); the crash matrix kills the process
    there.

    Tools run at least once: a crash after a tool ran but before its journal entry was
    written runs it again on resume (the working-memory merge is idempotent; other
    tools should be too). A tool raising InvalidInputError/TypeError/ValueError is
    recorded as an error result the model sees; any other exception fails the run
    (ToolExecutionError) without recording, so a resume retries it.
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
        reused, and nothing is stored twice. Only one process runs a run id at a time:
        another starter gets RunInProgress (after waiting up to ``wait`` seconds)."""
        agent = self.agents.get(agent_name)
        if agent is None:
            raise NotFoundError(f"agent '{agent_name}' is not registered "
                                f"(known: {sorted(self.agents)})")
        check_run_id(run_id)
        incoming = _normalise_prompt(prompt)
        lease = Lease(self.storage.runs, run_id, ttl=self.lease_ttl).acquire(wait)
        try:
            return self._run(agent, run_id, thread_id, resource_id, incoming, lease)
        finally:
            lease.release()

    def _run(self, agent: Agent, run_id: str, thread_id: str | None,
             resource_id: str | None, incoming: list[Message], lease: Lease) -> RunResult:
        existing = self.storage.runs.get_run(run_id)
        if existing is not None and (existing.agent != agent.name
                                     or existing.thread_id != thread_id):
            raise InvalidInputError(
                f"run '{run_id}' was started by agent '{existing.agent}' on thread "
                f"{existing.thread_id!r}; it cannot be resumed by agent '{agent.name}' "
                f"on thread {thread_id!r}")
        state = self._freeze(agent, run_id, thread_id, resource_id, incoming)
        state.lease = lease
        if existing is None:
            row = RunRecord(run_id=run_id, agent=agent.name, thread_id=thread_id,
                            resource_id=resource_id, status="running",
                            started_at=self.clock())
            if self.storage.runs.start_run(row):
                state.run = row
                self._boundary("run:start")
        elif existing.status != "running":
            state.resumed = True
            if existing.status == "failed":
                self.storage.runs.set_run_status(run_id, "running")
        else:
            state.resumed = True
        try:
            self._persist_input(state, thread_id, resource_id)
            if self.memory is not None and thread_id is not None and state.input_seqs[:1] == [0]:
                # the run that wrote the thread's first message titles it (SPEC §2.5)
                self.memory.title_thread(thread_id, state.incoming, run_id=run_id)
                state.titled = True
            self._loop(agent, state, thread_id, resource_id)
            self._persist_output(state, thread_id, resource_id)
            self._write_output(state)
            # sealed before it is marked completed: a completed run always has its seal
            self._seal(state, thread_id)
        except BaseException as e:
            if isinstance(e, Exception):
                self.storage.runs.set_run_status(run_id, "failed", finished_at=self.clock(),
                                                 error=f"{type(e).__name__}: {e}")
            raise
        record = None if state.run is not None else self.storage.runs.get_run(run_id)
        if record is None or record.status != "completed":
            self.storage.runs.set_run_status(run_id, "completed", finished_at=self.clock())
            self._boundary("run:completed")
        return RunResult(run_id=run_id, agent=agent.name, thread_id=thread_id,
                         text=state.text, steps=state.steps, tool_calls=state.tool_calls,
                         stop_reason=state.stop_reason, memctx=state.memctx,
                         prompt=state.prompt, messages=state.convo,
                         input_seqs=state.input_seqs, output_seqs=state.output_seqs,
                         resumed=state.resumed)

    # -- phases ----------------------------------------------------------------------
    def _boundary(self, name: str) -> None:
        if self.on_boundary is not None:
            self.on_boundary(name)

    def _writer(self, run_id: str, log: dict[str, Any] | None = None) -> JournalWriter:
        return JournalWriter(self.storage.runs, run_id, on_written=self._boundary, log=log)

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
        seal_written(self.storage, state.run, list(state.log.items()), messages)

    def _freeze(self, agent: Agent, run_id: str, thread_id: str | None,
                resource_id: str | None, incoming: list[Message]) -> _RunState:
        reader = RunReader(self.storage.runs, run_id)
        frozen = reader.prompt()
        if frozen is not None:
            # resumed: read back, never re-compose (recall is frozen by the first try)
            rec_input = reader.input()
            if rec_input is None:
                raise ReplayMismatch(f"run '{run_id}' has a frozen prompt but no "
                                     f"'{reader.keys.input}' record")
            return _RunState(run_id=run_id, prompt=frozen, memctx=reader.memctx(),
                             incoming=list(rec_input.incoming), resumed=True)
        # a crash after :input but before :prompt re-composes: nothing was persisted
        # yet, so the store (and the composition) is as the first attempt saw it
        seen_before = reader.has_input()
        memctx: Memctx | None = None
        if self.memory is not None and thread_id is not None:
            comp = self.memory.load_context(thread_id=thread_id, resource_id=resource_id,
                                            input=incoming, instructions=agent.instructions)
            prompt, memctx = comp.prompt, comp.memctx
            to_persist = list(getattr(comp, "incoming", incoming))
        elif self.messages_memory is not None and thread_id is not None:
            from memory_core.other_memory import compose_from_messages

            prompt, memctx, to_persist = compose_from_messages(
                self.messages_memory, thread_id=thread_id, resource_id=resource_id,
                incoming=incoming, instructions=agent.instructions)
        else:
            items = [PromptItem(lane="instructions",
                                message=Message(role="system", content=agent.instructions))]
            items += [PromptItem(lane="input", message=m) for m in incoming]
            prompt, to_persist = FrozenPrompt(items=items), incoming
        writer = self._writer(run_id, {})
        rec_input = writer.input(InputRecord(messages=incoming, incoming=to_persist,
                                             sealed=True))
        if memctx is not None:
            # memctx before prompt: a frozen prompt then implies its memctx exists, so a
            # resume that finds the prompt never needs to compose
            memctx = writer.memctx(memctx)
        return _RunState(run_id=run_id, prompt=writer.prompt(prompt), memctx=memctx,
                         incoming=list(rec_input.incoming), resumed=seen_before,
                         log=writer.log)

    def _persists(self, thread_id: str | None) -> bool:
        return self.memory is not None and thread_id is not None

    def _stored_by_run(self, thread_id: str, run_id: str) -> list[int]:
        if self.storage.memory.get_thread(thread_id) is None:
            return []
        return [m.seq for m in self.storage.memory.get_messages_by_run(thread_id, run_id)]

    def _persist_input(self, state: _RunState, thread_id: str | None,
                       resource_id: str | None) -> None:
        if not self._persists(thread_id):
            return
        assert thread_id is not None and self.memory is not None
        rec = None if state.fresh else RunReader(self.storage.runs, state.run_id).persist_input()
        if rec is None:
            # the store is the marker: an append is atomic, and input is stored before
            # any output, so the run's first len(incoming) messages are its input
            already = [] if state.fresh else self._stored_by_run(thread_id, state.run_id)
            if already:
                seqs = already[:len(state.incoming)]
            elif state.incoming:
                seqs = list(self.memory.append(thread_id, state.incoming, resource_id,
                                               run_id=state.run_id, created_at=self.clock()))
                self._boundary("persist:input:stored")
            else:
                seqs = []
            rec = self._writer(state.run_id, state.log).persist_input(seqs)
        state.input_seqs = list(rec.seqs)

    def _loop(self, agent: Agent, state: _RunState, thread_id: str | None,
              resource_id: str | None) -> None:
        tools = list(agent.tools)
        if self.memory is not None and thread_id is not None:
            tools += list(self.memory.tools(thread_id=thread_id, resource_id=resource_id))
        by_name = {t.name: t for t in tools}
        specs: list[ToolSpec] = [t.spec for t in tools]
        base = state.prompt.messages()
        reader = RunReader(self.storage.runs, state.run_id)
        writer = self._writer(state.run_id, state.log)
        last: ModelResponse | None = None
        for n in range(agent.max_steps):
            model_input = base + state.convo
            hashes = input_hashes(model_input)
            key = reader.keys.step(n)
            rec = None if state.fresh else reader.step(n)
            if rec is None:
                if state.lease is not None:
                    state.lease.check()
                resp = self._call_model(agent, model_input, specs, key)
                # what the model was offered is recorded, so a counterfactual can offer
                # the same tools; who answered, so analysis can ask it again
                rec = writer.step(n, StepRecord(
                    response=resp, model=model_identity(agent.model),
                    tools=[ToolSpecRecord.of(t) for t in specs],
                    input_hash=input_digest(model_input), input_hashes=hashes))
            verify_step_input(key, rec.input_hashes, rec.input_hash, model_input, hashes)
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
        recorded = RunReader(self.storage.runs, state.run_id).tool(call.id)
        if recorded is not None:
            return recorded  # the tool (and any WM patch) is not applied again
        if state.lease is not None:
            state.lease.check()
        return self._writer(state.run_id, state.log).tool(
            call.id, execute_tool(call, by_name.get(call.name), list(by_name)))

    def _persist_output(self, state: _RunState, thread_id: str | None,
                        resource_id: str | None) -> None:
        if not self._persists(thread_id):
            return
        assert thread_id is not None and self.memory is not None
        rec = None if state.fresh else RunReader(self.storage.runs,
                                                 state.run_id).persist_output()
        if rec is None:
            inputs = set(state.input_seqs)
            already = [] if state.fresh else [
                s for s in self._stored_by_run(thread_id, state.run_id) if s not in inputs]
            if already:
                seqs = already
            elif state.convo:
                seqs = list(self.memory.append(thread_id, state.convo, resource_id,
                                               run_id=state.run_id, created_at=self.clock()))
                self._boundary("persist:output:stored")
            else:
                seqs = []
            rec = self._writer(state.run_id, state.log).persist_output(seqs)
        state.output_seqs = list(rec.seqs)

    def _write_output(self, state: _RunState) -> None:
        self._writer(state.run_id, state.log).output(OutputRecord(
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
