""""Why did the model forget that?": the fate of one message in one run, with its
evidence and one plain sentence, and its lifeline across every run of its thread."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from memory_core.analysis.fate_rules import (
    Rule,
)
from memory_core.analysis.fates import (
    PHRASE_MATCHES,
    PHRASE_MIN_COSINE,
    Explanation,
    Fate,
    _exact_hits,
    _step_sentence,
    _written_before,
    explain_message,
)
from memory_core.analysis.left_out import (
    OTHER_RUNS_READ,
    not_imported,
    others_not_imported,
    unread,
)
from memory_core.analysis.parts import (
    LANE_PARTS,
    PARAMS_LANE,
    STEP_LANE,
    TOOLS_LANE,
    GivenMessage,
    MessagePart,
    PartHit,
    PartKind,
    excerpt,
    given_messages,
    message_parts,
    normalise,
    offered_tools,
    phrase_hits,
    place,
    places_counted,
    request_parameters,
)
from memory_core.embedding.hashing import Embedder, HashingEmbedder, embedder_name
from memory_core.errors import InvalidInputError, NotFoundError
from memory_core.journal import RunData, RunKeys, RunReader, load_run
from memory_core.runs.registry import resolve_embedder
from memory_core.storage.base import Storage
from memory_core.text import STOP_WORDS, preview, tokenize
from memory_core.types import StoredMessage


class OtherRunPart(BaseModel):
    """A part of another run's request that no stored message keeps (its instructions,
    a tool's definition, a response format) and that holds a phrase word for word."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    run_id: str
    thread_id: str | None = None
    part: PartKind
    tool: str | None = None

    def said(self) -> str:
        """Where it is, in words: "the instructions of run r1 (conversation t1)"."""
        of = f"run {self.run_id}" + (f" (conversation {self.thread_id})"
                                     if self.thread_id else "")
        if self.part == "tool-definition":
            return f"the definition of tool {self.tool} offered in {of}"
        if self.part == "request-parameters":
            return f"the response format requested in {of}"
        return f"the {self.part.replace('-', ' ')} of {of}"


class PhraseMatch(BaseModel):
    """One place close to a phrase — a stored message, or a message of the run's prompt
    that is none (the instructions …) — which of its parts matched, and its fate."""

    model_config = ConfigDict(extra="forbid")
    thread_id: str | None = None  # None: no stored message (``lane`` says where it was)
    seq: int | None = None
    part: PartKind = "text"  # the part that holds the phrase (or its words)
    tool: str | None = None  # the tool of a matched tool call or result
    call_id: str | None = None
    lane: str | None = None  # where the run's model was given it (None: it was not)
    excerpt: str = ""  # the matched part's text around the phrase
    contains: bool  # the part holds the phrase word for word
    shared_terms: list[str] = Field(default_factory=list)  # the phrase's words it holds
    # a shared word the part holds in another form (recall's terms meet: "staging" and
    # "stage"): the phrase's word → the part's
    shared_as: dict[str, str] = Field(default_factory=dict)
    similarity: float | None = None  # cosine with the phrase (None: not embedded)
    lexical: float | None = None  # BM25 of the phrase against the message
    explanation: Explanation


