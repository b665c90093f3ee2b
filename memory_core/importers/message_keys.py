"""The identity of a recorded message, as the import's thread planning compares them
(``threads.plan_threads``, ``stored.StoredImports``): role and parts without call ids,
texts trimmed, JSON texts as their value; and the ids one side gave a call that the
other spells out."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from json.encoder import encode_basestring as _STRING  # (C; what canonical JSON uses)
from typing import Any

from memory_core.models.openai_codec import is_derived_call_id
from memory_core.types import (
    JsonTemplate,
    Message,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    canonical_json,
    json_slot,
)


def _same_text(text: str) -> str:
    """A text as ``message_key`` compares it: without its surrounding whitespace, and a
    JSON object or array as its canonical JSON (a client sends a pretty-printed answer
    back compacted: chatlas's structured output on Mistral, Databricks …)."""
    text = text.strip()
    if text[:1] in ("{", "[") and text[-1:] in ("}", "]"):
        # (a short one cached: a request sends its history's answers again; a long one
        # is not kept, so the cache stays small)
        return _as_json_value(text) if len(text) <= 16_384 else _as_json_value.__wrapped__(
            text)
    return text


@functools.lru_cache(maxsize=1024)
def _as_json_value(text: str) -> str:
    """``text``'s canonical JSON, or ``text`` when it is no JSON."""
    try:
        return canonical_json(json.loads(text))
    except ValueError:
        return text


def loose_part(p: TextPart | ToolCallPart | ToolResultPart) -> dict[str, Any]:
    data = p.model_dump(mode="json")
    if type(p) is TextPart:
        data["text"] = _same_text(p.text)  # (see ``message_key``)
    data.pop("id", None)  # call ids are compared separately (see ``adopt_ids``)
    data.pop("call_id", None)
    if type(p) is ToolCallPart and p.args in ("", None):
        # a call without arguments: a stream that sent none (or ``null``) gives "",
        # and the client sends it back as "{}" — the same call
        data["args"] = {}
    return data


_TEXT_PART = loose_part(TextPart(text=""))  # (a text part's shape, dumped once)
# a text message's key: canonical_json([role, [{…text part…}]]) with both filled in
_TEXT_KEY = JsonTemplate([json_slot("role"), [{**_TEXT_PART, "text": json_slot("text")}]])


def message_key(m: Message) -> str:
    """Identity of a message for matching repeated history: role and parts without
    tool-call ids (a string and a single text part are the same message), texts without
    their surrounding whitespace (clients trim an answer they send back: ldp's ReAct
    loop drops its closing newline) and a text of whitespace alone not at all (llm
    sends an answer of tool calls back with a text " " before them); metadata does not
    count. A JSON object or array is compared as its value (``_same_text``)."""
    if type(m.content) is str:  # (its one text part's JSON, no part made)
        text = _same_text(m.content)
        if text and type(m.role) is str:  # (a key a new message: no encoder walk)
            return _TEXT_KEY.fill({"role": _STRING(m.role), "text": _STRING(text)})
        return canonical_json([m.role, [{**_TEXT_PART, "text": text}] if text else []])
    return canonical_json([m.role, [loose_part(p) for p in m.parts
                                    if type(p) is not TextPart or p.text.strip()]])


# a text block Claude Code and the Claude Agent SDK put first in every request's system
# prompt: billing data ("x-anthropic-billing-header: cc_version=…; cc_entrypoint=…;
# cch=<a digest that changes every request>;"), not instructions
_BILLING_HEADER = "x-anthropic-billing-header:"


def instructions_key(instructions: Sequence[Message], key_of: Callable[[Message], str]
                      ) -> str:
    """Identity of a request's instructions, for finding its conversation: each system
    message's ``message_key``, Claude Code's billing block left out (its conversations
    were split into a thread a request); the instructions stored keep it."""
    keys = []
    for m in instructions:
        if type(m.content) is str:
            if m.content.startswith(_BILLING_HEADER):  # (a proxy's text: its own line)
                m = m.model_copy(update={"content": m.content.partition("\n")[2]})
        elif any(type(p) is TextPart and p.text.startswith(_BILLING_HEADER)
                 for p in m.content):
            m = m.model_copy(update={"content": [
                p for p in m.content
                if not (type(p) is TextPart and p.text.startswith(_BILLING_HEADER))]})
        else:
            keys.append(key_of(m))
            continue
        keys.append(message_key(m))
    return f'[{",".join([_STRING(k) for k in keys])}]'  # (canonical)


def texts_of(m: Message) -> tuple[str, ...]:
    """A message's texts as sent (``message_key`` compares them trimmed)."""
    if type(m.content) is str:
        return (m.content,) if m.content else ()
    return tuple(p.text for p in m.content if type(p) is TextPart)


def trimmed_texts(m: Message) -> list[str]:
    """A message's texts as ``message_key`` sees them before reading JSON: trimmed, a
    text of whitespace alone left out."""
    return [t.strip() for t in texts_of(m) if t.strip()]


def _ids(m: Message) -> list[str]:
    if isinstance(m.content, str):  # text only (and not a part made to say so)
        return []
    return [p.id if isinstance(p, ToolCallPart) else p.call_id
            for p in m.content if isinstance(p, ToolCallPart | ToolResultPart)]


def ids_compatible(stored: Message, seen: Message) -> bool:
    """The same message as far as ids go: equal ids, or ids we derived (the recording
    had none) that a later request spells out."""
    if isinstance(stored.content, str) or isinstance(seen.content, str):
        return True  # (no ids on one side: nothing to compare)
    return all(a == b or is_derived_call_id(a) for a, b in zip(_ids(stored), _ids(seen),
                                                                strict=False))


def adopt_ids(stored: Message, seen: Message) -> dict[str, str]:
    """Give ``stored`` the ids the client used for calls we had to name ourselves, and
    the ``name`` the client gave a response it sends back as history; the ids given,
    each by the one it replaces."""
    if "name" in seen.metadata and "name" not in stored.metadata:
        stored.metadata["name"] = seen.metadata["name"]
    if isinstance(stored.content, str):  # (no ids to give)
        return {}
    mapping = {a: b for a, b in zip(_ids(stored), _ids(seen), strict=False) if a != b}
    if not mapping:
        return mapping
    stored.content = [p.model_copy(update={"id": mapping.get(p.id, p.id)})
                      if isinstance(p, ToolCallPart) else
                      p.model_copy(update={"call_id": mapping.get(p.call_id, p.call_id)})
                      if isinstance(p, ToolResultPart) else p for p in stored.content]
    return mapping
