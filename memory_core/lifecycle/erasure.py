"""Erasure that reaches every copy (SPEC §9): erasing a thread removes its messages,
vectors, working memory, observations, runs and journals, and redacts every other run's
records that hold its text — frozen prompts, provenance previews, model steps, tool
calls, outputs and counterfactual records — re-sealing them as redacted, and the
memory of the scopes exposed to it: the working memory, observations (their vectors
dropped) and observer journal of the erased thread's resource and its other threads,
and of the threads and resources where a run given its messages ran.

What is redacted elsewhere: only provable copies, never text that merely happens to be
equal. A run is exposed when its records refer to a message of the erased thread (a
prompt item, a provenance ref: it was given it) or it ran for the same resource (its
working memory and recall held the same person's text). In an exposed run: every item
and ref from the erased thread (wholly), the digests of the erased messages in its step
records (``input_hashes``, ``input_hash``: a short text is guessed from its hash), and
every occurrence, in any string of its records, of an erased message's text (4
characters or more), of one of its lines or sentences (12 or more), or of one of its
identifier-like tokens (5+ characters with a digit, an ``@``, or a ``-``/``_`` joining
two parts: order numbers, codes, e-mail addresses). A run of another person that was
never given the erased messages is left as it is, whatever it says. Answers that
exposed runs stored are redacted in place (their vectors dropped) and the report names
their threads (``answered_with``) so the operator can decide what else to do with
them.

Erasure is resumable: other runs are redacted before anything is deleted, so a crash
leaves either the thread (erase again redoes the idempotent redaction) or leftovers of
a thread already gone (erase again deletes them).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from memory_core.errors import InvalidInputError, NotFoundError
from memory_core.journal import ObserverReader, RunKeys
from memory_core.journal.hashes import REDACTED_DIGEST, message_hash
from memory_core.journal.keys import SUITES_PREFIX
from memory_core.journal.seal import Redaction, reseal_run, verify_run
from memory_core.storage.base import RESOURCE_WM_PREFIX, THREAD_WM_PREFIX, Storage
from memory_core.types import (
    ErasureReport,
    Message,
    StoredMessage,
    SubjectErasureReport,
    canonical_json,
)

REDACTED = "[redacted: erased]"
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")
_TOKEN = re.compile(r"[\w@.+-]+", re.UNICODE)
_PLAIN_WORD = re.compile(r"[A-Za-z]+")


def _identifier_like(tok: str) -> bool:
    tok = tok.strip(".-+")
    if len(tok) < 5 or _PLAIN_WORD.fullmatch(tok):
        return False
    return (any(c.isdigit() for c in tok) or "@" in tok
            or bool(re.search(r"\w[-_]\w", tok)))


def needles(messages: Iterable[StoredMessage], *, shortest: int = 8) -> list[str]:
    """The strings whose every occurrence in an exposed run is redacted, longest first:
    whole texts of ``shortest`` characters or more, sentences, identifier-like tokens."""
    out: set[str] = set()
    for m in messages:
        texts = [m.text() or ""]
        for call in m.tool_calls():
            texts.append(str(call.args))
        for res in m.tool_results():
            texts.append(str(res.result))
        for text in texts:
            text = text.strip()
            if len(text) >= shortest:
                out.add(text)
            out.update(s.strip() for s in _SENTENCE.findall(text) if len(s.strip()) >= 12)
            out.update(t.strip(".-+") for t in _TOKEN.findall(text) if _identifier_like(t))
    return sorted(out, key=lambda s: (-len(s), s))


class Redactor:
    """Replaces, in any JSON value, the erased thread's items and texts, and the digests
    of its messages."""

    def __init__(self, thread_id: str, needles: list[str],
                 digests: Iterable[str] = ()) -> None:
        self.thread_id = thread_id
        self.needles = needles
        self.digests = frozenset(digests)

    def refers(self, value: Any) -> bool:
        """Whether a JSON value names a message of the erased thread."""
        if isinstance(value, dict):
            return value.get("thread_id") == self.thread_id or any(
                self.refers(v) for v in value.values())
        if isinstance(value, list):
            return any(self.refers(v) for v in value)
        return False

    def value(self, value: Any) -> Any:
        if isinstance(value, dict):
            if value.get("thread_id") == self.thread_id:
                return {k: _blank(v, k) for k, v in value.items()}
            out = {k: self.value(v) for k, v in value.items()}
            hashes = out.get("input_hashes")
            if isinstance(hashes, list) and self.digests & set(hashes):
                # a step whose input held an erased message: its digests would let a
                # short text be guessed back (the whole-input one as well)
                out["input_hashes"] = [REDACTED_DIGEST if h in self.digests else h
                                       for h in hashes]
                if isinstance(out.get("input_hash"), str):
                    out["input_hash"] = REDACTED_DIGEST
            return out
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, str):
            return self.text(value)
        return value

    def text(self, text: str) -> str:
        for n in self.needles:
            if n in text:
                text = text.replace(n, REDACTED)
        return text


def _redactor(thread_id: str, erased: Sequence[StoredMessage]) -> Redactor:
    """What an erasure of these messages redacts in an exposed run: their texts (4
    characters or more), sentences and identifiers, and their digests."""
    return Redactor(thread_id, needles(erased, shortest=4),
                    [message_hash(m.as_message()) for m in erased])


def _blank(value: Any, key: str) -> Any:
    """An item from the erased thread: keep its shape and ids, drop every text."""
    if key in ("thread_id", "seq", "lane", "role", "rank", "score", "origin", "reason",
               "observation_id", "tokens"):
        return value
    if isinstance(value, str):
        return REDACTED
    if isinstance(value, dict):
        if "content" in value and "role" in value:  # a message
            return {**value, "content": REDACTED, "metadata": {}}
        return {k: _blank(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_blank(v, key) for v in value]
    return value


def _redact_runs(storage: Storage, redactor: Redactor, erased_runs: set[str],
                 erased: list[StoredMessage],
                 resource_id: str | None) -> tuple[list[str], list[str]]:
    """Redact every other run's records, and the memory of the scopes they ran in;
    returns (runs redacted, threads whose stored answers were given by those runs)."""
    thread_id = redactor.thread_id
    refs = sorted({(thread_id, m.seq) for m in erased})
    redacted: list[str] = []
    answered: set[str] = set()
    threads = {t.id for t in storage.memory.list_threads(resource_id)} \
        if resource_id is not None else set()
    resources = {resource_id} if resource_id is not None else set()
    for run in storage.runs.list_runs():
        if run.run_id in erased_runs:
            continue
        keys = RunKeys(run.run_id)
        entries = [(k, v) for k, v in storage.runs.list(keys.prefix) if k != keys.seal]
        exposed = (resource_id is not None and run.resource_id == resource_id) or any(
            redactor.refers(v) for _, v in entries)
        if not exposed:
            continue  # never given the erased messages: equal text is not a copy
        threads.update([run.thread_id] if run.thread_id is not None else [])
        resources.update([run.resource_id] if run.resource_id is not None else [])
        changed: list[str] = []
        for key, raw in entries:
            new = redactor.value(raw)
            if new != raw:
                storage.runs.rewrite(key, new)
                changed.append(key)
        # an earlier, interrupted erase left this run's records redacted already
        resumed = not changed and any(REDACTED in canonical_json(v) for _, v in entries)
        if not (changed or resumed):
            continue  # its answers quote nothing erased: its records would show it
        if run.thread_id is not None and run.thread_id != thread_id:
            fixed = _redact_answers(storage, redactor, run.thread_id, keys)
            if fixed:
                answered.add(run.thread_id)
                changed += [f"message {run.thread_id}#{seq}" for seq in fixed]
        if changed or verify_run(storage, run.run_id).status == "tampered":
            reseal_run(storage, run.run_id, Redaction(erased=refs, threads=[thread_id],
                                                      keys=changed))
            redacted.append(run.run_id)
    _redact_memory(storage, redactor, threads - {thread_id}, resources)
    return redacted, sorted(answered)


def _redact_memory(storage: Storage, redactor: Redactor, threads: set[str],
                   resources: set[str]) -> None:
    """The erased texts in the memory of the scopes exposed to them (the erased
    thread's resource and its other threads, and where a run given them ran): their
    working memory, observations (their vectors dropped) and observer journal."""
    keys = [f"{RESOURCE_WM_PREFIX}{r}" for r in sorted(resources)] + \
        [f"{THREAD_WM_PREFIX}{t}" for t in sorted(threads)]
    for key in keys:
        value = storage.memory.get_working_memory(key)
        if value is not None and (new := redactor.value(value)) != value:
            storage.memory.put_working_memory(key, new)
    for tid in sorted(threads):
        for o in storage.memory.list_observations(tid):
            if (text := redactor.text(o.text)) != o.text:
                storage.memory.redact_observation(o.id, text)
        for key, raw in ObserverReader(storage.runs, tid).entries():
            if (new := redactor.value(raw)) != raw:
                storage.runs.rewrite(key, new)


def _redact_answers(storage: Storage, redactor: Redactor, thread_id: str,
                    keys: RunKeys) -> list[int]:
    """The run's stored answers that quoted erased text, redacted in place."""
    raw = storage.runs.get(keys.persist_output)
    seqs = raw.get("seqs") if isinstance(raw, dict) else None
    if not isinstance(seqs, list) or not seqs or storage.memory.get_thread(thread_id) is None:
        return []
    fixed = []
    for m in storage.memory.get_messages(thread_id, seqs=[int(x) for x in seqs]):
        plain = m.as_message()
        dumped = plain.model_dump(mode="json")
        new = redactor.value(dumped)
        if new != dumped:
            storage.memory.redact_message(thread_id, m.seq, Message.model_validate(new))
            fixed.append(m.seq)
    return fixed


def erase_thread(storage: Storage, thread_id: str) -> ErasureReport:
    """Erase a thread everywhere (see the module docstring) in one transaction where
    the adapter's ``write_batch`` is one: a crash midway leaves all of it or none.
    ``NotFoundError`` only when nothing of it remains."""
    with storage.erasing(f"erase_thread '{thread_id}'"), storage.write_batch():
        return _erase_thread(storage, thread_id)


def _erase_thread(storage: Storage, thread_id: str) -> ErasureReport:
    if not isinstance(thread_id, str) or not thread_id:
        raise InvalidInputError(f"thread id must be a non-empty string, got {thread_id!r}")
    thread = storage.memory.get_thread(thread_id)
    own_runs = [r.run_id for r in storage.runs.list_runs(thread_id=thread_id)]
    observer = ObserverReader(storage.runs, thread_id)
    if thread is None and not own_runs and not observer.entries():
        raise NotFoundError(f"thread '{thread_id}' does not exist")
    report = ErasureReport()
    if thread is not None:
        erased = storage.memory.get_messages(thread_id)
        redactor = _redactor(thread_id, erased)
        report.redacted_runs, report.answered_with = _redact_runs(
            storage, redactor, set(own_runs), erased, thread.resource_id)
        deleted = storage.memory.delete_thread(thread_id)
        report = deleted.model_copy(update={"redacted_runs": report.redacted_runs,
                                            "answered_with": report.answered_with})
    else:
        report.threads = [thread_id]
    journal = 0
    for rid in own_runs:
        journal += storage.runs.delete(RunKeys(rid).prefix)
    journal += observer.erase() + _erase_pins(storage, own_runs)
    report.journal_entries = journal
    report.runs = storage.runs.delete_runs(own_runs)
    return report


def erase_resource(storage: Storage, resource_id: str) -> ErasureReport:
    """Erase every thread of a resource (a person), the runs it had without a thread
    and its working memory (one transaction, as ``erase_thread``)."""
    with storage.erasing(f"erase_resource '{resource_id}'"), storage.write_batch():
        return _erase_resource(storage, resource_id)


def _erase_resource(storage: Storage, resource_id: str) -> ErasureReport:
    if not isinstance(resource_id, str) or not resource_id:
        raise InvalidInputError(f"resource_id must be a non-empty string, got {resource_id!r}")
    reports = [_erase_thread(storage, t.id) for t in storage.memory.list_threads(resource_id)]
    total = merge_reports(reports)
    orphan = [r.run_id for r in storage.runs.list_runs(resource_id=resource_id)]
    for rid in orphan:
        total.journal_entries += storage.runs.delete(RunKeys(rid).prefix)
    total.journal_entries += _erase_pins(storage, orphan)
    total.runs += storage.runs.delete_runs(orphan)
    key = f"{RESOURCE_WM_PREFIX}{resource_id}"
    if storage.memory.delete_working_memory(key):
        total.working_memory.append(key)
    return total


def _erase_pins(storage: Storage, run_ids: Sequence[str]) -> int:
    """The regression-suite pins of erased runs (a pin may quote the run's text)."""
    gone = set(run_ids)
    if not gone:
        return 0
    keys = [k for k, v in storage.runs.list(SUITES_PREFIX)
            if isinstance(v, dict) and v.get("run_id") in gone]
    return storage.runs.delete_keys(keys) if keys else 0


def merge_reports(reports: Iterable[ErasureReport]) -> ErasureReport:
    total = ErasureReport()
    for r in reports:
        total.threads += r.threads
        total.messages += r.messages
        total.embeddings += r.embeddings
        total.working_memory += r.working_memory
        total.observations += r.observations
        total.journal_entries += r.journal_entries
        total.runs += r.runs
        total.redacted_runs = sorted(set(total.redacted_runs) | set(r.redacted_runs))
        total.answered_with = sorted(set(total.answered_with) | set(r.answered_with))
    return total


# -- erasing a person (SPEC §9.3–9.5) ---------------------------------------------------
def erase_subject(storage: Storage, user: str, org_id: str | None = None,
                  memory: object = None) -> SubjectErasureReport:
    """Erase a person (a resource id) everywhere we can reach (SPEC §9.3–9.5).

    Removes the person's threads (messages, vectors, thread working memory,
    observations and their observer journal), the person's working memory and every
    run they had, and redacts every other run's copies, as ``erase_resource`` does. A
    thread whose memory is kept on another storage is erased there when that storage
    is given as ``memory`` (an ``AgentMemory`` or a ``Storage``), its copies in this
    storage's runs redacted too; a thread this storage's journal names for the person
    but no store given holds is reported in ``unreached_threads`` (its runs here are
    erased, its messages are not). Observations belong to a thread: a person's erasure
    takes those of the person's threads (made before an anonymous thread was claimed
    too) and leaves every other thread's, a staff thread's included.

    Refused before anything is written: an empty ``user``, an ``org_id`` (this library
    keeps no organisations: each organisation has its own storage, and a person is
    erased on it) and a ``memory`` that holds no memory store.
    """
    if not isinstance(storage, Storage):
        raise InvalidInputError(
            f"storage must be a memory_core Storage, got {type(storage).__name__}")
    if not isinstance(user, str) or not user:
        raise InvalidInputError(f"user must be a non-empty resource id, got {user!r}")
    if org_id is not None:
        raise InvalidInputError(
            f"org_id {org_id!r}: this storage keeps no organisations (each organisation "
            f"has its own storage); erase '{user}' on that organisation's storage")
    other = memory_storage(memory)
    if other is storage:
        other = None
    local = [t.id for t in storage.memory.list_threads(user)]
    elsewhere = [t.id for t in other.memory.list_threads(user)] if other else []
    named = {r.thread_id for r in storage.runs.list_runs(resource_id=user) if r.thread_id}
    held = set(local) | set(elsewhere)
    unreached = sorted(t for t in named - held if storage.memory.get_thread(t) is None
                       and (other is None or other.memory.get_thread(t) is None))
    reports: list[ErasureReport] = []
    # each one transaction; DuckDB rewrites its file so no freed block keeps the text
    if other is not None:
        reports += [_redact_from_elsewhere(storage, other, tid) for tid in elsewhere]
        reports.append(erase_resource(other, user))
    reports.append(erase_resource(storage, user))
    total = merge_reports(reports)
    return SubjectErasureReport(**total.model_dump(), memory_threads=sorted(held),
                                unreached_threads=unreached)


def memory_storage(memory: object) -> Storage | None:
    """The storage ``memory=`` names: a Storage, or what an AgentMemory stores in;
    InvalidInputError for anything that holds no memory store."""
    if memory is None or isinstance(memory, Storage):
        return memory
    inner = getattr(memory, "storage", None)
    if isinstance(inner, Storage):
        return inner
    raise InvalidInputError(
        f"memory must be an AgentMemory or a Storage holding a memory store; a "
        f"{type(memory).__name__} has none, so its threads cannot be erased through it")


def _redact_from_elsewhere(storage: Storage, other: Storage, thread_id: str) -> ErasureReport:
    """A thread kept on ``other`` whose runs and copies are in ``storage``: redact this
    storage's runs, erase its runs and observer journal here (the thread itself is
    erased on ``other`` afterwards, so a crash in between redoes this)."""
    erased = other.memory.get_messages(thread_id)
    own = [r.run_id for r in storage.runs.list_runs(thread_id=thread_id)]
    thread = other.memory.get_thread(thread_id)
    redacted, answered = _redact_runs(storage, _redactor(thread_id, erased), set(own), erased,
                                      thread.resource_id if thread else None)
    journal = sum(storage.runs.delete(RunKeys(rid).prefix) for rid in own)
    journal += ObserverReader(storage.runs, thread_id).erase()
    key = f"{THREAD_WM_PREFIX}{thread_id}"
    wm = [key] if storage.memory.delete_working_memory(key) else []
    return ErasureReport(journal_entries=journal, runs=storage.runs.delete_runs(own),
                         redacted_runs=redacted, answered_with=answered, working_memory=wm)
