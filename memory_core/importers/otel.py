"""GenAI spans and events as exchanges: the current semantic conventions
(``gen_ai.input.messages``/``gen_ai.output.messages``/``gen_ai.system_instructions``), the
older events (on spans or as OTLP log records), OpenLLMetry's indexed
``gen_ai.prompt.N.*``/``gen_ai.completion.N.*``, OpenLIT's plain-text prompt/completion,
and OpenInference ``llm.input_messages.N.*``.

Any span with message content is a model call, whatever its operation name — unless a
span below it has content too (then it only wraps the calls, and is skipped saying so).
A model-call span that cannot be read (malformed content, an output without input) is
left out with a note naming why, and the file's other calls are imported; a file none
of whose calls can be read is refused with the first one's ``ImportFormatError``."""

from __future__ import annotations

import json
import re
from typing import Any

from memory_core.errors import ImportFormatError
from memory_core.importers.common import (
    Exchange,
    HeldHistory,
    ParsedFile,
    SkippedRecord,
    fail,
    held_note,
    not_read,
    sharing,
    split_instructions,
)
from memory_core.importers.formats.fields import count_of, with_reasoning
from memory_core.importers.jsonvalues import first_document
from memory_core.importers.otel_adk import adk_content, adk_tools
from memory_core.importers.otel_anyagent import any_agent_content, fill_inputs
from memory_core.importers.otel_content import (
    MODEL_CALL_OPERATIONS,
    span_content,
    span_params,
    span_tools,
    vercel_operation,
)
from memory_core.importers.otel_read import (
    RawSpan,
    SpanContent,
    is_content_key,
    is_span_document,
    read_otlp_lines,
)
from memory_core.models.base import Usage

REASONS_SHOWN = 12


def _int_attr(attrs: dict[str, Any], *keys: str) -> int | None:
    return next((n for k in keys if (n := count_of(attrs.get(k))) is not None), None)


def _str_attr(attrs: dict[str, Any], *keys: str) -> str | None:
    for k in keys:
        v = attrs.get(k)
        if v is not None and v != "":
            return str(v)
    return None


VERCEL_WRAPPERS = {"ai.generateText": "doGenerate", "ai.streamText": "doStream",
                   "ai.generateObject": "doGenerate", "ai.streamObject": "doStream"}


_HOST = re.compile(r"(?:[A-Za-z0-9-]+\.)+[A-Za-z0-9-]+|localhost|\[[0-9A-Fa-f:.]+\]"
                   r"|[0-9A-Fa-f]*:[0-9A-Fa-f:.]+")


def _server(attrs: dict[str, Any]) -> str | None:
    """Where the call was sent, as the span says it: ``server.address`` (and
    ``server.port``), literally; a value that is no host name (Microsoft's Agent
    Framework writes ``Unknown``) is none."""
    host = _str_attr(attrs, "server.address")
    if host is None or not _HOST.fullmatch(host):
        return None
    port = count_of(attrs.get("server.port"))
    if port is None and isinstance(attrs.get("server.port"), str) \
            and attrs["server.port"].isdigit():
        port = int(attrs["server.port"])
    return f"{host}:{port}" if port is not None else host


def _content_like(attrs: dict[str, Any]) -> list[str]:
    return [k for k in attrs if is_content_key(k)]


def _vercel_reason(op: str) -> str:
    if op in VERCEL_WRAPPERS:
        return (f"AI SDK {op} span: it wraps the model calls ({op}.{VERCEL_WRAPPERS[op]} "
                "spans), whose messages are imported from there; its ai.prompt is the "
                "caller's, not what the model got")
    if op == "ai.toolCall":
        return ("AI SDK tool execution (ai.toolCall): its call and result are imported from "
                "the model calls' messages")
    if op.endswith((".doGenerate", ".doStream")) and not op.startswith("ai.embed"):
        return (f"AI SDK model call ({op}) without ai.prompt.messages: its inputs were not "
                "recorded (experimental_telemetry recordInputs: false)")
    return f"not a model call (AI SDK operation {op!r}) and no message content"


