"""Inspect AI evaluation logs: the JSON log ``inspect eval`` writes (``--log-format
json``; ``{"version", "status", "eval", "plan", "results", "stats", "samples"}``), and
its default ``.eval`` log, a zip archive holding each sample as a JSON file of its own
(read at the end of this module).

Each sample's ``model`` events (``events``, or ``transcript.events`` in older logs) are
its model calls, and each keeps the provider's own request and response as
``call.request``/``call.response``: the pair becomes a ``{"request", "response"}``
record read by the registry's formats like any other (``openai_jsonl.parse_records``),
dated by the event, with the texts the log moved out of the call restored
(``attachment://<hash>`` from the sample's ``attachments``, ``tc://<hash>`` from older
logs' ``transcript.content``). An event that failed (its ``error``) is a failed call.
A model event without its call, and a sample with no model event (an older log: its
``messages`` and ``output`` only), are read from Inspect's own messages in the OpenAI
form, noted. A sample's calls are grouped into threads by their messages, as any
file's are (a scorer's call to a grading model is a conversation of its own)."""

from __future__ import annotations

import io
import re
import struct
import zipfile
import zlib
from typing import Any

from memory_core.errors import ImportFormatError
from memory_core.importers.common import (
    ParsedFile,
    SkippedRecord,
    Stages,
    fail,
    iso_time,
    openai_tool_call,
    shortened,
)
from memory_core.importers.jsonvalues import load_json
from memory_core.importers.openai_jsonl import parse_records
from memory_core.limits import TooLarge, decompress, limit, too_large

_START = re.compile(r'\s*\{\s*"version"\s*:\s*\d+\s*,\s*"status"\s*:')
_REF = re.compile(r"^(attachment|tc)://([0-9a-f]{32})$")
NO_SAMPLES = ("the Inspect log holds no samples (a log written with --no-log-samples, or "
              "only its header): no model call to read")


def looks_like_inspect_log(text: str) -> bool:
    """An Inspect log starts ``{"version": 2, "status": …`` and names its ``eval``."""
    return _START.match(text[:200]) is not None and '"eval"' in text[:4096]


def _restore(value: Any, texts: dict[str, str]) -> Any:
    """``value`` with each ``attachment://``/``tc://`` reference replaced by its text
    (a reference the log does not hold stays as it is)."""
    if isinstance(value, str):
        m = _REF.match(value)
        return texts.get(m.group(2), value) if m else value
    if isinstance(value, list):
        return [_restore(v, texts) for v in value]
    if isinstance(value, dict):
        return {k: _restore(v, texts) for k, v in value.items()}
    return value


def _openai_message(m: Any, reasoning: list[int]) -> Any:
    """One of Inspect's chat messages in the OpenAI form (its tool calls' ``function``
    is the tool's name and ``arguments`` an object; a tool message names its
    ``function``); its reasoning parts left out, counted in ``reasoning``."""
    if not isinstance(m, dict):
        return m
    out: dict[str, Any] = {"role": m.get("role"), "content": m.get("content")}
    content = m.get("content")
    if isinstance(content, list):  # Inspect's parts: text, reasoning, image …
        kept = [p for p in content
                if not (isinstance(p, dict) and p.get("type") == "reasoning")]
        reasoning[0] += len(content) - len(kept)
        out["content"] = [{"type": "text", "text": p.get("text", "")} if isinstance(p, dict)
                          and p.get("type") == "text" else p for p in kept]
    calls = m.get("tool_calls")
    if isinstance(calls, list) and calls:
        out["tool_calls"] = [openai_tool_call(c.get("id"), c.get("function"),
                                              c.get("arguments", {}))
                             if isinstance(c, dict) else c for c in calls]
    if m.get("role") == "tool":
        out["tool_call_id"] = m.get("tool_call_id")
        if isinstance(m.get("function"), str):
            out["name"] = m["function"]
        error = m.get("error")
        if isinstance(error, dict) and not out.get("content"):  # (what the model read)
            out["content"] = f"{error.get('type', 'error')}: {error.get('message', '')}"
    return out


