"""What keeps the workbench's pages fast on a many-run database (bench/bench_pages.py
measures the seconds; nothing here asserts a time): the Threads page asks the store a
fixed number of questions however many runs share the resource, the pages import no
pandas and no embedding model, and the read-only DuckDB connection outlives a page run
while a writing process still gets the file when it asks."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from app import services
from app.components import RUN_PAGE, THREADS_PAGE, WHY_PAGE
from bench.runs_db import plan, play
from memory_core.analysis import views
from memory_core.errors import StorageBusyError
from memory_core.storage.base import Storage
from memory_core.storage.duckdb import DuckDBStorage
from memory_core.storage.duckdb_file import holds_file
from memory_core.storage.inmemory import InMemoryStorage
from tests.app.conftest import ENTRY, TIMEOUT
from tests.app.fixture_db import RUN_1, THREAD

ROOT = Path(__file__).resolve().parents[2]
SHOWN = "thread-00000"  # the first thread of every runs_db plan, on resource user-0


class _Counted:
    """A port whose method calls are counted (by name) before they reach ``inner``."""

    def __init__(self, inner: Any, calls: Counter[str]) -> None:
        self._inner, self._calls = inner, calls

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if not callable(attr):
            return attr

        def counted(*args: Any, **kwargs: Any) -> Any:
            self._calls[name] += 1
            return attr(*args, **kwargs)

        return counted


class CountingStorage(Storage):
    def __init__(self, inner: Storage) -> None:
        self.calls: Counter[str] = Counter()
        self.memory = _Counted(inner.memory, self.calls)  # type: ignore[assignment]
        self.runs = _Counted(inner.runs, self.calls)  # type: ignore[assignment]


def _open(page: str, **query: str) -> AppTest:
    """A new session opening ``page`` with ``query`` in its URL."""
    at = AppTest.from_file(str(ENTRY), default_timeout=TIMEOUT)
    at.switch_page(page)
    at.query_params.update(query)
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def _runs_db(n_runs: int) -> InMemoryStorage:
    storage = InMemoryStorage()
    play(storage, plan(n_runs, resources=1))  # every thread but a few on user-0
    return storage


def _threads_page_calls(storage: InMemoryStorage, name: str) -> Counter[str]:
    counting = CountingStorage(storage)
    url = services.register_storage(name, counting)
    try:
        at = _open(THREADS_PAGE, db=name, thread=SHOWN)
        assert not at.error
        assert len(at.get("page_link")) > 0  # the messages link the runs that used them
        return counting.calls
    finally:
        services.unregister_storage(url.removeprefix(services.MEMORY_SCHEME))


@pytest.fixture()
def two_sizes() -> Iterator[tuple[InMemoryStorage, InMemoryStorage]]:
    small, large = _runs_db(12), _runs_db(40)
    assert len(large.runs.list_runs(resource_id="user-0")) >= 3 * len(
        small.runs.list_runs(resource_id="user-0"))
    yield small, large


def test_the_threads_page_asks_the_same_questions_whatever_the_run_count(
        two_sizes: tuple[InMemoryStorage, InMemoryStorage],
        monkeypatch: pytest.MonkeyPatch) -> None:
    small, large = two_sizes
    counts = []
    for n, storage in enumerate((small, large)):
        name = f"speed{n}"
        monkeypatch.setenv(services.ENV_VAR, f"{services.MEMORY_SCHEME}{name}")
        counts.append(_threads_page_calls(storage, name))
    # every run of the resource is a candidate user of the thread's messages: their
    # records come in one read, not two per run; the questions of the runs it lists
    # (app/run_labels.py) in one more
    assert counts[0] == counts[1]
    assert counts[0]["get_many"] == 2 and counts[0]["get"] == 0


IMPORTS = """
import json, sys
from streamlit.testing.v1 import AppTest
at = AppTest.from_file({entry!r}, default_timeout=120)
for page, query in {visits!r}:
    at.switch_page(page)
    at.query_params.clear()
    at.query_params.update(query)
    at.run()
    assert not at.exception, [e.message for e in at.exception]
