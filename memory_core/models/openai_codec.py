"""The one translation between our messages and the OpenAI chat-completions format, in
both directions, shared by the model client (``models/openai_chat.py``) and the
importers, so what we send and what we read back agree.

Rules (both directions):

- text: a string stays a string; a list of content parts stays a list of ``TextPart``
  (never joined), and goes back out as a list when it has more than one part;
- ``name`` on a message lives in ``metadata["name"]``; OpenAI's ``developer`` role is our
  ``system`` with ``metadata["openai_role"] = "developer"``;
- image, audio and file parts cannot be messages' parts here: each becomes a typed
  placeholder in ``metadata["attachments"]`` (``index`` in the content list, ``type``
  and what identifies it; a ``data:`` URI is summarised by media type and its decoded
  content's size and sha256) and goes back out as the same part when its URL was kept,
  else as a text part naming it;
- tool calls: arguments are a JSON string on the wire and a parsed value here (text that
  is not JSON stays the string it was); a call with no id gets a deterministic one,
  ``derived_call_id`` (the formula the model client uses), and a ``tool`` message with no
  ``tool_call_id`` answers the first unanswered call before it; both are noted.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import unquote_to_bytes

from memory_core.errors import ImportFormatError
from memory_core.models.base import ToolSpec
from memory_core.models.openai_stream import REASONING_KEYS
from memory_core.types import Message, TextPart, ToolCallPart, ToolResultPart

# OpenAI's "developer" role is the system role of newer models.
OPENAI_ROLES: dict[str, str] = {"system": "system", "developer": "system", "user": "user",
                                "assistant": "assistant", "tool": "tool", "function": "tool"}
ATTACHMENT_TYPES = ("image_url", "input_audio", "file", "image", "audio", "input_image",
                    "input_file")
Parts = list[TextPart | ToolCallPart | ToolResultPart]


def _fail(where: str, problem: str) -> ImportFormatError:
    return ImportFormatError(f"{where}: {problem}")


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def derived_call_id(index: int, name: str, args: Any) -> str:
    """The id given to the ``index``-th tool call of a message when the recording or
    the server has none: stable for the same call, so repeated history matches."""
    digest = hashlib.sha1(f"{index}:{name}:{json.dumps(args, sort_keys=True)}"
                          .encode()).hexdigest()[:12]
    return f"call-{digest}"


# (an import numbers the same call made again in one conversation: ``-2``, ``-3`` …)
# a text that opens with the model's reasoning between <think> tags
_THINK = re.compile(r"\s*<think>(.*?)</think>\s*", re.DOTALL)


def without_think(text: str, where: str, notes: list[str]) -> str:
    """An assistant's text without the reasoning it opens with between ``<think>`` tags
    (noted): a client sending the reasoning back so (Groq's gpt-oss and Kimi K2 through
    pydantic-ai), a server answering so (DeepSeek-R1 on vLLM). Reasoning is not
    imported, in whatever field it comes: the text sent back then matches the answer
    it repeats."""
    think = _THINK.match(text) if text.lstrip().startswith("<think>") else None
    if think is None:
        return text
    notes.append(f"{where}: its reasoning ({len(think.group(1).strip()):,} characters "
                 "between <think> tags) not imported")
    return text[think.end():]
_DERIVED_ID = re.compile(r"call-[0-9a-f]{12}(?:-[0-9]+)?")


def is_derived_call_id(call_id: str) -> bool:
    """Whether ``call_id`` is one ``derived_call_id`` gave (the recording had none), or
    an import numbered it as the same call made again (``importers.common``)."""
    return _DERIVED_ID.fullmatch(call_id) is not None


# -- ours -> OpenAI --------------------------------------------------------------------
def _attachment_part(att: dict[str, Any]) -> dict[str, Any]:
    kind = att.get("type")
    if kind == "image_url" and isinstance(att.get("url"), str):
        image: dict[str, Any] = {"url": att["url"]}
        if att.get("detail") is not None:
            image["detail"] = att["detail"]
        return {"type": "image_url", "image_url": image}
    described = ", ".join(f"{k} {v}" for k, v in sorted(att.items())
                          if k not in ("type", "index"))
    return {"type": "text", "text": f"[{kind} not kept: {described}]"}


def _content_out(texts: list[TextPart], m: Message) -> str | list[dict[str, Any]] | None:
    """The wire content of a message's text parts and attachment placeholders."""
    attachments = [a for a in m.metadata.get("attachments") or [] if isinstance(a, dict)]
    if not attachments and len(texts) <= 1:
        return texts[0].text if texts else None
    parts: list[dict[str, Any]] = [{"type": "text", "text": t.text} for t in texts]
    for att in sorted(attachments, key=lambda a: int(a.get("index", len(parts)))):
        parts.insert(min(int(att.get("index", len(parts))), len(parts)), _attachment_part(att))
    return parts