# Inspect's stop reasons in the OpenAI names the chat format reads
_STOPS = {"max_tokens": "length", "model_length": "length", "tool_calls": "tool_calls",
          "content_filter": "content_filter", "stop": "stop"}


# Inspect's GenerateConfig fields that are request parameters, by their OpenAI names
# (the others are Inspect's own: retries, timeouts, connections …)
_CONFIG = {"temperature": "temperature", "top_p": "top_p", "max_tokens": "max_tokens",
           "seed": "seed", "frequency_penalty": "frequency_penalty",
           "presence_penalty": "presence_penalty", "stop_seqs": "stop", "num_choices": "n"}


def _openai_tool(t: Any) -> Any:
    """One of Inspect's ToolInfo (``{name, description, parameters}``) as an OpenAI tool."""
    if not isinstance(t, dict) or "name" not in t:
        return t  # (the chat format notes what it cannot read)
    return {"type": "function", "function": {k: t[k] for k in (
        "name", "description", "parameters") if t.get(k) is not None}}


def _tool_choice(choice: Any) -> Any:
    """Inspect's tool choice (``auto``, ``any``, ``none`` or ``{"name"}``) in the OpenAI
    form."""
    if isinstance(choice, dict) and isinstance(choice.get("name"), str):
        return {"type": "function", "function": {"name": choice["name"]}}
    return {"any": "required"}.get(choice, choice) if isinstance(choice, str) else None


def _from_messages(messages: Any, output: Any, model: Any, where: str,
                   skipped: list[SkippedRecord], event: dict[str, Any] | None = None
                   ) -> dict[str, Any]:
    """A chat-completions record from Inspect's messages and its ``ModelOutput`` (and
    the model event's tools, tool choice and generation config, when it has them); the
    reasoning parts it leaves out noted in ``skipped``."""
    listed = messages if isinstance(messages, list) else []
    reasoning = [0]
    request: dict[str, Any] = {"messages": [_openai_message(m, reasoning) for m in listed]}
    if isinstance(model, str):
        request["model"] = model
    if event is not None:
        tools = event.get("tools")
        if isinstance(tools, list) and tools:
            request["tools"] = [_openai_tool(t) for t in tools]
            if (choice := _tool_choice(event.get("tool_choice"))) is not None:
                request["tool_choice"] = choice
        config = _dict(event.get("config"))
        request.update({name: config[k] for k, name in _CONFIG.items()
                        if config.get(k) is not None})
    record: dict[str, Any] = {"request": request}
    choices = output.get("choices") if isinstance(output, dict) else None
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        usage = output.get("usage") if isinstance(output.get("usage"), dict) else {}
        record["response"] = {
            "model": output.get("model") or model,
            "choices": [{"message": _openai_message(c.get("message"), reasoning),
                         "finish_reason": _STOPS.get(str(c.get("stop_reason")),
                                                     c.get("stop_reason"))}
                        for c in choices if isinstance(c, dict)],
            **({"usage": {"prompt_tokens": usage["input_tokens"] + sum(
                usage.get(k) or 0 for k in ("input_tokens_cache_read",
                                            "input_tokens_cache_write")
                if type(usage.get(k)) is int),  # (Inspect counts them apart)
                          "completion_tokens": usage["output_tokens"]}}
               if isinstance(usage.get("input_tokens"), int)
               and isinstance(usage.get("output_tokens"), int) else {})}
    if reasoning[0]:
        skipped.append(SkippedRecord(where=where, reason=(
            f"{reasoning[0]} part(s) of the model's reasoning not imported")))
    return record


def _expand(refs: Any, pool: Any, where: str) -> list[Any]:
    """Range-encoded references (``[[start, end_exclusive], …]``) into a pool."""
    if not isinstance(refs, list) or not isinstance(pool, list):
        raise fail(where, "references into the sample's pool of messages or calls, but "
                          "no pool holds them")
    out: list[Any] = []
    for r in refs:
        if not (isinstance(r, list) and len(r) == 2
                and all(type(x) is int and x >= 0 for x in r)):
            raise fail(where, f"a reference must be [start, end], got {r!r}"[:200])
        out += pool[r[0]:r[1]]
    return out


