"""httprr traces (Go's ``rsc.io/httprr``; langchaingo's test recordings): each call's
request and response as raw HTTP after a line of their sizes in bytes. The real traces
are in the corpus (tests/test_importers_real.py); here they are cut and garbled."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_core.errors import ImportFormatError
from memory_core.importers import detect_format, import_text
from memory_core.storage.inmemory import InMemoryStorage

REAL = Path(__file__).parent / "fixtures" / "imports" / "real"
OPENAI = (REAL / "langchaingo-TestFunctionCall.httprr").read_bytes().decode("utf-8")
OLLAMA = (REAL / "langchaingo-TestWithStreaming.httprr").read_bytes().decode("utf-8")


def _import(text: str) -> tuple[InMemoryStorage, object]:
    s = InMemoryStorage()
    return s, import_text(s, text, name="t.httprr")


def test_a_trace_is_told_by_its_first_line() -> None:
    assert detect_format(OPENAI) == "openai"
    s, report = _import(OPENAI)
    (rid,) = report.runs_created  # type: ignore[attr-defined]
    record = s.runs.get(f"{rid}:import")
    assert isinstance(record, dict) and record["extra"]["endpoint"] == "https://api.openai.com"


def test_sizes_count_bytes_not_characters() -> None:
    # a request body with non-ASCII text: its byte count, not its length in characters
    body = '{"model":"gpt-4o","messages":[{"role":"user","content":"Grüße, café?"}]}'
    answer = ('{"model":"gpt-4o","choices":[{"message":{"role":"assistant",'
              '"content":"Très bien"},"finish_reason":"stop"}]}')
    request = (f"POST https://api.openai.com/v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
               f"Content-Length: {len(body.encode())}\r\n\r\n{body}")
    response = f"HTTP/1.1 200 OK\r\nContent-Length: {len(answer.encode())}\r\n\r\n{answer}"
    text = (f"httprr trace v1\n{len(request.encode())} {len(response.encode())}\n"
            f"{request}{response}")
    s, report = _import(text)
    (thread,) = report.threads_created  # type: ignore[attr-defined]
    assert [m.content for m in s.memory.get_messages(thread)] == ["Grüße, café?",
                                                                   "Très bien"]


def test_a_trace_cut_short_is_refused_naming_the_call() -> None:
    with pytest.raises(ImportFormatError, match=r"call 1: the file ends inside the call "
                                                r"\(\d+ \+ \d+ bytes announced, \d+ left\)"):
        _import(OPENAI[:-100])


def test_a_size_line_that_is_no_sizes_is_refused_naming_it() -> None:
    broken = OPENAI.replace("\n665 1850\n", "\n665 lots\n", 1)
    assert broken != OPENAI
    with pytest.raises(ImportFormatError, match="call 1: expected a line '<request bytes> "
                                                "<response bytes>', got b'665 lots"):
        _import(broken)


def test_a_chunk_size_that_is_no_number_is_refused() -> None:
    # the response's first chunk size, garbled, keeping the byte counts
    at = OLLAMA.index("Transfer-Encoding: chunked")
    body = OLLAMA.index("\r\n\r\n", at) + 4
    size_end = OLLAMA.index("\r\n", body)
    garbled = OLLAMA[:body] + "z" * (size_end - body) + OLLAMA[size_end:]
    with pytest.raises(ImportFormatError, match="call 1: response: a chunked body's chunk "
                                                "size is not hexadecimal"):
        _import(garbled)


def test_a_trace_with_a_compressed_body_is_read_from_its_bytes(tmp_path: Path) -> None:
    # a gzip body makes the file no UTF-8 text: it was refused as "not an OTLP
    # protobuf export, nor UTF-8 text"
    import gzip
    import json

    from memory_core.importers import import_file

    body = json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]})
    answer = gzip.compress(json.dumps({"model": "gpt-4o", "choices": [{"message": {
        "role": "assistant", "content": "hello"}, "finish_reason": "stop"}]}).encode())
    request = (f"POST https://api.openai.com/v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
               f"Content-Length: {len(body)}\r\n\r\n{body}").encode()
    response = (b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: "
                + str(len(answer)).encode() + b"\r\n\r\n" + answer)
    path = tmp_path / "gz.httprr"
    path.write_bytes(b"httprr trace v1\n" + f"{len(request)} {len(response)}\n".encode()
                     + request + response)
    s = InMemoryStorage()
    report = import_file(s, path)
    (thread,) = report.threads_created
    assert [m.content for m in s.memory.get_messages(thread)] == ["hi", "hello"]
