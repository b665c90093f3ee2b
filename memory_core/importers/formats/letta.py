"""Letta's agent files (``.af``, "Agent File": an agent exported with its memory, tools
and messages), each model call of an agent rebuilt from its messages
(``letta_agent_files``) and read as one chat completion.

Two shapes. Letta up to 0.10 (``letta/serialize_schemas``) exports one agent:
``{"agent_type", "llm_config", "system", "core_memory", "tools", "tool_rules",
"messages", "in_context_message_indices", "message_buffer_autoclear", "version", …}``,
its messages without ids, every message of the agent in order. Letta's
``AgentFileSchema`` since (``letta/schemas/agent_file.py``) exports ``{"agents",
"tools", "blocks", "groups", "files", "sources", "mcp_servers", "metadata"}``: each
agent's ``messages`` (with ids: the ones in its context, ``in_context_message_ids``)
and ``tool_ids`` into the file's tools.

The file keeps no request: what each call was sent is rebuilt as Letta builds a
request (``Message.to_openai_dicts_from_list``) from the agent's context (its
``message_ids``): the system message in effect — Letta compiles it from the memory
blocks; up to 0.6 it wrote a new one whenever they changed, so the latest before the
answer, and from 0.7 it rewrites the one in place at each step, so a call before its
``updated_at`` was sent a version not in the file (noted) — then the other messages in
the context, in order. An answer is an ``assistant``
message, or an ``approval`` one that asks to run tools (a call needing the user's
approval; next to an assistant message's calls, one answer). A summary (role
``summary``, or Letta's ``system_alert`` user message "prior messages … have been
hidden") takes the place of the messages before it but those Letta kept — known for
those still in context at the end (``in_context_message_indices``, ids) — and the
conversation after it goes on in a thread of its own: its prompts begin with the
summary, the earlier ones' do not. An export of the context alone (``AgentFileSchema``)
holds no message the summary replaced: a call before it, whose prompt is not all in the
file, is left out (noted), its answer kept in the later prompts. With
``message_buffer_autoclear`` each outside input starts from the system message alone.
Letta sends a summary as the user's, an approval's answer not at
all (its tool messages carry the results), a tool message's ``tool_returns`` one result
each, an assistant message's reasoning not in this form (noted). The assistant messages
before the agent's first user message are Letta's initial message sequence, no call."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memory_core.errors import ImportFormatError
from memory_core.importers.common import (
    Exchange,
    fail,
    iso_time,
    names_zone,
    openai_message,
    openai_messages,
    shortened,
)
from memory_core.importers.formats import Record, RecordFormat
from memory_core.importers.jsonvalues import load_json
from memory_core.models.openai_codec import from_openai_message, from_openai_tools

KEY = "letta_agent_call"  # a call of an agent file, as ``letta_agent_files`` gives it

REBUILT = ("its prompt is rebuilt from the agent's messages as Letta builds a request "
           "(the system message in effect, then the messages in the agent's context); the "
           "file keeps which messages were in the context only at the end")
_REASONING = ("reasoning", "redacted_reasoning", "omitted_reasoning", "summarized_reasoning")
_SENT_NAME = re.compile(r"^[^\s<|\\/>]+$")  # a name Letta sends (``to_openai_dict``)
_LETTA_MADE = ("heartbeat", "login", "system_alert")  # user messages Letta writes itself


def _is_v1(obj: Any) -> bool:
    """Letta ≤ 0.10's export: one agent, its messages and in-context indices (or one
    agent of an ``AgentFileSchema`` export, given alone)."""
    return isinstance(obj, dict) and "messages" in obj and (
        "in_context_message_indices" in obj or "in_context_message_ids" in obj
        or "agent_type" in obj and ("llm_config" in obj or "core_memory" in obj))


def _is_v2(obj: Any) -> bool:
    """Letta's ``AgentFileSchema``: agents beside the file's blocks, tools, groups …"""
    agents = obj.get("agents") if isinstance(obj, dict) else None
    return isinstance(agents, list) and bool(
        {"blocks", "groups", "mcp_servers", "sources", "files"} & set(obj))


def _decoded(obj: Any, where: str) -> tuple[Any, bool]:
    """A document that is an agent file's JSON written as one JSON string (encoded
    twice, as some of letta-ai/agent-file's are): the file it holds."""
    if not (isinstance(obj, str) and obj.lstrip()[:1] == "{"
            and ('"agents"' in obj or '"in_context_message_indices"' in obj)):
        return obj, False
    try:
        inner = load_json(obj, where, "the JSON string's text")
    except ImportFormatError:
        return obj, False
    return (inner, True) if _is_v1(inner) or _is_v2(inner) else (obj, False)


