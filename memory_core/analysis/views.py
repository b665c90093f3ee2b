"""Read models the workbench renders: thread summaries, paged messages with the runs
that used them, search hits and the lane-by-lane view of one run, all computed here:
pure functions over a Storage (no Streamlit, no SQL); the pages only display these."""

from __future__ import annotations

import heapq
import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memory_core.analysis.recorded import RecordedCall, recorded_call
from memory_core.errors import InvalidInputError, MemoryCoreError, NotFoundError
from memory_core.journal import OutputRecord, RunReader, RunStep, prefetched_readers
from memory_core.provenance.prompt import FrozenPrompt, PromptItem
from memory_core.provenance.record import (
    LANES,
    CompositionSettings,
    Memctx,
    MessageRef,
    ObservationRef,
)
from memory_core.storage.base import RunRow, Storage
from memory_core.storage.common import many_objects
from memory_core.text import PREVIEW_CHARS
from memory_core.tokens import estimate_tokens
from memory_core.types import (
    Message,
    RunRecord,
    StoredMessage,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)

# messages a Threads page shows (a page of the 5,000-run bench thread settled in ~2.2 s
# in Chromium at 20, in 3.1-4.1 s at 50)
DEFAULT_PAGE_SIZE = 20
MAX_RANGE_PAGES = 10  # a page extended to a linked range shows at most this many pages
VIEW_LANES: tuple[str, ...] = (*LANES, "dropped")


# -- message rendering ------------------------------------------------------------------
def _json_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def tool_call_text(part: ToolCallPart) -> str:
    return f"→ {part.name}({_json_text(part.args)})"


def tool_result_text(part: ToolResultPart) -> str:
    return f"{part.name} → {_json_text(part.result)}"


def render_text(message: Message) -> str:
    """The whole message as plain text, one part per line: text as is, a call as
    ``→ name(args)``, a result as ``name → result`` (never clipped, never HTML)."""
    lines: list[str] = []
    for p in message.parts:
        if isinstance(p, TextPart):
            lines.append(p.text)
        elif isinstance(p, ToolCallPart):
            lines.append(tool_call_text(p))
        else:
            lines.append(tool_result_text(p))
    return "\n".join(lines)


def run_answer(steps: Sequence[RunStep], output: OutputRecord | None) -> str | None:
    """A finished run's answer as every page shows it: its last model step's message,
    one part a line — the text, then each tool call it answered with as ``→ name(args)``
    (an imported request answered with a call, a run stopped at max steps), so an answer
    that is a call is never shown as none; the output's text when no step is recorded.
    None when the run recorded no output."""
    if output is None:
        return None
    return render_text(steps[-1].response.as_message()) if steps else output.text


# -- threads ----------------------------------------------------------------------------
class ThreadSummary(BaseModel):
    model_config = ConfigDict(frozen=True)
    thread_id: str
    resource_id: str | None
    title: str | None
    message_count: int
    run_count: int
    last_activity: datetime


class MessageView(BaseModel):
    model_config = ConfigDict(frozen=True)
    thread_id: str
    seq: int
    role: str
    text: str
    tool_calls: list[str] = Field(default_factory=list)
    tool_results: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime
    written_by_run: str | None = None
    used_by_runs: list[str] = Field(default_factory=list)


class MessagePage(BaseModel):
    model_config = ConfigDict(frozen=True)
    thread_id: str
    title: str | None
    resource_id: str | None
    total: int
    page: int  # 1-based
    page_size: int
    page_count: int
    messages: list[MessageView]


class SearchHit(BaseModel):
    model_config = ConfigDict(frozen=True)
    thread_id: str
    thread_title: str | None
    seq: int
    role: str
    text: str
    created_at: datetime
    page: int  # the page of the thread (at DEFAULT_PAGE_SIZE) that shows this message


# A run as the pages list it: its row as a plain, immutable tuple (``run_rows``), not a
# validated record: the pages read every run of a database, 434,780 of a million-message
# import, and a record each (a copy of it, before) cost seconds and ~1 KB a run.
RunSummary = RunRow


def list_resources(storage: Storage) -> list[str]:
    """Resource ids in ascending order."""
    return storage.memory.list_resources()


