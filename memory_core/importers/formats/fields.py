"""The record conventions the formats share: where a record names its thread and
resource, its request's sampling parameters and packaging fields, token usage in
OpenAI's spelling (or in an HTTP response's headers), and what the importer expected
when no format reads a record."""

from __future__ import annotations

import re
from collections.abc import Set as AbstractSet
from typing import Any

from memory_core.importers.common import Exchange, fail
from memory_core.models.base import Usage

THREAD_KEYS = ("thread_id", "conversation_id")
RESOURCE_KEYS = ("resource_id", "user_id", "user")
# request keys that say where the conversation is held or how it was sent, not how to
# sample: kept in the run's import record as they were (``Exchange.request_fields``);
# ``anthropic_version``: the API version a Claude body names on Bedrock and Vertex AI
REQUEST_FIELDS = ("previous_response_id", "conversation", "store", "stream", "stream_options",
                  "anthropic_version")
# the record's own keys, beside the request's in a flat record ({"messages",
# "response", "thread_id", …}): never request parameters
RECORD_KEYS = {"response", "error", "url", "recorded_at", "started_at", "finished_at",
               "usage_headers", "polled", "resource_id", "user_id", *THREAD_KEYS}
# token counts an HTTP response sends as headers (Bedrock's InvokeModel: most of its
# models' bodies carry none), by what they count; an HTTP recording keeps those it has
# in its record's ``usage_headers``
TOKEN_HEADERS = {"input": "x-amzn-bedrock-input-token-count",
                 "output": "x-amzn-bedrock-output-token-count",
                 "cache_read": "x-amzn-bedrock-cache-read-input-token-count",
                 "cache_write": "x-amzn-bedrock-cache-write-input-token-count"}
# request keys that are the conversation or its packaging, not sampling parameters
NOT_PARAMS = {"messages", "model", "tools", "functions", "input", "instructions",
              "metadata", "user", "prompt", *REQUEST_FIELDS, *RECORD_KEYS,
              # the OpenAI SDK's own arguments, as SDK dumps (Inspect's calls) keep them:
              # what the client sent besides the body, not the model's parameters
              "extra_headers", "extra_query", "extra_body"}
EXPECTED = ("expected an OpenAI chat-completions record ({\"request\": {\"messages\": "
            "[...]}, \"response\": {...}} or {\"messages\": [...], \"response\": {...}}), a "
            "fine-tuning row ({\"messages\": [...]}), a ShareGPT conversation "
            "({\"conversations\": [...]}), a Responses API record ({\"request\": {\"input\": "
            "...}, \"response\": {\"output\": [...]}}), an Anthropic Messages API record "
            "({\"request\": {\"messages\": [...]}, \"response\": {\"type\": \"message\", "
            "...}}) or batch lines ({\"custom_id\", \"body\"})")


def str_field(where: str, obj: dict[str, Any], name: str) -> str | None:
    value = obj.get(name)
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str) or not value:
        raise fail(where, f"'{name}' must be a non-empty string, got {value!r}")
    return value


def first_field(where: str, sources: list[dict[str, Any]], names: tuple[str, ...]
                ) -> str | None:
    for src in sources:
        for name in names:
            value = str_field(where, src, name)
            if value is not None:
                return value
    return None


def count_of(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) \
        and value >= 0 else None


def usage_of(raw: Any, where: str = "", notes: list[str] | None = None
             ) -> tuple[Usage, bool]:
    """The input and output token counts of an OpenAI-shaped ``usage``. A server that
    counts reasoning beside the output rather than within it (xAI's: ``total_tokens`` =
    prompt + completion + reasoning, or more reasoning than output) has its reasoning
    added to the output, as OpenAI counts it, noted in ``notes``; and so the cached
    input a server counts beside the input (Charm's proxy: total = prompt + completion
    + cached) is added to the input. A usage without both
    counts is unknown, noted with what it does count (Bedrock's ``{"outputTokens": 50}``)."""
    if not isinstance(raw, dict):
        return Usage(), False
    # (Gemini's OpenAI-compatible API wrote camelCase in 2024: "promptTokens")
    inp = count_of(_first(raw, "prompt_tokens", "input_tokens", "promptTokens"))
    out = count_of(_first(raw, "completion_tokens", "output_tokens", "completionTokens"))
    if inp is None or out is None:
        if notes is not None and any(v is not None for v in raw.values()):
            said = (f"counts {out} output token(s) but no input tokens" if out is not None
                    else f"counts {inp} input token(s) but no output tokens"
                    if inp is not None else f"{raw!r}"[:200]
                    + " gives no input and output token counts")
            notes.append(f"{where}: response: its usage {said}: usage unknown")
        return Usage(), False
    total = count_of(_first(raw, "total_tokens", "totalTokens"))
    # (OpenAI's cached count, within prompt_tokens by its definition; Anthropic's
    # cache_read_input_tokens is beside input_tokens by its own, and its reader adds it)
    details = _first(raw, "prompt_tokens_details", "input_tokens_details")
    cached = count_of(details.get("cached_tokens")) if isinstance(details, dict) else None
    inp = with_cached(inp, out, cached or 0, total, f"{where}: response", notes)
    out = with_reasoning(inp, out, usage_detail(raw).get("reasoning", 0), total,
                         f"{where}: response", notes)
    return Usage(input_tokens=inp, output_tokens=out), True


