"""τ-bench's results (sierra-research/tau-bench, ``tau_bench/run.py``: the checkpoint
file ``<strategy>-<model>-<temperature>_range_…_user-…json`` and its historical
trajectories): a JSON array of episodes, each an ``EnvRunResult`` — ``{"task_id",
"reward", "info", "traj", "trial"}``. An episode's ``traj`` is the agent's whole
conversation as OpenAI chat messages (``ToolCallingAgent.solve``: the system message
its policy, the user simulator's turns as the user's, each answer with its tool calls,
each tool result): every call of the agent was sent the messages before its answer
(``completion(messages=messages, tools=self.tools_info, temperature=…)``), so each
assistant message is one run whose prompt is rebuilt as those messages (noted on each).

The file keeps neither the agent's model nor its temperature (both in the run's config
and the file's name only), nor the tools offered (the environment's ``tools_info``),
nor any usage or time: unknown, noted once. The user's turns are the user simulator's
answers — its model calls are not in the file (``info.user_cost`` is their cost),
noted once. Each episode is a thread of its own (``tau-bench/<task_id>/<trial>``); its
``reward`` and ``info`` (the task, the grading) are τ-bench's verdict, not a call:
noted, not imported. An episode that failed (an empty ``traj``, ``info.error``) or
holds no answer is a note, and the rest of the file imports; a message that cannot be
read ends its episode's calls there (the later prompts hold it), noted."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from memory_core.importers.common import Exchange, fail, shortened
from memory_core.importers.formats import Record, RecordFormat
from memory_core.importers.formats.chat import chat_exchange

KEY = "tau_bench_call"  # a call of an episode, as ``tau_bench_results`` gives it
_KEYS = frozenset(("task_id", "reward", "info", "traj", "trial"))
REBUILT = ("its prompt is rebuilt from the episode's trajectory as τ-bench's agent sends "
           "it (every message before the answer)")
UNKNOWN = ("τ-bench's results keep neither the agent's model and temperature (the run's "
           "config and the file's name hold them) nor the tools offered (the "
           "environment's) nor any usage or time: all unknown")
SIMULATED = ("the user's messages are τ-bench's user simulator's answers (for its act and "
             "react agents, also the tools' outputs): the simulator's own model calls are "
             "not in the file")
FIRST_CALL_ONLY = ("τ-bench's tool-calling agent runs and keeps only the first tool call "
                   "of an answer (tau_bench/agents/tool_calling_agent.py): any others the "
                   "model made are not in the file")


def is_episode(obj: Any) -> bool:
    """An episode of τ-bench's results: its task, its trajectory (a list), and no key
    an ``EnvRunResult`` does not have."""
    return isinstance(obj, dict) and {"task_id", "traj"} <= set(obj) <= _KEYS \
        and isinstance(obj["traj"], list)


@dataclass(frozen=True)
class _Call:
    """A call of an episode (``tau_bench_results``): the messages sent, the answer, the
    episode's thread, and what to note of the file or the episode once."""

    sent: tuple[Any, ...]
    answer: dict[str, Any]
    thread: str
    notes: tuple[str, ...]


def tau_bench_results(docs: Iterable[tuple[str, Any]]) -> Iterator[tuple[str, Any]]:
    """The documents, a τ-bench episode given as its calls (each named by its answer,
    ``item 1: traj[2]``); an episode with no call to import comes as its error;
    anything else as it is."""
    first = True
    for where, obj in docs:
        if not is_episode(obj):
            yield where, obj
            continue
        yield from _calls(where, obj, (UNKNOWN, SIMULATED) if first else ())
        first = False


def _verdict(obj: dict[str, Any]) -> str:
    """What the episode's note says of its grading, not imported."""
    info = obj.get("info")
    keys = ", ".join(sorted(str(k) for k in info)) if isinstance(info, dict) else None
    said = [f"reward ({obj['reward']!r})" if "reward" in obj else None,
            f"info ({keys})" if keys else None]
    return (f"the episode's {' and '.join(s for s in said if s)} not imported: τ-bench's "
            "task and grading, no model call")


def _calls(where: str, obj: dict[str, Any], first: tuple[str, ...]
           ) -> Iterator[tuple[str, Any]]:
    traj: list[Any] = obj["traj"]
    task, trial = obj.get("task_id"), obj.get("trial")
    if not traj:
        info = obj.get("info")
        error = info.get("error") if isinstance(info, dict) else None
        yield where, fail(where, "an episode with an empty trajectory: " + (
            f"τ-bench's run of task {task!r} failed ({shortened(str(error), 200)})"
            if error is not None else "no model call"))
        return
    notes = [*first, _verdict(obj)]
    if any(isinstance(m, dict) and m.get("role") == "assistant" and m.get("tool_calls")
           for m in traj) and first:
        notes.append(FIRST_CALL_ONLY)
    thread = f"tau-bench/{json.dumps(task)}/{json.dumps(trial)}"
    last = max((i for i, m in enumerate(traj) if isinstance(m, dict)
                and m.get("role") == "assistant"), default=-1)
    answered = False
    for i, message in enumerate(traj):
        at = f"{where}: traj[{i}]"
        if not (isinstance(message, dict) and isinstance(message.get("role"), str)):
            later = sum(isinstance(m, dict) and m.get("role") == "assistant"
                        for m in traj[i + 1:])
            yield at, fail(at, "a message must be an object with its 'role', got "
                               f"{shortened(repr(message), 80)}: the episode's "
                               f"{later} later call(s), whose prompts hold it, not imported")
            return
        if message["role"] == "assistant":
            if i == last < len(traj) - 1:
                notes.append(_after(traj[i + 1:]))
            yield at, {KEY: _Call(tuple(traj[:i]), message, thread, tuple(notes))}
            notes, answered = [], True
    if not answered:
        yield where, fail(where, f"an episode of task {task!r} with no answer of the agent "
                                 "in its trajectory: no model call")


def _after(rest: list[Any]) -> str:
    """The note of the messages after an episode's last answer, sent in no call."""
    roles = ", ".join(str(m.get("role")) if isinstance(m, dict) else "?" for m in rest)
    end = rest[-1].get("content") if isinstance(rest[-1], dict) else None
    stop = "; the user simulator's '###STOP###' ends an episode" \
        if isinstance(end, str) and "###STOP###" in end else ""
    return (f"the episode's {len(rest)} message(s) after its last answer ({roles}{stop}) "
            "were sent in no call: not imported")


def _read(record: Record) -> list[Exchange]:
    call, where = record.obj[KEY], record.where
    if not call.sent:
        raise fail(where, "an answer before any message: no request was sent")
    notes = [f"{where}: {n}" for n in call.notes] + [f"{where}: {REBUILT}"]
    chat = {"request": {"messages": list(call.sent)},
            "response": {"choices": [{"message": call.answer}]}}
    ex = chat_exchange(chat, where, record.index, notes)
    ex.thread_key = call.thread
    ex.tools = None  # (not kept: not "none offered")
    ex.params_known = False  # (nor the temperature sent)
    return [ex]


FORMAT = RecordFormat("tau-bench", 25, lambda r: isinstance(r.obj.get(KEY), _Call), _read)
