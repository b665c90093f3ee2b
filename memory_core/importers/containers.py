"""Containers: how a file holds its model calls, told from its text. Each is read into
exchanges its own way — OTLP and Langfuse exports into spans (``otel.py``, ``langfuse.py``), the others (cassettes, HAR
files, httprr traces, Aider's LLM histories, Azure test-proxy recordings, HTTP-interaction JSON, JSON
records) into records that the formats of ``registry.py`` read
(``openai_jsonl.parse_records``) — and each belongs to one of the two families an
import is told by (``ImportFormat``: ``import_text``'s ``format``,
``ImportReport.format``, the runs' import records).

The first container in ``CONTAINERS`` that recognises the text reads it; given a
family, the first of that family, or else its last (which reads whatever it is given,
naming what it cannot read). OTLP protobuf, a binary file, is told and read before the
text is decoded (``import_file``)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from memory_core.errors import ImportFormatError
from memory_core.importers.aider import looks_like_aider, parse_aider
from memory_core.importers.azure_proxy import looks_like_azure_proxy, parse_azure_proxy
from memory_core.importers.cassette import looks_like_cassette, parse_cassette, yaml_keys
from memory_core.importers.common import ImportFormat, ParsedFile, Stages, fail
from memory_core.importers.har import looks_like_har, parse_har
from memory_core.importers.http_json import looks_like_http_json, parse_http_json
from memory_core.importers.httpmock import looks_like_httpmock, parse_httpmock
from memory_core.importers.httprr import looks_like_httprr, parse_httprr
from memory_core.importers.inspect_log import looks_like_inspect_log, parse_inspect_log
from memory_core.importers.langfuse import looks_like_langfuse, parse_langfuse
from memory_core.importers.mlflow import looks_like_mlflow, parse_mlflow
from memory_core.importers.nock import looks_like_nock, parse_nock
from memory_core.importers.openai_jsonl import parse_json
from memory_core.importers.otel import looks_like_otlp, parse_otlp
from memory_core.importers.packed_cassette import (
    looks_like_packed_cassette,
    parse_packed_cassette,
)


@dataclass(frozen=True)
class Container:
    """A kind of file: ``detect(text)`` tells it, ``parse(text, stages)`` reads it."""

    name: str
    family: ImportFormat
    detect: Callable[[str], bool]
    parse: Callable[[str, Stages | None], ParsedFile]


CONTAINERS: tuple[Container, ...] = (
    # an MLflow trace (mlflow.spanType, mlflow.spanInputs …): its model spans' request
    # and response bodies, read as records
    Container("mlflow", "openai", looks_like_mlflow, parse_mlflow),
    # an Inspect AI eval log ({"version", "status", "eval", …, "samples"}): its model
    # events' provider requests and responses, read as records
    Container("inspect-log", "openai", looks_like_inspect_log, parse_inspect_log),
    # a Langfuse trace's observations ("type": "GENERATION", traceId, startTime), read
    # as spans
    Container("langfuse", "otel", looks_like_langfuse,
              lambda text, _stages: parse_langfuse(text)),
    # resourceSpans/resourceLogs near the start, span objects, Jaeger, Zipkin
    Container("otlp-json", "otel", looks_like_otlp, lambda text, _stages: parse_otlp(text)),
    Container("cassette", "openai", looks_like_cassette, parse_cassette),  # interactions:
    # LangGraph's packed cassettes: base64 of a zlib-compressed MessagePack cassette
    Container("packed-cassette", "openai", looks_like_packed_cassette, parse_packed_cassette),
    # Rust's httpmock (rig's cassettes): YAML documents of "when:" and "then:"
    Container("httpmock", "openai", looks_like_httpmock, parse_httpmock),
    Container("har", "openai", looks_like_har, parse_har),  # {"log": {"entries": [...]}}
    # Node's nock: [{"scope", "method", "path", "body", "status", "response", …}]
    Container("nock", "openai", looks_like_nock, parse_nock),
    Container("httprr", "openai", looks_like_httprr, parse_httprr),  # httprr trace v1
    # Aider's --llm-history-file: "TO LLM <time>", its messages, "LLM RESPONSE <time>"
    Container("aider-history", "openai", looks_like_aider, parse_aider),
    # the Azure SDKs' test proxy: {"Entries": [{"RequestUri", …, "ResponseBody"}]}
    Container("azure-test-proxy", "openai", looks_like_azure_proxy, parse_azure_proxy),
    # {"request": {"method", "url", "body"}, "response": {"status", "body"}} per call
    Container("http-json", "openai", looks_like_http_json, parse_http_json),
    Container("json", "openai", lambda _text: True,  # JSON lines, array, documents
              lambda text, stages: _json_or_said_yaml(text, stages)),
)


def _json_or_said_yaml(text: str, stages: Stages | None) -> ParsedFile:
    """``parse_json``; a YAML file that is no cassette is said to be YAML, and a text
    that is no JSON at all what it looks like, not "line 1: invalid JSON"."""
    try:
        return parse_json(text, stages)
    except ImportFormatError as e:
        # (the first line that is not blank: "line 2" after an empty first line)
        first = next((i for i, ln in enumerate(text.splitlines(), 1) if ln.strip()), 1)
        if not str(e).startswith(f"line {first}: invalid JSON"):
            raise
        if (keys := yaml_keys(text)) is not None:
            raise fail("file", f"a YAML document (its keys: {keys}), not JSON; "
                               + _CASSETTE_YAML) from None
        if (said := _plain_text(text)) is not None:
            raise fail("file", said) from None
        raise


#: what a YAML file that is no cassette is told the importer reads
_CASSETTE_YAML = ("the YAML this importer reads is a VCR cassette (an 'interactions' or "
                  "'http_interactions' list)")
_HTTP_REQUEST = re.compile(r"(GET|POST|PUT|PATCH|DELETE) (\S+)(?: HTTP/[\d.]+)?")
_HTTP_STATUS = re.compile(r"^HTTP/[\d.]+ \d{3}", re.MULTILINE)
_YAML_START = re.compile(r"---(\s|$)|[A-Za-z_][\w.-]*:(\s|$)")


def _plain_text(text: str) -> str | None:
    """What a text that is no JSON at all looks like, with the closest the importer
    reads; None for one that starts as JSON (its own error says where it breaks)."""
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    if first[:1] in ("{", "[", '"', ""):
        return None
    if (m := _HTTP_REQUEST.fullmatch(first)) is not None:
        answered = _HTTP_STATUS.search(text) is not None
        return (f"a raw HTTP request ({m[1]} {m[2][:100]})"
                + (" and its response" if answered else ", without its response")
                + ", not JSON; the raw HTTP this importer reads is an httprr trace (its "
                "first line 'httprr trace v1'), and a call as JSON an HTTP-interaction "
                "file ({\"request\": {\"method\", \"url\", \"body\"}, \"response\": "
                "{\"status\", \"body\"}})")
    if _YAML_START.match(first):  # (one yaml_keys did not read: its aliases too many)
        return (f"a YAML document that could not be read as one (it begins {first[:60]!r}), "
                "not JSON; " + _CASSETTE_YAML)
    if first.startswith("# aider chat started at"):
        return ("Aider's chat transcript (.aider.chat.history.md: the chat as the "
                "terminal showed it, in Markdown), not its model calls: it keeps no "
                "request as sent and no usage; run Aider with --llm-history-file FILE and "
                "import that file, which holds each call's messages and answer")
    if "<|im_start|>" in text:
        return ("a prompt as text (ChatML's <|im_start|> turns), not a recorded model "
                "call: no request as an API received it, and no answer")
    return (f"plain text, not JSON (it begins {first[:80]!r}): no recording this importer "
            "reads, which are JSON records (JSON lines, an array or documents), VCR "
            "cassettes, HAR, httprr and OTLP files (docs/importing.md, \"What it reads\")")


def container_for(text: str, family: ImportFormat | None = None) -> Container:
    """The container that reads ``text`` (of ``family``, when given)."""
    candidates = [c for c in CONTAINERS if family in (None, c.family)]
    return next((c for c in candidates if c.detect(text)), candidates[-1])


def parse_openai(text: str, stages: Stages | None = None) -> ParsedFile:
    """``text`` read as the OpenAI family's records: a cassette, a HAR file or JSON."""
    return container_for(text, "openai").parse(text, stages)
