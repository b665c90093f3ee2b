"""Ollama's native API (/api/chat, /api/generate) imports as the chat-completions
traffic it is equivalent to (the real cassettes, tests/fixtures/imports/real/
openllmetry-ollama-*: test_importers_real.py and test_importers_replay.py); records' images, thinking, tool names, token context and cut streams are kept
or noted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memory_core.errors import ImportFormatError
from memory_core.importers import import_text
from memory_core.storage.inmemory import InMemoryStorage

REAL = Path(__file__).parent / "fixtures" / "imports" / "real"


def _answer(content: str = "ok", **extra: Any) -> dict[str, Any]:
    return {"model": "llama3.2", "created_at": "2025-03-01T10:00:00.123456789Z",
            "message": {"role": "assistant", "content": content}, "done": True,
            "done_reason": "stop", "prompt_eval_count": 30, "eval_count": 5, **extra}


def _import(*records: dict[str, Any]) -> tuple[InMemoryStorage, Any]:
    s = InMemoryStorage()
    return s, import_text(s, "\n".join(json.dumps(r) for r in records), name="o.jsonl")


def test_images_thinking_and_tool_names() -> None:
    call = {"role": "assistant", "content": "", "thinking": "I should look it up",
            "tool_calls": [{"function": {"name": "lookup", "arguments": {"q": "cat"}}}]}
    s, report = _import({"request": {"model": "llama3.2", "messages": [
        {"role": "user", "content": "What is this?", "images": ["iVBORw0KGgo="]}, call,
        {"role": "tool", "content": "a cat", "tool_name": "lookup"}],
        "options": {"temperature": 0.1, "num_predict": 64}},
        "response": _answer("A cat.")})
    [rid] = report.runs_created
    msgs = [m.as_message() for m in s.memory.get_messages(report.threads_created[0])]
    assert [m.role for m in msgs] == ["user", "assistant", "tool", "assistant"]
    assert msgs[0].metadata["attachments"][0]["type"] == "image"
    # (the 8 bytes "iVBORw0KGgo=" encodes)
    assert msgs[0].metadata["attachments"][0]["bytes"] == 8
    [result] = msgs[2].tool_results()
    assert (result.name, result.call_id) == ("lookup", msgs[1].tool_calls()[0].id)
    assert any("thinking not imported" in k.reason for k in report.skipped)
    params = s.runs.get(f"{rid}:import")["request_params"]
    # num_predict is the most tokens to write: max_tokens, as every API's is recorded
    assert (params["temperature"], params["max_tokens"]) == (0.1, 64)
    assert "num_predict" not in params
    assert s.runs.get(f"{rid}:step:0")["model"]["max_tokens"] == 64
    run = s.runs.require_run(rid)
    assert run.started_at.isoformat() == "2025-03-01T10:00:00.123456+00:00"


def test_generate_keeps_the_system_prompt_and_notes_the_token_context() -> None:
    s, report = _import({"request": {"model": "llama3.2", "prompt": "Continue.",
                                     "system": "Be terse.", "context": [1, 2, 3]},
                         "response": {"model": "llama3.2", "response": "Done.",
                                      "done": True, "prompt_eval_count": 9,
                                      "eval_count": 2}})
    [rid] = report.runs_created
    lanes = [(i["lane"], i["message"]["content"]) for i in s.runs.get(f"{rid}:prompt")["items"]]
    assert lanes == [("instructions", "Be terse."), ("input", "Continue.")]
    assert any("'context' (3 token ids of the earlier turns) not imported" in k.reason
               for k in report.skipped)


def test_a_stream_cut_before_its_last_line_is_noted() -> None:
    chunks = [{"model": "m", "message": {"role": "assistant", "content": "Hal"},
               "done": False},
              {"model": "m", "message": {"role": "assistant", "content": "f"}, "done": False}]
    s, report = _import({"request": {"model": "m", "messages": [
        {"role": "user", "content": "hi"}]}, "response": chunks})
    [rid] = report.runs_created
    assert s.runs.get(f"{rid}:step:0")["response"]["text"] == "Half"
    assert any("ends before its last line" in k.reason for k in report.skipped)


@pytest.mark.parametrize("request_, error", [
    ({"model": "m", "prompt": 3}, r"line 1: an Ollama generate request needs a string "
                                  r"'prompt', got 3"),
    ({"model": "m", "messages": [{"role": "user", "content": "x"}], "options": [1]},
     r"line 1: 'options' must be an object, got \[1\]"),
    ({"model": "m", "messages": [{"role": "user", "content": "x", "images": "abc"}]},
     r"line 1: message 0: 'images' must be a list of base64 strings, got 'abc'"),
    ({"model": "m", "prompt": "x", "context": True},  # (raised TypeError)
     r"line 1: 'context' must be a list of token ids, got True"),
])
def test_bad_records_are_refused_naming_them(request_: dict[str, Any], error: str) -> None:
    s = InMemoryStorage()
    with pytest.raises(ImportFormatError, match=error):
        import_text(s, json.dumps({"request": request_, "response": _answer()}),
                    name="o.jsonl")
    assert not s.memory.list_threads()


def test_a_negative_num_predict_is_no_limit_and_keeps_its_name() -> None:
    s, report = _import({"request": {"model": "m", "messages": [
        {"role": "user", "content": "hi"}], "options": {"num_predict": -1}},
        "response": _answer()})
    rid = report.runs_created[0]
    assert s.runs.get(f"{rid}:import")["request_params"]["num_predict"] == -1
    assert s.runs.get(f"{rid}:step:0")["model"]["max_tokens"] is None


@pytest.mark.parametrize("request_", [
    {"model": "m", "prompt": "Continue.", "system": "Be terse.", "options": {"num_predict": 9}},
    {"model": "m", "prompt": "Continue.", "context": [1, 2], "keep_alive": "5m"},
    {"model": "m", "messages": [{"role": "user", "content": "What is it?",
                                 "images": ["iVBORw0KGgo="]}]}])
def test_a_failed_record_without_url_or_answer_is_told_by_its_own_keys(
        request_: dict[str, Any]) -> None:
    """No answer and no URL to tell the API by: Ollama's own request keys (options,
    keep_alive, context, a message's images) say it, so the generate request's system
    is the instructions and its options are parameters, not a completion's."""
    s, report = _import({"request": request_, "error": "model 'm' not found"})
    [rid] = report.runs_created
    assert s.runs.require_run(rid).status == "failed"
    assert report.apis == ["ollama"]
    params = s.runs.get(f"{rid}:import")["request_params"]
    assert "options" not in params and "images" not in json.dumps(params)


