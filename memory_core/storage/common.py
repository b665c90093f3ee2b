"""Pieces every adapter shares: the clock and id sources, thread-id generation,
validation of append batches, and the one check of what a port accepts as JSON and as
a time (so every adapter refuses the same values with the same error), and a database
URL shown with its password hidden."""

from __future__ import annotations

import gc
import itertools
import json
import math
import random
import re
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any

import numpy as np

from memory_core.errors import InvalidInputError
from memory_core.types import AppendRow, StoredMessage, canonical_json

Clock = Callable[[], datetime]


@contextmanager
def many_objects() -> Iterator[None]:
    """Build a large result (hundreds of thousands of rows and records) without the
    cyclic garbage collector running: each collection of the oldest generation walks
    every object alive, and allocating that many containers starts one again and again
    (half of the 4.4 s that listing 434,780 runs took). Nothing built is garbage; it
    is collected as usual after. Runs the collector's state back only if this call
    turned it off (another thread may be inside too)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def utc_now() -> datetime:
    return datetime.now(UTC)


def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if n == 0:
            return out


class ThreadIdFactory:
    """Generates ``th-<time36>-<n36>-<rand5>`` ids (SPEC §2.1). Inject a seeded
    ``random.Random`` and a clock for reproducible ids."""

    def __init__(self, clock: Clock = utc_now, rng: random.Random | None = None) -> None:
        self._clock = clock
        self._rng = rng or random.Random()
        self._counter = itertools.count()

    def __call__(self) -> str:
        millis = int(self._clock().timestamp() * 1000)
        rand = "".join(self._rng.choice("0123456789abcdefghijklmnopqrstuvwxyz") for _ in range(5))
        return f"th-{_base36(millis)}-{_base36(next(self._counter))}-{rand}"


def validate_batch(thread_id: str, rows: Sequence[AppendRow],
                   dim: int | None) -> tuple[bool, int | None]:
    """Check a batch before anything is written. Returns (explicit, dim) where
    explicit says whether rows carry their own seq and dim the batch's vector size."""
    if not isinstance(thread_id, str) or not thread_id:
        raise InvalidInputError(f"thread_id must be a non-empty string, got {thread_id!r}")
    for r in rows:
        if not isinstance(r, AppendRow):
            raise InvalidInputError(f"append expects AppendRow items, got {type(r).__name__}")
    explicit = [r.seq is not None for r in rows]
    if any(explicit) and not all(explicit):
        raise InvalidInputError(
            f"batch for thread '{thread_id}' mixes rows with and without seq "
            f"(explicit at positions {[i for i, e in enumerate(explicit) if e]}); "
            "give every row a seq or none")
    if all(explicit):
        seqs = [r.seq for r in rows]
        if len(set(seqs)) != len(seqs):
            raise InvalidInputError(f"batch for thread '{thread_id}' repeats a seq: {seqs}")
    batch_dim = dim
    for i, r in enumerate(rows):
        if r.embedding is None:
            continue
        d = int(r.embedding.shape[0])
        if d == 0:
            raise InvalidInputError(f"row {i}: embedding is empty")
        if batch_dim is None:
            batch_dim = d
        elif d != batch_dim:
            raise InvalidInputError(
                f"row {i}: embedding has dimension {d}, but this store holds "
                f"{batch_dim}-dimensional vectors")
    return bool(rows) and all(explicit), batch_dim


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _json_problem(value: Any, path: str) -> str | None:
    """Where value stops being JSON that reads back as itself, or None. Tuples count
    as arrays (they read back as lists); everything else must be exactly JSON."""
    if value is None or isinstance(value, str | bool | int):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else \
            f"{path or 'the value'} is {value!r}, which JSON cannot hold"
    if isinstance(value, list | tuple):
        for i, v in enumerate(value):
            found = _json_problem(v, f"{path}[{i}]")
            if found:
                return found
        return None
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                return (f"{path or 'the value'} has the key {_short(k)} "
                        f"({type(k).__name__}); JSON object keys are strings")
            found = _json_problem(v, f"{path}[{k!r}]")
            if found:
                return found
        return None
    return (f"{path or 'the value'} is {_short(value)} ({type(value).__name__}), "
            "which is not a JSON value")


# canonical_json's settings, built once (json.dumps makes a new encoder per call)
_ENCODE = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                           allow_nan=False).encode