def _no_content_reason(span: RawSpan) -> str | None:
    """Why a span with no message content is skipped; None for spans that are not
    GenAI at all (ignored silently)."""
    attrs = span.attrs
    vercel = vercel_operation(span)
    if vercel is not None:
        return _vercel_reason(vercel)
    op = attrs.get("gen_ai.operation.name")
    op = op if op is None or isinstance(op, str) else str(op)  # (a value of another type)
    kind = attrs.get("openinference.span.kind")
    genai = any(k.startswith(("gen_ai.", "llm.", "traceloop.")) for k in attrs) or kind \
        or any(name.startswith("gen_ai.") for name, _ in span.events)
    if not genai:
        return None
    if op in MODEL_CALL_OPERATIONS or kind == "LLM" or (op is None and kind is None):
        found = _content_like(attrs)
        if found:
            shown = ", ".join(found[:6]) + (f" and {len(found) - 6} more" if len(found) > 6
                                            else "")
            return (f"model call whose content this importer does not read: found {shown}, "
                    "in no form it knows (docs/importing.md lists them)")
        return ("model call with no message content: the span records none (content "
                "capture was off when it was recorded — it is turned on by, e.g., "
                "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true —, or its "
                "instrumentation records none)")
    return f"not a model call (operation {op or kind!r}) and no message content"


def exchange_of(span: RawSpan, content: SpanContent, index: int) -> Exchange:
    where, attrs, notes = span.where, span.attrs, content.notes
    msgs, reply = content.messages, content.reply
    if not msgs and not content.instructions:
        raise fail(where, "missing messages: the span has an output but no input messages")
    if reply is not None and reply.role != "assistant":
        raise fail(where, f"output message has role {reply.role!r}, expected 'assistant'")
    lead, history = split_instructions(msgs)
    if reply is None and span.status_error is None:
        raise fail(where, "no output message (gen_ai.output.messages, a gen_ai.choice event, "
                          "gen_ai.completion.0.*, llm.output_messages, output.value or "
                          "ai.response.text) and the "
                          "span did not fail")
    inp = _int_attr(attrs, "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens",
                    "llm.token_count.prompt", "llm.usage.prompt_tokens",
                    "ai.usage.inputTokens", "ai.usage.promptTokens")
    out = _int_attr(attrs, "gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens",
                    "llm.token_count.completion", "llm.usage.completion_tokens",
                    "ai.usage.outputTokens", "ai.usage.completionTokens")
    detail = {k: n for k, n in (
        ("reasoning", _int_attr(attrs, "gen_ai.usage.reasoning.output_tokens",
                                "gen_ai.usage.output_tokens.reasoning",
                                "llm.token_count.completion_details.reasoning")),
        ("cached_input", _int_attr(attrs, "gen_ai.usage.cache_read.input_tokens",
                                   "gen_ai.usage.input_tokens.cached",
                                   "llm.token_count.prompt_details.cache_read"))) if n}
    if inp is not None and out is not None:
        out = with_reasoning(inp, out, detail.get("reasoning", 0), _int_attr(
            attrs, "gen_ai.usage.total_tokens", "llm.token_count.total",
            "llm.usage.total_tokens"), where, notes)
    finish = content.finish
    reasons = attrs.get("gen_ai.response.finish_reasons")
    if finish is None and isinstance(reasons, list) and reasons:
        finish = str(reasons[0])
    key = _str_attr(attrs, "gen_ai.conversation.id", "session.id", "gen_ai.session.id",
                    "ai.telemetry.metadata.sessionId")
    user = _str_attr(attrs, "enduser.id", "user.id", "gen_ai.user.id",
                     "ai.telemetry.metadata.userId")
    return Exchange(
        where=where, index=index, instructions=content.instructions + lead, history=history,
        response=reply, thread_key=key, resource_id=user,
        model=_str_attr(attrs, "gen_ai.response.model", "ai.response.model",
                        "gen_ai.request.model", "llm.model_name", "llm.response.model",
                        "llm.request.model", "ai.model.id"),
        requested_model=_str_attr(attrs, "gen_ai.request.model", "llm.request.model",
                                  "ai.model.id"),
        usage=Usage(input_tokens=inp or 0, output_tokens=out or 0),
        usage_known=inp is not None and out is not None,
        usage_detail=detail if inp is not None and out is not None else {},
        endpoint=_server(attrs), finish_reason=finish,
        params=span_params(attrs, where),
        tools=(tools if (tools := span_tools(span, notes)) is not None
               else adk_tools(span, notes)),
        started_at=span.start, finished_at=span.end or span.start,
        error=span.status_error if reply is None else None, notes=notes)


def _wrappers(spans: list[RawSpan], with_content: set[str],
              contents: dict[str, SpanContent]) -> dict[str, str]:
    """Spans with content that are ancestors of another span with content and wrap it:
    an agent span repeating its calls' messages (the inner call's conversation holds the
    outer's first message). An ancestor that is a call of its own — a planning call above
    a tool's call to a model — is not one."""
    parent = {s.span_id: s.parent_id for s in spans if not s.from_logs}
    wraps: dict[str, str] = {}
    # (in the spans' order, not the set's: a wrapper names the first call it wraps, the
    # same on every import)
    for sid in dict.fromkeys(s.span_id for s in spans if s.span_id in with_content):
        p, seen = parent.get(sid), set()
        while p and p not in seen:
            seen.add(p)
            if p in with_content and _repeats(contents.get(p), contents.get(sid)):
                wraps.setdefault(p, sid)
            p = parent.get(p)
    return wraps


