"""The one reader of run records: ``RunReader`` for a record at a time (resume, replay)
and ``load_run`` for everything recorded about a run (analysis, views, timeline, CLI).
Every record comes back typed and upgraded to the current version."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel

from memory_core.errors import InvalidInputError, NotFoundError
from memory_core.journal.keys import ObserverKeys, RunKeys, step_index
from memory_core.journal.records import (
    ImportRecord,
    InputRecord,
    ObserveRecord,
    OutputRecord,
    PersistRecord,
    ReflectRecord,
    StepRecord,
    TitleRecord,
    ToolRecord,
    load_record,
    upgraded_dict,
)
from memory_core.models.base import ModelIdentity, ModelResponse, ToolSpec
from memory_core.provenance.prompt import FrozenPrompt
from memory_core.provenance.record import Memctx
from memory_core.storage.base import RunJournal, Storage
from memory_core.types import RunRecord, ToolCallPart

R = TypeVar("R", bound=BaseModel)

# the kind of record each run key holds, for reading a raw entry by its key
_KIND_OF = {"import": "import", "input": "input", "memctx": "memctx", "prompt": "prompt",
            "persist:input": "persist", "persist:output": "persist", "step": "step",
            "tool": "tool", "output": "output"}


class _ReadAhead:
    """Journal entries read ahead, answering RunReader's ``get`` and ``has`` from
    memory; ``_check`` refuses a key that was not read (a bug in the caller)."""

    by_key: dict[str, Any]

    def get(self, key: str) -> Any | None:
        self._check(key)
        return self.by_key.get(key)

    def has(self, key: str) -> bool:
        self._check(key)
        return key in self.by_key

    def list(self, prefix: str) -> list[tuple[str, Any]]:
        raise NotImplementedError

    def _check(self, key: str) -> None:
        raise NotImplementedError


class _JournalSnapshot(_ReadAhead):
    """A run's journal entries read with one query, answering the reads RunReader makes
    (``get``, ``has``, ``list``) from memory: ``load_run`` would otherwise ask the store
    once per record, which dominates the workbench's pages on a file database."""

    def __init__(self, runs: RunJournal | None, prefix: str,
                 entries: list[tuple[str, Any]] | None = None) -> None:
        self.prefix = prefix
        self.entries = entries if entries is not None else (
            runs.list(prefix) if runs is not None else [])
        self.by_key = dict(self.entries)

    def list(self, prefix: str) -> list[tuple[str, Any]]:
        self._check(prefix)
        return [(k, v) for k, v in self.entries if k.startswith(prefix)]

    def _check(self, key: str) -> None:
        if not key.startswith(self.prefix):  # a bug: the snapshot holds one run only
            raise ValueError(f"key {key!r} is outside the snapshot of {self.prefix!r}")


# the single-key records ``prefetched_readers`` can read ahead (RunKeys property names)
PREFETCHABLE = ("import_", "input", "memctx", "prompt", "persist_input", "persist_output",
                "output", "title")


class _Prefetched(_ReadAhead):
    """Chosen single-key records of many runs read with one query (``get_many``): a
    page listing hundreds of runs would otherwise ask the store once per record."""

    def __init__(self, runs: RunJournal, keys: list[str]) -> None:
        self.keys = frozenset(keys)
        self.by_key = runs.get_many(keys)

    def list(self, prefix: str) -> list[tuple[str, Any]]:
        raise ValueError(f"prefix {prefix!r} was not read ahead (only single records are)")

    def _check(self, key: str) -> None:
        if key not in self.keys:  # a bug: the caller asked for a record it did not name
            raise ValueError(f"record {key!r} was not read ahead")


def prefetched_readers(runs: RunJournal, run_ids: Sequence[str],
                       records: Sequence[str]) -> dict[str, RunReader]:
    """A RunReader per run whose ``records`` (names from PREFETCHABLE, e.g. "prompt",
    "memctx") were all read in one query; reading any other record through them is a
    ValueError."""
    unknown = [r for r in records if r not in PREFETCHABLE]
    if unknown:
        raise InvalidInputError(f"records {unknown} cannot be read ahead; choose from "
                                f"{list(PREFETCHABLE)}")
    keys = [str(getattr(RunKeys(rid), r)) for rid in run_ids for r in records]
    snapshot = _Prefetched(runs, keys)
    return {rid: RunReader(snapshot, rid) for rid in run_ids}


