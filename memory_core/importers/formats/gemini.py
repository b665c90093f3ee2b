"""The Gemini API (``…/models/<model>:generateContent``, ``:streamGenerateContent``, on
the Gemini Developer API or Vertex AI): ``{"request": {"contents", …}, "response":
{"candidates", …}}``, flat or wrapped; ``gemini.py`` reads it."""

from __future__ import annotations

from memory_core.importers.common import Exchange, fail
from memory_core.importers.formats import Record, RecordFormat, Route, by_url_or_keys
from memory_core.importers.formats.fields import RECORD_KEYS, record_context, wrapped
from memory_core.importers.gemini import GEMINI_PATHS, gemini_exchange, is_gemini_record

GEMINI = Route("gemini", GEMINI_PATHS)


def _read(record: Record) -> list[Exchange]:
    if "request" not in record.obj and "contents" not in record.obj \
            and isinstance(record.obj.get("method"), str):
        # gemini-cli's --fake-responses files: {"method": "generateContentStream",
        # "response": [...]} a line, the answers it replays, not what was asked
        raise fail(record.where, f"the answer of a Gemini API call "
                                 f"({record.obj['method']}) without its request, as "
                                 "gemini-cli's fake-responses files record them: what the "
                                 "model was sent is not in the file")
    # flat: the record's own keys (and its metadata) are not the request's
    obj = wrapped(record.obj, RECORD_KEYS | {"metadata"})
    request = obj.get("request", obj)
    thread_key, resource = record_context(
        obj, request if isinstance(request, dict) else {}, record.where)
    return [gemini_exchange(obj, record.where, record.index, thread_key=thread_key,
                            resource_id=resource)]


FORMAT = RecordFormat(
    "gemini", 90,
    lambda r: by_url_or_keys(r, ("gemini",),
                             lambda obj: is_gemini_record(obj.get("request", obj),
                                                          obj.get("response"))),
    _read, routes=(GEMINI,))
