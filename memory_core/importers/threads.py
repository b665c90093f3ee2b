"""Grouping recorded requests into threads: every request repeats its history, so each
message must be stored once per thread and each request mapped onto stored seqs.

Rules (docs/importing.md): a record with a thread key joins that key's thread, its
messages aligned by overlap; a record without one joins the thread whose stored
messages are a prefix of its conversation, else starts a new thread. Threads stored by
earlier imports count too (``StoredThreads``): a conversation captured one exchange at a
time (the proxy, the collector) or exported in several files continues its thread."""

from __future__ import annotations

import copy
import re
from collections import Counter
from collections.abc import Sequence

from memory_core.importers.common import Exchange, undated
from memory_core.importers.message_keys import (
    adopt_ids,
    ids_compatible,
    instructions_key,
    message_key,
    texts_of,
    trimmed_texts,
)
from memory_core.importers.retries import retried_calls, retries_after
from memory_core.importers.thread_notes import (
    MadeCall,
    again_note,
    extended,
    extended_note,
    instructions_text,
    say_answer_sent_back_otherwise,
    say_branch,
    say_calls_sent_back_otherwise,
    sent_back_note,
    whitespace_note,
)
from memory_core.importers.thread_plan import (
    PrefixIndex,
    RunPlan,
    StoredThreads,
    ThreadPlan,
    prefix_digests,
)
from memory_core.models.openai_codec import is_derived_call_id
from memory_core.types import (
    Message,
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


def plan_threads(exchanges: Sequence[Exchange], implicit_prefix: str,
                 resource_override: str | None,
                 stored: StoredThreads | None = None
                 ) -> tuple[list[ThreadPlan], list[RunPlan]]:
    threads: list[ThreadPlan] = []
    by_key: dict[str, list[ThreadPlan]] = {}  # a session's threads, the first named by its key
    index = PrefixIndex()
    runs: list[RunPlan] = []
    run_of: dict[int, RunPlan] = {}  # by exchange index
    # message objects held more than once (a parser shares identical messages): a
    # thread stores a copy of its own, so what ``adopt_ids`` gives it (the name a later
    # request sends) reaches the exchange that stored it, as with a message of its
    # own, and no other exchange or thread
    held = Counter(id(m) for ex in exchanges for m in ex.conversation())
    keyed: dict[int, tuple[Message, str]] = {}  # (keeps each message keyed alive)
    # each tool-call id an answer of the file made: that answer's key, where, and itself
    calls_seen: dict[str, MadeCall] = {}
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
            chain = prefix_digests(keys)  # (every prefix's digest: each lookup below reads it)
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
                    return extended(texts.get(t.instructions_key, ""), now)
                tp, best = index.find_extended(extends, resource, chain, conv)
                if tp is not None:
                    ex.notes.append(extended_note(ex, texts[tp.instructions_key], said))
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
                    ex.notes.append(again_note(
                        ex, f"thread {tp.thread_id} (an earlier import's)"))
                if found is None:
                    noted = len(ex.notes)
                    tp.branch_of = say_calls_sent_back_otherwise(ex, conv, keys,
                                                                  calls_seen) \
                        or say_answer_sent_back_otherwise(ex, conv, keys, chain, ikey,
                                                           resource, index, where_of)
                    if len(ex.notes) == noted:  # (no other note says why)
                        now = texts.setdefault(ikey, instructions_text(ex.instructions))
                        tp.branch_of = say_branch(ex, conv, chain, ikey, now, texts,
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
                ex.notes.append(sent_back_note(ex, i, earlier, m, conv[i])
                                if back else whitespace_note(
                    ex, i, conv[i].role, earlier,
                    json_too=trimmed_texts(m) != trimmed_texts(conv[i])))
        if ex.response is not None and not isinstance(ex.response.content, str):
            for call in ex.response.tool_calls():  # (an answer's calls: those sent back)
                if not is_derived_call_id(call.id):
                    calls_seen.setdefault(call.id, MadeCall(keys[-1], ex.where, ex.response,
                                                         tp, seqs[len(ex.history)]))
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
            ex.notes.append(again_note(ex, run_of[first].exchange.where))
    runs.sort(key=lambda r: r.exchange.index)  # (a failed call was planned after its retry)
    if renamed:
        _say_named_later(runs, renamed, at_seq)
    return threads, runs
