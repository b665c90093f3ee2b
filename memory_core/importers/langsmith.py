"""LangSmith runs (``client.list_runs()`` dumped to JSON, a run's "export" from the UI,
``{"runs": [...]}`` as the batch API takes them, ``{"items": [...]}`` as the runs query
answers, or JSON lines of runs): each ``llm`` run
is the chat-completions record it is equivalent to; other runs (chains, tools,
retrievers, prompts) are skipped with their type, their model calls being runs of their
own.

An ``llm`` run holds what a LangChain chat model was given and answered:
``inputs.messages`` (a batch: the first prompt, others noted; or the request a
``wrap_openai`` client sent), ``outputs.generations`` (or the OpenAI response itself),
``extra.invocation_params`` (model, tools, sampling parameters), ``extra.metadata``
(``thread_id``/``session_id``/``conversation_id``: the thread), the run's times, token
counts and ``error``. Messages come in LangChain's serialisations — ``{"lc": 1, "type":
"constructor", "id": [..., "HumanMessage"], "kwargs": {...}}``, ``{"type": "human",
"data": {...}}``, ``{"type": "human", "content": ...}`` — or OpenAI's ``{"role", ...}``;
an ``AIMessage``'s ``tool_calls`` (``{"name", "args", "id"}``) and a ``ToolMessage``'s
``tool_call_id`` become OpenAI's form."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from memory_core.importers.common import SkippedRecord, fail
from memory_core.models.openai_codec import ATTACHMENT_TYPES

# LangChain's message classes and ``type``s, as OpenAI roles
_ROLES = {"human": "user", "humanmessage": "user", "humanmessagechunk": "user",
          "user": "user",
          "ai": "assistant", "aimessage": "assistant", "aimessagechunk": "assistant",
          "assistant": "assistant",
          "system": "system", "systemmessage": "system", "systemmessagechunk": "system",
          "developer": "system",
          "tool": "tool", "toolmessage": "tool", "toolmessagechunk": "tool",
          "function": "function", "functionmessage": "function",
          "functionmessagechunk": "function"}
# content blocks the chat codec reads (text, attachments as placeholders)
_READ_BLOCKS = ("text", "refusal", "input_text", "output_text", *ATTACHMENT_TYPES)
# blocks that repeat the message's ``tool_calls`` (an Anthropic answer's tool_use)
_CALL_BLOCKS = ("tool_use", "tool_call", "function_call", "tool_call_chunk")
# invocation parameters that are not sampling parameters
_NOT_PARAMS = ("model", "model_name", "tools", "functions", "_type", "stream", "ls_structured_output_format")
_THREAD_KEYS = ("thread_id", "session_id", "conversation_id")


def _obj(d: Any, key: str) -> dict[str, Any]:
    """``d[key]`` when it is an object, else an empty one."""
    value = d.get(key) if isinstance(d, dict) else None
    return value if isinstance(value, dict) else {}


def is_langsmith_run(obj: Any) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("run_type"), str) and (
        "inputs" in obj or "outputs" in obj)


def langsmith_rows(docs: Iterable[tuple[str, Any]], skipped: list[SkippedRecord]
                   ) -> Iterator[tuple[str, Any]]:
    """The documents, a ``{"runs": [...]}`` one spread into its runs, and each run that
    is not a model call skipped with its type."""
    for where, obj in docs:
        # {"runs": [...]} (the batch API), {"items": [...]} (the v2 runs query)
        runs = next((obj[k] for k in ("runs", "items") if isinstance(obj, dict)
                     and isinstance(obj.get(k), list) and obj[k]
                     and all(is_langsmith_run(r) for r in obj[k])), None)
        items = [(f"{where}: run {i}", r) for i, r in enumerate(runs)] if runs is not None \
            else [(where, obj)]
        for at, item in items:
            if is_langsmith_run(item) and item["run_type"].lower() != "llm":
                skipped.append(SkippedRecord(where=at, reason=(
                    f"not a model call (LangSmith run_type {item['run_type']!r}, "
                    f"{item.get('name') or 'unnamed'})")))
                continue
            yield at, item


def _kind(raw: dict[str, Any]) -> str:
    """The message class or type a serialised LangChain message names."""
    if raw.get("lc") == 1 and isinstance(raw.get("id"), list) and raw["id"]:
        return str(raw["id"][-1]).lower()
    return str(raw.get("type") or raw.get("role") or "").lower()


def _fields(raw: dict[str, Any]) -> dict[str, Any]:
    """A serialised message's own fields (``kwargs``, ``data``, or the object itself)."""
    for key in ("kwargs", "data"):
        if isinstance(raw.get(key), dict):
            return dict(raw[key])
    return dict(raw)


