"""The model port: anything with ``complete(messages, tools) -> ModelResponse``,
and the Tool type offered to models."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from memory_core.errors import MemoryCoreError, ModelError
from memory_core.types import Message, Part, TextPart, ToolCallPart


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
    # the answer as its message holds it, when that is not the message ``text`` then
    # ``tool_calls`` make (``as_message``): a recorded answer of several
    # text parts (each kept, never joined), text after a call, a speaker's ``name``.
    # Imports set it so the conversation a replay rebuilds is the one stored. Its text
    # and calls are ``text`` and ``tool_calls``; left out of the record when None.
    message: Message | None = None

    @model_validator(mode="after")
    def _message_agrees(self) -> ModelResponse:
        m = self.message
        if m is not None and (m.role != "assistant" or m.text() != (self.text or None)
                              or m.tool_calls() != self.tool_calls):
            raise ValueError("message must be an assistant message holding the response's "
                             "text and tool calls")
        return self

    @classmethod
    def answering(cls, message: Message, **fields: Any) -> ModelResponse:
        """The response whose answer is ``message`` as recorded (its text parts joined
        as ``Message.text`` joins them); ``message`` is kept only when ``as_message``
        would not make it again."""
        resp = cls(text=message.text(), tool_calls=message.tool_calls(), **fields)
        if message.role == "assistant" and type(message.content) is str \
                and not message.metadata:
            return resp  # (what ``as_message`` makes of it: nothing to compare)
        if resp.as_message().canonical_json() != message.canonical_json():
            resp.message = message.model_copy(deep=True)
        return resp

    def as_message(self) -> Message:
        """The assistant message this step adds to the conversation: the recorded
        ``message``, else the text, then the tool calls."""
        if self.message is not None:
            return self.message.model_copy(deep=True)
        if not self.tool_calls:
            return Message(role="assistant", content=self.text or "")
        parts: list[Part] = []
        if self.text:
            parts.append(TextPart(text=self.text))
        parts.extend(self.tool_calls)
        return Message(role="assistant", content=parts)

    @model_serializer(mode="wrap")
    def _without_message(self, handler: SerializerFunctionWrapHandler) -> Any:
        # responses whose message is the one text and tool calls make are recorded as
        # they were before the field
        out = handler(self)
        if isinstance(out, dict) and out.get("message") is None:
            out.pop("message", None)
        return out


@dataclass(frozen=True)
class ToolSpec:
    """What the model sees of a tool: name, description, JSON-schema parameters."""

    name: str
    description: str
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object",
                                                                 "properties": {}})


@dataclass(frozen=True)
class Tool:
    """A tool: its spec and the function that runs it (args dict -> JSON result).

    ``idempotent``: the author's word that running it twice with the same arguments
    leaves the same state (and returns the same) as running it once — a read is; the
    working-memory merge is not (a new nested object keeps its nulls, a second merge
    deletes them), so its tool is not declared so. Nothing acts on it: the Runner
    treats every tool alike (its step durable before it runs, its result durable before
    the next call), and a crash between a tool's effect and the write of its result runs
    it again on resume — harmless only for a tool that is idempotent, or one that makes
    its effect once per call (``journaled_call``), as the working-memory tool does. Kept
    for callers that declare it; tests/test_tools_idempotent.py holds the library's
    declarations to it."""

    spec: ToolSpec
    fn: Callable[[dict[str, Any]], Any]
    idempotent: bool = False

    @property
    def name(self) -> str:
        return self.spec.name


@dataclass(frozen=True)
class JournaledCall:
    """The journaled tool call a tool is running for: the run and the call's id, the
    same on every attempt of the run (``journaled_call``)."""

    run_id: str
    call_id: str


_CALL: ContextVar[JournaledCall | None] = ContextVar("memwb_journaled_call", default=None)


@contextmanager
def journaled_call(run_id: str, call_id: str) -> Iterator[JournaledCall]:
    """Run a tool for call ``call_id`` of run ``run_id`` (the Runner does, around each
    tool it runs): inside the block ``current_call`` names that call, so a tool whose
    effect is not idempotent can commit it together with a mark of the call and, run
    again for the same call (a resume after a crash before its result was recorded),
    return what it did instead of doing it twice."""
    call = JournaledCall(run_id, call_id)
    token = _CALL.set(call)
    try:
        yield call
    finally:
        _CALL.reset(token)


def current_call() -> JournaledCall | None:
    """The call ``journaled_call`` names in this thread (None outside one)."""
    return _CALL.get()


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
