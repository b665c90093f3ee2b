"""Inspect AI eval logs (memory_core/importers/inspect_log.py): a model event without
its provider call, one that failed, an older log whose samples hold no events, and the
binary .eval log (a zip archive, deflate or zstd). The real logs are in
tests/fixtures/imports/real (inspectai-*)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memory_core.errors import ImportFormatError
from memory_core.importers import (
    detect_format,
    file_format,
    import_file,
    import_otel_files,
    import_text,
    is_otlp_file,
)
from memory_core.storage.inmemory import InMemoryStorage

ASK = [{"role": "system", "content": "attachment://" + "a" * 32},
       {"role": "user", "content": "What is 2+2?", "source": "input"}]
CALL = {"role": "assistant", "content": "", "source": "generate", "tool_calls": [
    {"id": "toolu_1", "function": "add", "arguments": {"x": 2, "y": 2}, "type": "function"}]}
RESULT = {"role": "tool", "content": "4", "tool_call_id": "toolu_1", "function": "add"}


def log(samples: list[dict[str, Any]]) -> str:
    return json.dumps({"version": 2, "status": "success",
                       "eval": {"task": "t", "model": "anthropic/claude-3-5-haiku"},
                       "plan": {}, "results": {}, "stats": {}, "samples": samples})


def model_event(inp: list[Any], message: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"timestamp": "2025-03-01T10:00:00+00:00", "event": "model",
            "model": "anthropic/claude-3-5-haiku", "input": inp, "tools": [],
            "output": {"model": "claude-3-5-haiku-20241022", "choices": [
                {"message": message, "stop_reason": "tool_calls"}],
                "usage": {"input_tokens": 30, "output_tokens": 9}}, **more}


def test_model_events_without_their_call_are_read_from_inspect_s_messages() -> None:
    events = [model_event(ASK, CALL),
              model_event([*ASK, CALL, RESULT], {"role": "assistant", "content": "4."})]
    text = log([{"id": 1, "epoch": 1, "events": events,
                 "attachments": {"a" * 32: "Use the tools."}}])
    assert detect_format(text) == "openai"
    s = InMemoryStorage()
    report = import_text(s, text)
    assert len(report.runs_created) == 2 and len(report.threads_created) == 1
    msgs = s.memory.get_messages(report.threads_created[0])
    assert [m.role for m in msgs] == ["user", "assistant", "tool", "assistant"]
    assert (msgs[1].tool_calls()[0].name, msgs[1].tool_calls()[0].args) == ("add",
                                                                            {"x": 2, "y": 2})
    assert msgs[2].tool_results()[0].call_id == "toolu_1"
    prompt = s.runs.get(f"{report.runs_created[0]}:prompt")["items"]
    assert prompt[0]["message"]["content"] == "Use the tools."  # (its attachment)
    step = s.runs.get(f"{report.runs_created[0]}:step:0")
    assert (step["response"]["usage"]["input_tokens"], step["model"]["name"]) == (
        30, "claude-3-5-haiku-20241022")
    assert any("read from Inspect's own messages" in k.reason for k in report.skipped)


def test_a_failed_model_event_is_a_failed_run() -> None:
    event = model_event(ASK, CALL, error="RateLimitError: 429 Too Many Requests")
    report = import_text(s := InMemoryStorage(), log([{"id": 1, "events": [event]}]))
    run = s.runs.require_run(report.runs_created[0])
    assert run.status == "failed" and run.error == "RateLimitError: 429 Too Many Requests"


def test_a_sample_without_model_events_is_read_from_its_messages_and_output() -> None:
    sample = {"id": 7, "epoch": 1,
              "messages": [ASK[1], {"role": "assistant", "content": "4"}],
              "output": {"model": "llama3.1", "choices": [
                  {"message": {"role": "assistant", "content": "4"}, "stop_reason": "stop"}],
                  "usage": {"input_tokens": 12, "output_tokens": 1}}}
    s = InMemoryStorage()
    report = import_text(s, log([sample]))
    assert [m.text() for m in s.memory.get_messages(report.threads_created[0])] == [
        "What is 2+2?", "4"]
    assert ("sample 1 (id 7, epoch 1)",
            "no model event: its messages and output are read as one call") in {
        (k.where, k.reason) for k in report.skipped}


def test_a_sample_with_no_model_event_and_no_answer_says_so() -> None:
    """(inspect_ai's log_tool_call_error.json: a sample of tool messages alone.) One
    error naming the sample; beside a sample that holds a call, a note."""
    bare = {"id": 1, "epoch": 4, "messages": [RESULT, RESULT], "output": {"choices": []}}
    with pytest.raises(ImportFormatError) as e:
        import_text(InMemoryStorage(), log([bare]))
    assert str(e.value) == ("sample 1 (id 1, epoch 4): no model event, and no answer of the "
                            "model (its output has no choices, its messages do not end "
                            "with the assistant's): no model call to import")
    good = {"id": 2, "epoch": 1, "events": [model_event(
        ASK, {"role": "assistant", "content": "4"})]}
    report = import_text(InMemoryStorage(), log([bare, good]))
    assert len(report.runs_created) == 1
    assert any(k.where == "sample 1 (id 1, epoch 4)" and "no model event" in k.reason
               for k in report.skipped)

def test_a_current_log_s_pooled_inputs_and_calls_are_put_back() -> None:
    """Inspect (2026) moves a model event's input and its call's messages into the
    sample's events_data pools, referenced as [start, end) ranges."""
    request = {"model": "gpt-4o-mini", "call_refs": [[0, 1]], "call_key": "messages",
               "extra_headers": {"x-irid": "abc"}}
    response = {"id": "c1", "object": "chat.completion", "created": 1767600000,
                "model": "gpt-4o-mini", "choices": [{"index": 0, "finish_reason": "stop",
                                                     "message": {"role": "assistant",
                                                                 "content": "4"}}],
                "usage": {"prompt_tokens": 12, "completion_tokens": 1}}
    event = {"timestamp": "2026-03-01T10:00:00+00:00", "event": "model", "model": "openai/x",
             "input": [], "input_refs": [[0, 1]],
             "call": {"request": {k: v for k, v in request.items()
                                  if k not in ("call_refs", "call_key")},
                      "call_refs": [[0, 1]], "call_key": "messages", "response": response}}
    sample = {"id": 1, "events": [event], "events_data": {
        "messages": [{"role": "user", "content": "What is 2+2?"}],
        "calls": [{"role": "user", "content": "What is 2+2?"}]}}
    s = InMemoryStorage()
    report = import_text(s, log([sample]))
    assert [m.text() for m in s.memory.get_messages(report.threads_created[0])] == [
        "What is 2+2?", "4"]
    assert s.runs.get(f"{report.runs_created[0]}:import")["request_params"] == {}


def test_a_call_inspect_marked_failed_is_a_failed_run() -> None:
    event = model_event(ASK, CALL)
    event["call"] = {"request": {"model": "m", "messages": [{"role": "user", "content": "q"}]},
                     "response": {"error": {"message": "context length exceeded"}},
                     "error": True}
    report = import_text(s := InMemoryStorage(), log([{"id": 1, "events": [event]}]))
    run = s.runs.require_run(report.runs_created[0])
    assert run.status == "failed" and "context length exceeded" in (run.error or "")


def test_inspect_s_own_fields_are_read_in_the_openai_names() -> None:
    """Without the provider's call: a stop reason of Inspect's (max_tokens) is the
    OpenAI finish reason, cached input tokens are counted, a tool's error is its
    result; a Gemini call's system_instruction list is its instructions."""
    failed = {**RESULT, "content": "", "error": {"type": "timeout", "message": "timed out"}}
    event = model_event([*ASK, CALL, failed], {"role": "assistant", "content": "Sorry"})
    event["output"]["choices"][0]["stop_reason"] = "max_tokens"
    event["output"]["usage"]["input_tokens_cache_read"] = 100
    gemini = {"timestamp": "2025-03-01T10:00:05+00:00", "event": "model",
              "model": "google/gemini-2.0-flash", "call": {
                  "request": {"model": "gemini-2.0-flash", "system_instruction": ["Be brief."],
                              "contents": [{"role": "user", "parts": [{"text": "Hi"}]}]},
                  "response": {"candidates": [{"content": {"role": "model", "parts": [
                      {"text": "Hello"}]}, "finish_reason": "STOP"}]}}}
    s = InMemoryStorage()
    report = import_text(s, log([{"id": 1, "events": [event, gemini],
                                  "attachments": {"a" * 32: "Use the tools."}}]))
    first, second = report.runs_created
    step = s.runs.get(f"{first}:step:0")
    assert (step["response"]["finish_reason"], step["response"]["usage"]["input_tokens"]) \
        == ("length", 130)
    tools = [m for t in report.threads_created for m in s.memory.get_messages(t)
             if m.role == "tool"]
    assert tools[0].tool_results()[0].result == "timeout: timed out"
    prompt = s.runs.get(f"{second}:prompt")["items"]
    assert (prompt[0]["lane"], prompt[0]["message"]["content"]) == ("instructions",
                                                                    "Be brief.")


# -- the .eval log: a zip archive ---------------------------------------------------------------
def _sample(sid: int, epoch: int = 1, answer: str = "4") -> dict[str, Any]:
    event = model_event([ASK[1]], {"role": "assistant", "content": answer},
                        tools=[{"name": "add", "description": "Adds.", "parameters": {
                            "type": "object", "properties": {"x": {"type": "integer"}}}}],
                        tool_choice="any", config={"temperature": 0.2, "max_retries": 3,
                                                   "stop_seqs": ["END"]})
    return {"id": sid, "epoch": epoch, "events": [event]}


def _zip(entries: dict[str, bytes], method: int, encrypted: tuple[str, ...] = ()) -> bytes:
    """A zip archive written by hand (Python 3.11's zipfile writes no zstd): each entry
    compressed with ``method`` (0 stored, 8 deflate, 93 zstd); the ``encrypted`` ones
    flagged so (their data is not)."""
    import struct
    import zlib

    import zstandard

    local, central = b"", b""
    for name, raw in entries.items():
        packed = {0: raw, 8: zlib.compress(raw)[2:-4],
                  93: zstandard.ZstdCompressor().compress(raw)}[method]
        crc, key = zlib.crc32(raw), name.encode()
        fields = (20, int(name in encrypted), method, 0, 0, crc, len(packed), len(raw),
                  len(key))
        central += struct.pack("<4s6H3I5H2I", b"PK\x01\x02", 20, *fields, 0, 0, 0, 0, 0,
                               len(local)) + key
        local += struct.pack("<4s5H3I2H", b"PK\x03\x04", *fields, 0) + key + packed
    return local + central + struct.pack("<4s4H2IH", b"PK\x05\x06", 0, 0, len(entries),
                                         len(entries), len(central), len(local), 0)


def _eval_log(samples: dict[str, Any], method: int = 8, encrypted: tuple[str, ...] = ()
              ) -> bytes:
    header = {"version": 2, "status": "success", "eval": {"task": "t", "model": "m"}}
    entries = {"header.json": json.dumps(header).encode()}
    entries.update({name: s if isinstance(s, bytes) else json.dumps(s).encode()
                    for name, s in samples.items()})
    return _zip(entries, method, encrypted)


def test_an_eval_log_is_read_in_inspect_s_order_of_samples(tmp_path: Path) -> None:
    """A .eval log (zip: header.json, samples/<id>_epoch_<n>.json), deflate or zstd (what
    Inspect writes since 2026), imports as the JSON log of the same samples does: the
    samples by epoch, then id as a number; the event's tools, tool choice and the
    generation settings that are request parameters kept."""
    samples = {"samples/10_epoch_1.json": _sample(10, answer="ten"),
               "samples/2_epoch_1.json": _sample(2, answer="two"),
               "samples/1_epoch_2.json": _sample(1, 2, answer="one again")}
    want = import_text(InMemoryStorage(), log([_sample(2, answer="two"),
                                               _sample(10, answer="ten"),
                                               _sample(1, 2, answer="one again")]))
    for method in (0, 8, 93):
        path = tmp_path / f"log-{method}.eval"
        path.write_bytes(_eval_log(samples, method))
        assert file_format(path) == "openai" and not is_otlp_file(path)
        s = InMemoryStorage()
        report = import_file(s, path)
        assert [s.memory.get_messages(t)[-1].text() for t in report.threads_created] == [
            "two", "ten", "one again"], method
        assert report.messages_stored == want.messages_stored
        step = s.runs.get(f"{report.runs_created[0]}:step:0")
        assert [t["name"] for t in step["tools"]] == ["add"]
        params = s.runs.get(f"{report.runs_created[0]}:import")["request_params"]
        assert params == {"temperature": 0.2, "stop": ["END"], "tool_choice": "required"}


def test_one_unreadable_sample_of_an_eval_log_is_a_note(tmp_path: Path) -> None:
    path = tmp_path / "damaged.eval"
    path.write_bytes(_eval_log({"samples/1_epoch_1.json": _sample(1),
                                "samples/2_epoch_1.json": b'{"id": 2, "events": [',
                                "samples/3_epoch_1.json": b"\xff\xfe not text"}))
    s = InMemoryStorage()
    report = import_file(s, path)
    assert len(report.runs_created) == 1
    notes = {k.where: k.reason for k in report.skipped}
    assert notes["sample 2 (id 2, epoch 1)"].startswith("not imported: sample invalid JSON")
    assert "not UTF-8 text" in notes["sample 3 (id 3, epoch 1)"]
    # a damaged entry (its CRC does not match) is a note too
    raw = bytearray(_eval_log({"samples/1_epoch_1.json": _sample(1),
                               "samples/2_epoch_1.json": _sample(2)}, method=0))
    at = raw.rindex(b'"4"')  # sample 2's answer, stored as it is: now "5", its CRC wrong
    raw[at + 1] = ord("5")
    path.write_bytes(bytes(raw))
    report = import_file(s2 := InMemoryStorage(), path)
    assert len(report.runs_created) == 1 and len(s2.runs.list_runs()) == 1
    assert any("cannot be read from the archive" in k.reason for k in report.skipped)
    # so is an encrypted one, deflate or zstd
    for method in (8, 93):
        path.write_bytes(_eval_log({"samples/1_epoch_1.json": _sample(1),
                                    "samples/2_epoch_1.json": _sample(2)}, method,
                                   encrypted=("samples/1_epoch_1.json",)))
        report = import_file(InMemoryStorage(), path)
        assert len(report.runs_created) == 1, method
        assert [k.where for k in report.skipped if "cannot be read" in k.reason] == [
            "sample 1 (id 1, epoch 1)"]


def test_a_zip_that_is_no_eval_log_is_refused_clearly(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    s = InMemoryStorage()
    other = tmp_path / "photos.zip"
    other.write_bytes(_zip({"a.json": b"{}"}, 8))
    with pytest.raises(ImportFormatError, match="no Inspect .eval log"):
        import_file(s, other)
    empty = tmp_path / "header-only.eval"
    empty.write_bytes(_eval_log({}))
    with pytest.raises(ImportFormatError, match="holds no samples"):
        import_file(s, empty)
    # its entries decompress within MEMWB_MAX_DECOMPRESSED, all of them together
    monkeypatch.setenv("MEMWB_MAX_DECOMPRESSED", str(1 << 20))
    big = tmp_path / "big.eval"
    padded = {**_sample(1), "metadata": {"pad": " " * 600_000}}
    big.write_bytes(_eval_log({"samples/1_epoch_1.json": padded,
                               "samples/2_epoch_1.json": padded}, method=93))
    with pytest.raises(ImportFormatError, match="larger than 1048576"):
        import_file(s, big)
    with pytest.raises(ImportFormatError, match="a zip archive, not an OTLP export"):
        import_otel_files(s, [big, big])
    assert not s.memory.list_threads() and not s.runs.list_runs()


def test_a_call_is_timed_by_its_event_not_by_its_response_s_whole_second() -> None:
    """Trial 9: an OpenAI response's ``created`` is a whole second of the server's clock,
    and a reasoning model's answer came 26 s after its call began; Inspect times each
    model event itself (``timestamp``, ``completed``), to the microsecond."""
    def event(start: str, done: str, created: int) -> dict[str, Any]:
        return {"timestamp": start, "completed": done, "event": "model", "model": "openai/m",
                "call": {"request": {"model": "m", "messages": [
                    {"role": "user", "content": f"Question {created}?"}]},
                    "response": {"id": "r", "object": "chat.completion", "created": created,
                                 "model": "m", "choices": [{"index": 0, "message": {
                                     "role": "assistant", "content": "Yes."},
                                     "finish_reason": "stop"}]}}}
    s = InMemoryStorage()
    report = import_text(s, log([
        {"id": 1, "events": [event("2025-12-13T23:15:46.172815+00:00",
                                   "2025-12-13T23:16:12.500000+00:00", 1765667772)]},
        {"id": 2, "events": [event("2025-12-13T23:15:45.903479+00:00",
                                   "2025-12-13T23:15:49.100000+00:00", 1765667749)]}]))
    runs = [s.runs.require_run(r) for r in report.runs_created]
    assert [(r.started_at.isoformat(), r.finished_at and r.finished_at.isoformat())
            for r in runs] == [
        ("2025-12-13T23:15:46.172815+00:00", "2025-12-13T23:16:12.500000+00:00"),
        ("2025-12-13T23:15:45.903479+00:00", "2025-12-13T23:15:49.100000+00:00")]
    assert not [k for k in report.skipped if "same second" in k.reason]


def test_reasoning_in_inspect_s_own_messages_is_left_out_and_noted() -> None:
    thought = {"type": "reasoning", "reasoning": "Two and two make four.", "signature": "s"}
    answered = {"role": "assistant", "content": [thought, {"type": "text", "text": "4."}]}
    event = model_event([*ASK, {"role": "assistant", "content": [
        thought, {"type": "text", "text": "Let me add."}]}, ASK[1]], answered)
    s = InMemoryStorage()
    report = import_text(s, log([{"id": 1, "epoch": 1, "events": [event],
                                  "attachments": {"a" * 32: "Use the tools."}}]))
    msgs = s.memory.get_messages(report.threads_created[0])
    assert [m.text() for m in msgs] == ["What is 2+2?", "Let me add.", "What is 2+2?", "4."]
    assert ("sample 1 (id 1, epoch 1): model event 1",
            "2 part(s) of the model's reasoning not imported") in {
        (k.where, k.reason) for k in report.skipped}


def test_hostile_eval_archives_are_read_or_noted_never_a_crash(tmp_path: Path) -> None:
    """Review: a name written twice is two samples (the second copy was read twice); an
    epoch of thousands of digits is no ValueError; a bzip2 entry (which zipfile would
    unpack whole before the bound) is noted, not read; a bad event time is named as
    the log names it."""
    import io
    import zipfile

    path = tmp_path / "hostile.eval"
    buffer = io.BytesIO(_zip({"header.json": b"{}", "samples/1_epoch_1.json": json.dumps(
        _sample(1, answer="first copy")).encode()}, 8))
    with zipfile.ZipFile(buffer, "a") as z, pytest.warns(UserWarning, match="Duplicate"):
        z.writestr("samples/1_epoch_1.json", json.dumps(_sample(1, answer="second copy")))
    path.write_bytes(buffer.getvalue())
    s = InMemoryStorage()
    report = import_file(s, path)
    assert sorted(s.memory.get_messages(t)[-1].text() or "" for t in report.threads_created
                  ) == ["first copy", "second copy"]
    huge = "9" * 5000
    path.write_bytes(_eval_log({"samples/1_epoch_1.json": _sample(1),
                                f"samples/2_epoch_{huge}.json": _sample(2, answer="late")}))
    report = import_file(s2 := InMemoryStorage(), path)
    assert [s2.memory.get_messages(t)[-1].text() for t in report.threads_created] == [
        "4", "late"]
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("header.json", "{}")
        z.writestr("samples/1_epoch_1.json", json.dumps(_sample(1)), zipfile.ZIP_BZIP2)
        z.writestr("samples/2_epoch_1.json", json.dumps(_sample(2)), zipfile.ZIP_DEFLATED)
    report = import_file(InMemoryStorage(), path)
    assert len(report.runs_created) == 1
    assert [k.reason for k in report.skipped if k.where.startswith("sample 1")] == [
        "not imported: cannot be read from the archive: compressed with zip method 12, "
        "which Inspect does not write (it writes deflate or zstd)"]
    bad = _sample(1)
    bad["events"][0]["timestamp"] = "yesterday"
    path.write_bytes(_eval_log({"samples/1_epoch_1.json": bad,
                                "samples/2_epoch_1.json": _sample(2)}))
    report = import_file(InMemoryStorage(), path)
    assert ("not imported: timestamp 'yesterday' is not an ISO 8601 time"
            in [k.reason for k in report.skipped])


def test_a_flat_record_s_own_times_are_read_as_text_or_unix_seconds() -> None:
    """Review: ``started_at``/``finished_at`` are record keys now (never parameters): a
    number is unix seconds, not dropped."""
    line = {"messages": [{"role": "user", "content": "hi"}], "started_at": 1767268800,
            "finished_at": "2026-01-01T12:00:03+00:00",
            "response": {"created": 1767268900, "choices": [
                {"message": {"role": "assistant", "content": "hello"}}]}}
    s = InMemoryStorage()
    report = import_text(s, json.dumps(line))
    run = s.runs.require_run(report.runs_created[0])
    assert (run.started_at.isoformat(), run.finished_at and run.finished_at.isoformat()) == (
        "2026-01-01T12:00:00+00:00", "2026-01-01T12:00:03+00:00")
    assert s.runs.get(f"{report.runs_created[0]}:import")["request_params"] == {}
    with pytest.raises(ImportFormatError, match="started_at 'soon' is not an ISO 8601 time"):
        import_text(InMemoryStorage(), json.dumps({**line, "started_at": "soon"}))
    # a clock's count from its start (perf_counter) is no time of a recording
    with pytest.raises(ImportFormatError, match="started_at 12345.6 is no time of a "
                                                "recording"):
        import_text(InMemoryStorage(), json.dumps({**line, "started_at": 12345.6}))
    # an end before the start (two clocks) is taken as the start: a run never ends first
    report = import_text(s2 := InMemoryStorage(), json.dumps(
        {**line, "finished_at": "2026-01-01T11:59:00+00:00"}))
    run = s2.runs.require_run(report.runs_created[0])
    assert run.finished_at == run.started_at
