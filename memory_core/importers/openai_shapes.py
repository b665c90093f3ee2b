"""The less common OpenAI-family shapes, turned into chat-format messages: SSE streams
reassembled into one chat completion, Responses API input/output items, ShareGPT
conversations. Only reading and validating; every error names the record."""

from __future__ import annotations

import json
from typing import Any

from memory_core.importers.common import fail, shortened, split_instructions
from memory_core.importers.jsonvalues import load_json
from memory_core.models.openai_codec import (
    attachment,
    call_arguments,
    derived_call_id,
    from_openai_message,
    from_openai_messages,
    from_openai_tools,
    parse_arguments,
)
from memory_core.models.openai_stream import ChatStream

__all__ = ["completed_response", "reassemble_stream", "responses_exchange_parts",
           "sharegpt_messages"]
from memory_core.types import Message, TextPart, ToolCallPart, ToolResultPart


# -- SSE streams ---------------------------------------------------------------------------
def stream_events(stream: list[Any] | str, where: str) -> list[dict[str, Any]]:
    """The JSON payloads of an SSE text (``data: {...}`` lines, ``[DONE]`` ends it) or a
    list of already-parsed chunks."""
    if isinstance(stream, list):
        items: list[Any] = stream
    else:
        items = []
        for line in stream.splitlines():
            if line.startswith("data:"):
                payload = line[5:].strip()
                if payload in ("[DONE]", '"[DONE]"'):  # (Cohere's v2 stream quotes it)
                    break
                items.append(load_json(payload, where, "stream chunk"))
    events = [x for x in items if isinstance(x, dict)]
    if len(events) != len(items):
        i, bad = next((i, x) for i, x in enumerate(items) if not isinstance(x, dict))
        raise fail(where, f"stream chunk {i} is {shortened(json.dumps(bad))}, not a JSON "
                          "object (every chunk of a recorded stream must be one)")
    if not events:
        raise fail(where, "the recorded stream has no chunks")
    return events


def alternatives_note(where: str, count: int, usage: Any) -> str:
    """The note for ``count`` alternative choices (``n`` > 1) dropped, whole or streamed:
    only the first is imported, and a recorded ``usage`` counted them all."""
    return (f"{where}: {count} alternative choice(s) not imported"
            + (" (the recorded usage counts their tokens too)" if usage else ""))


def reassemble_stream(stream: list[Any] | str, where: str, notes: list[str]
                      ) -> dict[str, Any]:
    """``chat.completion.chunk`` deltas joined into one chat completion by
    ``ChatStream`` (``models/openai_stream.py``, shared with the model client and the
    proxy): content and tool-call arguments concatenated per index, a call's name
    joined from its parts but kept once when every chunk repeats it whole (noted),
    usage from the chunk that carries it (at its top level, or in Groq's ``x_groq``)."""
    events = stream_events(stream, where)
    chat = ChatStream()
    for chunk in events:
        chat.add(chunk)
    notes += [f"{where}: {note}" for note in chat.notes()]
    if chat.other_choices:  # (said as of a whole answer's choices)
        notes.append(alternatives_note(where, len(chat.other_choices), chat.usage))
    notes.append(f"{where}: response reassembled from {len(events)} stream chunk(s)")
    return chat.completion()


# -- Responses API --------------------------------------------------------------------------
# tools OpenAI offers whose calls the client runs: their call items carry an ``action``
# (the command to run, the click to make), and the item answering each one its output
CLIENT_CALLS = {"local_shell_call": "local_shell", "computer_call": "computer"}
CLIENT_OUTPUTS = ("local_shell_call_output", "computer_call_output")
# items of tools OpenAI's server runs inside the one call (the call and its output both
# in the response): not imported, noted
SERVER_ITEMS = ("web_search_call", "file_search_call", "code_interpreter_call",
                "image_generation_call", "mcp_call", "mcp_list_tools",
                "mcp_approval_request", "mcp_approval_response")


def computer_tool_name(tools: Any) -> str:
    """The name a ``computer_call`` calls: the offered computer-use tool's, as
    ``from_openai_tools`` names it (``computer_use_preview``), else ``computer``."""
    for tool in tools if isinstance(tools, list) else []:
        if isinstance(tool, dict) and tool.get("type") in ("computer_use_preview", "computer"):
            return str(tool.get("name") or tool["type"])
    return "computer"


