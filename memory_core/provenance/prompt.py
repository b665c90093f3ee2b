"""A composed prompt as a list of lane-tagged items, so it can be frozen in the
journal, shown lane by lane, and edited (items subtracted or put back) for
counterfactual replay without re-composing."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from memory_core.provenance.record import Lane, Memctx
from memory_core.types import Message, canonical_json


class PromptItem(BaseModel):
    """One message of the prompt, the lane it came through, and its source.

    ``thread_id``/``seq`` name the stored message for recalled/recent items;
    ``observation_id`` for observation items; none for instructions, working memory
    and input.
    """

    model_config = ConfigDict(extra="forbid")
    lane: Lane
    message: Message
    thread_id: str | None = None
    seq: int | None = None
    observation_id: str | None = None
    origin: str | None = None  # "hit" | "neighbour" | "repair" for recalled items


class FrozenPrompt(BaseModel):
    """The journal record ``<run_id>:prompt``."""

    model_config = ConfigDict(extra="forbid")
    v: int = 1
    items: list[PromptItem] = Field(default_factory=list)

    def messages(self) -> list[Message]:
        return [i.message for i in self.items]

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    def canonical(self) -> str:
        return canonical_json(self.to_json())


class Composition(BaseModel):
    """What ``AgentMemory.load_context`` returns: the prompt and its provenance."""

    model_config = ConfigDict(extra="forbid")
    prompt: FrozenPrompt
    memctx: Memctx
    # the incoming messages after echo-trim and retry dedupe: what the caller persists
    incoming: list[Message] = Field(default_factory=list)

    @property
    def messages(self) -> list[Message]:
        return self.prompt.messages()