def _first(raw: dict[str, Any], *keys: str) -> Any:
    """The value of the first of ``keys`` that ``raw`` has (None when it has none)."""
    return next((raw[k] for k in keys if k in raw), None)


def with_cached(inp: int, out: int, cached: int, total: int | None, where: str,
                notes: list[str] | None) -> int:
    """The input count with its cached part in it: ``inp`` as recorded, unless the record
    counts the cached input beside the input (its total is input + output + cached, or
    more is cached than was input: Charm's proxy), noted."""
    return _within(inp, cached, inp + out, total, ("cached input", "input", "cached"),
                   where, notes)


def with_reasoning(inp: int, out: int, reasoning: int, total: int | None, where: str,
                   notes: list[str] | None) -> int:
    """The output count with its reasoning in it: ``out`` as recorded, unless the record
    counts the reasoning beside the output (its total is input + output + reasoning, or
    the reasoning is more than the output), noted."""
    return _within(out, reasoning, inp + out, total, ("reasoning", "output", "reasoning"),
                   where, notes)


def _within(count: int, part: int, both: int, total: int | None,
            words: tuple[str, str, str], where: str, notes: list[str] | None) -> int:
    """``count`` with ``part`` in it: as recorded, unless the record counts the part
    beside it (``total`` = input + output + part, or the part is more than ``count``),
    noted in ``words`` (what the part is, what the count is, the part's short name)."""
    if part and (part > count or total == both + part != both):
        what, of, short = words
        if notes is not None:
            notes.append(f"{where}: its usage counts {part} {what} token(s) beside "
                         f"its {count} {of} token(s)"
                         + (f" (total {total})" if total is not None else "")
                         + f": {of} counted as {count + part}, the {short} within")
        return count + part
    return count


def usage_detail(raw: Any) -> dict[str, int]:
    """What a recorded usage says within its counts, where it says it: ``reasoning``
    (OpenAI's ``completion_tokens_details``/``output_tokens_details.reasoning_tokens``,
    Gemini's ``thoughtsTokenCount``) and ``cached_input`` (OpenAI's
    ``prompt_tokens_details``/``input_tokens_details.cached_tokens``, Anthropic's
    ``cache_read_input_tokens``, Gemini's ``cachedContentTokenCount``), ``cache_write``
    (the input written to the prompt cache: Anthropic's ``cache_creation_input_tokens``,
    OpenAI's ``input_tokens_details``/``prompt_tokens_details.cache_write_tokens``),
    and OpenAI's predicted outputs (``completion_tokens_details.accepted_prediction_tokens``: the
    prediction's tokens the answer holds, ``rejected_prediction_tokens``: those it does
    not, billed as output all the same); none that are 0."""
    if not isinstance(raw, dict):
        return {}

    def inner(name: str, key: str) -> int | None:
        part = raw.get(name)
        return count_of(part.get(key)) if isinstance(part, dict) else None

    reasoning = inner("completion_tokens_details", "reasoning_tokens") or inner(
        "output_tokens_details", "reasoning_tokens") or count_of(
        raw.get("thoughtsTokenCount", raw.get("thoughts_token_count")))
    cached = inner("prompt_tokens_details", "cached_tokens") or inner(
        "input_tokens_details", "cached_tokens") or count_of(
        raw.get("cache_read_input_tokens")) or count_of(
        raw.get("cachedContentTokenCount", raw.get("cached_content_token_count")))
    written = inner("input_tokens_details", "cache_write_tokens") or inner(
        "prompt_tokens_details", "cache_write_tokens") or count_of(
        raw.get("cache_creation_input_tokens"))
    accepted = inner("completion_tokens_details", "accepted_prediction_tokens")
    rejected = inner("completion_tokens_details", "rejected_prediction_tokens")
    return {k: n for k, n in (("reasoning", reasoning), ("cached_input", cached),
                              ("cache_write", written),
                              ("accepted_prediction", accepted),
                              ("rejected_prediction", rejected)) if n}


