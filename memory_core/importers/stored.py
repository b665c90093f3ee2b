"""Threads earlier imports stored, found again so a new import continues them.

Every imported thread's metadata keeps, under ``import.chain``, a short digest of its
instructions and of every prefix of its messages (``threads.chain_digests``). An import
reads the imported threads' metadata once, and the planner asks for the thread whose
messages are a prefix of a request's conversation (a later exchange of the same
conversation, captured separately) or that the conversation is a prefix of (the same
request recorded again). Digests only find candidates: the thread's stored messages are
read and compared before it is used. Erasing a thread erases its metadata, digests
included."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memory_core.importers.message_keys import ids_compatible, message_key
from memory_core.importers.thread_plan import ThreadPlan, chain_digests, instructions_digest
from memory_core.storage.base import Storage
from memory_core.types import Message

Slot = tuple[str, str | None, str]  # (instructions digest, resource, prefix digest)


def chain_metadata(tp: ThreadPlan) -> dict[str, Any]:
    """What a thread's import metadata records so later imports can find it."""
    before = (tp.stored_meta or {}).get("chain")
    ins = before.get("instructions") if isinstance(before, dict) else None
    # a keyed thread is found by its key, not its instructions: keep what was stored
    out: dict[str, Any] = {"instructions": ins if isinstance(ins, str) and tp.key is not None
                           else instructions_digest(tp.instructions_key),
                           "prefixes": chain_digests(tp.keys)}
    if tp.sent_back:  # (its digests are of the forms sent back: the keys they were of)
        out["sent_back"] = {str(seq): m.model_dump(mode="json")
                            for seq, m in sorted(tp.sent_back.items())}
    return out


def _sent_back(chain: Any, count: int) -> dict[int, Message]:
    """A stored thread's answers sent back rewritten (``ThreadPlan.sent_back``), as its
    import metadata keeps them; what does not read as one is left out."""
    kept = chain.get("sent_back") if isinstance(chain, dict) else None
    out: dict[int, Message] = {}
    for seq, raw in kept.items() if isinstance(kept, dict) else ():
        try:
            at, m = int(seq), Message.model_validate(raw)
        except ValueError:  # (pydantic's ValidationError is one)
            continue
        if 0 <= at < count:
            out[at] = m
    return out


@dataclass
class StoredImports:
    """``StoredThreads`` over a store: the imported threads as they were when the import
    began (each thread is handed out at most once per import)."""

    storage: Storage
    full: dict[Slot, str] = field(default_factory=dict)
    prefix: dict[Slot, str] = field(default_factory=dict)
    meta: dict[str, dict[str, Any]] = field(default_factory=dict)
    used: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, storage: Storage) -> StoredImports:
        out = cls(storage)
        for t in storage.memory.list_threads():
            imp = t.metadata.get("import")
            if not isinstance(imp, dict):
                continue  # threads written by agents are never continued by an import
            out.meta[t.id] = imp
            chain = imp.get("chain")
            if not isinstance(chain, dict):
                continue
            ins, prefixes = chain.get("instructions"), chain.get("prefixes")
            if not isinstance(ins, str) or not isinstance(prefixes, list) or not prefixes:
                continue
            out.full.setdefault((ins, t.resource_id, str(prefixes[-1])), t.id)
            for d in prefixes:
                out.prefix.setdefault((ins, t.resource_id, str(d)), t.id)
        return out

    def _load(self, thread_id: str, ikey: str) -> ThreadPlan:
        t = self.storage.memory.require_thread(thread_id)
        imp = self.meta[thread_id]
        key = imp.get("key")
        tp = ThreadPlan(thread_id, key if isinstance(key, str) else None, t.resource_id,
                        ikey, stored_meta=dict(imp))
        for sm in self.storage.memory.get_messages(thread_id):
            m = sm.as_message()
            tp.add(m, message_key(m), sm.created_at, None)
        tp.stored_count = len(tp.messages)
        tp.sent_back = _sent_back(imp.get("chain"), tp.stored_count)
        for seq, m in tp.sent_back.items():
            tp.keys[seq] = message_key(m)
        self.used.add(thread_id)
        return tp

    def _asked_of(self, thread_id: str, model: str | None) -> bool:
        """Whether a run of the thread was a call of ``model`` (its agent)."""
        return any(r.agent == (model or "imported")
                   for r in self.storage.runs.list_runs(thread_id=thread_id))

    def keyed(self, key: str) -> ThreadPlan | None:
        if key not in self.meta or key in self.used:
            return None  # not an imported thread: creating it is refused as a clash
        return self._load(key, "")

    def shared(self, ikey: str, resource: str | None, keys: list[str], most: int
               ) -> tuple[str, int, Message | None] | None:
        ins = instructions_digest(ikey)
        chain = chain_digests(keys[:most])
        for n in range(len(chain), 0, -1):
            tid = self.prefix.get((ins, resource, chain[n - 1]))
            if tid is not None:
                after = self.storage.memory.get_messages(tid, seqs=[n])
                return tid, n, after[0].as_message() if after else None
        return None

    def find(self, ikey: str, resource: str | None, keys: list[str],
             conv: list[Message], sent: int, model: str | None
             ) -> tuple[ThreadPlan, int] | None:
        """The earlier import's thread the conversation ``keys`` (``conv``; the
        request sent its first ``sent``) continues or repeats, and how many of its
        messages it shares. A request that sent no more than the thread's first
        message (a lone question, answered alike) repeats it only when asked of a
        model the thread's runs were (``model``): two files' "Say hello!" put to two
        models are two conversations, not one."""
        ins = instructions_digest(ikey)
        chain = chain_digests(keys)
        candidates = [self.full.get((ins, resource, chain[n - 1]))
                      for n in range(len(chain), 0, -1)]
        if chain:
            candidates.append(self.prefix.get((ins, resource, chain[-1])))
        for tid in dict.fromkeys(c for c in candidates if c is not None):
            if tid in self.used:
                continue  # this import already continues it: a branch starts a new thread
            tp = self._load(tid, ikey)
            n = min(len(tp.keys), len(keys))
            same = tp.keys[:n] == keys[:n] and all(ids_compatible(tp.messages[i], conv[i])
                                                   for i in range(n))
            if same and (sent > 1 or self._asked_of(tid, model)):
                return tp, n
            self.used.discard(tid)
        return None