def thread_summaries(storage: Storage, resource: str | None) -> list[ThreadSummary]:
    """The threads of a resource (all threads when None), newest first: title, message
    count, how many runs the thread has and the time of its last message or run (of its
    last update when it has neither)."""
    # two reads whatever the number of threads, neither building a run record nor
    # reading a message body: a million-message import has 43,000 threads and 434,000
    # runs, and reading those whole took the Threads page 10-16 s
    out: list[ThreadSummary] = []
    with many_objects():  # tens of thousands of threads: records, then summaries
        runs = storage.runs.thread_runs()
        for t in storage.memory.thread_activity(resource):
            r = runs.get(t.thread_id)
            # the recorded time of its last message or run; the thread's own update
            # time only when it has neither (an import writes the thread when it runs,
            # while its messages and runs keep the times the file recorded)
            moments = [m for m in (t.last_message_at, r.last_at if r else None)
                       if m is not None]
            out.append(ThreadSummary(
                thread_id=t.thread_id, resource_id=t.resource_id, title=t.title,
                message_count=t.message_count, run_count=r.run_count if r else 0,
                last_activity=max(moments, default=t.updated_at)))
    return out


NO_RESOURCE_LABEL = "(no resource)"


def resource_groups(summaries: Sequence[ThreadSummary]) -> list[str | None]:
    """The groups the Threads page offers: each resource in ascending order, then
    ``None`` — threads that belong to no resource (imports, single-user agents) — when
    there are any."""
    named = sorted({t.resource_id for t in summaries if t.resource_id is not None})
    loose = any(t.resource_id is None for t in summaries)
    return [*named, *([None] if loose else [])]


def threads_in_group(summaries: Sequence[ThreadSummary],
                     group: str | None) -> list[ThreadSummary]:
    """The threads of one group (``None``: those with no resource), in listing order."""
    return [t for t in summaries if t.resource_id == group]


# the Threads page lists at most this many threads of a group (newest first): an
# imported log of a million messages holds tens of thousands, and a table of them all
# is sent to the browser on every script run (a megabyte per 4,000 threads)
THREADS_LISTED = 200


class ThreadListing(BaseModel):
    """What the Threads page lists of a group: ``listed`` (newest first, at most
    ``THREADS_LISTED``) out of ``matched`` threads that hold the search text, out of
    ``total``."""

    model_config = ConfigDict(frozen=True)
    listed: list[ThreadSummary]
    matched: int
    total: int


def thread_finder(text: str) -> Callable[[str, str | None], bool]:
    """Whether a thread (its id and title) holds ``text``: case-insensitive, in its id or
    title; every thread does for empty text. What every "Find a thread" box narrows by."""
    needle = text.strip().casefold()
    if not needle:
        return lambda _thread_id, _title: True
    return lambda thread_id, title: needle in f"{thread_id} {title or ''}".casefold()


def list_threads_of(summaries: Sequence[ThreadSummary], text: str,
                    limit: int | None = None) -> ThreadListing:
    """The threads whose id or title holds ``text`` (``thread_finder``), the first
    ``limit`` (``THREADS_LISTED``) of them in listing order."""
    limit = THREADS_LISTED if limit is None else limit
    holds = thread_finder(text)
    matched = [t for t in summaries if holds(t.thread_id, t.title)]
    return ThreadListing(listed=matched[:limit], matched=len(matched),
                         total=len(summaries))


# -- the thread pickers of the run pages: like the Threads page, the newest THREADS_LISTED
# threads with runs, found by id or title, and the thread the page opens on
NO_THREAD = "(no thread)"  # the runs on no thread, offered as one thread


def threads_with_runs(runs: Runs, *, unthreaded: bool = True) -> Mapping[str, int]:
    """Every thread a run is on, with the position in ``runs`` of its newest run (a
    larger position is a newer run: ``Runs.newest``); the runs on no thread under
    ``NO_THREAD``, or left out when not ``unthreaded``."""
    if unthreaded or NO_THREAD not in runs.newest:
        return runs.newest
    return {k: v for k, v in runs.newest.items() if k != NO_THREAD}


class OfferedThreads(BaseModel):
    """What a run page's thread picker offers (``offered_threads``): ``offered``, in
    ascending order, out of ``matched`` threads with runs that hold the find text, out of
    ``total`` threads with runs; ``listed`` of them are the newest matched ones (the
    rest of ``offered`` are threads kept whatever the text)."""

    model_config = ConfigDict(frozen=True)
    offered: list[str]
    listed: int
    matched: int
    total: int


