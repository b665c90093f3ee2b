"""Regression suites: runs pinned with what they must keep, checked again — as they
were recorded, or re-composed (and re-asked) under changed memory settings.

A suite lives in the journal as one record per pin or unpin (``suite:<name>:pin:<n>``,
``PinRecord``; the latest record of a run wins), so it travels with the database and
an erasure that removes a run removes its pins. ``run_suites`` checks every pin's
expectations — the answer contains / does not contain a text, a message is recalled,
the prompt stays under N tokens, the answer is unchanged against the recorded one —
and reports each as passed or failed, with what was seen (``memwb regress``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memory_core.analysis.whatif import Changes, RunWhatIf, parse_changes, what_if
from memory_core.embedding.hashing import Embedder
from memory_core.errors import InvalidInputError, NotFoundError
from memory_core.journal import RunData, load_run
from memory_core.journal.keys import SUITES_PREFIX, SuiteKeys, check_suite_name, suite_of
from memory_core.journal.records import Expectation, PinRecord, load_record
from memory_core.lifecycle.erasure import REDACTED
from memory_core.models.base import Model
from memory_core.storage.base import Storage
from memory_core.storage.common import utc_now

__all__ = ["Expectation", "PinRecord", "RegressReport", "list_suites", "pin_run",
           "pins_of", "recorded_checks", "run_suites", "unpin_run"]


# -- pins ------------------------------------------------------------------------------
def _records(storage: Storage, name: str) -> list[PinRecord]:
    keys = SuiteKeys(name)
    out = []
    for key, raw in storage.runs.list(keys.prefix):
        if suite_of(key) == name:
            out.append(load_record("pin", PinRecord, raw, key))
    return out


def pins_of(storage: Storage, name: str) -> list[PinRecord]:
    """The suite's pinned runs, each with its latest expectations, in pinning order."""
    latest: dict[str, PinRecord] = {}
    for rec in _records(storage, name):
        latest.pop(rec.run_id, None)
        latest[rec.run_id] = rec
    return [r for r in latest.values() if not r.removed]


def list_suites(storage: Storage) -> list[str]:
    """Every suite with at least one pinned run, by name."""
    names = {n for k, _ in storage.runs.list(SUITES_PREFIX) if (n := suite_of(k))}
    return sorted(n for n in names if pins_of(storage, n))


def _write(storage: Storage, name: str, record: PinRecord) -> None:
    keys = SuiteKeys(name)
    n = len(storage.runs.list(keys.prefix))
    while not storage.runs.put_if_absent(keys.pin(n), record.model_dump(mode="json")):
        n += 1  # another writer took this number: the next one


def pin_run(storage: Storage, name: str, run_id: str,
            expectations: Sequence[Expectation | Mapping[str, Any]], *,
            note: str | None = None, at: datetime | None = None) -> PinRecord:
    """Pin ``run_id`` to suite ``name`` with what it must keep (replacing what it was
    pinned with before). With no expectations the run must keep its answer
    (``unchanged``) — "keep this answer"."""
    check_suite_name(name)
    storage.runs.require_run(run_id)
    checked = [e if isinstance(e, Expectation) else Expectation.model_validate(e)
               for e in expectations] or [Expectation(kind="unchanged")]
    _check_possible(storage, run_id, checked)
    record = PinRecord(run_id=run_id, expectations=checked, note=note, at=at or utc_now())
    _write(storage, name, record)
    return record


def _check_possible(storage: Storage, run_id: str, wanted: Sequence[Expectation]) -> None:
    """InvalidInputError for expectations no answer could meet: about the answer of a
    run that has none (it failed), a message that is not stored, a text both required
    and refused."""
    if any(e.kind in _ABOUT_ANSWER for e in wanted) and load_run(storage, run_id).answer is None:
        raise InvalidInputError(f"run '{run_id}' has no answer (it failed): pin what it "
                                "must recall or its token limit, not its answer")
    for e in wanted:
        if e.kind != "recalled" or e.ref is None:
            continue
        found = storage.memory.get_messages_by_refs([(e.ref[0], e.ref[1])])
        if not found:
            raise InvalidInputError(f"message {e.ref[0]}:{e.ref[1]} is not stored")
        started = load_run(storage, run_id).run.started_at
        if found[0].created_at > started:
            # (a run is composed again as of its time: what came later never reaches it)
            raise InvalidInputError(
                f"message {e.ref[0]}:{e.ref[1]} was written after run '{run_id}' started "
                f"({found[0].created_at.isoformat()} > {started.isoformat()}): no setting "
                "lets that run recall it")
    required = {e.text.casefold() for e in wanted if e.kind == "contains" and e.text}
    both = [e.text for e in wanted if e.kind == "not_contains" and e.text
            and e.text.casefold() in required]
    if both:
        raise InvalidInputError(f"the answer cannot both contain and not contain {both[0]!r}")


