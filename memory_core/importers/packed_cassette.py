"""LangGraph's packed cassettes (``*.msgpack.zlib``, its docs' recordings): a vcrpy
cassette — ``{"version", "interactions": [...]}`` — serialised with MessagePack,
compressed with zlib and written as one base64 text. Unpacked (the zlib stream bounded
by ``MEMWB_MAX_DECOMPRESSED``), it is read as a YAML cassette is
(``cassette.cassette_records_of``)."""

from __future__ import annotations

import base64
import binascii
import re
import zlib
from typing import Any

from memory_core.importers.cassette import cassette_records_of, parse_recording
from memory_core.importers.common import ParsedFile, Stages, fail
from memory_core.limits import TooLarge, decompress

# base64 of a zlib stream: its header byte 0x78 is "e", the next (the level) "A"/"F"/
# "J"/"N"; nothing but the base64 alphabet and line breaks after it
_START = re.compile(r"\s*e[AFJN][A-Za-z0-9+/]{14}")


def looks_like_packed_cassette(text: str) -> bool:
    """A base64 text whose bytes open as a zlib stream does (its header's check holds)."""
    if _START.match(text[:64]) is None:
        return False
    head = base64.b64decode(text.lstrip()[:8])
    return (head[0] << 8 | head[1]) % 31 == 0


def packed_document(text: str) -> Any:
    """The cassette ``text`` packs, or one error saying which layer is not what it
    should be."""
    import msgpack

    try:
        packed = base64.b64decode("".join(text.split()), validate=True)
    except (binascii.Error, ValueError):
        raise fail("file", "a packed cassette (base64 of zlib-compressed MessagePack, "
                           "LangGraph's *.msgpack.zlib) whose text is not base64") from None
    try:
        raw = decompress(packed, "deflate")
    except TooLarge:
        raise
    except (zlib.error, EOFError) as e:
        raise fail("file", f"a packed cassette whose zlib stream cannot be read: {e}"
                   ) from None
    try:
        return msgpack.unpackb(raw, raw=False, strict_map_key=False)
    except (ValueError, msgpack.UnpackException) as e:
        raise fail("file", f"a packed cassette whose MessagePack cannot be read: {e}"
                   ) from None


def parse_packed_cassette(text: str, stages: Stages | None = None) -> ParsedFile:
    """A packed cassette's model calls, as a YAML cassette's."""
    rows, skipped = cassette_records_of(packed_document(text))
    return parse_recording(rows, skipped, "cassette", "interaction", stages)
