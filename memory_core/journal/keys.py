"""The only place journal keys are spelled.

A run's records live under ``<run_id>:<kind>[:<arg>]`` (run ids never contain ``:``);
an observer's under ``om:<thread>:proc:<observe|reflect>:<n>`` where ``<thread>`` is the
thread id with ``%`` and ``:`` percent-escaped, so one thread's prefix can never be a
prefix of another's (``proj`` vs ``proj:archive``). Thread ids without those two
characters — every thread before the escaping existed, bar ones with ``:`` — keep the
key they always had; for the others ``legacy_*`` names the key older code wrote.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory_core.errors import InvalidInputError

RUN_KINDS = ("import", "input", "memctx", "prompt", "persist:input", "step", "tool",
             "persist:output", "output", "cf", "seal", "lease", "title", "wm")


def check_run_id(run_id: object) -> str:
    """A run id as keys need it: a non-empty string without ``:``."""
    if not isinstance(run_id, str) or not run_id or ":" in run_id:
        raise InvalidInputError(
            f"run_id must be a non-empty string without ':', got {run_id!r}")
    return run_id


@dataclass(frozen=True)
class RunKeys:
    """Every journal key of one run."""

    run_id: str

    @property
    def prefix(self) -> str:
        """All of the run's records (counterfactuals included)."""
        return f"{self.run_id}:"

    @property
    def input(self) -> str:
        return f"{self.run_id}:input"

    @property
    def prompt(self) -> str:
        return f"{self.run_id}:prompt"

    @property
    def memctx(self) -> str:
        return f"{self.run_id}:memctx"

    @property
    def import_(self) -> str:
        return f"{self.run_id}:import"

    @property
    def persist_input(self) -> str:
        return f"{self.run_id}:persist:input"

    @property
    def persist_output(self) -> str:
        return f"{self.run_id}:persist:output"

    @property
    def output(self) -> str:
        return f"{self.run_id}:output"

    @property
    def title(self) -> str:
        """The thread title a run's first turn asked the title model for (SPEC §2.5)."""
        return f"{self.run_id}:title"

    @property
    def seal(self) -> str:
        return f"{self.run_id}:seal"

    @property
    def lease_prefix(self) -> str:
        return f"{self.run_id}:lease:"

    def lease(self, n: int) -> str:
        return f"{self.run_id}:lease:{n:06d}"

    @property
    def step_prefix(self) -> str:
        return f"{self.run_id}:step:"

    def step(self, n: int) -> str:
        return f"{self.run_id}:step:{n}"

    @property
    def tool_prefix(self) -> str:
        return f"{self.run_id}:tool:"

    def tool(self, call_id: str) -> str:
        return f"{self.run_id}:tool:{call_id}"

    @property
    def cf_prefix(self) -> str:
        return f"{self.run_id}:cf:"

    def cf(self, digest: str) -> str:
        return f"{self.run_id}:cf:{digest}"

    def cf_seal(self, digest: str) -> str:
        """The seal of counterfactual ``digest``: its result and every record under it."""
        return f"{self.cf(digest)}:seal"

    @property
    def wm_prefix(self) -> str:
        return f"{self.run_id}:wm:"

    def wm(self, call_id: str) -> str:
        """The mark that call ``call_id``'s working-memory patch is applied, written in
        the transaction of the merge (``working_memory.WorkingMemory``)."""
        return f"{self.run_id}:wm:{call_id}"

    @property
    def unsealed_prefixes(self) -> tuple[str, str, str]:
        """Records a seal leaves out: counterfactuals (analysis added after the run),
        claims and working-memory marks (bookkeeping of how the run was carried out;
        a mark's result is sealed in the call's tool record)."""
        return self.cf_prefix, self.lease_prefix, self.wm_prefix

    def kind_of(self, key: str) -> tuple[str, str | None] | None:
        """``(kind, arg)`` for one of this run's keys (``("step", "0")``,
        ``("tool", "call_1")``, ``("output", None)``); None for a foreign key."""
        if not key.startswith(self.prefix):
            return None
        rest = key[len(self.prefix):]
        for kind in ("step", "tool", "cf", "lease", "wm"):
            if rest.startswith(kind + ":"):
                return kind, rest[len(kind) + 1:]
        return (rest, None) if rest in RUN_KINDS else None


