"""memory_core.models.openai_codec: one translation both ways, shared by the model client and
the importers. Round trips are exact for well-formed input; what the wire cannot carry
(missing ids) is derived deterministically and noted."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from memory_core.models import openai_chat
from memory_core.models.openai_codec import (
    derived_call_id,
    from_openai_messages,
    to_openai_messages,
    to_openai_tools,
)
from memory_core.types import Message, TextPart, ToolCallPart, ToolResultPart

text = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), max_size=12)
ident = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_0123456789", min_size=1, max_size=8)
args = st.dictionaries(ident, st.one_of(st.integers(-5, 5), text, st.booleans()), max_size=3)


@st.composite
def conversations(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Well-formed OpenAI chat messages: text or text parts, names, tool loops."""
    out: list[dict[str, Any]] = []
    if draw(st.booleans()):
        out.append({"role": draw(st.sampled_from(["system", "developer"])),
                    "content": draw(text)})
    n_calls = 0
    for _ in range(draw(st.integers(1, 4))):
        user: dict[str, Any] = {"role": "user"}
        if draw(st.booleans()):
            user["content"] = [{"type": "text", "text": t}
                               for t in draw(st.lists(text, min_size=2, max_size=3))]
        else:
            user["content"] = draw(text)
        if draw(st.booleans()):
            user["name"] = draw(ident)
        out.append(user)
        calls = []
        for _ in range(draw(st.integers(0, 2))):
            n_calls += 1
            calls.append({"id": f"call_{n_calls}", "type": "function", "function": {
                "name": draw(ident),
                "arguments": json.dumps(draw(args), ensure_ascii=False, sort_keys=True)}})
        reply: dict[str, Any] = {"role": "assistant",
                                 "content": draw(st.one_of(st.none(), text)) if calls
                                 else draw(text)}
        if calls:
            reply["tool_calls"] = calls
        out.append(reply)
        for c in calls:
            out.append({"role": "tool", "tool_call_id": c["id"],
                        "name": c["function"]["name"], "content": draw(text)})
    return out


def _wire_normal(msgs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What a lossless round trip gives back: assistant content "" with calls is null."""
    out = []
    for m in msgs:
        m = dict(m)
        if m["role"] == "assistant" and m.get("tool_calls") and m.get("content") == "":
            m["content"] = None
        out.append(m)
    return out


@settings(max_examples=150, deadline=None)
@given(conversations())
def test_openai_to_ours_to_openai_is_exact(msgs: list[dict[str, Any]]) -> None:
    notes: list[str] = []
    ours = from_openai_messages(msgs, "test", notes)
    assert notes == []
    assert to_openai_messages(ours) == _wire_normal(msgs)


@settings(max_examples=150, deadline=None)
@given(conversations())
def test_ours_to_openai_to_ours_is_exact(msgs: list[dict[str, Any]]) -> None:
    ours = from_openai_messages(msgs, "test", [])
    again = from_openai_messages(to_openai_messages(ours), "test", [])
    assert [m.model_dump() for m in again] == [m.model_dump() for m in ours]


def test_text_parts_are_not_joined_either_way() -> None:
    m = Message(role="user", content=[TextPart(text="a"), TextPart(text="b")])
    wire = to_openai_messages([m])
    assert wire == [{"role": "user", "content": [{"type": "text", "text": "a"},
                                                 {"type": "text", "text": "b"}]}]
    assert from_openai_messages(wire, "w", [])[0].content == m.content


def test_missing_ids_are_derived_deterministically_and_noted() -> None:
    wire = [{"role": "user", "content": "t?"},
            {"role": "assistant", "tool_calls": [
                {"type": "function", "function": {"name": "clock", "arguments": "{}"}}]},
            {"role": "tool", "content": "noon"}]
    notes: list[str] = []
    ours = from_openai_messages(wire, "line 1", notes)
    cid = derived_call_id(0, "clock", {})
    assert ours[1].tool_calls() == [ToolCallPart(id=cid, name="clock", args={})]
    assert ours[2].tool_results() == [ToolResultPart(call_id=cid, name="", result="noon")]
    assert notes == [f"line 1: message 1: tool call 0 (clock) had no id; given '{cid}'",
                     f"line 1: message 2: tool message had no tool_call_id; taken as the "
                     f"answer to '{cid}'"]
    # the model client derives the very same id for a server that omits it
    model = openai_chat.OpenAIChatModel(base_url="http://127.0.0.1:9", model="m")
    resp = model.parse_response({"choices": [{"message": {"tool_calls": [
        {"function": {"name": "clock", "arguments": "{}"}}]}}]})
    assert resp.tool_calls[0].id == cid


def test_model_client_uses_the_codec() -> None:
    assert openai_chat.to_openai_messages is to_openai_messages
    assert openai_chat.to_openai_tools is to_openai_tools


def test_attachments_go_back_out_as_parts_when_their_url_was_kept() -> None:
    wire = [{"role": "user", "content": [
        {"type": "text", "text": "see"},
        {"type": "image_url", "image_url": {"url": "https://x.test/a.png", "detail": "low"}},
        {"type": "input_audio", "input_audio": {"data": "QUJD", "format": "wav"}}]}]
    notes: list[str] = []
    ours = from_openai_messages(wire, "w", notes)
    assert ours[0].metadata["attachments"][0] == {
        "index": 1, "type": "image_url", "url": "https://x.test/a.png", "detail": "low"}
    assert len(notes) == 2
    out = to_openai_messages(ours)[0]["content"]
    assert out[:2] == wire[0]["content"][:2]
    assert out[2]["type"] == "text" and out[2]["text"].startswith("[input_audio not kept:")
