"""promptfoo's eval results: what ``promptfoo eval -o results.json`` and ``promptfoo
export`` write (``OutputFile``: ``{"evalId", "results", "config", "shareableUrl",
"metadata"}``), the older results file (``{"version", "createdAt", "results", "config",
"author"}``), an eval summary alone (``EvaluateSummaryV2``/``V3``: ``{"version",
"timestamp", "results", "prompts" or "table", "stats"}``), a serialised ``Eval``
(``{"id", "createdAt", "config", "results", "prompts"}``), and ``-o results.jsonl``,
one ``EvalResult`` a line (promptfoo's ``src/types/index.ts``, ``src/models``).

Each evaluated call (an ``EvaluateResult``: a test case's prompt sent to one provider)
is a run, turned into the chat completion it was (``promptfoo_evals`` gives a file's
results as records, each with what the eval says of them under ``KEY``): its
``prompt.raw`` — the rendered prompt promptfoo gave the provider, which a chat
provider reads as its messages when it is a JSON array of them (or YAML, ``- role:``),
else as one user message — the request; ``response.output`` the answer (a text, an
OpenAI message or its tool calls, a structured output's JSON; tool calls promptfoo
wrote into the text as JSON, one a line, read as calls); ``response.tokenUsage`` the
usage; the provider id the model (``openai:chat:gpt-4o`` asked as such, the model
``gpt-4o``). A provider error (``response.error``, or a result with its ``error`` and
no output) is a failed run; an assertion that failed (``failureReason`` 1) is
promptfoo's verdict on an answer, noted with the graders' own token counts, which are
not the call's. A summary with no ``results`` is read from its ``table`` (each row's
outputs). promptfoo keeps no time per call: each is dated by the eval's (its
``timestamp``, ``createdAt``), in the file's order, its ``latencyMs`` its duration
(noted); a results line, which keeps none, is undated. No thread key: the calls are
grouped by their messages, as any file's are — the same prompt answered by two
providers is two runs, two threads unless the answers are alike."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta
from typing import Any

from memory_core.importers.common import Exchange, fail, from_unix, iso_time, shortened
from memory_core.importers.formats import Record, RecordFormat
from memory_core.importers.formats.chat import chat_exchange
from memory_core.importers.formats.fields import count_of

KEY = "promptfoo_eval"  # what the eval says of a result, as ``promptfoo_evals`` gives it

# promptfoo's ResultFailureReason: the test passed (or why is unknown), an assertion
# rejected the answer, the call (or something else) failed
_ASSERT, _ERROR = 1, 2
# what PROMPTFOO_STRIP_PROMPT_TEXT / PROMPTFOO_STRIP_RESPONSE_OUTPUT write in their place
_STRIPPED = {"[prompt stripped]": "PROMPTFOO_STRIP_PROMPT_TEXT",
             "[output stripped]": "PROMPTFOO_STRIP_RESPONSE_OUTPUT"}
# the second part of a provider id that says which of its provider's APIs it calls
# (``openai:chat:gpt-4o``, ``anthropic:messages:…``, ``bedrock:converse:…``)
_KINDS = {"chat", "completion", "completions", "messages", "responses", "converse",
          "invoke", "text", "text-generation", "assistant", "realtime"}
# provider ids that name a program, not a model (``file://provider.py``, ``exec:…``)
_PROGRAMS = {"file", "python", "exec", "http", "https", "webhook", "golang", "ruby",
             "script", "browser", "websocket", "mcp", "sequence", "promptfoo"}


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def is_result(obj: Any) -> bool:
    """One ``EvaluateResult`` (or ``EvalResult``): the prompt sent, the provider it was
    sent to, and where it stands in the eval (its test's and prompt's indices)."""
    if not isinstance(obj, dict):
        return False
    prompt, provider = obj.get("prompt"), obj.get("provider")
    return (isinstance(prompt, dict) and "raw" in prompt or isinstance(prompt, str)) \
        and (isinstance(provider, dict) and "id" in provider or isinstance(provider, str)) \
        and ("promptIdx" in obj or "testIdx" in obj) \
        and any(k in obj for k in ("success", "failureReason", "gradingResult", "response"))


def _is_summary(obj: Any) -> bool:
    """An eval summary: its results (or table) beside its stats or version."""
    return isinstance(obj, dict) and ("stats" in obj or "version" in obj) and (
        isinstance(obj.get("results"), list) or isinstance(obj.get("table"), dict))


def _marked(obj: dict[str, Any]) -> bool:
    """What only promptfoo's files hold: an eval id, a share URL, its version."""
    return "evalId" in obj or "shareableUrl" in obj or "promptfooVersion" in _dict(
        obj.get("metadata"))