class PhraseSearch(BaseModel):
    """What a phrase search checked and the closest messages it found, best first."""

    model_config = ConfigDict(extra="forbid")
    run_id: str
    phrase: str
    embedder: str | None  # the embedder that ranked the scope (None: words only)
    by_meaning: bool = False  # whether that embedder compares meaning (not hashing)
    # ``not_imported`` of the run, then (when nothing held the phrase) of its
    # conversation's other runs, each after its run's id; ``from_others``: any of theirs
    not_imported: list[str] = Field(default_factory=list)
    from_others: bool = False
    # held word for word only by parts of other runs' requests no message keeps
    in_other_runs: list[OtherRunPart] = Field(default_factory=list)
    searched: str  # where and how it looked, in words
    scope_size: int  # messages compared by words and meaning
    exact: list[tuple[str, int]] = Field(default_factory=list)  # stored word-for-word hits
    # of those, the ones written after the run started by others (its own question and
    # answer are its own: no copy it could have been given)
    later: list[tuple[str, int]] = Field(default_factory=list)
    # and the run's own answer (written after its request was sent)
    answer: list[tuple[str, int]] = Field(default_factory=list)
    matches: list[PhraseMatch] = Field(default_factory=list)
    # the run's recorded error, when it holds the phrase and no part does (the server's
    # answer to a failed call: written after the request was sent)
    in_error: str | None = None
    sentence: str

    @property
    def best(self) -> PhraseMatch | None:
        return self.matches[0] if self.matches else None

    @property
    def far(self) -> bool:
        """Whether even the closest match is too far to be what the phrase speaks of
        (``too_far``); False when nothing matched."""
        best = self.best
        return best is not None and (bool(self.in_other_runs)
                                     or too_far(self.phrase, best, self.by_meaning))

    def verdict(self) -> Explanation:
        """The phrase's fate, as ``why_forgotten`` gives it: the best match's when it is
        the phrase's place (with the other matches), else ``not-stored`` — nothing
        matched, or the nearest is too far — naming the nearest and what the import
        left out."""
        best = self.best
        left_out: dict[str, Any] = {"not_imported": self.not_imported} \
            if self.not_imported else {}
        if self.in_other_runs:
            left_out["in_other_runs"] = [o.said() for o in self.in_other_runs]
        if self.in_error is not None:  # (no part holds it: see ``find_by_phrase``)
            return Explanation(run_id=self.run_id, fate="written-after", reached_model=False,
                               sentence=self.sentence,
                               evidence={"text": self.phrase, "part": "error",
                                         "searched": self.searched})
        if best is None:
            return Explanation(run_id=self.run_id, fate="not-stored", reached_model=False,
                               sentence=self.sentence,
                               evidence={"text": self.phrase, "searched": self.searched,
                                         **left_out})
        exp = best.explanation
        # when it holds the phrase, the others that hold it too, not those merely close
        others = [(m.thread_id, m.seq) for m in self.matches[1:]
                  if m.thread_id is not None and m.seq is not None
                  and (m.contains or not best.contains)]
        if best.contains:
            at = (best.thread_id, best.seq)
            others += [r for r in self.exact if r not in others and r != at]
            later = [r for r in others if r in self.later]
            answer = [r for r in others if r in self.answer]
            if not later and not answer:
                return exp.model_copy(update={"other_matches": others})
            # the run's answer and copies written after the run are no other place it
            # could have read it
            after = {"also_in_this_runs_answer": answer,
                     "also_holding_it_written_after_the_run": later}
            return exp.model_copy(update={
                "other_matches": [r for r in others if r not in later and r not in answer],
                "evidence": {**exp.evidence, **{k: ", ".join(f"{t}:{q}" for t, q in v)
                                                for k, v in after.items() if v}}})
        closest = (f"{best.thread_id} #{best.seq}" if best.part == "text" else
                   f"the {best.part.replace('-', ' ')} part"
                   + (f" of {best.thread_id} #{best.seq}" if best.thread_id else ""))
        if self.far:  # not the message it speaks of
            nearest = ([(best.thread_id, best.seq)] if best.thread_id is not None
                       and best.seq is not None else [])
            return Explanation(
                run_id=self.run_id, fate="not-stored", reached_model=False,
                sentence=self.sentence, other_matches=[*nearest, *others],
                evidence={"text": self.phrase, "searched": self.searched,
                          "nearest": closest, "shared_terms": best.shared_terms,
                          **left_out})
        return exp.model_copy(update={
            "other_matches": others,
            "sentence": f"No stored message contains “{self.phrase}” word for word; the "
                        f"closest is {closest}. {exp.sentence}"
                        + (unread(self.not_imported, self.from_others, self.phrase)
                           if self.not_imported else ""),
            "evidence": {**exp.evidence, "matched": self.searched,
                         "shared_terms": best.shared_terms,
                         "similarity": best.similarity}})


def other_matches_hold_it(exp: Explanation) -> bool:
    """Whether a phrase's verdict's ``other_matches`` hold the phrase word for word, as
    its place does; else (none does) they are the nearest others."""
    return "matched" not in exp.evidence and "nearest" not in exp.evidence


