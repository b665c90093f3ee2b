"""Builds a small, fully known workbench database by writing records straight through
the storage ports (threads, messages, runs and their journal entries).

Used by the view tests, the AppTest tests and the browser test; when the Runner lands
this can be switched to real runs while keeping the same names and counts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from memory_core.models.base import ModelResponse, Usage
from memory_core.prompt import FrozenPrompt, PromptItem
from memory_core.provenance import (
    CompositionSettings,
    LaneTokens,
    Memctx,
    MessageRef,
    NearMiss,
    ObservationRef,
    preview,
)
from memory_core.recall import RecallConfig
from memory_core.storage.base import Storage
from memory_core.tokens import estimate_tokens
from memory_core.types import (
    AppendRow,
    Message,
    Observation,
    RunRecord,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
RESOURCE = "user-42"
OTHER_RESOURCE = "user-7"
THREAD = "support-1"
SIBLING = "support-2"
LONG_THREAD = "long-1"
RUN_1 = "run-1"
RUN_2 = "run-2"
FAILED_RUN = "run-failed"
SCRIPT_TEXT = "<script>alert(1)</script> and **bold** text"
REFUND_TEXT = "Please refund order #A-17, the parcel never arrived."


def fixed_clock(start: datetime = T0) -> Any:
    """A clock that advances one second per call (deterministic thread timestamps)."""
    state = {"t": start}

    def clock() -> datetime:
        state["t"] = state["t"] + timedelta(seconds=1)
        return state["t"]

    return clock


@dataclass(frozen=True)
class FixtureInfo:
    resource: str = RESOURCE
    thread: str = THREAD
    sibling: str = SIBLING
    long_thread: str = LONG_THREAD
    runs: tuple[str, ...] = (RUN_1, RUN_2, FAILED_RUN)
    # expected lane item counts of RUN_1
    lane_counts: dict[str, int] = field(default_factory=lambda: {
        "instructions": 1, "working_memory": 1, "observations": 1, "recalled": 2,
        "recent": 3, "input": 1, "dropped": 1})
    script_seq: int = 3
    long_count: int = 0


def _thread_messages() -> list[Message]:
    return [
        Message(role="user", content=REFUND_TEXT, metadata={"topic": "billing"}),
        Message(role="assistant", content="I will look the order up.",
                metadata={"topic": "billing"}),
        Message(role="assistant", content=[
            TextPart(text="Checking."),
            ToolCallPart(id="c0", name="lookup_order", args={"order": "A-17"})]),
        Message(role="user", content=SCRIPT_TEXT, metadata={"topic": "misc"}),
        Message(role="tool", content=[ToolResultPart(call_id="c0", name="lookup_order",
                                                     result={"status": "lost"})]),
        Message(role="assistant", content="The parcel is lost; a refund is possible."),
        Message(role="assistant", content=[
            ToolCallPart(id="c9", name="issue_refund", args={"order": "A-17"})]),
        Message(role="user", content="Thanks, what about my refund?"),
    ]


def _ref(storage: Storage, thread: str, seq: int, **kw: Any) -> MessageRef:
    m = storage.memory.get_messages(thread, seqs=[seq])[0]
    return MessageRef(thread_id=thread, seq=seq, role=m.role, preview=preview(m), **kw)


def _item(storage: Storage, lane: str, thread: str, seq: int,
          origin: str | None = None) -> PromptItem:
    m = storage.memory.get_messages(thread, seqs=[seq])[0]
    return PromptItem(lane=lane, message=m.as_message(), thread_id=thread, seq=seq,  # type: ignore[arg-type]
                      origin=origin)


def _write_run(storage: Storage, run_id: str, thread: str, started: datetime) -> None:
    """RUN_1-shaped run: every lane filled, one dropped item, three near misses, a tool
    call step, a text step and an answer."""
    storage.runs.start_run(RunRecord(run_id=run_id, agent="support", thread_id=thread,
                                     resource_id=RESOURCE, started_at=started))
    question = Message(role="user", content="What did we decide about the refund?")
    obs_text = "# Observations\n- user asked for a refund of order A-17 (seq 0-2)"
    items = [
        PromptItem(lane="instructions",
                   message=Message(role="system", content="You are a support agent.")),
        PromptItem(lane="working_memory",
                   message=Message(role="system", content="# Working memory\nplan: refund")),
        PromptItem(lane="observations", message=Message(role="system", content=obs_text),
                   observation_id=f"obs-{thread}-0"),
        _item(storage, "recalled", thread, 0, "hit"),
        _item(storage, "recalled", SIBLING, 0, "repair"),
        _item(storage, "recent", thread, 3),
        _item(storage, "recent", thread, 4),
        _item(storage, "recent", thread, 5),
        PromptItem(lane="input", message=question),
    ]
    prompt = FrozenPrompt(items=items)
    tokens = LaneTokens(**{lane: sum(estimate_tokens(i.message.text() or "")
                                     for i in items if i.lane == lane)
                           for lane in ("instructions", "working_memory", "observations",
                                        "recalled", "recent", "input")})
    memctx = Memctx(
        thread_id=thread, resource_id=RESOURCE, query=question.text(),
        recalled=[_ref(storage, thread, 0, score=0.91, rank=1, vector_score=0.91,
                       origin="hit"),
                  _ref(storage, SIBLING, 0, origin="repair")],
        recent_count=3, recent=[_ref(storage, thread, s) for s in (3, 4, 5)],
        dropped_count=1,
        dropped=[_ref(storage, thread, 6, reason="unanswered-tool-call")],
        near_misses=[
            NearMiss(thread_id=thread, seq=1, role="assistant", preview="I will look",
                     rank=2, score=0.64, reason="below-threshold"),
            NearMiss(thread_id=SIBLING, seq=1, role="user", preview="refund status",
                     rank=3, score=0.58, reason="below-threshold"),
            NearMiss(thread_id=thread, seq=7, role="user", preview="Thanks",
                     rank=4, score=0.52, reason="filtered-out",
                     filter_clause="topic $eq billing"),
        ],
        observation_count=1,
        observations=[ObservationRef(id=f"obs-{thread}-0", thread_id=thread, level=0,
                                     from_seq=0, to_seq=2, preview=obs_text[:120],
                                     tokens=estimate_tokens(obs_text))],
        working_memory_chars=28, tokens=tokens,
        settings=CompositionSettings(recent_n=3, recall_enabled=True,
                                     recall=RecallConfig(top_k=2, threshold=0.7,
                                                         scope="resource",
                                                         filter={"topic": {"$eq": "billing"}},
                                                         message_range=0, mode="vector"),
                                     working_memory="thread", observational=True,
                                     embedder="hashing-64"),
        incoming_count=1, scope_snapshot={thread: 7, SIBLING: 1})
    j = storage.runs
    j.put_if_absent(f"{run_id}:input", {"v": 1, "messages": [question.model_dump(mode="json")]})
    j.put_if_absent(f"{run_id}:prompt", prompt.to_json())
    j.put_if_absent(f"{run_id}:memctx", memctx.model_dump(mode="json"))
    step0 = ModelResponse(text=None, tool_calls=[
        ToolCallPart(id="call-1", name="lookup_order", args={"order": "A-17"})],
        usage=Usage(input_tokens=tokens.total, output_tokens=9), model="scripted",
        finish_reason="tool_calls")
    step1 = ModelResponse(text="We agreed to refund order A-17.",
                          usage=Usage(input_tokens=tokens.total + 12, output_tokens=8),
                          model="scripted", finish_reason="stop")
    model = {"name": "scripted", "temperature": 0.0, "seed": 7}
    j.put_if_absent(f"{run_id}:step:0", {"v": 1, "response": step0.model_dump(mode="json"),
                                         "model": model})
    j.put_if_absent(f"{run_id}:tool:call-1", {"v": 1, "name": "lookup_order",
                                              "args": {"order": "A-17"}, "status": "ok",
                                              "result": {"status": "lost"}, "error": None})
    j.put_if_absent(f"{run_id}:step:1", {"v": 1, "response": step1.model_dump(mode="json"),
                                         "model": model})
    j.put_if_absent(f"{run_id}:output", {"v": 1, "text": step1.text, "steps": 2,
                                         "tool_calls": 1})
    storage.runs.set_run_status(run_id, "completed", finished_at=started + timedelta(seconds=3))


def build_fixture(storage: Storage, *, long_count: int = 0) -> FixtureInfo:
    """Write the fixture into an empty storage; long_count > 0 adds a thread with that
    many messages (for pagination)."""
    mem = storage.memory
    mem.create_thread(THREAD, resource_id=RESOURCE, title="Refund for order A-17")
    mem.create_thread(SIBLING, resource_id=RESOURCE, title="Earlier billing chat")
    mem.create_thread("other-1", resource_id=OTHER_RESOURCE, title="Unrelated")
    mem.append_messages(THREAD, [AppendRow(message=m, created_at=T0 + timedelta(minutes=i))
                                 for i, m in enumerate(_thread_messages())])
    mem.append_messages(SIBLING, [
        AppendRow(message=Message(role="user", content="Is a refund possible for lost parcels?",
                                  metadata={"topic": "billing"}),
                  created_at=T0 - timedelta(days=1)),
        AppendRow(message=Message(role="user", content="refund status please"),
                  created_at=T0 - timedelta(days=1, minutes=-1)),
    ])
    mem.append_messages("other-1", [AppendRow(message=Message(role="user", content="hello"),
                                              created_at=T0)])
    mem.put_observation(Observation(id=f"obs-{THREAD}-0", thread_id=THREAD, from_seq=0,
                                    to_seq=2, text="user asked for a refund of order A-17",
                                    created_at=T0 + timedelta(minutes=10)))
    if long_count:
        mem.create_thread(LONG_THREAD, resource_id=RESOURCE, title="A long thread")
        mem.append_messages(LONG_THREAD, [
            AppendRow(message=Message(role="user" if i % 2 == 0 else "assistant",
                                      content=f"long message number {i}"),
                      created_at=T0 + timedelta(seconds=i))
            for i in range(long_count)])
    _write_run(storage, RUN_1, THREAD, T0 + timedelta(hours=1))
    # a second run on the same thread; its memctx is that of RUN_1's shape too
    _write_run(storage, RUN_2, THREAD, T0 + timedelta(hours=2))
    storage.runs.start_run(RunRecord(run_id=FAILED_RUN, agent="support", thread_id=SIBLING,
                                     resource_id=RESOURCE, started_at=T0 + timedelta(hours=3)))
    storage.runs.set_run_status(FAILED_RUN, "failed", finished_at=T0 + timedelta(hours=3),
                                error="model server refused the connection")
    return FixtureInfo(long_count=long_count)


def build_duckdb_file(path: str, *, long_count: int = 0) -> FixtureInfo:
    """The fixture in a DuckDB file, closed again so another process can open it."""
    from memory_core.storage.duckdb import DuckDBStorage

    storage = DuckDBStorage(path, clock=fixed_clock())
    try:
        return build_fixture(storage, long_count=long_count)
    finally:
        storage.close()
