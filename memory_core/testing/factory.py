"""What the conformance suite needs to know about an adapter: how to build one, and
which optional behaviours it promises (its capabilities). Nothing here imports pytest."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory_core.storage.base import Storage

#: A storage made again on the same directory (``reopen``, else ``make``) after the
#: first one closed opens the same database: everything written is still there.
PERSISTS = "persists"
#: ``write_batch()`` is one transaction: a block that raises leaves none of its
#: writes, and nested blocks join the outermost.
ATOMIC_BATCHES = "atomic_batches"
#: A second storage opened (with ``reopen``) while the first is still open has its own
#: connection: it sees a batch of the first only once the batch ends. Needs
#: ``persists`` and ``atomic_batches``.
SEPARATE_CONNECTIONS = "separate_connections"

CAPABILITIES = frozenset({PERSISTS, ATOMIC_BATCHES, SEPARATE_CONNECTIONS})

#: ``make(tmp_path, **kwargs)`` / ``reopen(tmp_path, **kwargs)``: the suite passes a
#: fresh empty directory per test and, as the only keyword, ``clock=`` (a callable
#: returning the current time) for the tests that control time.
MakeStorage = Callable[..., Storage]


@dataclass(frozen=True)
class AdapterFactory:
    """An adapter as the conformance suite sees it.

    ``make(tmp_path, **kwargs)`` returns a new, empty ``Storage`` whose database (if
    it has one) lives under ``tmp_path``, a directory private to the test. It must
    accept ``clock=`` (a zero-argument callable returning timezone-aware datetimes)
    and take every time it stamps from it. ``close()`` may be called twice.

    ``capabilities`` names the optional behaviours the adapter promises (``PERSISTS``,
    ``ATOMIC_BATCHES``, ``SEPARATE_CONNECTIONS``); the tests of a behaviour not
    promised are skipped or check the weaker promise (each write committed on its
    own). ``reopen(tmp_path, **kwargs)`` opens the database ``make`` made in
    ``tmp_path`` again; it defaults to ``make`` and is only used with ``PERSISTS``."""

    name: str
    make: MakeStorage
    capabilities: AbstractSet[str] = field(default_factory=frozenset)
    reopen: MakeStorage | None = None

    def __post_init__(self) -> None:
        caps = frozenset(self.capabilities)
        object.__setattr__(self, "capabilities", caps)
        unknown = sorted(caps - CAPABILITIES)
        if unknown:
            raise ValueError(f"adapter {self.name!r}: unknown capabilities {unknown}; "
                             f"known: {sorted(CAPABILITIES)}")
        if SEPARATE_CONNECTIONS in caps and not {PERSISTS, ATOMIC_BATCHES} <= caps:
            raise ValueError(f"adapter {self.name!r}: {SEPARATE_CONNECTIONS!r} needs "
                             f"{PERSISTS!r} and {ATOMIC_BATCHES!r}")
        if self.reopen is not None and PERSISTS not in caps:
            raise ValueError(f"adapter {self.name!r}: reopen given without {PERSISTS!r}")

    def has(self, capability: str) -> bool:
        if capability not in CAPABILITIES:
            raise ValueError(f"unknown capability {capability!r}")
        return capability in self.capabilities

    def open(self, tmp_path: Path, **kwargs: Any) -> Storage:
        return self.make(tmp_path, **kwargs)

    def open_again(self, tmp_path: Path, **kwargs: Any) -> Storage | None:
        """A second handle on the database made in ``tmp_path``, or None when the
        adapter keeps nothing after close (no ``PERSISTS``)."""
        if PERSISTS not in self.capabilities:
            return None
        return (self.reopen or self.make)(tmp_path, **kwargs)


def as_factories(factories: Iterable[AdapterFactory]) -> list[AdapterFactory]:
    out = list(factories)
    if not out:
        raise ValueError("conformance_tests needs at least one AdapterFactory")
    for f in out:
        if not isinstance(f, AdapterFactory):
            raise TypeError(f"expected an AdapterFactory, got {f!r}")
    names = [f.name for f in out]
    if len(set(names)) != len(names):
        raise ValueError(f"adapter names repeat: {names}")
    return out