def _text_content(content: Any, where: str, notes: list[str]) -> Any:
    """Content as OpenAI's: a string, or its parts without the tool-use blocks an
    ``AIMessage`` from Anthropic carries beside its ``tool_calls``; reasoning
    (Anthropic's ``thinking``, OpenAI's ``reasoning``), server-tool and other blocks
    the chat format has no part for are noted, not imported."""
    if not isinstance(content, list):
        return content
    kept = []
    for j, p in enumerate(content):
        kind = p.get("type") if isinstance(p, dict) else None
        if isinstance(p, dict) and kind in _CALL_BLOCKS:
            continue
        if isinstance(p, dict) and kind not in _READ_BLOCKS:
            notes.append(f"{where}: content block {j} ({kind}) not imported")
            continue
        kept.append(p)
    return kept or ""


def lc_message(raw: Any, where: str, notes: list[str]) -> dict[str, Any]:
    """One LangChain (or OpenAI) message as an OpenAI chat message."""
    if not isinstance(raw, dict):
        raise fail(where, f"a message must be an object, got {raw!r}")
    if "role" in raw and "lc" not in raw:
        return raw  # OpenAI's already (a wrap_openai request)
    kind = _kind(raw)
    fields = _fields(raw)
    role = _ROLES.get(kind) or (fields.get("role") if kind in ("chat", "chatmessage",
                                                               "chatmessagechunk")
                                else None)
    if role is None:
        raise fail(where, f"a LangChain message of unknown type {kind!r}")
    out: dict[str, Any] = {"role": _ROLES.get(str(role).lower(), role),
                           "content": _text_content(fields.get("content"), where, notes)}
    if isinstance(fields.get("name"), str):
        out["name"] = fields["name"]
    if out["role"] == "assistant":
        calls = fields.get("tool_calls") or []
        raw_calls = (fields.get("additional_kwargs") or {}).get("tool_calls")
        invalid = fields.get("invalid_tool_calls") or []
        if calls and isinstance(calls, list) or invalid and isinstance(invalid, list):
            out["tool_calls"] = [{
                "id": c.get("id"), "type": "function", "function": {
                    "name": c.get("name"), "arguments": json.dumps(c.get("args") or {})}}
                for c in (calls if isinstance(calls, list) else [])
                if isinstance(c, dict)]
            if isinstance(invalid, list) and invalid:
                # calls whose arguments LangChain could not parse: the model made them
                out["tool_calls"] += [{
                    "id": c.get("id"), "type": "function", "function": {
                        "name": c.get("name"), "arguments": c.get("args")
                        if isinstance(c.get("args"), str) else json.dumps(c.get("args"))}}
                    for c in invalid if isinstance(c, dict)]
                notes.append(f"{where}: {len(invalid)} tool call(s) LangChain could not "
                             "parse (invalid_tool_calls) kept, their arguments as text")
        elif isinstance(raw_calls, list):
            out["tool_calls"] = raw_calls
        if (fields.get("additional_kwargs") or {}).get("reasoning_content"):
            notes.append(f"{where}: the model's reasoning not imported")
    if out["role"] == "tool":
        out["tool_call_id"] = fields.get("tool_call_id")
        if fields.get("status") == "error":  # the tool failed: kept as the Anthropic
            out["is_error"] = True              # reader keeps a tool_result's is_error
    return out


def _messages(inputs: Any, where: str, notes: list[str]) -> list[dict[str, Any]]:
    if not isinstance(inputs, dict):
        raise fail(where, f"an llm run's 'inputs' must be an object, got {inputs!r}")
    raw = inputs.get("messages")
    if raw is None and isinstance(inputs.get("prompts"), list) and inputs["prompts"]:
        prompts = inputs["prompts"]
        if len(prompts) > 1:
            notes.append(f"{where}: {len(prompts) - 1} further prompt(s) of the batch not "
                         "imported")
        return [{"role": "user", "content": prompts[0]}]
    if not isinstance(raw, list) or not raw:
        keys = ", ".join(sorted(inputs)) or "none"
        raise fail(where, f"an llm run's inputs hold no 'messages' or 'prompts' (its keys: "
                          f"{keys})")
    if isinstance(raw[0], list):  # a batch of prompts: one run a prompt
        if len(raw) > 1:
            notes.append(f"{where}: {len(raw) - 1} further prompt(s) of the batch not "
                         "imported")
        raw = raw[0]
    return [lc_message(m, f"{where}: message {i}", notes) for i, m in enumerate(raw)]


