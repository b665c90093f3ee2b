"""What the importer says of a record no format reads: what it looks like, and the
closest format the importer does read, in one sentence — "line 2: this looks like an
OpenAI chat-completions record whose request sends no 'messages' …; the closest format
this importer reads is …" — instead of a list of every shape. ``unread_record`` tells both from the
record's keys (its own, its ``request``'s and its ``response``'s)."""

from __future__ import annotations

from dataclasses import dataclass
from string import hexdigits
from typing import Any

from memory_core.importers.common import shortened


@dataclass(frozen=True)
class Shape:
    """A kind of record the importer reads: what it is called, how it is written, and
    the keys that mark it (the record's own, its request's or its response's)."""

    name: str
    written: str
    keys: frozenset[str]


def _shape(name: str, written: str, keys: str) -> Shape:
    return Shape(name, written, frozenset(keys.split()))


# the shapes read (docs/importing.md, "What it reads"), the commonest first: a tie goes
# to the earlier one
SHAPES: tuple[Shape, ...] = (
    _shape("an OpenAI chat-completions record",
           '{"request": {"messages": [...]}, "response": {"choices": [...]}}',
           "messages choices model tools tool_choice temperature max_tokens "
           "max_completion_tokens chat.completion object:chat.completion"),
    _shape("a Responses API record",
           '{"request": {"input": ...}, "response": {"output": [...]}}',
           "input instructions output previous_response_id max_output_tokens "
           "object:response"),
    _shape("an Anthropic Messages API record",
           '{"request": {"messages": [...]}, "response": {"type": "message", '
           '"content": [...]}}',
           "system stop_reason stop_sequence anthropic_version content object:message"),
    _shape("a Gemini API record",
           '{"request": {"contents": [...]}, "response": {"candidates": [...]}}',
           "contents candidates systemInstruction system_instruction generationConfig "
           "generation_config usageMetadata usage_metadata modelVersion"),
    _shape("a legacy completions record",
           '{"request": {"prompt": ...}, "response": {"choices": [{"text": ...}]}}',
           "prompt suffix echo logprobs text_completion object:text_completion"),
    _shape("a ShareGPT conversation", '{"conversations": [{"from": ..., "value": ...}]}',
           "conversations conversation from value"),
    _shape("a Semantic Kernel chat history",
           '[{"Role": {"Label": "user"}, "Items": [{"$type": "TextContent", "Text": ...}]}, '
           '...] (a serialised ChatHistory)',
           "Role Label Items $type ModelId Metadata"),
    _shape("an AutoGen recorded call",
           '{"mode": "create", "messages": [{"type": "UserMessage", "content": ...}], '
           '"response": {"content": ..., "finish_reason": ...}} (ChatCompletionClientRecorder)',
           "mode stream cached thought"),
    _shape("a Continue session",
           '{"sessionId": ..., "history": [{"message": {"role": ..., "content": ...}, '
           '"contextItems": [...], "promptLogs": [...]}]} (~/.continue/sessions)',
           "sessionId history workspaceDirectory contextItems promptLogs"),
    _shape("an entry of DSPy's LM history",
           '{"messages": [...], "kwargs": {...}, "outputs": [...], "usage": {...}, '
           '"timestamp": ..., "uuid": ..., "model": ..., "model_type": "chat"} '
           '(dspy.LM.history, dumped)',
           "outputs model_type uuid response_model cost kwargs"),
    _shape("a promptfoo eval export",
           '{"evalId": ..., "results": {"version": 3, "timestamp": ..., "results": '
           '[{"prompt": {"raw": ...}, "provider": {"id": ...}, "response": {"output": ...}, '
           '"testIdx": ..., "promptIdx": ...}], "stats": {...}}, "config": {...}} (promptfoo '
           'eval -o results.json, promptfoo export; -o results.jsonl: one result a line)',
           "evalId shareableUrl promptIdx testIdx promptId gradingResult failureReason "
           "testCase namedScores latencyMs"),
    _shape("an OpenHands LLM completion log",
           '{"messages": [...], "tools": [...], "kwargs": {...}, "context_window": ..., '
           '"response": {"choices": [...]}, "cost": ..., "timestamp": ..., '
           '"latency_sec": ...} (log_completions=True)',
           "kwargs context_window latency_sec raw_messages raw_response cost timestamp"),
    _shape("a SWE-agent trajectory",
           '{"trajectory": [{"query": [...], "response": ..., "action": ..., '
           '"observation": ...}], "history": [...], "info": {"model_stats": {...}}, '
           '"replay_config": ...} (*.traj; mini-swe-agent\'s *.traj.json: {"messages": '
           '[...], "info": {...}, "trajectory_format": "mini-swe-agent-1.1"})',
           "trajectory history replay_config environment trajectory_format query "
           "observation thought execution_time model_stats"),
    _shape("a Letta agent file",
           '{"agent_type": ..., "llm_config": {...}, "messages": [...], '
           '"in_context_message_indices": [...], "tools": [...]} (.af, Letta up to 0.10; '
           'since: {"agents": [{"messages": [...], "in_context_message_ids": [...]}], '
           '"tools": [...], "blocks": [...], ...})',
           "agent_type llm_config core_memory in_context_message_indices "
           "in_context_message_ids tool_rules embedding_config agents blocks mcp_servers "
           "message_buffer_autoclear"),
    _shape("an ATIF trajectory",
           '{"schema_version": "ATIF-v1.7", "session_id": ..., "agent": {"name": ..., '
           '"model_name": ...}, "steps": [{"step_id": 1, "source": "user", "message": ...}, '
           '{"source": "agent", "tool_calls": [...], "observation": {"results": [...]}, '
           '"metrics": {...}}]} (Harbor\'s Agent Trajectory Interchange Format)',
           "schema_version session_id trajectory_id agent steps final_metrics "
           "continued_trajectory_ref subagent_trajectories"),
    _shape("a LangSmith run",
           '{"run_type": "llm", "inputs": {...}, "outputs": {...}} (or the SDK\'s '
           '{"post": [...], "patch": [...]})',
           "run_type inputs outputs trace_id dotted_order parent_run_id child_runs "
           "session_id start_time end_time post patch"),
    _shape("a batch file's line", '{"custom_id": ..., "body": {...}} and its output line',
           "custom_id body params result"),
    _shape("an HTTP interaction", '{"request": {"method": "POST", "url": ..., "body": ...}, '
                                  '"response": {"status": ..., "body": ...}}',
           "method url uri status status_code headers body"),
    _shape("a Cohere Chat record", '{"request": {"message": ..., "chat_history": [...]}, '
                                   '"response": {"text": ...}} (v1), or {"request": '
                                   '{"messages": [...]}, "response": {"message": '
                                   '{"content": [...]}, "finish_reason": ...}} (v2)',
           "message chat_history preamble text generation_id finish_reason"),
    _shape("a Cohere Generate record", '{"request": {"prompt": ...}, "response": '
                                       '{"generations": [{"text": ...}]}} (/v1/generate)',
           "generations billed_units is_finished num_generations return_likelihoods"),
    _shape("an Ollama record", '{"request": {"messages": [...], "options": {...}}, '
                               '"response": {"message": {...}, "done": true}}',
           "options keep_alive done eval_count prompt_eval_count done_reason created_at"),
    _shape("a Bedrock Converse record", '{"request": {"messages": [...]}, "response": '
                                        '{"output": {"message": {...}}}}',
           "inferenceConfig toolConfig stopReason modelId additionalModelRequestFields "
           "metrics output:message"),
    _shape("an OpenTelemetry span", '{"resourceSpans": [...]} or a span with gen_ai.* '
                                    '(or llm.*, OpenInference\'s) attributes',
           "traceId spanId trace_id span_id attributes resourceSpans scopeSpans "
           "startTimeUnixNano name spanName"),
)
_CONVERSATION = ("messages", "input", "prompt", "contents", "conversations")
_SPAN_IDS = ("trace_id", "span_id", "traceId", "spanId", "context", "spanContext",
             "_spanContext")
