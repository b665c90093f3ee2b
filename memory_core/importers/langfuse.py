"""Langfuse trace exports: a trace and its observations as Langfuse gives them — the
UI's export and its API (``{"trace": {...}, "observations": [...]}``, a trace object
with its ``observations``, the observations list ``{"data": [...]}``, or a JSON array
of observations).

Each ``GENERATION`` observation is one model call. Langfuse keeps, for what it took in
through OpenTelemetry, the span's own attributes in ``metadata.attributes``, with the
messages it lifted out of them as the observation's ``input`` and ``output`` (JSON,
often as a JSON string); for what its SDKs sent, only ``input`` and ``output``. So an
observation becomes a span (``otel_read.RawSpan``) of its attributes, and, when they
hold no messages this importer reads, ``input`` and ``output`` are put back under the
key their form belongs to — the GenAI convention's ``parts`` under
``gen_ai.input.messages``/``gen_ai.output.messages``, the AI SDK's under ``ai.prompt``,
anything else (OpenAI or LangChain messages, a chat completion, text) under
``gen_ai.prompt``/``gen_ai.completion`` — and the spans are read as an OTLP export's are
(``otel.parse_spans``): wrappers, tool calls, usage, models, errors alike. The
observation's ``model``, ``usageDetails``, ``level: ERROR`` and its trace's
``sessionId``/``userId`` fill what the attributes do not say."""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from datetime import UTC, datetime
from typing import Any

from memory_core.errors import ImportFormatError
from memory_core.importers.common import ParsedFile, SkippedRecord, fail, iso_time, not_read
from memory_core.importers.jsonvalues import iter_documents, json_or_text
from memory_core.importers.otel import parse_spans
from memory_core.importers.otel_content import span_content
from memory_core.importers.otel_read import RawSpan

_TYPES = ("GENERATION", "SPAN", "EVENT", "AGENT", "TOOL", "CHAIN", "RETRIEVER",
          "EVALUATOR", "EMBEDDING", "GUARDRAIL")
_WRAPPED = re.compile(r'\{\s*("message"\s*:\s*"[^"]*"\s*,\s*)?"data"\s*:\s*\{')
_UI_EXPORT = re.compile(r'\{\s*"trace"\s*:\s*\{\s*"id"\s*:')
_TYPE = re.compile(r'"type"\s*:\s*"(?:' + "|".join(_TYPES) + r')"')
# a message flattened to text as Langfuse shows one ("user: Say 'Hello World!'")
_ROLE_LINE = re.compile(r"^(system|developer|user|assistant|tool): ", re.MULTILINE)


def looks_like_langfuse(text: str) -> bool:
    """A JSON document holding Langfuse observations: an observation's ``traceId`` and
    ``startTime`` beside a ``type`` Langfuse gives observations (``"GENERATION"`` …)."""
    head = text[:65536].lstrip()
    if _UI_EXPORT.match(head) and '"observations"' in text:  # (the trace first, any size)
        return True
    if _WRAPPED.match(head) and '"observations"' in text and _TYPE.search(text) is not None:
        return True
    return head.startswith(("{", "[")) and '"traceId"' in head and '"startTime"' in head \
        and _TYPE.search(head) is not None


def _observations(doc: Any) -> tuple[dict[str, Any], list[Any]]:
    """The trace (``{}`` when the file has none) and its observations."""
    if isinstance(doc, list):
        return {}, doc
    if isinstance(doc, dict):
        if isinstance(doc.get("observations"), list):
            trace = doc["trace"] if isinstance(doc.get("trace"), dict) else doc
            return trace, doc["observations"]
        if isinstance(doc.get("data"), list):
            return {}, doc["data"]
        if isinstance(doc.get("data"), dict) and isinstance(doc["data"].get("observations"),
                                                            list):
            return _observations(doc["data"])  # (an API answer wrapped: {message, data})
    raise fail("file", "a Langfuse export must hold its observations: {\"trace\": {...}, "
                       "\"observations\": [...]}, a trace with \"observations\", "
                       "{\"data\": [...]} or a JSON array of observations")


def _flattened(text: str) -> list[dict[str, str]] | None:
    """Messages Langfuse shows flattened, one ``role: text`` after another; None for
    text that does not start so."""
    starts = list(_ROLE_LINE.finditer(text))
    if not starts or starts[0].start() != 0:
        return None
    ends = [m.start() for m in starts[1:]] + [len(text)]
    return [{"role": m.group(1), "content": text[m.end():end].removesuffix("\n")}
            for m, end in zip(starts, ends, strict=True)]


