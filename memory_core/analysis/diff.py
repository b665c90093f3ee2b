"""diff_runs: what entered, left or changed lane between two runs' compositions
(keyed by thread and seq, with the reason), per-lane token deltas, and the
alignment of their model steps and tool calls (SPEC §10.3)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memory_core.analysis.fate_rules import Rule, RunScores, said_all
from memory_core.analysis.views import run_answer
from memory_core.analysis.wording import MISSING, score_text, value_text
from memory_core.embedding.hashing import Embedder
from memory_core.errors import MemoryCoreError
from memory_core.journal import RunData, load_run
from memory_core.provenance.record import LANES, Memctx
from memory_core.storage.base import Storage
from memory_core.types import StoredMessage, canonical_json

Ref = tuple[str, int]
Change = Literal["entered", "left", "moved", "same"]
StepStatus = Literal["same", "changed", "missing", "added"]
StepKind = Literal["model", "tool"]


class DiffEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    thread_id: str
    seq: int
    role: str | None = None
    preview: str = ""
    lane_a: str | None  # recalled / recent / input / dropped / compacted / None
    lane_b: str | None
    change: Change
    reason: str = ""
    score_a: float | None = None
    score_b: float | None = None
    rank_a: int | None = None
    rank_b: int | None = None
    # a message recall left out of one run and took in the other: every rule that kept
    # it out there, in the order recall applied them (as ``analysis.forgotten`` tells)
    kept_out_by: list[str] = Field(default_factory=list)


class StepPoint(BaseModel):
    model_config = ConfigDict(extra="forbid")
    index: int
    kind: StepKind
    status: StepStatus
    a: str | None = None
    b: str | None = None


class RunDiff(BaseModel):
    model_config = ConfigDict(extra="forbid")
    run_a: str
    run_b: str
    entries: list[DiffEntry] = Field(default_factory=list)
    token_deltas: dict[str, tuple[int, int, int]] = Field(default_factory=dict)
    settings_changed: dict[str, tuple[Any, Any]] = Field(default_factory=dict)
    steps: list[StepPoint] = Field(default_factory=list)
    divergent_at: int | None = None
    # each run's answer as every page shows it (``views.run_answer``: a call it answered
    # with is shown, not taken for no answer)
    answer_a: str | None = None
    answer_b: str | None = None
    # either run's recall was hybrid: its scores are fused ranks' scores, with no fixed
    # scale (a page names the column so), and its bar applies to the similarity
    fused_scores: bool = False

    def changed(self) -> list[DiffEntry]:
        return [e for e in self.entries if e.change != "same"]


def _lanes_of(data: RunData) -> dict[Ref, str]:
    """Where each stored message stood in the run's prompt (``RunData.prompt_lanes``:
    the input lane counted by what it stored), and what composition dropped."""
    lanes = data.prompt_lanes()
    m = data.memctx
    if m is not None:
        for d in m.dropped:
            lanes.setdefault((d.thread_id, d.seq), "dropped")
    return lanes


def _copies(a: RunData, b: RunData, la: dict[Ref, str], lb: dict[Ref, str]) -> None:
    """Run B's prompt messages that are copies of run A's, put under A's refs in ``lb``:
    a branch thread (an import's, a capture's) stores the conversation it shares with
    another thread again, so the same message stood in both prompts under two refs and
    read as one leaving and another entering. Only between runs of two threads, and
    only messages of the same content, paired in prompt order."""
    if a.run.thread_id == b.run.thread_id:
        return

    def contents(data: RunData) -> dict[Ref, str]:
        return {ref: item.message.canonical_json()
                for item, ref in zip(data.prompt.items, data.prompt_refs(), strict=True)
                if ref is not None}
    ka, kb = contents(a), contents(b)
    left: dict[str, list[Ref]] = {}
    for ref in la:
        if ref not in lb and ref in ka:
            left.setdefault(ka[ref], []).append(ref)
    for ref in [r for r in lb if r not in la and r in kb]:
        same = left.get(kb[ref])
        if same:
            lb[same.pop(0)] = lb.pop(ref)


def _compacted(m: Memctx | None, ref: Ref) -> str | None:
    if m is None or ref[0] != m.thread_id:
        return None
    for o in m.observations:
        if o.from_seq is not None and o.to_seq is not None and o.from_seq <= ref[1] <= o.to_seq:
            return o.id
    return None


class _Scores:
    """Recall scores of any message for a run's query: as the run recorded them, else
    from the run's scope scored once (``fate_rules.RunScores``, shared with the fates
    ``analysis.forgotten`` tells)."""

    def __init__(self, storage: Storage, data: RunData, embed: Embedder | None) -> None:
        self.storage, self.data, self.embed = storage, data, embed
        m = data.memctx
        self.scores = (RunScores(storage, data, embed) if m is not None
                       and m.settings.recall_enabled and m.query else None)
        self._rules: dict[Ref, list[Rule]] = {}

    def get(self, ref: Ref) -> Any:
        m = self.data.memctx
        if m is None or self.scores is None:
            return None
        for r in m.recalled:
            if (r.thread_id, r.seq) == ref and r.origin in (None, "hit"):
                return r
        for n in m.near_misses:
            if (n.thread_id, n.seq) == ref:
                return n
        return self.scores.get(ref)

    def rules(self, ref: Ref) -> list[Rule]:
        """The rules that kept the message out of this run's prompt, as
        ``analysis.forgotten`` tells its fate (none when it was given, or no rule of
        recall's kept it out)."""
        if self.scores is None:
            return []
        if ref not in self._rules:
            self._rules[ref] = self._rules_of(ref)
        return self._rules[ref]

    def _rules_of(self, ref: Ref) -> list[Rule]:
        from memory_core.analysis.fates import explain_message

        assert self.scores is not None
        msgs = self.storage.memory.get_messages(ref[0], seqs=[ref[1]]) \
            if self.storage.memory.get_thread(ref[0]) is not None else []
        if not msgs:
            return []
        try:
            exp = explain_message(self.storage, self.data, msgs[0], embed=self.embed,
                                  scores=self.scores)
        except MemoryCoreError:  # the run's embedder cannot be rebuilt here: no rules
            return []
        return exp.rules if exp.fate in RECALL_RULES else []


#: the rules of recall a setting change can lift, in the order recall applies them
RECALL_RULES = ("filtered-out", "below-threshold", "beyond-top-k")


def _f(x: float | None) -> str:
    return score_text(x)


#: how a reason names a setting of ``CompositionSettings.flat()``
SETTING_NAMES = {"top_k": "recall top_k", "threshold": "recall threshold",
                 "recent_n": "recent window", "recall_enabled": "recall on",
                 "scope": "recall scope", "filter": "recall filter", "mode": "recall mode",
                 "embedder": "embedder", "fusion": "recall fusion",
                 "vector_weight": "recall vector_weight"}
Changes = dict[str, tuple[Any, Any]]


def _change(changes: Changes, key: str) -> str:
    """``recall top_k 3 → 8``: a changed setting as a reason names it."""
    a, b = changes[key]
    if key == "recall_enabled":
        return f"recall {'on' if a else 'off'} → {'on' if b else 'off'}"
    return f"{SETTING_NAMES.get(key, key)} {value_text(a)} → {value_text(b)}"


def _bar(m: Memctx | None) -> tuple[float | None, int | None]:
    """The recall threshold and top_k a run recorded (None when recall was off)."""
    rc = m.settings.recall if m is not None else None
    return (rc.threshold, rc.top_k) if rc is not None else (None, None)


def _hybrid(m: Memctx | None) -> bool:
    rc = m.settings.recall if m is not None else None
    return rc is not None and rc.mode == "hybrid"


def _scored(scored: Any, m: Memctx | None) -> str:
    """A recalled message's score in a reason, named as its run's recall made it: a
    fused score (reciprocal ranks summed) in hybrid recall, a similarity otherwise."""
    return f"{'fused score' if _hybrid(m) else 'score'} {_f(getattr(scored, 'score', None))}"


def _gated(scored: Any, m: Memctx | None) -> float | None:
    """The score a run's threshold applied to: the score in vector mode, the cosine
    alone in hybrid mode (the fused score is never compared with the bar), none in
    lexical mode (the bar does not apply)."""
    rc = m.settings.recall if m is not None else None
    if scored is None or rc is None or rc.mode == "lexical":
        return None
    return getattr(scored, "vector_score" if rc.mode == "hybrid" else "score", None)


def _side(lane: str | None, data: RunData, ref: Ref) -> str:
    """Where a message stood in one run, in words true for how the run was recorded."""
    m = data.memctx
    if m is not None and m.imported:
        if lane is None:
            return "not sent by the client"
        held = data.server_held()
        if held is not None and ref in held[1]:
            return f"held by the server ({held[0]['reference']}), not sent by the client"
        return "sent by the client"
    return "not in the prompt" if lane is None else f"in the {lane} part of the prompt"


def _imported_reason(p: _Pair) -> str:
    """A change involving an imported run: what each recording shows, never a memory
    decision the recording does not hold."""
    ma, mb = p.ma, p.mb
    said = f"run A: {_side(p.lane_a, p.a, p.ref)}; run B: {_side(p.lane_b, p.b, p.ref)}"
    imported = [n for n, m in (("A", ma), ("B", mb)) if m is not None and m.imported]
    return said + imported_caveat(imported)


def imported_caveat(runs: list[str]) -> str:
    """What an imported change's reason ends with: the recordings of ``runs`` ("A",
    "B") hold no memory decision (a page saying so once strips it from each reason)."""
    return (f" (the recording of run {' and '.join(runs)} does not say whether "
            "memory recalled anything)")


class _Pair:
    """One message's standing in the two runs, and what a reason may cite about it."""

    def __init__(self, ref: Ref, lane_a: str | None, lane_b: str | None, sa: Any, sb: Any,
                 a: RunData, b: RunData, changes: Changes,
                 scores: tuple[_Scores, _Scores] | None = None,
                 written: Callable[[Ref], datetime | None] | None = None) -> None:
        self.ref, self.lane_a, self.lane_b, self.sa, self.sb = ref, lane_a, lane_b, sa, sb
        self.a, self.b, self.changes = a, b, changes
        self.ma, self.mb = a.memctx, b.memctx
        self.scores = scores
        self.written = written  # a stored message's creation time

    def rules(self, side: str) -> list[Rule]:
        """The recall rules that kept the message out of run ``side``'s prompt."""
        if self.scores is None:
            return []
        return self.scores[0 if side == "A" else 1].rules(self.ref)

    def new(self) -> bool:
        """Written after run A composed (so run A could not have held it): past run A's
        snapshot of its thread, or — a thread its recall did not look at (no recall,
        another scope) — stored after run A started."""
        snap = self.ma.scope_snapshot.get(self.ref[0]) if self.ma else None
        if snap is not None:
            return self.ref[1] > snap
        at = self.written(self.ref) if self.written is not None else None
        return at is None or at >= self.a.run.started_at

    def rank(self, side: str) -> int | None:
        return getattr(self.sa if side == "A" else self.sb, "rank", None)

    def window(self, verb: str) -> str:
        """Why the recent window took a message in or left it out: the recent_n change
        when run B's window with run A's size would have decided otherwise, else the
        conversation moving on."""
        snap = self.mb.scope_snapshot.get(self.ref[0]) if self.mb else None
        if "recent_n" in self.changes and snap is not None:
            n_a, n_b = self.changes["recent_n"]
            if isinstance(n_a, int) and isinstance(n_b, int) and \
                    (snap - n_a < self.ref[1] <= snap) != (snap - n_b < self.ref[1] <= snap):
                return f"{_change(self.changes, 'recent_n')} {verb}"
        return ("newer messages pushed it out of the recent window" if verb.startswith("left")
                else "it entered the recent window")

    def measure(self) -> str:
        """What the threshold bounds, in words: hybrid recall's bar applies to the
        similarity, not to the fused score a table shows beside it."""
        return "similarity" if _hybrid(self.ma) or _hybrid(self.mb) else "score"

    def crossed(self, verb: str, bar: str) -> str:
        """The score moved across the threshold, or (same score in both runs) the
        threshold moved past it; in hybrid recall the similarity, and a message out of
        run B's prompt by it shared no word with B's question."""
        gated_a, gated_b = _gated(self.sa, self.ma), _gated(self.sb, self.mb)
        what = self.measure()
        if gated_a is not None and gated_b is not None and _f(gated_a) == _f(gated_b) \
                and "threshold" in self.changes:
            return (f"{_change(self.changes, 'threshold')} {verb}: its unchanged {what} "
                    f"{_f(gated_b)} ended up across the threshold")
        words = self.no_word_shared() if verb.startswith("left") else ""
        return (f"{what} moved across the threshold: {_f(gated_a)} → {_f(gated_b)} "
                f"(bar {bar}){words}{self.other_recall_changes()}")

    def no_word_shared(self) -> str:
        """What a hybrid run B's bar says of a message it kept out: it shared no word
        with B's question (a word shared lets a message in whatever its similarity)."""
        return ", sharing no word with run B's question" if _hybrid(self.mb) else ""

    def recall_switch(self) -> str | None:
        return _change(self.changes, "recall_enabled") if "recall_enabled" in self.changes \
            else None

    def other_recall_changes(self) -> str:
        """Recall settings that changed besides top_k and threshold, as a tail (recall
        turned on or off is said alone: each of its settings then changed from none)."""
        keys = ["recall_enabled"] if "recall_enabled" in self.changes else \
            [k for k in ("mode", "scope", "filter", "fusion", "embedder") if k in self.changes]
        if self.ma and self.mb and self.ma.query != self.mb.query:
            tail = ["run B asked a different question"]
        else:
            tail = []
        tail += [_change(self.changes, k) for k in keys]
        return f" ({'; '.join(tail)})" if tail else ""


def _rk(rank: int | None) -> str:
    """A rank in a reason: "—" where the run's record gives none (not "None")."""
    return MISSING if rank is None else str(rank)


# how a run recalled a message that is no hit of its own (it has no rank), in words
_CAME_WITH = {"neighbour": "as the neighbour of a hit",
              "repair": "to complete a recalled tool call"}


def _came_with(m: Memctx | None, ref: Ref) -> str | None:
    """How the run recalled ``ref`` when it is no hit (a hit's neighbour, the other half
    of a recalled tool call), in words; None for a hit."""
    origin = next((r.origin for r in (m.recalled if m is not None else [])
                   if (r.thread_id, r.seq) == ref), None)
    return _CAME_WITH.get(origin or "")


def _reason(p: _Pair) -> str:
    ma, mb = p.ma, p.mb
    if any(m is not None and m.imported for m in (ma, mb)):
        return _imported_reason(p)
    lane_a, lane_b = p.lane_a, p.lane_b
    if lane_b == "compacted":
        return f"compacted into observation {_compacted(mb, p.ref)}"
    if lane_b == "dropped":
        d = next((d for d in (mb.dropped if mb else []) if (d.thread_id, d.seq) == p.ref),
                 None)
        return f"dropped ({d.reason if d else 'unknown reason'})"
    if "input" in (lane_a, lane_b):
        return _input_reason(p)
    if lane_a is None and lane_b == "recent":
        return "new message, written after run A" if p.new() else p.window("took it in")
    if lane_a == "recent" and lane_b is None:
        return f"{p.window('left it out')}, and it was not recalled"
    if lane_a == "recent" and lane_b == "recalled":
        how = _came_with(mb, p.ref) or \
            f"(rank {_rk(p.rank('B'))}, {_scored(p.sb, mb)})"
        return f"{p.window('left it out')}, then recall brought it back {how}"
    if lane_a == "recalled" and lane_b is None:
        return _left_recall(p)
    if lane_a is None and lane_b == "recalled":
        return _entered_recall(p)
    return f"moved from {lane_a or 'absent'} to {lane_b or 'absent'}"


def _input_reason(p: _Pair) -> str:
    if p.lane_b == "input":
        was = "written after run A" if p.new() else \
            f"in run A: {p.lane_a or 'not in the prompt'}"
        return f"run B's question, {was}"
    if p.lane_b is None:
        return f"run A's question; in run B {p.window('left it out')}, and it was not recalled"
    if p.lane_b == "recalled":
        return f"run A's question, recalled in run B (rank {_rk(p.rank('B'))})"
    return f"run A's question, in run B's {p.lane_b} lane"


def _left_recall(p: _Pair) -> str:
    """A message run A recalled and run B did not: which setting (or score) moved."""
    if (switch := p.recall_switch()) is not None:
        return f"{switch}: recall did not run in run B"
    if (how := _came_with(p.ma, p.ref)) is not None:  # (no rank or score of its own)
        return (f"recalled in run A only {how}, which run B did not recall"
                f"{p.other_recall_changes()}")
    rules = p.rules("B")
    if len(rules) > 1:
        return _by_rules(p, rules, "left it out", p.ma)
    thr, top_k = _bar(p.mb)
    nb = getattr(p.sb, "reason", None)
    gated_b = _gated(p.sb, p.mb)
    if nb == "below-threshold" or (gated_b is not None and thr is not None and gated_b < thr):
        return p.crossed("left it out", _f(thr))
    rank_b = p.rank("B")
    if nb == "beyond-top-k" or (rank_b and top_k and rank_b > top_k):
        if "top_k" in p.changes and rank_b and top_k and rank_b <= p.changes["top_k"][0]:
            return f"{_change(p.changes, 'top_k')} left it out (rank {_rk(rank_b)})"
        # (a rank past top-k that was recalled: rows already in the prompt took no place)
        ahead = "; rows already in the prompt take no place" \
            if top_k is not None and (p.rank("A") or 0) > top_k else ""
        return (f"pushed out by a new hit: rank {_rk(p.rank('A'))} → {_rk(rank_b)} (top "
                f"{top_k}{ahead})"
                f"{p.other_recall_changes()}")
    if nb == "filtered-out":
        by = f"; {_change(p.changes, 'filter')}" if "filter" in p.changes else ""
        return f"excluded by the filter ({getattr(p.sb, 'filter_clause', '')}{by})"
    return f"no longer recalled{p.other_recall_changes()}"


def _entered_recall(p: _Pair) -> str:
    """A message run B recalled and run A did not: which setting (or score) let it in."""
    score_b = _scored(p.sb, p.mb)
    rank_b = p.rank("B")
    if (how := _came_with(p.mb, p.ref)) is not None:  # (no rank of its own)
        return f"recalled in run B {how}{p.other_recall_changes()}"
    if p.new():
        return f"new message, recalled in run B ({score_b})"
    if (switch := p.recall_switch()) is not None:
        return f"{switch} let it in (rank {_rk(rank_b)}, {score_b})"
    rules = p.rules("A")
    if len(rules) > 1:
        return _by_rules(p, rules, "let it in", p.mb)
    thr_a, top_k_a = _bar(p.ma)
    gated_a = _gated(p.sa, p.ma)
    if gated_a is not None and thr_a is not None and gated_a < thr_a:
        thr_b = _bar(p.mb)[0]
        return p.crossed("let it in", _f(thr_a) if _f(thr_a) == _f(thr_b)
                         else f"{_f(thr_a)} → {_f(thr_b)}")
    rank_a = p.rank("A")
    if "top_k" in p.changes and rank_b is not None and top_k_a is not None \
            and rank_b > top_k_a:
        return f"{_change(p.changes, 'top_k')} let it in (rank {_rk(rank_b)})"
    if getattr(p.sa, "reason", None) == "filtered-out" and "filter" in p.changes:
        return f"{_change(p.changes, 'filter')} let it in (rank {_rk(rank_b)})"
    return (f"recalled in run B (rank {_rk(rank_a)} → {_rk(rank_b)}, {score_b})"
            f"{p.other_recall_changes()}")


#: a rule's setting as ``CompositionSettings.flat()`` names it
FLAT_KEYS = {"recall.filter": "filter", "recall.threshold": "threshold",
             "recall.top_k": "top_k"}


def _lifts(rule: Rule, m: Memctx | None) -> bool:
    """Whether the other run's settings let the message past ``rule``."""
    rc = m.settings.recall if m is not None else None
    if rc is None:
        return False
    if rule.rule == "filtered-out":
        return rc.filter is None
    if rule.rule == "below-threshold":
        return isinstance(rule.needed, float) and rc.threshold <= rule.needed
    return isinstance(rule.needed, int) and rc.top_k >= rule.needed


def _by_rules(p: _Pair, rules: list[Rule], verb: str, other: Memctx | None) -> str:
    """A message more than one rule kept out of one run (``rules``, as its fate says):
    the setting changes that lift (or set) them — "recall threshold 0.450 → 0.400 and
    recall top_k 3 → 8 let it in: in run A it was below the threshold (0.434 < 0.450)
    and beyond top-k (rank 6, top-k 3)" — or, where no setting did, how its score and rank
    moved."""
    side = "A" if verb == "let it in" else "B"  # the run it was kept out of
    named: list[str] = []
    moved: list[str] = []
    for r in rules:
        key = FLAT_KEYS.get(r.setting or "")
        if key is not None and key in p.changes and _lifts(r, other):
            named.append(_change(p.changes, key))
        elif r.rule == "below-threshold":
            moved.append(f"{p.measure()} moved across the threshold: "
                         f"{_f(_gated(p.sa, p.ma))} → {_f(_gated(p.sb, p.mb))} "
                         f"(bar {_f(r.value)})" + (p.no_word_shared() if side == "B" else ""))
        elif r.rule == "beyond-top-k":
            ra, rb = p.rank("A"), p.rank("B")
            ranks = f"rank {ra} → {rb}" if ra and rb else f"rank {ra or rb} in run " \
                + ("B" if rb else "A")
            moved.append(f"{ranks} {'within' if side == 'A' else 'beyond'} top {r.value}")
        else:
            moved.append(f"its metadata passes the filter in run {'B' if side == 'A' else 'A'}")
    tail = p.other_recall_changes()
    if not named:
        return " and ".join(moved) + tail
    said = f"{' and '.join(named)} {verb}: in run {side} it was {said_all(rules)}"
    return said + (f"; also {' and '.join(moved)}" if moved else "") + tail


def _hash(value: Any) -> str:
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()[:12]


def _step_points(data: RunData) -> list[tuple[StepKind, str, str]]:
    """(kind, comparable signature, human summary) per model step and tool call."""
    pts: list[tuple[StepKind, str, str]] = []
    for s in data.steps:
        r = s.response
        sig = canonical_json({"text": r.text, "tools": [(c.name, _hash(c.args))
                                                        for c in r.tool_calls]})
        summary = (r.text or "") if not r.tool_calls else (
            "calls " + ", ".join(f"{c.name}({canonical_json(c.args)})" for c in r.tool_calls))
        pts.append(("model", sig, summary[:200]))
        for c in r.tool_calls:
            t = data.tools.get(c.id)
            tsig = canonical_json({"name": c.name, "args": _hash(c.args),
                                   "status": t.status if t else "missing",
                                   "output": t.result if t else None})
            pts.append(("tool", tsig, f"{c.name} → "
                        f"{canonical_json(t.result)[:160] if t else '(no result)'}"))
    return pts


def align_steps(a: RunData, b: RunData) -> tuple[list[StepPoint], int | None]:
    pa, pb = _step_points(a), _step_points(b)
    points: list[StepPoint] = []
    status: StepStatus
    kind: StepKind
    for i in range(max(len(pa), len(pb))):
        x = pa[i] if i < len(pa) else None
        y = pb[i] if i < len(pb) else None
        if x and y:
            status = "same" if (x[0], x[1]) == (y[0], y[1]) else "changed"
            kind = x[0]
        elif x:
            status, kind = "missing", x[0]
        else:
            assert y is not None
            status, kind = "added", y[0]
        points.append(StepPoint(index=i, kind=kind, status=status,
                                a=x[2] if x else None, b=y[2] if y else None))
    div = next((p.index for p in points if p.status != "same"), None)
    return points, div


def _same_question(entries: list[DiffEntry]) -> None:
    """Each run's question is its own stored message: when the two are the same text and
    neither prompt held the other's, the prompts asked the same thing, which is no
    change (the run that asks a question twice composes the same prompt)."""
    qa = [e for e in entries if e.lane_a == "input" and e.lane_b is None]
    qb = [e for e in entries if e.lane_b == "input" and e.lane_a is None]
    if len(qa) == 1 and len(qb) == 1 and qa[0].preview == qb[0].preview:
        for e in (qa[0], qb[0]):
            e.change, e.reason = "same", ""


def diff_runs(storage: Storage, run_a: str, run_b: str, *,
              embed: Embedder | None = None) -> RunDiff:
    """Structural diff of two runs' compositions and their model steps."""
    a, b = load_run(storage, run_a), load_run(storage, run_b)
    la, lb = _lanes_of(a), _lanes_of(b)
    _copies(a, b, la, lb)
    refs = set(la) | set(lb)
    for ref in list(refs):
        if ref not in la and _compacted(a.memctx, ref):
            la[ref] = "compacted"
        if ref not in lb and _compacted(b.memctx, ref):
            lb[ref] = "compacted"
    scores_a, scores_b = _Scores(storage, a, embed), _Scores(storage, b, embed)
    both = (scores_a, scores_b)
    previews: dict[Ref, tuple[str, str]] = {}
    for data in (a, b):
        m = data.memctx
        for r in ([*m.recalled, *m.recent, *m.dropped] if m else []):
            previews.setdefault((r.thread_id, r.seq), (r.role, r.preview))
    settings: dict[str, tuple[Any, Any]] = {}
    if a.memctx and b.memctx:
        sa_, sb_ = a.memctx.settings.flat(), b.memctx.settings.flat()
        settings = {k: (sa_.get(k), sb_.get(k)) for k in sorted(set(sa_) | set(sb_))
                    if sa_.get(k) != sb_.get(k)
                    # a value a recording never held cannot have changed
                    and not a.memctx.is_unknown_setting(k)
                    and not b.memctx.is_unknown_setting(k)}
    stored: dict[Ref, StoredMessage | None] = {}  # a message read once, when needed

    def read(ref: Ref) -> StoredMessage | None:
        if ref not in stored:
            msgs = storage.memory.get_messages(ref[0], seqs=[ref[1]])
            stored[ref] = msgs[0] if msgs else None
        return stored[ref]

    def written(ref: Ref) -> datetime | None:
        m = read(ref)
        return m.created_at if m is not None else None

    entries: list[DiffEntry] = []
    for ref in sorted(refs):
        x, y = la.get(ref), lb.get(ref)
        change: Change = ("same" if x == y else "entered" if x is None else
                          "left" if y is None else "moved")
        sa = scores_a.get(ref) if "recalled" in (x, y) else None
        sb = scores_b.get(ref) if "recalled" in (x, y) else None
        if ref not in previews and (msg := read(ref)) is not None:
            from memory_core.text import preview

            previews[ref] = (msg.role, preview(msg))
        role, pv = previews.get(ref, (None, ""))
        out_of = (scores_a if change == "entered" else scores_b) \
            if change in ("entered", "left") and "recalled" in (x, y) else None
        entries.append(DiffEntry(
            thread_id=ref[0], seq=ref[1], role=role, preview=pv, lane_a=x, lane_b=y,
            change=change,
            reason="" if change == "same" else _reason(_Pair(ref, x, y, sa, sb, a, b, settings,
                                                             both, written)),
            score_a=getattr(sa, "score", None), score_b=getattr(sb, "score", None),
            rank_a=getattr(sa, "rank", None), rank_b=getattr(sb, "rank", None),
            kept_out_by=[r.rule for r in out_of.rules(ref)] if out_of is not None else []))
    _same_question(entries)
    deltas: dict[str, tuple[int, int, int]] = {}
    ta = a.memctx.tokens.model_dump() if a.memctx else {}
    tb = b.memctx.tokens.model_dump() if b.memctx else {}
    for lane in LANES:
        va, vb = int(ta.get(lane, 0)), int(tb.get(lane, 0))
        deltas[lane] = (va, vb, vb - va)
    steps, div = align_steps(a, b)
    return RunDiff(run_a=run_a, run_b=run_b, entries=entries, token_deltas=deltas,
                   settings_changed=settings, steps=steps, divergent_at=div,
                   answer_a=run_answer(a.steps, a.output),
                   answer_b=run_answer(b.steps, b.output),
                   fused_scores=_hybrid(a.memctx) or _hybrid(b.memctx))