def offered_threads(threads: Mapping[str, int], titles: Mapping[str, str | None],
                    text: str, *, keep: Sequence[str | None] = (),
                    limit: int | None = None, newest_first: bool = False) -> OfferedThreads:
    """The threads a run page's picker offers out of ``threads`` (``threads_with_runs``:
    each with its rank, larger = newer): the newest ``limit`` (``THREADS_LISTED``) whose
    id or title (``titles``) holds ``text`` (``thread_finder``, as the Threads page
    finds), and the threads of ``keep`` that have runs (the one the page opens on)
    whatever the text; in ascending order, as the run pickers always listed them, or by
    rank with ``newest_first``. A picker of every thread is sent whole on every script
    run (43,478 threads: ~1 MB)."""
    limit = THREADS_LISTED if limit is None else limit
    holds = thread_finder(text)
    matched = ([k for k in threads if holds(k, titles.get(k))] if text.strip()
               else list(threads))
    listed = heapq.nlargest(limit, matched, key=threads.__getitem__)
    kept = [k for k in keep if k is not None and k in threads]
    offered = {*listed, *kept}
    return OfferedThreads(
        offered=sorted(offered, key=lambda k: -threads[k]) if newest_first else sorted(offered),
        listed=len(listed), matched=len(matched), total=len(threads))


def group_label(group: str | None) -> str:
    return NO_RESOURCE_LABEL if group is None else group


def _candidate_runs(storage: Storage, thread_id: str, resource_id: str | None) -> list[RunRecord]:
    # recall in resource scope can put a message in the prompt of a run on a sibling thread
    runs = {r.run_id: r for r in storage.runs.list_runs(thread_id=thread_id)}
    if resource_id is not None:
        for r in storage.runs.list_runs(resource_id=resource_id):
            runs.setdefault(r.run_id, r)
    return sorted(runs.values(), key=lambda r: (r.started_at, r.run_id))


def message_usage(storage: Storage, thread_id: str) -> dict[int, list[str]]:
    """seq → the runs whose prompt contained that message of the thread (through the
    recalled or recent lanes), from each run's frozen prompt and memctx refs."""
    thread = storage.memory.require_thread(thread_id)
    usage: dict[int, list[str]] = {}
    runs = _candidate_runs(storage, thread_id, thread.resource_id)
    # every run's prompt and memctx in one query (hundreds of runs share a resource)
    readers = prefetched_readers(storage.runs, [r.run_id for r in runs],
                                 ("prompt", "memctx"))
    for run in runs:
        seqs: set[int] = set()
        prompt = readers[run.run_id].prompt()
        if prompt is not None:
            seqs.update(i.seq for i in prompt.items
                        if i.thread_id == thread_id and i.seq is not None)
        memctx = readers[run.run_id].memctx()
        if memctx is not None:
            seqs.update(r.seq for r in (*memctx.recalled, *memctx.recent)
                        if r.thread_id == thread_id)
        for s in seqs:
            usage.setdefault(s, []).append(run.run_id)
    return usage


def page_of_seq(seq: int, page_size: int = DEFAULT_PAGE_SIZE) -> int:
    """The 1-based page that shows the message at seq (seqs are dense from 0)."""
    return seq // page_size + 1


def thread_messages(storage: Storage, thread_id: str, page: int = 1,
                    page_size: int = DEFAULT_PAGE_SIZE, *,
                    through_seq: int | None = None) -> MessagePage:
    """One page of the thread's messages in seq order, each with its rendered text,
    tool calls and results, metadata and the runs that used it. ``through_seq``: the
    page goes on to that seq when it lies further (a linked range — a summary's source
    — is shown whole), at most MAX_RANGE_PAGES pages in all."""
    if page_size < 1:
        raise InvalidInputError(f"page_size must be >= 1, got {page_size}")
    if page < 1:
        raise InvalidInputError(f"page must be >= 1, got {page}")
    thread = storage.memory.require_thread(thread_id)
    total = storage.memory.count_messages(thread_id)
    max_seq = storage.memory.max_seq(thread_id)
    page_count = max(1, math.ceil((max_seq + 1) / page_size))
    if page > page_count:
        raise InvalidInputError(
            f"page {page} is past the last page ({page_count}) of thread '{thread_id}'")
    lo = (page - 1) * page_size
    hi = lo + page_size - 1
    if through_seq is not None and through_seq > hi:
        hi = min(through_seq, lo + MAX_RANGE_PAGES * page_size - 1)
    rows = storage.memory.get_messages(thread_id, from_seq=lo, to_seq=hi)
    usage = message_usage(storage, thread_id) if rows else {}
    return MessagePage(
        thread_id=thread_id, title=thread.title, resource_id=thread.resource_id, total=total,
        page=page, page_size=page_size, page_count=page_count,
        messages=[_message_view(m, usage.get(m.seq, [])) for m in rows])


