"""Digests of model inputs recorded in step records, and the check that a re-derived
input is the recorded one (resume and replay use it to detect divergence)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from memory_core.errors import ReplayMismatch
from memory_core.types import Message

#: what an erasure leaves in place of the digest of an erased message (a short text is
#: guessed back from its digest): the check skips that message
REDACTED_DIGEST = "redacted"


def message_hash(message: Message) -> str:
    """A short, stable digest of one message (canonical JSON, sha256, 16 hex)."""
    return hashlib.sha256(message.canonical_json().encode("utf-8")).hexdigest()[:16]


def input_hashes(messages: Sequence[Message]) -> list[str]:
    return [message_hash(m) for m in messages]


def input_digest(messages: Sequence[Message]) -> str:
    """sha256 over the canonical JSON of the whole model input."""
    return _digest([m.canonical_json() for m in messages])


def _digest(texts: Sequence[str]) -> str:
    return hashlib.sha256(("[" + ",".join(texts) + "]").encode("utf-8")).hexdigest()


def input_signature(messages: Sequence[Message]) -> tuple[list[str], str]:
    """``input_hashes`` and ``input_digest`` of one model input, each message's
    canonical JSON made once."""
    texts = [m.canonical_json() for m in messages]
    return ([hashlib.sha256(t.encode("utf-8")).hexdigest()[:16] for t in texts],
            _digest(texts))


def first_difference(expected: Sequence[str], actual: Sequence[str]) -> int:
    """Index of the first differing element (the shorter length when one is a prefix)."""
    for i, (a, b) in enumerate(zip(expected, actual, strict=False)):
        if a != b:
            return i
    return min(len(expected), len(actual))


def verify_step_input(key: str, recorded_hashes: Sequence[str] | None,
                      recorded_digest: str | None, model_input: Sequence[Message],
                      hashes: Sequence[str] | None = None,
                      digest: str | None = None) -> bool:
    """Check a recorded step against the re-derived model input; False when the record
    carries no hash to check (old format). A difference raises ReplayMismatch. Both the
    per-message hashes and the whole-input digest are checked when recorded (against
    ``hashes`` and ``digest`` when the caller has them: ``input_signature``)."""
    hashes = list(hashes) if hashes is not None else input_hashes(model_input)
    checked = False
    if recorded_hashes is not None:
        recorded = list(recorded_hashes)
        if len(recorded) == len(hashes):  # an erased message's digest is not checked
            hashes = [r if r == REDACTED_DIGEST else h
                      for r, h in zip(recorded, hashes, strict=True)]
        if recorded != hashes:
            pos = first_difference(list(recorded_hashes), hashes)
            raise ReplayMismatch(
                f"'{key}': the model input re-derived from the journal differs from the "
                f"recorded one at message {pos} (recorded {len(recorded_hashes)} messages, "
                f"derived {len(hashes)})")
        checked = True
    if recorded_digest is not None and recorded_digest != REDACTED_DIGEST:
        if recorded_digest != (digest if digest is not None else input_digest(model_input)):
            raise ReplayMismatch(f"'{key}': the model input re-derived from the journal "
                                 "differs from the recorded one (whole-input hash)")
        checked = True
    return checked
