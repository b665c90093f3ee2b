"""Memories other than ``AgentMemory`` (SPEC §6.8): the Runner accepts any object that
offers ``get_messages(thread_id)`` (``MessagesMemory``), optionally
``get_working_memory(thread_id) -> str | None``.

Such a memory gives the history and nothing about how it chose it, so the prompt and its
provenance record are what the reference makes of it, and no more:

- the history as the memory gives it (the ``recent`` lane), then the input;
- ``recalled: []``, ``recent_count`` = the history's length, each reference's ``seq`` =
  its position in that history, previews from the structural preview (§6.3);
- the working memory appended to the system prompt as ``# Working Memory\\n<text>``
  (after a blank line when there are instructions — the separator is inferred);
- ``source = "messages-only"`` with ``unknown_fields`` naming what the record cannot
  know (whether the memory recalled anything, the messages' real seqs, scores, dropped
  items, observations, the memory's settings): the workbench shows those as unknown and
  says the memory gives no provenance record, never a value it made up.

The Runner writes nothing to such a memory (storing the turn is the memory's owner's
job); prompt items carry no thread or seq, since no stored message of ours stands
behind them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from memory_core.errors import InvalidInputError
from memory_core.provenance.prompt import FrozenPrompt, PromptItem
from memory_core.provenance.record import (
    PROVENANCE_RECENT_CAP,
    CompositionSettings,
    LaneTokens,
    Memctx,
    MessageRef,
)
from memory_core.text import structural_preview, structural_text
from memory_core.tokens import estimate_tokens
from memory_core.types import Message

WM_HEADING = "# Working Memory\n"
# what a messages-only memory cannot tell us (Memctx.is_unknown reads these)
UNKNOWN_FIELDS = ["recalled", "recent.seq", "dropped", "near_misses", "observations",
                  "settings", "scope_snapshot"]
NO_PROVENANCE = ("this memory gives no provenance record: it offers only its messages, "
                 "so whether it recalled anything, the messages' stored seqs (positions "
                 "are shown), scores, dropped items and its settings are unknown")


@runtime_checkable
class MessagesMemory(Protocol):
    """A memory that only gives a thread's history (SPEC §6.8)."""

    def get_messages(self, thread_id: str) -> Sequence[Message]: ...


def is_messages_memory(memory: object) -> bool:
    return callable(getattr(memory, "get_messages", None))


def _history(memory: MessagesMemory, thread_id: str) -> list[Message]:
    given = memory.get_messages(thread_id)
    if isinstance(given, (str, bytes)) or not isinstance(given, Sequence):
        raise InvalidInputError(f"{type(memory).__name__}.get_messages('{thread_id}') must "
                                f"return a list of messages, got {type(given).__name__}")
    out: list[Message] = []
    for i, m in enumerate(given):
        if isinstance(m, Message):
            out.append(m)
        elif isinstance(m, dict):
            try:
                out.append(Message.model_validate(m))
            except ValueError as e:
                raise InvalidInputError(f"{type(memory).__name__}.get_messages('{thread_id}')"
                                        f"[{i}] is not a valid message: {e}") from e
        else:
            raise InvalidInputError(f"{type(memory).__name__}.get_messages('{thread_id}')"
                                    f"[{i}] must be a Message or a dict, got "
                                    f"{type(m).__name__}")
    return out


def _working_memory(memory: object, thread_id: str) -> str | None:
    getter = getattr(memory, "get_working_memory", None)
    if not callable(getter):
        return None
    text = getter(thread_id)
    if text is not None and not isinstance(text, str):
        raise InvalidInputError(f"{type(memory).__name__}.get_working_memory('{thread_id}') "
                                f"must return a string or None, got {type(text).__name__}")
    return text or None


def echo_trim(history: Sequence[Message], given: Sequence[Message]) -> list[Message]:
    """SPEC §6.6.2: with a history, only what follows the input's last assistant or tool
    message is new."""
    if not history:
        return list(given)
    last = max((i for i, m in enumerate(given) if m.role in ("assistant", "tool")), default=-1)
    return list(given[last + 1:])


def compose_from_messages(memory: MessagesMemory, *, thread_id: str,
                          resource_id: str | None, incoming: Sequence[Message],
                          instructions: str,
                          count: Callable[[Message], int] | None = None,
                          ) -> tuple[FrozenPrompt, Memctx, list[Message]]:
    """The prompt, its provenance record and the input after echo-trim, for a memory
    that only offers ``get_messages`` (see the module docstring)."""
    counted: Callable[[Message], int] = count or (
        lambda m: estimate_tokens(structural_text(m)))
    history = _history(memory, thread_id)
    wm = _working_memory(memory, thread_id)
    block = f"{WM_HEADING}{wm}" if wm is not None else ""
    system = "\n\n".join(p for p in (instructions, block) if p)
    fresh = echo_trim(history, incoming)
    items = [PromptItem(lane="instructions", message=Message(role="system", content=system))]
    items += [PromptItem(lane="recent", message=m) for m in history]
    items += [PromptItem(lane="input", message=m) for m in fresh]
    refs = [MessageRef(thread_id=thread_id, seq=i, role=m.role,
                       preview=structural_preview(m), lane="recent")
            for i, m in enumerate(history)][-PROVENANCE_RECENT_CAP:]
    memctx = Memctx(
        # no query: whatever the memory searched with (if it did) is not ours to say
        thread_id=thread_id, resource_id=resource_id, query=None, recalled=[],
        recent_count=len(history), recent=refs, working_memory_chars=len(block),
        tokens=LaneTokens(instructions=counted(items[0].message),
                          recent=sum(counted(m) for m in history),
                          input=sum(counted(m) for m in fresh)),
        settings=CompositionSettings(recent_n=len(history), recall_enabled=False),
        incoming_count=len(fresh), echo_trimmed=len(incoming) - len(fresh),
        source="messages-only", unknown_fields=list(UNKNOWN_FIELDS))
    return FrozenPrompt(items=items), memctx, fresh