def _similar(storage: Storage, data: RunData, phrase: str,
             embed: Embedder | None) -> tuple[list[Any], Embedder | None, str]:
    """Every message of the run's scope scored against the phrase by recall itself
    (BM25 terms plus the run's embedder, hybrid), best first, and where it looked."""
    from memory_core.recall.config import RecallConfig
    from memory_core.recall.engine import RecallEngine

    run, memctx = data.run, data.memctx
    embedder = embed
    if memctx is not None and not memctx.is_unknown_setting("embedder"):
        embedder = resolve_embedder(memctx.settings, embed)
    thread = run.thread_id or (memctx.thread_id if memctx else None)
    where = (f"the conversations of {run.resource_id}" if run.resource_id
             else f"conversation {thread}")
    if thread is None:
        return [], embedder, "no conversation (the run has no thread)"
    config = RecallConfig(mode="hybrid" if embedder is not None else "lexical",
                          scope="resource" if run.resource_id else "thread",
                          threshold=PHRASE_MIN_COSINE, context_weight=0.0,
                          query_rewrite=True, skip_query_duplicates=False, near_misses=0)
    try:
        scored = RecallEngine(storage.memory, embedder).score_all(
            phrase, thread_id=thread, resource_id=run.resource_id, config=config)
    except InvalidInputError:  # no content word and nothing to embed with
        return [], embedder, where
    return scored, embedder, where


OTHER_CONVERSATIONS = 200  # the most a phrase search reads the parts of, newest first


def _other_conversations(storage: Storage, data: RunData) -> tuple[list[Any], int]:
    """The messages holding parts (tool calls and results, attachments) of the newest
    ``OTHER_CONVERSATIONS`` conversations of the run's resource (of the store when it
    has none) but its own, and how many conversations were read."""
    threads = [t.id for t in storage.memory.list_threads(data.run.resource_id)
               if t.id != data.run.thread_id][:OTHER_CONVERSATIONS]
    return [m for t in threads for m in storage.memory.get_messages(t)
            if not isinstance(m.content, str)], len(threads)


#: the steps of another run whose tools offered a phrase search reads (its first ten:
#: an agent offers the same tools at every step, as a rule)
OTHER_RUN_STEPS_READ = 10


def _other_runs_holding(storage: Storage, data: RunData, needle: str
                        ) -> tuple[list[OtherRunPart], int]:
    """The parts of other runs' requests that no stored message keeps — instructions,
    working memory, observations, the tools offered, an imported request's response
    format — holding ``needle`` (``normalise``d) word for word, a part a run: the runs
    of the run's resource (the store's, when it has none), its conversation's first,
    then the nearest in time, ``OTHER_RUNS_READ`` at most, read in one query; and how
    many were read."""
    me = data.run
    rows = [r for r in storage.runs.run_rows() if r.run_id != me.run_id
            and (me.resource_id is None or r.resource_id == me.resource_id)]
    rows.sort(key=lambda r: (r.thread_id != me.thread_id,
                             abs((r.started_at - me.started_at).total_seconds()), r.run_id))
    rows = rows[:OTHER_RUNS_READ]
    wanted = {r.run_id: [k.prompt, k.import_,
                         *(k.step(n) for n in range(OTHER_RUN_STEPS_READ))]
              for r in rows for k in (RunKeys(r.run_id),)}
    got = storage.runs.get_many([key for keys in wanted.values() for key in keys])
    out = []
    for r in rows:
        reader = RunReader.of_entries(r.run_id, [(k, got[k]) for k in wanted[r.run_id]
                                                 if k in got])
        prompt = reader.prompt()
        kept_by_none = [GivenMessage(it.message, it.lane, 0) for it in
                        (prompt.items if prompt is not None else []) if it.lane in LANE_PARTS]
        parts = [*kept_by_none, *offered_tools(reader.steps()),
                 *request_parameters(reader.import_record())]
        hit = next(iter(phrase_hits(parts, [], needle, set())), None)
        if hit is not None:
            out.append(OtherRunPart(run_id=r.run_id, thread_id=r.thread_id,
                                    part=hit.part.part, tool=hit.part.tool))
    return out, len(rows)


