"""The fate of one stored message in one run — recalled, in the window, below the
threshold, dropped for a tool pair, trimmed by the token limiter … — with every rule that
kept it out, its evidence and one plain sentence (``explain_message``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from memory_core.analysis.fate_rules import (
    Rule,
    RunScores,
    let_in,
    pair_rule,
    recall_rules,
    recorded_recall_rules,
    token_rule,
)
from memory_core.analysis.parts import (
    conversation,
    message_parts,
    normalise,
)
from memory_core.analysis.wording import score_text
from memory_core.embedding.hashing import Embedder
from memory_core.journal import RunData
from memory_core.provenance.record import Memctx
from memory_core.runs.registry import recall_config_from_settings
from memory_core.storage.base import Storage
from memory_core.text import STOP_WORDS, preview, tokenize
from memory_core.types import Message, StoredMessage

Fate = Literal[
    "recalled", "recent", "input", "below-threshold", "beyond-top-k", "filtered-out",
    "out-of-scope", "recall-off", "recall-skipped", "dropped", "trimmed-by-token-limit",
    "compacted", "written-after", "no-text", "not-stored", "unexplained",
    # imported runs: only what the recorded request shows (docs/capture.md)
    "sent-by-client", "held-by-server", "not-sent-by-client", "unknown",
    # given during the run: a tool call and its result, passed back at a later step
    "earlier-step",
    # a phrase found in a part of the prompt that is no stored message, or in the
    # definition of a tool the model was offered
    "instructions", "working-memory", "observations", "tool-definition"]

#: fates in which the message (or the part) reached the model
GIVEN_FATES = frozenset({"recalled", "recent", "input", "sent-by-client", "held-by-server",
                         "earlier-step", "instructions", "working-memory", "observations",
                         "tool-definition"})


class Explanation(BaseModel):
    """The fate of a message in a run: a structured reason plus a plain sentence.
    ``rules`` are every rule of composition that kept it out, in the order composition
    applied them (``analysis.fate_rules``), each with what would have let it past;
    ``fate`` is the first (empty for a message given to the model, or kept out by no
    rule a setting names: out of scope, recall off …)."""

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
    rules: list[Rule] = Field(default_factory=list)

    @property
    def named(self) -> str:
        """Every rule that kept the message out, by name, in composition's order
        ("below-threshold + beyond-top-k"); the fate alone when no rule did."""
        return " + ".join(dict.fromkeys(r.rule for r in self.rules)) or self.fate

    @property
    def let_in(self) -> str | None:
        """What would have let the message in, every rule's change joined; None when
        no rule kept it out, or one no setting lifts did."""
        return let_in(self.rules)


def _fmt(x: float | None) -> str:
    return score_text(x)


def _exact_hits(storage: Storage, data: RunData, needle: str) -> list[StoredMessage]:
    """Messages containing ``needle`` word for word (case-insensitive): the run's own
    thread first, then the run's resource, then anywhere; the search widens while only
    later echoes of the phrase turn up (a later run's answer quoting it must not hide the
    message the run could have been given)."""
    run = data.run
    found: list[StoredMessage] = []
    for where in ({"thread_id": run.thread_id} if run.thread_id else None,
                  {"resource_id": run.resource_id} if run.resource_id else None, {}):
        if where is None:
            continue
        hits = storage.memory.search_messages(needle, limit=200, **where)
        seen = {(f.thread_id, f.seq) for f in found}
        found += [m for m in hits if (m.thread_id, m.seq) not in seen]
        if any(_written_before(m, data) for m in found):
            break
    return found


def _written_before(msg: StoredMessage, data: RunData) -> bool:
    """Whether the run could have been given ``msg`` (it existed when the run started)."""
    return msg.run_id != data.run.run_id and msg.created_at <= data.run.started_at


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
    def __call__(self, fate: Fate, sentence: str, *, rules: Sequence[Rule] = (),
                 **evidence: Any) -> Explanation: ...


def explain_message(storage: Storage, data: RunData, msg: StoredMessage, *,
                    fact: str | None = None, embed: Embedder | None = None,
                    rescore: bool = True, scores: RunScores | None = None) -> Explanation:
    """The fate of a stored message in an already loaded run. Where only recall's scores
    can tell (the filter, the threshold, top-k), ``rescore`` scores the run's scope
    again with its embedder (``scores``: a scoring of this run to reuse); without it the
    run's recorded near misses tell, and a message not among them is ``unexplained``
    (no embedding model is loaded)."""
    run, memctx = data.run, data.memctx
    ref = (msg.thread_id, msg.seq)
    pv = preview(msg)

    def out(fate: Fate, sentence: str, *, rules: Sequence[Rule] = (),
            **evidence: Any) -> Explanation:
        return Explanation(run_id=run.run_id, thread_id=msg.thread_id, seq=msg.seq,
                           role=msg.role, preview=pv, fate=fate,
                           reached_model=fate in GIVEN_FATES, sentence=sentence,
                           evidence=evidence, rules=list(rules))

    by_lane = data.prompt_lanes()  # the input by persist:input (loaded runs have it)
    lane = by_lane.get(ref)
    if lane is None and msg.run_id == run.run_id:
        step = next((g for m, g, r in conversation(data) if r == ref), None)
        if step is not None:  # the run's own tool call or result, given to a later step
            return out("earlier-step", _step_sentence(msg, step), step=step)
    if memctx is not None and memctx.imported:
        return _explain_imported(data, msg, by_lane, out, fact)
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
    found = (_explain_dropped(storage, memctx, msg, out)
             or _explain_compacted(storage, data, msg, fact, out)
             or _explain_unseen(storage, data, msg, out))
    if found is not None:
        return found
    if not rescore:
        return _explain_near_miss(memctx, ref, out) or out(
            "unexplained", "Recall ran, but this message was not among the closest matches "
            "the run recorded, so it was not passed on.", near_misses=len(memctx.near_misses))
    return _explain_by_score(scores or RunScores(storage, data, embed), msg, out)


def _step_sentence(msg: Message, step: int) -> str:
    """Why a message the run's own steps added reached the model (at ``step``)."""
    head = "The assistant was given this message during this run: "
    results, calls = msg.tool_results(), msg.tool_calls()
    if results:
        r = results[0]
        return (f"{head}it is the result of its call to tool {r.name} (call {r.call_id}), "
                f"passed back to the model at step {step}, before it answered.")
    if calls:
        c = calls[0]
        return (f"{head}it is its own call to tool {c.name} (call {c.id}), passed back to "
                f"the model with the call's result at step {step}.")
    return (f"{head}the model wrote it at an earlier step and was given it back at step "
            f"{step}.")


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
        # hybrid recall ranks by a fused score; its bar is on the similarity (the cosine)
        fused = rc.mode == "hybrid" and r is not None and r.vector_score is not None
        scored = (f"a fused score of {_fmt(r.score)}, a similarity of "
                  f"{_fmt(r.vector_score)}" if fused and r is not None
                  else f"a similarity of {_fmt(r.score if r else None)}")
        return out("recalled",
                   f"The assistant was given this message: recall ranked it "
                   f"#{r.rank if r else '?'} with {scored} (the bar"
                   + (", on the similarity," if fused else "")
                   + f" was {_fmt(rc.threshold)}, top {rc.top_k} were kept).",
                   rank=r.rank if r else None, score=r.score if r else None,
                   threshold=rc.threshold, top_k=rc.top_k, origin=r.origin if r else None)
    if lane == "recent":
        # with observational memory the window is every message not yet condensed into
        # an observation, not the last recent_n
        kept = ("messages of the conversation not yet condensed into observations"
                if memctx.settings.observational and memctx.observations else
                "messages of the conversation")
        return out("recent", f"The assistant was given this message: it was among the last "
                   f"{memctx.recent_count} {kept}, which are always included.",
                   recent_count=memctx.recent_count)
    return None


