""""Why did the model forget that?": the fate of one message in one run, with its
evidence and one plain sentence, and its lifeline across every run of its thread."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from memory_core.embedders import Embedder
from memory_core.errors import InvalidInputError, NotFoundError
from memory_core.journal import RunData, RunReader, load_run
from memory_core.provenance import Memctx, preview
from memory_core.registry import recall_config_from_settings, resolve_embedder
from memory_core.storage.base import Storage
from memory_core.text import STOP_WORDS, tokenize
from memory_core.types import StoredMessage

Fate = Literal[
    "recalled", "recent", "input", "below-threshold", "beyond-top-k", "filtered-out",
    "out-of-scope", "recall-off", "recall-skipped", "dropped", "trimmed-by-token-limit",
    "compacted", "written-after", "no-text", "not-stored", "unexplained",
    # imported runs: only what the recorded request shows (docs/capture.md)
    "sent-by-client", "not-sent-by-client", "unknown"]

#: fates in which the message reached the model
GIVEN_FATES = frozenset({"recalled", "recent", "input", "sent-by-client"})


class Explanation(BaseModel):
    """The fate of a message in a run: a structured reason plus a plain sentence."""

    model_config = ConfigDict(extra="forbid")
    run_id: str
    fate: Fate
    reached_model: bool
    thread_id: str | None = None
    seq: int | None = None
    role: str | None = None
    preview: str | None = None
    evidence: dict[str, Any] = Field(default_factory=dict)
    sentence: str
    other_matches: list[tuple[str, int]] = Field(default_factory=list)


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def _find_by_text(storage: Storage, data: RunData, text: str) -> tuple[
        StoredMessage | None, list[StoredMessage]]:
    """Messages containing ``text`` (case-insensitive): the run's own thread first, then
    the run's resource, then anywhere; written-before-the-run ones preferred."""
    needle = " ".join(text.split())
    if not needle:
        raise InvalidInputError("the text to look for is empty")
    run = data.run

    def written_before(ms: list[StoredMessage]) -> list[StoredMessage]:
        return [m for m in ms if m.run_id != run.run_id and m.created_at <= run.started_at]

    found: list[StoredMessage] = []
    # widen the search while only later echoes of the phrase turn up (a later run's
    # answer quoting it must not hide the message the run could have been given)
    for where in ({"thread_id": run.thread_id} if run.thread_id else None,
                  {"resource_id": run.resource_id} if run.resource_id else None, {}):
        if where is None:
            continue
        hits = storage.memory.search_messages(needle, limit=200, **where)
        found += [m for m in hits if (m.thread_id, m.seq) not in
                  {(f.thread_id, f.seq) for f in found}]
        if written_before(found):
            break
    if not found:
        return None, []
    before = written_before(found)
    chosen = (before or found)[0]
    return chosen, [m for m in found if (m.thread_id, m.seq) != (chosen.thread_id, chosen.seq)]


def _fact_survives(fact: str, text: str) -> tuple[bool, float]:
    """Whether an observation text still carries a fact: the exact phrase, or most of
    its content words (numbers and rare words weigh the same as the rest)."""
    if " ".join(fact.lower().split()) in " ".join(text.lower().split()):
        return True, 1.0
    ft = [t for t in tokenize(fact) if t not in STOP_WORDS]
    if not ft:
        return False, 0.0
    tt = set(tokenize(text))
    cov = sum(1 for t in ft if t in tt) / len(ft)
    return cov >= 0.7, round(cov, 3)


class _Out(Protocol):
    def __call__(self, fate: Fate, sentence: str, **evidence: Any) -> Explanation: ...


