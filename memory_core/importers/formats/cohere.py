"""Cohere's Chat API, v2 (``POST /v2/chat``) and v1 (``/v1/chat``), read as the chat
completions record it is equivalent to (``cohere.py``)."""

from __future__ import annotations

from memory_core.importers.cohere import COHERE_PATHS, as_chat_record, is_cohere_record
from memory_core.importers.formats import RecordFormat, Route, by_url_or_keys
from memory_core.importers.formats.chat import answered_as_chat, read_as_chat

FORMAT = RecordFormat("cohere", 40,
                      lambda r: by_url_or_keys(r, ("cohere",), is_cohere_record),
                      read_as_chat(as_chat_record, api="cohere"),
                      # (Writer's OpenAI-compatible chat is at /v1/chat too)
                      routes=(Route("cohere", COHERE_PATHS, not_for=answered_as_chat),))
