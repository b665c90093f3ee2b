"""The What-if page's parts that are not widgets: which runs a scope holds and the
settings they recorded (the form is prefilled with them), the form's values and the
URL's as the library's changes, the outcome in plain words for people who do not write
code, and the page's reads and writes (re-composing, re-asking) on the database in use.

The library does the work (``memory_core.analysis.whatif``); nothing here composes."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import streamlit as st

from app import services
from memory_core.errors import InvalidInputError

if TYPE_CHECKING:
    from memory_core.analysis.whatif import RunWhatIf, WhatIfReport
    from memory_core.models.base import Model

ScopeKind = Literal["thread", "resource", "all"]
#: the settings the form offers, as the library (and the URL) names them
SETTING_KEYS = ("recent_n", "recall", "recall.threshold", "recall.top_k", "recall.mode",
                "token_budget")
#: how many runs' records the form's prefill reads at most (the newest)
SETTINGS_READ_LIMIT = 2000
MODES = ("vector", "lexical", "hybrid")
MODE_WORDS = {"vector": "by meaning", "lexical": "by the words they share",
              "hybrid": "by meaning and by the words they share"}


@dataclass(frozen=True)
class Scope:
    """Which past runs: a thread's, a resource's (a user's) or every run."""

    kind: ScopeKind
    id: str | None = None

    @property
    def thread_id(self) -> str | None:
        return self.id if self.kind == "thread" else None

    @property
    def resource_id(self) -> str | None:
        return self.id if self.kind == "resource" else None


def scope_run_ids(runs: Sequence[Any], scope: Scope) -> list[str]:
    """The runs of ``scope`` among ``runs`` (``services.cached_runs``, oldest first)."""
    if scope.kind == "thread":
        return [r.run_id for r in runs if r.thread_id == scope.id]
    if scope.kind == "resource":
        return [r.run_id for r in runs if r.resource_id == scope.id]
    return [r.run_id for r in runs]


# -- what the runs recorded -----------------------------------------------------------------
@dataclass(frozen=True)
class Recorded:
    """The settings a scope's runs recorded, each with every value seen (recall ``off``,
    ``token_budget`` None: no limit), read from the newest ``SETTINGS_READ_LIMIT`` runs;
    ``skipped`` of those were not composed here (imported, or no record)."""

    values: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    read: int = 0
    skipped: int = 0
    total: int = 0

    def one(self, key: str) -> tuple[bool, Any]:
        """(True, the value) when every run that has the setting recorded the same one."""
        seen = self.values.get(key, ())
        return (True, seen[0]) if len(seen) == 1 else (False, None)


def _settings_of(settings: Any) -> dict[str, Any]:
    """One run's settings as the form's keys (the recall fields only with a recall
    config)."""
    out: dict[str, Any] = {
        "recent_n": settings.recent_n,
        "recall": "on" if settings.recall is not None and settings.recall_enabled else "off",
        "token_budget": next((p.get("limit") for p in settings.processors
                              if p.get("name") == "token-limiter"), None)}
    if settings.recall is not None:
        out.update({"recall.threshold": round(float(settings.recall.threshold), 3),
                    "recall.top_k": settings.recall.top_k, "recall.mode": settings.recall.mode})
    return out


@st.cache_data(ttl=services.CACHE_TTL_SECONDS, show_spinner=False)
def cached_recorded(url: str, kind: ScopeKind, scope_id: str | None) -> Recorded:
    """What the runs of a scope recorded (the newest ``SETTINGS_READ_LIMIT`` of them)."""
    from memory_core.journal import RunReader

    run_ids = scope_run_ids(services.cached_runs(url), Scope(kind, scope_id))
    chosen = run_ids[-SETTINGS_READ_LIMIT:]
    seen: dict[str, set[Any]] = {k: set() for k in SETTING_KEYS}
    skipped = 0
    storage = services.get_services(url).storage
    with storage.session():
        for run_id in chosen:
            try:
                memctx = RunReader(storage.runs, run_id).memctx()
            except Exception:  # noqa: BLE001 - an unreadable record prefills nothing
                memctx = None
            if memctx is None or memctx.source != "composed":
                skipped += 1
                continue
            for key, value in _settings_of(memctx.settings).items():
                seen[key].add(value)

    def order(v: Any) -> tuple[bool, Any]:
        return (v is None, v if v is not None else 0)

    return Recorded(values={k: tuple(sorted(v, key=order)) for k, v in seen.items() if v},
                    read=len(chosen), skipped=skipped, total=len(run_ids))


# -- the changes ------------------------------------------------------------------------------
def _same(key: str, a: Any, b: Any) -> bool:
    if key == "recall.threshold" and isinstance(a, int | float) and isinstance(b, int | float):
        return math.isclose(float(a), float(b), abs_tol=5e-4)
    return bool(a == b)


def changes_from_form(values: Mapping[str, Any], recorded: Recorded) -> dict[str, Any]:
    """The form's values as changes: a value (None: keep each run's own) that differs
    from what every run of the scope recorded."""
    out: dict[str, Any] = {}
    for key in SETTING_KEYS:
        value = values.get(key)
        if value is None:
            continue
        single, was = recorded.one(key)
        if single and _same(key, value, was):
            continue
        out[key] = value
    return out


def changes_from_url(params: Mapping[str, str | None]) -> tuple[dict[str, Any], str | None]:
    """The changes a URL names (``recall.threshold=0.2``…), checked as the library
    checks them; (the valid ones, the first problem in words or None)."""
    from memory_core.analysis.whatif import parse_changes

    out: dict[str, Any] = {}
    problem = None
    for key in SETTING_KEYS:
        raw = params.get(key)
        if raw is None or raw == "":
            continue
        try:
            parsed = parse_changes([f"{key}={raw}"]).flat()
        except InvalidInputError as e:
            problem = problem or str(e)
            continue
        if key in parsed:
            out[key] = parsed[key]
    return out, problem


def url_value(value: Any) -> str:
    """A change's value as the URL carries it (what ``changes_from_url`` reads back)."""
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


# -- in plain words ---------------------------------------------------------------------------
def _more_or_less(key: str, new: Any, recorded: Recorded, more: str, less: str,
                  plain: str) -> str:
    """``more`` when ``new`` is above what some runs recorded and below none, ``less``
    when below some and above none, else ``plain``."""
    seen = [v for v in recorded.values.get(key, ()) if isinstance(v, int | float)]
    if seen and isinstance(new, int | float):
        if new >= max(seen) and new > min(seen):
            return more
        if new <= min(seen) and new < max(seen):
            return less
    return plain


def setting_words(key: str, value: Any, recorded: Recorded) -> str:
    """One change in the words of someone who does not write code."""
    single, old = recorded.one(key)
    old = old if single else None
    if key == "recall.threshold":
        return _more_or_less(key, value, recorded, "a higher bar for “similar enough”",
                             "a lower bar for “similar enough”",
                             # (as set: 0.434 was said "0.43")
                             f"a bar for “similar enough” of {value:g}")
    if key == "recall.top_k":
        room = f"room for up to {value} remembered messages"
        return room + (f" instead of {old}" if old is not None and old != value else "")
    if key == "recall.mode":
        return f"older messages found {MODE_WORDS.get(str(value), str(value))}"
    if key == "recall":
        return ("memory of older messages switched off" if value == "off"
                else "memory of older messages switched on")
    if key == "recent_n":
        view = f"the latest {value} message{'' if value == 1 else 's'} kept in view"
        return view + (f" instead of {old}" if old is not None and old != value else "")
    if key == "token_budget":
        if value == "off":
            return "no limit on the prompt's length"
        if not any(isinstance(v, int) for v in recorded.values.get(key, ())):
            return f"a limit of {value} tokens on the prompt's length"
        instead = f" instead of {old}" if old is not None else ""
        return _more_or_less(key, value, recorded,
                             f"more room in the prompt ({value} tokens{instead})",
                             f"less room in the prompt ({value} tokens{instead})",
                             f"room for {value} tokens in the prompt")
    return f"{key} = {value}"


def _joined(parts: Sequence[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _runs(n: int) -> str:
    return f"{n:,} past run" + ("" if n == 1 else "s")


def plain_summary(report: WhatIfReport, recorded: Recorded) -> list[str]:
    """The outcome for the demo audience, sentence by sentence: what was tried, how many
    runs it changes and how (no setting keys, no codes)."""
    tried = [setting_words(k, v, recorded) for k, v in report.changes.items()]
    head = f"With {_joined(tried)}" if tried else "With every setting as it was"
    n, changed, cannot = len(report.runs), report.count("changed"), report.count("cannot")
    if n == 0:
        return ["There are no past runs here to try it on."]
    if changed == 0 and cannot == n:  # not "none would change": none could be tried
        lines = [f"{head}, none of the {_runs(n)} could be tried again."]
    elif changed == 0:
        lines = [f"{head}, none of the {_runs(n - cannot)} "
                 + ("that could be tried " if cannot else "")
                 + "would have been given anything different."]
    else:
        moved = [r for r in report.runs if r.status == "changed"]
        gained = sum(1 for r in moved if r.entered)
        lost = sum(1 for r in moved if r.left)
        relied = sum(1 for r in moved if r.key_lost)
        reworded = sum(1 for r in moved if any(c.block_changed for c in r.lanes))
        lines = [f"{head}, {changed:,} of {n:,} past runs would have been given a different "
                 "prompt."]
        if gained:
            lines.append(f"{_runs(gained)} would have remembered something "
                         f"{'it was' if gained == 1 else 'they were'} not given.")
        if lost:
            lines.append(f"{_runs(lost)} would have lost something "
                         f"{'it was' if lost == 1 else 'they were'} given"
                         + (f" — {relied:,} of them something {'its' if relied == 1 else 'their'}"
                            " answer relied on." if relied else
                            f", none of it quoted in {'its' if lost == 1 else 'their'} "
                            "answer."))
        if reworded:
            lines.append(f"{_runs(reworded)} would have had {'its' if reworded == 1 else 'their'}"
                         " instructions, notes or summaries change.")
    asked = [r for r in report.runs if r.answer is not None]
    if asked:
        differ = sum(1 for r in asked if r.answer is not None and r.answer.verdict == "changed")
        lines.append(f"Asked again, {differ:,} of {len(asked):,} "
                     f"answer{'s' if len(asked) != 1 else ''} changed.")
    unasked = sum(1 for r in report.runs if r.answer is None and r.ask_error)
    if unasked:
        lines.append(f"{_runs(unasked)} could not be asked again (the table below says "
                     "why).")
    off = sum(1 for r in report.runs if r.status == "cannot" and r.recall_off)
    if off:  # (the form's Recall box: "On" lets a recall setting reach them)
        lines.append(f"{_runs(off)} had recall off, so a recall setting changes nothing "
                     "there: set Recall to On as well to try it on "
                     f"{'it' if off == 1 else 'them'} (listed below).")
    if cannot - off:
        lines.append(f"{_runs(cannot - off)} could not be tried again: how "
                     f"{'it was' if cannot - off == 1 else 'they were'} put together, or what "
                     "was stored then, is not recorded (listed below).")
    return lines


@dataclass(frozen=True)
class Moved:
    """A message that enters (or leaves) the prompts of some runs."""

    thread_id: str
    seq: int
    preview: str
    runs: int
    quoted: bool = False  # an answer quoted it (for a message lost)


def _words(text: str | None) -> set[str]:
    from memory_core.text import STOP_WORDS, tokenize

    return {t for t in tokenize(text or "") if t not in STOP_WORDS and len(t) > 2}


def most_moved(report: WhatIfReport, *, entered: bool, limit: int = 3) -> list[Moved]:
    """The messages the runs would gain (or lose) that matter most: those an answer
    quoted (for a loss), then those sharing most words with the question of a run that
    gains (or loses) them — what was asked about — then those most runs gain (or lose)."""
    counts: Counter[tuple[str, int]] = Counter()
    previews: dict[tuple[str, int], str] = {}
    asked_about: dict[tuple[str, int], int] = {}
    quoted = {(k.thread_id, k.seq) for r in report.runs for k in r.key_lost}
    for r in report.runs:
        refs = {(k.thread_id, k.seq): k.preview for c in r.lanes
                for k in (c.entered if entered else c.left)}
        counts.update(refs.keys())
        previews.update(refs)
        question = _words(r.memctx_after.query if r.memctx_after is not None else None)
        for ref, text in refs.items():
            asked_about[ref] = max(asked_about.get(ref, 0), len(question & _words(text)))
    ranked = sorted(counts, key=lambda ref: (not entered and ref not in quoted,
                                             -asked_about[ref], -counts[ref], ref))
    return [Moved(t, s, previews[(t, s)], counts[(t, s)],
                  quoted=not entered and (t, s) in quoted) for t, s in ranked[:limit]]


def token_totals(runs: Sequence[RunWhatIf], lanes: Sequence[str]
                 ) -> dict[str, tuple[int, int]]:
    """Tokens per lane over ``runs``, as recorded and in the what-if."""
    out = {lane: [0, 0] for lane in lanes}
    for r in runs:
        for i, tokens in enumerate((r.tokens_before, r.tokens_after)):
            if tokens is not None:
                for lane in lanes:
                    out[lane][i] += int(getattr(tokens, lane, 0))
    return {lane: (a, b) for lane, (a, b) in out.items()}


def signed(entered: int, left: int) -> str:
    """``+2 / −1`` (empty when nothing moved)."""
    if not (entered or left):
        return ""
    return " / ".join(p for p in (f"+{entered}" if entered else "",
                                  f"−{left}" if left else "") if p)


# -- the page's reads and writes ------------------------------------------------------------
def compose(url: str, changes: Mapping[str, Any], scope: Scope,
            progress: Callable[[int, int], None] | None = None) -> WhatIfReport:
    """The scope's runs re-composed under ``changes`` (no model asked, nothing written)."""
    from memory_core.analysis.whatif import what_if

    return what_if(services.get_services(url).storage, dict(changes), progress=progress,
                   thread_id=scope.thread_id, resource_id=scope.resource_id)


@st.cache_data(ttl=services.CACHE_TTL_SECONDS, show_spinner=False)
def cached_ask_problems(url: str, run_ids: tuple[str, ...]) -> dict[str, str]:
    """Why each of ``run_ids`` whose recorded model cannot be asked again here cannot
    (as the counterfactual page decides it: ``plan_model_for_run``); the others are
    left out."""
    from memory_core.journal import RunReader
    from memory_core.runs.registry import RecordedServerError, plan_model_for_run

    out: dict[str, str] = {}
    storage = services.get_services(url).storage
    with storage.session():
        for run_id in run_ids:
            step = RunReader(storage.runs, run_id).step(0)
            try:
                plan_model_for_run(step.model if step is not None else None)
            except RecordedServerError as e:
                out[run_id] = (f"its model was asked at a server this database names "
                               f"({e.host}); set MEMWB_OPENAI_BASE_URL to ask it again, or "
                               "choose the offline reader")
            except InvalidInputError as e:
                out[run_id] = str(e)
    return out


def ask(url: str, changes: Mapping[str, Any], run_ids: Sequence[str], *,
        model: Model | None, progress: Callable[[int, int], None] | None = None
        ) -> WhatIfReport:
    """Re-ask ``run_ids`` (runs whose prompt the changes change) with ``model`` (None:
    each run's own), journaled under the what-if's key; the cached reads are dropped
    afterwards."""
    from memory_core.analysis.whatif import what_if

    try:
        with services.writable_storage(url) as storage:
            return what_if(storage, dict(changes), run_ids=list(run_ids), ask=True,
                           model=model, progress=progress)
    finally:
        services.after_write()
