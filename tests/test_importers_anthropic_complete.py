"""Anthropic's legacy Text Completions API (``/v1/complete``) and Claude 2's body on
Bedrock's InvokeModel: refused before ("not a model call this importer reads"); the
prompt's "\\n\\nHuman:"/"\\n\\nAssistant:" turns are read as the dialogue they are (the
real cassettes: tests/fixtures/imports/real/lmnr-*legacy*, openllmetry-bedrock-invoke-
test_anthropic_2_*)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memory_core.errors import ImportFormatError
from memory_core.importers import import_text
from memory_core.storage.inmemory import InMemoryStorage

URL = "https://api.anthropic.com/v1/complete"
PROMPT = ("You answer briefly.\n\nHuman: Hi\n\nAssistant: Hello!\n\nHuman: Capital of "
          "Peru?\n\nAssistant:")


def _answer(text: str, **extra: Any) -> dict[str, Any]:
    return {"type": "completion", "id": "compl_1", "completion": text,
            "stop_reason": "stop_sequence", "model": "claude-2.1", "stop": "\n\nHuman:",
            **extra}


def _import(*records: dict[str, Any]) -> tuple[InMemoryStorage, Any]:
    s = InMemoryStorage()
    return s, import_text(s, "\n".join(json.dumps(r) for r in records), name="c.jsonl")


def _texts(s: InMemoryStorage, thread: str) -> list[tuple[str, str | None]]:
    return [(m.role, m.text()) for m in s.memory.get_messages(thread)]


def test_the_prompt_s_turns_are_the_dialogue_and_its_head_the_instructions() -> None:
    s, report = _import({"url": URL, "request": {"model": "claude-2.1", "prompt": PROMPT,
                                                 "max_tokens_to_sample": 64,
                                                 "stop_sequences": ["\n\nHuman:"]},
                         "response": _answer(" Lima.")})
    [rid] = report.runs_created
    assert _texts(s, report.threads_created[0]) == [
        ("user", "Hi"), ("assistant", "Hello!"), ("user", "Capital of Peru?"),
        ("assistant", " Lima.")]
    prompt = s.runs.get(f"{rid}:prompt")["items"]
    assert (prompt[0]["lane"], prompt[0]["message"]["content"]) == \
        ("instructions", "You answer briefly.")
    params = s.runs.get(f"{rid}:import")["request_params"]
    assert (params["max_tokens"], params["stop"]) == (64, ["\n\nHuman:"])
    step = s.runs.get(f"{rid}:step:0")
    assert step["response"]["finish_reason"] == "stop_sequence"
    assert step["usage_known"] is False  # (the API counts no tokens)
    assert s.runs.get(f"{rid}:import")["extra"]["stop_sequence"] == "\n\nHuman:"


def test_a_stream_of_completion_events_is_joined() -> None:
    events = [{"type": "completion", "completion": " Li", "stop_reason": None,
               "model": "claude-2.1"},
              {"type": "ping"},
              {"type": "completion", "completion": "ma.", "stop_reason": "stop_sequence",
               "model": "claude-2.1"}]
    sse = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    s, report = _import({"url": URL, "request": {"model": "claude-2.1", "prompt": PROMPT,
                                                 "max_tokens_to_sample": 64, "stream": True},
                         "response": sse})
    [rid] = report.runs_created
    assert s.runs.get(f"{rid}:output")["text"] == " Lima."
    assert s.runs.get(f"{rid}:step:0")["response"]["finish_reason"] == "stop_sequence"


def test_a_prefilled_answer_and_an_error_are_kept_and_said() -> None:
    s, report = _import(
        {"url": URL, "request": {"model": "claude-2.1", "max_tokens_to_sample": 9,
                                 "prompt": "\n\nHuman: List two colours.\n\nAssistant: 1."},
         "response": _answer(" red 2. blue")},
        {"url": URL, "request": {"model": "claude-2.1", "max_tokens_to_sample": 9,
                                 "prompt": "\n\nHuman: Again?\n\nAssistant:"},
         "response": {"type": "error", "error": {"type": "overloaded_error",
                                                 "message": "Overloaded"}}})
    first, second = (s.runs.require_run(r) for r in report.runs_created)
    assert _texts(s, first.thread_id or "") == [
        ("user", "List two colours."), ("assistant", "1."), ("assistant", " red 2. blue")]
    assert any("ends with the start of the answer (2 characters given by the client)" in
               k.reason for k in report.skipped)
    assert second.status == "failed" and "Overloaded" in (second.error or "")


@pytest.mark.parametrize(("prompt", "said"), [
    ("\n\nAssistant: Hi\n\nHuman: x\n\nAssistant:", "the first a Human one"),
    (3, "needs its 'prompt' as a string"),
])
def test_a_malformed_prompt_is_named(prompt: Any, said: str) -> None:
    with pytest.raises(ImportFormatError, match="line 1") as e:
        _import({"url": URL, "request": {"model": "claude-2.1", "prompt": prompt,
                                         "max_tokens_to_sample": 5},
                 "response": _answer("x")})
    assert said in str(e.value)


def test_claude_2_on_bedrock_invoke_reads_its_dialogue_and_its_stream_s_usage() -> None:
    url = ("https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-v2:1/"
           "invoke-with-response-stream")
    chunks = [{"completion": " Li", "stop_reason": None, "stop": None},
              {"completion": "ma.", "stop_reason": "stop_sequence", "stop": "\n\nHuman:",
               "amazon-bedrock-invocationMetrics": {"inputTokenCount": 21,
                                                    "outputTokenCount": 4}}]
    s, report = _import({"url": url, "request": {"prompt": PROMPT,
                                                 "max_tokens_to_sample": 64},
                         "response": chunks})
    [rid] = report.runs_created
    assert _texts(s, report.threads_created[0])[-2:] == [
        ("user", "Capital of Peru?"), ("assistant", " Lima.")]
    step = s.runs.get(f"{rid}:step:0")
    assert step["model"]["name"] == "anthropic.claude-v2:1"
    assert step["response"]["usage"] == {"input_tokens": 21, "output_tokens": 4}
    assert s.runs.get(f"{rid}:import")["request_params"]["max_tokens"] == 64