def _summary_of(obj: Any) -> dict[str, Any] | None:
    """The eval summary a document holds: an output or results file's ``results``, the
    document itself, or a serialised ``Eval`` (its results beside its prompts)."""
    if not isinstance(obj, dict):
        return None
    inner = obj.get("results")
    if _is_summary(inner) and ("config" in obj or _marked(obj) or "createdAt" in obj):
        return inner
    if isinstance(inner, list) and (any(is_result(r) for r in inner) or _marked(obj) or (
            "config" in obj and isinstance(obj.get("prompts"), list)
            and ("createdAt" in obj or "stats" in obj))):
        return obj
    if isinstance(obj.get("table"), dict) and _is_summary(obj) and _marked(obj):
        return obj
    return None


def _eval_time(doc: dict[str, Any], summary: dict[str, Any]) -> tuple[str, Any] | None:
    """Where the eval says when it ran, and the value: its summary's ``timestamp``, the
    metadata's ``evaluationCreatedAt``, the file's ``createdAt``."""
    own = "timestamp" if summary is doc else "results.timestamp"
    for what, value in ((own, summary.get("timestamp")),
                        ("metadata.evaluationCreatedAt",
                         _dict(doc.get("metadata")).get("evaluationCreatedAt")),
                        ("createdAt", doc.get("createdAt"))):
        if value is not None:
            return what, value
    return None


def promptfoo_evals(docs: Iterable[tuple[str, Any]]) -> Iterator[tuple[str, Any]]:
    """The documents, a promptfoo eval given as its results (each named by its place,
    ``results[3]``, or its table cell, ``table row 2, output 1``), each with what the
    eval says of it under ``KEY``; a result that is no object comes as its error."""
    for where, obj in docs:
        summary = _summary_of(obj)
        if summary is None:
            yield where, obj
            continue
        assert isinstance(obj, dict)
        when = _eval_time(obj, summary)
        results = summary.get("results")
        rows = list(enumerate(results)) if isinstance(results, list) and results else []
        named = [(f"results[{i}]", r) for i, r in rows] if rows else list(_table(summary))
        if not named:
            yield where, fail(where, "a promptfoo eval holding no results (its 'results' "
                                     "are empty, and no table): no model call to import")
            continue
        for order, (at, result) in enumerate(named):
            at = f"{where}: {at}" if where != "file" else at
            if not isinstance(result, dict):
                yield at, fail(at, f"a result must be an object, got "
                                   f"{shortened(repr(result), 60)}")
                continue
            yield at, {**result, KEY: {"time": when, "order": order,
                                       "table": not rows}}


