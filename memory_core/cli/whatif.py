"""memwb whatif: past runs composed again, as of their time, under changed memory
settings; what would have been given to the model instead."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from memory_core.cli.common import DbOpt, app, emit_json, fail, guarded, opened, say, table

SetOpt = Annotated[list[str] | None, typer.Option(
    "--set", help="A setting to change, key=value: recent_n, recall (on/off), "
                  "recall.<field> (threshold, top_k, mode, scope, …), token_budget "
                  "(a number or off), token_priority (lanes, comma-separated), "
                  "working_memory / observational (off). Repeat for several.")]


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
           ) -> None:
    """Re-compose past runs as of their time with changed settings: which would have
    been given a different prompt, what enters and leaves each lane, tokens before and
    after, and messages their answer quoted that would be lost. No model is asked.
    Without --run, --thread or --resource, every run.

    Example: memwb whatif --thread support-3 --set recall.threshold=0.2 --set recent_n=4
    """
    from memory_core.analysis.whatif import parse_changes, what_if

    if not settings:
        raise fail("give at least one --set key=value")
    changes = guarded(lambda: parse_changes(settings))
    with opened(db) as s:
        report = guarded(lambda: what_if(s, changes, run_ids=run, thread_id=thread,
                                         resource_id=resource))
    if as_json:
        emit_json({"changes": report.changes, "sentence": report.sentence,
                   "counts": {k: report.count(k) for k in ("changed", "unchanged", "cannot")},
                   "runs": [r.model_dump(mode="json", exclude={"prompt_after", "memctx_after"})
                            for r in report.runs]})
        return
    rows = []
    for r in report.runs:
        if r.status == "unchanged" and not every:
            continue
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
            "why not": r.reason or ""})
    table(rows, ["run", "status", "recalled", "recent", "blocks", "tokens", "quoted lost",
                 "why not"])
    say(report.sentence)