def letta_agent_files(docs: Iterable[tuple[str, Any]]) -> Iterator[tuple[str, Any]]:
    """The documents, a Letta agent file given as its calls (each named by its agent and
    answer, ``messages[5]``); a call that cannot be rebuilt comes as its error."""
    for where, obj in docs:
        obj, twice = _decoded(obj, where)
        said = ["the file is the agent file's JSON written as one JSON string (encoded "
                "twice): read as the JSON it holds"] if twice else []
        if _is_v1(obj):  # (an agent of the later schema lists its context: by ids)
            tools = obj.get("tools")
            if not tools and obj.get("tool_ids"):  # (an agent taken out of its file)
                tools = None
                said.append("its tool_ids name tools of the file it was exported in, not "
                            "given here: the tools offered are unknown")
            yield from _calls(where, obj, tools, "in_context_message_ids" in obj, said)
        elif _is_v2(obj):
            tools = obj.get("tools")
            by_id = {t["id"]: t for t in tools if isinstance(t, dict)
                     and isinstance(t.get("id"), str)} if isinstance(tools, list) else {}
            left = [k for k in ("groups", "files", "sources", "mcp_servers", "skills")
                    if obj.get(k)]
            if left:
                said.append(f"the file's {', '.join(left)} not imported: each "
                            "agent's conversation is imported, its configuration is not")
            if not obj["agents"]:
                yield where, fail(where, "a Letta agent file with no agent in 'agents'")
            for a, agent in enumerate(obj["agents"]):
                at = f"{where}: agents[{a}]"
                if not isinstance(agent, dict):
                    yield at, fail(at, f"an agent must be an object, got "
                                       f"{shortened(repr(agent))}")
                    continue
                ids = agent.get("tool_ids")
                offered = None if not isinstance(ids, list) else \
                    [by_id[i] for i in ids if isinstance(i, str) and i in by_id]
                unknown = [i for i in ids if not (isinstance(i, str) and i in by_id)] \
                    if isinstance(ids, list) else []
                yield from _calls(at, agent, offered, True, said + (
                    [f"tool_ids names {len(unknown)} tool(s) the file does not hold "
                     f"({shortened(', '.join(map(repr, unknown[:5])))}): not offered"]
                    if unknown else []))
                said = []
        else:
            yield where, obj


# -- reading one agent's messages ----------------------------------------------------------
@dataclass
class _Msg:
    """One of the agent's messages, as Letta sends it (``sent``: the chat messages,
    none for what it does not send) and, when it is an answer, as the answer."""

    at: str  # "messages[5]"
    role: str
    sent: list[dict[str, Any]] = field(default_factory=list)
    created: datetime | None = None
    updated: datetime | None = None  # when Letta last rewrote it (``updated_at``)
    model: str | None = None
    calls: bool = False  # asks to run tools
    summary: bool = False
    outside: bool = False  # a user message not written by Letta (an input)
    reasoning: int = 0  # reasoning parts (not imported)
    naive: bool = False  # its time written without a zone
    notes: list[str] = field(default_factory=list)  # what reading it noted
    error: ImportFormatError | None = None
    id: Any = None


def _letta_type(text: str) -> str | None:
    """The ``type`` of a message Letta packed as JSON (``{"type": "heartbeat", …}``)."""
    if not text.lstrip().startswith("{"):
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    kind = value.get("type") if isinstance(value, dict) else None
    return kind if isinstance(kind, str) else None