_BY_NAME = {s.name: s for s in SHAPES}
# one event (or chunk) of a streamed answer, by its type: a file of them holds the
# answer's pieces, not the request
_ANTHROPIC_EVENTS = frozenset({"message_start", "content_block_start", "content_block_delta",
                               "content_block_stop", "message_delta", "message_stop",
                               "ping"})


def _stream_piece(obj: dict[str, Any]) -> Shape | None:
    """The shape whose streamed answer ``obj`` is one event or chunk of, if it is one."""
    kind = obj.get("type")
    fmt = ("anthropic" if isinstance(kind, str) and kind in _ANTHROPIC_EVENTS
           and "request" not in obj else
           "chat" if obj.get("object") == "chat.completion.chunk" else
           "responses" if isinstance(kind, str) and kind.startswith("response.")
           and "request" not in obj else None)
    return None if fmt is None else _BY_NAME[FORMAT_TITLES[fmt]]


def _keys(obj: dict[str, Any]) -> set[str]:
    """The record's keys, its request's and its response's (and the ``object``/``type``
    values of each, which name what it is)."""
    keys = {str(k) for k in obj}
    # what an object says it is, its own or its sides' ("object:response": a Responses
    # API answer, not a chat completion, though both have model, tools, temperature)
    keys |= {f"object:{obj[k]}" for k in ("object", "type") if isinstance(obj.get(k), str)}
    for value in (obj, obj.get("response")):  # Converse answers {"output": {"message"}};
        out = value.get("output") if isinstance(value, dict) else None  # Responses, a list
        if isinstance(out, dict) and "message" in out:
            keys.add("output:message")
    for side in ("request", "response"):
        value = obj.get(side)
        if isinstance(value, dict):
            keys |= {str(k) for k in value}
            keys |= {str(value[k]) for k in ("object", "type") if isinstance(value.get(k), str)}
            keys |= {f"object:{value[k]}" for k in ("object", "type")
                     if isinstance(value.get(k), str)}
    return keys


