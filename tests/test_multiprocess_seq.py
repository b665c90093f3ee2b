"""Seq assignment is dense and atomic across processes: 4 processes × 250 single-row
appends to one thread give seqs exactly 0..999, on SQLite and on PostgreSQL."""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memory_core.storage.base import Storage
from memory_core.types import AppendRow, Message
from tests.pg_server import pg_dsn  # noqa: F401  (session fixture)

PROCS = 4
APPENDS = 250
THREAD = "shared"


def _worker(url: str, schema: str | None, worker: int, ready: Any, go: Any,
            out: Any) -> None:
    from memory_core.storage.url import open_storage

    kwargs: dict[str, Any] = {} if schema is None else {"schema": schema}
    with open_storage(url, **kwargs) as s:
        ready.put(worker)
        go.wait(60)
        seqs: list[int] = []
        for i in range(APPENDS):
            seqs += s.memory.append_messages(
                THREAD, [AppendRow(message=Message(content=f"w{worker}-{i}"))])
        out.put((worker, seqs))


def _run(url: str, schema: str | None, open_store: Callable[[], Storage]) -> None:
    with open_store() as s:
        s.memory.create_thread(THREAD)
    ctx = mp.get_context("spawn")
    ready, out, go = ctx.Queue(), ctx.Queue(), ctx.Event()
    procs = [ctx.Process(target=_worker, args=(url, schema, w, ready, go, out))
             for w in range(PROCS)]
    for p in procs:
        p.start()
    try:
        for _ in procs:  # every worker has its store open before anyone appends
            ready.get(timeout=120)
        go.set()
        returned = dict(out.get(timeout=300) for _ in procs)
    finally:
        for p in procs:
            p.join(60)
            if p.is_alive():
                p.kill()
    assert [p.exitcode for p in procs] == [0] * PROCS
    with open_store() as s:
        msgs = s.memory.get_messages(THREAD)
    assert [m.seq for m in msgs] == list(range(PROCS * APPENDS))
    by_seq = {m.seq: m.text() for m in msgs}
    for w, seqs in returned.items():
        # what each process was told matches what is stored, in its own order
        assert [by_seq[q] for q in seqs] == [f"w{w}-{i}" for i in range(APPENDS)]
        assert seqs == sorted(seqs)
    assert sorted(q for seqs in returned.values() for q in seqs) == list(range(PROCS * APPENDS))


@pytest.mark.slow
def test_sqlite_four_processes_get_dense_seqs(tmp_path: Path) -> None:
    from memory_core.storage.sqlite import SQLiteStorage

    path = tmp_path / "mp.sqlite"
    _run(f"sqlite://{path}", None, lambda: SQLiteStorage(path))


@pytest.mark.slow
@pytest.mark.postgres
def test_postgres_four_processes_get_dense_seqs(pg_dsn: str, tmp_path: Path) -> None:  # noqa: F811
    from memory_core.storage.postgres import PostgresStorage
    from tests.pg_server import schema_for

    schema = schema_for(pg_dsn, tmp_path)
    _run(pg_dsn, schema, lambda: PostgresStorage(pg_dsn, schema=schema))