def find_by_phrase(storage: Storage, run_id: str, phrase: str, *,
                   embed: Embedder | None = None,
                   limit: int = PHRASE_MATCHES) -> PhraseSearch:
    """The places closest to ``phrase``, each with the part that matched and its fate in
    run ``run_id``, best first. Looked for word for word in every stored message's text
    and in every part the model was given in the run (text, tool calls' names and
    arguments, tool results, attachment placeholders, the instructions, working memory
    and observations) and the parts of its thread's messages; by shared words (recall's
    BM25 terms) and by meaning (the run's embedder, or ``embed``) over the run's scope.
    Word-for-word hits first, then those holding every word; within each, a place the
    model was given in the run (but its question), then one it could have been given
    (in its conversation, or one its recall reached), then the question, then one
    written before in a conversation it could not reach, then later echoes (its
    answer); then recall's hybrid rank."""
    from memory_core.recall.lexical import lexical_terms

    needle = " ".join(phrase.split()) if isinstance(phrase, str) else ""
    if not needle:
        raise InvalidInputError(f"the text to look for is empty (got {phrase!r})")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InvalidInputError(f"limit must be a positive int, got {limit!r}")
    data = load_run(storage, run_id)
    exact = _exact_hits(storage, data, needle)
    scored, embedder, where = _similar(storage, data, needle, embed)
    rank = {(c.thread_id, c.seq): i for i, c in enumerate(scored)}
    # a hashing embedder's cosine counts shared (or colliding) words, not meaning: with
    # it only a shared word (BM25) makes a message close; its cosine still ranks
    meaning = embedder is not None and not isinstance(embedder, HashingEmbedder)
    close = {(c.thread_id, c.seq): c for c in scored if c.eligible and (
        meaning or (c.lexical_score or 0.0) > 0)}
    terms = set(lexical_terms(needle))
    given = given_messages(data)
    tools = [*offered_tools(data.steps), *request_parameters(data.import_record)]
    thread = data.run.thread_id
    own = (storage.memory.get_messages(thread)
           if thread is not None and storage.memory.get_thread(thread) is not None else [])
    hits = phrase_hits([*given, *tools], own, normalise(needle), terms)
    # the store's text search reads messages' text, not their tool calls and results:
    # when nothing here holds the phrase, the parts of other conversations are read
    elsewhere: list[Any] = []
    conversations = 0
    if not exact and not any(h.contains for h in hits):
        elsewhere, conversations = _other_conversations(storage, data)
        hits += phrase_hits([], elsewhere, normalise(needle), set())  # (word for word)
    # nor what other runs were given that no message keeps (another agent's
    # instructions): a phrase there was never given to this run
    in_other_runs, runs_read = _other_runs_holding(storage, data, normalise(needle)) \
        if not exact and not any(h.contains for h in hits) else ([], 0)
    msgs = {m.ref: m for m in [*exact, *own, *elsewhere]}
    missing = [r for r in dict.fromkeys([*(h.ref for h in hits if h.ref), *close])
               if r not in msgs]
    msgs.update({m.ref: m for m in storage.memory.get_messages_by_refs(missing)}
                if missing else {})
    # one hit per place: a stored text holding the phrase word for word, each part hit,
    # then each message recall finds close
    by_key: dict[Any, PartHit] = {}
    given_at = {g.ref: g for g in given if g.ref is not None}
    for m in exact:
        by_key[m.ref] = PartHit(m, MessagePart("text", m.text() or ""), True,
                                given_at.get(m.ref), m.ref)
    for i, h in enumerate(hits):
        key = h.ref or ("given", i)
        if key not in by_key or (h.contains and not by_key[key].contains):
            by_key[key] = h
    for ref in close:
        if ref not in by_key and ref in msgs:
            by_key[ref] = PartHit(msgs[ref], MessagePart("text", msgs[ref].text() or ""),
                                  False, given_at.get(ref), ref)

    def holds_all(h: PartHit) -> bool:
        return bool(terms) and terms <= set(lexical_terms(" ".join((h.part.text,
                                                                    *h.part.leaves))))

    reach = set(data.memctx.scope_snapshot) if data.memctx is not None else set()

    def tier(h: PartHit) -> int:
        g = h.given or (given_at.get(h.ref) if h.ref else None)
        if g is not None and not g.is_question:
            return 0
        m = msgs.get(h.ref) if h.ref else None
        if m is not None and _written_before(m, data) and (
                m.thread_id == thread or m.thread_id in reach):
            return 1
        if g is not None:
            return 2
        # a conversation the run's memory could not reach (an imported run's client sent
        # what it chose of its own conversation): after the question the model was asked
        return 3 if m is not None and _written_before(m, data) else 4

    def closeness(h: PartHit) -> int:
        return rank.get(h.ref, len(rank)) if h.ref else len(rank)

    def first_written(h: PartHit) -> tuple[Any, ...]:
        """Echoes written after the run, the first written first (a tool result
        before the answer that repeats it)."""
        m = msgs.get(h.ref) if h.ref else None
        return (m.created_at, m.seq) if m is not None else (data.run.started_at, 0)

    # the phrase, or all its words, first where the model was given them; a message
    # that holds only some of its words by how close it is (a compacted message sharing
    # two words and close in meaning before a recent one sharing one word, not close),
    # the question itself and what was written after the run after those
    ordered = sorted(by_key.values(), key=lambda h: (
        not h.contains, not holds_all(h),
        (tier(h), first_written(h) if tier(h) == 4 else (closeness(h),))
        if h.contains or holds_all(h)
        else (tier(h) > 1, closeness(h), tier(h))))
    matches = [_phrase_match(storage, data, h, needle, msgs, close, embed)
               for h in ordered[:limit]]
    how = "by words" + (f" and by meaning with {embedder_name(embedder)}" if meaning else
                        f" (ranked with {embedder_name(embedder)}, which compares words, not "
                        "meaning)" if embedder else "")
    defs = [t for t in tools if t.lane == TOOLS_LANE]
    searched = (f"every stored message's text for the exact text; the {len(scored)} "
                f"messages of {where} {how}; every part of {_given_counted(given)} "
                f"({_kinds_given(given)})"
                + (f" and of the {len(own)} messages of conversation {thread}" if own else "")
                + ("; the definition of the 1 tool it was offered" if len(defs) == 1
                   else f"; the definitions of the {len(defs)} tools it was offered"
                   if defs else "")
                + ("; the response format it was asked for"
                   if len(defs) < len(tools) else "")
                + (f"; what the requests of {runs_read} other run{'s' * (runs_read != 1)} "
                   "held that no message keeps (instructions, tools offered, response "
                   "formats)" if runs_read else "")
                + (f"; the tool calls, tool results and attachments of the "
                   f"{len(elsewhere)} message{'s' * (len(elsewhere) != 1)} holding any in "
                   + (f"the {conversations} other conversation{'s' * (conversations != 1)}"
                      if conversations < OTHER_CONVERSATIONS
                      else f"the newest {conversations} other conversations")
                   + (" of its resource" if data.run.resource_id else "") if elsewhere
                   else "")
                + ("; the error the run failed with" if data.run.error else ""))
    contained = [h for h in ordered if h.contains]
    # the error a failed call was answered with, when no part holds the phrase: the
    # server's answer, written after the request (it is no message)
    error = data.run.error if not contained and data.run.error else None
    in_error = error if error and normalise(needle) in normalise(error) else None
    # it may have been in what the recordings of its other runs held
    others = others_not_imported(storage, data) if not contained and not in_error else []
    left_out = not_imported(data) + others
    return PhraseSearch(run_id=run_id, phrase=needle,
                        embedder=embedder_name(embedder) if embedder else None,
                        by_meaning=meaning, searched=searched, scope_size=len(scored),
                        exact=[h.ref for h in contained if h.ref is not None],
                        later=[h.ref for h in contained if h.ref is not None
                               and h.ref in msgs and msgs[h.ref].run_id != run_id
                               and not _written_before(msgs[h.ref], data)],
                        answer=[h.ref for h in contained if h.ref is not None
                                and h.ref in msgs and msgs[h.ref].run_id == run_id
                                and h.ref not in given_at],
                        matches=matches, not_imported=left_out, from_others=bool(others),
                        in_other_runs=in_other_runs, in_error=in_error,
                        sentence=_error_sentence(needle, in_error) if in_error else
                        _phrase_sentence(needle, contained, matches, where, how, meaning,
                                         left_out, bool(others), in_other_runs))


