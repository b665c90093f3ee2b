"""The workbench's one services factory: which database to open (sidebar, MEMWB_DB,
``--db``, demo default), opening it read-only, and cached read models keyed by its URL.

Pages call the ``cached_*`` functions here and never touch storage or SQL themselves.
"""

from __future__ import annotations

import argparse
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import streamlit as st

from memory_core import views
from memory_core.errors import InvalidInputError, MemoryCoreError, NotFoundError
from memory_core.storage.base import Storage

ENV_VAR = "MEMWB_DB"
DEMO_DB = "sample_data/out/demo.duckdb"
MEMORY_SCHEME = "memory://"
CACHE_TTL_SECONDS = 10
LOCK_TIMEOUT_SECONDS = 5.0
PROJECT_ROOT = Path(__file__).resolve().parents[1]

# memory://<name> databases: storages a test (or an embedding program) hands to the
# workbench in-process, since an in-memory store cannot be reopened by URL
_registry: dict[str, Storage] = {}
_registry_lock = threading.Lock()


def register_storage(name: str, storage: Storage) -> str:
    """Make ``storage`` reachable as ``memory://<name>``; returns that URL."""
    if not name or "/" in name:
        raise InvalidInputError(f"memory database name must be a non-empty word, got {name!r}")
    with _registry_lock:
        _registry[name] = storage
    return f"{MEMORY_SCHEME}{name}"


def unregister_storage(name: str) -> None:
    with _registry_lock:
        _registry.pop(name, None)


def default_database(argv: Sequence[str] | None = None,
                     env: Mapping[str, str] | None = None) -> str:
    """MEMWB_DB, else ``--db`` (after ``--`` on the streamlit command line), else the
    demo database."""
    env = os.environ if env is None else env
    if env.get(ENV_VAR):
        return env[ENV_VAR]
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--db")
    known, _ = parser.parse_known_args(list(argv) if argv is not None else [])
    if known.db:
        return str(known.db)
    return DEMO_DB


def _missing_file_message(path: str) -> str:
    msg = f"database file '{path}' does not exist"
    if Path(path).as_posix().endswith(DEMO_DB):
        msg += "; build the demo database with `make demo` (from the project root)"
    else:
        msg += "; give the path of an existing DuckDB file, or a duckdb:/// URL"
    return msg


def _resolve_path(path: str) -> Path:
    p = Path(path).expanduser()
    # the demo default is relative to the project, wherever streamlit was started
    if not p.is_absolute() and not p.exists() and (PROJECT_ROOT / p).exists():
        return PROJECT_ROOT / p
    return p


def open_database(url: str) -> Storage:
    """Open the database a user typed: ``memory://name`` (registered in this process),
    a storage URL or a DuckDB file path. DuckDB files open read-only, so an agent
    process can keep writing, with a short lock wait that keeps the page responsive.
    Raises NotFoundError / InvalidInputError naming the bad value."""
    from memory_core.storage.url import file_of, open_existing

    url = url.strip()
    if not url:
        raise InvalidInputError("no database given: type a DuckDB file path or a storage URL")
    if url.startswith(MEMORY_SCHEME):
        name = url[len(MEMORY_SCHEME):]
        with _registry_lock:
            storage = _registry.get(name)
        if storage is None:
            raise NotFoundError(f"in-memory database '{url}' is not registered in this process")
        return storage
    target = file_of(url)
    kwargs: dict[str, Any] = {}
    if target is not None and target[0] == "duckdb":
        url = str(_resolve_path(target[1]))
        kwargs["lock_timeout"] = LOCK_TIMEOUT_SECONDS
    try:
        return open_existing(url, read_only=True, **kwargs)
    except NotFoundError:
        raise NotFoundError(_missing_file_message(target[1] if target else url)) from None


@dataclass
class Services:
    """What the pages share for one database."""

    url: str
    storage: Storage


def _release(services: Services) -> None:
    # registered in-memory storages belong to whoever registered them
    if not services.url.startswith(MEMORY_SCHEME):
        try:
            services.storage.close()
        except Exception:  # noqa: BLE001 - closing a stale handle must never break a page
            pass


@st.cache_resource(show_spinner=False, on_release=_release)
def get_services(url: str) -> Services:
    """The one place a database is opened; cached per URL until Refresh."""
    return Services(url=url, storage=open_database(url))


