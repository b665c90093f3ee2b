"""What the import says of a request whose conversation is stored apart from the ones
before it, or whose messages were sent otherwise than stored (``threads.plan_threads``
calls these): a call or an answer sent back rewritten, a branch and where it parts,
instructions extended, a text sent trimmed or padded, the same request recorded again."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memory_core.importers.common import Exchange, shortened
from memory_core.importers.message_keys import loose_part, texts_of
from memory_core.importers.thread_plan import PrefixIndex, StoredThreads, ThreadPlan
from memory_core.text import preview
from memory_core.types import Message, canonical_json


def _what_differs(recorded: Message, sent: Message, call_id: str) -> str:
    """How an answer sent back differs from the one recorded, in a few words."""
    was = {c.id: c for c in recorded.tool_calls()}
    now = {c.id: c for c in sent.tool_calls()}
    if list(was) != list(now):
        return (f"the calls beside it differ: recorded {', '.join(map(repr, was))}; sent "
                f"{', '.join(map(repr, now))}")
    a, b = was[call_id], now[call_id]
    if a.name != b.name:
        return f"its tool's name differs: recorded {a.name!r}, sent {b.name!r}"
    for c in was:  # (the first call whose arguments the client rewrote)
        x = canonical_json(loose_part(was[c]).get("args"))
        y = canonical_json(loose_part(now[c]).get("args"))
        if x != y:
            which = "its arguments" if c == call_id else f"the arguments of {c!r}"
            return f"{which} differ: {_where_they_part(x, y)}"
    old, new = texts_of(recorded), texts_of(sent)
    if "".join(old) == "".join(new):
        return (f"its text is split otherwise: {len(old)} part(s) recorded, {len(new)} "
                "sent")
    return f"its text differs: recorded {_parts_said(old)}, sent {_parts_said(new)}"


def _where_they_part(x: str, y: str, quoted: bool = False) -> str:
    """"recorded …, sent …": two texts from a little before where they first differ
    (shown, not cut away with a common beginning) — the whitespace around them left
    out when they differ in more than that (not from a text of whitespace alone); ``quoted``: as Python literals (a text's
    line breaks shown as \\n)."""
    if x.strip() != y.strip() and x.strip() and y.strip():
        # (" <thought>…" sent for "<thought>…", and more after; a text of whitespace
        # alone is shown as it is: "recorded '\n'", not "recorded ''")
        x, y = x.strip(), y.strip()
    at = next((i for i, (p, q) in enumerate(zip(x + "\0", y + "\0", strict=False))
               if p != q), len(x))
    start = max(0, at - 30)
    lead = "…" if start else ""
    return (f"recorded {lead}{shortened(x[start:])!r}, sent {lead}{shortened(y[start:])!r}"
            if quoted else f"recorded {lead}{shortened(x[start:])}, sent "
            f"{lead}{shortened(y[start:])}")


def _parts_said(texts: tuple[str, ...]) -> str:
    """A message's text parts quoted for a note: one part as text, several as a list
    (how it was split)."""
    return repr(shortened(texts[0]) if texts else "") if len(texts) < 2 else \
        repr([shortened(t) for t in texts])


def say_calls_sent_back_otherwise(ex: Exchange, conv: list[Message], keys: list[str],
                                   seen: dict[str, MadeCall]) -> str | None:
    """A request that starts a new conversation although it sends back a tool call an
    earlier one recorded (by its id), as another message — its arguments rewritten by
    the client (langchaingo sends a string the model gave as ``{"__arg1": …}``), its
    text changed, or the call written out as an assistant's text (smolagents: "Calling
    tools: [{'id': 'call_…', …}]") — or as it was, after other messages than that
    conversation had (llm.rb sends its first two in another order): the history no
    longer matches, so say why it is a thread of its own, and what differs. Only what
    it sent is looked at: its own answer may reuse an id an earlier answer had
    (text-generation-inference numbers each answer's calls from 0) without sending
    anything back. Returns the earlier conversation's thread when the call was sent
    back as it was (a branch of it)."""
    sent = len(ex.history)
    for i, (m, key) in enumerate(zip(conv[:sent], keys[:sent], strict=True)):
        if m.role != "assistant":
            continue
        calls = m.tool_calls()
        for call in calls:
            first = seen.get(call.id)
            if first is not None and first.key != key:
                ex.notes.append(
                    f"{ex.where}: sends back tool call {call.id!r}, recorded at "
                    f"{first.where}, as another message "
                    f"({_what_differs(first.answer, m, call.id)}), so its conversation is "
                    "stored as a new thread")
                return None
            if first is not None and (before := first.thread.keys[:first.seq]) != keys[:i]:
                # (the same history before it: a branch after it; a beginning shared:
                # a branch before it — ``say_branch`` says where either parts)
                if (differs := _other_history(before, keys[:i])) is None:
                    return None
                ex.notes.append(
                    f"{ex.where}: sends back tool call {call.id!r}, recorded at "
                    f"{first.where} (thread {first.thread.thread_id}), after "
                    f"{differs}, so its conversation is stored "
                    "as a new thread, a branch of that one")
                return first.thread.thread_id
        text = m.text() if not calls else None
        for token in _ID_TOKEN.findall(text or ""):  # (ids named in the text, looked up)
            first = seen.get(token)
            if first is not None:
                ex.notes.append(
                    f"{ex.where}: sends back tool call {token!r}, recorded at {first.where}, "
                    "written out as an assistant's text instead of the call, so its "
                    "conversation is stored as a new thread")
                return None
    return None


@dataclass
class MadeCall:
    """Where an answer of the file made a tool call (``calls_seen``): the answer's key,
    where it was recorded, the answer, its thread and seq."""

    key: str
    where: str
    answer: Message
    thread: ThreadPlan
    seq: int


def _other_history(before: list[str], sent: list[str]) -> str | None:
    """How the messages a request sends before a call differ from those its
    conversation had before it, when they share no beginning: the same in another
    order, or others from the first on (None: they share a beginning)."""
    if Counter(before) == Counter(sent):
        return "the messages before it in another order than that conversation's"
    if before[:1] == sent[:1]:
        return None
    return "other messages before it than that conversation's, from the first on"


def say_answer_sent_back_otherwise(ex: Exchange, conv: list[Message], keys: list[str],
                                    chain: list[str], ikey: str, resource: str | None,
                                    index: PrefixIndex, where: Callable[[int], str]
                                    ) -> str | None:
    """A request that starts a new conversation although its history follows an
    earlier one up to an answer recorded there, which it sends back as another text
    (LlamaIndex's ReAct agent writes the model's JSON action out as "Action Input:
    {…}"): say so, with both texts — the conversations part there. Returns the id of
    the thread it parts from, when it said so."""
    if any(n.startswith(f"{ex.where}: sends back tool call") for n in ex.notes):
        return None  # (said already, of a call)
    for n in range(len(ex.history) - 1, 0, -1):  # (what it sent; its own answer is its own)
        tp = index.prefix.get((ikey, resource, chain[n - 1]))
        if tp is None or len(tp.messages) <= n or tp.keys[n] == keys[n] \
                or tp.messages[n].role != "assistant" or conv[n].role != "assistant":
            continue
        if tp.messages[n].tool_calls() or conv[n].tool_calls():
            return None  # (a call sent back otherwise: ``say_calls_sent_back_otherwise``)
        first = tp.first_run[n]
        if first is None:
            return None
        # the run's answer is the last message it added; one before it, it sent (an
        # assistant turn of its history, a prefill the answer continued)
        answered = n + 1 >= len(tp.first_run) or tp.first_run[n + 1] != first
        what = (f"the answer {where(first)} recorded" if answered else
                f"message {n} (assistant), which {where(first)} sent,")
        ex.notes.append(
            f"{ex.where}: sends back {what} as another message "
            f"({_where_they_part(tp.messages[n].text() or '', conv[n].text() or '', True)}), so "
            "its conversation is stored as a new thread")
        return tp.thread_id
    return None


# what a tool-call id looks like in a text ('call_…', 'toolu_…', 'fc_…', a UUID)
_ID_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{7,}")


def whitespace_note(ex: Exchange, i: int, role: str, earlier: str | None, *,
                     json_too: bool = False) -> str:
    """Why message ``i`` of ``ex`` (its answer, when ``i`` is past its history) is the
    stored one although its text differs around the edges: ``earlier``, the record that
    stored it (None: a request's history, not a recorded run)."""
    how = "the whitespace around its text" if not json_too else \
        "how its JSON is laid out (the same value)"
    if i == len(ex.history) and earlier is not None:
        return (f"{ex.where}: its answer differs from {earlier}'s only in {how}: taken as "
                f"that answer, stored once as {earlier} recorded it")
    said = f"{earlier} recorded" if earlier is not None else "an earlier request sent"
    if json_too:
        return (f"{ex.where}: message {i} ({role}) is sent differing only in {how} from "
                f"what {said}: taken as the same message, stored once as first recorded")
    return (f"{ex.where}: message {i} ({role}) is sent with other whitespace around its "
            f"text than {said}: taken as the same message, stored once as first recorded")


def again_note(ex: Exchange, first: str) -> str:
    """A request recorded again as ``first`` was (a retry, a test run twice): nothing
    new to store, so why its run adds no message."""
    again = "and answer" if ex.response is not None else "(no answer recorded)"
    return (f"{ex.where}: the same messages {again} as {first}: stored once, and both "
            "runs refer to them")


def sent_back_note(ex: Exchange, i: int, earlier: str | None, stored: Message,
                    sent: Message) -> str:
    """Why message ``i`` of ``ex`` is stored otherwise than it reads: an answer its
    client sends back rewritten (``Exchange.sent_back_as``) — the answer ``earlier``
    recorded (None: an earlier import's), or the run's own answer, which a later
    request's rewritten form was stored as first."""
    own = i == len(ex.history)
    answer, back = (sent, stored) if own else (stored, sent)
    calls = [c.name for c in answer.tool_calls()] if not back.tool_calls() else []
    was, now = answer.text() or "", back.text() or ""
    # (the same text in other parts: a client that joins an answer's text parts)
    how = (_where_they_part(was, now, True) if was != now else
           f"its text in {len(texts_of(answer))} part(s) recorded, "
           f"{len(texts_of(back))} sent") + (
        f"; its call {', '.join(calls)} written out as text" if calls else "")
    if own:
        return (f"{ex.where}: its answer was stored first as a later request sent it back, "
                f"rewritten by its client ({how}): taken as that message, stored once as "
                "first recorded")
    said = earlier or "an earlier import"
    return (f"{ex.where}: message {i} (assistant) is the answer {said} recorded, sent back "
            f"as its client rewrites it ({how}): taken as that answer, stored once as "
            "recorded")


def instructions_text(instructions: Sequence[Message]) -> str:
    """The text of a request's instructions, one message after another."""
    return "\n".join(m.text() or "" for m in instructions)


def extended(before: str, now: str) -> bool:
    """Whether instructions ``now`` are ``before`` with more added at the end."""
    return bool(before.strip()) and len(now) > len(before) and now.startswith(before)


def extended_note(ex: Exchange, before: str, now: str) -> str:
    added = now[len(before):].strip()
    return (f"{ex.where}: its instructions are those of the conversation it continues "
            f"with more added ({shortened(added, 80)!r}): kept in that conversation's "
            "thread")


def _said_message(m: Message) -> str:
    """A message in a note: its role and one-line preview (a call shown as a call)."""
    return f"{m.role} {shortened(preview(m), 60)!r}"


def _how_they_differ(a: Message, b: Message) -> str | None:
    """Two messages' difference in a note: two texts where they part; otherwise the
    messages as they would be shown, or, when those look alike (a call's id), their
    JSON where it parts; None when nothing tells them apart."""
    if a.role == b.role and not (a.tool_calls() or b.tool_calls() or a.tool_results()
                                 or b.tool_results()):
        x, y = a.text() or "", b.text() or ""
        return f"{a.role}: {_where_they_part(x, y, True)}" if x != y else None
    if _said_message(a) != _said_message(b):
        return f"recorded {_said_message(a)}, sent {_said_message(b)}"
    x, y = a.canonical_json(), b.canonical_json()
    return f"{a.role}: {_where_they_part(x, y, True)}" if x != y else None


def say_branch(ex: Exchange, conv: list[Message], chain: list[str], ikey: str,
                instructions: str, texts: dict[str, str], resource: str | None,
                index: PrefixIndex, where: Callable[[int], str],
                stored: StoredThreads | None, keys: list[str]) -> str | None:
    """A request that starts a thread of its own, although it shares a conversation's
    beginning (a branch: a message after it differs, or is left out) or sends a whole
    conversation under other instructions, that no other note explains: say which
    conversation, and where it parts (the run would otherwise look like a new one).
    Returns that thread's id, when it said so."""
    def began(tp: ThreadPlan) -> str:
        first = next((r for r in tp.first_run if r is not None), None)
        return f"thread {tp.thread_id}" + (f" (the conversation {where(first)} began)"
                                          if first is not None else "")
    sent = min(len(ex.history), len(chain))  # (where it parts is in what it sent: a
    # request sent alike and answered otherwise is a branch said by nothing)
    for n in range(sent, 1, -1):  # the whole of one, under other instructions
        tp = index.ends.get((resource, chain[n - 1]))
        if tp is not None and len(tp.messages) == n and tp.instructions_key != ikey:
            before = texts.get(tp.instructions_key, "")
            ex.notes.append(
                f"{ex.where}: sends the whole of {began(tp)}, its {n} messages, under other "
                f"instructions ({_where_they_part(before, instructions, True)}), so its "
                "conversation is stored as a new thread")
            return tp.thread_id
    for n in range(sent - 1, 0, -1):  # a beginning shared, then another message
        tp = index.prefix.get((ikey, resource, chain[n - 1]))
        differ = _how_they_differ(tp.messages[n], conv[n]) \
            if tp is not None and len(tp.messages) > n else None
        if tp is not None and differ is not None:
            ex.notes.append(
                f"{ex.where}: shares its first {n} message(s) with {began(tp)}, then "
                f"message {n} differs ({differ}): a branch of it, stored as a new thread")
            return tp.thread_id
    found = stored.shared(ikey, resource, keys, sent - 1) if stored is not None else None
    if found is not None:  # (a thread an earlier import stored: a live capture's)
        tid, n, after = found
        differ = _how_they_differ(after, conv[n]) if after is not None else None
        ex.notes.append(
            f"{ex.where}: shares its first {n} message(s) with thread {tid} (an earlier "
            "import's), "
            + (f"then message {n} differs ({differ})" if differ is not None else
               "which another request continues")
            + ": a branch of it, stored as a new thread")
        return tid
    return None

