"""HTTP recordings of OpenAI-compatible and Gemini traffic as VCR cassettes (YAML, what
vcrpy and pytest-recording write): each chat-completions, Responses API or Gemini
``generateContent`` interaction becomes a request/response record; gzip bodies are
unpacked, SSE bodies reassembled later.

Both body spellings are read: vcrpy's ``body`` (a string, or ``body.string`` bytes on
the response) and the ``parsed_body`` some projects' serializers write."""

from __future__ import annotations

import gzip
import zlib
from typing import Any

from memory_core.importers.common import SkippedRecord, fail
from memory_core.importers.gemini import GEMINI_PATHS, model_in_path
from memory_core.importers.jsonvalues import check_value, load_json
from memory_core.importers.ollama import OLLAMA_PATHS, json_lines

LLM_PATHS = ("/chat/completions", "/responses", "/completions")


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
        path = uri.split("?", 1)[0].rstrip("/")
        if not path.endswith((*LLM_PATHS, *GEMINI_PATHS, *OLLAMA_PATHS)):
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
        record: dict[str, Any] = {"request": body}
        if path.endswith(GEMINI_PATHS):  # Gemini names the model in the URL only
            record["model"] = model_in_path(path)
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
