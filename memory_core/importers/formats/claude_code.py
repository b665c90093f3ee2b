"""Claude Code's session transcripts (``~/.claude/projects/<dir>/<session>.jsonl``), and
the transcripts of agents that write Claude Code's shape (iFlow CLI's): one JSON line
per message of the session — ``{"type": "user" | "assistant", "uuid", "parentUuid",
"sessionId", "isSidechain", "timestamp", "message": {…}}`` — with ``summary`` lines
(a conversation's title), ``system`` lines (``compact_boundary``, hooks, local
commands) and others (``file-history-snapshot``, …) that are never sent to the model.

What each call was sent is not kept: it is rebuilt (``claude_code_transcripts``), as
the readers of SWE-agent's and Letta's histories rebuild theirs, and every run says so.
One assistant API call is one run: Claude Code writes each content block of an answer
on its own line, all with the answer's ``message.id`` (and ``requestId``); they are
joined, in the order of their ``timestamp``. Its usage and stop reason are the last
line's (the earlier lines carry a partial ``output_tokens``), read as the Messages
API's (cache creation and read tokens added to the input); its model
``message.model``; its time from its first line's ``timestamp`` to its last's. Its
request is the conversation found by following ``parentUuid`` back from its first
line: user lines as sent (text, ``tool_result`` blocks; ``toolUseResult`` is Claude
Code's own record of a tool's result, never sent; ``isMeta`` lines — Claude Code's own
text, hidden from the user, such as a command's expansion — are sent, and kept),
earlier answers joined as their call's lines, consecutive messages of one role merged
as the API merges them. The system prompt and the tools offered are not in the file:
unknown (not "none"). A subagent's sidechain (``isSidechain``) and a conversation
after compaction (a ``compact_boundary`` starts a new chain; its summary is the
``isCompactSummary`` user line sent in place of what came before) are threads of their
own. A file with no ``parentUuid`` (older transcripts) is read in file order.
Lines that hold no message content (usage only, as usage trackers keep them) and
Claude Code's own answers (model ``<synthetic>``: an API error shown to the user) are
no model call: each is left out with a note saying so."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from memory_core.errors import ImportFormatError
from memory_core.importers.common import Exchange, fail, iso_time, shortened
from memory_core.importers.formats import Record, RecordFormat
from memory_core.importers.formats.anthropic import anthropic_exchange

KEY = "claude_code_call"  # a call of a transcript, as ``claude_code_transcripts`` gives it

REBUILT = ("its request is rebuilt from the session transcript (following parentUuid back "
           "from its first line): what the agent sent is not kept; its system prompt and "
           "the tools it offered are not in the file (unknown)")
IN_FILE_ORDER = ("its request is rebuilt from the session transcript, in file order (no "
                 "line names its parentUuid): what the agent sent is not kept; its system "
                 "prompt and the tools it offered are not in the file (unknown)")
FANNED = ("its request is rebuilt from the session transcript, in file order (the lines' "
          "parentUuid names the turn's prompt, not the line before, as iFlow CLI writes "
          "it): what the agent sent is not kept; its system prompt and the tools it "
          "offered are not in the file (unknown)")
NO_CONTENT = ("a transcript line without its message's content (usage only, as a usage "
              "tracker keeps it): nothing sent or answered is in it")
SYNTHETIC = ("an answer the agent wrote itself (model '<synthetic>': an API error or an "
             "interruption shown to the user), no model call")
# lines of a transcript that are never sent to the model
_UNSENT = ("summary", "system", "file-history-snapshot", "queue-operation", "progress",
           "custom-title", "attachment", "tag", "agent-name")


def is_line(obj: Any) -> bool:
    """A line of a Claude Code transcript: a session's user or assistant message, a
    ``summary`` or ``system`` line, or a usage tracker's line of an answer."""
    if not isinstance(obj, dict) or "request" in obj or "response" in obj:
        return False
    kind, message = obj.get("type"), obj.get("message")
    if kind in ("user", "assistant"):
        return isinstance(message, dict) and "messages" not in message
    if kind == "summary":
        return "leafUuid" in obj
    if kind == "system":
        return "uuid" in obj and ("parentUuid" in obj or "sessionId" in obj)
    return kind is None and isinstance(message, dict) and message.get("role") in (
        "user", "assistant") and ("sessionId" in obj or "requestId" in obj)


