"""Anthropic Messages API traffic (``POST …/v1/messages``) read into our messages: the
request's ``system`` and ``messages`` (content blocks ``text``, ``image``/``document``,
``container_upload``, ``search_result``, ``tool_use``, ``tool_result``, ``thinking``),
its ``tools``, and the response — a message, an error body, or an SSE stream reassembled
into the message it streamed.

Mapped onto what the OpenAI records give: ``system`` is the instructions; a
``tool_use`` block is the assistant's ``ToolCallPart``; a user message's
``tool_result`` blocks are tool messages answering those calls, in order, and the text
beside them a user message after them; an assistant turn is the message the Runner
makes of a model step (``assistant_message``: its text blocks as one text), so an
imported run replays identically. Thinking and server-tool blocks are noted, not
imported. Only reading and validating; every error names the record
(``openai_jsonl.anthropic_exchange`` makes the ``Exchange``)."""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from memory_core.importers.common import fail, read_shared, shortened
from memory_core.importers.openai_shapes import stream_events
from memory_core.models.base import ModelResponse
from memory_core.models.openai_codec import attachment, from_openai_tools, without_think
from memory_core.runs.runner import assistant_message
from memory_core.types import Message, TextPart, ToolCallPart, ToolResultPart

ATTACHMENT_BLOCKS = ("image", "document")
# what a user gives the model beside its text: search results it is to cite (text with
# a source and title; in a tool_result too) and files it uploads into the code execution
# tool's container (a file id)
USER_SOURCE_BLOCKS = ("search_result", "container_upload")
THINKING_BLOCKS = ("thinking", "redacted_thinking")
# blocks of tools the server ran (web search, code execution, MCP, …) and what they
# returned: the conversation's own tool loop never saw them
SERVER_BLOCKS = ("server_tool_use", "mcp_tool_use", "mcp_tool_result")
# blocks of context the API manages itself: a compaction summary standing for earlier
# turns, a deferred tool's definition added or referenced (tool search)
CONTEXT_BLOCKS = ("compaction", "tool_reference", "tool_addition")
STREAM_EVENTS = ("message_start", "content_block_start", "content_block_delta",
                 "content_block_stop", "message_delta", "message_stop")
_STREAM_EVENT = re.compile(r'"type"\s*:\s*"(?:' + "|".join(STREAM_EVENTS) + ')"')


def is_anthropic_record(obj: dict[str, Any]) -> bool:
    """A request/response record in the Messages API's shapes (a record whose URL says
    which API it is was classified by ``registry.route`` before): a response of
    ``type`` "message" or "error", a streamed response of its events, or a
    request with a top-level ``system`` or Anthropic content blocks."""
    response = obj.get("response")
    if isinstance(response, dict) and response.get("type") in ("message", "error"):
        return True
    if isinstance(response, str) and _STREAM_EVENT.search(response[:2000]):
        return True
    if isinstance(response, list) and response and isinstance(response[0], dict) \
            and response[0].get("type") in STREAM_EVENTS:
        return True
    if _chat_completion(response):  # answered as OpenAI answers, whatever its request
        return False  # holds (Mistral's thinking blocks in a history)
    request = obj.get("request", obj)
    if not isinstance(request, dict) or not isinstance(request.get("messages"), list):
        return False
    # (``anthropic_version``: the body Bedrock's InvokeModel and Vertex AI's rawPredict
    # take for Claude, the model named by the URL)
    return "system" in request or "anthropic_version" in request or any(
        anthropic_block(b) for m in request["messages"]
        if isinstance(m, dict) and isinstance(m.get("content"), list) for b in m["content"])


def _chat_completion(response: Any) -> bool:
    """A chat completion, or a streamed one: its chunks, or their SSE text."""
    if isinstance(response, str):
        return _CHUNK.search(response[:2000]) is not None
    first = response[0] if isinstance(response, list) and response else response
    return isinstance(first, dict) and isinstance(first.get("choices"), list)


_CHUNK = re.compile(r'^data: *\{.*"choices" *:', re.M)


def anthropic_block(block: Any) -> bool:
    """A content block only the Messages API has (OpenAI's parts have no ``tool_use``,
    ``tool_result`` or thinking, and its images no ``source``)."""
    if not isinstance(block, dict):
        return False
    kind = block.get("type")
    return kind in ("tool_use", "tool_result", *USER_SOURCE_BLOCKS, *THINKING_BLOCKS) or (
        kind in ATTACHMENT_BLOCKS and "source" in block)


