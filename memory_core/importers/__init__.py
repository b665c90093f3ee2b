"""Importing conversations recorded elsewhere (OpenAI chat-completions JSONL, VCR
cassettes, HAR files, OTLP GenAI spans, …) as threads, messages and reconstructed runs:
``import_file``.

A file is read in stages: its container (``containers.py``) yields records, each read
into ``Exchange``s by the format that matches it (``registry.py``, one module per
format under ``formats/``) — or, for OTLP, spans read by ``otel.py`` — then planned
into threads (``threads.py``) and written (``writer.py``). The whole file is parsed
and validated before the first write; see docs/importing.md."""

from __future__ import annotations

import functools
import hashlib
import lzma
import re
import zlib
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from memory_core.embedding.hashing import Embedder, embedder_name
from memory_core.errors import ImportFormatError, InvalidInputError
from memory_core.importers.common import (
    ImportFormat,
    ImportReport,
    ParsedFile,
    Progress,
    SkippedRecord,
    Stages,
    date_undated,
    keep_file_order,
)
from memory_core.importers.containers import container_for
from memory_core.importers.httprr import MAGIC_BYTES as HTTPRR_MAGIC
from memory_core.importers.httprr import parse_httprr_bytes
from memory_core.importers.inspect_log import is_zip, parse_inspect_eval
from memory_core.importers.jsonvalues import read_documents
from memory_core.importers.otel import parse_otlp, parse_spans
from memory_core.importers.otel_read import protobuf_documents, spans_of
from memory_core.importers.passes import (
    audio_transcripts,
    calls_sent_back_alike,
    check_offered_tools,
    drop_empty_turns,
    recorded_call_ids,
    resolve_tool_names,
    say_empty_answers,
    withhold_credentials,
)
from memory_core.importers.stored import StoredImports
from memory_core.importers.thread_plan import RunPlan
from memory_core.importers.threads import plan_threads
from memory_core.importers.writer import (
    RunsToWrite,
    embed_threads,
    last_record_key,
    write_all,
)
from memory_core.limits import TooLarge, decompress
from memory_core.storage.base import Storage
from memory_core.storage.common import many_objects

__all__ = ["ImportFormatError", "ImportReport", "SkippedRecord", "detect_format",
           "import_file", "import_otel_files", "import_text", "run_id_for"]


P = ParamSpec("P")
R = TypeVar("R")


def _without_cycle_collection(f: Callable[P, R]) -> Callable[P, R]:
    """``f`` run without the cyclic garbage collector (``many_objects``): an import
    builds hundreds of thousands of long-lived objects (the parsed requests, the
    plans), and each collection of the oldest generation walked them all again (a
    fifth of the CPU of importing 10,000 requests). What an import lets go is freed by
    reference counting: one of 10,000 requests left ~300 objects in cycles."""
    @functools.wraps(f)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        with many_objects():
            return f(*args, **kwargs)
    return run


def detect_format(text: str) -> ImportFormat:
    """The family of the container that reads ``text`` (``containers.py``): ``"otel"``
    when it is OTLP/JSON — the document (or its first line) has ``resourceSpans`` or
    ``resourceLogs``, is one span's attributes, a span object (or a JSON array of them)
    as SDKs and tracers write them, or a Jaeger export; else ``"openai"``, the records
    the formats of ``registry.py`` read (whose parser names any record it cannot read
    and what it expected)."""
    return container_for(text).family


def is_binary(data: bytes) -> bool:
    """OTLP protobuf (or any binary file) rather than text."""
    try:
        text = data[:4096].decode("utf-8")
    except UnicodeDecodeError as e:
        return e.start < 4092  # a multi-byte character cut at the end is still text
    return any(ord(c) < 9 or 13 < ord(c) < 32 for c in text)


def run_id_for(sha1: str, index: int) -> str:
    """Deterministic: the same file imports to the same run ids."""
    return "imp-" + hashlib.sha1(f"{sha1}:{index}".encode()).hexdigest()[:12]


