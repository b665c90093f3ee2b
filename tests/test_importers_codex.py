"""OpenAI Codex CLI rollouts (formats/codex.py): the real files are in the corpus
(tests/test_importers_real.py); here what a rollout of a newer Codex holds — usage
counted after each call, calls with tools run in parallel, a compaction — and what is
wrong in one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memory_core.errors import ImportFormatError
from memory_core.importers import import_file, import_text
from memory_core.storage.inmemory import InMemoryStorage


def _line(ts: int, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": f"2026-01-02T03:04:{ts:02d}.000Z", "type": kind, "payload": payload}


def _item(ts: int, **item: Any) -> dict[str, Any]:
    return _line(ts, "response_item", item)


def _user(ts: int, text: str) -> dict[str, Any]:
    return _item(ts, type="message", role="user",
                 content=[{"type": "input_text", "text": text}])


def _said(ts: int, text: str) -> dict[str, Any]:
    return _item(ts, type="message", role="assistant",
                 content=[{"type": "output_text", "text": text}])


def _call(ts: int, cid: str, cmd: str) -> dict[str, Any]:
    return _item(ts, type="function_call", name="shell", call_id=cid,
                 arguments=json.dumps({"command": ["bash", "-lc", cmd]}))


def _result(ts: int, cid: str, out: str) -> dict[str, Any]:
    return _item(ts, type="function_call_output", call_id=cid, output=out)


def _count(ts: int, inp: int, out: int, total_in: int, *, cached: int = 0,
           reasoning: int = 0) -> dict[str, Any]:
    last = {"input_tokens": inp, "cached_input_tokens": cached, "output_tokens": out,
            "reasoning_output_tokens": reasoning, "total_tokens": inp + out}
    return _line(ts, "event_msg", {"type": "token_count", "info": {
        "total_token_usage": {**last, "input_tokens": total_in}, "last_token_usage": last,
        "model_context_window": 272000}, "rate_limits": None})


META = _line(0, "session_meta", {"id": "0199-sess", "timestamp": "2026-01-02T03:04:00Z",
                                 "cwd": "/w", "originator": "codex_cli_rs",
                                 "cli_version": "0.60.0", "model_provider": "openai",
                                 "base_instructions": {"text": "You are Codex."}})
TURN = _line(1, "turn_context", {"cwd": "/w", "approval_policy": "never", "model": "gpt-5-codex",
                                 "effort": "high", "summary": "auto",
                                 "sandbox_policy": {"type": "read-only"}})


def _text(lines: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(x) + "\n" for x in lines)


def _prompt(s: InMemoryStorage, run: str) -> list[tuple[str, str]]:
    def text(content: Any) -> str:
        return content if isinstance(content, str) else "".join(
            str(p.get("text", p.get("result", ""))) for p in content)
    return [(i["message"]["role"], text(i["message"]["content"]))
            for i in s.runs.get(f"{run}:prompt")["items"]]


def _reasons(report: Any) -> list[str]:
    return [f"{k.where}: {k.reason}" for k in report.skipped]


def test_each_call_bounded_by_its_token_count_is_a_run() -> None:
    """Two calls of one turn: the first runs two commands in parallel (their outputs
    recorded before its token_count: they are the next call's input, not a call's
    end), the second answers. Each run's prompt is the items before it, with the
    session's base instructions; its usage the token_count after it; its model and
    effort the turn's; its tools unknown."""
    lines = [META, TURN, _user(2, "List the files."),
             _item(3, type="reasoning", summary=[], encrypted_content="xyz"),
             _call(4, "c1", "ls"), _call(4, "c2", "pwd"), _result(5, "c1", "a.txt"),
             _result(5, "c2", "/w"), _count(6, 900, 40, 900, cached=100, reasoning=20),
             _count(6, 900, 40, 900, cached=100, reasoning=20),  # (repeated: no call)
             _said(8, "There is a.txt."), _count(9, 1000, 8, 1900)]
    s = InMemoryStorage()
    report = import_text(s, _text(lines), name="rollout.jsonl")
    assert report.threads_created == ["0199-sess"]
    first, second = report.runs_created
    assert _prompt(s, first) == [("system", "You are Codex."), ("user", "List the files.")]
    step = s.runs.get(f"{first}:step:0")
    assert [c["name"] for c in step["response"]["tool_calls"]] == ["shell", "shell"]
    assert step["usage_known"] and step["response"]["usage"]["input_tokens"] == 900
    assert step["response"]["usage"]["output_tokens"] == 40
    assert step["model"]["name"] == "gpt-5-codex"
    assert _prompt(s, second)[-2:] == [("tool", "a.txt"), ("tool", "/w")]
    last = s.runs.get(f"{second}:step:0")
    assert last["response"]["text"] == "There is a.txt."
    assert last["response"]["usage"]["input_tokens"] == 1000
    assert "tools" in s.runs.get(f"{second}:memctx")["unknown_fields"]
    record = s.runs.get(f"{first}:import")
    assert record["request_params"] == {"reasoning": {"effort": "high", "summary": "auto"}}
    assert any("its input rebuilt from the rollout's response items" in n
               for n in record["notes"])
    assert any("its 1 earlier reasoning item(s), sent back encrypted, not imported" in r
               for r in _reasons(report))
    assert not report.undated