def refresh() -> None:
    """Drop every cached read and reopen the database, so new runs appear."""
    st.cache_data.clear()
    get_services.clear()


def current_url() -> str:
    value = st.session_state.get("db")
    return str(value) if value else default_database()


def current_storage() -> Storage:
    return get_services(current_url()).storage


def friendly_error(e: Exception) -> str:
    """The message a page shows for an error (never a traceback)."""
    if isinstance(e, MemoryCoreError):
        return str(e)
    return f"{type(e).__name__}: {e}"


@contextmanager
def _batch(url: str) -> Iterator[Storage]:
    """The storage, held open for one page's batch of reads when the adapter can."""
    storage = get_services(url).storage
    session = getattr(storage, "session", None)
    if session is None:
        yield storage
        return
    with session():
        yield storage


# -- cached read models ---------------------------------------------------------------
@st.cache_data(ttl=CACHE_TTL_SECONDS, show_spinner=False)
def cached_resources(url: str) -> list[str]:
    with _batch(url) as storage:
        return views.list_resources(storage)


@st.cache_data(ttl=CACHE_TTL_SECONDS, show_spinner=False)
def cached_thread_summaries(url: str, resource: str | None) -> list[views.ThreadSummary]:
    with _batch(url) as storage:
        return views.thread_summaries(storage, resource)


@st.cache_data(ttl=CACHE_TTL_SECONDS, show_spinner=False)
def cached_thread_messages(url: str, thread_id: str, page: int,
                           page_size: int) -> views.MessagePage:
    with _batch(url) as storage:
        return views.thread_messages(storage, thread_id, page, page_size)


@st.cache_data(ttl=CACHE_TTL_SECONDS, show_spinner=False)
def cached_search(url: str, resource: str | None, text: str) -> list[views.SearchHit]:
    with _batch(url) as storage:
        return views.search(storage, resource, text)


@st.cache_data(ttl=CACHE_TTL_SECONDS, show_spinner=False)
def cached_runs(url: str, thread_id: str | None = None) -> list[views.RunSummary]:
    with _batch(url) as storage:
        return views.list_runs(storage, thread_id=thread_id)


@st.cache_data(ttl=CACHE_TTL_SECONDS, show_spinner=False)
def cached_run_view(url: str, run_id: str) -> views.RunView:
    with _batch(url) as storage:
        return views.run_view(storage, run_id)


@st.cache_data(ttl=CACHE_TTL_SECONDS, show_spinner=False)
def cached_variant_options(url: str, run_id: str) -> Any:
    from memory_core.analysis.counterfactual import variant_options

    with _batch(url) as storage:
        return variant_options(storage, run_id)


def query_param(name: str) -> str | None:
    value: Any = st.query_params.get(name)
    return str(value) if value not in (None, "") else None


# -- analysis (compare, counterfactual, why forgotten, timeline, story) ----------------
@st.cache_data(ttl=CACHE_TTL_SECONDS, show_spinner=False)
def cached_diff(url: str, run_a: str, run_b: str) -> Any:
    from memory_core.analysis.diff import diff_runs

    with _batch(url) as storage:
        return diff_runs(storage, run_a, run_b)


@st.cache_data(ttl=CACHE_TTL_SECONDS, show_spinner=False)
def cached_why(url: str, run_id: str, thread_id: str | None, seq: int | None,
               text: str | None) -> Any:
    """why_forgotten for a (thread, seq) ref, or for a phrase when ``text`` is given."""
    from memory_core.analysis.forgotten import why_forgotten

    target: tuple[str, int] | str
    if text is not None:
        target = text
    elif thread_id is not None and seq is not None:
        target = (thread_id, seq)
    else:
        raise InvalidInputError("pick a message or type a phrase to look for")
    with _batch(url) as storage:
        return why_forgotten(storage, run_id, target)


@st.cache_data(ttl=CACHE_TTL_SECONDS, show_spinner=False)
def cached_lifeline(url: str, thread_id: str, seq: int, runs_of: str | None = None) -> Any:
    """The message's fate across the runs of its thread (or of ``runs_of``)."""
    from memory_core.analysis.forgotten import lifeline

    with _batch(url) as storage:
        return lifeline(storage, thread_id, seq, runs_of=runs_of)


@st.cache_data(ttl=CACHE_TTL_SECONDS, show_spinner=False)
def cached_timeline(url: str, thread_id: str) -> Any:
    from memory_core.analysis.timeline import composition_timeline

    with _batch(url) as storage:
        return composition_timeline(storage, thread_id)


