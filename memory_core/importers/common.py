"""What every importer produces (one ``Exchange`` per recorded model request) and the
conversions they share: OpenAI-style messages to ``Message``, times, notes (what an
import then does across the requests is ``passes.py``).

Parsers only read and validate; nothing here touches storage (see ``writer.py``)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, Field

from memory_core.errors import ImportFormatError
from memory_core.models.base import Usage
from memory_core.models.openai_codec import (
    OPENAI_ROLES,
    from_openai_message,
    from_openai_messages,
    parse_arguments,
)
from memory_core.types import (
    UNDATED_ORIGIN,
    Message,
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
    # False where the file keeps no request's parameters (a prompt rebuilt from an
    # agent's session): ``params`` is then empty, and unknown rather than "none sent"
    params_known: bool = True
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
    # who applied the instructions server-side, the client sending none (a Responses
    # API agent's or stored prompt's, echoed in the response): "agent 'helper'"
    instructions_applied_by: str | None = None
    # the answer as its client sends it back in its next request, when the format
    # knows the client rewrites it (OpenHands' non-native tool calling writes the call
    # it read out of the answer's text out again): the thread goes on from that form,
    # the answer stored as recorded
    sent_back_as: Message | None = None
    # why the answer is empty, when the format knows and its finish reason does not say
    # (a Responses API output of server-side tool items only): the note of an empty
    # answer says it
    empty_because: str | None = None

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
    # each second: the latest time given in it, and the call given it
    latest: dict[datetime, tuple[datetime, str]] = {}
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
        got = latest.get(second)
        if (at == second or id(ex) in moved) and got is not None and at <= got[0] \
                and got[0] + _MICRO < second + _SECOND:
            ex.started_at = at = got[0] + _MICRO
            if ex.finished_at is not None and ex.finished_at < at:
                ex.finished_at = at
            if id(ex) not in moved:  # (a placed call's note already says where it is)
                # (after that call, which may be after a later one of the file: the
                # file's sentence above then says their times disagree)
                ex.notes.append(
                    f"{ex.where}: recorded in the same second as {got[1]}, which the file "
                    f"lists before it; placed {(at - second) // _MICRO} µs into that "
                    "second, after it")
        if got is None or at > got[0]:
            latest[second] = (at, ex.where)
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


def names_zone(text: str) -> bool:
    """Whether an ISO 8601 time names its zone (``Z`` or an offset, ``+02:00`` or
    ``-05:00``); ``iso_time`` reads one that does not as UTC, which its reader says."""
    return _ZONE.search(text.strip()) is not None


_ZONE = re.compile(r"(?:Z|[+-]\d\d:?\d\d)$")


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
