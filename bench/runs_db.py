"""A many-run benchmark database built by the real ``Runner``: threads of varied length
over several resources, played turn by turn with the offline reader model and the
hashing embedder into a DuckDB file (or any storage URL: ``--out sqlite:///…``). Some
turns state facts, some ask about them, some ask for a tool (an order lookup) and some
set working memory; a few threads are long. The workbench's page benchmark (bench/bench_pages.py) reads it.

Run: ``.venv/bin/python -m bench.runs_db --out /tmp/runs5k.duckdb --runs 5000``.
It prints the build time beside the time the model itself took (the runner's share is
the rest); issue 16 wants the 5,000-run build under a minute.
"""

from __future__ import annotations

import argparse
import os
import random
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memory_core.composition.memory import AgentMemory
from memory_core.composition.working_memory import WorkingMemoryConfig
from memory_core.embedding.hashing import HashingEmbedder
from memory_core.errors import InvalidInputError
from memory_core.models.base import ModelResponse, Tool, ToolSpec
from memory_core.models.reader import ReaderModel
from memory_core.recall.config import RecallConfig
from memory_core.runs.runner import Agent, Runner
from memory_core.storage.base import Storage
from tests.helpers import Tick  # one second per read: distinct, ordered timestamps

T0 = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)
AGENT = "support"
INSTRUCTIONS = "You are a support agent. Answer from the conversation and your tools."
EMBED_DIM = 64
RESOURCES = 8
LONG_TURNS = 60  # turns of a long thread
LONG_EVERY = 40  # one thread in this many is long
ITEMS = ("blender", "kettle", "lamp", "desk", "chair", "router", "camera", "bicycle",
         "printer", "monitor", "speaker", "backpack")
CITIES = ("Lisbon", "Porto", "Ghent", "Malmo", "Tartu", "Bergen", "Lyon", "Graz")
COLOURS = ("blue", "green", "amber", "teal", "violet", "crimson")


def _lookup(args: dict[str, Any]) -> dict[str, Any]:
    oid = str(args.get("order_id", ""))
    n = sum(ord(c) for c in oid)
    return {"order_id": oid, "status": ("delivered", "shipped", "lost")[n % 3],
            "paid_eur": 20 + n % 400}


# a read of a fixed table: it may run again (Tool.idempotent)
LOOKUP = Tool(ToolSpec("lookup_order", "Look up an order status by its order id.",
                       {"type": "object", "properties": {"order_id": {"type": "string"}},
                        "required": ["order_id"]}), _lookup, idempotent=True)


def _turn(rng: random.Random, facts: list[tuple[str, str]]) -> str:
    """One user turn: a fact, a question about an earlier fact, a tool request, a
    working-memory statement, or small talk."""
    roll = rng.random()
    if roll < 0.35 or not facts:
        item, order = rng.choice(ITEMS), f"A-{rng.randrange(1000, 9999)}"
        price = rng.randrange(15, 900)
        facts.append((item, order))
        return (f"I ordered a {item} as order {order}; it cost {price} euros and "
                f"should arrive on {rng.randrange(1, 28)} May.")
    if roll < 0.65:
        item, order = rng.choice(facts)
        return rng.choice([f"How much did the {item} cost?",
                           f"When does the {item} arrive?",
                           f"Which order number was the {item}?"])
    if roll < 0.78:
        return f"Please look up order {rng.choice(facts)[1]}."
    if roll < 0.88:
        return rng.choice([f"Remember that I live in {rng.choice(CITIES)}.",
                           f"Remember that my favourite colour is {rng.choice(COLOURS)}."])
    return rng.choice(["Thanks, that helps.", "Okay, talk soon.", "Good to know."])


@dataclass(frozen=True)
class Plan:
    """Threads to play: (thread id, resource id, number of turns)."""

    threads: tuple[tuple[str, str, int], ...]

    @property
    def runs(self) -> int:
        return sum(n for _, _, n in self.threads)


def plan(n_runs: int, *, resources: int = RESOURCES, seed: int = 0) -> Plan:
    """Threads adding up to exactly ``n_runs`` turns: mostly 2–12 turns, one in
    ``LONG_EVERY`` with ``LONG_TURNS``, over ``resources`` resources (some threads
    without a resource)."""
    if n_runs < 1:
        raise InvalidInputError(f"n_runs must be at least 1, got {n_runs!r}")
    if resources < 1:
        raise InvalidInputError(f"resources must be at least 1, got {resources!r}")
    rng = random.Random(seed)
    threads: list[tuple[str, str, int]] = []
    left = n_runs
    while left:
        i = len(threads)
        turns = LONG_TURNS if i % LONG_EVERY == LONG_EVERY - 1 else rng.randint(2, 12)
        turns = min(turns, left)
        resource = "" if i % 11 == 10 else f"user-{i % resources}"
        threads.append((f"thread-{i:05d}", resource, turns))
        left -= turns
    return Plan(tuple(threads))


@dataclass(frozen=True)
class BuildReport:
    runs: int
    threads: int
    seconds: float
    model_seconds: float  # inside the model's complete() (embedding the prompt included)

    @property
    def per_run_ms(self) -> float:
        return 1000 * self.seconds / max(self.runs, 1)

    @property
    def overhead_ms(self) -> float:
        """Per run, everything but the model: runner, memory, embedder, storage."""
        return 1000 * (self.seconds - self.model_seconds) / max(self.runs, 1)


class _TimedModel:
    """Adds up the seconds a model spends answering (its identity is the model's)."""

    def __init__(self, model: ReaderModel) -> None:
        self.model = model
        self.name = model.name
        self.seconds = 0.0

    def identity(self) -> Any:
        return self.model.identity()

    def complete(self, messages: Any, tools: Any) -> ModelResponse:
        start = time.perf_counter()
        try:
            return self.model.complete(messages, tools)
        finally:
            self.seconds += time.perf_counter() - start