class RunReader:
    """Reads one run's records, one at a time; None where a record is absent."""

    def __init__(self, runs: RunJournal | _ReadAhead,
                 run_id: str) -> None:
        self.runs = runs
        self.keys = RunKeys(run_id)

    @classmethod
    def snapshot(cls, runs: RunJournal, run_id: str) -> RunReader:
        """A reader of the run's records as they are now, read with one query and
        answered from memory after (the Runner reads a run it holds the claim on so:
        nobody else writes it meanwhile, and it never re-reads what it writes)."""
        return cls(_JournalSnapshot(runs, RunKeys(run_id).prefix), run_id)

    @classmethod
    def of_entries(cls, run_id: str, entries: list[tuple[str, Any]]) -> RunReader:
        """A reader answering from ``entries``: every record of the run, as read once
        (``Lease.look``)."""
        prefix = RunKeys(run_id).prefix
        return cls(_JournalSnapshot(None, prefix, [(k, v) for k, v in entries
                                                   if k.startswith(prefix)]), run_id)

    def _get(self, kind: str, model: type[R], key: str) -> R | None:
        raw = self.runs.get(key)
        return None if raw is None else load_record(kind, model, raw, key)

    def has_prompt(self) -> bool:
        return self.runs.has(self.keys.prompt)

    def has_input(self) -> bool:
        return self.runs.has(self.keys.input)

    def import_record(self) -> ImportRecord | None:
        return self._get("import", ImportRecord, self.keys.import_)

    def input(self) -> InputRecord | None:
        return self._get("input", InputRecord, self.keys.input)

    def prompt(self) -> FrozenPrompt | None:
        return self._get("prompt", FrozenPrompt, self.keys.prompt)

    def memctx(self) -> Memctx | None:
        return self._get("memctx", Memctx, self.keys.memctx)

    def persist_input(self) -> PersistRecord | None:
        return self._get("persist", PersistRecord, self.keys.persist_input)

    def persist_output(self) -> PersistRecord | None:
        return self._get("persist", PersistRecord, self.keys.persist_output)

    def step(self, n: int) -> StepRecord | None:
        return self._get("step", StepRecord, self.keys.step(n))

    def tool(self, call_id: str) -> ToolRecord | None:
        return self._get("tool", ToolRecord, self.keys.tool(call_id))

    def output(self) -> OutputRecord | None:
        return self._get("output", OutputRecord, self.keys.output)

    def title(self) -> TitleRecord | None:
        return self._get("title", TitleRecord, self.keys.title)

    def steps(self) -> list[RunStep]:
        out = []
        for key, raw in self.runs.list(self.keys.step_prefix):
            n = step_index(self.keys, key)
            if n is not None:
                out.append(RunStep(n, load_record("step", StepRecord, raw, key)))
        return sorted(out, key=lambda s: s.index)

    def tools(self) -> dict[str, ToolRecord]:
        prefix = self.keys.tool_prefix
        return {key[len(prefix):]: load_record("tool", ToolRecord, raw, key)
                for key, raw in self.runs.list(prefix)}

    def counterfactual(self, digest: str) -> Any | None:
        return self.runs.get(self.keys.cf(digest))

    def counterfactuals(self) -> list[Any]:
        """Raw counterfactual results (analysis validates them), in key order; the tool
        records journaled below a result are not results themselves."""
        prefix = self.keys.cf_prefix
        return [v for k, v in self.runs.list(prefix) if ":" not in k[len(prefix):]]

    def entries(self, *, counterfactuals: bool = False) -> list[tuple[str, Any]]:
        """The run's raw entries (for copying a journal), counterfactuals only on request."""
        return [(k, v) for k, v in self.runs.list(self.keys.prefix)
                if not k.startswith(self.keys.lease_prefix)
                and (counterfactuals or not k.startswith(self.keys.cf_prefix))]

    def upgraded_keys(self) -> list[str]:
        """Keys whose stored record is an older format that reading upgrades."""
        out = []
        for key, raw in self.entries():
            kind = self.keys.kind_of(key)
            rec_kind = _KIND_OF.get(kind[0]) if kind else None
            if rec_kind is not None and upgraded_dict(rec_kind, raw, key)[1]:
                out.append(key)
        return out


class ObserverReader:
    """Reads one thread's observer/reflector records (also where older code wrote
    them, for threads whose id holds ``:``)."""

    def __init__(self, runs: RunJournal, thread_id: str) -> None:
        self.runs = runs
        self.keys = ObserverKeys(thread_id)

    def _get(self, kind: str, model: type[R], key: str, legacy: str) -> R | None:
        raw = self.runs.get(key)
        if raw is None and self.keys.has_legacy:
            key = legacy
            raw = self.runs.get(key)
        return None if raw is None else load_record(kind, model, raw, key)

    def observe(self, n: int) -> ObserveRecord | None:
        return self._get("observe", ObserveRecord, self.keys.observe(n),
                         f"{self.keys.legacy_prefix}observe:{n}")

    def reflect(self, n: int) -> ReflectRecord | None:
        return self._get("reflect", ReflectRecord, self.keys.reflect(n),
                         f"{self.keys.legacy_prefix}reflect:{n}")

    def entries(self) -> list[tuple[str, Any]]:
        """Every raw record of the thread's observer journal (legacy keys included)."""
        out = list(self.runs.list(self.keys.prefix))
        if self.keys.has_legacy:
            out += [(k, v) for k, v in self.runs.list(self.keys.legacy_prefix)
                    if self.keys.owns_legacy(k)]
        return out

    def erase(self) -> int:
        n = self.runs.delete(self.keys.prefix)
        if self.keys.has_legacy:
            for key, _ in self.runs.list(self.keys.legacy_prefix):
                if self.keys.owns_legacy(key):
                    n += self.runs.delete_keys([key])
        return n