def _cassette(body: str) -> str:
    import yaml

    return yaml.safe_dump({"interactions": [{
        "request": {"method": "POST", "uri": "http://localhost:11434/api/chat",
                    "body": json.dumps({"model": "m", "messages": [
                        {"role": "user", "content": "hi"}]}), "headers": {}},
        "response": {"status": {"code": 200, "message": "OK"},
                     "headers": {"Content-Type": ["application/x-ndjson"]},
                     "body": {"string": body}}}]})


def test_a_stream_with_a_line_broken_in_two_names_that_line() -> None:
    """A JSON-lines stream whose record is split over two lines (langchainrb's fixtures
    of a chunk cut mid-record) was read as one JSON body: "body invalid JSON: Extra
    data: line 2 column 1" — it names the stream line that is no JSON object."""
    lines = [json.dumps({"model": "m", "message": {"role": "assistant", "content": t},
                         "done": False}) for t in ("Hel", "lo")]
    whole = "\n".join([*lines, json.dumps(_answer(""))]) + "\n"
    s = InMemoryStorage()
    report = import_text(s, _cassette(whole), name="c.yaml")
    assert s.runs.get(f"{report.runs_created[0]}:step:0")["response"]["text"] == "Hello"
    broken = "\n".join([lines[0], lines[1][:20], lines[1][20:], json.dumps(_answer(""))])
    with pytest.raises(ImportFormatError, match="interaction 1: response: stream line 2 "
                                                "invalid JSON"):
        import_text(InMemoryStorage(), _cassette(broken), name="c.yaml")