def json_or_invalid(what: str, value: Any) -> str:
    """Canonical JSON of value; InvalidInputError naming ``what`` and the offending
    part when value is not JSON (NaN/inf, sets, bytes, datetimes, non-string keys...).
    Every adapter stores what this returns, so all of them accept the same values."""
    try:
        # fast path (C speed): JSON that reads back equal to the value is exactly JSON
        text = _ENCODE(value)
        if json.loads(text) == value:
            return text
    except (TypeError, ValueError, RecursionError):
        pass
    # tuples, or not JSON: the walk says which, and where
    problem = _json_problem(value, "")
    if problem is not None:
        raise InvalidInputError(f"{what} is not JSON: {problem}")
    try:
        return canonical_json(value)
    except (TypeError, ValueError, RecursionError) as e:
        raise InvalidInputError(f"{what} is not JSON: {e}") from e


def as_json(what: str, value: Any) -> Any:
    """The value as every adapter gives it back (tuples become lists), checked."""
    return json.loads(json_or_invalid(what, value))


def require_aware(what: str, dt: datetime | None) -> None:
    """A time given to a port must say which instant it is: naive ones are refused on
    every adapter (comparing them with the aware times stored would fail later)."""
    if dt is not None and (dt.tzinfo is None or dt.utcoffset() is None):
        raise InvalidInputError(
            f"{what} must be timezone-aware, got the naive datetime {dt.isoformat()!r} "
            "(add tzinfo, e.g. datetime.now(UTC))")


def checked_clock(clock: Clock) -> Clock:
    """The clock, refusing to hand a naive time to the store."""

    def now() -> datetime:
        t = clock()
        require_aware("the storage clock's time", t)
        return t

    return now


def message_body(thread_id: str, i: int, r: AppendRow) -> str:
    """Canonical JSON of a row's role, content and metadata, checked like every other
    JSON value (tool arguments and results included), with its created_at."""
    if r.created_at is not None:
        require_aware(f"row {i} of the batch for thread '{thread_id}': created_at",
                      r.created_at)
    m = r.message
    if type(m.content) is str and not m.metadata:
        return text_message_json(m.content, m.role)
    return json_or_invalid(f"row {i} of the batch for thread '{thread_id}'",
                           m.model_dump(include={"role", "content", "metadata"}))


# the string encoder _ENCODE itself uses (C; ensure_ascii=False)
_STRING = json.encoder.encode_basestring


def text_message_json(content: str, role: str) -> str:
    """The common case (plain text, no metadata) is JSON by construction: exactly what
    _ENCODE gives for {"content": content, "metadata": {}, "role": role}, without
    building the dict and an encoder per row."""
    return f'{{"content":{_STRING(content)},"metadata":{{}},"role":{_STRING(role)}}}'


def message_bodies(thread_id: str, rows: Sequence[AppendRow]) -> list[str]:
    """``message_body`` of every row of a batch, the plain-text rows without a call
    per row (they are most of any batch)."""
    return [text_message_json(m.content, m.role)
            if r.created_at is None and type(m.content) is str and not m.metadata
            else message_body(thread_id, i, r)
            for i, r, m in zip(range(len(rows)), rows, [r.message for r in rows],
                               strict=True)]


def key_group(key: str) -> str:
    """A journal key's group: the key up to and including its first ':' (a run's
    records, an observer's), or the whole key when it has none. Every key under a
    prefix that ends a group is in that group, so a listing of the prefix is all of it
    (the in-memory journal's index; what a DuckDB writer knows it stored)."""
    colon = key.find(":")
    return key if colon < 0 else key[:colon + 1]


def encode_json(key: str, value: Any) -> str:
    """Serialise a journal or working-memory value, naming the key when it is not JSON."""
    return json_or_invalid(f"journal value for key '{key}'", value)


def decode_json(text: str, where: str = "a stored value") -> Any:
    """A stored JSON text read back; StorageError naming ``where`` when it is not JSON
    (the database was edited or damaged): one clear error, never a traceback."""
    try:
        return json.loads(text)
    except (TypeError, ValueError) as e:
        from memory_core.errors import StorageError

        raise StorageError(f"{where} is not valid JSON (the database was edited or "
                           f"damaged): {e}") from None


