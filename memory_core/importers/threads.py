"""Grouping recorded requests into threads: every request repeats its history, so each
message must be stored once per thread and each request mapped onto stored seqs.

Rules (docs/importing.md): a record with a thread key joins that key's thread, its
messages aligned by overlap; a record without one joins the thread whose stored
messages are a prefix of its conversation, else starts a new thread. Threads stored by
earlier imports count too (``StoredThreads``): a conversation captured one exchange at a
time (the proxy, the collector) or exported in several files continues its thread."""

from __future__ import annotations

import copy
import hashlib
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from memory_core.importers.common import Exchange, shortened, undated
from memory_core.importers.message_keys import (
    adopt_ids,
    ids_compatible,
    instructions_key,
    loose_part,
    message_key,
    texts_of,
    trimmed_texts,
)
from memory_core.importers.retries import retried_calls, retries_after
from memory_core.models.openai_codec import is_derived_call_id
from memory_core.text import preview
from memory_core.types import (
    Message,
    canonical_json,
)

_GIVEN = re.compile(r"had no id; given '(call-[0-9a-f]{12})'$")


def _say_named_later(runs: Sequence[RunPlan],
                     renamed: dict[tuple[int, str], dict[str, str]],
                     at_seq: dict[tuple[int, int, str], tuple[str, str]]) -> None:
    """The notes "had no id; given 'call-…'" of calls a later request sent back under
    an id of the client's own (``renamed``: by thread and our id, each id the client
    used and the first request that used it), which the stored call then took: they
    name the client's id, not ours, which nothing holds. Two answers that made the same
    id-less call were given the same id: an answer's note names the id its own call
    took (``at_seq``: by thread, the answer's seq and our id)."""
    for run in runs:
        ex = run.exchange
        for i, note in enumerate(ex.notes):
            m = _GIVEN.search(note)
            named = renamed.get((id(run.thread), m.group(1))) if m else None
            if not m or not named:
                continue
            own = at_seq.get((id(run.thread), run.response_seq, m.group(1))) \
                if run.response_seq is not None and "response" in note[:m.start()] else None
            if len(named) == 1 or own is not None:
                (client, by), = named.items() if own is None else [own]
                said = f"had no id; {by} sends it back as '{client}', the id it is stored with"
            else:
                said = (f"had no id; given '{m.group(1)}', which later requests send back "
                        f"under ids of their own ({', '.join(map(repr, named))})")
            ex.notes[i] = note[:m.start()] + said


def _own_copy(m: Message) -> Message:
    """A copy of ``m`` that what ``adopt_ids`` does to it reaches alone: its metadata
    copied whole, its parts list new (parts are frozen: ``adopt_ids`` replaces them),
    not a deep copy of every part (a fifth of planning, every stored message of a
    conversation is shared by the parser)."""
    return m.model_copy(update={
        "content": m.content if isinstance(m.content, str) else list(m.content),
        "metadata": copy.deepcopy(m.metadata) if m.metadata else {}})


@dataclass
class ThreadPlan:
    thread_id: str
    key: str | None
    resource_id: str | None
    instructions_key: str
    messages: list[Message] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)
    created_at: list[datetime] = field(default_factory=list)
    first_run: list[int | None] = field(default_factory=list)  # exchange index or None
    # per stored seq, computed once for all the runs whose history repeats it
    token_counts: dict[int, int] = field(default_factory=dict)
    previews: dict[int, str] = field(default_factory=dict)
    # (lane, seq or place) → (the message or ref, its JSON in a run's records): the
    # writer's, made once a thread
    prompt_items: dict[tuple[str, int], tuple[Any, str]] = field(default_factory=dict)
    # a thread an earlier import stored: its first ``stored_count`` messages are in the
    # store already (``stored_meta`` is its import metadata, kept when it is extended)
    stored_count: int = 0
    stored_meta: dict[str, Any] | None = None
    # the thread this one branches off (a note of its first run says where they part)
    branch_of: str | None = None
    # a session's thread (``key``) a request sent the history of: a request of the
    # session that continues none of its threads is another conversation (``_in_session``)
    sends_history: bool = False
    # answers stored as recorded that their client sends back rewritten, by seq
    # (``Exchange.sent_back_as``): the thread's key there is the rewritten form's
    sent_back: dict[int, Message] = field(default_factory=dict)

    @property
    def stored(self) -> bool:
        return self.stored_meta is not None

    def add(self, m: Message, key: str, at: datetime, run: int | None) -> int:
        self.messages.append(m)
        self.keys.append(key)
        self.created_at.append(at)
        self.first_run.append(run)
        return len(self.messages) - 1


