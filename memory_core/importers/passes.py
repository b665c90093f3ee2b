"""What an import does across a file's requests once they are read, before threads are
planned: credentials in a request's settings are withheld; answers sent back in an audio
id get their transcript; the ids a client sends back take those the answers recorded,
and a call id given twice in one conversation is numbered; calls are checked against the
tools offered; tool results take the names of the calls they answer (one answering no
call the file holds is kept, its name unknown); an answer whose calls are sent back
alike in another text is that answer, sent back rewritten;
turns that hold nothing are dropped and empty answers said. ``importers._import_parsed`` runs them
in that order."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from memory_core.importers.common import Exchange, shortened
from memory_core.importers.message_keys import message_key
from memory_core.models.openai_codec import is_derived_call_id
from memory_core.types import Message, TextPart, ToolCallPart, ToolResultPart, canonical_json

# -- credentials ------------------------------------------------------------------------
#: keys whose values are credentials (an MCP server's ``authorization_token``, a header
#: map's ``Authorization``, a client's ``api_key`` logged among its settings)
_CREDENTIAL = re.compile(r"(?:^|[_-])(?:api[_-]?key|apikey|access[_-]?token|auth[_-]?token|"
                         r"authorization(?:[_-]?token)?|refresh[_-]?token|bearer[_-]?token|"
                         r"client[_-]?secret|secret|password)$", re.I)
WITHHELD = "[withheld]"


def withhold_credentials(exchanges: Sequence[Exchange]) -> None:
    """A credential among a request's recorded settings, fields or offered tools is
    stored as ``WITHHELD``, noted with where it was (a token sent to an MCP server would
    otherwise sit in the database and in ``memwb inspect``)."""
    for ex in exchanges:
        found: list[str] = []
        ex.params = _withheld(ex.params, "", found)
        ex.request_fields = _withheld(ex.request_fields, "", found)
        if ex.tools is not None:
            ex.tools = _withheld(ex.tools, "tools", found)
        if found:
            ex.notes.append(f"{ex.where}: request {', '.join(found)}: a credential, "
                            f"withheld (stored as {WITHHELD})")


def _withheld(value: Any, path: str, found: list[str]) -> Any:
    """``value`` with every credential's value withheld: a copy where one is found,
    else ``value`` itself (requests share their tools' definitions)."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            at = f"{path}.{k}" if path else str(k)
            if isinstance(k, str) and _CREDENTIAL.search(k) and isinstance(v, str) and v:
                out[k] = WITHHELD
                found.append(f"'{at}'")
            else:
                out[k] = _withheld(v, at, found)
        return out if any(out[k] is not v for k, v in value.items()) else value
    if isinstance(value, list):
        items = [_withheld(v, f"{path}[{i}]", found) for i, v in enumerate(value)]
        return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
    return value


# -- answers sent back with their calls alike -------------------------------------------
def calls_sent_back_alike(exchanges: Sequence[Exchange]) -> None:
    """An answer whose tool calls (with the ids the provider gave them) a later request
    sends back alike, in an assistant message of another text — the text before the
    calls dropped, as crewAI drops it on Bedrock — is that answer sent back as its
    client rewrites it (``Exchange.sent_back_as``): the conversation goes on from that
    form in one thread, the answer stored as recorded. Its conversation was split in
    two threads. Only ids the provider gave count (ids a reader numbered repeat)."""
    answers: dict[str, Exchange | None] = {}  # None: an id two answers gave
    for ex in exchanges:
        for m in ex.history:
            if m.role != "assistant" or type(m.content) is str or not answers:
                continue
            calls = m.tool_calls()
            first = answers.get(calls[0].id) if calls else None
            if first is None or first.sent_back_as is not None or first.response is None \
                    or first.response is m:
                continue
            if _calls_alike(first.response.tool_calls(), calls) and \
                    message_key(first.response) != message_key(m):
                first.sent_back_as = m
        if ex.response is not None and type(ex.response.content) is not str:
            for call in ex.response.tool_calls():
                if call.id and not is_derived_call_id(call.id):
                    answers[call.id] = ex if call.id not in answers else None


def _calls_alike(a: Sequence[ToolCallPart], b: Sequence[ToolCallPart]) -> bool:
    """The same calls in the same order: ids, names and arguments."""
    return len(a) == len(b) and all(
        x.id == y.id and x.name == y.name and canonical_json(x.args) == canonical_json(y.args)
        for x, y in zip(a, b, strict=True))


# -- tool-name resolution ---------------------------------------------------------------
def resolve_tool_names(exchanges: Sequence[Exchange]) -> None:
    """Give every tool result the name of the call it answers: the exchange's message is
    replaced by a named copy (messages may be shared between exchanges, ``sharing``;
    one copy serves every exchange that resolves the same message alike).

    A result answers a call made earlier in the same request, or (when records carry a
    thread key and clients send a trimmed window) earlier in that thread. One that
    answers no call the file holds — its call in history held server-side
    (``HeldHistory.unrecorded``), a request the API refused, or a window trimmed of
    the call that a lenient server answered all the same — is kept as sent, its tool
    name unknown (``""``), and noted: it is what the model was sent.
    """
    known_by_key: dict[str, dict[str, str]] = {}
    named: dict[tuple[int, tuple[str, ...]], tuple[Message, Message]] = {}
    for ex in exchanges:
        known = _name_results(ex, known_by_key, named)
        if ex.thread_key:
            known_by_key[ex.thread_key] = known


def leave_out(exchanges: Sequence[Exchange], out: Sequence[Exchange]) -> list[Exchange]:
    """The exchanges without ``out``, numbered again from 0 (an exchange's ``index`` is
    its place in the file's list: its run id, its rows' run); a link to an exchange
    left out (``replays``, ``held.continues``) is dropped, the others renumbered."""
    gone = {id(ex) for ex in out}
    kept = [ex for ex in exchanges if id(ex) not in gone]
    new = {ex.index: i for i, ex in enumerate(kept)}
    for i, ex in enumerate(kept):
        ex.index = i
        if ex.replays is not None:
            ex.replays = new.get(ex.replays)
        if ex.held is not None and ex.held.continues is not None:
            ex.held = replace(ex.held, continues=new.get(ex.held.continues))
    return kept


def _why_no_call(ex: Exchange) -> str:
    """Why a tool result's call is in no message the file holds: the history held
    server-side, or none made it — the API refusing the request (often for that very
    reason), or a lenient server answering a window trimmed of the call."""
    if ex.held is not None and ex.held.unrecorded:
        return (f"made in the history held server-side ({ex.held.unrecorded}) that is not "
                "in the file")
    made = "but no earlier assistant message made that call; "
    if ex.error is not None:
        return made + f"the API refused the call ({shortened(ex.error, 160)})"
    return made + "the model answered the request all the same"


def _name_results(ex: Exchange, known_by_key: dict[str, dict[str, str]],
                  named: dict[tuple[int, tuple[str, ...]], tuple[Message, Message]]
                  ) -> dict[str, str]:
    """``resolve_tool_names`` for one exchange: the calls known after it."""
    known = dict(known_by_key.get(ex.thread_key, {})) if ex.thread_key else {}
    for i, m in enumerate(ex.conversation()):
        if not isinstance(m.content, list):
            continue
        names: list[str] = []
        for p in m.content:
            if isinstance(p, ToolCallPart):
                known[p.id] = p.name
            elif isinstance(p, ToolResultPart) and p.name and p.call_id \
                    and p.call_id not in known and not (ex.held and ex.held.unrecorded):
                # a result that names its tool (a "function" message) is kept, said
                label = ("response" if i == len(ex.history)
                         else f"message {i + len(ex.instructions)}")
                same = [c for c, n in known.items() if n == p.name]
                ex.notes.append(
                    f"{ex.where}: {label} ({m.role}) answers tool call '{p.call_id}', which "
                    "no earlier assistant message made" + (
                        f" (the call of {p.name} before it is '{same[-1]}')" if same else "")
                    + ": kept as sent")
            elif isinstance(p, ToolResultPart) and not p.name:
                name = known.get(p.call_id)
                label = ("response" if i == len(ex.history)
                         else f"message {i + len(ex.instructions)}")
                if name is None:  # kept as sent, its tool name unknown: why it is so
                    ex.notes.append(
                        f"{ex.where}: {label} (tool) answers tool call '{p.call_id}', "
                        + _why_no_call(ex) + ": kept as sent, its tool name unknown")
                    name = ""
                names.append(name)
        if not any(names):
            continue
        key = (id(m), tuple(names))
        if key not in named:  # (the original is kept with its copy: ids stay unique)
            given = iter(names)
            named[key] = (m, m.model_copy(update={"content": [
                p.model_copy(update={"name": next(given)})
                if isinstance(p, ToolResultPart) and not p.name else p
                for p in m.content]}))
        if i < len(ex.history):
            ex.history[i] = named[key][1]
        else:
            ex.response = named[key][1]
    return known


# -- tool calls against the tools offered --------------------------------------------------
def check_offered_tools(exchanges: Sequence[Exchange]) -> None:
    """Check each tool call a request's answer makes against the tools that request
    offered (when it recorded them: ``Exchange.tools`` is not None). A call naming a
    tool not offered is kept as recorded, with a note naming the call, its name and the
    tools offered — unless its name is k ≥ 2 copies of one offered tool's name (a
    streamed name repeated whole in every chunk, joined by whatever reassembled the
    stream): it is then stored as that tool's name, and noted.

    The same repair is made to the calls of the assistant messages a request sends back
    (its history), so a client that kept the joined name still continues the thread of
    the answer stored repaired; those calls are not otherwise checked — each answered
    an earlier request, whose tools may have differed. A message repaired is replaced
    by a copy (messages may be shared between exchanges, ``sharing``)."""
    for ex in exchanges:
        if ex.tools is None:
            continue
        offered = [str(t.get("name")) for t in ex.tools]
        for i, m in enumerate(ex.history):
            if m.role == "assistant" and isinstance(m.content, list):  # (else: kept)
                ex.history[i] = _named_as_offered(
                    ex, m, f"message {i + len(ex.instructions)}", offered, answer=False)
        if ex.response is not None:
            ex.response = _named_as_offered(ex, ex.response, "response", offered, answer=True)


def _named_as_offered(ex: Exchange, m: Message, label: str, offered: list[str], *,
                      answer: bool) -> Message:
    """``m``, or a copy whose calls named k copies of an offered tool name it; the
    calls of an ``answer`` naming no offered tool noted on ``ex``."""
    if m.role != "assistant" or not isinstance(m.content, list):
        return m
    parts = m.content
    for j, p in enumerate(m.content):
        if not isinstance(p, ToolCallPart) or p.name in offered:
            continue
        whole = _repeated_name(p.name, offered)
        if whole is not None:
            parts = list(parts) if parts is m.content else parts
            parts[j] = p.model_copy(update={"name": whole})
            ex.notes.append(
                f"{ex.where}: {label}: tool call '{p.id}' is named {p.name!r}, "
                f"{len(p.name) // len(whole)} copies of the offered tool {whole!r} (a "
                f"streamed name repeated in every chunk, joined): stored as {whole!r}")
        elif answer:
            ex.notes.append(
                f"{ex.where}: {label}: tool call '{p.id}' names {p.name!r}, a tool the "
                f"request did not offer (offered: {', '.join(offered) or 'none'}); "
                "kept as recorded")
    return m if parts is m.content else m.model_copy(update={"content": parts})


def _repeated_name(name: str, offered: Sequence[str]) -> str | None:
    """The offered tool name that ``name`` is k ≥ 2 copies of, when exactly one is."""
    found = {t for t in offered if t and len(name) > len(t) and len(name) % len(t) == 0
             and t * (len(name) // len(t)) == name}
    return found.pop() if len(found) == 1 else None


def _holds_nothing(m: Message) -> bool:
    """An assistant message without text or any other part (its text "" or absent)."""
    return m.role == "assistant" and (m.content in ("", None) or isinstance(m.content, list)
                                      and all(type(p) is TextPart and not p.text
                                              for p in m.content))


def distinct_calls(conversation: Sequence[Message],
                   renamed: list[str] | None = None) -> list[Message]:
    """Two calls of one conversation under one id cannot be told apart, nor their
    results: a call recorded without an id gets one derived from its place in its turn,
    its name and its arguments (``derived_call_id``), so a model asking again got the
    same id; and some servers number each answer's calls from ``call_0``. The
    conversation with the second and later of them given that id with ``-2``, ``-3`` …,
    and each result the id of the latest call of its id before it (a message changed is
    a copy: messages are shared between requests); ``renamed`` gets each recorded
    (not derived) id so renamed, "'call_0' as 'call_0-2'". A later request repeating
    the conversation repeats its turns, so gets the same ids."""
    seen: dict[str, int] = {}
    now: dict[str, str] = {}  # an id -> that of its latest call
    taken: set[str] = set()  # every id a call has so far (a number given included)
    out = list(conversation)
    for i, m in enumerate(out):
        if isinstance(m.content, str):
            continue
        parts, changed = list(m.content), False
        for j, p in enumerate(parts):
            if isinstance(p, ToolCallPart):
                n = seen.get(p.id, 0) + 1
                new = p.id if n == 1 else f"{p.id}-{n}"
                while new in taken:  # (a number already given: a request sent back
                    n += 1  # "read_file-2" and its answer calls "read_file" again)
                    new = f"{p.id}-{n}"
                seen[p.id] = n
                taken.add(new)
                now[p.id] = new
                if new != p.id:
                    parts[j], changed = p.model_copy(update={"id": now[p.id]}), True
                    if renamed is not None and not is_derived_call_id(p.id):
                        renamed.append(f"{p.id!r} as {now[p.id]!r}")
            elif isinstance(p, ToolResultPart) and now.get(p.call_id, p.call_id) != p.call_id:
                parts[j], changed = p.model_copy(update={"call_id": now[p.call_id]}), True
        if changed:
            out[i] = m.model_copy(update={"content": parts})
    return out


def _distinct_ids(ex: Exchange) -> None:
    """``distinct_calls`` over a request's conversation (its history and answer),
    noting the recorded ids it renamed."""
    renamed: list[str] = []
    conv = distinct_calls([*ex.history, *([ex.response] if ex.response else [])], renamed)
    ex.history = conv[:len(ex.history)]
    if ex.response is not None:
        ex.response = conv[-1]
    if renamed:
        ex.notes.append(f"{ex.where}: a call id given again in the conversation, stored "
                        f"numbered: {', '.join(dict.fromkeys(renamed))}")


def audio_transcripts(exchanges: Sequence[Exchange]) -> None:
    """An answer given as audio is stored as its transcript; a client sends it back by
    its id alone (``{"role": "assistant", "audio": {"id": …}}``): such a message gets the
    transcript of the file's answer of that id, noted (or, when no answer in the file
    has it, stays empty, noted), so the conversation is the one the answer began."""
    said: dict[str, str] = {}
    for ex in exchanges:
        for i, m in enumerate(ex.history):
            audio = m.metadata.get("audio_id") if m.role == "assistant" else None
            if not isinstance(audio, str) or m.text():
                continue
            known = said.get(audio)
            if known is None:
                ex.notes.append(f"{ex.where}: message {i + len(ex.instructions)}: an audio "
                                f"answer sent back by its id {audio!r}, whose transcript "
                                "is not in the file: stored empty")
                continue
            ex.history[i] = m.model_copy(update={"content": known})
            ex.notes.append(f"{ex.where}: message {i + len(ex.instructions)}: an audio "
                            f"answer sent back by its id {audio!r}: stored as the "
                            "transcript of the answer of that id")
        reply = ex.response
        transcript = reply.text() if reply is not None else None
        if reply is not None and isinstance(reply.metadata.get("audio_id"), str) \
                and transcript:
            said[reply.metadata["audio_id"]] = transcript


def recorded_call_ids(exchanges: Sequence[Exchange]) -> None:
    """Give a call a request sends back without its id (so we derived one) the id the
    answer that made it recorded — the latest answer's call of the same name and
    arguments — and the results answering it the same: Gemini 3 answers with an
    ``id`` that clients (R's ellmer) do not send back, and the ids no longer matched
    the stored answer, splitting the conversation. The same for a call sent back under
    an id of the client's own that no answer in the file made (Ruby's raix sends its
    calls back under new UUIDs). Noted."""
    answered = {p.id for ex in exchanges if ex.response is not None
                and not isinstance(ex.response.content, str)
                for p in ex.response.content if isinstance(p, ToolCallPart)}
    # (only a file whose requests send back ids no answer made needs the answers'
    # conversations kept: most files have none, and are not slowed by them)
    client_made = any(isinstance(p, ToolCallPart) and p.id not in answered
                      and not is_derived_call_id(p.id) for ex in exchanges
                      for m in ex.history if not isinstance(m.content, str)
                      for p in m.content)
    recorded: dict[tuple[str, str], str] = {}
    # an answer's calls by what came before them: (the conversation's texts, the call's
    # name, its arguments) -> their ids, in the answer's order
    made: dict[tuple[Any, ...], list[str]] = {}
    taken: dict[str, str] = {}  # a client's own id -> the answer's it took (for good)
    for ex in exchanges:
        rename: dict[str, str] = {}
        own: dict[str, str] = {}  # (of those, the ids the client made up)
        held = {p.id for m in ex.history if not isinstance(m.content, str)
                for p in m.content if isinstance(p, ToolCallPart)}
        for i, m in enumerate(ex.history):
            for p in m.content if m.role == "assistant" and not isinstance(m.content, str) \
                    else ():
                if not isinstance(p, ToolCallPart) or p.id in answered:
                    continue
                if is_derived_call_id(p.id):
                    real = recorded.get((p.name, canonical_json(p.args)))
                elif p.id in taken:  # (sent back again by a later request)
                    real = taken[p.id]
                else:  # a client's own id: the call an answer made at this point,
                    # one no other of the client's ids has taken
                    ids = made.get((_said(ex.history[:i]), p.name, canonical_json(p.args)))
                    real = next((r for r in ids or () if r not in rename.values()
                                 and r not in held and r not in taken.values()), None)
                if real is not None and real not in rename.values() and real not in held:
                    rename[p.id] = real
                    if not is_derived_call_id(p.id):
                        own[p.id] = taken[p.id] = real
        if rename:
            ex.history = [_with_ids(m, rename) for m in ex.history]
        if len(own) < len(rename):
            given = ", ".join(sorted(v for k, v in rename.items() if k not in own))
            n = len(rename) - len(own)
            ex.notes.append(f"{ex.where}: a tool call sent back without the id its answer "
                            f"recorded takes it: {given}" if n == 1 else
                            f"{ex.where}: {n} tool calls sent back without the "
                            f"ids their answers recorded take them: {given}")
        if own:
            ex.notes.append(f"{ex.where}: tool call(s) sent back under ids of the client's "
                            "own, which no answer made, take the ids their answers "
                            "recorded: " + ", ".join(f"{a} as {b}" for a, b in own.items()))
        _distinct_ids(ex)  # (after the ids sent back are the answers': before they count)
        reply = ex.response
        before: tuple[tuple[str, str], ...] | None = None
        for p in reply.content if reply is not None and not isinstance(reply.content, str) \
                else ():
            if isinstance(p, ToolCallPart) and not is_derived_call_id(p.id):
                recorded[(p.name, canonical_json(p.args))] = p.id
                if client_made:
                    before = _said(ex.history) if before is None else before
                    made.setdefault((before, p.name, canonical_json(p.args)),
                                    []).append(p.id)


def _said(messages: Sequence[Message]) -> tuple[tuple[str, str], ...]:
    """Messages as their roles and texts (no ids): what a conversation had said."""
    return tuple((m.role, (m.text() or "").strip()) for m in messages)


def _with_ids(m: Message, rename: dict[str, str]) -> Message:
    """``m`` (a copy, when it holds an id renamed) with its calls' and results' ids
    renamed."""
    if isinstance(m.content, str) or not any(
            (p.id if isinstance(p, ToolCallPart) else getattr(p, "call_id", None)) in rename
            for p in m.content):
        return m
    return m.model_copy(update={"content": [
        p.model_copy(update={"id": rename.get(p.id, p.id)}) if isinstance(p, ToolCallPart)
        else p.model_copy(update={"call_id": rename.get(p.call_id, p.call_id)})
        if isinstance(p, ToolResultPart) else p for p in m.content]})


def say_empty_answers(exchanges: Sequence[Exchange]) -> None:
    """Note an answer that holds nothing (no text, no tool call): a model cut off at its
    token limit while it reasoned answers with nothing, and the run would look finished
    like any other."""
    for ex in exchanges:
        if ex.response is None or not _holds_nothing(ex.response):
            continue
        why = [f"finish reason {ex.finish_reason!r}" if ex.finish_reason else "",
               f"{ex.usage_detail['reasoning']} output token(s) of reasoning"
               if ex.usage_detail.get("reasoning") else ""]
        said = ", ".join(w for w in why if w)
        ex.notes.append(f"{ex.where}: the answer is empty" + (f" ({said})" if said else "")
                        + (f": {ex.empty_because}" if ex.empty_because else ""))


def drop_empty_turns(exchanges: Sequence[Exchange]) -> None:
    """Leave out, with a note, an assistant message of a request's history that holds
    nothing and comes right before another assistant message: some clients (simonw's
    ``llm``) send an answer's empty text and its tool calls back as two messages, and
    kept, the empty one split the conversation from the run whose answer made those
    calls (its stored answer is one message)."""
    for ex in exchanges:
        h = ex.history
        drop = {i for i in range(len(h) - 1)
                if _holds_nothing(h[i]) and h[i + 1].role == "assistant"}
        if not drop:
            continue
        ex.history = [m for i, m in enumerate(h) if i not in drop]
        ex.notes += [f"{ex.where}: message {i + len(ex.instructions)}: an empty assistant "
                     "message before another assistant message; not stored (it holds "
                     "nothing)" for i in sorted(drop)]
