"""The hostile-input corpus (issue 33, "Done when"), generated at test time into a
temporary folder: nothing large is committed, and a bomb is a few hundred KiB on disk.

* ``import_files(folder)``: files for ``memwb import`` — compression bombs (gzip,
  bzip2, xz; zstd and brotli bodies in a cassette), a YAML alias bomb, nesting 100,000
  levels deep (JSON and YAML), numbers no float or int holds, NUL bytes, invalid UTF-8,
  empty and truncated files, wrong top-level types, Aider histories with nothing readable.
* ``record_samples()``: one real record of every format the registry knows
  (``registry.FORMATS``), found in the test fixtures, for the wrong-type sweeps.
* ``wrong_types(doc)``: every array and object of a document replaced, one at a time,
  by a number, a string, null and the other kind of container — at every depth.
* ``server_bodies()``: request bodies for the collector and the proxy.
"""

from __future__ import annotations

import bz2
import copy
import gzip
import json
import lzma
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "imports"
MiB = 1 << 20
DEEP = 100_000
#: a JSON number past a 64-bit float, and an int past Python's 4,300-digit conversion
NUMBERS = {"1e999": "1e999", "minus-1e999": "-1e999", "huge-int": "9" * 5000}
#: what a value of the wrong type is replaced with
WRONG = {"number": 7, "string": "x", "null": None, "true": True}

CHAT_REQUEST = {"model": "gpt-4o", "messages": [{"role": "user", "content": "Hi"}]}
CHAT_ANSWER = {"id": "c1", "object": "chat.completion", "model": "gpt-4o", "choices": [
    {"index": 0, "message": {"role": "assistant", "content": "Hello"},
     "finish_reason": "stop"}]}