def _langchain(message: Any) -> Any:
    """A LangChain message as the OpenAI form says it: its ``additional_kwargs``'
    ``tool_calls`` (and ``function_call``) lifted beside its content."""
    if not isinstance(message, dict) or not isinstance(message.get("additional_kwargs"), dict):
        return message
    extra = message["additional_kwargs"]
    out = {k: v for k, v in message.items() if k != "additional_kwargs"}
    for key in ("tool_calls", "function_call"):
        if extra.get(key) and not out.get(key):
            out[key] = extra[key]
    return out


# attributes whose values Langfuse keeps as text: numbers (parameters, token counts) and
# the OpenTelemetry arrays of the conventions (written as JSON text)
_NUMERIC = ("gen_ai.request.", "gen_ai.usage.", "llm.token_count.", "llm.usage.",
            "ai.usage.", "ai.settings.")
_ARRAYS = {"gen_ai.response.finish_reasons", "gen_ai.request.stop_sequences",
           "ai.prompt.tools", "llm.request.stop"}
# the observation's modelParameters read as the request's (-1 or "": not set)
_PARAMS = ("temperature", "top_p", "max_tokens", "frequency_penalty", "presence_penalty",
           "seed")
_NUMBER = re.compile(r"-?\d+(\.\d+)?([eE][+-]?\d+)?")


def _typed(key: str, value: Any) -> Any:
    """An attribute's value as its span had it (see ``_NUMERIC``, ``_ARRAYS``)."""
    if not isinstance(value, str):
        return value
    if key.startswith(_NUMERIC):
        if _NUMBER.fullmatch(value):
            number = float(value)
            if not math.isfinite(number):  # (1e400: kept as text, refused as a number)
                return value
            return int(value) if number.is_integer() and "." not in value and "e" not in \
                value.lower() else number
        if value in ("true", "false"):
            return value == "true"
    if key in _ARRAYS and value.startswith("["):
        parsed = json_or_text(value, key, "")
        return parsed if isinstance(parsed, list) else value
    return value


def _messages_in(raw: list[Any], attrs: dict[str, Any], where: str,
                 notes: list[str]) -> list[Any]:
    """Input messages as Langfuse's LangChain integration gives them, in the OpenAI
    form: ``additional_kwargs`` lifted (``_langchain``); a message whose role is a tool's
    name answers the waiting call of that name (LangChain.js); the tool definitions
    listed as ``tool`` messages after the conversation (LangChain in Python) are the
    tools offered (``gen_ai.tool.definitions``, unless the attributes list them)."""
    out: list[Any] = []
    tools: list[Any] = []
    waiting: dict[str, str] = {}  # tool name -> the id of its unanswered call
    for i, m in enumerate(_langchain(m) for m in raw):
        if not isinstance(m, dict):
            out.append(m)
            continue
        content, role = m.get("content"), m.get("role")
        if role == "tool" and isinstance(content, dict) and content.get("type") == "function":
            tools.append(content)
            continue
        calls = m.get("tool_calls")
        for c in calls if isinstance(calls, list) else []:
            fn = c.get("function") if isinstance(c, dict) else None
            if isinstance(fn, dict) and isinstance(fn.get("name"), str):
                waiting[fn["name"]] = str(c.get("id"))
        if isinstance(role, str) and role in waiting and "tool_call_id" not in m:
            notes.append(f"{where}: input message {i} has the role {role!r}, a tool's "
                         "name: read as that tool's result")
            m = {**m, "role": "tool", "tool_call_id": waiting.pop(role)}
        out.append(m)
    if tools:
        notes.append(f"{where}: {len(tools)} tool definition(s) listed among the input "
                     "messages: read as the tools offered")
        attrs.setdefault("gen_ai.tool.definitions", json.dumps(tools))
    return out


def _has_parts(value: Any) -> bool:
    items = value if isinstance(value, list) else [value]
    return any(isinstance(m, dict) and isinstance(m.get("parts"), list) for m in items)