def _with_name(msg: dict[str, Any], m: Message) -> dict[str, Any]:
    if isinstance(m.metadata.get("name"), str):
        msg["name"] = m.metadata["name"]
    if m.role == "system" and m.metadata.get("openai_role") == "developer":
        msg["role"] = "developer"
    return msg


def _arguments(args: Any) -> str:
    # text that was not JSON when read goes back as the same text
    return args if isinstance(args, str) else _dump(args)


def to_openai_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Our messages in the OpenAI chat format: assistant tool calls carry JSON-string
    arguments, each tool result becomes a ``tool`` message with its ``tool_call_id``."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if isinstance(m.content, str):
            content = _content_out([TextPart(text=m.content)] if m.content else [], m)
            plain: dict[str, Any] = {"role": m.role,
                                     "content": "" if content is None else content}
            call_id = m.metadata.get("tool_call_id") or m.metadata.get("call_id")
            if m.role == "tool" and call_id:
                plain["tool_call_id"] = str(call_id)
            out.append(_with_name(plain, m))
            continue
        texts = [p for p in m.content if isinstance(p, TextPart)]
        calls = [p for p in m.content if isinstance(p, ToolCallPart)]
        results = [p for p in m.content if isinstance(p, ToolResultPart)]
        if m.role == "assistant":
            msg: dict[str, Any] = {"role": "assistant", "content": _content_out(texts, m)}
            if calls:
                msg["tool_calls"] = [
                    {"id": c.id, "type": "function",
                     "function": {"name": c.name, "arguments": _arguments(c.args)}}
                    for c in calls]
            out.append(_with_name(msg, m))
            continue
        for r in results:
            content = r.result if isinstance(r.result, str) else _dump(r.result)
            out.append({"role": "tool", "tool_call_id": r.call_id, "name": r.name,
                        "content": content})
        if texts or not results:
            body = _content_out(texts, m)
            out.append(_with_name({"role": "user" if m.role == "tool" else m.role,
                                   "content": "" if body is None else body}, m))
    return out


def to_openai_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [{"type": "function",
             "function": {"name": t.name, "description": t.description,
                          "parameters": t.parameters}} for t in tools]


# -- OpenAI -> ours --------------------------------------------------------------------
def _data_uri_summary(url: str) -> dict[str, Any]:
    head, _, data = url.partition(",")
    return {"media_type": head[5:].split(";")[0] or None,
            **payload_summary(data, base64_text=head.endswith(";base64"))}