def cf_tool_key(cf_key: str, attempt: str, step: int, call_digest: str) -> str:
    """Where a tool that counterfactual ``cf_key`` ran is journaled: under the
    counterfactual's own key, by attempt, step and the call, so a retry finds it."""
    return f"{cf_key}:tool:{attempt}:{step}:{call_digest}"


def cf_answer_key(cf_key: str, attempt: str, step: int) -> str:
    """Where the model's answer at one step of a counterfactual's (or a what-if's)
    re-ask is journaled, so an interrupted one resumes without asking again."""
    return f"{cf_key}:answer:{attempt}:{step}"


def step_index(keys: RunKeys, key: str) -> int | None:
    """n of ``<run>:step:<n>``; None for any other key."""
    kind = keys.kind_of(key)
    if kind is None or kind[0] != "step" or kind[1] is None or not kind[1].isdigit():
        return None
    return int(kind[1])


def _escape(thread_id: str) -> str:
    return thread_id.replace("%", "%25").replace(":", "%3A")


_OBSERVER_TAIL = re.compile(r"(observe|reflect):\d+")


@dataclass(frozen=True)
class ObserverKeys:
    """The journal keys of one thread's observational memory (observer/reflector)."""

    thread_id: str

    @property
    def prefix(self) -> str:
        return f"om:{_escape(self.thread_id)}:proc:"

    def observe(self, n: int) -> str:
        return f"{self.prefix}observe:{n}"

    def reflect(self, n: int) -> str:
        return f"{self.prefix}reflect:{n}"

    def vector(self, level: int, n: int) -> str:
        """The id of observation ``n`` of ``level``'s vector in the observation vector
        store (SPEC §8.9 ``om:<tid>:<level>:<seq>``; not a journal key)."""
        return f"om:{_escape(self.thread_id)}:{level}:{n}"

    @property
    def legacy_prefix(self) -> str:
        """Where code before the escaping wrote this thread's records."""
        return f"om:{self.thread_id}:proc:"

    @property
    def has_legacy(self) -> bool:
        return self.legacy_prefix != self.prefix

    def owns_legacy(self, key: str) -> bool:
        """Whether a key under ``legacy_prefix`` is this thread's own (and not the
        record of a thread whose id extends this one's)."""
        return (key.startswith(self.legacy_prefix)
                and _OBSERVER_TAIL.fullmatch(key[len(self.legacy_prefix):]) is not None)


def is_claim(key: str) -> bool:
    """Whether a journal key is a run's claim (``<run>:lease:<n>``): bookkeeping of who
    ran it, not a record of what it did (seals, replays and snapshots skip it)."""
    head, sep, rest = key.partition(":lease:")
    return bool(sep) and ":" not in head and rest.isdigit()


@dataclass(frozen=True)
class SuiteKeys:
    """The journal keys of one regression suite: ``suite:<name>:pin:<n>``, one record
    per pin or unpin, in order (the name escaped as a thread id is)."""

    name: str

    @property
    def prefix(self) -> str:
        return f"{SUITES_PREFIX}{_escape(self.name)}:pin:"

    def pin(self, n: int) -> str:
        return f"{self.prefix}{n}"


#: every suite's records
SUITES_PREFIX = "suite:"


def check_suite_name(name: object) -> str:
    """A suite name: non-empty text of at most 100 characters, no control characters."""
    if not isinstance(name, str) or not name.strip() or len(name) > 100 or any(
            ord(c) < 32 or ord(c) == 127 for c in name):
        raise InvalidInputError(
            f"a suite name must be 1 to 100 printable characters, got {name!r}")
    return name


def suite_of(key: str) -> str | None:
    """The suite name of a ``suite:<name>:pin:<n>`` key (unescaped); None otherwise."""
    m = re.fullmatch(r"suite:(.*):pin:\d+", key)
    return None if m is None else m.group(1).replace("%3A", ":").replace("%25", "%")
