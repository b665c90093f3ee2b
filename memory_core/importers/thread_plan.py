"""What ``threads.plan_threads`` plans: the threads (each message once, with its key,
time and first run) and the runs mapped onto their seqs; the digests of a thread's
prefixes, and the index that finds the thread a request continues by them."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from memory_core.importers.common import Exchange
from memory_core.importers.message_keys import ids_compatible
from memory_core.types import Message


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


def instructions_digest(ikey: str) -> str:
    """Short digest of a thread's instructions key (stored in its import metadata)."""
    return hashlib.sha1(ikey.encode("utf-8", "surrogatepass")).hexdigest()[:CHAIN_DIGITS]


CHAIN_DIGITS = 16  # 64 bits per stored prefix digest: enough to find, content decides


def chain_digests(keys: Sequence[str]) -> list[str]:
    """The stored form of a thread's prefix digests (see ``StoredThreads``)."""
    return [d[:CHAIN_DIGITS] for d in prefix_digests(keys)]


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


def prefix_digests(keys: Sequence[str], h: Any = None) -> list[str]:
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
class PrefixIndex:
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
            chain = old + prefix_digests(tp.keys[len(old):], h)
        else:
            h = self.hashes[tp.thread_id] = hashlib.sha1()
            chain = prefix_digests(tp.keys, h)
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