#: the parts a run's given messages can hold, in words, in the order they are named
_KIND_WORDS: dict[str, str] = {
    "instructions": "instructions", "text": "text", "tool-call-name": "tool calls",
    "tool-call-arguments": "tool calls", "tool-result": "tool results",
    "attachment": "attachments", "working-memory": "working memory",
    "observations": "observations"}


def _given_counted(given: Sequence[GivenMessage]) -> str:
    """"the 22 messages the model was given in this run", and how many its tool steps
    added where some did (the run inspector counts the prompt's alone)."""
    added = sum(1 for g in given if g.lane == STEP_LANE)
    # (its instructions are said apart: they are no message of the conversation)
    told = sum(1 for g in given if g.lane == "instructions")
    n = len(given) - told
    said = (f"the {n} message{'s' * (n != 1)}"
            + (" and the instructions" if told else "")
            + " the model was given in this run")
    return said if not added else (f"{said} ({n - added} in its prompt, {added} "
                                   "added by its tool steps)")


def _kinds_given(given: Sequence[GivenMessage]) -> str:
    """The kinds of part the given messages hold, in words ("instructions, text, tool
    calls"): what the search read, not every kind it could have."""
    held = {p.part for g in given for p in (g.parts or message_parts(g.message, g.lane))}
    return ", ".join(dict.fromkeys(w for k, w in _KIND_WORDS.items() if k in held)) \
        or "no text"


