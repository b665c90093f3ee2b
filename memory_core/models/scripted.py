"""ScriptedModel: plays a fixed list of responses, for tests. Calling it more often
than scripted raises ModelError, so a test notices any extra model call."""

from __future__ import annotations

from collections.abc import Sequence

from memory_core.errors import ModelError
from memory_core.models.base import ModelIdentity, ModelResponse, ToolSpec
from memory_core.types import Message


class ScriptedModel:
    def __init__(self, responses: Sequence[ModelResponse | str], *,
                 name: str = "scripted") -> None:
        self._responses = [r if isinstance(r, ModelResponse) else ModelResponse(text=r)
                           for r in responses]
        self.name = name
        self.calls = 0
        self.seen: list[list[Message]] = []  # the messages of every call, for assertions

    def identity(self) -> ModelIdentity:
        return ModelIdentity(kind="scripted", name=self.name)

    def complete(self, messages: Sequence[Message],
                 tools: Sequence[ToolSpec]) -> ModelResponse:
        if self.calls >= len(self._responses):
            raise ModelError(
                f"scripted model '{self.name}' was called {self.calls + 1} times but only "
                f"{len(self._responses)} responses were scripted")
        self.seen.append(list(messages))
        r = self._responses[self.calls]
        self.calls += 1
        return r.model_copy(update={"model": r.model or self.name}, deep=True)


class RaisingModel:
    """A model that must never be called (replay uses it)."""

    name = "raising"

    def complete(self, messages: Sequence[Message],
                 tools: Sequence[ToolSpec]) -> ModelResponse:
        raise ModelError("the model was called during replay; replay must read every "
                         "model step from the journal")