_ABOUT_ANSWER = ("contains", "not_contains", "unchanged")


def recorded_checks(storage: Storage, pin: PinRecord) -> list[Check]:
    """A pin's expectations checked against the run as recorded (what ``regress``
    without settings says of it): ``memwb pin`` says which already fail."""
    data = load_run(storage, pin.run_id)
    return [Check(suite="", run_id=pin.run_id, expectation=e, outcome=outcome,  # type: ignore[arg-type]
                  seen=seen) for e in pin.expectations
            for outcome, seen in [_check(e, data, None, storage)]]


def unpin_run(storage: Storage, name: str, run_id: str) -> None:
    """Take ``run_id`` out of suite ``name``; NotFoundError when it is not in it."""
    check_suite_name(name)
    if not any(p.run_id == run_id for p in pins_of(storage, name)):
        raise NotFoundError(f"run '{run_id}' is not pinned to suite '{name}'")
    _write(storage, name, PinRecord(run_id=run_id, removed=True, at=utc_now()))


# -- checking ----------------------------------------------------------------------------
class Check(BaseModel):
    """One expectation of one pinned run, checked."""

    model_config = ConfigDict(extra="forbid")
    suite: str
    run_id: str
    expectation: Expectation
    outcome: Literal["passed", "failed", "error"]
    seen: str  # what was found, in words
    note: str | None = None  # why the run was pinned (``memwb pin --note``)


class RegressReport(BaseModel):
    model_config = ConfigDict(extra="forbid")
    changes: dict[str, Any]
    checks: list[Check] = Field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(c.outcome == "passed" for c in self.checks)

    def count(self, outcome: str) -> int:
        return sum(1 for c in self.checks if c.outcome == outcome)

    @property
    def sentence(self) -> str:
        what = ", ".join(f"{k} = {v}" for k, v in self.changes.items()) or "the recorded settings"
        runs = len({(c.suite, c.run_id) for c in self.checks})
        return (f"With {what}: {self.count('passed')} of {len(self.checks)} expectations "
                f"held over {runs} pinned run{'s' if runs != 1 else ''}"
                + (f"; {self.count('failed')} failed" if self.count("failed") else "")
                + (f"; {self.count('error')} could not be checked"
                   if self.count("error") else "") + ".")


def _needs_answer(pin: PinRecord) -> bool:
    return any(e.kind in _ABOUT_ANSWER for e in pin.expectations)


def _check(exp: Expectation, data: RunData, run: RunWhatIf | None,
           storage: Storage) -> tuple[str, str]:
    """(outcome, what was seen) of one expectation; ``run`` is the what-if of the run
    (None: the recorded run is checked as it is). What an erasure took cannot be
    checked: neither a pass nor a regression."""
    if run is not None and run.status == "cannot":
        return "error", f"cannot be re-composed: {run.reason}"
    changed = run is not None and run.status == "changed"
    prompt = run.prompt_after if changed and run is not None else data.prompt
    if exp.kind == "recalled":
        assert exp.ref is not None
        ref = (exp.ref[0], exp.ref[1])
        if not storage.memory.get_messages_by_refs([ref]):
            return "error", f"{ref[0]}#{ref[1]} was erased: cannot be checked"
        got = any(i.lane == "recalled" and (i.thread_id, i.seq) == ref
                  for i in (prompt.items if prompt else []))
        return ("passed" if got else "failed",
                f"{ref[0]}#{ref[1]} {'is' if got else 'is not'} in the recalled lane")
    if exp.kind == "max_tokens":
        assert exp.tokens is not None
        tokens = (run.tokens_after if changed and run is not None
                  else data.memctx.tokens if data.memctx else None)
        if tokens is None:
            return "error", "the run recorded no token counts"
        total = sum(tokens.model_dump().values())
        return ("passed" if total <= exp.tokens else "failed", f"the prompt has {total} tokens")
    # the answer: the recorded one, or the re-asked one when the prompt changed
    if changed and run is not None:
        if run.answer is None:
            return "error", f"the changed prompt could not be re-asked: {run.ask_error}"
        answer, verdict = run.answer.new_answer, run.answer.verdict
    else:
        answer, verdict = data.answer or "", "unchanged"
    if REDACTED in answer:
        return "error", "the answer was erased: cannot be checked"
    if exp.kind == "unchanged":
        return ("passed" if verdict == "unchanged" else "failed",
                f"the answer is {verdict}" + (f": “{answer}”" if verdict != "unchanged" else ""))
    assert exp.text is not None
    has = exp.text.casefold() in answer.casefold()
    ok = has if exp.kind == "contains" else not has
    return "passed" if ok else "failed", f"the answer: “{answer}”"


