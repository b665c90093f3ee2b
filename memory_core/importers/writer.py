"""Turning planned threads and runs into store writes: messages (embedded in batches),
run records and journal entries reconstructed honestly, with compensation on failure.

Everything is computed before the first write; a write that fails midway erases
what this import wrote, so nothing from the file remains."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from memory_core.embedders import Embedder, embedder_name
from memory_core.errors import InvalidInputError
from memory_core.importers.common import Exchange, ImportReport, Progress, undated
from memory_core.importers.threads import RunPlan, ThreadPlan
from memory_core.journal import (
    ImportRecord,
    InputRecord,
    JournalWriter,
    OutputRecord,
    StepRecord,
)
from memory_core.journal.seal import seal_run
from memory_core.memory import thread_title, token_text
from memory_core.models.base import ModelIdentity, ModelResponse
from memory_core.prompt import FrozenPrompt, PromptItem
from memory_core.provenance import (
    PROVENANCE_RECENT_CAP,
    CompositionSettings,
    LaneTokens,
    Memctx,
    MessageRef,
    preview,
)
from memory_core.storage.base import Storage
from memory_core.tokens import estimate_tokens
from memory_core.types import AppendRow, Message, RunRecord

EMBED_BATCH = 64
# What a recorded request cannot tell: the recording system's memory decisions.
UNKNOWN_FIELDS = ["recalled", "near_misses", "dropped", "settings", "settings.recall_enabled",
                  "settings.recall", "query", "recall_skipped",
                  "working_memory", "observations", "scope_snapshot"]


def _tokens(msgs: Sequence[Message]) -> int:
    # counted as AgentMemory counts a composed prompt, so imported and live runs compare
    return sum(estimate_tokens(token_text(m)) for m in msgs)


def _plain(m: Message) -> Message:
    return Message(role=m.role, content=m.content, metadata=m.metadata)


@dataclass(frozen=True)
class ImportedRun:
    """One recorded request as a run: its runs-table row and its journal records, in
    the order the runner writes them."""

    run: RunRecord
    import_record: ImportRecord
    input: InputRecord
    prompt: FrozenPrompt
    memctx: Memctx
    persist_input: list[int]
    step: StepRecord | None = None
    persist_output: list[int] | None = None
    output: OutputRecord | None = None

    def write(self, storage: Storage) -> None:
        storage.runs.start_run(self.run)
        w = JournalWriter(storage.runs, self.run.run_id)
        w.import_record(self.import_record)
        w.input(self.input)
        w.prompt(self.prompt)
        w.memctx(self.memctx)
        w.persist_input(self.persist_input)
        if self.step is not None:
            w.step(0, self.step)
        if self.persist_output is not None:
            w.persist_output(self.persist_output)
        if self.output is not None:
            w.output(self.output)
        seal_run(storage, self.run.run_id)


def run_records(run_id: str, plan: RunPlan, *, embedder: str | None,
                import_info: dict[str, Any]) -> ImportedRun:
    """The run and its journal records, reconstructed from what the recording holds."""
    ex: Exchange = plan.exchange
    tid = plan.thread.thread_id
    resource = plan.thread.resource_id
    recent_idx = range(plan.input_from)
    input_msgs = [_plain(m) for m in ex.history[plan.input_from:]]
    items: list[PromptItem] = [PromptItem(lane="instructions", message=_plain(m))
                               for m in ex.instructions]
    refs: list[MessageRef] = []
    for i in recent_idx:
        m, seq = ex.history[i], plan.history_seqs[i]
        items.append(PromptItem(lane="recent", message=_plain(m), thread_id=tid, seq=seq))
        refs.append(MessageRef(thread_id=tid, seq=seq, role=m.role, preview=preview(m)))
    items += [PromptItem(lane="input", message=m) for m in input_msgs]
    recent_msgs = [ex.history[i] for i in recent_idx]
    memctx = Memctx(
        thread_id=tid, resource_id=resource,
        recent_count=len(refs), recent=refs[-PROVENANCE_RECENT_CAP:],
        tokens=LaneTokens(instructions=_tokens(ex.instructions), recent=_tokens(recent_msgs),
                          input=_tokens(input_msgs)),
        settings=CompositionSettings(recent_n=len(refs), recall_enabled=False,
                                     embedder=embedder),
        incoming_count=len(input_msgs),
        source="imported", unknown_fields=list(UNKNOWN_FIELDS))
    started = ex.started_at or undated(ex.index)
    run = RunRecord(run_id=run_id, agent=ex.model or "imported", thread_id=tid,
                    resource_id=resource, status="failed" if ex.error else "completed",
                    started_at=started, finished_at=ex.finished_at or started, error=ex.error)
    known = {k: v for k, v in import_info.items() if k in ("format", "file", "sha1")}
    rec = ImportedRun(
        run=run,
        import_record=ImportRecord(**known, where=ex.where, notes=list(ex.notes),
                                   extra={k: v for k, v in import_info.items()
                                          if k not in known}),
        input=InputRecord(messages=input_msgs, incoming=input_msgs, sealed=True),
        prompt=FrozenPrompt(items=items), memctx=memctx,
        persist_input=plan.history_seqs[plan.input_from:])
    if ex.response is None:
        return rec
    resp = ex.response
    step = StepRecord(
        response=ModelResponse(text=resp.text(), tool_calls=resp.tool_calls(), usage=ex.usage,
                               model=ex.model, finish_reason=ex.finish_reason),
        model=ModelIdentity(kind="imported", name=ex.model or "unknown",
                            temperature=ex.temperature, seed=ex.seed),
        usage_known=ex.usage_known)
    output = OutputRecord(text=resp.text() or "", steps=1, tool_calls=len(resp.tool_calls()),
                          stop_reason="tool_call" if resp.tool_calls() else "final")
    seqs = [plan.response_seq] if plan.response_seq is not None else []
    return replace(rec, step=step, persist_output=seqs, output=output)


def embed_threads(threads: Sequence[ThreadPlan], embed: Embedder | None,
                  progress: Progress | None) -> dict[tuple[str, int], np.ndarray]:
    """Vectors of every message with text, computed in batches before any write."""
    if embed is None:
        return {}
    todo = [(t.thread_id, seq, m.text()) for t in threads for seq, m in enumerate(t.messages)]
    items = [(tid, seq, text) for tid, seq, text in todo if text is not None]
    out: dict[tuple[str, int], np.ndarray] = {}
    total = len(items)
    if progress is not None:
        progress(0, total)
    for lo in range(0, total, EMBED_BATCH):
        chunk = items[lo:lo + EMBED_BATCH]
        mat = np.asarray(embed([text for _, _, text in chunk]), dtype=np.float32)
        if mat.ndim != 2 or mat.shape[0] != len(chunk):
            raise InvalidInputError(f"embedder {embedder_name(embed)!r} returned shape "
                                    f"{mat.shape} for {len(chunk)} texts")
        for (tid, seq, _), vec in zip(chunk, mat, strict=True):
            out[(tid, seq)] = vec
        if progress is not None:
            progress(min(lo + EMBED_BATCH, total), total)
    return out


def write_all(storage: Storage, threads: Sequence[ThreadPlan],
              runs: Sequence[ImportedRun],
              vectors: dict[tuple[str, int], np.ndarray], run_ids: Sequence[str],
              import_meta: dict[str, Any], report: ImportReport) -> None:
    created_threads: list[str] = []
    started_runs: list[str] = []
    try:
        for t in threads:
            storage.memory.create_thread(
                t.thread_id, resource_id=t.resource_id, title=thread_title(t.messages),
                metadata={"import": {**import_meta, "key": t.key}})
            created_threads.append(t.thread_id)
            rows = [AppendRow(message=_plain(m), seq=seq, created_at=t.created_at[seq],
                              run_id=None if t.first_run[seq] is None
                              else run_ids[t.first_run[seq]],  # type: ignore[index]
                              embedding=vectors.get((t.thread_id, seq)))
                    for seq, m in enumerate(t.messages)]
            if rows:
                storage.memory.append_messages(t.thread_id, rows)
            report.messages_stored += len(rows)
            report.embeddings_stored += sum(1 for r in rows if r.embedding is not None)
        for imported in runs:
            started_runs.append(imported.run.run_id)  # ids are ours: safe to erase
            imported.write(storage)
    except BaseException:
        _compensate(storage, created_threads, started_runs)
        raise
    report.threads_created = created_threads
    report.runs_created = started_runs


def _compensate(storage: Storage, threads: Sequence[str], runs: Sequence[str]) -> None:
    """Best effort: every step is attempted even if an earlier one fails, since the
    store that just failed may fail again."""
    for rid in runs:
        try:
            JournalWriter(storage.runs, rid).erase()
        except Exception:  # noqa: BLE001 - keep erasing the rest
            pass
        try:
            storage.runs.delete_runs([rid])
        except Exception:  # noqa: BLE001
            pass
    for tid in threads:
        try:
            storage.erase_thread(tid)
        except Exception:  # noqa: BLE001
            pass
