"""The workbench's test database, built by the real code: history stored through
``AgentMemory.append``, runs made by ``memory_core.runs.runner.Runner`` (scripted and offline
reader models, hashing embedder) with working memory, observational memory (the
extractive summariser), resource-scope recall under a metadata filter, tool calls, and a
counterfactual journaled by ``memory_core.analysis``.

Nothing here writes a journal record by hand, so the records the view, AppTest and
browser tests read are exactly what the Runner writes. Tests derive their expectations
from the built records (``FixtureInfo`` and ``load_run``), not from guesses.

``build_fixture`` is deterministic (a ticking clock) and takes a fraction of a second in
memory; the DuckDB file is built once per session and copied (tests/app/conftest.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from memory_core.analysis.counterfactual import counterfactual
from memory_core.composition.memory import AgentMemory
from memory_core.composition.observational import ObservationalConfig
from memory_core.composition.working_memory import WorkingMemoryConfig
from memory_core.embedding.hashing import HashingEmbedder
from memory_core.errors import ModelError
from memory_core.journal import RunData, load_run
from memory_core.models.base import ModelResponse, Tool, ToolSpec
from memory_core.models.reader import ReaderModel
from memory_core.models.scripted import ScriptedModel
from memory_core.models.summarizer import ExtractiveSummarizer
from memory_core.provenance.record import LANES
from memory_core.recall.config import RecallConfig
from memory_core.runs.runner import Agent, Runner
from memory_core.storage.base import Storage
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import Message, TextPart, ToolCallPart, ToolResultPart
from tests.helpers import Tick

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
RESOURCE = "user-42"
OTHER_RESOURCE = "user-7"
THREAD = "support-1"
SIBLING = "support-2"
OTHER_THREAD = "other-1"
LONG_THREAD = "long-1"
RUN_1 = "run-1"
RUN_2 = "run-2"
FAILED_RUN = "run-failed"
AGENT = "support"
INSTRUCTIONS = "You are a support agent."
SCRIPT_TEXT = "<script>alert(1)</script> and **bold** text"
REFUND_TEXT = "Please refund order #A-17, the parcel never arrived."
QUESTION = "What did we decide about the refund of order A-17?"
ANSWER_1 = "We agreed to refund order A-17."
FAILURE = "model server refused the connection"
LONG_COUNT = 120
FILTER = {"topic": {"$eq": "billing"}}
THRESHOLD = 0.35
LOWER_THRESHOLD = 0.2
LOWER_RUN = "run-lower-bar"  # RUN_1's question again with the bar lowered
NOTES_THREAD = "notes-1"
OBS_RUN = "run-notes"  # observational memory instead of recall
FAQ_THREAD = "faq-1"
FAQ_RUNS = ("run-faq-1", "run-faq-2")  # no recall, no window: identical compositions
NOTES = ["The delivery of order B-2 comes on Friday.", "Noted: Friday for order B-2.",
         "Please leave it at the back door.", "Back door, noted.",
         "My neighbour can sign for it.", "Your neighbour may sign for order B-2."]


def fixed_clock(start: datetime = T0) -> Tick:
    """A clock that advances one second per read (deterministic timestamps)."""
    return Tick(start)


@dataclass(frozen=True)
class FixtureInfo:
    """Names of what the fixture holds; everything else is read from its records."""

    resource: str = RESOURCE
    thread: str = THREAD
    sibling: str = SIBLING
    long_thread: str = LONG_THREAD
    runs: tuple[str, ...] = (RUN_1, RUN_2, LOWER_RUN, OBS_RUN, *FAQ_RUNS, FAILED_RUN)
    long_count: int = LONG_COUNT


def _billing(text: str | list[Any], role: str = "assistant") -> Message:
    return Message(role=role, content=text, metadata={"topic": "billing"})  # type: ignore[arg-type]


def _support_history() -> list[Message]:
    """support-1 before the runs: a refund request, a looked-up order (call + result),
    a refund call that never got its result, a stored <script> and small talk."""
    return [
        _billing(REFUND_TEXT, role="user"),
        _billing([TextPart(text="Checking order A-17 for the refund."),
                  ToolCallPart(id="c0", name="lookup_order", args={"order": "A-17"})]),
        Message(role="tool", content=[ToolResultPart(call_id="c0", name="lookup_order",
                                                     result={"status": "lost"})]),
        _billing([TextPart(text="Issuing the refund for order A-17."),
                  ToolCallPart(id="c9", name="issue_refund", args={"order": "A-17"})]),
        Message(role="user", content=SCRIPT_TEXT, metadata={"topic": "misc"}),
        Message(role="assistant", content="The parcel is lost; a refund is possible."),
        Message(role="user", content="Thanks, talk soon."),
    ]


def _sibling_history() -> list[Message]:
    return [
        _billing("Is a refund possible for lost parcels like order A-17?", role="user"),
        Message(role="user", content="refund of order A-17 status please"),
    ]


def make_memory(storage: Storage, clock: Tick, *, threshold: float = THRESHOLD,
                observational: bool = False) -> AgentMemory:
    """Recall memory (resource scope, a metadata filter, working memory), or with
    ``observational`` the observer instead of recall (they exclude each other)."""
    if observational:
        return AgentMemory(storage, embed=HashingEmbedder(), recent_n=3,
                           working_memory=WorkingMemoryConfig(),
                           observational_memory=ObservationalConfig(
                               model=ExtractiveSummarizer(max_sentences=2),
                               message_threshold=5), clock=clock)
    return AgentMemory(
        storage, embed=HashingEmbedder(), recent_n=3,
        recall=RecallConfig(top_k=4, threshold=threshold, scope="resource", filter=FILTER,
                            message_range=0, near_misses=4),
        working_memory=WorkingMemoryConfig(), clock=clock)


class RefusedModel:
    """A model whose server is down: every call fails the way a client reports it."""

    name = "refused"

    def complete(self, messages: Any, tools: Any) -> ModelResponse:
        raise ModelError(FAILURE)


def _lookup(args: dict[str, Any]) -> Any:
    return {"order": args.get("order"), "status": "lost"}


def _history(storage: Storage, memory: AgentMemory, long_count: int) -> None:
    mem = storage.memory
    threads: list[tuple[str, str, str, list[Message]]] = [
        (SIBLING, RESOURCE, "Earlier billing chat", _sibling_history()),
        (THREAD, RESOURCE, "Refund for order A-17", _support_history()),
        (OTHER_THREAD, OTHER_RESOURCE, "Unrelated", [Message(role="user", content="hello")]),
        (NOTES_THREAD, RESOURCE, "Delivery notes", [
            Message(role="user" if i % 2 == 0 else "assistant", content=text)
            for i, text in enumerate(NOTES)]),
        (FAQ_THREAD, RESOURCE, "Opening hours", []),
    ]
    if long_count:
        threads.append((LONG_THREAD, RESOURCE, "A long thread", [
            Message(role="user" if i % 2 == 0 else "assistant",
                    content=f"long message number {i}") for i in range(long_count)]))
    for tid, resource, title, messages in threads:
        mem.create_thread(tid, resource_id=resource, title=title)
        if messages:
            memory.append(tid, messages, resource)


def build_fixture(storage: Storage, *, long_count: int = LONG_COUNT,
                  clock: Tick | None = None) -> FixtureInfo:
    """Fill an empty storage through the real code (see the module docstring)."""
    clock = clock or fixed_clock()
    memory = make_memory(storage, clock)
    _history(storage, memory, long_count)
    lookup = Tool(ToolSpec("lookup_order", "look up an order"), _lookup)

    def run(run_id: str, model: Any, thread: str = THREAD, prompt: str = QUESTION,
            with_memory: AgentMemory = memory) -> None:
        agent = Agent(AGENT, INSTRUCTIONS, model, tools=[lookup])
        Runner(storage, {AGENT: agent}, memory=with_memory, clock=clock).run(
            AGENT, run_id=run_id, thread_id=thread, resource_id=RESOURCE, prompt=prompt)

    run(RUN_1, ScriptedModel([
        ModelResponse(text="Checking.", tool_calls=[
            ToolCallPart(id="call-1", name="lookup_order", args={"order": "A-17"}),
            ToolCallPart(id="call-2", name="update_working_memory",
                         args={"memory": {"refund": {"order": "A-17", "status": "agreed"}}})]),
        ModelResponse(text=ANSWER_1)]))
    run(RUN_2, ReaderModel(embed=HashingEmbedder()))
    counterfactual(storage, RUN_2, subtract="all")
    run(LOWER_RUN, ScriptedModel([ANSWER_1]),
        with_memory=make_memory(storage, clock, threshold=LOWER_THRESHOLD))
    run(OBS_RUN, ScriptedModel(["Friday, at the back door."]), thread=NOTES_THREAD,
        prompt="When and where is the delivery?",
        with_memory=make_memory(storage, clock, observational=True))
    bare = AgentMemory(storage, embed=HashingEmbedder(), recent_n=0, clock=clock)
    for rid in FAQ_RUNS:
        run(rid, ScriptedModel(["We open at nine."]), thread=FAQ_THREAD,
            prompt="When do you open?", with_memory=bare)
    try:
        run(FAILED_RUN, RefusedModel(), thread=SIBLING, prompt="Any news on the refund?")
    except ModelError:
        pass
    return FixtureInfo(long_count=long_count)


def build_duckdb_file(path: str, *, long_count: int = LONG_COUNT) -> FixtureInfo:
    """The fixture in a DuckDB file, closed again so another process can open it."""
    from memory_core.storage.duckdb import DuckDBStorage

    clock = fixed_clock()
    storage = DuckDBStorage(path, clock=clock)
    try:
        return build_fixture(storage, long_count=long_count, clock=clock)
    finally:
        storage.close()


def new_storage() -> InMemoryStorage:
    clock = fixed_clock()
    storage = InMemoryStorage(clock=clock)
    build_fixture(storage, clock=clock)
    return storage


# -- what the built records say (tests derive their expectations from these) ------------
def records(storage: Storage, run_id: str) -> RunData:
    return load_run(storage, run_id)


def lane_counts(storage: Storage, run_id: str) -> dict[str, int]:
    """Items per lane of the run's frozen prompt, plus the provenance record's dropped
    count, in the inspector's lane order."""
    data = load_run(storage, run_id)
    counts = {lane: sum(1 for i in data.prompt.items if i.lane == lane) for lane in LANES}
    counts["dropped"] = data.memctx.dropped_count if data.memctx else 0
    return counts


def tab_labels(storage: Storage, run_id: str) -> list[str]:
    """The run inspector's tab labels for the run, e.g. ``Recalled (3)``: the lanes of
    the prompt (the dropped are shown above them, outside the tabs)."""
    return [f"{lane.replace('_', ' ').capitalize()} ({n})"
            for lane, n in lane_counts(storage, run_id).items() if lane != "dropped"]


def seq_of(storage: Storage, thread_id: str, text: str) -> int:
    """The seq of the (first) stored message of the thread whose text starts with text."""
    return next(m.seq for m in storage.memory.get_messages(thread_id)
                if (m.text() or "").startswith(text))
