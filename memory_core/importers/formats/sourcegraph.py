"""Sourcegraph's completions API (``POST /.api/completions/stream``,
``/.api/completions/code``: what Cody's clients send), read as the chat completions
record it is equivalent to (``sourcegraph.py``)."""

from __future__ import annotations

from memory_core.importers.formats import RecordFormat, Route, by_url_or_keys
from memory_core.importers.formats.chat import read_as_chat
from memory_core.importers.sourcegraph import (
    SOURCEGRAPH_PATHS,
    as_chat_record,
    is_sourcegraph_record,
)

FORMAT = RecordFormat("sourcegraph", 48,
                      lambda r: by_url_or_keys(r, ("sourcegraph",), is_sourcegraph_record),
                      read_as_chat(as_chat_record, api="sourcegraph"),
                      routes=(Route("sourcegraph", SOURCEGRAPH_PATHS),))