@_without_cycle_collection
def import_file(storage: Storage, path: str | Path, *, format: ImportFormat | None = None,
                embed: Embedder | None = None, resource_id: str | None = None,
                progress: Progress | None = None, stages: Stages | None = None
                ) -> ImportReport:
    """Import one file. ``format`` None detects it; ``embed`` stores vectors for every
    message with text (``progress(done, total)`` after each batch); ``resource_id``
    puts every thread in that resource instead of the one the records name.
    ``stages(stage, done, total)`` follows the whole import: ``"read"`` (records of
    the file read so far, total 0 until the end; OTLP: model calls, once), then
    ``"planned"`` (requests), ``"embedded"`` (messages, with ``embed``), ``"stored"``
    (threads written) and ``"recorded"`` (runs written), each ending with done = total.

    Raises ImportFormatError (naming the line or span) for a malformed file and
    InvalidInputError when the file's thread ids collide with threads already stored;
    in both cases nothing is written. Importing a file already imported is a no-op
    whose report has ``already_imported=True``; importing a file whose import was
    killed part way completes it (``resumed=True``).
    """
    p = Path(path)
    data = read_import_file(p)
    try:
        if format in (None, "openai") and data.startswith(HTTPRR_MAGIC):
            return _import_parsed(storage, parse_httprr_bytes(data, stages), fmt="openai",
                                  name=p.name, digest=_sha1(data), embed=embed,
                                  resource_id=resource_id, progress=progress, stages=stages)
        if format in (None, "openai") and is_zip(data):  # an Inspect .eval log
            return _import_parsed(storage, parse_inspect_eval(data, stages), fmt="openai",
                                  name=p.name, digest=_sha1(data), embed=embed,
                                  resource_id=resource_id, progress=progress, stages=stages)
        if format in (None, "otel") and is_binary(data):
            return _import_parsed(storage, parse_otlp(data=data), fmt="otel", name=p.name,
                                  digest=_sha1(data), embed=embed, resource_id=resource_id,
                                  progress=progress, stages=stages)
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise ImportFormatError(f"neither UTF-8 text nor OTLP protobuf: {e}") from None
        digest = _sha1(data)
        del data  # the text is all that is read from here: not the file twice in memory
        fmt, parsed = _parse_text(text, format, stages)
        del text  # nor the text while the parsed records are planned and written
        return _import_parsed(storage, parsed, fmt=fmt, name=p.name, digest=digest,
                              embed=embed, resource_id=resource_id, progress=progress,
                              stages=stages)
    except ImportFormatError as e:
        raise _naming(e, p) from None


def _naming(e: ImportFormatError, path: Path) -> ImportFormatError:
    """``e`` with the file it is about first: with several files imported one by one,
    "line 3: invalid JSON" did not say which file's line 3."""
    text = str(e)
    return ImportFormatError(f"file '{path}': {text.removeprefix('file: ')}")


# compressed files are read through: a log kept as ``.jsonl.gz`` imports as the log
_COMPRESSED = ((b"\x1f\x8b", "gzip"), (b"BZh", "bzip2"), (b"\xfd7zXZ\x00", "xz"),
               (b"\x28\xb5\x2f\xfd", "zstd"))