def test_a_compaction_replaces_the_history_the_next_call_sends() -> None:
    """After a ``compacted`` line the calls send the user's earlier messages and the
    summary (as Codex builds the compacted history), not what came before; its
    replacement history, when recorded, is sent instead. A token_count with no output
    of its own (the compaction's call) is noted."""
    lines = [META, TURN, _user(2, "Fix the bug."), _said(3, "Done."), _count(4, 10, 2, 10),
             _line(5, "compacted", {"message": "The bug was fixed."}), _count(6, 30, 9, 40),
             _user(7, "Thanks. Now the docs."), _said(8, "Docs updated."),
             _count(9, 20, 3, 60)]
    s = InMemoryStorage()
    report = import_text(s, _text(lines), name="rollout.jsonl")
    _, after = report.runs_created
    assert _prompt(s, after) == [("system", "You are Codex."), ("user", "Fix the bug."),
                                 ("user", "The bug was fixed."),
                                 ("user", "Thanks. Now the docs.")]
    reasons = _reasons(report)
    assert any("line 6: the history compacted into a summary" in r for r in reasons)
    assert any("line 7: a token_count for a call whose output the rollout does not hold"
               in r for r in reasons)
    replaced = [*lines[:5], _line(5, "compacted", {"message": "s", "replacement_history": [
        {"type": "message", "role": "user", "content": [{"type": "input_text",
                                                          "text": "Summary: fixed."}]}]}),
        *lines[7:]]
    s = InMemoryStorage()
    report = import_text(s, _text(replaced), name="rollout.jsonl")
    assert _prompt(s, report.runs_created[1])[1:] == [("user", "Summary: fixed."),
                                                      ("user", "Thanks. Now the docs.")]


def test_a_line_cut_short_and_an_output_naming_no_call_are_noted() -> None:
    """A log cut off while a line was written: the line is noted, the rest imports; a
    tool output whose call is not in the rollout is kept, its tool unknown, noted."""
    text = _text([META, TURN, _user(2, "Go."), _said(3, "Going."), _count(4, 5, 1, 5),
                  _result(5, "ghost", "orphan output"), _said(6, "Done."),
                  _count(7, 9, 1, 14)])
    cut = text + '{"timestamp":"2026-01-02T03:04:08.000Z","type":"response_item","pay'
    s = InMemoryStorage()
    report = import_text(s, cut, name="rollout.jsonl")
    assert len(report.runs_created) == 2
    reasons = _reasons(report)
    assert any(r.startswith("line 9: not imported: invalid JSON") for r in reasons)
    assert any("'ghost'" in r for r in reasons)
    assert ("tool", "orphan output") in _prompt(s, report.runs_created[1])


def test_a_rollout_of_usage_only_is_refused_saying_so() -> None:
    """ccusage's fixtures keep a rollout's token_count events alone: no call's input or
    output, refused with a sentence saying so (not the generic one)."""
    text = _text([TURN, _count(2, 10, 2, 10), _count(3, 20, 4, 30)])
    with pytest.raises(ImportFormatError, match="a Codex CLI rollout holding no response "
                                                "items, only 2 token_count event"):
        import_text(InMemoryStorage(), text, name="rollout.jsonl")


def test_without_token_counts_a_call_ends_at_a_tool_output() -> None:
    """An older rollout counts no usage: a call ends at the first tool output or user
    message after its output (noted), the user's instructions session_meta kept are
    the instructions (noted)."""
    meta = _line(0, "session_meta", {"id": "old", "instructions": "Use tabs."})
    lines = [meta, _user(2, "Go."), _call(3, "c1", "ls"), _result(4, "c1", "x"),
             _said(5, "Done.")]
    s = InMemoryStorage()
    report = import_text(s, _text(lines), name="rollout.jsonl")
    first, second = report.runs_created
    assert _prompt(s, first) == [("system", "Use tabs."), ("user", "Go.")]
    assert s.runs.get(f"{second}:step:0")["usage_known"] is False
    assert any("the rollout counts no usage (no token_count events)" in r
               for r in _reasons(report))


