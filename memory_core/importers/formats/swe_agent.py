"""SWE-agent's trajectories (``*.traj``: one JSON file per task, ``{"environment",
"trajectory": [step…], "history": [message…], "info": {…, "model_stats"},
"replay_config"}``) and mini-swe-agent's (``*.traj.json``: ``{"info", "messages",
"trajectory_format": "mini-swe-agent-1.1"}``), each call turned into the chat
completion it was (``agent_trajectories``) and read as one.

SWE-agent: ``history`` is the agent's transcript, which its history processors trim
before each call (old observations elided): not what a call was sent. What each step
was sent is kept with the step from 1.1 on, as its ``query`` (``step.query =
copy.deepcopy(history)`` before ``self.model.query(history)``, sweagent/agent/agents.py):
one run per step, its query the request. SWE-agent 1.0 kept instead each step's
``messages``: ``self.messages`` once the step was added to the history, which the next
step is sent (``forward_with_handling(self.messages)``) — so a step's request is the
messages of the step before, unless that one was requeried (its answer not kept, the
next one sent it with an error message no step keeps), and the first step's request is
kept by no step. A trajectory that keeps neither is refused. A step's answer is its
``response`` with the tool calls of its message in ``history``; the model the one
``replay_config`` names; SWE-agent counts usage only for the whole task
(``info.model_stats``), and keeps no times: the runs keep the file's order, undated.

mini-swe-agent sends its whole list of messages each call (``self.model.query(
self.messages)``, agents/default.py; less each message's ``extra``): each assistant
message is a call, every message before it its request, its ``extra.response`` (the
API's answer, with its usage and time) the response."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from memory_core.importers.common import Exchange, fail, shortened
from memory_core.importers.formats import Record, RecordFormat
from memory_core.importers.formats.chat import chat_exchange

KEY = "agent_trajectory_call"  # a call of a trajectory, as ``agent_trajectories`` gives it

REFUSED = ("a SWE-agent trajectory whose steps do not keep what the model was sent: its "
           "'history' is the agent's transcript, which SWE-agent's history processors "
           "trim before each call (old observations elided), not what each call was sent; "
           "SWE-agent keeps that with each step from 1.0 on (a step's 'messages' in 1.0, "
           "its 'query' from 1.1)")
PREVIOUS = ("its request is the messages kept with the step before (SWE-agent 1.0 keeps "
            "with each step the history after it, which the next step is sent)")
REBUILT = "rebuilt from the transcript; mini-swe-agent sends its whole history each call"
# what a model's config may set that is sent with each call (litellm passes these on to
# the provider; its own options, ``drop_params``, ``num_retries``, … are not sent)
SENT_PARAMS = frozenset((
    "temperature", "top_p", "max_tokens", "max_completion_tokens", "seed", "stop", "n",
    "presence_penalty", "frequency_penalty", "logit_bias", "parallel_tool_calls",
    "reasoning_effort", "response_format", "tool_choice", "logprobs", "top_logprobs",
    "service_tier", "top_k", "thinking"))


def _is_swe_agent(obj: Any) -> bool:
    """A SWE-agent trajectory: its steps and its history, or a history alone (as its
    demonstrations keep it: messages marked with their agent or message type)."""
    if not isinstance(obj, dict) or not isinstance(obj.get("history"), list):
        return False
    if isinstance(obj.get("trajectory"), list):
        return True
    history = obj["history"]
    return set(obj) <= {"history", "info", "environment", "replay_config"} and bool(
        history) and all(isinstance(m, dict) and "role" in m and (
            "message_type" in m or "agent" in m) for m in history)


def _is_mini(obj: Any) -> bool:
    fmt = obj.get("trajectory_format") if isinstance(obj, dict) else None
    return isinstance(fmt, str) and fmt.startswith("mini-swe-agent") and isinstance(
        obj.get("messages"), list)


def agent_trajectories(docs: Iterable[tuple[str, Any]]) -> Iterator[tuple[str, Any]]:
    """The documents, a SWE-agent or mini-swe-agent trajectory given as its calls (each
    named by its step, ``trajectory[3]``, or its message, ``messages[4]``); a call whose
    request is not kept comes as its error."""
    for where, obj in docs:
        if _is_mini(obj):
            yield from _mini_calls(where, obj)
        elif _is_swe_agent(obj):
            yield from _swe_agent_calls(where, obj)
        else:
            yield where, obj


# -- SWE-agent ------------------------------------------------------------------------------
def _dict(obj: Any, *keys: str) -> dict[str, Any]:
    """``obj[keys[0]][keys[1]]…`` when each is an object (``replay_config`` may be kept as
    its JSON text), else {}."""
    for key in keys:
        obj = obj.get(key) if isinstance(obj, dict) else None
        if isinstance(obj, str):
            try:
                obj = json.loads(obj)
            except ValueError:
                return {}
    return obj if isinstance(obj, dict) else {}


def _totals(obj: dict[str, Any]) -> str:
    stats = _dict(obj, "info", "model_stats")
    said = ", ".join(f"{k} {stats[k]}" for k in ("api_calls", "tokens_sent", "tokens_received",
                                                   "instance_cost") if k in stats)
    return ("SWE-agent counts usage only for the whole task"
            + (f" (info.model_stats: {said})" if said else "") + ": no call's own is known")


def _kept_answers(history: list[Any], steps: list[Any]) -> list[dict[str, Any] | None]:
    """Each step's answer as ``history`` keeps it (with its tool calls), matched by its
    text in order; None for a step whose answer it does not keep (a requeried one)."""
    kept = [m for m in history if isinstance(m, dict) and m.get("role") == "assistant"
            and not m.get("is_demo")]
    out: list[dict[str, Any] | None] = []
    at = 0
    for step in steps:
        said = step.get("response") if isinstance(step, dict) else None
        found = next((i for i in range(at, len(kept)) if kept[i].get("content") == said),
                     None) if isinstance(said, str) else None
        out.append(None if found is None else kept[found])
        at = at if found is None else found + 1
    return out


def _went_on(steps: list[Any], k: int) -> bool:
    """Whether step ``k`` of a 1.0 trajectory was kept in the history before its messages
    were (its answer ends them, and they grew): the next step was sent them."""
    step = steps[k]
    messages = step.get("messages") if isinstance(step, dict) else None
    if not isinstance(messages, list):
        return True  # (its own record says what is wrong with it)
    answers = [m for m in messages if isinstance(m, dict) and m.get("role") == "assistant"]
    before = steps[k - 1].get("messages") if k and isinstance(steps[k - 1], dict) else []
    grew = not isinstance(before, list) or len(messages) > len(before)
    return bool(answers) and answers[-1].get("content") == step.get("response") and grew


def _swe_agent_calls(where: str, obj: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    steps: list[Any] = obj.get("trajectory") or []
    kinds = {k for s in steps if isinstance(s, dict) for k in ("query", "messages") if k in s}
    if not kinds:
        yield where, fail(where, REFUSED)
        return
    kind = "query" if "query" in kinds else "messages"
    model = _dict(obj, "replay_config", "agent", "model")
    name = model.get("name") if isinstance(model.get("name"), str) else None
    first = [_totals(obj)]
    if name is None:
        first.append("the model is not recorded (no replay_config names it)")
    elif name == "replay":
        first.append("the model is SWE-agent's 'replay': it answered with the actions of a "
                     "recorded run, no language model was called")
    params = _config_params(model, first) if name not in (None, "replay") else None
    answers = _kept_answers(obj["history"], steps)
    for k, step in enumerate(steps):
        at = f"{where}: trajectory[{k}]"
        if not isinstance(step, dict):
            yield at, fail(at, f"a step must be an object, got {type(step).__name__}")
            continue
        notes: list[str] = []
        if kind == "query":
            sent = step.get("query")
        elif k == 0:
            yield at, fail(at, "what the first step was sent is kept by no step (SWE-agent "
                               "1.0 keeps with each step the history after it, which the "
                               "next step is sent)")
            continue
        elif not _went_on(steps, k - 1):
            yield at, fail(at, "what it was sent is kept by no step: the step before was "
                               "requeried, and this one sent its answer back with an error "
                               "message (SWE-agent 1.0 keeps with each step the history "
                               "after it)")
            continue
        else:
            previous = steps[k - 1]
            sent = previous.get("messages") if isinstance(previous, dict) else None
            notes.append(PREVIOUS)
        yield at, {**step, KEY: {
            "sent": sent, "response": step.get("response"), "kept": answers[k],
            "model": name, "system_as_user": model.get("convert_system_to_user") is True,
            "params": params, "notes": first + notes}}
        first = []


def _config_params(model: dict[str, Any], notes: list[str]) -> dict[str, Any] | None:
    """What SWE-agent sends with each call from its model config (``replay_config.agent
    .model``): its ``temperature`` and ``top_p``, a ``stop`` list that is not empty, and
    its ``completion_kwargs``; None when the config sets none of them."""
    if not any(k in model for k in ("temperature", "top_p", "completion_kwargs")):
        return None
    config: dict[str, Any] = {k: model[k] for k in ("temperature", "top_p") if k in model}
    if model.get("stop"):
        config["stop"] = model["stop"]
    kwargs = model.get("completion_kwargs")
    if isinstance(kwargs, dict):
        config.update(kwargs)
    return _sent_params(config, "replay_config.agent.model", notes)


def _sent_params(config: dict[str, Any], source: str, notes: list[str]) -> dict[str, Any]:
    """The parameters of a model config that each call sends (``SENT_PARAMS``), the
    config's other settings noted as not read; a note says where they came from."""
    sent = {k: v for k, v in config.items() if k in SENT_PARAMS and v is not None}
    other = sorted(k for k in config if k not in SENT_PARAMS)
    notes.append(f"each call's parameters as the trajectory's config sets them ({source})"
                 + (f"; its other settings ({', '.join(other)}) not read as sent"
                    if other else ""))
    return sent


