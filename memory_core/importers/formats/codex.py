"""OpenAI Codex CLI's rollout files (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``):
one ``{"timestamp", "type", "payload"}`` line per ``RolloutItem`` (codex-rs/protocol):
``session_meta`` (the session's id, cwd, CLI version, model provider; ``base_instructions``
in newer ones, the user's ``instructions`` in older ones), ``turn_context`` (each turn's model,
reasoning effort, policies), ``response_item`` (the Responses API items of the
conversation, as Codex sends them back each call: it keeps no history server-side),
``event_msg`` (what the UI was shown; ``token_count`` after each model call, its
``info.last_token_usage`` that call's usage) and ``compacted`` (a summary that replaced
the history).

The file keeps no request: each model call — the output items between one request and
the next — is gathered (``codex_rollouts``) with the items recorded before it as its
input, and read as the Responses API record it was (``responses.responses_exchange``).
A ``token_count`` ends a call; in a file without them (before Codex counted usage) a
call ends at the first tool output or user message after its output items."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from memory_core.errors import ImportFormatError
from memory_core.importers.common import Exchange, fail, iso_time, shortened
from memory_core.importers.formats import Record, RecordFormat
from memory_core.importers.formats.responses import responses_exchange

KEY = "codex_rollout_call"  # a call of a rollout, as ``codex_rollouts`` gives it
LINE_TYPES = ("session_meta", "response_item", "turn_context", "event_msg", "compacted")
# the items a model call outputs (the rest are what the client sends: messages of the
# user or developer, tool outputs)
OUTPUT_ITEMS = ("reasoning", "function_call", "custom_tool_call", "local_shell_call",
                "web_search_call", "image_generation_call", "tool_search_call")
REBUILT = ("its input rebuilt from the rollout's response items before it (Codex sends "
           "its whole history each call)")
NO_TOOLS = "the tools offered are not recorded (a rollout keeps no tool list)"
USAGE_ONLY = ("a Codex CLI rollout holding no response items, only {what}: no model "
              "call's input or output is in the file (usage records, as usage trackers "
              "keep them)")


def is_rollout_line(obj: Any) -> bool:
    """A line of a Codex rollout: ``{"timestamp", "type", "payload"}`` of one of its
    line types."""
    return isinstance(obj, dict) and obj.get("type") in LINE_TYPES and isinstance(
        obj.get("payload"), dict) and set(obj) <= {"timestamp", "type", "payload", "ordinal",
                                                   "metadata"}


_OLD_META = {"id", "timestamp", "instructions", "git"}


def _is_old_meta(obj: Any) -> bool:
    """The first line of a rollout of Codex before it wrapped its lines (mid-2025):
    ``{"id", "timestamp", "instructions", "git"}``, the items after it bare."""
    return isinstance(obj, dict) and {"id", "timestamp"} <= set(obj) <= _OLD_META \
        and isinstance(obj["id"], str) and isinstance(obj["timestamp"], str)


def _wrapped(lines: Iterable[tuple[str, Any]]) -> Iterator[tuple[str, Any]]:
    """An older rollout's lines as the wrapped ones: its first the session_meta, each
    bare Responses API item a response_item; its ``{"record_type": "state"}`` lines
    (Codex's own bookkeeping) passed over."""
    first = True
    for where, obj in lines:
        if first and not isinstance(obj, ImportFormatError):
            first = False
            yield where, {"type": "session_meta", "payload": obj}
        elif isinstance(obj, dict) and "record_type" in obj and set(obj) <= {
                "record_type", "state"}:
            continue
        elif isinstance(obj, dict) and isinstance(obj.get("type"), str):
            yield where, {"type": "response_item", "payload": obj}
        else:
            yield where, obj


def codex_rollouts(docs: Iterable[tuple[str, Any]]) -> Iterator[tuple[str, Any]]:
    """The documents, a file whose first readable line is a rollout line (or an older
    rollout's first line) given as its model calls (each named by the line of its
    first output item); a line that cannot be read comes as its error."""
    docs = iter(docs)
    held: list[tuple[str, Any]] = []
    for where, obj in docs:
        held.append((where, obj))
        if isinstance(obj, ImportFormatError):
            continue
        if is_rollout_line(obj):
            yield from _Rollout().calls([*held, *docs])
            return
        if _is_old_meta(obj):
            yield from _Rollout().calls(list(_wrapped([*held, *docs])))
            return
        break
    yield from held
    yield from docs


@dataclass
class _Call:
    where: str  # the line of its first output item
    prompt: list[dict[str, Any]]  # the items sent
    started: str | None  # the timestamp of the line before its first output
    outputs: list[dict[str, Any]] = field(default_factory=list)
    finished: str | None = None
    after_input: bool = False  # a user or developer message since its last output
    after_result: bool = False  # a tool output since its last output


class _Rollout:
    """A rollout read line by line into its model calls."""

    def __init__(self) -> None:
        self.meta: dict[str, Any] = {}
        self.turn: dict[str, Any] = {}
        self.items: list[dict[str, Any]] = []
        self.call: _Call | None = None
        self.last_ts: str | None = None
        self.last_total: Any = None
        self.notes: list[str] = []  # said on the next call
        self.events: Counter[str] = Counter()
        self.counts = 0  # token_count events with usage
        self.by_tokens = False
        self.out: list[tuple[str, Any]] = []

    def calls(self, lines: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
        self.by_tokens = any(_usage_of(obj) is not None for _, obj in lines
                             if is_rollout_line(obj))
        items = 0
        for where, obj in lines:
            if isinstance(obj, ImportFormatError):
                self.out.append((where, obj))
                continue
            if not is_rollout_line(obj):
                kind = obj.get("type") if isinstance(obj, dict) else None
                self.notes.append(f"{where}: not a rollout line Codex writes "
                                  f"({'type ' + repr(kind) if isinstance(kind, str) else shortened(repr(obj), 60)}): "
                                  "not imported")
                continue
            try:
                items += obj["type"] == "response_item"
                self._line(where, obj)
            except ImportFormatError as e:
                self.out.append((where, e))
            ts = obj.get("timestamp")
            self.last_ts = ts if isinstance(ts, str) else self.last_ts
        self._close(None)
        if not items:
            what = (f"{self.counts} token_count event(s)" if self.counts else
                    "session metadata and events")
            return [("file", fail("file", USAGE_ONLY.format(what=what)))]
        if self.events and self.out:  # (said once, on the first call)
            said = ", ".join(f"{k} ×{n}" if n > 1 else k for k, n in self.events.items())
            first = next((i for i, (_, o) in enumerate(self.out) if isinstance(o, dict)), None)
            if first is not None:
                self.out[first][1][KEY]["notes"].append(
                    f"the rollout's events ({said}) are what Codex's UI showed, "
                    "beside the response items: not imported")
        if self.notes and self.out:  # (after the last call)
            last = next((o for _, o in reversed(self.out) if isinstance(o, dict)), None)
            if last is not None:
                last[KEY]["notes"] += self.notes
        return self.out

    def _line(self, where: str, obj: dict[str, Any]) -> None:
        kind, payload = obj["type"], obj["payload"]
        if kind == "session_meta":
            if self.meta:
                self.notes.append(f"{where}: a further session_meta (id "
                                  f"{payload.get('id')!r}) not imported")
            else:
                self.meta = payload
        elif kind == "turn_context":
            self.turn = payload
        elif kind == "compacted":
            self._compacted(where, payload)
        elif kind == "event_msg":
            self._event(where, obj, payload)
        else:
            self._item(where, obj, payload)

    def _item(self, where: str, obj: dict[str, Any], item: dict[str, Any]) -> None:
        kind = item.get("type")
        if kind == "ghost_snapshot":  # (Codex's undo checkpoint: never sent)
            self.notes.append(f"{where}: a ghost snapshot (Codex's undo checkpoint, "
                              "never sent to the model) not imported")
            return
        output = kind in OUTPUT_ITEMS or kind == "message" and item.get("role") == "assistant"
        call = self.call
        if output:
            if call is not None and call.outputs and (call.after_input or (
                    not self.by_tokens and call.after_result)):
                self._close(None)
                call = None
            if call is None:
                call = self.call = _Call(where, list(self.items), self.last_ts)
            call.outputs.append(item)
            call.after_input = call.after_result = False
            call.finished = obj.get("timestamp") if isinstance(obj.get("timestamp"), str) \
                else call.finished
        elif call is not None:
            if kind == "message":
                call.after_input = True
            else:
                call.after_result = True
        self.items.append(item)

    def _event(self, where: str, obj: dict[str, Any], payload: dict[str, Any]) -> None:
        kind = payload.get("type")
        if kind != "token_count":
            self.events[str(kind)] += 1
            return
        usage = _usage_of(obj)
        if usage is None:
            return  # (rate limits only, before any call counted)
        total = payload["info"].get("total_token_usage")
        if total is not None and total == self.last_total:
            return  # the same count again (a rate-limit update): no call of its own
        self.last_total = total
        self.counts += 1
        if self.call is None or not self.call.outputs:
            self.notes.append(f"{where}: a token_count for a call whose output the rollout "
                              "does not hold (a compaction's summary, or an interrupted "
                              "call): not imported")
            return
        ts = obj.get("timestamp")
        self.call.finished = ts if isinstance(ts, str) else self.call.finished
        self._close(usage)

    def _compacted(self, where: str, payload: dict[str, Any]) -> None:
        self._close(None)
        replaced = payload.get("replacement_history")
        message = payload.get("message")
        if isinstance(replaced, list):
            self.items = [i for i in replaced if isinstance(i, dict)]
            self.notes.append(f"{where}: the history compacted: the calls after it were "
                              "sent its replacement history")
            return
        if not isinstance(message, str):
            raise fail(where, f"a compacted line needs its summary 'message', got "
                              f"{shortened(repr(message), 80)}")
        # as Codex builds the compacted history: the user's messages, then the summary
        kept = [i for i in self.items if i.get("type") == "message" and i.get("role") == "user"
                and not _codex_context(i)]
        self.items = [*kept, {"type": "message", "role": "user",
                              "content": [{"type": "input_text", "text": message}]}]
        self.notes.append(f"{where}: the history compacted into a summary: the calls after "
                          "it sent the user's earlier messages and the summary (Codex's own "
                          "context and the summary's preamble are not recorded)")

    def _close(self, usage: dict[str, Any] | None) -> None:
        call, self.call = self.call, None
        if call is None or not call.outputs:
            return
        notes = self.notes
        self.notes = []
        if usage is None:
            notes.append("no token_count follows the call: its usage unknown" if self.by_tokens
                         else "the rollout counts no usage (no token_count events): each "
                              "call taken to end at the first tool output or user message "
                              "after its output; its usage unknown")
        self.out.append((call.where, {KEY: {
            "input": call.prompt, "output": call.outputs, "usage": usage,
            "meta": self.meta, "turn": self.turn, "started": call.started,
            "finished": call.finished, "notes": notes}}))


def _usage_of(obj: Any) -> dict[str, Any] | None:
    """A ``token_count`` event's ``info.last_token_usage`` (the call's usage), if any."""
    payload = obj.get("payload") if isinstance(obj, dict) else None
    info = payload.get("info") if isinstance(payload, dict) and payload.get(
        "type") == "token_count" else None
    last = info.get("last_token_usage") if isinstance(info, dict) else None
    return last if isinstance(last, dict) else None


_CONTEXT_TAGS = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions",
                 "<permissions", "<user_shell_command>")


def _codex_context(item: dict[str, Any]) -> bool:
    """A user message Codex writes itself (its environment, the user's instructions)."""
    content = item.get("content")
    texts = [p.get("text") for p in content if isinstance(p, dict)] \
        if isinstance(content, list) else [content]
    return any(isinstance(t, str) and t.lstrip().startswith(_CONTEXT_TAGS) for t in texts)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _instructions(meta: dict[str, Any], turn: dict[str, Any], sent: list[dict[str, Any]],
                  notes: list[str]) -> str | None:
    """The call's instructions: the session's ``base_instructions`` (Codex's own, sent as
    the request's ``instructions``); before Codex recorded them, the user's
    ``instructions`` the session_meta kept, noted; the turn's user or developer
    instructions when no message sent holds them."""
    base = meta.get("base_instructions")
    base = _text(base.get("text") if isinstance(base, dict) else base)
    parts: list[str] = []
    if base is not None:
        parts.append(base)
    else:
        notes.append("Codex's base instructions are not recorded (older rollouts do "
                     "not keep them): the instructions sent are not all known")
    texts = " ".join(p["text"] for i in sent if i.get("type") == "message"
                     and isinstance(i.get("content"), list) for p in i["content"]
                     if isinstance(p, dict) and isinstance(p.get("text"), str))
    user = _text(meta.get("instructions"))
    for text, what in ((user, "session_meta's 'instructions' (the user's)"),
                       (_text(turn.get("user_instructions")), "the turn's user_instructions"),
                       (_text(turn.get("developer_instructions")),
                        "the turn's developer_instructions")):
        if text is not None and text.strip() not in texts:
            parts.append(text)
            notes.append(f"{what}, which no message sent holds, taken as instructions")
    return "\n\n".join(parts) if parts else None


def _as_usage(last: dict[str, Any]) -> dict[str, Any]:
    """Codex's ``TokenUsage`` (input with its cached part, output with its reasoning) as
    the Responses API's usage it was read from."""
    usage: dict[str, Any] = {k: last[k] for k in ("input_tokens", "output_tokens",
                                                  "total_tokens") if k in last}
    if "cached_input_tokens" in last:
        usage["input_tokens_details"] = {"cached_tokens": last["cached_input_tokens"]}
    if "reasoning_output_tokens" in last:
        usage["output_tokens_details"] = {"reasoning_tokens": last["reasoning_output_tokens"]}
    return usage


def _checked(ctx: Any, where: str) -> dict[str, Any]:
    """A call as ``codex_rollouts`` gives it (a record may hold one written otherwise):
    its items lists of objects, its lines' objects and times texts; an error naming
    the first part that is not."""
    def bad(what: str, value: Any) -> ImportFormatError:
        return fail(where, f"'{KEY}' {what}, got {shortened(repr(value), 80)}")
    if not isinstance(ctx, dict):
        raise bad("must be an object", ctx)
    for key in ("input", "output"):
        items = ctx.get(key)
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise bad(f"'{key}' must be a list of items", items)
    for key in ("meta", "turn"):
        if not isinstance(ctx.get(key), dict):
            raise bad(f"'{key}' must be an object", ctx.get(key))
    for key in ("started", "finished"):
        if ctx.get(key) is not None and not isinstance(ctx[key], str):
            raise bad(f"'{key}' must be a time as text", ctx[key])
    if ctx.get("usage") is not None and not isinstance(ctx["usage"], dict):
        raise bad("'usage' must be an object", ctx["usage"])
    notes = ctx.get("notes")
    if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
        raise bad("'notes' must be a list of texts", notes)
    return ctx


def _read(record: Record) -> list[Exchange]:
    where = record.where
    ctx = _checked(record.obj[KEY], where)
    meta, turn = ctx["meta"], ctx["turn"]
    notes = [REBUILT]
    sent = [i for i in ctx["input"] if i.get("type") != "reasoning"]
    if len(sent) < len(ctx["input"]):
        notes.append(f"its {len(ctx['input']) - len(sent)} earlier reasoning item(s), sent "
                     "back encrypted, not imported")
    request: dict[str, Any] = {"input": sent}
    instructions = _instructions(meta, turn, sent, notes)
    if instructions is not None:
        request["instructions"] = instructions
    model = turn.get("model")
    if isinstance(model, str) and model:
        request["model"] = model
    else:
        notes.append("the model is not recorded (no turn_context names it)")
    reasoning = {k: turn[k] for k in ("effort", "summary") if isinstance(turn.get(k), str)}
    if reasoning:
        request["reasoning"] = reasoning
    notes.append(NO_TOOLS + (f"; the session's dynamic tools were among them: "
                             f"{', '.join(str(t.get('name')) for t in meta['dynamic_tools'] if isinstance(t, dict))}"
                             if isinstance(meta.get("dynamic_tools"), list)
                             and meta["dynamic_tools"] else ""))
    response: dict[str, Any] = {"output": ctx["output"]}
    if ctx["usage"] is not None:
        response["usage"] = _as_usage(ctx["usage"])
        response["status"] = "completed"  # (Codex counts a call when it completes)
    said = [f"{where}: {n}" for n in (*notes, *ctx["notes"])]
    session = meta.get("id")
    obj: dict[str, Any] = {"request": request, "response": response}
    if isinstance(session, str) and session:
        obj["thread_id"] = session
    ex = responses_exchange(obj, where, record.index)
    ex.notes = said + ex.notes
    ex.tools = None
    # (what turn_context names, the model's reasoning effort, is all a rollout keeps of
    # what was sent with the call: without it, the parameters are not known)
    ex.params_known = bool(ex.params)
    ex.started_at = iso_time(ctx["started"], where, "timestamp")
    ex.finished_at = iso_time(ctx["finished"], where, "timestamp") or ex.started_at
    ex.started_at = ex.started_at or ex.finished_at
    if ex.started_at and ex.finished_at and ex.finished_at < ex.started_at:
        ex.started_at = ex.finished_at
    return [ex]


def _matches(record: Record) -> bool:
    return KEY in record.obj


FORMAT = RecordFormat("codex", 22, _matches, _read)
