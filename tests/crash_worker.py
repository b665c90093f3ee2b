"""The crash-matrix scenario: one support turn with a lookup tool and a working-memory
update (a new nested object holding a null) on a database another process can open
(a DuckDB or SQLite file, a PostgreSQL schema). Run as a script it kills itself with
SIGKILL: at the ``on_boundary`` name MEMWB_CRASH_AT, or — in the default mode, no hook
— inside the model or tool call MEMWB_KILL_IN names (``model:<step>``,
``tool:<name>``; the call starts after the writes before it returned; or
``applied:<name>``, once the working-memory tool applied its patch), or right after
the run returned (MEMWB_KILL_AFTER_RUN), or inside one of the Runner's write groups
(MEMWB_CRASH_INSIDE).

Side files in the given folder count what really happened across processes: one line
per model answer (``model.log``), lookup application (``tools.log``) and call of the
working-memory tool (``wm.log``; the store's working memory tells whether a call merged:
one run again for a call that merged already returns its recorded result); a call
killed before it answered or applied anything logs nothing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memory_core.composition.memory import AgentMemory
from memory_core.composition.working_memory import WorkingMemoryConfig
from memory_core.journal import RunKeys
from memory_core.models.base import ModelResponse, Tool, ToolSpec
from memory_core.runs.runner import Agent, Runner
from memory_core.storage.base import Storage
from memory_core.types import Message, ToolCallPart

RUN_ID = "run-crash"
THREAD = "t-crash"
RESOURCE = "u-crash"
PROMPT = "Please look up my balance and remember the refund decision."
HISTORY = [Message(role="user", content="I asked for a refund last week."),
           Message(role="assistant", content="The refund was approved on Monday.")]
RESPONSES = [
    ModelResponse(text="Checking.", tool_calls=[
        ToolCallPart(id="c1", name="lookup", args={"account": "a-1"}),
        ToolCallPart(id="c2", name="update_working_memory",
                     args={"memory": {"refund": "approved",
                                      "trip": {"hotel": None, "city": "Rome"}}})]),
    ModelResponse(text="Your balance is 42 and the refund is approved."),
]
#: the working memory after the turn: the new nested object is stored with its null
#: (SPEC §7.6); the same patch merged again would delete "hotel"
WM_AFTER = {"refund": "approved", "trip": {"hotel": None, "city": "Rome"}}
BOUNDARIES = ["input", "memctx", "prompt", "run:start", "persist:input:stored",
              "persist:input", "step:0", "tool:c1", "tool:c2", "step:1",
              "persist:output:stored", "persist:output", "output", "run:completed"]


class Tick:
    def __init__(self) -> None:
        self.t = datetime(2026, 3, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.t += timedelta(seconds=1)
        return self.t


def _kill_in(call: str) -> None:
    """SIGKILL this process if MEMWB_KILL_IN names this call (it has done nothing yet)."""
    if os.environ.get("MEMWB_KILL_IN") == call:
        os.kill(os.getpid(), signal.SIGKILL)


def _log(side: Path, name: str, line: str) -> None:
    with open(side / name, "a", encoding="utf-8") as f:
        f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno())


class JournalScriptedModel:
    """Plays RESPONSES by step number: the step to run is the number of step entries
    already journaled, so the same script serves the first process and the resume."""

    name = "scripted-crash"

    def __init__(self, storage: Storage, side: Path) -> None:
        self.storage = storage
        self.side = side

    def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelResponse:
        n = 0
        while self.storage.runs.get(RunKeys(RUN_ID).step(n)) is not None:
            n += 1
        _kill_in(f"model:{n}")
        _log(self.side, "model.log", str(n))
        return RESPONSES[n]


class CountingMemory(AgentMemory):
    """AgentMemory whose working-memory tool also logs each real application (and is
    declared as the library declares it)."""

    side: Path

    def tools(self, *, thread_id: str, resource_id: str | None = None) -> list[Tool]:
        out = []
        for t in super().tools(thread_id=thread_id, resource_id=resource_id):
            def fn(args: dict[str, Any], _inner: Tool = t) -> Any:
                _kill_in(f"tool:{_inner.name}")
                _log(self.side, "wm.log", "patch")
                result = _inner.fn(args)
                _kill_in(f"applied:{_inner.name}")  # its effect stored, its result not
                return result
            out.append(dataclasses.replace(t, fn=fn))
        return out


def build(storage: Storage, side: Path, on_boundary: Any = None) -> Runner:
    def lookup(args: dict[str, Any]) -> Any:
        _kill_in("tool:lookup")
        _log(side, "tools.log", str(args.get("account")))
        return {"balance": 42}

    clock = Tick()
    memory = CountingMemory(storage, recent_n=6, working_memory=WorkingMemoryConfig(),
                            clock=clock)
    memory.side = side
    agent = Agent(name="support", instructions="You are a support agent.",
                  model=JournalScriptedModel(storage, side),
                  tools=[Tool(ToolSpec("lookup", "look up an account balance"), lookup)])
    return Runner(storage, {"support": agent}, memory=memory, clock=clock,
                  on_boundary=on_boundary)


def open_storage(kind: str, path: str) -> Storage:
    """``path``: the database file, or for ``postgres`` a storage URL naming a schema."""
    if kind == "sqlite":
        from memory_core.storage.sqlite import SQLiteStorage

        return SQLiteStorage(path, clock=Tick())
    if kind == "postgres":
        from memory_core.storage.url import open_storage as open_url

        return open_url(path, clock=Tick())
    from memory_core.storage.duckdb import DuckDBStorage

    return DuckDBStorage(path, clock=Tick())


def _session(storage: Storage) -> Any:
    # keep the file open for the whole turn (DuckDB otherwise reopens it per operation);
    # every write still commits on its own, so a SIGKILL inside the block is a real crash
    session = getattr(storage, "session", None)
    return session() if session is not None else contextlib.nullcontext()


def seed(storage: Storage) -> None:
    with _session(storage):
        storage.memory.create_thread(THREAD, resource_id=RESOURCE)
        mem = AgentMemory(storage, clock=Tick())
        mem.append(THREAD, HISTORY, RESOURCE, created_at=datetime(2026, 2, 1, tzinfo=UTC))


def run(runner: Runner) -> Any:
    with _session(runner.storage):
        return runner.run("support", run_id=RUN_ID, thread_id=THREAD, resource_id=RESOURCE,
                          prompt=PROMPT)


def kill_inside_group(storage: Storage, which: str) -> None:
    """SIGKILL in the middle of one of the Runner's write groups, before it commits:
    ``first`` as the run's row is inserted (its frozen prompt already given to the
    group), ``last`` as it is marked completed (its last step, stored output, output
    and seal already given)."""
    runs = storage.runs
    if which == "first":
        start = runs.start_run

        def start_run(run: Any) -> bool:
            os.kill(os.getpid(), signal.SIGKILL)
            return start(run)
        runs.start_run = start_run  # type: ignore[method-assign]
    elif which == "last":
        set_status = runs.set_run_status

        def set_run_status(run_id: str, status: Any, **kw: Any) -> None:
            if status == "completed":
                os.kill(os.getpid(), signal.SIGKILL)
            set_status(run_id, status, **kw)
        runs.set_run_status = set_run_status  # type: ignore[method-assign]


def main(argv: list[str]) -> int:
    kind, path, side = argv[1], argv[2], Path(argv[3])
    crash_at = os.environ.get("MEMWB_CRASH_AT", "")

    def hook(name: str) -> None:
        if name == crash_at:
            os.kill(os.getpid(), signal.SIGKILL)

    storage = open_storage(kind, path)
    if os.environ.get("MEMWB_KILL_AFTER_RUN"):
        # killed as soon as the run has returned: every write it made is durable
        with _session(storage):
            run(build(storage, side))
            os.kill(os.getpid(), signal.SIGKILL)
    kill_inside_group(storage, os.environ.get("MEMWB_CRASH_INSIDE", ""))
    # the hook only where a boundary is named: everything else runs in the default mode
    run(build(storage, side, hook if crash_at else None))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