def _explain_dropped(storage: Storage, memctx: Memctx, msg: StoredMessage,
                     out: _Out) -> Explanation | None:
    """Recall or the window found it, but composition (or a processor) left it out."""
    ref = (msg.thread_id, msg.seq)
    # hybrid recall ranks by a fused score (reciprocal ranks summed), not a similarity
    score = "fused score" if recall_config_from_settings(memctx.settings).mode == "hybrid" \
        else "score"
    for d in memctx.dropped:
        if (d.thread_id, d.seq) == ref:
            found = ("It was among the most recent messages" if d.lane == "recent"
                     else "Recall found this message" + (
                         f" (rank {d.rank}, {score} {_fmt(d.score)})" if d.rank is not None
                         else ""))
            if d.reason == "token-limit":
                rule = token_rule(memctx, ref, _unit_before(storage, memctx, msg))
                return out("trimmed-by-token-limit", f"{found}, but the token limiter "
                           f"removed it: the prompt was over its budget of {rule.value} "
                           f"tokens and the {d.lane or 'recalled'} lane gave way. "
                           f"{_would(rule)}", rules=[rule], reason=d.reason,
                           lane=d.lane or "recalled", token_budget=rule.value)
            rule = pair_rule(d.reason)
            return out("dropped", f"{found}, but it was left out because {rule.said}. "
                       f"{_would(rule)}", rules=[rule], reason=d.reason,
                       lane=d.lane or "recalled")
    for p in memctx.processed:
        if (p.thread_id, p.seq) == ref and p.action == "removed":
            if p.processor == "token-limiter":
                rule = token_rule(memctx, ref, _unit_before(storage, memctx, msg))
                return out("trimmed-by-token-limit", "It was on its way into the prompt, but "
                           "the token limiter removed it to keep the prompt under its "
                           f"budget. {_would(rule)}", rules=[rule], reason="token-limit",
                           lane=p.lane, processor=p.processor)
            return out("dropped", f"It was on its way into the prompt, but the {p.processor} "
                       f"processor removed it ({p.reason}).", reason=p.reason, lane=p.lane,
                       processor=p.processor,
                       rules=[Rule(rule="dropped", said=f"the {p.processor} processor "
                                   f"removed it ({p.reason})")])
    return None


