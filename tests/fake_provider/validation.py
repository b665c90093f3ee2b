"""Request validation as real OpenAI-compatible providers apply it.

OpenAI (and Azure OpenAI, vLLM with its default chat templates, OpenRouter) reject a
chat-completions request with HTTP 400 when its messages break these rules; the fake
server applies them to every request, and composition property tests apply them to
every composed prompt, so a test fails whenever we would send an invalid prompt.
"""

from __future__ import annotations

import re
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


_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_KNOWN_PARAMS = {
    "model", "messages", "tools", "tool_choice", "parallel_tool_calls", "temperature",
    "top_p", "seed", "max_tokens", "max_completion_tokens", "stream", "stream_options",
    "n", "stop", "user", "metadata", "frequency_penalty", "presence_penalty",
    "response_format", "logprobs", "top_logprobs", "logit_bias", "store",
    "reasoning_effort", "service_tier"}


def validate_request(body: Any) -> None:
    """Raise InvalidRequest for the first rule a chat-completions request body breaks:
    unknown parameters, the model name, the messages (``validate_messages``), the tools
    and tool choice, sampling parameters and the streaming options."""
    if not isinstance(body, dict):
        raise InvalidRequest("The request body must be a JSON object.")
    unknown = sorted(set(body) - _KNOWN_PARAMS)
    if unknown:
        raise InvalidRequest(f"Unrecognized request argument supplied: {unknown[0]}",
                             unknown[0])
    model = body.get("model")
    if not isinstance(model, str) or not model.strip():
        raise InvalidRequest("you must provide a model parameter", "model")
    validate_messages(body.get("messages"))
    validate_tools(body)
    _check_number(body, "temperature", 0.0, 2.0)
    _check_number(body, "top_p", 0.0, 1.0)
    for name in ("max_tokens", "max_completion_tokens", "seed", "n"):
        value = body.get(name)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            raise InvalidRequest(f"Invalid type for '{name}': expected an integer, but got "
                                 f"{type(value).__name__} instead.", name)
    for name in ("max_tokens", "max_completion_tokens", "n"):
        if body.get(name) is not None and body[name] < 1:
            raise InvalidRequest(f"Invalid '{name}': integer below minimum value. Expected "
                                 f"a value >= 1, but got {body[name]} instead.", name)
    if body.get("n") not in (None, 1):
        raise InvalidRequest("this server only supports n=1", "n")
    stream = body.get("stream")
    if stream is not None and not isinstance(stream, bool):
        raise InvalidRequest("Invalid type for 'stream': expected a boolean.", "stream")
    options = body.get("stream_options")
    if options is not None:
        if not stream:
            raise InvalidRequest("The 'stream_options' parameter is only allowed when "
                                 "'stream' is enabled.", "stream_options")
        if not isinstance(options, dict) or set(options) - {"include_usage",
                                                               "include_obfuscation"}:
            raise InvalidRequest("Invalid 'stream_options': expected an object with "
                                 "'include_usage'.", "stream_options")


def validate_tools(body: dict[str, Any]) -> None:
    """``tools``: a non-empty array of uniquely named functions whose parameters are a
    JSON schema of type object; ``tool_choice``/``parallel_tool_calls`` need tools."""
    tools = body.get("tools")
    if tools is None:
        for name in ("tool_choice", "parallel_tool_calls"):
            if body.get(name) is not None:
                raise InvalidRequest(f"Invalid value for '{name}': '{name}' is only allowed "
                                     "when 'tools' are specified.", name)
        return
    if not isinstance(tools, list) or not tools:
        raise InvalidRequest("Invalid 'tools': empty array. Expected an array with minimum "
                             "length 1, but got an empty array instead.", "tools")
    names: set[str] = set()
    for i, tool in enumerate(tools):
        where = f"tools[{i}]"
        if not isinstance(tool, dict) or tool.get("type") != "function":
            raise InvalidRequest(f"Invalid value for '{where}.type': expected 'function'.",
                                 f"{where}.type")
        fn = tool.get("function")
        if not isinstance(fn, dict):
            raise InvalidRequest(f"Missing required parameter: '{where}.function'.",
                                 f"{where}.function")
        name = fn.get("name")
        if not isinstance(name, str) or not _TOOL_NAME.match(name):
            raise InvalidRequest(f"Invalid '{where}.function.name': string does not match "
                                 f"pattern. Expected a string that matches the pattern "
                                 f"'^[a-zA-Z0-9_-]+$' of at most 64 characters, got {name!r}.",
                                 f"{where}.function.name")
        if name in names:
            raise InvalidRequest(f"Duplicate tool name {name!r} in '{where}.function.name'.",
                                 f"{where}.function.name")
        names.add(name)
        if "description" in fn and not isinstance(fn["description"], str):
            raise InvalidRequest(f"Invalid type for '{where}.function.description': "
                                 "expected a string.", f"{where}.function.description")
        params = fn.get("parameters")
        if params is not None and (not isinstance(params, dict)
                                   or params.get("type", "object") != "object"):
            raise InvalidRequest(f"Invalid schema for function {name!r}: schema must be a "
                                 "JSON Schema of 'type: \"object\"'.",
                                 f"{where}.function.parameters")
    choice = body.get("tool_choice")
    if choice is not None and choice not in ("none", "auto", "required"):
        fn = choice.get("function") if isinstance(choice, dict) else None
        named = fn.get("name") if isinstance(fn, dict) else None
        if named not in names:
            raise InvalidRequest(f"Invalid value for 'tool_choice': {choice!r} names no "
                                 "offered tool.", "tool_choice")


def _check_number(body: dict[str, Any], name: str, low: float, high: float) -> None:
    value = body.get(name)
    if value is None:
        return
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise InvalidRequest(f"Invalid type for '{name}': expected a decimal, but got "
                             f"{type(value).__name__} instead.", name)
    if not low <= value <= high:
        raise InvalidRequest(f"Invalid '{name}': decimal out of range. Expected a value "
                             f"between {low:g} and {high:g}, but got {value} instead.", name)
