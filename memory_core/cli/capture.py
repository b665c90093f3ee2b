"""memwb proxy and memwb collect: live capture on loopback, written as it arrives."""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable
from typing import Annotated, Any

import typer

# typer (0.29) vendors click; its exception classes live here
from memory_core.cli.common import (
    DbOpt,
    _embedder,
    app,
    default_db,
    fail,
    guarded,
    opened,
)


def _port(value: int) -> int:
    from memory_core.capture import validate_port

    return guarded(lambda: validate_port(value))


class _Terminated(Exception):
    """SIGTERM (``kill``, ``timeout``, ``docker stop``, systemd): a stop like Ctrl-C."""


def _terminated(signum: int, frame: Any) -> None:
    raise _Terminated


def _capture(db: str | None, port: int, embedder: str, resource: str | None,
             make_app: Callable[[Any], Any], what: str) -> None:
    """Serve a capture app on 127.0.0.1:port, writing to ``db`` until interrupted
    (Ctrl-C or SIGTERM: both finish every exchange under way and every queued write,
    then print the summary)."""
    import logging

    from memory_core.capture import LoopbackServer, Recorder

    embed = _embedder(embedder, allow_none=True)
    server = LoopbackServer(None, _port(port), name=what)
    guarded(server.bind)  # a taken port is refused before the database is touched
    log = logging.getLogger("memory_core.capture")  # what was recorded, never headers
    if not log.handlers:
        log.addHandler(logging.StreamHandler(sys.stderr))
    log.setLevel(logging.INFO)
    url = db or default_db()
    with opened(url, read_only=False, must_exist=False) as storage:
        recorder = Recorder(storage, embed=embed, resource_id=resource)
        server.app = guarded(lambda: make_app(recorder))
        typer.echo(f"{what} on {server.url} writing to {url} (Ctrl-C to stop)", err=True)
        # uvicorn handles both signals while it serves, then passes the one it got on
        # to the handler before it: SIGTERM's default would end the process before the
        # queued writes and the summary
        before = signal.signal(signal.SIGTERM, _terminated)
        try:
            server.serve()
        except (KeyboardInterrupt, _Terminated):
            pass  # uvicorn shut down and passed the signal on: a normal stop
        finally:
            recorder.close()
            signal.signal(signal.SIGTERM, before)
    typer.echo(f"recorded {len(recorder.runs)} run(s); {len(recorder.failures)} record(s) "
               "not recorded", err=True)


CapturePort = Annotated[int, typer.Option(help="Port on 127.0.0.1 (1-65535).")]
CaptureEmbedder = Annotated[str, typer.Option(
    help="hashing, minilm or none; must match the vectors already in the database.")]
CaptureResource = Annotated[str | None, typer.Option(
    help="Resource id for every recorded thread.")]


@app.command()
def proxy(upstream: Annotated[str, typer.Option(
              help="The model server's base URL up to its version: "
                   "https://api.openai.com/v1, https://api.anthropic.com/v1.")],
          db: DbOpt = None, port: CapturePort = 8788, embedder: CaptureEmbedder = "hashing",
          resource: CaptureResource = None) -> None:
    """Record an agent's model calls: a proxy on 127.0.0.1 that forwards every chat
    completion (OpenAI-compatible) and Messages API call (Anthropic) to --upstream and
    writes each exchange as an imported run.

    Example: memwb proxy --db mine.duckdb --upstream https://api.openai.com/v1, then run
    the agent with OPENAI_BASE_URL=http://127.0.0.1:8788/v1. For Claude Code or an
    Anthropic SDK: --upstream https://api.anthropic.com/v1 and
    ANTHROPIC_BASE_URL=http://127.0.0.1:8788
    """
    from memory_core.capture import proxy_app, validate_upstream

    base = guarded(lambda: validate_upstream(upstream))
    _capture(db, port, embedder, resource, lambda rec: proxy_app(rec, base), "proxy")


@app.command()
def collect(db: DbOpt = None, port: CapturePort = 4318,
            embedder: CaptureEmbedder = "hashing", resource: CaptureResource = None,
            settle: Annotated[float, typer.Option(
                help="Seconds a trace must be quiet before it is imported (its spans and "
                     "log records arrive in separate exports).")] = 2.0) -> None:
    """Receive OpenTelemetry GenAI spans and logs (OTLP/HTTP, JSON or protobuf) on
    127.0.0.1 and import them as runs as they arrive.

    Example: memwb collect --db mine.duckdb, then run the agent with
    OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318
    """
    from memory_core.capture import collector_app

    if not 0 <= settle <= 600:
        raise fail(f"--settle must be between 0 and 600 seconds, got {settle}")
    _capture(db, port, embedder, resource,
             lambda recorder: collector_app(recorder, settle=settle), "collector")