def _content(raw: Any, at: str, m: _Msg) -> list[dict[str, Any]]:
    """A Letta message's content as chat parts (texts, images); reasoning counted,
    what Letta does not send noted."""
    if raw is None:
        return []
    if isinstance(raw, str):
        return [{"type": "text", "text": raw}]
    if not isinstance(raw, list):
        raise fail(at, f"'content' must be a list of parts or a text, got "
                       f"{shortened(repr(raw))}")
    out: list[dict[str, Any]] = []
    for j, part in enumerate(raw):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            out.append({"type": "text", "text": part["text"]})
        elif kind == "image" and isinstance(part.get("source"), dict):
            src = part["source"]
            url = src.get("url") if src.get("type") == "url" else (
                f"data:{src.get('media_type') or 'image/png'};base64,{src['data']}"
                if isinstance(src.get("data"), str) else None)
            if isinstance(url, str):
                out.append({"type": "image_url", "image_url": {"url": url}})
            else:
                m.notes.append(f"content part {j} of {at} (an image Letta keeps as file "
                               f"{src.get('file_id')!r}, not in the file) not imported")
        elif kind in _REASONING:
            m.reasoning += 1
        elif kind in ("tool_call", "tool_return"):
            m.notes.append(f"content part {j} of {at} ({kind}) not imported: Letta sends "
                           "the message's tool calls and returns instead")
        else:  # (Letta's requests send a message's texts and images, nothing else)
            m.notes.append(f"content part {j} of {at} not imported: of type {kind!r}, which "
                           "Letta does not send (expected text, image, reasoning, tool_call "
                           "or tool_return)")
    return out


def _chat_content(parts: list[dict[str, Any]]) -> str | list[dict[str, Any]] | None:
    """Parts as a chat message's content: one text as it is."""
    if not parts:
        return None
    return parts[0]["text"] if len(parts) == 1 and parts[0]["type"] == "text" else parts


def _text_of(parts: list[dict[str, Any]]) -> str:
    return "\n\n".join(p["text"] for p in parts if p["type"] == "text")


def _returned(value: Any) -> str:
    """A tool return's ``func_response`` as Letta sends it (``tool_return_to_text``)."""
    if value is None or isinstance(value, str):
        return value or ""
    if isinstance(value, list):
        texts = [p.get("text") for p in value if isinstance(p, dict) and p.get("type") == "text"]
        images = sum(1 for p in value if isinstance(p, dict) and p.get("type") == "image")
        text = "\n".join(t for t in texts if isinstance(t, str) and t)
        if images:
            said = "[Image omitted]" if images == 1 else f"[{images} images omitted]"
            text = f"{text} {said}" if text else said
        return text
    return json.dumps(value, ensure_ascii=False)


def _read_message(raw: Any, at: str) -> _Msg:
    if not isinstance(raw, dict):
        raise fail(at, f"a message must be an object, got {shortened(repr(raw))}")
    role = raw.get("role")
    if role not in ("system", "user", "assistant", "tool", "approval", "summary", "function"):
        raise fail(at, f"unknown role {role!r} (expected system, user, assistant, tool, "
                       "approval or summary, Letta's roles)")
    m = _Msg(at, role, id=raw.get("id"))
    created = raw.get("created_at")
    m.created = iso_time(created, at, "created_at")
    m.naive = isinstance(created, str) and not names_zone(created)
    try:  # (only said of a system message Letta rewrote after a call: a hint, not data)
        m.updated = iso_time(raw.get("updated_at"), at, "updated_at")
    except ImportFormatError:
        m.updated = None
    m.model = raw.get("model") if isinstance(raw.get("model"), str) else None
    parts = _content(raw["content"] if "content" in raw else raw.get("text"), at, m)
    name = raw.get("name")
    named = {"name": name} if isinstance(name, str) and _SENT_NAME.match(name) else {}
    calls = raw.get("tool_calls")
    if calls is not None and not (isinstance(calls, list) and all(
            isinstance(c, dict) for c in calls)):
        raise fail(at, f"'tool_calls' must be a list of calls, got {shortened(repr(calls))}")
    if role == "system":
        m.sent = [{"role": "system", "content": _text_of(parts)}]
    elif role in ("user", "summary"):
        text = _text_of(parts)
        kind = _letta_type(text) if role == "user" else None
        m.summary = role == "summary" or kind == "system_alert" and "hidden from view" in text
        m.outside = role == "user" and kind not in _LETTA_MADE
        m.sent = [{"role": "user", "content": _chat_content(parts) or "", **named}]
    elif role in ("assistant", "approval"):
        if role == "approval" and not calls:  # the user's answer to one: not sent
            return m
        m.calls = bool(calls)
        texts = [p for p in parts if p["type"] == "text"]
        if texts or calls:  # (reasoning alone: Letta sends nothing)
            m.sent = [{"role": "assistant", "content": _chat_content(texts), **named,
                       **({"tool_calls": calls} if calls else {})}]
    else:  # a tool's results: one message each (``to_openai_dicts_from_list``)
        listed = raw.get("tool_returns")
        returns = [r for r in listed if isinstance(r, dict) and isinstance(
            r.get("tool_call_id"), str) and "func_response" in r] \
            if isinstance(listed, list) else []
        for r in returns:
            m.sent.append({"role": "tool", "tool_call_id": r["tool_call_id"],
                           "content": _returned(r["func_response"])})
            said = [k for k in ("stdout", "stderr") if r.get(k)]
            if said:
                m.notes.append(f"the {' and '.join(said)} of tool call "
                               f"{r['tool_call_id']!r} in {at} not imported: Letta does not "
                               "send it to the model")
        if not returns:
            if not isinstance(raw.get("tool_call_id"), str):
                raise fail(at, "a tool message needs its 'tool_call_id' or 'tool_returns', "
                               f"got {shortened(repr(raw.get('tool_call_id')))}")
            m.sent = [{"role": "tool", "tool_call_id": raw["tool_call_id"],
                       "content": _text_of(parts)}]
    for d in m.sent:  # (read as a call will read it: one that cannot be is this message's)
        from_openai_message(d, at, [])
    return m


