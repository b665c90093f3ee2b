"""Read models the workbench renders: thread summaries, paged messages with the runs
that used them, search hits and the lane-by-lane view of one run, all computed here:
pure functions over a Storage (no Streamlit, no SQL); the pages only display these."""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from memory_core.analysis.rendering import DEFAULT_PAGE_SIZE as DEFAULT_PAGE_SIZE
from memory_core.analysis.rendering import MAX_RANGE_PAGES as MAX_RANGE_PAGES
from memory_core.analysis.rendering import VIEW_LANES as VIEW_LANES
from memory_core.analysis.rendering import render_text as render_text
from memory_core.analysis.rendering import run_answer as run_answer
from memory_core.analysis.rendering import tool_call_text as tool_call_text
from memory_core.analysis.rendering import tool_result_text as tool_result_text
from memory_core.analysis.run_view import DROP_REASON_WORDS as DROP_REASON_WORDS
from memory_core.analysis.run_view import UNKNOWN_SETTING as UNKNOWN_SETTING
from memory_core.analysis.run_view import LaneItem as LaneItem
from memory_core.analysis.run_view import LaneView as LaneView
from memory_core.analysis.run_view import ObservationSource as ObservationSource
from memory_core.analysis.run_view import RunView as RunView
from memory_core.analysis.run_view import ScoreCandidate as ScoreCandidate
from memory_core.analysis.run_view import StepView as StepView
from memory_core.analysis.run_view import ToolCallView as ToolCallView
from memory_core.analysis.run_view import drop_reason_text as drop_reason_text
from memory_core.analysis.run_view import run_view as run_view
from memory_core.analysis.run_view import speaker_name as speaker_name
from memory_core.errors import InvalidInputError
from memory_core.journal import prefetched_readers
from memory_core.storage.base import RunRow, Storage
from memory_core.storage.common import many_objects
from memory_core.types import (
    Message,
    RunRecord,
    StoredMessage,
)


# -- threads ----------------------------------------------------------------------------
class ThreadSummary(BaseModel):
    model_config = ConfigDict(frozen=True)
    thread_id: str
    resource_id: str | None
    title: str | None
    message_count: int
    run_count: int
    last_activity: datetime
    parent_thread_id: str | None = None  # the thread it was cloned or branched from


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
    parent_thread_id: str | None = None  # the thread it was cloned or branched from


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
                last_activity=max(moments, default=t.updated_at),
                parent_thread_id=t.parent_thread_id))
    # newest first by the time shown: an import writes its threads when it runs, so the
    # store's order (by update) put a thread of February above one of April
    out.sort(key=lambda s: s.last_activity, reverse=True)
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
        messages=[_message_view(m, usage.get(m.seq, [])) for m in rows],
        parent_thread_id=thread.parent_thread_id)


def _message_view(m: StoredMessage, used_by: list[str]) -> MessageView:
    return MessageView(
        thread_id=m.thread_id, seq=m.seq, role=m.role, text=render_text(m),
        tool_calls=[tool_call_text(p) for p in m.tool_calls()],
        tool_results=[tool_result_text(p) for p in m.tool_results()],
        metadata=m.metadata, created_at=m.created_at, written_by_run=m.run_id,
        used_by_runs=list(used_by))


def search(storage: Storage, resource: str | None, text: str, *,
           limit: int = 100) -> list[SearchHit]:
    """Case-insensitive substring search over message text within a resource. When no
    message holds the text as written and it is several words, the messages holding
    every one of its words (in any order: "kettle A-5179" finds "a kettle as order
    A-5179"), the rarest word searched and the others checked."""
    needle = text.strip()
    if not needle:
        return []
    found = storage.memory.search_messages(needle, resource_id=resource, limit=limit)
    words = list(dict.fromkeys(w.lower() for w in needle.split()))
    if not found and len(words) > 1:
        # (the longest word is the likeliest to be rare: the fewest rows to check)
        key = max(words, key=len)
        found = [m for m in storage.memory.search_messages(key, resource_id=resource,
                                                           limit=limit * 20)
                 if all(w in (m.text() or "").lower() for w in words)][:limit]
    titles: dict[str, str | None] = {}
    hits: list[SearchHit] = []
    for m in found:
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


# -- what a run was asked ----------------------------------------------------------------
QUESTION_WORDS = 8  # the first words of a run's question a picker shows
QUESTION_CHARS = 60  # and at most this many characters (a word may be a whole blob)


def first_words(text: str, words: int = QUESTION_WORDS) -> str:
    """The first ``words`` words of ``text`` (at most QUESTION_CHARS characters),
    whitespace collapsed, "…" when cut."""
    split = text.split()
    head = " ".join(split[:words])
    if len(head) > QUESTION_CHARS:
        return head[:QUESTION_CHARS - 1] + "…"
    return head + ("…" if len(split) > words else "")


def _last_user_text(messages: Sequence[Message]) -> str | None:
    for m in reversed(messages):
        if m.role == "user" and (m.text() or "").strip():
            return m.text()
    return None


def run_questions(storage: Storage, run_ids: Sequence[str]) -> dict[str, str]:
    """Each run's question, its first words (``first_words``): the last user message the
    caller gave it, else (a tool loop's later step, which is given a tool result) the
    last user message of its prompt. Runs with neither are left out. Two queries at
    most, however many runs."""
    ids = list(dict.fromkeys(run_ids))
    out: dict[str, str] = {}
    inputs = prefetched_readers(storage.runs, ids, ("input",))
    for rid in ids:
        given = inputs[rid].input()
        text = _last_user_text(given.messages) if given is not None else None
        if text is not None:
            out[rid] = first_words(text)
    rest = [rid for rid in ids if rid not in out]
    prompts = prefetched_readers(storage.runs, rest, ("prompt",)) if rest else {}
    for rid in rest:
        prompt = prompts[rid].prompt()
        text = _last_user_text(prompt.messages()) if prompt is not None else None
        if text is not None:
            out[rid] = first_words(text)
    return out