def _message_view(m: StoredMessage, used_by: list[str]) -> MessageView:
    return MessageView(
        thread_id=m.thread_id, seq=m.seq, role=m.role, text=render_text(m),
        tool_calls=[tool_call_text(p) for p in m.tool_calls()],
        tool_results=[tool_result_text(p) for p in m.tool_results()],
        metadata=m.metadata, created_at=m.created_at, written_by_run=m.run_id,
        used_by_runs=list(used_by))


def search(storage: Storage, resource: str | None, text: str, *,
           limit: int = 100) -> list[SearchHit]:
    """Case-insensitive substring search over message text within a resource."""
    needle = text.strip()
    if not needle:
        return []
    titles: dict[str, str | None] = {}
    hits: list[SearchHit] = []
    for m in storage.memory.search_messages(needle, resource_id=resource, limit=limit):
        if m.thread_id not in titles:
            t = storage.memory.get_thread(m.thread_id)
            titles[m.thread_id] = t.title if t else None
        hits.append(SearchHit(thread_id=m.thread_id, thread_title=titles[m.thread_id],
                              seq=m.seq, role=m.role, text=render_text(m),
                              created_at=m.created_at, page=page_of_seq(m.seq)))
    return hits


def list_runs(storage: Storage, *, thread_id: str | None = None) -> list[RunSummary]:
    """Runs (of one thread, or all), oldest first."""
    return storage.runs.run_rows(thread_id=thread_id)


class Runs(Sequence[RunSummary]):
    """Runs oldest first, as ``list_runs`` gives them, with what the run pages look up in
    them on every script run found once: a run by id, the runs of a thread
    (``thread_key``). On an imported log of a million messages (434,780 runs) each such
    look-up was a pass over every run, several a script run (0.2-0.6 s of a warm one);
    the workbench builds this once per version of the database and shares it."""

    __slots__ = ("_runs", "_at", "_of_thread", "newest")

    def __init__(self, runs: Sequence[RunSummary]) -> None:
        self._runs = tuple(runs)
        self._at = {r.run_id: i for i, r in enumerate(self._runs)}
        of_thread: dict[str, list[int]] = {}
        for i, r in enumerate(self._runs):
            of_thread.setdefault(thread_key(r), []).append(i)
        self._of_thread = of_thread
        #: each thread (``thread_key``) with the position of its newest run
        self.newest: Mapping[str, int] = {t: at[-1] for t, at in of_thread.items()}

    def __len__(self) -> int:
        return len(self._runs)

    def __getitem__(self, i: Any) -> Any:
        return Runs(self._runs[i]) if isinstance(i, slice) else self._runs[i]

    def __iter__(self) -> Iterator[RunSummary]:
        return iter(self._runs)

    def __reversed__(self) -> Iterator[RunSummary]:
        return reversed(self._runs)

    def position(self, run_id: str | None) -> int | None:
        """Where ``run_id`` is (None: not here)."""
        return None if run_id is None else self._at.get(run_id)

    def get(self, run_id: str | None) -> RunSummary | None:
        i = self.position(run_id)
        return None if i is None else self._runs[i]

    def positions(self, thread: str) -> list[int]:
        """Where the runs of ``thread`` (a ``thread_key``) are, oldest first."""
        return self._of_thread.get(thread, [])

    def on_thread(self, thread: str) -> list[RunSummary]:
        """The runs of ``thread`` (a ``thread_key``: ``NO_THREAD`` for those on none)."""
        return [self._runs[i] for i in self.positions(thread)]

    def previous(self, run_id: str) -> str | None:
        """The run before ``run_id`` on its thread; None when it is the thread's first,
        is on no thread, or is not here."""
        run = self.get(run_id)
        if run is None or not run.thread_id:
            return None
        at = self.positions(thread_key(run))
        k = at.index(self._at[run_id])
        return self._runs[at[k - 1]].run_id if k > 0 else None