# -- request ----------------------------------------------------------------------------
def system_messages(raw: Any, where: str) -> list[Message]:
    """``system``: a string, or a list of text blocks (kept as text parts, as a list of
    content parts is kept for OpenAI); none when absent or empty."""
    if raw is None or raw == "" or raw == []:
        return []
    if isinstance(raw, str):
        return [Message(role="system", content=raw)]
    if not isinstance(raw, list):
        raise fail(where, f"'system' must be a string or a list of text blocks, got "
                          f"{type(raw).__name__}")
    parts: list[TextPart | ToolCallPart | ToolResultPart] = []
    for j, block in enumerate(raw):
        if not isinstance(block, dict) or block.get("type") != "text" \
                or not isinstance(block.get("text"), str):
            raise fail(where, f"system block {j} must be a text block "
                              f"({{\"type\": \"text\", \"text\": …}}), got {block!r}")
        parts.append(TextPart(text=block["text"]))
    return [Message(role="system", content=parts)]


def _blocks(content: Any, where: str) -> list[Any] | None:
    """A message's content blocks; None when the content is a plain string."""
    if isinstance(content, str):
        return None
    if not isinstance(content, list):
        raise fail(where, f"content must be a string or a list of blocks, got "
                          f"{type(content).__name__}")
    return content


def _block_type(block: Any, where: str, j: int) -> str:
    if not isinstance(block, dict) or not isinstance(block.get("type"), str):
        raise fail(where, f"content block {j} must be an object with a 'type', got {block!r}")
    return str(block["type"])


def _not_imported(kind: str) -> bool:
    return kind in (*THINKING_BLOCKS, *SERVER_BLOCKS, *CONTEXT_BLOCKS) \
        or kind.endswith("_tool_result")


def _text(block: dict[str, Any], where: str, j: int) -> str:
    text = block.get("text")
    if not isinstance(text, str):
        raise fail(where, f"text block {j} has no 'text' string, got {text!r}")
    return text


def _attachment(block: dict[str, Any], kind: str, index: int, where: str, j: int,
                notes: list[str]) -> dict[str, Any]:
    """An image or document block as the typed placeholder the OpenAI codec makes of an
    image part (``attachment``): what identifies it — the URL, the file id, or the
    data's size and SHA-256 — its source type and media type (noted). A
    ``container_upload`` block (a file put into the code execution tool's container)
    is one too, its ``file_id`` what identifies it."""
    if kind == "container_upload":
        file_id = block.get("file_id")
        if not isinstance(file_id, str) or not file_id:
            raise fail(where, f"container_upload block {j} has no 'file_id' string, got "
                              f"{file_id!r}")
        source: Any = {"type": "file", "file_id": file_id}
    else:
        source = block.get("source")
    if not isinstance(source, dict):
        raise fail(where, f"{kind} block {j} has no 'source' object, got {source!r}")
    att = attachment({"type": kind, **{k: source[k] for k in ("data", "url", "file_id")
                                       if isinstance(source.get(k), str)}}, index)
    att["source"] = source.get("type")
    if isinstance(source.get("media_type"), str):
        att["media_type"] = source["media_type"]
    if isinstance(block.get("title"), str):
        att["title"] = block["title"]
    notes.append(f"{where}: content block {j} ({kind}) kept as a placeholder")
    return att


def _search_result(block: dict[str, Any], index: int, where: str, j: int,
                   notes: list[str]) -> tuple[list[TextPart], dict[str, Any]]:
    """A ``search_result`` block: its text blocks as text parts (what the model read),
    and what they came from — ``source``, ``title``, the position of its first text
    among the message's texts, how many, and whether citations were asked for — for
    ``metadata.search_results`` (noted)."""
    source, title, content = block.get("source"), block.get("title"), block.get("content")
    for name, value in (("source", source), ("title", title)):
        if not isinstance(value, str):
            raise fail(where, f"search_result block {j} has no '{name}' string, got "
                              f"{value!r}")
    if not isinstance(content, list) or not content:
        raise fail(where, f"search_result block {j} needs a 'content' list of text blocks, "
                          f"got {content!r}")
    texts = []
    for k, inner in enumerate(content):
        if not isinstance(inner, dict) or inner.get("type") != "text":
            raise fail(where, f"search_result block {j}: content block {k} must be a text "
                              f"block, got {inner!r}")
        texts.append(TextPart(text=_text(inner, f"{where}: search_result block {j}", k)))
    found: dict[str, Any] = {"index": index, "texts": len(texts), "source": source,
                             "title": title}
    citations = block.get("citations")
    if isinstance(citations, dict) and isinstance(citations.get("enabled"), bool):
        found["citations"] = citations["enabled"]
    notes.append(f"{where}: content block {j} (search_result) read as its text; its source "
                 "and title kept in metadata.search_results")
    return texts, found


