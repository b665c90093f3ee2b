"""A throwaway PostgreSQL server the test suite starts itself, so `pytest` alone covers
the PostgreSQL adapter; plus per-test schemas on it and the pytest glue.

Order of preference: ``MEMWB_PG_DSN`` (an existing server) → ``MEMWB_SKIP_POSTGRES=1``
(PostgreSQL tests skip, saying so) → initdb + pg_ctl from Debian's ``postgresql``
package into a temporary directory, listening on 127.0.0.1 on a free port, stopped and
deleted when the process exits (servers of killed runs are reaped by the next start).
PostgreSQL refuses to run as root, so as root the server runs as the ``postgres`` user
Debian's package creates. Missing binaries are a test failure, never a silent skip.
``python -m tests.pg_server`` runs one by hand and prints its DSN.
"""

from __future__ import annotations

import atexit
import glob
import hashlib
import os
import shutil
import socket
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from memory_core.journal.lease import pid_alive

ENV_DSN = "MEMWB_PG_DSN"
ENV_SKIP = "MEMWB_SKIP_POSTGRES"
DB_NAME = "memwb_test"
INSTALL_HINT = ("install Debian's `postgresql` package (`apt-get install -y postgresql`; "
                "`make system-deps` does it), point MEMWB_PG_DSN at a server, or set "
                "MEMWB_SKIP_POSTGRES=1 to skip the PostgreSQL tests explicitly")


class PostgresSkipped(Exception):
    """PostgreSQL tests were disabled on purpose (MEMWB_SKIP_POSTGRES=1)."""


class PostgresUnavailable(RuntimeError):
    """No server could be found or started; the message says how to fix it."""


def find_bin_dir() -> Path | None:
    """Directory holding initdb and pg_ctl: Debian's newest version, else PATH."""
    def version(p: str) -> tuple[int, ...]:
        name = Path(p).parent.name
        return tuple(int(x) for x in name.split(".") if x.isdigit())

    for cand in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=version, reverse=True):
        d = Path(cand)
        if (d / "initdb").exists() and (d / "pg_ctl").exists():
            return d
    initdb = shutil.which("initdb")
    if initdb and (Path(initdb).parent / "pg_ctl").exists():
        return Path(initdb).parent
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def reap_stale(bin_dir: Path) -> None:
    """Stop and delete throwaway servers whose test process died without cleaning up
    (killed runs skip atexit); a live owner's server is left alone."""
    for owner in Path(tempfile.gettempdir()).glob("memwb-pg-*/owner.pid"):
        try:
            pid = int(owner.read_text().strip())
        except (OSError, ValueError):
            continue
        if pid_alive(pid):
            continue
        tmp = owner.parent
        if (tmp / "data" / "postmaster.pid").exists():
            prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
            subprocess.run([*prefix, str(bin_dir / "pg_ctl"), "-D", str(tmp / "data"),
                            "-m", "immediate", "-w", "stop"], cwd=tempfile.gettempdir(),
                           capture_output=True, timeout=60, check=False)
        shutil.rmtree(tmp, ignore_errors=True)


class ThrowawayPostgres:
    """initdb into a temp dir, start on loopback, create a database; stop() undoes it."""

    def __init__(self, bin_dir: Path) -> None:
        self.bin_dir = bin_dir
        self.tmp = Path(tempfile.mkdtemp(prefix="memwb-pg-"))
        (self.tmp / "owner.pid").write_text(str(os.getpid()))
        self.data = self.tmp / "data"
        self.sock = self.tmp / "sock"
        self.log = self.tmp / "server.log"
        self.port = 0
        self.dsn = ""
        self._running = False
        self._as_user: list[str] = []
        if os.geteuid() == 0:
            import pwd

            try:
                pw = pwd.getpwnam("postgres")
            except KeyError as e:
                shutil.rmtree(self.tmp, ignore_errors=True)
                raise PostgresUnavailable(
                    "running as root, and PostgreSQL refuses to run as root, but there is "
                    f"no `postgres` user to run it as; {INSTALL_HINT}") from e
            os.chown(self.tmp, pw.pw_uid, pw.pw_gid)
            self._as_user = ["runuser", "-u", "postgres", "--"]
            self._uid_gid = (pw.pw_uid, pw.pw_gid)

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        cmd = [*self._as_user, *args]
        proc = subprocess.run(cmd, cwd=self.tmp, capture_output=True, text=True, timeout=120,
                              check=False)
        if proc.returncode != 0:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise PostgresUnavailable(
                f"`{' '.join(cmd)}` failed ({proc.returncode}): {proc.stdout}{proc.stderr}"
                f"{log}")
        return proc

    def start(self) -> str:
        self.sock.mkdir()
        if self._as_user:
            os.chown(self.sock, *self._uid_gid)
        self._run(str(self.bin_dir / "initdb"), "-D", str(self.data), "-U", "postgres",
                  "-A", "trust", "-E", "UTF8", "--no-locale", "--no-sync")
        last: Exception | None = None
        for _ in range(3):  # a free port can be taken between probing and binding
            self.port = _free_port()
            opts = (f"-h 127.0.0.1 -p {self.port} -k {self.sock} -c fsync=off "
                    "-c synchronous_commit=off -c full_page_writes=off "
                    "-c max_connections=200")
            try:
                self._run(str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-l",
                          str(self.log), "-w", "-t", "60", "-o", opts, "start")
                break
            except PostgresUnavailable as e:
                last = e
        else:
            self.stop()
            raise PostgresUnavailable(f"could not start PostgreSQL: {last}")
        self._running = True
        base = f"postgresql://postgres@127.0.0.1:{self.port}"
        with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DB_NAME)))
        self.dsn = f"{base}/{DB_NAME}"
        return self.dsn

    def stop(self) -> None:
        if self._running:
            self._running = False
            try:
                self._run(str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-m",
                          "immediate", "-w", "stop")
            except (PostgresUnavailable, subprocess.TimeoutExpired):
                pass  # the directory goes anyway; a stray server dies with its files
        shutil.rmtree(self.tmp, ignore_errors=True)