# -- one run ----------------------------------------------------------------------------
class ObservationSource(BaseModel):
    model_config = ConfigDict(frozen=True)
    observation_id: str
    thread_id: str
    level: int
    from_seq: int | None
    to_seq: int | None


class LaneItem(BaseModel):
    model_config = ConfigDict(frozen=True)
    lane: str
    role: str
    text: str
    thread_id: str | None = None
    seq: int | None = None
    observation_id: str | None = None
    sources: list[ObservationSource] = Field(default_factory=list)
    score: float | None = None
    rank: int | None = None
    origin: str | None = None
    reason: str | None = None
    tokens: int = 0


class LaneView(BaseModel):
    model_config = ConfigDict(frozen=True)
    lane: str
    items: list[LaneItem]
    tokens: int
    total_count: int  # for dropped: the uncapped count from memctx


class ScoreCandidate(BaseModel):
    """One point of the score chart: a recall hit or a near miss."""

    model_config = ConfigDict(frozen=True)
    thread_id: str
    seq: int
    rank: int
    score: float
    status: Literal["hit", "below-threshold", "beyond-top-k", "filtered-out",
                    "already-in-window", "duplicate-of-query", "dropped"]
    preview: str
    filter_clause: str | None = None
    reason: str | None = None  # "dropped": why composition left the hit out


# why composition left a stored message out of the prompt (``MessageRef.reason``), in words
DROP_REASON_WORDS: dict[str, str] = {
    "unanswered-tool-call": "a tool call without its result",
    "orphan-tool-result": "a tool result without its call",
    "duplicate-tool-call-id": "its tool call id was already in the prompt",
    "token-limit": "trimmed by the token limiter",
    "tool-call-filter": "removed by the tool-call filter",
}


def drop_reason_text(reason: str | None) -> str:
    """A dropped row's reason in words (the code itself when it is not one we know)."""
    return DROP_REASON_WORDS.get(reason or "", reason or "no reason recorded")


class StepView(BaseModel):
    model_config = ConfigDict(frozen=True)
    n: int
    text: str | None
    tool_calls: list[str]
    model: dict[str, Any]
    input_tokens: int
    output_tokens: int
    finish_reason: str | None
    usage_known: bool = True  # False: an imported step whose recording had no usage


class ToolCallView(BaseModel):
    model_config = ConfigDict(frozen=True)
    call_id: str
    name: str
    args: str
    status: str
    result: str
    error: str | None


class RunView(BaseModel):
    model_config = ConfigDict(frozen=True)
    run: RunRecord
    error: str | None
    query: str | None
    lanes: list[LaneView]
    settings: dict[str, Any]
    threshold: float | None
    top_k: int | None
    candidates: list[ScoreCandidate]
    recall_skipped: str | None
    steps: list[StepView]
    tool_calls: list[ToolCallView]
    answer: str | None
    notes: list[str]
    recorded: RecordedCall | None = None  # an imported run: what its recording says

    def ranked(self) -> list[ScoreCandidate]:
        """Every recall candidate in rank order: ``candidates`` plus the hits that
        composition then dropped (status "dropped", with the reason), so a chart of
        them starts at rank 1."""
        dropped = [ScoreCandidate(thread_id=i.thread_id, seq=i.seq, rank=i.rank,
                                  score=i.score, status="dropped",
                                  preview=" ".join(i.text.split())[:PREVIEW_CHARS],
                                  reason=i.reason)
                   for i in self.lane("dropped").items
                   if i.thread_id is not None and i.seq is not None and i.rank is not None
                   and i.score is not None and i.origin in (None, "hit")]
        return sorted([*self.candidates, *dropped],
                      key=lambda c: (c.rank, -c.score, c.thread_id, c.seq))

    def lane(self, name: str) -> LaneView:
        for lv in self.lanes:
            if lv.lane == name:
                return lv
        raise NotFoundError(f"lane '{name}' does not exist; lanes are {list(VIEW_LANES)}")

    @property
    def total_tokens(self) -> int:
        return sum(lv.tokens for lv in self.lanes if lv.lane != "dropped")