heavy = ("pandas", "torch", "sentence_transformers", "transformers")
print(json.dumps([m for m in heavy if m in sys.modules]))
"""


def test_pages_import_neither_pandas_nor_an_embedding_model(duckdb_copy: Path) -> None:
    # a fresh interpreter: what the pages import, not what other tests loaded
    visits = [(THREADS_PAGE, {"thread": THREAD}), (RUN_PAGE, {"run": RUN_1})]
    code = IMPORTS.format(entry=str(ENTRY), visits=visits)
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "MEMWB_DB": str(duckdb_copy),
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


WRITER = """
import sys
from memory_core.storage.duckdb import DuckDBStorage
from memory_core.types import AppendRow, Message
s = DuckDBStorage(sys.argv[1], lock_timeout=float(sys.argv[2]))
s.memory.append_messages(sys.argv[3], [AppendRow(message=Message(content="from the agent"))])
s.close()
print("wrote")
"""


def test_a_page_run_lets_the_file_go_for_a_writer(
        duckdb_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The workbench holds a DuckDB file only while a page is drawn: an agent writes
    right after, and the next page run reads what it wrote."""
    monkeypatch.setenv(services.ENV_VAR, str(duckdb_copy))
    _open(THREADS_PAGE, thread=THREAD)
    storage = services.get_services(str(duckdb_copy)).storage
    assert isinstance(storage, DuckDBStorage) and not holds_file(str(duckdb_copy))
    out = subprocess.run([sys.executable, "-c", WRITER, str(duckdb_copy), "5", THREAD],
                         cwd=ROOT, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "wrote", out.stderr[-3000:]
    services.after_write()
    assert storage.memory.get_tail(THREAD, 1)[0].text() == "from the agent"


def test_every_run_and_thread_is_kept_until_another_process_writes(
        duckdb_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The shared reads are keyed by the database's change token, not a 10 s life: on
    a million messages they take seconds, and nothing written means nothing to read
    again; a write by the agent's process is seen at the next script run."""
    monkeypatch.setenv(services.ENV_VAR, str(duckdb_copy))
    url = str(duckdb_copy)
    services.forget_reads()
    threads, runs = (services.cached_thread_summaries(url, None),
                     services.cached_runs(url))
    version = services.data_version(url)
    assert version is not None
    assert services.cached_thread_summaries(url, None) is threads
    assert services.cached_runs(url) is runs
    before = {t.thread_id: t.message_count for t in threads}
    out = subprocess.run([sys.executable, "-c", WRITER, str(duckdb_copy), "5", THREAD],
                         cwd=ROOT, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "wrote", out.stderr[-3000:]
    # no Refresh, no after_write: the handed-over file is a new version
    assert services.data_version(url) != version
    after = {t.thread_id: t.message_count for t in services.cached_thread_summaries(url, None)}
    assert after == {**before, THREAD: before[THREAD] + 1}
    # one version is kept a read: the old one was dropped (asked for, it is read again)
    assert services._shared_versioned("threads", url, None, version) is not threads
    services.forget_reads()


HOLDER = """
import sys, time
from memory_core.storage.duckdb import DuckDBStorage
s = DuckDBStorage(sys.argv[1], lock_timeout=60)
with s.session():
    s.memory.list_threads()
    print("holding", flush=True)
    time.sleep(60)
"""


def test_while_a_writer_holds_the_file_the_pages_show_what_was_read(
        duckdb_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An import holds the file for its whole session: the pages show every run and
    thread as last read instead of failing on the file (the other reads wait and say
    it is busy, as before)."""
    monkeypatch.setenv(services.ENV_VAR, str(duckdb_copy))
    monkeypatch.setattr(services, "LOCK_TIMEOUT_SECONDS", 0.5)
    url = str(duckdb_copy)
    services.forget_reads()
    runs = services.cached_runs(url)
    version = services.data_version(url)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(duckdb_copy)], cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "holding", holder.stderr.read()[-3000:]
        # the version is read off the file's stamps, without opening it
        assert services.data_version(url) == version
        assert services.cached_runs(url) is runs
        services.forget_reads()  # nothing read before: the busy file is said
        with pytest.raises(StorageBusyError):
            services.cached_runs(url)
    finally:
        holder.kill()
        holder.communicate(timeout=60)
        services.forget_reads()


def test_a_store_without_a_change_token_keeps_its_reads_a_while() -> None:
    storage = InMemoryStorage()
    url = services.register_storage("no-token", storage)
    try:
        assert services.data_version(url) is None
        storage.memory.create_thread("t")
        threads = services.cached_thread_summaries(url, None)
        storage.memory.create_thread("u")
        assert services.cached_thread_summaries(url, None) is threads  # CACHE_TTL_SECONDS
        services.after_write()
        assert len(services.cached_thread_summaries(url, None)) == 2
    finally:
        services.unregister_storage("no-token")
        services.forget_reads()


MINILM_STATUS = services.EMBEDDING_MODEL_STATUS.format(name="all-MiniLM-L6-v2")


def test_an_analysis_that_may_load_the_model_runs_behind_its_status(
        spinner_log: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    recorded = {"r-minilm": "all-MiniLM-L6-v2", "r-hash": "hashing-64", "r-none": None}
    monkeypatch.setattr(services, "cached_run_embedder", lambda _url, run: recorded[run])
    loaded = {"now": False}
    monkeypatch.setattr(services, "_model_loaded", lambda _name: loaded["now"])
    for run in ("r-hash", "r-none"):
        with services.embedding_status("memory://x", run):
            pass
    assert spinner_log == []  # nothing to load
    with services.embedding_status("memory://x", "r-minilm"):
        pass  # answered without the model: it stays unloaded
    with services.embedding_status("memory://x", "r-minilm"):
        loaded["now"] = True  # this analysis loaded it
    with services.embedding_status("memory://x", "r-minilm"):
        pass
    assert spinner_log == [MINILM_STATUS, MINILM_STATUS]


def test_why_forgotten_explains_a_message_behind_the_model_status(
        populated: Any, spinner_log: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    # the run recorded a model embedder that is not loaded yet: re-scoring a message
    # recall did not rank would load it, so the explanation runs behind the status
    monkeypatch.setattr(services, "cached_run_embedder",
                        lambda _url, _run: "all-MiniLM-L6-v2")
    monkeypatch.setattr(services, "_model_loaded", lambda _name: False)
    at = _open(WHY_PAGE, run=RUN_1)
    assert not at.error
    assert spinner_log == [MINILM_STATUS]


def test_every_run_and_thread_is_read_once_and_shared_not_copied() -> None:
    """Most pages read the database's every run and thread on every script run: the
    cached tuples are handed out as they are (st.cache_data unpickled a copy a read:
    0.1 s for 43,480 runs, three reads a page), and a write or Refresh drops them."""
    from datetime import UTC, datetime

    from memory_core.types import RunRecord

    storage = _runs_db(6)
    counting = CountingStorage(storage)
    url = services.register_storage("shared-reads", counting)
    try:
        runs = services.cached_runs(url)
        threads = services.cached_thread_summaries(url, None)
        assert isinstance(runs, views.Runs) and isinstance(threads, tuple)  # nothing to mutate
        assert services.cached_runs(url) is runs
        assert services.cached_thread_summaries(url, None) is threads
        # one read each: the summaries count runs by thread without reading every run
        assert (counting.calls["run_rows"], counting.calls["thread_runs"]) == (1, 1)
        storage.runs.start_run(RunRecord(run_id="late", agent="a", thread_id=None,
                                         status="running", started_at=datetime.now(UTC)))
        assert services.cached_runs(url) is runs  # within the cache's lifetime
        services.after_write()
        assert [r.run_id for r in services.cached_runs(url)] == [
            *(r.run_id for r in runs), "late"]
    finally:
        services.unregister_storage(url.removeprefix(services.MEMORY_SCHEME))
        services.forget_reads()