def _table(summary: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """An older summary's table (``head.prompts``, ``body[].outputs``) as results: each
    output the answer of its column's prompt and provider to its row's test."""
    table = _dict(summary.get("table"))
    heads = _dict(table.get("head")).get("prompts")
    body = table.get("body")
    for r, row in enumerate(body if isinstance(body, list) else []):
        outputs = row.get("outputs") if isinstance(row, dict) else None
        for j, out in enumerate(outputs if isinstance(outputs, list) else []):
            if not isinstance(out, dict):
                yield f"table row {r}, output {j}", out
                continue
            head = _dict(heads[j]) if isinstance(heads, list) and j < len(heads) else {}
            provider = out.get("provider") or head.get("provider")
            response = out.get("response")
            if not isinstance(response, dict):  # (a provider error: its text says it)
                response = {"error": out.get("error") or out.get("text")} \
                    if out.get("failureReason") == _ERROR else {"output": out.get("text")}
            yield f"table row {r}, output {j}", {
                "prompt": {"raw": out.get("prompt")}, "provider": {"id": provider},
                "response": response, "error": out.get("error"),
                "failureReason": out.get("failureReason"), "success": out.get("pass"),
                "latencyMs": out.get("latencyMs"), "cost": out.get("cost"),
                "gradingResult": out.get("gradingResult"),
                "tokenUsage": out.get("tokenUsage"), "promptIdx": j,
                "testIdx": row.get("testIdx", r)}


# -- the provider ---------------------------------------------------------------------------
def provider_model(pid: str) -> str | None:
    """The model a promptfoo provider id names: what follows its provider (and the API
    it calls): ``openai:gpt-5`` → ``gpt-5``, ``openai:chat:gpt-4o`` → ``gpt-4o``,
    ``ollama:chat:llama3:8b`` → ``llama3:8b``; None for an id that names a program or
    service (``file://provider.py``, ``python:…``, ``https://…``, ``echo``)."""
    head, sep, rest = pid.partition(":")
    if not sep or not rest or head.lower() in _PROGRAMS or rest.startswith("//"):
        return None
    kind, sep, model = rest.partition(":")
    return model if sep and kind in _KINDS and model else rest


def _provider(result: dict[str, Any], where: str) -> tuple[str, str | None]:
    """The provider's id and label."""
    raw = result.get("provider")
    pid = raw.get("id") if isinstance(raw, dict) else raw
    if not isinstance(pid, str) or not pid:
        raise fail(where, f"a result's provider must name its id, got "
                          f"{shortened(repr(raw), 80)}")
    label = raw.get("label") if isinstance(raw, dict) else None
    return pid, label if isinstance(label, str) and label and label != pid else None


# -- the prompt -----------------------------------------------------------------------------
def _messages(result: dict[str, Any], where: str, notes: list[str]) -> list[Any]:
    """What the provider was sent: the rendered prompt's messages (a JSON array of
    them, or a YAML list: ``- role: …``) or the prompt as one user message."""
    prompt = result.get("prompt")
    raw = prompt.get("raw") if isinstance(prompt, dict) else prompt
    if not isinstance(raw, str):
        raise fail(where, f"a result's prompt.raw must be a text (the prompt sent), got "
                          f"{shortened(repr(raw), 80)}")
    if raw in _STRIPPED:
        raise fail(where, f"its prompt was stripped from the file ({_STRIPPED[raw]}): what "
                          "the model was sent is not in it")
    said = raw.strip()
    parsed: Any = None
    if said.startswith("- role:"):
        parsed = _yaml(raw)
    elif said[:1] == "[":
        try:
            parsed = json.loads(raw)
        except ValueError:
            parsed = None
    if isinstance(parsed, list) and parsed and all(
            isinstance(m, dict) and isinstance(m.get("role"), str) for m in parsed):
        return parsed
    if not said:
        notes.append(f"{where}: its prompt is empty (the provider built its request from "
                     "the test's vars, which the file does not keep as sent)")
    return [{"role": "user", "content": raw}]


def _yaml(text: str) -> Any:
    """A YAML prompt (promptfoo reads one starting ``- role:`` as its messages), read
    safely: None for one that is no YAML, or that holds aliases or nesting a list of
    messages has no need of (a "billion laughs" repeats its anchors)."""
    import yaml

    depth = 0
    try:
        for ev in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(ev, yaml.AliasEvent):
                return None
            if isinstance(ev, yaml.CollectionStartEvent):
                depth += 1
                if depth > _YAML_DEPTH:
                    return None
            elif isinstance(ev, yaml.CollectionEndEvent):
                depth -= 1
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return None


_YAML_DEPTH = 20


# -- the answer -----------------------------------------------------------------------------
def _call(item: Any, *, typed: bool = False) -> dict[str, Any] | None:
    """A tool call as promptfoo's providers give one, in the OpenAI form: OpenAI's own
    (``{id, type: function, function}``), a legacy ``function_call`` (``{name,
    arguments}``), an Anthropic ``tool_use`` block, a Responses API ``function_call``
    item, a Gemini ``functionCall``; None for anything else. ``typed``: only what says
    it is a call (its ``type``), as a text's JSON line must to be one."""
    if not isinstance(item, dict):
        return None
    fn = item.get("function")
    if isinstance(fn, dict) and isinstance(fn.get("name"), str) and (
            not typed or item.get("type") == "function"):
        return {**item, "type": "function"}
    if item.get("type") == "tool_use" and isinstance(item.get("name"), str):
        return _openai_call(item.get("id"), item["name"], item.get("input", {}))
    if item.get("type") == "function_call" and isinstance(item.get("name"), str):
        return _openai_call(item.get("call_id") or item.get("id"), item["name"],
                            item.get("arguments", "{}"))
    gemini = item.get("functionCall")
    if typed:
        return None
    if isinstance(gemini, dict) and isinstance(gemini.get("name"), str):
        return _openai_call(gemini.get("id"), gemini["name"], gemini.get("args", {}))
    if set(item) <= {"name", "arguments"} and isinstance(item.get("name"), str) \
            and "arguments" in item:
        return _openai_call(None, item["name"], item["arguments"])
    return None


def _openai_call(call_id: Any, name: str, args: Any) -> dict[str, Any]:
    return {**({"id": call_id} if isinstance(call_id, str) and call_id else {}),
            "type": "function", "function": {
                "name": name, "arguments": args if isinstance(args, str)
                else json.dumps(args, ensure_ascii=False)}}


def _calls_in_text(text: str) -> tuple[str, list[dict[str, Any]]]:
    """A text answer's tool calls promptfoo wrote into it as JSON, one a line (its
    Anthropic provider joins a message's text and ``tool_use`` blocks so), and the text
    without them."""
    kept: list[str] = []
    calls: list[dict[str, Any]] = []
    for line in text.split("\n"):
        call = None
        if line.startswith("{") and line.endswith("}"):
            try:
                call = _call(json.loads(line), typed=True)
            except ValueError:
                call = None
        if call is None:
            kept.append(line)
        else:
            calls.append(call)
    return ("\n".join(kept).strip("\n") if calls else text), calls


def _answer(output: Any, where: str, notes: list[str]) -> dict[str, Any]:
    """``response.output`` as the assistant's message."""
    if isinstance(output, str):
        text, calls = _calls_in_text(output)
        if calls:
            notes.append(f"{where}: its output holds {len(calls)} tool call(s) as JSON text "
                         "(as promptfoo writes them): read as the answer's calls")
        return {"role": "assistant", "content": text or None if calls else text,
                **({"tool_calls": calls} if calls else {})}
    if isinstance(output, dict):
        if "tool_calls" in output or "function_call" in output \
                or output.get("role") == "assistant":
            return {**output, "role": "assistant"}  # (an OpenAI message: its text, calls)
        call = _call(output)
        if call is not None:
            return {"role": "assistant", "content": None, "tool_calls": [call]}
        return {"role": "assistant", "content": output}  # (a structured output, noted)
    if isinstance(output, list) and output:
        calls = [c for c in map(_call, output) if c is not None]
        if len(calls) == len(output):
            return {"role": "assistant", "content": None, "tool_calls": calls}
    notes.append(f"{where}: its output is {type(output).__name__} JSON, not a text: "
                 "stored as its JSON text")
    return {"role": "assistant", "content": json.dumps(output, ensure_ascii=False)}


def _usage(result: dict[str, Any], response: dict[str, Any], where: str,
           notes: list[str]) -> dict[str, Any] | None:
    """The call's usage in OpenAI's spelling, from its ``tokenUsage`` (the response's,
    else the result's, whose ``assertions`` are the graders')."""
    raw = response.get("tokenUsage")
    if not isinstance(raw, dict) or not raw:
        raw = result.get("tokenUsage")
    if not isinstance(raw, dict):
        return None
    prompt, completion = count_of(raw.get("prompt")), count_of(raw.get("completion"))
    total, cached = count_of(raw.get("total")), count_of(raw.get("cached"))
    if response.get("cached") is True:
        notes.append(f"{where}: answered from promptfoo's cache (the call was made by an "
                     "earlier eval): "
                     + ("its usage is that call's" if prompt is not None and completion
                        is not None else f"its token counts are that call's total only "
                        f"({total if total is not None else cached}): usage unknown"))
    elif cached:
        notes.append(f"{where}: its tokenUsage.cached ({cached}: tokens promptfoo served "
                     "from its cache) not imported")
    if prompt is None or completion is None:
        if response.get("cached") is not True and any(
                v is not None for k, v in raw.items() if k != "assertions"):
            notes.append(f"{where}: its tokenUsage gives no prompt and completion counts "
                         f"({shortened(json.dumps(raw, sort_keys=True), 80)}): usage unknown")
        return None
    details = _dict(raw.get("completionDetails"))
    reasoning = count_of(details.get("reasoning"))
    read, written = (count_of(details.get("cacheReadInputTokens")),
                     count_of(details.get("cacheCreationInputTokens")))
    usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion}
    if total is not None:
        usage["total_tokens"] = total
    done = {"reasoning_tokens": reasoning,
            "accepted_prediction_tokens": count_of(details.get("acceptedPrediction")),
            "rejected_prediction_tokens": count_of(details.get("rejectedPrediction"))}
    if any(done.values()):
        usage["completion_tokens_details"] = {k: v for k, v in done.items() if v}
    if read or written:
        usage["prompt_tokens_details"] = {
            **({"cached_tokens": read} if read else {}),
            **({"cache_write_tokens": written} if written else {})}
    if total is not None and total > prompt + completion and not reasoning and not read:
        notes.append(f"{where}: its tokenUsage total ({total}) is {total - prompt - completion}"
                     f" more than its prompt ({prompt}) and completion ({completion}) "
                     "tokens: counted in neither (a model's thinking, for one), not in its "
                     "usage")
    return usage


