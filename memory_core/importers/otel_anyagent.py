"""any-agent's traces (mozilla-ai/any-agent's ``AgentTrace`` as JSON: ``{"spans": [...],
"final_output": ...}``, each span as Python's SDK holds it). A model call is a
``call_llm`` span whose answer is ``gen_ai.output`` — text, or (``gen_ai.output.type``
``json``) a list of ``{"tool.name", "tool.args"}`` calls without ids — and only an
agent's first call records its input (``gen_ai.input.messages``, in the OpenAI form);
each tool run is an ``execute_tool`` span (``gen_ai.tool.name``, ``gen_ai.tool.args``,
its result in ``gen_ai.output``). A later call's input is then the call before's
conversation, its answer and the results of the tool spans between them under the same
agent span — what the agent sent, reconstructed, and noted as such."""

from __future__ import annotations

from typing import Any

from memory_core.importers.formats.fields import count_of
from memory_core.importers.otel_content import json_messages
from memory_core.importers.otel_read import RawSpan, SpanContent
from memory_core.models.openai_codec import call_arguments, derived_call_id, parse_arguments
from memory_core.types import Message, ToolCallPart, ToolResultPart

CALL, TOOL = "call_llm", "execute_tool"


def _op(span: RawSpan) -> Any:
    return span.attrs.get("gen_ai.operation.name")


def any_agent_content(span: RawSpan) -> SpanContent | None:
    """A ``call_llm`` span's input (when recorded) and answer; None for any other span
    (one with the convention's ``gen_ai.output.messages`` is read as the convention's)."""
    attrs, where = span.attrs, span.where
    if _op(span) != CALL or attrs.get("gen_ai.output") is None \
            or "gen_ai.output.messages" in attrs:
        return None
    notes: list[str] = []
    msgs = json_messages(attrs["gen_ai.input.messages"], where, "gen_ai.input.messages",
                         "user", notes)[0] if attrs.get("gen_ai.input.messages") else []
    out = attrs["gen_ai.output"]
    listed = parse_arguments(out) if attrs.get("gen_ai.output.type") == "json" \
        and isinstance(out, str) else out
    if isinstance(listed, list) and listed and all(
            isinstance(c, dict) and isinstance(c.get("tool.name"), str) and c["tool.name"]
            for c in listed):
        calls = []
        for j, c in enumerate(listed):
            name, args = c["tool.name"], call_arguments(c.get("tool.args") or {})
            # (the span's id in it: a call repeated alike in another span is another call)
            cid = derived_call_id(j, f"{span.span_id}:{name}", args)
            calls.append(ToolCallPart(id=cid, name=name, args=args))
        notes.append(f"{where}: gen_ai.output: {len(calls)} tool call(s) recorded without "
                     f"an id; given {', '.join(repr(c.id) for c in calls)}")
        reply = Message(role="assistant", content=list(calls))
    else:
        reply = Message(role="assistant", content=out if isinstance(out, str)
                        else str(out))
    return SpanContent([], msgs, reply, None, notes)


def fill_inputs(spans: list[RawSpan], contents: dict[int, SpanContent]
                ) -> tuple[set[int], dict[int, str]]:
    """Give each ``call_llm`` span that recorded no input the conversation its agent
    sent it: the call before's (under the same agent span), its
    answer, and a tool message for each of its calls that a tool span after it ran —
    unless its recorded input tokens are fewer than the call before's (a call of its
    own, as the structured final answer is: its input is unknown, so it is left out).
    ``contents`` and what is returned are keyed by the span object's ``id()``: the
    tool spans whose results were taken, and why each call left out was (taken out of
    ``contents``)."""
    # by agent span (a call's parent): its latest call's conversation and input tokens,
    # and the tool spans run since that call
    last: dict[str, tuple[list[Message], int | None]] = {}
    ran: dict[str, list[RawSpan]] = {}
    taken: set[int] = set()
    left_out: dict[int, str] = {}
    for span in spans:
        agent = span.parent_id
        if _op(span) == TOOL:
            ran.setdefault(agent, []).append(span)
            continue
        c = contents.get(id(span))
        if _op(span) != CALL or c is None:
            continue
        tools = ran.pop(agent, [])
        before, tokens_before = last.get(agent, ([], None))
        tokens = count_of(span.attrs.get("gen_ai.usage.input_tokens"))
        if not c.messages and not c.instructions and before:
            if tokens is not None and tokens_before is not None and tokens < tokens_before:
                left_out[id(span)] = (
                    f"its input was not recorded (any-agent records it on an agent's first "
                    f"call only), and it is not the conversation before it: {tokens} input "
                    f"tokens, the call before {tokens_before}; not imported")
                del contents[id(span)]
                continue
            answered = _results(before[-1], tools, taken, c.notes, span.where)
            c.messages = before + answered
            c.notes.append(
                f"{span.where}: input not recorded (any-agent records it on an agent's "
                "first call only): taken as the call before's conversation, its answer"
                + (f" and {len(answered)} tool result(s) of the tool spans after it"
                   if answered else ""))
        last[agent] = (c.instructions + c.messages + ([c.reply] if c.reply is not None
                                                      else []), tokens)
    return taken, left_out


def _results(answer: Message, tools: list[RawSpan], taken: set[int], notes: list[str],
             where: str) -> list[Message]:
    """A tool message for each call of ``answer`` that one of ``tools`` (in order) ran:
    the first not taken of its name and arguments, else of its name (any-agent's
    LlamaIndex calls record their arguments as ``{}``: noted)."""
    out: list[Message] = []
    left = list(tools)
    for call in answer.tool_calls() if answer.role == "assistant" else []:
        named = [t for t in left if t.attrs.get("gen_ai.tool.name") == call.name]
        ran = next((t for t in named if parse_arguments(
            t.attrs.get("gen_ai.tool.args") or {}) == call.args), None)
        if ran is None and named:
            ran = named[0]
            notes.append(f"{where}: the result of tool call {call.id!r} is {ran.where}'s, "
                         f"which ran {call.name} with other arguments than the call "
                         f"recorded ({ran.attrs.get('gen_ai.tool.args')!r})"[:300])
        if ran is not None:
            left.remove(ran)
            taken.add(id(ran))
            out.append(Message(role="tool", content=[ToolResultPart(
                call_id=call.id, name=call.name, result=ran.attrs.get("gen_ai.output"))]))
    return out
