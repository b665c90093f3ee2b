"""Our messages and tools in the OpenAI chat-completions format, as the model client
sends them: re-exported from the one codec (:mod:`memory_core.openai_codec`), which the
importers read with too. The client itself is :mod:`memory_core.models.openai_chat`."""

from __future__ import annotations

from typing import Any

from memory_core.openai_codec import to_openai_messages, to_openai_tools

__all__ = ["to_openai_messages", "to_openai_tools"]  # and OpenAIChatModel, lazily


def __getattr__(name: str) -> Any:
    # the client moved to memory_core.models.openai_chat (on the openai SDK)
    if name == "OpenAIChatModel":
        from memory_core.models.openai_chat import OpenAIChatModel

        return OpenAIChatModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