def too_far(phrase: str, m: PhraseMatch, by_meaning: bool) -> bool:
    """Whether match ``m`` is too far to be what ``phrase`` speaks of: found by words
    alone (no embedder comparing meaning), not holding the phrase, and sharing fewer than
    half of its content words ("dragons are purple elephants" is not a message that
    mentions dragons once)."""
    if m.contains or by_meaning:
        return False
    words = {w for w in tokenize(phrase) if w not in STOP_WORDS}
    return 2 * len(m.shared_terms) < len(words)


def _phrase_match(storage: Storage, data: RunData, h: PartHit, needle: str,
                  msgs: dict[tuple[str, int], StoredMessage], close: dict[Any, Any],
                  embed: Embedder | None) -> PhraseMatch:
    """A hit as a match: its fate (a stored message's, or the prompt part's), with the
    part that matched in the evidence and, word for word, in the sentence."""
    m = msgs.get(h.ref) if h.ref else None
    if m is not None:
        exp = explain_message(storage, data, m, fact=needle if h.contains else None,
                              embed=embed)
    else:
        assert h.given is not None  # a stored place is in msgs
        exp = _explain_part(data, h.given)
    p, c = h.part, close.get(h.ref) if h.ref else None
    said = {"part": p.part, **{k: v for k, v in (("tool", p.tool), ("call_id", p.call_id))
                                if v}}
    sentence = f"“{needle}” is in {place(h)}. {exp.sentence}" if h.contains else exp.sentence
    return PhraseMatch(
        thread_id=h.ref[0] if h.ref else None, seq=h.ref[1] if h.ref else None,
        part=p.part, tool=p.tool, call_id=p.call_id,
        lane=h.given.lane if h.given else None,
        excerpt=excerpt(p.text, normalise(needle)), contains=h.contains,
        shared_terms=(shared := _shared_words(needle, " ".join((p.text, *p.leaves)))),
        shared_as=_forms(shared, " ".join((p.text, *p.leaves))),
        similarity=c.vector_score if c else None, lexical=c.lexical_score if c else None,
        explanation=exp.model_copy(update={"sentence": sentence,
                                           "evidence": {**said, **exp.evidence}}))