def _pooled(e: dict[str, Any], pools: dict[str, Any], where: str) -> dict[str, Any]:
    """The event with what Inspect (since 2026) moved into the sample's ``events_data``
    put back: ``input_refs`` into ``messages``, ``call.call_refs`` into ``calls`` (under
    the request's ``call_key``, else ``messages``)."""
    if e.get("input_refs") is not None and not e.get("input"):
        e = {**e, "input": _expand(e["input_refs"], pools.get("messages"), where)}
    call = e.get("call")
    if isinstance(call, dict) and call.get("call_refs") and isinstance(call.get("request"),
                                                                     dict):
        key = call.get("call_key") if isinstance(call.get("call_key"), str) else "messages"
        e = {**e, "call": {**call, "request": {
            **call["request"], key: _expand(call["call_refs"], pools.get("calls"), where)}}}
    return e


def _gemini_system(request: dict[str, Any]) -> dict[str, Any]:
    """Inspect's Gemini calls keep ``system_instruction`` as a list of parts: as the
    API's content."""
    for key in ("system_instruction", "systemInstruction"):
        parts = request.get(key)
        if isinstance(parts, list):
            return {**request, key: {"parts": [{"text": p} if isinstance(p, str) else p
                                               for p in parts]}}
    return request


def _event_record(e: dict[str, Any], texts: dict[str, str], where: str,
                  skipped: list[SkippedRecord]) -> dict[str, Any]:
    call = e.get("call") if isinstance(e.get("call"), dict) else None
    request = call.get("request") if call is not None else None
    if isinstance(request, dict):
        record: dict[str, Any] = {"request": _gemini_system(_restore(request, texts))}
        response = call.get("response") if call is not None else None
        if call is not None and call.get("error") and not e.get("error"):
            # (a failure Inspect turned into an output: the response is its error)
            record["error"] = _restore(response, texts) or "the call failed"
        elif response is not None:
            record["response"] = _restore(response, texts)
        elif e.get("pending"):
            record["error"] = "the call had not answered when the log was written"
    else:
        skipped.append(SkippedRecord(where=where, reason=(
            "the provider's request is not in the log (no call): read from Inspect's "
            "own messages")))
        record = _restore(_from_messages(e.get("input"), e.get("output"), e.get("model"),
                                         where, skipped, e), texts)
    if e.get("error"):
        record.pop("response", None)
        record["error"] = str(e["error"])
    if isinstance(e.get("timestamp"), str):  # (to the microsecond: before the body's
        iso_time(e["timestamp"], where, "timestamp")  # whole-second created; a bad one
        record["started_at"] = e["timestamp"]  # named as the log names it)
        if isinstance(e.get("completed"), str):
            iso_time(e["completed"], where, "completed")
            record["finished_at"] = e["completed"]
    return record


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _model_events(events: list[Any]) -> Any:
    """The model events, those of subtasks and tool sub-agents (nested ``events`` in
    older logs) in their place."""
    for e in events:
        if not isinstance(e, dict):
            continue
        if e.get("event") == "model":
            yield e
        nested = e.get("events")
        if isinstance(nested, list):
            yield from _model_events(nested)


def inspect_records(text: str) -> tuple[list[tuple[str, Any]], list[SkippedRecord]]:
    """The JSON log's model calls as request/response records (see the module's
    docstring), and what was noted."""
    log = load_json(text, "file", "Inspect log")
    samples = log.get("samples") if isinstance(log, dict) else None
    if not isinstance(samples, list) or not samples:
        raise fail("file", NO_SAMPLES)
    return _sample_records([(_place(i, s.get("id") if isinstance(s, dict) else None,
                                    s.get("epoch") if isinstance(s, dict) else None), s)
                            for i, s in enumerate(samples)])