def claude_code_transcripts(docs: Iterable[tuple[str, Any]]) -> Iterator[tuple[str, Any]]:
    """The documents, a transcript's lines (from the first on) given as its calls, each
    named by its first line; a line that is no call comes as its error."""
    docs = iter(docs)
    for where, obj in docs:
        if is_line(obj):
            yield from _calls([(where, obj), *docs])
            return
        yield where, obj


def _content(message: dict[str, Any]) -> list[Any]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content) if isinstance(content, list) else []


def _when(obj: dict[str, Any]) -> str:
    at = obj.get("timestamp")
    return at if isinstance(at, str) else ""


class _Transcript:
    """A transcript's lines, by uuid and by call."""

    def __init__(self, lines: list[tuple[str, dict[str, Any]]]) -> None:
        self.lines = lines
        self.by_uuid: dict[str, int] = {}
        self.repeated = 0
        for i, (_, obj) in enumerate(lines):
            uuid = obj.get("uuid")
            if isinstance(uuid, str):
                if uuid in self.by_uuid:
                    self.repeated += 1
                else:
                    self.by_uuid[uuid] = i
        self.fan = _fan(lines)
        self.chained = not self.fan and any(isinstance(obj.get("parentUuid"), str)
                                            for _, obj in lines)
        self.calls: dict[str, list[int]] = {}  # an answer's lines, by its message id
        self.call_of: dict[int, str] = {}
        self.results: dict[str, int] = {}  # the user line answering a tool call, by its id
        self.first_use: dict[str, int] = {}  # the first line giving a tool call, by its id
        self.repeats = 0
        for i, (where, obj) in enumerate(lines):
            message = obj["message"]
            if _role(obj) == "assistant" and _answer(obj):
                mid, req = message.get("id"), obj.get("requestId")
                key = mid if isinstance(mid, str) else req if isinstance(req, str) else where
                if self.fan and i - 1 in self.call_of:  # (the answer's next piece)
                    key = self.call_of[i - 1]
                self.calls.setdefault(key, []).append(i)
                self.call_of[i] = key
                for block in _content(message):
                    ref = block.get("id") if isinstance(block, dict) and block.get(
                        "type") == "tool_use" else None
                    if isinstance(ref, str):
                        self.repeats += ref in self.first_use
                        self.first_use.setdefault(ref, i)
            elif _role(obj) == "user":
                for block in _content(message):
                    if isinstance(block, dict) and block.get("type") == "tool_result" \
                            and isinstance(block.get("tool_use_id"), str):
                        self.results.setdefault(block["tool_use_id"], i)
        for at in self.calls.values():  # (a call's lines out of order: by their time)
            at.sort(key=lambda i: _when(lines[i][1]))

    def chain(self, i: int, notes: list[str]) -> list[int]:
        """The lines before line ``i``: its ``parentUuid``'s, back to the first."""
        if not self.chained:
            return [k for k in range(i) if self.call_of.get(k) != self.call_of.get(i)]
        out: list[int] = []
        seen = {i}
        parent = self.lines[i][1].get("parentUuid")
        while isinstance(parent, str):
            k = self.by_uuid.get(parent)
            if k is None or k in seen:
                said = "names no line of the file" if k is None else "goes round in a loop"
                where = self.lines[out[-1]][0] if out else self.lines[i][0]
                notes.append(f"its history stops at {where}, whose parentUuid "
                             f"{shortened(parent, 60)!r} {said}: what came before is not "
                             "in the file")
                break
            seen.add(k)
            out.append(k)
            parent = self.lines[k][1].get("parentUuid")
        return out[::-1]