def _explain_part(data: RunData, g: GivenMessage) -> Explanation:
    """The fate of a message the model was given that is no stored message: the
    instructions, working memory, observations, an input or a step not stored."""
    imported = data.memctx is not None and data.memctx.imported
    oid = g.observation_id
    fate: Fate
    if g.lane == TOOLS_LANE:
        name = g.parts[0].tool if g.parts else None
        fate, sentence = "tool-definition", (
            f"The client offered the model tool {name} in this request: its name, "
            "description and parameters were sent with it, so the model was given this "
            "text." if imported else
            f"The assistant was offered tool {name} in this run: its name, description "
            "and parameters are sent to the model with the prompt.")
    elif g.lane == PARAMS_LANE:
        fate, sentence = "sent-by-client", (
            "The client sent this text with the request, in the response format it asked "
            "for, so the model was given it.")
    elif g.lane == "instructions" and imported and data.import_record is not None \
            and (by := data.import_record.instructions_applied_by()) is not None:
        fate, sentence = "instructions", (
            f"The server applied this text as the instructions of this request (those of {by}, "
            "echoed in its response): the client did not send it, but the model was "
            "given it.")
    elif g.lane == "instructions":
        fate, sentence = "instructions", (
            "The client sent this text as the instructions (the system prompt) of this "
            "request, so the model was given it." if imported else
            "The assistant was given this text: it is part of the instructions (the "
            "agent's system prompt) at the head of this run's prompt.")
    elif g.lane == "working_memory":
        fate, sentence = "working-memory", ("The assistant was given this text: it is part "
                                            "of the working memory block of this run's "
                                            "prompt.")
    elif g.lane == "observations":
        fate, sentence = "observations", (
            "The assistant was given this text: it is part of the observations"
            f"{f' (observation {oid})' if oid else ''} at the head of this run's prompt, "
            "the condensed notes of earlier messages.")
    elif g.lane == STEP_LANE:
        fate, sentence = "earlier-step", _step_sentence(g.message, g.step)
    elif imported:
        fate, sentence = "sent-by-client", (f"The client sent this message in this request "
                                            f"(in its {g.lane} part); it is not stored.")
    elif g.lane == "input":
        fate, sentence = "input", "This is the question the assistant was answering in this run."
    else:
        fate = "recalled" if g.lane == "recalled" else "recent"
        sentence = (f"The assistant was given this message (in the {g.lane} part of the "
                    "prompt); it is no longer stored.")
    return Explanation(run_id=data.run.run_id, fate=fate, reached_model=True,
                       role=g.message.role, preview=preview(g.message), sentence=sentence,
                       evidence={"lane": g.lane, "step": g.step,
                                 **({"observation_id": oid} if oid else {})})


def _shared_words(phrase: str, text: str) -> list[str]:
    """The phrase's content words that ``text`` holds (as recall's BM25 terms: plurals
    and inflections meet), spelled as in the phrase."""
    from memory_core.recall.lexical import lexical_terms

    held = set(lexical_terms(text))
    words = [w for w in tokenize(phrase) if w not in STOP_WORDS]
    return list(dict.fromkeys(w for w in words if set(lexical_terms(w)) & held))


def _forms(words: Sequence[str], text: str) -> dict[str, str]:
    """Each of ``words`` that ``text`` holds only in another form (its first word with
    the same recall terms), word → form."""
    from memory_core.recall.lexical import lexical_terms

    mine = tokenize(text)
    held = {w.lower() for w in mine}
    out: dict[str, str] = {}
    for w in words:
        if w.lower() in held:
            continue
        terms = set(lexical_terms(w))
        form = next((m for m in mine if set(lexical_terms(m)) & terms), None)
        if form is not None:
            out[w] = form
    return out


def _words_said(words: Sequence[str]) -> str:
    """``["a", "b"]`` as “a” and “b”; none as "no word"."""
    quoted = [f"“{w}”" for w in words]
    if not quoted:
        return "no word"
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} and {quoted[-1]}"