def _params(ctx: dict[str, Any]) -> dict[str, Any]:
    params = ctx.get("params")
    return params if isinstance(params, dict) else {}


def _sent_message(item: Any, at: str, system_as_user: bool, notes: list[str]
                  ) -> dict[str, Any]:
    """A history item as SWE-agent sends it (``_history_to_messages``, models.py): its
    role and content, a tool message's first call id, an answer's tool calls."""
    if not isinstance(item, dict) or not isinstance(item.get("role"), str) \
            or "content" not in item:
        raise fail(at, "a message must be an object with its 'role' and 'content', got "
                       f"{shortened(repr(item), 80)}")
    role = "user" if item["role"] == "system" and system_as_user else item["role"]
    if role == "tool":
        ids = item.get("tool_call_ids")
        if not isinstance(ids, list) or not ids or not isinstance(ids[0], str):
            raise fail(at, "a tool message needs its 'tool_call_ids', got "
                           f"{shortened(repr(ids), 80)}")
        return {"role": role, "content": item["content"], "tool_call_id": ids[0]}
    out = {"role": role, "content": item["content"]}
    if item.get("tool_calls") is not None:
        out["tool_calls"] = item["tool_calls"]
    if item.get("thinking_blocks"):
        notes.append(f"{at}: its thinking blocks not imported")
    return out