def _messages(raw: list[Any], where: str) -> list[_Msg]:
    """The agent's messages; one that cannot be read keeps its error (its problem
    after ``messages[i]: ``), and is left out wherever it would be."""
    out = []
    for i, item in enumerate(raw):
        at = f"messages[{i}]"
        try:
            out.append(_read_message(item, at))
        except ImportFormatError as e:
            role = item.get("role") if isinstance(item, dict) else None
            out.append(_Msg(at, role if isinstance(role, str) else "?",
                            error=ImportFormatError(f"{where}: {e}")))
    return out


def _problem(m: _Msg, where: str) -> str:
    return str(m.error).removeprefix(f"{where}: {m.at}: ")


def _in_context(agent: dict[str, Any], msgs: list[_Msg], v2: bool, notes: list[str]
                ) -> list[int] | None:
    """The positions of the messages in the agent's context at the end, in its order;
    None when the file does not say."""
    key = "in_context_message_ids" if v2 else "in_context_message_indices"
    raw = agent.get(key)
    if not isinstance(raw, list) or not raw:
        notes.append(f"the file does not say which messages were in the agent's context "
                     f"('{key}' {'is empty' if raw == [] else 'is missing'}): every message "
                     "before an answer is taken as sent with it")
        return None
    pos = {m.id: i for i, m in enumerate(msgs) if isinstance(m.id, str)} if v2 else None
    out: list[int] = []
    bad: list[Any] = []
    for x in raw:
        i = (pos.get(x) if isinstance(x, str) else None) if pos is not None else (
            x if isinstance(x, int) and not isinstance(x, bool) and 0 <= x < len(msgs)
            else None)
        if i is None:
            bad.append(x)
        else:
            out.append(i)
    if bad:
        notes.append(f"'{key}' names {len(bad)} message(s) the file does not hold "
                     f"({shortened(', '.join(map(repr, bad[:5])))}): left out")
    return out


def _chronological(msgs: list[_Msg], v2: bool) -> list[int]:
    """The messages in the order they were written. Letta ≤ 0.10 exports them so; an
    ``AgentFileSchema`` export lists the context, in its order — the system message
    and a summary first, whenever they were written — so by their times."""
    order = list(range(len(msgs)))
    if v2 and all(m.created is not None for m in msgs):
        order.sort(key=lambda i: msgs[i].created)  # type: ignore[arg-type,return-value]
    return order


def _merged(msgs: list[_Msg], order: list[int]) -> set[int]:
    """An approval that asks to run tools right after an assistant message's calls is
    the same answer (Letta collapses them): merged into it; the positions merged."""
    out: set[int] = set()
    for a, b in zip(order, order[1:], strict=False):
        x, y = msgs[a], msgs[b]
        if x.role == "assistant" and x.calls and y.role == "approval" and y.calls \
                and x.error is None and y.error is None:
            first, second = x.sent[0], y.sent[0]
            parts = [p for c in (first.get("content"), second.get("content")) if c
                     for p in ([{"type": "text", "text": c}] if isinstance(c, str) else c)]
            first["content"] = _chat_content(parts)
            first["tool_calls"] = first["tool_calls"] + second["tool_calls"]
            x.reasoning += y.reasoning
            x.notes += y.notes
            out.add(b)
    return out