def _restore(attrs: dict[str, Any], inp: Any, out: Any, where: str,
             notes: list[str]) -> None:
    """Put the observation's input and output back under the attribute their form
    belongs to (see the module's docstring)."""
    if "ai.operationId" in attrs:  # the AI SDK: its prompt and its answer
        if isinstance(inp, list):
            attrs["ai.prompt.messages"] = json.dumps(inp)
        elif inp is not None:
            attrs["ai.prompt"] = inp if isinstance(inp, str) else json.dumps(inp)
        if isinstance(out, list):
            attrs["ai.response.toolCalls"] = json.dumps(out)
        elif isinstance(out, str):
            attrs["ai.response.text"] = out
        return
    if _has_parts(inp) or _has_parts(out):  # the GenAI convention's messages
        if inp is not None:
            attrs["gen_ai.input.messages"] = json.dumps(inp if isinstance(inp, list)
                                                        else [inp])
        if out is not None:
            attrs["gen_ai.output.messages"] = json.dumps(out if isinstance(out, list)
                                                         else [out])
        return
    if isinstance(inp, str) and (flat := _flattened(inp)) is not None:
        notes.append(f"{where}: input recorded as text, one 'role: text' after another: "
                     f"read as {len(flat)} message(s)")
        inp = flat
    if isinstance(inp, list):
        inp = _messages_in(inp, attrs, where, notes)
    elif isinstance(inp, dict) and not ({"role", "messages", "choices", "parts", "text"}
                                        & set(inp)):
        # (e.g. {"content": "role"}: what LangSmith's OpenTelemetry export of Claude's
        # agent SDK leaves of the messages) no conversation this importer can read
        notes.append(f"{where}: input {json.dumps(inp)[:80]} holds no messages")
        inp = None
    if inp is not None:
        attrs["gen_ai.prompt"] = inp if isinstance(inp, str) else json.dumps(inp)
    if isinstance(out, list) and len(out) == 1:
        out = out[0]
    if out is not None:
        attrs["gen_ai.completion"] = out if isinstance(out, str) else json.dumps(
            _langchain(out))


def _usage(attrs: dict[str, Any], obs: dict[str, Any]) -> None:
    """The observation's token counts, when the attributes count none."""
    if any("token" in k.lower() and "usage" in k.lower() or k.startswith("llm.token_count")
           for k in attrs):
        return
    # usageDetails (Langfuse 3), usage (2: {input, output, total, unit}), the counts
    # of either beside them (inputUsage, promptTokens …)
    unit = obs["usage"].get("unit") if isinstance(obs.get("usage"), dict) else None
    if unit not in (None, "TOKENS"):  # (CHARACTERS, MILLISECONDS …: no token counts)
        return
    raw = next((v for v in (obs.get("usageDetails"), obs.get("usage")) if isinstance(v, dict)
                and ("input" in v or "output" in v)), None)
    details: dict[str, Any] = raw if isinstance(raw, dict) else {}
    inp = details.get("input", obs.get("inputUsage", obs.get("promptTokens")))
    out = details.get("output", obs.get("outputUsage", obs.get("completionTokens")))
    if type(inp) is int and type(out) is int and (inp or out):
        inp, out = _counted_within(details, inp, out)
        attrs["gen_ai.usage.input_tokens"] = inp
        attrs["gen_ai.usage.output_tokens"] = out
        for key, attr in _DETAILS.items():
            if type(details.get(key)) is int and details[key]:
                attrs[attr] = details[key]


# Langfuse's usage details (its own names, and OpenInference's it keeps), as the
# OpenTelemetry attributes that say them
_DETAILS = {"output_reasoning": "gen_ai.usage.reasoning.output_tokens",
            "completion_details.reasoning": "gen_ai.usage.reasoning.output_tokens",
            "input_cache_read": "gen_ai.usage.cache_read.input_tokens",
            "prompt_details.cache_read": "gen_ai.usage.cache_read.input_tokens"}


def _counted_within(details: dict[str, Any], inp: int, out: int) -> tuple[int, int]:
    """Langfuse counts a usage's details beside its ``input`` and ``output``, not within
    them (``total`` is the sum of every count: ``output_reasoning`` is not in ``output``):
    the input and output with their details in them, as the provider counted them.
    Counts whose total is not that sum are taken as they are."""
    counts = {k: v for k, v in details.items() if k != "total" and type(v) is int}
    if details.get("total") != sum(counts.values()):
        return inp, out
    return (sum(v for k, v in counts.items() if k.startswith(("input", "prompt"))),
            sum(v for k, v in counts.items() if k.startswith(("output", "completion"))))