def payload_summary(data: str, *, base64_text: bool = True) -> dict[str, Any]:
    """The size and sha256 of the content a part sends encoded (base64 — standard or
    URL-safe, padded or not, wrapped or not — or a data URI's percent-encoding): what
    the file holds, so a placeholder can be matched to it (they were the encoded
    text's, a third larger). Text that does not decode is summarised as it is, and
    says so."""
    text = "".join(data.split()) if base64_text else data
    try:
        if not base64_text:
            raw = unquote_to_bytes(text)
        else:
            padded = (text + "=" * (-len(text) % 4)).encode("ascii")
            alt = b"-_" if ("-" in text or "_" in text) else None
            raw = base64.b64decode(padded, altchars=alt, validate=True)
    except (ValueError, UnicodeEncodeError):  # (binascii.Error is a ValueError)
        return {"bytes": len(data), "sha256": hashlib.sha256(
            data.encode("utf-8", "surrogatepass")).hexdigest(), "encoded": "not base64"}
    return {"bytes": len(raw), "sha256": hashlib.sha256(raw).hexdigest()}


def attachment(part: dict[str, Any], index: int) -> dict[str, Any]:
    """A typed placeholder for a content part we do not store (image, audio, file)."""
    kind = str(part.get("type"))
    out: dict[str, Any] = {"index": index, "type": kind}
    body = part.get(kind)
    if kind == "image_url" and isinstance(body, str):
        body = {"url": body}
    if not isinstance(body, dict):
        body = part  # Responses API parts keep their fields flat
    if isinstance(body, dict):
        url = body.get("url") or body.get("image_url")
        if isinstance(url, str) and url.startswith("data:"):
            out.update(_data_uri_summary(url))
        elif isinstance(url, str):
            out["url"] = url
        for k in ("detail", "format", "filename", "file_id"):
            if isinstance(body.get(k), str):
                out[k] = body[k]
        if isinstance(body.get("data"), str):
            out.update(payload_summary(body["data"]))
    return out


#: an image written into a text as HTML (NVIDIA's API takes images so); a small one is
#: left as the text it is (an example of the markup, not an image sent)
_INLINE_IMAGE = re.compile(
    r'<img\s+src="(data:image/[\w.+-]+;base64,[A-Za-z0-9+/=]{1000,})"\s*/?>')


def _inline_images(text: str, where: str, notes: list[str]
                   ) -> tuple[str | list[TextPart], list[dict[str, Any]]]:
    """A text holding images as ``<img src="data:…">``: the text around them as its
    parts, each image a placeholder, as an ``image_url`` part's data URI is."""
    found = list(_INLINE_IMAGE.finditer(text))
    if not found:
        return text, []
    texts: list[TextPart] = []
    attachments: list[dict[str, Any]] = []
    pos = 0
    for m in found:
        if m.start() > pos:
            texts.append(TextPart(text=text[pos:m.start()]))
        attachments.append(attachment({"type": "image_url", "image_url": {"url": m[1]}},
                                      len(texts) + len(attachments)))
        pos = m.end()
    if pos < len(text):
        texts.append(TextPart(text=text[pos:]))
    notes.append(f"{where}: {len(found)} image(s) written into its text as <img "
                 "src=\"data:…\"> kept as placeholders")
    return texts, attachments


def content_parts(content: Any, where: str, notes: list[str]
                  ) -> tuple[str | list[TextPart], list[dict[str, Any]]]:
    """Wire content as our text (a string, or a list of text parts) plus attachment
    placeholders. Refusal parts are text."""
    if content is None:
        return "", []
    if isinstance(content, str):
        return (content, []) if "data:image/" not in content \
            else _inline_images(content, where, notes)
    if not isinstance(content, list):
        raise _fail(where, f"content must be a string, null or a list of parts, got "
                           f"{type(content).__name__}")
    texts: list[TextPart] = []
    attachments: list[dict[str, Any]] = []
    for j, part in enumerate(content):
        if isinstance(part, str):
            texts.append(TextPart(text=part))
            continue
        if not isinstance(part, dict):
            raise _fail(where, f"content part {j} must be an object, got {part!r}")
        kind = part.get("type")
        if kind in ("text", "refusal", "input_text", "output_text"):
            text = part.get("text", part.get("refusal"))
            if not isinstance(text, str):
                # (LLaMA-Factory's v1 data writes {"type": "text", "value": …})
                raise _fail(where, f"content part {j} of type {kind!r} has no string "
                                   f"'{'refusal' if kind == 'refusal' else 'text'}' (its "
                                   f"keys: {', '.join(map(str, part))})")
            texts.append(TextPart(text=text))
        elif kind in ATTACHMENT_TYPES:
            attachments.append(attachment(part, len(texts) + len(attachments)))
            notes.append(f"{where}: content part {j} ({kind}) kept as a placeholder")
        elif kind in ("thinking", "reasoning"):  # (Mistral's Magistral: its reasoning)
            notes.append(f"{where}: content part {j} ({kind}: the model's reasoning) not "
                         "imported")
        else:
            raise _fail(where, f"content part {j} has unknown type {kind!r} (expected text, "
                               "refusal, thinking, image_url, input_audio or file)")
    return texts, attachments