def _unit_before(storage: Storage, memctx: Memctx, msg: StoredMessage) -> list[tuple[str, int]]:
    """The rows the token limiter removed with a tool result as one unit: its call (and
    the call's other results)."""
    ids = {r.call_id for r in msg.tool_results()}
    if not ids or msg.tool_calls():
        return []
    refs = [(p.thread_id, p.seq) for p in memctx.processed
            if p.thread_id is not None and p.seq is not None
            and (p.thread_id, p.seq) != (msg.thread_id, msg.seq)]
    return [m.ref for m in storage.memory.get_messages_by_refs(refs)
            if {c.id for c in m.tool_calls()} & ids
            or {r.call_id for r in m.tool_results()} & ids]


def _would(rule: Rule) -> str:
    """What would have let a message past one rule, as a sentence."""
    if rule.admits is None:
        return "No setting would have let it in."
    return f"It would have been given to the model with {rule.admits}."


def _no_place(rule: Rule, rank: int | None) -> str:
    """For a top-k rule whose needed top-k is under the rank: the messages ranked ahead
    that recall passed over (already in the prompt, a repeat of the question) — why
    "ranked #52" is let in by "a top-k of 49"."""
    if not isinstance(rule.needed, int) or rank is None or rule.needed >= rank:
        return ""
    ahead = rank - rule.needed
    return (f" ({ahead} of the messages ranked ahead of it {'was' if ahead == 1 else 'were'}"
            " already in the prompt and took no place)")


def _recall_sentence(rules: list[Rule], *, score: float | None, rank: int | None,
                     top_k: int, hybrid: tuple[float | None, float | None] | None = None
                     ) -> str:
    """The recall rules that kept a message out, in the order recall applied them, and
    what would have let it in. ``hybrid``: the message's similarity and word score in a
    hybrid recall, which takes a message at the bar or sharing a word with the question
    and ranks by a fused score (``score``)."""
    parts: list[str] = []
    for i, r in enumerate(rules):
        if r.rule == "filtered-out":
            parts.append("the recall filter excluded it " + r.said.removeprefix("filtered out "))
        elif r.rule == "below-threshold" and r.setting is None:
            parts.append(r.said)  # lexical recall: no word shared
        elif r.rule == "below-threshold" and hybrid is not None:
            head = "it shares no word with the question, and its similarity " \
                if i == 0 else "it also shares no word with the question, and its similarity "
            parts.append(head + ("could not be told (it has no vector)" if hybrid[0] is None
                                 else f"{_fmt(hybrid[0])} is below the bar of "
                                      f"{_fmt(r.value)}"))
        elif r.rule == "below-threshold":
            head = "recall scored it" if i == 0 else "it also scored"
            parts.append(f"{head} {_fmt(score)} against the question, below the bar of "
                         f"{_fmt(r.value)} a message must reach to be recalled")
        elif i == 0 and hybrid is not None:
            why = ("it shares a word with the question" if (hybrid[1] or 0) > 0
                   else f"its similarity {_fmt(hybrid[0])} reaches the bar")
            parts.append(f"it qualified ({why}), but ranked #{rank} by its fused score "
                         f"{_fmt(score)} and only the top {top_k} are passed on"
                         + _no_place(r, rank))
        elif i == 0:
            parts.append(f"it scored {_fmt(score)}, enough to qualify, but ranked #{rank} "
                         f"and only the top {top_k} are passed on" + _no_place(r, rank))
        else:
            past = " and ".join(("without the filter" if p.rule == "filtered-out" else
                                 "with a lower bar") for p in rules[:i])
            before = r.needed - 1 if isinstance(r.needed, int) else None
            parts.append(f"even {past} it ranked #{rank}, while only the top {top_k} are "
                         "passed on" if before == (rank or 0) - 1 else
                         f"even {past}, {before} messages would have been recalled before "
                         f"it, while only the top {top_k} are passed on")
    text = parts[0] if len(parts) == 1 else "; ".join(parts[:-1]) + "; and " + parts[-1]
    lifted = let_in(rules)
    tail = (f" It would have been recalled with {lifted}." if lifted and len(rules) == 1
            else f" It would have been recalled only with {lifted}, together: "
                 f"{'either' if len(rules) == 2 else 'any one'} alone still leaves it out."
            if lifted else "")
    if any(r.rule == "below-threshold" and r.setting is not None and r.admits is None
           for r in rules):
        tail = (" No threshold would have let it in: a message must score above 0 to be "
                "recalled." if hybrid is None else
                " No threshold would have let it in: it would need a word of the question, "
                "or a similarity above 0.")
    return f"The assistant never saw this message: {text}.{tail}"


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
        if msg.thread_id != run.thread_id:  # no window holds another conversation's
            return out("recall-off", f"Recall was off for this run, and this message is in "
                       f"another conversation ({msg.thread_id}): only recall reaches beyond "
                       "the conversation the assistant is in.", recent_n=s.recent_n)
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


