"""Amazon Bedrock's Converse API (``POST /model/{modelId}/converse`` and
``/converse-stream``, what boto3's ``converse`` sends for every model on Bedrock) as the
Anthropic Messages API record it is equivalent to, read then as one: Converse was
shaped after it, block for block.

- ``system`` and ``messages`` content blocks: ``text``; ``image``/``document`` (bytes or
  an S3 location, kept as placeholders); ``toolUse`` {toolUseId, name, input};
  ``toolResult`` {toolUseId, content [text | json | image | document | searchResult],
  status}; ``searchResult`` {source, title, content [{text}], citations} as the Messages
  API's ``search_result``;
  ``reasoningContent`` (thinking, noted); ``guardContent`` (text a guardrail checks:
  its text); ``cachePoint`` markers and other blocks are noted, not imported;
- ``toolConfig`` (``toolSpec`` name, description, ``inputSchema.json``; ``toolChoice``),
  ``inferenceConfig`` (``maxTokens``, ``temperature``, ``topP``, ``stopSequences``) and
  ``additionalModelRequestFields`` are the tools and parameters; the model is the URL's
  (``us.anthropic.claude-…%3A0`` decoded);
- the answer: ``output.message``, ``stopReason``, ``usage`` (``inputTokens``,
  ``outputTokens``, cache reads and writes); a stream is AWS's binary event stream
  (``application/vnd.amazon.eventstream``), decoded here and joined."""

from __future__ import annotations

import base64
import binascii
import json
import re
import struct
import zlib
from typing import Any
from urllib.parse import unquote

from memory_core.importers.common import fail, object_of

BEDROCK_PATHS = ("/converse", "/converse-stream")
# InvokeModel: the model's own body (Claude's is the Messages API's; bedrock_invoke.py)
INVOKE_PATHS = ("/invoke", "/invoke-with-response-stream")
EVENT_STREAM = "application/vnd.amazon.eventstream"
_MODEL_IN_PATH = re.compile(
    r"/model/([^/]+)/(?:converse|converse-stream|invoke|invoke-with-response-stream)$")
_CONFIG_NAMES = {"maxTokens": "max_tokens", "temperature": "temperature",
                 "topP": "top_p", "stopSequences": "stop_sequences",
                 # (Nova's InvokeModel body names them so too)
                 "max_new_tokens": "max_tokens", "topK": "top_k"}
# a ConverseStream's events (Nova's InvokeModel stream sends each as a chunk's object,
# keyed by its name)
_STREAM_EVENTS = ("messageStart", "contentBlockStart", "contentBlockDelta",
                  "contentBlockStop", "messageStop", "metadata")
# the kinds of a Converse content block (each block an object of one of these keys)
_BLOCK_KINDS = ("text", "image", "document", "video", "audio", "toolUse", "toolResult",
                "guardContent", "cachePoint", "reasoningContent", "citationsContent",
                "searchResult")