def _header_count(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value if value >= 0 else None
    return int(value) if isinstance(value, str) and re.fullmatch(r"[0-9]{1,18}", value) \
        else None


def header_usage(exchanges: list[Exchange], headers: Any, where: str) -> None:
    """The usage an HTTP call's response headers count (``TOKEN_HEADERS``: input,
    output, and the cached input apart, which the input tokens include as the Messages
    API's reading does), for the call's one answer: its recorded usage when its body
    gave none (noted), else only compared with the body's (a difference noted, the
    body's kept). A header that is not a count, or one of input and output without the
    other, is noted and no usage is read from the headers."""
    if not isinstance(headers, dict) or not headers:
        return
    answered = [ex for ex in exchanges if ex.response is not None]
    if len(exchanges) != 1 or not answered:
        if answered:
            answered[0].notes.append(f"{where}: the response headers count the tokens "
                                     "of the whole call, not of each answer: not read")
        return
    ex = answered[0]
    counts: dict[str, int] = {}
    for key, name in TOKEN_HEADERS.items():
        if name not in headers:
            continue
        n = _header_count(headers[name])
        if n is None:
            ex.notes.append(f"{where}: response header {name} {headers[name]!r} is not a "
                            "token count: usage not read from the headers")
            return
        counts[key] = n
    if "input" not in counts or "output" not in counts:
        missing = TOKEN_HEADERS["input" if "input" not in counts else "output"]
        ex.notes.append(f"{where}: the response headers give no {missing}: usage not read "
                        "from the headers")
        return
    usage = Usage(input_tokens=counts["input"] + counts.get("cache_read", 0)
                  + counts.get("cache_write", 0), output_tokens=counts["output"])
    said = f"{usage.input_tokens} in, {usage.output_tokens} out"
    if not ex.usage_known:
        ex.usage, ex.usage_known = usage, True
        if counts.get("cache_read"):
            ex.usage_detail = {**ex.usage_detail, "cached_input": counts["cache_read"]}
        ex.notes.append(f"{where}: usage read from the response headers ({said})")
    elif ex.usage != usage:
        ex.notes.append(f"{where}: the response headers count {said}, the body "
                        f"{ex.usage.input_tokens} in, {ex.usage.output_tokens} out: the "
                        "body's usage kept")


def request_params(request: dict[str, Any], where: str, *,
                   not_params: AbstractSet[str] = NOT_PARAMS) -> dict[str, Any]:
    """Every sampling/request parameter the record kept (temperature, top_p, seed,
    max_tokens, stop, response_format, …); numbers must be finite. A parameter sent as
    null is not set (as the APIs read it: SDKs that dump every field send nulls)."""
    params = {k: v for k, v in request.items() if k not in not_params and v is not None}
    for k in ("temperature", "top_p", "top_k", "seed", "max_tokens", "max_completion_tokens",
              "max_output_tokens", "frequency_penalty", "presence_penalty", "n"):
        v = params.get(k)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int | float)):
            raise fail(where, f"request '{k}' must be a number, got {v!r}")
    return params


def request_fields(request: dict[str, Any]) -> dict[str, Any]:
    """The request's ``REQUEST_FIELDS``, as sent."""
    return {k: request[k] for k in REQUEST_FIELDS if k in request}


def record_context(obj: dict[str, Any], request: dict[str, Any], where: str,
                   *also: dict[str, Any]) -> tuple[str | None, str | None]:
    """The record's thread key and resource: the line's own keys, its ``metadata``'s,
    then the request's (OpenAI's end-user ``user``), then ``also``'s."""
    metadata = obj.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise fail(where, f"'metadata' must be an object, got {type(metadata).__name__}")
    return (first_field(where, [obj, metadata], THREAD_KEYS),
            first_field(where, [obj, metadata, request, *also], RESOURCE_KEYS))


def wrapped(obj: dict[str, Any], own_keys: AbstractSet[str]) -> dict[str, Any]:
    """A record as ``{"request": {...}, <its own keys>}``: a flat record's keys in
    ``own_keys`` are the record's, the rest its request's (a wrapped one as it is)."""
    if "request" in obj:
        return obj
    return {"request": {k: v for k, v in obj.items() if k not in own_keys},
            **{k: v for k, v in obj.items() if k in own_keys}}