def _function_call(item: dict[str, Any], j: int, where: str, notes: list[str],
                   computer: str) -> ToolCallPart:
    kind = item.get("type")
    if kind in CLIENT_CALLS:
        # a call of a tool OpenAI defines: its action is what the client is to do
        name = computer if kind == "computer_call" else CLIENT_CALLS[str(kind)]
        args = item.get("action")
        if not isinstance(args, dict):
            raise fail(where, f"{kind} item {j} has no 'action' object, got {args!r}")
        checks = item.get("pending_safety_checks")
        if isinstance(checks, list) and checks:
            notes.append(f"{where}: its {len(checks)} pending safety check(s) not imported")
    else:
        if not isinstance(item.get("name"), str) or not item["name"]:
            raise fail(where, f"{kind} item {j} has no name")
        name = item["name"]
        # a custom tool's call carries its free-form input text, kept as sent
        args = item.get("input", "") if kind == "custom_tool_call" \
            else call_arguments(item.get("arguments") or {})
    cid = item.get("call_id") or item.get("id") or derived_call_id(j, name, args)
    if kind in CLIENT_CALLS and not item.get("call_id"):
        # (its output names the call by its call_id: one missing links no output)
        notes.append(f"{where}: {kind} item {j} has no call_id; given {str(cid)!r}")
    return ToolCallPart(id=str(cid), name=name, args=args)


_TEXT_PARTS = ("input_text", "output_text")
_OUTPUT_PARTS = (*_TEXT_PARTS, "input_image", "input_file")


def _content_parts(output: Any) -> bool:
    """A call's output given as a list of content parts (texts, images, files)."""
    return isinstance(output, list) and bool(output) and all(
        isinstance(p, dict) and p.get("type") in _OUTPUT_PARTS and (
            p["type"] not in _TEXT_PARTS or isinstance(p.get("text"), str)) for p in output)


def _call_output(item: dict[str, Any], where: str, notes: list[str]) -> Message:
    """An item answering a call (``function_call_output`` …) as a tool result; a
    screenshot (``computer_call_output``) as an attachment placeholder, never its
    base64."""
    output = item.get("output")
    metadata: dict[str, Any] = {}
    if isinstance(output, dict) and output.get("type") in ("computer_screenshot",
                                                           "input_image"):
        metadata["attachments"] = [attachment(output, 0)]
        notes.append(f"{where}: its {output['type']} kept as a placeholder")
        result: Any = ""
    elif isinstance(output, list) and _content_parts(output):
        # a list of content parts (the API takes one as a call's output; Codex writes
        # its tools' results so): their texts, an image or file a placeholder
        others = [p for p in output if p["type"] not in _TEXT_PARTS]
        if others:
            metadata["attachments"] = [attachment(p, i) for i, p in enumerate(others)]
            notes.append(f"{where}: its {', '.join(str(p['type']) for p in others)} kept "
                         "as a placeholder")
        result = "".join(p["text"] for p in output if p["type"] in _TEXT_PARTS)
    else:
        result = output if isinstance(output, str) else parse_arguments(output)
    return Message(role="tool", content=[ToolResultPart(
        call_id=str(item.get("call_id") or ""), name="", result=result)], metadata=metadata)


def response_items(items: Any, where: str, notes: list[str], *,
                   side: str, computer: str = "computer") -> list[Message]:
    """Responses API items (``input`` or ``output``) as chat messages: consecutive
    assistant text and function calls form one assistant message; ``computer``: the
    name a ``computer_call`` calls (``computer_tool_name``)."""
    if isinstance(items, str):
        return [Message(role="user", content=items)]
    if not isinstance(items, list):
        raise fail(where, f"'{side}' must be a string or a list of items, got "
                          f"{type(items).__name__}")
    out: list[Message] = []
    for j, item in enumerate(items):
        iw = f"{where}: {side}[{j}]"
        if not isinstance(item, dict):
            raise fail(iw, f"an item must be an object, got {item!r}")
        kind = item.get("type", "message")
        if kind in ("function_call", "custom_tool_call", *CLIENT_CALLS):
            call = _function_call(item, j, iw, notes, computer)
            if out and out[-1].role == "assistant":
                prev = out.pop()
                out.append(Message(role="assistant", content=[*prev.parts, call],
                                   metadata=prev.metadata))
            else:
                out.append(Message(role="assistant", content=[call]))
        elif kind in ("function_call_output", "custom_tool_call_output", *CLIENT_OUTPUTS):
            out.append(_call_output(item, iw, notes))
        elif kind == "message":
            if side == "output":
                _note_annotations(item.get("content"), iw, notes)
            m = from_openai_message({k: v for k, v in item.items()
                                     if k in ("role", "content", "name")}, iw, notes)
            if m.role == "assistant" and out and out[-1].role == "assistant" \
                    and not out[-1].tool_calls():
                prev = out.pop()
                m = Message(role="assistant", content=[*prev.parts, *m.parts])
            out.append(m)
        else:
            notes.append(f"{iw}: item of type {kind!r} not imported")
    return out


