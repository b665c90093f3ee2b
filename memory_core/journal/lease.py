"""A run runs once: the claim a starter must hold to call the model or run a tool.

Claims are journal records ``<run>:lease:<n>`` written with ``put_if_absent``, which is
atomic on every adapter, so of several processes starting the same run id at once
exactly one writes lease 0; the others get ``RunInProgress`` (or wait for it, if
asked). The holder renews by writing the next lease before it expires and releases by
writing a ``released`` one. A later starter may take over a lease that expired, that
was released, or whose holder is a process on this machine that no longer exists
(a crashed run is resumed at once, without waiting out its lease).

So while less than half its ttl has passed since the holder wrote its claim, nobody
can have taken it over (it is neither expired, released, nor held by a dead process;
clocks of the hosts sharing a store must agree to well within ttl/2): ``check`` then
answers without reading the store. A release is a ``put_if_absent`` of the next claim,
which fails exactly when another starter has written it — no read is needed either.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

from memory_core.errors import RunInProgress
from memory_core.journal.keys import RunKeys
from memory_core.storage.base import RunJournal

DEFAULT_TTL = 60.0
_HOST = socket.gethostname()


class LeaseRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")
    v: int = 1
    owner: str
    host: str
    pid: int
    expires: float  # unix time
    released: bool = False


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists on this host (one we may not signal
    counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _latest(runs: RunJournal, keys: RunKeys) -> tuple[int, LeaseRecord | None]:
    return _latest_of(runs.list(keys.lease_prefix), keys)


def _latest_of(entries: list[tuple[str, Any]],
               keys: RunKeys) -> tuple[int, LeaseRecord | None]:
    """The latest of a run's claims among ``entries`` (in write order)."""
    claims = [(k, v) for k, v in entries if k.startswith(keys.lease_prefix)]
    if not claims:
        return -1, None
    key, raw = claims[-1]  # zero-padded: key order is claim order
    n = int(key[len(keys.lease_prefix):])
    try:
        return n, LeaseRecord.model_validate(raw)
    except ValueError:
        return n, None  # an unreadable lease claims nothing


def _free(rec: LeaseRecord | None, owner: str, now: float) -> bool:
    if rec is None or rec.released or rec.owner == owner or rec.expires <= now:
        return True
    return rec.host == _HOST and rec.pid != os.getpid() and not pid_alive(rec.pid)


@dataclass
class Lease:
    """A held claim on one run."""

    runs: RunJournal
    run_id: str
    ttl: float = DEFAULT_TTL
    owner: str = field(default_factory=lambda: f"{_HOST}:{os.getpid()}:{uuid.uuid4().hex}")
    n: int = -1
    expires: float = 0.0
    #: set once a release of this claim is durable (by ``release``, or by a holder
    #: whose ``release_held`` committed): a later ``release`` does nothing
    released: bool = False

    @property
    def keys(self) -> RunKeys:
        return RunKeys(self.run_id)

    def _record(self, expires: float, released: bool) -> dict[str, Any]:
        return LeaseRecord(owner=self.owner, host=_HOST, pid=os.getpid(), expires=expires,
                           released=released).model_dump(mode="json")

    def _young(self) -> bool:
        """Held, and less than half the ttl since it was written: nobody can have taken
        it over (module docstring)."""
        return self.n >= 0 and time.time() < self.expires - self.ttl / 2

    def _write(self, n: int, *, released: bool = False) -> bool:
        """Write claim n; a held claim (not a release) becomes this lease's."""
        expires = time.time() + self.ttl
        if not self.runs.put_if_absent(self.keys.lease(n), self._record(expires, released)):
            return False
        if not released:
            self.n, self.expires = n, expires
        return True

    def acquire(self, wait: float = 0.0) -> Lease:
        """Claim the run, waiting up to ``wait`` seconds for another holder."""
        deadline = time.monotonic() + max(0.0, wait)
        while not self._write(self.look(max(0.0, deadline - time.monotonic()))[0]):
            pass  # another starter claimed it between the look and the write: look again
        return self

    def look(self, wait: float = 0.0) -> tuple[int, list[tuple[str, Any]]]:
        """Wait up to ``wait`` seconds until the run is free to claim, without claiming
        it: the number its claim will have, and every record of the run as it is now
        (one read). RunInProgress when another holder keeps it that long."""
        deadline = time.monotonic() + max(0.0, wait)
        delay = 0.01
        while True:
            entries = self.runs.list(self.keys.prefix)
            n, rec = _latest_of(entries, self.keys)
            if _free(rec, self.owner, time.time()):
                return n + 1, entries
            if time.monotonic() >= deadline:
                holder = rec.owner if rec is not None else "another process"
                raise RunInProgress(f"run '{self.run_id}' is being run by {holder} "
                                    f"(claim {n}); it was neither re-asked nor re-run here")
            time.sleep(delay)
            delay = min(delay * 2, 0.25)

    def claim(self, n: int, wait: float = 0.0) -> Lease:
        """Claim number ``n`` (from ``look``), or, if another starter wrote it first,
        claim the run as ``acquire`` does."""
        return self if self._write(n) else self.acquire(wait)

    def claim_into(self, n: int, into: list[tuple[str, Any]], *,
                   released: bool = False) -> None:
        """Claim number ``n`` (from ``look``) as one of the records its caller writes at
        once, all or none: if another starter wrote it first, none is written (the
        caller then calls ``unclaim``). ``released``: the claim is written released
        (records written under it, none held after), and never becomes this lease's."""
        expires = time.time() + self.ttl
        into.append((self.keys.lease(n), self._record(expires, released)))
        if not released:
            self.n, self.expires = n, expires

    def unclaim(self) -> None:
        """Forget a ``claim_into`` whose write was rolled back."""
        self.n, self.expires = -1, 0.0

    def check(self) -> None:
        """Before a model call or a tool: still ours? Renews when half the ttl is gone
        (before that, nobody can have taken it over: no read is needed)."""
        if self._young():
            return
        n, rec = _latest(self.runs, self.keys)
        if rec is None or n != self.n or rec.owner != self.owner:
            raise RunInProgress(f"run '{self.run_id}' was taken over by "
                                f"{rec.owner if rec else 'another process'} (claim {n})")
        if self.expires - time.time() < self.ttl / 2 and not self._write(n + 1):
            raise RunInProgress(f"run '{self.run_id}' was taken over while renewing")

    def release(self) -> None:
        """Release the claim if it is still ours (it reads which claim is the latest:
        safe to call again after ``release_held``, or after a rolled-back one)."""
        if self.released:
            return
        n, rec = _latest(self.runs, self.keys)
        if rec is not None and n == self.n and rec.owner == self.owner:
            self.released = self._write(n + 1, released=True)

    def release_held(self, into: list[tuple[str, Any]] | None = None) -> bool:
        """Release a claim this process knows it holds, without reading: the next claim
        written as released, which is refused if another starter took the run over
        (it wrote that claim). With ``into`` (records its caller writes at once, all or
        none) and a claim too young to have been taken over, the release is added
        there instead. True when written (or added)."""
        if self.n < 0:
            return False
        if into is not None and self._young():
            record = self._record(time.time() + self.ttl, True)
            into.append((self.keys.lease(self.n + 1), record))
            return True
        return self._write(self.n + 1, released=True)