def _generation(outputs: dict[str, Any], where: str, notes: list[str]
                ) -> tuple[dict[str, Any], str | None, dict[str, Any]] | None:
    """The answer of ``outputs.generations``: its message, finish reason and the
    message's own metadata."""
    gens = outputs.get("generations")
    if isinstance(gens, list) and gens and isinstance(gens[0], list):
        if len(gens) > 1:
            notes.append(f"{where}: the answers to {len(gens) - 1} further prompt(s) not "
                         "imported")
        gens = gens[0]
    if not isinstance(gens, list) or not gens or not isinstance(gens[0], dict):
        return None
    if len(gens) > 1:
        notes.append(f"{where}: {len(gens) - 1} alternative generation(s) not imported")
    gen = gens[0]
    info = _obj(gen, "generation_info")
    if isinstance(gen.get("message"), dict):
        fields = _fields(gen["message"])
        message = lc_message(gen["message"], f"{where}: generation", notes)
    else:
        fields, message = {}, {"role": "assistant", "content": gen.get("text") or ""}
    meta = _obj(fields, "response_metadata")
    finish = info.get("finish_reason") or meta.get("finish_reason") or meta.get("stop_reason")
    return message, finish if isinstance(finish, str) else None, {
        **meta, "usage_metadata": fields.get("usage_metadata")}


def _usage(run: dict[str, Any], outputs: dict[str, Any], meta: dict[str, Any]
           ) -> dict[str, Any] | None:
    token_usage = _obj(outputs, "llm_output").get("token_usage")
    if isinstance(token_usage, dict) and "prompt_tokens" in token_usage:
        return token_usage
    usage = meta.get("usage_metadata")
    if isinstance(usage, dict) and "input_tokens" in usage:
        return {"prompt_tokens": usage["input_tokens"],
                "completion_tokens": usage.get("output_tokens")}
    if isinstance(run.get("prompt_tokens"), int):
        return {"prompt_tokens": run["prompt_tokens"],
                "completion_tokens": run.get("completion_tokens")}
    return None


def as_chat_record(run: dict[str, Any], where: str, notes: list[str]) -> dict[str, Any]:
    """An ``llm`` run as the chat-completions record it is equivalent to."""
    extra = _obj(run, "extra")
    invocation, metadata = _obj(extra, "invocation_params"), _obj(extra, "metadata")
    inputs, outputs = run.get("inputs"), _obj(run, "outputs")
    model = invocation.get("model") or invocation.get("model_name") or metadata.get(
        "ls_model_name")
    record: dict[str, Any] = {}
    if isinstance(inputs, dict) and isinstance(outputs.get("choices"), list):
        # a wrap_openai client's run: the request and response as sent
        record["request"], record["response"] = dict(inputs), outputs
    else:
        request: dict[str, Any] = {
            k: v for k, v in invocation.items() if k not in _NOT_PARAMS}
        request["messages"] = _messages(inputs, where, notes)
        if invocation.get("tools"):
            request["tools"] = invocation["tools"]
        if model:
            request["model"] = model
        record["request"] = request
        answer = _generation(outputs, where, notes) if outputs else None
        if answer is not None:
            message, finish, meta = answer
            response: dict[str, Any] = {"choices": [{"message": message,
                                                     "finish_reason": finish}]}
            usage = _usage(run, outputs, meta)
            if usage is not None:
                response["usage"] = usage
            named = meta.get("model_name") or meta.get("model") or _obj(
                outputs, "llm_output").get("model_name")
            if named or model:
                response["model"] = named or model
            record["response"] = response
    if run.get("error"):
        record.pop("response", None)
        record["error"] = str(run["error"])
    elif "response" not in record:
        record["error"] = "the run has no answer recorded (no outputs)"
    key = next((metadata[k] for k in _THREAD_KEYS if isinstance(metadata.get(k), str)),
               None)
    if key is not None:
        record["thread_id"] = key
    return record
