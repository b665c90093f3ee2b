"""HTTP recordings of model traffic as VCR cassettes (YAML, what vcrpy and
pytest-recording write): each interaction with an API the importer reads — OpenAI's
chat completions, Responses and legacy completions (and every compatible server),
Anthropic's Messages API, Gemini's ``generateContent``, Ollama's ``/api/chat`` and
``/api/generate``, Bedrock's Converse and InvokeModel, Cohere's Chat — becomes a
request/response record carrying its ``url`` (``registry.route`` tells the API from
the paths the formats serve); gzip bodies are unpacked, AWS event streams decoded, SSE
and JSON-lines bodies reassembled later.

The body spellings read: vcrpy's ``body`` (a string, or ``body.string`` bytes on the
response), the ``content`` text (and ``status_code``) of vcrpy's older httpx stubs, and
the ``parsed_body`` some projects' serializers write."""

from __future__ import annotations

import json
import re
import zlib
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

from memory_core.errors import ImportFormatError
from memory_core.importers.bedrock import (
    EVENT_STREAM,
    event_stream,
    invoke_chunks,
    is_event_stream,
)
from memory_core.importers.bedrock import model_in_path as bedrock_model
from memory_core.importers.bedrock_invoke import invoke_family, own_format
from memory_core.importers.common import ParsedFile, SkippedRecord, Stages, fail
from memory_core.importers.formats.fields import TOKEN_HEADERS
from memory_core.importers.jsonvalues import MAX_DEPTH, check_value, is_sse, load_json
from memory_core.importers.ollama import json_lines
from memory_core.importers.openai_jsonl import parse_records, said
from memory_core.importers.registry import route
from memory_core.limits import (
    CODEC_MODULES,
    TooLarge,
    codec_module,
    decompress,
    limit,
)

# what a model request to the formats' paths sends its conversation in (chat, Anthropic,
# Bedrock and Ollama chat, the Responses API, legacy completions and Ollama's generate,
# Gemini)
CONVERSATION_KEYS = ("messages", "input", "prompt", "contents")

# the end of a skipped model call's reason when its request's conversation is missing
NOT_IN_RECORDING = "the conversation is not in the recording"


def looks_like_cassette(text: str) -> bool:
    head = text.lstrip()[:2000]
    return head.startswith(("interactions:", "http_interactions:", "requests:")) or any(
        f"\n{key}:" in head for key in ("interactions", "http_interactions"))


def _header(headers: Any, name: str) -> str:
    return _raw_header(headers, name).lower()


def _raw_header(headers: Any, name: str) -> str:
    """A header's (first) value as recorded (a serializer may keep it as bytes)."""
    value = _header_value(headers, name)
    return "" if value is None else str(value)


def _header_value(headers: Any, name: str) -> Any:
    """A header's (first) value as recorded, bytes decoded; None when it has none."""
    if not isinstance(headers, dict):
        return None
    for k, v in headers.items():
        if str(k).lower() == name:
            value = v[0] if isinstance(v, list) and v else v
            return value.decode("latin-1") if isinstance(value, bytes) else value
    return None


def usage_headers(headers: Any) -> dict[str, Any]:
    """The token counts a response sent as headers (``fields.TOKEN_HEADERS``), by
    their lower-case names, as recorded (``fields.header_usage`` reads them)."""
    found = {name: _header_value(headers, name) for name in TOKEN_HEADERS.values()}
    return {name: value for name, value in found.items() if value is not None}


def recorded_at(item: dict[str, Any], response: dict[str, Any]) -> str | None:
    """When the call was made, as the recording says it: the interaction's
    ``recorded_at`` — a HAR entry's ``startedDateTime`` (ISO), Ruby's VCR's HTTP date,
    R's vcr's YAML time (before vcr 2.0, its text with " GMT") — else the response's HTTP ``Date`` header (to the second): for
    APIs whose bodies carry no time (Anthropic, Gemini, Bedrock), the only one there is.
    A ``recorded_at`` that is no time is returned as it is (the call undated, noted)."""
    started = item.get("recorded_at")
    if isinstance(started, datetime):  # R's vcr: "2026-08-02 17:44:04", a YAML time
        return _utc(started)
    if isinstance(started, str) and started:
        try:
            datetime.fromisoformat(started.replace("Z", "+00:00"))
            return started
        except ValueError:  # Ruby's VCR: "Wed, 19 Aug 2026 14:34:53 GMT"
            return _http_date(started) or _named_utc(started) or started
    date = _raw_header(response.get("headers"), "date")
    return _http_date(date) if date else None  # (an unreadable one: the call is undated)