def _memories(storage: Storage, clock: Tick) -> tuple[AgentMemory, AgentMemory]:
    """A recall memory with working memory (resource scope), and a plain window one."""
    embed = HashingEmbedder(EMBED_DIM)
    recall = AgentMemory(storage, embed=embed, recent_n=4,
                         recall=RecallConfig(top_k=4, scope="resource", message_range=1,
                                             near_misses=3, mode="hybrid"),
                         working_memory=WorkingMemoryConfig(), clock=clock)
    window = AgentMemory(storage, embed=embed, recent_n=8, clock=clock)
    return recall, window


def play(storage: Storage, the_plan: Plan, *, seed: int = 0, clock: Tick | None = None,
         progress: Callable[[int], None] | None = None) -> float:
    """Play every thread of the plan through the Runner; returns the model's seconds."""
    clock = clock or Tick(T0)
    rng = random.Random(seed + 1)
    model = _TimedModel(ReaderModel(embed=HashingEmbedder(EMBED_DIM)))
    agent = Agent(AGENT, INSTRUCTIONS, model, tools=[LOOKUP])
    recall, window = _memories(storage, clock)
    runners = {m: Runner(storage, {AGENT: agent}, memory=m, clock=clock)
               for m in (recall, window)}
    done = 0
    for i, (tid, resource, turns) in enumerate(the_plan.threads):
        memory = window if i % 4 == 3 else recall
        facts: list[tuple[str, str]] = []
        for t in range(turns):
            runners[memory].run(AGENT, run_id=f"{tid}-t{t:03d}", thread_id=tid,
                                resource_id=resource or None, prompt=_turn(rng, facts))
            done += 1
            if progress is not None:
                progress(done)
    return model.seconds


@contextmanager
def _session(storage: Storage) -> Iterator[None]:
    session = getattr(storage, "session", None)
    with session() if session is not None else nullcontext():
        yield


def build_runs_db(path: str | Path, n_runs: int = 5000, *, seed: int = 0,
                  resources: int = RESOURCES,
                  progress: Callable[[int], None] | None = None) -> BuildReport:
    """Build ``n_runs`` Runner runs (see the module docstring) into a new database at
    ``path``: a DuckDB file path or any storage URL (``sqlite:///…``, ``postgresql://…``).
    Refuses a database file that exists; closes the storage afterwards."""
    from memory_core.storage.url import file_of, open_storage

    target = str(path)
    on_disk = file_of(target)
    if on_disk is not None and Path(on_disk[1]).exists():
        raise InvalidInputError(f"refusing to overwrite existing file '{on_disk[1]}'")
    the_plan = plan(n_runs, resources=resources, seed=seed)
    clock = Tick(T0)
    start = time.perf_counter()
    storage = open_storage(target, clock=clock)
    try:
        with _session(storage):
            model_s = play(storage, the_plan, seed=seed, clock=clock, progress=progress)
    finally:
        storage.close()
    return BuildReport(runs=the_plan.runs, threads=len(the_plan.threads),
                       seconds=time.perf_counter() - start, model_seconds=model_s)


SECTION = "Benchmark database: 5,000 Runner runs"


def render(report: BuildReport, load: float) -> str:
    """The RESULTS.md section: the build beside its limit, the model's own time."""
    return "\n".join([
        f"`build_runs_db` played {report.runs:,} runs in {report.threads:,} threads "
        "through the real `Runner` (offline reader model, HashingEmbedder, hybrid recall "
        "with working memory, or a plain window; DuckDB file, one session). The limit "
        "is the model's own time (its `complete()`, measured inside the same build): "
        "everything above it is the runner, memory, embedder and storage.",
        "",
        "Rerun: `.venv/bin/python -m bench.runs_db --out /tmp/runs5k.duckdb --runs 5000 "
        f"--write` · {os.cpu_count()} cores, 1-minute load {load:.1f} (shared) · "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        "",
        "| build s | per run ms | model s (limit) | ratio | everything else ms/run | "
        "issue 16 target |",
        "|---:|---:|---:|---:|---:|---|",
        f"| {report.seconds:.1f} | {report.per_run_ms:.1f} | {report.model_seconds:.1f} | "
        f"{report.seconds / max(report.model_seconds, 1e-9):.0f}× | "
        f"{report.overhead_ms:.1f} | < 60 s build: "
        f"{'met' if report.seconds < 60 else 'not met'} |",
    ])


def cli(argv: Sequence[str] | None = None) -> BuildReport:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True,
                    help="the DuckDB file (or storage URL) to create")
    ap.add_argument("--runs", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--resources", type=int, default=RESOURCES)
    ap.add_argument("--write", action="store_true", help="update bench/RESULTS.md")
    args = ap.parse_args(argv)
    step = max(1, args.runs // 20)
    t0 = time.perf_counter()

    def progress(done: int) -> None:
        if done % step == 0:
            print(f"[runs_db] {done:,} runs, {time.perf_counter() - t0:.0f} s", flush=True)

    report = build_runs_db(args.out, args.runs, seed=args.seed, resources=args.resources,
                           progress=progress)
    print(f"[runs_db] {report.runs:,} runs in {report.threads:,} threads: "
          f"{report.seconds:.1f} s ({report.per_run_ms:.1f} ms/run; the model "
          f"{report.model_seconds:.1f} s, everything else {report.overhead_ms:.1f} ms/run)")
    if args.write:
        from bench.results import replace_section

        replace_section(SECTION, render(report, os.getloadavg()[0]))
    return report


if __name__ == "__main__":
    cli()
