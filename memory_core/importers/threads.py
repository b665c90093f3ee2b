"""Grouping recorded requests into threads: every request repeats its history, so each
message must be stored once per thread and each request mapped onto stored seqs.

Rules (docs/importing.md): a record with a thread key joins that key's thread, its
messages aligned by overlap; a record without one joins the thread whose stored
messages are a prefix of its conversation, else starts a new thread."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from memory_core.importers.common import Exchange, undated
from memory_core.types import Message, canonical_json


def message_key(m: Message) -> str:
    """Identity of a message for matching repeated history: role and parts (a string
    and a single text part are the same message); metadata does not count."""
    return canonical_json([m.role, [p.model_dump(mode="json") for p in m.parts]])


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
    the new user message(s), or tool results when the request continues a tool loop."""
    for i in range(len(history) - 1, -1, -1):
        if history[i].role == "assistant":
            return i + 1
    return 0


def _suffix_overlap(stored: list[str], conv: list[str]) -> int:
    for k in range(min(len(stored), len(conv)), 0, -1):
        if stored[-k:] == conv[:k]:
            return k
    return 0


def _find_run(stored: list[str], conv: list[str]) -> int | None:
    n = len(conv)
    for i in range(len(stored) - n, -1, -1):
        if stored[i:i + n] == conv:
            return i
    return None


def plan_threads(exchanges: Sequence[Exchange], implicit_prefix: str,
                 resource_override: str | None) -> tuple[list[ThreadPlan], list[RunPlan]]:
    threads: list[ThreadPlan] = []
    by_key: dict[str, ThreadPlan] = {}
    implicit: list[ThreadPlan] = []
    runs: list[RunPlan] = []
    for ex in exchanges:
        conv = ex.history + ([ex.response] if ex.response is not None else [])
        keys = [message_key(m) for m in conv]
        ikey = canonical_json([message_key(m) for m in ex.instructions])
        start = ex.started_at or undated(ex.index)
        end = ex.finished_at or start
        at = [start] * len(ex.history) + ([end] if ex.response is not None else [])
        resource = resource_override if resource_override is not None else ex.resource_id
        inp = input_start(ex.history)
        # messages first seen in the run's own input or response carry its run id;
        # older history seen for the first time was written by no recorded run
        owned = [i >= inp for i in range(len(conv))]

        tp: ThreadPlan | None
        seqs: list[int]
        if ex.thread_key is not None:
            tp = by_key.get(ex.thread_key)
            if tp is None:
                tp = ThreadPlan(ex.thread_key, ex.thread_key, resource, ikey)
                by_key[ex.thread_key] = tp
                threads.append(tp)
            k = _suffix_overlap(tp.keys, keys)
            if k == len(keys):
                seqs = list(range(len(tp.keys) - k, len(tp.keys)))
            elif k == 0 and (pos := _find_run(tp.keys, keys)) is not None:
                seqs = list(range(pos, pos + len(keys)))  # a re-recorded earlier request
            else:
                seqs = list(range(len(tp.keys) - k, len(tp.keys)))
                seqs += [tp.add(conv[i], keys[i], at[i], ex.index if owned[i] else None)
                         for i in range(k, len(conv))]
        else:
            tp = None
            best = -1
            for cand in implicit:
                if cand.instructions_key != ikey or cand.resource_id != resource:
                    continue
                n = len(cand.keys)
                if n <= len(keys) and cand.keys == keys[:n] and n > best:
                    tp, best = cand, n
            if tp is None:
                # the same request recorded again (a retry): reuse, store nothing new
                for cand in implicit:
                    if (cand.instructions_key == ikey and cand.resource_id == resource
                            and cand.keys[:len(keys)] == keys):
                        tp, best = cand, len(keys)
                        break
            if tp is None:
                tp = ThreadPlan(f"{implicit_prefix}{len(implicit)}", None, resource, ikey)
                implicit.append(tp)
                threads.append(tp)
                best = 0
            seqs = list(range(min(best, len(keys))))
            seqs += [tp.add(conv[i], keys[i], at[i], ex.index if owned[i] else None)
                     for i in range(len(seqs), len(conv))]
        h = len(ex.history)
        runs.append(RunPlan(ex, tp, seqs[:h], seqs[h] if ex.response is not None else None,
                            inp))
    return threads, runs