def _offered(raw: Any, notes: list[str]) -> list[dict[str, Any]] | None:
    """The agent's tools as a request offers them (each tool's ``json_schema``); None
    when the file does not say which."""
    if not isinstance(raw, list):
        return None
    out = []
    for j, tool in enumerate(raw):
        schema = tool.get("json_schema") if isinstance(tool, dict) else None
        if isinstance(schema, dict) and isinstance(schema.get("name"), str) and schema["name"]:
            params = schema.get("parameters")
            out.append({"type": "function", "function": {
                "name": schema["name"], "description": str(schema.get("description") or ""),
                "parameters": params if isinstance(params, dict) else {}}})
        elif isinstance(tool, dict) and isinstance(tool.get("name"), str) and tool["name"]:
            out.append({"type": "function", "function": {
                "name": tool["name"], "description": str(tool.get("description") or ""),
                "parameters": {}}})
            notes.append(f"tool {tool['name']!r} has no json_schema: offered by "
                         "its name and description only")
        else:
            notes.append(f"tools[{j}] is no tool Letta describes (no "
                         f"json_schema, no name): not imported")
    return out


@dataclass
class _Call:
    """An answer and what it was sent: the system message in effect and the context."""

    pos: int
    system: int | None
    context: list[int]
    thread: str
    started: datetime | None
    notes: list[str]


def _thread_key(agent: dict[str, Any], msgs: list[_Msg]) -> str:
    """The agent's conversation, the same in every export of it: its name and id and
    when its first message was written (a Letta export keeps no id of its own)."""
    first = next((m.created for m in msgs if m.created is not None), None)
    said = json.dumps([agent.get("name"), agent.get("id"),
                       first.isoformat() if first else None], default=str)
    return "letta-" + hashlib.sha1(said.encode()).hexdigest()[:12]


def _said(msgs: list[_Msg], positions: list[int]) -> str:
    """Messages named in a note (a long run of them by its ends and count)."""
    named = [f"{msgs[p].at} ({msgs[p].role})" for p in positions]
    return ", ".join(named) if len(named) <= 4 else \
        f"{', '.join(named[:2])} … {named[-1]} ({len(named)} messages)"


def _llm(agent: dict[str, Any]) -> dict[str, Any]:
    llm = agent.get("llm_config")
    return llm if isinstance(llm, dict) else {}


def _agent_notes(agent: dict[str, Any], msgs: list[_Msg]) -> list[str]:
    """What every call of the agent shares and its first call's import says."""
    out = []
    llm = _llm(agent)
    if any(m.naive for m in msgs):
        out.append("Letta writes its messages' times without a zone: read as UTC")
    if llm.get("put_inner_thoughts_in_kwargs") is True and any(
            m.calls and m.sent and m.sent[0].get("content") for m in msgs):
        out.append("llm_config.put_inner_thoughts_in_kwargs: Letta sends an "
                   "assistant message's text (its inner thoughts) inside each of its tool "
                   "calls' arguments, as 'inner_thoughts', and adds that parameter to the "
                   "tools offered; kept here as the message's text, as Letta stores it")
    blocks = agent.get("core_memory") or agent.get("block_ids")
    if isinstance(blocks, list) and blocks:
        out.append(f"the agent's memory blocks ({len(blocks)}) not imported on "
                   "their own: each system message holds them as Letta compiled it")
    return out


