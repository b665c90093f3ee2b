"""How processes share one DuckDB file (DuckDB lets one process open it at a time).

1. A process holds the file only inside an operation or a ``session()`` (a Runner's
   run, an import, a workbench page): it ATTACHes the file to an in-memory DuckDB
   instance of its own (~1 ms; a new connection costs ~15) and DETACHes it when the
   last one ends. An idle process holds nothing; every write has committed already
   (to the WAL: a DETACH checkpoints once the WAL passes 64 KB, the last close always).
2. An opener that finds the file held touches ``<file>.wants`` and tries again (2 ms
   doubling to 50 ms, jittered) until ``lock_timeout`` has passed; then
   StorageBusyError names the file and the fix.
3. A holder looks at ``<file>.wants`` before each operation: touched since it took
   the file, it lets go, waits longer than any wait of 2, and takes it again as in 2.
4. An erasure's rewrite copies the file to ``<file>.rewrite``, writes its pid to
   ``<file>.rewriting``, lets go, puts the copy in place and removes the marker; an
   opener that finds a live rewriter's marker, or the file replaced, tries again.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress

import duckdb

from memory_core.errors import StorageBusyError, StorageError

Conn = duckdb.DuckDBPyConnection
MEMORY = ":memory:"
# No extension fetched or loaded behind the caller's back; one worker thread (a large
# scan raises it for itself).
CONFIG: dict[str, str | bool | int | float | list[str]] = {
    "autoinstall_known_extensions": False, "autoload_known_extensions": False,
    "threads": 1}
WANTS, REWRITING, ERASED = ".wants", ".rewriting", ".erased"
_ALIAS = "memwb"  # the attached file's name in this process's DuckDB instance
_WAIT_CAP = 0.05  # longest wait between two tries at a held file
_GAP = 0.08  # a holder that let the file go for an asker stays off it this long
# A DETACH checkpoints only once the WAL has passed _WAL_LIMIT (and at the last
# close): a checkpoint at every DETACH made each run's rows a small row group that
# later checkpoints merged, at a cost that grew with the file (decision 001). Each
# ATTACH replays the WAL, and DuckDB logs again at each commit the list values
# (vectors) written since the last checkpoint, so the WAL must stay small: 64 KB (a
# checkpoint every ~3 runs) measured best of 32 KB to 256 KB.
_INSTANCE = {**CONFIG, "checkpoint_on_detach": "DISABLED"}
_WAL_LIMIT = 64 * 1024


def ask_for_file(path: str) -> None:
    """Ask the process holding ``path`` to let it go at its next operation."""
    flag = os.path.realpath(path) + WANTS
    try:
        with open(flag, "a"):
            pass
        os.utime(flag)
    except OSError:
        pass  # a read-only directory: the holder still lets go when its session ends


def _asked_since(path: str, since_ns: int) -> bool:
    try:
        return os.stat(path + WANTS).st_mtime_ns >= since_ns
    except OSError:
        return False


def _stamp(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino


def _size(path: str) -> int:
    return (_stamp(path) or (0, 0, 0))[1]  # (0: no such file)


def _rewriter(path: str) -> int | None:
    """The pid of another live process putting a rewritten copy in place, or None (a
    rewriter that died left the old file whole)."""
    try:
        with open(path + REWRITING) as f:
            pid = int(f.read() or 0)
        if 0 < pid != os.getpid():
            os.kill(pid, 0)
            return pid
    except (OSError, ValueError):  # no marker, or no such process
        pass
    return None


class HeldFile:
    """This process's hold on one database, shared by its storages on that file: the
    connection while an operation or a session needs it, and the lock on it."""

    def __init__(self, path: str | None, lock_timeout: float) -> None:
        self.path = path  # None: ``:memory:``, never let go
        self.lock_timeout = lock_timeout
        self.lock = threading.RLock()
        self.conn: Conn | None = None
        self.writable = False
        self.opened_ns = 0
        self.sessions = 0  # open session() blocks, of every thread
        self.depth = 0  # operations under way (nested ones in the lock's thread)
        self.in_tx = False  # a write_batch transaction is open (its thread has the lock)
        self.writes = 0  # writes of this process (change tokens)
        self.users = 0  # storages sharing this hold
        # a file is attached to an in-memory DuckDB instance of this process while held
        self.instance: Conn | None = None
        if path is None:
            self.conn = duckdb.connect(MEMORY, config=CONFIG)
            self.writable = True

    @contextmanager
    def connection(self, op: str, write: bool) -> Iterator[Conn]:
        """The connection for one operation (the lock held throughout), opened if
        none is, handed over first if another process asked; closed after, unless a
        session or a transaction goes on."""
        with self.lock:
            if self.path is not None and self.conn is not None and not self.depth:
                if write and not self.writable:
                    self._close()
                elif self.sessions and _asked_since(self.path, self.opened_ns):
                    self._close()
                    time.sleep(_GAP)
            if self.conn is None:
                self.conn = self._open(op, write)
            self.depth += 1
            try:
                yield self.conn
            finally:
                self.depth -= 1
                self.release()

    def release(self) -> None:
        """Close the connection unless an operation or a session still needs it."""
        with self.lock:
            if self.path is not None and not self.sessions and not self.depth:
                self._close()

    @contextmanager
    def session(self) -> Iterator[None]:
        with self.lock:
            self.sessions += 1
        try:
            yield
        finally:
            with self.lock:
                self.sessions -= 1
                self.release()

    def _close(self, limit: int = _WAL_LIMIT) -> None:
        """Let the file go (DETACH: the instance stays, with its threads), after a
        checkpoint if the WAL has grown past ``limit``."""
        if self.conn is not None and self.path is not None:
            conn, self.conn = self.conn, None
            with suppress(duckdb.Error):
                if self.writable and _size(self.path + ".wal") > limit:
                    conn.execute(f"CHECKPOINT {_ALIAS}")
                conn.execute(f"USE memory; DETACH {_ALIAS}")

    def _shut(self) -> None:
        """The last close: the WAL checkpointed into the file (taken once more if this
        process wrote it and let it go; held by another process now, that one will)."""
        if (self.conn is None and self.instance is not None and self.writable
                and _size(f"{self.path}.wal") and _rewriter(str(self.path)) is None):
            with suppress(duckdb.Error):
                self.instance.execute(f"ATTACH ? AS {_ALIAS}", [self.path])
                self.conn = self.instance
        self._close(limit=0)
        if self.instance is not None:
            instance, self.instance = self.instance, None
            with suppress(duckdb.Error):
                instance.close()

    def _open(self, op: str, write: bool) -> Conn:
        assert self.path is not None
        if not write and not os.path.exists(self.path):
            raise StorageError(f"{op} failed: database file '{self.path}' does not exist")
        deadline = time.monotonic() + self.lock_timeout
        why, delay = "", 0.002
        while True:
            inode = (_stamp(self.path) or (0, 0, -1))[2]
            if self.instance is None:
                self.instance = duckdb.connect(MEMORY, config=_INSTANCE)
            conn = self.instance
            try:
                conn.execute(f"ATTACH ? AS {_ALIAS}{'' if write else ' (READ_ONLY)'}",
                             [self.path])
            except duckdb.Error as e:
                if write and ("Read-only file system" in str(e) or "Permission denied" in str(e)):
                    # (a command that writes, on a file it may only read: said so)
                    raise StorageError(
                        f"'{self.path}' cannot be written ({str(e).splitlines()[0]}), and this "
                        "command writes to its database: give it a copy it may write to, "
                        "or run what only reads") from e
                if "Could not set lock" not in str(e) and "Conflicting lock" not in str(e):
                    raise StorageError(f"{op} failed: cannot open '{self.path}': {e}") from e
                ask_for_file(self.path)  # held by another process
                why = str(e)
            else:
                rewriter = _rewriter(self.path)
                if rewriter is None and inode != (_stamp(self.path) or (0, 0, -1))[2]:
                    rewriter = -1  # a copy was put in place while this opened the old file
                if rewriter is None:
                    conn.execute(f"USE {_ALIAS}")
                    self.writable, self.opened_ns = write, time.time_ns()
                    return conn
                conn.execute(f"DETACH {_ALIAS}")
                why = f"process {rewriter} is putting a rewritten copy in its place"
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise StorageBusyError(
                    f"{op} failed: database file '{self.path}' is held by another "
                    f"process and was not let go within {self.lock_timeout:g}s (raise "
                    f"lock_timeout, or end that process's session): {why}")
            # jittered, so that two waiting processes do not retry in lock-step
            time.sleep(min(remaining, delay * random.uniform(0.5, 1.5)))
            delay = min(delay * 2, _WAIT_CAP)

    def change_token(self) -> tuple[object, ...]:
        """Differs after any commit to the file, by any process: a commit grows the
        WAL, a checkpoint rewrites the file and empties the WAL; plus this process's
        writes (a write inside a batch shows before it commits)."""
        if self.path is None:
            return id(self), self.writes
        return id(self), self.writes, _stamp(self.path), _stamp(self.path + ".wal")

    def rewrite(self, op: str) -> None:
        """Copy the database into a fresh file and put it in place of the old one:
        DuckDB does not zero freed blocks, so erased text would stay in the file."""
        if self.path is None:
            return
        fresh = f"{self.path}.rewrite"
        marker = self.path + REWRITING
        with self.lock:
            for leftover in (fresh, fresh + ".wal"):
                with suppress(FileNotFoundError):
                    os.remove(leftover)
            with self.connection(op, write=True) as conn:
                try:
                    conn.execute(f"CHECKPOINT {_ALIAS}")
                    name = conn.execute("SELECT current_database()").fetchall()[0][0]
                    conn.execute("ATTACH ? AS memwb_fresh", [fresh])
                    conn.execute(f'COPY FROM DATABASE "{name}" TO memwb_fresh')
                    conn.execute("CHECKPOINT memwb_fresh")  # (its WAL is not moved)
                    conn.execute("DETACH memwb_fresh")
                except duckdb.Error as e:
                    raise StorageError(f"{op} failed: rewriting '{self.path}': {e}") from e
                tmp = f"{marker}.{os.getpid()}"
                with open(tmp, "w") as f:
                    f.write(str(os.getpid()))
                os.replace(tmp, marker)
                self._close()  # (the session, if any, opens the new file next time)
            try:
                os.replace(fresh, self.path)
                for done in (self.path + ".wal", self.path + ERASED):
                    with suppress(FileNotFoundError):
                        os.remove(done)
            finally:
                with suppress(OSError):
                    os.remove(marker)

    @contextmanager
    def erasing(self, op: str) -> Iterator[None]:
        """An erasure, then the rewrite. The marker ``<file>.erased`` lives from before
        the erasure commits until the copy is in place: a crash in between is finished
        by the next writable storage on the file (``DuckDBStorage``)."""
        if self.path is not None:
            open(self.path + ERASED, "w").close()
        try:
            yield
        except BaseException:
            with suppress(OSError):  # rolled back: nothing erased to rewrite
                os.remove(f"{self.path}{ERASED}")
            raise
        self.rewrite(op)


_FILES: dict[str, HeldFile] = {}
_FILES_LOCK = threading.Lock()


def hold_for(path: str, lock_timeout: float) -> HeldFile:
    """This process's hold on ``path`` (a real path), made on first use."""
    with _FILES_LOCK:
        held = _FILES.get(path)
        if held is None:
            held = _FILES[path] = HeldFile(path, lock_timeout)
        held.users += 1
        held.lock_timeout = max(held.lock_timeout, lock_timeout)
        return held


def let_go(held: HeldFile) -> None:
    """A storage on the file closed: the last one closes the connection."""
    with _FILES_LOCK:
        held.users -= 1
        if held.users > 0 or held.path is None:
            return
        _FILES.pop(held.path, None)
    with held.lock:
        held.sessions = 0
        held._shut()


def table_names(path: str, lock_timeout: float) -> set[str]:
    """The tables of the DuckDB file at ``path``, read through this process's hold on
    it (its open connection if it has one: a second one would be refused, and closing
    it would drop the lock this process holds), waiting for the file as any opener."""
    held = hold_for(os.path.realpath(path), lock_timeout)
    try:
        with held.connection("looking at the file", write=False) as conn:
            rows = conn.execute("SELECT table_name FROM duckdb_tables() "
                                "WHERE schema_name = 'main'").fetchall()
    finally:
        let_go(held)
    return {str(r[0]) for r in rows}


def holds_file(path: str) -> bool:
    """Whether a storage of this process has ``path`` open right now."""
    held = _FILES.get(os.path.realpath(path))
    return held is not None and held.conn is not None
