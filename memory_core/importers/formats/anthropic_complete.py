"""Anthropic's legacy Text Completions API (``POST …/v1/complete``, Claude 1 and 2):
``{"prompt": "\\n\\nHuman: …\\n\\nAssistant:", "max_tokens_to_sample", …}`` answered
``{"type": "completion", "completion", "stop_reason", "model"}``, or a stream of such
events. The prompt is a dialogue its markers tell apart — text before the first
``Human:`` is the system prompt, then the turns — read as the chat record it is
equivalent to; the API counts no tokens, so usage is unknown."""

from __future__ import annotations

import re
from typing import Any

from memory_core.importers.common import Exchange, fail
from memory_core.importers.formats import Record, RecordFormat, Route
from memory_core.importers.formats.chat import chat_exchange
from memory_core.importers.openai_shapes import stream_events

COMPLETE = Route("anthropic-complete", ("/v1/complete",))
_TURN = re.compile(r"\n\n(Human|Assistant):")
# the request's settings under chat completions' names (the rest are kept as sent)
_RENAMED = {"max_tokens_to_sample": "max_tokens", "stop_sequences": "stop"}


def _is_dialogue(prompt: Any) -> bool:
    return isinstance(prompt, str) and "\n\nHuman:" in prompt


def _matches(record: Record) -> bool:
    if record.api is not None:
        return record.api == COMPLETE.api
    request, response = record.request, record.obj.get("response")
    return isinstance(request, dict) and _is_dialogue(request.get("prompt")) and (
        "max_tokens_to_sample" in request
        or isinstance(response, dict) and response.get("type") == "completion")


def dialogue(prompt: str, where: str, notes: list[str]) -> list[dict[str, Any]]:
    """The prompt's turns as chat messages: what precedes the first ``Human:`` is the
    system prompt; the trailing ``Assistant:`` (the answer's cue) is no message, and
    text after it — the start of the answer, given by the client — is kept as one."""
    parts = _TURN.split(prompt)
    head, turns = parts[0], list(zip(parts[1::2], parts[2::2], strict=True))
    if not turns:  # (Bedrock's Claude 2 took "Human: … Assistant:" on one line)
        notes.append(f"{where}: the prompt holds no \"\\n\\nHuman:\" turns: kept whole as "
                     "one user message")
        return [{"role": "user", "content": prompt}]
    if turns[0][0] != "Human":
        raise fail(where, "'prompt' must hold the dialogue as \"\\n\\nHuman: …\\n\\n"
                          "Assistant:\" turns, the first a Human one")
    out: list[dict[str, Any]] = []
    if head.strip():
        out.append({"role": "system", "content": head.strip()})
    for i, (who, text) in enumerate(turns):
        said = text.strip()
        last = i == len(turns) - 1
        if who == "Assistant" and last:
            if said:
                notes.append(f"{where}: the prompt ends with the start of the answer "
                             f"({len(said):,} characters given by the client): kept as an "
                             "assistant message before the completion")
                out.append({"role": "assistant", "content": said})
            continue
        out.append({"role": "user" if who == "Human" else "assistant", "content": said})
    if turns[-1][0] != "Assistant":
        notes.append(f"{where}: the prompt does not end with \"Assistant:\" (the API "
                     "requires it)")
    return out


def _answer(response: Any, where: str) -> dict[str, Any] | None:
    """The completion, or a recorded stream's events joined, as one completion object."""
    if isinstance(response, list | str):
        events = [e for e in stream_events(response, where)
                  if e.get("type") in ("completion", "error")]
        error = next((e for e in events if e.get("type") == "error"), None)
        done = [e for e in events if e.get("type") == "completion"]
        if error is not None and not done:
            return error
        if not done:
            raise fail(where, "the recorded stream has no completion event")
        last = done[-1]
        return {**last, "completion": "".join(str(e.get("completion") or "") for e in done),
                "stop_reason": next((e.get("stop_reason") for e in reversed(done)
                                     if e.get("stop_reason")), None)}
    return response if isinstance(response, dict) else None


def _read(record: Record) -> list[Exchange]:
    obj, where = record.obj, record.where
    request = record.request
    if not isinstance(request, dict) or not isinstance(request.get("prompt"), str):
        raise fail(where, "a Text Completions request needs its 'prompt' as a string")
    notes: list[str] = []
    chat_request = {_RENAMED.get(k, k): v for k, v in request.items() if k != "prompt"}
    chat_request["messages"] = dialogue(request["prompt"], where, notes)
    chat: dict[str, Any] = {k: v for k, v in obj.items() if k not in ("request", "response")}
    chat["request"] = chat_request
    answer = _answer(obj.get("response"), where)
    if answer is not None and answer.get("type") == "error":
        chat["error"] = answer.get("error", answer)
    elif answer is not None:
        if not isinstance(answer.get("completion"), str):
            raise fail(where, "the response has no 'completion' text (a Text Completions "
                              "answer)")
        chat["response"] = {
            **({"model": answer["model"]} if isinstance(answer.get("model"), str) else {}),
            "choices": [{"index": 0, "finish_reason": answer.get("stop_reason"),
                         "message": {"role": "assistant", "content": answer["completion"]}}]}
    ex = chat_exchange(chat, where, record.index, notes, api="anthropic")
    if answer is not None and isinstance(answer.get("stop"), str):
        ex.stop_sequence = answer["stop"]  # (kept beside the finish reason, as the
    return [ex]  # Messages API's stop_sequence is)


def legacy_as_chat(legacy: dict[str, Any], where: str, notes: list[str]) -> dict[str, Any]:
    """A legacy completions record whose prompt is a Claude dialogue (Claude 2's body
    on Bedrock's InvokeModel, read as one) as the chat record it is equivalent to."""
    request = dict(legacy["request"])
    request["messages"] = dialogue(request.pop("prompt"), where, notes)
    out = {**legacy, "request": request}
    response = legacy.get("response")
    if isinstance(response, dict) and isinstance(response.get("choices"), list):
        out["response"] = {**response, "choices": [
            {"index": c.get("index", 0), "finish_reason": c.get("finish_reason"),
             "message": {"role": "assistant", "content": c.get("text")}}
            for c in response["choices"] if isinstance(c, dict)]}
    return out


FORMAT = RecordFormat("anthropic-complete", 75, _matches, _read, routes=(COMPLETE,))