def read_import_file(path: Path) -> bytes:
    """The bytes of an import file, decompressed when it is gzip, bzip2, xz or zstd
    (told by its first bytes, not its name), UTF-16 text (with its byte-order mark) as
    UTF-8. InvalidInputError when it cannot be read; ImportFormatError, naming it, when
    its compressed data is damaged."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise InvalidInputError(f"cannot read import file '{path}': {e.strerror}") from e
    for magic, kind in _COMPRESSED:
        if data.startswith(magic):
            try:  # streamed, stopping at MEMWB_MAX_DECOMPRESSED: a small bomb is refused
                data = decompress(data, kind)
                break
            except TooLarge as e:
                raise ImportFormatError(f"file '{path}': {e}") from None
            except (OSError, EOFError, ValueError, lzma.LZMAError, zlib.error) as e:
                raise ImportFormatError(f"file '{path}' looks {kind}-compressed but cannot "
                                        f"be decompressed: {e}") from None
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):  # UTF-16 text with its byte-order
        try:  # mark, as Windows PowerShell 5 redirects output: read as the UTF-8 it holds
            return data.decode("utf-16").encode("utf-8")
        except UnicodeError as e:
            raise ImportFormatError(f"file '{path}' starts as UTF-16 text but is not: "
                                    f"{e}") from None
    return data


def file_format(path: str | Path) -> ImportFormat:
    """The format ``import_file`` would detect for this file."""
    data = read_import_file(Path(path))
    if is_zip(data):
        return "openai"
    if is_binary(data):
        return "otel"
    return detect_format(data.decode("utf-8-sig", errors="replace"))


def is_otlp_file(path: str | Path) -> bool:
    """An OTLP export (protobuf, or the JSON container of OTLP and other span exports):
    what ``import_otel_files`` joins with others. A Langfuse export reads as spans too,
    but is a file of its own."""
    data = read_import_file(Path(path))
    if is_zip(data):
        return False
    return is_binary(data) or container_for(
        data.decode("utf-8-sig", errors="replace")).name == "otlp-json"


@_without_cycle_collection
def import_otel_files(storage: Storage, paths: Sequence[str | Path], *,
                      embed: Embedder | None = None, resource_id: str | None = None,
                      progress: Progress | None = None, stages: Stages | None = None
                      ) -> ImportReport:
    """Several OTLP exports (JSON, JSON lines or protobuf) imported as one: spans and
    the log records that carry their messages, written by different exporters to
    different files, join into one run per call. Errors name the file and record;
    importing the same files again (in the same order) is a no-op."""
    if not paths:
        raise InvalidInputError("no files to import")
    docs: list[tuple[str, Any]] = []
    digests = []
    for raw in paths:
        p = Path(raw)
        data = read_import_file(p)
        digests.append(_sha1(data))
        if is_zip(data):
            raise ImportFormatError(f"file '{p}' is a zip archive, not an OTLP export; "
                                    "import it on its own")
        if is_binary(data):
            found = protobuf_documents(data)
        else:
            try:
                text = data.decode("utf-8-sig")
            except UnicodeDecodeError as e:
                raise ImportFormatError(f"file '{p}' is neither UTF-8 text nor OTLP "
                                        f"protobuf: {e}") from None
            if detect_format(text) != "otel":
                raise ImportFormatError(f"file '{p}' is not an OTLP export (no "
                                        "'resourceSpans' or 'resourceLogs'); import it "
                                        "on its own")
            found = read_documents(text)
        docs += [(f"{p.name}: {where}", doc) for where, doc in found]
    name = " + ".join(Path(p).name for p in paths)
    digest = _sha1(":".join(digests).encode()) if len(digests) > 1 else digests[0]
    return _import_parsed(storage, parse_spans(spans_of(docs)), fmt="otel", name=name,
                          digest=digest, embed=embed, resource_id=resource_id,
                          progress=progress, stages=stages)


def _stored_threads(storage: Storage, thread_ids: list[str], digest: str
                    ) -> tuple[set[str], list[str]]:
    """The file's threads already stored by an earlier (maybe killed) import of the same
    bytes — their metadata names the file's SHA-1 — and the ids that clash with threads
    of anything else."""
    ours: set[str] = set()
    clash: list[str] = []
    # which exist, in one query (one look-up a thread: ~2 ms each on DuckDB, ~20 s for
    # the 10,000 threads of 100,000 requests)
    stored = storage.memory.thread_stats(thread_ids)
    for tid in (t for t in thread_ids if t in stored):
        t = storage.memory.get_thread(tid)
        if t is None:
            continue
        meta = t.metadata.get("import") or {}
        if isinstance(meta, dict) and meta.get("sha1") == digest:
            ours.add(tid)
        else:
            clash.append(tid)
    return ours, clash


def _complete(storage: Storage, last_run: str, plan: RunPlan) -> bool:
    """An import writes threads, then runs in order, each run's records in order: it
    finished when the last run's last record is there."""
    return storage.runs.has(last_record_key(last_run, plan))