def explain_message(storage: Storage, data: RunData, msg: StoredMessage, *,
                    fact: str | None = None, embed: Embedder | None = None) -> Explanation:
    """The fate of a stored message in an already loaded run."""
    run, memctx = data.run, data.memctx
    ref = (msg.thread_id, msg.seq)
    pv = preview(msg)

    def out(fate: Fate, sentence: str, **evidence: Any) -> Explanation:
        return Explanation(run_id=run.run_id, thread_id=msg.thread_id, seq=msg.seq,
                           role=msg.role, preview=pv, fate=fate,
                           reached_model=fate in GIVEN_FATES, sentence=sentence,
                           evidence=evidence)

    by_lane: dict[tuple[str, int], str] = {}
    for it in data.prompt.items:
        if it.thread_id is not None and it.seq is not None:
            by_lane.setdefault((it.thread_id, it.seq), it.lane)
    lane = by_lane.get(ref)
    if memctx is not None and memctx.imported:
        return _explain_imported(data, msg, lane, out)
    if memctx is None:
        if lane:
            return out("recent" if lane != "recalled" else "recalled",
                       f"The assistant was given this message (in the {lane} part of the "
                       "prompt).", lane=lane)
        return out("unexplained", "This run has no provenance record, so only its frozen "
                   "prompt can be checked: the message is not in it.")
    given = _explain_given(memctx, ref, lane, out)
    if given is not None:
        return given
    if lane == "input" or (msg.run_id == run.run_id and msg.role == "user"):
        return out("input", "This is the question the assistant was answering in this run.")
    snap = memctx.scope_snapshot.get(msg.thread_id)
    if (msg.run_id == run.run_id or (snap is not None and msg.seq > snap)
            or msg.created_at > run.started_at):
        return out("written-after", "This message did not exist yet: it was written after "
                   "this run started, so the assistant could not have seen it.",
                   created_at=msg.created_at.isoformat(), run_started_at=run.started_at.isoformat())
    found = (_explain_dropped(memctx, ref, out)
             or _explain_compacted(storage, data, msg, fact, out)
             or _explain_unseen(storage, data, msg, out))
    if found is not None:
        return found
    return _explain_by_score(storage, data, msg, embed, out)


def _explain_given(memctx: Memctx, ref: tuple[str, int], lane: str | None,
                   out: _Out) -> Explanation | None:
    """The message was in the prompt (recalled or recent): how it got there."""
    if lane == "recalled":
        r = next((r for r in memctx.recalled if (r.thread_id, r.seq) == ref), None)
        rc = recall_config_from_settings(memctx.settings)
        if r is not None and r.origin == "repair":
            return out("recalled", "The assistant was given this message: it was pulled in "
                       "to complete a recalled tool call with its result.", origin="repair")
        if r is not None and r.origin == "neighbour":
            return out("recalled", "The assistant was given this message: it sits next to a "
                       "recalled message and came along as context.", origin="neighbour")
        return out("recalled",
                   f"The assistant was given this message: recall ranked it "
                   f"#{r.rank if r else '?'} with a similarity of {_fmt(r.score if r else None)}"
                   f" (the bar was {_fmt(rc.threshold)}, top {rc.top_k} were kept).",
                   rank=r.rank if r else None, score=r.score if r else None,
                   threshold=rc.threshold, top_k=rc.top_k, origin=r.origin if r else None)
    if lane == "recent":
        return out("recent", f"The assistant was given this message: it was among the last "
                   f"{memctx.recent_count} messages of the conversation, which are always "
                   "included.", recent_count=memctx.recent_count)
    return None


