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
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

import streamlit as st

from memory_core.analysis import views
from memory_core.errors import (
    InvalidInputError,
    MemoryCoreError,
    NotFoundError,
    StorageBusyError,
)
from memory_core.storage.base import Storage

if TYPE_CHECKING:  # the analysis modules load on first use, keeping page starts fast
    from memory_core.analysis.counterfactual import (
        AttributionItem,
        CounterfactualResult,
        VariantOptions,
    )
    from memory_core.analysis.diff import RunDiff
    from memory_core.analysis.fates import Explanation
    from memory_core.analysis.forgotten import LifelinePoint
    from memory_core.analysis.timeline import Timeline
    from memory_core.journal.seal import VerifyReport
    from memory_core.models.base import Model
    from memory_core.provenance.record import Memctx

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
READ_ONLY_PIN_REASON = ("This workbench was started read-only (`memwb ui --read-only`): "
                        "keeping an answer, which writes a pin to the database, is off.")


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
    forget_reads()
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


def _held(storage: Storage) -> AbstractContextManager[None]:
    return storage.session()


@contextmanager
def page_reads() -> Iterator[None]:
    """Hold the database in use open for one run of a page, so its reads share one
    connection: a DuckDB file is otherwise opened again for every cached read (a
    connect costs more than most reads), and let go when the page is drawn so an agent
    can write. A database that cannot be opened is left to the page to report."""
    try:
        storage = current_storage()
    except Exception:  # noqa: BLE001 - the page shows the failure to open
        yield
        return
    with _held(storage):
        yield


@contextmanager
def _batch(url: str) -> Iterator[Storage]:
    """The storage, held open for one page's batch of reads when the adapter can."""
    storage = get_services(url).storage
    with _held(storage):
        yield storage


# -- cached read models ---------------------------------------------------------------
@st.cache_data(ttl=CACHE_TTL_SECONDS, show_spinner=False)
def cached_resources(url: str) -> list[str]:
    with _batch(url) as storage:
        return views.list_resources(storage)


# Every run and thread of a database: read by most pages on every script run. Cached as
# shared, immutable tuples (st.cache_resource), not copies: st.cache_data unpickles its
# value on every read, which for the 43,480 runs of an imported log of 100,000 messages
# took 0.1 s a read, three reads a page; a million messages, ten times that. And kept
# while the database is unchanged (keyed by ``data_version``), not CACHE_TTL_SECONDS:
# at a million messages they take seconds to read, and a user coming back to a page
# after ten seconds paid that again though nothing had been written.
SHARED_READ_TTL_SECONDS = 3600
SHARED_READ_ENTRIES = 16  # reads and databases kept at once (one version a read)


def data_version(url: str) -> Hashable | None:
    """What the shared reads of ``url`` are keyed by: the storage's change token, which
    changes whenever a write may have been committed since, by any process
    (``MemoryStore.change_token``); None where the adapter cannot tell (the in-memory
    store: those reads then live CACHE_TTL_SECONDS, as the others do)."""
    return get_services(url).storage.memory.change_token()


def cached_thread_summaries(url: str, resource: str | None
                            ) -> tuple[views.ThreadSummary, ...]:
    return cast("tuple[views.ThreadSummary, ...]", _shared("threads", url, resource))


def cached_runs(url: str) -> views.Runs:
    """Every run of the database, oldest first, looked up by id and by thread."""
    return cast("views.Runs", _shared("runs", url, None))


_SHARED_READS: dict[str, Callable[[Storage, str | None], Sequence[Any]]] = {
    "threads": lambda storage, resource: tuple(views.thread_summaries(storage, resource)),
    "runs": lambda storage, _: views.Runs(views.list_runs(storage)),
}


# the version each shared read was last given: one version is kept a read (each is up
# to half a gigabyte at a million messages), and it is what the pages show while the
# file is held by a writer that does not let go (an import's session)
_versions: dict[tuple[str, str, str | None], Hashable] = {}
_versions_lock = threading.Lock()


def _shared(read: str, url: str, arg: str | None) -> Sequence[Any]:
    key = (read, url, arg)
    try:
        version = data_version(url)
    except StorageBusyError:
        with _versions_lock:
            version = _versions.get(key)
        if version is None:
            raise
        return _shared_versioned(read, url, arg, version)  # as last read, if still kept
    if version is None:
        return _shared_a_while(read, url, arg)
    with _versions_lock:
        old, _versions[key] = _versions.get(key), version
    if old is not None and old != version:
        _shared_versioned.clear(read, url, arg, old)
    return _shared_versioned(read, url, arg, version)