def _place(i: int, sid: Any, epoch: Any) -> str:
    """A sample's place in notes: its position (what orders the report's notes), and
    its id and epoch as Inspect names it."""
    named = [f"id {shortened(str(sid), 40)}" if isinstance(sid, str | int)
             and not isinstance(sid, bool) else "",
             f"epoch {shortened(str(epoch), 40)}" if type(epoch) is int
             or isinstance(epoch, str) else ""]
    return f"sample {i + 1}" + (f" ({', '.join(n for n in named if n)})"
                                if any(named) else "")


def _pools(sample: dict[str, Any]) -> dict[str, Any]:
    """The sample's pools of messages and calls that model events refer to: Inspect
    2026's ``events_data``, or late 2025's ``message_pool``/``call_pool`` beside the
    events."""
    pools = _dict(sample.get("events_data"))
    if not pools and ("message_pool" in sample or "call_pool" in sample):
        pools = {"messages": sample.get("message_pool"), "calls": sample.get("call_pool")}
    return pools


def _sample_records(samples: list[tuple[str, Any]]
                    ) -> tuple[list[tuple[str, Any]], list[SkippedRecord]]:
    """Each sample's model calls as request/response records (or, where a sample failed
    to be read, its error), named by the sample's place."""
    rows: list[tuple[str, Any]] = []
    skipped: list[SkippedRecord] = []
    for at, sample in samples:
        if isinstance(sample, ImportFormatError):
            rows.append((at, sample))
            continue
        if not isinstance(sample, dict):
            rows.append((at, fail(at, f"expected an object, got {type(sample).__name__}")))
            continue
        raw = sample.get("transcript")
        transcript: dict[str, Any] = raw if isinstance(raw, dict) else {}
        events = sample.get("events") or transcript.get("events") or []
        texts: dict[str, str] = {**_dict(transcript.get("content")),
                                 **_dict(sample.get("attachments"))}
        pools = _pools(sample)
        calls = list(_model_events(events if isinstance(events, list) else []))
        for j, e in enumerate(calls):
            where = f"{at}: model event {j + 1}"
            try:
                rows.append((where, _event_record(_pooled(e, pools, where), texts, where,
                                                  skipped)))
            except ImportFormatError as err:  # noted, the other events read
                rows.append((where, err))
        if not calls:
            messages = sample.get("messages") or []
            output = sample.get("output")
            choices = output.get("choices") if isinstance(output, dict) else None
            if not (isinstance(choices, list) and choices) and not (
                    isinstance(messages, list) and messages and isinstance(messages[-1], dict)
                    and messages[-1].get("role") == "assistant"):
                rows.append((at, fail(at, "no model event, and no answer of the model (its "
                                          "output has no choices, its messages do not end "
                                          "with the assistant's): no model call to import")))
                continue
            skipped.append(SkippedRecord(where=at, reason=(
                "no model event: its messages and output are read as one call")))
            if isinstance(messages, list) and messages and isinstance(messages[-1], dict) \
                    and messages[-1].get("role") == "assistant" and sample.get("output"):
                messages = messages[:-1]  # (the answer, which the output holds)
            record = _restore(_from_messages(messages, sample.get("output"), None, at,
                                             skipped), texts)
            rows.append((at, record))
    return rows, skipped


def parse_inspect_log(text: str, stages: Stages | None = None) -> ParsedFile:
    """An Inspect log's model calls (see the module's docstring)."""
    rows, skipped = inspect_records(text)
    return parse_records(rows, skipped, stages)


# -- the .eval log: a zip archive of JSON files -------------------------------------------------
ZIP_MAGIC = b"PK\x03\x04"
_SAMPLE = re.compile(r"^samples/(.+)_epoch_(\d+)\.json$")
_LOCAL_HEADER = struct.Struct("<4s5H3I2H")  # a zip entry's local header (30 bytes)
_ZSTD = 93  # the zip method number of zstd, which Inspect writes since 2026


def is_zip(data: bytes) -> bool:
    return data.startswith(ZIP_MAGIC)


