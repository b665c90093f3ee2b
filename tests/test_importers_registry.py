"""The registry of record formats (memory_core/importers/registry.py): every format
module is registered, priorities are unique and in order, and URLs are routed to the
API whose paths a format declares."""

from __future__ import annotations

import importlib
import json
import pkgutil
from typing import Any

import pytest

from memory_core.errors import ImportFormatError
from memory_core.importers import formats
from memory_core.importers.formats import Record, RecordFormat, Route
from memory_core.importers.registry import FORMATS, check_formats, format_of, read_record, route


def _declared() -> dict[str, list[RecordFormat]]:
    """Every module of the formats package, with the format objects it defines."""
    out: dict[str, list[RecordFormat]] = {}
    for info in pkgutil.iter_modules(formats.__path__):
        module = importlib.import_module(f"{formats.__name__}.{info.name}")
        out[info.name] = [v for v in vars(module).values() if isinstance(v, RecordFormat)]
    return out


def test_every_format_module_is_registered() -> None:
    declared = _declared()
    assert declared, "the walk found no format module"
    missing = [f"{mod}.{f.name}" for mod, found in declared.items() for f in found
               if f not in FORMATS]
    assert not missing, (f"format(s) {missing} are defined but not in FORMATS "
                         "(memory_core/importers/registry.py): add one line each")
    assert sum(len(found) for found in declared.values()) == len(FORMATS), \
        "a format module defines more than one format, or FORMATS holds one from elsewhere"


def _fake(name: str, priority: int) -> RecordFormat:
    return RecordFormat(name, priority, lambda r: True, lambda r: [])


def test_two_formats_with_the_same_priority_are_an_error() -> None:
    # both match every record: which reads it would be left to the list's order
    with pytest.raises(ValueError, match="'a' and 'b' have the same priority 10"):
        check_formats([_fake("a", 10), _fake("b", 10)])


def test_formats_out_of_priority_order_or_named_alike_are_an_error() -> None:
    with pytest.raises(ValueError, match="listed after"):
        check_formats([_fake("a", 20), _fake("b", 10)])
    with pytest.raises(ValueError, match="named alike"):
        check_formats([_fake("a", 10), _fake("a", 20)])
    with pytest.raises(ValueError, match="two routes are named 'x'"):
        check_formats([RecordFormat("a", 10, lambda r: True, lambda r: [],
                                    routes=(Route("x", ("/a",)),)),
                       RecordFormat("b", 20, lambda r: True, lambda r: [],
                                    routes=(Route("x", ("/b",)),))])


def test_the_registry_is_valid_and_priorities_are_unique() -> None:
    check_formats(FORMATS)
    assert len({f.priority for f in FORMATS}) == len(FORMATS)
    assert [f.priority for f in FORMATS] == sorted(f.priority for f in FORMATS)


@pytest.mark.parametrize(("url", "api"), [
    ("https://api.openai.com/v1/chat/completions", "openai"),
    ("https://api.openai.com/v1/responses", "openai"),
    ("https://api.openai.com/v1/completions", "openai"),
    ("https://api.mistral.ai/v1/chat/completions#stream", "openai"),
    ("https://x.example/v1/chat/completions?api-version=2024", "openai"),
    ("/v1/responses/", "openai"),
    ("https://api.anthropic.com/v1/messages", "anthropic"),
    ("https://openrouter.ai/api/anthropic/messages", "anthropic"),
    ("https://api.openai.com/v1/threads/thread_1/messages", None),  # the Assistants API
    ("https://l-aiplatform.googleapis.com/v1/projects/p/locations/l/publishers/anthropic/"
     "models/claude-3-5-sonnet:rawPredict", "vertex-anthropic"),
    ("https://l-aiplatform.googleapis.com/v1/projects/p/publishers/google/models/"
     "gemini-pro:rawPredict", None),
    ("https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash:"
     "streamGenerateContent?alt=sse", "gemini"),
    ("http://localhost:11434/api/chat", "ollama"),
    ("http://localhost:11434/api/generate", "ollama"),
    ("https://api.cohere.com/v2/chat", "cohere"),
    ("https://api.cohere.ai/v1/chat", "cohere"),
    ("https://bedrock-runtime.us-east-1.amazonaws.com/model/us.amazon.nova-micro-v1%3A0/"
     "converse", "bedrock"),
    ("https://bedrock-runtime.us-east-1.amazonaws.com/model/meta.llama3-8b/"
     "invoke-with-response-stream", "bedrock-invoke"),
    ("https://bedrock-runtime.us-east-1.amazonaws.com/converse", None),  # (no model)
    ("https://api.openai.com/v1/embeddings", None),
])
def test_a_url_is_routed_to_the_api_whose_paths_a_format_declares(url: str,
                                                                  api: str | None) -> None:
    assert route(url) == api
    if api is not None:
        assert any(r.api == api for f in FORMATS for r in f.routes)


