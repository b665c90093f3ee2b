"""Rewinding a thread (SPEC §2.7): ``truncate_messages_after``.

The reference's rules: ``index = -1`` deletes every message; otherwise ``index``
indexes the list a no-query ``get_messages`` returns (the recent window, which may be
only the thread's tail), the row at ``index`` is kept and every later message of the
thread is deleted. A non-integer index, one below ``-1`` or one past the end of that
view returns ``0``; a store that cannot delete returns ``None``.

What it leaves, on purpose (SPEC §11: truncation does not reconcile):

- **observations** made from removed messages stay, as in the reference; the observer's
  counters are not moved back, and since deleted seqs are never given again the
  messages stored after a rewind are new to the observer;
- **working memory** written by the runs whose messages went stays as it is: a working
  memory value is not derived from messages we could re-derive it from;
- **journal records** of the runs that stored removed messages are kept whole (their
  frozen prompts, steps and outputs still say what happened). Their seals are rewritten
  to leave out the removed messages and list them (``SealRecord.truncated``), so
  ``verify_run`` still says ok and ``replay`` still replays them byte-identically,
  comparing the stored messages that remain.
  Re-composing such a run (``replay(..., memory=...)``) reads the store as it is now:
  a run whose history was truncated away composes differently, and replay names the
  first differing item rather than pretending the history is still there.
"""

from __future__ import annotations

from collections.abc import Sequence

from memory_core.errors import InvalidInputError
from memory_core.journal import RunReader
from memory_core.journal.seal import detach_truncated
from memory_core.storage.base import MemoryStore, Storage
from memory_core.types import StoredMessage


def can_delete(store: MemoryStore) -> bool:
    """Whether the store implements the port's ``delete_messages_after``."""
    return type(store).delete_messages_after is not MemoryStore.delete_messages_after


def truncate_messages_after(storage: Storage, thread_id: str, index: object,
                            view: Sequence[StoredMessage]) -> int | None:
    """Delete every message of the thread after ``view[index]`` (all with ``-1``);
    returns how many went, 0 for an index out of the rules, None for a store that
    cannot delete. ``view`` is the no-query view ``index`` counts in."""
    if not isinstance(thread_id, str) or not thread_id:
        raise InvalidInputError(f"thread id must be a non-empty string, got {thread_id!r}")
    store = storage.memory
    if not can_delete(store):
        return None
    if isinstance(index, bool) or not isinstance(index, int) or index < -1:
        return 0
    if store.get_thread(thread_id) is None:
        return 0
    if index == -1:
        cut = -1
    elif index < len(view):
        cut = view[index].seq
    else:
        return 0
    doomed = [m.seq for m in store.get_messages(thread_id, from_seq=cut + 1)]
    # seals first: a crash in between leaves seals that already leave the messages out
    # (still verifying), and a second truncation finishes the delete
    detached = detach_runs(storage, thread_id, doomed)
    gone = store.delete_messages_after(thread_id, cut)
    late = sorted(set(gone) - set(doomed))  # stored by a run while we truncated
    if late:
        detach_runs(storage, thread_id, late, skip=detached)
    return len(gone)


def detach_runs(storage: Storage, thread_id: str, seqs: Sequence[int],
                skip: Sequence[str] = ()) -> list[str]:
    """Rewrite the seal of every run of the thread that stored one of ``seqs``;
    returns those runs."""
    wanted = set(seqs)
    out: list[str] = []
    if not wanted:
        return out
    for run in storage.runs.list_runs(thread_id=thread_id):
        if run.run_id in skip:
            continue
        reader = RunReader(storage.runs, run.run_id)
        stored: set[int] = set()
        for rec in (reader.persist_input(), reader.persist_output()):
            if rec is not None:
                stored.update(rec.seqs)
        hit = sorted(stored & wanted)
        if hit and detach_truncated(storage, run.run_id, [(thread_id, s) for s in hit]):
            out.append(run.run_id)
    return out