# a document block's ``format`` as its media type
_DOCUMENT_TYPES = {
    "pdf": "application/pdf", "csv": "text/csv", "html": "text/html", "txt": "text/plain",
    "md": "text/markdown", "doc": "application/msword",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "xls": "application/vnd.ms-excel",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"}
_REQUEST_PARTS = ("messages", "system", "toolConfig", "inferenceConfig",
                  "additionalModelRequestFields", "modelId", "model")


def model_in_path(path: str) -> str | None:
    """The model a Converse URL names, decoded (``us.amazon.nova-micro-v1%3A0`` is
    ``us.amazon.nova-micro-v1:0``; an ARN's slashes come encoded too)."""
    found = _MODEL_IN_PATH.search(path)
    return unquote(found.group(1)) if found else None


def is_converse_record(obj: Any) -> bool:
    """A Converse request (``inferenceConfig``/``toolConfig``, or content blocks keyed by
    kind: ``{"text": …}``, ``{"toolUse": …}``) or response (``output.message``)."""
    if not isinstance(obj, dict):
        return False
    response = obj.get("response")
    if isinstance(response, dict) and isinstance(response.get("output"), dict) \
            and response.get("object") != "response":  # (a Responses API one, malformed)
        return True
    if isinstance(response, list) and response and isinstance(response[0], dict) \
            and "_event" in response[0]:
        return True
    request = obj.get("request", obj)
    if not isinstance(request, dict) or not isinstance(request.get("messages"), list):
        return False
    if "inferenceConfig" in request or "toolConfig" in request:
        return True
    # content blocks keyed by their kind, never typed: no other API's parts look so
    # (OpenAI's and Anthropic's name their "type"), a text-only request included
    blocks = [b for m in request["messages"] if isinstance(m, dict)
              and isinstance(m.get("content"), list) for b in m["content"]]
    system = request.get("system")
    blocks += system if isinstance(system, list) else []
    untyped = [b for b in blocks if isinstance(b, dict) and "type" not in b]
    return any("toolUse" in b or "toolResult" in b or "reasoningContent" in b
               for b in untyped) or bool(blocks) and all(
        isinstance(b, dict) and len(b) == 1 and next(iter(b)) in _BLOCK_KINDS
        for b in blocks)


# -- AWS event stream ----------------------------------------------------------------------
def _header_value(data: bytes, at: int, kind: int, where: str) -> tuple[Any, int]:
    if kind in (0, 1):  # true, false
        return kind == 0, at
    sizes = {2: 1, 3: 2, 4: 4, 5: 8, 8: 8, 9: 16}
    if kind in sizes:
        return data[at:at + sizes[kind]], at + sizes[kind]
    if kind in (6, 7):  # bytes, string: a 2-byte length first
        (n,) = struct.unpack_from(">H", data, at)
        raw = data[at + 2:at + 2 + n]
        return (raw.decode("utf-8") if kind == 7 else raw), at + 2 + n
    raise fail(where, f"event stream header value of unknown type {kind}")


def is_event_stream(data: bytes) -> bool:
    """Whether ``data`` starts as an AWS event stream message does: a length that fits
    and the checksum of its prelude (what a recording without its ``Content-Type``
    header still shows)."""
    if len(data) < 16:
        return False
    total, headers_len, prelude_crc = struct.unpack_from(">III", data)
    return bool(zlib.crc32(data[:8]) == prelude_crc and 16 <= total <= len(data)
                and headers_len <= total - 16)


def event_stream(data: bytes, where: str) -> list[dict[str, Any]]:
    """The messages of an AWS event stream, each its JSON payload with ``_event`` (the
    ``:event-type`` header, or the exception's type); lengths and checksums checked."""
    out: list[dict[str, Any]] = []
    at = 0
    while at < len(data):
        if len(data) - at < 16:
            raise fail(where, f"the event stream ends inside a message (byte {at})")
        total, headers_len, prelude_crc = struct.unpack_from(">III", data, at)
        if zlib.crc32(data[at:at + 8]) != prelude_crc or total > len(data) - at \
                or total < 16 or headers_len > total - 16:
            raise fail(where, f"the event stream is damaged at byte {at} (its length or "
                              "checksum does not match)")
        message = data[at:at + total]
        if zlib.crc32(message[:-4]) != struct.unpack_from(">I", message, total - 4)[0]:
            raise fail(where, f"the event stream message at byte {at} fails its checksum")
        headers: dict[str, Any] = {}
        h = 12
        try:
            while h < 12 + headers_len:
                n = message[h]
                name = message[h + 1:h + 1 + n].decode("utf-8")
                headers[name], h = _header_value(message, h + 2 + n, message[h + 1 + n],
                                                 where)
        except (IndexError, struct.error, UnicodeDecodeError):
            raise fail(where, f"the event stream message at byte {at} has unreadable "
                              "headers") from None
        if h != 12 + headers_len:
            raise fail(where, f"the event stream message at byte {at} has unreadable "
                              "headers")
        payload = message[12 + headers_len:total - 4]
        try:
            body = json.loads(payload) if payload else {}
        except ValueError:
            raise fail(where, f"event stream message at byte {at} is not JSON") from None
        kind = headers.get(":event-type") or headers.get(":exception-type") or ""
        if headers.get(":message-type") == "exception":
            body = {"_exception": True, **(body if isinstance(body, dict) else {})}
        elif headers.get(":message-type") == "error":  # (``:error-code``, ``:error-message``)
            kind = str(headers.get(":error-code") or "error")
            body = {"_exception": True, "message": headers.get(":error-message")}
        out.append({"_event": kind, **(body if isinstance(body, dict) else {"value": body})})
        at += total
    if not out:
        raise fail(where, "the event stream holds no message")
    return out


def invoke_chunks(events: list[dict[str, Any]], where: str) -> list[dict[str, Any]] | None:
    """InvokeModelWithResponseStream's events, each a ``chunk`` whose ``bytes`` are the
    base64 of one event of the model's own stream (Anthropic's ``message_start`` …): those
    events; None when the stream is not made of such chunks (Converse's)."""
    chunks = [e for e in events if not e.get("_exception")]
    if not chunks or not all(e.get("_event") == "chunk" and isinstance(e.get("bytes"), str)
                             for e in chunks):
        return None
    out: list[dict[str, Any]] = []
    for k, e in enumerate(events):
        if e.get("_exception"):  # the Messages API's own error event: a failed run
            out.append({"type": "error", "error": {"type": e.get("_event"), **{
                key: v for key, v in e.items() if not key.startswith("_")}}})
            continue
        try:
            event = json.loads(base64.b64decode(e["bytes"], validate=True))
        except (ValueError, binascii.Error):
            raise fail(where, f"stream chunk {k} is not base64 JSON") from None
        if not isinstance(event, dict):
            raise fail(where, f"stream chunk {k} is not a JSON object")
        out.append(event)
    return out


def _joined(events: list[dict[str, Any]], where: str, notes: list[str]) -> dict[str, Any]:
    """A ConverseStream's events as the Converse response they stream."""
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, list[str]] = {}
    out: dict[str, Any] = {"output": {"message": {"role": "assistant", "content": []}}}
    for n, ev in enumerate(events):
        ew = f"{where}: stream event {n}"
        if not isinstance(ev, dict) or not isinstance(ev.get("_event"), str):
            raise fail(ew, f"not an event of a ConverseStream: {ev!r}"[:300])
        kind = ev["_event"]
        if ev.get("_exception"):
            raise _Failed(json.dumps({k: v for k, v in ev.items() if k != "_exception"},
                                     sort_keys=True))
        i = ev.get("contentBlockIndex", 0)
        if isinstance(i, bool) or not isinstance(i, int) or i < 0:
            raise fail(ew, f"'contentBlockIndex' must be a block number, got {i!r}")
        if kind == "contentBlockStart":
            start = object_of(ev.get("start"), ew, "start").get("toolUse")
            if isinstance(start, dict):
                blocks[i] = {"toolUse": {**start, "input": {}}}
                partial[i] = []
        elif kind == "contentBlockDelta":
            delta = object_of(ev.get("delta"), ew, "delta")
            have = next(iter(blocks.get(i, {})), None)
            new = next((k for k in ("text", "toolUse", "reasoningContent") if k in delta),
                       None)
            if new is not None and have not in (None, new):
                raise fail(ew, f"a {new} delta for block {i}, which is a {have} block")
            if "text" in delta:
                block = blocks.setdefault(i, {"text": ""})
                block["text"] = block.get("text", "") + _text(delta["text"], ew)
            elif "toolUse" in delta:
                piece = object_of(delta["toolUse"], ew, "delta.toolUse").get("input")
                partial.setdefault(i, []).append(_text(piece, ew))
                blocks.setdefault(i, {"toolUse": {"input": {}}})
            elif "reasoningContent" in delta:
                said = blocks.setdefault(i, {"reasoningContent": {"reasoningText": {
                    "text": ""}}})["reasoningContent"]["reasoningText"]
                reasoning = object_of(delta["reasoningContent"], ew, "delta.reasoningContent")
                said["text"] += _text(reasoning.get("text"), ew)
            else:
                said = (f"{where}: a stream delta of kind {', '.join(delta) or 'none'} not "
                        "imported")
                if said not in notes:  # (once a kind: a cited answer streams many)
                    notes.append(said)
        elif kind == "messageStop":
            out["stopReason"] = ev.get("stopReason")
        elif kind == "metadata":
            out["usage"] = ev.get("usage")
        elif kind not in ("messageStart", "contentBlockStop"):
            notes.append(f"{ew}: an event of kind {kind!r} not imported")
    for i, text in partial.items():
        joined = "".join(text)
        try:
            blocks[i]["toolUse"]["input"] = json.loads(joined) if joined else {}
        except ValueError:
            raise fail(where, f"the streamed input of tool call {i} is not JSON: "
                              f"{joined[:80]!r}") from None
    out["output"]["message"]["content"] = [blocks[i] for i in sorted(blocks)]
    return out