def _note_annotations(content: Any, where: str, notes: list[str]) -> None:
    """An answer's text annotations (``url_citation``: a cited page's title and URL,
    ``file_citation`` …) are not kept: noted, with the first URLs they cite."""
    found = [a for part in (content if isinstance(content, list) else [])
             if isinstance(part, dict) and isinstance(part.get("annotations"), list)
             for a in part["annotations"] if isinstance(a, dict)]
    if not found:
        return
    kinds = ", ".join(dict.fromkeys(str(a.get("type", "?")) for a in found))
    urls = list(dict.fromkeys(str(a["url"]) for a in found if isinstance(a.get("url"), str)))
    cited = f"; citing {', '.join(urls[:3])}{' …' if len(urls) > 3 else ''}" if urls else ""
    notes.append(f"{where}: {len(found)} annotation(s) of its text ({kinds}) not "
                 f"imported{cited}")


STREAM_ENDS = ("response.completed", "response.incomplete", "response.failed")


def completed_response(response: Any, where: str, notes: list[str]) -> Any:
    """A Responses API response, or — for a recorded stream — the response its last
    event carries: ``response.completed``, ``response.incomplete`` (it stopped at
    ``max_output_tokens`` or a content filter) or ``response.failed``."""
    if not isinstance(response, list | str):
        return response
    done = [e for e in stream_events(response, where) if e.get("type") in STREAM_ENDS]
    if not done:
        raise fail(where, f"the recorded Responses stream has no {', '.join(STREAM_ENDS[:-1])} "
                          f"or {STREAM_ENDS[-1]} event")
    notes.append(f"{where}: response taken from the stream's {done[-1]['type']} event")
    return done[-1].get("response")


def responses_exchange_parts(request: dict[str, Any], response: Any, where: str,
                             notes: list[str]
                             ) -> tuple[list[Message], list[Message], Message | None,
                                        list[dict[str, Any]]]:
    """Of a Responses API record: its ``instructions`` (as a system message, or none),
    its input items as messages, the reply and the offered tools. The instructions are
    kept apart: a later request that continues this response (``previous_response_id``)
    does not inherit them, while the input items are the history it continues."""
    template = request.get("prompt") if isinstance(request.get("prompt"), dict) else None
    if "input" not in request and template is None and "conversation" not in request:
        raise fail(where, "Responses API record has no request 'input'")
    computer = computer_tool_name(request.get("tools"))
    msgs = response_items(request.get("input", []), where, notes, side="input",
                          computer=computer)
    instructions = request.get("instructions")
    own = [Message(role="system", content=instructions)] \
        if isinstance(instructions, str) and instructions else []
    echoed = response.get("instructions") if isinstance(response, dict) else None
    if "instructions" not in request and template is None and isinstance(echoed, str) \
            and echoed:
        # applied by the server (an agent's or a stored definition's), echoed back
        own = [Message(role="system", content=echoed)]
        notes.append(f"{where}: the instructions were not sent but applied server-side"
                     + (f" (agent {request['agent'].get('name')!r})"
                        if isinstance(request.get("agent"), dict) else "")
                     + ": taken from the response's 'instructions'")
    if template is not None:
        # a stored prompt (reusable template) is rendered server-side from the variables
        # sent; the response echoes what it rendered as its 'instructions' items
        rendered = response.get("instructions") if isinstance(response, dict) else None
        ref = f"prompt {str(template.get('id'))!r} (version {template.get('version')})"
        if isinstance(rendered, list):
            # its leading system/developer messages are instructions (not carried over
            # by previous_response_id), the rest is input the conversation continues
            own, sent = split_instructions(response_items(
                rendered, f"{where}: response instructions", notes, side="instructions"))
            msgs = sent + msgs
            notes.append(f"{where}: {ref} rendered server-side; its messages are taken "
                         "from the response's 'instructions'")
        else:
            notes.append(f"{where}: {ref} rendered server-side and not echoed: its "
                         "messages are not in the file")
    reply: Message | None = None
    if isinstance(response, dict) and response.get("output") is not None:
        outs = response_items(response["output"], where, notes, side="output",
                              computer=computer)
        if outs:
            reply = outs[0]
            if len(outs) > 1:
                notes.append(f"{where}: {len(outs) - 1} further output message(s) not imported")
    if reply is not None and reply.role != "assistant":
        raise fail(where, f"output message has role {reply.role!r}, expected 'assistant'")
    if reply is not None and isinstance(reply.content, list) and len(reply.content) == 1 \
            and isinstance(reply.content[0], TextPart):
        # one output_text part is the answer's text, stored as the Runner stores a text
        # answer (replay compared a list of one part with the replayed plain text and
        # failed every imported Responses API run that answered in text)
        reply = reply.model_copy(update={"content": reply.content[0].text})
    tools = from_openai_tools(request.get("tools") or [], where, notes)
    return own, msgs, reply, tools


