"""The registry of record formats: which format reads each record of a file.

``FORMATS`` lists every format (``importers/formats/``), in ascending priority — the
order they are tried in; the first whose ``matches`` holds reads the record. A record
with a ``url`` is routed first: ``route`` names the API the URL calls from the paths
the formats declare (``RecordFormat.routes``), and a format of another API then does
not match it. Adding a format is one module under ``importers/formats/`` and one line
here (docs/importing.md, "Adding a format")."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from memory_core.errors import ImportFormatError
from memory_core.importers.common import Exchange, fail, from_unix, iso_time, shortened
from memory_core.importers.formats import (
    Record,
    RecordFormat,
    Route,
    agents_run,
    anthropic,
    anthropic_complete,
    atif,
    autogen,
    bedrock_converse,
    bedrock_invoke,
    bedrock_prompt,
    chat,
    claude_code,
    cline,
    codex,
    cohere,
    cohere_generate,
    completions,
    continue_session,
    conversations,
    dspy,
    gemini,
    gemini_cli,
    langsmith,
    letta,
    ollama,
    openhands,
    promptfoo,
    responses,
    semantic_kernel,
    sharegpt,
    sourcegraph,
    swe_agent,
    tau_bench,
)
from memory_core.importers.formats.fields import header_usage
from memory_core.importers.refusal import read_as, unread_record

FORMATS: tuple[RecordFormat, ...] = (
    sharegpt.FORMAT,  # {"conversations": [...]}, whatever its URL
    atif.FORMAT,  # a call of an ATIF trajectory's agent (gathered: atif_trajectories)
    semantic_kernel.FORMAT,  # a serialised ChatHistory (gathered: chat_histories)
    continue_session.FORMAT,  # Continue's session: sessionId, history of messages
    cline.FORMAT,  # a call of a Cline/Roo Code task history (gathered: cline_histories)
    autogen.FORMAT,  # AutoGen's recorder: mode, messages typed as its LLMMessages
    letta.FORMAT,  # a call of a Letta agent file's agent (gathered: letta_agent_files)
    dspy.FORMAT,  # an entry of DSPy's LM history: messages, outputs, model_type, uuid
    openhands.FORMAT,  # an OpenHands completion log: messages, response, kwargs, latency_sec
    swe_agent.FORMAT,  # a call of a (mini-)SWE-agent trajectory (gathered: agent_trajectories)
    langsmith.FORMAT,  # a LangSmith run (run_type, inputs/outputs)
    promptfoo.FORMAT,  # a promptfoo eval result (gathered: promptfoo_evals), or a results line
    codex.FORMAT,  # a call of a Codex CLI rollout (gathered: codex_rollouts)
    claude_code.FORMAT,  # a call of a Claude Code transcript (gathered: claude_code_transcripts)
    gemini_cli.FORMAT,  # a call of a Gemini CLI session (gathered: gemini_cli_sessions)
    tau_bench.FORMAT,  # a call of a τ-bench episode (gathered: tau_bench_results)
    ollama.FORMAT,  # /api/chat, /api/generate; Ollama's keys
    cohere.FORMAT,  # /v2/chat, /v1/chat; Cohere's answers
    cohere_generate.FORMAT,  # /v1/generate; a prompt answered with generations
    sourcegraph.FORMAT,  # /.api/completions/stream, /code; Cody's speakers
    bedrock_invoke.FORMAT,  # …/model/<id>/invoke: the model's own body
    bedrock_converse.FORMAT,  # …/model/<id>/converse; Converse's blocks
    bedrock_prompt.FORMAT,  # no URL; a plain-prompt Bedrock model's answer
    anthropic_complete.FORMAT,  # …/v1/complete; "\n\nHuman: …" prompts (Claude 1, 2)
    anthropic.FORMAT,  # …/messages, Vertex AI's :rawPredict; the Messages API's shapes
    gemini.FORMAT,  # :generateContent; contents, candidates
    chat.FORMAT,  # request messages (OpenAI's URLs or none)
    completions.FORMAT,  # request prompt
    agents_run.FORMAT,  # the Agents SDK's RunResult: input, raw_responses
    responses.FORMAT,  # request input, response output
    conversations.FORMAT,  # …/conversations(/{id}/items): what a response continues
)


def check_formats(formats: Sequence[RecordFormat]) -> None:
    """ValueError unless the formats are listed in ascending priority, no two share one
    (two formats that both matched a record would leave the list's order to decide)
    or a name, and no two routes share an API name."""
    for a, b in zip(formats, formats[1:], strict=False):
        if a.priority == b.priority:
            raise ValueError(f"formats {a.name!r} and {b.name!r} have the same priority "
                             f"{a.priority}: give each its own")
        if a.priority > b.priority:
            raise ValueError(f"format {b.name!r} (priority {b.priority}) is listed after "
                             f"{a.name!r} (priority {a.priority}): list them by priority")
    names = [f.name for f in formats]
    if len(set(names)) != len(names):
        raise ValueError(f"two formats are named alike: {names}")
    routes: dict[str, Route] = {}
    for r in (r for f in formats for r in f.routes):
        if routes.setdefault(r.api, r) != r:
            raise ValueError(f"two routes are named {r.api!r}: {routes[r.api]} and {r}")


check_formats(FORMATS)
# each API's URL paths, once (the formats of the OpenAI family share theirs)
ROUTES: tuple[Route, ...] = tuple(dict.fromkeys(r for f in FORMATS for r in f.routes))


def route(url: str, record: dict[str, Any] | None = None) -> str | None:
    """Which API a request URL (or path) calls — the ``api`` of the route whose paths it
    ends with: ``"openai"`` (chat completions, Responses, legacy completions),
    ``"anthropic"``, ``"vertex-anthropic"``, ``"gemini"``, ``"ollama"``, ``"cohere"``,
    ``"bedrock"`` (Converse), ``"bedrock-invoke"``, ``"sourcegraph"`` (Cody's); None for anything else (not a model
    call this importer reads). With the ``record``, a route whose ``not_for`` says the
    record is another API's is passed over (then its keys tell its format)."""
    # (Mistral's client marks a streamed call with a fragment: "…/completions#stream")
    path = url.split("?", 1)[0].split("#", 1)[0].rstrip("/")
    return next((r.api for r in ROUTES if r.serves(path) and not (
        record is not None and r.not_for is not None and r.not_for(record))), None)


def origin(url: str) -> str | None:
    """Where a request was sent: its URL's scheme, host and port (never the user and
    password a URL may carry, nor its path; not the scheme's own port, 443 or 80); None
    for a path or a malformed URL."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:
        return None
    if not parts.scheme or not host:
        return None
    host = f"[{host}]" if ":" in host else host
    if _DEFAULT_PORTS.get(parts.scheme.lower()) == port:  # (nock writes "…:443")
        port = None
    return f"{parts.scheme}://{host}" + (f":{port}" if port is not None else "")


_DEFAULT_PORTS = {"https": 443, "http": 80}


def format_of(record: Record) -> RecordFormat | None:
    """The format that reads ``record``: the first of ``FORMATS`` that matches it."""
    return next((f for f in FORMATS if f.matches(record)), None)


def read_record(obj: Any, where: str, index: int, file_state: dict[str, Any]
                ) -> list[Exchange]:
    """The exchanges of one record of a file (the first gets ``index``); ``file_state``:
    one dict for the whole file (``Record.file_state``). A call whose body says no time
    takes the one its recording gives (the format's ``dated_by``: a HAR entry's start,
    an HTTP ``Date``); a record's own start and end (the format's ``timed_by``: when a
    recorder times the call itself, as Inspect's model events and LangSmith's runs do)
    come before the body's; and the usage its response's
    headers count when its body counts none (``fields.header_usage``).
    ImportFormatError naming ``where`` when no format reads it (saying what it looks
    like and the closest format read, ``refusal.unread_record``) or its format finds it
    malformed."""
    if not isinstance(obj, dict):
        raise fail(where, f"expected a JSON object, got {type(obj).__name__}")
    url = obj.get("url")
    record = Record(obj, where, index, route(url, obj) if isinstance(url, str) else None,
                    file_state)
    fmt = format_of(record)
    if fmt is None:  # what it looks like, and the closest format that is read
        raise fail(where, unread_record(obj))
    try:
        exchanges = fmt.read(record)
    except ImportFormatError as e:
        if record.api is not None:  # its URL named the API: the error is that API's
            raise
        # told by its keys alone: say which format it was read as, so a file of another
        # kind sees why it was not read ("an Ollama request needs a 'prompt'" of a file
        # with no Ollama in it)
        raise ImportFormatError(f"{e}; {read_as(obj, fmt.name)}") from None
    header_usage(exchanges, obj.get("usage_headers"), where)
    if isinstance(polled := obj.get("polled"), str):  # (cassette.BackgroundPolls)
        for ex in exchanges:
            ex.notes.append(f"{where}: a background call, answered 'queued': its answer "
                            f"is the last response read of it, at {polled}")
    sent_to = origin(url) if isinstance(url, str) else None
    for ex in exchanges:
        ex.endpoint = ex.endpoint or sent_to
    when = obj.get(fmt.dated_by)
    if isinstance(when, str):
        try:
            at = iso_time(when, where, "recorded_at")
        except ImportFormatError:  # (one bad field: the call undated, not refused)
            at = None
            for ex in exchanges:
                ex.notes.append(f"{where}: its recorded time {shortened(when, 60)!r} is "
                                "no time the importer reads: the call is undated")
        for ex in exchanges:
            if ex.started_at is None:
                ex.started_at = ex.finished_at = at
    began, ended = fmt.timed_by
    start = obj.get(began)
    if start is not None:  # the recorder's own times of the call: before the body's
        at = _when(start, where, began)
        end = obj.get(ended)
        done = at if end is None else max(at, _when(end, where, ended))
        for ex in exchanges:
            ex.started_at, ex.finished_at = at, done
    return exchanges


def _when(value: Any, where: str, what: str) -> datetime:
    """A record's time: ISO 8601 text, or unix seconds (or milliseconds) of a time since
    2000 — not a clock's count from its start (an error naming it otherwise)."""
    text = isinstance(value, str)
    at = iso_time(value, where, what) if text else from_unix(value, where, what)
    if at is None or not text and at.year < 2000:  # (iso_time reads all text or fails)
        raise fail(where, f"{what} {value!r} is no time of a recording (before 2000): "
                          "unix seconds or milliseconds, or ISO 8601 text")
    return at
