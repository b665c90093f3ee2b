"""OpenAI's Conversations API item calls (``POST …/conversations`` with its first
``items``, ``POST …/conversations/{id}/items``): no model call, but the history a
Responses API request naming that ``conversation`` continues. Each adds its items (read
as the Responses API's input items) to the file's server-held state
(``responses.ServerHistory``); a call that failed adds nothing."""

from __future__ import annotations

from memory_core.importers.common import Exchange, fail
from memory_core.importers.formats import Record, RecordFormat, Route
from memory_core.importers.formats.responses import Conversation, ServerHistory
from memory_core.importers.openai_shapes import response_items

# …/conversations creates one; …/conversations/{id}/items adds to it
CONVERSATIONS = Route("openai-conversations", ("/conversations", "/items"),
                      within="/conversations")


def _read(record: Record) -> list[Exchange]:
    obj, where, path = record.obj, record.where, record.path or ""
    request, response = record.request, obj.get("response")
    if "error" in obj or not isinstance(response, dict):
        return []  # (refused by the server: it holds nothing more)
    if not isinstance(request, dict):
        raise fail(where, f"'request' must be an object, got {type(request).__name__}")
    made = response.get("id")
    cid = (path.rsplit("/conversations/", 1)[-1].split("/", 1)[0]
           if path.endswith("/items") else made if isinstance(made, str) else "")
    if not cid:
        raise fail(where, "a Conversations API call whose conversation id is not "
                          "recorded (no 'id' in its response)")
    held: ServerHistory = record.state("responses", ServerHistory)
    # items added to a conversation the file did not make: its beginning is not here
    conv = held.conversations.setdefault(cid, Conversation([], whole=not path.endswith(
        "/items")))
    conv.sources.append(where)
    conv.messages += response_items(request.get("items") or [], f"{where}: items",
                                    conv.notes, side="input")
    return []


FORMAT = RecordFormat("conversations", 125,
                      lambda r: r.api == "openai-conversations", _read,
                      routes=(CONVERSATIONS,))
