"""OpenAI's Responses API (``POST …/responses``): ``{"request": {"input",
"instructions", "tools"}, "response": {"output": [...]}}`` (or a recorded stream's last
event). A request that sends ``previous_response_id`` instead of its history gets it
back from the file's earlier responses, which the file's state keeps (``ServerHistory``),
and one that sends back items an earlier response output continues that response. One
that names a ``conversation`` gets the conversation's items so far: those the file's
Conversations API calls added (``conversations.py``) and each earlier response's input
and output in it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from memory_core.importers.common import (
    Exchange,
    HeldHistory,
    fail,
    from_unix,
    held_note,
    split_instructions,
)
from memory_core.importers.formats import Record, RecordFormat
from memory_core.importers.formats.chat import OPENAI
from memory_core.importers.formats.fields import (
    record_context,
    request_fields,
    request_params,
    str_field,
    usage_detail,
    usage_of,
)
from memory_core.importers.openai_shapes import (
    SERVER_ITEMS,
    completed_response,
    responses_exchange_parts,
)
from memory_core.types import Message


@dataclass
class Held:
    """What the server holds after a recorded Responses API response: the conversation
    a later request continues by sending its id as ``previous_response_id``."""

    where: str  # the record whose response it is
    index: int  # its exchange
    messages: list[Message]  # its history (without its own instructions) and reply
    unrecorded: str | None  # HeldHistory.unrecorded of that record


@dataclass
class Conversation:
    """A conversation the server holds (the Conversations API): its items so far as
    messages, the records that added them, the exchange of the last response in it,
    and what reading its items noted, for the next request that continues it.
    ``whole``: the file made it (``False``: it began before the file, which holds
    only what came after — the history before that is unknown)."""

    sources: list[str]
    messages: list[Message] = field(default_factory=list)
    last: int | None = None
    notes: list[str] = field(default_factory=list)
    whole: bool = True


@dataclass
class ServerHistory:
    """The file's Responses API responses read so far: what the server holds after
    each (by response id), and which exchange output each item (by item id: ``msg_…``,
    ``fc_…``, ``rs_…``); the conversations its Conversations API calls made (by id)."""

    responses: dict[str, Held] = field(default_factory=dict)
    conversations: dict[str, Conversation] = field(default_factory=dict)
    items: dict[str, int] = field(default_factory=dict)
    # each function call item an output held: its item id (fc_…) → its call_id (call_…)
    calls: dict[str, str] = field(default_factory=dict)


def _calls_by_item(items: Any) -> dict[str, str]:
    """An output's function call items: item id → call_id."""
    return {i["id"]: i["call_id"] for i in items if isinstance(i, dict)
            and i.get("type") == "function_call" and isinstance(i.get("id"), str)
            and isinstance(i.get("call_id"), str) and i["id"] and i["call_id"]} \
        if isinstance(items, list) else {}


def _call_ids_read(request: dict[str, Any], held: ServerHistory, where: str,
                   notes: list[str]) -> tuple[dict[str, Any], list[str]]:
    """The request with each function call (and output) whose ``call_id`` is the item
    id of a call an earlier response output (``fc_…``: chatlas and ellmer send it so,
    and the API takes it) given that call's ``call_id``, noted; and those item ids."""
    items = request.get("input")
    if not isinstance(items, list) or not held.calls:
        return request, []
    fixed, seen = list(items), []
    for j, item in enumerate(items):
        if not isinstance(item, dict):
            continue  # (refused naming it when the items are read)
        cid = item.get("call_id")
        if item.get("type") in ("function_call", "function_call_output") and \
                isinstance(cid, str) and cid in held.calls:
            fixed[j] = {**item, "call_id": held.calls[cid]}
            seen.append(cid)
            notes.append(f"{where}: input[{j}]: call_id {cid!r} is the id of the call "
                         f"item an earlier response output; read as its call_id "
                         f"{held.calls[cid]!r}")
    return ({**request, "input": fixed}, seen) if seen else (request, [])


def _item_ids(items: Any) -> list[str]:
    """The ids of a Responses API item list (an ``input`` or an ``output``)."""
    if not isinstance(items, list):
        return []
    return [i["id"] for i in items if isinstance(i, dict) and isinstance(i.get("id"), str)
            and i["id"]]


def _an_id(value: Any) -> str | None:
    """A response id as a reference: a non-empty string (anything else refers to
    nothing, and a record's other checks say whether it is malformed)."""
    return value if isinstance(value, str) and value else None


def conversation_id(request: dict[str, Any]) -> str | None:
    """The conversation a Responses API request continues: its ``conversation`` (an id,
    or ``{"id": …}``)."""
    conversation = request.get("conversation")
    return _an_id(conversation.get("id") if isinstance(conversation, dict) else conversation)