@dataclass(frozen=True)
class RunStep:
    """Step ``index`` of a run and its record."""

    index: int
    record: StepRecord

    @property
    def response(self) -> ModelResponse:
        return self.record.response

    @property
    def model(self) -> ModelIdentity:
        return self.record.model

    @property
    def tool_specs(self) -> list[ToolSpec]:
        return [t.spec() for t in self.record.tools]

    @property
    def tools(self) -> list[dict[str, Any]]:
        return [t.model_dump() for t in self.record.tools]


@dataclass(frozen=True)
class RunData:
    """Everything recorded about one run, typed and upgraded."""

    run: RunRecord
    prompt: FrozenPrompt
    memctx: Memctx | None
    steps: list[RunStep] = field(default_factory=list)
    tools: dict[str, ToolRecord] = field(default_factory=dict)
    output: OutputRecord | None = None
    input: InputRecord | None = None
    persist_input: PersistRecord | None = None
    persist_output: PersistRecord | None = None
    import_record: ImportRecord | None = None

    @property
    def run_id(self) -> str:
        return self.run.run_id

    @property
    def answer(self) -> str | None:
        if self.output is not None:
            return self.output.text
        for s in reversed(self.steps):
            if s.response.text:
                return s.response.text
        return None

    @property
    def model(self) -> ModelIdentity | None:
        return self.steps[0].model if self.steps else None

    @property
    def model_info(self) -> dict[str, Any]:
        return self.steps[0].model.model_dump() if self.steps else {}

    def prompt_lanes(self) -> dict[tuple[str, int], str]:
        """Where each stored message stood in the run's prompt (see ``prompt_refs``)."""
        lanes: dict[tuple[str, int], str] = {}
        for it, ref in zip(self.prompt.items, self.prompt_refs(), strict=True):
            if ref is not None:
                lanes.setdefault(ref, it.lane)
        return lanes

    def prompt_refs(self) -> list[tuple[str, int] | None]:
        """The stored message each item of the run's prompt is, in prompt order (None:
        instructions, working memory, observations, an input not stored). The input is
        frozen before it is stored, so its items carry no seq: they are the seqs the run
        stored its input under (``persist:input``), in order."""
        refs: list[tuple[str, int] | None] = []
        stored = list(self.persist_input.seqs) if self.persist_input else []
        thread = self.run.thread_id or (self.memctx.thread_id if self.memctx else None)
        for it in self.prompt.items:
            if it.thread_id is not None and it.seq is not None:
                refs.append((it.thread_id, it.seq))
            elif it.lane == "input" and stored and thread is not None:
                refs.append((thread, stored.pop(0)))
            else:
                refs.append(None)
        return refs

    def server_held(self) -> tuple[dict[str, Any], set[tuple[str, int]]] | None:
        """For an imported Responses API request that sent ``previous_response_id``
        instead of its history, when the import reconstructed that history from an
        earlier record: the import record's ``server_held_history`` and the stored
        messages of the prompt it covers (given to the model, not sent by the client).
        None otherwise."""
        held = self.import_record.held_history() if self.import_record is not None else None
        if held is None or not held.get("reconstructed_from"):
            return None
        lo, hi = held.get("prompt_messages") or (0, 0)
        refs = {(it.thread_id, it.seq) for it in self.prompt.items[lo:hi]
                if it.thread_id is not None and it.seq is not None}
        return held, refs

    @property
    def pending_calls(self) -> list[ToolCallPart]:
        """Tool calls of the last step with no tool record: where the recording ends
        on a call (an imported run records the model's request, never the result)."""
        if not self.steps:
            return []
        return [c for c in self.steps[-1].response.tool_calls if c.id not in self.tools]


def load_run(storage: Storage, run_id: str, *, record: RunRecord | None = None) -> RunData:
    """Everything recorded for ``run_id``; NotFoundError names an unknown run. The
    run's records are read with one journal query; ``record`` is its runs row when the
    caller has just listed it (one query less per run of a thread)."""
    if not isinstance(run_id, str) or not run_id:
        raise NotFoundError(f"run id must be a non-empty string, got {run_id!r}")
    if record is not None and record.run_id != run_id:
        raise InvalidInputError(f"record of run '{record.run_id}' given for run '{run_id}'")
    run = record or storage.runs.get_run(run_id)
    reader = (RunReader(_JournalSnapshot(storage.runs, RunKeys(run_id).prefix), run_id)
              if run is not None else None)
    prompt = reader.prompt() if reader is not None else None
    if run is None or reader is None or prompt is None:
        raise NotFoundError(
            f"run '{run_id}' does not exist (no run record or no frozen prompt in the journal)")
    return RunData(run=run, prompt=prompt, memctx=reader.memctx(), steps=reader.steps(),
                   tools=reader.tools(), output=reader.output(), input=reader.input(),
                   persist_input=reader.persist_input(),
                   persist_output=reader.persist_output(),
                   import_record=reader.import_record())
