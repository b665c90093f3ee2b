"""A tamper-evident seal over everything a finished run recorded.

When a run finishes (or an import writes one), ``seal_run`` writes ``<run>:seal``: the
sha256 of every journal record of the run (model identity, usage, offered tools, the
memctx, the input, tool arguments and results, the output…), of every message the run
stored (by thread and seq) and of its runs-table row, chained in a fixed order into
one digest. ``verify_run`` recomputes them and names the first that no longer matches.

It detects any edit that does not also rewrite the seal; keep ``memwb verify --all``'s
chain digests elsewhere to detect that too. Records written before sealing existed are
reported as unsealed, not as tampered; a finished run whose input record says it was
sealed, or that ran under a claim (``:lease:``, taken only by code that seals), but
whose seal is gone is tampered, while a run that never finished (a crash, or a run in
progress) is ``interrupted``, never tampered. An erasure that redacts a run's records
re-seals it and lists the redaction in the seal, so verification says "redacted", not
"tampered".

Besides the chain, a sealed run's store must agree with it: its row's status, finish
time and error with how the run ended; the messages the store says it wrote
(``messages.run_id``) with those it sealed; each sealed message's search text with its
content. What no check covers is said once by ``memwb verify``: ``NOT_COVERED``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from json.encoder import encode_basestring as _STRING  # (C; what canonical JSON uses)
from typing import Any, Literal

import numpy as np
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
)

from memory_core.embedding.hashing import HashingEmbedder
from memory_core.errors import MemoryCoreError, ReplayMismatch
from memory_core.journal.keys import RunKeys
from memory_core.journal.records import validated
from memory_core.storage.base import RunJournal, Storage
from memory_core.storage.common import EncodedJson, encoded_json
from memory_core.types import Message, RunRecord, canonical_json

SEAL_VERSION = 1


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Redaction(BaseModel):
    """An erasure that rewrote this run's records: which erased messages, and when."""

    model_config = ConfigDict(extra="forbid")
    erased: list[tuple[str, int]] = Field(default_factory=list)  # (thread_id, seq)
    threads: list[str] = Field(default_factory=list)
    keys: list[str] = Field(default_factory=list)  # records rewritten


class SealRecord(BaseModel):
    """``<run>:seal``."""

    model_config = ConfigDict(extra="forbid")
    v: int = SEAL_VERSION
    entries: list[tuple[str, str]]  # (journal key, sha256 of its canonical JSON)
    messages: list[tuple[str, int, str]]  # (thread_id, seq, sha256 of the message)
    run: str  # sha256 of the runs-table row
    chain: str  # sha256 chained over all of the above, in this order
    redactions: list[Redaction] = Field(default_factory=list)
    # (thread_id, seq) of messages the run stored that a truncation removed since
    # (SPEC §2.7): no longer part of the seal; the records that hold them are kept
    truncated: list[tuple[str, int]] = Field(default_factory=list)
    # a run written whole as failed (an imported call that failed): sha256 of its
    # recorded error, part of the chain, so its "failed" status is sealed too
    failed: str | None = None

    @model_serializer(mode="wrap")
    def _without_empty_truncated(self, handler: SerializerFunctionWrapHandler) -> Any:
        # seals of runs nothing truncated, and of runs not sealed as failed, are stored
        # as they were before those fields
        out = handler(self)
        if isinstance(out, dict):
            if not out.get("truncated"):
                out.pop("truncated", None)
            if out.get("failed") is None:
                out.pop("failed", None)
        return out


#: what ``verify`` does not check, said once by ``memwb verify``
NOT_COVERED = (
    "not covered by the seal: message vectors other than the offline hashing embedder's "
    "of a run's own messages (a swapped vector changes what later runs recall, not what a "
    "run recorded), a run's finish time (only that a finished run has "
    "one), a counterfactual or what-if record without its own seal (written before "
    "those were sealed, or forged whole), working memory, observations and the "
    "observer's journal, and a seal rewritten whole or deleted together with every mark "
    "that the run was sealed (its input's 'sealed' flag and its ':lease:' claims); keep "
    "the chain digests printed here elsewhere to detect those")