@st.cache_data(ttl=CACHE_TTL_SECONDS, show_spinner=False)
def cached_counterfactuals(url: str, run_id: str) -> Any:
    from memory_core.analysis.counterfactual import list_counterfactuals

    with _batch(url) as storage:
        return list_counterfactuals(storage, run_id)


@st.cache_data(ttl=CACHE_TTL_SECONDS, show_spinner=False)
def cached_scope_messages(url: str, run_id: str) -> list[views.SearchHit]:
    """Messages a run could have been given: its thread's, then its resource's other
    threads' (seq order within each thread), for pickers."""
    with _batch(url) as storage:
        run = storage.runs.require_run(run_id)
        threads: list[str] = [run.thread_id] if run.thread_id else []
        if run.resource_id:
            threads += [t.id for t in storage.memory.list_threads(run.resource_id)
                        if t.id not in threads]
        out: list[views.SearchHit] = []
        for tid in threads:
            thread = storage.memory.get_thread(tid)
            for m in storage.memory.get_messages(tid):
                out.append(views.SearchHit(
                    thread_id=tid, thread_title=thread.title if thread else None, seq=m.seq,
                    role=m.role, text=views.render_text(m), created_at=m.created_at,
                    page=views.page_of_seq(m.seq)))
        return out


@contextmanager
def writable_storage(url: str) -> Iterator[Storage]:
    """A storage that may write (counterfactuals journal their results): the shared
    one when it is writable, else a short-lived writable handle on the same DuckDB file,
    closed right after so an agent process can go on writing."""
    from memory_core.storage.duckdb import DuckDBStorage

    storage = get_services(url).storage
    if not isinstance(storage, DuckDBStorage) or not storage.read_only:
        yield storage
        return
    writer = DuckDBStorage(storage.path, lock_timeout=LOCK_TIMEOUT_SECONDS)
    try:
        yield writer
    finally:
        writer.close()


def after_write() -> None:
    """Forget cached reads after a write, keeping the opened database."""
    st.cache_data.clear()


# -- the demo database (story page) ----------------------------------------------------
DEMO_EMBEDDER_VAR = "MEMWB_DEMO_EMBEDDER"  # "hashing" builds a quick demo (tests)
STORY_RUNS = ("support-3-forgot", "support-3-fixed")


def demo_path() -> Path:
    p = Path(DEMO_DB)
    return p if p.is_absolute() else PROJECT_ROOT / p


def has_story(url: str) -> bool:
    """Whether the database at ``url`` holds the demo's support story runs."""
    try:
        ids = {r.run_id for r in cached_runs(url, "support-3")}
    except Exception:  # noqa: BLE001 - a missing or foreign database has no story
        return False
    return all(r in ids for r in STORY_RUNS)


def build_demo_database(progress: Any) -> Path:
    """Build the demo database in place (MiniLM unless MEMWB_DEMO_EMBEDDER says
    otherwise) and drop cached handles so the pages open the new file."""
    from sample_data.build import build_demo

    path = demo_path()
    get_services.clear()  # our read-only handle must not hold the file being replaced
    built = build_demo(path, embedder=os.environ.get(DEMO_EMBEDDER_VAR) or "minilm",
                       progress=progress)
    refresh()
    return built


def run_counterfactual(url: str, run_id: str, *, subtract: Any = None,
                       lanes: Sequence[str] = (), put_back: Sequence[tuple[str, int]] = (),
                       model: Any = None) -> Any:
    """Replay ``run_id`` with the chosen edits (re-asking ``model``, default the one the
    run recorded); the result is journaled, so the cached reads are dropped afterwards."""
    from memory_core.analysis.counterfactual import counterfactual

    try:
        with writable_storage(url) as storage:
            return counterfactual(storage, run_id, subtract=subtract, lanes=lanes,
                                  put_back=put_back, model=model)
    finally:
        after_write()


def run_attribution(url: str, run_id: str, progress: Any = None, model: Any = None) -> Any:
    """Leave-one-out over the run's recalled messages (each one a journaled
    counterfactual)."""
    from memory_core.analysis.counterfactual import attribution

    try:
        with writable_storage(url) as storage:
            return attribution(storage, run_id, progress=progress, model=model)
    finally:
        after_write()