def _explain_dropped(memctx: Memctx, ref: tuple[str, int], out: _Out) -> Explanation | None:
    """Recall or the window found it, but composition (or a processor) left it out."""
    for d in memctx.dropped:
        if (d.thread_id, d.seq) == ref:
            why = {"unanswered-tool-call": "it is a tool call whose result was never stored, "
                   "and a call without its result would make the model provider reject the "
                   "whole prompt",
                   "orphan-tool-result": "it is a tool result whose call was not in the "
                   "prompt, and a result without its call would make the model provider "
                   "reject the whole prompt",
                   "duplicate-tool-call-id": "the same tool call was already in the prompt, "
                   "and a repeated call id would make the prompt invalid",
                   "tool-call-filter": "the tool-call filter removes tool exchanges from "
                   "the prompt"}.get(
                       d.reason or "", f"of {d.reason}")
            found = ("It was among the most recent messages" if d.lane == "recent"
                     else "Recall found this message")
            if d.reason == "token-limit":
                limit = next((p.get("limit") for p in memctx.settings.processors
                              if p.get("name") == "token-limiter"), None)
                return out("trimmed-by-token-limit", f"{found}, but the token limiter "
                           f"removed it: the prompt was over its budget of {limit} tokens "
                           f"and the {d.lane or 'recalled'} lane gave way.",
                           reason=d.reason, lane=d.lane or "recalled", token_budget=limit)
            return out("dropped", f"{found}, but it was left out because {why}.",
                       reason=d.reason, lane=d.lane or "recalled")
    return None


def _explain_compacted(storage: Storage, data: RunData, msg: StoredMessage,
                       fact: str | None, out: _Out) -> Explanation | None:
    """Observational memory condensed it before the run."""
    run, memctx = data.run, data.memctx
    assert memctx is not None
    if msg.thread_id == run.thread_id:
        for o in memctx.observations:
            if o.from_seq is not None and o.to_seq is not None and o.from_seq <= msg.seq <= o.to_seq:
                obs_text = next((it.message.text() or "" for it in data.prompt.items
                                 if it.lane == "observations"), "")
                full = _observation_text(storage, msg.thread_id, o.id) or obs_text
                survives, cov = _fact_survives(fact or (msg.text() or preview(msg)), full)
                tail = ("the summary still mentions it" if survives else
                        "the summary no longer mentions it")
                return out("compacted", f"Before this run, this message was condensed into "
                           f"observation {o.id} (messages {o.from_seq}–{o.to_seq}); {tail}.",
                           observation_id=o.id, from_seq=o.from_seq, to_seq=o.to_seq,
                           fact_survives=survives, coverage=cov)
    return None


def _explain_unseen(storage: Storage, data: RunData, msg: StoredMessage,
                    out: _Out) -> Explanation | None:
    """Why recall could not have found it at all (no text, scope, recall off or skipped);
    None when recall ran over it (its score decides)."""
    run, memctx = data.run, data.memctx
    assert memctx is not None
    if msg.text() is None:
        return out("no-text", "This message is a pure tool call or tool result with no text, "
                   "so recall cannot match it by meaning; it only reaches the assistant inside "
                   "the recent window or paired with a recalled call.")
    s = memctx.settings
    thread = storage.memory.get_thread(msg.thread_id)
    msg_resource = thread.resource_id if thread else msg.resource_id
    if msg_resource != run.resource_id and msg.thread_id != run.thread_id:
        return out("out-of-scope", f"The assistant never saw this message: it belongs to "
                   f"another owner ({msg_resource or 'none'}), and recall only searches the "
                   f"conversations of {run.resource_id or 'the current thread'}.",
                   scope="other-resource", message_resource=msg_resource,
                   run_resource=run.resource_id)
    if not s.recall_enabled:
        return out("recall-off", f"Recall was off for this run, and this message was older "
                   f"than the {s.recent_n} most recent messages the assistant always sees.",
                   recent_n=s.recent_n)
    scope = recall_config_from_settings(s).scope
    if (msg.thread_id != run.thread_id and (scope == "thread" or not run.resource_id)):
        return out("out-of-scope", f"The assistant never saw this message: it is in another "
                   f"conversation ({msg.thread_id}), and recall was limited to the current "
                   "conversation (thread scope).", scope="other-thread")
    if memctx.recall_skipped or not memctx.query:
        why = memctx.recall_skipped or "no query"
        return out("recall-skipped", f"Recall did not run for this run ({why}), and the "
                   "message was outside the recent window.", reason=why)
    return None