def _fan(lines: list[tuple[str, dict[str, Any]]]) -> bool:
    """Whether the lines' ``parentUuid`` names the turn's prompt rather than the line
    before (as iFlow CLI writes it): answers with ids of their own naming one parent."""
    firsts: dict[str, set[Any]] = {}
    for _, obj in lines:
        parent = obj.get("parentUuid")
        if _role(obj) == "assistant" and _answer(obj) and isinstance(parent, str):
            firsts.setdefault(parent, set()).add(str(obj["message"].get("id")))
    return any(len(ids) > 2 for ids in firsts.values())


def _blocks(t: _Transcript, at: list[int]) -> list[Any]:
    """The content of an answer's lines, a tool call a later line repeats (by its id)
    once, with the first line giving it."""
    out: list[Any] = []
    seen: set[str] = set()
    for i in at:
        for block in _content(t.lines[i][1]["message"]):
            ref = block.get("id") if isinstance(block, dict) and block.get(
                "type") == "tool_use" else None
            if isinstance(ref, str):
                if ref in seen or t.first_use.get(ref, i) < i:
                    continue
                seen.add(ref)
            out.append(block)
    return out


def _user_blocks(message: dict[str, Any], reshaped: list[int]) -> list[Any]:
    """A user line's content as sent: a tool result kept as an object (iFlow CLI keeps
    the Gemini-style ``responseParts.functionResponse`` it sent) is the text of its
    ``response`` (``output``), or its JSON (counted in ``reshaped``)."""
    out: list[Any] = []
    for block in _content(message):
        result = block.get("content") if isinstance(block, dict) and block.get(
            "type") == "tool_result" else None
        if isinstance(result, dict):
            reshaped[0] += 1
            parts = result.get("responseParts")
            call = parts.get("functionResponse") if isinstance(parts, dict) else None
            said = call.get("response") if isinstance(call, dict) else None
            if isinstance(said, dict) and isinstance(said.get("output"), str):
                text = said["output"]
            else:
                text = json.dumps(said if said is not None else result, ensure_ascii=False,
                                  sort_keys=True)
            block = {**block, "content": text}
        out.append(block)
    return out


def _role(obj: dict[str, Any]) -> str | None:
    role = obj.get("type") or obj["message"].get("role")
    return role if role in ("user", "assistant") else None


def _answer(obj: dict[str, Any]) -> bool:
    """Whether an assistant line is (part of) a model's answer, not the agent's own."""
    return obj["message"].get("model") != "<synthetic>" and "content" in obj["message"]