def _sample_order(info: zipfile.ZipInfo) -> tuple[int, str, str]:
    """Inspect's own order of samples: by epoch, then id (a number as its digits
    zero-filled, so 2 comes before 10); digits compared as text, never made a number
    (a name of thousands of digits is no error)."""
    m = _SAMPLE.match(info.filename)
    assert m is not None
    sid, epoch = m.group(1), m.group(2).lstrip("0") or "0"
    return len(epoch), epoch, sid.zfill(20) if sid.isdigit() else sid


def _entry(archive: zipfile.ZipFile, data: bytes, info: zipfile.ZipInfo, left: int) -> bytes:
    """One entry's bytes, decompressed, at most ``left`` of them (TooLarge past it):
    stored and deflate entries by ``zipfile`` (which reads them bounded), zstd ones
    (Python 3.11's ``zipfile`` has no zstd) from their raw bytes, checked against the
    entry's CRC. Inspect writes no other kind (``zipfile`` would unpack a bzip2 or lzma
    entry whole before the bound is checked): NotImplementedError."""
    if info.compress_type in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        with archive.open(info) as f:
            out = f.read(left + 1)
    elif info.compress_type != _ZSTD:
        raise NotImplementedError(f"compressed with zip method {info.compress_type}, "
                                  "which Inspect does not write (it writes deflate or zstd)")
    else:
        head = _LOCAL_HEADER.unpack_from(data, info.header_offset)
        if head[0] != ZIP_MAGIC or head[2] & 1:
            raise zipfile.BadZipFile("its local header is damaged, or it is encrypted")
        start = info.header_offset + _LOCAL_HEADER.size + head[9] + head[10]
        out = decompress(data[start:start + info.compress_size], "zstd")
        if zlib.crc32(out) != info.CRC:
            raise zipfile.BadZipFile("its data does not match its CRC")
    if len(out) > left:
        raise too_large("the archive's entries decompressed", "MEMWB_MAX_DECOMPRESSED")
    return out


def inspect_eval_records(data: bytes) -> tuple[list[tuple[str, Any]], list[SkippedRecord]]:
    """The model calls of an Inspect ``.eval`` log (a zip archive: ``header.json`` or
    ``_journal/start.json``, and a ``samples/<id>_epoch_<n>.json`` per sample, each a
    sample as a JSON log holds it), in Inspect's order of samples. A sample that cannot
    be read is noted and left out."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError) as e:
        raise fail("file", f"a zip archive that cannot be read: {e}") from None
    names = archive.namelist()
    if "header.json" not in names and "_journal/start.json" not in names:
        raise fail("file", "a zip archive, but no Inspect .eval log (it holds no "
                           "header.json or _journal/start.json): the importer reads no "
                           "other zip archive")
    # (entries, not names: a name written twice is two samples, each read)
    samples = sorted((i for i in archive.infolist() if _SAMPLE.match(i.filename)),
                     key=_sample_order)
    if not samples:
        raise fail("file", NO_SAMPLES)
    left = limit("MEMWB_MAX_DECOMPRESSED")
    read: list[tuple[str, Any]] = []
    for i, info in enumerate(samples):
        m = _SAMPLE.match(info.filename)
        assert m is not None
        at = _place(i, m.group(1), m.group(2).lstrip("0") or "0")
        try:
            raw = _entry(archive, data, info, left)
        except TooLarge as e:
            raise fail("file", str(e)) from None
        except (zipfile.BadZipFile, NotImplementedError, RuntimeError, ValueError, EOFError,
                OSError, zlib.error, struct.error) as e:  # (one damaged or encrypted
            # entry: the other samples are read)
            read.append((at, fail(at, f"cannot be read from the archive: {e}")))
            continue
        left -= len(raw)
        try:
            read.append((at, load_json(raw.decode("utf-8"), at, "sample")))
        except UnicodeDecodeError as e:
            read.append((at, fail(at, f"not UTF-8 text: {e}")))
        except ImportFormatError as e:
            read.append((at, e))
    return _sample_records(read)


def parse_inspect_eval(data: bytes, stages: Stages | None = None) -> ParsedFile:
    """An Inspect ``.eval`` log's model calls (``inspect_eval_records``)."""
    rows, skipped = inspect_eval_records(data)
    return parse_records(rows, skipped, stages)

