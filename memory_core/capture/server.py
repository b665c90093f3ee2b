"""What the proxy and the collector share: the ``Recorder`` (the one writer of captured
records) and ``LoopbackServer`` (uvicorn on 127.0.0.1, in the foreground or a thread)."""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from memory_core.embedding.hashing import Embedder
from memory_core.errors import InvalidInputError, MemoryCoreError
from memory_core.importers import ImportReport, import_text
from memory_core.importers.common import ImportFormat
from memory_core.limits import limit
from memory_core.storage.base import Storage

log = logging.getLogger("memory_core.capture")


class _ReadDeadline(H11Protocol):
    """uvicorn's HTTP/1.1 protocol with a deadline on reading each request: a client
    that has not sent the whole request (headers and body) ``MEMWB_READ_TIMEOUT``
    seconds after connecting, or after its previous answer, is disconnected. uvicorn
    alone keeps a half-sent request open for ever (its keep-alive timeout runs only
    between requests). The app's own work is not timed: the deadline passes
    harmlessly once the request is read."""

    _deadline: asyncio.TimerHandle | None = None

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(limit("MEMWB_READ_TIMEOUT"), self._expire)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expire(self) -> None:
        self._deadline = None
        if self.conn.their_state in (h11.IDLE, h11.SEND_BODY) \
                and not self.transport.is_closing():
            self.transport.close()

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()


def validate_port(port: Any, *, allow_any: bool = False) -> int:
    """A TCP port 1..65535 (0, "any free port", only with ``allow_any``)."""
    low = 0 if allow_any else 1
    if isinstance(port, bool) or not isinstance(port, int) or not low <= port <= 65535:
        raise InvalidInputError(f"port must be an integer from {low} to 65535, got {port!r}")
    return port


def validate_upstream(url: Any) -> str:
    """The upstream's base URL as an OpenAI client takes it (``https://host/v1``),
    without a trailing slash; credentials in it are refused (they would be logged)."""
    if not isinstance(url, str) or not url.strip():
        raise InvalidInputError(f"upstream must be an http(s) URL, got {url!r}")
    try:
        parts = urlsplit(url.strip())
    except ValueError as e:  # an unclosed IPv6 bracket
        raise InvalidInputError(f"upstream {url!r} is not a valid URL: {e}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidInputError(f"upstream must be an http(s) URL such as "
                                f"https://api.openai.com/v1, got {url!r}")
    if any(c.isspace() for c in url.strip()):
        raise InvalidInputError(f"the upstream URL must not contain spaces, got {url!r}")
    if parts.username or parts.password:
        raise InvalidInputError("the upstream URL must not carry credentials; the client's "
                                "Authorization header is forwarded as it is")
    if parts.query or parts.fragment:
        raise InvalidInputError(f"the upstream URL must not have a query or fragment, "
                                f"got {url!r}")
    try:
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError:
        raise InvalidInputError(f"the upstream URL has a bad port: {url!r}") from None
    return url.strip().rstrip("/")


@dataclass(frozen=True)
class Outcome:
    """What became of one captured record: the import report, or why it was refused."""

    report: ImportReport | None
    reason: str | None = None


class Recorder:
    """The one writer: every captured record is imported (``import_text``) on a single
    worker thread, one at a time and in arrival order, so concurrent exchanges never
    write at once and a DuckDB file is held only for the length of one import."""

    def __init__(self, storage: Storage, *, embed: Embedder | None = None,
                 resource_id: str | None = None) -> None:
        self.storage, self.embed, self.resource_id = storage, embed, resource_id
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memwb-capture")
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._open = 0  # exchanges under way whose record is not queued yet
        self._pending: set[Future[Outcome]] = set()
        self.runs: list[str] = []  # run ids written, in order
        self.failures: list[str] = []  # why a record was not written

    def submit(self, text: str, *, name: str,
               format: ImportFormat) -> Future[Outcome]:
        """Queue one record; its future gives the ``Outcome``."""
        fut = self._pool.submit(self._write, text, name, format)
        with self._lock:
            self._pending.add(fut)
        fut.add_done_callback(self._done)
        return fut

    def _done(self, fut: Future[Outcome]) -> None:
        with self._lock:
            self._pending.discard(fut)

    def _write(self, text: str, name: str, format: ImportFormat) -> Outcome:
        try:
            report = import_text(self.storage, text, name=name, format=format,
                                 embed=self.embed, resource_id=self.resource_id)
        except MemoryCoreError as e:
            return self.refused(name, str(e))
        except Exception as e:  # noqa: BLE001 - a bad record must not stop the capture
            return self.refused(name, f"{type(e).__name__}: {e}")
        self.runs += report.runs_created
        for s in report.skipped:
            log.info("%s: note: %s: %s", name, s.where, s.reason)
        log.info("%s: recorded %d run(s): %s", name, len(report.runs_created),
                 ", ".join(report.runs_created) or "-")
        return Outcome(report)

    def refused(self, name: str, reason: str) -> Outcome:
        """Note (and log) a record that is not written, and why."""
        self.failures.append(f"{name}: {reason}")
        log.warning("%s: not recorded: %s", name, reason)
        return Outcome(None, reason)

    def begin(self) -> None:
        """An exchange has started: ``drain`` waits for its record too (call ``end``
        once that record is queued or dropped)."""
        with self._lock:
            self._open += 1

    def end(self) -> None:
        with self._lock:
            self._open -= 1
            self._idle.notify_all()

    def drain(self, timeout: float = 30.0) -> None:
        """Wait until every exchange under way has queued its record and every record
        queued is written (or refused), for at most ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        with self._lock:
            self._idle.wait_for(lambda: self._open == 0, timeout)
            pending = list(self._pending)
        wait(pending, timeout=max(0.0, deadline - time.monotonic()))

    def close(self) -> None:
        """Finish every queued write, then stop the worker."""
        self._pool.shutdown(wait=True)


class LoopbackServer:
    """An ASGI app served by uvicorn on 127.0.0.1 only. ``start``/``stop`` (or ``with``)
    run it on a thread (port 0 picks a free port); ``serve`` runs it in the
    foreground until interrupted."""

    def __init__(self, app: Any, port: int = 0, *, name: str = "capture") -> None:
        # ``app`` may be given later (set ``.app``) when the port is bound first
        self.app, self.name = app, name
        self.port = validate_port(port, allow_any=True)
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._sock: socket.socket | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def bind(self) -> socket.socket:
        """Take the port now (InvalidInputError naming it when it is taken), so a
        caller can refuse early; ``serve``/``start`` use this socket."""
        if self._sock is not None:
            return self._sock
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.bind(("127.0.0.1", self.port))
        except OSError as e:
            sock.close()
            raise InvalidInputError(f"cannot listen on 127.0.0.1:{self.port}: "
                                    f"{e.strerror or e}") from None
        self.port = sock.getsockname()[1]
        self._sock = sock
        return sock

    def _uvicorn(self) -> tuple[uvicorn.Server, socket.socket]:
        sock = self.bind()
        config = uvicorn.Config(self.app, log_level="warning", access_log=False,
                                lifespan="on", timeout_graceful_shutdown=2,
                                http=_ReadDeadline)
        self._server = uvicorn.Server(config)
        return self._server, sock

    def serve(self) -> None:
        server, sock = self._uvicorn()
        server.run(sockets=[sock])

    def start(self) -> LoopbackServer:
        server, sock = self._uvicorn()
        self._thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]},
                                        name=f"memwb-{self.name}-{self.port}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                self.stop()
                raise RuntimeError(f"the {self.name} server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._sock is not None:
            self._sock.close()

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