def _named_utc(text: str) -> str | None:
    """R's vcr before 2.0 ("2024-10-08 05:33:27 GMT"): a time and the name of UTC."""
    stamp, _, zone = text.rpartition(" ")
    if zone not in ("GMT", "UTC"):
        return None
    try:
        return _utc(datetime.fromisoformat(stamp).replace(tzinfo=UTC))
    except ValueError:
        return None


def _http_date(text: str) -> str | None:
    """An HTTP date ("Wed, 19 Aug 2026 14:34:53 GMT") as an ISO time; None if it is not one."""
    try:
        return _utc(parsedate_to_datetime(text))
    except (TypeError, ValueError, IndexError):
        return None


def _utc(at: datetime) -> str:
    return (at if at.tzinfo else at.replace(tzinfo=UTC)).isoformat()


def _decompress_other(raw: bytes, encoding: str, where: str) -> bytes:
    """A body compressed otherwise than gzip/deflate (br, zstd), bounded by
    MEMWB_MAX_DECOMPRESSED like the others; one error naming the encoding and the
    package when its module is missing (both are dependencies: an install that lost
    one)."""
    if encoding not in CODEC_MODULES:
        raise fail(where, f"body has content-encoding {encoding!r}, which the importer "
                          "does not read (gzip, deflate, br and zstd are read)")
    if codec_module(encoding) is None:
        package = CODEC_MODULES[encoding][0]
        raise fail(where, f"body has content-encoding {encoding!r}: install the "
                          f"{package!r} package to read it (pip install {package})")
    try:
        return decompress(raw, encoding)
    except TooLarge:
        raise
    except Exception as e:  # noqa: BLE001 - each codec raises its own error type
        raise fail(where, f"body cannot be decoded ({encoding}): {e}") from None


def _body(side: dict[str, Any], where: str, *, plain_ok: bool = False) -> Any:
    """A request's or response's body as JSON (a dict) or SSE text (a string);
    ``plain_ok``: a body that is no JSON is its text (a failed call's error, said as
    plain text)."""
    if "parsed_body" in side:
        return side["parsed_body"]
    # vcrpy's older httpx stubs wrote a response as {status_code, http_version,
    # headers, content}: the body as text, already decompressed
    raw = side.get("body") if "body" in side else side.get("content")
    if isinstance(raw, dict):
        raw = raw.get("string")
    if raw is None or raw == "":
        return None
    if isinstance(raw, bytes) and (_header(side.get("headers"), "content-type").startswith(
            EVENT_STREAM) or is_event_stream(raw)):
        # Bedrock's ConverseStream and InvokeModelWithResponseStream (told by its bytes
        # too: some cassettes keep no response headers)
        events = event_stream(raw, where)
        chunks = invoke_chunks(events, where)
        return chunks if chunks is not None else events
    if isinstance(raw, bytes):
        encoding = _header(side.get("headers"), "content-encoding")
        try:
            if encoding == "gzip" or raw[:2] == b"\x1f\x8b":  # both bounded
                raw = decompress(raw, "gzip")  # by MEMWB_MAX_DECOMPRESSED
            elif encoding == "deflate":
                raw = decompress(raw, "deflate")
            elif encoding not in ("", "identity"):
                raw = _decompress_other(raw, encoding, where)
            raw = raw.decode("utf-8")
        except TooLarge as e:
            raise fail(where, f"body: {e}") from None
        except (OSError, EOFError, zlib.error, UnicodeDecodeError) as e:
            raise fail(where, f"body cannot be decoded: {e}") from None
    if not isinstance(raw, str):
        raise fail(where, f"body must be text, got {type(raw).__name__}")
    if is_sse(raw):
        return raw
    lines = json_lines(raw, where)  # a stream of JSON lines (Ollama's)
    if lines is not None:
        return lines
    try:
        return load_json(raw, where, "body")
    except ImportFormatError:
        if plain_ok:
            return raw
        raise


