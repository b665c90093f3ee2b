"""The extractive summariser keeps key sentences with their seqs and dates, really drops
minor facts, reports the kept seqs, and condenses observations for the reflector."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory_core.errors import InvalidInputError
from memory_core.models.summarizer import ExtractiveSummarizer, format_block, parse_summary
from memory_core.types import Message, StoredMessage, ToolCallPart, ToolResultPart

INSTR = Message(role="system", content="Summarise the key facts of these messages.")
BLOCK = [
    INSTR,
    Message(role="user", content="[seq 0 | 2024-05-01] Hi there!"),
    Message(role="assistant", content="[seq 1 | 2024-05-01] Hello! How can I help?"),
    Message(role="user", content=("[seq 2 | 2024-05-01] My blender from order r-7 arrived "
                                  "broken. By the way, my cat is called Miso.")),
    Message(role="assistant", content=("[seq 3 | 2024-05-02] We agreed to refund €240 for "
                                       "order r-7 on 3 May 2024.")),
    Message(role="user", content="[seq 4 | 2024-05-02] Great, thanks."),
    Message(role="assistant", content="[seq 5 | 2024-05-02] The replacement will ship on Friday."),
    Message(role="user", content="[seq 6 | 2024-05-02] Also I prefer email over phone."),
]


def test_keeps_key_sentences_with_seqs_and_dates_and_reports_kept_seqs() -> None:
    r = ExtractiveSummarizer().complete(BLOCK, [])
    assert r.text == (
        "- [seq 2 | 2024-05-01] My blender from order r-7 arrived broken.\n"
        "- [seq 3 | 2024-05-02] We agreed to refund €240 for order r-7 on 3 May 2024.\n"
        "- [seq 5 | 2024-05-02] The replacement will ship on Friday.")
    parts = parse_summary(r.text or "")
    assert parts.kept_seqs == [2, 3, 5] and parts.text == r.text
    assert r.model == "extractive-summarizer"


def test_a_minor_fact_does_not_survive() -> None:
    text = ExtractiveSummarizer().complete(BLOCK, []).text or ""
    assert "Miso" not in text and "Hi there" not in text and "email" not in text
    assert "€240" in text  # the decision with the amount and date survives


def test_max_sentences_bounds_the_summary_and_keeps_the_best() -> None:
    model = ExtractiveSummarizer(max_sentences=1)
    text = model.complete(BLOCK, []).text
    assert text == ("- [seq 3 | 2024-05-02] We agreed to refund €240 for order r-7 on "
                    "3 May 2024.")
    assert model.last_kept_seqs == [3]


def test_instructions_are_not_summarised_and_output_is_deterministic() -> None:
    instr = Message(role="system", content="We decided to refund €999 on 1 June 2024.")
    a = ExtractiveSummarizer().complete([instr, *BLOCK[1:]], [])
    b = ExtractiveSummarizer().complete([instr, *BLOCK[1:]], [])
    assert a.model_dump() == b.model_dump()
    assert "€999" not in (a.text or "")


def test_reflector_condenses_observation_texts_keeping_their_seqs() -> None:
    obs1 = ExtractiveSummarizer().complete(BLOCK, []).text or ""
    obs2 = ("- [seq 9] The customer moved to Lisbon in June 2024.\n"
            "- [seq 10] ok\n- [seq 11] Thanks again.")
    r = ExtractiveSummarizer(max_sentences=3).complete(
        [Message(role="system", content="Condense these observations."),
         Message(role="user", content=obs1), Message(role="user", content=obs2)], [])
    parts = parse_summary(r.text or "")
    assert parts.kept_seqs == [3, 5, 9]
    assert "[seq 9] The customer moved to Lisbon in June 2024." in parts.text
    # observations may also arrive as system messages: the markers make them content
    r2 = ExtractiveSummarizer(max_sentences=3).complete(
        [Message(role="system", content=obs1), Message(role="system", content=obs2)], [])
    assert r2.text == r.text


def test_format_block_from_stored_rows_and_tool_parts() -> None:
    at = datetime(2024, 5, 2, 9, 30, tzinfo=UTC)
    rows = [
        StoredMessage(thread_id="t", seq=7, created_at=at, role="user",
                      content="Please refund order r-7, the blender is broken."),
        StoredMessage(thread_id="t", seq=8, created_at=at, role="assistant",
                      content=[ToolCallPart(id="c1", name="refund", args={"order_id": "r-7"})]),
        StoredMessage(thread_id="t", seq=9, created_at=at, role="tool",
                      content=[ToolResultPart(call_id="c1", name="refund",
                                              result={"status": "refunded", "amount": 240})]),
    ]
    msgs = format_block(rows)
    assert msgs[0].content == ("[seq 7 | 2024-05-02] Please refund order r-7, the blender "
                               "is broken.")
    assert msgs[1].metadata == {"seq": 8, "date": "2024-05-02"}
    text = ExtractiveSummarizer(max_sentences=3, max_fraction=1.0).complete(msgs, []).text
    assert text == (
        "- [seq 7 | 2024-05-02] Please refund order r-7, the blender is broken.\n"
        "- [seq 8 | 2024-05-02] Called refund with order_id: r-7.\n"
        "- [seq 9 | 2024-05-02] refund returned: status: refunded; amount: 240")


def test_parse_summary_without_kept_line_and_empty_input() -> None:
    parts = parse_summary("- [seq 4] A.\n- [seq 2 | 2024-01-01] B.\n- no marker.")
    assert parts.kept_seqs == [2, 4] and parts.text.endswith("- no marker.")
    llm = parse_summary("- [seq 4] A.\n- B.\nkept: 4, 6")
    assert llm.kept_seqs == [4, 6] and llm.text == "- [seq 4] A.\n- B."
    model = ExtractiveSummarizer()
    assert model.complete([INSTR], []).text == ""
    assert model.last_kept_seqs == []
    assert parse_summary("kept:") == parse_summary("")


def test_lines_without_any_seq_are_kept_without_marker() -> None:
    r = ExtractiveSummarizer().complete(
        [Message(content="We decided to book the Lisbon hotel for €300 on 4 July 2024.")], [])
    assert r.text == "- We decided to book the Lisbon hotel for €300 on 4 July 2024."


def test_observer_and_reflector_prompt_formats_of_observational_memory() -> None:
    # ObservationalMemory sends one user message of "[seq N role] text" lines, and the
    # reflector "[<obs id>] <observation text>" lines.
    lines = "\n".join([
        "[seq 0 user] Hi there!",
        "[seq 1 assistant] Hello! How can I help?",
        "[seq 2 user] My blender from order r-7 arrived broken. My cat is called Miso.",
        "[seq 3 assistant] We agreed to refund €240 for order r-7 on 3 May 2024.",
        "[seq 4 user] Great, thanks.",
        "[seq 5 assistant] The replacement will ship on Friday."])
    observer = ExtractiveSummarizer()
    instructions = Message(role="system", content=(
        "You are the observer. Distil the conversation messages below into short, dated "
        "observations: keep decisions, facts, names, numbers and dates; drop chit-chat. "
        "Each message is labelled [seq N role]."))
    r = observer.complete([instructions, Message(role="user", content=lines)], [])
    assert r.text == (
        "- [seq 2 user] My blender from order r-7 arrived broken.\n"
        "- [seq 3 assistant] We agreed to refund €240 for order r-7 on 3 May 2024.\n"
        "- [seq 5 assistant] The replacement will ship on Friday.")
    assert observer.last_kept_seqs == [2, 3, 5]
    reflector = ExtractiveSummarizer(max_sentences=2)
    r2 = reflector.complete([Message(role="system", content="Condense."), Message(
        role="user", content=f"[obs-t-0000] {r.text}\n[obs-t-0001] - [seq 9 user] "
                             "We agreed to move the delivery to 7 June 2024.")], [])
    assert r2.text == (
        "- [seq 3 assistant] We agreed to refund €240 for order r-7 on 3 May 2024.\n"
        "- [seq 9 user] We agreed to move the delivery to 7 June 2024.")
    assert reflector.last_kept_seqs == [3, 9]


@pytest.mark.parametrize("kwargs", [{"max_sentences": 0}, {"max_fraction": 0.0},
                                    {"min_ratio": 2.0}])
def test_bad_settings_name_the_value(kwargs: dict[str, float]) -> None:
    with pytest.raises(InvalidInputError, match=list(kwargs)[0]):
        ExtractiveSummarizer(**kwargs)  # type: ignore[arg-type]
