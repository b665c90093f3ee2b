"""Small helpers shared by the runner, replay, observational and composition tests:
a one-second-per-read clock and a journal read that must find its key."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def drop_observations(s: Any) -> None:
    """Delete every observation of a ``CoreStorage`` (``InMemoryStorage``) straight from
    its core, past the port: the observer's counters, derived from them, start over."""
    from memory_core.storage.core import OBSERVATIONS

    s.core.delete(OBSERVATIONS, [k for k, _ in s.core.scan(OBSERVATIONS)])


def prompt_texts(s: Any, run: str) -> list[tuple[str, str]]:
    """An imported run's prompt as (role, text): a tool message's text its result."""
    def text(content: Any) -> str:
        return content if isinstance(content, str) else "".join(
            str(p.get("text", p.get("result", ""))) for p in content)
    return [(i["message"]["role"], text(i["message"]["content"]))
            for i in jget(s, f"{run}:prompt")["items"]]


def jget(s: Any, key: str) -> Any:
    """A journal value that must exist."""
    value = s.runs.get(key)
    assert value is not None, key
    return value


class Tick:
    """A clock that advances one second per read, starting one second after ``start``."""

    def __init__(self, start: datetime = T0) -> None:
        self.t = start

    def __call__(self) -> datetime:
        self.t += timedelta(seconds=1)
        return self.t


def copy_run_with_model(storage: Any, source: str, run_id: str,
                        model: dict[str, Any], answer: str | None = None) -> str:
    """A copy of run ``source`` under ``run_id`` whose step records say ``model``
    answered them (past counterfactuals left out): how a test gets a run "made with"
    another model without a server. ``answer`` replaces the text of its one step and
    its output: what that other model answered."""
    from memory_core.types import RunRecord

    run = storage.runs.get_run(source)
    assert run is not None, source
    storage.runs.start_run(RunRecord(run_id=run_id, agent=run.agent, thread_id=run.thread_id,
                                     resource_id=run.resource_id, started_at=run.started_at))
    for key, value in storage.runs.list(f"{source}:"):
        if ":cf:" in key:
            continue
        if ":step:" in key:
            value = {**value, "model": model}
            if answer is not None:
                value["response"] = {**value["response"], "text": answer}
        if answer is not None and key == f"{source}:output":
            value = {**value, "text": answer}
        storage.runs.put_if_absent(run_id + key[len(source):], value)
    storage.runs.set_run_status(run_id, "completed")
    return run_id


def cf_records(s: Any, run_id: str) -> list[tuple[str, Any]]:
    """A run's counterfactual (and what-if) result records, raw: the records journaled
    below a result (the tools it ran, the model's answers) are not results."""
    prefix = f"{run_id}:cf:"
    return [(k, v) for k, v in s.runs.list(prefix) if ":" not in k[len(prefix):]]


def build_demo_file(path: str, scenarios: Sequence[Any]) -> str:
    """A DuckDB demo database at ``path`` holding only ``scenarios`` (hashing embedder),
    as the CLI tests use it."""
    import pytest

    import sample_data.build as build
    from memory_core.storage.duckdb import DuckDBStorage

    clock = build.DemoClock()
    storage = DuckDBStorage(path, clock=clock)
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(build, "SCENARIOS", list(scenarios))
            with storage.session():
                build.build_into(storage, clock, embedder="hashing", progress=lambda _: None)
    finally:
        storage.close()
    return path