class VerifyReport(BaseModel):
    """What ``verify_run`` found: ``ok``, ``unsealed`` (older than sealing, or failed
    before it finished), ``interrupted`` (never finished: a crash or a run in progress),
    ``redacted`` (ok, but an erasure rewrote records) or ``tampered``."""

    model_config = ConfigDict(extra="forbid")
    run_id: str
    status: Literal["ok", "redacted", "unsealed", "interrupted", "tampered"]
    first_mismatch: str | None = None  # the first record that no longer matches
    detail: str = ""
    chain: str | None = None
    truncated: list[tuple[str, int]] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status in ("ok", "redacted", "unsealed", "interrupted")


def _run_row(run: RunRecord | None) -> str:
    """The row's fields fixed once the run started (the seal is written before the run
    is marked completed, so status and finish time are checked separately)."""
    if run is None:
        return _sha("null")
    return _sha(encoded_json("a run's row", run.model_dump(  # (canonical JSON)
        mode="json", include={"run_id", "agent", "thread_id", "resource_id", "started_at"})).text)


def _chain(parts: Iterable[str]) -> str:
    sha, h = hashlib.sha256, _CHAIN_START  # (_sha's steps inline: an import chains
    for p in parts:                          # ~12 parts a run it writes)
        h = sha((h + p).encode("utf-8")).hexdigest()
    return h


_CHAIN_START = _sha("memwb-seal-v1")


def _chain_of(entries: list[tuple[str, str]], messages: list[tuple[str, int, str]],
              row: str, failed: str | None) -> str:
    return _chain([f"{k}={d}" for k, d in entries]
                  + [f"{t}#{s}={d}" for t, s, d in messages] + [f"run={row}"]
                  + ([f"failed={failed}"] if failed is not None else []))


def _failure(run: RunRecord | None) -> str | None:
    """What the seal of a run that ended failed holds: its error's digest."""
    if run is None or run.status != "failed":
        return None
    return _sha(run.error or "")


def _sealed_entries(storage: Storage, keys: RunKeys) -> list[tuple[str, str]]:
    out = []
    for key, raw in storage.runs.list(keys.prefix):
        if key.startswith(keys.unsealed_prefixes) or key == keys.seal:
            continue
        out.append((key, _sha(canonical_json(raw))))
    return sorted(out)


def _sealed_messages(storage: Storage, run: RunRecord | None, keys: RunKeys,
                     truncated: Iterable[tuple[str, int]] = ()) -> list[tuple[str, int, str]]:
    if run is None or run.thread_id is None:
        return []
    gone = {s for t, s in truncated if t == run.thread_id}
    seqs: list[int] = []
    for key in (keys.persist_input, keys.persist_output):
        raw = storage.runs.get(key)
        if isinstance(raw, dict) and isinstance(raw.get("seqs"), list):
            seqs += [int(s) for s in raw["seqs"] if isinstance(s, int) and s not in gone]
    if not seqs or storage.memory.get_thread(run.thread_id) is None:
        return []
    stored = storage.memory.get_messages(run.thread_id, seqs=sorted(set(seqs)))
    return [(run.thread_id, m.seq, _sha(m.as_message().canonical_json())) for m in stored]


def compute_seal(storage: Storage, run_id: str,
                 redactions: list[Redaction] | None = None,
                 truncated: list[tuple[str, int]] | None = None) -> SealRecord:
    keys = RunKeys(run_id)
    run = storage.runs.get_run(run_id)
    return _seal(_sealed_entries(storage, keys),
                 _sealed_messages(storage, run, keys, truncated or ()),
                 _run_row(run), redactions, truncated, _failure(run))


def _seal(entries: list[tuple[str, str]], messages: list[tuple[str, int, str]], row: str,
          redactions: list[Redaction] | None = None,
          truncated: list[tuple[str, int]] | None = None,
          failed: str | None = None) -> SealRecord:
    return SealRecord(entries=entries, messages=messages, run=row,
                      chain=_chain_of(entries, messages, row, failed),
                      redactions=list(redactions or []),
                      truncated=sorted(set(truncated or [])), failed=failed)


def _written_parts(run: RunRecord, entries: list[tuple[str, Any]],
                   messages: Sequence[tuple[int, Message | str]]
                   ) -> tuple[list[tuple[str, str]], list[tuple[str, int, str]], str, str | None]:
    """What the seal of a run about to be written whole digests: its records' and
    messages' digests, its row's and its failure's."""
    keys = RunKeys(run.run_id)
    unsealed, seal, sha = keys.unsealed_prefixes, keys.seal, hashlib.sha256  # (_sha)
    digests = sorted((k, sha((v.text if type(v) is EncodedJson else canonical_json(v))
                             .encode("utf-8")).hexdigest())
                     for k, v in entries if not k.startswith(unsealed) and k != seal)
    msgs = ([(run.thread_id, seq, _sha(m if isinstance(m, str) else m.canonical_json()))
             for seq, m in sorted(dict(messages).items())]
            if run.thread_id is not None else [])
    return digests, msgs, _run_row(run), _failure(run)