def _tool_result(block: dict[str, Any], where: str, j: int, notes: list[str]) -> Message:
    """A ``tool_result`` block as a tool message: its ``content`` (a string, or blocks
    whose texts are joined by newlines as the OpenAI codec joins a tool message's parts;
    images as placeholders); ``is_error`` kept in the message's metadata."""
    cid = block.get("tool_use_id")
    if not isinstance(cid, str) or not cid:
        raise fail(where, f"tool_result block {j} has no 'tool_use_id' string, got {cid!r}")
    content = block.get("content")
    metadata: dict[str, Any] = {}
    is_error = block.get("is_error")
    if is_error is not None and not isinstance(is_error, bool):
        raise fail(where, f"tool_result block {j}: 'is_error' must be true or false, got "
                          f"{is_error!r}")
    if is_error:
        metadata["is_error"] = True
    if content is None or isinstance(content, str):
        result = content or ""
    elif isinstance(content, list):
        texts, kept, _ = _read_blocks(content, f"{where}: tool_result block {j}", notes,
                                      in_user_message=False)
        result = "\n".join(t.text for t in texts)
        metadata.update(kept)
    else:
        raise fail(where, f"tool_result block {j}: 'content' must be a string or a list of "
                          f"blocks, got {type(content).__name__}")
    return Message(role="tool", content=[ToolResultPart(call_id=cid, name="", result=result)],
                   metadata=metadata)


def user_turn(content: Any, where: str, notes: list[str], *,
              role: Literal["user", "system"] = "user") -> list[Message]:
    """A user message: its ``tool_result`` blocks as tool messages (in order; the API
    requires them first), then its text and attachments as one user message. A system
    message in ``messages`` (the API's later instructions, such as a deferred tool's
    ``tool_addition``) is read alike, as a system message."""
    blocks = _blocks(content, where)
    if blocks is None:
        return [Message(role=role, content=content)]
    parts, kept, results = _read_blocks(blocks, where, notes, in_user_message=True)
    if parts or kept.get("attachments") or not results:
        results.append(Message(role=role, content=list(parts), metadata=kept))
    return results


def _read_blocks(blocks: list[Any], where: str, notes: list[str], *, in_user_message: bool
                 ) -> tuple[list[TextPart], dict[str, list[dict[str, Any]]], list[Message]]:
    """The text parts, what the message's metadata keeps of its other blocks
    (``attachments``: placeholders; ``search_results``: where texts came from; each
    only when there are some) and (in a user message) tool results of a user message's
    or a tool result's blocks; blocks not imported are noted, and any other type is an
    error."""
    texts: list[TextPart] = []
    attachments: list[dict[str, Any]] = []
    found: list[dict[str, Any]] = []
    results: list[Message] = []
    for j, block in enumerate(blocks):
        kind = _block_type(block, where, j)
        if kind == "text":
            texts.append(TextPart(text=_text(block, where, j)))
        elif kind == "tool_result" and in_user_message:
            results.append(_tool_result(block, where, j, notes))
        elif kind == "search_result":
            more, source = _search_result(block, len(texts), where, j, notes)
            texts += more
            found.append(source)
        elif kind in (*ATTACHMENT_BLOCKS, "container_upload"):
            attachments.append(_attachment(block, kind, len(texts) + len(attachments),
                                           where, j, notes))
        elif _not_imported(kind):
            notes.append(f"{where}: content block {j} ({kind}) not imported")
        else:
            of, last = ("of a user message ", "tool_result") if in_user_message else \
                ("", "tool_reference")
            raise fail(where, f"content block {j} {of}has type {kind!r} (expected text, "
                              f"image, document, search_result, container_upload or {last})")
    kept = {k: v for k, v in (("attachments", attachments), ("search_results", found)) if v}
    return texts, kept, results


