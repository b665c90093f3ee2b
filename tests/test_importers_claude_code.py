"""Claude Code session transcripts (``~/.claude/projects/<dir>/<session>.jsonl``): each
assistant API call a run, its request rebuilt by following ``parentUuid`` back; broken
lines noted, the rest imported."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memory_core.errors import ImportFormatError
from memory_core.importers import import_text
from memory_core.storage.inmemory import InMemoryStorage


def _line(uuid: str, parent: str | None, kind: str, message: dict[str, Any],
          at: str, **more: Any) -> dict[str, Any]:
    return {"parentUuid": parent, "isSidechain": False, "sessionId": "s1", "type": kind,
            "uuid": uuid, "timestamp": at, "message": message, **more}


def _answer(mid: str, blocks: list[Any], out: int, stop: str | None) -> dict[str, Any]:
    return {"id": mid, "type": "message", "role": "assistant", "model": "claude-x",
            "content": blocks, "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": 3, "cache_creation_input_tokens": 10,
                      "cache_read_input_tokens": 20, "output_tokens": out}}


def _session() -> list[dict[str, Any]]:
    """A prompt, a call written as two lines (text, then a tool call), its result, a
    second call."""
    call = {"type": "tool_use", "id": "t1", "name": "Read", "input": {"path": "a"}}
    return [
        {"type": "summary", "summary": "Reading a", "leafUuid": "u5"},
        _line("u1", None, "user", {"role": "user", "content": "Read a"},
              "2025-01-01T00:00:00Z"),
        _line("u2", "u1", "assistant", _answer("m1", [{"type": "text", "text": "Sure."}],
                                               2, None), "2025-01-01T00:00:01Z",
              requestId="r1"),
        _line("u3", "u2", "assistant", _answer("m1", [call], 40, "tool_use"),
              "2025-01-01T00:00:02Z", requestId="r1"),
        _line("u4", "u3", "user", {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "hello"}]},
              "2025-01-01T00:00:03Z", toolUseResult={"stdout": "hello"}),
        _line("u5", "u4", "assistant", _answer("m2", [{"type": "text", "text": "It says "
                                                       "hello."}], 5, "end_turn"),
              "2025-01-01T00:00:04Z", requestId="r2"),
    ]


def _text(lines: list[Any]) -> str:
    return "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines)


def _import(lines: list[Any]) -> tuple[InMemoryStorage, Any]:
    s = InMemoryStorage()
    return s, import_text(s, _text(lines), name="session.jsonl")


def _messages(s: InMemoryStorage, report: Any) -> list[list[tuple[str, str]]]:
    return [[(m.role, m.text() if m.role != "tool" else str(m.tool_results()[0].result))
             for m in s.memory.get_messages(t)]
            for t in report.threads_created]


def test_each_call_is_one_run_its_lines_joined_and_its_request_rebuilt() -> None:
    s, report = _import(_session())
    assert len(report.runs_created) == 2
    first = s.runs.get(f"{report.runs_created[0]}:step:0")
    assert first["response"]["usage"]["output_tokens"] == 40  # the last line's
    assert first["response"]["usage"]["input_tokens"] == 33  # cache tokens added
    assert first["response"]["finish_reason"] == "tool_use"
    assert _messages(s, report) == [[("user", "Read a"), ("assistant", "Sure."),
                                     ("tool", "hello"), ("assistant", "It says hello.")]]
    memctx = s.runs.get(f"{report.runs_created[1]}:memctx")
    assert "tools" in memctx["unknown_fields"]
    reasons = [k.reason for k in report.skipped]
    assert any("rebuilt from the session transcript" in r and "system prompt" in r
               for r in reasons), reasons
    assert any("not imported: summary" in r for r in reasons), reasons
    assert any("toolUseResult" in r for r in reasons), reasons
    assert s.runs.require_run(report.runs_created[0]).started_at.second == 1


def test_a_line_cut_short_is_noted_and_the_rest_imports() -> None:
    text = _text(_session())
    lines = text.splitlines()
    lines[4] = lines[4][:40]  # the tool result's line, cut while written
    s = InMemoryStorage()
    report = import_text(s, "\n".join(lines) + "\n", name="session.jsonl")
    assert len(report.runs_created) == 1  # the first call
    assert any(k.where == "line 5" for k in report.skipped), report.skipped
    # the second call's history stops at the line that cannot be read: said
    assert any(k.where == "line 6" and "names no line of the file" in k.reason
               for k in report.skipped), report.skipped


def test_a_parent_naming_no_line_is_noted() -> None:
    lines = _session()
    lines[4]["parentUuid"] = "gone"
    s, report = _import(lines)
    assert len(report.runs_created) == 1  # the second sent a result of no call it knows
    assert any(k.where == "line 6" and "'gone' names no line of the file" in k.reason
               for k in report.skipped), report.skipped


def test_a_call_s_lines_out_of_order_are_joined_by_their_time() -> None:
    lines = _session()
    lines[2], lines[3] = lines[3], lines[2]
    s, report = _import(lines)
    assert len(report.runs_created) == 2
    first = s.runs.get(f"{report.runs_created[0]}:step:0")
    assert first["response"]["usage"]["output_tokens"] == 40
    assert any("out of order in the file" in k.reason for k in report.skipped)
    assert _messages(s, report)[0][1] == ("assistant", "Sure.")


def test_a_sidechain_and_a_compacted_conversation_are_threads_of_their_own() -> None:
    lines = _session()
    side = [_line("v1", None, "user", {"role": "user", "content": "Search"},
                  "2025-01-01T00:00:05Z", isSidechain=True),
            _line("v2", "v1", "assistant", _answer("m3", [{"type": "text", "text": "None"}],
                                                   1, "end_turn"),
                  "2025-01-01T00:00:06Z", isSidechain=True)]
    compact = [{"type": "system", "subtype": "compact_boundary", "uuid": "w0",
                "parentUuid": None, "logicalParentUuid": "u5", "sessionId": "s1",
                "content": "Conversation compacted"},
               _line("w1", "w0", "user", {"role": "user", "content": "Summary: read a"},
                     "2025-01-01T00:00:07Z", isCompactSummary=True),
               _line("w2", "w1", "assistant", _answer("m4", [{"type": "text",
                                                             "text": "Go on."}],
                                                      1, "end_turn"),
                     "2025-01-01T00:00:08Z")]
    s, report = _import(lines + side + compact)
    assert len(report.runs_created) == 4 and len(report.threads_created) == 3
    reasons = [k.reason for k in report.skipped]
    assert any("isSidechain" in r for r in reasons)
    assert any("compacted" in r for r in reasons)
    assert any("compact_boundary" in r for r in reasons)


def test_usage_only_lines_are_refused_saying_so() -> None:
    line = {"timestamp": "2026-01-09T10:00:00.000Z", "sessionId": "a", "requestId": "r",
            "message": {"role": "assistant", "id": "m", "model": "claude-x",
                        "usage": {"input_tokens": 1, "output_tokens": 2}}}
    with pytest.raises(ImportFormatError) as e:
        _import([line, line])
    assert "usage only" in str(e.value) and "nothing sent or answered" in str(e.value)


def test_another_model_s_transcript_reads_alike_with_no_claude_advice() -> None:
    lines = _session()
    for obj in lines[2:]:
        if obj["type"] == "assistant":
            obj["message"]["model"] = "glm-4.7"
    s, report = _import(lines)
    assert s.runs.get(f"{report.runs_created[0]}:step:0")["model"]["name"] == "glm-4.7"
    assert not [k for k in report.skipped if "proxy" in k.reason or "claude" in k.reason]


def test_a_transcript_starting_with_its_summary_is_read() -> None:
    s, report = _import(_session()[:1] + _session()[1:3])
    assert len(report.runs_created) == 1