def seal_of(run: RunRecord, entries: list[tuple[str, Any]],
            messages: Sequence[tuple[int, Message | str]]) -> SealRecord:
    """The seal of a run about to be written whole (an import): computed from the
    records and messages themselves, so no read-back is needed (a record given as
    ``EncodedJson``, a message as its canonical JSON: hashed as they are). Must equal
    what ``compute_seal`` finds once they are stored."""
    digests, msgs, row, failed = _written_parts(run, entries, messages)
    return _seal(digests, msgs, row, failed=failed)


def seal_text_of(run: RunRecord, entries: list[tuple[str, Any]],
                 messages: Sequence[tuple[int, Message | str]]) -> EncodedJson:
    """``seal_of(…)`` as the journal stores it (its ``model_dump(mode="json")``
    encoded), made without the model: an import seals every run it writes, and the
    model's checks hold by construction here (digests are strings, seqs ints)."""
    digests, msgs, row, failed = _written_parts(run, entries, messages)
    chain = _chain_of(digests, msgs, row, failed)
    if all(type(k) is str for k, _ in digests) and all(
            type(t) is str and type(s) is int for t, s, _ in msgs):
        # its canonical JSON written out (keys sorted; digests are hex): no encoder
        # walk of a value made for it
        return EncodedJson("".join((
            f'{{"chain":"{chain}","entries":[',
            ",".join(f'[{_STRING(k)},"{d}"]' for k, d in digests), "],",
            "" if failed is None else f'"failed":"{failed}",', '"messages":[',
            ",".join(f'[{_STRING(t)},{s},"{d}"]' for t, s, d in msgs),
            f'],"redactions":[],"run":"{row}","v":{SEAL_VERSION}}}')))
    value: dict[str, Any] = {"v": SEAL_VERSION, "entries": digests, "messages": msgs,
                             "run": row, "chain": chain,
                             "redactions": []}  # (no truncated: popped when empty)
    if failed is not None:
        value["failed"] = failed
    return encoded_json(f"journal value for key '{RunKeys(run.run_id).seal}'", value)


def seal_written(storage: Storage, run: RunRecord, entries: list[tuple[str, Any]],
                 messages: list[tuple[int, Message]], *,
                 into: list[tuple[str, Any]] | None = None) -> SealRecord:
    """Seal a finished run from what its writer stored — every record of the run and
    every message it persisted, as ``seal_of`` takes them — without reading them back
    (first write wins: a sealed run keeps its seal). With ``into`` (the records a
    fresh run's writers deferred, written at once) the seal is added there."""
    seal = seal_of(run, entries, messages)
    keys = RunKeys(run.run_id)
    if into is not None:
        into.append((keys.seal, seal.model_dump(mode="json")))
        return seal
    if storage.runs.put_if_absent(keys.seal, seal.model_dump(mode="json")):
        return seal
    stored = read_seal(storage, run.run_id)
    return seal if stored is None else stored


def seal_run(storage: Storage, run_id: str) -> SealRecord:
    """Seal a finished run (first write wins: a sealed run keeps its seal)."""
    seal = compute_seal(storage, run_id)
    keys = RunKeys(run_id)
    storage.runs.put_if_absent(keys.seal, seal.model_dump(mode="json"))
    raw = storage.runs.get(keys.seal)
    return validated(SealRecord, raw, f"journal entry '{keys.seal}'")


def reseal_run(storage: Storage, run_id: str, redaction: Redaction) -> SealRecord:
    """Replace a run's seal after an erasure rewrote its records, recording why (and
    the seals of its sealed counterfactuals, whose records it may have rewritten)."""
    keys = RunKeys(run_id)
    old = read_seal(storage, run_id)
    history = (old.redactions if old is not None else []) + [redaction]
    seal = compute_seal(storage, run_id, history, old.truncated if old is not None else None)
    storage.runs.rewrite(keys.seal, seal.model_dump(mode="json"))
    for digest in _sealed_counterfactuals(storage.runs, keys):
        seal_counterfactual(storage.runs, run_id, digest, rewrite=True)
    return seal