def assistant_turn(content: Any, where: str, notes: list[str]) -> Message:
    """An assistant message (in the history, or the response) as the Runner makes one
    of a model step: its text blocks as one text (noted when several were joined), then
    its ``tool_use`` blocks as tool calls; thinking and server-tool blocks, and the
    citations of its texts, noted."""
    blocks = _blocks(content, where)
    if blocks is None:
        return Message(role="assistant", content=content)
    texts: list[str] = []
    calls: list[ToolCallPart] = []
    cited = apart = 0
    last_text = -1  # the index of the last text block
    for j, block in enumerate(blocks):
        kind = _block_type(block, where, j)
        if kind == "text":
            # texts next to each other are one text cut where citations start and end;
            # a text after other blocks (a server tool's call and result, thinking) is
            # another paragraph: a blank line between, not glued ("….Based on")
            if texts and last_text != j - 1:
                texts.append("\n\n")
                apart += 1
            last_text = j
            texts.append(without_think(_text(block, where, j), f"{where}: content block {j}",
                                       notes))
            citations = block.get("citations")
            cited += len(citations) if isinstance(citations, list) else 0
        elif kind == "tool_use":
            cid, name = block.get("id"), block.get("name")
            if not isinstance(cid, str) or not cid or not isinstance(name, str) or not name:
                raise fail(where, f"tool_use block {j} needs an 'id' and a 'name', got "
                                  f"{block!r}")
            calls.append(ToolCallPart(id=cid, name=name, args=block.get("input", {})))
            caller = block.get("caller")  # (programmatic tool calling: code the model ran
            if isinstance(caller, dict) and caller.get("type") not in (None, "direct"):
                notes.append(f"{where}: content block {j}: tool call '{cid}' ({name}) was "
                             f"made by {caller.get('type')} ({caller.get('tool_id')}), not "
                             "by the model directly: its caller not imported")  # made it)
        elif kind in ("server_tool_use", "mcp_tool_use"):  # (what the model asked for:
            notes.append(f"{where}: content block {j} ({kind}: {_call_said(block)}) not "
                         "imported")  # quoted, so ``why`` finds a phrase of it there)
        elif _not_imported(kind) or kind in USER_SOURCE_BLOCKS:
            notes.append(f"{where}: content block {j} ({kind}) not imported")
        else:
            raise fail(where, f"content block {j} of an assistant message has type {kind!r} "
                              "(expected text, tool_use, thinking or redacted_thinking)")
    if len(texts) > 1:
        gaps = (f", a blank line where other blocks stood between two of them ({apart} "
                f"place{'' if apart == 1 else 's'})" if apart else "")
        notes.append(f"{where}: {len(texts) - apart} text blocks joined into one text{gaps}")
    if cited:  # (where a text came from: a document, a search result, a web page)
        notes.append(f"{where}: {cited} citation(s) of its text not imported")
    return assistant_message(ModelResponse(text="".join(texts) or None, tool_calls=calls))


def _call_said(block: dict[str, Any]) -> str:
    """A server tool's call as a note quotes it: its name and input as sent (its first
    300 characters)."""
    said = json.dumps(block.get("input"), ensure_ascii=False)
    return f"{block.get('name')} {said if len(said) <= 300 else said[:299] + '…'}"


def request_turn(item: Any, where: str, notes: list[str]) -> list[Message]:
    """One message of a request's ``messages`` as ours: an assistant message, or a user
    message's tool messages and user message (``user_turn``)."""
    if not isinstance(item, dict):
        raise fail(where, f"a message must be an object, got {item!r}")
    role = item.get("role")
    if role == "assistant":
        return [assistant_turn(item.get("content"), where, notes)]
    if role not in ("user", "system"):
        raise fail(where, f"unknown role {role!r} (expected user, assistant or system)")
    turn = user_turn(item.get("content"), where, notes, role=role)
    if role == "system" and any(m.role == "tool" for m in turn):
        raise fail(where, "a system message holds a tool_result (tool results are the "
                          "user's)")
    return turn