def _verdict(result: dict[str, Any], where: str, notes: list[str]) -> None:
    """promptfoo's grading of the answer, and its cost: noted, not imported (the graders'
    own calls, whose tokens it counts, are not this call)."""
    grading = result.get("gradingResult")
    if isinstance(grading, dict):
        passed = grading.get("pass")
        said = "passed" if passed is True else "failed" if passed is False else "graded"
        score = grading.get("score")
        if isinstance(score, int | float) and not isinstance(score, bool):
            said += f", score {round(score, 3)}"
        reason = grading.get("reason")
        if isinstance(reason, str) and reason:
            said += f": {shortened(reason, 80)!r}"
        used = _dict(grading.get("tokensUsed"))
        total = count_of(used.get("total"))
        graders = ""
        if total:
            parts = [f"{used[k]} {k}" for k in ("prompt", "completion", "cached")
                     if count_of(used.get(k))]
            graders = (f"; its graders' own model calls used {total} tokens"
                       + (f" ({', '.join(parts)})" if parts else "")
                       + ", not this call's")
        notes.append(f"{where}: promptfoo's grading of the answer ({said}) not imported"
                     + graders)
    cost = _dict(result.get("response")).get("cost", result.get("cost"))
    if isinstance(cost, int | float) and not isinstance(cost, bool) and cost > 0:
        notes.append(f"{where}: its cost ({cost:.6g}, as promptfoo priced it) not imported")


