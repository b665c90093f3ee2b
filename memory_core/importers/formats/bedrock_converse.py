"""Bedrock's Converse API (``POST …/model/<id>/converse``, ``/converse-stream``),
read as the Anthropic Messages API record it is equivalent to (``bedrock.py``)."""

from __future__ import annotations

from memory_core.importers.bedrock import BEDROCK_PATHS, as_anthropic_record, is_converse_record
from memory_core.importers.common import Exchange
from memory_core.importers.formats import Record, RecordFormat, Route, by_url_or_keys
from memory_core.importers.formats.anthropic import anthropic_exchange


def read_converse(record: Record) -> list[Exchange]:
    """A Converse record (or an InvokeModel body in Nova's messages, the same shape)."""
    notes: list[str] = []
    return [anthropic_exchange(as_anthropic_record(record.obj, record.where, notes),
                               record.where, record.index, notes, api="bedrock")]


FORMAT = RecordFormat("bedrock-converse", 60,
                      lambda r: by_url_or_keys(r, ("bedrock",), is_converse_record),
                      read_converse, routes=(Route("bedrock", BEDROCK_PATHS, within="/model/"),))