def _format(obj: dict[str, Any]) -> str | None:
    url = obj.get("url")
    found = format_of(Record(obj, "line 1", 0, route(url) if isinstance(url, str) else None))
    return found.name if found is not None else None


def test_a_url_decides_before_the_keys_do() -> None:
    ollama_keys = {"request": {"model": "m", "messages": [{"role": "user", "content": "hi"}],
                               "options": {"temperature": 0}}}
    assert _format(ollama_keys) == "ollama"  # no URL: told by keys only Ollama's have
    # sent to OpenAI's URL it is a chat completions record, whatever its keys
    assert _format({**ollama_keys, "url": "http://h/v1/chat/completions"}) == "chat"
    assert _format({**ollama_keys, "url": "http://h/api/chat"}) == "ollama"
    # a URL no format serves says nothing: the keys decide
    assert _format({**ollama_keys, "url": "http://h/v1/embeddings"}) == "ollama"


def test_a_record_no_format_reads_names_its_keys() -> None:
    with pytest.raises(ImportFormatError, match="line 4: this looks like a JSON object with "
                                                "keys a, b, which is no record this "
                                                "importer reads; it shares too little"):
        read_record({"a": 1, "b": 2}, "line 4", 0, {})
    with pytest.raises(ImportFormatError, match="line 5: expected a JSON object, got list"):
        read_record([1], "line 5", 0, {})


@pytest.mark.parametrize(("text", "said"), [
    # a Claude Agent SDK transcript (OpenInference's tests): YAML, no cassette
    ("messages:\n- response:\n    request_id: req_1\n", "a YAML document (its keys: "
     "messages), not JSON; the YAML this importer reads is a VCR cassette"),
    # aliases that would expand past the limit: not read, so no keys to say
    ("a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
     "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c]\n"
     "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: [*e, *e, *e, *e, *e, *e, *e, *e]\n",
     "a YAML document that could not be read as one (it begins 'a: &a [x, x, x, x, x, "
     "x, x, x, x, x]'), not JSON"),
    # a text that is no JSON at all: what it looks like, not "line 1: invalid JSON"
    # (outside trials: Aider's chat history in Markdown — its LLM history is read —,
    # OpenHands' prompt logs, kani's recordings)
    ("plain words\n", "plain text, not JSON (it begins 'plain words'): no recording this "
                      "importer reads, which are JSON records"),
    # (Aider writes its transcript with a blank first line: "line 2: invalid JSON" it was)
    ("\n# aider chat started at 2025-01-31 11:21:30\n\n#### Fix the bug\n",
     "Aider's chat transcript (.aider.chat.history.md: the chat as the terminal showed "
     "it, in Markdown), not its model calls: it keeps no request as sent and no usage; "
     "run Aider with --llm-history-file FILE and import that file"),
    ("\n\nplain words\n", "plain text, not JSON (it begins 'plain words')"),
    ("POST https://api.anthropic.com/v1/messages\ncontent-type: application/json\n\n"
     '{"max_tokens":64,"messages":[]}\n',
     "a raw HTTP request (POST https://api.anthropic.com/v1/messages), without its "
     "response, not JSON; the raw HTTP this importer reads is an httprr trace"),
    ("POST /v1/chat/completions HTTP/1.1\n\n{}\n\nHTTP/1.1 200 OK\n\n{}\n",
     "a raw HTTP request (POST /v1/chat/completions) and its response, not JSON"),
    ("<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n",
     "a prompt as text (ChatML's <|im_start|> turns), not a recorded model call"),
    # one that starts as JSON says where it breaks
    ('{"messages": [\n', "line 1: invalid JSON"),
])
def test_a_file_that_is_no_json_is_said_for_what_it_is(text: str, said: str) -> None:
    from memory_core.importers import import_text
    from memory_core.storage.inmemory import InMemoryStorage

    with pytest.raises(ImportFormatError) as e:
        import_text(InMemoryStorage(), text, name="transcript.yaml")
    assert said in str(e.value)