def test_ccusages_usage_only_rollout_is_refused() -> None:
    """ccusage's own fixture (ryoppippi/ccusage @ 5816e640e882,
    apps/ccusage/test/fixtures/codex/sessions/project-alpha/session-alpha.jsonl, MIT):
    a turn_context and two token_count events, refused saying what it holds."""
    path = Path(__file__).parent / "fixtures" / "imports" / "ccusage-codex-session-alpha.jsonl"
    with pytest.raises(ImportFormatError, match="no response items, only 2 token_count"):
        import_file(InMemoryStorage(), path)


def test_a_tool_output_of_content_parts_is_its_text_an_image_a_placeholder() -> None:
    """Codex (and the Responses API) take a call's output as a list of content parts:
    its texts are the result, an image a placeholder (never its base64), noted."""
    image = {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="}
    lines = [META, TURN, _user(2, "Look."), _call(3, "c1", "shot"),
             _item(4, type="function_call_output", call_id="c1",
                   output=[{"type": "input_text", "text": "Captured: "},
                           {"type": "input_text", "text": "a.png"}, image]),
             _count(5, 5, 1, 5), _said(6, "A cat."), _count(7, 9, 1, 14)]
    s = InMemoryStorage()
    report = import_text(s, _text(lines), name="rollout.jsonl")
    result = s.memory.get_messages(report.threads_created[0])[2]
    assert result.tool_results()[0].result == "Captured: a.png"
    assert [a["type"] for a in result.metadata["attachments"]] == ["input_image"]
    assert any("its input_image kept as a placeholder" in r for r in _reasons(report))


@pytest.mark.slow
def test_a_rollout_survives_wrong_types_in_every_line() -> None:
    """Each line of a rollout with a value of the wrong type at any depth: the file
    imports (the line noted) or is refused in one line, never a crash."""
    from memory_core.errors import MemoryCoreError
    from tests.hostile.corpus import wrong_types

    lines = [META, TURN, _user(2, "Go."), _call(3, "c1", "ls"), _result(4, "c1", "x"),
             _count(5, 5, 1, 5), _said(6, "Done."), _count(7, 9, 1, 14),
             _line(8, "compacted", {"message": "s", "replacement_history": [
                 {"type": "message", "role": "user", "content": "Go."}]})]
    for n, line in enumerate(lines):
        for where, bad in wrong_types(line, limit=200):
            text = _text([*lines[:n], bad, *lines[n + 1:]])
            try:
                import_text(InMemoryStorage(), text, name="rollout.jsonl")
            except MemoryCoreError as e:
                assert "\n" not in str(e), (n, where, e)
            except Exception as e:  # noqa: BLE001 - the point: name the case that broke
                raise AssertionError(f"line {n + 1} {where}: {type(e).__name__}: {e}") from e


def test_an_older_rollout_of_bare_items_is_read_alike() -> None:
    """Codex before mid-2025 wrote a first line ``{"id", "timestamp", "instructions",
    "git"}``, then each Responses API item bare, with ``{"record_type": "state"}``
    lines between: read as the wrapped lines are (no times: undated)."""
    lines = [{"id": "old-1", "timestamp": "2025-05-01T10:00:00Z", "instructions": None,
              "git": {"branch": "main"}}, {"record_type": "state"},
             {"type": "message", "role": "user",
              "content": [{"type": "input_text", "text": "Make a README."}]},
             {"record_type": "state"},
             {"type": "function_call", "name": "shell", "call_id": "c1",
              "arguments": json.dumps({"command": ["touch", "README.md"]})},
             {"type": "function_call_output", "call_id": "c1", "output": "ok"},
             {"type": "message", "role": "assistant",
              "content": [{"type": "output_text", "text": "Created."}]}]
    s = InMemoryStorage()
    report = import_text(s, _text(lines), name="rollout.jsonl")
    assert report.threads_created == ["old-1"] and len(report.runs_created) == 2
    assert _prompt(s, report.runs_created[1])[-1] == ("tool", "ok")
    assert s.runs.get(f"{report.runs_created[1]}:step:0")["response"]["text"] == "Created."