def _swe_agent_chat(ctx: dict[str, Any], where: str, notes: list[str]) -> dict[str, Any]:
    sent, said = ctx.get("sent"), ctx.get("response")
    if not isinstance(sent, list):
        raise fail(where, "a step needs the messages it was sent (a list), got "
                          f"{shortened(repr(sent), 80)}")
    if sent and all(isinstance(m, dict) and "role" not in m for m in sent):
        # (StepOutput's default query, [{}]: SWE-agent's own exit after an error)
        raise fail(where, f"no model call: SWE-agent's own step ({shortened(repr(said), 80)})"
                          ", its query empty")
    if not isinstance(said, str):
        raise fail(where, f"a step's 'response' must be a text, got {shortened(repr(said), 80)}")
    system_as_user = ctx.get("system_as_user") is True
    if system_as_user:
        notes.append(f"{where}: its system messages sent as the user's "
                     "(convert_system_to_user)")
    messages = [_sent_message(m, f"{where}: message {i}", system_as_user, notes)
                for i, m in enumerate(sent)]
    kept = ctx.get("kept")
    answer: dict[str, Any] = {"role": "assistant", "content": said}
    if isinstance(kept, dict) and kept.get("tool_calls") is not None:
        answer["tool_calls"] = kept["tool_calls"]
    elif kept is None:
        notes.append(f"{where}: its answer is not kept in the history (requeried): its tool "
                     "calls, if any, not recorded")
    request: dict[str, Any] = {"messages": messages, **_params(ctx)}
    if isinstance(ctx.get("model"), str):
        request["model"] = ctx["model"]
    return {"request": request, "response": {"choices": [{"message": answer}]}}


