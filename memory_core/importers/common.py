"""What every importer produces (one ``Exchange`` per recorded model request) and the
conversions they share: OpenAI-style messages to ``Message``, tool-name resolution.

Parsers only read and validate; nothing here touches storage (see ``writer.py``)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, Field

from memory_core.errors import ImportFormatError
from memory_core.models.base import Usage
from memory_core.models.openai_codec import (
    OPENAI_ROLES,
    from_openai_message,
    from_openai_messages,
    is_derived_call_id,
    parse_arguments,
)
from memory_core.types import (
    UNDATED_ORIGIN,
    Message,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    canonical_json,
)

__all__ = ["OPENAI_ROLES"]

# the family of the container that read a file (``containers.py``): "openai" for the
# records the formats of ``registry.py`` read, "otel" for OTLP spans
ImportFormat = Literal["openai", "otel"]
Progress = Callable[[int, int], None]
# ``stages(stage, done, total)`` as an import goes (see ``import_file``)
Stages = Callable[[str, int, int], None]
READ_EVERY = 1000  # records read between two "read" reports
T = TypeVar("T")



class SkippedRecord(BaseModel):
    """A record of the file that was deliberately not imported, and why."""

    where: str
    reason: str


def not_read(where: str, error: ImportFormatError) -> SkippedRecord:
    """The note for one element of a file that cannot be read (a record, an
    interaction, a span): it is left out and the rest of the file imported."""
    return SkippedRecord(where=where,
                         reason="not imported: " + str(error).removeprefix(where + ": "))


class ImportReport(BaseModel):
    """What an import wrote. ``already_imported`` is True when the file's runs were
    found in the store and nothing was written (importing is idempotent per file)."""

    format: ImportFormat
    file: str
    sha1: str
    threads_created: list[str] = Field(default_factory=list)
    # threads earlier imports stored that this one continued (same conversation)
    threads_extended: list[str] = Field(default_factory=list)
    messages_stored: int = 0
    embeddings_stored: int = 0
    runs_created: list[str] = Field(default_factory=list)
    skipped: list[SkippedRecord] = Field(default_factory=list)
    already_imported: bool = False
    resumed: bool = False  # an earlier import of this file stopped part way; completed
    # what its model calls were read as, each once in file order: "openai" (the OpenAI
    # family), "anthropic", "gemini", "ollama", "bedrock", or "otel" (spans)
    apis: list[str] = Field(default_factory=list)
    # no call of the file is dated (a cassette without Date headers): its runs keep its
    # order at placeholder times, which ``memwb runs`` and the pages show as not recorded
    undated: bool = False


@dataclass
class HeldHistory:
    """A Responses API request that sent ``previous_response_id`` (or ``conversation``)
    instead of its history: the server held the earlier turns.

    ``source`` is the record whose response was referenced when it is in the file: the
    request's history was then reconstructed from it, and the prompt's messages
    ``start`` to ``start + count - 1`` (instructions, recent and input lanes in order)
    are those reconstructed turns, which this request did not send. ``unrecorded``
    names the reference at the root of the chain whose history is not in the file
    (this request's own, or one further up); the history before it is unknown."""

    reference: str  # "previous_response_id 'resp_…'" or "conversation 'conv_…'"
    source: str | None = None
    start: int = 0
    count: int = 0
    unrecorded: str | None = None
    continues: int | None = None  # the index of the exchange whose response it continues


def held_note(where: str, h: HeldHistory) -> str:
    """The note for a request whose history the server held: where it was rebuilt from,
    or that it is not in the file."""
    if h.source is None:
        return (f"{where}: history held server-side ({h.reference}) is not in the file: "
                "the prompt holds only what this request sent")
    note = (f"{where}: history held server-side ({h.reference}) reconstructed from "
            f"{h.source}: prompt messages {h.start + 1}–{h.start + h.count} were not sent "
            "with this request")
    if h.unrecorded is not None:
        note += f"; the history before {h.unrecorded} is not in the file"
    return note


@dataclass
class Exchange:
    """One recorded model request and its response, normalised.

    ``instructions`` are the leading system messages (the prompt's instructions lane);
    ``history`` is the rest of the request in order; ``response`` the assistant reply.
    """

    where: str  # "line 3" or "span 5b8aa5a2d2c872e8 (chat gpt-4o)": used in errors
    index: int
    instructions: list[Message]
    history: list[Message]
    response: Message | None
    thread_key: str | None = None
    resource_id: str | None = None
    model: str | None = None  # the model that answered: the response's, else the request's
    requested_model: str | None = None  # the model the request named (or its URL)
    endpoint: str | None = None  # where the call was sent: its URL's origin, when recorded
    usage: Usage = field(default_factory=Usage)
    usage_known: bool = False
    # what the recorded usage says within its counts: "reasoning" (output tokens spent
    # thinking), "cached_input" (input tokens read from the provider's prompt cache)
    usage_detail: dict[str, int] = field(default_factory=dict)
    finish_reason: str | None = None
    stop_sequence: str | None = None  # the stop sequence that ended the answer (Anthropic)
    params: dict[str, Any] = field(default_factory=dict)  # recorded request parameters
    tools: list[dict[str, Any]] | None = None  # offered tools; None: not recorded
    started_at: datetime | None = None
    finished_at: datetime | None = None
    error: str | None = None  # the recorded call failed (status "failed")
    notes: list[str] = field(default_factory=list)  # what was dropped while reading
    held: HeldHistory | None = None  # history held server-side (Responses API)
    # the index of the latest earlier exchange whose output items (by their ids) this
    # request sends back in its input (Responses API): the response it continues
    replays: int | None = None
    # request fields that are neither the conversation nor sampling parameters
    # (``store``, ``stream``, …): kept in the run's import record as they were sent
    request_fields: dict[str, Any] = field(default_factory=dict)
    api: str | None = None  # the API when not the OpenAI family: "anthropic", "gemini", "ollama", "bedrock"

    def conversation(self) -> list[Message]:
        """The history and the response (when recorded), as a thread stores them."""
        return self.history + ([self.response] if self.response is not None else [])


@dataclass
class ParsedFile:
    """A parser's result: the exchanges to import and the records it skipped."""

    exchanges: list[Exchange]
    skipped: list[SkippedRecord] = field(default_factory=list)
    records: int = 0  # records of the file read (0: one a request)

    def __post_init__(self) -> None:
        self.records = self.records or len(self.exchanges)


def date_undated(exchanges: Sequence[Exchange]) -> list[Exchange]:
    """Give an undated exchange of a file whose other exchanges carry times (a failed
    call recorded without a response, whose ``created`` dated the others) the time of
    the dated one before it, a microsecond later for each undated one in a row (before
    the first dated one: just before it), with a note saying so. It was dated
    1970-01-01 plus its index, and so sorted before the calls it came between. A file
    with no time at all keeps that rule (``undated``). Returns the exchanges placed."""
    dated = [ex for ex in exchanges if ex.started_at is not None]
    if not dated or len(dated) == len(exchanges):
        return []
    prev: Exchange | None = None
    step = 0
    leading: list[Exchange] = []
    placed: list[Exchange] = []
    for ex in exchanges:
        if ex.started_at is not None or ex.finished_at is not None:
            if ex.started_at is not None:
                prev, step = ex, 0
            continue
        if prev is None:
            leading.append(ex)
            continue
        step += 1
        base = prev.finished_at or prev.started_at
        assert base is not None
        _place(ex, base + timedelta(microseconds=step), f"just after {prev.where}")
        placed.append(ex)
    first = dated[0]
    assert first.started_at is not None
    for back, ex in enumerate(reversed(leading), start=1):
        _place(ex, first.started_at - timedelta(microseconds=back), f"just before {first.where}")
    return placed + leading


_SECOND, _MICRO = timedelta(seconds=1), timedelta(microseconds=1)


def keep_file_order(exchanges: Sequence[Exchange], placed: Sequence[Exchange] = ()
                    ) -> str | None:
    """Calls recorded in the same second keep the file's order. Runs are listed by
    time, then run id (a hash): a cassette's third call, dated the second of its
    second, was listed before it. A call whose time has no part finer than the second
    (an HTTP ``Date`` header, OpenAI's ``created``), or that ``date_undated`` placed,
    and that is not after a call earlier in the file in that second, is placed a
    microsecond after the latest of them — inside the second it was recorded in — with
    a note saying so. A time with a finer part is as recorded, and so is a call the
    recording puts in an earlier second than a call before it: times order them. The
    result says so when a call was over before one the file lists first began (the
    file's order and its times disagree; None when they do not): one sentence for the
    file, as a log of concurrent calls may disagree on every line."""
    latest: dict[datetime, datetime] = {}  # each second: the latest time given in it
    moved = {id(ex) for ex in placed}
    newest: tuple[str, datetime] | None = None  # the latest-dated call so far, its time
    disagree: list[tuple[str, datetime, tuple[str, datetime]]] = []  # and the call before
    for ex in exchanges:
        at = ex.started_at
        if at is None:
            continue
        if newest is not None and (ex.finished_at or at).replace(microsecond=0) \
                < newest[1].replace(microsecond=0):
            disagree.append((ex.where, at, newest))
        elif newest is None or at > newest[1]:
            newest = (ex.where, at)
        second = at.replace(microsecond=0)
        last = latest.get(second)
        if (at == second or id(ex) in moved) and last is not None and at <= last \
                and last + _MICRO < second + _SECOND:
            ex.started_at = at = last + _MICRO
            if ex.finished_at is not None and ex.finished_at < at:
                ex.finished_at = at
            if id(ex) not in moved:  # (a placed call's note already says where it is)
                ex.notes.append(
                    f"{ex.where}: recorded in the same second as a call before it in the "
                    f"file; placed {(at - second) // _MICRO} µs later, to keep the "
                    "file's order")
        latest[second] = max(at, last) if last is not None else at
    if not disagree:
        return None
    (where, at, (before, then)), more = disagree[0], len(disagree) - 1
    others = f" (and {more} more call{'s' if more > 1 else ''})" if more else ""
    return (f"{where}{others} is recorded before a call the file lists earlier "
            f"({at.isoformat()}, before {before} at {then.isoformat()}): runs are listed "
            "by their recorded times, not the file's order")


def _place(ex: Exchange, at: datetime, where: str) -> None:
    ex.started_at = at
    ex.finished_at = ex.finished_at or at
    ex.notes.append(f"{ex.where}: no time recorded; placed {where}")


def fail(where: str, problem: str) -> ImportFormatError:
    return ImportFormatError(f"{where}: {problem}")


def undated(index: int) -> datetime:
    return UNDATED_ORIGIN + timedelta(seconds=index)


# datetimes outside these years are a corrupt record, not a recording
_EARLIEST, _LATEST = datetime(1970, 1, 1, tzinfo=UTC), datetime(9000, 1, 1, tzinfo=UTC)


def list_of(value: Any, where: str, name: str) -> list[Any]:
    """``value`` as the list a format has there (None: empty); anything else named."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise fail(where, f"'{name}' must be a list, got {value!r}"[:300])
    return value


def object_of(value: Any, where: str, name: str) -> dict[str, Any]:
    """``value`` as the object a format has there (None: empty); anything else named."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise fail(where, f"'{name}' must be an object, got {value!r}"[:300])
    return value


def iso_time(value: Any, where: str, what: str) -> datetime | None:
    """An ISO 8601 time (``Z`` or an offset; UTC when it has none), or None when the
    value is not a string; text that is not such a time is an error naming ``what``."""
    if not isinstance(value, str):
        return None
    try:
        at = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise fail(where, f"{what} {value!r} is not an ISO 8601 time") from None
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def from_unix(value: Any, where: str, what: str, *, scale: int = 1) -> datetime:
    """A unix timestamp (seconds, or ``scale`` units per second) as a UTC datetime;
    NaN, infinite, negative or absurdly far values are an error naming ``where``."""
    if isinstance(value, str) and scale != 1:  # OTLP/JSON writes int64 as a string
        try:
            value = int(value)
        except ValueError:
            raise fail(where, f"{what} must be an integer, got {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, int | float) or \
            not math.isfinite(value):
        raise fail(where, f"{what} must be a unix timestamp, got {value!r}")
    if scale == 1 and 1e11 < value < 1e14:  # milliseconds, as some servers write them
        scale = 1000
    try:
        if isinstance(value, int) and scale != 1:
            at = datetime.fromtimestamp(value // scale, tz=UTC) + timedelta(
                microseconds=(value % scale) * 1_000_000 // scale)
        else:
            at = datetime.fromtimestamp(float(value) / scale, tz=UTC)
    except (OverflowError, OSError, ValueError):
        at = None
    if at is None or not _EARLIEST <= at < _LATEST:
        raise fail(where, f"{what} {value!r} is not a plausible unix timestamp "
                          "(expected a date between 1970 and 9000)")
    return at


parse_json_value = parse_arguments


def split_instructions(messages: Sequence[Message]) -> tuple[list[Message], list[Message]]:
    """Leading system messages are the agent's instructions; a system message later in
    the conversation is part of the conversation and stays there."""
    i = 0
    while i < len(messages) and messages[i].role == "system":
        i += 1
    return list(messages[:i]), list(messages[i:])


# -- OpenAI chat-completions messages (memory_core.models.openai_codec) --------------------------
class SharedMessages:
    """Identical raw messages parsed once while a file is parsed (``sharing``).

    A recorded request repeats its whole history, so a log of N requests of a
    conversation holds its early messages N times: parsed one by one they were most of
    an import's memory (~12× the log). A message that parses with no note is kept by
    its JSON text (a text message by its role and text) and handed out again for every
    later copy. Such a message is never changed in place: tool-name resolution makes
    copies, and a thread stores a copy of its own (``plan_threads``), to which a later
    request may give a ``name``. (A tool call whose id we derive carries a note, so the
    ids a later request spells out are never adopted by a shared message.)"""

    def __init__(self) -> None:
        # (reader, the raw message's JSON text, or a text message's role and text) ->
        # what the reader made of it
        self.by_text: dict[tuple[str, ...], Any] = {}

    def parse(self, raw: Any, where: str, notes: list[str]) -> Message:
        if type(raw) is dict and len(raw) == 2:  # (``read``'s look-up of a text message
            role, content = raw.get("role"), raw.get("content")  # inline: most are)
            if type(role) is str and type(content) is str:
                got = self.by_text.get((_OPENAI_READER, role, content), _UNREAD)
                if got is not _UNREAD:
                    return got  # type: ignore[no-any-return]
        return self.read(from_openai_message, raw, where, notes)

    def read(self, reader: Callable[[Any, str, list[str]], T], raw: Any, where: str,
             notes: list[str]) -> T:
        """``reader(raw, where, notes)``, or what it made of an identical ``raw`` before
        (the Anthropic reader makes several messages of one)."""
        key: tuple[str, ...]
        if type(raw) is dict and len(raw) == 2 and type(raw.get("role")) is str \
                and type(raw.get("content")) is str:  # (most messages: no JSON text made)
            key = (reader.__qualname__, raw["role"], raw["content"])
        elif type(raw) is dict and all(type(v) is str for v in raw.values()):
            # (a tool result: its keys and texts in order, as its JSON text has them)
            key = (reader.__qualname__, "", *(x for kv in raw.items() for x in kv))
        else:
            try:
                key = (reader.__qualname__,
                       json.dumps(raw, ensure_ascii=False, allow_nan=False))
            except (TypeError, ValueError):
                return reader(raw, where, notes)
        got = self.by_text.get(key, _UNREAD)
        if got is not _UNREAD:
            return got  # type: ignore[no-any-return]
        before = len(notes)
        made = reader(raw, where, notes)
        if len(notes) == before:  # a note names its record: such a message is parsed anew
            self.by_text[key] = made
        return made


_UNREAD = object()  # (SharedMessages: no message read from that JSON yet)
_OPENAI_READER = from_openai_message.__qualname__
_SHARING: ContextVar[SharedMessages | None] = ContextVar("import_sharing", default=None)


@contextmanager
def sharing() -> Iterator[None]:
    """Parse a file's messages through one ``SharedMessages`` (``openai_message``,
    ``openai_messages`` inside the block)."""
    token = _SHARING.set(SharedMessages())
    try:
        yield
    finally:
        _SHARING.reset(token)


def shortened(text: str, n: int = 80) -> str:
    """``text`` cut to ``n`` characters with an ellipsis, for a note quoting a value."""
    return text if len(text) <= n else text[:n] + "…"


def openai_tool_call(call_id: Any, name: Any, args: Any) -> dict[str, Any]:
    """A tool call in the OpenAI chat form the chat format reads, from a format that
    keeps its id, name and arguments apart: arguments that are an object dumped as JSON
    text, text kept as it was sent (what is no JSON stays text when read)."""
    return {"id": call_id, "type": "function", "function": {
        "name": name, "arguments": args if isinstance(args, str)
        else json.dumps(args, ensure_ascii=False)}}


def openai_message(raw: Any, where: str, notes: list[str]) -> Message:
    """One OpenAI chat message as a ``Message``; tool results get their name from the
    call they answer in ``resolve_tool_names``."""
    cache = _SHARING.get()
    return from_openai_message(raw, where, notes) if cache is None \
        else cache.parse(raw, where, notes)


def read_shared(reader: Callable[[Any, str, list[str]], T], raw: Any, where: str,
                notes: list[str]) -> T:
    """``reader(raw, where, notes)`` through the file's ``SharedMessages`` (inside
    ``sharing``): an identical raw message is read once."""
    cache = _SHARING.get()
    return reader(raw, where, notes) if cache is None else cache.read(reader, raw, where, notes)


def openai_messages(raw: Any, where: str, notes: list[str]) -> list[Message]:
    cache = _SHARING.get()
    return from_openai_messages(raw, where, notes,
                                parse=None if cache is None else cache.parse)


# -- tool-name resolution ---------------------------------------------------------------
def resolve_tool_names(exchanges: Sequence[Exchange]
                       ) -> list[tuple[Exchange, ImportFormatError]]:
    """Give every tool result the name of the call it answers: the exchange's message is
    replaced by a named copy (messages may be shared between exchanges, ``sharing``;
    one copy serves every exchange that resolves the same message alike).

    A result must answer a call made earlier in the same request, or (when records
    carry a thread key and clients send a trimmed window) earlier in that thread;
    otherwise the request is malformed: it is returned with an error naming the record
    and message (the import leaves it out, noted) — unless the request's history is held server-side and not in the file
    (``HeldHistory.unrecorded``): the call may be there, so the result is kept as sent,
    its tool name unknown (``""``), and noted.
    """
    known_by_key: dict[str, dict[str, str]] = {}
    named: dict[tuple[int, tuple[str, ...]], tuple[Message, Message]] = {}
    failed: list[tuple[Exchange, ImportFormatError]] = []
    for ex in exchanges:
        try:
            known = _name_results(ex, known_by_key, named)
        except ImportFormatError as e:
            failed.append((ex, e))
            continue
        if ex.thread_key:
            known_by_key[ex.thread_key] = known
    return failed


def leave_out(exchanges: Sequence[Exchange], out: Sequence[Exchange]) -> list[Exchange]:
    """The exchanges without ``out``, numbered again from 0 (an exchange's ``index`` is
    its place in the file's list: its run id, its rows' run); a link to an exchange
    left out (``replays``, ``held.continues``) is dropped, the others renumbered."""
    gone = {id(ex) for ex in out}
    kept = [ex for ex in exchanges if id(ex) not in gone]
    new = {ex.index: i for i, ex in enumerate(kept)}
    for i, ex in enumerate(kept):
        ex.index = i
        if ex.replays is not None:
            ex.replays = new.get(ex.replays)
        if ex.held is not None and ex.held.continues is not None:
            ex.held = replace(ex.held, continues=new.get(ex.held.continues))
    return kept


def _name_results(ex: Exchange, known_by_key: dict[str, dict[str, str]],
                  named: dict[tuple[int, tuple[str, ...]], tuple[Message, Message]]
                  ) -> dict[str, str]:
    """``resolve_tool_names`` for one exchange: the calls known after it."""
    known = dict(known_by_key.get(ex.thread_key, {})) if ex.thread_key else {}
    for i, m in enumerate(ex.conversation()):
        if not isinstance(m.content, list):
            continue
        names: list[str] = []
        for p in m.content:
            if isinstance(p, ToolCallPart):
                known[p.id] = p.name
            elif isinstance(p, ToolResultPart) and not p.name:
                name = known.get(p.call_id)
                label = ("response" if i == len(ex.history)
                         else f"message {i + len(ex.instructions)}")
                if name is None and ex.held is not None and ex.held.unrecorded:
                    ex.notes.append(
                        f"{ex.where}: {label} (tool) answers tool call '{p.call_id}', "
                        f"made in the history held server-side ({ex.held.unrecorded}) "
                        "that is not in the file: kept as sent, its tool name unknown")
                    name = ""
                if name is None:
                    raise fail(ex.where, f"{label} (tool) answers tool call "
                                         f"'{p.call_id}', but no earlier assistant "
                                         "message made that call")
                names.append(name)
        if not any(names):
            continue
        key = (id(m), tuple(names))
        if key not in named:  # (the original is kept with its copy: ids stay unique)
            given = iter(names)
            named[key] = (m, m.model_copy(update={"content": [
                p.model_copy(update={"name": next(given)})
                if isinstance(p, ToolResultPart) and not p.name else p
                for p in m.content]}))
        if i < len(ex.history):
            ex.history[i] = named[key][1]
        else:
            ex.response = named[key][1]
    return known


# -- tool calls against the tools offered --------------------------------------------------
def check_offered_tools(exchanges: Sequence[Exchange]) -> None:
    """Check each tool call a request's answer makes against the tools that request
    offered (when it recorded them: ``Exchange.tools`` is not None). A call naming a
    tool not offered is kept as recorded, with a note naming the call, its name and the
    tools offered — unless its name is k ≥ 2 copies of one offered tool's name (a
    streamed name repeated whole in every chunk, joined by whatever reassembled the
    stream): it is then stored as that tool's name, and noted.

    The same repair is made to the calls of the assistant messages a request sends back
    (its history), so a client that kept the joined name still continues the thread of
    the answer stored repaired; those calls are not otherwise checked — each answered
    an earlier request, whose tools may have differed. A message repaired is replaced
    by a copy (messages may be shared between exchanges, ``sharing``)."""
    for ex in exchanges:
        if ex.tools is None:
            continue
        offered = [str(t.get("name")) for t in ex.tools]
        for i, m in enumerate(ex.history):
            if m.role == "assistant" and isinstance(m.content, list):  # (else: kept)
                ex.history[i] = _named_as_offered(
                    ex, m, f"message {i + len(ex.instructions)}", offered, answer=False)
        if ex.response is not None:
            ex.response = _named_as_offered(ex, ex.response, "response", offered, answer=True)


def _named_as_offered(ex: Exchange, m: Message, label: str, offered: list[str], *,
                      answer: bool) -> Message:
    """``m``, or a copy whose calls named k copies of an offered tool name it; the
    calls of an ``answer`` naming no offered tool noted on ``ex``."""
    if m.role != "assistant" or not isinstance(m.content, list):
        return m
    parts = m.content
    for j, p in enumerate(m.content):
        if not isinstance(p, ToolCallPart) or p.name in offered:
            continue
        whole = _repeated_name(p.name, offered)
        if whole is not None:
            parts = list(parts) if parts is m.content else parts
            parts[j] = p.model_copy(update={"name": whole})
            ex.notes.append(
                f"{ex.where}: {label}: tool call '{p.id}' is named {p.name!r}, "
                f"{len(p.name) // len(whole)} copies of the offered tool {whole!r} (a "
                f"streamed name repeated in every chunk, joined): stored as {whole!r}")
        elif answer:
            ex.notes.append(
                f"{ex.where}: {label}: tool call '{p.id}' names {p.name!r}, a tool the "
                f"request did not offer (offered: {', '.join(offered) or 'none'}); "
                "kept as recorded")
    return m if parts is m.content else m.model_copy(update={"content": parts})


def _repeated_name(name: str, offered: Sequence[str]) -> str | None:
    """The offered tool name that ``name`` is k ≥ 2 copies of, when exactly one is."""
    found = {t for t in offered if t and len(name) > len(t) and len(name) % len(t) == 0
             and t * (len(name) // len(t)) == name}
    return found.pop() if len(found) == 1 else None


def _holds_nothing(m: Message) -> bool:
    """An assistant message without text or any other part (its text "" or absent)."""
    return m.role == "assistant" and (m.content in ("", None) or isinstance(m.content, list)
                                      and all(type(p) is TextPart and not p.text
                                              for p in m.content))


def distinct_calls(conversation: Sequence[Message],
                   renamed: list[str] | None = None) -> list[Message]:
    """Two calls of one conversation under one id cannot be told apart, nor their
    results: a call recorded without an id gets one derived from its place in its turn,
    its name and its arguments (``derived_call_id``), so a model asking again got the
    same id; and some servers number each answer's calls from ``call_0``. The
    conversation with the second and later of them given that id with ``-2``, ``-3`` …,
    and each result the id of the latest call of its id before it (a message changed is
    a copy: messages are shared between requests); ``renamed`` gets each recorded
    (not derived) id so renamed, "'call_0' as 'call_0-2'". A later request repeating
    the conversation repeats its turns, so gets the same ids."""
    seen: dict[str, int] = {}
    now: dict[str, str] = {}  # an id -> that of its latest call
    out = list(conversation)
    for i, m in enumerate(out):
        if isinstance(m.content, str):
            continue
        parts, changed = list(m.content), False
        for j, p in enumerate(parts):
            if isinstance(p, ToolCallPart):
                n = seen[p.id] = seen.get(p.id, 0) + 1
                now[p.id] = p.id if n == 1 else f"{p.id}-{n}"
                if n > 1:
                    parts[j], changed = p.model_copy(update={"id": now[p.id]}), True
                    if renamed is not None and not is_derived_call_id(p.id):
                        renamed.append(f"{p.id!r} as {now[p.id]!r}")
            elif isinstance(p, ToolResultPart) and now.get(p.call_id, p.call_id) != p.call_id:
                parts[j], changed = p.model_copy(update={"call_id": now[p.call_id]}), True
        if changed:
            out[i] = m.model_copy(update={"content": parts})
    return out


def _distinct_ids(ex: Exchange) -> None:
    """``distinct_calls`` over a request's conversation (its history and answer),
    noting the recorded ids it renamed."""
    renamed: list[str] = []
    conv = distinct_calls([*ex.history, *([ex.response] if ex.response else [])], renamed)
    ex.history = conv[:len(ex.history)]
    if ex.response is not None:
        ex.response = conv[-1]
    if renamed:
        ex.notes.append(f"{ex.where}: a call id given again in the conversation, stored "
                        f"numbered: {', '.join(dict.fromkeys(renamed))}")


def audio_transcripts(exchanges: Sequence[Exchange]) -> None:
    """An answer given as audio is stored as its transcript; a client sends it back by
    its id alone (``{"role": "assistant", "audio": {"id": …}}``): such a message gets the
    transcript of the file's answer of that id, noted (or, when no answer in the file
    has it, stays empty, noted), so the conversation is the one the answer began."""
    said: dict[str, str] = {}
    for ex in exchanges:
        for i, m in enumerate(ex.history):
            audio = m.metadata.get("audio_id") if m.role == "assistant" else None
            if not isinstance(audio, str) or m.text():
                continue
            known = said.get(audio)
            if known is None:
                ex.notes.append(f"{ex.where}: message {i + len(ex.instructions)}: an audio "
                                f"answer sent back by its id {audio!r}, whose transcript "
                                "is not in the file: stored empty")
                continue
            ex.history[i] = m.model_copy(update={"content": known})
            ex.notes.append(f"{ex.where}: message {i + len(ex.instructions)}: an audio "
                            f"answer sent back by its id {audio!r}: stored as the "
                            "transcript of the answer of that id")
        reply = ex.response
        transcript = reply.text() if reply is not None else None
        if reply is not None and isinstance(reply.metadata.get("audio_id"), str) \
                and transcript:
            said[reply.metadata["audio_id"]] = transcript


def recorded_call_ids(exchanges: Sequence[Exchange]) -> None:
    """Give a call a request sends back without its id (so we derived one) the id the
    answer that made it recorded — the latest answer's call of the same name and
    arguments — and the results answering it the same: Gemini 3 answers with an
    ``id`` that clients (R's ellmer) do not send back, and the ids no longer matched
    the stored answer, splitting the conversation. The same for a call sent back under
    an id of the client's own that no answer in the file made (Ruby's raix sends its
    calls back under new UUIDs). Noted."""
    answered = {p.id for ex in exchanges if ex.response is not None
                and not isinstance(ex.response.content, str)
                for p in ex.response.content if isinstance(p, ToolCallPart)}
    # (only a file whose requests send back ids no answer made needs the answers'
    # conversations kept: most files have none, and are not slowed by them)
    client_made = any(isinstance(p, ToolCallPart) and p.id not in answered
                      and not is_derived_call_id(p.id) for ex in exchanges
                      for m in ex.history if not isinstance(m.content, str)
                      for p in m.content)
    recorded: dict[tuple[str, str], str] = {}
    # an answer's calls by what came before them: (the conversation's texts, the call's
    # name, its arguments) -> their ids, in the answer's order
    made: dict[tuple[Any, ...], list[str]] = {}
    taken: dict[str, str] = {}  # a client's own id -> the answer's it took (for good)
    for ex in exchanges:
        rename: dict[str, str] = {}
        own: dict[str, str] = {}  # (of those, the ids the client made up)
        held = {p.id for m in ex.history if not isinstance(m.content, str)
                for p in m.content if isinstance(p, ToolCallPart)}
        for i, m in enumerate(ex.history):
            for p in m.content if m.role == "assistant" and not isinstance(m.content, str) \
                    else ():
                if not isinstance(p, ToolCallPart) or p.id in answered:
                    continue
                if is_derived_call_id(p.id):
                    real = recorded.get((p.name, canonical_json(p.args)))
                elif p.id in taken:  # (sent back again by a later request)
                    real = taken[p.id]
                else:  # a client's own id: the call an answer made at this point,
                    # one no other of the client's ids has taken
                    ids = made.get((_said(ex.history[:i]), p.name, canonical_json(p.args)))
                    real = next((r for r in ids or () if r not in rename.values()
                                 and r not in held and r not in taken.values()), None)
                if real is not None and real not in rename.values() and real not in held:
                    rename[p.id] = real
                    if not is_derived_call_id(p.id):
                        own[p.id] = taken[p.id] = real
        if rename:
            ex.history = [_with_ids(m, rename) for m in ex.history]
        if len(own) < len(rename):
            given = ", ".join(sorted(v for k, v in rename.items() if k not in own))
            n = len(rename) - len(own)
            ex.notes.append(f"{ex.where}: a tool call sent back without the id its answer "
                            f"recorded takes it: {given}" if n == 1 else
                            f"{ex.where}: {n} tool calls sent back without the "
                            f"ids their answers recorded take them: {given}")
        if own:
            ex.notes.append(f"{ex.where}: tool call(s) sent back under ids of the client's "
                            "own, which no answer made, take the ids their answers "
                            "recorded: " + ", ".join(f"{a} as {b}" for a, b in own.items()))
        _distinct_ids(ex)  # (after the ids sent back are the answers': before they count)
        reply = ex.response
        before: tuple[tuple[str, str], ...] | None = None
        for p in reply.content if reply is not None and not isinstance(reply.content, str) \
                else ():
            if isinstance(p, ToolCallPart) and not is_derived_call_id(p.id):
                recorded[(p.name, canonical_json(p.args))] = p.id
                if client_made:
                    before = _said(ex.history) if before is None else before
                    made.setdefault((before, p.name, canonical_json(p.args)),
                                    []).append(p.id)


def _said(messages: Sequence[Message]) -> tuple[tuple[str, str], ...]:
    """Messages as their roles and texts (no ids): what a conversation had said."""
    return tuple((m.role, (m.text() or "").strip()) for m in messages)


def _with_ids(m: Message, rename: dict[str, str]) -> Message:
    """``m`` (a copy, when it holds an id renamed) with its calls' and results' ids
    renamed."""
    if isinstance(m.content, str) or not any(
            (p.id if isinstance(p, ToolCallPart) else getattr(p, "call_id", None)) in rename
            for p in m.content):
        return m
    return m.model_copy(update={"content": [
        p.model_copy(update={"id": rename.get(p.id, p.id)}) if isinstance(p, ToolCallPart)
        else p.model_copy(update={"call_id": rename.get(p.call_id, p.call_id)})
        if isinstance(p, ToolResultPart) else p for p in m.content]})


def say_empty_answers(exchanges: Sequence[Exchange]) -> None:
    """Note an answer that holds nothing (no text, no tool call): a model cut off at its
    token limit while it reasoned answers with nothing, and the run would look finished
    like any other."""
    for ex in exchanges:
        if ex.response is None or not _holds_nothing(ex.response):
            continue
        why = [f"finish reason {ex.finish_reason!r}" if ex.finish_reason else "",
               f"{ex.usage_detail['reasoning']} output token(s) of reasoning"
               if ex.usage_detail.get("reasoning") else ""]
        said = ", ".join(w for w in why if w)
        ex.notes.append(f"{ex.where}: the answer is empty" + (f" ({said})" if said else ""))


def drop_empty_turns(exchanges: Sequence[Exchange]) -> None:
    """Leave out, with a note, an assistant message of a request's history that holds
    nothing and comes right before another assistant message: some clients (simonw's
    ``llm``) send an answer's empty text and its tool calls back as two messages, and
    kept, the empty one split the conversation from the run whose answer made those
    calls (its stored answer is one message)."""
    for ex in exchanges:
        h = ex.history
        drop = {i for i in range(len(h) - 1)
                if _holds_nothing(h[i]) and h[i + 1].role == "assistant"}
        if not drop:
            continue
        ex.history = [m for i, m in enumerate(h) if i not in drop]
        ex.notes += [f"{ex.where}: message {i + len(ex.instructions)}: an empty assistant "
                     "message before another assistant message; not stored (it holds "
                     "nothing)" for i in sorted(drop)]