# -- counterfactual and what-if records ---------------------------------------------------
class CounterfactualSeal(BaseModel):
    """``<run>:cf:<digest>:seal``: the sha256 of a counterfactual's (or what-if's) result
    and of every answer and tool record under it, chained; written with the result."""

    model_config = ConfigDict(extra="forbid")
    v: int = 1
    entries: list[tuple[str, str]]
    chain: str


def _cf_entries(runs: RunJournal, keys: RunKeys, digest: str) -> list[tuple[str, str]]:
    base, own = keys.cf(digest), keys.cf_seal(digest)
    return sorted((k, _sha(canonical_json(v))) for k, v in runs.list(base)
                  if (k == base or k.startswith(base + ":")) and k != own)


def _cf_chain(entries: list[tuple[str, str]]) -> str:
    return _chain([f"{k}={d}" for k, d in entries])


def seal_counterfactual(runs: RunJournal, run_id: str, digest: str, *,
                        rewrite: bool = False) -> CounterfactualSeal:
    """Seal counterfactual ``digest`` of a run as its records are now (first write
    wins; ``rewrite`` replaces it, after an erasure rewrote them)."""
    keys = RunKeys(run_id)
    entries = _cf_entries(runs, keys, digest)
    seal = CounterfactualSeal(entries=entries, chain=_cf_chain(entries))
    if rewrite:
        runs.rewrite(keys.cf_seal(digest), seal.model_dump(mode="json"))
    else:
        runs.put_if_absent(keys.cf_seal(digest), seal.model_dump(mode="json"))
    return seal


def _sealed_counterfactuals(runs: RunJournal, keys: RunKeys) -> list[str]:
    """The digests of the run's counterfactuals that have a seal."""
    prefix = keys.cf_prefix
    return sorted(k[len(prefix):-len(":seal")] for k, _ in runs.list(prefix)
                  if k.endswith(":seal") and k[len(prefix):].count(":") == 1)


def _cf_disagrees(runs: RunJournal, keys: RunKeys) -> tuple[str, str] | None:
    """The first record of a sealed counterfactual that no longer matches its seal."""
    for digest in _sealed_counterfactuals(runs, keys):
        where = keys.cf_seal(digest)
        seal = validated(CounterfactualSeal, runs.get(where), f"journal entry '{where}'")
        if _cf_chain(seal.entries) != seal.chain:
            return where, "the counterfactual's seal does not match its contents"
        rec, cur = dict(seal.entries), dict(_cf_entries(runs, keys, digest))
        for key in sorted(set(rec) | set(cur)):
            if rec.get(key) != cur.get(key):
                why = ("was removed" if key not in cur else "was added after it was sealed"
                       if key not in rec else "changed after it was sealed")
                return key, f"the counterfactual record {why}"
    return None


def detach_truncated(storage: Storage, run_id: str, refs: list[tuple[str, int]]) -> bool:
    """A truncation removed messages the run stored (SPEC §2.7): its records are kept,
    and its seal (if any) is rewritten without those messages, listing them, so it
    still verifies. Call before the messages go, so a seal that was intact up to them
    is recomputed from what stays. False for an unsealed run (nothing to rewrite)."""
    keys = RunKeys(run_id)
    old = read_seal(storage, run_id)
    if old is None:
        return False
    gone = sorted(set(old.truncated) | {(t, int(s)) for t, s in refs})
    seal = compute_seal(storage, run_id, old.redactions, gone)
    storage.runs.rewrite(keys.seal, seal.model_dump(mode="json"))
    return True


def read_seal(storage: Storage, run_id: str) -> SealRecord | None:
    keys = RunKeys(run_id)
    raw = storage.runs.get(keys.seal)
    return None if raw is None else validated(SealRecord, raw, f"journal entry '{keys.seal}'")


def _expects_seal(storage: Storage, keys: RunKeys) -> bool:
    """The run's input says it will be sealed, or it ran under a claim (claims came
    after seals: a writer that claims also seals)."""
    raw = storage.runs.get(keys.input)
    if isinstance(raw, dict) and raw.get("sealed") is True:
        return True
    return bool(storage.runs.list(keys.lease_prefix))