_lock = threading.Lock()
_server: ThrowawayPostgres | None = None
_failure: Exception | None = None


def postgres_dsn() -> str:
    """The DSN of the server tests use, starting the throwaway one on first call.

    Raises PostgresSkipped when skipping was requested and PostgresUnavailable when no
    server can be had (with the fix in the message)."""
    global _server, _failure
    dsn = os.environ.get(ENV_DSN, "").strip()
    if dsn:
        return dsn
    if os.environ.get(ENV_SKIP, "").strip() not in ("", "0"):
        raise PostgresSkipped(f"PostgreSQL tests skipped because {ENV_SKIP}="
                              f"{os.environ[ENV_SKIP]!r} was set")
    with _lock:
        if _server is not None:
            return _server.dsn
        if _failure is not None:
            raise PostgresUnavailable(str(_failure))
        bin_dir = find_bin_dir()
        if bin_dir is None:
            _failure = PostgresUnavailable(
                "PostgreSQL server binaries (initdb, pg_ctl) were not found under "
                f"/usr/lib/postgresql/*/bin or on PATH; {INSTALL_HINT}")
            raise _failure
        try:
            reap_stale(bin_dir)
            server = ThrowawayPostgres(bin_dir)
            server.start()
        except (PostgresUnavailable, OSError, psycopg.Error,
                subprocess.TimeoutExpired) as e:
            _failure = e if isinstance(e, PostgresUnavailable) else PostgresUnavailable(
                f"starting a throwaway PostgreSQL server failed: {e}; {INSTALL_HINT}")
            raise _failure from e
        atexit.register(server.stop)
        _server = server
        return server.dsn


def require_postgres_dsn() -> str:
    """postgres_dsn() for tests: skip when disabled on purpose, fail otherwise."""
    try:
        return postgres_dsn()
    except PostgresSkipped as e:
        pytest.skip(str(e))
    except PostgresUnavailable as e:
        pytest.fail(str(e), pytrace=False)


_schemas: set[str] = set()
_cleanup_registered = False


def drop_schema(dsn: str, schema: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def schema_for(dsn: str, key: str | Path) -> str:
    """A schema name private to ``key`` (a test's tmp_path), the same on every call with
    that key so a test can reopen its store. Schemas of earlier keys are dropped here
    (their tests have finished) and any left at exit are dropped then."""
    global _cleanup_registered
    name = "t_" + hashlib.sha1(str(key).encode()).hexdigest()[:24]
    with _lock:
        if name not in _schemas:
            for old in sorted(_schemas):
                drop_schema(dsn, old)
            _schemas.clear()
            _schemas.add(name)
            if not _cleanup_registered:
                atexit.register(_drop_all, dsn)
                _cleanup_registered = True
    return name


def _drop_all(dsn: str) -> None:
    if _server is not None:
        return  # the throwaway server takes every schema with it
    for s in sorted(_schemas):
        try:
            drop_schema(dsn, s)
        except psycopg.Error:
            pass  # the server may be gone already; nothing to clean then


@pytest.fixture(scope="session")
def pg_dsn() -> Iterator[str]:
    """Session-wide DSN of the test server (see module docstring)."""
    yield require_postgres_dsn()


def main() -> None:
    """`python -m tests.pg_server`: start a throwaway server, print its DSN, and stop
    it on Ctrl-C (for trying the PostgreSQL adapter by hand, e.g. a demo run)."""
    import time

    print(postgres_dsn(), flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
