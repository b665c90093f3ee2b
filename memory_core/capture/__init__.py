"""Live capture: record an agent's model traffic while it runs, with no change to its
code. ``proxy_app`` is a recording proxy for chat completions and Anthropic's Messages
API, ``collector_app`` an
OTLP/HTTP receiver; both hand what they see to a ``Recorder`` (the one writer, through
the importers' public API) and are served on loopback by ``LoopbackServer``.
See docs/capture.md."""

from __future__ import annotations

from memory_core.capture.collector import collector_app
from memory_core.capture.proxy import proxy_app, reassemble_sse
from memory_core.capture.server import (
    LoopbackServer,
    Outcome,
    Recorder,
    validate_port,
    validate_upstream,
)

__all__ = ["LoopbackServer", "Outcome", "Recorder", "collector_app", "proxy_app", "reassemble_sse",
           "validate_port", "validate_upstream"]
