"""OpenLLMetry's and OpenInference's indexed span attributes (``gen_ai.prompt.N.*``,
``gen_ai.completion.N.*``; ``llm.input_messages.N.*``, ``llm.output_messages.N.*``) read
into chat messages: the dotted keys nested back into the messages they were cut from."""

from __future__ import annotations

import re
from typing import Any

from memory_core.importers.anthropic import anthropic_block, anthropic_messages
from memory_core.importers.common import fail, openai_message, openai_messages
from memory_core.importers.gemini import finish_reason as gemini_finish
from memory_core.importers.otel_read import RawSpan, SpanContent
from memory_core.models.openai_codec import parse_arguments
from memory_core.types import Message


def _nest(flat: dict[str, Any]) -> dict[str, Any]:
    """``{"tool_calls.0.id": x}`` as ``{"tool_calls": {0: {"id": x}}}`` (dotted keys
    whose segments are numbers become int-keyed maps)."""
    out: dict[Any, Any] = {}
    for key, value in flat.items():
        node = out
        segs: list[Any] = [int(s) if s.isdigit() else s for s in key.split(".")]
        for seg in segs[:-1]:
            nxt = node.get(seg)
            if not isinstance(nxt, dict):
                nxt = node[seg] = {}
            node = nxt
        node[segs[-1]] = value
    return out


def indexed(attrs: dict[str, Any], prefix: str) -> dict[int, dict[str, Any]]:
    pat = re.compile(rf"^{re.escape(prefix)}\.(\d+)\.(.+)$")
    flat: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        m = pat.match(key)
        if m:
            flat.setdefault(int(m.group(1)), {})[m.group(2)] = value
    return {i: _nest(flat[i]) for i in sorted(flat)}


def _listed(node: Any) -> list[Any]:
    return [node[k] for k in sorted(node)] if isinstance(node, dict) else []


def _content_value(value: Any) -> Any:
    # OpenLLMetry writes list content as a JSON string of content parts
    if isinstance(value, str) and value.startswith("[{"):
        parsed = parse_arguments(value)
        if isinstance(parsed, list) and all(isinstance(p, dict) and "type" in p
                                            for p in parsed):
            return parsed
    return value


def _calls_as_content(content: Any) -> bool:
    """Content that is OpenAI tool calls (``{"id", "type": "function", "function":
    {name, arguments}}``), as JetBrains' Koog writes an assistant's calls."""
    return isinstance(content, list) and bool(content) and all(
        isinstance(c, dict) and c.get("type") == "function" and isinstance(c.get("id"), str)
        and isinstance(c.get("function"), dict) and {"name", "arguments"} <= set(c["function"])
        for c in content)


def openllmetry(span: RawSpan, notes: list[str]) -> SpanContent | None:
    prompts = indexed(span.attrs, "gen_ai.prompt")
    completions = indexed(span.attrs, "gen_ai.completion")
    if not prompts and not completions:
        return None

    def chat(m: dict[str, Any], role: str | None = None) -> dict[str, Any]:
        calls = [{"id": c.get("id"), "type": "function",
                  "function": {"name": c.get("name"), "arguments": c.get("arguments")}}
                 for c in _listed(m.get("tool_calls"))]
        fc = m.get("function_call")
        if isinstance(fc, dict) and not calls:
            calls = [{"id": None, "type": "function", "function": fc}]
        content = _content_value(m.get("content"))
        if not calls and not m.get("tool_call_id") and _calls_as_content(content):
            calls, content = content, None  # (Koog: the calls as content, role "tool")
            if m.get("role") != "assistant":
                notes.append(f"{span.where}: a {m.get('role')!r} message whose content is "
                             "tool calls: read as the assistant's calls")
            m = {**m, "role": "assistant"}
        return {"role": m.get("role") or role, "content": content,
                "tool_calls": calls or None, "tool_call_id": m.get("tool_call_id"),
                "name": m.get("name")}

    contents = [_content_value(prompts[i].get("content")) for i in prompts]
    if any(isinstance(c, list) and any(anthropic_block(b) for b in c) for c in contents):
        # an instrumentation of the Anthropic API writes a message's content blocks as
        # they were sent (tool_use, tool_result, thinking): read them as that API's
        msgs = anthropic_messages([
            {"role": prompts[i].get("role") or "user", "content": "" if c is None else c}
            for i, c in zip(prompts, contents, strict=True)], span.where, notes)
    else:
        msgs = openai_messages([chat(prompts[i]) for i in prompts], span.where, notes)
    # its Anthropic instrumentation writes an answer's thinking as a completion of its
    # own, role "thinking", before the answer (the next index): the reasoning, noted
    thinking = [i for i in completions if completions[i].get("role") == "thinking"]
    for i in thinking:
        notes.append(f"{span.where}: gen_ai.completion.{i}: the model's thinking not "
                     "imported")
    outs = [openai_message(chat(completions[i], "assistant"), f"{span.where}: gen_ai.completion.{i}", notes)
            for i in completions if i not in thinking]
    if len(outs) > 1 and all(o.tool_calls() and not o.text() for o in outs):
        # (Koog: each parallel call a completion; the next request sends them apart)
        names = ", ".join(p.name for o in outs[1:] for p in o.tool_calls())
        notes.append(f"{span.where}: {len(outs) - 1} more completion(s), each a tool call "
                     f"of the same answer ({names}): not in this run's answer")
    elif len(outs) > 1:
        notes.append(f"{span.where}: {len(outs) - 1} alternative completion(s) not imported")
    finish = completions[min(completions)].get("finish_reason") if completions else None
    return SpanContent([], msgs, outs[0] if outs else None,
                       finish if isinstance(finish, str) else None, notes)


