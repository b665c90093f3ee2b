"""Gemini CLI's chat files (``~/.gemini/tmp/<project>/chats/session-*.json``, since
gemini-cli 0.2; ``session-*.jsonl`` since April 2026), written by its
``ChatRecordingService``: a session's ``sessionId``, ``projectHash``, ``startTime``,
``lastUpdated`` (``kind``: ``main`` or ``subagent``) and its ``messages``, each ``{"id",
"timestamp", "type": "user" | "gemini" | "info" | "error" | "warning", "content"}`` —
``content`` a text or a list of Gemini API parts — and, on a ``gemini`` message (a model
answer), ``toolCalls`` (``id``, ``name``, ``args``, ``result``: the
``functionResponse`` parts sent back, ``status``), ``thoughts`` (its thought summaries),
``tokens`` (``input``, ``output``, ``cached``, ``thoughts``, ``tool``, ``total``: the
call's ``usageMetadata``) and ``model``.

The ``.json`` file is one JSON document; the ``.jsonl`` file a log gemini-cli replays
when it resumes a session (``loadConversationRecord``), read alike: its first line the
session's fields, then each message (written again whenever it changes: the last copy
counts, in the place of the first), ``{"$set": {...}}`` (the session's fields; with
``messages``, the whole list replaced, as after a compression) and ``{"$rewindTo":
id}`` (that message and all after it removed) — what was rewound or replaced away is
noted, not imported.

Each ``gemini`` message that is a model call (it names its ``model`` or counts its
``tokens``; gemini-cli's own turns — a compression's acknowledgement — name neither)
is one run, its request rebuilt as gemini-cli sends it (``convertSessionToClientHistory``):
the messages before it, each user message as sent, each answer as its text and function
calls (thought parts stripped, as gemini-cli strips them), followed by the results of
its ``toolCalls`` as the ``functionResponse`` parts it sent back — or, since gemini-cli
records those as a user message of their own, that message. Its usage is ``tokens``
read as the Gemini API's ``usageMetadata`` (thoughts counted in the output, as they are
billed; ``cached`` within the input); its time from the message before it (or its tool
calls' end) to its own ``timestamp``. The system prompt and the tools offered are not
kept (unknown); thoughts are noted, not imported; ``info``, ``error`` and ``warning``
messages are what the terminal showed, never sent (noted). An answer holding neither
text nor a tool call is one whose tool calls the file does not keep (a subagent's
session, an older non-interactive run): it is left out, saying so, and every later
call's prompt notes what it lacks."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from memory_core.errors import ImportFormatError
from memory_core.importers.common import Exchange, fail, iso_time, shortened
from memory_core.importers.formats import Record, RecordFormat
from memory_core.importers.gemini import gemini_exchange

KEY = "gemini_cli_call"  # a call of a session, as ``gemini_cli_sessions`` gives it
REBUILT = ("its prompt is rebuilt from the Gemini CLI session as gemini-cli sends it "
           "(the messages before the answer, each answer's tool results from its "
           "toolCalls when no message holds them): what was sent is not kept; the system "
           "prompt and the tools offered are not in the file (unknown)")
SHOWN = ("info", "error", "warning")  # what the terminal showed: never sent
_TYPES = ("user", "gemini", *SHOWN)
_TOKENS = {"input": "promptTokenCount", "output": "candidatesTokenCount",
           "cached": "cachedContentTokenCount", "thoughts": "thoughtsTokenCount",
           "tool": "toolUsePromptTokenCount", "total": "totalTokenCount"}


def is_session(obj: Any) -> bool:
    """A Gemini CLI session: the whole ``.json`` document (its ``messages``), or the
    first line of a ``.jsonl`` one (the session's fields alone)."""
    return isinstance(obj, dict) and isinstance(obj.get("sessionId"), str) \
        and isinstance(obj.get("projectHash"), str) and (
            isinstance(obj.get("messages"), list)
            or "messages" not in obj and "startTime" in obj)


def gemini_cli_sessions(docs: Iterable[tuple[str, Any]]) -> Iterator[tuple[str, Any]]:
    """The documents, a session (from its first document on) given as its calls, each
    named by its message; what is no call comes as its error."""
    docs = iter(docs)
    for where, obj in docs:
        if is_session(obj):
            yield from _calls(where, obj, docs)
            return
        yield where, obj


@dataclass(frozen=True)
class _Call:
    """A call of a session: the Gemini API request and response it is read as, and
    what to note of it."""

    request: dict[str, Any]
    response: dict[str, Any]
    notes: tuple[str, ...]
    thread: str
    started: str | None
    finished: str | None


class _Log:
    """A session's messages as gemini-cli loads them: a message written again replaces
    the earlier copy in its place; ``$rewindTo`` and ``$set.messages`` cut and replace."""

    def __init__(self) -> None:
        self.messages: dict[str, tuple[str, dict[str, Any]]] = {}
        self.session: dict[str, Any] = {}
        self.errors: list[tuple[str, ImportFormatError]] = []
        self.rewound = self.replaced = self.rewritten = 0

    def add(self, where: str, msg: Any) -> None:
        if not isinstance(msg, dict) or not isinstance(msg.get("id"), str):
            self.errors.append((where, fail(where, "expected a message of the session (an "
                                                   "object with its 'id'), got "
                                                   f"{shortened(repr(msg), 80)}")))
            return
        self.rewritten += msg["id"] in self.messages
        self.messages[msg["id"]] = (where, msg)

    def set_fields(self, where: str, fields: dict[str, Any]) -> None:
        listed = fields.get("messages")
        if isinstance(listed, list):
            kept = {m.get("id") for m in listed if isinstance(m, dict)}
            self.replaced += sum(1 for k in self.messages if k not in kept)
            self.messages = {}
            for i, m in enumerate(listed):
                self.add(f"{where}: messages[{i}]", m)
        self.session.update({k: v for k, v in fields.items() if k != "messages"})

    def rewind(self, to: str) -> None:
        ids = list(self.messages)
        cut = ids.index(to) if to in ids else 0  # (an id not found: all of it, as gemini-cli)
        self.rewound += len(ids) - cut
        self.messages = {k: self.messages[k] for k in ids[:cut]}

    def read(self, where: str, obj: Any) -> None:
        if isinstance(obj, ImportFormatError):  # (a line cut short: its container's error)
            self.errors.append((where, obj))
        elif isinstance(obj, dict) and isinstance(obj.get("$rewindTo"), str):
            self.rewind(obj["$rewindTo"])
        elif isinstance(obj, dict) and isinstance(obj.get("$set"), dict):
            self.set_fields(where, obj["$set"])
        elif isinstance(obj, dict) and isinstance(obj.get("id"), str):
            self.add(where, obj)
        elif is_session(obj) or isinstance(obj, dict) and isinstance(
                obj.get("sessionId"), str) and isinstance(obj.get("projectHash"), str):
            self.set_fields(where, obj)
        else:
            self.errors.append((where, fail(where, "a line of the session that is neither "
                                                   "a message, a $set nor a $rewindTo: "
                                                   f"{shortened(repr(obj), 80)}")))


def _parts(content: Any, where: str) -> list[Any]:
    """A message's content (a ``PartListUnion``) as a list of parts, as gemini-cli's
    ``ensurePartArray`` makes it."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"text": content}] if content else []
    if isinstance(content, dict):
        return [content]
    if isinstance(content, list):
        parts = [{"text": p} if isinstance(p, str) else p for p in content]
        bad = next((p for p in parts if not isinstance(p, dict)), None)
        if bad is None:
            return parts
        raise fail(where, f"a part of 'content' must be an object or a text, got "
                          f"{shortened(repr(bad), 60)}")
    raise fail(where, f"'content' must be a text or a list of parts, got "
                      f"{type(content).__name__}")


def _is_thought(part: Any) -> bool:
    return isinstance(part, dict) and part.get("thought") is True


def _calls_of(msg: dict[str, Any], where: str) -> list[dict[str, Any]]:
    raw = msg.get("toolCalls")
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(c, dict) for c in raw):
        raise fail(where, f"'toolCalls' must be a list of objects, got "
                          f"{shortened(repr(raw), 80)}")
    return raw


def _model_parts(msg: dict[str, Any], where: str) -> tuple[list[Any], int]:
    """An answer as the model turn gemini-cli sends back: its content's parts but
    thoughts, then the calls of its ``toolCalls`` when the content holds none; and how
    many thought parts were left out."""
    parts = _parts(msg.get("content"), where)
    kept = [p for p in parts if not _is_thought(p)]
    thoughts = len(parts) - len(kept)
    if not any(isinstance(p, dict) and "functionCall" in p for p in kept):
        for c in _calls_of(msg, where):
            args = c.get("args", {})
            if not isinstance(c.get("name"), str) or not isinstance(args, dict | None):
                raise fail(where, f"a tool call needs a 'name' and its 'args' an object, got "
                                  f"{shortened(repr(c), 80)}")
            kept.append({"functionCall": {"id": c.get("id"), "name": c.get("name"),
                                          "args": args if args is not None else {}}})
    return kept, thoughts


def _results(msg: dict[str, Any], where: str, notes: list[str]) -> list[Any]:
    """The ``functionResponse`` parts an answer's tool calls sent back (their
    ``result``), as gemini-cli rebuilds them; a call without one noted."""
    out: list[Any] = []
    for c in _calls_of(msg, where):
        result = c.get("result")
        if isinstance(result, str) and result:
            out.append({"functionResponse": {"id": c.get("id"), "name": c.get("name"),
                                             "response": {"output": result}}})
        elif isinstance(result, list) and result:
            out += _parts(result, where)
        elif isinstance(result, dict):
            out.append(result)
        else:
            notes.append(f"{where}: tool call {c.get('name')!r} ({c.get('status')}) has no "
                         "result recorded: not in the prompts after it")
    return out


def _is_results(msg: dict[str, Any], where: str) -> bool:
    """A user message holding tool results only (gemini-cli records what it sends back
    so since May 2026)."""
    parts = _parts(msg.get("content"), where)
    return bool(parts) and all(isinstance(p, dict) and "functionResponse" in p
                               for p in parts)


def _usage(tokens: Any) -> dict[str, Any] | None:
    """``tokens`` as the Gemini API's ``usageMetadata``; None when it counts nothing."""
    if not isinstance(tokens, dict) or not any(tokens.get(k) for k in _TOKENS):
        return None
    return {_TOKENS[k]: v for k, v in tokens.items() if k in _TOKENS}