def _ref_key(thread_id: str | None, seq: int | None) -> tuple[str, int] | None:
    return None if thread_id is None or seq is None else (thread_id, seq)


def _lane_items(storage: Storage, prompt: FrozenPrompt | None,
                memctx: Memctx | None) -> dict[str, list[LaneItem]]:
    recalled_refs: dict[tuple[str, int], MessageRef] = {}
    obs_refs: dict[str, ObservationRef] = {}
    if memctx is not None:
        recalled_refs = {(r.thread_id, r.seq): r for r in memctx.recalled}
        obs_refs = {o.id: o for o in memctx.observations}
    lanes: dict[str, list[LaneItem]] = {lane: [] for lane in VIEW_LANES}
    for item in (prompt.items if prompt is not None else []):
        lanes[item.lane].append(_lane_item(item, recalled_refs, obs_refs, memctx))
    if memctx is not None:
        lanes["dropped"] = _dropped_items(storage, memctx.dropped)
    return lanes


def _lane_item(item: PromptItem, recalled_refs: dict[tuple[str, int], MessageRef],
               obs_refs: dict[str, ObservationRef], memctx: Memctx | None) -> LaneItem:
    text = render_text(item.message)
    ref = None
    key = _ref_key(item.thread_id, item.seq)
    if key is not None:
        ref = recalled_refs.get(key) if item.lane == "recalled" else None
    sources: list[ObservationSource] = []
    if item.lane == "observations" and memctx is not None:
        # one observations message may carry several observations; without an id on the
        # item it stands for all of them
        picked = ([obs_refs[item.observation_id]] if item.observation_id in obs_refs
                  else list(memctx.observations))
        sources = [ObservationSource(observation_id=o.id, thread_id=o.thread_id,
                                     level=o.level, from_seq=o.from_seq, to_seq=o.to_seq)
                   for o in picked]
    return LaneItem(
        lane=item.lane, role=item.message.role, text=text, thread_id=item.thread_id,
        seq=item.seq, observation_id=item.observation_id, sources=sources,
        score=ref.score if ref else None, rank=ref.rank if ref else None,
        origin=item.origin or (ref.origin if ref else None),
        tokens=estimate_tokens(text))


def _dropped_items(storage: Storage, refs: list[MessageRef]) -> list[LaneItem]:
    full: dict[tuple[str, int], StoredMessage] = {}
    by_thread: dict[str, list[int]] = {}
    for r in refs:
        by_thread.setdefault(r.thread_id, []).append(r.seq)
    for tid, seqs in by_thread.items():
        for m in storage.memory.get_messages(tid, seqs=seqs):
            full[(m.thread_id, m.seq)] = m
    out: list[LaneItem] = []
    for r in refs:
        stored = full.get((r.thread_id, r.seq))
        # the message may have been erased since; the preview is what provenance kept
        text = render_text(stored) if stored is not None else r.preview
        out.append(LaneItem(lane="dropped", role=r.role, text=text, thread_id=r.thread_id,
                            seq=r.seq, reason=r.reason, score=r.score, rank=r.rank,
                            origin=r.origin, tokens=estimate_tokens(text)))
    return out


def _lane_tokens(lane: str, items: list[LaneItem], memctx: Memctx | None) -> int:
    if memctx is not None and lane != "dropped":
        return int(getattr(memctx.tokens, lane))
    return sum(i.tokens for i in items)


def _candidates(memctx: Memctx | None) -> list[ScoreCandidate]:
    if memctx is None:
        return []
    out: list[ScoreCandidate] = []
    for r in memctx.recalled:
        if r.origin in (None, "hit") and r.score is not None and r.rank is not None:
            out.append(ScoreCandidate(thread_id=r.thread_id, seq=r.seq, rank=r.rank,
                                      score=r.score, status="hit", preview=r.preview))
    for nm in memctx.near_misses:
        out.append(ScoreCandidate(thread_id=nm.thread_id, seq=nm.seq, rank=nm.rank,
                                  score=nm.score, status=nm.reason, preview=nm.preview,
                                  filter_clause=nm.filter_clause))
    # within a rank (filtered-out rows share the would-be rank of where they would have
    # gone), the higher score first: the order recall ranked them in
    return sorted(out, key=lambda c: (c.rank, -c.score, c.thread_id, c.seq))


