"""The JSON container: a file of records as JSON lines, a JSON array, or one
(pretty-printed) JSON document or several — a LangSmith ``{"runs": [...]}`` spread
into its runs (the runs that are not model calls skipped), batch files' input and
output lines joined into request/response records — and ``parse_records``, where
every container of records (this one, VCR cassettes, HAR files) ends: each record
read by the format that matches it (``registry.read_record``).

A record that cannot be read (a line that is no JSON, a request no format reads or
one its format finds malformed) is left out with a note naming it and why, and the rest
of the file is imported; a file none of whose records can be read is refused with the
first one's error. A container hands such a record on as its error in place of the
object (``(where, ImportFormatError)``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from memory_core.errors import ImportFormatError
from memory_core.importers.common import (
    READ_EVERY,
    Exchange,
    ParsedFile,
    SkippedRecord,
    Stages,
    fail,
    not_read,
    sharing,
)
from memory_core.importers.formats.atif import atif_trajectories
from memory_core.importers.formats.claude_code import claude_code_transcripts
from memory_core.importers.formats.cline import cline_histories
from memory_core.importers.formats.codex import codex_rollouts
from memory_core.importers.formats.dspy import dspy_histories
from memory_core.importers.formats.gemini_cli import gemini_cli_sessions
from memory_core.importers.formats.letta import letta_agent_files
from memory_core.importers.formats.promptfoo import promptfoo_evals
from memory_core.importers.formats.semantic_kernel import chat_histories
from memory_core.importers.formats.swe_agent import agent_trajectories
from memory_core.importers.formats.tau_bench import tau_bench_results
from memory_core.importers.jsonvalues import iter_documents
from memory_core.importers.langsmith import langsmith_rows
from memory_core.importers.passes import leave_out
from memory_core.importers.refusal import ONE_MESSAGE
from memory_core.importers.registry import read_record


def _looks_like_batch(obj: dict[str, Any]) -> bool:
    """A line of a batch file: OpenAI's input (``custom_id``, ``body``) or output
    (``response.body``), or Anthropic's Message Batches request (``params``) or result
    (``result``)."""
    return "custom_id" in obj and (
        "body" in obj or "params" in obj or isinstance(obj.get("result"), dict)
        or isinstance(obj.get("response"), dict) and "body" in obj["response"])


def _batch_request(obj: dict[str, Any]) -> Any:
    """A batch input line's request (OpenAI's ``body``, Anthropic's ``params``), or None
    for an output line."""
    return obj.get("body", obj.get("params")) if ("body" in obj or "params" in obj) \
        else None


def _batch_answer(out: dict[str, Any]) -> tuple[Any, Any]:
    """An output line's response body, or (None, the error): OpenAI's ``response``
    (``status_code``, ``body``) and ``error``, or Anthropic's ``result`` (``succeeded``
    with its ``message``; ``errored``, ``canceled``, ``expired``)."""
    result = out.get("result")
    if isinstance(result, dict):
        if result.get("type") == "succeeded" and isinstance(result.get("message"), dict):
            return result["message"], None
        return None, result.get("error") or f"batch request {result.get('type')}"
    response = out.get("response") or {}
    if response.get("status_code", 200) == 200 and isinstance(response.get("body"), dict):
        return response["body"], None
    return None, out.get("error") or response.get("body") or \
        f"status {response.get('status_code')}"


def _join_batch(rows: list[tuple[str, Any]]) -> tuple[list[tuple[str, Any]],
                                                       list[SkippedRecord]]:
    """Batch files — OpenAI's (an input line ``custom_id``, ``body`` and its output line
    ``custom_id``, ``response.body``) and Anthropic's Message Batches (``params``, then
    ``result``): a request and its answer become one request/response record, so a file
    made by concatenating a batch's input and output files imports directly."""
    outputs: dict[str, tuple[str, dict[str, Any]]] = {}
    for n, obj in rows:
        if isinstance(obj, dict) and _looks_like_batch(obj) and _batch_request(obj) is None:
            cid = str(obj["custom_id"])
            if cid in outputs:
                raise fail(n, f"batch output for custom_id {cid!r} repeats {outputs[cid][0]}")
            outputs[cid] = (n, obj)
    joined: list[tuple[str, Any]] = []
    skipped: list[SkippedRecord] = []
    used: set[str] = set()
    for n, obj in rows:
        if not (isinstance(obj, dict) and _looks_like_batch(obj)):
            joined.append((n, obj))
            continue
        body = _batch_request(obj)
        if body is None:
            continue  # an output line: joined with its input below
        cid = str(obj["custom_id"])
        if not isinstance(body, dict):
            key = "body" if "body" in obj else "params"
            raise fail(n, f"batch '{key}' must be an object, got {body!r}")
        if cid not in outputs:
            skipped.append(SkippedRecord(where=n, reason=f"batch request {cid!r} has no "
                                                         "output line in this file"))
            continue
        used.add(cid)
        record: dict[str, Any] = {"request": body, "metadata": body.get("metadata") or {}}
        if "params" in obj:  # each request of a Message Batch is a Messages API call
            record["url"] = "/v1/messages"  # (a path: the file names no endpoint)
        answer, error = _batch_answer(outputs[cid][1])
        if answer is not None:
            record["response"] = answer
        else:
            record["error"] = error
        joined.append((n, record))
    for cid, (n, _) in outputs.items():
        if cid not in used:
            raise fail(n, f"batch output for custom_id {cid!r} has no input line in this "
                          "file (concatenate the batch input file first)")
    return joined, skipped