def _explain_imported(data: RunData, msg: StoredMessage, lane: str | None,
                      out: _Out) -> Explanation:
    """An imported run's record holds the request the client sent, not how its memory
    chose it: every sentence says what the recording shows and nothing it lacks."""
    items = data.prompt.items
    n = len(items)
    if not items:
        return out("unknown", "This recording does not show what the client sent in this "
                   "request, so whether this message was in it is unknown.")
    unknown = ("this recording does not say whether memory recalled anything or how the "
               "client chose what to send")
    if lane is not None:
        return out("sent-by-client", f"The client sent this message in this request: it is "
                   f"one of the {n} messages the recorded request carried ({unknown}).",
                   lane=lane, sent=n)
    if msg.run_id == data.run.run_id:
        return out("written-after", "This is the answer recorded for this request, so it "
                   "was written after the request was sent.", sent=n)
    tail = f"{unknown}; the client sent these {n} messages, and this was not one of them"
    if msg.thread_id != data.run.thread_id:
        return out("not-sent-by-client", f"The client did not send this message in this "
                   f"request (it is in another conversation, {msg.thread_id}): {tail}.",
                   sent=n, scope="other-thread")
    last = max((it.seq for it in items if it.thread_id == msg.thread_id
                and it.seq is not None), default=None)
    if last is not None and msg.seq > last:
        return out("not-sent-by-client", f"The client did not send this message in this "
                   f"request: it comes later in the conversation than everything the request "
                   f"carried (#{msg.seq} after #{last}).", sent=n, last_sent_seq=last)
    return out("not-sent-by-client", f"The client did not send this message in this "
               f"request: {tail}.", sent=n)


def _observation_text(storage: Storage, thread_id: str, obs_id: str) -> str | None:
    for o in storage.memory.list_observations(thread_id):
        if o.id == obs_id:
            return o.text
    return None


def _explain_by_score(storage: Storage, data: RunData, msg: StoredMessage,
                      embed: Embedder | None, out: _Out) -> Explanation:
    from memory_core.recall import RecallEngine

    memctx = data.memctx
    assert memctx is not None
    config = recall_config_from_settings(memctx.settings)
    engine = RecallEngine(storage.memory, resolve_embedder(memctx.settings, embed))
    scores = engine.score_all(memctx.query or "", thread_id=data.run.thread_id or msg.thread_id,
                              resource_id=data.run.resource_id, config=config,
                              as_of=memctx.scope_snapshot or None)
    cand = next((c for c in scores if (c.thread_id, c.seq) == (msg.thread_id, msg.seq)), None)
    q = memctx.query or ""
    if cand is None:
        return out("unexplained", "Recall did not consider this message at all (it has no "
                   "stored vector), so it could not be recalled.")
    if cand.filter_clause:
        return out("filtered-out", f"The assistant never saw this message: the recall filter "
                   f"excluded it ({cand.filter_clause} did not hold for its metadata).",
                   filter_clause=cand.filter_clause, filter=config.filter, score=cand.score)
    ev = {"score": cand.score, "vector_score": cand.vector_score,
          "lexical_score": cand.lexical_score, "threshold": config.threshold,
          "top_k": config.top_k, "rank": cand.rank, "query": q, "mode": config.mode}
    if not cand.eligible:
        return out("below-threshold", f"The assistant never saw this message: recall scored "
                   f"it {_fmt(cand.vector_score if cand.vector_score is not None else cand.score)}"
                   f" against the question, below the bar of {_fmt(config.threshold)} a message "
                   "must reach to be recalled.", **ev)
    if cand.rank is not None and config.top_k is not None and cand.rank > config.top_k:
        return out("beyond-top-k", f"The assistant never saw this message: it scored "
                   f"{_fmt(cand.score)}, enough to qualify, but ranked #{cand.rank} and only the "
                   f"top {config.top_k} are passed on.", **ev)
    return out("unexplained", f"Recall ranked this message #{cand.rank} with "
               f"{_fmt(cand.score)}, yet it is not in the prompt; the record does not say why.",
               **ev)


