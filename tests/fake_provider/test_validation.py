import pytest

from tests.fake_provider.validation import InvalidRequest, validate_messages


def call(cid: str) -> dict:
    return {"id": cid, "type": "function", "function": {"name": "f", "arguments": "{}"}}


def test_a_valid_tool_exchange_passes() -> None:
    validate_messages([
        {"role": "system", "content": "s"}, {"role": "user", "content": "u"},
        {"role": "assistant", "content": None, "tool_calls": [call("a"), call("b")]},
        {"role": "tool", "tool_call_id": "b", "content": "1"},
        {"role": "tool", "tool_call_id": "a", "content": "2"},
        {"role": "assistant", "content": "done"}])


@pytest.mark.parametrize("messages, needle", [
    ([], "non-empty"),
    ([{"role": "tool", "tool_call_id": "x", "content": "r"}], "preceeding"),
    ([{"role": "user", "content": "u"},
      {"role": "assistant", "content": None, "tool_calls": [call("a")]},
      {"role": "user", "content": "next"}], "did not have response messages: a"),
    ([{"role": "assistant", "content": None, "tool_calls": [call("a")]}],
     "did not have response messages: a"),
    ([{"role": "assistant", "content": None, "tool_calls": [call("a")]},
      {"role": "tool", "tool_call_id": "a", "content": "r"},
      {"role": "assistant", "content": None, "tool_calls": [call("a")]},
      {"role": "tool", "tool_call_id": "a", "content": "r"}], "Duplicate"),
    ([{"role": "assistant", "content": None, "tool_calls": [call("a")]},
      {"role": "tool", "tool_call_id": "a", "content": "r"},
      {"role": "tool", "tool_call_id": "a", "content": "r"}], "preceeding"),
    ([{"role": "robot", "content": "x"}], "role"),
    ([{"role": "user", "content": None}], "content"),
])
def test_what_providers_reject_is_rejected(messages: list, needle: str) -> None:
    with pytest.raises(InvalidRequest, match=needle):
        validate_messages(messages)