def _merged(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Consecutive messages of one role as one, as the API reads them."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if not m["content"]:
            continue
        if out and out[-1]["role"] == m["role"]:
            out[-1] = {"role": m["role"], "content": out[-1]["content"] + m["content"]}
        else:
            out.append(m)
    return out


def _history(t: _Transcript, chain: list[int], notes: list[str]) -> list[dict[str, Any]]:
    """The messages of the lines of ``chain``, an answer's lines joined, the tool results
    Claude Code chains off the line of their call found by their id."""
    messages: list[dict[str, Any]] = []
    done: set[str] = set()
    skipped: Counter[str] = Counter()
    meta = 0
    reshaped = [0]
    off_chain: list[int] = []
    on_chain = set(chain)
    for k in chain:
        obj = t.lines[k][1]
        role = _role(obj)
        if role == "assistant" and k in t.call_of:
            key = t.call_of[k]
            if key in done:
                continue
            done.add(key)
            content = _blocks(t, t.calls[key])
            messages.append({"role": "assistant", "content": content})
            for block in content:  # results that are not on the chain, after their call
                ref = block.get("id") if isinstance(block, dict) and block.get(
                    "type") == "tool_use" else None
                r = t.results.get(ref) if isinstance(ref, str) else None
                if r is not None and r not in on_chain and r not in off_chain:
                    off_chain.append(r)
                    on_chain.add(r)
                    messages.append({"role": "user", "content": _user_blocks(
                        t.lines[r][1]["message"], reshaped)})
        elif role == "user" and "content" in obj["message"]:
            meta += obj.get("isMeta") is True
            messages.append({"role": "user", "content": _user_blocks(obj["message"],
                                                                     reshaped)})
        else:
            skipped[str(obj.get("subtype") or obj.get("type") or "usage only")] += 1
    if off_chain:
        notes.append(f"{len(off_chain)} tool result line(s) ({', '.join(t.lines[r][0] for r in off_chain[:3])}"
                     f"{' …' if len(off_chain) > 3 else ''}) found by their tool_use_id, off "
                     "the parentUuid chain (parallel tool results are each chained to their "
                     "call)")
    if reshaped[0]:
        notes.append(f"{reshaped[0]} tool result(s) kept as an object (iFlow CLI's "
                     "responseParts.functionResponse): read as its response's output (or "
                     "its JSON); its resultDisplay, the user's view, not imported")
    if meta:
        notes.append(f"{meta} line(s) marked isMeta (the agent's own text, hidden from the "
                     "user) kept: they are sent")
    if skipped:
        said = ", ".join(f"{k} ×{n}" if n > 1 else k for k, n in skipped.items())
        notes.append(f"line(s) of its history not sent to the model, not imported: {said}")
    return _merged(messages)


def _usage(obj: dict[str, Any]) -> Any:
    """The line's usage: its message's, or an old transcript's counts on the line."""
    usage = obj["message"].get("usage")
    if usage is not None or "inputTokens" not in obj:
        return usage
    names = {"inputTokens": "input_tokens", "outputTokens": "output_tokens",
             "cacheCreationInputTokens": "cache_creation_input_tokens",
             "cacheReadInputTokens": "cache_read_input_tokens"}
    return {ours: obj[k] for k, ours in names.items() if k in obj}


def _call(t: _Transcript, key: str, file_notes: list[str]) -> tuple[str, Any]:
    at = t.calls[key]
    first, last = t.lines[at[0]][1], t.lines[at[-1]][1]
    where = t.lines[at[0]][0]
    notes: list[str] = [*file_notes]
    if at != sorted(at):
        notes.append(f"its {len(at)} lines are out of order in the file: joined in the "
                     "order of their timestamps")
    chain = t.chain(at[0], notes)
    notes.insert(len(file_notes), REBUILT if t.chained else FANNED if t.fan
                 else IN_FILE_ORDER)
    if t.fan and len({str(t.lines[i][1]["message"].get("id")) for i in at}) > 1:
        notes.append(f"its {len(at)} lines, each with an id of its own, joined as one "
                     "answer: no user line comes between them")
    sent = _history(t, chain, notes)
    broken = next((n for n in notes if n.startswith("its history stops at")), None)
    if not sent:
        return where, fail(where, "an answer whose history is not in the file: what it was "
                                  "sent is unknown" + (f" ({broken})" if broken else
                                                       " (its parentUuid names no line)"))
    root = t.lines[chain[0]][1] if chain else first
    if first.get("isSidechain") is True:
        notes.append("a subagent's call (isSidechain): a thread of its own")
    if any(t.lines[k][1].get("isCompactSummary") is True for k in chain):
        notes.append("after the conversation was compacted: it is sent the summary "
                     "(isCompactSummary) in place of what came before, a thread of its own")
    message = last["message"]
    response = {"type": "message", "role": "assistant", "model": message.get("model"),
                "content": _blocks(t, at),
                "stop_reason": message.get("stop_reason"),
                "stop_sequence": message.get("stop_sequence")}
    usage = _usage(last)
    if isinstance(usage, dict) and usage and not any(usage.values()):
        notes.append("its usage counts nothing (every count 0, as iFlow CLI writes it): "
                     "unknown")
    elif usage is not None:
        response["usage"] = usage
    request: dict[str, Any] = {"messages": sent}
    if isinstance(message.get("model"), str):
        request["model"] = message["model"]
    session = first.get("sessionId")
    thread = f"{session if isinstance(session, str) else 'session'}/" \
             f"{root.get('uuid') if t.chained else 'main'}"
    return where, {KEY: {"request": request, "response": response, "notes": notes,
                         "thread": thread, "broken": broken, "started": first.get("timestamp"),
                         "finished": last.get("timestamp")}}


def _calls(rows: list[tuple[str, Any]]) -> Iterator[tuple[str, Any]]:
    """The transcript's calls and the lines that are none, in file order."""
    at = {where: i for i, (where, _) in enumerate(rows)}
    yield from sorted(_unordered(rows), key=lambda row: at.get(row[0], 0))


def _unordered(rows: list[tuple[str, Any]]) -> Iterator[tuple[str, Any]]:
    lines: list[tuple[str, dict[str, Any]]] = []
    unsent: Counter[str] = Counter()
    for where, obj in rows:
        if isinstance(obj, ImportFormatError):  # (a line cut short: its container's error)
            yield where, obj
        elif not isinstance(obj, dict) or not isinstance(obj.get("message"), dict) and (
                obj.get("type") not in _UNSENT):
            yield where, fail(where, "expected a line of the session transcript (a JSON "
                                     f"object with its 'message'), got "
                                     f"{shortened(repr(obj), 80)}")
        elif not isinstance(obj.get("message"), dict):
            unsent[str(obj.get("subtype") or obj.get("type"))] += 1
            if obj.get("type") == "system":
                lines.append((where, {**obj, "message": {}}))  # (a link of the chain)
        elif not _role(obj):
            yield where, fail(where, f"a transcript line of type {obj.get('type')!r}: not "
                                     "a user's or an assistant's message")
        elif "content" not in obj["message"]:
            yield where, fail(where, NO_CONTENT)
        else:
            if _role(obj) == "assistant" and not _answer(obj):
                yield where, fail(where, SYNTHETIC)
            lines.append((where, obj))
    t = _Transcript(lines)
    file_notes: list[str] = []
    if unsent:
        said = ", ".join(f"{k} ×{n}" if n > 1 else k for k, n in unsent.items())
        file_notes.append(f"the transcript's lines never sent to the model (a summary is a "
                          f"conversation's title) not imported: {said}")
    if t.repeats:
        file_notes.append(f"{t.repeats} tool call block(s) repeat one an earlier line gave "
                          "(the same id, as iFlow CLI writes an answer's pieces): kept once")
    if t.repeated:
        file_notes.append(f"{t.repeated} line(s) repeat an earlier line's uuid (a resumed "
                          "session writes them again): the first kept")
    if any("toolUseResult" in obj for _, obj in lines):
        file_notes.append("toolUseResult (the agent's own record of a tool's result, not "
                          "sent to the model) not imported: the tool_result blocks are")
    for key in sorted(t.calls, key=lambda k: t.calls[k][0]):
        yield _call(t, key, file_notes)
        file_notes = []


def _read(record: Record) -> list[Exchange]:
    ctx, where = record.obj[KEY], record.where
    if not isinstance(ctx, dict):
        raise fail(where, f"'{KEY}' must be an object, got {type(ctx).__name__}")
    said = ctx.get("notes")
    notes = [f"{where}: {n}" for n in said if isinstance(n, str)] \
        if isinstance(said, list) else []
    try:
        ex = anthropic_exchange(ctx, where, record.index, notes)
    except ImportFormatError as e:  # (a history cut short: say where it was cut)
        broken = ctx.get("broken")
        if not isinstance(broken, str):
            raise
        raise ImportFormatError(f"{e} — {broken}") from None
    ex.tools = None  # (not recorded: not "none offered")
    ex.params_known = False  # (nor the parameters sent)
    thread = ctx.get("thread")
    ex.thread_key = thread if isinstance(thread, str) else None
    started = iso_time(ctx.get("started"), where, "timestamp")
    finished = iso_time(ctx.get("finished"), where, "timestamp")
    if started is not None:
        ex.started_at, ex.finished_at = started, max(started, finished or started)
    return [ex]


FORMAT = RecordFormat("claude-code", 23, lambda r: KEY in r.obj, _read)