def run_suites(storage: Storage, names: Iterable[str] | None = None,
               changes: Changes | Iterable[str] | Mapping[str, Any] = (), *,
               model: Model | None = None, repeats: int | None = None,
               embed: Embedder | None = None, concurrency: int = 2) -> RegressReport:
    """Check the pinned runs of suites ``names`` (every suite when None) — as recorded,
    or, with ``changes``, re-composed as of their time under them and, where an
    expectation is about the answer and the prompt changed, re-asked (the run's own
    model unless ``model`` is given; journaled, so a second check asks nothing)."""
    if not isinstance(changes, Changes):
        changes = parse_changes(changes)
    # (a suite named twice is checked once)
    chosen = list(dict.fromkeys(names)) if names is not None else list_suites(storage)
    if not chosen:
        raise NotFoundError("no regression suite holds a pinned run; pin one first")
    pinned: list[tuple[str, PinRecord]] = []
    for name in chosen:
        pins = pins_of(storage, check_suite_name(name))
        if not pins:
            raise NotFoundError(f"suite '{name}' holds no pinned run")
        pinned += [(name, p) for p in pins]
    report = RegressReport(changes=changes.flat())
    recomposed: dict[str, RunWhatIf] = {}
    if changes.flat():
        ids = list(dict.fromkeys(p.run_id for _, p in pinned
                                 if storage.runs.get_run(p.run_id) is not None))
        asked = {p.run_id for _, p in pinned if _needs_answer(p)}
        if ids:
            first = what_if(storage, changes, run_ids=ids, embed=embed)
            recomposed = {r.run_id: r for r in first.runs}
            to_ask = [r for r in ids if r in asked and recomposed[r].status == "changed"]
            if to_ask:
                again = what_if(storage, changes, run_ids=to_ask, embed=embed, ask=True,
                                model=model, repeats=repeats, concurrency=concurrency)
                recomposed.update({r.run_id: r for r in again.runs})
    for name, pin in pinned:
        try:
            data = load_run(storage, pin.run_id)
        except NotFoundError:
            report.checks += [Check(suite=name, run_id=pin.run_id, expectation=e,
                                    outcome="error", seen="the run is no longer stored")
                              for e in pin.expectations]
            continue
        run = recomposed.get(pin.run_id) if changes.flat() else None
        for exp in pin.expectations:
            outcome, seen = _check(exp, data, run, storage)
            report.checks.append(Check(suite=name, run_id=pin.run_id, expectation=exp,
                                       outcome=outcome,  # type: ignore[arg-type]
                                       seen=seen, note=pin.note))
    return report


def expectation_from_text(kind: str, value: str | None = None) -> Expectation:
    """An expectation as the CLI writes it (``recalled`` takes ``THREAD:SEQ``,
    ``max_tokens`` a number); InvalidInputError naming what is wrong."""
    data: dict[str, Any] = {"kind": kind}
    if kind in ("contains", "not_contains"):
        data["text"] = value
    elif kind == "recalled":
        head, _, tail = (value or "").rpartition(":")
        if not head or not tail.isdigit() or len(tail) > 18:  # (a seq fits 64 bits)
            shown = value if len(value or "") < 80 else f"{(value or '')[:60]}…"
            raise InvalidInputError(f"a recalled message is THREAD:SEQ, got {shown!r}")
        data["ref"] = (head, int(tail))
    elif kind == "max_tokens":
        if value is None or not value.isdigit() or len(value) > 18:
            shown = value if len(value or "") < 80 else f"{(value or '')[:60]}…"
            raise InvalidInputError(f"max_tokens takes a whole number, got {shown!r}")
        data["tokens"] = int(value)
    try:
        return Expectation.model_validate(data)
    except ValidationError as e:  # its own words, not pydantic's link to its docs
        raise InvalidInputError(str(e.errors()[0]["msg"]).removeprefix("Value error, ")
                                ) from None