@dataclass
class RunPlan:
    exchange: Exchange
    thread: ThreadPlan
    history_seqs: list[int]
    response_seq: int | None
    input_from: int  # history[input_from:] is the run's input (after the last assistant)


def input_start(history: Sequence[Message]) -> int:
    """The run's input is what follows the last assistant message of the request:
    the new user message(s), or tool results when the request continues a tool loop.
    Assistant messages ending the request (a prefill the client wrote for the
    response to continue, or the nudge crewAI adds as the assistant) were sent last:
    input too, with the user turn before them."""
    end = len(history)
    while end > 0 and history[end - 1].role == "assistant":
        end -= 1
    for i in range(end - 1, -1, -1):
        if history[i].role == "assistant":
            return i + 1
    return 0


def _suffix_overlap(stored: list[str], conv: list[str]) -> int:
    for k in range(min(len(stored), len(conv)), 0, -1):
        if stored[-k:] == conv[:k]:
            return k
    return 0


def _in_session(family: list[ThreadPlan], keys: list[str]
                ) -> tuple[ThreadPlan | None, int, int | None]:
    """The thread of a session (the threads planned under one thread key, its first
    named by the key) a request goes on: the one whose last messages its conversation
    begins with (most of them wins; the newest on a tie), or that holds the whole
    conversation (a re-recorded earlier request: ``pos``); else the newest, to append
    the conversation to — unless the session's requests send their history, when a
    request that continues none of its threads is another conversation (None: a
    subagent's, or a branch)."""
    best: tuple[ThreadPlan | None, int] = (None, 0)
    for tp in family:
        k = _suffix_overlap(tp.keys, keys)
        if k and k >= best[1]:
            best = (tp, k)
    if best[0] is not None:
        return best[0], best[1], None
    for tp in reversed(family):
        if (pos := _find_run(tp.keys, keys)) is not None:
            return tp, 0, pos
    newest = family[-1]
    if newest.keys and any(tp.sends_history for tp in family):
        return None, 0, None
    return newest, 0, None


def _say_other_conversation(ex: Exchange, family: list[ThreadPlan], keys: list[str],
                            name: str) -> str | None:
    """The note of a request of a session that continues none of the session's
    threads, which the session's other requests send the history of: a branch of the
    thread whose beginning it shares (returned), or another conversation."""
    shared = [(next((i for i, (a, b) in enumerate(zip(tp.keys, keys, strict=False))
                     if a != b), min(len(tp.keys), len(keys))), tp) for tp in family]
    n, tp = max(shared, key=lambda x: x[0])
    session = family[0].thread_id
    if n:
        ex.notes.append(f"{ex.where}: shares its first {n} message(s) with thread {tp.thread_id} "
                        f"of session {session}, then goes on otherwise: a branch of it, "
                        f"stored as thread {name}")
        return tp.thread_id
    ex.notes.append(f"{ex.where}: continues none of session {session}'s conversations, "
                    "whose requests send their history (a subagent's, or another "
                    f"conversation of the session): stored as thread {name}")
    return None


def _find_run(stored: list[str], conv: list[str]) -> int | None:
    n = len(conv)
    for i in range(len(stored) - n, -1, -1):
        if stored[i:i + n] == conv:
            return i
    return None