def _repeats(outer: SpanContent | None, inner: SpanContent | None) -> bool:
    """Whether ``inner``'s conversation holds ``outer``'s first message (when either
    could not be read, or the outer holds no text to compare: as a wrapper)."""
    if outer is None or inner is None:
        return True
    first = next((m.text() for m in outer.messages if m.text()), None)
    return first is None or first in {m.text() for m in inner.messages}


def parse_spans(spans: list[RawSpan]) -> ParsedFile:
    with sharing():  # a span repeats its request's history: each message parsed once
        return _parse_spans(spans)


def _once(spans: list[RawSpan]) -> tuple[list[RawSpan], list[SkippedRecord]]:
    """Each span once: one written again alike (its ids, name, times, attributes and
    events: a span exported twice, a file appended to) is read once, and one exported
    before it ended (no end time; Microsoft's Agent Framework samples write a span at
    its start and its end) gives way to its finished record; both noted. Two spans of
    one id that differ otherwise (a tracer's fault) stay two."""
    at: dict[tuple[Any, ...], int] = {}  # (ids, name, start) -> its place in ``kept``
    kept: list[RawSpan | None] = []
    again: list[SkippedRecord] = []
    for span in spans:
        key = (span.trace_id, span.span_id, span.name, span.start)
        i = at.get(key) if span.span_id else None
        seen = kept[i] if i is not None else None
        if seen is not None and i is not None:
            if seen.end == span.end and seen.attrs == span.attrs \
                    and seen.events == span.events and seen.status_error == span.status_error:
                again.append(SkippedRecord(where=span.where, reason=(
                    f"the same span as {seen.where} (its ids, times and attributes): "
                    "read once")))
                continue
            if seen.end is None and span.end is not None:
                again.append(SkippedRecord(where=seen.where, reason=(
                    "exported before it ended (no end time): its finished record later "
                    "in the file is read instead")))
                kept[i] = None
        at[key] = len(kept)
        kept.append(span)
    return [s for s in kept if s is not None], again


def _parse_spans(spans: list[RawSpan]) -> ParsedFile:
    spans, again = _once(spans)
    parsed = _parse_unique(spans)
    parsed.skipped += again
    return parsed


def _parse_unique(spans: list[RawSpan]) -> ParsedFile:
    # by the span object's id(): two spans of one id that differ (a tracer's fault)
    # stay two
    contents: dict[int, SpanContent] = {}
    failures: dict[int, ImportFormatError] = {}  # why a span with content is no run
    for span in spans:
        try:
            c = any_agent_content(span) or span_content(span) or adk_content(span)
        except ImportFormatError as e:
            failures[id(span)] = e
            continue
        if c is not None:
            contents[id(span)] = c
    answered, left_out = fill_inputs(spans, contents)
    wraps = _wrappers(spans, {s.span_id for s in spans
                              if id(s) in contents or id(s) in failures},
                      {s.span_id: contents[id(s)] for s in spans if id(s) in contents})
    exchanges: list[Exchange] = []
    of_span: dict[int, Exchange] = {}
    skipped: list[SkippedRecord] = []
    # the spans with content that are runs, by span id: a content-less call inside one
    # is said to be that call
    imported = {s.span_id for s in spans if id(s) in contents and s.span_id not in wraps}
    for span in spans:
        c = contents.get(id(span))
        if c is not None and span.span_id not in wraps:
            try:
                exchanges.append(exchange_of(span, c, len(exchanges)))
                of_span[id(span)] = exchanges[-1]
                continue
            except ImportFormatError as e:
                failures[id(span)] = e
        if id(span) in failures:  # one span that cannot be a run: said, the rest imported
            skipped.append(not_read(span.where, failures[id(span)]))
        elif span.span_id in wraps:
            skipped.append(SkippedRecord(where=span.where, reason=(
                f"wraps model-call span {wraps[span.span_id]}, whose messages are "
                "imported from there")))
        elif id(span) in left_out:
            skipped.append(SkippedRecord(where=span.where, reason=left_out[id(span)]))
        elif id(span) in answered:
            skipped.append(SkippedRecord(where=span.where, reason=(
                "a tool run: its result is imported as a tool message of the model call "
                "after it")))
        elif (reason := _no_content_reason(span)) is not None:
            if span.parent_id in imported and reason.startswith("model call with no "
                                                                "message"):
                # (a client library's span inside a framework's that holds the call:
                # ADK's generate_content inside its call_llm)
                reason = (f"model call with no message content, inside model-call span "
                          f"{span.parent_id}, whose messages are imported from there")
            skipped.append(SkippedRecord(where=span.where, reason=reason))
    _held_by_the_server(spans, of_span)
    if not exchanges and failures:  # (the first span's, in the file's order)
        raise next(failures[id(s)] for s in spans if id(s) in failures)
    if not exchanges:
        shown = "; ".join(f"{s.where}: {s.reason}" for s in skipped[:REASONS_SHOWN])
        more = f"; and {len(skipped) - REASONS_SHOWN} more" if len(skipped) > REASONS_SHOWN \
            else ""
        hint = ("; if the calls' messages were exported as log records to another file, "
                "import the files together (memwb import traces.json logs.json)"
                if any("content capture" in s.reason for s in skipped) else "")
        raise fail("file", f"no GenAI model-call spans with message content ({len(spans)} "
                           f"span(s) read, {len(skipped)} skipped"
                           + (f": {shown}{more})" if skipped else ")") + hint)
    return ParsedFile(exchanges, skipped)