def _role(raw: dict[str, Any], where: str) -> str:
    role = raw.get("role")
    if "role" not in raw:  # (no chat message at all: say what it holds)
        keys = ", ".join(map(str, list(raw)[:8])) or "none"
        raise _fail(where, f"has no 'role' (its keys: {keys}): not a chat message")
    if not isinstance(role, str) or role not in OPENAI_ROLES:
        raise _fail(where, f"unknown role {role!r} (expected one of {', '.join(OPENAI_ROLES)})")
    return role


def parse_arguments(value: Any) -> Any:
    """Tool arguments arrive as a JSON string (OpenAI) or as a value (OTel); anything
    that is not valid JSON stays the string it was."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


def call_arguments(value: Any) -> Any:
    """A tool call's arguments: ``parse_arguments``, except a JSON text that is itself
    a string (a client that encoded the arguments twice, ``"\\"{…}\\""``) stays the text
    as sent, quotes and all: decoded once it would read as the object the model never
    wrote, and go back to a model without its quotes."""
    parsed = parse_arguments(value)
    return value if isinstance(value, str) and isinstance(parsed, str) else parsed


def tool_calls_in(raw: Any, where: str, notes: list[str]) -> list[ToolCallPart]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise _fail(where, f"tool_calls must be a list, got {type(raw).__name__}")
    calls: list[ToolCallPart] = []
    for j, tc in enumerate(raw):
        custom = isinstance(tc, dict) and tc.get("type") == "custom"
        fn = tc.get("custom" if custom else "function") if isinstance(tc, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
            raise _fail(where, f"tool call {j} has no function name: {tc!r}")
        # a custom tool (free-form input, GPT-5) is called with its input text as sent
        args = fn.get("input", "") if custom else call_arguments(fn.get("arguments", {}))
        call_id = tc.get("id")
        if call_id is None or call_id == "":
            call_id = derived_call_id(j, fn["name"], args)
            notes.append(f"{where}: tool call {j} ({fn['name']}) had no id; given "
                         f"'{call_id}'")
        elif isinstance(call_id, int) and not isinstance(call_id, bool):
            # (text-generation-inference numbers its calls: "id": 0)
            notes.append(f"{where}: tool call {j} ({fn['name']}) has the number {call_id} "
                         f"as its id; kept as the text '{call_id}'")
            call_id = str(call_id)
        elif not isinstance(call_id, str):
            raise _fail(where, f"tool call {j} ({fn['name']}) id must be a string, got "
                               f"{call_id!r}")
        calls.append(ToolCallPart(id=call_id, name=fn["name"], args=args))
    return calls


def from_openai_message(raw: Any, where: str, notes: list[str]) -> Message:
    """One OpenAI chat message (request or response side). A tool result keeps the
    message's ``name`` or an empty one (callers fill it from the call it answers); a
    missing ``tool_call_id`` is left empty for ``from_openai_messages`` to resolve."""
    if not isinstance(raw, dict):
        raise _fail(where, f"a message must be an object, got {raw!r}")
    role = _role(raw, where)
    if raw.get("function_call") is not None and role == "assistant" and not raw.get("tool_calls"):
        # the legacy single function call: a tool call with a derived id
        raw = {**raw, "tool_calls": [{"type": "function", "function": raw["function_call"]}]}
    metadata: dict[str, Any] = {}
    if raw.get("name") is not None:
        if not isinstance(raw["name"], str):
            raise _fail(where, f"'name' must be a string, got {raw['name']!r}")
        if OPENAI_ROLES[role] != "tool":
            metadata["name"] = raw["name"]
    if role == "developer":
        metadata["openai_role"] = "developer"
    wire = raw.get("content")
    if isinstance(wire, dict) and OPENAI_ROLES[role] == "assistant":
        # an answer's structured output given as the object itself, not its text
        # (Cloudflare Workers AI does so for ``response_format: json_schema``)
        wire = json.dumps(wire, ensure_ascii=False, separators=(",", ":"))
        notes.append(f"{where}: content is a JSON object, not a string: kept as its JSON "
                     "text")
    text, attachments = content_parts(wire, where, notes)
    if attachments:
        metadata["attachments"] = attachments
    if role == "assistant" and isinstance(text, str):
        text = without_think(text, where, notes)
    for key in REASONING_KEYS:  # an OpenAI-compatible server's reasoning text
        if role == "assistant" and isinstance(raw.get(key), str) and raw[key]:
            notes.append(f"{where}: its reasoning ('{key}', {len(raw[key]):,} "
                         "characters) not imported")
    refusal = raw.get("refusal")
    if isinstance(refusal, str) and refusal:
        if role == "assistant" and not text and not raw.get("tool_calls"):
            # the model refused (structured outputs): the refusal is what it answered,
            # as a Responses API refusal part is read
            text = refusal
            notes.append(f"{where}: the answer is a refusal ('refusal'), stored as its text")
        else:
            metadata["refusal"] = refusal
    audio = raw.get("audio")
    if role == "assistant" and isinstance(audio, dict):
        # an answer given as audio (gpt-4o-audio): its transcript is what it said; a
        # client sends it back by its id alone (``importers.common.audio_transcripts``
        # gives it the transcript of the answer of that id)
        if isinstance(audio.get("id"), str) and audio["id"]:
            metadata["audio_id"] = audio["id"]
        transcript = audio.get("transcript")
        if not text and isinstance(transcript, str) and transcript:
            text = transcript
            notes.append(f"{where}: the answer is audio: its transcript stored as its text")
    if OPENAI_ROLES[role] == "tool":
        call_id = raw.get("tool_call_id")
        if isinstance(call_id, int) and not isinstance(call_id, bool):
            notes.append(f"{where}: tool_call_id is the number {call_id}; kept as the text "
                         f"'{call_id}'")  # (the number a call was given, sent back)
            call_id = str(call_id)
        if call_id is not None and not isinstance(call_id, str):
            raise _fail(where, f"tool_call_id must be a string, got {call_id!r}")
        result = text if isinstance(text, str) else "\n".join(t.text for t in text)
        name = raw["name"] if isinstance(raw.get("name"), str) else ""
        if raw.get("is_error") is True:  # (a LangChain ToolMessage with status "error")
            metadata["is_error"] = True
        return Message(role="tool", content=[ToolResultPart(call_id=call_id or "",
                                                            name=name, result=result)],
                       metadata=metadata)
    calls = tool_calls_in(raw.get("tool_calls"), where, notes) if role == "assistant" else []
    if calls:
        parts: Parts = [TextPart(text=text)] if isinstance(text, str) and text else \
            list(text) if isinstance(text, list) else []
        parts.extend(calls)
        return Message(role="assistant", content=parts, metadata=metadata)
    content: str | Parts = text if isinstance(text, str) else list(text)
    return Message(role=OPENAI_ROLES[role], content=content,  # type: ignore[arg-type]
                   metadata=metadata)


def from_openai_messages(raw: Any, where: str, notes: list[str], *,
                         parse: Callable[[Any, str, list[str]], Message] | None = None
                         ) -> list[Message]:
    """A request's ``messages``. A tool message without ``tool_call_id`` answers the
    first call of the latest assistant message not answered yet (noted); with none
    waiting, one naming its tool (a "function" message) gets a derived id, and one
    naming none is an error. ``parse`` reads each message (``from_openai_message``
    unless given)."""
    parse = parse or from_openai_message
    if not isinstance(raw, list):
        raise _fail(where, f"'messages' must be a list, got {type(raw).__name__}")
    out: list[Message] = []
    pending: list[str] = []
    for i, item in enumerate(raw):
        mw = f"{where}: message {i}"
        m = parse(item, mw, notes)
        if type(m.content) is str:  # (a text: no calls, no results; most messages)
            if m.role == "assistant":
                pending = []
            out.append(m)
            continue
        if m.role == "assistant":
            pending = [c.id for c in m.tool_calls()]
        for r in m.tool_results():
            if not r.call_id:
                if not pending and not r.name:
                    raise _fail(mw, "tool message has no tool_call_id and no earlier tool "
                                    "call is waiting for an answer")
                if not pending:
                    # a legacy "function" message names its tool: the API takes it with
                    # no call before it (results of tools the client ran itself), so it
                    # is kept, under an id stable across the conversation's requests
                    # (the import notes a result answering no call it has seen)
                    cid = derived_call_id(i, r.name, r.result)
                else:
                    cid = pending[0]
                    notes.append(f"{mw}: tool message had no tool_call_id; taken as the "
                                 f"answer to '{cid}'")
                m = m.model_copy(update={"content": [r.model_copy(update={"call_id": cid})]})
            cid = m.tool_results()[0].call_id
            if cid in pending:
                pending.remove(cid)
        out.append(m)
    return out


def from_openai_tools(raw: Any, where: str, notes: list[str]) -> list[dict[str, Any]]:
    """A request's ``tools`` (or legacy ``functions``) as the step record stores offered
    tools: ``{"name", "description", "parameters"}``."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise _fail(where, f"'tools' must be a list, got {type(raw).__name__}")
    out: list[dict[str, Any]] = []
    for j, tool in enumerate(raw):
        if not isinstance(tool, dict):
            raise _fail(where, f"tool {j} must be an object, got {tool!r}")
        if tool.get("type") == "custom":
            # free-form input (chat: under "custom"; Responses API: flat): no schema
            spec = tool.get("custom", tool)
            name = spec.get("name") if isinstance(spec, dict) else None
            if not isinstance(name, str) or not name:
                raise _fail(where, f"tool {j} has no name: {tool!r}")
            out.append({"name": name, "description": str(spec.get("description") or ""),
                        "parameters": {}, "type": "custom"})
            continue
        fn = tool.get("function", tool)
        if tool.get("type", "function") != "function" or not isinstance(fn, dict):
            notes.append(f"{where}: tool {j} of type {tool.get('type')!r} kept by name only")
            # a hosted tool by its own name, else its type and the server it names (two
            # MCP servers offered read "mcp, mcp")
            label = tool.get("server_label")
            name = tool.get("name") or (f"{tool.get('type')}:{label}" if label
                                        else tool.get("type"))
            out.append({"name": str(name), "description": "",
                        "parameters": {}, "type": tool.get("type")})
            continue
        name = fn.get("name")
        if not isinstance(name, str) or not name:
            raise _fail(where, f"tool {j} has no name: {tool!r}")
        params = fn.get("parameters", fn.get("input_schema"))
        out.append({"name": name, "description": str(fn.get("description") or ""),
                    "parameters": params if isinstance(params, dict) else {}})
    return out
