"""LangSmith runs (``client.list_runs()`` dumped, a UI export, ``{"runs": [...]}``):
an ``llm`` run is the chat completions record it is equivalent to (``langsmith.py``
reads it; the JSON container skips the other runs, naming their type). Timed by the
run's ``start_time`` and ``end_time``: LangSmith's own times of the call, not the
response's ``created`` (whole seconds)."""

from __future__ import annotations

from memory_core.importers.formats import RecordFormat
from memory_core.importers.formats.chat import read_as_chat
from memory_core.importers.langsmith import as_chat_record, is_langsmith_run

FORMAT = RecordFormat("langsmith", 20, lambda r: is_langsmith_run(r.obj),
                      read_as_chat(as_chat_record), timed_by=("start_time", "end_time"))
