"""OpenAI's legacy completions (``POST …/completions``): ``{"prompt": ...}`` and
``choices[].text``; each prompt of a list is one call, each read as the chat record it
is equivalent to (the prompt a user message, the choice's text the answer). A
plain-prompt Bedrock model's record is turned into one (``bedrock_prompt``)."""

from __future__ import annotations

from typing import Any

from memory_core.importers.common import Exchange, fail
from memory_core.importers.formats import Record, RecordFormat
from memory_core.importers.formats.chat import OPENAI, chat_exchange
from memory_core.importers.openai_shapes import alternatives_note, reassemble_stream


def _token_ids(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(
        isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in value)


def _prompt_texts(raw: Any, where: str) -> list[tuple[str, list[str]]]:
    """A legacy completion's ``prompt`` as the texts of its calls, each with what reading
    it noted: a string, a list of strings (a batch), or token ids — a list of them (one
    prompt) or a list of such lists (a batch) — each as a placeholder text naming how
    many ids it had (noted: the importer has no tokenizer to decode them)."""
    prompts = [raw] if isinstance(raw, str) or _token_ids(raw) else raw
    if not isinstance(prompts, list) or not prompts or not (
            all(isinstance(p, str) for p in prompts) or all(_token_ids(p) for p in prompts)):
        raise fail(where, "'prompt' must be a string, a list of strings, a list of token ids "
                          f"or a list of lists of token ids, got {raw!r}"[:300])
    texts: list[tuple[str, list[str]]] = []
    for i, p in enumerate(prompts):
        if isinstance(p, str):
            texts.append((p, []))
            continue
        label = where if len(prompts) == 1 else f"{where} prompt {i}"  # (its exchange's)
        texts.append((f"[prompt of {len(p)} token ids]", [
            f"{label}: the prompt was sent as {len(p)} token ids, not text: stored as a "
            "placeholder naming their number (they are not decoded)"]))
    return texts


def completion_exchanges(obj: dict[str, Any], where: str, index: int,
                         notes: list[str] | None = None, api: str | None = None
                         ) -> list[Exchange]:
    """A legacy ``/completions`` record: each prompt is a user message and the choice
    with its index the answer (a list of prompts is a batch of calls); ``notes`` and
    ``api``: those of another API's record read as one (a Bedrock model's prompt)."""
    request = obj.get("request", obj)
    if not isinstance(request, dict) or "prompt" not in request:
        raise fail(where, "the request has no 'prompt' (a legacy completion's input)")
    prompts = _prompt_texts(request["prompt"], where)
    response = obj.get("response")
    notes = list(notes or [])
    if isinstance(response, list | str):
        response = reassemble_stream(response, where, notes)
    choices = response.get("choices") if isinstance(response, dict) else None
    if choices is not None and not isinstance(choices, list):
        raise fail(where, f"response 'choices' must be a list, got {choices!r}"[:300])
    by_index: dict[Any, Any] = {}
    for i, c in enumerate(choices or []):
        if isinstance(c, dict):
            at = c.get("index", i)
            if isinstance(at, bool) or not isinstance(at, int):
                raise fail(where, f"choice {i}: 'index' must be an integer, got {at!r}")
            by_index[at] = c
    rest = {k: v for k, v in request.items() if k != "prompt"}
    # ``n`` completions a prompt, prompt after prompt: prompt i's are choices i·n … i·n+n-1
    asked = rest.get("n")
    n = int(asked) if isinstance(asked, int | float) and not isinstance(asked, bool) \
        and asked == int(asked) and asked > 1 else 1
    usage = response.get("usage") if isinstance(response, dict) else None
    # the batch's one usage goes with the first prompt answered
    holder = next((i for i in range(len(prompts)) if i * n in by_index), None)
    out: list[Exchange] = []
    for i, (prompt, noted) in enumerate(prompts):
        record: dict[str, Any] = {**{k: v for k, v in obj.items() if k != "request"},
                                  "request": {**rest, "messages": [{"role": "user",
                                                                    "content": prompt}]}}
        label = where if len(prompts) == 1 else f"{where} prompt {i}"
        said = [*notes, *noted]
        choice = by_index.get(i * n)
        if isinstance(response, dict) and choice is not None:
            text = choice.get("text", (choice.get("message") or {}).get("content"))
            record["response"] = {**response, "choices": [{
                "message": {"role": "assistant", "content": text},
                "finish_reason": choice.get("finish_reason")}]}
            said += _shared_usage(label, i, holder, len(prompts), record["response"], usage)
            others = sum(i * n + j in by_index for j in range(1, n))
            if others:
                said.append(alternatives_note(label, others, usage))
        elif "error" not in obj:
            record.pop("response", None)
            record["error"] = f"no completion recorded for prompt {i}"
        out.append(chat_exchange(record, label, index + i, said, api))
    stray = sorted(k for k in by_index if not 0 <= k < len(prompts) * n)
    if stray and out:  # choices no prompt of the batch has (more than n a prompt)
        out[-1].notes.append(f"{out[-1].where}: choice(s) {', '.join(map(str, stray))} "
                             f"answer no prompt of the {len(prompts)} (n {n}): not imported")
    return out


def _shared_usage(label: str, i: int, holder: int | None, prompts: int,
                  response: dict[str, Any], usage: Any) -> list[str]:
    """A batch's one usage: kept with the run of ``holder`` (its first prompt answered,
    so that runs add up to what the request used), taken off the others' (their usage
    unknown); noted."""
    if prompts == 1 or not usage:
        return []
    if i != holder:
        del response["usage"]
    return [f"{label}: the response's usage counts all {prompts} prompts of the batch: "
            + ("recorded with this run" if i == holder else
               f"recorded with prompt {holder}'s run")]


def _matches(record: Record) -> bool:
    """A request with a ``prompt`` and no ``input`` (a Responses API request's
    ``prompt`` is an object: a stored prompt it renders), sent to no URL or OpenAI's."""
    request = record.request
    return record.api in (None, "openai") and isinstance(request, dict) \
        and "prompt" in request and "input" not in request \
        and not isinstance(request["prompt"], dict)


FORMAT = RecordFormat("completions", 110, _matches,
                      lambda r: completion_exchanges(r.obj, r.where, r.index),
                      routes=(OPENAI,))