def anthropic_messages(raw: Any, where: str, notes: list[str], *,
                       refused: str | None = None) -> list[Message]:
    """A request's ``messages``, checked as the API checks them: every ``tool_use`` of
    an assistant message is answered by a ``tool_result`` of the next (user) message,
    and every ``tool_result`` answers a call of the assistant message before it. For a
    call the API ``refused`` (its error), a request that breaks those rules — which is
    often why it was refused — is kept as sent: an unanswered call noted, a result
    answering no call left to ``resolve_tool_names`` (its tool name unknown, noted)."""
    if not isinstance(raw, list):
        raise fail(where, f"'messages' must be a list, got {type(raw).__name__}")
    out: list[Message] = []
    pending: list[str] = []
    asked_at = 0
    for i, item in enumerate(raw):
        turn = read_shared(request_turn, item, f"{where}: message {i}", notes)
        if turn[0].role == "assistant":
            _all_answered(where, pending, asked_at, f"message {i} (assistant) does not answer",
                          notes, refused)
            pending, asked_at = [c.id for c in turn[0].tool_calls()], i
            out += turn
            continue
        label = f"message {i} ({item['role']})"
        answered = [r.call_id for m in turn for r in m.tool_results()]
        for cid in answered:
            if cid not in pending and refused is None:
                raise fail(where, f"{label} answers tool call '{cid}', but the assistant "
                                  "message before it made no such call")
        _all_answered(where, [c for c in pending if c not in answered], asked_at,
                      f"{label} does not answer", notes, refused)
        pending = []
        out += turn
    _all_answered(where, pending, asked_at, "no message after it answers", notes, refused)
    return out


def _all_answered(where: str, unanswered: list[str], asked_at: int, what: str,
                  notes: list[str], refused: str | None) -> None:
    if unanswered:
        ids = ", ".join(f"'{c}'" for c in unanswered)
        said = (f"message {asked_at} (assistant) made tool call(s) {ids} that {what} (a "
                "tool_use must be answered by a tool_result in the next user message)")
        if refused is None:
            raise fail(where, said)
        notes.append(f"{where}: {said}; the API refused the call "
                     f"({shortened(refused, 160)}): kept as sent")


def anthropic_tools(raw: Any, where: str, notes: list[str],
                    mcp_servers: Any = None) -> list[dict[str, Any]]:
    """``tools`` (``name``, ``description``, ``input_schema``) as the step record stores
    offered tools; a server tool (``type`` such as ``web_search_20250305``) is kept by
    name only, as ``from_openai_tools`` keeps other providers' built-in tools, and so
    is each of ``mcp_servers`` (``mcp:<name>``, as the Responses API's MCP tool is)."""
    if isinstance(raw, list):
        raw = [{k: v for k, v in t.items() if k != "type"}
               if isinstance(t, dict) and t.get("type") in (None, "custom") else t
               for t in raw]
    tools = from_openai_tools(raw, where, notes)
    for j, server in enumerate(mcp_servers if isinstance(mcp_servers, list) else []):
        name = server.get("name") if isinstance(server, dict) else None
        if not isinstance(name, str) or not name:
            notes.append(f"{where}: mcp_servers[{j}] names no server: not among the tools "
                         "offered")
            continue
        notes.append(f"{where}: MCP server {name!r} kept by name only (the tools it "
                     "offered are not in the request)")
        tools.append({"name": f"mcp:{name}", "description": "", "parameters": {},
                      "type": "mcp"})
    return tools


# -- response ---------------------------------------------------------------------------
def _int_field(event: dict[str, Any], name: str, where: str) -> int:
    value = event.get(name)
    if isinstance(value, bool) or not isinstance(value, int):
        raise fail(where, f"'{name}' must be an integer, got {value!r}")
    return value


def _delta(block: dict[str, Any], delta: Any, partial: list[str], where: str) -> None:
    """One ``content_block_delta`` applied to its block (``partial``: the block's
    ``input_json_delta`` pieces, parsed once the stream is read)."""
    if not isinstance(delta, dict):
        raise fail(where, f"content_block_delta has no 'delta' object, got {delta!r}")
    kind = delta.get("type")
    fields = {"text_delta": ("text", "text"), "thinking_delta": ("thinking", "thinking"),
              "input_json_delta": ("partial_json", None),
              "signature_delta": ("signature", "signature")}
    if kind == "citations_delta":
        block.setdefault("citations", []).append(delta.get("citation"))
        return
    if kind not in fields:
        if _not_imported(str(block.get("type"))):
            return  # (a compaction's summary, …): the block is noted as not imported
        raise fail(where, f"delta of unknown type {kind!r} (expected text_delta, "
                          "input_json_delta, thinking_delta, signature_delta or "
                          "citations_delta)")
    src, dst = fields[kind]
    piece = delta.get(src)
    if not isinstance(piece, str):
        raise fail(where, f"{kind} has no '{src}' string, got {piece!r}")
    if dst is None:
        partial.append(piece)
    elif dst == "signature":
        block[dst] = piece
    else:
        block[dst] = str(block.get(dst) or "") + piece


