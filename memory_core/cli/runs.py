"""memwb threads, runs, inspect, replay, verify, counterfactual, why, diff: reading
and questioning recorded runs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

# typer (0.29) vendors click; its exception classes live here
from memory_core.cli.common import (
    MAX_REPEATS,
    DbOpt,
    app,
    emit_json,
    fail,
    guarded,
    opened,
    parse_ref,
    say,
    table,
)

if TYPE_CHECKING:
    from memory_core.storage.base import Storage


@app.command()
def threads(db: DbOpt = None,
            resource: Annotated[str | None, typer.Option(help="Only this resource.")] = None
            ) -> None:
    """List threads (newest first) with their message and run counts.

    Example: memwb threads --resource cust-anna
    """
    from memory_core.analysis import views

    with opened(db) as s:
        if resource is not None:
            known = guarded(lambda: views.list_resources(s))
            if resource not in known:
                raise fail(f"resource {resource!r} does not exist; resources are "
                           f"{', '.join(known) or '(none)'}")
        rows = guarded(lambda: views.thread_summaries(s, resource))
    table([r.model_dump() for r in rows],
          ["thread_id", "resource_id", "title", "message_count", "run_count",
           "last_activity"])


@app.command()
def runs(db: DbOpt = None,
         thread: Annotated[str | None, typer.Option(help="Only runs of this thread.")] = None
         ) -> None:
    """List runs (oldest first) with their agent, thread and status (and a failed
    run's error).

    Example: memwb runs --thread support-3
    """
    from memory_core.analysis import views

    with opened(db) as s:
        if thread is not None:
            guarded(lambda: s.memory.require_thread(thread))
        rows = guarded(lambda: views.list_runs(s, thread_id=thread))
    # a failed run's error (its first 60 characters) where any run listed failed
    table([r._asdict() for r in rows], ["run_id", "agent", "thread_id", "status",
                                        "started_at", *(["error"] if any(
                                            r.error for r in rows) else [])])


@app.command()
def inspect(run: Annotated[str, typer.Argument(help="Run id.")], db: DbOpt = None,
            as_json: Annotated[bool, typer.Option(
                "--json", help="Print the provenance record (:memctx) as JSON, without "
                               "the fields it lists as unknown.")] = False
            ) -> None:
    """Show what a run's prompt held, lane by lane, and for an imported run what its
    recording says of the call (model, parameters, tools offered, usage beside our
    estimate); or its provenance record as JSON.

    Example: memwb inspect support-3-forgot --json
    """
    from memory_core.analysis import views

    with opened(db) as s:
        if as_json:
            from memory_core.journal import RunReader

            guarded(lambda: s.runs.require_run(run))
            reader = RunReader(s.runs, run)
            memctx = guarded(reader.memctx)  # upgraded to the current record version
            if memctx is None:
                raise fail(f"run {run!r} has no provenance record ({reader.keys.memctx})")
            emit_json(memctx.known_json())  # (never a placeholder for what is unknown)
            return
        v = guarded(lambda: views.run_view(s, run))
    rows = [{**it.model_dump(), **{k: f"{it_v:.3f}" for k in ("score", "similarity")
                                   if (it_v := getattr(it, k)) is not None},
             **({"role": f"{it.role} (error)"} if it.error else {})}  # (is_error: told)
            for lane in v.lanes for it in lane.items]
    # hybrid recall's scores are fused: the similarity beside them is what its bar is on
    fused = any(it.similarity is not None for lane in v.lanes for it in lane.items)
    table(rows, ["lane", "thread_id", "seq", "role", "score", *(["similarity"] if fused else []),
                 "rank", "origin", "reason", "tokens", "text"])
    say("")
    say("tokens: " + ", ".join(f"{lv.lane} {lv.tokens}" for lv in v.lanes
                                      if lv.lane != "dropped") + f" (total {v.total_tokens})")
    for line in v.recorded.lines() if v.recorded is not None else []:
        say(line)
    for tc in v.tool_calls:
        outcome = tc.error if tc.error is not None else tc.result
        say(f"tool: {tc.name}({tc.args}) → {outcome} [{tc.status}]")
    for note in v.notes:
        say(f"note: {note}")
    if v.unknown_fields:
        say("note: not in the record (shown as unknown): " + ", ".join(v.unknown_fields))
    if v.error:
        say(f"failed: {v.error}")
    # an imported run "failed" where no answer was recorded (an error, or a body the
    # recorder did not keep): what is known is that none is in the recording
    say(f"answer: {v.answer}" if v.answer is not None else
        "answer: none" + (" recorded (the line above says why)" if v.error and v.recorded
                          else " (the run failed)" if v.error else ""))


@app.command()
def replay(run: Annotated[str, typer.Argument(help="Run id.")], db: DbOpt = None) -> None:
    """Re-execute a run from its journal alone (the model is never called) and check
    that prompt, step inputs and output are byte-identical.

    Example: memwb replay support-3-forgot
    """
    from memory_core.runs.replay import replay as do_replay

    with opened(db) as s:
        r = guarded(lambda: do_replay(s, run))
    if r.integrity == "redacted":
        say(f"replay of {run}: redacted by the erasure of {', '.join(r.redacted_by)}; "
                   "its records were rewritten, so byte-identity is not checked")
        return
    from memory_core.analysis.wording import counted

    sealed = "" if r.integrity == "ok" else " (unsealed: recorded before sealing existed)"
    # a step recorded without its input's hashes (an imported call, an older journal)
    # re-derives the same output, but its input has nothing to be compared with
    if not r.unverified_steps:
        checked = f"{r.verified_steps} verified"
    elif not r.verified_steps:
        checked = ("recorded without input hashes, so "
                   + ("its input is" if r.steps == 1 else "their inputs are") + " not compared")
    else:
        checked = f"{r.verified_steps} verified, {r.unverified_steps} without input hashes"
    say(f"replay of {run}: identical ({counted(r.steps, 'step')}, {checked}; "
        f"{counted(r.tool_calls, 'tool call')}; "
        f"{counted(r.messages_checked, 'stored message')} checked){sealed}")
    for note in r.notes:
        say(f"note: {note}")


@app.command()
def verify(run: Annotated[str | None, typer.Argument(help="Run id (or --all).")] = None,
           db: DbOpt = None,
           all_runs: Annotated[bool, typer.Option(
               "--all", help="Verify every run in the database.")] = False) -> None:
    """Check runs against their seals: report the first record that no longer matches,
    and say once what the seal does not cover. Exit code 1 when any run was tampered
    with; else 3 when a run never finished (a crash, or a run still in progress: a
    crash never reads as tampering); else 0.

    Example: memwb verify --all
    """
    from memory_core.journal.seal import NOT_COVERED, verify_run

    if (run is None) == (not all_runs):
        raise fail("give one run id or --all")
    with opened(db) as s, s.session():  # one connection for every run's reads
        ids = ([r.run_id for r in guarded(lambda: s.runs.list_runs())] if all_runs
               else [guarded(lambda: s.runs.require_run(run or "")).run_id])
        reports = [verify_run(s, rid) for rid in ids]
    bad = interrupted = 0
    for rep in reports:
        if rep.status == "tampered":
            bad += 1
            say(f"{rep.run_id}: TAMPERED at {rep.first_mismatch or 'a record'}: "
                       f"{rep.detail}")
        elif rep.status == "interrupted":
            interrupted += 1
            say(f"{rep.run_id}: {rep.detail}")
        else:
            extra = f" — {rep.detail}" if rep.detail and rep.status != "ok" else ""
            chain = f" chain {rep.chain[:16]}" if rep.chain else ""
            say(f"{rep.run_id}: {rep.status}{chain}{extra}")
    say(NOT_COVERED)
    unfinished = f", {interrupted} interrupted (never finished)" if interrupted else ""
    say(f"{len(reports)} runs checked, {bad} tampered{unfinished}")
    if bad:
        raise typer.Exit(1)
    if interrupted:
        raise typer.Exit(INTERRUPTED_EXIT)


#: ``memwb verify``'s exit code when a run never finished and none was tampered with
INTERRUPTED_EXIT = 3


ModelOpt = Annotated[str | None, typer.Option(
    "--model", help="The model to re-ask: 'reader' (the offline reader) or a model name "
                    "served by an OpenAI-compatible server. Default: the model the run "
                    "recorded.")]
BaseUrlOpt = Annotated[str | None, typer.Option(
    "--base-url", help="The OpenAI-compatible server's base URL, e.g. "
                       "http://127.0.0.1:11434/v1. Default: $MEMWB_OPENAI_BASE_URL. The "
                       "server a run recorded is asked only when named here or there.")]


def _chosen_model(storage: Storage, run: str, model: str | None,
                  base_url: str | None) -> Any:
    """The model --model/--base-url choose for re-asking ``run`` (None: the library
    rebuilds the recorded one)."""
    if model is None and base_url is None:
        return None
    from memory_core.journal import load_run
    from memory_core.runs.registry import model_for_run

    data = guarded(lambda: load_run(storage, run))
    embed_name = data.memctx.settings.embedder if data.memctx else None
    return guarded(lambda: model_for_run(data.model_info or None, override=model,
                                         base_url=base_url, embed_name=embed_name))


@app.command()
def counterfactual(run: Annotated[str, typer.Argument(help="Run id.")], db: DbOpt = None,
                   subtract: Annotated[list[str] | None, typer.Option(
                       help="'all' (the recalled messages) or THREAD:SEQ of any stored "
                            "message the run was given (repeatable).")] = None,
                   lane: Annotated[list[str] | None, typer.Option(
                       help="A whole lane to remove: recalled, recent, observations, "
                            "working_memory (repeatable).")] = None,
                   put_back: Annotated[list[str] | None, typer.Option(
                       help="THREAD:SEQ of a dropped message, a near miss or a "
                            "message given only as a summary (repeatable).")
                   ] = None,
                   repeats: Annotated[int | None, typer.Option(
                       help="Ask each prompt this many times (default: 1 for a model at "
                            f"temperature 0, else 3 to measure its noise first); 1 to "
                            f"{MAX_REPEATS}.", min=1, max=MAX_REPEATS)] = None,
                   model: ModelOpt = None, base_url: BaseUrlOpt = None) -> None:
    """Re-run a run's frozen prompt with parts removed (or put back) and say whether the
    answer changed. The result is journaled with the run. The model is the one the run
    recorded unless --model/--base-url choose another; a server the database recorded is
    asked again only when --base-url or MEMWB_OPENAI_BASE_URL names it.

    Example: memwb counterfactual support-3-card --subtract all
    Example: memwb counterfactual my-run --subtract all --model llama3.1 --base-url http://127.0.0.1:11434/v1
    """
    from memory_core.analysis.counterfactual import counterfactual as cf

    subs = subtract or []
    if "all" in subs and len(subs) > 1:
        raise fail("--subtract all cannot be combined with THREAD:SEQ refs")
    sub: Any = "all" if subs == ["all"] else [parse_ref(x) for x in subs]
    backs = [parse_ref(x) for x in put_back or []]
    if not sub and not lane and not backs:
        raise fail("nothing to change; give --subtract, --lane or --put-back")
    with opened(db, read_only=False) as s:
        chosen = _chosen_model(s, run, model, base_url)
        res = guarded(lambda: cf(s, run, subtract=sub, lanes=lane or [], put_back=backs,
                                 repeats=repeats, model=chosen))
    say(f"variant:  {res.description}")
    say(f"models:   {_answered_by(res)}")
    say(f"original: {res.original_answer}")
    for ans in res.baseline_answers:
        say(f"baseline: {ans}")
    for ans in res.new_answers:
        say(f"new:      {ans}")
    for note in res.notes:
        say(f"note:     {note}")
    say(f"judged:   {_judged_against(res)}")
    say(f"verdict:  {res.verdict}")


def _answered_by(res: Any) -> str:
    """Which model gave each answer of a counterfactual: the original is the run's
    recorded model's, the baseline and new answers the re-asked model's."""
    asked = res.model.get("name", "?")
    recorded = (res.recorded_model or {}).get("name")
    if res.same_model is False:
        return (f"original by {recorded or 'the model the run recorded'} (the run's "
                f"recorded model); baseline and new by {asked} (re-asked)")
    if res.same_model:
        return f"every answer by {asked} (the run's recorded model)"
    return f"baseline and new by {asked} (re-asked)"  # an older record: not said


def _judged_against(res: Any) -> str:
    """What the verdict compared the new answers with, and how close the first is."""
    base = f"the baseline ({len(res.baseline_answers)} re-ask(s) of the unchanged prompt)"
    if res.same_model is False:
        return (f"new against {base} only: the original came from another model, and "
                f"answers of two models are not compared (similarity to the baseline "
                f"{res.similarity:.3f})")
    against = f"{base} and the original" if res.baseline_answers else "the original"
    return f"new against {against} (similarity to the original {res.similarity:.3f})"


@app.command()
def attribute(run: Annotated[str, typer.Argument(help="Run id.")], db: DbOpt = None,
              lanes: Annotated[bool, typer.Option(
                  "--lanes", help="Take away whole lanes too.")] = False,
              repeats: Annotated[int | None, typer.Option(
                  help=f"Ask each prompt this many times (1 to {MAX_REPEATS}).", min=1,
                  max=MAX_REPEATS)] = None,
              model: ModelOpt = None, base_url: BaseUrlOpt = None,
              as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
              ) -> None:
    """Which message carried the answer: take away each stored message the run was
    given (recalled or recent; with --lanes each lane too), one at a time, re-ask, and
    rank them by how much the answer changed. Each re-ask is journaled with the run.

    Example: memwb attribute support-3-fixed --lanes
    """
    from memory_core.analysis.counterfactual import attribution

    with opened(db, read_only=False) as s:
        chosen = _chosen_model(s, run, model, base_url)
        ranked = guarded(lambda: attribution(s, run, model=chosen, include_lanes=lanes,
                                             repeats=repeats))
    if as_json:
        emit_json([a.model_dump(mode="json") for a in ranked])
        return
    table([{"rank": i + 1,
            "taken away": f"{a.thread_id}:{a.seq}" if a.kind == "message"
            else f"the {a.lane} lane",
            "lane": a.lane or "", "verdict": a.verdict, "effect": f"{a.effect:.2f}",
            "message": a.preview if a.kind == "message" else "",
            "answer without it": a.answer_without} for i, a in enumerate(ranked)],
          ["rank", "taken away", "lane", "verdict", "effect", "message", "answer without it"])
    changed = [a for a in ranked if a.verdict == "changed"]
    say(f"{len(changed)} of {len(ranked)} changed the answer when taken away"
        + (f"; most: {changed[0].thread_id}:{changed[0].seq}" if changed
           and changed[0].kind == "message" else "") + ".")


@app.command()
def why(run: Annotated[str, typer.Argument(help="Run id.")], db: DbOpt = None,
        seq: Annotated[int | None, typer.Option(help="Seq of the message.")] = None,
        thread: Annotated[str | None, typer.Option(
            help="Thread of the --seq message (default: the run's thread).")] = None,
        text: Annotated[str | None, typer.Option(
            help="A phrase to look for: in stored messages and in every part the model "
                 "was given (tool calls and results, instructions …).")] = None) -> None:
    """Explain why a message did (or did not) reach the model in a run; for a phrase,
    the place found and the part of it that matched (evidence ``part``).

    Example: memwb why support-3-forgot --text "refund of €240"
    """
    from memory_core.analysis.forgotten import other_matches_hold_it, why_forgotten

    if (seq is None) == (text is None):
        raise fail("give exactly one of --seq or --text")
    if thread is not None and seq is None:
        raise fail("--thread goes with --seq, not --text")
    with opened(db) as s:
        target: Any = text
        if seq is not None:
            tid = thread or guarded(lambda: s.runs.require_run(run)).thread_id
            if tid is None:
                raise fail(f"run {run!r} has no thread; pass --thread")
            target = (tid, seq)
        exp = guarded(lambda: why_forgotten(s, run, target))
    # for a phrase, the part that matched: a stored message's (text, tool-result …), or
    # one of the prompt that is none (its fate names it: instructions, working-memory …)
    part = exp.evidence.get("part") if text is not None else None
    said = [f"{exp.thread_id}:{exp.seq}" if exp.thread_id is not None else None,
            part if part != exp.fate else None]
    where = f" ({', '.join(w for w in said if w)})" if any(said) else ""
    # a phrase no place holds word for word: the fate is its closest match's
    closest = "closest match " if text is not None and "matched" in exp.evidence else ""
    say(f"{closest}{exp.named}{where}: {exp.sentence}")
    _say_rules(exp.rules, run)
    for k, v in exp.evidence.items():
        say(f"  {k}: {v}")
    if exp.other_matches:
        label = "other messages holding it" if other_matches_hold_it(exp) \
            else "other near matches"
        say(f"  {label}: " + ", ".join(f"{t}:{q}" for t, q in exp.other_matches))


def _say_rules(rules: list[Any], run: str) -> None:
    """Every rule that kept the message out, in the order composition applied them,
    each with what would have let it past; then all of that together, as a what-if."""
    from memory_core.analysis.fate_rules import let_in
    from memory_core.analysis.wording import value_text

    if not rules:
        return
    say("  kept out by (in the order composition applied them):")
    for i, r in enumerate(rules, 1):
        past = (f"; let in by {r.admits}" if r.admits else "; no setting lets it past")
        say(f"    {i}. {r.rule}: {r.said}{past}")
    lifted = let_in(rules)
    if lifted is None:
        return
    # (the filter lets it past by being none: recall.filter=off)
    sets = " ".join(f"--set {r.setting}={value_text(r.needed)}" if r.needed is not None
                    else f"--set {r.setting}=off" for r in rules
                    if r.setting is not None and (r.needed is not None
                                                  or r.setting == "recall.filter"))
    say(f"  let in by: {lifted}"
        + (f" (try: memwb whatif --run {run} {sets})" if sets else ""))


@app.command()
def diff(run_a: Annotated[str, typer.Argument(help="First run id.")],
         run_b: Annotated[str, typer.Argument(help="Second run id.")],
         db: DbOpt = None) -> None:
    """Compare two runs' compositions: what entered, left or moved lane, and why.

    Example: memwb diff support-3-forgot support-3-fixed
    """
    from memory_core.analysis.diff import diff_runs

    with opened(db) as s:
        d = guarded(lambda: diff_runs(s, run_a, run_b))
    table([e.model_dump() for e in d.changed()],
          ["thread_id", "seq", "change", "lane_a", "lane_b", "reason"], whole=["reason"])
    say("")
    say("tokens per lane (a → b):")
    for lane_name, (a, b, delta) in d.token_deltas.items():
        say(f"  {lane_name}: {a} → {b} ({delta:+d})")
    for key, (a, b) in d.settings_changed.items():
        say(f"setting {key}: {a} → {b}")
    say("first divergent step: "
               + ("none" if d.divergent_at is None else str(d.divergent_at)))
    say(f"answer a: {d.answer_a}")
    say(f"answer b: {d.answer_b}")