def _error_sentence(needle: str, error: str) -> str:
    """A phrase only the run's recorded error holds."""
    return (f"No stored message contains “{needle}”, nor does any part of what the model "
            f"was given in this run; it is in the error this run failed with "
            f"(“{excerpt(error, normalise(needle))}”): the answer to its request, written "
            "after the request was sent, not given to the model.")


def _phrase_sentence(needle: str, contained: list[PartHit], matches: list[PhraseMatch],
                     where: str, how: str, meaning: bool, left_out: list[str],
                     others: bool, in_other_runs: Sequence[OtherRunPart] = ()) -> str:
    if contained:
        return (f"“{needle}” appears word for word in {places_counted(contained)}"
                + (", listed first; then the closest others."
                   if any(not m.contains for m in matches) else "."))
    if in_other_runs:
        first, n = in_other_runs[0], len({o.run_id for o in in_other_runs}) - 1
        more = f" (and {n} other run{'s' * (n != 1)})" if n else ""
        return (f"No stored message contains “{needle}”, nor does any part of what the "
                f"model was given in this run; it is word for word in {first.said()}"
                f"{more}, a part of another request that this run's model was not given."
                + (" The closest parts of this run are below, none of them the phrase."
                   if matches else ""))
    if matches and too_far(needle, matches[0], meaning):
        return (f"No stored message contains “{needle}” word for word, nor does any part "
                "of what the model was given in this run, and none shares most of its "
                f"words (compared {how}): the nearest shares only "
                f"{_words_said(matches[0].shared_terms)}."
                + (unread(left_out, others, needle) if left_out else
                   " It was never said in these words, or it was erased."))
    if matches:
        by = "by words and meaning" if meaning else "by words"
        return (f"No stored message contains “{needle}” word for word, nor does any part "
                f"of what the model was given in this run; the closest {by} are below."
                + (unread(left_out, others, needle) if left_out else ""))
    return (f"No stored message contains “{needle}”, and none of {where} shares its words "
            f"or comes close in meaning (compared {how}); no part {'stored ' * bool(left_out)}"
            "of what the model was given in this run (instructions, tool calls and results, "
            "tools offered included) holds it either"
            + (f".{unread(left_out, others, needle)}" if left_out else
               ", so the assistant could not have been given it: it was never said, or it "
               "was erased."))


def why_forgotten(storage: Storage, run_id: str, target: tuple[str, int] | str, *,
                  embed: Embedder | None = None) -> Explanation:
    """Explain the fate of ``target`` — a ``(thread_id, seq)`` ref or a phrase (the
    closest place, see ``find_by_phrase``: a stored message or a part of the run's
    prompt, the part that matched in the evidence) — in run ``run_id``. Unknown runs
    and refs raise NotFoundError."""
    if isinstance(target, str):
        return find_by_phrase(storage, run_id, target, embed=embed).verdict()
    if (not isinstance(target, tuple | list) or len(target) != 2
            or not isinstance(target[1], int)):
        raise InvalidInputError(f"target must be (thread_id, seq) or a text, got {target!r}")
    data = load_run(storage, run_id)
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
    rules: list[Rule] = Field(default_factory=list)  # as ``Explanation.rules``


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
        memctx = reader.memctx()
        if msgs[0].run_id == r.run_id:
            # the run that wrote it: its steps tell whether a later step was given it
            data = load_run(storage, r.run_id, record=r)
        elif memctx is not None and memctx.imported:
            # an imported run's fates also read where its input went and what of its
            # prompt the server held and what it stored of its answer (three point reads
            # more, imported runs only)
            data = RunData(run=r, prompt=prompt, memctx=memctx,
                           persist_input=reader.persist_input(),
                           persist_output=reader.persist_output(),
                           import_record=reader.import_record())
        else:
            data = RunData(run=r, prompt=prompt, memctx=memctx)
        e = explain_message(storage, data, msgs[0], embed=embed)
        points.append(LifelinePoint(run_id=r.run_id, started_at=r.started_at.isoformat(),
                                    fate=e.fate, reached_model=e.reached_model,
                                    sentence=e.sentence, evidence=e.evidence,
                                    rules=e.rules))
    return points
