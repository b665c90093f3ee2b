"""HTTP recordings of model traffic as VCR cassettes (YAML, what vcrpy and
pytest-recording write): each interaction with an API the importer reads — OpenAI's
chat completions, Responses and legacy completions (and every compatible server),
Anthropic's Messages API, Gemini's ``generateContent``, Ollama's ``/api/chat`` and
``/api/generate``, Bedrock's Converse — becomes a request/response record carrying its
``url`` (``llm_api`` tells the API from it); gzip bodies are unpacked, AWS event streams
decoded, SSE and JSON-lines bodies reassembled later.

Both body spellings are read: vcrpy's ``body`` (a string, or ``body.string`` bytes on
the response) and the ``parsed_body`` some projects' serializers write."""

from __future__ import annotations

import gzip
import re
import zlib
from typing import Any, Literal

from memory_core.importers.bedrock import BEDROCK_PATHS, EVENT_STREAM, event_stream
from memory_core.importers.common import SkippedRecord, fail
from memory_core.importers.gemini import GEMINI_PATHS
from memory_core.importers.jsonvalues import check_value, load_json
from memory_core.importers.ollama import OLLAMA_PATHS, json_lines

LLM_PATHS = ("/chat/completions", "/responses", "/completions")
# the OpenAI Assistants API's messages of a thread (``/threads/{id}/messages``) are not
# model calls; every other ``…/messages`` is the Messages API (Anthropic's own
# ``/v1/messages``, or an Anthropic-compatible base URL such as ``…/anthropic/messages``)
_ASSISTANTS_MESSAGES = re.compile(r"/threads/[^/]+/messages$")
Api = Literal["openai", "anthropic", "gemini", "ollama", "bedrock"]


def llm_api(url: str) -> Api | None:
    """Which API a request URL (or path) calls: ``"openai"`` for chat completions, the
    Responses API and legacy completions, ``"anthropic"`` for the Messages API,
    ``"gemini"``, ``"ollama"`` and ``"bedrock"`` (Converse) for theirs, None for
    anything else (not a model call this importer reads)."""
    path = url.split("?", 1)[0].rstrip("/")
    if path.endswith(GEMINI_PATHS):
        return "gemini"
    if path.endswith(OLLAMA_PATHS):
        return "ollama"
    if path.endswith(BEDROCK_PATHS) and "/model/" in path:
        return "bedrock"
    if path.endswith(LLM_PATHS):
        return "openai"
    if path.endswith("/messages") and not _ASSISTANTS_MESSAGES.search(path):
        return "anthropic"
    return None


def looks_like_cassette(text: str) -> bool:
    head = text.lstrip()[:2000]
    return head.startswith("interactions:") or "\ninteractions:" in head


def _header(headers: Any, name: str) -> str:
    if not isinstance(headers, dict):
        return ""
    for k, v in headers.items():
        if str(k).lower() == name:
            return str(v[0] if isinstance(v, list) and v else v).lower()
    return ""


def _body(side: dict[str, Any], where: str) -> Any:
    """A request's or response's body as JSON (a dict) or SSE text (a string)."""
    if "parsed_body" in side:
        return side["parsed_body"]
    raw = side.get("body")
    if isinstance(raw, dict):
        raw = raw.get("string")
    if raw is None or raw == "":
        return None
    if isinstance(raw, bytes) and _header(side.get("headers"), "content-type").startswith(
            EVENT_STREAM):
        return event_stream(raw, where)  # Bedrock's ConverseStream
    if isinstance(raw, bytes):
        try:
            if _header(side.get("headers"), "content-encoding") == "gzip" or \
                    raw[:2] == b"\x1f\x8b":
                raw = gzip.decompress(raw)
            elif _header(side.get("headers"), "content-encoding") == "deflate":
                raw = zlib.decompress(raw)
            raw = raw.decode("utf-8")
        except (OSError, EOFError, zlib.error, UnicodeDecodeError) as e:
            raise fail(where, f"body cannot be decoded: {e}") from None
    if not isinstance(raw, str):
        raise fail(where, f"body must be text, got {type(raw).__name__}")
    stripped = raw.lstrip()
    if stripped.startswith(("data:", "event:")):
        return raw
    lines = json_lines(raw, where)  # a stream of JSON lines (Ollama's)
    return lines if lines is not None else load_json(raw, where, "body")


def cassette_records(text: str) -> tuple[list[tuple[str, Any]], list[SkippedRecord]]:
    """The cassette's LLM interactions as ``{"request", "response"|"error"}`` records."""
    import yaml

    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise fail("file", f"invalid YAML cassette: {e}") from None
    interactions = doc.get("interactions") if isinstance(doc, dict) else None
    if not isinstance(interactions, list):
        raise fail("file", "a cassette must have an 'interactions' list")
    rows: list[tuple[str, Any]] = []
    skipped: list[SkippedRecord] = []
    for i, item in enumerate(interactions, start=1):
        where = f"interaction {i}"
        req = item.get("request") if isinstance(item, dict) else None
        resp = item.get("response") if isinstance(item, dict) else None
        if not isinstance(req, dict) or not isinstance(resp, dict):
            raise fail(where, "an interaction needs a 'request' and a 'response' object")
        uri = str(req.get("uri") or "")
        if llm_api(uri) is None:
            path = uri.split("?", 1)[0]
            skipped.append(SkippedRecord(where=where, reason=f"not a model call this "
                                         f"importer reads ({req.get('method')} {path})"))
            continue
        body = _body(req, f"{where}: request")
        if not isinstance(body, dict):
            raise fail(where, "the request body is not a JSON object")
        check_value(body, where, strings=True)
        status = resp.get("status") or {}
        code = status.get("code", 200) if isinstance(status, dict) else 200
        answer = _body(resp, f"{where}: response")
        record: dict[str, Any] = {"request": body, "url": uri}
        if code == 200 and answer is not None:
            record["response"] = answer
        else:
            error = answer.get("error", answer) if isinstance(answer, dict) else answer
            # a 200 with no body (the client gave up reading it): the answer was not
            # recorded, which "HTTP 200" as the run's error did not say
            record["error"] = error or (f"HTTP {code}" if code != 200 else
                                        "the response body was not recorded (HTTP 200)")
        rows.append((where, record))
    return rows, skipped