def _as_chat(obj: dict[str, Any], where: str, notes: list[str]) -> dict[str, Any]:
    """The result as the chat completion it was (see the module's docstring)."""
    pid, _ = _provider(obj, where)
    request: dict[str, Any] = {"messages": _messages(obj, where, notes)}
    model = provider_model(pid)
    if model is not None:
        request["model"] = model
    record: dict[str, Any] = {"request": request}
    response = obj.get("response")
    error = obj.get("error")
    if response is not None and not isinstance(response, dict):
        raise fail(where, f"a result's response must be an object, got "
                          f"{shortened(repr(response), 80)}")
    response = response or {}
    if response.get("error"):  # (the provider failed: promptfoo's failureReason 2)
        record["error"] = response["error"]
        if response.get("output") is not None:
            notes.append(f"{where}: its output beside the provider's error ("
                         f"{shortened(json.dumps(response['output'], ensure_ascii=False), 60)})"
                         " not imported")
        return record
    output = response.get("output")
    if output is None:
        reason = obj.get("failureReason")
        if obj.get("response") is None and (reason == _ASSERT or obj.get("success") is True
                                      or not error):
            raise fail(where, "the result keeps no response: its answer is not in the file")
        record["error"] = error or "the provider answered no output"
        return record
    if isinstance(output, str) and output in _STRIPPED:
        raise fail(where, f"its answer was stripped from the file ({_STRIPPED[output]}): "
                          "what the model answered is not in it")
    answered: dict[str, Any] = {"choices": [{"message": _answer(output, where, notes),
                                             "finish_reason": response.get("finishReason")}]}
    raw = response.get("raw")
    said = raw.get("model") or raw.get("modelVersion") if isinstance(raw, dict) else None
    if isinstance(said, str) and said:
        answered["model"] = said  # (the provider's own response: the model that answered)
    usage = _usage(obj, response, where, notes)
    if usage is not None:
        answered["usage"] = usage
    if response.get("isRefusal") is True:
        notes.append(f"{where}: promptfoo read the answer as a refusal")
    record["response"] = answered
    return record


