"""diff_runs: what entered, left or changed lane between two runs' compositions
(keyed by thread and seq, with the reason), per-lane token deltas, and the
alignment of their model steps and tool calls (SPEC §10.3)."""

from __future__ import annotations

import hashlib
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memory_core.embedders import Embedder
from memory_core.journal import RunData, load_run
from memory_core.provenance import LANES, Memctx
from memory_core.registry import recall_config_from_settings, resolve_embedder
from memory_core.storage.base import Storage
from memory_core.types import canonical_json

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
    answer_a: str | None = None
    answer_b: str | None = None

    def changed(self) -> list[DiffEntry]:
        return [e for e in self.entries if e.change != "same"]


def _lanes_of(data: RunData) -> dict[Ref, str]:
    lanes: dict[Ref, str] = {}
    for it in data.prompt.items:
        if it.thread_id is not None and it.seq is not None:
            lanes.setdefault((it.thread_id, it.seq), it.lane)
    m = data.memctx
    if m is not None:
        for d in m.dropped:
            lanes.setdefault((d.thread_id, d.seq), "dropped")
    return lanes


def _compacted(m: Memctx | None, ref: Ref) -> str | None:
    if m is None or ref[0] != m.thread_id:
        return None
    for o in m.observations:
        if o.from_seq is not None and o.to_seq is not None and o.from_seq <= ref[1] <= o.to_seq:
            return o.id
    return None


class _Scores:
    """Recall scores of any message for a run's query, computed once per run."""

    def __init__(self, storage: Storage, data: RunData, embed: Embedder | None) -> None:
        self.storage, self.data, self.embed = storage, data, embed
        self._cache: dict[Ref, Any] | None = None

    def get(self, ref: Ref) -> Any:
        m = self.data.memctx
        if m is None or not m.settings.recall_enabled or not m.query:
            return None
        for r in m.recalled:
            if (r.thread_id, r.seq) == ref and r.origin in (None, "hit"):
                return r
        for n in m.near_misses:
            if (n.thread_id, n.seq) == ref:
                return n
        if self._cache is None:
            from memory_core.recall import RecallEngine

            engine = RecallEngine(self.storage.memory, resolve_embedder(m.settings, self.embed))
            scored = engine.score_all(m.query, thread_id=self.data.run.thread_id or m.thread_id,
                                      resource_id=self.data.run.resource_id,
                                      config=recall_config_from_settings(m.settings),
                                      as_of=m.scope_snapshot or None)
            self._cache = {(c.thread_id, c.seq): c for c in scored}
        return self._cache.get(ref)


