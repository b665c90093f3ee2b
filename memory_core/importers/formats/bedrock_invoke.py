"""Bedrock's InvokeModel (``POST …/model/<id>/invoke``,
``/invoke-with-response-stream``): the body is the model's own format, told apart by
``bedrock_invoke.invoke_family`` — Claude's Messages API body, Nova's messages (the
Converse shape), a chat completions body (AI21 Jamba, Mistral Large), Cohere Command
R's v1 Chat, a plain prompt (Llama, Mistral, Titan text, …) — and read as the record
it is equivalent to; the model is the URL's when the body names none. Another body is
refused naming the model and its keys."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memory_core.importers.bedrock import INVOKE_PATHS
from memory_core.importers.bedrock import model_in_path as bedrock_model
from memory_core.importers.bedrock_invoke import (
    Family,
    invoke_completion,
    invoke_family,
    own_format,
)
from memory_core.importers.cohere import as_chat_record as cohere_record
from memory_core.importers.common import Exchange, fail
from memory_core.importers.formats import Record, RecordFormat, Route
from memory_core.importers.formats.anthropic import anthropic_exchange
from memory_core.importers.formats.anthropic_complete import legacy_as_chat
from memory_core.importers.formats.bedrock_converse import read_converse
from memory_core.importers.formats.chat import chat_exchange
from memory_core.importers.formats.completions import completion_exchanges
from memory_core.importers.formats.fields import RECORD_KEYS, wrapped


def _model(record: Record) -> str | None:
    return bedrock_model(record.path) if record.path is not None else None


def _claude(record: Record) -> list[Exchange]:
    obj, request, path = record.obj, record.obj.get("request"), record.path
    if path is not None and isinstance(request, dict) and "model" not in request:
        obj = {**obj, "request": {**request, "model": bedrock_model(path)}}
    return [anthropic_exchange(obj, record.where, record.index, api="bedrock")]


def invoke_exchanges(record: Record, family: Family | None) -> list[Exchange]:
    """A body in a model's own format: a plain prompt's as a legacy completion, an
    OpenAI-shaped chat body as chat, Cohere Command R's as Cohere v1 Chat; the model
    the URL's when the body names none; None: a body none of them reads."""
    where, index, model = record.where, record.index, _model(record)
    notes: list[str] = []
    obj = wrapped(record.obj, RECORD_KEYS)  # flat: the record's own keys are not the request's
    request = obj["request"] if isinstance(obj["request"], dict) else {}
    if family is None:
        raise fail(where, own_format(model, request))
    if family == "prompt":
        return completion_exchanges(invoke_completion(obj, model, where, notes), where,
                                    index, notes, api="bedrock")
    if family == "claude-text":  # the dialogue's turns, not one user message
        return [chat_exchange(legacy_as_chat(invoke_completion(obj, model, where, notes),
                                             where, notes), where, index, notes, api="bedrock")]
    if model and "model" not in request:
        obj = {**obj, "request": {**request, "model": model}}
    if family == "cohere":
        obj = cohere_record(obj, where, notes)
    return [chat_exchange(obj, where, index, notes, api="bedrock")]


_READERS: dict[Family, Callable[[Record], list[Exchange]]] = {
    "claude": _claude, "nova": read_converse,
    "prompt": lambda r: invoke_exchanges(r, "prompt"),
    "claude-text": lambda r: invoke_exchanges(r, "claude-text"),
    "chat": lambda r: invoke_exchanges(r, "chat"),
    "cohere": lambda r: invoke_exchanges(r, "cohere")}


def _read(record: Record) -> list[Exchange]:
    request: Any = record.request
    family = invoke_family(request, _model(record)) if isinstance(request, dict) else None
    return _READERS[family](record) if family is not None else invoke_exchanges(record, None)


FORMAT = RecordFormat("bedrock-invoke", 50, lambda r: r.api == "bedrock-invoke", _read,
                      routes=(Route("bedrock-invoke", INVOKE_PATHS, within="/model/"),))
