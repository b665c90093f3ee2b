"""Agents and the durable runner: one turn composes its prompt, freezes it, journals
every model step and tool call, and persists its messages exactly once, so a crashed
run resumed under the same run_id loses nothing and repeats nothing."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from memory_core.errors import (
    InvalidInputError,
    MemoryCoreError,
    ModelError,
    NotFoundError,
    ReplayMismatch,
    ToolExecutionError,
)
from memory_core.models.base import ModelResponse, Tool, ToolSpec
from memory_core.prompt import FrozenPrompt, PromptItem
from memory_core.provenance import Memctx
from memory_core.records import (
    upgrade_input,
    upgrade_memctx,
    upgrade_prompt,
    upgrade_step,
)
from memory_core.records import upgrade_output as upgrade_output  # kept importable here
from memory_core.storage.base import Storage
from memory_core.storage.common import utc_now
from memory_core.types import (
    Message,
    Part,
    RunRecord,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    canonical_json,
)

if TYPE_CHECKING:
    from memory_core.memory import AgentMemory

Clock = Callable[[], datetime]
BoundaryHook = Callable[[str], None]

INPUT_VERSION = 1
STEP_VERSION = 1  # v0 (no model info, no input hashes) is upgraded by records.py
TOOL_VERSION = 1
PERSIST_VERSION = 1
OUTPUT_VERSION = 1


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


# -- journal keys and record helpers --------------------------------------------------
def key_input(run_id: str) -> str:
    return f"{run_id}:input"


def key_prompt(run_id: str) -> str:
    return f"{run_id}:prompt"


def key_memctx(run_id: str) -> str:
    return f"{run_id}:memctx"


def key_persist_input(run_id: str) -> str:
    return f"{run_id}:persist:input"


def key_persist_output(run_id: str) -> str:
    return f"{run_id}:persist:output"


def key_step(run_id: str, n: int) -> str:
    return f"{run_id}:step:{n}"


def key_tool(run_id: str, call_id: str) -> str:
    return f"{run_id}:tool:{call_id}"


def key_import(run_id: str) -> str:
    """Where an imported run came from (written only by memory_core.importers.writer)."""
    return f"{run_id}:import"


def key_output(run_id: str) -> str:
    return f"{run_id}:output"


def message_hash(message: Message) -> str:
    """A short, stable digest of one message (canonical JSON, sha256, 16 hex)."""
    return hashlib.sha256(message.canonical_json().encode("utf-8")).hexdigest()[:16]


def input_hashes(messages: Sequence[Message]) -> list[str]:
    return [message_hash(m) for m in messages]


def input_digest(messages: Sequence[Message]) -> str:
    """sha256 over the canonical JSON of the whole model input."""
    text = "[" + ",".join(m.canonical_json() for m in messages) + "]"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def verify_step_input(key: str, rec: dict[str, Any], model_input: Sequence[Message],
                      hashes: Sequence[str] | None = None) -> bool:
    """Check a recorded step against the re-derived model input; False when the record
    carries no hash to check (old format). A difference raises ReplayMismatch."""
    hashes = list(hashes) if hashes is not None else input_hashes(model_input)
    recorded = rec.get("input_hashes")
    if recorded is not None:
        if list(recorded) != hashes:
            pos = first_difference(list(recorded), hashes)
            raise ReplayMismatch(
                f"'{key}': the model input re-derived from the journal differs from the "
                f"recorded one at message {pos} (recorded {len(recorded)} messages, "
                f"derived {len(hashes)})")
        return True
    digest = rec.get("input_hash")
    if digest is not None:
        if digest != input_digest(model_input):
            raise ReplayMismatch(f"'{key}': the model input re-derived from the journal "
                                 "differs from the recorded one (whole-input hash)")
        return True
    return False


def first_difference(expected: Sequence[str], actual: Sequence[str]) -> int:
    """Index of the first differing element (the shorter length when one is a prefix)."""
    for i, (a, b) in enumerate(zip(expected, actual, strict=False)):
        if a != b:
            return i
    return min(len(expected), len(actual))


def complete_checked(model: Any, messages: list[Message], specs: list[ToolSpec], *,
                     label: str, key: str) -> ModelResponse:
    """``model.complete`` for the journal entry ``key``: a foreign exception, or anything
    but a ModelResponse, becomes a ModelError naming ``label`` and ``key``; our own
    errors pass through, they already name the problem."""
    try:
        resp = model.complete(messages, specs)
    except MemoryCoreError:
        raise
    except Exception as e:
        raise ModelError(f"{label} failed at '{key}': {type(e).__name__}: {e}") from e
    if not isinstance(resp, ModelResponse):
        raise ModelError(f"{label} returned {type(resp).__name__} at '{key}', "
                         "expected ModelResponse")
    return resp


def assistant_message(resp: ModelResponse) -> Message:
    """The assistant message a model step adds to the conversation."""
    if not resp.tool_calls:
        return Message(role="assistant", content=resp.text or "")
    parts: list[Part] = []
    if resp.text:
        parts.append(TextPart(text=resp.text))
    parts.extend(resp.tool_calls)
    return Message(role="assistant", content=parts)


def tool_message(call: ToolCallPart, record: dict[str, Any]) -> Message:
    result = record.get("result") if record.get("status") == "ok" else {
        "error": record.get("error")}
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


def _spec_record(spec: ToolSpec) -> dict[str, Any]:
    return {"name": spec.name, "description": spec.description,
            "parameters": spec.parameters}


def _model_info(model: Any) -> dict[str, Any]:
    def plain(v: Any) -> Any:
        return v if v is None or isinstance(v, str | int | float | bool) else str(v)

    return {"name": plain(getattr(model, "name", type(model).__name__)),
            "temperature": plain(getattr(model, "temperature", None)),
            "seed": plain(getattr(model, "seed", None))}


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
                 memory: AgentMemory | None = None, clock: Clock = utc_now, *,
                 on_boundary: BoundaryHook | None = None) -> None:
        for key, agent in agents.items():
            if key != agent.name:
                raise InvalidInputError(
                    f"agents key '{key}' does not match the agent's name '{agent.name}'")
        self.storage = storage
        self.agents = dict(agents)
        self.memory = memory
        self.clock = clock
        self.on_boundary = on_boundary

    # -- public ----------------------------------------------------------------------
    def run(self, agent_name: str, *, run_id: str, thread_id: str | None = None,
            resource_id: str | None = None,
            prompt: str | Message | Sequence[Message]) -> RunResult:
        """Run (or resume) one turn. A run_id seen before resumes from its journal:
        the frozen prompt is read back, recorded model steps and tool results are
        reused, and nothing is stored twice."""
        agent = self.agents.get(agent_name)
        if agent is None:
            raise NotFoundError(f"agent '{agent_name}' is not registered "
                                f"(known: {sorted(self.agents)})")
        if not isinstance(run_id, str) or not run_id or ":" in run_id:
            raise InvalidInputError(
                f"run_id must be a non-empty string without ':', got {run_id!r}")
        incoming = _normalise_prompt(prompt)
        existing = self.storage.runs.get_run(run_id)
        if existing is not None and (existing.agent != agent.name
                                     or existing.thread_id != thread_id):
            raise InvalidInputError(
                f"run '{run_id}' was started by agent '{existing.agent}' on thread "
                f"{existing.thread_id!r}; it cannot be resumed by agent '{agent.name}' "
                f"on thread {thread_id!r}")
        state = self._freeze(agent, run_id, thread_id, resource_id, incoming)
        if existing is None:
            started = self.storage.runs.start_run(RunRecord(
                run_id=run_id, agent=agent.name, thread_id=thread_id,
                resource_id=resource_id, status="running", started_at=self.clock()))
            if started:
                self._boundary("run:start")
        elif existing.status != "running":
            state.resumed = True
            if existing.status == "failed":
                self.storage.runs.set_run_status(run_id, "running")
        else:
            state.resumed = True
        try:
            self._persist_input(state, thread_id, resource_id)
            self._loop(agent, state, thread_id, resource_id)
            self._persist_output(state, thread_id, resource_id)
            self._write_output(state)
        except BaseException as e:
            if isinstance(e, Exception):
                self.storage.runs.set_run_status(run_id, "failed", finished_at=self.clock(),
                                                 error=f"{type(e).__name__}: {e}")
            raise
        record = self.storage.runs.get_run(run_id)
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

    def _put(self, key: str, value: Any, boundary: str) -> Any:
        """First write wins: write, fire the boundary when this call wrote, and return
        the value that is in the journal (ours or an earlier one)."""
        runs = self.storage.runs
        if runs.put_if_absent(key, value):
            self._boundary(boundary)
        stored = runs.get(key)
        return value if stored is None else stored

    def _freeze(self, agent: Agent, run_id: str, thread_id: str | None,
                resource_id: str | None, incoming: list[Message]) -> _RunState:
        runs = self.storage.runs
        frozen = runs.get(key_prompt(run_id))
        if frozen is not None:
            # resumed: read back, never re-compose (recall is frozen by the first try)
            rec_input = runs.get(key_input(run_id))
            if rec_input is None:
                raise ReplayMismatch(f"run '{run_id}' has a frozen prompt but no "
                                     f"'{key_input(run_id)}' record")
            rec_input = upgrade_input(rec_input)
            memctx_raw = runs.get(key_memctx(run_id))
            return _RunState(
                run_id=run_id, prompt=upgrade_prompt(frozen, key_prompt(run_id)),
                memctx=upgrade_memctx(memctx_raw, key_memctx(run_id)) if memctx_raw else None,
                incoming=[Message.model_validate(m) for m in rec_input["incoming"]],
                resumed=True)
        # a crash after :input but before :prompt re-composes: nothing was persisted
        # yet, so the store (and the composition) is as the first attempt saw it
        seen_before = runs.get(key_input(run_id)) is not None
        memctx: Memctx | None = None
        if self.memory is not None and thread_id is not None:
            comp = self.memory.load_context(thread_id=thread_id, resource_id=resource_id,
                                            input=incoming, instructions=agent.instructions)
            prompt, memctx = comp.prompt, comp.memctx
            to_persist = list(getattr(comp, "incoming", incoming))
        else:
            items = [PromptItem(lane="instructions",
                                message=Message(role="system", content=agent.instructions))]
            items += [PromptItem(lane="input", message=m) for m in incoming]
            prompt, to_persist = FrozenPrompt(items=items), incoming
        rec_input = upgrade_input(self._put(key_input(run_id), {
            "v": INPUT_VERSION, "messages": [m.model_dump(mode="json") for m in incoming],
            "incoming": [m.model_dump(mode="json") for m in to_persist]}, "input"))
        if memctx is not None:
            # memctx before prompt: a frozen prompt then implies its memctx exists, so a
            # resume that finds the prompt never needs to compose
            memctx_raw = self._put(key_memctx(run_id), memctx.model_dump(mode="json"),
                                   "memctx")
            memctx = upgrade_memctx(memctx_raw, key_memctx(run_id))
        frozen = self._put(key_prompt(run_id), prompt.to_json(), "prompt")
        return _RunState(run_id=run_id, prompt=upgrade_prompt(frozen, key_prompt(run_id)),
                         memctx=memctx,
                         incoming=[Message.model_validate(m) for m in rec_input["incoming"]],
                         resumed=seen_before)

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
        key = key_persist_input(state.run_id)
        rec = self.storage.runs.get(key)
        if rec is None:
            # the store is the marker: an append is atomic, and input is stored before
            # any output, so the run's first len(incoming) messages are its input
            already = self._stored_by_run(thread_id, state.run_id)
            if already:
                seqs = already[:len(state.incoming)]
            elif state.incoming:
                seqs = list(self.memory.append(thread_id, state.incoming, resource_id,
                                               run_id=state.run_id, created_at=self.clock()))
                self._boundary("persist:input:stored")
            else:
                seqs = []
            rec = self._put(key, {"v": PERSIST_VERSION, "seqs": seqs}, "persist:input")
        state.input_seqs = list(rec["seqs"])

    def _loop(self, agent: Agent, state: _RunState, thread_id: str | None,
              resource_id: str | None) -> None:
        tools = list(agent.tools)
        if self.memory is not None and thread_id is not None:
            tools += list(self.memory.tools(thread_id=thread_id, resource_id=resource_id))
        by_name = {t.name: t for t in tools}
        specs: list[ToolSpec] = [t.spec for t in tools]
        base = state.prompt.messages()
        last: ModelResponse | None = None
        for n in range(agent.max_steps):
            model_input = base + state.convo
            hashes = input_hashes(model_input)
            key = key_step(state.run_id, n)
            raw = self.storage.runs.get(key)
            if raw is None:
                resp = self._call_model(agent, model_input, specs, key)
                raw = self._put(key, {"v": STEP_VERSION,
                                      "response": resp.model_dump(mode="json"),
                                      "model": _model_info(agent.model),
                                      "input_hash": input_digest(model_input),
                                      "input_hashes": hashes,
                                      # what the model was offered, so a counterfactual
                                      # can offer the same tools
                                      "tools": [_spec_record(t) for t in specs]},
                                f"step:{n}")
            rec = upgrade_step(raw)
            verify_step_input(key, rec, model_input, hashes)
            resp = ModelResponse.model_validate(rec["response"])
            last = resp
            state.steps += 1
            state.convo.append(assistant_message(resp))
            if not resp.tool_calls:
                state.text = resp.text or ""
                state.stop_reason = "final"
                return
            for call in resp.tool_calls:
                trec = self._tool(state.run_id, call, by_name)
                state.convo.append(tool_message(call, trec))
                state.tool_calls += 1
        state.text = (last.text if last is not None else None) or ""
        state.stop_reason = "max_steps"

    def _call_model(self, agent: Agent, messages: list[Message], specs: list[ToolSpec],
                    key: str) -> ModelResponse:
        resp = complete_checked(agent.model, messages, specs,
                                label=f"model '{_model_info(agent.model)['name']}'", key=key)
        ids = [c.id for c in resp.tool_calls]
        if len(set(ids)) != len(ids) or any(not i for i in ids):
            raise ModelError(f"model returned empty or repeated tool-call ids {ids} at '{key}'")
        return resp

    def _tool(self, run_id: str, call: ToolCallPart, by_name: dict[str, Tool]) -> dict[str, Any]:
        key = key_tool(run_id, call.id)
        rec = self.storage.runs.get(key)
        if rec is not None:
            return dict(rec)  # recorded: the tool (and any WM patch) is not applied again
        tool = by_name.get(call.name)
        base = {"v": TOOL_VERSION, "name": call.name, "args": call.args}
        if tool is None:
            value = {**base, "status": "error", "result": None,
                     "error": f"unknown tool '{call.name}' (offered: {sorted(by_name)})"}
        else:
            args = call.args if isinstance(call.args, dict) else {"input": call.args}
            try:
                result = tool.fn(dict(args))
                canonical_json(result)
                value = {**base, "status": "ok", "result": result, "error": None}
            except (InvalidInputError, TypeError, ValueError) as e:
                # the model's arguments were wrong: tell it, as a recorded result
                value = {**base, "status": "error", "result": None,
                         "error": f"{type(e).__name__}: {e}"}
            except Exception as e:
                raise ToolExecutionError(f"tool '{call.name}' (call '{call.id}') raised "
                                         f"{type(e).__name__}: {e}") from e
        return dict(self._put(key, value, f"tool:{call.id}"))

    def _persist_output(self, state: _RunState, thread_id: str | None,
                        resource_id: str | None) -> None:
        if not self._persists(thread_id):
            return
        assert thread_id is not None and self.memory is not None
        key = key_persist_output(state.run_id)
        rec = self.storage.runs.get(key)
        if rec is None:
            inputs = set(state.input_seqs)
            already = [s for s in self._stored_by_run(thread_id, state.run_id)
                       if s not in inputs]
            if already:
                seqs = already
            elif state.convo:
                seqs = list(self.memory.append(thread_id, state.convo, resource_id,
                                               run_id=state.run_id, created_at=self.clock()))
                self._boundary("persist:output:stored")
            else:
                seqs = []
            rec = self._put(key, {"v": PERSIST_VERSION, "seqs": seqs}, "persist:output")
        state.output_seqs = list(rec["seqs"])

    def _write_output(self, state: _RunState) -> None:
        self._put(key_output(state.run_id), output_record(state.text, state.steps,
                                                          state.tool_calls,
                                                          state.stop_reason), "output")


def output_record(text: str, steps: int, tool_calls: int, stop_reason: str) -> dict[str, Any]:
    return {"v": OUTPUT_VERSION, "text": text, "steps": steps, "tool_calls": tool_calls,
            "stop_reason": stop_reason}