def test_a_list_of_chat_messages_is_said_to_be_one() -> None:
    """mini-swe-agent's trajectory, a JSON array of 22 messages: "item 1: this looks like
    one chat message" said what its first item was, not what the file is."""
    from memory_core.importers import import_text
    from memory_core.storage.inmemory import InMemoryStorage

    msgs = [{"role": "system", "content": "You fix bugs."},
            {"role": "user", "content": "Fix it."},
            {"role": "assistant", "content": "Done."}]
    with pytest.raises(ImportFormatError, match=r"^file: a list of 3 chat messages, not "
                                                r"requests holding them: .* wrap it as "
                                                r"\{\"messages\": \[\.\.\.\]\}"):
        import_text(InMemoryStorage(), json.dumps(msgs))
    # one message alone is still that record's refusal
    with pytest.raises(ImportFormatError, match="this looks like one chat message"):
        import_text(InMemoryStorage(), json.dumps(msgs[:1]))


def test_an_object_keyed_by_texts_is_said_by_its_first_key_s_beginning() -> None:
    """MetaGPT's response cache maps each prompt to its answer: the refusal listed the
    keys — a prompt of 3,572 characters — whole."""
    from memory_core.importers import import_text
    from memory_core.storage.inmemory import InMemoryStorage

    prompt = "\n## context\n\n" + "Write a plan. " * 300
    with pytest.raises(ImportFormatError) as e:
        import_text(InMemoryStorage(), json.dumps({prompt: "A plan.", "Hi": "Hello."}))
    said = str(e.value)
    assert said.startswith(f"line 1: this looks like a JSON object of 2 entries keyed by "
                           f"texts (the first {len(prompt):,} characters long, beginning "
                           f"{prompt[:60]!r}): a map of texts, not a record"), said
    assert prompt[:200] not in said and len(said) < 500


@pytest.mark.parametrize(("doc", "said"), [
    # google/adk-python's tests/integration/fixture/*/…session.json (an older Session)
    ({"id": "s1", "context": {}, "past_events": [], "events": [
        {"invocation_id": "UfYAgiCT", "author": "user", "id": "qKEz3Vss",
         "content": {"parts": [{"text": "Research floods in Florida."}], "role": "user"},
         "timestamp": 1734292270.899412},
        {"invocation_id": "UfYAgiCT", "author": "root_agent", "id": "b2",
         "content": {"parts": [{"text": "On it."}], "role": "model"},
         "timestamp": 1734292271.5}]},
     "this is a Google ADK session (2 event(s), each with its author and invocation_id): "
     "the agents' conversation, not the model calls ADK made of it"),
    ({"eval_set_id": "roll_die", "name": "roll_die", "eval_cases": [
        {"eval_id": "c1", "conversation": [], "session_input": {}}]},
     "this is a Google ADK eval set (eval_set_id, eval_cases): the conversations expected "
     "of an agent, not recorded model calls"),
])
def test_google_adk_files_are_named_in_their_refusal(doc: dict[str, Any], said: str) -> None:
    from memory_core.importers import import_text
    from memory_core.storage.inmemory import InMemoryStorage

    with pytest.raises(ImportFormatError) as e:
        import_text(InMemoryStorage(), json.dumps(doc, indent=1), name="s.json")
    assert said in str(e.value), str(e.value)
