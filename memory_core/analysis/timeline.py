"""Composition timeline of one thread: tokens per lane in every run's prompt, in run
order, with the runs where observational memory compacted older messages marked."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from memory_core.errors import InvalidInputError, NotFoundError
from memory_core.journal import RunReader
from memory_core.provenance.record import LANES
from memory_core.storage.base import Storage


class TimelinePoint(BaseModel):
    """One run of the thread as the timeline plots it."""

    model_config = ConfigDict(extra="forbid")
    index: int  # position among the plotted runs, 0-based
    run_id: str
    started_at: datetime
    status: str
    tokens: dict[str, int]  # lane -> tokens, every lane of LANES present
    total_tokens: int
    # None where the run's record cannot know it (an imported run: ``unknown_fields``)
    recalled_count: int | None
    recent_count: int
    dropped_count: int | None
    observation_count: int | None
    observation_ids: list[str] = Field(default_factory=list)
    # observations this run's prompt carried that the previous plotted run's did not
    new_observations: list[str] = Field(default_factory=list)
    compacted: bool = False  # observation_count rose against the previous plotted run
    source: str = "composed"  # or "imported": recent_count counts what the client sent
    unknown_fields: list[str] = Field(default_factory=list)


class Timeline(BaseModel):
    model_config = ConfigDict(extra="forbid")
    thread_id: str
    points: list[TimelinePoint] = Field(default_factory=list)
    # runs of the thread that have no provenance record (crashed before composing,
    # or recorded without memory): listed, never plotted as zero
    skipped: list[str] = Field(default_factory=list)

    @property
    def compactions(self) -> list[TimelinePoint]:
        return [p for p in self.points if p.compacted]

    @property
    def lanes(self) -> tuple[str, ...]:
        return LANES


def composition_timeline(storage: Storage, thread_id: str) -> Timeline:
    """Tokens per lane across ``thread_id``'s runs (oldest first) with compactions.

    Reads each run's ``<run_id>:memctx`` record only; NotFoundError names an unknown
    thread, InvalidInputError a malformed record."""
    if not isinstance(thread_id, str) or not thread_id:
        raise InvalidInputError(f"thread id must be a non-empty string, got {thread_id!r}")
    if storage.memory.get_thread(thread_id) is None:
        raise NotFoundError(f"thread '{thread_id}' does not exist")
    points: list[TimelinePoint] = []
    skipped: list[str] = []
    prev_count: int | None = None
    prev_ids: set[str] = set()
    for run in storage.runs.list_runs(thread_id=thread_id):
        memctx = RunReader(storage.runs, run.run_id).memctx()
        if memctx is None:
            skipped.append(run.run_id)
            continue
        tokens = {lane: int(getattr(memctx.tokens, lane)) for lane in LANES}
        ids = [o.id for o in memctx.observations]
        known_obs = not memctx.is_unknown("observations")
        count = memctx.observation_count
        points.append(TimelinePoint(
            index=len(points), run_id=run.run_id, started_at=run.started_at,
            status=run.status, tokens=tokens, total_tokens=sum(tokens.values()),
            recalled_count=None if memctx.is_unknown("recalled") else len(memctx.recalled),
            recent_count=memctx.recent_count,
            dropped_count=None if memctx.is_unknown("dropped") else memctx.dropped_count,
            observation_count=count if known_obs else None,
            observation_ids=ids,
            new_observations=[i for i in ids if i not in prev_ids] if prev_count is not None
            else list(ids),
            # the first run compacted only if it already carried observations; a run
            # whose record cannot know its observations never counts as a compaction
            compacted=known_obs and count > (prev_count if prev_count is not None else 0),
            source=memctx.source, unknown_fields=list(memctx.unknown_fields)))
        if known_obs:
            prev_count, prev_ids = count, set(ids)
    return Timeline(thread_id=thread_id, points=points, skipped=skipped)
