"""ATIF trajectories (the Agent Trajectory Interchange Format of the Harbor project,
``"schema_version": "ATIF-v1.0"`` … ``"ATIF-v1.7"``, harbor-framework/harbor's RFC 0001):
``{"schema_version", "session_id", "trajectory_id", "agent": {"name", "version",
"model_name", "tool_definitions", "extra"}, "steps": [step…], "notes", "final_metrics",
"continued_trajectory_ref", "extra", "subagent_trajectories"}``, each step
``{"step_id", "timestamp", "source": "system"|"user"|"agent", "message", "model_name",
"reasoning_effort", "reasoning_content", "tool_calls": [{"tool_call_id", "function_name",
"arguments", "extra"}], "observation": {"results": [{"source_call_id", "content",
"subagent_trajectory_ref", "extra"}]}, "metrics", "llm_call_count", "is_copied_context",
"extra"}``; a message or a result's content a text or (v1.6) a list of text and image
parts (an image a file beside the trajectory, by its path).

An agent step is one model call (the spec's one-inference-per-step convention). ATIF
keeps no request: what a call was sent is rebuilt from the steps before it, as an agent
sends its history (``atif_trajectories``, noted on every run) — a system step a system
message (the leading ones the instructions), a user step the user's message, an agent
step the answer it was, its tool calls followed by its observation's results (a result
naming its call, ``source_call_id``, that call's result; one naming no call — a
non-tool action's output, as Terminus 2 records a terminal's screen — the user's
message). The answer is the step's message with its tool calls; its usage the step's
``metrics`` (``cached_tokens`` within ``prompt_tokens``, as the spec defines them); its
model the step's ``model_name``, else the agent's; the tools offered the agent's
``tool_definitions`` (v1.5; unknown before); the call ended at the step's timestamp
and began at the step's before it. A system step whose ``extra.context_management``
has the boundary ``replace`` (v1.7) is the context the calls after it start from: its
observation, as the user's. Embedded subagents (``subagent_trajectories``, v1.7) are
read alike, each its own conversation; what the file cannot say (reasoning, costs,
token ids, ``extra``, a subagent or a continuation in another file) is noted."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memory_core.errors import ImportFormatError
from memory_core.importers.common import (
    Exchange,
    fail,
    iso_time,
    names_zone,
    openai_tool_call,
    shortened,
)
from memory_core.importers.formats import Record, RecordFormat
from memory_core.importers.formats.chat import chat_exchange
from memory_core.importers.formats.fields import count_of
from memory_core.models.openai_codec import from_openai_tools

REBUILT = ("its prompt is rebuilt from the trajectory's steps before it (ATIF keeps no "
           "request): system steps as system messages, user steps as the user's, agent "
           "steps as the answers they were with their tool calls' results")
_LATEST = 7  # ATIF-v1.7: the newest version whose fields this reader knows
_VERSION = re.compile(r"^ATIF-v(\d+)\.(\d+)$")
_ROOT = frozenset(("schema_version", "session_id", "trajectory_id", "agent", "steps", "notes",
                   "final_metrics", "continued_trajectory_ref", "extra",
                   "subagent_trajectories"))
_AGENT = frozenset(("name", "version", "model_name", "tool_definitions", "extra"))
_STEP = frozenset(("step_id", "timestamp", "source", "model_name", "reasoning_effort",
                   "message", "reasoning_content", "tool_calls", "observation", "metrics",
                   "extra", "llm_call_count", "is_copied_context"))
_METRICS = frozenset(("prompt_tokens", "completion_tokens", "cached_tokens", "cost_usd",
                      "prompt_token_ids", "completion_token_ids", "logprobs", "extra"))
# what a step's ``metrics.extra`` says that the usage holds (the spec's own examples)
_READ_EXTRA = ("reasoning_tokens", "cache_creation_input_tokens", "finish_reason")


def is_trajectory(obj: Any) -> bool:
    """An ATIF trajectory: its ``ATIF-v…`` schema version and its steps."""
    version = obj.get("schema_version") if isinstance(obj, dict) else None
    return isinstance(version, str) and version.startswith("ATIF-") and "steps" in obj


@dataclass(frozen=True)
class _Call:
    """A call as ``atif_trajectories`` gives it to ``_read`` (under ``KEY``: an object no
    JSON file holds, so no file's record is taken for one): its chat-completions record
    rebuilt, and what else the trajectory says of it."""

    chat: dict[str, Any]
    tools_known: bool
    thread: str | None
    started: datetime | None
    finished: datetime | None
    notes: list[str]


KEY = "atif_call"


def atif_trajectories(docs: Iterable[tuple[str, Any]]) -> Iterator[tuple[str, Any]]:
    """The documents, an ATIF trajectory given as its calls (each named by its step,
    ``steps[3]``; an embedded subagent's ``subagent_trajectories[0]: steps[2]``); a call
    that cannot be read comes as its error."""
    for where, obj in docs:
        if is_trajectory(obj):
            yield from _Trajectory(where, obj).calls()
        else:
            yield where, obj


@dataclass
class _Said:
    """What a trajectory's steps hold that is not imported, said once for the whole
    trajectory: the keys of each kind of ``extra``, keys ATIF does not have."""

    keys: dict[str, set[str]] = field(default_factory=dict)

    def add(self, what: str, value: Any, skip: tuple[str, ...] = ()) -> None:
        if isinstance(value, dict):
            self.keys.setdefault(what, set()).update(str(k) for k in value if k not in skip)

    def unknown(self, what: str, obj: dict[str, Any], known: frozenset[str]) -> None:
        self.keys.setdefault(f"{what} (no field of ATIF up to v1.{_LATEST})", set()).update(
            str(k) for k in obj if k not in known)

    def notes(self) -> list[str]:
        return [f"{what}: {', '.join(sorted(keys))}: not imported"
                for what, keys in self.keys.items() if keys]


class _Trajectory:
    """One trajectory read into its calls (``calls``), and its embedded subagents'."""

    def __init__(self, where: str, obj: dict[str, Any], parent: str | None = None,
                 embedded: bool = False) -> None:
        self.where, self.obj, self.said = where, obj, _Said()
        agent = obj.get("agent")
        self.agent = agent if isinstance(agent, dict) else {}
        model = self.agent.get("model_name")
        self.model = model if isinstance(model, str) and model else None
        self.first: list[str] = []  # what the trajectory's first call notes
        own = obj.get("trajectory_id")
        self.id = own if isinstance(own, str) and own else None
        session = obj.get("session_id")
        self.tools: list[Any] | None = None
        if not embedded:  # (a conversation: its run's, else the document's)
            self.thread = session if isinstance(session, str) and session else self.id
        else:  # (a subagent's, within its parent's)
            own = self.id or where.rsplit(": ", 1)[-1]
            self.thread = f"{parent}/{own}" if parent else own
        subs = obj.get("subagent_trajectories")
        self.subs = subs if isinstance(subs, list) else []
        self.embedded = {s["trajectory_id"] for s in self.subs if isinstance(s, dict)
                         and isinstance(s.get("trajectory_id"), str)}

    def calls(self) -> Iterator[tuple[str, Any]]:
        where = self.where
        try:
            steps = self._head()
        except ImportFormatError as e:
            yield where, e
            return
        out: list[tuple[str, Any]] = []
        context: list[dict[str, Any]] = []
        pending: list[str] = []  # what the next call's prompt notes
        unsent: list[str] = []  # what no call has been sent yet (after the last)
        broken: list[str] = []  # steps that cannot be read, since the last call
        last_time: datetime | None = None
        for i, raw in enumerate(steps):
            at, name = f"{where}: steps[{i}]", f"steps[{i}]"
            try:
                st = _Step(raw, name, at, self)
            except ImportFormatError as e:
                problem = str(e).removeprefix(f"{at}: ")
                broken.append(f"{name} cannot be read ({problem}): left out of the prompts "
                              "after it")
                if isinstance(raw, dict) and raw.get("source") == "agent":
                    out.append((at, e))
                continue
            if st.call is not None and not context:
                out.append((at, fail(at, "what this call was sent is not in the trajectory "
                                         "(no step before it)")))
            elif st.call is not None:
                started = last_time if last_time is not None and (
                    st.when is None or last_time <= st.when) else st.when
                out.append((at, self._call(context, st, started, [*pending, *broken])))
                pending, broken, unsent = [], [], []
            else:
                pending += st.notes
                unsent.append(f"{name} ({st.source})")
            if st.boundary == "replace":  # (what came before it is sent no more)
                if unsent:
                    pending.append(f"{_listed(unsent)}: in no prompt (the context replaced "
                                   f"at {name}): not imported")
                unsent = []
            if st.results:
                unsent.append(f"{name}'s observation results")
            context = st.after(context)
            pending += st.later
            last_time = st.when or last_time
        made = [c[KEY] for _, c in out if isinstance(c, dict)]
        if made:
            made[0].notes[:0] = [*self.first, *self.said.notes()]
            if unsent:
                made[-1].notes.append(f"{_listed(unsent)}: after the trajectory's last "
                                      "call, sent in no call it holds: not imported")
            made[-1].notes.extend(broken)
        elif not out:
            out.append((where, fail(where, "an ATIF trajectory with no agent step to import: "
                                           "it holds no model call")))
        yield from out
        for k, sub in enumerate(self.subs):
            at = f"{where}: subagent_trajectories[{k}]"
            if not isinstance(sub, dict):
                yield at, fail(at, f"an embedded subagent trajectory must be an object, "
                                   f"got {shortened(repr(sub), 60)}")
                continue
            yield from _Trajectory(at, sub, self.thread, embedded=True).calls()

    def _head(self) -> list[Any]:
        """The trajectory's steps, after what its root and agent say is noted."""
        obj, where = self.obj, self.where
        version = obj.get("schema_version")
        m = _VERSION.match(version) if isinstance(version, str) else None
        if m is None or m.group(1) != "1":
            raise fail(where, f"schema_version {version!r}: this importer reads ATIF-v1.0 "
                              "to ATIF-v1.x")
        steps = obj.get("steps")
        if not isinstance(steps, list):
            raise fail(where, f"'steps' must be a list, got {shortened(repr(steps), 60)}")
        name, ver = self.agent.get("name"), self.agent.get("version")
        self.first.append(f"an {version} trajectory"
                          + (f" of agent {name!r}" if isinstance(name, str) else "")
                          + (f" {ver}" if isinstance(ver, str) else "")
                          + (f" (session {obj['session_id']})"
                             if isinstance(obj.get("session_id"), str) else "")
                          + ": each agent step a model call")
        if int(m.group(2)) > _LATEST:
            self.first.append(f"{version} is newer than ATIF-v1.{_LATEST}, the latest this "
                              "importer knows: what it adds is noted, not read")
        if not isinstance(obj.get("agent"), dict):
            self.first.append("the trajectory has no 'agent' object: its model and tools "
                              "unknown")
        self._tools()
        self.said.unknown("the trajectory's keys", obj, _ROOT)
        self.said.unknown("the agent's keys", self.agent, _AGENT)
        self.said.add("the trajectory's extra", obj.get("extra"))
        self.said.add("the agent's extra", self.agent.get("extra"))
        totals = obj.get("final_metrics")
        if isinstance(totals, dict) and totals:
            said = ", ".join(f"{k} {v}" for k, v in totals.items() if k != "extra")
            self.first.append(f"final_metrics ({said}) not imported: each call's usage is "
                              "its step's metrics")
            self.said.add("final_metrics' extra", totals.get("extra"))
        notes = obj.get("notes")
        if isinstance(notes, str) and notes:
            self.first.append(f"the trajectory's notes not imported: "
                              f"{shortened(notes, 120)!r}")
        more = obj.get("continued_trajectory_ref")
        if isinstance(more, str) and more:
            self.first.append(f"the trajectory continues in {more!r} "
                              "(continued_trajectory_ref), not this file: import it too")
        return steps

    def _tools(self) -> None:
        defs = self.agent.get("tool_definitions")
        if defs is None:
            self.first.append("the agent's tool_definitions are not recorded (ATIF-v1.5 "
                              "added them): the tools offered unknown")
            return
        try:
            from_openai_tools(defs, "agent.tool_definitions", [])
        except ImportFormatError as e:
            self.first.append(f"{e}: the tools offered unknown")
            return
        self.tools = defs

    def _call(self, context: list[dict[str, Any]], st: _Step, started: datetime | None,
              pending: list[str]) -> dict[str, Any]:
        model = st.model or self.model
        said = [] if model is not None else [
            "the model is not recorded (no model_name on the step or the agent)"]
        request: dict[str, Any] = {"messages": list(context)}
        if model is not None:
            request["model"] = model
        if self.tools is not None:
            request["tools"] = self.tools
        choice: dict[str, Any] = {"message": st.call}
        if st.finish is not None:
            choice["finish_reason"] = st.finish
        response: dict[str, Any] = {"choices": [choice]}
        if st.usage is not None:
            response["usage"] = st.usage
        if model is not None:
            response["model"] = model
        return {KEY: _Call({"request": request, "response": response},
                           self.tools is not None, self.thread, started, st.when,
                           [REBUILT, *said, *pending, *st.notes])}


def _content(value: Any, at: str, what: str) -> str | list[dict[str, Any]]:
    """A message or a result's content as the chat format's: a text, or (ATIF-v1.6) its
    text parts and images (a file's path, or a URL)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise fail(at, f"{what} must be a text or a list of parts, got "
                       f"{shortened(repr(value), 60)}")
    parts: list[dict[str, Any]] = []
    for j, part in enumerate(value):
        kind = part.get("type") if isinstance(part, dict) else None
        source = part.get("source") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            parts.append({"type": "text", "text": part["text"]})
        elif kind == "image" and isinstance(source, dict) and isinstance(
                source.get("path"), str):
            parts.append({"type": "image_url", "image_url": {"url": source["path"]}})
        else:
            raise fail(at, f"{what} part {j} is no text or image part of ATIF: "
                           f"{shortened(repr(part), 80)}")
    return parts


class _Step:
    """One step read: the messages it adds to the prompts after it (``after``), its call
    when it is one, what its call notes and what the prompts after it note."""

    def __init__(self, raw: Any, name: str, at: str, traj: _Trajectory) -> None:
        if not isinstance(raw, dict):
            raise fail(at, f"a step must be an object, got {shortened(repr(raw), 60)}")
        source = raw.get("source")
        if source not in ("system", "user", "agent"):
            raise fail(at, f"source {shortened(repr(source), 40)} is not one of system, "
                           "user, agent")
        self.name, self.at, self.source = name, at, source
        self.notes: list[str] = []  # of its call (or, no call, of the next)
        self.later: list[str] = []  # of the calls whose prompts hold it
        traj.said.unknown("steps' keys", raw, _STEP)
        extra = raw.get("extra")
        traj.said.add("steps' extra", extra, skip=("context_management",))
        self.when = self._time(raw.get("timestamp"))
        self.message = _content(raw.get("message"), at, "message")
        model = raw.get("model_name")
        self.model = model if isinstance(model, str) and model else None
        self.call: dict[str, Any] | None = None
        self.usage: dict[str, Any] | None = None
        self.finish: str | None = None  # (a metrics.extra's finish_reason)
        self.results: list[dict[str, Any]] = []
        self.boundary: str | None = None
        if source == "agent":
            self._agent(raw, traj)
        else:
            self._other(raw, extra, traj)

    def _time(self, value: Any) -> datetime | None:
        try:
            when = iso_time(value, self.at, "timestamp")
        except ImportFormatError as e:
            self.notes.append(f"{str(e).removeprefix(f'{self.at}: ')}: undated")
            return None
        if isinstance(value, str) and when is not None and not names_zone(value):
            self.notes.append(f"timestamp {value!r} names no zone: read as UTC")
        return when

    def _agent(self, raw: dict[str, Any], traj: _Trajectory) -> None:
        calls = raw.get("tool_calls")
        if calls is not None and not isinstance(calls, list):
            raise fail(self.at, f"'tool_calls' must be a list, got "
                                f"{shortened(repr(calls), 60)}")
        answer: dict[str, Any] = {"role": "assistant", "content": self.message}
        ids: list[str] = []
        if calls:
            answer["tool_calls"] = [self._tool_call(c, j, ids, traj)
                                    for j, c in enumerate(calls)]
        self.answer = answer
        self._results(raw.get("observation"), ids, traj)
        count = raw.get("llm_call_count")
        if raw.get("is_copied_context") is True:
            self.notes.append(f"{self.name} (agent) is copied from an earlier trajectory "
                              "(is_copied_context): in the prompts after it, no call of "
                              "this one")
            return
        if count == 0 and not isinstance(count, bool):
            self.notes.append(f"{self.name} (agent) is no model call (llm_call_count 0: a "
                              "deterministic dispatch): in the prompts after it")
            return
        self.call = answer
        self.usage = self._usage(raw.get("metrics"), traj)
        if isinstance(count, int) and not isinstance(count, bool) and count > 1:
            self.notes.append(f"the step stands for {count} model calls (llm_call_count), "
                              "imported as one; its metrics are their total: usage unknown")
            self.usage = None
        thought = raw.get("reasoning_content")
        if isinstance(thought, str) and thought:
            self.notes.append(f"its reasoning (reasoning_content, {len(thought):,} "
                              "characters) not imported")
        effort = raw.get("reasoning_effort")
        if effort is not None:
            self.notes.append(f"its reasoning_effort {effort!r} not imported (ATIF does "
                              "not say it was a request parameter)")

    def _tool_call(self, raw: Any, j: int, ids: list[str], traj: _Trajectory
                   ) -> dict[str, Any]:
        name = raw.get("function_name") if isinstance(raw, dict) else None
        if not isinstance(name, str) or not name:
            raise fail(self.at, f"tool call {j} has no function_name: "
                                f"{shortened(repr(raw), 80)}")
        assert isinstance(raw, dict)
        traj.said.add("tool calls' extra", raw.get("extra"))
        call_id = raw.get("tool_call_id")
        if call_id == "":
            call_id = None  # (none: the codec gives it the id every importer derives)
        if isinstance(call_id, str):
            ids.append(call_id)
        elif call_id is not None and (isinstance(call_id, bool)
                                      or not isinstance(call_id, int)):
            raise fail(self.at, f"tool call {j} ({name}): tool_call_id must be a text, got "
                                f"{shortened(repr(call_id), 40)}")
        args = raw.get("arguments")
        return openai_tool_call(call_id, name, {} if args is None else args)

    def _results(self, obs: Any, ids: list[str], traj: _Trajectory) -> None:
        """The tool messages (and the user's, for a result naming no call) the step's
        observation adds to the prompts after it."""
        results = obs.get("results") if isinstance(obs, dict) else None
        if obs is not None and not isinstance(results, list):
            self.later.append(f"{self.name}: its observation has no list of results "
                              f"({shortened(repr(obs), 60)}): not imported")
            return
        named: set[str] = set()
        as_user: list[int] = []
        for k, r in enumerate(results or []):
            what = f"{self.name}: observation result {k}"
            content = self._result(r, k, traj)
            if content is None:
                continue
            assert isinstance(r, dict)
            cid = r.get("source_call_id")
            if cid is None or cid == "":
                as_user.append(k)
                self.results.append({"role": "user", "content": content})
            elif isinstance(cid, str) and cid in ids:
                named.add(cid)
                self.results.append({"role": "tool", "tool_call_id": cid, "content": content})
            else:
                self.later.append(f"{what} names tool call {shortened(repr(cid), 40)}, which "
                                  f"{self.name} does not make: not imported")
        if as_user:
            self.later.append(f"{self.name}: observation result(s) "
                              f"{', '.join(map(str, as_user))} name no tool call (a "
                              "non-tool action's output): rebuilt as the user's messages")
        waiting = [c for c in ids if c not in named]
        if waiting:
            self.later.append(f"{self.name}: tool call(s) {', '.join(map(repr, waiting))} "
                              "answered by no observation result naming them")

    def _result(self, r: Any, k: int, traj: _Trajectory) -> str | list[dict[str, Any]] | None:
        """An observation result's content (None, noted, when it cannot be read), its
        subagents noted."""
        what = f"{self.name}: observation result {k}"
        if not isinstance(r, dict):
            self.later.append(f"{what} is no object ({shortened(repr(r), 40)}): not imported")
            return None
        traj.said.add("observation results' extra", r.get("extra"))
        try:
            content = _content(r.get("content"), self.at, f"observation result {k}")
        except ImportFormatError as e:
            self.later.append(f"{self.name}: {str(e).removeprefix(f'{self.at}: ')}: not "
                              "imported")
            return None
        if r.get("subagent_trajectory_ref") is not None:
            self.later.append(f"{what}: {_delegated(r, traj)}")
        return content

    def _usage(self, metrics: Any, traj: _Trajectory) -> dict[str, Any] | None:
        """The step's usage in the chat format's shape (the cached tokens within the
        prompt's, as ATIF counts them); what else its metrics say noted."""
        if not isinstance(metrics, dict):
            return None
        traj.said.unknown("metrics' keys", metrics, _METRICS)
        given = metrics.get("extra")
        extra: dict[str, Any] = given if isinstance(given, dict) else {}
        traj.said.add("metrics' extra", extra, skip=_READ_EXTRA)
        usage: dict[str, Any] = {k: metrics[k] for k in ("prompt_tokens", "completion_tokens")
                                 if metrics.get(k) is not None}
        cached = count_of(metrics.get("cached_tokens"))
        if cached:
            usage["prompt_tokens_details"] = {"cached_tokens": cached}
        reasoning = count_of(extra.get("reasoning_tokens"))
        if reasoning:
            usage["completion_tokens_details"] = {"reasoning_tokens": reasoning}
        if isinstance(extra.get("finish_reason"), str):
            self.finish = extra["finish_reason"]
        written = count_of(extra.get("cache_creation_input_tokens"))
        if written:
            usage["cache_creation_input_tokens"] = written
        cost = metrics.get("cost_usd")
        if isinstance(cost, int | float) and not isinstance(cost, bool):
            self.notes.append(f"its cost (metrics.cost_usd, ${cost}) not imported")
        kept = [k for k in ("prompt_token_ids", "completion_token_ids", "logprobs")
                if metrics.get(k)]
        if kept:
            self.notes.append(f"its {', '.join(kept)} (metrics) not imported")
        return usage or None

    def _other(self, raw: dict[str, Any], extra: Any, traj: _Trajectory) -> None:
        role = "system" if self.source == "system" else "user"
        self.answer = {"role": role, "content": self.message}
        obs = raw.get("observation")
        if obs is None:
            return
        manage = extra.get("context_management") if isinstance(extra, dict) else None
        boundary = manage.get("boundary") if isinstance(manage, dict) else None
        if self.source == "system" and boundary in ("replace", "append"):
            self.boundary = boundary
            results = obs.get("results") if isinstance(obs, dict) else None
            for k, r in enumerate(results if isinstance(results, list) else []):
                content = self._result(r, k, traj)
                if content is not None:
                    self.results.append({"role": "user", "content": content})
            self.later.append(
                f"{self.name} (system) {'replaced' if boundary == 'replace' else 'added to'}"
                " the agent's context (context_management boundary "
                f"{boundary!r}): its observation rebuilt as the user's"
                + ("; the steps before it are in no prompt after it"
                   if boundary == "replace" else ""))
            return
        self.later.append(f"{self.name} ({self.source}): its observation not imported: ATIF "
                          "does not say what the agent was sent of it")

    def after(self, context: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The messages of a prompt after this step, given those before it."""
        if self.boundary == "replace":
            return list(self.results)
        return [*context, self.answer, *self.results]


def _listed(names: list[str]) -> str:
    """Steps named in a note (a long run of them by its ends and count)."""
    return ", ".join(names) if len(names) <= 4 else \
        f"{', '.join(names[:2])} … {names[-1]} ({len(names)} in all)"


def _delegated(result: dict[str, Any], traj: _Trajectory) -> str:
    """What a result's subagent references point at, as a note says it."""
    refs = result.get("subagent_trajectory_ref")
    said: list[str] = []
    for ref in refs if isinstance(refs, list) else [refs]:
        tid = ref.get("trajectory_id") if isinstance(ref, dict) else None
        path = ref.get("trajectory_path") if isinstance(ref, dict) else None
        if isinstance(tid, str) and tid in traj.embedded:
            said.append(f"the embedded subagent trajectory {tid!r} (its own thread)")
        elif isinstance(path, str) and path:
            said.append(f"the subagent trajectory in {path!r}, another file: not imported "
                        "from this one")
        else:
            said.append(f"a subagent trajectory this file does not hold "
                        f"({shortened(repr(ref), 60)})")
    empty = not result.get("content")
    return ("delegated to " + "; ".join(said)
            + (" — its content empty: rebuilt as an empty result" if empty else ""))


def _read(record: Record) -> list[Exchange]:
    call, where = record.obj[KEY], record.where
    notes = [f"{where}: {n}" for n in call.notes]
    ex = chat_exchange(call.chat, where, record.index, notes)
    ex.params_known = False  # (a step keeps no parameters sent)
    if not call.tools_known:
        ex.tools = None  # (not recorded: not "none offered")
    ex.thread_key = call.thread
    ex.started_at, ex.finished_at = call.started, call.finished
    return [ex]


FORMAT = RecordFormat("atif", 11, lambda r: isinstance(r.obj.get(KEY), _Call), _read)