def _time(msg: dict[str, Any]) -> str | None:
    at = msg.get("timestamp")
    return at if isinstance(at, str) else None


def _sent_at(msg: dict[str, Any]) -> str | None:
    """When what follows a message was sent: the latest of its time and its tool
    calls' (an answer's results are sent when its last tool ends)."""
    calls = msg.get("toolCalls")
    times = [t for t in [_time(msg), *(c.get("timestamp") for c in (
        calls if isinstance(calls, list) else []) if isinstance(c, dict))]
        if isinstance(t, str)]
    return max(times) if times else None


def _calls(where: str, first: dict[str, Any], docs: Iterator[tuple[str, Any]]
           ) -> Iterator[tuple[str, Any]]:
    log = _Log()
    listed = first.get("messages")
    log.session.update({k: v for k, v in first.items() if k != "messages"})
    for i, m in enumerate(listed if isinstance(listed, list) else []):
        log.add(f"{where}: messages[{i}]", m)
    for w, obj in docs:
        log.read(w, obj)
    yield from log.errors
    out = list(_session_calls(log, where))
    if not any(isinstance(obj, dict) for _, obj in out):
        kinds = Counter(str(m.get("type")) for _, m in log.messages.values())
        said = ", ".join(f"{k} ×{n}" if n > 1 else k for k, n in kinds.items()) or "none"
        why = next((str(e).removeprefix(f"{w}: ") for w, e in out), None)
        yield where, fail(where, f"a Gemini CLI session (its messages: {said}) holding "
                                 + (f"no answer that can be imported; the first, {out[0][0]}"
                                    f": {why}" if why else "no answer of the model"))
    yield from out