def _holds(m: Message, fact: str) -> bool:
    """Whether a part of ``m`` holds ``fact`` word for word (its text, a call's name or
    arguments, a result)."""
    said = normalise(fact)
    return any(said in normalise(p.text) or any(said in normalise(v) for v in p.leaves)
               for p in message_parts(m))


def _rewritten(sent: Message) -> str:
    """A message as a client sent it back rewritten, in a sentence: its calls alone, or
    its text's preview (with an ellipsis where the preview cuts it)."""
    text = " ".join((sent.text() or "").split())
    if not text:
        return "its tool calls alone, without its text"
    shown = preview(sent)
    return f"“{shown}{'…' if len(shown) < len(text) else ''}”"


def _sent_form(data: RunData, ref: tuple[str, int]) -> Message | None:
    """The message stored at ``ref`` as this run's request sent it (its prompt item)."""
    return next((it.message for it, r in zip(data.prompt.items, data.prompt_refs(),
                                             strict=True) if r == ref), None)


def _explain_imported(data: RunData, msg: StoredMessage, by_lane: dict[tuple[str, int], str],
                      out: _Out, fact: str | None = None) -> Explanation:
    """An imported run's record holds the request the client sent, not how its memory
    chose it: every sentence says what the recording shows and nothing it lacks."""
    items = data.prompt.items
    lane = by_lane.get((msg.thread_id, msg.seq))
    server = data.server_held()
    # what the request carried: its prompt's messages but the history the server held;
    # its instructions are said apart (Anthropic's and Gemini's requests send them
    # outside their messages, so "one of the 4 messages" counted one too many there)
    lo, hi = server[0]["prompt_messages"] if server is not None else (0, 0)
    carried = [it for i, it in enumerate(items) if not lo <= i < hi]
    beside = " beside its instructions" if any(it.lane == "instructions" for it in carried) \
        else ""
    n = sum(1 for it in carried if it.lane != "instructions")
    if not items:
        return out("unknown", "This recording does not show what the client sent in this "
                   "request, so whether this message was in it is unknown.")
    unknown = ("this recording does not say whether memory recalled anything or how the "
               "client chose what to send")
    if lane is not None:
        if server is not None and (msg.thread_id, msg.seq) in server[1]:
            held = server[0]
            return out("held-by-server", "The model was given this message, but the client "
                       "did not send it: the request referred to the conversation by "
                       f"{held['reference']}, whose history the server held, and this "
                       f"message is part of it, reconstructed from "
                       f"{held['reconstructed_from']} of the recording ({unknown}).",
                       lane=lane, sent=n, reference=held["reference"])
        which = "the one message" if n == 1 else f"one of the {n} messages"
        sent = _sent_form(data, (msg.thread_id, msg.seq)) if fact is not None else None
        if sent is not None and not _holds(sent, fact or "") and _holds(msg, fact or ""):
            # (an answer its client sends back rewritten: stored as recorded, sent
            # otherwise — crewAI drops the text before Bedrock's calls)
            by = f" as run {msg.run_id} recorded it" if msg.run_id else ""
            return out("not-sent-by-client", f"The client sent this message in this request, "
                       f"but not this text: the message is stored{by}, and this request "
                       f"sent it back as its client rewrote it ({_rewritten(sent)}).",
                       lane=lane, sent=n, sent_rewritten=True)
        return out("sent-by-client", f"The client sent this message in this request: it is "
                   f"{which} the recorded request carried{beside} ({unknown}).",
                   lane=lane, sent=n)
    if msg.run_id == data.run.run_id:
        return out("written-after", "This is the answer recorded for this request, so it "
                   "was written after the request was sent.", sent=n)
    if data.persist_output is not None and msg.thread_id == data.run.thread_id \
            and msg.seq in data.persist_output.seqs:
        # (a request the file recorded again, answered alike: its messages stored once;
        # or a later request that sent it back, imported first)
        same = (f"the same as run {msg.run_id}'s and stored once" if msg.run_id else
                "stored once, as a later request of the conversation sent it back")
        said = f"This is the answer recorded for this request, {same}, so it was " \
            "written after the request was sent."
        return out("written-after", said, sent=n, stored_by=msg.run_id) if msg.run_id \
            else out("written-after", said, sent=n)
    tail = (f"{unknown}; the client sent " + (
        "its instructions alone" if n == 0 else
        f"one message{beside}, and this was not it" if n == 1 else
        f"these {n} messages{beside}, and this was not one of them"))
    if msg.thread_id != data.run.thread_id:
        return out("not-sent-by-client", f"The client did not send this message in this "
                   f"request (it is in another conversation, {msg.thread_id}): {tail}.",
                   sent=n, scope="other-thread")
    last = max((q for t, q in by_lane if t == msg.thread_id), default=None)
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