def _window(tp: ThreadPlan, end: int, keys: list[str], conv: list[Message]
            ) -> list[int] | None:
    """Where a request lies in ``tp`` when it sends back the thread's message ``end``
    (an earlier response) after only a window of the history before it: the seqs of
    the messages it repeats — that window, then whatever of the thread's continuation
    it repeats (a retry) — when the rest it sends is new at the thread's end. None when
    it does not fit: no window of it ends at ``end``, its ids differ, or it goes on
    another way than the thread did (a branch)."""
    k = _suffix_overlap(tp.keys[:end + 1], keys)
    if k == 0:
        return None
    m = 0
    while k + m < len(keys) and end + 1 + m < len(tp.keys) and tp.keys[end + 1 + m] == keys[k + m]:
        m += 1
    if k + m < len(keys) and end + 1 + m < len(tp.keys):
        return None  # it goes another way than the thread went on: a branch
    seqs = list(range(end + 1 - k, end + 1 + m))
    if not all(ids_compatible(tp.messages[s], conv[i]) for i, s in enumerate(seqs)):
        return None
    return seqs


def instructions_digest(ikey: str) -> str:
    """Short digest of a thread's instructions key (stored in its import metadata)."""
    return hashlib.sha1(ikey.encode("utf-8", "surrogatepass")).hexdigest()[:CHAIN_DIGITS]


CHAIN_DIGITS = 16  # 64 bits per stored prefix digest: enough to find, content decides


def chain_digests(keys: Sequence[str]) -> list[str]:
    """The stored form of a thread's prefix digests (see ``StoredThreads``)."""
    return [d[:CHAIN_DIGITS] for d in _chain(keys)]


class StoredThreads(Protocol):
    """Threads earlier imports stored, as the planner may continue them."""

    def keyed(self, key: str) -> ThreadPlan | None:
        """The imported thread stored under ``key``, or None."""

    def find(self, ikey: str, resource: str | None, keys: list[str],
             conv: list[Message], sent: int, model: str | None
             ) -> tuple[ThreadPlan, int] | None:
        """A stored thread whose messages are a prefix of ``conv`` (longest first), or
        that ``conv`` is a prefix of (a request recorded again: one that sent only its
        first message, ``sent``, asked of a model its runs were); with how many of
        ``conv``'s messages it holds."""

    def shared(self, ikey: str, resource: str | None, keys: list[str], most: int
               ) -> tuple[str, int, Message | None] | None:
        """The stored thread with these instructions that shares the longest beginning
        (at most ``most`` messages) with ``keys``: its id, how many it shares, and its
        message after them (None: it ends there)."""