def _file_notes(log: _Log, shown: Counter[str], synthetic: list[str]) -> list[str]:
    notes: list[str] = []
    if shown:
        said = ", ".join(f"{k} ×{n}" if n > 1 else k for k, n in shown.items())
        notes.append(f"the session's messages of what the terminal showed, never sent to "
                     f"the model, not imported: {said}")
    if synthetic:
        notes.append(f"{len(synthetic)} model turn(s) gemini-cli wrote itself (no model, "
                     f"no tokens: {', '.join(synthetic[:3])}{' …' if len(synthetic) > 3 else ''})"
                     " are no model call: kept in the prompts after them")
    if log.rewound:
        notes.append(f"{log.rewound} message(s) rewound away ($rewindTo) not imported: the "
                     "session as gemini-cli resumes it")
    if log.replaced:
        notes.append(f"{log.replaced} message(s) no longer in the history that replaced the "
                     "session's ($set messages, as after a compression) not imported")
    if log.rewritten:
        notes.append(f"{log.rewritten} line(s) write a message again (its tool calls or "
                     "tokens added): the last copy read, in the place of the first")
    return notes


def _session_calls(log: _Log, where: str) -> Iterator[tuple[str, Any]]:
    session = str(log.session.get("sessionId"))
    thread = f"gemini-cli/{session}" + ("/subagent" if log.session.get("kind") == "subagent"
                                        else "")
    shown: Counter[str] = Counter()
    synthetic: list[str] = []
    turns: list[dict[str, Any]] = []
    gaps: list[str] = []  # answers whose tool calls the session does not keep
    unread: list[str] = []  # messages that could not be read: not in the later prompts
    last_sent: str | None = None
    pending: list[tuple[str, Any]] = []
    msgs = list(log.messages.values())
    for k, (w, msg) in enumerate(msgs):
        kind = msg.get("type")
        try:
            if kind in SHOWN:
                shown[str(kind)] += 1
                continue
            if kind == "user":
                parts = _parts(msg.get("content"), w)
                if parts:
                    turns.append({"role": "user", "parts": parts})
                last_sent = _time(msg) or last_sent
                continue
            if kind != "gemini":
                raise fail(w, f"a message of type {kind!r} (expected one of "
                              f"{', '.join(_TYPES)})")
            notes: list[str] = []
            model_parts, thought_parts = _model_parts(msg, w)
            is_call = isinstance(msg.get("model"), str) or isinstance(msg.get("tokens"), dict)
            answered = any(not (isinstance(p, dict) and p.get("text") == "")
                           for p in model_parts)
            if is_call and not answered:
                gaps.append(w)
                last_sent = _sent_at(msg) or last_sent
                tokens = msg.get("tokens")
                out = tokens.get("output") if isinstance(tokens, dict) else None
                raise fail(w, "an answer holding neither text nor a tool call"
                              + (f" ({out} output tokens)" if out else "") + ": its tool "
                              "calls are not kept (as in a subagent's session or an older "
                              "non-interactive run) — what it answered is not in the file")
            answered_back = _next_is_results(msgs, k)
            results = _results(msg, w, notes) if not answered_back else []
            if is_call:
                if turns and turns[-1].get("open"):
                    gaps.append(turns[-1]["where"])
                    turns[-1]["open"] = False
                pending.append(_call(w, msg, turns, model_parts, thought_parts, gaps,
                                     unread, thread, last_sent, notes))
            elif model_parts:
                synthetic.append(w)
            if model_parts:
                turns.append({"role": "model", "parts": model_parts, "where": w,
                              "open": not results and not answered_back})
            if results:
                turns.append({"role": "user", "parts": results})
            last_sent = _sent_at(msg) or last_sent
        except ImportFormatError as e:
            pending.append((w, e))
            if kind == "user" or kind == "gemini" and w not in gaps:
                unread.append(w)
    file_notes = _file_notes(log, shown, synthetic)
    for w, obj in pending:
        if isinstance(obj, _Call) and file_notes:
            obj = _Call(obj.request, obj.response, (*file_notes, *obj.notes), obj.thread,
                        obj.started, obj.finished)
            file_notes = []
        yield w, {KEY: obj} if isinstance(obj, _Call) else obj


