"""Issue 13.3: a conversation recorded in several imports (exported in parts, or captured
one exchange at a time) is one thread — threads earlier imports stored are continued,
never duplicated, and never confused with threads agents wrote."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memory_core.errors import InvalidInputError
from memory_core.importers import import_file
from memory_core.journal import load_run
from memory_core.lifecycle.erasure import erase_thread
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.storage.sqlite import SQLiteStorage

SYSTEM = {"role": "system", "content": "You plan trips."}
TURNS = [("I fly to Lisbon on May 3.", "Noted: Lisbon, May 3."),
         ("My budget is 900 euros.", "Budget noted: 900 euros."),
         ("Which date do I fly?", "You fly on May 3."),
         ("And my budget?", "900 euros.")]


def _line(upto: int, *, system: dict[str, str] = SYSTEM, extra: dict[str, Any] | None = None,
          answer: str | None = None) -> str:
    msgs: list[dict[str, str]] = [system]
    for q, a in TURNS[:upto]:
        msgs += [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
    q, a = TURNS[upto]
    msgs.append({"role": "user", "content": q})
    reply = {"choices": [{"message": {"role": "assistant", "content": answer or a}}]}
    return json.dumps({"messages": msgs, "response": reply, **(extra or {})})


def _file(tmp_path: Path, name: str, lines: list[str]) -> Path:
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return p


def _texts(s: Any, tid: str) -> list[str]:
    return [f"{m.role}:{m.text()}" for m in s.memory.get_messages(tid)]


def _all_threads(s: Any) -> list[str]:
    return sorted(t.id for t in s.memory.list_threads())


def test_a_conversation_exported_in_two_files_is_one_thread(tmp_path: Path) -> None:
    s = InMemoryStorage()
    first = import_file(s, _file(tmp_path, "a.jsonl", [_line(0), _line(1)]))
    second = import_file(s, _file(tmp_path, "b.jsonl", [_line(2), _line(3)]))
    (tid,) = first.threads_created
    assert second.threads_created == [] and second.threads_extended == [tid]
    assert _all_threads(s) == [tid]
    # the second file stored only what was new: each message once
    assert first.messages_stored == 4 and second.messages_stored == 4
    assert _texts(s, tid) == [f"{r}:{t}" for q, a in TURNS for r, t in
                              (("user", q), ("assistant", a))]
    # the later runs' history points at the messages the first file stored
    data = load_run(s, second.runs_created[-1])
    assert data.memctx is not None
    assert [r.seq for r in data.memctx.recent] == list(range(6))
    assert data.run.thread_id == tid
    stored = s.memory.get_messages(tid)
    assert {m.run_id for m in stored[:4]} == set(first.runs_created)
    assert {m.run_id for m in stored[4:]} == set(second.runs_created)
    # importing either file again changes nothing
    before = [(m.seq, m.text()) for m in s.memory.get_messages(tid)]
    assert import_file(s, tmp_path / "b.jsonl").already_imported
    assert import_file(s, tmp_path / "a.jsonl").already_imported
    assert [(m.seq, m.text()) for m in s.memory.get_messages(tid)] == before


def test_the_same_request_in_another_file_stores_nothing_new(tmp_path: Path) -> None:
    s = InMemoryStorage()
    first = import_file(s, _file(tmp_path, "a.jsonl", [_line(0), _line(1)]))
    again = import_file(s, _file(tmp_path, "retry.jsonl", [_line(1)]))
    assert again.messages_stored == 0 and again.threads_extended == first.threads_created
    assert len(again.runs_created) == 1 and _all_threads(s) == first.threads_created


def test_a_branch_another_prompt_or_resource_starts_a_thread(tmp_path: Path) -> None:
    s = InMemoryStorage()
    first = import_file(s, _file(tmp_path, "a.jsonl", [_line(0), _line(1)]))
    # the same first question answered differently: shares only part of the thread
    branch = import_file(s, _file(tmp_path, "branch.jsonl", [_line(0, answer="Lisbon!")]))
    other_prompt = import_file(s, _file(tmp_path, "p.jsonl", [
        _line(2, system={"role": "system", "content": "You are terse."})]))
    other_user = import_file(s, _file(tmp_path, "u.jsonl", [_line(2, extra={"user": "bo"})]))
    for report in (branch, other_prompt, other_user):
        assert report.threads_extended == [] and len(report.threads_created) == 1
    assert len(_all_threads(s)) == 4
    assert len(s.memory.get_messages(first.threads_created[0])) == 4  # left as it was


def test_a_keyed_conversation_continues_across_files(tmp_path: Path) -> None:
    s = InMemoryStorage()
    key = {"thread_id": "trip-7"}
    first = import_file(s, _file(tmp_path, "a.jsonl", [_line(0, extra=key)]))
    second = import_file(s, _file(tmp_path, "b.jsonl", [_line(1, extra=key),
                                                        _line(2, extra=key)]))
    assert first.threads_created == ["trip-7"] and second.threads_extended == ["trip-7"]
    assert len(s.memory.get_messages("trip-7")) == 6 and _all_threads(s) == ["trip-7"]
    # a thread an agent wrote is never continued by an import: the key still collides
    t = InMemoryStorage()
    t.memory.create_thread("trip-7")
    with pytest.raises(InvalidInputError, match="thread 'trip-7' already exists"):
        import_file(t, tmp_path / "b.jsonl")


def test_a_thread_agents_wrote_is_never_extended(tmp_path: Path) -> None:
    s = InMemoryStorage()
    from memory_core.types import AppendRow, Message

    s.memory.create_thread("live")
    s.memory.append_messages("live", [AppendRow(message=Message(role="user", content=q))
                                      for q, _ in TURNS[:1]])
    report = import_file(s, _file(tmp_path, "a.jsonl", [_line(0)]))
    assert report.threads_extended == [] and len(s.memory.get_messages("live")) == 1


def test_an_erased_thread_is_not_found_again(tmp_path: Path) -> None:
    s = InMemoryStorage()
    first = import_file(s, _file(tmp_path, "a.jsonl", [_line(0), _line(1)]))
    erase_thread(s, first.threads_created[0])
    second = import_file(s, _file(tmp_path, "b.jsonl", [_line(2)]))
    assert second.threads_extended == [] and len(second.threads_created) == 1
    assert second.messages_stored == 6  # the history it repeats is stored afresh


def test_extending_a_thread_survives_a_failed_import(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The run writes of the second file fail after its messages were appended to the
    first file's thread: importing it again completes it, as a clean import would."""
    path_a = _file(tmp_path, "a.jsonl", [_line(0), _line(1)])
    path_b = _file(tmp_path, "b.jsonl", [_line(2), _line(3)])
    clean = SQLiteStorage(str(tmp_path / "clean.db"))
    import_file(clean, path_a)
    import_file(clean, path_b)
    s = SQLiteStorage(str(tmp_path / "s.db"))
    import_file(s, path_a)

    def boom(*a: Any, **k: Any) -> Any:
        raise RuntimeError("disk full")

    with monkeypatch.context() as m:
        m.setattr(s.runs, "put_many_if_absent", boom)
        with pytest.raises(RuntimeError):
            import_file(s, path_b)
    report = import_file(s, path_b)
    assert report.runs_created and not report.already_imported
    for store in (s, clean):
        assert _all_threads(store) == _all_threads(clean)
    (tid,) = _all_threads(s)
    assert _texts(s, tid) == _texts(clean, tid)
    assert sorted(r.run_id for r in s.runs.list_runs()) == \
        sorted(r.run_id for r in clean.runs.list_runs())
    for r in clean.runs.list_runs():
        assert load_run(s, r.run_id).memctx == load_run(clean, r.run_id).memctx