def _held_history(request: dict[str, Any], held: ServerHistory
                  ) -> tuple[list[Message], HeldHistory | None]:
    """The history a request continues without sending it, and how it was found: the
    earlier record whose response its ``previous_response_id`` names (its history and
    reply), or the items of the ``conversation`` it names that the file holds; nothing
    when that response (or conversation) is not in the file — nor held, when the file
    made the conversation empty."""
    prev = _an_id(request.get("previous_response_id"))
    conversation = request.get("conversation")
    if prev is None and conversation is None:
        return [], None
    if prev is None:
        cid = conversation_id(request)
        ref = f"conversation {str(cid if cid is not None else conversation)!r}"
        conv = held.conversations.get(cid) if cid is not None else None
        if conv is not None and conv.whole and not conv.messages:
            return [], None  # (the file made it empty: it held nothing before this)
        if conv is not None and conv.messages:
            return list(conv.messages), HeldHistory(
                ref, source=", ".join(conv.sources), count=len(conv.messages),
                continues=conv.last, unrecorded=None if conv.whole else ref)
    else:
        ref = f"previous_response_id {prev!r}"
        found = held.responses.get(prev)
        if found is not None:
            return found.messages, HeldHistory(ref, source=found.where,
                                               count=len(found.messages),
                                               unrecorded=found.unrecorded,
                                               continues=found.index)
    return [], HeldHistory(ref, unrecorded=ref)


def _incomplete_reason(response: dict[str, Any]) -> str | None:
    """Why an incomplete response stopped (``incomplete_details.reason``), if it says."""
    details = response.get("incomplete_details")
    reason = details.get("reason") if isinstance(details, dict) else None
    return reason if isinstance(reason, str) and reason else None


def _finish(response: dict[str, Any], where: str) -> str | None:
    """The response's ``status`` as its finish reason, with why it stopped when it is
    incomplete (``incomplete: max_output_tokens``)."""
    status = str_field(where, response, "status")
    reason = _incomplete_reason(response) if status == "incomplete" else None
    return f"{status}: {reason}" if reason else status


def responses_exchange(obj: dict[str, Any], where: str, index: int,
                       held: ServerHistory | None = None) -> Exchange:
    """A Responses API record. With ``held`` (the file's earlier responses by id), a
    request that sent ``previous_response_id`` instead of its history gets the history
    back: the referenced record's history and reply, then its own input (its own
    ``instructions`` first: they are not inherited); and its response is added to
    ``held`` for the requests after it."""
    notes: list[str] = []
    request = obj.get("request", obj)
    if not isinstance(request, dict):
        raise fail(where, f"'request' must be an object, got {type(request).__name__}")
    response = completed_response(obj.get("response"), where, notes)
    held = held if held is not None else ServerHistory()
    request, by_item = _call_ids_read(request, held, where, notes)
    own, inputs, reply, tools = responses_exchange_parts(request, response, where, notes)
    # instructions the client did not send (``own`` taken from the response's echo): an
    # agent's, or a stored prompt's, applied by the server
    applied_by = None
    if own and not (isinstance(request.get("instructions"), str)
                    and request["instructions"]):
        agent, prompt = request.get("agent"), request.get("prompt")
        applied_by = (f"agent {agent.get('name')!r}" if isinstance(agent, dict)
                      and agent.get("name") else
                      f"prompt {prompt.get('id')!r}" if isinstance(prompt, dict)
                      else "the server")
    carried, history_held = _held_history(request, held)
    # an input item an earlier response output (a client sending back what it got, with
    # its ids): the request continues that response even when it sends only part of
    # the history before it
    replayed = [held.items[i] for i in [*_item_ids(request.get("input")), *by_item]
                if i in held.items]
    if history_held is not None:
        history_held.start = len(own) if carried else 0
        notes.insert(0, held_note(where, history_held))
    cid = conversation_id(request) if request.get("previous_response_id") is None else None
    # (a conversation the file did not make: what the file holds of it from here on)
    conv = held.conversations.setdefault(cid, Conversation([], whole=False)) \
        if cid is not None else None
    if conv is not None:  # what reading its items noted, said once
        notes += conv.notes
        conv.notes = []
    instructions, history = split_instructions([*own, *carried, *inputs])
    thread_key, resource = record_context(obj, request, where)
    usage, known = usage_of(response.get("usage") if isinstance(response, dict) else None,
                            where, notes)
    created = response.get("created_at") if isinstance(response, dict) else None
    at = from_unix(created, where, "response.created_at") if created is not None else None
    model = str_field(where, response, "model") if isinstance(response, dict) else None
    error = obj.get("error") or (response.get("error") if isinstance(response, dict) else None)
    empty_because = None
    if not error and reply is None and isinstance(response, dict) and (
            response.get("status") == "incomplete"
            or response.get("status") == "completed" and response.get("output")):
        # it stopped (max_output_tokens while reasoning, a content filter) before any
        # message, or its output holds only items not imported (a server-side tool's
        # call, noted): an empty answer, its finish reason (and the note of an empty
        # answer) saying why, its usage kept — as a chat completion cut at its length
        # and Gemini's empty MAX_TOKENS answer are
        reply = Message(role="assistant", content="")
        empty_because = _only_server_items(response.get("output"))
    rid = _an_id(response.get("id")) if isinstance(response, dict) else None
    if rid is not None:
        held.responses[rid] = Held(where, index,
                                   [*carried, *inputs, *([reply] if reply else [])],
                                   history_held.unrecorded if history_held is not None
                                   else None)
    if conv is not None and reply is not None:
        # the server adds the request's input and the response's output to it
        conv.messages += [*inputs, *([reply] if reply else [])]
        conv.last = index
        conv.sources.append(where)
    if isinstance(response, dict):
        held.items.update(dict.fromkeys(_item_ids(response.get("output")), index))
        held.calls.update(_calls_by_item(response.get("output")))
    return Exchange(
        where=where, index=index, instructions=instructions, history=history, response=reply,
        thread_key=thread_key, resource_id=resource,
        model=model or str_field(where, request, "model"), usage=usage, usage_known=known,
        usage_detail=usage_detail(response.get("usage")) if known and isinstance(
            response, dict) else {},
        requested_model=str_field(where, request, "model"),
        finish_reason=_finish(response, where) if isinstance(response, dict) else None,
        params=request_params(request, where), request_fields=request_fields(request),
        tools=tools, started_at=at, finished_at=at,
        error=None if reply is not None else _said(error or _unanswered(response)),
        notes=notes, held=history_held, replays=max(replayed, default=None),
        instructions_applied_by=applied_by, empty_because=empty_because)


