"""The workbench's one services factory: which database to open (sidebar, MEMWB_DB,
``--db``, demo default), opening it read-only, and cached read models keyed by its URL.

Pages call the ``cached_*`` functions here and never touch storage or SQL themselves.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import streamlit as st

from memory_core import views
from memory_core.errors import InvalidInputError, MemoryCoreError, NotFoundError
from memory_core.storage.base import Storage

if TYPE_CHECKING:  # the analysis modules load on first use, keeping page starts fast
    from memory_core.analysis.counterfactual import (
        AttributionItem,
        CounterfactualResult,
        VariantOptions,
    )
    from memory_core.analysis.diff import RunDiff
    from memory_core.analysis.forgotten import Explanation, LifelinePoint
    from memory_core.analysis.timeline import Timeline
    from memory_core.journal.seal import VerifyReport
    from memory_core.models.base import Model
    from memory_core.provenance import Memctx

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


READ_ONLY_VAR = "MEMWB_READ_ONLY"  # "1" serves every database without writes
READ_ONLY_REASON = ("This workbench was started read-only (`memwb ui --read-only`): "
                    "counterfactual replays, which write to the run's journal, are off.")


@dataclass(frozen=True)
class Served:
    """The databases this workbench serves, by name (fixed at start), and whether it may
    write to them."""

    databases: dict[str, str]
    read_only: bool


def served_from(argv: Sequence[str], env: Mapping[str, str]) -> Served:
    """``--db`` (repeatable; after ``--`` on the streamlit command line), else
    MEMWB_DB, else the demo database; a directory serves every database in it.
    ``--read-only`` (or MEMWB_READ_ONLY=1) turns writes off."""
    from memory_core.storage.url import catalog

    # no abbreviations: the test runner's own flags must never read as ours
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument("--db", action="append", default=[])
    parser.add_argument("--read-only", action="store_true")
    known, _ = parser.parse_known_args(list(argv))
    specs = [str(d) for d in known.db if str(d).strip()]
    if not specs:
        specs = [env[ENV_VAR]] if env.get(ENV_VAR, "").strip() else [str(demo_path())]
    read_only = bool(known.read_only) or env.get(READ_ONLY_VAR, "").lower() in (
        "1", "true", "yes")
    return Served(databases=catalog(specs), read_only=read_only)


def served() -> Served:
    """What this process serves (from its command line and environment); a directory
    is scanned once, again after Refresh."""
    env = {k: os.environ[k] for k in (ENV_VAR, READ_ONLY_VAR) if k in os.environ}
    return _served(tuple(sys.argv[1:]), tuple(sorted(env.items())))


@functools.lru_cache(maxsize=16)
def _served(argv: tuple[str, ...], env: tuple[tuple[str, str], ...]) -> Served:
    return served_from(argv, dict(env))


def _missing_file_message(path: str) -> str:
    msg = f"database file '{path}' does not exist"
    if Path(path).as_posix().endswith(DEMO_DB):
        msg += "; build the demo database with `make demo` (from the project root)"
    return msg


def open_database(url: str) -> Storage:
    """Open one of the served databases: ``memory://name`` (registered in this
    process), or an existing Memory Workbench database (storage URL or file path),
    never creating or migrating anything: a foreign database is refused. DuckDB files
    open read-only, so an agent process can keep writing, with a short lock wait that
    keeps the page responsive. Raises NotFoundError / InvalidInputError naming the
    bad value."""
    from memory_core.storage.url import file_of, open_existing, resolve_existing

    url = url.strip()
    if url.startswith(MEMORY_SCHEME):
        name = url[len(MEMORY_SCHEME):]
        with _registry_lock:
            storage = _registry.get(name)
        if storage is None:
            raise NotFoundError(f"in-memory database '{url}' is not registered in this process")
        return storage
    try:
        resolved = resolve_existing(url)
    except NotFoundError:
        target = file_of(url)
        raise NotFoundError(_missing_file_message(target[1] if target else url)) from None
    target = file_of(resolved)
    kwargs: dict[str, float] = {}
    if target is not None and target[0] == "duckdb":
        kwargs["lock_timeout"] = LOCK_TIMEOUT_SECONDS
    return open_existing(resolved, read_only=True, **kwargs)


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
    _served.cache_clear()  # a served directory may hold new databases


def current_name() -> str:
    """The name of the served database in use (the sidebar's choice, or ``?db=``)."""
    databases = served().databases
    value = st.session_state.get("db")
    if isinstance(value, str) and value in databases:
        return value
    return next(iter(databases))


def current_url() -> str:
    return served().databases[current_name()]


def read_only() -> bool:
    return served().read_only


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
def cached_verification(url: str, run_id: str) -> VerifyReport:
    """The run checked against its seal (journal/seal.py): the inspector's badge."""
    from memory_core.journal.seal import verify_run

    with _batch(url) as storage:
        return verify_run(storage, run_id)


@st.cache_data(ttl=CACHE_TTL_SECONDS, show_spinner=False)
def cached_variant_options(url: str, run_id: str) -> VariantOptions:
    from memory_core.analysis.counterfactual import variant_options

    with _batch(url) as storage:
        return variant_options(storage, run_id)


def query_param(name: str) -> str | None:
    value: object = st.query_params.get(name)
    return str(value) if value not in (None, "") else None


# -- analysis (compare, counterfactual, why forgotten, timeline, story) ----------------
@st.cache_data(ttl=CACHE_TTL_SECONDS, show_spinner=False)
def cached_diff(url: str, run_a: str, run_b: str) -> RunDiff:
    from memory_core.analysis.diff import diff_runs

    with _batch(url) as storage:
        return diff_runs(storage, run_a, run_b)


@st.cache_data(ttl=CACHE_TTL_SECONDS, show_spinner=False)
def cached_why(url: str, run_id: str, thread_id: str | None, seq: int | None,
               text: str | None) -> Explanation:
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
def cached_lifeline(url: str, thread_id: str, seq: int,
                    runs_of: str | None = None) -> list[LifelinePoint]:
    """The message's fate across the runs of its thread (or of ``runs_of``)."""
    from memory_core.analysis.forgotten import lifeline

    with _batch(url) as storage:
        return lifeline(storage, thread_id, seq, runs_of=runs_of)


@st.cache_data(ttl=CACHE_TTL_SECONDS, show_spinner=False)
def cached_timeline(url: str, thread_id: str) -> Timeline:
    from memory_core.analysis.timeline import composition_timeline

    with _batch(url) as storage:
        return composition_timeline(storage, thread_id)


@st.cache_data(ttl=CACHE_TTL_SECONDS, show_spinner=False)
def cached_counterfactuals(url: str, run_id: str) -> list[CounterfactualResult]:
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

    if read_only():
        raise InvalidInputError(READ_ONLY_REASON)
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


def demo_path() -> Path:
    p = Path(DEMO_DB)
    return p if p.is_absolute() else PROJECT_ROOT / p


def holds_runs(url: str, run_ids: Sequence[str]) -> bool:
    """Whether the database at ``url`` holds every one of ``run_ids`` (a story's runs)."""
    try:
        ids = {r.run_id for r in cached_runs(url)}
    except Exception:  # noqa: BLE001 - a missing or foreign database holds no runs
        return False
    return all(r in ids for r in run_ids)


@st.cache_data(ttl=CACHE_TTL_SECONDS, show_spinner=False)
def cached_memctx(url: str, run_id: str) -> Memctx | None:
    """A run's provenance record as recorded (the story reads the ranks and scores of
    what was left out)."""
    from memory_core.journal import RunReader

    with _batch(url) as storage:
        storage.runs.require_run(run_id)
        return RunReader(storage.runs, run_id).memctx()


def demo_target() -> str | None:
    """The served database the story page may build the demo into: the demo file, when
    it is one of the served databases and the workbench may write; else None."""
    from memory_core.storage.url import file_of

    if read_only():
        return None
    for name, url in served().databases.items():
        target = file_of(url)
        if target is not None and Path(target[1]).resolve() == demo_path().resolve():
            return name
    return None


def build_demo_database(progress: Callable[[str], None]) -> Path:
    """Build the demo database in place (MiniLM unless MEMWB_DEMO_EMBEDDER says
    otherwise) and drop cached handles so the pages open the new file. Only into the
    served demo file (demo_target), and never over a file that is not a demo database."""
    from memory_core.cli import demo_refusal
    from sample_data.build import build_demo

    if demo_target() is None:
        raise InvalidInputError("the demo database is not among the databases this "
                                "workbench serves (or it was started read-only)")
    path = demo_path()
    if path.exists() and (refusal := demo_refusal(str(path))) is not None:
        raise InvalidInputError(f"refusing to overwrite '{path}': {refusal}")
    get_services.clear()  # our read-only handle must not hold the file being replaced
    built = build_demo(path, embedder=os.environ.get(DEMO_EMBEDDER_VAR) or "minilm",
                       progress=progress)
    refresh()
    return built


def run_counterfactual(url: str, run_id: str, *,
                       subtract: Literal["all"] | Sequence[tuple[str, int]] | None = None,
                       lanes: Sequence[str] = (), put_back: Sequence[tuple[str, int]] = (),
                       model: Model | None = None, reuse: bool = True) -> CounterfactualResult:
    """Replay ``run_id`` with the chosen edits (re-asking ``model``, default the one the
    run recorded); the result is journaled, so the cached reads are dropped afterwards.
    ``reuse=False`` asks the model again even when the journal holds this replay."""
    from memory_core.analysis.counterfactual import counterfactual

    try:
        with writable_storage(url) as storage:
            return counterfactual(storage, run_id, subtract=subtract, lanes=lanes,
                                  put_back=put_back, model=model, reuse=reuse)
    finally:
        after_write()


def run_attribution(url: str, run_id: str,
                    progress: Callable[[int, int], None] | None = None,
                    model: Model | None = None) -> list[AttributionItem]:
    """Leave-one-out over the run's recalled messages (each one a journaled
    counterfactual)."""
    from memory_core.analysis.counterfactual import attribution

    try:
        with writable_storage(url) as storage:
            return attribution(storage, run_id, progress=progress, model=model)
    finally:
        after_write()