def _span(obs: dict[str, Any], trace: dict[str, Any], where: str,
          notes: list[str]) -> RawSpan:
    meta = json_or_text(obs.get("metadata"), where, "metadata")
    raw_attrs = meta.get("attributes") if isinstance(meta, dict) else None
    attrs = {k: _typed(k, v) for k, v in raw_attrs.items()} \
        if isinstance(raw_attrs, dict) else {}
    span = RawSpan(where=where, trace_id=str(obs.get("traceId") or trace.get("id") or ""),
                   span_id=str(obs.get("id") or where),
                   parent_id=str(obs.get("parentObservationId") or ""),
                   name=str(obs.get("name") or ""),
                   start=iso_time(obs.get("startTime"), where, "startTime"),
                   end=iso_time(obs.get("endTime"), where, "endTime"), attrs=attrs)
    try:
        held = span_content(span) is not None
    except ImportFormatError:  # its attributes hold messages, malformed: said as the
        held = True  # span's failure when the spans are read
    if not held:
        _restore(attrs, json_or_text(obs.get("input"), where, "input"),
                 json_or_text(obs.get("output"), where, "output"), where, notes)
    if not any(k in attrs for k in ("gen_ai.operation.name", "openinference.span.kind",
                                    "ai.operationId")):
        attrs["gen_ai.operation.name"] = "chat"  # (a GENERATION is a model call)
    if isinstance(obs.get("model"), str) and obs["model"]:
        attrs.setdefault("gen_ai.request.model", obs["model"])
    _usage(attrs, obs)
    params = obs.get("modelParameters")
    for key, value in (params.items() if isinstance(params, dict) else ()):
        if key in _PARAMS and not (isinstance(value, str) and not _NUMBER.fullmatch(value)):
            value = _typed("gen_ai.request.", value)
            if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
                attrs.setdefault(f"gen_ai.request.{key}", value)
    for key, value in (("session.id", trace.get("sessionId")),
                       ("user.id", trace.get("userId"))):
        if isinstance(value, str) and value:
            attrs.setdefault(key, value)
    if obs.get("level") == "ERROR":
        span.status_error = str(obs.get("statusMessage") or "the call failed (level ERROR)")
    return span


def parse_langfuse(text: str) -> ParsedFile:
    """A Langfuse export's model calls (see the module's docstring). One observation
    that cannot be read is left out, noted; an export none of whose generations can
    be read is refused with the first one's error."""
    trace: dict[str, Any] = {}
    observations: list[tuple[str, Any]] = []
    failed: list[tuple[str, ImportFormatError]] = []
    for where, doc in iter_documents(text, keep_going=True):
        if isinstance(doc, ImportFormatError):
            failed.append((where, doc))
        elif isinstance(doc, dict) and "type" in doc and "traceId" in doc:
            observations.append((f"observation {len(observations)}", doc))  # (a line)
        else:
            found_trace, found = _observations(doc)
            trace = trace or found_trace
            observations += [(f"observation {len(observations) + i}", o)
                             for i, o in enumerate(found)]
    spans: list[RawSpan] = []
    notes: dict[str, list[str]] = {}
    other: Counter[str] = Counter()
    for at, obs in observations:
        if not isinstance(obs, dict):
            failed.append((at, fail(at, f"expected an object, got {type(obs).__name__}")))
            continue
        kind = str(obs.get("type") or "?")
        if kind != "GENERATION":
            other[kind] += 1
            continue
        where = f"observation {obs.get('id') or at.split()[-1]} ({obs.get('name') or 'unnamed'})"
        try:
            spans.append(_span(obs, trace, where, notes.setdefault(where, [])))
        except ImportFormatError as e:
            failed.append((where, e))
    if not spans and failed:
        raise failed[0][1]
    if not spans:
        raise fail("file", "no GENERATION observation (a model call) among its "
                           f"{len(observations)} observation(s)" + (
                               f": {', '.join(f'{n} {k}' for k, n in other.items())}"
                               if other else ""))
    # a generation's parent, through the observations that are no model call (they are
    # not read as spans): an agent's generation wrapping its model calls stays their
    # ancestor (Strands: invoke_agent > execute_event_loop_cycle > chat)
    parent_of = {str(o.get("id")): str(o.get("parentObservationId") or "")
                 for _, o in observations if isinstance(o, dict) and o.get("id")}
    called = {s.span_id for s in spans}
    for span in spans:
        p, seen = span.parent_id, set()
        while p and p not in called and p in parent_of and p not in seen:
            seen.add(p)
            p = parent_of[p]
        if p in called:
            span.parent_id = p
    # Langfuse lists a trace's observations in no set order: read them as they began
    spans.sort(key=lambda s: s.start or datetime.max.replace(tzinfo=UTC))
    parsed = parse_spans(spans)
    # the notes made while reading an observation go with its call's own (or, for one
    # left out, with the reason it was)
    by_where = {ex.where: ex for ex in parsed.exchanges}
    left = {k.where: k for k in parsed.skipped}
    for where, said in notes.items():
        for note in said:
            if where in by_where:
                by_where[where].notes.append(note)
            elif where in left:
                left[where].reason += f" ({note.removeprefix(where + ': ')})"
    parsed.skipped += [not_read(where, e) for where, e in failed]
    if other:
        parsed.skipped.append(SkippedRecord(where="file", reason=(
            "observations that are not model calls, not imported (a tool's result is read "
            "from the model call sent it): " +
            ", ".join(f"{n} {k}" for k, n in other.items()))))
    return parsed
