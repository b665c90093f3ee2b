"""Typed records shared by every layer: messages and their parts, threads,
observations, working-memory records, runs and erasure reports."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

Role = Literal["system", "user", "assistant", "tool"]
ROLES: tuple[str, ...] = ("system", "user", "assistant", "tool")


# An imported record with no timestamp gets one from this fixed origin plus its index in
# its file, so that importing the same file twice gives the same data
# (``importers.common.undated``).
UNDATED_ORIGIN = datetime(1970, 1, 1, tzinfo=UTC)


def is_undated(at: datetime) -> bool:
    """Whether ``at`` is such a placeholder (no recording is from 1970), not a time that
    was recorded."""
    return at.tzinfo is not None and UNDATED_ORIGIN <= at < UNDATED_ORIGIN + timedelta(
        days=365)

class TextPart(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    type: Literal["text"] = "text"
    text: str


class ToolCallPart(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    type: Literal["tool-call"] = "tool-call"
    id: str
    name: str
    args: Any = Field(default_factory=dict)


class ToolResultPart(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    type: Literal["tool-result"] = "tool-result"
    call_id: str
    name: str
    result: Any = None


Part = Annotated[TextPart | ToolCallPart | ToolResultPart, Field(discriminator="type")]


class Message(BaseModel):
    """A chat message: a role and either a string or a list of parts."""

    model_config = ConfigDict(extra="forbid")
    role: Role = "user"
    content: str | list[Part] = ""
    metadata: dict[str, Any] = Field(default_factory=dict)

    # -- derived views (SPEC §1.2) -------------------------------------------------
    def text(self) -> str | None:
        """The recallable text: a non-empty string, or the text parts joined by one
        space. Pure tool-call / tool-result messages have none."""
        if isinstance(self.content, str):
            return self.content or None
        joined = " ".join(p.text for p in self.content if isinstance(p, TextPart))
        return joined or None

    @property
    def parts(self) -> list[TextPart | ToolCallPart | ToolResultPart]:
        if isinstance(self.content, str):
            return [TextPart(text=self.content)] if self.content else []
        return list(self.content)

    def tool_calls(self) -> list[ToolCallPart]:
        if isinstance(self.content, str):  # (no part made: most messages are text)
            return []
        return [p for p in self.content if isinstance(p, ToolCallPart)]

    def tool_results(self) -> list[ToolResultPart]:
        if isinstance(self.content, str):
            return []
        return [p for p in self.content if isinstance(p, ToolResultPart)]

    def canonical_json(self) -> str:
        """A byte-stable JSON form (sorted keys, no spaces) used for hashing and replay."""
        return canonical_json(self.model_dump(mode="json"))


class StoredMessage(Message):
    """A message as the store holds it: its thread, its dense per-thread seq, when it
    was written and by which run."""

    thread_id: str
    resource_id: str | None = None
    seq: int
    created_at: datetime
    run_id: str | None = None

    def as_message(self) -> Message:
        return Message(role=self.role, content=self.content, metadata=self.metadata)

    @property
    def ref(self) -> tuple[str, int]:
        return (self.thread_id, self.seq)


class AppendRow(BaseModel):
    """One row of an append batch. Without ``seq`` the store assigns the next one;
    with it the write is idempotent (a repeated thread+seq is ignored)."""

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")
    message: Message
    seq: int | None = None
    created_at: datetime | None = None
    run_id: str | None = None
    embedding: np.ndarray | None = None

    @field_validator("embedding", mode="before")
    @classmethod
    def _as_float32(cls, v: Any) -> np.ndarray | None:
        if v is None:
            return None
        arr = np.asarray(v, dtype=np.float32)
        if arr.ndim != 1:
            raise ValueError(f"embedding must be a 1-d vector, got shape {arr.shape}")
        if not np.all(np.isfinite(arr)):
            raise ValueError("embedding contains NaN or infinity")
        return arr

    @field_validator("seq")
    @classmethod
    def _non_negative(cls, v: int | None) -> int | None:
        if v is not None and v < 0:
            raise ValueError(f"seq must be >= 0, got {v}")
        return v


class Thread(BaseModel):
    id: str
    resource_id: str | None = None
    title: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    parent_thread_id: str | None = None
    created_at: datetime
    updated_at: datetime


class Observation(BaseModel):
    """Text distilled from a thread's messages ``from_seq..to_seq`` (level 0, by the
    observer) or from other observations (level 1+, by the reflector)."""

    id: str
    thread_id: str
    from_seq: int | None = None
    to_seq: int | None = None
    level: int = 0
    text: str
    source_ids: list[str] = Field(default_factory=list)
    created_at: datetime
    condensed: bool = False


class WorkingMemoryRecord(BaseModel):
    key: str  # "thread:<id>" or "resource:<id>"
    value: Any
    updated_at: datetime


RunStatus = Literal["running", "completed", "failed"]


class RunRecord(BaseModel):
    run_id: str
    agent: str
    thread_id: str | None = None
    resource_id: str | None = None
    status: RunStatus = "running"
    started_at: datetime
    finished_at: datetime | None = None
    error: str | None = None


class ErasureReport(BaseModel):
    """What an erasure removed, counted per kind."""

    threads: list[str] = Field(default_factory=list)
    messages: int = 0
    embeddings: int = 0
    working_memory: list[str] = Field(default_factory=list)
    observations: int = 0
    journal_entries: int = 0
    runs: int = 0
    redacted_runs: list[str] = Field(default_factory=list)  # other runs' records rewritten
    answered_with: list[str] = Field(default_factory=list)  # threads whose stored answers
    # were given with the erased text (not rewritten: the operator decides)


class SubjectErasureReport(ErasureReport):
    """``erase_subject``'s report (SPEC §9.4: ``memoryThreads``, ``workingMemory``,
    ``unreachedThreads``): the counts of everything erased, plus which of the person's
    threads were erased from a memory store (the storage's or ``memory=``'s) and which
    the journal names but no store given holds (their messages were not erased)."""

    memory_threads: list[str] = Field(default_factory=list)
    unreached_threads: list[str] = Field(default_factory=list)


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace; raises on NaN/inf so what is
    recorded can always be read back byte-identically."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)


def is_finite_number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


_SLOT = "\ue000"  # (a private-use character: in no default of a record)


def json_slot(name: str) -> str:
    """A string value that ``JsonTemplate`` fills with JSON text (``name``: a-z, _, .)."""
    return f"{_SLOT}{name}{_SLOT}"


class JsonTemplate:
    """``canonical_json(value)`` cut at its slots (``json_slot`` values), to be filled
    with each slot's JSON text: the canonical JSON of a record whose other fields are
    fixed, written without an encoder's walk of the whole value each time."""

    def __init__(self, value: Any) -> None:
        text = canonical_json(value)
        cut = re.split(f'"{_SLOT}([a-z_.]+){_SLOT}"', text)
        self.pieces, self.names = cut[0::2], cut[1::2]
        if text.count(_SLOT) != 2 * len(self.names):
            raise ValueError("a fixed value of the template holds its slot marker")

    def fill(self, texts: Mapping[str, str]) -> str:
        """The JSON with each slot replaced by ``texts[name]`` (JSON text, unchecked)."""
        return "".join([p + texts[n] for p, n in zip(self.pieces, self.names, strict=False)]
                       + [self.pieces[-1]])
