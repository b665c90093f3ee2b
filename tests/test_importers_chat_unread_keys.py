"""A chat-completions message key the reader reads nowhere is noted, once a key per
record, naming the messages that have it — never dropped silently, and never kept as
text: Ollama's ``images`` sent to its OpenAI-compatible endpoint (which does not read
them) is no image the model saw."""

from __future__ import annotations

import json
from typing import Any

from memory_core.importers import import_text
from memory_core.storage.inmemory import InMemoryStorage

B64 = "iVBORw0KGgoAAAANSUhEUgAAAG0AAABmCAYAAADBPx" * 20


def _import(messages: list[Any], answer: dict[str, Any]) -> tuple[list[Any], list[str]]:
    s = InMemoryStorage()
    report = import_text(s, json.dumps({
        "request": {"model": "llava", "messages": messages},
        "response": {"choices": [{"message": answer, "finish_reason": "stop"}]}}),
        name="chat.jsonl")
    [thread] = report.threads_created
    return s.memory.get_messages(thread), [k.reason for k in report.skipped]


def test_ollama_images_sent_to_the_openai_endpoint_are_noted_never_stored() -> None:
    msgs, noted = _import(
        [{"role": "user", "content": "what is in this image?", "images": [B64]},
         {"role": "assistant", "content": "I cannot see one."},
         {"role": "user", "content": "and this?", "images": [B64, B64]}],
        {"role": "assistant", "content": "Nor this."})
    assert noted == ["message(s) 0, 2: key 'images' not imported (no key of the OpenAI "
                     "chat format): Ollama's OpenAI-compatible API does not read it (its "
                     "/api/chat does)"]
    assert B64[:40] not in json.dumps([m.model_dump(mode="json") for m in msgs])


def test_an_images_list_holding_no_string_is_noted_the_same_not_a_crash() -> None:
    _, noted = _import([{"role": "user", "content": "hi", "images": [{"data": 1}, 7]}],
                       {"role": "assistant", "content": "hello"})
    assert [n for n in noted if "'images'" in n] == [
        "message(s) 0: key 'images' not imported (no key of the OpenAI chat format): "
        "Ollama's OpenAI-compatible API does not read it (its /api/chat does)"]


def test_other_unread_keys_are_noted_one_note_a_key_and_empty_ones_not_at_all() -> None:
    _, noted = _import(
        [{"role": "user", "content": "hi", "weight": 1, "prefix": False, "extra": None},
         {"role": "assistant", "content": "yo", "weight": 0},
         {"role": "user", "content": "bye"}],
        {"role": "assistant", "content": "ciao", "provider_specific_fields": {"x": 1},
         "annotations": []})
    assert noted == [
        "message(s) 0, 1: key 'weight' not imported (no key of the OpenAI chat format)",
        "response: key 'provider_specific_fields' not imported (no key of the OpenAI chat "
        "format)"]


def test_a_text_part_s_other_keys_are_noted_once_a_key() -> None:
    """An outside trial (LangChain's prompt caching through an OpenAI-compatible
    proxy): ``cache_control`` on a text part was dropped without a word. A text part's
    keys other than its type and text are noted, once a key, naming the messages."""
    mark = {"type": "ephemeral"}
    msgs, noted = _import(
        [{"role": "system", "content": [{"type": "text", "text": "Be brief.",
                                         "cache_control": mark}]},
         {"role": "user", "content": [{"type": "text", "text": "Hi.", "cache_control": mark},
                                      {"type": "text", "text": "There.", "cache_control": mark,
                                       "lang": "en", "note": ""}]}],
        {"role": "assistant", "content": "Hello."})
    assert [m.text() for m in msgs] == ["Hi. There.", "Hello."]
    assert noted == [
        "message(s) 0, 1: text parts' key 'cache_control' not imported (no key of the OpenAI "
        "chat format): a mark where the provider caches the prompt, no text it reads",
        "message(s) 1: text parts' key 'lang' not imported (no key of the OpenAI chat "
        "format)"]
