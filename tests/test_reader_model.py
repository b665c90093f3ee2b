"""The offline reader model answers only from the prompt: removing the fact-bearing
message changes its answer to "I don't know"; it calls matching tools deterministically."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memory_core.embedding.hashing import HashingEmbedder
from memory_core.errors import InvalidInputError
from memory_core.models.base import ToolSpec
from memory_core.models.reader import ReaderModel
from memory_core.models.reader_text import stem
from memory_core.models.reader_tools import request_kind
from memory_core.types import Message, ToolCallPart, ToolResultPart

INSTRUCTIONS = Message(role="system", content=(
    "You are a support agent. Be polite about refunds and orders."))


def wm_message(value: dict[str, Any]) -> Message:
    body = json.dumps(value, indent=2)
    return Message(role="system", content=(
        f"# Working Memory\n<working_memory>\n{body}\n</working_memory>\n"
        "Fields: destination, budget, notes\n"
        "Update it by calling update_working_memory (null deletes a field)."))


FACT = Message(role="assistant", content="We agreed to refund €240 for order r-7 on 3 May 2024.")
IRRELEVANT = Message(role="user", content="By the way, I love hiking in the Alps.")


def prompt(*middle: Message, question: str = "How much was the refund for order r-7?"
           ) -> list[Message]:
    return [INSTRUCTIONS,
            Message(role="user", content="Hi, my blender arrived broken."),
            Message(role="assistant", content="Sorry to hear that, let me look."),
            *middle,
            Message(role="user", content=question)]


EMBEDDERS = [None, HashingEmbedder(64)]


@pytest.mark.parametrize("embed", EMBEDDERS, ids=["lexical", "hashing"])
def test_fact_present_vs_removed_changes_the_answer(embed: Any) -> None:
    reader = ReaderModel(embed)
    with_fact = reader.complete(prompt(IRRELEVANT, FACT), []).text
    without_fact = reader.complete(prompt(IRRELEVANT), []).text
    assert with_fact == ("From our conversation: We agreed to refund €240 for order r-7 "
                         "on 3 May 2024.")
    # the instructions mention refunds and orders: only the order's id is missing
    assert without_fact == "I don't know — nothing I was given mentions r-7."


@pytest.mark.parametrize("embed", EMBEDDERS, ids=["lexical", "hashing"])
def test_removing_an_irrelevant_message_does_not_change_the_answer(embed: Any) -> None:
    reader = ReaderModel(embed)
    assert reader.complete(prompt(IRRELEVANT, FACT), []).text == \
        reader.complete(prompt(FACT), []).text


def test_same_fact_elsewhere_in_history_is_not_enough_when_the_key_fact_is_gone() -> None:
    # "order r-7" is still mentioned, but nothing says how much: no made-up answer.
    mention = Message(role="user", content="I placed order r-7 last week.")
    text = ReaderModel().complete(prompt(mention), []).text
    assert text is not None and text.startswith("I don't know")


def test_answers_from_working_memory_and_not_without_it() -> None:
    wm = wm_message({"destination": "Lisbon", "budget": 2000})
    q = "What is my destination?"
    reader = ReaderModel()
    assert reader.complete([INSTRUCTIONS, wm, Message(content=q)], []).text == \
        "From working memory: destination: Lisbon."
    assert reader.complete([INSTRUCTIONS, Message(content=q)], []).text == \
        "I don't know — nothing I was given mentions destination."


def test_answers_from_observations() -> None:
    obs = Message(role="system", content=(
        "# Observations\n- [seq 3 | 2024-05-02] The replacement blender ships on Friday.\n"
        "- [seq 5] The customer prefers email.\nkept: 3,5"))
    text = ReaderModel().complete([INSTRUCTIONS, obs, Message(
        content="When does the replacement ship?")], []).text
    assert text == "From my notes: The replacement blender ships on Friday."


def test_never_answers_from_the_question_or_the_instructions() -> None:
    instructions = Message(role="system", content="Refunds for order r-7 are €500 at most.")
    text = ReaderModel().complete([instructions, Message(
        content="Was the refund for order r-7 €240?")], []).text
    assert text is not None and text.startswith("I don't know")
    assert "€" not in text


def test_ignores_earlier_dont_know_answers_and_earlier_questions() -> None:
    msgs = [Message(content="How much was the refund for order r-7?"),
            Message(role="assistant",
                    content="I don't know — nothing I was given mentions refund."),
            Message(content="How much was the refund for order r-7?")]
    # the earlier question and answer mention every word of it: they answer nothing
    assert ReaderModel().complete(msgs, []).text == \
        "I don't know — nothing I was given answers that."


def test_a_word_the_prompt_holds_is_never_said_to_be_missing() -> None:
    """"Nothing I was given mentions refund" beside a recalled "Would you replace it or
    refund it?" (the demo's forgetting run) was false: a question, the instructions and
    a tool call answer nothing, but they do mention their words."""
    asked = [Message(content="Would you replace it or refund it?"),
             Message(content="What did we decide about the refund for my blender?")]
    assert ReaderModel().complete(asked, []).text == \
        "I don't know — nothing I was given mentions blender."
    call = Message(role="assistant", content=[ToolCallPart(
        id="c1", name="lookup_order", args={"order": "r-7", "item": "kettle"})])
    assert ReaderModel().complete([call, Message(content="Which kettle was in r-7?")],
                                  []).text == "I don't know — nothing I was given answers that."


def test_a_reply_to_a_question_carries_the_question_terms() -> None:
    msgs = [Message(role="assistant", content="Do you have a budget in mind?"),
            Message(content="About 3000 euros. My sister Ana is joining."),
            Message(content="What's my budget?")]
    assert ReaderModel().complete(msgs, []).text == "From our conversation: About 3000 euros."
    # without the question the reply alone says nothing about a budget
    assert ReaderModel().complete(msgs[1:], []).text == \
        "I don't know — nothing I was given mentions budget."


def test_later_correction_wins_a_tie() -> None:
    msgs = [Message(content="Our budget is 1500 euros."),
            Message(content="Our budget is 2000 euros."),
            Message(content="What is our budget?")]
    assert ReaderModel().complete(msgs, []).text == \
        "From our conversation: Our budget is 2000 euros."


def test_second_unit_added_when_it_covers_other_question_terms() -> None:
    msgs = [Message(content="The hotel in Porto is booked."),
            Message(role="assistant", content="The flight to Porto leaves at 9."),
            Message(content="What about the hotel and the flight?")]
    text = ReaderModel().complete(msgs, []).text
    assert text is not None and "hotel in Porto" in text and "flight to Porto" in text


def test_tool_result_evidence_is_labelled_with_the_tool() -> None:
    msgs = [Message(role="assistant", content=[ToolCallPart(id="c1", name="lookup_order",
                                                            args={"order_id": "r-7"})]),
            Message(role="tool", content=[ToolResultPart(call_id="c1", name="lookup_order",
                                                         result={"carrier": "DHL"})]),
            Message(content="Which carrier is it?")]
    # the question is answered from a tool result of an earlier turn
    assert ReaderModel().complete(msgs, []).text == "From the lookup_order tool: carrier: DHL."


def test_deterministic_across_instances() -> None:
    a = ReaderModel(HashingEmbedder()).complete(prompt(IRRELEVANT, FACT), [])
    b = ReaderModel(HashingEmbedder()).complete(prompt(IRRELEVANT, FACT), [])
    assert a.model_dump() == b.model_dump()
    assert a.model == "offline-reader" and a.usage.input_tokens > 0


def test_no_question_and_bad_settings() -> None:
    assert ReaderModel().complete([INSTRUCTIONS], []).text == \
        "I don't know — there is no question to answer."
    with pytest.raises(InvalidInputError, match="1.5"):
        ReaderModel(min_support=1.5)


def test_light_stemming_and_request_kinds() -> None:
    assert stem("prices") == stem("price")
    assert stem("decided") == stem("decide")
    assert stem("agreed") == stem("agree")
    assert request_kind("How much was it?") == "info"
    assert request_kind("Can you tell me the amount?") == "info"
    assert request_kind("Could you refund order r-7?") == "request"
    assert request_kind("Refund order r-7.") == "request"
    assert request_kind("My budget is 2000 euros.") == "statement"


# -- tools ------------------------------------------------------------------------------

REFUND = ToolSpec("refund", "Issue a refund for an order", {
    "type": "object",
    "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"},
                   "reason": {"type": "string"}},
    "required": ["order_id"]})
WEATHER = ToolSpec("get_weather", "Get the current weather for a city", {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
WM_TOOL = ToolSpec("update_working_memory", "Update the working memory", {
    "type": "object",
    "properties": {"destination": {"type": "string"}, "budget": {"type": "number"},
                   "travel_date": {"type": "string"},
                   "notes": {"type": "array", "items": {"type": "string"}}}})


def test_calls_a_matching_tool_with_filled_arguments() -> None:
    r = ReaderModel().complete([Message(content="please refund €240 for order r-7")],
                               [WEATHER, REFUND])
    assert r.text is None and r.finish_reason == "tool_calls"
    (call,) = r.tool_calls
    assert call.name == "refund"
    assert call.args == {"order_id": "r-7", "amount": 240,
                         "reason": "refund €240 for order r-7"}
    assert call.id.startswith("call-") and len(call.id) == len("call-") + 12
    again = ReaderModel().complete([Message(content="please refund €240 for order r-7")],
                                   [WEATHER, REFUND])
    assert again.tool_calls[0].id == call.id


def test_a_question_about_a_refund_does_not_issue_one() -> None:
    r = ReaderModel().complete(prompt(FACT), [REFUND])
    assert r.tool_calls == [] and r.text is not None and "€240" in r.text
    r2 = ReaderModel().complete(prompt(), [REFUND])
    assert r2.tool_calls == [] and r2.text is not None and r2.text.startswith("I don't know")


def test_unrelated_tool_not_called_and_unfillable_required_param_skips_the_call() -> None:
    r = ReaderModel().complete([Message(content="please refund my order")], [WEATHER, REFUND])
    # "order" matches, but no order id can be found: the required order_id is missing
    assert r.tool_calls == []
    assert r.text == "I can't do that — no tool I was given matches this request."


def test_lookup_tool_used_only_when_the_prompt_lacks_the_answer() -> None:
    q = Message(content="What's the weather in Lisbon?")
    r = ReaderModel().complete([q], [WEATHER])
    assert [(c.name, c.args) for c in r.tool_calls] == [("get_weather", {"city": "Lisbon"})]
    known = Message(role="assistant", content="The weather in Lisbon is sunny today.")
    r2 = ReaderModel().complete([known, q], [WEATHER])
    assert r2.tool_calls == [] and r2.text == \
        "From our conversation: The weather in Lisbon is sunny today."


def test_final_answer_uses_the_tool_result_and_never_calls_twice() -> None:
    user = Message(content="please refund order r-7")
    first = ReaderModel().complete([user], [REFUND])
    call = first.tool_calls[0]
    msgs = [user, Message(role="assistant", content=[call]),
            Message(role="tool", content=[ToolResultPart(
                call_id=call.id, name="refund", result={"status": "refunded", "amount": 240})])]
    r = ReaderModel().complete(msgs, [REFUND])
    assert r.tool_calls == []
    assert r.text == "The refund tool returned: status: refunded; amount: 240."
    failed = msgs[:2] + [Message(role="tool", content=[ToolResultPart(
        call_id=call.id, name="refund", result={"error": "order r-7 not found"})])]
    assert ReaderModel().complete(failed, [REFUND]).text == \
        "The refund tool failed: order r-7 not found."


def test_working_memory_patch_from_stated_facts() -> None:
    wm = wm_message({"destination": "Lisbon", "notes": ["vegetarian"]})
    cases = {
        "Set the destination to Porto": {"destination": "Porto"},
        "My budget is 2,500 euros and the destination is Madrid":
            {"budget": 2500, "destination": "Madrid"},
        "The travel date is 12 June 2025.": {"travel_date": "12 June 2025"},
        "Remember that I hate early flights": {"notes": ["vegetarian",
                                                         "I hate early flights"]},
    }
    for text, patch in cases.items():
        r = ReaderModel().complete([INSTRUCTIONS, wm, Message(content=text)], [WM_TOOL])
        assert [(c.name, c.args) for c in r.tool_calls] == \
            [("update_working_memory", patch)], text


def test_working_memory_not_touched_by_questions_or_unknown_fields() -> None:
    for text in ("What is my destination?", "The weather is nice."):
        r = ReaderModel().complete([Message(content=text)], [WM_TOOL])
        assert r.tool_calls == [], text


def test_working_memory_record_mode_and_final_answer() -> None:
    tool = ToolSpec("updateWorkingMemory", "Update working memory", {
        "type": "object", "properties": {"memory": {"type": "object"}}})
    user = Message(content="My favourite colour is green")
    r = ReaderModel().complete([user], [tool])
    (call,) = r.tool_calls
    assert call.args == {"memory": {"favourite_colour": "green"}}
    done = ReaderModel().complete([user, Message(role="assistant", content=[call]),
                                   Message(role="tool", content=[ToolResultPart(
                                       call_id=call.id, name=tool.name,
                                       result={"ok": True, "memory": {}})])], [tool])
    assert done.text == "Noted — working memory updated: favourite_colour: green."
