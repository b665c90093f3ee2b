"""Cohere's legacy Generate API (``POST /v1/generate``): a ``prompt`` answered with
``generations``, or a stream of ``text-generation`` events ending in ``stream-end``;
read as the chat completions record it is equivalent to (``cohere.generate_as_chat``):
the prompt one user message, the first generation the answer."""

from __future__ import annotations

from memory_core.importers.cohere import GENERATE_PATHS, generate_as_chat, is_generate_record
from memory_core.importers.formats import RecordFormat, Route, by_url_or_keys
from memory_core.importers.formats.chat import read_as_chat

FORMAT = RecordFormat("cohere-generate", 45,
                      lambda r: by_url_or_keys(r, ("cohere-generate",), is_generate_record),
                      read_as_chat(generate_as_chat, api="cohere"),
                      routes=(Route("cohere-generate", GENERATE_PATHS),))
