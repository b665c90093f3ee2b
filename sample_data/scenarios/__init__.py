"""Hand-written demo scenarios: the conversations, the memory settings each one runs
under, and the questions whose answers show memory at work (and failing)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memory_core.types import Role


@dataclass(frozen=True)
class Turn:
    """One user turn. With ``reply`` the turn is history, played back by a scripted
    agent (``tool`` = a call it makes first: (name, args)); without it the offline
    reader model answers from whatever memory put in the prompt."""

    user: str
    reply: str | None = None
    tool: tuple[str, dict[str, Any]] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    run_id: str | None = None  # a stable, readable id for runs the story points at
    memory: str | None = None  # name of an alternative memory profile for this run
    note: str | None = None  # what this run shows, for the demo story


@dataclass(frozen=True)
class Legacy:
    """A message stored outside any run (an import from an older system), e.g. a
    tool call whose result was lost."""

    role: Role
    text: str
    tool_call: tuple[str, str, dict[str, Any]] | None = None  # (id, name, args)


@dataclass(frozen=True)
class ThreadScript:
    thread_id: str
    title: str
    turns: list[Turn | Legacy]


@dataclass(frozen=True)
class Scenario:
    key: str
    resource_id: str
    title: str
    summary: str
    agent: str
    instructions: str
    threads: list[ThreadScript]
    memory: dict[str, Any]  # the default memory profile
    profiles: dict[str, dict[str, Any]] = field(default_factory=dict)
    tools: list[str] = field(default_factory=list)