def _hello(model: str) -> str:
    return json.dumps({"messages": [{"role": "user", "content": "Say hello!"}], "response": {
        "model": model, "choices": [{"message": {"role": "assistant", "content": "Hello!"}}]}})


def test_a_lone_question_answered_alike_by_another_model_is_another_conversation(
        tmp_path: Path) -> None:
    """magentic's cassettes: gpt-4o and llama3.1 each told "Say hello!" answered alike. A
    later file's request that sends nothing of a stored thread but its first message
    repeats that thread only when put to the model its runs were; otherwise the two
    files' runs shared one thread, whose erasure took the other file's run with it."""
    s = InMemoryStorage()
    first = import_file(s, _file(tmp_path, "a.jsonl", [_hello("gpt-4o")]))
    other = import_file(s, _file(tmp_path, "b.jsonl", [_hello("llama3.1")]))
    assert other.threads_extended == [] and len(other.threads_created) == 1
    assert other.threads_created != first.threads_created
    erase_thread(s, first.threads_created[0])
    assert s.runs.get_run(other.runs_created[0]) is not None
    # put to the same model again (a proxy capturing one exchange at a time): a repeat,
    # stored once and said so
    again = import_file(s, _file(tmp_path, "c.jsonl", [_hello("llama3.1"), ""]))
    assert again.threads_created == [] and again.threads_extended == other.threads_created
    assert [(k.where, k.reason) for k in again.skipped] == [(
        "line 1", f"the same messages and answer as thread {other.threads_created[0]} (an "
                  "earlier import's): stored once, and both runs refer to them")]