def _read(record: Record) -> list[Exchange]:
    obj, where = record.obj, record.where
    notes: list[str] = []
    ex = chat_exchange(_as_chat(obj, where, notes), where, record.index, notes)
    pid, label = _provider(obj, where)
    ex.tools = None  # (a result keeps the tools offered nowhere: not "none offered")
    ex.params_known = False  # (nor the parameters sent)
    ex.requested_model = pid  # (its provider, as the eval asked for it)
    if provider_model(pid) is None:
        ex.notes.append(f"{where}: its provider {shortened(pid, 60)!r} names no model (a "
                        "program or service promptfoo called): the model is not recorded")
    if label is not None:
        ex.request_fields = {**ex.request_fields, "provider_label": label}
    _verdict(obj, where, ex.notes)
    _date(ex, obj, where)
    return [ex]


def _date(ex: Exchange, obj: dict[str, Any], where: str) -> None:
    """promptfoo keeps no time of a call: the eval's, a microsecond apart in the file's
    order, its ``latencyMs`` the call's duration (noted)."""
    ctx = _dict(obj.get(KEY))
    when, order = ctx.get("time"), ctx.get("order")
    if ctx.get("table") is True:
        ex.notes.append(f"{where}: read from the eval's table (the file keeps no results): "
                        "its prompt and answer as the table shows them")
    if not (isinstance(when, list | tuple) and len(when) == 2 and isinstance(when[0], str)):
        return
    what, value = when
    at: datetime | None = iso_time(value, where, what) if isinstance(value, str) \
        else from_unix(value, where, what)
    assert at is not None
    at += timedelta(microseconds=order if type(order) is int and order >= 0 else 0)
    took = obj.get("latencyMs", _dict(obj.get("response")).get("latencyMs"))
    ms = took if isinstance(took, int | float) and not isinstance(took, bool) \
        and 0 <= took < 1e9 else None
    ex.started_at, ex.finished_at = at, at + timedelta(milliseconds=ms or 0)
    ex.notes.append(f"{where}: promptfoo keeps no time of its own: dated by the eval's "
                    f"({what} {shortened(str(value), 40)}), in the file's order"
                    + (f"; its latencyMs ({took}) taken as its duration" if ms is not None
                       else ""))


FORMAT = RecordFormat("promptfoo", 21, lambda r: KEY in r.obj or is_result(r.obj), _read)