def _calls(where: str, agent: dict[str, Any], tools_raw: Any, v2: bool,
           said: list[str]) -> Iterator[tuple[str, Any]]:
    name = agent.get("name")
    label = f"a Letta agent file (agent {name!r})" if isinstance(name, str) \
        else "a Letta agent file"
    raw = agent.get("messages")
    if not isinstance(raw, list):
        yield where, fail(where, f"{label}: 'messages' must be a list, got "
                                 f"{shortened(repr(raw))}")
        return
    msgs = _messages(raw, where)
    first_notes = said + _agent_notes(agent, msgs)
    final = _in_context(agent, msgs, v2, first_notes)
    walk = _Walk(msgs, where, v2, final, agent.get("message_buffer_autoclear") is True,
                 _thread_key(agent, msgs))
    walk.run()
    if not any(isinstance(c, _Call) for c in walk.calls):
        roles = ", ".join(f"{n} {r}" for r, n in _count(m.role for m in msgs))
        yield where, fail(where, f"{label} with no answer of its model to import: its "
                                 f"{len(msgs)} message(s){' (' + roles + ')' if roles else ''} "
                                 "hold none" + (f"; {_said(msgs, walk.booted)} is Letta's "
                                                "initial message sequence, no model call"
                                                if walk.booted else "")
                                 + ("" if any(m.role == "user" for m in msgs) else
                                    " (an agent exported before anyone talked to it)"))
        return
    gone = walk.evicted_unsaid()
    first_notes += _unsent(msgs, walk.calls, walk.merged, walk.booted)
    tools = _offered(tools_raw, first_notes)
    rules = agent.get("tool_rules")
    if tools is not None and isinstance(rules, list) and rules:
        kinds = sorted({str(r.get("type")) for r in rules if isinstance(r, dict)})
        first_notes.append(f"the tools offered are the agent's at export; its tool rules "
                           f"({', '.join(kinds)}) may have offered fewer at a step")
    llm = _llm(agent)
    shown: set[int] = set()
    for c in walk.calls:
        if not isinstance(c, _Call):
            yield c
            continue
        notes = [REBUILT, *first_notes, *c.notes]
        first_notes = []
        if gone & set(c.context):
            notes.append(f"its prompt holds {_said(msgs, [q for q in c.context if q in gone])}"
                         ", not in the agent's context at the end: Letta evicted them at a "
                         "time the file does not say (no summary marks it)")
        if c.system is None:
            notes.append("the system message in effect is not in the file (none is written "
                         "before it)")
        else:
            notes += _rewritten(msgs[c.system], msgs[c.pos], v2)
        yield f"{where}: {msgs[c.pos].at}", {KEY: _call_record(
            c, msgs, where, notes, shown, tools, llm)}


class _Walk:
    """The agent's messages in the order they were written, the context Letta held at
    each answer rebuilt: ``calls`` (each a ``_Call``, or where and why it cannot be
    rebuilt), ``booted`` (Letta's initial answers), ``merged`` (approvals merged into
    the answer before them)."""

    def __init__(self, msgs: list[_Msg], where: str, v2: bool, final: list[int] | None,
                 autoclear: bool, base: str) -> None:
        self.msgs, self.where, self.v2, self.autoclear = msgs, where, v2, autoclear
        self.kept_at_end = set(final) if final is not None else None
        self.order = _chronological(msgs, v2)
        self.merged = _merged(msgs, self.order)
        self.base = self.thread = base
        self.calls: list[_Call | tuple[str, ImportFormatError]] = []
        self.booted: list[int] = []
        self.context: list[int] = []
        # an export of the context alone (``AgentFileSchema``) holds what a summary left:
        # what an answer before the summary was sent is not all in the file
        first = next((p for p in final or [] if msgs[p].role != "system"), None)
        self.partial_before = first if v2 and first is not None and msgs[first].summary \
            else None

    def run(self) -> None:
        system = prev = None
        pending: list[str] = []
        began = None  # (what each call after a summary says of its context)
        summaries = made = 0  # (made: calls in the current thread)
        asked = False  # a user message (or a summary) came: what follows answers it
        for p in self.order:
            m = self.msgs[p]
            if p in self.merged:
                continue
            if m.role == "system" and m.error is None:
                system = p
            elif m.summary:
                before = None
                if made:  # (a thread of its own from here: ``_summarised``)
                    summaries, made = summaries + 1, 0
                    before, self.thread = self.thread, f"{self.base}-summary-{summaries}"
                pending.append(self._summarised(p, before))
                began = f"its context begins with Letta's summary {m.at}" + (
                    f"; the conversation before it is thread {before}" if before else "")
                self.context = [p, *self._kept()]
                asked, self.partial_before = True, None
            elif m.role == "approval" and not m.sent and m.error is None:
                prev = p
                continue  # (the user's approval: not sent, ``_unsent``)
            else:
                if self.autoclear and m.outside:
                    self.context = []  # (an input: Letta starts from the system message)
                if m.role in ("assistant", "approval"):
                    if self.partial_before is not None:
                        self.calls.append((f"{self.where}: {m.at}", self._partial(m)))
                    elif not asked:
                        self.booted.append(p)  # (no call: Letta's initial messages)
                    elif m.error is not None:
                        self.calls.append((f"{self.where}: {m.at}", m.error))
                    else:
                        started = self.msgs[prev].created if prev is not None else None
                        self.calls.append(_Call(p, system, list(self.context), self.thread,
                                                started, pending or ([began] if began else [])))
                        pending, made = [], made + 1
                asked = asked or m.role == "user"
                self.context.append(p)
            prev = p

    def _kept(self) -> list[int]:
        """What Letta kept beside a summary: those of the context still in it at the end."""
        return [q for q in self.context
                if self.kept_at_end is not None and q in self.kept_at_end]

    def _summarised(self, p: int, before: str | None) -> str:
        kept = self._kept()
        said = (f"Letta summarised the conversation before this call: the summary "
                f"{self.msgs[p].at} took the place of the messages before it in the agent's "
                "context" + (f" but {_said(self.msgs, kept)}, which Letta kept" if kept else ""))
        if before is not None:
            said += (f"; the conversation goes on from the summary as thread {self.thread}, "
                     f"the messages before it in thread {before}")
        elif self.v2:
            said += "; the messages it replaced are not in the file"
        if self.kept_at_end is None:
            said += ("; the file does not say which messages Letta kept beside it: none are "
                     "taken as kept")
        elif p not in self.kept_at_end:
            said += ("; which messages Letta kept beside this summary is known only for "
                     "those still in the context at the end")
        return said

    def _partial(self, m: _Msg) -> ImportFormatError:
        at = self.msgs[self.partial_before].at  # type: ignore[index]
        return fail(f"{self.where}: {m.at}", "what this call was sent is not all in the file: "
                    "Letta's export holds only the messages in the agent's context at the "
                    f"end, and the summary {at} took the place of some it was sent; its "
                    "answer is kept as a message of the conversation")

    def evicted_unsaid(self) -> set[int]:
        """The messages left in the context rebuilt here that Letta's is not holding at
        the end, no summary saying when they left (not with ``autoclear``: each input
        starts anew)."""
        if self.kept_at_end is None or self.autoclear:
            return set()
        return {q for q in self.context if q not in self.kept_at_end
                and self.msgs[q].role != "system"}