def _python_tag_as_value(loader: Any, suffix: str, node: Any) -> Any:
    """A ``!!python/…`` node read as the plain value it holds, never as an object: vcrpy
    with aiohttp writes header names as ``!!python/object/apply:multidict._multidict.istr
    [Content-Type]`` (one argument: that string), which a safe loader refuses."""
    import yaml

    if isinstance(node, yaml.SequenceNode):
        items = loader.construct_sequence(node, deep=True)
        return items[0] if len(items) == 1 and isinstance(items[0], str) else items
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    return loader.construct_scalar(node)


def _loader() -> Any:
    """PyYAML's SafeLoader (libyaml's when installed), reading ``!!python/…`` tags as
    plain values."""
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    loader: Any = type("CassetteLoader", (base,), {})  # (the tags on a copy)
    loader.add_multi_constructor("tag:yaml.org,2002:python/", _python_tag_as_value)
    # Ruby's VCR (Psych) marks a body that is not UTF-8 "!binary": base64, as "!!binary"
    loader.add_constructor("!binary", base.construct_yaml_binary)
    return loader


def _bounded(text: str) -> None:
    """Refuse, before anything is built, a YAML text nested deeper than MAX_DEPTH or
    whose aliases repeat more than ``MEMWB_MAX_YAML_EXPANSION`` nodes in all: a
    974-byte "billion laughs" names nine anchors, each repeating the one before ten
    times. Read as parser events, counting each anchored node's size once."""
    import yaml

    cap = limit("MEMWB_MAX_YAML_EXPANSION")
    sizes: dict[str, int] = {}
    open_nodes: list[list[Any]] = []  # [size so far, anchor] of each open collection
    repeated = 0
    for ev in yaml.parse(text, Loader=_loader()):
        if isinstance(ev, yaml.CollectionStartEvent):
            if len(open_nodes) >= MAX_DEPTH:
                raise fail(f"line {ev.start_mark.line + 1}",
                           f"YAML nested more than {MAX_DEPTH} levels deep")
            open_nodes.append([1, ev.anchor])
            continue
        if isinstance(ev, yaml.AliasEvent):
            size = sizes.get(ev.anchor or "", 1)
            repeated += size
            if repeated > cap:
                raise fail(f"line {ev.start_mark.line + 1}",
                           f"YAML aliases repeat more than {cap} nodes; raise "
                           "MEMWB_MAX_YAML_EXPANSION to allow more")
            anchor = None
        elif isinstance(ev, yaml.ScalarEvent):
            size, anchor = 1, ev.anchor
        elif isinstance(ev, yaml.CollectionEndEvent) and open_nodes:
            size, anchor = open_nodes.pop()
        else:
            continue
        if anchor is not None:
            sizes[anchor] = size
        if open_nodes:
            open_nodes[-1][0] += size


def read_yaml(text: str, what: str, *, every: bool = False) -> Any:
    """``text`` read as YAML, safely and bounded (``_bounded``): its one document, or
    with ``every`` the list of all of them; one error naming ``what`` when it is no
    YAML (PyYAML's message spans lines: one, with its position)."""
    import yaml

    try:
        _bounded(text)
        loader = _loader()
        return list(yaml.load_all(text, Loader=loader)) if every \
            else yaml.load(text, Loader=loader)  # noqa: S506 - a SafeLoader, see _loader
    except yaml.YAMLError as e:
        why = "; ".join(" ".join(ln.split()) for ln in str(e).splitlines() if ln.strip())
        raise fail("file", f"invalid YAML {what}: {why}") from None


def yaml_keys(text: str) -> str | None:
    """The first keys of ``text`` read as a YAML mapping, or None when it is no YAML
    mapping: what a refusal of a YAML file that is no cassette says it holds."""
    if text.lstrip().startswith(("{", "[")):
        return None
    try:
        doc = read_yaml(text, "file")
    except ImportFormatError:
        return None
    if not isinstance(doc, dict) or not doc:
        return None
    keys = [str(k) for k in doc]
    return ", ".join(keys[:8]) + (f" and {len(keys) - 8} more" if len(keys) > 8 else "")


def cassette_records(text: str) -> tuple[list[tuple[str, Any]], list[SkippedRecord]]:
    """The cassette's LLM interactions as ``{"request", "response"|"error"}`` records."""
    return cassette_records_of(read_yaml(text, "cassette"))