def reassemble_anthropic_stream(stream: list[Any] | str, where: str,
                                notes: list[str]) -> dict[str, Any]:
    """The message a recorded SSE stream delivered: ``message_start``'s message, each
    ``content_block_start`` block with its deltas applied (``input_json_delta`` pieces
    joined and parsed into the tool call's input), ``message_delta``'s stop reason and
    usage. An ``error`` event makes the stream an error body."""
    events = stream_events(stream, where)
    message: dict[str, Any] | None = None
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, list[str]] = {}
    usage: dict[str, Any] = {}
    stopped = False
    for n, event in enumerate(events):
        ew = f"{where}: stream event {n}"
        kind = event.get("type")
        if kind == "error":
            notes.append(f"{ew}: the stream ended with an error event")
            return {"type": "error", "error": event.get("error")}
        if kind == "ping":
            continue
        if kind == "message_start":
            start = event.get("message")
            if not isinstance(start, dict):
                raise fail(ew, f"message_start has no 'message' object, got {start!r}")
            message = {**start, "content": []}
            usage = dict(start.get("usage") or {})
            continue
        if message is None:
            raise fail(ew, f"{kind!r} event before message_start")
        if kind == "content_block_start":
            block = event.get("content_block")
            if not isinstance(block, dict):
                raise fail(ew, f"content_block_start has no 'content_block', got {block!r}")
            blocks[_int_field(event, "index", ew)] = dict(block)
        elif kind == "content_block_delta":
            index = _int_field(event, "index", ew)
            if index not in blocks:
                raise fail(ew, f"delta for content block {index}, which no "
                               "content_block_start began")
            _delta(blocks[index], event.get("delta"), partial.setdefault(index, []), ew)
        elif kind == "message_delta":
            delta = event.get("delta")
            if isinstance(delta, dict):
                message.update({k: v for k, v in delta.items() if v is not None})
            usage.update(event.get("usage") or {})
        elif kind == "message_stop":
            stopped = True
        elif kind != "content_block_stop":
            notes.append(f"{ew}: event of type {kind!r} not read")
    if message is None:
        raise fail(where, "the recorded stream has no message_start event")
    for index, pieces in partial.items():
        text = "".join(pieces)
        if not text.strip():
            continue  # no input streamed: the block's own (empty) input stands
        try:
            blocks[index]["input"] = json.loads(text)
        except ValueError:
            blocks[index]["input"] = text
            notes.append(f"{where}: the input streamed for content block {index} is not "
                         f"JSON; kept as text: {text[:80]!r}")
    message["content"] = [blocks[i] for i in sorted(blocks)]
    message["usage"] = usage
    if not stopped:
        notes.append(f"{where}: the recorded stream ends without message_stop")
    notes.append(f"{where}: response reassembled from {len(events)} stream event(s)")
    return message


def anthropic_reply(response: Any, where: str, notes: list[str]
                    ) -> tuple[Message | None, dict[str, Any], Any]:
    """The response as (the assistant's reply, the response body, the error): a
    message, an error body (``{"type": "error", "error": {…}}``: no reply), or a
    recorded stream of either."""
    if isinstance(response, list | str):
        response = reassemble_anthropic_stream(response, where, notes)
    if not isinstance(response, dict):
        raise fail(where, f"'response' must be an object, got {type(response).__name__}")
    if response.get("type") == "error":
        return None, response, response.get("error") or response
    if response.get("type", "message") != "message":
        raise fail(where, f"response has type {response.get('type')!r} (expected 'message' "
                          "or 'error')")
    if response.get("role", "assistant") != "assistant":
        raise fail(where, f"response has role {response.get('role')!r}, expected 'assistant'")
    if not isinstance(response.get("content"), list):
        raise fail(where, "response has no 'content' list of blocks")
    return assistant_turn(response["content"], f"{where}: response", notes), response, None