def _rewritten(system: _Msg, answer: _Msg, v2: bool) -> list[str]:
    """Whether the system message the file holds may not be the one a call was sent:
    Letta (0.7 on) rewrites that one message in place as the memory changes, and the
    time and message counts it states at each step."""
    if system.updated is not None and answer.created is not None \
            and system.updated > answer.created:
        return [f"its instructions are the system message {system.at} as Letta last "
                f"rewrote it, at {system.updated.isoformat()}, after this call (Letta "
                "rewrites it in place as the memory changes, and the time it states at "
                "each step): the version this call was sent is not in the file"]
    if v2:  # (an AgentFileSchema message keeps no updated_at)
        return [f"its instructions are the system message {system.at} as the export holds "
                "it: Letta rewrites it in place as the memory changes, and the time it "
                "states at each step, so this call may have been sent an earlier version, "
                "not in the file"]
    return []


def _count(items: Iterable[str]) -> list[tuple[str, int]]:
    out: dict[str, int] = {}
    for x in items:
        out[x] = out.get(x, 0) + 1
    return list(out.items())


def _unsent(msgs: list[_Msg], calls: list[Any], merged: set[int], booted: list[int]
            ) -> list[str]:
    """What no rebuilt call was sent, each kind said once: the user's approvals (Letta
    sends the tool messages after them), what was written after the last answer, and
    what left the context before another call was made."""
    made = [c for c in calls if isinstance(c, _Call)]
    used = {q for c in made for q in [*c.context, c.pos]}
    used |= {c.system for c in made if c.system is not None} | merged
    last = max(c.pos for c in made)
    approvals = [p for p, m in enumerate(msgs) if m.role == "approval" and not m.sent
                 and m.error is None]
    after = [p for p, m in enumerate(msgs) if p not in used and p not in approvals
             and p > last and m.error is None]
    other = [p for p, m in enumerate(msgs) if p not in used and p not in approvals
             and p <= last and m.error is None]
    out = []
    if booted:
        out.append(f"{_said(msgs, booted)}: Letta's initial message sequence, "
                   "written when the agent was created: no model call")
    if approvals:
        out.append(f"{_said(msgs, approvals)}: the user's answers to tool calls "
                   "awaiting approval (with the results of the tools the client ran), which "
                   "Letta does not send: the tool messages after them carry the results; "
                   "not imported")
    if other:
        out.append(f"{_said(msgs, other)}: in no call's prompt rebuilt from the "
                   "file (out of the context before the next call); not imported")
    if after:
        out.append(f"{_said(msgs, after)}: written after the agent's last answer "
                   "in the file, sent in no call it holds; not imported")
    return out