def _missing_seal(storage: Storage, keys: RunKeys) -> VerifyReport:
    """A run without a seal: older than sealing, never finished, failed before it
    finished, or (finished, expected sealed) tampered."""
    run_id = keys.run_id
    if not _expects_seal(storage, keys):
        return VerifyReport(run_id=run_id, status="unsealed",
                            detail="no seal: recorded before sealing existed")
    run = storage.runs.get_run(run_id)
    ended = storage.runs.has(keys.output)
    if run is not None and run.status == "running" and not ended:
        # the output, the seal and the completed status commit in one group
        return VerifyReport(run_id=run_id, status="interrupted",
                            detail="interrupted (never finished): its process stopped "
                                   "(or is still running) before the run ended; resuming "
                                   "it finishes and seals it")
    if run is not None and run.status == "failed" and not ended:
        return VerifyReport(run_id=run_id, status="unsealed",
                            detail="failed before it finished (a failed run is not "
                                   "sealed); resuming it finishes and seals it")
    raw = storage.runs.get(keys.input)
    flagged = isinstance(raw, dict) and raw.get("sealed") is True
    return VerifyReport(run_id=run_id, status="tampered", first_mismatch=keys.seal,
                        detail="the run was sealed but its seal record is gone" if flagged
                        else "the run finished under a claim, which only a sealing writer "
                             "takes, but its seal record and its input's 'sealed' flag "
                             "are gone")


def _row_disagrees(run: RunRecord | None, seal: SealRecord,
                   ended: bool) -> str | None:
    """How the run's row contradicts the sealed run's end (None: it agrees)."""
    if run is None:
        return None
    if run.status == "running" and ended:
        return "the run was sealed as finished but its status is 'running'"
    if run.status not in ("completed", "running") and not (
            run.status == "failed" and seal.failed is not None):
        # a sealed run has finished; only a run sealed as failed (an import records a
        # failed call whole, its error in the seal) may say it failed
        return f"the run was sealed as finished but its status is {run.status!r}"
    return None


def _end_disagrees(run: RunRecord | None) -> str | None:
    """How a finished run's error and finish time contradict its end (None: agree)."""
    if run is None:
        return None
    if run.status == "completed" and run.error is not None:
        return "the run completed but its row records an error"
    if run.status != "running" and run.finished_at is None:
        return f"the run is {run.status} but its row has no finish time"
    return None


def _hashing_embedder(storage: Storage, keys: RunKeys) -> HashingEmbedder | None:
    """The offline hashing embedder the run's memory embedded its messages with (the
    provenance record names it); None for any other (a model is not loaded to verify)."""
    raw = storage.runs.get(keys.memctx)
    settings = raw.get("settings") if isinstance(raw, dict) else None
    name = settings.get("embedder") if isinstance(settings, dict) else None
    if not isinstance(name, str) or not name.startswith("hashing-"):
        return None
    dim = name[len("hashing-"):]
    return HashingEmbedder(int(dim)) if dim.isdigit() and 0 < int(dim) <= 65536 else None


def _store_disagrees(storage: Storage, run: RunRecord | None, seal: SealRecord,
                     imported: bool) -> tuple[str, str] | None:
    """The first column of the store that contradicts the sealed messages: the writing
    run of a message (``messages.run_id``), its search text, or (a run's own messages
    embedded by the hashing embedder) its vector."""
    if run is None or run.thread_id is None or storage.memory.get_thread(run.thread_id) is None:
        return None
    tid = run.thread_id
    sealed = {s for t, s, _ in seal.messages if t == tid}
    gone = {s for t, s in seal.truncated if t == tid}
    for m in storage.memory.get_messages_by_run(tid, run.run_id):
        if m.seq not in sealed and m.seq not in gone:
            return (f"message {tid}#{m.seq}", "the store says this run wrote it, but its "
                    "seal does not list it (the message's run_id changed)")
    if not sealed:
        return None
    stored = storage.memory.get_messages(tid, seqs=sorted(sealed))
    # the stored search texts (lower-cased) of the rows from the first sealed one on
    embed = None if imported else _hashing_embedder(storage, RunKeys(run.run_id))
    rows = storage.memory.scope_rows([tid], after_seq={tid: min(sealed) - 1},
                                     vectors=embed is not None, texts=True)
    at = {int(x): i for i, x in enumerate(rows.seqs)}
    searched = rows.text_list()
    for m in stored:
        # an import stores a message once, with the first run that sent it
        if not imported and m.run_id != run.run_id:
            return (f"message {tid}#{m.seq}", "the message's writing run (run_id) changed")
        i = at.get(m.seq)
        if (None if i is None else searched[i] or None) != ((m.text() or "").lower() or None):
            return (f"message {tid}#{m.seq}",
                    "the message's search text no longer matches its content")
        if embed is not None and i is not None and rows.matrix is not None \
                and bool(rows.has_vec[i]) and m.text() and not np.allclose(
                    rows.matrix[i], embed([m.text() or ""])[0], atol=1e-5):
            return (f"message {tid}#{m.seq}", f"the message's stored vector is not the one "
                    f"its text embeds to ({embed.name})")
    return None


