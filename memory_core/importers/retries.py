"""A failed call that the file sends again and has answered (a retry: an expired
signature, a 5xx) belongs to its retry's conversation (``plan_threads`` plans it there):
which calls those are, and the order that plans each right after its retry."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import timedelta
from typing import Any

from memory_core.importers.common import Exchange
from memory_core.types import Message

RETRY_WITHIN = timedelta(hours=1)  # a retry's start after the failed call's, at most


def retried_calls(exchanges: Sequence[Exchange], ikey_of: Callable[[Exchange], str],
                  key_of: Callable[[Message], str],
                  resource_of: Callable[[Exchange], str | None]) -> dict[int, int]:
    """Each failed call (no answer) that a later call of the file sends again — the same
    instructions, messages and resource, to the same model — and has answered within
    ``RETRY_WITHIN`` of it (a retry: an expired signature, a 5xx): the retry's index by
    the failed call's. The failed call belongs to its retry's conversation: placed by
    its messages alone it joined the first conversation sharing them, another client's
    or model's, and the retry, answered otherwise than that one, started a thread of
    its own. The same messages sent to another model are another call (an eval's next
    provider), not its retry."""
    failed = [ex for ex in exchanges if ex.response is None and ex.thread_key is None]
    if not failed:
        return {}

    def sig(ex: Exchange) -> tuple[Any, ...]:
        return (ikey_of(ex), resource_of(ex), ex.requested_model,
                *(key_of(m) for m in ex.history))
    waiting: dict[tuple[Any, ...], list[int]] = {}
    for ex in failed:
        waiting.setdefault(sig(ex), []).append(ex.index)
    sizes = {len(ex.history) for ex in failed}
    started = {ex.index: ex.started_at for ex in failed}

    def soon_after(f: int, ex: Exchange) -> bool:  # (undated: the file's order says it)
        at = started[f]
        return at is None or ex.started_at is None or \
            timedelta(0) <= ex.started_at - at <= RETRY_WITHIN
    out: dict[int, int] = {}
    for ex in exchanges:
        if ex.response is None or ex.thread_key is not None or len(ex.history) not in sizes:
            continue
        key = sig(ex)
        found = waiting.get(key)
        if found and found[0] < ex.index:
            out.update((f, ex.index) for f in found if f < ex.index and soon_after(f, ex))
            waiting[key] = [f for f in found if f > ex.index]
    return out


def retries_after(exchanges: Sequence[Exchange], retried: dict[int, int]
                   ) -> Iterator[Exchange]:
    """The exchanges in file order, a failed call that was retried right after its
    retry (planned in its thread)."""
    after: dict[int, list[Exchange]] = {}
    for ex in exchanges:
        if ex.index in retried:
            after.setdefault(retried[ex.index], []).append(ex)
    for ex in exchanges:
        if ex.index not in retried:
            yield ex
            yield from after.get(ex.index, ())
