"""A recorded call whose body carries no time (Anthropic, Gemini, Bedrock) takes the
time its recording gives — a cassette's HTTP ``Date`` response header, a HAR entry's
``startedDateTime`` — instead of an invented one; a body's own time still wins."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import yaml

from memory_core.importers import import_text
from memory_core.storage.inmemory import InMemoryStorage

ANTHROPIC_REQUEST = {"model": "claude-sonnet-4-5", "max_tokens": 64,
                     "messages": [{"role": "user", "content": "hi"}]}
ANTHROPIC_ANSWER = {"type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                    "content": [{"type": "text", "text": "hello"}], "stop_reason": "end_turn",
                    "usage": {"input_tokens": 3, "output_tokens": 1}}


def _interaction(url: str, request: dict[str, Any], answer: dict[str, Any],
                 date: str | None) -> dict[str, Any]:
    headers = {"Content-Type": ["application/json"]}
    if date is not None:
        headers["Date"] = [date]
    return {"request": {"method": "POST", "uri": url, "body": json.dumps(request),
                        "headers": {}},
            "response": {"status": {"code": 200}, "headers": headers,
                         "body": {"string": json.dumps(answer)}}}


def _started(text: str, name: str) -> list[datetime]:
    s = InMemoryStorage()
    report = import_text(s, text, name=name)
    return [s.runs.require_run(r).started_at for r in report.runs_created]


def test_a_cassette_call_takes_its_http_date() -> None:
    text = yaml.safe_dump({"interactions": [_interaction(
        "https://api.anthropic.com/v1/messages", ANTHROPIC_REQUEST, ANTHROPIC_ANSWER,
        "Tue, 03 Feb 2026 15:19:54 GMT")]})
    assert _started(text, "c.yaml") == [datetime(2026, 2, 3, 15, 19, 54, tzinfo=UTC)]


def test_a_body_time_wins_over_the_date_header() -> None:
    chat = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    answer = {"created": 1767268800, "choices": [
        {"message": {"role": "assistant", "content": "hello"}}]}
    text = yaml.safe_dump({"interactions": [_interaction(
        "https://api.openai.com/v1/chat/completions", chat, answer,
        "Tue, 03 Feb 2026 15:19:54 GMT")]})
    assert _started(text, "c.yaml") == [datetime(2026, 1, 1, 12, 0, tzinfo=UTC)]


def test_a_har_entry_takes_its_start_time() -> None:
    har = {"log": {"version": "1.2", "creator": {"name": "test", "version": "1"},
                   "entries": [{
        "startedDateTime": "2026-02-03T15:19:54.123Z",
        "request": {"method": "POST", "url": "https://api.anthropic.com/v1/messages",
                    "headers": [], "postData": {"mimeType": "application/json",
                                                "text": json.dumps(ANTHROPIC_REQUEST)}},
        "response": {"status": 200, "headers": [{"name": "content-type",
                                                 "value": "application/json"}],
                     "content": {"mimeType": "application/json",
                                 "text": json.dumps(ANTHROPIC_ANSWER)}}}]}}
    assert _started(json.dumps(har), "calls.har") == [
        datetime(2026, 2, 3, 15, 19, 54, 123000, tzinfo=UTC)]


def test_an_unreadable_date_header_leaves_the_call_undated() -> None:
    text = yaml.safe_dump({"interactions": [_interaction(
        "https://api.anthropic.com/v1/messages", ANTHROPIC_REQUEST, ANTHROPIC_ANSWER,
        "yesterday")]})
    [at] = _started(text, "c.yaml")
    assert at.year == 1970  # the importer's undated placeholder, as with no header