def _read_shared(read: str, url: str, arg: str | None) -> Sequence[Any]:
    with _batch(url) as storage:
        return _SHARED_READS[read](storage, arg)


@st.cache_resource(ttl=SHARED_READ_TTL_SECONDS, max_entries=SHARED_READ_ENTRIES,
                   show_spinner=False)
def _shared_versioned(read: str, url: str, arg: str | None, version: Hashable
                      ) -> Sequence[Any]:
    return _read_shared(read, url, arg)


@st.cache_resource(ttl=CACHE_TTL_SECONDS, show_spinner=False)
def _shared_a_while(read: str, url: str, arg: str | None) -> Sequence[Any]:
    return _read_shared(read, url, arg)


@st.cache_data(ttl=CACHE_TTL_SECONDS, show_spinner=False)
def cached_thread_messages(url: str, thread_id: str, page: int, page_size: int,
                           through_seq: int | None = None) -> views.MessagePage:
    with _batch(url) as storage:
        return views.thread_messages(storage, thread_id, page, page_size,
                                     through_seq=through_seq)


@st.cache_data(ttl=CACHE_TTL_SECONDS, show_spinner=False)
def cached_search(url: str, resource: str | None, text: str) -> list[views.SearchHit]:
    with _batch(url) as storage:
        return views.search(storage, resource, text)


def forget_reads() -> None:
    """Drop every cached read (the shared ones too)."""
    st.cache_data.clear()
    _shared_versioned.clear()
    _shared_a_while.clear()
    with _versions_lock:
        _versions.clear()


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
def cached_fate(url: str, run_id: str, thread_id: str, seq: int) -> Explanation | None:
    """The fate of message (thread, seq) in a run, read from the run's record alone (its
    recorded near misses, no re-scoring): None when the message is not stored."""
    from memory_core.analysis.fates import explain_message
    from memory_core.journal import load_run

    with _batch(url) as storage:
        msgs = storage.memory.get_messages(thread_id, seqs=[seq]) \
            if storage.memory.get_thread(thread_id) is not None else []
        if not msgs:
            return None
        return explain_message(storage, load_run(storage, run_id), msgs[0], rescore=False)


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
def cached_scope_threads(url: str, run_id: str) -> list[tuple[str, str | None]]:
    """The threads whose messages a run could have been given, with their titles: its
    thread, then its resource's other threads (for the message picker's first step)."""
    with _batch(url) as storage:
        run = storage.runs.require_run(run_id)
        titles: dict[str, str | None] = {}
        if run.thread_id:
            own = storage.memory.get_thread(run.thread_id)
            titles[run.thread_id] = own.title if own else None
        if run.resource_id:  # one listing gives every title (no query per thread)
            for t in storage.memory.list_threads(run.resource_id):
                titles.setdefault(t.id, t.title)
        return list(titles.items())


@st.cache_data(ttl=CACHE_TTL_SECONDS, show_spinner=False)
def cached_thread_scope_messages(url: str, thread_id: str) -> list[views.SearchHit]:
    """One thread's messages in seq order, for the message picker's second step (a
    resource can hold thousands: the picker offers one thread's at a time)."""
    with _batch(url) as storage:
        thread = storage.memory.get_thread(thread_id)
        title = thread.title if thread else None
        return [views.SearchHit(thread_id=thread_id, thread_title=title, seq=m.seq,
                                role=m.role, text=views.render_text(m),
                                created_at=m.created_at, page=views.page_of_seq(m.seq))
                for m in storage.memory.get_messages(thread_id)]


@contextmanager
def writable_storage(url: str) -> Iterator[Storage]:
    """A storage that may write (counterfactuals journal their results): the shared
    one when it is writable, else a short-lived writable handle on the same DuckDB file,
    closed right after so an agent process can go on writing."""
    if read_only():
        raise InvalidInputError(READ_ONLY_REASON)
    with get_services(url).storage.writer(lock_timeout=LOCK_TIMEOUT_SECONDS) as storage:
        yield storage


def after_write() -> None:
    """Forget cached reads after a write, keeping the opened database."""
    forget_reads()


# -- regression suites: "keep this answer" (run inspector) ------------------------------
KEEP_UNCHANGED = {"kind": "unchanged"}


