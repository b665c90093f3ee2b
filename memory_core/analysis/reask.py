"""Re-asking a model on an edited prompt until it answers, tool calls included: a call
the original run made (same name, same canonical arguments) gets its recorded result;
any other call runs the caller's real tool, journaled under the counterfactual's own
key; without one the conversation stops there ("needs tool X") — no result is invented.

Nothing here writes to the thread, its working memory or the original run's records:
the working-memory update tool only ever runs against a scratch copy."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from memory_core.composition.working_memory import TOOL_NAME as WM_TOOL
from memory_core.composition.working_memory import WorkingMemory, WorkingMemoryConfig
from memory_core.errors import ReplayMismatch
from memory_core.journal import RunData
from memory_core.journal.keys import cf_answer_key, cf_tool_key
from memory_core.models.base import (
    Model,
    ModelResponse,
    Tool,
    ToolSpec,
    complete_checked,
    model_identity,
)
from memory_core.runs.runner import assistant_message, execute_tool, tool_message
from memory_core.storage.base import Storage
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import Message, ToolCallPart, canonical_json

ToolSource = Literal["reused", "run", "missing", "refused", "recording-ends"]
Stop = Literal["final", "max_steps", "needs_tool", "refused", "recording_ends"]
CallKey = tuple[str, str]


class ToolUse(BaseModel):
    """One tool call a re-asked model made, and where its result came from:
    ``reused`` (the original run's record ``recorded_call_id``), ``run`` (the real tool,
    its record journaled at ``key``), ``missing`` (no tool to run: the re-ask stopped),
    ``refused`` (a tool that would change stored state: the re-ask stopped) or
    ``recording-ends`` (the call an imported run's recording ends on: stopped there,
    as the original did)."""

    model_config = ConfigDict(extra="forbid")
    attempt: str  # "baseline-1", "variant-2", …
    step: int
    call_id: str
    name: str
    args: Any = None
    source: ToolSource
    recorded_call_id: str | None = None
    key: str | None = None
    status: str | None = None  # "ok" | "error" of the result the model was given
    reason: str | None = None


@dataclass
class Attempt:
    """One re-ask run to its end: the answer (the final text, or the model's own tool
    calls when it stopped on one), how it ended and the tool calls it made."""

    answer: str
    stop: Stop
    tool_uses: list[ToolUse] = field(default_factory=list)


def call_key(call: ToolCallPart) -> CallKey:
    return call.name, canonical_json(call.args)


def call_outcome(resp: ModelResponse) -> str:
    """A response that ends on tool calls, as comparable text: its text, then each
    call as ``[calls name({args})]``."""
    calls = " ".join(f"[calls {c.name}({canonical_json(c.args)})]" for c in resp.tool_calls)
    return f"{resp.text} {calls}" if resp.text else calls


def key_cf_tool(cf_key: str, attempt: str, step: int, call: ToolCallPart) -> str:
    """Where a tool the counterfactual ran is journaled: under its own key, addressed by
    the attempt, step and the call itself, so a retried counterfactual finds it."""
    digest = hashlib.sha256(canonical_json([call.name, call.args]).encode()).hexdigest()
    return cf_tool_key(cf_key, attempt, step, digest[:12])


@dataclass(frozen=True)
class ToolBox:
    """What the re-asks of one counterfactual may use for tool calls."""

    recorded: Mapping[CallKey, tuple[str, dict[str, Any]]]  # call -> (call id, record)
    ends_on: frozenset[CallKey]  # calls an imported run's recording ends on
    tools: Mapping[str, Tool]  # real tools the caller supplied
    working_memory: WorkingMemoryConfig | None  # runs the WM tool on a scratch copy
    thread_id: str | None
    resource_id: str | None
    max_steps: int

    def available(self) -> list[str]:
        """The tools that can really run, for the counterfactual's key."""
        names = [n for n in self.tools if n != WM_TOOL]
        if self.working_memory is not None:
            names.append(f"{WM_TOOL}@scratch")
        return sorted(names)


def recorded_calls(data: RunData) -> dict[CallKey, tuple[str, dict[str, Any]]]:
    """The original run's tool records by (name, canonical args), as runner records."""
    out: dict[CallKey, tuple[str, dict[str, Any]]] = {}
    for call_id, t in data.tools.items():
        out.setdefault((t.name, canonical_json(t.args)), (call_id, {
            "name": t.name, "args": t.args, "status": t.status, "result": t.result,
            "error": t.error}))
    return out