def _sha1(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()


@_without_cycle_collection
def import_text(storage: Storage, text: str, *, name: str = "<text>",
                format: ImportFormat | None = None, embed: Embedder | None = None,
                resource_id: str | None = None, progress: Progress | None = None,
                sha1: str | None = None, stages: Stages | None = None) -> ImportReport:
    """``import_file`` on text already read (``name`` labels it in metadata)."""
    _check_format(format)
    try:
        encoded = text.encode("utf-8")
    except UnicodeEncodeError as e:  # only text built in Python can hold one
        raise ImportFormatError(f"line {text.count(chr(10), 0, e.start) + 1}: contains a "
                                "lone UTF-16 surrogate (not valid Unicode)") from None
    digest = sha1 or _sha1(encoded)
    del encoded
    fmt, parsed = _parse_text(text, format, stages)
    return _import_parsed(storage, parsed, fmt=fmt, name=name, digest=digest, embed=embed,
                          resource_id=resource_id, progress=progress, stages=stages)


def _check_format(format: str | None) -> None:
    if format not in (None, "openai", "otel"):
        raise InvalidInputError(f"unknown import format {format!r} (expected 'openai', "
                                "'otel' or None to detect)")


def _parse_text(text: str, format: ImportFormat | None, stages: Stages | None
                ) -> tuple[ImportFormat, ParsedFile]:
    _check_format(format)
    container = container_for(text, format)
    return container.family, container.parse(text, stages)


# where in a record a note is about: "input[1]", "message 3", "output[0].content[2]"
_AT = re.compile(r"[A-Za-z_]+(?:\[\d+\]| \d+)(?:\.[A-Za-z_]+(?:\[\d+\])?)*")


def folded_notes(notes: list[str]) -> list[str]:
    """One record's notes for the report, the same note at several places said once:
    "input[1], input[4], output[0]: item of type 'reasoning' not imported" — a loop
    that sends its earlier items back would otherwise repeat every earlier note in
    each later request. (Each run's import record keeps its notes one by one.)"""
    places: dict[tuple[bool, str], list[str]] = {}
    for note in notes:
        at, sep, said = note.partition(": ")
        if sep and _AT.fullmatch(at):
            places.setdefault((True, said), []).append(at)
        else:
            places.setdefault((False, note), [])
    return [f"{', '.join(dict.fromkeys(at))}: {text}" if placed else text
            for (placed, text), at in places.items()]


# a record's place in its file: "line 12", "interaction 3", "entry 4", "item 2" …
_PLACE = re.compile(r"(?:line|item|document|interaction|entry|call|definition|sample|"
                    r"HTTP interaction) (\d+)\b")


def in_file_order(notes: list[SkippedRecord]) -> list[SkippedRecord]:
    """The notes on the whole file first, then each record's in the file's order (line
    3's before line 12's, whether made reading or planning); notes on what has no number
    (a span) after them, in the order they were made."""
    def place(k: SkippedRecord) -> tuple[int, int]:
        if k.where == "file":
            return 0, 0
        m = _PLACE.match(k.where)
        return (1, int(m.group(1))) if m else (2, 0)
    return sorted(notes, key=place)


def _import_parsed(storage: Storage, parsed: ParsedFile, *, fmt: ImportFormat, name: str,
                   digest: str, embed: Embedder | None, resource_id: str | None,
                   progress: Progress | None, stages: Stages | None = None) -> ImportReport:
    withhold_credentials(parsed.exchanges)
    audio_transcripts(parsed.exchanges)
    recorded_call_ids(parsed.exchanges)  # (before the checks: they see the ids kept)
    check_offered_tools(parsed.exchanges)  # (before results take their calls' names)
    resolve_tool_names(parsed.exchanges)  # (the last check of the requests)
    calls_sent_back_alike(parsed.exchanges)
    drop_empty_turns(parsed.exchanges)  # (after the checks: their notes count as sent)
    say_empty_answers(parsed.exchanges)
    undated = bool(parsed.exchanges) and all(ex.started_at is None for ex in parsed.exchanges)
    out_of_order = keep_file_order(parsed.exchanges, date_undated(parsed.exchanges))
    if stages is not None:
        stages("read", parsed.records, parsed.records)
    report = ImportReport(format=fmt, file=name, sha1=digest, skipped=list(parsed.skipped) + (
        [SkippedRecord(where="file", reason=out_of_order)] if out_of_order else []),
        undated=undated,
                          apis=list(dict.fromkeys(ex.api or fmt for ex in parsed.exchanges)))
    run_ids = [run_id_for(digest, ex.index) for ex in parsed.exchanges]
    threads, runs = plan_threads(parsed.exchanges, f"imp-{digest[:8]}-", resource_id,
                                 StoredImports.of(storage))
    # a note names its record (and where in it) first: said once, not "line 2: line 2: …"
    report.skipped += [SkippedRecord(where=ex.where, reason=note) for ex in parsed.exchanges
                       for note in folded_notes([n.removeprefix(f"{ex.where}: ")
                                                 for n in ex.notes])]
    report.skipped = in_file_order(report.skipped)
    if stages is not None:
        stages("planned", len(runs), len(runs))
    ours, clash = _stored_threads(storage, [t.thread_id for t in threads if not t.stored],
                                  digest)
    ours |= {t.thread_id for t in threads
             if t.stored and (t.stored_meta or {}).get("sha1") == digest}
    nothing_new = all(t.thread_id in ours or (t.stored and t.stored_count == len(t.messages))
                      for t in threads)
    if threads and nothing_new and _complete(storage, run_ids[-1], runs[-1]):
        report.already_imported = True
        report.skipped.append(SkippedRecord(
            where="file", reason=f"already imported (run '{run_ids[0]}' exists); "
                                 "erase its threads to import it again"))
        return report
    report.resumed = bool(ours) or storage.runs.get_run(run_ids[0]) is not None
    if clash:
        raise InvalidInputError(
            f"thread '{clash[0]}' already exists ({len(clash)} of the file's threads do); "
            "the file's conversation ids collide with stored threads")
    embedder = embedder_name(embed) if embed is not None else None
    import_info = {"format": fmt, "file": name, "sha1": digest}
    records = RunsToWrite(run_ids, runs, embedder=embedder, import_info=import_info)
    vectors = embed_threads(threads, embed, _both(progress, stages))
    dim = storage.memory.embedding_dim()
    got = next(iter(vectors.values())).shape[0] if vectors else None
    if dim is not None and got is not None and got != dim:
        raise InvalidInputError(f"embedder {embedder!r} gives {got}-dimensional vectors but "
                                f"this store holds {dim}-dimensional ones")
    # one connection for the whole write where the adapter supports it (DuckDB files),
    # and the engine's memory for what it wrote bounded (DuckDB's)
    session = getattr(storage, "bulk_session", None) or getattr(storage, "session", None)
    with session() if callable(session) else nullcontext():
        write_all(storage, threads, records, vectors, run_ids, import_info, report, ours,
                  stages=stages)
    return report


def _both(progress: Progress | None, stages: Stages | None) -> Progress | None:
    """The embedding's progress, to ``progress`` and as the ``"embedded"`` stage."""
    if stages is None:
        return progress

    def both(done: int, total: int) -> None:
        if progress is not None:
            progress(done, total)
        stages("embedded", done, total)
    return both
