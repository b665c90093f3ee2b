"""The OpenAI Agents SDK's run result dumped to JSON (``RunResult``: ``input``,
``final_output``, ``raw_responses`` — each model call's ``ModelResponse``, its
``output`` items, ``usage`` and ``response_id`` (``referenceable_id``) — and
``new_items``): each raw response is one Responses API call, read as the record it is
equivalent to. Call k's input is the run's input, then what the calls before it output
and the tool results among the run's items that answer their calls; the result keeps
no instructions, model name or tools offered."""

from __future__ import annotations

from typing import Any

from memory_core.importers.common import Exchange, fail
from memory_core.importers.formats import Record, RecordFormat
from memory_core.importers.formats.responses import ServerHistory, responses_exchange


def _matches(record: Record) -> bool:
    obj = record.obj
    return record.api is None and "request" not in obj and "input" in obj \
        and isinstance(obj.get("raw_responses"), list)


def _input_items(raw: Any, where: str) -> list[Any]:
    if isinstance(raw, str):
        return [{"role": "user", "content": raw}]
    if isinstance(raw, list):
        return list(raw)
    raise fail(where, f"'input' must be a text or a list of input items, got "
                      f"{type(raw).__name__}")


def _results(items: Any) -> dict[str, dict[str, Any]]:
    """The tool results among the run's ``new_items`` by call id: a
    ``function_call_output`` item, itself or as a run item's ``raw_item``."""
    out: dict[str, dict[str, Any]] = {}
    for item in items if isinstance(items, list) else []:
        raw = item.get("raw_item", item) if isinstance(item, dict) else None
        if isinstance(raw, dict) and raw.get("type") == "function_call_output" \
                and isinstance(raw.get("call_id"), str):
            out[raw["call_id"]] = raw
    return out


def _read(record: Record) -> list[Exchange]:
    obj, where = record.obj, record.where
    held: ServerHistory = record.state("responses", ServerHistory)
    sent = _input_items(obj["input"], where)
    results = _results(obj.get("new_items"))
    out: list[Exchange] = []
    for k, resp in enumerate(obj["raw_responses"]):
        label = f"{where} response {k}"
        if not isinstance(resp, dict) or not isinstance(resp.get("output"), list):
            raise fail(label, "a raw response must be an object with an 'output' list, got "
                              f"{str(resp)[:80]!r}")
        rid = resp.get("response_id", resp.get("referenceable_id"))
        body = {"object": "response", "status": "completed", "output": resp["output"],
                **({"usage": resp["usage"]} if isinstance(resp.get("usage"), dict) else {}),
                **({"id": rid} if isinstance(rid, str) else {})}
        ex = responses_exchange({"request": {"input": list(sent)}, "response": body},
                                label, record.index + len(out), held)
        ex.tools = None  # (not in the run result: not "none offered")
        ex.params_known = False  # (nor the parameters sent)
        out.append(ex)
        # the next call is sent this one's output, and the results of its calls
        sent += resp["output"]
        for item in resp["output"]:
            call = item.get("call_id") if isinstance(item, dict) \
                and item.get("type") == "function_call" else None
            if call is None:
                continue
            if call in results:
                sent.append(results[call])
            elif k + 1 < len(obj["raw_responses"]):
                ex.notes.append(f"{label}: the result of call {call!r} is not among the "
                                "run's items: the next call's input lacks it")
    if not out:
        raise fail(where, "the run result holds no raw response (no model call)")
    return out


FORMAT = RecordFormat("agents-run", 115, _matches, _read)