class _AttemptTools:
    """The tool side of one attempt: each attempt gets its own scratch working memory."""

    def __init__(self, box: ToolBox, storage: Storage, cf_key: str, attempt: str) -> None:
        self.box, self.storage, self.cf_key, self.attempt = box, storage, cf_key, attempt
        self._scratch_wm: Tool | None = None

    def _wm_tool(self, config: WorkingMemoryConfig) -> Tool:
        if self._scratch_wm is None:
            scratch = InMemoryStorage()
            wm = WorkingMemory(scratch.memory, config)
            key = wm.key(self.box.thread_id or "", self.box.resource_id)
            value = self.storage.memory.get_working_memory(key)
            if value is not None:
                scratch.memory.put_working_memory(key, value)
            self._scratch_wm = wm.tool(self.box.thread_id or "", self.box.resource_id)
        return self._scratch_wm

    def _run(self, tool: Tool, call: ToolCallPart, step: int) -> tuple[str, dict[str, Any]]:
        key = key_cf_tool(self.cf_key, self.attempt, step, call)
        rec = self.storage.runs.get(key)
        if rec is None:
            value = {**execute_tool(call, tool, list(self.box.tools)).model_dump(mode="json"),
                     "call_id": call.id}
            self.storage.runs.put_if_absent(key, value)
            rec = self.storage.runs.get(key) or value
        if call_key(call) != (rec.get("name"), canonical_json(rec.get("args"))):
            raise ReplayMismatch(f"'{key}' records a different call than {call.name}")
        return key, dict(rec)

    def resolve(self, call: ToolCallPart, step: int) -> tuple[ToolUse, dict[str, Any] | None]:
        """The use of one call and the record whose result the model gets (None: stop)."""
        use = ToolUse(attempt=self.attempt, step=step, call_id=call.id, name=call.name,
                      args=call.args, source="missing")
        found = self.box.recorded.get(call_key(call))
        if found is not None:
            use.source, use.recorded_call_id, use.status = "reused", found[0], found[1]["status"]
            return use, found[1]
        if call.name == WM_TOOL:
            config = self.box.working_memory
            if config is None:
                use.source = "refused"
                use.reason = (f"{WM_TOOL} would change the stored working memory; pass "
                              "memory=… to run it against a scratch copy")
                return use, None
            tool = self._wm_tool(config)
            use.reason = "ran against a scratch copy; the stored working memory is unchanged"
        elif call.name in self.box.tools:
            tool = self.box.tools[call.name]
        else:
            use.reason = (f"the original run never made this call and no tool "
                          f"'{call.name}' was given (pass agent=, agents= or tools=)")
            return use, None
        use.key, rec = self._run(tool, call, step)
        use.source, use.status = "run", str(rec.get("status"))
        return use, rec


def reask(model: Model, messages: Sequence[Message], specs: Sequence[ToolSpec],
          box: ToolBox, storage: Storage, cf_key: str, attempt: str, *,
          reuse: bool = True) -> Attempt:
    """Ask ``model`` on ``messages`` and follow its tool calls up to ``box.max_steps``.
    Each answer is journaled under ``cf_key`` (first write wins); with ``reuse`` an
    answer journaled before (an interrupted re-ask) is taken instead of asking again."""
    tools = _AttemptTools(box, storage, cf_key, attempt)
    convo = list(messages)
    uses: list[ToolUse] = []
    label = f"model '{model_identity(model).name}'"
    last: ModelResponse | None = None
    for step in range(box.max_steps):
        resp = _answer(model, convo, specs, storage, cf_key, attempt, step, label, reuse)
        last = resp
        if not resp.tool_calls:
            return Attempt(resp.text or "", "final", uses)
        if any(call_key(c) in box.ends_on for c in resp.tool_calls):
            uses += [ToolUse(attempt=attempt, step=step, call_id=c.id, name=c.name,
                             args=c.args, source="recording-ends",
                             reason="the original run's recording ends on this call")
                     for c in resp.tool_calls]
            return Attempt(call_outcome(resp), "recording_ends", uses)
        convo.append(assistant_message(resp))
        for call in resp.tool_calls:
            use, rec = tools.resolve(call, step)
            uses.append(use)
            if rec is None:
                return Attempt(call_outcome(resp), "refused" if use.source == "refused"
                               else "needs_tool", uses)
            convo.append(tool_message(call, rec))
    # stopped at max steps on the calls of its last answer: those, as the original's
    return Attempt(call_outcome(last) if last is not None else "", "max_steps", uses)


def _answer(model: Model, convo: list[Message], specs: Sequence[ToolSpec], storage: Storage,
            cf_key: str, attempt: str, step: int, label: str, reuse: bool) -> ModelResponse:
    key = cf_answer_key(cf_key, attempt, step)
    held = storage.runs.get(key) if reuse else None
    if held is not None:
        return ModelResponse.model_validate(held)
    resp = complete_checked(model, convo, list(specs), label=label,
                            key=f"{cf_key} ({attempt}, step {step})")
    storage.runs.put_if_absent(key, resp.model_dump(mode="json"))
    return resp


def offered_specs(data: RunData, box: ToolBox) -> list[ToolSpec]:
    """The tools the re-asked model is offered: those the run's first step recorded;
    else the caller's; plus, for any tool the run called that neither lists, a bare
    spec (imported runs do not record what was offered)."""
    raw = data.steps[0].tools if data.steps else []
    specs = [ToolSpec(name=t["name"], description=t.get("description", ""),
                      parameters=t.get("parameters") or {"type": "object", "properties": {}})
             for t in raw if isinstance(t, dict) and "name" in t]
    if not specs:
        specs = [t.spec for t in box.tools.values()]
    known = {s.name for s in specs}
    for step in data.steps:
        for call in step.response.tool_calls:
            if call.name not in known:
                known.add(call.name)
                specs.append(ToolSpec(name=call.name, description="(the run called this "
                                      "tool; its description was not recorded)"))
    return specs