def _steps(steps: Sequence[RunStep]) -> list[StepView]:
    out: list[StepView] = []
    for step in steps:
        resp = step.response
        # the answer's text parts one a line, as stored (``resp.text`` joins a recorded
        # answer of several parts with spaces)
        texts = [p.text for p in resp.as_message().parts if isinstance(p, TextPart)]
        out.append(StepView(n=step.index, text="\n".join(texts) if texts else resp.text,
                            tool_calls=[tool_call_text(c) for c in resp.tool_calls],
                            model=step.model.model_dump(mode="json"),
                            input_tokens=resp.usage.input_tokens,
                            output_tokens=resp.usage.output_tokens,
                            finish_reason=resp.finish_reason, usage_known=step.record.usage_known))
    return out


def _tool_calls(reader: RunReader) -> list[ToolCallView]:
    return [ToolCallView(call_id=call_id, name=t.name, args=_json_text(t.args or {}),
                         status=t.status, result=_json_text(t.result), error=t.error)
            for call_id, t in reader.tools().items()]


UNKNOWN_SETTING = "unknown (not in the record)"


def _known_settings(memctx: Memctx | None) -> dict[str, Any]:
    """The run's settings as the Settings table shows them: a setting the record could
    not know (``unknown_fields``) reads ``UNKNOWN_SETTING``, never a placeholder value;
    an imported run's ``embedder`` is kept (it embedded its messages in this database)."""
    if memctx is None:
        return {}
    flat = memctx.settings.flat()
    return {k: v if not memctx.is_unknown_setting(k)
            or (k == "embedder" and memctx.imported) else UNKNOWN_SETTING
            for k, v in flat.items()}


def _truncated(storage: Storage, run_id: str) -> list[tuple[str, int]]:
    """The stored messages of the run a truncation removed (SPEC §2.7), from its seal."""
    from memory_core.journal.seal import read_seal

    try:
        seal = read_seal(storage, run_id)
    except (MemoryCoreError, ValueError):
        return []  # a damaged seal is the badge's to report
    return list(seal.truncated) if seal is not None else []


def _imported_note(reader: RunReader, shown: int) -> str:
    """What an imported run's prompt is: what the client sent, or — for a Responses API
    request that sent ``previous_response_id`` instead of its history — which of the
    prompt's messages the server held and were reconstructed from an earlier record
    (importing.md, "history held server-side")."""
    head = "imported run: this recording does not say whether memory recalled anything; "
    record = reader.import_record()
    held = record.held_history() if record is not None else None
    if held is None:
        return head + f"the client sent these {shown} messages"
    unrecorded = (f"; the history before {held['unrecorded']} is not in the recording"
                  if held.get("unrecorded") else "")
    span = held.get("prompt_messages") or [0, 0]
    if not held.get("reconstructed_from") or span[1] <= span[0]:
        return (head + f"the client sent these {shown} messages and referred to the rest "
                f"of the conversation by {held['reference']}, held by the server"
                + unrecorded)
    lo, hi = int(span[0]), int(span[1])
    return (head + f"the client sent {shown - (hi - lo)} of these {shown} messages; "
            f"messages {lo + 1}–{hi} were held by the server ({held['reference']}) and "
            f"are reconstructed from {held['reconstructed_from']} of the recording"
            + unrecorded)