def _joined(docs: Iterator[tuple[str, Any]], skipped: list[SkippedRecord]
            ) -> Iterator[tuple[str, Any]]:
    """The file's records one at a time, batch lines joined (``_join_batch``): a batch
    output may come after its input, so from the first batch line on the rest of the
    file is read before it goes on (the records before it have no batch line)."""
    for where, obj in docs:
        if isinstance(obj, dict) and _looks_like_batch(obj):
            joined, found = _join_batch([(where, obj), *docs])
            skipped += found
            yield from joined
            return
        yield where, obj


def _exchanges(rows: Iterable[tuple[str, Any]], stages: Stages | None
               ) -> tuple[list[Exchange], int, list[tuple[str, ImportFormatError]]]:
    """Every record's exchanges, each record let go once turned into them, how many
    records were read, and the records that could not be read, with their errors."""
    out: list[Exchange] = []
    failed: list[tuple[str, ImportFormatError]] = []
    file_state: dict[str, Any] = {}  # what a record leaves for the later ones
    read = index = 0
    for where, obj in rows:
        read += 1
        try:
            if isinstance(obj, ImportFormatError):  # (its container could not read it)
                raise obj
            got = read_record(obj, where, index, file_state)
            out += got
            index += len(got)
        except ImportFormatError as e:
            failed.append((where, e))
            # its index is not given again: what the record left in file_state under
            # it (a response a later request continues) must not name another record
            index += 1
        if stages is not None and read % READ_EVERY == 0:
            stages("read", read, 0)  # (the total is known once the file is read)
    return out, read, failed


def said(skipped: list[SkippedRecord]) -> str:
    """What was skipped instead, each kind once (three at most; GETs last)."""
    kinds = Counter(k.reason for k in skipped)
    # a GET is no model call: what was sent (a POST) first, so an unread model call shows
    firsts = sorted(kinds.items(), key=lambda kind: "(GET " in kind[0])
    shown = [f"{r} ×{n}" if n > 1 else r for r, n in firsts[:3]]
    more = f"; {len(kinds) - 3} more kind(s)" if len(kinds) > 3 else ""
    return "; ".join(shown) + more


def parse_records(rows: Iterable[tuple[str, Any]], skipped: list[SkippedRecord],
                  stages: Stages | None = None) -> ParsedFile:
    """A container's records (``(where, record)``, read lazily) and what it skipped, as
    the file's exchanges; ``stages("read", records, 0)`` every ``READ_EVERY`` records
    (the importer reports the total once the file is valid)."""
    with sharing():  # a request repeats its history: each message parsed once
        exchanges, read, failed = _exchanges(rows, stages)
    if not exchanges and failed:  # nothing read: the first record's error says why
        if len(failed) > 1 and all(ONE_MESSAGE in str(e) for _, e in failed):
            # (a conversation kept as its messages: no record of them is a request)
            raise fail("file", f"a list of {len(failed)} chat messages, not requests "
                               "holding them: a conversation as it was kept, not what "
                               "each call was sent; to import it as one call, wrap it as "
                               "{\"messages\": [...]} (a fine-tuning row: its last "
                               "assistant message the answer)")
        raise failed[0][1]
    if failed:  # numbered again, a link to a record left out dropped
        exchanges = leave_out(exchanges, [])
    skipped += [not_read(where, e) for where, e in failed]
    if not exchanges and skipped:
        raise fail("file", f"no model call among its records; {said(skipped)}")
    if not exchanges:
        raise fail("file", "no records (expected one JSON object per line, a JSON array of "
                           "them, or one JSON object)")
    return ParsedFile(exchanges, skipped, records=read)


def parse_json(text: str, stages: Stages | None = None) -> ParsedFile:
    """A file of JSON records (see the module's docstring)."""
    skipped: list[SkippedRecord] = []
    docs = tau_bench_results(gemini_cli_sessions(codex_rollouts(iter_documents(
        text, keep_going=True))))
    docs = promptfoo_evals(cline_histories(atif_trajectories(claude_code_transcripts(
        letta_agent_files(agent_trajectories(docs))))))
    return parse_records(_joined(langsmith_rows(chat_histories(dspy_histories(docs)),
                                                skipped), skipped), skipped, stages)
