"""The model port: anything with ``complete(messages, tools) -> ModelResponse``,
and the Tool type offered to models."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from memory_core.types import Message, ToolCallPart


class Usage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    input_tokens: int = 0
    output_tokens: int = 0


class ModelResponse(BaseModel):
    """One model step: text and/or tool calls."""

    model_config = ConfigDict(extra="forbid")
    text: str | None = None
    tool_calls: list[ToolCallPart] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    model: str | None = None  # model name, when known
    finish_reason: str | None = None


@dataclass(frozen=True)
class ToolSpec:
    """What the model sees of a tool: name, description, JSON-schema parameters."""

    name: str
    description: str
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object",
                                                                 "properties": {}})


@dataclass(frozen=True)
class Tool:
    """A tool: its spec and the function that runs it (args dict -> JSON result)."""

    spec: ToolSpec
    fn: Callable[[dict[str, Any]], Any]

    @property
    def name(self) -> str:
        return self.spec.name


@runtime_checkable
class Model(Protocol):
    """Any object with this method is a model. ``name`` (and optionally
    ``temperature``/``seed``) attributes are recorded in provenance when present."""

    def complete(self, messages: Sequence[Message],
                 tools: Sequence[ToolSpec]) -> ModelResponse: ...