def why_forgotten(storage: Storage, run_id: str, target: tuple[str, int] | str, *,
                  embed: Embedder | None = None) -> Explanation:
    """Explain the fate of ``target`` — a ``(thread_id, seq)`` ref or a text to look for —
    in run ``run_id``. Unknown runs and refs raise NotFoundError."""
    data = load_run(storage, run_id)
    if isinstance(target, str):
        msg, others = _find_by_text(storage, data, target)
        if msg is None:
            return Explanation(run_id=run_id, fate="not-stored", reached_model=False,
                               sentence=f"No stored message contains “{target}”, so the "
                               "assistant could not have been given it: it was never said, or "
                               "it was erased.", evidence={"text": target})
        exp = explain_message(storage, data, msg, fact=target, embed=embed)
        return exp.model_copy(update={"other_matches": [(m.thread_id, m.seq) for m in others]})
    if (not isinstance(target, tuple | list) or len(target) != 2
            or not isinstance(target[1], int)):
        raise InvalidInputError(f"target must be (thread_id, seq) or a text, got {target!r}")
    tid, seq = str(target[0]), int(target[1])
    if storage.memory.get_thread(tid) is None:
        raise NotFoundError(f"thread '{tid}' does not exist")
    msgs = storage.memory.get_messages(tid, seqs=[seq])
    if not msgs:
        raise NotFoundError(f"message {tid}#{seq} does not exist")
    return explain_message(storage, data, msgs[0], embed=embed)


class LifelinePoint(BaseModel):
    model_config = ConfigDict(extra="forbid")
    run_id: str
    started_at: str
    fate: Fate
    reached_model: bool
    sentence: str
    evidence: dict[str, Any] = Field(default_factory=dict)


def lifeline(storage: Storage, thread_id: str, seq: int, *,
             embed: Embedder | None = None,
             run_ids: Sequence[str] | None = None,
             runs_of: str | None = None) -> list[LifelinePoint]:
    """The fate of one message across every run of its thread, in run order (recent →
    left the window → recalled → compacted …), for the timeline view. ``runs_of``
    follows the runs of another thread instead (a message recalled across threads)."""
    if storage.memory.get_thread(thread_id) is None:
        raise NotFoundError(f"thread '{thread_id}' does not exist")
    msgs = storage.memory.get_messages(thread_id, seqs=[seq])
    if not msgs:
        raise NotFoundError(f"message {thread_id}#{seq} does not exist")
    if runs_of is not None and storage.memory.get_thread(runs_of) is None:
        raise NotFoundError(f"thread '{runs_of}' does not exist")
    followed = runs_of or thread_id
    runs = storage.runs.list_runs(thread_id=followed)
    if run_ids is not None:
        wanted = set(run_ids)
        unknown = sorted(wanted - {r.run_id for r in runs})
        if unknown:
            raise NotFoundError(f"no run {', '.join(repr(u) for u in unknown)} "
                                f"of thread '{followed}'")
        runs = [r for r in runs if r.run_id in wanted]
    points = []
    for r in runs:
        # a fate needs the run's prompt and provenance only: two point reads per run
        # (a whole journal listing costs ~20x one on a large file)
        reader = RunReader(storage.runs, r.run_id)
        prompt = reader.prompt()
        if prompt is None:
            continue  # a run that crashed before freezing its prompt
        data = RunData(run=r, prompt=prompt, memctx=reader.memctx())
        e = explain_message(storage, data, msgs[0], embed=embed)
        points.append(LifelinePoint(run_id=r.run_id, started_at=r.started_at.isoformat(),
                                    fate=e.fate, reached_model=e.reached_model,
                                    sentence=e.sentence, evidence=e.evidence))
    return points