def _text(value: Any, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise fail(where, f"a streamed piece must be text, got {value!r}"[:300])
    return value


class _Failed(Exception):
    """A stream that ended in an exception event: the call failed."""


# -- blocks ----------------------------------------------------------------------------------
def _source(block: dict[str, Any], media: str) -> dict[str, Any]:
    source = block.get("source") or {}
    if isinstance(source.get("bytes"), str):
        return {"type": "base64", "media_type": media, "data": source["bytes"]}
    s3 = source.get("s3Location")
    if isinstance(s3, dict) and isinstance(s3.get("uri"), str):
        return {"type": "url", "url": s3["uri"]}
    return {"type": "base64", "media_type": media, "data": ""}


def _block(raw: Any, where: str, notes: list[str]) -> dict[str, Any] | None:
    """One Converse content block as the Messages API's (None: not imported, noted)."""
    if not isinstance(raw, dict) or len(raw) != 1:
        raise fail(where, f"a Converse content block must be an object of one kind, got "
                          f"{raw!r}")
    (kind, body), = raw.items()
    if kind == "text":
        return {"type": "text", "text": body}
    if kind == "guardContent":
        inner = body.get("text") if isinstance(body, dict) else None
        text = inner.get("text") if isinstance(inner, dict) else inner
        notes.append(f"{where}: guardrail-checked text (guardContent) read as text")
        return {"type": "text", "text": text if isinstance(text, str) else ""}
    if kind == "toolUse" and isinstance(body, dict):
        return {"type": "tool_use", "id": body.get("toolUseId"), "name": body.get("name"),
                "input": body.get("input") if body.get("input") is not None else {}}
    if kind == "toolResult" and isinstance(body, dict):
        content = []
        parts = body.get("content") or []
        if not isinstance(parts, list):
            raise fail(where, f"toolResult 'content' must be a list, got {parts!r}"[:300])
        for j, part in enumerate(parts):
            if isinstance(part, dict) and "json" in part:
                content.append({"type": "text", "text": json.dumps(part["json"],
                                                                   ensure_ascii=False)})
            else:
                converted = _block(part, f"{where}: result part {j}", notes)
                if converted is not None:
                    content.append(converted)
        return {"type": "tool_result", "tool_use_id": body.get("toolUseId"),
                "content": content, "is_error": body.get("status") == "error"}
    if kind in ("image", "document") and isinstance(body, dict):
        fmt = str(body.get("format") or "")
        media = f"image/{fmt}" if kind == "image" else _DOCUMENT_TYPES.get(fmt, "")
        out = {"type": kind, "source": _source(body, media)}
        if kind == "document" and isinstance(body.get("name"), str):
            out["title"] = body["name"]
        return out
    if kind == "searchResult" and isinstance(body, dict):
        texts = body.get("content")
        found: dict[str, Any] = {
            "type": "search_result", "source": body.get("source"), "title": body.get("title"),
            "content": [{"type": "text", "text": c["text"]}
                        if isinstance(c, dict) and list(c) == ["text"] else c for c in texts]
            if isinstance(texts, list) else texts}
        if isinstance(body.get("citations"), dict):
            found["citations"] = body["citations"]
        return found
    if kind == "citationsContent" and isinstance(body, dict):
        # text the model wrote citing a document: its text is the answer's, the
        # citations (where in the document) are not kept
        pieces = body.get("content")
        text = "".join(p["text"] for p in (pieces if isinstance(pieces, list) else [])
                       if isinstance(p, dict) and isinstance(p.get("text"), str))
        cited = body.get("citations")
        notes.append(f"{where}: cited text read as text; its "
                     f"{len(cited) if isinstance(cited, list) else 0} citation(s) not imported")
        return {"type": "text", "text": text}
    if kind == "reasoningContent" and isinstance(body, dict):
        said = body.get("reasoningText")
        text = said.get("text") if isinstance(said, dict) else None
        if isinstance(said, dict) and isinstance(text, str):
            return {"type": "thinking", "thinking": text,
                    "signature": said.get("signature", "")}
        return {"type": "redacted_thinking", "data": body.get("redactedContent") or ""}
    notes.append(f"{where}: a {kind} block not imported")
    return None


# what each role's message may hold, as Converse names the kinds (the Messages API the
# blocks become refuses the others, in its own names)
_ROLE_KINDS = {"assistant": ("text", "toolUse", "reasoningContent", "citationsContent",
                             "guardContent", "cachePoint"),
               "user": ("text", "image", "document", "video", "audio", "toolResult",
                        "guardContent", "cachePoint", "searchResult")}


def converse_blocks(raw: Any, where: str, notes: list[str], role: Any = None
                    ) -> list[dict[str, Any]]:
    if not isinstance(raw, list):
        raise fail(where, f"'content' must be a list of blocks, got {type(raw).__name__}")
    allowed = _ROLE_KINDS.get(role) if isinstance(role, str) else None
    for j, b in enumerate(raw):
        kind = next(iter(b), None) if isinstance(b, dict) and len(b) == 1 else None
        if allowed is not None and kind in _BLOCK_KINDS and kind not in allowed:
            said = [k for k in allowed if k != "cachePoint"]
            raise fail(where, f"block {j} of a Converse {role} message is a {kind!r} block "
                              f"(the {role}'s blocks are {', '.join(said[:-1])} or "
                              f"{said[-1]})")
    out = [_block(b, f"{where}: block {j}", notes) for j, b in enumerate(raw)]
    return [b for b in out if b is not None]


def _tools(config: Any, where: str, notes: list[str]) -> tuple[list[Any], Any]:
    if config is None:
        return [], None
    if not isinstance(config, dict):
        raise fail(where, f"'toolConfig' must be an object, got {config!r}")
    tools = []
    listed = config.get("tools") or []
    if not isinstance(listed, list):
        raise fail(where, f"'toolConfig.tools' must be a list, got {listed!r}"[:300])
    for j, tool in enumerate(listed):
        spec = tool.get("toolSpec") if isinstance(tool, dict) else None
        if not isinstance(spec, dict):
            notes.append(f"{where}: tool {j} ({', '.join(tool) if isinstance(tool, dict) else tool}) "
                         "is not a tool specification: not imported")
            continue
        schema = spec.get("inputSchema") or {}
        tools.append({"name": spec.get("name"), "description": spec.get("description", ""),
                      "input_schema": schema.get("json", {}) if isinstance(schema, dict)
                      else {}})
    choice = config.get("toolChoice")
    if isinstance(choice, dict) and len(choice) == 1:
        (kind, body), = choice.items()
        choice = {"type": kind, **(body if isinstance(body, dict) else {})}
    return tools, choice


def _usage(raw: Any) -> dict[str, Any] | None:
    if not isinstance(raw, dict):
        return None
    out = {"input_tokens": raw.get("inputTokens"), "output_tokens": raw.get("outputTokens")}
    for ours, names in (("cache_read_input_tokens", ("cacheReadInputTokens",
                                                     "cacheReadInputTokenCount")),
                        ("cache_creation_input_tokens", ("cacheWriteInputTokens",
                                                         "cacheWriteInputTokenCount"))):
        for theirs in names:  # (Converse's name, then Nova's InvokeModel body's)
            if raw.get(theirs) is not None:
                out[ours] = raw[theirs]
    return out


def guardrail_note(response: Any, where: str, notes: list[str]) -> None:
    """A guardrail that changed the answer (``amazon-bedrock-guardrailAction`` beside an
    InvokeModel answer or stream chunk) is noted: the answer recorded is the one it let
    through."""
    chunks = response if isinstance(response, list) else [response]
    if any(isinstance(c, dict) and c.get("amazon-bedrock-guardrailAction") == "INTERVENED"
           for c in chunks):
        notes.append(f"{where}: a guardrail intervened (amazon-bedrock-guardrailAction): "
                     "the answer is the one it let through")


def _keyed_events(chunks: list[Any], where: str) -> list[Any]:
    """Nova's InvokeModel stream (chunks ``{"contentBlockDelta": {…}}``, the last with
    ``amazon-bedrock-invocationMetrics`` beside its event) as ConverseStream's events;
    a list already of such events (``_event``) as it is."""
    out: list[Any] = []
    for n, chunk in enumerate(chunks):
        if not isinstance(chunk, dict) or "_event" in chunk:
            out.append(chunk)
            continue
        kinds = [k for k in _STREAM_EVENTS if k in chunk]
        if len(kinds) != 1:
            raise fail(f"{where}: stream event {n}", "not an event of a ConverseStream "
                       f"(nor a chunk of Nova's holding one of {', '.join(_STREAM_EVENTS)}): "
                       f"its keys are {', '.join(sorted(map(str, chunk))) or 'none'}")
        out.append({"_event": kinds[0], **object_of(chunk[kinds[0]], where, kinds[0])})
    return out


def as_anthropic_record(obj: dict[str, Any], where: str, notes: list[str]
                        ) -> dict[str, Any]:
    """A Converse record as the Messages API record it is equivalent to."""
    request = obj.get("request", obj)
    if not isinstance(request, dict):
        raise fail(where, f"'request' must be an object, got {type(request).__name__}")
    messages = request.get("messages")
    if not isinstance(messages, list):
        raise fail(where, "a Converse request needs a 'messages' list")
    converted = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            raise fail(where, f"message {i} must be an object, got {m!r}")
        converted.append({"role": m.get("role"),
                          "content": converse_blocks(m.get("content"), f"{where}: message {i}",
                                                     notes, m.get("role"))})
    anthropic: dict[str, Any] = {"messages": converted}
    system = converse_blocks(request.get("system") or [], f"{where}: system", notes)
    if system:
        anthropic["system"] = system
    url = obj.get("url")
    model = request.get("modelId") or request.get("model") or obj.get("model") or (
        model_in_path(url.split("?", 1)[0]) if isinstance(url, str) else None)
    if model:
        anthropic["model"] = model
    tools, choice = _tools(request.get("toolConfig"), where, notes)
    if tools:
        anthropic["tools"] = tools
    if choice is not None:
        anthropic["tool_choice"] = choice
    config = request.get("inferenceConfig") or {}
    if not isinstance(config, dict):
        raise fail(where, f"'inferenceConfig' must be an object, got {config!r}")
    anthropic.update({_CONFIG_NAMES.get(str(k), str(k)): v for k, v in config.items()})
    extra = request.get("additionalModelRequestFields") or {}
    anthropic.update(extra if isinstance(extra, dict) else {})
    anthropic.update({k: v for k, v in request.items() if k not in _REQUEST_PARTS})
    out = {k: v for k, v in obj.items() if k not in ("request", "response", "model")}
    out["request"] = anthropic
    response = obj.get("response")
    guardrail_note(response, where, notes)
    if isinstance(response, list):
        try:
            response = _joined(_keyed_events(response, where), where, notes)
        except _Failed as e:
            out["error"] = str(e)
            return out
    if isinstance(response, dict):
        output = response.get("output")
        message = output.get("message") if isinstance(output, dict) else None
        if not isinstance(message, dict):
            raise fail(where, "a Converse response needs 'output.message'")
        stop = response.get("stopReason")
        out["response"] = {
            "type": "message", "role": "assistant", "model": model,
            "content": converse_blocks(message.get("content") or [], f"{where}: response",
                                       notes, "assistant"),
            "stop_reason": stop, "usage": _usage(
                response.get("usage"))}
    return out