def _looks_like(obj: dict[str, Any], keys: set[str], closest: Shape) -> str:
    """What the record seems to be and why it is not read, as a clause."""
    request, response = obj.get("request"), obj.get("response")
    if _stream_piece(obj) is not None:
        kind = obj.get("type") or obj.get("object")
        return (f"one event of the streamed answer of {closest.name} ({kind}), without the "
                "request: a file of stream events holds the answer's pieces, not the "
                "conversation — record the whole call")
    if isinstance(request, dict) and not any(k in request for k in _CONVERSATION):
        sent = ", ".join(sorted(map(str, request))[:6]) or "nothing"
        return (f"{closest.name} whose request sends no 'messages', 'input', 'prompt' or "
                f"'contents' (only {sent}): the conversation is not in the file")
    if request is None and response is None and "body" in obj and keys & {
            "status", "status_code", "statusCode"} and not keys & {"method", "url", "uri"}:
        return ("an HTTP response (its status and body) without the request it answers: "
                "what was sent is not in the file")
    given, got = obj.get("input"), obj.get("output")
    if isinstance(given, dict) and isinstance(got, dict) and request is None \
            and response is None and any(k in given for k in _CONVERSATION):
        return (f"a model call recorded as its input ({', '.join(sorted(map(str, given))[:6])}"
                f") and output ({', '.join(sorted(map(str, got))[:6])}), in a shape this "
                "importer does not read")
    if "input" in obj and isinstance(obj.get("output"), str | dict) \
            and request is None and response is None:
        return ("an evaluation row (an input and the output it got), not a recorded model "
                "call: what was sent to the model and what it answered are not in it")
    if "input" in obj and request is None and response is None and not keys & {
            "model", "error", "output", "url", "messages"}:
        others = sorted(map(str, keys - {"input"}))
        return ("an input with no model, answer or error"
                + (f" (beside it: {', '.join(others[:6])})" if others else "")
                + " — an evaluation dataset row, a flow test's input —, not a recorded model "
                "call: what was sent to the model and what it answered are not in it")
    if "inputs" in obj and "outputs" in obj and "run_type" not in obj:
        return ("a LangSmith dataset example, or a run without its 'run_type': not a "
                "model call this importer reads")
    if request is None and response is None and (
            keys & {"choices", "candidates", "output"} or "message" in obj and keys & {
                "finish_reason", "done", "stopReason", "stop_reason"}) \
            or "content" in obj and (obj.get("type") == "message" or "stop_reason" in obj):
        # (Claude's answer with or without its "type": Kong's gateway fixtures drop it)
        return f"the response of {closest.name} without its request"
    if _one_message(obj):
        return ONE_MESSAGE
    attrs = obj.get("record_attributes")
    if _trulens_event(obj) and isinstance(attrs, dict):
        # TruLens's (Snowflake AI observability's) event rows: an app's span, the model
        # call inside it not recorded as one
        said = obj["record"].get("name")
        return ("an event of TruLens's span table (record, record_attributes, trace)"
                + (f" for '{str(said)[:60]}'" if said else "") + ", whose attributes "
                f"({', '.join(sorted(map(str, attrs))[:3])} …) are an app's, holding no "
                "model call's messages (no gen_ai.* or llm.* attributes)")
    name = obj.get("name", obj.get("spanName"))
    if isinstance(name, str) and _otel_attributes(obj.get("attributes")) \
            and not any(obj.get(k) is not None for k in _SPAN_IDS):
        # a span, by its name and attributes, without what makes it one (a span store's
        # own record: {"spanName", "scopeName", "attributes"})
        return (f"a span ('{name[:60]}') without its trace and span ids (no "
                "trace_id/span_id, traceId/spanId or context)")
    listed = ", ".join(sorted(map(str, obj))[:8]) or "none"
    return f"{_UNKNOWN} {listed}, which is no record this importer reads"