class EncodedJson:
    """A journal value handed to ``put_if_absent`` / ``put_many_if_absent`` as its
    stored text: what ``json_or_invalid`` returns for the value, made by the writer
    with ``encoded_json`` (or joined from such texts). Every adapter stores the text
    as it is, not encoding and checking the value again (an import makes ~9 records a
    request, each of them already encoded once for its seal); reading it back gives
    the value."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return f"EncodedJson({self.text[:60]!r})"


def encoded_json(what: str, value: Any) -> EncodedJson:
    """``value`` encoded once as stored: for a value that is JSON by construction
    (pydantic's ``model_dump(mode="json")``: string keys, lists, no NaN) the check's
    read-back is skipped; one that does not encode is checked as ever, naming
    ``what``."""
    try:
        return EncodedJson(_ENCODE(value))
    except (TypeError, ValueError, RecursionError):
        return EncodedJson(json_or_invalid(what, value))


def journal_texts(items: Sequence[tuple[str, Any]]) -> dict[str, str]:
    """Each new key's record as stored JSON (the first of a repeated key), checked
    (an ``EncodedJson`` is its text)."""
    fresh: dict[str, str] = {}
    for key, value in items:
        if not isinstance(key, str) or not key:
            raise InvalidInputError(f"journal key must be a non-empty string, got {key!r}")
        if key not in fresh:
            fresh[key] = value.text if type(value) is EncodedJson else encode_json(key, value)
    return fresh


def encode_vector(v: np.ndarray) -> bytes:
    return np.ascontiguousarray(v, dtype=np.float32).tobytes()


def decode_vectors(values: Sequence[Any], dim: int, *, copy: bool = True) -> np.ndarray:
    """Stored vectors as one float32 matrix of ``dim`` columns: each a float32 blob or
    an engine's array (DuckDB's ``FLOAT[]`` comes as a list). ``copy=False``: blobs are
    read in place (a read-only matrix, for a caller that copies it anyway)."""
    if not values:
        return np.zeros((0, dim), dtype=np.float32)
    if isinstance(values[0], list | tuple | np.ndarray):
        return np.asarray(values, np.float32).reshape(len(values), dim)
    out = np.frombuffer(b"".join(values), dtype=np.float32).reshape(len(values), dim)
    return out.copy() if copy else out


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICRO = timedelta(microseconds=1)


def ts_micros(dt: datetime) -> int:
    """Exact microseconds since the epoch; a naive datetime is read as UTC."""
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return (dt - _EPOCH) // _MICRO


def ts_from_micros(us: int) -> datetime:
    """The aware UTC datetime ``us`` microseconds after the epoch."""
    return _EPOCH + timedelta(microseconds=us)


def zone_of(offset: str) -> tzinfo | None:
    """The fixed-offset time zone of an ISO offset ("+02:00", "-05:30:15"), as
    ``datetime.fromisoformat`` gives it for a time written with it; None when the text
    is no offset (then such a time must be read as written)."""
    try:
        return datetime.fromisoformat(f"2000-01-01T00:00:00{offset}").tzinfo
    except ValueError:
        return None


def stored_message(thread_id: str, seq: int, resource_id: str | None, body: str,
                   created_at: datetime, run_id: str | None) -> StoredMessage:
    """The message of a stored row: its JSON body (role, content, metadata) and the
    columns beside it."""
    return StoredMessage.model_validate({
        **json.loads(body), "thread_id": thread_id, "seq": int(seq),
        "resource_id": resource_id, "created_at": created_at, "run_id": run_id})


def tick_after(clock: Clock, last: datetime | None) -> datetime:
    """A timestamp from the clock that never goes backwards relative to ``last``."""
    now = clock()
    if last is not None and now < last:
        return last
    return now


def monotonic_ns() -> int:
    return time.monotonic_ns()


SEQ_FLOOR_PREFIX = "seq_floor:"  # meta key: the highest seq a truncated thread held
EDITS_KEY = "message_edits"  # meta key: in-place message rewrites (ThreadCounts.edits)


def check_seq_bound(seq: Any) -> int:
    """The bound of ``delete_messages_after``: an int ``>= -1`` (bools refused)."""
    if isinstance(seq, bool) or not isinstance(seq, int) or seq < -1:
        raise InvalidInputError(f"seq must be an integer >= -1, got {seq!r}")
    return seq


_KV_PASSWORD = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]*)", re.IGNORECASE)
_URL_PASSWORD = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://[^/@:]*):[^/]*@")
def describe_url(url: str) -> str:
    """The URL or libpq DSN with any password replaced by ``***``."""
    out = _URL_PASSWORD.sub(r"\1:***@", url)
    return _KV_PASSWORD.sub(r"\1***", out)
