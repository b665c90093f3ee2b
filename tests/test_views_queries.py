"""The Threads page's summaries read the threads and the runs once for all threads
(not once per thread, and no run record or message body), and say what reading them
thread by thread says."""

from __future__ import annotations

from typing import Any

from memory_core.analysis import views
from tests.app.fixture_db import RESOURCE, new_storage


class Counting:
    def __init__(self, inner: Any, names: tuple[str, ...]) -> None:
        self._inner, self._names = inner, names
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if name not in self._names:
            return attr

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(name)
            return attr(*args, **kwargs)
        return counted


def _one_by_one(storage: Any, resource: str | None) -> list[tuple[Any, ...]]:
    out = []
    for t in storage.memory.list_threads(resource):
        runs = storage.runs.list_runs(thread_id=t.id)
        tail = storage.memory.get_tail(t.id, 1)
        last = max([t.updated_at, *(m.created_at for m in tail),
                    *(r.finished_at or r.started_at for r in runs)])
        out.append((t.id, storage.memory.count_messages(t.id), len(runs), last))
    # newest first by that last activity (the store's order breaks ties)
    return sorted(out, key=lambda row: row[3], reverse=True)


def test_summaries_read_runs_and_counts_once_and_agree_with_per_thread_reads() -> None:
    storage = new_storage()
    for resource in (None, RESOURCE):
        expected = _one_by_one(storage, resource)
        runs = Counting(storage.runs, ("list_runs", "thread_runs"))
        memory = Counting(storage.memory, ("count_messages", "thread_stats", "get_tail",
                                           "get_messages_by_refs", "list_threads",
                                           "thread_activity"))
        storage.runs, storage.memory = runs, memory  # type: ignore[assignment]
        try:
            got = views.thread_summaries(storage, resource)
        finally:
            storage.runs, storage.memory = runs._inner, memory._inner
        assert [(s.thread_id, s.message_count, s.run_count, s.last_activity)
                for s in got] == expected
        assert runs.calls == ["thread_runs"]
        assert memory.calls == ["thread_activity"]
        assert any(s.run_count for s in got) and any(s.message_count for s in got)