def _f(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def _bar(m: Memctx | None) -> tuple[float | None, int | None]:
    """The recall threshold and top_k a run recorded (None when recall was off)."""
    rc = m.settings.recall if m is not None else None
    return (rc.threshold, rc.top_k) if rc is not None else (None, None)


def _gated(scored: Any, m: Memctx | None) -> float | None:
    """The score a run's threshold applied to: the score in vector mode, the cosine
    alone in hybrid mode (the fused score is never compared with the bar), none in
    lexical mode (the bar does not apply)."""
    rc = m.settings.recall if m is not None else None
    if scored is None or rc is None or rc.mode == "lexical":
        return None
    return getattr(scored, "vector_score" if rc.mode == "hybrid" else "score", None)


def _side(lane: str | None, m: Memctx | None) -> str:
    """Where a message stood in one run, in words true for how the run was recorded."""
    if m is not None and m.imported:
        return "not sent by the client" if lane is None else "sent by the client"
    return "not in the prompt" if lane is None else f"in the {lane} part of the prompt"


def _imported_reason(lane_a: str | None, lane_b: str | None, ma: Memctx | None,
                     mb: Memctx | None) -> str:
    """A change involving an imported run: what each recording shows, never a memory
    decision the recording does not hold."""
    said = f"run A: {_side(lane_a, ma)}; run B: {_side(lane_b, mb)}"
    imported = [n for n, m in (("A", ma), ("B", mb)) if m is not None and m.imported]
    return (f"{said} (the recording of run {' and '.join(imported)} does not say whether "
            "memory recalled anything)")


def _reason(lane_a: str | None, lane_b: str | None, sa: Any, sb: Any, data_a: RunData,
            data_b: RunData, ref: Ref) -> str:
    ma, mb = data_a.memctx, data_b.memctx
    if any(m is not None and m.imported for m in (ma, mb)):
        return _imported_reason(lane_a, lane_b, ma, mb)
    thr, top_k = _bar(mb)
    thr_a = _bar(ma)[0]
    score_b = getattr(sb, "score", None)
    gated_a, gated_b = _gated(sa, ma), _gated(sb, mb)
    if lane_b == "compacted":
        return f"compacted into observation {_compacted(mb, ref)}"
    if lane_b == "dropped":
        d = next((d for d in (mb.dropped if mb else []) if (d.thread_id, d.seq) == ref), None)
        return f"dropped ({d.reason if d else 'unknown reason'})"
    if lane_a is None and lane_b in ("recent", "input"):
        snap = ma.scope_snapshot.get(ref[0]) if ma else None
        if snap is None or ref[1] > snap:
            return "new message, written after run A"
        return "entered the recent window"
    if lane_a in ("recent", "input") and lane_b is None:
        return "left the recent window and was not recalled"
    if lane_a in ("recent", "input") and lane_b == "recalled":
        return f"left the recent window, then recalled (score {_f(score_b)})"
    if lane_a == "recalled" and lane_b is None:
        nb = getattr(sb, "reason", None)
        if nb == "below-threshold" or (gated_b is not None and thr is not None
                                       and gated_b < thr):
            if gated_a is not None and _f(gated_a) == _f(gated_b) and thr_a != thr:
                return (f"unchanged score {_f(gated_b)} ended up across the threshold when "
                        f"the bar moved {_f(thr_a)} → {_f(thr)}")
            return (f"score moved across the threshold: {_f(gated_a)} → {_f(gated_b)} "
                    f"(bar {_f(thr)})")
        if nb == "beyond-top-k" or (sb is not None and getattr(sb, "rank", None) and top_k
                                    and sb.rank > top_k):
            return (f"pushed out by a new hit: rank {getattr(sa, 'rank', None)} → "
                    f"{getattr(sb, 'rank', None)} (top {top_k})")
        if nb == "filtered-out":
            return f"excluded by the filter ({getattr(sb, 'filter_clause', '')})"
        return "no longer recalled"
    if lane_a is None and lane_b == "recalled":
        snap = ma.scope_snapshot.get(ref[0]) if ma else None
        if snap is not None and ref[1] > snap:
            return f"new message, recalled in run B (score {_f(score_b)})"
        if gated_a is not None and thr_a is not None and gated_a < thr_a:
            if gated_b is not None and _f(gated_a) == _f(gated_b):
                # same score in both runs: it was the bar that moved
                return (f"unchanged score {_f(gated_b)} ended up across the threshold when "
                        f"the bar moved {_f(thr_a)} → {_f(thr)}")
            return (f"score moved across the threshold: {_f(gated_a)} → {_f(gated_b)} "
                    f"(bar {_f(thr_a)} → {_f(thr)})")
        return f"recalled in run B (rank {getattr(sb, 'rank', None)}, score {_f(score_b)})"
    return f"moved from {lane_a or 'absent'} to {lane_b or 'absent'}"


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


def diff_runs(storage: Storage, run_a: str, run_b: str, *,
              embed: Embedder | None = None) -> RunDiff:
    """Structural diff of two runs' compositions and their model steps."""
    a, b = load_run(storage, run_a), load_run(storage, run_b)
    la, lb = _lanes_of(a), _lanes_of(b)
    refs = set(la) | set(lb)
    for ref in list(refs):
        if ref not in la and _compacted(a.memctx, ref):
            la[ref] = "compacted"
        if ref not in lb and _compacted(b.memctx, ref):
            lb[ref] = "compacted"
    scores_a, scores_b = _Scores(storage, a, embed), _Scores(storage, b, embed)
    previews: dict[Ref, tuple[str, str]] = {}
    for data in (a, b):
        m = data.memctx
        for r in ([*m.recalled, *m.recent, *m.dropped] if m else []):
            previews.setdefault((r.thread_id, r.seq), (r.role, r.preview))
    entries: list[DiffEntry] = []
    for ref in sorted(refs):
        x, y = la.get(ref), lb.get(ref)
        change: Change = ("same" if x == y else "entered" if x is None else
                          "left" if y is None else "moved")
        sa = scores_a.get(ref) if "recalled" in (x, y) else None
        sb = scores_b.get(ref) if "recalled" in (x, y) else None
        if ref not in previews:
            msgs = storage.memory.get_messages(ref[0], seqs=[ref[1]])
            if msgs:
                from memory_core.provenance import preview

                previews[ref] = (msgs[0].role, preview(msgs[0]))
        role, pv = previews.get(ref, (None, ""))
        entries.append(DiffEntry(
            thread_id=ref[0], seq=ref[1], role=role, preview=pv, lane_a=x, lane_b=y,
            change=change,
            reason="" if change == "same" else _reason(x, y, sa, sb, a, b, ref),
            score_a=getattr(sa, "score", None), score_b=getattr(sb, "score", None),
            rank_a=getattr(sa, "rank", None), rank_b=getattr(sb, "rank", None)))
    deltas: dict[str, tuple[int, int, int]] = {}
    ta = a.memctx.tokens.model_dump() if a.memctx else {}
    tb = b.memctx.tokens.model_dump() if b.memctx else {}
    for lane in LANES:
        va, vb = int(ta.get(lane, 0)), int(tb.get(lane, 0))
        deltas[lane] = (va, vb, vb - va)
    settings: dict[str, tuple[Any, Any]] = {}
    if a.memctx and b.memctx:
        sa_, sb_ = a.memctx.settings.flat(), b.memctx.settings.flat()
        settings = {k: (sa_.get(k), sb_.get(k)) for k in sorted(set(sa_) | set(sb_))
                    if sa_.get(k) != sb_.get(k)
                    # a value a recording never held cannot have changed
                    and not a.memctx.is_unknown_setting(k)
                    and not b.memctx.is_unknown_setting(k)}
    steps, div = align_steps(a, b)
    return RunDiff(run_a=run_a, run_b=run_b, entries=entries, token_deltas=deltas,
                   settings_changed=settings, steps=steps, divergent_at=div,
                   answer_a=a.answer, answer_b=b.answer)
