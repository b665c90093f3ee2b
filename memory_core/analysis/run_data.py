"""Loads what the journal recorded about one run into typed pieces: the run row,
the frozen prompt, the provenance record, the model steps, tool calls and output."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memory_core.errors import NotFoundError
from memory_core.models.base import ModelResponse
from memory_core.prompt import FrozenPrompt
from memory_core.provenance import Memctx
from memory_core.records import (
    upgrade_memctx,
    upgrade_output,
    upgrade_prompt,
    upgrade_step,
    validated,
)
from memory_core.storage.base import Storage
from memory_core.types import RunRecord, ToolCallPart


@dataclass(frozen=True)
class StepRecord:
    index: int
    response: ModelResponse
    model: dict[str, Any]
    tools: list[dict[str, Any]] = field(default_factory=list)  # specs offered, if recorded


@dataclass(frozen=True)
class ToolRecord:
    call_id: str
    name: str
    args: Any
    status: str
    result: Any
    error: str | None


@dataclass(frozen=True)
class RunData:
    run: RunRecord
    prompt: FrozenPrompt
    memctx: Memctx | None
    steps: list[StepRecord] = field(default_factory=list)
    tools: dict[str, ToolRecord] = field(default_factory=dict)
    output: dict[str, Any] | None = None

    @property
    def answer(self) -> str | None:
        if self.output is not None:
            text = self.output.get("text")
            return text if isinstance(text, str) else None
        for s in reversed(self.steps):
            if s.response.text:
                return s.response.text
        return None

    @property
    def model_info(self) -> dict[str, Any]:
        return dict(self.steps[0].model) if self.steps else {}

    @property
    def pending_calls(self) -> list[ToolCallPart]:
        """Tool calls of the last step with no tool record: where the recording ends
        on a call (an imported run records the model's request, never the result)."""
        if not self.steps:
            return []
        return [c for c in self.steps[-1].response.tool_calls if c.id not in self.tools]


def _step_index(key: str, run_id: str) -> int | None:
    rest = key[len(f"{run_id}:step:"):]
    return int(rest) if rest.isdigit() else None


def load_run(storage: Storage, run_id: str) -> RunData:
    """Everything recorded for ``run_id``; NotFoundError names an unknown run."""
    if not isinstance(run_id, str) or not run_id:
        raise NotFoundError(f"run id must be a non-empty string, got {run_id!r}")
    run = storage.runs.get_run(run_id)
    prompt_raw = storage.runs.get(f"{run_id}:prompt")
    if run is None or prompt_raw is None:
        raise NotFoundError(
            f"run '{run_id}' does not exist (no run record or no frozen prompt in the journal)")
    prompt = upgrade_prompt(prompt_raw, f"{run_id}:prompt")
    memctx_raw = storage.runs.get(f"{run_id}:memctx")
    memctx = upgrade_memctx(memctx_raw, f"{run_id}:memctx") if memctx_raw is not None else None
    steps: list[StepRecord] = []
    for key, value in storage.runs.list(f"{run_id}:step:"):
        idx = _step_index(key, run_id)
        if idx is None:
            continue
        step = upgrade_step(value)
        steps.append(StepRecord(idx, validated(ModelResponse, step.get("response"),
                                               f"journal entry '{key}' (response)"),
                                dict(step.get("model") or {}), list(step.get("tools") or [])))
    steps.sort(key=lambda s: s.index)
    tools: dict[str, ToolRecord] = {}
    for key, value in storage.runs.list(f"{run_id}:tool:"):
        call_id = key[len(f"{run_id}:tool:"):]
        tools[call_id] = ToolRecord(call_id, str(value.get("name", "")), value.get("args"),
                                    str(value.get("status", "ok")), value.get("result"),
                                    value.get("error"))
    output = storage.runs.get(f"{run_id}:output")
    return RunData(run, prompt, memctx, steps, tools,
                   upgrade_output(output) if output is not None else None)