_UNKNOWN = "a JSON object with keys"
#: what a record that is one chat message is said to be (a file of only such records
#: is said to be a list of them: ``openai_jsonl.parse_records``)
ONE_MESSAGE = "one chat message, not a request holding the conversation"


def _otel_attributes(attrs: Any) -> bool:
    """OpenTelemetry attributes: OTLP's list of ``{key, value}``, or an object whose keys
    are dotted names (``gen_ai.system``)."""
    if isinstance(attrs, list):
        return bool(attrs) and all(isinstance(a, dict) and "key" in a for a in attrs)
    return isinstance(attrs, dict) and any("." in str(k) for k in attrs)


def _trulens_event(obj: dict[str, Any]) -> bool:
    """A row of TruLens's event table: a span as ``record``, ``record_attributes`` and
    ``trace`` ({span_id, trace_id})."""
    return isinstance(obj.get("record"), dict) and isinstance(obj.get("trace"), dict) \
        and _otel_attributes(obj.get("record_attributes"))


def _one_message(obj: dict[str, Any]) -> bool:
    return "role" in obj and "content" in obj and obj.get("type") != "message"


def closest_shape(obj: dict[str, Any]) -> Shape:
    """The shape read whose marking keys the record shares most (the commonest on a
    tie, or when it shares none); of those its ``object`` or ``type`` names, if any."""
    if _one_message(obj):  # a chat request holds them
        return SHAPES[0]
    if _trulens_event(obj):  # (a span, in another spelling)
        return _BY_NAME["an OpenTelemetry span"]
    if (streamed := _stream_piece(obj)) is not None:
        return streamed
    keys = _keys(obj)
    # an object that says what it is ("object": "response") is that, whatever it shares
    named = [s for s in SHAPES if any(k.startswith("object:") for k in s.keys & keys)]
    return max(named or SHAPES, key=lambda s: (len(s.keys & keys), -SHAPES.index(s)))


