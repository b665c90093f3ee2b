"""Ollama's native API (``POST /api/chat``, ``/api/generate``), read as the chat
completions record it is equivalent to (``ollama.py``)."""

from __future__ import annotations

from memory_core.importers.formats import RecordFormat, Route, by_url_or_keys
from memory_core.importers.formats.chat import read_as_chat
from memory_core.importers.ollama import OLLAMA_PATHS, as_chat_record, is_ollama_record

FORMAT = RecordFormat("ollama", 30,
                      lambda r: by_url_or_keys(r, ("ollama",), is_ollama_record),
                      read_as_chat(as_chat_record, api="ollama"),
                      routes=(Route("ollama", OLLAMA_PATHS),))