@st.cache_data(ttl=CACHE_TTL_SECONDS, show_spinner=False)
def cached_suites(url: str, run_id: str) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """The regression suites stored, by name, and those that pin ``run_id``, each with
    what the run must keep, in words (``memory_core.analysis.regress``)."""
    from memory_core.analysis.regress import list_suites, pins_of

    with _batch(url) as storage:
        names = list_suites(storage)
        return names, [(name, [e.describe() for e in pin.expectations])
                       for name in names for pin in pins_of(storage, name)
                       if pin.run_id == run_id]


def keep_answer(url: str, suite: str, run_id: str) -> bool:
    """Pin ``run_id`` to ``suite`` so that its answer must stay unchanged, keeping what
    an earlier pin of it there expects too; False when it was kept there already."""
    from memory_core.analysis.regress import pin_run, pins_of

    try:
        with writable_storage(url) as storage:
            pin = next((p for p in pins_of(storage, suite) if p.run_id == run_id), None)
            kept = list(pin.expectations) if pin is not None else []
            if any(e.kind == "unchanged" for e in kept):
                return False
            pin_run(storage, suite, run_id, [*kept, KEEP_UNCHANGED],
                    note=pin.note if pin is not None else None)
            return True
    finally:
        after_write()


# -- the demo database (story page) ----------------------------------------------------
DEMO_EMBEDDER_VAR = "MEMWB_DEMO_EMBEDDER"  # "hashing" builds a quick demo (tests)


def demo_path() -> Path:
    p = Path(DEMO_DB)
    return p if p.is_absolute() else PROJECT_ROOT / p


def holds_runs(url: str, run_ids: Sequence[str]) -> bool:
    """Whether the database at ``url`` holds every one of ``run_ids`` (a story's runs)."""
    try:
        runs = cached_runs(url)
    except Exception:  # noqa: BLE001 - a missing or foreign database holds no runs
        return False
    return all(runs.get(r) is not None for r in run_ids)


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


# -- why forgotten by phrase, and the embedding model it needs -------------------------
if TYPE_CHECKING:
    from memory_core.analysis.forgotten import PhraseSearch
    from memory_core.embedding.hashing import Embedder

EMBEDDING_MODEL_STATUS = "Loading the embedding model ({name})…"
_embedders_loaded: set[str] = set()


@st.cache_data(ttl=CACHE_TTL_SECONDS, show_spinner=False)
def cached_run_embedder(url: str, run_id: str) -> str | None:
    """The embedder the run recorded (None: none, or a recording that does not say)."""
    from memory_core.journal import load_run

    with _batch(url) as storage:
        m = load_run(storage, run_id).memctx
    return None if m is None or m.is_unknown_setting("embedder") else m.settings.embedder


@st.cache_resource(show_spinner=False)
def _embedding_model(name: str) -> Embedder | None:
    """The shared embedder instance for ``name``, its model loaded (one warm-up text)."""
    from memory_core.runs.registry import embedder_from_name

    embed = embedder_from_name(name)
    if embed is not None:
        embed([f"warm-up of {name}"])
    return embed


def load_run_embedder(url: str, run_id: str) -> None:
    """Load the embedder a run recorded before an analysis embeds text with it: a model
    (all-MiniLM-L6-v2) loads on first use, behind a visible status, once per process;
    the hashing embedder needs no loading. Never called at a page's import."""
    name = cached_run_embedder(url, run_id)
    if name is None or name.startswith("hashing-") or name in _embedders_loaded:
        return
    with st.spinner(EMBEDDING_MODEL_STATUS.format(name=name)):
        _embedding_model(name)
    _embedders_loaded.add(name)


def _model_loaded(name: str) -> bool:
    """Whether the shared embedder ``name`` has sent texts to its model (so the model is
    loaded in this process)."""
    from memory_core.runs.registry import embedder_from_name

    return getattr(embedder_from_name(name), "model_calls", 0) > 0


@contextmanager
def embedding_status(url: str, run_id: str) -> Iterator[None]:
    """Around an analysis that may embed text with the run's recorded embedder (why
    forgotten re-scores a message recall did not rank): while that model is not loaded
    in this process, the block runs behind the loading status (a spinner appears only
    once the block has run for a moment, so a quick answer shows none); a block that
    loaded it marks it loaded."""
    name = cached_run_embedder(url, run_id)
    if name is None or name.startswith("hashing-") or name in _embedders_loaded:
        yield
        return
    with st.spinner(EMBEDDING_MODEL_STATUS.format(name=name)):
        yield
    if _model_loaded(name):
        _embedders_loaded.add(name)