def _hash_keyed(obj: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The objects of a document keyed by hashes (a recorder's store of calls indexed by
    a digest of each request: goose's scenario recordings), or None."""
    if obj and all(len(str(k)) >= 16 and all(c in hexdigits for c in str(k)) for k in obj) \
            and all(isinstance(v, dict) for v in obj.values()):
        return list(obj.values())
    return None


# what other agents keep on disk, told by keys their own source writes (a shape no
# format reads, and what to import or record instead)
_UI_SAYS = ("ask", "say")
_PI_ENTRIES = frozenset({"message", "thinking_level_change", "model_change", "compaction",
                         "branch_summary", "custom", "custom_message", "label",
                         "session_info"})


def known_file(obj: dict[str, Any]) -> str | None:
    """The sentence for a record of another agent's file no format reads, named: a
    Google ADK session or eval set, Gemini CLI's prompt log, Cline's and Roo Code's UI
    messages, a pi session's lines; None for any other record."""
    kind = obj.get("type") if isinstance(obj.get("type"), str) else None
    events = obj.get("events")
    if isinstance(events, list) and events and all(
            isinstance(e, dict) and "author" in e and "invocation_id" in e for e in events):
        # (google-adk's Session: {"id", "app_name", "user_id", "state", "events", …})
        return (f"this is a Google ADK session ({len(events)} event(s), each with its "
                "author and invocation_id): the agents' conversation, not the model calls "
                "ADK made of it — ADK builds each request from the events with its "
                "instructions and tools, which the session does not keep; import ADK's "
                "OpenTelemetry spans of the run instead, or record it with `memwb proxy`")
    if isinstance(obj.get("eval_set_id"), str) and isinstance(obj.get("eval_cases"), list):
        # (google-adk's EvalSet: {"eval_set_id", "name", "eval_cases": [...]})
        return ("this is a Google ADK eval set (eval_set_id, eval_cases): the "
                "conversations expected of an agent, not recorded model calls; import the "
                "spans or a recording of the eval's run instead")
    if set(obj) == {"sessionId", "messageId", "timestamp", "type", "message"} \
            and type(obj["messageId"]) is int and isinstance(obj["message"], str):
        # (gemini-cli's Logger: ~/.gemini/tmp/<project>/logs.json)
        return ("this is an entry of Gemini CLI's prompt log (logs.json: sessionId, "
                "messageId, type, message), which keeps the user's prompts only, no model "
                "call: import the session's chat file from the same folder, "
                "chats/session-*.json (or .jsonl)")
    if kind in _UI_SAYS and isinstance(obj.get(kind), str) \
            and type(obj.get("ts")) in (int, float) and "role" not in obj:
        # (ClineMessage: {ts, type: "ask" | "say", ask | say, text, …})
        return ("this is a message of Cline's or Roo Code's UI messages (ui_messages.json: "
                f"ts, type {kind!r}, {kind} {shortened(obj[kind], 40)!r}), which hold what "
                "the panel showed, not the model calls: import api_conversation_history.json "
                "from the same task folder")
    if kind == "session" and all(isinstance(obj.get(k), str)
                                 for k in ("id", "timestamp", "cwd")) \
            or kind in _PI_ENTRIES and "parentId" in obj and isinstance(obj.get("id"), str) \
            and isinstance(obj.get("timestamp"), str):
        # (pi's SessionManager: a "session" header, then entries with id and parentId)
        return ("this is a line of a pi coding agent session (~/.pi/agent/sessions/…/"
                "*.jsonl: a 'session' header, then entries with id and parentId), which "
                "this importer does not read: record pi's model calls with `memwb proxy` "
                "instead")
    return None


def unread_record(obj: dict[str, Any]) -> str:
    """One sentence: what ``obj`` (a record no format reads) looks like and why it is
    not read, and the closest format the importer reads, as it is written — or, for a
    record of another agent's file told by its keys (``known_file``), what it is and
    what to import instead."""
    if (known := known_file(obj)) is not None:
        return known
    if (inner := _hash_keyed(obj)) is not None:
        # its keys are no field names: what each object keyed so looks like
        key = str(next(iter(obj)))
        said = unread_record(inner[0]).removeprefix("this looks like ")
        return (f"this looks like {len(inner)} object(s) keyed by hashes ({key[:12]}…), "
                f"the first of them {said}")
    if any(len(str(k)) > 80 or "\n" in str(k) for k in obj):
        # its keys are texts (MetaGPT's response cache keys each answer by its prompt):
        # said by their number and the first's beginning, not listed whole
        key, first = str(next(iter(obj))), SHAPES[0]
        return (f"this looks like a JSON object of {len(obj):,} entries keyed by texts "
                f"(the first {len(key):,} characters long, beginning {key[:60]!r}): a map "
                "of texts, not a record — no request as an API received it, nor the "
                f"model it was sent to; the commonest format this importer reads is "
                f"{first.name}, {first.written}")
    keys = _keys(obj)
    closest = closest_shape(obj)
    looks = _looks_like(obj, keys, closest)
    if looks.startswith(_UNKNOWN) and len(closest.keys & keys) < 2:
        # one shared key ("session_id" of an agent's trajectory) names no format
        first = SHAPES[0]
        return (f"this looks like {looks}; it shares too little with any format this "
                f"importer reads to name the closest — the commonest is {first.name}, "
                f"{first.written}")
    return (f"this looks like {looks}; the closest format this importer reads is "
            f"{closest.name}, {closest.written}")


# each format of the registry (``formats``) as these sentences name it
FORMAT_TITLES = {
    "chat": "an OpenAI chat-completions record", "responses": "a Responses API record",
    "completions": "a legacy completions record",
    "anthropic": "an Anthropic Messages API record", "gemini": "a Gemini API record",
    "bedrock-converse": "a Bedrock Converse record",
    "bedrock-prompt": "a Bedrock InvokeModel record",
    "bedrock-invoke": "a Bedrock InvokeModel record", "cohere": "a Cohere Chat record",
    "cohere-generate": "a Cohere Generate record",
    "sourcegraph": "a Sourcegraph completions record",
    "ollama": "an Ollama record", "langsmith": "a LangSmith run",
    "sharegpt": "a ShareGPT conversation",
    "semantic-kernel": "a Semantic Kernel chat history", "autogen": "an AutoGen recorded call",
    "dspy": "an entry of DSPy's LM history", "continue": "a Continue session",
    "claude-code": "a call of a Claude Code session transcript",
    "openhands": "an OpenHands LLM completion log",
    "swe-agent": "a call of a SWE-agent or mini-swe-agent trajectory",
    "letta": "a call of a Letta agent file's agent",
    "cline": "a call of a Cline or Roo Code task history",
    "atif": "a call of an ATIF trajectory's agent",
    "promptfoo": "a result of a promptfoo eval",
    "codex": "a call of a Codex CLI rollout",
    "gemini-cli": "a call of a Gemini CLI session",
    "tau-bench": "a call of a τ-bench episode",
    "agents-run": "an Agents SDK run result",
    "anthropic-complete": "an Anthropic Text Completions record",
    "conversations": "a Conversations API call (its items)"}


def read_as(obj: dict[str, Any], fmt: str) -> str:
    """What a record a format claimed by its keys, then found malformed, was read as:
    "read as an Ollama record, by its keys: context, created, …" (a request's keys,
    for a record of a request and its response)."""
    request = obj.get("request")
    inner = request if isinstance(request, dict) else obj
    keys = sorted(str(k) for k in inner)
    shown = ", ".join(keys[:8]) + (", …" if len(keys) > 8 else "") if keys else "none"
    whose = "its request's keys" if inner is request else "its keys"
    return f"read as {FORMAT_TITLES.get(fmt, fmt)}, by {whose}: {shown}"