def _explain_near_miss(memctx: Memctx, ref: tuple[str, int], out: _Out) -> Explanation | None:
    """Recall's own record of a candidate that just missed: its rank, scores and the
    rules that kept it out (``fate_rules.recorded_recall_rules``)."""
    n = next((n for n in memctx.near_misses if (n.thread_id, n.seq) == ref), None)
    if n is None or n.reason not in ("below-threshold", "beyond-top-k", "filtered-out"):
        return None
    rc = recall_config_from_settings(memctx.settings)
    rules = recorded_recall_rules(memctx, n)
    if not rules:
        return None
    ev: dict[str, Any] = {
        "score": n.score, "vector_score": n.vector_score, "lexical_score": n.lexical_score,
        "threshold": rc.threshold, "top_k": rc.top_k, "rank": n.rank,
        "query": memctx.query, "mode": rc.mode, "recorded": True}
    if n.reason == "filtered-out":
        ev.update(filter=rc.filter, filter_clause=n.filter_clause)
    shown = n.vector_score if n.vector_score is not None else n.score
    return out(rules[0].rule, _recall_sentence(
        rules, score=shown if rules[0].rule != "beyond-top-k" else n.score, rank=n.rank,
        top_k=rc.top_k, hybrid=(n.vector_score, n.lexical_score) if rc.mode == "hybrid"
        else None), rules=rules, **ev)


def _explain_by_score(scores: RunScores, msg: StoredMessage, out: _Out) -> Explanation:
    """The recall rules that kept the message out, from its scores now (as of the run)."""
    config, memctx = scores.config, scores.memctx
    cand = scores.get((msg.thread_id, msg.seq))
    if cand is None:
        return out("unexplained", "Recall did not consider this message at all (it has no "
                   "stored vector), so it could not be recalled.")
    ev: dict[str, Any] = {
        "score": cand.score, "vector_score": cand.vector_score,
        "lexical_score": cand.lexical_score, "threshold": config.threshold,
        "top_k": config.top_k, "rank": cand.rank, "query": memctx.query or "",
        "mode": config.mode}
    if cand.filter_clause:
        ev.update(filter_clause=cand.filter_clause, filter=config.filter)
    rules = recall_rules(scores, cand)
    if not rules:
        return out("unexplained", f"Recall ranked this message #{cand.rank} with "
                   f"{_fmt(cand.score)}, yet it is not in the prompt; the record does not "
                   "say why.", **ev)
    shown = cand.vector_score if cand.vector_score is not None else cand.score
    return out(rules[0].rule, _recall_sentence(
        rules, score=shown if rules[0].rule != "beyond-top-k" else cand.score,
        rank=cand.rank, top_k=config.top_k,
        hybrid=(cand.vector_score, cand.lexical_score) if config.mode == "hybrid" else None),
        rules=rules, **ev)


#: how many of the closest messages a phrase search reports
PHRASE_MATCHES = 5
#: cosine with the phrase (the run's embedder) at which a message that shares none of
#: the phrase's words still counts as close in meaning
PHRASE_MIN_COSINE = 0.4