# -- ShareGPT -------------------------------------------------------------------------------
SHAREGPT_ROLES = {"human": "user", "user": "user", "gpt": "assistant",
                  "assistant": "assistant", "chatgpt": "assistant", "model": "assistant",
                  "bard": "assistant", "bing": "assistant", "system": "system"}
SHAREGPT_CALLS = ("function_call", "tool_call")
SHAREGPT_RESULTS = ("observation", "tool", "function", "tool_response")


def _sharegpt_call(value: Any, j: int, where: str) -> Message:
    parsed = parse_arguments(value)
    items = parsed if isinstance(parsed, list) else [parsed]
    calls: list[TextPart | ToolCallPart | ToolResultPart] = []
    for k, c in enumerate(items):
        if not isinstance(c, dict) or not isinstance(c.get("name"), str):
            raise fail(where, f"turn {j}: a function_call value must be JSON with a "
                              f"'name', got {value!r}")
        args = call_arguments(c.get("arguments", c.get("parameters", {})))
        calls.append(ToolCallPart(id=str(c.get("id") or derived_call_id(k, c["name"], args)),
                                  name=c["name"], args=args))
    return Message(role="assistant", content=calls)


def sharegpt_messages(turns: Any, where: str, notes: list[str]) -> list[Message]:
    """ShareGPT turns (``from``/``value``, or ``role``/``content``) as messages; a
    ``function_call`` turn is an assistant tool call and an ``observation`` answers it."""
    out: list[Message] = []
    if turns and all(isinstance(t, dict) and "role" in t for t in turns):
        return from_openai_messages(turns, where, notes)
    pending: list[ToolCallPart] = []
    for j, turn in enumerate(turns):
        if not isinstance(turn, dict):
            raise fail(where, f"turn {j} must be an object, got {turn!r}")
        who, value = turn.get("from"), turn.get("value")
        if not isinstance(who, str):
            raise fail(where, f"turn {j}: 'from' must be a string, got {who!r}")
        if who in SHAREGPT_CALLS:
            m = _sharegpt_call(value, j, where)
            pending = m.tool_calls()
            out.append(m)
        elif who in SHAREGPT_RESULTS:
            call = pending.pop(0) if pending else None
            if call is None:
                raise fail(where, f"turn {j} ({who}) answers no function_call turn")
            out.append(Message(role="tool", content=[ToolResultPart(
                call_id=call.id, name=call.name,
                result=value if isinstance(value, str) else parse_arguments(value))]))
        elif who in SHAREGPT_ROLES:
            if not isinstance(value, str):
                raise fail(where, f"turn {j}: 'value' must be a string, got {value!r}")
            out.append(Message(role=SHAREGPT_ROLES[who], content=value))  # type: ignore[arg-type]
        else:
            raise fail(where, f"turn {j}: unknown speaker {who!r} (expected one of "
                              f"{', '.join([*SHAREGPT_ROLES, *SHAREGPT_CALLS, *SHAREGPT_RESULTS])})")
    return out