# -- mini-swe-agent -------------------------------------------------------------------------
def _mini_calls(where: str, obj: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    config = _dict(obj, "info", "config", "model")
    model = config.get("model_name")
    first = [] if isinstance(model, str) else [
        "the model is not recorded (info.config.model names none)"]
    kwargs = config.get("model_kwargs")
    params = _sent_params(kwargs, "info.config.model.model_kwargs", first) \
        if isinstance(kwargs, dict) else None
    sent: list[Any] = []
    for i, message in enumerate(obj["messages"]):
        at = f"{where}: messages[{i}]"
        role = message.get("role") if isinstance(message, dict) else None
        extra = message.get("extra") if isinstance(message, dict) else None
        if role == "exit":
            continue  # (ends the run: never sent)
        if role == "assistant":
            yield at, {**message, KEY: {"sent": list(sent), "model": model, "mini": True,
                                        "params": params, "notes": first}}
            first = []
        elif isinstance(extra, dict) and extra.get("interrupt_type") == "FormatError" \
                and "response" in extra:
            yield at, fail(at, "a call whose answer mini-swe-agent could not parse: only "
                               "its format error is kept in the messages")
        sent.append(message)


def _mini_message(item: Any, at: str) -> dict[str, Any]:
    """A message as mini-swe-agent sends it: without its ``extra``."""
    if not isinstance(item, dict):
        raise fail(at, f"a message must be an object, got {shortened(repr(item), 80)}")
    return {k: v for k, v in item.items() if k != "extra"}


def _mini_chat(obj: dict[str, Any], ctx: dict[str, Any], where: str, notes: list[str]
               ) -> dict[str, Any]:
    sent = ctx.get("sent")
    if not isinstance(sent, list):
        raise fail(where, f"the messages sent must be a list, got {shortened(repr(sent), 80)}")
    notes.append(f"{where}: {REBUILT}")
    request: dict[str, Any] = {
        "messages": [_mini_message(m, f"{where}: message {i}")
                     for i, m in enumerate(sent)], **_params(ctx)}
    if isinstance(ctx.get("model"), str):
        request["model"] = ctx["model"]
    extra = obj.get("extra")
    response = extra.get("response") if isinstance(extra, dict) else None
    if not (isinstance(response, dict) and isinstance(response.get("choices"), list)):
        answer = {k: v for k, v in obj.items() if k not in (KEY, "extra")}
        response = {"choices": [{"message": answer}]}
    return {"request": request, "response": response}


def _read(record: Record) -> list[Exchange]:
    obj, where = record.obj, record.where
    ctx = obj[KEY]
    if not isinstance(ctx, dict):
        raise fail(where, f"'{KEY}' must be an object, got {type(ctx).__name__}")
    said = ctx.get("notes")
    notes = [f"{where}: {n}" for n in said if isinstance(n, str)] \
        if isinstance(said, list) else []
    chat = _mini_chat(obj, ctx, where, notes) if ctx.get("mini") is True else \
        _swe_agent_chat(ctx, where, notes)
    ex = chat_exchange(chat, where, record.index, notes)
    ex.tools = None  # (neither keeps the tools offered: not "none offered")
    ex.params_known = isinstance(ctx.get("params"), dict)  # (None: no config says)
    return [ex]


FORMAT = RecordFormat("swe-agent", 19, lambda r: KEY in r.obj, _read)