def _call_record(c: _Call, msgs: list[_Msg], where: str, notes: list[str],
                 shown: set[int], tools: list[dict[str, Any]] | None,
                 llm: dict[str, Any]) -> _Gathered:
    """The call as ``_read`` reads it: its instructions, what it sent, its answer."""
    at = f"{where}: {msgs[c.pos].at}"
    sent: list[dict[str, Any]] = []
    results: set[str] = set()
    for q in c.context:
        m = msgs[q]
        if m.error is not None:
            notes.append(f"its prompt would hold {m.at}, which cannot be read "
                         f"({_problem(m, where)}): left out")
            continue
        if q not in shown:
            notes += m.notes
            shown.add(q)
        for d in m.sent:  # (Letta sends a call's result once: ``dedupe_tool_messages``)
            if d["role"] == "tool" and d["tool_call_id"] in results:
                notes.append(f"the result of tool call {d['tool_call_id']!r} in {m.at} "
                             "was sent before in this prompt: Letta sends it once")
                continue
            results.add(d.get("tool_call_id", ""))
            sent.append(d)
    answer = msgs[c.pos]
    notes += [f"response: {n}" for n in answer.notes]
    if answer.reasoning:
        notes.append(f"response: its reasoning ({answer.reasoning} part(s)) not "
                     "imported")
    model = answer.model or (llm.get("model") if isinstance(llm.get("model"), str) else None)
    if answer.model is None and model is not None:
        notes.append(f"the answer names no model: the agent's llm_config.model at "
                     f"export, {model!r}")
    same = model is not None and model == llm.get("model")  # (the config's: at export)
    params = {k: llm[k] for k in ("temperature", "max_tokens") if same
              and isinstance(llm.get(k), int | float) and not isinstance(llm.get(k), bool)}
    if params:
        notes.append(f"its parameters ({', '.join(f'{k} {v}' for k, v in params.items())})"
                     " are the agent's llm_config at export")
    finished = answer.created
    started = c.started if c.started is not None and (
        finished is None or c.started <= finished) else finished
    return _Gathered(
        msgs[c.system].sent[0] if c.system is not None else None, sent,
        answer.sent[0] if answer.sent else {"role": "assistant", "content": None}, model,
        params if same else None, tools, c.thread, started, finished,
        [f"{at}: {n}" for n in notes])


@dataclass(frozen=True)
class _Gathered:
    """A call as ``letta_agent_files`` gives it to ``_read`` (under ``KEY``: an object
    no JSON file holds, so no file's record is taken for one): the chat messages of
    its instructions, of what it sent and of its answer, and what else it knows."""

    system: dict[str, Any] | None
    sent: list[dict[str, Any]]
    answer: dict[str, Any]
    model: str | None
    params: dict[str, Any] | None  # None: not known (the config names another model)
    tools: list[dict[str, Any]] | None
    thread: str
    started: datetime | None
    finished: datetime | None
    notes: list[str]


def _read(record: Record) -> list[Exchange]:
    call, where = record.obj[KEY], record.where
    notes = list(call.notes)
    messages = openai_messages(([call.system] if call.system else []) + call.sent, where,
                               notes)
    instructions, history = (messages[:1], messages[1:]) if call.system else ([], messages)
    response = openai_message(call.answer, f"{where}: response", notes)
    tools = from_openai_tools(call.tools, where, notes) if call.tools is not None else None
    return [Exchange(where=where, index=record.index, instructions=instructions,
                     history=history, response=response, thread_key=call.thread,
                     model=call.model, requested_model=call.model,
                     params=dict(call.params or {}), params_known=call.params is not None,
                     tools=tools, started_at=call.started, finished_at=call.finished,
                     notes=notes)]


FORMAT = RecordFormat("letta", 16, lambda r: isinstance(r.obj.get(KEY), _Gathered), _read)