def _next_is_results(msgs: list[tuple[str, dict[str, Any]]], k: int) -> bool:
    """Whether the next message sent after message ``k`` holds its tool results."""
    for w, m in msgs[k + 1:]:
        if m.get("type") in SHOWN:
            continue
        return m.get("type") == "user" and _is_results(m, w)
    return False


def _call(where: str, msg: dict[str, Any], turns: list[dict[str, Any]],
          answer: list[Any], thought_parts: int, gaps: list[str], unread: list[str],
          thread: str, sent: str | None, notes: list[str]) -> tuple[str, Any]:
    if not turns:
        return where, fail(where, "an answer before any message sent: what it was sent is "
                                  "not in the file")
    said = [REBUILT]
    if gaps:
        said.append(f"its prompt lacks what followed {len(gaps)} earlier answer(s) "
                    f"({', '.join(gaps[:3])}{' …' if len(gaps) > 3 else ''}): the session "
                    "keeps neither their tool calls nor what was sent back")
    if unread:
        said.append(f"its prompt lacks {len(unread)} earlier message(s) that could not be "
                    f"read ({', '.join(unread[:3])}{' …' if len(unread) > 3 else ''})")
    thoughts = msg.get("thoughts")
    n = len(thoughts) if isinstance(thoughts, list) else 0
    if n or thought_parts:
        said.append(f"its {n + thought_parts} thought(s) (the model's reasoning summaries) "
                    "not imported")
    model = msg.get("model") if isinstance(msg.get("model"), str) else None
    usage = _usage(msg.get("tokens"))
    if usage is None:
        said.append("its tokens are not recorded" if msg.get("tokens") is None else
                    "its tokens count nothing (every count 0): its usage is unknown")
    request: dict[str, Any] = {"contents": [{"role": t["role"], "parts": t["parts"]}
                                            for t in turns]}
    response: dict[str, Any] = {"candidates": [{"content": {"role": "model",
                                                            "parts": answer}}]}
    if model:
        request["model"] = response["modelVersion"] = model
    if usage is not None:
        response["usageMetadata"] = usage
    return where, _Call(request, response, (*said, *notes), thread, sent, _time(msg))


def _read(record: Record) -> list[Exchange]:
    call, where = record.obj[KEY], record.where
    notes = [n if n.startswith(where) else f"{where}: {n}" for n in call.notes]
    ex = gemini_exchange({"request": call.request, "response": call.response}, where,
                         record.index, thread_key=call.thread, resource_id=None)
    ex.notes[:0] = notes
    ex.tools = None  # (not recorded: not "none offered")
    ex.params_known = False  # (nor the generation config sent)
    finished = iso_time(call.finished, where, "timestamp")
    started = iso_time(call.started, where, "timestamp") or finished
    if started is not None:
        ex.started_at, ex.finished_at = started, max(started, finished or started)
    return [ex]


FORMAT = RecordFormat("gemini-cli", 24, lambda r: isinstance(r.obj.get(KEY), _Call), _read)