def cassette_records_of(doc: Any) -> tuple[list[tuple[str, Any]], list[SkippedRecord]]:
    """``cassette_records`` of a cassette already read (a packed one's, unpacked)."""
    # vcrpy's "interactions"; Ruby's VCR and R's vcr (the format they began) write
    # "http_interactions" of the same shape
    interactions = (doc.get("interactions", doc.get("http_interactions"))
                    if isinstance(doc, dict) else None)
    if interactions is None and isinstance(doc, dict) and "requests" in doc:
        interactions = _paired(doc)
    if not isinstance(interactions, list):
        raise fail("file", "a cassette must have an 'interactions' (or "
                           "'http_interactions') list")
    return interaction_records(interactions)


def _paired(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """LangChain's cassettes (``langchain_tests``' persister, gzipped ``.yaml.gz``):
    ``requests`` and ``responses`` as two lists, the n-th response answering the n-th
    request, each as vcrpy writes it."""
    requests, responses = doc.get("requests"), doc.get("responses")
    if not isinstance(requests, list) or not isinstance(responses, list):
        raise fail("file", "a cassette of 'requests' needs a 'responses' list beside it")
    if len(requests) != len(responses):
        raise fail("file", f"the cassette holds {len(requests)} requests but "
                           f"{len(responses)} responses: they cannot be paired")
    return [{"request": q, "response": r} for q, r in zip(requests, responses, strict=True)]


# a background response's poll (``GET …/responses/{id}``) or cancellation (``POST
# …/responses/{id}/cancel``), and the statuses a response ends in
_POLL = re.compile(r"/responses/([^/?#]+?)(/cancel)?/?(?:[?#].*)?$")
_QUEUED = ("queued", "in_progress")
_ENDED = ("completed", "incomplete", "failed", "cancelled")


class BackgroundPolls:
    """A background Responses call (``"background": true``) is answered ``queued`` and
    polled, or cancelled, until its status ends: the last poll's body, once ended, is
    its answer. Only the polls' bodies are read ahead (their paths name them); a call
    answered ``queued`` is seen as the file's records are read, before its polls."""

    def __init__(self, interactions: list[tuple[str, Any]]) -> None:
        """``interactions``: each vcrpy-shaped interaction after where it is."""
        # each poll's index → what it is, and the response's id
        self.polls: dict[int, tuple[str, str]] = {}
        self.ended: dict[str, tuple[str, dict[str, Any]]] = {}
        self.started: set[str] = set()
        for i, (where, item) in enumerate(interactions):
            req = item.get("request") if isinstance(item, dict) else None
            resp = item.get("response") if isinstance(item, dict) else None
            if not isinstance(req, dict) or not isinstance(resp, dict):
                continue
            polled = _POLL.search(str(req.get("uri") or req.get("url") or ""))
            method = str(req.get("method") or "POST").upper()
            if polled is None or not (method == "GET" or method == "POST" and polled[2]):
                continue
            try:
                body = _body(resp, f"{where}: response", plain_ok=True)
            except ImportFormatError:
                continue  # (its own reading says so)
            if isinstance(body, dict) and body.get("object") == "response" \
                    and body.get("id") == polled[1]:
                self.polls[i] = ("the cancellation" if polled[2] else "a poll", polled[1])
                if body.get("status") in _ENDED:
                    self.ended[polled[1]] = (where, body)

    def answer(self, record: dict[str, Any]) -> str | None:
        """Give a call answered ``queued`` the ended body its polls read, if any; where
        that was read (None: not a background call, or never seen to end)."""
        got = record.get("response")
        if not isinstance(got, dict) or got.get("status") not in _QUEUED \
                or not isinstance(got.get("id"), str):
            return None
        self.started.add(got["id"])
        if got["id"] not in self.ended:
            return None
        where, body = self.ended[got["id"]]
        record["response"] = body
        return where

    def skipped(self, i: int, where: str, method: str, path: str) -> SkippedRecord | None:
        """Why interaction ``i`` is skipped when it polls a call the file started."""
        poll = self.polls.get(i)
        if poll is None or poll[1] not in self.started:
            return None
        return SkippedRecord(where=where, reason=(
            f"{poll[0]} of background response {poll[1]} ({method} {path}), read into the "
            "call that started it"))


def interaction_records(interactions: list[Any], label: str = "interaction"
                        ) -> tuple[list[tuple[str, Any]], list[SkippedRecord]]:
    """vcrpy-shaped interactions (``{"request": {method, uri, body, headers},
    "response": {status, headers, body}}``) as records; each is named ``label`` and its
    number (a HAR file's are converted to this shape, ``har.py``). One that cannot be
    read (or a container's error in its place) is a row of its error
    (``openai_jsonl.parse_records`` notes it)."""
    rows: list[tuple[str, Any]] = []
    skipped: list[SkippedRecord] = []
    named = [(f"{label} {i}", item) for i, item in enumerate(interactions, start=1)]
    polls = BackgroundPolls(named)
    for i, (where, item) in enumerate(named):
        try:  # one that cannot be read is handed on as its error: noted, the rest read
            got = item if isinstance(item, ImportFormatError) else \
                interaction_record(item, where, label, polls, i)
        except ImportFormatError as e:
            got = e
        if isinstance(got, ImportFormatError):
            rows.append((where, got))
        elif isinstance(got, SkippedRecord):
            skipped.append(got)
        else:
            rows.append(got)
    return rows, skipped


def status_code(resp: dict[str, Any], where: str) -> int:
    """A recorded response's HTTP status: vcrpy's ``status: {code, message}``, go-vcr's
    ``code: 200`` (beside ``status: "200 OK"``), vcrpy's older httpx stubs'
    ``status_code``; 200 when none is recorded. A status that is no number is refused
    (a failed call must not be read as an answer)."""
    status = resp.get("status")
    code = status.get("code", 200) if isinstance(status, dict) else resp.get(
        "code", resp.get("status_code", status if status is not None else 200))
    if isinstance(code, str) and (number := code.split(" ", 1)[0]).isdigit():
        code = int(number)  # "200 OK"
    if not isinstance(code, int) or isinstance(code, bool):
        raise fail(where, f"the response's status must be an HTTP status code, got {code!r}")
    return code


def status_text(resp: dict[str, Any]) -> str:
    """The reason phrase a recorded status carries (vcrpy's ``status.message``, go-vcr's
    ``status: "500 Internal Server Error"``), after a space; "" when none is recorded."""
    status = resp.get("status")
    text = status.get("message") if isinstance(status, dict) else \
        status.split(" ", 1)[1] if isinstance(status, str) and " " in status else None
    return f" {text.strip()}" if isinstance(text, str) and text.strip() else ""


def _unknown_api(req: dict[str, Any], where: str) -> str:
    """What a POST to a path no format serves sends, when it is a model call's body: a
    Hugging Face text-generation call (``{"inputs", "parameters"}``), or a conversation
    sent to a path the importer does not know."""
    try:
        body = _body(req, f"{where}: request")
    except ImportFormatError:
        return ""
    if not isinstance(body, dict):
        return ""
    if "inputs" in body:
        return (": a Hugging Face text-generation call ({\"inputs\", \"parameters\"}, "
                "text-generation-inference's own API), a format it does not read")
    # (not 'input' nor 'prompt': embeddings and moderations send those)
    sent = [k for k in ("messages", "contents") if k in body]
    return (f": it sends {sent[0]!r}, but to a path no API this importer reads is served "
            "at" if sent else "")


# APIs whose model work happens on the server, apart from the call recorded: OpenAI's
# Assistants API (its runs call the model; Azure OpenAI serves it under /openai/),
# Anthropic's Message Batches and OpenAI's Batch API (answered later, elsewhere)
_ASSISTANTS = re.compile(r"/(?:v1|openai)/(?:assistants|threads)(?:/|$)")
_MESSAGE_BATCHES = re.compile(r"/v1/messages/batches(?:/[^/]+(/results)?)?$")
_BATCHES = re.compile(r"/(?:v1|openai)/batches(?:/|$)")


_SERVER_SIDE = {
    "assistants": "OpenAI's Assistants API: the runs' model calls happen on the server and "
                  "are not in the recording",
    "batch-sent": "Anthropic's Message Batches: the answers come later from …/results, not "
                  "in this call",
    "batch-status": "Anthropic's Message Batches: a batch's status; the answers come from "
                    "…/results, not in this call",
    "batch-results": "Anthropic's Message Batches: the results of a batch, apart from the "
                     "requests they answer (a batch file of both, requests and results "
                     "concatenated, is read)",
    "openai-batch": "OpenAI's Batch API: the requests are in an uploaded file and the "
                    "answers in its output file, not in this call (the two files "
                    "concatenated are read as a batch file)"}


def _server_side(path: str, method: str) -> str:
    """Why a call to an API whose model work happens on the server holds no model call
    to import, naming the API, after ": " ("" for any other path)."""
    batch = _MESSAGE_BATCHES.search(path)
    kind = ("assistants" if _ASSISTANTS.search(path) else
            None if batch is None and not _BATCHES.search(path) else
            "openai-batch" if batch is None else "batch-results" if batch[1] else
            "batch-sent" if method == "POST" and path.endswith("/batches") else
            "batch-status")
    return "" if kind is None else f": {_SERVER_SIDE[kind]}"


def _all_server_side(skipped: list[SkippedRecord]) -> tuple[str, str] | None:
    """When every call skipped is one to an API whose model work happens on the server:
    what each such API's calls hold instead, once; and the calls (three at most)."""
    whys = [next((w for w in _SERVER_SIDE.values() if k.reason.endswith(f": {w}")), None)
            for k in skipped]
    if not skipped or None in whys:
        return None
    calls = list(dict.fromkeys(k.reason[:-len(w) - 2].removeprefix(_NOT_READ)[1:-1]
                               for k, w in zip(skipped, whys, strict=True) if w))
    shown = "; ".join(calls[:3]) + (f"; {len(calls) - 3} more" if len(calls) > 3 else "")
    return "; ".join(dict.fromkeys(w for w in whys if w)), shown


_NOT_READ = "not a model call this importer reads "


def interaction_record(item: Any, where: str, label: str = "interaction",
                       polls: BackgroundPolls | None = None, index: int = 0
                       ) -> tuple[str, Any] | SkippedRecord:
    """One vcrpy-shaped interaction as a ``{"request", "response"|"error"}`` record
    (with its ``url``), or why it is skipped (not a model call, no body recorded, a
    background response's poll); ``polls``: the file's (``index``: this one's, from 0)."""
    req = item.get("request") if isinstance(item, dict) else None
    resp = item.get("response") if isinstance(item, dict) else None
    if not isinstance(req, dict) or not isinstance(resp, dict):
        has = ", ".join(sorted(map(str, item))[:6]) if isinstance(item, dict) else \
            type(item).__name__
        what = (" — a WebSocket message (a realtime session recorded message by message), "
                "not an HTTP call" if isinstance(item, dict) and "direction" in item else
                " — a gRPC call's sample, not an HTTP call"
                if isinstance(item, dict) and "request_sample" in item else "")
        raise fail(where, f"an {label} needs a 'request' and a 'response' object; this one "
                          f"has {has}{what}")
    # vcrpy writes "uri", Go's go-vcr "url"
    uri = str(req.get("uri") or req.get("url") or "")
    path = uri.split("?", 1)[0].split("#", 1)[0].rstrip("/")
    method = str(req.get("method") or "POST").upper()
    if not uri:
        return SkippedRecord(where=where, reason=f"its request ({req.get('method')}) "
                                                 "records no URL (no 'uri' or 'url')")
    if polls is not None and (poll := polls.skipped(index, where, method, path)):
        return poll
    api = route(uri)
    if api is None or method != "POST":
        # (a model call is a POST; a GET of …/chat/completions lists stored
        # completions, a DELETE of …/responses/{id} removes one)
        return SkippedRecord(where=where, reason=f"{_NOT_READ}({req.get('method')} {path})"
                                                 + (_server_side(path, method) or (
                                                     _unknown_api(req, where)
                                                     if method == "POST" else "")))
    body = _body(req, f"{where}: request")
    if body is None:  # (a recorder that filtered bodies out, or a GET)
        return SkippedRecord(where=where, reason=(
            f"the request body to {path} was not recorded: {NOT_IN_RECORDING}"))
    if not isinstance(body, dict):
        raise fail(where, f"the request body is not a JSON object, got "
                          f"{type(body).__name__}")
    check_value(body, where, strings=True)
    if api == "bedrock-invoke" and invoke_family(body, bedrock_model(path)) is None:
        # InvokeModel sends the model's own body: those read are bedrock_invoke.py's
        return SkippedRecord(where=where, reason=own_format(bedrock_model(path), body))
    if api not in ("bedrock-invoke", "openai-conversations") and not any(
            k in body for k in CONVERSATION_KEYS) and not (
            api == "cohere" and "message" in body) and not (  # (Cohere v1's new turn)
            api == "openai" and "conversation" in body):  # (its items held server-side)
        # e.g. Portkey's prompts API (…/prompts/<id>/completions): the server renders
        # a stored template from the variables sent, so the conversation is not here
        if api == "ollama" and set(body) <= {"model", "keep_alive", "options"}:
            # (Ollama's documented way to load a model, or with keep_alive 0 unload it)
            return SkippedRecord(where=where, reason=(
                f"Ollama's request to {'unload' if body.get('keep_alive') in (0, '0') else 'load'} "
                f"the model ({path} naming no prompt or messages): no model call"))
        return SkippedRecord(where=where, reason=(
            f"the request to {path} sends no {', '.join(CONVERSATION_KEYS[:-1])} or "
            f"{CONVERSATION_KEYS[-1]} (its keys: "
            f"{', '.join(sorted(map(str, body))) or 'none'}): {NOT_IN_RECORDING}"))
    code = status_code(resp, where)
    # (a failed call's error may be plain text: a 422's "Failed to deserialize …")
    answer = _body(resp, f"{where}: response", plain_ok=code != 200)
    record: dict[str, Any] = {"request": body, "url": uri}
    when = recorded_at(item, resp)
    if when is not None:
        record["recorded_at"] = when
    counted = usage_headers(resp.get("headers"))
    if counted:
        record["usage_headers"] = counted
    if code == 200 and answer is not None:
        record["response"] = answer
        if polls is not None and (read := polls.answer(record)) is not None:
            record["polled"] = read  # (a background call: its answer a poll read)
    elif code == 200:
        # a 200 with no body (the client gave up reading it): the answer was not
        # recorded, which "HTTP 200" as the run's error did not say
        record["error"] = "the response body was not recorded (HTTP 200)"
    else:
        # the status as recorded, then the error as the server sent it (its keys in
        # the body's order; an "error" object's, without the wrapper)
        error = answer.get("error", answer) if isinstance(answer, dict) else answer
        said = error if isinstance(error, str) or not error else json.dumps(
            error, ensure_ascii=False)
        record["error"] = f"HTTP {code}{status_text(resp)}" + (f": {said}" if said else "")
    return where, record


def parse_recording(rows: list[tuple[str, Any]], skipped: list[SkippedRecord], what: str,
                    unit: str, stages: Stages | None) -> ParsedFile:
    """An HTTP recording's model calls (``what``: "cassette", its ``unit``s
    "interaction"s), read as records; an error naming what it holds instead when it
    holds none."""
    if skipped and not rows and all(k.reason.endswith(NOT_IN_RECORDING) for k in skipped):
        # model calls all, but none with its conversation (a scrubbed request body)
        raise fail("file", f"the {what} holds {len(skipped)} model call(s), none of which "
                           f"can be imported: {said(skipped)}")
    server_side = None if rows else _all_server_side(skipped)
    if server_side is not None:  # (the Assistants API's threads and runs, say)
        raise fail("file", f"the {what} holds no model call this importer reads: "
                           f"{server_side[0]}; its {len(skipped)} {unit}(s): "
                           f"{server_side[1]}")
    if not rows:
        # what it holds instead, each kind once (an embeddings cassette: its URL)
        raise fail("file", f"the {what} holds no model call this importer reads "
                           "(chat completions, Responses, Anthropic Messages and Text "
                           "Completions, Gemini, Cohere, Ollama, Bedrock, Sourcegraph); its "
                           f"{len(skipped)} {unit}(s): "
                           f"{said(skipped)}" if skipped else
                   f"the {what} holds no {unit}")
    return parse_records(rows, skipped, stages)


def parse_cassette(text: str, stages: Stages | None = None) -> ParsedFile:
    """A VCR cassette's model calls (see the module's docstring)."""
    rows, skipped = cassette_records(text)
    return parse_recording(rows, skipped, "cassette", "interaction", stages)