@st.cache_data(ttl=CACHE_TTL_SECONDS, show_spinner=False)
def cached_phrase_search(url: str, run_id: str, phrase: str) -> PhraseSearch:
    """The stored messages closest to ``phrase`` (words and meaning), each with its fate
    in the run (memory_core.analysis.forgotten.find_by_phrase)."""
    from memory_core.analysis.forgotten import find_by_phrase

    with _batch(url) as storage:
        return find_by_phrase(storage, run_id, phrase)


# -- the current run: the run the user is looking at, followed from page to page -------
def _current_run_key() -> str:
    # per database: a run id means nothing in another one
    return f"current-run:{current_name()}"


def current_run() -> str | None:
    """The run the user is looking at: ``?run=`` of this URL, else the last run a page
    showed in this session on the database in use (None before any). Unchecked: the
    page that opens it says when it does not exist."""
    from_url = query_param("run")
    if from_url is not None:
        return from_url
    value = st.session_state.get(_current_run_key())
    return value if isinstance(value, str) and value else None


def set_current_run(run_id: str, *, in_url: bool = True) -> None:
    """Make ``run_id`` the current run (every page that shows a run calls this), and
    write it into the URL as ``?run=`` unless the page names it otherwise (Compare's
    ``b``)."""
    st.session_state[_current_run_key()] = run_id
    if in_url and st.query_params.get("run") != run_id:
        st.query_params["run"] = run_id


def forget_current_run() -> None:
    """No current run (a URL named a run that does not exist)."""
    st.session_state.pop(_current_run_key(), None)


def previous_run(runs: Sequence[views.RunSummary], run_id: str) -> str | None:
    """The run before ``run_id`` on the same thread (``runs`` oldest first, as
    ``cached_runs`` gives them), or None when it is the thread's first or has no
    thread."""
    return (runs if isinstance(runs, views.Runs) else views.Runs(runs)).previous(run_id)


def run_of(url: str, run_id: str | None) -> views.RunSummary | None:
    """The summary of ``run_id`` in the database at ``url`` (None when absent)."""
    return None if run_id is None else cached_runs(url).get(run_id)


# -- Refresh that says what it reloaded -------------------------------------------------
@dataclass(frozen=True)
class DatabaseCounts:
    """What a database held when counted: for Refresh's message."""

    runs: int
    threads: int
    databases: int


def count_database(url: str) -> DatabaseCounts | None:
    """Runs and threads in the database at ``url`` and how many databases are served
    (None when it cannot be read)."""
    try:
        return DatabaseCounts(runs=len(cached_runs(url)),
                              threads=len(cached_thread_summaries(url, None)),
                              databases=len(served().databases))
    except Exception:  # noqa: BLE001 - the message then says only that it reloaded
        return None


def _change(n: int, word: str) -> str | None:
    if n == 0:
        return None
    plural = "" if abs(n) == 1 else "s"
    return f"{n} new {word}{plural}" if n > 0 else f"{-n} {word}{plural} fewer"


def reload_message(name: str, before: DatabaseCounts | None,
                   after: DatabaseCounts | None) -> str:
    """What Refresh says: ``Reloaded demo: 3 new runs, 1 new thread`` (or ``nothing
    new``, or the counts it now holds when there was nothing to compare with)."""
    if after is None:
        return f"Reloaded {name}, but it cannot be read now."
    if before is None:
        return f"Reloaded {name}: {after.runs} runs, {after.threads} threads."
    changes = [c for c in (_change(after.runs - before.runs, "run"),
                           _change(after.threads - before.threads, "thread"),
                           _change(after.databases - before.databases, "database"))
               if c is not None]
    return f"Reloaded {name}: " + (", ".join(changes) if changes else
                                   f"nothing new ({after.runs} runs, "
                                   f"{after.threads} threads).")


REFRESH_NOTE_KEY = "refresh-note"


def refresh_and_report() -> None:
    """Refresh (a button callback), leaving what it reloaded for the page to show."""
    name, url = current_name(), current_url()
    before = count_database(url)
    refresh()
    st.session_state[REFRESH_NOTE_KEY] = reload_message(name, before, count_database(url))


def remembered_run() -> str | None:
    """The current run this browser session remembers on the database in use (the last
    run a page showed), whatever the URL says; None before any."""
    value = st.session_state.get(_current_run_key())
    return value if isinstance(value, str) and value else None