def bomb(kind: str, expands_to: int = 320 * MiB) -> bytes:
    """A compressed stream of ``kind`` expanding to ``expands_to`` bytes of zeros: one
    MiB compressed once and its members concatenated (each format reads concatenated
    streams), so building it takes milliseconds."""
    packs: dict[str, Callable[[bytes], bytes]] = {
        "gzip": gzip.compress, "bzip2": bz2.compress, "xz": lzma.compress}
    return packs[kind](b"\x00" * MiB) * (expands_to // MiB)


def deflate_bomb(expands_to: int = 320 * MiB, *, gzip_member: bool = False) -> bytes:
    """One deflate stream (or, ``gzip_member``, one gzip member: what an HTTP client
    decodes whole) expanding to ``expands_to`` bytes of zeros."""
    d = zlib.compressobj(9, zlib.DEFLATED, 31 if gzip_member else 15)
    chunk = b"\x00" * MiB
    return b"".join(d.compress(chunk) for _ in range(expands_to // MiB)) + d.flush()


def laughs() -> str:
    """974 bytes of YAML whose aliases expand to 10**9 strings."""
    text = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    prev = "a"
    for name in "bcdefghi":
        text += f"{name}: &{name} [" + ",".join([f"*{prev}"] * 10) + "]\n"
        prev = name
    return text + "interactions: [*i]\n"


def cassette(response_body: Any, *, encoding: str = "", request: Any = None) -> str:
    headers = {"Content-Encoding": [encoding]} if encoding else {}
    return str(yaml.safe_dump({"interactions": [{
        "request": {"method": "POST", "uri": "https://api.openai.com/v1/chat/completions",
                    "body": json.dumps(request or CHAT_REQUEST), "headers": {}},
        "response": {"status": {"code": 200}, "headers": headers,
                     "body": {"string": response_body}}}]}))


def har(response_text: str) -> str:
    return json.dumps({"log": {"version": "1.2", "entries": [{
        "startedDateTime": "2026-01-01T00:00:00Z",
        "request": {"method": "POST", "url": "https://api.openai.com/v1/chat/completions",
                    "postData": {"mimeType": "application/json",
                                 "text": json.dumps(CHAT_REQUEST)}},
        "response": {"status": 200, "content": {"mimeType": "application/json",
                                                "text": response_text}}}]}})


def _chat_line(extra: str) -> str:
    """A chat-completions JSONL record with ``extra`` spliced in as a raw JSON value."""
    return (f'{{"request": {json.dumps(CHAT_REQUEST)}, "response": '
            f'{json.dumps(CHAT_ANSWER)[:-1]}, "extra": {extra}}}}}\n')


def _otlp_with(raw: str) -> str:
    """The OTLP fixture with a raw JSON value as one span's attribute value."""
    text = (FIX / "otel_genai.json").read_text(encoding="utf-8")
    mark = '"value": {"doubleValue": 0.2}'
    assert mark in text
    return text.replace(mark, f'"value": {{"doubleValue": {raw}}}', 1)


def _brotli_bomb() -> bytes | None:
    try:
        import brotli
    except ImportError:
        return None  # no encoder here: the importer's refusal to read br is tested
    return bytes(brotli.compress(b"\x00" * 320 * MiB, quality=1))


def _zstd_bomb() -> bytes | None:
    try:
        import zstandard
    except ImportError:
        return None
    return bytes(zstandard.ZstdCompressor(level=1).compress(b"\x00" * 320 * MiB))


def import_files(folder: Path) -> dict[str, Path]:
    """Every hostile import file, by case name, written into ``folder``."""
    files: dict[str, bytes | str] = {
        **{f"bomb-{k}": bomb(k) for k in ("gzip", "bzip2", "xz")},
        "bomb-zstd-file": b"\x28\xb5\x2f\xfd" + b"\x00" * 64,
        "yaml-alias-bomb": laughs(),
        "yaml-deep-block": "interactions:\n" + "".join("  " * i + "-\n"
                                                       for i in range(1, 2000)),
        "yaml-deep-flow": "interactions: " + "[" * DEEP + "]" * DEEP + "\n",
        "yaml-deep-mapping": "interactions: " + "{a: " * DEEP + "1" + "}" * DEEP + "\n",
        "json-deep-array": "[" * DEEP + "]" * DEEP,
        "json-deep-object": '{"a": ' * DEEP + "1" + "}" * DEEP,
        "jsonl-deep-line": _chat_line("[" * DEEP + "]" * DEEP),
        "cassette-deep-body": cassette("[" * DEEP + "]" * DEEP),
        "otlp-deep-value": _otlp_with("[" * DEEP + "]" * DEEP),
        "nul-byte": _chat_line('"a\x00b"').encode(),
        "nul-escape": _chat_line('"a\\u0000b"'),
        "lone-surrogate": _chat_line('"\\ud800"'),
        "invalid-utf8": _chat_line('"ok"').encode()[:40] + b"\xff\xfe\xc3(" +
                        _chat_line('"ok"').encode()[40:],
        "empty": b"",
        "whitespace": " \n\t\n",
        "bom-only": "\ufeff",
        "binary-noise": bytes(range(256)) * 4,
        "cassette-br-body": cassette(_brotli_bomb() or b"\x1b\x00\x00\x00garbage",
                                     encoding="br"),
        "cassette-zstd-body": cassette(_zstd_bomb() or b"\x28\xb5\x2f\xfd\x00garbage",
                                       encoding="zstd"),
        "cassette-gzip-bomb-body": cassette(bomb("gzip"), encoding="gzip"),
        "cassette-deflate-bomb-body": cassette(deflate_bomb(), encoding="deflate"),
        "cassette-not-yaml": "interactions: [\n  - {request: \n",
        # Aider's LLM history: its first line, then nothing of it that can be read
        "aider-no-role": "TO LLM 2025-01-31T11:21:36\n-------\nNOBODY hi\n" * 3,
        "aider-impossible-time": "TO LLM 2025-13-45T25:61:61\n-------\nUSER hi\n"
                                 "LLM RESPONSE 2025-13-45T25:61:62\nASSISTANT hello\n",
    }
    for name, raw in NUMBERS.items():
        files[f"jsonl-{name}"] = _chat_line(raw)
        files[f"otlp-{name}"] = _otlp_with(raw)
        files[f"cassette-{name}"] = cassette(json.dumps(CHAT_ANSWER)[:-1] +
                                             f', "x": {raw}}}')
        files[f"har-{name}"] = har(json.dumps(CHAT_ANSWER)[:-1] + f', "x": {raw}}}')
    for name, value in {"number": "1", "string": '"s"', "null": "null", "true": "true",
                        "list-of-numbers": "[1, 2]", "list-of-lists": "[[]]"}.items():
        files[f"top-level-{name}"] = value + "\n"
    for fixture in ("openai_support.jsonl", "otel_genai.json",
                    "real/langsmithsdk-langsmith_py_wrap_openai_.json",
                    "real/mirascope-ts-handles-refusal-for-stream.har",
                    "real/openllmetry-test_chat_tool_calls.yaml"):
        data = (FIX / fixture).read_bytes()
        files[f"truncated-{Path(fixture).stem[:40]}"] = data[:len(data) // 2]
    out = {}
    for name, content in files.items():
        path = folder / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        out[name] = path
    return out


# -- wrong types at every depth -------------------------------------------------------------
def _containers(doc: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    yield path, doc
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _containers(v, (*path, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _containers(v, (*path, i))


def _replaced(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    out = copy.deepcopy(doc)
    node = out
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    return out


def wrong_types(doc: Any, *, limit: int | None = None) -> Iterator[tuple[str, Any]]:
    """``doc`` with one value at a time replaced by a value of another JSON type: every
    object and array (by a number, a string, null, true and the other container) and
    every scalar (by an object and an array) — at every depth. Yields (where, doc)."""
    count = 0
    for path, value in _containers(doc):
        if not path:
            continue
        if isinstance(value, (dict, list)):
            other: Any = [] if isinstance(value, dict) else {}
            swaps = {**WRONG, "other-container": other}
        else:
            swaps = {"object": {}, "array": [], **({"number": 7} if isinstance(value, str)
                                                     else {"string": "x"})}
        for kind, swap in swaps.items():
            yield f"/{'/'.join(map(str, path))}={kind}", _replaced(doc, path, swap)
            count += 1
            if limit is not None and count >= limit:
                return


def record_samples() -> dict[str, dict[str, Any]]:
    """One record of every format of ``registry.FORMATS``, by format name, taken from
    the fixtures (JSON records and cassette interactions); for a format whose records a
    file's document is gathered into (Letta's agent files, ATIF trajectories: one a
    call), the smallest such document, whole."""
    from memory_core.importers.formats import Record
    from memory_core.importers.formats.atif import is_trajectory
    from memory_core.importers.formats.claude_code import claude_code_transcripts
    from memory_core.importers.formats.cline import cline_histories
    from memory_core.importers.formats.codex import codex_rollouts
    from memory_core.importers.formats.gemini_cli import gemini_cli_sessions
    from memory_core.importers.formats.letta import letta_agent_files
    from memory_core.importers.formats.promptfoo import promptfoo_evals
    from memory_core.importers.formats.semantic_kernel import chat_histories
    from memory_core.importers.formats.swe_agent import agent_trajectories
    from memory_core.importers.formats.tau_bench import tau_bench_results
    from memory_core.importers.jsonvalues import read_documents
    from memory_core.importers.registry import FORMATS, format_of, route

    found: dict[str, dict[str, Any]] = {}

    def consider(obj: Any) -> None:
        if not isinstance(obj, dict):
            return
        url = obj.get("url")
        fmt = format_of(Record(obj, "sample", 0, route(url) if isinstance(url, str)
                               else None, {}))
        if fmt is not None and fmt.name not in found:
            found[fmt.name] = obj
        for value in obj.values():  # records inside a batch ({"post": [runs…]})
            if isinstance(value, list):
                for item in value[:5]:
                    if isinstance(item, dict) and item is not obj:
                        consider({k: v for k, v in item.items() if k != "post"})

    for path in sorted([*FIX.rglob("*.json*"), *FIX.rglob("*.traj"), *FIX.rglob("*.af")]):
        try:
            docs = read_documents(path.read_text(encoding="utf-8-sig"))
        except Exception:  # noqa: BLE001 - fixtures of other containers
            continue
        for _, doc in docs:  # (an agent file: the document, each of whose calls a record)
            gathered = list(letta_agent_files([("sample", doc)]))
            if gathered and gathered[0][1] is not doc and (
                    "letta" not in found or len(json.dumps(doc)) < len(json.dumps(
                        found["letta"]))):
                found["letta"] = doc
            if is_trajectory(doc) and ("atif" not in found or len(json.dumps(doc)) < len(
                    json.dumps(found["atif"]))):
                found["atif"] = doc  # (an ATIF trajectory: each agent step a record)
        # (a ChatHistory's messages: one record; a trajectory, a transcript, an eval:
        # one a call)
        docs = tau_bench_results(docs)
        for _, doc in promptfoo_evals(cline_histories(claude_code_transcripts(chat_histories(
                agent_trajectories(gemini_cli_sessions(codex_rollouts(docs))))))):
            consider(doc)
    for path in sorted(FIX.rglob("*.yaml")):
        for obj in _cassette_records(path):
            consider(obj)
            consider({k: v for k, v in obj.items() if k != "url"})  # unrouted
    missing = [f.name for f in FORMATS if f.name not in found]
    assert not missing, f"no fixture record for format(s) {missing}: add one"
    return found


def _cassette_records(path: Path) -> Iterator[dict[str, Any]]:
    """A cassette's interactions as the flat records the formats read (request body,
    response body, url) — only those whose bodies are plain JSON."""
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError:
        return
    yield from _har_yaml_records(doc)
    for it in (doc or {}).get("interactions") or []:
        try:
            req = it["request"].get("parsed_body") or json.loads(it["request"]["body"])
            resp = it["response"].get("parsed_body")
            if resp is None:
                body = it["response"]["body"]
                raw = body["string"] if isinstance(body, dict) else body
                if isinstance(raw, bytes) and raw[:2] == b"\x1f\x8b":
                    raw = gzip.decompress(raw)
                resp = json.loads(raw)
        except (KeyError, TypeError, ValueError, OSError):
            continue
        if isinstance(req, dict) and isinstance(resp, dict):
            # (vcrpy writes "uri", go-vcr "url")
            url = it["request"].get("uri") or it["request"].get("url")
            yield {"url": url, "request": req, "response": resp}


def _har_yaml_records(doc: Any) -> Iterator[dict[str, Any]]:
    """A HAR document in YAML (Sourcegraph Cody's Polly.js recordings): each entry whose
    request body was written parsed (``postData.textJSON``) as a flat record, its
    response the text recorded (an SSE stream)."""
    log = doc.get("log") if isinstance(doc, dict) else None
    for entry in (log.get("entries") if isinstance(log, dict) else None) or []:
        try:
            req = entry["request"]["postData"]["textJSON"]
            text = entry["response"]["content"]["text"]
            url = entry["request"]["url"]
        except (KeyError, TypeError):
            continue
        if isinstance(req, dict) and isinstance(text, str):
            yield {"url": url, "request": req, "response": text}


# -- server bodies --------------------------------------------------------------------------
def server_bodies() -> dict[str, tuple[dict[str, str], bytes]]:
    """Hostile request bodies for the collector and the proxy: (headers, body)."""
    js = {"content-type": "application/json"}
    otlp = (FIX / "otel_genai.json").read_bytes()
    bodies: dict[str, tuple[dict[str, str], bytes]] = {
        "gzip-bomb": ({**js, "content-encoding": "gzip"}, bomb("gzip")),
        "deflate-bomb": ({**js, "content-encoding": "deflate"}, deflate_bomb()),
        "br-body": ({**js, "content-encoding": "br"}, b"\x1b\x00\x00\x00garbage"),
        "zstd-body": ({**js, "content-encoding": "zstd"}, b"\x28\xb5\x2f\xfd\x00garbage"),
        "unknown-encoding": ({**js, "content-encoding": "compress"}, b"x"),
        "bad-gzip": ({**js, "content-encoding": "gzip"}, b"\x1f\x8bnot gzip"),
        "truncated-gzip": ({**js, "content-encoding": "gzip"}, gzip.compress(otlp)[:200]),
        "deep-array": (js, b"[" * DEEP + b"]" * DEEP),
        "deep-object": (js, b'{"a": ' * DEEP + b"1" + b"}" * DEEP),
        "nan": (js, b'{"resourceSpans": NaN}'),
        "not-json": (js, b"{not json"),
        "invalid-utf8": (js, b'{"resourceSpans": "\xff\xfe"}'),
        "nul": (js, b'{"resourceSpans": "\x00"}'),
        "empty": (js, b""),
        "protobuf-garbage": ({"content-type": "application/x-protobuf"},
                             b"\xff\xff\xff\xff\x0f" * 10),
        "odd-content-type": ({"content-type": "text/plain"}, otlp),
    }
    for name, raw in NUMBERS.items():
        bodies[name] = (js, _otlp_with(raw).encode())
    for name, value in {"number": b"1", "string": b'"s"', "null": b"null",
                        "list": b"[]"}.items():
        bodies[f"top-level-{name}"] = (js, value)
    return bodies
