"""The model port: anything with ``complete(messages, tools) -> ModelResponse``,
and the Tool type offered to models."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from memory_core.errors import MemoryCoreError, ModelError
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


class ModelIdentity(BaseModel):
    """Who answered a model step, recorded in every step record so analysis can rebuild
    (or knowingly replace) the model that ran.

    ``kind`` names the family (``reader``, ``scripted``, ``summarizer``, ``openai`` for
    any OpenAI-compatible server, ``imported`` for a recording, ``custom`` for a model we
    know nothing about); ``base_url`` never carries credentials; sampling parameters are
    ``None`` when the caller left them to the server's defaults."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: str = "custom"
    name: str
    base_url: str | None = None
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    max_tokens: int | None = None


@runtime_checkable
class Model(Protocol):
    """Any object with this method is a model. A model may also offer
    ``identity() -> ModelIdentity``; without it ``name``/``temperature``/``seed``
    attributes are read (see ``model_identity``)."""

    def complete(self, messages: Sequence[Message],
                 tools: Sequence[ToolSpec]) -> ModelResponse: ...


def model_identity(model: Any) -> ModelIdentity:
    """The identity of any model object: its own ``identity()`` when it has one, else
    what its ``name``/``temperature``/``top_p``/``seed``/``max_tokens`` attributes say
    (kind ``custom``)."""
    ident = getattr(model, "identity", None)
    if callable(ident):
        value = ident()
        if isinstance(value, ModelIdentity):
            return value

    def num(attr: str) -> Any:
        v = getattr(model, attr, None)
        return v if isinstance(v, int | float) and not isinstance(v, bool) else None

    seed = num("seed")
    max_tokens = num("max_tokens")
    return ModelIdentity(
        kind="custom", name=str(getattr(model, "name", None) or type(model).__name__),
        temperature=num("temperature"), top_p=num("top_p"),
        seed=int(seed) if seed is not None else None,
        max_tokens=int(max_tokens) if max_tokens is not None else None)


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
