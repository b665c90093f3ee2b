"""What the model was given in a run, part by part, as text to search: every message of
its prompt and of its later steps — text, tool calls' names and arguments, tool results,
attachment placeholders — the instructions, working memory and observations, and the
tools it was offered (name, description, parameters), each with where it stood; a stored
message's parts the same way (why-forgotten by phrase)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from memory_core.analysis.rendering import attachment_text
from memory_core.journal import ImportRecord, RunData, RunStep
from memory_core.types import Message

PartKind = Literal["text", "tool-call-name", "tool-call-arguments", "tool-result",
                   "attachment", "instructions", "working-memory", "observations",
                   "tool-definition", "request-parameters"]

#: prompt lanes whose text is no conversation's message, and the part their text is
LANE_PARTS: dict[str, PartKind] = {"instructions": "instructions",
                                   "working_memory": "working-memory",
                                   "observations": "observations"}
#: the lane of a message the run's own steps added (a tool call and its result)
STEP_LANE = "step"
#: the "lane" of a tool the model was offered (its definition, sent with the request)
TOOLS_LANE = "tools"
#: the "lane" of an imported request's parameters the model reads: a response format,
#: its schema (names, titles, descriptions), sent with the request
PARAMS_LANE = "request_parameters"


def normalise(text: str) -> str:
    """Text as a phrase is compared: lower case, whitespace collapsed."""
    return " ".join(text.split()).lower()


def value_text(value: Any) -> str:
    """A tool call's arguments or a tool result as text: a string as it is, anything
    else as JSON (what the model was sent)."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def _leaves(value: Any) -> Iterator[str]:
    """The strings inside a JSON value (keys and values): found as written, where the
    JSON form escapes quotes and newlines."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield str(k)
            yield from _leaves(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _leaves(v)


@dataclass(frozen=True)
class MessagePart:
    """One searchable part of a message: its kind, its text, and for a tool call or
    result the tool's name and the call's id."""

    part: PartKind
    text: str
    tool: str | None = None
    call_id: str | None = None
    leaves: tuple[str, ...] = ()  # strings inside a JSON value, also searched
    # a JSON value (tool arguments, a result: an object, or a list holding objects): a
    # phrase of its objects' members holds whatever order the recording wrote them in
    # (the store keeps them sorted)
    obj: dict[str, Any] | list[Any] | None = field(default=None, compare=False, hash=False)

    def holds(self, needle: str) -> bool:
        """Whether the part holds ``needle`` (already ``normalise``d) word for word, or
        — for a JSON object — each of the members ``needle`` writes out
        (``"operation":"add","a":5`` in ``{"a":5,"b":3,"operation":"add"}``)."""
        return any(needle in normalise(t) for t in (self.text, *self.leaves)) or (
            self.obj is not None and _members_held(needle, self.obj))


class _Fragment(NamedTuple):
    """The JSON object members a phrase writes out, and what it cuts short: the key
    whose text value it ends inside (``cut``), the end of the value it starts inside
    (``head``: ``Kenobi","quote":…``), a key it ends on (``last_key``: ``…,"quote"``)."""

    members: dict[str, Any]
    cut: str | None = None
    head: str | None = None
    last_key: str | None = None


# a phrase that starts inside a text value: that value's end, then the members after it
_HEAD = re.compile(r'"?((?:[^"\\]|\\.)*)"\s*,\s*(?=")')
# a phrase that ends on a key (with or without its colon)
_LAST_KEY = re.compile(r',\s*"((?:[^"\\]|\\.)*)"\s*:?\s*$')


def _members(needle: str) -> _Fragment | None:
    """The members a phrase writes out (``"a":5,"b":"x"``, with or without its braces;
    starting or ending inside a value, or ending on a key — a phrase copied out of
    arguments anywhere, their keys in any order: the store keeps them sorted); None
    when it is no such text."""
    body = needle.strip().removeprefix("{").removesuffix("}").strip().rstrip(",")
    if '":' not in body and '" :' not in body:
        return None
    heads: list[tuple[str | None, str]] = [(None, body)]
    if (m := _HEAD.match(body)) is not None and not body[m.end():].startswith(":"):
        heads.append((m.group(1), body[m.end():]))
    for head, rest in heads:
        tails: list[tuple[str | None, str]] = [(None, rest)]
        if (k := _LAST_KEY.search(rest)) is not None:
            tails.append((k.group(1), rest[:k.start()]))
        for last_key, core in tails:
            for text, cut in (("{" + core + "}", False), ("{" + core + '"}', True)):
                try:
                    got = json.loads(text)
                except ValueError:
                    continue
                if isinstance(got, dict) and got:
                    last = list(got)[-1]
                    return _Fragment(got, last if cut and isinstance(got[last], str)
                                     else None, head, last_key)
    return None


def _same(a: Any, b: Any) -> bool:
    """JSON values equal as a phrase is compared (case and whitespace aside)."""
    def said(x: Any) -> str:
        return normalise(json.dumps(x, ensure_ascii=False, sort_keys=True,
                                    separators=(",", ":")))
    return said(a) == said(b)


_NONE = object()  # (no such member)


def _members_held(needle: str, obj: dict[str, Any] | list[Any]) -> bool:
    """Whether ``obj``, or an object inside it, has every member ``needle`` writes out
    (and, where it starts inside a value or ends on a key, such a value and key)."""
    found = _members(needle)
    if found is None:
        return False
    wanted, cut, head, last_key = found

    def same(k: str, v: Any, have: dict[str, Any]) -> bool:
        got = have.get(normalise(k), _NONE)
        if k == cut:  # (its value's beginning)
            return isinstance(got, str) and normalise(got).startswith(normalise(v))
        return got is not _NONE and _same(got, v)

    def held(o: Any) -> bool:
        if isinstance(o, dict):
            have = {normalise(str(k)): v for k, v in o.items()}
            if all(same(str(k), v, have) for k, v in wanted.items()) and (
                    last_key is None or normalise(last_key) in have) and (
                    head is None or any(isinstance(v, str) and normalise(v).endswith(
                        normalise(head)) for k, v in have.items() if k not in wanted)):
                return True
            return any(held(v) for v in o.values())
        return isinstance(o, list) and any(held(v) for v in o)
    return held(obj)


def _json_part(kind: PartKind, value: Any, tool: str, call_id: str) -> MessagePart:
    leaves = () if isinstance(value, str) else tuple(_leaves(value))
    return MessagePart(kind, value_text(value), tool=tool, call_id=call_id, leaves=leaves,
                       obj=value if isinstance(value, dict | list) else None)


def message_parts(message: Message, lane: str | None = None) -> list[MessagePart]:
    """Every part of ``message`` with text, in the order a phrase is looked for: its
    text (as the lane's part in the instructions, working memory or observations), tool
    calls' names and arguments, tool results, attachment placeholders."""
    out: list[MessagePart] = []
    text = message.text()
    if text:
        out.append(MessagePart(LANE_PARTS.get(lane or "", "text"), text))
    for call in message.tool_calls():
        out.append(MessagePart("tool-call-name", call.name, tool=call.name, call_id=call.id))
        if call.args not in (None, "", {}, []):
            out.append(_json_part("tool-call-arguments", call.args, call.name, call.id))
    for res in message.tool_results():
        if res.result not in (None, ""):
            out.append(_json_part("tool-result", res.result, res.name, res.call_id))
    for att in message.metadata.get("attachments") or []:
        if isinstance(att, dict):
            out.append(MessagePart("attachment", attachment_text(att),
                                   leaves=tuple(str(v) for k, v in att.items()
                                                if k != "index" and isinstance(v, str))))
    return out


@dataclass(frozen=True)
class GivenMessage:
    """A message the model was given in a run: where it stood (a prompt lane, or
    ``STEP_LANE`` for one the run's steps added), the step it was first given at (0:
    the composed prompt) and the stored message it is (None: not stored)."""

    message: Message
    lane: str
    step: int
    ref: tuple[str, int] | None = None
    observation_id: str | None = None
    parts: tuple[MessagePart, ...] = ()  # searched instead of the message's (a tool's)

    @property
    def is_question(self) -> bool:
        """The question the run answered (its input's user messages)."""
        return self.lane == "input" and self.message.role == "user"


def conversation(data: RunData) -> list[tuple[Message, int | None, tuple[str, int] | None]]:
    """The messages the run's steps added after its prompt, in order (each answer, then
    its tool calls' results), each with the step that was given it (None: no step was —
    the last answer, or results of the last step's calls) and the stored message it is
    (the run's ``persist:output`` seqs, when they are one per message)."""
    from memory_core.runs.runner import tool_message

    added: list[tuple[Message, int | None]] = []
    last = len(data.steps) - 1
    for i, step in enumerate(data.steps):
        given = i + 1 if i < last else None
        added.append((step.response.as_message(), given))
        for call in step.response.tool_calls:
            rec = data.tools.get(call.id)
            if rec is not None:
                added.append((tool_message(call, rec), given))
    seqs = list(data.persist_output.seqs) if data.persist_output else []
    thread = data.run.thread_id
    if thread is None or len(seqs) != len(added):
        return [(m, g, None) for m, g in added]
    return [(m, g, (thread, q)) for (m, g), q in zip(added, seqs, strict=True)]


def given_messages(data: RunData) -> list[GivenMessage]:
    """Every message the model was given in the run: its prompt's items, then what its
    steps added and a later step was given."""
    out = [GivenMessage(it.message, it.lane, 0, ref, it.observation_id)
           for it, ref in zip(data.prompt.items, data.prompt_refs(), strict=True)]
    out += [GivenMessage(m, STEP_LANE, step, ref)
            for m, step, ref in conversation(data) if step is not None]
    return out


def offered_tools(steps: Sequence[RunStep]) -> list[GivenMessage]:
    """Each tool the model was offered in a run's ``steps`` (the first step that offered
    it), its definition as one part: its name, description and parameters' schema (the
    strings inside it searched as written)."""
    out: list[GivenMessage] = []
    seen: set[str] = set()
    for step in steps:
        for spec in step.tool_specs:
            schema = value_text(spec.parameters)
            text = f"{spec.name}: {spec.description}".rstrip(": ") + f" · parameters {schema}"
            if text in seen:
                continue
            seen.add(text)
            part = MessagePart("tool-definition", text, tool=spec.name, leaves=(
                spec.name, spec.description, *_leaves(spec.parameters)))
            out.append(GivenMessage(Message(role="system", content=text), TOOLS_LANE,
                                    step.index, parts=(part,)))
    return out


def _read_by_model(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """The members of a request's parameters the model reads, each with its path: an
    object whose key names a format or a schema and that says more than its ``type``
    (``response_format``'s JSON schema, the Responses API's ``text.format``, Gemini's
    ``responseSchema``, Ollama's ``format`` as a schema); the sampling settings, stop
    sequences, metadata, an audio format or a plain ``{"type": "text"}`` are left."""
    if isinstance(value, dict):
        for k, v in value.items():
            at = f"{path}.{k}" if path else str(k)
            if ("format" in str(k).lower() or "schema" in str(k).lower()) \
                    and isinstance(v, dict) and set(v) - {"type"}:
                yield at, v
            else:
                yield from _read_by_model(v, at)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _read_by_model(v, f"{path}[{i}]")


def request_parameters(record: ImportRecord | None) -> list[GivenMessage]:
    """An imported run's recorded parameters the model reads (``_read_by_model``) as
    one part, given with the request; none for a run this library ran, or a request
    that set no format."""
    held = dict(_read_by_model(dict(record.request_params))) if record is not None else {}
    if not held:
        return []
    text = json.dumps(held, ensure_ascii=False)
    part = MessagePart("request-parameters", text, leaves=tuple(_leaves(held)), obj=held)
    return [GivenMessage(Message(role="system", content=text), PARAMS_LANE, 0, parts=(part,))]


# -- a phrase in the parts ---------------------------------------------------------------
@dataclass(frozen=True)
class PartHit:
    """A message with a part that holds a phrase: word for word (``contains``), else
    every word of it (recall's BM25 terms); the model was given it as ``given`` (None:
    not in this run), and it is stored as ``ref`` (None: not stored)."""

    message: Message
    part: MessagePart
    contains: bool
    given: GivenMessage | None = None
    ref: tuple[str, int] | None = None


def part_hit(parts: list[MessagePart], needle: str,
             terms: set[str]) -> tuple[MessagePart, bool] | None:
    """The first part holding ``needle`` (``normalise``d) word for word, else the first
    holding every one of ``terms`` (recall's BM25 terms of it); None when none does."""
    from memory_core.recall.lexical import lexical_terms

    for p in parts:
        if p.holds(needle):
            return p, True
    for p in parts if terms else ():
        if terms <= set(lexical_terms(" ".join((p.text, *p.leaves)))):
            return p, False
    return None


def phrase_hits(given: list[GivenMessage], others: list[Any], needle: str,
                terms: set[str]) -> list[PartHit]:
    """The messages the model was given, then ``others`` (stored messages it may not
    have been given), whose parts hold ``needle`` or all of ``terms``; one hit per
    message (its first such part), a stored message once."""
    out: list[PartHit] = []
    seen: set[tuple[str, int]] = set()
    for g in given:
        hit = part_hit(list(g.parts) or message_parts(g.message, g.lane), needle, terms)
        if hit is not None and (g.ref is None or g.ref not in seen):
            out.append(PartHit(g.message, hit[0], hit[1], g, g.ref))
            seen.update([g.ref] if g.ref else [])
    for m in others:
        hit = part_hit(message_parts(m), needle, terms) if m.ref not in seen else None
        if hit is not None:
            out.append(PartHit(m, hit[0], hit[1], None, m.ref))
            seen.add(m.ref)
    return out


def place(hit: PartHit) -> str:
    """Where a hit is, in words: the part, and the message it is in."""
    p, g = hit.part, hit.given
    if hit.ref is not None:
        at = f"message {hit.ref[0]} #{hit.ref[1]}"
    elif g is not None and g.lane == STEP_LANE:
        at = f"a message the model was given at step {g.step} of this run"
    else:
        at = f"the {g.lane if g else 'input'} part of this run's prompt"
    obs = f" (observation {g.observation_id})" if g and g.observation_id else ""
    # (a result answering no call the recording holds: its tool's name is unknown)
    tool = f"tool {p.tool}" if p.tool else "a tool whose name is not recorded"
    return {"text": f"the text of {at}",
            "tool-call-name": f"the name of tool call {p.call_id} in {at}",
            "tool-call-arguments": f"the arguments of the call to {tool} (call "
                                   f"{p.call_id}) in {at}",
            "tool-result": f"the result of {tool} (call {p.call_id}) in {at}",
            "attachment": f"an attachment placeholder in {at}",
            "instructions": "the instructions (the system prompt) of this run's prompt",
            "working-memory": "the working memory in this run's prompt",
            "observations": f"the observations{obs} in this run's prompt",
            "tool-definition": f"the definition of tool {p.tool} (its name, description "
                               "and parameters) offered to the model in this run",
            "request-parameters": "the response format this run's request asked for (in "
                                  "its recorded parameters)"}[p.part]


_NOUNS: dict[str, tuple[str, str]] = {
    "text": ("stored message", "stored messages"),
    "unstored": ("message of the run not stored", "messages of the run not stored"),
    "tool-call-name": ("tool call's name", "tool calls' names"),
    "tool-call-arguments": ("tool call's arguments", "tool calls' arguments"),
    "tool-result": ("tool result", "tool results"),
    "attachment": ("attachment placeholder", "attachment placeholders"),
    "tool-definition": ("tool definition offered", "tool definitions offered")}


def places_counted(hits: list[PartHit]) -> str:
    """Hits counted by part, in words: "1 tool result, 2 stored messages and the
    instructions"."""
    counts: dict[str, int] = {}
    for h in hits:
        kind = "unstored" if h.part.part == "text" and h.ref is None else h.part.part
        counts[kind] = counts.get(kind, 0) + 1
    said = [f"{n} {_NOUNS[k][n != 1]}" if k in _NOUNS else
            "the response format the request asked for" if k == "request-parameters"
            else f"the {k.replace('-', ' ')}" for k, n in counts.items()]
    return said[0] if len(said) == 1 else ", ".join(said[:-1]) + " and " + said[-1]


def excerpt(text: str, needle: str, width: int = 160) -> str:
    """``text`` on one line around the first place it holds ``needle`` (``normalise``d),
    at most ``width`` characters (more for a longer needle), an ellipsis where cut."""
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    at = flat.lower().find(needle)
    if at < 0:
        return flat[:width - 1] + "…"
    start = max(0, at - max(width - len(needle), 0) // 2)
    end = min(len(flat), start + max(width, len(needle)))
    return ("…" if start else "") + flat[start:end] + ("…" if end < len(flat) else "")