def _first_difference(seal: SealRecord, now: SealRecord) -> tuple[str, str]:
    rec, cur = dict(seal.entries), dict(now.entries)
    for key in sorted(set(rec) | set(cur)):
        if key not in cur:
            return key, "the record was removed"
        if key not in rec:
            return key, "the record was added after the run was sealed"
        if rec[key] != cur[key]:
            return key, "the record's content changed"
    msg_rec = {(t, s): d for t, s, d in seal.messages}
    msg_cur = {(t, s): d for t, s, d in now.messages}
    for ref in sorted(set(msg_rec) | set(msg_cur)):
        if msg_rec.get(ref) != msg_cur.get(ref):
            what = "removed" if ref not in msg_cur else "changed"
            return f"message {ref[0]}#{ref[1]}", f"the stored message was {what}"
    if seal.run != now.run:
        return "runs-table row", "the run's row (agent, thread, status or times) changed"
    if seal.failed != now.failed:
        return "runs-table row", ("the run's recorded error changed" if now.failed else
                                  "the run was sealed as failed but is no longer marked so")
    return "seal", "the seal's chain digest does not match its contents"


def verify_run(storage: Storage, run_id: str) -> VerifyReport:
    """Recompute a run's seal and compare; never raises for a damaged journal."""
    keys = RunKeys(run_id)
    try:
        seal = read_seal(storage, run_id)
        if seal is None:
            return _missing_seal(storage, keys)
        now = compute_seal(storage, run_id, seal.redactions, seal.truncated)
        run = storage.runs.get_run(run_id)
        row = _row_disagrees(run, seal, storage.runs.has(keys.output))
        if row is None and now.chain == seal.chain:  # a changed record is named first
            row = _end_disagrees(run)
        store = None if row else _store_disagrees(storage, run, seal,
                                                  storage.runs.has(keys.import_))
        store = store or _cf_disagrees(storage.runs, keys)
    except (MemoryCoreError, ValueError, TypeError) as e:
        return VerifyReport(run_id=run_id, status="tampered", first_mismatch=None,
                            detail=f"a record cannot be read: {e}")
    expected_chain = _chain_of(seal.entries, seal.messages, seal.run, seal.failed)
    if row is not None:
        return VerifyReport(run_id=run_id, status="tampered", first_mismatch="runs-table row",
                            detail=row)
    if now.chain == seal.chain and expected_chain == seal.chain:
        if store is not None:
            return VerifyReport(run_id=run_id, status="tampered", first_mismatch=store[0],
                                detail=store[1])
        status: Literal["ok", "redacted"] = "redacted" if seal.redactions else "ok"
        notes = [f"redacted by the erasure of {', '.join(r.threads)}"
                 for r in seal.redactions]
        if seal.truncated:
            notes.append(f"{len(seal.truncated)} stored message(s) removed by truncation")
        return VerifyReport(run_id=run_id, status=status, chain=seal.chain,
                            detail="; ".join(notes), truncated=seal.truncated)
    where, why = _first_difference(seal, now)
    return VerifyReport(run_id=run_id, status="tampered", first_mismatch=where, detail=why)


def require_intact(storage: Storage, run_id: str) -> VerifyReport:
    """``verify_run``, raising ReplayMismatch naming the first mismatch when tampered."""
    report = verify_run(storage, run_id)
    if report.status == "tampered":
        raise ReplayMismatch(f"run '{run_id}' fails verification at "
                             f"{report.first_mismatch or 'an unreadable record'}: "
                             f"{report.detail}")
    return report


__all__ = ["NOT_COVERED", "CounterfactualSeal", "Redaction", "SealRecord", "VerifyReport",
           "compute_seal", "read_seal", "require_intact", "reseal_run", "seal_counterfactual",
           "seal_of", "seal_run", "seal_written", "verify_run"]