def _oi_object(value: Any, where: str, name: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise fail(where, f"{name} must be attributes of an object, got {value!r}"[:300])
    return value


def _oi_chat(m: Any, where: str) -> dict[str, Any]:
    m = _oi_object(m, where, "the message")
    m = _oi_object(m.get("message", m), where, "message")
    calls = []
    for j, c in enumerate(_listed(m.get("tool_calls"))):
        call = _oi_object(_oi_object(c, where, f"tool_calls.{j}").get("tool_call", c), where,
                          f"tool_calls.{j}.tool_call")
        calls.append({"id": call.get("id"), "type": "function",
                      "function": call.get("function") or {}})
    content = m.get("content")
    if content is None and m.get("contents"):
        content = []
        for j, c in enumerate(_listed(m["contents"])):
            mc = _oi_object(_oi_object(c, where, f"contents.{j}").get("message_content", c),
                            where, f"contents.{j}.message_content")
            if mc.get("type", "text") == "text":
                content.append({"type": "text", "text": mc.get("text", "")})
            elif mc.get("type") == "image":
                image = mc.get("image")
                inner = image.get("image") if isinstance(image, dict) else None
                url = inner.get("url") if isinstance(inner, dict) else None
                content.append({"type": "image_url", "image_url": {"url": url}})
    role = m.get("role")
    # (the Gemini instrumentations write Gemini's own name of the answering role)
    return {"role": "assistant" if role == "model" else role, "content": content,
            "tool_calls": calls or None, "tool_call_id": m.get("tool_call_id"),
            "name": m.get("name")}


def openinference(span: RawSpan, notes: list[str]) -> SpanContent | None:
    ins = indexed(span.attrs, "llm.input_messages")
    outs = indexed(span.attrs, "llm.output_messages")
    if ins or outs:
        msgs = openai_messages([_oi_chat(ins[i], f"{span.where}: llm.input_messages.{i}")
                                for i in ins], span.where, notes)
        replies = [openai_message(_oi_chat(outs[i], f"{span.where}: llm.output_messages.{i}"),
                                  f"{span.where}: llm.output_messages.{i}",
                                  notes) for i in outs]
        return SpanContent(_oi_instructions(span, msgs), msgs,
                           replies[0] if replies else None, _oi_finish(span), notes=notes)
    return None


def _oi_finish(span: RawSpan) -> str | None:
    """The finish reason of the response ``output.value`` holds as JSON (a chat
    completion's first choice's, an Anthropic message's ``stop_reason``), which the
    ``llm.output_messages`` do not."""
    value = span.attrs.get("output.value")
    if span.attrs.get("output.mime_type") != "application/json" or not isinstance(value, str):
        return None
    parsed = parse_arguments(value)
    if not isinstance(parsed, dict):
        return None
    candidates = parsed.get("candidates")  # (a Gemini response, Vertex AI's SDK's:
    if isinstance(candidates, list) and candidates and isinstance(candidates[0], dict):
        c0 = candidates[0]  # its finish reason may be the enum's number)
        return gemini_finish(c0.get("finish_reason", c0.get("finishReason")))
    choices = parsed.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    finish = first.get("finish_reason") if isinstance(first, dict) else parsed.get(
        "stop_reason")
    return finish if isinstance(finish, str) and finish else None


def _oi_instructions(span: RawSpan, msgs: list[Message]) -> list[Message]:
    """The Responses API's ``instructions`` (the system prompt sent beside the input),
    which the OpenAI Agents SDK's OpenInference instrumentation records only among the
    ``llm.invocation_parameters``; none when the messages hold a system prompt."""
    inv = span.attrs.get("llm.invocation_parameters")
    if not isinstance(inv, str) or any(m.role in ("system", "developer") for m in msgs):
        return []
    decoded = parse_arguments(inv)
    text = decoded.get("instructions") if isinstance(decoded, dict) else None
    return [Message(role="system", content=text)] if isinstance(text, str) and text else []