def _chain(keys: Sequence[str], h: Any = None) -> list[str]:
    """Digests of every prefix of ``keys`` (entry n-1 identifies keys[:n]); with ``h``
    (the hash of keys before these, updated here) of every prefix after those."""
    out: list[str] = []
    h = hashlib.sha1() if h is None else h
    for k in keys:
        h.update(k.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
        out.append(h.copy().hexdigest())
    return out


@dataclass
class _PrefixIndex:
    """Threads without a key, found by their content: the thread whose messages are a
    prefix of a request's conversation (longest wins), or — for a retry — a thread the
    request is a prefix of. Lookups cost one hash per message, not a scan of threads."""

    threads: list[ThreadPlan] = field(default_factory=list)
    full: dict[tuple[str, str | None, str], ThreadPlan] = field(default_factory=dict)
    prefix: dict[tuple[str, str | None, str], ThreadPlan] = field(default_factory=dict)
    # each thread by its whole chain whatever its instructions (``find_extended``)
    ends: dict[tuple[str | None, str], ThreadPlan] = field(default_factory=dict)
    chains: dict[str, list[str]] = field(default_factory=dict)
    # each thread's hash of the keys its chain covers (a thread only grows: its chain
    # is extended, not made again from its first message on every request)
    hashes: dict[str, Any] = field(default_factory=dict)

    def register(self, tp: ThreadPlan) -> None:
        old = self.chains.get(tp.thread_id)
        h = self.hashes.get(tp.thread_id)
        if old is not None and h is not None and len(old) <= len(tp.keys):
            chain = old + _chain(tp.keys[len(old):], h)
        else:
            h = self.hashes[tp.thread_id] = hashlib.sha1()
            chain = _chain(tp.keys, h)
        if old:
            self.full.pop((tp.instructions_key, tp.resource_id, old[-1]), None)
            self.ends.pop((tp.resource_id, old[-1]), None)
        self.chains[tp.thread_id] = chain
        if chain:
            self.full.setdefault((tp.instructions_key, tp.resource_id, chain[-1]), tp)
            self.ends.setdefault((tp.resource_id, chain[-1]), tp)
        for d in chain[len(old or []):]:
            self.prefix.setdefault((tp.instructions_key, tp.resource_id, d), tp)

    def find(self, ikey: str, resource: str | None, chain: list[str],
             conv: list[Message]) -> tuple[ThreadPlan | None, int]:
        """The thread whose messages are the longest prefix of ``conv`` (``chain``: its
        digests, ``_chain``), and how many of its messages it shares."""
        for n in range(len(chain), 0, -1):
            tp = self.full.get((ikey, resource, chain[n - 1]))
            if tp is not None and all(isinstance(a.content, str) or ids_compatible(a, b)
                                      for a, b in zip(tp.messages[:n], conv, strict=False)):
                return tp, n  # (a text has no ids: compatible, without a call)
        tp = self.prefix.get((ikey, resource, chain[-1])) if chain else None
        if tp is not None and all(ids_compatible(tp.messages[i], conv[i])
                                  for i in range(len(conv))):
            return tp, len(chain)  # the same request recorded again: store nothing new
        return None, -1

    def find_extended(self, extends: Callable[[ThreadPlan], bool], resource: str | None,
                      chain: list[str], conv: list[Message]) -> tuple[ThreadPlan | None, int]:
        """The thread a request continues whole — its messages and an answer of them —
        whose instructions ``extends(thread)`` says the request's own extend (Google
        ADK adds the artifacts it holds to its system instruction as a conversation
        goes on)."""
        for n in range(len(chain), 1, -1):
            tp = self.ends.get((resource, chain[n - 1]))
            if tp is not None and len(tp.messages) == n and extends(tp) and all(
                    ids_compatible(a, b) for a, b in zip(tp.messages, conv, strict=False)
                    if not isinstance(a.content, str)):
                return tp, n
        return None, -1


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


def _say_calls_sent_back_otherwise(ex: Exchange, conv: list[Message], keys: list[str],
                                   seen: dict[str, tuple[str, str, Message]]) -> None:
    """A request that starts a new conversation although it sends back a tool call an
    earlier one recorded (by its id), as another message — its arguments rewritten by
    the client (langchaingo sends a string the model gave as ``{"__arg1": …}``), its
    text changed, or the call written out as an assistant's text (smolagents: "Calling
    tools: [{'id': 'call_…', …}]"): the history no longer matches, so say why it is a
    thread of its own, and what differs. Only what it sent is looked at: its own answer
    may reuse an id an earlier answer had (text-generation-inference numbers each
    answer's calls from 0) without sending anything back."""
    sent = len(ex.history)
    for m, key in zip(conv[:sent], keys[:sent], strict=True):
        if m.role != "assistant":
            continue
        calls = m.tool_calls()
        for call in calls:
            first = seen.get(call.id)
            if first is not None and first[0] != key:
                ex.notes.append(
                    f"{ex.where}: sends back tool call {call.id!r}, recorded at {first[1]}, "
                    f"as another message ({_what_differs(first[2], m, call.id)}), so its "
                    "conversation is stored as a new thread")
                return
        text = m.text() if not calls else None
        for token in _ID_TOKEN.findall(text or ""):  # (ids named in the text, looked up)
            first = seen.get(token)
            if first is not None:
                ex.notes.append(
                    f"{ex.where}: sends back tool call {token!r}, recorded at {first[1]}, "
                    "written out as an assistant's text instead of the call, so its "
                    "conversation is stored as a new thread")
                return


def _say_answer_sent_back_otherwise(ex: Exchange, conv: list[Message], keys: list[str],
                                    chain: list[str], ikey: str, resource: str | None,
                                    index: _PrefixIndex, where: Callable[[int], str]
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
            return None  # (a call sent back otherwise: ``_say_calls_sent_back_otherwise``)
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


def _whitespace_note(ex: Exchange, i: int, role: str, earlier: str | None, *,
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


def _again_note(ex: Exchange, first: str) -> str:
    """A request recorded again as ``first`` was (a retry, a test run twice): nothing
    new to store, so why its run adds no message."""
    again = "and answer" if ex.response is not None else "(no answer recorded)"
    return (f"{ex.where}: the same messages {again} as {first}: stored once, and both "
            "runs refer to them")


def _sent_back_note(ex: Exchange, i: int, earlier: str | None, stored: Message,
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


def _extended(before: str, now: str) -> bool:
    """Whether instructions ``now`` are ``before`` with more added at the end."""
    return bool(before.strip()) and len(now) > len(before) and now.startswith(before)


def _extended_note(ex: Exchange, before: str, now: str) -> str:
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


def _say_branch(ex: Exchange, conv: list[Message], chain: list[str], ikey: str,
                instructions: str, texts: dict[str, str], resource: str | None,
                index: _PrefixIndex, where: Callable[[int], str],
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


def plan_threads(exchanges: Sequence[Exchange], implicit_prefix: str,
                 resource_override: str | None,
                 stored: StoredThreads | None = None
                 ) -> tuple[list[ThreadPlan], list[RunPlan]]:
    threads: list[ThreadPlan] = []
    by_key: dict[str, list[ThreadPlan]] = {}  # a session's threads, the first named by its key
    index = _PrefixIndex()
    runs: list[RunPlan] = []
    run_of: dict[int, RunPlan] = {}  # by exchange index
    # message objects held more than once (a parser shares identical messages): a
    # thread stores a copy of its own, so what ``adopt_ids`` gives it (the name a later
    # request sends) reaches the exchange that stored it, as with a message of its
    # own, and no other exchange or thread
    held = Counter(id(m) for ex in exchanges for m in ex.conversation())
    keyed: dict[int, tuple[Message, str]] = {}  # (keeps each message keyed alive)
    # each tool-call id an answer of the file made: that answer's key, where, and itself
    calls_seen: dict[str, tuple[str, str, Message]] = {}
    trimmed: set[tuple[int, int]] = set()  # (thread, seq) noted as sent trimmed
    texts: dict[str, str] = {}  # instructions key -> their text (``find_extended``)
    # ids we gave calls that a later request named otherwise: by thread and our id
    renamed: dict[tuple[int, str], dict[str, str]] = {}
    at_seq: dict[tuple[int, int, str], tuple[str, str]] = {}  # (thread, seq, ours)

    def where_of(i: int) -> str:  # (the record exchange ``i`` came from)
        return run_of[i].exchange.where

    def key_of(m: Message) -> str:
        got = keyed.get(id(m))
        if got is None or got[0] is not m:
            got = keyed[id(m)] = (m, message_key(m))
        return got[1]

    def own(ex: Exchange, conv: list[Message], i: int) -> Message:
        if held[id(conv[i])] > 1:
            conv[i] = _own_copy(conv[i])
            if i < len(ex.history):
                ex.history[i] = conv[i]
            else:
                ex.response = conv[i]
        return conv[i]

    def resource_of(ex: Exchange) -> str | None:
        return resource_override if resource_override is not None else ex.resource_id
    retried = retried_calls(exchanges, lambda ex: instructions_key(ex.instructions, key_of),
                            key_of, resource_of)
    for ex in retries_after(exchanges, retried):
        conv = ex.conversation()
        keys = [key_of(m) for m in conv]
        echo = ex.sent_back_as if ex.response is not None else None
        if echo is not None:  # (the thread goes on as the client sends the answer back)
            keys[-1] = key_of(echo)
        ikey = instructions_key(ex.instructions, key_of)
        start = ex.started_at or undated(ex.index)
        end = ex.finished_at or start
        at = [start] * len(ex.history) + ([end] if ex.response is not None else [])
        resource = resource_of(ex)
        inp = input_start(ex.history)
        # messages first seen in the run's own input or response carry its run id;
        # older history seen for the first time was written by no recorded run
        owned = [i >= inp for i in range(len(conv))]

        tp: ThreadPlan | None
        seqs: list[int]
        if (retry := run_of.get(retried.get(ex.index, -1))) is not None:
            # a failed call sent again and answered: its retry's thread and messages
            tp, seqs = retry.thread, list(retry.history_seqs)
            ex.notes.append(f"{ex.where}: failed; {retry.exchange.where} sent the same "
                            "messages again and was answered (a retry): both runs are of "
                            "its thread")
        elif ex.thread_key is not None:
            family = by_key.get(ex.thread_key)
            if family is None:
                tp = stored.keyed(ex.thread_key) if stored is not None else None
                tp = tp or ThreadPlan(ex.thread_key, ex.thread_key, resource, ikey)
                family = by_key[ex.thread_key] = [tp]
                threads.append(tp)
            tp, k, pos = _in_session(family, keys)
            if tp is None:  # another conversation of a session whose requests send
                name = f"{ex.thread_key}~{len(family) + 1}"  # their history
                tp = (stored.keyed(name) if stored is not None else None) \
                    or ThreadPlan(name, name, resource, ikey)
                tp.branch_of = _say_other_conversation(ex, family, keys, name)
                family.append(tp)
                threads.append(tp)
            if k == len(keys):
                seqs = list(range(len(tp.keys) - k, len(tp.keys)))
            elif pos is not None:
                seqs = list(range(pos, pos + len(keys)))  # a re-recorded earlier request
            else:
                seqs = list(range(len(tp.keys) - k, len(tp.keys)))
                seqs += [tp.add(own(ex, conv, i), keys[i], at[i], ex.index if owned[i] else None)
                         for i in range(k, len(conv))]
            tp.sends_history = tp.sends_history or k > 0 or inp > 0
        else:
            # a request continuing a response held server-side, or sending back items
            # an earlier response output, looks in that response's thread even when its
            # own instructions differ (they are not inherited); one that sends only a
            # window of the history before that response is aligned on it
            link = ex.held.continues if ex.held is not None \
                and ex.held.continues is not None else ex.replays
            near = run_of.get(link) if link is not None else None
            tp, best = None, -1
            window: list[int] | None = None
            chain = _chain(keys)  # (every prefix's digest: each lookup below reads it)
            if near is not None and near.thread.key is None:
                tp, best = index.find(near.thread.instructions_key, resource, chain, conv)
                if tp is None and near.response_seq is not None and \
                        near.thread.resource_id == resource:
                    window = _window(near.thread, near.response_seq, keys, conv)
                    tp = near.thread if window is not None else None
            if tp is None:
                tp, best = index.find(ikey, resource, chain, conv)
            if tp is None and ex.instructions:  # (every thread starts here: its text kept)
                said = texts.setdefault(ikey, instructions_text(ex.instructions))

                def extends(t: ThreadPlan, now: str = said) -> bool:
                    return _extended(texts.get(t.instructions_key, ""), now)
                tp, best = index.find_extended(extends, resource, chain, conv)
                if tp is not None:
                    ex.notes.append(_extended_note(ex, texts[tp.instructions_key], said))
            if tp is None:
                # the file's n-th new conversation is named the same on every attempt,
                # whether or not an earlier import holds it
                name = f"{implicit_prefix}{len(index.threads)}"
                found = stored.find(ikey, resource, keys, conv, len(ex.history),
                                    ex.model) if stored is not None else None
                tp, best = found or (ThreadPlan(name, None, resource, ikey), 0)
                index.threads.append(tp)
                threads.append(tp)
                if found is not None and best >= len(keys):  # (nothing new to store)
                    ex.notes.append(_again_note(
                        ex, f"thread {tp.thread_id} (an earlier import's)"))
                if found is None:
                    noted = len(ex.notes)
                    _say_calls_sent_back_otherwise(ex, conv, keys, calls_seen)
                    tp.branch_of = _say_answer_sent_back_otherwise(
                        ex, conv, keys, chain, ikey, resource, index, where_of)
                    if len(ex.notes) == noted:  # (no other note says why)
                        now = texts.setdefault(ikey, instructions_text(ex.instructions))
                        tp.branch_of = _say_branch(ex, conv, chain, ikey, now, texts,
                                                   resource, index, where_of, stored, keys)
            seqs = window if window is not None else list(range(min(best, len(keys))))
            seqs += [tp.add(own(ex, conv, i), keys[i], at[i], ex.index if owned[i] else None)
                     for i in range(len(seqs), len(conv))]
            index.register(tp)
        for i, seq in enumerate(seqs):
            m = tp.messages[seq]
            if m is conv[i]:
                continue
            if seq >= tp.stored_count and (conv[i].metadata
                                           or not isinstance(m.content, str)):
                given = adopt_ids(m, conv[i])  # (a name or ids to give: nothing otherwise)
                for ours, client in given.items():
                    renamed.setdefault((id(tp), ours), {}).setdefault(client, ex.where)
                    at_seq.setdefault((id(tp), seq, ours), (client, ex.where))
            if texts_of(m) != texts_of(conv[i]) and (id(tp), seq) not in trimmed:
                trimmed.add((id(tp), seq))
                first = tp.first_run[seq]
                earlier = None if first is None else run_of[first].exchange.where
                back = seq in tp.sent_back or echo is not None and i == len(ex.history)
                ex.notes.append(_sent_back_note(ex, i, earlier, m, conv[i])
                                if back else _whitespace_note(
                    ex, i, conv[i].role, earlier,
                    json_too=trimmed_texts(m) != trimmed_texts(conv[i])))
        if ex.response is not None and not isinstance(ex.response.content, str):
            for call in ex.response.tool_calls():  # (an answer's calls: those sent back)
                if not is_derived_call_id(call.id):
                    calls_seen.setdefault(call.id, (keys[-1], ex.where, ex.response))
        h = len(ex.history)
        if echo is not None:
            tp.sent_back.setdefault(seqs[h], echo)
        runs.append(RunPlan(ex, tp, seqs[:h], seqs[h] if ex.response is not None else None,
                            inp))
        run_of[ex.index] = runs[-1]
        # the same messages sent again and answered alike, or failing again (a retry, a
        # test run twice, once streamed): nothing new to store, so say why its run adds
        # no message (how it was sent may differ: its import record says)
        last = seqs[-1] if seqs else None
        first = tp.first_run[last] if last is not None and last >= tp.stored_count else None
        if first is not None and first != ex.index and retry is None and (
                ex.response is not None or run_of[first].history_seqs == seqs):
            ex.notes.append(_again_note(ex, run_of[first].exchange.where))
    runs.sort(key=lambda r: r.exchange.index)  # (a failed call was planned after its retry)
    if renamed:
        _say_named_later(runs, renamed, at_seq)
    return threads, runs