def run_view(storage: Storage, run_id: str) -> RunView:
    """Everything the run inspector shows about one run, from its journal."""
    run = storage.runs.require_run(run_id)
    reader = RunReader(storage.runs, run_id)
    prompt, memctx = reader.prompt(), reader.memctx()
    notes: list[str] = []
    if prompt is None:
        notes.append(f"run '{run_id}' has no frozen prompt in the journal "
                     f"(status {run.status}): it never reached composition")
    if memctx is None:
        notes.append(f"run '{run_id}' has no provenance record ('{reader.keys.memctx}'): "
                     "scores, dropped items and near misses are unknown")
    elif memctx.imported:
        notes.append(_imported_note(reader, len(prompt.items) if prompt is not None else 0))
    elif memctx.messages_only:
        from memory_core.composition.other_memory import NO_PROVENANCE

        notes.append(NO_PROVENANCE)
    gone = _truncated(storage, run_id)
    if gone:
        notes.append(f"{len(gone)} message(s) this run stored were removed since by a "
                     f"truncation of the thread (seq {', '.join(str(q) for _, q in gone)}); "
                     "its records are kept and still verify")
    if memctx is not None and memctx.unknown_fields:
        notes.append("not in the record (shown as unknown): "
                     + ", ".join(memctx.unknown_fields))
    items = _lane_items(storage, prompt, memctx)
    lanes = [LaneView(lane=lane, items=items[lane], tokens=_lane_tokens(lane, items[lane], memctx),
                      total_count=(memctx.dropped_count if lane == "dropped" and memctx
                                   else len(items[lane])))
             for lane in VIEW_LANES]
    settings: CompositionSettings | None = memctx.settings if memctx else None
    steps = reader.steps()
    return RunView(
        run=run, error=run.error, query=memctx.query if memctx else None,
        lanes=lanes, settings=_known_settings(memctx),
        threshold=(settings.recall.threshold if settings and settings.recall
                   and memctx and not memctx.is_unknown_setting("threshold") else None),
        top_k=(settings.recall.top_k if settings and settings.recall
               and memctx and not memctx.is_unknown_setting("top_k") else None),
        candidates=_candidates(memctx), recall_skipped=memctx.recall_skipped if memctx else None,
        steps=_steps(steps), tool_calls=_tool_calls(reader), notes=notes,
        answer=run_answer(steps, reader.output()),
        recorded=recorded_call(reader.import_record(), memctx, steps, run.agent))


# -- choosing two runs to compare -------------------------------------------------------


class RunPairChoice(BaseModel):
    """The runs offered for a comparison on one thread and the pair picked by default."""

    model_config = ConfigDict(frozen=True)
    options: list[str]  # the thread's runs first (oldest → newest), then every other run
    default_a: str
    default_b: str


def thread_key(run: RunSummary) -> str:
    return run.thread_id or NO_THREAD


def comparison_thread(runs: Runs, wanted: list[str | None]) -> str | None:
    """The thread a comparison opens on: that of a run asked for (``wanted``, in order of
    preference), else that of the most recent run with a predecessor on its thread."""
    for rid in wanted:
        run = runs.get(rid)
        if run is not None:
            return thread_key(run)
    return next((thread_key(r) for r in reversed(runs)
                 if len(runs.positions(thread_key(r))) >= 2), None)


def run_search(runs: Sequence[RunSummary], text: str) -> list[str]:
    """Ids of the runs whose id or thread id holds ``text`` (case-insensitive), newest
    first; none for empty text."""
    needle = text.strip().casefold()
    if not needle:
        return []
    return [r.run_id for r in reversed(runs)
            if needle in f"{r.run_id} {thread_key(r)}".casefold()]


def offered_runs(runs: Runs, thread: str, also: Sequence[str | None]) -> list[RunSummary]:
    """What a run picker offers: the runs of ``thread``, plus the runs named in ``also``
    (asked for by the URL, found by a search) wherever they are, in the runs' order; and
    when that is fewer than two, the runs next to the thread's last one, so a pair can
    always be made. A picker of every run is sent whole on every script run (5,000 runs
    are ~300 KB a picker)."""
    named = [i for i in map(runs.position, also) if i is not None]
    index = sorted({*runs.positions(thread), *named})
    if len(index) < 2 and len(runs) >= 2:
        last = index[-1] if index else len(runs) - 1
        index = sorted({*index, last, last - 1 if last > 0 else last + 1})
    return [runs[i] for i in index]


def comparison_pair(runs: list[RunSummary], thread: str, *, wanted_a: str | None = None,
                    wanted_b: str | None = None) -> RunPairChoice:
    """Defaults to the two most recent consecutive runs of ``thread``; runs asked for
    (``wanted_a``/``wanted_b``) win when they exist. Needs at least two runs."""
    if len(runs) < 2:
        raise InvalidInputError(f"comparing needs at least two runs, got {len(runs)}")
    on_thread = [r.run_id for r in runs if thread_key(r) == thread]
    options = on_thread + [r.run_id for r in runs if r.run_id not in on_thread]
    b = on_thread[-1] if on_thread else options[-1]
    a = on_thread[-2] if len(on_thread) >= 2 else options[max(0, options.index(b) - 1)]
    if a == b:
        a = next(o for o in options if o != b)
    return RunPairChoice(options=options,
                         default_a=wanted_a if wanted_a in options else a,
                         default_b=wanted_b if wanted_b in options else b)
