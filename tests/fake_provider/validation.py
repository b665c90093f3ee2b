"""Request validation as real OpenAI-compatible providers apply it.

OpenAI (and Azure OpenAI, vLLM with its default chat templates, OpenRouter) reject a
chat-completions request with HTTP 400 when its messages break these rules; the fake
server applies them to every request, and composition property tests apply them to
every composed prompt, so a test fails whenever we would send an invalid prompt.
"""

from __future__ import annotations

from typing import Any

ROLES = {"system", "developer", "user", "assistant", "tool"}


class InvalidRequest(ValueError):
    """One provider-style 400: ``param`` names the offending field like OpenAI does."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


def validate_messages(messages: Any) -> None:
    """Raise InvalidRequest for the first rule ``messages`` (OpenAI chat format) breaks."""
    if not isinstance(messages, list) or not messages:
        raise InvalidRequest("'messages' must be a non-empty array", "messages")
    seen_ids: set[str] = set()
    pending: list[str] = []  # tool_call ids of the last assistant turn not yet answered
    for i, m in enumerate(messages):
        where = f"messages.[{i}]"
        if not isinstance(m, dict):
            raise InvalidRequest(f"{where} must be an object", where)
        role = m.get("role")
        if role not in ROLES:
            raise InvalidRequest(f"Invalid value for {where}.role: {role!r}", f"{where}.role")
        if pending and role != "tool":
            raise InvalidRequest(
                "An assistant message with 'tool_calls' must be followed by tool messages "
                "responding to each 'tool_call_id'. The following tool_call_ids did not "
                f"have response messages: {', '.join(pending)}", f"{where}.role")
        if role == "tool":
            call_id = m.get("tool_call_id")
            if not isinstance(call_id, str) or not call_id:
                raise InvalidRequest(f"Missing required parameter: '{where}.tool_call_id'.",
                                     f"{where}.tool_call_id")
            if call_id not in pending:
                raise InvalidRequest(
                    f"Invalid parameter: messages with role 'tool' must be a response to a "
                    f"preceeding message with 'tool_calls' ({where}, tool_call_id "
                    f"{call_id!r}).", f"{where}.role")
            pending.remove(call_id)
            _check_content(m.get("content"), where, allow_none=False)
            continue
        if role == "assistant":
            calls = m.get("tool_calls")
            if calls is not None:
                if not isinstance(calls, list) or not calls:
                    raise InvalidRequest(f"{where}.tool_calls must be a non-empty array",
                                         f"{where}.tool_calls")
                for j, c in enumerate(calls):
                    cw = f"{where}.tool_calls.[{j}]"
                    if not isinstance(c, dict) or c.get("type", "function") != "function":
                        raise InvalidRequest(f"{cw} must be a function call", cw)
                    cid = c.get("id")
                    fn = c.get("function")
                    if not isinstance(cid, str) or not cid:
                        raise InvalidRequest(f"Missing required parameter: '{cw}.id'.",
                                             f"{cw}.id")
                    if cid in seen_ids:
                        raise InvalidRequest(f"Duplicate value for 'tool_call_id' of {cid!r} "
                                             f"in {cw}.id", f"{cw}.id")
                    if (not isinstance(fn, dict) or not isinstance(fn.get("name"), str)
                            or not isinstance(fn.get("arguments"), str)):
                        raise InvalidRequest(f"{cw}.function needs a string name and "
                                             "string arguments", f"{cw}.function")
                    seen_ids.add(cid)
                    pending.append(cid)
                _check_content(m.get("content"), where, allow_none=True)
            else:
                _check_content(m.get("content"), where, allow_none=False)
            continue
        _check_content(m.get("content"), where, allow_none=False)
    if pending:
        raise InvalidRequest(
            "An assistant message with 'tool_calls' must be followed by tool messages "
            "responding to each 'tool_call_id'. The following tool_call_ids did not have "
            f"response messages: {', '.join(pending)}", "messages")


def _check_content(content: Any, where: str, *, allow_none: bool) -> None:
    if content is None:
        if allow_none:
            return
        raise InvalidRequest(f"Invalid value for '{where}.content': expected a string or "
                             "an array of content parts, got null.", f"{where}.content")
    if isinstance(content, str):
        return
    if isinstance(content, list) and all(isinstance(p, dict) and isinstance(p.get("type"), str)
                                         for p in content):
        return
    raise InvalidRequest(f"Invalid type for '{where}.content'.", f"{where}.content")