def _only_server_items(output: Any) -> str | None:
    """Why an output with no message or client call is no answer, when its items are
    all of tools OpenAI's server ran (and reasoning): the model's turn ended inside the
    call, after the server's tool ran, without a message."""
    kinds = [str(i.get("type")) for i in output if isinstance(i, dict)] \
        if isinstance(output, list) else []
    ran = [k for k in dict.fromkeys(kinds) if k in SERVER_ITEMS]
    if not ran or not all(k in SERVER_ITEMS or k == "reasoning" for k in kinds):
        return None
    return (f"its output holds only items of tools OpenAI's server ran "
            f"({', '.join(ran)}), which are not imported")


def _said(error: Any) -> str:
    """A failed call's error as its run keeps it: a text as it is (it was quoted as
    JSON), anything else as JSON."""
    return error if isinstance(error, str) else json.dumps(error, sort_keys=True,
                                                           ensure_ascii=False)


def _unanswered(response: Any) -> str:
    """Why a response holds no answer, when it has no error: its status, where that
    says it (a background call cancelled, or never seen to end)."""
    status = response.get("status") if isinstance(response, dict) else None
    if status == "cancelled":
        return "the response was cancelled before it answered (status 'cancelled')"
    if status in ("queued", "in_progress"):
        return (f"the response was still {status.replace('_', ' ')} when the recording "
                "ended (a background call whose end was not recorded)")
    return "no output recorded"


# what a bare record shows of a call beside its input: the model asked, an answer, an
# error, a URL, or the request's other fields
_CALL_SIGNS = frozenset(("model", "response", "error", "output", "status", "url",
                         "instructions", "tools", "previous_response_id", "conversation"))


def _matches(record: Record) -> bool:
    """A request with ``input``, or a response that is one (``object`` "response", an
    ``output`` list), sent to no URL or to OpenAI's."""
    request, response = record.request, record.obj.get("response")
    kind = record.obj.get("type")
    if "request" not in record.obj and isinstance(kind, str) and kind.startswith("response."):
        return False  # one event of a streamed answer ("response.created" holds the
        # response so far), not a call: refused as what it is
    if "request" not in record.obj and isinstance(record.obj.get("output"), str | dict):
        return False  # an evaluation row ({"input", "output": "4"}): a Responses API
        # output is a list of items; refused as what it is
    if "request" not in record.obj and not record.obj.keys() & _CALL_SIGNS:
        return False  # an input alone — an eval dataset row ({"input", "expected_output"}),
        # a flow test's input —: no model, no answer, no error; refused as what it is
    return record.api in (None, "openai") and (
        (isinstance(request, dict) and "input" in request) or (
            # (a request continuing a conversation held server-side, nothing new sent:
            # an Azure AI agent's call, {"agent", "conversation"})
            isinstance(request, dict) and "conversation" in request
            and (record.path or "").endswith("/responses")) or (
            isinstance(response, dict) and (response.get("object") == "response"
                                            or isinstance(response.get("output"), list))))


def _read(record: Record) -> list[Exchange]:
    held: ServerHistory = record.state("responses", ServerHistory)
    return [responses_exchange(record.obj, record.where, record.index, held)]


FORMAT = RecordFormat("responses", 120, _matches, _read, routes=(OPENAI,))
