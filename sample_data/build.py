"""Builds the demo database: every scenario is played through the real Runner with
journaled runs — history turns by a playback agent that says the hand-written
replies (and makes the hand-written tool calls), question turns by the offline reader
model answering from whatever memory composed. Same input, same database. With
``model="openai"`` the question turns are answered by the configured OpenAI-compatible
server instead (``memwb demo --model openai``)."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memory_core.composition.memory import AgentMemory
from memory_core.composition.observational import ObservationalConfig
from memory_core.composition.working_memory import WorkingMemoryConfig
from memory_core.embedding.hashing import Embedder, HashingEmbedder
from memory_core.errors import InvalidInputError
from memory_core.models.base import Model, ModelIdentity, ModelResponse, Tool, ToolSpec
from memory_core.recall.config import RecallConfig
from memory_core.runs.runner import Agent, Runner
from memory_core.storage.base import Storage
from memory_core.types import Message, Part, TextPart, ToolCallPart
from sample_data.scenarios import Legacy, Scenario, Turn
from sample_data.scenarios.home import HOME
from sample_data.scenarios.move import MOVE
from sample_data.scenarios.support import SUPPORT
from sample_data.scenarios.tech import TECH
from sample_data.scenarios.trip import TRIP, TripPlan

SCENARIOS: list[Scenario] = [SUPPORT, TRIP, TECH, HOME, MOVE]
SCHEMAS = {"TripPlan": TripPlan}
MODELS = ("reader", "openai")  # what answers the question turns
EPOCH = datetime(2027, 3, 1, 9, 0, tzinfo=UTC)
Progress = Callable[[str], None]
PROGRESS_EVERY = 10  # runs between two progress lines inside a thread


class BuildProgress:
    """Counts the runs played and says, as it goes, how many of the total are done, the
    time since the build started and an estimate of the time left from the rate of the
    runs so far (none before the first run is done)."""

    def __init__(self, total: int, progress: Progress,
                 timer: Callable[[], float] = time.monotonic) -> None:
        self.total, self.done, self.progress, self.timer = total, 0, progress, timer
        self.started = self.runs_started = timer()
        self.said = -1  # the run count of the last line said

    def start_runs(self) -> None:
        """The runs start now (the rate leaves out the work before them)."""
        self.runs_started = self.timer()

    def run_done(self, where: str) -> None:
        self.done += 1
        if self.done % PROGRESS_EVERY == 0:
            self.say(where)

    def thread_done(self, where: str) -> None:
        if self.said != self.done:
            self.say(where)

    def say(self, where: str) -> None:
        self.said = self.done
        self.progress(f"  {where}: {self.line()}")

    def elapsed(self) -> float:
        return self.timer() - self.started

    def line(self) -> str:
        text = f"runs {self.done}/{self.total}, {self.elapsed():.0f} s elapsed"
        if 0 < self.done < self.total:
            left = (self.timer() - self.runs_started) / self.done * (self.total - self.done)
            text += f", about {left:.0f} s left"
        return text


class DemoClock:
    """A clock that moves one second per reading and can jump forward between threads,
    so timestamps are realistic and identical on every build."""

    def __init__(self, start: datetime = EPOCH) -> None:
        self.now = start

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now

    def jump_to(self, when: datetime) -> None:
        self.now = max(self.now, when)


class PlaybackModel:
    """Says the next scripted responses of a history turn; raises when the runner asks
    for more than was scripted (a bug in the scenario or the runner)."""

    name = "scripted-playback"

    def __init__(self) -> None:
        self.script: list[ModelResponse] = []

    def identity(self) -> ModelIdentity:
        return ModelIdentity(kind="scripted", name=self.name)

    def complete(self, messages: Any, tools: Any) -> ModelResponse:
        if not self.script:
            raise RuntimeError("playback model has no scripted response left")
        return self.script.pop(0)


# -- the scenario tools: deterministic stand-ins for a shop's backend ------------------
def _lookup_order(args: dict[str, Any]) -> dict[str, Any]:
    orders = {"A-1042": {"item": "VitaBlend 700", "paid_eur": 240, "status": "delivered",
                         "delivered": "2027-03-09"},
              "A-1187": {"item": "SteamPro kettle", "paid_eur": 89, "status": "placed"}}
    oid = str(args.get("order_id", ""))
    return {"order_id": oid, **orders.get(oid, {"status": "unknown order"})}


def _refund(args: dict[str, Any]) -> dict[str, Any]:
    return {"refund_id": "RF-8812", "order_id": args.get("order_id"),
            "amount_eur": args.get("amount_eur"), "status": "approved"}


TOOLS: dict[str, Tool] = {
    "lookup_order": Tool(ToolSpec("lookup_order", "Look up an order by its order id.",
                                  {"type": "object", "properties": {
                                      "order_id": {"type": "string"}},
                                   "required": ["order_id"]}), _lookup_order),
    "refund": Tool(ToolSpec("refund", "Issue a refund for an order.",
                            {"type": "object", "properties": {
                                "order_id": {"type": "string"},
                                "amount_eur": {"type": "number"}},
                             "required": ["order_id"]}), _refund),
}


def make_embedder(name: str, cache_dir: Path | None = None, *,
                  shipped: bool = True) -> Embedder:
    """``hashing`` or ``minilm``; MiniLM primed with the vectors shipped with the demo
    (sample_data/vectors.py) unless ``shipped`` is false, so it loads the model only for
    a text they do not hold."""
    if name == "hashing":
        return HashingEmbedder(64)
    if name == "minilm":
        from memory_core.embedding.minilm import MiniLMEmbedder

        # one torch thread: the runs embed a few texts at a time, and on a busy machine
        # a second thread waiting for a core costs more than it saves; the same vectors
        # on every machine (docs/decisions/010-demo-build-speed.md)
        embed = MiniLMEmbedder(cache_dir=str(cache_dir) if cache_dir else None, threads=1)
        if shipped:
            from sample_data import vectors

            known = vectors.load()
            embed.prime(known.texts, known.vectors)
        return embed
    raise InvalidInputError(f"unknown embedder {name!r}; choose minilm or hashing")


def make_memory(storage: Storage, embed: Embedder, profile: dict[str, Any],
                clock: DemoClock) -> AgentMemory:
    recall = RecallConfig(**profile["recall"]) if "recall" in profile else None
    wm = None
    if "working_memory" in profile:
        w = profile["working_memory"]
        wm = WorkingMemoryConfig(schema=SCHEMAS[w["schema"]], scope=w.get("scope", "thread"))
    om = None
    if "observational" in profile:
        from memory_core.models.summarizer import ExtractiveSummarizer

        om = ObservationalConfig(model=ExtractiveSummarizer(),
                                 token_threshold=profile["observational"]["token_threshold"])
    return AgentMemory(storage=storage, embed=embed, recent_n=profile["recent_n"],
                       recall=recall, working_memory=wm, observational_memory=om, clock=clock,
                       token_budget=profile.get("token_budget"))


def _history_script(run_id: str, turn: Turn) -> list[ModelResponse]:
    script = []
    if turn.tool is not None:
        name, args = turn.tool
        script.append(ModelResponse(tool_calls=[ToolCallPart(id=f"call-{run_id}", name=name,
                                                             args=args)]))
    script.append(ModelResponse(text=turn.reply))
    return script


def make_model(name: str, embed: Embedder,
               environ: Mapping[str, str] | None = None) -> Model:
    """The model that answers the question turns: ``reader`` (the offline reader) or
    ``openai`` (the OpenAI-compatible server the ``MEMWB_OPENAI_*`` variables configure)."""
    if name == "reader":
        from memory_core.models.reader import ReaderModel

        return ReaderModel(embed=embed)
    if name == "openai":
        from memory_core.models.openai_chat import OpenAIChatModel

        return OpenAIChatModel.from_env(environ)
    raise InvalidInputError(f"unknown demo model {name!r}; choose {' or '.join(MODELS)}")


def play_scenario(storage: Storage, scenario: Scenario, embed: Embedder, clock: DemoClock,
                  progress: Progress, start: datetime, model: Model | None = None,
                  meter: BuildProgress | None = None) -> list[str]:
    """Plays one scenario (question turns answered by ``model``, default the offline
    reader); returns the run ids it wrote. ``progress`` is told each thread played, or
    ``meter`` (when given) each run."""
    playback = PlaybackModel()
    tools = [TOOLS[n] for n in scenario.tools]
    agents = {scenario.agent: Agent(name=scenario.agent, instructions=scenario.instructions,
                                    model=model or make_model("reader", embed), tools=tools),
              f"{scenario.agent}:playback": Agent(name=f"{scenario.agent}:playback",
                                                  instructions=scenario.instructions,
                                                  model=playback, tools=tools)}
    runners = {"default": Runner(storage, agents, memory=make_memory(
        storage, embed, scenario.memory, clock), clock=clock)}
    for name, profile in scenario.profiles.items():
        runners[name] = Runner(storage, agents, memory=make_memory(storage, embed, profile,
                                                                  clock), clock=clock)
    run_ids: list[str] = []
    for t_index, thread in enumerate(scenario.threads):
        clock.jump_to(start + timedelta(days=9 * t_index))
        storage.memory.create_thread(thread.thread_id, resource_id=scenario.resource_id,
                                     title=thread.title)
        for i, turn in enumerate(thread.turns):
            if isinstance(turn, Legacy):
                _store_legacy(runners["default"], thread.thread_id, scenario.resource_id,
                              turn, clock)
                continue
            run_id = turn.run_id or f"{thread.thread_id}-t{i:02d}"
            runner = runners[turn.memory or "default"]
            prompt = [Message(role="user", content=turn.user, metadata=turn.metadata)]
            if turn.reply is not None:
                playback.script = _history_script(run_id, turn)
                agent = f"{scenario.agent}:playback"
            else:
                agent = scenario.agent
            runner.run(agent, run_id=run_id, thread_id=thread.thread_id,
                       resource_id=scenario.resource_id, prompt=prompt)
            run_ids.append(run_id)
            if meter is not None:
                meter.run_done(thread.thread_id)
        if meter is not None:
            meter.thread_done(thread.thread_id)
        else:
            progress(f"  {scenario.key}: {thread.thread_id} ({len(thread.turns)} turns)")
    return run_ids


def _store_legacy(runner: Runner, thread_id: str, resource_id: str, turn: Legacy,
                  clock: DemoClock) -> None:
    parts: list[Part] = [TextPart(text=turn.text)]
    if turn.tool_call is not None:
        cid, name, args = turn.tool_call
        parts.append(ToolCallPart(id=cid, name=name, args=args))
    assert runner.memory is not None
    runner.memory.append(thread_id, [Message(role=turn.role, content=parts,
                                             metadata={"source": "legacy-ticket-system"})],
                         resource_id, created_at=clock())


def build_into(storage: Storage, clock: DemoClock, *, embedder: str = "minilm",
               progress: Progress = print, cache_dir: Path | None = None,
               only: list[str] | None = None, model: str = "reader",
               environ: Mapping[str, str] | None = None,
               embed: Embedder | None = None) -> list[str]:
    """Play every scenario (or those whose key is in ``only``) into ``storage``;
    ``clock`` must be the storage's clock too. ``model`` answers the question turns:
    ``reader`` or ``openai`` (configured by the ``MEMWB_OPENAI_*`` variables in
    ``environ``, default os.environ). ``embed``: an embedder of the kind ``embedder``
    names, made already (the vectors' writer passes one that records what it embeds)."""
    unknown = sorted(set(only or ()) - {s.key for s in SCENARIOS})
    if unknown:
        raise InvalidInputError(f"unknown scenario(s) {', '.join(map(repr, unknown))}; "
                                f"choose from {', '.join(s.key for s in SCENARIOS)}")
    # a server model is configured (or its missing variable named) before any work
    answerer = make_model(model, HashingEmbedder(8), environ) if model != "reader" else None
    chosen = [s for s in SCENARIOS if only is None or s.key in only]
    meter = BuildProgress(sum(run_count(s) for s in chosen), progress)
    embed = make_embedder(embedder, cache_dir) if embed is None else embed
    if embedder == "minilm":
        texts = scenario_texts(chosen)
        progress(f"the scenarios' {len(texts)} texts: their vectors shipped with the demo, "
                 "the model (loaded first) for any without one")
        embed(texts)  # in batches, up front: the runs find every stored text in its cache
        fresh = _model_texts(embed)
        progress(f"  {len(texts) - fresh} from the shipped vectors, {fresh} embedded by the "
                 f"model: {meter.elapsed():.0f} s elapsed; {meter.total} runs to play")
    meter.start_runs()
    run_ids: list[str] = []
    for scenario in chosen:
        n = SCENARIOS.index(scenario)
        progress(f"[{n + 1}/{len(SCENARIOS)}] {scenario.title} ({run_count(scenario)} runs)")
        run_ids += play_scenario(storage, scenario, embed, clock, progress,
                                 EPOCH + timedelta(days=40 * n), answerer, meter)
    if embedder == "minilm" and _model_texts(embed):
        progress(f"the model embedded {_model_texts(embed)} texts the shipped vectors do "
                 "not hold (to ship them: python -m sample_data.vectors --write)")
    return run_ids


def _model_texts(embed: Embedder) -> int:
    """How many texts the MiniLM embedder has had the model embed."""
    return int(getattr(embed, "texts_embedded", 0))


def run_count(scenario: Scenario) -> int:
    """How many runs playing ``scenario`` makes (one a user turn)."""
    return sum(1 for t in scenario.threads for x in t.turns if isinstance(x, Turn))


def scenario_texts(scenarios: list[Scenario]) -> list[str]:
    """The texts the scenarios store or ask with, once each in the order they come:
    user turns (also the recall queries), scripted replies, legacy messages."""
    texts: dict[str, None] = {}
    for scenario in scenarios:
        for thread in scenario.threads:
            for turn in thread.turns:
                said = [turn.text] if isinstance(turn, Legacy) else [turn.user, turn.reply]
                texts.update((t, None) for t in said if t)
    return list(texts)


def build_demo(path: Path | str, *, embedder: str = "minilm", model: str = "reader",
               progress: Progress = print) -> Path:
    """Write the demo database to ``path`` (replacing it). It is built in a temporary
    file and moved into place, so a failed build never leaves half a database."""
    from memory_core.storage.duckdb import DuckDBStorage

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    cache = path.parent / ".embed_cache"
    with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
        tmp_db = Path(tmp) / path.name
        clock = DemoClock()
        storage = DuckDBStorage(str(tmp_db), clock=clock)
        try:
            with storage.session():
                build_into(storage, clock, embedder=embedder, progress=progress,
                           cache_dir=cache, model=model)
        finally:
            storage.close()
        shutil.move(str(tmp_db), str(path))
    progress(f"done: {path}")
    return path


def main(argv: list[str] | None = None) -> int:
    """``python -m sample_data.build --db PATH [--embedder E] [--model M]``: what
    ``memwb demo`` runs (it checks the target first), in its own process so the library
    never imports the demo data. Errors are one ``error:`` line and exit code 1."""
    import argparse
    import sys

    from memory_core.errors import MemoryCoreError

    parser = argparse.ArgumentParser(prog="python -m sample_data.build")
    parser.add_argument("--db", required=True)
    parser.add_argument("--embedder", default="minilm", choices=("minilm", "hashing"))
    parser.add_argument("--model", default="reader", choices=("reader", "openai"))
    args = parser.parse_args(argv)
    # progress is ours: no "Loading weights" bar from the model's libraries in between
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    try:
        build_demo(args.db, embedder=args.embedder, model=args.model,
                   progress=lambda msg: print(msg, file=sys.stderr, flush=True))
    except (MemoryCoreError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
