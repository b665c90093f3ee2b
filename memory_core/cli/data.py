"""memwb import and memwb erase: what goes into a database and what leaves it."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from memory_core.analysis.wording import counted

# typer (0.29) vendors click; its exception classes live here
from memory_core.cli.common import (
    DbOpt,
    _embedder,
    app,
    emit_json,
    fail,
    guarded,
    local_path,
    opened,
    resolve_db,
    say,
)


@app.command("import")
def import_(files: Annotated[list[Path], typer.Argument(
                help="Model traffic (OpenAI and compatible servers, Anthropic Messages and "
                     "Text Completions, "
                     "Gemini, Cohere, Ollama, Bedrock, Sourcegraph's Cody) as JSONL/JSON logs, VCR "
                     "cassettes "
                     "(LangGraph's packed ones too), HAR files or nock recordings; ShareGPT, fine-tuning (LLaMA-Factory "
                     "too) and batch files; LangSmith runs, Langfuse and MLflow traces, "
                     "Inspect eval logs (.eval or JSON), AutoGen recorded sessions, Agents "
                     "SDK run results; or spans (Google ADK's too): OTLP traces/logs (JSON, "
                     "JSON lines, protobuf), SDK span objects, Jaeger or "
                     "Zipkin JSON. gzip/bzip2/xz/zstd read through. Several OTLP "
                     "exports (say traces.json logs.json) are imported as one, so a "
                     "call's span and its log records join; other files one by one.")],
            db: DbOpt = None,
            format: Annotated[str | None, typer.Option(
                help="openai or otel; detected when omitted.")] = None,
            resource: Annotated[str | None, typer.Option(
                help="Resource id for every imported thread.")] = None,
            embedder: Annotated[str, typer.Option(
                help="hashing, minilm or none; must match the vectors already in the "
                     "database (the demo uses minilm).")] = "hashing") -> None:
    """Import conversations recorded elsewhere as threads, messages and runs.

    Example: memwb import traces.jsonl --db mine.duckdb --format openai
    """
    from functools import partial

    from memory_core.importers import import_file, import_otel_files, is_otlp_file

    files = [_import_path(f) for f in files]
    embed = _embedder(embedder, allow_none=True)
    url = resolve_db(db)
    path = local_path(url)
    created = path is not None and not Path(path).exists()

    progress = ImportProgress()

    def otlp(f: Path) -> bool:
        return guarded(lambda: is_otlp_file(f))

    together = len(files) > 1 and format != "openai" and all(otlp(f) for f in files)
    done: list[str] = []
    try:
        with opened(url, read_only=False, must_exist=False) as storage:
            if together:
                label = " + ".join(str(f) for f in files)
                _say_imported(label, url, guarded(lambda: import_otel_files(
                    storage, files, embed=embed, resource_id=resource, stages=progress)))
                done.append(label)
            for f in [] if together else files:
                _say_imported(str(f), url, guarded(partial(
                    import_file, storage, f, format=format, embed=embed,  # type: ignore[arg-type]
                    resource_id=resource, stages=progress)))
                done.append(str(f))
    except typer.Exit:
        left = len(files) - len(done) - 1  # (the files after the one refused)
        them = f"the {left} file{'s' * (left != 1)}"
        were = "were" if left != 1 else "was"
        if done:
            say(f"stopped after importing {', '.join(done)}" + (
                f"; {them} after the one refused {were} not imported" if left else
                ", the last file refused"), err=True)
            raise
        if left and not together:
            say(f"nothing imported: {them} after it {were} not imported either", err=True)
        if created and path is not None:
            # a rejected file leaves no trace, not even an empty database
            for leftover in (Path(path), Path(path + ".wal")):
                leftover.unlink(missing_ok=True)
        raise


def _import_path(f: Path) -> Path:
    """``f`` with ``~`` expanded, when it names a regular file; else one error naming
    it (``~nosuchuser``, a name too long for the system, a FIFO, a folder)."""
    try:
        f = f.expanduser()
        exists, regular = f.exists(), f.is_file()
    except (RuntimeError, OSError) as e:  # no such user's home; ENAMETOOLONG, …
        why = getattr(e, "strerror", None) or str(e)
        raise fail(f"import file {str(f)[:200]!r} cannot be read: {why}") from None
    if not exists:
        raise fail(f"import file {str(f)!r} does not exist")
    if not regular:  # a FIFO would hang the read, a folder is not a recording
        raise fail(f"import file {str(f)!r} is not a regular file")
    return f


class ImportProgress:
    """An import's stages on stderr: a line when a stage starts and ends, and at most
    one every ``every`` seconds between (a million-message log reads for minutes)."""

    # (the threads written are new ones and earlier ones continued: not "stored",
    # which the summary says of new threads only)
    WHAT = {"read": ("read", "record"), "planned": ("planned", "request"),
            "embedded": ("embedded", "message"),
            "stored": ("wrote the messages of", "thread"), "recorded": ("recorded", "run")}

    def __init__(self, every: float = 2.0) -> None:
        self.every, self.stage, self.last = every, "", 0.0

    def __call__(self, stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        if stage == self.stage and done != total and now - self.last < self.every:
            return
        self.stage, self.last = stage, now
        verb, unit = self.WHAT.get(stage, (stage, "item"))
        of = f" of {total:,}" if total and done != total else ""
        # the noun in the number of the count it ends with: "1 thread", "2 of 3 runs"
        say(f"{verb} {done:,}{of} {counted(total if of else done, unit).split(' ', 1)[1]}",
            err=True)


def _say_imported(label: str, url: str, report: Any) -> None:
    if report.already_imported:
        say(f"{label} was already imported into {url}; nothing written")
        return
    if report.resumed:
        say(f"an earlier import of {label} stopped part way; completing it")
    extended = (f" (continuing {counted(len(report.threads_extended), 'earlier thread')})"
                if report.threads_extended else "")
    threads = counted(len(report.threads_created), "new thread" if extended else "thread")
    say(f"imported {label} ({', '.join(report.apis) or report.format}) into {url}: "
        f"{threads}{extended}, {counted(report.messages_stored, 'message')}, "
        f"{counted(report.embeddings_stored, 'embedding')}, "
        f"{counted(len(report.runs_created), 'run')}")
    if report.undated:
        say("  no call in the file is dated (no time in its bodies or headers): the runs "
            "keep the file's order; their times show as not recorded")
    # what was not imported, and what was kept differently: each kind of note at most
    # NOTES_SHOWN times (a log of 30,000 requests may say one thing of each), then how
    # many more; every run's import record keeps its own
    said: dict[str, list[Any]] = {}
    for s in report.skipped:
        said.setdefault(note_kind(s.reason), []).append(s)
    hidden = 0
    for notes in said.values():
        # (one more is said, not folded into "1 more like the last")
        shown = notes if len(notes) <= NOTES_SHOWN + 1 else notes[:NOTES_SHOWN]
        for s in shown:
            say(f"  {s.where}: {s.reason}")
        if len(notes) > len(shown):
            hidden += len(notes) - len(shown)
            say(f"  … and {len(notes) - len(shown):,} more like the last, "
                f"{notes[len(shown)].where} to {notes[-1].where}")
    if hidden:
        say(f"  ({hidden:,} notes not shown: each run's own are in its import record, "
            "memwb inspect RUN)")


NOTES_SHOWN = 3
# quoted values, and words with a digit in them (numbers, ids)
_NAMED = re.compile(r"'[^']*'|\"[^\"]*\"|“[^”]*”|[^\s,;:()]*\d[^\s,;:()]*")
_MORE = re.compile(r"(, [^,;:]*…[^,;:]*)+")  # a list's further items


def note_kind(reason: str) -> str:
    """What a note says with its names, quoted values, numbers and ids taken out, and
    a list of such items cut to its first: notes of one kind differ only in those."""
    return _MORE.sub("", _NAMED.sub("…", reason))




@app.command()
def erase(db: DbOpt = None,
          thread: Annotated[str | None, typer.Option(help="Erase this thread.")] = None,
          resource: Annotated[str | None, typer.Option(
              help="Erase every thread of this resource.")] = None) -> None:
    """Erase a thread or a whole resource: messages, vectors, memory, journal records.
    Prints what was removed, as JSON.

    Example: memwb erase --thread support-1
    """
    from memory_core.lifecycle.erasure import erase_resource, erase_thread

    if (thread is None) == (resource is None):
        raise fail("give exactly one of --thread or --resource")
    with opened(db, read_only=False) as s:
        if thread is not None:
            report = guarded(lambda: erase_thread(s, thread))
        else:
            assert resource is not None
            known = guarded(lambda: s.memory.list_resources())
            if resource not in known and not guarded(
                    lambda: s.runs.list_runs(resource_id=resource)):
                raise fail(f"resource {resource!r} does not exist; resources are "
                           f"{', '.join(known) or '(none)'}")
            report = guarded(lambda: erase_resource(s, resource))
    emit_json(report.model_dump())


# -- live capture (memory_core/capture, docs/capture.md) ---------------------------------
