"""memwb whatif, pin and regress: past runs composed again, as of their time, under
changed memory settings; runs pinned with what they must keep, checked as a suite."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from memory_core.cli.common import (
    MAX_REPEATS,
    DbOpt,
    app,
    cell,
    emit_json,
    fail,
    guarded,
    opened,
    say,
    table,
)
from memory_core.cli.runs import BaseUrlOpt, ModelOpt

SetOpt = Annotated[list[str] | None, typer.Option(
    "--set", help="A setting to change, key=value: recent_n, recall (on/off), "
                  "recall.<field> (threshold, top_k, mode, scope, filter — off for none "
                  "—, …; for runs whose recall ran — recall=on turns it on), token_budget "
                  "(a number or off), token_priority (lanes, comma-separated), "
                  "working_memory (off, thread or resource), observational (on or off). "
                  "Repeat for several, each once.")]


def _signed(n_in: int, n_out: int) -> str:
    return "" if not (n_in or n_out) else f"+{n_in}/-{n_out}"


def _total(tokens: Any) -> int | None:
    return None if tokens is None else sum(tokens.model_dump().values())


@app.command()
def whatif(settings: SetOpt = None, db: DbOpt = None,
           run: Annotated[list[str] | None, typer.Option(
               help="A run to re-compose (repeat for several).")] = None,
           thread: Annotated[str | None, typer.Option(help="Every run of this thread.")] = None,
           resource: Annotated[str | None, typer.Option(
               help="Every run of this resource (a user).")] = None,
           every: Annotated[bool, typer.Option(
               "--every", help="List unchanged runs too (default: only changed ones "
                               "and those that cannot be re-composed).")] = False,
           as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
           ask: Annotated[bool, typer.Option(
               "--ask", help="Re-ask the model of each run whose prompt changed and say "
                             "whether its answer changed (journaled; asked once).")] = False,
           model: ModelOpt = None, base_url: BaseUrlOpt = None,
           repeats: Annotated[int | None, typer.Option(
               help=f"Ask each prompt this many times (1 to {MAX_REPEATS}).", min=1,
               max=MAX_REPEATS)] = None,
           concurrency: Annotated[int, typer.Option(
               help="Runs re-asked at once (1 to 16).", min=1, max=16)] = 2,
           ) -> None:
    """Re-compose past runs as of their time with changed settings: which would have
    been given a different prompt, what enters and leaves each lane, tokens before and
    after, and messages their answer quoted that would be lost. No model is asked.
    Without --run, --thread or --resource, every run.

    With --ask (or --model/--base-url) the runs whose prompt changed are re-asked, the
    model each run recorded unless --model names another; a server the database
    recorded is asked only when --base-url or MEMWB_OPENAI_BASE_URL names it.

    Example: memwb whatif --thread support-3 --set recall.threshold=0.2 --set recent_n=4
    """
    from memory_core.analysis.whatif import parse_changes, what_if

    if not settings:
        raise fail("give at least one --set key=value")
    changes = guarded(lambda: parse_changes(settings))
    asking = ask or model is not None or base_url is not None
    with opened(db, read_only=not asking) as s:
        chosen = _model(model, base_url)
        with typer.progressbar(length=1, label="re-composing", file=sys.stderr,
                               hidden=as_json or not sys.stderr.isatty()) as bar:
            def progress(done: int, total: int) -> None:
                bar.length = total
                bar.update(done - bar.pos)

            report = guarded(lambda: what_if(
                s, changes, run_ids=run, thread_id=thread, resource_id=resource,
                ask=asking, model=chosen, repeats=repeats, concurrency=concurrency,
                progress=progress))
    if as_json:
        emit_json({"changes": report.changes, "sentence": report.sentence,
                   "counts": {k: report.count(k) for k in ("changed", "unchanged", "cannot")},
                   "runs": [r.model_dump(mode="json", exclude={"prompt_after", "memctx_after"})
                            for r in report.runs]})
        _unasked_fail(report)
        return
    rows = []
    first_said: dict[str, str] = {}  # a reason said in full once, by the run it was said of
    for r in report.runs:
        if r.status == "unchanged" and not every:
            continue
        why = r.reason or (f"not asked: {r.ask_error}" if r.ask_error else "")
        if why and first_said.setdefault(why, r.run_id) != r.run_id:
            why = f"as for {first_said[why]}"  # (one reason for many runs, said once)
        lane = {c.lane: c for c in r.lanes}
        rec, rnt = lane.get("recalled"), lane.get("recent")
        rows.append({
            "run": r.run_id, "status": r.status,
            "recalled": _signed(len(rec.entered), len(rec.left)) if rec else "",
            "recent": _signed(len(rnt.entered), len(rnt.left)) if rnt else "",
            "blocks": ", ".join(c.lane for c in r.lanes if c.block_changed),
            "tokens": "" if r.status == "cannot" else
            f"{_total(r.tokens_before)} → {_total(r.tokens_after)}",
            "quoted lost": len(r.key_lost) or "",
            "answer": r.answer.verdict if r.answer else ("not asked" if r.ask_error else ""),
            "why not": why})
    table(rows, ["run", "status", "recalled", "recent", "blocks", "tokens", "quoted lost",
                 *(["answer"] if asking else []), "why not"], whole=["why not"])
    _messages(report)
    say(report.sentence)
    _unasked_fail(report)


def _unasked_fail(report: Any) -> None:
    """Exit 1 when a run that was to be re-asked could not be (the model unreachable …):
    its answer is unknown, so a script must not take the what-if for done (the report,
    printed first, names each and why)."""
    if any(r.ask_error for r in report.runs):
        raise typer.Exit(1)


def _messages(report: Any) -> None:
    """Under the table, each changed run's messages that enter and leave its lanes, and
    those its answer quoted that it would lose (the table counts them); re-asked, its
    answers beside the one recorded (the table gives only the verdict)."""
    for r in report.runs:
        moved = [(sign, c.lane, k) for c in r.lanes for sign, keys in (("+", c.entered),
                                                                      ("-", c.left))
                 for k in keys]
        if not moved and not r.key_lost and r.answer is None:
            continue
        say(f"{r.run_id}:")
        for sign, lane, k in moved:
            said = k.recall_text(entered=sign == "+")
            say(f"  {sign} {lane:<10} {k.thread_id}:{k.seq}  "
                f"{said + ' · ' if said else ''}{cell(k.preview)}")
        for k in r.key_lost:
            say(f"  quoted, lost  {k.thread_id}:{k.seq}  {cell(k.preview)}")
        if r.answer is not None:
            res = r.answer
            say(f"  answer, as recorded:          {cell(res.original_answer or '', whole=True)}")
            for ans in res.baseline_answers:
                say(f"  re-asked as it was:           {cell(ans, whole=True)}")
            for ans in res.new_answers:
                say(f"  re-asked with the change:     {cell(ans, whole=True)}")
            say(f"  verdict: {res.verdict}")


def _model(model: str | None, base_url: str | None) -> Any:
    """The model --model/--base-url name for every run (None: each run's own)."""
    if model is None and base_url is None:
        return None
    from memory_core.runs.registry import model_for_run

    return guarded(lambda: model_for_run(None, override=model, base_url=base_url))


# -- regression suites -------------------------------------------------------------------
@app.command()
def pin(run: Annotated[str, typer.Argument(help="Run id.")],
        suite: Annotated[str, typer.Option(help="The suite to pin it to.")],
        db: DbOpt = None,
        contains: Annotated[list[str] | None, typer.Option(
            help="Its answer must contain this text, in any case (repeatable).")] = None,
        not_contains: Annotated[list[str] | None, typer.Option(
            help="Its answer must not contain this text, in any case (repeatable).")
        ] = None,
        recalled: Annotated[list[str] | None, typer.Option(
            help="THREAD:SEQ of a message it must recall (repeatable).")] = None,
        max_tokens: Annotated[int | None, typer.Option(
            help="Its prompt must stay at or under this many tokens.", min=1)] = None,
        unchanged: Annotated[bool, typer.Option(
            "--unchanged",  # (no --no-unchanged: pinning nothing is no pin)
            help="Its answer must stay the same (the default when nothing else is "
                 "given: keep this answer).")] = False,
        note: Annotated[str | None, typer.Option(help="Why it is pinned.")] = None,
        remove: Annotated[bool, typer.Option(
            "--remove", help="Take the run out of the suite instead.")] = False) -> None:
    """Pin a run to a regression suite with what it must keep (stored in the database;
    pinning again replaces its expectations). `memwb regress` checks them.

    Example: memwb pin move-gate-large-budget --suite gate --contains 4417
    """
    from memory_core.analysis.regress import pin_run, recorded_checks, unpin_run

    with opened(db, read_only=False) as s:
        if remove:
            guarded(lambda: unpin_run(s, suite, run))
            say(f"{run} taken out of suite {suite}")
            return
        given = [*(("contains", t) for t in contains or []),
                 *(("not_contains", t) for t in not_contains or []),
                 *(("recalled", r) for r in recalled or []),
                 *([("max_tokens", str(max_tokens))] if max_tokens is not None else []),
                 *([("unchanged", None)] if unchanged else [])]
        wanted = [_expectation(kind, value) for kind, value in given]
        record = guarded(lambda: pin_run(s, suite, run, wanted, note=note))
        failing = [c for c in recorded_checks(s, record) if c.outcome != "passed"]
    say(f"{run} pinned to suite {suite}: "
        + "; ".join(e.describe() for e in record.expectations))
    for c in failing:  # a pin that fails at once is a target, or a mistake: said
        say(f"  as recorded, “{c.expectation.describe()}” does not hold ({c.seen}): "
            "regress fails until a change meets it", err=True)


@app.command()
def regress(suites: Annotated[list[str] | None, typer.Argument(
                help="Suites to check (default: every suite).")] = None,
            settings: SetOpt = None, db: DbOpt = None,
            as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
            model: ModelOpt = None, base_url: BaseUrlOpt = None,
            repeats: Annotated[int | None, typer.Option(
                help=f"Ask each prompt this many times (1 to {MAX_REPEATS}).", min=1,
                max=MAX_REPEATS)] = None,
            concurrency: Annotated[int, typer.Option(
                help="Runs re-asked at once (1 to 16).", min=1, max=16)] = 2) -> None:
    """Check the pinned runs of regression suites: as recorded, or with --set re-composed
    as of their time under changed settings (and, where an expectation is about the
    answer, re-asked). Exits 1 when any expectation fails or cannot be checked.

    Example: memwb regress gate --set token_budget=120
    """
    from memory_core.analysis.regress import run_suites
    from memory_core.analysis.whatif import parse_changes

    changes = guarded(lambda: parse_changes(settings or []))
    asking = bool(changes.flat())
    with opened(db, read_only=not asking) as s:
        report = guarded(lambda: run_suites(s, suites or None, changes,
                                            model=_model(model, base_url), repeats=repeats,
                                            concurrency=concurrency))
    if as_json:
        emit_json({"passed": report.passed, "changes": report.changes,
                   "sentence": report.sentence,
                   "checks": [c.model_dump(mode="json") for c in report.checks]})
    else:
        notes = any(c.note for c in report.checks)
        table([{"suite": c.suite, "run": c.run_id, "expectation": c.expectation.describe(),
                "result": c.outcome.upper() if c.outcome != "passed" else "ok",
                "seen": c.seen, "pinned because": c.note or ""} for c in report.checks],
              ["suite", "run", "expectation", "result",
               *(["pinned because"] if notes else []), "seen"], whole=["seen"])
        say(report.sentence)
    if not report.passed:
        raise typer.Exit(1)


def _expectation(kind: str, value: str | None) -> Any:
    from memory_core.analysis.regress import expectation_from_text

    return guarded(lambda: expectation_from_text(kind, value))
