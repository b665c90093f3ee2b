"""The one writer of run records, used by the Runner, the importers and analysis.

Every write is first-write-wins (``RunJournal.put_if_absent``): the value returned is
the record that is in the journal — this call's, or an earlier attempt's — read back as
the current typed record, so a resumed run continues from what was really recorded.

A writer given a ``deferred`` list writes nothing itself: it adds each record there,
for its caller to write all at once inside the same transaction (``write_deferred``) —
only where nothing of the run can be stored yet (a fresh run holding its claim).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from memory_core.errors import ReplayMismatch
from memory_core.journal.keys import ObserverKeys, RunKeys, check_run_id
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
)
from memory_core.journal.seal import seal_counterfactual
from memory_core.provenance.prompt import FrozenPrompt
from memory_core.provenance.record import Memctx
from memory_core.storage.base import RunJournal

R = TypeVar("R", bound=BaseModel)
Written = Callable[[str], None]


def _dump(record: BaseModel) -> dict[str, Any]:
    return record.model_dump(mode="json")


class JournalWriter:
    """Writes one run's records. ``on_written(name)`` is called after each record this
    writer really wrote (``input``, ``memctx``, ``prompt``, ``persist:input``,
    ``step:<n>``, ``tool:<id>``, ``persist:output``, ``output``, ``import``) — the
    Runner's crash boundaries."""

    def __init__(self, runs: RunJournal, run_id: str, *,
                 on_written: Written | None = None,
                 log: dict[str, Any] | None = None,
                 deferred: list[tuple[str, Any]] | None = None) -> None:
        self.runs = runs
        self.keys = RunKeys(check_run_id(run_id))
        self.on_written = on_written
        #: every record this writer stored or found stored, key -> JSON value as the
        #: journal holds it (the Runner seals a fresh run from it without reading back)
        self.log: dict[str, Any] = {} if log is None else log
        self.deferred = deferred

    def _put(self, kind: str, key: str, name: str, record: R) -> R:
        # a JSON-mode dump holds only what JSON text reads back as (lists, str keys…):
        # the journal now holds exactly this value, and the record is what it reads as
        value = _dump(record)
        if self.deferred is not None:
            self.deferred.append((key, value))
        elif not self.runs.put_if_absent(key, value):
            stored = self.runs.get(key)
            if stored is None:
                return record
            self.log[key] = stored
            return load_record(kind, type(record), stored, key)
        self.log[key] = value
        if self.on_written is not None:
            self.on_written(name)
        return record

    def import_record(self, record: ImportRecord) -> ImportRecord:
        return self._put("import", self.keys.import_, "import", record)

    def input(self, record: InputRecord) -> InputRecord:
        return self._put("input", self.keys.input, "input", record)

    def memctx(self, record: Memctx) -> Memctx:
        return self._put("memctx", self.keys.memctx, "memctx", record)

    def prompt(self, record: FrozenPrompt) -> FrozenPrompt:
        return self._put("prompt", self.keys.prompt, "prompt", record)

    def persist_input(self, seqs: Sequence[int]) -> PersistRecord:
        return self._put("persist", self.keys.persist_input, "persist:input",
                         PersistRecord(seqs=list(seqs)))

    def persist_output(self, seqs: Sequence[int]) -> PersistRecord:
        return self._put("persist", self.keys.persist_output, "persist:output",
                         PersistRecord(seqs=list(seqs)))

    def step(self, n: int, record: StepRecord) -> StepRecord:
        return self._put("step", self.keys.step(n), f"step:{n}", record)

    def tool(self, call_id: str, record: ToolRecord) -> ToolRecord:
        return self._put("tool", self.keys.tool(call_id), f"tool:{call_id}", record)

    def output(self, record: OutputRecord) -> OutputRecord:
        return self._put("output", self.keys.output, "output", record)

    def title(self, record: TitleRecord) -> TitleRecord:
        return self._put("title", self.keys.title, "title", record)

    def counterfactual(self, digest: str, value: dict[str, Any]) -> bool:
        """A counterfactual result (``analysis.counterfactual.CounterfactualResult``,
        dumped), sealed with the answer and tool records under it
        (``seal.seal_counterfactual``); True when this call wrote it."""
        wrote = self.runs.put_if_absent(self.keys.cf(digest), value)
        if wrote:
            seal_counterfactual(self.runs, self.keys.run_id, digest)
        return wrote

    def erase(self) -> int:
        """Every record of the run (an import compensating a failed write)."""
        return self.runs.delete(self.keys.prefix)


def write_deferred(runs: RunJournal, items: Sequence[tuple[str, Any]]) -> None:
    """Write the records deferred writers collected, in one ``put_many_if_absent``.
    Each must be new: one already stored means another process wrote the run while
    its caller held it, and ReplayMismatch rolls the caller's transaction back."""
    if items and runs.put_many_if_absent(items) != len(items):
        raise ReplayMismatch(f"some of the records {[k for k, _ in items]} were already "
                             "written by another process while this one held their run; "
                             "nothing of this group was kept")


class ObserverWriter:
    """Writes one thread's observer and reflector records (first write wins)."""

    def __init__(self, runs: RunJournal, thread_id: str) -> None:
        self.runs = runs
        self.keys = ObserverKeys(thread_id)

    def observe(self, n: int, record: ObserveRecord) -> ObserveRecord:
        key = self.keys.observe(n)
        self.runs.put_if_absent(key, _dump(record))
        stored = self.runs.get(key)
        return record if stored is None else load_record("observe", ObserveRecord, stored, key)

    def reflect(self, n: int, record: ReflectRecord) -> ReflectRecord:
        key = self.keys.reflect(n)
        self.runs.put_if_absent(key, _dump(record))
        stored = self.runs.get(key)
        return record if stored is None else load_record("reflect", ReflectRecord, stored, key)