def _held_by_the_server(spans: list[RawSpan], of_span: dict[int, Exchange]) -> None:
    """A call whose ``gen_ai.conversation.id`` is the ``gen_ai.response.id`` of another
    call in the file continued that response on the server (the Responses API's
    ``previous_response_id``, as Microsoft's Agent Framework records it): it sent only
    what was new (a tool's result), and the server held the rest. Its history gets that
    call's conversation and answer back, noted, and it continues that call's thread
    rather than starting one named after the response id. Calls are taken in the
    order they started, so a chain is rebuilt link by link."""
    by_response: dict[str, Exchange] = {}
    for span in spans:
        ex = of_span.get(id(span))
        rid = _str_attr(span.attrs, "gen_ai.response.id")
        if ex is not None and rid is not None:
            by_response.setdefault(rid, ex)
    ordered = sorted((s for s in spans if id(s) in of_span),
                     key=lambda s: (s.start is None, s.start or 0))
    for span in ordered:
        ex = of_span[id(span)]
        cid = _str_attr(span.attrs, "gen_ai.conversation.id")
        prior = by_response.get(cid) if cid is not None else None
        if prior is None or prior is ex:
            continue
        carried = [*prior.history, *([prior.response] if prior.response else [])]
        ex.held = HeldHistory(f"gen_ai.conversation.id {cid!r}", source=prior.where,
                              start=len(ex.instructions), count=len(carried),
                              unrecorded=prior.held.unrecorded if prior.held else None,
                              continues=prior.index)
        ex.history = carried + ex.history
        ex.thread_key = prior.thread_key
        ex.notes.insert(0, held_note(ex.where, ex.held))


def parse_otlp(text: str | None = None, data: bytes | None = None) -> ParsedFile:
    """OTLP/JSON (a document or JSON lines) from ``text``, or OTLP protobuf ``data``."""
    spans, failed = read_otlp_lines(text, data)
    parsed = parse_spans(spans)
    parsed.skipped += [not_read(where, e) for where, e in failed]
    return parsed


def parse_otlp_json(text: str) -> ParsedFile:
    return parse_otlp(text)


_OTLP_KEY = re.compile(r'(?<!\\)"resource(?:Spans|Logs)"\s*:')


def looks_like_otlp(text: str) -> bool:
    """OTLP/JSON when the document (or its first line) has ``resourceSpans`` or
    ``resourceLogs``, is one span's attributes, a span object (or a JSON array of them)
    as SDKs and tracers write them, or a Jaeger export (``is_span_document``)."""
    stripped = text.lstrip()
    head = stripped[:4096]
    if _OTLP_KEY.search(head):  # (as a key: a message may say "resourceLogs")
        return True
    # the first line (the text is stripped in front): not every line of a large log
    first = stripped.partition("\n")[0].strip()
    if first in ("{", "[{", "[") or first.startswith('{"'):
        whole = first_document(stripped)  # the document, or the first of several
        if is_span_document(whole):
            return True
    try:
        doc = json.loads(first)
    except (ValueError, RecursionError):  # too deep for Python's parser, too
        return False  # (the records' parser names the bad line)
    return isinstance(doc, dict) and ("resourceSpans" in doc or "resourceLogs" in doc) \
        or is_span_document(doc)


__all__ = ["looks_like_otlp", "parse_otlp", "parse_otlp_json"]
